//! `cargo xtask bench-edits [--inputs LIST] [--samples N] [--corpus DIR] [--server PATH]
//! [--mlir-lsp-server PATH] [--session-edits N] [--classes LIST] [--no-mlir] [--no-write]`: the language server's latency per
//! class of edit, side by side with LLVM's `mlir-lsp-server` on the same edits, written to
//! `docs/performance.md` under `## Language server latency per edit class`.
//!
//! Inputs (`--inputs`, comma separated, default `gen10k,gen100k,models`): `genN` (`gen10k`,
//! `gen100k`, `gen500`), a generated graph of N ops (`cargo xtask gen --ops N`, mixed kind,
//! seed 1), or of another kind with `:KIND` (`gen10k:conv`, `gen10k:transformer`);
//! `models`, the two largest TTIR models of the corpus (`--corpus DIR`, default
//! `../shared/corpus`) imported to TTNN with `ttnn-analyzer import`.
//!
//! Each server runs as a child process spoken to over stdio, as an editor does. Per input
//! and server, one session: the time from `didOpen` to the first `publishDiagnostics`, then
//! every edit class at `--samples` ops spread over the middle half of the file (default 10;
//! half of that on inputs over 50k ops). Each sample is an edit and its undo, each step
//! timed from just before its `didChange` is written to just after the
//! `publishDiagnostics` for that document version is read (the server must publish after
//! every change, also an unchanged list; one that publishes without versions is taken at
//! its next publication for the file). A server that syncs whole documents gets the whole
//! text in each change, as its client would send it.
//!
//! Classes, and what an edit and its undo are (the undo is timed too, under the class
//! named in brackets when it differs): whitespace (a space before ` : (`); comment (a
//! trailing `// ...` typed in one change); loc rename (`loc("x")` to `loc("x_r")`);
//! attribute value (a boolean attribute flipped); op-kind change (a unary elementwise op
//! to another); result type change (`bf16` to `f32` in the result type: the uses then
//! mismatch, as while typing); insert an op (a copy of the op with a new result name, `%ins5`)
//! [delete an op]; rename a value at all its uses (one change per occurrence, in one
//! `didChange`, last first, as an editor's rename sends them); type a token (three
//! characters typed into a loc name one change each, then deleted one each); break an op
//! (its operand list's `(` deleted) [fix an op]; paste 100 ops (a copy of 100 consecutive
//! ops with renamed results) [cut 100 ops]; add an override, change it, remove it (in the
//! open sidecar `<stem>.overrides` document; ttnn-analyzer only).
//!
//! `--classes LIST` (comma separated) keeps only the samples whose edit is of a class whose
//! name contains one of them (`--classes insert,paste`), to profile a server on those; the
//! undo steps of a kept sample are kept with it.
//!
//! `--session-edits N` (default 0: off) goes on, in ttnn-analyzer's session on each input,
//! replaying the scenarios' steps in a loop until N edits were made in all, and reports the
//! server's resident set (`VmRSS`) right after opening and after the last edit.
//!
//! Run it in release (`cargo run --release -p xtask -- bench-edits`); without `--server`
//! it builds `cargo build --release -p cli` first.

use std::{
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::{
    bench_lsp::{Session, file_uri, load_average, tool_version},
    r#gen::{GraphKind, generate},
    util::{Flags, machine_description, read_text, replace_section, workspace_root, write_file},
};

/// The heading this task owns in `docs/performance.md`.
const HEADING: &str = "## Language server latency per edit class";

const DEFAULT_MLIR_LSP_SERVER: &str = "/usr/lib/llvm-19/bin/mlir-lsp-server";

/// Unary elementwise ops an op-kind change swaps between (same operand and result types).
const UNARY: &[&str] = &["relu", "gelu", "exp", "sigmoid", "tanh", "silu", "neg", "rsqrt", "sqrt"];

/// Boolean attributes an attribute edit flips.
const FLAGS: &[(&str, &str)] = &[
    ("numericStable = true", "numericStable = false"),
    ("transpose_b = false", "transpose_b = true"),
    ("transpose_a = false", "transpose_a = true"),
    ("keep_dim = true", "keep_dim = false"),
    ("keep_dim = false", "keep_dim = true"),
];

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse(
        "bench-edits",
        args,
        &[
            "--inputs",
            "--samples",
            "--corpus",
            "--server",
            "--mlir-lsp-server",
            "--session-edits",
            "--classes",
        ],
        &["--no-mlir", "--no-write"],
    )?;
    let samples: usize = flags.parsed("--samples", 10)?;
    let session_edits: usize = flags.parsed("--session-edits", 0)?;
    if samples == 0 {
        return Err(anyhow::format_err!("`--samples` must be at least 1"));
    }
    let wanted: Vec<&str> =
        flags.value("--inputs").unwrap_or("gen10k,gen100k,models").split(',').collect();
    let root = workspace_root();
    let corpus = flags
        .value("--corpus")
        .map_or_else(|| root.join("..").join("shared").join("corpus"), PathBuf::from);

    let machine = machine_description();
    let mut out = std::io::stdout().lock();
    writeln!(out, "machine: {machine}")?;
    if cfg!(debug_assertions) {
        writeln!(out, "warning: a debug build; run `cargo run --release -p xtask -- bench-edits`")?;
    }
    let ours_exe = match flags.value("--server") {
        Some(p) => PathBuf::from(p),
        None => crate::util::build_cli(&root)?,
    };
    let mlir_exe = (!flags.switch("--no-mlir")).then(|| {
        PathBuf::from(flags.value("--mlir-lsp-server").unwrap_or(DEFAULT_MLIR_LSP_SERVER))
    });
    let dir = std::env::temp_dir().join("ttnn-analyzer-bench-edits");
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::format_err!("cannot create {}: {e}", dir.display()))?;

    let mut inputs: Vec<Input> = Vec::new();
    for w in &wanted {
        match *w {
            w if w.starts_with("gen") => {
                // `gen10k` or `gen10k:conv`: a size, then optionally the graph's kind.
                let (n, kind) = w[3..].split_once(':').unwrap_or((&w[3..], "mixed"));
                let kind = GraphKind::from_name(kind).ok_or_else(|| {
                    anyhow::format_err!(
                        "`{w}`: unknown graph kind `{kind}` (transformer, conv or mixed)"
                    )
                })?;
                let ops = match n.strip_suffix('k') {
                    Some(k) => k.parse::<usize>().map(|k| k * 1000),
                    None => n.parse::<usize>(),
                }
                .map_err(|_| anyhow::format_err!("`{w}`: expected `gen` and a size, as gen10k"))?;
                let text = generate(ops, 1, kind);
                let path = dir.join(format!("gen-{}-{ops}.mlir", kind.name()));
                write_file(&path, text.as_bytes())?;
                let name = match kind {
                    GraphKind::Mixed => format!("generated, {} ops", ops + 1),
                    _ => format!("generated {}, {} ops", kind.name(), ops + 1),
                };
                inputs.push(Input { name, path, text });
            }
            "models" => inputs.extend(import_models(&ours_exe, &corpus, &dir)?),
            other => return Err(anyhow::format_err!("unknown input `{other}`")),
        }
    }

    let mlir_version = mlir_exe.as_deref().map(tool_version);
    let mut results = Vec::new();
    for input in &inputs {
        if !input.text.is_ascii() {
            return Err(anyhow::format_err!("{} is not ASCII", input.path.display()));
        }
        let n = if count_ops(&input.text) > 50_000 { samples.div_ceil(2) } else { samples };
        let mut scenarios = scenarios(&input.text, n);
        if let Some(classes) = flags.value("--classes") {
            let wanted: Vec<&str> = classes.split(',').collect();
            scenarios.retain(|sc| {
                sc.first().is_some_and(|step| wanted.iter().any(|w| step.class.contains(w)))
            });
        }
        writeln!(
            out,
            "input: {} ({} bytes), {}",
            input.name,
            input.text.len(),
            input.path.display()
        )?;
        let mut cmd = Command::new(&ours_exe);
        cmd.arg("lsp");
        let ours = measure(
            "ttnn-analyzer",
            cmd,
            input,
            &scenarios,
            (true, session_edits),
            &dir,
            &mut out,
        )?;
        let mlir = match &mlir_exe {
            Some(exe) => Some(measure(
                "mlir-lsp-server",
                Command::new(exe),
                input,
                &scenarios,
                (false, 0),
                &dir,
                &mut out,
            )?),
            None => None,
        };
        results.push((input, ours, mlir));
        // Written after each input, so a long run that is stopped keeps what it measured.
        let section = report(&machine, &results, mlir_version.as_deref(), samples);
        if !flags.switch("--no-write") {
            let doc_path = root.join("docs").join("performance.md");
            let doc = read_text(&doc_path)?;
            write_file(&doc_path, replace_section(&doc, HEADING, &section).as_bytes())?;
            writeln!(out, "wrote {} (section `{HEADING}`)", doc_path.display())?;
        }
        if results.len() == inputs.len() {
            writeln!(out)?;
            write!(out, "{section}")?;
        }
    }
    Ok(())
}

struct Input {
    name: String,
    path: PathBuf,
    text: String,
}

/// The two largest TTIR models of the corpus, imported to TTNN.
fn import_models(bin: &Path, corpus: &Path, dir: &Path) -> anyhow::Result<Vec<Input>> {
    let models = corpus.join("ttir-models");
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&models)
        .map_err(|e| anyhow::format_err!("cannot read {}: {e}", models.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.len(), p)))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for (_, file) in files.iter().rev().take(2) {
        let stem = file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let path = dir.join(format!("{stem}.ttnn.mlir"));
        let status = Command::new(bin)
            .arg("import")
            .arg(file)
            .arg("-o")
            .arg(&path)
            .status()
            .map_err(|e| anyhow::format_err!("cannot run {}: {e}", bin.display()))?;
        if !status.success() {
            return Err(anyhow::format_err!("importing {} failed", file.display()));
        }
        let text = read_text(&path)?;
        let name = format!("{stem} (corpus, imported), {} ops", count_ops(&text));
        out.push(Input { name, path, text });
    }
    Ok(out)
}

fn count_ops(text: &str) -> usize {
    text.lines().filter(|l| op_result(l).is_some()).count()
}

/// The result name of a line `%x = "ttnn.op"(...`, if it is one.
fn op_result(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let (result, rest) = t.split_once(" = ")?;
    (result.starts_with('%') && !result.contains([',', ':']) && rest.starts_with("\"ttnn."))
        .then_some(result)
}

/// Which document a step changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DocKind {
    Ir,
    Overrides,
}

/// One replacement, in bytes of the text left by the change before it.
#[derive(Debug, Clone)]
struct Change {
    start: usize,
    end: usize,
    text: String,
}

/// One `didChange`, timed under `class`.
#[derive(Debug, Clone)]
struct Step {
    class: &'static str,
    doc: DocKind,
    changes: Vec<Change>,
}

/// The steps of one sample: an edit and what undoes it, leaving the texts as they were.
type Scenario = Vec<Step>;

/// The order classes are reported in.
const CLASSES: &[&str] = &[
    "whitespace",
    "comment",
    "loc rename",
    "attribute value",
    "op-kind change",
    "result type change",
    "insert an op",
    "delete an op",
    "rename a value at all its uses",
    "type a token (per keystroke)",
    "break an op",
    "fix an op",
    "paste 100 ops",
    "cut 100 ops",
    "add an override",
    "change an override",
    "remove an override",
];

fn ir(class: &'static str, changes: Vec<Change>) -> Step {
    Step { class, doc: DocKind::Ir, changes }
}

fn one(start: usize, end: usize, text: &str) -> Vec<Change> {
    vec![Change { start, end, text: text.to_owned() }]
}

/// Every class's scenarios on `text`: up to `n` per class, at ops spread over the middle
/// half of the file, each op used by one class at most once.
fn scenarios(text: &str, n: usize) -> Vec<Scenario> {
    let mut line_starts = vec![0usize];
    line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let lines: Vec<&str> = text.lines().collect();
    let ops: Vec<usize> =
        (lines.len() / 4..lines.len() * 3 / 4).filter(|&i| op_result(lines[i]).is_some()).collect();
    let mut out: Vec<Scenario> = Vec::new();
    // Each class takes candidates where it applies, evenly spaced over the op lines.
    // Candidates are tried from evenly spaced op lines onward, a few hundred at most each:
    // making every op's candidate first was quadratic for the renames (each scans to the end
    // of its function) and took minutes on the 100k-op graph.
    let mut per_class = |make: &dyn Fn(usize) -> Option<Scenario>| {
        if ops.is_empty() {
            return;
        }
        let mut used = rustc_hash::FxHashSet::default();
        for j in 0..n {
            let from = (2 * j + 1) * ops.len() / (2 * n);
            let found = ops[from..]
                .iter()
                .take(400)
                .filter(|i| !used.contains(*i))
                .find_map(|&i| make(i).map(|s| (i, s)));
            if let Some((i, s)) = found {
                used.insert(i);
                out.push(s);
            }
        }
    };
    let at = |i: usize| line_starts[i];
    let line_end = |i: usize| at(i) + lines[i].len();
    per_class(&|i| {
        let p = at(i) + lines[i].find(" : (")?;
        Some(vec![ir("whitespace", one(p, p, " ")), ir("whitespace", one(p, p + 1, ""))])
    });
    per_class(&|i| {
        let p = line_end(i);
        let c = " // checked by hand";
        Some(vec![ir("comment", one(p, p, c)), ir("comment", one(p, p + c.len(), ""))])
    });
    let loc_name_end = |i: usize| -> Option<usize> {
        let l = lines[i];
        let s = l.find("loc(\"")? + 5;
        Some(at(i) + s + l[s..].find('"')?)
    };
    per_class(&|i| {
        let p = loc_name_end(i)?;
        Some(vec![ir("loc rename", one(p, p, "_r")), ir("loc rename", one(p, p + 2, ""))])
    });
    per_class(&|i| {
        let (old, new) = FLAGS.iter().find(|(old, _)| lines[i].contains(old))?;
        let p = at(i) + lines[i].find(old)?;
        Some(vec![
            ir("attribute value", one(p, p + old.len(), new)),
            ir("attribute value", one(p, p + new.len(), old)),
        ])
    });
    per_class(&|i| {
        let l = lines[i];
        let (name, start) =
            UNARY.iter().find_map(|u| Some((*u, l.find(&format!("\"ttnn.{u}\""))?)))?;
        let other = if name == "relu" { "gelu" } else { "relu" };
        let p = at(i) + start + 6;
        Some(vec![
            ir("op-kind change", one(p, p + name.len(), other)),
            ir("op-kind change", one(p, p + other.len(), name)),
        ])
    });
    per_class(&|i| {
        let l = lines[i];
        let arrow = l.rfind(") -> ")?;
        let p = at(i) + arrow + l[arrow..].find("xbf16")? + 1;
        Some(vec![
            ir("result type change", one(p, p + 4, "f32")),
            ir("result type change", one(p, p + 3, "bf16")),
        ])
    });
    per_class(&|i| {
        let l = lines[i];
        let result = op_result(l)?;
        // `%ins5`, not `%5_ins`: a name that starts with a digit is all digits in MLIR.
        let copy = rename_in(l, &[(result.to_owned(), format!("%ins{}", &result[1..]))], "_ins");
        let p = line_end(i) + 1;
        let inserted = format!("{copy}\n");
        Some(vec![
            ir("insert an op", one(p, p, &inserted)),
            ir("delete an op", one(p, p + inserted.len(), "")),
        ])
    });
    per_class(&|i| {
        let result = op_result(lines[i])?;
        // Uses follow the definition, up to the end of its function.
        let end = (i..lines.len()).find(|&j| lines[j].trim_start().starts_with('}'))?;
        let region = &text[at(i)..at(end)];
        let mut offsets: Vec<usize> = uses(region, result).into_iter().map(|o| o + at(i)).collect();
        if offsets.len() < 2 {
            return None;
        }
        offsets.reverse();
        let renamed = format!("%renamed{}", &result[1..]);
        let forth = offsets.iter().map(|&o| Change {
            start: o,
            end: o + result.len(),
            text: renamed.clone(),
        });
        // The way back, against the renamed text: each occurrence has moved by the growth of
        // the ones before it.
        let grow = renamed.len() - result.len();
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        let back: Vec<Change> = sorted
            .iter()
            .enumerate()
            .rev()
            .map(|(k, &o)| Change {
                start: o + k * grow,
                end: o + k * grow + renamed.len(),
                text: result.to_owned(),
            })
            .collect();
        Some(vec![
            ir("rename a value at all its uses", forth.collect()),
            ir("rename a value at all its uses", back),
        ])
    });
    per_class(&|i| {
        let p = loc_name_end(i)?;
        let mut steps = Vec::new();
        for (k, c) in "abc".chars().enumerate() {
            steps.push(ir("type a token (per keystroke)", one(p + k, p + k, &c.to_string())));
        }
        for k in (0..3).rev() {
            steps.push(ir("type a token (per keystroke)", one(p + k, p + k + 1, "")));
        }
        Some(steps)
    });
    per_class(&|i| {
        let l = lines[i];
        let name = l.find("\"ttnn.")?;
        let open = name + 1 + l[name + 1..].find('"')? + 1;
        if l.as_bytes().get(open) != Some(&b'(') {
            return None;
        }
        let p = at(i) + open;
        Some(vec![ir("break an op", one(p, p + 1, "")), ir("fix an op", one(p, p, "("))])
    });
    per_class(&|i| {
        let block = i..i + 100;
        if block.end > lines.len() || !block.clone().all(|j| op_result(lines[j]).is_some()) {
            return None;
        }
        let renames: Vec<(String, String)> = block
            .clone()
            .filter_map(|j| op_result(lines[j]))
            .map(|r| (r.to_owned(), format!("%pasted{}", &r[1..])))
            .collect();
        let mut pasted = String::new();
        for j in block.clone() {
            pasted.push_str(&rename_in(lines[j], &renames, "_pasted"));
            pasted.push('\n');
        }
        let p = line_end(block.end - 1) + 1;
        Some(vec![
            ir("paste 100 ops", one(p, p, &pasted)),
            ir("cut 100 ops", one(p, p + pasted.len(), "")),
        ])
    });
    per_class(&|i| {
        let l = lines[i];
        let s = l.find("loc(\"")? + 5;
        let name = &l[s..s + l[s..].find('"')?];
        let line = format!("override-output-layout={name}=1x1:dram:interleaved:tile:bf16\n");
        let at_layout = line.find("dram")?;
        let step = |class, changes| Step { class, doc: DocKind::Overrides, changes };
        Some(vec![
            step("add an override", one(0, 0, &line)),
            step("change an override", one(at_layout, at_layout + 4, "l1")),
            step("remove an override", one(0, line.len() - 2, "")),
        ])
    });
    out
}

/// `line` with each value of `renames` replaced where it stands as a whole name, and each
/// inline loc name given `suffix`.
fn rename_in(line: &str, renames: &[(String, String)], suffix: &str) -> String {
    let mut out = line.to_owned();
    for (from, to) in renames {
        let mut offsets = uses(&out, from);
        offsets.reverse();
        for o in offsets {
            out.replace_range(o..o + from.len(), to);
        }
    }
    if let Some(s) = out.find("loc(\"").map(|s| s + 5)
        && let Some(e) = out[s..].find('"')
    {
        out.insert_str(s + e, suffix);
    }
    out
}

/// Where `name` (`%x`) occurs in `text` as a whole value name.
fn uses(text: &str, name: &str) -> Vec<usize> {
    text.match_indices(name)
        .filter(|(o, _)| {
            let after = text.as_bytes().get(o + name.len()).copied().unwrap_or(b' ');
            !(after.is_ascii_alphanumeric() || after == b'_' || after == b'.' || after == b'$')
        })
        .map(|(o, _)| o)
        .collect()
}

/// Timings of one server on one input.
struct Measured {
    open: Duration,
    /// Per class (as in [`CLASSES`]), each step's time.
    times: Vec<Vec<Duration>>,
    /// With `--session-edits`: the resident set (KiB) after opening, after the last edit, and
    /// the edits made.
    memory: Option<(u64, u64, usize)>,
}

/// A document the client holds, with how its server syncs it.
struct Doc {
    uri: String,
    text: String,
    version: i32,
}

impl Doc {
    /// Applies `changes` and sends them as the next version; when it started going out.
    fn change(
        &mut self,
        s: &mut Session,
        changes: &[Change],
        incremental: bool,
    ) -> anyhow::Result<Instant> {
        self.version += 1;
        let mut sent = Vec::new();
        for c in changes {
            if c.end > self.text.len() || c.start > c.end {
                return Err(anyhow::format_err!("a change out of the text of {}", self.uri));
            }
            sent.push(json!({
                "range": { "start": position(&self.text, c.start), "end": position(&self.text, c.end) },
                "text": c.text,
            }));
            self.text.replace_range(c.start..c.end, &c.text);
        }
        let content = if incremental { sent } else { vec![json!({ "text": self.text })] };
        let params = json!({
            "textDocument": { "uri": self.uri, "version": self.version },
            "contentChanges": content,
        });
        s.notify("textDocument/didChange", params)
    }
}

/// The LSP position of byte `offset` (ASCII text: bytes are UTF-16 units).
fn position(text: &str, offset: usize) -> Value {
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let col = offset - before.rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": col })
}

fn measure(
    name: &'static str,
    mut cmd: Command,
    input: &Input,
    scenarios: &[Scenario],
    (overrides, session_edits): (bool, usize),
    dir: &Path,
    out: &mut impl std::io::Write,
) -> anyhow::Result<Measured> {
    let log = dir.join(format!("{name}.log"));
    let uri = file_uri(&input.path)?;
    let mut s = Session::start(name, &mut cmd, &log)?;
    let init = s.request(
        "initialize",
        json!({
            "processId": std::process::id(),
            "rootUri": null,
            "capabilities": { "textDocument": { "publishDiagnostics": { "versionSupport": true } } },
        }),
    )?;
    let (_, init) = s.wait_response(init)?;
    let sync = &init["capabilities"]["textDocumentSync"];
    let incremental = sync.as_u64().or_else(|| sync["change"].as_u64()) == Some(2);
    s.notify("initialized", json!({}))?;
    let opened = s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "mlir", "version": 1, "text": input.text } }),
    )?;
    let (done, _) = s.wait_diagnostics(&uri, 1)?;
    let open = done - opened;
    s.forget();
    writeln!(out, "  {name}: open {:.1} ms", ms(open))?;
    let opened_kib = s.resident_kib();
    let mut ir = Doc { uri: uri.clone(), text: input.text.clone(), version: 1 };
    let ov_path = input.path.with_extension("overrides");
    let mut ov = Doc { uri: file_uri(&ov_path)?, text: String::new(), version: 1 };
    if overrides {
        s.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": ov.uri, "languageId": "ttnn-overrides", "version": 1, "text": "" } }),
        )?;
        s.wait_diagnostics(&ov.uri, 1)?;
        s.forget();
    }
    let mut times = vec![Vec::new(); CLASSES.len()];
    let mut edits = 0usize;
    // The measured pass, then (with `--session-edits`) the same steps again, untimed, until
    // the session has seen that many edits; a scenario is always finished, so the texts end
    // as they began.
    let mut pass = 0;
    while pass == 0 || edits < session_edits {
        for sc in scenarios {
            for step in sc {
                let doc = match step.doc {
                    DocKind::Ir => &mut ir,
                    DocKind::Overrides if overrides => &mut ov,
                    DocKind::Overrides => continue,
                };
                let sent = doc.change(&mut s, &step.changes, incremental)?;
                let (done, _) = s.wait_diagnostics(&doc.uri, doc.version)?;
                s.forget();
                edits += 1;
                if pass == 0
                    && let Some(k) = CLASSES.iter().position(|c| *c == step.class)
                {
                    times[k].push(done - sent);
                }
            }
        }
        pass += 1;
        if edits == 0 {
            break;
        }
    }
    let memory = if session_edits > 0 {
        opened_kib.zip(s.resident_kib()).map(|(a, b)| (a, b, edits))
    } else {
        None
    };
    if let Some((a, b, n)) = memory {
        writeln!(
            out,
            "  {name}: resident set {} MiB after opening, {} MiB after {n} edits ({:.2}x)",
            a / 1024,
            b / 1024,
            b as f64 / a.max(1) as f64
        )?;
    }
    if ir.text != input.text {
        return Err(anyhow::format_err!(
            "the edits did not leave {} as it was",
            input.path.display()
        ));
    }
    s.shutdown()?;
    for (k, t) in times.iter().enumerate() {
        if let Some((p50, p95)) = percentiles(t) {
            writeln!(
                out,
                "  {name}: {}: p50 {:.1} ms, p95 {:.1} ms ({} steps)",
                CLASSES[k],
                ms(p50),
                ms(p95),
                t.len()
            )?;
        }
    }
    Ok(Measured { open, times, memory })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median and the 95th percentile (nearest rank).
fn percentiles(times: &[Duration]) -> Option<(Duration, Duration)> {
    if times.is_empty() {
        return None;
    }
    let mut t = times.to_vec();
    t.sort_unstable();
    let rank = |p: f64| t[((p * t.len() as f64).ceil() as usize).clamp(1, t.len()) - 1];
    Some((rank(0.5), rank(0.95)))
}

fn report(
    machine: &str,
    results: &[(&Input, Measured, Option<Measured>)],
    mlir_version: Option<&str>,
    samples: usize,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{HEADING}\n");
    let _ = writeln!(
        s,
        "Measured by `cargo run --release -p xtask -- bench-edits` (`--samples {samples}`; this run's client was a {} build): a real stdio LSP session against the release binary of `ttnn-analyzer lsp` and, on the same edits, `mlir-lsp-server` ({}). Each figure is from the `didChange` to the `publishDiagnostics` of that document version; open is from `didOpen` to the first diagnostics. What each class is, and how the samples are taken, is in the task's doc comment (`xtask/src/bench_edits.rs`).\n",
        if cfg!(debug_assertions) { "debug" } else { "release" },
        mlir_version.unwrap_or("not run")
    );
    let _ = writeln!(
        s,
        "Machine: {machine}; 1-minute load average {} at the end.\n",
        load_average().unwrap_or_else(|| "unknown".to_owned())
    );
    for (input, ours, mlir) in results {
        let _ = writeln!(s, "### {}\n", input.name);
        let _ =
            writeln!(s, "| edit | steps | ttnn-analyzer p50 | p95 | mlir-lsp-server p50 | p95 |");
        let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: |");
        let cell = |d: Duration| format!("{:.1} ms", ms(d));
        let _ = writeln!(
            s,
            "| open (to first diagnostics) | 1 | {} | | {} | |",
            cell(ours.open),
            mlir.as_ref().map_or_else(|| "-".to_owned(), |m| cell(m.open))
        );
        for (k, class) in CLASSES.iter().enumerate() {
            let Some((p50, p95)) = percentiles(&ours.times[k]) else { continue };
            let theirs = mlir.as_ref().and_then(|m| percentiles(&m.times[k]));
            let (m50, m95) = theirs
                .map_or_else(|| ("-".to_owned(), "-".to_owned()), |(a, b)| (cell(a), cell(b)));
            let _ = writeln!(
                s,
                "| {class} | {} | {} | {} | {m50} | {m95} |",
                ours.times[k].len(),
                cell(p50),
                cell(p95)
            );
        }
        if let Some((a, b, n)) = ours.memory {
            let _ = writeln!(
                s,
                "\nttnn-analyzer's resident set: {} MiB after opening, {} MiB after a session of {n} edits (the steps above, replayed), {:.2}x.",
                a / 1024,
                b / 1024,
                b as f64 / a.max(1) as f64
            );
        }
        let _ = writeln!(s);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "func.func @f(%a: t) -> t {\n  %0 = \"ttnn.relu\"(%a) : (tensor<2xbf16, #l>) -> tensor<2xbf16, #l> loc(\"x_0\")\n  %1 = \"ttnn.exp\"(%0) : (tensor<2xbf16, #l>) -> tensor<2xbf16, #l> loc(\"x_1\")\n  %10 = \"ttnn.exp\"(%0, %1) : (tensor<2xbf16, #l>) -> tensor<2xbf16, #l> loc(\"x_2\")\n  return %10 : t\n}\n";

    /// Each scenario's steps, applied in order, leave the texts as they were, and each
    /// class's edit does what its name says.
    #[test]
    fn every_scenario_is_undone_by_its_own_steps() {
        let all = scenarios(TEXT, 3);
        let mut seen = Vec::new();
        for sc in &all {
            let mut ir = TEXT.to_owned();
            let mut ov = String::new();
            for step in sc {
                let doc = if step.doc == DocKind::Ir { &mut ir } else { &mut ov };
                for c in &step.changes {
                    doc.replace_range(c.start..c.end, &c.text);
                }
                if !seen.contains(&step.class) {
                    seen.push(step.class);
                }
            }
            assert_eq!(ir, TEXT, "{:?}", sc[0].class);
            assert_eq!(ov, "", "{:?}", sc[0].class);
        }
        // No 100-op block in this text, so no paste.
        expect_test::expect![[r#"
            [
                "whitespace",
                "comment",
                "loc rename",
                "op-kind change",
                "result type change",
                "insert an op",
                "delete an op",
                "rename a value at all its uses",
                "type a token (per keystroke)",
                "break an op",
                "fix an op",
                "add an override",
                "change an override",
                "remove an override",
            ]
        "#]]
        .assert_debug_eq(&seen);
    }

    #[test]
    fn a_rename_changes_every_use_and_only_whole_names() {
        let sc = scenarios(TEXT, 3);
        // `%1`'s rename, which must leave `%10` alone.
        let rename = sc
            .iter()
            .find(|s| s[0].class.starts_with("rename") && s[0].changes[0].text == "%renamed1")
            .expect("a rename of %1");
        let mut text = TEXT.to_owned();
        for c in &rename[0].changes {
            text.replace_range(c.start..c.end, &c.text);
        }
        expect_test::expect![[r#"
            func.func @f(%a: t) -> t {
              %0 = "ttnn.relu"(%a) : (tensor<2xbf16, #l>) -> tensor<2xbf16, #l> loc("x_0")
              %renamed1 = "ttnn.exp"(%0) : (tensor<2xbf16, #l>) -> tensor<2xbf16, #l> loc("x_1")
              %10 = "ttnn.exp"(%0, %renamed1) : (tensor<2xbf16, #l>) -> tensor<2xbf16, #l> loc("x_2")
              return %10 : t
            }
        "#]]
        .assert_eq(&text);
    }
}
