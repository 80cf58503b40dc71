//! `session`: a long-running JSON-lines mode over one `AnalysisHost`, for tools, tuning loops
//! and tests.
//!
//! One request object per stdin line with a `"cmd"` field; one reply object per stdout line,
//! `{"ok": true, ...}` or `{"ok": false, "error": "..."}`. A malformed request gets an error
//! reply and the session goes on. See `docs/cli/session.md` for every command.

use std::{
    collections::BTreeMap,
    io::{BufRead as _, Write as _},
    process::ExitCode,
    time::Instant,
};

use anyhow::Context as _;
use clap::Args;
use ide::{
    AnalysisHost, Change, HostConfig, HostMode, Options, OverrideOption, Policy, Severity, TextEdit,
};
use serde_json::{Value, json};
use syntax::{LineCol, LineIndex, TextRange};

use crate::{common, optimize::short_layout};

#[derive(Args)]
pub(crate) struct SessionArgs {
    /// A builtin target (n150, n300, p150) or a target description file.
    #[arg(long)]
    target: Option<String>,
    /// The initial policy (`df-sharding` or `df-sharding-merge`).
    #[arg(long, default_value = "df-sharding-merge")]
    policy: String,
}

struct Session {
    host: AnalysisHost,
    file: Option<String>,
    /// Queries executed since the last `stats`, drained from the host after every request
    /// so the host's log stays short in a loop of thousands of candidates.
    executed: BTreeMap<String, u64>,
    /// The first executions in order, for `stats` with `detail`; at most `DETAIL_LIMIT`.
    detail: Vec<String>,
    /// Executions left out of `detail` because it was full.
    detail_dropped: u64,
}

/// Executions `stats` can list one by one; beyond this only the counts are kept.
const DETAIL_LIMIT: usize = 100_000;

type Reply = Result<Value, String>;

pub(crate) fn session(args: &SessionArgs) -> anyhow::Result<ExitCode> {
    let target = common::load_target(args.target.as_deref())?;
    let policy = Policy::from_name(&args.policy)
        .with_context(|| format!("unknown policy `{}`", args.policy))?;
    let mut s = Session {
        // The session reports which queries each request executed, so it keeps a log.
        host: AnalysisHost::with_config(
            target,
            Options { policy, ..Options::tt_mlir_defaults() },
            HostConfig { mode: HostMode::Tuning, query_log: true },
        ),
        file: None,
        executed: BTreeMap::new(),
        detail: Vec::new(),
        detail_dropped: 0,
    };
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let (reply, stop) = match serde_json::from_str::<Value>(&line) {
            Ok(req) => {
                let stop = req.get("cmd").and_then(Value::as_str) == Some("shutdown");
                let reply = s.handle(&req);
                s.drain_executed();
                (reply, stop)
            }
            Err(e) => (Err(format!("malformed request: {e}")), false),
        };
        let obj = match reply {
            Ok(Value::Object(mut m)) => {
                m.insert("ok".to_owned(), Value::Bool(true));
                Value::Object(m)
            }
            Ok(other) => json!({"ok": true, "result": other}),
            Err(e) => json!({"ok": false, "error": e}),
        };
        writeln!(stdout, "{obj}").context("cannot write stdout")?;
        stdout.flush().context("cannot write stdout")?;
        if stop {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn str_field<'a>(req: &'a Value, key: &str) -> Result<&'a str, String> {
    req.get(key).and_then(Value::as_str).ok_or_else(|| format!("`{key}` (a string) is required"))
}

fn layout_json(l: &ttnn_types::TtnnLayout) -> Value {
    json!({
        "buffer": l.buffer.keyword(),
        "memory_layout": l.memory_layout.map(|m| m.keyword()),
        "grid": [l.grid2d().rows, l.grid2d().cols],
        "shard_shape": l.memref_shape.as_slice(),
        "page": l.page_layout().keyword(),
        "dtype": l.data_type().map(|d| d.keyword()),
        "short": short_layout(Some(l)),
    })
}

impl Session {
    fn file(&self) -> Result<base_db::SourceFile, String> {
        let path = self.file.as_ref().ok_or("no file is open: send `open` first")?;
        self.host.file(path).ok_or_else(|| "the open file is gone".to_owned())
    }

    fn policy(&self, req: &Value) -> Result<Option<Policy>, String> {
        match req.get("policy").and_then(Value::as_str) {
            None => Ok(None),
            Some(p) => {
                Policy::from_name(p).map(Some).ok_or_else(|| format!("unknown policy `{p}`"))
            }
        }
    }

    /// Moves what the host executed into the session's counts and bounded detail.
    fn drain_executed(&mut self) {
        let room = DETAIL_LIMIT.saturating_sub(self.detail.len());
        let (counts, detail) = self.host.take_executed_counts(room);
        let total: u64 = counts.values().sum();
        self.detail_dropped += total.saturating_sub(detail.len() as u64);
        self.detail.extend(detail);
        for (name, n) in counts {
            *self.executed.entry(name).or_insert(0) += n;
        }
    }

    fn current_policy(&self) -> Policy {
        self.host
            .analysis()
            .with_db(|db| layout::effective_options(db).policy)
            .unwrap_or(Policy::DfShardingMerge)
    }

    fn handle(&mut self, req: &Value) -> Reply {
        let cmd = str_field(req, "cmd")?;
        let cancelled = |_| "cancelled".to_owned();
        match cmd {
            "open" => {
                let (name, text) = if let Some(path) = req.get("path").and_then(Value::as_str) {
                    let bytes =
                        std::fs::read(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
                    (path.to_owned(), String::from_utf8_lossy(&bytes).into_owned())
                } else {
                    (str_field(req, "name")?.to_owned(), str_field(req, "text")?.to_owned())
                };
                self.host.apply_change(Change::new().set_file(name.clone(), text));
                self.file = Some(name.clone());
                let diags = self.host.analysis().diagnostics(self.file()?).map_err(cancelled)?;
                let errors = diags.iter().filter(|d| d.severity == Severity::Error).count();
                Ok(json!({"file": name, "errors": errors}))
            }
            "edit" => {
                self.file()?;
                let path = self.file.clone().unwrap_or_default();
                let text = self.host.text(&path).ok_or("the open file is gone")?;
                let range = req.get("range").ok_or("`range` is required")?;
                let pos = |v: Option<&Value>| -> Result<LineCol, String> {
                    let v = v.ok_or("`range.start` and `range.end` are required")?;
                    let line =
                        v.get("line").and_then(Value::as_u64).ok_or("`line` must be a number")?;
                    let ch = v
                        .get("character")
                        .and_then(Value::as_u64)
                        .ok_or("`character` must be a number")?;
                    Ok(LineCol { line: line as u32, col_utf16: ch as u32 })
                };
                let index = LineIndex::new(&text);
                let start = index.offset(&text, pos(range.get("start"))?);
                let end = index.offset(&text, pos(range.get("end"))?);
                if end < start {
                    return Err("`range.end` is before `range.start`".to_owned());
                }
                let new_text = str_field(req, "text")?.to_owned();
                self.host.apply_change(Change::new().edit_file(
                    path,
                    vec![TextEdit { range: TextRange::new(start, end), text: new_text }],
                ));
                Ok(json!({}))
            }
            "set_overrides" => {
                let text = str_field(req, "text")?;
                self.host.apply_change(Change::new().set_overrides("<session>", text));
                Ok(self.override_report())
            }
            "set_override" => {
                let op = str_field(req, "op")?;
                let option =
                    req.get("option").and_then(Value::as_str).unwrap_or("override-output-layout");
                let option = OverrideOption::from_name(option)
                    .ok_or_else(|| format!("unknown override option `{option}`"))?;
                let params = str_field(req, "params")?;
                self.host.set_override(op, option, params);
                Ok(self.override_report())
            }
            "clear_override" => {
                let op = str_field(req, "op")?;
                let option = match req.get("option").and_then(Value::as_str) {
                    Some(o) => Some(
                        OverrideOption::from_name(o)
                            .ok_or_else(|| format!("unknown override option `{o}`"))?,
                    ),
                    None => None,
                };
                self.host.clear_override(op, option);
                Ok(self.override_report())
            }
            "set_policy" => {
                let policy = self.policy(req)?.ok_or("`policy` is required")?;
                let options = self
                    .host
                    .analysis()
                    .with_db(|db| base_db::OptionsInput::get(db).options(db).clone())
                    .map_err(cancelled)?;
                self.host.apply_change(Change::new().set_options(Options { policy, ..options }));
                Ok(json!({}))
            }
            "diagnostics" => {
                let diags = self.host.analysis().diagnostics(self.file()?).map_err(cancelled)?;
                Ok(json!({"diagnostics": diags.iter().map(|d| json!({
                    "range": [d.range.start, d.range.end], "severity": d.severity.as_str(), "code": d.code, "message": d.message,
                })).collect::<Vec<_>>()}))
            }
            "layouts" => {
                let op = str_field(req, "op")?;
                let l = self
                    .host
                    .analysis()
                    .op_layouts(self.file()?, op)
                    .map_err(cancelled)?
                    .ok_or_else(|| format!("no op named `{op}`"))?;
                Ok(json!({
                    "op": l.name, "kind": l.kind, "fixed": l.fixed, "scalar_types": l.scalar_types,
                    "layouts": l.layouts.iter().map(layout_json).collect::<Vec<_>>(),
                    "configs": l.configs.iter().map(|(i, c)| json!({"layout": i, "config": c})).collect::<Vec<_>>(),
                    "rejected_by_op_model": l.rejected, "first_rejection": l.first_rejection,
                    "override": l.override_use, "unknown_op": l.unknown_op,
                }))
            }
            "stats" => {
                self.drain_executed();
                let counts = std::mem::take(&mut self.executed);
                let detail = std::mem::take(&mut self.detail);
                let dropped = std::mem::take(&mut self.detail_dropped);
                let mut reply = json!({"executed": counts});
                if req.get("detail").and_then(Value::as_bool) == Some(true) {
                    reply["detail"] = json!(detail);
                    if dropped > 0 {
                        reply["detail_dropped"] = json!(dropped);
                    }
                }
                Ok(reply)
            }
            "optimize" => {
                let policy = self.policy(req)?.unwrap_or_else(|| self.current_policy());
                let file = self.file()?;
                // As the `optimize` command: the rewrite would drop what did not parse.
                let errors = self
                    .host
                    .analysis()
                    .diagnostics(file)
                    .map_err(cancelled)?
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                if errors > 0 {
                    return Err(format!(
                        "not optimizing: the file has {errors} error(s); see `diagnostics`"
                    ));
                }
                let started = Instant::now();
                let analysis = self.host.analysis();
                let final_ir = analysis.final_ir_for(file, policy).map_err(cancelled)?;
                let report = analysis.plan_report_for(file, policy).map_err(cancelled)?;
                let elapsed = started.elapsed();
                let by_state: BTreeMap<&str, usize> =
                    report.chains_by_state().into_iter().collect();
                let mut reply = json!({
                    "policy": policy.name(),
                    "ops": report.ops.len(),
                    "ops_in_l1": report.ops_in_l1,
                    "reshards": report.reshards,
                    "spills": report.spills,
                    "merges": report.merges.len(),
                    "conversions": final_ir.conversions,
                    "chains": by_state,
                    "millis": elapsed.as_secs_f64() * 1e3,
                });
                if req.get("text").and_then(Value::as_bool) == Some(true) {
                    reply["text"] = json!(final_ir.text);
                }
                Ok(reply)
            }
            "plan" => {
                let report = self.host.analysis().plan_report(self.file()?).map_err(cancelled)?;
                Ok(json!({
                    "policy": report.policy,
                    "ops": report.ops.iter().map(|d| json!({
                        "func": d.func, "op": d.op, "kind": d.kind,
                        "written": d.written.as_ref().map(layout_json),
                        "planned": d.planned.as_ref().map(layout_json),
                        "config": d.config,
                        "chain": d.chain.map(|(c, p, n, s)| json!({"id": c, "position": p, "length": n, "state": s})),
                        "reason": d.reason,
                        "reshards": d.reshards.iter().map(|(k, l, r)| json!({"operand": k, "layout": layout_json(l), "reason": r})).collect::<Vec<_>>(),
                        "spill": d.spill.as_ref().map(|(l, r)| json!({"layout": layout_json(l), "reason": r})),
                    })).collect::<Vec<_>>(),
                    "chains": report.chains.iter().map(|c| json!({
                        "func": c.func, "id": c.index, "ops": c.ops, "state": c.state, "concat": c.concat,
                        "failure": c.failure, "spill": c.spill, "spill_reason": c.spill_reason,
                    })).collect::<Vec<_>>(),
                    "merges": report.merges,
                }))
            }
            "cost" => {
                let policy = self.policy(req)?.unwrap_or_else(|| self.current_policy());
                let c = self.host.analysis().cost(self.file()?, policy).map_err(cancelled)?;
                Ok(cost_json(&c))
            }
            "batch" => self.batch(req),
            "shutdown" => Ok(json!({})),
            other => Err(format!("unknown command `{other}`")),
        }
    }

    /// Evaluates several override sets, each on top of the current overrides, and restores
    /// them afterwards. Each set is a list of `{"op", "option"?, "params"}`.
    fn batch(&mut self, req: &Value) -> Reply {
        let sets = req
            .get("sets")
            .and_then(Value::as_array)
            .ok_or("`sets` (an array of override sets) is required")?;
        let policy = self.policy(req)?.unwrap_or_else(|| self.current_policy());
        let file = self.file()?;
        let (origin, base) = self.host.overrides_text();
        // Every set is checked before any is applied, so a malformed request changes nothing.
        let mut texts = Vec::with_capacity(sets.len());
        for set in sets {
            let entries = set.as_array().ok_or("each set must be an array")?;
            let mut text = base.clone();
            for e in entries {
                let op = str_field(e, "op")?;
                let option =
                    e.get("option").and_then(Value::as_str).unwrap_or("override-output-layout");
                let option = OverrideOption::from_name(option)
                    .ok_or_else(|| format!("unknown override option `{option}`"))?;
                text = ide::overrides_with(&text, op, option, str_field(e, "params")?);
            }
            texts.push(text);
        }
        let mut results = Vec::with_capacity(texts.len());
        let mut outcome = Ok(());
        for text in texts {
            self.host.apply_change(Change::new().set_overrides(origin.clone(), text));
            let errors = self.override_errors();
            let c = match self.host.analysis().cost(file, policy) {
                Ok(c) => c,
                Err(_) => {
                    outcome = Err("cancelled".to_owned());
                    break;
                }
            };
            let mut r = cost_json(&c);
            if !errors.is_empty() {
                r["override_errors"] = json!(errors);
            }
            results.push(r);
        }
        // The session's own overrides come back whatever happened above.
        self.host.apply_change(Change::new().set_overrides(origin, base));
        outcome?;
        Ok(json!({"results": results}))
    }

    fn override_errors(&self) -> Vec<String> {
        self.host
            .analysis()
            .with_db(|db| {
                layout::override_file(db)
                    .errors
                    .iter()
                    .filter(|e| !e.is_warning)
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn override_report(&self) -> Value {
        json!({"override_errors": self.override_errors()})
    }
}

fn cost_json(c: &ide::CostSummary) -> Value {
    let ratio =
        if c.lower_bound_ns > 0 { c.total_ns as f64 / c.lower_bound_ns as f64 } else { 0.0 };
    json!({
        "policy": c.policy.name(),
        "total_ns": c.total_ns,
        "op_ns": c.op_ns,
        "reshard_ns": c.reshard_ns,
        "spill_ns": c.spill_ns,
        "written_ns": c.written_ns,
        "lower_bound_ns": c.lower_bound_ns,
        "load_ns": c.load_ns,
        "ratio_to_lower_bound": ratio,
    })
}
