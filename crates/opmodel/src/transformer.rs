//! Transformer ops (attention, rotary embedding, head split/merge), collectives, and the
//! conservative rule for ops the model does not know.
//!
//! tt-mlir queries SDPA and rotary embedding with a null hint only (`TransformerRules.cpp`):
//! tt-metal wants K/V in DRAM and writes attention outputs DRAM-interleaved.

use ttnn_types::{PageLayout, TensorMemoryLayout, div_ceil};

use crate::{
    HeadsOp, OpError, OutputHint, SdpaOp,
    util::{Ctx, Estimate, LayoutExt, NullPolicy, tiles_2d, unsupported},
};

fn reject_sharded_hint(ctx: &Ctx<'_>) -> Result<(), OpError> {
    if let OutputHint::Layout(l) | OutputHint::Partial(l) = &ctx.q.output
        && l.is_sharded()
    {
        return Err(unsupported(format!(
            "{} is only queried with a null output hint; a sharded output ({}) is rejected",
            ctx.name(),
            l.describe()
        )));
    }
    Ok(())
}

/// Flash attention: per core one Q chunk against K/V chunks of 32 rows, with the running
/// max/sum statistics; decode variants process one Q row of tiles per core.
pub(crate) fn sdpa(ctx: &Ctx<'_>, op: SdpaOp) -> Result<Estimate, OpError> {
    reject_sharded_hint(ctx)?;
    let q = ctx.input(0)?;
    for i in 1..3 {
        if let Some(t) = ctx.q.inputs.get(i)
            && !t.layout.is_dram_interleaved()
            && !matches!(op, SdpaOp::SdpaBw | SdpaOp::SdpaFw)
        {
            return Err(unsupported(format!(
                "{} needs K and V DRAM-interleaved; operand {i} is {}",
                ctx.name(),
                t.layout.describe()
            )));
        }
    }
    let decode =
        matches!(op, SdpaOp::SdpaDecode | SdpaOp::PagedSdpaDecode | SdpaOp::PagedFlashMlaDecode);
    if q.layout.is_l1_sharded() && !decode {
        return Err(unsupported(format!("{} needs Q interleaved in prefill", ctx.name())));
    }
    let out = match &ctx.q.output {
        OutputHint::Null => ctx.dram_output(PageLayout::Tile),
        _ => ctx.resolve_output(NullPolicy::Dram)?,
    };
    if !out.is_dram_interleaved() {
        return Err(unsupported(format!(
            "{} writes a DRAM-interleaved output, not {}",
            ctx.name(),
            out.describe()
        )));
    }
    let head_dim = q.shape.last().copied().unwrap_or(32);
    let dt = div_ceil(head_dim, 32).max(1);
    let (qc, kc) = if decode { (1, 8) } else { (1, 1) };
    let tb = ctx.in_tb(0);
    let tiles = 2 * qc * dt // Q
        + 2 * kc * dt // K
        + 2 * kc * dt // V
        + qc * kc // mask
        + qc * kc // QK^T
        + 2 * qc * dt // running output
        + qc * dt // output
        + 6 * qc // max, sum, exp-max, corrections
        + 2; // scale, identity
    Ok(Estimate::new(tb * tiles, out))
}

/// rotary_embedding(_llama): input height-sharded or interleaved only; null hint only; whole
/// rows of input, cos, sin, the rotated copy and two products (+ the llama transform matrix).
pub(crate) fn rotary(ctx: &Ctx<'_>, llama: bool) -> Result<Estimate, OpError> {
    if llama {
        reject_sharded_hint(ctx)?;
    }
    let input = ctx.input(0)?;
    let out =
        if llama { ctx.resolve_output(NullPolicy::InheritInput0)? } else { rotary_output(ctx)? };
    let wt = ctx.in_wt(0);
    let tb = ctx.in_tb(0);
    let extra = if llama { 2 } else { 0 };
    let cb = if input.layout.is_l1_sharded() {
        // Input and output are the shards; cos/sin rows and the two products remain.
        tb * (4 * input.layout.shard_tiles().1.max(1) + extra)
    } else {
        tb * (7 * wt + extra)
    };
    Ok(Estimate::new(cb, out))
}

/// `ttnn.rotary_embedding`'s output, by tt-metal's `RotaryEmbedding::validate` and
/// `compute_output_specs` (ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding/
/// device/rotary_embedding_device_operation.cpp): a sharded input must not be width sharded
/// and its shard must span the whole width; a sharded output must not be width sharded and
/// takes the input's shard spec, or, from an interleaved input, height sharding over the
/// largest number of worker cores that divides the tile rows evenly.
fn rotary_output(ctx: &Ctx<'_>) -> Result<ttnn_types::TtnnLayout, OpError> {
    let input = ctx.input(0)?;
    let (rows, wt) = tiles_2d(&input.shape);
    if input.layout.is_l1_sharded() {
        if input.layout.memory_layout == Some(TensorMemoryLayout::WidthSharded) {
            return Err(unsupported(format!("{} rejects a width_sharded input", ctx.name())));
        }
        if input.layout.shard_tiles().1 != wt.max(1) {
            return Err(unsupported(format!(
                "{}: a sharded input's shard must span the whole width ({wt} tiles)",
                ctx.name()
            )));
        }
    }
    let hint = match &ctx.q.output {
        OutputHint::Layout(l) | OutputHint::Partial(l) if l.is_sharded() => l,
        _ => return ctx.resolve_output(NullPolicy::InheritInput0),
    };
    if hint.memory_layout == Some(TensorMemoryLayout::WidthSharded) {
        return Err(unsupported(format!("{} cannot write a width_sharded output", ctx.name())));
    }
    if input.layout.is_l1_sharded() {
        return crate::util::like(
            &input.layout,
            &ctx.q.output_shape,
            ctx.q.output_dtype,
            ctx.worker(),
        );
    }
    let cores = (1..=ctx.worker().volume().min(rows.max(1)))
        .rev()
        .find(|n| rows.is_multiple_of(*n))
        .unwrap_or(1);
    crate::util::sharded(
        &ctx.q.output_shape,
        ctx.q.output_dtype,
        PageLayout::Tile,
        TensorMemoryLayout::HeightSharded,
        ttnn_types::Grid::new(cores, 1),
        ctx.worker(),
    )
}

pub(crate) fn heads(ctx: &Ctx<'_>, op: HeadsOp) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let wt = ctx.in_wt(0);
    let tb = ctx.in_tb(0);
    match op {
        HeadsOp::ConcatenateHeads | HeadsOp::NlpConcatHeads => {
            let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
            if out.is_sharded() || (op == HeadsOp::ConcatenateHeads && input.layout.is_sharded()) {
                return Err(unsupported(format!(
                    "{} takes and produces interleaved tensors (#7145)",
                    ctx.name()
                )));
            }
            Ok(Estimate::new(2 * wt * tb, out))
        }
        HeadsOp::NlpConcatHeadsDecode | HeadsOp::SplitQkv | HeadsOp::NlpCreateQkvHeadsDecode => {
            reject_sharded_hint(ctx)?;
            if op == HeadsOp::NlpConcatHeadsDecode
                && input.layout.is_l1_sharded()
                && input.layout.memory_layout != Some(TensorMemoryLayout::HeightSharded)
            {
                return Err(unsupported(
                    "ttnn.nlp_concat_heads_decode takes a height-sharded input",
                ));
            }
            let out = match &ctx.q.output {
                OutputHint::Null => ctx.dram_output(PageLayout::Tile),
                _ => ctx.resolve_output(NullPolicy::Dram)?,
            };
            let cb = if input.layout.is_l1_sharded() { 2 * tb } else { 2 * wt * tb };
            Ok(Estimate::new(cb, out))
        }
    }
}

/// Collectives (exempt from the op model upstream) and unknown ops: only DRAM-interleaved
/// operands and results, and a deliberately generous CB estimate of four tiles per operand
/// and result, so an unknown op never looks cheaper than it is.
pub(crate) fn dram_only(ctx: &Ctx<'_>, unknown: bool) -> Result<Estimate, OpError> {
    let what = if unknown {
        format!("the op model does not know {}", ctx.name())
    } else {
        format!("{} is a collective, exempt from the op model upstream", ctx.name())
    };
    for (i, t) in ctx.q.inputs.iter().enumerate() {
        if !t.layout.is_dram_interleaved() {
            return Err(unsupported(format!(
                "{what}; only DRAM-interleaved operands are accepted, operand {i} is {}",
                t.layout.describe()
            )));
        }
    }
    let out = ctx.resolve_output(NullPolicy::Dram)?;
    if !out.is_dram_interleaved() {
        return Err(unsupported(format!(
            "{what}; only a DRAM-interleaved output is accepted, not {}",
            out.describe()
        )));
    }
    let per: u64 = (0..ctx.q.inputs.len()).map(|i| ctx.in_tb(i)).sum::<u64>() + ctx.out_tb();
    let _ = tiles_2d(&ctx.q.output_shape);
    Ok(Estimate::new(4 * per, out))
}
