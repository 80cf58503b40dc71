//! TTIR model files lowered to TTNN the way tt-mlir's `--ttir-to-ttnn-backend-pipeline` does
//! before its optimizer runs: TTIR decompositions (`dot_general`, `conv2d` flattening,
//! `reduce_or`, `index`, ...), TTIR-to-TTNN conversion, implicit-broadcast folding, and a
//! DRAM-interleaved tile layout on every tensor.
//!
//! A pure library: text in, text and diagnostics out. It reads TTIR through the semantic
//! model of [`ir`] and writes TTNN text that parses with [`syntax::parse`] and lowers with
//! [`ir::lower_parse`] without diagnostics. It does not run tt-mlir's fusions or per-op
//! workarounds; `docs/import.md` lists what it does and does not do.

mod dense;
mod func;
mod lower;
mod module;
mod names;
mod ty;

use std::collections::BTreeMap;

pub use ir::Severity;
use syntax::TextRange;

/// A problem found while importing, with a range in the input text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportDiagnostic {
    pub range: TextRange,
    pub severity: Severity,
    /// Kebab-case: `unsupported-op` (an op kept in TTIR form), `unlowered-value` (a returned
    /// value that has no output value), or a syntax or lowering code of the input.
    pub code: &'static str,
    pub message: String,
}

/// Op counts of an import, per op name. Deterministic (sorted maps).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportStats {
    /// Ops in the input functions (terminators not counted).
    pub ops_in: usize,
    /// Ops in the output functions, `ttnn.get_device` included, terminators not counted.
    pub ops_out: usize,
    pub ops_in_by_kind: BTreeMap<String, usize>,
    pub ops_out_by_kind: BTreeMap<String, usize>,
    /// Input ops kept in TTIR form because no lowering applied.
    pub unsupported: usize,
}

/// The imported TTNN text, the diagnostics and the op counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportResult {
    pub ttnn: String,
    pub diagnostics: Vec<ImportDiagnostic>,
    pub stats: ImportStats,
}

impl ImportResult {
    /// True when any diagnostic is an error.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}

/// Imports a TTIR file. Never fails: ops that cannot be lowered stay in TTIR form (with
/// converted types, so the graph stays connected) and get an `unsupported-op` error.
///
/// `file_name` only labels the output (a comment on its first line).
#[must_use]
pub fn import_ttir(text: &str, file_name: &str) -> ImportResult {
    module::import(text, file_name)
}

#[cfg(test)]
mod tests;
