//! Nothing hangs: inputs that are not regular files (devices, named pipes) are refused at
//! once, files over the size cap are refused without being read, and target files past the
//! physical bounds are refused before any planning. Each run has a deadline, so a
//! regression fails the test instead of hanging it.

#![expect(clippy::disallowed_methods, reason = "CLI tests read and write temporary files")]

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the CLI; fails the test if it has not exited within 10 seconds.
fn run_within_deadline(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
        .args(args)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI binary runs");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            let out = child.wait_with_output().expect("the output is read");
            return (
                status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`ttnn-analyzer {}` did not finish within 10 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8 here")
}

/// A named pipe with no writer: opening it for reading would block forever.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let ok = Command::new("mkfifo").arg(&path).status().expect("`mkfifo` runs").success();
    assert!(ok, "mkfifo {}", path.display());
    path
}

#[test]
fn check_refuses_a_character_device_instead_of_reading_it_without_end() {
    let (code, stderr) = run_within_deadline(&["check", "/dev/zero"]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        "error: cannot read `/dev/zero`: it is a character device; only regular files are read as inputs\n"
    );
}

#[test]
fn every_command_refuses_a_named_pipe_instead_of_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path(), "in.mlir");
    for command in ["check", "fmt", "optimize", "report", "import"] {
        let (code, stderr) = run_within_deadline(&[command, path_str(&pipe)]);
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(stderr.contains("it is a named pipe; only regular files are read"), "{stderr}");
    }
}

#[test]
fn optimize_refuses_an_overrides_file_or_target_that_is_a_named_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path(), "ffn.overrides");
    let ffn = "test-data/samples/ffn.mlir";
    let (code, stderr) = run_within_deadline(&["optimize", ffn, "--overrides", path_str(&pipe)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("it is a named pipe"), "{stderr}");
    let (code, stderr) = run_within_deadline(&["optimize", ffn, "--target", path_str(&pipe)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("it is a named pipe"), "{stderr}");
}

#[test]
fn a_file_over_the_size_cap_is_refused_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.mlir");
    // Sparse: 256 MiB and one byte of length, no blocks on disk.
    fs::File::create(&big).unwrap().set_len(256 * 1024 * 1024 + 1).unwrap();
    let (code, stderr) = run_within_deadline(&["check", path_str(&big)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is larger than 256 MiB, the limit for an input file"), "{stderr}");
}

#[test]
fn a_target_file_with_an_impossible_grid_is_refused_before_planning() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("huge.toml");
    fs::write(&target, "base = \"n150\"\nworker_grid = { rows = 100000, cols = 100000 }\n")
        .unwrap();
    let t = path_str(&target);
    for args in [
        vec!["optimize", "test-data/samples/ffn.mlir", "--target", t],
        vec!["report", "test-data/samples/ffn.mlir", "--target", t],
    ] {
        let (code, stderr) = run_within_deadline(&args);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(":2:15: `worker_grid`: rows and cols must each be at most 16"),
            "{stderr}"
        );
    }
}
