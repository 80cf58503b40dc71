//! `tune`: a seeded local search over per-op overrides that lowers the plan's estimated cost.
//!
//! The search runs on one `AnalysisHost`: every candidate is an override edit
//! (`set_override`, `clear_override`), the cost is asked for again, and salsa re-derives only
//! what the edit affects. A candidate is kept when it lowers the cost, else reverted.
//!
//! - **Start**: the default plan (no overrides), whose cost is the baseline.
//! - **Moves** per op, computed once from the op's legal layouts without overrides: each
//!   legal layout as a full `override-output-layout` (grid, buffer, memory layout, page
//!   layout and data type: exactly that layout), each (buffer, memory layout) kind as a
//!   partial one (the optimizer still picks grid and shard), conv2d's `act_block_h_override`
//!   values, and removing the op's override.
//! - **Local search**: ops are visited in a seeded random order; at each op one move is drawn
//!   (first a kind of move, then a move of that kind) and kept if the cost drops.
//! - **Restarts**: after a pass over all ops without an improvement, the search goes back to
//!   the best overrides found and applies one to three random moves unconditionally.
//! - **Verification**: every new best is checked by the independent verifier on the final IR;
//!   a candidate whose plan has a violation the default plan does not have is rejected.
//! - **Budget**: `--budget N` candidate evaluations (a restart's perturbation counts as one),
//!   `--time-limit`, or Ctrl-C, which finishes the current evaluation and keeps the best.
//!
//! The PRNG is SplitMix64 seeded by `--seed`, so a run is reproducible: the same seed and
//! budget give the same overrides (unless a time limit or Ctrl-C cuts it short).

use std::{
    collections::BTreeMap,
    io::{IsTerminal as _, Write as _},
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;
use ide::{AnalysisHost, Change, Options, OverrideOption, Policy, Severity};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{common, input, output, render};

#[derive(Args)]
pub(crate) struct TuneArgs {
    /// The TTNN file to tune; it is never modified.
    file: Utf8PathBuf,
    /// Candidate evaluations to spend.
    #[arg(long)]
    budget: u64,
    /// Seeds the search; the same seed and budget give the same overrides.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// `df-sharding`, `df-sharding-merge` or `greedy`.
    #[arg(long, default_value = "df-sharding-merge")]
    policy: String,
    /// A builtin target (n150, n300, p150) or a target description file (TOML or JSON).
    #[arg(long)]
    target: Option<String>,
    /// Where to write the best overrides (default: `<stem>.tuned.overrides` next to the input).
    #[arg(short = 'o', long = "output")]
    output: Option<Utf8PathBuf>,
    /// Replace the default output `<stem>.tuned.overrides` if it exists (an output named
    /// with `-o` is always replaced).
    #[arg(long)]
    force: bool,
    /// Stop after this many seconds, keeping the best result found.
    #[arg(long = "time-limit", value_name = "SECS")]
    time_limit: Option<f64>,
}

/// One candidate edit of one op's overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Move {
    /// `override-output-layout` with all fields: exactly one legal layout.
    Full(String),
    /// `override-output-layout` with buffer type and memory layout only.
    Partial(String),
    /// `override-conv2d-config=...=act_block_h_override#N`.
    ActBlockH(u64),
    /// Remove the op's overrides.
    Clear,
}

/// An op the search may move, with its moves by kind.
struct Tunable {
    name: String,
    full: Vec<String>,
    partial: Vec<String>,
    act_block_h: Vec<u64>,
}

/// The overrides the search has set on one op.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct OpState {
    layout: Option<String>,
    conv: Option<String>,
}

/// All overrides of a search state, by op name (sorted, so rendering is deterministic).
type State = BTreeMap<String, OpState>;

/// A violation, as the verifier classifies it, at a named op.
type ViolationKey = (String, String, String);

struct Search<'a> {
    host: AnalysisHost,
    file: base_db::SourceFile,
    policy: Policy,
    target: &'a target::Target,
    origin: String,
    rng: SplitMix64,
    /// Violations of the default plan: a candidate may keep these, never add one.
    reference: BTreeMap<ViolationKey, usize>,
    evaluations: u64,
    improvements: u64,
    restarts: u64,
    rejected_by_verifier: u64,
    verifications: u64,
    verify_time: Duration,
}

pub(crate) fn tune(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    // Installed first, so Ctrl-C at any point (even while the file loads) ends the run
    // cleanly: the search then stops before its next candidate and writes the best so far.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        if let Err(e) = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst)) {
            tracing::warn!("Ctrl-C will not stop the search cleanly: {e}");
        }
    }
    let policy = Policy::from_name(&args.policy).ok_or_else(|| {
        anyhow::format_err!(
            "unknown policy `{}`: expected `df-sharding`, `df-sharding-merge` or `greedy`",
            args.policy
        )
    })?;
    let time_limit = args.time_limit.map(time_limit).transpose()?;
    let output = match &args.output {
        Some(o) => o.clone(),
        None => default_output(&args.file),
    };
    let mut inputs = vec![args.file.as_path()];
    inputs.extend(common::target_file(args.target.as_deref()));
    output::ensure_not_an_input(&output, &inputs)?;
    // The default output was not named by the user: a previous tuning result there is only
    // replaced when asked to. Checked now, not after a search of minutes.
    if args.output.is_none() && !args.force && std::fs::symlink_metadata(&output).is_ok() {
        anyhow::bail!(
            "`{output}` exists (a previous tuning result?); pass `--force` to replace it, or \
             `-o` to write elsewhere"
        );
    }
    let target = common::load_target(args.target.as_deref())?;
    let input = input::read(&args.file)?;
    let options = Options { policy, ..Options::tt_mlir_defaults() };
    let mut host = AnalysisHost::for_tuning(target.clone(), options);
    let origin = output.to_string();
    host.apply_change(
        Change::new()
            .set_file(input.path.clone(), input.text.clone())
            .set_overrides(origin.clone(), ""),
    );
    let file = host.file(&input.path).context("the file was not loaded")?;
    let cancelled = |_| anyhow::format_err!("analysis was cancelled");

    // Tuning broken input would tune a program that does not exist.
    let mut diags: Vec<ide::Diagnostic> = input.encoding_error.iter().cloned().collect();
    diags.extend(
        host.analysis()
            .diagnostics(file)
            .map_err(cancelled)?
            .into_iter()
            .filter(|d| d.severity == Severity::Error),
    );
    if !diags.is_empty() {
        let mut stderr = std::io::stderr().lock();
        let _ = render::human(&input.path, &input.text, &diags, &mut stderr);
        let _ = writeln!(stderr, "not tuning `{}`: it has errors", input.path);
        return Ok(ExitCode::from(1));
    }

    let started = Instant::now();
    let baseline = host.analysis().cost(file, policy).map_err(cancelled)?;
    let default_ir = host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
    let model = opmodel::AnalyticalModel;
    let written_report = verify::evaluate(&input.text, &target, &model);
    let default_report = verify::evaluate(&default_ir.text, &target, &model);
    let tunables = tunables(&host, file)?;

    let progress = progress_bar(args.budget);

    let mut search = Search {
        host,
        file,
        policy,
        target: &target,
        origin,
        rng: SplitMix64::new(args.seed),
        reference: violation_keys(&default_report),
        evaluations: 0,
        improvements: 0,
        restarts: 0,
        rejected_by_verifier: 0,
        verifications: 0,
        verify_time: Duration::ZERO,
    };
    // Bounded by `MAX_TIME_LIMIT_SECS`, so the addition cannot overflow; if it somehow did,
    // the budget alone would end the search.
    let deadline = time_limit.and_then(|t| started.checked_add(t));
    let search_started = Instant::now();
    let (best_state, best_cost, stopped_by) =
        search.run(&tunables, baseline.total_ns, args.budget, deadline, &stop, &progress)?;
    let search_secs = search_started.elapsed().as_secs_f64();
    progress.finish_and_clear();

    // The result: the best overrides, re-applied, costed and verified once more.
    let text = render_overrides(&best_state);
    search.host.apply_change(Change::new().set_overrides(search.origin.clone(), text.clone()));
    let tuned = search.host.analysis().cost(file, policy).map_err(cancelled)?;
    let tuned_ir = search.host.analysis().final_ir_for(file, policy).map_err(cancelled)?;
    let tuned_report = verify::evaluate(&tuned_ir.text, &target, &model);
    let new_violations = new_violations(&search.reference, &tuned_report);
    if tuned.total_ns != best_cost {
        // The cost is a pure function of the inputs; a difference would be a planner bug.
        tracing::warn!(
            "the best overrides cost {} ns when re-applied, {best_cost} ns during the search",
            tuned.total_ns
        );
    }

    let header = format!(
        "# ttnn-analyzer tune {} --budget {} --seed {} --policy {}\n# estimated time: {} ns with no overrides, {} ns with these ({})\n",
        args.file,
        args.budget,
        args.seed,
        policy.name(),
        baseline.total_ns,
        tuned.total_ns,
        percent(baseline.total_ns, tuned.total_ns),
    );
    output::write_file(&output, format!("{header}{text}").as_bytes())?;

    let per_s = if search_secs > 0.0 { search.evaluations as f64 / search_secs } else { 0.0 };
    // Collected first (writes to a Vec cannot fail), then written at once: a failed write to
    // stdout is an error, and the overrides file is already in place.
    let mut out = Vec::new();
    let _ = writeln!(
        out,
        "tune {}: policy {}, seed {}, budget {}, {} tunable ops",
        args.file,
        policy.name(),
        args.seed,
        args.budget,
        tunables.len()
    );
    let _ = writeln!(out, "baseline (no overrides): {} ns", baseline.total_ns);
    let _ = writeln!(
        out,
        "tuned:                   {} ns ({} vs. baseline; IR as written {} ns, lower bound {} ns)",
        tuned.total_ns,
        percent(baseline.total_ns, tuned.total_ns),
        tuned.written_ns,
        tuned.lower_bound_ns
    );
    let _ = writeln!(
        out,
        "evaluations: {} in {:.2} s ({:.1} candidates/s); {} improvements, {} restarts, {} rejected by the verifier{}",
        search.evaluations,
        search_secs,
        per_s,
        search.improvements,
        search.restarts,
        search.rejected_by_verifier,
        match stopped_by {
            Stop::Budget => String::new(),
            Stop::TimeLimit => "; stopped by the time limit".to_owned(),
            Stop::Interrupted => "; interrupted, keeping the best found".to_owned(),
            Stop::NothingToTune => "; nothing to tune".to_owned(),
        }
    );
    let _ = writeln!(
        out,
        "verifier violations: {} in the IR as written, {} in the default plan, {} in the tuned plan ({} new); {} checks took {:.2} s",
        written_report.violations,
        default_report.violations,
        tuned_report.violations,
        new_violations,
        search.verifications + 1,
        search.verify_time.as_secs_f64(),
    );
    let entries: usize = best_state
        .values()
        .map(|s| usize::from(s.layout.is_some()) + usize::from(s.conv.is_some()))
        .sum();
    let _ =
        writeln!(out, "wrote {output} ({entries} override{})", if entries == 1 { "" } else { "s" });
    output::write_stdout(&out)?;
    Ok(if new_violations == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Budget,
    TimeLimit,
    Interrupted,
    NothingToTune,
}

impl Search<'_> {
    /// The search loop. Returns the best state, its cost, and why it stopped.
    fn run(
        &mut self,
        tunables: &[Tunable],
        baseline: u64,
        budget: u64,
        deadline: Option<Instant>,
        stop: &AtomicBool,
        progress: &ProgressBar,
    ) -> anyhow::Result<(State, u64, Stop)> {
        let mut state = State::new();
        let mut cost = baseline;
        let mut best = (state.clone(), cost);
        if tunables.is_empty() {
            return Ok((state, cost, Stop::NothingToTune));
        }
        let started = Instant::now();
        let mut order: Vec<usize> = (0..tunables.len()).collect();
        let stopped = 'search: loop {
            self.rng.shuffle(&mut order);
            let mut improved = false;
            for &t in &order {
                if let Some(why) = self.should_stop(budget, deadline, stop) {
                    break 'search why;
                }
                let tunable = &tunables[t];
                let current = state.get(&tunable.name).cloned().unwrap_or_default();
                let Some(mv) = self.draw_move(tunable, &current) else { continue };
                let next = apply_move(&current, &mv);
                self.set_op(&tunable.name, &current, &next);
                let c = self.cost()?;
                self.evaluations += 1;
                let mut keep = c < cost;
                if keep && c < best.1 {
                    // A new best must pass the verifier before anything builds on it.
                    keep = self.verified()?;
                    if !keep {
                        self.rejected_by_verifier += 1;
                    }
                }
                if keep {
                    set_state(&mut state, &tunable.name, next);
                    cost = c;
                    improved = true;
                    if c < best.1 {
                        self.improvements += 1;
                        best = (state.clone(), c);
                    }
                } else {
                    self.set_op(&tunable.name, &next, &current);
                }
                report(progress, self.evaluations, baseline, best.1, started);
            }
            if improved {
                continue;
            }
            // A local optimum: restart from the best with a few random moves.
            if let Some(why) = self.should_stop(budget, deadline, stop) {
                break why;
            }
            self.restarts += 1;
            state = best.0.clone();
            let kicks = 1 + self.rng.below(3);
            for _ in 0..kicks {
                let t = &tunables[self.rng.below(tunables.len())];
                let current = state.get(&t.name).cloned().unwrap_or_default();
                if let Some(mv) = self.draw_move(t, &current) {
                    set_state(&mut state, &t.name, apply_move(&current, &mv));
                }
            }
            self.host.apply_change(
                Change::new().set_overrides(self.origin.clone(), render_overrides(&state)),
            );
            cost = self.cost()?;
            self.evaluations += 1;
            report(progress, self.evaluations, baseline, best.1, started);
        };
        Ok((best.0, best.1, stopped))
    }

    fn should_stop(
        &self,
        budget: u64,
        deadline: Option<Instant>,
        stop: &AtomicBool,
    ) -> Option<Stop> {
        if stop.load(Ordering::SeqCst) {
            return Some(Stop::Interrupted);
        }
        if self.evaluations >= budget {
            return Some(Stop::Budget);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(Stop::TimeLimit);
        }
        None
    }

    fn cost(&self) -> anyhow::Result<u64> {
        let c = self.host.analysis().cost(self.file, self.policy);
        Ok(c.map_err(|_| anyhow::format_err!("analysis was cancelled"))?.total_ns)
    }

    /// True if the current plan has no violation the default plan does not have.
    fn verified(&mut self) -> anyhow::Result<bool> {
        let started = Instant::now();
        let ir = self.host.analysis().final_ir_for(self.file, self.policy);
        let ir = ir.map_err(|_| anyhow::format_err!("analysis was cancelled"))?;
        let report = verify::evaluate(&ir.text, self.target, &opmodel::AnalyticalModel);
        self.verifications += 1;
        self.verify_time += started.elapsed();
        Ok(new_violations(&self.reference, &report) == 0)
    }

    /// Draws a move for `t` that changes its current state: first a kind, then a move.
    fn draw_move(&mut self, t: &Tunable, current: &OpState) -> Option<Move> {
        let mut kinds: Vec<u8> = Vec::with_capacity(4);
        if !t.full.is_empty() {
            kinds.push(0);
        }
        if !t.partial.is_empty() {
            kinds.push(1);
        }
        if !t.act_block_h.is_empty() {
            kinds.push(2);
        }
        if *current != OpState::default() {
            kinds.push(3);
        }
        // A few draws: a kind may offer only the current value.
        for _ in 0..4 {
            let mv = match kinds.get(self.rng.below(kinds.len()))? {
                0 => Move::Full(t.full[self.rng.below(t.full.len())].clone()),
                1 => Move::Partial(t.partial[self.rng.below(t.partial.len())].clone()),
                2 => Move::ActBlockH(t.act_block_h[self.rng.below(t.act_block_h.len())]),
                _ => Move::Clear,
            };
            if apply_move(current, &mv) != *current {
                return Some(mv);
            }
        }
        None
    }

    /// Edits the host's overrides for one op from `from` to `to`, option by option, so only
    /// that op's entries change.
    fn set_op(&mut self, op: &str, from: &OpState, to: &OpState) {
        if from.layout != to.layout {
            match &to.layout {
                Some(p) => self.host.set_override(op, OverrideOption::OutputLayout, p),
                None => self.host.clear_override(op, Some(OverrideOption::OutputLayout)),
            }
        }
        if from.conv != to.conv {
            match &to.conv {
                Some(p) => self.host.set_override(op, OverrideOption::Conv2dConfig, p),
                None => self.host.clear_override(op, Some(OverrideOption::Conv2dConfig)),
            }
        }
    }
}

fn apply_move(current: &OpState, mv: &Move) -> OpState {
    match mv {
        Move::Full(p) | Move::Partial(p) => OpState { layout: Some(p.clone()), ..current.clone() },
        Move::ActBlockH(v) => {
            OpState { conv: Some(format!("act_block_h_override#{v}")), ..current.clone() }
        }
        Move::Clear => OpState::default(),
    }
}

fn set_state(state: &mut State, op: &str, s: OpState) {
    if s == OpState::default() {
        state.remove(op);
    } else {
        state.insert(op.to_owned(), s);
    }
}

/// The overrides text of a state: one entry per line, sorted by op name.
fn render_overrides(state: &State) -> String {
    let mut text = String::new();
    for (op, s) in state {
        if let Some(p) = &s.layout {
            text.push_str(&format!("override-output-layout={op}={p}\n"));
        }
        if let Some(p) = &s.conv {
            text.push_str(&format!("override-conv2d-config={op}={p}\n"));
        }
    }
    text
}

/// The ops the search may move and their moves, read once with no overrides set.
fn tunables(host: &AnalysisHost, file: base_db::SourceFile) -> anyhow::Result<Vec<Tunable>> {
    let cancelled = |_| anyhow::format_err!("analysis was cancelled");
    let analysis = host.analysis();
    let report = analysis.plan_report(file).map_err(cancelled)?;
    let mut out = Vec::new();
    for d in &report.ops {
        // tt-mlir splits override values on `,`, `=` and whitespace: such a name cannot be
        // an override key. Names must also be unique, or one entry would move several ops.
        if d.op.is_empty() || d.op.contains([',', '=', ' ', '\t', '\n']) || d.op.starts_with('%') {
            continue;
        }
        let Some(layouts) = analysis.op_layouts(file, &d.op).map_err(cancelled)? else {
            continue;
        };
        if layouts.fixed || layouts.unknown_op.is_some() {
            continue;
        }
        let mut full = Vec::new();
        let mut partial = Vec::new();
        for l in &layouts.layouts {
            if let Some(p) = ide::full_layout_params(l)
                && !full.contains(&p)
            {
                full.push(p);
            }
            if let Some(p) = ide::partial_layout_params(l)
                && !partial.contains(&p)
            {
                partial.push(p);
            }
        }
        let mut act_block_h: Vec<u64> = Vec::new();
        if let Some(r) = analysis.find_op(file, &d.op).map_err(cancelled)? {
            let configs = analysis.with_db(|db| layout::legal_op_configs(db, r.op));
            for c in configs.map_err(cancelled)?.iter() {
                if let opmodel::OpConfig::Conv2d { conv, .. } = &c.config
                    && let Some(v) = conv.act_block_h_override
                    && !act_block_h.contains(&v)
                {
                    act_block_h.push(v);
                }
            }
        }
        // One layout and no knobs: nothing to choose.
        if layouts.layouts.len() <= 1 && act_block_h.len() <= 1 {
            continue;
        }
        out.push(Tunable { name: d.op.clone(), full, partial, act_block_h });
    }
    // A name that appears twice (in two functions) would be moved as one: leave it out.
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &report.ops {
        *counts.entry(d.op.as_str()).or_default() += 1;
    }
    out.retain(|t| counts.get(t.name.as_str()) == Some(&1));
    Ok(out)
}

/// The verifier's violations by (function, op, class), counted.
fn violation_keys(report: &verify::Report) -> BTreeMap<ViolationKey, usize> {
    let mut keys = BTreeMap::new();
    for op in &report.ops {
        let Some(error) = &op.error else { continue };
        for part in error.split("; ") {
            let class = part.split(':').next().unwrap_or(part).to_owned();
            *keys.entry((op.func.clone(), op.op.clone(), class)).or_default() += 1;
        }
    }
    keys
}

/// How many violations of `report` the reference does not have.
fn new_violations(reference: &BTreeMap<ViolationKey, usize>, report: &verify::Report) -> usize {
    violation_keys(report)
        .iter()
        .map(|(k, n)| n.saturating_sub(reference.get(k).copied().unwrap_or(0)))
        .sum()
}

fn percent(baseline: u64, tuned: u64) -> String {
    if baseline == 0 {
        return "n/a".to_owned();
    }
    format!("{:+.2}%", (tuned as f64 / baseline as f64 - 1.0) * 100.0)
}

/// The largest `--time-limit`: 365 days. Anything larger is a typo, and a duration beyond
/// `u64::MAX` seconds (`1e19`) cannot even be represented.
const MAX_TIME_LIMIT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// `--time-limit` as a duration: positive, finite and at most [`MAX_TIME_LIMIT_SECS`].
fn time_limit(secs: f64) -> anyhow::Result<Duration> {
    if !(secs > 0.0 && secs <= MAX_TIME_LIMIT_SECS) {
        anyhow::bail!(
            "`--time-limit` must be a positive number of seconds up to {MAX_TIME_LIMIT_SECS} \
             (365 days), found {secs}"
        );
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|e| anyhow::format_err!("`--time-limit` {secs} is not a duration: {e}"))
}

fn default_output(file: &Utf8Path) -> Utf8PathBuf {
    let stem = file.file_stem().unwrap_or("tuned");
    file.with_file_name(format!("{stem}.tuned.overrides"))
}

fn progress_bar(budget: u64) -> ProgressBar {
    // Drawn only on a terminal: logs and CI capture stderr and must not fill with redraws.
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(budget), target);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} tuning [{bar:30}] {pos}/{len} {msg} ({elapsed})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn report(bar: &ProgressBar, evaluations: u64, baseline: u64, best: u64, started: Instant) {
    let secs = started.elapsed().as_secs_f64();
    let rate = if secs > 0.0 { evaluations as f64 / secs } else { 0.0 };
    bar.set_position(evaluations);
    bar.set_message(format!(
        "best {best} ns ({}), {rate:.1} candidates/s",
        percent(baseline, best)
    ));
}

/// SplitMix64: small, fast and reproducible from a `u64` seed, which is all a seeded search
/// needs (no `rand` dependency).
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`0` when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// Fisher-Yates.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_overrides_are_sorted_and_parse_without_errors() {
        let mut state = State::new();
        set_state(
            &mut state,
            "b",
            OpState { layout: Some("l1:height_sharded".to_owned()), conv: None },
        );
        set_state(
            &mut state,
            "a",
            OpState {
                layout: Some("8x8:l1:block_sharded:tile:bf16".to_owned()),
                conv: Some("act_block_h_override#32".to_owned()),
            },
        );
        set_state(&mut state, "c", OpState::default());
        let text = render_overrides(&state);
        assert_eq!(
            text,
            "override-output-layout=a=8x8:l1:block_sharded:tile:bf16\noverride-conv2d-config=a=act_block_h_override#32\noverride-output-layout=b=l1:height_sharded\n"
        );
        let parsed = base_db::parse_overrides(&text);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        assert_eq!(parsed.entries.len(), 3);
    }

    #[test]
    fn a_move_changes_only_its_option_and_clear_removes_both() {
        let s = OpState { layout: Some("dram:interleaved".to_owned()), conv: None };
        let conv = apply_move(&s, &Move::ActBlockH(64));
        assert_eq!(conv.layout, s.layout);
        assert_eq!(conv.conv.as_deref(), Some("act_block_h_override#64"));
        assert_eq!(apply_move(&conv, &Move::Clear), OpState::default());
    }

    #[test]
    fn splitmix_shuffles_deterministically_and_keeps_every_item() {
        let mut a: Vec<u32> = (0..20).collect();
        let mut b = a.clone();
        SplitMix64::new(5).shuffle(&mut a);
        SplitMix64::new(5).shuffle(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<u32>>());
        assert_ne!(a, (0..20).collect::<Vec<u32>>(), "a shuffle of 20 items moved something");
    }

    #[test]
    fn only_violations_missing_from_the_reference_are_new() {
        let op = |name: &str, error: Option<&str>| verify::OpReport {
            func: "main".to_owned(),
            op_index: 0,
            op: name.to_owned(),
            kind: "ttnn.add".to_owned(),
            range: syntax::TextRange::new(0, 0),
            result_layout: None,
            valid: error.is_none(),
            error: error.map(str::to_owned),
            l1: None,
            live_l1_before: 0,
            live_l1_after: 0,
            known_op: true,
            cost: None,
            roofline_ns: None,
        };
        let report = |ops: Vec<verify::OpReport>| verify::Report {
            violations: ops.iter().filter(|o| !o.valid).count(),
            ops,
            diagnostics: Vec::new(),
            peak_live_l1: 0,
            budget: 0,
        };
        let reference = violation_keys(&report(vec![op("a", Some("out of L1: 10 > 5"))]));
        // The same class at the same op, with different numbers, is not new.
        let same = report(vec![op("a", Some("out of L1: 12 > 5")), op("b", None)]);
        assert_eq!(new_violations(&reference, &same), 0);
        let worse = report(vec![
            op("a", Some("out of L1: 12 > 5; invalid: the result is declared as x")),
            op("b", Some("unsupported: no")),
        ]);
        assert_eq!(new_violations(&reference, &worse), 2);
    }
}
