//! Op coverage against the corpus histograms of our notes (corpus-inventory.md §3 for TTNN
//! test files, §8.1 for the TTIR model graphs counted through their TTNN lowering): the share
//! of op instances whose kind the model knows.

use opmodel::{OpKind, op_kind};

/// TTNN op instances in tt-mlir's TTNN test files.
const TTNN: &[(&str, u64)] = &[
    ("ttnn.get_device", 245),
    ("ttnn.to_tensor_spec", 125),
    ("ttnn.matmul", 91),
    ("ttnn.to_memory_config", 89),
    ("ttnn.deallocate", 80),
    ("ttnn.add", 69),
    ("ttnn.reshape", 54),
    ("ttnn.empty", 44),
    ("ttnn.conv2d", 43),
    ("ttnn.linear", 26),
    ("ttnn.permute", 24),
    ("ttnn.nlp_concat_heads_decode", 23),
    ("ttnn.to_layout", 21),
    ("ttnn.end_trace_capture", 21),
    ("ttnn.slice_static", 20),
    ("ttnn.begin_trace_capture", 20),
    ("ttnn.multiply", 19),
    ("ttnn.conv3d", 18),
    ("ttnn.scaled_dot_product_attention", 18),
    ("ttnn.all_gather", 18),
    ("ttnn.upsample", 17),
    ("ttnn.reduce_scatter", 17),
    ("ttnn.typecast", 17),
    ("ttnn.relu", 16),
    ("ttnn.constant", 15),
    ("ttnn.to_device", 15),
    ("ttnn.copy", 15),
    ("ttnn.sigmoid", 15),
    ("ttnn.write_tensor", 14),
    ("ttnn.capture_or_execute_trace", 14),
    ("ttnn.prepare_conv2d_weights", 14),
    ("ttnn.repeat", 13),
    ("ttnn.flash_mla_prefill", 13),
    ("ttnn.exp", 13),
    ("ttnn.neg", 12),
    ("ttnn.log", 12),
    ("ttnn.full", 11),
    ("ttnn.gather", 11),
    ("ttnn.sparse_matmul", 11),
    ("ttnn.argmax", 11),
    ("ttnn.generic", 10),
    ("ttnn.distributed_rms_norm", 10),
    ("ttnn.d2m_subgraph", 10),
    ("ttnn.abs", 9),
    ("ttnn.rms_norm", 9),
    ("ttnn.concat", 9),
    ("ttnn.indexer_score_dsa", 9),
    ("ttnn.arange", 8),
    ("ttnn.paged_scaled_dot_product_attention_decode", 8),
    ("ttnn.chunked_scaled_dot_product_attention", 8),
    ("ttnn.rotary_embedding_llama", 7),
    ("ttnn.conv_transpose2d", 7),
    ("ttnn.from_device", 7),
    ("ttnn.tt_lang_op", 7),
    ("ttnn.scaled_dot_product_attention_decode", 7),
    ("ttnn.all_to_all_dispatch_metadata", 7),
    ("ttnn.repeat_interleave", 7),
    ("ttnn.execute_trace", 6),
    ("ttnn.silu", 6),
    ("ttnn.all_to_all_combine", 6),
    ("ttnn.sort", 6),
    ("ttnn.prepare_conv2d_bias", 6),
    ("ttnn.distribute_tensor", 6),
    ("ttnn.nlp_create_qkv_heads_decode", 5),
    ("ttnn.subtract", 5),
    ("ttnn.paged_fill_cache", 5),
    ("ttnn.sum", 5),
    ("ttnn.fill_cache", 5),
    ("ttnn.all_to_all_dispatch", 5),
    ("ttnn.prod", 5),
    ("ttnn.all_reduce", 5),
    ("ttnn.layer_norm_pre_all_gather", 5),
    ("ttnn.dump_tensor", 4),
    ("ttnn.load_tensor", 4),
    ("ttnn.nlp_concat_heads", 4),
    ("ttnn.sampling", 4),
    ("ttnn.create_global_semaphore", 4),
    ("ttnn.reset_global_semaphore", 4),
    ("ttnn.distributed_layer_norm", 4),
    ("ttnn.group_norm", 4),
    ("ttnn.embedding", 4),
    ("ttnn.sdpa_fw", 4),
    ("ttnn.rand", 4),
    ("ttnn.rms_norm_pre_all_gather", 4),
    ("ttnn.zeros", 4),
    ("ttnn.ones", 4),
    ("ttnn.layer_norm_post_all_gather", 4),
    ("ttnn.cumsum", 4),
    ("ttnn.cumprod", 4),
    ("ttnn.aggregate_tensor", 4),
    ("ttnn.clamp_scalar", 3),
    ("ttnn.max", 3),
    ("ttnn.moe_expert_token_remap", 3),
    ("ttnn.sdpa_bw", 3),
    ("ttnn.rotary_embedding", 3),
    ("ttnn.divide", 2),
    ("ttnn.eq", 2),
    ("ttnn.gelu", 2),
    ("ttnn.max_pool2d", 2),
    ("ttnn.point_to_point", 2),
    ("ttnn.assign", 2),
    ("ttnn.tanh", 2),
    ("ttnn.paged_flash_multi_latent_attention_decode", 2),
    ("ttnn.where", 2),
    ("ttnn.pow_scalar", 2),
    ("ttnn.scatter", 2),
    ("ttnn.topk", 2),
    ("ttnn.mean", 2),
    ("ttnn.clamp_tensor", 2),
    ("ttnn.conv1d", 1),
    ("ttnn.concatenate_heads", 1),
    ("ttnn.embedding_bw", 1),
    ("ttnn.pad", 1),
    ("ttnn.moe_compute", 1),
    ("ttnn.prepare_moe_compute_w0_w1_weights", 1),
    ("ttnn.paged_update_cache", 1),
    ("ttnn.update_cache", 1),
    ("ttnn.softmax", 1),
    ("ttnn.min", 1),
    ("ttnn.logical_left_shift", 1),
    ("ttnn.cos", 1),
    ("ttnn.logical_not", 1),
    ("ttnn.relu6", 1),
    ("ttnn.logical_right_shift", 1),
    ("ttnn.cbrt", 1),
    ("ttnn.gt", 1),
    ("ttnn.tan", 1),
    ("ttnn.erfc", 1),
    ("ttnn.minimum", 1),
    ("ttnn.remainder", 1),
    ("ttnn.rsqrt", 1),
    ("ttnn.logical_or", 1),
    ("ttnn.erf", 1),
    ("ttnn.bitwise_and", 1),
    ("ttnn.bitwise_xor", 1),
    ("ttnn.logical_xor", 1),
    ("ttnn.acos", 1),
    ("ttnn.log1p", 1),
    ("ttnn.expm1", 1),
    ("ttnn.atan2", 1),
    ("ttnn.bitwise_or", 1),
    ("ttnn.asin", 1),
    ("ttnn.reciprocal", 1),
    ("ttnn.leaky_relu", 1),
    ("ttnn.atan", 1),
    ("ttnn.floor", 1),
    ("ttnn.maximum", 1),
    ("ttnn.isfinite", 1),
    ("ttnn.sign", 1),
    ("ttnn.pow_tensor", 1),
    ("ttnn.mish", 1),
    ("ttnn.bitwise_not", 1),
    ("ttnn.sin", 1),
    ("ttnn.lt", 1),
    ("ttnn.ge", 1),
    ("ttnn.ceil", 1),
    ("ttnn.ne", 1),
    ("ttnn.le", 1),
    ("ttnn.sqrt", 1),
    ("ttnn.logical_and", 1),
];

/// TTIR op instances in tt-mlir's model graphs, with the TTNN op each lowers to.
const TTIR: &[(&str, u64, &str)] = &[
    ("ttir.reshape", 4598, "ttnn.reshape"),
    ("ttir.slice_static", 1711, "ttnn.slice_static"),
    ("ttir.fill_cache", 1344, "ttnn.fill_cache"),
    ("ttir.multiply", 1205, "ttnn.multiply"),
    ("ttir.add", 1108, "ttnn.add"),
    ("ttir.broadcast", 1076, "ttnn.repeat"),
    ("ttir.typecast", 1019, "ttnn.typecast"),
    ("ttir.permute", 980, "ttnn.permute"),
    ("ttir.constant", 809, "ttnn.constant"),
    ("ttir.dot_general", 787, "ttnn.matmul"),
    ("ttir.transpose", 628, "ttnn.permute"),
    ("ttir.concat", 248, "ttnn.concat"),
    ("ttir.conv2d", 235, "ttnn.conv2d"),
    ("ttir.sum", 213, "ttnn.sum"),
    ("ttir.where", 170, "ttnn.where"),
    ("ttir.sigmoid", 152, "ttnn.sigmoid"),
    ("ttir.neg", 138, "ttnn.neg"),
    ("ttir.rms_norm", 138, "ttnn.rms_norm"),
    ("ttir.logical_not", 123, "ttnn.logical_not"),
    ("ttir.subtract", 122, "ttnn.subtract"),
    ("ttir.div", 90, "ttnn.divide"),
    ("ttir.matmul", 81, "ttnn.matmul"),
    ("ttir.max", 77, "ttnn.max"),
    ("ttir.exp", 77, "ttnn.exp"),
    ("ttir.eq", 72, "ttnn.eq"),
    ("ttir.reduce_or", 72, "ttnn.sum"),
    ("ttir.cos", 69, "ttnn.cos"),
    ("ttir.sin", 69, "ttnn.sin"),
    ("ttir.rsqrt", 63, "ttnn.rsqrt"),
    ("ttir.pow", 60, "ttnn.pow_tensor"),
    ("ttir.squeeze", 59, "ttnn.reshape"),
    ("ttir.batch_norm_inference", 53, "ttnn.batch_norm_inference"),
    ("ttir.update_cache", 52, "ttnn.update_cache"),
    ("ttir.lt", 51, "ttnn.lt"),
    ("ttir.relu", 51, "ttnn.relu"),
    ("ttir.maximum", 49, "ttnn.maximum"),
    ("ttir.embedding", 49, "ttnn.embedding"),
    ("ttir.le", 46, "ttnn.le"),
    ("ttir.unsqueeze", 44, "ttnn.reshape"),
    ("ttir.arange", 44, "ttnn.arange"),
    ("ttir.argmax", 44, "ttnn.argmax"),
    ("ttir.sqrt", 30, "ttnn.sqrt"),
    ("ttir.reciprocal", 30, "ttnn.reciprocal"),
    ("ttir.layer_norm", 26, "ttnn.layer_norm"),
    ("ttir.gelu", 20, "ttnn.gelu"),
    ("ttir.index", 20, "ttnn.slice_static"),
    ("ttir.tanh", 12, "ttnn.tanh"),
    ("ttir.softmax", 10, "ttnn.softmax"),
    ("ttir.all_reduce", 10, "ttnn.all_reduce"),
    ("ttir.mesh_partition", 8, "ttnn.mesh_partition"),
    ("ttir.max_pool2d", 5, "ttnn.max_pool2d"),
    ("ttir.pad", 3, "ttnn.pad"),
    ("ttir.distributed_rms_norm", 3, "ttnn.distributed_rms_norm"),
    ("ttir.mean", 2, "ttnn.mean"),
    ("ttir.ne", 2, "ttnn.ne"),
    ("ttir.logical_and", 2, "ttnn.logical_and"),
    ("ttir.gather", 2, "ttnn.gather"),
    ("ttir.erf", 2, "ttnn.erf"),
    ("ttir.upsample2d", 2, "ttnn.upsample"),
    ("ttir.gt", 1, "ttnn.gt"),
    ("ttir.all_gather", 1, "ttnn.all_gather"),
];

fn known(name: &str) -> bool {
    op_kind(name, &()).is_known()
}

/// How the model answers an op: per-family formulas, a fixed layout (plumbing), or the
/// DRAM-only rule for collectives that upstream exempts from its op model.
fn class(name: &str) -> &'static str {
    match op_kind(name, &()) {
        OpKind::Unknown(_) => "unknown",
        OpKind::Fixed(_) => "fixed-layout plumbing",
        OpKind::Collective(_) => "collective (DRAM only)",
        _ => "modelled",
    }
}

fn breakdown(items: impl Iterator<Item = (&'static str, u64)>) -> String {
    let mut acc: Vec<(&str, u64)> = Vec::new();
    for (op, n) in items {
        let c = class(op);
        match acc.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => *v += n,
            None => acc.push((c, n)),
        }
    }
    acc.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    acc.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

fn report() -> String {
    let mut out = String::new();
    let total: u64 = TTNN.iter().map(|(_, n)| n).sum();
    let hit: u64 = TTNN.iter().filter(|(op, _)| known(op)).map(|(_, n)| n).sum();
    let mut missing: Vec<(&str, u64)> =
        TTNN.iter().filter(|(op, _)| !known(op)).map(|(op, n)| (*op, *n)).collect();
    missing.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    out.push_str(&format!(
        "ttnn test corpus: {hit} of {total} op instances known ({:.1}%), {} of {} op names\n",
        100.0 * hit as f64 / total as f64,
        TTNN.len() - missing.len(),
        TTNN.len()
    ));
    out.push_str(&format!("  by kind: {}\n", breakdown(TTNN.iter().copied())));
    for (op, n) in &missing {
        out.push_str(&format!("  unknown: {op} ({n})\n"));
    }
    let total: u64 = TTIR.iter().map(|(_, n, _)| n).sum();
    let hit: u64 = TTIR.iter().filter(|(_, _, op)| known(op)).map(|(_, n, _)| n).sum();
    out.push_str(&format!(
        "ttir model graphs via their ttnn lowering: {hit} of {total} op instances known ({:.1}%)\n",
        100.0 * hit as f64 / total as f64
    ));
    out.push_str(&format!("  by kind: {}\n", breakdown(TTIR.iter().map(|(_, n, op)| (*op, *n)))));
    for (ttir, n, op) in TTIR.iter().filter(|(_, _, op)| !known(op)) {
        out.push_str(&format!("  unknown: {ttir} -> {op} ({n})\n"));
    }
    out
}

#[test]
fn op_coverage_reaches_the_corpus_histograms() {
    let text = report();
    expect_test::expect![[r#"
        ttnn test corpus: 1725 of 1730 op instances known (99.7%), 157 of 160 op names
          by kind: modelled 1028, fixed-layout plumbing 627, collective (DRAM only) 70, unknown 5
          unknown: ttnn.moe_expert_token_remap (3)
          unknown: ttnn.moe_compute (1)
          unknown: ttnn.prepare_moe_compute_w0_w1_weights (1)
        ttir model graphs via their ttnn lowering: 18267 of 18267 op instances known (100.0%)
          by kind: modelled 16852, fixed-layout plumbing 1396, collective (DRAM only) 19
    "#]]
    .assert_eq(&text);
}
