//! Tensor arithmetic the cost model needs: tile counts, bytes moved, and where a buffer sits
//! relative to the cores an op runs on.

use ttnn_types::{
    BufferType, DataType, PageLayout, TILE, TtnnLayout, collapse_2d, div_ceil, tile_padded_shape,
};

/// Elements in one 32x32 tile: the unit every per-tile op count is written in.
pub(crate) const TILE_ELEMS: u64 = TILE * TILE;

/// Shape, data type and page layout: what the work formulas read, independent of placement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shaped<'a> {
    pub(crate) shape: &'a [u64],
    pub(crate) dtype: DataType,
    pub(crate) page: PageLayout,
}

impl Shaped<'_> {
    /// Tile rows and columns after tile padding and the 2D collapse.
    pub(crate) fn tiles_2d(&self) -> (u64, u64) {
        let (h, w) = collapse_2d(&tile_padded_shape(self.shape));
        (div_ceil(h, TILE), div_ceil(w, TILE))
    }

    /// Whole tiles of work: row-major tensors are counted in 1024-element chunks.
    pub(crate) fn tiles(&self) -> u64 {
        match self.page {
            PageLayout::Tile => {
                let (th, tw) = self.tiles_2d();
                th.saturating_mul(tw)
            }
            PageLayout::RowMajor => div_ceil(volume(self.shape), TILE_ELEMS),
        }
    }

    /// Bytes of the whole tensor as one interleaved buffer holds it (tile padding included).
    pub(crate) fn bytes(&self) -> u64 {
        match self.page {
            PageLayout::Tile => self.tiles().saturating_mul(self.dtype.tile_bytes()),
            PageLayout::RowMajor => volume(self.shape).saturating_mul(self.dtype.elem_bytes()),
        }
    }
}

/// Where an operand's bytes come from (or go to), seen from the cores running the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// DRAM (or host memory, charged as DRAM): through the DRAM controllers and the NoC.
    Dram,
    /// L1 on other cores (interleaved, or a shard grid the op does not run on): over the NoC.
    L1Remote,
    /// A shard in the running core's own L1: no NoC hop.
    L1Local,
}

/// The shape-level view of a laid-out tensor.
pub(crate) fn shaped<'a>(shape: &'a [u64], layout: &TtnnLayout) -> Shaped<'a> {
    Shaped {
        shape,
        dtype: layout.data_type().unwrap_or(DataType::BF16),
        page: layout.page_layout(),
    }
}

/// Bytes a kernel moves when it reads or writes the whole tensor in this layout.
///
/// A sharded layout pads every shard to the same shape, and kernels stream whole shards, so
/// its bytes are `shard bytes x shards holding data` when that exceeds the unpadded size.
pub(crate) fn layout_bytes(shape: &[u64], layout: &TtnnLayout) -> u64 {
    let logical = shaped(shape, layout).bytes();
    if is_l1_sharded(layout) {
        logical.max(layout.memref_bytes().saturating_mul(active_shards(shape, layout)))
    } else {
        logical
    }
}

/// Shards of a sharded layout that hold data: a grid larger than the tensor needs leaves the
/// last cores empty (64 tile rows height sharded on 9 cores is 8 shards of 8 rows).
pub(crate) fn active_shards(shape: &[u64], layout: &TtnnLayout) -> u64 {
    let (th, tw) = shaped(shape, layout).tiles_2d();
    let (sh, sw) = shard_tiles(layout);
    div_ceil(th, sh.max(1))
        .saturating_mul(div_ceil(tw, sw.max(1)))
        .clamp(1, layout.num_cores().max(1))
}

/// True when the layout's buffer is in DRAM-like memory (DRAM, host, trace).
pub(crate) fn is_dram_like(layout: &TtnnLayout) -> bool {
    matches!(layout.buffer, BufferType::Dram | BufferType::SystemMemory | BufferType::Trace)
}

/// L1 sharded: the only placement whose bytes can be local to the running cores.
pub(crate) fn is_l1_sharded(layout: &TtnnLayout) -> bool {
    layout.is_l1() && layout.is_sharded()
}

/// Where a tensor in `layout` sits relative to an op running on `cores` cores: a shard is
/// local only when the shard grid has exactly as many cores as the op (each core owns one).
pub(crate) fn place_of(layout: &TtnnLayout, cores: u64) -> Place {
    if is_dram_like(layout) {
        Place::Dram
    } else if is_l1_sharded(layout) && layout.num_cores() == cores {
        Place::L1Local
    } else {
        Place::L1Remote
    }
}

/// The shard of a sharded tiled layout in tiles `(rows, cols)`.
pub(crate) fn shard_tiles(layout: &TtnnLayout) -> (u64, u64) {
    let (r, c) = match layout.memref_shape.as_slice() {
        [] => (1, 1),
        [c] => (1, *c),
        [r, c] => (*r, *c),
        [rest @ .., c] => (rest.iter().fold(1u64, |a, d| a.saturating_mul(*d)), *c),
    };
    if layout.memref_element.is_tile() { (r, c) } else { (div_ceil(r, TILE), div_ceil(c, TILE)) }
}

pub(crate) fn volume(shape: &[u64]) -> u64 {
    shape.iter().fold(1u64, |a, d| a.saturating_mul(*d))
}
