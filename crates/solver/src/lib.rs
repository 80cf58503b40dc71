//! ShardSolver: finds compatible L1-sharded configs for the ops of one chain.
//!
//! A faithful re-implementation of tt-mlir's legacy `ShardSolver` (seeds 000 §3.3 and 004,
//! `reference/optimizer-legacy-chains.md` §8) over a plain [`ChainProblem`]:
//!
//! - a bitset per op over its candidate configs, and a path set per in-chain edge listing the
//!   (producer config, consumer config) pairs the op model accepts;
//! - first-op preprocessing: the chain entry is validated against a DRAM-interleaved input
//!   (conv2d always gets an input reshard; a chain fed by a `d2m_subgraph` searches for the
//!   best input layout instead);
//! - reshard insertion when an edge has no valid path, recording which reshard layouts enable
//!   which consumer configs;
//! - bidirectional propagation to a fixpoint;
//! - core-usage maximization, walking the chain backward, with tt-mlir's tie-breaking.
//!
//! Deviations, all deliberate and documented in `docs/optimizer.md`:
//! - validation passes the op's L1 inputs as `l1_in_use`; tt-mlir validated each op with no
//!   resident L1, which let chains over-commit L1 (the dominant runtime bug class upstream);
//! - an empty path set fails the chain gracefully instead of `llvm_unreachable`;
//! - reshard layouts are also checked with the op model (`to_memory_config` from the
//!   producer's layout) when the final one is picked;
//! - the d2m-fed first op picks the valid input with the largest grid, not the first found.
//!
//! The solver is deterministic and knows nothing of salsa: the same problem gives the same
//! solution.

mod bitset;
mod generations;
mod probe_memo;
mod solve;

use std::sync::Arc;

use opmodel::{OpKind, TensorDesc};
use ttnn_types::{DataType, TtnnLayout};

pub use crate::{
    bitset::Bitset,
    generations::Generations,
    probe_memo::ProbeMemo,
    solve::{solve, solve_with},
};

pub use opmodel::Candidate;

/// One op of the chain, with everything the op model needs to validate it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProblemOp {
    /// A display name (the op's `loc` name or its result name) for explanations.
    pub name: String,
    pub kind: OpKind,
    /// Operands in order; `None` for non-tensor operands (the device). Layouts are the ones
    /// written in the IR, used for operands that do not come from inside the chain.
    pub operands: Vec<Option<TensorDesc>>,
    pub output_shape: Vec<u64>,
    pub output_dtype: DataType,
    /// The op's L1-sharded candidates (tt-mlir feeds DFSharding sharded configs only).
    /// Shared with the op's `legal_op_configs`: a chain problem holds no copy of them.
    pub candidates: Arc<[Candidate]>,
    /// Per operand: every L1-sharded layout of that operand's tensor type, tile and
    /// row-major, uncapped: the reshard targets. Empty for operands that never need one.
    /// Shared with every other problem over the same tensor type (the lists are long).
    pub reshard_targets: Vec<Arc<[TtnnLayout]>>,
    /// True if the op's operand 0 comes from a `ttnn.d2m_subgraph` (only meaningful for the
    /// first op): solve for the best input layout instead of assuming DRAM interleaved.
    pub input_from_d2m: bool,
}

/// An in-chain edge: `producer`'s result feeds operand `operand` of `consumer` (indices into
/// [`ChainProblem::ops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    pub producer: usize,
    pub consumer: usize,
    pub operand: u32,
}

/// Everything `solve` needs for one chain, in canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChainProblem {
    pub ops: Vec<ProblemOp>,
    pub edges: Vec<Edge>,
    /// User reshards (`insert-memreconfig`): (op index, operand index).
    pub user_reshards: Vec<(usize, u32)>,
    /// Set when the chain feeds a concat: the memory layout the concat needs its inputs in.
    pub preferred_output: Option<ttnn_types::TensorMemoryLayout>,
    /// True when the last op's output is copied out of its shard after the chain (a spill):
    /// only configs whose output leaves room for that copy are kept.
    pub spills_output: bool,
}

/// A reshard to insert in front of operand `operand` of op `consumer`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reshard {
    pub consumer: usize,
    pub operand: u32,
    pub layout: TtnnLayout,
    /// True when the user asked for it with `insert-memreconfig`.
    pub user: bool,
    /// Why it was inserted, for explanations.
    pub reason: String,
}

/// Why a chain failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Failure {
    /// The op at which solving gave up.
    pub op: usize,
    /// The edge that had no valid path and no reshard, if that was the cause.
    pub edge: Option<Edge>,
    pub reason: String,
}

/// The solver's answer for one chain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChainSolution {
    /// `Ok` with the chosen candidate index per op, or the failure.
    pub result: Result<Vec<usize>, Failure>,
    pub reshards: Vec<Reshard>,
    /// For a chain fed by a `d2m_subgraph`: the input layout chosen for its first op.
    pub first_input_layout: Option<TtnnLayout>,
    /// The accumulated core usage of each chosen config (the objective), per op.
    pub core_usage: Vec<u64>,
    /// How many candidates survived propagation per op before picking.
    pub alive: Vec<usize>,
    /// Op-model queries issued.
    pub queries: u64,
}

impl ChainSolution {
    #[must_use]
    pub fn is_resolved(&self) -> bool {
        self.result.is_ok()
    }
}
