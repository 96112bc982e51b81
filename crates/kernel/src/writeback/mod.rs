//! Writeback: the per-device flusher (`wb_workfn` → `wb_do_writeback`),
//! dirty limits and `balance_dirty_pages` throttling of dirtiers, and the end
//! of writeback (`folio_end_writeback`).
//!
//! Follows fs/fs-writeback.c and mm/page-writeback.c (5.15/6.1).
//! Simplifications: one `bdi_writeback` per device, which also stands for
//! the memcg wbs of cgroup writeback: an inode belongs to the memcg of its
//! first dirtier (cgroup v2), background writeback driven by a memcg's
//! dirty domain writes only that memcg's inodes (`wb_over_bg_thresh`),
//! but the bandwidth, rate and `dirty_exceeded` state is the device's; the
//! flusher writes inodes in dirtied order, `writeback_chunk_size` per
//! inode per round, resuming at `writeback_index`; `balance_dirty_pages`
//! (`dirty`) throttles in the global domain and, for a cgroup v2 writer,
//! its memcg's domain, with the kernel's position and rate controls
//! (`position`) or, by default for now, a simpler estimate (see
//! `writeback.kernel_controls`).

mod bandwidth;
mod dirty;
mod position;

pub use bandwidth::bw_dwork;
pub use dirty::balance_dirty_pages_ratelimited;
pub use position::WbDomain;

use std::collections::VecDeque;
use std::rc::Rc;

use crate::block::{submit_bio, ReqKind};
use crate::engine::{TaskId, WaitQueue, World};
use crate::mm::anon::ORPHAN;
use crate::mm::memcontrol::ROOT_MEM_CGROUP;
use crate::mm::page::{pg, Lru, Pfn};
use crate::mm::{NodeStat, WMARK_HIGH};
use crate::sched::run_on_cpu;
use crate::vmstat::Ev;
use crate::Kernel;

/// `MIN_WRITEBACK_PAGES`: 4 MiB, the granularity of `writeback_chunk_size`.
pub const MIN_WRITEBACK_PAGES: u64 = 1024;

/// A device's writeback state (`bdi_writeback`).
#[derive(Debug, Default)]
pub struct Bdi {
    /// Dirty inodes (file ids), oldest first (`b_dirty`).
    pub b_dirty: VecDeque<u32>,
    /// `WB_start_all`: write everything (vmscan's request).
    pub start_all: bool,
    /// The flusher sleeps here.
    pub wait: WaitQueue,
    /// The flusher task.
    pub flusher: Option<TaskId>,
    /// Last kupdate-style flush.
    pub last_old_flush: u64,
    /// Dirtiers seen by `balance_dirty_pages` recently: (task, time); the
    /// base rate with `writeback.kernel_controls=0` is the bandwidth shared
    /// among them.
    pub dirtiers: Vec<(TaskId, u64)>,
    /// `wb->dirty_exceeded`: the last `balance_dirty_pages` found the
    /// dirty pages over the limit, so dirtiers check every 8 pages.
    pub dirty_exceeded: bool,
    /// `wb->dirty_sleep`: when a dirtier last paused (blk-wbt's
    /// `wb_recent_wait` looks at it).
    pub dirty_sleep: Option<u64>,
    /// `wb->stat[WB_WRITTEN]`: file pages whose writeback ended.
    pub written: u64,
    /// File pages of this device under writeback (`wb->writeback_inodes`
    /// is non-zero when this is).
    pub nr_writeback: u64,
    /// `wb->written_stamp`: `written` at the last bandwidth update.
    pub written_stamp: u64,
    /// `wb->bw_time_stamp`, in jiffies.
    pub bw_time_stamp: u64,
    /// `wb->write_bandwidth`, pages per second.
    pub write_bandwidth: u64,
    /// `wb->avg_write_bandwidth`, pages per second (smoothed).
    pub avg_write_bandwidth: u64,
    /// `wb->stat[WB_DIRTIED]`: file pages dirtied on this device.
    pub dirtied: u64,
    /// `wb->dirtied_stamp`: `dirtied` at the last bandwidth update.
    pub dirtied_stamp: u64,
    /// `wb->dirty_ratelimit`, pages per second: the base rate of each
    /// dirtier, moved every 200 ms by the rate control (`position`).
    pub dirty_ratelimit: u64,
    /// `wb->balanced_dirty_ratelimit`, pages per second: the last balanced
    /// rate the rate control computed.
    pub balanced_dirty_ratelimit: u64,
    /// When the delayed bandwidth update (`wb->bw_dwork`) is due, if queued.
    pub bw_dwork_at: Option<u64>,
    /// The `bw_dwork` worker sleeps here while nothing is queued.
    pub bw_dwork_wait: WaitQueue,
}

/// Where a cyclic `write_cache_pages` walk of one file is: it started at
/// `start` (the inode's `writeback_index`), is at `idx`, and has wrapped
/// from the end of the file to 0 when `wrapped`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WbCursor {
    start: u32,
    idx: u32,
    wrapped: bool,
}

impl WbCursor {
    /// A walk from page `start`.
    pub(crate) fn new(start: u32) -> WbCursor {
        WbCursor {
            start,
            idx: start,
            wrapped: false,
        }
    }
}

/// Writes up to `budget` dirty pages of file `f` from the cursor, as
/// `do_writepages` → `->writepages` does in 5.15 (XFS: `iomap_writepages`
/// over `write_cache_pages`): each page is marked under writeback as it is
/// added to a bio, and a bio goes to the block layer as soon as it is full
/// or the next page does not continue it (`iomap_chain_bio`,
/// `iomap_submit_ioend` at the end of `iomap_writepage_map`), where the
/// writer may sleep for a request slot (blk-wbt's `wbt_wait`, tags) before
/// the walk goes on. So the pages one writer holds under writeback ahead
/// of the device are about one request's worth beyond what the block layer
/// admitted, never a whole `writeback_chunk_size`. Here the walk takes at
/// most one request's worth of pages (`max_sectors_kb`) per step, submits
/// them, then continues. With `pay_now` the submission CPU is paid before
/// each step's I/O (the flusher); otherwise it is charged to the task's
/// account (`fadvise`). Returns the pages written and whether the walk of
/// the file is over.
pub(crate) async fn write_and_submit(
    w: &World,
    f: u32,
    cur: &mut WbCursor,
    budget: u64,
    pay_now: bool,
) -> (u64, bool) {
    let d = w.k().files[f as usize].dev;
    let mut written = 0u64;
    loop {
        let (reqs, n, ended) = {
            let mut k = w.k();
            let step = (budget - written).min(k.devs[d].max_request_pages as u64);
            let (reqs, n, ended) = k.write_cache_pages(f, cur, step);
            if !pay_now {
                let c = k.params.cost_io_submit_ns;
                k.charge_sys(n * c);
            }
            (reqs, n, ended)
        };
        if n > 0 && pay_now {
            let cost = n * w.k().params.cost_io_submit_ns;
            run_on_cpu(w, 0, cost).await;
        }
        for (pages, pos) in reqs {
            submit_bio(w, d, ReqKind::FileWrite, pages, pos, false).await;
        }
        written += n;
        if ended || n == 0 || written >= budget {
            return (written, ended);
        }
    }
}

impl Kernel {
    /// `global_dirty_limits` → (thresh, bg_thresh) in pages, from
    /// `global_dirtyable_memory` = free + file LRU − high watermarks.
    pub fn dirty_thresholds(&self) -> (u64, u64) {
        self.domain_dirty_limits(self.global_dirtyable_memory())
    }

    /// `global_dirtyable_memory` (simplified): free + file LRU − high
    /// watermarks, at least 1.
    pub(crate) fn global_dirtyable_memory(&self) -> u64 {
        let mut avail: i64 = 0;
        for n in &self.nodes {
            avail += n.nr_free() as i64
                + (n.lru_pages(Lru::InactiveFile) + n.lru_pages(Lru::ActiveFile)) as i64;
            avail -= n.wmark[WMARK_HIGH] as i64;
        }
        avail.max(1) as u64
    }

    /// `domain_dirty_limits` → (thresh, bg_thresh): the dirty and background
    /// ratios of a domain's available memory, the global one or a memcg's
    /// (no `vm.dirty_bytes` here, so the memcg domain's conversion of bytes
    /// to ratios does not arise; no real-time boost).
    pub(crate) fn domain_dirty_limits(&self, avail: u64) -> (u64, u64) {
        let thresh = self.params.dirty_ratio * avail / 100;
        let mut bg = self.params.dirty_background_ratio * avail / 100;
        if bg >= thresh {
            bg = thresh / 2;
        }
        (thresh, bg)
    }

    /// The memcg dirty domain of a wb whose memcg is `memcg`
    /// (`balance_dirty_pages`' `mdtc`, 5.15 mm/page-writeback.c, the same
    /// in 4.16 and 6.1), or `None` where there is none (the root, or
    /// cgroup v1: `mdtc_valid`). `gavail` and `gdirty` are the global
    /// domain's available and dirty pages; `with_writeback` counts the
    /// memcg's pages under writeback as dirty (`balance_dirty_pages`; not
    /// `wb_over_bg_thresh`). Returns (thresh, bg_thresh, dirty, the
    /// memcg's own dirty + writeback pages: the memcg wb's `wb_dirty`).
    pub(crate) fn memcg_dirty_domain(
        &self,
        memcg: u16,
        gavail: u64,
        gdirty: u64,
        with_writeback: bool,
    ) -> Option<(u64, u64, u64, u64)> {
        if !self.mem_cgroup_has_wb_domain(memcg) {
            return None;
        }
        let (filepages, headroom, mut dirty, writeback) = self.mem_cgroup_wb_stats(memcg);
        if with_writeback {
            dirty += writeback;
        }
        let avail = mdtc_calc_avail(filepages, headroom, dirty, gavail, gdirty);
        let (thresh, bg_thresh) = self.domain_dirty_limits(avail);
        let m = &self.memcgs[memcg as usize];
        let own = m.nr_file_dirty + if with_writeback { m.nr_writeback } else { 0 };
        Some((thresh, bg_thresh, dirty, own))
    }

    /// `global_node_page_state(NR_FILE_DIRTY)`.
    pub fn nr_dirty(&self) -> u64 {
        self.global_node_page_state(NodeStat::NrFileDirty)
    }

    /// `global_node_page_state(NR_WRITEBACK)`.
    pub fn nr_writeback(&self) -> u64 {
        self.global_node_page_state(NodeStat::NrWriteback)
    }

    /// Wakes device `d`'s flusher.
    fn wake_flusher(&mut self, d: usize) {
        self.exec.wake_up_all(&mut self.bdis[d].wait);
    }

    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)`: every flusher writes all.
    pub fn wakeup_flusher_threads(&mut self) {
        for d in 0..self.bdis.len() {
            if !self.bdis[d].b_dirty.is_empty() {
                self.bdis[d].start_all = true;
                self.wake_flusher(d);
            }
        }
    }

    /// `__folio_start_writeback`: `PG_writeback` and `NR_WRITEBACK`, and for
    /// a file page its inode's and its wb's writeback counts (which
    /// [`Kernel::folio_end_writeback`] takes back).
    pub(crate) fn folio_start_writeback(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        p.set(pg::WRITEBACK);
        let (file, owner, memcg) = (p.test(pg::FILE), p.owner as usize, p.memcg);
        self.nodes[nid].mod_state(NodeStat::NrWriteback, 1);
        if memcg != ROOT_MEM_CGROUP {
            // The memcg's NR_WRITEBACK (anon pages to swap included).
            self.memcgs[memcg as usize].nr_writeback += 1;
        }
        if file {
            self.files[owner].nr_writeback += 1;
            let d = self.files[owner].dev;
            self.bdis[d].nr_writeback += 1;
        }
    }

    /// `folio_end_writeback` (5.16): rotate a `PG_reclaim` page to the
    /// inactive tail, clear writeback, account the written page for WRITEBACK
    /// throttling.
    pub fn folio_end_writeback(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get(pfn);
        if p.test(pg::RECLAIM) {
            self.frames.get_mut(pfn).clear(pg::RECLAIM);
            self.folio_rotate_reclaimable(pfn);
        }
        let p = self.frames.get_mut(pfn);
        debug_assert!(p.test(pg::WRITEBACK));
        p.clear(pg::WRITEBACK);
        let memcg = p.memcg;
        self.nodes[nid].mod_state(NodeStat::NrWriteback, -1);
        if memcg != ROOT_MEM_CGROUP {
            self.memcgs[memcg as usize].nr_writeback -= 1;
        }
        if self.nodes[nid].writeback_wait.active() {
            let mut wq = std::mem::take(&mut self.nodes[nid].writeback_wait);
            self.exec.wake_up_all(&mut wq);
            self.nodes[nid].writeback_wait = wq;
        }
        self.count(Ev::NrWritten, 1);
        let p = self.frames.get(pfn);
        if p.test(pg::FILE) && p.owner != ORPHAN {
            // __wb_writeout_add(): WB_WRITTEN counts file pages only (swap
            // cache mappings have no writeback accounting).
            let f = p.owner as usize;
            let d = self.files[f].dev;
            let b = &mut self.bdis[d];
            b.written += 1;
            b.nr_writeback -= 1;
            self.files[f].nr_writeback -= 1;
            if self.files[f].nr_writeback == 0 {
                self.wb_inode_writeback_end(d);
            }
        }
        let p = self.frames.get(pfn);
        if p.owner == ORPHAN && !p.test(pg::FILE) && !p.test(pg::ISOLATED) {
            // Its mapping went away during the write: the last reference drops.
            self.lru_del(pfn);
            if self.frames.get(pfn).test(pg::SWAPCACHE) {
                self.delete_from_swap_cache(pfn);
            }
            self.free_page(pfn);
        }
        self.acct_reclaim_writeback(nid);
    }

    /// The first dirty inode of device `d` eligible for this work
    /// (`writeback_sb_inodes` picking from `b_io`), with the cursor of a
    /// cyclic walk from its `writeback_index`. `None` when none is.
    fn writeback_pick_inode(
        &self,
        d: usize,
        older_than: Option<u64>,
        memcg: Option<u16>,
    ) -> Option<(u32, WbCursor)> {
        // One wb per device stands for the device's cgroup wbs: a memcg's
        // background work takes the oldest of that memcg's inodes, which
        // heads its own wb's b_dirty in the kernel.
        let f = match memcg {
            None => *self.bdis[d].b_dirty.front()?,
            Some(m) => *self.bdis[d]
                .b_dirty
                .iter()
                .find(|&&f| self.files[f as usize].wb_memcg == Some(m))?,
        };
        let file = &self.files[f as usize];
        if let (Some(limit), Some(when)) = (older_than, file.dirtied_when) {
            if when > limit {
                return None;
            }
        }
        Some((f, WbCursor::new(file.writeback_index % file.size.max(1))))
    }

    /// The end of one inode's writeback (`requeue_inode`): the walk's end
    /// becomes its `writeback_index`, and an inode with dirty pages left
    /// goes to the back of the queue. The inode stayed on `b_dirty` while
    /// its pages were written (the kernel's `b_io`/`b_more_io` also count
    /// for `wb_has_dirty_io`).
    fn writeback_requeue_inode(&mut self, d: usize, f: u32, cur: &WbCursor) {
        if let Some(at) = self.bdis[d].b_dirty.iter().position(|&x| x == f) {
            self.bdis[d].b_dirty.remove(at);
        }
        let file = &mut self.files[f as usize];
        file.writeback_index = cur.idx;
        if file.nr_dirty > 0 {
            self.bdis[d].b_dirty.push_back(f);
        } else {
            file.on_dirty_list = false;
        }
    }

    /// One step of `write_cache_pages` (mm/page-writeback.c 5.15/6.1) in
    /// `WB_SYNC_NONE` mode over file `f`: the dirty-tag walk from the
    /// cursor's start to the end of the file, then from 0 back to the start
    /// (range_cyclic), taking up to `budget` dirty pages not already under
    /// writeback, marking them under writeback and grouping them into
    /// requests of adjacent pages. Returns the requests, the pages taken
    /// and whether the walk is over; the cursor keeps its place.
    pub(crate) fn write_cache_pages(
        &mut self,
        f: u32,
        cur: &mut WbCursor,
        budget: u64,
    ) -> (Vec<(Vec<Pfn>, u64)>, u64, bool) {
        let d = self.files[f as usize].dev;
        let mut reqs: Vec<(Vec<Pfn>, u64)> = Vec::new();
        let mut written = 0u64;
        let start = cur.start;
        let mut ended = false;
        loop {
            if self.files[f as usize].nr_dirty == 0 {
                ended = true;
                break;
            }
            if written >= budget {
                break;
            }
            let next = self.files[f as usize]
                .next_dirty(cur.idx)
                .filter(|&n| !cur.wrapped || n < start);
            let Some(n) = next else {
                if cur.wrapped {
                    ended = true;
                    break;
                }
                cur.wrapped = true;
                cur.idx = 0;
                continue;
            };
            cur.idx = n;
            let e = self.files[f as usize].cache.get(cur.idx as usize);
            if e & crate::mm::swap::SHADOW == 0 && e != crate::mm::swap::SLOT_EMPTY {
                let p = self.frames.get(e);
                if p.test(pg::DIRTY) && !p.test(pg::WRITEBACK) {
                    self.clear_page_dirty_for_io(e);
                    self.folio_start_writeback(e);
                    let pos = self.files[f as usize].pos + u64::from(cur.idx);
                    let max = self.devs[d].max_request_pages;
                    match reqs.last_mut() {
                        Some((pages, p0))
                            if *p0 + pages.len() as u64 == pos && pages.len() < max =>
                        {
                            pages.push(e)
                        }
                        _ => reqs.push((vec![e], pos)),
                    }
                    written += 1;
                }
            }
            // At the end of the file `next_dirty` finds nothing and the
            // walk wraps above (which also ends the request run).
            cur.idx += 1;
        }
        self.count(Ev::Pgpgout, written * 4);
        (reqs, written, ended)
    }

    /// `writeback_chunk_size` (fs/fs-writeback.c, 5.15) for WB_SYNC_NONE
    /// work: pages written per inode before the flusher moves to the next,
    /// half a second of the estimated write bandwidth
    /// (`wb->avg_write_bandwidth`), at most an eighth of the dirty limit
    /// (`DIRTY_SCOPE`), rounded down to 4 MiB after adding 4 MiB
    /// (`MIN_WRITEBACK_PAGES`).
    fn writeback_chunk_size(&self, d: usize) -> u64 {
        let bw = self.bdis[d].avg_write_bandwidth;
        let (thresh, _) = self.dirty_thresholds();
        let pages = (bw / 2).min(thresh / 8);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// `wb_over_bg_thresh` (5.15 mm/page-writeback.c; 4.16 and 6.1 the
    /// same) for the wbs of device `d`: `Some(None)` when the global domain
    /// is over its background threshold (any inode may be written),
    /// `Some(Some(m))` when only the dirty domain of memcg `m`, whose wb has
    /// dirty inodes on `d`, is over its own (dirty pages only, as the
    /// kernel's check ignores writeback) so that its inodes are written,
    /// `None` when no wb of `d` needs background writeback. Simplified: the
    /// wb's share of a threshold (`wb_calc_thresh`) is not checked, as
    /// before for the global domain; the first memcg in id order wins.
    fn wb_over_bg_thresh(&self, d: usize) -> Option<Option<u16>> {
        let gavail = self.global_dirtyable_memory();
        let (_, bg) = self.domain_dirty_limits(gavail);
        let gdirty = self.nr_dirty();
        if gdirty > bg {
            return Some(None);
        }
        if self.memcgs.len() < 2 || !self.cgroup_writeback() {
            return None;
        }
        for m in 1..self.memcgs.len() as u16 {
            if self.memcgs[m as usize].nr_file_dirty == 0 {
                continue;
            }
            let Some((_, m_bg, m_dirty, _)) = self.memcg_dirty_domain(m, gavail, gdirty, false)
            else {
                continue;
            };
            if m_dirty > m_bg
                && self.bdis[d]
                    .b_dirty
                    .iter()
                    .any(|&f| self.files[f as usize].wb_memcg == Some(m))
            {
                return Some(Some(m));
            }
        }
        None
    }
}

/// `mdtc_calc_avail` (5.15 mm/page-writeback.c, as in 4.16 and 6.1): a
/// memcg domain may use its file pages plus what it may still grow by,
/// its headroom, but no more than the clean memory outside it.
fn mdtc_calc_avail(filepages: u64, headroom: u64, m_dirty: u64, gavail: u64, gdirty: u64) -> u64 {
    let clean = filepages - filepages.min(m_dirty);
    let global_clean = gavail - gavail.min(gdirty);
    let other_clean = global_clean - global_clean.min(clean);
    filepages + headroom.min(other_clean)
}

/// The flusher of device `d` (`wb_workfn`).
pub async fn flusher(w: Rc<World>, d: usize) {
    {
        // wb_init(): the bandwidth and dirty-sleep stamps start at boot
        // (each step boots at its own time on the record's time base).
        let mut k = w.k();
        let (now_j, now) = (k.jiffies(), k.exec.now());
        k.bdis[d].bw_time_stamp = now_j;
        k.bdis[d].dirty_sleep = Some(now);
    }
    let mut stalled = false;
    loop {
        // wb_do_writeback(): start_all, then kupdate (old data), then background.
        let work = {
            let mut k = w.k();
            let now = k.exec.now();
            let interval = k.params.dirty_writeback_centisecs * 10_000_000;
            let expire = k.params.dirty_expire_centisecs * 10_000_000;
            // (pages, written before `older_than` only, background work)
            //
            // wb_check_start_all() and wb_check_old_data_flush() (5.15/6.1)
            // size their work by get_nr_dirty_pages() when it starts: the
            // dirty pages then, plus the dirty inodes. Pages redirtied while
            // it runs wait for the next round instead of keeping the flusher
            // writing one hot file without end. (One wb per bdi here, so
            // wb_split_bdi_pages gives this wb the whole count.) Background
            // work has no budget: it stops below the background threshold.
            let nr_dirty_pages = |k: &Kernel| {
                k.nr_dirty() + k.bdis.iter().map(|b| b.b_dirty.len() as u64).sum::<u64>()
            };
            if k.bdis[d].b_dirty.is_empty() || std::mem::take(&mut stalled) {
                None
            } else if k.bdis[d].start_all {
                k.bdis[d].start_all = false;
                Some((nr_dirty_pages(&k), None, false))
            } else if k.wb_over_bg_thresh(d).is_some() {
                Some((u64::MAX, None, true))
            } else if interval > 0 && now >= k.bdis[d].last_old_flush + interval {
                k.bdis[d].last_old_flush = now;
                Some((nr_dirty_pages(&k), Some(now.saturating_sub(expire)), false))
            } else {
                None
            }
        };
        match work {
            Some((budget, older_than, background)) => {
                // Write inode by inode until the budget or the condition ends.
                // wb_writeback() (fs/fs-writeback.c, 5.15): when a pass over
                // the dirty inodes wrote nothing (every dirty page is already
                // under writeback) it stops instead of busy-looping; the work
                // is picked up again on the next wake-up or kupdate interval.
                let mut left = budget;
                let mut idle_inodes = 0usize;
                loop {
                    let picked = {
                        let mut k = w.k();
                        // Background work writes the inodes of the domain
                        // over its threshold: all for the global domain, a
                        // memcg's own for its domain.
                        let memcg = if background {
                            k.wb_over_bg_thresh(d).flatten()
                        } else {
                            None
                        };
                        // do_writepages() (5.15) brackets each inode's write.
                        k.wb_bandwidth_estimate_start(d);
                        let chunk = k.writeback_chunk_size(d);
                        k.writeback_pick_inode(d, older_than, memcg)
                            .map(|(f, cur)| (f, cur, left.min(chunk)))
                    };
                    let Some((f, mut cur, budget)) = picked else {
                        break;
                    };
                    let (n, _) = write_and_submit(&w, f, &mut cur, budget, true).await;
                    w.k().writeback_requeue_inode(d, f, &cur);
                    if n == 0 {
                        // The inode had only pages already under writeback
                        // (write_cache_pages skips those in WB_SYNC_NONE).
                        idle_inodes += 1;
                        if idle_inodes >= w.k().bdis[d].b_dirty.len() {
                            stalled = true;
                            break;
                        }
                        continue;
                    }
                    idle_inodes = 0;
                    w.k().wb_maybe_update_bandwidth(d, None);
                    left = left.saturating_sub(n);
                    let stop = {
                        let k = w.k();
                        left == 0
                            || k.bdis[d].b_dirty.is_empty()
                            || (background && k.wb_over_bg_thresh(d).is_none())
                            || k.bdis[d].start_all
                    };
                    if stop {
                        break;
                    }
                }
            }
            None => {
                let deadline = {
                    let mut k = w.k();
                    let k = &mut *k;
                    k.exec.prepare_to_wait(&mut k.bdis[d].wait);
                    let interval = k.params.dirty_writeback_centisecs * 10_000_000;
                    (interval > 0).then(|| k.bdis[d].last_old_flush.max(k.exec.now()) + interval)
                };
                w.block(deadline).await;
                let mut k = w.k();
                let k = &mut *k;
                k.exec.finish_wait(&mut k.bdis[d].wait);
            }
        }
    }
}
