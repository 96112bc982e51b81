//! Every tunable constant of the simulated kernel, by name.
//!
//! Sysctls carry their `/proc/sys` names (`vm.dirty_ratio`); reclaim
//! throttling constants live under `throttle.*` and `congestion_wait.*`; the
//! CPU cost of kernel work under `cost.*`. Each parameter has a default (some
//! depend on the kernel profile), a range checked at `--set` time, and a help
//! line for `reclaimlab list params`. The algorithm reads them as plain struct
//! fields: `sc_swappiness()`-style accessors are not needed without memcg
//! overrides.

use crate::profile::KernelProfile;

/// A parameter's description for `list params`.
#[derive(Clone, Debug)]
pub struct ParamInfo {
    /// Name used with `--set NAME=VALUE`.
    pub name: &'static str,
    /// Default under the given profile, formatted.
    pub default: String,
    /// Inclusive range.
    pub min: f64,
    /// Inclusive range.
    pub max: f64,
    /// What it is, with units and source.
    pub help: &'static str,
}

/// Error from [`Params::set`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParamError {
    /// No such parameter.
    #[error("unknown parameter `{name}`{}; `reclaimlab list params` shows them all", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    Unknown {
        /// What was given.
        name: String,
        /// The closest known name.
        suggestion: Option<String>,
    },
    /// Not a number.
    #[error("parameter `{name}`: `{value}` is not a number (expected a value in {min}..={max})")]
    NotANumber {
        /// Parameter.
        name: String,
        /// What was given.
        value: String,
        /// Range.
        min: f64,
        /// Range.
        max: f64,
    },
    /// Out of range.
    #[error("parameter `{name}`: {value} is out of range (accepted: {min}..={max})")]
    OutOfRange {
        /// Parameter.
        name: String,
        /// What was given.
        value: f64,
        /// Range.
        min: f64,
        /// Range.
        max: f64,
    },
}

macro_rules! params {
    ($( $field:ident : $ty:ty = $default:expr, $name:literal, $min:expr, $max:expr, $help:literal; )*) => {
        /// All tunables of one simulation. Field docs are the `list params` help.
        #[derive(Clone, Debug, PartialEq)]
        #[allow(missing_docs)]
        pub struct Params {
            $( pub $field: $ty, )*
        }

        impl Params {
            /// Defaults under `profile`.
            pub fn defaults(profile: &KernelProfile) -> Params {
                let _p = profile;
                Params { $( $field: { let f: fn(&KernelProfile) -> $ty = $default; f(profile) }, )* }
            }

            /// Every parameter name.
            pub const NAMES: &'static [&'static str] = &[ $( $name, )* ];

            /// Describes every parameter with its default under `profile`.
            pub fn list(profile: &KernelProfile) -> Vec<ParamInfo> {
                let d = Params::defaults(profile);
                vec![ $( ParamInfo { name: $name, default: format!("{}", d.$field), min: $min as f64, max: $max as f64, help: $help }, )* ]
            }

            /// Sets `name` to `value` (parsed and range-checked).
            pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
                match name {
                    $( $name => {
                        let v: f64 = value.trim().parse().map_err(|_| ParamError::NotANumber {
                            name: name.into(), value: value.into(), min: $min as f64, max: $max as f64 })?;
                        if !(v >= $min as f64 && v <= $max as f64) || (v.fract() != 0.0 && stringify!($ty) != "f64") {
                            return Err(ParamError::OutOfRange { name: name.into(), value: v, min: $min as f64, max: $max as f64 });
                        }
                        self.$field = v as $ty;
                        Ok(())
                    } )*
                    _ => Err(ParamError::Unknown { name: name.into(), suggestion: closest(name, Self::NAMES) }),
                }
            }

            /// Every parameter as `(name, value)` strings, for the run record.
            pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
                vec![ $( ($name, format!("{}", self.$field)), )* ]
            }
        }
    };
}

params! {
    hz: u64 = |_| 250, "kernel.hz", 100, 1000, "CONFIG_HZ: timer ticks per second; kernel timeouts are whole jiffies (1/HZ s)";
    dirty_ratio: u64 = |_| 20, "vm.dirty_ratio", 1, 100, "% of dirtyable memory at which writers are throttled (mm/page-writeback.c)";
    dirty_background_ratio: u64 = |_| 10, "vm.dirty_background_ratio", 0, 100, "% of dirtyable memory at which the flusher starts background writeback";
    dirty_writeback_centisecs: u64 = |_| 500, "vm.dirty_writeback_centisecs", 0, 100000, "flusher periodic (kupdate) wake interval, centiseconds";
    dirty_expire_centisecs: u64 = |_| 3000, "vm.dirty_expire_centisecs", 0, 100000, "age after which dirty data is written by kupdate, centiseconds";
    swappiness: u64 = |_| 60, "vm.swappiness", 0, 200, "relative IO cost of swapping vs file reclaim (get_scan_count)";
    readahead_kb: u64 = |_| 128, "readahead.kb", 0, 65536, "a device's read_ahead_kb (bdi->ra_pages x 4): the largest readahead window of a buffered read, KiB (VM_READAHEAD_PAGES, 128 KiB, unless a driver sets more); 0: no readahead, a missed page read alone (the simulator before 2026-11-28, sixth session)";
    page_cluster: u64 = |_| 3, "vm.page-cluster", 0, 6, "swap readahead window is 2^page-cluster pages (0: no readahead)";
    min_free_kbytes: u64 = |_| 0, "vm.min_free_kbytes", 0, 67108864, "min watermark in KiB; 0 = the kernel's default int_sqrt(lowmem_kbytes*16) clamped to [128, 262144]";
    watermark_scale_factor: u64 = |_| 10, "vm.watermark_scale_factor", 1, 3000, "gap between min/low/high watermarks in 1/10000 of zone memory";
    laptop_mode: u64 = |_| 0, "vm.laptop_mode", 0, 1, "laptop mode: reclaim does not write pages at the first priorities";
    dirty_kernel_controls: u64 = |_| 0, "writeback.kernel_controls", 0, 1, "1: balance_dirty_pages throttles with the kernel's position and rate controls (wb_position_ratio, wb_update_dirty_ratelimit) against dom->dirty_limit, which lags a falling threshold; 0, the default until scanning's cost at full size is modelled (docs/results-2021.md): the global cubic against the current threshold, at the write bandwidth shared by the recent dirtiers";
    writeback_timeout_us: u64 = |_| 100_000, "throttle.writeback.timeout_us", 0, 10_000_000, "VMSCAN_THROTTLE_WRITEBACK sleep (HZ/10 in 5.16)";
    writeback_wake_per_waiter: u64 = |_| 32, "throttle.writeback.wake_pages_per_waiter", 0, 1_000_000, "pages that must finish writeback per throttled task before WRITEBACK waiters are woken (SWAP_CLUSTER_MAX in __acct_reclaim_writeback)";
    isolated_timeout_us: u64 = |p| p.isolated_timeout_us, "throttle.isolated.timeout_us", 0, 10_000_000, "VMSCAN_THROTTLE_ISOLATED sleep (HZ/50 from 5.16-rc1; HZ/10 in the posted series, reclaimcongest-v2)";
    noprogress_timeout_us: u64 = |p| p.noprogress_timeout_us, "throttle.noprogress.timeout_us", 0, 10_000_000, "VMSCAN_THROTTLE_NOPROGRESS sleep (HZ/10 in the posted series, reclaimcongest-v2; HZ/2 in 5.16-rc1; 1 jiffy from 5.16-rc8)";
    noprogress_wake_shift: u64 = |p| p.noprogress_wake_shift, "throttle.noprogress.wake_efficiency_shift", 0, 64, "NOPROGRESS waiters are woken when nr_reclaimed > nr_scanned >> shift (3 = 12.5%, 5.16-rc1 on; 64: any page reclaimed, the posted series, reclaimcongest-v2)";
    rate_window_ms: u64 = |_| 1_000, "throttle.rate.window_ms", 1, 600_000, "policy.rate_priority (no kernel): the window over which a task's allocation rate and the machine's reclaim rate are measured";
    congested_timeout_us: u64 = |_| 4_000, "throttle.congested.timeout_us", 0, 10_000_000, "VMSCAN_THROTTLE_CONGESTED sleep (1 jiffy)";
    congestion_wait_timeout_us: u64 = |_| 100_000, "congestion_wait.timeout_us", 0, 10_000_000, "timeout of congestion_wait()/wait_iff_congested() calls in reclaim (HZ/10 in 5.15)";
    too_many_isolated_sleep_us: u64 = |_| 100_000, "congestion_wait.too_many_isolated_msleep_us", 0, 10_000_000, "the msleep(100) in 5.15 shrink_inactive_list when too many pages are isolated";
    memcg_version: u64 = |_| 2, "memcg.version", 1, 2, "cgroup version of the memory controller's hierarchy: 2 (memory.max, writeback_throttling_sane) or 1 (memory.limit_in_bytes: no ISOLATED throttle, no LRUVEC_CONGESTED, synchronous wait on pages under writeback in limit reclaim)";
    memcg_cgroup_writeback: u64 = |_| 1, "memcg.cgroup_writeback", 0, 1, "cgroup v2 only: 1, cgroup writeback (the kernel's default when the memory and io controllers are on the v2 hierarchy and the filesystem supports it: ext4, btrfs, XFS from 5.3): an inode belongs to its first dirtier's memcg, whose writers are throttled against the memcg's own dirty limit (the mdtc of balance_dirty_pages) and whose inodes the flusher writes when that domain is over its background threshold; 0: every inode on the root wb, the global dirty domain only (inode_cgwb_enabled false)";
    memcg_charge_retries: u64 = |p| p.memcg_charge_retries, "memcg.charge_retries", 0, 1000, "try_charge_memcg: limit-reclaim passes without progress before the memcg OOM killer (5 up to 5.8, MAX_RECLAIM_RETRIES = 16 from 5.9)";
    vfs_cache_pressure: u64 = |_| 100, "vm.vfs_cache_pressure", 0, 10000, "super_cache_count reports objects x vfs_cache_pressure / 100 to the shrinker (fs/dcache.c vfs_pressure_ratio)";
    xfs_agcount: u64 = |_| 4, "xfs.agcount", 1, 1024, "allocation groups of the simulated XFS (mkfs.xfs default for small filesystems: 4); each has its reclaimable inodes, cursor and (sync) reclaim lock; directory d's files live in AG d mod agcount";
    xfs_maxicount: u64 = |_| 0, "xfs.maxicount", 0, 2_000_000_000, "XFS's m_maxicount, the inodes the filesystem may hold (mkfs.xfs's imaxpct, 25 % of a filesystem under 1 TiB, of its blocks in 512-byte inodes: 2,097,152 for the 4 GiB image `run` makes for fs-create workers); a create beyond it fails with ENOSPC (xfs_dialloc) and the creator stops, as fs_mark does. 0: unbounded";
    xfs_log_mib: u64 = |_| 512, "xfs.log_mib", 10, 2048, "XFS log size (512 MiB: mkfs.xfs's default for a filesystem of about 1 TiB; at least 10, XFS_MIN_LOG_BYTES), in bytes: each create reserves tr_create (2 × 150 KiB) and commits its items' formatted bytes to the CIL (about 0.3–0.6 KiB a create), which is pushed as a checkpoint at min(log/8, 32 MiB) (XLOG_CIL_SPACE_LIMIT) and blocks committers at twice that; creates wait while the reservation does not fit (xlog_grant_head_wait); xfsaild pushes when less than 1/4 is free (xlog_grant_push_ail)";
    cost_slab_object_ns: u64 = |_| 200, "cost.slab_object_ns", 0, 1_000_000, "system CPU per object a shrinker scans (an estimate: isolating a dentry or inode from its LRU and freeing it)";
    xfs_syncd_centisecs: u64 = |_| 3000, "fs.xfs.xfssyncd_centisecs", 100, 720000, "XFS sync interval; the background inode reclaim worker runs every xfssyncd_centisecs/6 (5 s by default, xfs_reclaim_work_queue)";
    cost_fs_create_ns: u64 = |_| 30_000, "cost.fs_create_ns", 0, 100_000_000, "system CPU per create of an empty file (open O_CREAT + close on XFS; an estimate: 16-way fs_mark creates ~250k files/s on 16 CPUs)";
    max_reclaim_retries: u64 = |_| 16, "reclaim.max_retries", 1, 1000, "MAX_RECLAIM_RETRIES: no-progress loops before OOM; kswapd_failures limit";
    nr_requests: u64 = |_| 128, "block.nr_requests", 4, 100000, "request slots per direction of the single-queue layer (BLKDEV_MAX_RQ); blk-mq uses 2 x the device queue_depth";
    dd_fifo_batch: u64 = |_| 16, "block.mq_deadline.fifo_batch", 1, 1024, "mq-deadline: requests of one direction dispatched as a batch (block/mq-deadline.c fifo_batch)";
    dd_writes_starved: u64 = |_| 2, "block.mq_deadline.writes_starved", 0, 1024, "mq-deadline: read batches that may pass waiting writes before a write batch (writes_starved)";
    slice_us: u64 = |_| 3_000, "sched.slice_us", 100, 1_000_000, "CPU time slice before a runnable task yields to a waiting one";
    cost_scan_ns: u64 = |_| 300, "cost.scan_page_ns", 0, 1_000_000, "system CPU per page scanned by reclaim: isolation, the page's checks, put-back (measured on the reference host for an unmapped order-0 page: 303 +- 35 ns; docs/bench/cpu-costs.md, perf_page_costs)";
    cost_rmap_ns: u64 = |_| 220, "cost.rmap_page_ns", 0, 1_000_000, "system CPU of folio_referenced's reverse-map walk for a mapped page reclaim scans, on top of cost.scan_page_ns (measured on the reference host: 195-222 ns per anonymous page, about 220 per mapped file folio; docs/bench/cpu-costs.md, perf_page_costs --workloads anon)";
    cost_reclaim_ns: u64 = |_| 250, "cost.reclaim_page_ns", 0, 1_000_000, "system CPU per page-cache page reclaimed: __remove_mapping, uncharge, free (measured on the reference host for a clean file page: 247 +- 41 ns; docs/bench/cpu-costs.md, perf_page_costs)";
    cost_reclaim_anon_ns: u64 = |_| 370, "cost.reclaim_anon_page_ns", 0, 1_000_000, "system CPU per anonymous page reclaimed once written: removal from the swap cache, uncharge, free; its unmap and swap-out are cost.swapout_page_ns (measured on the reference host: 361 +- 63 ns; docs/bench/cpu-costs.md, perf_page_costs --workloads anon)";
    cost_ext4_convert_ns: u64 = |_| 9_000, "cost.ext4_convert_ns", 0, 100_000_000, "system CPU of one ext4 io_end conversion of unwritten extents at write completion (ext4-rsv-conversion), before its pages end writeback; plus cost.ext4_convert_page_ns per page (measured on 6.18: about 9 us + 12 us per MiB, docs/bench/cpu-costs.md, unwritten_convert_cost)";
    cost_ext4_convert_page_ns: u64 = |_| 47, "cost.ext4_convert_page_ns", 0, 100_000_000, "system CPU per page of an ext4 io_end conversion, on top of cost.ext4_convert_ns (12 us per MiB measured on 6.18)";
    cost_xfs_convert_ns: u64 = |_| 6_000, "cost.xfs_convert_ns", 0, 100_000_000, "system CPU of one XFS xfs_iomap_write_unwritten transaction at write completion (xfs-conv), before its pages end writeback; plus cost.xfs_convert_page_ns per page (measured on 6.18: about 6 us + 4 us per MiB, docs/bench/cpu-costs.md, unwritten_convert_cost)";
    cost_xfs_convert_page_ns: u64 = |_| 16, "cost.xfs_convert_page_ns", 0, 100_000_000, "system CPU per page of an XFS unwritten conversion, on top of cost.xfs_convert_ns (4 us per MiB measured on 6.18)";
    cost_swapout_ns: u64 = |_| 4_100, "cost.swapout_page_ns", 0, 100_000_000, "system CPU per anonymous page reclaim writes to swap, on top of the scan and of the write's submission (cost.swap_submit_page_ns): try_to_unmap with its TLB flush, add_to_swap, the swap cache (measured on the reference host, a nested VM, where the flush is an IPI: 3975 and 4316 ns in two sets of runs; docs/bench/cpu-costs.md, perf_page_costs --workloads anon)";
    cost_swap_submit_ns: u64 = |_| 1_000, "cost.swap_submit_page_ns", 0, 1_000_000, "system CPU per page reclaim writes to swap for building and submitting its bio (5.15 __swap_writepage, 6.18 swap_writeout), in place of cost.io_submit_page_ns (measured on the reference host: 925 +- 118 and 1080 ns per page written; docs/bench/cpu-costs.md, perf_page_costs --workloads anon)";
    cost_swapin_ns: u64 = |_| 2_200, "cost.swapin_page_ns", 0, 100_000_000, "system CPU per page read from swap, readahead pages included, in place of cost.io_submit_page_ns: 5.15 __read_swap_cache_async (allocation, memcg charge, swap cache, LRU add) and swap_readpage's bio and submission; the fault that maps it is cost.fault_ns (measured on the reference host with 8-page readahead: 2188 ns per page read, 1227 of it the submission; docs/bench/cpu-costs.md, perf_page_costs --workloads anon)";
    cost_fault_ns: u64 = |_| 1_900, "cost.fault_ns", 0, 1_000_000, "system CPU per page fault, excluding zeroing";
    cost_zero_ns: u64 = |_| 80, "cost.zero_page_ns", 0, 1_000_000, "system CPU to zero a 4 KiB page (measured: docs/bench/cpu-costs.md)";
    cost_unmap_ns: u64 = |_| 300, "cost.unmap_page_ns", 0, 1_000_000, "system CPU per resident page freed by munmap (measured: docs/bench/cpu-costs.md)";
    cost_copy_ns: u64 = |_| 210, "cost.copy_page_ns", 0, 1_000_000, "system CPU per 4 KiB a read() copies out of the page cache (a write's copy is cost.write_copy_page_ns)";
    cost_write_copy_ns: u64 = |_| 210, "cost.write_copy_page_ns", 0, 1_000_000, "system CPU per 4 KiB a buffered write() copies into the page cache; measured on the reference host in fio's buffered random-write job: 495 +- 148 ns (docs/bench/cpu-costs.md, 'Buffered writes'), but the default stays the read copy's 210: with the measured write path the fidelity suites score lower (docs/fidelity.md, 'The write path measured')";
    cost_fs_write_ns: u64 = |_| 0, "cost.fs_write_page_ns", 0, 1_000_000, "system CPU of the filesystem per page a buffered write() writes into a cached page: write_begin's per-buffer checks, write_end's block_commit_write and dirtying; measured on ext4, 6.18: 70 +- 15 ns, default 0 for the reason cost.write_copy_page_ns gives";
    cost_pagecache_insert_ns: u64 = |_| 0, "cost.pagecache_insert_page_ns", 0, 1_000_000, "system CPU for a buffered write() to put a new page in the page cache, on top of cost.fs_write_page_ns; for order-0 pages about 750 (allocation 230 and memcg charge 270 as measured in the anonymous fault, buffer heads 137 and ext4's new-block work 80 as measured for writes, xarray insert and LRU add ~35; 6.18's ext4 pays about 230 a page with 1 MiB folios); default 0 for the reason cost.write_copy_page_ns gives";
    cost_fault_user_ns: u64 = |_| 200, "cost.fault_user_ns", 0, 1_000_000, "user CPU a page fault costs the faulting task beyond the restarted access: the exception's entry and return and the TLB refill after it, which the tick books to user mode (measured on the reference host with getrusage: 180-300 ns of user time per faulting anonymous store and 150-370 per faulting load of a file hole, against 30 for a resident store; docs/bench/cpu-costs.md, 'The user time of a fault', example fault_user_time)";
    cost_touch_ns: u64 = |_| 8, "cost.touch_page_ns", 0, 1_000_000, "user CPU per resident page touched by a worker's sequential pass";
    cost_touch_random_ns: u64 = |_| 12, "cost.touch_random_page_ns", 0, 1_000_000, "user CPU per resident page touched at a random offset (independent loads overlap)";
    cost_io_submit_ns: u64 = |_| 300, "cost.io_submit_page_ns", 0, 1_000_000, "system CPU per page submitted for write or read: a file page (a page read from or written to swap costs cost.swapin_page_ns or cost.swap_submit_page_ns instead)";
    lru_lock_page_ns: u64 = |_| 223, "lru_lock.page_ns", 0, 1_000_000, "time lruvec->lru_lock is held per page isolated or put back, part of cost.scan_page_ns (keep it below that); 0 leaves lock contention out (vmscan/lru_lock.rs); the default is measured on the reference host: 223 +- 27 ns (docs/bench/cpu-costs.md, perf_page_costs and lru_lock_hold)";
    lru_lock_add_page_ns: u64 = |_| 55, "lru_lock.add_page_ns", 0, 1_000_000, "time lruvec->lru_lock is held per page a task's LRU-addition batch puts on a list (5.15 __pagevec_lru_add, one acquisition per PAGEVEC_SIZE = 15 pages added by a fault, a swap-in or a page-cache insert); part of the adding path's own cost; only with the lock modelled (lru_lock.page_ns above 0); measured on the reference host: 49 +- 4 ns (anon faults), 64 +- 9 (page-cache inserts), docs/bench/cpu-costs.md, perf_page_costs";
    lru_lock_release_page_ns: u64 = |_| 30, "lru_lock.release_page_ns", 0, 1_000_000, "time lruvec->lru_lock is held per page munmap takes off an LRU list (5.15 release_pages, relocking every SWAP_CLUSTER_MAX = 32 pages); part of cost.unmap_page_ns; only with the lock modelled (lru_lock.page_ns above 0); measured on the reference host: 31 +- 6 ns, docs/bench/cpu-costs.md, perf_page_costs";
    lru_lock_handoff_ns: u64 = |_| 100, "lru_lock.handoff_ns", 0, 1_000_000, "system CPU for the lock and list heads to move to a waiting CPU (measured: docs/bench/cpu-costs.md)";
    cost_wakeup_ns: u64 = |_| 2_000, "cost.wakeup_ns", 0, 1_000_000, "system CPU per wake-up from sleep (context switch), paid by kswapd after each pass and by a throttled task after its sleep (an estimate; the reference host measures 1.0 us a handoff between two processes on one CPU, pipe write and read included: cpu_probe::switch_cost, docs/guests.md; a guest's switch-ns= sets it)";
    vm_exec_rules: u64 = |_| 1, "vmscan.vm_exec_rules", 0, 1, "1: reclaim's VM_EXEC branches, in every kernel modelled (5.10/6.1 folio_check_references activates a referenced executable file page at its first pass over the inactive list, shrink_active_list keeps it active while referenced); 0: treat program text like any mapped file page (a what-if; vmscan/lists.rs)";
    program_text: u64 = |_| 1, "sim.program_text", 0, 1, "1: the workers map their programs' text (reclaimlab, fio, libc on the machine's text_device, in the page cache at the start) and reference its hot pages while they run user code, so text pages are evicted and refault under pressure (mm/text.rs; hot sets measured, docs/simulator.md, Program text); 0: no program text (the simulator before 2026-11-28)";
    vmstat_interval_ms: u64 = |_| 1_000, "sim.vmstat_interval_ms", 10, 3_600_000, "interval between /proc/vmstat samples in the run record";
}

/// The known name closest to `name` by edit distance, if reasonably close.
pub fn closest(name: &str, names: &[&str]) -> Option<String> {
    names
        .iter()
        .map(|n| (levenshtein(name, n), *n))
        .filter(|(d, n)| *d <= (n.len() / 3).max(3))
        .min()
        .map(|(_, n)| n.to_string())
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

impl Params {
    /// Nanoseconds per jiffy.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz
    }
    /// `usecs_to_jiffies`: microseconds rounded up to whole jiffies.
    pub fn usecs_to_jiffies(&self, us: u64) -> u64 {
        let per = 1_000_000 / self.hz;
        us.div_ceil(per)
    }
    /// `jiffies_to_usecs`.
    pub fn jiffies_to_usecs(&self, j: u64) -> u64 {
        j * (1_000_000 / self.hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profile;

    #[test]
    fn set_checks_names_and_ranges() {
        let mut p = Params::defaults(profile("v5.16").unwrap());
        assert_eq!(p.noprogress_timeout_us, 4000);
        p.set("vm.dirty_ratio", "30").unwrap();
        assert_eq!(p.dirty_ratio, 30);
        match p.set("vm.dirty_ration", "3") {
            Err(ParamError::Unknown { suggestion, .. }) => {
                assert_eq!(suggestion.as_deref(), Some("vm.dirty_ratio"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            p.set("vm.swappiness", "201"),
            Err(ParamError::OutOfRange { .. })
        ));
        assert!(matches!(
            p.set("vm.swappiness", "x"),
            Err(ParamError::NotANumber { .. })
        ));
        assert!(matches!(
            p.set("vm.swappiness", "1.5"),
            Err(ParamError::OutOfRange { .. })
        ));
    }

    #[test]
    fn jiffies_round_up() {
        let p = Params::defaults(profile("v5.16").unwrap());
        assert_eq!(p.usecs_to_jiffies(100_000), 25);
        assert_eq!(p.usecs_to_jiffies(4_001), 2);
        assert_eq!(p.jiffies_to_usecs(25), 100_000);
    }
}
