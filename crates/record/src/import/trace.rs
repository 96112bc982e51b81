//! ftrace text (plain or gzip, tracefs or `trace-cmd report`) into a record.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use crate::error::{RecordError, Result};
use crate::lines::{is_gzip, open_maybe_gz, read_error, LineReader};
use crate::meta::{Origin, ReclaimScope, RunMeta, Step, Workload};
use crate::trace::{event_subsystem, parse_trace_line, ParseError};
use crate::writer::RecordWriter;

use super::*;

/// Distinct event names listed in `run.json` at most (the kernel has a few
/// hundred tracepoints; more names are garbage, and would bloat run.json).
const MAX_EVENT_NAMES: usize = 4096;

/// State of copying one ftrace text stream into a record.
#[derive(Default)]
pub(super) struct TraceCopy {
    pub(super) lines_in: u64,
    pub(super) written: u64,
    pub(super) skipped: u64,
    pub(super) lost: u64,
    pub(super) first_ns: Option<u64>,
    pub(super) last_ns: u64,
    pub(super) events: HashSet<String>,
    pub(super) garbled: Vec<(u64, String)>,
}

impl TraceCopy {
    pub(super) fn run(src: &Path, w: &mut RecordWriter) -> Result<TraceCopy> {
        let mut st = TraceCopy::default();
        let gz = is_gzip(src)?;
        let mut r = LineReader::new(open_maybe_gz(src)?);
        let mut line_no = 0u64;
        while let Some(line) = r.next_line() {
            line_no += 1;
            let line = match line {
                Ok(l) => l,
                Err(e) => return Err(read_error(src, line_no, gz, e)),
            };
            let text = match std::str::from_utf8(line) {
                Ok(t) => t,
                Err(_) => {
                    st.garble(line_no, "not UTF-8 text".into());
                    continue;
                }
            };
            match parse_trace_line(text) {
                Ok(tl) => {
                    let ts = tl.timestamp_ns();
                    if st.first_ns.is_none() {
                        st.first_ns = Some(ts);
                    }
                    st.last_ns = st.last_ns.max(ts);
                    let ev = tl.event();
                    // A set, not a list search: a hostile trace may carry a
                    // new event name on every line (quadratic otherwise).
                    if !st.events.contains(ev) && st.events.len() < MAX_EVENT_NAMES {
                        st.events.insert(ev.to_string());
                    }
                    w.trace_line(tl.raw())?;
                    st.written += 1;
                }
                Err(ParseError::LostEvents { lost, .. }) => st.lost += lost,
                Err(e @ ParseError::Garbled(_)) => st.garble(line_no, e.to_string()),
                Err(_) => {}
            }
        }
        st.lines_in = line_no;
        Ok(st)
    }

    pub(super) fn garble(&mut self, line: u64, msg: String) {
        self.skipped += 1;
        if self.garbled.len() < LISTED_GARBLED {
            self.garbled.push((line, msg));
        }
    }

    pub(super) fn events(&self) -> Vec<String> {
        let set: BTreeSet<String> = self
            .events
            .iter()
            .map(|e| match event_subsystem(e) {
                Some(s) => format!("{s}:{e}"),
                None => e.clone(),
            })
            .collect();
        set.into_iter().collect()
    }

    pub(super) fn notes(&self, src: &Path) -> Vec<String> {
        let mut notes = Vec::new();
        if self.skipped > 0 {
            let listed: Vec<String> = self
                .garbled
                .iter()
                .map(|(l, m)| format!("{}:{l}: {m}", src.display()))
                .collect();
            notes.push(format!(
                "skipped {} garbled trace line(s) of {}; first: {}",
                self.skipped,
                self.lines_in,
                listed.join(" | ")
            ));
        }
        if self.lost > 0 {
            notes.push(format!(
                "the source reports {} lost events (ring buffer overruns)",
                self.lost
            ));
        }
        notes
    }

    pub(super) fn nothing_error(&self, src: &Path) -> RecordError {
        let first = self
            .garbled
            .first()
            .map(|(l, m)| format!("; first garbled line {}:{l}: {m}", src.display()))
            .unwrap_or_default();
        RecordError::Import {
            path: src.to_path_buf(),
            message: format!(
                "no ftrace event line found in {} lines ({} garbled){first}. Expected the text of \
                 /sys/kernel/tracing/trace or trace_pipe, or `trace-cmd report` output, plain or gzip \
                 (a trace.dat must first go through `trace-cmd report`)",
                self.lines_in, self.skipped
            ),
        }
    }
}

/// A file name without `.gz`, `.txt`, `.log` suffixes (for record names).
pub(super) fn stem(path: &Path) -> String {
    let mut s = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "import".into());
    for suf in [".gz", ".txt", ".log", ".report"] {
        if let Some(t) = s.strip_suffix(suf) {
            if !t.is_empty() {
                s = t.to_string();
            }
        }
    }
    s
}

/// Imports an ftrace text file (plain or gzip) into a record at `out`.
///
/// The record has origin `import`, kernel `unknown`, reclaim scope `unknown`,
/// one step (1) spanning the first to the last event, time 0 at the first
/// event (`capture.trace_time_offset_s` is its timestamp), and only the elapsed
/// duration (the trace's span). See the module documentation for the handling
/// of bad lines.
pub fn import_trace(src: &Path, out: &Path) -> Result<ImportSummary> {
    let mut meta = RunMeta::new(stem(src), Origin::Import, "unknown");
    meta.workload = Workload {
        name: "trace".into(),
        spec: src.display().to_string(),
    };
    meta.reclaim_scope = ReclaimScope::Unknown;
    meta.params
        .insert("import.source".into(), src.display().to_string());
    meta.capture.trace = true;
    let mut w = RecordWriter::create(out, meta)?;
    let st = TraceCopy::run(src, &mut w)?;
    let Some(first) = st.first_ns else {
        return Err(st.nothing_error(src));
    };
    let span_s = (st.last_ns - first) as f64 / 1e9;
    let mut notes = st.notes(src);
    notes.push(
        "imported trace: kernel, machine, CPU time and reclaim scope are unknown; \
         duration.elapsed_s is the span from the first to the last event"
            .into(),
    );
    let m = w.meta_mut();
    m.steps = vec![Step {
        step: 1,
        start_s: 0.0,
        end_s: span_s,
    }];
    m.duration.elapsed_s = span_s;
    m.capture.events = st.events();
    m.capture.lost_events = st.lost;
    m.capture.trace_time_offset_s = first as f64 / 1e9;
    m.capture.skipped_lines = st.skipped;
    m.capture.notes = notes.clone();
    let out = w.finish()?;
    Ok(ImportSummary {
        out,
        trace_lines: st.written,
        skipped_lines: st.skipped,
        lost_events: st.lost,
        steps: vec![1],
        latency_samples: 0,
        vmstat_rows: 0,
        notes,
    })
}
