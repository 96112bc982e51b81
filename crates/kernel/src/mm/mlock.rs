//! `mlock` and the unevictable LRU: pages of a `VM_LOCKED` mapping are
//! `PG_mlocked`, live on `LRU_UNEVICTABLE`, and are never scanned by reclaim
//! (`shrink_lruvec` walks `for_each_evictable_lru`, and
//! `zone_reclaimable_pages` counts only the evictable lists, so they are not
//! in `should_reclaim_retry`'s `available` either).
//!
//! Follows 5.9.1 (`ach84/linux-5.9.1`): mm/mlock.c `mlock_vma_page`,
//! `munlock_vma_page`, `__munlock_isolated_page`,
//! `__munlock_isolation_failed`; mm/swap.c
//! `lru_cache_add_inactive_or_unevictable` and `__pagevec_lru_add_fn` (which
//! decides the list and counts `unevictable_pgs_culled` / `_rescued`);
//! mm/vmscan.c `shrink_page_list` (a `!page_evictable` page goes to
//! `activate_locked` and is culled by `move_pages_to_lru` →
//! `putback_lru_page`). Same shape in 5.15.0 and 6.1.0, where folios replace
//! pages (6.1: `mlock_folio`, the mlock pagevec).
//!
//! Simplifications: one vma per mapping, so `mlock()` applies to a whole
//! mapping; `mlock()` of a mapping with swapped-out pages leaves them swapped
//! (the kernel's `__mm_populate` would fault them back in); no shared
//! mappings, so `try_to_munlock` never finds another locker.

use super::page::{pg, Pfn};
use super::NodeStat;
use crate::vmstat::Ev;
use crate::Kernel;

impl Kernel {
    /// `mlock(2)` (`mlock_fixup` + populate) of anon mapping `id`: sets
    /// `VM_LOCKED`, so that its later faults add mlocked pages straight to
    /// the unevictable list, and runs `mlock_vma_page` on each resident page.
    pub fn mlock(&mut self, id: u32) {
        self.anon[id as usize].locked = true;
        let m = &self.anon[id as usize];
        let pfns: Vec<Pfn> = m
            .pte
            .iter()
            .filter(|&e| e != super::anon::PTE_NONE && e & super::anon::PTE_SWAP == 0)
            .collect();
        for pfn in pfns {
            self.mlock_vma_page(pfn);
        }
    }

    /// `mlock_vma_page` (5.9.1 mm/mlock.c): if `TestSetPageMlocked` finds
    /// the page not yet mlocked, count `NR_MLOCK` and
    /// `unevictable_pgs_mlocked`, then `isolate_lru_page` + `putback_lru_page`
    /// moves it to the unevictable list (`unevictable_pgs_culled`). A page
    /// reclaim holds isolated is left to reclaim's putback, which culls it.
    pub fn mlock_vma_page(&mut self, pfn: Pfn) {
        let p = *self.frames.get(pfn);
        if p.test(pg::MLOCKED) {
            return;
        }
        let nid = self.frames.nid(pfn);
        self.frames.get_mut(pfn).set(pg::MLOCKED);
        self.nodes[nid].mod_state(NodeStat::NrMlock, 1);
        self.count(Ev::UnevictablePgsMlocked, 1);
        if p.test(pg::LRU) {
            self.lru_del(pfn);
            self.putback_lru_page(pfn);
        }
    }

    /// `putback_lru_page` → `lru_cache_add` → `__pagevec_lru_add_fn`
    /// (5.9.1 mm/swap.c) for a page off every list: an mlocked page goes to
    /// the unevictable list, inactive (`unevictable_pgs_culled` if it was not
    /// unevictable before), an evictable one to the list its flags select
    /// (`unevictable_pgs_rescued` if it was unevictable).
    pub fn putback_lru_page(&mut self, pfn: Pfn) {
        self.lru_add_evictable_or_not(pfn);
        self.lru_add(pfn);
    }

    /// The list decision of `__pagevec_lru_add_fn` (5.9.1 mm/swap.c):
    /// sets or clears `PG_unevictable` (and clears `PG_active` for an
    /// unevictable page) by `page_evictable`, counting
    /// `unevictable_pgs_culled` / `unevictable_pgs_rescued`. The caller
    /// adds the page to the list [`super::page::Lru::of`] now selects.
    pub fn lru_add_evictable_or_not(&mut self, pfn: Pfn) {
        let p = self.frames.get_mut(pfn);
        let was_unevictable = p.test(pg::UNEVICTABLE);
        if page_evictable(p.flags) {
            p.clear(pg::UNEVICTABLE);
            if was_unevictable {
                self.count(Ev::UnevictablePgsRescued, 1);
            }
        } else {
            p.clear(pg::ACTIVE);
            p.set(pg::UNEVICTABLE);
            if !was_unevictable {
                self.count(Ev::UnevictablePgsCulled, 1);
            }
        }
    }

    /// The flags `do_anonymous_page` gives a new page of mapping `id`:
    /// `lru_cache_add_inactive_or_unevictable` (5.9.1 mm/swap.c) sets
    /// `PG_mlocked` in a `VM_LOCKED` vma, and `__pagevec_lru_add_fn` then
    /// puts it on the unevictable list.
    pub fn new_anon_page_flags(&self, id: u32) -> super::page::PageFlags {
        let base = pg::SWAPBACKED | pg::UPTODATE;
        if self.anon[id as usize].locked {
            base | pg::MLOCKED | pg::UNEVICTABLE
        } else {
            base
        }
    }

    /// The counts of a page faulted into a `VM_LOCKED` vma:
    /// `NR_MLOCK` and `unevictable_pgs_mlocked`
    /// (`lru_cache_add_inactive_or_unevictable`), `unevictable_pgs_culled`
    /// (`__pagevec_lru_add_fn`, the page was not unevictable before).
    pub(crate) fn account_mlocked_fault(&mut self, nid: usize) {
        self.nodes[nid].mod_state(NodeStat::NrMlock, 1);
        self.count(Ev::UnevictablePgsMlocked, 1);
        self.count(Ev::UnevictablePgsCulled, 1);
    }

    /// `munlock_vma_pages_all` (5.9.1 mm/mlock.c, called by `munmap` and
    /// `exit_mmap` for a `VM_LOCKED` vma) over mapping `id`: for each
    /// resident mlocked page, `munlock_vma_page` clears `PG_mlocked`
    /// (`NR_MLOCK`), and either takes it off the unevictable list and puts
    /// it back evictable (`unevictable_pgs_munlocked`, then `_rescued`), or,
    /// when reclaim holds it isolated, counts the failed isolation
    /// (`__munlock_isolation_failed`: `unevictable_pgs_stranded` if it is
    /// still marked unevictable, else `unevictable_pgs_munlocked`).
    pub fn munlock_vma_pages_all(&mut self, id: u32) {
        self.anon[id as usize].locked = false;
        let m = &self.anon[id as usize];
        let pfns: Vec<Pfn> = m
            .pte
            .iter()
            .filter(|&e| e != super::anon::PTE_NONE && e & super::anon::PTE_SWAP == 0)
            .collect();
        for pfn in pfns {
            let p = *self.frames.get(pfn);
            if !p.test(pg::MLOCKED) {
                continue;
            }
            let nid = self.frames.nid(pfn);
            self.frames.get_mut(pfn).clear(pg::MLOCKED);
            self.nodes[nid].mod_state(NodeStat::NrMlock, -1);
            if p.test(pg::LRU) {
                self.count(Ev::UnevictablePgsMunlocked, 1);
                self.lru_del(pfn);
                self.putback_lru_page(pfn);
            } else if p.test(pg::UNEVICTABLE) {
                self.count(Ev::UnevictablePgsStranded, 1);
            } else {
                self.count(Ev::UnevictablePgsMunlocked, 1);
            }
        }
    }
}

/// `page_evictable` (5.9.1 mm/internal.h): `!mapping_unevictable(mapping)
/// && !PageMlocked(page)`; no mapping here is unevictable (no ramfs, no
/// `SHM_LOCK`), so only `PG_mlocked` decides.
#[inline]
pub fn page_evictable(flags: super::page::PageFlags) -> bool {
    flags & pg::MLOCKED == 0
}
