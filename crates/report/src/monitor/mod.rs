//! mmtests' ftrace stall monitors, in one streaming pass over the trace.
//!
//! `compare-kernels.sh` (with `INCLUDE_FTRACE=yes`) prints a table per
//! monitor module under `bin/lib/MMTests/` (`shared/reference/mmtests-method.md`
//! §4); this module computes the same tables from the same tracepoints:
//!
//! | table | mmtests module | samples |
//! |---|---|---|
//! | `Ftrace direct reclaim allocation stalls` | `MonitorFtraceallocstall` on `MonitorFtracepairlatency` | `mm_vmscan_direct_reclaim_end` − the same `pid-comm`'s pending `mm_vmscan_direct_reclaim_begin`, ms |
//! | `Ftrace wait_iff_congested kswapd` / `not kswapd` | `MonitorFtracewaitiffcongestedstall` on `MonitorFtracesinglelatency` | `usec_delayed` > 0 of `writeback_wait_iff_congested`, µs |
//! | `Ftrace congestion_wait kswapd` / `not kswapd` | `MonitorFtracecongestionwaitstall` on `MonitorFtracesinglelatency` | `usec_delayed` > 0 of `writeback_congestion_wait`, µs |
//! | `Ftrace balance_dirty_pages` | `MonitorFtracebalancedirtypagesstall` on `MonitorFtracesinglelatency` | `pause` > 0 of `balance_dirty_pages`, ms |
//!
//! Two honest departures from mmtests' labels, not from its numbers' sources:
//! mmtests labels the congestion tables ms although `usec_delayed` is µs
//! (here they say µs, same numbers); and it multiplies `pause` by 4 taking it
//! for jiffies at HZ=250, while the kernel already prints it in ms
//! (`__entry->pause = pause * 1000 / HZ`, include/trace/events/writeback.h),
//! so its balance_dirty_pages figures are 4× these (and its buckets are those
//! of the 4× values).
//!
//! Memory is bounded whatever the trace length: every distribution is a
//! value → count map, and the pairing state is one slot per task.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::stalls::{is_kswapd, FieldError};
use crate::stats::{self, pdiff_count, pndiff};

/// Bucket edges of `MonitorFtracesinglelatency`/`MonitorFtracepairlatency`'s
/// `_SummaryStats` (`samples-0,5` … `samples-5000,max`), in the table's unit.
const EDGES: [u64; 7] = [0, 5, 10, 100, 500, 1000, 5000];

/// Bucket edges of `MonitorFtracebalancedirtypagesstall`'s own `_SummaryStats`.
const BDP_EDGES: [u64; 13] = [0, 5, 10, 20, 30, 35, 40, 50, 60, 100, 500, 1000, 5000];

/// Percentile rows in `_SummaryStats` order, with mmtests' display names
/// (`stat_names` of `Stat.pm`: `percentile-25` is `1st-qrtle`, other
/// `percentile-N` are `Max-N`).
const PERCENTILES: [(&str, f64); 9] = [
    ("1st-qrtle", 25.0),
    ("2nd-qrtle", 50.0),
    ("3rd-qrtle", 75.0),
    ("Max-1", 1.0),
    ("Max-5", 5.0),
    ("Max-10", 10.0),
    ("Max-90", 90.0),
    ("Max-95", 95.0),
    ("Max-99", 99.0),
];

/// One mmtests ftrace stall table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MonitorTable {
    /// `Ftrace direct reclaim allocation stalls` (`ftraceallocstall`).
    AllocStall,
    /// `Ftrace wait_iff_congested kswapd` (`--sub-heading kswapd`).
    WaitIffCongestedKswapd,
    /// `Ftrace wait_iff_congested not kswapd` (`--sub-heading no-kswapd`).
    WaitIffCongestedOther,
    /// `Ftrace congestion_wait kswapd`.
    CongestionWaitKswapd,
    /// `Ftrace congestion_wait not kswapd`.
    CongestionWaitOther,
    /// `Ftrace balance_dirty_pages` (`--sub-heading no-kswapd`).
    BalanceDirtyPages,
}

impl MonitorTable {
    /// All tables, in the order `compare-kernels.sh` prints them.
    pub const ALL: [MonitorTable; 6] = [
        MonitorTable::AllocStall,
        MonitorTable::WaitIffCongestedKswapd,
        MonitorTable::WaitIffCongestedOther,
        MonitorTable::CongestionWaitKswapd,
        MonitorTable::CongestionWaitOther,
        MonitorTable::BalanceDirtyPages,
    ];

    /// The heading `compare-kernels.sh` echoes before the table.
    pub fn title(self) -> &'static str {
        match self {
            MonitorTable::AllocStall => "Ftrace direct reclaim allocation stalls",
            MonitorTable::WaitIffCongestedKswapd => "Ftrace wait_iff_congested kswapd",
            MonitorTable::WaitIffCongestedOther => "Ftrace wait_iff_congested not kswapd",
            MonitorTable::CongestionWaitKswapd => "Ftrace congestion_wait kswapd",
            MonitorTable::CongestionWaitOther => "Ftrace congestion_wait not kswapd",
            MonitorTable::BalanceDirtyPages => "Ftrace balance_dirty_pages",
        }
    }

    /// The mmtests module (`compare-mmtests.pl --print-monitor NAME`).
    pub fn monitor(self) -> &'static str {
        match self {
            MonitorTable::AllocStall => "ftraceallocstall",
            MonitorTable::WaitIffCongestedKswapd | MonitorTable::WaitIffCongestedOther => {
                "ftracewaitiffcongestedstall"
            }
            MonitorTable::CongestionWaitKswapd | MonitorTable::CongestionWaitOther => {
                "ftracecongestionwaitstall"
            }
            MonitorTable::BalanceDirtyPages => "ftracebalancedirtypagesstall",
        }
    }

    /// The tracepoint(s) read.
    pub fn event(self) -> &'static str {
        match self {
            MonitorTable::AllocStall => {
                "mm_vmscan_direct_reclaim_begin/mm_vmscan_direct_reclaim_end"
            }
            MonitorTable::WaitIffCongestedKswapd | MonitorTable::WaitIffCongestedOther => {
                "writeback_wait_iff_congested"
            }
            MonitorTable::CongestionWaitKswapd | MonitorTable::CongestionWaitOther => {
                "writeback_congestion_wait"
            }
            MonitorTable::BalanceDirtyPages => "balance_dirty_pages",
        }
    }

    /// Whose samples: `all`, `kswapd` (comm `^kswapd[0-9]*$`) or `not kswapd`.
    /// balance_dirty_pages is printed with mmtests' `no-kswapd` sub-heading.
    pub fn who(self) -> &'static str {
        match self {
            MonitorTable::AllocStall => "all",
            MonitorTable::WaitIffCongestedKswapd | MonitorTable::CongestionWaitKswapd => "kswapd",
            _ => "not kswapd",
        }
    }

    /// The unit of every value row (and of the bucket edges): `ms` or `us`.
    pub fn unit(self) -> &'static str {
        match self {
            MonitorTable::AllocStall | MonitorTable::BalanceDirtyPages => "ms",
            _ => "us",
        }
    }

    /// mmtests' operation name (`addData("delay"|"latency", …)`).
    pub fn operation(self) -> &'static str {
        match self {
            MonitorTable::AllocStall => "delay",
            _ => "latency",
        }
    }

    /// Lower bucket edges; the last bucket is `[last, max)`, i.e. ≥ last.
    pub fn edges(self) -> &'static [u64] {
        match self {
            MonitorTable::BalanceDirtyPages => &BDP_EDGES,
            _ => &EDGES,
        }
    }

    /// How many stored units make one table unit: allocation stalls are kept
    /// as exact nanosecond differences of the timestamps, the rest as the
    /// integers the kernel printed.
    fn per_unit(self) -> u64 {
        match self {
            MonitorTable::AllocStall => 1_000_000,
            _ => 1,
        }
    }

    /// The row names, in `_SummaryStats` order.
    pub fn row_names(self) -> Vec<String> {
        let mut rows = vec!["Min".to_string()];
        rows.extend(PERCENTILES.iter().map(|(l, _)| l.to_string()));
        rows.extend(["Max", "Amean", "Samples"].map(String::from));
        rows.extend(bucket_names(self.edges()));
        rows
    }
}

/// `Samples-[a,b)` … `Samples-[last,max)` (`stat_names`' `Samples-[%s)`).
fn bucket_names(edges: &[u64]) -> Vec<String> {
    edges
        .iter()
        .enumerate()
        .map(|(i, lo)| match edges.get(i + 1) {
            Some(hi) => format!("Samples-[{lo},{hi})"),
            None => format!("Samples-[{lo},max)"),
        })
        .collect()
}

/// Whether a row compares with `pdiff` (mmtests' `stat_compare`:
/// `samples => pdiff`; here [`pdiff_count`], which shows a count falling to
/// 0 as −100 % where mmtests shows 0 %) rather than `pndiff` (lower preferred).
pub fn is_samples_row(stat: &str) -> bool {
    stat.starts_with("Samples")
}

/// The distributions of one run: per table, value (in stored units) → count.
/// Only tables with at least one sample are present.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Monitors {
    /// Per table, stored value → count.
    pub dists: BTreeMap<MonitorTable, BTreeMap<u64, u64>>,
}

/// Streaming state of the monitors (bounded memory).
#[derive(Debug, Default)]
pub struct MonitorAggregator {
    /// `MonitorFtracepairlatency`'s `%latencyState`, keyed by pid and then
    /// comm (a handful per pid): the pending begin timestamp (ns), `None`
    /// once ended. Strings are allocated once per task, not per line.
    pending: HashMap<u32, Vec<(String, Option<u64>)>>,
    dists: BTreeMap<MonitorTable, BTreeMap<u64, u64>>,
}

impl MonitorAggregator {
    /// A new, empty aggregator.
    pub fn new() -> Self {
        Self::default()
    }

    fn add(&mut self, table: MonitorTable, value: u64) {
        *self
            .dists
            .entry(table)
            .or_default()
            .entry(value)
            .or_insert(0) += 1;
    }

    /// Feeds one trace line (event name, task, timestamp and a field
    /// accessor). `Ok(false)` for events no monitor reads; an error names the
    /// missing or malformed field, as [`crate::stalls::StallAggregator`] does.
    pub fn observe_fields<'a>(
        &mut self,
        event: &str,
        comm: &str,
        pid: u32,
        timestamp_ns: u64,
        field: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<bool, FieldError> {
        match event {
            // MonitorFtracepairlatency: a begin (re)starts the task's stall,
            // replacing an unmatched earlier begin.
            "mm_vmscan_direct_reclaim_begin" => {
                let slots = self.pending.entry(pid).or_default();
                match slots.iter_mut().find(|(c, _)| c == comm) {
                    Some((_, t)) => *t = Some(timestamp_ns),
                    None => slots.push((comm.to_string(), Some(timestamp_ns))),
                }
                Ok(true)
            }
            // An end closes the pending begin of the same `pid-comm`; without
            // one it is ignored. Every pair counts (mmtests' default delay
            // threshold −1); an end stamped before its begin (clock skew
            // between CPUs) gives no sample.
            "mm_vmscan_direct_reclaim_end" => {
                let begin = self
                    .pending
                    .get_mut(&pid)
                    .and_then(|slots| slots.iter_mut().find(|(c, _)| c == comm))
                    .and_then(|(_, t)| t.take());
                if let Some(d) = begin.and_then(|b| timestamp_ns.checked_sub(b)) {
                    self.add(MonitorTable::AllocStall, d);
                }
                Ok(true)
            }
            // MonitorFtracesinglelatency with threshold 0: only delays > 0.
            "writeback_congestion_wait" | "writeback_wait_iff_congested" => {
                let v = field("usec_delayed")
                    .ok_or_else(|| FieldError(format!("{event}: no field `usec_delayed`")))?;
                let d = v.parse::<u64>().map_err(|_| {
                    FieldError(format!(
                        "{event}: field `usec_delayed={v}` is not a non-negative integer"
                    ))
                })?;
                if d > 0 {
                    let table = match (event == "writeback_congestion_wait", is_kswapd(comm)) {
                        (true, true) => MonitorTable::CongestionWaitKswapd,
                        (true, false) => MonitorTable::CongestionWaitOther,
                        (false, true) => MonitorTable::WaitIffCongestedKswapd,
                        (false, false) => MonitorTable::WaitIffCongestedOther,
                    };
                    self.add(table, d);
                }
                Ok(true)
            }
            // MonitorFtracebalancedirtypagesstall: `pause` (ms as printed;
            // negative pauses, which do not sleep, are below the threshold 0),
            // every task (mmtests prints it with the no-kswapd sub-heading;
            // kswapd never dirties pages).
            "balance_dirty_pages" => {
                let v = field("pause")
                    .ok_or_else(|| FieldError(format!("{event}: no field `pause`")))?;
                let p = v.parse::<i64>().map_err(|_| {
                    FieldError(format!("{event}: field `pause={v}` is not an integer"))
                })?;
                if p > 0 {
                    self.add(MonitorTable::BalanceDirtyPages, p as u64);
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The distributions (pending begins without an end are dropped, as
    /// mmtests drops them).
    pub fn finish(self) -> Monitors {
        Monitors { dists: self.dists }
    }
}

/// One row of an ftrace stall table in one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FtraceRow {
    /// mmtests' display name: `Min`, `1st-qrtle`, `Max-90`, `Amean`,
    /// `Samples`, `Samples-[0,5)`, …
    pub stat: String,
    /// The value, in the table's unit (counts for the `Samples` rows).
    pub value: f64,
    /// % against the baseline: `pndiff` (positive = lower = better), `pdiff`
    /// for the `Samples` rows. Absent for the baseline and where the baseline
    /// has no such value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct: Option<f64>,
}

/// One ftrace stall table of one run (`runs[].ftrace_stalls[]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FtraceTable {
    /// The heading, as `compare-kernels.sh` prints it.
    pub table: String,
    /// The mmtests monitor (`--print-monitor`).
    pub monitor: String,
    /// The tracepoint(s).
    pub event: String,
    /// `all`, `kswapd` or `not kswapd`.
    pub who: String,
    /// `ms` or `us`.
    pub unit: String,
    /// The operation column (`delay` or `latency`).
    pub operation: String,
    /// Number of samples.
    pub samples: u64,
    /// The rows that have a value, in mmtests' order (without samples, only
    /// the `Samples` rows, all 0).
    pub rows: Vec<FtraceRow>,
}

impl FtraceTable {
    /// The row with this name, if the run has a value for it.
    pub fn row(&self, stat: &str) -> Option<&FtraceRow> {
        self.rows.iter().find(|r| r.stat == stat)
    }
}

/// The rows of one table from one run's distribution (`_SummaryStats`).
fn table_of(table: MonitorTable, dist: Option<&BTreeMap<u64, u64>>) -> FtraceTable {
    let empty = BTreeMap::new();
    let dist = dist.unwrap_or(&empty);
    let n: u64 = dist.values().sum();
    let per = table.per_unit();
    let unit = |v: u64| v as f64 / per as f64;
    let mut rows = Vec::new();
    let mut put = |stat: &str, value: f64| {
        rows.push(FtraceRow {
            stat: stat.to_string(),
            value,
            pct: None,
        })
    };
    if n > 0 {
        let min = dist.keys().next().copied().unwrap_or(0);
        let max = dist.keys().next_back().copied().unwrap_or(0);
        let sum: u128 = dist.iter().map(|(&v, &c)| v as u128 * c as u128).sum();
        put("Min", unit(min));
        for (label, p) in PERCENTILES {
            put(label, unit(stats::percentile_counts(dist, p)));
        }
        put("Max", unit(max));
        put("Amean", sum as f64 / n as f64 / per as f64);
    }
    put("Samples", n as f64);
    let edges = table.edges();
    for (i, name) in bucket_names(edges).iter().enumerate() {
        let lo = edges[i] * per;
        let hi = edges.get(i + 1).map(|h| h * per);
        let count: u64 = match hi {
            Some(hi) => dist.range(lo..hi).map(|(_, c)| c).sum(),
            None => dist.range(lo..).map(|(_, c)| c).sum(),
        };
        put(name, count as f64);
    }
    FtraceTable {
        table: table.title().into(),
        monitor: table.monitor().into(),
        event: table.event().into(),
        who: table.who().into(),
        unit: table.unit().into(),
        operation: table.operation().into(),
        samples: n,
        rows,
    }
}

/// The ftrace stall tables of every run (the first is the baseline): the
/// tables in which at least one run has a sample, in `compare-kernels.sh`
/// order, each run's rows compared with the baseline's.
pub fn ftrace_tables(runs: &[&Monitors]) -> Vec<Vec<FtraceTable>> {
    let shown: Vec<MonitorTable> = MonitorTable::ALL
        .into_iter()
        .filter(|t| runs.iter().any(|m| m.dists.contains_key(t)))
        .collect();
    let mut out: Vec<Vec<FtraceTable>> = runs
        .iter()
        .map(|m| {
            shown
                .iter()
                .map(|&t| table_of(t, m.dists.get(&t)))
                .collect()
        })
        .collect();
    if let Some((base, rest)) = out.split_first_mut() {
        for run in rest {
            for (t, b) in run.iter_mut().zip(base.iter()) {
                for row in &mut t.rows {
                    let Some(br) = b.row(&row.stat) else { continue };
                    row.pct = Some(if is_samples_row(&row.stat) {
                        pdiff_count(row.value, br.value)
                    } else {
                        pndiff(row.value, br.value)
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
