//! A tuning loop over the `ide` API, step by step: open a graph once, then set, change and
//! clear overrides on one op, re-optimizing after each step and reading the estimated cost,
//! the op's planned layout and the diagnostics.
//!
//! After every step it prints how many salsa queries *executed* (not merely re-validated),
//! grouped by query name, to show that each step re-derives only what the change affects:
//! opening runs every query once, an override change re-runs one op's layout queries, its
//! chain and the per-function plan, and asking again without a change runs nothing.
//!
//! ```text
//! cargo run -p ide --example tune_loop -- test-data/samples/ffn.mlir [OP]
//! ```
//!
//! `OP` is an op's `loc("name")`; by default the first op with a sharded legal layout.

#![expect(clippy::disallowed_methods, reason = "an example program: it reads the file it is given")]

use std::{collections::BTreeMap, io::Write as _, process::ExitCode, time::Instant};

use ide::{AnalysisHost, Change, HostConfig, HostMode, Options, OverrideOption, Policy, Severity};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        let _ = writeln!(std::io::stderr(), "usage: tune_loop FILE [OP]");
        return ExitCode::from(2);
    };
    let op_arg = args.next();
    match run(&path, op_arg.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(path: &str, op_arg: Option<&str>) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let out = &mut std::io::stdout().lock();
    let policy = Policy::DfShardingMerge;

    // 1. Open the graph once. Everything later is an edit of the same database.
    // A tuning host (the graph does not change), with an execution log to print.
    let config = HostConfig { mode: HostMode::Tuning, query_log: true };
    let mut host =
        AnalysisHost::with_config(target::Target::n150(), Options::tt_mlir_defaults(), config);
    host.apply_change(Change::new().set_file(path, text).set_overrides("<tune_loop>", ""));
    let file = host.file(path).ok_or("the file was not loaded")?;
    let baseline = step(&host, out, "open + optimize (from scratch)", file, policy, None, None)?;

    // Pick the op to tune: the one named on the command line, else the first op whose
    // legal layouts include a sharded one.
    let analysis = host.analysis();
    let report = analysis.plan_report(file).map_err(cancelled)?;
    let op = match op_arg {
        Some(name) => name.to_owned(),
        None => report
            .ops
            .iter()
            .find(|d| {
                analysis
                    .op_layouts(file, &d.op)
                    .ok()
                    .flatten()
                    .is_some_and(|l| !l.fixed && l.layouts.iter().any(|l| l.is_sharded()))
            })
            .map(|d| d.op.clone())
            .ok_or("no op has a sharded legal layout")?,
    };
    let layouts = analysis.op_layouts(file, &op).map_err(cancelled)?;
    let layouts = layouts.ok_or_else(|| format!("no op named `{op}`"))?;
    let _ = writeln!(
        out,
        "\ntuning `{op}` ({}): {} legal layouts, {} (layout, config) candidates",
        layouts.kind,
        layouts.layouts.len(),
        layouts.configs.len()
    );
    drop(analysis);

    // 2. Pin the op to its smallest-grid sharded layout (a full override: exactly that).
    let smallest = layouts
        .layouts
        .iter()
        .filter(|l| l.is_sharded())
        .min_by_key(|l| l.grid2d().volume())
        .ok_or("the op has no sharded layout")?;
    let full = ide::full_layout_params(smallest).ok_or("the layout has no memory layout")?;
    host.set_override(&op, OverrideOption::OutputLayout, &full);
    step(&host, out, &format!("set {op}={full}"), file, policy, Some(&op), Some(baseline))?;

    // 3. Change it to a partial override: DRAM interleaved (the search picks the rest).
    host.set_override(&op, OverrideOption::OutputLayout, "dram:interleaved");
    let label = format!("change {op}=dram:interleaved");
    step(&host, out, &label, file, policy, Some(&op), Some(baseline))?;

    // 4. Clear it: the plan and the cost are the default ones again.
    host.clear_override(&op, None);
    let cleared =
        step(&host, out, &format!("clear {op}"), file, policy, Some(&op), Some(baseline))?;

    // 5. Ask again without any change: everything is re-validated, nothing executes.
    step(&host, out, "ask again, no change", file, policy, Some(&op), Some(baseline))?;

    let _ = writeln!(
        out,
        "\ncost after clearing equals the baseline: {}",
        if cleared == baseline { "yes" } else { "NO" }
    );
    let (_, overrides) = host.overrides_text();
    let _ = writeln!(out, "overrides text at the end: {:?}", overrides);
    Ok(())
}

/// Re-optimizes and reads everything a tuning loop looks at, then prints the step's numbers.
/// Returns the estimated total time.
fn step(
    host: &AnalysisHost,
    out: &mut impl std::io::Write,
    label: &str,
    file: base_db::SourceFile,
    policy: Policy,
    op: Option<&str>,
    baseline: Option<u64>,
) -> Result<u64, String> {
    let started = Instant::now();
    let analysis = host.analysis();
    let final_ir = analysis.final_ir_for(file, policy).map_err(cancelled)?;
    let cost = analysis.cost(file, policy).map_err(cancelled)?;
    let report = analysis.plan_report(file).map_err(cancelled)?;
    let diagnostics = analysis.diagnostics(file).map_err(cancelled)?;
    let findings = analysis.findings(file).map_err(cancelled)?;
    let overrides = analysis.override_diagnostics(&[file]).map_err(cancelled)?;
    let elapsed = started.elapsed();
    let executed = host.take_executed_queries();

    let _ = writeln!(out, "\n== {label}  ({:.2} ms)", elapsed.as_secs_f64() * 1e3);
    let delta = baseline.map_or(String::new(), |b| {
        format!(" ({:+.1}% vs. default plan)", (cost.total_ns as f64 / b as f64 - 1.0) * 100.0)
    });
    let _ = writeln!(
        out,
        "cost: {} ns{delta}  [ops {} + reshards {} + spills {}; as written {}, lower bound {}]",
        cost.total_ns,
        cost.op_ns,
        cost.reshard_ns,
        cost.spill_ns,
        cost.written_ns,
        cost.lower_bound_ns
    );
    let chains: Vec<String> =
        report.chains_by_state().iter().map(|(s, n)| format!("{n} {s}")).collect();
    let _ = writeln!(
        out,
        "plan: {} ops, {} in L1, chains {}, {} reshards, {} spills, {} conversions inserted",
        report.ops.len(),
        report.ops_in_l1,
        chains.join(", "),
        report.reshards,
        report.spills,
        final_ir.conversions
    );
    if let Some(op) = op
        && let Some(d) = report.ops.iter().find(|d| d.op == op)
    {
        let planned = d.planned.as_ref().map_or("-".to_owned(), |l| l.describe());
        let _ = writeln!(out, "{op}: {planned}; {}", d.reason);
    }
    let count =
        |ds: &[ide::Diagnostic], sev: Severity| ds.iter().filter(|d| d.severity == sev).count();
    let override_notes: Vec<String> = overrides
        .on_overrides
        .iter()
        .filter(|d| d.severity != Severity::Info)
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    let _ = writeln!(
        out,
        "diagnostics: {} errors in the file; findings: {} warnings, {} notes; overrides: {}",
        count(&diagnostics, Severity::Error),
        count(&findings, Severity::Warning),
        findings.len() - count(&findings, Severity::Warning),
        if override_notes.is_empty() { "ok".to_owned() } else { override_notes.join("; ") }
    );
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for q in &executed {
        *by_name.entry(q.split('(').next().unwrap_or(q)).or_default() += 1;
    }
    let list: Vec<String> = by_name.iter().map(|(n, c)| format!("{n} {c}")).collect();
    let _ = writeln!(
        out,
        "executed queries: {}{}{}",
        executed.len(),
        if list.is_empty() { "" } else { ": " },
        list.join(", ")
    );
    Ok(cost.total_ns)
}

fn cancelled(_: ide::Cancelled) -> String {
    "the analysis was cancelled".to_owned()
}
