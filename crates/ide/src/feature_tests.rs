//! Tests of the IDE features at the `ide` boundary, one `check_*` per feature, with
//! fixtures in the mini-language of [`crate::fixture`].

use std::fmt::Write as _;

use expect_test::{Expect, expect};
use syntax::TextRange;

use crate::{
    ActionDocument, CodeActionConfig, NewOverrideTarget,
    fixture::{Fixture, fixture},
};

/// A small graph: a matmul into an L1 block-sharded output, a relu back to DRAM, and a call.
/// Planned with `df-sharding`: under the merging policy the cost model declines a chain this
/// small (its spill costs more than L1 saves), and these tests are about showing a plan.
const GRAPH: &str = r##"
//- /m.mlir policy:df-sharding
#dram = #ttnn.buffer_type<dram>
#l1 = #ttnn.buffer_type<l1>
#il = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#bs = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <2x8>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (7,1)>]>>
func.func @main(%a: tensor<64x256xbf16, #il>, %b: tensor<256x256xbf16, #w>) -> tensor<64x256xbf16, #il> {
  %0 = "ttnn.matmul"(%a, %b) <{transpose_a = false, transpose_b = false}> : (tensor<64x256xbf16, #il>, tensor<256x256xbf16, #w>) -> tensor<64x256xbf16, #bs> loc("mm")
  %1 = "ttnn.relu"(%0) : (tensor<64x256xbf16, #bs>) -> tensor<64x256xbf16, #il> loc("act")
  %2 = func.call @helper(%1) : (tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il>
  return %2 : tensor<64x256xbf16, #il>
}
func.func private @helper(%x: tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> {
  %0 = "ttnn.exp"(%x) : (tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> loc("helper_exp")
  return %0 : tensor<64x256xbf16, #il>
}
"##;

/// `GRAPH` with `<|>` inserted before the `nth` occurrence of `needle`.
fn at(needle: &str, nth: usize) -> String {
    with_cursor(GRAPH, needle, nth)
}

fn with_cursor(text: &str, needle: &str, nth: usize) -> String {
    let (i, _) = text.match_indices(needle).nth(nth).expect("needle occurs in the fixture");
    format!("{}<|>{}", &text[..i], &text[i..])
}

/// `start..end "text"` for a range of `f`'s file at the cursor.
fn show(f: &Fixture, range: TextRange) -> String {
    let (file, _) = f.position();
    let text = f.host.analysis().file_text(file).expect("not cancelled");
    format!("{:?} {:?}", range, range.slice(&text))
}

#[track_caller]
fn check_hover(fixture_text: &str, expect: Expect) {
    let f = fixture(fixture_text);
    let (file, offset) = f.position();
    let hover = f.host.analysis().hover(file, offset).expect("not cancelled");
    let actual =
        hover.map_or_else(String::new, |h| format!("{}\n{}\n", show(&f, h.range), h.markdown));
    expect.assert_eq(&actual);
}

#[test]
fn hover_on_an_op_name_shows_its_layout_l1_and_legal_layouts() {
    check_hover(
        &at("\"ttnn.matmul\"", 0),
        expect![[r#"
            564..577 "\"ttnn.matmul\""
            **`ttnn.matmul`** `%0` in `@main`, loc `"mm"` (line 7)

            result: `tensor<64x256xbf16>`

            layout: L1 block_sharded 2x8, 1x1 tiles per core (bf16)

            L1 per core: 2048 B on 16 core(s)

            estimated time as written: 4.9 µs device time, overhead-bound on 16 core(s)

            lower bound: 4.9 µs (its best placement, every free tensor local in L1)

            planned layout (df-sharding): unchanged, L1 block_sharded 2x8, 1x1 tiles per core (bf16)

            op config: matmul 2D mcast per_core 1x1 in0_block_w 2

            L1 per core: cb 16384 B, tensor 2048 B, output 2048 B; live L1 before it: 0 B

            chain #0: op 1 of 2, completed

            why: L1 chain, op 1 of 2: the config with the highest accumulated core usage (32)

            legal layouts: 1 interleaved, 17 sharded
        "#]],
    );
}

/// Under the merging policy the same chain is declined, and the hover says why in numbers.
#[test]
fn hover_explains_a_chain_the_cost_model_declines() {
    let graph = GRAPH.replace("policy:df-sharding", "policy:df-sharding-merge");
    check_hover(
        &with_cursor(&graph, "%1 = ", 0),
        expect![[r#"
            726..728 "%1"
            **`ttnn.relu`** `%1` in `@main`, loc `"act"` (line 8)

            result: `tensor<64x256xbf16>`

            layout: DRAM interleaved, 2x8 tiles total (bf16)

            L1 per core: none (DRAM il)

            estimated time as written: 3.2 µs device time, overhead-bound on 16 core(s)

            lower bound: 3.1 µs (its best placement, every free tensor local in L1)

            planned layout (df-sharding-merge): unchanged, DRAM interleaved, 2x8 tiles total (bf16)

            L1 per core: cb 8192 B, tensor 0 B, output 0 B; live L1 before it: 0 B

            chain #0: op 2 of 2, declined

            why: its chain was declined: the cost model estimates 11.1 µs in L1 (reshards and spill included) against 8.3 µs out of it

            legal layouts: 2 interleaved, 17 sharded
        "#]],
    );
}

#[test]
fn hover_on_a_result_definition_describes_the_op() {
    check_hover(
        &at("%1 = ", 0),
        expect![[r#"
            726..728 "%1"
            **`ttnn.relu`** `%1` in `@main`, loc `"act"` (line 8)

            result: `tensor<64x256xbf16>`

            layout: DRAM interleaved, 2x8 tiles total (bf16)

            L1 per core: none (DRAM il)

            estimated time as written: 3.2 µs device time, overhead-bound on 16 core(s)

            lower bound: 3.1 µs (its best placement, every free tensor local in L1)

            planned layout (df-sharding): L1 block_sharded 2x8, 1x1 tiles per core (bf16)

            written layout: DRAM interleaved, 2x8 tiles total (bf16)

            L1 per core: cb 0 B, tensor 2048 B, output 2048 B; live L1 before it: 2048 B

            chain #0: op 2 of 2, completed; output: DRAM (chain output spills to DRAM)

            why: L1 chain, op 2 of 2: the config with the highest accumulated core usage (16)

            result: DRAM interleaved, 2x8 tiles total (bf16) (spill to DRAM: chain output spills to DRAM)

            legal layouts: 2 interleaved, 17 sharded
        "#]],
    );
}

#[test]
fn hover_on_a_value_use_shows_its_definition_and_type() {
    check_hover(
        &at("%0)", 0),
        expect![[r#"
        743..745 "%0"
        `%0`: result 0 of `ttnn.matmul` in `@main` (line 7)

        type: `tensor<64x256xbf16>`

        layout: L1 block_sharded 2x8, 1x1 tiles per core (bf16)

        L1 per core: 2048 B on 16 core(s)
    "#]],
    );
}

#[test]
fn hover_on_an_argument_use_shows_the_argument() {
    check_hover(
        &at("%a, %b)", 0),
        expect![[r#"
        578..580 "%a"
        `%a`: argument 0 of `@main` (line 6)

        type: `tensor<64x256xbf16>`

        layout: DRAM interleaved, 2x8 tiles total (bf16)

        L1 per core: none (DRAM il)
    "#]],
    );
}

#[test]
fn hover_on_a_layout_alias_use_decodes_the_layout() {
    check_hover(
        &at("#bs>) ->", 0),
        expect![[r##"
        770..773 "#bs"
        **`#bs`**: attribute alias

        L1 block_sharded 2x8, 1x1 tiles per core (bf16)
        - buffer: l1
        - memory layout: block_sharded
        - grid: 2x8
        - shard shape: 1x1 tiles per core
        - core ranges: (0,0)-(7,1) (16 cores)
        - dtype: bf16, tile pages
        - L1 per core: 2048 B on 16 core(s)
    "##]],
    );
}

#[test]
fn hover_on_an_alias_definition_decodes_it_too() {
    check_hover(
        &at("#il =", 0),
        expect![[r##"
        60..63 "#il"
        **`#il`**: attribute alias

        DRAM interleaved, 2x8 tiles total (bf16)
        - buffer: dram
        - memory layout: interleaved
        - grid: 1x1
        - shard shape: 2x8 tiles total
        - dtype: bf16, tile pages
        - L1 per core: none (DRAM il)
    "##]],
    );
}

#[test]
fn hover_on_a_buffer_type_alias_names_the_buffer() {
    check_hover(
        &at("#l1>", 0),
        expect![[r##"
        378..381 "#l1"
        **`#l1`**: attribute alias

        buffer type: l1
    "##]],
    );
}

#[test]
fn hover_on_a_called_function_shows_its_signature() {
    check_hover(
        &at("@helper(%1)", 0),
        expect![[r#"
        832..839 "@helper"
        ```mlir
        func.func private @helper(%x: tensor<64x256xbf16>) -> tensor<64x256xbf16>
        ```

        1 op(s)
    "#]],
    );
}

#[test]
fn hover_shows_an_applied_override() {
    let text = format!(
        "{GRAPH}//- /m.overrides\noverride-output-layout=act=1x1:dram:interleaved:tile:bf16\n"
    );
    check_hover(
        &with_cursor(&text, "\"ttnn.relu\"", 0),
        expect![[r#"
            731..742 "\"ttnn.relu\""
            **`ttnn.relu`** `%1` in `@main`, loc `"act"` (line 8)

            result: `tensor<64x256xbf16>`

            layout: DRAM interleaved, 2x8 tiles total (bf16)

            L1 per core: none (DRAM il)

            estimated time as written: 3.2 µs device time, overhead-bound on 16 core(s)

            lower bound: 3.1 µs (its best placement, every free tensor local in L1)

            planned layout (df-sharding): unchanged, DRAM interleaved, 2x8 tiles total (bf16)

            L1 per core: cb 8192 B, tensor 0 B, output 0 B; live L1 before it: 0 B

            why: the layout its output-layout override gives (in no L1 chain)

            legal layouts: 1 interleaved, 0 sharded

            override applied: `override-output-layout=act=1x1:dram:interleaved:tile:bf16`
        "#]],
    );
}

#[test]
fn hover_on_whitespace_is_empty() {
    check_hover(&at("  %1 = ", 0), expect![[r#""#]]);
}

#[track_caller]
fn check_nav(fixture_text: &str, expect: Expect) {
    let f = fixture(fixture_text);
    let (file, offset) = f.position();
    let analysis = f.host.analysis();
    let mut out = String::new();
    for t in analysis.goto_definition(file, offset).expect("not cancelled") {
        let _ = writeln!(
            out,
            "def {} {} focus {}",
            t.file_path,
            show(&f, t.range).lines().next().unwrap_or(""),
            show(&f, t.focus_range)
        );
    }
    for r in analysis.references(file, offset, true).expect("not cancelled") {
        let mark = if r.is_definition { " (definition)" } else { "" };
        let _ = writeln!(out, "ref {}{mark}", show(&f, r.range));
    }
    let without = analysis.references(file, offset, false).expect("not cancelled").len();
    let _ = writeln!(out, "{without} reference(s) without the declaration");
    expect.assert_eq(&out);
}

#[test]
fn a_value_use_goes_to_its_result_and_finds_all_uses_in_its_function() {
    check_nav(
        &at("%0)", 0),
        expect![[r#"
        def /m.mlir 559..723 "%0 = \"ttnn.matmul\"(%a, %b) <{transpose_a = false, transpose_b = false}> : (tensor<64x256xbf16, #il>, tensor<256x256xbf16, #w>) -> tensor<64x256xbf16, #bs> loc(\"mm\")" focus 559..561 "%0"
        ref 559..561 "%0" (definition)
        ref 743..745 "%0"
        1 reference(s) without the declaration
    "#]],
    );
}

#[test]
fn an_argument_use_goes_to_the_argument() {
    check_nav(
        &at("%x)", 0),
        expect![[r#"
        def /m.mlir 968..996 "%x: tensor<64x256xbf16, #il>" focus 968..970 "%x"
        ref 968..970 "%x" (definition)
        ref 1046..1048 "%x"
        1 reference(s) without the declaration
    "#]],
    );
}

#[test]
fn an_alias_use_goes_to_the_alias_definition() {
    check_nav(
        &at("#bs>", 1),
        expect![[r##"
        def /m.mlir 287..450 "#bs = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <2x8>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (7,1)>]>>" focus 287..290 "#bs"
        ref 287..290 "#bs" (definition)
        ref 709..712 "#bs"
        ref 770..773 "#bs"
        2 reference(s) without the declaration
    "##]],
    );
}

#[test]
fn a_callee_symbol_goes_to_the_function() {
    check_nav(
        &at("@helper(%1)", 0),
        expect![[r#"
        def /m.mlir 942..1165 "func.func private @helper(%x: tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> {\n  %0 = \"ttnn.exp\"(%x) : (tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> loc(\"helper_exp\")\n  return %0 : tensor<64x256xbf16, #il>\n}" focus 960..967 "@helper"
        ref 832..839 "@helper"
        ref 960..967 "@helper" (definition)
        1 reference(s) without the declaration
    "#]],
    );
}

#[test]
fn a_location_alias_goes_to_its_definition() {
    check_nav(
        "func.func @f(%a: i32) -> i32 {\n  %0 = \"t.op\"(%a) : (i32) -> i32 loc(<|>#loc1)\n  return %0 : i32\n}\n#loc1 = loc(\"x\")\n",
        expect![[r##"
            def /m.mlir 95..111 "#loc1 = loc(\"x\")" focus 95..100 "#loc1"
            ref 68..73 "#loc1"
            ref 95..100 "#loc1" (definition)
            1 reference(s) without the declaration
        "##]],
    );
}

#[test]
fn aliases_resolve_within_their_own_chunk() {
    check_nav(
        "#a = #ttnn.buffer_type<dram>\nfunc.func @f() attributes {x = #a} {\n  return\n}\n// -----\n#a = #ttnn.buffer_type<l1>\nfunc.func @g() attributes {x = <|>#a} {\n  return\n}\n",
        expect![[r##"
            def /m.mlir 86..112 "#a = #ttnn.buffer_type<l1>" focus 86..88 "#a"
            ref 86..88 "#a" (definition)
            ref 144..146 "#a"
            1 reference(s) without the declaration
        "##]],
    );
}

#[test]
fn document_symbols_nest_ops_in_functions() {
    let f = fixture(GRAPH);
    let file = f.file("/m.mlir");
    let symbols = f.host.analysis().document_symbols(file).expect("not cancelled");
    let mut out = String::new();
    fn walk(out: &mut String, s: &[crate::Symbol], depth: usize) {
        for s in s {
            let _ = writeln!(
                out,
                "{}{:?} {} {:?} sel {:?}",
                "  ".repeat(depth),
                s.kind,
                s.name,
                s.range,
                s.selection_range
            );
            walk(out, &s.children, depth + 1);
        }
    }
    walk(&mut out, &symbols, 0);
    expect![[r#"
        Alias #dram 0..31 sel 0..5
        Alias #l1 32..59 sel 32..35
        Alias #il 60..173 sel 60..63
        Alias #w 174..286 sel 174..176
        Alias #bs 287..450 sel 287..290
        Function @main 451..941 sel 461..466
          Op %0 = ttnn.matmul 559..723 sel 564..577
          Op %1 = ttnn.relu 726..814 sel 731..742
          Op %2 = func.call 817..900 sel 822..831
        Function @helper 942..1165 sel 960..967
          Op %0 = ttnn.exp 1030..1124 sel 1035..1045
    "#]]
    .assert_eq(&out);
}

#[test]
fn split_files_get_one_module_symbol_per_chunk() {
    let f = fixture("func.func @f() {\n  return\n}\n// -----\nfunc.func @g() {\n  return\n}\n");
    let symbols = f.host.analysis().document_symbols(f.file("/m.mlir")).expect("not cancelled");
    let out: Vec<String> = symbols
        .iter()
        .map(|s| {
            format!(
                "{} [{}]",
                s.name,
                s.children.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    expect![[r#"
        chunk 0 [@f]
        chunk 1 [@g]"#]]
    .assert_eq(&out.join("\n"));
}

#[test]
fn semantic_tokens_classify_ops_values_aliases_and_keys() {
    let f = fixture(
        "#l = #ttnn.buffer_type<l1>\n// c\nfunc.func @f(%a: tensor<2xbf16>) -> tensor<2xbf16> attributes {k = \"s\"} {\n  %0 = \"ttnn.relu\"(%a) {n = 3 : i32, m = #l} : (tensor<2xbf16>) -> tensor<2xbf16> loc(\"x\")\n  return %0 : tensor<2xbf16>\n}\n",
    );
    let file = f.file("/m.mlir");
    let analysis = f.host.analysis();
    let text = analysis.file_text(file).expect("not cancelled");
    let tokens = analysis.semantic_tokens(file).expect("not cancelled");
    let out: Vec<String> =
        tokens.iter().map(|(r, t)| format!("{:?} {}", t, r.slice(&text))).collect();
    expect![[r#"
        Alias #l
        Attribute #ttnn.buffer_type
        Comment // c
        Operation func.func
        Function @f
        Value %a
        Type tensor
        Number 2
        Type tensor
        Number 2
        Keyword attributes
        AttributeKey k
        String "s"
        Value %0
        Operation "ttnn.relu"
        Value %a
        AttributeKey n
        Number 3
        Type i32
        AttributeKey m
        Alias #l
        Type tensor
        Number 2
        Type tensor
        Number 2
        Keyword loc
        String "x"
        Operation return
        Value %0
        Type tensor
        Number 2"#]]
    .assert_eq(&out.join("\n"));
}

#[test]
fn inlay_hints_show_each_result_layout_in_short_form() {
    let f = fixture(GRAPH);
    let file = f.file("/m.mlir");
    let analysis = f.host.analysis();
    let text = analysis.file_text(file).expect("not cancelled");
    let hints =
        analysis.inlay_hints(file, TextRange::new(0, text.len() as u32)).expect("not cancelled");
    let mut out = String::new();
    for h in hints {
        let line_start = text[..h.offset as usize].rfind('\n').map_or(0, |i| i + 1);
        let _ = writeln!(out, "{}<{}>", text[line_start..h.offset as usize].trim_start(), h.label);
        if let Some(t) = h.tooltip {
            let _ = writeln!(out, "  {t}");
        }
    }
    expect![[r#"
        %0<→ L1 bs 2x8>
        %1<→ L1 bs 2x8>
        %1<spill>
          output goes to DRAM interleaved, 2x8 tiles total (bf16): spill to DRAM: chain output spills to DRAM
        %2<→ DRAM il>
        %0<DRAM il>
    "#]]
    .assert_eq(&out);
}

/// Plan findings are inlay hints of the range asked for: a word at what they point at, the
/// message as the tooltip; a range that holds none of them gets none.
#[test]
fn inlay_hints_show_the_plan_findings_of_the_range_with_their_message() {
    let f = fixture(&GRAPH.replace("policy:df-sharding", "policy:df-sharding-merge"));
    let file = f.file("/m.mlir");
    let analysis = f.host.analysis();
    let text = analysis.file_text(file).expect("not cancelled");
    let show = |range: TextRange| {
        let hints = analysis.inlay_hints(file, range).expect("not cancelled");
        let mut out = String::new();
        for h in hints.iter().filter(|h| h.kind == crate::InlayHintKind::Finding) {
            let line_start = text[..h.offset as usize].rfind('\n').map_or(0, |i| i + 1);
            let before = text[line_start..h.offset as usize].trim_start();
            let _ = writeln!(out, "{before}<{}>", h.label);
            let _ = writeln!(out, "  {}", h.tooltip.as_deref().unwrap_or_default());
        }
        out
    };
    expect![[r#"
        %0 = "ttnn.matmul"<chain declined>
          this L1 chain of 2 ops is declined and stays in DRAM: the cost model estimates 11.1 µs in L1 (reshards and spill included) against 8.3 µs out of it
    "#]]
    .assert_eq(&show(TextRange::new(0, text.len() as u32)));
    let helper = text.find("func.func private @helper").expect("the helper") as u32;
    expect![[""]].assert_eq(&show(TextRange::new(helper, text.len() as u32)));
}

/// What an editor publishes after every change (syntax and lowering diagnostics, problems
/// in the IR as written) never computes the optimizer's plan: the keystroke does not wait
/// for it. Inlay hints, which show the plan, do compute it.
#[test]
fn published_problems_never_compute_the_plan() {
    let mut f = fixture(GRAPH);
    let file = f.file("/m.mlir");
    let plan_queries = |executed: Vec<String>| -> Vec<String> {
        let mut out: Vec<String> = executed
            .into_iter()
            .filter(|q| {
                ["plan", "chain", "chunk", "schedule", "merge", "solve"]
                    .iter()
                    .any(|w| q.contains(w))
            })
            .collect();
        out.sort();
        out.dedup();
        out
    };
    let _ = f.host.take_executed_queries();
    let analysis = f.host.analysis();
    let _ = analysis.diagnostics(file).expect("not cancelled");
    let problems = analysis.problems(file).expect("not cancelled");
    assert!(problems.is_empty(), "the fixture has no problems as written");
    drop(analysis);
    let executed = f.host.take_executed_queries();
    assert!(executed.iter().any(|q| q.starts_with("written_findings")), "{executed:?}");
    expect![[r#"
        []
    "#]]
    .assert_debug_eq(&plan_queries(executed));
    // The same again after an edit to an op.
    let at = f.host.text("/m.mlir").expect("open").find("loc(\"act\")").expect("loc") as u32;
    let edit = crate::TextEdit { range: TextRange::new(at + 5, at + 8), text: "relu".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    let analysis = f.host.analysis();
    let _ = analysis.diagnostics(file).expect("not cancelled");
    let _ = analysis.problems(file).expect("not cancelled");
    expect![[r#"
        []
    "#]]
    .assert_debug_eq(&plan_queries(f.host.take_executed_queries()));
    let text = analysis.file_text(file).expect("not cancelled");
    let _ =
        analysis.inlay_hints(file, TextRange::new(0, text.len() as u32)).expect("not cancelled");
    assert!(!plan_queries(f.host.take_executed_queries()).is_empty());
}

#[track_caller]
fn check_override_diagnostics(overrides: &str, expect: Expect) {
    let f = fixture(&format!("{GRAPH}//- /m.overrides\n{overrides}"));
    let file = f.file("/m.mlir");
    let d = f.host.analysis().override_diagnostics(&[file]).expect("not cancelled");
    let mut out = format!("origin {}\n", d.origin);
    for diag in &d.on_overrides {
        let _ = writeln!(
            out,
            "{} {:?} {:?} [{}] {}",
            d.origin,
            diag.range,
            diag.range.slice(overrides),
            diag.code,
            diag.message
        );
        let _ = diag.severity;
    }
    let text = f.host.analysis().file_text(file).expect("not cancelled");
    for (path, diag) in &d.on_files {
        let _ = writeln!(
            out,
            "{path} {:?} {:?} {} [{}] {}",
            diag.range,
            diag.range.slice(&text),
            diag.severity.as_str(),
            diag.code,
            diag.message
        );
    }
    expect.assert_eq(&out);
}

#[test]
fn override_diagnostics_report_targets_rejections_and_syntax() {
    check_override_diagnostics(
        "# pins\noverride-output-layout=mm=1x1:dram:interleaved:tile:bf16,nosuchop=l1\noverride-output-layout=act=9x9:l1:block_sharded:tile\nfrobnicate=1\n",
        expect![[r#"
            origin /m.overrides
            /m.overrides 30..63 "mm=1x1:dram:interleaved:tile:bf16" [override-applied] applies to `ttnn.matmul` %0 in @main (m.mlir:7)
            /m.overrides 64..72 "nosuchop" [unknown-override-target] no op in the open files has `loc("nosuchop")`; the override applies to nothing
            /m.overrides 99..128 "act=9x9:l1:block_sharded:tile" [override-applied] applies to `ttnn.relu` %1 in @main (m.mlir:8)
            /m.overrides 99..128 "act=9x9:l1:block_sharded:tile" [rejected-override] this layout cannot be built for `ttnn.relu` %1 in @main (m.mlir:8): grid 9x9 does not fit the 8x8 worker grid; the override is ignored
            /m.overrides 129..139 "frobnicate" [unknown-option] unknown option `frobnicate`
            /m.mlir 564..577 "\"ttnn.matmul\"" info [override-applied] override `override-output-layout=mm=1x1:dram:interleaved:tile:bf16` applies (m.overrides:2)
            /m.mlir 731..742 "\"ttnn.relu\"" info [override-applied] override `override-output-layout=act=9x9:l1:block_sharded:tile` applies (m.overrides:3)
        "#]],
    );
}

#[test]
fn a_sidecar_naming_thousands_of_unknown_ops_gives_a_bounded_list_of_diagnostics() {
    // Each entry names an op no file has: one error each, up to the cap, then one warning
    // that counts the rest.
    let overrides: String =
        (0..1500).map(|i| format!("override-output-layout=ghost{i}=l1\n")).collect();
    let f = fixture(&format!("{GRAPH}//- /m.overrides\n{overrides}"));
    let file = f.file("/m.mlir");
    let d = f.host.analysis().override_diagnostics(&[file]).expect("not cancelled");
    let unknown = d.on_overrides.iter().filter(|d| d.code == "unknown-override-target").count();
    let last = d.on_overrides.iter().find(|d| d.code == "too-many-override-diagnostics");
    expect![[r#"
        1000 unknown, 1001 in all
        Some("500 more errors and warnings and 0 more notes on the overrides are not shown (the first 1000 of each are)")
    "#]]
    .assert_eq(&format!(
        "{unknown} unknown, {} in all\n{:?}\n",
        d.on_overrides.len(),
        last.map(|d| &d.message)
    ));
}

#[track_caller]
fn check_actions(
    fixture_text: &str,
    doc_is_overrides: bool,
    target: NewOverrideTarget,
    expect: Expect,
) {
    let f = fixture(fixture_text);
    let (path, offset) = f.cursors[0].clone();
    let doc = if doc_is_overrides {
        ActionDocument::Overrides
    } else {
        ActionDocument::Ir(f.file(&path))
    };
    let config = CodeActionConfig { new_override: target };
    let actions = f
        .host
        .analysis()
        .code_actions(doc, TextRange::empty(offset), &config)
        .expect("not cancelled");
    let mut out = String::new();
    for a in actions {
        let _ = writeln!(out, "{:?}: {}", a.kind, a.title);
        for fe in a.edits {
            let _ = writeln!(out, "  {} create={}", fe.path, fe.create);
            for e in fe.edits {
                let _ = writeln!(out, "    {:?} -> {:?}", e.range, e.text);
            }
        }
    }
    expect.assert_eq(&out);
}

#[test]
fn pinning_the_current_layout_appends_an_override_entry() {
    let text = format!("{GRAPH}//- /m.overrides\nmax-legal-layouts=8");
    check_actions(
        &with_cursor(&text, "\"ttnn.matmul\"", 0),
        false,
        NewOverrideTarget::InOverrides { offset: 19 },
        expect![[r#"
            Refactor: Pin the current layout (L1 bs 2x8) of `mm` as an override
              /m.overrides create=false
                19..19 -> "\noverride-output-layout=mm=2x8:l1:block_sharded:tile:bf16\n"
            Refactor: Insert a reshard in front of operand 0 of `mm`
              /m.overrides create=false
                19..19 -> "\ninsert-memreconfig=mm=0\n"
        "#]],
    );
}

#[test]
fn pinning_without_an_overrides_file_creates_one() {
    check_actions(
        &at("\"ttnn.relu\"", 0),
        false,
        NewOverrideTarget::NewFile { path: "/m.overrides".to_owned() },
        expect![[r#"
            Refactor: Pin the current layout (DRAM il) of `act` as an override
              /m.overrides create=true
                0..0 -> "override-output-layout=act=1x1:dram:interleaved:tile:bf16\n"
            Refactor: Pin the planned layout (L1 bs 2x8) of `act` as an override
              /m.overrides create=true
                0..0 -> "override-output-layout=act=2x8:l1:block_sharded:tile:bf16\n"
            Refactor: Insert a reshard in front of operand 0 of `act`
              /m.overrides create=true
                0..0 -> "insert-memreconfig=act=0\n"
        "#]],
    );
}

#[test]
fn pinning_replaces_an_existing_entry_and_offers_its_removal() {
    let text = format!("{GRAPH}//- /m.overrides\noverride-output-layout=mm=l1,act=dram\n");
    check_actions(
        &with_cursor(&text, "\"ttnn.matmul\"", 0),
        false,
        NewOverrideTarget::InOverrides { offset: 0 },
        expect![[r#"
            Refactor: Pin the current layout (L1 bs 2x8) of `mm` as an override
              /m.overrides create=false
                23..28 -> "mm=2x8:l1:block_sharded:tile:bf16"
            Refactor: Insert a reshard in front of operand 0 of `mm`
              /m.overrides create=false
                0..0 -> "insert-memreconfig=mm=0\n"
            QuickFix: Remove the override `override-output-layout=mm=l1`
              /m.overrides create=false
                23..29 -> ""
        "#]],
    );
}

#[test]
fn removing_the_only_entry_of_an_option_removes_its_line() {
    check_actions(
        &format!(
            "{GRAPH}//- /m.overrides\nmax-legal-layouts=8\noverride-output-layout=a<|>ct=dram\nrow-major-enabled=false\n"
        ),
        true,
        NewOverrideTarget::InOverrides { offset: 0 },
        expect![[r#"
            QuickFix: Remove the override `override-output-layout=act=dram`
              /m.overrides create=false
                20..52 -> ""
        "#]],
    );
}

#[test]
fn removing_one_of_several_entries_keeps_the_others() {
    check_actions(
        &format!(
            "{GRAPH}//- /m.overrides\noverride-output-layout=mm=l1,a<|>ct=dram max-legal-layouts=8\n"
        ),
        true,
        NewOverrideTarget::InOverrides { offset: 0 },
        expect![[r#"
            QuickFix: Remove the override `override-output-layout=act=dram`
              /m.overrides create=false
                28..37 -> ""
        "#]],
    );
}

#[test]
fn formatting_refuses_files_with_syntax_errors() {
    let f = fixture("func.func @f( {\n");
    assert_eq!(f.host.analysis().format(f.file("/m.mlir")).expect("not cancelled"), None);
}

#[test]
fn hovering_after_a_whitespace_edit_reruns_only_the_positional_queries() {
    let mut f = fixture(&at("\"ttnn.relu\"", 0));
    let (file, offset) = f.position();
    let _ = f.host.analysis().hover(file, offset).expect("not cancelled");
    let _ = f.host.take_executed_queries();
    let edit = crate::TextEdit { range: TextRange::empty(0), text: "\n\n".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    let _ = f.host.analysis().hover(file, offset + 2).expect("not cancelled");
    let mut executed = f.host.take_executed_queries();
    executed.sort();
    executed.dedup();
    expect![[r#"
        file_funcs
        file_index
        func_body(@helper)
        func_body(@main)
        func_loc_names
        func_source_map(@helper)
        func_source_map(@main)
        lower_file"#]]
    .assert_eq(&executed.join("\n"));
}

/// A chain the cost model declines is reported as information at its first op, with the
/// numbers; a chain that fails is a warning.
#[test]
fn a_declined_chain_is_an_information_diagnostic_with_the_estimates() {
    let f = fixture(&GRAPH.replace("policy:df-sharding", "policy:df-sharding-merge"));
    let file = f.file("/m.mlir");
    let diags = f.host.analysis().findings(file).expect("not cancelled");
    let text = f.host.analysis().file_text(file).expect("not cancelled");
    let mut out = String::new();
    for d in diags.iter().filter(|d| d.code.starts_with("chain")) {
        let _ =
            writeln!(out, "{:?} {} {:?}: {}", d.severity, d.code, d.range.slice(&text), d.message);
    }
    expect![[r#"
        Info chain-declined "\"ttnn.matmul\"": this L1 chain of 2 ops is declined and stays in DRAM: the cost model estimates 11.1 µs in L1 (reshards and spill included) against 8.3 µs out of it
    "#]].assert_eq(&out);
}

/// The server converts every position through the line index: the host keeps one per text
/// (patched for each edit), and requests share it rather than build their own.
#[test]
fn the_line_index_is_kept_per_text_and_patched_for_an_edit() {
    let mut f = fixture(GRAPH);
    let file = f.file("/m.mlir");
    let first = f.host.analysis().line_index(file).expect("not cancelled");
    let again = f.host.analysis().line_index(file).expect("not cancelled");
    assert!(std::sync::Arc::ptr_eq(&first, &again));
    let edit = crate::TextEdit { range: TextRange::empty(0), text: "\n".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    let index = f.host.analysis().line_index(file).expect("not cancelled");
    let text = f.host.analysis().file_text(file).expect("text");
    assert_eq!(*index, syntax::LineIndex::new(&text));
    assert_eq!(index.line_col(&text, 1).line, 1);
}

/// A host that never drains the execution log (the language server) turns it off.
#[test]
fn the_query_log_records_nothing_while_off() {
    let mut f = fixture(GRAPH);
    let file = f.file("/m.mlir");
    f.host.set_query_log(false);
    let _ = f.host.analysis().findings(file).expect("not cancelled");
    assert!(f.host.take_executed_queries().is_empty());
    f.host.set_query_log(true);
    let edit = crate::TextEdit { range: TextRange::empty(0), text: "\n".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    let _ = f.host.analysis().findings(file).expect("not cancelled");
    assert!(f.host.take_executed_queries().iter().any(|q| q == "lower_file"));
}

/// Reads diagnostics, then makes `edits` edits reading diagnostics after each; returns the
/// first revision's lowering, weakly.
fn lowering_after_edits(
    f: &mut crate::fixture::Fixture,
    edits: usize,
) -> std::sync::Weak<ir::LoweredFile> {
    let file = f.file("/m.mlir");
    let analysis = f.host.analysis();
    let old = std::sync::Arc::downgrade(&ir::lower_file(analysis.db(), file));
    drop(analysis);
    let _ = f.host.analysis().diagnostics(file).expect("not cancelled");
    for _ in 0..edits {
        let edit = crate::TextEdit { range: TextRange::empty(0), text: "\n".to_owned() };
        f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
        let _ = f.host.analysis().diagnostics(file).expect("not cancelled");
    }
    old
}

/// The lowering that diagnostics read outlives salsa's copy only until the host is told it
/// is idle, or until two newer revisions started.
#[test]
fn old_lowerings_are_freed_when_idle_or_after_three_edits() {
    let mut f = fixture(GRAPH);
    let old = lowering_after_edits(&mut f, 2);
    assert!(old.upgrade().is_some(), "kept until the host is idle");
    f.host.free_unused();
    wait_until_freed(&old);
}

fn wait_until_freed<T>(value: &std::sync::Weak<T>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while value.upgrade().is_some() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(value.upgrade().is_none(), "still alive");
}

#[test]
fn old_lowerings_are_freed_after_three_edits_without_a_quiet_moment() {
    let mut f = fixture(GRAPH);
    let old = lowering_after_edits(&mut f, 3);
    wait_until_freed(&old);
}

/// An edit inside one op patches the file's parse in place (nothing else holds it, so the
/// host can take it out of its input); an edit between ops parses the text anew. Either way
/// the parse equals a parse from scratch.
#[test]
fn an_edit_inside_one_op_patches_the_parse_and_one_between_ops_replaces_it() {
    let mut f = fixture(GRAPH);
    let file = f.file("/m.mlir");
    let parse_of = |f: &crate::fixture::Fixture| ir::parse_file(f.host.analysis().db(), file);
    let text = f.host.text("/m.mlir").expect("open").to_string();
    let at = text.find("\"ttnn.relu\"").expect("a relu") as u32 + 6;
    let old = std::sync::Arc::downgrade(&parse_of(&f));
    let edit = crate::TextEdit { range: TextRange::new(at, at + 4), text: "gelu".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    assert!(old.upgrade().is_none(), "the parse was taken out, not shared");
    let now = f.host.text("/m.mlir").expect("open");
    assert!(*parse_of(&f) == syntax::parse(&now));
    let edit = crate::TextEdit { range: TextRange::empty(0), text: "\n".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    let now = f.host.text("/m.mlir").expect("open");
    assert!(*parse_of(&f) == syntax::parse(&now));
}

/// A change of edits by line and column (LSP's positions, UTF-16 columns) resolves each one
/// against the text the edits before it left, as an editor sends a rename at every use: the
/// text and parse are those of the same edits made by byte offsets.
#[test]
fn edits_by_line_and_column_apply_in_order_to_the_text_each_leaves() {
    let with_comment = GRAPH.replacen("\nfunc.func", "\n// \u{1d538}\u{e9} note\nfunc.func", 1);
    let mut f = fixture(&with_comment);
    let text = f.host.text("/m.mlir").expect("open").to_string();
    let index = syntax::LineIndex::new(&text);
    let note = text.find("note").expect("the comment") as u32;
    let relu = text.find("\"ttnn.relu\"").expect("a relu") as u32 + 6;
    let (note_at, relu_at) = (index.line_col(&text, note), index.line_col(&text, relu));
    // Before `note`: `// `, two characters of three UTF-16 units (six bytes) and a space.
    assert_eq!((note_at.col_utf16, note - index.line_start(note_at.line).unwrap_or(0)), (7, 10));
    let pos = |lc: syntax::LineCol, by: u32| syntax::LineCol { col_utf16: lc.col_utf16 + by, ..lc };
    let edits = vec![
        // `relu` -> `gelu`, a longer word in the comment, and a mark after that word: the
        // last position holds only in the text the edits before it left.
        crate::PositionEdit { start: relu_at, end: pos(relu_at, 4), text: "gelu".to_owned() },
        crate::PositionEdit { start: note_at, end: pos(note_at, 4), text: "remark".to_owned() },
        crate::PositionEdit { start: pos(note_at, 6), end: pos(note_at, 6), text: "!".to_owned() },
    ];
    f.host.apply_change(crate::Change::new().edit_file_at("/m.mlir", edits));
    let now = f.host.text("/m.mlir").expect("open");
    let expected =
        text.replacen("\"ttnn.relu\"", "\"ttnn.gelu\"", 1).replacen("note", "remark!", 1);
    assert_eq!(*now, expected);
    let parse = ir::parse_file(f.host.analysis().db(), f.file("/m.mlir"));
    assert!(*parse == syntax::parse(&now));
}

/// Nothing else holding the text, the host patches it where it is rather than copying the
/// file into a new string per keystroke.
#[test]
fn an_edit_patches_the_text_in_place_when_nothing_else_holds_it() {
    let mut f = fixture(GRAPH);
    let (at, buffer) = {
        let text = f.host.text("/m.mlir").expect("open");
        (text.find("\"ttnn.relu\"").expect("a relu") as u32 + 6, text.as_ptr() as usize)
    };
    let edit = crate::TextEdit { range: TextRange::new(at, at + 4), text: "gelu".to_owned() };
    f.host.apply_change(crate::Change::new().edit_file("/m.mlir", vec![edit]));
    let now = f.host.text("/m.mlir").expect("open");
    assert!(now.contains("\"ttnn.gelu\""));
    assert_eq!(now.as_ptr() as usize, buffer);
}

/// Two 512 KiB-per-core L1 values are live when the add allocates a third.
const L1_LIVE: &str = r##"
//- /m.mlir
#dram = #ttnn.buffer_type<dram>
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
"##;

const GELU_OF_A: &str = "\"ttnn.gelu\"(%a) : (tensor<4096x4096xbf16, #d>)";
const GELU_OF_0: &str = "\"ttnn.gelu\"(%0) : (tensor<4096x4096xbf16, #big>)";

/// `code range "text": message` per problem of `/m.mlir`.
fn problems_of(f: &Fixture) -> String {
    let file = f.file("/m.mlir");
    let analysis = f.host.analysis();
    let text = analysis.file_text(file).expect("not cancelled");
    let problems = analysis.problems(file).expect("not cancelled");
    problems
        .iter()
        .map(|p| format!("{} {:?}: {}\n", p.code, &text[p.range.start as usize..][..12], p.message))
        .collect()
}

#[test]
fn problems_follow_the_live_l1_as_written_through_a_data_flow_edit() {
    // As written, `%0` and `%1` are both live when the add runs: out of L1 there. When `%1`
    // reads `%0` and the add reads `%1` twice, `%0` dies after `%1`: one value is live at
    // the add, and it fits. The walk runs again for the edit (an L1 value's uses changed),
    // and says what a fresh analysis of the new text says.
    let mut f = fixture(L1_LIVE);
    expect![[r#"
        l1-out-of-memory "\"ttnn.add\"(%": out of L1 as written: 1048576 B live + 536576 B for the op exceed the 1325652 B usable per core
    "#]]
    .assert_eq(&problems_of(&f));
    let text = f.host.text("/m.mlir").expect("open").to_owned();
    let edit = |old: &str, new: &str| {
        let at = text.find(old).expect("the text is there") as u32;
        crate::TextEdit { range: TextRange::new(at, at + old.len() as u32), text: new.to_owned() }
    };
    let _ = f.host.take_executed_queries();
    f.host.apply_change(crate::Change::new().edit_file(
        "/m.mlir",
        vec![edit("\"ttnn.add\"(%0, %1)", "\"ttnn.add\"(%1, %1)"), edit(GELU_OF_A, GELU_OF_0)],
    ));
    expect![[""]].assert_eq(&problems_of(&f));
    let executed = f.host.take_executed_queries();
    assert!(executed.iter().any(|q| q.starts_with("written_findings")), "{executed:?}");
    let fresh = fixture(&L1_LIVE.replace("(%0, %1)", "(%1, %1)").replace(GELU_OF_A, GELU_OF_0));
    assert_eq!(problems_of(&f), problems_of(&fresh));
}
