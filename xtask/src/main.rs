//! `cargo xtask`: repository automation (corpus checks, benchmarks, calibration, tidy).
//!
//! A small dispatcher on the first argument; each task lives in its own module.

mod alloc;
mod bench;
mod bench_edits;
mod bench_lsp;
mod bench_opmodel;
mod bench_parse;
mod calibrate;
mod corpus;
mod cost_validate;
mod fuzz;
mod fuzz_commands;
mod models;
mod optimize_corpus;
// `gen` is a reserved keyword in edition 2024, hence the raw identifier.
mod r#gen;
mod tidy;
mod ttmlir_tests;
mod util;

/// The same allocator as the `ttnn-analyzer` binary, so the benchmarks measure what users run,
/// with a per-thread count of live bytes for the fuzzer's memory cap (a few adds per call).
#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

const TASKS: &str = "calibrate, cost-validate, bench, bench-edits, bench-lsp, bench-opmodel, bench-parse, corpus, fuzz, gen, models, optimize-corpus, ttmlir-tests";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("calibrate") => calibrate::run(),
        Some("cost-validate") => cost_validate::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("bench-edits") => bench_edits::run(&args[1..]),
        Some("bench-lsp") => bench_lsp::run(&args[1..]),
        Some("bench-opmodel") => bench_opmodel::run(),
        Some("bench-parse") => bench_parse::run(&args[1..]),
        Some("corpus") => corpus::run(&args[1..]),
        Some("optimize-corpus") => optimize_corpus::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("gen") => r#gen::run(&args[1..]),
        Some("models") => models::run(&args[1..]),
        Some("ttmlir-tests") => ttmlir_tests::run(&args[1..]),
        Some(other) => Err(anyhow::format_err!("unknown task `{other}`, expected one of: {TASKS}")),
        None => {
            Err(anyhow::format_err!("usage: cargo xtask <task>, where task is one of: {TASKS}"))
        }
    }
}
