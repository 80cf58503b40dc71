//! Byte offsets and ranges into source text.

use std::fmt;

/// A half-open byte range `start..end` into the source text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TextRange {
    pub start: u32,
    pub end: u32,
}

impl TextRange {
    #[must_use]
    pub const fn new(start: u32, end: u32) -> TextRange {
        TextRange { start, end }
    }

    #[must_use]
    pub const fn empty(at: u32) -> TextRange {
        TextRange { start: at, end: at }
    }

    #[must_use]
    pub fn len(self) -> u32 {
        self.end - self.start
    }

    #[must_use]
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The smallest range covering both.
    #[must_use]
    pub fn cover(self, other: TextRange) -> TextRange {
        TextRange { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    #[must_use]
    pub fn contains(self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }

    /// Like `contains`, but also true at the end offset (a cursor right after a token).
    #[must_use]
    pub fn contains_inclusive(self, offset: u32) -> bool {
        self.start <= offset && offset <= self.end
    }

    #[must_use]
    pub fn contains_range(self, other: TextRange) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// The slice of `text` this range covers; empty if the range is out of bounds.
    #[must_use]
    pub fn slice(self, text: &str) -> &str {
        text.get(self.start as usize..self.end as usize).unwrap_or("")
    }
}

impl fmt::Debug for TextRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// Maps byte offsets to 0-based (line, UTF-16 column) positions, the way LSP counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<u32>,
    /// Lines that contain non-ASCII characters need a UTF-16 walk; the rest map directly.
    non_ascii_lines: Vec<bool>,
}

/// A 0-based line and UTF-16 column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub col_utf16: u32,
}

impl LineIndex {
    #[must_use]
    pub fn new(text: &str) -> LineIndex {
        // Line by line with `find` and `is_ascii`, which look at a word at a time: the
        // server rebuilds the index after every edit, and a byte loop over a 2.8 MB file
        // took a few milliseconds of each.
        let mut line_starts = vec![0];
        let mut non_ascii_lines = Vec::new();
        let mut start = 0;
        while let Some(nl) = text[start..].find('\n') {
            non_ascii_lines.push(!text[start..start + nl].is_ascii());
            start += nl + 1;
            line_starts.push(start as u32);
        }
        non_ascii_lines.push(!text[start..].is_ascii());
        LineIndex { line_starts, non_ascii_lines }
    }

    /// The line and UTF-16 column of a byte offset (clamped to the text).
    #[must_use]
    pub fn line_col(&self, text: &str, offset: u32) -> LineCol {
        let offset = offset.min(text.len() as u32);
        let line = self.line_starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let start = self.line_starts[line];
        let col_utf16 = if self.non_ascii_lines[line] {
            let mut end = offset as usize;
            while end > start as usize && !text.is_char_boundary(end) {
                end -= 1;
            }
            text.get(start as usize..end).map_or(0, |s| s.encode_utf16().count() as u32)
        } else {
            offset - start
        };
        LineCol { line: line as u32, col_utf16 }
    }

    /// The byte offset of a 0-based line and UTF-16 column, clamped to the line's end.
    #[must_use]
    pub fn offset(&self, text: &str, pos: LineCol) -> u32 {
        let Some(&start) = self.line_starts.get(pos.line as usize) else {
            return text.len() as u32;
        };
        let line_end = self
            .line_starts
            .get(pos.line as usize + 1)
            .map_or(text.len() as u32, |&next| next.saturating_sub(1));
        let line = text.get(start as usize..line_end as usize).unwrap_or("");
        let mut units = 0u32;
        for (i, ch) in line.char_indices() {
            if units >= pos.col_utf16 {
                return start + i as u32;
            }
            units += ch.len_utf16() as u32;
        }
        line_end
    }

    #[must_use]
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    #[must_use]
    pub fn line_start(&self, line: u32) -> Option<u32> {
        self.line_starts.get(line as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_count_surrogate_pairs_twice() {
        let text = "ab\n\u{1F600}x\ny";
        let idx = LineIndex::new(text);
        let x = text.find('x').unwrap() as u32;
        assert_eq!(idx.line_col(text, x), LineCol { line: 1, col_utf16: 2 });
        assert_eq!(idx.offset(text, LineCol { line: 1, col_utf16: 2 }), x);
        assert_eq!(idx.line_col(text, text.len() as u32), LineCol { line: 2, col_utf16: 1 });
    }
}
