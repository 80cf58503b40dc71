//! Op-specific configs: `#ttnn.conv2d_config`, `#ttnn.conv2d_slice_config`, matmul program
//! configs, compute kernel configs.
//!
//! Every field of these attributes is optional in IR (struct syntax, any order), so each is an
//! `Option` here and only the fields that are set are printed.

use std::fmt::{self, Write as _};

use crate::{CoreCoord, CoreRangeSet, DataType, PageLayout, TensorMemoryLayout};

/// `#ttnn.unary_with_param<op_type = relu, params = [...]>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnaryWithParam {
    pub op_type: String,
    /// Parameters as normalized text (floats keep their printed spelling).
    pub params: Vec<String>,
}

impl fmt::Display for UnaryWithParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<op_type = {}", self.op_type)?;
        if !self.params.is_empty() {
            write!(f, ", params = [{}]", self.params.join(", "))?;
        }
        f.write_str(">")
    }
}

/// `#ttnn.conv2d_config<...>`: conv2d's knobs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Conv2dConfig {
    pub weights_dtype: Option<DataType>,
    pub activation: Option<UnaryWithParam>,
    pub deallocate_activation: Option<bool>,
    pub reallocate_halo_output: Option<bool>,
    pub act_block_h_override: Option<u64>,
    pub act_block_w_div: Option<u64>,
    pub reshard_if_not_optimal: Option<bool>,
    pub override_sharding_config: Option<bool>,
    pub shard_layout: Option<TensorMemoryLayout>,
    pub core_grid: Option<CoreRangeSet>,
    pub transpose_shards: Option<bool>,
    pub output_layout: Option<PageLayout>,
    pub enable_act_double_buffer: Option<bool>,
    pub enable_weights_double_buffer: Option<bool>,
    pub enable_kernel_stride_folding: Option<bool>,
    pub config_tensors_in_dram: Option<bool>,
}

impl Conv2dConfig {
    /// True when every field the optimizer searches is pinned.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.act_block_h_override.is_some() && self.deallocate_activation.is_some()
    }
}

impl fmt::Display for Conv2dConfig {
    /// Prints `#ttnn.conv2d_config<...>` with the set fields in declaration order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(v) = self.weights_dtype {
            parts.push(format!("weights_dtype = {v}"));
        }
        if let Some(v) = &self.activation {
            parts.push(format!("activation = {v}"));
        }
        let flags: [(&str, Option<bool>); 2] = [
            ("deallocate_activation", self.deallocate_activation),
            ("reallocate_halo_output", self.reallocate_halo_output),
        ];
        for (k, v) in flags {
            if let Some(v) = v {
                parts.push(format!("{k} = {v}"));
            }
        }
        if let Some(v) = self.act_block_h_override {
            parts.push(format!("act_block_h_override = {v}"));
        }
        if let Some(v) = self.act_block_w_div {
            parts.push(format!("act_block_w_div = {v}"));
        }
        let flags: [(&str, Option<bool>); 2] = [
            ("reshard_if_not_optimal", self.reshard_if_not_optimal),
            ("override_sharding_config", self.override_sharding_config),
        ];
        for (k, v) in flags {
            if let Some(v) = v {
                parts.push(format!("{k} = {v}"));
            }
        }
        if let Some(v) = self.shard_layout {
            parts.push(format!("shard_layout = {v}"));
        }
        if let Some(v) = &self.core_grid {
            parts.push(format!("core_grid = {v}"));
        }
        if let Some(v) = self.transpose_shards {
            parts.push(format!("transpose_shards = {v}"));
        }
        if let Some(v) = self.output_layout {
            parts.push(format!("output_layout = {v}"));
        }
        let flags: [(&str, Option<bool>); 4] = [
            ("enable_act_double_buffer", self.enable_act_double_buffer),
            ("enable_weights_double_buffer", self.enable_weights_double_buffer),
            ("enable_kernel_stride_folding", self.enable_kernel_stride_folding),
            ("config_tensors_in_dram", self.config_tensors_in_dram),
        ];
        for (k, v) in flags {
            if let Some(v) = v {
                parts.push(format!("{k} = {v}"));
            }
        }
        write!(f, "#ttnn.conv2d_config<{}>", parts.join(", "))
    }
}

/// How a conv2d is cut into pieces that each fit L1 (`Conv2dSliceConfig::SliceType` in
/// tt-metal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Conv2dSliceType {
    /// The whole conv runs in L1 at once.
    L1Full,
    /// Input and output stay in DRAM; the conv runs over bands of output rows.
    DramHeight,
    /// Input and output stay in DRAM; the conv runs over bands of output columns.
    DramWidth,
}

impl Conv2dSliceType {
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<Conv2dSliceType> {
        Some(match s {
            "l1_full" => Conv2dSliceType::L1Full,
            "dram_height" => Conv2dSliceType::DramHeight,
            "dram_width" => Conv2dSliceType::DramWidth,
            _ => return None,
        })
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            Conv2dSliceType::L1Full => "l1_full",
            Conv2dSliceType::DramHeight => "dram_height",
            Conv2dSliceType::DramWidth => "dram_width",
        }
    }

    /// True for the two DRAM slice types.
    #[must_use]
    pub fn is_dram(self) -> bool {
        self != Conv2dSliceType::L1Full
    }
}

impl fmt::Display for Conv2dSliceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// `#ttnn.conv2d_slice_config<dram_height, 4>`: the slice type and the number of slices, where
/// 0 lets tt-metal pick the smallest number that fits the free L1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Conv2dSliceConfig {
    pub slice_type: Conv2dSliceType,
    pub num_slices: u64,
}

impl fmt::Display for Conv2dSliceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#ttnn.conv2d_slice_config<{}, {}>", self.slice_type, self.num_slices)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MathFidelity {
    LoFi,
    HiFi2,
    HiFi3,
    HiFi4,
}

impl MathFidelity {
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<MathFidelity> {
        Some(match s {
            "lofi" => MathFidelity::LoFi,
            "hifi2" => MathFidelity::HiFi2,
            "hifi3" => MathFidelity::HiFi3,
            "hifi4" => MathFidelity::HiFi4,
            _ => return None,
        })
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            MathFidelity::LoFi => "lofi",
            MathFidelity::HiFi2 => "hifi2",
            MathFidelity::HiFi3 => "hifi3",
            MathFidelity::HiFi4 => "hifi4",
        }
    }
}

/// `#ttnn.device_compute_kernel_config<...>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DeviceComputeKernelConfig {
    pub math_fidelity: Option<MathFidelity>,
    pub math_approx_mode: Option<bool>,
    pub fp32_dest_acc_en: Option<bool>,
    pub packer_l1_acc: Option<bool>,
    pub dst_full_sync_en: Option<bool>,
}

impl DeviceComputeKernelConfig {
    /// The DST register budget in tiles for matmul subblocks: 8 by default, doubled with full
    /// sync, halved with fp32 accumulation.
    #[must_use]
    pub fn max_subblock_tiles(&self) -> u64 {
        let mut n = 8;
        if self.dst_full_sync_en == Some(true) {
            n *= 2;
        }
        if self.fp32_dest_acc_en == Some(true) {
            n /= 2;
        }
        n
    }
}

/// The matmul program configs tt-mlir attaches to `ttnn.matmul` / `ttnn.linear`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatmulProgramConfig {
    /// `#ttnn.matmul_multi_core_reuse_program_config`.
    MultiCoreReuse {
        grid: CoreCoord,
        in0_block_w: u64,
        out_subblock_h: u64,
        out_subblock_w: u64,
        per_core_m: u64,
        per_core_n: u64,
    },
    /// `#ttnn.matmul_multi_core_reuse_multi_cast_program_config` (2D multicast).
    MultiCast2D {
        grid: CoreCoord,
        in0_block_w: u64,
        out_subblock_h: u64,
        out_subblock_w: u64,
        out_block_h: u64,
        out_block_w: u64,
        per_core_m: u64,
        per_core_n: u64,
        transpose_mcast: bool,
        fused_activation: Option<UnaryWithParam>,
        fuse_batch: bool,
    },
    /// `#ttnn.matmul_multi_core_reuse_multi_cast_1d_program_config`.
    MultiCast1D {
        grid: CoreCoord,
        in0_block_w: u64,
        out_subblock_h: u64,
        out_subblock_w: u64,
        out_block_h: u64,
        out_block_w: u64,
        per_core_m: u64,
        per_core_n: u64,
        fuse_batch: bool,
        fused_activation: Option<UnaryWithParam>,
        mcast_in0: bool,
    },
    /// `#ttnn.matmul_multi_core_reuse_multi_cast_dram_sharded_program_config`.
    DramSharded {
        in0_block_w: u64,
        per_core_m: u64,
        per_core_n: u64,
        fused_activation: Option<UnaryWithParam>,
    },
}

impl MatmulProgramConfig {
    #[must_use]
    pub fn per_core(&self) -> (u64, u64) {
        match self {
            MatmulProgramConfig::MultiCoreReuse { per_core_m, per_core_n, .. }
            | MatmulProgramConfig::MultiCast2D { per_core_m, per_core_n, .. }
            | MatmulProgramConfig::MultiCast1D { per_core_m, per_core_n, .. }
            | MatmulProgramConfig::DramSharded { per_core_m, per_core_n, .. } => {
                (*per_core_m, *per_core_n)
            }
        }
    }

    #[must_use]
    pub fn in0_block_w(&self) -> u64 {
        match self {
            MatmulProgramConfig::MultiCoreReuse { in0_block_w, .. }
            | MatmulProgramConfig::MultiCast2D { in0_block_w, .. }
            | MatmulProgramConfig::MultiCast1D { in0_block_w, .. }
            | MatmulProgramConfig::DramSharded { in0_block_w, .. } => *in0_block_w,
        }
    }

    /// Output subblock (h, w) in tiles; the DRAM-sharded config fixes it at 1x1.
    #[must_use]
    pub fn out_subblock(&self) -> (u64, u64) {
        match self {
            MatmulProgramConfig::MultiCoreReuse { out_subblock_h, out_subblock_w, .. }
            | MatmulProgramConfig::MultiCast2D { out_subblock_h, out_subblock_w, .. }
            | MatmulProgramConfig::MultiCast1D { out_subblock_h, out_subblock_w, .. } => {
                (*out_subblock_h, *out_subblock_w)
            }
            MatmulProgramConfig::DramSharded { .. } => (1, 1),
        }
    }

    #[must_use]
    pub fn kind_name(&self) -> &'static str {
        match self {
            MatmulProgramConfig::MultiCoreReuse { .. } => "multi_core_reuse",
            MatmulProgramConfig::MultiCast2D { .. } => "2D mcast",
            MatmulProgramConfig::MultiCast1D { mcast_in0: true, .. } => "1D mcast_in0",
            MatmulProgramConfig::MultiCast1D { .. } => "1D mcast_in1",
            MatmulProgramConfig::DramSharded { .. } => "dram_sharded",
        }
    }
}

impl fmt::Display for MatmulProgramConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        let coord = |c: &CoreCoord| format!("#ttnn.core_coord<{}, {}>", c.x, c.y);
        let act = |a: &Option<UnaryWithParam>| {
            a.as_ref().map(|a| format!(", fused_activation = #ttnn.unary_with_param{a}"))
        };
        match self {
            MatmulProgramConfig::MultiCoreReuse {
                grid,
                in0_block_w,
                out_subblock_h,
                out_subblock_w,
                per_core_m,
                per_core_n,
            } => {
                let _ = write!(
                    s,
                    "#ttnn.matmul_multi_core_reuse_program_config<compute_with_storage_grid_size = {}, in0_block_w = {in0_block_w}, out_subblock_h = {out_subblock_h}, out_subblock_w = {out_subblock_w}, per_core_m = {per_core_m}, per_core_n = {per_core_n}>",
                    coord(grid)
                );
            }
            MatmulProgramConfig::MultiCast2D {
                grid,
                in0_block_w,
                out_subblock_h,
                out_subblock_w,
                out_block_h,
                out_block_w,
                per_core_m,
                per_core_n,
                transpose_mcast,
                fused_activation,
                fuse_batch,
            } => {
                let _ = write!(
                    s,
                    "#ttnn.matmul_multi_core_reuse_multi_cast_program_config<compute_with_storage_grid_size = {}, in0_block_w = {in0_block_w}, out_subblock_h = {out_subblock_h}, out_subblock_w = {out_subblock_w}, out_block_h = {out_block_h}, out_block_w = {out_block_w}, per_core_m = {per_core_m}, per_core_n = {per_core_n}, transpose_mcast = {transpose_mcast}{}, fuse_batch = {fuse_batch}>",
                    coord(grid),
                    act(fused_activation).unwrap_or_default()
                );
            }
            MatmulProgramConfig::MultiCast1D {
                grid,
                in0_block_w,
                out_subblock_h,
                out_subblock_w,
                out_block_h,
                out_block_w,
                per_core_m,
                per_core_n,
                fuse_batch,
                fused_activation,
                mcast_in0,
            } => {
                let _ = write!(
                    s,
                    "#ttnn.matmul_multi_core_reuse_multi_cast_1d_program_config<compute_with_storage_grid_size = {}, in0_block_w = {in0_block_w}, out_subblock_h = {out_subblock_h}, out_subblock_w = {out_subblock_w}, out_block_h = {out_block_h}, out_block_w = {out_block_w}, per_core_m = {per_core_m}, per_core_n = {per_core_n}, fuse_batch = {fuse_batch}{}, mcast_in0 = {mcast_in0}, gather_in0 = false, hop_cores = #ttnn.core_range_set<>, num_global_cb_receivers = 0, untilize_out = false>",
                    coord(grid),
                    act(fused_activation).unwrap_or_default()
                );
            }
            MatmulProgramConfig::DramSharded {
                in0_block_w,
                per_core_m,
                per_core_n,
                fused_activation,
            } => {
                let _ = write!(
                    s,
                    "#ttnn.matmul_multi_core_reuse_multi_cast_dram_sharded_program_config<in0_block_w = {in0_block_w}, per_core_m = {per_core_m}, per_core_n = {per_core_n}{}>",
                    act(fused_activation).unwrap_or_default()
                );
            }
        }
        f.write_str(&s)
    }
}
