//! Parser and printer tests: a compact tree dump snapshotted with expect-test.

use std::fmt::Write as _;

use expect_test::{Expect, expect};

use crate::{
    ast::{AttrKind, Block, Item, LocKind, Location, Op, OpBody, Type, TypeKind},
    parse, print,
};

fn dump_type(text: &str, ty: &Type) -> String {
    match &ty.kind {
        TypeKind::Tensor { shape, elem, encoding } => {
            let dims: Vec<String> =
                shape.iter().map(|d| d.map_or("?".to_owned(), |d| d.to_string())).collect();
            let enc =
                encoding.as_ref().map_or(String::new(), |e| format!(", {}", e.range.slice(text)));
            format!("tensor[{}; {}{enc}]", dims.join(","), dump_type(text, elem))
        }
        TypeKind::Builtin(b) => b.clone(),
        TypeKind::Dialect { dialect, name, .. } => format!("!{dialect}.{name}"),
        _ => ty.range.slice(text).to_owned(),
    }
}

fn dump_loc(loc: &Location) -> String {
    match &loc.kind {
        LocKind::Unknown => "unknown".to_owned(),
        LocKind::Name { name, child } => match child {
            Some(c) => format!("{name:?}({})", dump_loc(c)),
            None => format!("{name:?}"),
        },
        LocKind::FileLineCol { file, line, col } => format!("{file:?}:{line}:{col}"),
        LocKind::CallSite { callee, caller } => {
            format!("callsite({} at {})", dump_loc(callee), dump_loc(caller))
        }
        LocKind::Fused { locs, .. } => {
            format!("fused[{}]", locs.iter().map(dump_loc).collect::<Vec<_>>().join(", "))
        }
        LocKind::Alias(a) => format!("#{a}"),
    }
}

fn dump_op(out: &mut String, text: &str, op: &Op, level: usize) {
    let pad = "  ".repeat(level);
    let results: Vec<String> = op
        .results
        .iter()
        .map(|r| {
            if r.count == 1 { r.name.text.clone() } else { format!("{}:{}", r.name.text, r.count) }
        })
        .collect();
    let lhs = if results.is_empty() { String::new() } else { format!("{} = ", results.join(", ")) };
    let loc = op.loc.as_ref().map_or(String::new(), |l| format!(" @ {}", dump_loc(&l.loc)));
    let kind = match &op.body {
        OpBody::Generic(g) => {
            let operands: Vec<String> = g
                .operands
                .iter()
                .map(|u| match u.index {
                    Some(i) => format!("{}#{i}", u.name.text),
                    None => u.name.text.clone(),
                })
                .collect();
            let props = g.properties.as_ref().map_or(String::new(), |p| {
                let keys: Vec<&str> = p.entries.iter().map(|e| e.key.text.as_str()).collect();
                format!(" props[{}]", keys.join(","))
            });
            let results = g.fn_type.as_ref().map_or(String::new(), |f| {
                let r: Vec<String> = f.results.iter().map(|t| dump_type(text, t)).collect();
                format!(" -> {}", r.join(", "))
            });
            format!("generic({}){props}{results}", operands.join(", "))
        }
        OpBody::Module(m) => format!("module {}", m.sym_name.as_ref().map_or("", |n| &n.text)),
        OpBody::Func(f) => {
            let args: Vec<String> = f
                .args
                .iter()
                .map(|a| {
                    format!(
                        "{}{}",
                        a.name.as_ref().map_or(String::new(), |n| format!("{}: ", n.text)),
                        dump_type(text, &a.ty)
                    )
                })
                .collect();
            format!("func {}({})", f.sym_name.text, args.join(", "))
        }
        OpBody::Return(r) => format!("return {}", r.operands.len()),
        OpBody::Call(c) => format!("call {}", c.callee.text),
        OpBody::D2mSubgraph(d) => {
            format!("d2m_subgraph {} ins={} outs={}", d.callee.text, d.ins.len(), d.outs.len())
        }
        OpBody::TtLang(c) => format!("tt_lang_op {}", c.operands.len()),
        OpBody::LoadCached(l) => format!("load_cached {}", l.callee.text),
        OpBody::RegionOp(_) => "region-op".to_owned(),
        OpBody::DeviceDecl(d) => format!("device {}", d.sym_name.text),
        OpBody::Opaque(o) => format!("opaque uses={}", o.uses.len()),
        OpBody::Error => "ERROR".to_owned(),
    };
    let _ = writeln!(out, "{pad}{lhs}{} {kind}{loc}", op.name.text);
    let regions: Vec<&crate::ast::Region> = match &op.body {
        OpBody::Generic(g) => g.regions.iter().collect(),
        OpBody::Module(m) => vec![&m.body],
        OpBody::Func(f) => f.body.iter().collect(),
        OpBody::RegionOp(r) => vec![&r.body],
        _ => Vec::new(),
    };
    for r in regions {
        for b in &r.blocks {
            dump_block(out, text, b, level + 1);
        }
    }
}

fn dump_block(out: &mut String, text: &str, b: &Block, level: usize) {
    if let Some(label) = &b.label {
        let _ = writeln!(out, "{}{}:", "  ".repeat(level), label.name.text);
    }
    for op in &b.ops {
        dump_op(out, text, op, level);
    }
}

#[track_caller]
fn check(text: &str, expect: Expect) {
    let parse = parse(text);
    let mut out = String::new();
    for (i, chunk) in parse.file().chunks.iter().enumerate() {
        if parse.file().chunks.len() > 1 {
            let _ = writeln!(out, "chunk {i}");
        }
        for item in &chunk.items {
            match item {
                Item::AttrAlias(a) => {
                    let kind = match &a.value.kind {
                        AttrKind::Dialect { dialect, mnemonic, .. } => {
                            format!(
                                "dialect {dialect}.{}",
                                mnemonic.as_deref().unwrap_or("<angle>")
                            )
                        }
                        other => format!("{other:?}").chars().take(30).collect(),
                    };
                    let _ = writeln!(out, "alias {} = {kind}", a.name.text);
                }
                Item::TypeAlias(a) => {
                    let _ =
                        writeln!(out, "type alias {} = {}", a.name.text, dump_type(text, &a.value));
                }
                Item::LocAlias(a) => {
                    let _ = writeln!(out, "loc alias {} = {}", a.name.text, dump_loc(&a.loc));
                }
                Item::Op(op) => dump_op(&mut out, text, op, 0),
                Item::Resources(_) => out.push_str("resources\n"),
                Item::Error(r) => {
                    let _ = writeln!(out, "error item {:?}", r.slice(text));
                }
            }
        }
    }
    for e in &parse.errors {
        let _ = writeln!(
            out,
            "error[{}] {:?} {:?}: {}",
            e.code,
            e.range,
            e.range.slice(text),
            e.message
        );
    }
    expect.assert_eq(&out);
}

#[track_caller]
fn check_print(text: &str, expect: Expect) {
    let parse = parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    let printed = print(text, &parse);
    expect.assert_eq(&printed);
    // Printing is idempotent: printing the printed text changes nothing.
    let again = parse_and_print(&printed);
    assert_eq!(printed, again, "printer output is not a fixpoint");
}

fn parse_and_print(text: &str) -> String {
    let parse = parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    print(text, &parse)
}

#[test]
fn printer_style_file_with_forward_location_aliases() {
    check(
        r##"#dram = #ttnn.buffer_type<dram>
#l1_ = #ttnn.buffer_type<l1>
#ttnn_layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @proj(%arg0: tensor<64x128xbf16, #ttnn_layout> loc("x")) -> tensor<64x128xbf16, #ttnn_layout> attributes {tt.function_type = "forward_device"} {
    %0 = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc(#loc1)
    %1 = "ttnn.relu"(%arg0) : (tensor<64x128xbf16, #ttnn_layout>) -> tensor<64x128xbf16, #ttnn_layout> loc(#loc3)
    return %1 : tensor<64x128xbf16, #ttnn_layout> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("get_device_0")
#loc3 = loc("proj_mm"(#loc4))
#loc4 = loc("model.py":12:0)
"##,
        expect![[r##"
            alias #dram = dialect ttnn.buffer_type
            alias #l1_ = dialect ttnn.buffer_type
            alias #ttnn_layout = dialect ttnn.ttnn_layout
            module module  @ #loc
              func.func func @proj(%arg0: tensor[64,128; bf16, #ttnn_layout]) @ #loc
                %0 = ttnn.get_device generic() props[mesh_offset,mesh_shape] -> !ttnn.device @ #loc1
                %1 = ttnn.relu generic(%arg0) -> tensor[64,128; bf16, #ttnn_layout] @ #loc3
                return return 1 @ #loc
            loc alias #loc = unknown
            loc alias #loc1 = "get_device_0"
            loc alias #loc3 = "proj_mm"(#loc4)
            loc alias #loc4 = "model.py":12:0
        "##]],
    );
}

#[test]
fn multiple_results_and_result_group_uses() {
    check(
        r#"func.func @f(%a: tensor<4x4xf32>) {
  %0:3 = "ttnn.split"(%a) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  %q, %k = "ttnn.pair"(%0#1, %0#2) : (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  "ttnn.deallocate"(%q) <{force = false}> : (tensor<4x4xf32>) -> ()
  return
}
"#,
        expect![[r#"
            func.func func @f(%a: tensor[4,4; f32])
              %0:3 = ttnn.split generic(%a) -> tensor[4,4; f32], tensor[4,4; f32], tensor[4,4; f32]
              %q, %k = ttnn.pair generic(%0#1, %0#2) -> tensor[4,4; f32], tensor[4,4; f32]
              ttnn.deallocate generic(%q) props[force] -> 
              return return 0
        "#]],
    );
}

#[test]
fn custom_forms_of_d2m_subgraph_and_ttcore_wrappers() {
    check(
        r#"module {
  ttcore.device_module {
    builtin.module @inner attributes {ttcore.system_desc = #system_desc} {
      ttcore.device @default_device = <workerGrid = #ttcore.grid<8x8>, meshShape = 1x1, chipIds = [0]>
      func.func @main(%x: tensor<64x64xbf16>, %o: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
        %7 = ttnn.d2m_subgraph @d2m_subgraph_2
            ins(%x, %x : tensor<64x64xbf16>, tensor<64x64xbf16>)
            outs(%o : tensor<64x64xbf16>) : tensor<64x64xbf16>
        %8:2 = ttcore.load_cached(@main_const_eval_0, [%x]) : (tensor<64x64xbf16>) -> (tensor<64x64xbf16>, tensor<64x64xbf16>)
        %9 = ttnn.tt_lang_op(%7) {kernel_id = "k", arg_roles = "in out"} : (tensor<64x64xbf16>) -> (tensor<64x64xbf16>)
        return %9 : tensor<64x64xbf16>
      }
    }
  }
}
"#,
        expect![[r#"
            module module 
              ttcore.device_module region-op
                builtin.module module @inner
                  ttcore.device device @default_device
                  func.func func @main(%x: tensor[64,64; bf16], %o: tensor[64,64; bf16])
                    %7 = ttnn.d2m_subgraph d2m_subgraph @d2m_subgraph_2 ins=2 outs=1
                    %8:2 = ttcore.load_cached load_cached @main_const_eval_0
                    %9 = ttnn.tt_lang_op tt_lang_op 1
                    return return 1
        "#]],
    );
}

#[test]
fn split_files_have_independent_chunks() {
    check(
        "#l1 = #ttnn.buffer_type<l1>\nfunc.func @a() {\n  return\n}\n\n// -----\n#l1 = #ttnn.buffer_type<l1>\nfunc.func @b()\n",
        expect![[r#"
            chunk 0
            alias #l1 = dialect ttnn.buffer_type
            func.func func @a()
              return return 0
            chunk 1
            alias #l1 = dialect ttnn.buffer_type
            func.func func @b()
        "#]],
    );
}

#[test]
fn locations_in_all_forms() {
    check(
        r#"func.func @f() {
  "a.b"() : () -> () loc("n")
  "a.b"() : () -> () loc("f.py":3:4)
  "a.b"() : () -> () loc(callsite("g" at "f.py":1:2))
  "a.b"() : () -> () loc(fused<"m">["x", #loc2])
  "a.b"() : () -> () loc("outer"("inner"(#loc2)))
  return
}
#loc2 = loc(unknown)
"#,
        expect![[r#"
            func.func func @f()
              a.b generic() ->  @ "n"
              a.b generic() ->  @ "f.py":3:4
              a.b generic() ->  @ callsite("g" at "f.py":1:2)
              a.b generic() ->  @ fused["x", #loc2]
              a.b generic() ->  @ "outer"("inner"(#loc2))
              return return 0
            loc alias #loc2 = unknown
        "#]],
    );
}

#[test]
fn a_broken_op_does_not_hide_the_rest_of_the_function() {
    check(
        r#"func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ttnn.relu"(%a : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "ttnn.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "ttnn.neg"(%1) <{bad = }> : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "ttnn.abs"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}
"#,
        expect![[r#"
            func.func func @f(%a: tensor[4; f32])
              %0 =  ERROR
              %1 = ttnn.exp generic(%a) -> tensor[4; f32]
              %2 =  ERROR
              %3 = ttnn.abs generic(%1) -> tensor[4; f32]
              return return 1
            error[expected-token] 73..74 ":": expected `)`, found `:`
            error[expected-token] 195..196 "}": expected an attribute, found `}`
        "#]],
    );
}

#[test]
fn foreign_custom_syntax_is_skipped_with_its_uses() {
    check(
        r#"func.func @f(%a: i32) -> i32 {
  %0 = arith.constant 1 : i32
  %1 = emitc.call_opaque "f"(%a, %0) : (i32, i32) -> i32
  emitc.if %a {
    emitc.verbatim "x"
  }
  return %1 : i32
}
"#,
        expect![[r#"
            func.func func @f(%a: i32)
              %0 = arith.constant opaque uses=0
              %1 = emitc.call_opaque opaque uses=2
              emitc.if opaque uses=1
              return return 1
        "#]],
    );
}

#[test]
fn templates_with_placeholders_get_errors_not_panics() {
    check(
        r#"func.func @f() {
  %0 = "ttnn.x"() <{value = insert_src_dev_id : i16, topology = insert_topology}> : () -> ()
  return
}
"#,
        expect![[r#"
            func.func func @f()
              %0 =  ERROR
              return return 0
            error[expected-token] 63..64 ":": expected `}`, found `:`
        "#]],
    );
}

#[test]
fn unbalanced_input_reports_and_recovers() {
    check(
        "func.func @f() {\n  %0 = \"a.b\"() <{x = #ttnn.foo<(1, 2]>}> : () -> ()\n  return\n}\n}\n",
        expect![[r#"
            func.func func @f()
              %0 =  ERROR
              return return 0
            error item "}"
            error[mismatched-bracket] 53..54 "]": mismatched `]` in attribute body, expected `)`
            error[unmatched-brace] 80..81 "}": unmatched `}`
        "#]],
    );
}

#[test]
fn deep_nesting_is_reported_without_overflowing_the_stack() {
    let depth = 100_000;
    let text = format!("#a = {}{}\n", "[".repeat(depth), "]".repeat(depth));
    let p = parse(&text);
    assert!(p.errors.iter().any(|e| e.code == "nesting-too-deep"));
    let text = format!("#a = #ttnn.x{}{}\n", "<".repeat(depth), ">".repeat(depth));
    let parse = parse(&text);
    assert!(parse.errors.is_empty(), "{:?}", &parse.errors[..1]);
}

#[test]
fn printer_writes_generic_forms_and_hoists_aliases() {
    check_print(
        r#"#loc1 = loc("early")
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>,
      memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = #ttnn.core_range_set<[#ttnn.core_range<(0, 0), (0, 0)>]>>
module {
  func.func @f(%arg0: tensor<64x64xbf16, #l>, %out: tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> {
    %0 = ttnn.d2m_subgraph @sub
        ins(%arg0 : tensor<64x64xbf16, #l>)
        outs(%out : tensor<64x64xbf16, #l>) : tensor<64x64xbf16, #l>
    %1 = "ttnn.conv2d"(%0) <{
      conv2d_config = #ttnn.conv2d_config<
        weights_dtype = bf16,   // a comment inside
        act_block_h_override = 0
      >,
      dilation = array<i32: 1, 1>
    }> : (tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> loc(#loc1)
    return %1 : tensor<64x64xbf16, #l>
  }
}
"#,
        expect![[r##"
            #l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = #ttnn.core_range_set<[#ttnn.core_range<(0, 0), (0, 0)>]>>
            module {
              func.func @f(%arg0: tensor<64x64xbf16, #l>, %out: tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> {
                %0 = "ttnn.d2m_subgraph"(%arg0, %out) <{d2m_func = @sub, operandSegmentSizes = array<i32: 1, 1>}> : (tensor<64x64xbf16, #l>, tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l>
                %1 = "ttnn.conv2d"(%0) <{conv2d_config = #ttnn.conv2d_config< weights_dtype = bf16, act_block_h_override = 0 >, dilation = array<i32: 1, 1>}> : (tensor<64x64xbf16, #l>) -> tensor<64x64xbf16, #l> loc(#loc1)
                return %1 : tensor<64x64xbf16, #l>
              }
            }
            #loc1 = loc("early")
        "##]],
    );
}

#[test]
fn printer_keeps_a_conv2d_slice_config_as_written() {
    check_print(
        r#"func.func @f(%x: tensor<1x1x64x32xbf16>, %w: tensor<32x32x3x3xbf16>) -> tensor<1x1x64x32xbf16> {
  %0 = "ttnn.conv2d"(%x, %w) <{conv2d_slice_config = #ttnn.conv2d_slice_config<dram_height, 4>, groups = 1 : i32}> : (tensor<1x1x64x32xbf16>, tensor<32x32x3x3xbf16>) -> tensor<1x1x64x32xbf16>
  return %0 : tensor<1x1x64x32xbf16>
}
"#,
        expect![[r#"
            func.func @f(%x: tensor<1x1x64x32xbf16>, %w: tensor<32x32x3x3xbf16>) -> tensor<1x1x64x32xbf16> {
              %0 = "ttnn.conv2d"(%x, %w) <{conv2d_slice_config = #ttnn.conv2d_slice_config<dram_height, 4>, groups = 1 : i32}> : (tensor<1x1x64x32xbf16>, tensor<32x32x3x3xbf16>) -> tensor<1x1x64x32xbf16>
              return %0 : tensor<1x1x64x32xbf16>
            }
        "#]],
    );
}
