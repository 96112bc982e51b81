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
pub mod shrinker;
pub mod slab;
pub mod slots;
pub mod swap;
pub mod swap_state;

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
        // init_per_zone_wmark_min: int_sqrt(lowmem_kbytes * 16), clamped.
        int_sqrt(total_managed * 4 * 16).clamp(128, 262_144)
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
}
