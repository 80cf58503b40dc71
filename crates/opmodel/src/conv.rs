//! Convolutions, pooling and upsample: the sliding-window ops that shard activations by pixel
//! rows and build a halo (the input rows each core needs, padding included).
//!
//! Conv2d picks its own sharding when the hint is null: the memory layout from the tensor's
//! aspect, and for height sharding the largest core count that splits the output pixel tiles
//! evenly (12544 px = 392 tiles go on 56 cores, 7 tiles each, not on 64).

use ttnn_types::{
    Conv2dConfig, DataType, DeviceComputeKernelConfig, Grid, PageLayout, TILE, TensorMemoryLayout,
    collapse_2d, div_ceil,
};

use crate::{
    ConvAttrs, OpConfig, OpError, OutputHint, PoolAttrs, PoolOp,
    util::{
        Ctx, Estimate, LayoutExt, NullPolicy, even_split, invalid, largest_divisor_at_most,
        shape_text, sharded, unsupported,
    },
};

/// How one sliding-window op spreads over cores.
struct Parallel {
    ml: TensorMemoryLayout,
    grid: Grid,
    /// Cores splitting the pixel rows, and cores splitting the channels.
    px_cores: u64,
    ch_cores: u64,
}

impl Parallel {
    fn new(ml: TensorMemoryLayout, grid: Grid) -> Parallel {
        let (px_cores, ch_cores) = match ml {
            TensorMemoryLayout::WidthSharded => (1, grid.volume()),
            TensorMemoryLayout::BlockSharded => (grid.rows, grid.cols),
            _ => (grid.volume(), 1),
        };
        Parallel { ml, grid, px_cores: px_cores.max(1), ch_cores: ch_cores.max(1) }
    }
}

/// tt-metal's shard-layout choice for a conv it shards itself: height sharding while the
/// channels are narrow and there are enough pixel rows, width sharding when there are too few
/// pixel rows for the grid, block sharding in between.
fn auto_memory_layout(px_tiles: u64, ch_tiles: u64, worker: Grid) -> TensorMemoryLayout {
    if ch_tiles <= 8 && px_tiles >= worker.rows {
        TensorMemoryLayout::HeightSharded
    } else if px_tiles < worker.rows {
        TensorMemoryLayout::WidthSharded
    } else {
        TensorMemoryLayout::BlockSharded
    }
}

fn auto_grid(ml: TensorMemoryLayout, px_tiles: u64, ch_tiles: u64, worker: Grid) -> Grid {
    match ml {
        TensorMemoryLayout::WidthSharded => Grid::new(1, even_split(ch_tiles, worker.volume())),
        TensorMemoryLayout::BlockSharded => {
            Grid::new(even_split(px_tiles, worker.rows), even_split(ch_tiles, worker.cols))
        }
        _ => Grid::new(even_split(px_tiles, worker.volume()), 1),
    }
}

/// Chooses memory layout and grid from (in order) an explicit sharded hint, the conv config,
/// a sharded input, and the auto heuristic.
fn parallel(
    ctx: &Ctx<'_>,
    cfg_ml: Option<TensorMemoryLayout>,
    px_tiles: u64,
    ch_tiles: u64,
) -> Result<Parallel, OpError> {
    let input = ctx.input(0)?;
    let hint = match &ctx.q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) if l.is_sharded() => Some(l),
        _ => None,
    };
    let hint_ml = hint.and_then(|l| l.memory_layout);
    let input_ml = input.layout.memory_layout.filter(|_| input.layout.is_l1_sharded());
    if let (Some(c), Some(h)) = (cfg_ml, hint_ml)
        && c != h
    {
        return Err(invalid(format!(
            "{}: conv2d_config shard_layout {c} disagrees with the {h} output",
            ctx.name()
        )));
    }
    // The config's shard layout decides the output as much as a hint does, so a null-hint
    // probe must refuse the same pairs the exact query refuses; otherwise the solver would
    // accept a reshard target that the final validation rejects.
    if let (Some(i), Some(h)) = (input_ml, hint_ml.or(cfg_ml))
        && i != h
    {
        return Err(unsupported(format!(
            "{}: input and output must use the same sharding type, not {i} and {h}",
            ctx.name()
        )));
    }
    let worker = ctx.worker();
    let ml = hint_ml
        .or(cfg_ml)
        .or(input_ml)
        .unwrap_or_else(|| auto_memory_layout(px_tiles, ch_tiles, worker));
    let grid = match (&ctx.q.output, hint) {
        (OutputHint::Layout(_), Some(l)) => l.grid2d(),
        _ if input_ml == Some(ml) => input.layout.grid2d(),
        _ => auto_grid(ml, px_tiles, ch_tiles, worker),
    };
    Ok(Parallel::new(ml, grid))
}

/// Per-core bytes of the halo buffer: the padded input rows one core's output rows read.
#[expect(clippy::too_many_arguments, reason = "plain geometry, named at the call sites")]
fn halo_bytes(
    out_px_core: u64,
    out_w: u64,
    a: &ConvAttrs,
    transposed: bool,
    ch_core: u64,
    elem: u64,
    total_rows: u64,
    one_by_one: bool,
) -> u64 {
    if one_by_one || out_w == 0 {
        return 0;
    }
    // A shard that does not start at a row boundary straddles one more output row.
    let out_rows = div_ceil(out_px_core, out_w) + u64::from(!out_px_core.is_multiple_of(out_w));
    let (kh, kw) = (a.kernel[0].max(1), a.kernel[1].max(1));
    let (sh, sw) = (a.stride[0].max(1), a.stride[1].max(1));
    let dh = a.dilation[0].max(1);
    if !transposed && out_px_core < out_w {
        // A shard shorter than an output row reads a contiguous run of padded input sticks:
        // its own width (plus one row wrap) and the kernel's extra rows, not whole rows.
        let width = a.input_w + a.padding[2] + a.padding[3];
        let dw = a.dilation[1].max(1);
        let sticks = (out_px_core - 1).saturating_mul(sw)
            + (dh * (kh - 1)).saturating_mul(width)
            + dw * (kw - 1)
            + 1
            + a.padding[2]
            + a.padding[3];
        return sticks.saturating_mul(ch_core).saturating_mul(elem);
    }
    let (rows, width) = if transposed {
        // A transposed conv reads a stride-dilated input with stride 1.
        let width = a.input_w.saturating_sub(1).saturating_mul(sw) + 1 + 2 * (kw - 1);
        (out_rows + dh * (kh - 1), width)
    } else {
        let rows = (out_rows - 1).saturating_mul(sh) + dh * (kh - 1) + 1;
        (rows, a.input_w + a.padding[2] + a.padding[3])
    };
    rows.min(total_rows.max(1)).saturating_mul(width).saturating_mul(ch_core).saturating_mul(elem)
}

/// Bounds on conv/pool attributes (from IR, so untrusted) that keep the formulas exact.
fn check_geometry(ctx: &Ctx<'_>, a: &ConvAttrs) -> Result<(), OpError> {
    let small = a
        .kernel
        .iter()
        .chain(&a.stride)
        .chain(&a.dilation)
        .chain(&a.padding)
        .chain(&a.output_padding);
    let ok = small.into_iter().all(|v| *v <= 1 << 16)
        && [a.in_channels, a.out_channels, a.input_h, a.input_w].iter().all(|v| *v <= 1 << 24)
        && a.batch <= 1 << 16
        && a.groups <= 1 << 24;
    if ok {
        Ok(())
    } else {
        Err(invalid(format!("{}: convolution attributes are out of range", ctx.name())))
    }
}

fn round_up(v: u64, to: u64) -> u64 {
    div_ceil(v, to).saturating_mul(to)
}

pub(crate) fn conv2d(ctx: &Ctx<'_>, a: &ConvAttrs, transposed: bool) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let weight = ctx.input(1)?;
    if weight.layout.is_sharded() {
        return Err(unsupported(format!("{}: the weight operand may not be sharded", ctx.name())));
    }
    if [a.in_channels, a.out_channels, a.input_h, a.input_w].contains(&0) {
        return Err(invalid(format!(
            "{}: in/out channels and input height/width attributes must be positive",
            ctx.name()
        )));
    }
    check_geometry(ctx, a)?;
    let (ho, wo) = a.output_hw(transposed);
    let out_px = a.batch.saturating_mul(ho).saturating_mul(wo);
    let in_px = a.batch.saturating_mul(a.input_h).saturating_mul(a.input_w);
    let (in_h, in_c) = collapse_2d(&input.shape);
    let (out_h, out_c) = collapse_2d(&ctx.q.output_shape);
    if in_h != in_px || in_c != a.in_channels {
        return Err(invalid(format!(
            "{}: input {} is not [1, 1, {in_px}, {}] for batch {} x {}x{}",
            ctx.name(),
            shape_text(&input.shape),
            a.in_channels,
            a.batch,
            a.input_h,
            a.input_w
        )));
    }
    if out_h != out_px || out_c != a.out_channels {
        return Err(invalid(format!(
            "{}: output {} is not [1, 1, {out_px}, {}] ({ho}x{wo} output pixels)",
            ctx.name(),
            shape_text(&ctx.q.output_shape),
            a.out_channels
        )));
    }
    let (cfg, compute) = match &ctx.q.config {
        OpConfig::Conv2d { conv, compute } => ((**conv).clone(), *compute),
        _ => (Conv2dConfig::default(), None),
    };
    let px_tiles = div_ceil(out_px, TILE);
    let (cin_t, cout_t) = (div_ceil(a.in_channels, TILE), div_ceil(a.out_channels, TILE));
    let par = parallel(ctx, cfg.shard_layout, px_tiles, cin_t.max(cout_t))?;
    if par.ch_cores > cin_t.min(cout_t).max(1) && par.ml != TensorMemoryLayout::HeightSharded {
        return Err(invalid(format!(
            "{}: {} channel tiles cannot be split over {} cores",
            ctx.name(),
            cin_t.min(cout_t),
            par.ch_cores
        )));
    }
    let page = cfg.output_layout.unwrap_or(PageLayout::Tile);
    let worker = ctx.worker();
    let own = sharded(&ctx.q.output_shape, ctx.q.output_dtype, page, par.ml, par.grid, worker)?;
    let out = match &ctx.q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) if !l.is_sharded() => ctx.output_like(l)?,
        _ => own.clone(),
    };

    let out_px_core_t = div_ceil(px_tiles, par.px_cores).max(1);
    let out_px_core = (out_px_core_t * TILE).min(out_px.max(1));
    let cin_core = round_up(div_ceil(a.in_channels, par.ch_cores), TILE);
    let cout_core_t = div_ceil(cout_t, par.ch_cores).max(1);
    let (kh, kw) = (a.kernel[0].max(1), a.kernel[1].max(1));
    let one_by_one = !transposed && a.kernel == [1, 1] && a.stride == [1, 1] && a.padding == [0; 4];

    let ah = match cfg.act_block_h_override {
        Some(v) if v > 0 => {
            if !v.is_multiple_of(TILE) {
                return Err(invalid(format!(
                    "{}: act_block_h_override = {v} is not a multiple of {TILE}",
                    ctx.name()
                )));
            }
            largest_divisor_at_most(out_px_core_t, v / TILE)
        }
        _ => out_px_core_t,
    };
    let k_tiles = div_ceil(cin_core.saturating_mul(kh).saturating_mul(kw), TILE).max(1);
    let mut aw = if one_by_one { k_tiles } else { div_ceil(cin_core * kw, TILE).max(1) };
    if let Some(div) = cfg.act_block_w_div.filter(|d| *d > 1) {
        if !aw.is_multiple_of(div) {
            return Err(invalid(format!(
                "{}: act_block_w_div = {div} does not divide the {aw}-tile activation block",
                ctx.name()
            )));
        }
        aw /= div;
    }
    let tb_act = ctx.in_tb(0);
    let tb_w = cfg.weights_dtype.map_or_else(|| ctx.in_tb(1), DataType::tile_bytes);
    let fp32_acc =
        compute.is_some_and(|c: DeviceComputeKernelConfig| c.fp32_dest_acc_en == Some(true));
    let tb_interm = if fp32_acc { DataType::F32.tile_bytes() } else { ctx.out_tb() };
    let dbl = |flag: Option<bool>| if flag == Some(true) { 2 } else { 1 };
    let act_cb = ah * aw * tb_act * dbl(cfg.enable_act_double_buffer);
    // The row-major im2col staging buffer the activation is tilized from.
    let act_rm_cb = if one_by_one { 0 } else { ah * aw * tb_act };
    // Weights stream one kernel row (an activation block's K) at a time, double buffered;
    // a 1x1 conv holds its whole K in that one block.
    let weights_cb = if one_by_one { k_tiles } else { 2 * aw }
        * cout_core_t
        * tb_w
        * dbl(cfg.enable_weights_double_buffer);
    let interm_cb = ah * cout_core_t * tb_interm;
    let bias_cb = if ctx.q.inputs.len() > 2 { cout_core_t * ctx.out_tb() } else { 0 };
    let reader_indices = out_px_core * 4;
    let cb = [act_cb, act_rm_cb, weights_cb, interm_cb, bias_cb, reader_indices]
        .iter()
        .fold(0u64, |acc, v| acc.saturating_add(*v));

    let elem = ctx.in_dtype(0).elem_bytes();
    let input_ready = input.layout.is_l1_sharded()
        && input.layout.memory_layout == Some(par.ml)
        && input.layout.grid2d() == par.grid;
    let input_copy = if input_ready || one_by_one && input.layout.is_l1_sharded() {
        0
    } else {
        div_ceil(in_px, par.px_cores).saturating_mul(cin_core).saturating_mul(elem)
    };
    let total_rows = a.batch * (a.input_h + a.padding[0] + a.padding[1]);
    let halo = halo_bytes(out_px_core, wo, a, transposed, cin_core, elem, total_rows, one_by_one);
    let out_shard = own.l1_bytes_per_core();
    let final_out = if out.is_l1_sharded() { 0 } else { out.l1_bytes_per_core() };
    // Time-ordered phases: shard the input and build the halo; compute into the output shard;
    // move the shard to an interleaved output if one was asked for.
    let tensor = (input_copy + halo).max(halo + out_shard).max(out_shard + final_out);

    let mut est = Estimate::new(cb, out);
    est.tensor = tensor;
    let mut used = cfg;
    used.shard_layout = Some(par.ml);
    est.config = OpConfig::Conv2d { conv: Box::new(used), compute };
    Ok(est)
}

/// conv3d: interleaved row-major activations only; CBs from a conservative default blocking
/// (the whole kernel volume of input channels per block, four output-channel tiles).
pub(crate) fn conv3d(ctx: &Ctx<'_>, a: &ConvAttrs) -> Result<Estimate, OpError> {
    check_geometry(ctx, a)?;
    let input = ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::Dram)?;
    if input.layout.is_sharded() || out.is_sharded() {
        return Err(unsupported(format!("{} takes and produces interleaved tensors", ctx.name())));
    }
    let weight_shape = ctx.q.inputs.get(1).map(|w| w.shape.as_slice()).unwrap_or_default();
    // Weights are [kD*kH*kW*Cin, Cout] once prepared; fall back to the attributes.
    let k_elems = match weight_shape {
        [.., k, _] => *k,
        _ => a.in_channels * a.kernel[0].max(1) * a.kernel[1].max(1),
    };
    let kt = div_ceil(k_elems, TILE).max(1);
    let cout_block = div_ceil(a.out_channels, TILE).clamp(1, 4);
    let tb = ctx.in_tb(0);
    let cb = tb * (2 * kt + kt * cout_block + 2 * cout_block);
    Ok(Estimate::new(cb, out))
}

pub(crate) fn pool2d(ctx: &Ctx<'_>, op: PoolOp, p: &PoolAttrs) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let a = &p.conv;
    if op == PoolOp::GlobalAvgPool2d {
        let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
        if input.layout.is_sharded() || out.is_sharded() {
            return Err(unsupported("ttnn.global_avg_pool2d is modelled for interleaved tensors"));
        }
        let cb = 2 * ctx.in_tb(0) + 2 * DataType::BF16.tile_bytes() + 2 * ctx.out_tb();
        return Ok(Estimate::new(cb, out));
    }
    check_geometry(ctx, a)?;
    let channels = if a.in_channels > 0 { a.in_channels } else { collapse_2d(&input.shape).1 };
    let (ho, wo) = a.output_hw(false);
    let out_px = a.batch * ho * wo;
    let (out_h, _) = collapse_2d(&ctx.q.output_shape);
    if a.input_h == 0 || a.input_w == 0 || out_h != out_px {
        return Err(invalid(format!(
            "{}: output {} does not hold {out_px} pooled pixels ({ho}x{wo})",
            ctx.name(),
            shape_text(&ctx.q.output_shape)
        )));
    }
    let px_tiles = div_ceil(out_px, TILE);
    let ch_tiles = div_ceil(channels, TILE);
    let par = parallel(ctx, None, px_tiles, ch_tiles)?;
    let page = match &ctx.q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) => l.page_layout(),
        OutputHint::Null => input.layout.page_layout(),
    };
    let worker = ctx.worker();
    let own = sharded(&ctx.q.output_shape, ctx.q.output_dtype, page, par.ml, par.grid, worker)?;
    let out = match &ctx.q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) if !l.is_sharded() => ctx.output_like(l)?,
        _ => own.clone(),
    };
    let elem = ctx.in_dtype(0).elem_bytes();
    let ch_core = round_up(div_ceil(channels, par.ch_cores), 16);
    let window = a.kernel[0].max(1) * a.kernel[1].max(1);
    let out_px_core = (div_ceil(px_tiles, par.px_cores) * TILE).min(out_px.max(1));
    let in_cb = 2 * window * ch_core * elem;
    let scalar_cb = DataType::BF16.tile_bytes();
    let out_cb = if out.is_l1_sharded() { 0 } else { 2 * ch_core * elem };
    let indices_cb = if op == PoolOp::MaxPool2dWithIndices { 2 * ch_core * 4 } else { 0 };
    let cb = in_cb + scalar_cb + out_cb + indices_cb + out_px_core * 4;
    let in_px = a.batch * a.input_h * a.input_w;
    let input_copy = if input.layout.is_l1_sharded() {
        0
    } else {
        div_ceil(in_px, par.px_cores) * ch_core * elem
    };
    let total_rows = a.batch * (a.input_h + a.padding[0] + a.padding[1]);
    let halo = halo_bytes(out_px_core, wo, a, false, ch_core, elem, total_rows, false);
    let out_shard = own.l1_bytes_per_core();
    let final_out = if out.is_l1_sharded() { 0 } else { out.l1_bytes_per_core() };
    let mut est = Estimate::new(cb, out);
    est.tensor = (input_copy + halo).max(halo + out_shard).max(out_shard + final_out);
    Ok(est)
}

/// Nearest upsample works on row-major sticks of channels; a sharded input keeps its memory
/// layout and grid, and its CBs alias the shards.
pub(crate) fn upsample(ctx: &Ctx<'_>, scale: [u64; 2]) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if scale.contains(&0) {
        return Err(invalid("ttnn.upsample scale factors must be positive"));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if input.layout.is_sharded() != out.is_sharded() && out.is_sharded() {
        return Err(unsupported("ttnn.upsample shards its output only like a sharded input"));
    }
    let stick =
        crate::util::row_page_bytes(&input.shape, ctx.in_dtype(0), ctx.target.l1_alignment());
    let cb = if input.layout.is_l1_sharded() && out.is_l1_sharded() {
        // Only the per-stick reader configuration lives outside the shards.
        let (rows, _) = collapse_2d(&input.shape);
        div_ceil(rows, input.layout.num_cores().max(1)) * 4
    } else {
        4 * stick
    };
    Ok(Estimate::new(cb, out))
}
