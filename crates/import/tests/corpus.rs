//! The importer over tt-mlir's TTIR model corpus (`/work/shared/corpus/ttir-models`, read at
//! run time and skipped when absent): every model imports without errors, and the output
//! parses and lowers without a single diagnostic. A second test feeds outputs to `mlir-opt`
//! when the binary is installed.

#![expect(
    clippy::disallowed_methods,
    reason = "the corpus test reads model files at run time; the library itself does no IO"
)]

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
};

const CORPUS: &str = "/work/shared/corpus/ttir-models";
const MLIR_OPT: &str = "/usr/lib/llvm-19/bin/mlir-opt";

/// Hand-written fixtures, each pinned next to it as `<name>.expected.mlir`.
fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data/import");
    let mut acc: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|it| it.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    acc.retain(|p| {
        p.extension().is_some_and(|x| x == "mlir")
            && !p.to_string_lossy().ends_with(".expected.mlir")
    });
    acc.sort();
    acc
}

#[test]
fn fixtures_import_to_their_pinned_outputs_without_diagnostics() {
    let fixtures = fixtures();
    assert!(!fixtures.is_empty(), "no fixtures under test-data/import");
    for path in fixtures {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let res = import::import_ttir(&text, &name);
        assert!(res.diagnostics.is_empty(), "{name}: {:?}", res.diagnostics);
        let parse = syntax::parse(&res.ttnn);
        let lowered = ir::lower_parse(&res.ttnn, &parse);
        assert!(lowered.diagnostics.is_empty(), "{name}: {:?}", lowered.diagnostics);
        let problems = shape_problems(&lowered);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        expect_test::expect_file![path.with_extension("expected.mlir")].assert_eq(&res.ttnn);
    }
}

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

fn import(path: &Path) -> (String, import::ImportResult) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let name = path.strip_prefix(CORPUS).unwrap_or(path).display().to_string();
    let res = import::import_ttir(&text, &name);
    (name, res)
}

#[test]
#[expect(clippy::print_stdout, reason = "the op-count table is the test's report")]
fn every_corpus_model_imports_and_the_output_lowers_cleanly() {
    let models = models();
    if models.is_empty() {
        return;
    }
    let mut table =
        String::from("| model | ops in | ops out | diagnostics |\n|---|---:|---:|---:|\n");
    let mut failures = Vec::new();
    let mut kinds_in = std::collections::BTreeMap::<String, usize>::new();
    let mut kinds_out = std::collections::BTreeMap::<String, usize>::new();
    for path in &models {
        let (name, res) = import(path);
        let errors: Vec<_> =
            res.diagnostics.iter().filter(|d| d.severity == import::Severity::Error).collect();
        if !errors.is_empty() {
            failures.push(format!("{name}: {} error(s), first: {:?}", errors.len(), errors[0]));
        }
        let parse = syntax::parse(&res.ttnn);
        let lowered = ir::lower_parse(&res.ttnn, &parse);
        if let Some(d) = lowered.diagnostics.first() {
            failures.push(format!(
                "{name}: output has {} diagnostic(s), first: {} {:?} at {:?}",
                lowered.diagnostics.len(),
                d.code,
                d.message,
                d.range.slice(&res.ttnn)
            ));
        }
        for problem in shape_problems(&lowered).into_iter().take(3) {
            failures.push(format!("{name}: {problem}"));
        }
        for (k, n) in &res.stats.ops_in_by_kind {
            *kinds_in.entry(k.clone()).or_insert(0) += n;
        }
        for (k, n) in &res.stats.ops_out_by_kind {
            *kinds_out.entry(k.clone()).or_insert(0) += n;
        }
        let funcs_in = res.stats.ops_in_by_kind.len();
        assert!(res.stats.ops_in > 0 && funcs_in > 0, "{name}: no ops read");
        assert!(res.stats.ops_out > 0, "{name}: no ops written");
        let _ = writeln!(
            table,
            "| `{name}` | {} | {} | {} |",
            res.stats.ops_in,
            res.stats.ops_out,
            res.diagnostics.len()
        );
    }
    let _ = writeln!(table, "\nops in by kind: {kinds_in:?}\nops out by kind: {kinds_out:?}");
    println!("{table}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mlir_opt_accepts_imported_models() {
    if !Path::new(MLIR_OPT).exists() {
        return;
    }
    let mut chosen_paths: Vec<PathBuf> = fixtures();
    let models = models();
    let picks = [
        "mnist.mlir",
        "llama_attention.mlir",
        "resnet_hf.mlir",
        "llama_3_2_1b_decode_layer.mlir",
        "segformer_vision_block.mlir",
    ];
    let chosen: Vec<&PathBuf> = models
        .iter()
        .filter(|p| p.file_name().is_some_and(|f| picks.iter().any(|k| f == *k)))
        .collect();
    chosen_paths.extend(chosen.into_iter().cloned());
    for path in &chosen_paths {
        let (name, res) = import(path);
        let dir = std::env::temp_dir().join(format!("ttnn-import-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(path.file_name().unwrap_or_default());
        std::fs::write(&file, &res.ttnn)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        let out = Command::new(MLIR_OPT)
            .arg("--allow-unregistered-dialect")
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("cannot run mlir-opt: {e}"));
        assert!(
            out.status.success(),
            "mlir-opt rejected {name}:\n{}",
            String::from_utf8_lossy(&out.stderr).lines().take(10).collect::<Vec<_>>().join("\n")
        );
        let _ = std::fs::remove_file(&file);
    }
}

/// Checks each emitted op's result shape against its operands, independently of the lowering
/// code: a second opinion on the decompositions (broadcast folding, matmul collapsing,
/// flattened convolutions).
fn shape_problems(lowered: &ir::LoweredFile) -> Vec<String> {
    let mut problems = Vec::new();
    for f in &lowered.funcs {
        for op in &f.body.ops {
            let shape = |t: &ir::Ty| t.as_tensor().and_then(ttnn_types::TensorType::static_shape);
            let ins: Vec<Vec<u64>> = op.operand_types.iter().filter_map(shape).collect();
            let Some(out) = op.results.first().and_then(shape) else { continue };
            let ints =
                |k: &str| op.property(k).and_then(ir::AttrValue::as_ints).unwrap_or_default();
            let int = |k: &str| op.property(k).and_then(ir::AttrValue::as_int).unwrap_or(0) as u64;
            let name = op.name.trim_start_matches("ttnn.");
            let expected: Option<Vec<u64>> = match name {
                "add" | "subtract" | "multiply" | "divide" | "eq" | "ne" | "lt" | "le" | "gt"
                | "ge" | "maximum" | "minimum" | "where" | "pow_tensor" | "logical_and"
                | "logical_or" => broadcast(&ins),
                "relu" | "exp" | "neg" | "typecast" | "sigmoid" | "cos" | "sin" | "rsqrt"
                | "logical_not" | "gelu" | "tanh" | "softmax" | "rms_norm" | "layer_norm"
                | "pow_scalar" | "to_layout" | "sqrt" | "reciprocal" | "erf" => {
                    ins.first().cloned()
                }
                "reshape" => {
                    let s: Vec<u64> = ints("shape").iter().map(|d| *d as u64).collect();
                    (ins[0].iter().product::<u64>() == s.iter().product::<u64>()).then_some(s)
                }
                "permute" => {
                    Some(ints("permutation").iter().map(|p| ins[0][*p as usize]).collect())
                }
                "repeat" => None,
                // Prefill attention: the query's shape, key and value of one shape with as
                // many users and the query's head size.
                "scaled_dot_product_attention" => {
                    let (q, k, v) = (&ins[0], &ins[1], &ins[2]);
                    (q.len() == 4
                        && k == v
                        && k.len() == 4
                        && q[0] == k[0]
                        && q[3] == k[3]
                        && k[1] > 0
                        && q[1] % k[1] == 0)
                        .then(|| q.clone())
                }
                // Decode attention: `[1, B, H, D]` out of a query of that shape, and key and
                // value `[B, Hkv, S, D]` with `H` a multiple of `Hkv`.
                "scaled_dot_product_attention_decode" => {
                    let (q, k, v) = (&ins[0], &ins[1], &ins[2]);
                    (q.len() == 4
                        && k == v
                        && k.len() == 4
                        && q[1] == k[0]
                        && q[3] == k[3]
                        && k[1] > 0
                        && q[2] % k[1] == 0)
                        .then(|| q.clone())
                }
                "concat" => {
                    let d = int("dim") as usize;
                    let mut s = ins[0].clone();
                    s[d] = ins.iter().map(|i| i[d]).sum();
                    Some(s)
                }
                "slice_static" => {
                    let (b, e, st) = (ints("begins"), ints("ends"), ints("step"));
                    Some(
                        (0..b.len())
                            .map(|i| ((e[i] - b[i]) as u64).div_ceil(st[i] as u64))
                            .collect(),
                    )
                }
                "matmul" => {
                    let (a, b) = (&ins[0], &ins[1]);
                    let (ra, rb) = (a.len(), b.len());
                    (a[ra - 1] == b[rb - 2]).then(|| {
                        let mut batch = broadcast(&[a[..ra - 2].to_vec(), b[..rb - 2].to_vec()])
                            .unwrap_or_default();
                        batch.extend([a[ra - 2], b[rb - 1]]);
                        batch
                    })
                }
                "embedding" => {
                    let mut s = ins[0].clone();
                    s.push(ins[1][1]);
                    Some(s)
                }
                "conv2d" | "max_pool2d" => {
                    let k = ints("kernel_size");
                    let (st, d, p) = (ints("stride"), ints("dilation"), ints("padding"));
                    let (pt, pb, pl, pr) = match (name, p.as_slice()) {
                        ("conv2d", [t, b, l, r]) | ("max_pool2d", [t, l, b, r]) => (*t, *b, *l, *r),
                        (_, [h, w]) => (*h, *h, *w, *w),
                        _ => (0, 0, 0, 0),
                    };
                    let oh =
                        (int("input_height") as i64 + pt + pb - d[0] * (k[0] - 1) - 1) / st[0] + 1;
                    let ow =
                        (int("input_width") as i64 + pl + pr - d[1] * (k[1] - 1) - 1) / st[1] + 1;
                    let c = if name == "conv2d" { int("out_channels") } else { int("channels") };
                    Some(vec![1, 1, int("batch_size") * oh as u64 * ow as u64, c])
                }
                _ => None,
            };
            if let Some(e) = expected
                && e != out
            {
                problems
                    .push(format!("`{}` produces {out:?} but its operands give {e:?}", op.name));
            }
        }
    }
    problems
}

fn broadcast(shapes: &[Vec<u64>]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(Vec::len).max()?;
    let mut out = vec![1u64; rank];
    for s in shapes {
        for (i, d) in s.iter().enumerate() {
            let o = &mut out[rank - s.len() + i];
            if *o == 1 {
                *o = *d;
            } else if *d != 1 && *d != *o {
                return None;
            }
        }
    }
    Some(out)
}
