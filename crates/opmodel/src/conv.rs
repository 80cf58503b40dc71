//! Convolutions, pooling and upsample: the sliding-window ops that shard activations by pixel
//! rows and build a halo (the input rows each core needs, padding included).
//!
//! Conv2d picks its own sharding when neither a sharded hint, its config nor a sharded input
//! does, as tt-metal's `determine_conv_config_for_auto_shard` does: it runs the conv height-,
//! block- and width-sharded and keeps the one with the least L1 per core. Each candidate's grid
//! is tt-metal's `determine_parallel_config`: the most cores (up to the grid) whose padding of
//! the output pixel tiles stays under one core's share (12544 px = 392 tiles go on 56 cores, 7
//! tiles each, not on 64), and for block sharding as many channel cores as split both the input
//! and the output channel tiles.

use ttnn_types::{
    Conv2dConfig, Conv2dSliceConfig, Conv2dSliceType, DataType, DeviceComputeKernelConfig, Grid,
    PageLayout, TILE, TensorMemoryLayout, TtnnLayout, collapse_2d, div_ceil,
};

use crate::{
    ConvAttrs, OpConfig, OpError, OpQuery, OutputHint, PoolAttrs, PoolOp, TensorDesc,
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
    /// Neither a hint, the config nor a sharded input chose the sharding: the op shards
    /// itself (tt-metal's auto-sharding).
    auto: bool,
}

impl Parallel {
    fn new(ml: TensorMemoryLayout, grid: Grid, auto: bool) -> Parallel {
        let (px_cores, ch_cores) = match ml {
            TensorMemoryLayout::WidthSharded => (1, grid.volume()),
            TensorMemoryLayout::BlockSharded => (grid.rows, grid.cols),
            _ => (grid.volume(), 1),
        };
        Parallel { ml, grid, px_cores: px_cores.max(1), ch_cores: ch_cores.max(1), auto }
    }
}

/// The shard-layout choice for a pool that shards itself, from the tensor's aspect (tt-metal's
/// older conv rule, `select_shard_spec`): height sharding while the channels are narrow and
/// there are enough pixel rows, width sharding when there are too few pixel rows for the grid,
/// block sharding in between. Convs compare their L1 use instead (`conv2d_auto`).
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

/// The sharding that (in order) a sharded hint, the conv config or a sharded input fixes: its
/// memory layout, and its grid when an exact hint or the input fixes that too. `None` when
/// none of them does and the op shards itself.
fn given_sharding(
    ctx: &Ctx<'_>,
    cfg_ml: Option<TensorMemoryLayout>,
) -> Result<Option<(TensorMemoryLayout, Option<Grid>)>, OpError> {
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
    let Some(ml) = hint_ml.or(cfg_ml).or(input_ml) else { return Ok(None) };
    let grid = match (&ctx.q.output, hint) {
        (OutputHint::Layout(_), Some(l)) => Some(l.grid2d()),
        _ if input_ml == Some(ml) => Some(input.layout.grid2d()),
        _ => None,
    };
    Ok(Some((ml, grid)))
}

/// What a conv's own grid choice reads besides the pixel tiles.
struct ConvSplit {
    cin_tiles: u64,
    cout_tiles: u64,
    /// A 1x1 stride-1 unpadded conv runs as a matmul, and tt-metal then pads no channels.
    matmul: bool,
    /// Pixel tiles per core must be a multiple of this (`act_block_h_override` in tiles).
    block_h_tiles: u64,
}

/// tt-metal's `determine_parallel_config` for a conv it shards itself. Pixel rows go to the
/// most cores, up to the grid (its rows for block sharding), that pad the pixel tiles by less
/// than one core's share. Channels go, for block sharding, to the most grid columns that
/// split both the input and the output channel tiles (with the same padding allowance
/// unless the conv is a matmul), so no core is left without a channel tile; for width
/// sharding, to the most cores that split the input channel tiles.
fn conv_auto_grid(ml: TensorMemoryLayout, px_tiles: u64, c: &ConvSplit, worker: Grid) -> Grid {
    let px = px_tiles.max(1);
    let (cin, cout) = (c.cin_tiles.max(1), c.cout_tiles.max(1));
    match ml {
        TensorMemoryLayout::WidthSharded => {
            let n = if c.matmul {
                largest_divisor_at_most(cin, worker.volume())
            } else {
                padded_split(cin, worker.volume(), 1)
            };
            Grid::new(1, n)
        }
        TensorMemoryLayout::BlockSharded => {
            let rows = padded_split(px, worker.rows, c.block_h_tiles);
            let cols = if c.matmul {
                (1..=worker.cols.min(cin).min(cout))
                    .rev()
                    .find(|d| cin.is_multiple_of(*d) && cout.is_multiple_of(*d))
                    .unwrap_or(1)
            } else {
                (1..=worker.cols.max(1))
                    .rev()
                    .find(|d| pads_less_than_a_share(cin, *d) && pads_less_than_a_share(cout, *d))
                    .unwrap_or(1)
            };
            Grid::new(rows, cols)
        }
        _ => Grid::new(padded_split(px, worker.volume(), c.block_h_tiles), 1),
    }
}

/// The most cores, at most `max`, over which `units` (in blocks of `mult`) pad by less than one
/// core's share.
fn padded_split(units: u64, max: u64, mult: u64) -> u64 {
    let mult = mult.max(1);
    (1..=max.max(1)).rev().find(|d| pads_less_than_a_share(units, d * mult)).unwrap_or(1).max(1)
}

/// Whether rounding `units` up to a multiple of `cores` adds less than one core's share.
fn pads_less_than_a_share(units: u64, cores: u64) -> bool {
    let padded = round_up(units, cores);
    padded - units < padded / cores
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

/// What tt-metal (`get_input_channels_alignment`) pads a conv's per-core input channels to. A
/// height-sharded conv that is not a matmul gathers a row-major input stick by stick through
/// its halo, so a stick needs only the 16-byte L1 alignment: 8 bf16 channels, or what a
/// sharded input's shard width is a multiple of. Everything else tilizes its input channels
/// and pads them to a tile. Three RGB channels thus take 8, not 32.
fn input_channel_alignment(
    input: &ttnn_types::TtnnLayout,
    ml: TensorMemoryLayout,
    matmul: bool,
) -> u64 {
    if matmul
        || ml != TensorMemoryLayout::HeightSharded
        || input.page_layout() != PageLayout::RowMajor
    {
        return TILE;
    }
    if !input.is_l1_sharded() {
        return 8;
    }
    let width = input.memref_shape.last().copied().unwrap_or(0);
    [TILE, 16, 8].into_iter().find(|a| width > 0 && width.is_multiple_of(*a)).unwrap_or(TILE)
}

/// A conv's geometry and config, checked once and shared by every sharding it is tried with.
struct ConvPlan<'a> {
    a: &'a ConvAttrs,
    transposed: bool,
    cfg: Conv2dConfig,
    compute: Option<DeviceComputeKernelConfig>,
    out_px: u64,
    in_px: u64,
    /// Output width, the row length the halo is cut by.
    wo: u64,
    px_tiles: u64,
    split: ConvSplit,
    /// A depthwise conv over a 1D signal without bias, which tt-metal only height-shards.
    depthwise_1d: bool,
}

impl<'a> ConvPlan<'a> {
    fn new(ctx: &Ctx<'_>, a: &'a ConvAttrs, transposed: bool) -> Result<ConvPlan<'a>, OpError> {
        let input = ctx.input(0)?;
        let weight = ctx.input(1)?;
        if weight.layout.is_sharded() {
            return Err(unsupported(format!(
                "{}: the weight operand may not be sharded",
                ctx.name()
            )));
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
        let (cfg, compute) = conv_config(&ctx.q.config);
        let one_by_one =
            !transposed && a.kernel == [1, 1] && a.stride == [1, 1] && a.padding == [0; 4];
        let split = ConvSplit {
            cin_tiles: div_ceil(a.in_channels, TILE),
            cout_tiles: div_ceil(a.out_channels, TILE),
            matmul: one_by_one,
            block_h_tiles: cfg.act_block_h_override.map_or(1, |v| (v / TILE).max(1)),
        };
        // tt-metal lays a conv1d out as a one-pixel-wide image; ours is one pixel high. Either
        // way the kernel spans one pixel across the signal.
        let one_d = (a.input_h == 1 && a.kernel[0] <= 1) || (a.input_w == 1 && a.kernel[1] <= 1);
        let depthwise = a.groups == a.in_channels && a.groups == a.out_channels;
        let depthwise_1d = one_d && depthwise && ctx.q.inputs.len() <= 2;
        Ok(ConvPlan {
            a,
            transposed,
            cfg,
            compute,
            out_px,
            in_px,
            wo,
            px_tiles: div_ceil(out_px, TILE),
            split,
            depthwise_1d,
        })
    }
}

/// The conv config and compute config a query carries, the defaults when it has none.
fn conv_config(config: &OpConfig) -> (Conv2dConfig, Option<DeviceComputeKernelConfig>) {
    match config {
        OpConfig::Conv2d { conv, compute, .. } => ((**conv).clone(), *compute),
        _ => (Conv2dConfig::default(), None),
    }
}

fn slice_config(config: &OpConfig) -> Option<Conv2dSliceConfig> {
    match config {
        OpConfig::Conv2d { slice, .. } => *slice,
        _ => None,
    }
}

pub(crate) fn conv2d(ctx: &Ctx<'_>, a: &ConvAttrs, transposed: bool) -> Result<Estimate, OpError> {
    match slice_config(&ctx.q.config) {
        Some(slice) if slice.slice_type.is_dram() => conv2d_dram(ctx, a, transposed, slice),
        _ => conv2d_l1(ctx, a, transposed),
    }
}

/// The whole conv at once in L1 (no slice config, or `l1_full`).
fn conv2d_l1(ctx: &Ctx<'_>, a: &ConvAttrs, transposed: bool) -> Result<Estimate, OpError> {
    let plan = ConvPlan::new(ctx, a, transposed)?;
    match given_sharding(ctx, plan.cfg.shard_layout)? {
        Some((ml, grid)) => {
            let grid = grid
                .unwrap_or_else(|| conv_auto_grid(ml, plan.px_tiles, &plan.split, ctx.worker()));
            conv2d_on(ctx, &plan, &Parallel::new(ml, grid, false))
        }
        None => conv2d_auto(ctx, &plan),
    }
}

/// tt-metal's `determine_conv_config_for_auto_shard`: the conv runs height-, block- and
/// width-sharded, each on its own `determine_parallel_config` grid, and the one needing the
/// least L1 per core (CBs plus tensors) wins, ties going to the earlier. Height sharding is
/// the default; block sharding competes only when its grid has more cores than one grid row
/// (a block grid one core wide does not slice the channels, and tt-metal's conv code would
/// reject it), width sharding only for a conv that does not run as a matmul, and a 1D
/// depthwise conv is always height-sharded. A candidate the model rejects (say, a grid its
/// channels cannot be split over) drops out; if all do, the height-sharded error stands.
fn conv2d_auto(ctx: &Ctx<'_>, plan: &ConvPlan<'_>) -> Result<Estimate, OpError> {
    let worker = ctx.worker();
    let grid = |ml| conv_auto_grid(ml, plan.px_tiles, &plan.split, worker);
    let run = |ml| conv2d_on(ctx, plan, &Parallel::new(ml, grid(ml), true));
    let mut best = run(TensorMemoryLayout::HeightSharded);
    if plan.depthwise_1d {
        return best;
    }
    if grid(TensorMemoryLayout::BlockSharded).volume() > worker.cols {
        best = smaller(best, run(TensorMemoryLayout::BlockSharded));
    }
    if !plan.split.matmul {
        best = smaller(best, run(TensorMemoryLayout::WidthSharded));
    }
    best
}

/// The candidate, if it is valid and needs strictly less L1 per core than the best so far.
fn smaller(
    best: Result<Estimate, OpError>,
    candidate: Result<Estimate, OpError>,
) -> Result<Estimate, OpError> {
    match (&best, &candidate) {
        (Err(_), Ok(_)) => candidate,
        (Ok(b), Ok(c)) if l1_peak(c) < l1_peak(b) => candidate,
        _ => best,
    }
}

/// The conv's estimate on one sharding.
fn conv2d_on(ctx: &Ctx<'_>, plan: &ConvPlan<'_>, par: &Parallel) -> Result<Estimate, OpError> {
    let ConvPlan { a, transposed, ref cfg, compute, out_px, in_px, wo, px_tiles, .. } = *plan;
    let input = ctx.input(0)?;
    let (cin_t, cout_t) = (plan.split.cin_tiles, plan.split.cout_tiles);
    let one_by_one = plan.split.matmul;
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
    let align = input_channel_alignment(&input.layout, par.ml, one_by_one);
    let cin_core = round_up(div_ceil(a.in_channels, par.ch_cores), align);
    let cout_core_t = div_ceil(cout_t, par.ch_cores).max(1);
    let (kh, kw) = (a.kernel[0].max(1), a.kernel[1].max(1));

    // tt-metal's auto-sharding fills an unset act_block_h_override with one tile of rows, to
    // be conservative with L1, and runs the conv with it.
    let block_h = match cfg.act_block_h_override {
        Some(v) if v > 0 => Some(v),
        _ if par.auto => Some(TILE),
        _ => None,
    };
    // For width sharding it likewise splits the activation block down to one channel tile
    // per kernel column, unless act_block_w_div is set.
    let block_w_div = match cfg.act_block_w_div {
        Some(d) if d > 1 => Some(d),
        _ if par.auto && par.ml == TensorMemoryLayout::WidthSharded => {
            Some(div_ceil(a.in_channels, par.ch_cores.saturating_mul(TILE)).max(1))
        }
        d => d,
    };
    let ah = match block_h {
        Some(v) => {
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
    if let Some(div) = block_w_div.filter(|d| *d > 1) {
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
    let mut used = cfg.clone();
    used.shard_layout = Some(par.ml);
    // Reported like the shard layout, so that the config, written back, reproduces the run.
    if par.auto {
        used.act_block_h_override = block_h;
        used.act_block_w_div = block_w_div;
    }
    est.config =
        OpConfig::Conv2d { conv: Box::new(used), compute, slice: slice_config(&ctx.q.config) };
    Ok(est)
}

/// A conv's L1 per core at its peak, the number the validity check compares.
fn l1_peak(e: &Estimate) -> u64 {
    e.peak.unwrap_or_else(|| e.cb.saturating_add(e.tensor))
}

/// tt-metal's `conv2d_DRAM`: input and output stay interleaved in DRAM, and the conv runs over
/// `num_slices` bands of output rows (`dram_height`) or columns (`dram_width`), each one a whole
/// conv in L1 over the input rows or columns its band reads (`Conv2dSliceAttr`). The L1 per core
/// is the largest band's, by the same formulas as the unsliced conv (`op_slicing.cpp ::
/// compute_L1_usage_for_slice_config`).
///
/// * Bands: the sliced output dim, in units of 32 for column bands of a tiled output (else 1),
///   goes `units / n` to each band, the first `units % n` bands one unit more; at most one band
///   per unit (`compute_max_num_slices`).
/// * A band reads input `[start s - pad, (end - 1) s - pad + d (k - 1) + 1)`, clamped to the
///   tensor, with the conv's own padding only at the tensor's edges.
///   With a tiled output, a band whose output width is not a multiple of 32 is padded on the
///   right up to one (`get_input_slice_and_padding`), so every band of a 14-wide output is
///   computed 32 wide.
/// * A band's input arrives from DRAM through `padded_slice` as row-major sticks, so its
///   channels pad to 8 as a row-major input's do (`get_input_channels_alignment`'s `sliced_op`);
///   one band is the whole conv run on its input as it is (`run_sliced_op`).
/// * `num_slices = 0` asks for tt-metal's choice (`determine_slice_config`): the fewest bands
///   whose largest fits the free L1 (`usable - l1_in_use`). When none fits, the count that needs
///   the least is reported, and the budget check calls it out of memory. Counts above
///   [`MAX_SLICES`] are not evaluated.
/// * A 1x1 conv that runs as a matmul is never sliced (`conv2d_DRAM` hands it to the L1 path).
///
/// The reported config is the given one with the slice count used: the shard layout and block
/// sizes tt-metal picks are per band, so they are not written back.
fn conv2d_dram(
    ctx: &Ctx<'_>,
    a: &ConvAttrs,
    transposed: bool,
    slice: Conv2dSliceConfig,
) -> Result<Estimate, OpError> {
    if transposed {
        return Err(unsupported(format!(
            "{}: DRAM slicing is modelled for conv2d only, not {}",
            ctx.name(),
            slice.slice_type
        )));
    }
    // The slices are built from the attributes alone; the operands must agree with them.
    ConvPlan::new(ctx, a, false)?;
    let input = ctx.input(0)?;
    if !input.layout.is_dram_interleaved() {
        return Err(unsupported(format!(
            "{}: a {} sliced conv reads its input from DRAM interleaved, not {}",
            ctx.name(),
            slice.slice_type,
            input.layout.describe()
        )));
    }
    let (cfg, compute) = conv_config(&ctx.q.config);
    let out = match &ctx.q.output {
        OutputHint::Null => ctx.dram_output(cfg.output_layout.unwrap_or(PageLayout::Tile)),
        OutputHint::Partial(l) => ctx.resolve_partial(l)?,
        OutputHint::Layout(l) => ctx.output_like(l)?,
    };
    if !out.is_dram_interleaved() {
        return Err(unsupported(format!(
            "{}: a {} sliced conv writes its output to DRAM interleaved, not {}",
            ctx.name(),
            slice.slice_type,
            out.describe()
        )));
    }
    let (ho, wo) = a.output_hw(false);
    let tile_out = out.page_layout() == PageLayout::Tile;
    let (dim, unit) = match slice.slice_type {
        Conv2dSliceType::DramWidth if tile_out => (wo, TILE),
        Conv2dSliceType::DramWidth => (wo, 1),
        _ => (ho, 1),
    };
    let matmul = a.kernel == [1, 1] && a.stride == [1, 1] && a.padding == [0; 4];
    let max = if matmul { 1 } else { div_ceil(dim, unit).max(1) };
    let whole = OpQuery { config: with_slice(&ctx.q.config, None), ..ctx.q.clone() };
    let run = |n: u64| -> Result<Estimate, OpError> {
        if n == 1 {
            return conv2d_l1(&Ctx { target: ctx.target, q: &whole }, a, false);
        }
        let mut worst: Option<Estimate> = None;
        for band in bands(a, slice.slice_type, n, unit, tile_out) {
            let est = conv2d_band(ctx, &band, &cfg, compute)?;
            if worst.as_ref().is_none_or(|w| l1_peak(&est) > l1_peak(w)) {
                worst = Some(est);
            }
        }
        worst.ok_or_else(|| invalid(format!("{}: no slice of the output has work", ctx.name())))
    };
    let (n, mut est) = if slice.num_slices > 0 {
        if slice.num_slices > max {
            return Err(invalid(format!(
                "{}: {} slices exceed the {max} a {dim}-wide sliced output dimension allows",
                ctx.name(),
                slice.num_slices
            )));
        }
        if slice.num_slices > MAX_SLICES {
            return Err(unsupported(format!(
                "{}: {} slices are more than the {MAX_SLICES} the model evaluates",
                ctx.name(),
                slice.num_slices
            )));
        }
        (slice.num_slices, run(slice.num_slices)?)
    } else {
        let free = ctx.target.usable_l1_per_core().saturating_sub(ctx.q.l1_in_use);
        let mut best: Option<(u64, Estimate)> = None;
        let mut first_err = None;
        for n in 1..=max.min(MAX_SLICES) {
            match run(n) {
                Ok(est) if l1_peak(&est) <= free => {
                    best = Some((n, est));
                    break;
                }
                Ok(est) => {
                    if best.as_ref().is_none_or(|(_, b)| l1_peak(&est) < l1_peak(b)) {
                        best = Some((n, est));
                    }
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match (best, first_err) {
            (Some(b), _) => b,
            (None, Some(e)) => return Err(e),
            (None, None) => {
                return Err(invalid(format!("{}: no slice count to try", ctx.name())));
            }
        }
    };
    est.output = out;
    est.config = OpConfig::Conv2d {
        conv: Box::new(cfg),
        compute,
        slice: Some(Conv2dSliceConfig { slice_type: slice.slice_type, num_slices: n }),
    };
    Ok(est)
}

/// The most slices the model evaluates. Every count up to it is tried, each over all its
/// slices, so the bound keeps an attribute from IR (an output a million rows high) from costing
/// quadratic time; real convs have at most a few hundred output rows or 32-column units.
const MAX_SLICES: u64 = 1024;

fn with_slice(config: &OpConfig, slice: Option<Conv2dSliceConfig>) -> OpConfig {
    let (conv, compute) = conv_config(config);
    OpConfig::Conv2d { conv: Box::new(conv), compute, slice }
}

/// The convs the bands of an `n`-way slicing run, one per distinct geometry (bands of the same
/// size away from the tensor's edges read the same number of rows).
pub(crate) fn bands(
    a: &ConvAttrs,
    ty: Conv2dSliceType,
    n: u64,
    unit: u64,
    tile_out: bool,
) -> Vec<ConvAttrs> {
    let (ho, wo) = a.output_hw(false);
    let axis = usize::from(ty == Conv2dSliceType::DramWidth);
    let dim = if axis == 0 { ho } else { wo };
    let in_dim = if axis == 0 { a.input_h } else { a.input_w };
    let (lo, hi) = (a.padding[2 * axis], a.padding[2 * axis + 1]);
    let (k, s, d) = (a.kernel[axis].max(1), a.stride[axis].max(1), a.dilation[axis].max(1));
    let units = div_ceil(dim, unit);
    let (base, rem) = (units / n.max(1), units % n.max(1));
    // Signed: a band's first input row may lie in the padding. check_geometry keeps every
    // term below 2^41.
    let (lo_i, in_dim_i) = (lo as i64, in_dim as i64);
    let mut out: Vec<ConvAttrs> = Vec::new();
    let mut start = 0;
    for i in 0..n {
        if start >= dim {
            break;
        }
        let size = unit * (base + u64::from(i < rem));
        let end = (start + size).min(dim);
        if end == start {
            continue;
        }
        let mut in_start = (start * s) as i64 - lo_i;
        let mut in_end = ((end - 1) * s + d * (k - 1) + 1) as i64 - lo_i;
        let mut pad_lo = u64::try_from(-in_start).unwrap_or(0);
        let mut pad_hi = u64::try_from(in_end - in_dim_i).unwrap_or(0);
        in_start = in_start.max(0);
        in_end = in_end.min(in_dim_i);
        if start == 0 {
            pad_lo = lo;
            in_start = 0;
        }
        if end == dim {
            pad_hi = hi;
            in_end = in_dim_i;
        }
        let band_out = end - start;
        start += size;
        let Ok(len) = u64::try_from(in_end - in_start) else { continue };
        if len == 0 {
            continue;
        }
        let mut band = a.clone();
        band.padding[2 * axis] = pad_lo;
        band.padding[2 * axis + 1] = pad_hi;
        if axis == 0 {
            band.input_h = len;
        } else {
            band.input_w = len;
        }
        // The halo builds tile-wide output rows: a tiled band pads its output width to 32.
        let band_w = if axis == 0 { wo } else { band_out };
        if tile_out && len < in_dim && !band_w.is_multiple_of(TILE) {
            band.padding[3] += (TILE - band_w % TILE) * a.stride[1].max(1);
        }
        if !out.contains(&band) {
            out.push(band);
        }
    }
    out
}

/// One band's conv: its input read from DRAM as row-major sticks into L1, its tiled output
/// written back to DRAM.
fn conv2d_band(
    ctx: &Ctx<'_>,
    band: &ConvAttrs,
    cfg: &Conv2dConfig,
    compute: Option<DeviceComputeKernelConfig>,
) -> Result<Estimate, OpError> {
    let (ho, wo) = band.output_hw(false);
    let in_shape = [1, 1, band.batch * band.input_h * band.input_w, band.in_channels];
    let out_shape = [1, 1, band.batch * ho * wo, band.out_channels];
    let dtype = ctx.in_dtype(0);
    // Block floats have no row-major form; they stay tiled.
    let page = if dtype.scalar_type().is_some() { PageLayout::RowMajor } else { PageLayout::Tile };
    let mut inputs =
        vec![TensorDesc::new(&in_shape, TtnnLayout::dram_interleaved(&in_shape, dtype, page))];
    inputs.extend(ctx.q.inputs.iter().skip(1).cloned());
    // tt-metal runs every band with a tiled output, whatever the final output's layout.
    let cfg = Conv2dConfig { output_layout: Some(PageLayout::Tile), ..cfg.clone() };
    let q = OpQuery {
        kind: ctx.q.kind.clone(),
        inputs,
        output_shape: out_shape.to_vec(),
        output_dtype: ctx.q.output_dtype,
        output: OutputHint::Layout(TtnnLayout::dram_interleaved(
            &out_shape,
            ctx.q.output_dtype,
            PageLayout::Tile,
        )),
        config: OpConfig::Conv2d { conv: Box::new(cfg), compute, slice: None },
        l1_in_use: ctx.q.l1_in_use,
    };
    conv2d_l1(&Ctx { target: ctx.target, q: &q }, band, false)
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
    let worker = ctx.worker();
    let par = match given_sharding(ctx, None)? {
        Some((ml, grid)) => Parallel::new(
            ml,
            grid.unwrap_or_else(|| auto_grid(ml, px_tiles, ch_tiles, worker)),
            false,
        ),
        None => {
            let ml = auto_memory_layout(px_tiles, ch_tiles, worker);
            Parallel::new(ml, auto_grid(ml, px_tiles, ch_tiles, worker), true)
        }
    };
    let page = match &ctx.q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) => l.page_layout(),
        OutputHint::Null => input.layout.page_layout(),
    };
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
