//! Robustness properties of the syntax layer: no input makes `parse` or `print` panic or
//! overflow the stack, tokens always cover the text exactly, printing an error-free parse
//! gives text that parses again without errors, and very large files stay practical.
//!
//! Arbitrary text rarely gets past the first few tokens, so one strategy builds inputs from
//! MLIR fragments (`%0`, `=`, `"ttnn.add"`, `<{`, `tensor<4x4xbf16>`, `loc(...)`, ...); it
//! reaches the op, attribute, type and location rules that a byte-level strategy misses.

use proptest::prelude::*;
use syntax::{Parse, parse, print};

/// Checks the invariants every parse must satisfy, whatever the input.
fn check_invariants(text: &str) -> Parse {
    let p = parse(text);
    let mut at = 0u32;
    for t in p.tokens() {
        assert_eq!(t.range.start, at, "token {t:?} leaves a gap or overlaps in {text:?}");
        assert!(t.range.end > t.range.start, "empty token {t:?} in {text:?}");
        at = t.range.end;
    }
    assert_eq!(at as usize, text.len(), "tokens do not reach the end of {text:?}");
    for e in &p.errors {
        assert!(e.range.start <= e.range.end && e.range.end as usize <= text.len(), "{e:?}");
    }
    p
}

/// Pieces of MLIR that reach the parser's rules when strung together in random order.
const FRAGMENTS: &[&str] = &[
    "%0",
    "%1",
    "%arg0",
    "%0#1",
    "%2:2",
    "=",
    "\"ttnn.add\"",
    "\"ttnn.relu\"",
    "(",
    ")",
    "<{",
    "}>",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "->",
    "tensor<4x4xbf16>",
    "tensor<4x4xbf16, #a>",
    "!ttnn.device",
    "i32",
    "#a = #ttnn.buffer_type<dram>",
    "#a",
    "#loc1 = loc(\"x\")",
    "loc(\"op_1\")",
    "loc(#loc1)",
    "loc(unknown)",
    "loc(fused[\"a\", \"b\"])",
    "loc(callsite(\"a\" at \"b\"))",
    "dim = 3 : si32",
    "shape = [1 : i32, 4 : i32]",
    "array<i32: 1, 2>",
    "dense<1.0> : tensor<2xf32>",
    "func.func @f(%arg0: tensor<4x4xbf16>) -> tensor<4x4xbf16>",
    "func.func @g()",
    "return",
    "return %0 : tensor<4x4xbf16>",
    "module",
    "module attributes {}",
    "attributes",
    "@f",
    "^bb0:",
    "\"unterminated",
    "{-#",
    "#-}",
    "// a comment",
    "// -----",
    "\n",
    "\n  ",
    "1x1",
    "0x0",
    "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>",
    "ttnn.d2m_subgraph @s ins(%0 : tensor<4x4xbf16>) outs(%1 : tensor<4x4xbf16>) : tensor<4x4xbf16>",
    "ttcore.load_cached(@f, [%0])",
    "ttcore.device @d = <workerGrid = #ttcore.grid<8x8>>",
];

fn mlir_like() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(FRAGMENTS);
    let sep = prop::sample::select(&[" ", " ", "", "\n", "\n    "][..]);
    prop::collection::vec((fragment, sep), 0..48).prop_map(|parts| {
        let mut s = String::new();
        for (f, sep) in parts {
            s.push_str(f);
            s.push_str(sep);
        }
        s
    })
}

/// A well-formed function body with a random number of ops, so error-free parses (and so the
/// printer round trip) are exercised on every case, not only when fragments happen to line up.
fn valid_function() -> impl Strategy<Value = String> {
    (1usize..12, prop::bool::ANY, prop::bool::ANY).prop_map(|(n, with_locs, split)| {
        let ty = "tensor<32x32xbf16, #l>";
        let mut s = String::from(
            "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n",
        );
        s.push_str(&format!("func.func @f(%arg0: {ty}) -> {ty} {{\n"));
        let mut prev = "%arg0".to_owned();
        for i in 0..n {
            let loc = if with_locs { format!(" loc(\"op_{i}\")") } else { String::new() };
            s.push_str(&format!(
                "  %{i} = \"ttnn.add\"({prev}, %arg0) <{{k = {i} : i32}}> : ({ty}, {ty}) -> {ty}{loc}\n"
            ));
            prev = format!("%{i}");
        }
        s.push_str(&format!("  return {prev} : {ty}\n}}\n"));
        if split {
            let again = s.clone();
            s.push_str("// -----\n");
            s.push_str(&again);
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_parse_or_print(text in any::<String>()) {
        let p = check_invariants(&text);
        let printed = print(&text, &p);
        check_invariants(&printed);
    }

    #[test]
    fn arbitrary_bytes_decoded_lossily_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let p = check_invariants(&text);
        let _ = print(&text, &p);
    }

    #[test]
    fn mlir_like_input_prints_without_panicking_and_reparses(text in mlir_like()) {
        let p = check_invariants(&text);
        let printed = print(&text, &p);
        let reparsed = check_invariants(&printed);
        if p.errors.is_empty() {
            prop_assert!(
                reparsed.errors.is_empty(),
                "input {:?} printed as {:?} fails to reparse: {:?}",
                text,
                printed,
                reparsed.errors
            );
        }
    }

    #[test]
    fn printing_valid_functions_is_a_fixpoint(text in valid_function()) {
        let p = check_invariants(&text);
        prop_assert!(p.errors.is_empty(), "{:?}", p.errors);
        let printed = print(&text, &p);
        let reparsed = check_invariants(&printed);
        prop_assert!(reparsed.errors.is_empty(), "{:?}", reparsed.errors);
        // Printing normalizes; printing the normalized text again changes nothing.
        prop_assert_eq!(print(&printed, &reparsed), printed);
    }
}

#[test]
fn deeply_nested_brackets_are_rejected_without_overflowing_the_stack() {
    const DEPTH: usize = 100_000;
    // Each case opens the same construct 100k times where the grammar recurses: attribute
    // arrays, dictionaries, types, dialect bodies, locations, regions and plain brackets.
    let cases: [(&str, &str, &str); 11] = [
        ("#a = ", "[", ""),
        ("#a = ", "{k = ", ""),
        ("!t = ", "tensor<", ""),
        ("#a = #ttnn.x", "<", ""),
        ("#a = ", "dense<", ""),
        ("%0 = \"a\"() ", "({\n\"b\"() ", ""),
        // Closed regions: a debug build used to overflow 2 MiB at about 170 levels.
        ("", "\"a\"() ({\n", "}) : () -> ()\n"),
        ("\"a\"() : () -> () loc(", "\"n\"(", ""),
        ("\"a\"() : () -> () loc(", "callsite(", ""),
        ("func.func @f(%a: ", "tuple<", ""),
        ("", "(", ")"),
    ];
    for (prefix, open, close) in cases {
        let mut text = String::with_capacity(prefix.len() + DEPTH * (open.len() + close.len()));
        text.push_str(prefix);
        for _ in 0..DEPTH {
            text.push_str(open);
        }
        for _ in 0..DEPTH {
            text.push_str(close);
        }
        // The default test thread has 2 MiB of stack; parsing must fit in it.
        let p = check_invariants(&text);
        assert!(!p.errors.is_empty(), "no error for {DEPTH} x {open:?}");
        let printed = print(&text, &p);
        check_invariants(&printed);
    }

    // Balanced, otherwise valid nesting still stops at the limit with its own code.
    let mut text = String::from("#a = ");
    text.push_str(&"[".repeat(DEPTH));
    text.push_str(&"]".repeat(DEPTH));
    let p = parse(&text);
    assert!(p.errors.iter().any(|e| e.code == "nesting-too-deep"), "{:?}", p.errors.first());
}

#[test]
fn stray_words_and_locations_are_not_taken_for_ops() {
    // Found by `mlir_like_input_prints_without_panicking_and_reparses`: these parsed without
    // errors (a bare word or `loc(...)` became an opaque custom op), and their printed text,
    // which puts each op on its own line, did not parse.
    for text in [
        "loc(\"op_1\")\n#a = #ttnn.buffer_type<dram> loc(\"op_1\")\n( ",
        "func.func @f(%arg0: tensor<4x4xbf16>) -> tensor<4x4xbf16> #a = #ttnn.buffer_type<dram> attributes ",
        "foo\n",
        "%0 = loc(\"x\")\n",
    ] {
        let p = check_invariants(text);
        assert!(p.errors.iter().any(|e| e.code == "expected-token"), "{text:?}: {:?}", p.errors);
    }
    // Dotted names of other dialects are still skipped as opaque custom ops.
    let text = "func.func @f() {\n  llvm.foo %x [1] : i32\n  return\n}\n";
    let p = parse(text);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert!(parse(&print(text, &p)).errors.is_empty());
}

#[test]
fn unclosed_nested_regions_recover_in_linear_time() {
    // Every op opens a region that is never closed, and no line is indented, so each failed
    // op's recovery stops at the next line, which its enclosing region then parses again.
    // Unbounded, that re-parsed the tail once per level: 3 * 2^depth errors (3 million at
    // depth 20, minutes of work at 25). The count is the observable; time followed it.
    for depth in [10, 30, 45, 1000] {
        let text = "%0 = \"a\"() ({\n".repeat(depth);
        let p = check_invariants(&text);
        assert!(p.errors.iter().any(|e| e.code == "unclosed-region"), "{:?}", p.errors.first());
        assert!(p.errors.len() <= 20 * depth, "{} errors at depth {depth}", p.errors.len());
        check_invariants(&print(&text, &p));
    }
}

#[test]
fn a_fifty_megabyte_file_parses_without_errors() {
    let func = |i: usize| {
        format!(
            "  func.func @f{i}(%arg0: tensor<64x64xbf16, #l>, %arg1: tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> {{\n\
             \x20   %0 = \"ttnn.matmul\"(%arg0, %arg1) <{{transpose_a = false, transpose_b = false}}> : (tensor<64x64xbf16, #l>, tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> loc(\"mm_{i}\")\n\
             \x20   %1 = \"ttnn.relu\"(%0) : (tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> loc(\"relu_{i}\")\n\
             \x20   return %1 : tensor<64x64xbf16, #l>\n\
             \x20 }}\n"
        )
    };
    let mut text = String::with_capacity(51_000_000);
    text.push_str("#dram = #ttnn.buffer_type<dram>\n");
    text.push_str("#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n");
    text.push_str("module {\n");
    let mut n = 0;
    while text.len() < 50_000_000 {
        text.push_str(&func(n));
        n += 1;
    }
    text.push_str("}\n");

    let p = parse(&text);
    assert!(p.errors.is_empty(), "{:?}", p.errors.first());
    let last = p.tokens().last().map_or(0, |t| t.range.end);
    assert_eq!(last as usize, text.len());
    // One module holding every function: nothing was dropped or split by recovery.
    assert_eq!(p.file().chunks.len(), 1);
    let items = &p.file().chunks[0].items;
    let module = items.iter().find_map(|i| match i {
        syntax::ast::Item::Op(op) => match &op.body {
            syntax::ast::OpBody::Module(m) => Some(m),
            _ => None,
        },
        _ => None,
    });
    let funcs = module.map_or(0, |m| m.body.blocks.iter().map(|b| b.ops.len()).sum::<usize>());
    assert_eq!(funcs, n);
}
