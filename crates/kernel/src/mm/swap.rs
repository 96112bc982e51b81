//! Swap space: slots on a swap device, the swap cache, `add_to_swap`.
//!
//! Slots are handed out as 5.15 `scan_swap_map_slots` does for one CPU:
//! on a non-rotational device by a moving cursor (the per-CPU cluster's
//! order), on a rotational one (no `SWP_SOLIDSTATE`: a disk, or any
//! virtio-blk disk in a guest) sequentially from `cluster_next`, and every
//! `SWAPFILE_CLUSTER` slots from the first run of that many free slots, so
//! that pages reclaimed together get adjacent slots and their writes merge.
//! Each slot's entry is the resident swap-cache page, or the shadow
//! (eviction age) once the page was reclaimed, used by refault detection.
//! Swap readahead is the fault's (mm/swap_state.rs): per VMA, or by slot
//! around the fault's on a rotational device, which is why such a device
//! also remembers whose page each slot holds.
//! Simplifications: no swap slot cache per CPU (its 64-slot batches), no
//! per-CPU clusters on flash, no frontswap/zswap; slot 0 is the kernel's
//! offset 1 (the header's page is not a slot here).

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
    /// Allocation cursor (`cluster_next`).
    cursor: u64,
    /// Device position of slot 0.
    pub base_pos: u64,
    /// The device is rotational: no `SWP_SOLIDSTATE`, and `nr_rotate_swap`
    /// is not zero, so swap readahead goes by slot.
    pub rotational: bool,
    /// `cluster_nr`: slots left before a rotational device looks for a new
    /// empty run.
    cluster_nr: u64,
    /// Per slot, on a rotational device only: the anon mapping and page
    /// index whose page it holds (what the kernel finds through the swap
    /// entry's owners when it reads a neighbouring slot ahead).
    pub(crate) owner: Vec<(u32, u32)>,
    /// `swapin_readahead_hits`: readahead hits since the last slot-ordered
    /// readahead (all faults share it).
    pub ra_hits: u32,
    /// `swapin_nr_pages`' static `prev_offset` (slot of the last readahead
    /// that found no hits).
    pub ra_prev: Option<u32>,
    /// `last_readahead_pages`.
    pub ra_last_pages: u32,
}

/// `SWAPFILE_CLUSTER`.
const SWAPFILE_CLUSTER: u64 = 256;

impl SwapInfo {
    /// A swap area of `nr_slots` on device `dev`, rotational or not.
    pub fn new(nr_slots: u64, dev: usize, rotational: bool) -> SwapInfo {
        SwapInfo {
            dev,
            nr_slots,
            nr_free: nr_slots,
            used: vec![0; nr_slots.div_ceil(64) as usize],
            cache: Slots::new(nr_slots as usize),
            cursor: 0,
            base_pos: 0,
            rotational,
            cluster_nr: 0,
            owner: if rotational {
                vec![(0, 0); nr_slots as usize]
            } else {
                Vec::new()
            },
            ra_hits: 0,
            ra_prev: None,
            ra_last_pages: 0,
        }
    }

    /// Whether slot `s` is in use (its `swap_map` count is not zero).
    pub fn in_use(&self, s: u32) -> bool {
        self.used[(s / 64) as usize] & (1 << (s % 64)) != 0
    }

    /// The mapping and index whose page slot `s` holds (rotational devices).
    pub fn owner(&self, s: u32) -> Option<(u32, u32)> {
        self.owner.get(s as usize).copied()
    }

    /// The first slot of the first run of `len` free slots (unaligned), if
    /// any: 5.15 `scan_swap_map_slots`' "Locate the first empty (unaligned)
    /// cluster" from `lowest_bit`.
    fn first_free_run(&self, len: u64) -> Option<u64> {
        let (mut start, mut run) = (0, 0);
        let mut s = 0;
        while s < self.nr_slots {
            let word = self.used[(s / 64) as usize];
            if s % 64 == 0 && word == 0 && s + 64 <= self.nr_slots {
                run += 64;
                s += 64;
            } else if word & (1 << (s % 64)) == 0 {
                run += 1;
                s += 1;
            } else {
                run = 0;
                s += 1;
                start = s;
                continue;
            }
            if run >= len {
                return Some(start);
            }
        }
        None
    }

    /// `get_swap_page`: a free slot, or `None` when swap is full.
    pub fn get_slot(&mut self) -> Option<u32> {
        if self.nr_free == 0 {
            return None;
        }
        let n = self.nr_slots;
        if self.rotational {
            // "We try to cluster swap pages by allocating them sequentially
            // in swap. Once we've allocated SWAPFILE_CLUSTER pages this way,
            // however, we resort to first-free allocation, starting a new
            // cluster" (5.15 scan_swap_map_slots, the !cluster_info branch).
            if self.cluster_nr == 0 {
                if self.nr_free >= SWAPFILE_CLUSTER {
                    if let Some(start) = self.first_free_run(SWAPFILE_CLUSTER) {
                        self.cursor = start;
                    }
                }
                self.cluster_nr = SWAPFILE_CLUSTER - 1;
            } else {
                self.cluster_nr -= 1;
            }
        }
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
        if let Some(o) = self.swap.owner.get_mut(slot as usize) {
            let p = self.frames.get(pfn);
            *o = (p.owner, p.index);
        }
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

#[cfg(test)]
mod tests {
    use super::SwapInfo;

    fn take(si: &mut SwapInfo, n: usize) -> Vec<u32> {
        (0..n).map(|_| si.get_slot().unwrap()).collect()
    }

    #[test]
    fn a_rotational_device_hands_out_slots_in_order_and_restarts_in_an_empty_run() {
        let mut si = SwapInfo::new(2048, 0, true);
        // The first allocation looks for an empty run: the start.
        assert_eq!(take(&mut si, 300), (0..300).collect::<Vec<_>>());
        // Free every other slot of the first 300: holes, but no run of 256.
        for s in (0..300).step_by(2) {
            si.free_slot(s);
        }
        // The rest of the current run of 256 goes on in order (300..511
        // from the cursor), then a new run starts at the first 256 free
        // slots in a row, which is after 300, not in the holes.
        let next = take(&mut si, 212);
        assert_eq!(next, (300..512).collect::<Vec<_>>());
        let after = take(&mut si, 2);
        assert_eq!(after, vec![512, 513]);
        // With fewer than SWAPFILE_CLUSTER slots free, first-free from the
        // cursor, wrapping into the holes.
        let left = si.nr_free as usize;
        let mut rest = take(&mut si, left);
        assert!(left < 2048 && rest.len() == left);
        rest.sort_unstable();
        assert!(rest.contains(&0) && rest.contains(&2047));
        assert!(si.get_slot().is_none());
    }

    #[test]
    fn a_rotational_device_jumps_to_an_empty_run_every_cluster() {
        let mut si = SwapInfo::new(4096, 0, true);
        take(&mut si, 1024);
        // Free one slot in the middle: the cursor continues at 1024 (no jump
        // into a single hole), then 255 more in order.
        si.free_slot(10);
        assert_eq!(take(&mut si, 256), (1024..1280).collect::<Vec<_>>());
        // Free a run of 256 early on: the next cluster starts there.
        for s in 100..356 {
            si.free_slot(s);
        }
        assert_eq!(take(&mut si, 3), vec![100, 101, 102]);
    }

    #[test]
    fn flash_keeps_its_cursor() {
        let mut si = SwapInfo::new(4096, 0, false);
        take(&mut si, 1024);
        for s in 100..356 {
            si.free_slot(s);
        }
        assert_eq!(take(&mut si, 3), vec![1024, 1025, 1026]);
        assert!(si.owner(0).is_none(), "no owners kept on flash");
    }
}
