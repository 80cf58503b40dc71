//! Lossless lexing, error-recovering parsing and tt-mlir style printing of MLIR text.
//!
//! The syntax layer reads exactly what tt-mlir prints and its tests hand-write: TTNN and TTIR
//! files, split files (`// -----`), aliases, locations, dense constants and resource
//! trailers. It knows nothing of salsa, the file system or TTNN semantics.
//!
//! - [`parse`] never fails: it returns a [`Parse`] with a tree, the full token stream (trivia
//!   included, so no byte of input is lost) and syntax errors with ranges and stable codes.
//! - [`print`] writes a parse back in tt-mlir's style: aliases first, ops in the generic form,
//!   location aliases after the module. Attribute and type spellings are reproduced token by
//!   token, so dialect attributes MLIR keeps as opaque text keep their meaning.

pub mod ast;
mod dims;
mod lexer;
mod parser;
mod printer;
mod reparse;
mod text;

pub use crate::{
    dims::split_dims,
    lexer::{Token, TokenKind, escape_string, lex, unescape_string},
    printer::{PrintHook, print, print_with, range_text},
    reparse::OpEdit,
    text::{LineCol, LineIndex, TextRange, decimal},
};

/// A syntax error: a stable kebab-case code, a message and the range it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub code: &'static str,
    pub message: String,
    pub range: TextRange,
}

impl SyntaxError {
    #[must_use]
    pub fn new(code: &'static str, message: impl Into<String>, range: TextRange) -> SyntaxError {
        SyntaxError { code, message: message.into(), range }
    }
}

/// The result of parsing a file: the tree, every token, and the errors found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parse {
    pub file: ast::SourceFile,
    pub tokens: Vec<Token>,
    pub errors: Vec<SyntaxError>,
}

/// Parses MLIR text. Never fails and never panics; problems are in `errors`.
#[must_use]
pub fn parse(text: &str) -> Parse {
    if text.len() > u32::MAX as usize {
        let error = SyntaxError::new(
            "file-too-large",
            "files larger than 4 GiB are not supported",
            TextRange::empty(0),
        );
        return Parse {
            file: ast::SourceFile { chunks: Vec::new() },
            tokens: Vec::new(),
            errors: vec![error],
        };
    }
    let (tokens, mut errors) = lexer::lex(text);
    let file = parser::parse_file(text, &tokens, &mut errors);
    errors.sort_by_key(|e| (e.range.start, e.range.end));
    Parse { file, tokens, errors }
}

impl Parse {
    /// The significant tokens of a `<...>` body, without the outer angle brackets.
    #[must_use]
    pub fn body_tokens(&self, body: &ast::Body) -> &[Token] {
        let open = body.open as usize + 1;
        let close = (body.close as usize).max(open);
        self.tokens.get(open..close).unwrap_or(&[])
    }

    /// The text of `range` with each run of whitespace and comments replaced by one space:
    /// the exact token sequence, normalized.
    #[must_use]
    pub fn normalized_text(&self, text: &str, range: TextRange) -> String {
        let mut out = String::new();
        printer::write_range(&mut out, text, &self.tokens, range);
        out
    }
}

#[cfg(test)]
mod tests;
