//! A per-file index of names for the IDE features: where SSA values, aliases and functions are
//! defined, which scope each belongs to, and the syntax roles (op names, attribute keys) the
//! token stream alone cannot tell.
//!
//! Navigation, hover, semantic tokens and symbols all start from "which name is under the
//! cursor and what does it refer to". Answering that from tokens plus a few definition sites
//! is cheap and covers every op form, including custom syntax whose operands lowering only
//! collects as opaque uses. The index is built once per file revision by [`file_index`].
//!
//! Scoping follows MLIR: aliases and function symbols belong to a `// -----` chunk (each chunk
//! is its own module); SSA values belong to the innermost `func.func` (functions are isolated
//! from above), or to the chunk when written outside any function.

use std::sync::Arc;

use base_db::SourceFile;
use syntax::{Parse, TextRange, Token, TokenKind, ast};

/// The kind of an alias definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum AliasKind {
    /// `#name = <attribute>`.
    Attr,
    /// `!name = <type>`.
    Type,
    /// `#loc3 = loc(...)`.
    Loc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AliasDef {
    /// The name with its sigil (`#ttnn_layout3`, `!t`).
    pub(crate) name: String,
    pub(crate) kind: AliasKind,
    pub(crate) name_range: TextRange,
    /// The whole `#name = value` item.
    pub(crate) range: TextRange,
    /// The value after `=`.
    pub(crate) value_range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FuncDef {
    /// The symbol with its `@`.
    pub(crate) name: String,
    pub(crate) name_range: TextRange,
    /// The whole `func.func` op.
    pub(crate) range: TextRange,
    pub(crate) chunk: usize,
}

/// How an SSA value is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueDefKind {
    /// Argument `n` of the scope's function.
    Arg(u32),
    /// A result name of an op (`%3` or `%3:2`).
    Result,
    /// A block argument (`^bb0(%x: T)`).
    BlockArg,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueDef {
    pub(crate) name: String,
    pub(crate) name_range: TextRange,
    /// The whole defining op or argument.
    pub(crate) range: TextRange,
    pub(crate) kind: ValueDefKind,
    pub(crate) scope: Scope,
}

/// Where an SSA name is visible: a function (index into [`FileIndex::funcs`]) or a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    Func(usize),
    Chunk(usize),
}

/// What a name token refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name {
    Value { scope: Scope, name: String },
    Alias { chunk: usize, name: String },
    Func { chunk: usize, name: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FileIndex {
    pub(crate) chunk_ranges: Vec<TextRange>,
    pub(crate) aliases: Vec<Vec<AliasDef>>,
    /// Every `func.func`, in source order (nested ones after their parent's start).
    pub(crate) funcs: Vec<FuncDef>,
    pub(crate) values: Vec<ValueDef>,
    /// Op name tokens (`"ttnn.add"`, `func.func`, `return`), sorted.
    pub(crate) op_names: Vec<TextRange>,
    /// Attribute dictionary keys, sorted.
    pub(crate) attr_keys: Vec<TextRange>,
}

/// The name index of a file. Re-runs on every edit of the file (it holds positions), and is
/// read only by the IDE features.
#[salsa::tracked(returns(clone), no_eq)]
pub(crate) fn file_index(db: &dyn ir::Db, file: SourceFile) -> Arc<FileIndex> {
    let parse = ir::parse_file(db, file);
    let _p = tracing::debug_span!("file_index", file = %file.path(db)).entered();
    Arc::new(build(&parse))
}

fn build(parse: &Parse) -> FileIndex {
    let mut idx = FileIndex::default();
    for (chunk_idx, chunk) in parse.file().chunks.iter().enumerate() {
        idx.chunk_ranges.push(chunk.range);
        let mut aliases = Vec::new();
        for item in &chunk.items {
            let (name, kind, range, value_range) = match item {
                ast::Item::AttrAlias(a) => (&a.name, AliasKind::Attr, a.range, a.value.range),
                ast::Item::TypeAlias(a) => (&a.name, AliasKind::Type, a.range, a.value.range),
                ast::Item::LocAlias(a) => (&a.name, AliasKind::Loc, a.range, a.loc.range),
                ast::Item::Op(op) => {
                    walk_op(&mut idx, op, chunk_idx, Scope::Chunk(chunk_idx));
                    continue;
                }
                _ => continue,
            };
            aliases.push(AliasDef {
                name: name.text.clone(),
                kind,
                name_range: name.range,
                range,
                value_range,
            });
        }
        idx.aliases.push(aliases);
    }
    idx.op_names.sort_by_key(|r| (r.start, r.end));
    idx.attr_keys.sort_by_key(|r| (r.start, r.end));
    idx
}

fn walk_op(idx: &mut FileIndex, op: &ast::Op, chunk: usize, scope: Scope) {
    idx.op_names.push(op.name.range);
    for r in &op.results {
        idx.values.push(ValueDef {
            name: r.name.text.clone(),
            name_range: r.name.range,
            range: op.range,
            kind: ValueDefKind::Result,
            scope,
        });
    }
    let mut regions: Vec<&ast::Region> = Vec::new();
    let mut dicts: Vec<&ast::AttrDict> = Vec::new();
    match &op.body {
        ast::OpBody::Func(f) => {
            let func_idx = idx.funcs.len();
            idx.funcs.push(FuncDef {
                name: f.sym_name.text.clone(),
                name_range: f.sym_name.range,
                range: op.range,
                chunk,
            });
            let inner = Scope::Func(func_idx);
            for (i, a) in f.args.iter().enumerate() {
                if let Some(n) = &a.name {
                    idx.values.push(ValueDef {
                        name: n.text.clone(),
                        name_range: n.range,
                        range: a.range,
                        kind: ValueDefKind::Arg(i as u32),
                        scope: inner,
                    });
                }
                dicts.extend(&a.attrs);
            }
            for r in &f.results {
                dicts.extend(&r.attrs);
            }
            dicts.extend(&f.attrs);
            for d in dicts {
                walk_dict(idx, d);
            }
            if let Some(body) = &f.body {
                walk_region(idx, body, chunk, inner);
            }
            return;
        }
        ast::OpBody::Module(m) => {
            dicts.extend(&m.attrs);
            regions.push(&m.body);
        }
        ast::OpBody::RegionOp(r) => {
            dicts.extend(&r.attrs);
            regions.push(&r.body);
        }
        ast::OpBody::Generic(g) => {
            dicts.extend(&g.properties);
            dicts.extend(&g.attrs);
            regions.extend(&g.regions);
        }
        ast::OpBody::D2mSubgraph(d) => dicts.extend(&d.attrs),
        ast::OpBody::TtLang(c) => dicts.extend(&c.attrs),
        _ => {}
    }
    for d in dicts {
        walk_dict(idx, d);
    }
    for r in regions {
        walk_region(idx, r, chunk, scope);
    }
}

fn walk_region(idx: &mut FileIndex, region: &ast::Region, chunk: usize, scope: Scope) {
    for block in &region.blocks {
        if let Some(label) = &block.label {
            for a in &label.args {
                idx.values.push(ValueDef {
                    name: a.name.text.clone(),
                    name_range: a.name.range,
                    range: a.range,
                    kind: ValueDefKind::BlockArg,
                    scope,
                });
            }
        }
        for op in &block.ops {
            walk_op(idx, op, chunk, scope);
        }
    }
}

fn walk_dict(idx: &mut FileIndex, dict: &ast::AttrDict) {
    for e in &dict.entries {
        idx.attr_keys.push(e.key.range);
        if let Some(v) = &e.value {
            walk_attr(idx, v);
        }
    }
}

fn walk_attr(idx: &mut FileIndex, attr: &ast::Attr) {
    match &attr.kind {
        ast::AttrKind::Dict(d) => walk_dict(idx, d),
        ast::AttrKind::Array(items) => items.iter().for_each(|a| walk_attr(idx, a)),
        _ => {}
    }
}

impl FileIndex {
    pub(crate) fn chunk_of(&self, offset: u32) -> Option<usize> {
        // Chunks tile the file; an offset at a chunk's end belongs to it (cursor after the
        // last character).
        self.chunk_ranges
            .iter()
            .position(|r| r.contains(offset))
            .or_else(|| self.chunk_ranges.iter().rposition(|r| r.contains_inclusive(offset)))
    }

    /// The innermost function whose text contains `offset`.
    pub(crate) fn func_at(&self, offset: u32) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, f) in self.funcs.iter().enumerate() {
            if f.range.contains(offset)
                && best.is_none_or(|b| self.funcs[b].range.start <= f.range.start)
            {
                best = Some(i);
            }
        }
        best
    }

    pub(crate) fn scope_at(&self, offset: u32) -> Option<Scope> {
        match self.func_at(offset) {
            Some(f) => Some(Scope::Func(f)),
            None => self.chunk_of(offset).map(Scope::Chunk),
        }
    }

    pub(crate) fn alias(&self, chunk: usize, name: &str) -> Option<&AliasDef> {
        self.aliases.get(chunk)?.iter().find(|a| a.name == name)
    }

    pub(crate) fn func(&self, chunk: usize, name: &str) -> Option<&FuncDef> {
        self.funcs.iter().find(|f| f.chunk == chunk && f.name == name)
    }

    pub(crate) fn value_def(&self, scope: Scope, name: &str) -> Option<&ValueDef> {
        self.values.iter().find(|v| v.scope == scope && v.name == name)
    }

    pub(crate) fn is_op_name(&self, range: TextRange) -> bool {
        self.op_names.binary_search_by_key(&(range.start, range.end), |r| (r.start, r.end)).is_ok()
    }

    pub(crate) fn is_attr_key(&self, range: TextRange) -> bool {
        self.attr_keys.binary_search_by_key(&(range.start, range.end), |r| (r.start, r.end)).is_ok()
    }

    /// What the token refers to, if it is a name of something the file defines.
    pub(crate) fn classify(&self, text: &str, tok: &Token) -> Option<Name> {
        let spelling = tok.range.slice(text);
        match tok.kind {
            TokenKind::ValueId => {
                let scope = self.scope_at(tok.range.start)?;
                Some(Name::Value { scope, name: spelling.to_owned() })
            }
            TokenKind::HashId | TokenKind::BangId => {
                let chunk = self.chunk_of(tok.range.start)?;
                self.alias(chunk, spelling)?;
                Some(Name::Alias { chunk, name: spelling.to_owned() })
            }
            TokenKind::SymbolId => {
                let chunk = self.chunk_of(tok.range.start)?;
                self.func(chunk, spelling)?;
                Some(Name::Func { chunk, name: spelling.to_owned() })
            }
            _ => None,
        }
    }

    /// Every token that refers to `name`, definitions included, in source order.
    ///
    /// Compares spellings rather than classifying each token, so a search costs one pass over
    /// the scope's tokens whatever the number of aliases or functions.
    pub(crate) fn occurrences(&self, text: &str, tokens: &[Token], name: &Name) -> Vec<TextRange> {
        let (range, spelling, kinds, excluded): (_, &str, &[TokenKind], Vec<TextRange>) = match name
        {
            Name::Value { scope: Scope::Func(f), name } => {
                let Some(func) = self.funcs.get(*f) else { return Vec::new() };
                // Functions nested in this one are scopes of their own.
                let nested = self
                    .funcs
                    .iter()
                    .filter(|g| g.range != func.range && func.range.contains_range(g.range))
                    .map(|g| g.range)
                    .collect();
                (func.range, name, &[TokenKind::ValueId], nested)
            }
            Name::Value { scope: Scope::Chunk(c), name } => {
                let Some(&range) = self.chunk_ranges.get(*c) else { return Vec::new() };
                let funcs = self.funcs.iter().filter(|f| f.chunk == *c).map(|f| f.range);
                (range, name, &[TokenKind::ValueId], funcs.collect())
            }
            Name::Alias { chunk, name } => {
                let Some(&range) = self.chunk_ranges.get(*chunk) else { return Vec::new() };
                (range, name, &[TokenKind::HashId, TokenKind::BangId], Vec::new())
            }
            Name::Func { chunk, name } => {
                let Some(&range) = self.chunk_ranges.get(*chunk) else { return Vec::new() };
                (range, name, &[TokenKind::SymbolId], Vec::new())
            }
        };
        let start = tokens.partition_point(|t| t.range.end <= range.start);
        tokens[start..]
            .iter()
            .take_while(|t| t.range.start < range.end)
            .filter(|t| kinds.contains(&t.kind) && t.range.slice(text) == spelling)
            .filter(|t| !excluded.iter().any(|r| r.contains(t.range.start)))
            .map(|t| t.range)
            .collect()
    }
}

/// The name-like token at `offset`: one containing it, else one ending right at it (a cursor
/// just after a name).
pub(crate) fn token_at(tokens: &[Token], offset: u32) -> Option<&Token> {
    let i = tokens.partition_point(|t| t.range.end <= offset);
    let is_name = |t: &&Token| {
        matches!(
            t.kind,
            TokenKind::ValueId
                | TokenKind::SymbolId
                | TokenKind::HashId
                | TokenKind::BangId
                | TokenKind::BareId
                | TokenKind::String
                | TokenKind::CaretId
        )
    };
    tokens
        .get(i)
        .filter(|t| t.range.contains(offset))
        .filter(is_name)
        .or_else(|| {
            i.checked_sub(1)
                .and_then(|j| tokens.get(j))
                .filter(|t| t.range.end == offset)
                .filter(is_name)
        })
        .or_else(|| tokens.get(i).filter(|t| t.range.contains(offset)))
}
