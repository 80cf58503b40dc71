//! `cargo xtask optimize-corpus`: optimize every TTNN corpus file under every policy and check
//! the results.
//!
//! For each file without errors and each policy: the optimized IR must parse and lower with no
//! error, the independent verifier must find no violation the input did not already have
//! (compared per op, by the op's name), and when `mlir-opt` accepts the input it must accept
//! the output too. Files with errors are counted and skipped (the optimizer refuses them).

use std::{
    io::Write as _,
    path::Path,
    process::{Command, Stdio},
};

use ide::{AnalysisHost, Change, Options, Policy, Severity};
use opmodel::AnalyticalModel;
use rustc_hash::FxHashSet;

/// True when `mlir-opt` parses and verifies `text` (fed on stdin, so nothing is written).
fn mlir_accepts(bin: &Path, text: &str) -> bool {
    let child = Command::new(bin)
        .args(["--allow-unregistered-dialect", "--split-input-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    let fed = child.stdin.take().is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
    child.wait().is_ok_and(|status| status.success()) && fed
}

/// The ops the verifier saw (`func/op`), and (op, diagnostic code) of every violation.
fn violations(
    text: &str,
    target: &target::Target,
) -> (FxHashSet<String>, FxHashSet<(String, String)>) {
    let report = verify::evaluate(text, target, &AnalyticalModel);
    let ops = report.ops.iter().map(|o| format!("{}/{}", o.func, o.op)).collect();
    let bad = report
        .ops
        .iter()
        .filter(|o| !o.valid)
        .map(|o| {
            (
                format!("{}/{}", o.func, o.op),
                o.error.clone().unwrap_or_default().split(':').next().unwrap_or("").to_owned(),
            )
        })
        .collect();
    (ops, bad)
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = args
        .first()
        .map_or_else(|| root.join("../shared/corpus/ttnn"), |d| Path::new(d).to_path_buf());
    let mut out = std::io::stdout().lock();
    if !dir.exists() {
        writeln!(out, "no corpus at {}; nothing to check", dir.display())?;
        return Ok(());
    }
    let mut files = Vec::new();
    crate::corpus::collect_mlir_files(&dir, &mut files)?;
    files.sort();
    let mlir = crate::corpus::find_mlir_opt();
    let target = target::Target::n150();
    let (mut optimized, mut refused, mut failures) = (0usize, 0usize, Vec::new());
    let mut new_violations = 0usize;
    let mut preexisting = 0usize;
    let (mut accepted_inputs, mut checked_outputs) = (0usize, 0usize);
    for path in &files {
        let text = crate::util::read_text(path)?;
        let name = path.strip_prefix(&dir).unwrap_or(path).display().to_string();
        let mut host = AnalysisHost::new(target.clone(), Options::tt_mlir_defaults());
        host.apply_change(Change::new().set_file(name.clone(), text.clone()));
        let Some(file) = host.file(&name) else { continue };
        let analysis = host.analysis();
        let diags = analysis.diagnostics(file).map_err(|_| anyhow::format_err!("cancelled"))?;
        if diags.iter().any(|d| d.severity == Severity::Error) {
            refused += 1;
            continue;
        }
        let (before_ops, before) = violations(&text, &target);
        let input_accepted = mlir.as_ref().is_some_and(|b| mlir_accepts(b, &text));
        accepted_inputs += usize::from(input_accepted);
        for policy in Policy::ALL {
            let result = analysis
                .final_ir_for(file, policy)
                .map_err(|_| anyhow::format_err!("cancelled"))?;
            let parse = syntax::parse(&result.text);
            let lowered = ir::lower_parse(&result.text, &parse);
            if let Some(e) = lowered.diagnostics.iter().find(|d| d.severity == Severity::Error) {
                failures.push(format!(
                    "{name} [{}]: the optimized IR has an error: {}",
                    policy.name(),
                    e.message
                ));
                continue;
            }
            let (_, after) = violations(&result.text, &target);
            // An op the input does not have is a conversion the rewrite inserted: any
            // violation on it is new. Ops of the input are compared with their own verdict.
            let new: Vec<&(String, String)> =
                after.iter().filter(|v| before_ops.contains(&v.0) && !before.contains(v)).collect();
            let conversions: Vec<&(String, String)> =
                after.iter().filter(|v| !before_ops.contains(&v.0)).collect();
            new_violations += new.len() + conversions.len();
            preexisting += after.len() - new.len() - conversions.len();
            for v in new.iter().chain(&conversions) {
                failures.push(format!(
                    "{name} [{}]: new verifier violation at {} ({})",
                    policy.name(),
                    v.0,
                    v.1
                ));
            }
            if input_accepted && let Some(bin) = &mlir {
                checked_outputs += 1;
                if !mlir_accepts(bin, &result.text) {
                    failures.push(format!(
                        "{name} [{}]: mlir-opt rejects the optimized IR",
                        policy.name()
                    ));
                }
            }
            optimized += 1;
        }
    }
    writeln!(
        out,
        "optimize-corpus: {} files, {refused} refused (they have errors), {optimized} optimizations ({} policies)",
        files.len(),
        Policy::ALL.len()
    )?;
    writeln!(
        out,
        "  verifier violations introduced by the optimizer: {new_violations}; already in the inputs: {preexisting}"
    )?;
    if mlir.is_some() {
        writeln!(
            out,
            "  mlir-opt: accepts {accepted_inputs} inputs; {checked_outputs} of their optimized outputs checked"
        )?;
    } else {
        writeln!(out, "  mlir-opt: not found, skipped")?;
    }
    if failures.is_empty() {
        writeln!(out, "  all optimized files are clean")?;
        Ok(())
    } else {
        for f in &failures {
            writeln!(out, "  FAIL {f}")?;
        }
        Err(anyhow::format_err!("{} failures", failures.len()))
    }
}
