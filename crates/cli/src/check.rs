//! `check` and `fmt`.

use std::{io::Write as _, process::ExitCode};

use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};
use ide::{AnalysisHost, Change, Diagnostic, Options, Severity};

use crate::{input, output, render};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Format {
    Human,
    Json,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// TTNN or TTIR `.mlir` files.
    #[arg(required = true)]
    files: Vec<Utf8PathBuf>,
    /// Output format: rustc-style snippets, or one JSON object per line.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

#[derive(Args)]
pub(crate) struct FmtArgs {
    /// The file to format; the result goes to stdout (the file is never modified).
    file: Utf8PathBuf,
}

/// Analyzes the inputs in one host, so files share the database as they would in the editor.
pub(crate) fn check(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let mut host = AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults());
    let mut inputs = Vec::new();
    for path in &args.files {
        let file = input::read(path)?;
        host.apply_change(Change::new().set_file(file.path.clone(), file.text.clone()));
        inputs.push(file);
    }
    let analysis = host.analysis();
    let (mut errors, mut warnings) = (0usize, 0usize);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for input in &inputs {
        let Some(file) = host.file(&input.path) else { continue };
        let mut diags: Vec<Diagnostic> = input.encoding_error.iter().cloned().collect();
        let found = analysis
            .diagnostics(file)
            .map_err(|_| anyhow::format_err!("analysis was cancelled"))?;
        // The replacement character an invalid byte became would be reported again as an
        // unexpected character; the encoding diagnostic already covers it.
        let replaced = input.encoding_error.as_ref().map(|d| d.range);
        diags.extend(found.into_iter().filter(|d| {
            !(d.code == "unexpected-character"
                && replaced.is_some()
                && input.text[d.range.start as usize..].starts_with('\u{FFFD}'))
        }));
        errors += diags.iter().filter(|d| d.severity == Severity::Error).count();
        warnings += diags.iter().filter(|d| d.severity == Severity::Warning).count();
        match args.format {
            Format::Human => render::human(&input.path, &input.text, &diags, &mut out),
            Format::Json => render::json(&input.path, &input.text, &diags, &mut out),
        }
        .map_err(output::stdout_error)?;
    }
    out.flush().map_err(output::stdout_error)?;
    if matches!(args.format, Format::Human) {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let _ = writeln!(
            std::io::stderr(),
            "checked {}: {}, {}",
            plural(inputs.len(), "file"),
            plural(errors, "error"),
            plural(warnings, "warning")
        );
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

pub(crate) fn fmt(args: &FmtArgs) -> anyhow::Result<ExitCode> {
    let input = input::read(&args.file)?;
    let mut host = AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults());
    host.apply_change(Change::new().set_file(input.path.clone(), input.text.clone()));
    let Some(file) = host.file(&input.path) else { return Ok(ExitCode::from(2)) };
    let analysis = host.analysis();
    let formatted =
        analysis.format(file).map_err(|_| anyhow::format_err!("analysis was cancelled"))?;
    match (formatted, &input.encoding_error) {
        (Some(text), None) => {
            output::write_stdout(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            // Formatting text that does not parse would drop what could not be parsed, so
            // report instead and print nothing.
            let mut diags: Vec<Diagnostic> = input.encoding_error.iter().cloned().collect();
            let found = analysis
                .diagnostics(file)
                .map_err(|_| anyhow::format_err!("analysis was cancelled"))?;
            diags.extend(found.into_iter().filter(|d| d.severity == Severity::Error));
            let _ = render::human(&input.path, &input.text, &diags, &mut std::io::stderr().lock());
            let _ = writeln!(
                std::io::stderr(),
                "not formatting `{}`: it has syntax errors",
                input.path
            );
            Ok(ExitCode::from(1))
        }
    }
}
