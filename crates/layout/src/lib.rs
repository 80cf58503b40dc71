//! The layout-generation stages of tt-mlir's optimizer, as salsa queries.
//!
//! ```text
//! func_body(f) ──► op_signature(op)          position-free, layout-relevant; backdates
//!                  op_overrides(op)          the only reader of the override table
//!                  scalar_types(f)           data types in the function, overrides included
//! TargetInput ───► legal_tensor_layouts(key) keyed by interned (shape, dtype); shared
//!                  legal_op_layouts(op)      selection + op-model filter + max-legal-layouts
//!                  legal_op_configs(op)      x conv2d knobs, matmul program configs
//! ```
//!
//! Every per-op query is keyed by `OpId`, so editing a different op never re-runs it.

mod op_layouts;
mod overrides;
mod signature;
mod tensor_layouts;

use std::{collections::BTreeSet, sync::Arc};

use ir::{FuncId, Ty};
use opmodel::{AnalyticalModel, CachedOpModel};
use ttnn_types::DataType;

pub use crate::{
    op_layouts::{
        ConfigCandidate, LegalOpConfigs, LegalOpLayouts, OverrideUse, WrittenCheck,
        full_override_layout, legal_op_configs, legal_op_layouts, query_for, written_check,
    },
    overrides::{
        OpOverrides, OverrideTable, effective_options, op_overrides, override_file, override_table,
    },
    signature::{OpSignature, OperandSig, OperandSource, op_signature},
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
