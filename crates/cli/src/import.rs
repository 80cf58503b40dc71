//! `import`: lowers a TTIR model file to TTNN with DRAM-interleaved layouts, the shape tt-mlir's
//! optimizer starts from (the engine is `crates/import`; see `docs/cli/import.md`).

use std::{io::Write as _, process::ExitCode};

use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;
use ide::{Diagnostic, Severity};

use crate::{input, output, render};

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// The TTIR `.mlir` file to import; it is never modified.
    file: Utf8PathBuf,
    /// Write the TTNN text here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<Utf8PathBuf>,
}

pub(crate) fn import(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.output {
        output::ensure_not_an_input(out, &[&args.file])?;
    }
    let input = input::read(&args.file)?;
    let result = import_text(&input.text, &args.file);
    let mut diags: Vec<Diagnostic> = input.encoding_error.iter().cloned().collect();
    diags.extend(to_ide_diagnostics(&result.diagnostics));

    // The TTNN text is written even when some ops could not be lowered: those stay in TTIR
    // form and the rest of the graph is still worth having (the diagnostics say what is left).
    match &args.output {
        Some(path) => output::write_file(path, result.ttnn.as_bytes())?,
        None => output::write_stdout(result.ttnn.as_bytes())?,
    }
    let mut err = std::io::stderr().lock();
    let _ = render::human(&input.path, &input.text, &diags, &mut err);
    let errors = diags.iter().filter(|d| d.severity == Severity::Error).count();
    let stats = &result.stats;
    let _ = writeln!(
        err,
        "imported `{}`: {} TTIR ops in, {} TTNN ops out, {} not lowered, {errors} error{}",
        input.path,
        stats.ops_in,
        stats.ops_out,
        stats.unsupported,
        if errors == 1 { "" } else { "s" }
    );
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Imports TTIR text; the output's header names the file by its base name only, so the text
/// does not depend on the directory it was imported from.
pub(crate) fn import_text(text: &str, path: &Utf8Path) -> import::ImportResult {
    import::import_ttir(text, path.file_name().unwrap_or(path.as_str()))
}

pub(crate) fn to_ide_diagnostics(diags: &[import::ImportDiagnostic]) -> Vec<Diagnostic> {
    diags
        .iter()
        .map(|d| Diagnostic {
            range: d.range,
            severity: d.severity,
            code: d.code,
            message: d.message.clone(),
        })
        .collect()
}
