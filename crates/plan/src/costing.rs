//! `plan_cost`: the estimated device time of a function under a plan, and the baselines it
//! is judged against (the IR as written, and a lower bound).
//!
//! Every op is costed with the layouts the optimized IR gives it: its planned output, its
//! operands as they arrive after conversions, its op config. Reshards and spills are costed
//! as the `to_memory_config` ops the rewrite inserts.

use std::sync::Arc;

use base_db::{Policy, TargetInput};
use cost::{CostModel, OpUnit, UnitTensor};
use ir::{FuncId, Ty, ValueRef};
use layout::GroupRef;
use opmodel::{OpKind, TensorDesc};
use ttnn_types::{DataType, PageLayout, TtnnLayout};

use crate::{
    Db,
    chunks::{ChunkValues, base_slice, chunk_count, chunk_ops, plan_slice},
    planning::Signatures,
    problem::Reads,
};

/// A plan's estimated time, in nanoseconds, with its parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PlanCost {
    pub total_ns: u64,
    pub op_ns: u64,
    pub reshard_ns: u64,
    pub spill_ns: u64,
    /// Per op (body index), the op's own time.
    pub per_op: Vec<u64>,
    pub dram_bytes: u64,
    pub flops: u64,
}

fn desc(shape: Option<Vec<u64>>, layout: Option<TtnnLayout>) -> Option<TensorDesc> {
    // The shape is moved in, not copied: `TensorDesc::new` copies a borrowed one.
    Some(TensorDesc { shape: shape?, layout: layout? })
}

fn shape_of(ty: &Ty) -> Option<Vec<u64>> {
    ty.as_tensor()?.static_shape()
}

/// A plan's totals: [`PlanCost`] without the per-op times, what a tuning loop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CostTotals {
    pub total_ns: u64,
    pub op_ns: u64,
    pub reshard_ns: u64,
    pub spill_ns: u64,
    pub dram_bytes: u64,
    pub flops: u64,
}

impl PlanCost {
    #[must_use]
    pub fn totals(&self) -> CostTotals {
        CostTotals {
            total_ns: self.total_ns,
            op_ns: self.op_ns,
            reshard_ns: self.reshard_ns,
            spill_ns: self.spill_ns,
            dram_bytes: self.dram_bytes,
            flops: self.flops,
        }
    }
}

/// What the cost of a plan with overrides is made of, beside the plan without them.
enum Correction {
    /// The plan without overrides' cost as it is (the overrides reach no chunk).
    None,
    /// Every chunk costed again: the overrides change the plans of the unscheduled ops (the
    /// last chunk), which every chunk reads.
    Everything,
    /// These chunks costed again.
    Chunks(Vec<u32>),
}

fn correction(db: &dyn Db, func: FuncId, policy: Policy) -> Correction {
    if policy == Policy::Greedy {
        return Correction::Everything;
    }
    let reach = crate::override_reach(db, func, policy);
    if reach.chunks.is_empty() {
        return Correction::None;
    }
    if let Some(last) = crate::chunks::chunk_layout(db, func).unscheduled_chunk()
        && reach.start_of(last).is_some()
        && plan_slice(db, func, policy, last) != base_slice(db, func, policy, last)
    {
        return Correction::Everything;
    }
    Correction::Chunks(reach.chunks.iter().map(|&(k, _)| k).collect())
}

/// The totals of a function's cost under a policy's plan ([`plan_cost`] without the per-op
/// times): the plan without overrides' totals, with the chunks the overrides reach
/// ([`crate::override_reach`]) costed again. Reads no per-op list, so an override costs the
/// chunks it reaches and nothing proportional to the function.
#[salsa::tracked(returns(copy))]
pub fn plan_totals(db: &dyn Db, func: FuncId, policy: Policy) -> CostTotals {
    let chunks = match correction(db, func, policy) {
        Correction::None => return base_plan_cost(db, func, policy).totals(),
        Correction::Everything => return summed_cost(db, func, policy, Reads::Overrides).totals(),
        Correction::Chunks(chunks) => chunks,
    };
    let _p = tracing::debug_span!("plan_totals", func = %func.name(db), policy = policy.name())
        .entered();
    let mut out = base_plan_cost(db, func, policy).totals();
    for k in chunks {
        let before = chunk_cost(db, func, policy, k, Reads::Base);
        let after = chunk_cost(db, func, policy, k, Reads::Overrides);
        let swap = |total: u64, from: u64, to: u64| total.saturating_sub(from).saturating_add(to);
        out.op_ns = swap(out.op_ns, before.op_ns, after.op_ns);
        out.reshard_ns = swap(out.reshard_ns, before.reshard_ns, after.reshard_ns);
        out.spill_ns = swap(out.spill_ns, before.spill_ns, after.spill_ns);
        out.flops = swap(out.flops, before.flops, after.flops);
        out.dram_bytes = swap(out.dram_bytes, before.dram_bytes, after.dram_bytes);
    }
    out.total_ns = out.op_ns.saturating_add(out.reshard_ns).saturating_add(out.spill_ns);
    out
}

/// The cost of a function under a policy's plan, with each op's time: the cost of the plan
/// without overrides ([`base_plan_cost`]), with the chunks the overrides reach costed again
/// and the totals of [`plan_totals`]. Without overrides it reads that one memo and the
/// override slots, so after an override salsa re-checks the chunks the override reaches and
/// no other.
#[salsa::tracked(returns(clone))]
pub fn plan_cost(db: &dyn Db, func: FuncId, policy: Policy) -> Arc<PlanCost> {
    let chunks = match correction(db, func, policy) {
        Correction::None => return base_plan_cost(db, func, policy),
        Correction::Everything => return summed_cost(db, func, policy, Reads::Overrides),
        Correction::Chunks(chunks) => chunks,
    };
    let _p =
        tracing::debug_span!("plan_cost", func = %func.name(db), policy = policy.name()).entered();
    let mut out = (*base_plan_cost(db, func, policy)).clone();
    for k in chunks {
        let after = chunk_cost(db, func, policy, k, Reads::Overrides);
        place_per_op(&mut out.per_op, &chunk_ops(db, func, k), &after.per_op);
    }
    let t = plan_totals(db, func, policy);
    (out.total_ns, out.op_ns, out.reshard_ns, out.spill_ns) =
        (t.total_ns, t.op_ns, t.reshard_ns, t.spill_ns);
    (out.dram_bytes, out.flops) = (t.dram_bytes, t.flops);
    Arc::new(out)
}

/// The cost of a function under a policy's plan without overrides: it reads the graph
/// alone.
#[salsa::tracked(returns(clone))]
pub fn base_plan_cost(db: &dyn Db, func: FuncId, policy: Policy) -> Arc<PlanCost> {
    summed_cost(db, func, policy, Reads::Base)
}

/// Writes a chunk's per-op times (parallel to its ops, body indices) into the function's.
fn place_per_op(per_op: &mut [u64], ops: &[u32], times: &[u64]) {
    for (&i, &ns) in ops.iter().zip(times) {
        if let Some(slot) = per_op.get_mut(i as usize) {
            *slot = ns;
        }
    }
}

/// The sum of a function's chunks' costs, with or without overrides (`reads`).
fn summed_cost(db: &dyn Db, func: FuncId, policy: Policy, reads: Reads) -> Arc<PlanCost> {
    let Some(frame) = ir::func_frame(db, func) else { return Arc::default() };
    let n_chunks = chunk_count(db, func);
    let _p = tracing::debug_span!("summed_cost", func = %func.name(db), policy = policy.name())
        .entered();
    let mut out = PlanCost { per_op: vec![0; frame.n_ops], ..PlanCost::default() };
    for k in 0..n_chunks {
        let c = chunk_cost(db, func, policy, k, reads);
        place_per_op(&mut out.per_op, &chunk_ops(db, func, k), &c.per_op);
        out.op_ns = out.op_ns.saturating_add(c.op_ns);
        out.reshard_ns = out.reshard_ns.saturating_add(c.reshard_ns);
        out.spill_ns = out.spill_ns.saturating_add(c.spill_ns);
        out.flops = out.flops.saturating_add(c.flops);
        out.dram_bytes = out.dram_bytes.saturating_add(c.dram_bytes);
    }
    out.total_ns = out.op_ns.saturating_add(out.reshard_ns).saturating_add(out.spill_ns);
    Arc::new(out)
}

/// The cost of chunk `k` of a policy's plan (with `reads` overrides, or without any);
/// `per_op` is parallel to the chunk's ops.
///
/// Reads the chunk's own plans, the outputs the carry into it hands on (producers in earlier
/// chunks), and the last chunk's plans (unscheduled producers: device handles, empties), so
/// that after an override only the chunks whose plans or incoming values changed re-run.
#[salsa::tracked(returns(clone))]
pub fn chunk_cost(
    db: &dyn Db,
    func: FuncId,
    policy: Policy,
    k: u32,
    reads: Reads,
) -> Arc<PlanCost> {
    let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
    let values = ChunkValues::new(db, func, policy, k, reads);
    let slice = Arc::clone(&values.slice);
    let target = TargetInput::get(db).target(db);
    let model = CostModel::for_target(target);
    // The layout a value arrives in after its producer's spill.
    let arriving = |v: &ValueRef| -> Option<TtnnLayout> {
        match *v {
            ValueRef::Result { .. } => {
                let (op, _) = body.result_of(*v)?;
                let (layout, spill) = values.output(op)?;
                spill.or(layout)
            }
            ValueRef::Arg(a) => body.args.get(a as usize).and_then(|t| t.layout().cloned()),
            ValueRef::Unknown => None,
        }
    };
    let sigs = Signatures::new(db, func);
    let mut out = PlanCost { per_op: vec![0; slice.ops.len()], ..PlanCost::default() };
    for (at, (&i, p)) in slice.ops.iter().zip(&slice.plans).enumerate() {
        let i = i as usize;
        let Some(data) = body.ops.get(i) else { continue };
        let Some(sig) = sigs.sig(db, func, i) else {
            continue;
        };
        let mut inputs = Vec::new();
        for (k, ty) in data.operand_types.iter().enumerate() {
            if ty.as_tensor().is_none() {
                continue;
            }
            let arrived = data.operands.get(k).and_then(arriving).or_else(|| ty.layout().cloned());
            let used = p
                .expected_operands
                .get(k)
                .and_then(|c| c.as_ref().map(|c| c.layout.clone()))
                .or_else(|| arrived.clone());
            let shape = shape_of(ty);
            // The shape is copied for the reshard only when there is one to price.
            if let (Some(shape), Some(from), Some(to)) = (&shape, arrived, used.as_ref())
                && &from != to
            {
                let from = TensorDesc { shape: shape.clone(), layout: from };
                let c = db.cost_cache().reshard_cost(target, &model, &from, to);
                out.reshard_ns = out.reshard_ns.saturating_add(c.total_ns);
                out.dram_bytes = out.dram_bytes.saturating_add(c.dram_bytes);
            }
            if let Some(d) = desc(shape, used) {
                inputs.push(d);
            }
        }
        // A cache write has no result: it writes into its cache operand, which is its output.
        let in_place = sig.kind.in_place_operand().filter(|_| data.results.is_empty());
        let output = match in_place.and_then(|k| data.operand_types.get(k)) {
            Some(t) => desc(shape_of(t), t.layout().cloned()),
            // An op the policy does not place (several results, or a result that is not a
            // tensor the plan lays out) keeps the layout it was written with, and runs.
            None => {
                let first = data.results.first();
                let written = first.and_then(|t| t.layout().cloned());
                desc(first.and_then(shape_of), p.layout.clone().or(written))
            }
        };
        let Some(output) = output else {
            continue;
        };
        let c = db.cost_cache().op_cost(target, &model, &sig.kind, &inputs, &output, &p.config);
        out.per_op[at] = c.total_ns;
        out.op_ns = out.op_ns.saturating_add(c.total_ns);
        out.flops = out.flops.saturating_add(c.flops);
        out.dram_bytes = out.dram_bytes.saturating_add(c.dram_bytes);
        if let Some(spill) = &p.spill {
            let c = if spill.layout.is_l1() {
                db.cost_cache().reshard_cost(target, &model, &output, &spill.layout)
            } else {
                model.spill_cost(&output)
            };
            out.spill_ns = out.spill_ns.saturating_add(c.total_ns);
            out.dram_bytes = out.dram_bytes.saturating_add(c.dram_bytes);
        }
    }
    out.total_ns = out.op_ns.saturating_add(out.reshard_ns).saturating_add(out.spill_ns);
    Arc::new(out)
}

/// The cost of the function as written, with the layouts its types carry.
#[salsa::tracked(returns(clone))]
pub fn written_cost(db: &dyn Db, func: FuncId) -> Arc<PlanCost> {
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let model = CostModel::for_target(TargetInput::get(db).target(db));
    let ops = ir::func_ops(db, func);
    let mut out = PlanCost { per_op: vec![0; body.ops.len()], ..PlanCost::default() };
    for (i, data) in body.ops.iter().enumerate() {
        let Some(sig) = layout::op_signature(db, ops[i]) else { continue };
        let inputs: Vec<TensorDesc> = data
            .operand_types
            .iter()
            .filter_map(|t| desc(shape_of(t), t.layout().cloned()))
            .collect();
        let in_place = sig.kind.in_place_operand().filter(|_| data.results.is_empty());
        let Some(output) = in_place
            .and_then(|k| data.operand_types.get(k))
            .or(data.results.first())
            .and_then(|t| desc(shape_of(t), t.layout().cloned()))
        else {
            continue;
        };
        let c = model.op_cost(&sig.kind, &inputs, &output, &sig.config);
        out.per_op[i] = c.total_ns;
        out.op_ns = out.op_ns.saturating_add(c.total_ns);
        out.flops = out.flops.saturating_add(c.flops);
        out.dram_bytes = out.dram_bytes.saturating_add(c.dram_bytes);
    }
    out.total_ns = out.op_ns;
    Arc::new(out)
}

/// A lower bound on any plan's cost: every intermediate in L1 in its best layout, no
/// reshards, unlimited L1. Function arguments and fixed-layout results keep their layouts.
///
/// Each op's bound comes from its block in two versions, with its output free and fixed, and
/// [`fixed_block`] picks one: an override that fixes or frees an op's output (the op model
/// rejecting every layout it allows) re-runs one block of flags, not a block of bounds.
#[salsa::tracked(returns(copy))]
pub fn cost_lower_bound(db: &dyn Db, func: FuncId) -> u64 {
    if db.memo_style() == layout::MemoStyle::Tuning {
        return tuning_lower_bound(db, func);
    }
    op_lower_bounds(db, func).into_iter().fold(0u64, u64::saturating_add)
}

/// An op's bound from its block's pair (output free, output kept as written): the second
/// where its output is fixed.
fn chosen((free, pinned): (u64, u64), fixed: bool) -> u64 {
    if fixed { pinned } else { free }
}

/// Each op's part of [`cost_lower_bound`], by body index: what the op costs at its best
/// placement with every free tensor local in L1 (its output kept as written where it is
/// fixed). For reports, next to the op's planned time: the difference is what a plan could
/// still win on that op, reshards and spills aside.
#[must_use]
pub fn op_lower_bounds(db: &dyn Db, func: FuncId) -> Vec<u64> {
    let groups = layout::Groups::new(db, func);
    let mut out = Vec::new();
    for group in groups.iter() {
        let bounds = lower_bounds_of_group(db, func, group);
        let fixed = fixed_of_group(db, func, group);
        out.extend(bounds.iter().zip(fixed.iter()).map(|(&b, &f)| chosen(b, f)));
    }
    out
}

/// [`op_lower_bounds`] of op `i` (body index) alone: its group's bounds, for a hover.
#[must_use]
pub fn op_lower_bound(db: &dyn Db, func: FuncId, i: usize) -> Option<u64> {
    let (_, group, at) = layout::Groups::new(db, func).locate(i)?;
    let bound = *lower_bounds_of_group(db, func, group).get(at)?;
    Some(chosen(bound, *fixed_of_group(db, func, group).get(at)?))
}

/// One group's part of the lower bound, given which of its outputs are fixed.
fn group_bound(bounds: &[(u64, u64)], fixed: &[bool]) -> u128 {
    bounds.iter().zip(fixed).map(|(&b, &f)| u128::from(chosen(b, f))).sum()
}

/// [`cost_lower_bound`] on a tuning host: the bound without overrides
/// ([`base_lower_bound_named`], graph only), corrected for the groups whose override slots
/// hold something ([`layout::overridden_groups`]). Its edges are graph-only memos and the
/// overridden groups' memos, so after an override salsa walks no other per-group memo. The
/// sum is exact: every term is non-negative, so the saturating sum is the true sum capped at
/// `u64::MAX`.
fn tuning_lower_bound(db: &dyn Db, func: FuncId) -> u64 {
    let mut total = base_lower_bound_named(db, func);
    for &start in layout::overridden_groups(db, func).iter() {
        let bounds = lower_bound_block(db, func, start);
        let without = group_bound(&bounds, &base_fixed_block(db, func, start));
        let with = group_bound(&bounds, &fixed_block(db, func, start));
        total = total - without + with;
    }
    for g in layout::Groups::new(db, func).unnamed() {
        let group = GroupRef::Unnamed(g);
        total +=
            group_bound(&lower_bounds_computed(db, func, group), &fixed_computed(db, func, group));
    }
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// The sum of [`cost_lower_bound`]'s terms over a function's named groups as if no op had
/// overrides: it reads the graph alone.
#[salsa::tracked(returns(copy))]
pub fn base_lower_bound_named(db: &dyn Db, func: FuncId) -> u128 {
    let mut total = 0u128;
    for group in layout::Groups::new(db, func).iter() {
        if let GroupRef::Named(start) = group {
            total += group_bound(
                &lower_bound_block(db, func, start),
                &base_fixed_block(db, func, start),
            );
        }
    }
    total
}

/// Per op of the group of a function that starts with the op keyed `start`
/// (`ir::func_group_at`): whether its output layout is fixed. A group without overrides is
/// [`base_fixed_block`]'s answer (see `chainable_block`).
#[salsa::tracked(returns(clone))]
pub fn fixed_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<[bool]> {
    fixed_computed(db, func, GroupRef::Named(start))
}

/// [`fixed_block`] of a group: the memo where the group has a name, else computed.
fn fixed_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[bool]> {
    match group {
        GroupRef::Named(start) => fixed_block(db, func, start),
        GroupRef::Unnamed(_) => fixed_computed(db, func, group),
    }
}

fn fixed_computed(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[bool]> {
    let overrides = crate::chain_graph::group_overrides(db, func, group);
    if !overrides.iter().any(Option::is_some) {
        return match group {
            GroupRef::Named(start) => base_fixed_block(db, func, start),
            GroupRef::Unnamed(_) => base_fixed_computed(db, func, group),
        };
    }
    crate::chain_graph::group_ops_with(db, func, group, Some(&overrides))
        .map(|o| o.legality().layouts.fixed)
        .collect()
}

/// [`fixed_block`] as if no op of the group had overrides: it reads the graph alone.
#[salsa::tracked(returns(clone))]
pub fn base_fixed_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<[bool]> {
    base_fixed_computed(db, func, GroupRef::Named(start))
}

fn base_fixed_computed(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[bool]> {
    crate::chain_graph::group_ops_with(db, func, group, None)
        .map(|o| o.legality().layouts.fixed)
        .collect()
}

/// Per op of the group of a function that starts with the op keyed `start`: its lower bound
/// with its output free to take any placement, and kept in the layout it is written with.
/// Reads the ops' signatures and types and [`values_read_as_written`], so overrides never
/// re-run it. (A fixed output allows one placement, so the second bound costs little.)
#[salsa::tracked(returns(clone))]
pub fn lower_bound_block(db: &dyn Db, func: FuncId, start: ir::Name) -> Arc<[(u64, u64)]> {
    lower_bounds_computed(db, func, GroupRef::Named(start))
}

/// The values of a function that every plan leaves in the layout they are written with and
/// that one operand of one op reads: the results of ops no policy places (an op without
/// exactly one tensor result, such as `ttcore.load_cached`, whose results are the weights
/// const-eval prepared at load), by their producer's key and result index.
///
/// The lower bound reads such an operand where it is written (from DRAM, for the weights),
/// as it reads a function argument: a plan either reads it there or converts it first, and a
/// conversion reads it there too. With one reader no conversion can serve two ops, so the
/// bound stays below every plan; a value read twice stays free.
///
/// A firewall, as `layout::pinned_outputs`: it reads the whole body, and an edit that leaves
/// the set as it was is backdated here, so no group's bound re-runs.
#[salsa::tracked(returns(clone))]
pub fn values_read_as_written(db: &dyn Db, func: FuncId) -> Arc<[(ir::Name, u32)]> {
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let placed =
        |data: &ir::OpData| matches!(data.results.as_slice(), [t] if t.as_tensor().is_some());
    let mut reads: rustc_hash::FxHashMap<(ir::Name, u32), u32> = rustc_hash::FxHashMap::default();
    for data in &body.ops {
        for v in &data.operands {
            let ValueRef::Result { op, index } = *v else { continue };
            *reads.entry((op, index)).or_default() += 1;
        }
    }
    let mut out: Vec<(ir::Name, u32)> = reads
        .into_iter()
        .filter(|&((op, _), n)| {
            n == 1
                && body.result_of(ValueRef::Result { op, index: 0 }).is_some_and(|(i, _)| {
                    body.ops.get(i as usize).is_some_and(|data| !placed(data))
                })
        })
        .map(|(v, _)| v)
        .collect();
    // By the key's text, not its interning id, so the value does not depend on the order
    // names were first seen.
    out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()).then(a.1.cmp(&b.1)));
    out.into()
}

/// [`lower_bound_block`] of a group: the memo where the group has a name, else computed.
fn lower_bounds_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[(u64, u64)]> {
    match group {
        GroupRef::Named(start) => lower_bound_block(db, func, start),
        GroupRef::Unnamed(_) => lower_bounds_computed(db, func, group),
    }
}

fn lower_bounds_computed(db: &dyn Db, func: FuncId, group: GroupRef) -> Arc<[(u64, u64)]> {
    let block = group.ops(db, func);
    let sigs = layout::signatures_of_group(db, func, group);
    let as_written = values_read_as_written(db, func);
    let read_as_written = |v: &ValueRef| match *v {
        ValueRef::Arg(_) => true,
        ValueRef::Result { op, index } => as_written
            .binary_search_by(|(o, i)| o.as_str().cmp(op.as_str()).then(i.cmp(&index)))
            .is_ok(),
        ValueRef::Unknown => false,
    };
    let model = CostModel::for_target(TargetInput::get(db).target(db));
    let unit = |ty: &Ty, fixed: bool| -> Option<UnitTensor> {
        let t = ty.as_tensor()?;
        let layout = t.layout.clone();
        Some(UnitTensor {
            shape: t.static_shape()?,
            dtype: t.data_type().unwrap_or(DataType::BF16),
            page: layout.as_ref().map_or(PageLayout::Tile, TtnnLayout::page_layout),
            fixed: if fixed { layout } else { None },
        })
    };
    let mut out = Vec::with_capacity(block.len());
    for (at, data) in block.iter().enumerate() {
        let sig = sigs.get(at).cloned().flatten();
        let bound = |fixed_out: bool| -> u64 {
            let Some(sig) = &sig else { return 0 };
            if matches!(sig.kind, OpKind::Unknown(_)) {
                return 0;
            }
            let inputs: Vec<UnitTensor> = data
                .operands
                .iter()
                .zip(&data.operand_types)
                .filter_map(|(v, t)| unit(t, read_as_written(v)))
                .collect();
            let Some(output) = data.results.first().and_then(|t| unit(t, fixed_out)) else {
                return 0;
            };
            let op = OpUnit { kind: sig.kind.clone(), inputs, output, config: sig.config.clone() };
            model.op_lower_bound(&op).total_ns
        };
        out.push((bound(false), bound(true)));
    }
    out.into()
}
