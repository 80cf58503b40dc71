//! The layout-generation stages of tt-mlir's optimizer, as salsa queries.
//!
//! ```text
//! OpGroup ───────► group_signatures(f, start) position-free, layout-relevant, 32 ops; backdates
//!                  (op_signature(op) reads its op's entry)
//!                  overrides_block(f, start)  the override slots of a group's ops (op_overrides(op) reads its entry)
//!                  scalar_types(f)           data types in the function, overrides included
//! TargetInput ───► legal_tensor_layouts(key) keyed by interned (shape, dtype); shared
//!                  legal_op_layouts(op)      selection + op-model filter + max-legal-layouts
//!                  legal_op_configs(op)      x conv2d knobs, matmul program configs
//! ```
//!
//! Every per-op query is keyed by `OpId`, every per-group one by its group's first op's name
//! (see `groups`), so editing a different op re-runs at most its group's signatures, and an
//! op inserted or pasted elsewhere re-runs no group's.

mod groups;
mod op_layouts;
mod overrides;
mod signature;
mod tensor_layouts;

use std::{collections::BTreeSet, sync::Arc};

use ir::{FuncId, Ty};
use opmodel::{AnalyticalModel, CachedOpModel};
use ttnn_types::DataType;

pub use crate::{
    groups::{GroupRef, Groups},
    op_layouts::{
        ConfigCandidate, LegalOpConfigs, LegalOpLayouts, LegalityKey, LegalitySig, OpLegality,
        OverrideUse, WrittenCheck, base_legality, base_legality_of, full_override_layout,
        legal_op_configs, legal_op_layouts, op_legality, overridden_legality, produced_layout,
        produced_layout_of, query_for, written_checks, written_checks_segment,
    },
    overrides::{
        FuncSlots, OpOverrides, OverrideProbe, effective_options, func_slots,
        group_has_no_override_slots, group_has_overrides, op_overrides, overridden_groups,
        override_file, overrides_block,
    },
    signature::{
        GroupSignatures, OpSignature, OperandSig, OperandSource, group_signatures, op_signature,
        signatures_of, signatures_of_group,
    },
    tensor_layouts::{
        TensorKey, TensorLayouts, generate as generate_tensor_layouts, legal_tensor_layouts,
    },
};

/// The op model every layout query consults. Pure and value-keyed, so sharing one instance
/// across revisions and threads cannot make a query depend on anything but its inputs.
pub type SharedOpModel = CachedOpModel<AnalyticalModel>;

#[salsa::db]
pub trait Db: ir::Db {
    fn op_model(&self) -> &SharedOpModel;

    /// How the per-op layout queries are memoized, for what the host changes most. Fixed for
    /// the database's lifetime: both styles compute the same values.
    fn memo_style(&self) -> MemoStyle {
        MemoStyle::Editor
    }
}

/// How [`base_legality`] is memoized.
///
/// salsa re-validates a memo in O(1) when every input it read is more durable than what
/// changed, and walks its dependencies otherwise. An editor changes files on every
/// keystroke, so a memo per op that reads the file is walked 10k times per keystroke on a
/// 10k-op file; a tuning host changes override slots, and its graph is `HIGH`, so a memo
/// per op that reads only the graph costs nothing to keep valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoStyle {
    /// Legality without overrides keyed by the signature's content (`legality_of`, which
    /// reads no file).
    #[default]
    Editor,
    /// Legality without overrides one memo per op (no signature to intern on each read).
    Tuning,
}

/// The data types of every tensor in a function, plus the data types overrides ask for.
///
/// tt-mlir builds layouts for every type in this set for every tensor; we build them for
/// each op's own type (or its override's), which gives the same choices without the cross
/// product. The set is reported in hovers and the session's `layouts` answer.
#[salsa::tracked(returns(clone))]
pub fn scalar_types(db: &dyn Db, func: FuncId) -> Arc<BTreeSet<DataType>> {
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let _p = tracing::debug_span!("scalar_types", func = %func.name(db)).entered();
    let mut set = BTreeSet::new();
    let mut add = |t: &Ty| {
        if let Some(dt) = t.as_tensor().and_then(ttnn_types::TensorType::data_type) {
            set.insert(dt);
        }
    };
    body.args.iter().for_each(&mut add);
    for op in &body.ops {
        op.results.iter().chain(&op.operand_types).for_each(&mut add);
    }
    for op in ir::func_ops(db, func).iter() {
        if let Some(dt) = op_overrides(db, *op).and_then(|o| o.output_layout).and_then(|o| o.dtype)
        {
            set.insert(dt);
        }
    }
    Arc::new(set)
}

/// The ops whose result a pinned consumer declares with a layout the optimizer cannot
/// produce, by op key. Such ops keep the layout they are written with.
///
/// A consumer is pinned when its operand types are fixed by another function's signature (a
/// `d2m_subgraph`, a call), or when it is itself kept as written by this rule. A declared
/// layout the optimizer cannot produce is not the canonical one for its tensor (its memref
/// does not match the shape, grid and memory layout), so a conversion to it would itself be
/// invalid.
///
/// A firewall: it reads the whole body, and an edit that leaves the set as it was is
/// backdated here, so the per-op layout queries that read it are not re-run.
#[salsa::tracked(returns(clone))]
pub fn pinned_outputs(db: &dyn Db, func: FuncId) -> Arc<BTreeSet<String>> {
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let worker = base_db::TargetInput::get(db).target(db).worker_grid();
    Arc::new(pinned_of(&body, worker))
}

/// The pinned ops of `body` on a device whose worker grid is `worker` (see
/// [`pinned_outputs`]).
#[must_use]
pub fn pinned_of(body: &ir::FuncBody, worker: ttnn_types::Grid) -> BTreeSet<String> {
    let _p = tracing::debug_span!("pinned_of", func = %body.name).entered();
    let mut pinned = vec![false; body.ops.len()];
    // Consumers come after their producers, so one backward pass reaches the fixpoint.
    for i in (0..body.ops.len()).rev() {
        let user = &body.ops[i];
        if user.form == ir::OpForm::Generic && !pinned[i] {
            continue;
        }
        for (v, ty) in user.operands.iter().zip(&user.operand_types) {
            let Some((op, _)) = body.result_of(*v) else { continue };
            let Some(t) = ty.as_tensor() else { continue };
            let (Some(layout), Some(shape)) = (&t.layout, t.static_shape()) else { continue };
            let reproducible = layout.expected_memref_shape(&shape, worker).is_none_or(|m| {
                ttnn_types::collapse_2d(&m) == ttnn_types::collapse_2d(&layout.memref_shape)
            });
            if !reproducible && let Some(p) = pinned.get_mut(op as usize) {
                *p = true;
            }
        }
    }
    let set = body.ops.iter().zip(&pinned).filter(|(_, p)| **p).map(|(o, _)| o.key.clone());
    set.collect()
}
