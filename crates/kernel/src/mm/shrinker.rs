//! Shrinkers and `shrink_slab`: how reclaim asks caches outside the LRU to
//! give objects back, at each `shrink_node` pass's priority.
//!
//! [`do_shrink_slab`] follows mm/vmscan.c in three versions, chosen by the
//! profile's `policy.do_shrink_slab` ([`ShrinkSlab`]):
//! - 4.19 (4.19.1): `delta = (freeable >> priority) * 4 / seeks`, floored at
//!   `min(freeable, batch)` (172b06c32b94, reverted in 5.0); the deferred
//!   work all added to `total_scan`; the anti-wind-up cap.
//! - 5.8 (identical in 5.9 and 5.10): as 4.19 without the floor, with the
//!   `seeks == 0` case (`freeable / 2`).
//! - 5.15 (and 6.1): `total_scan = (nr >> priority) + delta` capped at
//!   `2 * freeable`, and `next_deferred = clamp(nr + delta - scanned, 0,
//!   2 * freeable)` (Yang Shi's 5.13 rework, read in 5.15.0).
//!
//! Simplified, as `docs/slab.md` says: `shrink_slab` walks the shrinkers
//! with the root memcg only (`shrink_slab_memcg` is not modelled: the
//! objects of the booted OS, fs/os.rs, are the root's, and limit reclaim
//! of a child memcg would see none of them; every
//! shrinker is NUMA-aware with its deferred work per node, which in 5.15 is
//! also the root memcg's `nr_deferred`), and `shrinker_rwsem` is never
//! contended.

use crate::engine::World;
use crate::mm::alloc::Gfp;
use crate::vmstat::Ev;
use crate::Kernel;

/// `SHRINK_STOP`: `scan_objects` could not make progress in this context.
pub const SHRINK_STOP: u64 = !0;
/// `SHRINK_EMPTY`: `count_objects` found nothing at all.
pub const SHRINK_EMPTY: u64 = !0 - 1;
/// `SHRINK_BATCH`
pub const SHRINK_BATCH: u64 = 128;
/// `DEFAULT_SEEKS`
pub const DEFAULT_SEEKS: u64 = 2;
/// `SHRINKER_NUMA_AWARE`
pub const SHRINKER_NUMA_AWARE: u32 = 1;
/// `SHRINKER_MEMCG_AWARE`
pub const SHRINKER_MEMCG_AWARE: u32 = 2;

/// Which `do_shrink_slab` arithmetic a profile uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkSlab {
    /// 4.19.1: with the `min(freeable, batch)` floor on `delta`.
    V4_19,
    /// 5.8–5.10.
    V5_8,
    /// 5.13+ (read in 5.15.0 and 6.1.0).
    V5_15,
}

impl ShrinkSlab {
    /// Every value, by the name `--set policy.do_shrink_slab=NAME` takes.
    pub const CHOICES: [(&'static str, ShrinkSlab); 3] = [
        ("4.19", ShrinkSlab::V4_19),
        ("5.8", ShrinkSlab::V5_8),
        ("5.15", ShrinkSlab::V5_15),
    ];
}

/// What a shrinker shrinks (its `count_objects`/`scan_objects`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkerKind {
    /// A superblock's `s_shrink` (`super_cache_count`/`super_cache_scan`),
    /// by superblock index.
    Super(usize),
    /// An XFS buffer target's `bt_shrinker` (`xfs_buftarg_shrink_count`/
    /// `_scan`), by superblock index.
    XfsBuf(usize),
    /// An ext4 superblock's `s_es_shrinker` (`ext4_es_count`/
    /// `ext4_es_scan`), by superblock index: the booted OS's tools disk
    /// (fs/os.rs).
    Ext4Es(usize),
}

/// A registered `struct shrinker`.
#[derive(Clone, Debug)]
pub struct Shrinker {
    /// Its callbacks.
    pub kind: ShrinkerKind,
    /// `seeks`: cost of recreating an object (`DEFAULT_SEEKS`).
    pub seeks: u64,
    /// `batch` (0: `SHRINK_BATCH`).
    pub batch: u64,
    /// `SHRINKER_*` flags.
    pub flags: u32,
    /// `nr_deferred[nid]`: work left over by earlier calls.
    pub nr_deferred: Vec<i64>,
}

/// `struct shrink_control`.
#[derive(Clone, Copy, Debug)]
pub struct ShrinkControl {
    /// The reclaimer's allocation context.
    pub gfp: Gfp,
    /// Node being reclaimed.
    pub nid: usize,
    /// Objects to scan in this call.
    pub nr_to_scan: u64,
    /// Objects the callee says it scanned.
    pub nr_scanned: u64,
}

/// The scan plan of one `do_shrink_slab` call: `(delta, total_scan)`
/// for `freeable` objects, `nr` deferred, at `priority`.
pub fn shrink_plan(
    v: ShrinkSlab,
    freeable: u64,
    nr: u64,
    priority: i32,
    seeks: u64,
    batch: u64,
) -> (u64, u64) {
    let mut delta = if seeks > 0 || v == ShrinkSlab::V4_19 {
        (freeable >> priority) * 4 / seeks.max(1)
    } else {
        freeable / 2
    };
    if v == ShrinkSlab::V4_19 {
        // "Make sure we apply some minimal pressure on default priority
        // even on small cgroups" [4.19.1 do_shrink_slab].
        delta = delta.max(freeable.min(batch));
    }
    let total_scan = match v {
        ShrinkSlab::V5_15 => ((nr >> priority) + delta).min(2 * freeable),
        ShrinkSlab::V4_19 | ShrinkSlab::V5_8 => {
            let mut t = nr + delta;
            // "avoid excessive windup on filesystem shrinkers due to large
            // numbers of GFP_NOFS allocations".
            if delta < freeable / 4 {
                t = t.min(freeable / 2);
            }
            t.min(2 * freeable)
        }
    };
    (delta, total_scan)
}

/// The work deferred to the next call after scanning `scanned` objects.
pub fn next_deferred(v: ShrinkSlab, freeable: u64, nr: u64, delta: u64, scanned: u64) -> u64 {
    match v {
        ShrinkSlab::V5_15 => (nr + delta).saturating_sub(scanned).min(2 * freeable),
        // next_deferred = total_scan before the caps, i.e. nr + delta.
        ShrinkSlab::V4_19 | ShrinkSlab::V5_8 => (nr + delta).saturating_sub(scanned),
    }
}

impl Kernel {
    /// `register_shrinker`; returns its index.
    pub fn register_shrinker(
        &mut self,
        kind: ShrinkerKind,
        seeks: u64,
        batch: u64,
        flags: u32,
    ) -> usize {
        self.shrinkers.push(Shrinker {
            kind,
            seeks,
            batch,
            flags,
            nr_deferred: vec![0; self.nodes.len()],
        });
        self.shrinkers.len() - 1
    }

    /// The `count_objects` callback of shrinker `i`.
    fn shrinker_count(&self, i: usize, sc: &ShrinkControl) -> u64 {
        match self.shrinkers[i].kind {
            ShrinkerKind::Super(sb) => self.super_cache_count(sb, sc),
            ShrinkerKind::XfsBuf(sb) => match self.xfs_buftarg_shrink_count(sb) {
                0 => SHRINK_EMPTY,
                n => n,
            },
            // ext4_es_count returns the counter as it is: 0, never SHRINK_EMPTY.
            ShrinkerKind::Ext4Es(sb) => self.ext4_es_count(sb),
        }
    }

    /// `%pS` of the shrinker's `scan_objects` and its `%p` (a stable
    /// stand-in for the hashed pointer).
    fn shrinker_names(&self, i: usize) -> (&'static str, String) {
        let f = match self.shrinkers[i].kind {
            ShrinkerKind::Super(_) => "super_cache_scan+0x0/0x1b0",
            ShrinkerKind::XfsBuf(_) => "xfs_buftarg_shrink_scan+0x0/0x90 [xfs]",
            ShrinkerKind::Ext4Es(_) => "ext4_es_scan+0x0/0x360 [ext4]",
        };
        let p = 0x9e37_79b9u64.wrapping_mul(i as u64 + 1) & 0xffff_ffff;
        (f, format!("{p:016x}"))
    }
}

/// The `scan_objects` callback of shrinker `i`.
async fn shrinker_scan(w: &World, i: usize, sc: &mut ShrinkControl) -> u64 {
    let kind = w.k().shrinkers[i].kind;
    match kind {
        ShrinkerKind::Super(sb) => crate::fs::super_block::super_cache_scan(w, sb, sc).await,
        ShrinkerKind::XfsBuf(sb) => w.k().xfs_buftarg_shrink_scan(sb, sc.nr_to_scan),
        // ext4_es_scan → __es_shrink → es_reclaim_extents: every entry is
        // referenced (fs/os.rs), so it is unmarked, skipped and none freed;
        // sc->nr_scanned is left as nr_to_scan [5.10 and 6.1
        // fs/ext4/extents_status.c].
        ShrinkerKind::Ext4Es(_) => 0,
    }
}

/// `do_shrink_slab` [5.8/5.9 mm/vmscan.c; 4.19.1 and 5.15.0 variants by
/// `policy.do_shrink_slab`]: scan `total_scan` objects in batches and
/// defer what was not done to the next call on this node.
pub async fn do_shrink_slab(w: &World, sc: &mut ShrinkControl, i: usize, priority: i32) -> u64 {
    let (freeable, nr, delta, mut total_scan, batch, v) = {
        let mut k = w.k();
        let freeable = k.shrinker_count(i, sc);
        if freeable == 0 || freeable == SHRINK_EMPTY {
            return 0;
        }
        let v = k.profile.do_shrink_slab;
        let nid = if k.shrinkers[i].flags & SHRINKER_NUMA_AWARE != 0 {
            sc.nid
        } else {
            0
        };
        sc.nid = nid;
        let s = &mut k.shrinkers[i];
        let nr = std::mem::take(&mut s.nr_deferred[nid]).max(0) as u64;
        let batch = if s.batch == 0 { SHRINK_BATCH } else { s.batch };
        let (delta, total_scan) = shrink_plan(v, freeable, nr, priority, s.seeks, batch);
        let (f, p) = k.shrinker_names(i);
        crate::trace!(
            k,
            "mm_shrink_slab_start",
            "{} {}: nid: {} objects to shrink {} gfp_flags {} cache items {} delta {} total_scan {} priority {}",
            f,
            p,
            nid,
            nr,
            sc.gfp.name(),
            freeable,
            delta,
            total_scan,
            priority
        );
        (freeable, nr, delta, total_scan, batch, v)
    };
    let mut freed = 0u64;
    let mut scanned = 0u64;
    while total_scan >= batch || total_scan >= freeable {
        let n = batch.min(total_scan);
        sc.nr_to_scan = n;
        sc.nr_scanned = n;
        let ret = shrinker_scan(w, i, sc).await;
        if ret == SHRINK_STOP {
            break;
        }
        freed += ret;
        {
            let mut k = w.k();
            k.count(Ev::SlabsScanned, sc.nr_scanned);
            let c = k.params.cost_slab_object_ns * sc.nr_scanned;
            k.charge_sys(c);
        }
        crate::sched::maybe_pay_cpu(w).await;
        total_scan -= sc.nr_scanned.min(total_scan);
        scanned += sc.nr_scanned;
        if sc.nr_scanned == 0 {
            break;
        }
    }
    let mut k = w.k();
    let next = next_deferred(v, freeable, nr, delta, scanned);
    let nid = sc.nid;
    let new_nr = {
        let d = &mut k.shrinkers[i].nr_deferred[nid];
        if next > 0 {
            *d += next as i64;
        }
        *d
    };
    let (f, p) = k.shrinker_names(i);
    crate::trace!(
        k,
        "mm_shrink_slab_end",
        "{} {}: nid: {} unused scan count {} new scan count {} total_scan {} last shrinker return val {}",
        f,
        p,
        nid,
        nr,
        new_nr,
        total_scan,
        freed
    );
    freed
}

/// `shrink_slab(gfp, nid, memcg, priority)` for the root memcg [5.9
/// mm/vmscan.c]: every registered shrinker once (`SHRINK_EMPTY` counts 0).
/// Returns objects freed (which never reach `sc->nr_reclaimed`: slab
/// pages do, through `reclaim_state`).
pub async fn shrink_slab(w: &World, gfp: Gfp, nid: usize, priority: i32) -> u64 {
    let n = w.k().shrinkers.len();
    let mut freed = 0;
    for i in 0..n {
        let mut sc = ShrinkControl {
            gfp,
            nid,
            nr_to_scan: 0,
            nr_scanned: 0,
        };
        freed += do_shrink_slab(w, &mut sc, i, priority).await;
    }
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_is_twice_freeable_over_two_to_the_priority() {
        for v in [ShrinkSlab::V5_8, ShrinkSlab::V5_15] {
            assert_eq!(shrink_plan(v, 1 << 20, 0, 12, 2, 1024).0, 512);
            assert_eq!(shrink_plan(v, 1 << 20, 0, 0, 2, 1024), (2 << 20, 2 << 20));
        }
        // 4.19's floor: at least min(freeable, batch).
        assert_eq!(shrink_plan(ShrinkSlab::V4_19, 1000, 0, 12, 2, 128).0, 128);
        assert_eq!(shrink_plan(ShrinkSlab::V5_8, 1000, 0, 12, 2, 128).0, 0);
    }

    /// Objects scanned over `passes` calls at `priority` of a shrinker with
    /// `freeable` objects none of which are freed (the loop of
    /// `do_shrink_slab`, with the deferred work carried between calls).
    fn scanned_over(v: ShrinkSlab, freeable: u64, seeks: u64, priority: i32, passes: u32) -> u64 {
        let batch = 1024;
        let (mut nr, mut all) = (0, 0);
        for _ in 0..passes {
            let (delta, mut total) = shrink_plan(v, freeable, nr, priority, seeks, batch);
            let mut scanned = 0;
            while total >= batch || total >= freeable {
                let n = batch.min(total);
                scanned += n;
                total -= n;
            }
            nr = next_deferred(v, freeable, nr, delta, scanned);
            all += scanned;
        }
        all
    }

    #[test]
    fn a_seeks_zero_cache_is_asked_for_half_at_every_priority() {
        // proc's and kernfs's superblocks (s_shrink.seeks = 0).
        for v in [ShrinkSlab::V5_8, ShrinkSlab::V5_15] {
            for p in [12, 6, 0] {
                assert_eq!(shrink_plan(v, 12, 0, p, 0, 1024).0, 6);
            }
        }
        // 5.8-5.10: the deferred half and the new half make the whole
        // cache every second pass, at priority 12 already.
        assert_eq!(scanned_over(ShrinkSlab::V5_8, 12, 0, 12, 10), 60);
        // 5.13+: only nr >> priority of the deferred work counts, so at
        // priority 12 never; at priority 2 the deferral (capped at 2 x 12)
        // adds 6 and the cache is scanned every other pass once it is full.
        assert_eq!(scanned_over(ShrinkSlab::V5_15, 12, 0, 12, 10), 0);
        assert_eq!(scanned_over(ShrinkSlab::V5_15, 12, 0, 2, 10), 36);
    }

    #[test]
    fn a_small_default_seeks_cache_is_scanned_only_at_low_priority() {
        // ext4's extent-status shrinker over 32 referenced entries.
        for v in [ShrinkSlab::V5_8, ShrinkSlab::V5_15] {
            for p in [12, 8, 5] {
                assert_eq!(scanned_over(v, 32, 2, p, 20), 0, "{v:?} priority {p}");
            }
            assert!(scanned_over(v, 32, 2, 1, 20) >= 32 * 20, "{v:?}");
        }
    }

    #[test]
    fn deferred_work_is_capped_by_version() {
        // 5.8: all of nr on top of delta, then the anti-wind-up cap at
        // freeable / 2 while delta is small.
        assert_eq!(
            shrink_plan(ShrinkSlab::V5_8, 10_000, 50_000, 12, 2, 128).1,
            5_000
        );
        // 5.15: only nr >> priority of the deferred work.
        assert_eq!(
            shrink_plan(ShrinkSlab::V5_15, 10_000, 50_000, 12, 2, 128).1,
            (50_000 >> 12) + 4
        );
        // The deferred work grows without bound in 5.8, to 2 * freeable in 5.15.
        assert_eq!(
            next_deferred(ShrinkSlab::V5_8, 10_000, 50_000, 4, 0),
            50_004
        );
        assert_eq!(
            next_deferred(ShrinkSlab::V5_15, 10_000, 50_000, 4, 0),
            20_000
        );
    }
}
