//! Incremental reparsing: an edit inside one op of a block re-lexes and re-parses that op
//! alone, and shifts the positions of everything after it.
//!
//! An editor sends one small edit per keystroke, nearly always inside one op's line. Parsing
//! a 10k-op file from scratch takes tens of milliseconds; re-parsing the op takes
//! microseconds, and shifting the tree after it is a walk with no allocation. The result is
//! the parse [`crate::parse`] would return for the new text, or nothing is changed and the
//! caller parses from scratch: the fast path is taken only where the op's parse provably
//! cannot differ (the tests compare both on random edits of real files).
//!
//! Conditions, each for a reason:
//! - the edit is strictly inside an op of a block that has no regions, so the op's first and
//!   last bytes, and the tokens around it, are unchanged;
//! - the op stands on its own lines (a line break before and after), so no neighbour's
//!   column, line start or token changes;
//! - the old parse has no error inside the op (recovery from one may have skipped text the
//!   new op would claim), and the new op lexes and parses without one;
//! - the new op's tokens are exactly the op (the parser stops where the old op ended, with
//!   the same lookahead it had in the full parse: it gets the op and the 64 significant
//!   tokens after it, and if it looks further the reparse is refused), and hold no
//!   `// -----` line.
//!
//! The token vector is patched in place (and restored if the op does not parse the same),
//! since copying some 300k tokens was most of a reparse of a 10k-op file.

use crate::{
    Parse, TextRange,
    ast::{
        Attr, AttrDict, AttrKind, Block, Body, FuncArg, FunctionType, Ident, Item, LocKind,
        LocSpec, Location, Op, OpBody, Region, Type, TypeKind, ValueUse,
    },
    lexer::{self, TokenKind},
    parser,
};

/// The op an incremental reparse replaced: its range in the old text and in the new one
/// (same start). Everything before `old.start` kept its position; everything at or after
/// `old.end` moved by `new.end - old.end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpEdit {
    pub old: TextRange,
    pub new: TextRange,
}

impl Parse {
    /// Brings this parse of the old text up to date with `new_text`, which is the old text
    /// with `edit` (old offsets) replaced by `new_len` bytes, and says which op it re-parsed.
    /// Returns `None`, and changes nothing, when the edit is not one the fast path handles;
    /// parse `new_text` then.
    pub fn reparse_edit(
        &mut self,
        new_text: &str,
        edit: TextRange,
        new_len: u32,
    ) -> Option<OpEdit> {
        // Worked on out of the tree's cell; put back finished on every refusal.
        let mut parts = self.tree.take();
        match reparse_parts(&mut parts, &mut self.errors, new_text, edit, new_len) {
            Some((op_edit, shift)) => {
                self.tree = Tree::deferred(parts, shift);
                Some(op_edit)
            }
            None => {
                self.tree = Tree::ready(parts);
                None
            }
        }
    }
}

/// [`Parse::reparse_edit`] on the tree and tokens taken out of the parse: on success the
/// positions the returned shift leaves for later are still to move ([`Shifter::finish`]);
/// on `None` nothing changed.
fn reparse_parts(
    parts: &mut Parts,
    errors: &mut [crate::SyntaxError],
    new_text: &str,
    edit: TextRange,
    new_len: u32,
) -> Option<(OpEdit, Shifter)> {
    let target = find_target(&parts.file, edit)?;
    let old = target.range;
    let delta = i64::from(new_len) - i64::from(edit.len());
    let Ok(new_end) = u32::try_from(i64::from(old.end) + delta) else { return None };
    if new_text.len() > u32::MAX as usize || new_end as usize > new_text.len() {
        return None;
    }
    let tokens = &mut parts.tokens;
    // The op's old tokens: `t0..=t1`, with whitespace holding a line break on both sides.
    let Ok(t0) = tokens.binary_search_by_key(&old.start, |t| t.range.start) else {
        return None;
    };
    let Ok(t1) = tokens.binary_search_by_key(&old.end, |t| t.range.end) else {
        return None;
    };
    let breaks_line = |tokens: &[crate::Token], i: usize, text: &str| {
        tokens
            .get(i)
            .is_none_or(|t| t.kind == TokenKind::Whitespace && t.range.slice(text).contains('\n'))
    };
    // Before the op nothing moved, so the old token reads the same in the new text.
    if t0 == 0 || !breaks_line(tokens, t0 - 1, new_text) {
        return None;
    }
    if let Some(after) = tokens.get(t1 + 1) {
        let (Some(s), Some(e)) = (shift(after.range.start, delta), shift(after.range.end, delta))
        else {
            return None;
        };
        if after.kind != TokenKind::Whitespace
            || !TextRange::new(s, e).slice(new_text).contains('\n')
        {
            return None;
        }
    }
    if errors.iter().any(|e| e.range.end >= old.start && e.range.start <= old.end) {
        return None;
    }
    // Re-lex the op's new text.
    let (mut toks, lex_errors) = lexer::lex(new_text.get(old.start as usize..new_end as usize)?);
    if !lex_errors.is_empty() {
        return None;
    }
    for t in &mut toks {
        t.range = TextRange::new(t.range.start + old.start, t.range.end + old.start);
        let separator =
            t.kind == TokenKind::Comment && t.range.slice(new_text).trim_end() == "// -----";
        if matches!(t.kind, TokenKind::Error | TokenKind::FileMetaBegin | TokenKind::FileMetaEnd)
            || separator
        {
            return None;
        }
    }
    if toks.first().is_none_or(|t| t.kind.is_trivia())
        || toks.last().is_none_or(|t| t.kind.is_trivia())
    {
        return None;
    }
    let Ok(dt) = i64::try_from(toks.len()) else { return None };
    let dt = dt - (t1 + 1 - t0) as i64;
    let chunk_end = shift(target.chunk_end, delta)?;
    // Tokens change in place (a 10k-op file has some 300k), and change back on failure.
    // Those after the op move by `delta` as far as the parse of the op reads them (its
    // lookahead) now, and the rest when the parse is next read whole, like the tree's ops
    // after it: moving every one was a tenth of a keystroke's work.
    let new_count = toks.len();
    let old_toks: Vec<crate::Token> = tokens.splice(t0..=t1, toks.iter().copied()).collect();
    let after = t0 + new_count;
    let (outcome, moved_to) =
        parse_op_at(tokens, new_text, t0, new_count, chunk_end, &target, delta);
    let op = match outcome {
        Some(op) if op.range == TextRange::new(old.start, new_end) => op,
        _ => {
            move_tokens(&mut tokens[after..moved_to], -delta);
            tokens.splice(t0..after, old_toks);
            return None;
        }
    };
    // Re-lowering the op reads the aliases of its chunk through the tokens moved so far
    // (`Parse::with_current`): if one is written after the op (printed IR writes them
    // first), every token moves now.
    let chunk_range = TextRange::new(target.chunk_start, target.chunk_end);
    let alias_after = parts
        .file
        .chunks
        .iter()
        .filter(|c| c.range == chunk_range)
        .flat_map(|c| c.items.iter())
        .any(|item| match item {
            Item::AttrAlias(a) => a.range.end > old.end,
            Item::TypeAlias(a) => a.range.end > old.end,
            Item::LocAlias(a) => a.range.end > old.end,
            _ => false,
        });
    let tok_from = if alias_after {
        move_tokens(&mut tokens[moved_to..], delta);
        tokens.len()
    } else {
        moved_to
    };
    // Commit: errors after the op, and the tree: the op, what encloses it and the
    // top-level items other than ops now; the ops after it when the tree is next read.
    let s = Shifter {
        old_start: old.start,
        old_end: old.end,
        delta,
        tok_after: (t1 + 1) as u32,
        dt,
        defer: true,
        tok_from,
    };
    for e in errors.iter_mut() {
        s.range(&mut e.range);
    }
    let mut replacement = Some(op);
    for chunk in &mut parts.file.chunks {
        if chunk.range.end < old.end {
            continue;
        }
        s.range(&mut chunk.range);
        for item in &mut chunk.items {
            s.item(item, old, &mut replacement);
        }
    }
    debug_assert!(replacement.is_none(), "the edited op was found again");
    Some((OpEdit { old, new: TextRange::new(old.start, new_end) }, s))
}

/// Moves tokens by `by` (`delta` or its undo): as a wrapping add on u32, which is exact
/// because every moved offset lies in the text it is moved into (checked before).
fn move_tokens(tokens: &mut [crate::Token], by: i64) {
    let by = by as u32;
    for t in tokens {
        t.range.start = t.range.start.wrapping_add(by);
        t.range.end = t.range.end.wrapping_add(by);
    }
}

/// Parses the op whose tokens are `tokens[t0..t0 + count]`, as the full parse of its chunk
/// would: with the significant token before it, and a window of those after it for
/// lookahead. `None` if it has an error, does not end with its last token, or the parser
/// looked past the window (the full parse might have decided otherwise).
///
/// The tokens after the op still have the old text's positions: each one the window reads
/// is moved by `delta` first. Also returns the end of the tokens moved.
fn parse_op_at(
    tokens: &mut [crate::Token],
    text: &str,
    t0: usize,
    count: usize,
    chunk_end: u32,
    target: &Target,
    delta: i64,
) -> (Option<crate::ast::Op>, usize) {
    /// Significant tokens after the op the parser may look at; it looks at one or two.
    const LOOKAHEAD: usize = 64;
    // Moves the tokens after the op up to the first the scan below stops at (at or past
    // the chunk's end, or the significant token one past the window).
    let mut moved_to = t0 + count;
    let mut sig_after = 0;
    while let Some(t) = tokens.get_mut(moved_to) {
        move_tokens(std::slice::from_mut(t), delta);
        moved_to += 1;
        if t.range.start >= chunk_end {
            break;
        }
        if !t.kind.is_trivia() {
            sig_after += 1;
            if sig_after > LOOKAHEAD {
                break;
            }
        }
    }
    // Whole, as the full parse has them: the parser reads only those `sig` names.
    let tokens = &*tokens;
    let mut sig: Vec<u32> = Vec::with_capacity(count + LOOKAHEAD + 1);
    if let Some(prev) = (0..t0).rev().find(|&i| !tokens[i].kind.is_trivia())
        && tokens[prev].range.start >= target.chunk_start
    {
        sig.push(prev as u32);
    }
    let start_pos = sig.len();
    let mut op_sig = 0;
    let mut truncated = false;
    for (i, t) in tokens.iter().enumerate().skip(t0) {
        if t.range.start >= chunk_end {
            break;
        }
        if t.kind.is_trivia() {
            continue;
        }
        if i >= t0 + count && sig.len() >= start_pos + op_sig + LOOKAHEAD {
            truncated = true;
            break;
        }
        if i < t0 + count {
            op_sig += 1;
        }
        sig.push(i as u32);
    }
    let (op, stop, errors, hit_end) =
        parser::parse_block_op(text, tokens, &sig, start_pos, chunk_end, target.depth);
    let ok = errors.is_empty()
        && !matches!(op.body, OpBody::Error)
        && stop == start_pos + op_sig
        && !(truncated && hit_end);
    (ok.then_some(op), moved_to)
}

/// Where the op to re-parse is.
struct Target {
    range: TextRange,
    /// Nesting depth the parser is at when it parses the op.
    depth: u32,
    chunk_start: u32,
    chunk_end: u32,
}

fn strictly_inside(edit: TextRange, r: TextRange) -> bool {
    r.start < edit.start && edit.end < r.end
}

fn find_target(file: &crate::ast::SourceFile, edit: TextRange) -> Option<Target> {
    let chunk =
        file.chunks.iter().find(|c| c.range.start <= edit.start && edit.end <= c.range.end)?;
    let mut op = chunk.items.iter().find_map(|item| match item {
        Item::Op(op) if strictly_inside(edit, op.range) => Some(op),
        _ => None,
    })?;
    let mut depth = 0;
    let mut in_block = false;
    loop {
        let regions = op_regions(op);
        if regions.is_empty() {
            break;
        }
        // The edit must be inside one op of one of the regions' blocks.
        let child = regions
            .iter()
            .filter(|r| r.range.start <= edit.start && edit.end <= r.range.end)
            .flat_map(|r| r.blocks.iter())
            .flat_map(|b| b.ops.iter())
            .find(|o| strictly_inside(edit, o.range))?;
        op = child;
        depth += parser::REGION_WEIGHT;
        in_block = true;
    }
    if !in_block || matches!(op.body, OpBody::Error) {
        return None;
    }
    Some(Target {
        range: op.range,
        depth,
        chunk_start: chunk.range.start,
        chunk_end: chunk.range.end,
    })
}

fn op_regions(op: &Op) -> &[Region] {
    match &op.body {
        OpBody::Generic(g) => &g.regions,
        OpBody::Module(m) => std::slice::from_ref(&m.body),
        OpBody::Func(f) => f.body.as_slice(),
        OpBody::RegionOp(r) => std::slice::from_ref(&r.body),
        _ => &[],
    }
}

/// [`op_regions`], to change.
fn op_regions_mut(op: &mut Op) -> &mut [Region] {
    match &mut op.body {
        OpBody::Generic(g) => &mut g.regions,
        OpBody::Module(m) => std::slice::from_mut(&mut m.body),
        OpBody::Func(f) => f.body.as_mut_slice(),
        OpBody::RegionOp(r) => std::slice::from_mut(&mut r.body),
        _ => &mut [],
    }
}

fn shift(offset: u32, delta: i64) -> Option<u32> {
    u32::try_from(i64::from(offset) + delta).ok()
}

/// Moves positions at or after the old op's end by the edit's length change, and token
/// indices after its last token by the change in token count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shifter {
    /// Where the re-parsed op starts (the same in both texts).
    old_start: u32,
    old_end: u32,
    delta: i64,
    tok_after: u32,
    dt: i64,
    /// Leave the ops that start after the re-parsed op (at or after `old_end`) alone, for
    /// [`Shifter::finish`].
    defer: bool,
    /// The first token whose position [`Shifter::finish`] moves (the ones before it were
    /// moved by the re-parse).
    tok_from: usize,
}

impl Shifter {
    fn offset(&self, o: &mut u32) {
        if *o >= self.old_end {
            // In range: the new text's length fits in u32 (checked before the commit).
            *o = (i64::from(*o) + self.delta) as u32;
        }
    }

    fn range(&self, r: &mut TextRange) {
        self.offset(&mut r.start);
        self.offset(&mut r.end);
    }

    fn token(&self, t: &mut u32) {
        if *t >= self.tok_after {
            *t = (i64::from(*t) + self.dt) as u32;
        }
    }

    /// True when nothing in a node with range `r` can move: it ends before the old op ends.
    fn before(&self, r: TextRange) -> bool {
        r.end < self.old_end
    }

    fn item(&self, item: &mut Item, old: TextRange, replacement: &mut Option<Op>) {
        match item {
            Item::AttrAlias(a) => {
                if self.before(a.range) {
                    return;
                }
                self.range(&mut a.range);
                self.ident(&mut a.name);
                self.attr(&mut a.value);
            }
            Item::TypeAlias(a) => {
                if self.before(a.range) {
                    return;
                }
                self.range(&mut a.range);
                self.ident(&mut a.name);
                self.ty(&mut a.value);
            }
            Item::LocAlias(a) => {
                if self.before(a.range) {
                    return;
                }
                self.range(&mut a.range);
                self.ident(&mut a.name);
                self.location(&mut a.loc);
            }
            Item::Op(op) => {
                if !(self.defer && op.range.start >= self.old_end) {
                    self.op(op, old, replacement);
                }
            }
            Item::Resources(r) | Item::Error(r) => self.range(r),
        }
    }

    fn op(&self, op: &mut Op, old: TextRange, replacement: &mut Option<Op>) {
        if op.range == old
            && let Some(new) = replacement.take()
        {
            *op = new;
            return;
        }
        if self.before(op.range) {
            return;
        }
        self.range(&mut op.range);
        for r in &mut op.results {
            self.range(&mut r.range);
            self.ident(&mut r.name);
        }
        self.ident(&mut op.name);
        if let Some(loc) = &mut op.loc {
            self.loc_spec(loc);
        }
        match &mut op.body {
            OpBody::Generic(g) => {
                self.uses(&mut g.operands);
                for s in &mut g.successors {
                    self.ident(s);
                }
                self.opt_dict(g.properties.as_mut());
                for r in &mut g.regions {
                    self.region(r, old, replacement);
                }
                self.opt_dict(g.attrs.as_mut());
                if let Some(f) = &mut g.fn_type {
                    self.fn_type(f);
                }
            }
            OpBody::Module(m) => {
                if let Some(n) = &mut m.sym_name {
                    self.ident(n);
                }
                self.opt_dict(m.attrs.as_mut());
                self.region(&mut m.body, old, replacement);
            }
            OpBody::Func(f) => {
                if let Some(v) = &mut f.visibility {
                    self.ident(v);
                }
                self.ident(&mut f.sym_name);
                // A function holding the edit has its signature before it: skipped without
                // a walk (a model's function can have thousands of typed arguments).
                for a in f.args.iter_mut().filter(|a| !self.before(a.range)) {
                    self.func_arg(a);
                }
                for r in f.results.iter_mut().filter(|r| !self.before(r.range)) {
                    self.range(&mut r.range);
                    self.ty(&mut r.ty);
                    self.opt_dict(r.attrs.as_mut());
                }
                self.opt_dict(f.attrs.as_mut());
                if let Some(body) = &mut f.body {
                    self.region(body, old, replacement);
                }
            }
            OpBody::Return(r) => {
                self.uses(&mut r.operands);
                self.types(&mut r.types);
            }
            OpBody::Call(c) => {
                self.ident(&mut c.callee);
                self.uses(&mut c.operands);
                if let Some(f) = &mut c.fn_type {
                    self.fn_type(f);
                }
            }
            OpBody::D2mSubgraph(d) => {
                self.ident(&mut d.callee);
                self.opt_dict(d.attrs.as_mut());
                self.uses(&mut d.ins);
                self.types(&mut d.in_types);
                self.uses(&mut d.outs);
                self.types(&mut d.out_types);
                self.types(&mut d.result_types);
            }
            OpBody::TtLang(c) => {
                self.uses(&mut c.operands);
                self.opt_dict(c.attrs.as_mut());
                if let Some(f) = &mut c.fn_type {
                    self.fn_type(f);
                }
            }
            OpBody::LoadCached(l) => {
                self.ident(&mut l.callee);
                self.uses(&mut l.operands);
                if let Some(f) = &mut l.fn_type {
                    self.fn_type(f);
                }
            }
            OpBody::RegionOp(r) => {
                self.opt_dict(r.attrs.as_mut());
                self.region(&mut r.body, old, replacement);
            }
            OpBody::DeviceDecl(d) => {
                self.ident(&mut d.sym_name);
                self.attr(&mut d.value);
            }
            OpBody::Opaque(o) => {
                self.range(&mut o.rest);
                self.uses(&mut o.uses);
            }
            OpBody::Error => {}
        }
    }

    fn region(&self, r: &mut Region, old: TextRange, replacement: &mut Option<Op>) {
        if self.before(r.range) {
            return;
        }
        self.range(&mut r.range);
        for b in &mut r.blocks {
            self.block(b, old, replacement);
        }
    }

    fn block(&self, b: &mut Block, old: TextRange, replacement: &mut Option<Op>) {
        if self.before(b.range) {
            return;
        }
        self.range(&mut b.range);
        if let Some(label) = &mut b.label {
            self.range(&mut label.range);
            self.ident(&mut label.name);
            for a in &mut label.args {
                self.range(&mut a.range);
                self.ident(&mut a.name);
                self.ty(&mut a.ty);
                if let Some(l) = &mut a.loc {
                    self.loc_spec(l);
                }
            }
        }
        // Ops before the edited one end before it: skip them without a look.
        let first = b.ops.partition_point(|o| o.range.end < self.old_end);
        for op in &mut b.ops[first..] {
            if self.defer && op.range.start >= self.old_end {
                // This op and the ones after it are moved by `finish`.
                break;
            }
            self.op(op, old, replacement);
        }
    }

    fn func_arg(&self, a: &mut FuncArg) {
        self.range(&mut a.range);
        if let Some(n) = &mut a.name {
            self.ident(n);
        }
        self.ty(&mut a.ty);
        self.opt_dict(a.attrs.as_mut());
        if let Some(l) = &mut a.loc {
            self.loc_spec(l);
        }
    }

    fn ident(&self, i: &mut Ident) {
        self.range(&mut i.range);
    }

    fn uses(&self, uses: &mut [ValueUse]) {
        for u in uses {
            self.range(&mut u.range);
            self.ident(&mut u.name);
        }
    }

    fn types(&self, types: &mut [Type]) {
        for t in types {
            self.ty(t);
        }
    }

    fn opt_dict(&self, d: Option<&mut AttrDict>) {
        if let Some(d) = d {
            self.dict(d);
        }
    }

    fn dict(&self, d: &mut AttrDict) {
        self.range(&mut d.range);
        for e in &mut d.entries {
            self.range(&mut e.range);
            self.ident(&mut e.key);
            if let Some(v) = &mut e.value {
                self.attr(v);
            }
        }
    }

    fn body(&self, b: &mut Body) {
        self.range(&mut b.range);
        self.token(&mut b.open);
        self.token(&mut b.close);
    }

    fn attr(&self, a: &mut Attr) {
        self.range(&mut a.range);
        match &mut a.kind {
            AttrKind::Dialect { body: Some(b), .. } => self.body(b),
            AttrKind::Int { ty: Some(t), .. }
            | AttrKind::Float { ty: Some(t), .. }
            | AttrKind::Str { ty: Some(t), .. }
            | AttrKind::Type(t)
            | AttrKind::DenseArray { elem: t, .. } => self.ty(t),
            AttrKind::Array(items) => {
                for i in items {
                    self.attr(i);
                }
            }
            AttrKind::Elements { body, ty, .. } => {
                self.body(body);
                if let Some(t) = ty {
                    self.ty(t);
                }
            }
            AttrKind::Dict(d) => self.dict(d),
            AttrKind::Affine { body } | AttrKind::Stripped(body) => self.body(body),
            AttrKind::Loc(l) => self.location(l),
            AttrKind::Alias(_)
            | AttrKind::Dialect { body: None, .. }
            | AttrKind::Int { ty: None, .. }
            | AttrKind::Float { ty: None, .. }
            | AttrKind::Str { ty: None, .. }
            | AttrKind::Bool(_)
            | AttrKind::Unit
            | AttrKind::SymbolRef(_)
            | AttrKind::Keyword(_)
            | AttrKind::Opaque => {}
        }
    }

    fn ty(&self, t: &mut Type) {
        self.range(&mut t.range);
        match &mut t.kind {
            TypeKind::Tensor { elem, encoding, .. } => {
                self.ty(elem);
                if let Some(e) = encoding {
                    self.attr(e);
                }
            }
            TypeKind::MemRef { elem, params, .. } => {
                self.ty(elem);
                for p in params {
                    self.attr(p);
                }
            }
            TypeKind::Vector { elem, .. } | TypeKind::Complex(elem) => self.ty(elem),
            TypeKind::Tuple(items) => self.types(items),
            TypeKind::Dialect { body: Some(b), .. } => self.body(b),
            TypeKind::Function(f) => self.fn_type(f),
            TypeKind::Builtin(_) | TypeKind::Dialect { body: None, .. } | TypeKind::Alias(_) => {}
        }
    }

    fn fn_type(&self, f: &mut FunctionType) {
        self.range(&mut f.range);
        self.types(&mut f.inputs);
        self.types(&mut f.results);
    }

    fn loc_spec(&self, l: &mut LocSpec) {
        self.range(&mut l.range);
        self.location(&mut l.loc);
    }

    fn location(&self, l: &mut Location) {
        self.range(&mut l.range);
        match &mut l.kind {
            LocKind::Name { child: Some(c), .. } => self.location(c),
            LocKind::CallSite { callee, caller } => {
                self.location(callee);
                self.location(caller);
            }
            LocKind::Fused { metadata, locs } => {
                if let Some(m) = metadata {
                    self.attr(m);
                }
                for l in locs {
                    self.location(l);
                }
            }
            LocKind::Unknown
            | LocKind::Name { child: None, .. }
            | LocKind::FileLineCol { .. }
            | LocKind::Alias(_) => {}
        }
    }
}

impl Shifter {
    /// Moves what a deferring shift left: the ops that start at or after the re-parsed op's
    /// old end, which still have the old text's positions. The enclosing ops were moved
    /// already, so they are only descended into.
    fn finish(self, parts: &mut Parts) {
        if let Some(tail) = parts.tokens.get_mut(self.tok_from..) {
            move_tokens(tail, self.delta);
        }
        let s = Shifter { defer: false, ..self };
        let mut none = None;
        for chunk in &mut parts.file.chunks {
            for item in &mut chunk.items {
                if let Item::Op(op) = item {
                    s.finish_op(op, &mut none);
                }
            }
        }
    }

    fn finish_op(&self, op: &mut Op, none: &mut Option<Op>) {
        if op.range.start >= self.old_end {
            // Untouched so far: old positions throughout.
            self.op(op, TextRange::empty(u32::MAX), none);
            return;
        }
        if op.range.end <= self.old_start {
            // Before the re-parsed op: nothing in it moves.
            return;
        }
        // The re-parsed op (no regions) or one enclosing it.
        for r in op_regions_mut(op) {
            for b in &mut r.blocks {
                // Sorted by start: the ops before `first` were moved or never move, except
                // the last of them, which may enclose the re-parsed op.
                let first = b.ops.partition_point(|o| o.range.start < self.old_end);
                if let Some(i) = first.checked_sub(1)
                    && let Some(o) = b.ops.get_mut(i)
                {
                    self.finish_op(o, none);
                }
                for o in b.ops.iter_mut().skip(first) {
                    self.op(o, TextRange::empty(u32::MAX), none);
                }
            }
        }
    }
}

/// A parse's tree and tokens.
pub(crate) struct Parts {
    pub(crate) file: crate::ast::SourceFile,
    pub(crate) tokens: Vec<crate::Token>,
}

/// A parse's tree and tokens, whose positions after an incremental re-parse may wait to be
/// moved until they are first read.
pub(crate) struct Tree {
    ready: std::sync::OnceLock<Parts>,
    /// The parts with the positions of the ops and tokens after the last re-parsed op still
    /// to move; set exactly when `ready` is not.
    deferred: std::sync::Mutex<Option<(Parts, Shifter)>>,
}

impl Tree {
    pub(crate) fn ready(parts: Parts) -> Tree {
        Tree { ready: std::sync::OnceLock::from(parts), deferred: std::sync::Mutex::new(None) }
    }

    fn deferred(parts: Parts, shift: Shifter) -> Tree {
        Tree {
            ready: std::sync::OnceLock::new(),
            deferred: std::sync::Mutex::new(Some((parts, shift))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Parts, Shifter)>> {
        // A panic while the lock was held left either the parts or nothing: both readable.
        self.deferred.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn get(&self) -> &Parts {
        self.ready.get_or_init(|| match self.lock().take() {
            Some((mut parts, shift)) => {
                shift.finish(&mut parts);
                parts
            }
            // Only if finishing panicked on another thread: an empty parse, not a second
            // panic.
            None => Parts::empty(),
        })
    }

    /// Runs `f` on the tree as it is and the tokens whose positions are current (all of
    /// them, or those up to the first one a re-parse left to move).
    pub(crate) fn with_current<R>(
        &self,
        f: impl FnOnce(&crate::ast::SourceFile, &[crate::Token]) -> R,
    ) -> R {
        if let Some(parts) = self.ready.get() {
            return f(&parts.file, &parts.tokens);
        }
        let guard = self.lock();
        if let Some((parts, shift)) = guard.as_ref() {
            let current = parts.tokens.get(..shift.tok_from).unwrap_or(&parts.tokens);
            return f(&parts.file, current);
        }
        drop(guard);
        let parts = self.get();
        f(&parts.file, &parts.tokens)
    }

    pub(crate) fn is_deferred(&self) -> bool {
        self.ready.get().is_none()
    }

    /// The parts, finished, taken out (for a re-parse to patch).
    fn take(&mut self) -> Parts {
        if let Some(parts) = self.ready.take() {
            return parts;
        }
        let deferred =
            self.deferred.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        match deferred {
            Some((mut parts, shift)) => {
                shift.finish(&mut parts);
                parts
            }
            None => Parts::empty(),
        }
    }
}

impl Parts {
    fn empty() -> Parts {
        Parts { file: crate::ast::SourceFile { chunks: Vec::new() }, tokens: Vec::new() }
    }
}
