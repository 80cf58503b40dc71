//! The override firewall.
//!
//! The overrides text is one global input. If every layout query read it, editing one
//! override would re-run every op's queries. Instead `override_table` turns it into a
//! position-free map, and per-op `op_overrides(op)` is the only reader of that map: an edit
//! re-runs these tiny per-op lookups, but only the op whose entry changed gets a different
//! value, so only its layout queries re-run.

use std::{collections::BTreeMap, sync::Arc};

use base_db::{
    Conv2dOverride, OptionSetting, Options, OptionsInput, OutputLayoutOverride, OverrideFile,
    OverrideKind, OverridesInput,
};
use ir::OpId;

use crate::Db;

/// Everything the overrides say about one op.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct OpOverrides {
    pub output_layout: Option<OutputLayoutOverride>,
    pub conv2d: Option<Conv2dOverride>,
    /// Operand indices to reshard in front of (`insert-memreconfig`).
    pub reshard_operands: Vec<u32>,
}

/// The overrides by op name, position-free.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OverrideTable {
    pub by_name: BTreeMap<String, OpOverrides>,
}

/// The parsed overrides with positions, for diagnostics. Changes on any edit of the text.
#[salsa::tracked(returns(clone), no_eq)]
pub fn override_file(db: &dyn Db) -> Arc<OverrideFile> {
    let input = OverridesInput::get(db);
    let _p = tracing::debug_span!("override_file").entered();
    Arc::new(base_db::parse_overrides(input.text(db)))
}

/// The overrides by op name.
#[salsa::tracked(returns(clone))]
pub fn override_table(db: &dyn Db) -> Arc<OverrideTable> {
    let file = override_file(db);
    let _p = tracing::debug_span!("override_table").entered();
    let mut table = OverrideTable::default();
    for e in &file.entries {
        let entry = table.by_name.entry(e.op_name.clone()).or_default();
        match &e.kind {
            OverrideKind::OutputLayout(o) => entry.output_layout = Some(*o),
            OverrideKind::Conv2dConfig(c) => entry.conv2d = Some(c.clone()),
            OverrideKind::InsertMemReconfig(idx) => entry.reshard_operands = idx.clone(),
        }
    }
    Arc::new(table)
}

/// The options in effect: the options input, with `max-legal-layouts` and
/// `row-major-enabled` from the overrides text taking precedence.
#[salsa::tracked(returns(clone))]
pub fn effective_options(db: &dyn Db) -> Options {
    let mut options = OptionsInput::get(db).options(db).clone();
    for s in &override_file(db).settings {
        match s {
            OptionSetting::MaxLegalLayouts { value, .. } => options.max_legal_layouts = *value,
            OptionSetting::RowMajorEnabled { value, .. } => options.row_major_enabled = *value,
        }
    }
    options
}

/// The overrides that apply to one op, matched by the op's top-level `loc("name")`.
#[salsa::tracked(returns(clone))]
pub fn op_overrides(db: &dyn Db, op: OpId) -> Option<Arc<OpOverrides>> {
    // The op's name is read first, even when there are no overrides: salsa refuses to
    // backdate a result that became less durable, so if this query read only the (MEDIUM)
    // table while it was empty and the (LOW) file once it was not, adding the first override
    // would re-run every op's layout queries.
    // The name comes from the (backdated) loc names alone, not the function body, so an
    // edit elsewhere in the function does not re-run this for every op.
    let names = ir::func_loc_names(db, op.func(db));
    let name = names.of_key(op.key(db))?;
    let table = override_table(db);
    table.by_name.get(name).cloned().map(Arc::new)
}
