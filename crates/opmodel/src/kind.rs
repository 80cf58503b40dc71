//! Op kinds: an op name plus the attributes that matter for layouts, and the rule predicates
//! the optimizer asks about (chain whitelist, core-shrink hazard, fixed outputs...).
//!
//! Names are the full dialect names (`ttnn.relu`). Anything not listed becomes
//! [`OpKind::Unknown`], which the model answers conservatively.

use ttnn_types::TensorMemoryLayout;

/// Read access to an op's attributes, whatever the IR representation is.
pub trait AttrLookup {
    fn int(&self, name: &str) -> Option<i64>;
    fn bool(&self, name: &str) -> Option<bool>;
    fn ints(&self, name: &str) -> Option<Vec<i64>>;
    fn string(&self, name: &str) -> Option<String>;
    fn float(&self, name: &str) -> Option<f64>;
}

/// No attributes at all; handy for tests and for ops that have none.
impl AttrLookup for () {
    fn int(&self, _: &str) -> Option<i64> {
        None
    }
    fn bool(&self, _: &str) -> Option<bool> {
        None
    }
    fn ints(&self, _: &str) -> Option<Vec<i64>> {
        None
    }
    fn string(&self, _: &str) -> Option<String> {
        None
    }
    fn float(&self, _: &str) -> Option<f64> {
        None
    }
}

/// Defines a fieldless enum of ops with their dialect names.
macro_rules! op_names {
    ($(#[$m:meta])* pub enum $ty:ident { $($var:ident => $name:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $ty { $($var,)* }
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$var,)*];
            #[must_use]
            pub fn name(self) -> &'static str {
                match self { $($ty::$var => $name,)* }
            }
            #[must_use]
            pub fn from_name(s: &str) -> Option<$ty> {
                match s { $($name => Some($ty::$var),)* _ => None }
            }
        }
    };
}

op_names! {
    /// Elementwise ops with one tensor operand (scalar parameters do not change the layout).
    pub enum UnaryOp {
        Relu => "ttnn.relu", Relu6 => "ttnn.relu6", Silu => "ttnn.silu", Gelu => "ttnn.gelu",
        Neg => "ttnn.neg", Rsqrt => "ttnn.rsqrt", Sqrt => "ttnn.sqrt", Sigmoid => "ttnn.sigmoid",
        Exp => "ttnn.exp", Log => "ttnn.log", Log1p => "ttnn.log1p", Expm1 => "ttnn.expm1",
        Abs => "ttnn.abs", Reciprocal => "ttnn.reciprocal", Tanh => "ttnn.tanh",
        Cos => "ttnn.cos", Sin => "ttnn.sin", Tan => "ttnn.tan", Acos => "ttnn.acos",
        Asin => "ttnn.asin", Atan => "ttnn.atan", Asinh => "ttnn.asinh", Erf => "ttnn.erf",
        Erfc => "ttnn.erfc", Floor => "ttnn.floor", Ceil => "ttnn.ceil", Sign => "ttnn.sign",
        Cbrt => "ttnn.cbrt", IsFinite => "ttnn.isfinite", LogicalNot => "ttnn.logical_not",
        BitwiseNot => "ttnn.bitwise_not", Mish => "ttnn.mish", Hardsigmoid => "ttnn.hardsigmoid",
        LeakyRelu => "ttnn.leaky_relu", ClampScalar => "ttnn.clamp_scalar",
        PowScalar => "ttnn.pow_scalar", Dropout => "ttnn.dropout", Assign => "ttnn.assign",
        BitcastConvert => "ttnn.bitcast_convert",
    }
}

op_names! {
    /// Elementwise ops with two tensor operands (binary_ng, with implicit broadcasting).
    pub enum BinaryOp {
        Add => "ttnn.add", Subtract => "ttnn.subtract", Multiply => "ttnn.multiply",
        Divide => "ttnn.divide", Minimum => "ttnn.minimum", Maximum => "ttnn.maximum",
        Eq => "ttnn.eq", Ne => "ttnn.ne", Lt => "ttnn.lt", Le => "ttnn.le", Gt => "ttnn.gt",
        Ge => "ttnn.ge", LogicalAnd => "ttnn.logical_and", LogicalOr => "ttnn.logical_or",
        LogicalXor => "ttnn.logical_xor", BitwiseAnd => "ttnn.bitwise_and",
        BitwiseOr => "ttnn.bitwise_or", BitwiseXor => "ttnn.bitwise_xor",
        LogicalLeftShift => "ttnn.logical_left_shift",
        LogicalRightShift => "ttnn.logical_right_shift", Remainder => "ttnn.remainder",
        Atan2 => "ttnn.atan2", PowTensor => "ttnn.pow_tensor", GeluBw => "ttnn.gelu_bw",
    }
}

op_names! {
    /// Elementwise ops with three tensor operands.
    pub enum TernaryOp { Where => "ttnn.where", ClampTensor => "ttnn.clamp_tensor", }
}

op_names! {
    /// Reductions over `dim_arg` (all dims when absent).
    pub enum ReduceOp { Sum => "ttnn.sum", Mean => "ttnn.mean", Max => "ttnn.max", Min => "ttnn.min", }
}

op_names! {
    /// Normalizations that buffer whole rows.
    pub enum NormOp {
        RmsNorm => "ttnn.rms_norm", LayerNorm => "ttnn.layer_norm",
        DistributedRmsNorm => "ttnn.distributed_rms_norm",
        DistributedLayerNorm => "ttnn.distributed_layer_norm",
        RmsNormPreAllGather => "ttnn.rms_norm_pre_all_gather",
        LayerNormPreAllGather => "ttnn.layer_norm_pre_all_gather",
        LayerNormPostAllGather => "ttnn.layer_norm_post_all_gather",
        BatchNormInference => "ttnn.batch_norm_inference",
        BatchNormTraining => "ttnn.batch_norm_training", GroupNorm => "ttnn.group_norm",
    }
}

op_names! {
    /// Attention kernels: null output hint only, K/V in DRAM, DRAM-interleaved output.
    pub enum SdpaOp {
        Sdpa => "ttnn.scaled_dot_product_attention",
        SdpaDecode => "ttnn.scaled_dot_product_attention_decode",
        PagedSdpaDecode => "ttnn.paged_scaled_dot_product_attention_decode",
        ChunkedSdpa => "ttnn.chunked_scaled_dot_product_attention",
        FlashMlaPrefill => "ttnn.flash_mla_prefill",
        PagedFlashMlaDecode => "ttnn.paged_flash_multi_latent_attention_decode",
        SdpaFw => "ttnn.sdpa_fw", SdpaBw => "ttnn.sdpa_bw",
        IndexerScoreDsa => "ttnn.indexer_score_dsa",
    }
}

op_names! {
    /// Attention head split/merge ops.
    pub enum HeadsOp {
        NlpConcatHeads => "ttnn.nlp_concat_heads",
        NlpConcatHeadsDecode => "ttnn.nlp_concat_heads_decode",
        NlpCreateQkvHeadsDecode => "ttnn.nlp_create_qkv_heads_decode",
        ConcatenateHeads => "ttnn.concatenate_heads",
        SplitQkv => "ttnn.split_query_key_value_and_split_heads",
    }
}

op_names! {
    /// Multi-device ops. Upstream exempts them from the op model; we only admit
    /// DRAM-interleaved operands and results, which is what the spill pass assumes.
    pub enum CollectiveOp {
        AllGather => "ttnn.all_gather", ReduceScatter => "ttnn.reduce_scatter",
        AllReduce => "ttnn.all_reduce", AllReduceAsync => "ttnn.all_reduce_async",
        AllToAllDispatch => "ttnn.all_to_all_dispatch",
        AllToAllDispatchMetadata => "ttnn.all_to_all_dispatch_metadata",
        AllToAllCombine => "ttnn.all_to_all_combine", PointToPoint => "ttnn.point_to_point",
        MeshPartition => "ttnn.mesh_partition", DistributeTensor => "ttnn.distribute_tensor",
        AggregateTensor => "ttnn.aggregate_tensor",
    }
}

op_names! {
    /// Ops that create a tensor from attributes alone.
    pub enum CreationOp {
        Empty => "ttnn.empty", Zeros => "ttnn.zeros", Ones => "ttnn.ones", Full => "ttnn.full",
        Constant => "ttnn.constant", Arange => "ttnn.arange", Rand => "ttnn.rand",
    }
}

op_names! {
    /// Plumbing ops whose layout the optimizer never changes: device handles, host transfers,
    /// deallocation, traces, in-place caches, weight preparation, custom kernels.
    pub enum FixedOp {
        GetDevice => "ttnn.get_device", ToTensorSpec => "ttnn.to_tensor_spec",
        ToDevice => "ttnn.to_device", FromDevice => "ttnn.from_device",
        Deallocate => "ttnn.deallocate", BeginTraceCapture => "ttnn.begin_trace_capture",
        EndTraceCapture => "ttnn.end_trace_capture",
        CaptureOrExecuteTrace => "ttnn.capture_or_execute_trace",
        ExecuteTrace => "ttnn.execute_trace", WriteTensor => "ttnn.write_tensor",
        Copy => "ttnn.copy", DumpTensor => "ttnn.dump_tensor", LoadTensor => "ttnn.load_tensor",
        CreateGlobalSemaphore => "ttnn.create_global_semaphore",
        ResetGlobalSemaphore => "ttnn.reset_global_semaphore", Generic => "ttnn.generic",
        TtLangOp => "ttnn.tt_lang_op", Alloc => "ttnn.alloc",
        PrepareConv2dWeights => "ttnn.prepare_conv2d_weights",
        PrepareConv2dBias => "ttnn.prepare_conv2d_bias",
        PrepareConvTranspose2dWeights => "ttnn.prepare_conv_transpose2d_weights",
        PrepareConvTranspose2dBias => "ttnn.prepare_conv_transpose2d_bias",
        PrepareConv3dWeights => "ttnn.prepare_conv3d_weights",
        FillCache => "ttnn.fill_cache", UpdateCache => "ttnn.update_cache",
        PagedFillCache => "ttnn.paged_fill_cache", PagedUpdateCache => "ttnn.paged_update_cache",
        // A call's result types are the callee's, which the optimizer does not re-type
        // (private and CPU-hoisted functions return system memory, say).
        Call => "call", FuncCall => "func.call",
    }
}

op_names! {
    /// 2D pooling.
    pub enum PoolOp {
        MaxPool2d => "ttnn.max_pool2d", MaxPool2dWithIndices => "ttnn.max_pool2d_with_indices",
        AvgPool2d => "ttnn.avg_pool2d", GlobalAvgPool2d => "ttnn.global_avg_pool2d",
    }
}

/// Matmul / linear attributes that matter for layouts and program configs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MatmulAttrs {
    pub transpose_a: bool,
    pub transpose_b: bool,
    /// The fused activation name, moved into a generated program config.
    pub activation: Option<String>,
}

/// Convolution geometry, from the op's attributes (the IR input is already `[1,1,N*H*W,C]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ConvAttrs {
    pub in_channels: u64,
    pub out_channels: u64,
    pub batch: u64,
    pub input_h: u64,
    pub input_w: u64,
    pub kernel: [u64; 2],
    pub stride: [u64; 2],
    /// Top, bottom, left, right.
    pub padding: [u64; 4],
    pub dilation: [u64; 2],
    pub groups: u64,
    pub output_padding: [u64; 2],
}

impl ConvAttrs {
    /// Output height and width of a convolution (or of a transposed one when `transposed`).
    #[must_use]
    pub fn output_hw(&self, transposed: bool) -> (u64, u64) {
        let dim = |i: usize, input: u64, pad: u64| -> u64 {
            let k = self.kernel[i].max(1);
            let d = self.dilation[i].max(1);
            let s = self.stride[i].max(1);
            let span = d.saturating_mul(k - 1);
            if transposed {
                input
                    .saturating_sub(1)
                    .saturating_mul(s)
                    .saturating_add(span)
                    .saturating_add(1)
                    .saturating_add(self.output_padding[i])
                    .saturating_sub(pad)
            } else {
                let padded = input.saturating_add(pad);
                if padded <= span { 0 } else { (padded - span - 1) / s + 1 }
            }
        };
        (
            dim(0, self.input_h, self.padding[0] + self.padding[1]),
            dim(1, self.input_w, self.padding[2] + self.padding[3]),
        )
    }
}

/// Pooling geometry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PoolAttrs {
    pub conv: ConvAttrs,
    pub ceil_mode: bool,
}

/// An op kind with its layout-relevant attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OpKind {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Ternary(TernaryOp),
    Typecast,
    /// quantize / dequantize / requantize: elementwise with scale and zero-point operands.
    Quantize {
        name: &'static str,
    },
    Matmul(MatmulAttrs),
    Linear(MatmulAttrs),
    SparseMatmul,
    Conv2d(ConvAttrs),
    ConvTranspose2d(ConvAttrs),
    Conv1d(ConvAttrs),
    Conv3d(ConvAttrs),
    Pool2d {
        op: PoolOp,
        attrs: PoolAttrs,
    },
    Upsample {
        scale: [u64; 2],
    },
    Concat {
        dim: i64,
    },
    Reshape,
    Permute {
        permutation: Vec<i64>,
    },
    Transpose {
        dim0: i64,
        dim1: i64,
    },
    SliceStatic,
    SliceDynamic,
    Pad {
        padding: Vec<i64>,
    },
    Repeat {
        repeat_dims: Vec<i64>,
    },
    RepeatInterleave {
        repeats: u64,
        dim: i64,
    },
    ToLayout,
    ToMemoryConfig,
    Embedding,
    EmbeddingBw,
    Gather {
        dim: i64,
    },
    Scatter {
        dim: i64,
    },
    Softmax {
        dim: i64,
        numeric_stable: bool,
    },
    Norm(NormOp),
    Reduction {
        op: ReduceOp,
        dims: Option<Vec<i64>>,
        keep_dim: bool,
    },
    Prod {
        dim: Option<i64>,
        keep_dim: bool,
    },
    Argmax {
        dim: Option<i64>,
        keep_dim: bool,
    },
    /// cumsum / cumprod (tt-metal's moreh_cumsum family).
    Cumulative {
        name: &'static str,
        dim: i64,
    },
    Sort {
        dim: i64,
    },
    Topk {
        k: u64,
        dim: i64,
    },
    Sampling,
    Sdpa(SdpaOp),
    RotaryEmbedding {
        llama: bool,
    },
    Heads(HeadsOp),
    Collective(CollectiveOp),
    Creation(CreationOp),
    Fixed(FixedOp),
    D2MSubgraph,
    Unknown(String),
}

/// Turns an op name and its attributes into an [`OpKind`]. Never fails: unknown names become
/// [`OpKind::Unknown`] and missing attributes take their ODS defaults.
pub fn op_kind(name: &str, attrs: &dyn AttrLookup) -> OpKind {
    if let Some(op) = UnaryOp::from_name(name) {
        return OpKind::Unary(op);
    }
    if let Some(op) = BinaryOp::from_name(name) {
        return OpKind::Binary(op);
    }
    if let Some(op) = TernaryOp::from_name(name) {
        return OpKind::Ternary(op);
    }
    if let Some(op) = ReduceOp::from_name(name) {
        let dims = attrs.ints("dim_arg").or_else(|| attrs.int("dim_arg").map(|d| vec![d]));
        return OpKind::Reduction { op, dims, keep_dim: attrs.bool("keep_dim").unwrap_or(false) };
    }
    if let Some(op) = NormOp::from_name(name) {
        return OpKind::Norm(op);
    }
    if let Some(op) = SdpaOp::from_name(name) {
        return OpKind::Sdpa(op);
    }
    if let Some(op) = HeadsOp::from_name(name) {
        return OpKind::Heads(op);
    }
    if let Some(op) = CollectiveOp::from_name(name) {
        return OpKind::Collective(op);
    }
    if let Some(op) = CreationOp::from_name(name) {
        return OpKind::Creation(op);
    }
    if let Some(op) = FixedOp::from_name(name) {
        return OpKind::Fixed(op);
    }
    if let Some(op) = PoolOp::from_name(name) {
        let mut conv = conv_attrs(attrs);
        conv.in_channels = uint(attrs.int("channels"));
        conv.out_channels = conv.in_channels;
        return OpKind::Pool2d {
            op,
            attrs: PoolAttrs { conv, ceil_mode: attrs.bool("ceil_mode").unwrap_or(false) },
        };
    }
    let mm = || MatmulAttrs {
        transpose_a: attrs.bool("transpose_a").unwrap_or(false),
        transpose_b: attrs.bool("transpose_b").unwrap_or(false),
        activation: attrs.string("activation").filter(|s| !s.is_empty()),
    };
    match name {
        "ttnn.typecast" => OpKind::Typecast,
        "ttnn.quantize" => OpKind::Quantize { name: "ttnn.quantize" },
        "ttnn.dequantize" => OpKind::Quantize { name: "ttnn.dequantize" },
        "ttnn.requantize" => OpKind::Quantize { name: "ttnn.requantize" },
        "ttnn.matmul" => OpKind::Matmul(mm()),
        "ttnn.linear" => OpKind::Linear(mm()),
        "ttnn.sparse_matmul" => OpKind::SparseMatmul,
        "ttnn.conv2d" => OpKind::Conv2d(conv_attrs(attrs)),
        "ttnn.conv_transpose2d" => OpKind::ConvTranspose2d(conv_attrs(attrs)),
        "ttnn.conv1d" => OpKind::Conv1d(conv1d_attrs(attrs)),
        "ttnn.conv3d" => OpKind::Conv3d(conv_attrs(attrs)),
        "ttnn.upsample" => {
            let scale = match attrs.ints("scale_factor").as_deref() {
                Some([h, w]) => [uint(Some(*h)), uint(Some(*w))],
                Some([s]) => [uint(Some(*s)); 2],
                _ => [uint(attrs.int("scale_factor")).max(1); 2],
            };
            OpKind::Upsample { scale }
        }
        "ttnn.concat" => OpKind::Concat { dim: attrs.int("dim").unwrap_or(0) },
        "ttnn.reshape" => OpKind::Reshape,
        "ttnn.permute" => {
            OpKind::Permute { permutation: attrs.ints("permutation").unwrap_or_default() }
        }
        "ttnn.transpose" => OpKind::Transpose {
            dim0: attrs.int("dim0").unwrap_or(-2),
            dim1: attrs.int("dim1").unwrap_or(-1),
        },
        "ttnn.slice_static" => OpKind::SliceStatic,
        "ttnn.slice_dynamic" => OpKind::SliceDynamic,
        "ttnn.pad" => OpKind::Pad { padding: attrs.ints("padding").unwrap_or_default() },
        "ttnn.repeat" => {
            OpKind::Repeat { repeat_dims: attrs.ints("repeat_dims").unwrap_or_default() }
        }
        "ttnn.repeat_interleave" => OpKind::RepeatInterleave {
            repeats: uint(attrs.int("repeats")).max(1),
            dim: attrs.int("dim").unwrap_or(0),
        },
        "ttnn.to_layout" => OpKind::ToLayout,
        "ttnn.to_memory_config" => OpKind::ToMemoryConfig,
        "ttnn.embedding" => OpKind::Embedding,
        "ttnn.embedding_bw" => OpKind::EmbeddingBw,
        "ttnn.gather" => OpKind::Gather { dim: attrs.int("dim").unwrap_or(0) },
        "ttnn.scatter" => OpKind::Scatter { dim: attrs.int("dim").unwrap_or(0) },
        "ttnn.softmax" => OpKind::Softmax {
            dim: attrs.int("dimension").unwrap_or(-1),
            numeric_stable: attrs.bool("numericStable").unwrap_or(false),
        },
        "ttnn.prod" => OpKind::Prod {
            dim: attrs.int("dim_arg"),
            keep_dim: attrs.bool("keep_dim").unwrap_or(false),
        },
        "ttnn.argmax" => OpKind::Argmax {
            dim: attrs.int("dim"),
            keep_dim: attrs.bool("keep_dim").unwrap_or(false),
        },
        "ttnn.cumsum" | "ttnn.moreh_cumsum" => {
            OpKind::Cumulative { name: "ttnn.cumsum", dim: attrs.int("dim").unwrap_or(0) }
        }
        "ttnn.cumprod" => {
            OpKind::Cumulative { name: "ttnn.cumprod", dim: attrs.int("dim").unwrap_or(0) }
        }
        "ttnn.sort" => OpKind::Sort { dim: attrs.int("dim").unwrap_or(-1) },
        "ttnn.topk" => {
            OpKind::Topk { k: uint(attrs.int("k")).max(1), dim: attrs.int("dim").unwrap_or(-1) }
        }
        "ttnn.sampling" => OpKind::Sampling,
        "ttnn.rotary_embedding" => OpKind::RotaryEmbedding { llama: false },
        "ttnn.rotary_embedding_llama" => OpKind::RotaryEmbedding { llama: true },
        "ttnn.d2m_subgraph" => OpKind::D2MSubgraph,
        other => OpKind::Unknown(other.to_owned()),
    }
}

fn uint(v: Option<i64>) -> u64 {
    v.map_or(0, |v| u64::try_from(v).unwrap_or(0))
}

fn pair(attrs: &dyn AttrLookup, name: &str, default: u64) -> [u64; 2] {
    match attrs.ints(name).as_deref() {
        Some([a, b, ..]) => [uint(Some(*a)), uint(Some(*b))],
        Some([a]) => [uint(Some(*a)); 2],
        _ => attrs.int(name).map_or([default; 2], |v| [uint(Some(v)); 2]),
    }
}

fn conv_attrs(attrs: &dyn AttrLookup) -> ConvAttrs {
    let padding = match attrs.ints("padding").as_deref() {
        // [h, w] pads both sides; [t, b, l, r] is explicit.
        Some([h, w]) => [uint(Some(*h)), uint(Some(*h)), uint(Some(*w)), uint(Some(*w))],
        Some([t, b, l, r]) => [uint(Some(*t)), uint(Some(*b)), uint(Some(*l)), uint(Some(*r))],
        Some([p]) => [uint(Some(*p)); 4],
        _ => [0; 4],
    };
    ConvAttrs {
        in_channels: uint(attrs.int("in_channels")),
        out_channels: uint(attrs.int("out_channels")),
        batch: uint(attrs.int("batch_size")).max(1),
        input_h: uint(attrs.int("input_height")),
        input_w: uint(attrs.int("input_width")),
        kernel: pair(attrs, "kernel_size", 1),
        stride: pair(attrs, "stride", 1),
        padding,
        dilation: pair(attrs, "dilation", 1),
        groups: uint(attrs.int("groups")).max(1),
        output_padding: pair(attrs, "output_padding", 0),
    }
}

/// conv1d runs as a conv2d over a height-1 image.
fn conv1d_attrs(attrs: &dyn AttrLookup) -> ConvAttrs {
    let pad = match attrs.ints("padding").as_deref() {
        Some([l, r]) => [uint(Some(*l)), uint(Some(*r))],
        Some([p]) => [uint(Some(*p)); 2],
        _ => [0; 2],
    };
    ConvAttrs {
        in_channels: uint(attrs.int("in_channels")),
        out_channels: uint(attrs.int("out_channels")),
        batch: uint(attrs.int("batch_size")).max(1),
        input_h: 1,
        input_w: uint(attrs.int("input_length")),
        kernel: [1, uint(attrs.int("kernel_size")).max(1)],
        stride: [1, uint(attrs.int("stride")).max(1)],
        padding: [0, 0, pad[0], pad[1]],
        dilation: [1, uint(attrs.int("dilation")).max(1)],
        groups: uint(attrs.int("groups")).max(1),
        output_padding: [0, 0],
    }
}

impl OpKind {
    /// The dialect name (`ttnn.matmul`).
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            OpKind::Unary(op) => op.name(),
            OpKind::Binary(op) => op.name(),
            OpKind::Ternary(op) => op.name(),
            OpKind::Typecast => "ttnn.typecast",
            OpKind::Quantize { name } | OpKind::Cumulative { name, .. } => name,
            OpKind::Matmul(_) => "ttnn.matmul",
            OpKind::Linear(_) => "ttnn.linear",
            OpKind::SparseMatmul => "ttnn.sparse_matmul",
            OpKind::Conv2d(_) => "ttnn.conv2d",
            OpKind::ConvTranspose2d(_) => "ttnn.conv_transpose2d",
            OpKind::Conv1d(_) => "ttnn.conv1d",
            OpKind::Conv3d(_) => "ttnn.conv3d",
            OpKind::Pool2d { op, .. } => op.name(),
            OpKind::Upsample { .. } => "ttnn.upsample",
            OpKind::Concat { .. } => "ttnn.concat",
            OpKind::Reshape => "ttnn.reshape",
            OpKind::Permute { .. } => "ttnn.permute",
            OpKind::Transpose { .. } => "ttnn.transpose",
            OpKind::SliceStatic => "ttnn.slice_static",
            OpKind::SliceDynamic => "ttnn.slice_dynamic",
            OpKind::Pad { .. } => "ttnn.pad",
            OpKind::Repeat { .. } => "ttnn.repeat",
            OpKind::RepeatInterleave { .. } => "ttnn.repeat_interleave",
            OpKind::ToLayout => "ttnn.to_layout",
            OpKind::ToMemoryConfig => "ttnn.to_memory_config",
            OpKind::Embedding => "ttnn.embedding",
            OpKind::EmbeddingBw => "ttnn.embedding_bw",
            OpKind::Gather { .. } => "ttnn.gather",
            OpKind::Scatter { .. } => "ttnn.scatter",
            OpKind::Softmax { .. } => "ttnn.softmax",
            OpKind::Norm(op) => op.name(),
            OpKind::Reduction { op, .. } => op.name(),
            OpKind::Prod { .. } => "ttnn.prod",
            OpKind::Argmax { .. } => "ttnn.argmax",
            OpKind::Sort { .. } => "ttnn.sort",
            OpKind::Topk { .. } => "ttnn.topk",
            OpKind::Sampling => "ttnn.sampling",
            OpKind::Sdpa(op) => op.name(),
            OpKind::RotaryEmbedding { llama: false } => "ttnn.rotary_embedding",
            OpKind::RotaryEmbedding { llama: true } => "ttnn.rotary_embedding_llama",
            OpKind::Heads(op) => op.name(),
            OpKind::Collective(op) => op.name(),
            OpKind::Creation(op) => op.name(),
            OpKind::Fixed(op) => op.name(),
            OpKind::D2MSubgraph => "ttnn.d2m_subgraph",
            OpKind::Unknown(name) => name,
        }
    }

    /// False only for [`OpKind::Unknown`]: callers can warn that the model is guessing.
    #[must_use]
    pub fn is_known(&self) -> bool {
        !matches!(self, OpKind::Unknown(_))
    }

    /// The legacy DFShardingPolicy whitelist of ops that may sit inside an L1 chain.
    #[must_use]
    pub fn is_chain_shardable(&self) -> bool {
        matches!(
            self,
            OpKind::Conv2d(_)
                | OpKind::ConvTranspose2d(_)
                | OpKind::Matmul(_)
                | OpKind::Linear(_)
                | OpKind::Concat { .. }
                | OpKind::RotaryEmbedding { llama: false }
                | OpKind::D2MSubgraph
                | OpKind::Binary(BinaryOp::Add | BinaryOp::Multiply | BinaryOp::Minimum)
                | OpKind::Unary(
                    UnaryOp::Relu
                        | UnaryOp::Relu6
                        | UnaryOp::Silu
                        | UnaryOp::Gelu
                        | UnaryOp::Neg
                        | UnaryOp::Rsqrt
                        | UnaryOp::PowScalar
                )
        )
    }

    /// Binary ops whose sharded output may not use fewer cores than their largest sharded
    /// input: the implicit core shrink hangs (tt-metal#34765).
    #[must_use]
    pub fn rejects_eltwise_core_shrink(&self) -> bool {
        matches!(self, OpKind::Binary(BinaryOp::Add | BinaryOp::Multiply | BinaryOp::Minimum))
    }

    /// sum / mean / max / min: the reductions that reject sharded inputs (tt-metal#34951).
    #[must_use]
    pub fn is_reduction(&self) -> bool {
        matches!(self, OpKind::Reduction { .. })
    }

    #[must_use]
    pub fn is_concat(&self) -> Option<i64> {
        match self {
            OpKind::Concat { dim } => Some(*dim),
            _ => None,
        }
    }

    #[must_use]
    pub fn is_reshape(&self) -> bool {
        matches!(self, OpKind::Reshape)
    }

    #[must_use]
    pub fn is_matmul_like(&self) -> bool {
        matches!(self, OpKind::Matmul(_) | OpKind::Linear(_))
    }

    #[must_use]
    pub fn is_conv2d_like(&self) -> bool {
        matches!(self, OpKind::Conv2d(_) | OpKind::ConvTranspose2d(_))
    }

    #[must_use]
    pub fn is_d2m_subgraph(&self) -> bool {
        matches!(self, OpKind::D2MSubgraph)
    }

    /// Ops whose output layout the optimizer must not change.
    #[must_use]
    pub fn has_fixed_output_layout(&self) -> bool {
        matches!(self, OpKind::Fixed(_) | OpKind::Creation(CreationOp::Empty) | OpKind::ToLayout)
    }

    /// Ops tt-mlir's rule book only ever queries with a null output hint (SDPA, llama rotary,
    /// head concat, split-QKV, typecast, where).
    #[must_use]
    pub fn null_hint_only(&self) -> bool {
        matches!(
            self,
            OpKind::Sdpa(_)
                | OpKind::RotaryEmbedding { llama: true }
                | OpKind::Heads(HeadsOp::NlpConcatHeadsDecode | HeadsOp::SplitQkv)
                | OpKind::Typecast
                | OpKind::Ternary(TernaryOp::Where)
        )
    }

    /// The operand an op without a result writes into: a KV-cache write updates operand 0,
    /// the cache, in place. Costing takes that operand as the op's output.
    #[must_use]
    pub fn in_place_operand(&self) -> Option<usize> {
        use FixedOp::{FillCache, PagedFillCache, PagedUpdateCache, UpdateCache};
        matches!(self, OpKind::Fixed(FillCache | UpdateCache | PagedFillCache | PagedUpdateCache))
            .then_some(0)
    }

    /// True when `operand` may be a host (system memory) tensor. tt-mlir's conv workaround
    /// moves a conv's weight and bias to host, row-major, and tt-metal's `conv2d` (which
    /// `conv1d` calls) and `conv_transpose2d` prepare a host weight and bias themselves and move
    /// them to the device; a device weight must already be prepared.
    #[must_use]
    pub fn accepts_host_operand(&self, operand: usize) -> bool {
        matches!(
            (self, operand),
            (OpKind::Conv2d(_) | OpKind::Conv1d(_) | OpKind::ConvTranspose2d(_), 1 | 2)
        )
    }

    /// The sharded input memory layouts this op rejects on `operand`.
    #[must_use]
    pub fn rejected_input_memory_layouts(&self, operand: usize) -> &'static [TensorMemoryLayout] {
        use TensorMemoryLayout::{BlockSharded, HeightSharded, NdSharded, WidthSharded};
        const ALL: &[TensorMemoryLayout] = &[HeightSharded, WidthSharded, BlockSharded, NdSharded];
        match (self, operand) {
            (OpKind::Matmul(_) | OpKind::Linear(_), 1) => ALL,
            (OpKind::Reshape | OpKind::Permute { .. }, 0) => &[WidthSharded, NdSharded],
            (OpKind::Norm(NormOp::RmsNorm), 0) => &[HeightSharded, NdSharded],
            (OpKind::RotaryEmbedding { .. }, 0) => &[WidthSharded, BlockSharded, NdSharded],
            (
                OpKind::Reduction { .. }
                | OpKind::SliceStatic
                | OpKind::SliceDynamic
                | OpKind::Heads(HeadsOp::ConcatenateHeads),
                _,
            ) => ALL,
            (OpKind::Collective(_), _) => ALL,
            _ => &[NdSharded],
        }
    }
}
