//! `/proc/vmstat`: event counters by their kernel names, and the snapshot the
//! run record samples (gauges computed from node state, then events, in the
//! order of `vmstat_text[]` in mm/vmstat.c).

use crate::mm::page::Lru;
use crate::mm::NodeStat;
use crate::Kernel;

macro_rules! events {
    ($($v:ident = $name:literal,)*) => {
        /// VM event counters (`enum vm_event_item` and the node counters that
        /// only ever grow), named as in `/proc/vmstat`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(missing_docs, non_camel_case_types)]
        pub enum Ev { $($v,)* }
        /// `/proc/vmstat` names of [`Ev`], in order.
        pub const EV_NAMES: &[&str] = &[$($name,)*];
    };
}

events! {
    WorkingsetRefaultAnon = "workingset_refault_anon",
    WorkingsetRefaultFile = "workingset_refault_file",
    WorkingsetActivateAnon = "workingset_activate_anon",
    WorkingsetActivateFile = "workingset_activate_file",
    WorkingsetRestoreAnon = "workingset_restore_anon",
    WorkingsetRestoreFile = "workingset_restore_file",
    NrVmscanWrite = "nr_vmscan_write",
    NrVmscanImmediateReclaim = "nr_vmscan_immediate_reclaim",
    NrDirtied = "nr_dirtied",
    NrWritten = "nr_written",
    Pgpgin = "pgpgin",
    Pgpgout = "pgpgout",
    Pswpin = "pswpin",
    Pswpout = "pswpout",
    PgallocNormal = "pgalloc_normal",
    AllocstallNormal = "allocstall_normal",
    Pgfree = "pgfree",
    Pgactivate = "pgactivate",
    Pgdeactivate = "pgdeactivate",
    Pgfault = "pgfault",
    Pgmajfault = "pgmajfault",
    Pgrefill = "pgrefill",
    PgstealKswapd = "pgsteal_kswapd",
    PgstealDirect = "pgsteal_direct",
    PgscanKswapd = "pgscan_kswapd",
    PgscanDirect = "pgscan_direct",
    PgscanDirectThrottle = "pgscan_direct_throttle",
    PgscanAnon = "pgscan_anon",
    PgscanFile = "pgscan_file",
    PgstealAnon = "pgsteal_anon",
    PgstealFile = "pgsteal_file",
    Pginodesteal = "pginodesteal",
    SlabsScanned = "slabs_scanned",
    KswapdInodesteal = "kswapd_inodesteal",
    KswapdLowWmarkHitQuickly = "kswapd_low_wmark_hit_quickly",
    KswapdHighWmarkHitQuickly = "kswapd_high_wmark_hit_quickly",
    Pageoutrun = "pageoutrun",
    Pgrotated = "pgrotated",
    OomKill = "oom_kill",
    UnevictablePgsCulled = "unevictable_pgs_culled",
    UnevictablePgsScanned = "unevictable_pgs_scanned",
    UnevictablePgsRescued = "unevictable_pgs_rescued",
    UnevictablePgsMlocked = "unevictable_pgs_mlocked",
    UnevictablePgsMunlocked = "unevictable_pgs_munlocked",
    UnevictablePgsCleared = "unevictable_pgs_cleared",
    UnevictablePgsStranded = "unevictable_pgs_stranded",
    SwapRa = "swap_ra",
    SwapRaHit = "swap_ra_hit",
}

/// Number of [`Ev`] counters.
pub const NR_EVS: usize = EV_NAMES.len();

/// Gauge names written before the event counters (everything after them in
/// a snapshot only grows), in `/proc/vmstat` order.
pub const GAUGE_NAMES: &[&str] = &[
    "nr_free_pages",
    // A zone item, listed before the node items as in mm/vmstat.c.
    "nr_mlock",
    "nr_inactive_anon",
    "nr_active_anon",
    "nr_inactive_file",
    "nr_active_file",
    "nr_unevictable",
    "nr_slab_reclaimable",
    "nr_slab_unreclaimable",
    "nr_isolated_anon",
    "nr_isolated_file",
    "nr_anon_pages",
    "nr_file_pages",
    "nr_dirty",
    "nr_writeback",
    "nr_swapcache",
    "nr_dirty_threshold",
    "nr_dirty_background_threshold",
];

impl Kernel {
    /// Counts `n` events of `e` (`count_vm_events`).
    #[inline]
    pub fn count(&mut self, e: Ev, n: u64) {
        self.events[e as usize] += n;
    }

    /// `global_node_page_state`: a node statistic summed over the nodes
    /// (per-node counts may dip below zero in passing; the sum reads 0 then).
    pub fn global_node_page_state(&self, item: NodeStat) -> u64 {
        self.nodes.iter().map(|n| n.state(item)).sum::<i64>().max(0) as u64
    }

    /// Pages in use since boot and never freed, over the nodes.
    pub fn boot_used_pages(&self) -> u64 {
        self.nodes.iter().map(|n| n.boot_used).sum()
    }

    /// The value of counter `e`.
    pub fn event(&self, e: Ev) -> u64 {
        self.events[e as usize]
    }

    /// Every `/proc/vmstat` name this kernel reports, in order.
    pub fn vmstat_names(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = GAUGE_NAMES.to_vec();
        v.extend_from_slice(EV_NAMES);
        v.push("nr_throttled_written");
        if self.profile.early.kswapd_nap != crate::profile::Sleep::None {
            // 2.6.36/2.6.37 only: appended so later profiles' columns stay.
            v.push("kswapd_skip_congestion_wait");
        }
        v
    }

    /// A snapshot of `/proc/vmstat` values in [`Kernel::vmstat_names`] order.
    pub fn vmstat_values(&self) -> Vec<u64> {
        let sum = |s: NodeStat| self.global_node_page_state(s);
        let lru = |l: Lru| self.nodes.iter().map(|n| n.lru_pages(l)).sum::<u64>();
        let (thresh, bg) = self.dirty_thresholds();
        let mut v = vec![
            self.nodes.iter().map(|n| n.nr_free()).sum(),
            sum(NodeStat::NrMlock),
            lru(Lru::InactiveAnon),
            lru(Lru::ActiveAnon),
            lru(Lru::InactiveFile),
            lru(Lru::ActiveFile),
            lru(Lru::Unevictable),
            // The booted OS's pinned reclaimable slab (`os_slab`, fs/os.rs)
            // is held in the memory in use since boot.
            self.slab_pages(true) + self.slab.boot_pinned,
            // The rest of the memory in use since boot (the machine's
            // `boot_used_kib`) is unreclaimable kernel memory; of the
            // gauges here it is reported with the unreclaimable slab.
            self.slab_pages(false) + self.boot_used_pages() - self.slab.boot_pinned,
            sum(NodeStat::NrIsolatedAnon),
            sum(NodeStat::NrIsolatedFile),
            sum(NodeStat::NrAnonPages),
            sum(NodeStat::NrFilePages),
            sum(NodeStat::NrFileDirty),
            sum(NodeStat::NrWriteback),
            sum(NodeStat::NrSwapcache),
            thresh,
            bg,
        ];
        v.extend_from_slice(&self.events);
        // A node counter that only grows (`__acct_reclaim_writeback`), kept
        // with the events so that it carries on across steps like them.
        v.push(sum(NodeStat::NrThrottledWritten));
        if self.profile.early.kswapd_nap != crate::profile::Sleep::None {
            v.push(self.stats.kswapd_skip_congestion_wait);
        }
        v
    }
}
