//! Lossless lexing, error-recovering parsing and tt-mlir style printing of MLIR text.
//!
//! The syntax layer reads exactly what tt-mlir prints and its tests hand-write: TTNN and TTIR
//! files, split files (`// -----`), aliases, locations, dense constants and resource
//! trailers. It knows nothing of salsa, the file system or TTNN semantics.
//!
//! - [`parse`] never fails: it returns a [`Parse`] with a tree, the full token stream (trivia
//!   included, so no byte of input is lost) and syntax errors with ranges and stable codes.
//! - [`print()`] writes a parse back in tt-mlir's style: aliases first, ops in the generic form,
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
///
/// The tree is read through [`Parse::file`]. After an incremental re-parse
/// ([`Parse::reparse_edit`]) the positions of the ops after the edited one are moved when the
/// tree is first read, not by the re-parse: on a 10k-op file moving them is a walk over
/// megabytes of nodes, most of a keystroke's parse work, and what an edit's analysis needs
/// first (the re-lowered op, see [`Parse::with_current_tree`]) does not read them. A host
/// reads the tree on another thread meanwhile, so the move is off the keystroke's path.
pub struct Parse {
    tree: reparse::Tree,
    pub tokens: Vec<Token>,
    pub errors: Vec<SyntaxError>,
}

impl Parse {
    /// A parse from its parts.
    #[must_use]
    pub fn new(file: ast::SourceFile, tokens: Vec<Token>, errors: Vec<SyntaxError>) -> Parse {
        Parse { tree: reparse::Tree::ready(file), tokens, errors }
    }

    /// The tree. The first read after an incremental re-parse moves the positions the
    /// re-parse left for later (other readers wait for it meanwhile).
    #[must_use]
    pub fn file(&self) -> &ast::SourceFile {
        self.tree.get()
    }

    /// Runs `f` on the tree as it is, without waiting for positions an incremental re-parse
    /// left to move: in it, everything up to and including the re-parsed op, every name and
    /// the shape of the tree are current, and so are top-level items other than ops
    /// (aliases); ops after the re-parsed one may still have the old text's positions.
    /// For re-lowering that one op (which reads names and aliases only), on the keystroke's
    /// path. `f` must not read the tree through `self` ([`Parse::file`] waits for `f`).
    pub fn with_current_tree<R>(&self, f: impl FnOnce(&ast::SourceFile) -> R) -> R {
        self.tree.with_current(f)
    }

    /// True while positions moved by the last incremental re-parse wait for a first read.
    #[must_use]
    pub fn has_deferred_positions(&self) -> bool {
        self.tree.is_deferred()
    }
}

impl Clone for Parse {
    fn clone(&self) -> Parse {
        Parse::new(self.file().clone(), self.tokens.clone(), self.errors.clone())
    }
}

impl PartialEq for Parse {
    fn eq(&self, other: &Parse) -> bool {
        self.tokens == other.tokens && self.errors == other.errors && self.file() == other.file()
    }
}

impl Eq for Parse {}

impl std::fmt::Debug for Parse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parse")
            .field("file", self.file())
            .field("tokens", &self.tokens)
            .field("errors", &self.errors)
            .finish()
    }
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
        return Parse::new(ast::SourceFile { chunks: Vec::new() }, Vec::new(), vec![error]);
    }
    let (tokens, mut errors) = lexer::lex(text);
    let file = parser::parse_file(text, &tokens, &mut errors);
    errors.sort_by_key(|e| (e.range.start, e.range.end));
    Parse::new(file, tokens, errors)
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
