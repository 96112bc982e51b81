//! Kernel profiles: each generation of reclaim throttling as data.
//!
//! A profile says, for every call site where some kernel generation sleeps in
//! reclaim, what this generation does there ([`Sleep`]), plus which wake-ups
//! exist and which tracepoints are compiled in. The reclaim code calls one hook
//! per site (`crate::throttle`) and never tests a kernel version.
//!
//! Sources: 5.15 from `mm/vmscan.c`, `mm/page_alloc.c`, `mm/backing-dev.c` of
//! linux-5.15.y; `reclaimcongest-v2` from the series' postings v1 and v3
//! (the v2 letter's kernel lies between them); 5.16-rc1 from Mel Gorman's series as merged (8cd7c588decf,
//! d818fca1cac3, 69392a403f49, 132b0d21d21f, a19594ca4a8b, 66ce520bb7c2); 5.16
//! with 1b4e3f26f9f7 (5.16-rc8); see docs in `../shared/reference/kernel-reclaim.md` §A, §B.

mod early;

pub use early::{EarlySites, ALLOC_REBALANCE_TIMEOUT_US};

pub use crate::fs::InodeReclaim;
pub use crate::mm::pcp::PcpHigh;
pub use crate::mm::shrinker::ShrinkSlab;

/// `enum vmscan_throttle_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// `VMSCAN_THROTTLE_WRITEBACK`
    Writeback = 0,
    /// `VMSCAN_THROTTLE_ISOLATED`
    Isolated = 1,
    /// `VMSCAN_THROTTLE_NOPROGRESS`
    Noprogress = 2,
    /// `VMSCAN_THROTTLE_CONGESTED`
    Congested = 3,
}

/// `NR_VMSCAN_THROTTLE`
pub const NR_VMSCAN_THROTTLE: usize = 4;

impl Reason {
    /// The tracepoint's reason string.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Writeback => "VMSCAN_THROTTLE_WRITEBACK",
            Reason::Isolated => "VMSCAN_THROTTLE_ISOLATED",
            Reason::Noprogress => "VMSCAN_THROTTLE_NOPROGRESS",
            Reason::Congested => "VMSCAN_THROTTLE_CONGESTED",
        }
    }
}

/// What a kernel does at one throttling call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sleep {
    /// Nothing: carry on.
    None,
    /// `congestion_wait(BLK_RW_ASYNC, timeout)`: always sleeps; woken early
    /// only by `clear_bdi_congested` (5.15 and earlier).
    CongestionWait,
    /// `wait_iff_congested(BLK_RW_ASYNC, timeout)`: sleeps only if some bdi is
    /// congested (5.15 and earlier).
    WaitIffCongested,
    /// A plain `msleep()` (5.15's `too_many_isolated` loop).
    Msleep,
    /// `reclaim_throttle(pgdat, reason)` (5.16 and later).
    Throttle(Reason),
}

impl Sleep {
    /// Every value, by the name `--set policy.SITE=NAME` takes.
    pub const CHOICES: [(&'static str, Sleep); 8] = [
        ("none", Sleep::None),
        ("congestion_wait", Sleep::CongestionWait),
        ("wait_iff_congested", Sleep::WaitIffCongested),
        ("msleep", Sleep::Msleep),
        ("throttle_writeback", Sleep::Throttle(Reason::Writeback)),
        ("throttle_isolated", Sleep::Throttle(Reason::Isolated)),
        ("throttle_noprogress", Sleep::Throttle(Reason::Noprogress)),
        ("throttle_congested", Sleep::Throttle(Reason::Congested)),
    ];
}

impl CongestionFlags {
    /// Every value, by the name `--set policy.congestion_flags=NAME` takes.
    pub const CHOICES: [(&'static str, CongestionFlags); 3] = [
        ("per_batch", CongestionFlags::PerBatch),
        ("per_pass", CongestionFlags::PerPass),
        ("zone", CongestionFlags::Zone),
    ];
}

impl NoProgress {
    /// Every value, by the name `--set policy.noprogress=NAME` takes.
    pub const CHOICES: [(&'static str, NoProgress); 4] = [
        ("none", NoProgress::None),
        ("rc1", NoProgress::Rc1),
        ("final", NoProgress::Final),
        ("backoff", NoProgress::Backoff),
    ];
}

/// Which reclaimers `reclaim_throttle` lets through without sleeping, by
/// how fast they take pages. No kernel has it: a reclaimlab policy after
/// Mel Gorman's open question of 2021 (prioritise tasks by their rate of
/// allocation versus reclaim progress; `seed-phenomena.md` §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RatePriority {
    /// Every kernel: whoever reaches a throttling site sleeps.
    Off,
    /// A direct reclaimer whose allocation rate over its last window is at
    /// most its fair share of the node's reclaim rate does not sleep.
    Gross,
    /// As `Gross`, with the pages the task gave back (freed by `munmap` or
    /// by its own reclaim) subtracted from what it allocated.
    Net,
}

impl RatePriority {
    /// Every value, by the name `--set policy.rate_priority=NAME` takes.
    pub const CHOICES: [(&'static str, RatePriority); 3] = [
        ("off", RatePriority::Off),
        ("gross", RatePriority::Gross),
        ("net", RatePriority::Net),
    ];
}

/// The name of `v` in `choices`.
fn choice_name<T: PartialEq + Copy>(choices: &[(&'static str, T)], v: T) -> &'static str {
    choices
        .iter()
        .find(|(_, c)| *c == v)
        .map(|(n, _)| *n)
        .expect("every value has a name")
}

/// How `consider_reclaim_throttle` behaves at the end of `shrink_zones`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoProgress {
    /// Not present (5.15, `none`).
    None,
    /// 5.16-rc1: after every node; throttles any non-kswapd reclaim (memcg
    /// included) below `DEF_PRIORITY - 2` unless reclaim is >12.5% efficient.
    Rc1,
    /// 5.16-rc8 and later: once per `shrink_zones` on the first node; only
    /// global direct reclaim, only at priority 1 with nothing reclaimed, and
    /// `skip_throttle_noprogress` may skip it.
    Final,
    /// No kernel has it (a reclaimlab policy): rc1's rule, but a task's
    /// sleep starts at one jiffy and doubles with each NOPROGRESS sleep in a
    /// row, up to `throttle.noprogress.timeout_us`; an efficient reclaim by
    /// the task starts it over. Between rc1 (HZ/2 at once, for every
    /// reclaimer) and the rc8 fix (one jiffy, at priority 1 only).
    Backoff,
}

/// Where reclaim keeps its congestion bookkeeping (the node flags
/// `PGDAT_CONGESTED`/`_DIRTY`/`_WRITEBACK`; `PGDAT_CONGESTED` is the root
/// lruvec's `LRUVEC_CONGESTED` here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionFlags {
    /// Up to 4.16: at the end of every `shrink_inactive_list` batch, by any
    /// reclaimer (memcg limit reclaim included; CONGESTED and DIRTY only if
    /// `sane_reclaim`), followed by kswapd's `congestion_wait` on immediate
    /// pages and every direct reclaimer's `wait_iff_congested(pgdat)`,
    /// which sleeps only if the node is flagged and some bdi congested.
    /// Only kswapd clears the flags, when it finds the node balanced.
    PerBatch,
    /// From 4.17 (Ryabinin's fix): once per `shrink_node` pass from the
    /// pass's tallies (`sc->nr`); node flags by kswapd only, a memcg flag by
    /// cgroup v2 limit reclaim, cleared at the end of its
    /// `do_try_to_free_pages`.
    PerPass,
    /// 2.6.37 `ZONE_CONGESTED` (one zone per node here: the node's flag):
    /// any reclaimer sets it at the end of `shrink_page_list` when every
    /// dirty page of the batch was congested (its `pageout()` refused by
    /// `may_write_to_queue` because the bdi was write-congested); kswapd
    /// clears it when it finds the zone at its high watermark. No sleep
    /// follows a batch or a pass; `wait_iff_congested(zone, …)` reads it.
    Zone,
}

/// A throttling generation.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelProfile {
    /// Name used with `--kernel`.
    pub name: &'static str,
    /// One line for `list kernels`.
    pub description: &'static str,
    /// `shrink_node`, kswapd, `sc->nr.immediate != 0`.
    pub kswapd_immediate: Sleep,
    /// `shrink_node`, direct reclaim, the reclaim root's `LRUVEC_CONGESTED`.
    pub direct_congested: Sleep,
    /// `shrink_inactive_list`, `too_many_isolated()`.
    pub too_many_isolated: Sleep,
    /// `should_reclaim_retry`, no progress but many pages write-pending.
    pub reclaim_retry: Sleep,
    /// `consider_reclaim_throttle` at the end of `shrink_zones`.
    pub noprogress: NoProgress,
    /// `folio_end_writeback` → `acct_reclaim_writeback` wakes WRITEBACK waiters.
    pub writeback_wakeups: bool,
    /// `too_many_isolated()` false → `wake_throttle_isolated()`.
    pub isolated_wakeups: bool,
    /// Who `reclaim_throttle` lets through by allocation rate (no kernel).
    pub rate_priority: RatePriority,
    /// `shrink_inactive_list`, cgroup v1 limit reclaim, a batch of dirty
    /// pages nobody queued for IO, after waking the flushers (6.0+:
    /// `reclaim_throttle(WRITEBACK)` when `!writeback_throttling_sane`).
    pub memcg_v1_dirty: Sleep,
    /// Where the congestion flags are set (4.16 vs 4.17).
    pub congestion_flags: CongestionFlags,
    /// Direct limit reclaim also sleeps on the node's kswapd-set
    /// `PGDAT_CONGESTED`, not only its target memcg's flag (4.17–5.4,
    /// `pgdat_memcg_congested`); 5.5+ test the target lruvec only.
    pub direct_congested_sees_node: bool,
    /// Default of `memcg.charge_retries`: `MEM_CGROUP_RECLAIM_RETRIES` (5)
    /// up to 5.8, `MAX_RECLAIM_RETRIES` (16) from 5.9.
    pub memcg_charge_retries: u64,
    /// Default of `throttle.noprogress.timeout_us`.
    pub noprogress_timeout_us: u64,
    /// Default of `throttle.noprogress.wake_efficiency_shift`: NOPROGRESS
    /// waiters are woken when `nr_reclaimed > nr_scanned >> shift`; 3
    /// (12.5 %) from 66ce520bb7c2, 64 (any page reclaimed) before it.
    pub noprogress_wake_shift: u64,
    /// Default of `throttle.isolated.timeout_us`: HZ/50 from c3f4a9a2b082,
    /// HZ/10 as the posted series' callers passed it.
    pub isolated_timeout_us: u64,
    /// `try_to_free_mem_cgroup_pages` throttles on NOPROGRESS once more
    /// when the whole call reclaimed nothing (the posted series up to v3;
    /// dropped before the merge after Vlastimil Babka's review of v3 3/8).
    pub memcg_noprogress: bool,
    /// `reclaim_throttle` counts every throttled task, whatever its reason,
    /// in the number `__acct_reclaim_writeback` scales its wake-up by (the
    /// posted series' `nr_reclaim_throttled`); from v4 2/8 only WRITEBACK
    /// waiters count (`nr_writeback_throttled`).
    pub throttled_count_all: bool,
    /// The `writeback_congestion_wait` tracepoint exists (up to 5.17).
    pub tp_congestion_wait: bool,
    /// The `writeback_wait_iff_congested` tracepoint exists (up to 5.15).
    pub tp_wait_iff_congested: bool,
    /// The `mm_vmscan_throttled` tracepoint exists (5.16 and later).
    pub tp_throttled: bool,
    /// `mm_vmscan_throttled` reports the time from entering
    /// `reclaim_throttle` to running again (`jiffies - start`, the posted
    /// series up to v2, like `congestion_wait`'s tracepoint), not the
    /// merged `timeout - remaining`, which never exceeds the timeout.
    pub tp_throttled_elapsed: bool,
    /// The call sites only 2.6.36/2.6.37 have (none in later profiles).
    pub early: EarlySites,
    /// `do_shrink_slab`'s arithmetic (`policy.do_shrink_slab`).
    pub do_shrink_slab: ShrinkSlab,
    /// XFS inode reclaim (`xfs.inode_reclaim`): `sync` up to 5.8,
    /// `async-pinned` from 5.9.
    pub xfs_inode_reclaim: InodeReclaim,
    /// XFS has `->writepage` (`xfs_vm_writepage`, 5.8–5.10
    /// fs/xfs/xfs_aops.c), so kswapd's `pageout()` writes dirty XFS pages;
    /// 5.15's `xfs_address_space_operations` has none, and `pageout()`
    /// returns `PAGE_ACTIVATE` (only machines whose data device says
    /// `fs = "xfs"` see a difference).
    pub xfs_writepage: bool,
    /// `folio_referenced` skips the mappings that have no recency (6.3
    /// `vma_has_recency`, 8788f6781486: `VM_SEQ_READ | VM_RAND_READ`, or a
    /// file opened with `FMODE_NOREUSE`), so the young ptes of a
    /// `MADV_RANDOM` mapping no longer keep its pages; up to 6.2 only
    /// `VM_SEQ_READ` mappings' references are ignored (6.1.0
    /// `folio_referenced_one`). No profile has it: the kernels modelled
    /// are older (`--set policy.vma_recency=1` for 6.3 and later).
    pub vma_recency: bool,
    /// `shrink_lruvec` stops once it has reclaimed enough and made its one
    /// proportional nudge (`proportional_reclaim`, f53af4285d77 "mm:
    /// vmscan: fix extreme overreclaim and swap floods", 6.0, backported to
    /// 5.10.157; 6.1.0 and 5.10.265 mm/vmscan.c); up to 5.19 the nudge set
    /// `scan_adjusted` and the loop then scanned the rest of the larger
    /// type's target without looking at `nr_to_reclaim` again (5.15.0).
    pub proportional_reclaim: bool,
    /// `__read_swap_cache_async` sets `PG_workingset` on every page it
    /// reads from swap, readahead included (4.20's "tell cache transitions
    /// from workingset thrashing", when anon pages had no refault
    /// detection; still in 5.10.265 mm/swap_state.c, gone by 5.15.0). Such
    /// a page, reclaimed again, leaves a shadow that says "active": its next
    /// refault within the distance counts as a restore and adds to the anon
    /// reclaim cost (`lru_note_cost_page`), which tilts `get_scan_count`
    /// towards file pages.
    pub swapin_workingset: bool,
    /// What `lru_note_cost` counts as the cost of reclaiming a type, which
    /// `get_scan_count` balances the two lists by: up to 6.1 the pages
    /// written (`nr_pageout`) and refaulted, one each; from 6.2 (Johannes
    /// Weiner's "mm: vmscan: make rotations a secondary factor in balancing
    /// anon vs file", 0538a82c39e9) `nr_io * SWAP_CLUSTER_MAX + nr_rotated`,
    /// the rotations being the pages `shrink_inactive_list` scanned and did
    /// not reclaim (`nr_scanned - nr_reclaimed`: activated, kept, under
    /// writeback) and the executable pages `shrink_active_list` kept
    /// active. A file list whose dirty pages keep coming back active costs
    /// more, so reclaim leans on anon.
    pub lru_cost_rotations: bool,
    /// How large a CPU's free-page list may grow (`crate::mm::pcp`): 6 x
    /// batch up to 5.13, the low watermark over the node's CPUs (cut while
    /// kswapd runs) from 5.14.
    pub pcp_high: PcpHigh,
}

/// 4.16, from 2.6.37: the 5.15 call sites (`congestion_wait` for kswapd and
/// `should_reclaim_retry`, `wait_iff_congested` in direct reclaim, `msleep`
/// in `too_many_isolated`), congestion flags set per batch, none of the
/// early sites.
const V4_16: KernelProfile = KernelProfile {
    name: "v4.16",
    description: "before Ryabinin's fix: any reclaimer, memcg limit reclaim included, sets the node's congestion flags per LRU batch; only kswapd clears them; every direct batch ends in wait_iff_congested(pgdat); memcg charge retries 5",
    kswapd_immediate: Sleep::CongestionWait,
    direct_congested: Sleep::WaitIffCongested,
    too_many_isolated: Sleep::Msleep,
    reclaim_retry: Sleep::CongestionWait,
    congestion_flags: CongestionFlags::PerBatch,
    early: EarlySites::NONE,
    ..early::V2_6_37
};

/// 4.17, from 4.16: Ryabinin's fix.
const V4_17: KernelProfile = KernelProfile {
    name: "v4.17",
    description: "Ryabinin's fix (4.17): node flags set by kswapd only, once per shrink_node pass; cgroup v2 limit reclaim flags its own memcg; direct reclaim waits only on its node's or target memcg's flag; memcg charge retries 5",
    congestion_flags: CongestionFlags::PerPass,
    direct_congested_sees_node: true,
    ..V4_16
};

/// 5.8, from 4.17: direct limit reclaim tests its target lruvec only (5.5).
const V5_8: KernelProfile = KernelProfile {
    swapin_workingset: true,
    name: "v5.8",
    description: "5.8: the 5.15 throttling call sites (congestion_wait, wait_iff_congested, msleep), memcg charge retries 5, do_shrink_slab of 5.8-5.10, and XFS's blocking inode reclaim (xfs.inode_reclaim=sync: SYNC_TRYLOCK|SYNC_WAIT)",
    direct_congested_sees_node: false,
    ..V4_17
};

/// 5.9, from 5.8: `MAX_RECLAIM_RETRIES` and non-blocking XFS inode reclaim.
const V5_9: KernelProfile = KernelProfile {
    name: "v5.9",
    description: "5.9: as v5.8 with memcg charge retries 16 (MAX_RECLAIM_RETRIES) and Dave Chinner's non-blocking XFS inode reclaim with the cluster buffer pinned from the inode's first logging (xfs.inode_reclaim=async-pinned)",
    memcg_charge_retries: 16,
    xfs_inode_reclaim: InodeReclaim::AsyncPinned,
    ..V5_8
};

/// 5.10 as Debian bullseye serves it (`5.10.0-32-amd64`, stable 5.10.2xx),
/// from 5.9: the same throttling call sites, `do_shrink_slab` of 5.8-5.10
/// and XFS with `->writepage`, plus what the stable tree took back from
/// later kernels that the model has: `shrink_lruvec`'s overreclaim fix
/// (5.10.157). Read against 5.10.265 mm/vmscan.c: its reclaim differs from
/// 5.15.0's otherwise only in refactoring, NUMA demotion (5.15, off without
/// tiered memory) and 5.14's `ZONE_RECLAIM_ACTIVE` (per-CPU list sizes);
/// mm/swap_state.c still marks every swapped-in page workingset
/// (`swapin_workingset`). Not modelled: its older write-bandwidth estimate
/// (5.15 reworked `wb_update_bandwidth`), per-CPU page lists of 6 x batch.
const V5_10: KernelProfile = KernelProfile {
    name: "v5.10",
    description: "Debian bullseye's 5.10 stable: the 5.15 throttling call sites (congestion_wait, wait_iff_congested, msleep), do_shrink_slab of 5.8-5.10, XFS with ->writepage, every swapped-in page marked workingset, and shrink_lruvec's overreclaim fix (backported in 5.10.157)",
    proportional_reclaim: true,
    ..V5_9
};

/// 5.15, from 5.9: `do_shrink_slab` of 5.13+.
const V5_15: KernelProfile = KernelProfile {
    name: "v5.15",
    description: "congestion_wait()/wait_iff_congested() at every 5.15 call site; msleep(100) in too_many_isolated; XFS without ->writepage",
    do_shrink_slab: ShrinkSlab::V5_15,
    xfs_writepage: false,
    swapin_workingset: false,
    pcp_high: PcpHigh::LowWmark,
    ..V5_9
};

/// Mel Gorman's series as the 2021 v2 letter measured it
/// (`5.15.0-rc1-mm-reclaimcongest-v2r5`, "[PATCH 0/5] Remove dependency on
/// congestion_wait in mm/ v2", 29 Sep 2021), from 5.15. The patches posted
/// with that letter were v1's by mistake (Mel Gorman's reply the same day,
/// <20210929130040.GJ3959@techsingularity.net>); v1 (20 Sep) and v3
/// (8 Oct) agree on everything below, so v2r5, between them, is taken to
/// have it too (docs/fidelity.md, "The series column's profile"):
/// - NOPROGRESS sleeps HZ/10 and is woken by any reclaim that freed a page
///   (`if (sc->nr_reclaimed)` in `consider_reclaim_throttle`, v1 3/5 and
///   v3 3/8; the 12.5 % rule is 66ce520bb7c2, the HZ/2 a19594ca4a8b);
/// - ISOLATED sleeps HZ/10 (its callers passed it; HZ/50 is c3f4a9a2b082);
/// - `try_to_free_mem_cgroup_pages` sleeps on NOPROGRESS once more when it
///   reclaimed nothing (v1 3/5, v3 3/8; dropped for v4);
/// - the WRITEBACK wake-up scales by every throttled task
///   (`nr_reclaim_throttled`, v1 1/5, v3 1/8; WRITEBACK-only from v4 2/8);
/// - the tracepoint reports the time slept, `jiffies - start` (the
///   letter's delays exceed every timeout: NOPROGRESS to 772000 µs).
///
/// The call sites, the congested site's WRITEBACK and the placement of
/// `consider_reclaim_throttle` (after every node, below DEF_PRIORITY-2,
/// memcg too) are those of the merge.
const RECLAIMCONGEST_V2: KernelProfile = KernelProfile {
    name: "reclaimcongest-v2",
    description: "the series as the 2021 v2 letter measured it (mm-reclaimcongest-v2r5 on 5.15-rc1): v5.16-rc1's sites, but NOPROGRESS HZ/10 woken by any progress, ISOLATED HZ/10, a NOPROGRESS sleep after memcg reclaim that freed nothing, WRITEBACK wake-ups scaled by every throttled task, delays traced as time slept",
    kswapd_immediate: Sleep::Throttle(Reason::Writeback),
    direct_congested: Sleep::Throttle(Reason::Writeback),
    too_many_isolated: Sleep::Throttle(Reason::Isolated),
    reclaim_retry: Sleep::None,
    noprogress: NoProgress::Rc1,
    noprogress_timeout_us: 100_000,
    noprogress_wake_shift: 64,
    isolated_timeout_us: 100_000,
    memcg_noprogress: true,
    throttled_count_all: true,
    writeback_wakeups: true,
    isolated_wakeups: true,
    tp_wait_iff_congested: false,
    tp_throttled: true,
    tp_throttled_elapsed: true,
    ..V5_15
};

/// 5.16-rc1, from the posted v2: Mel Gorman's series as first merged
/// (the review changes of v3-v5, c3f4a9a2b082, a19594ca4a8b, 66ce520bb7c2).
const V5_16_RC1: KernelProfile = KernelProfile {
    name: "v5.16-rc1",
    description: "reclaim_throttle() as first merged: WRITEBACK, ISOLATED, NOPROGRESS HZ/2 below DEF_PRIORITY-2 (memcg too); congested site throttles as WRITEBACK",
    noprogress_timeout_us: 500_000,
    noprogress_wake_shift: 3,
    isolated_timeout_us: 20_000,
    memcg_noprogress: false,
    throttled_count_all: false,
    tp_throttled_elapsed: false,
    ..RECLAIMCONGEST_V2
};

/// 5.16, from 5.16-rc1: the rc8 NOPROGRESS fix and the CONGESTED reason.
const V5_16: KernelProfile = KernelProfile {
    name: "v5.16",
    description: "reclaim_throttle() as released (5.16-rc8 fix): NOPROGRESS 1 jiffy at priority 1 only, CONGESTED, skip_throttle_noprogress",
    direct_congested: Sleep::Throttle(Reason::Congested),
    noprogress: NoProgress::Final,
    noprogress_timeout_us: 4_000,
    ..V5_16_RC1
};

/// 6.1, from 5.16: cgroup v1's WRITEBACK throttle (6.0); no
/// `writeback_congestion_wait` tracepoint (gone in 5.18).
const V6_1: KernelProfile = KernelProfile {
    name: "v6.1",
    description: "v5.16 and, for cgroup v1 limit reclaim, the WRITEBACK throttle after waking the flushers on an all-dirty batch (81a70c21d917, 6.0), and shrink_lruvec's overreclaim fix (6.0); the Debian bookworm kernel",
    memcg_v1_dirty: Sleep::Throttle(Reason::Writeback),
    proportional_reclaim: true,
    tp_congestion_wait: false,
    ..V5_16
};

/// 6.18, from 6.1: what later kernels changed in the paths the model has,
/// read in 6.18's mm/: rotations in the LRU cost (0538a82c39e9, 6.2) and
/// `vma_has_recency` (6.3). The reference host's kernel. Not modelled:
/// large folios in the page cache (ext4 from 6.16, XFS from 5.18), the
/// swap allocator's clusters (6.12+), MGLRU (off unless configured).
const V6_18: KernelProfile = KernelProfile {
    name: "v6.18",
    description: "v6.1 and the LRU cost of rotations (0538a82c39e9, 6.2: pages scanned and not reclaimed weigh in get_scan_count, I/O 32 times a page) and vma_has_recency (6.3); the reference host's kernel, with an order-0 page cache",
    lru_cost_rotations: true,
    vma_recency: true,
    ..V6_1
};

/// No kernel: 5.16 with every throttling sleep and wake-up removed.
const NONE: KernelProfile = KernelProfile {
    name: "none",
    description:
        "every reclaim throttling sleep removed (v5.16 otherwise): what happens without any stall",
    kswapd_immediate: Sleep::None,
    direct_congested: Sleep::None,
    too_many_isolated: Sleep::None,
    noprogress: NoProgress::None,
    writeback_wakeups: false,
    isolated_wakeups: false,
    tp_congestion_wait: false,
    ..V5_16
};

/// Every profile, in the kernel's history order (each one above derives
/// from one before it: v5.15 from v5.9, as v5.10 does, since the 5.10
/// stable tree took back a fix that 5.15.0 did not have yet).
const PROFILES: &[KernelProfile] = &[
    early::V2_6_36,
    early::V2_6_37,
    V4_16,
    V4_17,
    V5_8,
    V5_9,
    V5_10,
    V5_15,
    RECLAIMCONGEST_V2,
    V5_16_RC1,
    V5_16,
    V6_1,
    V6_18,
    NONE,
];

/// All built-in profiles.
pub fn profiles() -> &'static [KernelProfile] {
    PROFILES
}

/// The profile called `name`.
pub fn profile(name: &str) -> Option<&'static KernelProfile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// A `policy.*` setting's description for `list params`.
#[derive(Clone, Debug)]
pub struct PolicyInfo {
    /// Name used with `--set NAME=VALUE`.
    pub name: &'static str,
    /// The value under the profile listed.
    pub value: &'static str,
    /// Every value accepted.
    pub accepted: Vec<&'static str>,
    /// What it is.
    pub help: &'static str,
}

/// Error from [`KernelProfile::set`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PolicyError {
    /// No such setting.
    #[error("unknown policy setting `{name}` (known: {}); `reclaimlab list params` shows them", POLICY_NAMES.join(", "))]
    Unknown {
        /// What was given.
        name: String,
    },
    /// A value the setting does not take.
    #[error("`{name}`: `{value}` is not accepted (accepted: {})", accepted.join(", "))]
    BadValue {
        /// Setting.
        name: String,
        /// What was given.
        value: String,
        /// What is.
        accepted: Vec<&'static str>,
    },
}

/// The sites and switches of a profile that `--set policy.NAME=VALUE`
/// changes, with their help lines.
const POLICY: [(&str, &str); 25] = [
    ("policy.kswapd_immediate", "what kswapd does at the end of shrink_node when it met pages under writeback marked for immediate reclaim (sc->nr.immediate)"),
    ("policy.direct_congested", "what direct reclaim does at the end of shrink_node when kswapd has marked the lruvec LRUVEC_CONGESTED"),
    ("policy.too_many_isolated", "what shrink_inactive_list does (once) while too_many_isolated()"),
    ("policy.reclaim_retry", "what should_reclaim_retry does when reclaim made no progress and over half the reclaimable pages are write-pending"),
    ("policy.noprogress", "consider_reclaim_throttle at the end of shrink_zones: none, rc1 (below DEF_PRIORITY-2, memcg too, after every node), final (priority 1 with nothing reclaimed, skip_throttle_noprogress) or backoff (no kernel: rc1's rule, the sleep doubling from one jiffy per sleep in a row up to the timeout)"),
    ("policy.writeback_wakeups", "1: folio_end_writeback wakes WRITEBACK waiters once enough pages are written (acct_reclaim_writeback); 0: they sleep to the timeout"),
    ("policy.isolated_wakeups", "1: a too_many_isolated() that finds the node below the limit wakes ISOLATED waiters (wake_throttle_isolated); 0: they sleep to the timeout"),
    ("policy.memcg_v1_dirty", "what cgroup v1 limit reclaim does in shrink_inactive_list after waking the flushers for a batch of dirty pages nobody queued for IO (none up to 5.19; throttle_writeback from 6.0)"),
    ("policy.congestion_flags", "where reclaim sets the node congestion flags: per_batch (up to 4.16: any reclaimer, memcg limit reclaim included, after every shrink_inactive_list batch, each direct batch ending in wait_iff_congested(pgdat)) or per_pass (4.17+: kswapd only, once per shrink_node pass; cgroup v2 limit reclaim flags its own memcg)"),
    ("policy.direct_congested_sees_node", "1: direct limit reclaim also waits on the node's kswapd-set PGDAT_CONGESTED (4.17-5.4); 0: only on its target lruvec's flag (5.5+)"),
    ("policy.do_try_to_free_pages", "2.6.36/2.6.37: what do_try_to_free_pages does after a priority pass below DEF_PRIORITY-2 that scanned pages without reclaiming enough (congestion_wait in 2.6.36, wait_iff_congested on the preferred zone in 2.6.37; none later)"),
    ("policy.alloc_rebalance", "2.6.36/2.6.37: what __alloc_pages_slowpath does (HZ/50) when direct reclaim made progress but the allocation still failed, before retrying (congestion_wait in 2.6.36, wait_iff_congested in 2.6.37; none later)"),
    ("policy.kswapd_nap", "2.6.36/2.6.37: what balance_pgdat does after a pass below DEF_PRIORITY-2 that scanned pages and left the node unbalanced, unless it is below its min watermark (kswapd_skip_congestion_wait): congestion_wait in both; none later"),
    ("policy.too_many_isolated_loop", "once: shrink_inactive_list sleeps at most once while too_many_isolated() (5.x); unbounded: it sleeps until the condition clears (2.6.36/2.6.37; with policy.too_many_isolated=none it gives up at once)"),
    ("policy.do_shrink_slab", "do_shrink_slab's arithmetic: 4.19 (4.19.1: delta floored at min(freeable, batch)), 5.8 (5.8-5.10: all deferred work added, capped at freeable/2 while delta is small) or 5.15 (5.13+: deferred work >> priority, both capped at 2 x freeable)"),
    ("xfs.inode_reclaim", "XFS inode reclaim from the superblock shrinker: sync (up to 5.8: SYNC_TRYLOCK|SYNC_WAIT, per-AG lock, waits on flushing inodes, writes dirty clusters synchronously, reading the buffer back if it was reclaimed), async (the 2019 RFC: non-blocking, dirty inodes skipped, cluster buffers not pinned) or async-pinned (5.9: non-blocking, each dirty inode's cluster buffer held from its first logging)"),
    ("xfs.writepage", "1: XFS has ->writepage and kswapd's pageout() writes dirty pages of a data device with fs = \"xfs\" (up to 5.10); 0: it has none and pageout() activates them (5.15+)"),
    ("policy.memcg_noprogress", "1: try_to_free_mem_cgroup_pages sleeps on NOPROGRESS (on the task's node) once more when the whole call reclaimed nothing (the posted series up to v3, reclaimcongest-v2); 0: only consider_reclaim_throttle's sleep (5.16-rc1 on)"),
    ("policy.writeback_wake_count", "who __acct_reclaim_writeback scales the WRITEBACK wake-up by (SWAP_CLUSTER_MAX written pages per task): writeback (the WRITEBACK waiters, nr_writeback_throttled, 5.16-rc1 on) or all (every task in reclaim_throttle, whatever its reason: the posted series' nr_reclaim_throttled, reclaimcongest-v2)"),
    ("policy.vma_recency", "1: folio_referenced ignores the accessed bits of MADV_RANDOM and MADV_SEQUENTIAL mappings (6.3+ vma_has_recency), so a mapped-file-stream reader's pages go at first sight; 0: only MADV_SEQUENTIAL's (up to 6.2, every profile here)"),
    ("policy.shrink_lruvec", "what shrink_lruvec does once it has reclaimed nr_to_reclaim (not in global direct reclaim at DEF_PRIORITY): scan_adjusted (up to 5.19, 5.10.156: one proportional nudge, then the rest of the larger type's target is scanned whatever is reclaimed) or proportional_reclaim (6.0+, 5.10.157+: after the nudge one more batch, then stop)"),
    ("policy.swapin_workingset", "1: every page read from swap is marked PG_workingset (4.20-5.10 __read_swap_cache_async), so its next eviction leaves an 'active' shadow and a refault within the distance is a restore that adds to the anon reclaim cost; 0: only refaults and deactivation mark it (5.15+)"),
    ("policy.lru_cost_rotations", "1: lru_note_cost counts the pages reclaim scanned and did not reclaim, and I/O as SWAP_CLUSTER_MAX a page (6.2+, 0538a82c39e9), so a list that keeps rotating costs more in get_scan_count's balance; 0: only the pages written and refaulted, one each (up to 6.1)"),
    ("policy.pcp_high", "how many free pages a CPU may keep on its per-CPU list, out of the watermark checks' sight: 6batch (up to 5.13: 6 x zone_batchsize, overflows return a batch) or low_wmark (5.14+: the low watermark over the node's CPUs, cut to 4 x batch while kswapd reclaims, overflows return a growing share), or none (no kernel: none kept)"),
    ("policy.rate_priority", "no kernel: off (every kernel), or gross/net: a direct reclaimer about to sleep in reclaim_throttle (not for ISOLATED) goes on if the pages it allocated (net: less those it freed or reclaimed) per second over its last throttle.rate.window_ms are at most the machine's reclaim rate (pgsteal per second) divided among the user tasks"),
];

/// Every `policy.*` name (and `xfs.inode_reclaim`, a profile setting too).
pub const POLICY_NAMES: [&str; 25] = [
    POLICY[0].0,
    POLICY[1].0,
    POLICY[2].0,
    POLICY[3].0,
    POLICY[4].0,
    POLICY[5].0,
    POLICY[6].0,
    POLICY[7].0,
    POLICY[8].0,
    POLICY[9].0,
    POLICY[10].0,
    POLICY[11].0,
    POLICY[12].0,
    POLICY[13].0,
    POLICY[14].0,
    POLICY[15].0,
    POLICY[16].0,
    POLICY[17].0,
    POLICY[18].0,
    POLICY[19].0,
    POLICY[20].0,
    POLICY[21].0,
    POLICY[22].0,
    POLICY[23].0,
    POLICY[24].0,
];

const BOOL_CHOICES: [(&str, bool); 2] = [("0", false), ("1", true)];

/// `policy.writeback_wake_count`'s values ([`KernelProfile::throttled_count_all`]).
const WAKE_COUNT_CHOICES: [(&str, bool); 2] = [("writeback", false), ("all", true)];

/// `policy.shrink_lruvec`'s values ([`KernelProfile::proportional_reclaim`]).
const SHRINK_LRUVEC_CHOICES: [(&str, bool); 2] =
    [("scan_adjusted", false), ("proportional_reclaim", true)];

/// The value called `value` among `choices` of setting `name`.
fn parse_choice<T: Copy>(
    choices: &[(&'static str, T)],
    name: &str,
    value: &str,
) -> Result<T, PolicyError> {
    choices
        .iter()
        .find(|(n, _)| *n == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| PolicyError::BadValue {
            name: name.into(),
            value: value.into(),
            accepted: choices.iter().map(|c| c.0).collect(),
        })
}

/// The names setting `name` accepts.
fn accepted_values(name: &str) -> Vec<&'static str> {
    fn names<T>(choices: &[(&'static str, T)]) -> Vec<&'static str> {
        choices.iter().map(|c| c.0).collect()
    }
    match name {
        "policy.noprogress" => names(&NoProgress::CHOICES),
        "policy.writeback_wakeups"
        | "policy.isolated_wakeups"
        | "policy.memcg_noprogress"
        | "policy.vma_recency"
        | "policy.swapin_workingset"
        | "policy.lru_cost_rotations"
        | "xfs.writepage"
        | "policy.direct_congested_sees_node" => names(&BOOL_CHOICES),
        "policy.writeback_wake_count" => names(&WAKE_COUNT_CHOICES),
        "policy.shrink_lruvec" => names(&SHRINK_LRUVEC_CHOICES),
        "policy.congestion_flags" => names(&CongestionFlags::CHOICES),
        "policy.too_many_isolated_loop" => names(&early::LOOP_CHOICES),
        "policy.rate_priority" => names(&RatePriority::CHOICES),
        "policy.do_shrink_slab" => names(&ShrinkSlab::CHOICES),
        "policy.pcp_high" => names(&PcpHigh::CHOICES),
        "xfs.inode_reclaim" => names(&InodeReclaim::CHOICES),
        _ => names(&Sleep::CHOICES),
    }
}

impl KernelProfile {
    /// The value of `policy.*` setting `name`, by its name.
    pub fn policy_value(&self, name: &str) -> Option<&'static str> {
        Some(match name {
            "policy.kswapd_immediate" => choice_name(&Sleep::CHOICES, self.kswapd_immediate),
            "policy.direct_congested" => choice_name(&Sleep::CHOICES, self.direct_congested),
            "policy.too_many_isolated" => choice_name(&Sleep::CHOICES, self.too_many_isolated),
            "policy.reclaim_retry" => choice_name(&Sleep::CHOICES, self.reclaim_retry),
            "policy.noprogress" => choice_name(&NoProgress::CHOICES, self.noprogress),
            "policy.writeback_wakeups" => choice_name(&BOOL_CHOICES, self.writeback_wakeups),
            "policy.isolated_wakeups" => choice_name(&BOOL_CHOICES, self.isolated_wakeups),
            "policy.memcg_noprogress" => choice_name(&BOOL_CHOICES, self.memcg_noprogress),
            "policy.vma_recency" => choice_name(&BOOL_CHOICES, self.vma_recency),
            "policy.swapin_workingset" => choice_name(&BOOL_CHOICES, self.swapin_workingset),
            "policy.lru_cost_rotations" => choice_name(&BOOL_CHOICES, self.lru_cost_rotations),
            "policy.writeback_wake_count" => {
                choice_name(&WAKE_COUNT_CHOICES, self.throttled_count_all)
            }
            "policy.rate_priority" => choice_name(&RatePriority::CHOICES, self.rate_priority),
            "policy.shrink_lruvec" => {
                choice_name(&SHRINK_LRUVEC_CHOICES, self.proportional_reclaim)
            }
            "policy.memcg_v1_dirty" => choice_name(&Sleep::CHOICES, self.memcg_v1_dirty),
            "policy.congestion_flags" => {
                choice_name(&CongestionFlags::CHOICES, self.congestion_flags)
            }
            "policy.direct_congested_sees_node" => {
                choice_name(&BOOL_CHOICES, self.direct_congested_sees_node)
            }
            "policy.do_try_to_free_pages" => {
                choice_name(&Sleep::CHOICES, self.early.do_try_to_free_pages)
            }
            "policy.alloc_rebalance" => choice_name(&Sleep::CHOICES, self.early.alloc_rebalance),
            "policy.kswapd_nap" => choice_name(&Sleep::CHOICES, self.early.kswapd_nap),
            "policy.too_many_isolated_loop" => {
                choice_name(&early::LOOP_CHOICES, self.early.too_many_isolated_unbounded)
            }
            "policy.do_shrink_slab" => choice_name(&ShrinkSlab::CHOICES, self.do_shrink_slab),
            "policy.pcp_high" => choice_name(&PcpHigh::CHOICES, self.pcp_high),
            "xfs.inode_reclaim" => choice_name(&InodeReclaim::CHOICES, self.xfs_inode_reclaim),
            "xfs.writepage" => choice_name(&BOOL_CHOICES, self.xfs_writepage),
            _ => return None,
        })
    }

    /// Changes one call site or wake-up of this profile: a policy no
    /// kernel had, such as 5.16-rc1 without NOPROGRESS or 5.15 with
    /// ISOLATED throttling. A site set to a sleep whose tracepoint this
    /// profile lacks gets the tracepoint too (a kernel with the call has it).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), PolicyError> {
        let value = value.trim();
        let (sleep, noprogress, on) = (&Sleep::CHOICES, &NoProgress::CHOICES, &BOOL_CHOICES);
        match name {
            "policy.kswapd_immediate" => self.kswapd_immediate = parse_choice(sleep, name, value)?,
            "policy.direct_congested" => self.direct_congested = parse_choice(sleep, name, value)?,
            "policy.too_many_isolated" => {
                self.too_many_isolated = parse_choice(sleep, name, value)?
            }
            "policy.reclaim_retry" => self.reclaim_retry = parse_choice(sleep, name, value)?,
            "policy.memcg_v1_dirty" => self.memcg_v1_dirty = parse_choice(sleep, name, value)?,
            "policy.congestion_flags" => {
                self.congestion_flags = parse_choice(&CongestionFlags::CHOICES, name, value)?
            }
            "policy.direct_congested_sees_node" => {
                self.direct_congested_sees_node = parse_choice(on, name, value)?
            }
            "policy.do_try_to_free_pages" => {
                self.early.do_try_to_free_pages = parse_choice(sleep, name, value)?
            }
            "policy.alloc_rebalance" => {
                self.early.alloc_rebalance = parse_choice(sleep, name, value)?
            }
            "policy.kswapd_nap" => self.early.kswapd_nap = parse_choice(sleep, name, value)?,
            "policy.too_many_isolated_loop" => {
                self.early.too_many_isolated_unbounded =
                    parse_choice(&early::LOOP_CHOICES, name, value)?
            }
            "policy.noprogress" => self.noprogress = parse_choice(noprogress, name, value)?,
            "policy.writeback_wakeups" => self.writeback_wakeups = parse_choice(on, name, value)?,
            "policy.isolated_wakeups" => self.isolated_wakeups = parse_choice(on, name, value)?,
            "policy.memcg_noprogress" => self.memcg_noprogress = parse_choice(on, name, value)?,
            "policy.vma_recency" => self.vma_recency = parse_choice(on, name, value)?,
            "policy.swapin_workingset" => self.swapin_workingset = parse_choice(on, name, value)?,
            "policy.lru_cost_rotations" => self.lru_cost_rotations = parse_choice(on, name, value)?,
            "policy.writeback_wake_count" => {
                self.throttled_count_all = parse_choice(&WAKE_COUNT_CHOICES, name, value)?
            }
            "policy.rate_priority" => {
                self.rate_priority = parse_choice(&RatePriority::CHOICES, name, value)?
            }
            "policy.shrink_lruvec" => {
                self.proportional_reclaim = parse_choice(&SHRINK_LRUVEC_CHOICES, name, value)?
            }
            "policy.do_shrink_slab" => {
                self.do_shrink_slab = parse_choice(&ShrinkSlab::CHOICES, name, value)?
            }
            "policy.pcp_high" => self.pcp_high = parse_choice(&PcpHigh::CHOICES, name, value)?,
            "xfs.inode_reclaim" => {
                self.xfs_inode_reclaim = parse_choice(&InodeReclaim::CHOICES, name, value)?
            }
            "xfs.writepage" => self.xfs_writepage = parse_choice(on, name, value)?,
            _ => return Err(PolicyError::Unknown { name: name.into() }),
        }
        let sites = [
            self.kswapd_immediate,
            self.direct_congested,
            self.too_many_isolated,
            self.reclaim_retry,
            self.memcg_v1_dirty,
            self.early.do_try_to_free_pages,
            self.early.alloc_rebalance,
            self.early.kswapd_nap,
        ];
        for site in sites {
            match site {
                Sleep::CongestionWait => self.tp_congestion_wait = true,
                Sleep::WaitIffCongested => self.tp_wait_iff_congested = true,
                Sleep::Throttle(_) => self.tp_throttled = true,
                Sleep::None | Sleep::Msleep => {}
            }
        }
        if self.noprogress != NoProgress::None || self.memcg_noprogress {
            self.tp_throttled = true;
        }
        Ok(())
    }

    /// Every `policy.*` setting as `(name, value)`, for the run record.
    pub fn policy_pairs(&self) -> Vec<(&'static str, String)> {
        POLICY_NAMES
            .iter()
            .map(|n| (*n, self.policy_value(n).expect("known").to_string()))
            .collect()
    }

    /// Describes every `policy.*` setting with its value in this profile.
    pub fn policy_list(&self) -> Vec<PolicyInfo> {
        POLICY
            .iter()
            .map(|(name, help)| PolicyInfo {
                name,
                value: self.policy_value(name).expect("known"),
                accepted: accepted_values(name),
                help,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_is_its_policy_settings() {
        // Setting each policy.* of a profile onto any other profile gives
        // back the first one's sites and wake-ups: the settings say all a
        // profile does at its call sites.
        for a in profiles() {
            for b in profiles() {
                let mut c = b.clone();
                for (n, v) in a.policy_pairs() {
                    c.set(n, &v).unwrap();
                }
                assert_eq!(
                    c.policy_pairs(),
                    a.policy_pairs(),
                    "{} onto {}",
                    a.name,
                    b.name
                );
                assert_eq!(
                    (
                        c.kswapd_immediate,
                        c.direct_congested,
                        c.too_many_isolated,
                        c.reclaim_retry
                    ),
                    (
                        a.kswapd_immediate,
                        a.direct_congested,
                        a.too_many_isolated,
                        a.reclaim_retry
                    )
                );
                assert_eq!(
                    (
                        c.noprogress,
                        c.writeback_wakeups,
                        c.isolated_wakeups,
                        c.rate_priority
                    ),
                    (
                        a.noprogress,
                        a.writeback_wakeups,
                        a.isolated_wakeups,
                        a.rate_priority
                    )
                );
                assert_eq!((c.early, c.congestion_flags), (a.early, a.congestion_flags));
                assert_eq!(
                    (c.do_shrink_slab, c.xfs_inode_reclaim),
                    (a.do_shrink_slab, a.xfs_inode_reclaim)
                );
                assert_eq!(
                    (c.memcg_noprogress, c.throttled_count_all),
                    (a.memcg_noprogress, a.throttled_count_all)
                );
            }
        }
    }

    #[test]
    fn reclaimcongest_v2_is_v5_16_rc1_but_for_what_the_posted_series_did() {
        let v2 = profile("reclaimcongest-v2").unwrap();
        let rc1 = profile("v5.16-rc1").unwrap();
        assert_ne!(v2, rc1);
        // The same call sites, the same consider_reclaim_throttle rule.
        assert_eq!(v2.policy_value("policy.noprogress"), Some("rc1"));
        for site in [
            "policy.kswapd_immediate",
            "policy.direct_congested",
            "policy.too_many_isolated",
            "policy.reclaim_retry",
        ] {
            assert_eq!(v2.policy_value(site), rc1.policy_value(site), "{site}");
        }
        // And exactly these differences.
        let mut as_v2 = rc1.clone();
        as_v2.name = v2.name;
        as_v2.description = v2.description;
        as_v2.noprogress_timeout_us = 100_000;
        as_v2.noprogress_wake_shift = 64;
        as_v2.isolated_timeout_us = 100_000;
        as_v2.memcg_noprogress = true;
        as_v2.throttled_count_all = true;
        as_v2.tp_throttled_elapsed = true;
        assert_eq!(&as_v2, v2);
        let (a, b) = (
            crate::params::Params::defaults(v2),
            crate::params::Params::defaults(rc1),
        );
        assert_eq!(
            (
                a.noprogress_timeout_us,
                a.isolated_timeout_us,
                a.noprogress_wake_shift
            ),
            (100_000, 100_000, 64),
            "HZ/10, HZ/10, any progress"
        );
        assert_eq!(
            (
                b.noprogress_timeout_us,
                b.isolated_timeout_us,
                b.noprogress_wake_shift
            ),
            (500_000, 20_000, 3),
            "HZ/2, HZ/50, 12.5 %"
        );
        assert_eq!(v2.policy_value("policy.memcg_noprogress"), Some("1"));
        assert_eq!(v2.policy_value("policy.writeback_wake_count"), Some("all"));
        assert_eq!(rc1.policy_value("policy.memcg_noprogress"), Some("0"));
        assert_eq!(
            rc1.policy_value("policy.writeback_wake_count"),
            Some("writeback")
        );
        // Listed in history order, between 5.15 and what 5.16-rc1 merged.
        let names: Vec<&str> = profiles().iter().map(|p| p.name).collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert_eq!(at("reclaimcongest-v2"), at("v5.15") + 1);
        assert_eq!(at("v5.16-rc1"), at("reclaimcongest-v2") + 1);
    }

    #[test]
    fn a_site_set_to_a_sleep_gets_its_tracepoint() {
        let mut p = profile("v5.15").unwrap().clone();
        assert!(!p.tp_throttled);
        p.set("policy.too_many_isolated", "throttle_isolated")
            .unwrap();
        assert!(p.tp_throttled);
        let mut p = profile("none").unwrap().clone();
        p.set("policy.direct_congested", "wait_iff_congested")
            .unwrap();
        assert!(p.tp_wait_iff_congested && !p.tp_congestion_wait);
    }

    #[test]
    fn bad_settings_say_what_is_accepted() {
        let mut p = profile("v5.16").unwrap().clone();
        let e = p.set("policy.noprogress", "rc2").unwrap_err().to_string();
        assert!(
            e.contains("`rc2` is not accepted (accepted: none, rc1, final, backoff)"),
            "{e}"
        );
        let e = p
            .set("policy.kswapd_immediate", "sleep")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("congestion_wait") && e.contains("throttle_writeback"),
            "{e}"
        );
        let e = p
            .set("policy.writeback_wakeups", "yes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(accepted: 0, 1)"), "{e}");
        let e = p
            .set("policy.rate_priority", "fast")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(accepted: off, gross, net)"), "{e}");
        assert!(matches!(
            p.set("policy.nope", "1"),
            Err(PolicyError::Unknown { .. })
        ));
        assert_eq!(
            &p,
            profile("v5.16").unwrap(),
            "a refused setting changes nothing"
        );
    }
}
