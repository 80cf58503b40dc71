//! Snapshot tests of the optimizer: plans and final IR for the scenarios in
//! `test-data/optimizer/*.mlir`, under both policies.
//!
//! Each snapshot holds the per-op plan report and the optimized IR. Every optimized file must
//! also pass `check` and be verified by `report` with no violation. `UPDATE_EXPECT=1 cargo
//! test` regenerates the snapshots.

#![expect(clippy::disallowed_methods, reason = "tests read the optimized files they wrote")]

use std::{path::PathBuf, process::Command};

use expect_test::expect_file;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the CLI binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scenarios() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("test-data/optimizer"))
        .expect("scenario directory exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_scenario_plans_and_rewrites_as_snapshotted_under_both_policies() {
    for name in scenarios() {
        let input = format!("test-data/optimizer/{name}");
        for policy in ["df-sharding", "df-sharding-merge"] {
            let tmp = std::env::temp_dir()
                .join(format!("ttnn-opt-{}-{policy}-{name}", std::process::id()));
            let tmp_s = tmp.to_str().expect("utf-8 temp path").to_owned();
            let (code, report, stderr) =
                run(&["optimize", "--policy", policy, &input, "-o", &tmp_s, "--report", "human"]);
            assert_eq!(code, 0, "{name} {policy}: {stderr}");
            let optimized = std::fs::read_to_string(&tmp).expect("optimized file written");
            let (check_code, check_out, _) = run(&["check", &tmp_s]);
            assert_eq!(check_code, 0, "{name} {policy}: the optimized IR has errors:\n{check_out}");
            let (verify_code, verify_out, _) = run(&["report", &tmp_s]);
            assert_eq!(
                verify_code, 0,
                "{name} {policy}: the verifier found violations:\n{verify_out}"
            );
            let _ = std::fs::remove_file(&tmp);
            let snapshot = root().join(format!(
                "test-data/optimizer/{}.{policy}.txt",
                name.trim_end_matches(".mlir")
            ));
            expect_file![snapshot].assert_eq(&format!("{report}--- optimized IR ---\n{optimized}"));
        }
    }
}

/// The input is never overwritten, however the output path spells it.
#[test]
fn optimize_refuses_to_overwrite_its_input_however_the_path_is_spelled() {
    let dir = std::env::temp_dir().join(format!("ttnn-opt-self-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("ffn.mlir");
    let text = std::fs::read_to_string(root().join("test-data/samples/ffn.mlir")).expect("sample");
    std::fs::write(&input, &text).expect("copy the sample");
    let input_s = input.to_str().expect("utf-8 temp path").to_owned();
    let dotted = dir.join(".").join("ffn.mlir");
    let (code, stdout, stderr) =
        run(&["optimize", &input_s, "-o", dotted.to_str().expect("utf-8 temp path")]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("refusing to overwrite the input file"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&input).expect("the input is still there"), text);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--report json` is JSON lines only: every line parses, and the last is the summary.
#[test]
fn the_json_report_is_json_lines_ending_with_a_summary() {
    let out = std::env::temp_dir().join(format!("ttnn-opt-json-{}.mlir", std::process::id()));
    let out_s = out.to_str().expect("utf-8 temp path").to_owned();
    let (code, stdout, stderr) = run(&[
        "optimize",
        "test-data/optimizer/merge_a_to_b.mlir",
        "-o",
        &out_s,
        "--report",
        "json",
    ]);
    let _ = std::fs::remove_file(&out);
    assert_eq!(code, 0, "{stderr}");
    let records: Vec<String> = stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("every line is JSON");
            v["record"].as_str().unwrap_or("?").to_owned()
        })
        .collect();
    expect_test::expect![[r#"op op op op op op chain chain merge summary"#]]
        .assert_eq(&records.join(" "));
}

/// An override that names no op of the file is an error at its own position, and the file
/// is not optimized: silently applying to nothing is what tt-mlir users cannot see.
#[test]
fn an_override_naming_no_op_stops_optimize_with_its_position() {
    let (code, stdout, stderr) = run(&[
        "optimize",
        "test-data/samples/ffn.mlir",
        "--override-output-layout",
        "ffn.nope=dram:interleaved",
    ]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    expect_test::expect![[r#"
        error[unknown-override-target]: no op in the open files has `loc("ffn.nope")`; the override applies to nothing
         --> <command line>:1:24
          |
        1 | override-output-layout=ffn.nope=dram:interleaved
          |                        ^^^^^^^^

        not optimizing: the overrides have errors
    "#]].assert_eq(&stderr);
}

/// A TTIR file is imported in memory first, with a note saying so.
#[test]
fn optimize_imports_a_ttir_file_first() {
    let out = std::env::temp_dir().join(format!("ttnn-opt-ttir-{}.mlir", std::process::id()));
    let out_s = out.to_str().expect("utf-8 temp path").to_owned();
    let (code, _, stderr) = run(&["optimize", "test-data/import/mixed_ops.mlir", "-o", &out_s]);
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.starts_with("note: `test-data/import/mixed_ops.mlir` is TTIR"), "{stderr}");
    assert!(text.contains("\"ttnn.conv2d\"") && !text.contains("\"ttir."), "{text}");
}

/// Ops of the wrong shape reached the optimizer once: `check` now reports them as errors, so
/// `optimize` refuses the file as it refuses one with syntax errors.
#[test]
fn optimize_refuses_ops_with_missing_operands_empty_grids_or_overflowing_sizes() {
    let (code, stdout, stderr) = run(&["optimize", "test-data/check/err/malformed_ops.mlir"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stdout, "");
    let codes: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error["))
        .filter_map(|l| l.split(']').next())
        .collect();
    expect_test::expect![[r#"
        ["tensor-too-large", "wrong-operand-count", "zero-sized-grid", "wrong-operand-count"]
        last: not optimizing `test-data/check/err/malformed_ops.mlir`: it has errors"#]]
    .assert_eq(&format!("{codes:?}\nlast: {}", stderr.lines().last().unwrap_or("")));
}

/// Writes `text` to a temporary `.mlir` file named after `tag`, runs `optimize` on it with
/// `args` and returns (exit status, optimized text, stderr with the path replaced by `IN`).
fn optimize_text(tag: &str, text: &str, args: &[&str]) -> (i32, String, String) {
    let dir = std::env::temp_dir();
    let input = dir.join(format!("ttnn-opt-{tag}-{}.mlir", std::process::id()));
    let output = dir.join(format!("ttnn-opt-{tag}-{}.out.mlir", std::process::id()));
    std::fs::write(&input, text).expect("temp dir is writable");
    let (input_s, output_s) = (input.to_string_lossy(), output.to_string_lossy());
    let mut all = vec!["optimize", &input_s, "-o", &output_s];
    all.extend_from_slice(args);
    let (code, _, stderr) = run(&all);
    let optimized = std::fs::read_to_string(&output).unwrap_or_default();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    (code, optimized, stderr.replace(input_s.as_ref(), "IN"))
}

/// tt-mlir's TTIR tests spell the TTNN layouts they expect in `CHECK` comments; the file is
/// still TTIR, and is imported before it is planned.
#[test]
fn optimize_imports_a_ttir_file_whose_comments_mention_ttnn_layouts() {
    let text = r#"module {
  func.func @main(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
    // CHECK: #[[L:.*]] = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
    %0 = "ttir.add"(%a, %b) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("add_0")
    %1 = "ttir.relu"(%0) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("relu_1")
    return %1 : tensor<64x64xbf16>
  }
}
"#;
    let (code, optimized, stderr) =
        optimize_text("ttir-comments", text, &["--policy", "df-sharding"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.starts_with("note: `IN` is TTIR; imported it to TTNN first"), "{stderr}");
    assert!(optimized.contains("\"ttnn.add\"") && !optimized.contains("\"ttir."), "{optimized}");
}

/// A TTIR op left in a TTNN file is kept as written, and `optimize` names it.
#[test]
fn optimize_names_the_ops_it_cannot_plan() {
    let text = r#"#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @main(%a: tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> {
    %0 = "ttnn.relu"(%a) : (tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> loc("relu_0")
    %1 = "ttir.exp"(%0) : (tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> loc("exp_1")
    return %1 : tensor<64x64xbf16, #l>
  }
}
"#;
    let (code, _, stderr) = optimize_text("unplannable", text, &["--policy", "df-sharding"]);
    assert_eq!(code, 0, "{stderr}");
    expect_test::expect![[r#"
        warning: `IN` has ops the optimizer cannot plan (left as written): `ttir.exp` at `exp_1`
    "#]]
    .assert_eq(stderr.lines().next().map(|l| format!("{l}\n")).as_deref().unwrap_or(""));
}

/// Two relus in DRAM, for the `insert-memreconfig` tests.
const TWO_RELUS: &str = r#"#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @main(%a: tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> {
    %0 = "ttnn.relu"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("r0")
    %1 = "ttnn.relu"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("r1")
    return %1 : tensor<256x256xbf16, #l>
  }
}
"#;

/// The human report's lines about op `op`: its row and the indented lines under it.
fn report_lines(stdout: &str, op: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in stdout.lines() {
        if !l.starts_with(' ') {
            inside = l.starts_with(&format!("{op} "));
        }
        if inside {
            out.push_str(l.trim_end());
            out.push('\n');
        }
    }
    out
}

/// tt-mlir converts the operand an `insert-memreconfig` names to the op's own output layout
/// when the op is in no L1 chain; here the op is kept in L1 interleaved by its override.
#[test]
fn insert_memreconfig_converts_an_operand_of_an_op_outside_any_chain() {
    let dir = std::env::temp_dir();
    let input = dir.join(format!("ttnn-opt-reconfig-{}.mlir", std::process::id()));
    std::fs::write(&input, TWO_RELUS).expect("temp dir is writable");
    let input_s = input.to_string_lossy().into_owned();
    let (code, stdout, stderr) = run(&[
        "optimize",
        &input_s,
        "--policy",
        "df-sharding",
        "--override-output-layout",
        "r0=dram,r1=l1:interleaved",
        "--insert-memreconfig",
        "r1=0",
        "--report",
        "human",
    ]);
    let _ = std::fs::remove_file(&input);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"ttnn.to_memory_config\""), "{stdout}");
    expect_test::expect![[r#"
        r1                           ttnn.relu              DRAM il      L1 il        -                           3.2       3.1 the first legal layout the output-layout override leaves, as tt-mlir's OpConfigAnalysis picks it
            operand 0: reshard to L1 interleaved, 1x1 tiles per core (bf16) (requested by insert-memreconfig: converted to the op's own output layout, as tt-mlir does)
    "#]]
    .assert_eq(&report_lines(&stderr, "r1"));
}

/// Three f32 adds on one tile, for the tests of planning without the memory-layout analysis.
const THREE_ADDS: &str = r#"#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, f32>, #dram>, <interleaved>>
module {
  func.func @main(%a: tensor<32x32xf32, #l>, %b: tensor<32x32xf32, #l>) -> tensor<32x32xf32, #l> {
    %0 = "ttnn.add"(%a, %b) : (tensor<32x32xf32, #l>, tensor<32x32xf32, #l>) -> tensor<32x32xf32, #l> loc("x0")
    %1 = "ttnn.add"(%0, %b) : (tensor<32x32xf32, #l>, tensor<32x32xf32, #l>) -> tensor<32x32xf32, #l> loc("x1")
    %2 = "ttnn.add"(%1, %a) : (tensor<32x32xf32, #l>, tensor<32x32xf32, #l>) -> tensor<32x32xf32, #l> loc("x2")
    return %2 : tensor<32x32xf32, #l>
  }
}
"#;

/// Optimizes [`THREE_ADDS`] with `args` into a file and returns the human report (stdout)
/// and the optimized IR.
fn optimize_three_adds(args: &[&str]) -> (String, String) {
    let dir = std::env::temp_dir();
    let input = dir.join(format!("ttnn-opt-adds-{}-{}.mlir", std::process::id(), args.len()));
    let output = input.with_extension("out.mlir");
    std::fs::write(&input, THREE_ADDS).expect("temp dir is writable");
    let (input_s, output_s) =
        (input.to_string_lossy().into_owned(), output.to_string_lossy().into_owned());
    let mut all = vec!["optimize", &input_s, "-o", &output_s, "--report", "human"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    let optimized = std::fs::read_to_string(&output).unwrap_or_default();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    assert_eq!(code, 0, "{stderr}");
    (stdout, optimized)
}

/// As tt-mlir at optimization level 1: no chain is built, and an op whose partial override
/// leaves only sharded layouts takes the first of them; the others stay in DRAM.
#[test]
fn without_the_memory_layout_analysis_an_op_takes_the_first_layout_its_override_leaves() {
    let (report, _) = optimize_three_adds(&[
        "--memory-layout-analysis-enabled=false",
        "--override-output-layout",
        "x1=block_sharded",
    ]);
    expect_test::expect![[r#"
        x0                           ttnn.add               DRAM il      DRAM il      -                           3.6       3.4 not in an L1 chain: DRAM interleaved
        x1                           ttnn.add               DRAM il      L1 bs 1x1    -                           3.4       3.3 the first legal layout the output-layout override leaves, as tt-mlir's OpConfigAnalysis picks it
        x2                           ttnn.add               DRAM il      DRAM il      -                           3.4       3.3 not in an L1 chain: DRAM interleaved
    "#]]
    .assert_eq(&["x0", "x1", "x2"].map(|op| report_lines(&report, op)).concat());
}

/// A binary op computes in tiles whatever page layout it is asked for (tt-metal's
/// `BinaryNgDeviceOperation::compute_output_specs`): a row-major override keeps the add tiled
/// and converts its result right after it, as tt-mlir's operation validation and fallback
/// does.
#[test]
fn an_add_overridden_to_row_major_stays_tiled_and_is_converted_after_it() {
    let (report, optimized) = optimize_three_adds(&[
        "--memory-layout-analysis-enabled=false",
        "--override-output-layout",
        "x1=1x1:dram:interleaved:row_major:bf16",
    ]);
    expect_test::expect![[r#"
        x1                           ttnn.add               DRAM il      DRAM il      -                           3.5       3.3 the op model produces this rather than the layout chosen for the op, which it is converted to right after the op, as tt-mlir's operation validation and fallback does
            result: DRAM interleaved, 32x32 elements total (bf16, row-major) (the layout chosen for the op, which the op model does not produce)
    "#]]
    .assert_eq(&report_lines(&report, "x1"));
    let x1 = optimized.lines().find(|l| l.contains("loc(\"x1\")")).unwrap_or_default();
    expect_test::expect![[r#"    %1 = "ttnn.add"(%0, %b) : (tensor<32x32xf32, #l>, tensor<32x32xf32, #l>) -> tensor<32x32xbf16, #ttnn_layout> loc("x1")"#]].assert_eq(x1);
}

/// `df-sharding-merge` may decline the chain an `insert-memreconfig` op is in; the user's
/// conversion then stays, as for an op outside any chain (here from row-major to tiles).
#[test]
fn a_declined_chain_keeps_the_users_insert_memreconfig() {
    let dir = std::env::temp_dir();
    let input = dir.join(format!("ttnn-opt-declined-{}.mlir", std::process::id()));
    std::fs::write(&input, TWO_RELUS).expect("temp dir is writable");
    let input_s = input.to_string_lossy().into_owned();
    let (code, _, stderr) = run(&[
        "optimize",
        &input_s,
        "--policy",
        "df-sharding-merge",
        "--override-output-layout",
        "r0=1x1:dram:interleaved:row_major:bf16",
        "--insert-memreconfig",
        "r1=0",
        "--report",
        "human",
    ]);
    let _ = std::fs::remove_file(&input);
    assert_eq!(code, 0, "{stderr}");
    expect_test::expect![[r#"
        r1                           ttnn.relu              DRAM il      DRAM il      #0 1/1 declined             4.1       3.1 its chain was declined: the cost model estimates 10.2 µs in L1 (reshards and spill included) against 4.1 µs out of it
            operand 0: reshard to DRAM interleaved, 8x8 tiles total (bf16) (requested by insert-memreconfig: converted to the op's own output layout, as tt-mlir does)
    "#]].assert_eq(&report_lines(&stderr, "r1"));
}

/// A split file whose second module calls a CPU-hoisted private function returning system
/// memory, with `#layout` meaning another layout in each module. The call's result type is
/// the callee's, so the optimizer must leave it alone (mlir-opt rejected the retyped call).
#[test]
fn a_call_keeps_its_callees_result_type_in_a_split_file() {
    let text = r#"#dram = #ttnn.buffer_type<dram>
#layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @main(%arg0: tensor<32x32xbf16, #layout>) -> tensor<32x32xbf16, #layout> {
    %0 = "ttnn.relu"(%arg0) : (tensor<32x32xbf16, #layout>) -> tensor<32x32xbf16, #layout> loc("r")
    return %0 : tensor<32x32xbf16, #layout>
  }
}

// -----

#system_memory = #ttnn.buffer_type<system_memory>
#dram = #ttnn.buffer_type<dram>
#layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<32x32xbf16, #system_memory>>
#layout1 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func private @hoisted(%arg0: tensor<32x32xbf16, #layout>) -> tensor<32x32xbf16, #layout> attributes {ttir.cpu_hoisted} {
    return %arg0 : tensor<32x32xbf16, #layout>
  }
  func.func @main(%arg0: tensor<32x32xbf16, #layout>) -> tensor<32x32xbf16, #layout> {
    %0 = call @hoisted(%arg0) : (tensor<32x32xbf16, #layout>) -> tensor<32x32xbf16, #layout>
    return %0 : tensor<32x32xbf16, #layout>
  }
}
"#;
    for policy in ["df-sharding", "df-sharding-merge"] {
        let (code, optimized, stderr) = optimize_text("split-call", text, &["--policy", policy]);
        assert_eq!(code, 0, "{stderr}");
        let call = optimized.lines().find(|l| l.contains("@hoisted") && !l.contains("func.func"));
        expect_test::expect![[r#"
            %0 = "func.call"(%arg0) <{callee = @hoisted}> : (tensor<32x32xbf16, #layout>) -> tensor<32x32xbf16, #layout>
        "#]]
        .assert_eq(&format!("{}\n", call.unwrap_or("no call").trim()));
        let mlir_opt = std::path::Path::new("/usr/lib/llvm-19/bin/mlir-opt");
        if mlir_opt.exists() {
            let mut child = Command::new(mlir_opt)
                .args(["--allow-unregistered-dialect", "--split-input-file", "-"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("mlir-opt runs");
            if let Some(mut stdin) = child.stdin.take() {
                std::io::Write::write_all(&mut stdin, optimized.as_bytes())
                    .expect("mlir-opt reads");
            }
            let out = child.wait_with_output().expect("mlir-opt finishes");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// A batch-1 f32 MLP in TTIR (matmul + bias, relu, matmul + bias), as tt-mlir's MNIST sharding
/// test has it. tt-mlir width-shards the first linear and the relu over the eight cores their
/// eight tiles allow and height-shards the second linear, resharding its input: on one core
/// the first linear's generated subblock (1x8) is over the 4 DST tiles an f32 matmul has, so
/// no one-core config survives to reach the second linear without a reshard.
#[test]
fn an_f32_mlp_width_shards_its_first_linear_on_eight_cores_as_tt_mlir_does() {
    let text = r#"module {
  func.func @main(%x: tensor<1x640xf32>, %w1: tensor<640x256xf32>, %b1: tensor<1x256xf32>, %w2: tensor<256x10xf32>, %b2: tensor<1x10xf32>) -> tensor<1x10xf32> {
    %0 = "ttir.matmul"(%x, %w1) : (tensor<1x640xf32>, tensor<640x256xf32>) -> tensor<1x256xf32> loc("fc1")
    %1 = "ttir.add"(%0, %b1) : (tensor<1x256xf32>, tensor<1x256xf32>) -> tensor<1x256xf32> loc("fc1_bias")
    %2 = "ttir.relu"(%1) : (tensor<1x256xf32>) -> tensor<1x256xf32> loc("act")
    %3 = "ttir.matmul"(%2, %w2) : (tensor<1x256xf32>, tensor<256x10xf32>) -> tensor<1x10xf32> loc("fc2")
    %4 = "ttir.add"(%3, %b2) : (tensor<1x10xf32>, tensor<1x10xf32>) -> tensor<1x10xf32> loc("fc2_bias")
    return %4 : tensor<1x10xf32>
  }
}
"#;
    let dir = std::env::temp_dir();
    let input = dir.join(format!("ttnn-opt-mlp-{}.mlir", std::process::id()));
    std::fs::write(&input, text).expect("temp dir is writable");
    let input_s = input.to_string_lossy().into_owned();
    let (code, _, stderr) =
        run(&["optimize", &input_s, "--policy", "df-sharding", "--report", "human"]);
    let _ = std::fs::remove_file(&input);
    assert_eq!(code, 0, "{stderr}");
    // Each op's row up to its planned layout (the cost column is not the point here), and the
    // lines under it.
    let report: String = stderr
        .lines()
        .skip(2)
        .map(|l| {
            let cut = if l.starts_with(' ') || l.starts_with("df-sharding:") {
                l
            } else {
                l.get(..78).unwrap_or(l)
            };
            format!("{}\n", cut.trim_end())
        })
        .collect();
    expect_test::expect![[r#"
        fc1                          ttnn.linear            DRAM il      L1 ws 8
        act                          ttnn.relu              DRAM il      L1 ws 8
        fc2                          ttnn.linear            DRAM il      L1 hs 1
            operand 0: reshard to L1 height_sharded 1x1, 1x8 tiles per core (f32) (reshard: edge `%1` -> `%2` (operand 0): no producer output is a valid input for any consumer config)
            result: DRAM interleaved, 1x1 tiles total (f32) (spill to DRAM: the chain's output is returned)
        df-sharding: 3 ops, 3 in L1; chains: 1 completed; 1 reshards, 1 spills, 0 merges; 2 conversions inserted
    "#]].assert_eq(&report);
}

/// A TTIR fork whose two branches share the location `op`, as in tt-mlir's
/// `l1_interleaved/fork_join_sharded.mlir`.
const SHARED_LOC_TTIR: &str = r#"module {
  func.func @main(%a: tensor<64x128xbf16>) -> tensor<64x128xbf16> {
    %0 = "ttir.relu"(%a) : (tensor<64x128xbf16>) -> tensor<64x128xbf16> loc("r")
    %1 = "ttir.neg"(%0) : (tensor<64x128xbf16>) -> tensor<64x128xbf16> loc(#loc)
    %2 = "ttir.abs"(%0) : (tensor<64x128xbf16>) -> tensor<64x128xbf16> loc(#loc)
    %3 = "ttir.add"(%1, %2) : (tensor<64x128xbf16>, tensor<64x128xbf16>) -> tensor<64x128xbf16> loc("j")
    return %3 : tensor<64x128xbf16>
  }
}
#loc = loc("op")
"#;

/// Optimizes `text` (written to a temporary `.mlir` file) with `args` and returns the human
/// report lines of `ops`.
fn optimize_text_report(text: &str, args: &[&str], ops: &[&str]) -> String {
    // Named by the text and the arguments too: tests run in parallel.
    let input = std::env::temp_dir().join(format!(
        "ttnn-opt-text-{}-{}-{}-{}.mlir",
        std::process::id(),
        text.len(),
        args.join(" ").len(),
        ops.join(" ").len()
    ));
    std::fs::write(&input, text).expect("temp dir is writable");
    let input_s = input.to_string_lossy().into_owned();
    let mut all = vec!["optimize", &input_s, "--report", "human"];
    all.extend_from_slice(args);
    let (code, _, stderr) = run(&all);
    let _ = std::fs::remove_file(&input);
    assert_eq!(code, 0, "{stderr}");
    // The header starts with `op` too.
    let report: String =
        stderr.lines().filter(|l| !l.contains(" device µs ")).map(|l| format!("{l}\n")).collect();
    ops.iter().map(|op| report_lines(&report, op)).collect()
}

/// tt-mlir applies an override to every op whose location has the name; the importer
/// renames the second `op` to `op_1` to keep names unique, and the override still reaches it.
#[test]
fn an_override_of_a_location_two_ttir_ops_share_reaches_both() {
    let report = optimize_text_report(
        SHARED_LOC_TTIR,
        &[
            "--memory-layout-analysis-enabled=false",
            "--override-output-layout",
            "op=l1:height_sharded",
        ],
        &["op", "op_1"],
    );
    expect_test::expect![[r#"
        op                           ttnn.neg               DRAM il      L1 hs 2      -                           3.5       3.1 the first legal layout the output-layout override leaves, as tt-mlir's OpConfigAnalysis picks it
        op_1                         ttnn.abs               DRAM il      L1 hs 2      -                           3.5       3.1 the first legal layout the output-layout override leaves, as tt-mlir's OpConfigAnalysis picks it
    "#]]
    .assert_eq(&report);
}

/// The name the importer made unique still names that op alone.
#[test]
fn an_override_of_a_renamed_op_reaches_that_op_alone() {
    let report = optimize_text_report(
        SHARED_LOC_TTIR,
        &[
            "--memory-layout-analysis-enabled=false",
            "--override-output-layout",
            "op_1=l1:height_sharded",
        ],
        &["op", "op_1"],
    );
    expect_test::expect![[r#"
        op                           ttnn.neg               DRAM il      DRAM il      -                           3.2       3.1 not in an L1 chain: DRAM interleaved
        op_1                         ttnn.abs               DRAM il      L1 hs 2      -                           3.5       3.1 the first legal layout the output-layout override leaves, as tt-mlir's OpConfigAnalysis picks it
    "#]]
    .assert_eq(&report);
}

/// Ops for the L1-interleaved fallback's rules: `relu`'s user does not run right after it,
/// `add`'s user is a typecast, `typecast` itself never moves, `abs` is returned; `neg` and
/// `exp` qualify.
const FALLBACK_TTIR: &str = r#"module {
  func.func @main(%a: tensor<64x128xbf16>, %b: tensor<64x128xbf16>) -> tensor<64x128xf32> {
    %0 = "ttir.relu"(%a) : (tensor<64x128xbf16>) -> tensor<64x128xbf16> loc("relu")
    %1 = "ttir.neg"(%b) : (tensor<64x128xbf16>) -> tensor<64x128xbf16> loc("neg")
    %2 = "ttir.add"(%0, %1) : (tensor<64x128xbf16>, tensor<64x128xbf16>) -> tensor<64x128xbf16> loc("add")
    %3 = "ttir.typecast"(%2) : (tensor<64x128xbf16>) -> tensor<64x128xf32> loc("typecast")
    %4 = "ttir.exp"(%3) : (tensor<64x128xf32>) -> tensor<64x128xf32> loc("exp")
    %5 = "ttir.abs"(%4) : (tensor<64x128xf32>) -> tensor<64x128xf32> loc("abs")
    return %5 : tensor<64x128xf32>
  }
}
"#;

const FALLBACK_OPS: [&str; 6] = ["relu", "neg", "add", "typecast", "exp", "abs"];

/// tt-mlir's `L1InterleavedFallbackAnalysis`: a DRAM result used once, by the op right after
/// it, moves to L1 interleaved unless a typecast (or slice, matmul) produces or reads it.
#[test]
fn the_l1_interleaved_fallback_moves_single_use_results_read_right_after_to_l1() {
    let report = optimize_text_report(
        FALLBACK_TTIR,
        &[
            "--memory-layout-analysis-enabled=false",
            "--l1-interleaved-fallback-analysis-enabled=true",
        ],
        &FALLBACK_OPS,
    );
    expect_test::expect![[r#"
        relu                         ttnn.relu              DRAM il      DRAM il      -                           3.2       3.1 not in an L1 chain: DRAM interleaved
        neg                          ttnn.neg               DRAM il      L1 il        -                           3.2       3.1 moved to L1 interleaved by the L1-interleaved fallback: its one user runs right after it and both fit L1, as in tt-mlir's L1InterleavedFallbackAnalysis
        add                          ttnn.add               DRAM il      DRAM il      -                           3.3       3.1 not in an L1 chain: DRAM interleaved
        typecast                     ttnn.typecast          DRAM il      DRAM il      -                           3.3       3.1 not in an L1 chain: DRAM interleaved
        exp                          ttnn.exp               DRAM il      L1 il        -                           3.4       3.4 moved to L1 interleaved by the L1-interleaved fallback: its one user runs right after it and both fit L1, as in tt-mlir's L1InterleavedFallbackAnalysis
        abs                          ttnn.abs               DRAM il      DRAM il      -                           3.4       3.1 not in an L1 chain: DRAM interleaved
    "#]]
    .assert_eq(&report);
}

/// The fallback is off unless asked for, as in tt-mlir.
#[test]
fn without_the_l1_interleaved_fallback_every_op_stays_in_dram() {
    let report = optimize_text_report(
        FALLBACK_TTIR,
        &["--memory-layout-analysis-enabled=false"],
        &FALLBACK_OPS,
    );
    expect_test::expect![[r#"
        relu                         ttnn.relu              DRAM il      DRAM il      -                           3.2       3.1 not in an L1 chain: DRAM interleaved
        neg                          ttnn.neg               DRAM il      DRAM il      -                           3.2       3.1 not in an L1 chain: DRAM interleaved
        add                          ttnn.add               DRAM il      DRAM il      -                           3.3       3.1 not in an L1 chain: DRAM interleaved
        typecast                     ttnn.typecast          DRAM il      DRAM il      -                           3.3       3.1 not in an L1 chain: DRAM interleaved
        exp                          ttnn.exp               DRAM il      DRAM il      -                           3.4       3.4 not in an L1 chain: DRAM interleaved
        abs                          ttnn.abs               DRAM il      DRAM il      -                           3.4       3.1 not in an L1 chain: DRAM interleaved
    "#]]
    .assert_eq(&report);
}

/// An op moves only if it fits L1 with its inputs and its user fits reading it from there:
/// an 8192x8192 bf16 tensor is 2 MiB per core interleaved over 64 cores, more than L1.
#[test]
fn the_l1_interleaved_fallback_leaves_in_dram_what_does_not_fit_l1() {
    let big = r#"module {
  func.func @main(%a: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
    %0 = "ttir.relu"(%a) : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> loc("big")
    %1 = "ttir.neg"(%0) : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> loc("out")
    return %1 : tensor<8192x8192xbf16>
  }
}
"#;
    let report = optimize_text_report(
        big,
        &[
            "--memory-layout-analysis-enabled=false",
            "--l1-interleaved-fallback-analysis-enabled=true",
        ],
        &["big"],
    );
    expect_test::expect![[r#"
        big                          ttnn.relu              DRAM il      DRAM il      -                        1081.7     575.1 not in an L1 chain: DRAM interleaved
    "#]].assert_eq(&report);
}

/// tt-mlir's `l1_interleaved/storage_fail_nextop.mlir`: a relu feeding a height-sharded add
/// moves to L1 interleaved, unless `tensor-l1-usage-cap` leaves no room for both.
#[test]
fn tensor_l1_usage_cap_shrinks_the_l1_the_fallback_may_use() {
    let ttir = r#"module {
  func.func @main(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
    %0 = "ttir.relu"(%a) : (tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> loc("relu")
    %1 = "ttir.add"(%0, %b) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> loc("add_op")
    return %1 : tensor<4096x4096xbf16>
  }
}
"#;
    let with_cap = |cap: &str| {
        let overrides = std::env::temp_dir().join(format!(
            "ttnn-opt-cap-{}-{}.overrides",
            std::process::id(),
            cap.len()
        ));
        std::fs::write(
            &overrides,
            format!(
                "optimization-level=1 l1-interleaved-fallback-analysis-enabled=true \
                 override-output-layout=add_op=l1:height_sharded {cap}\n"
            ),
        )
        .expect("temp dir is writable");
        let path = overrides.to_string_lossy().into_owned();
        let report = optimize_text_report(ttir, &["--overrides", &path], &["relu"]);
        let _ = std::fs::remove_file(&overrides);
        report
    };
    expect_test::expect![[r#"
        relu                         ttnn.relu              DRAM il      L1 il        -                         162.4     146.0 moved to L1 interleaved by the L1-interleaved fallback: its one user runs right after it and both fit L1, as in tt-mlir's L1InterleavedFallbackAnalysis
        relu                         ttnn.relu              DRAM il      DRAM il      -                         272.7     146.0 not in an L1 chain: DRAM interleaved
    "#]]
    .assert_eq(&(with_cap("") + &with_cap("tensor-l1-usage-cap=0.6")));
}
