//! `cargo xtask fuzz --commands LIST`: the mutation fuzzer driven through what each CLI
//! command does, in-process, with a time and a memory cap per run.
//!
//! A run picks a command, mutates a corpus file (and, where the command reads them, an
//! overrides text and a target file) and calls the analysis the way the command does:
//!
//! - `check`: every diagnostic of the file, with its line and column;
//! - `fmt`: the formatted text, which must parse without errors;
//! - `optimize` and `optimize-merge`: the error gate, override diagnostics, the plan report
//!   and the final IR under `df-sharding` and `df-sharding-merge`;
//! - `report`: `verify::evaluate` with its table and summary;
//! - `compare`: what `report --compare` computes: the input verified, then per policy the
//!   final IR, plan, cost and the final IR verified again;
//! - `import`: `import::import_ttir`, whose error-free output must parse without errors;
//! - `session`: a handful of request lines, some of them mutated, through
//!   `cli::protocol::Session::answer` (the whole protocol, bytes in and JSON out);
//! - `tune`: tune's evaluation step with a budget of three candidates (layouts from
//!   `op_layouts`, `set_override`, `cost`, `final_ir_for` and the verifier).
//!
//! Rendering of human diagnostics and file output are not driven: they belong to the binary.
//! A run longer than [`SLOW`] or whose allocations peak above [`BIG`] is a finding, as is a
//! panic. Peak allocation is counted per thread by the xtask's global allocator
//! ([`crate::alloc`]), reset at the start of each run.

use std::{panic::AssertUnwindSafe, time::Duration};

use ide::{AnalysisHost, Change, HostConfig, HostMode, Options, OverrideOption, Policy, Severity};

use crate::util::Rng;

/// A run over this is flagged.
pub(crate) const SLOW: Duration = Duration::from_secs(10);
/// A run whose allocations peak over this is flagged.
pub(crate) const BIG: u64 = 2 << 30;

/// One CLI command the fuzzer can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Check,
    Fmt,
    Optimize,
    OptimizeMerge,
    Report,
    Compare,
    Import,
    Session,
    Tune,
}

impl Command {
    pub(crate) const ALL: [Command; 9] = [
        Command::Check,
        Command::Fmt,
        Command::Optimize,
        Command::OptimizeMerge,
        Command::Report,
        Command::Compare,
        Command::Import,
        Command::Session,
        Command::Tune,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Command::Check => "check",
            Command::Fmt => "fmt",
            Command::Optimize => "optimize",
            Command::OptimizeMerge => "optimize-merge",
            Command::Report => "report",
            Command::Compare => "compare",
            Command::Import => "import",
            Command::Session => "session",
            Command::Tune => "tune",
        }
    }

    /// `all`, or a comma-separated list of names.
    pub(crate) fn parse_list(s: &str) -> anyhow::Result<Vec<Command>> {
        if s == "all" {
            return Ok(Command::ALL.to_vec());
        }
        s.split(',')
            .map(|n| {
                Command::ALL.into_iter().find(|c| c.name() == n.trim()).ok_or_else(|| {
                    let names: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
                    anyhow::format_err!(
                        "unknown command `{n}` for --commands: expected `all` or some of {}",
                        names.join(", ")
                    )
                })
            })
            .collect()
    }
}

/// What one run was given besides the IR text.
pub(crate) struct Extras {
    pub(crate) overrides: String,
    /// The target file's text, when the run uses one (`None`: the builtin n150).
    pub(crate) target: Option<String>,
    /// Session request lines after the `open`.
    pub(crate) requests: Vec<Vec<u8>>,
}

/// Builds the extra inputs of a run from the IR text: override entries for ops it names and
/// requests about them, each mutated now and then.
pub(crate) fn extras(rng: &mut Rng, text: &str) -> Extras {
    let names = loc_names(text, 8);
    let name = |rng: &mut Rng| -> String {
        if names.is_empty() || rng.chance(10) {
            rng.pick(&["x", "%0", "@main:%1", "a=b", "", "ffn.act"]).to_owned()
        } else {
            names[rng.below(names.len())].clone()
        }
    };
    let mut overrides = String::new();
    for _ in 0..rng.below(4) {
        let option = rng.pick(&[
            "override-output-layout",
            "override-conv2d-config",
            "insert-memreconfig",
            "max-legal-layouts",
            "row-major-enabled",
        ]);
        let line = match option {
            "max-legal-layouts" => {
                format!("max-legal-layouts={}", rng.pick(&["0", "1", "8", "64"]))
            }
            "row-major-enabled" => "row-major-enabled=true".to_owned(),
            _ => format!("{option}={}={}", name(rng), rng.pick(PARAMS)),
        };
        overrides.push_str(&line);
        overrides.push('\n');
    }
    if rng.chance(30) {
        overrides = mutate_text(rng, &overrides);
    }
    let target = rng.chance(20).then(|| {
        let base = rng.pick(&["n150", "n300", "p150"]);
        let t = format!(
            "base = \"{base}\"\nworker_grid = {{ rows = {}, cols = {} }}\nl1_size = {}\n",
            rng.pick(&["1", "2", "8", "10"]),
            rng.pick(&["1", "3", "8", "13"]),
            rng.pick(&["1499136", "65536", "1048576"]),
        );
        if rng.chance(30) { mutate_text(rng, &t) } else { t }
    });
    let mut requests = Vec::new();
    for _ in 0..1 + rng.below(6) {
        let op = name(rng);
        let req = match rng.below(12) {
            0 => serde_json::json!({"cmd": "diagnostics"}),
            1 => serde_json::json!({"cmd": "layouts", "op": op}),
            2 => serde_json::json!({"cmd": "set_override", "op": op, "params": rng.pick(PARAMS)}),
            3 => serde_json::json!({"cmd": "clear_override", "op": op}),
            4 => {
                serde_json::json!({"cmd": "cost", "policy": rng.pick(&["df-sharding", "df-sharding-merge"])})
            }
            5 => serde_json::json!({"cmd": "optimize", "text": rng.chance(50)}),
            6 => serde_json::json!({"cmd": "plan"}),
            7 => {
                serde_json::json!({"cmd": "batch", "sets": [[{"op": op, "params": rng.pick(PARAMS)}], []]})
            }
            8 => serde_json::json!({"cmd": "set_overrides", "text": overrides}),
            9 => {
                let (l0, c0) = (rng.below(40), rng.below(80));
                let (l1, c1) = (l0 + rng.below(3), rng.below(120));
                serde_json::json!({"cmd": "edit", "range": {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}, "text": rng.pick(&["", "%0", "\"ttnn.relu\"", "}", "\u{1F600}"])})
            }
            10 => serde_json::json!({"cmd": "stats", "detail": rng.chance(50)}),
            _ => {
                serde_json::json!({"cmd": "set_policy", "policy": rng.pick(&["df-sharding", "df-sharding-merge", "greedy"])})
            }
        };
        let mut line = req.to_string().into_bytes();
        if rng.chance(25) {
            line = crate::fuzz::mutate_bytes(rng, &line, REQUEST_TOKENS);
        }
        requests.push(line);
    }
    Extras { overrides, target, requests }
}

/// Params of each override option, well-formed and not.
const PARAMS: &[&str] = &[
    "dram:interleaved",
    "l1:interleaved",
    "l1:block_sharded",
    "8x8:l1:block_sharded:tile:bf16",
    "1x1:l1:height_sharded:row_major:f32",
    "0x0:l1:block_sharded",
    "4294967295x4294967295:l1:width_sharded",
    "act_block_h_override#32:enable_act_double_buffer#true",
    "0:1",
    "1",
    "",
    "l1",
    "bogus",
];

const REQUEST_TOKENS: &[&str] = &[
    "\"", "\\", "{", "}", "[", "]", ",", ":", "null", "true", "-1", "1e999", "\\n", "\\u0000", "\n",
];

/// The first `max` distinct `loc("...")` names of the text.
fn loc_names(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("loc(\"") {
        rest = &rest[i + 5..];
        let Some(end) = rest.find('"') else { break };
        let n = &rest[..end];
        if !n.is_empty() && n.len() < 200 && !out.iter().any(|o| o == n) {
            out.push(n.to_owned());
            if out.len() >= max {
                break;
            }
        }
    }
    out
}

fn mutate_text(rng: &mut Rng, text: &str) -> String {
    let bytes = crate::fuzz::mutate_bytes(rng, text.as_bytes(), crate::fuzz::TOKENS);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `command` on one input. `Err` is an invariant violation; a panic propagates.
pub(crate) fn run(command: Command, text: &str, extras: &Extras) -> Result<(), String> {
    let target = match &extras.target {
        // A target the CLI would refuse ends that run before any analysis.
        Some(t) => match target::Target::from_toml_str(t) {
            Ok(t) => t,
            Err(_) => return Ok(()),
        },
        None => target::Target::n150(),
    };
    match command {
        Command::Check => {
            let (host, file) = host(target, Policy::DfShardingMerge, text, "", HostMode::Editor);
            let a = host.analysis();
            let diags = a.diagnostics(file).map_err(|_| "cancelled")?;
            for d in &diags {
                let lc = a.line_col(file, d.range.start).map_err(|_| "cancelled")?;
                std::hint::black_box(lc);
                if d.range.end < d.range.start || d.range.end as usize > text.len() {
                    return Err(format!(
                        "diagnostic `{}` has range {:?} outside the text",
                        d.code, d.range
                    ));
                }
            }
        }
        Command::Fmt => {
            let (host, file) = host(target, Policy::DfShardingMerge, text, "", HostMode::Editor);
            if let Some(out) = host.analysis().format(file).map_err(|_| "cancelled")? {
                let reparsed = syntax::parse(&out);
                if let Some(e) = reparsed.errors.first() {
                    return Err(format!(
                        "`fmt` output has a syntax error: {}: {}",
                        e.code, e.message
                    ));
                }
            }
        }
        Command::Optimize | Command::OptimizeMerge => {
            let policy = if command == Command::Optimize {
                Policy::DfSharding
            } else {
                Policy::DfShardingMerge
            };
            let (host, file) = host(target, policy, text, &extras.overrides, HostMode::Editor);
            let a = host.analysis();
            if has_errors(&host, file)? {
                return Ok(());
            }
            let od = a.override_diagnostics(&[file]).map_err(|_| "cancelled")?;
            if od.on_overrides.iter().any(|d| d.severity == Severity::Error) {
                return Ok(());
            }
            std::hint::black_box(a.plan_report(file).map_err(|_| "cancelled")?);
            let ir = a.final_ir(file).map_err(|_| "cancelled")?;
            std::hint::black_box(ir);
        }
        Command::Report => {
            let report = verify::evaluate(text, &target, &opmodel::AnalyticalModel);
            std::hint::black_box(verify::render_table(&report));
            std::hint::black_box(verify::render_summary(&report));
        }
        Command::Compare => {
            let model = opmodel::AnalyticalModel;
            std::hint::black_box(verify::evaluate(text, &target, &model));
            let (host, file) =
                host(target.clone(), Policy::DfShardingMerge, text, "", HostMode::Editor);
            if has_errors(&host, file)? {
                return Ok(());
            }
            let a = host.analysis();
            for policy in [Policy::DfSharding, Policy::DfShardingMerge] {
                let ir = a.final_ir_for(file, policy).map_err(|_| "cancelled")?;
                std::hint::black_box(a.plan_report(file).map_err(|_| "cancelled")?);
                std::hint::black_box(a.cost(file, policy).map_err(|_| "cancelled")?);
                std::hint::black_box(verify::evaluate(&ir.text, &target, &model));
            }
        }
        Command::Import => {
            let result = import::import_ttir(text, "fuzz.mlir");
            if !result.has_errors() {
                let reparsed = syntax::parse(&result.ttnn);
                if let Some(e) = reparsed.errors.first() {
                    return Err(format!(
                        "an error-free import printed text with a syntax error: {}: {}",
                        e.code, e.message
                    ));
                }
            }
        }
        Command::Session => {
            let mut s = cli::protocol::Session::new(target, Policy::DfShardingMerge);
            let open = serde_json::json!({"cmd": "open", "name": "fuzz.mlir", "text": text});
            let lines = std::iter::once(open.to_string().into_bytes())
                .chain(extras.requests.iter().cloned());
            for line in lines {
                if let Some((reply, stop)) = s.answer(&line) {
                    if serde_json::from_str::<serde_json::Value>(&reply).is_err() {
                        return Err(format!("a session reply is not JSON: {reply}"));
                    }
                    if stop {
                        break;
                    }
                }
            }
        }
        Command::Tune => {
            let policy = Policy::DfShardingMerge;
            let (mut host, file) =
                host(target.clone(), policy, text, &extras.overrides, HostMode::Tuning);
            if has_errors(&host, file)? {
                return Ok(());
            }
            let report = host.analysis().plan_report(file).map_err(|_| "cancelled")?;
            let mut budget = 3;
            for d in report.ops.iter().take(3) {
                let Some(l) = host.analysis().op_layouts(file, &d.op).map_err(|_| "cancelled")?
                else {
                    continue;
                };
                let Some(params) = l.layouts.iter().rev().find_map(ide::full_layout_params) else {
                    continue;
                };
                host.set_override(&d.op, OverrideOption::OutputLayout, &params);
                std::hint::black_box(host.analysis().cost(file, policy).map_err(|_| "cancelled")?);
                let ir = host.analysis().final_ir_for(file, policy).map_err(|_| "cancelled")?;
                std::hint::black_box(verify::evaluate(
                    &ir.text,
                    &target,
                    &opmodel::AnalyticalModel,
                ));
                budget -= 1;
                if budget == 0 {
                    break;
                }
            }
        }
    }
    Ok(())
}

fn host(
    target: target::Target,
    policy: Policy,
    text: &str,
    overrides: &str,
    mode: HostMode,
) -> (AnalysisHost, base_db::SourceFile) {
    let mut host = AnalysisHost::with_config(
        target,
        Options { policy, ..Options::tt_mlir_defaults() },
        HostConfig { mode, query_log: false },
    );
    host.apply_change(
        Change::new()
            .set_file("fuzz.mlir", text.to_owned())
            .set_overrides("<fuzz>", overrides.to_owned()),
    );
    // The file was set just above, so the host has it.
    let file = host.file("fuzz.mlir");
    (host, file.unwrap_or_else(|| unreachable!("the file was just set")))
}

/// True when the file has error diagnostics, which make `optimize` and `tune` refuse it.
fn has_errors(host: &AnalysisHost, file: base_db::SourceFile) -> Result<bool, String> {
    let diags = host.analysis().diagnostics(file).map_err(|_| "cancelled")?;
    Ok(diags.iter().any(|d| d.severity == Severity::Error))
}

/// Runs `f`, returning its result, its wall time and the peak bytes it had allocated at once.
pub(crate) fn measured<T>(f: impl FnOnce() -> T) -> (std::thread::Result<T>, Duration, u64) {
    crate::alloc::reset_peak();
    let started = std::time::Instant::now();
    let out = std::panic::catch_unwind(AssertUnwindSafe(f));
    (out, started.elapsed(), crate::alloc::peak())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::r#gen::{GraphKind, generate};

    #[test]
    fn every_command_accepts_a_clean_graph_and_broken_text_alike() {
        let clean = generate(20, 3, GraphKind::Mixed);
        for text in [clean.as_str(), "func.func @f( {{{ \u{fffd} \"ttnn.matmul\"(%a) :", ""] {
            let extras = extras(&mut Rng::new(7), text);
            for c in Command::ALL {
                assert_eq!(run(c, text, &extras), Ok(()), "{} on {text:.40?}", c.name());
            }
        }
    }

    #[test]
    fn a_run_reports_the_peak_it_allocated_not_what_it_freed_before() {
        let before = vec![0u8; 64 << 20];
        drop(before);
        let (out, _, peak) = measured(|| std::hint::black_box(vec![1u8; 8 << 20]).len());
        assert_eq!(out.ok(), Some(8 << 20));
        assert!((8 << 20..16 << 20).contains(&peak), "peak {peak}");
    }

    #[test]
    fn command_lists_are_all_or_names() {
        assert_eq!(Command::parse_list("all").map(|c| c.len()).ok(), Some(9));
        assert_eq!(
            Command::parse_list("check,tune").ok(),
            Some(vec![Command::Check, Command::Tune])
        );
        assert!(Command::parse_list("check,nope").is_err());
    }
}
