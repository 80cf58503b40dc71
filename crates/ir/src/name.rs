//! A process-global string interner for op keys, so a [`crate::ValueRef`] can name its
//! defining op by key and stay `Copy`.
//!
//! A value refers to the op that defines it by that op's key (its result names), not by the
//! op's position in the body: inserting or deleting an op then leaves every other op's data
//! equal, and every memo keyed on it valid. Names are never freed: a process sees the keys
//! of the files it analyzes and the few an editor adds, which is small next to the bodies.

use std::{
    fmt,
    sync::{LazyLock, PoisonError, RwLock},
};

use rustc_hash::FxHashMap;

/// An interned string. Equality and hashing are by id, which is cheap; there is no `Ord` on
/// purpose: ids depend on the order strings were first seen in the process, so anything that
/// orders names compares [`Name::as_str`], and output stays deterministic.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Name(u32);

#[derive(Default)]
struct Interner {
    ids: FxHashMap<&'static str, u32>,
    strs: Vec<&'static str>,
    /// Per id, [`content_hash`] of its string: read for every op key whenever a function's
    /// groups are cut again (`crate::GroupLayout::of_keys`), which hashed each key's text
    /// under a lock of its own, a few milliseconds on a 100k-op function.
    hashes: Vec<u64>,
}

/// A hash of a string's content, the same in every process (FxHash has no per-process seed).
#[must_use]
pub(crate) fn content_hash(s: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(s)
}

static INTERNER: LazyLock<RwLock<Interner>> = LazyLock::new(RwLock::default);

impl Name {
    /// The name of `s`, interning it on first sight.
    #[must_use]
    pub fn new(s: &str) -> Name {
        // A poisoned lock still holds a consistent table: entries are added whole under it.
        if let Some(&id) = INTERNER.read().unwrap_or_else(PoisonError::into_inner).ids.get(s) {
            return Name(id);
        }
        let mut interner = INTERNER.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = interner.ids.get(s) {
            return Name(id);
        }
        let id = u32::try_from(interner.strs.len()).unwrap_or(u32::MAX);
        // Leaked on purpose: names live as long as the process, and `as_str` hands out
        // references without holding the lock.
        let s: &'static str = Box::leak(s.to_owned().into_boxed_str());
        interner.strs.push(s);
        interner.hashes.push(content_hash(s));
        interner.ids.insert(s, id);
        Name(id)
    }

    /// The name of `s` if it was interned before; `None` says no op was ever given that key
    /// in this process (so no index holds it), without growing the table for a lookup.
    #[must_use]
    pub fn lookup(s: &str) -> Option<Name> {
        INTERNER.read().unwrap_or_else(PoisonError::into_inner).ids.get(s).map(|&id| Name(id))
    }

    /// The id, for searching sorted lists of names inside this crate; never for ordering
    /// anything that reaches output.
    pub(crate) fn id(self) -> u32 {
        self.0
    }

    /// [`content_hash`] of each name's string, in order, under one read of the table.
    pub(crate) fn content_hashes(names: &[Name]) -> Vec<u64> {
        let interner = INTERNER.read().unwrap_or_else(PoisonError::into_inner);
        names
            .iter()
            .map(|n| interner.hashes.get(n.0 as usize).copied().unwrap_or_else(|| content_hash("")))
            .collect()
    }

    /// The interned string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        let interner = INTERNER.read().unwrap_or_else(PoisonError::into_inner);
        interner.strs.get(self.0 as usize).copied().unwrap_or("")
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The string, not the id: ids depend on interning order, and debug output lands in
        // snapshots.
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Name;

    #[test]
    fn interning_a_string_twice_gives_the_same_name_and_its_text_back() {
        let a = Name::new("%interner_test_a");
        let b = Name::new(&String::from("%interner_test_a"));
        let c = Name::new("%interner_test_b");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.as_str(), "%interner_test_a");
        assert_eq!(c.as_str(), "%interner_test_b");
        assert_eq!(format!("{a:?} {c}"), "\"%interner_test_a\" %interner_test_b");
    }

    #[test]
    fn names_interned_on_many_threads_agree() {
        let names: Vec<Vec<Name>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..200).map(|i| Name::new(&format!("%thr{i}"))).collect()))
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        assert_eq!(names.len(), 4);
        for other in &names[1..] {
            assert_eq!(other, &names[0]);
        }
        for (i, n) in names[0].iter().enumerate() {
            assert_eq!(n.as_str(), format!("%thr{i}"));
        }
    }
}
