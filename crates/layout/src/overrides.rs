//! The override firewall.
//!
//! The overrides text is one global input. If every layout query read it, editing one
//! override would re-run every op's queries. Instead the host writes what the text says about
//! each op name into that name's `OpOverrideSlot` input, and `op_overrides(op)` reads only its
//! own op's slot: editing one override re-validates that op's queries and nothing else, and
//! the text itself is read only by `override_file`, for diagnostics.

use std::sync::Arc;

use base_db::OpOverrideSlot as OverrideSlot;
pub use base_db::OpOverrides;
use base_db::{Options, OptionsInput, OverrideFile, OverrideSlots, OverridesInput};
use ir::{FuncId, Name, OpId};
use rustc_hash::FxHashMap;

use crate::Db;

/// The parsed overrides with positions, for diagnostics. Changes on any edit of the text.
#[salsa::tracked(returns(clone), no_eq)]
pub fn override_file(db: &dyn Db) -> Arc<OverrideFile> {
    let input = OverridesInput::get(db);
    let _p = tracing::debug_span!("override_file").entered();
    Arc::new(base_db::parse_overrides(input.text(db)))
}

/// The options in effect: the options input, with `max-legal-layouts`,
/// `row-major-enabled`, `memory-layout-analysis-enabled` and
/// `l1-interleaved-fallback-analysis-enabled` from the overrides text taking
/// precedence.
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
    if let Some(v) = settings.memory_layout_analysis {
        options.memory_layout_analysis = v;
    }
    if let Some(v) = settings.l1_interleaved_fallback {
        options.l1_interleaved_fallback = v;
    }
    options
}

/// The overrides that apply to one op, matched by the op's top-level `loc("name")`, read
/// through its group's [`overrides_block`].
///
/// One memo per group of ops, in both memo styles: it is a firewall for an editor, where the
/// map of slots grows when the overrides name an op for the first time and a loc name edit
/// changes the names (the blocks' lookups re-run then, and only the queries reading a block
/// whose overrides changed re-run); and on a tuning host, where the slots are `LOW`, what
/// reads the overrides of a group is walked by salsa after every override through one edge
/// per group rather than one per op. Readers that would otherwise read a group's overrides
/// together with memos that depend on the graph alone split in two ([`group_has_overrides`]
/// picks): the graph-only half stays valid in O(1) on a tuning host.
pub fn op_overrides(db: &dyn Db, op: OpId) -> Option<Arc<OpOverrides>> {
    let func = op.func(db);
    let frame = ir::func_frame(db, func)?;
    let idx = frame.op_index(op.key(db))?;
    let groups = ir::func_groups(db, func);
    let (g, at) = groups.locate(idx)?;
    match ir::group_start(&frame, &groups, g) {
        Some(start) => overrides_block(db, func, start).get(at).cloned().flatten(),
        // A group without a name (see `crate::groups`): the op's own slot.
        None => {
            let by_name = OverrideSlots::get(db).by_name(db);
            overrides_of_key(db, &ir::func_loc_names(db, func), by_name, frame.keys[idx])
        }
    }
}

/// Whether some op of the group of a function starting with the op keyed `start` has
/// overrides.
#[must_use]
pub fn group_has_overrides(db: &dyn Db, func: FuncId, start: Name) -> bool {
    overrides_block(db, func, start).iter().any(Option::is_some)
}

/// Whether a reader may take a group's answer without overrides (a `base_*` memo) without
/// asking the group's override memos: on a tuning host, when none of the slots serving the
/// names of the group's ops holds a value. Always `false` in an editor, whose readers ask
/// [`overrides_block`] (a firewall there: an edit re-runs it, not the readers).
///
/// On a tuning host every slot is `LOW`, so each memo that reads overrides is walked by salsa
/// after every override. Reading the group's slots themselves (inputs, checked in O(1))
/// beside the graph-only memos keeps a reader's edges to those: the group's override memos
/// (`overrides_block` and what reads it) are reached only for groups that have overrides,
/// rather than walked for every group after every override. The reader's durability is the
/// slots' either way.
#[must_use]
pub fn group_has_no_override_slots(db: &dyn Db, func: FuncId, start: Name) -> bool {
    db.memo_style() == crate::MemoStyle::Tuning
        && func_slots(db, func).of_group(start).iter().all(|s| s.values(db).is_empty())
}

/// Which override slots serve the names of a function's ops, by group: what a reader on a
/// tuning host looks at to learn which groups have overrides without reading each group's
/// override memo ([`group_has_no_override_slots`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuncSlots {
    /// Per named group (by its first op's key): the distinct slots serving its ops' names.
    by_group: FxHashMap<Name, Arc<[OverrideSlot]>>,
    /// Every (slot, group) pair of `by_group`, in group order.
    pub pairs: Vec<(OverrideSlot, Name)>,
}

impl FuncSlots {
    /// The slots serving the names of the group starting with the op keyed `start`.
    #[must_use]
    pub fn of_group(&self, start: Name) -> &[OverrideSlot] {
        self.by_group.get(&start).map_or(&[], |s| s)
    }
}

/// [`FuncSlots`] of a function: each named group's slots (each op's `loc("name")` and the
/// name it was written with, as [`op_overrides`] looks them up). Reads the graph and the slot
/// map alone, so a tuning host keeps it valid in O(1); one memo per function, so a reader
/// that looks at many groups walks one edge for it.
#[salsa::tracked(returns(clone))]
pub fn func_slots(db: &dyn Db, func: FuncId) -> Arc<FuncSlots> {
    let by_name = OverrideSlots::get(db).by_name(db);
    let Some(frame) = ir::func_frame(db, func) else { return Arc::default() };
    if by_name.is_empty() {
        return Arc::default();
    }
    let groups = ir::func_groups(db, func);
    let names = ir::func_loc_names(db, func);
    let mut out = FuncSlots::default();
    for g in 0..groups.len() as u32 {
        let Some(start) = ir::group_start(&frame, &groups, g) else { continue };
        let mut slots: Vec<OverrideSlot> = Vec::new();
        for &key in frame.keys.get(groups.range(g)).unwrap_or_default() {
            let Some(loc) = names.loc_of(key) else { continue };
            for n in std::iter::once(loc.name).chain(loc.written_as) {
                if let Some(&slot) = by_name.get(n.as_str())
                    && !slots.contains(&slot)
                {
                    slots.push(slot);
                }
            }
        }
        out.pairs.extend(slots.iter().map(|&s| (s, start)));
        out.by_group.insert(start, slots.into());
    }
    Arc::new(out)
}

/// The named groups of a function (by their first op's key, in group order) whose override
/// slots hold something. Reads every slot of the function (inputs): the one scan of them
/// after an override, shared by the readers that look for overridden groups (the plan's
/// reach, the lower bound), and a firewall: it comes out equal when an override changes on
/// an op that had one, and its readers are not re-run.
#[salsa::tracked(returns(clone))]
pub fn overridden_groups(db: &dyn Db, func: FuncId) -> Arc<[Name]> {
    let slots = func_slots(db, func);
    let mut out: Vec<Name> =
        slots.pairs.iter().filter(|(s, _)| !s.values(db).is_empty()).map(|&(_, g)| g).collect();
    out.dedup();
    out.into()
}

/// The overrides of each op of the group of a function that starts with the op keyed
/// `start` (`ir::func_group_at`), so that one op's override re-runs the readers of its group
/// alone. Keyed by name: ops inserted or pasted elsewhere leave it as it was. Readers look an
/// op up with `get`: the list is empty when no op of the group has overrides (so it stays
/// equal when the overrides first name some other op, and what reads it is not re-run), and
/// without any override the function's location names are not read, so an op inserted
/// elsewhere does not re-run this.
#[salsa::tracked(returns(clone))]
pub fn overrides_block(db: &dyn Db, func: FuncId, start: Name) -> BlockOverrides {
    // The group is read even when there are no overrides: salsa does not backdate a value
    // that comes out equal but more durable inputs fed it before, so what this reads must
    // not depend on whether overrides exist (the first override would re-run every reader).
    let ops = ir::func_group_at(db, func, start);
    overrides_of_ops(db, func, &ops)
}

/// [`overrides_block`] of a group's ops, without a memo.
fn overrides_of_ops(db: &dyn Db, func: FuncId, ops: &[Arc<ir::OpData>]) -> BlockOverrides {
    let by_name = OverrideSlots::get(db).by_name(db);
    if by_name.is_empty() {
        return Arc::default();
    }
    let names = ir::func_loc_names(db, func);
    let out: BlockOverrides =
        ops.iter().map(|o| overrides_of_key(db, &names, by_name, Name::new(&o.key))).collect();
    if out.iter().all(Option::is_none) { Arc::default() } else { out }
}

/// The overrides of the op with `key`: those naming its `loc("name")`, else those naming the
/// name it was written with (`loc("op_1"("op"))`, an op the importer renamed). tt-mlir
/// matches an override to every op whose location has the name, so an override of `op`
/// reaches every op that the input calls `op`, and one of `op_1` that op alone.
fn overrides_of_key(
    db: &dyn Db,
    names: &ir::LocNames,
    by_name: &rustc_hash::FxHashMap<String, base_db::OpOverrideSlot>,
    key: ir::Name,
) -> Option<Arc<OpOverrides>> {
    let loc = names.loc_of(key)?;
    let of = |n: ir::Name| {
        let slot = by_name.get(n.as_str())?;
        slot.values(db).get(n.as_str()).cloned()
    };
    of(loc.name).or_else(|| of(loc.written_as?))
}

/// Whether ops of one function have overrides, asked by key many times: what
/// `op_overrides(..).is_some()` says, with the function's lookups fetched once. A chunk
/// asks it for every op of its chains and their producers (about 8k times per re-planned
/// chunk on a 10k-op graph), where going through `op_overrides` interned an op id and
/// fetched the function's names for each.
pub struct OverrideProbe<'db> {
    db: &'db dyn Db,
    func: FuncId,
    frame: Option<Arc<ir::FuncFrame>>,
    groups: Arc<ir::GroupLayout>,
    blocks: Vec<std::cell::OnceCell<BlockOverrides>>,
    slots: std::cell::OnceCell<(Arc<ir::LocNames>, Arc<SlotMap>)>,
}

/// The slots by op name ([`OverrideSlots`]).
type SlotMap = FxHashMap<String, OverrideSlot>;

/// One block's overrides, per op ([`overrides_block`]).
type BlockOverrides = Arc<[Option<Arc<OpOverrides>>]>;

impl<'db> OverrideProbe<'db> {
    #[must_use]
    pub fn new(db: &'db dyn Db, func: FuncId) -> OverrideProbe<'db> {
        let frame = ir::func_frame(db, func);
        let groups = ir::func_groups(db, func);
        let blocks = (0..groups.len()).map(|_| std::cell::OnceCell::new()).collect();
        OverrideProbe { db, func, frame, groups, blocks, slots: std::cell::OnceCell::new() }
    }

    /// Whether the op with `key` has overrides.
    #[must_use]
    pub fn has_overrides(&self, key: &str) -> bool {
        let Some(idx) = self.frame.as_ref().and_then(|f| f.op_index(key)) else {
            return false;
        };
        let Some((g, at)) = self.groups.locate(idx) else { return false };
        let Some(cell) = self.blocks.get(g as usize) else { return false };
        let block = cell.get_or_init(|| {
            match self.frame.as_deref().and_then(|f| ir::group_start(f, &self.groups, g)) {
                Some(start) if group_has_no_override_slots(self.db, self.func, start) => {
                    Arc::default()
                }
                Some(start) => overrides_block(self.db, self.func, start),
                None => {
                    overrides_of_ops(self.db, self.func, &ir::func_group(self.db, self.func, g))
                }
            }
        });
        block.get(at).is_some_and(Option::is_some)
    }

    /// Whether the op with `key` has overrides, read from its own slot rather than its
    /// group's block: for ops outside the groups the reader works on (the producers of its
    /// ops), so that in an editor, where each name has a slot of its own, an override on
    /// another op of their group does not re-run the reader (on a tuning host a group's ops
    /// share a slot). Every op of a graph reads the device handle, for one.
    #[must_use]
    pub fn has_overrides_by_slot(&self, key: &str) -> bool {
        let (names, by_name) = self.slots.get_or_init(|| {
            (
                ir::func_loc_names(self.db, self.func),
                Arc::clone(OverrideSlots::get(self.db).by_name(self.db)),
            )
        });
        ir::Name::lookup(key)
            .is_some_and(|k| overrides_of_key(self.db, names, by_name, k).is_some())
    }
}
