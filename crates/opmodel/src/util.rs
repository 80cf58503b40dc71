//! Shared arithmetic for the op families: the query context, output-layout resolution, tile
//! counts and grid choices.

use target::Target;
use ttnn_types::{
    BufferType, DataType, Grid, PageLayout, TILE, TensorMemoryLayout, TtnnLayout, collapse_2d,
    div_ceil, tile_padded_shape,
};

use crate::{OpConfig, OpError, OpQuery, OutputHint, TensorDesc};

/// What a family computes before the common budget check.
pub(crate) struct Estimate {
    pub(crate) cb: u64,
    pub(crate) tensor: u64,
    /// `None` means `cb + tensor`.
    pub(crate) peak: Option<u64>,
    pub(crate) output: TtnnLayout,
    pub(crate) config: OpConfig,
}

impl Estimate {
    /// CBs plus a freshly allocated output.
    pub(crate) fn new(cb: u64, output: TtnnLayout) -> Estimate {
        Estimate {
            cb,
            tensor: output.l1_bytes_per_core(),
            peak: None,
            output,
            config: OpConfig::None,
        }
    }

    /// An output that aliases an existing buffer: nothing new is allocated.
    pub(crate) fn view(output: TtnnLayout) -> Estimate {
        Estimate { cb: 0, tensor: 0, peak: None, output, config: OpConfig::None }
    }

    pub(crate) fn plus_tensor(mut self, bytes: u64) -> Estimate {
        self.tensor = self.tensor.saturating_add(bytes);
        self
    }
}

pub(crate) fn unsupported(reason: impl Into<String>) -> OpError {
    OpError::Unsupported { reason: reason.into() }
}

pub(crate) fn invalid(reason: impl Into<String>) -> OpError {
    OpError::Invalid { reason: reason.into() }
}

/// How an op picks its output memory config when the hint is null.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum NullPolicy {
    /// ttnn's "memory_config = given, or else input 0's".
    InheritInput0,
    /// Matmul, concat, attention and creation ops default to DRAM interleaved.
    Dram,
}

/// One query with its target.
pub(crate) struct Ctx<'a> {
    pub(crate) target: &'a Target,
    pub(crate) q: &'a OpQuery,
}

impl<'a> Ctx<'a> {
    pub(crate) fn name(&self) -> &str {
        self.q.kind.name()
    }

    pub(crate) fn worker(&self) -> Grid {
        self.target.worker_grid()
    }

    pub(crate) fn input(&self, i: usize) -> Result<&'a TensorDesc, OpError> {
        self.q.inputs.get(i).ok_or_else(|| {
            invalid(format!(
                "{} needs operand {i}, the query has {} tensor operands",
                self.name(),
                self.q.inputs.len()
            ))
        })
    }

    /// Tile bytes of operand `i`'s data type (the output's when the layout has none).
    pub(crate) fn in_tb(&self, i: usize) -> u64 {
        self.in_dtype(i).tile_bytes()
    }

    pub(crate) fn in_dtype(&self, i: usize) -> DataType {
        self.q.inputs.get(i).and_then(|t| t.layout.data_type()).unwrap_or(self.q.output_dtype)
    }

    pub(crate) fn out_tb(&self) -> u64 {
        self.q.output_dtype.tile_bytes()
    }

    /// Width of operand `i` in tiles (the collapsed last dim).
    pub(crate) fn in_wt(&self, i: usize) -> u64 {
        self.q.inputs.get(i).map_or(1, |t| tiles_2d(&t.shape).1.max(1))
    }

    /// Every operand must be on device, and not in a memory layout this op rejects.
    pub(crate) fn check_inputs(&self) -> Result<(), OpError> {
        for (i, t) in self.q.inputs.iter().enumerate() {
            let on_device = matches!(t.layout.buffer, BufferType::Dram | BufferType::L1);
            let from_host =
                t.layout.buffer == BufferType::SystemMemory && self.q.kind.accepts_host_operand(i);
            if !on_device && !from_host {
                return Err(invalid(format!(
                    "{} operand {i} is in {} memory, not on device",
                    self.name(),
                    t.layout.buffer
                )));
            }
            if let Some(ml) = t.layout.memory_layout
                && self.q.kind.rejected_input_memory_layouts(i).contains(&ml)
            {
                return Err(unsupported(format!("{} rejects a {ml} operand {i}", self.name())));
            }
        }
        Ok(())
    }

    /// A canonical layout like `layout` (buffer, memory layout, grid, page) for the output.
    pub(crate) fn output_like(&self, layout: &TtnnLayout) -> Result<TtnnLayout, OpError> {
        like(layout, &self.q.output_shape, self.q.output_dtype, self.worker())
    }

    pub(crate) fn dram_output(&self, page: PageLayout) -> TtnnLayout {
        TtnnLayout::dram_interleaved(&self.q.output_shape, self.q.output_dtype, page)
    }

    pub(crate) fn l1_interleaved_output(&self, page: PageLayout) -> TtnnLayout {
        TtnnLayout::l1_interleaved(&self.q.output_shape, self.q.output_dtype, page, self.worker())
    }

    /// The page layout an output defaults to: input 0's, or tile for ops without inputs.
    pub(crate) fn default_page(&self) -> PageLayout {
        self.q.inputs.first().map_or(PageLayout::Tile, |t| t.layout.page_layout())
    }

    /// Resolves the output hint with the common rules:
    /// * an explicit layout is rebuilt for the output shape and dtype;
    /// * a partial layout keeps buffer type and memory layout; a sharded one takes input 0's
    ///   grid when input 0 has the same memory layout, else an even split chosen here;
    /// * a null hint follows `null`.
    pub(crate) fn resolve_output(&self, null: NullPolicy) -> Result<TtnnLayout, OpError> {
        match &self.q.output {
            OutputHint::Layout(l) => self.output_like(l),
            OutputHint::Partial(l) => self.resolve_partial(l),
            OutputHint::Null => match (null, self.q.inputs.first()) {
                (NullPolicy::InheritInput0, Some(t)) => self.output_like(&t.layout),
                _ => Ok(self.dram_output(self.default_page())),
            },
        }
    }

    pub(crate) fn resolve_partial(&self, l: &TtnnLayout) -> Result<TtnnLayout, OpError> {
        let Some(ml) = l.memory_layout.filter(|m| m.is_sharded()) else {
            return self.output_like(l);
        };
        if let Some(t) = self.q.inputs.first()
            && t.layout.memory_layout == Some(ml)
            && t.layout.is_l1()
            && t.layout.page_layout() == l.page_layout()
            && let Ok(out) = self.output_like(&t.layout)
        {
            return Ok(out);
        }
        let grid = even_grid(ml, &self.q.output_shape, self.worker());
        sharded(&self.q.output_shape, self.q.output_dtype, l.page_layout(), ml, grid, self.worker())
    }
}

/// Rebuilds `layout`'s kind of layout for another shape and data type.
pub(crate) fn like(
    layout: &TtnnLayout,
    shape: &[u64],
    dtype: DataType,
    worker: Grid,
) -> Result<TtnnLayout, OpError> {
    let page = layout.page_layout();
    match (layout.buffer, layout.memory_layout) {
        (BufferType::Dram, Some(TensorMemoryLayout::Interleaved)) => {
            Ok(TtnnLayout::dram_interleaved(shape, dtype, page))
        }
        (BufferType::L1, Some(TensorMemoryLayout::Interleaved)) => {
            Ok(TtnnLayout::l1_interleaved(shape, dtype, page, worker))
        }
        (BufferType::L1, Some(ml)) if ml.is_sharded() && ml != TensorMemoryLayout::NdSharded => {
            sharded(shape, dtype, page, ml, layout.grid2d(), worker)
        }
        (BufferType::SystemMemory, _) => Ok(TtnnLayout::system_memory(
            shape,
            dtype.scalar_type().unwrap_or(ttnn_types::ScalarType::BF16),
        )),
        (buffer, ml) => Err(unsupported(format!(
            "{buffer} {} layouts are not modelled",
            ml.map_or("(no memory layout)", TensorMemoryLayout::keyword)
        ))),
    }
}

pub(crate) fn sharded(
    shape: &[u64],
    dtype: DataType,
    page: PageLayout,
    ml: TensorMemoryLayout,
    grid: Grid,
    worker: Grid,
) -> Result<TtnnLayout, OpError> {
    TtnnLayout::sharded(shape, dtype, page, ml, grid, worker).map_err(|e| {
        invalid(format!("cannot shard a {} tensor {ml} over {grid}: {e}", shape_text(shape)))
    })
}

/// Helpers on layouts that only the op model needs.
pub(crate) trait LayoutExt {
    fn is_l1_sharded(&self) -> bool;
    fn is_dram_interleaved(&self) -> bool;
    /// The shard in tiles `(rows, cols)`; the whole tensor for DRAM, `[1, n]` for L1 interleaved.
    fn shard_tiles(&self) -> (u64, u64);
    fn same_placement(&self, other: &TtnnLayout) -> bool;
}

impl LayoutExt for TtnnLayout {
    fn is_l1_sharded(&self) -> bool {
        self.is_l1() && self.is_sharded()
    }

    fn is_dram_interleaved(&self) -> bool {
        self.buffer == BufferType::Dram
            && self.memory_layout == Some(TensorMemoryLayout::Interleaved)
    }

    fn shard_tiles(&self) -> (u64, u64) {
        let (r, c) = match self.memref_shape.as_slice() {
            [r, c] => (*r, *c),
            [c] => (1, *c),
            [] => (1, 1),
            [rest @ .., c] => (rest.iter().product(), *c),
        };
        if self.memref_element.is_tile() { (r, c) } else { (div_ceil(r, TILE), div_ceil(c, TILE)) }
    }

    fn same_placement(&self, other: &TtnnLayout) -> bool {
        self.buffer == other.buffer
            && self.memory_layout == other.memory_layout
            && self.grid2d() == other.grid2d()
            && self.memref_shape == other.memref_shape
    }
}

/// Tile rows and columns of a shape after tile padding and the 2D collapse.
pub(crate) fn tiles_2d(shape: &[u64]) -> (u64, u64) {
    let (h, w) = collapse_2d(&tile_padded_shape(shape));
    (div_ceil(h, TILE), div_ceil(w, TILE))
}

/// The largest divisor of `n` that is at most `max` (1 for `n == 0`).
pub(crate) fn largest_divisor_at_most(n: u64, max: u64) -> u64 {
    let max = max.min(n).max(1);
    (1..=max).rev().find(|d| n.is_multiple_of(*d)).unwrap_or(1)
}

/// How many cores to split `units` over: the largest even split, unless that wastes more
/// than half the cores, in which case tt-metal pads the last shard instead.
pub(crate) fn even_split(units: u64, max_cores: u64) -> u64 {
    let cap = units.min(max_cores).max(1);
    let even = largest_divisor_at_most(units, cap);
    if even.saturating_mul(2) >= cap { even } else { cap }
}

/// A grid for a sharded output the backend picks itself.
pub(crate) fn even_grid(ml: TensorMemoryLayout, shape: &[u64], worker: Grid) -> Grid {
    let (th, tw) = tiles_2d(shape);
    match ml {
        TensorMemoryLayout::WidthSharded => Grid::new(1, even_split(tw, worker.volume())),
        TensorMemoryLayout::BlockSharded => {
            Grid::new(even_split(th, worker.rows), even_split(tw, worker.cols))
        }
        _ => Grid::new(even_split(th, worker.volume()), 1),
    }
}

pub(crate) fn shape_text(shape: &[u64]) -> String {
    if shape.is_empty() {
        return "scalar".to_owned();
    }
    shape.iter().map(u64::to_string).collect::<Vec<_>>().join("x")
}

/// Numpy-style broadcast of two shapes, or `None` if incompatible.
pub(crate) fn broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i < n - a.len() { 1 } else { a[i - (n - a.len())] };
        let db = if i < n - b.len() { 1 } else { b[i - (n - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Normalizes a possibly negative dim against a rank; `None` if out of range.
pub(crate) fn norm_dim(dim: i64, rank: usize) -> Option<usize> {
    let rank_i = i64::try_from(rank).ok()?;
    let d = if dim < 0 { dim + rank_i } else { dim };
    if (0..rank_i).contains(&d) { usize::try_from(d).ok() } else { None }
}

/// Bytes of one row-major page (a row of the last dim), aligned to the L1 alignment.
pub(crate) fn row_page_bytes(shape: &[u64], dtype: DataType, align: u64) -> u64 {
    let w = shape.last().copied().unwrap_or(1);
    let bytes = w.saturating_mul(dtype.elem_bytes());
    if align <= 1 { bytes } else { div_ceil(bytes, align).saturating_mul(align) }
}

/// Per-core bytes of a tensor of `shape`/`dtype` placed like `layout` (0 outside L1).
pub(crate) fn bytes_like(layout: &TtnnLayout, shape: &[u64], dtype: DataType, worker: Grid) -> u64 {
    like(layout, shape, dtype, worker).map_or(0, |l| l.l1_bytes_per_core())
}
