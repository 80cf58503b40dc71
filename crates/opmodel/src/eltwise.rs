//! Elementwise families (unary, binary with broadcasting, ternary, typecast, quantize), the
//! D2M subgraph stand-in, creation ops and the fixed-layout plumbing ops.
//!
//! CB shapes (opmodel.md §5): interleaved unary = 2 CBs x 2 tiles; a sharded unary aliases
//! both CBs onto the shard buffers (0); binary_ng always keeps 3 CBs x 2 tiles, sharded or not.

use ttnn_types::{BufferType, DataType, PageLayout, TtnnLayout};

use crate::{
    BinaryOp, CreationOp, OpError, OpKind, OutputHint, UnaryOp,
    util::{
        Ctx, Estimate, LayoutExt, NullPolicy, broadcast, bytes_like, invalid, shape_text,
        unsupported,
    },
};

pub(crate) fn unary(ctx: &Ctx<'_>, op: UnaryOp) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if input.shape != ctx.q.output_shape && op != UnaryOp::BitcastConvert {
        return Err(invalid(format!(
            "{} maps {} to {}, an elementwise op keeps the shape",
            ctx.name(),
            shape_text(&input.shape),
            shape_text(&ctx.q.output_shape)
        )));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    sharded_same_spec(ctx, &out, &[0])?;
    let (tb_in, tb_out) = (ctx.in_tb(0), ctx.out_tb());
    let cb = if input.layout.is_l1_sharded() && out.is_l1_sharded() {
        // The sharded program binds its CBs to the input and output shards.
        0
    } else if op == UnaryOp::Assign && ctx.in_dtype(0) == ctx.q.output_dtype {
        // A same-dtype copy streams through one double-buffered CB.
        2 * tb_in
    } else {
        2 * tb_in + 2 * tb_out
    };
    Ok(Estimate::new(cb, out))
}

pub(crate) fn typecast(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    unary(ctx, UnaryOp::Relu)
}

pub(crate) fn binary(ctx: &Ctx<'_>, op: BinaryOp) -> Result<Estimate, OpError> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    check_broadcast(ctx, &[&a.shape, &b.shape])?;
    // The output is always tiled, whatever page layout is asked for: the request carries a
    // memory config and a data type only (tt-metal's `BinaryNgDeviceOperation::
    // compute_output_specs` builds the spec with `Layout::TILE`).
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    let out = if out.page_layout() == PageLayout::RowMajor { tiled(ctx, &out)? } else { out };
    if ctx.q.kind.rejects_eltwise_core_shrink() && out.is_l1_sharded() {
        let widest = [a, b]
            .iter()
            .filter(|t| t.layout.is_l1_sharded())
            .map(|t| t.layout.num_cores())
            .max()
            .unwrap_or(0);
        if out.num_cores() < widest {
            return Err(unsupported(format!(
                "{} may not shrink {widest} sharded input cores to {} output cores \
                 (the implicit core shrink hangs, tt-metal#34765)",
                op.name(),
                out.num_cores()
            )));
        }
    }
    sharded_same_spec(ctx, &out, &[0, 1])?;
    let cb = 2 * (ctx.in_tb(0) + ctx.in_tb(1) + ctx.out_tb());
    Ok(Estimate::new(cb, out))
}

/// `out` with tile pages: the same buffer, memory layout and grid.
fn tiled(ctx: &Ctx<'_>, out: &TtnnLayout) -> Result<TtnnLayout, OpError> {
    let (shape, dtype, page) = (&ctx.q.output_shape, ctx.q.output_dtype, PageLayout::Tile);
    match out.memory_layout {
        Some(ml) if ml.is_sharded() => {
            crate::util::sharded(shape, dtype, page, ml, out.grid2d(), ctx.worker())
        }
        _ if out.is_l1() => Ok(TtnnLayout::l1_interleaved(shape, dtype, page, out.grid2d())),
        _ => Ok(TtnnLayout::dram_interleaved(shape, dtype, page)),
    }
}

pub(crate) fn ternary(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let shapes: Vec<&Vec<u64>> =
        (0..3).map(|i| ctx.input(i).map(|t| &t.shape)).collect::<Result<_, _>>()?;
    check_broadcast(ctx, &shapes)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    sharded_same_spec(ctx, &out, &[0, 1, 2])?;
    let cb = 2 * (ctx.in_tb(0) + ctx.in_tb(1) + ctx.in_tb(2) + ctx.out_tb());
    Ok(Estimate::new(cb, out))
}

/// quantize / dequantize / requantize run as a short chain of binary ops with the scale and
/// zero point, materializing input-sized temporaries where the output lives.
pub(crate) fn quantize(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if out.is_l1_sharded() || input.layout.is_l1_sharded() {
        return Err(unsupported(format!(
            "{} is modelled for interleaved tensors only",
            ctx.name()
        )));
    }
    let temp = bytes_like(&out, &input.shape, ctx.in_dtype(0), ctx.worker());
    let cb = 2 * 3 * ctx.in_tb(0);
    Ok(Estimate::new(cb, out).plus_tensor(3 * temp))
}

/// tt-mlir's D2M cost model: CB 0, tensor = the L1 input and output shards, output = the hint.
pub(crate) fn d2m_subgraph(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    let inputs: u64 = ctx.q.inputs.iter().map(|t| t.layout.l1_bytes_per_core()).sum();
    Ok(Estimate::new(0, out).plus_tensor(inputs))
}

/// Creation ops allocate their output (rand also a float32 temporary and a typecast);
/// plumbing ops report the layout they already have.
pub(crate) fn fixed_or_creation(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let out = match (&ctx.q.output, ctx.q.inputs.first()) {
        (OutputHint::Layout(l), _) => ctx.output_like(l)?,
        (OutputHint::Partial(l), _) => ctx.resolve_partial(l)?,
        (OutputHint::Null, Some(t)) if t.shape == ctx.q.output_shape => match ctx.q.kind {
            OpKind::Fixed(crate::FixedOp::FromDevice) => TtnnLayout::system_memory(
                &ctx.q.output_shape,
                ctx.q.output_dtype.scalar_type().unwrap_or(ttnn_types::ScalarType::BF16),
            ),
            OpKind::Fixed(crate::FixedOp::ToDevice) => ctx.dram_output(t.layout.page_layout()),
            _ => t.layout.clone(),
        },
        (OutputHint::Null, Some(t)) if t.layout.buffer != BufferType::SystemMemory => {
            ctx.output_like(&t.layout)?
        }
        (OutputHint::Null, _) => ctx.dram_output(PageLayout::Tile),
    };
    let est = match ctx.q.kind {
        OpKind::Creation(CreationOp::Rand) => {
            let f32_temp = if ctx.q.output_dtype == DataType::F32 {
                0
            } else {
                bytes_like(&out, &ctx.q.output_shape, DataType::F32, ctx.worker())
            };
            let cb = 2 * DataType::F32.tile_bytes() + 2 * ctx.out_tb();
            Estimate::new(cb, out).plus_tensor(f32_temp)
        }
        OpKind::Creation(_) => Estimate::new(0, out),
        // Moving a host tensor to device allocates it; the rest allocate nothing we model.
        OpKind::Fixed(crate::FixedOp::ToDevice | crate::FixedOp::LoadTensor) => {
            Estimate::new(0, out)
        }
        _ => Estimate::view(out),
    };
    Ok(est)
}

fn check_broadcast(ctx: &Ctx<'_>, shapes: &[&Vec<u64>]) -> Result<(), OpError> {
    let mut acc: Vec<u64> = Vec::new();
    for s in shapes {
        acc = broadcast(&acc, s).ok_or_else(|| {
            invalid(format!(
                "{}: operand shapes {} do not broadcast",
                ctx.name(),
                shapes.iter().map(|s| shape_text(s)).collect::<Vec<_>>().join(", ")
            ))
        })?;
    }
    if acc != ctx.q.output_shape {
        return Err(invalid(format!(
            "{}: operands broadcast to {}, not to the output shape {}",
            ctx.name(),
            shape_text(&acc),
            shape_text(&ctx.q.output_shape)
        )));
    }
    Ok(())
}

/// The safe sharding rule for elementwise ops: with a sharded output, every sharded operand
/// has the output's shape, memory layout, grid and shard; broadcast operands are interleaved.
fn sharded_same_spec(ctx: &Ctx<'_>, out: &TtnnLayout, operands: &[usize]) -> Result<(), OpError> {
    if !out.is_l1_sharded() {
        return Ok(());
    }
    for &i in operands {
        let Some(t) = ctx.q.inputs.get(i) else { continue };
        if !t.layout.is_l1_sharded() {
            continue;
        }
        if t.shape != ctx.q.output_shape {
            return Err(unsupported(format!(
                "{}: sharded operand {i} is broadcast ({} to {}); broadcast operands must be \
                 interleaved",
                ctx.name(),
                shape_text(&t.shape),
                shape_text(&ctx.q.output_shape)
            )));
        }
        let same = t.layout.same_placement(out)
            || t.layout.memory_layout == out.memory_layout
                && t.layout.grid2d() == out.grid2d()
                && t.layout.shard_tiles() == out.shard_tiles();
        if !same {
            return Err(unsupported(format!(
                "{}: sharded operand {i} ({}) and the sharded output ({}) differ; an implicit \
                 reshard is not modelled",
                ctx.name(),
                t.layout.describe(),
                out.describe()
            )));
        }
    }
    Ok(())
}
