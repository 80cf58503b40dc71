//! The hook where the optimizer's per-op results meet hover and inlay hints.
//!
//! Hover calls [`extra_lines`] for every op it describes, and inlay hints call
//! [`inlay_label`] for every op result: the planned layout against the written one, the op
//! config, per-core L1 and the live L1 at the op, its chain and the chain's state, why it
//! spilled or why a reshard was inserted, plus what layout generation knows (legal
//! candidates, overrides in force).

use std::fmt::Write as _;

use ir::OpId;
use layout::OverrideUse;

use crate::{RootDatabase, sites};

/// The function's plan, if the optimizer rewrites that function, read chunk by chunk (a
/// hover right after an edit should not wait for the whole plan to be gathered).
fn plan_of(db: &RootDatabase, op: OpId) -> Option<(plan::PlanView<'_>, usize)> {
    let func = op.func(db);
    let (body, idx) = ir::op_in_body(db, op)?;
    rewrite::optimizable(&body).ok()?;
    Some((plan::PlanView::new(db, func, layout::effective_options(db).policy), idx))
}

/// The layout the optimizer plans for the op's result.
pub(crate) fn planned_layout(db: &RootDatabase, op: OpId) -> Option<ttnn_types::TtnnLayout> {
    let (plan, idx) = plan_of(db, op)?;
    plan.op(idx)?.layout.clone()
}

/// Per-core L1 of the op with its planned layouts (cb, tensor, output), and the live L1 of
/// other values in L1 just before it runs, along the schedule.
fn planned_l1(
    db: &RootDatabase,
    op: OpId,
    plan: &plan::PlanView<'_>,
    idx: usize,
) -> Option<(u64, u64, u64, u64)> {
    let (body, _) = ir::op_in_body(db, op)?;
    let sig = layout::op_signature(db, op)?;
    let p = plan.op(idx)?;
    let mut inputs = Vec::new();
    for (k, v) in body.ops[idx].operands.iter().enumerate() {
        let Some(t) = body.ops[idx].operand_types.get(k).and_then(ir::Ty::as_tensor) else {
            continue;
        };
        let arriving = match v {
            ir::ValueRef::Result { .. } => body.result_of(*v).and_then(|(o, _)| {
                plan.op(o as usize).and_then(|q| {
                    q.spill.as_ref().map(|s| s.layout.clone()).or_else(|| q.layout.clone())
                })
            }),
            _ => t.layout.clone(),
        };
        let used = p.expected_operands.get(k).cloned().flatten().map(|c| c.layout).or(arriving)?;
        inputs.push(opmodel::TensorDesc::new(&t.static_shape()?, used));
    }
    let out = p.layout.clone()?;
    let q = layout::query_for(&sig, inputs, opmodel::OutputHint::Layout(out), p.config.clone(), 0)?;
    let target = base_db::TargetInput::get(db).target(db);
    let r = db.op_model_query(target, &q).ok()?;
    // Live L1 before the op: values in L1 produced earlier in the schedule and used at or
    // after this op.
    let pos = *plan.schedule.position.get(idx)?;
    let topo = plan::func_topology(db, op.func(db));
    let mut live = 0u64;
    for (j, t) in topo.ops.iter().enumerate() {
        let Some(&pj) = plan.schedule.position.get(j) else { continue };
        if pj == u32::MAX || pj >= pos {
            continue;
        }
        let last = t
            .users
            .iter()
            .filter_map(|u| plan.schedule.position.get(u.user as usize).copied())
            .filter(|&x| x != u32::MAX)
            .max()
            .unwrap_or(pj);
        if last >= pos || t.returned {
            let Some(q) = plan.op(j) else { continue };
            live += q
                .spill
                .as_ref()
                .map(|s| s.layout.clone())
                .or_else(|| q.layout.clone())
                .map_or(0, |l| l.l1_bytes_per_core());
        }
    }
    Some((r.cb_peak, r.tensor_peak, r.output_bytes, live))
}

/// Extra hover lines for an op: the plan's decision and its reasons, then its legal layouts
/// and the overrides that apply to it.
pub(crate) fn extra_lines(db: &RootDatabase, op: OpId) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some((plan, idx)) = plan_of(db, op)
        && let Some(p) = plan.op(idx)
    {
        let written = ir::op_in_body(db, op)
            .and_then(|(b, i)| b.ops[i].results.first().and_then(|t| t.layout().cloned()));
        match (&p.layout, &written) {
            (Some(l), Some(w)) if l == w => lines.push(format!(
                "planned layout ({}): unchanged, {}",
                plan.policy.name(),
                l.describe()
            )),
            (Some(l), Some(w)) => {
                lines.push(format!("planned layout ({}): {}", plan.policy.name(), l.describe()));
                lines.push(format!("written layout: {}", w.describe()));
            }
            (Some(l), None) => {
                lines.push(format!("planned layout ({}): {}", plan.policy.name(), l.describe()))
            }
            _ => {}
        }
        if let Some(c) = crate::plan_report::config_text(&p.config) {
            lines.push(format!("op config: {c}"));
        }
        if let Some((cb, tensor, output, live)) = planned_l1(db, op, &plan, idx) {
            lines.push(format!("L1 per core: cb {cb} B, tensor {tensor} B, output {output} B; live L1 before it: {live} B"));
        }
        if let Some((c, pos, chain)) = plan.chain_of(idx) {
            let mut line = format!(
                "chain #{c}: op {} of {}, {}",
                pos + 1,
                chain.ops.len(),
                chain.state.name()
            );
            if chain.ops.last() == Some(&(idx as u32)) && chain.state == plan::ChainState::Completed
            {
                let _ = write!(line, "; output: {}", chain.spill.name());
                if !chain.spill_reason.is_empty() {
                    let _ = write!(line, " ({})", chain.spill_reason);
                }
            }
            lines.push(line);
            // The op's own reason usually quotes the chain's failure; say it once.
            if let Some(f) = chain.failure.as_ref().filter(|f| !p.reason.contains(f.as_str())) {
                lines.push(format!("chain {}: {f}", chain.state.name()));
            }
        }
        lines.push(format!("why: {}", p.reason));
        for (k, c) in p.expected_operands.iter().enumerate() {
            if let Some(c) = c {
                lines.push(format!("operand {k}: {} ({})", c.layout.describe(), c.reason));
            }
        }
        if let Some(s) = &p.spill {
            lines.push(format!("result: {} ({})", s.layout.describe(), s.reason));
        }
    }
    let legal = layout::legal_op_layouts(db, op);
    if let Some(name) = &legal.unknown_op {
        lines.push(format!(
            "legal layouts: DRAM interleaved only (the op model does not know `{name}`)"
        ));
    } else if legal.fixed {
        lines.push("legal layouts: fixed (the optimizer keeps this op's layout)".to_owned());
    } else {
        let sharded = legal.sharded().count();
        let interleaved = legal.layouts.len() - sharded;
        let mut line = format!("legal layouts: {interleaved} interleaved, {sharded} sharded");
        if legal.rejected > 0 {
            let _ = write!(line, " ({} rejected by the op model", legal.rejected);
            if let Some(reason) = &legal.first_rejection {
                let _ = write!(line, ", first: {reason}");
            }
            line.push(')');
        }
        lines.push(line);
    }
    let Some(overrides) = layout::op_overrides(db, op) else { return lines };
    let name = loc_name(db, op).unwrap_or_default();
    if let Some(o) = &overrides.output_layout {
        let mut line =
            format!("override applied: `override-output-layout={name}={}`", o.to_params());
        match &legal.override_use {
            Some(OverrideUse::Full { rejection: Some(reason), .. }) => {
                let _ = write!(line, " (the op model rejects it: {reason}; used anyway)");
            }
            Some(OverrideUse::Partial { remaining }) => {
                let _ = write!(line, " ({remaining} candidates match)");
            }
            Some(OverrideUse::Invalid { reason }) => {
                let _ = write!(line, " (ignored: {reason})");
            }
            Some(OverrideUse::NoEffect) => line.push_str(" (no effect: the layout is fixed)"),
            Some(OverrideUse::Full { rejection: None, .. }) | None => {}
        }
        lines.push(line);
    }
    if let Some(c) = &overrides.conv2d {
        lines.push(format!("override applied: `override-conv2d-config` for `{name}`: `{c}`"));
    }
    if !overrides.reshard_operands.is_empty() {
        let idx: Vec<String> = overrides.reshard_operands.iter().map(u32::to_string).collect();
        lines.push(format!("override applied: `insert-memreconfig={name}={}`", idx.join(":")));
    }
    lines
}

/// The inlay label after an op's results: the planned layout in short form (`→ L1 bs 2x8`)
/// when the optimizer rewrites the function, else the layout as written (`DRAM il`).
pub(crate) fn inlay_label(db: &RootDatabase, op: OpId) -> Option<String> {
    if let Some(l) = planned_layout(db, op) {
        return Some(format!("→ {}", sites::layout_short(&l)));
    }
    let (body, idx) = ir::op_in_body(db, op)?;
    let labels: Vec<String> =
        body.ops[idx].results.iter().filter_map(|t| t.layout().map(sites::layout_short)).collect();
    (!labels.is_empty()).then(|| labels.join(", "))
}

/// The op's `loc("name")`, which overrides key on.
pub(crate) fn loc_name(db: &RootDatabase, op: OpId) -> Option<String> {
    ir::func_loc_names(db, op.func(db)).of_key(op.key(db)).map(str::to_owned)
}
