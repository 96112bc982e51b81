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

/// Entries per node of a [`SparseSlots`]: the xarray's `XA_CHUNK_SIZE`,
/// 1 << `XA_CHUNK_SHIFT` (6 unless `CONFIG_BASE_SMALL`; include/linux/xarray.h,
/// where such a node, `struct xa_node`, is 576 bytes on 64-bit; ours 256).
const NODE: usize = 64;

/// A page cache's entries as the kernel keeps them in `mapping->i_pages`: an
/// xarray, whose 64-slot nodes exist only where an entry was ever stored.
///
/// A dense [`Slots`] costs host memory for every 4 KiB of entries a run
/// touches, 1024 entries at a time. That is 4 MiB of file per host page:
/// fio's random 1 MiB writes over stutterp's file set (mmtests' job gives
/// every writer all the writers' files, hundreds of GiB at 64 workers)
/// touch most of those pages, so the dense tables of a 64-worker step on
/// `testbox-2021` grew to ~375 MiB for pages most of which were never
/// written. Here a node of 64 entries (256 B) is allocated on the first
/// store into it, as `xas_create` allocates an xarray node, so memory
/// follows the pages written. Simplification: one level of nodes under a
/// flat index (the kernel's tree has as many levels as the file needs), and
/// nodes are never freed — the kernel frees a node when its last entry goes
/// (shadow entries keep nodes alive there too, until the shadow shrinker,
/// `scan_shadow_nodes`, which is not modelled, reclaims them).
#[derive(Debug, Clone, Default)]
pub struct SparseSlots {
    /// Per node of `NODE` entries: 0 if never stored into, else its index
    /// in `nodes` plus 1.
    index: Vec<u32>,
    /// The allocated nodes, entries stored complemented as in [`Slots`].
    nodes: Vec<[u32; NODE]>,
    /// Number of entries.
    len: usize,
}

impl SparseSlots {
    /// `n` empty entries.
    pub fn new(n: usize) -> SparseSlots {
        SparseSlots {
            index: vec![0; n.div_ceil(NODE)],
            nodes: Vec::new(),
            len: n,
        }
    }
    /// Entry `i`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        assert!(i < self.len, "entry {i} of {}", self.len);
        match self.index[i / NODE] {
            0 => u32::MAX,
            n => !self.nodes[n as usize - 1][i % NODE],
        }
    }
    /// Sets entry `i`, allocating its node on the first store of a
    /// non-empty value.
    #[inline]
    pub fn set(&mut self, i: usize, v: u32) {
        assert!(i < self.len, "entry {i} of {}", self.len);
        let mut n = self.index[i / NODE];
        if n == 0 {
            if v == u32::MAX {
                return;
            }
            self.nodes.push([0; NODE]);
            n = self.nodes.len() as u32;
            self.index[i / NODE] = n;
        }
        self.nodes[n as usize - 1][i % NODE] = !v;
    }
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Nodes allocated so far.
    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
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

    #[test]
    fn sparse_entries_read_back_and_nodes_follow_the_stores() {
        let mut s = SparseSlots::new(200);
        assert_eq!((s.len(), s.get(0), s.get(199)), (200, u32::MAX, u32::MAX));
        // Storing "empty" where no node exists allocates nothing.
        s.set(130, u32::MAX);
        assert_eq!(s.nr_nodes(), 0);
        s.set(130, 7);
        s.set(131, 0);
        s.set(199, 1 << 31);
        assert_eq!((s.get(130), s.get(131), s.get(199)), (7, 0, 1 << 31));
        assert_eq!(
            (s.get(129), s.get(128), s.get(192)),
            (u32::MAX, u32::MAX, u32::MAX)
        );
        // Entries 130 and 131 share a node; 199 is in the last, short one.
        assert_eq!(s.nr_nodes(), 2);
        s.set(130, u32::MAX);
        assert_eq!((s.get(130), s.get(131), s.nr_nodes()), (u32::MAX, 0, 2));
    }

    #[test]
    #[should_panic(expected = "entry 200 of 200")]
    fn sparse_entries_past_the_end_are_a_bug() {
        SparseSlots::new(200).get(200);
    }
}
