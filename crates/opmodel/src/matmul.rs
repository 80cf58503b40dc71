//! Matmul and linear: tt-mlir's program-config generator, tt-metal's program-config rules,
//! its auto-picker for interleaved outputs (`create_simple_matmul_program_config`, with the
//! output block fitted to L1), and the CBs each tt-metal program factory allocates for the
//! chosen config (`cb_bytes`; opmodel.md §4.3, §5; legacy notes §5).

use ttnn_types::{
    CoreCoord, DataType, DeviceComputeKernelConfig, Grid, MatmulProgramConfig, PageLayout, TILE,
    TensorMemoryLayout, TtnnLayout, UnaryWithParam, div_ceil,
};

use crate::{
    MatmulAttrs, OpConfig, OpError, OutputHint,
    util::{Ctx, Estimate, LayoutExt, largest_divisor_at_most, shape_text, sharded, unsupported},
};

/// The operand and result shapes a program config is generated from.
#[derive(Debug, Clone, Copy)]
pub struct MatmulShapes<'a> {
    pub a: &'a [u64],
    pub b: &'a [u64],
    pub out: &'a [u64],
    pub transpose_a: bool,
    pub transpose_b: bool,
}

impl MatmulShapes<'_> {
    /// (M, K) of A and (K, N) of B after the transposes; rank-1 operands are a row / a column.
    fn mkn(&self) -> ((u64, u64), (u64, u64)) {
        let last2 = |s: &[u64], vector_is_row: bool| -> (u64, u64) {
            match s {
                [] => (1, 1),
                [x] if vector_is_row => (1, *x),
                [x] => (*x, 1),
                [.., r, c] => (*r, *c),
            }
        };
        let (am, ak) = last2(self.a, true);
        let a = if self.transpose_a { (ak, am) } else { (am, ak) };
        let (bk, bn) = last2(self.b, false);
        let b = if self.transpose_b { (bn, bk) } else { (bk, bn) };
        (a, b)
    }

    fn batch(s: &[u64]) -> u64 {
        if s.len() <= 2 {
            1
        } else {
            s[..s.len() - 2].iter().fold(1u64, |a, d| a.saturating_mul(*d))
        }
    }
}

/// tt-mlir's `generateMatmulProgramConfig`: a program config for an L1-sharded output, or
/// `None` (interleaved output, or B has batch dims so `fuse_batch` cannot hold, tt-metal#42572).
///
/// Mt is taken from the output's second-last dim only, as upstream does, even though
/// `fuse_batch` folds A's batch into M inside tt-metal; the validation catches the mismatch.
#[must_use]
pub fn generate_matmul_program_config(
    shapes: &MatmulShapes<'_>,
    out_layout: &TtnnLayout,
    compute: Option<&DeviceComputeKernelConfig>,
    activation: Option<&str>,
) -> Option<MatmulProgramConfig> {
    if !out_layout.is_l1_sharded() || MatmulShapes::batch(shapes.b) != 1 {
        return None;
    }
    let ((_, k), _) = shapes.mkn();
    let (m, n) = match shapes.out {
        [] => (1, 1),
        [x] => (1, *x),
        [.., r, c] => (*r, *c),
    };
    let (mt, nt, kt) = (div_ceil(m, TILE), div_ceil(n, TILE), div_ceil(k, TILE));
    if mt == 0 || nt == 0 || kt == 0 {
        return None;
    }
    let max_sub = compute.map_or(8, DeviceComputeKernelConfig::max_subblock_tiles).max(1);
    let fused_activation =
        activation.map(|a| UnaryWithParam { op_type: a.to_owned(), params: Vec::new() });
    let grid = out_layout.grid2d();
    let bbox = out_layout.bounding_box().map_or(CoreCoord { x: grid.cols, y: grid.rows }, |b| {
        CoreCoord { x: b.end.x - b.start.x + 1, y: b.end.y - b.start.y + 1 }
    });
    let kt_even_ibw = if kt.is_multiple_of(2) { 2 } else { 1 };
    let ml = match out_layout.memory_layout? {
        // A block-sharded grid with one row or column is really 1D.
        TensorMemoryLayout::BlockSharded if grid.rows == 1 => TensorMemoryLayout::WidthSharded,
        TensorMemoryLayout::BlockSharded if grid.cols == 1 => TensorMemoryLayout::HeightSharded,
        other => other,
    };
    match ml {
        TensorMemoryLayout::BlockSharded => {
            let pm = div_ceil(mt, grid.rows);
            let pn = div_ceil(nt, grid.cols);
            Some(MatmulProgramConfig::MultiCast2D {
                grid: CoreCoord { x: grid.cols, y: grid.rows },
                in0_block_w: kt_even_ibw,
                out_subblock_h: 1,
                out_subblock_w: largest_divisor_at_most(pn, max_sub),
                out_block_h: pm,
                out_block_w: pn,
                per_core_m: pm,
                per_core_n: pn,
                transpose_mcast: false,
                fused_activation,
                fuse_batch: true,
            })
        }
        TensorMemoryLayout::WidthSharded => {
            let cores = out_layout.num_cores().max(1);
            let pn = div_ceil(nt, cores);
            let ibw = if nt > 128 {
                kt_even_ibw
            } else {
                [8, 4, 2, 1].into_iter().find(|d| kt.is_multiple_of(*d)).unwrap_or(1)
            };
            Some(MatmulProgramConfig::MultiCast1D {
                grid: bbox,
                in0_block_w: ibw,
                out_subblock_h: 1,
                out_subblock_w: largest_divisor_at_most(pn, max_sub),
                out_block_h: mt,
                out_block_w: pn,
                per_core_m: mt,
                per_core_n: pn,
                fuse_batch: true,
                fused_activation,
                mcast_in0: true,
            })
        }
        TensorMemoryLayout::HeightSharded => {
            let cores = out_layout.num_cores().max(1);
            let pm = div_ceil(mt, cores);
            Some(MatmulProgramConfig::MultiCast1D {
                grid: bbox,
                in0_block_w: kt,
                out_subblock_h: 1,
                out_subblock_w: largest_divisor_at_most(nt, max_sub),
                out_block_h: pm,
                out_block_w: nt,
                per_core_m: pm,
                per_core_n: nt,
                fuse_batch: true,
                fused_activation,
                mcast_in0: false,
            })
        }
        _ => None,
    }
}

/// Tile dims of one matmul query.
struct Dims {
    mt: u64,
    nt: u64,
    kt: u64,
    /// A's batch folded into M (what tt-metal does with `fuse_batch`).
    m_fused: u64,
    /// A's batch, the programs' outer loop when the batch is not fused into M.
    batch_a: u64,
    batched_b: bool,
}

pub(crate) fn matmul(ctx: &Ctx<'_>, attrs: &MatmulAttrs) -> Result<Estimate, OpError> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let shapes = MatmulShapes {
        a: &a.shape,
        b: &b.shape,
        out: &ctx.q.output_shape,
        transpose_a: attrs.transpose_a,
        transpose_b: attrs.transpose_b,
    };
    let dims = dims(ctx, &shapes)?;
    if let Some(bias) = ctx.q.inputs.get(2) {
        let (rows, cols) = match bias.shape.as_slice() {
            [] => (1, 1),
            [c] => (1, *c),
            [.., r, c] => (*r, *c),
        };
        let n = ctx.q.output_shape.last().copied().unwrap_or(1);
        if rows > TILE || (cols != n && cols != 1) {
            return Err(crate::util::invalid(format!(
                "{}: bias {} must be one row of N = {n} (at most {TILE} rows)",
                ctx.name(),
                shape_text(&bias.shape)
            )));
        }
    }
    let (compute, given) = match &ctx.q.config {
        OpConfig::Matmul { program, compute } => (*compute, program.as_deref().cloned()),
        _ => (None, None),
    };
    // tt-metal checks subblocks against the DST tiles of the compute config it runs with, and
    // without a given config that config accumulates in fp32 for an f32 output, halving DST.
    // tt-mlir's generator (above) counts 8 tiles then, so a config it generates for an f32
    // output with a subblock over 4 tiles is rejected here, as tt-metal rejects it.
    let max_sub =
        Accumulation::of(compute.as_ref(), ctx.q.output_dtype).dst_tiles(compute.as_ref());

    // The output and the program config decide each other: a sharded output needs a config
    // (given or generated) and a partial hint takes its grid from the generated config.
    let (out, program, generated) = match &ctx.q.output {
        OutputHint::Null => (ctx.dram_output(PageLayout::Tile), given, false),
        OutputHint::Layout(l) | OutputHint::Partial(l) if !l.is_sharded() => {
            (ctx.output_like(l)?, given, false)
        }
        OutputHint::Layout(l) => {
            let out = ctx.output_like(l)?;
            let (cfg, generated) = match given {
                Some(c) => (c, false),
                None => (need_config(ctx, &shapes, &out, compute.as_ref(), attrs)?, true),
            };
            (out, Some(cfg), generated)
        }
        OutputHint::Partial(l) => {
            let ml = l.memory_layout.unwrap_or(TensorMemoryLayout::BlockSharded);
            let (cfg, generated) = match given {
                Some(c) => (c, false),
                None => {
                    let probe = probe_layout(ctx, ml, &dims)?;
                    (need_config(ctx, &shapes, &probe, compute.as_ref(), attrs)?, true)
                }
            };
            let out = layout_from_config(ctx, &cfg, ml, &dims, l.page_layout())?;
            (out, Some(cfg), generated)
        }
    };
    if out.is_l1_sharded() && dims.batched_b {
        return Err(unsupported(format!(
            "{}: B has batch dims, so no program config is generated and a sharded output is \
             not supported (tt-metal#42572)",
            ctx.name()
        )));
    }
    let cfg = match &program {
        Some(c) => match validate(ctx, c, &dims, &a.layout, &out, max_sub) {
            Ok(()) => Program::Config(c.clone()),
            // Without a caller-given config and with an exact output layout, the backend may
            // fall back to deriving a config from in0's shard (what tt-metal does when no
            // config is passed), which is how the legality matrix's sharded rows pass.
            Err(e) if generated && matches!(ctx.q.output, OutputHint::Layout(_)) => {
                let Program::Config(auto) =
                    auto_config(ctx, &dims, &a.layout, &out, max_sub, compute.as_ref())
                else {
                    return Err(e);
                };
                if validate(ctx, &auto, &dims, &a.layout, &out, max_sub).is_err() {
                    return Err(e);
                }
                Program::Config(auto)
            }
            Err(e) => return Err(e),
        },
        None => auto_config(ctx, &dims, &a.layout, &out, max_sub, compute.as_ref()),
    };
    let cb = cb_bytes(ctx, &cfg, &dims, &a.layout, &out, compute.as_ref());
    let mut est = Estimate::new(cb, out);
    // Upstream attaches a config only when it generated one for a sharded output; for
    // interleaved outputs tt-metal picks at run time, so none is reported.
    let reported = match cfg {
        Program::Config(c) if program.is_some() || generated => Some(c),
        _ => None,
    };
    est.config = OpConfig::Matmul { program: reported.map(Box::new), compute };
    Ok(est)
}

/// sparse_matmul: DRAM-resident sparse weights, interleaved output, the batched program's CBs.
pub(crate) fn sparse_matmul(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let shapes = MatmulShapes {
        a: &a.shape,
        b: &b.shape,
        out: &ctx.q.output_shape,
        transpose_a: false,
        transpose_b: false,
    };
    let ((_, k), _) = shapes.mkn();
    let (m, n) = match ctx.q.output_shape.as_slice() {
        [.., r, c] => (*r, *c),
        _ => (1, 1),
    };
    let dims = Dims {
        mt: div_ceil(m, TILE),
        nt: div_ceil(n, TILE),
        kt: div_ceil(k, TILE),
        m_fused: div_ceil(m, TILE),
        batch_a: MatmulShapes::batch(&a.shape),
        batched_b: true,
    };
    let out = ctx.resolve_output(crate::util::NullPolicy::Dram)?;
    if out.is_sharded() || a.layout.is_sharded() {
        return Err(unsupported("ttnn.sparse_matmul is modelled for interleaved tensors only"));
    }
    let cfg = auto_config(ctx, &dims, &a.layout, &out, 8, None);
    let cb = cb_bytes(ctx, &cfg, &dims, &a.layout, &out, None);
    Ok(Estimate::new(cb, out))
}

fn dims(ctx: &Ctx<'_>, s: &MatmulShapes<'_>) -> Result<Dims, OpError> {
    let ((m, ka), (kb, n)) = s.mkn();
    if ka != kb {
        return Err(crate::util::invalid(format!(
            "{}: inner dims differ: A {} has K = {ka}, B {} has K = {kb}",
            ctx.name(),
            shape_text(s.a),
            shape_text(s.b)
        )));
    }
    let (om, on) = match s.out {
        [] => (1, 1),
        [x] => (1, *x),
        [.., r, c] => (*r, *c),
    };
    if (s.a.len() > 1 && om != m) || on != n {
        return Err(crate::util::invalid(format!(
            "{}: output {} is not [.., {m}, {n}]",
            ctx.name(),
            shape_text(s.out)
        )));
    }
    let mt = div_ceil(m, TILE);
    Ok(Dims {
        mt,
        nt: div_ceil(n, TILE),
        kt: div_ceil(ka, TILE),
        m_fused: mt.saturating_mul(MatmulShapes::batch(s.a)),
        batch_a: MatmulShapes::batch(s.a),
        batched_b: MatmulShapes::batch(s.b) > 1,
    })
}

fn need_config(
    ctx: &Ctx<'_>,
    shapes: &MatmulShapes<'_>,
    out: &TtnnLayout,
    compute: Option<&DeviceComputeKernelConfig>,
    attrs: &MatmulAttrs,
) -> Result<MatmulProgramConfig, OpError> {
    generate_matmul_program_config(shapes, out, compute, attrs.activation.as_deref()).ok_or_else(
        || {
            unsupported(format!(
                "{}: a sharded output needs a generated program config, and none exists for \
                 {} (B batched or output not L1-sharded, tt-metal#42572)",
                ctx.name(),
                out.describe()
            ))
        },
    )
}

/// The layout a partial hint is generated against: the whole worker grid, clipped to tiles.
fn probe_layout(ctx: &Ctx<'_>, ml: TensorMemoryLayout, d: &Dims) -> Result<TtnnLayout, OpError> {
    let w = ctx.worker();
    let grid = match ml {
        TensorMemoryLayout::BlockSharded => {
            Grid::new(w.rows.min(d.mt).max(1), w.cols.min(d.nt).max(1))
        }
        TensorMemoryLayout::WidthSharded => Grid::new(1, w.volume().min(d.nt).max(1)),
        _ => Grid::new(w.volume().min(d.mt).max(1), 1),
    };
    sharded(&ctx.q.output_shape, ctx.q.output_dtype, PageLayout::Tile, ml, grid, w)
}

/// The output grid a program config implies.
fn layout_from_config(
    ctx: &Ctx<'_>,
    cfg: &MatmulProgramConfig,
    ml: TensorMemoryLayout,
    d: &Dims,
    page: PageLayout,
) -> Result<TtnnLayout, OpError> {
    let (pm, pn) = cfg.per_core();
    let rows = div_ceil(d.m_fused, pm.max(1)).max(1);
    let cols = div_ceil(d.nt, pn.max(1)).max(1);
    let (ml, grid) = match cfg {
        MatmulProgramConfig::MultiCast2D { .. } => {
            (TensorMemoryLayout::BlockSharded, Grid::new(rows, cols))
        }
        MatmulProgramConfig::MultiCast1D { mcast_in0: true, .. } => {
            (TensorMemoryLayout::WidthSharded, Grid::new(1, cols))
        }
        MatmulProgramConfig::MultiCast1D { mcast_in0: false, .. } => {
            (TensorMemoryLayout::HeightSharded, Grid::new(rows, 1))
        }
        _ => (ml, Grid::new(rows, cols)),
    };
    sharded(&ctx.q.output_shape, ctx.q.output_dtype, page, ml, grid, ctx.worker())
}

/// tt-metal's program-config checks (matmul_device_operation.cpp, as summarised in our notes).
#[expect(
    clippy::collapsible_match,
    reason = "a match guard would fall through to the arm that rejects the memory layout"
)]
fn validate(
    ctx: &Ctx<'_>,
    cfg: &MatmulProgramConfig,
    d: &Dims,
    a: &TtnnLayout,
    out: &TtnnLayout,
    max_sub: u64,
) -> Result<(), OpError> {
    let fail = |why: String| {
        Err(unsupported(format!("{}: {} program config: {why}", ctx.name(), cfg.kind_name())))
    };
    let (pm, pn) = cfg.per_core();
    let ibw = cfg.in0_block_w();
    let (sbh, sbw) = cfg.out_subblock();
    let (obh, obw) = match cfg {
        MatmulProgramConfig::MultiCast2D { out_block_h, out_block_w, .. }
        | MatmulProgramConfig::MultiCast1D { out_block_h, out_block_w, .. } => {
            (*out_block_h, *out_block_w)
        }
        _ => (pm, pn),
    };
    if [pm, pn, ibw, sbh, sbw, obh, obw].contains(&0) {
        return fail("block dims must be non-zero".to_owned());
    }
    if matches!(cfg, MatmulProgramConfig::DramSharded { .. }) {
        return Err(unsupported("DRAM-sharded matmul program configs are not modelled"));
    }
    if !obh.is_multiple_of(sbh) || !obw.is_multiple_of(sbw) {
        return fail(format!("out block {obh}x{obw} is not a multiple of subblock {sbh}x{sbw}"));
    }
    if !pm.is_multiple_of(obh) || !pn.is_multiple_of(obw) {
        return fail(format!("per-core {pm}x{pn} is not a multiple of out block {obh}x{obw}"));
    }
    if sbh * sbw > max_sub {
        return fail(format!("subblock {sbh}x{sbw} exceeds the {max_sub} DST tiles"));
    }
    if !d.kt.is_multiple_of(ibw) {
        return fail(format!("Kt = {} is not a multiple of in0_block_w = {ibw}", d.kt));
    }
    let cores = match cfg {
        MatmulProgramConfig::MultiCast2D { grid, .. }
        | MatmulProgramConfig::MultiCast1D { grid, .. }
        | MatmulProgramConfig::MultiCoreReuse { grid, .. } => grid.x.saturating_mul(grid.y),
        MatmulProgramConfig::DramSharded { .. } => 0,
    };
    let (a_sh, a_sw) = a.shard_tiles();
    let a_ml = a.memory_layout.filter(|_| a.is_l1_sharded());
    let out_ml = out.memory_layout.filter(|_| out.is_l1_sharded());
    if out_ml.is_some() && out.shard_tiles() != (pm, pn) {
        return fail(format!(
            "the output shard {}x{} tiles differs from the per-core block {pm}x{pn}",
            out.shard_tiles().0,
            out.shard_tiles().1
        ));
    }
    match cfg {
        MatmulProgramConfig::MultiCast2D { grid, transpose_mcast, .. } => {
            let (gy, gx) = if *transpose_mcast { (grid.x, grid.y) } else { (grid.y, grid.x) };
            if div_ceil(d.m_fused, pm) > gy || div_ceil(d.nt, pn) > gx {
                return fail(format!(
                    "{} x {} blocks do not fit the {gy}x{gx} grid (M includes the batch)",
                    div_ceil(d.m_fused, pm),
                    div_ceil(d.nt, pn)
                ));
            }
            match a_ml {
                Some(TensorMemoryLayout::BlockSharded) => {
                    if a_sh != pm || !a_sw.is_multiple_of(ibw) {
                        return fail(format!(
                            "block-sharded in0 shard {a_sh}x{a_sw} does not match per_core_m {pm} / in0_block_w {ibw}"
                        ));
                    }
                }
                Some(TensorMemoryLayout::HeightSharded) if a.grid2d().cols == 1 => {
                    if d.kt != ibw {
                        return fail("a height-sharded in0 needs in0_block_w = Kt".to_owned());
                    }
                }
                Some(ml) => return fail(format!("in0 may not be {ml}")),
                None => {}
            }
            if let (Some(aml), Some(oml)) = (a_ml, out_ml)
                && aml != oml
            {
                return fail(format!(
                    "a sharded in0 ({aml}) needs the output in the same memory layout, not {oml}"
                ));
            }
            if matches!(out_ml, Some(m) if m != TensorMemoryLayout::BlockSharded) {
                return fail("2D multicast writes a block-sharded output".to_owned());
            }
        }
        MatmulProgramConfig::MultiCast1D { mcast_in0: true, .. } => {
            if div_ceil(d.nt, pn) > cores {
                return fail(format!("{} blocks exceed {cores} cores", div_ceil(d.nt, pn)));
            }
            if d.m_fused != pm {
                return fail(format!(
                    "M must fit one block: Mt = {} but per_core_m = {pm}",
                    d.m_fused
                ));
            }
            match a_ml {
                Some(TensorMemoryLayout::WidthSharded) => {
                    if a_sh != pm || !a_sw.is_multiple_of(ibw) {
                        return fail(format!(
                            "width-sharded in0 shard {a_sh}x{a_sw} does not match per_core_m {pm} / in0_block_w {ibw}"
                        ));
                    }
                }
                Some(ml) => {
                    return fail(format!("in0 must be width-sharded or interleaved, not {ml}"));
                }
                None => {}
            }
            match out_ml {
                Some(TensorMemoryLayout::WidthSharded) | None => {}
                Some(TensorMemoryLayout::BlockSharded) if out.grid2d().rows == 1 => {}
                Some(ml) => {
                    return fail(format!("mcast_in0 writes a width-sharded output, not {ml}"));
                }
            }
            if sbw != pn && sbh != 1 {
                return fail(
                    "out_subblock_w must equal per_core_n or out_subblock_h be 1".to_owned(),
                );
            }
        }
        MatmulProgramConfig::MultiCast1D { mcast_in0: false, .. } => {
            if div_ceil(d.m_fused, pm) > cores {
                return fail(format!(
                    "{} blocks exceed {cores} cores (M includes the batch)",
                    div_ceil(d.m_fused, pm)
                ));
            }
            if d.nt != pn {
                return fail(format!("N must fit one block: Nt = {} but per_core_n = {pn}", d.nt));
            }
            match a_ml {
                Some(TensorMemoryLayout::HeightSharded) => {
                    if a_sw != d.kt || a_sh != pm {
                        return fail(format!(
                            "height-sharded in0 shard {a_sh}x{a_sw} must be per_core_m {pm} x Kt {}",
                            d.kt
                        ));
                    }
                }
                Some(ml) => {
                    return fail(format!("in0 must be height-sharded or interleaved, not {ml}"));
                }
                None => {}
            }
            match out_ml {
                Some(TensorMemoryLayout::HeightSharded) | None => {}
                Some(TensorMemoryLayout::BlockSharded) if out.grid2d().cols == 1 => {}
                Some(ml) => {
                    return fail(format!("mcast_in1 writes a height-sharded output, not {ml}"));
                }
            }
        }
        MatmulProgramConfig::MultiCoreReuse { .. } => {
            let blocks = div_ceil(d.m_fused, pm).saturating_mul(div_ceil(d.nt, pn));
            if blocks > cores {
                return fail(format!("{blocks} blocks exceed {cores} cores"));
            }
        }
        MatmulProgramConfig::DramSharded { .. } => {}
    }
    Ok(())
}

/// What tt-metal picks when no config is given (interleaved or DRAM output): from in0's
/// shard when in0 is sharded (`get_matmul_program_config`), else by
/// `create_simple_matmul_program_config`, whose choice depends on where the tensors live.
///
/// For an interleaved in0 that picker first takes a square per-core block of 16, 8, 4 or 2
/// tiles (the largest its own CB estimate fits in free L1, K read two tiles at a time):
/// * 1D multicast when the problem is narrow (one side over 8 times the other, or for an
///   all-DRAM problem one side within a tile) or when those blocks make a single row or
///   column of cores; 1D configs read K two tiles at a time (`get_mcast_1d_config`);
/// * 2D multicast for an all-DRAM problem, with the per-core block spread over the whole
///   grid and `in0_block_w = Kt / grid columns` (1 if that does not divide);
/// * 2D multicast with the square block itself (and its 2-tile K block) when an operand or the
///   output is in L1 and the blocks fit the grid;
/// * otherwise the plain multi-core program, which streams single tiles.
///
/// 1D and 2D blocks are then shrunk until tt-metal's estimate fits (`fit_out_block`). These
/// configs do not fuse A's batch into M: the batch is an outer loop of the program.
fn auto_config(
    ctx: &Ctx<'_>,
    d: &Dims,
    a: &TtnnLayout,
    out: &TtnnLayout,
    max_sub: u64,
    compute: Option<&DeviceComputeKernelConfig>,
) -> Program {
    let w = ctx.worker();
    let cores = w.volume().max(1);
    let ibw8 = largest_divisor_at_most(d.kt, 8);
    let sub = |pm: u64, pn: u64| best_subblock(pm, pn, max_sub);
    if d.batched_b {
        let (pm, pn) = (largest_divisor_at_most(d.mt, 8), largest_divisor_at_most(d.nt, 8));
        let (sbh, sbw) = sub(pm, pn);
        return Program::Config(MatmulProgramConfig::MultiCoreReuse {
            grid: CoreCoord { x: w.cols, y: w.rows },
            in0_block_w: ibw8,
            out_subblock_h: sbh,
            out_subblock_w: sbw,
            per_core_m: pm,
            per_core_n: pn,
        });
    }
    let grid = CoreCoord { x: w.cols, y: w.rows };
    let one_d = |pm: u64, pn: u64, ibw: u64, mcast_in0: bool, block: Block, fuse_batch: bool| {
        let (sbh, sbw) = sub(block.h, block.w);
        Program::Config(MatmulProgramConfig::MultiCast1D {
            grid,
            in0_block_w: block.k.unwrap_or(ibw),
            out_subblock_h: sbh,
            out_subblock_w: sbw,
            out_block_h: block.h,
            out_block_w: block.w,
            per_core_m: pm,
            per_core_n: pn,
            fuse_batch,
            fused_activation: None,
            mcast_in0,
        })
    };
    let two_d = |grid: CoreCoord, pm: u64, pn: u64, ibw: u64, block: Block, fuse_batch: bool| {
        let (sbh, sbw) = sub(block.h, block.w);
        Program::Config(MatmulProgramConfig::MultiCast2D {
            grid,
            in0_block_w: block.k.unwrap_or(ibw),
            out_subblock_h: sbh,
            out_subblock_w: sbw,
            out_block_h: block.h,
            out_block_w: block.w,
            per_core_m: pm,
            per_core_n: pn,
            transpose_mcast: false,
            fused_activation: None,
            fuse_batch,
        })
    };
    let whole = |pm: u64, pn: u64| Block { h: pm, w: pn, k: None };
    if a.is_l1_sharded() {
        let (sh, sw) = a.shard_tiles();
        let g = a.grid2d();
        // A sharded in0's K block is the largest that divides both its shard width and Kt.
        let ibw_shard = gcd(sw.max(1), d.kt.max(1));
        match a.memory_layout {
            Some(TensorMemoryLayout::HeightSharded) => {
                let pm = sh.max(1);
                return one_d(pm, d.nt, d.kt, false, whole(pm, d.nt), true);
            }
            Some(TensorMemoryLayout::WidthSharded) => {
                let n = a.num_cores().max(1);
                let pn = div_ceil(d.nt, n);
                return one_d(d.m_fused, pn, ibw_shard, true, whole(d.m_fused, pn), true);
            }
            Some(TensorMemoryLayout::BlockSharded) => {
                let pm = sh.max(1);
                let pn = div_ceil(d.nt, g.cols.max(1));
                let grid = CoreCoord { x: g.cols, y: g.rows };
                return two_d(grid, pm, pn, ibw_shard, whole(pm, pn), true);
            }
            _ => {}
        }
    }

    let b_in_dram = ctx.q.inputs.get(1).is_none_or(|t| !t.layout.is_l1());
    let out_interleaved = !out.is_sharded();
    let all_dram = !a.is_l1() && b_in_dram && !out.is_l1();
    let all_dram_interleaved = all_dram && out_interleaved;
    // Narrowness compares A's rows (one batch) with B's columns, in elements.
    let (height, width) = (d.mt * TILE, d.nt * TILE);
    let narrow = height.max(width) / height.min(width).max(1) > 8
        || (all_dram && (height <= TILE || width <= TILE));
    let is_wide = out_interleaved && narrow && width > height;
    let is_tall = out_interleaved && narrow && !is_wide;

    let factor = square_block_factor(ctx, compute);
    let (blocks_y, blocks_x) = (div_ceil(d.mt, factor), div_ceil(d.nt, factor));
    let ibw_simple =
        if (out.is_sharded() || blocks_y > 1 || blocks_x > 1) && !d.kt.is_multiple_of(2) {
            1
        } else {
            2
        };
    if !all_dram_interleaved && (blocks_x * blocks_y > cores || !d.kt.is_multiple_of(ibw_simple)) {
        return Program::MultiCore;
    }
    // The grid the square blocks make, or none for a single block or one past the grid.
    let (range_x, range_y) =
        if (blocks_x, blocks_y) != (1, 1) && blocks_y <= w.rows && blocks_x <= w.cols {
            (blocks_x, blocks_y)
        } else {
            (0, 0)
        };
    let out_ml = out.memory_layout.filter(|_| out.is_sharded());
    let out_grid = out.grid2d();
    let bs_one_row = out_ml == Some(TensorMemoryLayout::BlockSharded)
        && out_grid.rows == 1
        && out.num_cores() > 1;
    let bs_one_col = out_ml == Some(TensorMemoryLayout::BlockSharded)
        && out_grid.cols == 1
        && out.num_cores() > 1;
    let use_in0 = is_wide
        || (range_y == 0 && (out_ml == Some(TensorMemoryLayout::WidthSharded) || bs_one_row));
    let use_in1 = is_tall
        || (range_y == 0 && (out_ml == Some(TensorMemoryLayout::HeightSharded) || bs_one_col));
    let use_2d = all_dram_interleaved
        || (range_y == 0
            && out_ml == Some(TensorMemoryLayout::BlockSharded)
            && !bs_one_row
            && !bs_one_col);
    // `get_mcast_1d_config`: the whole M (or N) per core, the other side spread over every
    // core, K two tiles at a time.
    let ibw_1d = if d.kt.is_multiple_of(2) { 2 } else { 1 };
    if range_y == 1 || use_in0 {
        let (pm, pn) = (d.mt, div_ceil(div_ceil(width, cores), TILE));
        let block = fit_out_block(ctx, (pm, pn, ibw_1d), false, compute);
        return one_d(pm, pn, ibw_1d, true, block, false);
    }
    if range_x == 1 || use_in1 {
        let (pm, pn) = (div_ceil(div_ceil(height, cores), TILE), d.nt);
        let block = fit_out_block(ctx, (pm, pn, ibw_1d), false, compute);
        return one_d(pm, pn, ibw_1d, false, block, false);
    }
    if (range_y > 0 && blocks_x <= w.cols && blocks_y <= w.rows) || use_2d {
        if all_dram_interleaved {
            let ibw = if d.kt.is_multiple_of(w.cols) { d.kt / w.cols } else { 1 };
            let (pm, pn) = (div_ceil(d.mt, w.rows), div_ceil(d.nt, w.cols));
            let block = fit_out_block(ctx, (pm, pn, ibw), true, compute);
            return two_d(grid, pm, pn, ibw.max(1), block, false);
        }
        return two_d(grid, factor, factor, ibw_simple, whole(factor, factor), false);
    }
    Program::MultiCore
}

/// tt-metal's `get_per_core_factor`: the largest square block of 16, 8, 4 or 2 tiles whose CB
/// estimate (K block 2) fits the free L1, else 1.
fn square_block_factor(ctx: &Ctx<'_>, compute: Option<&DeviceComputeKernelConfig>) -> u64 {
    let free = free_l1(ctx);
    [16, 8, 4, 2]
        .into_iter()
        .find(|f| tt_metal_cb_estimate(ctx, compute, *f, *f, 2) < free)
        .unwrap_or(1)
}

fn gcd(mut x: u64, mut y: u64) -> u64 {
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x
}

/// The output block a core computes at once, and the K block when fitting changed it.
#[derive(Debug, Clone, Copy)]
struct Block {
    h: u64,
    w: u64,
    k: Option<u64>,
}

/// tt-metal's `get_multi_dim_per_core_factor`: the per-core block `(pm, pn)` with K block
/// `ibw` if its CB estimate fits the free L1, else the largest divisor block (the most
/// square one among equal areas) that fits, trying smaller K blocks (divisors of `ibw`) only
/// when `adjust_k`; one tile if nothing fits.
///
/// The estimate is tt-metal's, not our CB formula: it counts the partials CB apart from the
/// output CB and takes in0's tile size for the output. The free L1 stands in for what
/// tt-metal's allocator reports at run time (the L1 above the reserved base, below the
/// lowest live buffer): the query's `l1_in_use` is what is live there.
fn fit_out_block(
    ctx: &Ctx<'_>,
    (pm, pn, ibw): (u64, u64, u64),
    adjust_k: bool,
    compute: Option<&DeviceComputeKernelConfig>,
) -> Block {
    let free = free_l1(ctx);
    let estimate = |m: u64, n: u64, k: u64| tt_metal_cb_estimate(ctx, compute, m, n, k);
    if estimate(pm, pn, ibw) < free {
        return Block { h: pm, w: pn, k: None };
    }
    // Keyed by area; among equal areas the block closest to a square wins (the later one on
    // a tie, as tt-metal's map overwrites).
    let mut by_area: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    // The aspect ratio hi/lo of a block, compared by cross-multiplying.
    let aspect = |(x, y): (u64, u64)| (x.max(y), x.min(y).max(1));
    for m in block_factors(pm) {
        for n in block_factors(pn) {
            let (hi, lo) = aspect((m, n));
            let area = m.saturating_mul(n);
            let keep_existing = by_area.get(&area).is_some_and(|e| {
                let (e_hi, e_lo) = aspect(*e);
                e_hi.saturating_mul(lo) < hi.saturating_mul(e_lo)
            });
            if !keep_existing {
                by_area.insert(area, (m, n));
            }
        }
    }
    let min_k = if adjust_k { 1 } else { ibw };
    for k in (min_k..=ibw).rev().filter(|k| ibw.is_multiple_of(*k)) {
        for (m, n) in by_area.values().rev() {
            if estimate(*m, *n, k) < free {
                return Block { h: *m, w: *n, k: (k != ibw).then_some(k) };
            }
        }
    }
    Block { h: 1, w: 1, k: (ibw != 1).then_some(1) }
}

/// The L1 tt-metal's config picker sees free: above the reserved base, below the lowest live
/// buffer (the query's `l1_in_use` stands in for what is live there at run time).
fn free_l1(ctx: &Ctx<'_>) -> u64 {
    ctx.target
        .l1_size()
        .saturating_sub(ctx.target.l1_unreserved_base())
        .saturating_sub(ctx.q.l1_in_use)
}

/// tt-metal's own CB estimate for a block `m x n` with K block `k` (`get_estimated_size_of_cbs`),
/// which is not its factories' allocation: it always double-buffers the inputs, counts the
/// partials apart from the output, takes in0's tile size for the output and sizes the
/// partials at least bf16 (f32 with fp32 accumulation).
fn tt_metal_cb_estimate(
    ctx: &Ctx<'_>,
    compute: Option<&DeviceComputeKernelConfig>,
    m: u64,
    n: u64,
    k: u64,
) -> u64 {
    let (tb_a, tb_b) = (ctx.in_tb(0), ctx.in_tb(1));
    let tb_interm = if Accumulation::of(compute, ctx.q.output_dtype).fp32_dest {
        DataType::F32.tile_bytes()
    } else {
        ctx.out_tb().max(DataType::BF16.tile_bytes())
    };
    let tb_bias = if ctx.q.inputs.len() > 2 { ctx.in_tb(2) } else { 0 };
    let mn = m.saturating_mul(n);
    [
        m.saturating_mul(k).saturating_mul(2 * tb_a),
        n.saturating_mul(k).saturating_mul(2 * tb_b),
        mn.saturating_mul(tb_a),
        mn.saturating_mul(tb_interm),
        // Like the factories, the estimate sizes the bias CB by the block width.
        n.saturating_mul(tb_bias),
    ]
    .into_iter()
    .fold(0, u64::saturating_add)
}

/// The block sizes tt-metal tries for a per-core extent `x`: `x` itself, one tile, then the
/// divisors from `x / 2` down to 2.
fn block_factors(x: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut c: u64 = 2;
    while c.saturating_mul(c) <= x {
        if x.is_multiple_of(c) {
            small.push(c);
            if c != x / c {
                large.push(x / c);
            }
        }
        c += 1;
    }
    // Divisors below sqrt(x) ascend in `small` and their partners descend in `large`.
    let mut f = vec![x, 1];
    f.extend(large.into_iter().filter(|d| *d < x));
    f.extend(small.into_iter().rev());
    f
}

/// The largest-area subblock that divides the per-core block and fits the DST budget.
fn best_subblock(pm: u64, pn: u64, max_sub: u64) -> (u64, u64) {
    let mut best = (1, 1);
    for h in 1..=pm.min(max_sub) {
        for w in 1..=pn.min(max_sub) {
            if h * w <= max_sub
                && pm.is_multiple_of(h)
                && pn.is_multiple_of(w)
                && h * w > best.0 * best.1
            {
                best = (h, w);
            }
        }
    }
    best
}

/// The two kernel settings that decide the partials CB's format.
#[derive(Debug, Clone, Copy)]
struct Accumulation {
    fp32_dest: bool,
    packer_l1: bool,
}

impl Accumulation {
    /// With no compute config, ttnn's matmul defaults to fp32 accumulation for an f32 output
    /// and to packer L1 accumulation otherwise. A given config is taken as is, its unset
    /// fields off (tt-mlir builds a fresh tt-metal config and sets only the present fields).
    fn of(compute: Option<&DeviceComputeKernelConfig>, out: DataType) -> Accumulation {
        match compute {
            Some(c) => Accumulation {
                fp32_dest: c.fp32_dest_acc_en == Some(true),
                packer_l1: c.packer_l1_acc == Some(true),
            },
            None => {
                Accumulation { fp32_dest: out == DataType::F32, packer_l1: out != DataType::F32 }
            }
        }
    }

    /// The DST tiles a subblock may use: the given config's count, or without one the count
    /// of the config tt-metal makes (fp32 accumulation as `of` decides, nothing else set).
    fn dst_tiles(self, compute: Option<&DeviceComputeKernelConfig>) -> u64 {
        let made = DeviceComputeKernelConfig {
            fp32_dest_acc_en: Some(self.fp32_dest),
            ..DeviceComputeKernelConfig::default()
        };
        compute.unwrap_or(&made).max_subblock_tiles().max(1)
    }

    /// The partials (interm0) format: f32 with fp32 accumulation, else bf16 when the packer
    /// accumulates in L1, else the output's own format.
    fn interm(self, packer_on: bool, out: DataType) -> DataType {
        if self.fp32_dest {
            DataType::F32
        } else if self.packer_l1 && packer_on {
            DataType::BF16
        } else {
            out
        }
    }
}

/// The program tt-metal runs: a program config, or the plain multi-core program it falls back
/// to when no reuse or multicast blocking fits (`MatmulMultiCoreProgramConfig`).
#[derive(Debug, Clone)]
enum Program {
    Config(MatmulProgramConfig),
    MultiCore,
}

/// Per-core CB bytes of the program tt-metal's factory builds for `prog`, CB by CB.
///
/// Shared by the reuse and multicast factories:
/// * in0 (c_0) and in1 (c_1) hold one K block of the output block a core computes at once
///   (`out_block_h x in0_block_w`, `in0_block_w x out_block_w`), doubled for the multicast
///   programs only when the core loops over more than one K block (or batch);
/// * the output CB (c_4) holds the output block, or is bound to the output's shard (no L1 of
///   its own) when the output is sharded;
/// * the partials CB (c_5) overlays the output CB unless their formats differ or a sharded
///   output is computed in several row blocks, in which case it is its own output block;
/// * a CB bound to a sharded input's buffer (c_2, or c_0 when read in place) takes no L1.
fn cb_bytes(
    ctx: &Ctx<'_>,
    prog: &Program,
    d: &Dims,
    a: &TtnnLayout,
    out: &TtnnLayout,
    compute: Option<&DeviceComputeKernelConfig>,
) -> u64 {
    let (tb_a, tb_b, tb_out) = (ctx.in_tb(0), ctx.in_tb(1), ctx.out_tb());
    let cfg = match prog {
        // One tile-at-a-time program: two pages each for in0, in1 and the output, no bias CB
        // (ttnn adds the bias as a separate op for this program).
        Program::MultiCore => return 2 * (tb_a + tb_b + tb_out),
        Program::Config(c) => c,
    };
    let (pm, pn) = cfg.per_core();
    let ibw = cfg.in0_block_w().max(1);
    let num_blocks = d.kt / ibw;
    let has_bias = ctx.q.inputs.len() > 2;
    let tb_bias = if has_bias { ctx.in_tb(2) } else { 0 };
    let out_dt = ctx.q.output_dtype;
    let acc = Accumulation::of(compute, out_dt);
    let a_sharded = a.is_l1_sharded();
    let out_sharded = out.is_l1_sharded();

    if let MatmulProgramConfig::MultiCoreReuse { .. } = cfg {
        // The reuse program always double-buffers its inputs, reads a sharded in0 in place,
        // and holds one per-core output block; the packer accumulates in L1 only past two K
        // blocks. It allocates no bias CB.
        let in0 = if a_sharded { 0 } else { 2 * pm.min(d.mt.max(1)) * ibw * tb_a };
        let in1 = 2 * pn * ibw * tb_b;
        let interm_dt = acc.interm(num_blocks > 2, out_dt);
        let out_cb = if out_sharded { 0 } else { pm * pn * tb_out };
        let interm = if interm_dt == out_dt { 0 } else { pm * pn * interm_dt.tile_bytes() };
        return in0.saturating_add(in1).saturating_add(out_cb).saturating_add(interm);
    }

    let (bh, bw, fuse_batch) = match cfg {
        MatmulProgramConfig::MultiCast2D { out_block_h, out_block_w, fuse_batch, .. }
        | MatmulProgramConfig::MultiCast1D { out_block_h, out_block_w, fuse_batch, .. } => {
            (*out_block_h, *out_block_w, *fuse_batch)
        }
        _ => (pm, pn, true),
    };
    let batch = if fuse_batch { 1 } else { d.batch_a.max(1) };
    let depth = if batch.saturating_mul(num_blocks) > 1 { 2 } else { 1 };
    let mcast_in0 = matches!(cfg, MatmulProgramConfig::MultiCast1D { mcast_in0: true, .. });
    let mcast_in1 = matches!(cfg, MatmulProgramConfig::MultiCast1D { mcast_in0: false, .. });
    let a_ml = a.memory_layout.filter(|_| a_sharded);
    let in0 = match a_ml {
        // 2D multicast binds c_0 to a height-sharded in0's buffer.
        Some(TensorMemoryLayout::HeightSharded) if !mcast_in0 && !mcast_in1 => 0,
        // mcast_in1 reads a sharded in0 in place when one K block covers the shard; otherwise
        // it copies the core's whole in0 rows (per_core_m x Kt, every batch) into c_0.
        Some(_) if mcast_in1 => {
            let (_, sw) = a.shard_tiles();
            if sw / ibw > 1 { pm * d.kt * batch * tb_a } else { 0 }
        }
        _ => depth * bh * ibw * tb_a,
    };
    let in1 = depth * bw * ibw * tb_b;
    // The 1D mcast_in0 program turns packer L1 accumulation on from two K blocks; the 2D and
    // mcast_in1 programs from three, or two with a fused bias.
    let packer_on =
        if mcast_in0 { num_blocks > 1 } else { num_blocks > 2 || (has_bias && num_blocks > 1) };
    let interm_dt = acc.interm(packer_on, out_dt);
    let split_rows = out_sharded && pm != bh;
    let out_cb = if out_sharded { 0 } else { bh * bw * tb_out };
    let interm =
        if interm_dt != out_dt || split_rows { bh * bw * interm_dt.tile_bytes() } else { 0 };
    let bias = if has_bias { bw * tb_bias } else { 0 };
    // The block-sharded (2D) and sharded mcast_in0 readers keep a 64-byte scratch CB (c_6).
    let scratch = match a_ml {
        Some(TensorMemoryLayout::BlockSharded) if !mcast_in0 && !mcast_in1 => 64,
        Some(_) if mcast_in0 => 64,
        _ => 0,
    };
    [in0, in1, out_cb, interm, bias, scratch].into_iter().fold(0, u64::saturating_add)
}
