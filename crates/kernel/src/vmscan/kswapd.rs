//! kswapd (mm/vmscan.c 5.15): `kswapd`, `kswapd_try_to_sleep`,
//! `prepare_kswapd_sleep`, `balance_pgdat`, `kswapd_shrink_node`.
//! Simplifications: order 0 only (no kcompactd, no watermark boosting).

use std::rc::Rc;

use super::{shrink_node, ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::engine::{Wake, World};
use crate::mm::alloc::Gfp;
use crate::mm::page::Lru;
use crate::mm::{LRUVEC_CONGESTED, PGDAT_DIRTY, PGDAT_WRITEBACK, WMARK_HIGH, WMARK_MIN};
use crate::vmstat::Ev;
use crate::Kernel;

impl Kernel {
    /// `pgdat_balanced`: the zone meets its high watermark.
    pub fn pgdat_balanced(&self, nid: usize) -> bool {
        self.nodes[nid].watermark_ok(WMARK_HIGH)
    }

    /// `clear_pgdat_congested`
    fn clear_pgdat_congested(&mut self, nid: usize) {
        let node = &mut self.nodes[nid];
        node.lruvecs[0].flags &= !LRUVEC_CONGESTED;
        node.flags &= !(PGDAT_DIRTY | PGDAT_WRITEBACK);
    }

    /// `prepare_kswapd_sleep`: wakes pfmemalloc waiters; true if kswapd may
    /// sleep (node balanced, which also clears the congestion flags, or
    /// hopeless after `MAX_RECLAIM_RETRIES` failures).
    fn prepare_kswapd_sleep(&mut self, nid: usize) -> bool {
        self.wake_pfmemalloc(nid);
        if self.nodes[nid].kswapd_failures >= self.params.max_reclaim_retries {
            return true;
        }
        if self.pgdat_balanced(nid) {
            self.clear_pgdat_congested(nid);
            return true;
        }
        false
    }

    fn wake_pfmemalloc(&mut self, nid: usize) {
        if self.nodes[nid].pfmemalloc_wait.active() {
            let mut wq = std::mem::take(&mut self.nodes[nid].pfmemalloc_wait);
            self.exec.wake_up_all(&mut wq);
            self.nodes[nid].pfmemalloc_wait = wq;
        }
    }
}

/// `balance_pgdat`: reclaim until the node is balanced, raising priority
/// (12 down to 1) when a pass scanned less than the high watermark's worth or
/// reclaimed nothing.
async fn balance_pgdat(w: &World, nid: usize) {
    let v2 = w.k().params.memcg_version == 2;
    let mut sc = ScanControl::new(0, Gfp::KERNEL, None, true, v2);
    w.k().count(Ev::Pageoutrun, 1);
    w.k().set_task_reclaim_state(true);
    loop {
        let nr_reclaimed_before = sc.nr_reclaimed;
        let mut raise_priority = true;
        {
            let k = w.k();
            if k.pgdat_balanced(nid) {
                break;
            }
            sc.may_writepage = k.params.laptop_mode == 0;
            sc.may_swap = true;
        }
        // kswapd_age_node(): background aging of the anon lists.
        let age = {
            let k = w.k();
            k.can_age_anon_pages() && k.inactive_is_low(nid, 0, Lru::InactiveAnon)
        };
        if age {
            super::lists::shrink_active_list(w, SWAP_CLUSTER_MAX, nid, 0, &mut sc, Lru::ActiveAnon)
                .await;
        }
        if sc.priority < DEF_PRIORITY - 2 {
            sc.may_writepage = true;
        }
        sc.nr_scanned = 0;
        // kswapd_shrink_node(): aim for the high watermark.
        sc.nr_to_reclaim = {
            let k = w.k();
            k.nodes[nid].wmark[WMARK_HIGH].max(SWAP_CLUSTER_MAX)
        };
        shrink_node(w, nid, &mut sc).await;
        if sc.nr_scanned >= sc.nr_to_reclaim {
            raise_priority = false;
        }
        {
            let mut k = w.k();
            if super::allow_direct_reclaim(&k, nid) {
                k.wake_pfmemalloc(nid);
            }
        }
        // 2.6.36/2.6.37 balance_pgdat: "kswapd is getting into trouble.
        // Take a nap" below DEF_PRIORITY - 2 after a pass that scanned
        // pages, unless the zone is under its min watermark.
        let nap = w.k().profile.early.kswapd_nap;
        if nap != crate::profile::Sleep::None && sc.nr_scanned > 0 && sc.priority < DEF_PRIORITY - 2
        {
            let nap = {
                let mut k = w.k();
                if k.pgdat_balanced(nid) {
                    None
                } else if !k.nodes[nid].watermark_ok(WMARK_MIN) {
                    k.stats.kswapd_skip_congestion_wait += 1;
                    None
                } else {
                    Some(nap)
                }
            };
            if let Some(site) = nap {
                crate::throttle::throttle_at(w, site, nid).await;
            }
        }
        let reclaimed = sc.nr_reclaimed - nr_reclaimed_before;
        if raise_priority || reclaimed == 0 {
            sc.priority -= 1;
        }
        if sc.priority < 1 {
            break;
        }
    }
    let mut k = w.k();
    k.set_task_reclaim_state(false);
    if sc.nr_reclaimed == 0 {
        k.nodes[nid].kswapd_failures += 1;
    }
    k.snapshot_refaults_pub(nid);
}

impl Kernel {
    /// `snapshot_refaults` for kswapd.
    fn snapshot_refaults_pub(&mut self, nid: usize) {
        for lv in &mut self.nodes[nid].lruvecs {
            lv.refaults = lv.ws_activate;
        }
    }
}

/// The kswapd thread of node `nid`.
pub async fn kswapd(w: Rc<World>, nid: usize) {
    {
        let mut k = w.k();
        k.nodes[nid].nr_writeback_throttled = 0;
    }
    loop {
        // kswapd_try_to_sleep()
        let short = {
            let mut k = w.k();
            k.nodes[nid].kswapd_running = false;
            let k = &mut *k;
            k.exec.prepare_to_wait(&mut k.nodes[nid].kswapd_wait);
            k.prepare_kswapd_sleep(nid)
        };
        let mut remaining = false;
        if short {
            let deadline = {
                let k = w.k();
                let tick = k.params.tick_ns();
                (k.jiffies() + k.params.hz / 10) * tick
            };
            let why = w.block(Some(deadline)).await;
            remaining = why == Wake::Woken;
            let mut k = w.k();
            let k = &mut *k;
            k.exec.finish_wait(&mut k.nodes[nid].kswapd_wait);
            k.exec.prepare_to_wait(&mut k.nodes[nid].kswapd_wait);
        }
        let sleep = !remaining && w.k().prepare_kswapd_sleep(nid);
        if sleep {
            {
                let mut k = w.k();
                crate::trace!(k, "mm_vmscan_kswapd_sleep", "nid={}", nid);
            }
            w.block(None).await;
        } else {
            let mut k = w.k();
            k.count(
                if remaining {
                    Ev::KswapdLowWmarkHitQuickly
                } else {
                    Ev::KswapdHighWmarkHitQuickly
                },
                1,
            );
        }
        {
            let mut k = w.k();
            let k = &mut *k;
            k.exec.finish_wait(&mut k.nodes[nid].kswapd_wait);
            k.nodes[nid].kswapd_running = true;
            crate::trace!(k, "mm_vmscan_kswapd_wake", "nid={} order=0", nid);
        }
        balance_pgdat(&w, nid).await;
        // What the pass charged and has not paid yet, before it sleeps.
        crate::sched::pay_cpu(&w).await;
        let c = w.k().params.cost_wakeup_ns;
        crate::sched::run_on_cpu(&w, 0, c).await;
    }
}
