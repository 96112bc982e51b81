//! Page frames and their flags.
//!
//! Mirrors `struct page`/`struct folio` (include/linux/mm_types.h) and the
//! page-flag bits of include/linux/page-flags.h, order-0 only: every folio is
//! one page. A frame is 20 bytes, so a 64 GiB machine's 16 M frames cost
//! 320 MiB of host memory. Its node is not stored but follows from its pfn
//! ([`Frames::nid`]); `page_to_nid` reads it from the node bits of
//! `page->flags` rather than from a field of its own.

/// Page frame number: index into [`Frames`].
pub type Pfn = u32;
/// "No page" in links and page tables.
pub const NO_PFN: Pfn = u32::MAX;

/// The page-flag bits of a frame ([`pg`]).
pub type PageFlags = u16;

/// Page flags, named as in include/linux/page-flags.h.
pub mod pg {
    use super::PageFlags;

    /// `PG_referenced`: accessed since the last `mark_page_accessed` step / reclaim look.
    pub const REFERENCED: PageFlags = 1 << 0;
    /// `PG_dirty`: contents newer than the backing store.
    pub const DIRTY: PageFlags = 1 << 1;
    /// `PG_lru`: on an LRU list.
    pub const LRU: PageFlags = 1 << 2;
    /// `PG_active`: on (or destined for) the active list.
    pub const ACTIVE: PageFlags = 1 << 3;
    /// `PG_workingset`: was active before deactivation (refault detection).
    pub const WORKINGSET: PageFlags = 1 << 4;
    /// `PG_writeback`: write I/O in flight.
    pub const WRITEBACK: PageFlags = 1 << 5;
    /// `PG_reclaim`: reclaim wants it freed as soon as writeback ends.
    pub const RECLAIM: PageFlags = 1 << 6;
    /// `PG_swapbacked`: anonymous (or shmem) memory.
    pub const SWAPBACKED: PageFlags = 1 << 7;
    /// `PG_swapcache`: has a swap slot.
    pub const SWAPCACHE: PageFlags = 1 << 8;
    /// `PG_unevictable`: on the unevictable list.
    pub const UNEVICTABLE: PageFlags = 1 << 9;
    /// `PG_mlocked`: mapped by a `VM_LOCKED` vma.
    pub const MLOCKED: PageFlags = 1 << 10;
    /// `PG_uptodate`: contents valid (reads completed).
    pub const UPTODATE: PageFlags = 1 << 11;
    /// `PG_locked`: held by read I/O in flight (not used by reclaim's trylock:
    /// a locked page is one under read).
    pub const LOCKED: PageFlags = 1 << 12;
    /// Not a kernel flag: the frame is on the free list (`PageBuddy`).
    pub const BUDDY: PageFlags = 1 << 13;
    /// Not a kernel flag: isolated from the LRU by reclaim (kernel: `!PG_lru`
    /// with an elevated refcount held by the isolating task).
    pub const ISOLATED: PageFlags = 1 << 14;
    /// Not a kernel flag: the page backs a file (mapping is an inode).
    pub const FILE: PageFlags = 1 << 15;
}

/// One page frame.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    /// `pg::*` bits.
    pub flags: PageFlags,
    /// Memory cgroup id (0 is the root).
    pub memcg: u16,
    /// Position on its LRU list while `PG_lru` (see [`super::lru_list`]).
    pub lru_pos: u32,
    /// Owner: an anon mapping id (`SWAPBACKED`) or a file id (`FILE`).
    pub owner: u32,
    /// Index of the page within its owner (`folio->index`).
    pub index: u32,
    /// Swap slot if `SWAPCACHE`, else unused.
    pub swap: u32,
}

// The host memory of a simulated machine is mostly this table.
const _: () = assert!(std::mem::size_of::<Page>() == 20);

impl Page {
    /// Is any of `f` set?
    #[inline]
    pub fn test(&self, f: PageFlags) -> bool {
        self.flags & f != 0
    }
    /// Sets `f`.
    #[inline]
    pub fn set(&mut self, f: PageFlags) {
        self.flags |= f;
    }
    /// Clears `f`.
    #[inline]
    pub fn clear(&mut self, f: PageFlags) {
        self.flags &= !f;
    }
    /// `folio_is_file_lru`: file pages go on the file LRUs.
    #[inline]
    pub fn is_file_lru(&self) -> bool {
        !self.test(pg::SWAPBACKED)
    }
}

/// All page frames of the machine.
#[derive(Debug)]
pub struct Frames {
    /// Frames indexed by pfn.
    pub pages: Vec<Page>,
    /// First pfn of each node after node 0 (nodes are contiguous ranges).
    node_start: Vec<Pfn>,
}

thread_local! {
    /// The frame table of this thread's last simulated machine, kept for the
    /// next one (see [`Frames::new`]).
    static SPARE_TABLE: std::cell::RefCell<Option<Vec<Page>>> = const { std::cell::RefCell::new(None) };
}

impl Drop for Frames {
    fn drop(&mut self) {
        let pages = std::mem::take(&mut self.pages);
        // A thread being torn down may have dropped its slot already.
        let _ = SPARE_TABLE.try_with(|s| *s.borrow_mut() = Some(pages));
    }
}

impl Frames {
    /// `n` free frames on `nodes` nodes: node `i` holds the `n / nodes`
    /// frames from `i * (n / nodes)`, the last node the rest.
    ///
    /// The table of the machine a thread simulated last is reused when it is
    /// large enough: every entry is written again, so nothing carries over,
    /// but the host does not have to fault in hundreds of MiB per step.
    pub fn new(n: usize, nodes: usize) -> Frames {
        let mut pages = SPARE_TABLE
            .with(|s| s.borrow_mut().take())
            .filter(|v: &Vec<Page>| v.capacity() >= n)
            .unwrap_or_default();
        pages.clear();
        pages.reserve_exact(n);
        pages.extend((0..n).map(|_| Page {
            flags: pg::BUDDY,
            memcg: 0,
            lru_pos: 0,
            owner: 0,
            index: 0,
            swap: 0,
        }));
        let per_node = n / nodes.max(1);
        let node_start = (1..nodes).map(|i| (i * per_node) as Pfn).collect();
        Frames { pages, node_start }
    }
    /// The node of frame `pfn` (`page_to_nid`).
    #[inline]
    pub fn nid(&self, pfn: Pfn) -> usize {
        // One or two nodes in every profile: a scan beats a search.
        self.node_start.iter().take_while(|&&s| pfn >= s).count()
    }
    /// The frames of node `nid`.
    pub fn node_range(&self, nid: usize) -> std::ops::Range<Pfn> {
        let start = if nid == 0 {
            0
        } else {
            self.node_start[nid - 1]
        };
        let end = self
            .node_start
            .get(nid)
            .copied()
            .unwrap_or(self.pages.len() as Pfn);
        start..end
    }
    /// The frame `pfn`.
    #[inline]
    pub fn get(&self, pfn: Pfn) -> &Page {
        &self.pages[pfn as usize]
    }
    /// The frame `pfn`, mutably.
    #[inline]
    pub fn get_mut(&mut self, pfn: Pfn) -> &mut Page {
        &mut self.pages[pfn as usize]
    }
}

/// The LRU lists of a lruvec (`enum lru_list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lru {
    /// `LRU_INACTIVE_ANON`
    InactiveAnon = 0,
    /// `LRU_ACTIVE_ANON`
    ActiveAnon = 1,
    /// `LRU_INACTIVE_FILE`
    InactiveFile = 2,
    /// `LRU_ACTIVE_FILE`
    ActiveFile = 3,
    /// `LRU_UNEVICTABLE`
    Unevictable = 4,
}

/// Number of LRU lists.
pub const NR_LRU_LISTS: usize = 5;
/// The evictable lists in the kernel's `for_each_evictable_lru` order.
pub const EVICTABLE_LRUS: [Lru; 4] = [
    Lru::InactiveAnon,
    Lru::ActiveAnon,
    Lru::InactiveFile,
    Lru::ActiveFile,
];

impl Lru {
    /// `is_file_lru`
    pub fn is_file(self) -> bool {
        matches!(self, Lru::InactiveFile | Lru::ActiveFile)
    }
    /// `is_active_lru`
    pub fn is_active(self) -> bool {
        matches!(self, Lru::ActiveAnon | Lru::ActiveFile)
    }
    /// The list a page with these flags belongs on (`folio_lru_list`).
    pub fn of(flags: PageFlags) -> Lru {
        if flags & pg::UNEVICTABLE != 0 {
            return Lru::Unevictable;
        }
        let file = flags & pg::SWAPBACKED == 0;
        let active = flags & pg::ACTIVE != 0;
        match (file, active) {
            (false, false) => Lru::InactiveAnon,
            (false, true) => Lru::ActiveAnon,
            (true, false) => Lru::InactiveFile,
            (true, true) => Lru::ActiveFile,
        }
    }
    /// Same type, other activity (`lru ± LRU_ACTIVE`).
    pub fn inactive_of(self) -> Lru {
        match self {
            Lru::ActiveAnon | Lru::InactiveAnon => Lru::InactiveAnon,
            Lru::ActiveFile | Lru::InactiveFile => Lru::InactiveFile,
            Lru::Unevictable => Lru::Unevictable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_contiguous_and_the_last_takes_the_rest() {
        let f = Frames::new(10, 3);
        let nids: Vec<usize> = (0..10).map(|pfn| f.nid(pfn)).collect();
        assert_eq!(nids, [0, 0, 0, 1, 1, 1, 2, 2, 2, 2]);
        assert_eq!(
            (f.node_range(0), f.node_range(1), f.node_range(2)),
            (0..3, 3..6, 6..10)
        );
        let one = Frames::new(5, 1);
        assert_eq!((one.nid(4), one.node_range(0)), (0, 0..5));
    }
}
