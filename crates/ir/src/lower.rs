//! Lowering: syntax tree to the semantic model.
//!
//! Per chunk, aliases are collected first (location aliases may be used before they are
//! defined), then every function is lowered: values are resolved to their definitions, types
//! and attributes are converted with aliases resolved and layouts decoded, and each op's
//! position goes to the source map. Problems become diagnostics; lowering never fails.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use syntax::{Parse, TextRange, ast};
use ttnn_types::{ElementType, ScalarType, TensorType};

use crate::{
    Name,
    decode::DecodeCtx,
    model::{
        AttrValue, Decoded, DefIndex, DeviceDesc, Diagnostic, FuncBody, FuncSourceMap, LocNames,
        LoweredFile, LoweredFunc, OpData, OpForm, OpLoc, Severity, SystemDesc, Ty, ValueRef,
    },
};

/// Lowers a whole parsed file.
#[must_use]
pub fn lower_file(text: &str, parse: &Parse) -> LoweredFile {
    let mut out = LoweredFile::default();
    for e in &parse.errors {
        out.diagnostics.push(Diagnostic {
            range: e.range,
            severity: Severity::Error,
            code: e.code,
            message: e.message.clone(),
        });
    }
    for (chunk_idx, chunk) in parse.file().chunks.iter().enumerate() {
        lower_chunk(text, parse.tokens(), chunk_idx as u32, chunk, &mut out);
    }
    out.diagnostics.sort_by_key(|d| (d.range.start, d.range.end));
    out
}

/// Re-lowers a file after one edit inside one op (`edit`, from `Parse::reparse_edit`),
/// reusing `old`, the lowering of the text before the edit: only that op is lowered again,
/// and positions after it move. `parse` is the patched parse of `text`.
///
/// Returns `None` where the result could differ from [`lower_file`]'s, which the caller
/// then runs: when the op is not one of a function body's top-level ops, when its results'
/// names or types change (other ops' keys, definitions and type checks read them), or
/// when the op has a lowering diagnostic before or after the edit (a type or alias problem
/// is reported where it is first used, so it can move to another op).
#[must_use]
pub fn relower_edit(
    old: &LoweredFile,
    text: &str,
    parse: &Parse,
    edit: syntax::OpEdit,
) -> Option<LoweredFile> {
    // The tree as the re-parse left it: the op, what encloses it, names and aliases are
    // current, which is all this reads (positions of the ops after it may be the old text's
    // until the tree is first read, elsewhere).
    parse.with_current_through(edit.new.end, |tree, tokens| {
        relower_in(old, text, tokens, tree, &parse.errors, edit)
    })
}

fn relower_in(
    old: &LoweredFile,
    text: &str,
    tokens: &[syntax::Token],
    tree: &ast::SourceFile,
    syntax_errors: &[syntax::SyntaxError],
    edit: syntax::OpEdit,
) -> Option<LoweredFile> {
    // One op replaced by one op (its syntax errors may come or go: an op broken or fixed),
    // and windows of ops replaced with the syntax errors as they were, are what this redoes.
    if edit.new.start != edit.old.start {
        return None;
    }
    if !edit.is_single_op() {
        if edit.errors_changed {
            return None;
        }
        return relower_window(old, text, tokens, tree, edit);
    }
    let delta = i64::from(edit.new.end) - i64::from(edit.old.end);
    let touches = |r: TextRange, e: TextRange| r.start <= e.end && r.end >= e.start;
    // The op's own diagnostics go with it: its syntax errors (reported only inside it, by
    // the re-parse's construction), and lowering problems that stay with the op. Any other
    // diagnostic there (one reported at a first use, or on a neighbour) could move.
    if old.diagnostics.iter().any(|d| {
        touches(d.range, edit.old)
            && LOWERING_CODES.contains(&d.code)
            && !(OP_LOCAL_CODES.contains(&d.code)
                && edit.old.start <= d.range.start
                && d.range.end <= edit.old.end)
    }) {
        return None;
    }
    let (fi, func) = old.funcs.iter().enumerate().find(|(_, f)| {
        f.source_map.range.start <= edit.old.start && edit.old.end <= f.source_map.range.end
    })?;
    let sm = &func.source_map;
    let i = sm.op_ranges.binary_search_by_key(&edit.old.start, |r| r.start).ok()?;
    // The edit may run past the op into the trivia after it (a trailing comment typed or
    // removed): the op is what starts the edit and ends inside it.
    if sm.op_ranges[i].end > edit.old.end {
        return None;
    }
    let chunk = tree.chunks.get(sm.chunk as usize)?;
    let mut items = chunk.items.iter().filter_map(|it| match it {
        ast::Item::Op(op) => Some(op),
        _ => None,
    });
    let fop = find_func(&mut items, sm.range.start)?;
    let ast::OpBody::Func(f) = &fop.body else { return None };
    let region = f.body.as_ref()?;
    let (_, ops) = split_terminator(region);
    let o = *ops.get(i)?;
    let old_op = func.body.ops.get(i)?;
    if o.range.start != edit.new.start
        || o.range.end > edit.new.end
        || func.body.ops.len() != ops.len()
    {
        return None;
    }
    let key = if o.results.is_empty() {
        // A result-less op's key counts ops of its name before it: keep the name.
        if o.name.text != old_op.name {
            return None;
        }
        old_op.key.clone()
    } else {
        op_key(o, &mut FxHashMap::default())
    };
    if key != old_op.key {
        return None;
    }
    let mut alias_diags = Vec::new();
    let aliases = Aliases::collect(chunk, &mut alias_diags);
    let mut cx = Lower::new(text, tokens, &aliases, sm.chunk);
    // Same names as before (the key says so), so the same definitions and duplicate
    // reports as the old lowering has. Only the names the op's text mentions (a superset
    // of the values it uses) go into the table: hashing every name of a 10k-op function
    // was half of re-lowering one op.
    let first = tokens.partition_point(|t| t.range.start < o.range.start);
    // A handful of names: a scan compares lengths first, cheaper than hashing every name.
    let mentioned: Vec<&str> = tokens[first..]
        .iter()
        .take_while(|t| t.range.start < o.range.end)
        .filter(|t| t.kind == syntax::TokenKind::ValueId)
        .filter_map(|t| text.get(t.range.start as usize..t.range.end as usize))
        .collect();
    let defs = match defs_by_key(f, region, &ops, &func.body, &mentioned) {
        Some(defs) => defs,
        None => cx.func_defs_of(f, Some(region), &ops, &|name| mentioned.contains(&name)),
    };
    cx.diags.clear();
    let mut op_sm = FuncSourceMap::default();
    let data = cx.op(o, key, i as u32, &defs, &func.body, &mut op_sm);
    let loc = cx.loc_name(o.loc.as_ref());
    if cx.diags.iter().any(|d| !OP_LOCAL_CODES.contains(&d.code)) || data.key != old_op.key {
        return None;
    }
    let op_diags = std::mem::take(&mut cx.diags);
    // New result types: the ops using them check their operands against them again.
    let retyped = data.results != old_op.results;
    if retyped && old.diagnostics.iter().any(|d| NONLOCAL_CODES.contains(&d.code)) {
        return None;
    }
    let shift = |r: &mut TextRange| {
        for o in [&mut r.start, &mut r.end] {
            if *o >= edit.old.end {
                // In range: the new text's length fits in u32 (`edit.new` lies in it).
                *o = (i64::from(*o) + delta) as u32;
            }
        }
    };
    // Every function at or after the edit moves; then the edited one gets its new op.
    let mut funcs: Vec<LoweredFunc> = old
        .funcs
        .iter()
        .enumerate()
        .map(|(j, lf)| {
            if lf.source_map.range.end < edit.old.end {
                return lf.clone();
            }
            let mut sm = (*lf.source_map).clone();
            // In the edited function nothing before the edited op moves.
            let first = if j == fi { i } else { 0 };
            shift_source_map(&mut sm, first, &shift);
            LoweredFunc { source_map: Arc::new(sm), ..lf.clone() }
        })
        .collect();
    let lf = funcs.get_mut(fi)?;
    let sm = Arc::make_mut(&mut lf.source_map);
    sm.op_ranges[i] = *op_sm.op_ranges.first()?;
    sm.op_name_ranges[i] = *op_sm.op_name_ranges.first()?;
    sm.result_ranges.replace(i, op_sm.result_ranges.get(0)?);
    sm.operand_ranges.replace(i, op_sm.operand_ranges.get(0)?);
    sm.result_type_ranges.replace(i, op_sm.result_type_ranges.get(0)?);
    let body = Arc::make_mut(&mut lf.body);
    body.ops[i] = Arc::new(data);
    let key = *body.keys.get(i)?;
    if lf.loc_names.loc_of(key) != loc {
        // A key shared with another op (a `duplicate-value` error) shares its entry, which
        // the first of those ops gives.
        if body.keys.iter().filter(|&&k| k == key).nth(1).is_some() {
            return None;
        }
        lf.loc_names = Arc::new(lf.loc_names.spliced(&[key], &[(key, loc)]));
    }
    // The op's old diagnostics out, its new ones in, where lowering the file puts them:
    // sorted by range, syntax errors first among equal ranges.
    let mut diagnostics: Vec<Diagnostic> = old
        .diagnostics
        .iter()
        .filter(|d| !touches(d.range, edit.old))
        .cloned()
        .map(|mut d| {
            shift(&mut d.range);
            d
        })
        .collect();
    let syntax = syntax_errors.iter().filter(|e| touches(e.range, edit.new));
    for e in syntax.rev() {
        let d = error(e.range, e.code, e.message.clone());
        let at = diagnostics
            .partition_point(|x| (x.range.start, x.range.end) < (d.range.start, d.range.end));
        diagnostics.insert(at, d);
    }
    for d in op_diags {
        let at = diagnostics
            .partition_point(|x| (x.range.start, x.range.end) <= (d.range.start, d.range.end));
        diagnostics.insert(at, d);
    }
    if retyped {
        recheck_uses(text, &mut diagnostics, body, sm, key)?;
    }
    Some(LoweredFile {
        funcs,
        diagnostics,
        device: old.device.clone(),
        system_desc: old.system_desc.clone(),
    })
}

/// After the result types of the op with key `def` changed, checks the operands that use
/// them again, as lowering does (`type-mismatch`): the diagnostics at those operands are
/// replaced, in `diagnostics` (sorted, positions current). Reads the ops' data and the
/// source map, not the syntax tree (whose ops after the edit may still have the old text's
/// positions). `None` where the result could differ from lowering the file: a result is
/// returned (the terminator's check), or another diagnostic shares an operand's range.
fn recheck_uses(
    text: &str,
    diagnostics: &mut Vec<Diagnostic>,
    body: &FuncBody,
    sm: &FuncSourceMap,
    def: Name,
) -> Option<()> {
    let uses_def = |v: &ValueRef| matches!(v, ValueRef::Result { op, .. } if *op == def);
    if body.returns.iter().any(uses_def) {
        return None;
    }
    let mut ranges = Vec::new();
    let mut found = Vec::new();
    for (j, user) in body.ops.iter().enumerate() {
        for (k, v) in user.operands.iter().enumerate().filter(|(_, v)| uses_def(v)) {
            let range = *sm.operand_ranges.get(j)?.get(k)?;
            ranges.push(range);
            let (Some(declared), Some(actual)) = (user.operand_types.get(k), body.value_type(*v))
            else {
                continue;
            };
            let written = text.get(range.start as usize..range.end as usize)?;
            let name = written.split('#').next().unwrap_or(written);
            found.extend(operand_mismatch(range, k, &user.name, name, declared, actual));
        }
    }
    let at_use = |d: &Diagnostic| ranges.contains(&d.range);
    if diagnostics.iter().any(|d| at_use(d) && d.code != "type-mismatch") {
        return None;
    }
    diagnostics.retain(|d| !at_use(d));
    for d in found {
        let at = diagnostics
            .partition_point(|e| (e.range.start, e.range.end) <= (d.range.start, d.range.end));
        diagnostics.insert(at, d);
    }
    Some(())
}

/// Every code lowering reports (the others in a lowered file's diagnostics are syntax
/// errors).
const LOWERING_CODES: &[&str] = &[
    "alias-cycle",
    "duplicate-alias",
    "duplicate-function",
    "duplicate-value",
    "invalid-attribute",
    "invalid-integer",
    "invalid-result-number",
    "invalid-type",
    "layout-shape-mismatch",
    "missing-return",
    "operand-count-mismatch",
    "result-count-mismatch",
    "return-count-mismatch",
    "tensor-too-large",
    "type-mismatch",
    "undefined-value",
    "unknown-alias",
    "use-before-def",
    "wrong-operand-count",
    "wrong-result-count",
    "zero-sized-grid",
];

/// Lowering diagnostics about one op alone (its operand and result counts, its operands'
/// types): lowering that op again reports them again, and no other op's.
const OP_LOCAL_CODES: &[&str] = &[
    "operand-count-mismatch",
    "result-count-mismatch",
    "type-mismatch",
    "wrong-operand-count",
    "wrong-result-count",
];

/// The `type-mismatch` of operand `k` of op `op` (written `name` at `range`), declared as
/// `declared` where its value has type `actual`; none when they agree or one is unknown.
/// Lowering an op and re-checking the uses of a re-typed op both report it.
fn operand_mismatch(
    range: TextRange,
    k: usize,
    op: &str,
    name: &str,
    declared: &Ty,
    actual: &Ty,
) -> Option<Diagnostic> {
    (declared != actual && *declared != Ty::Unknown && *actual != Ty::Unknown).then(|| {
        error(
            range,
            "type-mismatch",
            format!(
                "operand {k} of `{op}` is declared as `{declared}` but `{name}` has type `{actual}`"
            ),
        )
    })
}

/// The codes of lowering diagnostics whose place depends on other ops than the one they
/// are reported at: while the old lowering has one, a window of ops is not lowered alone.
const NONLOCAL_CODES: &[&str] =
    &["undefined-value", "use-before-def", "duplicate-value", "invalid-result-number"];

/// [`relower_in`] for an edit that replaced `edit.old_ops` top-level ops of a function body
/// by `edit.new_ops` (inserted, deleted, pasted ops, or trivia between ops when both are
/// zero): the new ops are lowered, spliced in, and the positions after them move.
///
/// Values name their defining op by key, so no other op's data changes, provided no other
/// op's diagnostics do: the new ops define no name defined elsewhere, no op outside the
/// window uses a name only the removed ops defined, an op replaced under the same key keeps
/// its result types (other ops' type checks read them), no op of the window has no results
/// (their keys count earlier ops of their name), and the new ops lower without diagnostics.
/// Where any of that fails, `None`: the caller lowers from scratch.
fn relower_window(
    old: &LoweredFile,
    text: &str,
    tokens: &[syntax::Token],
    tree: &ast::SourceFile,
    edit: syntax::OpEdit,
) -> Option<LoweredFile> {
    let delta = i64::from(edit.new.end) - i64::from(edit.old.end);
    if old.diagnostics.iter().any(|d| {
        NONLOCAL_CODES.contains(&d.code)
            || (d.range.start <= edit.old.end && d.range.end >= edit.old.start)
    }) {
        return None;
    }
    let (fi, func) = old.funcs.iter().enumerate().find(|(_, f)| {
        f.source_map.range.start < edit.old.start && edit.old.end < f.source_map.range.end
    })?;
    let sm = &func.source_map;
    let body = &func.body;
    // The first op at or after the edit: the first replaced one, or the one after the trivia.
    let i = sm.op_ranges.partition_point(|r| r.start < edit.old.start);
    let (removed, added) = (edit.old_ops as usize, edit.new_ops as usize);
    if i != edit.first_op as usize || i + removed > body.ops.len() {
        return None;
    }
    // The window may start and end in trivia (a whole line's indentation and line break):
    // the replaced ops lie inside it, and the ops beside it outside.
    if i.checked_sub(1).is_some_and(|p| sm.op_ranges[p].end > edit.old.start)
        || sm.op_ranges.get(i + removed).is_some_and(|r| r.start < edit.old.end)
        || (removed > 0 && sm.op_ranges[i + removed - 1].end > edit.old.end)
    {
        return None;
    }
    let chunk = tree.chunks.get(sm.chunk as usize)?;
    let mut items = chunk.items.iter().filter_map(|it| match it {
        ast::Item::Op(op) => Some(op),
        _ => None,
    });
    let fop = find_func(&mut items, sm.range.start)?;
    let ast::OpBody::Func(f) = &fop.body else { return None };
    let region = f.body.as_ref()?;
    let [block] = region.blocks.as_slice() else { return None };
    // The block's ops without a trailing `return`, as a slice: collecting the pointers of a
    // 100k-op body took milliseconds. A `return` anywhere else makes the count below differ
    // from the lowering's (which drops every `return`), and the edit is refused.
    let ops: &[ast::Op] = match block.ops.split_last() {
        Some((last, rest)) if matches!(last.body, ast::OpBody::Return(_)) => rest,
        _ => &block.ops,
    };
    if ops.len() != body.ops.len() - removed + added {
        return None;
    }
    let new_ops = ops.get(i..i + added)?;
    let old_window = &body.ops[i..i + removed];
    if new_ops.iter().any(|o| {
        o.results.is_empty() || o.range.start < edit.new.start || o.range.end > edit.new.end
    }) || old_window.iter().any(|o| o.results.is_empty())
    {
        return None;
    }
    // Keys: new ones must not be defined outside the window (nor twice in it), nor be an
    // argument's name.
    let mut ordinals = FxHashMap::default();
    let keys: Vec<String> = new_ops.iter().map(|o| op_key(o, &mut ordinals)).collect();
    let outside = |k: &str| {
        Name::lookup(k).and_then(|n| body.defs.get(n)).is_some_and(|j| {
            let j = j as usize;
            j < i || j >= i + removed
        })
    };
    let mut seen = rustc_hash::FxHashSet::default();
    let mut results = rustc_hash::FxHashSet::default();
    for (o, k) in new_ops.iter().zip(&keys) {
        if outside(k) || !seen.insert(k.as_str()) || k.contains(',') {
            return None;
        }
        results.extend(o.results.iter().map(|r| r.name.text.as_str()));
    }
    // No new result may be an argument's name. The few new names are compared with each
    // argument's, not the arguments hashed into a set (or each looked up in the new names':
    // hashing 19k argument names was 2 ms of an insertion on the 100k-op graph): a string
    // comparison stops at the length or the first byte that differs.
    if results.iter().any(|r| body.arg_names.iter().any(|a| a == r)) {
        return None;
    }
    // Names only the removed ops defined must not be used outside the window.
    let gone: Vec<Name> = old_window
        .iter()
        .filter(|o| !seen.contains(o.key.as_str()))
        .map(|o| Name::new(&o.key))
        .collect();
    // A few names are searched for in the text, one pass each; for more (a cut of a block of
    // ops) one look at the later ops' operands is cheaper than a pass per name.
    if !gone.is_empty()
        && (gone.len() > MAX_SEARCHED_NAMES || maybe_written_after(text, edit.new.end, &gone))
    {
        let uses_gone =
            |v: &ValueRef| matches!(v, ValueRef::Result { op, .. } if gone.contains(op));
        // Only the ops after the window can: the old lowering had no use before a definition
        // (a non-local error refuses the edit above), so no op before the window read them.
        let after = &body.ops[i + removed..];
        if after.iter().flat_map(|o| &o.operands).any(uses_gone)
            || body.returns.iter().any(uses_gone)
        {
            return None;
        }
    }
    let mut alias_diags = Vec::new();
    let aliases = Aliases::collect(chunk, &mut alias_diags);
    let mut cx = Lower::new(text, tokens, &aliases, sm.chunk);
    let first_tok = tokens.partition_point(|t| t.range.start < edit.new.start);
    let mentioned: Vec<&str> = tokens[first_tok..]
        .iter()
        .take_while(|t| t.range.start < edit.new.end)
        .filter(|t| t.kind == syntax::TokenKind::ValueId)
        .filter_map(|t| text.get(t.range.start as usize..t.range.end as usize))
        .collect();
    let defs = match window_defs(f, region, ops, body, (i, removed, added), &mentioned) {
        Some(defs) => defs,
        None => {
            let ops: Vec<&ast::Op> = ops.iter().collect();
            cx.func_defs_of(f, Some(region), &ops, &|name| mentioned.contains(&name))
        }
    };
    cx.diags.clear();
    // The body the new ops' operand types are checked against: the old ops before the window
    // are where they were, and the new ones are pushed as they are lowered.
    // Field by field: cloning the whole body first copied every op pointer only to drop it.
    let mut ops = Vec::with_capacity(body.ops.len() + added - removed);
    ops.extend(body.ops[..i].iter().cloned());
    let mut new_body = FuncBody {
        name: body.name.clone(),
        is_private: body.is_private,
        function_type: body.function_type.clone(),
        arg_names: Arc::clone(&body.arg_names),
        args: Arc::clone(&body.args),
        results: body.results.clone(),
        ops,
        returns: body.returns.clone(),
        has_body: body.has_body,
        keys: Arc::clone(&body.keys),
        defs: body.defs.clone(),
        apart: body.apart,
    };
    let mut window_sm = FuncSourceMap::default();
    let mut locs = Vec::with_capacity(added);
    for (k, (o, key)) in new_ops.iter().zip(keys).enumerate() {
        let data = cx.op(o, key, (i + k) as u32, &defs, &new_body, &mut window_sm);
        locs.push(cx.loc_name(o.loc.as_ref()));
        // An op kept under its key keeps its results' types, which its users check.
        if let Some(was) = old_window.iter().find(|w| w.key == data.key)
            && was.results != data.results
        {
            return None;
        }
        new_body.ops.push(Arc::new(data));
    }
    if !cx.diags.is_empty() {
        return None;
    }
    new_body.ops.extend(body.ops[i + removed..].iter().cloned());
    let apart = |ops: &[Arc<OpData>]| ops.iter().filter(|o| o.resolves_apart()).count() as u32;
    new_body.apart =
        (body.apart + apart(&new_body.ops[i..i + added])).checked_sub(apart(old_window))?;
    // The keys and their index spliced, not built again (that interned every key).
    let added_keys: Vec<Name> =
        new_body.ops[i..i + added].iter().map(|o| Name::new(&o.key)).collect();
    new_body.defs = body.defs.spliced(i, removed, &added_keys)?;
    let mut keys = Vec::with_capacity(new_body.ops.len());
    keys.extend_from_slice(body.keys.get(..i)?);
    keys.extend_from_slice(&added_keys);
    keys.extend_from_slice(body.keys.get(i + removed..)?);
    new_body.keys = keys.into();
    let shift = |r: &mut TextRange| {
        for o in [&mut r.start, &mut r.end] {
            if *o >= edit.old.end {
                // In range: the new text's length fits in u32 (`edit.new` lies in it).
                *o = (i64::from(*o) + delta) as u32;
            }
        }
    };
    let mut funcs: Vec<LoweredFunc> = old
        .funcs
        .iter()
        .enumerate()
        .map(|(j, lf)| {
            if lf.source_map.range.end < edit.old.end {
                return lf.clone();
            }
            let mut sm = (*lf.source_map).clone();
            // In the edited function nothing before the window moves.
            let first = if j == fi { i + removed } else { 0 };
            shift_source_map(&mut sm, first, &shift);
            LoweredFunc { source_map: Arc::new(sm), ..lf.clone() }
        })
        .collect();
    let lf = funcs.get_mut(fi)?;
    if removed == 0 && added == 0 {
        // Trivia between ops: only positions moved.
        return Some(LoweredFile {
            funcs,
            diagnostics: old
                .diagnostics
                .iter()
                .cloned()
                .map(|mut d| {
                    shift(&mut d.range);
                    d
                })
                .collect(),
            device: old.device.clone(),
            system_desc: old.system_desc.clone(),
        });
    }
    let sm = Arc::make_mut(&mut lf.source_map);
    sm.op_ranges.splice(i..i + removed, window_sm.op_ranges.iter().copied());
    sm.op_name_ranges.splice(i..i + removed, window_sm.op_name_ranges.iter().copied());
    sm.result_ranges.splice(i, removed, &window_sm.result_ranges);
    sm.operand_ranges.splice(i, removed, &window_sm.operand_ranges);
    sm.result_type_ranges.splice(i, removed, &window_sm.result_type_ranges);
    let removed_keys = body.keys.get(i..i + removed)?;
    let added_locs: Vec<(Name, Option<OpLoc>)> = added_keys.iter().copied().zip(locs).collect();
    lf.loc_names = Arc::new(lf.loc_names.spliced(removed_keys, &added_locs));
    lf.body = Arc::new(new_body);
    let mut diagnostics = old.diagnostics.clone();
    for d in &mut diagnostics {
        shift(&mut d.range);
    }
    Some(LoweredFile {
        funcs,
        diagnostics,
        device: old.device.clone(),
        system_desc: old.system_desc.clone(),
    })
}

/// How many removed names [`relower_window`] looks for in the text after the window before it
/// falls back to the later ops' operands: each name is a pass over the bytes (about 0.5 ms
/// over half of a 100k-op file), the operands one pass for all of them (about 4 ms).
const MAX_SEARCHED_NAMES: usize = 4;

/// False when no op after `from` (new text) can use a value named by one of `keys`: none of
/// them is written there as a whole value id (`%x`, or `%x#1` for one result of several). A
/// use is written after its op's start, so the text after the window holds every use by the
/// ops after it and by the `return`. Searching the bytes is a pass at memory speed, where
/// looking at each later op's operands follows a pointer per op (4 ms on a 100k-op function
/// for a renamed or deleted op). A key naming several result groups (`%a,%b`) is never
/// written as such: true, so the caller looks at the operands.
fn maybe_written_after(text: &str, from: u32, keys: &[Name]) -> bool {
    let Some(after) = text.as_bytes().get(from as usize..) else { return true };
    // The characters a value id's suffix may continue with (MLIR's `suffix-id`).
    let continues = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'$' | b'.' | b'_' | b'-');
    keys.iter().any(|k| {
        let key = k.as_str();
        if key.contains(',') {
            return true;
        }
        memchr::memmem::find_iter(after, key.as_bytes())
            .any(|at| after.get(at + key.len()).is_none_or(|&b| !continues(b)))
    })
}

/// The `func.func` op starting at `start`, among `ops` and the ops of their regions.
fn find_func<'a>(ops: &mut dyn Iterator<Item = &'a ast::Op>, start: u32) -> Option<&'a ast::Op> {
    for op in ops {
        if op.range.start > start || op.range.end < start {
            continue;
        }
        if op.range.start == start && matches!(op.body, ast::OpBody::Func(_)) {
            return Some(op);
        }
        let regions: &[ast::Region] = match &op.body {
            ast::OpBody::Module(m) => std::slice::from_ref(&m.body),
            ast::OpBody::RegionOp(r) => std::slice::from_ref(&r.body),
            ast::OpBody::Generic(g) => &g.regions,
            _ => continue,
        };
        let mut inner = regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops);
        if let Some(f) = find_func(&mut inner, start) {
            return Some(f);
        }
    }
    None
}

/// [`Lower::func_defs_of`] for the `mentioned` names, found through the old body's sorted
/// op keys instead of a walk over every op, where that gives the same table: no op has
/// regions (nested definitions) or more than one group of results (a key `%a,%b`), and no
/// block has a label. Then a name's definition is the last top-level op whose key is the
/// name (later definitions replace earlier ones there), else the last argument of that name.
/// `None` where the walk is needed.
fn defs_by_key<'a>(
    f: &'a ast::FuncOp,
    region: &'a ast::Region,
    ops: &[&'a ast::Op],
    body: &FuncBody,
    mentioned: &[&str],
) -> Option<FxHashMap<&'a str, Def>> {
    if region.blocks.iter().any(|b| b.label.is_some())
        || body.ops.len() != ops.len()
        || body.keys.len() != ops.len()
        || body.apart > 0
    {
        return None;
    }
    let mut defs = FxHashMap::default();
    for &name in mentioned {
        // The index keeps the last op of a key: the last definition.
        if let Some(i) = Name::lookup(name).and_then(|n| body.defs.get(n)) {
            let (text, def) = result_def(ops.get(i as usize)?, i, name)?;
            defs.insert(text, def);
        } else if let Some((text, def)) = arg_def(f, name) {
            defs.insert(text, def);
        }
    }
    Some(defs)
}

/// [`defs_by_key`] for a window of ops replaced (`window`: its first index, the ops removed
/// and added): the definitions of `mentioned` in the new body `ops`, from the old body's key
/// index with the indices after the window moved, and the window's new ops. Where a key
/// lookup cannot stand for the walk (as for `defs_by_key`), `None`. The window's new keys
/// are defined nowhere else (the caller checked), so a name a new op defines is defined
/// there alone.
fn window_defs<'a>(
    f: &'a ast::FuncOp,
    region: &'a ast::Region,
    ops: &'a [ast::Op],
    body: &FuncBody,
    (i, removed, added): (usize, usize, usize),
    mentioned: &[&str],
) -> Option<FxHashMap<&'a str, Def>> {
    if region.blocks.iter().any(|b| b.label.is_some())
        || body.keys.len() != body.ops.len()
        || ops.len() != body.ops.len() - removed + added
        || body.apart > 0
    {
        return None;
    }
    let new_ops = ops.get(i..i + added)?;
    let nests = |o: &ast::Op| match &o.body {
        ast::OpBody::Generic(g) => !g.regions.is_empty(),
        ast::OpBody::Module(_) | ast::OpBody::Func(_) | ast::OpBody::RegionOp(_) => true,
        _ => false,
    };
    if new_ops.iter().any(|o| nests(o) || o.results.len() > 1) {
        return None;
    }
    // The window's own definitions by name: a window from a rename's definition to its last
    // use can hold many ops, each mentioning a few names.
    let window: FxHashMap<&str, usize> = new_ops
        .iter()
        .enumerate()
        .filter_map(|(k, o)| Some((o.results.first()?.name.text.as_str(), k)))
        .collect();
    let mut defs = FxHashMap::default();
    for &name in mentioned {
        let at = match window.get(name).copied() {
            Some(k) => Some(i + k),
            None => Name::lookup(name).and_then(|n| body.defs.get(n)).and_then(|j| {
                let j = j as usize;
                if j < i {
                    Some(j)
                } else if j >= i + removed {
                    Some(j - removed + added)
                } else {
                    // Defined by a removed op only (a key defined twice is refused earlier).
                    None
                }
            }),
        };
        if let Some(j) = at {
            let (text, def) = result_def(ops.get(j)?, j as u32, name)?;
            defs.insert(text, def);
        } else if let Some((text, def)) = arg_def(f, name) {
            defs.insert(text, def);
        }
    }
    Some(defs)
}

/// The definition of `name` by op `o` (body index `j`) when the op's one result group is
/// named so (its key is the name); `None` where a key lookup cannot stand for the walk.
fn result_def<'a>(o: &'a ast::Op, j: u32, name: &str) -> Option<(&'a str, Def)> {
    let [r] = o.results.as_slice() else { return None };
    if r.name.text != name {
        return None;
    }
    let value = ValueRef::Result { op: Name::new(name), index: 0 };
    Some((r.name.text.as_str(), Def { value, op: j, count: r.count }))
}

/// The last argument of `f` named `name` (later ones shadow earlier ones, as lowering has it).
fn arg_def<'a>(f: &'a ast::FuncOp, name: &str) -> Option<(&'a str, Def)> {
    // Printed IR names argument `k` `%argk`: look there first, since a function can have
    // tens of thousands of arguments (weights). Names are unique here (a window is not
    // lowered alone while a `duplicate-value` is reported), so the first match is the one.
    let at = |k: usize| f.args.get(k)?.name.as_ref().filter(|n| n.text == name);
    if let Some(k) = name.strip_prefix("%arg").and_then(|k| k.parse::<usize>().ok())
        && let Some(n) = at(k)
    {
        return Some((n.text.as_str(), Def::other(ValueRef::Arg(k as u32), 1)));
    }
    let (k, n) = f
        .args
        .iter()
        .enumerate()
        .rev()
        .find_map(|(k, a)| a.name.as_ref().filter(|n| n.text == name).map(|n| (k, n)))?;
    Some((n.text.as_str(), Def::other(ValueRef::Arg(k as u32), 1)))
}

/// Moves the ranges of a source map with `shift`: those of the function itself and of its
/// ops from `first` on (the ops before it end before the edit: a function's ops are in text
/// order).
fn shift_source_map(sm: &mut FuncSourceMap, first: usize, shift: &impl Fn(&mut TextRange)) {
    shift(&mut sm.range);
    shift(&mut sm.name_range);
    sm.arg_ranges.iter_mut().for_each(shift);
    let ops = sm.op_ranges.get_mut(first..).unwrap_or_default();
    let names = sm.op_name_ranges.get_mut(first..).unwrap_or_default();
    ops.iter_mut().chain(names).for_each(shift);
    sm.result_ranges
        .tail_mut(first)
        .chain(sm.operand_ranges.tail_mut(first))
        .chain(sm.result_type_ranges.tail_mut(first))
        .for_each(shift);
    if let Some(r) = &mut sm.return_range {
        shift(r);
    }
    sm.return_operand_ranges.iter_mut().for_each(shift);
}

fn lower_chunk(
    text: &str,
    tokens: &[syntax::Token],
    chunk_idx: u32,
    chunk: &ast::Chunk,
    out: &mut LoweredFile,
) {
    let mut diags = Vec::new();
    let aliases = Aliases::collect(chunk, &mut diags);
    let mut cx = Lower::new(text, tokens, &aliases, chunk_idx);
    cx.diags = diags;
    // Decode every alias definition once, so a malformed one is reported at its definition
    // even if nothing uses it.
    for item in &chunk.items {
        if let ast::Item::AttrAlias(a) = item {
            cx.alias_attr(&a.name.text[1..], a.name.range);
        }
    }
    for item in &chunk.items {
        if let ast::Item::Op(op) = item {
            cx.walk_op(op);
        }
    }
    out.funcs.append(&mut cx.funcs);
    out.diagnostics.append(&mut cx.diags);
    if out.device.is_none() {
        out.device = cx.device;
    }
    if out.system_desc.is_none() {
        out.system_desc = cx.system_desc;
    }
}

/// A chunk's aliases by name (without the sigil).
struct Aliases<'a> {
    attr: FxHashMap<&'a str, &'a ast::Attr>,
    ty: FxHashMap<&'a str, &'a ast::Type>,
    loc: FxHashMap<&'a str, &'a ast::Location>,
}

impl<'a> Aliases<'a> {
    /// The aliases of `chunk`; a name defined twice is reported to `diags`.
    fn collect(chunk: &'a ast::Chunk, diags: &mut Vec<Diagnostic>) -> Aliases<'a> {
        let mut a = Aliases {
            attr: FxHashMap::default(),
            ty: FxHashMap::default(),
            loc: FxHashMap::default(),
        };
        for item in &chunk.items {
            let (name, dup) = match item {
                ast::Item::AttrAlias(d) => {
                    (&d.name, a.attr.insert(&d.name.text[1..], &d.value).is_some())
                }
                ast::Item::TypeAlias(d) => {
                    (&d.name, a.ty.insert(&d.name.text[1..], &d.value).is_some())
                }
                ast::Item::LocAlias(d) => {
                    (&d.name, a.loc.insert(&d.name.text[1..], &d.loc).is_some())
                }
                _ => continue,
            };
            if dup {
                diags.push(error(
                    name.range,
                    "duplicate-alias",
                    format!("`{}` is defined twice", name.text),
                ));
            }
        }
        a
    }
}

/// Gives a generic-form op the model its custom form lowers to.
///
/// `syntax::print` writes ops of the custom forms MLIR only knows with their dialect
/// registered (`ttnn.d2m_subgraph @f ins(..) outs(..)`, `ttcore.load_cached(@f, [..])`) in
/// the generic form, so `mlir-opt --allow-unregistered-dialect` accepts the output:
///
/// ```text
/// %0 = "ttnn.d2m_subgraph"(%a, %out) <{d2m_func = @f, operandSegmentSizes = array<i32: 1, 1>}> : ...
/// %1:2 = "ttcore.load_cached"(%a, %b) <{callee = @f_const_eval_0}> : ...
/// ```
///
/// Both spellings are one op, so both must lower to one `OpData`; otherwise reprinting a file
/// would change its model (and every query keyed on it). The properties that only encode the
/// custom syntax move into `form` and `callee`.
fn generic_to_custom_form(data: &mut OpData) {
    let symbol = |v: Option<&AttrValue>| match v {
        Some(AttrValue::SymbolRef(p)) => p.first().cloned(),
        _ => None,
    };
    match data.name.as_str() {
        "ttnn.d2m_subgraph" => {
            let callee =
                symbol(data.properties.iter().find(|(k, _)| k == "d2m_func").map(|e| &e.1));
            let segments = data
                .properties
                .iter()
                .find(|(k, _)| k == "operandSegmentSizes")
                .and_then(|(_, v)| v.as_ints());
            let Some((callee, &[ins, outs])) = callee.zip(segments.as_deref()) else { return };
            let (Ok(ins), Ok(outs)) = (u32::try_from(ins), u32::try_from(outs)) else { return };
            data.form = OpForm::D2mSubgraph { ins, outs };
            data.callee = Some(callee);
            data.properties.retain(|(k, _)| k != "d2m_func" && k != "operandSegmentSizes");
        }
        "ttcore.load_cached" => {
            let [(key, value)] = data.properties.as_slice() else { return };
            let Some(callee) = symbol(Some(value)).filter(|_| key == "callee") else { return };
            data.form = OpForm::LoadCached;
            data.callee = Some(callee);
            data.properties.clear();
        }
        _ => {}
    }
}

/// A function region's ops in order (all blocks'), without the terminator, and the
/// terminator if the last op is a `return`.
fn split_terminator(region: &ast::Region) -> (Option<&ast::Op>, Vec<&ast::Op>) {
    let top: Vec<&ast::Op> = region.blocks.iter().flat_map(|b| b.ops.iter()).collect();
    let terminator = top.last().filter(|o| matches!(o.body, ast::OpBody::Return(_))).copied();
    let ops = top.into_iter().filter(|o| !matches!(o.body, ast::OpBody::Return(_))).collect();
    (terminator, ops)
}

/// An op's key in its function: its result names, or for an op without results its name
/// and its ordinal among such ops of that name (`ordinals` counts them as ops go by).
fn op_key(o: &ast::Op, ordinals: &mut FxHashMap<String, u32>) -> String {
    if o.results.is_empty() {
        let n = ordinals.entry(o.name.text.clone()).or_insert(0);
        *n += 1;
        format!("{}#{}", o.name.text, *n - 1)
    } else {
        results_key(o)
    }
}

/// The key of an op with results: their names, joined by commas.
fn results_key(o: &ast::Op) -> String {
    o.results.iter().map(|r| r.name.text.as_str()).collect::<Vec<_>>().join(",")
}

fn error(range: TextRange, code: &'static str, message: String) -> Diagnostic {
    Diagnostic { range, severity: Severity::Error, code, message }
}

struct Lower<'a> {
    text: &'a str,
    /// The file's tokens, or those with current positions when re-lowering one op (see
    /// `Parse::with_current`).
    tokens: &'a [syntax::Token],
    decode: DecodeCtx<'a>,
    type_aliases: &'a FxHashMap<&'a str, &'a ast::Type>,
    loc_aliases: &'a FxHashMap<&'a str, &'a ast::Location>,
    diags: Vec<Diagnostic>,
    /// Types by normalized spelling: large files repeat the same few types thousands of times.
    ty_cache: FxHashMap<String, Ty>,
    /// Types by spelling as written, looked up first: printed IR spells a type the same way
    /// each time, and normalizing the spelling for `ty_cache` cost a third of lowering.
    raw_ty_cache: FxHashMap<&'a str, Ty>,
    /// Attribute aliases, converted once each.
    alias_attr_cache: FxHashMap<String, AttrValue>,
    func_counts: FxHashMap<String, u32>,
    chunk: u32,
    funcs: Vec<LoweredFunc>,
    device: Option<DeviceDesc>,
    system_desc: Option<SystemDesc>,
}

/// A value definition inside a function: the value of its first result, the defining op's
/// index among the function's ops (`u32::MAX` for other values; use-before-def and operand
/// types read it while the body is still being built), and how many results the name
/// covers (`%0:3` covers 3).
#[derive(Clone, Copy)]
struct Def {
    value: ValueRef,
    op: u32,
    count: u32,
}

impl Def {
    /// A definition that is not an op result.
    fn other(value: ValueRef, count: u32) -> Def {
        Def { value, op: u32::MAX, count }
    }
}

/// The type of `v`, whose defining op (if a result) is op `op` of `body`: `body` may be
/// partly built, and then a use before its definition has no type yet.
fn def_type(body: &FuncBody, v: ValueRef, op: u32) -> Option<&Ty> {
    match v {
        ValueRef::Arg(i) => body.args.get(i as usize),
        ValueRef::Result { index, .. } => {
            body.ops.get(op as usize).and_then(|o| o.results.get(index as usize))
        }
        ValueRef::Unknown => None,
    }
}

impl<'a> Lower<'a> {
    fn new(
        text: &'a str,
        tokens: &'a [syntax::Token],
        aliases: &'a Aliases<'a>,
        chunk: u32,
    ) -> Lower<'a> {
        Lower {
            text,
            tokens,
            decode: DecodeCtx { text, tokens, attr_aliases: &aliases.attr },
            type_aliases: &aliases.ty,
            loc_aliases: &aliases.loc,
            diags: Vec::new(),
            raw_ty_cache: FxHashMap::default(),
            ty_cache: FxHashMap::default(),
            alias_attr_cache: FxHashMap::default(),
            func_counts: FxHashMap::default(),
            chunk,
            funcs: Vec::new(),
            device: None,
            system_desc: None,
        }
    }

    fn norm(&self, range: TextRange) -> String {
        syntax::normalized_text(self.text, self.tokens, range)
    }

    fn walk_op(&mut self, op: &'a ast::Op) {
        match &op.body {
            ast::OpBody::Module(m) => {
                if let Some(attrs) = &m.attrs {
                    self.module_attrs(attrs);
                }
                self.walk_region(&m.body);
            }
            ast::OpBody::RegionOp(r) => self.walk_region(&r.body),
            ast::OpBody::Func(f) => self.func(op, f),
            ast::OpBody::DeviceDecl(d) => self.device_attr(&d.value),
            ast::OpBody::Generic(g) => {
                // `syntax::print` writes `ttcore.device @d = <...>` in MLIR's generic form,
                // `"ttcore.device"() <{device = #ttcore.device<...>, sym_name = "d"}>`, which
                // MLIR reads without the ttcore dialect. Both spell the same declaration, so a
                // printed file must keep its device.
                if op.name.text == "ttcore.device"
                    && let Some(value) = g
                        .properties
                        .as_ref()
                        .and_then(|p| p.get("device"))
                        .and_then(|e| e.value.as_ref())
                {
                    self.device_attr(value);
                }
                for r in &g.regions {
                    self.walk_region(r);
                }
            }
            _ => {}
        }
    }

    fn walk_region(&mut self, region: &'a ast::Region) {
        for block in &region.blocks {
            for op in &block.ops {
                self.walk_op(op);
            }
        }
    }

    fn module_attrs(&mut self, attrs: &ast::AttrDict) {
        for e in &attrs.entries {
            if e.key.text == "ttcore.system_desc"
                && let Some(v) = &e.value
                && let AttrValue::Dialect { decoded: Some(d), .. } = self.attr(v)
                && let Decoded::SystemDesc(sd) = *d
            {
                self.system_desc.get_or_insert(sd);
            }
        }
    }

    /// The device of `ttcore.device @d = <...>` (or its generic `device` property).
    fn device_attr(&mut self, value: &ast::Attr) {
        let decoded = match &value.kind {
            ast::AttrKind::Stripped(body) => self.decode.device_body(body),
            ast::AttrKind::Dialect { body: Some(body), .. } => self.decode.device_body(body),
            _ => Err("expected a device description `<...>`".to_owned()),
        };
        match decoded {
            Ok(dev) => {
                self.device.get_or_insert(dev);
            }
            Err(msg) => self.diags.push(error(value.range, "invalid-attribute", msg)),
        }
    }

    // ---- types ------------------------------------------------------------------------

    fn ty(&mut self, t: &ast::Type) -> Ty {
        let raw = t.range.slice(self.text);
        if let Some(ty) = self.raw_ty_cache.get(raw) {
            return ty.clone();
        }
        let key = self.norm(t.range);
        let ty = match self.ty_cache.get(&key) {
            Some(ty) => ty.clone(),
            None => {
                let ty = self.ty_uncached(t, 0);
                self.ty_cache.insert(key, ty.clone());
                ty
            }
        };
        self.raw_ty_cache.insert(raw, ty.clone());
        ty
    }

    fn ty_uncached(&mut self, t: &ast::Type, depth: u32) -> Ty {
        match &t.kind {
            ast::TypeKind::Tensor { shape, elem, encoding } => {
                let element = match self.element(elem, depth) {
                    Some(e) => e,
                    None => return Ty::Other(self.norm(t.range)),
                };
                let mut tt = TensorType {
                    shape: shape.clone(),
                    element,
                    layout: None,
                    other_encoding: None,
                };
                if let Some(enc) = encoding {
                    match self.attr(enc) {
                        AttrValue::Dialect { decoded: Some(d), text, .. } => match *d {
                            Decoded::Layout(l) => {
                                self.check_layout_bounds(&l, enc.range);
                                self.check_layout(&tt, &l, enc.range);
                                tt.layout = Some(l);
                            }
                            _ => tt.other_encoding = Some(text),
                        },
                        AttrValue::Dialect { text, .. } => tt.other_encoding = Some(text),
                        _ => tt.other_encoding = Some(self.norm(enc.range)),
                    }
                }
                self.check_tensor_size(&tt, t.range);
                Ty::Tensor(tt)
            }
            ast::TypeKind::Dialect { dialect, name, .. }
                if dialect == "ttnn" && name == "device" =>
            {
                Ty::Device
            }
            ast::TypeKind::Alias(name) => {
                if depth > 16 {
                    self.diags.push(error(
                        t.range,
                        "alias-cycle",
                        format!("type alias `!{name}` is defined in a cycle"),
                    ));
                    return Ty::Unknown;
                }
                match self.type_aliases.get(name.as_str()) {
                    Some(target) => self.ty_uncached(target, depth + 1),
                    None => {
                        self.diags.push(error(
                            t.range,
                            "unknown-alias",
                            format!("unknown type alias `!{name}`"),
                        ));
                        Ty::Unknown
                    }
                }
            }
            _ => Ty::Other(self.norm(t.range)),
        }
    }

    fn element(&mut self, t: &ast::Type, depth: u32) -> Option<ElementType> {
        match &t.kind {
            ast::TypeKind::Builtin(kw) => ScalarType::from_keyword(kw).map(ElementType::Scalar),
            ast::TypeKind::Dialect { dialect, name, body: Some(body) }
                if dialect == "ttcore" && name == "tile" =>
            {
                let toks: Vec<syntax::Token> = syntax::body_tokens(self.tokens, body)
                    .iter()
                    .copied()
                    .filter(|t| !t.kind.is_trivia())
                    .collect();
                let text =
                    toks.iter().map(|t| t.range.slice(self.text)).collect::<Vec<_>>().join(" ");
                match parse_tile(&text) {
                    Some(e) => Some(e),
                    None => {
                        self.diags.push(error(
                            t.range,
                            "invalid-type",
                            "expected `!ttcore.tile<HxW, dtype>`".to_owned(),
                        ));
                        None
                    }
                }
            }
            ast::TypeKind::Alias(name) if depth < 16 => {
                let target = *self.type_aliases.get(name.as_str())?;
                self.element(target, depth + 1)
            }
            _ => None,
        }
    }

    /// Refuses a tensor whose size in bytes does not fit in 64 bits (with its last two dims
    /// padded to whole tiles, as the op model and the L1 accounting size it): every later
    /// computation on it would overflow.
    fn check_tensor_size(&mut self, tt: &TensorType, range: TextRange) {
        let Some(shape) = tt.static_shape() else { return };
        if padded_bytes(&shape, tt.element.bytes()).is_none() {
            self.diags.push(error(
                range,
                "tensor-too-large",
                "this tensor's size in bytes overflows 64 bits: no device can hold it".to_owned(),
            ));
        }
    }

    /// Refuses a layout on a grid with no cores, or whose shard does not fit in 64 bits.
    fn check_layout_bounds(&mut self, l: &ttnn_types::TtnnLayout, range: TextRange) {
        if l.grid.contains(&0) {
            let grid = l.grid.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
            self.diags.push(error(
                range,
                "zero-sized-grid",
                format!(
                    "the layout's grid is {grid}: a grid needs at least one core in each dimension"
                ),
            ));
        }
        let shard =
            l.memref_shape.iter().try_fold(l.memref_element.bytes(), |acc, &d| acc.checked_mul(d));
        if shard.is_none() {
            self.diags.push(error(
                range,
                "tensor-too-large",
                "this layout's shard size in bytes overflows 64 bits: no core can hold it"
                    .to_owned(),
            ));
        }
    }

    /// Warns when a layout's memref does not match the tensor it encodes.
    fn check_layout(&mut self, tt: &TensorType, l: &ttnn_types::TtnnLayout, range: TextRange) {
        let Some(shape) = tt.static_shape() else { return };
        let worker = ttnn_types::Grid::new(8, 8);
        if let Some(expected) = l.expected_memref_shape(&shape, worker)
            && expected[..] != l.memref_shape[..]
            && l.grid.len() == 2
        {
            let show = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
            self.diags.push(Diagnostic {
                range,
                severity: Severity::Warning,
                code: "layout-shape-mismatch",
                message: format!(
                    "layout memref is {}, but a {} tensor in this layout needs {}",
                    show(&l.memref_shape),
                    show(&shape),
                    show(&expected)
                ),
            });
        }
    }

    // ---- attributes -------------------------------------------------------------------

    fn alias_attr(&mut self, name: &str, use_range: TextRange) -> AttrValue {
        if let Some(v) = self.alias_attr_cache.get(name) {
            return v.clone();
        }
        let Some(target) = self.decode.attr_aliases.get(name).copied() else {
            self.diags.push(error(
                use_range,
                "unknown-alias",
                format!("unknown attribute alias `#{name}`"),
            ));
            return AttrValue::Other(format!("#{name}"));
        };
        // Guard against alias cycles before recursing.
        self.alias_attr_cache.insert(name.to_owned(), AttrValue::Other(format!("#{name}")));
        let v = self.attr(target);
        self.alias_attr_cache.insert(name.to_owned(), v.clone());
        v
    }

    fn attr(&mut self, a: &ast::Attr) -> AttrValue {
        match &a.kind {
            ast::AttrKind::Alias(name) => self.alias_attr(name, a.range),
            ast::AttrKind::Dialect { dialect, mnemonic, body } => {
                let name = match mnemonic {
                    Some(m) => format!("{dialect}.{m}"),
                    None => dialect.clone(),
                };
                let decoded = match self.decode.dialect(dialect, mnemonic.as_deref(), body.as_ref())
                {
                    Ok(d) => d.map(Box::new),
                    Err(msg) => {
                        self.diags.push(error(
                            a.range,
                            "invalid-attribute",
                            format!("invalid `#{name}`: {msg}"),
                        ));
                        None
                    }
                };
                AttrValue::Dialect { name, text: self.norm(a.range), decoded }
            }
            ast::AttrKind::Int { text, ty } => {
                let value = parse_int(text);
                match value {
                    Some(value) => {
                        AttrValue::Int { value, ty: ty.as_ref().map(|t| self.norm(t.range)) }
                    }
                    None => {
                        self.diags.push(error(
                            a.range,
                            "invalid-integer",
                            format!("integer `{text}` is out of range"),
                        ));
                        AttrValue::Other(text.clone())
                    }
                }
            }
            ast::AttrKind::Float { text, ty } => {
                AttrValue::Float { text: text.clone(), ty: ty.as_ref().map(|t| self.norm(t.range)) }
            }
            ast::AttrKind::Bool(b) => AttrValue::Bool(*b),
            ast::AttrKind::Str { value, .. } => AttrValue::Str(value.clone()),
            ast::AttrKind::Unit => AttrValue::Unit,
            ast::AttrKind::Array(items) => {
                AttrValue::Array(items.iter().map(|i| self.attr(i)).collect())
            }
            ast::AttrKind::DenseArray { elem, values } => {
                AttrValue::DenseArray { elem: self.norm(elem.range), values: values.clone() }
            }
            ast::AttrKind::Dict(d) => AttrValue::Dict(self.dict(d)),
            ast::AttrKind::SymbolRef(path) => AttrValue::SymbolRef(path.clone()),
            ast::AttrKind::Type(t) => AttrValue::Type(self.ty(t)),
            ast::AttrKind::Keyword(k) => AttrValue::Keyword(k.clone()),
            _ => AttrValue::Other(self.norm(a.range)),
        }
    }

    /// Entries sorted by key, as MLIR's dictionary attribute stores them.
    fn dict(&mut self, d: &ast::AttrDict) -> Vec<(String, AttrValue)> {
        let mut entries: Vec<(String, AttrValue)> = d
            .entries
            .iter()
            .map(|e| {
                let v = e.value.as_ref().map_or(AttrValue::Unit, |v| self.attr(v));
                (e.key.text.clone(), v)
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }

    /// The top-level `loc("name")` of an op, following aliases, with the name it wraps
    /// (`loc("op_1"("op"))`): the importer's record of a name it made unique.
    fn loc_name(&mut self, loc: Option<&ast::LocSpec>) -> Option<OpLoc> {
        let l = self.resolve_loc(&loc?.loc)?;
        let ast::LocKind::Name { name, child } = &l.kind else { return None };
        let written_as = child.as_deref().and_then(|c| match &self.resolve_loc(c)?.kind {
            ast::LocKind::Name { name, .. } => Some(Name::new(name)),
            _ => None,
        });
        Some(OpLoc { name: Name::new(name), written_as })
    }

    /// `l` with location aliases followed (a bounded number of them, so a cycle ends).
    fn resolve_loc<'l>(&mut self, mut l: &'l ast::Location) -> Option<&'l ast::Location>
    where
        'a: 'l,
    {
        for _ in 0..16 {
            match &l.kind {
                ast::LocKind::Alias(a) => match self.loc_aliases.get(a.as_str()) {
                    Some(target) => l = target,
                    None => {
                        self.diags.push(error(
                            l.range,
                            "unknown-alias",
                            format!("unknown location alias `#{a}`"),
                        ));
                        return None;
                    }
                },
                _ => return Some(l),
            }
        }
        None
    }

    // ---- functions --------------------------------------------------------------------

    fn func(&mut self, op: &'a ast::Op, f: &'a ast::FuncOp) {
        let name = f.sym_name.text.trim_start_matches('@').to_owned();
        let dup = {
            let c = self.func_counts.entry(name.clone()).or_insert(0);
            *c += 1;
            *c - 1
        };
        if dup > 0 {
            self.diags.push(error(
                f.sym_name.range,
                "duplicate-function",
                format!("function `@{name}` is defined twice"),
            ));
        }
        let function_type =
            f.attrs.as_ref().and_then(|a| a.get("tt.function_type")).and_then(|e| {
                match e.value.as_ref().map(|v| &v.kind) {
                    Some(ast::AttrKind::Str { value, .. }) => Some(value.clone()),
                    _ => None,
                }
            });
        let mut body = FuncBody {
            name: name.clone(),
            is_private: f.visibility.as_ref().is_some_and(|v| v.text == "private"),
            function_type,
            arg_names: Arc::default(),
            args: Arc::default(),
            results: Vec::new(),
            ops: Vec::new(),
            returns: Vec::new(),
            has_body: f.body.is_some(),
            keys: Arc::default(),
            defs: DefIndex::default(),
            apart: 0,
        };
        let mut sm = FuncSourceMap {
            range: op.range,
            name_range: f.sym_name.range,
            chunk: self.chunk,
            ..FuncSourceMap::default()
        };
        let mut locs: Vec<Option<OpLoc>> = Vec::new();
        let mut args = Vec::with_capacity(f.args.len());
        let mut arg_names = Vec::with_capacity(f.args.len());
        for (i, a) in f.args.iter().enumerate() {
            args.push(self.ty(&a.ty));
            sm.arg_ranges.push(a.range);
            arg_names.push(a.name.as_ref().map_or_else(|| format!("%arg{i}"), |n| n.text.clone()));
        }
        body.args = args.into();
        body.arg_names = arg_names.into();
        // Results after arguments, so a problem shared by both is reported where it is
        // first written.
        body.results = f.results.iter().map(|r| self.ty(&r.ty)).collect();
        let Some(region) = &f.body else {
            self.func_defs(f, None, &[]);
            self.push_func(name, dup, body, sm, locs);
            return;
        };
        let (terminator, ops) = split_terminator(region);
        let defs = self.func_defs(f, Some(region), &ops);
        let mut zero_result_ordinals: FxHashMap<String, u32> = FxHashMap::default();
        for (i, o) in ops.iter().enumerate() {
            let key = op_key(o, &mut zero_result_ordinals);
            let data = self.op(o, key, i as u32, &defs, &body, &mut sm);
            locs.push(self.loc_name(o.loc.as_ref()));
            body.ops.push(Arc::new(data));
        }
        if let Some(term) = terminator
            && let ast::OpBody::Return(r) = &term.body
        {
            sm.return_range = Some(term.range);
            let mut return_ops = Vec::with_capacity(r.operands.len());
            for u in &r.operands {
                let (v, op) = self.resolve(u, &defs, u32::MAX);
                body.returns.push(v);
                return_ops.push(op);
                sm.return_operand_ranges.push(u.range);
            }
            self.check_return(f, r, &body, &return_ops);
        } else if !ops.is_empty() {
            let range = region.range;
            self.diags.push(Diagnostic {
                range: TextRange::new(range.end.saturating_sub(1), range.end),
                severity: Severity::Error,
                code: "missing-return",
                message: format!("function `@{name}` does not end with `return`"),
            });
        }
        self.push_func(name, dup, body, sm, locs);
    }

    /// Every name a function body defines: its arguments, block arguments, op results (by
    /// op index among `ops`) and, untracked, values defined inside ops' regions. A name
    /// defined twice is reported and the later definition wins.
    fn func_defs(
        &mut self,
        f: &'a ast::FuncOp,
        region: Option<&'a ast::Region>,
        ops: &[&'a ast::Op],
    ) -> FxHashMap<&'a str, Def> {
        self.func_defs_of(f, region, ops, &|_| true)
    }

    /// [`Lower::func_defs`] restricted to the names `keep` accepts: the same definitions of
    /// those names (the same order, so the same one wins), without hashing the others in.
    fn func_defs_of(
        &mut self,
        f: &'a ast::FuncOp,
        region: Option<&'a ast::Region>,
        ops: &[&'a ast::Op],
        keep: &dyn Fn(&str) -> bool,
    ) -> FxHashMap<&'a str, Def> {
        let mut defs: FxHashMap<&'a str, Def> = FxHashMap::default();
        for (i, a) in f.args.iter().enumerate() {
            if let Some(n) = &a.name
                && keep(&n.text)
                && defs.insert(&n.text, Def::other(ValueRef::Arg(i as u32), 1)).is_some()
            {
                self.diags.push(error(
                    n.range,
                    "duplicate-value",
                    format!("`{}` is defined twice", n.text),
                ));
            }
        }
        // Block arguments of later blocks are defined but untracked (TTNN bodies have one
        // block).
        for block in region.iter().flat_map(|r| &r.blocks) {
            if let Some(label) = &block.label {
                for a in label.args.iter().filter(|a| keep(&a.name.text)) {
                    defs.entry(a.name.text.as_str()).or_insert(Def::other(ValueRef::Unknown, 1));
                }
            }
        }
        // Definitions first, so uses can refer to any op (and use-before-def is reported
        // with a precise message rather than as an undefined value).
        for (i, o) in ops.iter().enumerate() {
            let mut index = 0u32;
            // The op's key (its result names), interned once the op defines a kept name.
            let mut name = None;
            for r in &o.results {
                if !keep(&r.name.text) {
                    index += r.count;
                    continue;
                }
                let op = *name.get_or_insert_with(|| Name::new(&results_key(o)));
                let value = ValueRef::Result { op, index };
                if defs.insert(&r.name.text, Def { value, op: i as u32, count: r.count }).is_some()
                {
                    self.diags.push(error(
                        r.name.range,
                        "duplicate-value",
                        format!("`{}` is defined twice", r.name.text),
                    ));
                }
                index += r.count;
            }
            self.define_nested(o, &mut defs, keep);
        }
        defs
    }

    fn push_func(
        &mut self,
        name: String,
        dup: u32,
        mut body: FuncBody,
        sm: FuncSourceMap,
        locs: Vec<Option<OpLoc>>,
    ) {
        // Without the index `FuncBody::op_index` falls back to a linear search, and every
        // per-op query (`op_signature`, `op_overrides`, ...) looks its op up by key: a 10k-op
        // function then spends most of an override edit comparing keys.
        body.index_keys();
        let loc_names = LocNames::of_ops(body.keys.iter().copied().zip(locs));
        self.funcs.push(LoweredFunc {
            chunk: self.chunk,
            name,
            dup,
            body: Arc::new(body),
            source_map: Arc::new(sm),
            loc_names: Arc::new(loc_names),
        });
    }

    /// Values defined inside an op's regions are visible there; record them as untracked.
    fn define_nested(
        &mut self,
        o: &'a ast::Op,
        defs: &mut FxHashMap<&'a str, Def>,
        keep: &dyn Fn(&str) -> bool,
    ) {
        let regions: &[ast::Region] = match &o.body {
            ast::OpBody::Generic(g) => &g.regions,
            _ => return,
        };
        for r in regions {
            for b in &r.blocks {
                if let Some(label) = &b.label {
                    for a in label.args.iter().filter(|a| keep(&a.name.text)) {
                        defs.entry(a.name.text.as_str())
                            .or_insert(Def::other(ValueRef::Unknown, 1));
                    }
                }
                for nested in &b.ops {
                    for res in nested.results.iter().filter(|r| keep(&r.name.text)) {
                        defs.entry(res.name.text.as_str())
                            .or_insert(Def::other(ValueRef::Unknown, res.count));
                    }
                    self.define_nested(nested, defs, keep);
                }
            }
        }
    }

    /// The value `u` uses, and the index of its defining op among the function's ops
    /// (`u32::MAX` if it is not an op result); `user` is the using op's index (`u32::MAX`
    /// for the terminator).
    fn resolve(
        &mut self,
        u: &ast::ValueUse,
        defs: &FxHashMap<&'a str, Def>,
        user: u32,
    ) -> (ValueRef, u32) {
        let Some(def) = defs.get(u.name.text.as_str()) else {
            self.diags.push(error(
                u.range,
                "undefined-value",
                format!("use of undefined value `{}`", u.name.text),
            ));
            return (ValueRef::Unknown, u32::MAX);
        };
        let idx = u.index.unwrap_or(0);
        if idx >= def.count {
            self.diags.push(error(
                u.range,
                "invalid-result-number",
                format!("`{}` has {} result(s); `#{idx}` is out of range", u.name.text, def.count),
            ));
            return (ValueRef::Unknown, u32::MAX);
        }
        match def.value {
            ValueRef::Result { op, index } => {
                if def.op >= user && user != u32::MAX {
                    self.diags.push(error(
                        u.range,
                        "use-before-def",
                        format!("`{}` is used before it is defined", u.name.text),
                    ));
                }
                (ValueRef::Result { op, index: index + idx }, def.op)
            }
            other => (other, u32::MAX),
        }
    }

    #[expect(clippy::too_many_lines, reason = "one match over op forms reads best in one place")]
    fn op(
        &mut self,
        o: &'a ast::Op,
        key: String,
        index: u32,
        defs: &FxHashMap<&'a str, Def>,
        body: &FuncBody,
        sm: &mut FuncSourceMap,
    ) -> OpData {
        let mut data = OpData {
            key,
            name: o.name.text.clone(),
            form: OpForm::Generic,
            operands: Vec::new(),
            operand_types: Vec::new(),
            results: Vec::new(),
            properties: Vec::new(),
            attrs: Vec::new(),
            callee: None,
            has_regions: false,
        };
        let mut uses: Vec<&ast::ValueUse> = Vec::new();
        let mut fn_type: Option<&ast::FunctionType> = None;
        let mut result_type_ranges = Vec::new();
        match &o.body {
            ast::OpBody::Generic(g) => {
                uses.extend(&g.operands);
                fn_type = g.fn_type.as_ref();
                if let Some(p) = &g.properties {
                    data.properties = self.dict(p);
                }
                if let Some(a) = &g.attrs {
                    data.attrs = self.dict(a);
                }
                data.has_regions = !g.regions.is_empty();
                data.callee = data.property("callee").and_then(|v| match v {
                    AttrValue::SymbolRef(p) => p.first().cloned(),
                    _ => None,
                });
                generic_to_custom_form(&mut data);
            }
            ast::OpBody::D2mSubgraph(d) => {
                data.form =
                    OpForm::D2mSubgraph { ins: d.ins.len() as u32, outs: d.outs.len() as u32 };
                uses.extend(&d.ins);
                uses.extend(&d.outs);
                data.callee = Some(d.callee.text.trim_start_matches('@').to_owned());
                if let Some(a) = &d.attrs {
                    data.attrs = self.dict(a);
                }
                data.operand_types =
                    d.in_types.iter().chain(&d.out_types).map(|t| self.ty(t)).collect();
                data.results = d.result_types.iter().map(|t| self.ty(t)).collect();
                result_type_ranges = d.result_types.iter().map(|t| t.range).collect();
                if d.in_types.len() != d.ins.len() || d.out_types.len() != d.outs.len() {
                    self.diags.push(error(
                        o.range,
                        "operand-count-mismatch",
                        "`ins`/`outs` list a different number of values and types".to_owned(),
                    ));
                }
            }
            ast::OpBody::Call(c) => {
                data.form = OpForm::Call;
                uses.extend(&c.operands);
                fn_type = c.fn_type.as_ref();
                data.callee = Some(c.callee.text.trim_start_matches('@').to_owned());
            }
            ast::OpBody::LoadCached(l) => {
                data.form = OpForm::LoadCached;
                uses.extend(&l.operands);
                fn_type = l.fn_type.as_ref();
                data.callee = Some(l.callee.text.trim_start_matches('@').to_owned());
            }
            ast::OpBody::TtLang(c) => {
                data.form = OpForm::TtLang;
                uses.extend(&c.operands);
                fn_type = c.fn_type.as_ref();
                if let Some(a) = &c.attrs {
                    data.properties = self.dict(a);
                }
            }
            ast::OpBody::Opaque(op) => {
                data.form = OpForm::Opaque;
                uses.extend(&op.uses);
                data.results = vec![Ty::Unknown; o.result_count() as usize];
                data.attrs = vec![("text".to_owned(), AttrValue::Other(self.norm(op.rest)))];
            }
            ast::OpBody::Error => {
                data.form = OpForm::Other;
                data.results = vec![Ty::Unknown; o.result_count() as usize];
            }
            _ => {
                data.form = OpForm::Other;
                data.results = vec![Ty::Unknown; o.result_count() as usize];
            }
        }
        if let Some(f) = fn_type {
            data.operand_types = f.inputs.iter().map(|t| self.ty(t)).collect();
            data.results = f.results.iter().map(|t| self.ty(t)).collect();
            result_type_ranges = f.results.iter().map(|t| t.range).collect();
            if f.inputs.len() != uses.len() {
                self.diags.push(error(
                    f.range,
                    "operand-count-mismatch",
                    format!(
                        "`{}` has {} operand(s) but its type lists {}",
                        o.name.text,
                        uses.len(),
                        f.inputs.len()
                    ),
                ));
            }
        }
        let declared_results = o.result_count() as usize;
        if declared_results != data.results.len()
            && !matches!(data.form, OpForm::Opaque | OpForm::Other)
        {
            self.diags.push(error(
                o.range,
                "result-count-mismatch",
                format!(
                    "`{}` defines {declared_results} result(s) but its type lists {}",
                    o.name.text,
                    data.results.len()
                ),
            ));
        }
        if data.form == OpForm::Generic {
            self.check_arity(o, uses.len(), declared_results);
        }
        let mut operand_ranges = Vec::new();
        for (i, u) in uses.iter().enumerate() {
            let (v, def) = self.resolve(u, defs, index);
            operand_ranges.push(u.range);
            if let (Some(declared), Some(actual)) =
                (data.operand_types.get(i), def_type(body, v, def))
            {
                self.diags.extend(operand_mismatch(
                    u.range,
                    i,
                    &o.name.text,
                    &u.name.text,
                    declared,
                    actual,
                ));
            }
            data.operands.push(v);
        }
        sm.op_ranges.push(o.range);
        sm.op_name_ranges.push(o.name.range);
        sm.result_ranges.push(o.results.iter().map(|r| r.range));
        sm.operand_ranges.push(operand_ranges);
        sm.result_type_ranges.push(result_type_ranges);
        data
    }

    /// Reports an op of a kind the op model knows with more or fewer operands or results
    /// than its declaration allows: the model reads operands by position.
    fn check_arity(&mut self, o: &ast::Op, operands: usize, results: usize) {
        let Some(a) = opmodel::arity::op_arity(&o.name.text) else { return };
        let expected = |min: u32, max: u32| match (min, max) {
            (min, max) if min == max => format!("{min}"),
            (min, opmodel::arity::ANY) => format!("at least {min}"),
            (min, max) => format!("{min} to {max}"),
        };
        let outside =
            |n: usize, min: u32, max: u32| u32::try_from(n).map_or(true, |n| n < min || n > max);
        if outside(operands, a.min_operands, a.max_operands) {
            self.diags.push(error(
                o.name.range,
                "wrong-operand-count",
                format!(
                    "`{}` takes {} operand(s), but has {operands}",
                    o.name.text,
                    expected(a.min_operands, a.max_operands)
                ),
            ));
        }
        if outside(results, a.min_results, a.max_results) {
            self.diags.push(error(
                o.name.range,
                "wrong-result-count",
                format!(
                    "`{}` has {} result(s), but defines {results}",
                    o.name.text,
                    expected(a.min_results, a.max_results)
                ),
            ));
        }
    }

    /// Checks the terminator `r` against the signature; `defs` are the defining ops' indices
    /// of `body.returns` (see [`Lower::resolve`]).
    fn check_return(&mut self, f: &ast::FuncOp, r: &ast::ReturnOp, body: &FuncBody, defs: &[u32]) {
        if r.operands.len() != body.results.len() {
            self.diags.push(error(
                r.operands.first().map_or(f.sym_name.range, |u| u.range),
                "return-count-mismatch",
                format!(
                    "`return` has {} operand(s) but `{}` returns {}",
                    r.operands.len(),
                    f.sym_name.text,
                    body.results.len()
                ),
            ));
            return;
        }
        for (i, ((u, v), &def)) in r.operands.iter().zip(&body.returns).zip(defs).enumerate() {
            if let (Some(actual), Some(expected)) = (def_type(body, *v, def), body.results.get(i))
                && actual != expected
                && *actual != Ty::Unknown
                && *expected != Ty::Unknown
            {
                self.diags.push(error(
                    u.range,
                    "type-mismatch",
                    format!(
                        "`{}` has type `{actual}` but `{}` returns `{expected}`",
                        u.name.text, f.sym_name.text
                    ),
                ));
            }
        }
    }
}

/// Bytes of a tensor of `shape` with `elem_bytes` per element and its last two dims padded
/// to whole tiles; `None` when that overflows.
fn padded_bytes(shape: &[u64], elem_bytes: u64) -> Option<u64> {
    let n = shape.len();
    shape.iter().enumerate().try_fold(elem_bytes, |acc, (i, &d)| {
        let d = if i + 2 >= n { d.checked_next_multiple_of(ttnn_types::TILE)? } else { d };
        acc.checked_mul(d)
    })
}

fn parse_int(text: &str) -> Option<i128> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let v = match digits.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// `32 x32 , bf16` (tokens joined with spaces) → a tile element type.
fn parse_tile(joined: &str) -> Option<ElementType> {
    let compact: String = joined.chars().filter(|c| !c.is_whitespace()).collect();
    let (shape, dtype) = compact.split_once(',')?;
    let (dims, rest) = syntax::split_dims(shape)?;
    if !rest.is_empty() {
        return None;
    }
    let [Some(h), Some(w)] = dims.as_slice() else { return None };
    let dtype = ttnn_types::DataType::from_keyword(dtype)?;
    Some(ElementType::Tile { height: *h, width: *w, dtype })
}

#[cfg(test)]
mod tests {
    use super::{LOWERING_CODES, OP_LOCAL_CODES, maybe_written_after};
    use crate::Name;

    /// Every code this file reports, read from its source: `error(range, "code", ...)` and
    /// `code: "code"`.
    fn reported_codes() -> Vec<&'static str> {
        let src = include_str!("lower.rs");
        let mut out = Vec::new();
        for (marker, skip_to_quote) in [("error(", true), ("code: \"", false)] {
            for (at, _) in src.match_indices(marker) {
                let rest = &src[at + marker.len()..];
                let rest = if skip_to_quote {
                    // The second argument: past the range expression's comma.
                    let Some(q) = rest.find('"') else { continue };
                    if rest[..q].contains(';') || rest[..q].contains('{') {
                        continue;
                    }
                    &rest[q + 1..]
                } else {
                    rest
                };
                let Some(end) = rest.find('"') else { continue };
                let code = &rest[..end];
                // (`"code"` is this scan's own doc comment.)
                if code.contains('-') && code.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
                    out.push(code);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn every_code_lowering_reports_is_listed_as_a_lowering_code() {
        let reported = reported_codes();
        assert!(reported.len() >= 15, "the scan found the codes: {reported:?}");
        let missing: Vec<_> = reported.iter().filter(|c| !LOWERING_CODES.contains(c)).collect();
        assert!(missing.is_empty(), "codes reported but not in LOWERING_CODES: {missing:?}");
        assert!(OP_LOCAL_CODES.iter().all(|c| LOWERING_CODES.contains(c)));
    }

    #[test]
    fn a_value_counts_as_written_after_only_as_a_whole_value_id() {
        let text = "%a = x\n%ab = y(%a1, %a_b, %a.c, %a-d, %a$e)\n%c = z(%a#1)\n";
        let after_defs = text.find("%c").expect("the last op") as u32;
        let written = |name: &str, from: u32| maybe_written_after(text, from, &[Name::new(name)]);
        // `%a1`, `%a_b`, `%a.c`, `%a-d` and `%a$e` are other values; `%a#1` is `%a`'s.
        assert!(written("%a", after_defs));
        assert!(!written("%a", text.len() as u32));
        let before_c = text.find("%c").expect("the last op") as u32;
        assert!(!written("%ab", before_c));
        assert!(!written("%a", text.find("%a#1").expect("the use") as u32 + 1));
        // A key of several result groups is never written whole: the operands decide.
        assert!(written("%p,%q", text.len() as u32));
        // Past the end of the text: nothing is known, so the operands decide.
        assert!(written("%zzz", text.len() as u32 + 10));
    }
}
