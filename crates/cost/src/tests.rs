//! Pinned arithmetic on small ops (hand-derived in the comments), monotonicity properties over
//! sweeps of shapes and grids, and robustness on absurd inputs.
//!
//! Wormhole n150 figures used in the derivations: 1000 MHz (1 cycle = 1 ns), 8x8 workers,
//! matmul 4096 FLOP/cycle/core per fidelity pass, FPU eltwise 128 op/cycle, FPU reduce 512
//! FLOP/cycle, SFPU 32 lanes with 2 load/store instructions per element, DRAM 288 GB/s at
//! 92% (= 264.96 B/ns), NoC 32 B/cycle/core, L1 64 B/cycle/core, dispatch 3000 ns, HiFi4
//! (4 passes) by default.

use expect_test::{Expect, expect};
use opmodel::{
    BinaryOp, CreationOp, FixedOp, MatmulAttrs, NormOp, OpConfig, OpKind, ReduceOp, TensorDesc,
    UnaryOp, op_kind,
};
use target::Target;
use ttnn_types::{
    CoreCoord, DataType, DeviceComputeKernelConfig, Grid, MathFidelity, MatmulProgramConfig,
    PageLayout, TensorMemoryLayout, TtnnLayout,
};

use crate::{Bound, CostModel, Figures, OpCost, OpUnit, PlanStep, UnitTensor};

const WORKER: Grid = Grid::new(8, 8);
const BF16: DataType = DataType::BF16;
const TILE: PageLayout = PageLayout::Tile;

fn n150() -> CostModel {
    CostModel::wormhole_n150()
}

fn dram(shape: &[u64]) -> TensorDesc {
    TensorDesc::new(shape, TtnnLayout::dram_interleaved(shape, BF16, TILE))
}

fn l1(shape: &[u64]) -> TensorDesc {
    TensorDesc::new(shape, TtnnLayout::l1_interleaved(shape, BF16, TILE, WORKER))
}

fn shard(shape: &[u64], ml: TensorMemoryLayout, grid: Grid) -> TensorDesc {
    TensorDesc::new(shape, TtnnLayout::sharded(shape, BF16, TILE, ml, grid, WORKER).unwrap())
}

fn hs(shape: &[u64], n: u64) -> TensorDesc {
    shard(shape, TensorMemoryLayout::HeightSharded, Grid::new(n, 1))
}

fn bs(shape: &[u64], rows: u64, cols: u64) -> TensorDesc {
    shard(shape, TensorMemoryLayout::BlockSharded, Grid::new(rows, cols))
}

fn matmul() -> OpKind {
    OpKind::Matmul(MatmulAttrs::default())
}

fn fidelity(f: MathFidelity) -> OpConfig {
    OpConfig::Matmul {
        program: None,
        compute: Some(DeviceComputeKernelConfig {
            math_fidelity: Some(f),
            ..DeviceComputeKernelConfig::default()
        }),
    }
}

#[track_caller]
fn check(cost: &OpCost, expect: Expect) {
    expect.assert_eq(&cost.to_string());
}

#[test]
fn the_three_targets_get_their_own_figures() {
    let text: Vec<String> = [Target::n150(), Target::n300(), Target::p150()]
        .iter()
        .map(|t| CostModel::for_target(t).figures().to_string())
        .collect();
    expect![[r#"
        n150 (wormhole n150)
          clock                  1000 MHz, 8x8 workers
          matmul                 4096 FLOP/cycle/core (LoFi), sustained [53, 53, 65, 77]% (LoFi..HiFi4)
          fpu eltwise            128 op/cycle/core
          fpu reduce             512 FLOP/cycle/core
          sfpu                   32 lanes, +2 load/store, transcendental 10 ops
          riscv scalar loop      36 cycles/element
          dram                   288 GB/s peak, 92% sustained
          noc                    32 B/cycle/core
          l1                     64 B/cycle/core
          noc latency            read 259 cycles, write 256 cycles
          dispatch               3000 ns/op
          default fidelity       hifi4
        n300 (wormhole n300 (per chip))
          clock                  1000 MHz, 8x8 workers
          matmul                 4096 FLOP/cycle/core (LoFi), sustained [53, 53, 65, 77]% (LoFi..HiFi4)
          fpu eltwise            128 op/cycle/core
          fpu reduce             512 FLOP/cycle/core
          sfpu                   32 lanes, +2 load/store, transcendental 10 ops
          riscv scalar loop      36 cycles/element
          dram                   288 GB/s peak, 92% sustained
          noc                    32 B/cycle/core
          l1                     64 B/cycle/core
          noc latency            read 259 cycles, write 256 cycles
          dispatch               3000 ns/op
          default fidelity       hifi4
        p150 (blackhole p150)
          clock                  1350 MHz, 10x13 workers
          matmul                 4096 FLOP/cycle/core (LoFi), sustained [53, 53, 65, 77]% (LoFi..HiFi4)
          fpu eltwise            128 op/cycle/core
          fpu reduce             512 FLOP/cycle/core
          sfpu                   32 lanes, +2 load/store, transcendental 10 ops
          riscv scalar loop      36 cycles/element
          dram                   512 GB/s peak, 98% sustained
          noc                    64 B/cycle/core
          l1                     64 B/cycle/core
          noc latency            read 403 cycles, write 404 cycles
          dispatch               3000 ns/op
          default fidelity       hifi4"#]]
    .assert_eq(&text.join("\n"));
}

#[test]
fn a_32x32x32_bf16_matmul_on_one_core_in_l1_is_dispatch_bound() {
    // A, B and the output are one bf16 tile each (2048 B), height sharded on one core.
    // flops = 2 * 32 * 32 * 32 = 65536.
    // compute: 65536 FLOP * 4 HiFi4 passes / 4096 FLOP/cycle = 64 cycles at peak
    //          (GEMM_FLOPS.md: 64 cycles per tile at HiFi4), sustained at 77%: 84 ns.
    // memory: 3 * 2048 B through one core's L1 at 64 B/ns = 96 ns; no DRAM, no NoC.
    // total = 3000 + max(84, 96) = 3096, and the dispatch cost dominates.
    let (a, b, out) = (hs(&[32, 32], 1), hs(&[32, 32], 1), hs(&[32, 32], 1));
    let c = n150().op_cost(&matmul(), &[a, b], &out, &OpConfig::None);
    assert_eq!(
        (c.flops, c.compute_ns, c.l1_ns, c.memory_ns, c.total_ns, c.cores, c.bound),
        (65536, 84, 96, 96, 3096, 1, Bound::Overhead)
    );
    check(
        &c,
        expect![[r#"
            3096 ns = dispatch 3000 + max(compute 84, memory 96 ~ dram 0 + noc 0 + l1 96), overhead-bound
            65536 flops on 1 cores; bytes dram 0, noc 0, l1 6144"#]],
    );
}

#[test]
fn each_fidelity_pass_costs_16_cycles_per_tile_at_the_sustained_share_of_peak() {
    // One tile: 16 cycles per pass at peak (LoFi 16, HiFi2 32, HiFi3 48, HiFi4 64), divided
    // by the sustained shares 53, 53, 65 and 77 %: 30.2, 60.4, 73.8, 83.1, rounded up.
    let (a, b, out) = (hs(&[32, 32], 1), hs(&[32, 32], 1), hs(&[32, 32], 1));
    let compute: Vec<u64> =
        [MathFidelity::LoFi, MathFidelity::HiFi2, MathFidelity::HiFi3, MathFidelity::HiFi4]
            .into_iter()
            .map(|f| {
                n150().op_cost(&matmul(), &[a.clone(), b.clone()], &out, &fidelity(f)).compute_ns
            })
            .collect();
    assert_eq!(compute, vec![31, 61, 74, 84]);
}

#[test]
fn an_eltwise_add_of_dram_tensors_is_dram_bound() {
    // 1024x1024 bf16 = 32x32 = 1024 tiles = 2 097 152 B per tensor; 64 cores, 16 tiles each.
    // compute: 16 tiles * 1024 adds / 128 per cycle = 128 ns; flops = 1024 * 1024.
    // dram: 3 tensors = 6 291 456 B at 264.96 B/ns = 23744.9 ns (the 64 NoC ports would
    //       carry 2048 B/ns, so DRAM is the narrower pipe).
    // l1: every byte is staged in a circular buffer: 6 291 456 B / (64 * 64 B/ns) = 1536 ns.
    // memory = ceil(23744.9 + 1536) = 25281; total = 3000 + 25281 = 28281.
    let x = dram(&[1024, 1024]);
    let c = n150().op_cost(
        &OpKind::Binary(BinaryOp::Add),
        &[x.clone(), x.clone()],
        &x,
        &OpConfig::None,
    );
    assert_eq!(
        (c.compute_ns, c.dram_ns, c.l1_ns, c.memory_ns, c.total_ns, c.bound),
        (128, 23745, 1536, 25281, 28281, Bound::Dram)
    );
    assert_eq!((c.flops, c.dram_bytes, c.cores), (1_048_576, 6_291_456, 64));
}

#[test]
fn an_l1_interleaved_to_block_sharded_reshard_crosses_the_noc_once() {
    // 2 097 152 B leave the interleaved banks and land in 8x8 shards (4x4 tiles, no padding).
    // noc: 2 097 152 B / (64 * 32 B/ns) = 1024 ns; l1: read + write = 4 194 304 B / 4096 B/ns
    // = 1024 ns. total = 3000 + 2048 = 5048.
    let from = l1(&[1024, 1024]);
    let to = bs(&[1024, 1024], 8, 8).layout;
    let c = n150().reshard_cost(&from, &to);
    check(
        &c,
        expect![[r#"
            5048 ns = dispatch 3000 + max(compute 0, memory 2048 ~ dram 0 + noc 1024 + l1 1024), overhead-bound
            0 flops on 64 cores; bytes dram 0, noc 2097152, l1 4194304"#]],
    );
}

#[test]
fn a_spill_writes_to_dram_and_the_consumer_pays_the_read_back() {
    // dram: 2 097 152 B / 264.96 B/ns = 7914.98 ns; l1: the shard reads, 2 097 152 B /
    // 4096 B/ns = 512 ns. total = 3000 + ceil(8426.98) = 11427.
    let t = bs(&[1024, 1024], 8, 8);
    let c = n150().spill_cost(&t);
    check(
        &c,
        expect![[r#"
            11427 ns = dispatch 3000 + max(compute 0, memory 8427 ~ dram 7915 + noc 0 + l1 512), dram-bound
            0 flops on 64 cores; bytes dram 2097152, noc 0, l1 2097152"#]],
    );
    // The relu that reads the spilled tensor back pays DRAM for it; reading it from its
    // shard would have cost only L1.
    let relu = OpKind::Unary(UnaryOp::Relu);
    let from_dram = n150().op_cost(&relu, &[dram(&[1024, 1024])], &t, &OpConfig::None);
    let from_shard = n150().op_cost(&relu, std::slice::from_ref(&t), &t, &OpConfig::None);
    assert_eq!(from_dram.dram_bytes, 2_097_152);
    assert!(from_dram.total_ns > from_shard.total_ns);
    // Spilling what is already in DRAM is free.
    assert_eq!(n150().spill_cost(&dram(&[64, 64])).bound, Bound::Free);
}

#[test]
fn the_lower_bound_of_a_matmul_relu_add_chain() {
    // y = relu(x @ W) + x, 256x256 bf16 (8x8 tiles = 131 072 B each), W fixed in DRAM.
    //
    // matmul, best candidate block sharded 8x8 (64 cores, 1x1-tile output blocks):
    //   compute: 1 tile * 2*32*32*256 = 524 288 FLOP * 4 passes / 4096 = 512 ns.
    //   x is a local shard (l1 131 072); W from DRAM (dram 131 072, staged: l1 131 072);
    //   each A row block is needed by 8 core columns and each B column block by 8 core rows:
    //   7 * 131 072 = 917 504 B multicast for each (noc and l1); output local (l1 131 072).
    //   dram 131 072 / 264.96 = 494.69; noc 1 835 008 / 2048 = 896; l1 2 228 224 / 4096 = 544.
    //   total = 3000 + ceil(1934.69) = 4935. Every other split has fewer cores (height or
    //   width splits over 8 tile rows or columns: compute 4096) or the same.
    // relu, block sharded 8x8: 1 tile per core, 1024 * (1 + 2) SFPU instructions / 32 lanes
    //   = 96 ns; l1 2 * 131 072 / 4096 = 64 ns. total = 3000 + 96 = 3096.
    // add, block sharded 8x8: 1024 / 128 = 8 ns of compute; l1 3 * 131 072 / 4096 = 96 ns.
    //   total = 3000 + 96 = 3096.
    // bound = 4935 + 3096 + 3096 = 11127.
    let s = [256, 256];
    let free = || UnitTensor::free(&s, BF16, TILE);
    let w = UnitTensor::fixed(&s, TtnnLayout::dram_interleaved(&s, BF16, TILE));
    let ops = [
        OpUnit { kind: matmul(), inputs: vec![free(), w], output: free(), config: OpConfig::None },
        OpUnit {
            kind: OpKind::Unary(UnaryOp::Relu),
            inputs: vec![free()],
            output: free(),
            config: OpConfig::None,
        },
        OpUnit {
            kind: OpKind::Binary(BinaryOp::Add),
            inputs: vec![free(), free()],
            output: free(),
            config: OpConfig::None,
        },
    ];
    let model = n150();
    let per_op: Vec<String> = ops.iter().map(|op| model.op_lower_bound(op).to_string()).collect();
    expect![[r#"
        4935 ns = dispatch 3000 + max(compute 665, memory 1935 ~ dram 495 + noc 896 + l1 544), overhead-bound
        33554432 flops on 64 cores; bytes dram 131072, noc 1835008, l1 2228224
        3096 ns = dispatch 3000 + max(compute 96, memory 64 ~ dram 0 + noc 0 + l1 64), overhead-bound
        65536 flops on 64 cores; bytes dram 0, noc 0, l1 262144
        3096 ns = dispatch 3000 + max(compute 8, memory 96 ~ dram 0 + noc 0 + l1 96), overhead-bound
        65536 flops on 64 cores; bytes dram 0, noc 0, l1 393216"#]]
    .assert_eq(&per_op.join("\n"));
    assert_eq!(model.lower_bound(&ops), 11127);

    // Any concrete plan costs at least the bound: all in DRAM, all L1 interleaved, and the
    // bound's own choice (block sharded) with x resharded from DRAM first.
    let wd = dram(&s);
    let plan = |x: TensorDesc, h: TensorDesc| -> u64 {
        let mm = [x.clone(), wd.clone()];
        let relu_in = [h.clone()];
        let add_in = [h.clone(), x.clone()];
        let steps = [
            PlanStep::Op { kind: &ops[0].kind, inputs: &mm, output: &h, config: &OpConfig::None },
            PlanStep::Op {
                kind: &ops[1].kind,
                inputs: &relu_in,
                output: &h,
                config: &OpConfig::None,
            },
            PlanStep::Op {
                kind: &ops[2].kind,
                inputs: &add_in,
                output: &h,
                config: &OpConfig::None,
            },
        ];
        model.plan_cost(&steps).total_ns
    };
    for total in [plan(dram(&s), dram(&s)), plan(l1(&s), l1(&s)), plan(bs(&s, 8, 8), bs(&s, 8, 8))]
    {
        assert!(total >= 11127, "{total}");
    }
}

#[test]
fn no_placement_of_an_op_costs_less_than_its_lower_bound() {
    let model = n150();
    for (kind, n) in sweep_kinds() {
        for shape in sweep_shapes() {
            let out_shape = sweep_output(&kind, &shape);
            let in_shapes = sweep_input_shapes(&kind, n, &shape);
            let unit = OpUnit {
                kind: kind.clone(),
                inputs: in_shapes.iter().map(|s| UnitTensor::free(s, BF16, TILE)).collect(),
                output: UnitTensor::free(&out_shape, BF16, TILE),
                config: OpConfig::None,
            };
            let bound = model.op_lower_bound(&unit).total_ns;
            // Every layout family on a few grids, for the operands and the result alike.
            let layouts = |s: &[u64]| -> Vec<TensorDesc> {
                let (th, tw) = (s[0].div_ceil(32), s[1].div_ceil(32));
                let mut v = vec![dram(s), l1(s)];
                for n in [1, 2, 3, 7, 8, 13, 64] {
                    if n <= th {
                        v.push(hs(s, n));
                    }
                    if n <= tw {
                        v.push(shard(s, TensorMemoryLayout::WidthSharded, Grid::new(1, n)));
                    }
                }
                for (r, c) in [(2, 2), (3, 5), (8, 8)] {
                    if r <= th && c <= tw {
                        v.push(bs(s, r, c));
                    }
                }
                v
            };
            for out in layouts(&out_shape) {
                for first in layouts(&in_shapes[0]) {
                    let mut inputs = vec![first.clone()];
                    for s in &in_shapes[1..] {
                        // A matmul's B is never sharded; other second operands follow the first.
                        inputs.push(if kind.is_matmul_like() { l1(s) } else { first.clone() });
                    }
                    // The bound ranges over plans that respect the op's input rules.
                    let legal = inputs.iter().enumerate().all(|(i, t)| {
                        t.layout
                            .memory_layout
                            .is_none_or(|ml| !kind.rejected_input_memory_layouts(i).contains(&ml))
                    });
                    if !legal {
                        continue;
                    }
                    let c = model.op_cost(&kind, &inputs, &out, &OpConfig::None);
                    assert!(c.total_ns >= bound, "{kind:?} {shape:?} {out:?}: {c} < {bound}");
                }
            }
        }
    }
}

#[test]
fn an_operand_left_in_dram_bounds_reading_it_there_and_converting_it_first() {
    // A weight the plan cannot move (a const-eval result, an argument) is in the bound read
    // from DRAM by the one op that reads it. A plan either reads it there or converts it to
    // L1 first and reads it there: both cost at least the bound.
    let model = n150();
    for (kind, n) in sweep_kinds() {
        for shape in sweep_shapes() {
            let out_shape = sweep_output(&kind, &shape);
            let in_shapes = sweep_input_shapes(&kind, n, &shape);
            for fixed in 0..n {
                let inputs: Vec<UnitTensor> = in_shapes
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        if i == fixed {
                            UnitTensor::fixed(s, dram(s).layout)
                        } else {
                            UnitTensor::free(s, BF16, TILE)
                        }
                    })
                    .collect();
                let output = UnitTensor::free(&out_shape, BF16, TILE);
                let unit = OpUnit { kind: kind.clone(), inputs, output, config: OpConfig::None };
                let bound = model.op_lower_bound(&unit).total_ns;
                let s = &in_shapes[fixed];
                let (th, tw) = (s[0].div_ceil(32), s[1].div_ceil(32));
                let mut arrivals = vec![dram(s), l1(s)];
                for n in [2, 8, 64] {
                    if n <= th {
                        arrivals.push(hs(s, n));
                    }
                }
                if th >= 8 && tw >= 8 {
                    arrivals.push(bs(s, 8, 8));
                }
                for arrived in arrivals {
                    let legal = arrived
                        .layout
                        .memory_layout
                        .is_none_or(|ml| !kind.rejected_input_memory_layouts(fixed).contains(&ml));
                    if !legal {
                        continue;
                    }
                    let convert = if arrived == dram(s) {
                        0
                    } else {
                        model.reshard_cost(&dram(s), &arrived.layout).total_ns
                    };
                    for out in [dram(&out_shape), l1(&out_shape)] {
                        let inputs: Vec<TensorDesc> = in_shapes
                            .iter()
                            .enumerate()
                            .map(|(i, s)| if i == fixed { arrived.clone() } else { l1(s) })
                            .collect();
                        let c = model.op_cost(&kind, &inputs, &out, &OpConfig::None).total_ns;
                        assert!(
                            convert + c >= bound,
                            "{kind:?} {shape:?} operand {fixed} as {:?}: {convert} + {c} < {bound}",
                            arrived.layout.memory_layout
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn plan_cost_adds_up_ops_reshards_and_spills() {
    let model = n150();
    let (x, y) = (dram(&[1024, 1024]), bs(&[1024, 1024], 8, 8));
    let relu = OpKind::Unary(UnaryOp::Relu);
    let inputs = [y.clone()];
    let steps = [
        PlanStep::Reshard { from: &x, to: &y.layout },
        PlanStep::Op { kind: &relu, inputs: &inputs, output: &y, config: &OpConfig::None },
        PlanStep::Spill(&y),
    ];
    let plan = model.plan_cost(&steps);
    let parts = [
        model.reshard_cost(&x, &y.layout),
        model.op_cost(&relu, &inputs, &y, &OpConfig::None),
        model.spill_cost(&y),
    ];
    assert_eq!(plan.steps, parts.to_vec());
    assert_eq!(
        (plan.reshard_ns, plan.op_ns, plan.spill_ns, plan.total_ns),
        (
            parts[0].total_ns,
            parts[1].total_ns,
            parts[2].total_ns,
            parts.iter().map(|c| c.total_ns).sum::<u64>()
        )
    );
    assert_eq!(plan.dram_bytes, 2 * 2_097_152);
}

#[test]
fn views_allocations_and_plumbing_cost_nothing() {
    let model = n150();
    let x = dram(&[2, 32, 64]);
    let view = TensorDesc::new(&[64, 64], TtnnLayout::dram_interleaved(&[64, 64], BF16, TILE));
    let cases = [
        model.op_cost(&OpKind::Reshape, std::slice::from_ref(&x), &view, &OpConfig::None),
        model.op_cost(&OpKind::ToMemoryConfig, std::slice::from_ref(&x), &x, &OpConfig::None),
        model.op_cost(
            &OpKind::Fixed(FixedOp::Deallocate),
            std::slice::from_ref(&x),
            &x,
            &OpConfig::None,
        ),
        model.op_cost(&OpKind::Creation(CreationOp::Empty), &[], &x, &OpConfig::None),
        model.reshard_cost(&x, &x.layout),
    ];
    for c in cases {
        assert_eq!(c, OpCost::free());
    }
    // A reshape that moves tiles (the last dim changes) is real work.
    let moved = TensorDesc::new(&[32, 128], TtnnLayout::dram_interleaved(&[32, 128], BF16, TILE));
    let c = model.op_cost(&OpKind::Reshape, &[x], &moved, &OpConfig::None);
    assert_eq!((c.flops, c.bound), (0, Bound::Overhead));
}

#[test]
fn sharded_rms_norm_plus_a_reshard_beats_the_one_core_interleaved_kernel_as_in_8021() {
    // tt-mlir #8021: rms_norm on 32x2880 took 112 us interleaved (one tile row, one core)
    // and 38 us sharded on 64 cores plus a 5-10 us reshard. The model keeps the order.
    //
    // Interleaved, one core, 90 tiles: x^2, 1/rms and weight multiplies are 3 * 1024 FPU
    // multiplies per tile at 128 / 4 passes per cycle (96 cycles) and the row sum 2048 FLOP at
    // 512 / 4 (16 cycles): 90 * 112 = 10080 ns. Input, weight and output (184 320 B each) are
    // L1 interleaved, so all cross the one core's NoC port (552 960 / 32 = 17280 ns) and its
    // L1 (552 960 / 64 = 8640 ns): 3000 + 25920 = 28920.
    // Reshard to width sharding over 64 cores: 90 tile columns in 2-tile shards fill 45 of
    // them. 184 320 B over the NoC (64 cores: 90 ns) and read plus written in L1 (90 ns).
    // Sharded kernel on the 45 cores with data: 2 tiles each, 2 * 112 = 224 ns; the weight
    // still comes over the NoC (184 320 / (45 * 32) = 128 ns) and 552 960 B pass through L1
    // (192 ns); the rows are split over the 64 cores of the grid, so the row statistic is
    // reduced across them in two stages (3777 cycles, worked out in
    // `a_width_sharded_rms_norm_waits_for_its_row_statistics_to_cross_the_grid_twice`):
    // 3000 + 320 + 3777 = 7097.
    let model = n150();
    let shape = [1, 1, 32, 2880];
    let kind = OpKind::Norm(NormOp::RmsNorm);
    let weight = l1(&[2880]);
    let x = l1(&shape);
    let interleaved = model.op_cost(&kind, &[x.clone(), weight.clone()], &x, &OpConfig::None);
    let ws = shard(&shape, TensorMemoryLayout::WidthSharded, Grid::new(1, 64));
    let reshard = model.reshard_cost(&x, &ws.layout);
    let sharded = model.op_cost(&kind, &[ws.clone(), weight], &ws, &OpConfig::None);
    check(
        &interleaved,
        expect![[r#"
            28920 ns = dispatch 3000 + max(compute 10080, memory 25920 ~ dram 0 + noc 17280 + l1 8640), noc-bound
            460800 flops on 1 cores; bytes dram 0, noc 552960, l1 552960"#]],
    );
    check(
        &reshard,
        expect![[r#"
            3180 ns = dispatch 3000 + max(compute 0, memory 180 ~ dram 0 + noc 90 + l1 90), overhead-bound
            0 flops on 64 cores; bytes dram 0, noc 184320, l1 368640"#]],
    );
    check(
        &sharded,
        expect![[r#"
            7097 ns = dispatch 3000 + max(compute 224, memory 320 ~ dram 0 + noc 128 + l1 192) + sync 3777, sync-bound
            460800 flops on 45 cores; bytes dram 0, noc 184320, l1 552960"#]],
    );
    assert!(reshard.total_ns + sharded.total_ns < interleaved.total_ns);
}

#[test]
fn a_width_sharded_rms_norm_waits_for_its_row_statistics_to_cross_the_grid_twice() {
    // Llama-3.2-1B's RMS norm: one tile row of 64 tiles, a tile per core on 64 cores (8x8, so
    // tt-metal's sharded program reduces in two stages). Per-tile work and bytes are those of
    // one tile per core (about 0.5 µs); what dominates is the cross-core reduction of E[x²]:
    //   signal the sender and receive its go-ahead: 2 writes              512
    //   each grid row's worker reads 8 partials: 259 + 8 x 2048 / 32      771
    //     and reduces them (8 x 2048 FLOP at 512 / 4 passes)             128
    //   signal the second stage, read 7 results: 256 + 259 + 7 x 64      963
    //     and reduce them                                                112
    //   gather on the sender and multicast: 259 + 64 + 2 x 256 + 64       899
    //   epsilon and rsqrt of the one statistics tile: 8 + 384            392
    // 3777 cycles. Held out: tt-mlir's profile measures 11.6 µs for this op.
    let model = n150();
    let x = [1, 1, 32, 2048];
    let norm = OpKind::Norm(NormOp::RmsNorm);
    let ws = shard(&x, TensorMemoryLayout::WidthSharded, Grid::new(1, 64));
    let c = model.op_cost(&norm, &[ws.clone(), l1(&[2048])], &ws, &OpConfig::None);
    check(
        &c,
        expect![[r#"
            6937 ns = dispatch 3000 + max(compute 112, memory 160 ~ dram 0 + noc 64 + l1 96) + sync 3777, sync-bound
            327680 flops on 64 cores; bytes dram 0, noc 131072, l1 393216"#]],
    );
    // Height sharded, every core holds whole rows: no reduction crosses cores.
    let rows = [1, 1, 2048, 2048];
    let hs = shard(&rows, TensorMemoryLayout::HeightSharded, Grid::new(1, 64));
    let c = model.op_cost(&norm, &[hs.clone(), l1(&[2048])], &hs, &OpConfig::None);
    assert_eq!(c.sync_ns, 0);
    // A layer norm reduces two statistics, the mean and then the variance, one after the other.
    let layer = OpKind::Norm(NormOp::LayerNorm);
    let c = model.op_cost(&layer, &[ws.clone(), l1(&[2048]), l1(&[2048])], &ws, &OpConfig::None);
    assert_eq!(c.sync_ns, 2 * (3777 - 392) + 392);
    // Softmax is not split this way: tt-metal's sharded softmax gives each core whole rows.
    let softmax = OpKind::Softmax { dim: -1, numeric_stable: true };
    let c = model.op_cost(&softmax, std::slice::from_ref(&ws), &ws, &OpConfig::None);
    assert_eq!(c.sync_ns, 0);
}

#[test]
fn a_block_sharded_layer_norm_reduces_each_grid_row_in_one_stage() {
    // BERT's layer norm, 3072x768 block sharded on 8x8 (12 x 3 tiles a core): the 8 cores of a
    // grid row share its 12 tile rows, which tt-metal hands to all-to-all workers
    // ceil(12 / 8) = 2 rows at a time, so 6 workers. Per statistic:
    //   signal and go-ahead: 2 writes                                     512
    //   a worker reads 2 x 8 partials: 259 + 16 x 64, reduces them: 256   1539
    //   the 6 workers report to the sender: 1 write                       256
    //   gather 12 rows and multicast them: 259 + 768 + 2 x 256 + 768      2307
    // 4614 cycles, twice (mean, then variance), plus epsilon and rsqrt of a worker's 2 tiles
    // (784): 10012 cycles.
    let model = n150();
    let x = [1, 1, 3072, 768];
    let layer = OpKind::Norm(NormOp::LayerNorm);
    let bs = shard(&x, TensorMemoryLayout::BlockSharded, Grid::new(8, 8));
    let c = model.op_cost(&layer, &[bs.clone(), l1(&[768]), l1(&[768])], &bs, &OpConfig::None);
    assert_eq!(c.sync_ns, 10_012);
}

#[test]
fn multi_core_reuse_rereads_shared_blocks_where_multicast_forwards_them() {
    // 256x256 @ 256x256 from DRAM into an 8x8 block-sharded output with 1x1-tile blocks:
    // every A row block is needed by 8 cores and every B column block by 8 cores.
    let model = n150();
    let (a, b, out) = (dram(&[256, 256]), dram(&[256, 256]), bs(&[256, 256], 8, 8));
    let program = |multicast: bool| {
        let (grid, in0_block_w, out_subblock_h, out_subblock_w) =
            (CoreCoord { x: 8, y: 8 }, 2, 1, 1);
        let p = if multicast {
            MatmulProgramConfig::MultiCast2D {
                grid,
                in0_block_w,
                out_subblock_h,
                out_subblock_w,
                out_block_h: 1,
                out_block_w: 1,
                per_core_m: 1,
                per_core_n: 1,
                transpose_mcast: false,
                fused_activation: None,
                fuse_batch: true,
            }
        } else {
            MatmulProgramConfig::MultiCoreReuse {
                grid,
                in0_block_w,
                out_subblock_h,
                out_subblock_w,
                per_core_m: 1,
                per_core_n: 1,
            }
        };
        OpConfig::Matmul { program: Some(Box::new(p)), compute: None }
    };
    let mcast = model.op_cost(&matmul(), &[a.clone(), b.clone()], &out, &program(true));
    let reuse = model.op_cost(&matmul(), &[a, b], &out, &program(false));
    // Multicast reads A and B once from DRAM; reuse reads each 8 times.
    assert_eq!((mcast.dram_bytes, reuse.dram_bytes), (2 * 131_072, 16 * 131_072));
    assert_eq!((mcast.noc_bytes, reuse.noc_bytes), (14 * 131_072, 0));
    assert!(reuse.total_ns > mcast.total_ns);
}

#[test]
fn blackhole_runs_a_compute_bound_matmul_faster_than_wormhole() {
    let (a, b, out) = (l1(&[2048, 2048]), l1(&[2048, 2048]), l1(&[2048, 2048]));
    let wh = n150().op_cost(&matmul(), &[a.clone(), b.clone()], &out, &OpConfig::None);
    let bh =
        CostModel::for_target(&Target::p150()).op_cost(&matmul(), &[a, b], &out, &OpConfig::None);
    assert_eq!(wh.bound, Bound::Compute);
    assert!(bh.compute_ns < wh.compute_ns && bh.total_ns < wh.total_ns);
    assert_eq!(wh.flops, bh.flops);
}

/// Op kinds and operand counts the sweeps run over.
fn sweep_kinds() -> Vec<(OpKind, usize)> {
    vec![
        (OpKind::Unary(UnaryOp::Relu), 1),
        (OpKind::Unary(UnaryOp::Exp), 1),
        (OpKind::Binary(BinaryOp::Add), 2),
        (OpKind::Binary(BinaryOp::Multiply), 2),
        (OpKind::Softmax { dim: -1, numeric_stable: true }, 1),
        (OpKind::Norm(NormOp::LayerNorm), 1),
        (OpKind::Reduction { op: ReduceOp::Sum, dims: Some(vec![-1]), keep_dim: true }, 1),
        (OpKind::Typecast, 1),
        (OpKind::Permute { permutation: vec![1, 0] }, 1),
        (matmul(), 2),
    ]
}

/// Output shape of a sweep op on a square-ish input.
/// The `n` operand shapes of a swept op over `shape`: a matmul's B transposed, the rest
/// `shape` itself.
fn sweep_input_shapes(kind: &OpKind, n: usize, shape: &[u64]) -> Vec<Vec<u64>> {
    (0..n)
        .map(|i| {
            if i == 1 && kind.is_matmul_like() { vec![shape[1], shape[0]] } else { shape.to_vec() }
        })
        .collect()
}

fn sweep_output(kind: &OpKind, shape: &[u64]) -> Vec<u64> {
    match kind {
        OpKind::Reduction { .. } => vec![shape[0], 1],
        OpKind::Permute { .. } => vec![shape[1], shape[0]],
        _ if kind.is_matmul_like() => vec![shape[0], shape[0]],
        _ => shape.to_vec(),
    }
}

fn sweep_shapes() -> Vec<Vec<u64>> {
    let mut v = Vec::new();
    for h in [32, 64, 96, 320, 1024, 2080] {
        for w in [32, 160, 1024] {
            v.push(vec![h, w]);
        }
    }
    v
}

/// Operands for a sweep op: input 1 of a matmul is the transposed shape.
fn sweep_inputs(
    kind: &OpKind,
    n: usize,
    shape: &[u64],
    make: &dyn Fn(&[u64]) -> TensorDesc,
) -> Vec<TensorDesc> {
    sweep_input_shapes(kind, n, shape).iter().map(|s| make(s)).collect()
}

#[test]
fn more_worker_cores_never_slow_an_op_on_its_natural_parallelism() {
    // Interleaved operands: the op spreads over min(grid, its parallel units) cores. Growing
    // the grid never makes it slower: the busiest core's tiles, the per-core bandwidth terms
    // and the NoC cap on DRAM all improve or stay.
    let models: Vec<CostModel> = (1..=8)
        .map(|n| {
            CostModel::new(Figures { worker_grid: Grid::new(n, n), ..Figures::wormhole_n150() })
        })
        .collect();
    for (kind, n) in sweep_kinds() {
        for shape in sweep_shapes() {
            for make in [dram as fn(&[u64]) -> TensorDesc, l1] {
                let inputs = sweep_inputs(&kind, n, &shape, &make);
                let out = make(&sweep_output(&kind, &shape));
                let totals: Vec<u64> = models
                    .iter()
                    .map(|m| m.op_cost(&kind, &inputs, &out, &OpConfig::None).total_ns)
                    .collect();
                assert!(totals.windows(2).all(|w| w[1] <= w[0]), "{kind:?} {shape:?}: {totals:?}");
            }
        }
    }
}

#[test]
fn more_height_shard_cores_never_slow_a_compute_bound_op() {
    // Compute time never grows with the shard grid; where the op stays compute bound, the
    // total does not grow either.
    let model = n150();
    for kind in [OpKind::Unary(UnaryOp::Exp), matmul()] {
        for shape in [vec![2048, 256], vec![1024, 1024], vec![4096, 64]] {
            let mut prev: Option<OpCost> = None;
            for cores in 1..=(shape[0] / 32).min(64) {
                let x = hs(&shape, cores);
                let inputs = if kind.is_matmul_like() {
                    vec![x.clone(), l1(&[shape[1], shape[1]])]
                } else {
                    vec![x.clone()]
                };
                let c = model.op_cost(&kind, &inputs, &x, &OpConfig::None);
                // Shards past the end of the tensor are empty: 64 tile rows on 9 cores is
                // 8 shards of 8 rows.
                assert!(c.cores <= cores);
                if let Some(p) = prev {
                    assert!(c.compute_ns <= p.compute_ns, "{kind:?} {shape:?} on {cores}");
                    if p.bound == Bound::Compute && c.bound == Bound::Compute {
                        assert!(c.total_ns <= p.total_ns, "{kind:?} {shape:?} on {cores}");
                    }
                }
                prev = Some(c);
            }
        }
    }
    // The sweep really visits compute-bound points.
    let big = hs(&[4096, 1024], 64);
    let c = model.op_cost(&matmul(), &[big.clone(), l1(&[1024, 1024])], &big, &OpConfig::None);
    assert_eq!(c.bound, Bound::Compute);
}

#[test]
fn dram_inputs_are_never_faster_than_the_same_op_with_l1_inputs() {
    let model = n150();
    for (kind, n) in sweep_kinds() {
        for shape in sweep_shapes() {
            let out_shape = sweep_output(&kind, &shape);
            for out in [dram(&out_shape), l1(&out_shape)] {
                let from_dram = sweep_inputs(&kind, n, &shape, &dram);
                let from_l1 = sweep_inputs(&kind, n, &shape, &l1);
                let d = model.op_cost(&kind, &from_dram, &out, &OpConfig::None);
                let l = model.op_cost(&kind, &from_l1, &out, &OpConfig::None);
                assert_eq!(d.cores, l.cores);
                assert!(d.total_ns >= l.total_ns, "{kind:?} {shape:?}: {d} vs {l}");
            }
        }
    }
    // Sharded outputs: local shards versus the same operands in DRAM.
    for shape in sweep_shapes() {
        let out = hs(&shape, 1);
        for kind in [OpKind::Unary(UnaryOp::Relu), OpKind::Binary(BinaryOp::Add)] {
            let n = if matches!(kind, OpKind::Binary(_)) { 2 } else { 1 };
            let d = model.op_cost(&kind, &vec![dram(&shape); n], &out, &OpConfig::None);
            let s = model.op_cost(&kind, &vec![out.clone(); n], &out, &OpConfig::None);
            assert!(d.total_ns >= s.total_ns, "{kind:?} {shape:?}");
        }
    }
}

#[test]
fn sharding_eltwise_on_more_cores_is_never_more_expensive() {
    let model = n150();
    let kinds = [
        (OpKind::Unary(UnaryOp::Relu), 1),
        (OpKind::Unary(UnaryOp::Gelu), 1),
        (OpKind::Binary(BinaryOp::Add), 2),
        (OpKind::Binary(BinaryOp::Multiply), 2),
    ];
    for (kind, n) in kinds {
        for shape in [vec![2048u64, 64], vec![320, 1024], vec![96, 32], vec![1024, 1024]] {
            let tiles_h = shape[0].div_ceil(32);
            let totals: Vec<u64> = (1..=tiles_h.min(64))
                .map(|cores| {
                    let x = hs(&shape, cores);
                    model.op_cost(&kind, &vec![x.clone(); n], &x, &OpConfig::None).total_ns
                })
                .collect();
            assert!(totals.windows(2).all(|w| w[1] <= w[0]), "{kind:?} {shape:?}: {totals:?}");
        }
        // Block sharding too, growing one grid side at a time.
        let shape = [1024, 1024];
        for rows in 1..=8 {
            let totals: Vec<u64> = (1..=8)
                .map(|cols| {
                    let x = bs(&shape, rows, cols);
                    model.op_cost(&kind, &vec![x.clone(); n], &x, &OpConfig::None).total_ns
                })
                .collect();
            assert!(totals.windows(2).all(|w| w[1] <= w[0]), "{kind:?} rows {rows}: {totals:?}");
        }
    }
}

#[test]
fn absurd_shapes_saturate_instead_of_panicking() {
    let names: Vec<&str> = UnaryOp::ALL
        .iter()
        .map(|o| o.name())
        .chain(BinaryOp::ALL.iter().map(|o| o.name()))
        .chain(NormOp::ALL.iter().map(|o| o.name()))
        .chain(ReduceOp::ALL.iter().map(|o| o.name()))
        .chain(FixedOp::ALL.iter().map(|o| o.name()))
        .chain(CreationOp::ALL.iter().map(|o| o.name()))
        .chain(opmodel::SdpaOp::ALL.iter().map(|o| o.name()))
        .chain(opmodel::HeadsOp::ALL.iter().map(|o| o.name()))
        .chain(opmodel::CollectiveOp::ALL.iter().map(|o| o.name()))
        .chain(opmodel::PoolOp::ALL.iter().map(|o| o.name()))
        .chain([
            "ttnn.where",
            "ttnn.typecast",
            "ttnn.quantize",
            "ttnn.matmul",
            "ttnn.linear",
            "ttnn.sparse_matmul",
            "ttnn.conv2d",
            "ttnn.conv_transpose2d",
            "ttnn.conv1d",
            "ttnn.conv3d",
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
            "ttnn.gather",
            "ttnn.softmax",
            "ttnn.prod",
            "ttnn.argmax",
            "ttnn.cumsum",
            "ttnn.sort",
            "ttnn.topk",
            "ttnn.sampling",
            "ttnn.rotary_embedding",
            "ttnn.d2m_subgraph",
            "ttnn.not_an_op",
        ])
        .collect();
    let model = n150();
    let shapes: [&[u64]; 5] = [&[], &[0], &[0, 0], &[u64::MAX, u64::MAX], &[1 << 40, 3, 1 << 30]];
    for name in names {
        let kind = op_kind(name, &());
        for shape in shapes {
            let t = dram(shape);
            let s = TensorDesc::new(shape, TtnnLayout::l1_interleaved(shape, BF16, TILE, WORKER));
            for inputs in [vec![], vec![t.clone()], vec![t.clone(), s.clone(), t.clone()]] {
                let c = model.op_cost(&kind, &inputs, &s, &OpConfig::None);
                assert!(c.total_ns >= c.memory_ns.min(c.compute_ns), "{name}");
            }
            let unit = OpUnit {
                kind: kind.clone(),
                inputs: vec![UnitTensor::free(shape, BF16, TILE); 2],
                output: UnitTensor::free(shape, BF16, TILE),
                config: OpConfig::None,
            };
            let _ = model.lower_bound(&[unit.clone(), unit]);
            let _ = model.reshard_cost(&t, &s.layout);
            let _ = model.spill_cost(&s);
        }
    }
    // Saturated byte counts and times are reported as the maximum, not wrapped around.
    let huge = dram(&[u64::MAX, u64::MAX]);
    let relu = OpKind::Unary(UnaryOp::Relu);
    let c = model.op_cost(&relu, std::slice::from_ref(&huge), &huge, &OpConfig::None);
    assert_eq!((c.dram_bytes, c.total_ns), (u64::MAX, u64::MAX));
}

#[test]
fn a_model_with_zero_figures_still_answers() {
    let zero = Figures {
        aiclk_mhz: 0,
        worker_grid: Grid::new(0, 0),
        matmul_flops_per_cycle: 0,
        fpu_eltwise_ops_per_cycle: 0,
        fpu_reduce_flops_per_cycle: 0,
        sfpu_lanes: 0,
        dram_peak_gb_s: 0,
        dram_efficiency_pct: 0,
        noc_bytes_per_cycle: 0,
        l1_bytes_per_cycle: 0,
        ..Figures::wormhole_n150()
    };
    let x = dram(&[64, 64]);
    let c = CostModel::new(zero).op_cost(&matmul(), &[x.clone(), x.clone()], &x, &OpConfig::None);
    assert_eq!(c.cores, 1);
    assert!(c.total_ns > c.dispatch_ns);
}

#[test]
fn the_cost_cache_answers_as_the_model_does_and_keeps_targets_apart() {
    // The same add on n150 and p150 differs (DRAM bandwidth), so a cache shared by both
    // targets must not answer one with the other's cost; asked twice, it answers the same.
    let cache = crate::CostCache::new();
    let x = dram(&[1024, 1024]);
    let add = OpKind::Binary(BinaryOp::Add);
    let inputs = [x.clone(), x.clone()];
    let mut seen = Vec::new();
    for target in [Target::n150(), Target::p150(), Target::n150()] {
        let model = CostModel::for_target(&target);
        let direct = model.op_cost(&add, &inputs, &x, &OpConfig::None);
        let cached = cache.op_cost(&target, &model, &add, &inputs, &x, &OpConfig::None);
        let again = cache.op_cost(&target, &model, &add, &inputs, &x, &OpConfig::None);
        assert_eq!((cached, again), (direct, direct));
        seen.push(direct.total_ns);
    }
    assert_ne!(seen[0], seen[1], "the two targets cost the add differently");
    assert_eq!(seen[0], seen[2]);
}

fn conv(cin: u64, cout: u64, hw: u64, kernel: u64, stride: u64) -> OpKind {
    OpKind::Conv2d(opmodel::ConvAttrs {
        in_channels: cin,
        out_channels: cout,
        batch: 8,
        input_h: hw,
        input_w: hw,
        kernel: [kernel; 2],
        stride: [stride; 2],
        padding: [kernel / 2; 4],
        dilation: [1; 2],
        groups: 1,
        output_padding: [0; 2],
    })
}

#[test]
fn a_resnet_1x1_conv_reads_its_prepared_weights_once_and_lands_near_its_roofline() {
    // ResNet-50's last 1x1 conv, 512 -> 2048 channels on 7x7, batch 8: 392 output pixels
    // (13 tile rows) x 64 tile columns, K = 16 tiles. The OIHW weight 2048x512x1x1 tile pads
    // to 2048 x 512 x 1024 elements (2 GB); tt-metal reads the prepared [512, 2048] matrix
    // (2 MiB). Roofline: 872 MFLOP (tile padded) at 64 x 4096 FLOP/cycle = 3.3 µs, bytes
    // (2 MiB weights + 0.4 + 1.6 MiB activations) at 264.96 B/ns = 16.0 µs. The cheapest
    // split is 2 x 8 tile blocks on 56 cores (16 output tiles of K = 16 at HiFi4: 16 384 cycles at peak, 21 278 at the sustained 77%); the
    // weight column blocks are multicast down the core columns (NoC).
    let x = dram(&[1, 1, 392, 512]);
    let w = dram(&[2048, 512, 1, 1]);
    let y = dram(&[1, 1, 392, 2048]);
    let c = n150().op_cost(&conv(512, 2048, 7, 1, 1), &[x, w], &y, &OpConfig::None);
    check(
        &c,
        expect![[r#"
            33162 ns = dispatch 3000 + max(compute 21278, memory 30162 ~ dram 15954 + noc 8686 + l1 5523), dram-bound
            872415232 flops on 56 cores; bytes dram 4227072, noc 15564800, l1 19791872"#]],
    );
}

#[test]
fn a_3x3_conv_reads_its_activation_once_per_window_position_from_l1() {
    // The same shapes with a 3x3 kernel: the reader copies 9 input pixels per output pixel
    // into its im2col block, so L1 traffic grows by 8 activation reads; a 1x1 conv has none.
    let x = dram(&[1, 1, 392, 512]);
    let y = dram(&[1, 1, 392, 512]);
    let model = n150();
    let one = model.op_cost(
        &conv(512, 512, 7, 1, 1),
        &[x.clone(), dram(&[512, 512, 1, 1])],
        &y,
        &OpConfig::None,
    );
    let three =
        model.op_cost(&conv(512, 512, 7, 3, 1), &[x, dram(&[512, 512, 3, 3])], &y, &OpConfig::None);
    let act = 13 * 16 * 2048;
    let weights = |k: u64| 16 * k * 16 * 2048;
    assert_eq!(one.dram_bytes, act + weights(1) + act);
    assert_eq!(three.dram_bytes, act + weights(9) + act);
    assert!(three.l1_bytes >= one.l1_bytes + 8 * act + weights(9) - weights(1), "{three}");
}

#[test]
fn a_conv_runs_at_the_fidelity_of_its_compute_config_and_reads_weights_in_its_weights_dtype() {
    // What tt-mlir's `compute-cfg-math-fidelity=lofi` writes on a conv (its compute config)
    // and what a conv config's `weights_dtype` asks of tt-metal's weight preparation: the same
    // 3x3 conv as above at LoFi has a quarter of the fidelity passes (compute at LoFi's
    // sustained share of peak, not HiFi4's: 47.9 to 17.4 µs) but stays bound by its memory
    // traffic; with `bfp_bf8` weights it reads 1088 bytes per weight tile instead of 2048
    // from DRAM, and moves the smaller tiles over the NoC and through L1 too.
    let x = dram(&[1, 1, 392, 512]);
    let y = dram(&[1, 1, 392, 512]);
    let kind = conv(512, 512, 7, 3, 1);
    let inputs = [x, dram(&[512, 512, 3, 3])];
    let config = |f: Option<MathFidelity>, w: Option<DataType>| OpConfig::Conv2d {
        conv: Box::new(ttnn_types::Conv2dConfig { weights_dtype: w, ..Default::default() }),
        compute: f.map(|f| DeviceComputeKernelConfig {
            math_fidelity: Some(f),
            ..DeviceComputeKernelConfig::default()
        }),
        slice: None,
    };
    let model = n150();
    let hifi4 = model.op_cost(&kind, &inputs, &y, &OpConfig::None);
    assert_eq!(model.op_cost(&kind, &inputs, &y, &config(Some(MathFidelity::HiFi4), None)), hifi4);
    let lofi = model.op_cost(&kind, &inputs, &y, &config(Some(MathFidelity::LoFi), None));
    let bfp8 = model.op_cost(
        &kind,
        &inputs,
        &y,
        &config(Some(MathFidelity::LoFi), Some(DataType::BfpBF8)),
    );
    let weight_tiles = 16 * 9 * 16;
    assert_eq!(hifi4.dram_bytes - bfp8.dram_bytes, weight_tiles * (2048 - 1088));
    check(
        &lofi,
        expect![[r#"
            52724 ns = dispatch 3000 + max(compute 17389, memory 49724 ~ dram 21025 + noc 17463 + l1 11237), dram-bound
            1962934272 flops on 56 cores; bytes dram 5570560, noc 31293440, l1 40271872"#]],
    );
    check(
        &bfp8,
        expect![[r#"
            32651 ns = dispatch 3000 + max(compute 17389, memory 29651 ~ dram 12677 + noc 10058 + l1 6917), dram-bound
            1962934272 flops on 56 cores; bytes dram 3358720, noc 18022400, l1 24788992"#]],
    );
}

#[test]
fn a_conv_weight_and_bias_on_host_cost_what_the_prepared_device_copies_cost() {
    // tt-mlir leaves a conv's weight and bias on host, row-major; tt-metal's conv2d prepares
    // them and moves them to DRAM, and the kernel reads the prepared copies from there. For a
    // parameter that preparation is const-eval work, done at load, so the per-inference time
    // is that of the same conv with row-major DRAM parameters.
    let x = dram(&[1, 1, 392, 512]);
    let y = dram(&[1, 1, 392, 512]);
    let (w, b) = ([512, 512, 3, 3], [1, 1, 1, 512]);
    let row_major =
        |s: &[u64]| TensorDesc::new(s, TtnnLayout::dram_interleaved(s, BF16, PageLayout::RowMajor));
    let host =
        |s: &[u64]| TensorDesc::new(s, TtnnLayout::system_memory(s, ttnn_types::ScalarType::BF16));
    let kind = conv(512, 512, 7, 3, 1);
    let model = n150();
    let on_device =
        model.op_cost(&kind, &[x.clone(), row_major(&w), row_major(&b)], &y, &OpConfig::None);
    let from_host = model.op_cost(&kind, &[x, host(&w), host(&b)], &y, &OpConfig::None);
    assert_eq!(from_host, on_device);
    check(
        &from_host,
        expect![[r#"
        52728 ns = dispatch 3000 + max(compute 47908, memory 49728 ~ dram 21029 + noc 17463 + l1 11237), dram-bound
        1963147264 flops on 56 cores; bytes dram 5571584, noc 31293440, l1 40272896"#]],
    );
}

#[test]
fn a_decode_cache_update_writes_back_only_the_tiles_its_new_rows_land_in() {
    // Llama-3.2-1B's decode step: a 32x8x128x64 bf16 cache (4 MiB), one new 64-wide row per
    // user and head (1x8x32x64). tt-metal's update_cache merges each row into the cache tile it
    // lands in: 256 rows x 2 tiles = 512 tiles read and written back (1 MiB each way), not the
    // whole cache. The cache is the op's output (it has no result of its own). tt-mlir's
    // profile of that step measures 13.7-15.8 µs for each PagedUpdateCache.
    let cache = dram(&[32, 8, 128, 64]);
    let token = dram(&[1, 8, 32, 64]);
    let index = TensorDesc::new(&[1], TtnnLayout::dram_interleaved(&[1], DataType::U32, TILE));
    let kind = op_kind("ttnn.update_cache", &());
    let c = n150().op_cost(&kind, &[cache.clone(), token, index], &cache, &OpConfig::None);
    check(
        &c,
        expect![[r#"
        11576 ns = dispatch 3000 + max(compute 0, memory 8576 ~ dram 8055 + noc 0 + l1 521), dram-bound
        0 flops on 64 cores; bytes dram 2134016, noc 0, l1 2134016"#]],
    );
    // Filling a cache from a prefill writes the new tiles and reads none of the cache.
    let prefill = dram(&[1, 8, 128, 64]);
    let fill = op_kind("ttnn.fill_cache", &());
    let f = n150().op_cost(&fill, &[cache.clone(), prefill], &cache, &OpConfig::None);
    assert_eq!(f.dram_bytes, 2 * 8 * 4 * 2 * 2048, "{f}");
}

#[test]
fn a_decode_head_concatenation_moves_the_heads_once_where_the_written_permute_pads_every_row() {
    // Llama-3.2-1B's decode attention output, `[1, B = 32, H = 32, D = 64]` bf16: 64 tiles
    // (131 072 B). tt-metal's nlp_concat_heads_decode gathers each user's head rows (16-element
    // lines, one per face row and RISC-V) into `[1, 1, 32, 2048]`, 64 tiles: every byte is read
    // once and written once. From DRAM to DRAM: 262 144 B / 264.96 B/ns = 990 ns, the same
    // bytes staged through L1 on 64 cores (one output tile each; tt-metal uses one core per
    // head, which DRAM's bandwidth makes no different) at 64 B/cycle = 64 ns, 3000 ns dispatch.
    let heads = dram(&[1, 32, 32, 64]);
    let kind = op_kind("ttnn.nlp_concat_heads_decode", &());
    let fused = n150().op_cost(
        &kind,
        std::slice::from_ref(&heads),
        &dram(&[1, 1, 32, 2048]),
        &OpConfig::None,
    );
    check(
        &fused,
        expect![[r#"
        4054 ns = dispatch 3000 + max(compute 0, memory 1054 ~ dram 990 + noc 0 + l1 64), overhead-bound
        0 flops on 64 cores; bytes dram 262144, noc 0, l1 262144"#]],
    );
    // As written, the permute to `[32, 32, 1, 64]` puts each user's head in a tile row of its
    // own (1024 rows padded to 32: 2048 tiles, 32x the bytes) and the collapse reads them back.
    let padded = dram(&[32, 32, 1, 64]);
    let permute = OpKind::Permute { permutation: vec![1, 2, 0, 3] };
    let p = n150().op_cost(&permute, std::slice::from_ref(&heads), &padded, &OpConfig::None);
    let r = n150().op_cost(
        &OpKind::Reshape,
        std::slice::from_ref(&padded),
        &dram(&[32, 2048]),
        &OpConfig::None,
    );
    check(
        &p,
        expect![[r#"
        20381 ns = dispatch 3000 + max(compute 0, memory 17381 ~ dram 16325 + noc 0 + l1 1056), dram-bound
        0 flops on 64 cores; bytes dram 4325376, noc 0, l1 4325376"#]],
    );
    assert!(p.total_ns + r.total_ns > 8 * fused.total_ns, "{p}\n{r}\n{fused}");
}

#[test]
fn a_decode_head_split_writes_all_three_of_its_outputs_with_the_heads_padded_per_user() {
    // Llama-3.2-1B's fused QKV result, `[1, 1, 32, 3072]` bf16 (96 tiles, 196 608 B), split
    // into Q `[1, 32, 32, 64]` and K, V `[1, 32, 8, 64]`. tt-metal's nlp_create_qkv_heads_decode
    // puts each user's heads on a core of their own, padded to whole tiles: per user 2 tiles of
    // Q and 2 of K and V each (8 heads pad to 32 rows), 32 x 6 = 192 tiles (393 216 B) written.
    // The op is costed with Q as its output, so the K and V bytes come from the shapes.
    // DRAM to DRAM: 589 824 B / 264.96 B/ns = 2227 ns, the same bytes through L1 on 64 cores
    // at 64 B/cycle = 144 ns, 3000 ns dispatch; tt-mlir's profile of the measured step has
    // 16 µs for `NLPCreateQKVHeadsDecode`.
    let qkv = dram(&[1, 1, 32, 3072]);
    let q = dram(&[1, 32, 32, 64]);
    let kind = op_kind("ttnn.nlp_create_qkv_heads_decode", &());
    let c = n150().op_cost(&kind, std::slice::from_ref(&qkv), &q, &OpConfig::None);
    check(
        &c,
        expect![[r#"
            5371 ns = dispatch 3000 + max(compute 0, memory 2371 ~ dram 2227 + noc 0 + l1 144), overhead-bound
            0 flops on 64 cores; bytes dram 589824, noc 0, l1 589824"#]],
    );
}

#[test]
fn a_prefill_head_split_reads_the_fused_projection_once_and_writes_q_k_and_v() {
    // BERT's fused QKV result reshaped to `[8, 384, 2304]` bf16 (8 x 12 x 72 = 6912 tiles,
    // 14 155 776 B), split into Q, K and V `[8, 12, 384, 64]` (2304 tiles each). tt-metal's
    // program reads every input tile once and writes it to one of the three; the op is costed
    // with Q as its output, so K's and V's bytes come from the shapes. DRAM to DRAM:
    // 28 311 552 B / 264.96 B/ns = 106 853 ns, the same bytes through L1 on 64 cores at
    // 64 B/cycle = 6912 ns. The slices, reshapes and permutes it replaces move the data twice.
    let qkv = dram(&[8, 384, 2304]);
    let q = dram(&[8, 12, 384, 64]);
    let kind = op_kind("ttnn.split_query_key_value_and_split_heads", &());
    let c = n150().op_cost(&kind, std::slice::from_ref(&qkv), &q, &OpConfig::None);
    check(
        &c,
        expect![[r#"
            116765 ns = dispatch 3000 + max(compute 0, memory 113765 ~ dram 106853 + noc 0 + l1 6912), dram-bound
            0 flops on 64 cores; bytes dram 28311552, noc 0, l1 28311552"#]],
    );
    // Grouped heads: 32 query and 8 KV heads of 64 (Llama-3.2-1B prefill, `[1, 128, 3072]`),
    // so K and V are a quarter of Q each: 384 tiles read, 256 + 2 x 64 written.
    let qkv = dram(&[1, 128, 3072]);
    let q = dram(&[1, 32, 128, 64]);
    let c = n150().op_cost(&kind, std::slice::from_ref(&qkv), &q, &OpConfig::None);
    assert_eq!(c.dram_bytes, (384 + 256 + 2 * 64) * 2048);
}

#[test]
fn the_validation_table_in_the_docs_is_current() {
    // `cargo xtask cost-validate --write` regenerates it.
    // Included at compile time: the analysis crates do no IO, tests included.
    let doc = include_str!("../../../docs/cost-model.md");
    let snapshot = |model: &str| {
        let text = match model {
            "llama_3_2_1b_decode_layer.weight_dtype_bfp_bf8" => include_str!(
                "../../../test-data/models/llama_3_2_1b_decode_layer.weight_dtype_bfp_bf8.txt"
            ),
            "llama_3_2_1b_decoder.weight_dtype_bfp_bf8" => include_str!(
                "../../../test-data/models/llama_3_2_1b_decoder.weight_dtype_bfp_bf8.txt"
            ),
            "bert_encoder_layer" => {
                include_str!("../../../test-data/models/bert_encoder_layer.txt")
            }
            "bert_encoder_block" => {
                include_str!("../../../test-data/models/bert_encoder_block.txt")
            }
            "resnet_hf" => include_str!("../../../test-data/models/resnet_hf.txt"),
            "resnet_hf.weight_dtype_bfp_bf8.math_fidelity_lofi" => include_str!(
                "../../../test-data/models/resnet_hf.weight_dtype_bfp_bf8.math_fidelity_lofi.txt"
            ),
            _ => return None,
        };
        Some(text.to_owned())
    };
    let table = format!("{}\n{}", crate::validation_table(), crate::whole_model_table(&snapshot));
    assert!(
        doc.contains(table.as_str()),
        "docs/cost-model.md is stale; run `cargo xtask cost-validate --write`:\n{table}"
    );
}

#[test]
fn argmax_over_the_lm_head_logits_is_a_scalar_loop_split_over_the_grid_unless_tiled() {
    // Llama-3.2-1B's sampling argmax: 32 x 128256 bf16 logits, row major (tt-mlir's
    // workaround), DRAM. 4 104 192 elements = 4008 row-major "tiles" of 1024 elements; the
    // multi-core program spreads them over 64 cores: 63 x 1024 elements x 36 cycles =
    // 2 322 432 ns of compute, against 2.31 ms measured in tt-mlir's ds-perf fleet run.
    let kind = OpKind::Argmax { dim: Some(1), keep_dim: false };
    let rm = |shape: &[u64], dtype| {
        TensorDesc::new(shape, TtnnLayout::dram_interleaved(shape, dtype, PageLayout::RowMajor))
    };
    let logits = rm(&[32, 128_256], BF16);
    let index = rm(&[32], DataType::U32);
    let c = n150().op_cost(&kind, std::slice::from_ref(&logits), &index, &OpConfig::None);
    assert_eq!((c.cores, c.compute_ns, c.bound), (64, 2_322_432, Bound::Compute));
    // A tiled input takes the single-core program: 4008 tiles on one core, 64x slower.
    let tiled = dram(&[32, 128_256]);
    let c = n150().op_cost(&kind, &[tiled], &index, &OpConfig::None);
    assert_eq!((c.cores, c.compute_ns), (1, 4008 * 1024 * 36));
}

#[test]
fn a_sum_along_w_splits_the_input_tile_rows_over_cores_whatever_the_output_shape() {
    // A decode RMS norm's sum of squares: 32x1x2048 f32 to 32x1. The input is 32 tile rows
    // of 64 tiles (the 1 pads to a tile row per batch entry); tt-metal's reduce along W gives
    // each of 32 cores one row, though the squeezed output is a single tile.
    let f32_dram =
        |s: &[u64]| TensorDesc::new(s, TtnnLayout::dram_interleaved(s, DataType::F32, TILE));
    let kind =
        OpKind::Reduction { op: opmodel::ReduceOp::Sum, dims: Some(vec![2]), keep_dim: false };
    let c =
        n150().op_cost(&kind, &[f32_dram(&[32, 1, 2048])], &f32_dram(&[32, 1]), &OpConfig::None);
    assert_eq!(c.cores, 32);
    // 32 x 64 tiles x 4 KB = 8 MB read from DRAM by 32 cores: about 32 us, not the 396 us of
    // one core pulling it through its own NoC port.
    assert!(c.total_ns < 40_000, "{c}");
}
