//! How many operands and results each op the op model knows takes, from the ops' ODS
//! declarations in tt-mlir (optional operands widen the range, variadic ones leave it
//! open). Lowering reports an op outside its range: a `ttnn.matmul` with one operand would
//! otherwise reach the op model, which reads operands by position.

/// No upper bound: the op has a variadic operand or result group.
pub const ANY: u32 = u32::MAX;

/// The operand and result counts an op accepts, both inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arity {
    pub min_operands: u32,
    pub max_operands: u32,
    pub min_results: u32,
    pub max_results: u32,
}

impl Arity {
    const fn new(
        min_operands: u32,
        max_operands: u32,
        min_results: u32,
        max_results: u32,
    ) -> Arity {
        Arity { min_operands, max_operands, min_results, max_results }
    }
}

/// The arity of the op named `name` (`ttnn.matmul`), if the table has it.
#[must_use]
pub fn op_arity(name: &str) -> Option<Arity> {
    let i = ARITIES.binary_search_by(|(n, _)| n.cmp(&name)).ok()?;
    Some(ARITIES[i].1)
}

/// Sorted by name, for the binary search.
const ARITIES: &[(&str, Arity)] = &[
    ("ttnn.abs", Arity::new(1, 1, 1, 1)),
    ("ttnn.acos", Arity::new(1, 1, 1, 1)),
    ("ttnn.add", Arity::new(2, 2, 1, 1)),
    ("ttnn.aggregate_tensor", Arity::new(2, 2, 1, 1)),
    ("ttnn.all_gather", Arity::new(1, 1, 1, 1)),
    ("ttnn.all_reduce", Arity::new(1, 1, 1, 1)),
    ("ttnn.all_reduce_async", Arity::new(1, 1, 1, 1)),
    ("ttnn.all_to_all_combine", Arity::new(3, 3, 1, 1)),
    ("ttnn.all_to_all_dispatch", Arity::new(3, 3, 2, 2)),
    ("ttnn.all_to_all_dispatch_metadata", Arity::new(4, 8, 3, 3)),
    ("ttnn.alloc", Arity::new(0, 0, 1, 1)),
    ("ttnn.arange", Arity::new(0, 1, 1, 1)),
    ("ttnn.argmax", Arity::new(1, 1, 1, 1)),
    ("ttnn.asin", Arity::new(1, 1, 1, 1)),
    ("ttnn.asinh", Arity::new(1, 1, 1, 1)),
    ("ttnn.assign", Arity::new(1, 1, 1, 1)),
    ("ttnn.atan", Arity::new(1, 1, 1, 1)),
    ("ttnn.atan2", Arity::new(2, 2, 1, 1)),
    ("ttnn.avg_pool2d", Arity::new(1, 1, 1, 1)),
    ("ttnn.batch_norm_inference", Arity::new(1, 5, 1, 1)),
    ("ttnn.batch_norm_training", Arity::new(1, 5, 1, 1)),
    ("ttnn.begin_trace_capture", Arity::new(1, 1, 1, 1)),
    ("ttnn.bitcast_convert", Arity::new(1, 1, 1, 1)),
    ("ttnn.bitwise_and", Arity::new(2, 2, 1, 1)),
    ("ttnn.bitwise_not", Arity::new(1, 1, 1, 1)),
    ("ttnn.bitwise_or", Arity::new(2, 2, 1, 1)),
    ("ttnn.bitwise_xor", Arity::new(2, 2, 1, 1)),
    ("ttnn.capture_or_execute_trace", Arity::new(1, ANY, 0, ANY)),
    ("ttnn.cbrt", Arity::new(1, 1, 1, 1)),
    ("ttnn.ceil", Arity::new(1, 1, 1, 1)),
    ("ttnn.chunked_scaled_dot_product_attention", Arity::new(5, 5, 1, 1)),
    ("ttnn.clamp_scalar", Arity::new(1, 1, 1, 1)),
    ("ttnn.clamp_tensor", Arity::new(3, 3, 1, 1)),
    ("ttnn.concat", Arity::new(0, ANY, 1, 1)),
    ("ttnn.concatenate_heads", Arity::new(1, 1, 1, 1)),
    ("ttnn.constant", Arity::new(0, 1, 1, 1)),
    ("ttnn.conv1d", Arity::new(3, 4, 1, 1)),
    ("ttnn.conv2d", Arity::new(3, 4, 1, 1)),
    ("ttnn.conv3d", Arity::new(3, 4, 1, 1)),
    ("ttnn.conv_transpose2d", Arity::new(3, 4, 1, 1)),
    ("ttnn.copy", Arity::new(2, 2, 0, 0)),
    ("ttnn.cos", Arity::new(1, 1, 1, 1)),
    ("ttnn.create_global_semaphore", Arity::new(1, 1, 1, 1)),
    ("ttnn.cumprod", Arity::new(1, 1, 1, 1)),
    ("ttnn.cumsum", Arity::new(1, 1, 1, 1)),
    ("ttnn.d2m_subgraph", Arity::new(0, ANY, 0, ANY)),
    ("ttnn.deallocate", Arity::new(1, 1, 0, 0)),
    ("ttnn.dequantize", Arity::new(3, 3, 1, 1)),
    ("ttnn.distribute_tensor", Arity::new(2, 2, 1, 1)),
    ("ttnn.distributed_layer_norm", Arity::new(2, 5, 1, 1)),
    ("ttnn.distributed_rms_norm", Arity::new(2, 6, 1, 1)),
    ("ttnn.divide", Arity::new(2, 2, 1, 1)),
    ("ttnn.dropout", Arity::new(1, 1, 1, 1)),
    ("ttnn.dump_tensor", Arity::new(1, 1, 0, 0)),
    ("ttnn.embedding", Arity::new(2, 2, 1, 1)),
    ("ttnn.embedding_bw", Arity::new(3, 3, 1, 1)),
    ("ttnn.empty", Arity::new(1, 1, 1, 1)),
    ("ttnn.end_trace_capture", Arity::new(2, 2, 0, 0)),
    ("ttnn.eq", Arity::new(2, 2, 1, 1)),
    ("ttnn.erf", Arity::new(1, 1, 1, 1)),
    ("ttnn.erfc", Arity::new(1, 1, 1, 1)),
    ("ttnn.execute_trace", Arity::new(2, 2, 0, 0)),
    ("ttnn.exp", Arity::new(1, 1, 1, 1)),
    ("ttnn.expm1", Arity::new(1, 1, 1, 1)),
    ("ttnn.fill_cache", Arity::new(2, 2, 0, 0)),
    ("ttnn.flash_mla_prefill", Arity::new(2, 4, 1, 1)),
    ("ttnn.floor", Arity::new(1, 1, 1, 1)),
    ("ttnn.from_device", Arity::new(1, 1, 1, 1)),
    ("ttnn.full", Arity::new(0, 1, 1, 1)),
    ("ttnn.gather", Arity::new(2, 2, 1, 1)),
    ("ttnn.ge", Arity::new(2, 2, 1, 1)),
    ("ttnn.gelu", Arity::new(1, 1, 1, 1)),
    ("ttnn.gelu_bw", Arity::new(2, 2, 1, 1)),
    ("ttnn.generic", Arity::new(0, ANY, 0, 0)),
    ("ttnn.get_device", Arity::new(0, 0, 1, 1)),
    ("ttnn.global_avg_pool2d", Arity::new(1, 1, 1, 1)),
    ("ttnn.group_norm", Arity::new(1, 4, 1, 1)),
    ("ttnn.gt", Arity::new(2, 2, 1, 1)),
    ("ttnn.hardsigmoid", Arity::new(1, 1, 1, 1)),
    ("ttnn.indexer_score_dsa", Arity::new(3, 3, 1, 1)),
    ("ttnn.isfinite", Arity::new(1, 1, 1, 1)),
    ("ttnn.layer_norm", Arity::new(1, 3, 1, 1)),
    ("ttnn.layer_norm_post_all_gather", Arity::new(2, 4, 1, 1)),
    ("ttnn.layer_norm_pre_all_gather", Arity::new(1, 3, 1, 1)),
    ("ttnn.le", Arity::new(2, 2, 1, 1)),
    ("ttnn.leaky_relu", Arity::new(1, 1, 1, 1)),
    ("ttnn.linear", Arity::new(2, 3, 1, 1)),
    ("ttnn.load_tensor", Arity::new(0, 1, 1, 1)),
    ("ttnn.log", Arity::new(1, 1, 1, 1)),
    ("ttnn.log1p", Arity::new(1, 1, 1, 1)),
    ("ttnn.logical_and", Arity::new(2, 2, 1, 1)),
    ("ttnn.logical_left_shift", Arity::new(2, 2, 1, 1)),
    ("ttnn.logical_not", Arity::new(1, 1, 1, 1)),
    ("ttnn.logical_or", Arity::new(2, 2, 1, 1)),
    ("ttnn.logical_right_shift", Arity::new(2, 2, 1, 1)),
    ("ttnn.logical_xor", Arity::new(2, 2, 1, 1)),
    ("ttnn.lt", Arity::new(2, 2, 1, 1)),
    ("ttnn.matmul", Arity::new(2, 2, 1, 1)),
    ("ttnn.max", Arity::new(1, 1, 1, 1)),
    ("ttnn.max_pool2d", Arity::new(1, 1, 1, 1)),
    ("ttnn.max_pool2d_with_indices", Arity::new(1, 1, 2, 2)),
    ("ttnn.maximum", Arity::new(2, 2, 1, 1)),
    ("ttnn.mean", Arity::new(1, 1, 1, 1)),
    ("ttnn.mesh_partition", Arity::new(1, 1, 1, 1)),
    ("ttnn.min", Arity::new(1, 1, 1, 1)),
    ("ttnn.minimum", Arity::new(2, 2, 1, 1)),
    ("ttnn.mish", Arity::new(1, 1, 1, 1)),
    ("ttnn.multiply", Arity::new(2, 2, 1, 1)),
    ("ttnn.ne", Arity::new(2, 2, 1, 1)),
    ("ttnn.neg", Arity::new(1, 1, 1, 1)),
    ("ttnn.nlp_concat_heads", Arity::new(1, 1, 1, 1)),
    ("ttnn.nlp_concat_heads_decode", Arity::new(1, 1, 1, 1)),
    ("ttnn.nlp_create_qkv_heads_decode", Arity::new(1, 2, 3, 3)),
    ("ttnn.ones", Arity::new(0, 1, 1, 1)),
    ("ttnn.pad", Arity::new(1, 1, 1, 1)),
    ("ttnn.paged_fill_cache", Arity::new(3, 4, 0, 0)),
    ("ttnn.paged_flash_multi_latent_attention_decode", Arity::new(3, 7, 1, 1)),
    ("ttnn.paged_scaled_dot_product_attention_decode", Arity::new(4, 7, 1, 1)),
    ("ttnn.paged_update_cache", Arity::new(3, 4, 0, 0)),
    ("ttnn.permute", Arity::new(1, 1, 1, 1)),
    ("ttnn.point_to_point", Arity::new(1, 2, 1, 1)),
    ("ttnn.pow_scalar", Arity::new(1, 1, 1, 1)),
    ("ttnn.pow_tensor", Arity::new(2, 2, 1, 1)),
    ("ttnn.prepare_conv2d_bias", Arity::new(2, 2, 1, 1)),
    ("ttnn.prepare_conv2d_weights", Arity::new(2, 2, 1, 1)),
    ("ttnn.prepare_conv3d_weights", Arity::new(2, 2, 1, 1)),
    ("ttnn.prepare_conv_transpose2d_bias", Arity::new(2, 2, 1, 1)),
    ("ttnn.prepare_conv_transpose2d_weights", Arity::new(2, 2, 1, 1)),
    ("ttnn.prod", Arity::new(1, 1, 1, 1)),
    ("ttnn.quantize", Arity::new(3, 3, 1, 1)),
    ("ttnn.rand", Arity::new(1, 1, 1, 1)),
    ("ttnn.reciprocal", Arity::new(1, 1, 1, 1)),
    ("ttnn.reduce_scatter", Arity::new(1, 1, 1, 1)),
    ("ttnn.relu", Arity::new(1, 1, 1, 1)),
    ("ttnn.relu6", Arity::new(1, 1, 1, 1)),
    ("ttnn.remainder", Arity::new(2, 2, 1, 1)),
    ("ttnn.repeat", Arity::new(1, 1, 1, 1)),
    ("ttnn.repeat_interleave", Arity::new(1, 1, 1, 1)),
    ("ttnn.requantize", Arity::new(5, 5, 1, 1)),
    ("ttnn.reset_global_semaphore", Arity::new(1, 1, 0, 0)),
    ("ttnn.reshape", Arity::new(1, 1, 1, 1)),
    ("ttnn.rms_norm", Arity::new(1, 3, 1, 1)),
    ("ttnn.rms_norm_pre_all_gather", Arity::new(1, 2, 1, 1)),
    ("ttnn.rotary_embedding", Arity::new(3, 3, 1, 1)),
    ("ttnn.rotary_embedding_llama", Arity::new(4, 4, 1, 1)),
    ("ttnn.rsqrt", Arity::new(1, 1, 1, 1)),
    ("ttnn.sampling", Arity::new(5, 5, 1, 1)),
    ("ttnn.scaled_dot_product_attention", Arity::new(3, 5, 1, 1)),
    ("ttnn.scaled_dot_product_attention_decode", Arity::new(3, 6, 1, 1)),
    ("ttnn.scatter", Arity::new(3, 3, 1, 1)),
    ("ttnn.sdpa_bw", Arity::new(6, 7, 3, 3)),
    ("ttnn.sdpa_fw", Arity::new(3, 4, 1, 2)),
    ("ttnn.sigmoid", Arity::new(1, 1, 1, 1)),
    ("ttnn.sign", Arity::new(1, 1, 1, 1)),
    ("ttnn.silu", Arity::new(1, 1, 1, 1)),
    ("ttnn.sin", Arity::new(1, 1, 1, 1)),
    ("ttnn.slice_dynamic", Arity::new(3, 3, 1, 1)),
    ("ttnn.slice_static", Arity::new(1, 1, 1, 1)),
    ("ttnn.softmax", Arity::new(1, 1, 1, 1)),
    ("ttnn.sort", Arity::new(1, 1, 2, 2)),
    ("ttnn.sparse_matmul", Arity::new(3, 3, 1, 1)),
    ("ttnn.split_query_key_value_and_split_heads", Arity::new(1, 2, 3, 3)),
    ("ttnn.sqrt", Arity::new(1, 1, 1, 1)),
    ("ttnn.subtract", Arity::new(2, 2, 1, 1)),
    ("ttnn.sum", Arity::new(1, 1, 1, 1)),
    ("ttnn.tan", Arity::new(1, 1, 1, 1)),
    ("ttnn.tanh", Arity::new(1, 1, 1, 1)),
    ("ttnn.to_device", Arity::new(2, 2, 1, 1)),
    // Older tt-mlir took an optional `device` operand (kept in its legacy optimizer tests).
    ("ttnn.to_layout", Arity::new(1, 2, 1, 1)),
    ("ttnn.to_memory_config", Arity::new(1, 1, 1, 1)),
    ("ttnn.to_tensor_spec", Arity::new(1, 1, 1, 1)),
    ("ttnn.topk", Arity::new(1, 1, 2, 2)),
    ("ttnn.transpose", Arity::new(1, 1, 1, 1)),
    ("ttnn.tt_lang_op", Arity::new(0, ANY, 0, ANY)),
    ("ttnn.typecast", Arity::new(1, 1, 1, 1)),
    ("ttnn.update_cache", Arity::new(3, 3, 0, 0)),
    ("ttnn.upsample", Arity::new(1, 1, 1, 1)),
    ("ttnn.where", Arity::new(3, 3, 1, 1)),
    ("ttnn.write_tensor", Arity::new(2, 2, 0, 0)),
    ("ttnn.zeros", Arity::new(0, 1, 1, 1)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpKind, op_kind};

    #[test]
    fn the_table_is_sorted_and_names_only_ops_the_model_knows() {
        for w in ARITIES.windows(2) {
            assert!(w[0].0 < w[1].0, "{} before {}", w[0].0, w[1].0);
        }
        for (name, a) in ARITIES {
            assert!(!matches!(op_kind(name, &()), OpKind::Unknown(_)), "{name} is unknown");
            assert!(a.min_operands <= a.max_operands && a.min_results <= a.max_results, "{name}");
        }
    }

    #[test]
    fn matmul_takes_two_operands_and_concat_any_number() {
        assert_eq!(op_arity("ttnn.matmul"), Some(Arity::new(2, 2, 1, 1)));
        assert_eq!(op_arity("ttnn.concat"), Some(Arity::new(0, ANY, 1, 1)));
        assert_eq!(op_arity("ttnn.frobnicate"), None);
    }
}
