//! Row-buffering ops: softmax, the layer/rms/batch/group norms, and reductions.
//!
//! The interleaved layernorm program keeps whole rows in CBs; in tiles, with `Wt` the row
//! width and `b` the largest divisor of `Wt` up to 8:
//!
//! ```text
//! in0 Wt + out 2b + x^2 Wt + scaler 2 + eps 2 + reduce scratch 8 + 1/sqrt 2
//!   [layer_norm: x-mean Wt + mean 2] [gamma: Wt + 2b] [beta: Wt (+2b without gamma)]
//! ```
//!
//! which reproduces the rms_norm calibration points (18/22/28/46 tiles).

use ttnn_types::{DataType, TensorMemoryLayout};

use crate::{
    NormOp, OpError,
    util::{
        Ctx, Estimate, LayoutExt, NullPolicy, bytes_like, invalid, largest_divisor_at_most,
        norm_dim, tiles_2d, unsupported,
    },
};

pub(crate) fn softmax(ctx: &Ctx<'_>, dim: i64) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let rank = input.shape.len();
    let d = norm_dim(dim, rank.max(1)).ok_or_else(|| {
        invalid(format!("ttnn.softmax: dim {dim} is out of range for rank {rank}"))
    })?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    let last = d + 1 >= rank;
    if input.layout.is_l1_sharded() || out.is_l1_sharded() {
        if !last {
            return Err(unsupported("sharded ttnn.softmax reduces over the last dim only"));
        }
        if !(input.layout.is_l1_sharded() && out.same_placement(&input.layout)) {
            return Err(unsupported(
                "sharded ttnn.softmax writes in place: input and output need the same shard spec",
            ));
        }
        // In and out CBs are the shards; the row statistics live in float32 scratch CBs:
        // exps and x-max per shard column plus max, sum, 1/sum and the scaler.
        let block_w = input.layout.shard_tiles().1.max(1);
        let cb = DataType::F32.tile_bytes() * (2 * block_w + 4);
        return Ok(Estimate::new(cb, out));
    }
    // Interleaved: the whole row (input and exps) plus scaler, 1/sum and one output tile.
    let (wt, transposes) = if last {
        (ctx.in_wt(0), 0)
    } else {
        // Another dim goes through a transpose pair, materialized next to the output.
        let wt = input.shape.get(d).map_or(1, |x| x.div_ceil(32)).max(1);
        (wt, 2 * bytes_like(&out, &input.shape, ctx.in_dtype(0), ctx.worker()))
    };
    let cb = ctx.in_tb(0) * (2 * wt + 3);
    Ok(Estimate::new(cb, out).plus_tensor(transposes))
}

pub(crate) fn norm(ctx: &Ctx<'_>, op: NormOp) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    let tb = ctx.in_tb(0);
    match op {
        NormOp::BatchNormInference | NormOp::BatchNormTraining => {
            if ctx.q.inputs.iter().any(|t| t.layout.is_sharded()) || out.is_sharded() {
                return Err(unsupported(format!(
                    "{} is modelled for interleaved tensors",
                    ctx.name()
                )));
            }
            // One double-buffered tile CB per operand and per intermediate: input, mean, var,
            // weight, bias, eps, output, denominator, scratch; training adds the batch
            // statistics and the running-stat updates.
            let cbs = if op == NormOp::BatchNormTraining { 12 } else { 9 };
            return Ok(Estimate::new(cbs * 2 * tb, out));
        }
        NormOp::GroupNorm => {
            let wt = ctx.in_wt(0);
            let cb = tb * (2 * wt + 2 * wt + 16);
            return Ok(Estimate::new(cb, out));
        }
        _ => {}
    }
    if input.layout.is_l1_sharded() {
        if input.layout.memory_layout == Some(TensorMemoryLayout::HeightSharded) {
            return Err(unsupported(format!(
                "{} rejects a height-sharded input (the sharded layernorm kernel refuses it)",
                ctx.name()
            )));
        }
        let full = input.layout.core_ranges.as_ref().is_none_or(|c| c.is_full_rectangle());
        if !full {
            return Err(unsupported(format!(
                "{} needs a width- or block-sharded input on a full rectangular grid, not {}",
                ctx.name(),
                input.layout.describe()
            )));
        }
        if out.is_l1_sharded() && !out.same_placement(&input.layout) {
            return Err(unsupported(format!(
                "sharded {} writes in place: the output needs the input's shard spec",
                ctx.name()
            )));
        }
        let (bh, bw) = input.layout.shard_tiles();
        let gamma_beta = ctx.q.inputs.len().saturating_sub(1) as u64;
        // Sharded program: in/out are the shards; x-mean and x^2 blocks, gamma/beta rows,
        // per-row partial and global statistics (one column per grid column for the mcast).
        let cols = input.layout.grid2d().cols.max(1);
        let cb = tb * (2 * bh * bw + gamma_beta * bw + bh * (2 + cols) + 6);
        let mut est = Estimate::new(cb, out.clone());
        if !out.is_l1_sharded() {
            est.tensor = out.l1_bytes_per_core();
        }
        return Ok(est);
    }
    if out.is_l1_sharded() {
        return Err(unsupported(format!(
            "{} shards its output only like a sharded input",
            ctx.name()
        )));
    }
    let wt = ctx.in_wt(0);
    let b = largest_divisor_at_most(wt, 8);
    let layer = matches!(
        op,
        NormOp::LayerNorm
            | NormOp::DistributedLayerNorm
            | NormOp::LayerNormPreAllGather
            | NormOp::LayerNormPostAllGather
    );
    let has_gamma = ctx.q.inputs.len() > 1;
    let has_beta = ctx.q.inputs.len() > 2;
    let mut tiles = wt + 2 * b + wt + 2 + 2 + 8 + 2;
    if layer {
        tiles += wt + 2;
    }
    if has_gamma {
        tiles += wt + 2 * b;
    }
    if has_beta {
        tiles += wt + if has_gamma { 0 } else { 2 * b };
    }
    Ok(Estimate::new(tb * tiles, out))
}

/// sum / mean / max / min: sharded inputs are rejected (tt-metal returns an invalid
/// DRAM + block-sharded spec, tt-metal#34951); CBs are input, scaler and output, 2 tiles each.
pub(crate) fn reduction(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    ctx.input(0)?;
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if out.is_sharded() {
        return Err(unsupported(format!("{} produces interleaved outputs only", ctx.name())));
    }
    let cb = 2 * ctx.in_tb(0) + 2 * DataType::BF16.tile_bytes() + 2 * ctx.out_tb();
    Ok(Estimate::new(cb, out))
}

/// prod reduces through a permute, the product, and a permute back, each materialized where
/// the output lives.
pub(crate) fn prod(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    let input = ctx.input(0)?;
    if input.layout.is_sharded() {
        return Err(unsupported("ttnn.prod takes an interleaved input"));
    }
    let out = ctx.resolve_output(NullPolicy::InheritInput0)?;
    if out.is_sharded() {
        return Err(unsupported("ttnn.prod produces interleaved outputs only"));
    }
    let temp = bytes_like(&out, &input.shape, ctx.in_dtype(0), ctx.worker());
    let cb = 2 * ctx.in_tb(0) + 2 * DataType::BF16.tile_bytes() + 2 * ctx.out_tb();
    let _ = tiles_2d(&input.shape);
    Ok(Estimate::new(cb, out).plus_tensor(3 * temp))
}
