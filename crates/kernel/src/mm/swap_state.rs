//! Swap readahead as a fault does it: `swap_vma_readahead` and the
//! bookkeeping that sizes its window (mm/swap_state.c, identical in 5.15 and
//! 6.1: `swap_ra_info`, `__swapin_nr_pages`, `swap_ra_clamp_pfn`,
//! `lookup_swap_cache`).
//!
//! A major swap fault reads, besides the faulting page, every other
//! swapped-out page of the window around it whose slot is not in the swap
//! cache, whatever its slot: each is allocated with the fault's gfp mask and
//! charged to the memcg like any page (`__read_swap_cache_async` →
//! `mem_cgroup_swapin_charge_folio`), so a cgroup at its limit reclaims for
//! its readahead. Each page carries `PG_readahead` (the kernel's alias of
//! `PG_reclaim`) until a fault finds it in the swap cache, which counts a
//! readahead hit; the hits size the next window. Pages whose slots follow
//! one another go to the device as one request (the plug merges them).
//!
//! Simplifications: one vma per mapping, starting on a PMD boundary; the
//! window's pages are allocated after the faulting one, not in address
//! order; anonymous mappings only (no shmem).

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
        let ra = &mut self.anon[id as usize].swap_ra;
        if readahead {
            ra.hits = (ra.hits + 1).min(SWAP_RA_HITS_MAX);
        }
        ra.addr = Some(index);
    }

    /// `swap_ra_info` for a major fault at `index` of mapping `id`: sizes the
    /// window, records the fault, and returns the swapped-out pages of the
    /// window other than `index` whose slots are not in the swap cache, as
    /// (index, slot), in address order.
    fn swap_ra_info(&mut self, id: u32, index: u32) -> Vec<(u32, u32)> {
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
                    .then_some((j as u32, s))
            })
            .collect()
    }
}

/// `swap_vma_readahead` for the pages around a major fault at `index` of
/// mapping `id`, whose own page the caller has put in the swap cache: sizes
/// the window, then allocates (with reclaim, as the fault does) and adds to
/// the swap cache each swapped-out page of it, marked `PG_readahead`.
/// Returns them; the caller reads them with its own. Stops early if the
/// task is killed while allocating.
pub async fn swap_vma_readahead(w: &World, id: u32, index: u32) -> Vec<Pfn> {
    let candidates = w.k().swap_ra_info(id, index);
    let mut pages = Vec::with_capacity(candidates.len());
    for (i, slot) in candidates {
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
