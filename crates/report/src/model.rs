//! The one `Report` structure every exporter reads, and how it is built.
//!
//! Statistics are computed here once; text, JSON and HTML only format what is
//! in the `Report` (hyperfine's split between measurement and exporters). The
//! serde field names are the `reclaimlab.report/1` schema (`docs/report-json.md`).
//! Maps are ordered (BTreeMap, or step order via [`OrderedMap`]) so the same
//! input always gives the same bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::input::{RunInput, TraceStatus, VmstatPoint};
use crate::monitor::{ftrace_tables, FtraceTable};
use crate::ops::{compute_ops, Duration, Ops};
use crate::stalls::{StallCount, StallSummary};
use crate::stats::{self, MeanSd, Preferred, Summary};

/// The JSON schema name.
pub const SCHEMA: &str = "reclaimlab.report/1";

/// How the `*` significance marks are decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Significance {
    /// mmtests 2018–2024: two-sample t-test, p < 0.10.
    #[default]
    Ttest,
    /// mmtests since 2024-11: mean ± 1.96·s intervals, |cidiff| > 1.
    Ci,
}

impl Significance {
    /// Parses `ttest` or `ci`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ttest" | "t-test" => Some(Self::Ttest),
            "ci" => Some(Self::Ci),
            _ => None,
        }
    }
}

/// Report options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Significance rule.
    pub significance: Significance,
}

/// A map serialised in insertion order (used for step order: `mmap-4` before
/// `mmap-12`). Lookups go through a key index built on the first one, so a
/// record with many latency metrics (a hostile `latency.csv` may have a
/// different one on every row) costs linear time in the tables, not
/// quadratic. Build it with [`OrderedMap::new`].
#[derive(Clone, Debug, Default)]
pub struct OrderedMap<V>(pub Vec<(String, V)>, KeyIndex);

/// The position of each key of an [`OrderedMap`] (the first, if repeated),
/// built on the first lookup, with the length it was built at: entries added
/// later make lookups fall back to a search.
#[derive(Clone, Debug, Default)]
pub struct KeyIndex(std::sync::OnceLock<(usize, HashMap<String, usize>)>);

impl<V: PartialEq> PartialEq for OrderedMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<V> OrderedMap<V> {
    /// A map of `entries`, in their order.
    pub fn new(entries: Vec<(String, V)>) -> Self {
        OrderedMap(entries, KeyIndex::default())
    }

    /// The value for a key.
    pub fn get(&self, key: &str) -> Option<&V> {
        if self.0.len() <= 16 {
            return self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        }
        let (len, index) = self.1 .0.get_or_init(|| {
            let mut m = HashMap::with_capacity(self.0.len());
            for (i, (k, _)) in self.0.iter().enumerate() {
                m.entry(k.clone()).or_insert(i);
            }
            (self.0.len(), m)
        });
        if *len != self.0.len() {
            return self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        }
        index.get(key).and_then(|&i| self.0.get(i)).map(|(_, v)| v)
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The % column of every statistic against the baseline run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PctRow {
    /// Min, pndiff.
    pub min: f64,
    /// Amean, pndiff.
    pub amean: f64,
    /// Stddev, pndiff.
    pub stddev: f64,
    /// CoeffVar, pndiff.
    pub coeffvar: f64,
    /// Max-90, pndiff.
    pub max90: f64,
    /// Max-95, pndiff.
    pub max95: f64,
    /// Max-99, pndiff.
    pub max99: f64,
    /// Max, pndiff.
    pub max: f64,
    /// BAmean-95, pndiff.
    pub bamean95: f64,
}

/// A latency operation compared with the baseline run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VsBaseline {
    /// % difference per statistic (positive = better, i.e. lower).
    pub pct: PctRow,
    /// The Amean difference is significant under the chosen rule.
    pub significant: bool,
    /// t-test: two-sided p-value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// ci: the cidiff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cidiff: Option<f64>,
}

/// Latency statistics of one operation (`mmap-4`) in one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyReport {
    /// Always `ms`.
    pub unit: String,
    /// The step.
    pub step: u32,
    /// The metric.
    pub metric: String,
    /// Sample count.
    pub n: usize,
    /// Min.
    pub min: f64,
    /// Amean.
    pub amean: f64,
    /// Stddev (n−1).
    pub stddev: f64,
    /// CoeffVar, %.
    pub coeffvar: f64,
    /// Max-90.
    pub max90: f64,
    /// Max-95.
    pub max95: f64,
    /// Max-99.
    pub max99: f64,
    /// Max.
    pub max: f64,
    /// BAmean-95.
    pub bamean95: f64,
    /// Comparison with the baseline (absent for the baseline itself and for
    /// operations not present in every run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<VsBaseline>,
}

impl LatencyReport {
    fn from_summary(step: u32, metric: &str, s: &Summary) -> Self {
        LatencyReport {
            unit: "ms".into(),
            step,
            metric: metric.into(),
            n: s.n,
            min: s.min,
            amean: s.amean,
            stddev: s.stddev,
            coeffvar: s.coeffvar,
            max90: s.max90,
            max95: s.max95,
            max99: s.max99,
            max: s.max,
            bamean95: s.bamean95,
            vs_baseline: None,
        }
    }

    fn mean_sd(&self) -> MeanSd {
        MeanSd {
            mean: self.amean,
            sd: self.stddev,
            n: self.n,
        }
    }
}

/// Data only the HTML plots use (not part of the JSON schema).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunPlots {
    /// Per operation label, the empirical CCDF as (latency ms, fraction of
    /// samples ≥ it), down-sampled but with the tail's samples each.
    pub latency_ccdf: Vec<(String, Vec<(f64, f64)>)>,
    /// Cumulative counters over time.
    pub vmstat: Vec<VmstatPoint>,
}

/// One run in the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunReport {
    /// Run name.
    pub name: String,
    /// `sim`, `real` or `import`.
    pub origin: String,
    /// Kernel.
    pub kernel: String,
    /// Workload.
    pub workload: String,
    /// Record directory.
    pub record: String,
    /// `global`, `memcg-v1`, `memcg-v2` (or whatever the record says).
    pub reclaim_scope: String,
    /// Which counters show this run's scanning: `global` (pgscan_direct /
    /// pgscan_kswapd) or `lru` (pgscan_anon / pgscan_file, memcg reclaim).
    pub scan_counters: String,
    /// Whole-run durations.
    pub duration: Duration,
    /// CPU seconds and pages by task class, classes sorted (empty when the
    /// record has no per-task times).
    pub task_cpu: Vec<crate::input::TaskUse>,
    /// The Ops table.
    pub ops: Ops,
    /// Whole-run counter deltas.
    pub vmstat_delta: BTreeMap<String, i64>,
    /// Latency statistics per operation, in step order.
    pub latency: OrderedMap<LatencyReport>,
    /// Stall histogram buckets.
    pub stalls: Vec<StallCount>,
    /// Stall summaries per (event, who, reason).
    pub stall_summary: Vec<StallSummary>,
    /// mmtests' ftrace stall monitor tables (`crate::monitor`): the same
    /// tables in every run, those in which some run has a sample.
    pub ftrace_stalls: Vec<FtraceTable>,
    /// How the trace was read.
    pub trace: TraceStatus,
    /// Every OOM kill, in time order (omitted when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oom_kills: Vec<reclaimlab_record::OomKillRecord>,
    /// Free memory at the first OOM kill, KiB: the seed's "free memory at
    /// OOM" figure (omitted when nothing was killed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_at_oom_kib: Option<u64>,
    /// Plot data (HTML only).
    #[serde(skip)]
    pub plots: RunPlots,
    /// Machine, seed, tool version (HTML header only).
    #[serde(skip)]
    pub about: crate::input::RunAbout,
}

/// An operation that is not in every run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ExcludedOp {
    /// Operation label.
    pub label: String,
    /// The runs that have it.
    pub present_in: Vec<String>,
}

/// What could be compared across the runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Comparability {
    /// Distinct workloads, in run order.
    pub workloads: Vec<String>,
    /// Operations present in every run (compared), in step order.
    pub compared: Vec<String>,
    /// Operations left out of the comparison.
    pub excluded: Vec<ExcludedOp>,
}

/// A setting whose value is not the same in every run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Difference {
    /// `kernel`, `machine`, `seed` or a parameter name (`vm.dirty_ratio`,
    /// `policy.noprogress`, …).
    pub name: String,
    /// Its value in each run, in run order.
    pub values: Vec<String>,
}

/// The settings every run records whose values differ between the runs, in
/// the first run's order (`kernel`, `machine`, `seed`, then parameters
/// sorted), and how many settings only some of the runs record (a real run
/// and a simulated one share few parameters: those are counted, not listed).
fn differences(runs: &[RunInput]) -> (Vec<Difference>, u64) {
    // Linear in the number of settings (a spec of 10,000 workers records
    // 130,000): an index per run, and a set for the names seen. The first
    // entry of a name wins, as a search from the front would find it.
    let index: Vec<HashMap<&str, &str>> = runs
        .iter()
        .map(|r| {
            let mut m = HashMap::with_capacity(r.meta.settings.len());
            for (k, v) in &r.meta.settings {
                m.entry(k.as_str()).or_insert(v.as_str());
            }
            m
        })
        .collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for (k, _) in &r.meta.settings {
            if seen.insert(k.as_str()) {
                names.push(k);
            }
        }
    }
    let mut partial = 0;
    let mut out = Vec::new();
    for name in names {
        let values: Option<Vec<&str>> = index.iter().map(|m| m.get(name).copied()).collect();
        match values {
            None => partial += 1,
            Some(values) if values.iter().any(|v| *v != values[0]) => out.push(Difference {
                name: name.to_string(),
                values: values.into_iter().map(str::to_string).collect(),
            }),
            Some(_) => {}
        }
    }
    (out, partial)
}

/// The report: everything every exporter needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// `reclaimlab.report/1`.
    pub schema: String,
    /// Name of the first run (the baseline of every % column).
    pub baseline: String,
    /// Significance rule used.
    pub significance: Significance,
    /// What was comparable.
    pub comparable: Comparability,
    /// Warnings and explanations (different workloads, skipped lines, …).
    pub notes: Vec<String>,
    /// What differs between the runs' kernels, machines, seeds and
    /// parameters (empty for one run, or runs set up alike).
    pub differences: Vec<Difference>,
    /// Settings only some of the runs record (not in `differences`).
    pub settings_in_some_runs: u64,
    /// The runs, baseline first.
    pub runs: Vec<RunReport>,
    /// The OOM point per setting, when the runs differ in their mlock size
    /// and some run was OOM-killed (`crate::oom_point`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_points: Option<crate::oom_point::OomPoints>,
    /// The command that produced the runs, where known (`sim`, or a folder's
    /// `runs.txt`): shown in the HTML header, not part of the JSON schema.
    #[serde(skip)]
    pub command: Option<String>,
}

impl RunReport {
    /// Seconds slept in every traced stall (throttled, congestion_wait,
    /// wait_iff_congested), if the run has a trace with any.
    pub fn stalled_s(&self) -> Option<f64> {
        (!self.stall_summary.is_empty())
            .then(|| self.stall_summary.iter().map(|s| s.total_delay_s).sum())
    }
}

impl Report {
    /// True if some trace was cut short (truncated gzip).
    pub fn has_truncated_trace(&self) -> bool {
        self.runs.iter().any(|r| r.trace.truncated.is_some())
    }

    /// Total unparsable trace lines over all runs.
    pub fn bad_trace_lines(&self) -> u64 {
        self.runs.iter().map(|r| r.trace.bad_lines).sum()
    }
}

const CDF_POINTS: usize = 300;

/// Samples at the top kept one by one, so that the tail (Max-99, Max) of a
/// distribution plotted as a CCDF is exact.
const TAIL_POINTS: usize = 200;

/// The complementary distribution of sorted samples as (value, fraction of
/// samples ≥ value): every k-th sample, down-sampled to about
/// [`CDF_POINTS`], and the top [`TAIL_POINTS`] samples each, down to the
/// largest at 1/n.
fn ccdf_points(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(CDF_POINTS).max(1);
    (0..n)
        .filter(|&i| i % step == 0 || n - i <= TAIL_POINTS)
        .map(|i| (sorted[i], (n - i) as f64 / n as f64))
        .collect()
}

fn label(metric: &str, step: u32) -> String {
    format!("{metric}-{step}")
}

/// Builds the report from runs (the first is the baseline).
pub fn build_report(runs: &[RunInput], opts: Options) -> Report {
    let mut notes = Vec::new();
    let mut out_runs = Vec::with_capacity(runs.len());
    // Operation labels per run, in (metric, step) order.
    let mut ops_per_run: Vec<Vec<String>> = Vec::new();
    let mut order: BTreeMap<(String, u32), String> = BTreeMap::new();

    for run in runs {
        let mut groups: BTreeMap<(String, u32), Vec<f64>> = BTreeMap::new();
        for s in &run.latency {
            if s.value_us.is_finite() {
                groups
                    .entry((s.metric.clone(), s.step))
                    .or_default()
                    .push(s.value_us / 1000.0);
            }
        }
        let mut latency = Vec::new();
        let mut cdfs = Vec::new();
        let mut labels = Vec::new();
        for ((metric, step), mut vals) in groups {
            let l = label(&metric, step);
            order.insert((metric.clone(), step), l.clone());
            stats::sort_preferred(&mut vals, Preferred::Lower);
            let sum = stats::summarise(&vals, Preferred::Lower);
            latency.push((l.clone(), LatencyReport::from_summary(step, &metric, &sum)));
            cdfs.push((l.clone(), ccdf_points(&vals)));
            labels.push(l);
        }
        ops_per_run.push(labels);
        if let Some(t) = run.vmstat_restarts.first() {
            notes.push(format!(
                "{}: vmstat counters restarted {} time(s) (first at {t:.1} s; a reboot, or a simulated record written before its counters carried on across steps): the Ops rows sum each stretch",
                run.meta.name,
                run.vmstat_restarts.len()
            ));
        }
        let ops = compute_ops(
            &run.vmstat_delta,
            run.meta.duration.elapsed_s,
            &run.meta.reclaim_scope,
        );
        let scan_counters = if ops.memcg.is_some() { "lru" } else { "global" };
        let mut trace = run.trace.clone();
        trace.lost_events = trace.lost_events.max(run.meta.lost_events);
        out_runs.push(RunReport {
            name: run.meta.name.clone(),
            origin: run.meta.origin.clone(),
            kernel: run.meta.kernel.clone(),
            workload: run.meta.workload.clone(),
            record: run.meta.record.clone(),
            reclaim_scope: run.meta.reclaim_scope.clone(),
            about: run.meta.about.clone(),
            scan_counters: scan_counters.into(),
            duration: run.meta.duration,
            task_cpu: run.meta.task_cpu.clone(),
            ops,
            vmstat_delta: run.vmstat_delta.clone(),
            latency: OrderedMap::new(latency),
            stalls: run.stalls.counts.clone(),
            stall_summary: run.stalls.summary.clone(),
            ftrace_stalls: Vec::new(),
            trace,
            oom_kills: {
                let mut k = run.meta.oom_kills.clone();
                k.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
                k
            },
            free_at_oom_kib: run
                .meta
                .oom_kills
                .iter()
                .min_by(|a, b| a.t_s.total_cmp(&b.t_s))
                .map(|o| o.free_kib),
            plots: RunPlots {
                latency_ccdf: cdfs,
                vmstat: run.vmstat_series.clone(),
            },
        });
    }

    let monitors: Vec<_> = runs.iter().map(|r| &r.monitors).collect();
    for (r, tables) in out_runs.iter_mut().zip(ftrace_tables(&monitors)) {
        r.ftrace_stalls = tables;
    }

    // What is comparable.
    let mut workloads: Vec<String> = Vec::new();
    for r in &out_runs {
        if !workloads.contains(&r.workload) {
            workloads.push(r.workload.clone());
        }
    }
    if workloads.len() > 1 {
        notes.push(format!(
            "the runs are of different workloads ({}): latency operations are compared only where every run has them; Ops and Duration are shown side by side but measure different work",
            workloads.join(", ")
        ));
    }
    let mut compared = Vec::new();
    let mut excluded = Vec::new();
    // Sets, so that many operations (a latency.csv may name a new metric on
    // every row) cost linear time.
    let op_sets: Vec<HashSet<&str>> = ops_per_run
        .iter()
        .map(|labels| labels.iter().map(String::as_str).collect())
        .collect();
    for l in order.values() {
        let present: Vec<String> = out_runs
            .iter()
            .zip(&op_sets)
            .filter(|(_, labels)| labels.contains(l.as_str()))
            .map(|(r, _)| r.name.clone())
            .collect();
        if present.len() == out_runs.len() {
            compared.push(l.clone());
        } else {
            excluded.push(ExcludedOp {
                label: l.clone(),
                present_in: present,
            });
        }
    }
    if !excluded.is_empty() {
        let all: Vec<&str> = out_runs.iter().map(|r| r.name.as_str()).collect();
        notes.push(format!(
            "not every run has every operation (different steps, or a step without samples): {} compared (present in every run); left out: {}",
            if compared.is_empty() {
                "nothing".to_string()
            } else {
                compared.join(", ")
            },
            excluded
                .iter()
                .map(|e| format!("{} ({})", e.label, presence(&e.present_in, &all)))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    // Sort the order of compared labels by (metric, step) — already so.

    // Comparison against the baseline.
    let compared_set: HashSet<&str> = compared.iter().map(String::as_str).collect();
    if let Some((base, rest)) = out_runs.split_first_mut() {
        for r in rest.iter_mut() {
            for (l, lr) in r.latency.0.iter_mut() {
                if !compared_set.contains(l.as_str()) {
                    continue;
                }
                let Some(b) = base.latency.get(l) else {
                    continue;
                };
                lr.vs_baseline = Some(compare_latency(lr, b, opts.significance));
            }
        }
    }

    // Trace problems.
    let names: BTreeSet<&str> = out_runs.iter().map(|r| r.name.as_str()).collect();
    if names.len() < out_runs.len() {
        notes.push(
            "two or more runs have the same name: columns are in the order the records were given"
                .into(),
        );
    }
    // What the capture says of a run that has a trace (a policy's untraced
    // decisions, lines an importer skipped, …); without a trace its notes
    // are the trace's own note, below.
    for r in runs.iter().filter(|r| r.trace.present) {
        for n in &r.meta.capture_notes {
            notes.push(format!("{}: {n}", r.meta.name));
        }
    }
    for (r, input) in out_runs.iter().zip(runs) {
        if r.trace.bad_lines > 0 {
            notes.push(format!(
                "{}: {} trace line(s) did not parse and were skipped (first: {})",
                r.name,
                r.trace.bad_lines,
                r.trace
                    .bad_examples
                    .first()
                    .map(String::as_str)
                    .unwrap_or("?")
            ));
        }
        if let Some(t) = &r.trace.truncated {
            notes.push(format!(
                "{}: trace cut short, stalls counted up to there only: {t}",
                r.name
            ));
        }
        if !r.trace.present {
            if let Some(n) = &r.trace.note {
                notes.push(format!("{}: no stall data: {n}", r.name));
            }
        }
        if r.trace.lost_events > 0 {
            notes.push(format!(
                "{}: the capture lost {} trace events",
                r.name, r.trace.lost_events
            ));
        }
        if r.ops.memcg.is_some() {
            notes.push(format!(
                "{}: reclaim scope {}: scanning is counted by pgscan_anon/pgscan_file (Memcg rows), not pgscan_direct/pgscan_kswapd",
                r.name, r.reclaim_scope
            ));
        }
        notes.extend(crate::kernel_notes::notes(r, &input.meta.settings));
    }

    let (differences, settings_in_some_runs) = differences(runs);
    Report {
        schema: SCHEMA.into(),
        baseline: out_runs.first().map(|r| r.name.clone()).unwrap_or_default(),
        significance: opts.significance,
        comparable: Comparability {
            workloads,
            compared,
            excluded,
        },
        notes,
        differences,
        settings_in_some_runs,
        runs: out_runs,
        oom_points: crate::oom_point::oom_points(runs),
        command: None,
    }
}

fn compare_latency(new: &LatencyReport, base: &LatencyReport, sig: Significance) -> VsBaseline {
    let c = |n: f64, b: f64, spread: bool| stats::compare(n, b, Preferred::Lower, spread);
    let pct = PctRow {
        min: c(new.min, base.min, false),
        amean: c(new.amean, base.amean, false),
        stddev: c(new.stddev, base.stddev, true),
        coeffvar: c(new.coeffvar, base.coeffvar, true),
        max90: c(new.max90, base.max90, false),
        max95: c(new.max95, base.max95, false),
        max99: c(new.max99, base.max99, false),
        max: c(new.max, base.max, false),
        bamean95: c(new.bamean95, base.bamean95, false),
    };
    match sig {
        Significance::Ttest => {
            let t = stats::ttest(base.mean_sd(), new.mean_sd());
            VsBaseline {
                pct,
                significant: t.is_some_and(|t| t.significant),
                p_value: t.map(|t| t.p),
                cidiff: None,
            }
        }
        Significance::Ci => {
            let c = stats::citest(new.mean_sd(), base.mean_sd());
            VsBaseline {
                pct,
                significant: c.is_some_and(|c| c.significant),
                p_value: None,
                cidiff: c.map(|c| c.cidiff).filter(|x| x.is_finite()),
            }
        }
    }
}

/// Names listed in a note before "and N more".
const NOTE_NAMES: usize = 6;

/// Which of `all` runs have an operation, for a note: the shorter of the
/// runs that have it and those that lack it, at most [`NOTE_NAMES`] names
/// (a sweep of hundreds of points would otherwise print them all; the
/// JSON's `present_in` has the whole list).
fn presence(present: &[String], all: &[&str]) -> String {
    let list = |names: Vec<&str>| {
        let mut s = names
            .iter()
            .take(NOTE_NAMES)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > NOTE_NAMES {
            s += &format!(" and {} more", names.len() - NOTE_NAMES);
        }
        s
    };
    let missing: Vec<&str> = all
        .iter()
        .copied()
        .filter(|n| !present.iter().any(|p| p == n))
        .collect();
    if present.len() <= missing.len() {
        format!(
            "only in {}",
            list(present.iter().map(String::as_str).collect())
        )
    } else {
        format!(
            "in {} of {} runs; not in {}",
            present.len(),
            all.len(),
            list(missing)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presence_names_the_shorter_side_and_cuts_long_lists() {
        let all: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
        let all_refs: Vec<&str> = all.iter().map(String::as_str).collect();
        assert_eq!(presence(&all[..1], &all_refs), "only in r0");
        assert_eq!(
            presence(&all[..8], &all_refs),
            "in 8 of 10 runs; not in r8, r9"
        );
        let many: Vec<String> = (0..200).map(|i| format!("p{i}")).collect();
        let many_refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            presence(&many[..100], &many_refs),
            "only in p0, p1, p2, p3, p4, p5 and 94 more"
        );
    }
}
