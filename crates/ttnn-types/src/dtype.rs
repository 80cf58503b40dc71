//! Data types: ttcore's `DataType` enum, MLIR scalar element types, and tile element types.

use std::fmt;

/// ttcore's data type enum, as written in `!ttcore.tile<32x32, bf16>`, overrides and configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    F32,
    F16,
    BF16,
    BfpF8,
    BfpBF8,
    BfpF4,
    BfpBF4,
    BfpF2,
    BfpBF2,
    U32,
    U16,
    U8,
    SI32,
    /// `i1`: booleans, stored as one byte.
    I1,
}

impl DataType {
    pub const ALL: [DataType; 14] = [
        DataType::F32,
        DataType::F16,
        DataType::BF16,
        DataType::BfpF8,
        DataType::BfpBF8,
        DataType::BfpF4,
        DataType::BfpBF4,
        DataType::BfpF2,
        DataType::BfpBF2,
        DataType::U32,
        DataType::U16,
        DataType::U8,
        DataType::SI32,
        DataType::I1,
    ];

    /// Parses the ttcore keyword (`bf16`, `bfp_bf8`, `u32`, ...).
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<DataType> {
        Some(match s {
            "f32" => DataType::F32,
            "f16" => DataType::F16,
            "bf16" => DataType::BF16,
            "bfp_f8" => DataType::BfpF8,
            "bfp_bf8" => DataType::BfpBF8,
            "bfp_f4" => DataType::BfpF4,
            "bfp_bf4" => DataType::BfpBF4,
            "bfp_f2" => DataType::BfpF2,
            "bfp_bf2" => DataType::BfpBF2,
            "u32" => DataType::U32,
            "u16" => DataType::U16,
            "u8" => DataType::U8,
            "si32" => DataType::SI32,
            "i1" => DataType::I1,
            _ => return None,
        })
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            DataType::F32 => "f32",
            DataType::F16 => "f16",
            DataType::BF16 => "bf16",
            DataType::BfpF8 => "bfp_f8",
            DataType::BfpBF8 => "bfp_bf8",
            DataType::BfpF4 => "bfp_f4",
            DataType::BfpBF4 => "bfp_bf4",
            DataType::BfpF2 => "bfp_f2",
            DataType::BfpBF2 => "bfp_bf2",
            DataType::U32 => "u32",
            DataType::U16 => "u16",
            DataType::U8 => "u8",
            DataType::SI32 => "si32",
            DataType::I1 => "i1",
        }
    }

    /// Bytes of one 32x32 tile (`TileType::getSizeBytes`): block floats carry one shared
    /// exponent byte per 16 values on top of their mantissas.
    #[must_use]
    pub fn tile_bytes(self) -> u64 {
        match self {
            DataType::F32 | DataType::U32 | DataType::SI32 => 4096,
            DataType::F16 | DataType::BF16 | DataType::U16 => 2048,
            DataType::U8 | DataType::I1 => 1024,
            DataType::BfpF8 | DataType::BfpBF8 => 1088,
            DataType::BfpF4 | DataType::BfpBF4 => 576,
            DataType::BfpF2 | DataType::BfpBF2 => 320,
        }
    }

    /// Bytes of one element in a row-major page. Block floats only exist tiled; they are
    /// counted as one byte so row-major arithmetic on them stays conservative and finite.
    #[must_use]
    pub fn elem_bytes(self) -> u64 {
        match self {
            DataType::F32 | DataType::U32 | DataType::SI32 => 4,
            DataType::F16 | DataType::BF16 | DataType::U16 => 2,
            DataType::U8 | DataType::I1 => 1,
            DataType::BfpF8 | DataType::BfpBF8 => 1,
            DataType::BfpF4 | DataType::BfpBF4 => 1,
            DataType::BfpF2 | DataType::BfpBF2 => 1,
        }
    }

    #[must_use]
    pub fn is_block_float(self) -> bool {
        matches!(
            self,
            DataType::BfpF8
                | DataType::BfpBF8
                | DataType::BfpF4
                | DataType::BfpBF4
                | DataType::BfpF2
                | DataType::BfpBF2
        )
    }

    #[must_use]
    pub fn is_float(self) -> bool {
        matches!(self, DataType::F32 | DataType::F16 | DataType::BF16) || self.is_block_float()
    }

    /// The MLIR scalar type a tensor of this data type carries when it is not tiled.
    /// Block floats have none: they only exist as tile elements.
    #[must_use]
    pub fn scalar_type(self) -> Option<ScalarType> {
        Some(match self {
            DataType::F32 => ScalarType::F32,
            DataType::F16 => ScalarType::F16,
            DataType::BF16 => ScalarType::BF16,
            DataType::U32 => ScalarType::Int { width: 32, signedness: Signedness::Unsigned },
            DataType::U16 => ScalarType::Int { width: 16, signedness: Signedness::Unsigned },
            DataType::U8 => ScalarType::Int { width: 8, signedness: Signedness::Unsigned },
            DataType::SI32 => ScalarType::Int { width: 32, signedness: Signedness::Signed },
            DataType::I1 => ScalarType::Int { width: 1, signedness: Signedness::Signless },
            _ => return None,
        })
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signedness {
    Signless,
    Signed,
    Unsigned,
}

/// An MLIR builtin scalar element type (`bf16`, `f32`, `si32`, `ui8`, `i1`, `index`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    F16,
    BF16,
    F32,
    F64,
    Int { width: u16, signedness: Signedness },
    Index,
}

impl ScalarType {
    /// Parses a builtin scalar type keyword.
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<ScalarType> {
        Some(match s {
            "f16" => ScalarType::F16,
            "bf16" => ScalarType::BF16,
            "f32" => ScalarType::F32,
            "f64" => ScalarType::F64,
            "index" => ScalarType::Index,
            _ => {
                let (signedness, digits) = if let Some(d) = s.strip_prefix("si") {
                    (Signedness::Signed, d)
                } else if let Some(d) = s.strip_prefix("ui") {
                    (Signedness::Unsigned, d)
                } else if let Some(d) = s.strip_prefix('i') {
                    (Signedness::Signless, d)
                } else {
                    return None;
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let width: u16 = digits.parse().ok()?;
                if width == 0 {
                    return None;
                }
                ScalarType::Int { width, signedness }
            }
        })
    }

    /// The ttcore data type used for this scalar on device. 64-bit integers and `f64` have no
    /// device representation; `index` is a host-only type.
    #[must_use]
    pub fn data_type(self) -> Option<DataType> {
        Some(match self {
            ScalarType::F16 => DataType::F16,
            ScalarType::BF16 => DataType::BF16,
            ScalarType::F32 => DataType::F32,
            ScalarType::Int { width: 1, .. } => DataType::I1,
            ScalarType::Int { width: 8, signedness: Signedness::Unsigned } => DataType::U8,
            ScalarType::Int { width: 16, signedness: Signedness::Unsigned } => DataType::U16,
            ScalarType::Int { width: 32, signedness: Signedness::Unsigned } => DataType::U32,
            ScalarType::Int { width: 32, .. } => DataType::SI32,
            // tt-mlir's workarounds turn narrow signed integers into si32 as well.
            ScalarType::Int { width: 8 | 16, .. } => DataType::SI32,
            _ => return None,
        })
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarType::F16 => f.write_str("f16"),
            ScalarType::BF16 => f.write_str("bf16"),
            ScalarType::F32 => f.write_str("f32"),
            ScalarType::F64 => f.write_str("f64"),
            ScalarType::Index => f.write_str("index"),
            ScalarType::Int { width, signedness } => {
                let prefix = match signedness {
                    Signedness::Signless => "i",
                    Signedness::Signed => "si",
                    Signedness::Unsigned => "ui",
                };
                write!(f, "{prefix}{width}")
            }
        }
    }
}

/// The element type of a tensor or memref: a scalar or a `!ttcore.tile<HxW, dtype>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    Scalar(ScalarType),
    Tile { height: u64, width: u64, dtype: DataType },
}

impl ElementType {
    /// The ttcore data type of the element, if it has one on device.
    #[must_use]
    pub fn data_type(self) -> Option<DataType> {
        match self {
            ElementType::Scalar(s) => s.data_type(),
            ElementType::Tile { dtype, .. } => Some(dtype),
        }
    }

    #[must_use]
    pub fn is_tile(self) -> bool {
        matches!(self, ElementType::Tile { .. })
    }

    /// Bytes of one element of this type: a whole tile for tile types.
    #[must_use]
    pub fn bytes(self) -> u64 {
        match self {
            ElementType::Tile { height, width, dtype } => {
                if height == crate::TILE && width == crate::TILE {
                    dtype.tile_bytes()
                } else {
                    (height * width).saturating_mul(dtype.elem_bytes())
                }
            }
            ElementType::Scalar(s) => match s {
                ScalarType::F64 => 8,
                ScalarType::Index => 8,
                ScalarType::Int { width, .. } => u64::from(width).div_ceil(8).max(1),
                other => other.data_type().map_or(4, DataType::elem_bytes),
            },
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElementType::Scalar(s) => s.fmt(f),
            ElementType::Tile { height, width, dtype } => {
                write!(f, "!ttcore.tile<{height}x{width}, {dtype}>")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_keywords_round_trip() {
        for kw in ["bf16", "f32", "si32", "ui32", "i1", "i64", "ui8", "index", "f16"] {
            let ty = ScalarType::from_keyword(kw).unwrap();
            assert_eq!(ty.to_string(), kw);
        }
        assert_eq!(ScalarType::from_keyword("x4"), None);
        assert_eq!(ScalarType::from_keyword("i"), None);
    }

    #[test]
    fn tile_bytes_match_ttcore() {
        assert_eq!(DataType::BF16.tile_bytes(), 2048);
        assert_eq!(DataType::BfpBF8.tile_bytes(), 1088);
        assert_eq!(DataType::BfpBF4.tile_bytes(), 576);
        assert_eq!(DataType::BfpBF2.tile_bytes(), 320);
        assert_eq!(DataType::F32.tile_bytes(), 4096);
    }
}
