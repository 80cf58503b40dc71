//! Golden tests of `ttnn-analyzer import`: the hand-written mixed-op fixture must come out
//! exactly as the import library's own golden pins it, an unsupported op is an error that does
//! not stop the rest of the file being written, and the input is never overwritten.

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

/// A path in the temp directory, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!("ttnn-import-{}-{name}", std::process::id())))
    }

    fn with_text(name: &str, text: &str) -> TempPath {
        let p = TempPath::new(name);
        std::fs::write(&p.0, text).expect("temp file is writable");
        p
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The CLI adds nothing to the library's output, so the library's golden file is the
/// CLI's golden too; regenerating it belongs to `crates/import`'s fixture test.
#[test]
fn import_prints_the_pinned_ttnn_of_the_mixed_ops_fixture() {
    let (code, stdout, stderr) = run(&["import", "test-data/import/mixed_ops.mlir"]);
    assert_eq!(code, 0, "{stderr}");
    let expected =
        std::fs::read_to_string(workspace_root().join("test-data/import/mixed_ops.expected.mlir"))
            .expect("the import golden exists");
    assert!(stdout == expected, "import output differs from mixed_ops.expected.mlir:\n{stdout}");
    expect![[r#"
        imported `test-data/import/mixed_ops.mlir`: 31 TTIR ops in, 39 TTNN ops out, 0 not lowered, 0 errors
    "#]]
    .assert_eq(&stderr);
}

#[test]
fn import_writes_the_same_text_to_an_output_file() {
    let out = TempPath::new("mixed.ttnn.mlir");
    let (code, stdout, stderr) =
        run(&["import", "test-data/import/mixed_ops.mlir", "-o", out.path()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "");
    let written = std::fs::read_to_string(&out.0).expect("the output was written");
    let expected =
        std::fs::read_to_string(workspace_root().join("test-data/import/mixed_ops.expected.mlir"))
            .expect("the import golden exists");
    assert!(written == expected, "written output differs from mixed_ops.expected.mlir");
}

const UNSUPPORTED: &str = r#"module {
  func.func @main(%x: tensor<4x4xi64>) -> tensor<4x4xi64> {
    %0 = "ttir.mystery"(%x) : (tensor<4x4xi64>) -> tensor<4x4xi64> loc("m")
    %1 = "ttir.relu"(%0) : (tensor<4x4xi64>) -> tensor<4x4xi64> loc("r")
    return %1 : tensor<4x4xi64>
  }
}
"#;

#[test]
fn an_unsupported_op_is_an_error_but_the_rest_is_still_imported() {
    let input = TempPath::with_text("unsupported.mlir", UNSUPPORTED);
    let (code, stdout, stderr) = run(&["import", input.path()]);
    assert_eq!(code, 1, "{stderr}");
    expect![[r#"
        // TTNN imported by ttnn-analyzer from ttnn-import-PID-unsupported.mlir
        #dram = #ttnn.buffer_type<dram>
        #ttnn_layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, si32>, #dram>, <interleaved>>
        module {
          func.func @main(%arg0: tensor<4x4xsi32, #ttnn_layout>) -> tensor<4x4xsi32, #ttnn_layout> {
            %0 = "ttir.mystery"(%arg0) : (tensor<4x4xsi32, #ttnn_layout>) -> tensor<4x4xsi32, #ttnn_layout> loc("m")
            %1 = "ttnn.relu"(%0) : (tensor<4x4xsi32, #ttnn_layout>) -> tensor<4x4xsi32, #ttnn_layout> loc("r")
            return %1 : tensor<4x4xsi32, #ttnn_layout>
          }
        }
    "#]]
    .assert_eq(&stdout.replace(&std::process::id().to_string(), "PID"));
    expect![[r#"
        error[unsupported-op]: cannot lower `ttir.mystery` at `m`: no lowering for `ttir.mystery`
         --> TMP/ttnn-import-PID-unsupported.mlir:3:5
          |
        3 |     %0 = "ttir.mystery"(%x) : (tensor<4x4xi64>) -> tensor<4x4xi64> loc("m")
          |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

        imported `TMP/ttnn-import-PID-unsupported.mlir`: 2 TTIR ops in, 2 TTNN ops out, 1 not lowered, 1 error
    "#]]
    .assert_eq(&normalize(&stderr));
}

const UNMARKED_WEIGHT: &str = r#"func.func @main(%x: tensor<32x64xbf16> {ttcore.argument_type = #ttcore.argument_type<input>}, %w: tensor<64x96xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>}) -> tensor<32x96xbf16> {
    %0 = "ttir.matmul"(%x, %w) : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16> loc("proj")
    return %0 : tensor<32x96xbf16>
}
"#;

#[test]
fn weight_dtype_casts_unmarked_parameter_weights_as_tt_mlirs_option_does() {
    let input = TempPath::with_text("weights.mlir", UNMARKED_WEIGHT);
    let (code, plain, stderr) = run(&["import", input.path()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!plain.contains("bfp_bf8"), "{plain}");
    let (code, cast, stderr) = run(&["import", input.path(), "--weight-dtype", "bfp_bf8"]);
    assert_eq!(code, 0, "{stderr}");
    // The weight's cast (hoisted to const-eval) and the block-float layout it produces.
    let typecast = cast.lines().find(|l| l.contains("\"ttnn.typecast\"")).unwrap_or_default();
    assert!(typecast.contains("loc(\"proj_weight_dtype\")"), "{cast}");
    assert!(cast.contains("!ttcore.tile<32x32, bfp_bf8>"), "{cast}");
    let (code, _, stderr) = run(&["import", input.path(), "--weight-dtype", "bfp_f8"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bfp_bf8") && stderr.contains("bfp_bf4"), "{stderr}");
}

#[test]
fn math_fidelity_writes_the_compute_config_as_tt_mlirs_option_does_and_the_estimate_follows() {
    let input = TempPath::with_text("fidelity.mlir", UNMARKED_WEIGHT);
    let (code, plain, stderr) = run(&["import", input.path()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!plain.contains("compute_config"), "{plain}");
    let (code, lofi, stderr) = run(&["import", input.path(), "--math-fidelity", "lofi"]);
    assert_eq!(code, 0, "{stderr}");
    let matmul = lofi.lines().find(|l| l.contains("\"ttnn.matmul\"")).unwrap_or_default();
    assert!(
        matmul
            .contains("compute_config = #ttnn.device_compute_kernel_config<math_fidelity = lofi>"),
        "{lofi}"
    );
    // `report --compare` imports with the same option: the as-written time of a
    // compute-bound matmul falls with the fidelity passes.
    let big = TempPath::with_text(
        "big.mlir",
        &UNMARKED_WEIGHT
            .replace("32x64", "2048x2048")
            .replace("64x96", "2048x2048")
            .replace("32x96", "2048x2048"),
    );
    let as_written = |extra: &[&str]| {
        let mut args = vec!["report", "--compare", "--no-timing", "--format", "json", big.path()];
        args.extend_from_slice(extra);
        let (code, out, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        let line =
            out.lines().find(|l| l.contains("\"as-written\"")).unwrap_or_default().to_owned();
        let ns = line.split("\"time_ns\":").nth(1).and_then(|r| r.split(',').next()).unwrap_or("");
        ns.parse::<u64>().unwrap_or_else(|_| panic!("no time_ns in {line}"))
    };
    let (hifi4, lofi) = (as_written(&[]), as_written(&["--math-fidelity", "lofi"]));
    assert!(lofi < hifi4, "LoFi {lofi} ns is not below the HiFi4 default {hifi4} ns");
    assert_eq!(as_written(&["--math-fidelity", "hifi4"]), hifi4);
    let (code, _, stderr) = run(&["import", input.path(), "--math-fidelity", "hifi8"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("lofi") && stderr.contains("hifi4"), "{stderr}");
}

#[test]
fn import_refuses_to_overwrite_its_input() {
    let input = TempPath::with_text("self.mlir", UNSUPPORTED);
    let (code, stdout, stderr) = run(&["import", input.path(), "-o", input.path()]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(stderr.contains("refusing to overwrite the input file"), "{stderr}");
    let kept = std::fs::read_to_string(&input.0).expect("the input is still there");
    assert_eq!(kept, UNSUPPORTED);
}

#[test]
fn import_of_a_missing_file_exits_with_status_two() {
    let (code, _, stderr) = run(&["import", "test-data/import/no_such_model.mlir"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot read"), "{stderr}");
}

/// Stderr with the temp directory and the process id replaced, so snapshots are portable.
fn normalize(s: &str) -> String {
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_str().expect("utf-8 temp dir").trim_end_matches('/');
    s.replace(tmp, "TMP").replace(&std::process::id().to_string(), "PID")
}
