//! A bounded memo table for answers that hold for one target: kept in two generations, so a
//! long tuning loop's memory stays bounded while the answers still in use are carried over.

use std::{
    hash::Hash,
    sync::{Arc, Mutex, PoisonError},
};

use rustc_hash::FxHashMap;
use target::Target;

/// Answers by key for one target, in two generations (see the module docs); thread-safe.
pub struct Generations<K, V> {
    inner: Mutex<Tables<K, V>>,
    /// Answers per generation: when the current one fills up it becomes the previous one and
    /// the one before is dropped.
    size: usize,
}

struct Tables<K, V> {
    /// The target the answers are for; another target empties the table.
    target: Option<Target>,
    current: FxHashMap<K, Arc<V>>,
    previous: FxHashMap<K, Arc<V>>,
}

impl<K, V> Tables<K, V> {
    fn empty(target: Option<Target>) -> Tables<K, V> {
        Tables { target, current: FxHashMap::default(), previous: FxHashMap::default() }
    }
}

impl<K: Hash + Eq, V> Generations<K, V> {
    #[must_use]
    pub fn new(size: usize) -> Generations<K, V> {
        Generations { inner: Mutex::new(Tables::empty(None)), size }
    }

    /// The answer kept for `key` on `target`, or `compute`'s, kept. `compute` runs outside
    /// the lock: other threads look up and compute other keys meanwhile.
    pub fn get_or_compute(&self, target: &Target, key: K, compute: impl FnOnce() -> V) -> Arc<V> {
        {
            let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if g.target.as_ref() == Some(target) {
                if let Some(hit) = g.current.get(&key) {
                    return Arc::clone(hit);
                }
                if let Some((key, hit)) = g.previous.remove_entry(&key) {
                    g.current.insert(key, Arc::clone(&hit));
                    return hit;
                }
            }
        }
        let answer = Arc::new(compute());
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if g.target.as_ref() != Some(target) {
            *g = Tables::empty(Some(target.clone()));
        }
        if g.current.len() >= self.size {
            g.previous = std::mem::take(&mut g.current);
        }
        g.current.insert(key, Arc::clone(&answer));
        answer
    }

    /// The number of answers kept.
    pub fn len(&self) -> usize {
        let g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.current.len() + g.previous.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_generation_rolls_over_keeping_what_is_asked_again_and_another_target_starts_empty() {
        let (n150, p150) = (Target::n150(), Target::p150());
        let table: Generations<u32, u32> = Generations::new(2);
        for k in 0..2 {
            let _ = table.get_or_compute(&n150, k, || k * 10);
        }
        // The third answer starts a new generation; the first two are the previous one.
        let _ = table.get_or_compute(&n150, 2, || 20);
        assert_eq!(table.len(), 3);
        // Asked again, an answer of the previous generation is carried over, not recomputed.
        assert_eq!(*table.get_or_compute(&n150, 0, || unreachable!()), 0);
        // The next roll-over drops what was not asked again (1), keeps what was (0).
        let _ = table.get_or_compute(&n150, 3, || 30);
        assert_eq!(*table.get_or_compute(&n150, 0, || unreachable!()), 0);
        assert_eq!(*table.get_or_compute(&n150, 1, || 11), 11);
        // Another target's answers replace this target's.
        assert_eq!(*table.get_or_compute(&p150, 0, || 7), 7);
        assert_eq!(table.len(), 1);
    }
}
