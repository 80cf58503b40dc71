//! Data movement: concat, reshape/permute/transpose, slice, pad, repeat, layout and memory
//! conversions, embedding, gather/scatter, sort/topk, argmax and cumulative scans.
//!
//! The tt-mlir rules encoded here come from `DataMovementRules.cpp` and the legacy
//! `DFShardingPolicy.cpp` (opmodel.md §4.2); the CB shapes from the calibration in §6.

use ttnn_types::{DataType, PageLayout, TensorMemoryLayout, TtnnLayout, div_ceil};

use crate::{
    OpError, OpKind, OutputHint,
    util::{
        Ctx, Estimate, LayoutExt, NullPolicy, bytes_like, invalid, norm_dim, row_page_bytes,
        shape_text, tiles_2d, unsupported,
    },
};

fn volume(shape: &[u64]) -> u64 {
    shape.iter().fold(1u64, |a, d| a.saturating_mul(*d))
}

fn no_sharded_output(ctx: &Ctx<'_>, out: &TtnnLayout, why: &str) -> Result<(), OpError> {
    if out.is_sharded() {
        return Err(unsupported(format!(
            "{} produces interleaved outputs only ({why})",
            ctx.name()
        )));
    }
    Ok(())
}

pub(crate) fn concat(ctx: &Ctx<'_>, dim: i64) -> Result<Estimate, OpError> {
    let first = ctx.input(0)?;
    let rank = first.shape.len();
    let d = norm_dim(dim, rank).ok_or_else(|| {
        invalid(format!("ttnn.concat: dim {dim} is out of range for rank {rank}"))
    })?;
    let mut expect = first.shape.clone();
    expect[d] = 0;
    for (i, t) in ctx.q.inputs.iter().enumerate() {
        let ok = t.shape.len() == rank
            && t.shape.iter().enumerate().all(|(j, x)| j == d || *x == first.shape[j]);
        if !ok {
            return Err(invalid(format!(
                "ttnn.concat: operand {i} ({}) differs from operand 0 ({}) outside dim {d}",
                shape_text(&t.shape),
                shape_text(&first.shape)
            )));
        }
        expect[d] = expect[d].saturating_add(t.shape[d]);
        if t.layout.memory_layout != first.layout.memory_layout
            || t.layout.buffer != first.layout.buffer
            || (t.layout.is_sharded() && t.layout.grid2d() != first.layout.grid2d())
        {
            return Err(unsupported(format!(
                "ttnn.concat inputs must share one memory layout and grid: operand {i} is {}, \
                 operand 0 is {}",
                t.layout.describe(),
                first.layout.describe()
            )));
        }
    }
    if expect != ctx.q.output_shape {
        return Err(invalid(format!(
            "ttnn.concat: operands concatenate to {}, not {}",
            shape_text(&expect),
            shape_text(&ctx.q.output_shape)
        )));
    }
    let out = ctx.resolve_output(NullPolicy::Dram)?;
    let in_sharded = first.layout.is_l1_sharded();
    if in_sharded
        && (!out.is_l1_sharded()
            || out.memory_layout != first.layout.memory_layout
            || out.grid2d() != first.layout.grid2d())
    {
        return Err(unsupported(format!(
            "ttnn.concat with sharded inputs needs a sharded output with the same layout and \
             grid, not {}",
            out.describe()
        )));
    }
    if out.is_sharded() {
        if !in_sharded {
            return Err(unsupported(
                "ttnn.concat of interleaved inputs gives no sharded output (#41469)",
            ));
        }
        let aligned = ctx.q.inputs.iter().all(|t| {
            let n = t.shape.len();
            t.shape.iter().skip(n.saturating_sub(2)).all(|x| x.is_multiple_of(32))
        });
        if !aligned {
            return Err(unsupported(
                "ttnn.concat of non-tile-aligned inputs gives no sharded output (#41504)",
            ));
        }
        match (out.memory_layout, d + 1 == rank, d + 2 == rank) {
            (Some(TensorMemoryLayout::BlockSharded), ..) => {
                return Err(unsupported("ttnn.concat never shards its output by blocks"));
            }
            (Some(ml), true, _) if ml != TensorMemoryLayout::HeightSharded => {
                return Err(unsupported(format!("a width concat needs height sharding, not {ml}")));
            }
            (Some(ml), _, true) if ml != TensorMemoryLayout::WidthSharded => {
                return Err(unsupported(format!("a height concat needs width sharding, not {ml}")));
            }
            _ => {}
        }
    }
    // Sharded concat copies shard to shard; interleaved concat streams one double-buffered CB.
    let cb = if in_sharded { 0 } else { 2 * ctx.in_tb(0) };
    Ok(Estimate::new(cb, out))
}

/// A reshape tt-metal performs as a view: same last dim, and the second-last dim equal or both
/// tile aligned, so the tiles do not move.
fn is_view_reshape(from: &[u64], to: &[u64], page: PageLayout) -> bool {
    let last = |s: &[u64]| s.last().copied().unwrap_or(1);
    let second = |s: &[u64]| if s.len() >= 2 { s[s.len() - 2] } else { 1 };
    if last(from) != last(to) {
        return false;
    }
    page == PageLayout::RowMajor
        || second(from) == second(to)
        || (second(from).is_multiple_of(32) && second(to).is_multiple_of(32))
}

pub(crate) fn reshape(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if volume(&input.shape) != volume(&ctx.q.output_shape) {
        return Err(invalid(format!(
            "ttnn.reshape: {} and {} have different volumes",
            shape_text(&input.shape),
            shape_text(&ctx.q.output_shape)
        )));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    let same_memory = out.buffer == input.layout.buffer
        && out.memory_layout == input.layout.memory_layout
        && out.page_layout() == input.layout.page_layout();
    let view = is_view_reshape(&input.shape, &ctx.q.output_shape, input.layout.page_layout());
    if view && same_memory && !input.layout.is_sharded() {
        return Ok(Estimate::view(out));
    }
    if view && same_memory && matches!(ctx.q.output, OutputHint::Null) {
        return Ok(Estimate::view(out));
    }
    no_sharded_output(ctx, &out, "a non-view reshape moves tiles")?;
    let cb = match input.layout.page_layout() {
        // Two double-buffered input tiles and a half-tile page of source offsets.
        PageLayout::Tile => 2 * ctx.in_tb(0) + ctx.in_tb(0) / 2,
        PageLayout::RowMajor => {
            2 * row_page_bytes(&input.shape, ctx.in_dtype(0), ctx.target.l1_alignment())
                + 2 * row_page_bytes(
                    &ctx.q.output_shape,
                    ctx.q.output_dtype,
                    ctx.target.l1_alignment(),
                )
        }
    };
    Ok(Estimate::new(cb, out))
}

/// permute and transpose. An identity permutation is a view.
pub(crate) fn permute(ctx: &Ctx<'_>, permutation: &[i64]) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let mut sorted = input.shape.clone();
    sorted.sort_unstable();
    let mut out_sorted = ctx.q.output_shape.clone();
    out_sorted.sort_unstable();
    if sorted != out_sorted {
        return Err(invalid(format!(
            "{}: {} is not a permutation of {}",
            ctx.name(),
            shape_text(&ctx.q.output_shape),
            shape_text(&input.shape)
        )));
    }
    let identity = !permutation.is_empty()
        && permutation.iter().enumerate().all(|(i, p)| usize::try_from(*p).ok() == Some(i));
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if identity && out.same_placement(&input.layout) {
        return Ok(Estimate::view(out));
    }
    if out.is_sharded() && input.layout.is_sharded() && !out.same_placement(&input.layout) {
        return Err(unsupported(format!("{} keeps a sharded input's shard spec", ctx.name())));
    }
    let cb = match input.layout.page_layout() {
        PageLayout::Tile => 2 * ctx.in_tb(0) + 2 * ctx.out_tb(),
        PageLayout::RowMajor => {
            let align = ctx.target.l1_alignment();
            2 * row_page_bytes(&input.shape, ctx.in_dtype(0), align)
                + 2 * row_page_bytes(&ctx.q.output_shape, ctx.q.output_dtype, align)
        }
    };
    Ok(Estimate::new(cb, out))
}

pub(crate) fn slice(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if input.shape.len() != ctx.q.output_shape.len()
        || input.shape.iter().zip(&ctx.q.output_shape).any(|(i, o)| o > i)
    {
        return Err(invalid(format!(
            "{}: {} does not fit inside {}",
            ctx.name(),
            shape_text(&ctx.q.output_shape),
            shape_text(&input.shape)
        )));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    no_sharded_output(ctx, &out, "#39074, #38016")?;
    let cb = match input.layout.page_layout() {
        PageLayout::Tile => 2 * ctx.in_tb(0),
        // One output row per page, double buffered: it must fit L1 (tt-mlir PR #8082).
        PageLayout::RowMajor => {
            2 * row_page_bytes(&ctx.q.output_shape, ctx.q.output_dtype, ctx.target.l1_alignment())
        }
    };
    Ok(Estimate::new(cb, out))
}

pub(crate) fn pad(ctx: &Ctx<'_>, padding: &[i64]) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if padding.iter().all(|p| *p == 0) && input.shape == ctx.q.output_shape {
        return Ok(Estimate::view(out));
    }
    no_sharded_output(ctx, &out, "#40898")?;
    let cb = match input.layout.page_layout() {
        // Two input tiles plus one tile of the pad value.
        PageLayout::Tile => 3 * ctx.in_tb(0),
        PageLayout::RowMajor => {
            3 * row_page_bytes(&ctx.q.output_shape, ctx.q.output_dtype, ctx.target.l1_alignment())
        }
    };
    Ok(Estimate::new(cb, out))
}

/// repeat and repeat_interleave buffer whole input rows (2 x Wt tiles). An all-ones repeat is
/// a view. With a null hint a sharded input keeps its memory layout and grid (upstream pins
/// the hint because tt-metal would otherwise re-derive the shard over the full grid).
pub(crate) fn repeat(ctx: &Ctx<'_>, repeat_dims: &[i64]) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    let all_ones = matches!(ctx.q.kind, OpKind::Repeat { .. })
        && repeat_dims.iter().all(|d| *d == 1)
        && input.shape == ctx.q.output_shape;
    if all_ones {
        return Ok(Estimate::view(out));
    }
    let cb = 2 * ctx.in_wt(0) * ctx.in_tb(0);
    Ok(Estimate::new(cb, out))
}

/// to_layout: tilize or untilize (2 CBs of a whole tile row each, or of one block row when a
/// tile row does not fit), a typecast or a move.
pub(crate) fn to_layout(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let out = match &ctx.q.output {
        OutputHint::Null => ctx.output_like(&input.layout)?,
        OutputHint::Layout(l) => ctx.output_like(l)?,
        OutputHint::Partial(l) => ctx.resolve_partial(l)?,
    };
    let on_device = |l: &TtnnLayout| l.buffer.is_l1() || l.buffer == ttnn_types::BufferType::Dram;
    if !on_device(&input.layout) || !on_device(&out) {
        // Host-side conversions use no device L1 beyond a device-side output.
        return Ok(Estimate::new(0, out));
    }
    if out == input.layout && input.shape == ctx.q.output_shape {
        return Ok(Estimate::view(out));
    }
    let retile = out.page_layout() != input.layout.page_layout();
    let cb = if retile {
        retile_cb(ctx, &input.layout, &out)
    } else if ctx.in_dtype(0) != ctx.q.output_dtype {
        2 * ctx.in_tb(0) + 2 * ctx.out_tb()
    } else {
        move_cb(ctx, &input.layout, &out)
    };
    Ok(Estimate::new(cb, out))
}

/// CBs of a tilize or untilize. tt-metal buffers one whole tile row in and out (`2 Wt tb`). When
/// that row does not fit the free L1 (its `is_enough_space`: `Wt (tb_in + tb_out)` against the
/// L1 above the reserved base and below the lowest live buffer), an interleaved conversion
/// takes the block variant (`untilize_multi_core_block`, `tilize_multi_core_block`): the tile
/// grid is cut into square blocks, one per core, and a core buffers one block row in and out.
/// A 32x128256 logits row (4008 tiles, 16 MB) thus needs 64-tile blocks, 262 144 bytes.
fn retile_cb(ctx: &Ctx<'_>, from: &TtnnLayout, to: &TtnnLayout) -> u64 {
    let (tb_in, tb_out) = (ctx.in_tb(0), ctx.out_tb());
    let shape = ctx.q.inputs.first().map(|t| t.shape.as_slice()).unwrap_or_default();
    let (ht, wt) = tiles_2d(shape);
    let wt = wt.max(1);
    let whole_row = 2u64.saturating_mul(wt).saturating_mul(tb_in.max(tb_out));
    let free = ctx
        .target
        .l1_size()
        .saturating_sub(ctx.target.l1_unreserved_base())
        .saturating_sub(ctx.q.l1_in_use);
    let row_fits = wt.saturating_mul(tb_in + tb_out) < free;
    if row_fits || from.is_sharded() || to.is_sharded() {
        return whole_row;
    }
    tilize_block_side(wt, ht.max(1), ctx.worker().volume()).saturating_mul(tb_in + tb_out)
}

/// Side, in tiles, of the square blocks tt-metal's `split_blocks_for_tilize_wh` cuts a
/// `wt x ht` tile grid into: the smallest side, from the square root of the tiles per core up,
/// that leaves fewer blocks than cores.
fn tilize_block_side(wt: u64, ht: u64, cores: u64) -> u64 {
    if cores < 2 {
        return 1;
    }
    let blocks = |side: u64| div_ceil(wt, side).saturating_mul(div_ceil(ht, side));
    let root = div_ceil(wt.saturating_mul(ht), cores).max(1).isqrt();
    if root * root == div_ceil(wt.saturating_mul(ht), cores).max(1) && blocks(root) < cores {
        return root;
    }
    // The block count only falls as the side grows, and one block of the longer side is below
    // any two cores, so the smallest side that works is found by bisection.
    let (mut lo, mut hi) = (root + 1, wt.max(ht).max(root + 1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if blocks(mid) < cores { hi = mid } else { lo = mid + 1 }
    }
    lo
}

/// to_memory_config: a move between buffers or a reshard; the page layout stays.
pub(crate) fn to_memory_config(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if out.page_layout() != input.layout.page_layout() {
        return Err(unsupported(
            "ttnn.to_memory_config keeps the page layout; tilize or untilize with ttnn.to_layout",
        ));
    }
    if out.same_placement(&input.layout) && input.shape == ctx.q.output_shape {
        return Ok(Estimate::view(out));
    }
    let cb = move_cb(ctx, &input.layout, &out);
    Ok(Estimate::new(cb, out))
}

/// CBs of a memory move: interleaved to interleaved streams two pages; into or out of a shard
/// the CB holds one shard row of tiles (the sharded side is bound to its buffer).
fn move_cb(ctx: &Ctx<'_>, from: &TtnnLayout, to: &TtnnLayout) -> u64 {
    let page = match from.page_layout() {
        PageLayout::Tile => ctx.in_tb(0),
        PageLayout::RowMajor => {
            let shape = ctx.q.inputs.first().map(|t| t.shape.as_slice()).unwrap_or_default();
            row_page_bytes(shape, ctx.in_dtype(0), ctx.target.l1_alignment())
        }
    };
    match (from.is_l1_sharded(), to.is_l1_sharded()) {
        (false, false) => 2 * page,
        (false, true) => to.shard_tiles().1.max(1) * page,
        (true, false) => from.shard_tiles().1.max(1) * page,
        (true, true) => to.shard_tiles().1.max(1) * page,
    }
}

/// embedding: rows of the weight table gathered by index; never a sharded output.
pub(crate) fn embedding(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let idx = ctx.input(0)?;
    let weight = ctx.input(1)?;
    if weight.layout.is_sharded() {
        return Err(unsupported("ttnn.embedding reads an interleaved weight table"));
    }
    let dim = weight.shape.last().copied().unwrap_or(0);
    if ctx.q.output_shape.last().copied() != Some(dim) {
        return Err(invalid(format!(
            "ttnn.embedding: output {} must end in the embedding width {dim}",
            shape_text(&ctx.q.output_shape)
        )));
    }
    let out = match (&ctx.q.output, idx.layout.is_sharded()) {
        (OutputHint::Null, true) => ctx.l1_interleaved_output(PageLayout::Tile),
        _ => ctx.resolve_output(NullPolicy::InheritInput0)?,
    };
    no_sharded_output(ctx, &out, "EmbeddingRules")?;
    let wt = div_ceil(dim, 32).max(1);
    let cb = 2 * wt * ctx.in_tb(1);
    Ok(Estimate::new(cb, out))
}

/// embedding_bw: gradient rows scattered into a weight-shaped output.
///
/// The program splits the embedding width (in tiles) over the whole compute grid, so a core
/// owns `m = ceil(Et / cores)` tile columns. Its CBs, unaligned:
///
/// ```text
/// grad m tiles + out m tiles + packed out m tiles      (tile sizes of grad and output)
/// + 32 indices (index element size) + a 32-byte uint8 mask + a 16-byte chunk counter
/// ```
///
/// A null hint takes the gradient's memory config, as tt-metal's `memory_config` default does.
pub(crate) fn embedding_bw(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let idx = ctx.input(0)?;
    let grad = ctx.input(2)?;
    let out = match &ctx.q.output {
        OutputHint::Null => ctx.output_like(&grad.layout)?,
        _ => ctx.resolve_output(NullPolicy::Dram)?,
    };
    no_sharded_output(ctx, &out, "embedding backward accumulates rows")?;
    let et = tiles_2d(&grad.shape).1.max(1);
    let per_core = et.div_ceil(ctx.worker().volume().max(1));
    let idx_elem = idx.layout.data_type().unwrap_or(DataType::U32).elem_bytes();
    let cb = per_core * (ctx.in_tb(2) + 2 * ctx.out_tb()) + 32 * idx_elem + 32 + 16;
    Ok(Estimate::new(cb, out))
}

/// gather and scatter: interleaved operands, three double-buffered tile CBs.
pub(crate) fn gather(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    ctx.input(1)?;
    if ctx.q.inputs.iter().any(|t| t.layout.is_sharded()) {
        return Err(unsupported(format!("{} takes interleaved operands", ctx.name())));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    no_sharded_output(ctx, &out, "index-driven writes")?;
    let cb: u64 =
        2 * (0..ctx.q.inputs.len().min(3)).map(|i| ctx.in_tb(i)).sum::<u64>() + 2 * ctx.out_tb();
    Ok(Estimate::new(cb, out))
}

/// sort and topk keep whole rows of values and uint16 indices (in, transposed, out).
pub(crate) fn sort(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if input.layout.is_sharded() {
        return Err(unsupported(format!("{} takes an interleaved input", ctx.name())));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    no_sharded_output(ctx, &out, "row-wise bitonic sort")?;
    let wt = ctx.in_wt(0);
    let cb = 4 * wt * (ctx.in_tb(0) + DataType::U16.tile_bytes());
    Ok(Estimate::new(cb, out))
}

/// argmax needs a row-major input (tile input falls back to one core, tt-metal#46340); its CBs
/// are one input row and one output row of uint32 indices.
pub(crate) fn argmax(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if input.layout.page_layout() != PageLayout::RowMajor {
        return Err(unsupported("ttnn.argmax needs a row-major input (tt-metal#46340)"));
    }
    if input.layout.is_sharded() {
        return Err(unsupported("ttnn.argmax takes an interleaved input"));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    no_sharded_output(ctx, &out, "a reduction to indices")?;
    let in_row = input.shape.last().copied().unwrap_or(1) * ctx.in_dtype(0).elem_bytes();
    let out_row = ctx.q.output_shape.last().copied().unwrap_or(1) * ctx.q.output_dtype.elem_bytes();
    Ok(Estimate::new(in_row + out_row, out))
}

/// cumsum / cumprod (moreh): eight double-buffered tile CBs, and one tile row of the scan
/// accumulated in L1 on a single core next to the output.
pub(crate) fn cumulative(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if input.layout.is_sharded() {
        return Err(unsupported(format!("{} takes an interleaved input", ctx.name())));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    no_sharded_output(ctx, &out, "a sequential scan")?;
    let tb = ctx.in_tb(0);
    let acc = if out.is_l1() { ctx.in_wt(0) * tb } else { 0 };
    Ok(Estimate::new(16 * tb, out).plus_tensor(acc))
}

/// sampling (top-k/top-p): interleaved operands; values, indices and the k/p/temp rows.
pub(crate) fn sampling(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if ctx.q.inputs.iter().any(|t| t.layout.is_sharded()) {
        return Err(unsupported("ttnn.sampling takes interleaved operands"));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    no_sharded_output(ctx, &out, "sampling")?;
    let wt = tiles_2d(&input.shape).1.max(1);
    let cb = 2 * wt * (ctx.in_tb(0) + ctx.in_tb(1)) + 6 * ctx.out_tb();
    let temps = bytes_like(&out, &input.shape, ctx.in_dtype(0), ctx.worker());
    Ok(Estimate::new(cb, out).plus_tensor(temps))
}
