//! `report --compare`: the IR as written next to every optimizer policy, one row each, with
//! the cost model's time, the planner's counts and the verifier's verdict on the output.
//!
//! The verifier re-reads each optimized text on its own (see `docs/verify.md`), so a row's
//! violations are what an independent check finds in the rewrite, not what the planner
//! believes. Only violations the rewrite introduced are blamed on a policy: the input is
//! evaluated too, and an op that was already invalid as written, with the same error, is
//! counted as pre-existing.

use std::{collections::BTreeMap, fmt::Write as _, time::Instant};

use ide::{AnalysisHost, Change, Options, PlanReport, Policy};
use ttnn_types::BufferType;

/// The baseline's configuration name.
pub(crate) const AS_WRITTEN: &str = "as-written";

/// One file compared under every configuration.
pub(crate) struct Comparison {
    /// The file stem, which titles the table and the chart.
    pub(crate) model: String,
    /// True when the input was TTIR and was imported in memory first.
    pub(crate) imported: bool,
    pub(crate) target: String,
    pub(crate) budget: u64,
    pub(crate) lower_bound_ns: u64,
    /// Device time of the const-eval functions, run once at load; every row's time is per
    /// inference and leaves it out.
    pub(crate) load_ns: u64,
    /// The baseline first, then `Policy::ALL` in order.
    pub(crate) rows: Vec<Row>,
}

/// One configuration.
pub(crate) struct Row {
    pub(crate) name: &'static str,
    /// The cost model's estimate: the IR as written for the baseline, the plan for a policy.
    pub(crate) time_ns: u64,
    /// Ops of the optimizable functions, and those whose result is (planned) in L1.
    pub(crate) ops: usize,
    pub(crate) ops_in_l1: usize,
    pub(crate) reshards: usize,
    pub(crate) spills: usize,
    /// The verifier on this configuration's text.
    pub(crate) verified: verify::Report,
    /// Invalid ops of the output that were valid (or absent) in the input, in program order.
    pub(crate) new_violations: Vec<Violation>,
    /// Invalid ops of the output whose op was already invalid as written.
    pub(crate) preexisting: usize,
    /// Wall time of `final_ir_for` plus `plan_report` on a fresh host; `None` for the
    /// baseline, which is not optimized.
    pub(crate) optimize_ms: Option<f64>,
    /// The plan's per-op decisions (for the baseline: the first policy's, whose `written`
    /// layouts are the IR as written).
    pub(crate) plan: PlanReport,
}

/// An op of an optimized text that the verifier rejects, and that was valid as written or
/// invalid for another reason.
pub(crate) struct Violation {
    pub(crate) func: String,
    pub(crate) op_index: usize,
    pub(crate) op: String,
    pub(crate) kind: String,
    pub(crate) error: String,
    /// The op's error as written, when it already had a different one.
    pub(crate) as_written: Option<String>,
}

/// Compares `text` (TTNN, already checked for errors) under every configuration.
///
/// Each policy gets a fresh `AnalysisHost`, so its optimize time is a from-scratch time
/// (parse, lower, legal layouts, solve, rewrite) and not a cache hit from the previous policy.
pub(crate) fn compare(
    model: &str,
    path: &str,
    text: &str,
    target: &target::Target,
    imported: bool,
) -> anyhow::Result<Comparison> {
    let cancelled = |_| anyhow::format_err!("analysis was cancelled");
    let op_model = opmodel::AnalyticalModel;
    let input_report = verify::evaluate(text, target, &op_model);
    let invalid_in_input: BTreeMap<(&str, &str), &str> = input_report
        .ops
        .iter()
        .filter(|op| !op.valid)
        .map(|op| ((op.func.as_str(), op.op.as_str()), op.error.as_deref().unwrap_or("")))
        .collect();

    let mut rows = Vec::new();
    let mut baseline: Option<(u64, PlanReport)> = None;
    let mut lower_bound_ns = 0;
    let mut load_ns = 0;
    for policy in Policy::ALL {
        let mut host =
            AnalysisHost::new(target.clone(), Options { policy, ..Options::tt_mlir_defaults() });
        host.apply_change(Change::new().set_file(path.to_owned(), text.to_owned()));
        let file = host.file(path).ok_or_else(|| anyhow::format_err!("file was not loaded"))?;
        let analysis = host.analysis();

        let start = Instant::now();
        let final_ir = analysis.final_ir_for(file, policy).map_err(cancelled)?;
        let plan = analysis.plan_report(file).map_err(cancelled)?;
        let optimize_ms = start.elapsed().as_secs_f64() * 1e3;

        let cost = analysis.cost(file, policy).map_err(cancelled)?;
        lower_bound_ns = cost.lower_bound_ns;
        load_ns = cost.load_ns;
        let verified = verify::evaluate(&final_ir.text, target, &op_model);
        let (new_violations, preexisting) = blame(&verified, &invalid_in_input);
        rows.push(Row {
            name: policy.name(),
            time_ns: cost.total_ns,
            ops: plan.ops.len(),
            ops_in_l1: plan.ops_in_l1,
            reshards: plan.reshards,
            spills: plan.spills,
            verified,
            new_violations,
            preexisting,
            optimize_ms: Some(optimize_ms),
            plan: plan.clone(),
        });
        // The IR as written is the same under every policy; its cost and layouts are read
        // from the first host.
        if baseline.is_none() {
            baseline = Some((cost.written_ns, plan));
        }
    }
    let (written_ns, plan) = baseline.unwrap_or_default();
    let preexisting = input_report.ops.iter().filter(|op| !op.valid).count();
    rows.insert(
        0,
        Row {
            name: AS_WRITTEN,
            time_ns: written_ns,
            ops: plan.ops.len(),
            ops_in_l1: plan
                .ops
                .iter()
                .filter(|d| d.written.as_ref().is_some_and(|l| l.buffer == BufferType::L1))
                .count(),
            reshards: 0,
            spills: 0,
            verified: input_report,
            new_violations: Vec::new(),
            preexisting,
            optimize_ms: None,
            plan,
        },
    );
    Ok(Comparison {
        model: model.to_owned(),
        imported,
        target: target.name().to_owned(),
        budget: target.usable_l1_per_core(),
        lower_bound_ns,
        load_ns,
        rows,
    })
}

/// Splits an output's invalid ops into new ones and pre-existing ones. Ops are matched by
/// function and op name (the `loc` name): the rewrite keeps names, and conversions it inserts
/// get names of their own, which the input never has, so their violations are always new.
///
/// An op invalid on both sides is pre-existing only when its error text is the same: a rewrite
/// that swaps one violation for another (an op the op model could not split as written, given
/// shardings it rejects) has introduced the second one, and matching by name alone would hide
/// it.
fn blame(
    output: &verify::Report,
    invalid_in_input: &BTreeMap<(&str, &str), &str>,
) -> (Vec<Violation>, usize) {
    let mut new = Vec::new();
    let mut preexisting = 0;
    for op in output.ops.iter().filter(|op| !op.valid) {
        let error = op.error.as_deref().unwrap_or("");
        let before = invalid_in_input.get(&(op.func.as_str(), op.op.as_str())).copied();
        if before == Some(error) {
            preexisting += 1;
        } else {
            new.push(Violation {
                func: op.func.clone(),
                op_index: op.op_index,
                op: op.op.clone(),
                kind: op.kind.clone(),
                error: if error.is_empty() { "invalid".to_owned() } else { error.to_owned() },
                as_written: before.map(str::to_owned),
            });
        }
    }
    (new, preexisting)
}

/// `123.4`: microseconds with one decimal, from integer nanoseconds (no float rounding drift).
fn micros(ns: u64) -> String {
    let tenths = (ns + 50) / 100;
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// `3.21x`: the ratio to the lower bound, or `-` without a bound.
fn ratio(ns: u64, bound: u64) -> String {
    if bound == 0 {
        return "-".to_owned();
    }
    // Hundredths, rounded half up, in integers.
    let h = (u128::from(ns) * 100 + u128::from(bound) / 2) / u128::from(bound);
    format!("{}.{:02}x", h / 100, h % 100)
}

/// `51.9%` of the budget, to one decimal.
pub(crate) fn percent(bytes: u64, budget: u64) -> String {
    if budget == 0 {
        return "-".to_owned();
    }
    let tenths = (u128::from(bytes) * 1000 + u128::from(budget) / 2) / u128::from(budget);
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// The human table. `timing: false` leaves out the wall-time column, which is the only part
/// that changes from run to run, so snapshots can pin the rest.
pub(crate) fn render_human(c: &Comparison, timing: bool) -> String {
    let mut out = String::new();
    let ops = c.rows.first().map_or(0, |r| r.ops);
    let _ = writeln!(
        out,
        "{}: {ops} ops{}, target {}, usable L1 {} B per core",
        c.model,
        if c.imported { " (imported from TTIR)" } else { "" },
        c.target,
        c.budget
    );
    let _ = writeln!(out, "lower bound: {} µs", micros(c.lower_bound_ns));
    let _ = writeln!(
        out,
        "estimated device time per inference; const-eval at load (once): {} µs",
        micros(c.load_ns)
    );
    let _ = writeln!(out);

    let mut header = vec![
        "configuration",
        "time µs",
        "x bound",
        "ops in L1",
        "reshards",
        "spills",
        "peak L1 B/core",
        "of budget",
        "new violations",
        "pre-existing",
    ];
    if timing {
        header.push("optimize ms");
    }
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.name.to_owned(),
                micros(r.time_ns),
                ratio(r.time_ns, c.lower_bound_ns),
                format!("{}/{}", r.ops_in_l1, r.ops),
                r.reshards.to_string(),
                r.spills.to_string(),
                r.verified.peak_live_l1.to_string(),
                percent(r.verified.peak_live_l1, r.verified.budget),
                r.new_violations.len().to_string(),
                r.preexisting.to_string(),
            ];
            if timing {
                cells.push(r.optimize_ms.map_or("-".to_owned(), |ms| format!("{ms:.1}")));
            }
            cells
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // The first column is a name; the rest are numbers, right-aligned so magnitudes line up.
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            if i == 0 {
                l.push_str(cell);
                l.push_str(&pad);
            } else {
                l.push_str("  ");
                l.push_str(&pad);
                l.push_str(cell);
            }
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(&header);
    for r in &rows {
        line(&r.iter().map(String::as_str).collect::<Vec<_>>());
    }

    for r in &c.rows {
        if r.new_violations.is_empty() {
            continue;
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "new violations under {}:", r.name);
        for v in &r.new_violations {
            let _ = writeln!(
                out,
                "  @{} op {} `{}` ({}): {}",
                v.func, v.op_index, v.op, v.kind, v.error
            );
            if let Some(before) = &v.as_written {
                let _ = writeln!(out, "    as written it had another violation: {before}");
            }
        }
    }
    out
}

/// One JSON object per configuration, keys in the documented order.
pub(crate) fn render_json(c: &Comparison, timing: bool) -> Vec<serde_json::Value> {
    c.rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "model": c.model,
                "configuration": r.name,
                "time_ns": r.time_ns,
                "lower_bound_ns": c.lower_bound_ns,
                "load_ns": c.load_ns,
                "ops": r.ops,
                "ops_in_l1": r.ops_in_l1,
                "reshards": r.reshards,
                "spills": r.spills,
                "peak_l1": r.verified.peak_live_l1,
                "budget": r.verified.budget,
                "new_violations": r.new_violations.iter().map(|v| serde_json::json!({
                    "func": v.func, "op_index": v.op_index, "op": v.op, "kind": v.kind, "error": v.error, "as_written": v.as_written,
                })).collect::<Vec<_>>(),
                "preexisting_violations": r.preexisting,
                "optimize_ms": if timing { r.optimize_ms } else { None },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_rounded_in_integers() {
        assert_eq!(micros(0), "0.0");
        assert_eq!(micros(49), "0.0");
        assert_eq!(micros(50), "0.1");
        assert_eq!(micros(123_456), "123.5");
        assert_eq!(ratio(300, 100), "3.00x");
        assert_eq!(ratio(1, 3), "0.33x");
        assert_eq!(ratio(2, 3), "0.67x");
        assert_eq!(ratio(5, 0), "-");
        assert_eq!(percent(688_128, 1_325_652), "51.9%");
        assert_eq!(percent(1, 0), "-");
    }

    #[test]
    fn only_violations_the_rewrite_introduced_or_changed_are_new() {
        let op = |name: &str, error: Option<&str>| verify::OpReport {
            func: "main".to_owned(),
            op_index: 0,
            op: name.to_owned(),
            kind: "ttnn.conv2d".to_owned(),
            range: syntax::TextRange::new(0, 0),
            result_layout: None,
            valid: error.is_none(),
            error: error.map(str::to_owned),
            l1: None,
            live_l1_before: 0,
            live_l1_after: 0,
            known_op: true,
            cost: None,
            roofline_ns: None,
        };
        let report = |ops: Vec<verify::OpReport>| verify::Report {
            violations: ops.iter().filter(|o| !o.valid).count(),
            ops,
            diagnostics: Vec::new(),
            peak_live_l1: 0,
            budget: 0,
        };
        let input = report(vec![
            op("same", Some("invalid: a")),
            op("changed", Some("invalid: a")),
            op("fixed", Some("invalid: a")),
            op("broken", None),
        ]);
        let output = report(vec![
            op("same", Some("invalid: a")),
            op("changed", Some("unsupported: b")),
            op("fixed", None),
            op("broken", Some("out of L1: c")),
            op("x_spill", Some("out of L1: d")),
        ]);
        let invalid_in_input = input
            .ops
            .iter()
            .filter(|o| !o.valid)
            .map(|o| ((o.func.as_str(), o.op.as_str()), o.error.as_deref().unwrap_or("")))
            .collect();
        let (new, preexisting) = blame(&output, &invalid_in_input);
        let new: Vec<(&str, &str, Option<&str>)> = new
            .iter()
            .map(|v| (v.op.as_str(), v.error.as_str(), v.as_written.as_deref()))
            .collect();
        assert_eq!(
            new,
            [
                ("changed", "unsupported: b", Some("invalid: a")),
                ("broken", "out of L1: c", None),
                ("x_spill", "out of L1: d", None),
            ]
        );
        assert_eq!(preexisting, 1);
    }
}
