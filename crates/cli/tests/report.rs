//! Golden tests of `ttnn-analyzer report`: the bundled FFN sample in both formats, an L1 file
//! with an out-of-memory point, and the exit status for bad input, bad targets and bad usage.

#![expect(clippy::disallowed_methods, reason = "CLI tests write temporary files")]

use std::{path::PathBuf, process::Command};

use expect_test::expect;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
        .args(args)
        .current_dir(workspace_root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the CLI binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A file in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("ttnn-report-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("temp file is writable");
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn report_prints_a_table_and_summary_for_the_ffn_sample() {
    let (code, stdout, stderr) = run(&["report", "test-data/samples/ffn.mlir"]);
    assert_eq!(code, 0, "{stderr}");
    expect![[r#"
        func @forward
        op            kind         result layout  valid      cb  tensor  output  live L1 before  error
        ffn.up        ttnn.matmul  DRAM il        yes    114688       0       0               0
        ffn.up_bias   ttnn.add     DRAM il        yes     12288       0       0               0
        ffn.act       ttnn.gelu    DRAM il        yes      8192       0       0               0
        ffn.down      ttnn.matmul  DRAM il        yes     90112       0       0               0
        ffn.residual  ttnn.add     DRAM il        yes     12288       0       0               0
        ffn.out       ttnn.relu    DRAM il        yes      8192       0       0               0

        ops: 6, valid: 6, violations: 0
        peak L1: 114688 / 1325652 bytes per core (8.7%)
        out of L1: nowhere
    "#]]
    .assert_eq(&stdout);
}

#[test]
fn report_prints_one_json_object_per_op_for_the_ffn_sample() {
    let (code, stdout, stderr) = run(&["report", "--format", "json", "test-data/samples/ffn.mlir"]);
    assert_eq!(code, 0, "{stderr}");
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        let keys: Vec<&str> =
            v.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "op",
                "kind",
                "result_layout",
                "valid",
                "error",
                "l1",
                "live_l1_before",
                "time_ns",
                "bound"
            ],
            "{line}"
        );
    }
    expect![[r#"
        {"op":"ffn.up","kind":"ttnn.matmul","result_layout":{"buffer":"dram","memory_layout":"interleaved","grid":[1,1],"shard_shape":[8,128]},"valid":true,"error":null,"l1":{"cb":114688,"tensor":0,"output":0},"live_l1_before":0,"time_ns":71434,"bound":"dram"}
        {"op":"ffn.up_bias","kind":"ttnn.add","result_layout":{"buffer":"dram","memory_layout":"interleaved","grid":[1,1],"shard_shape":[8,128]},"valid":true,"error":null,"l1":{"cb":12288,"tensor":0,"output":0},"live_l1_before":0,"time_ns":20908,"bound":"dram"}
        {"op":"ffn.act","kind":"ttnn.gelu","result_layout":{"buffer":"dram","memory_layout":"interleaved","grid":[1,1],"shard_shape":[8,128]},"valid":true,"error":null,"l1":{"cb":8192,"tensor":0,"output":0},"live_l1_before":0,"time_ns":19854,"bound":"dram"}
        {"op":"ffn.down","kind":"ttnn.matmul","result_layout":{"buffer":"dram","memory_layout":"interleaved","grid":[1,1],"shard_shape":[8,32]},"valid":true,"error":null,"l1":{"cb":90112,"tensor":0,"output":0},"live_l1_before":0,"time_ns":101002,"bound":"dram"}
        {"op":"ffn.residual","kind":"ttnn.add","result_layout":{"buffer":"dram","memory_layout":"interleaved","grid":[1,1],"shard_shape":[8,32]},"valid":true,"error":null,"l1":{"cb":12288,"tensor":0,"output":0},"live_l1_before":0,"time_ns":9321,"bound":"dram"}
        {"op":"ffn.out","kind":"ttnn.relu","result_layout":{"buffer":"dram","memory_layout":"interleaved","grid":[1,1],"shard_shape":[8,32]},"valid":true,"error":null,"l1":{"cb":8192,"tensor":0,"output":0},"live_l1_before":0,"time_ns":7214,"bound":"dram"}
    "#]]
    .assert_eq(&stdout);
}

/// Two 512 KiB-per-core L1 tensors are live when the add allocates a third.
const L1_OOM: &str = r#"#dram = #ttnn.buffer_type<dram>
#l1 = #ttnn.buffer_type<l1>
#d = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<128x128x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#big = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x8>, memref<1x256x!ttcore.tile<32x32, bf16>, #l1>, <interleaved>>
func.func @f(%a: tensor<4096x4096xbf16, #d>) -> tensor<4096x4096xbf16, #d> {
  %0 = "ttnn.relu"(%a) : (tensor<4096x4096xbf16, #d>) -> tensor<4096x4096xbf16, #big> loc("r0")
  %1 = "ttnn.gelu"(%a) : (tensor<4096x4096xbf16, #d>) -> tensor<4096x4096xbf16, #big> loc("r1")
  %2 = "ttnn.add"(%0, %1) : (tensor<4096x4096xbf16, #big>, tensor<4096x4096xbf16, #big>) -> tensor<4096x4096xbf16, #big> loc("sum")
  %3 = "ttnn.relu"(%2) : (tensor<4096x4096xbf16, #big>) -> tensor<4096x4096xbf16, #d> loc("out")
  return %3 : tensor<4096x4096xbf16, #d>
}
"#;

#[test]
fn an_out_of_memory_point_fails_the_report_with_a_diagnostic() {
    let file = TempFile::new("oom.mlir", L1_OOM);
    let (code, stdout, _) = run(&["report", file.path()]);
    assert_eq!(code, 1);
    let stdout = stdout.replace(file.path(), "oom.mlir");
    expect![[r#"
        func @f
        op   kind       result layout  valid     cb  tensor  output  live L1 before  error
        r0   ttnn.relu  L1 il          yes     8192  524288  524288               0
        r1   ttnn.gelu  L1 il          yes     8192  524288  524288          524288
        sum  ttnn.add   L1 il          NO     12288  524288  524288         1048576  out of L1: needs 1585152 bytes per core (1048576 live + 536576 for the op), 1325652 usable
        out  ttnn.relu  DRAM il        yes     8192       0       0          524288

        ops: 4, valid: 3, violations: 1
        peak L1: 1585152 / 1325652 bytes per core (119.6%)
        out of L1 at: sum (@f op 2)

        error[l1-out-of-memory]: out of L1: needs 1585152 bytes per core (1048576 live + 536576 for the op), 1325652 usable
         --> oom.mlir:8:3
          |
        8 |   %2 = "ttnn.add"(%0, %1) : (tensor<4096x4096xbf16, #big>, tensor<4096x4096xbf16, #big>) -> tensor<4096x4096xbf16, #big> loc("sum")
          |   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

    "#]]
    .assert_eq(&stdout);
    let (code, json, stderr) = run(&["report", "--format", "json", file.path()]);
    assert_eq!(code, 1);
    let sum = json.lines().nth(2).expect("a line per op");
    expect![[r#"{"op":"sum","kind":"ttnn.add","result_layout":{"buffer":"l1","memory_layout":"interleaved","grid":[8,8],"shard_shape":[1,256]},"valid":false,"error":"out of L1: needs 1585152 bytes per core (1048576 live + 536576 for the op), 1325652 usable","l1":{"cb":12288,"tensor":524288,"output":524288},"live_l1_before":1048576,"time_ns":76728,"bound":"noc"}"#]].assert_eq(sum);
    assert!(stderr.contains(r#""code":"l1-out-of-memory""#), "{stderr}");
}

#[test]
fn a_smaller_target_file_moves_the_budget() {
    let toml = TempFile::new("small.toml", "base = \"n150\"\nl1_usage_cap = 0.05\n");
    let (code, stdout, stderr) =
        run(&["report", "--target", toml.path(), "test-data/samples/ffn.mlir"]);
    assert_eq!(code, 1, "{stderr}");
    let summary: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("peak L1") || l.starts_with("ffn.down ")).collect();
    expect![[r#"
        [
            "ffn.down      ttnn.matmul  DRAM il        NO         -       -       -               0  out of L1: the op alone needs 90112 bytes per core, 69771 usable",
            "peak L1: 114688 / 69771 bytes per core (164.4%)",
        ]
    "#]].assert_debug_eq(&summary);
}

#[test]
fn bad_target_files_are_reported_with_their_line_and_exit_two() {
    let toml = TempFile::new("bad.toml", "base = \"n150\"\nl1_size = \"big\"\n");
    let (code, _, stderr) = run(&["report", "--target", toml.path(), "test-data/samples/ffn.mlir"]);
    assert_eq!(code, 2);
    let stderr = stderr.replace(toml.path(), "bad.toml");
    expect![[r#"
        error: bad.toml:2:11: `l1_size`: invalid type: string "big", expected u64
    "#]]
    .assert_eq(&stderr);
    let (code, _, stderr) = run(&["report", "--target", "n151", "test-data/samples/ffn.mlir"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("neither a builtin target"), "{stderr}");
}

#[test]
fn syntax_errors_are_printed_instead_of_a_report() {
    let (code, stdout, stderr) =
        run(&["report", "test-data/check/err/broken_op_does_not_hide_the_rest.mlir"]);
    assert_eq!(code, 1);
    assert!(!stdout.contains("live L1 before"), "{stdout}");
    assert!(stdout.contains("error["), "{stdout}");
    assert!(stderr.contains("has syntax errors"), "{stderr}");
}

#[test]
fn missing_files_and_bad_usage_exit_with_status_two() {
    assert_eq!(run(&["report", "test-data/does-not-exist.mlir"]).0, 2);
    assert_eq!(run(&["report"]).0, 2);
    assert_eq!(run(&["report", "--format", "xml", "test-data/samples/ffn.mlir"]).0, 2);
}
