//! The list-level reclaim functions: isolation, `shrink_active_list`,
//! `shrink_inactive_list`, and the per-page decision tree of
//! `shrink_folio_list` (5.15's `shrink_page_list`) with `pageout`.
//!
//! Timing: pages are isolated, their fate is decided, the CPU cost of the
//! batch is paid *while they are still isolated* (so concurrent reclaimers see
//! `NR_ISOLATED_*` high, which is what `too_many_isolated` measures), the
//! writes are submitted (possibly waiting in the block layer, still
//! isolated), then survivors go back to the LRU and the rest are freed.
//! Mappings are updated at decision time (as the page lock would), so a task
//! faulting meanwhile never finds a page that is about to be freed.

use super::{ScanControl, SWAP_CLUSTER_MAX};
use crate::block::{submit_bio, ReqKind, BLK_RW_ASYNC};
use crate::engine::World;
use crate::fs::ioend::FsWritepage;
use crate::mm::anon::ORPHAN;
use crate::mm::memcontrol::MemcgVm;
use crate::mm::page::{pg, Lru, Pfn};
use crate::mm::swap::SHADOW;
use crate::mm::{NodeStat, LRUVEC_CONGESTED, PGDAT_DIRTY, PGDAT_WRITEBACK};
use crate::profile::CongestionFlags;
use crate::sched::run_on_cpu;
use crate::throttle::throttle_at;
use crate::vmstat::Ev;
use crate::Kernel;

/// What `pageout` did (5.15 `pageout_t`, less `PAGE_KEEP`/`PAGE_CLEAN`,
/// which the model never returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pageout {
    /// `PAGE_SUCCESS`, writeback started.
    Success,
    /// `PAGE_SUCCESS`, but `->writepage` redirtied the page.
    Redirtied,
    /// `PAGE_ACTIVATE`: no `->writepage`.
    Activate,
}

/// Where a page goes after `shrink_folio_list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Freed (`free_it`).
    Free,
    /// Back to the active list (`activate_locked`).
    Activate,
    /// Back to the inactive list (`keep`).
    Keep,
    /// Case 3: cgroup v1 limit reclaim waits for this page's writeback,
    /// then tries it again.
    WaitWriteback,
}

/// `enum page_references`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FolioReferences {
    Reclaim,
    ReclaimClean,
    Keep,
    Activate,
}

/// `struct reclaim_stat`
#[derive(Clone, Copy, Debug, Default)]
struct ReclaimStat {
    nr_dirty: u64,
    nr_unqueued_dirty: u64,
    nr_congested: u64,
    nr_writeback: u64,
    nr_immediate: u64,
    nr_pageout: u64,
    nr_activate: [u64; 2],
    nr_ref_keep: u64,
    nr_unmap_fail: u64,
    /// 2.6.37 `shrink_page_list`'s `nr_dirty`: pages still `PageDirty`
    /// where it decides to write them.
    zone_dirty: u64,
    /// 2.6.37's `nr_congested`: of those, pages whose `pageout()` returns
    /// `PAGE_KEEP` because `may_write_to_queue()` refuses a write-congested
    /// bdi (never for kswapd, which has `PF_SWAPWRITE`).
    zone_congested: u64,
}

/// Pages a batch freed, by kind: their freeing costs differ
/// (`cost.reclaim_page_ns`, `cost.reclaim_anon_page_ns`).
#[derive(Clone, Copy, Debug, Default)]
struct Freed {
    file: u64,
    anon: u64,
}

/// A write `pageout` queued: device, kind, device position, page.
type PendingWrite = (usize, ReqKind, u64, Pfn);

/// What a batch's `shrink_folio_list` leaves to do outside the kernel's
/// borrow: writes to submit, and pages to wait for (case 3).
#[derive(Default)]
struct BatchIo {
    writes: Vec<PendingWrite>,
    waits: Vec<Pfn>,
}

impl BatchIo {
    /// CPU of `shrink_folio_list`'s decisions beyond the scan: each page
    /// freed (a page-cache or an anonymous one), each reverse-map walk of
    /// a mapped page's references, each write submitted, and for each
    /// anonymous page sent to swap the unmap and swap-cache work of
    /// `try_to_unmap` and `add_to_swap` (all measured on the reference
    /// host: docs/bench/cpu-costs.md, `perf_page_costs`,
    /// `anon_reclaim_cost`). A swap write's submission (5.15
    /// `__swap_writepage`: a bio per page) is cost.swap_submit_page_ns,
    /// measured apart from the swap-out's 4.1 µs; a file page's write
    /// keeps cost.io_submit_page_ns.
    fn decision_cost(&self, p: &crate::params::Params, freed: Freed, rmap_walks: u64) -> u64 {
        let swapouts = self
            .writes
            .iter()
            .filter(|w| w.1 == ReqKind::SwapOut)
            .count() as u64;
        freed.file * p.cost_reclaim_ns
            + freed.anon * p.cost_reclaim_anon_ns
            + rmap_walks * p.cost_rmap_ns
            + (self.writes.len() as u64 - swapouts) * p.cost_io_submit_ns
            + swapouts * (p.cost_swap_submit_ns + p.cost_swapout_ns)
    }
}

impl Kernel {
    /// The pages of `pages` (a batch's freed ones) by kind.
    fn freed(&self, pages: &[Pfn]) -> Freed {
        let file = pages
            .iter()
            .filter(|&&pfn| self.frames.get(pfn).test(pg::FILE))
            .count() as u64;
        Freed {
            file,
            anon: pages.len() as u64 - file,
        }
    }

    /// `isolate_lru_folios`: takes up to `nr_to_scan` pages from the tail of
    /// `lru`, holding `lru_lock` meanwhile. Returns the pages and the ns the
    /// current task spins on the lock first (0 with the model off).
    fn isolate_lru_folios(
        &mut self,
        nid: usize,
        memcg: usize,
        lru: Lru,
        nr_to_scan: u64,
    ) -> (Vec<Pfn>, u64) {
        let mut taken = self.pfn_vec();
        // The batch is the `nr_to_scan` oldest pages, taken off the ring
        // without reading their frames, which are then fetched together
        // before any is touched (see mm/lru_list.rs).
        let list = &mut self.nodes[nid].lruvecs[memcg].lists[lru as usize];
        list.take_tail(&mut self.frames, nr_to_scan as usize, &mut taken);
        for &pfn in &taken {
            crate::mm::lru_list::prefetch(&self.frames, pfn);
        }
        list.prefetch_tail(&self.frames, nr_to_scan as usize);
        // Taken under lru_lock: what the caller spins first.
        let spin = self.lru_lock(nid, memcg, taken.len() as u64);
        for &pfn in &taken {
            let p = self.frames.get_mut(pfn);
            p.clear(pg::LRU);
            p.set(pg::ISOLATED);
        }
        let n = taken.len() as i64;
        let item = if lru.is_file() {
            NodeStat::NrIsolatedFile
        } else {
            NodeStat::NrIsolatedAnon
        };
        self.nodes[nid].mod_state(item, n);
        (taken, spin)
    }

    /// `move_folios_to_lru` (5.15 `move_pages_to_lru`) for a batch isolated
    /// from one lruvec, in order: frees pages whose mapping went away while
    /// they were isolated, and puts the rest at the head of the list their
    /// flags select. The pages of each list keep their order, so one room
    /// check serves the batch.
    fn move_folios_to_lru(&mut self, nid: usize, memcg: usize, pages: &[Pfn]) {
        let mut to = std::mem::take(&mut self.lru_scratch);
        let mut nr_active = 0;
        for &pfn in pages {
            let p = self.frames.get_mut(pfn);
            p.clear(pg::ISOLATED);
            if p.owner == ORPHAN && !p.test(pg::FILE) && !p.test(pg::WRITEBACK) {
                if p.test(pg::SWAPCACHE) {
                    self.delete_from_swap_cache(pfn);
                }
                self.free_page(pfn);
                continue;
            }
            debug_assert_eq!(p.memcg as usize, memcg);
            // 5.9.1 move_pages_to_lru: a !page_evictable page goes through
            // putback_lru_page, which puts it on the unevictable list.
            if p.test(pg::MLOCKED | pg::UNEVICTABLE) {
                self.lru_add_evictable_or_not(pfn);
            }
            let p = self.frames.get_mut(pfn);
            p.set(pg::LRU);
            // A page put back active ages the non-resident clock
            // (workingset_age_nonresident, 5.15 move_pages_to_lru).
            nr_active += u64::from(p.test(pg::ACTIVE));
            to[Lru::of(p.flags) as usize].push(pfn);
        }
        let lruvec = &mut self.nodes[nid].lruvecs[memcg];
        lruvec.nonresident_age += nr_active;
        for (list, pfns) in lruvec.lists.iter_mut().zip(&mut to) {
            list.push_head_many(&mut self.frames, pfns);
            pfns.clear();
        }
        self.lru_scratch = to;
    }

    /// `too_many_isolated` (5.15; 5.16 adds the ISOLATED wake-up).
    fn too_many_isolated(&mut self, nid: usize, file: bool, sc: &ScanControl) -> bool {
        if self.current_is_kswapd() || !sc.writeback_throttling_sane() {
            return false;
        }
        let node = &self.nodes[nid];
        let (mut inactive, isolated) = if file {
            (
                node.lru_pages(Lru::InactiveFile),
                node.state(NodeStat::NrIsolatedFile),
            )
        } else {
            (
                node.lru_pages(Lru::InactiveAnon),
                node.state(NodeStat::NrIsolatedAnon),
            )
        };
        if sc.gfp.io && sc.gfp.fs {
            inactive >>= 3;
        }
        let too_many = isolated.max(0) as u64 > inactive;
        if !too_many {
            self.wake_throttle_isolated(nid);
        }
        too_many
    }

    /// Whether file page `pfn` is mapped by a `VM_EXEC` mapping (its
    /// file is a program image, `crate::mm::text`), for the `VM_EXEC`
    /// branches of `folio_check_references` and `shrink_active_list`;
    /// never with `vmscan.vm_exec_rules = 0` (a what-if, no kernel). The
    /// rules are in every profile: 2.6.31 brought `shrink_active_list`'s,
    /// 3.3 the first-pass activation (the 2.6.36/2.6.37 profiles have it
    /// too, a simplification).
    fn vm_exec_file_page(&self, pfn: Pfn) -> bool {
        let p = self.frames.get(pfn);
        let file = &self.files[p.owner as usize];
        self.params.vm_exec_rules != 0 && file.exec && file.page_mapped(p.index)
    }

    /// `folio_check_references` (5.15 `page_check_references`).
    fn folio_check_references(&mut self, pfn: Pfn) -> FolioReferences {
        let anon = !self.frames.get(pfn).test(pg::FILE);
        let referenced_ptes = if anon {
            self.anon_referenced(pfn).unwrap_or(0)
        } else {
            self.file_referenced(pfn)
        };
        let exec = !anon && self.vm_exec_file_page(pfn);
        let p = self.frames.get_mut(pfn);
        let referenced_page = p.test(pg::REFERENCED);
        p.clear(pg::REFERENCED);
        if referenced_ptes > 0 {
            p.set(pg::REFERENCED);
            if referenced_page || referenced_ptes > 1 {
                return FolioReferences::Activate;
            }
            // 5.10 `page_check_references` (`VM_EXEC && !PageSwapBacked`),
            // 6.1 `folio_check_references` (`VM_EXEC &&
            // folio_is_file_lru`): a mapped executable file page is
            // activated after its first referenced pass, not given a
            // second trip round the inactive list.
            if exec {
                return FolioReferences::Activate;
            }
            return FolioReferences::Keep;
        }
        if referenced_page && !p.test(pg::SWAPBACKED) {
            return FolioReferences::ReclaimClean;
        }
        FolioReferences::Reclaim
    }

    /// `pageout`: starts writeback of a dirty page (`->writepage` with
    /// `for_reclaim`); the page stays on the inactive list under writeback.
    /// For a file page the data filesystem decides first
    /// ([`Kernel::fs_writepage`]).
    fn pageout(&mut self, pfn: Pfn, writes: &mut Vec<PendingWrite>) -> Pageout {
        let p = self.frames.get(pfn);
        let file = p.test(pg::FILE);
        if file {
            match self.fs_writepage(pfn) {
                FsWritepage::Write => {}
                // 5.15 pageout(): `mapping->a_ops->writepage == NULL`.
                FsWritepage::None => return Pageout::Activate,
                FsWritepage::Redirty => {
                    // ext4_writepage redirtied the page without writing
                    // it; pageout() still counts a write: no writeback
                    // started, so PG_reclaim is cleared (5.15 pageout:
                    // "synchronous write or broken a_ops?"), then
                    // NR_VMSCAN_WRITE and PAGE_SUCCESS.
                    self.frames.get_mut(pfn).clear(pg::RECLAIM);
                    self.count(Ev::NrVmscanWrite, 1);
                    return Pageout::Redirtied;
                }
            }
            self.clear_page_dirty_for_io(pfn);
        } else {
            self.frames.get_mut(pfn).clear(pg::DIRTY);
        }
        self.frames.get_mut(pfn).set(pg::RECLAIM);
        self.folio_start_writeback(pfn);
        self.count(Ev::NrVmscanWrite, 1);
        self.count(Ev::Pgpgout, 4);
        let p = *self.frames.get(pfn);
        if file {
            let f = &self.files[p.owner as usize];
            writes.push((f.dev, ReqKind::FileWrite, f.pos + u64::from(p.index), pfn));
        } else {
            self.count(Ev::Pswpout, 1);
            writes.push((
                self.swap.dev,
                ReqKind::SwapOut,
                self.swap.base_pos + u64::from(p.swap),
                pfn,
            ));
        }
        Pageout::Success
    }

    /// `shrink_folio_list` (5.15 `shrink_page_list`): decides the fate of
    /// each isolated page. The pages to free stay in `pages` (the kernel's
    /// `free_pages` list), the rest move to `keep` (`ret_pages`), each in
    /// batch order; pages to write and (cgroup v1, case 3) to wait for are
    /// queued in `io`. Returns the number reclaimed and the number activated.
    fn shrink_folio_list(
        &mut self,
        pages: &mut Vec<Pfn>,
        keep: &mut Vec<Pfn>,
        nid: usize,
        sc: &mut ScanControl,
        stat: &mut ReclaimStat,
        io: &mut BatchIo,
    ) -> (u64, u64) {
        let is_kswapd = self.current_is_kswapd();
        let mut nr_reclaimed = 0;
        let mut nr_activate = 0;
        for i in 0..pages.len() {
            let pfn = pages[i];
            match self.shrink_one(pfn, nid, sc, stat, &mut io.writes, is_kswapd) {
                Verdict::Free => {
                    pages[nr_reclaimed] = pfn;
                    nr_reclaimed += 1;
                }
                Verdict::Activate => {
                    nr_activate += 1;
                    keep.push(pfn);
                }
                Verdict::Keep => keep.push(pfn),
                Verdict::WaitWriteback => io.waits.push(pfn),
            }
        }
        pages.truncate(nr_reclaimed);
        (nr_reclaimed as u64, nr_activate)
    }

    fn shrink_one(
        &mut self,
        pfn: Pfn,
        nid: usize,
        sc: &mut ScanControl,
        stat: &mut ReclaimStat,
        writes: &mut Vec<PendingWrite>,
        is_kswapd: bool,
    ) -> Verdict {
        let (flags, owner) = {
            let p = self.frames.get(pfn);
            (p.flags, p.owner)
        };
        let file = flags & pg::FILE != 0;
        // A page whose mapping went away while it was isolated or under
        // writeback: nothing maps it; drop it (or let writeback end first).
        if owner == ORPHAN && !file {
            if flags & pg::WRITEBACK != 0 {
                return Verdict::Keep;
            }
            if flags & pg::SWAPCACHE != 0 {
                self.delete_from_swap_cache(pfn);
            }
            sc.nr_scanned += 1;
            return Verdict::Free;
        }
        // folio_trylock() fails on pages under read I/O.
        if flags & pg::LOCKED != 0 {
            return Verdict::Keep;
        }
        sc.nr_scanned += 1;
        // 5.9.1 shrink_page_list: `if (unlikely(!page_evictable(page)))
        // goto activate_locked;` — a straggler mlocked while it sat on an
        // evictable list; the putback culls it (move_folios_to_lru).
        if !crate::mm::mlock::page_evictable(flags) {
            return self.activate(pfn, stat);
        }
        // A page of a VM_LOCKED vma not yet PG_mlocked: page_referenced
        // reports VM_LOCKED, page_check_references returns PAGEREF_RECLAIM
        // and try_to_unmap_one mlocks the page and fails (5.9.1 mm/rmap.c),
        // so it is activated and culled the same way.
        if !file && owner != ORPHAN && self.anon[owner as usize].locked {
            self.mlock_vma_page(pfn);
            return self.activate(pfn, stat);
        }
        let may_enter_fs = sc.gfp.fs || (flags & pg::SWAPCACHE != 0 && sc.gfp.io);
        // folio_check_dirty_writeback(): anon pages are never "dirty" here.
        let dirty = file && flags & pg::DIRTY != 0;
        let writeback = file && flags & pg::WRITEBACK != 0;
        if dirty || writeback {
            stat.nr_dirty += 1;
        }
        if dirty && !writeback {
            stat.nr_unqueued_dirty += 1;
        }
        // 5.15: inode_write_congested() of the backing device, or a page
        // already marked for immediate reclaim still under writeback.
        let inode_congested = (dirty || writeback)
            && self.devs[self.files[owner as usize].dev].congested[BLK_RW_ASYNC];
        if inode_congested || (writeback && flags & pg::RECLAIM != 0) {
            stat.nr_congested += 1;
        }
        if flags & pg::WRITEBACK != 0 {
            // Case 1: kswapd meets a PG_reclaim page again while the node is
            // flagged as having pages under writeback at the LRU tail.
            if is_kswapd && flags & pg::RECLAIM != 0 && self.nodes[nid].flags & PGDAT_WRITEBACK != 0
            {
                stat.nr_immediate += 1;
                return self.activate(pfn, stat);
            }
            // Case 2: mark it for immediate reclaim and move on.
            if sc.writeback_throttling_sane() || flags & pg::RECLAIM == 0 || !may_enter_fs {
                self.frames.get_mut(pfn).set(pg::RECLAIM);
                stat.nr_writeback += 1;
                return self.activate(pfn, stat);
            }
            // Case 3: cgroup v1 limit reclaim, which balance_dirty_pages
            // does not throttle, meets a page it marked before: wait for
            // the write (wait_on_page_writeback), then try it again.
            return Verdict::WaitWriteback;
        }
        let references = self.folio_check_references(pfn);
        match references {
            FolioReferences::Activate => return self.activate(pfn, stat),
            FolioReferences::Keep => {
                stat.nr_ref_keep += 1;
                return Verdict::Keep;
            }
            FolioReferences::Reclaim | FolioReferences::ReclaimClean => {}
        }
        let mut may_enter_fs = may_enter_fs;
        if !file && self.frames.get(pfn).flags & pg::SWAPCACHE == 0 {
            if !sc.gfp.io {
                return Verdict::Keep;
            }
            if !self.add_to_swap(pfn) {
                return self.activate(pfn, stat);
            }
            may_enter_fs = true;
        }
        // try_to_unmap(): always succeeds for our private anon pages and
        // read-only shared file mappings.
        if file {
            self.file_unmap(pfn);
        } else {
            self.anon_unmap(pfn);
        }
        if self.frames.get(pfn).test(pg::DIRTY) {
            // 2.6.37: nr_dirty++ first; a page that gets as far as
            // pageout() on a write-congested bdi is "congested".
            stat.zone_dirty += 1;
            if !is_kswapd
                && references != FolioReferences::ReclaimClean
                && may_enter_fs
                && sc.may_writepage
            {
                let dev = if file {
                    self.files[owner as usize].dev
                } else {
                    self.swap.dev
                };
                if self.devs[dev].congested[BLK_RW_ASYNC] {
                    stat.zone_congested += 1;
                }
            }
            let p = self.frames.get(pfn);
            if file
                && (!is_kswapd || !p.test(pg::RECLAIM) || self.nodes[nid].flags & PGDAT_DIRTY == 0)
            {
                // Direct reclaim never writes file pages; kswapd only on the
                // second encounter while PGDAT_DIRTY is set.
                self.count(Ev::NrVmscanImmediateReclaim, 1);
                self.frames.get_mut(pfn).set(pg::RECLAIM);
                return self.activate(pfn, stat);
            }
            if references == FolioReferences::ReclaimClean || !may_enter_fs || !sc.may_writepage {
                return Verdict::Keep;
            }
            return match self.pageout(pfn, writes) {
                Pageout::Activate => self.activate(pfn, stat),
                // PAGE_SUCCESS: under writeback, or still dirty: keep.
                Pageout::Success | Pageout::Redirtied => {
                    stat.nr_pageout += 1;
                    Verdict::Keep
                }
            };
        }
        // __remove_mapping(): leave a shadow entry, free the page. Until the
        // batch is freed the frame belongs to no mapping (ORPHAN).
        if file {
            self.remove_file_page(pfn);
        } else {
            let shadow = self.workingset_eviction(pfn);
            let slot = self.frames.get(pfn).swap;
            self.frames.get_mut(pfn).clear(pg::SWAPCACHE);
            self.nodes[nid].mod_state(NodeStat::NrSwapcache, -1);
            self.swap.cache.set(slot as usize, SHADOW | shadow);
        }
        self.frames.get_mut(pfn).owner = ORPHAN;
        Verdict::Free
    }

    /// `activate_locked`
    fn activate(&mut self, pfn: Pfn, stat: &mut ReclaimStat) -> Verdict {
        let p = self.frames.get_mut(pfn);
        if !p.test(pg::MLOCKED) {
            p.set(pg::ACTIVE);
            stat.nr_activate[usize::from(p.test(pg::FILE))] += 1;
        }
        Verdict::Activate
    }

    /// Frees a page reclaim decided to free.
    fn free_reclaimed(&mut self, pfn: Pfn) {
        let p = self.frames.get_mut(pfn);
        p.clear(pg::ISOLATED);
        self.free_page(pfn);
    }
}

/// Submits the writes `pageout` queued, merging adjacent pages per device
/// (the block plug of `shrink_lruvec`).
async fn submit_pageouts(w: &World, mut writes: Vec<PendingWrite>) {
    writes.sort_by_key(|&(d, _, pos, _)| (d, pos));
    let mut i = 0;
    while i < writes.len() {
        let (d, kind, pos, _) = writes[i];
        let max = w.k().devs[d].max_request_pages;
        let mut j = i + 1;
        while j < writes.len()
            && j - i < max
            && writes[j].0 == d
            && writes[j].1 == kind
            && writes[j].2 == pos + (j - i) as u64
        {
            j += 1;
        }
        let pages: Vec<Pfn> = writes[i..j].iter().map(|w| w.3).collect();
        submit_bio(w, d, kind, pages, pos, false).await;
        i = j;
    }
}

/// `shrink_inactive_list` (5.15; the too-many-isolated stall per profile).
pub(super) async fn shrink_inactive_list(
    w: &World,
    nr_to_scan: u64,
    nid: usize,
    memcg: usize,
    sc: &mut ScanControl,
    lru: Lru,
) -> u64 {
    let file = lru.is_file();
    let mut stalled = false;
    loop {
        let too_many = w.k().too_many_isolated(nid, file, sc);
        if !too_many {
            break;
        }
        // 5.x stalls once; 2.6.36/2.6.37 loop while it holds (a site set
        // to `none` gives up at once rather than spin without time passing).
        let unbounded = {
            let k = w.k();
            k.profile.early.too_many_isolated_unbounded
                && k.profile.too_many_isolated != crate::profile::Sleep::None
        };
        if stalled && !unbounded {
            return 0;
        }
        stalled = true;
        let site = w.k().profile.too_many_isolated;
        throttle_at(w, site, nid).await;
        if w.k().current().killed {
            return SWAP_CLUSTER_MAX;
        }
    }
    let (pages, is_kswapd, spin) = {
        let mut k = w.k();
        let (pages, spin) = k.isolate_lru_folios(nid, memcg, lru, nr_to_scan);
        let n = pages.len() as u64;
        let is_kswapd = k.current_is_kswapd();
        if !sc.cgroup_reclaim() {
            k.count(
                if is_kswapd {
                    Ev::PgscanKswapd
                } else {
                    Ev::PgscanDirect
                },
                n,
            );
        }
        k.count(if file { Ev::PgscanFile } else { Ev::PgscanAnon }, n);
        let item = if is_kswapd {
            MemcgVm::PgscanKswapd
        } else {
            MemcgVm::PgscanDirect
        };
        k.count_memcg_events(memcg as u16, item, n);
        (pages, is_kswapd, spin)
    };
    let nr_taken = pages.len() as u64;
    if nr_taken == 0 {
        let mut k = w.k();
        k.charge_sys(spin);
        k.recycle_pfn_vec(pages);
        return 0;
    }
    let mut stat = ReclaimStat::default();
    let mut io = BatchIo::default();
    // After the call `pages` holds the pages to free, `survivors` the rest.
    let (mut pages, mut survivors) = (pages, w.k().pfn_vec());
    let (mut nr_reclaimed, mut nr_activate) =
        w.k()
            .shrink_folio_list(&mut pages, &mut survivors, nid, sc, &mut stat, &mut io);
    // The batch's CPU cost is paid while the pages are still isolated.
    let cost = {
        let mut k = w.k();
        let walks = std::mem::take(&mut k.rmap_walks);
        let p = &k.params;
        spin + nr_taken * p.cost_scan_ns + io.decision_cost(p, k.freed(&pages), walks)
    };
    run_on_cpu(w, 0, cost).await;
    // pageout() submits its bio from inside shrink_page_list, so a
    // reclaimer that blocks in the block layer (blk-wbt, request tags)
    // blocks with its whole batch still isolated (5.15 shrink_page_list →
    // pageout → swap_writepage → submit_bio → rq_qos_throttle).
    if !io.writes.is_empty() {
        submit_pageouts(w, std::mem::take(&mut io.writes)).await;
    }
    // Case 3 pages (cgroup v1 limit reclaim): each waited for in turn,
    // the batch still isolated, then decided again.
    while !io.waits.is_empty() {
        for &pfn in &io.waits {
            wait_on_page_writeback(w, pfn).await;
        }
        let mut again = std::mem::take(&mut io.waits);
        let (r, a) =
            w.k()
                .shrink_folio_list(&mut again, &mut survivors, nid, sc, &mut stat, &mut io);
        let cost = {
            let mut k = w.k();
            let walks = std::mem::take(&mut k.rmap_walks);
            io.decision_cost(&k.params, k.freed(&again), walks)
        };
        run_on_cpu(w, 0, cost).await;
        if !io.writes.is_empty() {
            submit_pageouts(w, std::mem::take(&mut io.writes)).await;
        }
        pages.extend_from_slice(&again);
        nr_reclaimed += r;
        nr_activate += a;
    }
    // move_folios_to_lru() under the lock (lru_note_cost() right after
    // takes it again, briefly: counted as part of this hold). The spin
    // comes first, paid now: the task spins with its batch still isolated
    // (NR_ISOLATED_* fall only under the lock, 5.15 shrink_inactive_list),
    // and a reclaimer that scans on without blocking (kswapd, a long
    // direct reclaim pass) must not take its next batch before its CPU
    // has got through this put-back.
    let putback_spin = w.k().lru_lock(nid, memcg, nr_taken - nr_reclaimed);
    run_on_cpu(w, 0, putback_spin).await;
    let v1_dirty_throttle = {
        let mut k = w.k();
        for &pfn in &pages {
            k.free_reclaimed(pfn);
        }
        k.move_folios_to_lru(nid, memcg, &survivors);
        k.recycle_pfn_vec(pages);
        k.recycle_pfn_vec(survivors);
        k.count(Ev::Pgactivate, nr_activate);
        let item = if file {
            NodeStat::NrIsolatedFile
        } else {
            NodeStat::NrIsolatedAnon
        };
        k.nodes[nid].mod_state(item, -(nr_taken as i64));
        if !sc.cgroup_reclaim() {
            k.count(
                if is_kswapd {
                    Ev::PgstealKswapd
                } else {
                    Ev::PgstealDirect
                },
                nr_reclaimed,
            );
        }
        let item = if is_kswapd {
            MemcgVm::PgstealKswapd
        } else {
            MemcgVm::PgstealDirect
        };
        k.count_memcg_events(memcg as u16, item, nr_reclaimed);
        k.count_memcg_events(memcg as u16, MemcgVm::Pgactivate, nr_activate);
        k.count(
            if file {
                Ev::PgstealFile
            } else {
                Ev::PgstealAnon
            },
            nr_reclaimed,
        );
        // 6.2+ shrink_inactive_list: `lru_note_cost(lruvec, file,
        // stat.nr_pageout, nr_scanned - nr_reclaimed)` (nr_scanned: the
        // pages isolated here; the model skips none).
        k.lru_note_cost(nid, memcg, file, stat.nr_pageout, nr_taken - nr_reclaimed);
        // The whole batch was dirty file pages nobody queued for IO: the
        // flushers are behind; nudge them (wakeup_flusher_threads(WB_REASON_VMSCAN)).
        let all_unqueued_dirty = stat.nr_unqueued_dirty == nr_taken;
        if all_unqueued_dirty {
            k.wakeup_flusher_threads();
        }
        sc.nr.dirty += stat.nr_dirty;
        sc.nr.congested += stat.nr_congested;
        sc.nr.unqueued_dirty += stat.nr_unqueued_dirty;
        sc.nr.writeback += stat.nr_writeback;
        sc.nr.immediate += stat.nr_immediate;
        sc.nr.taken += nr_taken;
        if file {
            sc.nr.file_taken += nr_taken;
        }
        if k.trace_cfg.verbose {
            crate::trace!(
                k,
                "mm_vmscan_lru_shrink_inactive",
                "nid={} nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} nr_congested={} nr_immediate={} nr_activate_anon={} nr_activate_file={} nr_ref_keep={} nr_unmap_fail={} priority={} flags=RECLAIM_WB_{}|RECLAIM_WB_ASYNC",
                nid, nr_taken, nr_reclaimed, stat.nr_dirty, stat.nr_writeback, stat.nr_congested, stat.nr_immediate,
                stat.nr_activate[0], stat.nr_activate[1], stat.nr_ref_keep, stat.nr_unmap_fail, sc.priority,
                if file { "FILE" } else { "ANON" }
            );
        }
        // For cgroup v1 dirty throttling is achieved by waking the flushers
        // here and waiting on pages under writeback (case 3) later; 6.0
        // added a WRITEBACK throttle here too (the profile's site).
        let v1_dirty = all_unqueued_dirty && !sc.writeback_throttling_sane();
        let per_batch = match k.profile.congestion_flags {
            CongestionFlags::PerBatch => {
                Some(k.batch_congestion_flags(nid, sc, &stat, nr_taken, is_kswapd))
            }
            CongestionFlags::Zone => {
                // 2.6.37 shrink_page_list: "Tag a zone as congested if all
                // the dirty pages encountered were backed by a congested BDI".
                if stat.zone_dirty == stat.zone_congested && stat.zone_dirty != 0 {
                    k.nodes[nid].lruvecs[0].flags |= LRUVEC_CONGESTED;
                }
                None
            }
            CongestionFlags::PerPass => None,
        };
        (v1_dirty, per_batch)
    };
    if v1_dirty_throttle.0 {
        let site = w.k().profile.memcg_v1_dirty;
        throttle_at(w, site, nid).await;
    }
    if let Some((kswapd_immediate, direct_wait)) = v1_dirty_throttle.1 {
        if kswapd_immediate {
            let site = w.k().profile.kswapd_immediate;
            throttle_at(w, site, nid).await;
        }
        if direct_wait {
            let site = w.k().profile.direct_congested;
            throttle_at(w, site, nid).await;
        }
    }
    nr_reclaimed
}

impl Kernel {
    /// The tail of 4.16 `shrink_inactive_list`: any reclaimer sets the
    /// node's flags from this one batch (`PGDAT_WRITEBACK` even without
    /// `sane_reclaim`); returns whether kswapd waits for immediate pages
    /// (`congestion_wait`) and whether a direct reclaimer calls
    /// `wait_iff_congested(pgdat)` (every one, after every batch).
    fn batch_congestion_flags(
        &mut self,
        nid: usize,
        sc: &ScanControl,
        stat: &ReclaimStat,
        nr_taken: u64,
        is_kswapd: bool,
    ) -> (bool, bool) {
        let node = &mut self.nodes[nid];
        if stat.nr_writeback > 0 && stat.nr_writeback == nr_taken {
            node.flags |= PGDAT_WRITEBACK;
        }
        let mut kswapd_immediate = false;
        if sc.writeback_throttling_sane() {
            if stat.nr_dirty > 0 && stat.nr_dirty == stat.nr_congested {
                node.lruvecs[0].flags |= LRUVEC_CONGESTED;
            }
            if stat.nr_unqueued_dirty == nr_taken {
                node.flags |= PGDAT_DIRTY;
            }
            kswapd_immediate = stat.nr_immediate > 0;
        }
        (kswapd_immediate, !is_kswapd)
    }
}

/// `wait_on_page_writeback` (`folio_wait_writeback`): sleep until the
/// page's write completes (`folio_end_writeback` wakes the node's queue).
async fn wait_on_page_writeback(w: &World, pfn: Pfn) {
    let start = w.k().exec.now();
    loop {
        let nid = {
            let mut k = w.k();
            if !k.frames.get(pfn).test(pg::WRITEBACK) {
                let k = &mut *k;
                k.stats.wait_on_page_writeback += 1;
                k.stats.wait_on_page_writeback_ns += k.exec.now() - start;
                return;
            }
            let nid = k.frames.nid(pfn);
            let k = &mut *k;
            k.exec.prepare_to_wait(&mut k.nodes[nid].writeback_wait);
            nid
        };
        w.block(None).await;
        let mut k = w.k();
        let k = &mut *k;
        k.exec.finish_wait(&mut k.nodes[nid].writeback_wait);
    }
}

/// `shrink_active_list` (5.15): deactivates every isolated page except
/// referenced executable file pages (program text, `crate::mm::text`),
/// which go back to the active list (`nr_rotated`).
pub(super) async fn shrink_active_list(
    w: &World,
    nr_to_scan: u64,
    nid: usize,
    memcg: usize,
    sc: &mut ScanControl,
    lru: Lru,
) {
    let (pages, spin) = {
        let mut k = w.k();
        let (pages, spin) = k.isolate_lru_folios(nid, memcg, lru, nr_to_scan);
        if !sc.cgroup_reclaim() {
            k.count(Ev::Pgrefill, pages.len() as u64);
        }
        k.count_memcg_events(memcg as u16, MemcgVm::Pgrefill, pages.len() as u64);
        (pages, spin)
    };
    if pages.is_empty() {
        let mut k = w.k();
        k.charge_sys(spin);
        k.recycle_pfn_vec(pages);
        return;
    }
    let cost = spin + pages.len() as u64 * w.k().params.cost_scan_ns;
    run_on_cpu(w, 0, cost).await;
    let n = pages.len() as u64;
    let c = {
        let mut k = w.k();
        let mut rotated = 0u64;
        for &pfn in &pages {
            // folio_referenced() clears the young bits; the result only
            // matters for VM_EXEC file pages: 5.10 and 6.1
            // shrink_active_list give a referenced one "one more trip
            // around the active list" ("so that executable code get better
            // chances to stay in memory"), anon VM_EXEC pages excluded.
            if k.frames.get(pfn).test(pg::FILE) {
                if k.file_referenced(pfn) > 0 && k.vm_exec_file_page(pfn) {
                    rotated += 1;
                    continue;
                }
            } else {
                let _ = k.anon_referenced(pfn);
            }
            let p = k.frames.get_mut(pfn);
            // 5.9.1 shrink_active_list: a !page_evictable page is put back
            // (culled to the unevictable list by move_folios_to_lru).
            if crate::mm::mlock::page_evictable(p.flags) {
                p.clear(pg::ACTIVE);
                p.set(pg::WORKINGSET);
            }
        }
        // The reverse-map walks of the mapped pages among them, then the
        // put-back under the lock, the pages isolated until it is taken (5.15
        // shrink_active_list: folio_referenced for each, then
        // spin_lock_irq(&lruvec->lru_lock), move_pages_to_lru and
        // NR_ISOLATED_* down).
        let walks = std::mem::take(&mut k.rmap_walks);
        (walks * k.params.cost_rmap_ns, rotated)
    };
    let (c, rotated) = c;
    run_on_cpu(w, 0, c).await;
    let putback_spin = w.k().lru_lock(nid, memcg, n);
    run_on_cpu(w, 0, putback_spin).await;
    let mut k = w.k();
    k.move_folios_to_lru(nid, memcg, &pages);
    k.recycle_pfn_vec(pages);
    // 6.2+: `if (nr_rotated) lru_note_cost(lruvec, file, 0, nr_rotated)`.
    if rotated > 0 && k.profile.lru_cost_rotations {
        k.lru_note_cost(nid, memcg, lru.is_file(), 0, rotated);
    }
    // PGDEACTIVATE counts the pages moved to the inactive list only.
    k.count(Ev::Pgdeactivate, n - rotated);
    k.count_memcg_events(memcg as u16, MemcgVm::Pgdeactivate, n - rotated);
    let item = if lru.is_file() {
        NodeStat::NrIsolatedFile
    } else {
        NodeStat::NrIsolatedAnon
    };
    k.nodes[nid].mod_state(item, -(n as i64));
}
