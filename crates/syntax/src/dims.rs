//! Dimension lists: `4x4xbf16`, `0x0`, `?x8x`, `1x12x32x64`.
//!
//! MLIR's lexer does not know dimension lists (`4x4` is the integer `4` and the identifier
//! `x4`; `0x0` is a hex integer), so the parser glues adjacent tokens back together and this
//! module splits the text on `x`.

use crate::ast::Dim;

/// Splits a dimension list into its dims and the text after the last `x` that does not
/// start another dim (the element type, or empty if it is a separate token).
///
/// `4x4xbf16` gives `([4, 4], "bf16")`, `4x4x` gives `([4, 4], "")`, `1x1` gives
/// `([1, 1], "")`. Returns `None` when the text is not a dimension list.
#[must_use]
pub fn split_dims(text: &str) -> Option<(Vec<Dim>, &str)> {
    let bytes = text.as_bytes();
    let mut dims = Vec::new();
    let mut i = 0;
    loop {
        // One dim: digits or `?`.
        let start = i;
        if bytes.get(i) == Some(&b'?') {
            i += 1;
            dims.push(None);
        } else {
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return None;
            }
            dims.push(Some(text[start..i].parse().ok()?));
        }
        match bytes.get(i) {
            None => return Some((dims, "")),
            Some(b'x') => {
                i += 1;
                match bytes.get(i) {
                    Some(b) if b.is_ascii_digit() || *b == b'?' => continue,
                    _ => return Some((dims, &text[i..])),
                }
            }
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimension_lists_split_on_x() {
        assert_eq!(split_dims("4x4xbf16"), Some((vec![Some(4), Some(4)], "bf16")));
        assert_eq!(split_dims("4x4x"), Some((vec![Some(4), Some(4)], "")));
        assert_eq!(split_dims("0x0"), Some((vec![Some(0), Some(0)], "")));
        assert_eq!(split_dims("0xf32"), Some((vec![Some(0)], "f32")));
        assert_eq!(split_dims("?x8xf32"), Some((vec![None, Some(8)], "f32")));
        assert_eq!(split_dims("12"), Some((vec![Some(12)], "")));
        assert_eq!(split_dims("4y4"), None);
        assert_eq!(split_dims("x4"), None);
        assert_eq!(split_dims("99999999999999999999999x1"), None);
    }
}
