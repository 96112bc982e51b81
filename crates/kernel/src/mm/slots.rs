//! [`Slots`]: the page-table, page-cache and swap-cache arrays.

use std::ops::Range;

/// An array of `u32` entries whose empty value is `u32::MAX` (no page, no
/// swap entry), stored complemented so that a new array is all zero bytes:
/// the allocator gets it from the OS as untouched memory, which costs
/// nothing until written. A 512 GiB file set or a 64 GiB swap area then
/// uses memory only for the parts a run actually reaches.
#[derive(Debug, Clone, Default)]
pub struct Slots(Vec<u32>);

impl Slots {
    /// `n` empty entries.
    pub fn new(n: usize) -> Slots {
        Slots(vec![0; n])
    }
    /// `n` empty entries in `buf`'s memory (a freed table reused, so that a
    /// map/unmap loop does not fault fresh pages in from the host each time).
    pub fn reuse(mut buf: Slots, n: usize) -> Slots {
        buf.0.clear();
        buf.0.resize(n, 0);
        buf
    }
    /// Entry `i`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        !self.0[i]
    }
    /// Entry `i`, `None` past the end.
    #[inline]
    pub fn get_checked(&self, i: usize) -> Option<u32> {
        self.0.get(i).map(|&x| !x)
    }
    /// Sets entry `i`.
    #[inline]
    pub fn set(&mut self, i: usize, v: u32) {
        self.0[i] = !v;
    }
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Whether no entry in `r` has any of the bits of `mask` set. (The
    /// entries are stored complemented, so that is whether the AND of the
    /// stored words has them all: a fold without an early exit, which the
    /// compiler turns into a few vector instructions for a word of ptes.)
    #[inline]
    pub fn none_has(&self, r: Range<usize>, mask: u32) -> bool {
        self.0[r].iter().fold(u32::MAX, |acc, &x| acc & x) & mask == mask
    }
    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().map(|&x| !x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_entries_are_empty_and_set_reads_back() {
        let mut s = Slots::new(3);
        assert!(s.iter().all(|e| e == u32::MAX));
        s.set(1, 7);
        assert_eq!((s.get(0), s.get(1)), (u32::MAX, 7));
        assert!(s.none_has(0..3, 0) && !s.none_has(0..1, 1 << 31));
        assert!(s.none_has(1..2, 1 << 31) && !s.none_has(1..2, 7) && s.none_has(1..2, 8));
        s.set(2, 1 << 31);
        assert!(!s.none_has(1..3, 1 << 31) && s.none_has(1..2, 1 << 31));
    }
}
