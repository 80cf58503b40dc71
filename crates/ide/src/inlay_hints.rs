//! Inlay hints for a range of a file:
//!
//! - after each op's results, the layout of the result in short form (`DRAM il`,
//!   `→ L1 bs 2x8`), from [`plan_hover::inlay_label`](crate::plan_hover::inlay_label): the
//!   planned layout where the optimizer rewrites the function, else the layout as written;
//! - after each place the optimizer's findings point at (an op name, a result, an operand),
//!   the finding in a word or two (`spill`, `reshard`, `chain declined`, `chain failed`)
//!   with its whole message as the tooltip. These are outcomes of the optimizer, not
//!   problems in the IR, so they are shown here, for the range the editor asks about, and
//!   published as diagnostics only when the client's settings ask for that.

use base_db::SourceFile;
use syntax::TextRange;

use crate::{Analysis, Cancellable, RootDatabase, plan_hover, sites};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlayHint {
    /// Where the hint is shown: right after the op's result names, or after what a finding
    /// points at.
    pub offset: u32,
    pub label: String,
    pub kind: InlayHintKind,
    /// The longer text an editor shows on demand (a finding's message).
    pub tooltip: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlayHintKind {
    /// The layout of an op's result.
    Layout,
    /// One of the optimizer's findings.
    Finding,
}

impl Analysis {
    /// The hints of the ops whose results are written inside `range` and of the optimizer's
    /// findings there, in source order.
    pub fn inlay_hints(&self, file: SourceFile, range: TextRange) -> Cancellable<Vec<InlayHint>> {
        let mut out = self.with_db(|db| layout_hints(db, file, range))?;
        for f in self.plan_findings(file, Some(range))?.iter() {
            if !range.contains_inclusive(f.range.end) {
                continue;
            }
            out.push(InlayHint {
                offset: f.range.end,
                label: finding_label(f.code).to_owned(),
                kind: InlayHintKind::Finding,
                tooltip: Some(f.message.to_owned()),
            });
        }
        // Stable: at one offset, the layout comes before the findings, which come in the
        // findings' order.
        out.sort_by_key(|h| h.offset);
        Ok(out)
    }
}

/// A finding's code as the short label of its hint.
fn finding_label(code: &str) -> &str {
    match code {
        "chain-declined" => "chain declined",
        "chain-failed" => "chain failed",
        other => other,
    }
}

fn layout_hints(db: &RootDatabase, file: SourceFile, range: TextRange) -> Vec<InlayHint> {
    let _p = tracing::debug_span!("inlay_hints").entered();
    let mut out = Vec::new();
    for (func, _, sm) in sites::funcs(db, file) {
        if sm.range.end < range.start || sm.range.start > range.end {
            continue;
        }
        let ops = ir::func_ops(db, func);
        for (idx, &op) in ops.iter().enumerate() {
            let Some(last) = sm.result_ranges.get(idx).and_then(|r| r.last()) else { continue };
            if !range.contains_inclusive(last.end) {
                continue;
            }
            if let Some(label) = plan_hover::inlay_label(db, op) {
                out.push(InlayHint {
                    offset: last.end,
                    label,
                    kind: InlayHintKind::Layout,
                    tooltip: None,
                });
            }
        }
    }
    out
}
