//! `cargo xtask corpus [--corpus DIR] [--no-mlir-opt]`: the real-world corpus check CI runs.
//!
//! Every `*.mlir` under `DIR/ttnn` and `DIR/ttir-models` must parse without syntax errors
//! (except the `fabric_api_snippets` templates, which must be rejected), and must survive the
//! printer: printed text re-parses cleanly and lowers to the same semantic model. Semantic
//! diagnostics are only counted: tt-mlir's negative tests rightly produce them.
//!
//! When `mlir-opt` is installed, the printer is also checked against MLIR itself: for every
//! TTNN file MLIR accepts as written, it must accept our printed text too and print the same
//! generic form (whitespace aside). That catches printer changes that re-parse in our parser
//! but mean something else to MLIR.
//!
//! The corpus is data kept outside the repository (`../shared/corpus`); if it is absent the
//! task says so and succeeds, so the check never blocks a checkout without it.

use std::{
    collections::BTreeMap,
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    sync::atomic::{AtomicUsize, Ordering},
    time::Instant,
};

use ir::LoweredFile;

use crate::util::{Flags, read_text, workspace_root};

/// The two corpus areas, in report order.
const AREAS: [&str; 2] = ["ttnn", "ttir-models"];

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse("corpus", args, &["--corpus"], &["--no-mlir-opt"])?;
    let dir = match flags.value("--corpus") {
        Some(d) => PathBuf::from(d),
        None => {
            let root = workspace_root();
            root.parent().map_or(root.clone(), Path::to_path_buf).join("shared").join("corpus")
        }
    };
    let mut out = std::io::stdout().lock();
    if !dir.is_dir() {
        writeln!(out, "note: no corpus at {}, nothing to check", dir.display())?;
        return Ok(());
    }
    let mlir_opt = if flags.switch("--no-mlir-opt") { None } else { find_mlir_opt() };

    let mut files = Vec::new();
    for (area_idx, area) in AREAS.iter().enumerate() {
        let area_dir = dir.join(area);
        if area_dir.is_dir() {
            let mut found = Vec::new();
            collect_mlir_files(&area_dir, &mut found)?;
            found.sort();
            files.extend(found.into_iter().map(|p| (area_idx, p)));
        }
    }

    let start = Instant::now();
    let reports = check_all(&dir, &files, mlir_opt.as_deref());
    let elapsed = start.elapsed();

    write_summary(&mut out, &dir, &reports, mlir_opt.as_deref(), elapsed.as_secs_f64())?;
    let failed: Vec<&FileReport> = reports.iter().filter(|r| !r.failures.is_empty()).collect();
    if failed.is_empty() {
        writeln!(out, "\nall {} corpus files passed", reports.len())?;
        return Ok(());
    }
    writeln!(out, "\nfailing files:")?;
    for r in &failed {
        for f in &r.failures {
            writeln!(out, "  {}: {f}", r.rel)?;
        }
    }
    out.flush()?;
    Err(anyhow::format_err!("{} of {} corpus files failed", failed.len(), reports.len()))
}

/// What happened to one file. `failures` empty means it passed.
struct FileReport {
    area: usize,
    rel: String,
    bytes: usize,
    syntax_errors: usize,
    /// Semantic (lowering) diagnostic codes, with repeats.
    semantic: Vec<&'static str>,
    round_trip: Outcome,
    mlir_opt: MlirOpt,
    failures: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    /// Not applicable: the file is expected to have syntax errors, or failed to parse.
    Skipped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MlirOpt {
    NotRun,
    /// MLIR itself rejects the file as written (negative tests, templates).
    Rejected,
    Passed,
    Failed,
}

/// Checks all files on every available core; reports come back in `files` order.
fn check_all(dir: &Path, files: &[(usize, PathBuf)], mlir_opt: Option<&Path>) -> Vec<FileReport> {
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 8);
    let mut done: Vec<(usize, FileReport)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut acc = Vec::new();
                    loop {
                        let idx = next.fetch_add(1, Ordering::Relaxed);
                        let Some((area, path)) = files.get(idx) else { break };
                        acc.push((idx, check_file(dir, *area, path, idx, mlir_opt)));
                    }
                    acc
                })
            })
            .collect();
        // A worker can only fail by panicking inside the parser or lowering; surface that as
        // a panic here too rather than silently dropping its files.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(idx, _)| *idx);
    done.into_iter().map(|(_, r)| r).collect()
}

fn check_file(
    dir: &Path,
    area: usize,
    path: &Path,
    idx: usize,
    mlir_opt: Option<&Path>,
) -> FileReport {
    let rel = path.strip_prefix(dir).unwrap_or(path).to_string_lossy().replace('\\', "/");
    let expect_errors = path.components().any(|c| c.as_os_str() == "fabric_api_snippets");
    let mut report = FileReport {
        area,
        rel,
        bytes: 0,
        syntax_errors: 0,
        semantic: Vec::new(),
        round_trip: Outcome::Skipped,
        mlir_opt: MlirOpt::NotRun,
        failures: Vec::new(),
    };
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            report.failures.push(format!("{e:#}"));
            return report;
        }
    };
    report.bytes = text.len();

    // a. Parse and lower.
    let parse = syntax::parse(&text);
    let lowered = ir::lower_parse(&text, &parse);
    report.syntax_errors = parse.errors.len();
    report.semantic = semantic_codes(&parse, &lowered);
    if expect_errors && parse.errors.is_empty() {
        report.failures.push("template with placeholders parsed without a syntax error".to_owned());
    } else if !expect_errors && let Some(e) = parse.errors.first() {
        report.failures.push(format!(
            "{} syntax error(s), first: {} at {}..{}: {}",
            parse.errors.len(),
            e.code,
            e.range.start,
            e.range.end,
            e.message
        ));
    }

    // b. Round trip through the printer. Printing must not panic even for the templates, but
    // only error-free files have a semantic model worth comparing.
    let printed = syntax::print(&text, &parse);
    if parse.errors.is_empty() {
        let reparsed = syntax::parse(&printed);
        let result = match reparsed.errors.first() {
            Some(e) => Err(format!(
                "printed text has {} syntax error(s), first: {}: {}",
                reparsed.errors.len(),
                e.code,
                e.message
            )),
            None => same_model(&lowered, &ir::lower_parse(&printed, &reparsed)),
        };
        report.round_trip = match result {
            Ok(()) => Outcome::Passed,
            Err(msg) => {
                report.failures.push(format!("round trip: {msg}"));
                Outcome::Failed
            }
        };
    }

    // c. MLIR's opinion, for TTNN files MLIR accepts as written.
    if let Some(bin) = mlir_opt
        && AREAS[area] == "ttnn"
    {
        report.mlir_opt = match mlir_opt_check(bin, path, &printed, idx) {
            Ok(None) => MlirOpt::Rejected,
            Ok(Some(())) => MlirOpt::Passed,
            Err(msg) => {
                report.failures.push(format!("mlir-opt: {msg}"));
                MlirOpt::Failed
            }
        };
    }
    report
}

/// The lowering diagnostics that are not syntax errors (lowering reports those too).
fn semantic_codes(parse: &syntax::Parse, lowered: &LoweredFile) -> Vec<&'static str> {
    let mut syntax_left: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &parse.errors {
        *syntax_left.entry(e.code).or_default() += 1;
    }
    let mut codes = Vec::new();
    for d in &lowered.diagnostics {
        match syntax_left.get_mut(d.code) {
            Some(n) if *n > 0 => *n -= 1,
            _ => codes.push(d.code),
        }
    }
    codes
}

/// Compares two lowerings of the same program: functions, bodies, location names and
/// diagnostics (by code and message; ranges move when text is reprinted).
fn same_model(before: &LoweredFile, after: &LoweredFile) -> Result<(), String> {
    if before.funcs.len() != after.funcs.len() {
        return Err(format!("{} functions became {}", before.funcs.len(), after.funcs.len()));
    }
    for (a, b) in before.funcs.iter().zip(&after.funcs) {
        if (a.chunk, &a.name, a.dup) != (b.chunk, &b.name, b.dup) {
            return Err(format!("function `{}` became `{}`", a.name, b.name));
        }
        if a.body != b.body {
            return Err(format!(
                "body of `{}` changed: {}",
                a.name,
                body_difference(&a.body, &b.body)
            ));
        }
        if a.loc_names != b.loc_names {
            return Err(format!("location names of `{}` changed", a.name));
        }
    }
    if before.device != after.device {
        return Err(format!("device changed: {:?} vs {:?}", before.device, after.device));
    }
    if before.system_desc != after.system_desc {
        return Err(format!(
            "system description changed: {:?} vs {:?}",
            before.system_desc, after.system_desc
        ));
    }
    let (da, db) = (diag_keys(before), diag_keys(after));
    if da != db {
        let only_a = da.iter().find(|d| !db.contains(d));
        let only_b = db.iter().find(|d| !da.contains(d));
        return Err(format!("diagnostics changed: before only {only_a:?}, after only {only_b:?}"));
    }
    Ok(())
}

/// A file's diagnostics by code and message, sorted: what survives reprinting.
fn diag_keys(f: &LoweredFile) -> Vec<(&str, &str)> {
    let mut v: Vec<(&str, &str)> =
        f.diagnostics.iter().map(|d| (d.code, d.message.as_str())).collect();
    v.sort_unstable();
    v
}

/// Names the first difference between two bodies, for a failure message a human can act on.
fn body_difference(a: &ir::FuncBody, b: &ir::FuncBody) -> String {
    if a.args != b.args || a.arg_names != b.arg_names {
        return "arguments differ".to_owned();
    }
    if a.results != b.results || a.returns != b.returns {
        return "results or returned values differ".to_owned();
    }
    if a.ops.len() != b.ops.len() {
        return format!("{} ops became {}", a.ops.len(), b.ops.len());
    }
    for (i, (x, y)) in a.ops.iter().zip(&b.ops).enumerate() {
        if x == y {
            continue;
        }
        let what = if x.name != y.name || x.key != y.key || x.form != y.form {
            format!(
                "name, key or form: {:?} vs {:?}",
                (&x.name, &x.key, x.form),
                (&y.name, &y.key, y.form)
            )
        } else if x.operands != y.operands {
            format!("operands: {:?} vs {:?}", x.operands, y.operands)
        } else if x.operand_types != y.operand_types || x.results != y.results {
            format!(
                "types: {:?} -> {:?} vs {:?} -> {:?}",
                x.operand_types, x.results, y.operand_types, y.results
            )
        } else if x.properties != y.properties {
            format!("properties: {:?} vs {:?}", x.properties, y.properties)
        } else if x.attrs != y.attrs {
            format!("attributes: {:?} vs {:?}", x.attrs, y.attrs)
        } else {
            format!(
                "callee or regions: {:?} vs {:?}",
                (&x.callee, x.has_regions),
                (&y.callee, y.has_regions)
            )
        };
        return format!("op {i} (`{}`, key `{}`) differs in {what}", x.name, x.key);
    }
    "function attributes differ".to_owned()
}

/// `mlir-opt` from LLVM 19, where the CI image and developer machines install it.
pub(crate) fn find_mlir_opt() -> Option<PathBuf> {
    let fixed = Path::new("/usr/lib/llvm-19/bin/mlir-opt");
    if fixed.is_file() {
        return Some(fixed.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    ["mlir-opt-19", "mlir-opt"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// Generic-form print of a file by `mlir-opt`, or `None` if it rejects the file.
fn mlir_opt_generic(bin: &Path, file: &Path) -> Result<Option<String>, String> {
    let output = Command::new(bin)
        .args(["--allow-unregistered-dialect", "--split-input-file", "--mlir-print-op-generic"])
        .arg(file)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !output.status.success() {
        return Ok(None);
    }
    String::from_utf8(output.stdout).map(Some).map_err(|_| "output is not UTF-8".to_owned())
}

/// `Ok(None)`: MLIR rejects the original, nothing to compare. `Ok(Some(()))`: our printed text
/// is accepted and means the same to MLIR.
fn mlir_opt_check(
    bin: &Path,
    original: &Path,
    printed: &str,
    idx: usize,
) -> Result<Option<()>, String> {
    let Some(expected) = mlir_opt_generic(bin, original)? else { return Ok(None) };
    let tmp = TempFile(
        std::env::temp_dir().join(format!("ttnn-xtask-corpus-{}-{idx}.mlir", std::process::id())),
    );
    crate::util::write_file(&tmp.0, printed.as_bytes()).map_err(|e| format!("{e:#}"))?;
    let Some(actual) = mlir_opt_generic(bin, &tmp.0)? else {
        let stderr = Command::new(bin)
            .args(["--allow-unregistered-dialect", "--split-input-file"])
            .arg(&tmp.0)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("").to_owned())
            .unwrap_or_default();
        return Err(format!("rejects the printed text: {stderr}"));
    };
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let (e, a) = (squash(&expected), squash(&actual));
    if e != a {
        let at = e.bytes().zip(a.bytes()).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
        let context =
            |s: &str| s.get(at.saturating_sub(40)..(at + 40).min(s.len())).unwrap_or("").to_owned();
        return Err(format!(
            "generic forms differ at byte {at}: `{}` vs `{}`",
            context(&e),
            context(&a)
        ));
    }
    Ok(Some(()))
}

/// A temporary file removed when dropped, even when the check fails early.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub(crate) fn collect_mlir_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::format_err!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            collect_mlir_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "mlir") {
            out.push(path);
        }
    }
    Ok(())
}

fn write_summary(
    out: &mut impl std::io::Write,
    dir: &Path,
    reports: &[FileReport],
    mlir_opt: Option<&Path>,
    secs: f64,
) -> anyhow::Result<()> {
    let bytes: usize = reports.iter().map(|r| r.bytes).sum();
    writeln!(
        out,
        "corpus {}: {} files, {:.1} MB, checked in {secs:.2} s",
        dir.display(),
        reports.len(),
        bytes as f64 / 1e6
    )?;
    match mlir_opt {
        Some(bin) => writeln!(out, "mlir-opt: {}", bin.display())?,
        None => writeln!(out, "mlir-opt: not run")?,
    }
    writeln!(out)?;
    writeln!(out, "{:<40} {:>8} {:>12} {:>8}", "", AREAS[0], AREAS[1], "total")?;
    let row = |out: &mut dyn std::io::Write, label: &str, f: &dyn Fn(&FileReport) -> bool| {
        let per: Vec<usize> = (0..AREAS.len())
            .map(|a| reports.iter().filter(|r| r.area == a && f(r)).count())
            .collect();
        writeln!(out, "{label:<40} {:>8} {:>12} {:>8}", per[0], per[1], per[0] + per[1])
    };
    row(out, "files parsed", &|_| true)?;
    row(out, "files with syntax errors", &|r| r.syntax_errors > 0)?;
    row(out, "files with semantic diagnostics", &|r| !r.semantic.is_empty())?;
    row(out, "round trips passed", &|r| r.round_trip == Outcome::Passed)?;
    row(out, "round trips failed", &|r| r.round_trip == Outcome::Failed)?;
    if mlir_opt.is_some() {
        row(out, "mlir-opt accepts the original", &|r| {
            matches!(r.mlir_opt, MlirOpt::Passed | MlirOpt::Failed)
        })?;
        row(out, "mlir-opt: printed text equivalent", &|r| r.mlir_opt == MlirOpt::Passed)?;
        row(out, "mlir-opt: printed text failed", &|r| r.mlir_opt == MlirOpt::Failed)?;
    }
    row(out, "files failing the check", &|r| !r.failures.is_empty())?;

    let mut by_code: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in reports {
        let mut seen: Vec<&str> = Vec::new();
        for &code in &r.semantic {
            let e = by_code.entry(code).or_default();
            e.0 += 1;
            if !seen.contains(&code) {
                seen.push(code);
                e.1 += 1;
            }
        }
    }
    writeln!(out, "\nsemantic diagnostics by code (reported, not failures):")?;
    if by_code.is_empty() {
        writeln!(out, "  none")?;
    }
    for (code, (n, files)) in &by_code {
        writeln!(out, "  {code:<30} {n:>6} in {files:>3} file(s)")?;
    }
    Ok(())
}
