//! `cargo xtask bench-lsp [--ops N] [--seed S] [--kind K] [--edits E] [--opens K] [--server PATH]
//! [--mlir-lsp-server PATH] [--no-mlir] [--no-write]`: editor latency of `ttnn-analyzer lsp`
//! against LLVM's `mlir-lsp-server` on one generated file, written to `docs/performance.md`
//! under `## Language server latency`.
//!
//! Both servers run as child processes and are spoken to over stdio, with `Content-Length`
//! framing, the way an editor does. Per server, in one session on the same file:
//!
//! * (a) from scratch: `didOpen` of the whole file, then its first `publishDiagnostics`, in
//!   `--opens K` fresh server processes (default 3; the median is what the ratios divide);
//! * (b) a one-op edit: a `didChange` that changes one attribute of one op in the middle of
//!   the file, then `publishDiagnostics` for the new version;
//! * (c) hover on that op's name once (b)'s diagnostics are in;
//! * (e) typing on: the edit undone right after (c), a second change to the same op, to its
//!   diagnostics (then the edit made again, untimed);
//! * (d) the edit undone and a hover sent right behind it: `didChange` to the hover answer,
//!   so the server must take the edit in before it can answer.
//!
//! (b) is the first change to an op since the file was opened; an editor's next keystrokes
//! in the same op are (e). (b) to (d) repeat for `E` ops spread over the middle half of the
//! file (default 20: on a shared two-vCPU machine the first edits after opening are often
//! several times slower than the rest, and with 10 samples two of them moved the median).
//! Every time is wall
//! clock on this side of the pipes: from just before the first byte of the message is
//! written to just after the last byte of the answer is read (JSON is encoded before the
//! clock starts and decoded after it stops).
//!
//! Without `--server`, the task builds the server first with `cargo build --release -p cli`
//! (honouring `CARGO_TARGET_DIR`) and takes the binary's path from cargo's own report.
//! Run the task itself in release too (`cargo run --release -p xtask -- bench-lsp`), so the
//! client's framing costs nothing next to the servers.

use std::{
    fmt::Write as _,
    io::{BufRead, BufReader, Read, Write as _},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use rustc_hash::FxHashSet;
use serde_json::{Value, json};

use crate::{
    r#gen::{GraphKind, generate},
    util::{Flags, machine_description, read_text, replace_section, workspace_root, write_file},
};

/// The heading this task owns in `docs/performance.md`; other sections are left alone.
const HEADING: &str = "## Language server latency";

const DEFAULT_MLIR_LSP_SERVER: &str = "/usr/lib/llvm-19/bin/mlir-lsp-server";

/// How long any one answer may take before the task gives up instead of hanging: a server
/// that stops answering is a finding, not a reason to wait forever.
const TIMEOUT: Duration = Duration::from_secs(600);

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse(
        "bench-lsp",
        args,
        &["--ops", "--seed", "--kind", "--edits", "--opens", "--server", "--mlir-lsp-server"],
        &["--no-mlir", "--no-write"],
    )?;
    let ops: usize = flags.parsed("--ops", 10_000)?;
    let seed: u64 = flags.parsed("--seed", 1)?;
    let n_edits: usize = flags.parsed("--edits", 20)?;
    let opens: usize = flags.parsed("--opens", 3)?;
    let kind_name = flags.value("--kind").unwrap_or("mixed");
    let kind = GraphKind::from_name(kind_name)
        .ok_or_else(|| anyhow::format_err!("unknown `--kind` `{kind_name}`"))?;
    if n_edits == 0 || opens == 0 {
        return Err(anyhow::format_err!("`--edits` and `--opens` must be at least 1"));
    }

    let machine = machine_description();
    let mut out = std::io::stdout().lock();
    writeln!(out, "machine: {machine}")?;
    if cfg!(debug_assertions) {
        writeln!(out, "warning: a debug build; run `cargo run --release -p xtask -- bench-lsp`")?;
    }

    let text = generate(ops, seed, kind);
    // Positions below are byte columns, which equal LSP's UTF-16 columns only in ASCII.
    if !text.is_ascii() {
        return Err(anyhow::format_err!("the generated graph is not ASCII"));
    }
    let dir = std::env::temp_dir().join("ttnn-analyzer-bench-lsp");
    create_dir(&dir)?;
    let path = dir.join(format!("gen-{}-{ops}-seed{seed}.mlir", kind.name()));
    write_file(&path, text.as_bytes())?;
    let uri = file_uri(&path)?;
    let edits = pick_edits(&text, n_edits)?;
    writeln!(
        out,
        "input: {} ops ({} graph, seed {seed}), {} bytes, {}",
        ops + 1,
        kind.name(),
        text.len(),
        path.display()
    )?;
    for e in &edits {
        writeln!(out, "edit: line {}: {}", e.line + 1, e.describe())?;
    }

    let ours_exe = match flags.value("--server") {
        Some(p) => PathBuf::from(p),
        None => crate::util::build_cli(&workspace_root())?,
    };
    let delay = server::ServerOptions::default().diagnostics_delay;
    writeln!(out, "ttnn-analyzer: {}", ours_exe.display())?;
    let mut ours_cmd = Command::new(&ours_exe);
    ours_cmd.arg("lsp");
    let work = Workload { dir: &dir, uri: &uri, text: &text, edits: &edits, opens };
    let ours = measure("ttnn-analyzer", ours_cmd, &work, &mut out)?;
    check_no_errors(&ours)?;

    let mlir = if flags.switch("--no-mlir") {
        None
    } else {
        let exe =
            PathBuf::from(flags.value("--mlir-lsp-server").unwrap_or(DEFAULT_MLIR_LSP_SERVER));
        let version = tool_version(&exe);
        writeln!(out, "mlir-lsp-server: {} ({version})", exe.display())?;
        let m = measure("mlir-lsp-server", Command::new(&exe), &work, &mut out)?;
        Some((m, version))
    };

    let report = Report {
        machine,
        load_after: load_average(),
        ops: ops + 1,
        seed,
        kind,
        bytes: text.len(),
        edits: &edits,
        delay,
        ours: &ours,
        mlir: mlir.as_ref().map(|(m, v)| (m, v.as_str())),
    };
    writeln!(out)?;
    write!(out, "{}", report.table())?;
    writeln!(out)?;
    write!(out, "{}", report.ratios())?;

    if flags.switch("--no-write") {
        return Ok(());
    }
    let doc_path = workspace_root().join("docs").join("performance.md");
    let doc = if doc_path.is_file() { read_text(&doc_path)? } else { "# Performance\n".to_owned() };
    write_file(&doc_path, replace_section(&doc, HEADING, &report.section()).as_bytes())?;
    writeln!(out, "wrote {} (section `{HEADING}`)", doc_path.display())?;
    Ok(())
}

/// One attribute edit on one op, and where to hover for that op.
#[derive(Debug, Clone)]
struct Edit {
    /// Zero-based line of the op.
    line: u32,
    /// Byte (and UTF-16) column where `old` starts.
    col: u32,
    old: &'static str,
    new: &'static str,
    /// A column inside the op name string, where both servers hover the op.
    hover_col: u32,
    /// The op's result and name, for the report.
    op: String,
}

impl Edit {
    fn describe(&self) -> String {
        format!("{}: `{}` -> `{}`", self.op, self.old, self.new)
    }

    /// The edit (`undo` false) or its inverse, as an LSP range and replacement text.
    fn change(&self, undo: bool) -> (Value, &'static str) {
        let (from, to) = if undo { (self.new, self.old) } else { (self.old, self.new) };
        let range = json!({
            "start": { "line": self.line, "character": self.col },
            "end": { "line": self.line, "character": self.col + from.len() as u32 },
        });
        (range, to)
    }

    /// Applies the edit or its inverse to `text`, which must hold the other side.
    fn apply(&self, text: &mut String, undo: bool) -> anyhow::Result<()> {
        let (from, to) = if undo { (self.new, self.old) } else { (self.old, self.new) };
        let line_start = line_start(text, self.line)
            .ok_or_else(|| anyhow::format_err!("no line {} in the text", self.line + 1))?;
        let start = line_start + self.col as usize;
        if text.get(start..start + from.len()) != Some(from) {
            return Err(anyhow::format_err!("line {} does not hold `{from}`", self.line + 1));
        }
        text.replace_range(start..start + from.len(), to);
        Ok(())
    }
}

/// Attribute edits that keep the file valid and change what the optimizer sees of the op
/// (both attributes are part of the op model's `OpKind`, hence of `op_signature`): an edit
/// that broke the file would make the analyzer skip its findings and look faster than it is.
const EDIT_KINDS: &[(&str, &str, &str)] = &[
    ("\"ttnn.softmax\"", "numericStable = true", "numericStable = false"),
    // Only on permutes whose input and output types are equal (dims 1 and 2 agree), where
    // the identity permutation is just as valid.
    ("\"ttnn.permute\"", "array<i64: 0, 2, 1, 3>", "array<i64: 0, 1, 2, 3>"),
];

/// `n` edits on ops in the middle half of the file, alternating between the edit kinds and
/// evenly spaced within each kind, so no two edits touch the same op.
fn pick_edits(text: &str, n: usize) -> anyhow::Result<Vec<Edit>> {
    let lines: Vec<&str> = text.lines().collect();
    let (lo, hi) = (lines.len() / 4, lines.len() * 3 / 4);
    let mut candidates: Vec<Vec<Edit>> = vec![Vec::new(); EDIT_KINDS.len()];
    for (i, line) in lines.iter().enumerate().take(hi).skip(lo) {
        for (k, &(name, old, new)) in EDIT_KINDS.iter().enumerate() {
            let (Some(name_col), Some(col)) = (line.find(name), line.find(old)) else { continue };
            if k == 1 && !same_input_and_output_type(line) {
                continue;
            }
            let result = line.trim_start().split(' ').next().unwrap_or("");
            candidates[k].push(Edit {
                line: i as u32,
                col: col as u32,
                old,
                new,
                hover_col: name_col as u32 + 1,
                op: format!("{result} {}", name.trim_matches('"')),
            });
        }
    }
    let kinds: Vec<&Vec<Edit>> = candidates.iter().filter(|c| !c.is_empty()).collect();
    if kinds.is_empty() {
        return Err(anyhow::format_err!(
            "no softmax or square permute in the middle of the generated graph to edit"
        ));
    }
    let mut out = Vec::with_capacity(n);
    for (k, list) in kinds.iter().enumerate() {
        // Slots k, k + kinds, k + 2 * kinds, ... of the `n` go to this kind.
        let slots = (n + kinds.len() - 1 - k) / kinds.len();
        for j in 0..slots {
            let idx = ((2 * j + 1) * list.len() / (2 * slots)).min(list.len() - 1);
            out.push((j * kinds.len() + k, list[idx].clone()));
        }
    }
    out.sort_by_key(|(slot, _)| *slot);
    // With more edits asked than a kind has ops, slots repeat an op; each op is edited once.
    let mut seen = FxHashSet::default();
    Ok(out.into_iter().map(|(_, e)| e).filter(|e| seen.insert(e.line)).collect())
}

/// True for `... : (T) -> T loc(...)` with the same single type on both sides.
fn same_input_and_output_type(line: &str) -> bool {
    let Some((lhs, rhs)) = line.rsplit_once(") -> ") else { return false };
    let Some(input) = lhs.rsplit_once(": (").map(|(_, t)| t) else { return false };
    let output = rhs.split(" loc(").next().unwrap_or(rhs);
    input == output
}

fn line_start(text: &str, line: u32) -> Option<usize> {
    if line == 0 {
        return Some(0);
    }
    text.match_indices('\n').nth(line as usize - 1).map(|(i, _)| i + 1)
}

/// Diagnostics by severity in one `publishDiagnostics`.
#[derive(Debug, Clone, Copy, Default)]
struct DiagCount {
    errors: usize,
    warnings: usize,
    other: usize,
}

impl DiagCount {
    fn of(params: &Value) -> DiagCount {
        let mut c = DiagCount::default();
        for d in params["diagnostics"].as_array().map_or(&[][..], Vec::as_slice) {
            match d["severity"].as_u64() {
                Some(1) => c.errors += 1,
                Some(2) => c.warnings += 1,
                _ => c.other += 1,
            }
        }
        c
    }

    fn describe(self) -> String {
        let total = self.errors + self.warnings + self.other;
        format!(
            "{total} ({} errors, {} warnings, {} information)",
            self.errors, self.warnings, self.other
        )
    }
}

/// Everything measured on one server.
struct Measured {
    name: &'static str,
    /// Whether the server takes incremental `didChange` ranges (else it is sent whole texts).
    incremental: bool,
    /// (a): the median of `opens`.
    open: Duration,
    opens: Vec<Duration>,
    open_diags: DiagCount,
    edit: Vec<Duration>,
    edit_diags: Vec<DiagCount>,
    hover: Vec<Duration>,
    edit_then_hover: Vec<Duration>,
    /// (e): a second change to the op of (b).
    again: Vec<Duration>,
    /// The first line of the first hover answer, to show what the server says about an op.
    hover_sample: String,
}

/// The measured steps, (a) to (e).
#[derive(Debug, Clone, Copy)]
enum Step {
    Open,
    Edit,
    Hover,
    EditThenHover,
    Again,
}

impl Measured {
    /// The step's median; (a) is measured once.
    fn median(&self, step: Step) -> Duration {
        match step {
            Step::Open => self.open,
            Step::Edit => Stats::of(&self.edit).median,
            Step::Hover => Stats::of(&self.hover).median,
            Step::EditThenHover => Stats::of(&self.edit_then_hover).median,
            Step::Again => Stats::of(&self.again).median,
        }
    }
}

/// What both servers are measured on.
struct Workload<'a> {
    /// Where the servers' logs go.
    dir: &'a Path,
    uri: &'a str,
    text: &'a str,
    edits: &'a [Edit],
    /// How many fresh servers open the file for (a).
    opens: usize,
}

fn measure(
    name: &'static str,
    mut cmd: Command,
    work: &Workload<'_>,
    out: &mut impl std::io::Write,
) -> anyhow::Result<Measured> {
    let Workload { dir, uri, text, edits, opens } = *work;
    let log = dir.join(format!("{name}.stderr.log"));
    // (a) in `opens` fresh server processes: one open is a single sample of a long step on a
    // shared machine, and the ratios divide by it.
    let mut open_times = Vec::with_capacity(opens);
    for _ in 1..opens {
        let (s, _, time, _) = open_session(name, &mut cmd, &log, uri, text)?;
        writeln!(out, "{name}: from scratch {} ms (a fresh server, closed again)", ms(time))?;
        open_times.push(time);
        s.shutdown()?;
    }
    let (mut s, incremental, time, diags) = open_session(name, &mut cmd, &log, uri, text)?;
    open_times.push(time);
    let mut m = Measured {
        name,
        incremental,
        open: Stats::of(&open_times).median,
        opens: open_times,
        open_diags: DiagCount::of(&diags),
        edit: Vec::new(),
        edit_diags: Vec::new(),
        hover: Vec::new(),
        edit_then_hover: Vec::new(),
        again: Vec::new(),
        hover_sample: String::new(),
    };
    writeln!(out, "{name}: from scratch {} ms", ms(time))?;

    let mut doc = Doc { uri, text: text.to_owned(), version: 1, incremental };
    for e in edits {
        // (b) the edit, then its diagnostics.
        let (sent, version) = doc.change(&mut s, e, false)?;
        let (done, diags) = s.wait_diagnostics(uri, version)?;
        m.edit.push(done - sent);
        m.edit_diags.push(DiagCount::of(&diags));

        // (c) hover on the edited op, its diagnostics already in.
        let hover = hover_params(uri, e);
        let id = s.request("textDocument/hover", hover.clone())?;
        let sent = s.sent_at;
        let (done, answer) = s.wait_response(id)?;
        m.hover.push(done - sent);
        if answer.is_null() {
            return Err(anyhow::format_err!("{name} has no hover for {}", e.op));
        }
        if m.hover_sample.is_empty() {
            m.hover_sample = hover_first_line(&answer);
        }

        // (e) typing on: a second change to the same op (the edit undone), to diagnostics.
        let (sent, version) = doc.change(&mut s, e, true)?;
        let (done, _) = s.wait_diagnostics(uri, version)?;
        m.again.push(done - sent);
        // Untimed: the edit made again, for (d) to undo.
        let (_, version) = doc.change(&mut s, e, false)?;
        s.wait_diagnostics(uri, version)?;
        s.forget();

        // (d) undo the edit and hover at once: the answer needs the new text analysed.
        let (sent, version) = doc.change(&mut s, e, true)?;
        let id = s.request("textDocument/hover", hover)?;
        let (done, _) = s.wait_response(id)?;
        m.edit_then_hover.push(done - sent);
        // Untimed: the next edit starts on a quiet server.
        s.wait_diagnostics(uri, version)?;
        s.forget();
        writeln!(
            out,
            "{name}: {}: edit {} ms, hover {} ms, again {} ms, edit then hover {} ms",
            e.op,
            ms(*m.edit.last().unwrap_or(&Duration::ZERO)),
            ms(*m.hover.last().unwrap_or(&Duration::ZERO)),
            ms(*m.again.last().unwrap_or(&Duration::ZERO)),
            ms(*m.edit_then_hover.last().unwrap_or(&Duration::ZERO)),
        )?;
    }
    s.shutdown()?;
    Ok(m)
}

/// Starts a server, initializes it and opens `text`: the session, whether it syncs
/// incrementally, the time from `didOpen` to the first diagnostics, and those diagnostics.
fn open_session(
    name: &'static str,
    cmd: &mut Command,
    log: &Path,
    uri: &str,
    text: &str,
) -> anyhow::Result<(Session, bool, Duration, Value)> {
    let mut s = Session::start(name, cmd, log)?;
    let init = s.request(
        "initialize",
        json!({
            "processId": std::process::id(),
            "rootUri": null,
            "capabilities": {
                "textDocument": {
                    "publishDiagnostics": { "versionSupport": true },
                    "hover": { "contentFormat": ["markdown", "plaintext"] },
                },
            },
        }),
    )?;
    let (_, init) = s.wait_response(init)?;
    let sync = &init["capabilities"]["textDocumentSync"];
    let incremental = sync.as_u64().or_else(|| sync["change"].as_u64()) == Some(2);
    s.notify("initialized", json!({}))?;
    let open = s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "mlir", "version": 1, "text": text } }),
    )?;
    let (done, diags) = s.wait_diagnostics(uri, 1)?;
    s.forget();
    Ok((s, incremental, done - open, diags))
}

/// The open document as the client holds it: its text and version, and how it syncs.
struct Doc<'a> {
    uri: &'a str,
    text: String,
    version: i32,
    incremental: bool,
}

impl Doc<'_> {
    /// Makes `e` (or undoes it) in the text and sends the change as the next version; the
    /// time the message started going out, and the version it made.
    fn change(&mut self, s: &mut Session, e: &Edit, undo: bool) -> anyhow::Result<(Instant, i32)> {
        self.version += 1;
        e.apply(&mut self.text, undo)?;
        let change = if self.incremental {
            let (range, text) = e.change(undo);
            json!({ "range": range, "text": text })
        } else {
            json!({ "text": self.text })
        };
        let params = json!({
            "textDocument": { "uri": self.uri, "version": self.version },
            "contentChanges": [change],
        });
        Ok((s.notify("textDocument/didChange", params)?, self.version))
    }
}

fn hover_params(uri: &str, e: &Edit) -> Value {
    json!({
        "textDocument": { "uri": uri },
        "position": { "line": e.line, "character": e.hover_col },
    })
}

fn hover_first_line(answer: &Value) -> String {
    let contents = &answer["contents"];
    let text = contents["value"].as_str().or_else(|| contents.as_str()).unwrap_or("");
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned()
}

/// The analyzer's figures would be meaningless on a broken file: it skips its findings
/// (the optimizer's part) when a file has errors.
fn check_no_errors(m: &Measured) -> anyhow::Result<()> {
    let errors = m.open_diags.errors + m.edit_diags.iter().map(|d| d.errors).sum::<usize>();
    if errors > 0 {
        return Err(anyhow::format_err!(
            "{} reported {errors} errors on the benchmark file or its edits; the edits must keep it valid",
            m.name
        ));
    }
    Ok(())
}

/// One server child process and its framed stdio.
pub(crate) struct Session {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    inbox: mpsc::Receiver<Result<(Instant, Value), String>>,
    /// Messages read while waiting for another: with a hover and diagnostics computed
    /// concurrently, either may arrive first.
    stash: Vec<(Instant, Value)>,
    next_id: i64,
    /// When the last message started going out.
    sent_at: Instant,
}

impl Session {
    /// The server's resident set (`VmRSS`, KiB), where `/proc` tells it.
    pub(crate) fn resident_kib(&self) -> Option<u64> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = crate::util::read_text(std::path::Path::new(&path)).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    pub(crate) fn start(
        name: &'static str,
        cmd: &mut Command,
        log: &Path,
    ) -> anyhow::Result<Session> {
        let stderr = std::fs::File::create(log)
            .map_err(|e| anyhow::format_err!("cannot create {}: {e}", log.display()))?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| anyhow::format_err!("cannot start {name}: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(anyhow::format_err!("{name} has no stdio pipes"));
        };
        let (tx, inbox) = mpsc::channel();
        thread::Builder::new()
            .name(format!("{name}-reader"))
            .spawn(move || read_messages(stdout, &tx))
            .map_err(|e| anyhow::format_err!("cannot spawn a reader thread: {e}"))?;
        Ok(Session {
            name,
            child,
            stdin,
            inbox,
            stash: Vec::new(),
            next_id: 0,
            sent_at: Instant::now(),
        })
    }

    /// Writes one framed message; returns when its first byte went out.
    fn send(&mut self, msg: &Value) -> anyhow::Result<Instant> {
        let body = serde_json::to_vec(msg)?;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        self.sent_at = Instant::now();
        self.stdin
            .write_all(&frame)
            .and_then(|()| self.stdin.flush())
            .map_err(|e| anyhow::format_err!("cannot write to {}: {e}", self.name))?;
        Ok(self.sent_at)
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) -> anyhow::Result<Instant> {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> anyhow::Result<i64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        Ok(id)
    }

    /// The first message `want` accepts, stashed or next to arrive, and when it was read.
    /// Requests from the server are answered with `null` (neither server needs more); other
    /// messages are stashed until [`Session::forget`].
    fn wait_for(
        &mut self,
        mut want: impl FnMut(&Value) -> bool,
    ) -> anyhow::Result<(Instant, Value)> {
        if let Some(i) = self.stash.iter().position(|(_, m)| want(m)) {
            return Ok(self.stash.remove(i));
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, msg) = match self.inbox.recv_timeout(left) {
                Ok(Ok(m)) => m,
                Ok(Err(e)) => return Err(anyhow::format_err!("{}: {e}", self.name)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(anyhow::format_err!("{} did not answer in {TIMEOUT:?}", self.name));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(anyhow::format_err!("{} exited", self.name));
                }
            };
            if msg.get("method").is_some() && msg.get("id").is_some() {
                let reply = json!({ "jsonrpc": "2.0", "id": msg["id"], "result": null });
                self.send(&reply)?;
                continue;
            }
            if want(&msg) {
                return Ok((at, msg));
            }
            self.stash.push((at, msg));
        }
    }

    /// Drops stashed messages: called when nothing sent so far is still awaited.
    pub(crate) fn forget(&mut self) {
        self.stash.clear();
    }

    /// The result of request `id`; an error answer is an error.
    pub(crate) fn wait_response(&mut self, id: i64) -> anyhow::Result<(Instant, Value)> {
        let (at, mut msg) =
            self.wait_for(|m| m.get("method").is_none() && m["id"].as_i64() == Some(id))?;
        if let Some(e) = msg.get("error") {
            return Err(anyhow::format_err!(
                "{} answered request {id} with an error: {e}",
                self.name
            ));
        }
        Ok((at, msg["result"].take()))
    }

    /// The `publishDiagnostics` params for `uri` at `version`. A server that publishes
    /// without versions is taken at its next publication for the file.
    pub(crate) fn wait_diagnostics(
        &mut self,
        uri: &str,
        version: i32,
    ) -> anyhow::Result<(Instant, Value)> {
        let (at, mut msg) = self.wait_for(|m| {
            let p = &m["params"];
            m["method"] == "textDocument/publishDiagnostics"
                && p["uri"] == uri
                && p["version"].as_i64().is_none_or(|v| v == i64::from(version))
        })?;
        Ok((at, msg["params"].take()))
    }

    pub(crate) fn shutdown(mut self) -> anyhow::Result<()> {
        let id = self.request("shutdown", Value::Null)?;
        self.wait_response(id)?;
        self.notify("exit", Value::Null)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Err(anyhow::format_err!("{} did not exit after `exit`", self.name))
    }
}

impl Drop for Session {
    /// A session that ends on an error must not leave its server running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The reader thread: frames from the server's stdout, each stamped when its last byte was
/// read, before decoding, so JSON parsing on this side is not counted.
fn read_messages(output: impl Read, tx: &mpsc::Sender<Result<(Instant, Value), String>>) {
    let mut input = BufReader::new(output);
    loop {
        let mut length: Option<usize> = None;
        let mut line = String::new();
        loop {
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot read its output: {e}")));
                    return;
                }
            }
            let header = line.trim_end();
            if header.is_empty() {
                if length.is_some() {
                    break;
                }
                continue;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok();
            }
        }
        let mut body = vec![0; length.unwrap_or(0)];
        if let Err(e) = input.read_exact(&mut body) {
            let _ = tx.send(Err(format!("cannot read a message body: {e}")));
            return;
        }
        let at = Instant::now();
        let msg = serde_json::from_slice::<Value>(&body)
            .map(|v| (at, v))
            .map_err(|e| format!("sent a message that is not JSON: {e}"));
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// The first line a tool prints for `--version`, for the report.
pub(crate) fn tool_version(exe: &Path) -> String {
    Command::new(exe)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "unknown version".to_owned())
}

pub(crate) fn load_average() -> Option<String> {
    let l = read_text(Path::new("/proc/loadavg")).ok()?;
    l.split_whitespace().next().map(str::to_owned)
}

pub(crate) fn file_uri(path: &Path) -> anyhow::Result<String> {
    let s = path.to_str().ok_or_else(|| anyhow::format_err!("{} is not UTF-8", path.display()))?;
    if !s.starts_with('/') || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/-._~".contains(&b))
    {
        return Err(anyhow::format_err!("{s} needs escaping in a URI; set TMPDIR to a plain path"));
    }
    Ok(format!("file://{s}"))
}

fn create_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::format_err!("cannot create {}: {e}", dir.display()))
}

/// Median, minimum and maximum of a sample.
#[derive(Debug, Clone, Copy)]
struct Stats {
    median: Duration,
    min: Duration,
    max: Duration,
}

impl Stats {
    fn of(samples: &[Duration]) -> Stats {
        let mut v = samples.to_vec();
        v.sort_unstable();
        let n = v.len();
        let median = match n {
            0 => Duration::ZERO,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2,
        };
        Stats {
            median,
            min: v.first().copied().unwrap_or_default(),
            max: v.last().copied().unwrap_or_default(),
        }
    }

    fn cell(self) -> String {
        format!("{} ({}–{})", ms(self.median), ms(self.min), ms(self.max))
    }
}

/// Milliseconds with one decimal, the unit of every figure here.
fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

/// A ratio for the report: two decimals below 1x, where one would round small ones to 0.
fn times(r: f64) -> String {
    if r < 1.0 { format!("{r:.2}x") } else { format!("{r:.1}x") }
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "not met" }
}

struct Report<'a> {
    machine: String,
    /// The 1-minute load average when the measurements ended: other builds share the machine.
    load_after: Option<String>,
    ops: usize,
    seed: u64,
    kind: GraphKind,
    bytes: usize,
    edits: &'a [Edit],
    delay: Duration,
    ours: &'a Measured,
    mlir: Option<(&'a Measured, &'a str)>,
}

impl Report<'_> {
    /// The measurements as a markdown table (also what the console shows).
    fn table(&self) -> String {
        let mut s = String::new();
        let servers: Vec<&Measured> =
            std::iter::once(self.ours).chain(self.mlir.map(|(m, _)| m)).collect();
        let header: Vec<&str> = servers.iter().map(|m| m.name).collect();
        let _ = writeln!(
            s,
            "| measurement (ms; median (min–max) of {}) | {} |",
            self.edits.len(),
            header.join(" | ")
        );
        let _ = writeln!(s, "| --- |{}", " --- |".repeat(servers.len()));
        let row = |s: &mut String, what: &str, cell: &dyn Fn(&Measured) -> String| {
            let cells: Vec<String> = servers.iter().map(|m| cell(m)).collect();
            let _ = writeln!(s, "| {what} | {} |", cells.join(" | "));
        };
        let opens = self.ours.opens.len();
        row(
            &mut s,
            &format!("(a) from scratch: `didOpen` → diagnostics (median of {opens} fresh servers)"),
            &|m| Stats::of(&m.opens).cell(),
        );
        row(&mut s, "(b) one-op edit: `didChange` → diagnostics", &|m| Stats::of(&m.edit).cell());
        row(&mut s, "(c) hover on the edited op, after (b)", &|m| Stats::of(&m.hover).cell());
        row(
            &mut s,
            "(e) typing on: a second edit to the op of (b) (its undo) → diagnostics",
            &|m| Stats::of(&m.again).cell(),
        );
        row(&mut s, "(d) undo the edit and hover at once: `didChange` → hover", &|m| {
            Stats::of(&m.edit_then_hover).cell()
        });
        row(&mut s, "diagnostics on open", &|m| m.open_diags.describe());
        row(&mut s, "text sync", &|m| {
            if m.incremental { "incremental".to_owned() } else { "full text per change".to_owned() }
        });
        s
    }

    /// The ratios the acceptance asks for, as a table: each server's from-scratch time over
    /// its incremental steps (target: at least 50x for ours on (b) and (c)), then the two
    /// servers step by step.
    fn ratios(&self) -> String {
        let mut s = String::new();
        let servers: Vec<&Measured> =
            std::iter::once(self.ours).chain(self.mlir.map(|(m, _)| m)).collect();
        let header: Vec<&str> = servers.iter().map(|m| m.name).collect();
        let _ = writeln!(s, "| ratio (of medians) | {} |", header.join(" | "));
        let _ = writeln!(s, "| --- |{}", " --- |".repeat(servers.len()));
        let steps = [
            ("(a) from scratch / (b) one-op edit", Step::Edit, true),
            ("(a) from scratch / (c) hover", Step::Hover, true),
            ("(a) from scratch / (e) a second edit to the same op", Step::Again, true),
            ("(a) from scratch / (d) undo and hover at once", Step::EditThenHover, false),
        ];
        for (what, step, has_target) in steps {
            let cells: Vec<String> = servers
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let r = ratio(m.open, m.median(step));
                    if i == 0 && has_target {
                        format!("{} (target at least 50x: {})", times(r), met(r >= 50.0))
                    } else {
                        times(r)
                    }
                })
                .collect();
            let _ = writeln!(s, "| {what} | {} |", cells.join(" | "));
        }
        // A quiet period is waiting, not work: (a) and (b) both include it.
        let wait = self.delay;
        if !wait.is_zero() {
            let ours_busy = |d: Duration| d.saturating_sub(wait);
            let r = ratio(ours_busy(self.ours.open), ours_busy(self.ours.median(Step::Edit)));
            let _ = writeln!(
                s,
                "| (a) / (b) without ttnn-analyzer's {} ms quiet period | {} (target at least 50x: {}) |{}",
                wait.as_millis(),
                times(r),
                met(r >= 50.0),
                if servers.len() > 1 { " no quiet period |" } else { "" }
            );
        }
        let Some((mlir, _)) = self.mlir else { return s };
        let _ = writeln!(
            s,
            "\n| step: mlir-lsp-server / ttnn-analyzer (medians; above 1x ttnn-analyzer is faster) | ratio |"
        );
        let _ = writeln!(s, "| --- | --- |");
        let per_step = [
            ("(a) from scratch", Step::Open),
            ("(b) one-op edit → diagnostics", Step::Edit),
            ("(c) hover after (b)", Step::Hover),
            ("(e) a second edit to the same op → diagnostics", Step::Again),
            ("(d) undo and hover at once", Step::EditThenHover),
        ];
        for (what, step) in per_step {
            let r = ratio(mlir.median(step), self.ours.median(step));
            let _ = writeln!(s, "| {what} | {} |", times(r));
        }
        s
    }

    fn section(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{HEADING}\n");
        let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
        let _ = writeln!(
            s,
            "Measured with `cargo run --release -p xtask -- bench-lsp`, which builds `cargo build --release -p cli` first (the client was a {profile} build); the task rewrites this section."
        );
        let _ = writeln!(s, "Machine: {}.", self.machine);
        if let Some(l) = &self.load_after {
            let _ = writeln!(s, "The 1-minute load average was {l} when the measurements ended.");
        }
        let _ = writeln!(
            s,
            "Input: `cargo xtask gen --ops {} --seed {} --kind {}` ({} ops with `ttnn.get_device`, {:.2} MB), opened as one document.",
            self.ops - 1,
            self.seed,
            self.kind.name(),
            self.ops,
            self.bytes as f64 / 1e6
        );
        let mlir =
            self.mlir.map_or_else(String::new, |(_, v)| format!(" and `mlir-lsp-server` ({v})"));
        let _ = writeln!(
            s,
            "Servers: `ttnn-analyzer lsp` (release){mlir}, each a child process spoken to over stdio in one session; a time runs from just before the first byte of a message is written to just after the last byte of the answer is read.\n"
        );
        s.push_str(&self.table());
        let ops: Vec<String> = self.edits.iter().map(|e| format!("`{}`", e.op)).collect();
        let _ = writeln!(
            s,
            "\nThe one-op edits change one attribute of one op in the middle half of the file, alternately `numericStable = true` to `false` on a softmax and the permutation `0, 2, 1, 3` to `0, 1, 2, 3` on a permute whose dims 1 and 2 are equal; both keep the file valid and both are part of the op's signature, so the op's layouts and its chain are re-derived. Ops: {}.",
            ops.join(", ")
        );
        let _ = writeln!(
            s,
            "Each edit is undone before the next, so every edit starts from the generated text: (e) undoes it right after (c), as a user typing on in the same op would change it again, then the edit is made again (untimed) and (d) undoes it with the hover sent right behind the undo. (b) is the first change to its op since the file was opened: in ttnn-analyzer it lowers the durability of the op's group of 32 (see `## Language server latency: where an edit's time goes`), and (e) shows what the keystrokes after it cost."
        );
        let _ = writeln!(
            s,
            "The first hover line: ttnn-analyzer ``{}``; mlir-lsp-server ``{}``.\n",
            self.ours.hover_sample,
            self.mlir.map_or("", |(m, _)| m.hover_sample.as_str())
        );
        s.push_str(&self.ratios());
        if self.delay.is_zero() {
            let _ = writeln!(
                s,
                "\nttnn-analyzer publishes diagnostics as soon as it has handled the messages already waiting (`ServerOptions::diagnostics_delay` is 0); a change that arrives while they are computed cancels them."
            );
        } else {
            let _ = writeln!(
                s,
                "\nttnn-analyzer publishes diagnostics after a quiet period of {} ms following the last change (`ServerOptions::diagnostics_delay`; the stdio server has no setting for it), so (a) and (b) each include {} ms of waiting; the last row of the first ratio table subtracts it from both.",
                self.delay.as_millis(),
                self.delay.as_millis()
            );
        }
        let _ = writeln!(
            s,
            "mlir-lsp-server re-parses inside the `didChange` handler and publishes at once, and it syncs full texts, so each of its changes carries the whole file ({:.2} MB) through the pipe.",
            self.bytes as f64 / 1e6
        );
        let _ = writeln!(
            s,
            "What each side computes differs: ttnn-analyzer parses, lowers, runs the layout analysis and the optimizer's plan (df-sharding-merge on an n150) and reports findings from both (op-model rejections, live L1, failed and declined chains, spills, reshards); on an edit inside one op it re-parses and re-lowers that op, re-validates its memos (per op, chain, block and chunk), re-derives the edited op's signature block, layouts and chain, re-walks the plan chunk that holds it (and the chunks after it only when what it hands on changes) and re-formats that chunk's findings; `## Language server latency: where an edit's time goes` below breaks that down."
        );
        let _ = writeln!(
            s,
            "mlir-lsp-server parses the file and runs the verifier; the TTNN dialect is not registered in it, so `ttnn.*` ops, `#ttnn` attributes and `!ttnn` types are accepted as unregistered (it needs no flag for that) and only generic IR structure is checked: SSA dominance, use-def types, block and region structure."
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_alternate_kinds_touch_distinct_ops_keep_the_file_clean_and_undo_exactly() {
        let text = generate(2000, 1, GraphKind::Mixed);
        let edits = pick_edits(&text, 6).unwrap();
        assert_eq!(edits.len(), 6);
        let kinds: Vec<&str> = edits.iter().map(|e| e.old).collect();
        assert_eq!(kinds[..2], [EDIT_KINDS[0].1, EDIT_KINDS[1].1]);
        assert!(kinds.windows(2).all(|w| w[0] != w[1]), "kinds alternate: {kinds:?}");
        let mut lines: Vec<u32> = edits.iter().map(|e| e.line).collect();
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), edits.len(), "one edit per op");
        let n_lines = text.lines().count() as u32;
        assert!(lines.iter().all(|&l| l >= n_lines / 4 && l < n_lines * 3 / 4));

        for e in &edits {
            let line = text.lines().nth(e.line as usize).unwrap();
            assert_eq!(&line[e.hover_col as usize - 1..][..6], "\"ttnn.");
            let mut edited = text.clone();
            e.apply(&mut edited, false).unwrap();
            assert_ne!(edited, text);
            let parse = syntax::parse(&edited);
            let lowered = ir::lower_parse(&edited, &parse);
            assert!(parse.errors.is_empty() && lowered.diagnostics.is_empty(), "{}", e.describe());
            e.apply(&mut edited, true).unwrap();
            assert_eq!(edited, text);
            assert!(e.apply(&mut edited, true).is_err(), "undo needs the edited text");
        }
    }

    #[test]
    fn only_permutes_with_equal_input_and_output_types_are_edited() {
        let square = r#"    %3 = "ttnn.permute"(%2) <{permutation = array<i64: 0, 2, 1, 3>}> : (tensor<1x32x32x64xbf16, #l6>) -> tensor<1x32x32x64xbf16, #l6> loc("p")"#;
        let oblong = r#"    %3 = "ttnn.permute"(%2) <{permutation = array<i64: 0, 2, 1, 3>}> : (tensor<1x8x32x64xbf16, #l6>) -> tensor<1x32x8x64xbf16, #l7> loc("p")"#;
        assert!(same_input_and_output_type(square));
        assert!(!same_input_and_output_type(oblong));
        assert!(!same_input_and_output_type("%0 = \"ttnn.get_device\"() : () -> !ttnn.device"));
    }

    #[test]
    fn frames_are_read_whole_whatever_other_headers_come_with_them() {
        let a = r#"{"jsonrpc":"2.0","id":1,"result":null}"#;
        let b = r#"{"jsonrpc":"2.0","method":"m","params":{"x":"\u00e9"}}"#;
        let stream = format!(
            "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{a}content-length:{}\r\n\r\n{b}",
            a.len(),
            b.len()
        );
        let (tx, rx) = mpsc::channel();
        read_messages(stream.as_bytes(), &tx);
        drop(tx);
        let got: Vec<Value> = rx.iter().map(|m| m.unwrap().1).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0]["id"], 1);
        assert_eq!(got[1]["params"]["x"], "é");
    }

    #[test]
    fn stats_take_the_middle_of_the_sorted_sample() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        let odd = Stats::of(&ms(&[30, 10, 20]));
        assert_eq!(
            (odd.median, odd.min, odd.max),
            (Duration::from_millis(20), Duration::from_millis(10), Duration::from_millis(30))
        );
        assert_eq!(Stats::of(&ms(&[40, 10, 20, 30])).median, Duration::from_millis(25));
        assert_eq!(Stats::of(&[]).median, Duration::ZERO);
    }
}
