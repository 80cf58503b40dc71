//! `ttnn-analyzer`: the command-line front end.
//!
//! Exit status: 0 when no errors were found, 1 when the input has errors, 2 for usage and I/O
//! errors. Logs go to stderr, filtered by `TTNN_ANALYZER_LOG` (EnvFilter syntax).

mod check;
mod common;
mod import;
mod optimize;
mod output;
mod render;

use cli::input;
mod report;
mod session;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The analysis allocates and frees millions of small values per optimize (plans, candidate
/// lists, salsa memos). mimalloc made a one-override re-optimize of a 10k-op graph about 1.5x
/// faster than glibc's allocator and opening it no slower (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Incremental analysis and layout optimization for Tenstorrent TTNN IR.
#[derive(Parser)]
#[command(name = "ttnn-analyzer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report syntax and semantic diagnostics.
    Check(check::CheckArgs),
    /// Print the file normalized in tt-mlir's style to stdout.
    Fmt(check::FmtArgs),
    /// Lower a TTIR model file to TTNN with DRAM-interleaved layouts, to stdout or `-o`.
    Import(import::ImportArgs),
    /// Serve the Language Server Protocol over stdin and stdout (logs go to stderr).
    Lsp {
        /// Accepted and ignored: stdio is the only transport, and some editor set-ups pass
        /// this flag to every server.
        #[arg(long, hide = true)]
        stdio: bool,
    },
    /// Choose layouts and configs for every op and print the rewritten IR.
    Optimize(optimize::OptimizeArgs),
    /// Evaluate the IR as written against the op model: per-op validity, L1 use and live L1.
    Report(report::ReportArgs),
    /// A JSON-lines session over one analysis database, for tools and tuning loops.
    Session(session::SessionArgs),
    /// Search per-op overrides that lower the plan's estimated cost; write the best found.
    Tune(tune::TuneArgs),
}

fn main() -> ExitCode {
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with success; usage errors exit 2.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Check(args) => check::check(&args),
        Command::Fmt(args) => check::fmt(&args),
        Command::Import(args) => import::import(&args),
        Command::Lsp { stdio: _ } => server::run_stdio(),
        Command::Optimize(args) => optimize::optimize(&args),
        Command::Report(args) => report::report(&args),
        Command::Session(args) => session::session(&args),
        Command::Tune(args) => tune::tune(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report_error(&e);
            ExitCode::from(2)
        }
    }
}

#[expect(clippy::print_stderr, reason = "the CLI reports fatal errors on stderr")]
fn report_error(e: &anyhow::Error) {
    eprintln!("error: {e:#}");
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TTNN_ANALYZER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour only on a terminal: escape codes in a log file or an editor's log pane are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
