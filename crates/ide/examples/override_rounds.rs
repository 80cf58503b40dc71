//! One override at a time on a tuning host, the way `xtask bench` times it, for profiling:
//! open a graph, then for each of up to 20 ops spread over it set an output-layout override
//! to a legal layout other than the planned one, ask for the cost, clear it and ask again,
//! `ROUNDS` times over.
//!
//! Allocates with mimalloc, as the `ttnn-analyzer` binary and `xtask bench` do, so that
//! a profile of it shows the allocator they run with.
//!
//! Prints the median (and least, which a shared machine's load disturbs least) time from
//! `set_override` to the cost, and (with `QUERIES=1`, which
//! slows every step) the queries executed per set-and-cost step, averaged over the steps;
//! with `VALIDATED=1` as well, the memos salsa re-validated without running them.
//! `CHUNK_OPS=N` sets the option `plan_chunk_ops`; `OPS=N` overrides N ops (default 20);
//! `PER_STEP=1` prints each step's op and time; `IR=1` asks for the optimized IR after the
//! cost in each step and after each clear, as `xtask bench` does (the time stays the cost's:
//! the IR in between leaves the caches as a tuning loop that reads the IR leaves them).
//!
//! ```text
//! cargo run --release -p ide --example override_rounds -- FILE [ROUNDS]
//! perf record -F 499 -g --call-graph dwarf target/release/examples/override_rounds FILE 5
//! ```

#![expect(clippy::disallowed_methods, reason = "an example program: it reads the file it is given")]

use std::{collections::BTreeMap, io::Write as _, process::ExitCode, time::Instant};

use ide::{AnalysisHost, Change, HostConfig, HostMode, Options, OverrideOption, Policy};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        let _ = writeln!(std::io::stderr(), "usage: override_rounds FILE [ROUNDS]");
        return ExitCode::from(2);
    };
    let rounds = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    match run(&path, rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(path: &str, rounds: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let out = &mut std::io::stdout().lock();
    let policy = Policy::DfShardingMerge;
    let queries = std::env::var_os("QUERIES").is_some();
    let validated = queries && std::env::var_os("VALIDATED").is_some();
    let per_step = std::env::var_os("PER_STEP").is_some();
    let with_ir = std::env::var_os("IR").is_some();
    let config = HostConfig { mode: HostMode::Tuning, query_log: queries };
    let mut options = Options::tt_mlir_defaults();
    if let Some(n) = std::env::var("CHUNK_OPS").ok().and_then(|n| n.parse().ok()) {
        options.plan_chunk_ops = n;
    }
    let mut host = AnalysisHost::with_config(target::Target::n150(), options, config);
    host.apply_change(Change::new().set_file(path, text));
    let file = host.file(path).ok_or("the file was not loaded")?;
    let started = Instant::now();
    let _ = host.analysis().cost(file, policy).map_err(|_| "cancelled")?;
    let scratch = started.elapsed().as_secs_f64();
    let report = host.analysis().plan_report(file).map_err(|_| "cancelled")?;
    let mut movable: Vec<(String, String)> = Vec::new();
    {
        let analysis = host.analysis();
        let step = (report.ops.len() / 400).max(1);
        for d in report.ops.iter().step_by(step) {
            let Some(l) = analysis.op_layouts(file, &d.op).map_err(|_| "cancelled")? else {
                continue;
            };
            if l.fixed {
                continue;
            }
            let other = l.layouts.iter().find(|c| Some(*c) != d.planned.as_ref());
            if let Some(params) = other.and_then(ide::full_layout_params) {
                movable.push((d.op.clone(), params));
            }
        }
    }
    let n = std::env::var("OPS").ok().and_then(|n| n.parse().ok()).unwrap_or(20usize);
    let pick: Vec<_> = (0..movable.len().min(n))
        .map(|i| &movable[i * movable.len() / movable.len().min(n)])
        .collect();
    let _ = host.take_executed_queries();
    host.set_validation_log(validated);
    let _ = host.take_validated_counts();
    let mut times = Vec::new();
    let mut executed: BTreeMap<String, usize> = BTreeMap::new();
    let mut checked: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..rounds {
        for (op, params) in &pick {
            let started = Instant::now();
            host.set_override(op, OverrideOption::OutputLayout, params);
            let _ = host.analysis().cost(file, policy).map_err(|_| "cancelled")?;
            times.push(started.elapsed().as_secs_f64());
            if with_ir {
                let _ = host.analysis().final_ir_for(file, policy).map_err(|_| "cancelled")?;
            }
            if per_step {
                let _ = writeln!(out, "step {op} {:.3} ms", started.elapsed().as_secs_f64() * 1e3);
            }
            for q in host.take_executed_queries() {
                *executed.entry(q.split('(').next().unwrap_or(&q).to_owned()).or_default() += 1;
            }
            for (name, n) in host.take_validated_counts() {
                *checked.entry(name).or_default() += n;
            }
            host.clear_override(op, None);
            if with_ir {
                let _ = host.analysis().final_ir_for(file, policy).map_err(|_| "cancelled")?;
            }
            let _ = host.analysis().cost(file, policy).map_err(|_| "cancelled")?;
            let _ = host.take_executed_queries();
            let _ = host.take_validated_counts();
        }
    }
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    let _ = writeln!(
        out,
        "cost from scratch {:.1} ms; {} steps, set + cost median {:.2} ms ({:.0}x), min {:.2} ms, max {:.2} ms",
        scratch * 1e3,
        times.len(),
        median * 1e3,
        scratch / median.max(1e-9),
        times.first().copied().unwrap_or(0.0) * 1e3,
        times.last().copied().unwrap_or(0.0) * 1e3
    );
    if queries {
        let total: usize = executed.values().sum();
        let _ = writeln!(out, "executed per step: {:.1}", total as f64 / times.len().max(1) as f64);
        for (name, n) in &executed {
            let _ = writeln!(out, "  {name} {:.2}", *n as f64 / times.len().max(1) as f64);
        }
    }
    if validated {
        let total: u64 = checked.values().sum();
        let steps = times.len().max(1) as f64;
        let _ = writeln!(out, "re-validated per step: {:.1}", total as f64 / steps);
        for (name, n) in &checked {
            let _ = writeln!(out, "  {name} {:.2}", *n as f64 / steps);
        }
    }
    Ok(())
}
