//! Reading a run record directory into a [`RunInput`] (the only code here
//! that knows the on-disk format, `docs/run-record.md`).
//!
//! The trace is streamed: `trace.txt.gz` is decompressed and parsed line by
//! line into the [`StallAggregator`] and the [`MonitorAggregator`] (mmtests'
//! ftrace stall monitors), so memory does not grow with the trace.
//! A line that does not parse is skipped, counted, and its `file:line`
//! remembered (the first few); a gzip stream that ends early stops the trace
//! there and is reported. Missing or malformed `run.json`, `vmstat.csv` or
//! `latency.csv` is an error naming the file, the line and what is accepted.
//!
//! This is the only file that uses `reclaimlab_record`: `Record::open` reads
//! and validates the record, the trace is streamed with its line parser (`parse_trace_line`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::mpsc;

use reclaimlab_record::lines::{gunzip_bounded, GZIP_BOMB};
use reclaimlab_record::{parse_trace_line, ParseError, Record, RecordError};

use crate::input::{LatencySample, RunInput, RunMeta, TaskUse, TraceStatus, VmstatPoint};
use crate::monitor::MonitorAggregator;
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

/// A machine in one line, for the HTML header: `small: 2 CPUs, 512 MiB,
/// swap 128 MiB, HZ 250; sda blk-mq 500/530 MB/s write/read`.
fn describe_machine(m: &reclaimlab_record::Machine) -> String {
    let mib = |b: u64| {
        if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
            format!("{} GiB", b >> 30)
        } else {
            format!("{} MiB", b >> 20)
        }
    };
    let mut s = format!("{}: {} CPUs", m.name, m.cpus);
    if m.nodes > 1 {
        s += &format!(", {} NUMA nodes", m.nodes);
    }
    s += &format!(", {}, swap {}", mib(m.memory_bytes), mib(m.swap_bytes));
    if let Some(hz) = m.hz {
        s += &format!(", HZ {hz}");
    }
    let devs: Vec<String> = m
        .devices
        .iter()
        .map(|d| {
            format!(
                "{} {} {:.0}/{:.0} MB/s write/read",
                d.name, d.layer, d.write_mb_s, d.read_mb_s
            )
        })
        .collect();
    if !devs.is_empty() {
        s += "; ";
        s += &devs.join(", ");
    }
    s
}

/// Reads one run record directory.
pub fn load_run(dir: &Path) -> Result<RunInput, LoadError> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Err(err(
            dir,
            None,
            "does not exist (give a run record directory, as `sim` and `run` write under out/, or a folder of them)",
        ));
    }
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
        oom_kills: m.oom_kills.clone(),
        settings: [
            ("kernel".to_string(), m.kernel.clone()),
            ("machine".to_string(), m.machine.name.clone()),
            (
                "seed".to_string(),
                m.seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
            ),
        ]
        .into_iter()
        .chain(m.params.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect(),
        about: crate::input::RunAbout {
            machine: describe_machine(&m.machine),
            workload_spec: m.workload.spec.clone(),
            seed: m.seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
            tool_version: m.tool_version.clone(),
            workload_settings: m
                .params
                .iter()
                .filter(|(k, _)| {
                    k.starts_with(&format!("{}.", m.workload.name)) || k.starts_with("workload.")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        },
        task_cpu: {
            let mut by: BTreeMap<&str, TaskUse> = BTreeMap::new();
            for t in &m.tasks {
                let class = crate::input::task_class(&t.comm);
                let e = by.entry(class).or_insert_with(|| TaskUse {
                    class: class.to_string(),
                    ..TaskUse::default()
                });
                e.user_s += t.user_s;
                e.system_s += t.system_s;
                let add = |sum: &mut Option<u64>, v: Option<u64>| {
                    if let Some(v) = v {
                        *sum = Some(sum.unwrap_or(0) + v);
                    }
                };
                add(&mut e.pages_allocated, t.pages_allocated);
                add(&mut e.pages_freed, t.pages_freed);
            }
            by.into_values().collect()
        },
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
    let mut mon = MonitorAggregator::new();
    let trace = match rec.trace_path() {
        Some(path) => read_trace_file(&path, &mut agg, &mut mon)?,
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
        vmstat_restarts: vm.restarts(),
        vmstat_delta,
        vmstat_series,
        latency,
        stalls: agg.finish(),
        monitors: mon.finish(),
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
        nr_mlock: zone_sum(cols, row, |c| c == "nr_mlock"),
        allocstall: zone_sum(cols, row, |c| zoned(c, "allocstall")),
    }
}
/// Chunk size handed from the decompressing thread to the parsing thread.
const CHUNK: usize = 1 << 20;

/// The longest trace line read (the record crate's limit, which the importers
/// and the record writer enforce too). A longer "line" (no newline within it:
/// not a text trace) is skipped to its end and reported as garbled, so memory
/// stays bounded and reading always moves on.
pub const MAX_LINE: usize = reclaimlab_record::lines::MAX_LINE;

/// What the decompressing thread hands on.
enum Piece {
    /// Complete lines (the last may lack its newline at the end of the file).
    Lines(Vec<u8>),
    /// A line longer than [`MAX_LINE`], skipped.
    LongLine,
}

/// Streams a trace file (gzip or plain, by magic bytes) into the aggregators
/// (stall histograms and ftrace stall monitors), in one pass.
///
/// Decompression runs in a helper thread that hands newline-aligned 1 MiB
/// chunks to this thread through a bounded channel (4 chunks in flight), so
/// memory stays bounded and gunzip overlaps parsing on a second core. Lines are
/// parsed by `reclaimlab_record::parse_trace_line`, with `TraceLines`'
/// semantics: comments, blank and header lines skipped, `[LOST N EVENTS]`
/// counted, a garbled line (or one longer than [`MAX_LINE`]) skipped, counted
/// and its `file:line` kept (the first few); a stream that ends early or is
/// corrupt stops reading there and is reported as truncated. A gzip stream
/// that expands more than `lines::MAX_GZIP_RATIO` times (a gzip bomb) is an
/// error.
pub fn read_trace_file(
    path: &Path,
    agg: &mut StallAggregator,
    mon: &mut MonitorAggregator,
) -> Result<TraceStatus, LoadError> {
    let file = path.display().to_string();
    let mut f = File::open(path).map_err(|e| err(path, None, format!("cannot open: {e}")))?;
    let mut magic = [0u8; 2];
    let gz = f
        .read(&mut magic)
        .map_err(|e| err(path, None, format!("cannot read: {e}")))?
        == 2
        && magic == [0x1f, 0x8b];
    f.seek(SeekFrom::Start(0))
        .map_err(|e| err(path, None, format!("cannot read: {e}")))?;
    let reader: Box<dyn Read + Send> = if gz {
        Box::new(gunzip_bounded(f))
    } else {
        Box::new(f)
    };
    let mut st = TraceStatus {
        present: true,
        file: file.clone(),
        ..TraceStatus::default()
    };
    let mut bomb = None;
    let (tx, rx) = mpsc::sync_channel::<std::io::Result<Piece>>(4);
    std::thread::scope(|s| {
        s.spawn(move || produce_chunks(reader, tx));
        for msg in rx {
            match msg {
                Ok(Piece::Lines(chunk)) => consume_chunk(&chunk, &file, &mut st, agg, mon),
                Ok(Piece::LongLine) => {
                    st.lines += 1;
                    let at = format!(
                        "{file}:{}: a line longer than {} MiB (no ftrace line is); skipped to its end",
                        st.lines,
                        MAX_LINE >> 20
                    );
                    bad(&mut st, at);
                }
                Err(e) if e.to_string().starts_with(GZIP_BOMB) => {
                    bomb = Some(err(path, Some(st.lines + 1), e.to_string()));
                    break;
                }
                Err(e) => {
                    st.truncated = Some(format!(
                        "{file}:{}: the gzip stream is truncated or corrupt after {} complete lines ({e}); stalls are counted up to there (`gzip -t` checks the file)",
                        st.lines + 1,
                        st.lines
                    ));
                    break;
                }
            }
        }
    });
    match bomb {
        Some(e) => Err(e),
        None => Ok(st),
    }
}

/// Reads into `buf` up to `want` more bytes (fewer at the end of the input).
/// `Ok(true)` at the end of the input.
fn fill(reader: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    let start = buf.len();
    buf.resize(start + want, 0);
    loop {
        match reader.read(&mut buf[start..]) {
            Ok(0) => {
                buf.truncate(start);
                return Ok(true);
            }
            Ok(n) => {
                buf.truncate(start + n);
                return Ok(false);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(start);
                return Err(e);
            }
        }
    }
}

/// The decompressing thread: cuts the stream into pieces of whole lines.
/// Every buffer starts at a line's start; a line with no newline within
/// [`MAX_LINE`] bytes is dropped up to its newline (read and discarded in
/// 64 KiB pieces) and handed on as [`Piece::LongLine`]. So memory stays
/// under about `CHUNK + MAX_LINE` and every pass makes progress, whatever
/// the input.
fn produce_chunks(mut reader: Box<dyn Read + Send>, tx: mpsc::SyncSender<std::io::Result<Piece>>) {
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buf = Vec::with_capacity(CHUNK.max(carry.len()) + READ);
        buf.append(&mut carry);
        let mut seen_nl = false;
        let mut scanned = 0;
        // Fill to CHUNK, then on until a newline or past MAX_LINE.
        let end = loop {
            seen_nl = seen_nl || memchr::memchr(b'\n', &buf[scanned..]).is_some();
            scanned = buf.len();
            if buf.len() >= CHUNK && (seen_nl || buf.len() > MAX_LINE) {
                break None;
            }
            match fill(&mut *reader, &mut buf, READ) {
                Ok(false) => {}
                Ok(true) => break Some(None),
                Err(e) => break Some(Some(e)),
            }
        };
        if let Some(failed) = end {
            // Complete lines before an error still count; at the end of the
            // input the last line may lack its newline.
            if failed.is_some() {
                let keep = memchr::memrchr(b'\n', &buf).map_or(0, |nl| nl + 1);
                buf.truncate(keep);
            }
            if send_lines(buf, &tx) {
                if let Some(e) = failed {
                    let _ = tx.send(Err(e));
                }
            }
            return;
        }
        let first = memchr::memchr(b'\n', &buf);
        match first {
            Some(f) if f <= MAX_LINE => {
                let nl = memchr::memrchr(b'\n', &buf).unwrap_or(f);
                carry = buf.split_off(nl + 1);
                if tx.send(Ok(Piece::Lines(buf))).is_err() {
                    return;
                }
            }
            _ => {
                if tx.send(Ok(Piece::LongLine)).is_err() {
                    return;
                }
                // Drop the rest of the over-long line.
                carry = match first {
                    Some(f) => buf.split_off(f + 1),
                    None => loop {
                        buf.clear();
                        match fill(&mut *reader, &mut buf, READ) {
                            Ok(false) => {}
                            Ok(true) => return,
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        }
                        if let Some(nl) = memchr::memchr(b'\n', &buf) {
                            break buf.split_off(nl + 1);
                        }
                    },
                };
            }
        }
    }
}

/// Bytes asked of the reader at a time.
const READ: usize = 64 * 1024;

/// Sends the last lines of the input, an over-long one as [`Piece::LongLine`].
/// False if the receiver has gone.
fn send_lines(mut buf: Vec<u8>, tx: &mpsc::SyncSender<std::io::Result<Piece>>) -> bool {
    while !buf.is_empty() {
        let first = memchr::memchr(b'\n', &buf).unwrap_or(buf.len());
        if first <= MAX_LINE {
            return tx.send(Ok(Piece::Lines(buf))).is_ok();
        }
        if tx.send(Ok(Piece::LongLine)).is_err() {
            return false;
        }
        buf = buf.split_off((first + 1).min(buf.len()));
    }
    true
}

fn consume_chunk(
    chunk: &[u8],
    file: &str,
    st: &mut TraceStatus,
    agg: &mut StallAggregator,
    mon: &mut MonitorAggregator,
) {
    // Validate the whole chunk at once (fast path); fall back per line.
    if let Ok(text) = std::str::from_utf8(chunk) {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk).chain(std::iter::once(chunk.len())) {
            consume_line(&text[start..nl], file, st, agg, mon);
            start = nl + 1;
            if start >= chunk.len() {
                break;
            }
        }
        return;
    }
    for raw in chunk.split_inclusive(|&b| b == b'\n') {
        match std::str::from_utf8(raw) {
            Ok(t) => consume_line(t.trim_end_matches('\n'), file, st, agg, mon),
            Err(_) => {
                st.lines += 1;
                bad(
                    st,
                    format!(
                        "{file}:{}: not UTF-8 text; expected an ftrace text line",
                        st.lines
                    ),
                );
            }
        }
    }
}

fn consume_line(
    text: &str,
    file: &str,
    st: &mut TraceStatus,
    agg: &mut StallAggregator,
    mon: &mut MonitorAggregator,
) {
    st.lines += 1;
    let text = text.strip_suffix('\r').unwrap_or(text);
    match parse_trace_line(text) {
        Ok(line) => {
            // A line the stall histograms reject is skipped whole (reported
            // once), so the monitors never see what the histograms do not.
            let field = |n: &str| line.field(n);
            let used = agg
                .observe_fields(line.event(), line.comm(), field)
                .and_then(|stall| {
                    st.stall_events += u64::from(stall);
                    mon.observe_fields(
                        line.event(),
                        line.comm(),
                        line.pid(),
                        line.timestamp_ns(),
                        field,
                    )
                });
            match used {
                Ok(true) => st.monitor_events += 1,
                Ok(false) => {}
                Err(e) => bad(st, format!("{file}:{}: {}", st.lines, e.0)),
            }
        }
        Err(ParseError::LostEvents { lost, .. }) => st.lost_events += lost,
        Err(e @ ParseError::Garbled(_)) => bad(st, format!("{file}:{}: {e}", st.lines)),
        Err(_) => {}
    }
}

fn bad(st: &mut TraceStatus, at: String) {
    st.bad_lines += 1;
    if st.bad_examples.len() < MAX_BAD_EXAMPLES {
        st.bad_examples.push(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_boundaries_lose_no_line() {
        let dir =
            std::env::temp_dir().join(format!("reclaimlab-report-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trace.txt");
        let mut text = String::from("# tracer: nop\n");
        let n = 30_000;
        for i in 0..n {
            text.push_str(&format!(
                "         kswapd0-51    [000] .....  {i}.000000: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed={} reason=VMSCAN_THROTTLE_WRITEBACK\n",
                (i % 3) * 4000
            ));
        }
        text.push_str("CPU:1 [LOST 7 EVENTS]\nnot a line\n");
        // The last line has no newline.
        text.push_str("fio-9 [001] ..... 9.0: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000");
        std::fs::write(&path, &text).unwrap();
        let mut agg = StallAggregator::new();
        let mut mon = MonitorAggregator::new();
        let st = read_trace_file(&path, &mut agg, &mut mon).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(st.lines, n + 4);
        assert_eq!(st.stall_events, n + 1);
        // The congestion_wait line is the only one the monitors read.
        assert_eq!(st.monitor_events, 1);
        assert_eq!(st.lost_events, 7);
        assert_eq!(st.bad_lines, 1);
        assert!(
            st.bad_examples[0].contains(&format!("trace.txt:{}:", n + 3)),
            "{:?}",
            st.bad_examples
        );
        assert!(st.truncated.is_none());
        let s = agg.finish();
        assert_eq!(s.counts.iter().map(|c| c.count).sum::<u64>(), n + 1);
    }
}
