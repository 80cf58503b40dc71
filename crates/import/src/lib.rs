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

/// tt-mlir pipeline options that change the imported graph. The default is tt-mlir's default
/// pipeline (`--ttir-to-ttnn-backend-pipeline` without options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportOptions {
    /// tt-mlir's `experimental-weight-dtype`: the B operand of every matmul and linear whose
    /// inputs are only `parameter` and `constant` arguments is cast to this block float
    /// (a `ttcore.weight_dtype` mark on the weight's argument still wins). tt-xla's LLM
    /// benchmarks and tt-mlir's model perf tests compile with `bfp_bf8`.
    pub weight_dtype: Option<WeightDtype>,
    /// tt-mlir's `compute-cfg-math-fidelity`: every op with a compute kernel config (matmuls,
    /// linears, convolutions, reductions, norms, softmax, ...) gets this fidelity in its
    /// `compute_config`. Without it nothing is written, and the cost model takes HiFi4,
    /// tt-mlir's default at optimization level 0.
    pub math_fidelity: Option<ttnn_types::MathFidelity>,
}

/// The block floats tt-mlir's global weight conversion accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightDtype {
    BfpBf8,
    BfpBf4,
}

impl WeightDtype {
    /// The TTNN data type the weights are cast to.
    #[must_use]
    pub fn data_type(self) -> ttnn_types::DataType {
        match self {
            WeightDtype::BfpBf8 => ttnn_types::DataType::BfpBF8,
            WeightDtype::BfpBf4 => ttnn_types::DataType::BfpBF4,
        }
    }
}

/// Imports a TTIR file as tt-mlir's default pipeline would. Never fails: ops that cannot be
/// lowered stay in TTIR form (with converted types, so the graph stays connected) and get an
/// `unsupported-op` error.
///
/// `file_name` only labels the output (a comment on its first line).
#[must_use]
pub fn import_ttir(text: &str, file_name: &str) -> ImportResult {
    import_ttir_with(text, file_name, ImportOptions::default())
}

/// [`import_ttir`] with tt-mlir pipeline options.
#[must_use]
pub fn import_ttir_with(text: &str, file_name: &str, options: ImportOptions) -> ImportResult {
    module::import(text, file_name, options)
}

/// True for TTIR input: the file's ops include `ttir.` ops and no `ttnn.` op. Read from the
/// parse, not the text: tt-mlir's TTIR tests carry TTNN layouts in their `CHECK` comments.
#[must_use]
pub fn is_ttir(text: &str) -> bool {
    let parse = syntax::parse(text);
    let (mut ttir, mut ttnn) = (false, false);
    for chunk in &parse.file().chunks {
        for item in &chunk.items {
            if let syntax::ast::Item::Op(op) = item {
                visit_op_names(op, &mut |name| {
                    ttir |= name.starts_with("ttir.");
                    ttnn |= name.starts_with("ttnn.");
                });
            }
        }
    }
    ttir && !ttnn
}

/// Calls `f` with the name of `op` and of every op nested in it.
fn visit_op_names(op: &syntax::ast::Op, f: &mut impl FnMut(&str)) {
    use syntax::ast::OpBody;
    f(&op.name.text);
    let regions: Vec<&syntax::ast::Region> = match &op.body {
        OpBody::Generic(g) => g.regions.iter().collect(),
        OpBody::Module(m) => vec![&m.body],
        OpBody::Func(func) => func.body.iter().collect(),
        OpBody::RegionOp(r) => vec![&r.body],
        _ => Vec::new(),
    };
    for op in regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops) {
        visit_op_names(op, f);
    }
}

#[cfg(test)]
mod tests;
