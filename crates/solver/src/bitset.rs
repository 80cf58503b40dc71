//! A growable bitset over config indices.
//!
//! tt-mlir uses `std::bitset<512>`, which makes configs past index 511 invisible; this one is
//! sized per op, so conv2d's tripled config lists and large grids all stay visible.

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bitset {
    words: Vec<u64>,
    len: usize,
}

impl Bitset {
    /// `len` bits, all set.
    #[must_use]
    pub fn full(len: usize) -> Bitset {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if !len.is_multiple_of(64)
            && let Some(last) = words.last_mut()
        {
            *last = (1u64 << (len % 64)) - 1;
        }
        Bitset { words, len }
    }

    #[must_use]
    pub fn empty(len: usize) -> Bitset {
        Bitset { words: vec![0; len.div_ceil(64)], len }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    #[must_use]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn set(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] |= 1 << (i % 64);
        }
    }

    pub fn clear_all(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// `self &= other`; returns true if anything changed.
    pub fn and_with(&mut self, other: &Bitset) -> bool {
        let mut changed = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let n = *a & b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    #[must_use]
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len).filter(|&i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitsets_hold_more_than_512_configs() {
        let mut b = Bitset::empty(700);
        b.set(650);
        b.set(3);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![3, 650]);
        let full = Bitset::full(700);
        assert_eq!(full.count(), 700);
        let mut f = full.clone();
        assert!(f.and_with(&b));
        assert_eq!(f.count(), 2);
        assert!(!f.and_with(&b));
    }
}
