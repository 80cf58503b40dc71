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

/// The decimal digits of `n`, written into `buf`: for printers that write thousands of
/// numbers per output, where `write!` goes through the formatting machinery for each.
#[must_use]
pub fn decimal(n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    let mut v = n;
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
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
        self.col_in(text, line, offset)
    }

    /// [`LineIndex::line_col`], looking first at line `hint` and the few after it, and
    /// leaving the answer's line in `hint`: converting offsets in increasing order (the
    /// sorted ranges of thousands of diagnostics) then skips the binary search of each.
    #[must_use]
    pub fn line_col_from(&self, text: &str, offset: u32, hint: &mut usize) -> LineCol {
        /// Lines stepped over before a binary search is cheaper.
        const SCAN: usize = 8;
        let offset = offset.min(text.len() as u32);
        let starts = &self.line_starts;
        let mut line = *hint;
        let from_hint = starts.get(line).is_some_and(|&s| s <= offset) && {
            let mut steps = 0;
            while steps < SCAN && starts.get(line + 1).is_some_and(|&s| s <= offset) {
                line += 1;
                steps += 1;
            }
            starts.get(line + 1).is_none_or(|&s| s > offset)
        };
        if !from_hint {
            line = starts.partition_point(|&s| s <= offset).saturating_sub(1);
        }
        *hint = line;
        self.col_in(text, line, offset)
    }

    /// The line and column of `offset`, on `line` (which holds it).
    fn col_in(&self, text: &str, line: usize, offset: u32) -> LineCol {
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

    /// Updates the index of `text` for the edit that replaced `range` of the previous text
    /// with `inserted`, as [`LineIndex::new`] of `text` would be: the line starts inside the
    /// range go, those of the inserted text come in, the later ones move. Rebuilding scans the
    /// whole text (2.8 MB for a 10k-op file) after every keystroke; this touches the lines of
    /// the edit and one number per later line.
    pub fn apply_edit(&mut self, text: &str, range: TextRange, inserted: &str) {
        let (start, end) = (range.start, range.end);
        // Lines 0..=first start at or before the edit's start; starts in (start, end] were
        // made by newlines the edit removed.
        let first = self.line_starts.partition_point(|&s| s <= start).saturating_sub(1);
        let removed_to = self.line_starts.partition_point(|&s| s <= end);
        let delta = inserted.len() as i64 - i64::from(end - start);
        let new_starts: Vec<u32> =
            inserted.match_indices('\n').map(|(q, _)| start + q as u32 + 1).collect();
        let added = new_starts.len();
        self.line_starts.splice(first + 1..removed_to, new_starts);
        for s in &mut self.line_starts[first + 1 + added..] {
            // The new text's length fits in u32 (its offsets are u32).
            *s = (i64::from(*s) + delta) as u32;
        }
        let flags: Vec<bool> = (first..=first + added)
            .map(|line| {
                let from = self.line_starts[line] as usize;
                let to = self
                    .line_starts
                    .get(line + 1)
                    .map_or(text.len(), |&next| (next as usize).saturating_sub(1));
                !text.get(from..to).is_none_or(str::is_ascii)
            })
            .collect();
        self.non_ascii_lines.splice(first..removed_to, flags);
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
    fn decimals_are_what_fmt_writes() {
        for n in [0u64, 7, 10, 32, 1024, 65_535, 1_000_000_007, u64::MAX] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string());
        }
    }

    #[test]
    fn an_edited_index_equals_the_index_of_the_new_text() {
        // Deterministic pseudo-random edits over a text with long, short, empty and
        // non-ASCII lines, including edits that add and remove newlines and touch the ends.
        let pieces = ["\n", "ab", "é", "x\ny", "", "\n\n", "\u{1F600}", "long line text"];
        let mut text = String::from("first line\nsecond é line\n\nfourth\nlast");
        let mut index = LineIndex::new(&text);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..2000 {
            let mut a = next(text.len() + 1);
            let mut b = (a + next(8)).min(text.len());
            while !text.is_char_boundary(a) {
                a -= 1;
            }
            while !text.is_char_boundary(b) {
                b += 1;
            }
            let inserted = pieces[next(pieces.len())];
            text.replace_range(a..b, inserted);
            index.apply_edit(&text, TextRange::new(a as u32, b as u32), inserted);
            assert_eq!(index, LineIndex::new(&text), "after replacing {a}..{b} with {inserted:?}");
        }
    }

    #[test]
    fn converting_from_a_hint_gives_what_a_search_gives() {
        let text = "first line\nsecond é line\n\nfourth \u{1F600} x\nlast";
        let index = LineIndex::new(text);
        let len = text.len() as u32;
        // In order, as sorted ranges are converted, then in an order that jumps back.
        let mut hint = 0;
        for offset in 0..=len + 2 {
            assert_eq!(index.line_col_from(text, offset, &mut hint), index.line_col(text, offset));
        }
        for (i, start_hint) in [(len, 0), (3, 4), (0, 4), (len / 2, 99)] {
            let mut hint = start_hint;
            assert_eq!(index.line_col_from(text, i, &mut hint), index.line_col(text, i));
        }
    }

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
