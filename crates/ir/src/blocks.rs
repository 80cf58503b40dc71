//! A function body in blocks, for queries that read part of a function.
//!
//! `func_body(f)` is one value: any edit inside the function changes it, and every query
//! that reads it re-runs, even one that looks at a few ops far from the edit. The frame
//! (`func_frame`: the signature, the returns, the op keys) and the ops in blocks of
//! [`BODY_BLOCK`] body indices (`func_block`) are read from inputs the host writes after
//! lowering (see the `inputs` module): an edit to one op's attributes or types changes one
//! block and leaves the frame as it was, so a query that reads other blocks is not re-run,
//! and in an editor not even re-validated beyond a durability check.
//!
//! [`BodyView`] gives such a query the body's shape with the ops fetched by group on first
//! use, so code written against `FuncBody` (`body.ops[i]`, `body.args`) reads the same.

use std::{cell::OnceCell, sync::Arc};

use crate::{
    Db, DefIndex, FuncBody, FuncId, Name, OpData, Ty, ValueRef,
    inputs::{OP_GROUP, func_input},
};

/// Ops per block of [`func_block`]; a multiple of [`OP_GROUP`].
pub const BODY_BLOCK: usize = 256;

/// Everything of a function body but its ops.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuncFrame {
    pub name: String,
    pub is_private: bool,
    pub function_type: Option<String>,
    /// Shared with the body's (see [`FuncBody::args`]).
    pub arg_names: Arc<[String]>,
    pub args: Arc<[Ty]>,
    pub results: Vec<Ty>,
    pub returns: Vec<ValueRef>,
    pub has_body: bool,
    /// The number of ops.
    pub n_ops: usize,
    /// Per op (body index): its key.
    pub keys: Arc<[String]>,
    /// Op keys sorted, with their indices (as [`crate::FuncBody`] has them).
    pub key_index: Arc<[(String, u32)]>,
    /// Op keys as names, with their indices (as [`crate::FuncBody`] has them).
    pub defs: DefIndex,
}

impl FuncFrame {
    /// The index of the op with `key`.
    #[must_use]
    pub fn op_index(&self, key: &str) -> Option<usize> {
        let i = self.key_index.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok()?;
        Some(self.key_index[i].1 as usize)
    }

    /// The body index of the op whose key is `name` (the last, where keys repeat).
    #[must_use]
    pub fn index_of(&self, name: Name) -> Option<u32> {
        self.defs.get(name)
    }

    /// `(op index, result index)` of a result value; `None` for arguments and unknown values.
    #[must_use]
    pub fn result_of(&self, v: ValueRef) -> Option<(u32, u32)> {
        self.defs.result_of(v)
    }
}

impl FuncFrame {
    /// The frame of `body`, sharing its key lists.
    #[must_use]
    pub fn of(body: &FuncBody) -> FuncFrame {
        // Shared with the body (an edit inside one op keeps them), so comparing the new frame
        // with the old one skips them.
        let mut key_index = Arc::clone(&body.key_index);
        if key_index.len() != body.ops.len() {
            let mut idx: Vec<(String, u32)> =
                body.ops.iter().enumerate().map(|(i, o)| (o.key.clone(), i as u32)).collect();
            idx.sort();
            key_index = idx.into();
        }
        let (keys, defs) = if body.keys.len() == body.ops.len() {
            (Arc::clone(&body.keys), body.defs.clone())
        } else {
            let keys: Arc<[String]> = body.ops.iter().map(|o| o.key.clone()).collect();
            let defs = DefIndex::of_keys(keys.iter().map(String::as_str));
            (keys, defs)
        };
        FuncFrame {
            name: body.name.clone(),
            is_private: body.is_private,
            function_type: body.function_type.clone(),
            arg_names: body.arg_names.clone(),
            args: body.args.clone(),
            results: body.results.clone(),
            returns: body.returns.clone(),
            has_body: body.has_body,
            n_ops: body.ops.len(),
            keys,
            key_index,
            defs,
        }
    }
}

impl FuncFrame {
    /// Whether this is the frame of `body`, without building that frame (which copies every
    /// argument type).
    #[must_use]
    pub fn is_frame_of(&self, body: &FuncBody) -> bool {
        // The shared lists are compared by pointer first: an edit inside one op keeps them,
        // and comparing 10k keys was a fifth of re-lowering one op. (`Arc`'s own equality
        // checks pointers only for sized values, not for slices.)
        self.n_ops == body.ops.len()
            && body.keys.len() == body.ops.len()
            && same(&self.keys, &body.keys)
            && same(&self.key_index, &body.key_index)
            && self.name == body.name
            && self.is_private == body.is_private
            && self.function_type == body.function_type
            && self.has_body == body.has_body
            && self.returns == body.returns
            && same(&self.arg_names, &body.arg_names)
            && same(&self.args, &body.args)
            && self.results == body.results
    }
}

/// Whether two shared values are equal, by pointer first.
fn same<T: ?Sized + PartialEq>(a: &Arc<T>, b: &Arc<T>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// A function's [`FuncFrame`], as the host last wrote it (see [`crate::FuncInput`]);
/// `None` if the function no longer exists.
#[must_use]
pub fn func_frame(db: &dyn Db, func: FuncId) -> Option<Arc<FuncFrame>> {
    func_input(db, func)?.frame(db).clone()
}

/// Block `j` of a function's ops (body indices `j * BODY_BLOCK ..`), from its groups; empty
/// past the end.
#[salsa::tracked(returns(clone))]
pub fn func_block(db: &dyn Db, func: FuncId, j: u32) -> Arc<[Arc<OpData>]> {
    let Some(input) = func_input(db, func) else { return Arc::from([]) };
    let per_block = BODY_BLOCK / OP_GROUP;
    let groups = input.groups(db);
    let lo = (j as usize * per_block).min(groups.len());
    let hi = (lo + per_block).min(groups.len());
    groups[lo..hi].iter().flat_map(|g| g.ops(db).iter().cloned()).collect()
}

/// The ops of group `g` of a function's body (body indices `g * OP_GROUP ..`); empty past
/// the end.
#[must_use]
pub fn func_group(db: &dyn Db, func: FuncId, g: u32) -> Arc<[Arc<OpData>]> {
    let Some(input) = func_input(db, func) else { return Arc::from([]) };
    input.groups(db).get(g as usize).map_or_else(|| Arc::from([]), |g| Arc::clone(g.ops(db)))
}

/// An op with nothing in it, for lookups past the end.
static NO_OP: OpData = OpData {
    key: String::new(),
    name: String::new(),
    form: crate::OpForm::Generic,
    operands: Vec::new(),
    operand_types: Vec::new(),
    results: Vec::new(),
    properties: Vec::new(),
    attrs: Vec::new(),
    callee: None,
    has_regions: false,
};

/// A function body read through its frame and blocks (see the module docs).
pub struct BodyView<'db> {
    frame: Arc<FuncFrame>,
    /// The ops, by body index; `ops[i]` fetches op `i`'s block the first time.
    pub ops: OpsView<'db>,
}

impl std::ops::Deref for BodyView<'_> {
    type Target = FuncFrame;
    fn deref(&self) -> &FuncFrame {
        &self.frame
    }
}

impl<'db> BodyView<'db> {
    /// The view of `func`'s body, or `None` if the function no longer exists.
    #[must_use]
    pub fn new(db: &'db dyn Db, func: FuncId) -> Option<BodyView<'db>> {
        let frame = func_frame(db, func)?;
        let n = frame.n_ops;
        Some(BodyView {
            frame,
            ops: OpsView {
                db,
                func,
                n,
                groups: (0..n.div_ceil(OP_GROUP)).map(|_| OnceCell::new()).collect(),
            },
        })
    }

    /// The type of a value.
    #[must_use]
    pub fn value_type(&self, v: ValueRef) -> Option<&Ty> {
        match v {
            ValueRef::Arg(i) => self.frame.args.get(i as usize),
            ValueRef::Result { .. } => {
                let (op, index) = self.frame.result_of(v)?;
                self.ops.get(op as usize).and_then(|o| o.results.get(index as usize))
            }
            ValueRef::Unknown => None,
        }
    }
}

/// The ops of a [`BodyView`].
pub struct OpsView<'db> {
    db: &'db dyn Db,
    func: FuncId,
    n: usize,
    /// Per group of [`OP_GROUP`] ops, read from its input on first use: a query that reads
    /// a few ops depends on their groups alone, so an edit to an op next to them (in the
    /// same [`func_block`]) does not re-run it.
    groups: Vec<OnceCell<Arc<[Arc<OpData>]>>>,
}

impl OpsView<'_> {
    #[must_use]
    pub fn len(&self) -> usize {
        self.n
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Op `i`, fetching its group the first time.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&OpData> {
        let cell = self.groups.get(i / OP_GROUP)?;
        let group = cell.get_or_init(|| func_group(self.db, self.func, (i / OP_GROUP) as u32));
        group.get(i % OP_GROUP).map(|o| &**o)
    }
}

impl std::ops::Index<usize> for OpsView<'_> {
    type Output = OpData;
    /// Op `i`; an empty op past the end (callers index ops they found in the same body).
    fn index(&self, i: usize) -> &OpData {
        self.get(i).unwrap_or(&NO_OP)
    }
}
