//! One small fixture per op rule: the model's answer (bytes, output layout, config) or its
//! classified error, as an inline snapshot.

use expect_test::{Expect, expect};
use target::Target;
use ttnn_types::{
    Conv2dConfig, Conv2dSliceConfig, Conv2dSliceType, DataType, DeviceComputeKernelConfig, Grid,
    MatmulProgramConfig, PageLayout, TensorMemoryLayout, TtnnLayout,
};

use crate::{
    AnalyticalModel, CachedOpModel, MatmulShapes, OpConfig, OpError, OpKind, OpModel, OpQuery,
    OutputHint, TensorDesc,
    calibration::{AttrValue, Attrs},
    generate_matmul_program_config, op_kind,
};

const W: Grid = Grid::new(8, 8);
const BF16: DataType = DataType::BF16;

fn dram(shape: &[u64]) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, BF16, PageLayout::Tile)
}
fn rm(shape: &[u64]) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, BF16, PageLayout::RowMajor)
}
fn l1(shape: &[u64]) -> TtnnLayout {
    TtnnLayout::l1_interleaved(shape, BF16, PageLayout::Tile, W)
}
fn shard(shape: &[u64], ml: TensorMemoryLayout, rows: u64, cols: u64) -> TtnnLayout {
    TtnnLayout::sharded(shape, BF16, PageLayout::Tile, ml, Grid::new(rows, cols), W).unwrap()
}
fn hs(shape: &[u64], n: u64) -> TtnnLayout {
    shard(shape, TensorMemoryLayout::HeightSharded, n, 1)
}
fn ws(shape: &[u64], n: u64) -> TtnnLayout {
    shard(shape, TensorMemoryLayout::WidthSharded, 1, n)
}
fn bs(shape: &[u64], r: u64, c: u64) -> TtnnLayout {
    shard(shape, TensorMemoryLayout::BlockSharded, r, c)
}

/// A query under construction.
#[derive(Clone)]
struct Q(OpQuery);

fn q(name: &str) -> Q {
    qa(name, vec![])
}

fn qa(name: &str, attrs: Vec<(&'static str, AttrValue)>) -> Q {
    Q(OpQuery {
        kind: op_kind(name, &Attrs(attrs)),
        inputs: Vec::new(),
        output_shape: Vec::new(),
        output_dtype: BF16,
        output: OutputHint::Null,
        config: OpConfig::None,
        l1_in_use: 0,
    })
}

impl Q {
    fn input(mut self, shape: &[u64], layout: TtnnLayout) -> Q {
        self.0.inputs.push(TensorDesc::new(shape, layout));
        self
    }
    fn out(mut self, shape: &[u64]) -> Q {
        self.0.output_shape = shape.to_vec();
        self
    }
    fn dtype(mut self, dt: DataType) -> Q {
        self.0.output_dtype = dt;
        self
    }
    fn hint(mut self, l: TtnnLayout) -> Q {
        self.0.output = OutputHint::Layout(l);
        self
    }
    fn partial(mut self, l: TtnnLayout) -> Q {
        self.0.output = OutputHint::Partial(l.partial());
        self
    }
    fn config(mut self, c: OpConfig) -> Q {
        self.0.config = c;
        self
    }
    fn in_use(mut self, bytes: u64) -> Q {
        self.0.l1_in_use = bytes;
        self
    }
    fn run(&self) -> Result<crate::OpConstraints, OpError> {
        AnalyticalModel.query(&Target::n150(), &self.0)
    }
}

fn render(q: &Q, res: &Result<crate::OpConstraints, OpError>) -> String {
    match res {
        Err(e) => format!("error: {e}"),
        Ok(c) => {
            // Every output layout must be the canonical one for the output shape.
            if let Some(memref) = c.output_layout.expected_memref_shape(&q.0.output_shape, W) {
                assert_eq!(
                    memref[..],
                    c.output_layout.memref_shape[..],
                    "non-canonical output layout"
                );
            }
            let mut s = format!(
                "cb {} tensor {} peak {} out {}\n{}",
                c.cb_peak,
                c.tensor_peak,
                c.peak,
                c.output_bytes,
                c.output_layout.describe()
            );
            match &c.config {
                OpConfig::None => {}
                OpConfig::Matmul { program: None, .. } => {
                    s.push_str("\nprogram: picked by tt-metal")
                }
                OpConfig::Matmul { program: Some(p), .. } => {
                    s.push_str(&format!("\nprogram: {}", program_text(p)))
                }
                OpConfig::Conv2d { conv, slice, .. } => {
                    s.push_str(&format!(
                        "\nconv: shard_layout {:?}",
                        conv.shard_layout.map(|m| m.keyword())
                    ));
                    if let Some(slice) = slice {
                        s.push_str(&format!(", {slice}"));
                    }
                }
            }
            s
        }
    }
}

fn program_text(p: &MatmulProgramConfig) -> String {
    let (pm, pn) = p.per_core();
    let (sh, sw) = p.out_subblock();
    let grid = match p {
        MatmulProgramConfig::MultiCast2D { grid, .. }
        | MatmulProgramConfig::MultiCast1D { grid, .. }
        | MatmulProgramConfig::MultiCoreReuse { grid, .. } => format!("{}x{}", grid.x, grid.y),
        MatmulProgramConfig::DramSharded { .. } => "-".to_owned(),
    };
    let act = match p {
        MatmulProgramConfig::MultiCast2D { fused_activation: Some(a), .. }
        | MatmulProgramConfig::MultiCast1D { fused_activation: Some(a), .. } => {
            format!(" act {}", a.op_type)
        }
        _ => String::new(),
    };
    format!(
        "{} grid(x,y) {grid} per_core {pm}x{pn} in0_block_w {} subblock {sh}x{sw}{act}",
        p.kind_name(),
        p.in0_block_w()
    )
}

#[track_caller]
fn check(q: Q, expect: Expect) {
    let res = q.run();
    expect.assert_eq(&render(&q, &res));
}

// ---- op kinds -------------------------------------------------------------------------------

#[test]
fn op_kind_reads_matmul_attributes() {
    let k = op_kind(
        "ttnn.linear",
        &Attrs(vec![
            ("transpose_b", AttrValue::Bool(true)),
            ("activation", AttrValue::Str("relu")),
        ]),
    );
    expect![[
        r#"Linear(MatmulAttrs { transpose_a: false, transpose_b: true, activation: Some("relu") })"#
    ]]
    .assert_eq(&format!("{k:?}"));
    assert_eq!(k.name(), "ttnn.linear");
    assert!(k.is_matmul_like() && k.is_known());
}

#[test]
fn unknown_ops_keep_their_name_and_are_not_known() {
    let k = op_kind("ttnn.frobnicate", &());
    assert_eq!(k, OpKind::Unknown("ttnn.frobnicate".to_owned()));
    assert_eq!(k.name(), "ttnn.frobnicate");
    assert!(!k.is_known());
}

#[test]
fn chain_whitelist_matches_the_legacy_sharding_policy() {
    let names = [
        "ttnn.conv2d",
        "ttnn.conv_transpose2d",
        "ttnn.add",
        "ttnn.multiply",
        "ttnn.relu",
        "ttnn.relu6",
        "ttnn.silu",
        "ttnn.matmul",
        "ttnn.linear",
        "ttnn.minimum",
        "ttnn.gelu",
        "ttnn.neg",
        "ttnn.rsqrt",
        "ttnn.concat",
        "ttnn.pow_scalar",
        "ttnn.rotary_embedding",
        "ttnn.d2m_subgraph",
    ];
    for n in names {
        assert!(op_kind(n, &()).is_chain_shardable(), "{n}");
    }
    for n in [
        "ttnn.subtract",
        "ttnn.softmax",
        "ttnn.rms_norm",
        "ttnn.reshape",
        "ttnn.slice_static",
        "ttnn.sum",
    ] {
        assert!(!op_kind(n, &()).is_chain_shardable(), "{n}");
    }
}

#[test]
fn core_shrink_hazard_covers_add_multiply_and_minimum_only() {
    let hazard: Vec<&str> = crate::BinaryOp::ALL
        .iter()
        .filter(|op| OpKind::Binary(**op).rejects_eltwise_core_shrink())
        .map(|op| op.name())
        .collect();
    expect![[r#"["ttnn.add", "ttnn.multiply", "ttnn.minimum"]"#]].assert_eq(&format!("{hazard:?}"));
}

#[test]
fn predicates_classify_ops() {
    assert!(op_kind("ttnn.sum", &()).is_reduction());
    assert!(!op_kind("ttnn.prod", &()).is_reduction());
    assert_eq!(
        op_kind("ttnn.concat", &Attrs(vec![("dim", AttrValue::Int(-1))])).is_concat(),
        Some(-1)
    );
    assert!(op_kind("ttnn.reshape", &()).is_reshape());
    assert!(op_kind("ttnn.conv_transpose2d", &()).is_conv2d_like());
    assert!(op_kind("ttnn.d2m_subgraph", &()).is_d2m_subgraph());
    for n in [
        "ttnn.empty",
        "ttnn.to_tensor_spec",
        "ttnn.get_device",
        "ttnn.deallocate",
        "ttnn.to_layout",
    ] {
        assert!(op_kind(n, &()).has_fixed_output_layout(), "{n}");
    }
    assert!(!op_kind("ttnn.zeros", &()).has_fixed_output_layout());
    assert!(op_kind("ttnn.scaled_dot_product_attention", &()).null_hint_only());
}

#[test]
fn conv_attributes_give_the_output_size() {
    let k = op_kind(
        "ttnn.conv2d",
        &Attrs(vec![
            ("in_channels", AttrValue::Int(3)),
            ("out_channels", AttrValue::Int(64)),
            ("batch_size", AttrValue::Int(1)),
            ("input_height", AttrValue::Int(224)),
            ("input_width", AttrValue::Int(224)),
            ("kernel_size", AttrValue::Ints(vec![7, 7])),
            ("stride", AttrValue::Ints(vec![2, 2])),
            ("padding", AttrValue::Ints(vec![3, 3])),
            ("dilation", AttrValue::Ints(vec![1, 1])),
            ("groups", AttrValue::Int(1)),
        ]),
    );
    let OpKind::Conv2d(a) = k else { panic!("not a conv") };
    assert_eq!(a.output_hw(false), (112, 112));
}

// ---- budget ---------------------------------------------------------------------------------

#[test]
fn a_query_is_valid_iff_peak_plus_live_l1_fits_the_budget() {
    let s = [64, 1024];
    let base = || q("ttnn.relu").input(&s, dram(&s)).out(&s).hint(l1(&s));
    let usable = Target::n150().usable_l1_per_core();
    // peak is 10240 bytes.
    assert!(base().in_use(usable - 10240).run().is_ok());
    check(
        base().in_use(usable - 10239),
        expect![[r#"error: out of L1: needs 1325653 bytes per core, 1325652 available"#]],
    );
}

#[test]
fn a_huge_output_is_out_of_memory() {
    let s = [8192, 16384];
    check(
        q("ttnn.relu").input(&s, dram(&s)).out(&s).hint(hs(&s, 8)),
        expect!["error: out of L1: needs 33562624 bytes per core, 1325652 available"],
    );
}

#[test]
fn errors_are_lowercase_and_name_numbers() {
    let errors = [
        OpError::OutOfMemory { needed: 2, available: 1 },
        OpError::Unsupported { reason: "x rejects y".to_owned() },
        OpError::Invalid { reason: "shapes differ".to_owned() },
        OpError::UnknownOp { name: "ttnn.foo".to_owned() },
    ];
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    expect![[r#"
        out of L1: needs 2 bytes per core, 1 available
        unsupported: x rejects y
        invalid: shapes differ
        the op model does not know ttnn.foo"#]]
    .assert_eq(&text.join("\n"));
}

// ---- eltwise --------------------------------------------------------------------------------

#[test]
fn unary_with_a_null_hint_keeps_a_dram_input_in_dram() {
    let s = [64, 1024];
    check(
        q("ttnn.exp").input(&s, dram(&s)).out(&s),
        expect![[r#"
            cb 8192 tensor 0 peak 8192 out 0
            DRAM interleaved, 2x32 tiles total (bf16)"#]],
    );
}

#[test]
fn unary_with_a_null_hint_inherits_a_sharded_input_and_aliases_its_cbs() {
    let s = [1024, 64];
    check(
        q("ttnn.gelu").input(&s, bs(&s, 4, 2)).out(&s),
        expect![[r#"
            cb 0 tensor 16384 peak 16384 out 16384
            L1 block_sharded 4x2, 8x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn unary_with_a_null_hint_keeps_l1_interleaved() {
    let s = [64, 1024];
    check(
        q("ttnn.sigmoid").input(&s, l1(&s)).out(&s),
        expect![[r#"
            cb 8192 tensor 2048 peak 10240 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn unary_rejects_a_sharded_output_unlike_its_sharded_input() {
    let s = [1024, 64];
    check(
        q("ttnn.relu").input(&s, hs(&s, 32)).out(&s).hint(hs(&s, 16)),
        expect![
            "error: unsupported: ttnn.relu: sharded operand 0 (L1 height_sharded 32x1, 1x2 tiles per core (bf16)) and the sharded output (L1 height_sharded 16x1, 2x2 tiles per core (bf16)) differ; an implicit reshard is not modelled"
        ],
    );
}

#[test]
fn unary_can_read_a_sharded_input_into_an_interleaved_output() {
    let s = [1024, 64];
    check(
        q("ttnn.relu").input(&s, hs(&s, 32)).out(&s).hint(l1(&s)),
        expect![[r#"
            cb 8192 tensor 2048 peak 10240 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn unary_rejects_a_shape_change() {
    check(
        q("ttnn.relu").input(&[64, 64], dram(&[64, 64])).out(&[64, 32]),
        expect![[
            r#"error: invalid: ttnn.relu maps 64x64 to 64x32, an elementwise op keeps the shape"#
        ]],
    );
}

#[test]
fn binary_broadcasts_compatible_shapes() {
    let (a, b) = ([8, 64, 128], [1, 128]);
    check(
        q("ttnn.multiply").input(&a, dram(&a)).input(&b, dram(&b)).out(&a),
        expect![[r#"
            cb 12288 tensor 0 peak 12288 out 0
            DRAM interleaved, 16x4 tiles total (bf16)"#]],
    );
}

#[test]
fn binary_rejects_shapes_that_do_not_broadcast() {
    let (a, b) = ([64, 128], [64, 96]);
    check(
        q("ttnn.add").input(&a, dram(&a)).input(&b, dram(&b)).out(&a),
        expect![[r#"error: invalid: ttnn.add: operand shapes 64x128, 64x96 do not broadcast"#]],
    );
}

#[test]
fn a_binary_op_asked_for_row_major_pages_produces_tiles() {
    let s = [32, 32];
    check(
        q("ttnn.add").input(&s, dram(&s)).input(&s, dram(&s)).out(&s).hint(rm(&s)),
        expect![[r#"
            cb 12288 tensor 0 peak 12288 out 0
            DRAM interleaved, 1x1 tiles total (bf16)"#]],
    );
}

#[test]
fn add_rejects_an_eltwise_core_shrink() {
    let s = [2048, 64];
    check(
        q("ttnn.add").input(&s, hs(&s, 64)).input(&s, hs(&s, 64)).out(&s).hint(hs(&s, 32)),
        expect![[
            r#"error: unsupported: ttnn.add may not shrink 64 sharded input cores to 32 output cores (the implicit core shrink hangs, tt-metal#34765)"#
        ]],
    );
}

#[test]
fn subtract_has_no_core_shrink_rule_but_still_needs_matching_shards() {
    let s = [2048, 64];
    check(
        q("ttnn.subtract").input(&s, hs(&s, 64)).input(&s, dram(&s)).out(&s).hint(hs(&s, 32)),
        expect![
            "error: unsupported: ttnn.subtract: sharded operand 0 (L1 height_sharded 64x1, 1x2 tiles per core (bf16)) and the sharded output (L1 height_sharded 32x1, 2x2 tiles per core (bf16)) differ; an implicit reshard is not modelled"
        ],
    );
}

#[test]
fn binary_with_matching_shards_keeps_three_double_buffered_cbs() {
    let s = [2048, 64];
    check(
        q("ttnn.add").input(&s, hs(&s, 64)).input(&s, hs(&s, 64)).out(&s),
        expect![[r#"
            cb 12288 tensor 4096 peak 16384 out 4096
            L1 height_sharded 64x1, 1x2 tiles per core (bf16)"#]],
    );
}

#[test]
fn a_sharded_broadcast_operand_is_rejected() {
    let (a, b) = ([2048, 64], [1, 64]);
    check(
        q("ttnn.add").input(&a, hs(&a, 64)).input(&b, hs(&b, 1)).out(&a),
        expect![[
            r#"error: unsupported: ttnn.add: sharded operand 1 is broadcast (1x64 to 2048x64); broadcast operands must be interleaved"#
        ]],
    );
}

#[test]
fn where_checks_three_way_broadcast() {
    let (a, b) = ([32, 64], [1, 64]);
    check(
        q("ttnn.where").input(&a, dram(&a)).input(&b, dram(&b)).input(&[1], dram(&[1])).out(&a),
        expect![[r#"
            cb 16384 tensor 0 peak 16384 out 0
            DRAM interleaved, 1x2 tiles total (bf16)"#]],
    );
}

#[test]
fn typecast_counts_input_and_output_tile_sizes() {
    let s = [64, 1024];
    check(
        q("ttnn.typecast").input(&s, dram(&s)).out(&s).dtype(DataType::BfpBF8),
        expect![[r#"
            cb 6272 tensor 0 peak 6272 out 0
            DRAM interleaved, 2x32 tiles total (bfp_bf8)"#]],
    );
}

#[test]
fn host_operands_are_invalid_for_device_ops() {
    let s = [32, 32];
    let host = TtnnLayout::system_memory(&s, ttnn_types::ScalarType::BF16);
    check(
        q("ttnn.relu").input(&s, host).out(&s),
        expect![[
            r#"error: invalid: ttnn.relu operand 0 is in system_memory memory, not on device"#
        ]],
    );
}

#[test]
fn missing_operands_are_invalid_not_a_panic() {
    check(
        q("ttnn.add").input(&[32, 32], dram(&[32, 32])).out(&[32, 32]),
        expect![[r#"error: invalid: ttnn.add needs operand 1, the query has 1 tensor operands"#]],
    );
}

// ---- matmul ---------------------------------------------------------------------------------

fn mm(m: u64, k: u64, n: u64, a: TtnnLayout, b: TtnnLayout) -> Q {
    q("ttnn.matmul").input(&[m, k], a).input(&[k, n], b).out(&[m, n])
}

#[test]
fn matmul_rejects_a_sharded_weight_operand() {
    let s = [1792, 1792];
    check(
        mm(1792, 1792, 1792, bs(&s, 7, 8), bs(&s, 7, 8)).hint(bs(&s, 7, 8)),
        expect![[r#"error: unsupported: ttnn.matmul rejects a block_sharded operand 1"#]],
    );
    check(
        mm(1792, 1792, 1792, bs(&s, 7, 8), hs(&s, 56)),
        expect![[r#"error: unsupported: ttnn.matmul rejects a height_sharded operand 1"#]],
    );
}

#[test]
fn matmul_with_a_null_hint_writes_dram_even_from_sharded_inputs() {
    let s = [1792, 1792];
    check(
        mm(1792, 1792, 1792, bs(&s, 7, 8), dram(&s)),
        expect![[r#"
            cb 544832 tensor 0 peak 544832 out 0
            DRAM interleaved, 56x56 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn matmul_2048_cube_in_dram_uses_the_2d_mcast_cbs() {
    let s = [2048, 2048];
    check(
        mm(2048, 2048, 2048, dram(&s), dram(&s)),
        expect![[r#"
            cb 655360 tensor 0 peak 655360 out 0
            DRAM interleaved, 64x64 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn matmul_with_an_l1_input_takes_tt_metals_square_16_tile_blocks() {
    // Not all-DRAM, so tt-metal's simple picker takes the largest square block its estimate
    // fits (16x16 tiles, K two tiles at a time) on a 4x4 grid: 2*16*2 + 2*16*2 + 16*16 tiles.
    let s = [2048, 2048];
    check(
        mm(2048, 2048, 2048, l1(&s), dram(&s)),
        expect![[r#"
            cb 786432 tensor 0 peak 786432 out 0
            DRAM interleaved, 64x64 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn matmul_with_an_l1_interleaved_output_adds_the_output_to_the_tensor_peak() {
    // An L1 output also leaves the all-DRAM path, so the blocks are the square 16x16 ones.
    let s = [2048, 2048];
    check(
        mm(2048, 2048, 2048, dram(&s), dram(&s)).hint(l1(&s)),
        expect![[r#"
            cb 786432 tensor 131072 peak 917504 out 131072
            L1 interleaved, 1x64 tiles per core (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn a_wide_dram_matmul_reads_k_two_tiles_at_a_time() {
    // A decode LM head (Mt 1, Kt 64, Nt 4096) is 1D mcast_in0 with 64 N tiles per core; tt-metal
    // takes in0_block_w 2, so CB = 2*1*2 + 2*64*2 + 1*64 tiles = 324 tiles.
    let (a, b) = ([32, 2048], [2048, 131072]);
    check(
        mm(32, 2048, 131072, dram(&a), dram(&b)),
        expect![[r#"
            cb 663552 tensor 0 peak 663552 out 0
            DRAM interleaved, 1x4096 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn a_wide_dram_matmul_shrinks_its_out_block_until_tt_metals_estimate_fits() {
    // A prefill LM head: per core 17x64 tiles, far over L1. tt-metal tries divisor blocks by
    // area and takes 17x16 (its estimate 1384448 B is under the 1395424 B above the reserved
    // base), so CB = 2*17*2 + 2*16*2 + 17*16 tiles = 404 tiles.
    let (a, b) = ([544, 2048], [2048, 131072]);
    check(
        mm(544, 2048, 131072, dram(&a), dram(&b)),
        expect![[r#"
            cb 827392 tensor 0 peak 827392 out 0
            DRAM interleaved, 17x4096 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn live_l1_makes_the_auto_picked_matmul_block_smaller() {
    // With 200 KB live, 17x16 no longer fits tt-metal's estimate; the next area down is 17x8.
    let (a, b) = ([544, 2048], [2048, 131072]);
    check(
        mm(544, 2048, 131072, dram(&a), dram(&b)).in_use(200_000),
        expect![[r#"
            cb 483328 tensor 0 peak 483328 out 0
            DRAM interleaved, 17x4096 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn matmul_block_sharded_in0_and_output_fall_back_to_the_in0_derived_config() {
    let s = [1792, 1792];
    check(
        mm(1792, 1792, 1792, bs(&s, 7, 8), dram(&s)).hint(bs(&s, 7, 8)),
        expect![[r#"
            cb 430144 tensor 114688 peak 544832 out 114688
            L1 block_sharded 7x8, 8x7 tiles per core (bf16)
            program: 2D mcast grid(x,y) 8x7 per_core 8x7 in0_block_w 7 subblock 8x1"#]],
    );
}

#[test]
fn matmul_partial_block_sharded_hint_takes_its_grid_from_the_generated_config() {
    let s = [1792, 1792];
    check(
        mm(1792, 1792, 1792, dram(&s), dram(&s)).partial(bs(&s, 7, 8)),
        expect![[r#"
            cb 114688 tensor 100352 peak 215040 out 100352
            L1 block_sharded 8x8, 7x7 tiles per core (bf16)
            program: 2D mcast grid(x,y) 8x8 per_core 7x7 in0_block_w 2 subblock 1x7"#]],
    );
}

#[test]
fn matmul_width_sharded_in0_and_output_use_mcast_in0() {
    let (a, b, o) = ([32, 1792], [1792, 1792], [32, 1792]);
    check(
        q("ttnn.matmul").input(&a, ws(&a, 56)).input(&b, dram(&b)).out(&o).hint(ws(&o, 56)),
        expect![[r#"
            cb 8256 tensor 2048 peak 10304 out 2048
            L1 width_sharded 1x56, 1x1 tiles per core (bf16)
            program: 1D mcast_in0 grid(x,y) 8x8 per_core 1x1 in0_block_w 1 subblock 1x1"#]],
    );
}

/// The first linear of a batch-1 f32 MLP (1x640 x 640x256) asked, as the shard solver asks
/// it, for a width-sharded output with the config tt-mlir generates for one core: tt-mlir
/// counts 8 DST tiles and makes the subblock 1x8, but tt-metal runs an f32 matmul with no
/// compute config in fp32 accumulation, which halves DST to 4 tiles, and rejects it; on two
/// cores (subblock 1x4), or in bf16, the same query passes.
#[test]
fn an_f32_matmul_without_a_compute_config_has_half_the_dst_tiles_for_its_subblock() {
    let f32_ws = |shape: &[u64], n: u64| {
        let g = Grid::new(1, n);
        let ws = TensorMemoryLayout::WidthSharded;
        TtnnLayout::sharded(shape, DataType::F32, PageLayout::Tile, ws, g, W).unwrap()
    };
    let f32_dram =
        |shape: &[u64]| TtnnLayout::dram_interleaved(shape, DataType::F32, PageLayout::Tile);
    let (a, b, o) = ([1, 640], [640, 256], [1, 256]);
    let shapes = MatmulShapes { a: &a, b: &b, out: &o, transpose_a: false, transpose_b: false };
    let probe = |out: TtnnLayout, a_layout: TtnnLayout, b_layout: TtnnLayout, dt: DataType| {
        let program = generate_matmul_program_config(&shapes, &out, None, None).map(Box::new);
        q("ttnn.matmul")
            .input(&a, a_layout)
            .input(&b, b_layout)
            .out(&o)
            .dtype(dt)
            .partial(out)
            .config(OpConfig::Matmul { program, compute: None })
    };
    check(
        probe(f32_ws(&o, 1), f32_dram(&a), f32_dram(&b), DataType::F32),
        expect![
            "error: unsupported: ttnn.matmul: 1D mcast_in0 program config: subblock 1x8 exceeds the 4 DST tiles"
        ],
    );
    check(
        probe(f32_ws(&o, 2), f32_dram(&a), f32_dram(&b), DataType::F32),
        expect![[r#"
            cb 163840 tensor 16384 peak 180224 out 16384
            L1 width_sharded 1x2, 1x4 tiles per core (f32)
            program: 1D mcast_in0 grid(x,y) 2x1 per_core 1x4 in0_block_w 4 subblock 1x4"#]],
    );
    check(
        probe(ws(&o, 1), dram(&a), dram(&b), BF16),
        expect![[r#"
        cb 147456 tensor 16384 peak 163840 out 16384
        L1 width_sharded 1x1, 1x8 tiles per core (bf16)
        program: 1D mcast_in0 grid(x,y) 1x1 per_core 1x8 in0_block_w 4 subblock 1x8"#]],
    );
}

#[test]
fn matmul_height_sharded_output_generates_mcast_in1() {
    let (a, b, o) = ([1792, 32], [32, 1792], [1792, 1792]);
    check(
        q("ttnn.matmul").input(&a, hs(&a, 56)).input(&b, dram(&b)).out(&o).hint(hs(&o, 56)),
        expect![[r#"
            cb 114688 tensor 114688 peak 229376 out 114688
            L1 height_sharded 56x1, 1x56 tiles per core (bf16)
            program: 1D mcast_in1 grid(x,y) 8x7 per_core 1x56 in0_block_w 1 subblock 1x8"#]],
    );
}

#[test]
fn matmul_moves_the_activation_into_the_generated_config() {
    let s = [1024, 1024];
    check(
        qa("ttnn.linear", vec![("activation", AttrValue::Str("gelu"))])
            .input(&s, dram(&s))
            .input(&s, dram(&s))
            .out(&s)
            .hint(bs(&s, 8, 8)),
        expect![[r#"
            cb 65536 tensor 32768 peak 98304 out 32768
            L1 block_sharded 8x8, 4x4 tiles per core (bf16)
            program: 2D mcast grid(x,y) 8x8 per_core 4x4 in0_block_w 2 subblock 1x4 act gelu"#]],
    );
}

#[test]
fn matmul_with_batched_b_has_no_sharded_output() {
    let (a, b, o) = ([4, 256, 256], [4, 256, 256], [4, 256, 256]);
    check(
        q("ttnn.matmul").input(&a, dram(&a)).input(&b, dram(&b)).out(&o).hint(hs(&o, 32)),
        expect![
            "error: unsupported: ttnn.matmul: a sharded output needs a generated program config, and none exists for L1 height_sharded 32x1, 1x8 tiles per core (bf16) (B batched or output not L1-sharded, tt-metal#42572)"
        ],
    );
}

#[test]
fn matmul_with_batched_b_and_an_interleaved_output_is_fine() {
    let (a, b, o) = ([4, 256, 256], [4, 256, 256], [4, 256, 256]);
    check(
        q("ttnn.matmul").input(&a, dram(&a)).input(&b, dram(&b)).out(&o),
        expect![[r#"
            cb 655360 tensor 0 peak 655360 out 0
            DRAM interleaved, 32x8 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn generated_height_sharded_config_ignores_the_batch_like_upstream() {
    // Mt comes from the output's second-last dim only, so 4 x 8 tile rows do not fit 8 blocks.
    let (a, b, o) = ([4, 256, 64], [64, 64], [4, 256, 64]);
    check(
        q("ttnn.matmul").input(&a, dram(&a)).input(&b, dram(&b)).out(&o).hint(hs(&o, 8)),
        expect![
            "error: unsupported: ttnn.matmul: 1D mcast_in1 program config: the output shard 4x2 tiles differs from the per-core block 1x2"
        ],
    );
}

#[test]
fn matmul_rejects_mismatched_inner_dims() {
    check(
        q("ttnn.matmul")
            .input(&[64, 128], dram(&[64, 128]))
            .input(&[96, 64], dram(&[96, 64]))
            .out(&[64, 64]),
        expect![[
            r#"error: invalid: ttnn.matmul: inner dims differ: A 64x128 has K = 128, B 96x64 has K = 96"#
        ]],
    );
}

#[test]
fn matmul_honours_transpose_b() {
    check(
        qa("ttnn.matmul", vec![("transpose_b", AttrValue::Bool(true))])
            .input(&[64, 128], dram(&[64, 128]))
            .input(&[96, 128], dram(&[96, 128]))
            .out(&[64, 96]),
        expect![[r#"
            cb 10240 tensor 0 peak 10240 out 0
            DRAM interleaved, 2x3 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn matmul_program_config_rejects_a_subblock_over_the_dst_budget() {
    let s = [1024, 1024];
    let cfg = MatmulProgramConfig::MultiCast2D {
        grid: ttnn_types::CoreCoord { x: 8, y: 8 },
        in0_block_w: 2,
        out_subblock_h: 4,
        out_subblock_w: 4,
        out_block_h: 4,
        out_block_w: 4,
        per_core_m: 4,
        per_core_n: 4,
        transpose_mcast: false,
        fused_activation: None,
        fuse_batch: true,
    };
    check(
        mm(1024, 1024, 1024, dram(&s), dram(&s))
            .hint(bs(&s, 8, 8))
            .config(OpConfig::Matmul { program: Some(Box::new(cfg)), compute: None }),
        expect![[
            r#"error: unsupported: ttnn.matmul: 2D mcast program config: subblock 4x4 exceeds the 8 DST tiles"#
        ]],
    );
}

#[test]
fn block_sharded_output_from_dram_generates_a_2d_config_and_fp32_halves_its_subblock() {
    let s = [2048, 2048];
    let plain = mm(2048, 2048, 2048, dram(&s), dram(&s)).hint(bs(&s, 8, 8));
    check(
        plain,
        expect![[r#"
            cb 131072 tensor 131072 peak 262144 out 131072
            L1 block_sharded 8x8, 8x8 tiles per core (bf16)
            program: 2D mcast grid(x,y) 8x8 per_core 8x8 in0_block_w 2 subblock 1x8"#]],
    );
    let compute = DeviceComputeKernelConfig { fp32_dest_acc_en: Some(true), ..Default::default() };
    check(
        mm(2048, 2048, 2048, dram(&s), dram(&s))
            .hint(bs(&s, 8, 8))
            .config(OpConfig::Matmul { program: None, compute: Some(compute) }),
        expect![[r#"
            cb 393216 tensor 131072 peak 524288 out 131072
            L1 block_sharded 8x8, 8x8 tiles per core (bf16)
            program: 2D mcast grid(x,y) 8x8 per_core 8x8 in0_block_w 2 subblock 1x4"#]],
    );
}

#[test]
fn all_dram_matmul_reads_k_in_blocks_of_kt_over_the_grid_columns() {
    // Kt = 32 on 8 columns: in0_block_w 4, per core 4x4, so 2*4*4 + 2*4*4 + 4*4 tiles.
    let s = [1024, 1024];
    check(
        mm(1024, 1024, 1024, dram(&s), dram(&s)),
        expect![[r#"
            cb 163840 tensor 0 peak 163840 out 0
            DRAM interleaved, 32x32 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn a_small_matmul_off_dram_falls_back_to_the_tile_streaming_program() {
    // One 16x16 block covers the output, which makes no multicast grid, so tt-metal runs its
    // multi-core program: two tiles each for in0, in1 and the output.
    let s = [256, 256];
    check(
        mm(256, 256, 256, l1(&s), dram(&s)),
        expect![[r#"
            cb 12288 tensor 0 peak 12288 out 0
            DRAM interleaved, 8x8 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn a_multicast_matmul_with_one_k_block_does_not_double_buffer_its_inputs() {
    // Kt = 1 is one K block, so in1 holds a single 1x56 block; in0 and the output are bound
    // to their shards.
    let (a, b, o) = ([1792, 32], [32, 1792], [1792, 1792]);
    check(
        q("ttnn.matmul").input(&a, hs(&a, 56)).input(&b, dram(&b)).out(&o).hint(hs(&o, 56)),
        expect![[r#"
            cb 114688 tensor 114688 peak 229376 out 114688
            L1 height_sharded 56x1, 1x56 tiles per core (bf16)
            program: 1D mcast_in1 grid(x,y) 8x7 per_core 1x56 in0_block_w 1 subblock 1x8"#]],
    );
}

#[test]
fn a_bfp8_output_accumulating_in_l1_gets_its_own_bf16_partials_cb() {
    // By default the packer accumulates in L1 (8 K blocks here), in bf16, which cannot overlay
    // a bfp8 output CB: 2*8*8 + 2*8*8 bf16 input tiles, 64 bfp8 output tiles, 64 bf16 partials.
    let s = [2048, 2048];
    let plain = mm(2048, 2048, 2048, dram(&s), dram(&s)).dtype(DataType::BfpBF8);
    check(
        plain.clone(),
        expect![[r#"
            cb 724992 tensor 0 peak 724992 out 0
            DRAM interleaved, 64x64 tiles total (bfp_bf8)
            program: picked by tt-metal"#]],
    );
    // A compute config without packer L1 accumulation partials in the output format: shared.
    let compute = DeviceComputeKernelConfig { packer_l1_acc: Some(false), ..Default::default() };
    check(
        plain.config(OpConfig::Matmul { program: None, compute: Some(compute) }),
        expect![[r#"
            cb 593920 tensor 0 peak 593920 out 0
            DRAM interleaved, 64x64 tiles total (bfp_bf8)
            program: picked by tt-metal"#]],
    );
}

#[test]
fn a_sharded_output_computed_in_row_blocks_gets_its_own_partials_cb() {
    // out_block_h 4 < per_core_m 8: the output CB is bound to the shard, and the partials of
    // one 4x8 block need their own CB (plus 2*4*2 + 2*8*2 input tiles).
    let s = [2048, 2048];
    let cfg = MatmulProgramConfig::MultiCast2D {
        grid: ttnn_types::CoreCoord { x: 8, y: 8 },
        in0_block_w: 2,
        out_subblock_h: 1,
        out_subblock_w: 8,
        out_block_h: 4,
        out_block_w: 8,
        per_core_m: 8,
        per_core_n: 8,
        transpose_mcast: false,
        fused_activation: None,
        fuse_batch: true,
    };
    check(
        mm(2048, 2048, 2048, dram(&s), dram(&s))
            .hint(bs(&s, 8, 8))
            .config(OpConfig::Matmul { program: Some(Box::new(cfg)), compute: None }),
        expect![[r#"
            cb 163840 tensor 131072 peak 294912 out 131072
            L1 block_sharded 8x8, 8x8 tiles per core (bf16)
            program: 2D mcast grid(x,y) 8x8 per_core 8x8 in0_block_w 2 subblock 1x8"#]],
    );
}

#[test]
fn mcast_in1_copies_a_sharded_in0_wider_than_its_k_block() {
    // in0_block_w 2 < the 4-tile shard width: the reader copies the core's 2x4 in0 tiles
    // into c_0 instead of reading the shard in place (plus 2*4*2 in1 tiles; Kt 4 is 2 blocks).
    let (a, b, o) = ([1024, 128], [128, 128], [1024, 128]);
    let cfg = MatmulProgramConfig::MultiCast1D {
        grid: ttnn_types::CoreCoord { x: 8, y: 2 },
        in0_block_w: 2,
        out_subblock_h: 1,
        out_subblock_w: 4,
        out_block_h: 2,
        out_block_w: 4,
        per_core_m: 2,
        per_core_n: 4,
        fuse_batch: true,
        fused_activation: None,
        mcast_in0: false,
    };
    check(
        q("ttnn.matmul")
            .input(&a, hs(&a, 16))
            .input(&b, dram(&b))
            .out(&o)
            .hint(hs(&o, 16))
            .config(OpConfig::Matmul { program: Some(Box::new(cfg)), compute: None }),
        expect![[r#"
            cb 49152 tensor 16384 peak 65536 out 16384
            L1 height_sharded 16x1, 2x4 tiles per core (bf16)
            program: 1D mcast_in1 grid(x,y) 8x2 per_core 2x4 in0_block_w 2 subblock 1x4"#]],
    );
}

#[test]
fn generator_returns_none_for_interleaved_outputs_and_batched_b() {
    let shapes = MatmulShapes {
        a: &[64, 64],
        b: &[64, 64],
        out: &[64, 64],
        transpose_a: false,
        transpose_b: false,
    };
    assert_eq!(generate_matmul_program_config(&shapes, &l1(&[64, 64]), None, None), None);
    let batched = MatmulShapes { a: &[2, 64, 64], b: &[2, 64, 64], out: &[2, 64, 64], ..shapes };
    assert_eq!(generate_matmul_program_config(&batched, &hs(&[2, 64, 64], 2), None, None), None);
    assert!(generate_matmul_program_config(&shapes, &hs(&[64, 64], 2), None, None).is_some());
}

#[test]
fn block_sharding_on_one_row_generates_a_1d_config() {
    let shapes = MatmulShapes {
        a: &[32, 256],
        b: &[256, 256],
        out: &[32, 256],
        transpose_a: false,
        transpose_b: false,
    };
    let cfg = generate_matmul_program_config(&shapes, &bs(&[32, 256], 1, 8), None, None).unwrap();
    expect![[r#"1D mcast_in0 grid(x,y) 8x1 per_core 1x1 in0_block_w 8 subblock 1x1"#]]
        .assert_eq(&program_text(&cfg));
}

#[test]
fn linear_bias_must_be_one_row_of_n() {
    let (a, b) = ([64, 128], [128, 256]);
    check(
        q("ttnn.linear")
            .input(&a, dram(&a))
            .input(&b, dram(&b))
            .input(&[64, 256], dram(&[64, 256]))
            .out(&[64, 256]),
        expect![[
            r#"error: invalid: ttnn.linear: bias 64x256 must be one row of N = 256 (at most 32 rows)"#
        ]],
    );
    check(
        q("ttnn.linear")
            .input(&a, dram(&a))
            .input(&b, dram(&b))
            .input(&[1, 256], dram(&[1, 256]))
            .out(&[64, 256]),
        expect![[r#"
            cb 12288 tensor 0 peak 12288 out 0
            DRAM interleaved, 2x8 tiles total (bf16)
            program: picked by tt-metal"#]],
    );
}

// ---- conv2d and pooling ---------------------------------------------------------------------

fn conv_attrs(
    cin: i64,
    cout: i64,
    hw: i64,
    k: i64,
    stride: i64,
    pad: i64,
) -> Vec<(&'static str, AttrValue)> {
    vec![
        ("in_channels", AttrValue::Int(cin)),
        ("out_channels", AttrValue::Int(cout)),
        ("batch_size", AttrValue::Int(1)),
        ("input_height", AttrValue::Int(hw)),
        ("input_width", AttrValue::Int(hw)),
        ("kernel_size", AttrValue::Ints(vec![k, k])),
        ("stride", AttrValue::Ints(vec![stride, stride])),
        ("padding", AttrValue::Ints(vec![pad, pad])),
        ("dilation", AttrValue::Ints(vec![1, 1])),
        ("groups", AttrValue::Int(1)),
    ]
}

fn stem() -> Q {
    let (i, w, o) = ([1, 1, 50176, 3], [64, 3, 7, 7], [1, 1, 12544, 64]);
    qa("ttnn.conv2d", conv_attrs(3, 64, 224, 7, 2, 3)).input(&i, dram(&i)).input(&w, rm(&w)).out(&o)
}

/// The conv run on each sharding the way auto-sharding tries it (the layout forced through the
/// config, one-tile activation blocks, the grid the conv picks), one line per layout.
fn conv_candidates(q: &Q) -> String {
    let layouts = [
        TensorMemoryLayout::HeightSharded,
        TensorMemoryLayout::BlockSharded,
        TensorMemoryLayout::WidthSharded,
    ];
    let lines = layouts.map(|ml| {
        let conv = Conv2dConfig {
            shard_layout: Some(ml),
            act_block_h_override: Some(32),
            ..Default::default()
        };
        match q
            .clone()
            .config(OpConfig::Conv2d { conv: Box::new(conv), compute: None, slice: None })
            .run()
        {
            Ok(c) => {
                let grid = c.output_layout.grid2d();
                let (rows, cols) = (grid.rows, grid.cols);
                format!(
                    "{ml} {rows}x{cols}: cb {} + tensor {} = {}",
                    c.cb_peak, c.tensor_peak, c.peak
                )
            }
            Err(e) => format!("{ml}: {e}"),
        }
    });
    lines.join("\n")
}

#[test]
fn conv2d_null_hint_height_shards_the_stem_over_56_cores() {
    // 392 pixel tiles go on 56 cores (7 each) rather than 64. Block sharding cannot compete:
    // 3 input channels are one tile, so its grid is one core wide and slices no channels.
    check(
        stem(),
        expect![[r#"
            cb 91008 tensor 189824 peak 280832 out 28672
            L1 height_sharded 56x1, 7x2 tiles per core (bf16)
            conv: shard_layout Some("height_sharded")"#]],
    );
    expect![[r#"
        height_sharded 56x1: cb 91008 + tensor 189824 = 280832
        block_sharded 8x1: cb 96384 + tensor 887168 = 983552
        width_sharded: out of L1: needs 6722432 bytes per core, 1325652 available"#]]
    .assert_eq(&conv_candidates(&stem()));
}

#[test]
fn conv2d_pads_a_row_major_height_sharded_input_to_8_channels_not_a_tile() {
    // The halo gathers row-major sticks, so the stem's 3 channels take 8, not 32: a kernel row
    // is 2 tiles instead of 7, and the input copy and halo shrink fourfold.
    let (i, w, o) = ([1, 1, 50176, 3], [64, 3, 7, 7], [1, 1, 12544, 64]);
    let stem_rm = qa("ttnn.conv2d", conv_attrs(3, 64, 224, 7, 2, 3))
        .input(&i, rm(&i))
        .input(&w, rm(&w))
        .out(&o);
    check(
        stem_rm,
        expect![[r#"
            cb 29568 tensor 61792 peak 91360 out 28672
            L1 height_sharded 56x1, 7x2 tiles per core (bf16)
            conv: shard_layout Some("height_sharded")"#]],
    );
}

#[test]
fn conv2d_with_a_dram_output_still_builds_its_halo() {
    let o = [1, 1, 12544, 64];
    check(
        stem().hint(dram(&o)),
        expect![[r#"
            cb 91008 tensor 189824 peak 280832 out 0
            DRAM interleaved, 392x2 tiles total (bf16)
            conv: shard_layout Some("height_sharded")"#]],
    );
}

#[test]
fn conv2d_act_block_h_override_shrinks_the_activation_cbs() {
    // With the shard layout given, nothing fills the override in: the whole 7-tile per-core
    // height is one activation block.
    let hs_cfg = Conv2dConfig {
        shard_layout: Some(TensorMemoryLayout::HeightSharded),
        ..Default::default()
    };
    let small_cfg = Conv2dConfig { act_block_h_override: Some(32), ..hs_cfg.clone() };
    let small = stem()
        .config(OpConfig::Conv2d { conv: Box::new(small_cfg), compute: None, slice: None })
        .run()
        .unwrap();
    let full = stem()
        .config(OpConfig::Conv2d { conv: Box::new(hs_cfg), compute: None, slice: None })
        .run()
        .unwrap();
    assert!(small.cb_peak < full.cb_peak, "{} vs {}", small.cb_peak, full.cb_peak);
    expect!["91008 vs 287616"].assert_eq(&format!("{} vs {}", small.cb_peak, full.cb_peak));
}

#[test]
fn conv2d_auto_sharding_runs_with_one_tile_row_activation_blocks() {
    // tt-metal's auto-sharding sets an unset act_block_h_override to 32 and runs with it; the
    // reported config says so, so that writing it back reproduces the run.
    let c = stem().run().unwrap();
    let OpConfig::Conv2d { conv, .. } = &c.config else { panic!("no conv config") };
    expect![[r#"(Some(HeightSharded), Some(32), 91008)"#]]
        .assert_eq(&format!("{:?}", (conv.shard_layout, conv.act_block_h_override, c.cb_peak)));
    let given = Conv2dConfig { act_block_h_override: Some(64), ..Default::default() };
    let c = stem()
        .config(OpConfig::Conv2d { conv: Box::new(given), compute: None, slice: None })
        .run()
        .unwrap();
    let OpConfig::Conv2d { conv, .. } = &c.config else { panic!("no conv config") };
    expect![[r#"Some(64)"#]].assert_eq(&format!("{:?}", conv.act_block_h_override));
}

#[test]
fn conv2d_block_shards_a_1x1_expansion_because_it_needs_less_l1_than_height_sharding() {
    // ResNet's 1x1 expansion: 4 input and 16 output channel tiles. Height sharding streams all
    // 16 output channel tiles of weights on every core; block sharding splits them, and needs
    // less L1. Its channels go on 4 columns, the most dividing both channel counts (8 would
    // leave half the columns without input channels), its pixels on 8 rows (196 tiles padded
    // to 200). Width sharding does not compete: the conv runs as a matmul.
    let (i, w, o) = ([1, 1, 6272, 128], [512, 128, 1, 1], [1, 1, 6272, 512]);
    let mut attrs = conv_attrs(128, 512, 28, 1, 1, 0);
    attrs[2] = ("batch_size", AttrValue::Int(8));
    let expansion = qa("ttnn.conv2d", attrs).input(&i, dram(&i)).input(&w, rm(&w)).out(&o);
    check(
        expansion.clone(),
        expect![[r#"
            cb 21632 tensor 204800 peak 226432 out 204800
            L1 block_sharded 8x4, 25x4 tiles per core (bf16)
            conv: shard_layout Some("block_sharded")"#]],
    );
    expect![[r#"
        height_sharded 49x1: cb 172544 + tensor 131072 = 303616
        block_sharded 8x4: cb 21632 + tensor 204800 = 226432
        width_sharded: out of L1: needs 1649152 bytes per core, 1325652 available"#]]
    .assert_eq(&conv_candidates(&expansion));
}

#[test]
fn conv2d_pads_channel_tiles_to_use_more_columns_unless_it_runs_as_a_matmul() {
    // 3 input and 10 output channel tiles: no column count above one divides both, but 3
    // columns pad 10 to 12, less than one column's share, so a 3x3 conv takes 3 columns.
    let (i, w, o) = ([1, 1, 784, 96], [320, 96, 3, 3], [1, 1, 784, 320]);
    check(
        qa("ttnn.conv2d", conv_attrs(96, 320, 28, 3, 1, 1))
            .input(&i, dram(&i))
            .input(&w, rm(&w))
            .out(&o),
        expect![[r#"
            cb 70144 tensor 48128 peak 118272 out 32768
            L1 block_sharded 7x3, 4x4 tiles per core (bf16)
            conv: shard_layout Some("block_sharded")"#]],
    );
}

/// ViT's patch embedding: batch 8 of 224x224 RGB, a 16x16 stride-16 kernel to 768 channels,
/// the input flattened to 1x1x401408x3 in DRAM, tiled as the importer leaves it or row-major
/// as tt-mlir's conv workaround makes it when its optimizer is off.
fn vit_patch_embedding(page: PageLayout) -> Q {
    let (i, w, o) = ([1, 1, 401408, 3], [768, 3, 16, 16], [1, 1, 1568, 768]);
    let mut attrs = conv_attrs(3, 768, 224, 16, 16, 0);
    attrs[2] = ("batch_size", AttrValue::Int(8));
    let input = TtnnLayout::dram_interleaved(&i, BF16, page);
    qa("ttnn.conv2d", attrs).input(&i, input).input(&w, rm(&w)).out(&o)
}

#[test]
fn conv2d_auto_shards_the_tiled_vit_patch_embedding_out_of_l1_on_every_layout() {
    // Height sharding, one pixel tile on each of 49 cores, is the smallest: the 3 channels pad
    // to a tile, so a kernel row is 16 tiles and the weights stream 2 x 16 x 24 tiles (1.5 MB)
    // on every core, next to a 524 288 B input shard and a 917 504 B halo (64 input rows).
    // Block sharding's grid is 8x1 (one input channel tile), which slices no channels, so it
    // does not compete; width sharding runs on a single core.
    let vit = vit_patch_embedding(PageLayout::Tile);
    check(
        vit.clone(),
        expect!["error: out of L1: needs 3129472 bytes per core, 1325652 available"],
    );
    expect![[r#"
        height_sharded: out of L1: needs 3129472 bytes per core, 1325652 available
        block_sharded: out of L1: needs 9028480 bytes per core, 1325652 available
        width_sharded: out of L1: needs 53074048 bytes per core, 1325652 available"#]]
    .assert_eq(&conv_candidates(&vit));
}

#[test]
fn conv2d_fits_the_row_major_vit_patch_embedding_with_8_channel_sticks() {
    // A row-major input pads the 3 channels to 8: a kernel row is 8 x 16 = 128 channels
    // (4 tiles), the weights stream 2 x 4 x 24 tiles (393 216 B), and the input shard and
    // halo shrink fourfold.
    let vit = vit_patch_embedding(PageLayout::RowMajor);
    check(
        vit.clone(),
        expect![[r#"
            cb 458880 tensor 360448 peak 819328 out 49152
            L1 height_sharded 49x1, 1x24 tiles per core (bf16)
            conv: shard_layout Some("height_sharded")"#]],
    );
    expect![[r#"
        height_sharded 49x1: cb 458880 + tensor 360448 = 819328
        block_sharded: out of L1: needs 9028480 bytes per core, 1325652 available
        width_sharded: out of L1: needs 53074048 bytes per core, 1325652 available"#]]
    .assert_eq(&conv_candidates(&vit));
}

fn sliced(ty: Conv2dSliceType, n: u64) -> OpConfig {
    OpConfig::Conv2d {
        conv: Box::default(),
        compute: None,
        slice: Some(Conv2dSliceConfig { slice_type: ty, num_slices: n }),
    }
}

/// The L1 per core of each slice count from 1 up to `max`, one line each.
fn slice_counts(q: &Q, ty: Conv2dSliceType, max: u64) -> String {
    let lines = (1..=max).map(|n| match q.clone().config(sliced(ty, n)).run() {
        Ok(c) => format!("{n}: cb {} + tensor {} = {}", c.cb_peak, c.tensor_peak, c.peak),
        Err(e) => format!("{n}: {e}"),
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// The per-slice convs as (input rows x columns, padding top, bottom, left, right).
fn band_text(q: &Q, ty: Conv2dSliceType, n: u64) -> String {
    let OpKind::Conv2d(a) = &q.0.kind else { panic!("not a conv") };
    let unit = if ty == Conv2dSliceType::DramWidth { 32 } else { 1 };
    let bands = crate::conv::bands(a, ty, n, unit, true);
    let lines = bands.iter().map(|b| {
        let (ho, wo) = b.output_hw(false);
        format!("in {}x{} pad {:?} -> out {ho}x{wo}", b.input_h, b.input_w, b.padding)
    });
    lines.collect::<Vec<_>>().join("\n")
}

#[test]
fn dram_height_slicing_fits_the_tiled_vit_patch_embedding_in_two_slices() {
    // One slice is the whole conv on its tiled input: 3 channels padded to a tile, out of L1.
    // From two slices on, each slice reads its input rows from DRAM as row-major sticks (8
    // channels), so the weights stream 4-tile kernel rows, and every slice of the 14-wide
    // output is computed 32 wide, as tt-metal pads a tiled slice's output width to a tile.
    let o = [1, 1, 1568, 768];
    let vit = vit_patch_embedding(PageLayout::Tile).hint(dram(&o));
    check(
        vit.clone().config(sliced(Conv2dSliceType::DramHeight, 0)),
        expect![[r#"
            cb 458880 tensor 188416 peak 647296 out 0
            DRAM interleaved, 49x24 tiles total (bf16)
            conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 2>"#]],
    );
    expect![[r#"
        1: out of L1: needs 3129472 bytes per core, 1325652 available
        2: cb 458880 + tensor 188416 = 647296
        3: cb 458880 + tensor 188416 = 647296
        4: cb 458880 + tensor 188416 = 647296
        5: cb 458880 + tensor 188416 = 647296
        6: cb 458880 + tensor 188416 = 647296
        7: cb 458880 + tensor 188416 = 647296
        8: cb 458880 + tensor 188416 = 647296
        9: cb 458880 + tensor 188416 = 647296
        10: cb 458880 + tensor 188416 = 647296
        11: cb 458880 + tensor 188416 = 647296
        12: cb 458880 + tensor 188416 = 647296
        13: cb 458880 + tensor 188416 = 647296
        14: cb 458880 + tensor 188416 = 647296"#]]
    .assert_eq(&slice_counts(&vit, Conv2dSliceType::DramHeight, 14));
    expect!["in 112x224 pad [0, 0, 0, 288] -> out 7x32"].assert_eq(&band_text(
        &vit,
        Conv2dSliceType::DramHeight,
        2,
    ));
}

#[test]
fn dram_width_slicing_cuts_a_tiled_output_32_columns_at_a_time() {
    // A 14-wide tiled output is one 32-column unit, so width slicing cannot cut it: one slice
    // is all it allows, and that one is the whole conv, out of L1.
    let o = [1, 1, 1568, 768];
    let vit = vit_patch_embedding(PageLayout::Tile).hint(dram(&o));
    check(
        vit.clone().config(sliced(Conv2dSliceType::DramWidth, 0)),
        expect!["error: out of L1: needs 3129472 bytes per core, 1325652 available"],
    );
    check(
        vit.config(sliced(Conv2dSliceType::DramWidth, 2)),
        expect![
            "error: invalid: ttnn.conv2d: 2 slices exceed the 1 a 14-wide sliced output dimension allows"
        ],
    );
}

#[test]
fn a_slice_reads_the_input_rows_its_output_rows_need_with_padding_only_at_the_edges() {
    // 3x3, stride 2, padding 1 over 16 rows: 8 output rows in 3 slices of 3, 3 and 2 rows. The
    // first reads input rows 0..6 under the top padding, the middle 5..12, the last 11..16
    // with the bottom padding; the 8-wide output is padded to 32 columns on the right.
    let (i, w, o) = ([1, 1, 256, 32], [32, 32, 3, 3], [1, 1, 64, 32]);
    let q = qa("ttnn.conv2d", conv_attrs(32, 32, 16, 3, 2, 1))
        .input(&i, dram(&i))
        .input(&w, rm(&w))
        .out(&o)
        .hint(dram(&o));
    expect![[r#"
        in 6x16 pad [1, 0, 1, 49] -> out 3x32
        in 7x16 pad [0, 0, 1, 49] -> out 3x32
        in 5x16 pad [0, 1, 1, 49] -> out 2x32"#]]
    .assert_eq(&band_text(&q, Conv2dSliceType::DramHeight, 3));
}

/// A 3x3 conv over 64 channels of a 128x128 image, in and out of DRAM.
fn conv_128() -> Q {
    let (i, w, o) = ([1, 1, 16384, 64], [64, 64, 3, 3], [1, 1, 16384, 64]);
    qa("ttnn.conv2d", conv_attrs(64, 64, 128, 3, 1, 1))
        .input(&i, dram(&i))
        .input(&w, rm(&w))
        .out(&o)
        .hint(dram(&o))
}

#[test]
fn more_slices_need_less_l1_per_core() {
    // Each core's input rows, halo and output shard shrink with the slice: 128 output rows
    // over n slices, each on up to 64 cores.
    expect![[r#"
        1: cb 78848 + tensor 99328 = 178176
        2: cb 78336 + tensor 66560 = 144896
        3: cb 78208 + tensor 58880 = 137088
        4: cb 28672 + tensor 84736 = 113408
        5: cb 28288 + tensor 86912 = 115200
        6: cb 28032 + tensor 74496 = 102528
        7: cb 27904 + tensor 71424 = 99328
        8: cb 27648 + tensor 51712 = 79360"#]]
    .assert_eq(&slice_counts(&conv_128(), Conv2dSliceType::DramHeight, 8));
}

#[test]
fn auto_slicing_takes_the_fewest_slices_that_fit_the_free_l1() {
    // With L1 already in use the slices must be smaller, so more of them are needed; when no
    // count fits, the error gives the least any count needs.
    let auto = conv_128().config(sliced(Conv2dSliceType::DramHeight, 0));
    let lines = [0, 1_200_000, 1_250_000, 1_300_000].map(|in_use| {
        let q = auto.clone().in_use(in_use);
        let res = q.run();
        let text = render(&q, &res);
        format!("{in_use}: {}", text.lines().next().unwrap_or_default())
            + &text.lines().nth(2).map(|l| format!(" ({l})")).unwrap_or_default()
    });
    expect![[r#"
        0: cb 78848 tensor 99328 peak 178176 out 0 (conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 1>)
        1200000: cb 28672 tensor 84736 peak 113408 out 0 (conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 4>)
        1250000: cb 27136 tensor 35200 peak 62336 out 0 (conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 16>)
        1300000: error: out of L1: needs 1349792 bytes per core, 1325652 available"#]].assert_eq(&lines.join("\n"));
}

#[test]
fn a_dram_sliced_conv_reads_and_writes_dram_interleaved_tensors() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    let conv = |input: TtnnLayout| {
        qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
            .input(&i, input)
            .input(&w, rm(&w))
            .out(&o)
            .config(sliced(Conv2dSliceType::DramHeight, 2))
    };
    check(
        conv(hs(&i, 49)).hint(dram(&o)),
        expect![
            "error: unsupported: ttnn.conv2d: a dram_height sliced conv reads its input from DRAM interleaved, not L1 height_sharded 49x1, 2x2 tiles per core (bf16)"
        ],
    );
    check(
        conv(dram(&i)).hint(hs(&o, 49)),
        expect![
            "error: unsupported: ttnn.conv2d: a dram_height sliced conv writes its output to DRAM interleaved, not L1 height_sharded 49x1, 2x2 tiles per core (bf16)"
        ],
    );
    check(
        conv(dram(&i)),
        expect![[r#"
        cb 27520 tensor 43904 peak 71424 out 0
        DRAM interleaved, 98x2 tiles total (bf16)
        conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 2>"#]],
    );
}

#[test]
fn a_dram_sliced_conv_checks_its_operands_against_its_attributes() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    check(
        qa("ttnn.conv2d", conv_attrs(64, 64, 28, 3, 1, 1))
            .input(&i, dram(&i))
            .input(&w, rm(&w))
            .out(&o)
            .config(sliced(Conv2dSliceType::DramHeight, 2)),
        expect![
            "error: invalid: ttnn.conv2d: input 1x1x3136x64 is not [1, 1, 784, 64] for batch 1 x 28x28"
        ],
    );
}

#[test]
fn an_explicit_slice_count_is_bounded_by_the_sliced_dimension() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    let q = qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
        .input(&i, dram(&i))
        .input(&w, rm(&w))
        .out(&o)
        .hint(dram(&o));
    check(
        q.clone().config(sliced(Conv2dSliceType::DramHeight, 57)),
        expect![
            "error: invalid: ttnn.conv2d: 57 slices exceed the 56 a 56-wide sliced output dimension allows"
        ],
    );
    check(
        q.config(sliced(Conv2dSliceType::DramHeight, 4)),
        expect![[r#"
        cb 27136 tensor 25088 peak 52224 out 0
        DRAM interleaved, 98x2 tiles total (bf16)
        conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 4>"#]],
    );
}

#[test]
fn dram_slicing_leaves_a_matmul_conv_whole_and_is_not_modelled_for_conv_transpose2d() {
    let (i, w, o) = ([1, 1, 6272, 128], [512, 128, 1, 1], [1, 1, 6272, 512]);
    let mut attrs = conv_attrs(128, 512, 28, 1, 1, 0);
    attrs[2] = ("batch_size", AttrValue::Int(8));
    let expansion =
        qa("ttnn.conv2d", attrs).input(&i, dram(&i)).input(&w, rm(&w)).out(&o).hint(dram(&o));
    check(
        expansion.config(sliced(Conv2dSliceType::DramHeight, 0)),
        expect![[r#"
        cb 21632 tensor 204800 peak 226432 out 0
        DRAM interleaved, 196x16 tiles total (bf16)
        conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 1>"#]],
    );
    let (i, w, o) = ([1, 1, 196, 256], [256, 128, 2, 2], [1, 1, 784, 128]);
    check(
        qa("ttnn.conv_transpose2d", conv_attrs(256, 128, 14, 2, 2, 0))
            .input(&i, dram(&i))
            .input(&w, rm(&w))
            .out(&o)
            .hint(dram(&o))
            .config(sliced(Conv2dSliceType::DramHeight, 2)),
        expect![
            "error: unsupported: ttnn.conv_transpose2d: DRAM slicing is modelled for conv2d only, not dram_height"
        ],
    );
}

#[test]
fn conv2d_act_block_h_override_must_be_a_multiple_of_32() {
    let cfg = Conv2dConfig { act_block_h_override: Some(48), ..Default::default() };
    check(
        stem().config(OpConfig::Conv2d { conv: Box::new(cfg), compute: None, slice: None }),
        expect![[
            r#"error: invalid: ttnn.conv2d: act_block_h_override = 48 is not a multiple of 32"#
        ]],
    );
}

#[test]
fn conv2d_config_shard_layout_must_match_the_output() {
    let o = [1, 1, 12544, 64];
    let cfg =
        Conv2dConfig { shard_layout: Some(TensorMemoryLayout::BlockSharded), ..Default::default() };
    check(
        stem().hint(hs(&o, 56)).config(OpConfig::Conv2d {
            conv: Box::new(cfg),
            compute: None,
            slice: None,
        }),
        expect![[
            r#"error: invalid: ttnn.conv2d: conv2d_config shard_layout block_sharded disagrees with the height_sharded output"#
        ]],
    );
}

#[test]
fn conv2d_input_and_output_must_use_the_same_sharding_type() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    check(
        qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
            .input(&i, hs(&i, 49))
            .input(&w, rm(&w))
            .out(&o)
            .hint(bs(&o, 7, 2)),
        expect![[
            r#"error: unsupported: ttnn.conv2d: input and output must use the same sharding type, not height_sharded and block_sharded"#
        ]],
    );
}

#[test]
fn conv2d_without_a_hint_refuses_a_config_shard_layout_unlike_its_sharded_input() {
    // The solver probes with a null hint; it must get the answer the exact query gives.
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    let cfg =
        Conv2dConfig { shard_layout: Some(TensorMemoryLayout::WidthSharded), ..Default::default() };
    check(
        qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
            .input(&i, hs(&i, 49))
            .input(&w, rm(&w))
            .out(&o)
            .config(OpConfig::Conv2d { conv: Box::new(cfg), compute: None, slice: None }),
        expect![
            "error: unsupported: ttnn.conv2d: input and output must use the same sharding type, not height_sharded and width_sharded"
        ],
    );
}

#[test]
fn conv2d_keeps_a_sharded_input_parallel_config() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    check(
        qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
            .input(&i, hs(&i, 49))
            .input(&w, rm(&w))
            .out(&o),
        expect![[r#"
            cb 106752 tensor 45312 peak 152064 out 8192
            L1 height_sharded 49x1, 2x2 tiles per core (bf16)
            conv: shard_layout Some("height_sharded")"#]],
    );
}

#[test]
fn conv2d_picks_width_sharding_when_pixels_are_few() {
    let (i, w, o) = ([1, 1, 49, 512], [512, 512, 3, 3], [1, 1, 49, 512]);
    check(
        qa("ttnn.conv2d", conv_attrs(512, 512, 7, 3, 1, 1))
            .input(&i, dram(&i))
            .input(&w, rm(&w))
            .out(&o),
        expect![[r#"
            cb 26820 tensor 9280 peak 36100 out 4096
            L1 width_sharded 1x16, 2x1 tiles per core (bf16)
            conv: shard_layout Some("width_sharded")"#]],
    );
}

#[test]
fn conv2d_rejects_a_sharded_weight() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    check(
        qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
            .input(&i, dram(&i))
            .input(&[64, 576], hs(&[64, 576], 2))
            .out(&o),
        expect![[r#"error: unsupported: ttnn.conv2d: the weight operand may not be sharded"#]],
    );
    let _ = w;
}

/// The same query with its weight (and bias, if any) in host memory instead of DRAM.
fn with_host_parameters(q: Q) -> Q {
    let mut q = q;
    for t in q.0.inputs.iter_mut().skip(1) {
        t.layout = TtnnLayout::system_memory(&t.shape, ttnn_types::ScalarType::BF16);
    }
    q
}

#[test]
fn conv2d_takes_its_weight_and_bias_from_host_memory_as_tt_mlir_places_them() {
    // tt-mlir's conv workaround moves a conv's weight and bias to host, row-major, and
    // tt-metal's conv2d prepares a host weight itself; the estimate is that of the same conv
    // with a DRAM weight.
    let (i, w, b, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 1, 64], [1, 1, 3136, 64]);
    let conv = qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
        .input(&i, dram(&i))
        .input(&w, rm(&w))
        .input(&b, rm(&b))
        .out(&o);
    let on_device = format!("{:?}", conv.clone().run());
    let from_host = format!("{:?}", with_host_parameters(conv).run());
    assert_eq!(from_host, on_device);
    assert!(from_host.starts_with("Ok("), "{from_host}");
}

#[test]
fn conv_transpose2d_and_conv1d_take_host_weights_too() {
    let (i, w, o) = ([1, 1, 196, 256], [256, 128, 2, 2], [1, 1, 784, 128]);
    let transposed = qa("ttnn.conv_transpose2d", conv_attrs(256, 128, 14, 2, 2, 0))
        .input(&i, dram(&i))
        .input(&w, rm(&w))
        .out(&o);
    check(
        with_host_parameters(transposed),
        expect![[r#"
            cb 35328 tensor 34176 peak 69504 out 8192
            L1 block_sharded 7x4, 4x1 tiles per core (bf16)
            conv: shard_layout Some("block_sharded")"#]],
    );
    let (i, w, o) = ([1, 1, 1024, 64], [64, 64, 3], [1, 1, 1024, 64]);
    let attrs = conv1d_attrs();
    check(
        with_host_parameters(
            qa("ttnn.conv1d", attrs).input(&i, dram(&i)).input(&w, rm(&w)).out(&o),
        ),
        expect![[r#"
            cb 27136 tensor 16640 peak 43776 out 8192
            L1 block_sharded 8x2, 4x1 tiles per core (bf16)
            conv: shard_layout Some("block_sharded")"#]],
    );
}

#[test]
fn a_host_input_activation_is_still_invalid_for_a_conv() {
    let (i, w, o) = ([1, 1, 3136, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    let host = TtnnLayout::system_memory(&i, ttnn_types::ScalarType::BF16);
    check(
        qa("ttnn.conv2d", conv_attrs(64, 64, 56, 3, 1, 1))
            .input(&i, host)
            .input(&w, rm(&w))
            .out(&o),
        expect![[
            r#"error: invalid: ttnn.conv2d operand 0 is in system_memory memory, not on device"#
        ]],
    );
}

#[test]
fn conv2d_checks_the_flattened_input_shape() {
    let (i, w, o) = ([1, 56, 56, 64], [64, 64, 3, 3], [1, 1, 3136, 64]);
    let res = qa("ttnn.conv2d", conv_attrs(64, 32, 56, 3, 1, 1))
        .input(&i, dram(&i))
        .input(&w, rm(&w))
        .out(&o)
        .run();
    expect![[r#"Err(Invalid { reason: "ttnn.conv2d: output 1x1x3136x64 is not [1, 1, 3136, 32] (56x56 output pixels)" })"#]]
        .assert_eq(&format!("{res:?}"));
}

#[test]
fn conv_transpose2d_upsamples_by_its_stride() {
    let (i, w, o) = ([1, 1, 196, 256], [256, 128, 2, 2], [1, 1, 784, 128]);
    check(
        qa("ttnn.conv_transpose2d", conv_attrs(256, 128, 14, 2, 2, 0))
            .input(&i, dram(&i))
            .input(&w, rm(&w))
            .out(&o),
        expect![[r#"
            cb 35328 tensor 34176 peak 69504 out 8192
            L1 block_sharded 7x4, 4x1 tiles per core (bf16)
            conv: shard_layout Some("block_sharded")"#]],
    );
}

/// A 64-channel conv1d over 1024 samples, kernel 3, padding 1.
fn conv1d_attrs() -> Vec<(&'static str, AttrValue)> {
    vec![
        ("in_channels", AttrValue::Int(64)),
        ("out_channels", AttrValue::Int(64)),
        ("batch_size", AttrValue::Int(1)),
        ("input_length", AttrValue::Int(1024)),
        ("kernel_size", AttrValue::Int(3)),
        ("stride", AttrValue::Int(1)),
        ("padding", AttrValue::Ints(vec![1, 1])),
        ("dilation", AttrValue::Int(1)),
        ("groups", AttrValue::Int(1)),
    ]
}

#[test]
fn conv1d_runs_as_a_height_one_conv2d() {
    let (i, w, o) = ([1, 1, 1024, 64], [64, 64, 3], [1, 1, 1024, 64]);
    let attrs = conv1d_attrs();
    check(
        qa("ttnn.conv1d", attrs).input(&i, dram(&i)).input(&w, rm(&w)).out(&o),
        expect![[r#"
            cb 27136 tensor 16640 peak 43776 out 8192
            L1 block_sharded 8x2, 4x1 tiles per core (bf16)
            conv: shard_layout Some("block_sharded")"#]],
    );
}

#[test]
fn max_pool2d_height_shards_its_output_by_default() {
    let (i, o) = ([1, 1, 12544, 64], [1, 1, 3136, 64]);
    let attrs = vec![
        ("batch_size", AttrValue::Int(1)),
        ("input_height", AttrValue::Int(112)),
        ("input_width", AttrValue::Int(112)),
        ("channels", AttrValue::Int(64)),
        ("kernel_size", AttrValue::Ints(vec![3, 3])),
        ("stride", AttrValue::Ints(vec![2, 2])),
        ("padding", AttrValue::Ints(vec![1, 1])),
        ("dilation", AttrValue::Ints(vec![1, 1])),
    ];
    check(
        qa("ttnn.max_pool2d", attrs).input(&i, dram(&i)).out(&o),
        expect![[r#"
            cb 4608 tensor 134912 peak 139520 out 8192
            L1 height_sharded 49x1, 2x2 tiles per core (bf16)"#]],
    );
}

#[test]
fn upsample_keeps_a_sharded_input_layout() {
    let (i, o) = ([1, 16, 16, 64], [1, 32, 32, 64]);
    check(
        qa("ttnn.upsample", vec![("scale_factor", AttrValue::Int(2))]).input(&i, hs(&i, 8)).out(&o),
        expect![[r#"
            cb 128 tensor 16384 peak 16512 out 16384
            L1 height_sharded 8x1, 4x2 tiles per core (bf16)"#]],
    );
}

// ---- data movement --------------------------------------------------------------------------

#[test]
fn concat_with_a_null_hint_writes_dram() {
    let s = [64, 64];
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(0))])
            .input(&s, l1(&s))
            .input(&s, l1(&s))
            .out(&[128, 64]),
        expect![[r#"
            cb 4096 tensor 0 peak 4096 out 0
            DRAM interleaved, 4x2 tiles total (bf16)"#]],
    );
}

#[test]
fn concat_rejects_mixed_input_layouts() {
    let s = [64, 64];
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(0))])
            .input(&s, l1(&s))
            .input(&s, dram(&s))
            .out(&[128, 64]),
        expect![
            "error: unsupported: ttnn.concat inputs must share one memory layout and grid: operand 1 is DRAM interleaved, 2x2 tiles total (bf16), operand 0 is L1 interleaved, 1x1 tiles per core (bf16)"
        ],
    );
}

#[test]
fn width_concat_keeps_height_sharding() {
    let (s, o) = ([256, 64], [256, 128]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(1))])
            .input(&s, hs(&s, 8))
            .input(&s, hs(&s, 8))
            .out(&o)
            .hint(hs(&o, 8)),
        expect![[r#"
            cb 0 tensor 8192 peak 8192 out 8192
            L1 height_sharded 8x1, 1x4 tiles per core (bf16)"#]],
    );
}

#[test]
fn width_concat_rejects_width_sharding() {
    let (s, o) = ([256, 256], [256, 512]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(-1))])
            .input(&s, ws(&s, 4))
            .input(&s, ws(&s, 4))
            .out(&o)
            .hint(ws(&o, 4)),
        expect![[r#"error: unsupported: a width concat needs height sharding, not width_sharded"#]],
    );
}

#[test]
fn height_concat_rejects_height_sharding() {
    let (s, o) = ([256, 256], [512, 256]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(0))])
            .input(&s, hs(&s, 4))
            .input(&s, hs(&s, 4))
            .out(&o)
            .hint(hs(&o, 4)),
        expect![[
            r#"error: unsupported: a height concat needs width sharding, not height_sharded"#
        ]],
    );
}

#[test]
fn concat_never_block_shards() {
    let (s, o) = ([256, 256], [512, 256]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(0))])
            .input(&s, bs(&s, 2, 2))
            .input(&s, bs(&s, 2, 2))
            .out(&o)
            .hint(bs(&o, 2, 2)),
        expect![[r#"error: unsupported: ttnn.concat never shards its output by blocks"#]],
    );
}

#[test]
fn concat_of_interleaved_inputs_has_no_sharded_output() {
    let (s, o) = ([256, 64], [256, 128]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(1))])
            .input(&s, l1(&s))
            .input(&s, l1(&s))
            .out(&o)
            .hint(hs(&o, 8)),
        expect![[
            r#"error: unsupported: ttnn.concat of interleaved inputs gives no sharded output (#41469)"#
        ]],
    );
}

#[test]
fn concat_of_unaligned_inputs_has_no_sharded_output() {
    let (s, o) = ([256, 48], [256, 96]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(1))])
            .input(&s, hs(&s, 8))
            .input(&s, hs(&s, 8))
            .out(&o)
            .hint(hs(&o, 8)),
        expect![[
            r#"error: unsupported: ttnn.concat of non-tile-aligned inputs gives no sharded output (#41504)"#
        ]],
    );
}

#[test]
fn sharded_concat_inputs_need_a_sharded_output() {
    let (s, o) = ([256, 64], [256, 128]);
    check(
        qa("ttnn.concat", vec![("dim", AttrValue::Int(1))])
            .input(&s, hs(&s, 8))
            .input(&s, hs(&s, 8))
            .out(&o),
        expect![
            "error: unsupported: ttnn.concat with sharded inputs needs a sharded output with the same layout and grid, not DRAM interleaved, 8x4 tiles total (bf16)"
        ],
    );
}

#[test]
fn reshape_rejects_a_width_sharded_input() {
    let s = [64, 256];
    check(
        q("ttnn.reshape").input(&s, ws(&s, 8)).out(&[1, 64, 256]),
        expect![[r#"error: unsupported: ttnn.reshape rejects a width_sharded operand 0"#]],
    );
}

#[test]
fn view_reshape_aliases_its_input() {
    check(
        q("ttnn.reshape").input(&[1, 64, 256], l1(&[1, 64, 256])).out(&[2, 32, 256]),
        expect![[r#"
            cb 0 tensor 0 peak 0 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn non_view_reshape_has_no_sharded_output() {
    let s = [64, 256];
    check(
        q("ttnn.reshape").input(&s, hs(&s, 2)).out(&[256, 64]),
        expect![[
            r#"error: unsupported: ttnn.reshape produces interleaved outputs only (a non-view reshape moves tiles)"#
        ]],
    );
}

#[test]
fn permute_rejects_a_width_sharded_input() {
    let s = [64, 256];
    check(
        qa("ttnn.permute", vec![("permutation", AttrValue::Ints(vec![1, 0]))])
            .input(&s, ws(&s, 8))
            .out(&[256, 64]),
        expect![[r#"error: unsupported: ttnn.permute rejects a width_sharded operand 0"#]],
    );
}

#[test]
fn identity_permute_is_a_view() {
    let s = [64, 256];
    check(
        qa("ttnn.permute", vec![("permutation", AttrValue::Ints(vec![0, 1]))])
            .input(&s, l1(&s))
            .out(&s),
        expect![[r#"
            cb 0 tensor 0 peak 0 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn slice_rejects_a_sharded_input() {
    let s = [256, 64];
    check(
        q("ttnn.slice_static").input(&s, hs(&s, 8)).out(&[128, 64]),
        expect![[r#"error: unsupported: ttnn.slice_static rejects a height_sharded operand 0"#]],
    );
}

#[test]
fn slice_has_no_sharded_output() {
    let s = [256, 64];
    check(
        q("ttnn.slice_static").input(&s, dram(&s)).out(&[128, 64]).hint(hs(&[128, 64], 4)),
        expect![[
            r#"error: unsupported: ttnn.slice_static produces interleaved outputs only (#39074, #38016)"#
        ]],
    );
}

#[test]
fn row_major_slice_buffers_two_output_rows() {
    let s = [64, 4096];
    check(
        q("ttnn.slice_static").input(&s, rm(&s)).out(&[64, 1000]),
        expect![[r#"
            cb 4000 tensor 0 peak 4000 out 0
            DRAM interleaved, 64x1000 elements total (bf16, row-major)"#]],
    );
}

#[test]
fn pad_has_no_sharded_output_and_a_zero_pad_is_a_view() {
    let s = [256, 64];
    check(
        qa("ttnn.pad", vec![("padding", AttrValue::Ints(vec![0, 32, 0, 0]))])
            .input(&s, hs(&s, 8))
            .out(&[288, 64])
            .hint(hs(&[288, 64], 9)),
        expect![[r#"error: unsupported: ttnn.pad produces interleaved outputs only (#40898)"#]],
    );
    check(
        qa("ttnn.pad", vec![("padding", AttrValue::Ints(vec![0, 0, 0, 0]))])
            .input(&s, l1(&s))
            .out(&s),
        expect![[r#"
            cb 0 tensor 0 peak 0 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn all_ones_repeat_is_a_view() {
    let s = [64, 64];
    check(
        qa("ttnn.repeat", vec![("repeat_dims", AttrValue::Ints(vec![1, 1]))])
            .input(&s, l1(&s))
            .out(&s),
        expect![[r#"
            cb 0 tensor 0 peak 0 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn to_layout_untilize_buffers_two_tile_rows() {
    let s = [32, 4096];
    check(
        q("ttnn.to_layout").input(&s, dram(&s)).out(&s).hint(rm(&s)),
        expect![[r#"
            cb 524288 tensor 0 peak 524288 out 0
            DRAM interleaved, 32x4096 elements total (bf16, row-major)"#]],
    );
}

#[test]
fn to_layout_untilizes_a_row_too_wide_for_l1_in_square_blocks() {
    // Llama's logits before argmax: 4008 tiles a row, 16 MB for the whole-row CBs. tt-metal
    // then cuts the tile grid into 64-tile blocks (63 blocks, under the 64 cores).
    let s = [32, 128256];
    check(
        q("ttnn.to_layout").input(&s, dram(&s)).out(&s).hint(rm(&s)),
        expect![[r#"
            cb 262144 tensor 0 peak 262144 out 0
            DRAM interleaved, 32x128256 elements total (bf16, row-major)"#]],
    );
}

#[test]
fn to_memory_config_keeps_the_page_layout() {
    let s = [64, 64];
    check(
        q("ttnn.to_memory_config").input(&s, dram(&s)).out(&s).hint(TtnnLayout::l1_interleaved(
            &s,
            BF16,
            PageLayout::RowMajor,
            W,
        )),
        expect![[
            r#"error: unsupported: ttnn.to_memory_config keeps the page layout; tilize or untilize with ttnn.to_layout"#
        ]],
    );
}

#[test]
fn reshard_cb_holds_one_shard_row() {
    let s = [1024, 256];
    check(
        q("ttnn.to_memory_config").input(&s, hs(&s, 32)).out(&s).hint(bs(&s, 4, 8)),
        expect![[r#"
            cb 2048 tensor 16384 peak 18432 out 16384
            L1 block_sharded 4x8, 8x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn embedding_has_no_sharded_output() {
    let (i, w, o) = ([1, 32], [1000, 64], [1, 32, 64]);
    check(
        q("ttnn.embedding").input(&i, dram(&i)).input(&w, dram(&w)).out(&o).hint(ws(&o, 2)),
        expect![[
            r#"error: unsupported: ttnn.embedding produces interleaved outputs only (EmbeddingRules)"#
        ]],
    );
}

fn rm_u32(shape: &[u64]) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, DataType::U32, PageLayout::RowMajor)
}

#[test]
fn embedding_bw_gives_each_core_a_share_of_the_embedding_width() {
    // 128 width tiles over 64 cores: two per core in the grad, output and packed-output CBs,
    // plus 32 uint32 indices, the uint8 mask and the chunk counter.
    let (i, w, g, o) = ([1, 32], [512, 4096], [1, 1, 32, 4096], [512, 4096]);
    check(
        q("ttnn.embedding_bw").input(&i, rm_u32(&i)).input(&w, rm(&w)).input(&g, l1(&g)).out(&o),
        expect![[r#"
            cb 12464 tensor 65536 peak 78000 out 65536
            L1 interleaved, 1x32 tiles per core (bf16)"#]],
    );
}

#[test]
fn embedding_bw_with_a_null_hint_lands_where_the_gradient_is() {
    // Two width tiles: one per core on two cores, the rest idle.
    let (i, w, g, o) = ([1, 32], [64, 64], [1, 1, 32, 64], [64, 64]);
    check(
        q("ttnn.embedding_bw").input(&i, rm_u32(&i)).input(&w, rm(&w)).input(&g, dram(&g)).out(&o),
        expect![[r#"
            cb 6320 tensor 0 peak 6320 out 0
            DRAM interleaved, 2x2 tiles total (bf16)"#]],
    );
}

#[test]
fn embedding_bw_hint_contributes_only_its_memory_config() {
    // tt-mlir's unit test builds the hint for the gradient's shape; tt-metal only sees its
    // memory config and sizes the weight-shaped result, 10x4 tiles, one tile on 40 cores.
    let (i, w, g, o) = ([1, 64], [320, 128], [1, 1, 64, 128], [320, 128]);
    check(
        q("ttnn.embedding_bw")
            .input(&i, rm_u32(&i))
            .input(&w, rm(&w))
            .input(&g, l1(&g))
            .out(&o)
            .hint(l1(&g)),
        expect![[r#"
            cb 6320 tensor 2048 peak 8368 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn argmax_needs_a_row_major_input() {
    let s = [64, 64];
    check(
        qa("ttnn.argmax", vec![("dim", AttrValue::Int(1))])
            .input(&s, dram(&s))
            .out(&[64])
            .dtype(DataType::U32),
        expect![[r#"error: unsupported: ttnn.argmax needs a row-major input (tt-metal#46340)"#]],
    );
}

// ---- normalization and reductions -----------------------------------------------------------

#[test]
fn rms_norm_rejects_a_height_sharded_input() {
    let s = [1024, 256];
    check(
        q("ttnn.rms_norm").input(&s, hs(&s, 32)).out(&s),
        expect![[r#"error: unsupported: ttnn.rms_norm rejects a height_sharded operand 0"#]],
    );
}

#[test]
fn rms_norm_rejects_width_sharding_on_a_ragged_grid() {
    let s = [32, 640];
    check(
        q("ttnn.rms_norm").input(&s, ws(&s, 20)).out(&s),
        expect![
            "error: unsupported: ttnn.rms_norm needs a width- or block-sharded input on a full rectangular grid, not L1 width_sharded 1x20, 1x1 tiles per core (bf16)"
        ],
    );
}

#[test]
fn rms_norm_accepts_block_sharding_on_a_full_grid() {
    let s = [1024, 1024];
    check(
        q("ttnn.rms_norm").input(&s, bs(&s, 8, 8)).out(&s),
        expect![[r#"
            cb 159744 tensor 32768 peak 192512 out 32768
            L1 block_sharded 8x8, 4x4 tiles per core (bf16)"#]],
    );
}

#[test]
fn rms_norm_with_gamma_and_beta_on_a_one_tile_row_takes_22_tiles() {
    // The base 18 tiles, gamma's row and its 2b staging, and beta's row.
    let (s, wv) = ([1, 32, 32, 32], [32]);
    check(
        q("ttnn.rms_norm").input(&s, l1(&s)).input(&wv, l1(&wv)).input(&wv, l1(&wv)).out(&s),
        expect![[r#"
            cb 45056 tensor 2048 peak 47104 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn layer_norm_buffers_the_mean_on_top_of_rms_norm() {
    let s = [128, 1024];
    let rms = q("ttnn.rms_norm").input(&s, dram(&s)).out(&s).run().unwrap();
    let ln = q("ttnn.layer_norm").input(&s, dram(&s)).out(&s).run().unwrap();
    expect!["rms 192512, layer 262144"]
        .assert_eq(&format!("rms {}, layer {}", rms.cb_peak, ln.cb_peak));
}

#[test]
fn sharded_softmax_writes_in_place() {
    let s = [2048, 32];
    check(
        q("ttnn.softmax").input(&s, hs(&s, 64)).out(&s).hint(hs(&s, 32)),
        expect![[
            r#"error: unsupported: sharded ttnn.softmax writes in place: input and output need the same shard spec"#
        ]],
    );
}

#[test]
fn softmax_over_another_dim_materializes_transposes() {
    let s = [64, 1024];
    check(
        qa("ttnn.softmax", vec![("dimension", AttrValue::Int(0))]).input(&s, l1(&s)).out(&s),
        expect![[r#"
            cb 14336 tensor 6144 peak 20480 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn reductions_reject_a_sharded_input() {
    let s = [256, 256];
    check(
        qa(
            "ttnn.mean",
            vec![("dim_arg", AttrValue::Ints(vec![1])), ("keep_dim", AttrValue::Bool(true))],
        )
        .input(&s, hs(&s, 8))
        .out(&[256, 1]),
        expect![[r#"error: unsupported: ttnn.mean rejects a height_sharded operand 0"#]],
    );
}

// ---- transformer, collectives, unknown ops ----------------------------------------------------

fn sdpa() -> Q {
    let qs = [1, 8, 128, 64];
    q("ttnn.scaled_dot_product_attention")
        .input(&qs, dram(&qs))
        .input(&qs, dram(&qs))
        .input(&qs, dram(&qs))
        .out(&qs)
}

#[test]
fn sdpa_answers_a_null_hint_with_dram() {
    check(
        sdpa(),
        expect![[r#"
            cb 57344 tensor 0 peak 57344 out 0
            DRAM interleaved, 32x2 tiles total (bf16)"#]],
    );
}

#[test]
fn sdpa_rejects_an_explicit_sharded_output_hint() {
    let qs = [1, 8, 128, 64];
    check(
        sdpa().hint(hs(&qs, 8)),
        expect![
            "error: unsupported: ttnn.scaled_dot_product_attention is only queried with a null output hint; a sharded output (L1 height_sharded 8x1, 4x2 tiles per core (bf16)) is rejected"
        ],
    );
}

#[test]
fn sdpa_needs_k_and_v_in_dram() {
    let qs = [1, 8, 128, 64];
    check(
        q("ttnn.scaled_dot_product_attention")
            .input(&qs, dram(&qs))
            .input(&qs, l1(&qs))
            .input(&qs, dram(&qs))
            .out(&qs),
        expect![
            "error: unsupported: ttnn.scaled_dot_product_attention needs K and V DRAM-interleaved; operand 1 is L1 interleaved, 1x1 tiles per core (bf16)"
        ],
    );
}

#[test]
fn rotary_embedding_rejects_a_width_sharded_input() {
    let s = [1, 8, 32, 128];
    check(
        q("ttnn.rotary_embedding_llama")
            .input(&s, ws(&s, 4))
            .input(&s, dram(&s))
            .input(&s, dram(&s))
            .out(&s),
        expect![[
            r#"error: unsupported: ttnn.rotary_embedding_llama rejects a width_sharded operand 0"#
        ]],
    );
}

/// tt-metal's rotary embedding writes a sharded output from an interleaved input, height
/// sharded over the most cores that divide its tile rows (tt-mlir's rope tests expect it).
#[test]
fn rotary_embedding_height_shards_its_output_as_tt_metal_does() {
    let s = [1, 8, 32, 128];
    let query = |hint| {
        q("ttnn.rotary_embedding")
            .input(&s, dram(&s))
            .input(&s, dram(&s))
            .input(&s, dram(&s))
            .out(&s)
            .hint(hint)
    };
    check(
        query(hs(&s, 8)),
        expect![[r#"
        cb 57344 tensor 8192 peak 65536 out 8192
        L1 height_sharded 8x1, 1x4 tiles per core (bf16)"#]],
    );
    // A hint on other cores gets the layout tt-metal computes, not the hint.
    check(
        query(hs(&s, 4)),
        expect![[r#"
        cb 57344 tensor 8192 peak 65536 out 8192
        L1 height_sharded 8x1, 1x4 tiles per core (bf16)"#]],
    );
    check(
        query(ws(&s, 4)),
        expect!["error: unsupported: ttnn.rotary_embedding cannot write a width_sharded output"],
    );
}

#[test]
fn unknown_ops_accept_only_dram_interleaved_operands() {
    let s = [64, 64];
    check(
        q("ttnn.frobnicate").input(&s, l1(&s)).out(&s),
        expect![
            "error: unsupported: the op model does not know ttnn.frobnicate; only DRAM-interleaved operands are accepted, operand 0 is L1 interleaved, 1x1 tiles per core (bf16)"
        ],
    );
    check(
        q("ttnn.frobnicate").input(&s, dram(&s)).out(&s),
        expect![[r#"
            cb 16384 tensor 0 peak 16384 out 0
            DRAM interleaved, 2x2 tiles total (bf16)"#]],
    );
    check(
        q("ttnn.frobnicate").input(&s, dram(&s)).out(&s).hint(l1(&s)),
        expect![
            "error: unsupported: the op model does not know ttnn.frobnicate; only a DRAM-interleaved output is accepted, not L1 interleaved, 1x1 tiles per core (bf16)"
        ],
    );
}

#[test]
fn collectives_stay_in_dram() {
    let s = [64, 64];
    check(
        q("ttnn.all_gather").input(&s, hs(&s, 2)).out(&[64, 128]),
        expect![[r#"error: unsupported: ttnn.all_gather rejects a height_sharded operand 0"#]],
    );
}

#[test]
fn fixed_ops_report_the_layout_they_have() {
    let s = [64, 64];
    check(
        q("ttnn.to_tensor_spec").input(&s, l1(&s)).out(&s),
        expect![[r#"
            cb 0 tensor 0 peak 0 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

#[test]
fn d2m_subgraph_counts_its_l1_inputs_and_output() {
    let s = [64, 1024];
    check(
        q("ttnn.d2m_subgraph").input(&s, l1(&s)).input(&s, dram(&s)).out(&s).hint(l1(&s)),
        expect![[r#"
            cb 0 tensor 4096 peak 4096 out 2048
            L1 interleaved, 1x1 tiles per core (bf16)"#]],
    );
}

// ---- robustness -----------------------------------------------------------------------------

#[test]
fn degenerate_queries_never_panic() {
    let names = [
        "ttnn.relu",
        "ttnn.add",
        "ttnn.where",
        "ttnn.matmul",
        "ttnn.linear",
        "ttnn.conv2d",
        "ttnn.conv_transpose2d",
        "ttnn.conv1d",
        "ttnn.conv3d",
        "ttnn.max_pool2d",
        "ttnn.upsample",
        "ttnn.concat",
        "ttnn.reshape",
        "ttnn.permute",
        "ttnn.transpose",
        "ttnn.slice_static",
        "ttnn.pad",
        "ttnn.repeat",
        "ttnn.to_layout",
        "ttnn.to_memory_config",
        "ttnn.embedding",
        "ttnn.embedding_bw",
        "ttnn.gather",
        "ttnn.sort",
        "ttnn.argmax",
        "ttnn.cumsum",
        "ttnn.softmax",
        "ttnn.rms_norm",
        "ttnn.batch_norm_inference",
        "ttnn.group_norm",
        "ttnn.sum",
        "ttnn.prod",
        "ttnn.scaled_dot_product_attention",
        "ttnn.rotary_embedding",
        "ttnn.nlp_concat_heads_decode",
        "ttnn.all_gather",
        "ttnn.empty",
        "ttnn.rand",
        "ttnn.get_device",
        "ttnn.d2m_subgraph",
        "ttnn.sampling",
        "ttnn.quantize",
        "ttnn.foo",
    ];
    let shapes: [&[u64]; 5] = [&[], &[0], &[0, 0], &[1, 0, 32], &[u64::MAX, 2]];
    let mut answered = 0;
    for name in names {
        for s in shapes {
            for layout in [dram(s), l1(s), rm(s)] {
                for n_inputs in 0..4 {
                    let mut query = q(name).out(s);
                    for _ in 0..n_inputs {
                        query = query.input(s, layout.clone());
                    }
                    for hint in [
                        OutputHint::Null,
                        OutputHint::Layout(l1(s)),
                        OutputHint::Partial(l1(s).partial()),
                    ] {
                        query.0.output = hint;
                        let _ = query.run();
                        answered += 1;
                    }
                }
            }
        }
    }
    assert_eq!(answered, names.len() * 5 * 3 * 4 * 3);
    // Absurd attributes from malformed IR are rejected, not overflowed.
    let huge = [
        ("in_channels", AttrValue::Int(i64::MAX)),
        ("out_channels", AttrValue::Int(i64::MAX)),
        ("batch_size", AttrValue::Int(i64::MAX)),
        ("input_height", AttrValue::Int(i64::MAX)),
        ("input_width", AttrValue::Int(-5)),
        ("kernel_size", AttrValue::Ints(vec![i64::MAX, i64::MAX])),
        ("stride", AttrValue::Ints(vec![0, 0])),
        ("padding", AttrValue::Ints(vec![i64::MAX])),
    ];
    let s = [1, 1, 64, 32];
    for name in ["ttnn.conv2d", "ttnn.conv_transpose2d", "ttnn.conv3d", "ttnn.max_pool2d"] {
        let huge = huge.iter().map(|(k, v)| {
            (
                *k,
                match v {
                    AttrValue::Int(i) => AttrValue::Int(*i),
                    AttrValue::Ints(i) => AttrValue::Ints(i.clone()),
                    AttrValue::Bool(b) => AttrValue::Bool(*b),
                    AttrValue::Str(x) => AttrValue::Str(x),
                },
            )
        });
        let query = qa(name, huge.collect()).input(&s, dram(&s)).input(&s, dram(&s)).out(&s);
        for ty in [Conv2dSliceType::L1Full, Conv2dSliceType::DramHeight, Conv2dSliceType::DramWidth]
        {
            let res = query.clone().config(sliced(ty, 0)).run();
            let rejected =
                matches!(res, Err(OpError::Invalid { .. } | OpError::Unsupported { .. }));
            assert!(rejected, "{name} {ty}: {res:?}");
        }
        let res = query.run();
        assert!(matches!(res, Err(OpError::Invalid { .. })), "{name}: {res:?}");
    }
}

#[test]
fn slicing_a_million_row_image_tries_a_bounded_number_of_slice_counts() {
    // 2^20 output rows would allow 2^20 slices. The model tries at most 1024 counts, so the
    // query answers quickly even when no count fits (here, with nearly all L1 in use), and it
    // refuses to evaluate more slices than that.
    let rows = 1 << 20;
    let (i, w, o) = ([1, 1, 4 * rows, 32], [32, 32, 3, 3], [1, 1, 4 * rows, 32]);
    let mut attrs = conv_attrs(32, 32, 4, 3, 1, 1);
    attrs[3] = ("input_height", AttrValue::Int(rows as i64));
    let q = qa("ttnn.conv2d", attrs).input(&i, dram(&i)).input(&w, rm(&w)).out(&o).hint(dram(&o));
    let auto = q.clone().config(sliced(Conv2dSliceType::DramHeight, 0));
    let lines = [0, 1_300_000].map(|in_use| {
        let q = auto.clone().in_use(in_use);
        let text = render(&q, &q.run());
        format!("{in_use}: {}", text.lines().next().unwrap_or_default())
            + &text.lines().nth(2).map(|l| format!(" ({l})")).unwrap_or_default()
    });
    expect![[r#"
        0: cb 64128 tensor 1241984 peak 1306112 out 0 (conv: shard_layout None, #ttnn.conv2d_slice_config<dram_height, 56>)
        1300000: error: out of L1: needs 1400608 bytes per core, 1325652 available"#]].assert_eq(&lines.join("\n"));
    let res = q.clone().config(sliced(Conv2dSliceType::DramHeight, 2048)).run();
    expect![
        "error: unsupported: ttnn.conv2d: 2048 slices are more than the 1024 the model evaluates"
    ]
    .assert_eq(&render(&q, &res));
}

// ---- cache ----------------------------------------------------------------------------------

#[test]
fn cache_counts_hits_and_misses_and_keeps_failures() {
    let model = CachedOpModel::new(AnalyticalModel);
    let t = Target::n150();
    let s = [64, 64];
    let ok = q("ttnn.relu").input(&s, dram(&s)).out(&s).0;
    let bad = q("ttnn.relu").input(&s, dram(&s)).out(&[32, 32]).0;
    let first = model.query(&t, &ok);
    assert_eq!(model.query(&t, &ok), first);
    assert!(model.query(&t, &bad).is_err());
    assert!(model.query(&t, &bad).is_err());
    // Another target is another key.
    let _ = model.query(&Target::p150(), &ok);
    expect![[r#"CacheStats { hits: 2, misses: 3, entries: 3 }"#]]
        .assert_eq(&format!("{:?}", model.stats()));
}

#[test]
fn cache_is_shared_across_threads() {
    let model = CachedOpModel::new(AnalyticalModel);
    let t = Target::n150();
    let s = [64, 64];
    let query = q("ttnn.relu").input(&s, dram(&s)).out(&s).0;
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..100 {
                    assert!(model.query(&t, &query).is_ok());
                }
            });
        }
    });
    let stats = model.stats();
    assert_eq!(stats.hits + stats.misses, 200);
    assert_eq!(stats.entries, 1);
}
