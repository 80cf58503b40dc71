//! Core grids, core coordinates and core range sets.
//!
//! TTNN writes core coordinates x first (`#ttnn.core_range<(x,y), (x,y)>`), while grid shapes
//! are written rows first (`<RxC>`, i.e. y then x). Both conventions are kept explicit here.

use std::fmt;

use smallvec::{SmallVec, smallvec};

/// A 2D grid shape, rows (y) by columns (x), as written in a layout's `<RxC>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Grid {
    pub rows: u64,
    pub cols: u64,
}

impl Grid {
    #[must_use]
    pub const fn new(rows: u64, cols: u64) -> Grid {
        Grid { rows, cols }
    }

    #[must_use]
    pub fn volume(self) -> u64 {
        self.rows.saturating_mul(self.cols)
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// A core coordinate, x (column) first as in `#ttnn.core_coord<x, y>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoreCoord {
    pub x: u64,
    pub y: u64,
}

/// An inclusive rectangle of cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoreRange {
    pub start: CoreCoord,
    pub end: CoreCoord,
}

impl CoreRange {
    #[must_use]
    pub fn num_cores(self) -> u64 {
        let w = self.end.x.saturating_sub(self.start.x) + 1;
        let h = self.end.y.saturating_sub(self.start.y) + 1;
        w * h
    }

    #[must_use]
    pub fn intersects(self, other: CoreRange) -> bool {
        self.start.x <= other.end.x
            && other.start.x <= self.end.x
            && self.start.y <= other.end.y
            && other.start.y <= self.end.y
    }
}

impl fmt::Display for CoreRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#ttnn.core_range<({},{}), ({},{})>",
            self.start.x, self.start.y, self.end.x, self.end.y
        )
    }
}

/// A set of disjoint core ranges.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CoreRangeSet {
    /// One range inline (a block or a whole-row grid): most layouts allocate nothing.
    pub ranges: SmallVec<[CoreRange; 1]>,
}

impl CoreRangeSet {
    #[must_use]
    pub fn num_cores(&self) -> u64 {
        self.ranges.iter().map(|r| r.num_cores()).sum()
    }

    /// The bounding box of all ranges, or `None` for an empty set.
    #[must_use]
    pub fn bounding_box(&self) -> Option<CoreRange> {
        let first = self.ranges.first()?;
        let mut bb = *first;
        for r in &self.ranges[1..] {
            bb.start.x = bb.start.x.min(r.start.x);
            bb.start.y = bb.start.y.min(r.start.y);
            bb.end.x = bb.end.x.max(r.end.x);
            bb.end.y = bb.end.y.max(r.end.y);
        }
        Some(bb)
    }

    /// True when the ranges exactly fill their bounding box (no holes, no partial row).
    #[must_use]
    pub fn is_full_rectangle(&self) -> bool {
        self.bounding_box().is_some_and(|bb| bb.num_cores() == self.num_cores())
    }

    /// The first pair of ranges that overlap, if any: core range sets must be disjoint.
    #[must_use]
    pub fn first_overlap(&self) -> Option<(CoreRange, CoreRange)> {
        for (i, a) in self.ranges.iter().enumerate() {
            for b in &self.ranges[i + 1..] {
                if a.intersects(*b) {
                    return Some((*a, *b));
                }
            }
        }
        None
    }

    /// Canonical placement of a block-sharded grid: one rectangle `(0,0)..(cols-1, rows-1)`.
    #[must_use]
    pub fn block(grid: Grid) -> CoreRangeSet {
        if grid.rows == 0 || grid.cols == 0 {
            return CoreRangeSet::default();
        }
        CoreRangeSet {
            ranges: smallvec![CoreRange {
                start: CoreCoord { x: 0, y: 0 },
                end: CoreCoord { x: grid.cols - 1, y: grid.rows - 1 },
            }],
        }
    }

    /// Canonical placement of `n` cores for height or width sharding: full rows of the worker
    /// grid first, then one partial row. This can be two ranges, so not a rectangle.
    #[must_use]
    pub fn row_major(n: u64, worker_grid: Grid) -> CoreRangeSet {
        let width = worker_grid.cols.max(1);
        let full_rows = n / width;
        let rest = n % width;
        let mut ranges = SmallVec::new();
        if full_rows > 0 {
            ranges.push(CoreRange {
                start: CoreCoord { x: 0, y: 0 },
                end: CoreCoord { x: width - 1, y: full_rows - 1 },
            });
        }
        if rest > 0 {
            ranges.push(CoreRange {
                start: CoreCoord { x: 0, y: full_rows },
                end: CoreCoord { x: rest - 1, y: full_rows },
            });
        }
        CoreRangeSet { ranges }
    }
}

impl fmt::Display for CoreRangeSet {
    /// Prints the stripped form used inside layouts: `<[#ttnn.core_range<(0,0), (7,7)>]>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<[")?;
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            r.fmt(f)?;
        }
        f.write_str("]>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_placement_fills_rows_then_a_tail() {
        let set = CoreRangeSet::row_major(20, Grid::new(8, 8));
        assert_eq!(
            set.to_string(),
            "<[#ttnn.core_range<(0,0), (7,1)>, #ttnn.core_range<(0,2), (3,2)>]>"
        );
        assert_eq!(set.num_cores(), 20);
        assert!(!set.is_full_rectangle());
        assert!(CoreRangeSet::row_major(32, Grid::new(8, 8)).is_full_rectangle());
    }
}
