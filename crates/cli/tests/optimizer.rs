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
