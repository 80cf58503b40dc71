//! How the per-group memos of this crate and the planner name a group of ops.
//!
//! A per-group memo is keyed by the name of the group's first op (`ir::func_group_at`), not by
//! the group's index among its function's groups: pasting ops that start groups of their own
//! moves the index of every group after them, and a memo keyed by index would then see other
//! ops and run again for each of those groups. Keyed by name, it sees the ops it saw before
//! (`func_group_at` is backdated) and does not.
//!
//! Readers walk groups by index (the function's [`ir::GroupLayout`]); a [`GroupRef`] carries
//! both, and the memo wrappers take one. Where the first op's key does not name its group
//! alone (a repeated definition, which only a file with errors has) the group has no name,
//! and the wrappers compute its value from its ops without a memo.

use std::sync::Arc;

use ir::{FuncFrame, FuncId, GroupLayout, GroupOps, Name};

use crate::Db;

/// One group of a function's ops as the per-group memos name it (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRef {
    /// By the key of its first op: the memo's key.
    Named(Name),
    /// By its index, where its first op's key does not name it alone: no memo.
    Unnamed(u32),
}

impl GroupRef {
    /// Group `g` of a function with this frame and group layout.
    #[must_use]
    pub fn of(frame: Option<&FuncFrame>, groups: &GroupLayout, g: u32) -> GroupRef {
        match frame.and_then(|f| ir::group_start(f, groups, g)) {
            Some(start) => GroupRef::Named(start),
            None => GroupRef::Unnamed(g),
        }
    }

    /// The group's ops.
    #[must_use]
    pub fn ops(self, db: &dyn Db, func: FuncId) -> GroupOps {
        match self {
            GroupRef::Named(start) => ir::func_group_at(db, func, start),
            GroupRef::Unnamed(g) => ir::func_group(db, func, g),
        }
    }
}

/// A function's groups, for readers that visit them by index or locate ops in them.
pub struct Groups {
    pub frame: Option<Arc<FuncFrame>>,
    pub layout: Arc<GroupLayout>,
}

impl Groups {
    #[must_use]
    pub fn new(db: &dyn Db, func: FuncId) -> Groups {
        Groups { frame: ir::func_frame(db, func), layout: ir::func_groups(db, func) }
    }

    /// The number of groups.
    #[must_use]
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.layout.is_empty()
    }

    /// Group `g`.
    #[must_use]
    pub fn get(&self, g: u32) -> GroupRef {
        GroupRef::of(self.frame.as_deref(), &self.layout, g)
    }

    /// Every group, in order.
    pub fn iter(&self) -> impl Iterator<Item = GroupRef> + '_ {
        (0..self.layout.len() as u32).map(|g| self.get(g))
    }

    /// The indices of the groups without a name, in order: none unless some key repeats (a
    /// file with errors), and then found without visiting every group.
    pub fn unnamed(&self) -> impl Iterator<Item = u32> + '_ {
        let repeats = self.frame.as_deref().is_some_and(ir::FuncFrame::keys_repeat);
        let n = if repeats { self.layout.len() as u32 } else { 0 };
        (0..n).filter(|&g| matches!(self.get(g), GroupRef::Unnamed(_)))
    }

    /// The index of the group named `start` (its first op's key).
    #[must_use]
    pub fn index_of(&self, start: Name) -> Option<u32> {
        ir::group_named(self.frame.as_deref()?, &self.layout, start)
    }

    /// Whether op `i`'s key names it: false where a later op repeats the key (a repeated
    /// definition, an error; the key names the last), and for an op past the end. What names
    /// ops by key (an `OpId`, a chain's ops) cannot tell such an op from the one its key names.
    #[must_use]
    pub fn key_names(&self, i: usize) -> bool {
        let Some(frame) = self.frame.as_deref() else { return false };
        let Some(&key) = frame.keys.get(i) else { return false };
        // Where no key repeats (one index entry per op), every key names its op: no search.
        !frame.keys_repeat() || frame.index_of(key) == Some(i as u32)
    }

    /// The group holding op `i` (body index): its index, how memos name it, and the op's
    /// place in it.
    #[must_use]
    pub fn locate(&self, i: usize) -> Option<(u32, GroupRef, usize)> {
        let (g, at) = self.layout.locate(i)?;
        Some((g, self.get(g), at))
    }
}
