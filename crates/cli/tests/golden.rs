//! Golden tests of the CLI: `check` on `test-data/check/{ok,err}/*.mlir` against `.txt`
//! snapshots next to them, and `fmt` on the bundled samples.
//!
//! Files in `ok/` must produce no diagnostics; files in `err/` must produce at least one.
//! `UPDATE_EXPECT=1 cargo test` regenerates the snapshots; review the diff.

#![expect(clippy::disallowed_methods, reason = "CLI tests write temporary files")]

use std::{path::PathBuf, process::Command};

use expect_test::expect_file;

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

fn fixtures(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(workspace_root().join(dir))
        .expect("fixture directory exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    files.sort();
    files
}

#[test]
fn check_reports_nothing_for_valid_files() {
    for file in fixtures("test-data/check/ok") {
        let (code, stdout, _) = run(&["check", &file]);
        assert_eq!(code, 0, "{file}:\n{stdout}");
        assert_eq!(stdout, "", "{file}");
    }
}

#[test]
fn check_output_matches_the_snapshots_for_invalid_files() {
    for file in fixtures("test-data/check/err") {
        let (code, stdout, _) = run(&["check", &file]);
        assert_eq!(code, 1, "{file} must fail:\n{stdout}");
        let (_, json, _) = run(&["check", "--format", "json", &file]);
        assert!(!json.is_empty(), "{file} has no JSON diagnostics");
        for line in json.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
            for key in ["file", "range", "severity", "code", "message"] {
                assert!(v.get(key).is_some(), "{file}: `{key}` missing in {line}");
            }
        }
        let snapshot = workspace_root().join(file.replace(".mlir", ".txt"));
        expect_file![snapshot].assert_eq(&format!("{stdout}--- json ---\n{json}"));
    }
}

#[test]
fn fmt_output_is_a_fixpoint_on_the_samples() {
    for file in fixtures("test-data/samples") {
        let (code, first, stderr) = run(&["fmt", &file]);
        assert_eq!(code, 0, "{file}: {stderr}");
        let tmp = std::env::temp_dir().join(format!("ttnn-fmt-{}.mlir", std::process::id()));
        std::fs::write(&tmp, &first).expect("temp file is writable");
        let (_, second, _) = run(&["fmt", tmp.to_str().expect("utf-8 temp path")]);
        let _ = std::fs::remove_file(&tmp);
        assert_eq!(first, second, "{file}: fmt is not idempotent");
    }
}

#[test]
fn fmt_refuses_files_with_syntax_errors_and_prints_nothing() {
    let (code, stdout, stderr) =
        run(&["fmt", "test-data/check/err/broken_op_does_not_hide_the_rest.mlir"]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(stderr.contains("has syntax errors"), "{stderr}");
}

#[test]
fn missing_files_and_bad_usage_exit_with_status_two() {
    assert_eq!(run(&["check", "test-data/does-not-exist.mlir"]).0, 2);
    assert_eq!(run(&["check"]).0, 2);
    assert_eq!(run(&["frobnicate"]).0, 2);
}

#[test]
fn check_shows_the_first_200_diagnostics_of_a_file_and_counts_the_rest() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("many.mlir");
    // Three errors per line: a `?` where a type should be, then two `@` with no name.
    let line = "  %v = \"ttnn.bogus\"(%a) : (tensor<32x32xbf16>) -> ?? @@\n";
    std::fs::write(&file, line.repeat(100)).expect("the file is written");
    let path = file.to_str().expect("temp paths are UTF-8 here");
    let (code, stdout, stderr) = run(&["check", path]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let shown = stdout.lines().filter(|l| l.starts_with("error[")).count();
    assert_eq!(shown, 200, "{stdout}");
    let tail: Vec<&str> =
        stdout.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    expect_test::expect![[r#"
        error[expected-identifier]: expected an identifier after `@`
          --> <file>:67:54
           |
        67 |   %v = "ttnn.bogus"(%a) : (tensor<32x32xbf16>) -> ?? @@
           |                                                      ^

        ... and 100 more diagnostics in `<file>`, not shown (the first 200 are)
    "#]]
    .assert_eq(&tail.join("\n").replace(path, "<file>"));
    // The summary still counts every diagnostic, and JSON lists them all.
    assert!(stderr.contains("300 errors"), "{stderr}");
    let (_, json, _) = run(&["check", "--format", "json", path]);
    assert_eq!(json.lines().count(), 300);
}
