//! `solve_chain`: one chain's solver input (its problem) and ShardSolver's solution for it.
//!
//! `solve_chain(chain)` builds the problem from the chain's own ops only (and reads the
//! target), never the whole function: an edit re-solves exactly the chains whose ops
//! changed, and an unchanged problem is a lookup in the solve cache. The problem names ops
//! by their keys, not their locations, so renaming a `loc(...)` does not re-solve.
//! `solve_single_chains` solves the single-op chains of a group of ops the same way, in one
//! memo.

use std::sync::Arc;

use base_db::TargetInput;
use ir::{FuncId, OpId, Ty};
use layout::{LegalOpConfigs, LegalOpLayouts, OperandSource, TensorKey};
use opmodel::TensorDesc;
use solver::{ChainProblem, ChainSolution, Edge, ProblemOp};
use ttnn_types::{DataType, PageLayout, TtnnLayout};

use crate::{Db, chain_graph::ChainId, planning::ChainPart};

/// Which legality the per-chain queries of a chain read.
///
/// Most chains have no overridden op, and neither do the producers their first inputs come
/// from: their problem, solution and part read each op's legality without overrides
/// ([`layout::base_legality`]) and no override slot ([`Reads::Base`]). On a tuning host
/// that legality derives from the graph alone (`HIGH`), so an override, a change at `LOW`,
/// leaves those memos valid in O(1) instead of walking about 10k of them. The
/// chunk that places a chain ([`crate::plan_parts_chunk`]) reads the slots and picks the
/// variant (`chain_reads`); both variants compute the same values for a chain without
/// overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reads {
    /// Some op of the chain, or a producer of one, has overrides: read them.
    Overrides,
    /// None has: read the legality without overrides, and no slot.
    Base,
}

/// Which variant of the per-chain queries a chain needs: [`Reads::Overrides`] when one of its
/// ops (`members`, body indices) or a producer of one of them has overrides. `probe` holds
/// the function's lookups; the producers come from the topology rather than the ops'
/// signatures, so an edit that changes a signature but not the data flow does not re-run
/// the chunk that asks (it asks for every op of its chains).
pub(crate) fn chain_reads(
    members: &[u32],
    keys: &[ir::Name],
    topo: &crate::Topology,
    probe: &layout::OverrideProbe<'_>,
) -> Reads {
    let has = |i: u32| keys.get(i as usize).is_some_and(|k| probe.has_overrides(k.as_str()));
    // A producer may lie anywhere in the function (every op reads the device handle): its
    // own slot, not its group's overrides.
    let producer_has =
        |i: u32| keys.get(i as usize).is_some_and(|k| probe.has_overrides_by_slot(k.as_str()));
    for &i in members {
        if has(i)
            || topo.ops.get(i as usize).is_some_and(|o| o.deps.iter().any(|&p| producer_has(p)))
        {
            return Reads::Overrides;
        }
    }
    Reads::Base
}

/// An op's legal layouts as `reads` asks.
pub(crate) fn legal_layouts(db: &dyn Db, op: OpId, reads: Reads) -> Arc<LegalOpLayouts> {
    match reads {
        Reads::Overrides => layout::legal_op_layouts(db, op),
        Reads::Base => Arc::clone(&layout::base_legality(db, op).layouts),
    }
}

/// An op's legal (layout, config) pairs as `reads` asks.
pub(crate) fn legal_configs(db: &dyn Db, op: OpId, reads: Reads) -> Arc<LegalOpConfigs> {
    match reads {
        Reads::Overrides => layout::legal_op_configs(db, op),
        Reads::Base => Arc::clone(&layout::base_legality(db, op).configs),
    }
}

/// The layout an op gets when no chain claims it, as tt-mlir's `OpConfigAnalysis` picks
/// it: the first legal layout with the tiledness of the op's current result (DRAM
/// interleaved, since interleaved layouts come first and DRAM before L1), from the legality
/// `reads` asks for. Ops whose output the optimizer may not change keep their layout.
///
/// Not memoized per op: it picks from the memoized legal layouts in a few instructions, and
/// a memo per op was 10k more for salsa to re-validate after every edit of a 10k-op function.
pub(crate) fn fallback_layout(db: &dyn Db, op: OpId, reads: Reads) -> Option<TtnnLayout> {
    let sig = layout::op_signature(db, op)?;
    fallback_of(&sig, &legal_layouts(db, op, reads))
}

/// [`fallback_layout`] of an op with signature `sig` and legal layouts `legal`.
pub(crate) fn fallback_of(
    sig: &layout::OpSignature,
    legal: &layout::LegalOpLayouts,
) -> Option<TtnnLayout> {
    let existing = sig.tensor_result()?.layout.clone()?;
    if legal.fixed {
        return Some(existing);
    }
    let page = existing.page_layout();
    legal
        .layouts
        .iter()
        .find(|l| l.page_layout() == page)
        .or_else(|| legal.layouts.first())
        .cloned()
        .or(Some(existing))
}

/// The layout a value has when the optimizer leaves its producer alone.
pub(crate) fn source_layout(
    db: &dyn Db,
    func: FuncId,
    source: &OperandSource,
    ty: &Ty,
    reads: Reads,
) -> Option<TtnnLayout> {
    match source {
        OperandSource::Op { key, .. } => {
            fallback_layout(db, OpId::new(db, func, key.clone()), reads)
                .or_else(|| ty.layout().cloned())
        }
        _ => ty.layout().cloned(),
    }
}

/// What `solve_chain` gives for one chain: what the plan takes of it
/// ([`crate::planning::ChainPart`]: the picked configs, state, spill, cost in L1 and out of
/// it, fallback), made with its solution.
///
/// One memo per chain for the problem, the solution and the part, not one each: salsa walks
/// the dependencies of every per-chain memo once after the first edit in a group of ops
/// (3.3k chains on the 10k-op mixed graph), and three memos per chain tripled that walk.
/// The problem is built inside from the chain's own ops (and their producers' layouts), and
/// an unchanged problem is a lookup in the solve cache (which keeps the solution); the value
/// holds neither, so an edit that changes the problem but not the outcome stops here.
pub(crate) fn solved(db: &dyn Db, chain: ChainId, reads: Reads) -> Arc<ChainPart> {
    match reads {
        Reads::Base => memo::solve_chain(db, chain),
        Reads::Overrides => overridden_solve_chain(db, chain),
    }
}

/// The per-chain query of a chain without overrides ([`Reads::Base`]), in a module of its
/// own so that it keeps the name execution logs show.
mod memo {
    use super::{Arc, ChainId, ChainPart, Db, Reads};

    #[salsa::tracked(returns(clone))]
    pub(super) fn solve_chain(db: &dyn Db, chain: ChainId) -> Arc<ChainPart> {
        super::solve_in(db, chain, Reads::Base)
    }
}

/// The single-op chains of one group of ops (`ir::func_groups`) in one plan
/// chunk, other than concats: the key of [`solve_single_chains`].
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct SingleChains {
    #[returns(ref)]
    pub chains: Vec<ChainId>,
}

/// [`solve_chain`] of each of a group's single-op chains, in one memo: what `solve_chain`
/// gives for each, in the key's order.
///
/// On the 10k-op mixed graph 2887 of the 3441 chains are one op, and salsa walks the
/// dependencies of every per-chain memo after the first edit in a group of ops: one memo
/// per group of 32 ops makes that walk some 300 memos, sharing the edges (signatures,
/// legality, tensor layouts) their chains read. The chains are solved as `solve_chain`
/// solves them, without overrides; a chain with an overridden op reads
/// [`overridden_solve_chain`] instead, so an override does not re-run this. An edit in the
/// group re-solves its single-op chains together (lookups in the solve cache for those whose
/// problem is unchanged).
#[salsa::tracked(returns(clone))]
pub fn solve_single_chains(db: &dyn Db, key: SingleChains) -> Arc<[Arc<ChainPart>]> {
    key.chains(db).iter().map(|&chain| solve_in(db, chain, Reads::Base)).collect()
}

/// Whether a chain is one that [`solve_single_chains`] solves with its group.
pub(crate) fn is_single(db: &dyn Db, chain: ChainId) -> bool {
    chain.ops(db).len() == 1 && !chain.concat(db)
}

/// `solve_chain` for a chain whose ops or their producers have overrides.
#[salsa::tracked(returns(clone))]
pub fn overridden_solve_chain(db: &dyn Db, chain: ChainId) -> Arc<ChainPart> {
    solve_in(db, chain, Reads::Overrides)
}

/// Builds the chain's problem, from its own ops only, solves it (through the cache) and
/// makes the chain's part.
fn solve_in(db: &dyn Db, chain: ChainId, reads: Reads) -> Arc<ChainPart> {
    if chain.concat(db) {
        // Resolved by chain merging only: nothing to solve.
        return Arc::new(crate::planning::part_of(db, chain, reads, None));
    }
    let problem = problem_of(db, chain, reads);
    let target = TargetInput::get(db).target(db);
    let _p = tracing::debug_span!("solve_chain", ops = problem.ops.len()).entered();
    let solution = db.solve_cache().solve(&problem, db.op_model(), target);
    Arc::new(crate::planning::part_of(db, chain, reads, Some((&problem, &solution))))
}

fn problem_of(db: &dyn Db, chain: ChainId, reads: Reads) -> Arc<ChainProblem> {
    let func = chain.func(db);
    let ops = chain.ops(db);
    let _p = tracing::debug_span!("problem_of", func = %func.name(db), head = %ops.first().map_or("", |o| o.key(db))).entered();
    let mut problem = ChainProblem {
        ops: Vec::with_capacity(ops.len()),
        edges: Vec::new(),
        user_reshards: Vec::new(),
        preferred_output: chain.preferred(db),
        spills_output: !chain.to_d2m(db),
    };
    for (j, &op) in ops.iter().enumerate() {
        let Some(sig) = layout::op_signature(db, op) else { continue };
        let candidates = Arc::clone(&legal_configs(db, op, reads).sharded);
        let mut operands = Vec::with_capacity(sig.operands.len());
        let mut reshard_targets = Vec::with_capacity(sig.operands.len());
        for (k, operand) in sig.operands.iter().enumerate() {
            let Some(t) = operand.ty.as_tensor() else {
                operands.push(None);
                reshard_targets.push(Arc::default());
                continue;
            };
            let shape = t.static_shape().unwrap_or_default();
            let dtype = t.data_type().unwrap_or(DataType::BF16);
            let in_chain = match &operand.source {
                OperandSource::Op { key, .. } => {
                    ops.iter().position(|o| o.key(db) == key).filter(|&p| p < j)
                }
                _ => None,
            };
            if let Some(p) = in_chain {
                problem.edges.push(Edge { producer: p, consumer: j, operand: k as u32 });
            }
            let layout = source_layout(db, func, &operand.source, &operand.ty, reads)
                .unwrap_or_else(|| TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile));
            operands.push(Some(TensorDesc::new(&shape, layout)));
            let needs_targets = in_chain.is_some() || (j == 0 && k == 0);
            reshard_targets.push(if needs_targets {
                let pool =
                    layout::legal_tensor_layouts(db, TensorKey::new(db, shape.clone(), dtype));
                Arc::clone(&pool.reshard_targets)
            } else {
                Arc::default()
            });
        }
        if let Some(o) = (reads == Reads::Overrides).then(|| layout::op_overrides(db, op)).flatten()
        {
            for &k in &o.reshard_operands {
                problem.user_reshards.push((j, k));
            }
        }
        let result = sig.tensor_result();
        problem.ops.push(ProblemOp {
            name: op.key(db).clone(),
            kind: sig.kind.clone(),
            operands,
            output_shape: result.and_then(|t| t.static_shape()).unwrap_or_default(),
            output_dtype: result.and_then(|t| t.data_type()).unwrap_or(DataType::BF16),
            candidates,
            reshard_targets,
            input_from_d2m: j == 0 && chain.from_d2m(db),
        });
    }
    Arc::new(problem)
}

/// A solved chain's estimated time in L1 against the same ops left where `fallback_layout`
/// puts them, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ChainCost {
    /// The ops with their chosen configs, the chain-entry conversion and the reshards.
    pub l1_ns: u64,
    /// The spill after the last op (none when the chain feeds a d2m subgraph); merging
    /// may remove it.
    pub spill_ns: u64,
    /// The ops with their fallback layouts and configs, reading their operands as the
    /// producers leave them.
    pub dram_ns: u64,
}

impl ChainCost {
    /// True when the cost model expects the chain to be slower in L1 than out of it even if
    /// a merge removes its spill.
    #[must_use]
    pub fn loses_without_spill(&self) -> bool {
        self.l1_ns > self.dram_ns
    }

    /// True when the cost model expects the chain, spill included, to be slower in L1.
    #[must_use]
    pub fn loses(&self) -> bool {
        self.l1_ns.saturating_add(self.spill_ns) > self.dram_ns
    }
}

/// The cost of a solved chain in L1 and out of it; `None` for a chain that did not solve.
///
/// Reads only the chain's problem and solution and its ops' fallback layouts. Computed
/// within the chain's part (in `solve_chain`, its only reader), not memoized apart: a memo
/// per chain was 3k more for salsa to re-validate after every edit of a 10k-op function.
pub(crate) fn chain_cost(
    db: &dyn Db,
    chain: ChainId,
    reads: Reads,
    (problem, solution): (&ChainProblem, &ChainSolution),
) -> Option<ChainCost> {
    let selected = solution.result.as_ref().ok()?;
    let _p = tracing::debug_span!("chain_cost", ops = problem.ops.len()).entered();
    let model = cost::CostModel::for_target(TargetInput::get(db).target(db));
    let ops = chain.ops(db);
    let mut out = ChainCost::default();
    let chosen = |j: usize| &problem.ops[j].candidates[selected[j]];
    let fallback: Vec<Option<TtnnLayout>> =
        ops.iter().map(|&o| fallback_layout(db, o, reads)).collect();
    for (j, op) in problem.ops.iter().enumerate() {
        let mut l1_inputs = Vec::new();
        let mut dram_inputs = Vec::new();
        for (k, operand) in op.operands.iter().enumerate() {
            let Some(t) = operand else { continue };
            let edge = problem.edges.iter().find(|e| e.consumer == j && e.operand == k as u32);
            // Out of L1, an in-chain operand arrives in its producer's fallback layout.
            let source = match edge {
                Some(e) => fallback[e.producer].clone().unwrap_or_else(|| t.layout.clone()),
                None => t.layout.clone(),
            };
            dram_inputs.push(TensorDesc::new(&t.shape, source.clone()));
            let reshard =
                solution.reshards.iter().find(|r| r.consumer == j && r.operand == k as u32);
            let arriving = match edge {
                Some(e) => chosen(e.producer).layout.clone(),
                None if j == 0 && k == 0 => {
                    solution.first_input_layout.clone().unwrap_or_else(|| {
                        TtnnLayout::dram_interleaved(
                            &t.shape,
                            t.layout.data_type().unwrap_or(DataType::BF16),
                            PageLayout::Tile,
                        )
                    })
                }
                None => source,
            };
            let used = reshard.map_or_else(|| arriving.clone(), |r| r.layout.clone());
            if used != arriving {
                let c = model.reshard_cost(&TensorDesc::new(&t.shape, arriving.clone()), &used);
                out.l1_ns = out.l1_ns.saturating_add(c.total_ns);
            } else if edge.is_none() && j == 0 && k == 0 && used != t.layout {
                // The chain entry converts the producer's output to the validated input.
                let c = model.reshard_cost(&TensorDesc::new(&t.shape, t.layout.clone()), &used);
                out.l1_ns = out.l1_ns.saturating_add(c.total_ns);
            }
            l1_inputs.push(TensorDesc::new(&t.shape, used));
        }
        let cand = chosen(j);
        let l1_out = TensorDesc::new(&op.output_shape, cand.layout.clone());
        out.l1_ns = out
            .l1_ns
            .saturating_add(model.op_cost(&op.kind, &l1_inputs, &l1_out, &cand.config).total_ns);
        if j + 1 == problem.ops.len() && problem.spills_output {
            out.spill_ns = model.spill_cost(&l1_out).total_ns;
        }
        let Some(dram_layout) = fallback[j].clone() else { continue };
        let config = crate::planning::config_for_in(db, ops[j], Some(&dram_layout), reads);
        let dram_out = TensorDesc::new(&op.output_shape, dram_layout);
        out.dram_ns = out
            .dram_ns
            .saturating_add(model.op_cost(&op.kind, &dram_inputs, &dram_out, &config).total_ns);
    }
    Some(out)
}
