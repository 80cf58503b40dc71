//! The `session` protocol: requests in, replies out, one JSON object per line, over one
//! `AnalysisHost`. `ttnn-analyzer session` serves it on stdin and stdout; the fuzzer drives
//! [`Session::answer`] directly.
//!
//! Every request is validated before it changes anything: the line must be UTF-8 JSON, every
//! field must have its type, a field the command does not take is an error, and an op name or
//! params that would not be a single field of the overrides text (whitespace, `,` or `=` in
//! it would start another entry, option or line) is refused rather than spliced in.
//! See `docs/cli/session.md` for every command.

use std::{
    collections::BTreeMap,
    io::{BufRead, Write},
    time::Instant,
};

use ide::{
    AnalysisHost, Change, HostConfig, HostMode, Options, OverrideOption, Policy, Severity, TextEdit,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use syntax::{LineCol, LineIndex, TextRange};

use crate::short_layout;

/// One session: the host, the current file and the query counts `stats` reports.
pub struct Session {
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

/// Answers every request line of `input` on `output` until `shutdown` or the end of input.
/// Only I/O errors end it early.
pub fn serve(
    session: &mut Session,
    mut input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Some((reply, stop)) = session.answer(&line) else { continue };
        writeln!(output, "{reply}")?;
        output.flush()?;
        if stop {
            return Ok(());
        }
    }
}

impl Session {
    /// A session over a fresh host for `target`, optimizing with `policy` by default.
    #[must_use]
    pub fn new(target: target::Target, policy: Policy) -> Session {
        Session {
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
        }
    }

    /// The reply line to one request line (its bytes, with or without the line break), and
    /// whether the session ends after it; `None` for a blank line, which gets no reply.
    pub fn answer(&mut self, line: &[u8]) -> Option<(String, bool)> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (reply, stop) = match std::str::from_utf8(line) {
            // Reported rather than fatal: one bad line from a client must not end the
            // session and leave the requests after it unanswered.
            Err(e) => (
                Err(format!(
                    "malformed request: the line is not UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                )),
                false,
            ),
            Ok(text) if text.trim().is_empty() => return None,
            Ok(text) => match serde_json::from_str::<Value>(text) {
                Ok(req) => {
                    let stop = req.get("cmd").and_then(Value::as_str) == Some("shutdown");
                    let reply = self.handle(req);
                    self.drain_executed();
                    (reply, stop)
                }
                Err(e) => (Err(format!("malformed request: {e}")), false),
            },
        };
        let obj = match reply {
            Ok(Value::Object(mut m)) => {
                m.insert("ok".to_owned(), Value::Bool(true));
                Value::Object(m)
            }
            Ok(other) => json!({"ok": true, "result": other}),
            Err(e) => json!({"ok": false, "error": e}),
        };
        Some((obj.to_string(), stop))
    }
}

/// A request's fields, taken one by one with their types checked; `finish` refuses the rest.
struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    fn opt_str(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    fn str(&mut self, key: &str) -> Result<String, String> {
        match self.take(key) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(format!("`{key}` (a string) is required")),
        }
    }

    fn opt_bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(_) => Err(format!("`{key}` must be `true` or `false`")),
        }
    }

    fn opt_policy(&mut self) -> Result<Option<Policy>, String> {
        self.opt_str("policy")?
            .map(|p| Policy::from_name(&p).ok_or_else(|| format!("unknown policy `{p}`")))
            .transpose()
    }

    fn opt_option(&mut self) -> Result<Option<OverrideOption>, String> {
        self.opt_str("option")?
            .map(|o| {
                OverrideOption::from_name(&o)
                    .ok_or_else(|| format!("unknown override option `{o}`"))
            })
            .transpose()
    }

    /// An op name or params bound for the overrides text, where it must stay one field.
    fn override_field(&mut self, key: &str) -> Result<String, String> {
        let v = self.str(key)?;
        override_field(key, &v)?;
        Ok(v)
    }

    /// Every field was used; anything left is a typo or a field of another command.
    fn finish(self, what: &str) -> Result<(), String> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(k) => Err(format!("unknown field `{k}` in {what}")),
        }
    }
}

/// Refuses a value that would not stay one field of the overrides text: entries are split at
/// `,`, an entry's op name from its params at `=`, options at whitespace and lines at line
/// breaks, so any of them would set something the request did not name.
fn override_field(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("`{key}` must not be empty"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control() || c == ',' || c == '=') {
        return Err(format!(
            "`{key}` must be one override field, without whitespace, `,` or `=`: {}",
            Value::String(value.to_owned())
        ));
    }
    Ok(())
}

/// `edit`'s range, in LSP's shape; serde checks the types and refuses other fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Range {
    start: Position,
    end: Position,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    line: u32,
    character: u32,
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

    fn handle(&mut self, req: Value) -> Reply {
        let Value::Object(mut map) = req else {
            return Err("a request must be a JSON object".to_owned());
        };
        let cmd = match map.remove("cmd") {
            Some(Value::String(c)) => c,
            _ => return Err("`cmd` (a string) is required".to_owned()),
        };
        let mut f = Fields { map };
        let what = format!("`{cmd}`");
        let cancelled = |_| "cancelled".to_owned();
        match cmd.as_str() {
            "open" => {
                let path = f.opt_str("path")?;
                let (name, text) = (f.opt_str("name")?, f.opt_str("text")?);
                f.finish(&what)?;
                let (name, text) = match (path, name, text) {
                    (Some(path), None, None) => {
                        // As the commands read their inputs: regular files only, size capped.
                        let bytes = crate::input::read_bytes(camino::Utf8Path::new(&path))
                            .map_err(|e| format!("{e:#}"))?;
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        (path, text)
                    }
                    (None, Some(name), Some(text)) => (name, text),
                    (Some(_), _, _) => {
                        return Err("`open` takes `path`, or `name` and `text`, not both".into());
                    }
                    (None, None, _) => return Err("`path` (a string) is required".into()),
                    (None, Some(_), None) => return Err("`text` (a string) is required".into()),
                };
                self.host.apply_change(Change::new().set_file(name.clone(), text));
                self.file = Some(name.clone());
                let diags = self.host.analysis().diagnostics(self.file()?).map_err(cancelled)?;
                let errors = diags.iter().filter(|d| d.severity == Severity::Error).count();
                Ok(json!({"file": name, "errors": errors}))
            }
            "edit" => {
                let range = f.take("range").ok_or("`range` is required")?;
                let range: Range =
                    serde_json::from_value(range).map_err(|e| format!("invalid `range`: {e}"))?;
                let new_text = f.str("text")?;
                f.finish(&what)?;
                let path = self.file.clone().ok_or("no file is open")?;
                let text = self.host.text(&path).ok_or("the open file is gone")?;
                let pos = |p: &Position| LineCol { line: p.line, col_utf16: p.character };
                let index = LineIndex::new(&text);
                let start = index.offset(&text, pos(&range.start));
                let end = index.offset(&text, pos(&range.end));
                if end < start {
                    return Err("`range.end` is before `range.start`".to_owned());
                }
                self.host.apply_change(Change::new().edit_file(
                    path,
                    vec![TextEdit { range: TextRange::new(start, end), text: new_text }],
                ));
                Ok(json!({}))
            }
            "set_overrides" => {
                let text = f.str("text")?;
                f.finish(&what)?;
                self.host.apply_change(Change::new().set_overrides("<session>", text));
                Ok(self.override_report())
            }
            "set_override" => {
                let op = f.override_field("op")?;
                let params = f.override_field("params")?;
                let option = f.opt_option()?.unwrap_or(OverrideOption::OutputLayout);
                f.finish(&what)?;
                self.host.set_override(&op, option, &params);
                Ok(self.override_report())
            }
            "clear_override" => {
                let op = f.override_field("op")?;
                let option = f.opt_option()?;
                f.finish(&what)?;
                self.host.clear_override(&op, option);
                Ok(self.override_report())
            }
            "set_policy" => {
                let policy = f.opt_policy()?.ok_or("`policy` is required")?;
                f.finish(&what)?;
                let options = self
                    .host
                    .analysis()
                    .with_db(|db| base_db::OptionsInput::get(db).options(db).clone())
                    .map_err(cancelled)?;
                self.host.apply_change(Change::new().set_options(Options { policy, ..options }));
                Ok(json!({}))
            }
            "diagnostics" => {
                f.finish(&what)?;
                let diags = self.host.analysis().diagnostics(self.file()?).map_err(cancelled)?;
                Ok(json!({"diagnostics": diags.iter().map(|d| json!({
                    "range": [d.range.start, d.range.end], "severity": d.severity.as_str(), "code": d.code, "message": d.message,
                })).collect::<Vec<_>>()}))
            }
            "layouts" => {
                let op = f.str("op")?;
                f.finish(&what)?;
                let l = self
                    .host
                    .analysis()
                    .op_layouts(self.file()?, &op)
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
                let detail_asked = f.opt_bool("detail")? == Some(true);
                f.finish(&what)?;
                self.drain_executed();
                let counts = std::mem::take(&mut self.executed);
                let detail = std::mem::take(&mut self.detail);
                let dropped = std::mem::take(&mut self.detail_dropped);
                let mut reply = json!({"executed": counts});
                if detail_asked {
                    reply["detail"] = json!(detail);
                    if dropped > 0 {
                        reply["detail_dropped"] = json!(dropped);
                    }
                }
                Ok(reply)
            }
            "optimize" => {
                let policy = f.opt_policy()?.unwrap_or_else(|| self.current_policy());
                let with_text = f.opt_bool("text")? == Some(true);
                f.finish(&what)?;
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
                if with_text {
                    reply["text"] = json!(final_ir.text);
                }
                Ok(reply)
            }
            "plan" => {
                f.finish(&what)?;
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
                let policy = f.opt_policy()?.unwrap_or_else(|| self.current_policy());
                f.finish(&what)?;
                let c = self.host.analysis().cost(self.file()?, policy).map_err(cancelled)?;
                Ok(cost_json(&c))
            }
            "batch" => self.batch(f, &what),
            "shutdown" => {
                f.finish(&what)?;
                Ok(json!({}))
            }
            other => Err(format!("unknown command `{other}`")),
        }
    }

    /// Evaluates several override sets, each on top of the current overrides, and restores
    /// them afterwards. Each set is a list of `{"op", "option"?, "params"}`.
    fn batch(&mut self, mut f: Fields, what: &str) -> Reply {
        let Some(Value::Array(sets)) = f.take("sets") else {
            return Err("`sets` (an array of override sets) is required".to_owned());
        };
        let policy = f.opt_policy()?.unwrap_or_else(|| self.current_policy());
        f.finish(what)?;
        let file = self.file()?;
        let (origin, base) = self.host.overrides_text();
        // Every set is checked before any is applied, so a malformed request changes nothing.
        let mut texts = Vec::with_capacity(sets.len());
        for set in sets {
            let Value::Array(entries) = set else { return Err("each set must be an array".into()) };
            let mut text = base.clone();
            for e in entries {
                let Value::Object(map) = e else {
                    return Err("each entry of a set must be an object".into());
                };
                let mut e = Fields { map };
                let op = e.override_field("op")?;
                let params = e.override_field("params")?;
                let option = e.opt_option()?.unwrap_or(OverrideOption::OutputLayout);
                e.finish("a `batch` entry")?;
                text = ide::overrides_with(&text, &op, option, &params);
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
