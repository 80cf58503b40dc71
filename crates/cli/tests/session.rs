//! The `session` JSON-lines mode, driven through the binary: one request per line in, one
//! reply per line out. Timings (`millis`) are dropped from the snapshots.

use std::{
    io::Write as _,
    path::PathBuf,
    process::{Command, Stdio},
};

use expect_test::{Expect, expect};
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs one session over `requests` and returns the replies, one per line, without timings.
fn session(requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
        .arg("session")
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI binary runs");
    {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        for r in requests {
            writeln!(stdin, "{r}").expect("the session reads its stdin");
        }
    }
    let out = child.wait_with_output().expect("the session exits");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("every reply is one JSON line");
            if let Some(o) = v.as_object_mut() {
                o.remove("millis");
            }
            v
        })
        .collect()
}

#[track_caller]
fn check(requests: &[Value], expect: Expect) {
    let replies: Vec<String> = session(requests).iter().map(Value::to_string).collect();
    expect.assert_eq(&replies.join("\n"));
}

const TWO_FUNCS: &str = r#"func.func @first(%a: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %0 = "ttnn.relu"(%a) : (tensor<32x32xbf16>) -> tensor<32x32xbf16> loc("first_relu")
  return %0 : tensor<32x32xbf16>
}
func.func @second(%a: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %0 = "ttnn.gelu"(%a) : (tensor<32x32xbf16>) -> tensor<32x32xbf16> loc("second_gelu")
  return %0 : tensor<32x32xbf16>
}
"#;

#[test]
fn layouts_answers_for_ops_of_every_function() {
    let replies = session(&[
        json!({"cmd": "open", "name": "m.mlir", "text": TWO_FUNCS}),
        json!({"cmd": "layouts", "op": "first_relu"}),
        json!({"cmd": "layouts", "op": "second_gelu"}),
        json!({"cmd": "layouts", "op": "@second:%0"}),
        json!({"cmd": "layouts", "op": "missing"}),
    ]);
    let kinds: Vec<String> = replies
        .iter()
        .map(|r| match r["ok"].as_bool() {
            Some(true) => format!("{} {}", r["op"], r["kind"]),
            _ => format!("error: {}", r["error"]),
        })
        .collect();
    expect![[r#"
        "first_relu" "ttnn.relu"
        "second_gelu" "ttnn.gelu"
        "@second:%0" "ttnn.gelu"
        error: "no op named `missing`""#]]
    .assert_eq(&kinds[1..].join("\n"));
}

/// Issue 4's promise, as `stats` shows it: a whitespace edit executes no layout query, and a
/// one-op override executes layout queries for that op only.
#[test]
fn stats_show_a_whitespace_edit_runs_no_layout_query_and_an_override_only_its_op() {
    let replies = session(&[
        json!({"cmd": "open", "path": "test-data/samples/ffn.mlir"}),
        json!({"cmd": "optimize"}),
        json!({"cmd": "stats"}),
        json!({"cmd": "edit", "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "\n"}),
        json!({"cmd": "optimize"}),
        json!({"cmd": "stats", "detail": true}),
        json!({"cmd": "set_override", "op": "ffn.act", "params": "dram:interleaved"}),
        json!({"cmd": "optimize"}),
        json!({"cmd": "stats", "detail": true}),
    ]);
    let layout_queries = |r: &Value| -> Vec<String> {
        r["detail"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(Value::as_str)
                    .filter(|q| q.ends_with(")") && q.contains("_legality("))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    expect![[r#"
        after whitespace: []
        after override: ["overridden_legality(@forward:%2)"]"#]]
    .assert_eq(&format!(
        "after whitespace: {:?}\nafter override: {:?}",
        layout_queries(&replies[5]),
        layout_queries(&replies[8])
    ));
}

#[test]
fn optimize_with_a_policy_reports_that_policys_plan() {
    check(
        &[
            json!({"cmd": "open", "path": "test-data/optimizer/merge_a_to_b.mlir"}),
            json!({"cmd": "optimize", "policy": "df-sharding"}),
            json!({"cmd": "optimize", "policy": "df-sharding-merge"}),
        ],
        expect![[r#"
            {"file":"test-data/optimizer/merge_a_to_b.mlir","errors":0,"ok":true}
            {"policy":"df-sharding","ops":6,"ops_in_l1":5,"reshards":0,"spills":2,"merges":0,"conversions":2,"chains":{"completed":2},"ok":true}
            {"policy":"df-sharding-merge","ops":6,"ops_in_l1":5,"reshards":0,"spills":1,"merges":1,"conversions":1,"chains":{"completed":2},"ok":true}"#]],
    );
}

#[test]
fn a_malformed_batch_changes_nothing_and_later_costs_are_the_baseline() {
    let replies = session(&[
        json!({"cmd": "open", "path": "test-data/samples/ffn.mlir"}),
        json!({"cmd": "cost"}),
        json!({"cmd": "batch", "sets": [
            [{"op": "ffn.act", "params": "dram:interleaved"}],
            [{"op": "ffn.up", "option": "nonsense", "params": "dram:interleaved"}],
        ]}),
        json!({"cmd": "cost"}),
    ]);
    assert_eq!(replies[2]["ok"], json!(false), "{}", replies[2]);
    assert_eq!(replies[1]["total_ns"], replies[3]["total_ns"], "{replies:?}");
}

#[test]
fn optimize_refuses_a_file_with_errors() {
    check(
        &[
            json!({"cmd": "open", "name": "bad.mlir", "text": "func.func @f() {\n  %0 = \"ttnn.relu\"(%b) : (tensor<32x32xbf16>) -> tensor<32x32xbf16>\n  return\n}\n"}),
            json!({"cmd": "optimize"}),
        ],
        expect![[r#"
            {"file":"bad.mlir","errors":1,"ok":true}
            {"ok":false,"error":"not optimizing: the file has 1 error(s); see `diagnostics`"}"#]],
    );
}

/// Runs one session over raw stdin bytes (which need not be UTF-8) and returns the replies.
fn session_bytes(stdin_bytes: &[u8]) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ttnn-analyzer"))
        .arg("session")
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI binary runs");
    child.stdin.take().expect("stdin is piped").write_all(stdin_bytes).expect("stdin takes it");
    let out = child.wait_with_output().expect("the session exits");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn a_request_line_that_is_not_utf8_is_answered_with_an_error_and_the_session_goes_on() {
    let replies = session_bytes(b"{\"cmd\":\"st\xffats\"}\n{\"cmd\":\"shutdown\"}\n");
    expect![[r#"
        {"ok":false,"error":"malformed request: the line is not UTF-8 (invalid byte at offset 10)"}
        {"ok":true}"#]]
    .assert_eq(&replies.join("\n"));
}

#[test]
fn an_op_or_params_that_is_not_one_override_field_is_an_error_and_sets_nothing() {
    check(
        &[
            json!({"cmd": "open", "path": "test-data/samples/ffn.mlir"}),
            json!({"cmd": "set_override", "op": "a=dram,b", "params": "l1"}),
            json!({"cmd": "set_override", "op": "ffn.act", "params": "dram,ffn.up=dram"}),
            json!({"cmd": "set_override", "op": "ffn.act", "params": "dram\nmax-legal-layouts=1"}),
            json!({"cmd": "set_override", "op": "ffn act", "params": "dram"}),
            json!({"cmd": "set_override", "op": "", "params": "dram"}),
            json!({"cmd": "clear_override", "op": "a,b"}),
        ],
        expect![[r#"
            {"file":"test-data/samples/ffn.mlir","errors":0,"ok":true}
            {"ok":false,"error":"`op` must be one override field, without whitespace, `,` or `=`: \"a=dram,b\""}
            {"ok":false,"error":"`params` must be one override field, without whitespace, `,` or `=`: \"dram,ffn.up=dram\""}
            {"ok":false,"error":"`params` must be one override field, without whitespace, `,` or `=`: \"dram\\nmax-legal-layouts=1\""}
            {"ok":false,"error":"`op` must be one override field, without whitespace, `,` or `=`: \"ffn act\""}
            {"ok":false,"error":"`op` must not be empty"}
            {"ok":false,"error":"`op` must be one override field, without whitespace, `,` or `=`: \"a,b\""}"#]],
    );
}

/// A newline in a batch entry's params once started a new overrides line, so a set could
/// change `max-legal-layouts` for the whole file.
#[test]
fn a_batch_whose_params_hold_a_newline_fails_and_applies_no_global_option() {
    let replies = session(&[
        json!({"cmd": "open", "path": "test-data/samples/ffn.mlir"}),
        json!({"cmd": "cost"}),
        json!({"cmd": "batch", "sets": [
            [{"op": "ffn.act", "params": "dram:interleaved\nmax-legal-layouts=1"}],
        ]}),
        json!({"cmd": "cost"}),
    ]);
    expect![[r#"
        {"ok":false,"error":"`params` must be one override field, without whitespace, `,` or `=`: \"dram:interleaved\\nmax-legal-layouts=1\""}"#]]
    .assert_eq(&replies[2].to_string());
    assert_eq!(replies[1]["total_ns"], replies[3]["total_ns"], "{replies:?}");
}

#[test]
fn fields_of_the_wrong_type_or_unknown_fields_are_errors() {
    check(
        &[
            json!({"cmd": "open", "path": "test-data/samples/ffn.mlir"}),
            json!({"cmd": "optimize", "text": "yes"}),
            json!({"cmd": "stats", "detail": 1}),
            json!({"cmd": "cost", "policy": 5}),
            json!({"cmd": "cost", "polcy": "df-sharding"}),
            json!({"cmd": "set_override", "op": "ffn.act", "params": "dram", "option": 7}),
            json!({"cmd": "edit", "range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}, "text": ""}),
            json!({"cmd": "batch", "sets": [[{"op": "ffn.act", "params": "dram", "extra": 1}]]}),
            json!({"cmd": 3}),
        ],
        expect![[r#"
            {"file":"test-data/samples/ffn.mlir","errors":0,"ok":true}
            {"ok":false,"error":"`text` must be `true` or `false`"}
            {"ok":false,"error":"`detail` must be `true` or `false`"}
            {"ok":false,"error":"`policy` must be a string"}
            {"ok":false,"error":"unknown field `polcy` in `cost`"}
            {"ok":false,"error":"`option` must be a string"}
            {"ok":false,"error":"invalid `range`: invalid value: integer `-1`, expected u32"}
            {"ok":false,"error":"unknown field `extra` in a `batch` entry"}
            {"ok":false,"error":"`cmd` (a string) is required"}"#]],
    );
}

#[test]
fn opening_a_device_or_a_named_pipe_is_an_error_reply_not_an_endless_read() {
    // `open` reads a path as the commands read their inputs: regular files only.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fifo = dir.path().join("pipe.mlir");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo is available");
    let request = |path: &str| format!("{{\"cmd\":\"open\",\"path\":{}}}\n", Value::from(path));
    let stdin =
        [request("/dev/zero"), request(&fifo.to_string_lossy()), "{\"cmd\":\"shutdown\"}\n".into()]
            .concat();
    let replies = session_bytes(stdin.as_bytes());
    let replies: Vec<String> =
        replies.iter().map(|r| r.replace(&*dir.path().to_string_lossy(), "DIR")).collect();
    expect![[r#"
        {"ok":false,"error":"cannot read `/dev/zero`: it is a character device; only regular files are read as inputs"}
        {"ok":false,"error":"cannot read `DIR/pipe.mlir`: it is a named pipe; only regular files are read as inputs"}
        {"ok":true}"#]]
    .assert_eq(&replies.join("\n"));
}
