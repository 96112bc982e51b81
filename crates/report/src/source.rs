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
//! This adapter reads the files itself so the report does not wait for the
//! record crate; when `reclaimlab_record` offers `Record::open` and a streaming
//! `trace_lines()`, only this file changes.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use flate2::bufread::MultiGzDecoder;
use serde_json::Value;

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
    let meta = read_meta(dir)?;
    let (vmstat_delta, vmstat_series) = read_vmstat(&dir.join("vmstat.csv"))?;
    let latency = read_latency(&dir.join("latency.csv"))?;
    let trace_path = dir.join("trace.txt.gz");
    let mut agg = StallAggregator::new();
    let trace = if trace_path.exists() {
        read_trace(&trace_path, &mut agg)?
    } else {
        TraceStatus {
            present: false,
            file: trace_path.display().to_string(),
            note: Some(if meta.capture_notes.is_empty() {
                if meta.trace_captured {
                    "run.json says traces were captured but trace.txt.gz is missing".to_string()
                } else {
                    "the run did not capture traces".to_string()
                }
            } else {
                meta.capture_notes.join("; ")
            }),
            ..TraceStatus::default()
        }
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

fn str_key(v: &Value, path: &Path, key: &str) -> Result<String, LoadError> {
    let mut cur = v;
    for part in key.split('.') {
        cur = cur
            .get(part)
            .ok_or_else(|| err(path, None, format!("missing required key `{key}`")))?;
    }
    cur.as_str()
        .map(str::to_string)
        .ok_or_else(|| err(path, None, format!("key `{key}` must be a string")))
}

fn f64_key(v: &Value, path: &Path, key: &str) -> Result<f64, LoadError> {
    let d = v
        .get("duration")
        .ok_or_else(|| err(path, None, "missing required key `duration`"))?;
    d.get(key)
        .ok_or_else(|| err(path, None, format!("missing required key `duration.{key}`")))?
        .as_f64()
        .ok_or_else(|| err(path, None, format!("key `duration.{key}` must be a number of seconds")))
}

fn read_meta(dir: &Path) -> Result<RunMeta, LoadError> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|e| err(&path, None, format!("cannot read: {e}")))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| LoadError {
        path: path.clone(),
        line: Some(e.line() as u64),
        message: format!("not valid JSON: {e}"),
    })?;
    let schema = str_key(&v, &path, "schema")?;
    if !schema.starts_with("reclaimlab.run/") {
        return Err(err(&path, None, format!("schema `{schema}` is not a run record (expected `reclaimlab.run/1`)")));
    }
    let workload = match v.get("workload") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => str_key(&v, &path, "workload.name")?,
        None => return Err(err(&path, None, "missing required key `workload`")),
    };
    let steps = v
        .get("steps")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    Some((
                        u32::try_from(s.get("step")?.as_u64()?).ok()?,
                        s.get("start_s").and_then(Value::as_f64).unwrap_or(0.0),
                        s.get("end_s").and_then(Value::as_f64).unwrap_or(0.0),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let capture = v.get("capture");
    Ok(RunMeta {
        name: str_key(&v, &path, "name")?,
        origin: str_key(&v, &path, "origin")?,
        kernel: str_key(&v, &path, "kernel")?,
        workload,
        record: dir.display().to_string(),
        reclaim_scope: v
            .get("reclaim_scope")
            .and_then(Value::as_str)
            .unwrap_or("global")
            .to_string(),
        duration: Duration {
            user_s: f64_key(&v, &path, "user_s")?,
            system_s: f64_key(&v, &path, "system_s")?,
            elapsed_s: f64_key(&v, &path, "elapsed_s")?,
        },
        steps,
        trace_captured: capture
            .and_then(|c| c.get("trace"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        lost_events: capture
            .and_then(|c| c.get("lost_events"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        capture_notes: capture
            .and_then(|c| c.get("notes"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
            .unwrap_or_default(),
    })
}

fn open_lines(path: &Path) -> Result<std::io::Lines<BufReader<File>>, LoadError> {
    let f = File::open(path).map_err(|e| err(path, None, format!("cannot open: {e}")))?;
    Ok(BufReader::new(f).lines())
}

fn zone_sum(cols: &[String], row: &[i64], pred: impl Fn(&str) -> bool) -> i64 {
    cols.iter()
        .zip(row)
        .filter(|(c, _)| pred(c))
        .map(|(_, v)| *v)
        .sum()
}

fn point(t_s: f64, cols: &[String], row: &[i64]) -> VmstatPoint {
    let zoned = |c: &str, p: &str| c == p || c.strip_prefix(p).is_some_and(|z| z.starts_with('_'));
    VmstatPoint {
        t_s,
        kswapd_scan: zone_sum(cols, row, |c| zoned(c, "pgscan_kswapd")),
        direct_scan: zone_sum(cols, row, |c| zoned(c, "pgscan_direct") && c != "pgscan_direct_throttle"),
        kswapd_steal: zone_sum(cols, row, |c| zoned(c, "pgsteal_kswapd") || c == "kswapd_steal"),
        direct_steal: zone_sum(cols, row, |c| zoned(c, "pgsteal_direct")),
        lru_scan: zone_sum(cols, row, |c| c == "pgscan_anon" || c == "pgscan_file"),
        lru_steal: zone_sum(cols, row, |c| c == "pgsteal_anon" || c == "pgsteal_file"),
    }
}

type VmstatData = (BTreeMap<String, i64>, Vec<VmstatPoint>);

fn read_vmstat(path: &Path) -> Result<VmstatData, LoadError> {
    let mut lines = open_lines(path)?;
    let header = match lines.next() {
        Some(Ok(h)) => h,
        Some(Err(e)) => return Err(err(path, Some(1), format!("cannot read: {e}"))),
        None => return Err(err(path, None, "empty file (expected a header `t_s,step,<counters>...`)")),
    };
    let cols: Vec<String> = header.trim_end().split(',').map(str::to_string).collect();
    if cols.len() < 2 || cols[0] != "t_s" || cols[1] != "step" {
        return Err(err(path, Some(1), "header must start with `t_s,step` followed by /proc/vmstat counter names"));
    }
    let counters = cols[2..].to_vec();
    let mut first: Option<Vec<i64>> = None;
    let mut last: Vec<i64> = Vec::new();
    let mut series = Vec::new();
    let mut prev_t = f64::NEG_INFINITY;
    for (i, line) in lines.enumerate() {
        let lineno = i as u64 + 2;
        let line = line.map_err(|e| err(path, Some(lineno), format!("cannot read: {e}")))?;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split(',');
        let t: f64 = parts
            .next()
            .and_then(|t| t.parse().ok())
            .filter(|t: &f64| t.is_finite())
            .ok_or_else(|| err(path, Some(lineno), "t_s is not a number of seconds"))?;
        if t < prev_t {
            return Err(err(path, Some(lineno), format!("rows must be in time order (t_s {t} after {prev_t})")));
        }
        prev_t = t;
        parts
            .next()
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or_else(|| err(path, Some(lineno), "step is not a non-negative integer"))?;
        let mut row = Vec::with_capacity(counters.len());
        for (j, v) in parts.enumerate() {
            let v: u64 = v.parse().map_err(|_| {
                err(
                    path,
                    Some(lineno),
                    format!(
                        "counter `{}` value `{v}` is not a non-negative integer",
                        counters.get(j).map(String::as_str).unwrap_or("?")
                    ),
                )
            })?;
            row.push(i64::try_from(v).unwrap_or(i64::MAX));
        }
        if row.len() != counters.len() {
            return Err(err(
                path,
                Some(lineno),
                format!("{} values for {} counters in the header", row.len(), counters.len()),
            ));
        }
        series.push(point(t, &counters, &row));
        if first.is_none() {
            first = Some(row.clone());
        }
        last = row;
    }
    let first = first.ok_or_else(|| err(path, None, "no samples (need at least one row after the header)"))?;
    let delta = counters
        .iter()
        .zip(first.iter().zip(&last))
        .map(|(c, (a, b))| (c.clone(), b.saturating_sub(*a)))
        .collect();
    Ok((delta, series))
}

fn read_latency(path: &Path) -> Result<Vec<LatencySample>, LoadError> {
    let mut lines = open_lines(path)?;
    match lines.next() {
        Some(Ok(h)) if h.trim_end() == "step,metric,t_s,value_us" => {}
        Some(Ok(_)) => return Err(err(path, Some(1), "header must be `step,metric,t_s,value_us`")),
        Some(Err(e)) => return Err(err(path, Some(1), format!("cannot read: {e}"))),
        None => return Err(err(path, None, "empty file (expected the header `step,metric,t_s,value_us`)")),
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let lineno = i as u64 + 2;
        let line = line.map_err(|e| err(path, Some(lineno), format!("cannot read: {e}")))?;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 4 {
            return Err(err(path, Some(lineno), format!("{} fields, expected 4: step,metric,t_s,value_us", f.len())));
        }
        let step = f[0]
            .parse()
            .map_err(|_| err(path, Some(lineno), "step is not a non-negative integer"))?;
        let t_s = f[2].parse().map_err(|_| err(path, Some(lineno), "t_s is not a number"))?;
        let value_us: f64 = f[3]
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| err(path, Some(lineno), "value_us is not a non-negative number of microseconds"))?;
        out.push(LatencySample {
            step,
            metric: f[1].to_string(),
            t_s,
            value_us,
        });
    }
    Ok(out)
}

/// The parts of an ftrace text line the report uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedLine<'a> {
    /// Task comm (may contain spaces and dashes).
    pub comm: &'a str,
    /// Task pid.
    pub pid: u32,
    /// CPU.
    pub cpu: u32,
    /// Timestamp as printed (seconds).
    pub timestamp: &'a str,
    /// Event name.
    pub event: &'a str,
    /// Everything after `event: `.
    pub fields: &'a str,
}

/// `name=value` lookup in an event's field text.
pub fn field<'a>(fields: &'a str, name: &str) -> Option<&'a str> {
    fields.split(' ').find_map(|tok| {
        tok.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
    })
}

/// Parses one line of the kernel's `trace`/`trace_pipe` output:
/// `COMM-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS` (FLAGS and a `(TGID)`
/// column are optional).
pub fn parse_ftrace_line(line: &str) -> Result<ParsedLine<'_>, &'static str> {
    let b = line.as_bytes();
    let mut search = 0;
    let (comm, pid, cpu, rest) = loop {
        let Some(off) = line[search..].find(" [") else {
            return Err("no `TASK-PID [CPU]` prefix");
        };
        let pos = search + off;
        let mut j = pos + 2;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > pos + 2 && j < b.len() && b[j] == b']' {
            let mut head = line[..pos].trim();
            if head.ends_with(')') {
                // `comm-pid (tgid)` with the record-tgid option.
                if let Some(p) = head.rfind('(') {
                    head = head[..p].trim_end();
                }
            }
            if let Some(d) = head.rfind('-') {
                if let Ok(pid) = head[d + 1..].parse::<u32>() {
                    let cpu = line[pos + 2..j].parse::<u32>().unwrap_or(0);
                    break (&head[..d], pid, cpu, &line[j + 1..]);
                }
            }
        }
        search = pos + 2;
    };
    let rest = rest.trim_start();
    let (mut tok, mut after) = rest.split_once(' ').unwrap_or((rest, ""));
    if !is_timestamp(tok) {
        // Flags column (`.....`, `d..1.`).
        let r = after.trim_start();
        (tok, after) = r.split_once(' ').unwrap_or((r, ""));
    }
    if !is_timestamp(tok) {
        return Err("no `SECONDS.MICROS:` timestamp");
    }
    let after = after.trim_start();
    let (event, fields) = after.split_once(':').ok_or("no `EVENT:` after the timestamp")?;
    if event.is_empty() || event.contains(' ') {
        return Err("no `EVENT:` after the timestamp");
    }
    Ok(ParsedLine {
        comm,
        pid,
        cpu,
        timestamp: &tok[..tok.len() - 1],
        event,
        fields: fields.trim_start(),
    })
}

fn is_timestamp(tok: &str) -> bool {
    let Some(t) = tok.strip_suffix(':') else { return false };
    let mut dot = false;
    !t.is_empty()
        && t.bytes().all(|c| {
            if c == b'.' && !dot {
                dot = true;
                true
            } else {
                c.is_ascii_digit()
            }
        })
}

/// `CPU:N [LOST M EVENTS]` lines of trace_pipe.
fn lost_events(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("CPU:")?;
    let i = rest.find("[LOST ")?;
    rest[i + 6..].split(' ').next()?.parse().ok()
}

/// Streams a gzip trace into the aggregator. I/O errors opening the file are
/// errors; a stream that ends early or is corrupt stops reading and is
/// reported in the status.
pub fn read_trace(path: &Path, agg: &mut StallAggregator) -> Result<TraceStatus, LoadError> {
    let f = File::open(path).map_err(|e| err(path, None, format!("cannot open: {e}")))?;
    let mut rd = BufReader::with_capacity(1 << 18, MultiGzDecoder::new(BufReader::with_capacity(1 << 16, f)));
    let file = path.display().to_string();
    let mut st = TraceStatus {
        present: true,
        file: file.clone(),
        ..TraceStatus::default()
    };
    let mut buf = Vec::with_capacity(512);
    loop {
        buf.clear();
        match rd.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                st.truncated = Some(format!(
                    "{file}: gzip stream ends early or is corrupt after line {}: {e}",
                    st.lines
                ));
                break;
            }
        }
        st.lines += 1;
        let line = match std::str::from_utf8(&buf) {
            Ok(s) => s.trim_end_matches(['\n', '\r']),
            Err(_) => {
                bad(&mut st, &file, "not UTF-8 text");
                continue;
            }
        };
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(n) = lost_events(t) {
            st.lost_events += n;
            continue;
        }
        match parse_ftrace_line(line) {
            Ok(p) => match agg.observe_fields(p.event, p.comm, |n| field(p.fields, n)) {
                Ok(true) => st.stall_events += 1,
                Ok(false) => {}
                Err(e) => bad(&mut st, &file, &e.0),
            },
            Err(why) => bad(&mut st, &file, why),
        }
    }
    Ok(st)
}

fn bad(st: &mut TraceStatus, file: &str, why: &str) {
    st.bad_lines += 1;
    if st.bad_examples.len() < MAX_BAD_EXAMPLES {
        st.bad_examples.push(format!("{file}:{}: {why}", st.lines));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_lines() {
        let l = "           <...>-1234  [001] .....  12.345678: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK";
        let p = parse_ftrace_line(l).unwrap();
        assert_eq!((p.comm, p.pid, p.cpu, p.timestamp, p.event), ("<...>", 1234, 1, "12.345678", "mm_vmscan_throttled"));
        assert_eq!(field(p.fields, "usect_delayed"), Some("4000"));
        assert_eq!(field(p.fields, "usec_timeout"), Some("100000"));
        assert_eq!(field(p.fields, "reason"), Some("VMSCAN_THROTTLE_WRITEBACK"));
        let l = "         kswapd0-51    [000] .....  12.400000: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000";
        let p = parse_ftrace_line(l).unwrap();
        assert_eq!((p.comm, p.pid, p.event), ("kswapd0", 51, "writeback_congestion_wait"));
        // No flags column, comm with dash and space, tgid column.
        let l = "  my-task x-77 [3] 1.5: ev: a=1";
        let p = parse_ftrace_line(l).unwrap();
        assert_eq!((p.comm, p.pid, p.cpu, p.event, p.fields), ("my-task x", 77, 3, "ev", "a=1"));
        let l = "fio-99 (   99) [002] d..1. 3.000001: mm_vmscan_throttled: nid=0";
        assert_eq!(parse_ftrace_line(l).unwrap().comm, "fio");
        assert!(parse_ftrace_line("garbage").is_err());
        assert!(parse_ftrace_line("x-1 [000] ..... notatime: ev: a").is_err());
        assert_eq!(lost_events("CPU:3 [LOST 123 EVENTS]"), Some(123));
    }
}
