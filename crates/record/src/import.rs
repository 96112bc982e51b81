//! Importers: external data into run records.
//!
//! So that existing captures and mmtests results can be read and compared with
//! the same report as simulated and real runs, these turn them into ordinary
//! records with origin `import`:
//!
//! - [`import_trace`]: a tracefs `trace`/`trace_pipe` capture or `trace-cmd
//!   report` output, plain or gzip;
//! - [`import_mmtests`]: an mmtests results directory (stutterp's mmap-latency
//!   logs, the `/proc/vmstat` snapshots and `time ::` line of
//!   `tests-sysstate`/`tests-timestamp`, `CONFIG_HZ` of the saved kconfig, and
//!   `ftrace-stutterp.gz` if present).
//!
//! Policy for bad trace lines: a line that is not an event (comment, header,
//! lost-events marker) is dropped silently; a garbled line is skipped, counted
//! in `capture.skipped_lines` and noted (with the first few line numbers) in
//! `capture.notes`; the import fails only if no line at all parses. A malformed
//! mmtests file is an error naming `file:line` and the expected format.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{RecordError, Result};
use crate::lines::{is_gzip, open_maybe_gz, read_error, LineReader};
use crate::meta::{Origin, ReclaimScope, RunMeta, Step, Workload};
use crate::trace::{event_subsystem, parse_trace_line, ParseError};
use crate::vmstat::{parse_vmstat_line, VmstatSnapshot};
use crate::writer::RecordWriter;

/// How many garbled lines are listed by number in the notes.
const LISTED_GARBLED: usize = 5;

/// What an import produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    /// The record written.
    pub out: PathBuf,
    /// Trace lines written to `trace.txt.gz`.
    pub trace_lines: u64,
    /// Garbled input lines skipped.
    pub skipped_lines: u64,
    /// Events the source reported lost.
    pub lost_events: u64,
    /// Steps of the record.
    pub steps: Vec<u32>,
    /// Latency samples written.
    pub latency_samples: u64,
    /// vmstat rows written.
    pub vmstat_rows: u64,
    /// The notes written to `capture.notes`.
    pub notes: Vec<String>,
}

/// State of copying one ftrace text stream into a record.
#[derive(Default)]
struct TraceCopy {
    lines_in: u64,
    written: u64,
    skipped: u64,
    lost: u64,
    first_ns: Option<u64>,
    last_ns: u64,
    events: Vec<String>,
    garbled: Vec<(u64, String)>,
}

impl TraceCopy {
    fn run(src: &Path, w: &mut RecordWriter) -> Result<TraceCopy> {
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
                    if !st.events.iter().any(|e| e == ev) {
                        st.events.push(ev.to_string());
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

    fn garble(&mut self, line: u64, msg: String) {
        self.skipped += 1;
        if self.garbled.len() < LISTED_GARBLED {
            self.garbled.push((line, msg));
        }
    }

    fn events(&self) -> Vec<String> {
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

    fn notes(&self, src: &Path) -> Vec<String> {
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

    fn nothing_error(&self, src: &Path) -> RecordError {
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
fn stem(path: &Path) -> String {
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

/// The format of stutterp's `mmap-latency-N.log` lines (`COUNT LATENCY_NS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatencyFormat {
    /// Decide from the data: any batched line (COUNT > 1) or any latency under
    /// 5 ms means the 2021 format; otherwise the current one.
    #[default]
    Auto,
    /// 2021–2025 `mmap-latency.c`: the 5 ms sleep already subtracted; samples
    /// under 5 ms batched as `COUNT AVERAGE`.
    Subtracted2021,
    /// Current `mmap-latency.c`: raw loop time including the 5 ms sleep, one
    /// sample a line; the importer subtracts 5000 µs (clamped at 0).
    Raw,
}

impl LatencyFormat {
    /// The label used in `params` and notes.
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyFormat::Auto => "auto",
            LatencyFormat::Subtracted2021 => "2021",
            LatencyFormat::Raw => "raw",
        }
    }
}

/// Options of [`import_mmtests_with`].
#[derive(Debug, Clone, Default)]
pub struct MmtestsOptions {
    /// The mmap-latency log format.
    pub latency_format: LatencyFormat,
    /// The record's name (default: the mmtests run name, or the output directory's name).
    pub name: Option<String>,
    /// Which `iter-N` to import when the directory holds several (default: the lowest).
    pub iteration: Option<u32>,
}

/// The 5 ms sleep of each mmap-latency loop, µs.
pub const MMAP_LATENCY_SLEEP_US: f64 = 5000.0;

/// Imports an mmtests results directory with default options (format detected).
pub fn import_mmtests(dir: &Path, out: &Path) -> Result<ImportSummary> {
    import_mmtests_with(dir, out, &MmtestsOptions::default())
}

/// Where the pieces of one mmtests iteration are.
struct Layout {
    run_name: Option<String>,
    iter_dir: PathBuf,
    logs_dir: Option<PathBuf>,
    notes: Vec<String>,
}

fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let rd = fs::read_dir(dir).map_err(|e| RecordError::io(dir, "listing", e))?;
    let mut v: Vec<(String, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    v.sort();
    Ok(v)
}

fn iter_number(name: &str) -> Option<u32> {
    name.strip_prefix("iter-").and_then(|n| n.parse().ok())
}

/// `BASE`, `BASE.gz`, or (older mmtests) `BASE-RUNNAME` in `dir`.
fn find_state_file(dir: &Path, base: &str) -> Option<PathBuf> {
    for p in [dir.join(base), dir.join(format!("{base}.gz"))] {
        if p.is_file() {
            return Some(p);
        }
    }
    let prefix = format!("{base}-");
    list_dir(dir)
        .ok()?
        .into_iter()
        .find(|(n, p)| n.starts_with(&prefix) && p.is_file())
        .map(|(_, p)| p)
}

fn is_iteration_dir(d: &Path) -> bool {
    find_state_file(d, "tests-sysstate").is_some()
        || find_state_file(d, "tests-timestamp").is_some()
        || d.join("stutterp").is_dir()
}

fn find_logs_dir(iter: &Path) -> Option<PathBuf> {
    for c in [
        iter.join("stutterp").join("logs"),
        iter.join("stutterp"),
        iter.join("logs"),
        iter.to_path_buf(),
    ] {
        if let Ok(rd) = fs::read_dir(&c) {
            let has = rd.filter_map(|e| e.ok()).any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with("mmap-latency-") && (n.ends_with(".log") || n.ends_with(".log.gz"))
            });
            if has {
                return Some(c);
            }
        }
    }
    None
}

fn locate(dir: &Path, iteration: Option<u32>) -> Result<Layout> {
    if !dir.is_dir() {
        return Err(RecordError::Import {
            path: dir.to_path_buf(),
            message: "not a directory; expected an mmtests results directory \
                      (work/log/RUN, work/log/RUN/iter-N, or a directory holding tests-sysstate and stutterp/logs)"
                .into(),
        });
    }
    let mut notes = Vec::new();
    let mut run_dir = dir.to_path_buf();
    // work/log with one run under it.
    if !is_iteration_dir(dir) {
        let entries = list_dir(dir)?;
        let has_iters = entries.iter().any(|(n, _)| iter_number(n).is_some());
        if !has_iters {
            let runs: Vec<&(String, PathBuf)> = entries
                .iter()
                .filter(|(_, p)| {
                    p.is_dir()
                        && (is_iteration_dir(p)
                            || list_dir(p)
                                .map(|v| v.iter().any(|(n, _)| iter_number(n).is_some()))
                                .unwrap_or(false))
                })
                .collect();
            match runs.len() {
                1 => run_dir = runs[0].1.clone(),
                0 => {}
                _ => {
                    let names: Vec<&str> = runs.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(RecordError::Import {
                        path: dir.to_path_buf(),
                        message: format!(
                            "holds several mmtests runs ({}); import one at a time: {}/RUN",
                            names.join(", "),
                            dir.display()
                        ),
                    });
                }
            }
        }
    }
    let mut iter_dir = run_dir.clone();
    let mut run_name = None;
    if !is_iteration_dir(&run_dir) {
        let mut iters: Vec<(u32, PathBuf)> = list_dir(&run_dir)?
            .into_iter()
            .filter_map(|(n, p)| iter_number(&n).map(|i| (i, p)))
            .collect();
        iters.sort();
        if let Some(want) = iteration {
            match iters.iter().position(|(i, _)| *i == want) {
                Some(k) => {
                    let chosen = iters.remove(k);
                    iters.insert(0, chosen);
                    iters.truncate(1);
                }
                None => {
                    let have: Vec<String> =
                        iters.iter().map(|(i, _)| format!("iter-{i}")).collect();
                    return Err(RecordError::Import {
                        path: run_dir.clone(),
                        message: format!(
                            "no iter-{want} here; found: {}",
                            if have.is_empty() {
                                "none".to_string()
                            } else {
                                have.join(", ")
                            }
                        ),
                    });
                }
            }
        }
        if let Some((i, p)) = iters.first() {
            if iters.len() > 1 {
                notes.push(format!(
                    "{} iterations found; imported iter-{i} only (import another with --iteration N)",
                    iters.len()
                ));
            }
            iter_dir = p.clone();
            run_name = run_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
        }
    } else if let Some(parent) = run_dir.parent() {
        if run_dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(iter_number)
            .is_some()
        {
            run_name = parent.file_name().map(|n| n.to_string_lossy().into_owned());
        }
    }
    let logs_dir = find_logs_dir(&iter_dir);
    if logs_dir.is_none() && !is_iteration_dir(&iter_dir) {
        return Err(RecordError::Import {
            path: dir.to_path_buf(),
            message: "no mmtests results found: expected tests-sysstate or tests-timestamp and \
                      stutterp/logs/mmap-latency-N.log(.gz), directly or under iter-N/ \
                      (the layout of work/log/RUN/iter-N)"
                .into(),
        });
    }
    Ok(Layout {
        run_name,
        iter_dir,
        logs_dir,
        notes,
    })
}

/// One mmap-latency log: worker count and `(count, latency_ns, line)` entries.
struct LatencyLog {
    step: u32,
    path: PathBuf,
    entries: Vec<(u64, u64)>,
}

fn read_latency_logs(logs: &Path) -> Result<Vec<LatencyLog>> {
    let mut out: Vec<LatencyLog> = Vec::new();
    for (name, path) in list_dir(logs)? {
        let Some(rest) = name.strip_prefix("mmap-latency-") else {
            continue;
        };
        let Some(num) = rest
            .strip_suffix(".log.gz")
            .or_else(|| rest.strip_suffix(".log"))
        else {
            continue;
        };
        let Ok(step) = num.parse::<u32>() else {
            return Err(RecordError::Import {
                path,
                message: "expected mmap-latency-N.log(.gz) with N the number of workers".into(),
            });
        };
        if out.iter().any(|l| l.step == step) {
            // Both .log and .log.gz: keep the first (sorted: .log before .log.gz).
            continue;
        }
        let gz = is_gzip(&path)?;
        let mut r = LineReader::new(open_maybe_gz(&path)?);
        let mut entries = Vec::new();
        let mut ln = 0u64;
        while let Some(line) = r.next_line() {
            ln += 1;
            let line = line.map_err(|e| read_error(&path, ln, gz, e))?;
            let text = std::str::from_utf8(line).unwrap_or("\u{fffd}");
            let mut it = text.split_ascii_whitespace();
            let (Some(a), b, extra) = (it.next(), it.next(), it.next()) else {
                continue; // blank
            };
            let parsed = match (a.parse::<u64>(), b.map(str::parse::<u64>), extra) {
                (Ok(c), Some(Ok(ns)), None) => Some((c, ns)),
                _ => None,
            };
            let Some(e) = parsed else {
                return Err(RecordError::line(
                    &path,
                    ln,
                    format!(
                        "{text:?}: expected `COUNT LATENCY_NS` (two non-negative integers, as \
                         stutterp's mmap-latency prints them); fix or delete the line"
                    ),
                ));
            };
            entries.push(e);
        }
        out.push(LatencyLog {
            step,
            path,
            entries,
        });
    }
    out.sort_by_key(|l| l.step);
    Ok(out)
}

/// The parts of `tests-sysstate`/`tests-timestamp` the importer uses.
#[derive(Default)]
struct SysState {
    vm_start: Option<VmstatSnapshot>,
    vm_end: Option<VmstatSnapshot>,
    /// (user, system, elapsed)
    time: Option<(f64, f64, f64)>,
    mem_total_kb: Option<u64>,
    cpus: Option<u32>,
    nodes: Option<u32>,
    test_begin: Option<u64>,
    test_end: Option<u64>,
}

fn parse_sysstate(path: &Path, test: &str, st: &mut SysState) -> Result<()> {
    let mut raw = Vec::new();
    let gz = is_gzip(path)?;
    std::io::Read::read_to_end(&mut open_maybe_gz(path)?, &mut raw)
        .map_err(|e| read_error(path, 0, gz, e))?;
    let text = String::from_utf8_lossy(&raw);
    #[derive(PartialEq)]
    enum Block {
        None,
        VmStart,
        VmEnd,
        Meminfo,
        Schedstat,
        Zoneinfo,
    }
    let mut block = Block::None;
    let mut snap = VmstatSnapshot::default();
    let mut seen_test = false;
    let mut in_test = false;
    let mut cpus: u32 = 0;
    let mut nodes: BTreeSet<u32> = BTreeSet::new();
    let finish = |block: &Block, snap: &mut VmstatSnapshot, st: &mut SysState| match block {
        Block::VmStart if st.vm_start.is_none() => st.vm_start = Some(std::mem::take(snap)),
        Block::VmEnd if st.vm_end.is_none() => st.vm_end = Some(std::mem::take(snap)),
        _ => *snap = VmstatSnapshot::default(),
    };
    for (i, line) in text.lines().enumerate() {
        let ln = i as u64 + 1;
        if let Some(rest) = line.strip_prefix("test begin :: ") {
            let mut it = rest.split_whitespace();
            let first = it.next();
            if first == Some(test) || first.is_some_and(|f| f.parse::<u64>().is_ok()) {
                // `test begin :: TEST EPOCH`, or the kvm runner's `test begin :: EPOCH`.
                seen_test = true;
                in_test = true;
                let ts = if first == Some(test) {
                    it.next()
                } else {
                    first
                };
                st.test_begin = ts.and_then(|t| t.parse().ok());
            } else {
                in_test = false;
            }
            finish(&block, &mut snap, st);
            block = Block::None;
            continue;
        }
        if let Some(rest) = line.strip_prefix("test end :: ") {
            let mut it = rest.split_whitespace();
            let first = it.next();
            if first == Some(test) {
                st.test_end = it.next().and_then(|t| t.parse().ok());
            } else if in_test {
                st.test_end = first.and_then(|t| t.parse().ok());
            }
            finish(&block, &mut snap, st);
            block = Block::None;
            in_test = false;
            continue;
        }
        if let Some(rest) = line.strip_prefix("time :: ") {
            finish(&block, &mut snap, st);
            block = Block::None;
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.first() != Some(&test) && !f.is_empty() {
                continue;
            }
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
            match (num(1), num(3), num(5)) {
                (Some(u), Some(s), Some(e))
                    if f.get(2) == Some(&"user")
                        && f.get(4) == Some(&"system")
                        && f.get(6) == Some(&"elapsed") =>
                {
                    st.time.get_or_insert((u, s, e));
                }
                _ => {
                    return Err(RecordError::line(
                        path,
                        ln,
                        format!(
                            "{line:?}: expected `time :: {test} U user S system E elapsed` \
                             (as /usr/bin/time -f \"%U user %S system %e elapsed\" prints it)"
                        ),
                    ))
                }
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("file ") {
            finish(&block, &mut snap, st);
            let relevant = in_test || !seen_test;
            block = match rest.split_once(" :: ") {
                Some(("start", "/proc/vmstat")) if relevant => Block::VmStart,
                Some(("end", "/proc/vmstat")) if relevant => Block::VmEnd,
                Some(("start", "/proc/meminfo")) if relevant => Block::Meminfo,
                Some(("start", "/proc/schedstat")) if relevant => Block::Schedstat,
                Some(("start", "/proc/zoneinfo")) if relevant => Block::Zoneinfo,
                _ => Block::None,
            };
            continue;
        }
        match block {
            Block::VmStart | Block::VmEnd => {
                if line.contains(" :: ") {
                    // Another mmtests marker ends the block.
                    finish(&block, &mut snap, st);
                    block = Block::None;
                    continue;
                }
                match parse_vmstat_line(line) {
                    Ok(Some((n, v))) => snap.counters.push((n.to_string(), v)),
                    Ok(None) => {}
                    Err(m) => {
                        return Err(RecordError::line(
                            path,
                            ln,
                            format!(
                                "{m}; inside the `file start/end :: /proc/vmstat` block every line \
                                 must be a /proc/vmstat line"
                            ),
                        ))
                    }
                }
            }
            Block::Meminfo => {
                if let Some(v) = line.strip_prefix("MemTotal:") {
                    let kb = v.trim().trim_end_matches("kB").trim();
                    if let Ok(kb) = kb.parse::<u64>() {
                        st.mem_total_kb.get_or_insert(kb);
                    }
                }
            }
            Block::Schedstat => {
                if let Some(r) = line.strip_prefix("cpu") {
                    if r.split_whitespace()
                        .next()
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty())
                    {
                        cpus += 1;
                    }
                }
            }
            Block::Zoneinfo => {
                if let Some(r) = line.strip_prefix("Node ") {
                    if let Some(n) = r.split(',').next().and_then(|n| n.trim().parse().ok()) {
                        nodes.insert(n);
                    }
                }
            }
            Block::None => {}
        }
    }
    finish(&block, &mut snap, st);
    if cpus > 0 {
        st.cpus.get_or_insert(cpus);
    }
    if !nodes.is_empty() {
        st.nodes.get_or_insert(nodes.len() as u32);
    }
    Ok(())
}

fn read_kernel_version(iter: &Path) -> Option<String> {
    let t = fs::read_to_string(iter.join("kernel.version")).ok()?;
    // `uname -a`: Linux HOST RELEASE ...
    t.split_whitespace().nth(2).map(str::to_string)
}

/// `CONFIG_HZ` from the `kconfig-RELEASE.txt(.gz)` mmtests saves.
fn read_kconfig_hz(iter: &Path) -> Option<u32> {
    let kconfig = list_dir(iter)
        .ok()?
        .into_iter()
        .find(|(n, _)| {
            n.starts_with("kconfig-") && (n.ends_with(".txt.gz") || n.ends_with(".txt"))
        })?
        .1;
    let mut r = LineReader::new(open_maybe_gz(&kconfig).ok()?);
    while let Some(Ok(line)) = r.next_line() {
        if let Some(v) = line.strip_prefix(b"CONFIG_HZ=") {
            return std::str::from_utf8(v).ok()?.trim().parse().ok();
        }
    }
    None
}

fn find_ftrace(iter: &Path, test: &str) -> Option<PathBuf> {
    [format!("ftrace-{test}.gz"), format!("ftrace-{test}")]
        .into_iter()
        .map(|n| iter.join(n))
        .find(|p| p.is_file())
}

/// Imports an mmtests results directory (see the module documentation and
/// `docs/run-record.md` for what is read and how).
pub fn import_mmtests_with(dir: &Path, out: &Path, opts: &MmtestsOptions) -> Result<ImportSummary> {
    let test = "stutterp";
    let layout = locate(dir, opts.iteration)?;
    let mut notes = layout.notes.clone();
    let iter = &layout.iter_dir;

    // Latency logs.
    let logs = match &layout.logs_dir {
        Some(d) => read_latency_logs(d)?,
        None => {
            notes.push(format!(
                "no stutterp mmap-latency-N.log(.gz) under {}: no latency samples",
                iter.display()
            ));
            Vec::new()
        }
    };
    let format = match opts.latency_format {
        LatencyFormat::Auto => {
            let batched = logs
                .iter()
                .flat_map(|l| l.entries.iter())
                .any(|&(c, ns)| c > 1 || ns < 5_000_000);
            if batched {
                LatencyFormat::Subtracted2021
            } else {
                LatencyFormat::Raw
            }
        }
        f => f,
    };
    if !logs.is_empty() {
        notes.push(match (opts.latency_format, format) {
            (LatencyFormat::Auto, LatencyFormat::Subtracted2021) => "mmap-latency logs read as the 2021 format (batched lines or values under 5 ms seen: the 5 ms sleep is already subtracted); override with --latency-format raw".to_string(),
            (LatencyFormat::Auto, _) => "mmap-latency logs read as the current raw format (one sample a line, all at least 5 ms): 5000 us subtracted from each; override with --latency-format 2021".to_string(),
            (_, f) => format!("mmap-latency logs read as the {} format, as requested", f.as_str()),
        });
        notes.push(
            "latency t_s is reconstructed: samples laid end to end within a step, steps laid end to end from time 0"
                .into(),
        );
    }

    // System state.
    let mut st = SysState::default();
    let mut found_state = false;
    for name in ["tests-sysstate", "tests-timestamp"] {
        if let Some(p) = find_state_file(iter, name) {
            parse_sysstate(&p, test, &mut st)?;
            found_state = true;
        }
    }
    if !found_state {
        notes.push(format!(
            "no tests-sysstate or tests-timestamp in {}: no vmstat snapshots or duration",
            iter.display()
        ));
    }

    let name = opts
        .name
        .clone()
        .or_else(|| layout.run_name.clone())
        .or_else(|| out.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "mmtests".into());
    let kernel = read_kernel_version(iter).unwrap_or_else(|| "unknown".into());
    let mut meta = RunMeta::new(name, Origin::Import, kernel);
    meta.workload = Workload {
        name: test.into(),
        spec: format!("mmtests:{test}"),
    };
    meta.reclaim_scope = ReclaimScope::Global;
    meta.params
        .insert("import.source".into(), dir.display().to_string());
    if !logs.is_empty() {
        meta.params
            .insert("import.latency_format".into(), format.as_str().into());
    }
    meta.machine.memory_bytes = st.mem_total_kb.unwrap_or(0) * 1024;
    meta.machine.cpus = st.cpus.unwrap_or(0);
    meta.machine.nodes = st.nodes.unwrap_or(0);
    meta.machine.hz = read_kconfig_hz(iter);

    let ftrace = find_ftrace(iter, test);
    meta.capture.trace = ftrace.is_some();
    if ftrace.is_none() {
        notes.push(format!("no ftrace-{test}.gz: no trace (mmtests captures ftrace only when the ftrace monitor is configured)"));
    }

    let mut w = RecordWriter::create(out, meta)?;

    // Latency samples, steps end to end.
    let mut t0 = 0.0f64;
    let mut steps = Vec::new();
    let mut samples = 0u64;
    for log in &logs {
        let mut t = t0;
        for &(count, ns) in &log.entries {
            let raw_us = ns as f64 / 1000.0;
            let (value_us, loop_us) = match format {
                LatencyFormat::Raw => ((raw_us - MMAP_LATENCY_SLEEP_US).max(0.0), raw_us),
                _ => (raw_us, raw_us + MMAP_LATENCY_SLEEP_US),
            };
            for _ in 0..count {
                t += loop_us / 1e6;
                w.latency(log.step, "mmap", t, value_us)?;
                samples += 1;
            }
        }
        if log.entries.is_empty() {
            notes.push(format!("{}: empty log, no samples", log.path.display()));
        }
        steps.push(Step {
            step: log.step,
            start_s: t0,
            end_s: t,
        });
        t0 = t;
    }
    let step_ids: Vec<u32> = if steps.is_empty() {
        vec![1]
    } else {
        steps.iter().map(|s| s.step).collect()
    };

    // vmstat rows: whole-test snapshots.
    let elapsed = st
        .time
        .map(|t| t.2)
        .or_else(|| match (st.test_begin, st.test_end) {
            (Some(b), Some(e)) if e >= b => Some((e - b) as f64),
            _ => None,
        })
        .unwrap_or(0.0);
    let mut vmstat_rows = 0;
    match (&st.vm_start, &st.vm_end) {
        (Some(a), Some(b)) => {
            // Columns: counters present in both, in the start snapshot's order.
            let names: Vec<&str> = a.names().filter(|n| b.get(n).is_some()).collect();
            let va: Vec<u64> = names.iter().map(|n| a.get(n).unwrap_or(0)).collect();
            let vb: Vec<u64> = names.iter().map(|n| b.get(n).unwrap_or(0)).collect();
            w.vmstat_header(&names)?;
            let first = step_ids.first().copied().unwrap_or(1);
            let last = step_ids.last().copied().unwrap_or(1);
            w.vmstat_row(0.0, first, &va)?;
            w.vmstat_row(elapsed.max(0.0), last, &vb)?;
            vmstat_rows = 2;
            notes.push("vmstat.csv holds the start and end snapshots of the whole test (first row labelled with the first step, last row with the last): whole-run deltas only".into());
        }
        (Some(_), None) | (None, Some(_)) => notes
            .push("only one /proc/vmstat snapshot (start or end) found: no vmstat deltas".into()),
        (None, None) if found_state => {
            notes.push("no `file start/end :: /proc/vmstat` blocks: no vmstat deltas".into())
        }
        _ => {}
    }
    if found_state && st.time.is_none() {
        notes.push(format!(
            "no `time :: {test} ...` line: duration user/system unknown (0), elapsed from test begin/end"
        ));
    }

    // Trace.
    let mut tc = TraceCopy::default();
    if let Some(p) = &ftrace {
        tc = TraceCopy::run(p, &mut w)?;
        if tc.first_ns.is_none() && tc.lines_in > 0 {
            return Err(tc.nothing_error(p));
        }
        notes.extend(tc.notes(p));
        notes.push("trace timestamps are the kernel's trace clock; time 0 of the record is set to the first event, which does not align with the reconstructed latency times".into());
    }

    let m = w.meta_mut();
    m.steps = if steps.is_empty() {
        vec![Step {
            step: 1,
            start_s: 0.0,
            end_s: elapsed,
        }]
    } else {
        steps
    };
    if let Some((u, s, e)) = st.time {
        m.duration.user_s = u;
        m.duration.system_s = s;
        m.duration.elapsed_s = e;
    } else {
        m.duration.elapsed_s = elapsed;
    }
    if ftrace.is_some() {
        m.capture.events = tc.events();
        m.capture.lost_events = tc.lost;
        m.capture.skipped_lines = tc.skipped;
        m.capture.trace_time_offset_s = tc.first_ns.unwrap_or(0) as f64 / 1e9;
    }
    m.capture.notes = notes.clone();
    let out = w.finish()?;
    Ok(ImportSummary {
        out,
        trace_lines: tc.written,
        skipped_lines: tc.skipped,
        lost_events: tc.lost,
        steps: step_ids,
        latency_samples: samples,
        vmstat_rows,
        notes,
    })
}
