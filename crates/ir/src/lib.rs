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
//!   │ ├ func_frame(f)             Eq: the body without its ops (signature, keys)
//!   │ └ func_block(f, j)          Eq: ops in blocks of 256, so an edit changes one block
//!   ├ func_loc_names(f)           Eq: the `loc("name")` of each op (override keys)
//!   ├ func_ops(f)                 Eq: op ids in program order
//!   └ func_source_map(f)          no_eq: positions, read only by the IDE layer and CLI
//! ```
//!
//! Ids are built from names: a function is (file, chunk, symbol, duplicate index), an op is
//! (function, result SSA names). Inserting an op with a fresh name above another leaves the
//! other's id, and so every per-op query keyed by it, untouched.

mod blocks;
mod decode;
mod lower;
mod model;

use std::sync::Arc;

use base_db::SourceFile;
use syntax::Parse;

pub use crate::{
    blocks::{BODY_BLOCK, BodyView, FuncFrame, OpsView, func_block, func_frame},
    lower::lower_file as lower_parse,
    model::{
        AttrValue, ChipDesc, Decoded, DeviceDesc, Diagnostic, FuncBody, FuncSourceMap, LocNames,
        LoweredFile, LoweredFunc, MemoryConfig, OpData, OpForm, Severity, ShardSpec, SystemDesc,
        Ty, ValueRef,
    },
};

#[salsa::db]
pub trait Db: base_db::Db {}

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
    let _p = tracing::debug_span!("lower_file", file = %file.path(db)).entered();
    Arc::new(lower::lower_file(file.text(db), &parse))
}

/// The functions of a file, in source order.
#[salsa::tracked(returns(clone))]
pub fn file_funcs(db: &dyn Db, file: SourceFile) -> Arc<[FuncId]> {
    let lowered = lower_file(db, file);
    let _p = tracing::debug_span!("file_funcs").entered();
    lowered.funcs.iter().map(|f| FuncId::new(db, file, f.chunk, f.name.clone(), f.dup)).collect()
}

fn lowered_func(db: &dyn Db, func: FuncId) -> Option<LoweredFunc> {
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

/// The location names of a function's ops, parallel to its ops.
#[salsa::tracked(returns(clone))]
pub fn func_loc_names(db: &dyn Db, func: FuncId) -> Arc<LocNames> {
    let _p = tracing::debug_span!("func_loc_names", func = %func.name(db)).entered();
    lowered_func(db, func).map(|f| f.loc_names).unwrap_or_default()
}

/// The ops of a function in program order, as ids.
#[salsa::tracked(returns(clone))]
pub fn func_ops(db: &dyn Db, func: FuncId) -> Arc<[OpId]> {
    let body = func_body(db, func);
    let _p = tracing::debug_span!("func_ops", func = %func.name(db)).entered();
    body.map(|b| b.ops.iter().map(|o| OpId::new(db, func, o.key.clone())).collect())
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
