//! The report's own input types: what one run contributes to a report.
//!
//! The statistics, tables and exporters only see these small, plain types, so
//! they can be tested without files and so that exactly one adapter
//! (`source.rs`) knows how a run record is stored on disk.

use std::collections::BTreeMap;

use crate::monitor::Monitors;
use crate::ops::Duration;
use crate::stalls::Stalls;

/// What the report needs from `run.json`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunMeta {
    /// Run name (column header).
    pub name: String,
    /// `sim`, `real` or `import`.
    pub origin: String,
    /// Kernel profile or `uname -r`.
    pub kernel: String,
    /// Workload name.
    pub workload: String,
    /// Path of the record directory, as given.
    pub record: String,
    /// `global`, `memcg-v1` or `memcg-v2`.
    pub reclaim_scope: String,
    /// Whole-run CPU and wall time.
    pub duration: Duration,
    /// Steps in record order: (step, start_s, end_s).
    pub steps: Vec<(u32, f64, f64)>,
    /// Whether the run captured traces at all.
    pub trace_captured: bool,
    /// Events lost by the capture (from `run.json`).
    pub lost_events: u64,
    /// Capture notes (for example why no trace was captured).
    pub capture_notes: Vec<String>,
    /// What shaped the run, as `(name, value)`: `kernel`, `machine`, `seed`,
    /// then every parameter of `run.json`, keys sorted.
    pub settings: Vec<(String, String)>,
    /// CPU seconds and pages by task class (`kswapd`, `memory-hog`,
    /// `kworker`, …), summed over the run's tasks and steps, classes sorted.
    pub task_cpu: Vec<TaskUse>,
    /// What the HTML header says of the run.
    pub about: RunAbout,
    /// Every OOM kill of the run (`run.json` `oom_kills`).
    pub oom_kills: Vec<reclaimlab_record::OomKillRecord>,
}

/// What the HTML report's header says about a run: where it ran, what, and
/// with which tool (from `run.json`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunAbout {
    /// The machine in one line: name, CPUs, memory, swap, devices, HZ.
    pub machine: String,
    /// The workload's spec (a built-in name or a file).
    pub workload_spec: String,
    /// The seed, `-` where there is none.
    pub seed: String,
    /// reclaimlab version that wrote the record.
    pub tool_version: String,
    /// The workload's own parameters (`stutterp.*`, `workload.*`), sorted.
    pub workload_settings: Vec<(String, String)>,
}

/// What the tasks of one class used over a run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TaskUse {
    /// The class ([`task_class`]).
    pub class: String,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub system_s: f64,
    /// Pages allocated, if the record says (simulated runs).
    pub pages_allocated: Option<u64>,
    /// Pages freed (their `munmap` and their own reclaim), if the record says.
    pub pages_freed: Option<u64>,
}

/// The class of a task for [`RunMeta::task_cpu`]: its `comm` without a
/// per-instance suffix — `kswapd0` is `kswapd`, `kworker/u4:0+flush-8:0`
/// is `kworker`, `irq/sda` is `irq`.
pub fn task_class(comm: &str) -> &str {
    let base = comm.split('/').next().unwrap_or(comm);
    if base.len() < comm.len() {
        return base;
    }
    match comm.strip_prefix("kswapd") {
        Some(n) if n.chars().all(|c| c.is_ascii_digit()) => "kswapd",
        _ => comm,
    }
}

/// One latency sample (`latency.csv`).
#[derive(Clone, Debug, PartialEq)]
pub struct LatencySample {
    /// Step (e.g. the worker count).
    pub step: u32,
    /// What was measured (`mmap`).
    pub metric: String,
    /// Time on the record's time base, s.
    pub t_s: f64,
    /// Latency, µs.
    pub value_us: f64,
}

/// One vmstat sample reduced to the counters the plots need (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VmstatPoint {
    /// Time, s.
    pub t_s: f64,
    /// Σ pgscan_kswapd*.
    pub kswapd_scan: i64,
    /// Σ pgscan_direct*.
    pub direct_scan: i64,
    /// Σ pgsteal_kswapd* (+ kswapd_steal).
    pub kswapd_steal: i64,
    /// Σ pgsteal_direct* (+ zone pgsteal).
    pub direct_steal: i64,
    /// pgscan_anon + pgscan_file.
    pub lru_scan: i64,
    /// pgsteal_anon + pgsteal_file.
    pub lru_steal: i64,
    /// `nr_mlock` (a gauge, pages; 0 where the record has no such column).
    pub nr_mlock: i64,
    /// Σ allocstall_* (and the old `allocstall`): direct reclaim entries.
    pub allocstall: i64,
}

/// How reading the trace went.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TraceStatus {
    /// A trace file was present and read.
    pub present: bool,
    /// The trace file path.
    pub file: String,
    /// Lines read (comments and blank lines included).
    pub lines: u64,
    /// Lines that were stall events and were counted.
    pub stall_events: u64,
    /// Lines the ftrace stall monitors read (direct reclaim begin/end,
    /// congestion_wait, wait_iff_congested, balance_dirty_pages).
    pub monitor_events: u64,
    /// Lines that did not parse and were skipped.
    pub bad_lines: u64,
    /// The first few unparsable lines as `file:line: why`.
    pub bad_examples: Vec<String>,
    /// Set when the gzip stream ended early: reading stopped there.
    pub truncated: Option<String>,
    /// Events lost by the capture (run.json plus `[LOST N EVENTS]` lines).
    pub lost_events: u64,
    /// Why there is no trace, when there is none.
    pub note: Option<String>,
}

/// Everything one run contributes to a report.
#[derive(Clone, Debug, Default)]
pub struct RunInput {
    /// Metadata.
    pub meta: RunMeta,
    /// Whole-run counter deltas (last row − first row of `vmstat.csv`; an
    /// event counter that restarted is summed over its stretches).
    pub vmstat_delta: BTreeMap<String, i64>,
    /// Times at which the event counters of `vmstat.csv` restarted.
    pub vmstat_restarts: Vec<f64>,
    /// Counter time series for the plots.
    pub vmstat_series: Vec<VmstatPoint>,
    /// All latency samples.
    pub latency: Vec<LatencySample>,
    /// Stall histograms from the trace.
    pub stalls: Stalls,
    /// The distributions of mmtests' ftrace stall monitors.
    pub monitors: Monitors,
    /// How the trace was read.
    pub trace: TraceStatus,
}
