//! `optimize`: run a memory-layout policy and print the rewritten IR.

use std::{io::Write as _, process::ExitCode};

use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};
use ide::{AnalysisHost, Change, Diagnostic, Options, PlanReport, Policy, Severity};

pub(crate) use cli::short_layout;

use crate::{common, input, output, render};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ReportFormat {
    Human,
    Json,
}

#[derive(Args)]
pub(crate) struct OptimizeArgs {
    /// The TTNN file to optimize; it is never modified.
    file: Utf8PathBuf,
    /// `df-sharding` (chains, no merging), `df-sharding-merge` (with chain merging) or
    /// `greedy` (tt-mlir HEAD's beam search and spill management).
    #[arg(long, default_value = "df-sharding-merge")]
    policy: String,
    /// A builtin target (n150, n300, p150) or a target description file (TOML or JSON).
    #[arg(long)]
    target: Option<String>,
    #[command(flatten)]
    overrides: common::OverrideArgs,
    #[command(flatten)]
    pipeline: crate::import::PipelineArgs,
    /// Write the optimized IR here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<Utf8PathBuf>,
    /// Print the per-op decisions (to stdout with `-o`, else to stderr).
    #[arg(long, value_enum)]
    report: Option<ReportFormat>,
}

pub(crate) fn optimize(args: &OptimizeArgs) -> anyhow::Result<ExitCode> {
    let policy = Policy::from_name(&args.policy).ok_or_else(|| {
        anyhow::format_err!(
            "unknown policy `{}`: expected `df-sharding`, `df-sharding-merge` or `greedy`",
            args.policy
        )
    })?;
    if let Some(out) = &args.output {
        let mut inputs = vec![args.file.as_path()];
        inputs.extend(args.overrides.overrides.as_deref());
        inputs.extend(common::target_file(args.target.as_deref()));
        output::ensure_not_an_input(out, &inputs)?;
    }
    let target = common::load_target(args.target.as_deref())?;
    let (origin, overrides) = args.overrides.text()?;
    let mut input = input::read(&args.file)?;
    // TTIR (the dialect tt-mlir lowers to TTNN before its optimizer) is imported in memory
    // first, as `report --compare` does: optimizing it as is would find nothing to place.
    if input.encoding_error.is_none() && import::is_ttir(&input.text) {
        let result = crate::import::import_text(&input.text, &args.file, &args.pipeline);
        let mut stderr = std::io::stderr().lock();
        let diags = crate::import::to_ide_diagnostics(&result.diagnostics);
        let _ = render::human(&input.path, &input.text, &diags, &mut stderr);
        if result.has_errors() {
            let _ = writeln!(stderr, "not optimizing `{}`: the TTIR import has errors", input.path);
            return Ok(ExitCode::from(1));
        }
        let _ = writeln!(
            stderr,
            "note: `{}` is TTIR; imported it to TTNN first ({} ops), as `ttnn-analyzer import` does",
            input.path, result.stats.ops_out
        );
        input.text = result.ttnn;
    }
    let options = Options { policy, ..Options::tt_mlir_defaults() };
    let mut host = AnalysisHost::new(target, options);
    host.apply_change(
        Change::new()
            .set_file(input.path.clone(), input.text.clone())
            .set_overrides(origin.clone(), overrides.clone()),
    );
    let file = host.file(&input.path).ok_or_else(|| anyhow::format_err!("file was not loaded"))?;
    let analysis = host.analysis();
    let cancelled = |_| anyhow::format_err!("analysis was cancelled");
    let mut stderr = std::io::stderr().lock();
    // Refuse to optimize broken input: the rewrite would silently drop what did not parse.
    let mut diags: Vec<Diagnostic> = input.encoding_error.iter().cloned().collect();
    diags.extend(
        analysis
            .diagnostics(file)
            .map_err(cancelled)?
            .into_iter()
            .filter(|d| d.severity == Severity::Error),
    );
    if !diags.is_empty() {
        let _ = render::human(&input.path, &input.text, &diags, &mut stderr);
        let _ = writeln!(stderr, "not optimizing `{}`: it has errors", input.path);
        return Ok(ExitCode::from(1));
    }
    // Syntax errors, entries naming no op of this file, layouts the op model rejects: an
    // override that silently applies to nothing is what tt-mlir users cannot see today.
    let override_diags: Vec<Diagnostic> = analysis
        .override_diagnostics(&[file])
        .map_err(cancelled)?
        .on_overrides
        .into_iter()
        .filter(|d| matches!(d.severity, Severity::Error | Severity::Warning))
        .collect();
    if !override_diags.is_empty() {
        let _ = render::human(&origin, &overrides, &override_diags, &mut stderr);
        if override_diags.iter().any(|d| d.severity == Severity::Error) {
            let _ = writeln!(stderr, "not optimizing: the overrides have errors");
            return Ok(ExitCode::from(1));
        }
    }
    let report = analysis.plan_report(file).map_err(cancelled)?;
    let unplannable = unplannable_ops(&report);
    if !unplannable.is_empty() {
        let _ = writeln!(
            stderr,
            "warning: `{}` has ops the optimizer cannot plan (left as written): {}",
            input.path,
            unplannable.join(", ")
        );
    }
    let final_ir = analysis.final_ir(file).map_err(cancelled)?;
    match &args.output {
        Some(path) => output::write_file(path, final_ir.text.as_bytes())?,
        None => output::write_stdout(final_ir.text.as_bytes())?,
    }
    let to_stdout = args.output.is_some();
    let mut report_out: Box<dyn std::io::Write> = if to_stdout {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::io::stderr().lock())
    };
    let written = match args.report {
        // JSON lines only: the summary is the last record, so every line parses.
        Some(ReportFormat::Json) => json_report(&report, final_ir.conversions, &mut report_out),
        Some(ReportFormat::Human) => human_report(&report, &mut report_out)
            .and_then(|()| writeln!(report_out, "{}", summary(&report, final_ir.conversions))),
        None => writeln!(report_out, "{}", summary(&report, final_ir.conversions)),
    }
    .and_then(|()| report_out.flush());
    // The report on stdout is output like the IR; on stderr it is a log, and a failure to
    // log has nowhere to be reported.
    if to_stdout {
        written.map_err(output::stdout_error)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The ops of the planned functions that are not TTNN ops (a `ttir.` op left in a TTNN file,
/// say), as `kind` at `op`, at most ten, then how many more: the optimizer keeps them as
/// written, and a plan that silently skipped them reads like a plan that placed them.
pub(crate) fn unplannable_ops(r: &PlanReport) -> Vec<String> {
    let foreign: Vec<String> = r
        .ops
        .iter()
        .filter(|d| {
            d.kind != "call" && !["ttnn.", "ttcore.", "func."].iter().any(|p| d.kind.starts_with(p))
        })
        .map(|d| format!("`{}` at `{}`", d.kind, d.op))
        .collect();
    let mut shown: Vec<String> = foreign.iter().take(10).cloned().collect();
    if foreign.len() > shown.len() {
        shown.push(format!("and {} more", foreign.len() - shown.len()));
    }
    shown
}

/// One line: what the policy did.
pub(crate) fn summary(r: &PlanReport, conversions: usize) -> String {
    let chains: Vec<String> = r.chains_by_state().iter().map(|(s, n)| format!("{n} {s}")).collect();
    format!(
        "{}: {} ops, {} in L1; chains: {}; {} reshards, {} spills, {} merges; {} conversions inserted",
        if r.policy.is_empty() { "no optimizable function" } else { &r.policy },
        r.ops.len(),
        r.ops_in_l1,
        if chains.is_empty() { "none".to_owned() } else { chains.join(", ") },
        r.reshards,
        r.spills,
        r.merges.len(),
        conversions
    )
}

fn human_report(r: &PlanReport, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<28} {:<22} {:<12} {:<12} {:<20} {:>10} {:>9} reason",
        "op", "kind", "written", "planned", "chain", "device µs", "bound µs"
    )?;
    for d in &r.ops {
        let chain = d.chain.map_or("-".to_owned(), |(c, p, n, s)| format!("#{c} {p}/{n} {s}"));
        writeln!(
            out,
            "{:<28} {:<22} {:<12} {:<12} {:<20} {:>10.1} {:>9.1} {}",
            d.op,
            d.kind,
            short_layout(d.written.as_ref()),
            short_layout(d.planned.as_ref()),
            chain,
            d.time_ns as f64 / 1e3,
            d.bound_ns as f64 / 1e3,
            d.reason
        )?;
        for (k, l, why) in &d.reshards {
            writeln!(out, "    operand {k}: reshard to {} ({why})", l.describe())?;
        }
        if let Some((l, why)) = &d.spill {
            writeln!(out, "    result: {} ({why})", l.describe())?;
        }
    }
    for c in &r.chains {
        if let Some(f) = &c.failure {
            writeln!(out, "chain #{} [{}] {}: {f}", c.index, c.ops.join(", "), c.state)?;
        }
    }
    for m in &r.merges {
        writeln!(out, "merge: {m}")?;
    }
    for (f, why) in &r.skipped {
        writeln!(out, "@{f} left as written: {why}")?;
    }
    Ok(())
}

/// One JSON object per line, each with a `record` field: `op` per op, `chain` per chain,
/// `merge` per merge, `skipped` per function left alone, and a final `summary`.
fn json_report(
    r: &PlanReport,
    conversions: usize,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let layout = |l: Option<&ttnn_types::TtnnLayout>| match l {
        None => serde_json::Value::Null,
        Some(l) => serde_json::json!({
            "buffer": l.buffer.keyword(),
            "memory_layout": l.memory_layout.map(|m| m.keyword()),
            "grid": [l.grid2d().rows, l.grid2d().cols],
            "shard_shape": l.memref_shape.as_slice(),
        }),
    };
    for d in &r.ops {
        let v = serde_json::json!({
            "record": "op",
            "func": d.func,
            "op": d.op,
            "kind": d.kind,
            "written_layout": layout(d.written.as_ref()),
            "planned_layout": layout(d.planned.as_ref()),
            "config": d.config,
            "chain": d.chain.map(|(c, p, n, s)| serde_json::json!({"id": c, "position": p, "length": n, "state": s})),
            "reason": d.reason,
            "reshards": d.reshards.iter().map(|(k, l, why)| serde_json::json!({"operand": k, "layout": layout(Some(l)), "reason": why})).collect::<Vec<_>>(),
            "spill": d.spill.as_ref().map(|(l, why)| serde_json::json!({"layout": layout(Some(l)), "reason": why})),
            "time_ns": d.time_ns,
            "bound_ns": d.bound_ns,
        });
        writeln!(out, "{v}")?;
    }
    for c in &r.chains {
        let v = serde_json::json!({
            "record": "chain",
            "func": c.func,
            "id": c.index,
            "ops": c.ops,
            "state": c.state,
            "concat": c.concat,
            "failure": c.failure,
            "spill": c.spill,
            "spill_reason": c.spill_reason,
        });
        writeln!(out, "{v}")?;
    }
    for m in &r.merges {
        writeln!(out, "{}", serde_json::json!({ "record": "merge", "description": m }))?;
    }
    for (func, reason) in &r.skipped {
        let v = serde_json::json!({ "record": "skipped", "func": func, "reason": reason });
        writeln!(out, "{v}")?;
    }
    let chains: serde_json::Map<String, serde_json::Value> =
        r.chains_by_state().into_iter().map(|(s, n)| (s.to_owned(), n.into())).collect();
    let v = serde_json::json!({
        "record": "summary",
        "policy": r.policy,
        "ops": r.ops.len(),
        "ops_in_l1": r.ops_in_l1,
        "chains": chains,
        "reshards": r.reshards,
        "spills": r.spills,
        "merges": r.merges.len(),
        "conversions": conversions,
    });
    writeln!(out, "{v}")
}
