//! The lexer: splits MLIR text into tokens that keep their text ranges, trivia included.
//!
//! Lexing never fails. Bytes that start no token become `Error` tokens with a diagnostic,
//! and an unterminated string ends at the line end. The token stream covers the whole text
//! with no gaps, which is what makes the syntax layer lossless.
//!
//! Like MLIR's own lexer, dimension lists are not special here: `4x4` lexes as the integer
//! `4` and the identifier `x4`, and `0x0` as a hex integer. The parser reassembles adjacent
//! tokens into dimension lists where the grammar expects one (see `dims`).

use crate::{SyntaxError, TextRange};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    Whitespace,
    Comment,
    /// `%name`, `%0`, `%arg0`.
    ValueId,
    /// `@name`, `@"quoted name"`.
    SymbolId,
    /// `#name`, `#ttnn.ttnn_layout`, `#loc3`, `#1` (the result number in `%3#1`).
    HashId,
    /// `!name`, `!ttcore.tile`.
    BangId,
    /// `^bb0`.
    CaretId,
    /// Identifiers and keywords: `func.func`, `tensor`, `x4`, `bf16`, `d0`.
    BareId,
    Int,
    HexInt,
    Float,
    String,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Less,
    Greater,
    Comma,
    Colon,
    Equal,
    Arrow,
    Minus,
    Plus,
    Star,
    Question,
    Ellipsis,
    Vertical,
    /// `{-#`, the start of a dialect resource section.
    FileMetaBegin,
    /// `#-}`.
    FileMetaEnd,
    Error,
}

impl TokenKind {
    #[must_use]
    pub fn is_trivia(self) -> bool {
        matches!(self, TokenKind::Whitespace | TokenKind::Comment)
    }

    /// How the kind reads in an "expected X" message.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            TokenKind::Whitespace => "whitespace",
            TokenKind::Comment => "a comment",
            TokenKind::ValueId => "an SSA value",
            TokenKind::SymbolId => "a symbol",
            TokenKind::HashId => "an attribute alias",
            TokenKind::BangId => "a type alias",
            TokenKind::CaretId => "a block label",
            TokenKind::BareId => "an identifier",
            TokenKind::Int | TokenKind::HexInt => "an integer",
            TokenKind::Float => "a float",
            TokenKind::String => "a string",
            TokenKind::LParen => "`(`",
            TokenKind::RParen => "`)`",
            TokenKind::LBracket => "`[`",
            TokenKind::RBracket => "`]`",
            TokenKind::LBrace => "`{`",
            TokenKind::RBrace => "`}`",
            TokenKind::Less => "`<`",
            TokenKind::Greater => "`>`",
            TokenKind::Comma => "`,`",
            TokenKind::Colon => "`:`",
            TokenKind::Equal => "`=`",
            TokenKind::Arrow => "`->`",
            TokenKind::Minus => "`-`",
            TokenKind::Plus => "`+`",
            TokenKind::Star => "`*`",
            TokenKind::Question => "`?`",
            TokenKind::Ellipsis => "`...`",
            TokenKind::Vertical => "`|`",
            TokenKind::FileMetaBegin => "`{-#`",
            TokenKind::FileMetaEnd => "`#-}`",
            TokenKind::Error => "an invalid token",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub range: TextRange,
}

/// Lexes the whole text. The returned tokens cover `text` exactly, in order.
#[must_use]
pub fn lex(text: &str) -> (Vec<Token>, Vec<SyntaxError>) {
    let mut lx = Lexer { bytes: text.as_bytes(), pos: 0, tokens: Vec::new(), errors: Vec::new() };
    // Tokens average roughly 4 bytes in printed IR; reserving avoids regrowth on big files.
    lx.tokens.reserve(text.len() / 4 + 16);
    while lx.pos < lx.bytes.len() {
        lx.next_token();
    }
    // The tokens live as long as the parse; regrowth can leave up to half the buffer unused.
    // A sixteenth is kept free: an incremental re-parse that adds tokens (a pasted op) then
    // shifts the tail in place instead of copying the whole vector to a larger one, which
    // on a 10k-op file (850k tokens) took 10-30 ms.
    let keep = token_headroom(lx.tokens.len());
    if lx.tokens.capacity() >= keep {
        lx.tokens.shrink_to(keep);
    } else {
        lx.tokens.reserve_exact(keep - lx.tokens.len());
    }
    (lx.tokens, lx.errors)
}

/// The capacity to keep for `len` tokens: a sixteenth more, for edits to grow into.
pub(crate) fn token_headroom(len: usize) -> usize {
    len + len / 16 + 64
}

struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
    errors: Vec<SyntaxError>,
}

fn is_id_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_id_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

fn is_suffix_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        self.tokens.push(Token { kind, range: TextRange::new(start as u32, self.pos as u32) });
    }

    fn next_token(&mut self) {
        let start = self.pos;
        let b = self.peek(0);
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\x0b' => {
                while matches!(self.peek(0), b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\x0b') {
                    self.pos += 1;
                }
                self.push(TokenKind::Whitespace, start);
            }
            b'/' if self.peek(1) == b'/' => {
                while self.pos < self.bytes.len() && self.peek(0) != b'\n' {
                    self.pos += 1;
                }
                self.push(TokenKind::Comment, start);
            }
            b'%' => self.prefixed_id(TokenKind::ValueId, start),
            b'#' if self.peek(1) == b'-' && self.peek(2) == b'}' => {
                self.pos += 3;
                self.push(TokenKind::FileMetaEnd, start);
            }
            b'#' => self.prefixed_id(TokenKind::HashId, start),
            b'!' => self.prefixed_id(TokenKind::BangId, start),
            b'^' => self.prefixed_id(TokenKind::CaretId, start),
            b'@' => {
                self.pos += 1;
                if self.peek(0) == b'"' {
                    self.string_body(start);
                    self.push(TokenKind::SymbolId, start);
                } else {
                    self.prefixed_id_rest(TokenKind::SymbolId, start);
                }
            }
            b'"' => {
                self.string_body(start);
                self.push(TokenKind::String, start);
            }
            b'0'..=b'9' => self.number(start),
            b'{' if self.peek(1) == b'-' && self.peek(2) == b'#' => {
                self.pos += 3;
                self.push(TokenKind::FileMetaBegin, start);
            }
            b'-' if self.peek(1) == b'>' => {
                self.pos += 2;
                self.push(TokenKind::Arrow, start);
            }
            b'.' if self.peek(1) == b'.' && self.peek(2) == b'.' => {
                self.pos += 3;
                self.push(TokenKind::Ellipsis, start);
            }
            _ if is_id_start(b) => {
                while is_id_continue(self.peek(0)) {
                    self.pos += 1;
                }
                self.push(TokenKind::BareId, start);
            }
            _ => {
                let kind = match b {
                    b'(' => Some(TokenKind::LParen),
                    b')' => Some(TokenKind::RParen),
                    b'[' => Some(TokenKind::LBracket),
                    b']' => Some(TokenKind::RBracket),
                    b'{' => Some(TokenKind::LBrace),
                    b'}' => Some(TokenKind::RBrace),
                    b'<' => Some(TokenKind::Less),
                    b'>' => Some(TokenKind::Greater),
                    b',' => Some(TokenKind::Comma),
                    b':' => Some(TokenKind::Colon),
                    b'=' => Some(TokenKind::Equal),
                    b'-' => Some(TokenKind::Minus),
                    b'+' => Some(TokenKind::Plus),
                    b'*' => Some(TokenKind::Star),
                    b'?' => Some(TokenKind::Question),
                    b'|' => Some(TokenKind::Vertical),
                    _ => None,
                };
                match kind {
                    Some(kind) => {
                        self.pos += 1;
                        self.push(kind, start);
                    }
                    None => self.error_char(start),
                }
            }
        }
    }

    /// A byte sequence no token starts with. One whole UTF-8 character becomes the token.
    fn error_char(&mut self, start: usize) {
        self.pos += 1;
        while self.pos < self.bytes.len() && (self.bytes[self.pos] & 0xC0) == 0x80 {
            self.pos += 1;
        }
        self.push(TokenKind::Error, start);
        let range = TextRange::new(start as u32, self.pos as u32);
        let shown = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("?");
        self.errors.push(SyntaxError::new(
            "unexpected-character",
            format!("unexpected character `{}`", shown.escape_debug()),
            range,
        ));
    }

    fn prefixed_id(&mut self, kind: TokenKind, start: usize) {
        self.pos += 1;
        self.prefixed_id_rest(kind, start);
    }

    /// The suffix of `%`, `#`, `!`, `^` and `@` identifiers: digits, or an identifier that may
    /// also contain `$`, `.` and `-`.
    fn prefixed_id_rest(&mut self, kind: TokenKind, start: usize) {
        let first = self.peek(0);
        if first.is_ascii_digit() {
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
        } else if is_id_start(first) || matches!(first, b'$' | b'.' | b'-') {
            while is_suffix_continue(self.peek(0)) {
                self.pos += 1;
            }
        } else {
            self.push(TokenKind::Error, start);
            let prefix = char::from(self.bytes[start]);
            self.errors.push(SyntaxError::new(
                "expected-identifier",
                format!("expected an identifier after `{prefix}`"),
                TextRange::new(start as u32, self.pos as u32),
            ));
            return;
        }
        self.push(kind, start);
    }

    /// Consumes a string literal starting at the opening quote. Strings cannot span lines;
    /// an unterminated one ends at the line end with a diagnostic.
    fn string_body(&mut self, start: usize) {
        self.pos += 1;
        loop {
            match self.peek(0) {
                b'"' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => {
                    self.pos += 1;
                    if self.pos < self.bytes.len() && self.peek(0) != b'\n' {
                        self.pos += 1;
                    }
                }
                b'\n' | 0 if self.pos >= self.bytes.len() || self.peek(0) == b'\n' => {
                    self.errors.push(SyntaxError::new(
                        "unterminated-string",
                        "unterminated string literal",
                        TextRange::new(start as u32, self.pos as u32),
                    ));
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    fn number(&mut self, start: usize) {
        if self.peek(0) == b'0' && self.peek(1) == b'x' && self.peek(2).is_ascii_hexdigit() {
            self.pos += 2;
            while self.peek(0).is_ascii_hexdigit() {
                self.pos += 1;
            }
            self.push(TokenKind::HexInt, start);
            return;
        }
        while self.peek(0).is_ascii_digit() {
            self.pos += 1;
        }
        if self.peek(0) == b'.' && self.peek(1) != b'.' {
            self.pos += 1;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
            if matches!(self.peek(0), b'e' | b'E') {
                let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
                if self.peek(1 + sign).is_ascii_digit() {
                    self.pos += 1 + sign;
                    while self.peek(0).is_ascii_digit() {
                        self.pos += 1;
                    }
                }
            }
            self.push(TokenKind::Float, start);
            return;
        }
        self.push(TokenKind::Int, start);
    }
}

/// Decodes the body of a string literal token (quotes included) with MLIR's escapes:
/// `\\`, `\"`, `\n`, `\t` and two-digit hex `\XX`. Returns `None` for malformed escapes.
#[must_use]
pub fn unescape_string(lit: &str) -> Option<String> {
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let next = *bytes.get(i + 1)?;
        match next {
            b'\\' | b'"' => {
                out.push(next);
                i += 2;
            }
            b'n' => {
                out.push(b'\n');
                i += 2;
            }
            b't' => {
                out.push(b'\t');
                i += 2;
            }
            _ => {
                let hex = inner.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Writes `s` as an MLIR string literal, escaping what MLIR's printer escapes.
#[must_use]
pub fn escape_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\22"),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\0A"),
            b'\t' => out.push_str("\\09"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\{b:02X}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    #[track_caller]
    fn check(text: &str, expect: Expect) {
        let (tokens, errors) = lex(text);
        let mut out = String::new();
        for t in tokens.iter().filter(|t| !t.kind.is_trivia()) {
            out.push_str(&format!("{:?} {:?}\n", t.kind, t.range.slice(text)));
        }
        for e in &errors {
            out.push_str(&format!("error[{}] {:?}: {}\n", e.code, e.range, e.message));
        }
        expect.assert_eq(&out);
        let total: u32 = tokens.iter().map(|t| t.range.len()).sum();
        assert_eq!(total as usize, text.len(), "tokens must cover the text");
    }

    #[test]
    fn arrow_is_one_token_so_affine_maps_balance() {
        check(
            "(d0, d1) -> (d0 * 384 + d1, d1)",
            expect![[r#"
                LParen "("
                BareId "d0"
                Comma ","
                BareId "d1"
                RParen ")"
                Arrow "->"
                LParen "("
                BareId "d0"
                Star "*"
                Int "384"
                Plus "+"
                BareId "d1"
                Comma ","
                BareId "d1"
                RParen ")"
            "#]],
        );
    }

    #[test]
    fn dimension_lists_lex_like_mlir() {
        check(
            "4x4x!ttcore.tile<32x32, bf16> 0x0 1x12xbf16 #l1_ %3#1",
            expect![[r##"
                Int "4"
                BareId "x4x"
                BangId "!ttcore.tile"
                Less "<"
                Int "32"
                BareId "x32"
                Comma ","
                BareId "bf16"
                Greater ">"
                HexInt "0x0"
                Int "1"
                BareId "x12xbf16"
                HashId "#l1_"
                ValueId "%3"
                HashId "#1"
            "##]],
        );
    }

    #[test]
    fn strings_floats_and_resource_markers() {
        check(
            r##""{\22axis\22:0}" 1.250000e-01 0x7FC00000 {-# x #-} -2 @"a b""##,
            expect![[r##"
                String "\"{\\22axis\\22:0}\""
                Float "1.250000e-01"
                HexInt "0x7FC00000"
                FileMetaBegin "{-#"
                BareId "x"
                FileMetaEnd "#-}"
                Minus "-"
                Int "2"
                SymbolId "@\"a b\""
            "##]],
        );
        assert_eq!(unescape_string(r#""{\22axis\22:0}""#).unwrap(), r#"{"axis":0}"#);
    }

    #[test]
    fn bad_bytes_become_error_tokens_not_panics() {
        check(
            "%a = \u{e9} \"open\n`",
            expect![[r#"
                ValueId "%a"
                Equal "="
                Error "é"
                String "\"open"
                Error "`"
                error[unexpected-character] 5..7: unexpected character `é`
                error[unterminated-string] 8..13: unterminated string literal
                error[unexpected-character] 14..15: unexpected character ```
            "#]],
        );
    }
}
