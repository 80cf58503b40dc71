//! `cargo xtask bench-parse [--ops N] [--seed S] [--kind K] [--big-mb M] [--no-write]`:
//! parse, print and lowering throughput on generated TTNN graphs, written to
//! `docs/performance.md` under `## Parse and lower throughput`.
//!
//! The main input is one generated graph of `N` ops (10k by default), timed best of 5 so a
//! busy shared machine disturbs the figure as little as possible. A second input of about
//! `M` MB (50 by default) is built by repeating that function under fresh names; it is
//! parsed and lowered once, as a sanity check that time and memory stay linear on files far
//! larger than any real model.
//!
//! Run it in release (`cargo run --release -p xtask -- bench-parse`); a debug build measures
//! the debug build, and the report says which profile produced it.

use std::{fmt::Write as _, hint::black_box, io::Write as _, time::Instant};

use crate::{
    r#gen::{GraphKind, generate_parts},
    util::{
        Flags, machine_description, peak_rss_kib, read_text, replace_section, workspace_root,
        write_file,
    },
};

/// The heading this task owns in `docs/performance.md`; other sections are left alone.
const HEADING: &str = "## Parse and lower throughput";

const RUNS: usize = 5;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse(
        "bench-parse",
        args,
        &["--ops", "--seed", "--kind", "--big-mb"],
        &["--no-write"],
    )?;
    let ops: usize = flags.parsed("--ops", 10_000)?;
    let seed: u64 = flags.parsed("--seed", 1)?;
    let big_mb: usize = flags.parsed("--big-mb", 50)?;
    let kind_name = flags.value("--kind").unwrap_or("mixed");
    let kind = GraphKind::from_name(kind_name)
        .ok_or_else(|| anyhow::format_err!("unknown `--kind` `{kind_name}`"))?;

    let machine = machine_description();
    let mut out = std::io::stdout().lock();
    writeln!(out, "machine: {machine}")?;
    let parts = generate_parts(ops, seed, kind);
    let text = format!("{}module {{\n{}}}\n", parts.aliases, parts.func);
    let n_ops = ops + 1; // `ttnn.get_device` is an op too.
    check_clean(&text, n_ops)?;
    writeln!(
        out,
        "input: {} ops ({} graph, seed {seed}), {} bytes",
        n_ops,
        kind.name(),
        text.len()
    )?;

    let parse = best_of(|| {
        black_box(syntax::parse(black_box(&text)));
    });
    let parsed = syntax::parse(&text);
    let print = best_of(|| {
        black_box(syntax::print(black_box(&text), &parsed));
    });
    let lower = best_of(|| {
        let p = syntax::parse(black_box(&text));
        black_box(ir::lower_parse(&text, &p));
    });
    let rows = [
        Row::new("parse", parse, text.len(), n_ops),
        Row::new("print (tt-mlir style)", print, text.len(), n_ops),
        Row::new("parse + lower", lower, text.len(), n_ops),
    ];
    for r in &rows {
        writeln!(out, "{}", r.console())?;
    }

    // The big file: aliases once, then the same function under fresh names until it is big
    // enough. Distinct names keep lowering free of `duplicate-function` diagnostics.
    let copies = (big_mb * 1_000_000).div_ceil(parts.func.len().max(1)).max(1);
    let mut big = String::with_capacity(parts.aliases.len() + copies * (parts.func.len() + 16));
    big.push_str(&parts.aliases);
    big.push_str("module {\n");
    for i in 0..copies {
        big.push_str(&parts.func.replacen("@main(", &format!("@main_{i}("), 1));
    }
    big.push_str("}\n");
    let big_ops = copies * n_ops;
    let rss_before = peak_rss_kib();
    let started = Instant::now();
    let big_parse = syntax::parse(&big);
    let big_parse_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let big_lowered = ir::lower_parse(&big, &big_parse);
    let big_lower_secs = started.elapsed().as_secs_f64();
    let rss_after = peak_rss_kib();
    let big_diags = big_parse.errors.len() + big_lowered.diagnostics.len();
    let big_funcs = big_lowered.funcs.len();
    drop(big_lowered);
    drop(big_parse);
    if big_diags != 0 || big_funcs != copies {
        return Err(anyhow::format_err!(
            "the {} MB file gave {big_diags} diagnostics and {big_funcs} of {copies} functions",
            big.len() / 1_000_000
        ));
    }
    let big_rows = [
        Row::new("parse, big file (1 run)", big_parse_secs, big.len(), big_ops),
        Row::new(
            "parse + lower, big file (1 run)",
            big_parse_secs + big_lower_secs,
            big.len(),
            big_ops,
        ),
    ];
    writeln!(out, "big file: {copies} copies of the function, {big_ops} ops, {} bytes", big.len())?;
    for r in &big_rows {
        writeln!(out, "{}", r.console())?;
    }
    let rss = match (rss_before, rss_after) {
        (Some(b), Some(a)) => {
            let s = format!(
                "peak RSS {:.0} MiB after the big file ({:.0} MiB before it)",
                a as f64 / 1024.0,
                b as f64 / 1024.0
            );
            writeln!(out, "{s}")?;
            Some(s)
        }
        _ => None,
    };

    if flags.switch("--no-write") {
        return Ok(());
    }
    let report = Report {
        ops: n_ops,
        kind,
        seed,
        bytes: text.len(),
        rows: &rows,
        big_rows: &big_rows,
        big_bytes: big.len(),
        big_ops,
        copies,
        rss,
        machine,
    };
    let section = report.section();
    let path = workspace_root().join("docs").join("performance.md");
    let doc = if path.is_file() { read_text(&path)? } else { "# Performance\n".to_owned() };
    write_file(&path, replace_section(&doc, HEADING, &section).as_bytes())?;
    writeln!(out, "wrote {} (section `{HEADING}`)", path.display())?;
    Ok(())
}

/// Parses and lowers once, insisting on a clean graph: timing a file full of errors would
/// measure error recovery instead of the normal path.
fn check_clean(text: &str, n_ops: usize) -> anyhow::Result<()> {
    let parse = syntax::parse(text);
    let lowered = ir::lower_parse(text, &parse);
    if let Some(d) = lowered.diagnostics.first() {
        return Err(anyhow::format_err!(
            "generated graph has diagnostics, first: {}: {}",
            d.code,
            d.message
        ));
    }
    let got: usize = lowered.funcs.iter().map(|f| f.body.ops.len()).sum();
    if got != n_ops {
        return Err(anyhow::format_err!("generated graph has {got} ops, expected {n_ops}"));
    }
    Ok(())
}

/// The fastest of `RUNS` runs, in seconds: the run least disturbed by other processes.
fn best_of(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

struct Row {
    what: &'static str,
    secs: f64,
    bytes: usize,
    ops: usize,
}

impl Row {
    fn new(what: &'static str, secs: f64, bytes: usize, ops: usize) -> Row {
        Row { what, secs, bytes, ops }
    }

    fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.secs.max(1e-9)
    }

    fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.secs.max(1e-9)
    }

    fn console(&self) -> String {
        format!(
            "{:<34} {:>9.2} ms {:>8.1} MB/s {:>10.0} ops/s",
            self.what,
            self.secs * 1e3,
            self.mb_per_s(),
            self.ops_per_s()
        )
    }

    fn markdown(&self) -> String {
        format!(
            "| {} | {:.1} ms | {:.1} MB/s | {:.2} M ops/s |",
            self.what,
            self.secs * 1e3,
            self.mb_per_s(),
            self.ops_per_s() / 1e6
        )
    }
}

struct Report<'a> {
    ops: usize,
    kind: GraphKind,
    seed: u64,
    bytes: usize,
    rows: &'a [Row],
    big_rows: &'a [Row],
    big_bytes: usize,
    big_ops: usize,
    copies: usize,
    rss: Option<String>,
    machine: String,
}

impl Report<'_> {
    fn section(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{HEADING}\n");
        let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
        let _ = writeln!(
            s,
            "Measured with `cargo run --release -p xtask -- bench-parse` ({profile} build for these figures); the task rewrites this section."
        );
        let _ = writeln!(s, "Machine: {}.", self.machine);
        let _ = writeln!(
            s,
            "Input: `cargo xtask gen --ops {} --seed {} --kind {}` ({} ops with `ttnn.get_device`, {:.2} MB), timed best of {RUNS} runs with `std::time::Instant`.\n",
            self.ops - 1,
            self.seed,
            self.kind.name(),
            self.ops,
            self.bytes as f64 / 1e6
        );
        let _ = writeln!(s, "| measurement | wall time | throughput | ops |");
        let _ = writeln!(s, "| --- | --- | --- | --- |");
        for r in self.rows.iter().chain(self.big_rows) {
            let _ = writeln!(s, "{}", r.markdown());
        }
        let _ = writeln!(
            s,
            "\nThe big file repeats the function {} times under fresh names ({:.1} MB, {} ops) and must parse and lower with no diagnostics; it is timed once.",
            self.copies,
            self.big_bytes as f64 / 1e6,
            self.big_ops
        );
        if let Some(rss) = &self.rss {
            let _ = writeln!(
                s,
                "Memory: {rss}, for the whole process (text, tokens, tree and lowered model held at once)."
            );
        }
        let _ = writeln!(
            s,
            "`parse + lower` is what the analyzer pays on every edit of a file: both queries re-run over the whole file, and only work downstream of the position-free function bodies is spared when a body is unchanged."
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_a_section_keeps_the_others_byte_for_byte() {
        let doc = "# Performance\n\n## Op model throughput\n\nfast.\n\n## Parse and lower throughput\n\nold\nnumbers\n\n## Later\n\nkept\n";
        let new = replace_section(doc, HEADING, "## Parse and lower throughput\n\nnew\n");
        assert_eq!(
            new,
            "# Performance\n\n## Op model throughput\n\nfast.\n\n## Parse and lower throughput\n\nnew\n\n## Later\n\nkept\n"
        );
        // Idempotent: writing the same section again changes nothing.
        assert_eq!(replace_section(&new, HEADING, "## Parse and lower throughput\n\nnew\n"), new);
    }

    #[test]
    fn a_missing_section_is_appended_after_the_existing_ones() {
        let doc = "# Performance\n\n## Op model throughput\n\nfast.\n\n";
        let new = replace_section(doc, HEADING, "## Parse and lower throughput\n\nx\n");
        assert_eq!(
            new,
            "# Performance\n\n## Op model throughput\n\nfast.\n\n## Parse and lower throughput\n\nx\n"
        );
    }
}
