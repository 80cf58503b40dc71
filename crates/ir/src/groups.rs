//! A function body in groups of ops, for queries that read part of a function.
//!
//! `func_body(f)` is one value: any edit inside the function changes it, and every query
//! that reads it re-runs, even one that looks at a few ops far from the edit. Everything
//! here is a projection of it, compared on re-execution so that an unchanged part is
//! backdated and what reads it is not re-run:
//!
//! - the frame (`func_frame`: the signature, the returns, the op keys);
//! - the group layout (`func_groups`): where the body is cut into groups of about
//!   [`GROUP_OPS`] ops, the one granularity every per-group memo downstream shares, and
//!   the groups into segments of about [`SEGMENT_GROUPS`] groups;
//! - the ops of each segment (`func_segment_at`), read from the body;
//! - the ops of each group (`func_group_at`, by its first op's name, what per-group memos
//!   and [`BodyView`] read), read from its segment, not the body; `func_group`, by index,
//!   for a group that has no such name.
//!
//! Group boundaries are chosen by content, not by position: a group starts at an op whose
//! key hashes to a multiple of [`GROUP_OPS`] (so about one op in [`GROUP_OPS`] starts one),
//! and a segment at a group whose first key hashes to a multiple of its square. Inserting or
//! deleting an op changes the group that holds it and leaves the others' ops, and so their
//! memos, as they were; only an op that starts a group, inserted or deleted, moves a
//! boundary, and then only the two groups beside it change. A long run without such a key
//! is cut at a looser one, and at [`MAX_GROUP_OPS`] ops at the latest, so no memo covers an
//! unbounded part of a function.
//!
//! Why two levels: after an edit, each per-group memo is verified before it is reused. Read
//! from the body, every group's projection ran again to find its ops unchanged (3,100 of
//! them on a 100k-op function, a third of an insertion's work). Read from its segment, a
//! group's projection runs again only where its segment's ops changed; the segments, about
//! 400 there, are what runs again for the whole function. What reads every group of a
//! function (the problems as written) reads per segment instead, for the same reason.
//!
//! [`BodyView`] gives a query the body's shape with the ops fetched by group on first use,
//! so code written against `FuncBody` (`body.ops[i]`, `body.args`) reads the same.

use std::{cell::OnceCell, sync::Arc};

use crate::{Db, DefIndex, FuncBody, FuncId, Name, OpData, Ty, ValueRef, func_body, model::same};

pub use base_db::granularity::{GROUP_OPS, MAX_GROUP_OPS, SEGMENT_GROUPS, SEGMENT_OPS};

/// Everything of a function body but its ops.
#[derive(Debug, Clone, Default)]
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
    pub keys: Arc<[Name]>,
    /// Op keys with their indices (as [`crate::FuncBody`] has them).
    pub defs: DefIndex,
}

impl FuncFrame {
    /// Whether some op's key repeats an earlier op's (a repeated definition, an error): the
    /// index then has fewer entries than there are ops, and a key names only its last op.
    #[must_use]
    pub fn keys_repeat(&self) -> bool {
        self.defs.len() != self.keys.len()
    }

    /// The index of the op with `key`.
    #[must_use]
    pub fn op_index(&self, key: &str) -> Option<usize> {
        Some(self.defs.get(Name::lookup(key)?)? as usize)
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

/// Compared on every re-execution (every edit of the function): the cheap fields first and
/// the shared lists by pointer first. Derived, it compared every argument's name and type
/// element by element before it reached the op count an insertion changes (19k arguments on
/// the 100k-op graph, 3 ms per edit).
impl PartialEq for FuncFrame {
    fn eq(&self, other: &FuncFrame) -> bool {
        // Every field is compared: a field added later fails to compile here until it is.
        let FuncFrame {
            name: _,
            is_private: _,
            function_type: _,
            arg_names: _,
            args: _,
            results: _,
            returns: _,
            has_body: _,
            n_ops: _,
            keys: _,
            defs: _,
        } = self;
        self.n_ops == other.n_ops
            && self.has_body == other.has_body
            && self.is_private == other.is_private
            && self.name == other.name
            && self.function_type == other.function_type
            && self.results == other.results
            && self.returns == other.returns
            && same(&self.keys, &other.keys)
            && self.defs == other.defs
            && same(&self.arg_names, &other.arg_names)
            && same(&self.args, &other.args)
    }
}

impl Eq for FuncFrame {}

impl FuncFrame {
    /// The frame of `body`, sharing its key lists.
    #[must_use]
    pub fn of(body: &FuncBody) -> FuncFrame {
        // Shared with the body (an edit inside one op keeps them), so comparing the new frame
        // with the old one skips them.
        let (keys, defs) = if body.keys.len() == body.ops.len() {
            (Arc::clone(&body.keys), body.defs.clone())
        } else {
            let keys: Arc<[Name]> = body.ops.iter().map(|o| Name::new(&o.key)).collect();
            let defs = DefIndex::of_names(&keys);
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

/// A function's [`FuncFrame`]; `None` if the function no longer exists. Equal after any
/// edit that adds, removes or renames no op and leaves the signature alone.
#[salsa::tracked(returns(clone))]
pub fn func_frame(db: &dyn Db, func: FuncId) -> Option<Arc<FuncFrame>> {
    let body = func_body(db, func)?;
    Some(Arc::new(FuncFrame::of(&body)))
}

/// Where a function body is cut into groups, and the groups into segments (see the module
/// docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GroupLayout {
    /// The body index of each group's first op, ascending; the first is 0.
    starts: Vec<u32>,
    /// The index of each segment's first group, ascending; the first is 0.
    segments: Vec<u32>,
    /// The number of ops.
    n_ops: u32,
    /// Per op (body index): its group. Derived from `starts`; looking an op's group up is
    /// the most frequent question asked of a layout (hundreds of times per re-planned chunk),
    /// and a table answers it without a search.
    group_of_op: Vec<u32>,
}

impl GroupLayout {
    /// The groups of a body whose ops have these keys, in order.
    #[must_use]
    pub fn of_keys(keys: &[Name]) -> GroupLayout {
        let mut starts = Vec::with_capacity(keys.len() / GROUP_OPS + 1);
        let mut segments = Vec::with_capacity(keys.len() / (GROUP_OPS * GROUP_OPS) + 1);
        let mut last = 0usize;
        for (i, hash) in Name::content_hashes(keys).into_iter().enumerate() {
            if !(i == 0 || cuts(hash, i - last, GROUP_OPS, GROUP_OPS as u64)) {
                continue;
            }
            let g = starts.len();
            let last_segment = segments.last().map_or(0, |&s| s as usize);
            if g == 0
                || cuts(hash, g - last_segment, SEGMENT_GROUPS, (GROUP_OPS * SEGMENT_GROUPS) as u64)
            {
                segments.push(g as u32);
            }
            starts.push(i as u32);
            last = i;
        }
        let mut group_of_op = vec![0u32; keys.len()];
        for (g, w) in starts.windows(2).enumerate() {
            group_of_op[w[0] as usize..w[1] as usize].fill(g as u32);
        }
        if let Some(&last) = starts.last() {
            group_of_op[last as usize..].fill(starts.len() as u32 - 1);
        }
        GroupLayout { starts, segments, n_ops: keys.len() as u32, group_of_op }
    }

    /// The segment holding group `g`: its index and its groups.
    #[must_use]
    pub fn segment_of(&self, g: u32) -> Option<(u32, std::ops::Range<u32>)> {
        if g as usize >= self.starts.len() {
            return None;
        }
        let s = self.segments.partition_point(|&first| first <= g).checked_sub(1)?;
        let hi = self.segments.get(s + 1).copied().unwrap_or(self.starts.len() as u32);
        Some((s as u32, self.segments[s]..hi))
    }

    /// The groups of segment `s` (empty past the end).
    #[must_use]
    pub fn segment_groups(&self, s: u32) -> std::ops::Range<u32> {
        let Some(&lo) = self.segments.get(s as usize) else { return 0..0 };
        let hi = self.segments.get(s as usize + 1).copied().unwrap_or(self.starts.len() as u32);
        lo..hi
    }

    /// The number of segments.
    #[must_use]
    pub fn segments(&self) -> usize {
        self.segments.len()
    }

    /// The number of groups.
    #[must_use]
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The body indices of group `g`'s ops (empty past the end).
    #[must_use]
    pub fn range(&self, g: u32) -> std::ops::Range<usize> {
        let Some(&lo) = self.starts.get(g as usize) else { return 0..0 };
        let hi = self.starts.get(g as usize + 1).copied().unwrap_or(self.n_ops);
        lo as usize..hi as usize
    }

    /// The group holding op `i`, and the op's place in it.
    #[must_use]
    pub fn locate(&self, i: usize) -> Option<(u32, usize)> {
        if i >= self.n_ops as usize {
            return None;
        }
        let g = *self.group_of_op.get(i)?;
        Some((g, i - *self.starts.get(g as usize)? as usize))
    }

    /// The group holding op `i` (`u32::MAX` past the end).
    #[must_use]
    pub fn group_of(&self, i: usize) -> u32 {
        self.locate(i).map_or(u32::MAX, |(g, _)| g)
    }
}

/// Whether a run that has gone `since` items (ops for a group, groups for a segment) is cut
/// before an item whose key has this content hash, runs being about `run` items long
/// ([`GROUP_OPS`] ops, [`SEGMENT_GROUPS`] groups) and cut where the hash is a multiple of
/// `modulus` ([`GROUP_OPS`] for groups, [`GROUP_OPS`] times [`SEGMENT_GROUPS`] for segments,
/// so an op that starts a segment by its key also starts a group by it). A run of twice
/// `run` items is cut at any key whose hash is a multiple of a quarter of the modulus, and
/// one of four times `run` items where it is.
///
/// The looser second rule keeps boundaries where the content puts them: a cut made only by
/// counting moves with every op inserted or deleted before it, and so changes a group (and
/// each memo of it) that the edit did not touch. Without it, runs of 128 ops with no
/// cutting key, about one group in sixty, ended in such cuts; with it, almost none do.
fn cuts(hash: u64, since: usize, run: usize, modulus: u64) -> bool {
    // The high bits: FxHash mixes its last word into them best.
    let h = hash >> 40;
    h.is_multiple_of(modulus)
        || (since >= 2 * run && h.is_multiple_of(modulus / 4))
        || since >= 4 * run
}

/// How a function's body is cut into groups. Read from the frame's keys, so an edit that
/// renames, adds or removes no op leaves it as it was.
#[salsa::tracked(returns(clone))]
pub fn func_groups(db: &dyn Db, func: FuncId) -> Arc<GroupLayout> {
    let Some(frame) = func_frame(db, func) else { return Arc::default() };
    let _p = tracing::debug_span!("func_groups", func = %func.name(db)).entered();
    Arc::new(GroupLayout::of_keys(&frame.keys))
}

/// The ops of group `g` of a function's body (see [`func_groups`]); empty past the end.
/// Equal when the group holds the same shared ops: after an edit, every group but the
/// edited one does, and this is backdated.
#[salsa::tracked(returns(clone))]
pub fn func_group(db: &dyn Db, func: FuncId, g: u32) -> GroupOps {
    let Some(body) = func_body(db, func) else { return GroupOps::default() };
    let range = func_groups(db, func).range(g);
    if body.ops.get(range.clone()).is_none() {
        return GroupOps::default();
    }
    GroupOps { body: Some(body), range }
}

/// The ops of the group whose first op has the key `start`: [`func_group`] by a key built
/// from a name rather than by the group's index. Pasting ops that start groups of their own
/// moves the index of every group after them; a memo keyed by index then sees other ops and
/// runs again for each of those groups, where one keyed by the first op's name sees the ops
/// it saw before (this is backdated) and does not. Empty when no group starts with that key
/// (or the key repeats, which only a file with errors has; see [`group_start`]).
///
/// Read through the group's segment ([`func_segment_at`]), not the body: after an edit
/// this is not run again for a group whose segment holds the same ops, so what verifies a
/// per-group memo checks two memos already checked for its segment and the function, not
/// the body, which every edit changes (on a 100k-op function, re-running this for each of
/// its 3,100 groups was a third of an insertion's work).
#[salsa::tracked(returns(clone))]
pub fn func_group_at(db: &dyn Db, func: FuncId, start: Name) -> GroupOps {
    let Some(segment_start) = func_segments(db, func).segment_of(start) else {
        // A segment whose first key repeats (a file with errors) has no name: from the body.
        return group_from_body(db, func, start);
    };
    let segment = func_segment_at(db, func, segment_start);
    let Some(body) = &segment.ops.body else { return GroupOps::default() };
    let base = segment.ops.range.start;
    let key = start.as_str();
    // The last group starting with the key: where keys repeat (a file with errors), the
    // group a key names is the one its last op starts (`FuncFrame::index_of`), and an
    // earlier group of the segment may start with the same key.
    let Some(k) = segment
        .groups
        .iter()
        .rposition(|&at| body.ops.get(base + at as usize).is_some_and(|o| o.key.as_str() == &*key))
    else {
        return GroupOps::default();
    };
    let lo = base + segment.groups[k] as usize;
    let hi = segment.groups.get(k + 1).map_or(segment.ops.range.end, |&at| base + at as usize);
    GroupOps { body: Some(Arc::clone(body)), range: lo..hi }
}

/// [`func_group_at`] read from the body directly.
fn group_from_body(db: &dyn Db, func: FuncId, start: Name) -> GroupOps {
    let Some(frame) = func_frame(db, func) else { return GroupOps::default() };
    let groups = func_groups(db, func);
    let Some(g) = group_named(&frame, &groups, start) else { return GroupOps::default() };
    let Some(body) = func_body(db, func) else { return GroupOps::default() };
    let range = groups.range(g);
    if body.ops.get(range.clone()).is_none() {
        return GroupOps::default();
    }
    GroupOps { body: Some(body), range }
}

/// Which segment each group is in, both by their first op's key: the groups that
/// [`group_start`] names, sorted by key id (only ever searched). Equal after an edit that
/// moves no group or segment boundary, which is every edit but one in about [`GROUP_OPS`]
/// insertions or deletions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Segments(Vec<(Name, Name)>);

impl Segments {
    /// The first op's key of the segment holding the group that starts with `start`.
    #[must_use]
    pub fn segment_of(&self, start: Name) -> Option<Name> {
        let i = self.0.binary_search_by_key(&start.id(), |(g, _)| g.id()).ok()?;
        Some(self.0[i].1)
    }
}

/// A function's [`Segments`].
#[salsa::tracked(returns(clone))]
pub fn func_segments(db: &dyn Db, func: FuncId) -> Arc<Segments> {
    let Some(frame) = func_frame(db, func) else { return Arc::default() };
    let groups = func_groups(db, func);
    let mut out = Vec::with_capacity(groups.len());
    for g in 0..groups.len() as u32 {
        let Some((_, in_segment)) = groups.segment_of(g) else { continue };
        if let (Some(start), Some(segment)) =
            (group_start(&frame, &groups, g), group_start(&frame, &groups, in_segment.start))
        {
            out.push((start, segment));
        }
    }
    out.sort_unstable_by_key(|(g, _)| g.id());
    Arc::new(Segments(out))
}

/// The ops of one segment and where its groups start in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SegmentOps {
    pub ops: GroupOps,
    /// Each group's first op, as an offset into `ops`; the first is 0.
    groups: Vec<u32>,
}

/// The segment whose first op has the key `start`: a run of about [`SEGMENT_GROUPS`] groups
/// (see [`GroupLayout`]), cut by content as groups are. Read from the body, so it runs again
/// after every edit of the function, once per segment, and is backdated unless the
/// segment's ops changed; the groups read it, not the body. Empty when no segment starts
/// with that key.
#[salsa::tracked(returns(clone))]
pub fn func_segment_at(db: &dyn Db, func: FuncId, start: Name) -> SegmentOps {
    let Some(frame) = func_frame(db, func) else { return SegmentOps::default() };
    let Some(i) = frame.index_of(start) else { return SegmentOps::default() };
    let groups = func_groups(db, func);
    let Some((g, 0)) = groups.locate(i as usize) else { return SegmentOps::default() };
    let Some((_, in_segment)) = groups.segment_of(g) else { return SegmentOps::default() };
    if in_segment.start != g {
        return SegmentOps::default();
    }
    let Some(body) = func_body(db, func) else { return SegmentOps::default() };
    let lo = groups.range(in_segment.start).start;
    let hi = groups.range(in_segment.end - 1).end;
    if body.ops.get(lo..hi).is_none() {
        return SegmentOps::default();
    }
    let offsets = in_segment.map(|h| (groups.range(h).start - lo) as u32).collect();
    SegmentOps { ops: GroupOps { body: Some(body), range: lo..hi }, groups: offsets }
}

/// Every use of an op's result by the ops of the segment whose first op has the key
/// `start` ([`func_segment_at`]): the user's place in the segment and the used op's key, in
/// order. By key, not body index, so an insertion elsewhere leaves it equal; what reads it
/// resolves the keys through the frame.
#[salsa::tracked(returns(clone))]
pub fn segment_uses(db: &dyn Db, func: FuncId, start: Name) -> Arc<[(u32, Name)]> {
    uses_of(&func_segment_at(db, func, start).ops)
}

/// [`segment_uses`] of any run of ops.
#[must_use]
pub fn uses_of(ops: &[Arc<OpData>]) -> Arc<[(u32, Name)]> {
    ops.iter()
        .enumerate()
        .flat_map(|(at, o)| {
            o.operands.iter().filter_map(move |v| match *v {
                ValueRef::Result { op, .. } => Some((at as u32, op)),
                _ => None,
            })
        })
        .collect()
}

/// The group that [`group_start`] names `start`: the one whose first op is the op the key
/// names (the last op with the key, where keys repeat). `None` when that op starts no group.
#[must_use]
pub fn group_named(frame: &FuncFrame, groups: &GroupLayout, start: Name) -> Option<u32> {
    let i = frame.index_of(start)?;
    match groups.locate(i as usize)? {
        (g, 0) => Some(g),
        _ => None,
    }
}

/// The key of group `g`'s first op, when it names that group alone: what
/// [`func_group_at`] is asked with. `None` past the end, and when the key is also another
/// op's (a repeated definition, an error): then read the group by index.
#[must_use]
pub fn group_start(frame: &FuncFrame, groups: &GroupLayout, g: u32) -> Option<Name> {
    let range = groups.range(g);
    let key = *frame.keys.get(range.start)?;
    if range.is_empty() {
        return None;
    }
    // Where no key repeats (the index has one entry per op), every key names its op: no
    // search per group (6,000 binary searches over 100k keys per edit of a large function).
    if !frame.keys_repeat() {
        return Some(key);
    }
    (frame.index_of(key)? as usize == range.start).then_some(key)
}

/// The ops of one group: a range of the body's list of shared ops, held through the body.
///
/// Not a list of its own: copying a group's op pointers took a count on every op and
/// dropping the old list gave it back, for every group of the function after any edit in it
/// (two scattered memory writes per op; a fifth of a keystroke's work on a 10k-op function).
/// Comparing two is comparing the pointers side by side. A memo holds the body that made
/// it until it is refreshed; the editor's problems refresh every group after each edit.
#[derive(Clone, Default)]
pub struct GroupOps {
    body: Option<Arc<FuncBody>>,
    range: std::ops::Range<usize>,
}

impl std::ops::Deref for GroupOps {
    type Target = [Arc<OpData>];
    fn deref(&self) -> &[Arc<OpData>] {
        self.body.as_ref().and_then(|b| b.ops.get(self.range.clone())).unwrap_or(&[])
    }
}

impl PartialEq for GroupOps {
    fn eq(&self, other: &GroupOps) -> bool {
        // `Arc<OpData>`'s equality tries the pointers first; shared ops never compare deeper.
        **self == **other
    }
}

impl Eq for GroupOps {}

impl std::fmt::Debug for GroupOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The `loc("name")`s of a function's ops (override keys); empty if the function is gone.
#[salsa::tracked(returns(clone))]
pub fn func_loc_names(db: &dyn Db, func: FuncId) -> Arc<crate::LocNames> {
    crate::lowered_func(db, func).map(|f| f.loc_names).unwrap_or_default()
}

/// An op with nothing in it, for lookups past the end.
pub static NO_OP: OpData = OpData {
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
        let layout = func_groups(db, func);
        Some(BodyView {
            ops: OpsView {
                db,
                func,
                n,
                groups: (0..layout.len()).map(|_| OnceCell::new()).collect(),
                layout,
                frame: Arc::clone(&frame),
            },
            frame,
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
    layout: Arc<GroupLayout>,
    frame: Arc<FuncFrame>,
    /// Per group, read on first use: a query that reads a few ops depends on their groups
    /// alone, so an edit to another group does not re-run it.
    groups: Vec<OnceCell<GroupOps>>,
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
        let (g, at) = self.layout.locate(i)?;
        let cell = self.groups.get(g as usize)?;
        // By the group's first op's name where it has one, as the per-group memos read it:
        // the same memo serves both, where reading by index as well re-ran a second memo per
        // group after every edit of the function.
        let group = cell.get_or_init(|| match group_start(&self.frame, &self.layout, g) {
            Some(start) => func_group_at(self.db, self.func, start),
            None => func_group(self.db, self.func, g),
        });
        group.get(at).map(|o| &**o)
    }
}

impl std::ops::Index<usize> for OpsView<'_> {
    type Output = OpData;
    /// Op `i`; an empty op past the end (callers index ops they found in the same body).
    fn index(&self, i: usize) -> &OpData {
        self.get(i).unwrap_or(&NO_OP)
    }
}
