//! Buffer types, memory layouts, tensor types and the `#ttnn.ttnn_layout` encoding.

use std::{
    fmt::{self, Write as _},
    hash::{Hash, Hasher},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
};

use crate::{
    CoreRangeSet, DataType, Dims, ElementType, Grid, ScalarType, TILE, core_range::CoreRange,
    div_ceil,
};

/// Where a tensor's buffer lives (`#ttnn.buffer_type<...>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferType {
    Dram,
    L1,
    SystemMemory,
    L1Small,
    Trace,
}

impl BufferType {
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<BufferType> {
        Some(match s {
            "dram" => BufferType::Dram,
            "l1" => BufferType::L1,
            "system_memory" => BufferType::SystemMemory,
            "l1_small" => BufferType::L1Small,
            "trace" => BufferType::Trace,
            _ => return None,
        })
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            BufferType::Dram => "dram",
            BufferType::L1 => "l1",
            BufferType::SystemMemory => "system_memory",
            BufferType::L1Small => "l1_small",
            BufferType::Trace => "trace",
        }
    }

    /// True for buffers that occupy per-core L1 SRAM.
    #[must_use]
    pub fn is_l1(self) -> bool {
        matches!(self, BufferType::L1 | BufferType::L1Small)
    }
}

impl fmt::Display for BufferType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// How a device buffer is spread over banks (`<interleaved>`, `<height_sharded>`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorMemoryLayout {
    Interleaved,
    HeightSharded,
    WidthSharded,
    BlockSharded,
    NdSharded,
}

impl TensorMemoryLayout {
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<TensorMemoryLayout> {
        Some(match s {
            "interleaved" => TensorMemoryLayout::Interleaved,
            "height_sharded" => TensorMemoryLayout::HeightSharded,
            "width_sharded" => TensorMemoryLayout::WidthSharded,
            "block_sharded" => TensorMemoryLayout::BlockSharded,
            "nd_sharded" => TensorMemoryLayout::NdSharded,
            _ => return None,
        })
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            TensorMemoryLayout::Interleaved => "interleaved",
            TensorMemoryLayout::HeightSharded => "height_sharded",
            TensorMemoryLayout::WidthSharded => "width_sharded",
            TensorMemoryLayout::BlockSharded => "block_sharded",
            TensorMemoryLayout::NdSharded => "nd_sharded",
        }
    }

    #[must_use]
    pub fn is_sharded(self) -> bool {
        !matches!(self, TensorMemoryLayout::Interleaved)
    }
}

impl fmt::Display for TensorMemoryLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// Page layout: implied in IR by whether the memref element is a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageLayout {
    RowMajor,
    Tile,
}

impl PageLayout {
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<PageLayout> {
        match s {
            "row_major" => Some(PageLayout::RowMajor),
            "tile" => Some(PageLayout::Tile),
            _ => None,
        }
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            PageLayout::RowMajor => "row_major",
            PageLayout::Tile => "tile",
        }
    }
}

impl fmt::Display for PageLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// A ranked tensor type. `None` dims are dynamic (`?`); TTNN graphs are always static.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub shape: Vec<Option<u64>>,
    pub element: ElementType,
    /// The decoded `#ttnn.ttnn_layout` encoding, when the tensor has one.
    pub layout: Option<TtnnLayout>,
    /// Any other encoding, kept as normalized text (`#ttnn.trace_id`, `#ttcore.tensor_mesh<..>`).
    pub other_encoding: Option<String>,
}

impl TensorType {
    /// The static shape, or `None` if any dim is dynamic.
    #[must_use]
    pub fn static_shape(&self) -> Option<Vec<u64>> {
        self.shape.iter().copied().collect()
    }

    /// The element data type as the device sees it: the layout's dtype when there is a
    /// layout, else the tensor element's.
    #[must_use]
    pub fn data_type(&self) -> Option<DataType> {
        self.layout.as_ref().and_then(TtnnLayout::data_type).or_else(|| self.element.data_type())
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            match d {
                Some(d) => write!(f, "{d}x")?,
                None => f.write_str("?x")?,
            }
        }
        self.element.fmt(f)?;
        if let Some(layout) = &self.layout {
            write!(f, ", {layout}")?;
        } else if let Some(other) = &self.other_encoding {
            write!(f, ", {other}")?;
        }
        f.write_str(">")
    }
}

/// Why a requested layout cannot be built for a tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    EmptyGrid,
    GridExceedsWorkerGrid { grid: Grid, worker: Grid },
    FewerTilesThanGrid { tiles: (u64, u64), grid: Grid },
    BlockFloatRowMajor(DataType),
    NotSharded(TensorMemoryLayout),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::EmptyGrid => f.write_str("grid has no cores"),
            LayoutError::GridExceedsWorkerGrid { grid, worker } => {
                write!(f, "grid {grid} does not fit the {worker} worker grid")
            }
            LayoutError::FewerTilesThanGrid { tiles, grid } => write!(
                f,
                "{}x{} tiles cannot give every core of a {grid} grid a tile",
                tiles.0, tiles.1
            ),
            LayoutError::BlockFloatRowMajor(dt) => {
                write!(f, "block float {dt} only exists in tile layout")
            }
            LayoutError::NotSharded(ml) => write!(f, "{ml} is not a sharded memory layout"),
        }
    }
}

/// The decoded `#ttnn.ttnn_layout<...>` tensor encoding, as a shared immutable value.
///
/// A layout is a pointer to its [`LayoutData`]: every op's legal layouts, every candidate,
/// chain problem and plan holds layouts, mostly the same few per tensor shape, and a 100k-op
/// graph held gigabytes of copies. Fields read through `Deref`; a write (`DerefMut`) copies
/// the data first if it is shared. Equality and ordering are the data's.
///
/// Hashing writes one word, a hash of the data kept beside it: the op-model and cost caches
/// hash every layout of a query on every lookup, and hashing the data field by field (the
/// collapse map's text, the dims, the core ranges) was most of a lookup's cost. The hash is
/// computed on first use and forgotten by any write.
#[derive(Clone)]
pub struct TtnnLayout(Arc<Stored>);

/// A layout's data and its hash, `0` until computed.
struct Stored {
    data: LayoutData,
    hash: AtomicU64,
}

impl Clone for Stored {
    fn clone(&self) -> Stored {
        Stored { data: self.data.clone(), hash: AtomicU64::new(self.hash.load(Relaxed)) }
    }
}

impl TtnnLayout {
    /// The hash of the data (FxHash, the same in every process), never `0`.
    fn content_hash(&self) -> u64 {
        let known = self.0.hash.load(Relaxed);
        if known != 0 {
            return known;
        }
        let mut h = rustc_hash::FxHasher::default();
        self.0.data.hash(&mut h);
        let computed = h.finish().max(1);
        // Racing threads store the same value.
        self.0.hash.store(computed, Relaxed);
        computed
    }
}

impl PartialEq for TtnnLayout {
    fn eq(&self, other: &TtnnLayout) -> bool {
        if Arc::ptr_eq(&self.0, &other.0) {
            return true;
        }
        // Two known hashes that differ settle it without comparing the data.
        let (a, b) = (self.0.hash.load(Relaxed), other.0.hash.load(Relaxed));
        if a != 0 && b != 0 && a != b {
            return false;
        }
        self.0.data == other.0.data
    }
}

impl Eq for TtnnLayout {}

impl PartialOrd for TtnnLayout {
    fn partial_cmp(&self, other: &TtnnLayout) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TtnnLayout {
    fn cmp(&self, other: &TtnnLayout) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            return std::cmp::Ordering::Equal;
        }
        self.0.data.cmp(&other.0.data)
    }
}

impl Hash for TtnnLayout {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.content_hash());
    }
}

impl std::ops::Deref for TtnnLayout {
    type Target = LayoutData;
    fn deref(&self) -> &LayoutData {
        &self.0.data
    }
}

impl std::ops::DerefMut for TtnnLayout {
    fn deref_mut(&mut self) -> &mut LayoutData {
        let stored = Arc::make_mut(&mut self.0);
        // The caller may change the data: its hash is computed again when next asked for.
        *stored.hash.get_mut() = 0;
        &mut stored.data
    }
}

impl From<LayoutData> for TtnnLayout {
    fn from(data: LayoutData) -> TtnnLayout {
        TtnnLayout(Arc::new(Stored { data, hash: AtomicU64::new(0) }))
    }
}

impl fmt::Debug for TtnnLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.0.data;
        f.debug_struct("TtnnLayout")
            .field("linear_map", &d.linear_map)
            .field("grid", &d.grid)
            .field("mesh", &d.mesh)
            .field("memref_shape", &d.memref_shape)
            .field("memref_element", &d.memref_element)
            .field("buffer", &d.buffer)
            .field("memory_layout", &d.memory_layout)
            .field("core_ranges", &d.core_ranges)
            .field("ignore_physical_layout", &d.ignore_physical_layout)
            .finish()
    }
}

/// The fields of a `#ttnn.ttnn_layout<...>`.
///
/// Field by field what tt-mlir prints: the collapse map, the logical grid, an optional mesh,
/// the per-core memref (shard shape, element type, buffer type), the memory layout, the core
/// ranges of a sharded layout, and `ignorePhysicalLayout` for partial layouts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LayoutData {
    /// The affine collapse map, as normalized text (`(d0, d1) -> (d0, d1)`).
    pub linear_map: Arc<str>,
    pub grid: Dims,
    pub mesh: Option<Arc<str>>,
    pub memref_shape: Dims,
    pub memref_element: ElementType,
    pub buffer: BufferType,
    pub memory_layout: Option<TensorMemoryLayout>,
    /// Shared: most layouts of one grid carry the same ranges.
    pub core_ranges: Option<Arc<CoreRangeSet>>,
    pub ignore_physical_layout: bool,
}

/// `H` and `W` of a shape collapsed to 2D: every dim but the last folds into the height.
#[must_use]
pub fn collapse_2d(shape: &[u64]) -> (u64, u64) {
    match shape.split_last() {
        None => (1, 1),
        Some((w, rest)) => (rest.iter().fold(1u64, |acc, d| acc.saturating_mul(*d)), *w),
    }
}

/// The shape with its last two dims padded up to whole tiles, as `getTilePaddedShape` does.
#[must_use]
pub fn tile_padded_shape(shape: &[u64]) -> Vec<u64> {
    let mut s = shape.to_vec();
    if s.is_empty() {
        s.push(1);
    }
    let n = s.len();
    // Saturating: absurd dims (from malformed IR) must not panic the analysis.
    s[n - 1] = div_ceil(s[n - 1], TILE).saturating_mul(TILE);
    if n >= 2 {
        s[n - 2] = div_ceil(s[n - 2], TILE).saturating_mul(TILE);
    }
    s
}

/// The collapse map tt-mlir prints for a tensor of this (physical) shape.
///
/// `tensor<1x12x32x64xbf16>` gives `(d0, d1, d2, d3) -> (d0 * 384 + d1 * 32 + d2, d3)`; a
/// rank-1 tensor gets a constant leading row: `(d0) -> (0, d0)`.
#[must_use]
pub fn linear_map_text(physical_shape: &[u64]) -> String {
    let rank = physical_shape.len();
    let mut out = String::with_capacity(16 + 12 * rank);
    out.push('(');
    for i in 0..rank {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "d{i}");
    }
    out.push_str(") -> (");
    match rank {
        0 => out.push_str("0, 0"),
        1 => out.push_str("0, d0"),
        _ => {
            let mut any = false;
            for i in 0..rank - 1 {
                let stride: u64 =
                    physical_shape[i + 1..rank - 1].iter().fold(1u64, |a, d| a.saturating_mul(*d));
                if stride == 0 {
                    continue;
                }
                if any {
                    out.push_str(" + ");
                }
                any = true;
                let _ = write!(out, "d{i}");
                if stride != 1 {
                    let _ = write!(out, " * {stride}");
                }
            }
            if !any {
                out.push('0');
            }
            let _ = write!(out, ", d{}", rank - 1);
        }
    }
    out.push(')');
    out
}

/// [`linear_map_text`] as shared text, remembered per shape on each thread: layouts are
/// built for the same few shapes over and over (every interleaved spill the optimizer
/// considers), and each build formatted the map anew.
fn linear_map(physical_shape: &[u64]) -> Arc<str> {
    /// Shapes remembered per thread before the table starts over.
    const CAPACITY: usize = 4096;
    thread_local! {
        static MAPS: std::cell::RefCell<rustc_hash::FxHashMap<Vec<u64>, Arc<str>>> =
            std::cell::RefCell::default();
    }
    MAPS.with(|maps| {
        if let Some(text) = maps.borrow().get(physical_shape) {
            return Arc::clone(text);
        }
        let text: Arc<str> = linear_map_text(physical_shape).into();
        let mut maps = maps.borrow_mut();
        if maps.len() >= CAPACITY {
            maps.clear();
        }
        maps.insert(physical_shape.to_vec(), Arc::clone(&text));
        text
    })
}

impl TtnnLayout {
    /// The 2D logical grid (rows x cols). A one-dim grid is read as one row.
    #[must_use]
    pub fn grid2d(&self) -> Grid {
        match self.grid.as_slice() {
            [] => Grid::new(1, 1),
            [n] => Grid::new(1, *n),
            [r, c] => Grid::new(*r, *c),
            [rest @ .., c] => Grid::new(rest.iter().product(), *c),
        }
    }

    #[must_use]
    pub fn page_layout(&self) -> PageLayout {
        if self.memref_element.is_tile() { PageLayout::Tile } else { PageLayout::RowMajor }
    }

    #[must_use]
    pub fn data_type(&self) -> Option<DataType> {
        self.memref_element.data_type()
    }

    #[must_use]
    pub fn is_sharded(&self) -> bool {
        self.memory_layout.is_some_and(TensorMemoryLayout::is_sharded)
    }

    /// True for layouts that occupy L1.
    #[must_use]
    pub fn is_l1(&self) -> bool {
        self.buffer.is_l1()
    }

    /// Bytes of this layout's memref: the per-core footprint for L1 layouts.
    #[must_use]
    pub fn memref_bytes(&self) -> u64 {
        let elems = self.memref_shape.iter().fold(1u64, |a, d| a.saturating_mul(*d));
        elems.saturating_mul(self.memref_element.bytes())
    }

    /// Per-core L1 bytes of a tensor in this layout: zero outside L1.
    #[must_use]
    pub fn l1_bytes_per_core(&self) -> u64 {
        if self.is_l1() { self.memref_bytes() } else { 0 }
    }

    /// The number of cores the layout spreads over.
    #[must_use]
    pub fn num_cores(&self) -> u64 {
        match &self.core_ranges {
            Some(crs) if !crs.ranges.is_empty() => crs.num_cores(),
            _ => self.grid2d().volume().max(1),
        }
    }

    /// DRAM interleaved, grid 1x1, memref = the whole physical tensor.
    #[must_use]
    pub fn dram_interleaved(shape: &[u64], dtype: DataType, page: PageLayout) -> TtnnLayout {
        Self::interleaved(shape, dtype, page, BufferType::Dram, Grid::new(1, 1))
    }

    /// L1 interleaved over the full worker grid: pages round-robin over the cores' banks.
    #[must_use]
    pub fn l1_interleaved(
        shape: &[u64],
        dtype: DataType,
        page: PageLayout,
        worker: Grid,
    ) -> TtnnLayout {
        Self::interleaved(shape, dtype, page, BufferType::L1, worker)
    }

    fn interleaved(
        shape: &[u64],
        dtype: DataType,
        page: PageLayout,
        buffer: BufferType,
        grid: Grid,
    ) -> TtnnLayout {
        let page = if dtype.is_block_float() { PageLayout::Tile } else { page };
        let (element, phys) = element_and_physical(shape, dtype, page);
        let (h, w) = collapse_2d(&phys);
        let memref_shape = match (buffer, page) {
            (BufferType::L1, PageLayout::Tile) => {
                vec![
                    1,
                    div_ceil(div_ceil(h, TILE).saturating_mul(div_ceil(w, TILE)), grid.volume()),
                ]
            }
            (BufferType::L1, PageLayout::RowMajor) => {
                vec![1, div_ceil(h.saturating_mul(w), grid.volume())]
            }
            (_, PageLayout::Tile) => vec![div_ceil(h, TILE), div_ceil(w, TILE)],
            (_, PageLayout::RowMajor) => vec![h, w],
        };
        TtnnLayout::from(LayoutData {
            linear_map: linear_map(&phys),
            grid: crate::smallvec![grid.rows, grid.cols],
            mesh: None,
            memref_shape: memref_shape.into(),
            memref_element: element,
            buffer,
            memory_layout: Some(TensorMemoryLayout::Interleaved),
            core_ranges: None,
            ignore_physical_layout: false,
        })
    }

    /// Host memory, row-major, no memory layout.
    #[must_use]
    pub fn system_memory(shape: &[u64], scalar: ScalarType) -> TtnnLayout {
        let (h, w) = collapse_2d(shape);
        TtnnLayout::from(LayoutData {
            linear_map: linear_map(shape),
            grid: crate::smallvec![1, 1],
            mesh: None,
            memref_shape: crate::smallvec![h, w],
            memref_element: ElementType::Scalar(scalar),
            buffer: BufferType::SystemMemory,
            memory_layout: None,
            core_ranges: None,
            ignore_physical_layout: false,
        })
    }

    /// An L1 sharded layout with canonical core placement.
    ///
    /// `grid` is the logical grid: `[n, 1]` for height sharding, `[1, n]` for width sharding,
    /// `[rows, cols]` for block sharding. Tiled layouts must give every grid row and column at
    /// least one tile, the search-space rule tt-mlir applies.
    pub fn sharded(
        shape: &[u64],
        dtype: DataType,
        page: PageLayout,
        memory_layout: TensorMemoryLayout,
        grid: Grid,
        worker: Grid,
    ) -> Result<TtnnLayout, LayoutError> {
        if grid.volume() == 0 {
            return Err(LayoutError::EmptyGrid);
        }
        if page == PageLayout::RowMajor && dtype.is_block_float() {
            return Err(LayoutError::BlockFloatRowMajor(dtype));
        }
        let core_ranges = match memory_layout {
            TensorMemoryLayout::BlockSharded => {
                if grid.rows > worker.rows || grid.cols > worker.cols {
                    return Err(LayoutError::GridExceedsWorkerGrid { grid, worker });
                }
                CoreRangeSet::block(grid)
            }
            TensorMemoryLayout::HeightSharded | TensorMemoryLayout::WidthSharded => {
                let n = grid.volume();
                if n > worker.volume() {
                    return Err(LayoutError::GridExceedsWorkerGrid { grid, worker });
                }
                CoreRangeSet::row_major(n, worker)
            }
            other => return Err(LayoutError::NotSharded(other)),
        };
        let (element, phys) = element_and_physical(shape, dtype, page);
        let (h, w) = collapse_2d(&phys);
        let memref_shape = match page {
            PageLayout::Tile => {
                let (th, tw) = (div_ceil(h, TILE), div_ceil(w, TILE));
                if th < grid.rows || tw < grid.cols {
                    return Err(LayoutError::FewerTilesThanGrid { tiles: (th, tw), grid });
                }
                vec![div_ceil(th, grid.rows), div_ceil(tw, grid.cols)]
            }
            PageLayout::RowMajor => vec![div_ceil(h, grid.rows), div_ceil(w, grid.cols)],
        };
        Ok(TtnnLayout::from(LayoutData {
            linear_map: linear_map(&phys),
            grid: crate::smallvec![grid.rows, grid.cols],
            mesh: None,
            memref_shape: memref_shape.into(),
            memref_element: element,
            buffer: BufferType::L1,
            memory_layout: Some(memory_layout),
            core_ranges: Some(Arc::new(core_ranges)),
            ignore_physical_layout: false,
        }))
    }

    /// A partial layout (`ignorePhysicalLayout = true`): buffer type and memory layout only,
    /// the backend picks the grid and shard. Matmul output hints use this.
    #[must_use]
    pub fn partial(&self) -> TtnnLayout {
        let mut out = self.clone();
        out.ignore_physical_layout = true;
        out
    }

    /// The same layout with another data type (tile dtype or row-major scalar).
    #[must_use]
    pub fn with_data_type(&self, dtype: DataType) -> TtnnLayout {
        let memref_element = match self.memref_element {
            ElementType::Tile { height, width, .. } => ElementType::Tile { height, width, dtype },
            ElementType::Scalar(s) => {
                dtype.scalar_type().map_or(ElementType::Scalar(s), ElementType::Scalar)
            }
        };
        let mut out = self.clone();
        out.memref_element = memref_element;
        out
    }

    /// The memref shape a canonical layout of this kind would have for `shape`, used to check
    /// hand-written or rewritten IR for consistency.
    #[must_use]
    pub fn expected_memref_shape(&self, shape: &[u64], worker: Grid) -> Option<Vec<u64>> {
        let dtype = self.data_type()?;
        let page = self.page_layout();
        let canonical = match (self.buffer, self.memory_layout) {
            (BufferType::SystemMemory, _) => return None,
            (BufferType::Dram, Some(TensorMemoryLayout::Interleaved)) => {
                TtnnLayout::dram_interleaved(shape, dtype, page)
            }
            (BufferType::L1, Some(TensorMemoryLayout::Interleaved)) => {
                TtnnLayout::l1_interleaved(shape, dtype, page, self.grid2d())
            }
            (BufferType::L1, Some(ml)) if ml.is_sharded() && !self.ignore_physical_layout => {
                TtnnLayout::sharded(shape, dtype, page, ml, self.grid2d(), worker).ok()?
            }
            _ => return None,
        };
        Some(canonical.memref_shape.to_vec())
    }

    /// Writes the layout as MLIR text; `buffer_ref` spells a buffer type (an alias such as
    /// `#dram`, or the full `#ttnn.buffer_type<dram>`).
    pub fn write_mlir(
        &self,
        out: &mut String,
        buffer_ref: &dyn Fn(BufferType) -> String,
    ) -> fmt::Result {
        write!(out, "#ttnn.ttnn_layout<{}, <", self.linear_map)?;
        for (i, g) in self.grid.iter().enumerate() {
            if i > 0 {
                out.push('x');
            }
            write!(out, "{g}")?;
        }
        out.push_str(">, ");
        if let Some(mesh) = &self.mesh {
            write!(out, "mesh = <\"{mesh}\">, ")?;
        }
        out.push_str("memref<");
        for d in &self.memref_shape {
            write!(out, "{d}x")?;
        }
        write!(out, "{}, {}>", self.memref_element, buffer_ref(self.buffer))?;
        if let Some(ml) = self.memory_layout {
            write!(out, ", <{ml}>")?;
        }
        if let Some(crs) = &self.core_ranges {
            write!(out, ", core_ranges = {crs}")?;
        }
        if self.ignore_physical_layout {
            out.push_str(", ignorePhysicalLayout = true");
        }
        out.push('>');
        Ok(())
    }

    /// A short human description: `L1 block_sharded 2x8, shard 1x1 tiles (bf16)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = match self.buffer {
            BufferType::Dram => "DRAM".to_owned(),
            BufferType::L1 => "L1".to_owned(),
            BufferType::SystemMemory => "host".to_owned(),
            BufferType::L1Small => "L1-small".to_owned(),
            BufferType::Trace => "trace".to_owned(),
        };
        if let Some(ml) = self.memory_layout {
            let _ = write!(s, " {ml}");
        }
        if self.is_sharded() {
            let _ = write!(s, " {}", self.grid2d());
        }
        let unit = if self.memref_element.is_tile() { "tiles" } else { "elements" };
        let shard: Vec<String> = self.memref_shape.iter().map(u64::to_string).collect();
        let what =
            if self.is_sharded() || self.buffer == BufferType::L1 { "per core" } else { "total" };
        let _ = write!(s, ", {} {unit} {what}", shard.join("x"));
        match (self.data_type(), self.page_layout()) {
            (Some(dt), PageLayout::Tile) => {
                let _ = write!(s, " ({dt})");
            }
            (Some(dt), PageLayout::RowMajor) => {
                let _ = write!(s, " ({dt}, row-major)");
            }
            (None, _) => {}
        }
        if self.ignore_physical_layout {
            s.push_str(", partial");
        }
        s
    }

    /// All cores the layout occupies, as a bounding rectangle (for L1 interleaved: the grid).
    #[must_use]
    pub fn bounding_box(&self) -> Option<CoreRange> {
        self.core_ranges.as_deref().and_then(CoreRangeSet::bounding_box)
    }
}

impl fmt::Display for TtnnLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_mlir(&mut s, &|b| format!("#ttnn.buffer_type<{b}>"))?;
        f.write_str(&s)
    }
}

/// The memref element type and the physical (possibly tile-padded) shape.
fn element_and_physical(
    shape: &[u64],
    dtype: DataType,
    page: PageLayout,
) -> (ElementType, Vec<u64>) {
    match page {
        PageLayout::Tile => {
            (ElementType::Tile { height: TILE, width: TILE, dtype }, tile_padded_shape(shape))
        }
        PageLayout::RowMajor => {
            let scalar = dtype.scalar_type().unwrap_or(ScalarType::BF16);
            (ElementType::Scalar(scalar), shape.to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    const WORKER: Grid = Grid::new(8, 8);

    #[test]
    fn dram_interleaved_matches_the_printer() {
        let l = TtnnLayout::dram_interleaved(&[1, 12, 32, 64], DataType::BF16, PageLayout::Tile);
        expect![[r#"#ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 384 + d1 * 32 + d2, d3), <1x1>, memref<12x2x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<dram>>, <interleaved>>"#]]
            .assert_eq(&l.to_string());
    }

    #[test]
    fn a_layouts_kept_hash_follows_its_data_through_copies_and_writes() {
        let hash = |l: &TtnnLayout| {
            let mut h = rustc_hash::FxHasher::default();
            l.hash(&mut h);
            h.finish()
        };
        let a = TtnnLayout::dram_interleaved(&[1, 12, 32, 64], DataType::BF16, PageLayout::Tile);
        let b = TtnnLayout::dram_interleaved(&[1, 12, 32, 64], DataType::BF16, PageLayout::Tile);
        assert!(!Arc::ptr_eq(&a.0, &b.0), "built twice, not shared");
        assert_eq!(a, b);
        assert_eq!(hash(&a), hash(&b));
        // A write to a shared copy leaves the original and its hash as they were, and the
        // copy's hash is its new data's.
        let mut c = a.clone();
        c.buffer = BufferType::L1;
        assert_ne!(a, c);
        assert_ne!(hash(&a), hash(&c));
        assert_eq!(hash(&a), hash(&b));
        let mut d = b.clone();
        d.buffer = BufferType::L1;
        assert_eq!(c, d);
        assert_eq!(hash(&c), hash(&d));
        // A write after the hash was asked for is seen too.
        d.buffer = BufferType::Dram;
        assert_eq!(d, a);
        assert_eq!(hash(&d), hash(&a));
        assert_eq!(a.cmp(&d), std::cmp::Ordering::Equal);
    }

    #[test]
    fn collapse_maps_cover_every_rank_and_skip_zero_strides() {
        let maps: Vec<String> =
            [&[][..], &[7], &[3, 5], &[2, 0, 4, 6], &[1, 12, 32, 64], &[2, 3, 4]]
                .iter()
                .map(|shape| linear_map_text(shape))
                .collect();
        expect![[r#"
            () -> (0, 0)
            (d0) -> (0, d0)
            (d0, d1) -> (d0, d1)
            (d0, d1, d2, d3) -> (d1 * 4 + d2, d3)
            (d0, d1, d2, d3) -> (d0 * 384 + d1 * 32 + d2, d3)
            (d0, d1, d2) -> (d0 * 3 + d1, d2)"#]]
        .assert_eq(&maps.join("\n"));
        // The remembered copy is the same text.
        assert_eq!(&*linear_map(&[1, 12, 32, 64]), maps[4].as_str());
        assert_eq!(&*linear_map(&[1, 12, 32, 64]), maps[4].as_str());
    }

    #[test]
    fn rank_one_tensors_get_a_constant_row() {
        let l = TtnnLayout::dram_interleaved(&[100], DataType::SI32, PageLayout::Tile);
        expect![[r#"#ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x4x!ttcore.tile<32x32, si32>, #ttnn.buffer_type<dram>>, <interleaved>>"#]]
            .assert_eq(&l.to_string());
    }

    #[test]
    fn height_sharding_places_cores_row_major() {
        let l = TtnnLayout::sharded(
            &[1024, 64],
            DataType::BF16,
            PageLayout::Tile,
            TensorMemoryLayout::HeightSharded,
            Grid::new(32, 1),
            WORKER,
        )
        .unwrap();
        expect![[r#"#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <32x1>, memref<1x2x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<l1>>, <height_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (7,3)>]>>"#]]
            .assert_eq(&l.to_string());
        assert_eq!(l.l1_bytes_per_core(), 4096);
    }

    #[test]
    fn l1_interleaved_spreads_pages_over_all_banks() {
        let l = TtnnLayout::l1_interleaved(&[64, 1024], DataType::BF16, PageLayout::Tile, WORKER);
        assert_eq!(l.memref_shape[..], [1, 1]);
        assert_eq!(l.l1_bytes_per_core(), 2048);
    }

    #[test]
    fn block_sharding_needs_a_tile_per_grid_row_and_column() {
        let err = TtnnLayout::sharded(
            &[32, 64],
            DataType::BF16,
            PageLayout::Tile,
            TensorMemoryLayout::BlockSharded,
            Grid::new(2, 2),
            WORKER,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "1x2 tiles cannot give every core of a 2x2 grid a tile");
    }

    #[test]
    fn tile_padding_saturates_instead_of_overflowing() {
        assert_eq!(tile_padded_shape(&[u64::MAX, 33]), vec![u64::MAX, 64]);
        let l = TtnnLayout::dram_interleaved(&[u64::MAX, 2], DataType::BF16, PageLayout::Tile);
        assert_eq!(l.memref_shape[1], 1);
    }

    #[test]
    fn matmul_output_shard_matches_the_worked_example() {
        let l = TtnnLayout::sharded(
            &[1792, 1792],
            DataType::BF16,
            PageLayout::Tile,
            TensorMemoryLayout::BlockSharded,
            Grid::new(7, 8),
            WORKER,
        )
        .unwrap();
        assert_eq!(l.l1_bytes_per_core(), 114_688);
    }
}
