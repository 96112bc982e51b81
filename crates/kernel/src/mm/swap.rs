//! Swap space: slots on a swap device, the swap cache, `add_to_swap`.
//!
//! Slots are handed out by a moving cursor (as `scan_swap_map_slots` does
//! within a cluster for one CPU), so pages reclaimed together get adjacent
//! slots and their writes merge. Each slot's entry is the resident swap-cache
//! page, or the shadow (eviction age) once the page was reclaimed, used by
//! refault detection. Swap readahead is the fault's (mm/swap_state.rs).
//! Simplifications: no swap slot cache per CPU, no frontswap/zswap.

use super::page::{pg, Pfn};
use super::slots::Slots;
use super::NodeStat;
use crate::Kernel;

/// "No page" in a slot.
pub const SLOT_EMPTY: u32 = u32::MAX;
/// Tag bit of a shadow entry.
pub const SHADOW: u32 = 1 << 31;

/// The page a cache entry (a swap slot's, or a file index's) holds: `None`
/// for an empty entry or a shadow.
#[inline]
pub fn cached_page(entry: u32) -> Option<Pfn> {
    (entry != SLOT_EMPTY && entry & SHADOW == 0).then_some(entry)
}

/// The swap area (`swap_info_struct`).
#[derive(Debug)]
pub struct SwapInfo {
    /// Device index.
    pub dev: usize,
    /// Slots in the area.
    pub nr_slots: u64,
    /// Free slots (`nr_swap_pages`).
    pub nr_free: u64,
    /// Slot in use.
    used: Vec<u64>,
    /// Per-slot: resident swap-cache pfn, shadow, or [`SLOT_EMPTY`].
    pub cache: Slots,
    /// Allocation cursor.
    cursor: u64,
    /// Device position of slot 0.
    pub base_pos: u64,
}

impl SwapInfo {
    /// A swap area of `nr_slots` on device `dev`.
    pub fn new(nr_slots: u64, dev: usize) -> SwapInfo {
        SwapInfo {
            dev,
            nr_slots,
            nr_free: nr_slots,
            used: vec![0; nr_slots.div_ceil(64) as usize],
            cache: Slots::new(nr_slots as usize),
            cursor: 0,
            base_pos: 0,
        }
    }

    /// `get_swap_page`: a free slot, or `None` when swap is full.
    pub fn get_slot(&mut self) -> Option<u32> {
        if self.nr_free == 0 {
            return None;
        }
        let n = self.nr_slots;
        let mut s = self.cursor % n;
        loop {
            let (w, b) = ((s / 64) as usize, s % 64);
            if self.used[w] == u64::MAX {
                s = (s / 64 + 1) * 64;
                if s >= n {
                    s = 0;
                }
                continue;
            }
            if self.used[w] & (1 << b) == 0 {
                self.used[w] |= 1 << b;
                self.nr_free -= 1;
                self.cursor = s + 1;
                return Some(s as u32);
            }
            s += 1;
            if s >= n {
                s = 0;
            }
        }
    }

    /// `swap_free`: releases a slot (and forgets its shadow).
    pub fn free_slot(&mut self, s: u32) {
        let (w, b) = ((s / 64) as usize, s % 64);
        debug_assert!(self.used[w] & (1 << b) != 0, "double swap free");
        self.used[w] &= !(1 << b);
        self.nr_free += 1;
        self.cache.set(s as usize, SLOT_EMPTY);
    }

    /// `vm_swap_full()`: more than half of swap in use.
    pub fn full(&self) -> bool {
        self.nr_free * 2 < self.nr_slots
    }
}

impl Kernel {
    /// `add_to_swap`: gives anon page `pfn` a slot and puts it in the swap
    /// cache, dirty (so that `pageout` writes it). False if swap is full.
    pub fn add_to_swap(&mut self, pfn: Pfn) -> bool {
        let Some(slot) = self.swap.get_slot() else {
            return false;
        };
        self.swap.cache.set(slot as usize, pfn);
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        p.set(pg::SWAPCACHE | pg::DIRTY);
        p.swap = slot;
        self.nodes[nid].mod_state(NodeStat::NrSwapcache, 1);
        true
    }

    /// `delete_from_swap_cache` + `swap_free` (the page keeps its data).
    pub fn delete_from_swap_cache(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        debug_assert!(p.test(pg::SWAPCACHE));
        p.clear(pg::SWAPCACHE);
        let slot = p.swap;
        self.nodes[nid].mod_state(NodeStat::NrSwapcache, -1);
        self.swap.free_slot(slot);
    }

    /// Whether anon pages can be reclaimed at all (`can_reclaim_anon_pages`
    /// for global reclaim: swap space left).
    pub fn can_reclaim_anon(&self) -> bool {
        self.swap.nr_free > 0
    }
}
