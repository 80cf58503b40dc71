//! `cargo xtask bench [--quick] [--no-write] [--only NAME]`: optimizer and tuning-loop
//! benchmarks, written to `docs/performance.md` under `## Optimizer and tuning benchmarks`.
//!
//! Inputs: generated graphs (`xtask gen`, 1k, 10k and 100k ops) and imported corpus models
//! (a llama decode layer, resnet_hf, a bert encoder layer). Per input, in one process:
//!
//! * (a) from scratch: a fresh `AnalysisHost`, the file set, `cost` then `final_ir_for`;
//! * (b) one override: `set_override` on one op (a legal layout other than the planned one),
//!   then `final_ir_for` + `cost`, for up to 20 ops spread over the graph, median reported;
//! * (c) no-op revalidation: `final_ir_for` + `cost` asked again with no change, and after a
//!   whitespace edit (a space appended to the file);
//! * (d) hover after an edit: rename one op's `loc`, then `Analysis::hover` at that op;
//! * (e) tuning throughput: candidates through the incremental loop the `tune` command runs
//!   (`set_override`, `cost`, revert), against optimizing from scratch per candidate
//!   (a fresh host and `cost`, the from-scratch half of (a)).
//!
//! Every input runs in its own child process (this binary, `bench --child SPEC`), so the
//! peak resident set (`VmHWM`) is per input and a 100k-op graph cannot inflate the others.
//! Run it in release: `cargo run --release -p xtask -- bench`.

use std::{
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use ide::{AnalysisHost, Change, Options, OverrideOption, Policy, TextEdit};

use crate::{
    r#gen::{GraphKind, generate},
    util::{
        Flags, Rng, machine_description, peak_rss_kib, read_text, replace_section, workspace_root,
        write_file,
    },
};

/// The heading this task owns in `docs/performance.md`; other sections are left alone.
const HEADING: &str = "## Optimizer and tuning benchmarks";

/// The one-override and tuning measurements touch at most this many different ops.
const OVERRIDE_OPS: usize = 20;

/// One benchmark input: how to build it and what to call it.
#[derive(Debug, Clone)]
struct Spec {
    /// `gen:KIND:OPS` or `corpus:RELATIVE_PATH`.
    key: String,
    name: String,
}

fn specs(quick: bool) -> Vec<Spec> {
    let mut out = Vec::new();
    let mut generated = vec![("mixed", 1_000), ("transformer", 10_000), ("conv", 10_000)];
    generated.push(("mixed", 10_000));
    if !quick {
        generated.push(("mixed", 100_000));
    }
    for (kind, ops) in generated {
        out.push(Spec {
            key: format!("gen:{kind}:{ops}"),
            name: format!("gen {kind} {}k", ops / 1000),
        });
    }
    for (path, name) in [
        ("single_blocks_and_layers/llama_3_2_1b_decode_layer.mlir", "llama 3.2 1B decode layer"),
        ("resnet_hf.mlir", "resnet_hf"),
        ("single_blocks_and_layers/bert_encoder_layer.mlir", "bert encoder layer"),
    ] {
        out.push(Spec { key: format!("corpus:{path}"), name: name.to_owned() });
    }
    out
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse("bench", args, &["--child", "--only"], &["--quick", "--no-write"])?;
    if let Some(spec) = flags.value("--child") {
        return child(spec);
    }
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let machine = machine_description();
    let mut out = std::io::stdout().lock();
    writeln!(out, "machine: {machine}")?;
    if profile == "debug" {
        writeln!(out, "warning: a debug build; run `cargo run --release -p xtask -- bench`")?;
    }
    let exe = std::env::current_exe()?;
    let mut results = Vec::new();
    for spec in specs(flags.switch("--quick")) {
        if flags.value("--only").is_some_and(|o| !spec.name.contains(o) && !spec.key.contains(o)) {
            continue;
        }
        writeln!(out, "\n== {} ({})", spec.name, spec.key)?;
        out.flush()?;
        let started = Instant::now();
        let output = Command::new(&exe).args(["bench", "--child", &spec.key]).output()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            anyhow::bail!("the benchmark of {} failed: {stdout}{stderr}", spec.name);
        }
        let m = Measured::parse(&stdout)?;
        writeln!(out, "{}", m.console())?;
        writeln!(out, "(child process: {:.1} s)", started.elapsed().as_secs_f64())?;
        results.push((spec, m));
    }
    let section = section(&machine, profile, &results);
    writeln!(out, "\n{section}")?;
    if !flags.switch("--no-write") && flags.value("--only").is_none() {
        let path = workspace_root().join("docs").join("performance.md");
        let doc = read_text(&path).unwrap_or_else(|_| "# Performance\n".to_owned());
        write_file(&path, replace_section(&doc, HEADING, &section).as_bytes())?;
        writeln!(out, "wrote {} (section `{HEADING}`)", path.display())?;
    }
    Ok(())
}

/// What one child process measured. Times are seconds; memory is KiB.
#[derive(Debug, Default)]
struct Measured {
    ops: usize,
    chains: usize,
    chains_completed: usize,
    scratch_cost: f64,
    scratch_total: f64,
    peak_after_scratch: u64,
    one_override_median: f64,
    one_override_max: f64,
    one_override_n: usize,
    /// The cost alone after one override (the plan's estimate, what a tuning loop reads).
    cost_override_median: f64,
    again_median: f64,
    noop: f64,
    whitespace: f64,
    hover_after_edit: f64,
    tune_candidates: usize,
    tune_secs: f64,
    peak: u64,
}

impl Measured {
    const KEYS: &'static [&'static str] = &[
        "ops",
        "chains",
        "chains_completed",
        "scratch_cost",
        "scratch_total",
        "peak_after_scratch",
        "one_override_median",
        "one_override_max",
        "one_override_n",
        "cost_override_median",
        "again_median",
        "noop",
        "whitespace",
        "hover_after_edit",
        "tune_candidates",
        "tune_secs",
        "peak",
    ];

    fn lines(&self) -> String {
        let values = [
            self.ops.to_string(),
            self.chains.to_string(),
            self.chains_completed.to_string(),
            self.scratch_cost.to_string(),
            self.scratch_total.to_string(),
            self.peak_after_scratch.to_string(),
            self.one_override_median.to_string(),
            self.one_override_max.to_string(),
            self.one_override_n.to_string(),
            self.cost_override_median.to_string(),
            self.again_median.to_string(),
            self.noop.to_string(),
            self.whitespace.to_string(),
            self.hover_after_edit.to_string(),
            self.tune_candidates.to_string(),
            self.tune_secs.to_string(),
            self.peak.to_string(),
        ];
        let mut s = String::new();
        for (k, v) in Self::KEYS.iter().zip(values) {
            let _ = writeln!(s, "bench {k} {v}");
        }
        s
    }

    fn parse(text: &str) -> anyhow::Result<Measured> {
        let mut m = Measured::default();
        let mut seen = 0;
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("bench ") else { continue };
            let Some((k, v)) = rest.split_once(' ') else { continue };
            let f = || v.parse::<f64>().map_err(|e| anyhow::format_err!("`{k}` `{v}`: {e}"));
            let u = || v.parse::<u64>().map_err(|e| anyhow::format_err!("`{k}` `{v}`: {e}"));
            match k {
                "ops" => m.ops = u()? as usize,
                "chains" => m.chains = u()? as usize,
                "chains_completed" => m.chains_completed = u()? as usize,
                "scratch_cost" => m.scratch_cost = f()?,
                "scratch_total" => m.scratch_total = f()?,
                "peak_after_scratch" => m.peak_after_scratch = u()?,
                "one_override_median" => m.one_override_median = f()?,
                "one_override_max" => m.one_override_max = f()?,
                "one_override_n" => m.one_override_n = u()? as usize,
                "cost_override_median" => m.cost_override_median = f()?,
                "again_median" => m.again_median = f()?,
                "noop" => m.noop = f()?,
                "whitespace" => m.whitespace = f()?,
                "hover_after_edit" => m.hover_after_edit = f()?,
                "tune_candidates" => m.tune_candidates = u()? as usize,
                "tune_secs" => m.tune_secs = f()?,
                "peak" => m.peak = u()?,
                _ => continue,
            }
            seen += 1;
        }
        if seen != Self::KEYS.len() {
            anyhow::bail!("the child reported {seen} of {} figures:\n{text}", Self::KEYS.len());
        }
        Ok(m)
    }

    fn candidates_per_s(&self) -> f64 {
        if self.tune_secs > 0.0 { self.tune_candidates as f64 / self.tune_secs } else { 0.0 }
    }

    fn override_ratio(&self) -> f64 {
        ratio(self.scratch_total, self.one_override_median)
    }

    /// The cost from scratch over the cost after one override.
    fn cost_ratio(&self) -> f64 {
        ratio(self.scratch_cost, self.cost_override_median)
    }

    fn again_ratio(&self) -> f64 {
        ratio(self.scratch_total, self.again_median)
    }

    fn tune_ratio(&self) -> f64 {
        self.candidates_per_s() * self.scratch_cost
    }

    fn console(&self) -> String {
        format!(
            "{} ops, {} chains ({} completed)\n\
             (a) from scratch: cost {}, + final IR {} (peak {} MiB)\n\
             (b) one override, median of {}: {} (max {}), {:.0}x cheaper than from scratch; the cost alone {}, {:.0}x\n\
             (b') the same ops again: {}, {:.0}x\n\
             (c) no change: {}; whitespace edit: {}\n\
             (d) hover after an edit: {}\n\
             (e) tuning: {} candidates in {:.2} s = {:.1}/s; from scratch {:.2}/s; {:.0}x\n\
             peak resident set {} MiB",
            self.ops,
            self.chains,
            self.chains_completed,
            fmt_secs(self.scratch_cost),
            fmt_secs(self.scratch_total),
            self.peak_after_scratch / 1024,
            self.one_override_n,
            fmt_secs(self.one_override_median),
            fmt_secs(self.one_override_max),
            self.override_ratio(),
            fmt_secs(self.cost_override_median),
            self.cost_ratio(),
            fmt_secs(self.again_median),
            self.again_ratio(),
            fmt_secs(self.noop),
            fmt_secs(self.whitespace),
            fmt_secs(self.hover_after_edit),
            self.tune_candidates,
            self.tune_secs,
            self.candidates_per_s(),
            1.0 / self.scratch_cost.max(1e-9),
            self.tune_ratio(),
            self.peak / 1024,
        )
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "not met" }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

fn fmt_secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// The input text of a spec.
fn input_text(key: &str) -> anyhow::Result<String> {
    if let Some(rest) = key.strip_prefix("gen:") {
        let (kind, ops) =
            rest.split_once(':').ok_or_else(|| anyhow::format_err!("bad spec `{key}`"))?;
        let kind = GraphKind::from_name(kind)
            .ok_or_else(|| anyhow::format_err!("unknown graph kind `{kind}`"))?;
        return Ok(generate(ops.parse()?, 1, kind));
    }
    if let Some(rel) = key.strip_prefix("corpus:") {
        let root = workspace_root();
        let dir = root.parent().map_or(root.clone(), Path::to_path_buf);
        let path: PathBuf = dir.join("shared").join("corpus").join("ttir-models").join(rel);
        let ttir = read_text(&path)?;
        let imported = import::import_ttir(&ttir, rel);
        let errors =
            imported.diagnostics.iter().filter(|d| d.severity == import::Severity::Error).count();
        if errors > 0 {
            anyhow::bail!("{rel}: the import reported {errors} errors");
        }
        return Ok(imported.ttnn);
    }
    anyhow::bail!("bad spec `{key}`")
}

/// Runs every measurement on one input and prints `bench KEY VALUE` lines.
fn child(key: &str) -> anyhow::Result<()> {
    let text = input_text(key)?;
    let policy = Policy::DfShardingMerge;
    let path = "bench.mlir";
    let cancelled = |_| anyhow::format_err!("cancelled");
    let mut m = Measured::default();

    // (a) From scratch.
    let started = Instant::now();
    let mut host = AnalysisHost::for_tuning(target::Target::n150(), Options::tt_mlir_defaults());
    host.apply_change(Change::new().set_file(path, text.clone()));
    let file = host.file(path).ok_or_else(|| anyhow::format_err!("file not loaded"))?;
    let baseline = host.analysis().cost(file, policy).map_err(cancelled)?;
    m.scratch_cost = started.elapsed().as_secs_f64();
    let _ = host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
    m.scratch_total = started.elapsed().as_secs_f64();
    m.peak_after_scratch = peak_rss_kib().unwrap_or(0);

    let report = host.analysis().plan_report(file).map_err(cancelled)?;
    m.ops = report.ops.len();
    m.chains = report.chains.len();
    m.chains_completed = report.chains.iter().filter(|c| c.state == "completed").count();

    // Ops an override can move: not fixed, with a legal layout other than the planned one.
    // Spread over the whole graph so chains of every kind are touched.
    let mut movable: Vec<(String, String)> = Vec::new();
    {
        let analysis = host.analysis();
        let step = (report.ops.len() / (OVERRIDE_OPS * 4)).max(1);
        for d in report.ops.iter().step_by(step) {
            let Some(l) = analysis.op_layouts(file, &d.op).map_err(cancelled)? else { continue };
            if l.fixed {
                continue;
            }
            let other = l.layouts.iter().find(|c| Some(*c) != d.planned.as_ref());
            if let Some(params) = other.and_then(ide::full_layout_params) {
                movable.push((d.op.clone(), params));
            }
        }
    }
    let pick: Vec<(String, String)> = if movable.len() <= OVERRIDE_OPS {
        movable.clone()
    } else {
        (0..OVERRIDE_OPS).map(|i| movable[i * movable.len() / OVERRIDE_OPS].clone()).collect()
    };

    // (b) One override each, timed from the change to the cost, and on to the re-optimized
    // IR; each list sorted.
    let override_each = |host: &mut AnalysisHost| -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
        let (mut times, mut costs) = (Vec::new(), Vec::new());
        for (op, params) in &pick {
            let started = Instant::now();
            host.set_override(op, OverrideOption::OutputLayout, params);
            let _ = host.analysis().cost(file, policy).map_err(cancelled)?;
            costs.push(started.elapsed().as_secs_f64());
            let _ = host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
            times.push(started.elapsed().as_secs_f64());
            host.clear_override(op, None);
            let _ = host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
            let _ = host.analysis().cost(file, policy).map_err(cancelled)?;
        }
        times.sort_by(f64::total_cmp);
        costs.sort_by(f64::total_cmp);
        Ok((times, costs))
    };
    let (times, costs) = override_each(&mut host)?;
    m.one_override_n = times.len();
    m.one_override_median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    m.one_override_max = times.last().copied().unwrap_or(0.0);
    m.cost_override_median = costs.get(costs.len() / 2).copied().unwrap_or(0.0);

    // (b') The same overrides again, as in a tuning loop that comes back to an op: its
    // overridden legality and chains' solutions were made before (a slot is created at the
    // durability it is written with, so a first override costs the same salsa work).
    let (again, _) = override_each(&mut host)?;
    m.again_median = again.get(again.len() / 2).copied().unwrap_or(0.0);

    // (c) No change, then a whitespace edit (a trailing space: the whole file re-parses, the
    // function bodies are backdated).
    let started = Instant::now();
    let _ = host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
    let _ = host.analysis().cost(file, policy).map_err(cancelled)?;
    m.noop = started.elapsed().as_secs_f64();
    let end = text.len() as u32;
    let started = Instant::now();
    host.apply_change(Change::new().edit_file(
        path,
        vec![TextEdit { range: syntax::TextRange::new(end, end), text: " ".to_owned() }],
    ));
    let _ = host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
    let _ = host.analysis().cost(file, policy).map_err(cancelled)?;
    m.whitespace = started.elapsed().as_secs_f64();

    // (d) Rename one op's location, then hover over its result.
    if let Some((op, _)) = pick.get(pick.len() / 2) {
        let current = host.text(path).unwrap_or_default();
        let needle = format!("loc(\"{op}\")");
        if let Some(at) = current.find(&needle) {
            let line_start = current[..at].rfind('\n').map_or(0, |i| i + 1);
            let indent = current[line_start..].len() - current[line_start..].trim_start().len();
            let result_at = (line_start + indent) as u32;
            let name_end = (at + needle.len() - 2) as u32;
            let started = Instant::now();
            host.apply_change(Change::new().edit_file(
                path,
                vec![TextEdit {
                    range: syntax::TextRange::new(name_end, name_end),
                    text: "_e".to_owned(),
                }],
            ));
            let hover = host.analysis().hover(file, result_at).map_err(cancelled)?;
            m.hover_after_edit = started.elapsed().as_secs_f64();
            if hover.is_none() {
                anyhow::bail!("no hover at the edited op `{op}`");
            }
        }
    }

    // (e) Tuning throughput: the tune command's loop, on a fresh revision after (d).
    let _ = host.analysis().cost(file, policy).map_err(cancelled)?;
    let mut candidates: Vec<(String, Vec<String>)> = Vec::new();
    {
        let analysis = host.analysis();
        for (op, _) in &pick {
            let Some(l) = analysis.op_layouts(file, op).map_err(cancelled)? else { continue };
            let params: Vec<String> =
                l.layouts.iter().filter_map(ide::full_layout_params).collect();
            if !params.is_empty() {
                candidates.push((op.clone(), params));
            }
        }
    }
    let mut rng = Rng::new(7);
    let budget = Duration::from_secs_f64((m.scratch_cost * 3.0).clamp(2.0, 30.0));
    let started = Instant::now();
    let mut best = baseline.total_ns;
    while !candidates.is_empty() && (started.elapsed() < budget || m.tune_candidates < 10) {
        let (op, params) = &candidates[rng.below(candidates.len())];
        let p = &params[rng.below(params.len())];
        host.set_override(op, OverrideOption::OutputLayout, p);
        let c = host.analysis().cost(file, policy).map_err(cancelled)?;
        best = best.min(c.total_ns);
        host.clear_override(op, None);
        m.tune_candidates += 1;
    }
    m.tune_secs = started.elapsed().as_secs_f64();
    std::hint::black_box(best);
    m.peak = peak_rss_kib().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    write!(out, "{}", m.lines())?;
    Ok(())
}

fn section(machine: &str, profile: &str, results: &[(Spec, Measured)]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{HEADING}\n");
    let _ = writeln!(
        s,
        "Measured with `cargo run --release -p xtask -- bench` ({profile} build for these figures); the task rewrites this section."
    );
    let _ = writeln!(s, "Machine: {machine}.");
    let _ = writeln!(
        s,
        "Each input runs in its own child process, so the peak resident set (`VmHWM`) is per input."
    );
    let _ = writeln!(
        s,
        "Target n150, policy `df-sharding-merge`; generated graphs are `cargo xtask gen --seed 1`, corpus models are imported with `import::import_ttir`."
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| input | ops | chains (completed) | (a) from scratch: cost / + final IR | (b) one override, median (max) | ratio a/b | cost alone after (b) | ratio | (b') same op again | ratio a/b' | (c) no change / whitespace edit | (d) hover after edit | (e) tuning candidates/s | from scratch/s | ratio | peak RSS after (a) / at end |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (spec, m) in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} ({}) | {} / {} | {} ({}) | {:.0}x | {} | {:.0}x | {} | {:.0}x | {} / {} | {} | {:.1} | {:.2} | {:.0}x | {} / {} MiB |",
            spec.name,
            m.ops,
            m.chains,
            m.chains_completed,
            fmt_secs(m.scratch_cost),
            fmt_secs(m.scratch_total),
            fmt_secs(m.one_override_median),
            fmt_secs(m.one_override_max),
            m.override_ratio(),
            fmt_secs(m.cost_override_median),
            m.cost_ratio(),
            fmt_secs(m.again_median),
            m.again_ratio(),
            fmt_secs(m.noop),
            fmt_secs(m.whitespace),
            fmt_secs(m.hover_after_edit),
            m.candidates_per_s(),
            1.0 / m.scratch_cost.max(1e-9),
            m.tune_ratio(),
            m.peak_after_scratch / 1024,
            m.peak / 1024,
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "Targets, checked against the figures above:\n");
    for (spec, m) in results {
        if m.ops >= 9_000 && m.ops < 90_000 {
            let _ = writeln!(
                s,
                "- {}: {} chains; one override: the plan's cost {:.0}x cheaper than from scratch (target 1000x: {}), the re-optimized IR {:.0}x (target 100x: {}; {:.0}x for an op overridden before); tuning {:.0}x the candidates per second of optimizing from scratch (target 100x: {}).",
                spec.name,
                m.chains,
                m.cost_ratio(),
                met(m.cost_ratio() >= 1000.0),
                m.override_ratio(),
                met(m.override_ratio() >= 100.0),
                m.again_ratio(),
                m.tune_ratio(),
                met(m.tune_ratio() >= 100.0),
            );
        }
        if m.ops >= 90_000 {
            let _ = writeln!(
                s,
                "- {}: peak resident set {} MiB after optimizing from scratch (target under 2048 MiB: {}).",
                spec.name,
                m.peak_after_scratch / 1024,
                met(m.peak_after_scratch < 2048 * 1024),
            );
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Columns: (a) a fresh host with the file set, `Analysis::cost`, then `final_ir_for` on top; (b) `set_override` on one op (a legal layout other than the planned one), then `cost` and `final_ir_for`, over up to {OVERRIDE_OPS} ops spread over the graph; ratio a/b is (a) with the final IR over the median of (b); the cost alone is the median time from `set_override` to `cost`, and its ratio is the cost of (a) over it; (b') the same overrides again, one op at a time, after every one of them was set and cleared once (what a tuning loop that comes back to an op pays); (c) `final_ir_for` and `cost` asked again without a change, and after appending a space to the file; (d) renaming one op's `loc` and hovering over its result; (e) random legal layouts on those ops through `set_override`, `cost` and a revert, the `tune` command's loop, against a fresh host and `cost` per candidate (the first figure of (a)); ratio is (e) over from scratch."
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_the_bench_section_keeps_the_others_byte_for_byte() {
        let doc = "# Performance\n\n## Op model throughput\n\nold a\n\n## Optimizer and tuning benchmarks\n\nold\n\n## Later\n\nkept\n";
        let new = replace_section(doc, HEADING, "## Optimizer and tuning benchmarks\n\nnew\n");
        assert_eq!(
            new,
            "# Performance\n\n## Op model throughput\n\nold a\n\n## Optimizer and tuning benchmarks\n\nnew\n\n## Later\n\nkept\n"
        );
        let appended = replace_section(
            "# Performance\n\n## A\n\na\n",
            HEADING,
            "## Optimizer and tuning benchmarks\n\nx\n",
        );
        assert_eq!(
            appended,
            "# Performance\n\n## A\n\na\n\n## Optimizer and tuning benchmarks\n\nx\n"
        );
    }

    #[test]
    fn measured_figures_survive_the_trip_through_the_child_process() {
        let m = Measured {
            ops: 10,
            chains: 3,
            chains_completed: 2,
            scratch_cost: 0.5,
            scratch_total: 0.75,
            peak_after_scratch: 2048,
            one_override_median: 0.01,
            one_override_max: 0.02,
            one_override_n: 5,
            cost_override_median: 0.0005,
            again_median: 0.005,
            noop: 1e-5,
            whitespace: 2e-3,
            hover_after_edit: 3e-3,
            tune_candidates: 40,
            tune_secs: 2.0,
            peak: 4096,
        };
        let back = Measured::parse(&format!("noise\n{}", m.lines())).expect("parses");
        assert_eq!(back.lines(), m.lines());
        assert_eq!(back.override_ratio(), 75.0);
        assert_eq!(back.cost_ratio(), 1000.0);
        assert_eq!(back.again_ratio(), 150.0);
        assert_eq!(back.tune_ratio(), 10.0);
        assert!(Measured::parse("bench ops 3\n").is_err(), "missing figures are an error");
    }
}
