//! Reading a run record directory into a [`RunInput`] (the only code here
//! that knows the on-disk format, `docs/run-record.md`).
//!
//! The trace is streamed: `trace.txt.gz` is decompressed and parsed line by
//! line into the [`StallAggregator`], so memory does not grow with the trace.
//! A line that does not parse is skipped, counted, and its `file:line`
//! remembered (the first few); a gzip stream that ends early stops the trace
//! there and is reported. Missing or malformed `run.json`, `vmstat.csv` or
//! `latency.csv` is an error naming the file, the line and what is accepted.
//!
//! This is the only file that uses `reclaimlab_record`: `Record::open` reads
//! and validates the record, `TraceLines` streams the trace zero-copy.

use std::fmt;
use std::path::{Path, PathBuf};

use reclaimlab_record::{Record, RecordError, TraceLines};

use crate::input::{LatencySample, RunInput, RunMeta, TraceStatus, VmstatPoint};
use crate::ops::Duration;
use crate::stalls::StallAggregator;

/// How many unparsable trace lines are quoted in the report.
pub const MAX_BAD_EXAMPLES: usize = 10;

/// A record that cannot be read: names the file, the line (if any) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file (or directory).
    pub path: PathBuf,
    /// 1-based line, when the problem is on one line.
    pub line: Option<u64>,
    /// What is wrong and what would be accepted.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.path.display(), l, self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for LoadError {}

fn err(path: &Path, line: Option<u64>, message: impl Into<String>) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// Reads one run record directory.
pub fn load_run(dir: &Path) -> Result<RunInput, LoadError> {
    if !dir.is_dir() {
        return Err(err(
            dir,
            None,
            "not a run record directory (expected a directory with run.json, vmstat.csv, latency.csv and optionally trace.txt.gz)",
        ));
    }
    let rec = Record::open(dir).map_err(from_record)?;
    let m = rec.meta();
    let meta = RunMeta {
        name: m.name.clone(),
        origin: m.origin.as_str().to_string(),
        kernel: m.kernel.clone(),
        workload: m.workload.name.clone(),
        record: dir.display().to_string(),
        reclaim_scope: m.reclaim_scope.as_str().to_string(),
        duration: Duration {
            user_s: m.duration.user_s,
            system_s: m.duration.system_s,
            elapsed_s: m.duration.elapsed_s,
        },
        steps: m
            .steps
            .iter()
            .map(|s| (s.step, s.start_s, s.end_s))
            .collect(),
        trace_captured: m.capture.trace,
        lost_events: m.capture.lost_events,
        capture_notes: m.capture.notes.clone(),
    };
    let vm = rec.vmstat();
    let vmstat_delta = vm
        .deltas()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let vmstat_series = vm
        .rows
        .iter()
        .map(|r| point(r.t_s, &vm.counters, &r.values))
        .collect();
    let latency = rec
        .latency()
        .iter()
        .map(|s| LatencySample {
            step: s.step,
            metric: s.metric.clone(),
            t_s: s.t_s,
            value_us: s.value_us,
        })
        .collect();
    let mut agg = StallAggregator::new();
    let trace = match rec.trace_lines().map_err(from_record)? {
        Some(mut lines) => read_trace(&mut lines, &mut agg),
        None => TraceStatus {
            present: false,
            file: dir.join("trace.txt.gz").display().to_string(),
            note: Some(if meta.capture_notes.is_empty() {
                "the run did not capture traces".to_string()
            } else {
                meta.capture_notes.join("; ")
            }),
            ..TraceStatus::default()
        },
    };
    Ok(RunInput {
        meta,
        vmstat_delta,
        vmstat_series,
        latency,
        stalls: agg.finish(),
        trace,
    })
}

fn from_record(e: RecordError) -> LoadError {
    let (path, line) = match &e {
        RecordError::Io { path, .. }
        | RecordError::Missing { path, .. }
        | RecordError::Meta { path, .. }
        | RecordError::Schema { path, .. }
        | RecordError::Import { path, .. }
        | RecordError::Usage { path, .. } => (path.clone(), None),
        RecordError::Line { path, line, .. } | RecordError::Gzip { path, line, .. } => {
            (path.clone(), Some(*line))
        }
    };
    // The record crate's message already names the file and line.
    let full = e.to_string();
    let prefix = match line {
        Some(l) => format!("{}:{l}: ", path.display()),
        None => format!("{}: ", path.display()),
    };
    LoadError {
        path,
        line,
        message: full
            .strip_prefix(&prefix)
            .map(str::to_string)
            .unwrap_or(full),
    }
}
fn zone_sum(cols: &[String], row: &[u64], pred: impl Fn(&str) -> bool) -> i64 {
    cols.iter()
        .zip(row)
        .filter(|(c, _)| pred(c))
        .map(|(_, v)| i64::try_from(*v).unwrap_or(i64::MAX))
        .fold(0i64, i64::saturating_add)
}

fn point(t_s: f64, cols: &[String], row: &[u64]) -> VmstatPoint {
    let zoned = |c: &str, p: &str| c == p || c.strip_prefix(p).is_some_and(|z| z.starts_with('_'));
    VmstatPoint {
        t_s,
        kswapd_scan: zone_sum(cols, row, |c| zoned(c, "pgscan_kswapd")),
        direct_scan: zone_sum(cols, row, |c| {
            zoned(c, "pgscan_direct") && c != "pgscan_direct_throttle"
        }),
        kswapd_steal: zone_sum(cols, row, |c| {
            zoned(c, "pgsteal_kswapd") || c == "kswapd_steal"
        }),
        direct_steal: zone_sum(cols, row, |c| zoned(c, "pgsteal_direct")),
        lru_scan: zone_sum(cols, row, |c| c == "pgscan_anon" || c == "pgscan_file"),
        lru_steal: zone_sum(cols, row, |c| c == "pgsteal_anon" || c == "pgsteal_file"),
    }
}
/// Streams a trace into the aggregator: unparsable lines are skipped and
/// counted (the first few quoted as `file:line: why`); a gzip stream that
/// ends early stops reading and is reported as truncated.
pub fn read_trace(lines: &mut TraceLines, agg: &mut StallAggregator) -> TraceStatus {
    let file = lines.path().display().to_string();
    let mut st = TraceStatus {
        present: true,
        file: file.clone(),
        ..TraceStatus::default()
    };
    while let Some(r) = lines.next_line() {
        match r {
            Ok(line) => match agg.observe_fields(line.event(), line.comm(), |n| line.field(n)) {
                Ok(true) => st.stall_events += 1,
                Ok(false) => {}
                Err(e) => {
                    let at = format!("{file}:{}: {}", lines.line_no(), e.0);
                    bad(&mut st, at);
                }
            },
            Err(e @ RecordError::Gzip { .. }) => {
                st.truncated = Some(e.to_string());
                break;
            }
            Err(e) => bad(&mut st, e.to_string()),
        }
    }
    st.lines = lines.line_no();
    st.lost_events = lines.lost_events();
    st
}

fn bad(st: &mut TraceStatus, at: String) {
    st.bad_lines += 1;
    if st.bad_examples.len() < MAX_BAD_EXAMPLES {
        st.bad_examples.push(at);
    }
}
