//! The semantic layer: parsing and lowering as salsa queries, with stable ids.
//!
//! Query chain for one function `f` of file `F`:
//!
//! ```text
//! SourceFile.text, SourceFile.parse (LOW; the host parses, patching the parse in place
//! │                               for an edit inside one op)
//! └ lower_file(F)                 no_eq: bodies + source maps + diagnostics
//!   ├ file_funcs(F)               Eq: the function ids; changes only when functions do
//!   ├ func_body(f)                Eq firewall: position-free, so whitespace/comment/loc
//!   │                             edits are backdated here and nothing downstream re-runs
//!   └ func_source_map(f)          no_eq: positions, read only by the IDE layer and CLI
//!
//! func_body(f)
//!   ├ func_frame(f)               Eq: the body without its ops (signature, keys)
//!   │ ├ func_ops(f)               Eq: op ids in program order (not re-run when the keys
//!   │ │                           stay, as after an edit inside one op)
//!   │ └ func_groups(f)            Eq: where the body is cut into groups, by content
//!   └ func_group(f, g)            Eq: the ops of one group (pointer-compared, backdated)
//!     └ func_group_at(f, start)   Eq: the same, keyed by the group's first op's name
//! lower_file(F) ─► func_loc_names(f)   the `loc("name")` of each op (override keys)
//! ```
//!
//! Nothing here is written by the host: every value is a projection of the lowering, and
//! an unchanged one is backdated, so what reads only unchanged groups is not re-run.
//!
//! Ids are built from names: a function is (file, chunk, symbol, duplicate index), an op is
//! (function, result SSA names). Inserting an op with a fresh name above another leaves the
//! other's id, and so every per-op query keyed by it, untouched.

mod decode;
mod groups;
mod lower;
mod model;
mod name;

use std::sync::{Arc, Mutex};

use base_db::SourceFile;
use rustc_hash::FxHashMap;
use syntax::Parse;

pub use crate::{
    groups::{
        BodyView, FuncFrame, GROUP_OPS, GroupLayout, GroupOps, MAX_GROUP_OPS, NO_OP, OpsView,
        SEGMENT_GROUPS, SEGMENT_OPS, func_frame, func_group, func_group_at, func_groups,
        func_loc_names, func_segment_at, func_segments, group_named, group_start, segment_uses,
        uses_of,
    },
    lower::{lower_file as lower_parse, relower_edit},
    model::{
        AttrValue, ChipDesc, Decoded, DefIndex, DeviceDesc, Diagnostic, FuncBody, FuncSourceMap,
        LocNames, LoweredFile, LoweredFunc, MemoryConfig, OpData, OpForm, OpLoc, Severity,
        ShardSpec, SystemDesc, Ty, ValueRef,
    },
    name::Name,
};

#[salsa::db]
pub trait Db: base_db::Db {
    /// The last lowering of each file (see [`LoweringCache`]).
    fn lowering_cache(&self) -> &LoweringCache;
}

/// The last lowering of each file and the text it was made from, so that after an edit
/// inside one op (`SourceFile::last_edit`) [`lower_file`] lowers that op again and reuses
/// the rest. It holds values the query computes anyway: it changes how fast, never what
/// (`lower::relower_edit` gives up wherever its result could differ from a full lowering,
/// and tests compare the two after random edits).
#[derive(Default)]
pub struct LoweringCache {
    last: Mutex<FxHashMap<SourceFile, LastLowering>>,
}

/// A lowering and the text it was made from (its [`SourceFile::text_id`]).
type LastLowering = (u64, Arc<LoweredFile>);

impl std::fmt::Debug for LoweringCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoweringCache").finish_non_exhaustive()
    }
}

impl LoweringCache {
    /// The lowering of `file` made from the text numbered `text_id`, if kept.
    fn get(&self, file: SourceFile, text_id: u64) -> Option<Arc<LoweredFile>> {
        let last = self.last.lock().ok()?;
        let (t, lowered) = last.get(&file)?;
        (*t == text_id).then(|| Arc::clone(lowered))
    }

    fn set(&self, file: SourceFile, text_id: u64, lowered: Arc<LoweredFile>) {
        if let Ok(mut last) = self.last.lock() {
            last.insert(file, (text_id, lowered));
        }
    }
}

/// A function: its file, the `// -----` chunk it is in, its symbol, and an index among
/// functions of the same name in that chunk. Never an offset.
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct FuncId {
    #[returns(copy)]
    pub file: SourceFile,
    #[returns(copy)]
    pub chunk: u32,
    #[returns(ref)]
    pub name: String,
    #[returns(copy)]
    pub dup: u32,
}

/// An op: its function and its key there (result SSA names, or op name and ordinal for ops
/// without results). See [`OpData::key`].
#[salsa::interned(debug, unsafe(no_lifetime), revisions = usize::MAX)]
pub struct OpId {
    #[returns(copy)]
    pub func: FuncId,
    #[returns(ref)]
    pub key: String,
}

/// The parse of a file: tree, tokens and syntax errors. The host sets it with the text (see
/// [`SourceFile`]), so this is a read of that input, not a query.
pub fn parse_file(db: &dyn Db, file: SourceFile) -> Arc<Parse> {
    Arc::clone(file.parse(db))
}

/// The lowered file: every function's body and source map, and all diagnostics of parsing
/// and lowering.
#[salsa::tracked(returns(clone), no_eq)]
pub fn lower_file(db: &dyn Db, file: SourceFile) -> Arc<LoweredFile> {
    let parse = parse_file(db, file);
    let text = file.text(db);
    let edit = file.last_edit(db);
    let _p = tracing::debug_span!("lower_file", file = %file.path(db)).entered();
    let cache = db.lowering_cache();
    let again = edit.as_ref().and_then(|e| {
        let Some(before) = cache.get(file, e.before) else {
            tracing::debug!("lowering from scratch: the text before the edit was not lowered");
            return None;
        };
        let again = lower::relower_edit(&before, text, &parse, e.op);
        if again.is_none() {
            tracing::debug!(edit = ?e.op, "lowering from scratch: the edit is not re-lowered alone");
        }
        again
    });
    let lowered = Arc::new(again.unwrap_or_else(|| lower::lower_file(text, &parse)));
    cache.set(file, file.text_id(db), Arc::clone(&lowered));
    lowered
}

/// The functions of a file, in source order.
#[salsa::tracked(returns(clone))]
pub fn file_funcs(db: &dyn Db, file: SourceFile) -> Arc<[FuncId]> {
    let lowered = lower_file(db, file);
    let _p = tracing::debug_span!("file_funcs").entered();
    lowered.funcs.iter().map(|f| FuncId::new(db, file, f.chunk, f.name.clone(), f.dup)).collect()
}

pub(crate) fn lowered_func(db: &dyn Db, func: FuncId) -> Option<LoweredFunc> {
    let lowered = lower_file(db, func.file(db));
    let (chunk, dup) = (func.chunk(db), func.dup(db));
    let name = func.name(db);
    lowered.funcs.iter().find(|f| f.chunk == chunk && f.dup == dup && &f.name == name).cloned()
}

/// A function's position-free body. The firewall between text and analysis.
#[salsa::tracked(returns(clone))]
pub fn func_body(db: &dyn Db, func: FuncId) -> Option<Arc<FuncBody>> {
    let f = lowered_func(db, func);
    let _p = tracing::debug_span!("func_body", func = %func.name(db)).entered();
    f.map(|f| f.body)
}

/// A function's source map. Positions change on nearly every edit; never read this from an
/// analysis query.
#[salsa::tracked(returns(clone), no_eq)]
pub fn func_source_map(db: &dyn Db, func: FuncId) -> Option<Arc<FuncSourceMap>> {
    let _p = tracing::debug_span!("func_source_map", func = %func.name(db)).entered();
    lowered_func(db, func).map(|f| f.source_map)
}

/// The ops of a function in program order, as ids.
#[salsa::tracked(returns(clone))]
pub fn func_ops(db: &dyn Db, func: FuncId) -> Arc<[OpId]> {
    // From the frame, not the body: an edit inside one op changes the body but leaves the
    // frame (and so the op ids) as they were, and this is not re-run.
    let frame = func_frame(db, func);
    let _p = tracing::debug_span!("func_ops", func = %func.name(db)).entered();
    frame
        .map(|f| f.keys.iter().map(|k| OpId::new(db, func, k.as_str())).collect())
        .unwrap_or_else(|| Arc::from([]))
}

/// The body of an op's function and the op's index in it.
#[must_use]
pub fn op_in_body(db: &dyn Db, op: OpId) -> Option<(Arc<FuncBody>, usize)> {
    let body = func_body(db, op.func(db))?;
    let idx = body.op_index(op.key(db))?;
    Some((body, idx))
}

#[cfg(test)]
mod tests;
