//! A recursive-descent parser over the significant tokens, with error recovery.
//!
//! Parsing never fails: every error is recorded with a range and a stable code, and the
//! parser resynchronizes at the next statement. Recovery uses the layout MLIR printers and
//! test writers follow: a statement starts on a new line, and ops of one block share an
//! indentation column. So a broken op costs that op only, never the rest of its function.

mod attrs;
mod ops;

use std::cell::Cell;

use crate::{
    SyntaxError, TextRange,
    ast::{Chunk, Item, SourceFile},
    lexer::{Token, TokenKind},
};

/// Nesting deeper than this is reported instead of recursed into, so hostile input cannot
/// overflow the stack (a test thread has 2 MiB).
const MAX_DEPTH: u32 = 200;

/// How many levels of `MAX_DEPTH` one region uses. A region level recurses through op,
/// generic op, region and block frames, about four times the stack of an attribute level
/// (about 15 KiB per region level in a debug build, where 200 region levels overflowed a
/// 2 MiB thread). So regions nest at most 50 deep; real IR nests fewer than 10.
pub(crate) const REGION_WEIGHT: u32 = 4;

pub(crate) type PResult<T> = Result<T, Recovered>;

/// Marker for "an error was recorded; unwind to the nearest recovery point".
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recovered;

/// What a chunk's parse leaves for an incremental re-parse to reason about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkMeta {
    /// The chunk's significant tokens (its recovery fuel is four per token and 1024).
    pub(crate) sig: usize,
    /// Tokens recovery rewound over, at most (exact after a parse from scratch).
    pub(crate) spent: usize,
    /// True when recovery ran out of fuel somewhere in the chunk.
    pub(crate) exhausted: bool,
}

/// A syntax error with the start of the innermost statement (op or top-level item) whose
/// parse found it.
pub(crate) type OwnedError = (SyntaxError, u32);

/// Parses the file's chunks; `errors` gets the syntax errors with their statements, `meta`
/// one entry per chunk.
pub(crate) fn parse_file(
    text: &str,
    tokens: &[Token],
    errors: &mut Vec<OwnedError>,
    meta: &mut Vec<ChunkMeta>,
) -> SourceFile {
    // A `// -----` line splits the file into independent chunks, as `--split-input-file` does.
    let mut chunks = Vec::new();
    let mut sig = Vec::new();
    let mut chunk_start = 0u32;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind == TokenKind::Comment && t.range.slice(text).trim_end() == "// -----" {
            let range = TextRange::new(chunk_start, t.range.start);
            chunks.push(parse_chunk(text, tokens, &sig, range, errors, meta));
            sig.clear();
            chunk_start = t.range.end;
        } else if !t.kind.is_trivia() {
            sig.push(i as u32);
        }
    }
    let range = TextRange::new(chunk_start, text.len() as u32);
    chunks.push(parse_chunk(text, tokens, &sig, range, errors, meta));
    SourceFile { chunks }
}

fn parse_chunk(
    text: &str,
    tokens: &[Token],
    sig: &[u32],
    range: TextRange,
    errors: &mut Vec<OwnedError>,
    meta: &mut Vec<ChunkMeta>,
) -> Chunk {
    // Recovery may re-expose a few times the chunk's tokens in total; see `recover_statement`.
    let rewind_fuel = sig.len().saturating_mul(4).saturating_add(1024);
    let mut p = Parser {
        text,
        tokens,
        sig,
        pos: 0,
        end: range.end,
        errors,
        depth: 0,
        rewind_fuel,
        exhausted: false,
        stmt: range.start,
        hit_end: Cell::new(false),
    };
    let mut items = Vec::new();
    while !p.at_eof() {
        let before = p.pos;
        items.push(p.item());
        if p.pos == before {
            // Guarantee progress on input no rule accepts.
            let t = p.bump();
            items.push(Item::Error(t.range));
        }
    }
    meta.push(ChunkMeta {
        sig: sig.len(),
        spent: rewind_fuel - p.rewind_fuel,
        exhausted: p.exhausted,
    });
    Chunk { range, items }
}

/// What [`parse_block_ops`] found.
pub(crate) struct BlockOps {
    pub(crate) ops: Vec<crate::ast::Op>,
    /// The errors, in the order the parse found them, with their statements.
    pub(crate) errors: Vec<OwnedError>,
    /// True when the parse stopped exactly at the target token, having seen no `}`, block
    /// label or end of input before it.
    pub(crate) reached: bool,
    /// True when the parser looked for a token past the end of `sig`.
    pub(crate) hit_end: bool,
    /// Tokens recovery rewound over (the chunk's parse spends them from its `rewind_fuel`).
    pub(crate) rewound: usize,
}

/// Parses ops of one block the way [`parse_chunk`]'s block loop reaches them: `sig` holds
/// significant tokens of the chunk from the one before the first op on, `pos` is the first
/// op's first, `target` the index (into `sig`) of the first token after the ops, and `depth`
/// the nesting the enclosing regions use. For [`crate::Parse::reparse_edit`], which gives the
/// parser a window of the chunk. Recovery has fuel enough never to run dry; `rewound` says
/// how much it used.
pub(crate) fn parse_block_ops(
    text: &str,
    tokens: &[Token],
    sig: &[u32],
    pos: usize,
    target: usize,
    end: u32,
    depth: u32,
) -> BlockOps {
    let mut errors = Vec::new();
    let rewind_fuel = usize::MAX / 2;
    let mut p = Parser {
        text,
        tokens,
        sig,
        pos,
        end,
        errors: &mut errors,
        depth,
        rewind_fuel,
        exhausted: false,
        stmt: sig.get(pos).map_or(end, |&i| tokens[i as usize].range.start),
        hit_end: Cell::new(false),
    };
    let mut ops = Vec::new();
    let mut reached = true;
    // `region_inner`'s loop, up to the target.
    while p.pos < target {
        match p.nth(0) {
            None | Some(TokenKind::RBrace | TokenKind::CaretId) => {
                reached = false;
                break;
            }
            Some(_) => {
                let before = p.pos;
                ops.push(p.op());
                if p.pos == before {
                    p.bump();
                }
            }
        }
    }
    reached &= p.pos == target;
    let (hit_end, rewound) = (p.hit_end.get(), rewind_fuel - p.rewind_fuel);
    BlockOps { ops, errors, reached, hit_end, rewound }
}

pub(crate) struct Parser<'a> {
    pub(crate) text: &'a str,
    pub(crate) tokens: &'a [Token],
    /// Indices into `tokens` of the chunk's significant tokens.
    sig: &'a [u32],
    pos: usize,
    /// End offset of the chunk, for diagnostics at the end of input.
    end: u32,
    errors: &'a mut Vec<OwnedError>,
    depth: u32,
    /// Tokens recovery may still rewind over (see `recover_statement`).
    rewind_fuel: usize,
    /// Set when a rewind was refused for want of fuel.
    exhausted: bool,
    /// The start of the innermost statement being parsed, which owns the errors found.
    stmt: u32,
    /// Set when the parser looked for a token past the end of `sig`.
    hit_end: Cell<bool>,
}

impl<'a> Parser<'a> {
    // ---- token access -------------------------------------------------------------------

    pub(crate) fn at_eof(&self) -> bool {
        let eof = self.pos >= self.sig.len();
        if eof {
            self.hit_end.set(true);
        }
        eof
    }

    pub(crate) fn nth_token(&self, n: usize) -> Option<Token> {
        match self.sig.get(self.pos + n) {
            Some(&i) => Some(self.tokens[i as usize]),
            None => {
                self.hit_end.set(true);
                None
            }
        }
    }

    pub(crate) fn nth(&self, n: usize) -> Option<TokenKind> {
        self.nth_token(n).map(|t| t.kind)
    }

    pub(crate) fn nth_text(&self, n: usize) -> &'a str {
        self.nth_token(n).map_or("", |t| t.range.slice(self.text))
    }

    pub(crate) fn at(&self, kind: TokenKind) -> bool {
        self.nth(0) == Some(kind)
    }

    pub(crate) fn at_kw(&self, kw: &str) -> bool {
        self.at(TokenKind::BareId) && self.nth_text(0) == kw
    }

    /// The index into `tokens` of the current significant token.
    pub(crate) fn token_index(&self) -> u32 {
        self.sig.get(self.pos).copied().unwrap_or_else(|| {
            self.hit_end.set(true);
            self.tokens.len() as u32
        })
    }

    /// The range of the current token, or an empty range at the end of the chunk.
    pub(crate) fn cur_range(&self) -> TextRange {
        self.nth_token(0).map_or(TextRange::empty(self.end), |t| t.range)
    }

    /// The start offset of the current token.
    pub(crate) fn cur_start(&self) -> u32 {
        self.cur_range().start
    }

    /// The end offset of the last consumed token.
    pub(crate) fn prev_end(&self) -> u32 {
        if self.pos == 0 {
            return self.sig.first().map_or(self.end, |&i| self.tokens[i as usize].range.start);
        }
        self.tokens[self.sig[self.pos - 1] as usize].range.end
    }

    /// True when the n-th and (n+1)-th significant tokens touch (no trivia between them).
    pub(crate) fn adjacent(&self, n: usize) -> bool {
        match (self.nth_token(n), self.nth_token(n + 1)) {
            (Some(a), Some(b)) => a.range.end == b.range.start,
            _ => false,
        }
    }

    /// True when a line break separates the current token from the previous one.
    fn newline_before(&self) -> bool {
        if self.pos == 0 {
            return true;
        }
        let prev = self.tokens[self.sig[self.pos - 1] as usize].range.end;
        let cur = self.cur_start();
        self.text.get(prev as usize..cur as usize).is_some_and(|s| s.contains('\n'))
    }

    /// The column (bytes from the line start) of an offset, for the indentation heuristic.
    fn column_of(&self, offset: u32) -> u32 {
        let before = self.text.get(..offset as usize).unwrap_or("");
        match before.rfind('\n') {
            Some(nl) => offset - nl as u32 - 1,
            None => offset,
        }
    }

    pub(crate) fn bump(&mut self) -> Token {
        let t = self
            .nth_token(0)
            .unwrap_or(Token { kind: TokenKind::Error, range: TextRange::empty(self.end) });
        if !self.at_eof() {
            self.pos += 1;
        }
        t
    }

    pub(crate) fn eat(&mut self, kind: TokenKind) -> Option<Token> {
        if self.at(kind) { Some(self.bump()) } else { None }
    }

    pub(crate) fn eat_kw(&mut self, kw: &str) -> Option<Token> {
        if self.at_kw(kw) { Some(self.bump()) } else { None }
    }

    pub(crate) fn expect(&mut self, kind: TokenKind) -> PResult<Token> {
        match self.eat(kind) {
            Some(t) => Ok(t),
            None => Err(self.error_expected(kind.describe())),
        }
    }

    pub(crate) fn expect_kw(&mut self, kw: &str) -> PResult<Token> {
        match self.eat_kw(kw) {
            Some(t) => Ok(t),
            None => Err(self.error_expected(&format!("`{kw}`"))),
        }
    }

    // ---- diagnostics --------------------------------------------------------------------

    pub(crate) fn error(&mut self, code: &'static str, message: String, range: TextRange) {
        self.errors.push((SyntaxError::new(code, message, range), self.stmt));
    }

    /// Records "expected X, found Y" at the current token.
    pub(crate) fn error_expected(&mut self, what: &str) -> Recovered {
        let found = match self.nth_token(0) {
            None => "end of input".to_owned(),
            Some(t) => {
                let text = t.range.slice(self.text);
                let shown: String = text.chars().take(40).collect();
                format!("`{shown}`")
            }
        };
        let range = self.cur_range();
        self.error("expected-token", format!("expected {what}, found {found}"), range);
        Recovered
    }

    // ---- nesting guard ------------------------------------------------------------------

    /// Enters one level of nesting; past the limit, reports once and skips the group.
    pub(crate) fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            let start = self.cur_range();
            self.skip_balanced();
            let range = start.cover(TextRange::empty(self.prev_end()));
            self.error(
                "nesting-too-deep",
                format!("nesting deeper than {MAX_DEPTH} levels is not supported"),
                range,
            );
            return Err(Recovered);
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// `enter` for a region, which costs `REGION_WEIGHT` levels of the nesting budget.
    pub(crate) fn enter_region(&mut self) -> PResult<()> {
        self.depth += REGION_WEIGHT - 1;
        let entered = self.enter();
        if entered.is_err() {
            self.depth -= REGION_WEIGHT - 1;
        }
        entered
    }

    pub(crate) fn leave_region(&mut self) {
        self.depth = self.depth.saturating_sub(REGION_WEIGHT);
    }

    /// Skips one token, or a whole bracketed group if the current token opens one.
    /// Iterative, so arbitrarily deep input is fine.
    pub(crate) fn skip_balanced(&mut self) {
        let mut stack: Vec<TokenKind> = Vec::new();
        loop {
            let Some(kind) = self.nth(0) else { return };
            match kind {
                TokenKind::LParen => stack.push(TokenKind::RParen),
                TokenKind::LBracket => stack.push(TokenKind::RBracket),
                TokenKind::LBrace => stack.push(TokenKind::RBrace),
                TokenKind::Less => stack.push(TokenKind::Greater),
                TokenKind::RParen
                | TokenKind::RBracket
                | TokenKind::RBrace
                | TokenKind::Greater => {
                    // Pop to the matching opener; a mismatched closer ends the inner groups.
                    if let Some(at) = stack.iter().rposition(|&k| k == kind) {
                        stack.truncate(at);
                    } else if stack.is_empty() {
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
            if stack.is_empty() {
                return;
            }
        }
    }

    // ---- recovery -----------------------------------------------------------------------

    /// True if the current token can start a statement in a block.
    fn at_statement_start(&self) -> bool {
        match self.nth(0) {
            Some(
                TokenKind::ValueId | TokenKind::String | TokenKind::CaretId | TokenKind::RBrace,
            ) => true,
            Some(TokenKind::HashId | TokenKind::BangId) => self.nth(1) == Some(TokenKind::Equal),
            Some(TokenKind::BareId) => {
                let t = self.nth_text(0);
                t.contains('.') || matches!(t, "return" | "call" | "module")
            }
            Some(TokenKind::FileMetaBegin) => true,
            _ => false,
        }
    }

    /// Skips a broken statement that started at significant-token index `start_pos`.
    ///
    /// The parser rewinds to the statement's start so bracket depth is tracked from a known
    /// point, then stops at the next token on a new line that can start a statement and is
    /// either outside all brackets or indented no deeper than the broken statement (which
    /// covers brackets the broken text never closed). A `}` that would close the enclosing
    /// region stops the skip without being consumed. Always consumes at least one token.
    ///
    /// Rewinding is bounded by `rewind_fuel`. A rewind hands the tokens the broken statement
    /// consumed back to the enclosing block, and if they hold a nested failing statement the
    /// block re-parses it, which rewinds again, once per nesting level: unindented, unclosed
    /// nested regions (`"a"() ({` on every line) took 2^depth time, minutes at depth 25. Once
    /// the fuel is spent, recovery skips on from where the error was found instead, so the
    /// total work stays a small multiple of the input.
    pub(crate) fn recover_statement(&mut self, start_pos: usize) {
        let start_pos = start_pos.min(self.sig.len());
        let col = self.column_of(self.cur_start_at(start_pos));
        let rewind = self.pos.saturating_sub(start_pos);
        let mut first = true;
        if rewind <= self.rewind_fuel {
            self.rewind_fuel -= rewind;
            self.pos = start_pos;
        } else {
            self.exhausted = true;
            first = self.pos == start_pos;
        }
        let mut depth = 0u32;
        while let Some(kind) = self.nth(0) {
            if !first {
                let on_new_line = self.newline_before();
                if kind == TokenKind::RBrace && depth == 0 {
                    return;
                }
                if on_new_line && self.at_statement_start() {
                    let this_col = self.column_of(self.cur_start());
                    let closes_outer = kind == TokenKind::RBrace && this_col < col;
                    let opens_statement =
                        kind != TokenKind::RBrace && (depth == 0 || this_col <= col);
                    if opens_statement || closes_outer {
                        return;
                    }
                }
            }
            match kind {
                TokenKind::LBrace | TokenKind::LParen | TokenKind::LBracket => depth += 1,
                TokenKind::RBrace | TokenKind::RParen | TokenKind::RBracket => {
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
            self.bump();
            first = false;
        }
    }

    // ---- top level ----------------------------------------------------------------------

    fn item(&mut self) -> Item {
        let start = self.cur_start();
        let outer = std::mem::replace(&mut self.stmt, start);
        let item = self.item_inner();
        self.stmt = outer;
        item
    }

    fn item_inner(&mut self) -> Item {
        let start = self.cur_start();
        let start_pos = self.save();
        match self.nth(0) {
            Some(TokenKind::HashId) if self.nth(1) == Some(TokenKind::Equal) => {
                let name = self.ident();
                self.bump();
                if self.at_kw("loc") && self.nth(1) == Some(TokenKind::LParen) {
                    match self.loc_spec() {
                        Ok(spec) => Item::LocAlias(crate::ast::LocAliasDef {
                            name,
                            loc: spec.loc,
                            range: TextRange::new(start, self.prev_end()),
                        }),
                        Err(Recovered) => self.item_error(start_pos),
                    }
                } else {
                    match self.attr() {
                        Ok(value) => Item::AttrAlias(crate::ast::AttrAliasDef {
                            name,
                            value,
                            range: TextRange::new(start, self.prev_end()),
                        }),
                        Err(Recovered) => self.item_error(start_pos),
                    }
                }
            }
            Some(TokenKind::BangId) if self.nth(1) == Some(TokenKind::Equal) => {
                let name = self.ident();
                self.bump();
                match self.ty() {
                    Ok(value) => Item::TypeAlias(crate::ast::TypeAliasDef {
                        name,
                        value,
                        range: TextRange::new(start, self.prev_end()),
                    }),
                    Err(Recovered) => self.item_error(start_pos),
                }
            }
            Some(TokenKind::FileMetaBegin) => {
                self.bump();
                while !self.at_eof() && !self.at(TokenKind::FileMetaEnd) {
                    self.bump();
                }
                if self.eat(TokenKind::FileMetaEnd).is_none() {
                    let range = TextRange::new(start, self.prev_end());
                    self.error(
                        "unterminated-resources",
                        "dialect resource section is not closed with `#-}`".to_owned(),
                        range,
                    );
                }
                Item::Resources(TextRange::new(start, self.prev_end()))
            }
            Some(TokenKind::RBrace) => {
                let t = self.bump();
                self.error("unmatched-brace", "unmatched `}`".to_owned(), t.range);
                Item::Error(t.range)
            }
            _ => Item::Op(self.op()),
        }
    }

    fn item_error(&mut self, start_pos: usize) -> Item {
        let start = self.cur_start_at(start_pos);
        self.recover_statement(start_pos);
        Item::Error(TextRange::new(start, self.prev_end()))
    }

    /// The start offset of the significant token at index `pos`.
    pub(crate) fn cur_start_at(&self, pos: usize) -> u32 {
        self.sig.get(pos).map_or_else(
            || {
                self.hit_end.set(true);
                self.end
            },
            |&i| self.tokens[i as usize].range.start,
        )
    }

    /// The current significant-token index, for rewinding on recovery.
    pub(crate) fn save(&self) -> usize {
        self.pos
    }

    /// Takes the current token as an identifier.
    pub(crate) fn ident(&mut self) -> crate::ast::Ident {
        let t = self.bump();
        crate::ast::Ident { text: t.range.slice(self.text).to_owned(), range: t.range }
    }
}
