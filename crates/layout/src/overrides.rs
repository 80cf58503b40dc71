//! The override firewall.
//!
//! The overrides text is one global input. If every layout query read it, editing one
//! override would re-run every op's queries. Instead the host writes what the text says about
//! each op name into that name's `OpOverrideSlot` input, and `op_overrides(op)` reads only its
//! own op's slot: editing one override re-validates that op's queries and nothing else, and
//! the text itself is read only by `override_file`, for diagnostics.

use std::sync::Arc;

pub use base_db::OpOverrides;
use base_db::{Options, OptionsInput, OverrideFile, OverrideSlots, OverridesInput};
use ir::OpId;

use crate::Db;

/// The parsed overrides with positions, for diagnostics. Changes on any edit of the text.
#[salsa::tracked(returns(clone), no_eq)]
pub fn override_file(db: &dyn Db) -> Arc<OverrideFile> {
    let input = OverridesInput::get(db);
    let _p = tracing::debug_span!("override_file").entered();
    Arc::new(base_db::parse_overrides(input.text(db)))
}

/// The options in effect: the options input, with `max-legal-layouts` and
/// `row-major-enabled` from the overrides text taking precedence.
#[salsa::tracked(returns(clone))]
pub fn effective_options(db: &dyn Db) -> Options {
    let mut options = OptionsInput::get(db).options(db).clone();
    let settings = OverrideSlots::get(db).settings(db);
    if let Some(v) = settings.max_legal_layouts {
        options.max_legal_layouts = v;
    }
    if let Some(v) = settings.row_major_enabled {
        options.row_major_enabled = v;
    }
    options
}

/// The overrides that apply to one op, matched by the op's top-level `loc("name")`.
///
/// Through a memo per op (the query `op_overrides`) when the database asks for it
/// ([`Db::override_memos`]), else read directly. The memo is a firewall for an editor, where
/// the map of slots grows when the overrides name an op for the first time and a loc name
/// edit changes the names: every op's lookup re-runs then, and only the ops whose overrides
/// changed re-run what read them. A tuning host's map and names do not change, so there the
/// memos only cost: the first override on an op changes a `MEDIUM` slot, which re-validates
/// every memo reading one (10k on a 10k-op graph), where a direct read re-validates as a
/// comparison.
pub fn op_overrides(db: &dyn Db, op: OpId) -> Option<Arc<OpOverrides>> {
    if db.override_memos() { memo::op_overrides(db, op) } else { read_op_overrides(db, op) }
}

/// The query behind [`op_overrides`], in a module of its own so that it keeps the name
/// execution logs and snapshots show.
mod memo {
    use super::{Arc, Db, OpId, OpOverrides};

    #[salsa::tracked(returns(clone))]
    pub(super) fn op_overrides(db: &dyn Db, op: OpId) -> Option<Arc<OpOverrides>> {
        // The op's name is read first, even when there are no overrides: salsa refuses to
        // backdate a result that became less durable, so if this query read only the slots
        // while there were none and the file once there were, adding the first override
        // would re-run every op's layout queries.
        super::read_op_overrides(db, op)
    }
}

fn read_op_overrides(db: &dyn Db, op: OpId) -> Option<Arc<OpOverrides>> {
    // The name comes from the (backdated) loc names alone, not the function body, so an
    // edit elsewhere in the function does not re-run this for every op.
    let names = ir::func_loc_names(db, op.func(db));
    let name = names.of_key(op.key(db))?;
    let slot = *OverrideSlots::get(db).by_name(db).get(name)?;
    slot.value(db).clone()
}
