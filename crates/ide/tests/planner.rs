//! Planner decisions on small fixtures: which ops keep their layout, which chains fail and
//! why. Each test snapshots the plan report under one policy.

use expect_test::{Expect, expect};
use ide::{AnalysisHost, Change, Options, Policy};
use ttnn_types::TtnnLayout;

fn short(l: Option<&TtnnLayout>) -> String {
    l.map_or_else(|| "-".to_owned(), TtnnLayout::describe)
}

#[track_caller]
fn check(policy: Policy, fixture: &str, expect: Expect) {
    let options = Options { policy, ..Options::tt_mlir_defaults() };
    let mut host = AnalysisHost::new(target::Target::n150(), options);
    host.apply_change(Change::new().set_file("t.mlir", fixture));
    let file = host.file("t.mlir").expect("file is open");
    let report = host.analysis().plan_report(file).expect("not cancelled");
    let mut out = String::new();
    for op in &report.ops {
        out.push_str(&format!(
            "{} {}: {} -> {}\n    {}\n",
            op.func,
            op.op,
            short(op.written.as_ref()),
            short(op.planned.as_ref()),
            op.reason
        ));
        for (k, layout, why) in &op.reshards {
            out.push_str(&format!("    operand {k}: {} ({why})\n", layout.describe()));
        }
        if let Some((layout, why)) = &op.spill {
            out.push_str(&format!("    then: {} ({why})\n", layout.describe()));
        }
    }
    for c in &report.chains {
        let failure = c.failure.as_deref().map(|f| format!(": {f}")).unwrap_or_default();
        out.push_str(&format!("chain {} [{}] {}{failure}\n", c.index, c.ops.join(" "), c.state));
    }
    expect.assert_eq(&out);
}

/// A d2m subgraph pins its operand types. When the declared layout is one no op produces
/// (here a 64x64 tensor in a one-tile block shard), a conversion to it would be invalid
/// too, so the producer keeps the layout it is written with.
#[test]
fn a_producer_feeding_a_d2m_subgraph_an_impossible_layout_keeps_its_layout() {
    check(
        Policy::DfShardingMerge,
        r#"
#dram = #ttnn.buffer_type<dram>
#l1 = #ttnn.buffer_type<l1>
#d = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#odd = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>>
func.func @main(%a: tensor<64x64xbf16, #d>, %b: tensor<64x64xbf16, #d>, %out: tensor<64x64xbf16, #d>) -> tensor<64x64xbf16, #d> {
  %0 = "ttnn.add"(%a, %b) : (tensor<64x64xbf16, #d>, tensor<64x64xbf16, #d>) -> tensor<64x64xbf16, #odd> loc("add")
  %1 = "ttnn.relu"(%0) : (tensor<64x64xbf16, #odd>) -> tensor<64x64xbf16, #odd> loc("relu")
  %2 = ttnn.d2m_subgraph @body
      ins(%1 : tensor<64x64xbf16, #odd>)
      outs(%out : tensor<64x64xbf16, #d>) : tensor<64x64xbf16, #d> loc("d2m")
  return %2 : tensor<64x64xbf16, #d>
}
func.func private @body(%x: tensor<64x64xbf16, #odd>) -> tensor<64x64xbf16, #d> {
  %0 = "ttnn.exp"(%x) : (tensor<64x64xbf16, #odd>) -> tensor<64x64xbf16, #d> loc("exp")
  return %0 : tensor<64x64xbf16, #d>
}
"#,
        expect![[r#"
            main add: L1 block_sharded 1x1, 1x1 tiles per core (bf16) -> L1 block_sharded 1x1, 1x1 tiles per core (bf16)
                kept as written: a consumer with fixed operand types (a d2m subgraph, a call, or an op kept as written) declares this layout, which no op produces, so a conversion to it would be invalid too
            main relu: L1 block_sharded 1x1, 1x1 tiles per core (bf16) -> L1 block_sharded 1x1, 1x1 tiles per core (bf16)
                kept as written: a consumer with fixed operand types (a d2m subgraph, a call, or an op kept as written) declares this layout, which no op produces, so a conversion to it would be invalid too
            main d2m: DRAM interleaved, 2x2 tiles total (bf16) -> DRAM interleaved, 2x2 tiles total (bf16)
                not in an L1 chain: DRAM interleaved
        "#]],
    );
}

/// The spill after a chain is a copy that runs while the sharded output is still resident.
/// Going past tt-mlir, a config that leaves no room for it is not chosen; here none does
/// (the 32x1x18944 f32 tensor pads to 77 MB in tiles), so the chain fails and says why.
#[test]
fn a_chain_whose_output_cannot_be_spilled_fails_and_says_why() {
    check(
        Policy::DfSharding,
        r#"
#dram = #ttnn.buffer_type<dram>
#d = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 32 + d1, d2), <1x1>, memref<32x592x!ttcore.tile<32x32, f32>, #dram>, <interleaved>>
func.func @main(%a: tensor<32x1x18944xf32, #d>, %b: tensor<32x1x18944xf32, #d>) -> tensor<32x1x18944xf32, #d> {
  %0 = "ttnn.multiply"(%a, %b) : (tensor<32x1x18944xf32, #d>, tensor<32x1x18944xf32, #d>) -> tensor<32x1x18944xf32, #d> loc("mul")
  return %0 : tensor<32x1x18944xf32, #d>
}
"#,
        expect![[r#"
            main mul: DRAM interleaved, 32x592 tiles total (f32) -> DRAM interleaved, 32x592 tiles total (f32)
                its chain failed, so the whole chain falls back to DRAM: no config of `%0` leaves room in L1 to spill its output to DRAM: out of L1: needs 1515520 bytes per core, 1325652 available
            chain 0 [mul] failed: no config of `%0` leaves room in L1 to spill its output to DRAM: out of L1: needs 1515520 bytes per core, 1325652 available
        "#]],
    );
}

/// When the op model rejects every output layout (argmax wants a row-major input, whatever
/// it writes), no layout is better than another: the op keeps its written row-major output
/// instead of a guessed tiled one, and its diagnostic does not change.
#[test]
fn an_op_the_op_model_rejects_everywhere_keeps_its_written_layout() {
    check(
        Policy::DfShardingMerge,
        r#"
#dram = #ttnn.buffer_type<dram>
#t = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 32 + d1 * 32 + d2, d3), <1x1>, memref<1x1x!ttcore.tile<32x32, f32>, #dram>, <interleaved>>
#rm = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 1 + d1, d2), <1x1>, memref<1x32xui32, #dram>, <interleaved>>
func.func @main(%x: tensor<1x1x32x32xf32, #t>) -> tensor<1x1x32xui32, #rm> {
  %0 = "ttnn.argmax"(%x) <{dim = 3 : si32, keep_dim = false}> : (tensor<1x1x32x32xf32, #t>) -> tensor<1x1x32xui32, #rm> loc("argmax")
  return %0 : tensor<1x1x32xui32, #rm>
}
"#,
        expect![[r#"
            main argmax: DRAM interleaved, 1x32 elements total (u32, row-major) -> DRAM interleaved, 1x32 elements total (u32, row-major)
                kept as written: the op model rejects every output layout (unsupported: ttnn.argmax needs a row-major input (tt-metal#46340))
        "#]],
    );
}
