//! `import`: lowers a TTIR model file to TTNN with DRAM-interleaved layouts, the shape tt-mlir's
//! optimizer starts from (the engine is `crates/import`; see `docs/cli/import.md`).

use std::{io::Write as _, process::ExitCode};

use camino::{Utf8Path, Utf8PathBuf};
use clap::{Args, ValueEnum};
use ide::{Diagnostic, Severity};

use crate::{input, output, render};

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// The TTIR `.mlir` file to import; it is never modified.
    file: Utf8PathBuf,
    /// Write the TTNN text here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<Utf8PathBuf>,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

/// tt-mlir pipeline options the import reproduces (`docs/import.md`), shared by every command
/// that imports TTIR.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct PipelineArgs {
    /// tt-mlir's `experimental-weight-dtype`: cast every matmul and linear weight computed
    /// only from parameters and constants to this block float (a `ttcore.weight_dtype` mark on
    /// the weight's argument still wins). tt-xla's LLM benchmarks compile with `bfp_bf8`.
    #[arg(long, value_enum, value_name = "DTYPE")]
    weight_dtype: Option<WeightDtypeArg>,
    /// tt-mlir's `compute-cfg-math-fidelity`: the math fidelity written into the compute
    /// config of every op that has one (matmuls, linears, convolutions, reductions, norms,
    /// softmax). Without it none is written and the cost model takes HiFi4, tt-mlir's default.
    #[arg(long, value_enum, value_name = "FIDELITY")]
    math_fidelity: Option<MathFidelityArg>,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum WeightDtypeArg {
    #[value(name = "bfp_bf8")]
    BfpBf8,
    #[value(name = "bfp_bf4")]
    BfpBf4,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum MathFidelityArg {
    #[value(name = "lofi")]
    LoFi,
    #[value(name = "hifi2")]
    HiFi2,
    #[value(name = "hifi3")]
    HiFi3,
    #[value(name = "hifi4")]
    HiFi4,
}

impl PipelineArgs {
    pub(crate) fn options(&self) -> import::ImportOptions {
        import::ImportOptions {
            weight_dtype: self.weight_dtype.map(|d| match d {
                WeightDtypeArg::BfpBf8 => import::WeightDtype::BfpBf8,
                WeightDtypeArg::BfpBf4 => import::WeightDtype::BfpBf4,
            }),
            math_fidelity: self.math_fidelity.map(|f| match f {
                MathFidelityArg::LoFi => ttnn_types::MathFidelity::LoFi,
                MathFidelityArg::HiFi2 => ttnn_types::MathFidelity::HiFi2,
                MathFidelityArg::HiFi3 => ttnn_types::MathFidelity::HiFi3,
                MathFidelityArg::HiFi4 => ttnn_types::MathFidelity::HiFi4,
            }),
        }
    }
}

pub(crate) fn import(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.output {
        output::ensure_not_an_input(out, &[&args.file])?;
    }
    let input = input::read(&args.file)?;
    let result = import_text(&input.text, &args.file, &args.pipeline);
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
pub(crate) fn import_text(
    text: &str,
    path: &Utf8Path,
    pipeline: &PipelineArgs,
) -> import::ImportResult {
    import::import_ttir_with(text, path.file_name().unwrap_or(path.as_str()), pipeline.options())
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
