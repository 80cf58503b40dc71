//! tt-mlir's `ttnn-set-compute-kernel-config` pass, for the one knob the import takes: the
//! `compute-cfg-math-fidelity` pipeline option.
//!
//! tt-mlir runs the pass after its workarounds and weight-dtype conversion, before const-eval
//! and the optimizer, and writes the option's fidelity into the `compute_config` of every op
//! that has one (its `TTNN_ComputeKernelConfigOpInterface`), unless the op already names a
//! fidelity. The optimizer keeps an op's compute config, and the cost model reads the
//! fidelity of matmuls and convolutions from it (`docs/cost-model.md`).

use super::{Form, FuncOut};

/// The TTNN ops that carry a `compute_config` in tt-mlir (`TTNN_ComputeKernelConfigOpInterface`
/// in its `TTNNOps.td`).
const COMPUTE_CONFIG_OPS: &[&str] = &[
    "ttnn.batch_norm_inference",
    "ttnn.batch_norm_training",
    "ttnn.conv1d",
    "ttnn.conv2d",
    "ttnn.conv3d",
    "ttnn.conv_transpose2d",
    "ttnn.distributed_rms_norm",
    "ttnn.dit_rms_norm_unary_fused",
    "ttnn.layer_norm_post_all_gather",
    "ttnn.layer_norm_pre_all_gather",
    "ttnn.linear",
    "ttnn.matmul",
    "ttnn.max",
    "ttnn.mean",
    "ttnn.min",
    "ttnn.prepare_conv2d_bias",
    "ttnn.prepare_conv2d_weights",
    "ttnn.prepare_conv_transpose2d_bias",
    "ttnn.prepare_conv_transpose2d_weights",
    "ttnn.reduce_scatter",
    "ttnn.rms_norm",
    "ttnn.rms_norm_pre_all_gather",
    "ttnn.rotary_embedding",
    "ttnn.rotary_embedding_llama",
    "ttnn.softmax",
    "ttnn.sum",
];

impl FuncOut {
    /// Sets `math_fidelity` in the `compute_config` of every op that has one. No op the
    /// import writes carries a `compute_config` of its own, so each gets one naming only the
    /// fidelity; ops kept as written (`raw_props`) are TTIR ops and are left alone.
    ///
    /// Only the fidelity is written: tt-mlir's default pipeline also sets `fp32_dest_acc_en`
    /// (its `compute-cfg-fp32-dest-acc-en`, true at optimization level 0), which the import
    /// leaves out with or without this option.
    pub(crate) fn set_math_fidelity(&mut self, fidelity: ttnn_types::MathFidelity) {
        let config =
            format!("#ttnn.device_compute_kernel_config<math_fidelity = {}>", fidelity.keyword());
        for op in &mut self.ops {
            let generic = matches!(op.form, Form::Generic { raw_props: None, .. });
            if !generic
                || !COMPUTE_CONFIG_OPS.contains(&op.name.as_str())
                || op.props.iter().any(|(k, _)| k == "compute_config")
            {
                continue;
            }
            op.props.push(("compute_config".to_owned(), config.clone()));
        }
    }
}
