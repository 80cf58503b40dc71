//! `merge_decisions`: DFSharding 2.0 (seed 000 §4.1), run on top of the `df-sharding` plan.
//!
//! Steps, in tt-mlir's order: resolve concat chains (N-way merges), reserve L1 for reshape
//! outputs, keep fork outputs in L1 (sharded, else L1 interleaved), then merge chains A→B on
//! any operand and 3-way into a two-input join. Every decision is validated with the op model
//! against an L1 reservation timeline: each value kept in L1 reserves its per-core bytes from
//! its producer's schedule position to its last use, and every scheduled op in that window
//! (in a chain or not) must still fit with the reservations active at its position added.
//!
//! Deviations from tt-mlir, documented in `docs/optimizer.md`: concat N-way validation counts
//! the other active reservations (tt-mlir ignores them); a reshape with a `return` user is
//! skipped instead of stopping the whole pass; the timeline is summed directly per position.

use std::{collections::BTreeMap, sync::Arc};

use rustc_hash::FxHashSet;

use base_db::{Policy, TargetInput};
use ir::{FuncId, ValueRef};
use opmodel::{OpConfig, OpKind, OpModel as _, OpQuery, OutputHint, TensorDesc};
use ttnn_types::{DataType, PageLayout, TensorMemoryLayout, TtnnLayout};

use crate::{
    Db,
    chain_graph::chains,
    planning::{
        ChainPlan, ChainState, Conversion, MergeRecord, OpPlan, SpillLocation, incoming_layout,
        plan_for,
    },
    problem::ChainCost,
    scheduling::func_topology,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MergeKind {
    /// Chain A's output stays in L1 for chain B (any operand).
    Simple,
    /// Two chains' outputs stay in L1 for a two-input join.
    ThreeWay,
    /// Every input of a concat stays in L1.
    Concat,
    /// A fork's output stays in L1 (sharded or interleaved) for all its users.
    Fork,
    /// A reshape's output goes to L1 interleaved.
    Reshape,
}

impl MergeKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            MergeKind::Simple => "A->B merge",
            MergeKind::ThreeWay => "3-way merge",
            MergeKind::Concat => "concat N-way merge",
            MergeKind::Fork => "fork kept in L1",
            MergeKind::Reshape => "reshape output in L1",
        }
    }
}

/// An L1 reservation: `bytes` per core held from schedule position `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reservation {
    pub op: u32,
    pub start: u32,
    pub end: u32,
    pub bytes: u64,
}

/// What chain merging changes in the `df-sharding` plan.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MergeDecisions {
    /// (chain index, new spill location, reason).
    pub spills: Vec<(usize, SpillLocation, String)>,
    /// Concat chains resolved: (chain index, output layout, config).
    pub concats: Vec<(usize, TtnnLayout, OpConfig)>,
    /// Ops whose output layout changes (reshape to L1 interleaved, fork outputs).
    pub layouts: Vec<(u32, TtnnLayout, String)>,
    /// Consumer operands that now take an L1 value as is: (op, operand, layout).
    pub inputs: Vec<(u32, u32, TtnnLayout)>,
    /// Conv2d ops that must not deallocate their activation (their input is forked in L1).
    pub conv_keep_activation: Vec<u32>,
    pub reservations: Vec<Reservation>,
    pub records: Vec<MergeRecord>,
    /// Chains the cost model says lose in L1, declined before any merge.
    pub declined: Vec<DeclinedChain>,
}

/// A solved chain left out of L1, with the layout and config each of its ops falls back to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeclinedChain {
    pub chain: usize,
    pub reason: String,
    pub ops: Vec<(u32, Option<TtnnLayout>, OpConfig)>,
}

impl MergeDecisions {
    /// Applies the declined chains only (the merger starts from this).
    fn apply_declines(&self, ops: &mut [OpPlan], chains: &mut [ChainPlan]) {
        for d in &self.declined {
            let chain = &mut chains[d.chain];
            chain.state = ChainState::Declined;
            chain.failure = Some(d.reason.clone());
            chain.spill = SpillLocation::None;
            chain.spill_reason = String::new();
            for (i, layout, config) in &d.ops {
                let p = &mut ops[*i as usize];
                p.layout = layout.clone();
                p.config = config.clone();
                p.expected_operands.iter_mut().for_each(|e| *e = None);
                p.reason = format!("its chain #{} was declined: {}", d.chain, d.reason);
            }
        }
    }

    pub(crate) fn apply(
        &self,
        ops: &mut [OpPlan],
        chains: &mut [ChainPlan],
        merges: &mut Vec<MergeRecord>,
    ) {
        self.apply_declines(ops, chains);
        for (c, layout, config) in &self.concats {
            let chain = &mut chains[*c];
            chain.state = ChainState::Completed;
            chain.spill_reason = "concat output spills to DRAM".to_owned();
            if let Some(&i) = chain.ops.first() {
                ops[i as usize].layout = Some(layout.clone());
                ops[i as usize].config = config.clone();
                ops[i as usize].reason =
                    "concat chain: all inputs stay in L1 (N-way merge)".to_owned();
            }
        }
        for (c, spill, reason) in &self.spills {
            chains[*c].spill = *spill;
            chains[*c].spill_reason = reason.clone();
        }
        for (i, layout, reason) in &self.layouts {
            ops[*i as usize].layout = Some(layout.clone());
            ops[*i as usize].reason = reason.clone();
        }
        for (i, k, layout) in &self.inputs {
            if let Some(slot) = ops[*i as usize].expected_operands.get_mut(*k as usize) {
                *slot = Some(Conversion {
                    layout: layout.clone(),
                    reason: "merged input kept in L1".to_owned(),
                });
            }
        }
        for &i in &self.conv_keep_activation {
            if let OpConfig::Conv2d { conv, .. } = &mut ops[i as usize].config {
                conv.deallocate_activation = Some(false);
            }
        }
        for r in &self.reservations {
            ops[r.op as usize].reserved += r.bytes;
        }
        merges.extend(self.records.iter().cloned());
    }
}

/// The merge decisions of a function.
#[salsa::tracked(returns(clone))]
pub fn merge_decisions(db: &dyn Db, func: FuncId) -> Arc<MergeDecisions> {
    let base = plan_for(db, func, Policy::DfSharding);
    let graph = chains(db, func);
    let topo = func_topology(db, func);
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let _p = tracing::debug_span!("merge_decisions", func = %func.name(db)).entered();
    let ops = ir::func_ops(db, func);
    let target = TargetInput::get(db).target(db);
    let sigs: Vec<_> = ops.iter().map(|&op| layout::op_signature(db, op)).collect();
    let mut m = Merger {
        body: &body,
        topo: &topo,
        plans: base.ops.clone(),
        chains: base.chains.clone(),
        sched: &base.schedule.order,
        pos: &base.schedule.position,
        sigs,
        residents: BTreeMap::new(),
        out: MergeDecisions::default(),
        model: db.op_model(),
        target,
        merged_target: vec![false; base.chains.len()],
        cost: cost::CostModel::for_target(target),
        last_of: last_ops(&base.chains, body.ops.len()),
        live: vec![0; base.schedule.order.len()],
    };
    // Going past tt-mlir: a chain the cost model expects to lose in L1 even without its
    // spill is declined before merging, so no merge builds on it.
    let pre =
        decline_losing_chains(db, &mut m, &graph.chains, ops.as_ref(), |c| c.loses_without_spill());
    let decisions = MergeDecisions { declined: pre, ..MergeDecisions::default() };
    decisions.apply_declines(&mut m.plans, &mut m.chains);
    m.out.declined = decisions.declined;
    m.resolve_concats();
    m.reshapes(db);
    m.forks(db);
    m.chain_merges();
    // After merging, a chain no merge touched still spills its output to DRAM; decline it if
    // that makes it lose.
    let post = decline_losing_chains(db, &mut m, &graph.chains, ops.as_ref(), ChainCost::loses);
    m.out.declined.extend(post);
    Arc::new(m.out)
}

/// The completed chains that `loses` says lose in L1 and that no merge decision involves,
/// with the fallback layout and config of each of their ops.
fn decline_losing_chains(
    db: &dyn Db,
    m: &mut Merger<'_>,
    chains: &[crate::ChainId],
    ops: &[ir::OpId],
    loses: impl Fn(&ChainCost) -> bool,
) -> Vec<DeclinedChain> {
    let mut out = Vec::new();
    // Nothing below records a decision, so which chains the decisions touch is fixed.
    let touched = m.touched_chains();
    for (c, &chain) in chains.iter().enumerate() {
        if m.chains[c].state != ChainState::Completed
            || m.chains[c].concat
            || touched.get(c).copied().unwrap_or(false)
        {
            continue;
        }
        let Some(cost) = crate::problem::chain_cost(db, chain) else { continue };
        if !loses(&cost) {
            continue;
        }
        let spill = if m.chains[c].spill == SpillLocation::Dram { cost.spill_ns } else { 0 };
        let reason = format!(
            "the cost model estimates {:.1} µs in L1 (reshards and spill included) against {:.1} µs out of it",
            (cost.l1_ns + spill) as f64 / 1000.0,
            cost.dram_ns as f64 / 1000.0
        );
        let decl: Vec<(u32, Option<TtnnLayout>, OpConfig)> = m.chains[c]
            .ops
            .iter()
            .map(|&i| {
                let layout = crate::problem::fallback_layout(db, ops[i as usize]);
                let config = crate::planning::config_for(db, ops[i as usize], layout.as_ref());
                (i, layout, config)
            })
            .collect();
        // An op whose only legal layouts are sharded (the op model rejects it in DRAM) has
        // nowhere better to go; the chain stays.
        if decl.iter().any(|(_, l, _)| l.as_ref().is_some_and(TtnnLayout::is_sharded)) {
            continue;
        }
        out.push(DeclinedChain { chain: c, reason, ops: decl });
    }
    out
}

struct Merger<'a> {
    body: &'a ir::FuncBody,
    topo: &'a crate::scheduling::Topology,
    /// The plan as merging changes it.
    plans: Vec<OpPlan>,
    chains: Vec<ChainPlan>,
    sched: &'a [u32],
    pos: &'a [u32],
    sigs: Vec<Option<Arc<layout::OpSignature>>>,
    /// Values kept in L1 by merges so far: producer op → its L1 layout.
    residents: BTreeMap<u32, TtnnLayout>,
    out: MergeDecisions,
    model: &'a layout::SharedOpModel,
    target: &'a target::Target,
    /// Chains that already received a merge (tt-mlir allows one per target chain).
    merged_target: Vec<bool>,
    /// Every merge must also pay off in estimated time (going past tt-mlir, which merges
    /// whenever L1 allows).
    cost: cost::CostModel,
    /// Per op (body index): the chain it is the last op of. Looked up for every op of every
    /// window checked; a scan of the chains made merging quadratic in the graph.
    last_of: Vec<Option<u32>>,
    /// Per schedule position: the bytes the reservations made so far hold there. Every op of
    /// every window checked asks for it; summing the reservations each time made merging
    /// quadratic in the number of merges.
    live: Vec<u64>,
}

/// Per op, the first chain whose last op it is.
fn last_ops(chains: &[ChainPlan], n_ops: usize) -> Vec<Option<u32>> {
    let mut last_of = vec![None; n_ops];
    for (c, chain) in chains.iter().enumerate() {
        if let Some(slot) = chain.ops.last().and_then(|&i| last_of.get_mut(i as usize))
            && slot.is_none()
        {
            *slot = Some(c as u32);
        }
    }
    last_of
}

impl Merger<'_> {
    fn active(&self, pos: u32) -> u64 {
        self.live.get(pos as usize).copied().unwrap_or(0)
    }

    fn shape(&self, i: u32) -> Option<Vec<u64>> {
        self.body.ops[i as usize].results.first()?.as_tensor()?.static_shape()
    }

    /// The layout of operand `k` of op `i` as the plan stands (residents included).
    fn input_layout(&self, i: u32, k: usize) -> Option<TtnnLayout> {
        if let Some(ValueRef::Result { op, .. }) = self.body.ops[i as usize].operands.get(k)
            && let Some(l) = self.residents.get(op)
        {
            return Some(l.clone());
        }
        if let Some(exp) = self.plans[i as usize].expected_operands.get(k).and_then(Option::as_ref)
        {
            return Some(exp.layout.clone());
        }
        incoming_layout(self.body, &self.plans, i as usize, k)
    }

    /// Validates op `i` with its planned output, optional operand substitutions, and
    /// `extra` bytes of other L1 resident while it runs. Returns the output the model
    /// produces, or an error text.
    fn validate(
        &self,
        i: u32,
        subst: &[(usize, TtnnLayout)],
        output: Option<&TtnnLayout>,
        config: Option<&OpConfig>,
        extra: u64,
    ) -> Result<TtnnLayout, String> {
        let Some(sig) = &self.sigs[i as usize] else { return Err("no signature".to_owned()) };
        let Some(result) = sig.tensor_result() else {
            // Ops without a tensor result hold no L1 of their own; they pass.
            return Ok(TtnnLayout::dram_interleaved(&[1], DataType::BF16, PageLayout::Tile));
        };
        let plan = &self.plans[i as usize];
        let mut inputs = Vec::new();
        for (k, operand) in sig.operands.iter().enumerate() {
            let Some(t) = operand.ty.as_tensor() else { continue };
            let shape = t.static_shape().unwrap_or_default();
            let layout = self.operand_layout(i, k, subst).unwrap_or_else(|| {
                TtnnLayout::dram_interleaved(
                    &shape,
                    t.data_type().unwrap_or(DataType::BF16),
                    PageLayout::Tile,
                )
            });
            inputs.push(TensorDesc::new(&shape, layout));
        }
        let out = output.or(plan.layout.as_ref());
        let hint = match (out, &sig.kind) {
            (Some(l), OpKind::Matmul(_) | OpKind::Linear(_)) if l.is_sharded() => {
                OutputHint::Partial(l.partial())
            }
            (Some(l), _) => OutputHint::Layout(l.clone()),
            (None, _) => OutputHint::Null,
        };
        let l1_inputs: u64 = inputs.iter().map(|t| t.layout.l1_bytes_per_core()).sum();
        let q = OpQuery {
            kind: sig.kind.clone(),
            inputs,
            output_shape: result.static_shape().unwrap_or_default(),
            output_dtype: out
                .and_then(TtnnLayout::data_type)
                .or_else(|| result.data_type())
                .unwrap_or(DataType::BF16),
            output: hint,
            config: config.unwrap_or(&plan.config).clone(),
            l1_in_use: extra.saturating_add(l1_inputs),
        };
        match self.model.query(self.target, &q) {
            Ok(r) => Ok(r.output_layout),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Every scheduled op in positions `[from, to]`, and every spill right after one, still
    /// fits with `extra` more L1.
    fn window_fits(&self, from: u32, to: u32, extra: u64, skip: &[u32]) -> Result<(), String> {
        for p in from..=to.min(self.sched.len().saturating_sub(1) as u32) {
            let Some(&i) = self.sched.get(p as usize) else { break };
            if let Some(spill) = self.pending_spill(i) {
                self.spill_fits(i, &spill, extra)?;
            }
            if skip.contains(&i) {
                continue;
            }
            self.validate(i, &[], None, None, extra + self.active(p)).map_err(|e| {
                format!(
                    "`{}` at schedule position {p} would not fit: {e}",
                    self.body.ops[i as usize].key
                )
            })?;
        }
        Ok(())
    }

    /// The conversion that will run right after op `i` as the plan stands: its own spill, or
    /// the DRAM spill of the completed chain it ends.
    fn pending_spill(&self, i: u32) -> Option<TtnnLayout> {
        if let Some(s) = &self.plans[i as usize].spill {
            return Some(s.layout.clone());
        }
        let c = self.chain_of_last(i)?;
        if !self.completed_dram_chain(c) {
            return None;
        }
        let layout = self.plans[i as usize].layout.as_ref().filter(|l| l.is_l1())?;
        let shape = self.shape(i)?;
        Some(TtnnLayout::dram_interleaved(
            &shape,
            layout.data_type().unwrap_or(DataType::BF16),
            layout.page_layout(),
        ))
    }

    /// The `to_memory_config` from op `i`'s planned output to `to` fits next to what is
    /// resident at that point (the source itself, reservations, and `extra`).
    fn spill_fits(&self, i: u32, to: &TtnnLayout, extra: u64) -> Result<(), String> {
        let Some(from) = self.plans[i as usize].layout.clone() else { return Ok(()) };
        let Some(shape) = self.shape(i) else { return Ok(()) };
        let q = OpQuery {
            kind: OpKind::ToMemoryConfig,
            inputs: vec![TensorDesc::new(&shape, from.clone())],
            output_shape: shape.clone(),
            output_dtype: to.data_type().unwrap_or(DataType::BF16),
            output: OutputHint::Layout(to.clone()),
            config: OpConfig::None,
            l1_in_use: from
                .l1_bytes_per_core()
                .saturating_add(extra)
                .saturating_add(self.active(self.pos[i as usize])),
        };
        self.model.query(self.target, &q).map(|_| ()).map_err(|e| {
            format!(
                "the copy of `{}` out of its shard would not fit: {e}",
                self.body.ops[i as usize].key
            )
        })
    }

    /// Per chain: true when a merge decision involves it: its spill moved, one of its ops is
    /// a merge source or join, holds a reservation, or takes a merged input.
    fn touched_chains(&self) -> Vec<bool> {
        let mut ops: FxHashSet<u32> = FxHashSet::default();
        for r in &self.out.records {
            ops.insert(r.join);
            ops.extend(r.sources.iter().copied());
        }
        ops.extend(self.out.reservations.iter().map(|r| r.op));
        ops.extend(self.out.inputs.iter().map(|(i, _, _)| *i));
        ops.extend(self.out.layouts.iter().map(|(i, _, _)| *i));
        let mut touched: Vec<bool> =
            self.chains.iter().map(|ch| ch.ops.iter().any(|o| ops.contains(o))).collect();
        for (sc, _, _) in &self.out.spills {
            if let Some(t) = touched.get_mut(*sc) {
                *t = true;
            }
        }
        touched
    }

    /// Operand `k` of op `i` as merging sees it: a substitution being tried, else what the
    /// plan so far feeds it.
    fn operand_layout(
        &self,
        i: u32,
        k: usize,
        subst: &[(usize, TtnnLayout)],
    ) -> Option<TtnnLayout> {
        subst
            .iter()
            .find(|(sk, _)| *sk == k)
            .map(|(_, l)| l.clone())
            .or_else(|| self.input_layout(i, k))
    }

    /// The estimated time of op `i` with operand substitutions and an optional output.
    fn op_time(&self, i: u32, subst: &[(usize, TtnnLayout)], output: Option<&TtnnLayout>) -> u64 {
        let Some(sig) = &self.sigs[i as usize] else { return 0 };
        let Some(result) = sig.tensor_result() else { return 0 };
        let Some(out) = output.or(self.plans[i as usize].layout.as_ref()) else { return 0 };
        let mut inputs = Vec::new();
        for (k, operand) in sig.operands.iter().enumerate() {
            let Some(t) = operand.ty.as_tensor() else { continue };
            let shape = t.static_shape().unwrap_or_default();
            let layout = self.operand_layout(i, k, subst).or_else(|| t.layout.clone());
            if let Some(layout) = layout {
                inputs.push(TensorDesc::new(&shape, layout));
            }
        }
        let output = TensorDesc::new(&result.static_shape().unwrap_or_default(), out.clone());
        self.cost.op_cost(&sig.kind, &inputs, &output, &self.plans[i as usize].config).total_ns
    }

    /// The estimated time of copying op `i`'s planned output into `to` (free if unchanged).
    fn copy_time(&self, i: u32, to: &TtnnLayout) -> u64 {
        let (Some(from), Some(shape)) = (self.plans[i as usize].layout.clone(), self.shape(i))
        else {
            return 0;
        };
        self.cost.reshard_cost(&TensorDesc::new(&shape, from), to).total_ns
    }

    /// The layout op `i`'s output spills to after a completed DRAM chain, if it is one.
    fn dram_spill(&self, i: u32) -> Option<TtnnLayout> {
        let layout = self.plans[i as usize].layout.as_ref().filter(|l| l.is_l1())?;
        let shape = self.shape(i)?;
        Some(TtnnLayout::dram_interleaved(
            &shape,
            layout.data_type().unwrap_or(DataType::BF16),
            layout.page_layout(),
        ))
    }

    /// `Err` unless a merge's estimated time (`after`) beats what it replaces (`before`).
    fn pays_off(before: u64, after: u64) -> Result<(), String> {
        if after < before {
            Ok(())
        } else {
            Err(format!(
                "not faster: the cost model estimates {:.1} µs against {:.1} µs without it",
                after as f64 / 1000.0,
                before as f64 / 1000.0
            ))
        }
    }

    fn last_use_pos(&self, i: u32) -> u32 {
        self.topo.ops[i as usize]
            .users
            .iter()
            .map(|u| self.pos[u.user as usize])
            .filter(|&p| p != u32::MAX)
            .max()
            .unwrap_or(self.pos[i as usize])
    }

    fn out_bytes(&self, i: u32) -> u64 {
        self.residents
            .get(&i)
            .or(self.plans[i as usize].layout.as_ref())
            .map_or(0, TtnnLayout::l1_bytes_per_core)
    }

    fn completed_dram_chain(&self, c: usize) -> bool {
        let ch = &self.chains[c];
        ch.state == ChainState::Completed && ch.spill == SpillLocation::Dram && !ch.concat
    }

    fn chain_of_last(&self, i: u32) -> Option<usize> {
        self.last_of.get(i as usize).copied().flatten().map(|c| c as usize)
    }

    fn keep(&mut self, c: usize, spill: SpillLocation, reason: String) {
        self.chains[c].spill = spill;
        self.out.spills.push((c, spill, reason));
    }

    fn reserve(&mut self, op: u32, layout: TtnnLayout, end: u32) {
        let bytes = layout.l1_bytes_per_core();
        self.residents.insert(op, layout);
        let start = self.pos[op as usize];
        let to = (end as usize).min(self.live.len().saturating_sub(1));
        for slot in self.live.iter_mut().take(to + 1).skip(start as usize) {
            *slot = slot.saturating_add(bytes);
        }
        self.out.reservations.push(Reservation { op, start, end, bytes });
    }

    fn resolve_concats(&mut self) {
        for c in 0..self.chains.len() {
            if !self.chains[c].concat {
                continue;
            }
            let Some(&x) = self.chains[c].ops.first() else { continue };
            if let Err(why) = self.try_concat(c, x) {
                self.chains[c].spill_reason = format!("concat not merged: {why}");
            }
        }
    }

    fn try_concat(&mut self, c: usize, x: u32) -> Result<(), String> {
        let body = self.body;
        let Some(sig) = self.sigs[x as usize].clone() else {
            return Err("no signature".to_owned());
        };
        let Some(dim) = sig.kind.is_concat() else { return Err("not a concat".to_owned()) };
        let mut sources = Vec::new();
        for v in &body.ops[x as usize].operands {
            let ValueRef::Result { op, .. } = *v else {
                return Err("an input is not produced by a chain".to_owned());
            };
            let sc = self.chain_of_last(op).ok_or("an input is not the last op of a chain")?;
            if !self.completed_dram_chain(sc) {
                return Err("an input chain is not completed".to_owned());
            }
            if self.topo.ops[op as usize].num_uses != 1 {
                return Err("an input chain's output is also used elsewhere (a fork)".to_owned());
            }
            sources.push((sc, op));
        }
        let layouts: Vec<TtnnLayout> = sources
            .iter()
            .map(|(_, op)| {
                self.plans[*op as usize].layout.clone().unwrap_or_else(|| {
                    TtnnLayout::dram_interleaved(&[1], DataType::BF16, PageLayout::Tile)
                })
            })
            .collect();
        let first = layouts.first().ok_or("a concat without inputs")?.clone();
        let rank = sig.tensor_result().map_or(0, |t| t.shape.len() as i64);
        let d = if dim < 0 { dim + rank } else { dim };
        let needed = if d == rank - 1 {
            TensorMemoryLayout::HeightSharded
        } else if d == rank - 2 {
            TensorMemoryLayout::WidthSharded
        } else {
            return Err("concat along an outer dim has no sharding rule".to_owned());
        };
        if layouts.iter().any(|l| l.memory_layout != Some(needed) || l.grid2d() != first.grid2d()) {
            return Err(format!(
                "inputs must all be {needed} on one grid for a concat along dim {d}"
            ));
        }
        let shape = self.shape(x).ok_or("dynamic shape")?;
        let out = TtnnLayout::sharded(
            &shape,
            first.data_type().unwrap_or(DataType::BF16),
            first.page_layout(),
            needed,
            first.grid2d(),
            self.target.worker_grid(),
        )
        .map_err(|e| e.to_string())?;
        let subst: Vec<(usize, TtnnLayout)> = layouts.iter().cloned().enumerate().collect();
        let actual = self.validate(
            x,
            &subst,
            Some(&out),
            Some(&OpConfig::None),
            self.active(self.pos[x as usize]),
        )?;
        // Cumulative pressure: every op between the first input and the concat runs with the
        // inputs produced so far held in L1.
        let mut order: Vec<(usize, u32)> = sources.clone();
        order.sort_by_key(|(_, op)| self.pos[*op as usize]);
        let concat_pos = self.pos[x as usize];
        for (n, (_, op)) in order.iter().enumerate() {
            let held: u64 = order[..=n].iter().map(|(_, o)| self.out_bytes(*o)).sum();
            let from = self.pos[*op as usize] + 1;
            let to = order
                .get(n + 1)
                .map_or(concat_pos, |(_, o)| self.pos[*o as usize])
                .saturating_sub(1);
            if from <= to {
                self.window_fits(from, to, held, &[])?;
            }
        }
        let spilled: Vec<(usize, TtnnLayout)> = sources
            .iter()
            .enumerate()
            .filter_map(|(k, (_, op))| self.dram_spill(*op).map(|d| (k, d)))
            .collect();
        let before = sources
            .iter()
            .zip(&spilled)
            .map(|((_, op), (_, d))| self.copy_time(*op, d))
            .sum::<u64>()
            + self.op_time(x, &spilled, None);
        let after = self.op_time(x, &subst, Some(&actual));
        Self::pays_off(before, after)?;
        for (sc, op) in &sources {
            let l = self.plans[*op as usize].layout.clone().unwrap_or_else(|| actual.clone());
            self.keep(*sc, SpillLocation::None, "kept in L1 for a concat (N-way merge)".to_owned());
            self.reserve(*op, l, concat_pos);
        }
        self.plans[x as usize].layout = Some(actual.clone());
        self.chains[c].state = ChainState::Completed;
        self.out.concats.push((c, actual, OpConfig::None));
        for (k, (_, op)) in sources.iter().enumerate() {
            if let Some(l) = self.plans[*op as usize].layout.clone() {
                self.out.inputs.push((x, k as u32, l));
            }
        }
        self.out.records.push(MergeRecord {
            kind: MergeKind::Concat,
            sources: sources.iter().map(|(_, o)| *o).collect(),
            join: x,
            description: format!(
                "{} inputs of `{}` stay in L1",
                sources.len(),
                self.body.ops[x as usize].key
            ),
        });
        Ok(())
    }

    fn reshapes(&mut self, db: &dyn Db) {
        let _ = db;
        for p in 0..self.sched.len() {
            let x = self.sched[p];
            if self.body.ops[x as usize].name != "ttnn.reshape" {
                continue;
            }
            // (a) The reshape's producer spills to L1 interleaved instead of DRAM when the
            // reshape is its only user and runs right after it.
            if let Some(ValueRef::Result { op: src, .. }) =
                self.body.ops[x as usize].operands.first().copied()
                && let Some(sc) = self.chain_of_last(src)
                && self.completed_dram_chain(sc)
                && self.topo.ops[src as usize].num_uses == 1
                && self.pos[src as usize] + 1 == p as u32
                && let Some(shape) = self.shape(src)
                && let Some(layout) = self.plans[src as usize].layout.clone()
            {
                let l1 = TtnnLayout::l1_interleaved(
                    &shape,
                    layout.data_type().unwrap_or(DataType::BF16),
                    layout.page_layout(),
                    self.target.worker_grid(),
                );
                let pays = self.dram_spill(src).is_some_and(|dram| {
                    let before = self.copy_time(src, &dram) + self.op_time(x, &[(0, dram)], None);
                    let after =
                        self.copy_time(src, &l1) + self.op_time(x, &[(0, l1.clone())], None);
                    Self::pays_off(before, after).is_ok()
                });
                if pays
                    && self
                        .validate(x, &[(0, l1.clone())], None, None, self.active(p as u32))
                        .is_ok()
                    && self.spill_fits(src, &l1, 0).is_ok()
                {
                    self.keep(
                        sc,
                        SpillLocation::L1Interleaved,
                        "feeds a reshape right after it".to_owned(),
                    );
                    self.plans[src as usize].spill =
                        Some(Conversion { layout: l1, reason: String::new() });
                }
            }
            // (b) The reshape's own output in L1 interleaved, reserved until its last use.
            if self.topo.ops[x as usize].returned || self.plans[x as usize].chain.is_some() {
                continue;
            }
            let Some(shape) = self.shape(x) else { continue };
            let Some(cur) = self.plans[x as usize].layout.clone() else { continue };
            if cur.is_l1() {
                continue;
            }
            let l1 = TtnnLayout::l1_interleaved(
                &shape,
                cur.data_type().unwrap_or(DataType::BF16),
                cur.page_layout(),
                self.target.worker_grid(),
            );
            if self.validate(x, &[], Some(&l1), None, self.active(p as u32)).is_err() {
                continue;
            }
            let end = self.last_use_pos(x);
            let bytes = l1.l1_bytes_per_core();
            let users: Vec<(u32, usize)> = self.topo.ops[x as usize]
                .users
                .iter()
                .map(|u| (u.user, u.operand as usize))
                .collect();
            let users_ok = users.iter().all(|(u, k)| {
                self.validate(
                    *u,
                    &[(*k, l1.clone())],
                    None,
                    None,
                    self.active(self.pos[*u as usize]),
                )
                .is_ok()
            });
            let skip: Vec<u32> = users.iter().map(|(u, _)| *u).collect();
            let before: u64 = self.op_time(x, &[], None)
                + users.iter().map(|&(u, _)| self.op_time(u, &[], None)).sum::<u64>();
            let after: u64 = self.op_time(x, &[], Some(&l1))
                + users
                    .iter()
                    .map(|&(u, k)| self.op_time(u, &[(k, l1.clone())], None))
                    .sum::<u64>();
            if users_ok
                && Self::pays_off(before, after).is_ok()
                && self.window_fits(p as u32 + 1, end, bytes, &skip).is_ok()
            {
                self.plans[x as usize].layout = Some(l1.clone());
                self.out.layouts.push((
                    x,
                    l1.clone(),
                    "reshape output kept in L1 interleaved for its consumers".to_owned(),
                ));
                self.reserve(x, l1, end);
                self.out.records.push(MergeRecord {
                    kind: MergeKind::Reshape,
                    sources: vec![x],
                    join: x,
                    description: format!(
                        "`{}` output in L1 interleaved",
                        self.body.ops[x as usize].key
                    ),
                });
            }
        }
    }

    fn forks(&mut self, db: &dyn Db) {
        let _ = db;
        for c in 0..self.chains.len() {
            if !self.completed_dram_chain(c) {
                continue;
            }
            let Some(&last) = self.chains[c].ops.last() else { continue };
            let t = &self.topo.ops[last as usize];
            if t.num_uses < 2 || t.returned {
                continue;
            }
            let Some(sharded) = self.plans[last as usize].layout.clone() else { continue };
            let Some(shape) = self.shape(last) else { continue };
            let users: Vec<(u32, usize)> =
                t.users.iter().map(|u| (u.user, u.operand as usize)).collect();
            let end = self.last_use_pos(last);
            let fork_pos = self.pos[last as usize];
            let l1i = TtnnLayout::l1_interleaved(
                &shape,
                sharded.data_type().unwrap_or(DataType::BF16),
                sharded.page_layout(),
                self.target.worker_grid(),
            );
            for (layout, spill) in
                [(sharded.clone(), SpillLocation::None), (l1i, SpillLocation::L1Interleaved)]
            {
                let mut keep_activation = Vec::new();
                let users_ok = users.iter().all(|&(u, k)| {
                    let sig = &self.sigs[u as usize];
                    if layout.is_sharded() && sig.as_ref().is_some_and(|s| s.kind.is_reduction()) {
                        return false; // tt-metal#34951
                    }
                    let at = self.active(self.pos[u as usize]);
                    if self.validate(u, &[(k, layout.clone())], None, None, at).is_ok() {
                        return true;
                    }
                    // A conv2d that deallocates its activation cannot read a forked input.
                    if let OpConfig::Conv2d { conv, compute, slice } =
                        &self.plans[u as usize].config
                        && conv.deallocate_activation == Some(true)
                    {
                        let mut c2 = conv.clone();
                        c2.deallocate_activation = Some(false);
                        let cfg = OpConfig::Conv2d { conv: c2, compute: *compute, slice: *slice };
                        if self.validate(u, &[(k, layout.clone())], None, Some(&cfg), at).is_ok() {
                            keep_activation.push(u);
                            return true;
                        }
                    }
                    false
                });
                let skip: Vec<u32> = users.iter().map(|(u, _)| *u).collect();
                let copy_fits =
                    spill == SpillLocation::None || self.spill_fits(last, &layout, 0).is_ok();
                let pays = self.dram_spill(last).is_some_and(|dram| {
                    let before = self.copy_time(last, &dram)
                        + users
                            .iter()
                            .map(|&(u, k)| self.op_time(u, &[(k, dram.clone())], None))
                            .sum::<u64>();
                    let after = self.copy_time(last, &layout)
                        + users
                            .iter()
                            .map(|&(u, k)| self.op_time(u, &[(k, layout.clone())], None))
                            .sum::<u64>();
                    Self::pays_off(before, after).is_ok()
                });
                if users_ok
                    && copy_fits
                    && pays
                    && self
                        .window_fits(fork_pos + 1, end, layout.l1_bytes_per_core(), &skip)
                        .is_ok()
                {
                    let reason = if spill == SpillLocation::None {
                        "fork: the sharded output stays in L1 for all users".to_owned()
                    } else {
                        "fork: the output goes to L1 interleaved for all users".to_owned()
                    };
                    self.keep(c, spill, reason.clone());
                    if spill == SpillLocation::L1Interleaved {
                        self.plans[last as usize].spill =
                            Some(Conversion { layout: layout.clone(), reason: String::new() });
                    }
                    for &(u, k) in &users {
                        self.out.inputs.push((u, k as u32, layout.clone()));
                    }
                    self.out.conv_keep_activation.extend(keep_activation);
                    self.reserve(last, layout, end);
                    self.out.records.push(MergeRecord {
                        kind: MergeKind::Fork,
                        sources: vec![last],
                        join: users[0].0,
                        description: format!("`{}`: {reason}", self.body.ops[last as usize].key),
                    });
                    break;
                }
            }
        }
    }

    /// A candidate source for operand `k` of op `j`: the last op of another completed chain
    /// spilling to DRAM, single use, scheduled before.
    fn source_for(&self, b: usize, j: u32, k: usize) -> Option<(usize, u32)> {
        let ValueRef::Result { op, .. } = *self.body.ops[j as usize].operands.get(k)? else {
            return None;
        };
        let sc = self.chain_of_last(op)?;
        (sc != b
            && self.completed_dram_chain(sc)
            && self.topo.ops[op as usize].num_uses == 1
            && self.pos[op as usize] < self.pos[j as usize])
            .then_some((sc, op))
    }

    fn chain_merges(&mut self) {
        for b in 0..self.chains.len() {
            if self.merged_target[b]
                || self.chains[b].state != ChainState::Completed
                || self.chains[b].concat
            {
                continue;
            }
            let members = self.chains[b].ops.clone();
            let Some(&first) = members.first() else { continue };
            let n_tensor_operands =
                self.sigs[first as usize].as_ref().map_or(0, |s| s.tensor_operands().count());
            // 3-way: both inputs of a two-input first op come from chains.
            if n_tensor_operands == 2
                && let (Some(a), Some(c)) =
                    (self.source_for(b, first, 0), self.source_for(b, first, 1))
                && a.0 != c.0
                && self.try_three_way(b, first, a, c).is_ok()
            {
                self.merged_target[b] = true;
                continue;
            }
            // A->B: pick the largest source output among the candidates that validate.
            let mut candidates: Vec<(u64, u32, usize, (usize, u32))> = Vec::new();
            for &j in &members {
                let n_ops = self.body.ops[j as usize].operands.len();
                for k in 0..n_ops {
                    if k == 0 && j != first {
                        continue;
                    }
                    if let Some(src) = self.source_for(b, j, k) {
                        let single_operand = n_tensor_operands == 1;
                        if k == 0 && !(single_operand || self.chains[src.0].concat) {
                            continue;
                        }
                        candidates.push((self.out_bytes(src.1), j, k, src));
                    }
                }
            }
            candidates.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
            for (_, j, k, src) in candidates {
                if self.try_simple(b, j, k, src).is_ok() {
                    self.merged_target[b] = true;
                    break;
                }
            }
        }
    }

    fn try_simple(
        &mut self,
        b: usize,
        join: u32,
        k: usize,
        (sc, src): (usize, u32),
    ) -> Result<(), String> {
        let layout = self.plans[src as usize].layout.clone().ok_or("no layout")?;
        let bytes = layout.l1_bytes_per_core();
        let join_pos = self.pos[join as usize];
        // Ops between the source's end and the join hold the source's output.
        self.window_fits(
            self.pos[src as usize] + 1,
            join_pos.saturating_sub(1),
            bytes,
            &self.chains[b].ops.clone(),
        )?;
        // B's ops up to the join, the join with the source's layout substituted.
        for &j in &self.chains[b].ops {
            let at = self.active(self.pos[j as usize]);
            if j == join {
                let produced = self.validate(j, &[(k, layout.clone())], None, None, at)?;
                if Some(&produced) != self.plans[j as usize].layout.as_ref() {
                    return Err("the join would produce a different layout".to_owned());
                }
                self.check_shrink(j, &layout)?;
                break;
            }
            self.validate(j, &[], None, None, at + bytes)?;
        }
        // Fragmentation check on the op after the join (tt-mlir's extra check).
        if let Some(&after) = self.sched.get(join_pos as usize + 1) {
            self.validate(after, &[], None, None, bytes + self.active(join_pos + 1))
                .map_err(|e| format!("fragmentation check failed: {e}"))?;
        }
        if let Some(dram) = self.dram_spill(src) {
            let before = self.copy_time(src, &dram) + self.op_time(join, &[(k, dram)], None);
            let after = self.op_time(join, &[(k, layout.clone())], None);
            Self::pays_off(before, after)?;
        }
        self.keep(sc, SpillLocation::None, format!("merged into chain #{b} (stays in L1)"));
        self.reserve(src, layout.clone(), join_pos);
        self.out.inputs.push((join, k as u32, layout));
        self.out.records.push(MergeRecord {
            kind: MergeKind::Simple,
            sources: vec![src],
            join,
            description: format!(
                "`{}` stays in L1 for operand {k} of `{}`",
                self.body.ops[src as usize].key, self.body.ops[join as usize].key
            ),
        });
        Ok(())
    }

    fn try_three_way(
        &mut self,
        b: usize,
        join: u32,
        (ac, a): (usize, u32),
        (cc, c): (usize, u32),
    ) -> Result<(), String> {
        let _ = b;
        let (la, lc) = (
            self.plans[a as usize].layout.clone().ok_or("no layout")?,
            self.plans[c as usize].layout.clone().ok_or("no layout")?,
        );
        let (ba, bc) = (la.l1_bytes_per_core(), lc.l1_bytes_per_core());
        let (pa, pc) = (self.pos[a as usize], self.pos[c as usize]);
        let (first, second, lfirst, bfirst) =
            if pa < pc { (a, c, &la, ba) } else { (c, a, &lc, bc) };
        let _ = lfirst;
        let second_chain = if pa < pc { cc } else { ac };
        let start = self.chains[second_chain]
            .ops
            .first()
            .map_or(self.pos[second as usize], |&s| self.pos[s as usize]);
        // (i) ops between the first source's end and the second chain's start.
        self.window_fits(self.pos[first as usize] + 1, start.saturating_sub(1), bfirst, &[])?;
        // (ii) every op of the second chain with the first source held.
        for &o in &self.chains[second_chain].ops.clone() {
            self.validate(o, &[], None, None, bfirst + self.active(self.pos[o as usize]))?;
        }
        // (iii) the join with both sharded inputs.
        let produced = self.validate(
            join,
            &[(0, la.clone()), (1, lc.clone())],
            None,
            None,
            self.active(self.pos[join as usize]),
        )?;
        if Some(&produced) != self.plans[join as usize].layout.as_ref() {
            return Err("the join would produce a different layout".to_owned());
        }
        self.check_shrink(join, &la)?;
        self.check_shrink(join, &lc)?;
        // (iv) fragmentation check.
        let jp = self.pos[join as usize];
        if let Some(&after) = self.sched.get(jp as usize + 1) {
            self.validate(after, &[], None, None, ba + bc + self.active(jp + 1))
                .map_err(|e| format!("fragmentation check failed: {e}"))?;
        }
        if let (Some(da), Some(dc)) = (self.dram_spill(a), self.dram_spill(c)) {
            let before = self.copy_time(a, &da)
                + self.copy_time(c, &dc)
                + self.op_time(join, &[(0, da), (1, dc)], None);
            let after = self.op_time(join, &[(0, la.clone()), (1, lc.clone())], None);
            Self::pays_off(before, after)?;
        }
        self.keep(ac, SpillLocation::None, "3-way merge: stays in L1 for the join".to_owned());
        self.keep(cc, SpillLocation::None, "3-way merge: stays in L1 for the join".to_owned());
        self.reserve(a, la.clone(), jp);
        self.reserve(c, lc.clone(), jp);
        self.out.inputs.push((join, 0, la));
        self.out.inputs.push((join, 1, lc));
        self.out.records.push(MergeRecord {
            kind: MergeKind::ThreeWay,
            sources: vec![a, c],
            join,
            description: format!(
                "`{}` and `{}` stay in L1 for `{}`",
                self.body.ops[a as usize].key,
                self.body.ops[c as usize].key,
                self.body.ops[join as usize].key
            ),
        });
        Ok(())
    }

    /// tt-metal#34765: add/multiply/minimum must not shrink a sharded input onto fewer cores.
    fn check_shrink(&self, join: u32, input: &TtnnLayout) -> Result<(), String> {
        let Some(sig) = &self.sigs[join as usize] else { return Ok(()) };
        let out_cores = self.plans[join as usize].layout.as_ref().map_or(0, TtnnLayout::num_cores);
        if sig.kind.rejects_eltwise_core_shrink()
            && input.is_sharded()
            && out_cores < input.num_cores()
        {
            return Err("eltwise core shrink (tt-metal#34765)".to_owned());
        }
        Ok(())
    }
}
