//! Hand-written fixtures: the per-op table, the summary and the verifier's diagnostics of each
//! as an inline snapshot.

use expect_test::{Expect, expect};
use opmodel::AnalyticalModel;
use target::Target;

use crate::{evaluate, render_summary, render_table};

/// Layout aliases shared by the fixtures (n150, bf16):
/// * `#d64` / `#d256`: 64x128 / 256x128 in DRAM;
/// * `#hs`: 256x128 height-sharded on 8 cores, 1x4 tiles = 8192 bytes per core;
/// * `#big`: 4096x4096 L1-interleaved, 256 tiles = 524288 bytes per core;
/// * `#huge`: 8192x8192 L1-interleaved, 1024 tiles = 2 MiB per core, more than L1.
const PRELUDE: &str = r#"
#dram = #ttnn.buffer_type<dram>
#l1 = #ttnn.buffer_type<l1>
#d64 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#d256 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#hs = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x1>, memref<1x4x!ttcore.tile<32x32, bf16>, #l1>, <height_sharded>>
#dbig = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<128x128x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#big = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x8>, memref<1x256x!ttcore.tile<32x32, bf16>, #l1>, <interleaved>>
#dhuge = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<256x256x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#huge = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x8>, memref<1x1024x!ttcore.tile<32x32, bf16>, #l1>, <interleaved>>
"#;

#[track_caller]
fn check(fixture: &str, expect: Expect) {
    let text = format!("{PRELUDE}{fixture}");
    let report = evaluate(&text, &Target::n150(), &AnalyticalModel);
    let mut out = render_table(&report);
    out.push_str(&render_summary(&report));
    for d in &report.diagnostics {
        let line =
            text[..d.range.start as usize].lines().count().saturating_sub(PRELUDE.lines().count());
        out.push_str(&format!("{}[{}] line {line}: {}\n", d.severity.as_str(), d.code, d.message));
    }
    expect.assert_eq(&out);
}

#[test]
fn a_dram_chain_is_valid_and_holds_no_l1() {
    check(
        r#"
func.func @f(%a: tensor<64x128xbf16, #d64>, %b: tensor<64x128xbf16, #d64>) -> tensor<64x128xbf16, #d64> {
  %0 = "ttnn.relu"(%a) : (tensor<64x128xbf16, #d64>) -> tensor<64x128xbf16, #d64> loc("relu")
  %1 = "ttnn.add"(%0, %b) : (tensor<64x128xbf16, #d64>, tensor<64x128xbf16, #d64>) -> tensor<64x128xbf16, #d64> loc("add")
  return %1 : tensor<64x128xbf16, #d64>
}
"#,
        expect![[r#"
            func @f
            op    kind       result layout  valid     cb  tensor  output  live L1 before  error
            relu  ttnn.relu  DRAM il        yes     8192       0       0               0
            add   ttnn.add   DRAM il        yes    12288       0       0               0
            ops: 2, valid: 2, violations: 0
            peak L1: 12288 / 1325652 bytes per core (0.9%)
            out of L1: nowhere
        "#]],
    );
}

#[test]
fn a_sharded_value_used_two_ops_later_counts_in_the_live_l1_of_both() {
    // %0 stays live across the gelu because the add reads it; %0 and %1 die at the add.
    check(
        r#"
func.func @f(%a: tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #d256> {
  %0 = "ttnn.relu"(%a) : (tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #hs>
  %1 = "ttnn.gelu"(%0) : (tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #hs>
  %2 = "ttnn.add"(%0, %1) : (tensor<256x128xbf16, #hs>, tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #hs>
  %3 = "ttnn.relu"(%2) : (tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256>
  return %3 : tensor<256x128xbf16, #d256>
}
"#,
        expect![[r#"
            func @f
            op  kind       result layout  valid     cb  tensor  output  live L1 before  error
            %0  ttnn.relu  L1 hs 8        yes     8192    8192    8192               0
            %1  ttnn.gelu  L1 hs 8        yes        0    8192    8192            8192
            %2  ttnn.add   L1 hs 8        yes    12288    8192    8192           16384
            %3  ttnn.relu  DRAM il        yes     8192       0       0            8192
            ops: 4, valid: 4, violations: 0
            peak L1: 36864 / 1325652 bytes per core (2.8%)
            out of L1: nowhere
        "#]],
    );
}

#[test]
fn an_op_that_does_not_fit_next_to_the_live_tensors_is_out_of_l1() {
    // Each big tensor fits on its own; the add needs both inputs and its output at once.
    // The huge tensor does not fit even alone.
    check(
        r#"
func.func @live(%a: tensor<4096x4096xbf16, #dbig>) -> tensor<4096x4096xbf16, #dbig> {
  %0 = "ttnn.relu"(%a) : (tensor<4096x4096xbf16, #dbig>) -> tensor<4096x4096xbf16, #big>
  %1 = "ttnn.gelu"(%a) : (tensor<4096x4096xbf16, #dbig>) -> tensor<4096x4096xbf16, #big>
  %2 = "ttnn.add"(%0, %1) : (tensor<4096x4096xbf16, #big>, tensor<4096x4096xbf16, #big>) -> tensor<4096x4096xbf16, #big>
  %3 = "ttnn.relu"(%2) : (tensor<4096x4096xbf16, #big>) -> tensor<4096x4096xbf16, #dbig>
  return %3 : tensor<4096x4096xbf16, #dbig>
}
func.func @huge(%a: tensor<8192x8192xbf16, #dhuge>) -> tensor<8192x8192xbf16, #huge> {
  %0 = "ttnn.relu"(%a) : (tensor<8192x8192xbf16, #dhuge>) -> tensor<8192x8192xbf16, #huge>
  return %0 : tensor<8192x8192xbf16, #huge>
}
"#,
        expect![[r#"
            func @live
            op  kind       result layout  valid     cb  tensor  output  live L1 before  error
            %0  ttnn.relu  L1 il          yes     8192  524288  524288               0
            %1  ttnn.gelu  L1 il          yes     8192  524288  524288          524288
            %2  ttnn.add   L1 il          NO     12288  524288  524288         1048576  out of L1: needs 1585152 bytes per core (1048576 live + 536576 for the op), 1325652 usable
            %3  ttnn.relu  DRAM il        yes     8192       0       0          524288
            func @huge
            op  kind       result layout  valid  cb  tensor  output  live L1 before  error
            %0  ttnn.relu  L1 il          NO      -       -       -               0  out of L1: the op alone needs 2105344 bytes per core, 1325652 usable
            ops: 5, valid: 3, violations: 2
            peak L1: 2105344 / 1325652 bytes per core (158.8%)
            out of L1 at: %2 (@live op 2), %0 (@huge op 0)
            error[l1-out-of-memory] line 5: out of L1: needs 1585152 bytes per core (1048576 live + 536576 for the op), 1325652 usable
            error[l1-out-of-memory] line 10: out of L1: the op alone needs 2105344 bytes per core, 1325652 usable
        "#]],
    );
}

#[test]
fn a_matmul_with_a_sharded_weight_is_rejected_by_the_op_model() {
    // tt-mlir never shards a matmul's weight (operand 1); the weight here is height-sharded.
    check(
        r#"
#dw = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#whs = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <4x1>, memref<1x8x!ttcore.tile<32x32, bf16>, #l1>, <height_sharded>>
#dout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @f(%a: tensor<256x128xbf16, #d256>, %w: tensor<128x256xbf16, #dw>) -> tensor<256x256xbf16, #dout> {
  %0 = "ttnn.relu"(%w) : (tensor<128x256xbf16, #dw>) -> tensor<128x256xbf16, #whs>
  %1 = "ttnn.matmul"(%a, %0) <{transpose_a = false, transpose_b = false}> : (tensor<256x128xbf16, #d256>, tensor<128x256xbf16, #whs>) -> tensor<256x256xbf16, #dout> loc("mm")
  return %1 : tensor<256x256xbf16, #dout>
}
"#,
        expect![[r#"
            func @f
            op  kind         result layout  valid    cb  tensor  output  live L1 before  error
            %0  ttnn.relu    L1 hs 4        yes    8192   16384   16384               0
            mm  ttnn.matmul  DRAM il        NO        -       -       -           16384  unsupported: ttnn.matmul rejects a height_sharded operand 1
            ops: 2, valid: 1, violations: 1
            peak L1: 24576 / 1325652 bytes per core (1.9%)
            out of L1: nowhere
            error[op-model-rejects] line 7: unsupported: ttnn.matmul rejects a height_sharded operand 1
        "#]],
    );
}

#[test]
fn a_view_shares_the_buffer_of_its_source() {
    // The reshape only relabels %0's L1 buffer, so the add sees 2048 bytes live, not 4096.
    check(
        r#"
#il = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x8>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <interleaved>>
#il3 = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 64 + d1, d2), <8x8>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <interleaved>>
#d3 = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 64 + d1, d2), <1x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @f(%a: tensor<64x128xbf16, #d64>) -> tensor<1x64x128xbf16, #d3> {
  %0 = "ttnn.relu"(%a) : (tensor<64x128xbf16, #d64>) -> tensor<64x128xbf16, #il>
  %1 = "ttnn.reshape"(%0) <{shape = [1 : i32, 64 : i32, 128 : i32]}> : (tensor<64x128xbf16, #il>) -> tensor<1x64x128xbf16, #il3>
  %2 = "ttnn.add"(%0, %1) : (tensor<64x128xbf16, #il>, tensor<1x64x128xbf16, #il3>) -> tensor<1x64x128xbf16, #d3>
  return %2 : tensor<1x64x128xbf16, #d3>
}
"#,
        expect![[r#"
            func @f
            op  kind          result layout  valid     cb  tensor  output  live L1 before  error
            %0  ttnn.relu     L1 il          yes     8192    2048    2048               0
            %1  ttnn.reshape  L1 il          yes        0       0    2048            2048
            %2  ttnn.add      DRAM il        yes    12288       0       0            2048
            ops: 3, valid: 3, violations: 0
            peak L1: 14336 / 1325652 bytes per core (1.1%)
            out of L1: nowhere
        "#]],
    );
}

#[test]
fn an_unknown_op_is_assumed_valid_in_dram_and_a_violation_in_l1() {
    check(
        r#"
func.func @f(%a: tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #d256> {
  %0 = "ttnn.frobnicate"(%a) : (tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #d256>
  %1 = "ttnn.frobnicate"(%0) : (tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #hs>
  %2 = "ttnn.relu"(%1) : (tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256>
  return %2 : tensor<256x128xbf16, #d256>
}
"#,
        expect![[r#"
            func @f
            op  kind             result layout  valid    cb  tensor  output  live L1 before  error
            %0  ttnn.frobnicate  DRAM il        yes       -       -       -               0
            %1  ttnn.frobnicate  L1 hs 8        NO        -       -       -               0  unknown op `ttnn.frobnicate`: the op model does not know it, so it is only assumed valid in DRAM, but it has L1 operands or results
            %2  ttnn.relu        DRAM il        yes    8192       0       0            8192
            ops: 3, valid: 2, violations: 1, unknown to the op model: 2
            peak L1: 16384 / 1325652 bytes per core (1.2%)
            out of L1: nowhere
            warning[unknown-op] line 3: the op model does not know `ttnn.frobnicate`; assumed valid in DRAM only
            error[unknown-op] line 4: unknown op `ttnn.frobnicate`: the op model does not know it, so it is only assumed valid in DRAM, but it has L1 operands or results
        "#]],
    );
}

#[test]
fn deallocate_ends_an_l1_arguments_life_and_a_later_use_is_a_violation() {
    // Without the deallocate the caller-owned argument would stay live to the end (see @kept).
    check(
        r#"
func.func @freed(%a: tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256> {
  %0 = "ttnn.relu"(%a) : (tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256>
  "ttnn.deallocate"(%a) <{force = false}> : (tensor<256x128xbf16, #hs>) -> ()
  %1 = "ttnn.gelu"(%0) : (tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #d256>
  %2 = "ttnn.add"(%1, %a) : (tensor<256x128xbf16, #d256>, tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256>
  return %2 : tensor<256x128xbf16, #d256>
}
"#,
        expect![[r#"
            func @freed
            op                 kind             result layout  valid     cb  tensor  output  live L1 before  error
            %0                 ttnn.relu        DRAM il        yes     8192       0       0            8192
            ttnn.deallocate#0  ttnn.deallocate  -              yes        -       -       -            8192
            %1                 ttnn.gelu        DRAM il        yes     8192       0       0               0
            %2                 ttnn.add         DRAM il        NO     12288       0       0               0  invalid: operand 1 was deallocated by op 1
            ops: 4, valid: 3, violations: 1
            peak L1: 16384 / 1325652 bytes per core (1.2%)
            out of L1: nowhere
            error[use-after-deallocate] line 6: invalid: operand 1 was deallocated by op 1
        "#]],
    );
}

#[test]
fn an_l1_function_argument_is_live_from_the_start_to_the_end() {
    check(
        r#"
func.func @kept(%a: tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256> {
  %0 = "ttnn.relu"(%a) : (tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256>
  %1 = "ttnn.gelu"(%0) : (tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #d256>
  return %1 : tensor<256x128xbf16, #d256>
}
"#,
        expect![[r#"
            func @kept
            op  kind       result layout  valid    cb  tensor  output  live L1 before  error
            %0  ttnn.relu  DRAM il        yes    8192       0       0            8192
            %1  ttnn.gelu  DRAM il        yes    8192       0       0            8192
            ops: 2, valid: 2, violations: 0
            peak L1: 16384 / 1325652 bytes per core (1.2%)
            out of L1: nowhere
        "#]],
    );
}

#[test]
fn a_declared_layout_the_op_does_not_produce_is_a_layout_mismatch() {
    // The shard of a 256x128 tensor on 8 cores is 1x4 tiles, not 2x4; and the gelu's operand
    // claims a layout its producer does not have.
    check(
        r#"
#bad = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #l1>, <height_sharded>>
func.func @f(%a: tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #d256> {
  %0 = "ttnn.relu"(%a) : (tensor<256x128xbf16, #d256>) -> tensor<256x128xbf16, #bad>
  %1 = "ttnn.gelu"(%0) : (tensor<256x128xbf16, #hs>) -> tensor<256x128xbf16, #d256>
  return %1 : tensor<256x128xbf16, #d256>
}
"#,
        expect![[r#"
            func @f
            op  kind       result layout  valid    cb  tensor  output  live L1 before  error
            %0  ttnn.relu  L1 hs 8        NO     8192    8192    8192               0  invalid: the result is declared as `L1 hs 8` (grid 8x1, memref 2x4) but the op produces `L1 hs 8` (grid 8x1, memref 1x4)
            %1  ttnn.gelu  DRAM il        NO     8192       0       0           16384  invalid: operand 0 is declared as `256x128xbf16 L1 hs 8 (memref 1x4)` but its value is `256x128xbf16 L1 hs 8 (memref 2x4)`
            ops: 2, valid: 0, violations: 2
            peak L1: 24576 / 1325652 bytes per core (1.9%)
            out of L1: nowhere
            error[layout-mismatch] line 4: invalid: the result is declared as `L1 hs 8` (grid 8x1, memref 2x4) but the op produces `L1 hs 8` (grid 8x1, memref 1x4)
            warning[layout-shape-mismatch] line 4: layout memref is 2x4, but a 256x128 tensor in this layout needs 1x4
            error[type-mismatch] line 5: operand 0 of `ttnn.gelu` is declared as `tensor<256x128xbf16, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x1>, memref<1x4x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<l1>>, <height_sharded>>>` but `%0` has type `tensor<256x128xbf16, #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <8x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<l1>>, <height_sharded>>>`
        "#]],
    );
}

#[test]
fn operands_without_a_layout_are_taken_as_dram_interleaved() {
    check(
        r#"
func.func @f(%a: tensor<64x128xbf16>) -> tensor<64x128xbf16, #d64> {
  %0 = "ttnn.relu"(%a) : (tensor<64x128xbf16>) -> tensor<64x128xbf16, #d64>
  return %0 : tensor<64x128xbf16, #d64>
}
"#,
        expect![[r#"
            func @f
            op  kind       result layout  valid    cb  tensor  output  live L1 before  error
            %0  ttnn.relu  DRAM il        yes    8192       0       0               0
            ops: 1, valid: 1, violations: 0
            peak L1: 8192 / 1325652 bytes per core (0.6%)
            out of L1: nowhere
            info[missing-layout] line 3: operand 0 of `ttnn.relu` has no layout; taken as DRAM interleaved tile
        "#]],
    );
}

#[test]
fn a_dram_sliced_conv_is_evaluated_by_the_op_model_for_its_largest_slice() {
    // ViT's patch embedding: whole in L1 it is out of memory; in two DRAM height slices each
    // slice fits; a width slicing of its 14-wide tiled output cannot cut it in two.
    check(
        r#"
#x = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 401408 + d1 * 401408 + d2, d3), <1x1>, memref<12544x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 48 + d1 * 16 + d2, d3), <1x1>, memref<2304x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#y = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 1568 + d1 * 1568 + d2, d3), <1x1>, memref<49x24x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @f(%x: tensor<1x1x401408x3xbf16, #x>, %w: tensor<768x3x16x16xbf16, #w>) -> tensor<1x1x1568x768xbf16, #y> {
  %0 = "ttnn.conv2d"(%x, %w) <{batch_size = 8 : i32, conv2d_slice_config = #ttnn.conv2d_slice_config<l1_full, 0>, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 3 : i32, input_height = 224 : i32, input_width = 224 : i32, kernel_size = array<i32: 16, 16>, out_channels = 768 : i32, padding = array<i32: 0, 0, 0, 0>, stride = array<i32: 16, 16>}> : (tensor<1x1x401408x3xbf16, #x>, tensor<768x3x16x16xbf16, #w>) -> tensor<1x1x1568x768xbf16, #y> loc("whole")
  %1 = "ttnn.conv2d"(%x, %w) <{batch_size = 8 : i32, conv2d_slice_config = #ttnn.conv2d_slice_config<dram_height, 2>, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 3 : i32, input_height = 224 : i32, input_width = 224 : i32, kernel_size = array<i32: 16, 16>, out_channels = 768 : i32, padding = array<i32: 0, 0, 0, 0>, stride = array<i32: 16, 16>}> : (tensor<1x1x401408x3xbf16, #x>, tensor<768x3x16x16xbf16, #w>) -> tensor<1x1x1568x768xbf16, #y> loc("height_2")
  %2 = "ttnn.conv2d"(%x, %w) <{batch_size = 8 : i32, conv2d_slice_config = #ttnn.conv2d_slice_config<dram_width, 2>, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 3 : i32, input_height = 224 : i32, input_width = 224 : i32, kernel_size = array<i32: 16, 16>, out_channels = 768 : i32, padding = array<i32: 0, 0, 0, 0>, stride = array<i32: 16, 16>}> : (tensor<1x1x401408x3xbf16, #x>, tensor<768x3x16x16xbf16, #w>) -> tensor<1x1x1568x768xbf16, #y> loc("width_2")
  return %1 : tensor<1x1x1568x768xbf16, #y>
}
"#,
        expect![[r#"
            func @f
            op        kind         result layout  valid      cb  tensor  output  live L1 before  error
            whole     ttnn.conv2d  DRAM il        NO          -       -       -               0  out of L1: the op alone needs 3129472 bytes per core, 1325652 usable
            height_2  ttnn.conv2d  DRAM il        yes    458880  188416       0               0
            width_2   ttnn.conv2d  DRAM il        NO          -       -       -               0  invalid: ttnn.conv2d: 2 slices exceed the 1 a 14-wide sliced output dimension allows
            ops: 3, valid: 1, violations: 2
            peak L1: 3129472 / 1325652 bytes per core (236.1%)
            out of L1 at: whole (@f op 0)
            error[l1-out-of-memory] line 6: out of L1: the op alone needs 3129472 bytes per core, 1325652 usable
            error[wrong-operand-count] line 6: `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
            error[wrong-operand-count] line 7: `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
            error[op-model-rejects] line 8: invalid: ttnn.conv2d: 2 slices exceed the 1 a 14-wide sliced output dimension allows
            error[wrong-operand-count] line 8: `ttnn.conv2d` takes 3 to 4 operand(s), but has 2
        "#]],
    );
}
