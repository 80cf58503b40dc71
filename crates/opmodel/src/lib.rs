//! The TTNN op model: for one op, its operand layouts and an output hint, how much L1 per core
//! the op needs, what output layout it produces, and whether it is legal at all.
//!
//! tt-mlir answers these questions by running tt-metal's host code on a mock device (graph
//! capture). This crate answers them analytically, without hardware, so the analyzer can decide
//! per op where tensors live the way tt-mlir's optimizer does. It is pure: no salsa, no IO.
//!
//! * [`OpModel`] is the interface: `query(target, query) -> Result<OpConstraints, OpError>`.
//! * [`AnalyticalModel`] implements it with per-op-family formulas (see `docs/opmodel.md`).
//! * [`CachedOpModel`] memoizes any model by value, failures included.
//! * [`op_kind`] turns an op name and its attributes into an [`OpKind`].
//!
//! Validity follows tt-mlir's `checkConstraintsResult`: a query is valid iff
//! `peak + l1_in_use <= target.usable_l1_per_core()`.

mod analytical;
pub mod arity;
mod cache;
pub mod calibration;
mod conv;
mod data_movement;
mod eltwise;
mod kind;
mod matmul;
mod norm;
mod transformer;
mod util;

use std::fmt;

pub use target::Target;
use ttnn_types::{
    Conv2dConfig, Conv2dSliceConfig, DataType, DeviceComputeKernelConfig, MatmulProgramConfig,
    TtnnLayout,
};

pub use crate::{
    analytical::AnalyticalModel,
    cache::{CacheStats, CachedOpModel},
    kind::{
        AttrLookup, BinaryOp, CollectiveOp, ConvAttrs, CreationOp, FixedOp, HeadsOp, MatmulAttrs,
        NormOp, OpKind, PoolAttrs, PoolOp, ReduceOp, SdpaOp, TernaryOp, UnaryOp, op_kind,
    },
    matmul::{MatmulShapes, generate_matmul_program_config},
};

/// One tensor operand: its logical shape and its layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorDesc {
    pub shape: Vec<u64>,
    pub layout: TtnnLayout,
}

impl TensorDesc {
    #[must_use]
    pub fn new(shape: &[u64], layout: TtnnLayout) -> TensorDesc {
        TensorDesc { shape: shape.to_vec(), layout }
    }
}

/// What the caller asks for the output.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutputHint {
    /// Exactly this layout (its memref is re-derived for the output shape and dtype).
    Layout(TtnnLayout),
    /// Buffer type + memory layout only (ignorePhysicalLayout); the backend picks grid/shard.
    Partial(TtnnLayout),
    /// "What would you produce?"
    Null,
}

/// Op-specific knobs, as tt-mlir's `OpConfig::opSpecificAttrs`.
///
/// The configs are boxed: every legal candidate of every op carries an `OpConfig`, and most
/// are `None`, so the enum stays a few words instead of the size of a conv2d config.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum OpConfig {
    #[default]
    None,
    Conv2d {
        conv: Box<Conv2dConfig>,
        compute: Option<DeviceComputeKernelConfig>,
        /// `conv2d_slice_config`; `None` runs the whole conv in L1, as `l1_full` does.
        slice: Option<Conv2dSliceConfig>,
    },
    Matmul {
        program: Option<Box<MatmulProgramConfig>>,
        compute: Option<DeviceComputeKernelConfig>,
    },
}

/// One candidate config of an op: an output layout and the op-specific knobs. The layout
/// search (`legal_op_configs`) and the chain solver share one list of these per op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub layout: TtnnLayout,
    pub config: OpConfig,
}

/// One op-model question.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpQuery {
    pub kind: OpKind,
    /// Tensor operands in operand order; device operands are dropped.
    pub inputs: Vec<TensorDesc>,
    pub output_shape: Vec<u64>,
    pub output_dtype: DataType,
    pub output: OutputHint,
    pub config: OpConfig,
    /// Additional L1 already live, per core.
    pub l1_in_use: u64,
}

/// The answer to a valid query. All sizes are bytes per core.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpConstraints {
    /// Circular-buffer (program scratch) peak.
    pub cb_peak: u64,
    /// Peak of L1 tensor buffers allocated while the op runs (output and temporaries).
    pub tensor_peak: u64,
    /// Peak of scratch and tensors together; the validity check uses this.
    pub peak: u64,
    /// The output's per-core L1 footprint (0 in DRAM).
    pub output_bytes: u64,
    pub output_layout: TtnnLayout,
    /// The config the backend actually used (e.g. a generated matmul program config).
    pub config: OpConfig,
}

/// Why a query is invalid, classified the way tt-mlir's validation classifies backend errors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OpError {
    OutOfMemory {
        needed: u64,
        available: u64,
    },
    /// A combination tt-metal or tt-mlir's rules do not support.
    Unsupported {
        reason: String,
    },
    /// A malformed query (shape mismatch, missing operand, impossible layout).
    Invalid {
        reason: String,
    },
    UnknownOp {
        name: String,
    },
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::OutOfMemory { needed, available } => {
                write!(f, "out of L1: needs {needed} bytes per core, {available} available")
            }
            OpError::Unsupported { reason } => write!(f, "unsupported: {reason}"),
            OpError::Invalid { reason } => write!(f, "invalid: {reason}"),
            OpError::UnknownOp { name } => write!(f, "the op model does not know {name}"),
        }
    }
}

impl std::error::Error for OpError {}

/// An op model: answers [`OpQuery`]s for a [`Target`].
pub trait OpModel: Send + Sync {
    fn query(&self, target: &Target, q: &OpQuery) -> Result<OpConstraints, OpError>;
}

impl<M: OpModel + ?Sized> OpModel for &M {
    fn query(&self, target: &Target, q: &OpQuery) -> Result<OpConstraints, OpError> {
        (**self).query(target, q)
    }
}

#[cfg(test)]
mod tests;
