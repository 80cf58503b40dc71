//! The hook where the optimizer's per-op results meet hover and inlay hints.
//!
//! Hover calls [`extra_lines`] for every op it describes, and inlay hints call
//! [`inlay_label`] for every op result. Today they report what layout generation knows (legal
//! candidates and the overrides in force) and the layout written in the IR; once the planner
//! exists they will report the planned layout, its chain, spills and reshards instead. Keeping
//! both behind these two functions means that switch touches nothing else.

use std::fmt::Write as _;

use ir::OpId;
use layout::OverrideUse;

use crate::{RootDatabase, sites};

/// Extra hover lines for an op: its legal layouts and the overrides that apply to it.
pub(crate) fn extra_lines(db: &RootDatabase, op: OpId) -> Vec<String> {
    let mut lines = Vec::new();
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

/// The inlay label after an op's results: the current layout of each tensor result, in short
/// form (`DRAM il`, `L1 bs 2x8`). `None` when no result has a layout.
pub(crate) fn inlay_label(db: &RootDatabase, op: OpId) -> Option<String> {
    let (body, idx) = ir::op_in_body(db, op)?;
    let labels: Vec<String> =
        body.ops[idx].results.iter().filter_map(|t| t.layout().map(sites::layout_short)).collect();
    (!labels.is_empty()).then(|| labels.join(", "))
}

/// The op's `loc("name")`, which overrides key on.
pub(crate) fn loc_name(db: &RootDatabase, op: OpId) -> Option<String> {
    let (_, idx) = ir::op_in_body(db, op)?;
    ir::func_loc_names(db, op.func(db)).names.get(idx)?.clone()
}
