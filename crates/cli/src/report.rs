//! `report`: evaluates a TTNN file as written against the op model, op by op, with the live
//! L1 before each op (the engine is `crates/verify`; see `docs/cli/report.md`).
//! `report --compare` sets the IR as written next to every optimizer policy instead.

pub(crate) mod compare;
mod html;
mod svg;

use std::{io::Write as _, process::ExitCode};

use camino::Utf8PathBuf;
use clap::Args;
use ide::{Diagnostic, Severity};
use ttnn_types::TtnnLayout;

use crate::{check::Format, common, input, output, render};

#[derive(Args)]
pub(crate) struct ReportArgs {
    /// The TTNN `.mlir` file to evaluate.
    file: Utf8PathBuf,
    /// The device: a builtin name (n150, n300, p150) or a TOML or JSON target file.
    #[arg(long, default_value = "n150")]
    target: String,
    /// Output format: a table for people, or one JSON object per op per line (with
    /// `--compare`: per configuration).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Compare the IR as written with every optimizer policy, one row per configuration;
    /// a TTIR file is imported first, in memory.
    #[arg(long)]
    compare: bool,
    /// With `--compare`: also write a chart of live L1 per core over the schedule as SVG.
    #[arg(long, value_name = "OUT", requires = "compare")]
    svg: Option<Utf8PathBuf>,
    /// Write the plan explorer, one self-contained HTML page: the op graph coloured by where
    /// each result lives under each configuration, chains, reshards and spills, per-op time
    /// and L1, the live-L1 timeline and search by `loc` name. Implies `--compare`.
    #[arg(long, value_name = "OUT")]
    html: Option<Utf8PathBuf>,
    /// With `--compare`: leave out the optimize wall time, the one column that changes from
    /// run to run, so the output can be pinned by snapshots.
    #[arg(long, requires = "compare")]
    no_timing: bool,
    #[command(flatten)]
    pipeline: crate::import::PipelineArgs,
}

pub(crate) fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let mut inputs = vec![args.file.as_path()];
    inputs.extend(common::target_file(Some(&args.target)));
    for out in args.svg.iter().chain(&args.html) {
        output::ensure_not_an_input(out, &inputs)?;
    }
    if let (Some(svg), Some(html)) = (&args.svg, &args.html)
        && svg == html
    {
        anyhow::bail!("`--svg` and `--html` name the same file `{svg}`");
    }
    let target = common::load_target(Some(&args.target))?;
    if args.compare || args.html.is_some() {
        return compare_report(args, &target);
    }
    let input = input::read(&args.file)?;
    let report = verify::evaluate(&input.text, &target, &opmodel::AnalyticalModel);
    let mut diags: Vec<Diagnostic> = input.encoding_error.iter().cloned().collect();
    diags.extend(report.diagnostics.iter().map(|d| Diagnostic {
        range: d.range,
        severity: d.severity,
        code: d.code,
        message: d.message.clone(),
    }));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut err = std::io::stderr().lock();

    // A table over half-parsed text would be misleading: show the syntax errors alone.
    if input.encoding_error.is_some() || !syntax::parse(&input.text).errors.is_empty() {
        render::human(&input.path, &input.text, &diags, &mut out)
            .and_then(|()| out.flush())
            .map_err(output::stdout_error)?;
        let _ = writeln!(err, "not reporting on `{}`: it has syntax errors", input.path);
        return Ok(ExitCode::from(1));
    }

    let written = match args.format {
        Format::Human => write!(out, "{}", verify::render_table(&report))
            .and_then(|()| writeln!(out))
            .and_then(|()| write!(out, "{}", verify::render_summary(&report)))
            .and_then(|()| {
                if diags.is_empty() {
                    return Ok(());
                }
                writeln!(out)?;
                render::human(&input.path, &input.text, &diags, &mut out)
            }),
        Format::Json => {
            // stdout carries only op objects; diagnostics go to stderr, as JSON too.
            let _ = render::json(&input.path, &input.text, &diags, &mut err);
            report.ops.iter().try_for_each(|op| writeln!(out, "{}", op_json(op)))
        }
    };
    written.and_then(|()| out.flush()).map_err(output::stdout_error)?;
    let errors = diags.iter().any(|d| d.severity == Severity::Error);
    Ok(if report.has_errors() || errors { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `report --compare`: imports TTIR if needed, refuses input with errors (the optimizer
/// would drop what it cannot read), then prints one row per configuration.
fn compare_report(args: &ReportArgs, target: &target::Target) -> anyhow::Result<ExitCode> {
    let input = input::read(&args.file)?;
    let mut err = std::io::stderr().lock();
    if let Some(d) = &input.encoding_error {
        let _ = render::human(&input.path, &input.text, std::slice::from_ref(d), &mut err);
        let _ = writeln!(err, "not comparing `{}`: it is not valid UTF-8", input.path);
        return Ok(ExitCode::from(1));
    }
    let imported = import::is_ttir(&input.text);
    let text = if imported {
        let result = crate::import::import_text(&input.text, &args.file, &args.pipeline);
        let diags = crate::import::to_ide_diagnostics(&result.diagnostics);
        let _ = render::human(&input.path, &input.text, &diags, &mut err);
        if result.has_errors() {
            let _ = writeln!(err, "not comparing `{}`: the import has errors", input.path);
            return Ok(ExitCode::from(1));
        }
        result.ttnn
    } else {
        input.text.clone()
    };
    let parse = syntax::parse(&text);
    let errors: Vec<Diagnostic> = ir::lower_parse(&text, &parse)
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| Diagnostic {
            range: d.range,
            severity: d.severity,
            code: d.code,
            message: d.message,
        })
        .collect();
    if !errors.is_empty() {
        // Imported text is reported against itself: its ranges are not the input's.
        let label =
            if imported { format!("{} (imported)", input.path) } else { input.path.clone() };
        let _ = render::human(&label, &text, &errors, &mut err);
        let _ = writeln!(err, "not comparing `{}`: it has errors", input.path);
        return Ok(ExitCode::from(1));
    }

    let model = args.file.file_stem().unwrap_or(args.file.as_str());
    let comparison = compare::compare(model, &input.path, &text, target, imported)?;
    let timing = !args.no_timing;
    let mut table = String::new();
    match args.format {
        Format::Human => table = compare::render_human(&comparison, timing),
        Format::Json => {
            for row in compare::render_json(&comparison, timing) {
                table.push_str(&format!("{row}\n"));
            }
        }
    }
    output::write_stdout(table.as_bytes())?;
    if let Some(path) = &args.svg {
        output::write_file(path, svg::render(&comparison).as_bytes())?;
    }
    if let Some(path) = &args.html {
        output::write_file(path, html::render(&comparison, &text).as_bytes())?;
    }
    let introduced = comparison.rows.iter().any(|r| !r.new_violations.is_empty());
    Ok(if introduced { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// One op as a JSON object, keys in the documented order.
fn op_json(op: &verify::OpReport) -> serde_json::Value {
    let layout = |l: &TtnnLayout| {
        let grid = l.grid2d();
        serde_json::json!({
            "buffer": l.buffer.keyword(),
            "memory_layout": l.memory_layout.map(|m| m.keyword()),
            "grid": [grid.rows, grid.cols],
            "shard_shape": l.memref_shape.as_slice(),
        })
    };
    serde_json::json!({
        "op": op.op,
        "kind": op.kind,
        "result_layout": op.result_layout.as_ref().map(layout),
        "valid": op.valid,
        "error": op.error,
        "l1": op.l1.map(|l| serde_json::json!({"cb": l.cb, "tensor": l.tensor, "output": l.output})),
        "live_l1_before": op.live_l1_before,
        "time_ns": op.cost.map(|c| c.total_ns),
        "bound": op.cost.map(|c| c.bound.keyword()),
    })
}
