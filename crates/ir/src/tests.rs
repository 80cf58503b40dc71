//! Lowering tests: decoded values and semantic diagnostics.

use std::fmt::Write as _;

use expect_test::{Expect, expect};

use crate::{AttrValue, Decoded, ValueRef, lower_parse};

#[track_caller]
fn check(text: &str, expect: Expect) {
    let parse = syntax::parse(text);
    let lowered = lower_parse(text, &parse);
    let mut out = String::new();
    for f in &lowered.funcs {
        let _ = writeln!(out, "func @{} ({} args)", f.name, f.body.args.len());
        for (i, a) in f.body.args.iter().enumerate() {
            if let Some(l) = a.layout() {
                let _ = writeln!(out, "  arg{i}: {}", l.describe());
            }
        }
        for op in &f.body.ops {
            let loc = f.loc_names.of_key(&op.key).map_or(String::new(), |l| format!(" loc={l}"));
            let _ = writeln!(out, "  {} = {}{loc}", op.key, op.name);
            for (k, v) in &op.properties {
                if let Some(d) = v.decoded() {
                    let shown = match d {
                        Decoded::Layout(l) => l.describe(),
                        other => format!("{other:?}"),
                    };
                    let _ = writeln!(out, "    {k}: {shown}");
                }
            }
            for r in &op.results {
                if let Some(l) = r.layout() {
                    let _ = writeln!(out, "    -> {}", l.describe());
                }
            }
        }
    }
    for d in &lowered.diagnostics {
        let _ = writeln!(
            out,
            "{}[{}] {:?}: {}",
            d.severity.as_str(),
            d.code,
            d.range.slice(text),
            d.message
        );
    }
    expect.assert_eq(&out);
}

#[test]
fn layouts_decode_through_aliases_and_inline() {
    check(
        r##"#dram = #ttnn.buffer_type<dram>
#l1_ = #ttnn.buffer_type<l1>
#lay = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#sh = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <2x8>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1_>, <block_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (7,1)>]>>
func.func @f(%a: tensor<64x128xbf16, #lay>, %h: tensor<3x5xf32, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<3x5xf32, #ttnn.buffer_type<system_memory>>>>) -> tensor<64x256xbf16, #sh> {
  %0 = "ttnn.relu"(%a) : (tensor<64x128xbf16, #lay>) -> tensor<64x256xbf16, #sh> loc(#loc1)
  return %0 : tensor<64x256xbf16, #sh>
}
#loc1 = loc("relu_1"("model.py":3:1))
"##,
        expect![[r#"
            func @f (2 args)
              arg0: DRAM interleaved, 2x4 tiles total (bf16)
              arg1: host, 3x5 elements total (f32, row-major)
              %0 = ttnn.relu loc=relu_1
                -> L1 block_sharded 2x8, 1x1 tiles per core (bf16)
        "#]],
    );
}

#[test]
fn op_configs_decode_with_any_key_order() {
    check(
        r##"func.func @f(%x: tensor<1x1x1024x64xbf16>, %w: tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16> {
  %0 = "ttnn.conv2d"(%x, %w) <{conv2d_config = #ttnn.conv2d_config<act_block_h_override = 64, weights_dtype = bfp_bf8, activation = <op_type = relu>, shard_layout = height_sharded, deallocate_activation = true>, batch_size = 1 : i32}> : (tensor<1x1x1024x64xbf16>, tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16>
  %1 = "ttnn.matmul"(%0, %0) <{matmul_program_config = #ttnn.matmul_multi_core_reuse_multi_cast_program_config<compute_with_storage_grid_size = #ttnn.core_coord<8, 8>, in0_block_w = 2, out_subblock_h = 1, out_subblock_w = 4, out_block_h = 4, out_block_w = 4, per_core_m = 4, per_core_n = 4, transpose_mcast = false, fuse_batch = true>}> : (tensor<1x1x1024x64xbf16>, tensor<1x1x1024x64xbf16>) -> tensor<1x1x1024x64xbf16>
  %2 = "ttnn.to_memory_config"(%1) <{memory_config = #ttnn.memory_config<#ttnn.buffer_type<l1>, <block_sharded>, #ttnn.shard_spec<<[#ttnn.core_range<(0,0), (7,0)>]>, <32x128>, <row_major>>>}> : (tensor<1x1x1024x64xbf16>) -> tensor<1x1x1024x64xbf16>
  return %2 : tensor<1x1x1024x64xbf16>
}
"##,
        expect![[r#"
            func @f (2 args)
              %0 = ttnn.conv2d
                conv2d_config: Conv2dConfig(Conv2dConfig { weights_dtype: Some(BfpBF8), activation: Some(UnaryWithParam { op_type: "relu", params: [] }), deallocate_activation: Some(true), reallocate_halo_output: None, act_block_h_override: Some(64), act_block_w_div: None, reshard_if_not_optimal: None, override_sharding_config: None, shard_layout: Some(HeightSharded), core_grid: None, transpose_shards: None, output_layout: None, enable_act_double_buffer: None, enable_weights_double_buffer: None, enable_kernel_stride_folding: None, config_tensors_in_dram: None })
              %1 = ttnn.matmul
                matmul_program_config: MatmulProgramConfig(MultiCast2D { grid: CoreCoord { x: 8, y: 8 }, in0_block_w: 2, out_subblock_h: 1, out_subblock_w: 4, out_block_h: 4, out_block_w: 4, per_core_m: 4, per_core_n: 4, transpose_mcast: false, fused_activation: None, fuse_batch: true })
              %2 = ttnn.to_memory_config
                memory_config: MemoryConfig(MemoryConfig { buffer: L1, memory_layout: Some(BlockSharded), shard_spec: Some(ShardSpec { core_ranges: CoreRangeSet { ranges: [CoreRange { start: CoreCoord { x: 0, y: 0 }, end: CoreCoord { x: 7, y: 0 } }] }, shape: [32, 128], row_major_orientation: true }) })
            error[wrong-operand-count] "\"ttnn.conv2d\"": `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
        "#]],
    );
}

#[test]
fn conv2d_slice_configs_decode_and_bad_ones_are_reported() {
    check(
        r##"func.func @f(%x: tensor<1x1x1024x64xbf16>, %w: tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16> {
  %0 = "ttnn.conv2d"(%x, %w) <{conv2d_slice_config = #ttnn.conv2d_slice_config<dram_height, 4>}> : (tensor<1x1x1024x64xbf16>, tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16>
  %1 = "ttnn.conv2d"(%0, %w) <{conv2d_slice_config = #ttnn.conv2d_slice_config<l1_full, 0>}> : (tensor<1x1x1024x64xbf16>, tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16>
  %2 = "ttnn.conv2d"(%1, %w) <{conv2d_slice_config = #ttnn.conv2d_slice_config<dram_diagonal, 2>}> : (tensor<1x1x1024x64xbf16>, tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16>
  %3 = "ttnn.conv2d"(%2, %w) <{conv2d_slice_config = #ttnn.conv2d_slice_config<dram_width>}> : (tensor<1x1x1024x64xbf16>, tensor<64x64x3x3xbf16>) -> tensor<1x1x1024x64xbf16>
  return %3 : tensor<1x1x1024x64xbf16>
}
"##,
        expect![[r##"
            func @f (2 args)
              %0 = ttnn.conv2d
                conv2d_slice_config: Conv2dSliceConfig(Conv2dSliceConfig { slice_type: DramHeight, num_slices: 4 })
              %1 = ttnn.conv2d
                conv2d_slice_config: Conv2dSliceConfig(Conv2dSliceConfig { slice_type: L1Full, num_slices: 0 })
              %2 = ttnn.conv2d
              %3 = ttnn.conv2d
            error[wrong-operand-count] "\"ttnn.conv2d\"": `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
            error[wrong-operand-count] "\"ttnn.conv2d\"": `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
            error[wrong-operand-count] "\"ttnn.conv2d\"": `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
            error[invalid-attribute] "#ttnn.conv2d_slice_config<dram_diagonal, 2>": invalid `#ttnn.conv2d_slice_config`: unknown conv2d slice type `dram_diagonal`
            error[wrong-operand-count] "\"ttnn.conv2d\"": `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
            error[invalid-attribute] "#ttnn.conv2d_slice_config<dram_width>": invalid `#ttnn.conv2d_slice_config`: a conv2d slice config is `<slice type, number of slices>`
        "##]],
    );
}

#[test]
fn undefined_values_and_type_mismatches_are_reported() {
    check(
        r#"func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xbf16> {
  %0 = "ttnn.relu"(%b) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "ttnn.exp"(%a) : (tensor<4x4xbf16>) -> tensor<4x4xf32>
  %2:2 = "ttnn.split"(%1) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %3 = "ttnn.add"(%2#1, %2#2) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}
"#,
        expect![[r#"
            func @f (1 args)
              %0 = ttnn.relu
              %1 = ttnn.exp
              %2 = ttnn.split
              %3 = ttnn.add
            error[undefined-value] "%b": use of undefined value `%b`
            error[type-mismatch] "%a": operand 0 of `ttnn.exp` is declared as `tensor<4x4xbf16>` but `%a` has type `tensor<4x4xf32>`
            error[invalid-result-number] "%2#2": `%2` has 2 result(s); `#2` is out of range
            error[type-mismatch] "%3": `%3` has type `tensor<4x4xf32>` but `@f` returns `tensor<4x4xbf16>`
        "#]],
    );
}

#[test]
fn malformed_layouts_are_diagnosed_at_their_definition() {
    check(
        r##"#bad = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf17>, #dram>, <interleaved>>
#dram = #ttnn.buffer_type<dram>
#lay = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<9x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @f(%a: tensor<64x128xbf16, #lay>) -> tensor<64x128xbf16, #nope> {
  return %a : tensor<64x128xbf16, #lay>
}
"##,
        expect![[r##"
            func @f (1 args)
              arg0: DRAM interleaved, 9x4 tiles total (bf16)
            error[invalid-attribute] "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf17>, #dram>, <interleaved>>": invalid `#ttnn.ttnn_layout`: unknown tile data type `bf17`
            warning[layout-shape-mismatch] "#lay": layout memref is 9x4, but a 64x128 tensor in this layout needs 2x4
            error[unknown-alias] "#nope": unknown attribute alias `#nope`
            error[type-mismatch] "%a": `%a` has type `tensor<64x128xbf16, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<9x4x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<dram>>, <interleaved>>>` but `@f` returns `tensor<64x128xbf16, #nope>`
        "##]],
    );
}

#[test]
fn attribute_values_keep_their_meaning() {
    let text = r#"func.func @f() {
  "ttnn.x"() <{a = 1 : i32, b = -2, c = 0x10 : ui32, d = array<i32: 1, 2>, e = [3 : i32, 4 : i32], f = "s", g, h = 1.5 : f32, i = @sym}> : () -> ()
  return
}
"#;
    let parse = syntax::parse(text);
    let lowered = lower_parse(text, &parse);
    let op = &lowered.funcs[0].body.ops[0];
    assert_eq!(op.property("a").and_then(AttrValue::as_int), Some(1));
    assert_eq!(op.property("b").and_then(AttrValue::as_int), Some(-2));
    assert_eq!(op.property("c").and_then(AttrValue::as_int), Some(16));
    assert_eq!(op.property("d").and_then(AttrValue::as_ints), Some(vec![1, 2]));
    assert_eq!(op.property("e").and_then(AttrValue::as_ints), Some(vec![3, 4]));
    assert_eq!(op.property("f"), Some(&AttrValue::Str("s".to_owned())));
    assert_eq!(op.property("g"), Some(&AttrValue::Unit));
    assert!(lowered.diagnostics.is_empty(), "{:?}", lowered.diagnostics);
}

#[test]
fn printed_generic_forms_lower_like_their_custom_forms() {
    // `syntax::print` writes these custom forms generically so that MLIR accepts its output
    // without our dialects; the model must not notice the difference.
    let text = r#"#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, f32>, #ttnn.buffer_type<dram>>, <interleaved>>
module {
  ttcore.device_module {
    builtin.module {
      ttcore.device @default_device = <workerGrid = #ttcore.grid<8x8, (d0, d1) -> (0, d0, d1)>, l1Map = (d0, d1, d2)[s0] -> (0, d0, d1, d2 + s0), dramMap = (d0, d1, d2)[s0] -> (0, 0, d0, d1), meshShape = 1x2, chipIds = [0, 1]>
      func.func @f(%a: tensor<32x32xf32, #l>, %o: tensor<32x32xf32, #l>) -> tensor<32x32xf32, #l> {
        %0 = ttnn.d2m_subgraph @sub ins(%a : tensor<32x32xf32, #l>) outs(%o : tensor<32x32xf32, #l>) : tensor<32x32xf32, #l>
        %1:2 = ttcore.load_cached(@f_const_eval_0, [%0]) : (tensor<32x32xf32, #l>) -> (tensor<32x32xf32, #l>, tensor<32x32xf32, #l>)
        return %1#1 : tensor<32x32xf32, #l>
      }
    }
  }
}
"#;
    let parse = syntax::parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    let printed = syntax::print(text, &parse);
    assert!(printed.contains(r#""ttnn.d2m_subgraph"(%a, %o) <{d2m_func = @sub"#), "{printed}");
    assert!(printed.contains(r#""ttcore.load_cached"(%0) <{callee = @f_const_eval_0}>"#));
    assert!(printed.contains(r#""ttcore.device"() <{device = #ttcore.device<"#));

    let custom = lower_parse(text, &parse);
    let reparsed = syntax::parse(&printed);
    let generic = lower_parse(&printed, &reparsed);
    assert!(custom.diagnostics.is_empty(), "{:?}", custom.diagnostics);
    assert!(generic.diagnostics.is_empty(), "{:?}", generic.diagnostics);
    let ops = &custom.funcs[0].body.ops;
    assert_eq!(ops[0].form, crate::OpForm::D2mSubgraph { ins: 1, outs: 1 });
    assert_eq!(ops[0].callee.as_deref(), Some("sub"));
    assert_eq!(ops[1].form, crate::OpForm::LoadCached);
    assert_eq!(generic.funcs[0].body, custom.funcs[0].body);
    assert_eq!(custom.device.as_ref().map(|d| d.chip_ids.clone()), Some(vec![0, 1]));
    assert_eq!(generic.device, custom.device);
}

/// A function of `ops` (one per line, tensors of one type), lowered.
fn lower_ops(ops: &[&str]) -> crate::LoweredFile {
    let mut text = String::from("func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n");
    for op in ops {
        let _ = writeln!(text, "  {op}");
    }
    text.push_str("  return %3 : tensor<4x4xf32>\n}\n");
    let parse = syntax::parse(&text);
    lower_parse(&text, &parse)
}

const RELU: &str = r#""ttnn.relu"(X) : (tensor<4x4xf32>) -> tensor<4x4xf32>"#;

fn relu(result: &str, operand: &str) -> String {
    format!("{result} = {}", RELU.replace('X', operand))
}

#[test]
fn inserting_an_op_leaves_every_other_ops_data_equal() {
    let before = [relu("%0", "%a"), relu("%1", "%0"), relu("%2", "%1"), relu("%3", "%2")];
    let mut after = before.to_vec();
    after.insert(2, relu("%new", "%1"));
    let refs = |v: &[String]| v.iter().map(String::as_str).collect::<Vec<_>>().join("\n");
    let (old, new) = (lower_ops(&[&refs(&before)]), lower_ops(&[&refs(&after)]));
    assert!(old.diagnostics.is_empty() && new.diagnostics.is_empty(), "{:?}", new.diagnostics);
    let (old, new) = (&old.funcs[0].body, &new.funcs[0].body);
    let kept: Vec<_> = new.ops.iter().filter(|o| o.key != "%new").collect();
    assert_eq!(kept.len(), old.ops.len());
    for (a, b) in old.ops.iter().zip(kept) {
        assert_eq!(a, b, "op {} changed", a.key);
    }
    assert_eq!(old.returns, new.returns);
    // The references still resolve, to the ops' new positions.
    let [ValueRef::Result { op, index: 0 }] = new.ops[4].operands[..] else {
        panic!("{:?}", new.ops[4].operands)
    };
    assert_eq!((op.as_str(), new.index_of(op)), ("%2", Some(3)));
    assert_eq!(new.result_of(new.returns[0]), Some((4, 0)));
    assert_eq!(old.result_of(old.returns[0]), Some((3, 0)));
}

#[test]
fn deleting_an_unused_op_leaves_every_other_ops_data_equal() {
    let ops = [relu("%0", "%a"), relu("%x", "%a"), relu("%1", "%0"), relu("%2", "%1")];
    let last = relu("%3", "%2");
    let all: Vec<&str> = ops.iter().chain([&last]).map(String::as_str).collect();
    let without: Vec<&str> = all.iter().copied().filter(|o| !o.starts_with("%x")).collect();
    let (old, new) = (lower_ops(&all), lower_ops(&without));
    let old_kept: Vec<_> = old.funcs[0].body.ops.iter().filter(|o| o.key != "%x").collect();
    let new_ops: Vec<_> = new.funcs[0].body.ops.iter().collect();
    assert_eq!(old_kept, new_ops);
}

#[test]
fn results_resolve_to_their_op_and_flattened_index() {
    let lowered = lower_ops(&[
        r#"%0:2, %1 = "ttnn.x"(%a) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)"#,
        &relu("%2", "%0#1"),
        &relu("%3", "%1"),
    ]);
    assert!(lowered.diagnostics.is_empty(), "{:?}", lowered.diagnostics);
    let body = &lowered.funcs[0].body;
    let resolved: Vec<_> = body.ops.iter().map(|o| body.result_of(o.operands[0])).collect();
    assert_eq!(resolved, [None, Some((0, 1)), Some((0, 2))]);
    let [ValueRef::Result { op, .. }] = body.ops[2].operands[..] else { panic!() };
    assert_eq!(op.as_str(), "%0,%1");
}

#[test]
fn value_definition_errors_are_reported_and_a_repeated_key_resolves_to_its_last_op() {
    check(
        r#"func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "ttnn.relu"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "ttnn.relu"(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "ttnn.exp"(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "ttnn.add"(%1, %0#1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
"#,
        expect![[r#"
            func @f (1 args)
              %0 = ttnn.relu
              %1 = ttnn.relu
              %1 = ttnn.exp
              %2 = ttnn.add
            error[use-before-def] "%1": `%1` is used before it is defined
            error[duplicate-value] "%1": `%1` is defined twice
            error[invalid-result-number] "%0#1": `%0` has 1 result(s); `#1` is out of range
        "#]],
    );
    let text = "func.func @f(%a: tensor<4x4xf32>) {\n  %1 = \"ttnn.relu\"(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>\n  %1 = \"ttnn.exp\"(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>\n  %2 = \"ttnn.add\"(%1, %1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>\n  return\n}\n";
    let lowered = lower_parse(text, &syntax::parse(text));
    let body = &lowered.funcs[0].body;
    assert_eq!(body.result_of(body.ops[2].operands[0]), Some((1, 0)));
}

#[test]
fn an_op_the_model_knows_with_too_few_operands_or_results_is_an_error() {
    check(
        r#"func.func @f(%a: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %0 = "ttnn.matmul"() : () -> tensor<32x32xbf16>
  %1 = "ttnn.matmul"(%a) : (tensor<32x32xbf16>) -> tensor<32x32xbf16>
  %2 = "ttnn.matmul"(%a, %a) : (tensor<32x32xbf16>, tensor<32x32xbf16>) -> tensor<32x32xbf16>
  "ttnn.relu"(%2) : (tensor<32x32xbf16>) -> ()
  %3:2 = "ttnn.concat"(%a, %a, %a) <{dim = 0 : si32}> : (tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>) -> (tensor<96x32xbf16>, tensor<96x32xbf16>)
  %4 = "ttnn.frobnicate"() : () -> tensor<32x32xbf16>
  return %2 : tensor<32x32xbf16>
}
"#,
        expect![[r#"
            func @f (1 args)
              %0 = ttnn.matmul
              %1 = ttnn.matmul
              %2 = ttnn.matmul
              ttnn.relu#0 = ttnn.relu
              %3 = ttnn.concat
              %4 = ttnn.frobnicate
            error[wrong-operand-count] "\"ttnn.matmul\"": `ttnn.matmul` takes 2 operand(s), but has 0
            error[wrong-operand-count] "\"ttnn.matmul\"": `ttnn.matmul` takes 2 operand(s), but has 1
            error[wrong-result-count] "\"ttnn.relu\"": `ttnn.relu` has 1 result(s), but defines 0
            error[wrong-result-count] "\"ttnn.concat\"": `ttnn.concat` has 1 result(s), but defines 2
        "#]],
    );
}

#[test]
fn a_layout_on_a_zero_sized_grid_is_an_error() {
    check(
        r#"func.func @f(%a: tensor<32x32xbf16, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <0x0>, memref<1x1x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<l1>>, <block_sharded>>>) {
  return
}
"#,
        expect![[r##"
            func @f (1 args)
              arg0: L1 block_sharded 0x0, 1x1 tiles per core (bf16)
            error[zero-sized-grid] "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <0x0>, memref<1x1x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<l1>>, <block_sharded>>": the layout's grid is 0x0: a grid needs at least one core in each dimension
        "##]],
    );
}

#[test]
fn a_tensor_whose_bytes_overflow_64_bits_is_an_error() {
    check(
        r#"func.func @f(%a: tensor<18446744073709551615x32xbf16>, %b: tensor<4294967296x4294967296xf32>, %c: tensor<64x64xbf16, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<18446744073709551615x2x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<dram>>, <interleaved>>>) {
  return
}
"#,
        expect![[r##"
            func @f (3 args)
              arg2: DRAM interleaved, 18446744073709551615x2 tiles total (bf16)
            error[tensor-too-large] "tensor<18446744073709551615x32xbf16>": this tensor's size in bytes overflows 64 bits: no device can hold it
            error[tensor-too-large] "tensor<4294967296x4294967296xf32>": this tensor's size in bytes overflows 64 bits: no device can hold it
            error[tensor-too-large] "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<18446744073709551615x2x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<dram>>, <interleaved>>": this layout's shard size in bytes overflows 64 bits: no core can hold it
            warning[layout-shape-mismatch] "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<18446744073709551615x2x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<dram>>, <interleaved>>": layout memref is 18446744073709551615x2, but a 64x64 tensor in this layout needs 2x2
        "##]],
    );
}

#[test]
fn every_op_is_located_in_the_group_whose_range_holds_it() {
    let keys: Vec<crate::Name> =
        (0..2_000).map(|i| crate::Name::new(&format!("located_op_{i}"))).collect();
    let groups = crate::GroupLayout::of_keys(&keys);
    assert!(groups.len() > 10, "2,000 ops make more than ten groups");
    for g in 0..groups.len() as u32 {
        for (at, i) in groups.range(g).enumerate() {
            assert_eq!(groups.locate(i), Some((g, at)));
        }
    }
    assert_eq!(groups.locate(keys.len()), None);
    assert_eq!(crate::GroupLayout::of_keys(&[]).locate(0), None);
}
