//! The verifier over tt-mlir's TTNN test corpus (`/work/shared/corpus/ttnn`, read at run time
//! and skipped when absent): no file makes it panic, every op of every function is reported,
//! and the counts of ops, violations and unknown ops are printed with `--nocapture`.
//!
//! Corpus files are free to have violations: many are negative tests, and the op model is an
//! approximation. The printed breakdown by diagnostic code is what to look at after a change.

#![expect(
    clippy::disallowed_methods,
    reason = "the corpus test reads files at run time; the library itself does no IO"
)]

use std::{
    collections::BTreeMap,
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
};

use opmodel::AnalyticalModel;
use target::Target;

const CORPUS: &str = "/work/shared/corpus/ttnn";

fn files() -> Vec<PathBuf> {
    fn walk(dir: &Path, acc: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, acc);
            } else if p.extension().is_some_and(|x| x == "mlir") {
                acc.push(p);
            }
        }
    }
    let mut acc = Vec::new();
    walk(Path::new(CORPUS), &mut acc);
    acc.sort();
    acc
}

#[test]
#[expect(clippy::print_stdout, reason = "the counts are the test's report")]
fn the_verifier_reports_every_op_of_the_corpus_without_panicking() {
    let files = files();
    if files.is_empty() {
        return;
    }
    let target = Target::n150();
    let (mut n_ops, mut n_violations, mut n_unknown, mut n_invalid_files) = (0, 0, 0, 0);
    let mut by_code: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for path in &files {
        let name = path.strip_prefix(CORPUS).unwrap_or(path).display().to_string();
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        let Ok(report) =
            catch_unwind(AssertUnwindSafe(|| verify::evaluate(&text, &target, &AnalyticalModel)))
        else {
            failures.push(format!("{name}: panicked"));
            continue;
        };
        let parse = syntax::parse(&text);
        let lowered = ir::lower_parse(&text, &parse);
        let expected: usize = lowered.funcs.iter().map(|f| f.body.ops.len()).sum();
        if report.ops.len() != expected {
            failures.push(format!("{name}: {} ops reported, {expected} lowered", report.ops.len()));
        }
        let invalid = report.ops.iter().filter(|op| !op.valid).count();
        if report.violations < invalid {
            failures.push(format!(
                "{name}: {invalid} invalid ops but {} violations",
                report.violations
            ));
        }
        n_ops += report.ops.len();
        n_violations += report.violations;
        n_unknown += report.ops.iter().filter(|op| !op.known_op).count();
        n_invalid_files += usize::from(report.violations > 0);
        for d in &report.diagnostics {
            *by_code.entry(d.code).or_default() += 1;
        }
    }
    println!(
        "{} files, {n_ops} ops, {n_violations} violations in {n_invalid_files} files, {n_unknown} ops unknown to the op model",
        files.len()
    );
    for (code, n) in &by_code {
        println!("  {code}: {n}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
