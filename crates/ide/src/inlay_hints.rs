//! Inlay hints: after each op's results, the layout of the result in short form
//! (`DRAM il`, `L1 bs 2x8`), from [`plan_hover::inlay_label`](crate::plan_hover::inlay_label)
//! so the planner can switch the label to the planned layout.

use base_db::SourceFile;
use syntax::TextRange;

use crate::{Analysis, Cancellable, RootDatabase, plan_hover, sites};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlayHint {
    /// Where the hint is shown: right after the op's result names.
    pub offset: u32,
    pub label: String,
}

impl Analysis {
    /// The hints of the ops whose results are written inside `range`, in source order.
    pub fn inlay_hints(&self, file: SourceFile, range: TextRange) -> Cancellable<Vec<InlayHint>> {
        self.with_db(|db| inlay_hints(db, file, range))
    }
}

fn inlay_hints(db: &RootDatabase, file: SourceFile, range: TextRange) -> Vec<InlayHint> {
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
                out.push(InlayHint { offset: last.end, label });
            }
        }
    }
    out.sort_by_key(|h| h.offset);
    out
}
