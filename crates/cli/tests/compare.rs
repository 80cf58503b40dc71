//! Snapshot tests of `ttnn-analyzer report --compare` on the hand-written model graphs in
//! `test-data/models`: the table for each (without the wall-time column, the only part that
//! changes from run to run), the JSON rows, the SVG chart, TTIR input, and refusals.
//!
//! The numbers are the cost model's and the verifier's; a change in the planner, the cost
//! model or the op model shows up here as a snapshot diff to review, `UPDATE_EXPECT=1` to
//! accept.

#![expect(clippy::disallowed_methods, reason = "CLI tests write temporary files")]

use std::{path::PathBuf, process::Command};

use expect_test::{expect, expect_file};

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

/// The human table of a model graph, which must compare cleanly (exit 0, nothing on stderr).
fn table(model: &str) -> String {
    let path = format!("test-data/models/{model}.mlir");
    let (code, stdout, stderr) = run(&["report", "--compare", "--no-timing", &path]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stderr, "");
    stdout
}

/// A path in the temp directory, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!("ttnn-compare-{}-{name}", std::process::id())))
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

#[test]
fn the_mlp_block_compares_written_ir_with_every_policy() {
    expect![[r#"
        mlp_block: 7 ops, target n150, usable L1 1325652 B per core
        lower bound: 126.0 µs
        estimated device time per inference; const-eval at load (once): 0.0 µs

        configuration      time µs  x bound  ops in L1  reshards  spills  peak L1 B/core  of budget  new violations  pre-existing
        as-written           150.9    1.20x        0/7         0       0          290816      21.9%               0             0
        df-sharding          161.9    1.28x        6/7         0       3          290816      21.9%               0             0
        df-sharding-merge    150.9    1.20x        0/7         0       0          290816      21.9%               0             0
        greedy               166.1    1.32x        6/7         2       1          290816      21.9%               0             0
    "#]]
    .assert_eq(&table("mlp_block"));
}

#[test]
fn the_attention_block_with_a_fork_and_a_concat_compares_cleanly() {
    expect![[r#"
        attention_block: 19 ops, target n150, usable L1 1325652 B per core
        lower bound: 88.7 µs
        estimated device time per inference; const-eval at load (once): 0.0 µs

        configuration      time µs  x bound  ops in L1  reshards  spills  peak L1 B/core  of budget  new violations  pre-existing
        as-written           104.8    1.18x       0/19         0       0          262144      19.8%               0             0
        df-sharding          157.6    1.78x       9/19         0       9          589824      44.5%               0             0
        df-sharding-merge    111.6    1.26x       3/19         0       0          262144      19.8%               0             0
        greedy               138.2    1.56x      18/19        12       1          262144      19.8%               0             0
    "#]]
    .assert_eq(&table("attention_block"));
}

#[test]
fn the_residual_conv_block_compares_cleanly() {
    expect![[r#"
        residual_conv_block: 6 ops, target n150, usable L1 1325652 B per core
        lower bound: 24.9 µs
        estimated device time per inference; const-eval at load (once): 0.0 µs

        configuration      time µs  x bound  ops in L1  reshards  spills  peak L1 B/core  of budget  new violations  pre-existing
        as-written            29.3    1.18x        0/6         0       0           50432       3.8%               0             0
        df-sharding           31.8    1.27x        5/6         1       1          103296       7.8%               0             0
        df-sharding-merge     29.3    1.18x        0/6         0       0           50432       3.8%               0             0
        greedy                28.7    1.15x        5/6         0       1          103296       7.8%               0             0
    "#]]
    .assert_eq(&table("residual_conv_block"));
}

#[test]
fn json_output_is_one_object_per_configuration() {
    let (code, stdout, stderr) =
        run(&["report", "--compare", "--format", "json", "test-data/models/mlp_block.mlir"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    let names: Vec<&str> =
        rows.iter().map(|r| r["configuration"].as_str().expect("a name")).collect();
    assert_eq!(names, ["as-written", "df-sharding", "df-sharding-merge", "greedy"]);
    for r in &rows {
        let keys: Vec<&str> =
            r.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "model",
                "configuration",
                "time_ns",
                "lower_bound_ns",
                "load_ns",
                "ops",
                "ops_in_l1",
                "reshards",
                "spills",
                "peak_l1",
                "budget",
                "new_violations",
                "preexisting_violations",
                "optimize_ms",
            ]
        );
        assert!(
            r["time_ns"].as_u64().expect("an integer")
                >= r["lower_bound_ns"].as_u64().expect("an integer")
        );
    }
    // The baseline is not optimized; every policy is, and its wall time is reported.
    assert!(rows[0]["optimize_ms"].is_null());
    assert!(rows[1..].iter().all(|r| r["optimize_ms"].as_f64().is_some_and(|ms| ms > 0.0)));
}

#[test]
fn the_human_table_has_a_wall_time_column_unless_told_otherwise() {
    let (code, stdout, stderr) = run(&["report", "--compare", "test-data/models/mlp_block.mlir"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[4].ends_with("optimize ms"), "{stdout}");
    assert!(lines[5].ends_with(" -"), "the baseline is not optimized: {stdout}");
    for policy_row in &lines[6..8] {
        let ms = policy_row.rsplit(' ').next().expect("a last cell");
        assert!(ms.parse::<f64>().is_ok_and(|ms| ms > 0.0), "{policy_row}");
    }
}

#[test]
fn the_svg_chart_of_the_mlp_block_matches_its_golden() {
    let svg = TempPath::new("mlp_block.svg");
    let (code, _, stderr) = run(&[
        "report",
        "--compare",
        "--no-timing",
        "--svg",
        svg.path(),
        "test-data/models/mlp_block.mlir",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&svg.0).expect("the chart was written");
    expect_file!["../../../test-data/models/mlp_block.svg"].assert_eq(&text);
}

/// TTIR input is imported in memory first; the mixed-op fixture exercises most lowerings,
/// including a 3x3 conv whose input reshard must match the output's sharding type.
#[test]
fn a_ttir_file_is_imported_before_it_is_compared() {
    let (code, stdout, stderr) =
        run(&["report", "--compare", "--no-timing", "test-data/import/mixed_ops.mlir"]);
    assert_eq!(stderr, "");
    assert_eq!(code, 0, "no policy introduces a violation:\n{stdout}");
    expect![[r#"
        mixed_ops: 32 ops (imported from TTIR), target n150, usable L1 1325652 B per core
        lower bound: 125.3 µs
        estimated device time per inference; const-eval at load (once): 15.9 µs

        configuration      time µs  x bound  ops in L1  reshards  spills  peak L1 B/core  of budget  new violations  pre-existing
        as-written           132.3    1.06x       0/32         0       0           51200       3.9%               0             0
        df-sharding          144.5    1.15x       3/32         1       3           51200       3.9%               0             0
        df-sharding-merge    132.3    1.06x       0/32         0       0           51200       3.9%               0             0
        greedy               162.3    1.30x      13/32         7       3           51200       3.9%               0             0
    "#]]
    .assert_eq(&stdout);
}

#[test]
fn a_ttir_file_that_does_not_import_cleanly_is_not_compared() {
    let input = TempPath::new("unsupported.mlir");
    std::fs::write(
        &input.0,
        r#"module {
  func.func @main(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
    %0 = "ttir.mystery"(%x) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("m")
    return %0 : tensor<64x64xbf16>
  }
}
"#,
    )
    .expect("temp file is writable");
    let (code, stdout, stderr) = run(&["report", "--compare", input.path()]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(stderr.contains("error[unsupported-op]"), "{stderr}");
    assert!(stderr.contains("the import has errors"), "{stderr}");
}

#[test]
fn svg_and_no_timing_need_compare() {
    let (code, _, stderr) =
        run(&["report", "--svg", "/dev/null", "test-data/models/mlp_block.mlir"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = run(&["report", "--no-timing", "test-data/models/mlp_block.mlir"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn the_chart_never_overwrites_the_input() {
    let (code, _, stderr) = run(&[
        "report",
        "--compare",
        "--svg",
        "test-data/models/mlp_block.mlir",
        "test-data/models/mlp_block.mlir",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("refusing to overwrite"), "{stderr}");
}

#[test]
fn const_eval_time_is_reported_at_load_and_left_out_of_every_configuration() {
    // The weight's transpose runs at load: the rows hold the matmul and the relu only.
    let (code, stdout, stderr) =
        run(&["report", "--compare", "--no-timing", "test-data/import/const_eval.mlir"]);
    assert_eq!(stderr, "");
    assert_eq!(code, 0, "{stdout}");
    expect![[r#"
        const_eval: 3 ops (imported from TTIR), target n150, usable L1 1325652 B per core
        lower bound: 12.5 µs
        estimated device time per inference; const-eval at load (once): 19.9 µs

        configuration      time µs  x bound  ops in L1  reshards  spills  peak L1 B/core  of budget  new violations  pre-existing
        as-written            19.0    1.53x        0/3         0       0           18432       1.4%               0             0
        df-sharding           21.6    1.73x        2/3         0       1           67584       5.1%               0             0
        df-sharding-merge     19.0    1.53x        0/3         0       0           18432       1.4%               0             0
        greedy                21.6    1.73x        2/3         0       1           67584       5.1%               0             0
    "#]].assert_eq(&stdout);
}

/// The explorer page of a model: the JSON the page draws, parsed back out of it.
fn explorer(model: &str) -> (String, serde_json::Value) {
    let html = TempPath::new(&format!("{model}.html"));
    let input = format!("test-data/models/{model}.mlir");
    let (code, _, stderr) = run(&["report", "--html", html.path(), &input]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(&html.0).expect("the page was written");
    let start = page.find(r#"<script type="application/json" id="data">"#).expect("a data block");
    let json = &page[start..].split_once('>').expect("the tag ends").1;
    let json = json.split_once("</script>").expect("the data block ends").0;
    (page.clone(), serde_json::from_str(json).expect("the data is JSON"))
}

/// Each op in program order: its layer and row in the computed layout, then where its result
/// lives under each configuration (`l1s`, `l1i`, `dram`) and its reshard and spill marks.
#[test]
fn the_explorer_lays_out_the_mlp_block_and_colours_every_op_by_configuration() {
    let (_, data) = explorer("mlp_block");
    let nodes = data["nodes"].as_array().expect("nodes");
    let configs = data["configs"].as_array().expect("configs");
    let names: Vec<&str> = configs.iter().map(|c| c["name"].as_str().unwrap_or("?")).collect();
    let mut out = format!("{}\n", names.join(" | "));
    for (i, n) in nodes.iter().enumerate() {
        let cells: Vec<String> = configs
            .iter()
            .map(|c| {
                let o = &c["per_op"][i];
                let rs = if o["rs"].as_array().is_some_and(|r| !r.is_empty()) { " rs" } else { "" };
                let sp = if o["sp"].is_null() { "" } else { " sp" };
                format!("{}{rs}{sp}", o["p"].as_str().unwrap_or("?"))
            })
            .collect();
        out.push_str(&format!(
            "{} {} at ({}, {}): {}\n",
            n["k"].as_str().unwrap_or("?"),
            n["n"].as_str().unwrap_or("?"),
            n["x"],
            n["y"],
            cells.join(" | ")
        ));
    }
    out.push_str(&format!("edges: {}\n", data["edges"]));
    expect![[r#"
        as-written | df-sharding | df-sharding-merge | greedy
        ttnn.rms_norm norm at (0, 0): dram | dram | dram | dram
        ttnn.matmul gate_proj at (1, 0): dram | l1s | dram | l1s rs
        ttnn.silu gate_act at (2, 0): dram | l1s | dram | l1s
        ttnn.matmul up_proj at (1, 1): dram | l1s sp | dram | l1s rs
        ttnn.multiply gated at (3, 0): dram | l1s | dram | l1s
        ttnn.matmul down_proj at (4, 0): dram | l1s sp | dram | l1s
        ttnn.add residual at (5, 0): dram | l1s sp | dram | l1s sp
        edges: [[0,1],[0,3],[1,2],[2,4],[3,4],[4,5],[5,6]]
    "#]]
    .assert_eq(&out);
}

#[test]
fn the_explorer_page_is_self_contained_and_deterministic() {
    let (first, data) = explorer("mlp_block");
    let (second, _) = explorer("mlp_block");
    assert!(first == second, "two runs wrote different pages");
    // Nothing to fetch: no external script, style, font or image. The SVG namespace is a
    // name, not a request.
    let without_ns = first.replace("http://www.w3.org/2000/svg", "");
    for needle in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(!without_ns.contains(needle), "the page refers to `{needle}`");
    }
    assert_eq!(
        data["nodes"].as_array().map(Vec::len),
        data["configs"][0]["per_op"].as_array().map(Vec::len)
    );
}

#[test]
fn the_explorer_never_overwrites_the_input_or_the_chart() {
    let (code, _, stderr) = run(&[
        "report",
        "--html",
        "test-data/models/mlp_block.mlir",
        "test-data/models/mlp_block.mlir",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("refusing to overwrite"), "{stderr}");
    let out = TempPath::new("both.out");
    let (code, _, stderr) = run(&[
        "report",
        "--compare",
        "--svg",
        out.path(),
        "--html",
        out.path(),
        "test-data/models/mlp_block.mlir",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("name the same file"), "{stderr}");
    assert!(!out.0.exists(), "nothing was written");
}

#[test]
fn a_kv_cache_update_without_a_result_still_costs_its_tile_writes() {
    // `update_cache` is imported as tt-mlir's canonicalizer writes it, a `paged_update_cache`
    // (its input permuted to `[1, 32, 8, 64]`, the position repeated per user), which writes
    // into its cache operand and returns nothing; the comparison costs it with the cache as its
    // output: 512 tiles read and written back and the input with each user's 8 heads padded to
    // a tile, 12.0 µs (see the cost crate), not nothing.
    let input = TempPath::new("update_cache.mlir");
    std::fs::write(
        &input.0,
        r#"module {
  func.func @main(%cache: tensor<32x8x128x64xbf16>, %row: tensor<1x8x32x64xbf16>, %pos: tensor<1xi64>) {
    "ttir.update_cache"(%cache, %row, %pos) <{batch_offset = 0 : i32}> : (tensor<32x8x128x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1xi64>) -> () loc("update")
    return
  }
}
"#,
    )
    .expect("temp file is writable");
    let (code, stdout, stderr) = run(&["report", "--compare", "--no-timing", input.path()]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    let as_written = stdout.lines().find(|l| l.starts_with("as-written")).unwrap_or_default();
    // The per-op report of the imported TTNN gives it the same time.
    let ttnn = TempPath::new("update_cache.ttnn.mlir");
    let (code, _, stderr) = run(&["import", input.path(), "-o", ttnn.path()]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = run(&["report", "--format", "json", ttnn.path()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let update = stdout.lines().find(|l| l.contains(r#""op":"update""#)).unwrap_or_default();
    assert!(update.contains(r#""kind":"ttnn.paged_update_cache""#), "{update}");
    assert!(update.contains(r#""time_ns":11971"#), "{update}");
    expect!["as-written            19.0    2.96x        0/3         0       0            8192       0.6%               0             0"].assert_eq(as_written);
}

#[test]
fn an_op_with_several_results_costs_the_same_under_every_policy_as_written() {
    // No policy places an op with several results: it keeps its written layouts, and runs
    // under every configuration as it does as written (it was left out of the planned
    // configurations' cost, so every policy looked faster than the IR as written).
    let input = TempPath::new("qkv_heads.mlir");
    let dram = |shape: &str, memref: &str, map: &str| {
        format!(
            "tensor<{shape}xbf16, #ttnn.ttnn_layout<{map}, <1x1>, memref<{memref}, #ttnn.buffer_type<dram>>, <interleaved>>>"
        )
    };
    let map4 = |a: u32, b: u32| format!("(d0, d1, d2, d3) -> (d0 * {a} + d1 * {b} + d2, d3)");
    let x = dram("1x1x32x3072", "1x96x!ttcore.tile<32x32, bf16>", &map4(32, 32));
    let q = dram("1x32x32x64", "32x2x!ttcore.tile<32x32, bf16>", &map4(1024, 32));
    let kv = dram("1x32x8x64", "32x2x!ttcore.tile<32x32, bf16>", &map4(1024, 32));
    std::fs::write(
        &input.0,
        format!(
            "module {{\n  func.func @main(%x: {x}) -> ({q}, {kv}, {kv}) {{\n    %q, %k, %v = \"ttnn.nlp_create_qkv_heads_decode\"(%x) <{{num_heads = 32 : ui32, num_kv_heads = 8 : ui32}}> : ({x}) -> ({q}, {kv}, {kv}) loc(\"heads\")\n    return %q, %k, %v : {q}, {kv}, {kv}\n  }}\n}}\n"
        ),
    )
    .expect("temp file is writable");
    let (code, stdout, stderr) = run(&["report", "--compare", "--no-timing", input.path()]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    let time_of = |row: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(row))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_default()
            .to_owned()
    };
    let as_written = time_of("as-written");
    assert_ne!(as_written, "0.0", "{stdout}");
    for policy in ["df-sharding ", "df-sharding-merge", "greedy"] {
        assert_eq!(time_of(policy), as_written, "{policy}: {stdout}");
    }
}

#[test]
fn a_conv_reading_its_activation_from_host_is_left_as_written() {
    // A conv's weight may come from host, its activation may not (the as-written conv is a
    // pre-existing violation). No policy may reshard that host activation into L1 with a
    // `to_memory_config`, which reads device tensors only: the chain fails and the conv stays.
    let input = TempPath::new("host_conv.mlir");
    std::fs::write(
        &input.0,
        r#"#dram = #ttnn.buffer_type<dram>
#system_memory = #ttnn.buffer_type<system_memory>
#in = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 1024 + d1 * 1024 + d2, d3), <1x1>, memref<1024x64xbf16, #system_memory>>
#w = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 192 + d1 * 3 + d2, d3), <1x1>, memref<12288x3xbf16, #system_memory>>
#out = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 900 + d1 * 900 + d2, d3), <1x1>, memref<29x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @forward(%arg0: tensor<1x1x1024x64xbf16, #in>, %arg1: tensor<64x64x3x3xbf16, #w>) -> tensor<1x1x900x64xbf16, #out> {
    %0 = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device
    %1 = "ttnn.conv2d"(%arg0, %arg1, %0) <{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 64 : i32, input_height = 32 : i32, input_width = 32 : i32, kernel_size = array<i32: 3, 3>, out_channels = 64 : i32, padding = array<i32: 0, 0, 0, 0>, stride = array<i32: 1, 1>}> : (tensor<1x1x1024x64xbf16, #in>, tensor<64x64x3x3xbf16, #w>, !ttnn.device) -> tensor<1x1x900x64xbf16, #out> loc("conv")
    return %1 : tensor<1x1x900x64xbf16, #out>
  }
}
"#,
    )
    .expect("temp file is writable");
    let (code, stdout, stderr) = run(&["report", "--compare", "--no-timing", input.path()]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    assert!(!stdout.contains("new violations under"), "{stdout}");
    let rows: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("as-written") || l.starts_with("df-")).collect();
    expect![[r#"
        as-written             8.3    1.06x        0/2         0       0               0       0.0%               0             1
        df-sharding            8.3    1.06x        0/2         0       0               0       0.0%               0             1
        df-sharding-merge      8.3    1.06x        0/2         0       0               0       0.0%               0             1"#]].assert_eq(&rows.join("\n"));
}
