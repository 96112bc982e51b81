//! Page reclaim (mm/vmscan.c): the shared chain every reclaimer enters.
//!
//! ```text
//! try_to_free_pages ─> do_try_to_free_pages ─> shrink_zones ─┐
//!                          balance_pgdat (kswapd) ───────────┴─> shrink_node
//!   ─> shrink_lruvec ─> shrink_list ─> shrink_{active,inactive}_list
//!   ─> isolate_lru_folios / shrink_folio_list / pageout
//! ```
//!
//! One [`ScanControl`] carries a reclaim pass's state, as `struct
//! scan_control` does. Names and decision order follow 5.15 (`shrink_page_list`
//! era) with the 5.16 throttling sites delegated to the profile; memcg
//! limit reclaim enters through [`try_to_free_mem_cgroup_pages`] and every
//! pass walks the reclaim root's memcgs (`shrink_node_memcgs`), then the
//! shrinkers (`shrink_slab`, root memcg only: mm/shrinker.rs). Not
//! modelled: compaction, MGLRU, THP splitting, lazyfree, soft limits.

mod kswapd;
mod lists;
mod lru_lock;
mod lruvec_scan;

pub use kswapd::kswapd;

use crate::engine::World;
use crate::mm::alloc::Gfp;
use crate::mm::page::{Lru, EVICTABLE_LRUS};
use crate::mm::{int_sqrt, LRUVEC_CONGESTED, PGDAT_DIRTY, PGDAT_WRITEBACK, WMARK_MIN};
use crate::profile::{CongestionFlags, NoProgress, Reason};
use crate::throttle::{reclaim_throttle, throttle_at};
use crate::vmstat::Ev;
use crate::Kernel;

/// `SWAP_CLUSTER_MAX`
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`
pub const DEF_PRIORITY: i32 = 12;
/// `DEACTIVATE_ANON`
pub const DEACTIVATE_ANON: u8 = 1;
/// `DEACTIVATE_FILE`
pub const DEACTIVATE_FILE: u8 = 2;

/// Per-`shrink_node`-pass tallies (`sc->nr`), reset at the top of every pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScanNr {
    /// File pages dirty or under writeback.
    pub dirty: u64,
    /// File pages dirty and not under writeback.
    pub unqueued_dirty: u64,
    /// Pages counted as congested.
    pub congested: u64,
    /// Pages under writeback marked `PG_reclaim` ("case 2").
    pub writeback: u64,
    /// Pages under writeback found again by kswapd ("case 1").
    pub immediate: u64,
    /// File pages isolated.
    pub file_taken: u64,
    /// Pages isolated.
    pub taken: u64,
}

/// `struct scan_control`: one reclaim pass's goal, permissions, modes and results.
#[derive(Clone, Debug)]
pub struct ScanControl {
    /// How many pages to reclaim.
    pub nr_to_reclaim: u64,
    /// The caller's allocation context.
    pub gfp: Gfp,
    /// Scan `lru_size >> priority` pages per pass; counts down from `DEF_PRIORITY`.
    pub priority: i32,
    /// Memcg whose limit triggered reclaim (`None`: global).
    pub target_mem_cgroup: Option<u16>,
    /// May write dirty pages.
    pub may_writepage: bool,
    /// May unmap mapped pages.
    pub may_unmap: bool,
    /// May swap anon pages.
    pub may_swap: bool,
    /// `DEACTIVATE_ANON | DEACTIVATE_FILE`: which active lists may shrink.
    pub may_deactivate: u8,
    /// Deactivate regardless of list balance (second attempt).
    pub force_deactivate: bool,
    /// An active list was not shrunk because `may_deactivate` forbade it.
    pub skipped_deactivate: bool,
    /// Plenty of inactive file pages: reclaim only those.
    pub cache_trim_mode: bool,
    /// File cache too small to matter: reclaim anon.
    pub file_is_tiny: bool,
    /// Anon reclaim cost snapshot for `get_scan_count`.
    pub anon_cost: u64,
    /// File reclaim cost snapshot.
    pub file_cost: u64,
    /// Pages scanned (inactive lists) in this priority pass.
    pub nr_scanned: u64,
    /// Pages reclaimed in this invocation.
    pub nr_reclaimed: u64,
    /// Per-pass tallies.
    pub nr: ScanNr,
    /// Reclaim below `memory.low` is allowed (second attempt).
    pub memcg_low_reclaim: bool,
    /// A memcg was skipped for its `memory.low` protection.
    pub memcg_low_skipped: bool,
    /// The memory controller is on cgroup v2 (`memcg.version`).
    pub cgroup_v2: bool,
}

impl ScanControl {
    /// A pass's control with everything but its goal and permissions at
    /// the kernel's zero defaults.
    pub fn new(
        nr_to_reclaim: u64,
        gfp: Gfp,
        target_mem_cgroup: Option<u16>,
        may_writepage: bool,
        cgroup_v2: bool,
    ) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            gfp,
            priority: DEF_PRIORITY,
            target_mem_cgroup,
            may_writepage,
            may_unmap: true,
            may_swap: true,
            may_deactivate: 0,
            force_deactivate: false,
            skipped_deactivate: false,
            cache_trim_mode: false,
            file_is_tiny: false,
            anon_cost: 0,
            file_cost: 0,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr: ScanNr::default(),
            memcg_low_reclaim: false,
            memcg_low_skipped: false,
            cgroup_v2,
        }
    }
    /// `cgroup_reclaim(sc)`
    pub fn cgroup_reclaim(&self) -> bool {
        self.target_mem_cgroup.is_some()
    }
    /// `writeback_throttling_sane(sc)` (5.15): global reclaim, or limit
    /// reclaim on cgroup v2 (CONFIG_CGROUP_WRITEBACK); cgroup v1's
    /// `balance_dirty_pages` does not throttle per cgroup, so its limit
    /// reclaim waits on writeback in `shrink_folio_list` instead.
    pub fn writeback_throttling_sane(&self) -> bool {
        !self.cgroup_reclaim() || self.cgroup_v2
    }
    /// The lruvec whose flags and costs this pass reads
    /// (`mem_cgroup_lruvec(sc->target_mem_cgroup, pgdat)`).
    pub fn target_memcg(&self) -> usize {
        self.target_mem_cgroup.unwrap_or(0) as usize
    }
}

impl Kernel {
    /// `inactive_is_low`: is the inactive list of `inactive_lru`'s type
    /// smaller than `1/int_sqrt(10 * GB)` of the active list?
    ///
    /// Sizes are the lruvec's hierarchical counts (`lruvec_page_state`: a
    /// memcg's and its descendants'), as in 5.15.
    pub fn inactive_is_low(&self, nid: usize, memcg: usize, inactive_lru: Lru) -> bool {
        let active_lru = if inactive_lru.is_file() {
            Lru::ActiveFile
        } else {
            Lru::ActiveAnon
        };
        let inactive = self.lruvec_page_state(nid, memcg, inactive_lru);
        let active = self.lruvec_page_state(nid, memcg, active_lru);
        let gb = (inactive + active) >> 18;
        let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// `lruvec_page_state(lruvec, NR_LRU_BASE + lru)`: pages on list `lru`
    /// of `memcg` and its descendants on node `nid` (the root's: the node's).
    pub fn lruvec_page_state(&self, nid: usize, memcg: usize, lru: Lru) -> u64 {
        let node = &self.nodes[nid];
        if memcg == 0 {
            return node.lru_pages(lru);
        }
        self.memcgs[memcg]
            .subtree
            .iter()
            .map(|&m| node.lruvecs[m as usize].size(lru))
            .sum()
    }

    /// `can_age_anon_pages`: anon can be aged (and reclaimed) only with swap.
    pub fn can_age_anon_pages(&self) -> bool {
        self.can_reclaim_anon()
    }

    /// `get_scan_count` (5.15): how many pages of each evictable list to scan
    /// at this priority, balancing anon against file by swappiness and the
    /// recent IO cost of reclaiming each.
    /// Like the kernel's, it notes `sc.memcg_low_skipped` when it scaled a
    /// memcg's scan by its `memory.low`.
    pub fn get_scan_count(&self, nid: usize, memcg: usize, sc: &mut ScanControl) -> [u64; 4] {
        #[derive(PartialEq)]
        enum Balance {
            Equal,
            Fract,
            Anon,
            File,
        }
        let swappiness = self.params.swappiness;
        let mut fraction = [0u64; 2];
        let mut denominator = 1u64;
        let balance =
            if !sc.may_swap || !self.can_reclaim_anon() || (sc.cgroup_reclaim() && swappiness == 0)
            {
                Balance::File
            } else if sc.priority == 0 && swappiness > 0 {
                Balance::Equal
            } else if sc.file_is_tiny {
                Balance::Anon
            } else if sc.cache_trim_mode {
                Balance::File
            } else {
                let total = sc.anon_cost + sc.file_cost;
                let anon_cost = total + sc.anon_cost;
                let file_cost = total + sc.file_cost;
                let total = anon_cost + file_cost;
                let ap = swappiness * (total + 1) / (anon_cost + 1);
                let fp = (200 - swappiness) * (total + 1) / (file_cost + 1);
                fraction = [ap, fp];
                denominator = (ap + fp).max(1);
                Balance::Fract
            };
        let lv = &self.nodes[nid].lruvecs[memcg];
        // mem_cgroup_protection(): a protected memcg is scanned in
        // proportion to how far its usage exceeds its protection.
        let (cgroup_size, protection) = if memcg == 0 {
            (0, 0)
        } else {
            let (emin, elow) = self.mem_cgroup_protection(sc.target_memcg() as u16, memcg as u16);
            // memory.low scaling, make sure we retry before OOM.
            let p = if !sc.memcg_low_reclaim && elow > emin {
                sc.memcg_low_skipped = true;
                elow
            } else {
                emin
            };
            // Avoid TOCTOU with earlier protection check.
            (self.memcgs[memcg].usage.max(p), p)
        };
        let mut nr = [0u64; 4];
        for (i, lru) in EVICTABLE_LRUS.iter().enumerate() {
            let size = lv.size(*lru);
            let mut scan = if protection > 0 {
                let s = size - size * protection / (cgroup_size + 1);
                s.max(SWAP_CLUSTER_MAX)
            } else {
                size
            };
            scan >>= sc.priority;
            let file = lru.is_file();
            match balance {
                Balance::Equal => {}
                Balance::Fract => scan = scan * fraction[usize::from(file)] / denominator,
                Balance::File | Balance::Anon => {
                    if (balance == Balance::File) != file {
                        scan = 0;
                    }
                }
            }
            nr[i] = scan;
        }
        nr
    }

    /// `prepare_scan_control` part of `shrink_node` (5.15): cost snapshot,
    /// `may_deactivate`, `cache_trim_mode`, `file_is_tiny`.
    fn prepare_scan_control(&self, nid: usize, sc: &mut ScanControl) {
        let memcg = sc.target_memcg();
        let lv = &self.nodes[nid].lruvecs[memcg];
        sc.anon_cost = lv.anon_cost;
        sc.file_cost = lv.file_cost;
        if !sc.force_deactivate {
            for (bit, lru, t) in [
                (DEACTIVATE_ANON, Lru::InactiveAnon, 0),
                (DEACTIVATE_FILE, Lru::InactiveFile, 1),
            ] {
                if lv.ws_activate[t] != lv.refaults[t] || self.inactive_is_low(nid, memcg, lru) {
                    sc.may_deactivate |= bit;
                } else {
                    sc.may_deactivate &= !bit;
                }
            }
        } else {
            sc.may_deactivate = DEACTIVATE_ANON | DEACTIVATE_FILE;
        }
        let file = self.lruvec_page_state(nid, memcg, Lru::InactiveFile);
        sc.cache_trim_mode = (file >> sc.priority) > 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
        if !sc.cgroup_reclaim() {
            let node = &self.nodes[nid];
            let free = node.nr_free();
            let file = node.lru_pages(Lru::ActiveFile) + node.lru_pages(Lru::InactiveFile);
            let anon = node.lru_pages(Lru::InactiveAnon);
            sc.file_is_tiny = file + free <= node.wmark[crate::mm::WMARK_HIGH]
                && sc.may_deactivate & DEACTIVATE_ANON == 0
                && (anon >> sc.priority) > 0;
        }
    }

    /// `snapshot_refaults(target_memcg, pgdat)`: the reclaim root's
    /// (hierarchical) refault activations, to tell new refaults next time.
    fn snapshot_refaults(&mut self, nid: usize, target: usize) {
        let lv = &mut self.nodes[nid].lruvecs[target];
        lv.refaults = lv.ws_activate;
    }
}

/// `shrink_lruvec` (5.15; 6.1 with `proportional_reclaim`): scans the
/// evictable lists in `SWAP_CLUSTER_MAX` batches towards the
/// `get_scan_count` targets; once enough is reclaimed (except in global
/// direct reclaim at `DEF_PRIORITY`) it stops the type with less left and
/// trims the other, and what it does after that differs between the
/// generations (profile `proportional_reclaim`; vmscan/lruvec_scan.rs).
/// Finally it rebalances the anon lists.
async fn shrink_lruvec(w: &World, nid: usize, memcg: usize, sc: &mut ScanControl) {
    let (nr, def_priority_direct, proportional_reclaim) = {
        let k = w.k();
        let nr = k.get_scan_count(nid, memcg, sc);
        let adj = !sc.cgroup_reclaim() && !k.current_is_kswapd() && sc.priority == DEF_PRIORITY;
        (nr, adj, k.profile.proportional_reclaim)
    };
    let mut plan = lruvec_scan::LruvecScan::new(nr, def_priority_direct, proportional_reclaim);
    let nr_to_reclaim = sc.nr_to_reclaim;
    let mut nr_reclaimed = 0;
    while let Some(round) = plan.next_round() {
        for (n, lru) in round.iter().zip(EVICTABLE_LRUS.iter()) {
            if *n > 0 {
                nr_reclaimed += shrink_list(w, *lru, *n, nid, memcg, sc).await;
            }
        }
        if plan.stop_after_round(nr_reclaimed, nr_to_reclaim) {
            break;
        }
    }
    sc.nr_reclaimed += nr_reclaimed;
    let age = {
        let k = w.k();
        k.can_age_anon_pages() && k.inactive_is_low(nid, memcg, Lru::InactiveAnon)
    };
    if age {
        lists::shrink_active_list(w, SWAP_CLUSTER_MAX, nid, memcg, sc, Lru::ActiveAnon).await;
    }
}

/// `shrink_list`: active lists are only deactivated when allowed.
async fn shrink_list(
    w: &World,
    lru: Lru,
    n: u64,
    nid: usize,
    memcg: usize,
    sc: &mut ScanControl,
) -> u64 {
    if lru.is_active() {
        let bit = if lru.is_file() {
            DEACTIVATE_FILE
        } else {
            DEACTIVATE_ANON
        };
        if sc.may_deactivate & bit != 0 {
            lists::shrink_active_list(w, n, nid, memcg, sc, lru).await;
        } else {
            sc.skipped_deactivate = true;
        }
        return 0;
    }
    lists::shrink_inactive_list(w, n, nid, memcg, sc, lru).await
}

/// `shrink_node` (5.15 structure; throttling sites from the profile): one
/// pass over the node's lruvecs, then the node flags kswapd sets from this
/// pass's tallies and the sleeps they trigger.
pub async fn shrink_node(w: &World, nid: usize, sc: &mut ScanControl) {
    sc.nr = ScanNr::default();
    let nr_reclaimed_before = sc.nr_reclaimed;
    w.k().prepare_scan_control(nid, sc);
    shrink_node_memcgs(w, nid, sc).await;
    // "Record the subtree's reclaim efficiency": slab pages freed by the
    // shrinkers count as reclaimed [5.9/6.1 shrink_node, reclaim_state].
    sc.nr_reclaimed += w.k().take_reclaimed_slab();
    let memcg = sc.target_memcg();
    let reclaimable = sc.nr_reclaimed > nr_reclaimed_before;

    let (kswapd_sleep, direct_sleep) = {
        let mut k = w.k();
        let is_kswapd = k.current_is_kswapd();
        if k.profile.congestion_flags != CongestionFlags::PerPass {
            // ≤4.16: the flags and sleeps came after each batch (2.6.37:
            // ZONE_CONGESTED after each batch, no sleep in shrink_zone).
            if reclaimable {
                k.nodes[nid].kswapd_failures = 0;
            }
            return;
        }
        let mut kswapd_sleep = false;
        if is_kswapd {
            let node = &mut k.nodes[nid];
            if sc.nr.writeback > 0 && sc.nr.writeback == sc.nr.taken {
                node.flags |= PGDAT_WRITEBACK;
            }
            // 5.15/5.16: no "!= 0" test (added in 6.9).
            if sc.nr.unqueued_dirty == sc.nr.file_taken {
                node.flags |= PGDAT_DIRTY;
            }
            kswapd_sleep = sc.nr.immediate > 0;
        }
        if (is_kswapd || (sc.cgroup_reclaim() && sc.writeback_throttling_sane()))
            && sc.nr.dirty > 0
            && sc.nr.dirty == sc.nr.congested
        {
            k.nodes[nid].lruvecs[memcg].flags |= LRUVEC_CONGESTED;
        }
        // 4.17-5.4 pgdat_memcg_congested(): the node's flag (kswapd's, on
        // the root lruvec) or the target memcg's; 5.5+: the target's only.
        let node_flag = k.profile.direct_congested_sees_node
            && k.nodes[nid].lruvecs[0].flags & LRUVEC_CONGESTED != 0;
        let direct_sleep =
            !is_kswapd && (node_flag || k.nodes[nid].lruvecs[memcg].flags & LRUVEC_CONGESTED != 0);
        if reclaimable {
            k.nodes[nid].kswapd_failures = 0;
        }
        (kswapd_sleep, direct_sleep)
    };
    if kswapd_sleep {
        let site = w.k().profile.kswapd_immediate;
        throttle_at(w, site, nid).await;
    }
    if direct_sleep {
        let site = w.k().profile.direct_congested;
        throttle_at(w, site, nid).await;
    }
}

/// `shrink_node_memcgs` (5.15.0): every memcg of the reclaim root's
/// subtree in `mem_cgroup_iter` order (pre-order; the root's own lruvec
/// first), skipping those below `memory.min`, and below `memory.low`
/// unless this is the second attempt, which counts a `low` event.
async fn shrink_node_memcgs(w: &World, nid: usize, sc: &mut ScanControl) {
    let target = sc.target_memcg();
    let mut i = 0;
    loop {
        let memcg = {
            let mut k = w.k();
            let Some(&m) = k.memcgs[target].subtree.get(i) else {
                break;
            };
            i += 1;
            let (emin, elow) = k.mem_cgroup_protection(target as u16, m);
            let usage = k.memcgs[m as usize].usage;
            if emin > 0 && usage <= emin {
                // mem_cgroup_below_min: hard protection.
                continue;
            }
            if elow > 0 && usage <= elow {
                if !sc.memcg_low_reclaim {
                    sc.memcg_low_skipped = true;
                    continue;
                }
                k.memcg_memory_event(m, crate::mm::memcontrol::MemcgEvent::Low);
            }
            m as usize
        };
        shrink_lruvec(w, nid, memcg, sc).await;
        // shrink_slab(sc->gfp_mask, pgdat->node_id, memcg, sc->priority)
        // [5.9 shrink_node_memcgs]: the root memcg's walk only, once per
        // pass (reclaimlab's simplification, mm/shrinker.rs).
        if memcg == 0 {
            crate::mm::shrinker::shrink_slab(w, sc.gfp, nid, sc.priority).await;
        }
    }
}

/// `consider_reclaim_throttle` (the posted series and 5.16-rc1: `rc1`; 5.16-rc8: `final`; and
/// reclaimlab's `backoff`, which throttles by rc1's rule).
async fn consider_reclaim_throttle(w: &World, nid: usize, sc: &ScanControl) {
    let sleep = {
        let mut k = w.k();
        let mode = k.profile.noprogress;
        if mode == NoProgress::None {
            return;
        }
        if k.noprogress_wake(nid, sc.nr_reclaimed, sc.nr_scanned) {
            // (backoff) An efficient reclaim starts the task's sleeps over.
            k.current_mut().noprogress_streak = 0;
            return;
        }
        match mode {
            NoProgress::None => false,
            NoProgress::Rc1 | NoProgress::Backoff => {
                !k.current_is_kswapd() && sc.priority < DEF_PRIORITY - 2
            }
            NoProgress::Final => {
                !k.current_is_kswapd()
                    && !sc.cgroup_reclaim()
                    && sc.priority == 1
                    && sc.nr_reclaimed == 0
            }
        }
    };
    if sleep {
        reclaim_throttle(w, nid, Reason::Noprogress).await;
    }
}

/// `shrink_zones`: each node once (the task's node first), then (5.16-rc8)
/// one `consider_reclaim_throttle` on the first node; 5.16-rc1 considers it
/// after every node.
async fn shrink_zones(w: &World, sc: &mut ScanControl) {
    let (first, n, mode) = {
        let k = w.k();
        (
            k.current().nid as usize,
            k.nodes.len(),
            k.profile.noprogress,
        )
    };
    for i in 0..n {
        let nid = (first + i) % n;
        shrink_node(w, nid, sc).await;
        if matches!(mode, NoProgress::Rc1 | NoProgress::Backoff) {
            consider_reclaim_throttle(w, nid, sc).await;
        }
    }
    if mode == NoProgress::Final {
        consider_reclaim_throttle(w, first, sc).await;
    }
}

/// `do_try_to_free_pages`: the priority loop of direct (and memcg) reclaim.
async fn do_try_to_free_pages(w: &World, sc: &mut ScanControl) -> u64 {
    loop {
        if !sc.cgroup_reclaim() {
            w.k().count(Ev::AllocstallNormal, 1);
        }
        loop {
            sc.nr_scanned = 0;
            shrink_zones(w, sc).await;
            if sc.nr_reclaimed >= sc.nr_to_reclaim {
                break;
            }
            if sc.priority < DEF_PRIORITY - 2 {
                sc.may_writepage = true;
            }
            // 2.6.36/2.6.37: "Take a nap, wait for some writeback to
            // complete" when this pass scanned pages below DEF_PRIORITY - 2
            // (congestion_wait, or wait_iff_congested on the preferred zone:
            // the task's node).
            let nap = w.k().profile.early.do_try_to_free_pages;
            if nap != crate::profile::Sleep::None
                && sc.nr_scanned > 0
                && sc.priority < DEF_PRIORITY - 2
            {
                let nid = w.k().current().nid as usize;
                throttle_at(w, nap, nid).await;
            }
            if sc.priority == 0 {
                break;
            }
            sc.priority -= 1;
            if w.k().current().killed {
                break;
            }
        }
        {
            let mut k = w.k();
            let target = sc.target_memcg();
            for nid in 0..k.nodes.len() {
                k.snapshot_refaults(nid, target);
                if sc.cgroup_reclaim() {
                    k.nodes[nid].lruvecs[target].flags &= !LRUVEC_CONGESTED;
                }
            }
        }
        if sc.nr_reclaimed > 0 {
            return sc.nr_reclaimed;
        }
        if sc.skipped_deactivate {
            sc.priority = DEF_PRIORITY;
            sc.force_deactivate = true;
            sc.skipped_deactivate = false;
            continue;
        }
        // Untapped cgroup reserves? Don't OOM, retry.
        if sc.memcg_low_skipped {
            sc.priority = DEF_PRIORITY;
            sc.memcg_low_reclaim = true;
            sc.memcg_low_skipped = false;
            continue;
        }
        return 0;
    }
}

/// `allow_direct_reclaim`: free pages above half the min watermarks of
/// nodes with something to reclaim (or kswapd gave up on them).
fn allow_direct_reclaim(k: &Kernel, nid: usize) -> bool {
    let node = &k.nodes[nid];
    if node.kswapd_failures >= k.params.max_reclaim_retries {
        return true;
    }
    if k.zone_reclaimable_pages(nid) == 0 {
        return true;
    }
    node.nr_free() > node.wmark[WMARK_MIN] / 2
}

/// `throttle_direct_reclaim` (the pfmemalloc throttle): when free memory is
/// below half the min watermark, direct reclaimers wait for kswapd to
/// restore it (`wait_event_killable`), counting `pgscan_direct_throttle`.
async fn throttle_direct_reclaim(w: &World) {
    let nid = w.k().current().nid as usize;
    let mut counted = false;
    loop {
        {
            let mut k = w.k();
            if allow_direct_reclaim(&k, nid) || k.current().killed {
                return;
            }
            if !counted {
                k.count(Ev::PgscanDirectThrottle, 1);
                counted = true;
            }
            k.wakeup_kswapd(nid);
            let k = &mut *k;
            k.exec.prepare_to_wait(&mut k.nodes[nid].pfmemalloc_wait);
        }
        // wait_event_killable() has no timeout; kswapd wakes it. A 1 s bound
        // (the !__GFP_FS variant's) guards against a lost wake-up.
        let deadline = w.k().exec.now() + 1_000_000_000;
        w.block(Some(deadline)).await;
        let mut k = w.k();
        let k = &mut *k;
        k.exec.finish_wait(&mut k.nodes[nid].pfmemalloc_wait);
    }
}

/// `try_to_free_pages`: direct reclaim of `SWAP_CLUSTER_MAX` pages for an
/// allocation. Returns pages reclaimed.
pub async fn try_to_free_pages(w: &World, gfp: Gfp) -> u64 {
    throttle_direct_reclaim(w).await;
    let mut sc = {
        let k = w.k();
        ScanControl::new(
            SWAP_CLUSTER_MAX,
            gfp,
            None,
            k.params.laptop_mode == 0,
            k.params.memcg_version == 2,
        )
    };
    {
        let mut k = w.k();
        crate::trace!(
            k,
            "mm_vmscan_direct_reclaim_begin",
            "order=0 gfp_flags=GFP_HIGHUSER_MOVABLE"
        );
    }
    w.k().set_task_reclaim_state(true);
    let n = do_try_to_free_pages(w, &mut sc).await;
    let mut k = w.k();
    k.set_task_reclaim_state(false);
    crate::trace!(k, "mm_vmscan_direct_reclaim_end", "nr_reclaimed={}", n);
    n
}

/// `try_to_free_mem_cgroup_pages` (5.15.0): limit reclaim of `memcg` for
/// `nr_pages`, from the task's node round the zonelist, under
/// `memalloc_noreclaim_save` (reclaim does not allocate here). Returns
/// pages reclaimed.
pub async fn try_to_free_mem_cgroup_pages(w: &World, memcg: u16, nr_pages: u64, gfp: Gfp) -> u64 {
    let mut sc = {
        let mut k = w.k();
        crate::trace!(
            k,
            "mm_vmscan_memcg_reclaim_begin",
            "order=0 gfp_flags=GFP_HIGHUSER_MOVABLE"
        );
        ScanControl::new(
            nr_pages.max(SWAP_CLUSTER_MAX),
            gfp,
            Some(memcg),
            k.params.laptop_mode == 0,
            k.params.memcg_version == 2,
        )
    };
    w.k().set_task_reclaim_state(true);
    let n = do_try_to_free_pages(w, &mut sc).await;
    let throttle_nid = {
        let mut k = w.k();
        k.set_task_reclaim_state(false);
        crate::trace!(k, "mm_vmscan_memcg_reclaim_end", "nr_reclaimed={}", n);
        // The posted series (v1 3/5, v3 3/8; `policy.memcg_noprogress`):
        // a call that reclaimed nothing sleeps on NOPROGRESS on the first
        // zone's node of the zonelist, the task's own node here. Dropped
        // before the merge: consider_reclaim_throttle has already slept
        // where it should (Vlastimil Babka's review of v3, 14 Oct 2021).
        (n == 0 && k.profile.memcg_noprogress).then(|| k.current().nid as usize)
    };
    if let Some(nid) = throttle_nid {
        reclaim_throttle(w, nid, Reason::Noprogress).await;
    }
    n
}
