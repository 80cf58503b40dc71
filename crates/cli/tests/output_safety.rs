//! Nothing lost: no command writes over one of its inputs however the output is spelled
//! (hard link, symlink), outputs are replaced by rename only once complete, `tune` keeps an
//! earlier result unless forced, and a failed write to stdout is an error (exit 2).

#![expect(clippy::disallowed_methods, reason = "CLI tests read and write temporary files")]

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const BIN: &str = env!("CARGO_BIN_EXE_ttnn-analyzer");

/// Runs the CLI from the workspace root; returns the exit code, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("the CLI binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the CLI with stdout on `/dev/full`, where every write fails with ENOSPC.
fn run_into_full_stdout(args: &[&str]) -> (i32, String) {
    let full = fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full exists");
    let out = Command::new(BIN)
        .args(args)
        .current_dir(workspace_root())
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .expect("the CLI binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn sample(name: &str) -> String {
    fs::read_to_string(workspace_root().join(name)).expect("the sample exists")
}

/// A temporary directory holding a copy of `sample` as `x.mlir` and a hard link `y.mlir`.
struct Linked {
    dir: tempfile::TempDir,
    text: String,
}

impl Linked {
    fn new(sample_path: &str) -> Linked {
        let dir = tempfile::tempdir().expect("a temp dir");
        let text = sample(sample_path);
        fs::write(dir.path().join("x.mlir"), &text).expect("the copy is written");
        fs::hard_link(dir.path().join("x.mlir"), dir.path().join("y.mlir")).expect("ln works");
        Linked { dir, text }
    }

    fn path(&self, name: &str) -> String {
        path_str(&self.dir.path().join(name))
    }

    /// Asserts the run was refused and the input is as it was.
    fn assert_refused_and_intact(&self, (code, stdout, stderr): (i32, String, String)) {
        assert_eq!(code, 2, "{stdout}{stderr}");
        assert!(stderr.contains("refusing to overwrite the input file"), "{stderr}");
        assert_eq!(fs::read_to_string(self.dir.path().join("x.mlir")).unwrap(), self.text);
    }
}

fn path_str(p: &Path) -> String {
    p.to_str().expect("temp paths are UTF-8 here").to_owned()
}

const FFN: &str = "test-data/samples/ffn.mlir";
const TTIR: &str = "test-data/import/mixed_ops.mlir";
const MLP: &str = "test-data/models/mlp_block.mlir";

#[test]
fn tune_refuses_an_output_that_is_a_hard_link_to_its_input() {
    let t = Linked::new(FFN);
    t.assert_refused_and_intact(run(&[
        "tune",
        &t.path("x.mlir"),
        "--budget",
        "3",
        "-o",
        &t.path("y.mlir"),
    ]));
}

#[test]
fn optimize_refuses_an_output_that_is_a_hard_link_to_its_input() {
    let t = Linked::new(FFN);
    t.assert_refused_and_intact(run(&["optimize", &t.path("x.mlir"), "-o", &t.path("y.mlir")]));
}

#[test]
fn import_refuses_an_output_that_is_a_hard_link_to_its_input() {
    let t = Linked::new(TTIR);
    t.assert_refused_and_intact(run(&["import", &t.path("x.mlir"), "-o", &t.path("y.mlir")]));
}

#[test]
fn the_report_chart_refuses_an_output_that_is_a_hard_link_to_its_input() {
    let t = Linked::new(MLP);
    t.assert_refused_and_intact(run(&[
        "report",
        "--compare",
        "--svg",
        &t.path("y.mlir"),
        &t.path("x.mlir"),
    ]));
}

#[test]
fn the_explorer_page_refuses_an_output_that_is_a_hard_link_to_its_input() {
    let t = Linked::new(MLP);
    t.assert_refused_and_intact(run(&["report", "--html", &t.path("y.mlir"), &t.path("x.mlir")]));
}

#[test]
fn optimize_refuses_an_output_that_is_a_symlink_to_its_input() {
    let t = Linked::new(FFN);
    std::os::unix::fs::symlink(t.dir.path().join("x.mlir"), t.dir.path().join("s.mlir"))
        .expect("symlinks work");
    t.assert_refused_and_intact(run(&["optimize", &t.path("x.mlir"), "-o", &t.path("s.mlir")]));
}

#[test]
fn optimize_refuses_to_write_over_its_overrides_or_target_file() {
    let t = Linked::new(FFN);
    let overrides = t.path("o.overrides");
    fs::write(&overrides, "").unwrap();
    let (code, _, stderr) =
        run(&["optimize", &t.path("x.mlir"), "--overrides", &overrides, "-o", &overrides]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing to overwrite the input file"), "{stderr}");

    let target = t.path("t.toml");
    fs::write(&target, "base = \"n150\"\n").unwrap();
    let (code, _, stderr) =
        run(&["optimize", &t.path("x.mlir"), "--target", &target, "-o", &target]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing to overwrite the input file"), "{stderr}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "base = \"n150\"\n");
}

#[test]
fn an_existing_output_is_replaced_by_a_new_file_not_rewritten_in_place() {
    // A hard link to the old output still sees the old text: the new output was renamed
    // into place, so a reader of the old file never sees a half-written one.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.mlir");
    fs::write(&out, "previous output\n").unwrap();
    fs::hard_link(&out, dir.path().join("old.mlir")).unwrap();
    let (code, _, stderr) = run(&["optimize", FFN, "-o", &path_str(&out)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(fs::read_to_string(dir.path().join("old.mlir")).unwrap(), "previous output\n");
    assert!(fs::read_to_string(&out).unwrap().contains("ttnn."));
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["old.mlir", "out.mlir"], "no temporary file is left behind");
}

#[test]
fn a_write_that_fails_midway_leaves_the_previous_output_whole() {
    // `ulimit -f 1` caps files at one block, so writing the optimized IR fails with EFBIG
    // (SIGXFSZ is ignored so the write returns an error instead of killing the process).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.mlir");
    fs::write(&out, "previous output\n").unwrap();
    let script =
        format!("trap '' XFSZ; ulimit -f 1; exec '{BIN}' optimize {FFN} -o '{}'", path_str(&out));
    let result = Command::new("sh")
        .args(["-c", &script])
        .current_dir(workspace_root())
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
    assert_eq!(fs::read_to_string(&out).unwrap(), "previous output\n");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no partial file is left behind");
}

#[test]
fn tune_keeps_an_existing_default_output_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("ffn.mlir");
    fs::write(&input, sample(FFN)).unwrap();
    let default = dir.path().join("ffn.tuned.overrides");
    fs::write(&default, "# an earlier result\n").unwrap();

    let (code, _, stderr) = run(&["tune", &path_str(&input), "--budget", "3"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(fs::read_to_string(&default).unwrap(), "# an earlier result\n");

    let (code, _, stderr) = run(&["tune", &path_str(&input), "--budget", "3", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(fs::read_to_string(&default).unwrap().starts_with("# ttnn-analyzer tune"));
}

#[test]
fn a_failed_write_to_stdout_is_an_io_error_for_every_command_that_prints() {
    let err_file = "test-data/check/err/undefined_value_and_type_mismatch.mlir";
    let cases: &[&[&str]] = &[
        &["fmt", FFN],
        &["optimize", FFN],
        &["report", FFN],
        &["report", "--compare", "--no-timing", MLP],
        &["import", TTIR],
        &["check", err_file],
        &["check", "--format", "json", err_file],
    ];
    for args in cases {
        let (code, stderr) = run_into_full_stdout(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("cannot write to stdout"), "{args:?}: {stderr}");
    }
}

#[test]
fn an_output_that_is_a_symlink_or_a_device_is_written_through_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.mlir");
    let link = dir.path().join("link.mlir");
    fs::write(&real, "previous output\n").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, stderr) = run(&["optimize", FFN, "-o", &path_str(&link)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    assert!(fs::read_to_string(&real).unwrap().contains("ttnn."), "the target was written");

    // `-o /dev/stdout` writes to stdout, whatever stdout is.
    let (code, stdout, stderr) = run(&["import", TTIR, "-o", "/dev/stdout"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("// TTNN imported by ttnn-analyzer"), "{stdout}");
}
