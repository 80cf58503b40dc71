//! File diagnostics: the cheap concatenation of every stage's diagnostics for one file.
//!
//! Each stage returns its diagnostics inside its own (memoized) result; collecting them here
//! re-runs freely, which is fine because it only concatenates.

use base_db::SourceFile;
use syntax::TextRange;

use crate::RootDatabase;

pub use ir::Severity;

/// A diagnostic ready for display: a range in the file, a severity, a stable kebab-case code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub range: TextRange,
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
}

pub(crate) fn file_diagnostics(db: &RootDatabase, file: SourceFile) -> Vec<Diagnostic> {
    let lowered = ir::lower_file(db, file);
    let mut out: Vec<Diagnostic> = lowered
        .diagnostics
        .iter()
        .map(|d| Diagnostic {
            range: d.range,
            severity: d.severity,
            code: d.code,
            message: d.message.clone(),
        })
        .collect();
    out.sort_by(|a, b| {
        (a.range.start, a.range.end, a.code).cmp(&(b.range.start, b.range.end, b.code))
    });
    out
}
