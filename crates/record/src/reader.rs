//! Reading and validating a run record.
//!
//! [`Record::open`] reads `run.json`, `vmstat.csv` and `latency.csv` whole and
//! validates every line (they are small: seconds-resolution samples), so a
//! report never starts on a broken record; the error names the file and line.
//! The trace can be huge (tens of millions of lines), so it is never loaded:
//! [`Record::trace_lines`] streams it with bounded memory and reports a garbled
//! line or a truncated gzip as an error naming `trace.txt.gz:LINE`, leaving the
//! choice between skipping and stopping to the caller.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{RecordError, Result};
use crate::lines::{read_error, LineReader};
use crate::meta::RunMeta;
use crate::trace::{parse_trace_line, OwnedTraceLine, ParseError, TraceLine};
use crate::vmstat::{Vmstat, VmstatRow};
use crate::writer::files;

/// One latency sample of `latency.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySample {
    /// The step (stutterp: worker count).
    pub step: u32,
    /// What was measured (`mmap`).
    pub metric: String,
    /// Seconds from the record's time 0.
    pub t_s: f64,
    /// The latency, microseconds.
    pub value_us: f64,
}

/// A run record read from disk and validated.
#[derive(Debug, Clone)]
pub struct Record {
    dir: PathBuf,
    meta: RunMeta,
    vmstat: Vmstat,
    latency: Vec<LatencySample>,
}

/// Largest `run.json` read: a simulation of 10,000 workers records 130,000
/// parameters in about 6 MiB.
pub const MAX_RUN_JSON: u64 = 64 << 20;
/// Largest `vmstat.csv` or `latency.csv` read (they are read whole): a day of
/// one-second vmstat rows is about 170 MiB, and importers stop far below
/// (`import::MAX_LATENCY_SAMPLES`).
pub const MAX_CSV: u64 = 512 << 20;

/// Reads a whole file of at most `cap` bytes (see [`MAX_RUN_JSON`], [`MAX_CSV`]).
fn read_bounded(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut b = Vec::new();
    fs::File::open(path)?.take(cap + 1).read_to_end(&mut b)?;
    Ok(b)
}

fn read_text(path: &Path, cap: u64, hint: &str) -> Result<String> {
    match read_bounded(path, cap) {
        Ok(b) if b.len() as u64 > cap => Err(RecordError::line(
            path,
            1,
            format!(
                "larger than {} MiB, more than any record holds: not this record's file? \
                 (records are read whole, so the size is limited; re-copy or re-create the record)",
                cap >> 20
            ),
        )),
        Ok(b) => String::from_utf8(b).map_err(|e| {
            // Find the line of the first invalid byte.
            let upto = e.utf8_error().valid_up_to();
            let line = 1 + e.as_bytes()[..upto].iter().filter(|&&c| c == b'\n').count() as u64;
            RecordError::line(path, line, "not UTF-8 text")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(RecordError::Missing {
            path: path.to_path_buf(),
            hint: hint.to_string(),
        }),
        Err(e) => Err(RecordError::io(path, "reading", e)),
    }
}

fn parse_f64(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn parse_vmstat_csv(path: &Path, text: &str) -> Result<Vmstat> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(RecordError::line(
            path,
            1,
            "empty file; expected the header `t_s,step,COUNTER,...`",
        ));
    };
    let mut cols = header.trim_end_matches('\r').split(',');
    if cols.next() != Some("t_s") || cols.next() != Some("step") {
        return Err(RecordError::line(
            path,
            1,
            format!("header {header:?} must start with `t_s,step` followed by /proc/vmstat counter names"),
        ));
    }
    let counters: Vec<String> = cols.map(str::to_string).collect();
    for c in &counters {
        if c.is_empty() || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(RecordError::line(
                path,
                1,
                format!("header column {c:?} is not a /proc/vmstat counter name"),
            ));
        }
    }
    let mut rows = Vec::new();
    let mut last_t = f64::NEG_INFINITY;
    for (i, line) in lines {
        let ln = i as u64 + 1;
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let mut f = line.split(',');
        let t = f.next().unwrap_or("");
        let Some(t_s) = parse_f64(t) else {
            return Err(RecordError::line(
                path,
                ln,
                format!("t_s {t:?} is not a number of seconds"),
            ));
        };
        if t_s < last_t {
            return Err(RecordError::line(
                path,
                ln,
                format!("t_s {t_s} is earlier than the previous row's {last_t}; rows must be in time order"),
            ));
        }
        last_t = t_s;
        let s = f.next().unwrap_or("");
        let Ok(step) = s.parse::<u32>() else {
            return Err(RecordError::line(
                path,
                ln,
                format!("step {s:?} is not a non-negative integer"),
            ));
        };
        let mut values = Vec::with_capacity(counters.len());
        for (k, v) in f.enumerate() {
            match v.parse::<u64>() {
                Ok(v) if v > crate::vmstat::MAX_COUNTER => {
                    let name = counters.get(k).map_or("(extra column)", String::as_str);
                    return Err(RecordError::line(
                        path,
                        ln,
                        format!("value {v} of {name} is above 2^63-1; no /proc/vmstat counter reaches it (a corrupted file? re-create the record)"),
                    ));
                }
                Ok(v) => values.push(v),
                Err(_) => {
                    let name = counters.get(k).map_or("(extra column)", String::as_str);
                    return Err(RecordError::line(
                        path,
                        ln,
                        format!("value {v:?} of {name} is not a non-negative integer"),
                    ));
                }
            }
        }
        if values.len() != counters.len() {
            return Err(RecordError::line(
                path,
                ln,
                format!(
                    "{} columns, the header has {} (t_s, step and {} counters)",
                    values.len() + 2,
                    counters.len() + 2,
                    counters.len()
                ),
            ));
        }
        rows.push(VmstatRow { t_s, step, values });
    }
    Ok(Vmstat { counters, rows })
}

fn parse_latency_csv(path: &Path, text: &str) -> Result<Vec<LatencySample>> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h.trim_end_matches('\r') == "step,metric,t_s,value_us" => {}
        Some((_, h)) => {
            return Err(RecordError::line(
                path,
                1,
                format!("header {h:?}; expected `step,metric,t_s,value_us`"),
            ))
        }
        None => {
            return Err(RecordError::line(
                path,
                1,
                "empty file; expected the header `step,metric,t_s,value_us`",
            ))
        }
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let ln = i as u64 + 1;
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.splitn(5, ',').collect();
        if f.len() != 4 {
            return Err(RecordError::line(
                path,
                ln,
                format!("{} columns; expected 4: step,metric,t_s,value_us", f.len()),
            ));
        }
        let Ok(step) = f[0].parse::<u32>() else {
            return Err(RecordError::line(
                path,
                ln,
                format!("step {:?} is not a non-negative integer", f[0]),
            ));
        };
        if f[1].is_empty() {
            return Err(RecordError::line(path, ln, "empty metric name"));
        }
        let Some(t_s) = parse_f64(f[2]) else {
            return Err(RecordError::line(
                path,
                ln,
                format!("t_s {:?} is not a number of seconds", f[2]),
            ));
        };
        let Some(value_us) = parse_f64(f[3]).filter(|v| *v >= 0.0) else {
            return Err(RecordError::line(
                path,
                ln,
                format!(
                    "value_us {:?} is not a non-negative number of microseconds",
                    f[3]
                ),
            ));
        };
        let metric = f[1].to_string();
        out.push(LatencySample {
            step,
            metric,
            t_s,
            value_us,
        });
    }
    Ok(out)
}

impl Record {
    /// Reads and validates the record in `dir`. `trace.txt.gz` is not read here
    /// (see [`Record::trace_lines`]).
    pub fn open(dir: &Path) -> Result<Record> {
        if !dir.is_dir() {
            return Err(RecordError::Missing {
                path: dir.to_path_buf(),
                hint: "not a directory; a run record is a directory with run.json, vmstat.csv, latency.csv (see docs/run-record.md)".into(),
            });
        }
        let p = dir.join(files::RUN_JSON);
        let text = read_text(
            &p,
            MAX_RUN_JSON,
            "every record has run.json, written last; a record without it is incomplete (an interrupted run?)",
        )?;
        let meta = RunMeta::from_json(&text, &p)?;
        let p = dir.join(files::VMSTAT_CSV);
        let vmstat = parse_vmstat_csv(
            &p,
            &read_text(
                &p,
                MAX_CSV,
                "every record has vmstat.csv (at least the header `t_s,step`)",
            )?,
        )?;
        let p = dir.join(files::LATENCY_CSV);
        let latency = parse_latency_csv(
            &p,
            &read_text(
                &p,
                MAX_CSV,
                "every record has latency.csv (at least the header `step,metric,t_s,value_us`)",
            )?,
        )?;
        if meta.capture.trace && !dir.join(files::TRACE_GZ).is_file() {
            return Err(RecordError::Missing {
                path: dir.join(files::TRACE_GZ),
                hint: "run.json says a trace was captured (capture.trace = true) but the file is not there; \
                       re-copy the record, or set capture.trace to false"
                    .into(),
            });
        }
        Ok(Record {
            dir: dir.to_path_buf(),
            meta,
            vmstat,
            latency,
        })
    }

    /// The record's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `run.json`.
    pub fn meta(&self) -> &RunMeta {
        &self.meta
    }

    /// `vmstat.csv`.
    pub fn vmstat(&self) -> &Vmstat {
        &self.vmstat
    }

    /// `latency.csv`, in file order.
    pub fn latency(&self) -> &[LatencySample] {
        &self.latency
    }

    /// Latency values (µs) of one metric in one step, in file order.
    pub fn latency_values(&self, metric: &str, step: u32) -> Vec<f64> {
        self.latency
            .iter()
            .filter(|s| s.step == step && s.metric == metric)
            .map(|s| s.value_us)
            .collect()
    }

    /// Distinct `(metric, step)` series in order of first appearance.
    pub fn latency_series(&self) -> Vec<(String, u32)> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<(String, u32)> = Vec::new();
        for s in &self.latency {
            if seen.insert((s.metric.as_str(), s.step)) {
                out.push((s.metric.clone(), s.step));
            }
        }
        out
    }

    /// The path of `trace.txt.gz`, if the record has one.
    pub fn trace_path(&self) -> Option<PathBuf> {
        let p = self.dir.join(files::TRACE_GZ);
        p.is_file().then_some(p)
    }

    /// Streams the trace. `Ok(None)` when the record has no `trace.txt.gz`
    /// (`capture.notes` in `run.json` says why).
    pub fn trace_lines(&self) -> Result<Option<TraceLines>> {
        match self.trace_path() {
            Some(p) => {
                let mut t = TraceLines::open(&p)?;
                if self.meta.capture.trace_lines > 0 {
                    t.expected = Some(self.meta.capture.trace_lines);
                }
                Ok(Some(t))
            }
            None => Ok(None),
        }
    }
}

/// A streaming reader of `trace.txt.gz` (or any ftrace text file given to
/// [`TraceLines::open`], plain or gzip).
///
/// Two ways to use it:
/// - [`TraceLines::next_line`] lends a zero-copy [`TraceLine`] (fastest; use it
///   in a `while let` loop);
/// - as an [`Iterator`] of `Result<OwnedTraceLine>` (one allocation per line).
///
/// Comments, blank lines and header lines are skipped silently; lost-event
/// markers are skipped and counted ([`TraceLines::lost_events`]). A garbled line
/// yields an error naming `FILE:LINE`: skip it and call again, or stop. A read
/// or gzip error (truncated file) yields one error, then the end.
pub struct TraceLines {
    path: PathBuf,
    reader: LineReader<Box<dyn std::io::Read + Send>>,
    line_no: u64,
    lost: u64,
    done: bool,
    gz: bool,
    expected: Option<u64>,
}

impl TraceLines {
    /// Opens an ftrace text file, gzip or plain (by magic bytes).
    pub fn open(path: &Path) -> Result<TraceLines> {
        let gz = crate::lines::is_gzip(path)?;
        let inner = crate::lines::open_maybe_gz(path)?;
        Ok(TraceLines {
            path: path.to_path_buf(),
            reader: LineReader::new(inner),
            line_no: 0,
            lost: 0,
            done: false,
            gz,
            expected: None,
        })
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the last line read (1-based).
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// Events reported lost by `CPU:N [LOST M EVENTS]` lines seen so far.
    pub fn lost_events(&self) -> u64 {
        self.lost
    }

    /// The next event line, zero-copy. See the type's documentation.
    pub fn next_line(&mut self) -> Option<Result<TraceLine<'_>>> {
        if self.done {
            return None;
        }
        // Find the next event line's range first (the borrow of the reader's
        // buffer must end before the error paths touch `self`).
        let spans;
        loop {
            let line = match self.reader.next_line() {
                None => {
                    self.done = true;
                    return match self.expected {
                        Some(n) if n != self.line_no => Some(Err(RecordError::Gzip {
                            path: self.path.clone(),
                            line: self.line_no + 1,
                            err: std::io::Error::new(
                                std::io::ErrorKind::UnexpectedEof,
                                format!(
                                    "it ends after {} lines, run.json records {n}",
                                    self.line_no
                                ),
                            ),
                        })),
                        _ => None,
                    };
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(read_error(&self.path, self.line_no + 1, self.gz, e)));
                }
                Some(Ok(l)) => l,
            };
            self.line_no += 1;
            let Ok(text) = std::str::from_utf8(line) else {
                return Some(Err(RecordError::line(
                    &self.path,
                    self.line_no,
                    "not UTF-8 text; expected an ftrace text line",
                )));
            };
            match parse_trace_line(text) {
                Ok(tl) => {
                    spans = tl.spans();
                    break;
                }
                Err(ParseError::LostEvents { lost, .. }) => self.lost += lost,
                Err(ParseError::Garbled(what)) => {
                    let msg = ParseError::Garbled(what).to_string();
                    return Some(Err(RecordError::line(&self.path, self.line_no, msg)));
                }
                Err(_) => {}
            }
        }
        // Re-borrow the line that parsed: the reader's last line, already
        // validated as UTF-8 (validation is cheap and keeps this safe code).
        let text = std::str::from_utf8(self.reader.last()).unwrap_or("");
        let text = parse_trim(text);
        Some(Ok(TraceLine::from_spans(text, spans)))
    }
}

/// The part of a line that [`parse_trace_line`] keeps (without `\r`/`\n`).
fn parse_trim(t: &str) -> &str {
    t.trim_end_matches(['\r', '\n'])
}

impl Iterator for TraceLines {
    type Item = Result<OwnedTraceLine>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().map(|r| r.map(|l| l.to_owned_line()))
    }
}
