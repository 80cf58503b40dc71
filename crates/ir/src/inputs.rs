//! The per-function inputs a host writes after lowering a file: each function's frame, its
//! ops in groups of [`OP_GROUP`], and the keys of its pinned ops.
//!
//! They are lowered data, derived from `SourceFile`, written by the host instead of computed
//! by a query for one reason: durability. Everything a query computes from a file has the
//! file's durability, so in an editor every per-op and per-chain memo of a 10k-op function
//! was `LOW` and salsa walked the dependencies of every one of them (about 27k memos) after
//! each keystroke, wherever it was. Written by the host, a group of ops nobody has edited
//! keeps the durability it was created with (`cold`: `MEDIUM` in an editor) and what reads
//! only such groups is re-validated in O(1); a group an edit changed is lowered to `hot`
//! (`LOW`), so later keystrokes in it re-validate only what reads it.
//!
//! Lowering a group's durability is a change at the old one, so salsa re-validates every
//! memo of that durability; and salsa does not backdate a value whose durability dropped,
//! so the queries that read the group run again once even where their value stays, and so
//! do their readers (a cascade up to the whole function's chains and a chunk's parts).
//! So the first edit in a group writes it at `cold` still, and only re-validates: the
//! group is queued ([`GroupHeat`]) and the host lowers its durability with
//! [`heat_groups`] when it is idle (an editor's diagnostics are out), where the cascade
//! costs no keystroke; there too, the groups edited longest ago beyond the last
//! [`HOT_GROUPS`] go back to `cold`. Groups are small (the signatures are memoized per group,
//! `layout::group_signatures` over `func_group`), with the blocks of 256 ops that per-block
//! queries read assembled from them (`func_block`).
//!
//! An edit that changes the frame (an op added, removed or renamed) writes everything it
//! changes at `cold`, so structural edits do not leave the whole function `LOW` for good.
//!
//! [`sync_file_inputs`] is the only writer. It diffs before it sets (a setter starts a new
//! revision even for an equal value), and groups compare by pointer first: an edit inside one
//! op re-lowers that op alone and every other op keeps its allocation.

use std::{collections::BTreeSet, sync::Arc};

use base_db::{Durability, SourceFile};
use rustc_hash::{FxHashMap, FxHashSet};
use salsa::Setter as _;

use crate::{
    Db, FuncBody, FuncFrame, FuncId, LocNames, LoweredFile, LoweredFunc, OpData, lower_file,
};

/// Ops per group of [`FuncInput::groups`]: what an edit lowers the durability of.
pub const OP_GROUP: usize = 32;

/// The ops of one group of a function body (body indices `g * OP_GROUP ..`).
#[salsa::input(debug)]
pub struct OpGroup {
    #[returns(ref)]
    pub ops: Arc<[Arc<OpData>]>,
}

/// One function's lowered data, as the host last wrote it.
#[salsa::input(debug)]
pub struct FuncInput {
    /// `None` once the function is gone from its file.
    #[returns(ref)]
    pub frame: Option<Arc<FuncFrame>>,
    /// The groups; never shorter than the body needs (groups past its end are empty), so
    /// the list changes only when a body grows past its longest length.
    #[returns(ref)]
    pub groups: Arc<[OpGroup]>,
    /// The keys of the ops whose result must keep its written layout (computed by the
    /// host's `pinned_of`, which knows the target: see `layout::pinned_outputs`).
    #[returns(ref)]
    pub pinned: Arc<BTreeSet<String>>,
    /// The ops' `loc("name")`s, by which overrides find them. Written at `cold` even when
    /// an edit changes one: every override lookup of the function reads them, and written
    /// at `hot` they would leave all of those `LOW` for the rest of the session.
    #[returns(ref)]
    pub loc_names: Arc<LocNames>,
}

/// The inputs of every function the host has lowered. One per database.
#[salsa::input(singleton, debug)]
pub struct FuncInputs {
    #[returns(ref)]
    pub by_func: Arc<FxHashMap<FuncId, FuncInput>>,
}

/// Creates the singleton. Must run before any query, like `base_db::init_inputs`.
pub fn init_inputs(db: &dyn Db, durability: Durability) {
    let _ = FuncInputs::builder(Arc::default()).durability(durability).new(db);
}

/// The durabilities [`sync_file_inputs`] writes with.
#[derive(Debug, Clone, Copy)]
pub struct InputDurability {
    /// New functions and groups, and everything a structural edit changes.
    pub cold: Durability,
    /// A group an edit inside its ops changed, once [`heat_groups`] has lowered it.
    pub hot: Durability,
}

/// How many groups stay at `hot` durability at most: the ones edited last. Every memo that
/// reads a `hot` group is walked after every keystroke, so a session that has edited all
/// over a file would otherwise make each keystroke walk more and more of them; the working
/// set of an editor is a few places at a time.
pub const HOT_GROUPS: usize = 16;

/// Which groups an edit has brought to `hot` durability (the last [`HOT_GROUPS`] edited),
/// and which an edit changed while they were `cold`, waiting for [`heat_groups`]. The host
/// keeps one.
#[derive(Debug, Default)]
pub struct GroupHeat {
    /// Least recently edited first.
    hot: Vec<OpGroup>,
    pending: Vec<OpGroup>,
}

impl GroupHeat {
    /// The durability to write a group an edit inside its ops changed with: `hot` once
    /// [`heat_groups`] has lowered it, `cold` (and queued) before.
    fn edited(&mut self, group: OpGroup, durability: InputDurability) -> Durability {
        if durability.hot == durability.cold {
            return durability.hot;
        }
        if let Some(k) = self.hot.iter().position(|&g| g == group) {
            // Now the most recently edited.
            self.hot.remove(k);
            self.hot.push(group);
            return durability.hot;
        }
        if !self.pending.contains(&group) {
            self.pending.push(group);
        }
        durability.cold
    }

    /// A group written at `cold` for another reason (a structural edit, its function gone).
    fn cooled(&mut self, group: OpGroup) {
        self.hot.retain(|&g| g != group);
        self.pending.retain(|&g| g != group);
    }

    /// Whether [`heat_groups`] has anything to do.
    #[must_use]
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// Lowers the groups queued in `heat` to `hot` durability (their ops as they are), and
/// raises the least recently edited back to `cold` beyond [`HOT_GROUPS`]. Writes: what
/// reads those groups is re-validated, and run again, on the next read (those raised come
/// out the same and are backdated). Returns whether it wrote anything.
pub fn heat_groups(db: &mut dyn Db, heat: &mut GroupHeat, durability: InputDurability) -> bool {
    let pending = std::mem::take(&mut heat.pending);
    let mut any = false;
    for group in pending {
        if !heat.hot.contains(&group) {
            heat.hot.push(group);
            let ops = Arc::clone(group.ops(db));
            group.set_ops(db).with_durability(durability.hot).to(ops);
            any = true;
        }
    }
    let over = heat.hot.len().saturating_sub(HOT_GROUPS);
    for group in heat.hot.drain(..over) {
        let ops = Arc::clone(group.ops(db));
        group.set_ops(db).with_durability(durability.cold).to(ops);
        any = true;
    }
    any
}

/// Computes the pinned ops of a body (the host's, which knows the target).
pub type PinnedOf<'a> = &'a dyn Fn(&FuncBody) -> BTreeSet<String>;

/// Lowers `file` (the `lower_file` query) and writes what changed in each of its functions
/// into their inputs; a function that is gone gets an empty frame. Returns the lowering.
pub fn sync_file_inputs(
    db: &mut dyn Db,
    file: SourceFile,
    durability: InputDurability,
    heat: &mut GroupHeat,
    pinned_of: PinnedOf<'_>,
) -> Arc<LoweredFile> {
    let _p = tracing::debug_span!("sync_file_inputs").entered();
    let lowered = lower_file(db, file);
    let Some(registry) = FuncInputs::try_get(db) else { return lowered };
    let by_func = Arc::clone(registry.by_func(db));
    let mut added = Vec::new();
    let mut seen = FxHashSet::default();
    for f in &lowered.funcs {
        let id = FuncId::new(db, file, f.chunk, f.name.clone(), f.dup);
        seen.insert(id);
        let pinned = pinned_of(&f.body);
        match by_func.get(&id) {
            Some(&input) => update(db, input, f, pinned, durability, heat),
            None => {
                let cold = durability.cold;
                let groups: Arc<[OpGroup]> = f
                    .body
                    .ops
                    .chunks(OP_GROUP)
                    .map(|ops| OpGroup::builder(Arc::from(ops)).durability(cold).new(db))
                    .collect();
                let frame = Some(Arc::new(FuncFrame::of(&f.body)));
                let loc_names = Arc::clone(&f.loc_names);
                let input = FuncInput::builder(frame, groups, Arc::new(pinned), loc_names)
                    .durability(cold)
                    .new(db);
                added.push((id, input));
            }
        }
    }
    for (&id, &input) in by_func.iter() {
        if id.file(db) == file && !seen.contains(&id) && input.frame(db).is_some() {
            input.set_frame(db).with_durability(durability.cold).to(None);
            if !input.pinned(db).is_empty() {
                input.set_pinned(db).with_durability(durability.cold).to(Arc::default());
            }
            if !input.loc_names(db).names.is_empty() {
                input.set_loc_names(db).with_durability(durability.cold).to(Arc::default());
            }
            let groups = Arc::clone(input.groups(db));
            for &b in groups.iter() {
                if !b.ops(db).is_empty() {
                    b.set_ops(db).with_durability(durability.cold).to(Arc::from([]));
                    heat.cooled(b);
                }
            }
        }
    }
    if !added.is_empty() {
        let mut map = FxHashMap::clone(&by_func);
        map.extend(added);
        registry.set_by_func(db).with_durability(durability.cold).to(Arc::new(map));
    }
    lowered
}

/// Writes what changed of one function that has inputs already.
fn update(
    db: &mut dyn Db,
    input: FuncInput,
    f: &LoweredFunc,
    pinned: BTreeSet<String>,
    durability: InputDurability,
    heat: &mut GroupHeat,
) {
    let body = &f.body;
    let structural = !input.frame(db).as_deref().is_some_and(|f| f.is_frame_of(body));
    if structural {
        let frame = FuncFrame::of(body);
        // Unchanged when only the key lists were rebuilt: a setter is a new revision.
        if input.frame(db).as_deref() != Some(&frame) {
            input.set_frame(db).with_durability(durability.cold).to(Some(Arc::new(frame)));
        }
    }
    let old = Arc::clone(input.groups(db));
    let mut list: Vec<OpGroup> = old.to_vec();
    let len = body.ops.len().div_ceil(OP_GROUP).max(old.len());
    for j in 0..len {
        // Groups past the body's end are kept, empty (see `FuncInput::groups`).
        let lo = (j * OP_GROUP).min(body.ops.len());
        let ops = &body.ops[lo..(lo + OP_GROUP).min(body.ops.len())];
        match old.get(j) {
            // Compared in place: after an edit inside one op, every group but one is equal,
            // and copying them to compare would touch every op's count.
            Some(&b) => {
                if !same_ops(b.ops(db), ops) {
                    let at = if structural {
                        heat.cooled(b);
                        durability.cold
                    } else {
                        heat.edited(b, durability)
                    };
                    b.set_ops(db).with_durability(at).to(Arc::from(ops));
                }
            }
            None => list.push(OpGroup::builder(Arc::from(ops)).durability(durability.cold).new(db)),
        }
    }
    if list.len() != old.len() {
        input.set_groups(db).with_durability(durability.cold).to(list.into());
    }
    if **input.pinned(db) != pinned {
        input.set_pinned(db).with_durability(durability.cold).to(Arc::new(pinned));
    }
    // Compared by pointer first (`Arc`'s equality): an edit inside one op keeps the names.
    if *input.loc_names(db) != f.loc_names {
        input.set_loc_names(db).with_durability(durability.cold).to(Arc::clone(&f.loc_names));
    }
}

/// Whether two groups hold equal ops, comparing shared ones by pointer.
fn same_ops(a: &[Arc<OpData>], b: &[Arc<OpData>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y) || x == y)
}

/// The input of `func`, once the host has lowered its file.
pub(crate) fn func_input(db: &dyn Db, func: FuncId) -> Option<FuncInput> {
    FuncInputs::try_get(db)?.by_func(db).get(&func).copied()
}

/// The location names of a function's ops, parallel to its ops.
#[must_use]
pub fn func_loc_names(db: &dyn Db, func: FuncId) -> Arc<LocNames> {
    func_input(db, func).map(|i| Arc::clone(i.loc_names(db))).unwrap_or_default()
}

/// The keys of `func`'s pinned ops, as the host computed them.
#[must_use]
pub fn func_pinned(db: &dyn Db, func: FuncId) -> Arc<BTreeSet<String>> {
    func_input(db, func).map(|i| Arc::clone(i.pinned(db))).unwrap_or_default()
}
