//! A `sim`'s runs put together from steps simulated apart.
//!
//! Each step of a run boots its own machine (see `reclaimlab_workload::sim`),
//! so the steps of all runs are independent jobs for the thread pool
//! (`sim_pool`); only their output must reach each record in step order. A
//! finished step waits in a [`StepBuffer`] (vmstat rows and latency samples
//! as they are, the trace as gzip members: about a tenth of its text) until
//! the steps before it are in; then its [`Assembly`] writes it, adding the
//! event counters the steps before it ended with ([`Carry`]). The bytes of a
//! record depend only on the run, never on which thread ran which step or
//! when: each step's trace is cut into gzip members on its own (so a
//! record's members start afresh at each step).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use reclaimlab_record::writer::TRACE_GZIP_LEVEL;
use reclaimlab_record::{GzMembers, RecordWriter, RunMeta};
use reclaimlab_workload::sim::{Carry, RunSummary, Sink, StepResult};

/// The error of a simulation stopped by a signal (its partial record is gone).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// What one simulation gave: its record's path and summary.
pub type Outcome = anyhow::Result<(PathBuf, RunSummary)>;

/// One step's output, held until the steps before it are written.
pub struct StepBuffer {
    names: Vec<String>,
    rows: Vec<(f64, u32, Vec<u64>)>,
    latency: Vec<(u32, String, f64, f64)>,
    trace: GzMembers,
    err: Option<std::io::Error>,
}

impl StepBuffer {
    /// Empty.
    pub fn new() -> StepBuffer {
        StepBuffer {
            names: Vec::new(),
            rows: Vec::new(),
            latency: Vec::new(),
            trace: GzMembers::new(TRACE_GZIP_LEVEL),
            err: None,
        }
    }
}

impl Sink for StepBuffer {
    fn vmstat_names(&mut self, names: &[&str]) {
        self.names = names.iter().map(|n| n.to_string()).collect();
    }
    fn vmstat(&mut self, t_s: f64, step: u32, values: &[u64]) {
        self.rows.push((t_s, step, values.to_vec()));
    }
    fn trace(&mut self, text: &str) {
        if let (Err(e), None) = (self.trace.push(text.as_bytes()), &self.err) {
            self.err = Some(e);
        }
    }
    fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64) {
        self.latency.push((step, metric.to_string(), t_s, value_us));
    }
}

/// A [`Sink`] writing a run record; remembers the first write error.
pub struct RecordSink {
    pub w: RecordWriter,
    pub err: Option<anyhow::Error>,
}

impl RecordSink {
    fn check(&mut self, r: Result<(), reclaimlab_record::RecordError>) {
        if let (Err(e), None) = (r, &self.err) {
            self.err = Some(e.into());
        }
    }

    /// Appends trace text compressed elsewhere.
    fn trace_members(&mut self, members: Vec<u8>, lines: u64) {
        let r = self.w.trace_members(members, lines);
        self.check(r);
    }
}

impl Sink for RecordSink {
    fn vmstat_names(&mut self, names: &[&str]) {
        let r = self.w.vmstat_header(names);
        self.check(r);
    }
    fn vmstat(&mut self, t_s: f64, step: u32, values: &[u64]) {
        let r = self.w.vmstat_row(t_s, step, values);
        self.check(r);
    }
    fn trace(&mut self, text: &str) {
        let r = self.w.trace_bytes(text.as_bytes());
        self.check(r);
    }
    fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64) {
        let r = self.w.latency(step, metric, t_s, value_us);
        self.check(r);
    }
}

/// One run's record, written step by step as the steps come in.
pub struct Assembly {
    name: String,
    dir: PathBuf,
    steps: usize,
    /// The record being written (created when the first step starts).
    sink: Option<Carry<RecordSink>>,
    meta: Option<RunMeta>,
    next: usize,
    waiting: BTreeMap<usize, (StepBuffer, StepResult)>,
    summary: RunSummary,
    /// Seconds of one core its steps took.
    pub wall_s: f64,
    /// Set once: the record, or why there is none.
    pub outcome: Option<Outcome>,
}

impl Assembly {
    /// A run of `steps` steps, to be written to `dir` with `meta`.
    pub fn new(name: &str, dir: &Path, meta: RunMeta, steps: usize) -> Assembly {
        Assembly {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            steps,
            sink: None,
            meta: Some(meta),
            next: 0,
            waiting: BTreeMap::new(),
            summary: RunSummary::default(),
            wall_s: 0.0,
            outcome: None,
        }
    }

    /// Whether its steps need running still (no outcome yet).
    pub fn wanted(&self) -> bool {
        self.outcome.is_none()
    }

    /// Creates the record's partial directory, if not done yet: before the
    /// run's first step starts, so that a record that cannot be written
    /// fails before any simulating, and the directory says from the start
    /// that the run is under way (its lock keeps other writers off).
    /// Returns whether the run is still wanted.
    pub fn start(&mut self) -> bool {
        if self.sink.is_none() && self.outcome.is_none() {
            let meta = self.meta.take().expect("meta until the writer exists");
            match RecordWriter::create(&self.dir, meta) {
                Ok(w) => self.sink = Some(Carry::new(RecordSink { w, err: None })),
                Err(e) => {
                    let e = anyhow::Error::new(e).context(format!(
                        "cannot create the run record {}",
                        self.dir.display()
                    ));
                    self.fail(e);
                }
            }
        }
        self.wanted()
    }

    /// Ends the run without a record (dropping the writer removes its
    /// partial directory).
    pub fn fail(&mut self, e: anyhow::Error) {
        self.sink = None;
        self.waiting.clear();
        if self.outcome.is_none() {
            self.outcome = Some(Err(e));
        }
    }

    /// Step `k` finished: writes it and every step after it that is
    /// waiting, and finishes the record after the last.
    pub fn add(&mut self, k: usize, buf: StepBuffer, r: StepResult) {
        if self.outcome.is_some() {
            return;
        }
        self.waiting.insert(k, (buf, r));
        while let Some((buf, r)) = self.waiting.remove(&self.next) {
            if let Err(e) = self.write_step(buf, r) {
                return self.fail(e);
            }
            self.next += 1;
        }
        if self.next == self.steps {
            let outcome = self.finish();
            self.outcome = Some(outcome);
        }
    }

    fn write_step(&mut self, buf: StepBuffer, r: StepResult) -> anyhow::Result<()> {
        if r.interrupted {
            bail!(Interrupted);
        }
        if let Some(e) = buf.err {
            return Err(e).context("compressing the trace");
        }
        if !self.start() {
            bail!("the record was not created");
        }
        let sink = self.sink.as_mut().expect("started");
        let names: Vec<&str> = buf.names.iter().map(String::as_str).collect();
        sink.vmstat_names(&names);
        for (t_s, step, values) in &buf.rows {
            sink.vmstat(*t_s, *step, values);
        }
        for (step, metric, t_s, us) in &buf.latency {
            sink.latency(*step, metric, *t_s, *us);
        }
        let (members, lines) = buf.trace.finish().context("compressing the trace")?;
        sink.inner.trace_members(members, lines);
        if let Some(e) = sink.inner.err.take() {
            return Err(e.context(format!("writing the run record {}", self.dir.display())));
        }
        sink.step_done(&r.last_events);
        self.summary.add_step(r);
        Ok(())
    }

    fn finish(&mut self) -> Outcome {
        let summary = std::mem::take(&mut self.summary);
        if let Some(e) = &summary.invariant_error {
            bail!(
                "{}: kernel invariant violated: {e} (please report this as a bug)",
                self.name
            );
        }
        let Some(sink) = self.sink.take() else {
            bail!("{}: no step was simulated", self.name);
        };
        let mut w = sink.inner.w;
        let m = w.meta_mut();
        m.steps = summary
            .steps
            .iter()
            .map(|&(step, start_s, end_s)| reclaimlab_record::Step {
                step,
                start_s,
                end_s,
            })
            .collect();
        m.duration = reclaimlab_record::Duration {
            user_s: summary.user_s,
            system_s: summary.system_s,
            elapsed_s: summary.elapsed_s,
        };
        if summary.lru_lock_spin_s > 0.0 {
            m.capture.notes.push(format!(
                "lru_lock modelled (lru_lock.page_ns, lru_lock.handoff_ns in params): {:.3} s of system time spun on it, kswapd included",
                summary.lru_lock_spin_s
            ));
        }
        if let Some(note) = rate_note(&summary.rate_passed) {
            m.capture.notes.push(note);
        }
        m.tasks = summary
            .tasks
            .iter()
            .map(|t| reclaimlab_record::TaskTime {
                comm: t.comm.clone(),
                pid: t.pid,
                step: Some(t.step),
                user_s: t.user_s,
                system_s: t.system_s,
                pages_allocated: Some(t.pages.0),
                pages_freed: Some(t.pages.1),
            })
            .collect();
        m.cgroups = summary
            .cgroups
            .iter()
            .map(|c| cgroup_record(c, &summary.cgroups))
            .collect();
        m.oom_kills = summary
            .oom_kills
            .iter()
            .map(|(step, o, cg)| reclaimlab_record::OomKillRecord {
                t_s: o.t_ns as f64 / 1e9,
                step: Some(*step),
                pid: o.pid,
                comm: o.comm.clone(),
                cgroup: cg.clone(),
                constraint: o.constraint.to_string(),
                victim_kib: o.victim_pages * 4,
                free_kib: o.free_pages * 4,
                reason: o.reason.clone(),
                source: String::new(),
            })
            .collect();
        // What the report shows of cgroups and OOM kills: notes (the
        // structured data is in run.json's `cgroups` and `oom_kills`).
        for c in &m.cgroups {
            let mib = |b: Option<u64>| b.map_or("max".to_string(), |b| format!("{} MiB", b >> 20));
            let ev: Vec<String> = c
                .events
                .iter()
                .filter(|(_, v)| **v > 0)
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            m.capture.notes.push(format!(
                "cgroup `{}`: memory.max {}, memory.high {}, peak {} MiB, memory.events: {}{}",
                c.name,
                mib(c.max_bytes),
                mib(c.high_bytes),
                c.peak_bytes >> 20,
                if ev.is_empty() {
                    "none".to_string()
                } else {
                    ev.join(", ")
                },
                if c.high_delay_s > 0.0 {
                    format!(", {:.3} s in the memory.high penalty", c.high_delay_s)
                } else {
                    String::new()
                }
            ));
        }
        const OOM_NOTES: usize = 20;
        for o in m.oom_kills.iter().take(OOM_NOTES) {
            m.capture.notes.push(format!(
                "OOM kill at {:.3} s (step {}): pid {} ({}) in cgroup `{}`, {}, victim {} MiB, {} MiB free; {}",
                o.t_s,
                o.step.unwrap_or(0),
                o.pid,
                o.comm,
                if o.cgroup.is_empty() { "/" } else { &o.cgroup },
                o.constraint,
                o.victim_kib >> 10,
                o.free_kib >> 10,
                o.reason
            ));
        }
        if m.oom_kills.len() > OOM_NOTES {
            m.capture.notes.push(format!(
                "{} more OOM kills (run.json oom_kills lists every one)",
                m.oom_kills.len() - OOM_NOTES
            ));
        }
        if summary.writeback_waits.0 > 0 {
            m.capture.notes.push(format!(
                "cgroup v1 limit reclaim waited on pages under writeback (wait_on_page_writeback, no tracepoint) {} times, {:.3} s in all",
                summary.writeback_waits.0,
                summary.writeback_waits.1 as f64 / 1e9
            ));
        }
        let path = w
            .finish()
            .with_context(|| format!("cannot finish the run record {}", self.dir.display()))?;
        Ok((path, summary))
    }
}

/// A simulated memory cgroup as the run record keeps it.
fn cgroup_record(
    c: &reclaimlab_kernel::mm::memcontrol::MemCgroup,
    all: &[reclaimlab_kernel::mm::memcontrol::MemCgroup],
) -> reclaimlab_record::CgroupRecord {
    use reclaimlab_kernel::mm::memcontrol::{MEMCG_EVENT_NAMES, MEMCG_VM_NAMES, PAGE_COUNTER_MAX};
    let limit = |p: u64| (p != PAGE_COUNTER_MAX).then_some(p * 4096);
    reclaimlab_record::CgroupRecord {
        name: c.name.clone(),
        // Ids count the root first; `all` leaves it out.
        parent: c
            .parent
            .filter(|&p| p > 0)
            .and_then(|p| all.get(p as usize - 1))
            .map(|p| p.name.clone())
            .unwrap_or_default(),
        max_bytes: limit(c.max),
        high_bytes: limit(c.high),
        low_bytes: c.low * 4096,
        min_bytes: c.min * 4096,
        peak_bytes: c.peak * 4096,
        stat: MEMCG_VM_NAMES
            .iter()
            .zip(c.vm)
            .map(|(n, v)| (n.to_string(), v))
            .collect(),
        events: MEMCG_EVENT_NAMES
            .iter()
            .zip(c.events)
            .map(|(n, v)| (n.to_string(), v))
            .collect(),
        high_delay_s: c.high_delay_ns as f64 / 1e9,
    }
}

/// What `policy.rate_priority` did, which no trace line shows: the
/// `reclaim_throttle` sleeps it let through, by reason.
pub fn rate_note(passed: &[u64; 4]) -> Option<String> {
    use reclaimlab_kernel::profile::Reason;
    let total: u64 = passed.iter().sum();
    if total == 0 {
        return None;
    }
    let reasons = [
        Reason::Writeback,
        Reason::Isolated,
        Reason::Noprogress,
        Reason::Congested,
    ];
    let by: Vec<String> = reasons
        .iter()
        .filter(|r| passed[**r as usize] > 0)
        .map(|r| format!("{} {}", r.name(), passed[*r as usize]))
        .collect();
    Some(format!(
        "policy.rate_priority let {total} reclaim_throttle sleep(s) through, not traced ({})",
        by.join(", ")
    ))
}

/// A 96 MiB machine with a slow disk: small steps that still reclaim.
#[cfg(test)]
pub(crate) fn tiny_machine() -> reclaimlab_kernel::machine::Machine {
    reclaimlab_kernel::machine::Machine::from_toml(
        "name='t'\ncpus=2\nmemory_mib=96\nswap_mib=64\n[[devices]]\nname='sda'\nwrite_mb_s=40\nread_mb_s=80\nlatency_us=100\n",
        "t",
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_kernel::params::Params;
    use reclaimlab_kernel::profile::profile;
    use reclaimlab_kernel::SimConfig;
    use reclaimlab_record::Origin;
    use reclaimlab_workload::sim::{run_step, run_with_stop, StepSpec};
    use reclaimlab_workload::spec::Spec;
    use std::io::Read;
    use std::sync::atomic::AtomicBool;

    fn record_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v = Vec::new();
        for f in ["run.json", "vmstat.csv", "latency.csv"] {
            v.push((f.to_string(), std::fs::read(dir.join(f)).unwrap()));
        }
        let gz = std::fs::read(dir.join("trace.txt.gz")).unwrap();
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..])
            .read_to_end(&mut text)
            .unwrap();
        v.push(("trace text".into(), text));
        v
    }

    #[test]
    fn the_rate_note_counts_what_no_trace_shows() {
        assert_eq!(rate_note(&[0; 4]), None);
        assert_eq!(
            rate_note(&[3, 0, 5, 0]).unwrap(),
            "policy.rate_priority let 8 reclaim_throttle sleep(s) through, not traced \
             (VMSCAN_THROTTLE_WRITEBACK 3, VMSCAN_THROTTLE_NOPROGRESS 5)"
        );
    }

    /// Steps simulated apart and finished in any order make the record one
    /// sequential run makes (the trace's gzip members aside).
    #[test]
    fn steps_run_apart_and_out_of_order_make_the_sequential_record() {
        let m = tiny_machine();
        let p = profile("v5.16-rc1").unwrap();
        let cfg = SimConfig::new(m, p, Params::defaults(p), 3);
        let spec = Spec::parse(
            "name='s'\nduration_s=2\nwarmup_s=0.5\n[[worker]]\nkind='file-writer'\ncount=2\nfile_mib=24\n[[worker]]\nkind='anon-hog'\ncount=2\nsize_mib=40\n[[worker]]\nkind='mmap-latency'\npages=1024\n",
            "s",
        )
        .unwrap();
        let steps: Vec<StepSpec> = (1..=3)
            .map(|i| StepSpec {
                step: i,
                ..StepSpec::from_spec(&spec)
            })
            .collect();
        let tmp = std::env::temp_dir().join(format!("reclaimlab-steps-{}", std::process::id()));
        let meta = || {
            let mut m = RunMeta::new("r".to_string(), Origin::Sim, "v5.16-rc1");
            m.workload.name = "s".into();
            m.capture.trace = true;
            m
        };
        let stop = AtomicBool::new(false);
        // One run, in order.
        let seq_dir = tmp.join("seq/r");
        let w = RecordWriter::create(&seq_dir, meta()).unwrap();
        let mut sink = RecordSink { w, err: None };
        let summary = run_with_stop(&cfg, &steps, &mut sink, &mut |_| {}, false, &stop);
        let mut a = Assembly::new("r", &seq_dir, meta(), 1);
        a.sink = Some(Carry::new(sink));
        a.summary = summary;
        a.next = 1;
        let seq = a.finish().unwrap();
        // Apart, the last step first.
        let par_dir = tmp.join("par/r");
        let starts = reclaimlab_workload::sim::step_starts(&steps).unwrap();
        let mut a = Assembly::new("r", &par_dir, meta(), steps.len());
        for k in [2, 0, 1] {
            let mut buf = StepBuffer::new();
            let r = run_step(
                &cfg,
                &steps[k],
                starts[k],
                &mut buf,
                &mut |_| {},
                false,
                &stop,
            );
            a.add(k, buf, r);
            assert_eq!(a.wanted(), k != 1, "done after the last one in");
        }
        let (par_path, par) = a.outcome.take().unwrap().unwrap();
        assert_eq!(par.steps, seq.1.steps);
        assert_eq!(par.events, seq.1.events);
        let (s, p) = (record_files(&seq.0), record_files(&par_path));
        for ((name, x), (_, y)) in s.iter().zip(&p) {
            assert!(x == y, "{name} differs");
        }
        assert!(s[3].1.len() > 1000, "a trace to compare");
        std::fs::remove_dir_all(&tmp).ok();
    }
}
