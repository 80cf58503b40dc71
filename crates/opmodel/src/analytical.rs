//! The analytical model: dispatch to the op families, then the common budget check.

use target::Target;

use crate::{
    OpConstraints, OpError, OpKind, OpModel, OpQuery, conv, data_movement, eltwise, matmul, norm,
    transformer,
    util::{Ctx, Estimate, invalid, shape_text},
};

/// The hardware-free op model: closed-form CB and tensor sizes per op family, tt-mlir's
/// hard-coded op rules and the tt-metal validation rules we could pin down.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnalyticalModel;

impl OpModel for AnalyticalModel {
    fn query(&self, target: &Target, q: &OpQuery) -> Result<OpConstraints, OpError> {
        let ctx = Ctx { target, q };
        let est = estimate(&ctx)?;
        let peak = est.peak.unwrap_or_else(|| est.cb.saturating_add(est.tensor));
        let needed = peak.saturating_add(q.l1_in_use);
        let available = target.usable_l1_per_core();
        if needed > available {
            return Err(OpError::OutOfMemory { needed, available });
        }
        Ok(OpConstraints {
            cb_peak: est.cb,
            tensor_peak: est.tensor,
            peak,
            output_bytes: est.output.l1_bytes_per_core(),
            output_layout: est.output,
            config: est.config,
        })
    }
}

/// Real tensors are far below these bounds (a chip has at most tens of GiB of DRAM); staying
/// under them keeps every per-core formula far from u64 overflow.
const MAX_DIM: u64 = 1 << 32;
const MAX_VOLUME: u64 = 1 << 48;

fn check_sizes(ctx: &Ctx<'_>) -> Result<(), OpError> {
    let shapes = ctx.q.inputs.iter().map(|t| &t.shape).chain(std::iter::once(&ctx.q.output_shape));
    for shape in shapes {
        let volume = shape.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
        if shape.iter().any(|d| *d > MAX_DIM) || volume.is_none_or(|v| v > MAX_VOLUME) {
            return Err(invalid(format!(
                "{}: a {} tensor is too large to model",
                ctx.name(),
                shape_text(shape)
            )));
        }
    }
    Ok(())
}

fn estimate(ctx: &Ctx<'_>) -> Result<Estimate, OpError> {
    check_sizes(ctx)?;
    match &ctx.q.kind {
        // Host transfers and creation ops may see host tensors; everything else must not.
        OpKind::Fixed(_) | OpKind::Creation(_) => return eltwise::fixed_or_creation(ctx),
        OpKind::ToLayout => return data_movement::to_layout(ctx),
        _ => ctx.check_inputs()?,
    }
    match &ctx.q.kind {
        OpKind::Unary(op) => eltwise::unary(ctx, *op),
        OpKind::Binary(op) => eltwise::binary(ctx, *op),
        OpKind::Ternary(_) => eltwise::ternary(ctx),
        OpKind::Typecast => eltwise::typecast(ctx),
        OpKind::Quantize { .. } => eltwise::quantize(ctx),
        OpKind::Matmul(attrs) | OpKind::Linear(attrs) => matmul::matmul(ctx, attrs),
        OpKind::SparseMatmul => matmul::sparse_matmul(ctx),
        OpKind::Conv2d(a) | OpKind::Conv1d(a) => conv::conv2d(ctx, a, false),
        OpKind::ConvTranspose2d(a) => conv::conv2d(ctx, a, true),
        OpKind::Conv3d(a) => conv::conv3d(ctx, a),
        OpKind::Pool2d { op, attrs } => conv::pool2d(ctx, *op, attrs),
        OpKind::Upsample { scale } => conv::upsample(ctx, *scale),
        OpKind::Concat { dim } => data_movement::concat(ctx, *dim),
        OpKind::Reshape => data_movement::reshape(ctx),
        OpKind::Permute { permutation } => data_movement::permute(ctx, permutation),
        OpKind::Transpose { .. } => data_movement::permute(ctx, &[]),
        OpKind::SliceStatic | OpKind::SliceDynamic => data_movement::slice(ctx),
        OpKind::Pad { padding } => data_movement::pad(ctx, padding),
        OpKind::Repeat { repeat_dims } => data_movement::repeat(ctx, repeat_dims),
        OpKind::RepeatInterleave { .. } => data_movement::repeat(ctx, &[]),
        OpKind::ToMemoryConfig => data_movement::to_memory_config(ctx),
        OpKind::Embedding => data_movement::embedding(ctx),
        OpKind::EmbeddingBw => data_movement::embedding_bw(ctx),
        OpKind::Gather { .. } | OpKind::Scatter { .. } => data_movement::gather(ctx),
        OpKind::Sort { .. } | OpKind::Topk { .. } => data_movement::sort(ctx),
        OpKind::Argmax { .. } => data_movement::argmax(ctx),
        OpKind::Cumulative { .. } => data_movement::cumulative(ctx),
        OpKind::Sampling => data_movement::sampling(ctx),
        OpKind::Softmax { dim, .. } => norm::softmax(ctx, *dim),
        OpKind::Norm(op) => norm::norm(ctx, *op),
        OpKind::Reduction { .. } => norm::reduction(ctx),
        OpKind::Prod { .. } => norm::prod(ctx),
        OpKind::Sdpa(op) => transformer::sdpa(ctx, *op),
        OpKind::RotaryEmbedding { llama } => transformer::rotary(ctx, *llama),
        OpKind::Heads(op) => transformer::heads(ctx, *op),
        OpKind::Collective(_) => transformer::dram_only(ctx, false),
        OpKind::D2MSubgraph => eltwise::d2m_subgraph(ctx),
        OpKind::Unknown(_) => transformer::dram_only(ctx, true),
        OpKind::Fixed(_) | OpKind::Creation(_) => eltwise::fixed_or_creation(ctx),
        OpKind::ToLayout => data_movement::to_layout(ctx),
    }
}
