//! Kernel profiles: each generation of reclaim throttling as data.
//!
//! A profile says, for every call site where some kernel generation sleeps in
//! reclaim, what this generation does there ([`Sleep`]), plus which wake-ups
//! exist and which tracepoints are compiled in. The reclaim code calls one hook
//! per site (`crate::throttle`) and never tests a kernel version.
//!
//! Sources: 5.15 from `mm/vmscan.c`, `mm/page_alloc.c`, `mm/backing-dev.c` of
//! linux-5.15.y; 5.16-rc1 from Mel Gorman's series as merged (8cd7c588decf,
//! d818fca1cac3, 69392a403f49, 132b0d21d21f, a19594ca4a8b, 66ce520bb7c2); 5.16
//! with 1b4e3f26f9f7 (5.16-rc8); see docs in `../shared/reference/kernel-reclaim.md` §A, §B.

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
}

/// A throttling generation.
#[derive(Clone, Debug)]
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
    /// Default of `throttle.noprogress.timeout_us`.
    pub noprogress_timeout_us: u64,
    /// The `writeback_congestion_wait` tracepoint exists (up to 5.17).
    pub tp_congestion_wait: bool,
    /// The `writeback_wait_iff_congested` tracepoint exists (up to 5.15).
    pub tp_wait_iff_congested: bool,
    /// The `mm_vmscan_throttled` tracepoint exists (5.16 and later).
    pub tp_throttled: bool,
}

const PROFILES: &[KernelProfile] = &[
    KernelProfile {
        name: "v5.15",
        description: "congestion_wait()/wait_iff_congested() at every 5.15 call site; msleep(100) in too_many_isolated",
        kswapd_immediate: Sleep::CongestionWait,
        direct_congested: Sleep::WaitIffCongested,
        too_many_isolated: Sleep::Msleep,
        reclaim_retry: Sleep::CongestionWait,
        noprogress: NoProgress::None,
        writeback_wakeups: false,
        isolated_wakeups: false,
        noprogress_timeout_us: 500_000,
        tp_congestion_wait: true,
        tp_wait_iff_congested: true,
        tp_throttled: false,
    },
    KernelProfile {
        name: "v5.16-rc1",
        description: "reclaim_throttle() as first merged: WRITEBACK, ISOLATED, NOPROGRESS HZ/2 below DEF_PRIORITY-2 (memcg too); congested site throttles as WRITEBACK",
        kswapd_immediate: Sleep::Throttle(Reason::Writeback),
        direct_congested: Sleep::Throttle(Reason::Writeback),
        too_many_isolated: Sleep::Throttle(Reason::Isolated),
        reclaim_retry: Sleep::None,
        noprogress: NoProgress::Rc1,
        writeback_wakeups: true,
        isolated_wakeups: true,
        noprogress_timeout_us: 500_000,
        tp_congestion_wait: true,
        tp_wait_iff_congested: false,
        tp_throttled: true,
    },
    KernelProfile {
        name: "v5.16",
        description: "reclaim_throttle() as released (5.16-rc8 fix): NOPROGRESS 1 jiffy at priority 1 only, CONGESTED, skip_throttle_noprogress",
        kswapd_immediate: Sleep::Throttle(Reason::Writeback),
        direct_congested: Sleep::Throttle(Reason::Congested),
        too_many_isolated: Sleep::Throttle(Reason::Isolated),
        reclaim_retry: Sleep::None,
        noprogress: NoProgress::Final,
        writeback_wakeups: true,
        isolated_wakeups: true,
        noprogress_timeout_us: 4_000,
        tp_congestion_wait: true,
        tp_wait_iff_congested: false,
        tp_throttled: true,
    },
    KernelProfile {
        name: "none",
        description: "every reclaim throttling sleep removed (v5.16 otherwise): what happens without any stall",
        kswapd_immediate: Sleep::None,
        direct_congested: Sleep::None,
        too_many_isolated: Sleep::None,
        reclaim_retry: Sleep::None,
        noprogress: NoProgress::None,
        writeback_wakeups: false,
        isolated_wakeups: false,
        noprogress_timeout_us: 4_000,
        tp_congestion_wait: false,
        tp_wait_iff_congested: false,
        tp_throttled: true,
    },
];

/// All built-in profiles.
pub fn profiles() -> &'static [KernelProfile] {
    PROFILES
}

/// The profile called `name`.
pub fn profile(name: &str) -> Option<&'static KernelProfile> {
    PROFILES.iter().find(|p| p.name == name)
}
