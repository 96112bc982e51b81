//! The simulated kernel's state: one struct holding every node, task, device
//! and counter, borrowed by whichever task runs.

use crate::block::BlockDev;
use crate::engine::{Exec, TaskId, TaskSched, WaitQueue, PID_BASE};
use crate::machine::Machine;
use crate::mm::anon::AnonMapping;
use crate::mm::filemap::File;
use crate::mm::free_list::FreeList;
use crate::mm::page::Frames;
use crate::mm::swap::SwapInfo;
use crate::mm::{zone_watermarks, Lruvec, Pgdat};
use crate::params::Params;
use crate::profile::KernelProfile;
use crate::sched::Cpus;
use crate::trace::TraceConfig;
use crate::vmstat::NR_EVS;
use crate::writeback::Bdi;

/// Kind of task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// A user process (worker).
    User,
    /// kswapd for a node.
    Kswapd(u32),
    /// Another kernel thread (flusher, device completion): `PF_KTHREAD`,
    /// exempt from reclaim throttling.
    Kthread,
}

/// One task (`task_struct`, the parts reclaim cares about).
#[derive(Debug)]
pub struct Task {
    /// pid.
    pub pid: u32,
    /// `comm`.
    pub comm: String,
    /// Kind.
    pub kind: TaskKind,
    /// Node it allocates from first.
    pub nid: u32,
    /// CPU it last ran on (for trace lines).
    pub cpu: u32,
    /// User CPU time, ns.
    pub user_ns: u64,
    /// System CPU time, ns.
    pub sys_ns: u64,
    /// Time spent runnable but waiting for a CPU, ns.
    pub runq_ns: u64,
    /// System time spent spinning on `lru_lock`, ns (part of `sys_ns`).
    pub lru_lock_spin_ns: u64,
    /// Pages added to the LRU since its last LRU-addition batch took
    /// `lru_lock` (the per-CPU pagevec, kept per task: mm/lru.rs).
    pub lru_add_batch: u32,
    /// CFS virtual runtime, ns (CPU time used, placed forward on wake-up).
    pub vruntime: u64,
    /// Has been placed on the run queue before (a new task is placed with
    /// `START_DEBIT`, not a sleeper's credit).
    pub placed: bool,
    /// What is left of its slice while it holds a CPU, ns.
    pub slice_left: u64,
    /// Inside [`crate::sched::run_on_cpu`]'s own wait for its work to be
    /// done: running, not blocked, so it keeps its CPU.
    pub in_burst: bool,
    /// Anonymous mappings it owns.
    pub mappings: Vec<u32>,
    /// Memory cgroup it is charged to (0: the root).
    pub memcg: u16,
    /// `current->memcg_nr_pages_over_high`: pages charged over
    /// `memory.high`, paid for at the next batch.
    pub memcg_nr_pages_over_high: u64,
    /// `fatal_signal_pending()` after an OOM kill.
    pub killed: bool,
    /// `tsk_is_oom_victim()`.
    pub oom_victim: bool,
    /// Exited (future dropped, memory freed).
    pub exited: bool,
    /// `current->nr_dirtied`, pages dirtied since the last `balance_dirty_pages`.
    pub nr_dirtied: u64,
    /// `current->nr_dirtied_pause`.
    pub nr_dirtied_pause: u64,
    /// `current->dirty_paused_when`, in jiffies (0: never): when the
    /// task's last `balance_dirty_pages` pause ended, virtually.
    pub dirty_paused_when: u64,
    /// CPU work done but not yet paid for (see `crate::sched`).
    pub cpu_debt_user: u64,
    /// As `cpu_debt_user`, system time.
    pub cpu_debt_sys: u64,
    /// NOPROGRESS sleeps in a row without an efficient reclaim in between
    /// (`policy.noprogress=backoff` only; no kernel has it).
    pub noprogress_streak: u32,
    /// Pages allocated and pages freed while this task ran (its faults and
    /// writes; its `munmap` and its own reclaim), for
    /// `policy.rate_priority` (no kernel has it; see `crate::rate`).
    pub rate: crate::rate::TaskRate,
    /// Its program text's hot pages, if the workload gave it any
    /// (`crate::mm::text`).
    pub text: Option<Box<crate::mm::text::TaskText>>,
}

impl Task {
    /// `current_is_kswapd()`.
    pub fn is_kswapd(&self) -> bool {
        matches!(self.kind, TaskKind::Kswapd(_))
    }
}

/// The simulated kernel.
#[derive(Debug)]
pub struct Kernel {
    /// Executor state (time, timers, ready queue).
    pub exec: Exec,
    /// Tunables.
    pub params: Params,
    /// Throttling generation.
    pub profile: KernelProfile,
    /// The machine.
    pub machine: Machine,
    /// Page frames.
    pub frames: Frames,
    /// Nodes.
    pub nodes: Vec<Pgdat>,
    /// Tasks by [`TaskId`].
    pub tasks: Vec<Task>,
    /// CPUs and the run queue.
    pub cpus: Cpus,
    /// Anonymous mappings by id.
    pub anon: Vec<AnonMapping>,
    /// The page table and young bits of the last unmapped mapping, kept for
    /// the next `mmap_anon` (host memory only; no effect on the simulation).
    pub spare_anon_tables: Option<(crate::mm::slots::Slots, Vec<u64>)>,
    /// Per-list buffers `move_folios_to_lru` sorts a batch into, kept
    /// between calls so that putting a batch back allocates nothing.
    pub lru_scratch: [Vec<crate::mm::page::Pfn>; crate::mm::page::NR_LRU_LISTS],
    /// Reverse-map walks (`folio_referenced` of a mapped page) since the
    /// reclaimer last took the count, for `cost.rmap_page_ns`.
    pub rmap_walks: u64,
    /// Pfn vectors given back by reclaim batches and fault runs, for the
    /// next (`Kernel::pfn_vec`).
    pub spare_pfn_vecs: Vec<Vec<crate::mm::page::Pfn>>,
    /// Memory cgroups by id (0: the root; see [`crate::mm::memcontrol`]).
    pub memcgs: Vec<crate::mm::memcontrol::MemCgroup>,
    /// Files by id.
    pub files: Vec<File>,
    /// Program images by name, `(name, file)` (`crate::mm::text`).
    pub images: Vec<(String, u32)>,
    /// Swap.
    pub swap: SwapInfo,
    /// Block devices.
    pub devs: Vec<BlockDev>,
    /// Per-device writeback state (`backing_dev_info` + its `bdi_writeback`).
    pub bdis: Vec<Bdi>,
    /// `global_wb_domain`: the hard dirty limit of dirty throttling.
    pub wb_domain: crate::writeback::WbDomain,
    /// `/proc/vmstat` event counters.
    pub events: [u64; NR_EVS],
    /// `congestion_wqh[BLK_RW_ASYNC, BLK_RW_SYNC]` (mm/backing-dev.c ≤5.17).
    pub congestion_wqh: [WaitQueue; 2],
    /// `nr_wb_congested[]`.
    pub nr_wb_congested: [u32; 2],
    /// Tracing configuration.
    pub trace_cfg: TraceConfig,
    /// Trace text not yet drained.
    pub trace_buf: String,
    /// Trace lines emitted so far.
    pub trace_lines: u64,
    /// `oom_lock` holder.
    pub oom_lock: bool,
    /// Every OOM kill so far, global or memcg.
    pub oom_kills: Vec<crate::mm::alloc::OomKill>,
    /// Deterministic random state (xorshift64*).
    pub rng: u64,
    /// Sampled statistics of stall-relevant waits, for run summaries.
    pub stats: crate::SimStats,
    /// The machine's reclaim rate, for `policy.rate_priority`.
    pub reclaim_rate: crate::rate::ReclaimRate,
    /// Slab caches and each task's `reclaim_state`.
    pub slab: crate::mm::slab::SlabState,
    /// Registered shrinkers (`shrinker_list`).
    pub shrinkers: Vec<crate::mm::shrinker::Shrinker>,
    /// Mounted filesystems (`super_blocks`).
    pub supers: Vec<crate::fs::SuperBlock>,
    /// Per device: its data filesystem's write-completion work
    /// (`crate::fs::ioend`).
    pub conversions: Vec<crate::fs::ioend::ConversionQueue>,
}

impl Kernel {
    /// Boots a kernel on `machine` with `profile` and `params`: frames, nodes
    /// with watermarks, devices, swap. No tasks yet (see [`crate::boot`]).
    pub fn new(machine: Machine, profile: KernelProfile, params: Params, seed: u64) -> Kernel {
        // Only the managed pages exist here: what the kernel reserved at
        // boot (`boot_reserved_kib`) never reaches the buddy allocator, so
        // the zones' `managed_pages`, MemTotal and the watermarks
        // (`init_per_zone_wmark_min` sizes `min_free_kbytes` from
        // `nr_free_buffer_pages()`, the managed pages while no watermark is
        // set yet; 5.15 mm/page_alloc.c) count without it.
        let nr_pages = machine.managed_pages() as usize;
        let nr_nodes = machine.nodes as usize;
        let mut frames = Frames::new(nr_pages, nr_nodes);
        let boot_used = machine.boot_used_pages();
        let mut nodes = Vec::with_capacity(nr_nodes);
        let min_free_kbytes = crate::mm::boot_min_free_kbytes(
            params.min_free_kbytes,
            machine.thp,
            machine.populated_zones_upto_normal(),
            nr_pages as u64,
            params.watermark_scale_factor,
        );
        for nid in 0..nr_nodes {
            let range = frames.node_range(nid);
            // The memory in use when the workload starts
            // (`boot_used_kib`), spread over the nodes like the RAM: the
            // lowest pages of each node, taken off the free list at boot
            // and never freed (kernel memory: not on an LRU, not free).
            let used = if nid + 1 == nr_nodes {
                boot_used - boot_used / nr_nodes as u64 * (nr_nodes as u64 - 1)
            } else {
                boot_used / nr_nodes as u64
            };
            let used = used.min(u64::from(range.end - range.start)) as u32;
            for pfn in range.start..range.start + used {
                let p = frames.get_mut(pfn);
                p.flags = 0;
                p.owner = crate::mm::anon::ORPHAN;
            }
            let free = FreeList::new(range.start + used, range.end);
            let managed = u64::from(range.end - range.start);
            let wmark = zone_watermarks(
                min_free_kbytes,
                params.watermark_scale_factor,
                managed,
                nr_pages as u64,
            );
            let pcp = crate::mm::pcp::Pcp::new(
                profile.pcp_high,
                managed,
                wmark[crate::mm::WMARK_LOW],
                machine.cpus,
                (machine.cpus / machine.nodes).max(1),
            );
            nodes.push(Pgdat {
                nid: nid as u32,
                free,
                pcp,
                managed,
                boot_used: u64::from(used),
                wmark,
                lruvecs: vec![Lruvec::default()],
                ..Default::default()
            });
        }
        let devs: Vec<BlockDev> = machine
            .devices
            .iter()
            .map(|d| BlockDev::new(d, &params))
            .collect();
        let bdis = (0..devs.len()).map(|_| Bdi::new()).collect();
        let swap = SwapInfo::new(
            machine.swap_mib * 256,
            machine.swap_dev(),
            machine.devices[machine.swap_dev()].is_rotational(),
        );
        Kernel {
            exec: Exec::default(),
            profile,
            machine,
            frames,
            nodes,
            tasks: Vec::new(),
            cpus: Cpus::default(),
            anon: Vec::new(),
            spare_anon_tables: None,
            lru_scratch: Default::default(),
            rmap_walks: 0,
            spare_pfn_vecs: Vec::new(),
            memcgs: vec![crate::mm::memcontrol::MemCgroup::root()],
            files: Vec::new(),
            images: Vec::new(),
            swap,
            devs,
            bdis,
            wb_domain: Default::default(),
            events: [0; NR_EVS],
            congestion_wqh: Default::default(),
            nr_wb_congested: [0; 2],
            trace_cfg: TraceConfig::default(),
            trace_buf: String::new(),
            trace_lines: 0,
            oom_lock: false,
            oom_kills: Vec::new(),
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            stats: crate::SimStats::default(),
            reclaim_rate: Default::default(),
            slab: Default::default(),
            shrinkers: Vec::new(),
            supers: Vec::new(),
            conversions: Vec::new(),
            params,
        }
        .with_cpus()
        .with_dirty_limit()
        .with_os_slab()
    }

    fn with_cpus(mut self) -> Self {
        self.cpus = Cpus::new(self.machine.cpus as usize);
        self
    }

    /// `page_writeback_init` → `writeback_set_ratelimit`: the domain's
    /// dirty limit starts at the boot-time threshold (all memory free).
    fn with_dirty_limit(mut self) -> Self {
        self.wb_domain.dirty_limit = self.dirty_thresholds().0;
        self
    }

    /// Creates a task (not yet running: pass the id to `World::spawn`).
    pub fn new_task(&mut self, comm: &str, kind: TaskKind, nid: u32) -> TaskId {
        let t = self.tasks.len() as TaskId;
        self.tasks.push(Task {
            pid: PID_BASE + t,
            comm: comm.to_string(),
            kind,
            nid,
            cpu: t % self.machine.cpus,
            user_ns: 0,
            sys_ns: 0,
            runq_ns: 0,
            lru_lock_spin_ns: 0,
            lru_add_batch: 0,
            vruntime: 0,
            placed: false,
            slice_left: 0,
            in_burst: false,
            mappings: Vec::new(),
            memcg: 0,
            memcg_nr_pages_over_high: 0,
            killed: false,
            oom_victim: false,
            exited: false,
            nr_dirtied: 0,
            nr_dirtied_pause: 32,
            dirty_paused_when: 0,
            cpu_debt_user: 0,
            cpu_debt_sys: 0,
            noprogress_streak: 0,
            rate: crate::rate::TaskRate::starting(self.exec.now()),
            text: None,
        });
        self.exec.sched.push(TaskSched::default());
        t
    }

    /// An empty pfn vector for a batch of pages, from those earlier
    /// batches gave back (a reclaim batch lives across awaits, so it cannot
    /// borrow a buffer of the kernel's; this saves an allocation and a free
    /// per batch).
    pub(crate) fn pfn_vec(&mut self) -> Vec<crate::mm::page::Pfn> {
        self.spare_pfn_vecs.pop().unwrap_or_default()
    }

    /// Gives a batch's vector back for the next batch.
    pub(crate) fn recycle_pfn_vec(&mut self, mut v: Vec<crate::mm::page::Pfn>) {
        v.clear();
        self.spare_pfn_vecs.push(v);
    }

    /// The running task.
    #[inline]
    pub fn current(&self) -> &Task {
        &self.tasks[self.exec.current() as usize]
    }

    /// The running task, mutably.
    #[inline]
    pub fn current_mut(&mut self) -> &mut Task {
        let t = self.exec.current() as usize;
        &mut self.tasks[t]
    }

    /// `current_is_kswapd()`
    #[inline]
    pub fn current_is_kswapd(&self) -> bool {
        self.current().is_kswapd()
    }

    /// Called by the executor when task `t`'s future finished: frees its
    /// memory (`exit_mmap`) and drops it from every queue.
    pub fn task_exited(&mut self, t: TaskId) {
        if self.tasks[t as usize].exited {
            return;
        }
        let maps = std::mem::take(&mut self.tasks[t as usize].mappings);
        for m in maps {
            self.munmap(m);
        }
        self.tasks[t as usize].exited = true;
        self.exec.sched[t as usize].exited = true;
        // A task that exits on its CPU hands it on (do_exit → schedule()).
        self.hand_on_cpu(t);
        self.cpus.forget(t);
    }

    /// A deterministic pseudo-random number (xorshift64*).
    pub fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Pages of the machine the kernel manages (MemTotal; what it
    /// reserved at boot is not simulated).
    pub fn total_pages(&self) -> u64 {
        self.frames.pages.len() as u64
    }
}
