//! Typed, position-free TTNN values shared by the decoder, the op model and the planner.
//!
//! Everything here is plain data with value equality: data types and element types, buffer
//! types and memory layouts, core grids and core ranges, the `#ttnn.ttnn_layout` tensor
//! encoding, and the op-specific configs (conv2d config and slice config, matmul program
//! configs).
//! Nothing here knows about text positions, salsa or the file system.
//!
//! The layout arithmetic follows tt-mlir's layout builder: tensors are collapsed to 2D
//! (`H = product of all dims but the last`, `W = last dim`), tiled tensors are padded to whole
//! 32x32 tiles first, and shards are `ceil(H / rows) x ceil(W / cols)` rounded up to tiles.

mod config;
mod core_range;
mod dtype;
mod layout;

pub use crate::{
    config::{
        Conv2dConfig, Conv2dSliceConfig, Conv2dSliceType, DeviceComputeKernelConfig, MathFidelity,
        MatmulProgramConfig, UnaryWithParam,
    },
    core_range::{CoreCoord, CoreRange, CoreRangeSet, Grid},
    dtype::{DataType, ElementType, ScalarType, Signedness},
    layout::{
        BufferType, LayoutData, LayoutError, PageLayout, TensorMemoryLayout, TensorType,
        TtnnLayout, collapse_2d, linear_map_text, tile_padded_shape,
    },
};

/// A grid or shard shape: a few dims, stored inline so a layout clones without allocating.
pub type Dims = smallvec::SmallVec<[u64; 2]>;

pub use smallvec::{SmallVec, smallvec};

/// The edge of a hardware tile, in elements. The optimizer only ever uses 32x32 tiles.
pub const TILE: u64 = 32;

/// Ceiling division that never panics: a zero divisor yields zero.
#[must_use]
pub fn div_ceil(a: u64, b: u64) -> u64 {
    if b == 0 { 0 } else { a.div_ceil(b) }
}
