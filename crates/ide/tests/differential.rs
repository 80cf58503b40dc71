//! Differential test: after every random edit, the incrementally maintained analysis gives
//! exactly what a fresh analysis of the same inputs gives.
//!
//! Edits: overrides set and cleared, attribute edits, result type edits, op insertions and
//! deletions, whitespace, comment lines, loc renames, op-kind changes, a value renamed at
//! all its uses, an op broken and fixed again, blocks of ops pasted under fresh names, an
//! attribute typed or deleted one character per change. Compared after each edit: the final
//! IR of every policy, the plan report, the diagnostics, the findings and the cost; between
//! keystrokes and while an op is broken, the diagnostics.
//! `DIFF_EDITS=N` runs N edits (default 200, to keep `cargo test` quick); `DIFF_SEED` picks
//! the seed.

#![expect(
    clippy::disallowed_methods,
    reason = "the test reads its edit count and seed from the environment"
)]

use ide::{AnalysisHost, Change, Options, Policy, TextEdit};
use syntax::TextRange;

const FILE: &str = "g.mlir";

/// splitmix64: a tiny deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const T: &str = "tensor<256x256xbf16, #l>";

/// A graph of `n` ops over 256x256 tensors: chains of unary ops, matmuls, binary joins and
/// forks, each op named `opN`.
fn graph(rng: &mut Rng, n: usize) -> String {
    let mut s = String::from(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n",
    );
    s.push_str(&format!("func.func @main(%a: {T}, %b: {T}) -> {T} {{\n"));
    let mut values = vec!["%a".to_owned(), "%b".to_owned()];
    for i in 0..n {
        let pick = |rng: &mut Rng, values: &[String]| {
            // Prefer recent values so chains form, sometimes reach back (forks).
            let back = if rng.below(4) == 0 {
                rng.below(values.len())
            } else {
                rng.below(2.min(values.len()))
            };
            values[values.len() - 1 - back].clone()
        };
        let x = pick(rng, &values);
        let line = match rng.below(7) {
            0 | 1 => {
                let op = ["relu", "gelu", "neg", "exp", "sigmoid"][rng.below(5)];
                format!("  %v{i} = \"ttnn.{op}\"({x}) : ({T}) -> {T} loc(\"op{i}\")\n")
            }
            2 | 3 => {
                let y = pick(rng, &values);
                let op = ["add", "multiply"][rng.below(2)];
                format!("  %v{i} = \"ttnn.{op}\"({x}, {y}) : ({T}, {T}) -> {T} loc(\"op{i}\")\n")
            }
            4 => format!(
                "  %v{i} = \"ttnn.matmul\"({x}, %b) <{{transpose_a = false, transpose_b = false}}> : ({T}, {T}) -> {T} loc(\"op{i}\")\n"
            ),
            5 => format!(
                "  %v{i} = \"ttnn.softmax\"({x}) <{{dimension = -1 : si32}}> : ({T}) -> {T} loc(\"op{i}\")\n"
            ),
            _ => format!("  %v{i} = \"ttnn.relu\"({x}) : ({T}) -> {T} loc(\"op{i}\")\n"),
        };
        s.push_str(&line);
        values.push(format!("%v{i}"));
    }
    s.push_str(&format!("  return {} : {T}\n}}\n", values.last().cloned().unwrap_or_default()));
    s
}

const LAYOUTS: &[&str] = &[
    "l1:block_sharded",
    "l1:height_sharded",
    "l1:width_sharded",
    "dram:interleaved",
    "l1:interleaved",
    "8x8:l1:block_sharded:tile",
    "4x4:l1:block_sharded:tile",
    "32x1:l1:height_sharded:tile",
];

/// Everything compared between the two analyses.
fn snapshot(host: &AnalysisHost) -> String {
    let file = host.file(FILE).expect("file is open");
    let a = host.analysis();
    let mut out = String::new();
    for policy in Policy::ALL {
        out.push_str(&a.final_ir_for(file, policy).expect("not cancelled").text);
    }
    out.push_str(&format!("{:?}", a.plan_report(file).expect("not cancelled")));
    out.push_str(&format!("{:?}", a.diagnostics(file).expect("not cancelled")));
    // The findings carry ranges from the source maps (spills, reshards at their operands):
    // an op left with a stale position shows here.
    out.push_str(&format!("{:?}", a.findings(file).expect("not cancelled")));
    out.push_str(&format!("{:?}", a.cost(file, Policy::DfShardingMerge).expect("not cancelled")));
    out
}

/// tt-mlir's defaults with plan chunks of a few ops, so that the graph spans several chunks
/// and every edit exercises what one chunk hands to the next.
fn options() -> Options {
    Options { plan_chunk_ops: 5, ..Options::tt_mlir_defaults() }
}

fn fresh(text: &str, overrides: &str) -> AnalysisHost {
    opened(AnalysisHost::new(target::Target::n150(), options()), text, overrides)
}

fn opened(mut host: AnalysisHost, text: &str, overrides: &str) -> AnalysisHost {
    host.apply_change(Change::new().set_file(FILE, text).set_overrides("o", overrides));
    host
}

/// One DRAM value read by two convolutions that both want it sharded the same way: with the
/// two in different chunks, a conversion shared between uses came out differently.
const ONE_VALUE_TWO_CONVS: &str = r#"#dram = #ttnn.buffer_type<dram>
#system_memory = #ttnn.buffer_type<system_memory>
#ttnn_layout25 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 + d1 + d2, d3), <1x1>, memref<1x256xbf16, #system_memory>>
#ttnn_layout35 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 64 + d1 * 64 + d2, d3), <1x1>, memref<2x16x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout38 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 512 + d1 + d2, d3), <1x1>, memref<131072x1xbf16, #system_memory>>
#ttnn_layout39 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 64 + d1 * 64 + d2, d3), <1x1>, memref<2x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout40 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 1536 + d1 * 3 + d2, d3), <1x1>, memref<393216x3xbf16, #system_memory>>
module {
  func.func @main(%x: tensor<1x1x49x512xbf16, #ttnn_layout35>, %w1: tensor<256x512x1x1xbf16, #ttnn_layout38>, %b1: tensor<1x1x1x256xbf16, #ttnn_layout25>, %w3: tensor<256x512x3x3xbf16, #ttnn_layout40>, %b3: tensor<1x1x1x256xbf16, #ttnn_layout25>) -> tensor<1x1x49x512xbf16, #ttnn_layout35> {
    %0 = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device
    %1 = "ttnn.relu"(%x) : (tensor<1x1x49x512xbf16, #ttnn_layout35>) -> tensor<1x1x49x512xbf16, #ttnn_layout35>
    %819 = "ttnn.conv2d"(%1, %w1, %b1, %0) <{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 512 : i32, input_height = 7 : i32, input_width = 7 : i32, kernel_size = array<i32: 1, 1>, out_channels = 256 : i32, padding = array<i32: 0, 0, 0, 0>, stride = array<i32: 1, 1>}> : (tensor<1x1x49x512xbf16, #ttnn_layout35>, tensor<256x512x1x1xbf16, #ttnn_layout38>, tensor<1x1x1x256xbf16, #ttnn_layout25>, !ttnn.device) -> tensor<1x1x49x256xbf16, #ttnn_layout39>
    %820 = "ttnn.conv2d"(%1, %w3, %b3, %0) <{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 512 : i32, input_height = 7 : i32, input_width = 7 : i32, kernel_size = array<i32: 3, 3>, out_channels = 256 : i32, padding = array<i32: 1, 1, 1, 1>, stride = array<i32: 1, 1>}> : (tensor<1x1x49x512xbf16, #ttnn_layout35>, tensor<256x512x3x3xbf16, #ttnn_layout40>, tensor<1x1x1x256xbf16, #ttnn_layout25>, !ttnn.device) -> tensor<1x1x49x256xbf16, #ttnn_layout39>
    %821 = "ttnn.concat"(%819, %820) <{dim = 3 : si32}> : (tensor<1x1x49x256xbf16, #ttnn_layout39>, tensor<1x1x49x256xbf16, #ttnn_layout39>) -> tensor<1x1x49x512xbf16, #ttnn_layout35>
    %822 = "ttnn.relu"(%821) : (tensor<1x1x49x512xbf16, #ttnn_layout35>) -> tensor<1x1x49x512xbf16, #ttnn_layout35>
    return %822 : tensor<1x1x49x512xbf16, #ttnn_layout35>
  }
}
"#;

/// The plan's chunks are where memos are cut, not a parameter of the result: every policy's
/// final IR and cost are the same whatever their size.
#[test]
fn results_do_not_depend_on_the_size_of_the_plan_chunks() {
    let texts = std::iter::once(ONE_VALUE_TWO_CONVS.to_owned())
        .chain((1..=6).map(|seed| graph(&mut Rng(seed), 80)));
    for (n, text) in texts.enumerate() {
        let at = |ops: u32| {
            let options = Options { plan_chunk_ops: ops, ..Options::tt_mlir_defaults() };
            let host = opened(AnalysisHost::new(target::Target::n150(), options), &text, "");
            let file = host.file(FILE).expect("file is open");
            let a = host.analysis();
            Policy::ALL
                .iter()
                .map(|&p| {
                    let ir = a.final_ir_for(file, p).expect("not cancelled").text.clone();
                    (p, ir, a.cost(file, p).expect("not cancelled"))
                })
                .collect::<Vec<_>>()
        };
        let whole = at(10_000);
        for ops in [1, 3, 13] {
            for (got, want) in at(ops).iter().zip(&whole) {
                assert_eq!(got, want, "graph {n}: chunks of {ops} ops against one chunk");
            }
        }
    }
}

#[test]
fn incremental_results_equal_from_scratch_results_after_random_edits() {
    random_edits(AnalysisHost::new(target::Target::n150(), options()));
}

/// A tuning host sets overrides at another durability and creates every op's override slot
/// up front; edits of the file (ops inserted with fresh names) must still be seen.
#[test]
fn a_tuning_host_equals_from_scratch_results_after_random_edits() {
    random_edits(AnalysisHost::for_tuning(target::Target::n150(), options()));
}

fn random_edits(host: AnalysisHost) {
    let edits: usize = std::env::var("DIFF_EDITS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let seed: u64 = std::env::var("DIFF_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let mut rng = Rng(seed);
    let base = graph(&mut rng, 24);
    let mut host = opened(host, &base, "");
    let mut overrides = String::new();
    let mut inserted = 0usize;
    for step in 0..edits {
        let text = host.text(FILE).expect("file is open").to_string();
        // Where op `i`'s location is (named `op7`, or `op7_` after a rename).
        let find_op = |i: usize| {
            text.find(&format!("loc(\"op{i}\"")).or_else(|| text.find(&format!("loc(\"op{i}_\"")))
        };
        let ops: Vec<usize> = (0..).take_while(|&i| find_op(i).is_some()).collect();
        // The line of op `i`: its start, and its end after the line break.
        let line_of = |i: usize| -> (usize, usize) {
            let at = find_op(i).expect("op exists");
            let start = text[..at].rfind('\n').map_or(0, |p| p + 1);
            let end = text[at..].find('\n').map_or(text.len(), |e| at + e + 1);
            (start, end)
        };
        let kind = rng.below(14);
        let change = match kind {
            // Set one op's override.
            0 | 1 => {
                let op = ops[rng.below(ops.len())];
                overrides = ide::overrides_with(
                    &overrides,
                    &format!("op{op}"),
                    ide::OverrideOption::OutputLayout,
                    LAYOUTS[rng.below(LAYOUTS.len())],
                );
                Change::new().set_overrides("o", overrides.clone())
            }
            // Clear one op's overrides.
            2 => {
                let op = ops[rng.below(ops.len())];
                overrides = ide::overrides_without(&overrides, &format!("op{op}"), None);
                Change::new().set_overrides("o", overrides.clone())
            }
            // Toggle a discardable attribute on an op.
            3 => {
                let op = ops[rng.below(ops.len())];
                let at = find_op(op).expect("op exists") - 1;
                let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
                let line = &text[line_start..at];
                let edit = if let Some(p) = line.find(" {ttnn.hoist_generic_via_d2m}") {
                    let s = (line_start + p) as u32;
                    TextEdit { range: TextRange::new(s, s + 29), text: String::new() }
                } else if let Some(p) = line.find(") : (") {
                    let s = (line_start + p + 1) as u32;
                    TextEdit {
                        range: TextRange::new(s, s),
                        text: " {ttnn.hoist_generic_via_d2m}".to_owned(),
                    }
                } else {
                    TextEdit { range: TextRange::empty(0), text: String::new() }
                };
                Change::new().edit_file(FILE, vec![edit])
            }
            // Edit one op's result type (which may make the IR ill-typed: both analyses must
            // still agree).
            4 => {
                let op = ops[rng.below(ops.len())];
                let at = find_op(op).expect("op exists") - 1;
                let (from, to) = if rng.below(2) == 0 {
                    ("bf16, #l> loc", "f32, #l> loc")
                } else {
                    ("f32, #l> loc", "bf16, #l> loc")
                };
                let window_start = at.saturating_sub(20);
                match text[window_start..at + 6].find(from) {
                    Some(p) => {
                        let s = (window_start + p) as u32;
                        Change::new().edit_file(
                            FILE,
                            vec![TextEdit {
                                range: TextRange::new(s, s + from.len() as u32),
                                text: to.to_owned(),
                            }],
                        )
                    }
                    None => Change::new(),
                }
            }
            // Insert an op with a fresh name, or delete an inserted one.
            5 => {
                let at = line_of(ops[rng.below(ops.len())]).0 as u32;
                inserted += 1;
                let new = format!(
                    "  %ins{inserted} = \"ttnn.relu\"(%a) : ({T}) -> {T} loc(\"ins{inserted}\")\n"
                );
                Change::new()
                    .edit_file(FILE, vec![TextEdit { range: TextRange::empty(at), text: new }])
            }
            // A comment line before an op, or one removed.
            7 => match text.find("  // note\n") {
                Some(at) => Change::new().edit_file(
                    FILE,
                    vec![TextEdit {
                        range: TextRange::new(at as u32, (at + 10) as u32),
                        text: String::new(),
                    }],
                ),
                None => {
                    let at = line_of(ops[rng.below(ops.len())]).0 as u32;
                    Change::new().edit_file(
                        FILE,
                        vec![TextEdit { range: TextRange::empty(at), text: "  // note\n".into() }],
                    )
                }
            },
            // Rename an op's location (what overrides name it by), or change its kind.
            8 | 9 => {
                let op = ops[rng.below(ops.len())];
                let marker = format!("loc(\"op{op}");
                let at = find_op(op).expect("op exists");
                let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
                if kind == 8 {
                    // `op7` becomes `op7_` and back.
                    let s = (at + marker.len()) as u32;
                    let edit = if text[s as usize..].starts_with('_') {
                        TextEdit { range: TextRange::new(s, s + 1), text: String::new() }
                    } else {
                        TextEdit { range: TextRange::empty(s), text: "_".into() }
                    };
                    Change::new().edit_file(FILE, vec![edit])
                } else {
                    let line = &text[line_start..at];
                    let swap = [("relu", "gelu"), ("gelu", "relu"), ("exp", "neg"), ("neg", "exp")];
                    match swap
                        .iter()
                        .find_map(|(a, b)| Some((line.find(&format!("ttnn.{a}\""))?, a, b)))
                    {
                        Some((p, a, b)) => {
                            let s = (line_start + p + 5) as u32;
                            Change::new().edit_file(
                                FILE,
                                vec![TextEdit {
                                    range: TextRange::new(s, s + a.len() as u32),
                                    text: (*b).to_owned(),
                                }],
                            )
                        }
                        None => Change::new(),
                    }
                }
            }
            // Rename a value at its definition and every use, in one change.
            10 => {
                let op = ops[rng.below(ops.len())];
                let (start, _) = line_of(op);
                let name = text[start..].trim_start().split(' ').next().unwrap_or("").to_owned();
                let renamed = format!("%r{step}v{op}");
                let mut edits = Vec::new();
                let mut from = 0;
                while let Some(p) = text[from..].find(&name) {
                    let at = from + p;
                    let end = at + name.len();
                    let whole = !text[end..].starts_with(|c: char| c.is_ascii_alphanumeric());
                    if whole {
                        edits.push(TextEdit {
                            range: TextRange::new(at as u32, end as u32),
                            text: renamed.clone(),
                        });
                    }
                    from = end;
                }
                // The client sends them last first, so each range reads the text as it is.
                edits.reverse();
                if step % 2 == 0 {
                    Change::new().edit_file(FILE, edits)
                } else {
                    // By line and column, as the language server passes an editor's edits.
                    let index = syntax::LineIndex::new(&text);
                    let at = |o: u32| index.line_col(&text, o);
                    let edits = edits
                        .into_iter()
                        .map(|e| ide::PositionEdit {
                            start: at(e.range.start),
                            end: at(e.range.end),
                            text: e.text,
                        })
                        .collect();
                    Change::new().edit_file_at(FILE, edits)
                }
            }
            // Break an op (its closing parenthesis deleted), then fix it in a second change.
            11 => {
                let (at, _) = line_of(ops[rng.below(ops.len())]);
                // An op without operands (one pasted from the last lines) has nothing to break.
                let Some(close) = text[at..].find(") :").map(|p| at + p) else {
                    continue;
                };
                host.apply_change(Change::new().edit_file(
                    FILE,
                    vec![TextEdit {
                        range: TextRange::new(close as u32, close as u32 + 1),
                        text: String::new(),
                    }],
                ));
                // The broken text's diagnostics (syntax errors, the op's users no longer
                // checked) as lowering it afresh gives them.
                let broken = host.text(FILE).expect("file is open").to_string();
                let file = host.file(FILE).expect("open");
                let ours = host.analysis().diagnostics(file).expect("not cancelled");
                let theirs = {
                    let h = fresh(&broken, &overrides);
                    let f = h.file(FILE).expect("open");
                    h.analysis().diagnostics(f).expect("not cancelled")
                };
                assert!(ours == theirs, "step {step}: the broken op's diagnostics differ");
                Change::new().edit_file(
                    FILE,
                    vec![TextEdit { range: TextRange::empty(close as u32), text: ")".into() }],
                )
            }
            // Type an attribute into an op one character per change, as an editor sends
            // keystrokes, or delete it one character at a time; every state between is
            // compared too (most are syntax errors).
            13 => {
                let (start, end) = line_of(ops[rng.below(ops.len())]);
                let line = &text[start..end];
                const TYPED: &str = " {k = 12 : i64}";
                let states: Vec<TextEdit> = if let Some(p) = line.find(TYPED) {
                    let at = (start + p) as u32;
                    (0..TYPED.len() as u32)
                        .rev()
                        .map(|k| TextEdit {
                            range: TextRange::new(at + k, at + k + 1),
                            text: String::new(),
                        })
                        .collect()
                } else if let Some(p) = line.find(") : (") {
                    let at = (start + p + 1) as u32;
                    TYPED
                        .char_indices()
                        .map(|(k, c)| TextEdit {
                            range: TextRange::empty(at + k as u32),
                            text: c.to_string(),
                        })
                        .collect()
                } else {
                    continue;
                };
                let Some((last, keystrokes)) = states.split_last() else { continue };
                for (k, key) in keystrokes.iter().enumerate() {
                    host.apply_change(Change::new().edit_file(FILE, vec![key.clone()]));
                    let typed = host.text(FILE).expect("file is open").to_string();
                    let file = host.file(FILE).expect("open");
                    let ours = host.analysis().diagnostics(file).expect("not cancelled");
                    let theirs = {
                        let h = fresh(&typed, &overrides);
                        let f = h.file(FILE).expect("open");
                        h.analysis().diagnostics(f).expect("not cancelled")
                    };
                    assert!(ours == theirs, "step {step}, keystroke {k}: the diagnostics differ");
                    if rng.below(4) == 0 {
                        host.free_unused();
                    }
                }
                Change::new().edit_file(FILE, vec![last.clone()])
            }
            // Paste a block of up to 12 op lines again, under fresh names.
            12 => {
                let (at, _) = line_of(ops[rng.below(ops.len())]);
                let block: Vec<&str> = text[at..]
                    .lines()
                    .take(1 + rng.below(12))
                    .take_while(|l| l.starts_with("  %") && l.contains("loc(\"op"))
                    .collect();
                let pasted: String = block
                    .iter()
                    .map(|l| {
                        inserted += 1;
                        let name = l.trim_start().split(' ').next().unwrap_or("");
                        // A fresh name and location, so overrides keep naming one op.
                        let line = l.replacen(name, &format!("%ins{inserted}"), 1).replacen(
                            "loc(\"op",
                            &format!("loc(\"pasted{inserted}_"),
                            1,
                        );
                        format!("{line}\n")
                    })
                    .collect();
                Change::new().edit_file(
                    FILE,
                    vec![TextEdit { range: TextRange::empty(at as u32), text: pasted }],
                )
            }
            _ => match text.find("  %ins") {
                Some(at) if rng.below(2) == 0 => {
                    let end = text[at..].find('\n').map_or(text.len(), |e| at + e + 1);
                    Change::new().edit_file(
                        FILE,
                        vec![TextEdit {
                            range: TextRange::new(at as u32, end as u32),
                            text: String::new(),
                        }],
                    )
                }
                _ => {
                    let at = text.find("\n  %").map_or(0, |p| p + 1) as u32;
                    Change::new().edit_file(
                        FILE,
                        vec![TextEdit { range: TextRange::empty(at), text: "  \n".to_owned() }],
                    )
                }
            },
        };
        host.apply_change(change);
        let now = host.text(FILE).expect("file is open").to_string();
        let file = host.file(FILE).expect("file is open");
        // The parse the host patched in place is the parse of the text.
        assert!(
            *host.analysis().parse(file).expect("not cancelled") == syntax::parse(&now),
            "step {step} (edit kind {kind}): the patched parse differs from parsing anew"
        );
        // So is the line index.
        assert!(
            *host.analysis().line_index(file).expect("not cancelled")
                == syntax::LineIndex::new(&now),
            "step {step} (edit kind {kind}): the patched line index differs from indexing anew"
        );
        let incremental = snapshot(&host);
        let scratch = snapshot(&fresh(&now, &overrides));
        assert!(
            incremental == scratch,
            "step {step} (edit kind {kind}): incremental and from-scratch results differ\n--- text ---\n{now}\n--- overrides ---\n{overrides}"
        );
        assert_every_chunk_walked_gives_the_plan(&host, &format!("step {step} (edit kind {kind})"));
        // An editor's quiet moment, at some steps and not others: the parse's deferred
        // positions are moved, so edits land on parses in both states.
        if rng.below(2) == 0 {
            host.free_unused();
        }
    }
}

/// The plan and its cost as the chunks' memos give them (the plan without overrides, walked
/// again where `plan::override_reach` says the overrides reach) equal every chunk walked
/// with the overrides, one after another.
fn assert_every_chunk_walked_gives_the_plan(host: &AnalysisHost, when: &str) {
    let file = host.file(FILE).expect("file is open");
    let analysis = host.analysis();
    let db = analysis.db();
    for &func in ir::file_funcs(db, file).iter() {
        for policy in Policy::ALL {
            let walked = plan::plan_walking_every_chunk(db, func, policy);
            let mut summed = 0u64;
            for (k, chunk) in walked.iter().enumerate() {
                let k = k as u32;
                assert!(
                    *plan::plan_slice(db, func, policy, k) == *chunk.slice
                        && *plan::plan_carry(db, func, policy, k) == *chunk.carry,
                    "{when}: chunk {k} under {policy:?} differs from walking every chunk"
                );
                summed += plan::chunk_cost(db, func, policy, k, plan::Reads::Overrides).total_ns;
            }
            let cost = plan::plan_cost(db, func, policy);
            assert_eq!(
                cost.total_ns, summed,
                "{when}: the cost under {policy:?} differs from the sum of its chunks'"
            );
            assert_eq!(
                plan::plan_totals(db, func, policy),
                cost.totals(),
                "{when}: the totals under {policy:?} differ from the cost's"
            );
        }
    }
}

/// Overrides set and cleared one at a time on a graph of many chunks, on a tuning host as
/// a tuning loop sets them: after each, the plan is every chunk walked with the overrides.
#[test]
fn overrides_reach_every_chunk_whose_walk_they_change() {
    let mut rng = Rng(11);
    let text = graph(&mut rng, 240);
    let options = Options { plan_chunk_ops: 12, ..Options::tt_mlir_defaults() };
    let mut host = opened(AnalysisHost::for_tuning(target::Target::n150(), options), &text, "");
    let mut overrides = String::new();
    for step in 0..60 {
        let op = format!("op{}", rng.below(240));
        overrides = if rng.below(3) == 0 {
            ide::overrides_without(&overrides, &op, None)
        } else {
            let layout = LAYOUTS[rng.below(LAYOUTS.len())];
            ide::overrides_with(&overrides, &op, ide::OverrideOption::OutputLayout, layout)
        };
        host.apply_change(Change::new().set_overrides("o", overrides.clone()));
        assert_every_chunk_walked_gives_the_plan(&host, &format!("step {step}: {overrides}"));
    }
}

/// A change of more edits than the parse is patched for (every op line indented one more
/// space), made last first as an editor sends a rename, and first first with each edit's
/// offsets in the text the ones before it left: the text, parse, line index and every result
/// are those of the same text opened anew.
#[test]
fn a_change_of_many_edits_gives_what_the_edited_text_gives_from_scratch() {
    let text = graph(&mut Rng(7), 150);
    let lines: Vec<u32> = text.match_indices("\n  %").map(|(o, _)| o as u32 + 1).collect();
    assert!(lines.len() > 100, "enough op lines for a change of many edits");
    let indent = |at: u32| TextEdit { range: TextRange::empty(at), text: " ".to_owned() };
    let last_first: Vec<TextEdit> = lines.iter().rev().map(|&at| indent(at)).collect();
    let first_first: Vec<TextEdit> =
        lines.iter().enumerate().map(|(k, &at)| indent(at + k as u32)).collect();
    for edits in [last_first, first_first] {
        let mut host = fresh(&text, "");
        host.apply_change(Change::new().edit_file(FILE, edits));
        let now = host.text(FILE).expect("file is open").to_string();
        assert_eq!(now, text.replace("\n  %", "\n   %"));
        let file = host.file(FILE).expect("file is open");
        assert!(*host.analysis().parse(file).expect("not cancelled") == syntax::parse(&now));
        assert!(
            *host.analysis().line_index(file).expect("not cancelled")
                == syntax::LineIndex::new(&now)
        );
        assert!(snapshot(&host) == snapshot(&fresh(&now, "")));
    }
}

/// A function with repeated definitions (an error the file keeps while it is typed) has
/// groups that their first op's key does not name: overrides on their ops and around them,
/// set and cleared on a tuning host, give what the same text and overrides give from scratch.
#[test]
fn overrides_around_repeated_definitions_give_what_from_scratch_gives() {
    // Ops 20 to 99 defined twice each: some group starts with one of them.
    let text: String = graph(&mut Rng(5), 120)
        .lines()
        .map(|l| {
            let repeated = (20..100).any(|i| l.contains(&format!("loc(\"op{i}\")")));
            if repeated { format!("{l}\n{l}\n") } else { format!("{l}\n") }
        })
        .collect();
    let mut host = opened(AnalysisHost::for_tuning(target::Target::n150(), options()), &text, "");
    let file = host.file(FILE).expect("file is open");
    let errors = host.analysis().diagnostics(file).expect("not cancelled");
    assert!(!errors.is_empty(), "the repeated definition is reported");
    let mut overrides = String::new();
    for (step, op) in ["op40", "op41", "op19", "op80", "op10", "op40"].into_iter().enumerate() {
        let layout = LAYOUTS[step % LAYOUTS.len()];
        overrides = ide::overrides_with(&overrides, op, ide::OverrideOption::OutputLayout, layout);
        host.apply_change(Change::new().set_overrides("o", overrides.clone()));
        assert_eq!(snapshot(&host), snapshot(&fresh(&text, &overrides)), "after setting {op}");
        assert_the_plan_holds_every_chain_once(&host, &format!("after setting {op}"));
        overrides = ide::overrides_without(&overrides, op, None);
        host.apply_change(Change::new().set_overrides("o", overrides.clone()));
        assert_eq!(snapshot(&host), snapshot(&fresh(&text, &overrides)), "after clearing {op}");
        assert_the_plan_holds_every_chain_once(&host, &format!("after clearing {op}"));
    }
}

/// The gathered plan holds each chain of the function once, at its index, and each op names
/// the chain that holds it at its place: no chain lost or shared between two ops of one key.
fn assert_the_plan_holds_every_chain_once(host: &AnalysisHost, when: &str) {
    let file = host.file(FILE).expect("file is open");
    let analysis = host.analysis();
    let db = analysis.db();
    for &func in ir::file_funcs(db, file).iter() {
        let graph = plan::chains(db, func);
        for policy in Policy::ALL {
            // The greedy policy builds no chains.
            if policy == Policy::Greedy {
                continue;
            }
            let plan = plan::plan_for(db, func, policy);
            assert_eq!(plan.chains.len(), graph.chains.len(), "{when}: chains under {policy:?}");
            for (i, p) in plan.ops.iter().enumerate() {
                let i = i as u32;
                let held = p.chain.and_then(|(c, pos)| {
                    plan.chains.get(c as usize)?.ops.get(pos as usize).map(|&m| (c, m))
                });
                assert_eq!(
                    held,
                    graph.chain_of(i).map(|c| (c, i)),
                    "{when}: op {i}'s chain under {policy:?}"
                );
            }
        }
    }
}
