//! Memory: nodes (`pg_data_t`), zones' watermarks, lruvecs, node statistics,
//! and the paths that fill memory (faults, page cache, allocation, swap).
//!
//! Simplification: one zone (`ZONE_NORMAL`) per node, so `reclaim_idx`,
//! `lowmem_reserve` and zone skipping in isolation do not arise. Order-0 pages
//! only (no THP, no compaction).

pub mod alloc;
pub mod anon;
pub mod fadvise;
pub mod filemap;
pub mod free_list;
pub mod lru;
pub mod lru_list;
pub mod memcontrol;
pub mod mlock;
pub mod page;
pub mod pcp;
pub mod readahead;
pub mod shrinker;
pub mod slab;
pub mod slots;
pub mod swap;
pub mod swap_state;
pub mod text;

use crate::engine::{TaskId, WaitQueue};
use crate::profile::NR_VMSCAN_THROTTLE;
use lru_list::LruList;
use page::{Lru, NR_LRU_LISTS};

/// Node statistics (`enum node_stat_item` plus the zone's `NR_FREE_PAGES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum NodeStat {
    NrFreePages = 0,
    NrIsolatedAnon,
    NrIsolatedFile,
    NrAnonPages,
    NrFilePages,
    NrFileDirty,
    NrWriteback,
    NrThrottledWritten,
    NrSwapcache,
    /// `NR_MLOCK` (a zone item in the kernel; one zone per node here).
    NrMlock,
}
/// Number of [`NodeStat`] items.
pub const NR_NODE_STATS: usize = 10;

/// `LRUVEC_CONGESTED` (5.5–6.4).
pub const LRUVEC_CONGESTED: u32 = 1;
/// `PGDAT_DIRTY`
pub const PGDAT_DIRTY: u32 = 1;
/// `PGDAT_WRITEBACK`
pub const PGDAT_WRITEBACK: u32 = 2;

/// Per-(memcg, node) LRU state (`struct lruvec`).
#[derive(Debug, Default)]
pub struct Lruvec {
    /// The LRU lists.
    pub lists: [LruList; NR_LRU_LISTS],
    /// `LRUVEC_*` flags.
    pub flags: u32,
    /// `lruvec->anon_cost`: pages of anon reclaim + refault IO cost, decayed.
    pub anon_cost: u64,
    /// `lruvec->file_cost`.
    pub file_cost: u64,
    /// `lruvec->nonresident_age`: evictions + activations, the workingset clock.
    pub nonresident_age: u64,
    /// `WORKINGSET_ACTIVATE_{ANON,FILE}` of this lruvec.
    pub ws_activate: [u64; 2],
    /// `refaults[]`: `ws_activate` snapshot at the end of the last reclaim cycle.
    pub refaults: [u64; 2],
    /// When `lru_lock` is next free, ns (see vmscan/lru_lock.rs).
    pub lru_lock_free_at: u64,
    /// The task whose hold ends at `lru_lock_free_at`.
    pub lru_lock_last: u32,
}

impl Lruvec {
    /// Pages on list `lru`.
    #[inline]
    pub fn size(&self, lru: Lru) -> u64 {
        self.lists[lru as usize].len
    }
}

/// Watermark indexes (`enum zone_watermarks`).
pub const WMARK_MIN: usize = 0;
/// Low watermark: kswapd is woken below it.
pub const WMARK_LOW: usize = 1;
/// High watermark: kswapd sleeps above it.
pub const WMARK_HIGH: usize = 2;

/// A node (`pg_data_t`) with its single zone folded in.
#[derive(Debug, Default)]
pub struct Pgdat {
    /// Node id.
    pub nid: u32,
    /// Free frames (the buddy free lists, order 0, and the per-CPU lists).
    pub free: free_list::FreeList,
    /// How many of `free` are on per-CPU lists, out of `NR_FREE_PAGES`.
    pub pcp: pcp::Pcp,
    /// `zone_managed_pages`.
    pub managed: u64,
    /// Pages in use since boot and never freed (the machine's
    /// `boot_used_kib`): the node's lowest `boot_used` pfns.
    pub boot_used: u64,
    /// `_watermark[]`: min, low, high.
    pub wmark: [u64; 3],
    /// Lruvecs by memcg id (0: root).
    pub lruvecs: Vec<Lruvec>,
    /// Node statistics.
    pub stat: [i64; NR_NODE_STATS],
    /// `PGDAT_*` flags.
    pub flags: u32,
    /// `reclaim_wait[]`, by [`crate::profile::Reason`].
    pub reclaim_wait: [WaitQueue; NR_VMSCAN_THROTTLE],
    /// `nr_writeback_throttled` (the WRITEBACK waiters; every throttled
    /// task under `policy.writeback_wake_count=all`, the posted series'
    /// `nr_reclaim_throttled`).
    pub nr_writeback_throttled: u64,
    /// `nr_reclaim_start`: `NR_THROTTLED_WRITTEN` when the first WRITEBACK waiter arrived.
    pub nr_reclaim_start: i64,
    /// `kswapd_failures`.
    pub kswapd_failures: u64,
    /// `kswapd_wait`.
    pub kswapd_wait: WaitQueue,
    /// `pfmemalloc_wait`.
    pub pfmemalloc_wait: WaitQueue,
    /// Waiters for a page lock of this node (the kernel's hashed
    /// `folio_wait_table`, one queue per node here).
    pub page_wait: WaitQueue,
    /// Waiters for a page's writeback to end (cgroup v1 limit reclaim).
    pub writeback_wait: WaitQueue,
    /// kswapd's task.
    pub kswapd: Option<TaskId>,
    /// True while kswapd is in `balance_pgdat` (not sleeping).
    pub kswapd_running: bool,
}

impl Pgdat {
    /// `node_page_state`.
    #[inline]
    pub fn state(&self, s: NodeStat) -> i64 {
        self.stat[s as usize]
    }
    /// `mod_node_page_state`.
    #[inline]
    pub fn mod_state(&mut self, s: NodeStat, d: i64) {
        self.stat[s as usize] += d;
    }
    /// Free pages (`zone_page_state(zone, NR_FREE_PAGES)`): the buddy
    /// lists', not those on per-CPU lists.
    #[inline]
    pub fn nr_free(&self) -> u64 {
        self.free.len() as u64 - self.pcp.total
    }
    /// Sum of list `lru` over all memcgs on this node (`node_page_state(NR_LRU_BASE + lru)`).
    pub fn lru_pages(&self, lru: Lru) -> u64 {
        self.lruvecs.iter().map(|l| l.size(lru)).sum()
    }
    /// `__zone_watermark_ok` for order 0 without reserves: free above mark.
    #[inline]
    pub fn watermark_ok(&self, mark: usize) -> bool {
        self.nr_free() > self.wmark[mark]
    }
}

/// `int_sqrt`
pub fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// `init_per_zone_wmark_min`'s default `min_free_kbytes` (5.10 and 6.1
/// mm/page_alloc.c): `int_sqrt(lowmem_kbytes * 16)`, clamped to
/// [128, 262144], where `lowmem_kbytes` is `nr_free_buffer_pages()` in KiB:
/// the managed pages while no watermark is set yet.
pub fn default_min_free_kbytes(total_managed: u64) -> u64 {
    int_sqrt(total_managed * 4 * 16).clamp(128, 262_144)
}

/// `pageblock_nr_pages` on x86-64 (order 9: 2 MiB).
pub const PAGEBLOCK_NR_PAGES: u64 = 512;

/// `MIGRATE_PCPTYPES`: unmovable, movable, reclaimable.
const MIGRATE_PCPTYPES: u64 = 3;

/// `set_recommended_min_free_kbytes` (mm/khugepaged.c, the same in 5.10 and
/// 6.1), which khugepaged's start at boot runs when THPs are enabled: two
/// free pageblocks per zone up to `ZONE_NORMAL`, plus
/// `MIGRATE_PCPTYPES²` more so that each migratetype has a pageblock to
/// fall back to, capped at 5 % of `nr_free_buffer_pages()` (the managed
/// pages less each zone's high watermark at that moment); KiB. The kernel
/// keeps the larger of this and the default.
///
/// Checked against the real records: a 1 GiB Debian guest (2 zones) with
/// THPs `always` has `vm.min_free_kbytes` 45056, with `never` 3955/3929 (the
/// default); the 24 GiB reference host (3 zones, `madvise`) 67584.
pub fn thp_recommended_min_free_kbytes(nr_zones: u64, nr_free_buffer_pages: u64) -> u64 {
    let pages = PAGEBLOCK_NR_PAGES * nr_zones * (2 + MIGRATE_PCPTYPES * MIGRATE_PCPTYPES);
    pages.min(nr_free_buffer_pages / 20) << 2
}

/// The `min_free_kbytes` a machine boots with: the value given
/// (`--set vm.min_free_kbytes`, a sysctl written after boot: it wins), else
/// the default, raised by khugepaged when THPs are enabled
/// ([`thp_recommended_min_free_kbytes`]).
pub fn boot_min_free_kbytes(
    given: u64,
    thp: Option<crate::machine::ThpEnabled>,
    nr_zones: u64,
    total_managed: u64,
    scale_factor: u64,
) -> u64 {
    if given != 0 {
        return given;
    }
    let default = default_min_free_kbytes(total_managed);
    if !thp.is_some_and(|t| t.khugepaged()) {
        return default;
    }
    // nr_free_buffer_pages() with the default watermarks in place: the
    // managed pages less the high watermark (one zone here).
    let high = zone_watermarks(default, scale_factor, total_managed, total_managed)[WMARK_HIGH];
    default.max(thp_recommended_min_free_kbytes(
        nr_zones,
        total_managed.saturating_sub(high),
    ))
}

/// `__setup_per_zone_wmarks` with `init_per_zone_wmark_min`'s default for
/// `min_free_kbytes` (mm/page_alloc.c, 5.15/6.1): returns (min, low, high) in
/// pages for a zone of `managed` pages out of `total_managed` lowmem pages.
pub fn zone_watermarks(
    min_free_kbytes: u64,
    scale_factor: u64,
    managed: u64,
    total_managed: u64,
) -> [u64; 3] {
    let min_free_kbytes = if min_free_kbytes == 0 {
        default_min_free_kbytes(total_managed)
    } else {
        min_free_kbytes
    };
    let pages_min = min_free_kbytes >> 2; // PAGE_SHIFT - 10
    let tmp = pages_min * managed / total_managed.max(1);
    let delta = (tmp / 4).max(managed * scale_factor / 10_000);
    [tmp, tmp + delta, tmp + 2 * delta]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermarks_follow_setup_per_zone_wmarks() {
        // 16 GiB, one zone: min_free_kbytes = int_sqrt(16 GiB in KiB * 16) = 16384.
        let pages = 16 * 1024 * 256;
        let w = zone_watermarks(0, 10, pages, pages);
        assert_eq!(w[WMARK_MIN], 4096);
        // delta = max(4096/4, pages*10/10000 = 4194) = 4194
        assert_eq!(w[WMARK_LOW], 4096 + 4194);
        assert_eq!(w[WMARK_HIGH], 4096 + 2 * 4194);
    }

    #[test]
    fn khugepaged_raises_min_free_kbytes_as_the_real_kernels_did() {
        use crate::machine::ThpEnabled::*;
        // The 1 GiB guests' MemTotal 981428 KiB: the default is about
        // 3.9 MiB (the real 6.1 guest with THPs off: 3929), khugepaged's
        // 2 zones x 11 pageblocks 45056 KiB (the real guests with THPs on).
        let managed = 981_428 / 4;
        let d = boot_min_free_kbytes(0, Some(Never), 2, managed, 10);
        assert!((3900..=3970).contains(&d), "{d}");
        assert_eq!(boot_min_free_kbytes(0, None, 2, managed, 10), d);
        assert_eq!(
            boot_min_free_kbytes(0, Some(Always), 2, managed, 10),
            45_056
        );
        // The reference host: 3 zones, THPs madvise, 23.5 GiB: 67584.
        assert_eq!(
            boot_min_free_kbytes(0, Some(Madvise), 3, 24_105 * 256, 10),
            67_584
        );
        // A sysctl written after boot wins.
        assert_eq!(
            boot_min_free_kbytes(2048, Some(Always), 2, managed, 10),
            2048
        );
        // The 5 % cap: a 256 MiB machine keeps at most 1/20 of its pages.
        assert_eq!(thp_recommended_min_free_kbytes(2, 65_536), 65_536 / 20 * 4);
    }
}
