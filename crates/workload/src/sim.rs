//! Drives a simulated kernel through a workload: boots it, starts the
//! workers of each step (writers first, for the warmup), samples
//! `/proc/vmstat`, drains tracepoint text and latency samples into a
//! [`Sink`], and reports per-task CPU time.
//!
//! Each step runs on a freshly booted machine (mmtests drops caches and
//! recreates its files between worker counts); steps follow each other on
//! one time base. The event counters of `/proc/vmstat` (`pgscan_*`,
//! `pgfault`, …) carry on from step to step, as they do on the one machine
//! mmtests runs all worker counts on, so a record's last row minus its first
//! is the whole run, as mmtests' Ops table takes it; gauges (`nr_*` states)
//! are each step's own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use reclaimlab_kernel::fs::xfs_icache::XfsStats;
use reclaimlab_kernel::mm::alloc::OomKill;
use reclaimlab_kernel::mm::memcontrol::MemCgroup;
use reclaimlab_kernel::{boot, SimConfig, TaskKind};

use crate::spec::{Spec, WorkerKind, WorkerSpec};
use crate::workers::{self, Samples};

/// One step of a simulated run.
#[derive(Clone, Debug)]
pub struct StepSpec {
    /// Step number (for stutterp: the worker count).
    pub step: u32,
    /// Workers.
    pub workers: Vec<WorkerSpec>,
    /// Seconds the warmup workers run alone.
    pub warmup_s: f64,
    /// Seconds measured after the warmup.
    pub duration_s: f64,
    /// Memory cgroups to create before the workers start (parents first).
    pub cgroups: Vec<reclaimlab_kernel::mm::memcontrol::MemcgSpec>,
}

/// Name of the cgroup a machine's `[workload_cgroup]` puts the workload in
/// (the real runner's is `reclaimlab-<pid>`).
pub const WORKLOAD_CGROUP: &str = "reclaimlab";

impl StepSpec {
    /// The single step of a generic spec.
    pub fn from_spec(spec: &Spec) -> StepSpec {
        StepSpec {
            step: 1,
            workers: spec.workers.clone(),
            warmup_s: spec.warmup_s,
            duration_s: spec.duration_s,
            cgroups: crate::cgroups::memcg_specs(&spec.cgroups, u64::MAX >> 20)
                .expect("Spec::check checked the cgroups"),
        }
    }
    /// Simulated seconds of this step.
    pub fn total_s(&self) -> f64 {
        self.warmup_s + self.duration_s
    }
}

/// Receives what a simulation produces.
pub trait Sink {
    /// The `/proc/vmstat` names, once, before any sample.
    fn vmstat_names(&mut self, names: &[&str]);
    /// One `/proc/vmstat` sample.
    fn vmstat(&mut self, t_s: f64, step: u32, values: &[u64]);
    /// Trace text (whole lines).
    fn trace(&mut self, text: &str);
    /// One latency sample.
    fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64);
}

/// CPU time of one task.
#[derive(Clone, Debug)]
pub struct TaskCpu {
    /// comm.
    pub comm: String,
    /// pid.
    pub pid: u32,
    /// Step.
    pub step: u32,
    /// User seconds.
    pub user_s: f64,
    /// System seconds.
    pub system_s: f64,
    /// Pages it allocated and pages it freed (see `reclaimlab_kernel::rate`).
    pub pages: (u64, u64),
    /// Kernel thread.
    pub kthread: bool,
}

/// What a run leaves besides the sink's data.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// Per step: (step, start_s, end_s).
    pub steps: Vec<(u32, f64, f64)>,
    /// Per-task CPU.
    pub tasks: Vec<TaskCpu>,
    /// User seconds of the workload's processes (mmtests' Duration User).
    pub user_s: f64,
    /// System seconds of the workload's processes.
    pub system_s: f64,
    /// Seconds every task, kswapd included, spun on `lru_lock` (system
    /// time; 0 unless `lru_lock.page_ns` is set).
    pub lru_lock_spin_s: f64,
    /// Simulated seconds.
    pub elapsed_s: f64,
    /// Executor events processed.
    pub events: u64,
    /// Trace lines emitted.
    pub trace_lines: u64,
    /// `reclaim_throttle` sleeps `policy.rate_priority` let through, by
    /// reason (`Reason as usize`; no trace line shows them).
    pub rate_passed: [u64; 4],
    /// Invariant violation found by the end-of-step check, if any.
    pub invariant_error: Option<String>,
    /// The `stop` flag of [`run_with_stop`] cut the run short: the sink holds
    /// only part of the run and the summary describes only that part.
    pub interrupted: bool,
    /// Memory cgroups other than the root, their counters summed over the
    /// steps (each step boots a fresh machine) and the peak the largest.
    pub cgroups: Vec<MemCgroup>,
    /// Every OOM kill: step, the kill, the victim's cgroup name.
    pub oom_kills: Vec<(u32, OomKill, String)>,
    /// `wait_on_page_writeback` calls of cgroup v1 limit reclaim, and ns.
    pub writeback_waits: (u64, u64),
    /// XFS inode reclaim counters, summed over steps and mounts.
    pub xfs: XfsStats,
}

const NS: f64 = 1e9;

/// Starts the processes of one worker entry.
fn start_workers(
    w: &Rc<reclaimlab_kernel::World>,
    spec: &WorkerSpec,
    samples: &Samples,
    done: &Rc<Cell<u32>>,
    nr: &mut u32,
) {
    // The worker's own device, else the machine's data device.
    let data_dev = {
        let k = w.k();
        spec.device
            .as_ref()
            .and_then(|d| k.machine.devices.iter().position(|x| &x.name == d))
            .unwrap_or_else(|| k.machine.data_dev())
    };
    let file_pages = (spec.file_mib * 256) as u32;
    // The worker's files on the data device, mapped for mmap readers.
    let new_files = || -> Vec<u32> {
        (0..spec.files)
            .map(|_| {
                let mut k = w.k();
                let f = k.create_file(data_dev, file_pages);
                k.files[f as usize].sparse = spec.sparse;
                if spec.kind == WorkerKind::FileWriter && spec.fallocate && !spec.sparse {
                    k.fallocate(f);
                }
                if spec.kind == WorkerKind::MmapFileReader {
                    k.mmap_file(f);
                }
                f
            })
            .collect()
    };
    // Readers of a shared mapping share one set of files; others get their own.
    let shared: Vec<u32> = if spec.kind == WorkerKind::MmapFileReader && spec.shared {
        new_files()
    } else {
        Vec::new()
    };
    for _ in 0..spec.count {
        *nr += 1;
        let comm = match spec.kind {
            WorkerKind::AnonHog => "memory-hog",
            WorkerKind::FileWriter | WorkerKind::FileReader => "fio",
            WorkerKind::MmapLatency => "mmap-latency",
            WorkerKind::MmapFileReader => "mapped-file-stream",
            WorkerKind::Mlock => "mlock",
            WorkerKind::FsCreate => "fs_mark",
        };
        let nid = *nr % w.k().machine.nodes;
        let t = w.k().new_task(comm, TaskKind::User, nid);
        {
            let mut k = w.k();
            let name = spec
                .cgroup
                .as_deref()
                .or_else(|| k.machine.workload_cgroup.as_ref().map(|_| WORKLOAD_CGROUP));
            if let Some(name) = name {
                let id = k
                    .memcg_by_name(name)
                    .expect("the step's cgroups are created before its workers");
                k.tasks[t as usize].memcg = id;
            }
        }
        {
            let mut k = w.k();
            if k.params.program_text != 0 && k.machine.program_text {
                let pages = crate::text::hot_pages(&mut k, spec.kind);
                if !pages.is_empty() {
                    let (fast, period) = crate::text::hot_period(spec.kind);
                    k.set_task_text(t, pages, fast, period);
                }
            }
        }
        let seed = w.k().random() | 1;
        match spec.kind {
            WorkerKind::AnonHog => {
                let pages = (spec.size_mib * 256).min(u64::from(u32::MAX / 2)) as u32;
                w.spawn(t, workers::anon_hog(w.clone(), pages));
            }
            WorkerKind::FileWriter | WorkerKind::FileReader => {
                let files = new_files();
                let block = (spec.block_kib / 4) as u32;
                if spec.kind == WorkerKind::FileWriter {
                    w.spawn(
                        t,
                        workers::file_writer(
                            w.clone(),
                            files,
                            file_pages,
                            block,
                            spec.pattern,
                            spec.invalidate,
                            seed,
                        ),
                    );
                } else {
                    w.spawn(
                        t,
                        workers::file_reader(
                            w.clone(),
                            files,
                            file_pages,
                            block,
                            seed,
                            spec.pattern,
                            spec.passes,
                            samples.clone(),
                            done.clone(),
                        ),
                    );
                }
            }
            WorkerKind::Mlock => {
                let pages = (spec.size_mib * 256).min(u64::from(u32::MAX / 2)) as u32;
                let step = (u64::from(spec.step_mib) * 256).min(u64::from(pages)) as u32;
                let interval_ns = (spec.step_interval_s * 1e9) as u64;
                w.spawn(
                    t,
                    workers::mlock_worker(w.clone(), pages, step, interval_ns, samples.clone()),
                );
            }
            WorkerKind::MmapLatency => {
                w.spawn(
                    t,
                    workers::mmap_latency(w.clone(), spec.pages, spec.sleep_ms, samples.clone()),
                );
            }
            WorkerKind::FsCreate => {
                let sb = reclaimlab_kernel::fs::mount(w, data_dev);
                w.spawn(
                    t,
                    workers::fs_create(
                        w.clone(),
                        sb,
                        nr.wrapping_mul(spec.dirs),
                        spec.dirs,
                        spec.files,
                        samples.clone(),
                        done.clone(),
                    ),
                );
            }
            WorkerKind::MmapFileReader => {
                let files = if spec.shared {
                    shared.clone()
                } else {
                    new_files()
                };
                w.spawn(
                    t,
                    workers::mmap_file_reader(
                        w.clone(),
                        files,
                        file_pages,
                        spec.pattern,
                        seed,
                        spec.passes,
                        samples.clone(),
                        done.clone(),
                    ),
                );
            }
        }
    }
}

/// Runs `steps` on machines booted from `cfg`, feeding `sink`. `progress` is
/// called with the simulated seconds done so far. If `check_invariants` is
/// set, the kernel's invariants are checked at every vmstat sample.
pub fn run(
    cfg: &SimConfig,
    steps: &[StepSpec],
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(f64),
    check_invariants: bool,
) -> RunSummary {
    run_with_stop(
        cfg,
        steps,
        sink,
        progress,
        check_invariants,
        &AtomicBool::new(false),
    )
}

/// [`run`], stopping early once `stop` is set (by a signal handler, say): it
/// is checked before each step and after every vmstat sample, so a run stops
/// within one `sim.vmstat_interval_ms` of simulated time. A stopped run has
/// [`RunSummary::interrupted`] set; what the sink got is then incomplete.
pub fn run_with_stop(
    cfg: &SimConfig,
    steps: &[StepSpec],
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(f64),
    check_invariants: bool,
    stop: &AtomicBool,
) -> RunSummary {
    let mut summary = RunSummary::default();
    let mut carry = Carry::new(sink);
    let mut base_ns: u64 = 0;
    for st in steps {
        if stop.load(Ordering::Relaxed) {
            summary.interrupted = true;
            break;
        }
        let r = run_step(
            cfg,
            st,
            base_ns,
            &mut carry,
            progress,
            check_invariants,
            stop,
        );
        carry.step_done(&r.last_events);
        base_ns = r.end_ns;
        summary.add_step(r);
        if summary.interrupted {
            break;
        }
    }
    summary
}

/// A [`Sink`] in front of another that passes on the vmstat names once and
/// adds to each step's event counters those the steps before it ended with
/// (see the module comment): what joins steps simulated apart into one run.
pub struct Carry<S> {
    /// The sink fed.
    pub inner: S,
    names_sent: bool,
    /// Index of the first event counter (the gauges come first).
    first_event: usize,
    carried: Vec<u64>,
    row: Vec<u64>,
}

impl<S: Sink> Carry<S> {
    /// Carries nothing yet.
    pub fn new(inner: S) -> Carry<S> {
        Carry {
            inner,
            names_sent: false,
            first_event: reclaimlab_kernel::vmstat::GAUGE_NAMES.len(),
            carried: Vec::new(),
            row: Vec::new(),
        }
    }

    /// A step ended with these event counters (its own, as [`run_step`]
    /// reports them): the next step's are added to them.
    pub fn step_done(&mut self, last_events: &[u64]) {
        self.carried
            .resize(last_events.len().max(self.carried.len()), 0);
        for (c, e) in self.carried.iter_mut().zip(last_events) {
            *c += e;
        }
    }
}

impl<S: Sink> Sink for Carry<S> {
    fn vmstat_names(&mut self, names: &[&str]) {
        if !self.names_sent {
            self.inner.vmstat_names(names);
            self.names_sent = true;
        }
    }
    fn vmstat(&mut self, t_s: f64, step: u32, values: &[u64]) {
        self.row.clear();
        self.row.extend_from_slice(values);
        let events = self.row.get_mut(self.first_event..).unwrap_or_default();
        for (x, c) in events.iter_mut().zip(&self.carried) {
            *x += c;
        }
        self.inner.vmstat(t_s, step, &self.row);
    }
    fn trace(&mut self, text: &str) {
        self.inner.trace(text);
    }
    fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64) {
        self.inner.latency(step, metric, t_s, value_us);
    }
}

impl<T: Sink + ?Sized> Sink for &mut T {
    fn vmstat_names(&mut self, names: &[&str]) {
        (**self).vmstat_names(names);
    }
    fn vmstat(&mut self, t_s: f64, step: u32, values: &[u64]) {
        (**self).vmstat(t_s, step, values);
    }
    fn trace(&mut self, text: &str) {
        (**self).trace(text);
    }
    fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64) {
        (**self).latency(step, metric, t_s, value_us);
    }
}

/// What one step leaves besides the sink's data.
#[derive(Clone, Debug, Default)]
pub struct StepResult {
    /// The step.
    pub step: u32,
    /// Start and end, ns on the run's time base.
    pub start_ns: u64,
    /// End (its last sample).
    pub end_ns: u64,
    /// Per-task CPU (the run's user and system seconds are summed from
    /// these, see [`RunSummary::add_step`]).
    pub tasks: Vec<TaskCpu>,
    /// As in [`RunSummary`], this step's part.
    pub lru_lock_spin_s: f64,
    /// As in [`RunSummary`].
    pub events: u64,
    /// As in [`RunSummary`].
    pub trace_lines: u64,
    /// As in [`RunSummary`].
    pub rate_passed: [u64; 4],
    /// As in [`RunSummary`].
    pub invariant_error: Option<String>,
    /// As in [`RunSummary`].
    pub interrupted: bool,
    /// The step's own event counters at its last sample (the vmstat values
    /// after the gauges).
    pub last_events: Vec<u64>,
    /// The memory cgroups at the step's end (the root's first).
    pub cgroups: Vec<MemCgroup>,
    /// OOM kills of the step, each with its victim's cgroup name.
    pub oom_kills: Vec<(OomKill, String)>,
    /// `wait_on_page_writeback` calls of cgroup v1 limit reclaim, and ns.
    pub writeback_waits: (u64, u64),
    /// XFS inode reclaim counters, summed over the step's mounts.
    pub xfs: XfsStats,
}

impl RunSummary {
    /// Adds a step, the one after those added before.
    pub fn add_step(&mut self, r: StepResult) {
        self.steps
            .push((r.step, r.start_ns as f64 / NS, r.end_ns as f64 / NS));
        // Task by task, in order, as one sum over the run: the same bits
        // whichever way the steps were run.
        for t in r.tasks.iter().filter(|t| !t.kthread) {
            self.user_s += t.user_s;
            self.system_s += t.system_s;
        }
        self.tasks.extend(r.tasks);
        self.lru_lock_spin_s += r.lru_lock_spin_s;
        self.events += r.events;
        self.trace_lines += r.trace_lines;
        for (a, b) in self.rate_passed.iter_mut().zip(r.rate_passed) {
            *a += b;
        }
        if self.invariant_error.is_none() {
            self.invariant_error = r.invariant_error;
        }
        self.interrupted |= r.interrupted;
        self.elapsed_s = r.end_ns as f64 / NS;
        for c in r.cgroups.into_iter().skip(1) {
            match self.cgroups.iter_mut().find(|a| a.name == c.name) {
                Some(a) => {
                    a.peak = a.peak.max(c.peak);
                    for (x, y) in a.events.iter_mut().zip(c.events) {
                        *x += y;
                    }
                    for (x, y) in a.vm.iter_mut().zip(c.vm) {
                        *x += y;
                    }
                    a.high_delay_ns += c.high_delay_ns;
                }
                None => self.cgroups.push(c),
            }
        }
        let step = r.step;
        self.oom_kills
            .extend(r.oom_kills.into_iter().map(|(o, n)| (step, o, n)));
        self.xfs.add(&r.xfs);
        self.writeback_waits.0 += r.writeback_waits.0;
        self.writeback_waits.1 += r.writeback_waits.1;
    }
}

/// Where each step starts on the run's time base, if that is known before
/// they run: a step ends early only when its finite workers are done
/// (`passes`), so only a step before the last with such workers makes the
/// next one wait for it (`None`). Steps with known starts can be simulated
/// apart, in any order, and joined with [`Carry`].
pub fn step_starts(steps: &[StepSpec]) -> Option<Vec<u64>> {
    let mut base = 0u64;
    let mut out = Vec::with_capacity(steps.len());
    for (i, st) in steps.iter().enumerate() {
        out.push(base);
        if st.workers.iter().any(WorkerSpec::is_finite) && i + 1 < steps.len() {
            return None;
        }
        // As `run_step` computes its end.
        base += (st.warmup_s * NS) as u64 + (st.duration_s * NS) as u64;
    }
    Some(out)
}

/// Simulates one step on a machine booted from `cfg`, from `base_ns` on the
/// run's time base, feeding `sink` the vmstat names, this step's own
/// counters (events from 0: see [`Carry`]), trace text and latency samples.
/// `progress` gets the simulated seconds of the time base reached.
pub fn run_step(
    cfg: &SimConfig,
    st: &StepSpec,
    base_ns: u64,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(f64),
    check_invariants: bool,
    stop: &AtomicBool,
) -> StepResult {
    let first_event = reclaimlab_kernel::vmstat::GAUGE_NAMES.len();
    let mut r = StepResult {
        step: st.step,
        start_ns: base_ns,
        ..StepResult::default()
    };
    let w = boot(cfg);
    w.k().exec.start_at(base_ns);
    {
        // The machine's workload cgroup holds the spec's cgroups.
        let mut cgroups = Vec::new();
        if let Some(wc) = &cfg.machine.workload_cgroup {
            let mut c = reclaimlab_kernel::mm::memcontrol::MemcgSpec::new(WORKLOAD_CGROUP);
            c.max = wc.memory_max_mib * 256;
            cgroups.push(c);
        }
        for c in &st.cgroups {
            let mut c = c.clone();
            if cfg.machine.workload_cgroup.is_some() && c.parent.is_none() {
                c.parent = Some(WORKLOAD_CGROUP.into());
            }
            cgroups.push(c);
        }
        w.k()
            .mem_cgroup_create(&cgroups)
            .expect("cgroups were checked with the spec");
    }
    if w.k().params.program_text != 0 && w.k().machine.program_text {
        // The workers' programs, in the page cache as the booted system
        // left them (crate::text).
        crate::text::load_images(&mut w.k(), st.workers.iter().map(|s| s.kind));
    }
    let samples: Samples = Rc::new(RefCell::new(Vec::new()));
    // Workers with a finite amount of work end the step when all are done.
    let done = Rc::new(Cell::new(0u32));
    let finite: u32 = st
        .workers
        .iter()
        .filter(|s| s.is_finite())
        .map(|s| s.count)
        .sum();
    let mut nr = 0;
    sink.vmstat_names(&w.k().vmstat_names());
    let interval = w.k().params.vmstat_interval_ms * 1_000_000;
    let warmup_end = base_ns + (st.warmup_s * NS) as u64;
    let end = warmup_end + (st.duration_s * NS) as u64;
    for spec in st
        .workers
        .iter()
        .filter(|s| s.starts_in_warmup() && st.warmup_s > 0.0)
    {
        start_workers(&w, spec, &samples, &done, &mut nr);
    }
    let mut started_rest = st.warmup_s <= 0.0;
    if started_rest {
        for spec in &st.workers {
            start_workers(&w, spec, &samples, &done, &mut nr);
        }
    }
    let mut t = base_ns;
    sink.vmstat(t as f64 / NS, st.step, &w.k().vmstat_values());
    while t < end {
        let mut next = (t + interval).min(end);
        if !started_rest && next > warmup_end {
            next = warmup_end;
        }
        w.run_until(next);
        t = next;
        if !started_rest && t >= warmup_end {
            for spec in st.workers.iter().filter(|s| !s.starts_in_warmup()) {
                start_workers(&w, spec, &samples, &done, &mut nr);
            }
            started_rest = true;
        }
        let mut k = w.k();
        let text = k.take_trace();
        if !text.is_empty() {
            sink.trace(&text);
        }
        for (metric, at, us) in samples.borrow_mut().drain(..) {
            sink.latency(st.step, metric, at as f64 / NS, us);
        }
        let v = k.vmstat_values();
        sink.vmstat(t as f64 / NS, st.step, &v);
        r.last_events.clear();
        r.last_events.extend_from_slice(&v[first_event..]);
        if check_invariants && r.invariant_error.is_none() {
            if let Err(e) = k.check_invariants() {
                r.invariant_error = Some(format!("t={:.3}s: {e}", t as f64 / NS));
            }
        }
        drop(k);
        progress(t as f64 / NS);
        if finite > 0 && done.get() >= finite {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            r.interrupted = true;
            break;
        }
    }
    // The step ends at its last sample (early if its finite work is done).
    r.end_ns = t;
    let k = w.k();
    if r.last_events.is_empty() {
        r.last_events = k.vmstat_values()[first_event..].to_vec();
    }
    for task in &k.tasks {
        let kthread = task.kind != TaskKind::User;
        // CPU work charged but not yet paid for when the step ended
        // counts too: it was done, only its CPU slot was still pending.
        let (u, s) = (
            (task.user_ns + task.cpu_debt_user) as f64 / NS,
            (task.sys_ns + task.cpu_debt_sys) as f64 / NS,
        );
        r.lru_lock_spin_s += task.lru_lock_spin_ns as f64 / NS;
        r.tasks.push(TaskCpu {
            comm: task.comm.clone(),
            pid: task.pid,
            step: st.step,
            user_s: u,
            system_s: s,
            pages: (task.rate.alloc, task.rate.freed),
            kthread,
        });
    }
    r.events = k.exec.events;
    r.trace_lines = k.trace_lines;
    r.cgroups = k.memcgs.clone();
    r.oom_kills = k
        .oom_kills
        .iter()
        .map(|o| (o.clone(), k.memcgs[o.memcg as usize].name.clone()))
        .collect();
    r.writeback_waits = (
        k.stats.wait_on_page_writeback,
        k.stats.wait_on_page_writeback_ns,
    );
    r.rate_passed = k.stats.rate_passed;
    for s in &k.supers {
        r.xfs.add(&s.xfs.stats);
    }
    drop(k);
    // Task futures hold the world: drop them to free the step's machine.
    w.shutdown();
    drop(w);
    r
}

/// The steps of stutterp on `machine` (see [`crate::stutterp`]): per worker
/// count, fio random writers (W files each, of `WSS_PER_WRITER` as fio ran
/// the job file, or together `WSS_FILE` as the letters describe it:
/// `stutterp.file_set`), anon hogs, the optional reader, one mmap-latency worker; writers
/// warm up alone for the time a 5 GiB `dd` would take on the data device
/// (computed from its write bandwidth, not simulated) plus 5 s.
pub fn stutterp_steps(
    p: &crate::stutterp::StutterpParams,
    machine: &reclaimlab_kernel::machine::Machine,
    dirty_ratio: u32,
) -> Result<Vec<StepSpec>, crate::stutterp::ParamError> {
    use crate::spec::WorkerKind as K;
    // Sized to the memory the workload may use: its cgroup's limit, as
    // `run --memory` sizes it.
    let sizing = p.sizing(machine.workload_memory_bytes(), dirty_ratio)?;
    let dev = &machine.devices[machine.data_dev()];
    let calib_s = p.calibrate_mib as f64 * 1.048_576 / dev.write_mb_s;
    let warmup = p.warmup_from_calibration(calib_s) as f64;
    let mut steps = Vec::new();
    for t in p.worker_counts(machine.cpus)? {
        let plan = p.step(&sizing, t)?;
        let w = plan.split.writers;
        let mut writer = WorkerSpec::new(K::FileWriter);
        writer.count = w;
        writer.files = u64::from(w);
        writer.file_mib = p.writer_file_mib(&plan);
        writer.block_kib = (p.writer_bs / 1024).min(writer.file_mib * 1024).max(4);
        let mut hog = WorkerSpec::new(K::AnonHog);
        hog.count = plan.split.hogs;
        hog.size_mib = plan.wss_per_memhog_mib;
        let mut lat = WorkerSpec::new(K::MmapLatency);
        lat.pages = p.mmap_pages as u32;
        lat.sleep_ms = p.sleep_ms;
        let mut workers = vec![writer, hog, lat];
        if plan.split.readers > 0 {
            let mut r = WorkerSpec::new(K::FileReader);
            r.count = plan.split.readers;
            r.files = 32;
            r.file_mib = 100;
            r.block_kib = p.writer_bs / 1024;
            workers.push(r);
        }
        steps.push(StepSpec {
            step: t,
            workers,
            warmup_s: warmup,
            duration_s: p.duration_s as f64,
            cgroups: Vec::new(),
        });
    }
    Ok(steps)
}
