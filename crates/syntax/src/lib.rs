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
/// The tree and the tokens are read through [`Parse::file`] and [`Parse::tokens`]. After an
/// incremental re-parse ([`Parse::reparse_edit`]) the positions of the ops and tokens after
/// the re-parsed ops are moved when the parse is first read, not by the re-parse: on a 10k-op
/// file moving them is a walk over megabytes of nodes and some 850k tokens, most of a
/// keystroke's parse work, and what an edit's analysis needs first (the re-lowered ops, see
/// [`Parse::with_current`]) does not read them. A host reads the parse on another thread
/// meanwhile, so the move is off the keystroke's path.
pub struct Parse {
    tree: reparse::Tree,
    pub errors: Vec<SyntaxError>,
}

impl Parse {
    /// A parse from its parts.
    #[must_use]
    pub fn new(file: ast::SourceFile, tokens: Vec<Token>, errors: Vec<SyntaxError>) -> Parse {
        Parse { tree: reparse::Tree::ready(reparse::Parts { file, tokens, meta: None }), errors }
    }

    /// The tree. The first read after an incremental re-parse moves the positions the
    /// re-parse left for later (other readers wait for it meanwhile).
    #[must_use]
    pub fn file(&self) -> &ast::SourceFile {
        &self.tree.get().file
    }

    /// Every token, in order, covering the text. Moves positions like [`Parse::file`].
    #[must_use]
    pub fn tokens(&self) -> &[Token] {
        &self.tree.get().tokens
    }

    /// Runs `f` on the tree and tokens as they are, without waiting for positions an
    /// incremental re-parse left to move: in the tree, everything up to and including the
    /// re-parsed ops, every name and the shape of the tree are current, and so are top-level
    /// items other than ops (aliases); ops after the re-parsed ones may still have the old
    /// text's positions. The tokens are those whose positions are current: every one up to
    /// the re-parsed ops and a little past them, and through the last alias of their chunk.
    /// For re-lowering those ops (which reads names, aliases and the ops' own tokens only),
    /// on the keystroke's path. `f` must not read the parse through `self` ([`Parse::file`]
    /// waits for `f`).
    pub fn with_current<R>(&self, f: impl FnOnce(&ast::SourceFile, &[Token]) -> R) -> R {
        self.tree.with_current(f)
    }

    /// [`Parse::with_current`] where `f` also reads the ops up to `end` (new text): when the
    /// last re-parse left ops before `end` with the old text's positions (an edit of several
    /// changes, re-lowered as one window), they are moved first.
    pub fn with_current_through<R>(
        &self,
        end: u32,
        f: impl FnOnce(&ast::SourceFile, &[Token]) -> R,
    ) -> R {
        self.tree.with_current_through(end, f)
    }

    /// [`Parse::with_current`] for the tree alone.
    pub fn with_current_tree<R>(&self, f: impl FnOnce(&ast::SourceFile) -> R) -> R {
        self.tree.with_current(|file, _| f(file))
    }
}

impl Clone for Parse {
    fn clone(&self) -> Parse {
        Parse { tree: reparse::Tree::ready(self.tree.get().clone()), errors: self.errors.clone() }
    }
}

impl PartialEq for Parse {
    fn eq(&self, other: &Parse) -> bool {
        self.tokens() == other.tokens()
            && self.errors == other.errors
            && self.file() == other.file()
    }
}

impl Eq for Parse {}

impl std::fmt::Debug for Parse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parse")
            .field("file", self.file())
            .field("tokens", &self.tokens())
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
    let (tokens, lex_errors) = lexer::lex(text);
    let mut parse_errors = Vec::new();
    let mut chunks = Vec::new();
    let file = parser::parse_file(text, &tokens, &mut parse_errors, &mut chunks);
    // Lex errors first, then the parser's in the order found: the order equal ranges keep.
    let mut owned: Vec<(SyntaxError, reparse::Owner)> = lex_errors
        .into_iter()
        .map(|e| (e, reparse::Owner::Lex))
        .chain(parse_errors.into_iter().map(|(e, stmt)| (e, reparse::Owner::Stmt(stmt))))
        .collect();
    owned.sort_by_key(|(e, _)| (e.range.start, e.range.end));
    let (errors, owners) = owned.into_iter().unzip();
    let meta = reparse::Meta { chunks, owners };
    Parse { tree: reparse::Tree::ready(reparse::Parts { file, tokens, meta: Some(meta) }), errors }
}

impl Parse {
    /// The significant tokens of a `<...>` body, without the outer angle brackets.
    #[must_use]
    pub fn body_tokens(&self, body: &ast::Body) -> &[Token] {
        body_tokens(self.tokens(), body)
    }

    /// The text of `range` with each run of whitespace and comments replaced by one space:
    /// the exact token sequence, normalized.
    #[must_use]
    pub fn normalized_text(&self, text: &str, range: TextRange) -> String {
        normalized_text(text, self.tokens(), range)
    }
}

/// [`Parse::body_tokens`] from a file's tokens (or the current ones, see
/// [`Parse::with_current`]).
#[must_use]
pub fn body_tokens<'t>(tokens: &'t [Token], body: &ast::Body) -> &'t [Token] {
    let open = body.open as usize + 1;
    let close = (body.close as usize).max(open);
    tokens.get(open..close).unwrap_or(&[])
}

/// [`Parse::normalized_text`] from a file's tokens (or the current ones, see
/// [`Parse::with_current`]).
#[must_use]
pub fn normalized_text(text: &str, tokens: &[Token], range: TextRange) -> String {
    let mut out = String::new();
    printer::write_range(&mut out, text, tokens, range);
    out
}

#[cfg(test)]
mod tests;
