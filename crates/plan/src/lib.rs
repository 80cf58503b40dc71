//! The optimizer as queries: tt-mlir's DFShardingPolicy, ShardSolver and DFSharding 2.0.
//!
//! ```text
//! func_body(f) ─► func_topology(f) ─► schedule(f)           topology only
//! group_signatures, base legality ─► base_chainable_block(f, start)   (op_chainable per op, inline)
//! base_chainable_block, overrides_block ─► chainable_block(f, start)   (with overrides where the group has some)
//! schedule + chainable_block + chain_facts_block ─► chain_block(f, j) ─► chains(f)
//! chain ─► solve_chain(chain)             ONE chain's problem, built and solved, and what
//!                                         the plan reads of the chain (its part: picked
//!                                         configs, cost, fallback), computed inside it
//! single-op chains of a group ─► solve_single_chains(key)   the same, for each of them
//! chains ─► chunk_layout(f) ─► chunk_ops(f, k), chunk_chains(f, k)
//! solve_chain* + solve_single_chains* + base_plans_block* ─► plan_parts_chunk(f, k)
//!                                         ─► merge_base_chunk(f, k)
//!     (tuning host, no override in the chunk or its producers: the same, from
//!      parts_without_overrides(ChunkContent), which reads the graph alone)
//! plan_carry(f, p, k-1) ─► plan_chunk(f, p, k) ─► plan_slice(f, p, k), plan_carry(f, p, k)
//! plan_slice + chunk_incoming ─► chunk_cost(f, p, k) ─► plan_cost(f, p)
//! plan_slice* ─► plan_for(f, p)                              the whole plan, for reports
//! ```
//!
//! `solve_chain` builds its problem from the chain's own ops only, so an edit re-solves
//! exactly the chains whose ops changed (an unchanged problem is a solve-cache lookup).
//! The single-op chains without overrides (most of them) are solved the same way, one memo
//! per group of 32 ops (`solve_single_chains`): fewer memos for salsa to walk after an
//! edit, and an edit re-solves the single-op chains of its group together.
//! Everything after the chains works one chunk of the schedule at a time (see `chunks` and
//! `merge`). Per-group memos are keyed by their group's first op's name (`layout::GroupRef`),
//! and read their ops' signatures and legality from the group, so an op inserted, deleted or
//! pasted elsewhere re-runs none of them.
//!
//! Cheap per-op and per-chain steps (`op_chainable`, `fallback_layout`, `chain_cost`,
//! `chain_fallback`) are plain functions, not queries: after an edit salsa re-validates
//! every memo before reading it, and on a 10k-op function these were 36k memos, a sixth of
//! an editor edit and of a first override, against a few instructions each to recompute
//! inside the block or chain that reads them.

mod chain_graph;
mod chunks;
mod costing;
pub mod greedy;
mod merge;
mod planning;
mod problem;
mod reach;
mod scheduling;
mod solve_cache;

pub use crate::{
    chain_graph::{
        ChainFacts, ChainGraph, ChainId, D2mRelation, chain_facts_block, chain_facts_of_group,
        chains, op_chainable,
    },
    chunks::{
        ChainFallback, ChunkChains, ChunkLayout, ChunkValues, ForeignChain, Incoming, PlanChunk,
        PlanSlice, PlanView, WalkReads, base_carry, base_chunk, base_slice, chunk_chains,
        chunk_count, chunk_incoming, chunk_layout, chunk_ops, foreign_chain, foreign_op_plan,
        merge_base_chunk, overridden_carry, overridden_chunk, plan_carry, plan_chunk, plan_slice,
        plan_walking_every_chunk,
    },
    costing::{
        CostTotals, PlanCost, base_plan_cost, chunk_cost, cost_lower_bound, op_lower_bound,
        op_lower_bounds, plan_cost, plan_totals, values_read_as_written, written_cost,
    },
    merge::{Carry, MergeKind, Reservation},
    planning::{
        ChainOutcome, ChainPart, ChainPlan, ChainState, Conversion, MemberPlan, MergeRecord,
        OpPlan, PartsChunk, Plan, SpillLocation, plan, plan_for, plan_parts_chunk,
    },
    problem::{ChainCost, Reads, SingleChains, overridden_solve_chain, solve_single_chains},
    reach::{Reach, base_readers, chunk_overridden, overridden_chunks, override_reach},
    scheduling::{
        OpFlow, Schedule, TopoOp, Topology, Use, flow_block, flow_of_group, func_topology, schedule,
    },
    solve_cache::SolveCache,
};

#[salsa::db]
pub trait Db: layout::Db {
    /// Op costs kept across revisions (see [`cost::CostCache`]).
    fn cost_cache(&self) -> &cost::CostCache;
    /// Chain solutions kept across revisions (see [`SolveCache`]).
    fn solve_cache(&self) -> &SolveCache;
}
