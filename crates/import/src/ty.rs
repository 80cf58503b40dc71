//! Tensor types as the importer emits them, and the layout aliases that spell them.
//!
//! TTIR element types are normalized the way tt-mlir's `ttir-element-type-normalization` pass
//! does before layouts are assigned: booleans become `bf16` (not every TTNN op takes `u8`),
//! 64-bit integers become 32-bit ones, `f64` becomes `f32`, and rank-0 tensors become
//! `tensor<1x..>`. Every tensor then lives in DRAM, interleaved; tiled unless a lowering asks
//! for row-major pages (the indices of an embedding).

use std::fmt::Write as _;

use rustc_hash::FxHashMap;
use ttnn_types::{
    BufferType, DataType, ElementType, PageLayout, ScalarType, Signedness, TensorType, TtnnLayout,
};

/// A tensor type of the output: static shape, device data type and page layout. The buffer is
/// always DRAM, interleaved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TType {
    pub(crate) shape: Vec<u64>,
    pub(crate) dtype: DataType,
    pub(crate) page: PageLayout,
}

impl TType {
    pub(crate) fn tile(shape: Vec<u64>, dtype: DataType) -> TType {
        TType { shape, dtype, page: PageLayout::Tile }
    }

    /// The same data type, tiled, with another shape.
    pub(crate) fn reshaped(&self, shape: Vec<u64>) -> TType {
        TType { shape, dtype: self.dtype, page: PageLayout::Tile }
    }

    pub(crate) fn rank(&self) -> usize {
        self.shape.len()
    }

    pub(crate) fn layout(&self) -> TtnnLayout {
        TtnnLayout::dram_interleaved(&self.shape, self.dtype, self.page)
    }

    /// The MLIR element type of the tensor (`bf16`, `si32`, `ui32`, ...).
    pub(crate) fn scalar(&self) -> ScalarType {
        scalar_of(self.dtype)
    }
}

/// The scalar MLIR type a device data type is written with. Block floats never reach here:
/// the importer only produces data types that TTIR element types normalize to.
pub(crate) fn scalar_of(dtype: DataType) -> ScalarType {
    dtype.scalar_type().unwrap_or(ScalarType::BF16)
}

/// The device data type of a TTIR scalar element type, after tt-mlir's element type
/// normalization. `None` for types TTNN has no tensors of (`index`, `i4`, `i128`).
pub(crate) fn normalize_scalar(s: ScalarType) -> Option<DataType> {
    Some(match s {
        ScalarType::F16 => DataType::F16,
        ScalarType::BF16 => DataType::BF16,
        ScalarType::F32 | ScalarType::F64 => DataType::F32,
        ScalarType::Int { width: 1, .. } => DataType::BF16,
        ScalarType::Int { width: 8, .. } => DataType::U8,
        ScalarType::Int { width: 16, signedness: Signedness::Unsigned } => DataType::U16,
        ScalarType::Int { width: 32 | 64, signedness: Signedness::Unsigned } => DataType::U32,
        ScalarType::Int { width: 16 | 32 | 64, .. } => DataType::SI32,
        _ => return None,
    })
}

/// Converts a TTIR tensor type. `None` for dynamic shapes, tile elements and element types
/// TTNN cannot hold.
pub(crate) fn convert_tensor(t: &TensorType) -> Option<TType> {
    let mut shape = t.static_shape()?;
    let ElementType::Scalar(s) = t.element else { return None };
    let dtype = normalize_scalar(s)?;
    if shape.is_empty() {
        shape.push(1);
    }
    Some(TType::tile(shape, dtype))
}

/// The layouts used in one output chunk, each printed once as `#ttnn_layoutN`.
#[derive(Default)]
pub(crate) struct Layouts {
    list: Vec<TtnnLayout>,
    index: FxHashMap<TtnnLayout, usize>,
    type_texts: FxHashMap<TType, String>,
}

impl Layouts {
    fn alias(&mut self, layout: TtnnLayout) -> String {
        let next = self.list.len();
        let i = *self.index.entry(layout.clone()).or_insert(next);
        if i == next {
            self.list.push(layout);
        }
        alias_name(i)
    }

    /// `tensor<1x32xbf16, #ttnn_layout3>`, registering the layout on first use.
    pub(crate) fn type_text(&mut self, t: &TType) -> String {
        if let Some(s) = self.type_texts.get(t) {
            return s.clone();
        }
        let alias = self.alias(t.layout());
        let mut s = String::from("tensor<");
        for d in &t.shape {
            let _ = write!(s, "{d}x");
        }
        let _ = write!(s, "{}, {alias}>", t.scalar());
        self.type_texts.insert(t.clone(), s.clone());
        s
    }

    /// The alias definitions: buffer types first, then the layouts in order of first use.
    pub(crate) fn header(&self) -> String {
        let mut out = String::new();
        if self.list.is_empty() {
            return out;
        }
        let mut buffers: Vec<BufferType> = self.list.iter().map(|l| l.buffer).collect();
        buffers.sort();
        buffers.dedup();
        for b in buffers {
            let _ = writeln!(out, "#{b} = #ttnn.buffer_type<{b}>");
        }
        for (i, l) in self.list.iter().enumerate() {
            let _ = write!(out, "{} = ", alias_name(i));
            let _ = l.write_mlir(&mut out, &|b| format!("#{b}"));
            out.push('\n');
        }
        out
    }
}

fn alias_name(i: usize) -> String {
    if i == 0 { "#ttnn_layout".to_owned() } else { format!("#ttnn_layout{i}") }
}
