//! reclaimlab's simulated kernel: page-level, deterministic Linux page
//! reclaim under every throttling generation.
//!
//! The crate reads like `mm/`: [`vmscan`] holds `shrink_node` and friends,
//! [`mm`] the allocator, faults, page cache and swap, [`writeback`] the
//! flusher and dirty throttling, [`block`] the devices, [`throttle`] every
//! sleep reclaim can take, and [`profile`] says which sleeps a kernel
//! generation takes where. Simulated tasks are `async fn`s run by the
//! deterministic executor in [`engine`]; [`sched`] makes CPUs a contended
//! resource.
//!
//! The simulation does no I/O: it emits `/proc/vmstat` snapshots and ftrace
//! text that the caller writes to a run record.
//!
//! ```
//! use reclaimlab_kernel::{boot, machine::Machine, params::Params, profile::profile, SimConfig};
//! let p = profile("v5.16").unwrap();
//! let cfg = SimConfig::new(Machine::load("small").unwrap(), p, Params::defaults(p), 1);
//! let w = boot(&cfg);
//! w.run_until(10_000_000);
//! assert!(w.k().exec.now() <= 10_000_000);
//! ```

#![deny(missing_docs)]
#![deny(clippy::await_holding_refcell_ref)]

pub mod block;
pub mod engine;
pub mod fs;
pub mod kernel;
pub mod machine;
pub mod mm;
pub mod params;
pub mod profile;
pub mod rate;
pub mod sched;
pub mod throttle;
pub mod trace;
pub mod vmscan;
pub mod vmstat;
pub mod writeback;

mod invariants;

use std::rc::Rc;

pub use engine::{Nanos, TaskId, World};
pub use kernel::{Kernel, Task, TaskKind};

/// Counters of throttling events, for summaries (the trace has the detail).
#[derive(Clone, Debug, Default)]
pub struct SimStats {
    /// `reclaim_throttle` sleeps by reason.
    pub throttled: [u64; profile::NR_VMSCAN_THROTTLE],
    /// `congestion_wait` calls.
    pub congestion_wait: u64,
    /// `wait_iff_congested` calls.
    pub wait_iff_congested: u64,
    /// `reclaim_throttle` calls `policy.rate_priority` let through, by reason.
    pub rate_passed: [u64; profile::NR_VMSCAN_THROTTLE],
    /// `wait_on_page_writeback` calls of cgroup v1 limit reclaim (case 3).
    pub wait_on_page_writeback: u64,
    /// Time they slept, ns.
    pub wait_on_page_writeback_ns: u64,
    /// kswapd naps skipped below the min watermark (2.6.36/2.6.37's
    /// `kswapd_skip_congestion_wait`; in vmstat only under a profile with
    /// `policy.kswapd_nap`).
    pub kswapd_skip_congestion_wait: u64,
}

/// Everything needed to boot a simulated kernel.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The machine.
    pub machine: machine::Machine,
    /// The throttling generation (a built-in profile, or one with some
    /// `policy.*` settings changed).
    pub profile: profile::KernelProfile,
    /// Tunables.
    pub params: params::Params,
    /// Random seed.
    pub seed: u64,
    /// Tracing.
    pub trace: trace::TraceConfig,
}

impl SimConfig {
    /// A configuration with default tracing.
    pub fn new(
        machine: machine::Machine,
        profile: &profile::KernelProfile,
        params: params::Params,
        seed: u64,
    ) -> SimConfig {
        SimConfig {
            machine,
            profile: profile.clone(),
            params,
            seed,
            trace: trace::TraceConfig::default(),
        }
    }
}

/// One step of xorshift64 (Marsaglia 2003): the workers' and readers' own
/// deterministic random offsets.
pub fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// Boots the kernel: kswapd per node, a flusher and an interrupt task per
/// device. Workloads then add user tasks with [`Kernel::new_task`] and
/// [`World::spawn`].
pub fn boot(cfg: &SimConfig) -> Rc<World> {
    let mut k = Kernel::new(
        cfg.machine.clone(),
        cfg.profile.clone(),
        cfg.params.clone(),
        cfg.seed,
    );
    k.trace_cfg = cfg.trace.clone();
    let w = World::new(k);
    let nodes = w.k().nodes.len();
    for nid in 0..nodes {
        let t = w.k().new_task(
            &format!("kswapd{nid}"),
            TaskKind::Kswapd(nid as u32),
            nid as u32,
        );
        w.k().nodes[nid].kswapd = Some(t);
        w.spawn(t, vmscan::kswapd(w.clone(), nid));
    }
    let devs = w.k().devs.len();
    for d in 0..devs {
        let t = w.k().new_task(
            &format!("kworker/u{}:{}+flush-8:{}", 2 * cfg.machine.cpus, d, d * 16),
            TaskKind::Kthread,
            0,
        );
        w.k().bdis[d].flusher = Some(t);
        w.spawn(t, writeback::flusher(w.clone(), d));
        let t = w
            .k()
            .new_task(&format!("kworker/{d}:1-bw"), TaskKind::Kthread, 0);
        w.spawn(t, writeback::bw_dwork(w.clone(), d));
        let name = format!("irq/{}", w.k().devs[d].name);
        let t = w.k().new_task(&name, TaskKind::Kthread, 0);
        w.spawn(t, block::device_irq(w.clone(), d));
        w.k().conversions.push(Default::default());
        let fs = cfg.machine.devices[d].fs;
        for i in 0..fs::ioend::conversion_workers(fs, cfg.machine.cpus) {
            let name = match fs {
                Some(machine::DataFs::Xfs) => {
                    format!("kworker/{i}:2-xfs-conv/{}", w.k().devs[d].name)
                }
                _ => format!("kworker/u{}:3-ext4-rsv-conversion", 2 * cfg.machine.cpus),
            };
            let t = w.k().new_task(&name, TaskKind::Kthread, 0);
            w.spawn(t, fs::ioend::conversion_worker(w.clone(), d));
        }
    }
    w
}
