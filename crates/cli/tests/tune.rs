//! `ttnn-analyzer tune` end to end on the FFN sample: reproducible for a seed, runs to its
//! budget, lowers the estimated cost with a plan the verifier accepts, never overwrites its
//! input, and keeps the best result when interrupted.

#![expect(clippy::disallowed_methods, reason = "CLI tests read and write temporary files")]

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const FFN: &str = "test-data/samples/ffn.mlir";

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
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

/// A path in the temp directory, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!("ttnn-tune-{}-{name}", std::process::id())))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp paths are UTF-8 here")
    }

    fn read(&self) -> String {
        std::fs::read_to_string(&self.0).expect("the overrides file was written")
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The number after `label` on the summary line that starts with it.
fn number_after(stdout: &str, label: &str) -> u64 {
    let line = stdout.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| {
        panic!("no `{label}` line in:\n{stdout}");
    });
    let digits: String =
        line[label.len()..].trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no number after `{label}` in `{line}`"))
}

#[test]
fn the_same_seed_gives_the_same_overrides() {
    let (a, b) = (TempPath::new("seed-a"), TempPath::new("seed-b"));
    let args = |out: &str| -> Vec<String> {
        ["tune", FFN, "--budget", "60", "--seed", "7", "-o", out]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    let args_a = args(a.path());
    let args_b = args(b.path());
    let (code_a, out_a, err_a) = run(&args_a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code_b, out_b, err_b) = run(&args_b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!((code_a, code_b), (0, 0), "{out_a}{err_a}{out_b}{err_b}");
    assert!(!a.read().is_empty());
    assert_eq!(a.read(), b.read(), "same seed and budget, same overrides file");
    // The summaries agree on everything but wall time and the output path.
    let stable = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with("evaluations:") && !l.starts_with("wrote"))
            .map(|l| l.split(" checks took").next().unwrap_or(l).to_owned())
            .collect()
    };
    assert_eq!(stable(&out_a), stable(&out_b));

    // Another seed explores in another order; with this budget both still end in a valid
    // overrides file.
    let c = TempPath::new("seed-c");
    let (code, out, err) = run(&["tune", FFN, "--budget", "60", "--seed", "8", "-o", c.path()]);
    assert_eq!(code, 0, "{out}{err}");
    let parsed = base_db::parse_overrides(&c.read());
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
}

#[test]
fn tuning_a_small_graph_runs_to_its_budget_and_lowers_the_cost_with_a_valid_plan() {
    let out_file = TempPath::new("budget");
    let (code, stdout, stderr) =
        run(&["tune", FFN, "--budget", "150", "--seed", "1", "-o", out_file.path()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // No terminal: no progress bar on stderr.
    assert_eq!(stderr, "");
    assert_eq!(number_after(&stdout, "evaluations:"), 150, "{stdout}");
    let baseline = number_after(&stdout, "baseline (no overrides):");
    let tuned = number_after(&stdout, "tuned:");
    assert!(tuned < baseline, "the search found nothing better than {baseline} ns:\n{stdout}");
    assert!(stdout.contains("in the tuned plan (0 new)"), "{stdout}");

    // The file holds the tuned overrides: `optimize` with it gives the tuned cost.
    let text = out_file.read();
    assert!(text.starts_with("# ttnn-analyzer tune"), "{text}");
    let parsed = base_db::parse_overrides(&text);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    assert!(!parsed.entries.is_empty(), "an improvement needs at least one override");
    let (code, _, stderr) = run(&["optimize", FFN, "--overrides", out_file.path()]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn tune_never_overwrites_its_input() {
    let before = std::fs::read_to_string(workspace_root().join(FFN)).expect("sample exists");
    let (code, _, stderr) = run(&["tune", FFN, "--budget", "5", "-o", FFN]);
    assert_eq!(code, 2);
    assert!(stderr.contains("refusing to overwrite the input file"), "{stderr}");
    let after = std::fs::read_to_string(workspace_root().join(FFN)).expect("sample exists");
    assert_eq!(before, after);
}

#[test]
fn an_interrupted_search_writes_the_best_result_found() {
    let out_file = TempPath::new("interrupt");
    let child = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
        .args(["tune", FFN, "--budget", "100000000", "--time-limit", "120", "-o", out_file.path()])
        .current_dir(workspace_root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI binary runs");
    // The handler is installed before anything else; a second is plenty for that.
    std::thread::sleep(Duration::from_secs(1));
    let status =
        Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("`kill` runs");
    assert!(status.success());
    let out = child.wait_with_output().expect("tune exits");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("interrupted, keeping the best found"), "{stdout}");
    let parsed = base_db::parse_overrides(&out_file.read());
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
}

#[test]
fn an_absurd_time_limit_is_refused_with_a_message_not_a_panic() {
    let out_file = TempPath::new("time-limit");
    for limit in ["1e19", "31536001", "0", "-1", "inf", "NaN"] {
        let flag = format!("--time-limit={limit}");
        let (code, _, stderr) = run(&["tune", FFN, "--budget", "3", &flag, "-o", out_file.path()]);
        assert_eq!(code, 2, "--time-limit {limit}: {stderr}");
        assert!(stderr.starts_with("error: `--time-limit` must be"), "{limit}: {stderr}");
    }
    // The largest accepted limit still runs the search to its budget.
    let (code, stdout, stderr) =
        run(&["tune", FFN, "--budget", "3", "--time-limit", "31536000", "-o", out_file.path()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(number_after(&stdout, "evaluations:"), 3, "{stdout}");
}
