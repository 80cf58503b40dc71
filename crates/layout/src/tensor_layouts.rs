//! `legal_tensor_layouts`: every layout a tensor of one shape and data type can take.
//!
//! Keyed by an interned (shape, data type), so all ops producing the same tensor type share
//! one memo, as tt-mlir's `TensorTypeLayoutsMap` shares one entry per shape and element type.
//! It reads only the target (HIGH durability), so file edits re-validate it in O(1).

use std::sync::Arc;

use base_db::TargetInput;
use rustc_hash::FxHashSet;
use ttnn_types::{DataType, Grid, PageLayout, TensorMemoryLayout, TtnnLayout};

use crate::Db;

/// A tensor type as far as layout generation cares: logical shape and data type.
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct TensorKey {
    #[returns(ref)]
    pub shape: Vec<u64>,
    #[returns(copy)]
    pub dtype: DataType,
}

/// All candidate layouts of one tensor type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TensorLayouts {
    /// Tiled: DRAM interleaved, then L1 interleaved over the worker grid.
    pub interleaved_tile: Vec<TtnnLayout>,
    /// Row-major: DRAM interleaved only (tt-mlir never generates row-major L1 interleaved).
    pub interleaved_row_major: Vec<TtnnLayout>,
    /// Tiled L1 sharded layouts, largest grid first.
    pub sharded_tile: Vec<TtnnLayout>,
    /// Row-major L1 sharded layouts, largest grid first.
    pub sharded_row_major: Vec<TtnnLayout>,
    /// `sharded_tile` then `sharded_row_major`, shared: every chain problem whose operand has
    /// this tensor type lists these as its reshard targets, and an `Arc` lets all of them
    /// point at one copy. (Cloned per operand they were about half the memory of a 10k-op
    /// graph's analysis.)
    pub reshard_targets: Arc<[TtnnLayout]>,
}

impl TensorLayouts {
    #[must_use]
    pub fn sharded(&self, page: PageLayout) -> &[TtnnLayout] {
        match page {
            PageLayout::Tile => &self.sharded_tile,
            PageLayout::RowMajor => &self.sharded_row_major,
        }
    }
}

/// The legal layouts of a tensor type on the target.
#[salsa::tracked(returns(clone))]
pub fn legal_tensor_layouts(db: &dyn Db, key: TensorKey) -> Arc<TensorLayouts> {
    let worker = TargetInput::get(db).target(db).worker_grid();
    let _p = tracing::trace_span!("legal_tensor_layouts", shape = ?key.shape(db)).entered();
    Arc::new(generate(key.shape(db), key.dtype(db), worker))
}

/// The layout pool, as tt-mlir's `LegalTensorLayoutAnalysis` builds it:
///
/// - interleaved: DRAM (tile and row-major), L1 (tile only);
/// - block sharded on every `rows x cols` grid inside the worker grid, height and width
///   sharded on `1..=cores` cores;
/// - within a family, grids giving the same shard shape are deduplicated, keeping the smallest
///   grid (enumeration runs from small to large volumes);
/// - tiled layouts must give every grid row and column at least one tile;
/// - sharded layouts sorted by grid volume, largest first. tt-mlir's sort is not stable, so
///   equal volumes come in an unspecified order there; here ties go block, height, width, then
///   more grid rows first, which makes the output deterministic.
#[must_use]
pub fn generate(shape: &[u64], dtype: DataType, worker: Grid) -> TensorLayouts {
    let mut out = TensorLayouts {
        interleaved_tile: vec![
            TtnnLayout::dram_interleaved(shape, dtype, PageLayout::Tile),
            TtnnLayout::l1_interleaved(shape, dtype, PageLayout::Tile, worker),
        ],
        ..TensorLayouts::default()
    };
    if !dtype.is_block_float() {
        out.interleaved_row_major.push(TtnnLayout::dram_interleaved(
            shape,
            dtype,
            PageLayout::RowMajor,
        ));
    }
    for page in [PageLayout::Tile, PageLayout::RowMajor] {
        if page == PageLayout::RowMajor && dtype.is_block_float() {
            continue;
        }
        let mut all: Vec<(u8, TtnnLayout)> = Vec::new();
        for (family_rank, family) in [
            TensorMemoryLayout::BlockSharded,
            TensorMemoryLayout::HeightSharded,
            TensorMemoryLayout::WidthSharded,
        ]
        .into_iter()
        .enumerate()
        {
            let mut grids: Vec<Grid> = match family {
                TensorMemoryLayout::BlockSharded => (1..=worker.rows)
                    .flat_map(|r| (1..=worker.cols).map(move |c| Grid::new(r, c)))
                    .collect(),
                TensorMemoryLayout::HeightSharded => {
                    (1..=worker.volume()).map(|n| Grid::new(n, 1)).collect()
                }
                _ => (1..=worker.volume()).map(|n| Grid::new(1, n)).collect(),
            };
            grids.sort_by_key(|g| (g.volume(), g.rows));
            let mut seen: FxHashSet<ttnn_types::Dims> = FxHashSet::default();
            for grid in grids {
                let Ok(layout) = TtnnLayout::sharded(shape, dtype, page, family, grid, worker)
                else {
                    continue;
                };
                if seen.insert(layout.memref_shape.clone()) {
                    all.push((family_rank as u8, layout));
                }
            }
        }
        all.sort_by(|(fa, a), (fb, b)| {
            let (ga, gb) = (a.grid2d(), b.grid2d());
            gb.volume().cmp(&ga.volume()).then(fa.cmp(fb)).then(gb.rows.cmp(&ga.rows))
        });
        let layouts: Vec<TtnnLayout> = all.into_iter().map(|(_, l)| l).collect();
        match page {
            PageLayout::Tile => out.sharded_tile = layouts,
            PageLayout::RowMajor => out.sharded_row_major = layouts,
        }
    }
    out.reshard_targets = out.sharded_tile.iter().chain(&out.sharded_row_major).cloned().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tensors_only_get_grids_with_a_tile_per_core() {
        let l = generate(&[64, 64], DataType::BF16, Grid::new(8, 8));
        let grids: Vec<String> = l
            .sharded_tile
            .iter()
            .map(|l| format!("{}:{}", l.memory_layout.map_or("", |m| m.keyword()), l.grid2d()))
            .collect();
        // 2x2 tiles: block 1x1..2x2, height 1..2, width 1..2 cores. Deduplication is per
        // family, so each family keeps its own 1x1. Equal volumes order block, height, width.
        assert_eq!(
            grids,
            [
                "block_sharded:2x2",
                "block_sharded:2x1",
                "block_sharded:1x2",
                "height_sharded:2x1",
                "width_sharded:1x2",
                "block_sharded:1x1",
                "height_sharded:1x1",
                "width_sharded:1x1"
            ]
        );
    }

    #[test]
    fn duplicate_shard_shapes_keep_the_smallest_grid() {
        // 100 tile rows on up to 64 cores: 50 cores and 34..49 cores give the same 2/3-tile
        // shards as smaller grids, so only the smallest grid per shard shape stays.
        let l = generate(&[3200, 32], DataType::BF16, Grid::new(8, 8));
        let hs: Vec<u64> = l
            .sharded_tile
            .iter()
            .filter(|l| l.memory_layout == Some(TensorMemoryLayout::HeightSharded))
            .map(|l| l.grid2d().rows)
            .collect();
        let mut shards: Vec<u64> = l
            .sharded_tile
            .iter()
            .filter(|l| l.memory_layout == Some(TensorMemoryLayout::HeightSharded))
            .map(|l| l.memref_shape[0])
            .collect();
        shards.sort_unstable();
        shards.dedup();
        assert_eq!(shards.len(), hs.len(), "one layout per shard shape");
        assert!(hs.contains(&50) && !hs.contains(&64), "{hs:?}");
    }
}
