//! What each op family computes: how many tiles of work, which execution unit does how many
//! operations per tile, and how the work naturally splits over cores.
//!
//! Counts are per 32x32 tile (1024 elements) of the tile-padded tensors, because the Tensix
//! units only ever process whole tiles. The table is in `docs/cost-model.md`.

use opmodel::{BinaryOp, NormOp, OpConfig, OpKind, PoolOp, ReduceOp, TernaryOp, UnaryOp};
use ttnn_types::{DataType, MathFidelity, PageLayout, TILE, div_ceil};

use crate::{
    figures::{Figures, ceil_ratio},
    tensor::{Shaped, TILE_ELEMS, volume},
};

/// Operations per tile of work, split by the execution unit that performs them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnitOps {
    /// Matrix-engine FLOPs (multiply-adds count two); fidelity passes apply.
    pub(crate) matmul: u64,
    /// Matrix-engine elementwise adds and subtracts; no fidelity.
    pub(crate) fpu_add: u64,
    /// Matrix-engine elementwise multiplies; fidelity passes apply.
    pub(crate) fpu_mul: u64,
    /// Matrix-engine reduction FLOPs for sum and mean (two per element); fidelity applies.
    pub(crate) reduce_sum: u64,
    /// Matrix-engine reduction FLOPs for max and min (two per element); no fidelity.
    pub(crate) reduce_max: u64,
    /// Elements an SFPU function of one arithmetic instruction is applied to.
    pub(crate) sfpu: u64,
    /// Elements a transcendental SFPU function is applied to.
    pub(crate) sfpu_transcendental: u64,
    /// Elements a data-movement RISC-V core visits one at a time in a scalar loop (argmax:
    /// the compare runs in the reader kernel, not on the Tensix math units).
    pub(crate) scalar: u64,
}

impl UnitOps {
    /// Operations, with a transcendental element counted as its arithmetic instructions.
    pub(crate) fn flops(&self, fig: &Figures) -> u64 {
        self.matmul
            .saturating_add(self.fpu_add)
            .saturating_add(self.fpu_mul)
            .saturating_add(self.reduce_sum)
            .saturating_add(self.reduce_max)
            .saturating_add(self.sfpu)
            .saturating_add(self.sfpu_transcendental.saturating_mul(fig.sfpu_transcendental_ops))
            .saturating_add(self.scalar)
    }

    /// Cycles one core needs for `tiles` tiles of this work at `passes` fidelity passes.
    ///
    /// The units run one after another: a kernel's math thread issues to one unit at a time.
    pub(crate) fn cycles(&self, tiles: u64, passes: u64, fig: &Figures) -> u64 {
        let t = u128::from(tiles);
        let p = u128::from(passes.max(1));
        let term = |ops: u64, mult: u128, rate: u64| -> u64 {
            if ops == 0 {
                return 0;
            }
            let work = t.saturating_mul(u128::from(ops)).saturating_mul(mult);
            ceil_ratio(work, u128::from(rate.max(1)))
        };
        let ls = fig.sfpu_load_store_instructions;
        let sfpu_instr = self.sfpu.saturating_mul(1u64.saturating_add(ls)).saturating_add(
            self.sfpu_transcendental.saturating_mul(fig.sfpu_transcendental_ops.saturating_add(ls)),
        );
        // The matrix engine sustains `matmul_efficiency_pct` of its peak at this fidelity.
        let index = usize::try_from(passes.clamp(1, 4) - 1).unwrap_or(0);
        let efficiency = fig.matmul_efficiency_pct.get(index).copied().unwrap_or(100).clamp(1, 100);
        let matmul_rate = u128::from(fig.matmul_flops_per_cycle.max(1)) * u128::from(efficiency);
        let matmul = if self.matmul == 0 {
            0
        } else {
            let work =
                t.saturating_mul(u128::from(self.matmul)).saturating_mul(p).saturating_mul(100);
            ceil_ratio(work, matmul_rate)
        };
        [
            matmul,
            term(self.fpu_add, 1, fig.fpu_eltwise_ops_per_cycle),
            term(self.fpu_mul, p, fig.fpu_eltwise_ops_per_cycle),
            term(self.reduce_sum, p, fig.fpu_reduce_flops_per_cycle),
            term(self.reduce_max, 1, fig.fpu_reduce_flops_per_cycle),
            term(sfpu_instr, 1, fig.sfpu_lanes),
            term(self.scalar, u128::from(fig.riscv_cycles_per_element), 1),
        ]
        .into_iter()
        .fold(0u64, u64::saturating_add)
    }

    fn plus(mut self, o: UnitOps) -> UnitOps {
        self.matmul = self.matmul.saturating_add(o.matmul);
        self.fpu_add = self.fpu_add.saturating_add(o.fpu_add);
        self.fpu_mul = self.fpu_mul.saturating_add(o.fpu_mul);
        self.reduce_sum = self.reduce_sum.saturating_add(o.reduce_sum);
        self.reduce_max = self.reduce_max.saturating_add(o.reduce_max);
        self.sfpu = self.sfpu.saturating_add(o.sfpu);
        self.sfpu_transcendental = self.sfpu_transcendental.saturating_add(o.sfpu_transcendental);
        self.scalar = self.scalar.saturating_add(o.scalar);
        self
    }

    fn times(self, k: u64) -> UnitOps {
        UnitOps {
            matmul: self.matmul.saturating_mul(k),
            fpu_add: self.fpu_add.saturating_mul(k),
            fpu_mul: self.fpu_mul.saturating_mul(k),
            reduce_sum: self.reduce_sum.saturating_mul(k),
            reduce_max: self.reduce_max.saturating_mul(k),
            sfpu: self.sfpu.saturating_mul(k),
            sfpu_transcendental: self.sfpu_transcendental.saturating_mul(k),
            scalar: self.scalar.saturating_mul(k),
        }
    }
}

/// Cycles one core spends combining `tiles` gathered tiles of partial row statistics: a
/// reduce of each into the running statistic.
pub(crate) fn combine_cycles(tiles: u64, passes: u64, fig: &Figures) -> u64 {
    REDUCE_SUM.cycles(tiles, passes, fig)
}

/// Cycles one core spends turning `tiles` tiles of combined statistics into `1 / sigma`: the
/// epsilon added, then a reciprocal square root.
pub(crate) fn inverse_sigma_cycles(tiles: u64, fig: &Figures) -> u64 {
    ADD.plus(TRANSCENDENTAL).cycles(tiles, 1, fig)
}

const E: u64 = TILE_ELEMS;
const ADD: UnitOps = UnitOps { fpu_add: E, ..ZERO };
const MUL: UnitOps = UnitOps { fpu_mul: E, ..ZERO };
const SFPU: UnitOps = UnitOps { sfpu: E, ..ZERO };
const TRANSCENDENTAL: UnitOps = UnitOps { sfpu_transcendental: E, ..ZERO };
const REDUCE_SUM: UnitOps = UnitOps { reduce_sum: 2 * E, ..ZERO };
const REDUCE_MAX: UnitOps = UnitOps { reduce_max: 2 * E, ..ZERO };
const SCALAR: UnitOps = UnitOps { scalar: E, ..ZERO };
const ZERO: UnitOps = UnitOps {
    matmul: 0,
    fpu_add: 0,
    fpu_mul: 0,
    reduce_sum: 0,
    reduce_max: 0,
    sfpu: 0,
    sfpu_transcendental: 0,
    scalar: 0,
};

/// The matmul-shaped core of matmul, linear and convolutions, in tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MatmulDims {
    /// Output tile rows with the batch folded in (`batch x Mt`).
    pub(crate) rows: u64,
    /// Output tile columns (`Nt`).
    pub(crate) cols: u64,
    /// Inner dimension in tiles (`Kt`).
    pub(crate) inner: u64,
    /// Output tile rows that share one B block (`rows` unless B itself is batched).
    pub(crate) rows_per_b: u64,
}

/// How the family reads an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// Every byte once.
    Whole,
    /// Only as many bytes as the output has (slices, gathers, embedding tables).
    AtMostOutput,
    /// Exactly these bytes, whatever the operand's own layout holds: a convolution's weights
    /// as tt-metal reads them after weight preparation (`[Kh x Kw x Cin / groups, Cout]`, tile
    /// padded once), not the OIHW tensor whose 1x1 or 3x3 trailing dims would each pad to a
    /// whole tile. Preparation itself runs once at load (const-eval).
    Exactly(u64),
}

/// What one op computes, independent of where its tensors live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// No kernel runs: a view, an allocation, host plumbing.
    pub(crate) free: bool,
    /// Tiles of work the per-tile counts apply to.
    pub(crate) tiles: u64,
    pub(crate) per_tile: UnitOps,
    /// Tiles that must stay on one core in the natural (interleaved) split: a row for
    /// row-wise kernels, the tiles reduced into one output tile for reductions.
    pub(crate) chunk: u64,
    /// Normalizations and softmax run their sharded program on input 0's shard grid.
    pub(crate) rowwise: bool,
    /// Row statistics a sharded norm whose rows are split over cores reduces across them, one
    /// after the other: 1 for an RMS norm (`E[x²]`), 2 for a layer norm (`E[x]`, then the
    /// variance). 0 for every other op.
    pub(crate) row_statistics: u64,
    pub(crate) matmul: Option<MatmulDims>,
    /// The fidelity the config asks for, if any.
    pub(crate) fidelity: Option<MathFidelity>,
    pub(crate) reads: Vec<Read>,
    /// How many times, as `(numerator, denominator)`, the kernel reads each byte of input 0
    /// from L1: a convolution's activation reader copies `Kh x Kw` input pixels per output
    /// pixel into its im2col block, and so does pooling's reader, so with strides `sh, sw` each
    /// input byte is read `Kh x Kw / (sh x sw)` times. `(1, 1)` for other ops.
    pub(crate) window_reads: (u64, u64),
    /// Bytes written, when the op writes only part of its output buffer: a cache update
    /// writes the tiles its new rows land in, not the whole cache. `None`: the whole output.
    pub(crate) writes: Option<u64>,
    /// Bytes written to results other than the one the op is costed with, in the same
    /// placement: the K and V of a head split costed with its Q.
    pub(crate) other_results: u64,
}

impl Analysis {
    fn new(tiles: u64, per_tile: UnitOps, n_inputs: usize) -> Analysis {
        Analysis {
            free: false,
            tiles,
            per_tile,
            chunk: 1,
            rowwise: false,
            row_statistics: 0,
            matmul: None,
            fidelity: None,
            reads: vec![Read::Whole; n_inputs],
            window_reads: (1, 1),
            writes: None,
            other_results: 0,
        }
    }

    fn reading_at_most_output(mut self, operand: usize) -> Analysis {
        if let Some(r) = self.reads.get_mut(operand) {
            *r = Read::AtMostOutput;
        }
        self
    }

    fn free(n_inputs: usize) -> Analysis {
        Analysis { free: true, ..Analysis::new(0, ZERO, n_inputs) }
    }

    /// Cores the work spreads over when no shard grid decides: one chunk per core, at most
    /// the whole grid.
    pub(crate) fn natural_cores(&self, fig: &Figures) -> u64 {
        div_ceil(self.tiles, self.chunk.max(1)).clamp(1, fig.worker_cores())
    }

    /// Tiles the busiest core processes when the natural split spreads whole chunks over
    /// `cores` cores.
    pub(crate) fn tiles_per_core(&self, cores: u64) -> u64 {
        let chunk = self.chunk.max(1);
        div_ceil(div_ceil(self.tiles, chunk), cores.max(1)).saturating_mul(chunk)
    }
}

/// The work of `kind` on these operand shapes.
pub(crate) fn analyze(
    kind: &OpKind,
    inputs: &[Shaped<'_>],
    output: &Shaped<'_>,
    config: &OpConfig,
) -> Analysis {
    let n = inputs.len();
    let out_tiles = output.tiles();
    let in0 = inputs.first().copied().unwrap_or(*output);
    let eltwise = |ops: UnitOps| Analysis::new(out_tiles, ops, n);
    let data_movement = || Analysis::new(out_tiles, ZERO, n);
    match kind {
        OpKind::Unary(op) => eltwise(unary_ops(*op)),
        OpKind::Binary(op) => {
            let wide = [in0.dtype, output.dtype].iter().any(|d| is_32_bit(*d));
            eltwise(binary_ops(*op, wide))
        }
        OpKind::Ternary(TernaryOp::Where) => eltwise(SFPU),
        OpKind::Ternary(TernaryOp::ClampTensor) => eltwise(SFPU.times(2)),
        OpKind::Typecast => eltwise(SFPU),
        // Scale, shift and round: two SFPU instructions' worth per element.
        OpKind::Quantize { .. } => eltwise(SFPU.times(2)),
        OpKind::Matmul(attrs) | OpKind::Linear(attrs) => {
            let act = attrs.activation.as_deref().or_else(|| fused_activation(config));
            matmul(inputs, output, config, n, attrs.transpose_a, act)
        }
        OpKind::SparseMatmul => matmul(inputs, output, config, n, false, None),
        OpKind::Conv2d(a) | OpKind::ConvTranspose2d(a) | OpKind::Conv1d(a) | OpKind::Conv3d(a) => {
            conv(inputs, output, config, n, a)
        }
        OpKind::Pool2d { op, attrs } => {
            let window = attrs.conv.kernel[0].max(1).saturating_mul(attrs.conv.kernel[1].max(1));
            let reads =
                (window, attrs.conv.stride[0].max(1).saturating_mul(attrs.conv.stride[1].max(1)));
            match op {
                PoolOp::MaxPool2d | PoolOp::MaxPool2dWithIndices => {
                    Analysis { window_reads: reads, ..eltwise(REDUCE_MAX.times(window)) }
                }
                PoolOp::AvgPool2d => {
                    Analysis { window_reads: reads, ..eltwise(REDUCE_SUM.times(window)) }
                }
                PoolOp::GlobalAvgPool2d => reduce(&in0, out_tiles, REDUCE_SUM, n),
            }
        }
        OpKind::Softmax { numeric_stable, .. } => {
            // exp, a row sum, a scale by the reciprocal; a stable softmax first subtracts
            // the row max.
            let mut ops = TRANSCENDENTAL.plus(REDUCE_SUM).plus(MUL);
            if *numeric_stable {
                ops = ops.plus(REDUCE_MAX).plus(ADD);
            }
            rowwise(&in0, ops, n)
        }
        OpKind::Norm(op) => {
            let row_statistics = match op {
                NormOp::RmsNorm => 1,
                NormOp::LayerNorm => 2,
                _ => 0,
            };
            Analysis { row_statistics, ..rowwise(&in0, norm_ops(*op, n), n) }
        }
        OpKind::Reduction { op, dims, .. } => {
            let ops = match op {
                ReduceOp::Sum | ReduceOp::Mean => REDUCE_SUM,
                ReduceOp::Max | ReduceOp::Min => REDUCE_MAX,
            };
            // tt-metal's reduce along W gives each core whole tile rows of the input (all
            // leading dims and H folded in), whatever the output's shape: a 32x1x2048 sum to
            // 32x1 runs on 32 cores, not on the one core its squeezed 32x1 output tile would
            // suggest.
            let rank = i64::try_from(in0.shape.len()).unwrap_or(i64::MAX);
            let along_w = matches!(dims.as_deref(), Some([d]) if *d == rank - 1 || *d == -1);
            if along_w && in0.page == PageLayout::Tile {
                let (_, tw) = in0.tiles_2d();
                Analysis { chunk: tw.max(1), ..Analysis::new(in0.tiles(), ops, n) }
            } else {
                reduce(&in0, out_tiles, ops, n)
            }
        }
        OpKind::Prod { .. } => reduce(&in0, out_tiles, SFPU, n),
        // tt-metal's argmax compares element by element in its reader kernel (a RISC-V data
        // movement core, no vector unit). On a row-major input the multi-core program splits
        // the reduced rows' elements over the whole grid; a tiled input falls back to the
        // single-core program (tt-metal#46340).
        OpKind::Argmax { .. } => {
            let a = Analysis::new(in0.tiles(), SCALAR, n);
            match in0.page {
                PageLayout::Tile => Analysis { chunk: a.tiles.max(1), ..a },
                PageLayout::RowMajor => a,
            }
        }
        OpKind::Cumulative { .. } => Analysis::new(in0.tiles(), SFPU, n),
        OpKind::Sort { .. } | OpKind::Topk { .. } => {
            // A bitonic network over a row of w elements: log2(w)(log2(w)+1)/2 compare-swap
            // stages, each one SFPU instruction per element.
            let (_, w) = collapse_last(in0.shape);
            // ceil(log2(w)), without next_power_of_two's overflow on absurd widths.
            let k = u64::from(u64::BITS - (w.max(2) - 1).leading_zeros());
            Analysis::new(in0.tiles(), SFPU.times(k.saturating_mul(k + 1) / 2), n)
        }
        OpKind::Sampling => Analysis::new(in0.tiles(), SFPU.times(4), n),
        OpKind::RotaryEmbedding { .. } => eltwise(MUL.times(2).plus(ADD)),
        OpKind::Sdpa(_) => attention(inputs, output, n),
        // Loading const-eval results from the runtime's cache runs no kernel: they were
        // computed at load and stay where the const-eval function put them.
        OpKind::Unknown(name) if name == "ttcore.load_cached" => Analysis::free(n),
        OpKind::D2MSubgraph | OpKind::Unknown(_) => eltwise(SFPU),
        // Only the gathered rows of the table (embedding operand 1) or source (gather and
        // slice operand 0) are read; indices are read whole.
        OpKind::Embedding => data_movement().reading_at_most_output(1),
        OpKind::Gather { .. } | OpKind::SliceStatic | OpKind::SliceDynamic => {
            data_movement().reading_at_most_output(0)
        }
        OpKind::Creation(opmodel::CreationOp::Empty) => Analysis::free(n),
        OpKind::Fixed(op) => {
            use opmodel::FixedOp as F;
            match op {
                F::Copy | F::WriteTensor => data_movement(),
                F::FillCache | F::UpdateCache | F::PagedFillCache | F::PagedUpdateCache => {
                    let fill = matches!(op, F::FillCache | F::PagedFillCache);
                    cache_write(inputs, output, fill, n)
                }
                // Device handles, host transfers, deallocation, traces, weight preparation
                // and custom kernels run no modelled device work.
                _ => Analysis::free(n),
            }
        }
        OpKind::Heads(opmodel::HeadsOp::NlpCreateQkvHeadsDecode) => {
            qkv_heads_decode(&in0, output, n)
        }
        OpKind::Heads(opmodel::HeadsOp::SplitQkv) => split_qkv_heads(inputs, output, n),
        OpKind::Upsample { .. }
        | OpKind::Concat { .. }
        | OpKind::Reshape
        | OpKind::Permute { .. }
        | OpKind::Transpose { .. }
        | OpKind::Pad { .. }
        | OpKind::Repeat { .. }
        | OpKind::RepeatInterleave { .. }
        | OpKind::ToLayout
        | OpKind::ToMemoryConfig
        | OpKind::EmbeddingBw
        | OpKind::Scatter { .. }
        | OpKind::Heads(_)
        | OpKind::Collective(_)
        | OpKind::Creation(_) => data_movement(),
    }
}

fn is_32_bit(d: DataType) -> bool {
    matches!(d, DataType::F32 | DataType::SI32 | DataType::U32)
}

/// Unary functions: the cheap ones are one SFPU instruction per element, the rest are
/// transcendental or iterative.
fn unary_ops(op: UnaryOp) -> UnitOps {
    use UnaryOp as U;
    match op {
        U::Relu
        | U::Relu6
        | U::Neg
        | U::Abs
        | U::Floor
        | U::Ceil
        | U::Sign
        | U::IsFinite
        | U::LogicalNot
        | U::BitwiseNot
        | U::LeakyRelu
        | U::ClampScalar
        | U::Hardsigmoid
        | U::Dropout
        | U::Assign
        | U::BitcastConvert => SFPU,
        _ => TRANSCENDENTAL,
    }
}

/// Binary ops: add, subtract and multiply run on the matrix engine unless an operand is
/// 32-bit (the engine's source registers are narrower, so those run on the SFPU); the rest
/// are SFPU functions.
fn binary_ops(op: BinaryOp, wide: bool) -> UnitOps {
    use BinaryOp as B;
    match op {
        B::Add | B::Subtract | B::Multiply if wide => SFPU,
        B::Add | B::Subtract => ADD,
        B::Multiply => MUL,
        B::Divide | B::Remainder | B::Atan2 | B::PowTensor | B::GeluBw => TRANSCENDENTAL,
        _ => SFPU,
    }
}

/// Per-element work of a normalization. Weight and bias (operands 1 and 2 when present)
/// add a multiply and an add.
fn norm_ops(op: NormOp, n_inputs: usize) -> UnitOps {
    use NormOp as N;
    let affine = |ops: UnitOps| {
        let ops = if n_inputs >= 2 { ops.plus(MUL) } else { ops };
        if n_inputs >= 3 { ops.plus(ADD) } else { ops }
    };
    // x^2, a row sum, a scale by 1/rms.
    let rms = MUL.plus(REDUCE_SUM).plus(MUL);
    // A row mean, x - mean, its square, a row sum, a scale by 1/sigma.
    let layer = REDUCE_SUM.plus(ADD).plus(MUL).plus(REDUCE_SUM).plus(MUL);
    match op {
        N::RmsNorm | N::DistributedRmsNorm => affine(rms),
        N::LayerNorm | N::DistributedLayerNorm | N::GroupNorm => affine(layer),
        // The statistics half of a distributed norm: x^2 (and x) and row sums.
        N::RmsNormPreAllGather => MUL.plus(REDUCE_SUM),
        N::LayerNormPreAllGather => MUL.plus(REDUCE_SUM).plus(REDUCE_SUM),
        // The other half: center and scale with the gathered statistics.
        N::LayerNormPostAllGather => affine(ADD.plus(MUL)),
        // (x - mean) * inv_std * weight + bias with given statistics.
        N::BatchNormInference => ADD.plus(MUL).plus(MUL).plus(ADD),
        N::BatchNormTraining => ADD.plus(MUL).plus(MUL).plus(ADD).plus(REDUCE_SUM).plus(REDUCE_SUM),
    }
}

/// A kernel that needs whole rows of input 0 on one core (softmax, norms).
/// An in-place cache write: operand 0 is the cache (also passed as the output, the op has
/// no result of its own), operand 1 the new rows. tt-metal's `update_cache` and
/// `paged_update_cache` put one row per (user, head), each in a tile row of its own, so they
/// read and write back `rows x Dt` cache tiles (each merged with its row) and leave the rest of
/// the cache alone; `fill_cache` and `paged_fill_cache` write the input's tiles over the
/// cache's and read none of it.
fn cache_write(inputs: &[Shaped<'_>], cache: &Shaped<'_>, fill: bool, n: usize) -> Analysis {
    let Some(new) = inputs.get(1) else { return Analysis::new(cache.tiles(), ZERO, n) };
    let tiles = if fill {
        new.tiles()
    } else {
        let (rows, d) = collapse_last(new.shape);
        rows.saturating_mul(div_ceil(d, TILE).max(1))
    };
    let bytes = tiles.saturating_mul(cache.dtype.tile_bytes());
    let mut a = Analysis::new(tiles, ZERO, n);
    if let Some(r) = a.reads.first_mut() {
        *r = Read::Exactly(if fill { 0 } else { bytes });
    }
    Analysis { writes: Some(bytes), ..a }
}

/// `nlp_create_qkv_heads_decode`, `[1, 1, B, (Hq + 2·Hkv)·D]` to Q `[1, B, Hq, D]`, K and V
/// `[1, B, Hkv, D]`: the op is costed with Q as its output, but tt-metal's program writes all
/// three, each user's heads in a shard of their own with the heads padded to whole tiles
/// (`ceil(H / 32)` tile rows of `D / 32` tiles per user), so K and V add their bytes, in Q's
/// placement. Each core gathers one user's rows from the input, which is read once.
fn qkv_heads_decode(in0: &Shaped<'_>, q: &Shaped<'_>, n: usize) -> Analysis {
    let (Some(&hidden), [.., users, hq, d]) = (in0.shape.last(), q.shape) else {
        return Analysis::new(q.tiles(), ZERO, n);
    };
    let hkv = hidden.checked_div(*d).map_or(0, |h| h.saturating_sub(*hq) / 2);
    let kv_tiles = users.saturating_mul(div_ceil(hkv, TILE)).saturating_mul(div_ceil(*d, TILE));
    let kv_bytes = kv_tiles.saturating_mul(2).saturating_mul(q.dtype.tile_bytes());
    let tiles = q.tiles().saturating_add(kv_tiles.saturating_mul(2));
    Analysis { other_results: kv_bytes, ..Analysis::new(tiles, ZERO, n) }
}

/// `split_query_key_value_and_split_heads`, `[B, S, (Hq + 2·Hkv)·D]` to Q `[B, Hq, S, D]`, K
/// and V `[B, Hkv, S, D]` (with a second input, K and V come from its `[B, S, 2·Hkv·D]`): the
/// op is costed with Q as its output, but tt-metal's program (`nlp_create_qkv_heads`, which
/// the op runs on an interleaved input) reads every input tile once and writes each to Q, K
/// or V, so K's and V's tiles add their bytes, in Q's placement.
fn split_qkv_heads(inputs: &[Shaped<'_>], q: &Shaped<'_>, n: usize) -> Analysis {
    let [b, hq, s, d] = q.shape else { return Analysis::new(q.tiles(), ZERO, n) };
    let hkv = match inputs {
        [_, kv, ..] => kv.shape.last().and_then(|w| w.checked_div(d.saturating_mul(2))),
        [x, ..] => {
            x.shape.last().and_then(|w| w.checked_div(*d)).map(|h| h.saturating_sub(*hq) / 2)
        }
        [] => None,
    }
    .unwrap_or(0);
    let kv_tiles =
        b.saturating_mul(hkv).saturating_mul(div_ceil(*s, TILE)).saturating_mul(div_ceil(*d, TILE));
    let kv_bytes = kv_tiles.saturating_mul(2).saturating_mul(q.dtype.tile_bytes());
    let tiles = q.tiles().saturating_add(kv_tiles.saturating_mul(2));
    Analysis { other_results: kv_bytes, ..Analysis::new(tiles, ZERO, n) }
}

fn rowwise(in0: &Shaped<'_>, ops: UnitOps, n: usize) -> Analysis {
    let (_, tw) = in0.tiles_2d();
    Analysis { chunk: tw.max(1), rowwise: true, ..Analysis::new(in0.tiles(), ops, n) }
}

/// A reduction: the work is over the input, the parallelism over the output tiles.
fn reduce(in0: &Shaped<'_>, out_tiles: u64, ops: UnitOps, n: usize) -> Analysis {
    let tiles = in0.tiles();
    Analysis { chunk: div_ceil(tiles, out_tiles.max(1)).max(1), ..Analysis::new(tiles, ops, n) }
}

/// `(rows, last)` of a shape: the product of all leading dims and the last dim.
fn collapse_last(shape: &[u64]) -> (u64, u64) {
    match shape.split_last() {
        None => (1, 1),
        Some((w, rest)) => (volume(rest), *w),
    }
}

/// The last two dims of a shape as (rows, cols); rank 1 is one row, rank 0 one element.
fn last2(shape: &[u64]) -> (u64, u64) {
    match shape {
        [] => (1, 1),
        [x] => (1, *x),
        [.., r, c] => (*r, *c),
    }
}

fn leading(shape: &[u64]) -> u64 {
    if shape.len() <= 2 { 1 } else { volume(&shape[..shape.len() - 2]) }
}

fn config_fidelity(config: &OpConfig) -> Option<MathFidelity> {
    match config {
        OpConfig::Matmul { compute, .. } | OpConfig::Conv2d { compute, .. } => {
            compute.and_then(|c| c.math_fidelity)
        }
        OpConfig::None => None,
    }
}

fn fused_activation(config: &OpConfig) -> Option<&str> {
    use ttnn_types::MatmulProgramConfig as P;
    match config {
        OpConfig::Matmul { program: Some(p), .. } => match &**p {
            P::MultiCast2D { fused_activation, .. }
            | P::MultiCast1D { fused_activation, .. }
            | P::DramSharded { fused_activation, .. } => {
                fused_activation.as_ref().map(|a| a.op_type.as_str())
            }
            P::MultiCoreReuse { .. } => None,
        },
        OpConfig::Conv2d { conv, .. } => conv.activation.as_ref().map(|a| a.op_type.as_str()),
        _ => None,
    }
}

/// A fused activation's cost per output tile.
fn activation_ops(name: Option<&str>) -> UnitOps {
    match name {
        None | Some("") => ZERO,
        Some("relu" | "relu6" | "leaky_relu" | "identity" | "abs" | "neg") => SFPU,
        Some(_) => TRANSCENDENTAL,
    }
}

/// matmul / linear: `2 * M * N * K` per batch on tile-padded dims, plus the bias add and a
/// fused activation per output element.
fn matmul(
    inputs: &[Shaped<'_>],
    output: &Shaped<'_>,
    config: &OpConfig,
    n: usize,
    transpose_a: bool,
    activation: Option<&str>,
) -> Analysis {
    let (om, on) = last2(output.shape);
    let k = match inputs.first() {
        Some(a) => {
            let (r, c) = last2(a.shape);
            if transpose_a { r } else { c }
        }
        None => TILE,
    };
    // N comes from the output, so B's transpose does not matter here.
    let b_batch = inputs.get(1).map_or(1, |b| leading(b.shape)).max(1);
    let rows = leading(output.shape).saturating_mul(div_ceil(om, TILE)).max(1);
    let dims = MatmulDims {
        rows,
        cols: div_ceil(on, TILE).max(1),
        inner: div_ceil(k, TILE).max(1),
        rows_per_b: div_ceil(rows, b_batch).max(1),
    };
    let mut ops = UnitOps { matmul: (2 * E * TILE).saturating_mul(dims.inner), ..ZERO };
    if n >= 3 {
        ops = ops.plus(ADD);
    }
    ops = ops.plus(activation_ops(activation));
    Analysis {
        matmul: Some(dims),
        fidelity: config_fidelity(config),
        ..Analysis::new(dims.rows.saturating_mul(dims.cols), ops, n)
    }
}

/// Convolutions as the matmul tt-metal runs: output pixels x `Cout`, inner dim
/// `Cin / groups x Kh x Kw`, each tile-padded. The output is `[1, 1, N*Ho*Wo, Cout]`.
fn conv(
    inputs: &[Shaped<'_>],
    output: &Shaped<'_>,
    config: &OpConfig,
    n: usize,
    attrs: &opmodel::ConvAttrs,
) -> Analysis {
    let (in_channels, groups, kernel) = (attrs.in_channels, attrs.groups, attrs.kernel);
    let (pixels, cout) = collapse_last(output.shape);
    let cin = if in_channels > 0 {
        in_channels
    } else {
        inputs.first().map_or(1, |a| collapse_last(a.shape).1)
    };
    let window = kernel[0].max(1).saturating_mul(kernel[1].max(1));
    let k = (cin / groups.max(1)).max(1).saturating_mul(window);
    let rows = div_ceil(pixels, TILE).max(1);
    let dims = MatmulDims {
        rows,
        cols: div_ceil(cout, TILE).max(1),
        inner: div_ceil(k, TILE).max(1),
        rows_per_b: rows,
    };
    let mut ops = UnitOps { matmul: (2 * E * TILE).saturating_mul(dims.inner), ..ZERO };
    if n >= 3 {
        ops = ops.plus(ADD);
    }
    ops = ops.plus(activation_ops(fused_activation(config)));
    let mut a = Analysis {
        matmul: Some(dims),
        fidelity: config_fidelity(config),
        window_reads: (window, attrs.stride[0].max(1).saturating_mul(attrs.stride[1].max(1))),
        ..Analysis::new(dims.rows.saturating_mul(dims.cols), ops, n)
    };
    // The prepared weight matrix: `inner x cols` tiles in the weight's data type.
    if let (Some(w), Some(r)) = (inputs.get(1), a.reads.get_mut(1)) {
        let dtype = match config {
            OpConfig::Conv2d { conv, .. } => conv.weights_dtype.unwrap_or(w.dtype),
            _ => w.dtype,
        };
        let tiles = dims.inner.saturating_mul(dims.cols);
        *r = Read::Exactly(tiles.saturating_mul(dtype.tile_bytes()));
    }
    a
}

/// Attention: `Q K^T` and `P V` (`4 * S * Skv * D` FLOPs per head) plus a stable softmax over
/// the `S x Skv` scores. One unit of work is one 32-row block of queries of one head.
fn attention(inputs: &[Shaped<'_>], output: &Shaped<'_>, n: usize) -> Analysis {
    let q = inputs.first().copied().unwrap_or(*output);
    let (s, d) = last2(q.shape);
    let skv = inputs.get(1).map_or(s, |k| last2(k.shape).0);
    let (st, dt, kt) =
        (div_ceil(s, TILE).max(1), div_ceil(d, TILE).max(1), div_ceil(skv, TILE).max(1));
    let blocks = leading(q.shape).saturating_mul(st);
    let scores = TRANSCENDENTAL.plus(ADD).plus(REDUCE_MAX).plus(REDUCE_SUM).plus(MUL).plus(MUL);
    let ops = UnitOps { matmul: (4 * E * TILE).saturating_mul(dt), ..ZERO }.plus(scores).times(kt);
    Analysis::new(blocks, ops, n)
}
