//! Semantic tokens: a classification of every meaningful token, from the token stream plus
//! the roles only the tree knows (op names, attribute keys, alias and symbol definitions).

use base_db::SourceFile;
use rustc_hash::FxHashSet;
use syntax::{TextRange, TokenKind};

use crate::{Analysis, Cancellable, RootDatabase, file_index::file_index};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenType {
    Comment,
    String,
    Number,
    /// An SSA value (`%0`, `%arg0`).
    Value,
    /// A function symbol (`@main`).
    Function,
    /// An op name (`"ttnn.matmul"`, `func.func`, `return`).
    Operation,
    /// A use or definition of an attribute, type or location alias.
    Alias,
    /// A dialect attribute (`#ttnn.ttnn_layout`).
    Attribute,
    /// A builtin or dialect type (`tensor`, `bf16`, `!ttcore.tile`).
    Type,
    /// The key of an attribute dictionary entry.
    AttributeKey,
    /// A keyword (`loc`, `attributes`, `true`, `dense`).
    Keyword,
}

impl Analysis {
    /// Every classified token of an IR file, in source order.
    pub fn semantic_tokens(&self, file: SourceFile) -> Cancellable<Vec<(TextRange, TokenType)>> {
        self.with_db(|db| semantic_tokens(db, file))
    }
}

const BUILTIN_TYPES: &[&str] = &[
    "tensor", "memref", "vector", "tuple", "complex", "index", "none", "bf16", "f16", "f32", "f64",
    "tf32",
];

const KEYWORDS: &[&str] = &[
    "loc",
    "attributes",
    "true",
    "false",
    "unknown",
    "dense",
    "dense_resource",
    "sparse",
    "opaque",
    "array",
    "affine_map",
    "affine_set",
    "unit",
    "ins",
    "outs",
    "private",
    "public",
    "nested",
    "callsite",
    "at",
    "fused",
    "distinct",
];

fn semantic_tokens(db: &RootDatabase, file: SourceFile) -> Vec<(TextRange, TokenType)> {
    let _p = tracing::debug_span!("semantic_tokens").entered();
    let text = file.text(db);
    let parse = ir::parse_file(db, file);
    let index = file_index(db, file);
    // One set per chunk: a name is an alias or symbol only in the chunk that defines it.
    let aliases: Vec<FxHashSet<&str>> =
        index.aliases.iter().map(|c| c.iter().map(|a| a.name.as_str()).collect()).collect();
    let mut funcs: Vec<FxHashSet<&str>> = vec![FxHashSet::default(); index.chunk_ranges.len()];
    for f in &index.funcs {
        if let Some(set) = funcs.get_mut(f.chunk) {
            set.insert(f.name.as_str());
        }
    }
    let mut chunk = 0usize;
    let mut out = Vec::new();
    for tok in parse.tokens() {
        while index.chunk_ranges.get(chunk).is_some_and(|r| r.end <= tok.range.start)
            && chunk + 1 < index.chunk_ranges.len()
        {
            chunk += 1;
        }
        let s = tok.range.slice(text);
        let ty = match tok.kind {
            TokenKind::Comment => TokenType::Comment,
            TokenKind::String if index.is_op_name(tok.range) => TokenType::Operation,
            TokenKind::String if index.is_attr_key(tok.range) => TokenType::AttributeKey,
            TokenKind::String => TokenType::String,
            TokenKind::Int | TokenKind::HexInt | TokenKind::Float => TokenType::Number,
            TokenKind::ValueId => TokenType::Value,
            TokenKind::SymbolId if funcs.get(chunk).is_some_and(|f| f.contains(s)) => {
                TokenType::Function
            }
            TokenKind::HashId | TokenKind::BangId
                if aliases.get(chunk).is_some_and(|a| a.contains(s)) =>
            {
                TokenType::Alias
            }
            TokenKind::HashId if s.contains('.') => TokenType::Attribute,
            TokenKind::BangId => TokenType::Type,
            TokenKind::BareId if index.is_op_name(tok.range) => TokenType::Operation,
            TokenKind::BareId if index.is_attr_key(tok.range) => TokenType::AttributeKey,
            TokenKind::BareId if is_builtin_type(s) => TokenType::Type,
            TokenKind::BareId if KEYWORDS.contains(&s) => TokenType::Keyword,
            _ => continue,
        };
        out.push((tok.range, ty));
    }
    out
}

/// `bf16`, `tensor`, and integer types `i32`, `si8`, `ui16`.
fn is_builtin_type(s: &str) -> bool {
    if BUILTIN_TYPES.contains(&s) {
        return true;
    }
    let digits =
        s.strip_prefix("si").or_else(|| s.strip_prefix("ui")).or_else(|| s.strip_prefix('i'));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}
