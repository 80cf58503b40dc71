//! The `greedy` policy: tt-mlir HEAD's optimizer (greedy memory-layout propagation with a
//! beam, backward consolidation, L1 spill management, validation and fallback).
//!
//! `greedy_plan(f)` is one query per function: it builds a [`core::Problem`] from the
//! function's ops in schedule order (each op's legal configs from `layout`, its fallback
//! plan as the other policies make it), runs [`core::optimize`] and turns the decisions
//! into the plan's [`OpPlan`]s. The plan's per-chunk queries (`plan_chunk` and what reads
//! it: cost, final IR, findings, hover) slice it, so everything downstream is shared with
//! the other policies. It is not incremental below the function: any edit in the function
//! re-runs the whole policy.

pub mod core;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use ir::{FuncId, OpId};
use layout::TensorKey;
use opmodel::Candidate;
use ttnn_types::{DataType, TtnnLayout};

use crate::{
    Db,
    chunks::{ChunkLayout, PlanChunk, PlanSlice, chunk_layout},
    merge::Carry,
    planning::{Conversion, OpPlan},
    problem::Reads,
    scheduling::{func_topology, schedule},
};

/// The greedy policy's plan of one function: each op's plan, by body index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GreedyPlan {
    pub ops: Vec<OpPlan>,
    /// Op-model queries the policy issued.
    pub queries: u64,
}

/// The `greedy` policy over function `func`.
#[salsa::tracked(returns(clone))]
pub fn greedy_plan(db: &dyn Db, func: FuncId) -> Arc<GreedyPlan> {
    let Some(body) = ir::BodyView::new(db, func) else { return Arc::default() };
    let _p = tracing::debug_span!("greedy_plan", func = %func.name(db)).entered();
    let topo = func_topology(db, func);
    let sched = schedule(db, func);
    let pinned = layout::pinned_outputs(db, func);
    // Without the memory-layout analysis (tt-mlir's level 1, `enable-l1-sharding-layouts`
    // off) only DRAM is left: every op keeps its first legal layout, as under the others.
    let analysis = layout::effective_options(db).memory_layout_analysis;
    let n = body.ops.len();
    let base: Vec<OpPlan> = (0..n)
        .map(|i| {
            let data = &body.ops[i];
            let op = OpId::new(db, func, data.key.clone());
            crate::planning::base_plan(db, op, data, &pinned, Reads::Overrides)
        })
        .collect();
    // The layout a value has where the policy does not place its producer.
    let as_left = |i: usize| -> Option<TtnnLayout> {
        let p = base.get(i)?;
        p.spill.as_ref().map(|s| s.layout.clone()).or_else(|| p.layout.clone())
    };
    let mut index_of = vec![None; n];
    for (j, &i) in sched.order.iter().enumerate() {
        if let Some(slot) = index_of.get_mut(i as usize) {
            *slot = Some(j);
        }
    }
    let mut problem = core::Problem { ops: Vec::with_capacity(sched.order.len()) };
    for &i in &sched.order {
        let i = i as usize;
        let data = &body.ops[i];
        let op = OpId::new(db, func, data.key.clone());
        let sig = layout::op_signature(db, op);
        let legality = layout::op_legality(db, op);
        let result = sig.as_deref().and_then(layout::OpSignature::tensor_result);
        // An op with several results is not placed, but it runs and needs L1 next to what is
        // live: it is validated with its first result as the output, as the verifier and the
        // op model read such ops.
        let first = data.results.first().and_then(ir::Ty::as_tensor);
        let shown = result.or(first);
        let output_shape = shown.and_then(ttnn_types::TensorType::static_shape).unwrap_or_default();
        let output_dtype =
            shown.and_then(ttnn_types::TensorType::data_type).unwrap_or(DataType::BF16);
        let plan = &base[i];
        let fallback = plan
            .layout
            .clone()
            .filter(|l| !l.is_l1())
            .map(|layout| Candidate { layout, config: plan.config.clone() });
        let mut operands = Vec::with_capacity(data.operands.len());
        let mut targets = Vec::with_capacity(data.operands.len());
        for (k, v) in data.operands.iter().enumerate() {
            let ty = data.operand_types.get(k);
            let Some(t) = ty.and_then(ir::Ty::as_tensor) else {
                operands.push(None);
                targets.push(Arc::default());
                continue;
            };
            let shape = t.static_shape().unwrap_or_default();
            let dtype = t.data_type().unwrap_or(DataType::BF16);
            let producer = body.result_of(*v).map(|(p, _)| p as usize);
            let layout =
                producer.and_then(as_left).or_else(|| t.layout.clone()).unwrap_or_else(|| {
                    TtnnLayout::dram_interleaved(&shape, dtype, ttnn_types::PageLayout::Tile)
                });
            let placed = producer.and_then(|p| index_of.get(p).copied().flatten());
            targets.push(if placed.is_some() {
                let pool =
                    layout::legal_tensor_layouts(db, TensorKey::new(db, shape.clone(), dtype));
                Arc::clone(&pool.reshard_targets)
            } else {
                Arc::default()
            });
            operands.push(Some(core::Operand { shape, producer: placed, layout }));
        }
        // A `to_layout` was put there by an earlier pass that knew what its user needs
        // (tt-mlir skips them too).
        let optimize = analysis
            && data.name != "ttnn.to_layout"
            && !legality.layouts.fixed
            && result.is_some()
            && plan.spill.is_none()
            && !data.operands.is_empty()
            && fallback.is_some();
        let as_written = pinned.contains(data.key.as_str())
            || (legality.layouts.fixed && legality.layouts.rejected > 0);
        let validated = !optimize && shown.is_some() && !as_written;
        problem.ops.push(core::Op {
            name: data.key.clone(),
            kind: sig
                .as_ref()
                .map_or(opmodel::OpKind::Unknown(data.name.clone()), |s| s.kind.clone()),
            operands,
            output_shape,
            output_dtype,
            candidates: legality.configs.iter().cloned().collect(),
            reshard_targets: targets,
            // Ops pinned by a d2m subgraph or call, or that the op model rejects for every
            // layout, are left exactly as written: no input of theirs makes them valid.
            current: validated
                .then(|| plan.layout.clone().or_else(|| first.and_then(|t| t.layout.clone())))
                .flatten()
                .map(|layout| Candidate { layout, config: plan.config.clone() }),
            fallback,
            optimize,
            returned: topo.ops.get(i).is_some_and(|o| o.returned),
        });
    }
    let target = base_db::TargetInput::get(db).target(db);
    let outcome = core::optimize(&problem, db.op_model(), target);
    let mut ops = base;
    for (j, d) in outcome.decisions.iter().enumerate() {
        let Some(&i) = sched.order.get(j) else { continue };
        let Some(plan) = ops.get_mut(i as usize) else { continue };
        match &d.output {
            Some(out) => apply(plan, &problem, j, d, out, &outcome.decisions),
            None if d.inputs.iter().any(Option::is_some) => {
                // A kept op the validation gave DRAM inputs.
                plan.expected_operands = expected(&problem.ops[j], d, &outcome.decisions);
                plan.reason = format!("{}; greedy: {}", plan.reason, d.spill_note).into();
            }
            None => {}
        }
    }
    Arc::new(GreedyPlan { ops, queries: outcome.queries })
}

/// Writes decision `d` of problem op `j` into its plan.
fn apply(
    plan: &mut OpPlan,
    problem: &core::Problem,
    j: usize,
    d: &core::Decision,
    out: &Candidate,
    all: &[core::Decision],
) {
    let op = &problem.ops[j];
    plan.layout = Some(out.layout.clone());
    plan.config = out.config.clone();
    plan.chain = None;
    plan.spill = d.spill.as_ref().map(|l| Conversion {
        layout: l.clone(),
        reason: if d.spill_note.is_empty() {
            "spilled to DRAM".into()
        } else {
            Arc::from(d.spill_note.as_str())
        },
    });
    plan.expected_operands = expected(op, d, all);
    let mut reason = match &d.how {
        core::How::Beam { rank, fork: Some((agreed, users)) } => format!(
            "greedy: beam candidate {rank} of the op, the one {agreed} of its {users} users assumed"
        ),
        core::How::Beam { rank: 0, fork: None } => {
            "greedy: the best-scored beam candidate".to_owned()
        }
        core::How::Beam { rank, fork: None } => {
            format!("greedy: beam candidate {rank}, the one its user assumed")
        }
        core::How::NoValid(why) => format!("greedy: DRAM interleaved fallback ({why})"),
        core::How::Kept => String::new(),
    };
    if !d.spill_note.is_empty() {
        reason.push_str("; ");
        reason.push_str(&d.spill_note);
    }
    plan.reason = reason.into();
}

/// Per operand of op `op`: the conversion to the layout decision `d` reads it in, where that
/// differs from the layout it arrives in.
fn expected(op: &core::Op, d: &core::Decision, all: &[core::Decision]) -> Vec<Option<Conversion>> {
    op.operands
        .iter()
        .zip(&d.inputs)
        .map(|(o, want)| {
            let o = o.as_ref()?;
            let want = want.as_ref()?;
            let incoming = match o.producer {
                Some(q) => all.get(q).and_then(|dq| {
                    dq.spill.clone().or_else(|| dq.output.as_ref().map(|c| c.layout.clone()))
                }),
                None => None,
            }
            .unwrap_or_else(|| o.layout.clone());
            (incoming != *want).then(|| Conversion {
                layout: want.clone(),
                reason: "greedy: converted to the layout the op was validated with".into(),
            })
        })
        .collect()
}

/// Chunk `k` of the greedy plan, with the carry the chunk readers expect (the outputs later
/// chunks read); no chains, merges or reservations.
pub(crate) fn greedy_chunk(db: &dyn Db, func: FuncId, k: u32) -> PlanChunk {
    let plan = greedy_plan(db, func);
    let layout: Arc<ChunkLayout> = chunk_layout(db, func);
    let topo = func_topology(db, func);
    let here: Vec<u32> = layout.ops(k as usize).to_vec();
    let plans = here
        .iter()
        .map(|&i| plan.ops.get(i as usize).cloned().unwrap_or_else(OpPlan::empty))
        .collect();
    let chunk_of = |i: u32| layout.chunk_of.get(i as usize).copied();
    let mut carry = Carry::default();
    for c in 0..=k as usize {
        for &i in layout.ops(c) {
            let read_later = topo
                .ops
                .get(i as usize)
                .is_some_and(|o| o.users.iter().any(|u| chunk_of(u.user).is_some_and(|c| c > k)));
            if read_later && let Some(p) = plan.ops.get(i as usize) {
                let spill = p.spill.as_ref().map(|s| s.layout.clone());
                carry.outputs.insert(i, (p.layout.clone(), spill));
            }
        }
    }
    PlanChunk {
        slice: Arc::new(PlanSlice { ops: here, plans, chains: Vec::new(), merges: Vec::new() }),
        carry: Arc::new(carry),
        reads: Arc::default(),
    }
}
