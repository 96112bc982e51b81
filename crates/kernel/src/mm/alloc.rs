//! The page allocator: `get_page_from_freelist` at the low watermark,
//! `__alloc_pages_slowpath` with kswapd wake-ups, direct reclaim,
//! `should_reclaim_retry` and the OOM killer.
//!
//! Follows mm/page_alloc.c (5.15 and 6.1, identical in what is modelled here
//! except the 5.15 `congestion_wait` in `should_reclaim_retry`, which the
//! profile's `reclaim_retry` site decides) and mm/oom_kill.c. Order 0 only, so
//! compaction, highatomic reserves and costly-order rules never apply.

use super::page::{pg, Pfn};
use super::{NodeStat, WMARK_HIGH, WMARK_LOW, WMARK_MIN};
use crate::engine::World;
use crate::kernel::TaskKind;
use crate::mm::page::Lru;
use crate::sched::pay_cpu;
use crate::vmstat::Ev;
use crate::Kernel;

/// GFP flags that matter to reclaim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gfp {
    /// `__GFP_DIRECT_RECLAIM`
    pub direct_reclaim: bool,
    /// `__GFP_IO`
    pub io: bool,
    /// `__GFP_FS`
    pub fs: bool,
    /// `__GFP_WRITE` (page-cache pages about to be dirtied)
    pub write: bool,
    /// `__GFP_HIGHMEM | __GFP_MOVABLE`: a user page (for trace output only).
    pub user: bool,
    /// `__GFP_NOFAIL`: the allocation may not fail; once the OOM stage is
    /// reached it may take pages below the min watermark.
    pub nofail: bool,
}

impl Gfp {
    /// `GFP_HIGHUSER_MOVABLE`: user pages.
    pub const HIGHUSER_MOVABLE: Gfp = Gfp {
        direct_reclaim: true,
        io: true,
        fs: true,
        write: false,
        user: true,
        nofail: false,
    };
    /// `GFP_KERNEL`: kernel allocations that may enter the filesystem.
    pub const KERNEL: Gfp = Gfp {
        direct_reclaim: true,
        io: true,
        fs: true,
        write: false,
        user: false,
        nofail: false,
    };
    /// `GFP_NOFS`: allocations inside a filesystem transaction (XFS's
    /// `memalloc_nofs_save` in `xfs_trans_alloc`): reclaim may not call
    /// back into filesystems, so `super_cache_scan` returns `SHRINK_STOP`.
    pub const NOFS: Gfp = Gfp {
        direct_reclaim: true,
        io: true,
        fs: false,
        write: false,
        user: false,
        nofail: false,
    };
    /// `GFP_KERNEL | __GFP_NOFAIL` inside a transaction (`PF_MEMALLOC_NOFS`
    /// makes it `GFP_NOFS`): 5.9 `xfs_inode_alloc` and `xfs_inode_item_init`
    /// (fs/xfs/xfs_icache.c, xfs_inode_item.c), which cannot fail in a
    /// transaction.
    pub const NOFS_NOFAIL: Gfp = Gfp {
        direct_reclaim: true,
        io: true,
        fs: false,
        write: false,
        user: false,
        nofail: true,
    };
    /// The flags as `show_gfp_flags` prints the common combinations.
    pub fn name(&self) -> &'static str {
        match (self.fs, self.io, self.user, self.write) {
            (false, true, _, _) => "GFP_NOFS",
            (false, false, _, _) => "GFP_NOIO",
            (true, _, false, _) => "GFP_KERNEL",
            (true, _, true, true) => "GFP_HIGHUSER_MOVABLE|__GFP_WRITE",
            (true, _, true, false) => "GFP_HIGHUSER_MOVABLE",
        }
    }
    /// `GFP_HIGHUSER_MOVABLE | __GFP_WRITE`: page cache for `write()`.
    pub const HIGHUSER_MOVABLE_WRITE: Gfp = Gfp {
        direct_reclaim: true,
        io: true,
        fs: true,
        write: true,
        user: true,
        nofail: false,
    };
}

impl Kernel {
    /// `get_page_from_freelist`: the first node in the zonelist (the task's
    /// node first) whose free pages are above `mark` (or any free page if
    /// `mark` is `None`, `ALLOC_NO_WATERMARKS`).
    ///
    /// The watermark test counts only the buddy lists' pages
    /// (`NR_FREE_PAGES`); the page comes from the allocating CPU's list
    /// (`rmqueue_pcplist`, mm/pcp.rs).
    pub fn get_page_from_freelist(&mut self, mark: Option<usize>) -> Option<Pfn> {
        let n = self.nodes.len();
        let mut nid = self.current().nid as usize;
        let cpu = self.current().cpu as usize;
        for _ in 0..n {
            let node = &self.nodes[nid];
            let ok = match mark {
                Some(m) => node.watermark_ok(m),
                None => node.nr_free() > 0 || node.pcp.count(cpu) > 0,
            };
            if ok {
                if let Some(p) = self.take_free_page(nid, cpu) {
                    return Some(p);
                }
            }
            // The next node round the zonelist, without a division.
            nid += 1;
            if nid == n {
                nid = 0;
            }
        }
        None
    }

    /// Takes a page off node `nid`'s free list for `cpu` (`rmqueue`): from
    /// the CPU's list, refilled from the buddy lists if empty; `None` if
    /// both are.
    #[inline]
    fn take_free_page(&mut self, nid: usize, cpu: usize) -> Option<Pfn> {
        let node = &mut self.nodes[nid];
        let buddy = node.nr_free();
        if !node.pcp.take(cpu, buddy) {
            return None;
        }
        let free = &mut node.free;
        let pfn = free.pop().expect("free list not empty");
        // The frame of the allocation four on starts loading now, so the
        // misses of a run of faults overlap (a hint; see mm/lru_list.rs).
        if let Some(next) = free.peek(3) {
            crate::mm::lru_list::prefetch(&self.frames, next);
        }
        let p = self.frames.get_mut(pfn);
        debug_assert!(p.test(pg::BUDDY));
        p.flags = 0;
        self.count(Ev::PgallocNormal, 1);
        self.rate_count_alloc();
        Some(pfn)
    }

    /// `drain_all_pages(NULL)`: every CPU's list back to the buddy lists.
    pub fn drain_all_pages(&mut self) {
        for node in &mut self.nodes {
            node.pcp.drain();
        }
    }

    /// `wakeup_kswapd` for every node (`wake_all_kswapds`).
    pub fn wake_all_kswapds(&mut self) {
        for nid in 0..self.nodes.len() {
            self.wakeup_kswapd(nid);
        }
    }

    /// `wakeup_kswapd`: wakes the node's kswapd unless it is already running;
    /// a node that kswapd failed to balance `MAX_RECLAIM_RETRIES` times, or
    /// that is balanced, is left alone.
    pub fn wakeup_kswapd(&mut self, nid: usize) {
        let node = &self.nodes[nid];
        if node.kswapd_running || !node.kswapd_wait.active() {
            return;
        }
        if node.kswapd_failures >= self.params.max_reclaim_retries || node.watermark_ok(WMARK_HIGH)
        {
            return;
        }
        crate::trace!(
            self,
            "mm_vmscan_wakeup_kswapd",
            "nid={} order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
            nid
        );
        let mut wq = std::mem::take(&mut self.nodes[nid].kswapd_wait);
        self.exec.wake_up_all(&mut wq);
        self.nodes[nid].kswapd_wait = wq;
    }

    /// `zone_reclaimable_pages`: file LRU pages, plus anon if swap space is left.
    pub fn zone_reclaimable_pages(&self, nid: usize) -> u64 {
        let n = &self.nodes[nid];
        let mut r = n.lru_pages(Lru::InactiveFile) + n.lru_pages(Lru::ActiveFile);
        if self.can_reclaim_anon() {
            r += n.lru_pages(Lru::InactiveAnon) + n.lru_pages(Lru::ActiveAnon);
        }
        r
    }

    /// `NR_ZONE_WRITE_PENDING`: dirty + writeback pages.
    pub fn write_pending(&self, nid: usize) -> u64 {
        let n = &self.nodes[nid];
        (n.state(NodeStat::NrFileDirty) + n.state(NodeStat::NrWriteback)).max(0) as u64
    }

    /// `out_of_memory` → `select_bad_process` → `oom_kill_process`, over
    /// every user task (`memcg` `None`: global OOM) or those of `memcg`'s
    /// subtree (`mem_cgroup_scan_tasks`, a memcg OOM). Returns true if a
    /// victim was killed or one is still exiting (progress). `reason` says
    /// why reclaim gave up; it goes into the run record with the kill.
    ///
    /// A global OOM for an allocation without `__GFP_FS` kills nothing and
    /// returns true (5.9.1 mm/oom_kill.c out_of_memory: "The OOM killer
    /// does not compensate for IO-less reclaim"); a memcg OOM does not skip.
    pub fn out_of_memory(&mut self, memcg: Option<u16>, gfp: Gfp, reason: &str) -> bool {
        if memcg.is_none() && !gfp.fs {
            return true;
        }
        let mut best: Option<(u64, usize)> = None;
        for (i, t) in self.tasks.iter().enumerate() {
            if t.exited || t.kind != TaskKind::User {
                continue;
            }
            if memcg.is_some_and(|m| !self.mem_cgroup_is_descendant(t.memcg, m)) {
                continue;
            }
            if t.oom_victim {
                // oom_evaluate_task: a victim is still exiting: abort, let it.
                return true;
            }
            let b = self.task_badness(i);
            if best.is_none_or(|(bb, _)| b > bb) {
                best = Some((b, i));
            }
        }
        let Some((_, victim)) = best else {
            return false;
        };
        let v = &mut self.tasks[victim];
        v.killed = true;
        v.oom_victim = true;
        let victim_memcg = v.memcg;
        self.count(Ev::OomKill, 1);
        self.memcg_memory_event(victim_memcg, crate::mm::memcontrol::MemcgEvent::OomKill);
        let (pid, comm) = (self.tasks[victim].pid, self.tasks[victim].comm.clone());
        let pages = self.task_badness(victim);
        // include/trace/events/oom.h (5.9.1 to 6.1.0): `"pid=%d"` only.
        crate::trace!(self, "mark_victim", "pid={}", pid);
        let constraint = if memcg.is_some() {
            "CONSTRAINT_MEMCG"
        } else {
            "CONSTRAINT_NONE"
        };
        let free = self.nodes.iter().map(|n| n.nr_free()).sum::<u64>();
        self.oom_kills.push(OomKill {
            t_ns: self.exec.now(),
            pid,
            comm,
            memcg: victim_memcg,
            oom_memcg: memcg,
            constraint,
            victim_pages: pages,
            free_pages: free,
            reason: reason.to_string(),
        });
        // Wake the victim if it sleeps killable somewhere (it checks at its
        // next return to user space).
        true
    }
}

/// One OOM kill, for the run record: who, where, when, and with how much
/// memory free.
#[derive(Clone, Debug, PartialEq)]
pub struct OomKill {
    /// Simulated time, ns.
    pub t_ns: u64,
    /// Victim's pid.
    pub pid: u32,
    /// Victim's comm.
    pub comm: String,
    /// Victim's memcg.
    pub memcg: u16,
    /// The memcg whose limit was hit (`None`: a global OOM).
    pub oom_memcg: Option<u16>,
    /// `CONSTRAINT_NONE` or `CONSTRAINT_MEMCG` (`enum oom_constraint`).
    pub constraint: &'static str,
    /// The victim's resident + swapped pages (its badness).
    pub victim_pages: u64,
    /// Free pages on the machine at the time.
    pub free_pages: u64,
    /// Why reclaim gave up: `should_reclaim_retry`'s verdict for a global
    /// OOM (`no_progress_loops=17 > MAX_RECLAIM_RETRIES=16`, or `watermark
    /// check failed: …`), the charge retries for a memcg OOM.
    pub reason: String,
}

/// Outcome of `__alloc_pages_may_oom`.
enum MayOom {
    /// The last try at the high watermark found a page.
    Page(Pfn),
    /// A victim was killed or is still exiting: retry.
    Retry,
    /// Nothing to kill (or the lock is held): wait a jiffy and retry.
    Wait,
}

impl Kernel {
    /// `__alloc_pages_may_oom`: one last try at the high watermark, then the
    /// OOM killer under `oom_lock`.
    fn alloc_pages_may_oom(&mut self, gfp: Gfp, reason: &str) -> MayOom {
        if let Some(p) = self.get_page_from_freelist(Some(WMARK_HIGH)) {
            return MayOom::Page(p);
        }
        if self.oom_lock {
            return MayOom::Wait;
        }
        self.oom_lock = true;
        let progress = self.out_of_memory(None, gfp, reason);
        self.oom_lock = false;
        if progress {
            MayOom::Retry
        } else {
            MayOom::Wait
        }
    }
}

fn may_oom(w: &World, gfp: Gfp, reason: &str) -> MayOom {
    w.k().alloc_pages_may_oom(gfp, reason)
}

/// `__alloc_pages` for one order-0 page. Returns `None` if the calling task
/// was OOM-killed meanwhile (fatal signal pending): the caller must unwind.
///
/// The page is then charged to the task's memory cgroup, as the callers of
/// `__alloc_pages` in the fault and page-cache paths do next
/// (`mem_cgroup_charge`), with limit reclaim if the cgroup is full.
pub async fn alloc_page(w: &World, gfp: Gfp) -> Option<Pfn> {
    // The memory.high penalty of the pages charged before (the kernel pays
    // it on return to user space, before the task's next fault).
    crate::mm::memcontrol::mem_cgroup_handle_over_high(w).await;
    alloc_page_charged(w, gfp).await
}

/// [`alloc_page`] within a fault that already allocated: a swap readahead
/// page (`__read_swap_cache_async`, whose `mem_cgroup_swapin_charge_folio`
/// reclaims like any charge) pays no memory.high penalty of its own.
pub async fn alloc_page_charged(w: &World, gfp: Gfp) -> Option<Pfn> {
    crate::mm::memcontrol::mem_cgroup_try_charge(w, gfp).await;
    let killed_in_memcg = {
        let k = w.k();
        k.current().killed && !Kernel::mem_cgroup_is_root(k.current().memcg)
    };
    if killed_in_memcg {
        // A memcg OOM victim's charge was forced so that it can exit; it
        // exits at its return to user space, so it faults nothing more.
        w.k().memcg_cancel_charge();
        return None;
    }
    let fast = w.k().get_page_from_freelist(Some(WMARK_LOW));
    let pfn = match fast {
        Some(p) => p,
        None => match alloc_pages_slowpath(w, gfp).await {
            Some(p) => p,
            None => {
                w.k().memcg_cancel_charge();
                return None;
            }
        },
    };
    w.k().memcg_commit_charged(pfn);
    Some(pfn)
}

/// `__alloc_pages` for a kernel page no memcg is charged for (a slab page
/// or a buffer's page): the fast path at the low watermark, then the slow
/// path. A task already in reclaim (`PF_MEMALLOC`, here `reclaim_state`
/// set) takes any free page (`ALLOC_NO_WATERMARKS`) and never recurses
/// into reclaim; `None` if there is none or the task was OOM-killed.
pub async fn alloc_page_unaccounted(w: &World, gfp: Gfp) -> Option<Pfn> {
    {
        let mut k = w.k();
        if let Some(p) = k.get_page_from_freelist(Some(WMARK_LOW)) {
            return Some(p);
        }
        if k.in_reclaim() || k.current_is_kswapd() {
            return k.get_page_from_freelist(None);
        }
    }
    // Boxed: reclaim from here can reach this function again through the
    // shrinkers (a buffer read in XFS inode reclaim), never at run time
    // (a reclaimer takes the branch above) but in the future's type.
    Box::pin(alloc_pages_slowpath(w, gfp)).await
}

/// `__alloc_pages_slowpath` (order 0).
async fn alloc_pages_slowpath(w: &World, gfp: Gfp) -> Option<Pfn> {
    let mut no_progress_loops: u64 = 0;
    loop {
        {
            let mut k = w.k();
            k.wake_all_kswapds();
            // kswapd and OOM victims may use the reserves (ALLOC_NO_WATERMARKS,
            // ALLOC_OOM).
            let (is_kswapd, victim) = (k.current_is_kswapd(), k.current().oom_victim);
            let mark = if is_kswapd || victim {
                None
            } else {
                Some(WMARK_MIN)
            };
            if let Some(p) = k.get_page_from_freelist(mark) {
                return Some(p);
            }
            if k.current().killed && !victim {
                return None;
            }
            if !gfp.direct_reclaim || is_kswapd {
                // GFP_NOWAIT or PF_MEMALLOC: nopage. Our kernel threads only
                // allocate with reclaim; treat as a failed allocation.
                return None;
            }
        }
        let progress = crate::vmscan::try_to_free_pages(w, gfp).await;
        {
            let mut k = w.k();
            if let Some(p) = k.get_page_from_freelist(Some(WMARK_MIN)) {
                return Some(p);
            }
            // __alloc_pages_direct_reclaim: "If an allocation failed after
            // direct reclaim, it could be because pages are pinned on the
            // per-cpu lists": drain them and try once more.
            if k.nodes.iter().any(|n| n.pcp.total > 0) {
                k.drain_all_pages();
                if let Some(p) = k.get_page_from_freelist(Some(WMARK_MIN)) {
                    return Some(p);
                }
            }
            if k.current().killed {
                return None;
            }
        }
        // 2.6.36/2.6.37: reclaim made progress but the allocation failed:
        // "Wait for some write requests to complete then retry" (HZ/50 on
        // the preferred zone), then should_reclaim_retry as in 5.15 (a
        // simplification of should_alloc_retry, which always retries order 0).
        let site = w.k().profile.early.alloc_rebalance;
        if progress > 0 && site != crate::profile::Sleep::None {
            let nid = w.k().current().nid as usize;
            let us = Some(crate::profile::ALLOC_REBALANCE_TIMEOUT_US);
            crate::throttle::throttle_at_us(w, site, nid, us).await;
        }
        // should_reclaim_retry()
        match should_reclaim_retry(w, progress > 0, &mut no_progress_loops).await {
            Ok(()) => {}
            Err(reason) => match may_oom(w, gfp, &reason) {
                MayOom::Page(p) => return Some(p),
                MayOom::Retry => {
                    no_progress_loops = 0;
                    // 5.9 `__alloc_pages_may_oom`: when `out_of_memory`
                    // returned true (a kill, or "progress" for a global OOM
                    // without __GFP_FS), a __GFP_NOFAIL allocation gets a
                    // page with ALLOC_NO_WATERMARKS
                    // (`__alloc_pages_cpuset_fallback`) — "Help non-failing
                    // allocations by giving them access to memory reserves".
                    if gfp.nofail {
                        if let Some(p) = w.k().get_page_from_freelist(None) {
                            return Some(p);
                        }
                    }
                    if w.k().current().killed {
                        // The victim may allocate from reserves to exit.
                        continue;
                    }
                    // Time for the victim to exit (schedule_timeout_killable(1)).
                    let t = {
                        let k = w.k();
                        k.exec.now() + k.params.tick_ns()
                    };
                    w.sleep_until(t).await;
                }
                MayOom::Wait => {
                    let t = {
                        let k = w.k();
                        k.exec.now() + k.params.tick_ns()
                    };
                    w.sleep_until(t).await;
                }
            },
        }
        pay_cpu(w).await;
    }
}

/// `should_reclaim_retry` (5.9.1 mm/page_alloc.c; the same in 5.15.0, and
/// in 6.1.0 without the `congestion_wait`, which the profile's
/// `reclaim_retry` site decides): retry while some node could meet its min
/// watermark if all its reclaimable pages were reclaimed
/// (`available = zone_reclaimable_pages + NR_FREE_PAGES`,
/// `__zone_watermark_ok(zone, 0, min_wmark, …, available)`, which for order
/// 0 without highatomic reserves is `available > min`), for up to
/// `MAX_RECLAIM_RETRIES` passes without progress. Each node checked emits
/// `reclaim_retry_zone` in its kernel format; the loop stops at the first
/// node that passes, as the kernel's `goto out` does.
///
/// `Ok(())`: retry reclaim. `Err(reason)`: give up and go to the OOM killer;
/// `reason` is what the run record shows for the kill.
async fn should_reclaim_retry(
    w: &World,
    did_some_progress: bool,
    no_progress_loops: &mut u64,
) -> Result<(), String> {
    let (verdict, sleep) = {
        let mut k = w.k();
        // Order 0 is never PAGE_ALLOC_COSTLY_ORDER: progress resets.
        if did_some_progress {
            *no_progress_loops = 0;
        } else {
            *no_progress_loops += 1;
        }
        let max = k.params.max_reclaim_retries;
        if *no_progress_loops > max {
            // unreserve_highatomic_pageblock(): no highatomic reserves here.
            return Err(format!(
                "no_progress_loops={} > MAX_RECLAIM_RETRIES={max}",
                *no_progress_loops
            ));
        }
        let mut verdict = Err(String::new());
        let mut sleep = false;
        let mut failed = Vec::new();
        for nid in 0..k.nodes.len() {
            let reclaimable = k.zone_reclaimable_pages(nid);
            let available = reclaimable + k.nodes[nid].nr_free();
            let min_wmark = k.nodes[nid].wmark[WMARK_MIN];
            let wmark = available > min_wmark;
            crate::trace!(
                k,
                "reclaim_retry_zone",
                "node={} zone={:<8} order=0 reclaimable={} available={} min_wmark={} no_progress_loops={} wmark_check={}",
                nid,
                "Normal",
                reclaimable,
                available,
                min_wmark,
                *no_progress_loops,
                u8::from(wmark)
            );
            if wmark {
                verdict = Ok(());
                if !did_some_progress && 2 * k.write_pending(nid) > reclaimable {
                    sleep = true;
                }
                break;
            }
            failed.push(format!(
                "node {nid}: available {available} (reclaimable {reclaimable} + free {}) <= min {min_wmark} pages",
                available - reclaimable
            ));
        }
        if verdict.is_err() {
            verdict = Err(format!(
                "watermark check failed: {} (no_progress_loops={})",
                failed.join("; "),
                *no_progress_loops
            ));
        }
        let _ = &mut k;
        (verdict, sleep)
    };
    if verdict.is_ok() && sleep {
        let site = w.k().profile.reclaim_retry;
        crate::throttle::throttle_at(w, site, 0).await;
    }
    verdict
}
