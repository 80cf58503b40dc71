//! A function body in blocks, for queries that read part of a function.
//!
//! `func_body(f)` is one value: any edit inside the function changes it, and every query
//! that reads it re-runs, even one that looks at a few ops far from the edit. The frame
//! (`func_frame`: the signature, the returns, the op keys) and the ops in blocks of
//! [`BODY_BLOCK`] body indices (`func_block`) are firewalls below it: an edit to one op's
//! attributes or types changes one block and leaves the frame as it was, so a query that
//! reads other blocks is re-validated, not re-run.
//!
//! [`BodyView`] gives such a query the body's shape with the blocks fetched on first use, so
//! code written against `FuncBody` (`body.ops[i]`, `body.args`) reads the same.

use std::{cell::OnceCell, sync::Arc};

use crate::{Db, FuncId, OpData, Ty, ValueRef, func_body};

/// Ops per block of [`func_block`].
pub const BODY_BLOCK: usize = 256;

/// Everything of a function body but its ops.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuncFrame {
    pub name: String,
    pub is_private: bool,
    pub function_type: Option<String>,
    pub arg_names: Vec<String>,
    pub args: Vec<Ty>,
    pub results: Vec<Ty>,
    pub returns: Vec<ValueRef>,
    pub has_body: bool,
    /// The number of ops.
    pub n_ops: usize,
    /// Per op (body index): its key.
    pub keys: Arc<[String]>,
    /// Op keys sorted, with their indices (as [`crate::FuncBody`] has them).
    pub key_index: Arc<[(String, u32)]>,
}

impl FuncFrame {
    /// The index of the op with `key`.
    #[must_use]
    pub fn op_index(&self, key: &str) -> Option<usize> {
        let i = self.key_index.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok()?;
        Some(self.key_index[i].1 as usize)
    }
}

/// A function's [`FuncFrame`].
#[salsa::tracked(returns(clone))]
pub fn func_frame(db: &dyn Db, func: FuncId) -> Option<Arc<FuncFrame>> {
    let body = func_body(db, func)?;
    // Shared with the body (an edit inside one op keeps them), so comparing the new frame
    // with the old one skips them.
    let mut key_index = Arc::clone(&body.key_index);
    if key_index.len() != body.ops.len() {
        let mut idx: Vec<(String, u32)> =
            body.ops.iter().enumerate().map(|(i, o)| (o.key.clone(), i as u32)).collect();
        idx.sort();
        key_index = idx.into();
    }
    let keys = if body.keys.len() == body.ops.len() {
        Arc::clone(&body.keys)
    } else {
        body.ops.iter().map(|o| o.key.clone()).collect()
    };
    Some(Arc::new(FuncFrame {
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
    }))
}

/// The ops of block `j` of a function: body indices `j * BODY_BLOCK` up to the next block.
#[salsa::tracked(returns(clone))]
pub fn func_block(db: &dyn Db, func: FuncId, j: u32) -> Arc<[Arc<OpData>]> {
    let Some(body) = func_body(db, func) else { return Arc::from(Vec::new()) };
    let lo = (j as usize * BODY_BLOCK).min(body.ops.len());
    let hi = (lo + BODY_BLOCK).min(body.ops.len());
    body.ops[lo..hi].into()
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
                blocks: (0..n.div_ceil(BODY_BLOCK)).map(|_| OnceCell::new()).collect(),
            },
        })
    }

    /// The type of a value.
    #[must_use]
    pub fn value_type(&self, v: ValueRef) -> Option<&Ty> {
        match v {
            ValueRef::Arg(i) => self.frame.args.get(i as usize),
            ValueRef::Result { op, index } => {
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
    blocks: Vec<OnceCell<Arc<[Arc<OpData>]>>>,
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

    /// Op `i`, fetching its block the first time.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&OpData> {
        let cell = self.blocks.get(i / BODY_BLOCK)?;
        let block = cell.get_or_init(|| func_block(self.db, self.func, (i / BODY_BLOCK) as u32));
        block.get(i % BODY_BLOCK).map(|o| &**o)
    }
}

impl std::ops::Index<usize> for OpsView<'_> {
    type Output = OpData;
    /// Op `i`; an empty op past the end (callers index ops they found in the same body).
    fn index(&self, i: usize) -> &OpData {
        self.get(i).unwrap_or(&NO_OP)
    }
}
