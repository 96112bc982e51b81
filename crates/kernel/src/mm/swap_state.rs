//! Swap readahead as a fault does it, and the bookkeeping that sizes its
//! window (mm/swap_state.c, identical in 5.15 and 6.1: `swapin_readahead`,
//! `swap_vma_readahead`, `swap_ra_info`, `swap_cluster_readahead`,
//! `swapin_nr_pages`, `__swapin_nr_pages`, `swap_ra_clamp_pfn`,
//! `lookup_swap_cache`).
//!
//! A major swap fault reads, besides the faulting page, the swapped-out
//! pages around it that are not in the swap cache. Which pages depends on
//! the swap device (`swap_use_vma_readahead`: per VMA only while no
//! rotational swap device is on):
//! - on flash, the pages of the faulting mapping around the faulting
//!   address, whatever their slots (`swap_vma_readahead`), the window sized
//!   by that vma's readahead hits;
//! - on a rotational device (a disk, or a virtio-blk disk, which never sets
//!   `QUEUE_FLAG_NONROT`), the slots of an aligned block around the
//!   faulting slot, whoever's pages they hold (`swap_cluster_readahead`),
//!   the block sized by the hits of all faults since the last such read.
//!
//! Each page is allocated with the fault's gfp mask and charged like any
//! page (`__read_swap_cache_async` → `mem_cgroup_swapin_charge_folio`), so
//! a cgroup at its limit reclaims for its readahead. Each carries
//! `PG_readahead` (the kernel's alias of `PG_reclaim`) until a fault finds
//! it in the swap cache, which counts a readahead hit. Pages whose slots
//! follow one another go to the device as one request (the plug merges
//! them).
//!
//! Simplifications: one vma per mapping, starting on a PMD boundary; the
//! window's pages are allocated after the faulting one, not in slot or
//! address order; anonymous mappings only (no shmem); a page read ahead
//! by slot is charged to the faulting task's memcg, not to the one the
//! slot's `swap_cgroup` record names (the same in every workload here).

use super::alloc::{alloc_page_charged, Gfp};
use super::anon::PTE_SWAP;
use super::page::{pg, Pfn};
use super::swap::cached_page;
use crate::engine::World;
use crate::vmstat::Ev;
use crate::Kernel;

/// `SWAP_RA_ORDER_CEILING` (64-bit): the window is at most 2^5 pages.
const SWAP_RA_ORDER_CEILING: u64 = 5;
/// `SWAP_RA_HITS_MAX`.
const SWAP_RA_HITS_MAX: u32 = 0xff;
/// Pages a PMD maps (x86-64): the window stays within one page table.
const PMD_PAGES: u32 = 512;

/// `vma->swap_readahead_info`: the page of the last swap fault or swap-cache
/// hit, the last window and the readahead hits since.
#[derive(Clone, Copy, Debug, Default)]
pub struct SwapRaInfo {
    /// Page index of the last fault (`SWAP_RA_ADDR`); `None` for a new vma
    /// (the kernel's 0, an address no fault has).
    pub addr: Option<u32>,
    /// `SWAP_RA_WIN`.
    pub win: u32,
    /// `SWAP_RA_HITS`.
    pub hits: u32,
}

/// `__swapin_nr_pages`: the window for a fault at `offset`, from the hits
/// since the last one at `prev`, at most `max_pages` and not less than half
/// the last window.
pub fn swapin_nr_pages(
    prev: Option<u32>,
    offset: u32,
    hits: u32,
    max_pages: u32,
    prev_win: u32,
) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: read two pages only next to the last fault.
        let adjacent = prev
            .is_some_and(|p| offset.checked_sub(1) == Some(p) || offset.checked_add(1) == Some(p));
        if !adjacent {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages.min(max_pages).max(prev_win / 2)
}

impl Kernel {
    /// `lookup_swap_cache` finding `pfn` for page `index` of mapping `id`:
    /// a readahead page's first use counts a hit (`SWAP_RA_HIT`); the
    /// vma's readahead address moves to `index` either way.
    pub(crate) fn lookup_swap_cache_hit(&mut self, id: u32, index: u32, pfn: Pfn) {
        let p = self.frames.get_mut(pfn);
        // TestClearPageReadahead(): PG_reclaim, whatever set it.
        let readahead = p.test(pg::RECLAIM);
        if readahead {
            p.clear(pg::RECLAIM);
            self.count(Ev::SwapRaHit, 1);
        }
        if self.swap.rotational {
            // !vma_ra: the hits are everyone's (swapin_readahead_hits), and
            // the vma's readahead information is left alone.
            if readahead {
                self.swap.ra_hits += 1;
            }
            return;
        }
        let ra = &mut self.anon[id as usize].swap_ra;
        if readahead {
            ra.hits = (ra.hits + 1).min(SWAP_RA_HITS_MAX);
        }
        ra.addr = Some(index);
    }

    /// `swap_ra_info` for a major fault at `index` of mapping `id`: sizes the
    /// window, records the fault, and returns the swapped-out pages of the
    /// window other than `index` whose slots are not in the swap cache, as
    /// (mapping, index, slot), in address order.
    fn swap_ra_info(&mut self, id: u32, index: u32) -> Vec<(u32, u32, u32)> {
        let max_win = 1u32 << self.params.page_cluster.min(SWAP_RA_ORDER_CEILING);
        let m = &mut self.anon[id as usize];
        let ra = m.swap_ra;
        let win = if max_win == 1 {
            1
        } else {
            swapin_nr_pages(ra.addr, index, ra.hits, max_win, ra.win)
        };
        m.swap_ra = SwapRaInfo {
            addr: Some(index),
            win,
            hits: 0,
        };
        if win == 1 {
            return Vec::new();
        }
        let (i, w) = (i64::from(index), i64::from(win));
        let (lo, hi) = match ra.addr.map(i64::from) {
            Some(p) if i == p + 1 => (i, i + w),
            Some(p) if p == i + 1 => (i - w + 1, i + 1),
            _ => {
                let left = (w - 1) / 2;
                (i - left, i + w - left)
            }
        };
        // swap_ra_clamp_pfn(): within the vma and the faulting page's PMD.
        let pmd = i64::from(index / PMD_PAGES * PMD_PAGES);
        let size = m.pte.len() as i64;
        let start = lo.max(0).max(pmd);
        let end = hi.min(size).min(pmd + i64::from(PMD_PAGES));
        (start..end)
            .filter(|&j| j != i)
            .filter_map(|j| {
                let e = m.pte.get(j as usize);
                if e == super::anon::PTE_NONE || e & PTE_SWAP == 0 {
                    return None;
                }
                let s = e & !PTE_SWAP;
                cached_page(self.swap.cache.get(s as usize))
                    .is_none()
                    .then_some((id, j as u32, s))
            })
            .collect()
    }

    /// `swap_cluster_readahead`'s window for a major fault on `slot`, sized
    /// by `swapin_nr_pages` (the hits of all faults since the last such
    /// read; `page-cluster` bounds it, without the per-VMA ceiling): the
    /// slots of the aligned block of that many around it (in the kernel's
    /// offsets, which count the header's page first) that are in use and
    /// not in the swap cache, as (mapping, index, slot), in slot order.
    fn swap_cluster_ra_info(&mut self, slot: u32) -> Vec<(u32, u32, u32)> {
        let max_pages = 1u32 << self.params.page_cluster.min(31);
        let offset = slot + 1;
        let pages = if max_pages <= 1 {
            1
        } else {
            let sw = &mut self.swap;
            let hits = std::mem::take(&mut sw.ra_hits);
            let pages = swapin_nr_pages(sw.ra_prev, offset, hits, max_pages, sw.ra_last_pages);
            if hits == 0 {
                sw.ra_prev = Some(offset);
            }
            sw.ra_last_pages = pages;
            pages
        };
        let mask = pages - 1;
        if mask == 0 {
            return Vec::new();
        }
        // "Read a page_cluster sized and aligned cluster around offset";
        // the first page is the swap header, the last offset is si->max - 1.
        let start = (offset & !mask).max(1);
        let end = (offset | mask).min(self.swap.nr_slots as u32);
        (start..=end)
            .filter(|&o| o != offset)
            .filter_map(|o| {
                let s = o - 1;
                // __read_swap_cache_async: a free slot (no swap count) or
                // one whose page is in the swap cache is not read.
                if !self.swap.in_use(s) || cached_page(self.swap.cache.get(s as usize)).is_some() {
                    return None;
                }
                let (id, index) = self.swap.owner(s)?;
                Some((id, index, s))
            })
            .collect()
    }
}

/// `swapin_readahead` for a major fault on `slot` (page `index` of mapping
/// `id`), whose own page the caller has put in the swap cache: by VMA
/// (`swap_vma_readahead`) unless the swap device is rotational
/// (`swap_cluster_readahead`). Allocates (with reclaim, as the fault does)
/// and adds to the swap cache each page of the window, marked
/// `PG_readahead`, and returns them; the caller reads them with its own.
/// Stops early if the task is killed while allocating.
pub async fn swapin_readahead(w: &World, id: u32, index: u32, slot: u32) -> Vec<Pfn> {
    let candidates = {
        let mut k = w.k();
        if k.swap.rotational {
            k.swap_cluster_ra_info(slot)
        } else {
            k.swap_ra_info(id, index)
        }
    };
    let mut pages = Vec::with_capacity(candidates.len());
    for (id, i, slot) in candidates {
        let Some(pfn) = alloc_page_charged(w, Gfp::HIGHUSER_MOVABLE).await else {
            break;
        };
        let mut k = w.k();
        // Allocation may have slept in reclaim: the pte or the slot may have
        // changed (the slot read meanwhile, the mapping gone).
        let m = &k.anon[id as usize];
        let cached = cached_page(k.swap.cache.get(slot as usize));
        if !m.alive || m.pte.get(i as usize) != (PTE_SWAP | slot) || cached.is_some() {
            k.free_page(pfn);
            continue;
        }
        k.swapin_page(pfn, id, i, slot);
        k.frames.get_mut(pfn).set(pg::RECLAIM);
        k.count(Ev::SwapRa, 1);
        pages.push(pfn);
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::swapin_nr_pages;
    use crate::machine::Machine;
    use crate::params::Params;
    use crate::profile::profile;
    use crate::Kernel;

    /// A kernel on a machine whose swap device is rotational or not, with
    /// slots 0..24 in use, slot `s` holding page `s / 2` of mapping
    /// `1 + s % 2` (two hogs swapped out in turn).
    fn kernel(rotational: bool) -> Kernel {
        let m = Machine::from_toml(
            &format!("name='r'\ncpus=1\nmemory_mib=64\nswap_mib=64\n[[devices]]\nname='vdc'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\nrotational={rotational}\n"),
            "test",
        )
        .unwrap();
        let p = profile("v6.1").unwrap();
        let mut k = Kernel::new(m, p.clone(), Params::defaults(p), 1);
        for s in 0..24u32 {
            assert_eq!(k.swap.get_slot(), Some(s));
            if let Some(o) = k.swap.owner.get_mut(s as usize) {
                *o = (1 + s % 2, s / 2);
            }
        }
        k
    }

    #[test]
    fn slot_readahead_reads_the_aligned_block_whoever_owns_it() {
        let mut k = kernel(true);
        assert!(k.swap.rotational);
        // No hits yet and no fault next to this one: only the faulting page.
        assert!(k.swap_cluster_ra_info(9).is_empty());
        // Three hits since: 3 + 2 rounded up to 8 pages. Slot 9 is kernel
        // offset 10, whose block of 8 is offsets 8..=15, slots 7..=14; slot
        // 11's page is in the swap cache and slot 13 is free.
        k.swap.ra_hits = 3;
        k.swap.cache.set(11, 0);
        k.swap.free_slot(13);
        let got = k.swap_cluster_ra_info(9);
        let want: Vec<(u32, u32, u32)> = [7, 8, 10, 12, 14]
            .iter()
            .map(|&s| (1 + s % 2, s / 2, s))
            .collect();
        assert_eq!(got, want, "both mappings' pages, by slot");
        assert_eq!(k.swap.ra_hits, 0, "the hits are taken");
        // The next fault, with no hits, keeps at least half the last window.
        assert_eq!(
            k.swap_cluster_ra_info(20).len(),
            3,
            "offsets 20..=23 but 21"
        );
        // The first block's header page is never read: slot 0 is offset 1.
        k.swap.ra_hits = 7;
        let first = k.swap_cluster_ra_info(2);
        assert_eq!(first.first().map(|c| c.2), Some(0));
        assert!(first.iter().all(|c| c.2 <= 6), "{first:?}");
    }

    #[test]
    fn flash_swap_keeps_no_owners() {
        let k = kernel(false);
        assert!(!k.swap.rotational && k.swap.owner(3).is_none());
    }

    #[test]
    fn the_window_follows_swapin_nr_pages() {
        // No hits, not next to the last fault: one page.
        assert_eq!(swapin_nr_pages(None, 100, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(Some(50), 100, 0, 8, 0), 1);
        // No hits but adjacent: two.
        assert_eq!(swapin_nr_pages(Some(99), 100, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(Some(101), 100, 0, 8, 0), 2);
        // Hits: hits + 2 rounded up to a power of two, at least 4, capped.
        assert_eq!(swapin_nr_pages(Some(50), 100, 1, 8, 0), 4);
        assert_eq!(swapin_nr_pages(Some(50), 100, 3, 8, 0), 8);
        assert_eq!(swapin_nr_pages(Some(50), 100, 7, 8, 0), 8);
        assert_eq!(swapin_nr_pages(Some(50), 100, 7, 32, 0), 16);
        // Never below half the last window.
        assert_eq!(swapin_nr_pages(Some(50), 100, 0, 8, 8), 4);
    }
}
