//! Constant values: a TTIR `dense<...>` literal converted to the normalized element type.
//!
//! A splat becomes a scalar (the importer emits `ttnn.full` for it); anything else is
//! rewritten as a `dense<...>` literal of the new element type and shape. Integers that do not
//! fit the 32-bit target saturate (an `i64` mask of `-2^63` stays the most negative value
//! rather than wrapping to zero); floats are rounded to the target precision.

use std::fmt::Write as _;

use ttnn_types::{DataType, ScalarType};

use crate::ty::TType;

/// One element value, before or after conversion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scalar {
    Float(f64),
    Int(i128),
}

/// A converted constant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DenseValue {
    /// Every element has this value (already converted to the target type).
    Splat(Scalar),
    /// The full attribute: `dense<...> : tensor<...>`.
    Elements(String),
}

/// Converts the body of `dense<body>` holding elements of TTIR type `src` to a constant of
/// type `dst`.
pub(crate) fn convert(body: &str, src: ScalarType, dst: &TType) -> Result<DenseValue, String> {
    let body = body.trim();
    let n: u64 = dst.shape.iter().product();
    if let Some(hex) = body.strip_prefix("\"0x").and_then(|b| b.strip_suffix('"')) {
        return convert_hex(hex, src, dst, n);
    }
    if body.starts_with('[') {
        let mut values = Vec::new();
        for tok in body.split(['[', ']', ',']) {
            let tok = tok.trim();
            if tok.is_empty() {
                continue;
            }
            values.push(to_target(parse_literal(tok, src)?, dst.dtype));
        }
        if values.len() as u64 != n {
            return Err(format!("the literal has {} elements, the type {n}", values.len()));
        }
        if let Some(first) = values.first()
            && values.iter().all(|v| v == first)
        {
            return Ok(DenseValue::Splat(*first));
        }
        let mut out = String::from("dense<");
        nest(&mut out, &values, &dst.shape, dst.dtype);
        let _ = write!(out, "> : {}", tensor_type(dst));
        return Ok(DenseValue::Elements(out));
    }
    Ok(DenseValue::Splat(to_target(parse_literal(body, src)?, dst.dtype)))
}

/// `tensor<2x3xsi32>`: the plain tensor type of a constant's value.
fn tensor_type(t: &TType) -> String {
    let mut s = String::from("tensor<");
    for d in &t.shape {
        let _ = write!(s, "{d}x");
    }
    let _ = write!(s, "{}>", t.scalar());
    s
}

fn convert_hex(hex: &str, src: ScalarType, dst: &TType, n: u64) -> Result<DenseValue, String> {
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("malformed hex constant".to_owned());
    }
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    let width = src_bytes(src).ok_or_else(|| format!("constants of `{src}` are not supported"))?;
    let values: Vec<Scalar> = if bytes.len() == width {
        return Ok(DenseValue::Splat(to_target(decode(&bytes, src), dst.dtype)));
    } else if bytes.len() as u64 == n.saturating_mul(width as u64) {
        if same_encoding(src, dst.dtype) {
            // The common case (`bf16` or `f32` weights): the blob is already right.
            return Ok(DenseValue::Elements(format!("dense<\"0x{hex}\"> : {}", tensor_type(dst))));
        }
        bytes.chunks(width).map(|c| to_target(decode(c, src), dst.dtype)).collect()
    } else if matches!(src, ScalarType::Int { width: 1, .. }) && bytes.len() as u64 == n.div_ceil(8)
    {
        // Bit-packed booleans.
        (0..n).map(|i| Scalar::Int(i128::from((bytes[(i / 8) as usize] >> (i % 8)) & 1))).collect()
    } else {
        return Err(format!("hex constant of {} bytes does not hold {n} elements", bytes.len()));
    };
    let mut out = String::from("dense<\"0x");
    for v in values {
        for b in encode(v, dst.dtype) {
            let _ = write!(out, "{b:02X}");
        }
    }
    let _ = write!(out, "\"> : {}", tensor_type(dst));
    Ok(DenseValue::Elements(out))
}

/// Bytes per element of a TTIR hex constant (booleans take a byte each).
fn src_bytes(src: ScalarType) -> Option<usize> {
    Some(match src {
        ScalarType::F64 => 8,
        ScalarType::F32 => 4,
        ScalarType::F16 | ScalarType::BF16 => 2,
        ScalarType::Int { width: 1, .. } => 1,
        ScalarType::Int { width: w @ (8 | 16 | 32 | 64), .. } => usize::from(w / 8),
        _ => return None,
    })
}

/// True when a source blob is already the target's byte encoding.
fn same_encoding(src: ScalarType, dst: DataType) -> bool {
    matches!(
        (src, dst),
        (ScalarType::F32, DataType::F32)
            | (ScalarType::BF16, DataType::BF16)
            | (ScalarType::F16, DataType::F16)
            | (ScalarType::Int { width: 32, .. }, DataType::SI32 | DataType::U32)
            | (ScalarType::Int { width: 8, .. }, DataType::U8)
    )
}

fn decode(bytes: &[u8], src: ScalarType) -> Scalar {
    let mut raw = [0u8; 8];
    for (i, b) in bytes.iter().take(8).enumerate() {
        raw[i] = *b;
    }
    let bits = u64::from_le_bytes(raw);
    match src {
        ScalarType::F64 => Scalar::Float(f64::from_bits(bits)),
        ScalarType::F32 => Scalar::Float(f64::from(f32::from_bits(bits as u32))),
        ScalarType::BF16 => Scalar::Float(f64::from(f32::from_bits((bits as u32) << 16))),
        ScalarType::F16 => Scalar::Float(f64::from(f16_to_f32(bits as u16))),
        ScalarType::Int { width, signedness } => {
            let w = u32::from(width).min(64);
            let v = if w == 1 {
                i128::from(bits & 1)
            } else if signedness == ttnn_types::Signedness::Unsigned {
                i128::from(bits & mask(w))
            } else {
                // Sign-extend from `w` bits.
                let shift = 64 - w;
                i128::from(((bits << shift) as i64) >> shift)
            };
            Scalar::Int(v)
        }
        ScalarType::Index => Scalar::Int(i128::from(bits as i64)),
    }
}

fn mask(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

/// Parses one element literal of a TTIR constant.
fn parse_literal(tok: &str, src: ScalarType) -> Result<Scalar, String> {
    let bad = || format!("cannot read `{tok}` as a `{src}` constant");
    match src {
        ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64 => {
            if let Some(hex) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
                let bits = u64::from_str_radix(hex, 16).map_err(|_| bad())?;
                Ok(decode(&bits.to_le_bytes(), src))
            } else {
                tok.parse::<f64>().map(Scalar::Float).map_err(|_| bad())
            }
        }
        ScalarType::Int { .. } | ScalarType::Index => match tok {
            "true" => Ok(Scalar::Int(1)),
            "false" => Ok(Scalar::Int(0)),
            _ => {
                let (neg, digits) = match tok.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, tok),
                };
                let v = match digits.strip_prefix("0x") {
                    Some(h) => i128::from_str_radix(h, 16),
                    None => digits.parse::<i128>(),
                }
                .map_err(|_| bad())?;
                Ok(Scalar::Int(if neg { -v } else { v }))
            }
        },
    }
}

/// The value as the target data type holds it.
pub(crate) fn to_target(v: Scalar, dst: DataType) -> Scalar {
    let range: Option<(i128, i128)> = match dst {
        DataType::SI32 => Some((i128::from(i32::MIN), i128::from(i32::MAX))),
        DataType::U32 => Some((0, i128::from(u32::MAX))),
        DataType::U16 => Some((0, i128::from(u16::MAX))),
        DataType::U8 => Some((0, i128::from(u8::MAX))),
        _ => None,
    };
    match (v, range) {
        (Scalar::Int(i), None) => Scalar::Float(i as f64),
        (Scalar::Float(f), None) => Scalar::Float(f),
        (Scalar::Int(i), Some((lo, hi))) => Scalar::Int(i.clamp(lo, hi)),
        (Scalar::Float(f), Some((lo, hi))) => {
            let t = if f.is_nan() { 0 } else { f.trunc().clamp(lo as f64, hi as f64) as i128 };
            Scalar::Int(t)
        }
    }
}

/// The `fill_value` of a `ttnn.full`: an `f32` for float tensors, an `i32` for integer ones.
pub(crate) fn fill_value(v: Scalar) -> String {
    match v {
        Scalar::Float(f) => format!("{} : f32", f32_literal(f as f32)),
        // `ttnn.full` takes an I32 attribute; `ui32` values above 2^31 keep their bits.
        Scalar::Int(i) => format!("{} : i32", i as i64 as i32),
    }
}

/// An MLIR float literal: decimal with a `.` in the mantissa, or the bit pattern for inf/nan.
pub(crate) fn f32_literal(v: f32) -> String {
    if !v.is_finite() {
        return format!("0x{:08X}", v.to_bits());
    }
    // MLIR's own spelling (`1.250000e-01`) when six digits hold the value exactly, else the
    // shortest spelling that reads back to the same `f32`.
    let six = exponent_form(&format!("{v:.6e}"));
    if six.parse::<f32>() == Ok(v) {
        return six;
    }
    exponent_form(&format!("{v:e}"))
}

/// Rust's `1.5e-1` as MLIR writes it: `1.5e-01`, with a `.` in the mantissa.
fn exponent_form(s: &str) -> String {
    let Some((m, e)) = s.split_once('e') else { return s.to_owned() };
    let m = if m.contains('.') { m.to_owned() } else { format!("{m}.0") };
    let (sign, digits) = match e.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', e),
    };
    format!("{m}e{sign}{digits:0>2}")
}

fn float_literal(v: f64, dst: DataType) -> String {
    let f = v as f32;
    if f.is_finite() {
        return f32_literal(f);
    }
    match dst {
        DataType::BF16 => format!("0x{:04X}", f32_to_bf16(f)),
        DataType::F16 => format!("0x{:04X}", f32_to_f16(f)),
        _ => format!("0x{:08X}", f.to_bits()),
    }
}

/// Writes `values` as a nested list matching `shape`.
fn nest(out: &mut String, values: &[Scalar], shape: &[u64], dst: DataType) {
    match shape.split_first() {
        None | Some((_, [])) => {
            out.push('[');
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match v {
                    Scalar::Float(f) => out.push_str(&float_literal(*f, dst)),
                    Scalar::Int(n) => {
                        let _ = write!(out, "{n}");
                    }
                }
            }
            out.push(']');
        }
        Some((d, rest)) => {
            let chunk = rest.iter().product::<u64>().max(1) as usize;
            out.push('[');
            for i in 0..*d as usize {
                if i > 0 {
                    out.push_str(", ");
                }
                let lo = (i * chunk).min(values.len());
                let hi = ((i + 1) * chunk).min(values.len());
                nest(out, &values[lo..hi], rest, dst);
            }
            out.push(']');
        }
    }
}

/// Little-endian bytes of one element of the target type.
fn encode(v: Scalar, dst: DataType) -> Vec<u8> {
    let f = |v: Scalar| match v {
        Scalar::Float(f) => f as f32,
        Scalar::Int(i) => i as f32,
    };
    let i = |v: Scalar| match v {
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i128,
    };
    match dst {
        DataType::F32 => f(v).to_bits().to_le_bytes().to_vec(),
        DataType::BF16 => f32_to_bf16(f(v)).to_le_bytes().to_vec(),
        DataType::F16 => f32_to_f16(f(v)).to_le_bytes().to_vec(),
        DataType::U16 => (i(v) as u16).to_le_bytes().to_vec(),
        DataType::U8 => vec![i(v) as u8],
        _ => (i(v) as u32).to_le_bytes().to_vec(),
    }
}

/// Rounds to nearest even, as tt-mlir's `bf16` constants do.
fn f32_to_bf16(f: f32) -> u16 {
    let b = f.to_bits();
    if f.is_nan() {
        return 0x7FC0;
    }
    let bias = 0x7FFF + ((b >> 16) & 1);
    (b.wrapping_add(bias) >> 16) as u16
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1F, 0) => sign | 0x7F80_0000,
        (0x1F, m) => sign | 0x7FC0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn f32_to_f16(f: f32) -> u16 {
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if f.is_nan() {
        return sign | 0x7E00;
    }
    let a = f.abs();
    if a >= 65520.0 {
        return sign | 0x7C00;
    }
    if a < f32::from_bits(0x3300_0000) {
        // Below half the smallest subnormal: zero.
        return sign;
    }
    if a < f32::from_bits(0x3880_0000) {
        // Subnormal half: round(a / 2^-24).
        let m = (a / f32::from_bits(0x3380_0000)).round() as u16;
        return sign | m;
    }
    let exp = ((b >> 23) & 0xFF) as i32 - 127 + 15;
    let man = b & 0x7F_FFFF;
    let mut h = ((exp as u32) << 10) | (man >> 13);
    let rest = man & 0x1FFF;
    if rest > 0x1000 || (rest == 0x1000 && (h & 1) == 1) {
        h += 1;
    }
    sign | h as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(shape: &[u64], dtype: DataType) -> TType {
        TType::tile(shape.to_vec(), dtype)
    }

    #[test]
    fn hex_splats_of_wide_floats_narrow_to_f32() {
        let v = convert("0xFFF0000000000000", ScalarType::F64, &ty(&[2, 2], DataType::F32));
        assert_eq!(v, Ok(DenseValue::Splat(Scalar::Float(f64::NEG_INFINITY))));
        let Ok(DenseValue::Splat(s)) = v else { return };
        assert_eq!(fill_value(s), "0xFF800000 : f32");
    }

    #[test]
    fn i64_blobs_are_reencoded_as_si32() {
        let v = convert(
            "\"0x0100000000000000FFFFFFFFFFFFFFFF\"",
            ScalarType::Int { width: 64, signedness: ttnn_types::Signedness::Signless },
            &ty(&[2], DataType::SI32),
        );
        assert_eq!(
            v,
            Ok(DenseValue::Elements("dense<\"0x01000000FFFFFFFF\"> : tensor<2xsi32>".into()))
        );
    }

    #[test]
    fn boolean_lists_become_bf16_and_keep_their_nesting() {
        let v = convert(
            "[[true, false], [false, true]]",
            ScalarType::Int { width: 1, signedness: ttnn_types::Signedness::Signless },
            &ty(&[2, 2], DataType::BF16),
        );
        assert_eq!(
            v,
            Ok(DenseValue::Elements(
                "dense<[[1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00]]> : tensor<2x2xbf16>"
                    .into()
            ))
        );
    }

    #[test]
    fn integers_saturate_into_the_target_range() {
        let v = to_target(Scalar::Int(-9_223_372_036_854_775_808), DataType::SI32);
        assert_eq!(fill_value(v), "-2147483648 : i32");
    }

    #[test]
    fn half_precision_round_trips() {
        for v in [0.0f32, 1.0, -2.5, 65504.0, 6.1035156e-5, 5.9604645e-8] {
            assert_eq!(f16_to_f32(f32_to_f16(v)), v, "{v}");
        }
        assert_eq!(f32_to_bf16(1.0), 0x3F80);
        assert_eq!(f32_literal(0.353_553_38), "3.5355338e-01");
        assert_eq!(f32_literal(1e-5), "1.000000e-05");
        assert_eq!(f32_literal(-0.25), "-2.500000e-01");
    }
}
