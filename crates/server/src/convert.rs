//! Conversions between LSP's types and `ide`'s plain data: UTF-16 positions and byte
//! offsets, URIs and paths, severities, symbol kinds.
//!
//! Positions from the client are untrusted: a line past the end or a column inside a
//! surrogate pair is clamped to the nearest valid offset, never an error.

use std::str::FromStr;

use ide::{Severity, SymbolKind, TokenType};
use lsp_types as lsp;
use syntax::{LineCol, LineIndex, TextRange};

/// A text and its line index, for converting positions in it.
pub(crate) struct Lines<'a> {
    pub(crate) text: &'a str,
    pub(crate) index: &'a LineIndex,
}

impl Lines<'_> {
    pub(crate) fn offset(&self, pos: lsp::Position) -> u32 {
        self.index.offset(self.text, LineCol { line: pos.line, col_utf16: pos.character })
    }

    /// A byte range; a reversed range is reordered.
    pub(crate) fn range(&self, range: lsp::Range) -> TextRange {
        let (a, b) = (self.offset(range.start), self.offset(range.end));
        TextRange::new(a.min(b), a.max(b))
    }

    pub(crate) fn position(&self, offset: u32) -> lsp::Position {
        let lc = self.index.line_col(self.text, offset);
        lsp::Position { line: lc.line, character: lc.col_utf16 }
    }

    pub(crate) fn lsp_range(&self, range: TextRange) -> lsp::Range {
        lsp::Range { start: self.position(range.start), end: self.position(range.end) }
    }
}

/// The path the host knows a document by: the file system path of a `file:` URI (so
/// sidecars can be found next to it), else the URI itself.
pub(crate) fn uri_to_path(uri: &lsp::Uri) -> String {
    let s = uri.as_str();
    let Some(rest) = s.strip_prefix("file://") else { return s.to_owned() };
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    percent_decode(rest)
}

pub(crate) fn path_to_uri(path: &str) -> Option<lsp::Uri> {
    if path.starts_with('/') {
        let mut s = String::from("file://");
        for b in path.bytes() {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                s.push(b as char);
            } else {
                s.push_str(&format!("%{b:02X}"));
            }
        }
        lsp::Uri::from_str(&s).ok()
    } else {
        lsp::Uri::from_str(path).ok()
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

/// The `source` of every diagnostic the server sends.
pub(crate) const SOURCE: &str = "ttnn-analyzer";

pub(crate) fn diagnostic(lines: &Lines<'_>, d: ide::FindingRef<'_>) -> lsp::Diagnostic {
    lsp::Diagnostic {
        range: lines.lsp_range(d.range),
        severity: Some(severity(d.severity)),
        code: Some(lsp::NumberOrString::String(d.code.to_owned())),
        source: Some(SOURCE.to_owned()),
        message: d.message.to_owned(),
        ..lsp::Diagnostic::default()
    }
}

pub(crate) fn symbol_kind(k: SymbolKind) -> lsp::SymbolKind {
    match k {
        SymbolKind::Module => lsp::SymbolKind::MODULE,
        SymbolKind::Function => lsp::SymbolKind::FUNCTION,
        SymbolKind::Op => lsp::SymbolKind::OPERATOR,
        SymbolKind::Alias => lsp::SymbolKind::CONSTANT,
    }
}

/// The semantic token legend; [`token_type_index`] indexes into it.
pub(crate) const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::VARIABLE,
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::METHOD,
    lsp::SemanticTokenType::MACRO,
    lsp::SemanticTokenType::DECORATOR,
    lsp::SemanticTokenType::TYPE,
    lsp::SemanticTokenType::PROPERTY,
    lsp::SemanticTokenType::KEYWORD,
];

pub(crate) fn token_type_index(t: TokenType) -> u32 {
    match t {
        TokenType::Comment => 0,
        TokenType::String => 1,
        TokenType::Number => 2,
        TokenType::Value => 3,
        TokenType::Function => 4,
        TokenType::Operation => 5,
        TokenType::Alias => 6,
        TokenType::Attribute => 7,
        TokenType::Type => 8,
        TokenType::AttributeKey => 9,
        TokenType::Keyword => 10,
    }
}

/// Encodes tokens in LSP's relative form. Tokens spanning lines are skipped: clients
/// disagree on multi-line tokens, and MLIR has none but odd strings.
pub(crate) fn semantic_tokens(
    lines: &Lines<'_>,
    tokens: &[(TextRange, TokenType)],
) -> Vec<lsp::SemanticToken> {
    let mut out = Vec::with_capacity(tokens.len());
    let (mut prev_line, mut prev_col) = (0u32, 0u32);
    for (range, ty) in tokens {
        let start = lines.position(range.start);
        let end = lines.position(range.end);
        if start.line != end.line || end.character <= start.character {
            continue;
        }
        let delta_line = start.line - prev_line;
        let delta_start =
            if delta_line == 0 { start.character - prev_col } else { start.character };
        out.push(lsp::SemanticToken {
            delta_line,
            delta_start,
            length: end.character - start.character,
            token_type: token_type_index(*ty),
            token_modifiers_bitset: 0,
        });
        prev_line = start.line;
        prev_col = start.character;
    }
    out
}
