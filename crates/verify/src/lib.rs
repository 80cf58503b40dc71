//! The verifier: evaluates TTNN IR *as written* against the op model.
//!
//! It is the engine of `ttnn-analyzer report` and the independent check of the optimizer's
//! output. It re-reads the final IR text itself (parse, lower, decode) and shares no code with
//! the planner crates (`layout`, `solver`, `plan`, `rewrite`): a bug in how the planner reads
//! layouts, counts live L1 or builds op-model queries must not be repeated here, or the
//! verifier would approve the very mistakes it exists to catch. It is pure: no salsa, no IO.
//!
//! Per function, ops are evaluated in program order:
//!
//! * The op-model query is built from the IR as written: the tensor operands with their
//!   declared shapes and layouts (an operand without a layout is taken as DRAM-interleaved
//!   tile, and an info diagnostic says so), `OutputHint::Layout(result layout)` (a partial
//!   layout, `ignorePhysicalLayout = true`, becomes `OutputHint::Partial`; no layout,
//!   `OutputHint::Null`), the op-specific config from its properties (`conv2d_config`,
//!   `conv2d_slice_config`, `matmul_program_config`, `compute_config`), and `l1_in_use` = the
//!   live L1 before the op. A DRAM-sliced conv is evaluated like any other op: the op model
//!   takes its slice config and answers for its largest slice.
//! * **Live L1.** An L1 tensor value occupies its layout's per-core bytes
//!   ([`TtnnLayout::l1_bytes_per_core`]) from the op that produces it until its last use in
//!   program order. A value used by `return` lives to the end of the function;
//!   `ttnn.deallocate` is a use and so ends a value's life. Function arguments in L1 are live
//!   from the start and, because the caller owns them, to the end of the function unless the
//!   function deallocates them. A result the op model computes without allocating anything
//!   (a view: tensor peak 0) shares its L1 operand 0's buffer, so the bytes count once and the
//!   buffer lives as long as either value does.
//! * **The rule.** The op model's `tensor_peak` counts what the op allocates (its output and
//!   temporaries) but not its pre-existing inputs (calibration: a unary L1→L1 op reports the
//!   output alone). So `l1_in_use` is the *whole* live L1 before the op, its own L1 inputs
//!   included, and an op fits iff
//!   `live_l1_before + peak (cb + tensor, incl. the output) + extra results <= usable L1`,
//!   where extra results are the L1 bytes of results after the first, which the single-output
//!   query does not see. Counting the inputs once more than an input-counting model would
//!   is the safe side: it can only reject more.
//!
//! A violation is one of: the op model rejects the op as written (`op-model-rejects`); it does
//! not fit in L1 next to the live tensors (`l1-out-of-memory`); its declared result layout
//! differs from the one the op model produces (`layout-mismatch`); the op model does not know
//! the op and it touches L1 (`unknown-op`); an operand's declared type differs from its
//! producer's (lowering's `type-mismatch`); or a deallocated value is used again
//! (`use-after-deallocate`). See `docs/verify.md`.

mod attrs;
mod eval;
mod render;

use syntax::TextRange;
use target::Target;
use ttnn_types::TtnnLayout;

pub use crate::render::{render_summary, render_table, short_layout};
pub use ir::{Diagnostic, Severity};

/// The op model's L1 numbers for one op, bytes per core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L1Use {
    /// Circular buffers (program scratch).
    pub cb: u64,
    /// Tensors the op allocates while it runs, its output included.
    pub tensor: u64,
    /// The output's per-core footprint (0 in DRAM).
    pub output: u64,
    /// What the op itself needs at its peak (usually `cb + tensor`).
    pub peak: u64,
}

/// The verdict on one op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpReport {
    /// The function the op is in.
    pub func: String,
    /// The op's index in its function, in program order.
    pub op_index: usize,
    /// The op's name for people: its `loc("name")`, else its result names (`%0`), else the op
    /// name and an ordinal (`ttnn.deallocate#0`).
    pub op: String,
    /// The op name as written (`ttnn.matmul`).
    pub kind: String,
    /// The whole op in the input text.
    pub range: TextRange,
    /// The first result's layout as written, if that result is a tensor with a layout.
    pub result_layout: Option<TtnnLayout>,
    /// False iff the op has at least one violation.
    pub valid: bool,
    /// The violations, classified (`out of L1: ...`, `unsupported: ...`, `invalid: ...`,
    /// `unknown op ...`), joined with `; `.
    pub error: Option<String>,
    /// The op model's numbers, when the op model evaluated the op.
    pub l1: Option<L1Use>,
    /// L1 per core held by live tensors just before the op runs, its own L1 inputs included.
    pub live_l1_before: u64,
    /// L1 per core held by live tensors just after the op, its L1 results included if used.
    pub live_l1_after: u64,
    /// False when the op model does not know the op (it is then only assumed valid in DRAM).
    pub known_op: bool,
    /// The cost model's estimate of the op's device time in its layouts as written (its
    /// `total_ns`, what bounds it, its cores), when the op model evaluated the op.
    pub cost: Option<cost::OpCost>,
    /// The op's roofline (`cost::CostModel::roofline_ns`), alongside `cost`.
    pub roofline_ns: Option<u64>,
}

/// The verdict on a whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every op of every function, functions in file order, ops in program order.
    pub ops: Vec<OpReport>,
    /// Parse and lowering diagnostics, then the verifier's, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
    /// The most L1 per core in use at any point: live tensors plus the running op's own peak.
    pub peak_live_l1: u64,
    /// The usable L1 per core of the target.
    pub budget: u64,
    /// The number of violations (an op may have more than one).
    pub violations: usize,
}

impl Report {
    /// The ops that do not fit in L1.
    pub fn oom_points(&self) -> impl Iterator<Item = &OpReport> {
        self.ops.iter().filter(|op| op.error.as_deref().is_some_and(|e| e.contains("out of L1")))
    }

    /// True if there is a violation or an error diagnostic.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.violations > 0 || self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}

/// Parses, lowers and evaluates `text` against `model` on `target`. Never fails: problems
/// with the input are diagnostics in the report.
pub fn evaluate(text: &str, target: &Target, model: &dyn opmodel::OpModel) -> Report {
    let parse = syntax::parse(text);
    let lowered = ir::lower_parse(text, &parse);
    let mut report = Report {
        ops: Vec::new(),
        diagnostics: lowered.diagnostics.clone(),
        peak_live_l1: 0,
        budget: target.usable_l1_per_core(),
        violations: 0,
    };
    for func in &lowered.funcs {
        eval::func(target, model, func, &mut report);
    }
    report.diagnostics.sort_by(|a, b| {
        (a.range.start, a.range.end, a.code).cmp(&(b.range.start, b.range.end, b.code))
    });
    report
}

#[cfg(test)]
mod tests;
