//! `report`: evaluates a TTNN file as written against the op model, op by op, with the live
//! L1 before each op (the engine is `crates/verify`; see `docs/cli/report.md`).

use std::{io::Write as _, process::ExitCode};

use anyhow::Context as _;
use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;
use ide::{Diagnostic, Severity};
use ttnn_types::TtnnLayout;

use crate::{check::Format, input, render};

#[derive(Args)]
pub(crate) struct ReportArgs {
    /// The TTNN `.mlir` file to evaluate.
    file: Utf8PathBuf,
    /// The device: a builtin name (n150, n300, p150) or a TOML or JSON target file.
    #[arg(long, default_value = "n150")]
    target: String,
    /// Output format: a table for people, or one JSON object per op per line.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

pub(crate) fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let target = load_target(&args.target)?;
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
        render::human(&input.path, &input.text, &diags, &mut out);
        let _ = writeln!(err, "not reporting on `{}`: it has syntax errors", input.path);
        return Ok(ExitCode::from(1));
    }

    match args.format {
        Format::Human => {
            let _ = write!(out, "{}", verify::render_table(&report));
            let _ = writeln!(out);
            let _ = write!(out, "{}", verify::render_summary(&report));
            if !diags.is_empty() {
                let _ = writeln!(out);
                render::human(&input.path, &input.text, &diags, &mut out);
            }
        }
        Format::Json => {
            for op in &report.ops {
                let _ = writeln!(out, "{}", op_json(op));
            }
            // stdout carries only op objects; diagnostics go to stderr, as JSON too.
            render::json(&input.path, &input.text, &diags, &mut err);
        }
    }
    let errors = diags.iter().any(|d| d.severity == Severity::Error);
    Ok(if report.has_errors() || errors { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `--target`: a builtin device name, else a target file (`.json` is JSON, anything else
/// TOML). Errors name the file and, when known, the line and column.
fn load_target(arg: &str) -> anyhow::Result<target::Target> {
    if let Some(t) = target::Target::builtin(arg) {
        return Ok(t);
    }
    let path = Utf8Path::new(arg);
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "`{arg}` is neither a builtin target ({}) nor a readable target file",
            target::BUILTIN_NAMES.join(", ")
        )
    })?;
    let parsed = if path.extension() == Some("json") {
        target::Target::from_json_str(&text)
    } else {
        target::Target::from_toml_str(&text)
    };
    // `TargetError` displays as `line:col: ...` when it knows the position.
    parsed.map_err(|e| match e.line_col {
        Some(_) => anyhow::format_err!("{path}:{e}"),
        None => anyhow::format_err!("{path}: {e}"),
    })
}

/// One op as a JSON object, keys in the documented order.
fn op_json(op: &verify::OpReport) -> serde_json::Value {
    let layout = |l: &TtnnLayout| {
        let grid = l.grid2d();
        serde_json::json!({
            "buffer": l.buffer.keyword(),
            "memory_layout": l.memory_layout.map(|m| m.keyword()),
            "grid": [grid.rows, grid.cols],
            "shard_shape": l.memref_shape,
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
    })
}
