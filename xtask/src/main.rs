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

/// A task: its name on the command line, its module's source (whose leading `//!` lines are
/// its usage and description, what `cargo xtask TASK --help` prints, so the help is the
/// documentation and cannot drift from it), and what runs it with the arguments after its
/// name.
struct Task {
    name: &'static str,
    source: &'static str,
    run: fn(&[String]) -> anyhow::Result<()>,
}

const TASKS: &[Task] = &[
    Task { name: "calibrate", source: include_str!("calibrate.rs"), run: |_| calibrate::run() },
    Task {
        name: "cost-validate",
        source: include_str!("cost_validate.rs"),
        run: cost_validate::run,
    },
    Task { name: "bench", source: include_str!("bench.rs"), run: bench::run },
    Task { name: "bench-edits", source: include_str!("bench_edits.rs"), run: bench_edits::run },
    Task { name: "bench-lsp", source: include_str!("bench_lsp.rs"), run: bench_lsp::run },
    Task {
        name: "bench-opmodel",
        source: include_str!("bench_opmodel.rs"),
        run: |_| bench_opmodel::run(),
    },
    Task { name: "bench-parse", source: include_str!("bench_parse.rs"), run: bench_parse::run },
    Task { name: "corpus", source: include_str!("corpus.rs"), run: corpus::run },
    Task { name: "fuzz", source: include_str!("fuzz.rs"), run: fuzz::run },
    Task { name: "gen", source: include_str!("gen.rs"), run: r#gen::run },
    Task { name: "models", source: include_str!("models.rs"), run: models::run },
    Task {
        name: "optimize-corpus",
        source: include_str!("optimize_corpus.rs"),
        run: optimize_corpus::run,
    },
    Task { name: "ttmlir-tests", source: include_str!("ttmlir_tests.rs"), run: ttmlir_tests::run },
];

/// The task named `name`, or an error that lists the tasks.
fn task(name: &str) -> anyhow::Result<&'static Task> {
    TASKS.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = TASKS.iter().map(|t| t.name).collect();
        anyhow::format_err!("unknown task `{name}`, expected one of: {}", names.join(", "))
    })
}

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
fn help(name: Option<&str>) -> anyhow::Result<()> {
    let out = match name {
        Some(name) => module_doc(task(name)?.source),
        None => {
            let mut out =
                String::from("usage: cargo xtask <task> [flags]; cargo xtask <task> --help\n\n");
            for t in TASKS {
                let doc = module_doc(t.source);
                let first = doc.split("\n\n").next().unwrap_or_default().replace('\n', " ");
                out.push_str(&format!("{}\n    {first}\n", t.name));
            }
            out
        }
    };
    use std::io::Write as _;
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let asks_help = |a: &String| a == "--help" || a == "-h";
    match args.split_first() {
        None => help(None),
        Some((first, _)) if asks_help(first) => help(None),
        Some((name, rest)) if rest.iter().any(asks_help) => help(Some(name)),
        Some((name, rest)) => (task(name)?.run)(rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_has_help_that_starts_with_its_usage() {
        for t in TASKS {
            let doc = module_doc(t.source);
            assert!(
                doc.starts_with(&format!("`cargo xtask {}", t.name)),
                "`{}`'s module doc starts with its usage: {doc}",
                t.name
            );
        }
    }
}
