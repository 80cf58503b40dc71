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

/// Each task's module source, whose leading `//!` lines are its usage and description: what
/// `cargo xtask TASK --help` prints, so the help is the documentation and cannot drift from it.
const TASK_DOCS: &[(&str, &str)] = &[
    ("calibrate", include_str!("calibrate.rs")),
    ("cost-validate", include_str!("cost_validate.rs")),
    ("bench", include_str!("bench.rs")),
    ("bench-edits", include_str!("bench_edits.rs")),
    ("bench-lsp", include_str!("bench_lsp.rs")),
    ("bench-opmodel", include_str!("bench_opmodel.rs")),
    ("bench-parse", include_str!("bench_parse.rs")),
    ("corpus", include_str!("corpus.rs")),
    ("fuzz", include_str!("fuzz.rs")),
    ("gen", include_str!("gen.rs")),
    ("models", include_str!("models.rs")),
    ("optimize-corpus", include_str!("optimize_corpus.rs")),
    ("ttmlir-tests", include_str!("ttmlir_tests.rs")),
];

/// The leading `//!` block of a module's source, without the markers.
fn module_doc(source: &str) -> String {
    let mut out = String::new();
    for line in source.lines().take_while(|l| l.starts_with("//!")) {
        let line = line.trim_start_matches("//!");
        out.push_str(line.strip_prefix(' ').unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `cargo xtask --help` (every task's first doc line) or `cargo xtask TASK --help`.
fn help(task: Option<&str>) -> anyhow::Result<()> {
    let mut out = String::new();
    match task.and_then(|t| TASK_DOCS.iter().find(|(name, _)| *name == t)) {
        Some((_, source)) => out.push_str(&module_doc(source)),
        None if task.is_some() => {
            anyhow::bail!("unknown task `{}`, expected one of: {TASKS}", task.unwrap_or_default())
        }
        None => {
            out.push_str("usage: cargo xtask <task> [flags]; cargo xtask <task> --help\n\n");
            for (name, source) in TASK_DOCS {
                let doc = module_doc(source);
                let first = doc.split("\n\n").next().unwrap_or_default().replace('\n', " ");
                out.push_str(&format!("{name}\n    {first}\n"));
            }
        }
    }
    use std::io::Write as _;
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let asks_help = |a: &String| a == "--help" || a == "-h";
    if args.first().is_none_or(asks_help) {
        return help(None);
    }
    if args[1..].iter().any(asks_help) {
        return help(args.first().map(String::as_str));
    }
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
        None => help(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_has_help_that_starts_with_its_usage() {
        let tasks: Vec<&str> = TASKS.split(", ").collect();
        let documented: Vec<&str> = TASK_DOCS.iter().map(|(name, _)| *name).collect();
        assert_eq!(tasks, documented, "TASKS and TASK_DOCS list the same tasks, in one order");
        for (name, source) in TASK_DOCS {
            let doc = module_doc(source);
            assert!(
                doc.starts_with(&format!("`cargo xtask {name}")),
                "`{name}`'s module doc starts with its usage: {doc}"
            );
        }
    }
}
