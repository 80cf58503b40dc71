//! Every op of every imported TTIR corpus model (`/work/shared/corpus/ttir-models`, read at
//! run time and skipped when absent) against its roofline: the cost model's kernel time (its
//! estimate without the fixed dispatch cost) stays within 10x of the larger of the op's FLOPs
//! at peak and its bytes at DRAM bandwidth, unless the op's own configuration makes it so:
//! it runs on a few cores (its shape or layout leaves no more parallelism), its layouts pad
//! the bytes it moves to at least 3x the logical ones, or its kernel is under 1 µs (below the
//! fixed dispatch cost, where a roofline of a few ns says little). Each such op is printed with
//! its reason (`--nocapture`); an op beyond 10x with none of them fails the test.

#![expect(
    clippy::disallowed_methods,
    reason = "the corpus test reads files at run time; the library itself does no IO"
)]

use std::path::{Path, PathBuf};

use opmodel::AnalyticalModel;
use target::Target;

const CORPUS: &str = "/work/shared/corpus/ttir-models";

fn models() -> Vec<PathBuf> {
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
#[expect(clippy::print_stdout, reason = "the explained ops are the test's report")]
fn no_corpus_op_is_estimated_beyond_10x_its_roofline_without_a_reason() {
    let target = Target::n150();
    let workers = target.worker_grid().volume();
    let (mut n_ops, mut explained) = (0usize, Vec::new());
    let mut failures = Vec::new();
    for path in models() {
        let name = path.strip_prefix(CORPUS).unwrap_or(&path).display().to_string();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let imported = import::import_ttir(&text, &name);
        let report = verify::evaluate(&imported.ttnn, &target, &AnalyticalModel);
        for op in &report.ops {
            let (Some(c), Some(roof)) = (op.cost, op.roofline_ns) else { continue };
            n_ops += 1;
            let kernel = c.total_ns.saturating_sub(c.dispatch_ns);
            if kernel <= roof.saturating_mul(10) {
                continue;
            }
            let ratio = kernel as f64 / roof.max(1) as f64;
            // The bytes the kernel moves through L1 in its layouts against the roofline's
            // logical bytes (at 264.96 B/ns of sustained DRAM bandwidth).
            let padding = c.l1_bytes as f64 / (roof.max(1) as f64 * 264.96);
            let reason = if op.kind == "ttnn.argmax" && c.compute_ns >= c.memory_ns {
                // The roofline counts FLOPs at the matrix engine's peak; tt-metal's argmax
                // compares one element at a time on its reader core.
                Some(
                    "compute bound on the reader core's scalar loop (tt-metal's argmax compares \
                     element by element there, not on the math units)"
                        .to_owned(),
                )
            } else if c.cores * 4 <= workers {
                Some(format!(
                    "runs on {} of {workers} cores: its shape or layout allows no more",
                    c.cores
                ))
            } else if padding >= 3.0 && c.memory_ns >= c.compute_ns {
                Some(format!(
                    "{} bound; its layouts hold {padding:.0}x the logical bytes (tile padding)",
                    c.bound.keyword()
                ))
            } else if kernel < 1000 {
                Some("a kernel under 1 µs, below the fixed dispatch cost".to_owned())
            } else {
                None
            };
            let line = format!(
                "{name}: {} `{}` {:.1} µs kernel, {ratio:.0}x its {:.1} µs roofline",
                op.kind,
                op.op,
                kernel as f64 / 1e3,
                roof as f64 / 1e3
            );
            match reason {
                Some(r) => explained.push(format!("{line}: {r}")),
                None => failures.push(line),
            }
        }
    }
    println!(
        "{n_ops} ops costed; {} beyond 10x their roofline, each with its reason:",
        explained.len()
    );
    for e in &explained {
        println!("  {e}");
    }
    assert!(failures.is_empty(), "beyond 10x with no reason:\n{}", failures.join("\n"));
}
