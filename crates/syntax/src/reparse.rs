//! Incremental reparsing: an edit inside one block (a function body) re-lexes and re-parses
//! the ops around it, and shifts the positions of everything after them.
//!
//! An editor sends one small edit per keystroke: inside one op's line, a pasted or deleted
//! run of lines, a comment. Parsing a 10k-op file from scratch takes tens of milliseconds;
//! re-parsing a few ops takes microseconds, and shifting the tree after them is a walk with
//! no allocation. The result is the parse [`crate::parse`] would return for the new text, or
//! nothing is changed and the caller parses from scratch: the fast path is taken only where
//! the parse provably cannot differ (the tests compare both on random edits of real files).
//!
//! The edit is widened to a window of whole ops of the innermost block holding it: the ops
//! it touches (an op touches the edit when their ranges meet, ends included) and one
//! untouched op on each side, so a change that alters how a neighbour parses (a joined line,
//! a `loc(` the op before would take as its own) is re-parsed too. The window's text is
//! re-lexed and its ops re-parsed, from the first op's start to the token after the last op
//! (the next op's first token, or the block's `}` or next label): the target.
//!
//! Why the rest of the parse cannot differ, condition by condition:
//! - Before the window nothing changed, and the full parse of the text before it looks at
//!   most two significant tokens ahead of the op it parses when that op has no syntax error
//!   (a trailing `loc(`, a statement start): so the old parse has no syntax error in the
//!   window's chunk before the window, and the window's first op, when untouched, has two
//!   significant tokens or more.
//! - The lexer starts fresh at the window's start and at the target: both are preceded by
//!   whitespace (which ends where a non-blank character starts), and the new window's text
//!   lexes without error, starting with a non-blank and ending with whitespace.
//! - The parse of the window reaches the target exactly, with no `}`, block label or end of
//!   input before it, at the nesting depth of the block; from the target on, the old and new
//!   parses read the same tokens in the same state. The only state besides position is the
//!   recovery fuel (`rewind_fuel`), which matters only where it runs dry: the old parse has
//!   no syntax error in the chunk outside the window (so recovery ran only inside it, and
//!   the chunk's errors are exactly the window's), and the window's recovery rewinds over
//!   fewer tokens than the fuel every chunk starts with.
//! - The parser gets the window and the 64 significant tokens after it; if it looks
//!   further the re-parse is refused (the full parse might have decided otherwise).
//! - The window holds no `// -----` line or `{-#` resource marker, so chunks stay as they were.
//!
//! The token vector is patched in place (and restored on a refusal), since copying some
//! 850k tokens was most of a reparse of a 10k-op file.

use crate::{
    Parse, SyntaxError, TextRange,
    ast::{
        Attr, AttrDict, AttrKind, Block, Body, FuncArg, FunctionType, Ident, Item, LocKind,
        LocSpec, Location, Op, OpBody, Region, Type, TypeKind, ValueUse,
    },
    lexer::{self, TokenKind},
    parser,
};

/// What an incremental re-parse replaced.
///
/// The top-level ops of one block whose ranges lie within `old` (old text) were replaced by
/// the ops of the new parse lying within `new` (new text): `old_ops` ops by `new_ops`, the
/// first of them at index `first_op` of the block. `old.start == new.start`; everything
/// before `old.start` is unchanged, and everything at or after `old.end` moved by
/// `new.end - old.end`. The range is the touched ops (the first op the edit touches to the
/// last), widened to a neighbour whose parse changed; an edit purely in the trivia between
/// two ops (a comment line, a blank line, indentation) replaces no op, and `old` is then
/// the edit's own range, which no op's range meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpEdit {
    pub old: TextRange,
    pub new: TextRange,
    /// The index in its block of the first replaced op (of the first op after the edit, when
    /// no op was replaced).
    pub first_op: u32,
    pub old_ops: u32,
    pub new_ops: u32,
    /// True when the syntax errors the re-parsed ops have differ from those they had (other
    /// than by moving with the text); the errors are in [`Parse::errors`] either way.
    pub errors_changed: bool,
}

impl OpEdit {
    /// True when exactly one op was replaced by one op.
    #[must_use]
    pub fn is_single_op(&self) -> bool {
        self.old_ops == 1 && self.new_ops == 1
    }

    /// This edit followed by `next` (made on the text this one left) as one edit: the ops
    /// from the first either replaced to the last either replaced, with the ops between
    /// them taken as replaced by themselves. Both must be in the same block (a caller that
    /// cannot tell checks the result's range against what it holds). `None` on arithmetic
    /// that does not fit, which only inconsistent edits give.
    #[must_use]
    pub fn then(self, next: OpEdit) -> Option<OpEdit> {
        // The union, in the text between the two edits.
        let start = self.new.start.min(next.old.start);
        let end = self.new.end.max(next.old.end);
        let first = self.first_op.min(next.first_op);
        let last = (self.first_op.checked_add(self.new_ops)?)
            .max(next.first_op.checked_add(next.old_ops)?);
        // Back to the text before this edit, and on to the text after `next`.
        let grow = |e: &OpEdit| i64::from(e.new.end) - i64::from(e.old.end);
        let ops_grow = |e: &OpEdit| i64::from(e.new_ops) - i64::from(e.old_ops);
        let old_end = u32::try_from(i64::from(end) - grow(&self)).ok()?;
        let new_end = u32::try_from(i64::from(end) + grow(&next)).ok()?;
        let old_last = u32::try_from(i64::from(last) - ops_grow(&self)).ok()?;
        let new_last = u32::try_from(i64::from(last) + ops_grow(&next)).ok()?;
        Some(OpEdit {
            old: TextRange::new(start, old_end),
            new: TextRange::new(start, new_end),
            first_op: first,
            old_ops: old_last.checked_sub(first)?,
            new_ops: new_last.checked_sub(first)?,
            errors_changed: self.errors_changed || next.errors_changed,
        })
    }
}

impl Parse {
    /// Brings this parse of the old text up to date with `new_text`, which is the old text
    /// with `edit` (old offsets) replaced by `new_len` bytes, and says which ops it replaced.
    /// Returns `None`, and changes nothing, when the edit is not one the fast path handles;
    /// parse `new_text` then.
    pub fn reparse_edit(
        &mut self,
        new_text: &str,
        edit: TextRange,
        new_len: u32,
    ) -> Option<OpEdit> {
        // Worked on out of the tree's cell; put back finished on every refusal.
        let (mut parts, pending) = self.tree.take_for(edit);
        match reparse_parts(&mut parts, &mut self.errors, new_text, edit, new_len, &pending) {
            Some((op_edit, shifts)) => {
                self.tree = Tree::deferred(parts, shifts);
                Some(op_edit)
            }
            None => {
                finish_all(pending, &mut parts);
                self.tree = Tree::ready(parts);
                None
            }
        }
    }
}

/// Recovery fuel every chunk's parse starts with besides four per significant token (see
/// `parse_chunk`).
const MIN_FUEL: usize = 1024;

/// Significant tokens after the window the parser may look at; it looks at one or two.
const LOOKAHEAD: usize = 64;

/// The most places positions may be left pending at ([`Pending`]): past it, the nearest
/// is moved.
const MAX_PENDING: usize = 8;

/// [`Parse::reparse_edit`] on the tree and tokens taken out of the parse: on success the
/// positions the returned shifts leave for later are still to move ([`finish_all`]); on
/// `None` nothing changed.
///
/// `pending` is what earlier re-parses left to move and [`Tree::take_for`] kept pending
/// (the ops of the edited block from the first shift's `deferred_from` on, the tokens from
/// its `tok_from` on, all past what this re-parse reads): on success the returned shifts
/// move them too, each by this edit besides its own, and the positions between this
/// window and them are left pending as one more place rather than moved.
fn reparse_parts(
    parts: &mut Parts,
    errors: &mut Vec<SyntaxError>,
    new_text: &str,
    edit: TextRange,
    new_len: u32,
    pending: &[Shifter],
) -> Option<(OpEdit, Pending)> {
    if new_text.len() > u32::MAX as usize {
        return None;
    }
    let delta = i64::from(new_len) - i64::from(edit.len());
    // The tokens whose positions are current: all, or those before the pending ones.
    let current =
        pending.first().map_or(parts.tokens.len(), |p| p.tok_from.min(parts.tokens.len()));
    let all_current = current == parts.tokens.len();
    let last_end = parts.tokens.last().map_or(0, |t| t.range.end);
    // The last token moves by the shift of the last place holding tokens.
    let old_len = match pending.iter().rev().find(|p| p.tok_from < parts.tokens.len()) {
        Some(p) => shift(last_end, p.delta)?,
        None => last_end,
    };
    if edit.end > old_len || i64::from(old_len) + delta != new_text.len() as i64 {
        return None;
    }
    let w = find_window(&parts.file, edit)?;
    let (a, t) = (w.start, w.target);
    if edit.start < a || edit.end > t {
        return None;
    }
    let chunk_end = shift(w.chunk.end, delta)?;
    let t_new = shift(t, delta)?;
    // Parse errors found before the window: the parse before it may have read into it.
    let meta = parts.meta.as_ref()?;
    let ci = w.path[0];
    let chunk_meta = *meta.chunks.get(ci)?;
    if meta.owners.len() != errors.len() || chunk_meta.exhausted {
        return None;
    }
    let in_chunk = |o: u32| w.chunk.start <= o && o <= w.chunk.end;
    if meta.owners.iter().any(|o| matches!(*o, Owner::Stmt(s) if in_chunk(s) && s < a)) {
        return None;
    }
    let tokens = &mut parts.tokens;
    let Ok(ta) = tokens[..current].binary_search_by_key(&a, |t| t.range.start) else {
        return None;
    };
    let Ok(tt) = tokens[..current].binary_search_by_key(&t, |t| t.range.start) else {
        return None;
    };
    if ta >= tt {
        return None;
    }
    // The target is the first significant token after the last op.
    let last_sig = tokens[..tt].iter().rev().find(|t| !t.kind.is_trivia())?;
    if last_sig.range.end != w.ops.last()?.range.end {
        return None;
    }
    // The lexer starts fresh at the window: after whitespace, at a non-blank (where the
    // whitespace ends), or after the block's `{` or label, at whitespace (so the `{` or `:`
    // token stays whole).
    let after_blank = tokens.get(ta.checked_sub(1)?)?.kind == TokenKind::Whitespace;
    let marker = |k: TokenKind| matches!(k, TokenKind::FileMetaBegin | TokenKind::FileMetaEnd);
    if tokens[ta..tt].iter().any(|t| marker(t.kind)) {
        return None;
    }
    // An untouched first op: the ops before it looked at its first two significant tokens.
    if w.first_untouched {
        let second = tokens[ta..tt].iter().filter(|t| !t.kind.is_trivia()).nth(1)?;
        if second.range.start >= w.ops[0].range.end {
            return None;
        }
    }
    // Re-lex the window's new text.
    let (mut toks, lex_errors) = lexer::lex(new_text.get(a as usize..t_new as usize)?);
    if !lex_errors.is_empty() {
        return None;
    }
    for tok in &mut toks {
        tok.range = TextRange::new(tok.range.start + a, tok.range.end + a);
        let separator =
            tok.kind == TokenKind::Comment && tok.range.slice(new_text).trim_end() == "// -----";
        if separator || marker(tok.kind) || tok.kind == TokenKind::Error {
            return None;
        }
    }
    if toks.first().is_none_or(|t| (t.kind == TokenKind::Whitespace) == after_blank)
        || toks.last().is_none_or(|t| t.kind != TokenKind::Whitespace)
    {
        return None;
    }
    let new_count = toks.len();
    let old_sig = tokens[ta..tt].iter().filter(|t| !t.kind.is_trivia()).count();
    let Ok(dt) = i64::try_from(new_count) else { return None };
    let dt = dt - (tt - ta) as i64;
    // Tokens change in place (a 10k-op file has some 850k), and change back on a refusal.
    // Those after the window move by `delta` as far as the parse reads them (its lookahead)
    // now, and the rest when the parse is next read whole, like the tree's ops after it.
    // Growing past the capacity copies the vector once to one with room to spare, rather
    // than doubling it (a 10k-op file's tokens are 10 MB).
    if let Some(grow) = new_count.checked_sub(tt - ta)
        && tokens.capacity() - tokens.len() < grow
    {
        let keep = lexer::token_headroom(tokens.len() + grow);
        tokens.reserve_exact(keep - tokens.len());
    }
    let old_toks: Vec<crate::Token> = tokens.splice(ta..tt, toks).collect();
    let after = ta + new_count;
    let (parsed, moved_to, last_sig_end) =
        parse_window(tokens, new_text, ta, new_count, chunk_end, &w, delta);
    // The chunk's recovery never ran dry in the old parse, and does not in the new one: its
    // rewinds outside the window are at most the old ones (`spent`), and the window's fit
    // in what is left.
    let sig = (chunk_meta.sig + parsed.as_ref().map_or(0, |p| p.sig)).checked_sub(old_sig);
    let fuel = sig.map(|n| n.saturating_mul(4).saturating_add(MIN_FUEL));
    let parsed =
        parsed.filter(|p| fuel.is_some_and(|f| chunk_meta.spent.saturating_add(p.rewound) <= f));
    let Some(parsed) = parsed else {
        move_tokens(&mut tokens[after..moved_to], -delta);
        tokens.splice(ta..after, old_toks);
        return None;
    };
    let WindowParse { ops: new_ops, errors: new_errors, rewound, .. } = parsed;
    // Re-lowering the ops reads the aliases of their chunk through the tokens moved so far
    // (`Parse::with_current`): if one is written after the window (printed IR writes them
    // first), every token moves now.
    let alias_after = parts.file.chunks.get(w.path[0]).is_some_and(|c| {
        c.items.iter().any(|item| match item {
            Item::AttrAlias(al) => al.range.end > a,
            Item::TypeAlias(al) => al.range.end > a,
            Item::LocAlias(al) => al.range.end > a,
            _ => false,
        })
    });
    if alias_after && !all_current {
        // Every token would move now, the pending ones by this edit alone.
        move_tokens(&mut tokens[after..moved_to], -delta);
        tokens.splice(ta..after, old_toks);
        return None;
    }
    let tok_from = if alias_after {
        move_tokens(&mut tokens[moved_to..], delta);
        tokens.len()
    } else {
        moved_to
    };
    let s = Shifter {
        old_start: a,
        old_end: t,
        delta,
        tok_after: tt as u32,
        dt,
        defer: true,
        tok_from,
        edited_block: match new_ops.first() {
            Some(first) if w.first_in_block => first.range.start,
            _ => w.block_start,
        },
        deferred_from: (w.lo + new_ops.len()) as u32,
    };
    // The pending ops and tokens, where they are after this re-parse: still past what it
    // read (`Tree::take_for` left them only there), else this re-parse is refused. Each
    // place's start moves by the window's change in op and token counts.
    let grow = new_ops.len() as i64 - (w.hi + 1 - w.lo) as i64;
    let block_len = w.block_len as i64 + grow;
    let mut moved_pending = Vec::with_capacity(pending.len());
    let mut bound = (i64::from(s.deferred_from), s.tok_from as i64);
    for p in pending {
        let from = i64::from(p.deferred_from) + grow;
        let tok = p.tok_from as i64 + dt;
        let fits = w.block_start == p.edited_block
            && bound.0 <= from
            && from <= block_len
            && bound.1 <= tok
            && tok <= parts.tokens.len() as i64;
        if !fits {
            move_tokens(&mut parts.tokens[after..moved_to], -delta);
            parts.tokens.splice(ta..after, old_toks);
            return None;
        }
        bound = (from, tok);
        moved_pending.push((*p, from as u32, tok as usize));
    }
    let mut op_edit = replaced(&w, &new_ops, edit, new_len, delta, ta as u32, dt)?;
    // Commit. Errors: the window's are replaced by its new ones; those after it move.
    let meta = parts.meta.as_mut()?;
    if let Some(m) = meta.chunks.get_mut(ci) {
        m.sig = sig.unwrap_or(m.sig);
        m.spent = m.spent.saturating_add(rewound);
    }
    let old_errors = std::mem::take(errors);
    let old_owners = std::mem::take(&mut meta.owners);
    // Sorted as a parse from scratch sorts: by range, then lex errors, then the parser's in
    // the order found (the window's before those after it).
    let mut all: Vec<(SyntaxError, Owner, u8)> = Vec::with_capacity(old_errors.len());
    // The window's old errors, moved as the edit moves text, to tell whether they changed.
    let mut removed = Vec::new();
    let mut remove = |mut e: SyntaxError| {
        for o in [&mut e.range.start, &mut e.range.end] {
            if *o >= edit.end {
                *o = shift(*o, delta).unwrap_or(*o);
            }
        }
        removed.push(e);
    };
    for (mut e, o) in old_errors.into_iter().zip(old_owners) {
        let (class, o) = match o {
            Owner::Lex if in_chunk(e.range.start) && (a..t).contains(&e.range.start) => {
                remove(e);
                continue;
            }
            Owner::Lex => (0, o),
            Owner::Stmt(st) if in_chunk(st) && st < t => {
                remove(e);
                continue;
            }
            Owner::Stmt(mut st) => {
                s.offset(&mut st);
                (2, Owner::Stmt(st))
            }
        };
        s.range(&mut e.range);
        all.push((e, o, class));
    }
    let mut new_errors = new_errors;
    new_errors.sort_by_key(|(e, _)| (e.range.start, e.range.end));
    op_edit.errors_changed = !removed.iter().eq(new_errors.iter().map(|(e, _)| e));
    all.extend(new_errors.into_iter().map(|(e, st)| (e, Owner::Stmt(st), 1)));
    all.sort_by_key(|(e, _, class)| (e.range.start, e.range.end, *class));
    for (e, o, _) in all {
        errors.push(e);
        meta.owners.push(o);
    }
    // The tree: what encloses the window and the top-level items other than ops now; the
    // ops after it when the tree is next read; then the window's ops.
    for chunk in &mut parts.file.chunks {
        if chunk.range.end < t {
            continue;
        }
        s.range(&mut chunk.range);
        for item in &mut chunk.items {
            s.item(item);
        }
    }
    let block = block_at_mut(&mut parts.file, &w.path)?;
    let replaced_last = w.hi + 1 == block.ops.len();
    // As for tokens: room to spare when the block grows, not a doubling.
    if let Some(grow) = new_ops.len().checked_sub(w.hi + 1 - w.lo)
        && block.ops.capacity() - block.ops.len() < grow
    {
        block.ops.reserve_exact(grow + block.ops.len() / 16);
    }
    block.ops.splice(w.lo..=w.hi, new_ops);
    block.range.start = s.edited_block;
    if replaced_last {
        // The block ends where its last op's last token does.
        block.range.end = last_sig_end.max(block.range.start);
    }
    if moved_pending.is_empty() {
        return Some((op_edit, vec![s]));
    }
    // What lies between this window and the pending places has current positions: it is
    // left to move by this edit as a place of its own (unless empty), so an edit before the
    // pending ones moves nothing between them; each pending place moves by this edit too.
    let mut shifts: Pending = Vec::with_capacity(moved_pending.len() + 1);
    let (first_from, first_tok) = (moved_pending[0].1, moved_pending[0].2);
    if s.deferred_from < first_from || s.tok_from < first_tok {
        shifts.push(Shifter { defer: false, edited_block: block.range.start, ..s });
    }
    for (p, from, tok) in moved_pending {
        shifts.push(Shifter {
            old_start: p.old_start.min(s.old_start),
            old_end: p.old_end,
            delta: p.delta + delta,
            tok_after: p.tok_after,
            dt: p.dt + dt,
            defer: p.defer,
            tok_from: tok,
            edited_block: block.range.start,
            deferred_from: from,
        });
    }
    // Past the bound, the nearest places become current (each move is as long as the place).
    while shifts.len() > MAX_PENDING {
        let first = shifts.remove(0);
        first.move_place(block, &mut parts.tokens, &shifts[0]);
    }
    Some((op_edit, shifts))
}

/// The ops replaced, as [`OpEdit`] says: the window less an untouched first op that parsed
/// the same and an untouched last op that parsed the same (moved).
fn replaced(
    w: &Window,
    new_ops: &[Op],
    edit: TextRange,
    new_len: u32,
    delta: i64,
    ta: u32,
    dt: i64,
) -> Option<OpEdit> {
    let old_ops = &w.ops[..];
    let mut i = 0;
    if w.first_untouched && new_ops.first() == old_ops.first() {
        i = 1;
    }
    let mut j = 0;
    if w.last_untouched && old_ops.len() > i && new_ops.len() > i {
        // The last op lies after the edit: all its positions and token indices move.
        let s = Shifter {
            old_start: edit.end,
            old_end: edit.end,
            delta,
            tok_after: ta,
            dt,
            defer: false,
            tok_from: 0,
            edited_block: u32::MAX,
            deferred_from: 0,
        };
        let mut moved = old_ops[old_ops.len() - 1].clone();
        s.op(&mut moved);
        if new_ops.last() == Some(&moved) {
            j = 1;
        }
    }
    let olds = &old_ops[i..old_ops.len() - j];
    let news = &new_ops[i..new_ops.len() - j];
    let mut start = i64::from(edit.start);
    let mut old_end = i64::from(edit.end);
    for o in olds {
        start = start.min(i64::from(o.range.start));
        old_end = old_end.max(i64::from(o.range.end));
    }
    for o in news {
        start = start.min(i64::from(o.range.start));
        old_end = old_end.max(i64::from(o.range.end) - delta);
    }
    // Nothing replaced: the edit's own range (`new_len` bytes in the new text).
    let (start, old_end) = (u32::try_from(start).ok()?, u32::try_from(old_end).ok()?);
    let new_end = shift(old_end, delta)?;
    debug_assert!(!(olds.is_empty() && news.is_empty()) || new_end == edit.start + new_len);
    Some(OpEdit {
        old: TextRange::new(start, old_end),
        new: TextRange::new(start, new_end),
        first_op: u32::try_from(w.lo + i).ok()?,
        old_ops: u32::try_from(olds.len()).ok()?,
        new_ops: u32::try_from(news.len()).ok()?,
        errors_changed: false,
    })
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

/// Parses the window's ops, whose tokens are `tokens[ta..ta + count]`, as the full parse of
/// the chunk would: with the significant token before them, and a window of those after
/// them for lookahead. `None` if the parse does not stop at the target (the first token
/// after them), looked past the lookahead, or its recovery rewound more than the least fuel
/// a chunk has; else the ops and their errors.
///
/// The tokens after the window still have the old text's positions: each one the lookahead
/// covers is moved by `delta` first. Also returns the end of the tokens moved, and the end
/// of the window's last significant token.
fn parse_window(
    tokens: &mut [crate::Token],
    text: &str,
    ta: usize,
    count: usize,
    chunk_end: u32,
    w: &Window,
    delta: i64,
) -> (Option<WindowParse>, usize, u32) {
    let mut moved_to = ta + count;
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
    let mut sig: Vec<u32> = Vec::with_capacity(count / 2 + LOOKAHEAD + 1);
    if let Some(prev) = (0..ta).rev().find(|&i| !tokens[i].kind.is_trivia())
        && tokens[prev].range.start >= w.chunk.start
    {
        sig.push(prev as u32);
    }
    let start_pos = sig.len();
    let mut window_sig = 0;
    let mut truncated = false;
    for (i, t) in tokens.iter().enumerate().skip(ta) {
        if t.range.start >= chunk_end {
            break;
        }
        if t.kind.is_trivia() {
            continue;
        }
        if i >= ta + count && sig.len() >= start_pos + window_sig + LOOKAHEAD {
            truncated = true;
            break;
        }
        if i < ta + count {
            window_sig += 1;
        }
        sig.push(i as u32);
    }
    let target = start_pos + window_sig;
    let last_sig_end =
        target.checked_sub(1).and_then(|k| sig.get(k)).map_or(0, |&k| tokens[k as usize].range.end);
    let r = parser::parse_block_ops(text, tokens, &sig, start_pos, target, chunk_end, w.depth);
    let ok = r.reached && !(truncated && r.hit_end) && !r.ops.is_empty() && window_sig > 0;
    let parsed = WindowParse { ops: r.ops, errors: r.errors, rewound: r.rewound, sig: window_sig };
    (ok.then_some(parsed), moved_to, last_sig_end)
}

/// The window's new ops, their errors (with the starts of the ops that found them), the
/// tokens recovery rewound over, and the window's significant tokens.
struct WindowParse {
    ops: Vec<Op>,
    errors: Vec<parser::OwnedError>,
    rewound: usize,
    sig: usize,
}

/// The ops to re-parse: `ops` (a copy of the block's `lo..=hi`) and where they are.
struct Window {
    /// Indices from the file to the block: chunk, item, then region, block (and op, region,
    /// block for each nested level).
    path: Vec<usize>,
    /// Nesting depth the parser is at in the block.
    depth: u32,
    chunk: TextRange,
    /// Where the block starts (its first op or label); no other block the walk from the
    /// file's top reaches starts there.
    block_start: u32,
    /// The window starts with the block's first op and the block has no label: the block
    /// starts where the new first op does.
    first_in_block: bool,
    lo: usize,
    hi: usize,
    /// The number of ops in the block.
    block_len: usize,
    ops: Vec<Op>,
    /// The window's first op does not touch the edit (it is the neighbour before it).
    first_untouched: bool,
    last_untouched: bool,
    /// The first op's start.
    start: u32,
    /// The start of the first significant token after the last op.
    target: u32,
}

fn strictly_inside(edit: TextRange, r: TextRange) -> bool {
    r.start < edit.start && edit.end < r.end
}

/// The region of `op` strictly holding `edit`, with its index.
fn region_holding(op: &Op, edit: TextRange) -> Option<(usize, &Region)> {
    op_regions(op).iter().enumerate().find(|(_, r)| strictly_inside(edit, r.range))
}

fn find_window(file: &crate::ast::SourceFile, edit: TextRange) -> Option<Window> {
    let ci =
        file.chunks.iter().position(|c| c.range.start <= edit.start && edit.end <= c.range.end)?;
    let chunk = &file.chunks[ci];
    let ii = chunk.items.iter().position(|item| match item {
        Item::Op(op) => strictly_inside(edit, op.range),
        _ => false,
    })?;
    let Item::Op(op) = &chunk.items[ii] else { return None };
    let mut op = op;
    if matches!(op.body, OpBody::Error) {
        return None;
    }
    let mut path = vec![ci, ii];
    let mut depth = 0;
    loop {
        let (ri, region) = region_holding(op, edit)?;
        // The block holding the edit: the last one starting at or before it (or the first,
        // for an edit before its first op).
        let bi = region.blocks.partition_point(|b| b.range.start <= edit.start).saturating_sub(1);
        if region.blocks.get(bi + 1).is_some_and(|b| edit.end >= b.range.start) {
            return None;
        }
        let block = region.blocks.get(bi)?;
        depth += parser::REGION_WEIGHT;
        path.extend([ri, bi]);
        let ops = &block.ops;
        // The ops touching the edit: `f..l`.
        let f = ops.partition_point(|o| o.range.end < edit.start);
        let l = ops.partition_point(|o| o.range.start <= edit.end);
        if l == f + 1
            && strictly_inside(edit, ops[f].range)
            && !matches!(ops[f].body, OpBody::Error)
            && region_holding(&ops[f], edit).is_some()
        {
            path.push(f);
            op = &ops[f];
            continue;
        }
        let n = ops.len();
        if n == 0 {
            return None;
        }
        let lo = f.saturating_sub(1).min(n - 1);
        let hi = l.min(n - 1);
        // An edit before the first op: the window starts right after the block's `{` or
        // label, with the whitespace there.
        let start = if lo == 0 && edit.start < ops[0].range.start {
            match &block.label {
                Some(label) => label.range.end,
                None if bi == 0 => region.range.start + 1,
                None => return None,
            }
        } else {
            ops[lo].range.start
        };
        let target = match ops.get(hi + 1) {
            Some(next) => next.range.start,
            // Past the last op: the block's end (its region's `}` or the next label), found
            // from the tokens by the caller's check that a token starts there.
            None => next_sig_start(region, bi, ops[hi].range.end)?,
        };
        return Some(Window {
            path,
            depth,
            chunk: chunk.range,
            block_start: block.range.start,
            first_in_block: lo == 0 && block.label.is_none(),
            lo,
            hi,
            block_len: n,
            ops: ops[lo..=hi].to_vec(),
            first_untouched: lo < f,
            last_untouched: hi >= l,
            start,
            target,
        });
    }
}

/// The start of the first significant token after the last op of block `bi` of `region`,
/// which ends at `end`: the next block's label, or the region's closing `}`.
fn next_sig_start(region: &Region, bi: usize, end: u32) -> Option<u32> {
    match region.blocks.get(bi + 1) {
        Some(next) => Some(next.range.start).filter(|&s| s > end),
        // The region ends with its `}`, one byte.
        None => region.range.end.checked_sub(1).filter(|&s| s > end),
    }
}

/// The block starting at `start` (a [`Shifter::edited_block`]) if no op outside it follows
/// it: it is the last block of the last region of the last op of its block, and so on up to
/// the last op of the last chunk; with no alias after that op when `no_alias_after`.
fn last_block_at(
    file: &mut crate::ast::SourceFile,
    start: u32,
    no_alias_after: bool,
) -> Option<&mut Block> {
    let chunk = file.chunks.last_mut()?;
    let ii = chunk.items.iter().rposition(|i| matches!(i, Item::Op(_)))?;
    let alias = |i: &Item| matches!(i, Item::AttrAlias(_) | Item::TypeAlias(_) | Item::LocAlias(_));
    if no_alias_after && chunk.items[ii + 1..].iter().any(alias) {
        return None;
    }
    let Item::Op(op) = chunk.items.get_mut(ii)? else { return None };
    let mut op = op;
    loop {
        let block = op_regions_mut(op).last_mut()?.blocks.last_mut()?;
        if block.range.start == start {
            return Some(block);
        }
        op = block.ops.last_mut()?;
    }
}

/// The block `path` leads to (see [`Window::path`]).
fn block_at_mut<'f>(file: &'f mut crate::ast::SourceFile, path: &[usize]) -> Option<&'f mut Block> {
    let (&ci, rest) = path.split_first()?;
    let (&ii, mut rest) = rest.split_first()?;
    let Item::Op(op) = file.chunks.get_mut(ci)?.items.get_mut(ii)? else { return None };
    let mut op = op;
    loop {
        let [ri, bi, tail @ ..] = rest else { return None };
        let block = op_regions_mut(op).get_mut(*ri)?.blocks.get_mut(*bi)?;
        match tail {
            [] => return Some(block),
            [oi, more @ ..] => {
                op = block.ops.get_mut(*oi)?;
                rest = more;
            }
        }
    }
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

/// Moves positions at or after the old window's end by the edit's length change, and token
/// indices after its last token by the change in token count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shifter {
    /// Where the re-parsed window starts (the same in both texts).
    old_start: u32,
    /// Where it ended in the old text: the start of the first token after it.
    old_end: u32,
    delta: i64,
    tok_after: u32,
    dt: i64,
    /// Leave the ops that start after the re-parsed window (at or after `old_end`) alone,
    /// for [`Shifter::finish`].
    defer: bool,
    /// The first token whose position [`Shifter::finish`] moves (the ones before it were
    /// moved by the re-parse).
    tok_from: usize,
    /// The start of the re-parsed block, whose ops from `deferred_from` on are the ones
    /// [`Shifter::finish`] moves (the window's new ops before them may start past
    /// `old_end`, so positions cannot tell them apart).
    edited_block: u32,
    deferred_from: u32,
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

    fn item(&self, item: &mut Item) {
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
                    self.op(op);
                }
            }
            Item::Resources(r) | Item::Error(r) => self.range(r),
        }
    }

    fn op(&self, op: &mut Op) {
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
                    self.region(r);
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
                self.region(&mut m.body);
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
                    self.region(body);
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
                self.region(&mut r.body);
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

    fn region(&self, r: &mut Region) {
        if self.before(r.range) {
            return;
        }
        self.range(&mut r.range);
        for b in &mut r.blocks {
            self.block(b);
        }
    }

    fn block(&self, b: &mut Block) {
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
        // Ops before the window's end end before it: skip them without a look.
        let first = b.ops.partition_point(|o| o.range.end < self.old_end);
        for op in &mut b.ops[first..] {
            if self.defer && op.range.start >= self.old_end {
                // This op and the ones after it are moved by `finish`.
                break;
            }
            self.op(op);
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
    /// Makes current the pending ops of the edited block and their tokens up to where a
    /// re-parse of `edit` (current offsets) stops reading, and says whether the rest may stay
    /// pending through it: only when the edit lies in the edited block, nothing follows that
    /// block at any level above it (what follows would move by the next edit alone), no
    /// alias follows in its chunk (the re-parse would move every token), and the block has
    /// ops left past the window, its lookahead and the edit (also at their old positions,
    /// which the re-parse's searches meet). On `false` what it moved is recorded, and
    /// [`Shifter::finish`] moves the rest.
    ///
    /// `later` are the places pending after this one (see [`Pending`]): when the edit's
    /// window and lookahead reach past this place's last op, the whole place is moved and
    /// the answer is [`Advance::Exhausted`] (the next place is then advanced in turn).
    /// Their ops, which the re-parse's searches meet at their old positions, must start
    /// past the lookahead at both positions.
    fn advance_for(&mut self, parts: &mut Parts, edit: TextRange, later: &[Shifter]) -> Advance {
        let tokens_pending = self.tok_from < parts.tokens.len();
        let Some(block) = last_block_at(&mut parts.file, self.edited_block, tokens_pending) else {
            return Advance::Refused;
        };
        if edit.start < block.range.start || edit.end > block.range.end {
            return Advance::Refused;
        }
        let k = self.deferred_from as usize;
        let n = block.ops.len();
        // This place's ops and tokens end where the next place's start.
        let (op_end, tok_end) = later
            .first()
            .map_or((n, parts.tokens.len()), |p| (p.deferred_from as usize, p.tok_from));
        if k > op_end || op_end > n || tok_end > parts.tokens.len() {
            return Advance::Refused;
        }
        // Current starts: moved for the ops before `k`, old plus the delta of the place
        // holding them from `k` on.
        let delta_at = |i: usize| -> i64 {
            if i < k {
                return 0;
            }
            later
                .iter()
                .rev()
                .find(|p| p.deferred_from as usize <= i)
                .map_or(self.delta, |p| p.delta)
        };
        let start_now =
            |ops: &[Op], i: usize| -> i64 { i64::from(ops[i].range.start) + delta_at(i) };
        // The first op starting after the edit, and the one after it, where the window's
        // lookahead starts.
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if start_now(&block.ops, mid) <= i64::from(edit.end) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let lookahead_op = lo + 1;
        if lookahead_op >= n {
            return Advance::Refused;
        }
        let look_from = start_now(&block.ops, lookahead_op);
        // Past the lookahead and the edit at both positions, so the window's searches pass
        // over them.
        let past = |stale: i64, delta: i64| {
            stale > look_from && stale + delta > look_from && stale > i64::from(edit.end)
        };
        // Significant tokens from the lookahead's start among the current ones (a count
        // that stops once it is enough).
        let mut tok = self.tok_from.min(parts.tokens.len());
        let first_look =
            parts.tokens[..tok].partition_point(|t| i64::from(t.range.start) < look_from);
        let mut sig = parts.tokens[first_look..tok]
            .iter()
            .filter(|t| !t.kind.is_trivia())
            .take(LOOKAHEAD + 1)
            .count();
        let now = Shifter { defer: false, ..*self };
        let mut j = k;
        let answer = loop {
            if j == op_end && !later.is_empty() {
                // The whole place: the rest of its tokens too.
                move_tokens(parts.tokens.get_mut(tok..tok_end).unwrap_or_default(), self.delta);
                tok = tok_end;
                break Advance::Exhausted;
            }
            let Some(next) = block.ops.get(j) else { break Advance::Refused };
            let stale = i64::from(next.range.start);
            if j > lookahead_op && sig > LOOKAHEAD && past(stale, self.delta) {
                let later_past = later.iter().all(|p| {
                    block
                        .ops
                        .get(p.deferred_from as usize)
                        .is_none_or(|o| past(i64::from(o.range.start), p.delta))
                });
                break if later_past { Advance::Enough } else { Advance::Refused };
            }
            // Op `j` and its tokens, with the trivia after it: those before the next op's
            // old start, or the rest of the place's tokens for its last op.
            let until = if j + 1 == op_end && !later.is_empty() {
                u32::MAX
            } else {
                let Some(o) = block.ops.get(j + 1) else { break Advance::Refused };
                o.range.start
            };
            while tok < tok_end
                && let Some(t) = parts.tokens.get_mut(tok)
            {
                if t.range.start >= until {
                    break;
                }
                move_tokens(std::slice::from_mut(t), self.delta);
                if i64::from(t.range.start) >= look_from && !t.kind.is_trivia() {
                    sig += 1;
                }
                tok += 1;
            }
            now.op(&mut block.ops[j]);
            j += 1;
        };
        // What was moved is recorded either way: `finish` moves the rest.
        self.deferred_from = j as u32;
        self.tok_from = tok;
        if j < op_end
            && let Some(next) = block.ops.get(j)
        {
            self.old_end = next.range.start.max(self.old_end);
        }
        answer
    }

    /// Moves a place that is not the last (see [`Pending`]): the edited block's ops from
    /// its `deferred_from` and the tokens from its `tok_from`, up to where `next` starts.
    fn move_place(&self, block: &mut Block, tokens: &mut [crate::Token], next: &Shifter) {
        let tok_end = next.tok_from.min(tokens.len());
        move_tokens(
            tokens.get_mut(self.tok_from.min(tok_end)..tok_end).unwrap_or_default(),
            self.delta,
        );
        let op_end = (next.deferred_from as usize).min(block.ops.len());
        let now = Shifter { defer: false, ..*self };
        for o in
            block.ops.get_mut((self.deferred_from as usize).min(op_end)..op_end).unwrap_or_default()
        {
            now.op(o);
        }
    }

    /// Moves what a deferring shift left: the ops after the re-parsed window, which still
    /// have the old text's positions. The enclosing ops were moved already, so they are
    /// only descended into.
    fn finish(self, parts: &mut Parts) {
        if let Some(tail) = parts.tokens.get_mut(self.tok_from..) {
            move_tokens(tail, self.delta);
        }
        let s = Shifter { defer: false, ..self };
        for chunk in &mut parts.file.chunks {
            for item in &mut chunk.items {
                if let Item::Op(op) = item {
                    s.finish_op(op);
                }
            }
        }
    }

    fn finish_op(&self, op: &mut Op) {
        if op.range.start >= self.old_end {
            // Untouched so far: old positions throughout.
            self.op(op);
            return;
        }
        if op.range.end <= self.old_start {
            // Before the window: nothing in it moves.
            return;
        }
        // An op enclosing the window.
        for r in op_regions_mut(op) {
            for b in &mut r.blocks {
                if b.range.start == self.edited_block {
                    // The ops before the window and its new ops are current.
                    for o in b.ops.iter_mut().skip(self.deferred_from as usize) {
                        self.op(o);
                    }
                    continue;
                }
                // Sorted by start: the ops before `first` were moved or never move, except
                // the last of them, which may enclose the window.
                let first = b.ops.partition_point(|o| o.range.start < self.old_end);
                if let Some(i) = first.checked_sub(1)
                    && let Some(o) = b.ops.get_mut(i)
                {
                    self.finish_op(o);
                }
                for o in b.ops.iter_mut().skip(first) {
                    self.op(o);
                }
            }
        }
    }
}

/// What [`Shifter::advance_for`] did.
enum Advance {
    /// The edit's window and lookahead are current, and the rest may stay pending.
    Enough,
    /// The whole place was moved, before the edit's window and lookahead were reached.
    Exhausted,
    /// The rest may not stay pending; what was moved is recorded.
    Refused,
}

/// Positions a re-parse left to move, at one place or more, nearest first, never empty.
///
/// The last shift is what a re-parse with nothing pending leaves: the ops past its window,
/// wherever they are in the file, and the tokens from its `tok_from` on
/// ([`Shifter::finish`]). The others exist only when every pending op is in one block (the
/// last of the file, [`Tree::take_for`]'s condition for keeping positions pending): each
/// covers that block's ops from its `deferred_from` and the tokens from its `tok_from` up
/// to where the next one starts, all of whose positions move by its own `delta` and token
/// indices by its `dt` ([`Shifter::move_place`]). An edit before the pending places adds
/// one (what lies between it and them) instead of moving anything between them; at most
/// [`MAX_PENDING`] are kept.
type Pending = Vec<Shifter>;

/// Moves every pending position: the places in order, the last one through the whole tree.
fn finish_all(shifts: Pending, parts: &mut Parts) {
    if let [places @ .., last] = &shifts[..] {
        if let [first, ..] = places
            && let Some(block) = last_block_at(&mut parts.file, first.edited_block, false)
        {
            for (i, p) in places.iter().enumerate() {
                let next = shifts.get(i + 1).unwrap_or(last);
                p.move_place(block, &mut parts.tokens, next);
            }
        }
        last.finish(parts);
    }
}

/// A parse's tree and tokens.
pub(crate) struct Parts {
    pub(crate) file: crate::ast::SourceFile,
    pub(crate) tokens: Vec<crate::Token>,
    /// What the parse that made them knew of its errors and chunks (`None` for a parse put
    /// together from parts, which is never re-parsed incrementally).
    pub(crate) meta: Option<Meta>,
}

/// Who found a syntax error: the lexer, or the parse of the statement (op or top-level
/// item) starting at an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Lex,
    Stmt(u32),
}

/// A parse's knowledge of its errors and chunks, for an incremental re-parse.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    /// Per chunk.
    pub(crate) chunks: Vec<parser::ChunkMeta>,
    /// Per error of [`Parse::errors`], in its order.
    pub(crate) owners: Vec<Owner>,
}

/// A parse's tree and tokens, whose positions after an incremental re-parse may wait to be
/// moved until they are first read.
pub(crate) struct Tree {
    ready: std::sync::OnceLock<Parts>,
    /// The parts with the positions of the ops and tokens after the last re-parsed op still
    /// to move, and the shifts that move them (never empty); set exactly when `ready` is not.
    deferred: std::sync::Mutex<Option<(Parts, Pending)>>,
}

impl Tree {
    pub(crate) fn ready(parts: Parts) -> Tree {
        Tree { ready: std::sync::OnceLock::from(parts), deferred: std::sync::Mutex::new(None) }
    }

    fn deferred(parts: Parts, shifts: Pending) -> Tree {
        Tree {
            ready: std::sync::OnceLock::new(),
            deferred: std::sync::Mutex::new(Some((parts, shifts))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Parts, Pending)>> {
        // A panic while the lock was held left either the parts or nothing: both readable.
        self.deferred.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn get(&self) -> &Parts {
        self.ready.get_or_init(|| match self.lock().take() {
            Some((mut parts, shifts)) => {
                finish_all(shifts, &mut parts);
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
        self.with_current_through(0, f)
    }

    /// [`Tree::with_current`] with the ops up to `end` (new text) current too.
    pub(crate) fn with_current_through<R>(
        &self,
        end: u32,
        f: impl FnOnce(&crate::ast::SourceFile, &[crate::Token]) -> R,
    ) -> R {
        if let Some(parts) = self.ready.get() {
            return f(&parts.file, &parts.tokens);
        }
        let mut guard = self.lock();
        if let Some((parts, shifts)) = guard.as_mut() {
            // Places pending before `end` become current, the nearest first; the last place
            // may reach past the edited block, and is moved only with the whole tree.
            let current_to = |p: &Shifter| i64::from(p.old_end) + p.delta;
            while shifts.len() > 1 && i64::from(end) > current_to(&shifts[0]) {
                let first = shifts.remove(0);
                let Some(block) = last_block_at(&mut parts.file, first.edited_block, false) else {
                    // Not where the shifts were made: put it back, for the whole tree.
                    shifts.insert(0, first);
                    break;
                };
                first.move_place(block, &mut parts.tokens, &shifts[0]);
            }
            if let Some(first) = shifts.first()
                && i64::from(end) <= current_to(first)
            {
                // The ops left to move start at or after the first place's new start.
                let current = parts.tokens.get(..first.tok_from).unwrap_or(&parts.tokens);
                return f(&parts.file, current);
            }
        }
        drop(guard);
        let parts = self.get();
        f(&parts.file, &parts.tokens)
    }

    /// The parts taken out for a re-parse of `edit` (offsets in the text they are for), with
    /// what an earlier re-parse left to move still pending where that is safe
    /// ([`Shifter::advance_for`]): a run of edits near each other then moves only what lies
    /// between them, and an edit undone moves nothing. Otherwise finished.
    fn take_for(&mut self, edit: TextRange) -> (Parts, Pending) {
        if let Some(parts) = self.ready.take() {
            return (parts, Vec::new());
        }
        let deferred =
            self.deferred.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some((mut parts, mut shifts)) = deferred else { return (Parts::empty(), Vec::new()) };
        // The places the edit lies past become current, the nearest first.
        let kept = loop {
            let Some((first, later)) = shifts.split_first_mut() else { break false };
            match first.advance_for(&mut parts, edit, later) {
                Advance::Enough => break true,
                Advance::Exhausted => {
                    shifts.remove(0);
                }
                Advance::Refused => break false,
            }
        };
        // The window must be in the edited block itself, not in a region of one of its ops.
        if kept
            && find_window(&parts.file, edit)
                .is_some_and(|w| shifts.first().is_some_and(|s| w.block_start == s.edited_block))
        {
            (parts, shifts)
        } else {
            finish_all(shifts, &mut parts);
            (parts, Vec::new())
        }
    }
}

impl Clone for Parts {
    fn clone(&self) -> Parts {
        // With the room to spare the lexer leaves (see `lexer::token_headroom`).
        let mut tokens = Vec::with_capacity(self.tokens.capacity());
        tokens.extend_from_slice(&self.tokens);
        Parts { file: self.file.clone(), tokens, meta: self.meta.clone() }
    }
}

impl Parts {
    fn empty() -> Parts {
        Parts {
            file: crate::ast::SourceFile { chunks: Vec::new() },
            tokens: Vec::new(),
            meta: None,
        }
    }
}
