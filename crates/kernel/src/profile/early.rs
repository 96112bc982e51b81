//! The 2010 generation: profiles `v2.6.36` and `v2.6.37`, and the call
//! sites only they have ([`EarlySites`]), each a `policy.*` setting.
//!
//! Read from 2.6.37 (`srinugnt2000/linux-2.6.37` @06664e69f31c) mm/vmscan.c
//! `do_try_to_free_pages`, `shrink_page_list`, `shrink_inactive_list`,
//! `balance_pgdat`, mm/page_alloc.c `__alloc_pages_slowpath` and
//! mm/backing-dev.c `wait_iff_congested`; 2.6.36 from
//! `docs/reference/memcg-shrinkers-bdi.md` §4.1 (the same sites, each a
//! `congestion_wait`, no `nr_bdi_congested`, no tracepoint).
//!
//! Everything else in these profiles is the simulator's 5.15-shaped reclaim
//! with the later sites turned off (docs/kernels-2010.md lists what that
//! simplifies: no lumpy reclaim, direct reclaim does not write file pages, as
//! in the -mmotm Johannes Weiner measured on, one zone per node).

use super::{
    CongestionFlags, InodeReclaim, KernelProfile, NoProgress, RatePriority, ShrinkSlab, Sleep,
};

/// The sleeps of 2.6.36/2.6.37 that later kernels dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EarlySites {
    /// `do_try_to_free_pages`, after a priority pass that scanned something
    /// at `priority < DEF_PRIORITY - 2` without reclaiming enough:
    /// `congestion_wait(BLK_RW_ASYNC, HZ/10)` in 2.6.36,
    /// `wait_iff_congested(preferred_zone, BLK_RW_ASYNC, HZ/10)` in 2.6.37.
    pub do_try_to_free_pages: Sleep,
    /// `__alloc_pages_slowpath`, direct reclaim made progress but the
    /// allocation still failed, before `goto rebalance`: HZ/50,
    /// `congestion_wait` in 2.6.36, `wait_iff_congested(preferred_zone)` in 2.6.37.
    pub alloc_rebalance: Sleep,
    /// `balance_pgdat`, kswapd's nap after a pass at `priority <
    /// DEF_PRIORITY - 2` that scanned something and left the zone
    /// unbalanced: `congestion_wait(BLK_RW_ASYNC, HZ/10)`, skipped (counting
    /// `kswapd_skip_congestion_wait`) when the zone is below its min watermark.
    pub kswapd_nap: Sleep,
    /// `shrink_inactive_list` loops on `too_many_isolated()` for as long as
    /// it holds (2.6.36/2.6.37), not once.
    pub too_many_isolated_unbounded: bool,
}

impl EarlySites {
    /// Later kernels: none of these sites.
    pub const NONE: EarlySites = EarlySites {
        do_try_to_free_pages: Sleep::None,
        alloc_rebalance: Sleep::None,
        kswapd_nap: Sleep::None,
        too_many_isolated_unbounded: false,
    };
}

/// `__alloc_pages_slowpath`'s HZ/50 in microseconds.
pub const ALLOC_REBALANCE_TIMEOUT_US: u64 = 20_000;

/// `policy.too_many_isolated_loop`'s values.
pub const LOOP_CHOICES: [(&str, bool); 2] = [("once", false), ("unbounded", true)];

/// 2.6.36: every `congestion_wait` sleeps its timeout (woken early only by
/// a `clear_bdi_congested` of any bdi).
pub const V2_6_36: KernelProfile = KernelProfile {
    name: "v2.6.36",
    description: "2.6.36: congestion_wait(HZ/10) in do_try_to_free_pages below DEF_PRIORITY-2, HZ/50 in the allocator before rebalance, kswapd's nap, the unbounded too_many_isolated loop; every one sleeps its timeout (traced as writeback_congestion_wait, which 2.6.36 did not have)",
    kswapd_immediate: Sleep::None,
    direct_congested: Sleep::None,
    too_many_isolated: Sleep::CongestionWait,
    reclaim_retry: Sleep::None,
    noprogress: NoProgress::None,
    writeback_wakeups: false,
    isolated_wakeups: false,
    rate_priority: RatePriority::Off,
    memcg_v1_dirty: Sleep::None,
    congestion_flags: CongestionFlags::Zone,
    direct_congested_sees_node: false,
    memcg_charge_retries: 5,
    noprogress_timeout_us: 500_000,
    noprogress_wake_shift: 3,
    isolated_timeout_us: 20_000,
    memcg_noprogress: false,
    throttled_count_all: false,
    // 2.6.36 had no tracepoint here; the record shows its sleeps in the
    // 2.6.37 format (docs/kernels-2010.md).
    tp_congestion_wait: true,
    tp_wait_iff_congested: false,
    tp_throttled: false,
    tp_throttled_elapsed: false,
    early: EarlySites {
        do_try_to_free_pages: Sleep::CongestionWait,
        alloc_rebalance: Sleep::CongestionWait,
        kswapd_nap: Sleep::CongestionWait,
        too_many_isolated_unbounded: true,
    },
    // 2.6.36's shrink_slab scaled by LRU pages scanned, not priority; the
    // 5.8 arithmetic stands in (docs/slab.md). XFS reclaim blocked then.
    do_shrink_slab: ShrinkSlab::V5_8,
    xfs_inode_reclaim: InodeReclaim::Sync,
    xfs_writepage: true,
    vma_recency: false,
    lru_cost_rotations: false,
    proportional_reclaim: false,
    // 4.20 added it; the early profiles are older.
    swapin_workingset: false,
    pcp_high: crate::mm::pcp::PcpHigh::SixBatch,
};

/// 2.6.37 (Mel Gorman's series, 15 Sep 2010): `wait_iff_congested(zone)`
/// in direct reclaim and the allocator; kswapd and `too_many_isolated` keep
/// `congestion_wait`.
pub const V2_6_37: KernelProfile = KernelProfile {
    name: "v2.6.37",
    description: "2.6.37: wait_iff_congested(zone) in do_try_to_free_pages and the allocator (sleeps only if some bdi is congested and ZONE_CONGESTED, one zone per node); congestion_wait in kswapd's nap and the unbounded too_many_isolated loop",
    early: EarlySites {
        do_try_to_free_pages: Sleep::WaitIffCongested,
        alloc_rebalance: Sleep::WaitIffCongested,
        kswapd_nap: Sleep::CongestionWait,
        too_many_isolated_unbounded: true,
    },
    tp_wait_iff_congested: true,
    ..V2_6_36
};
