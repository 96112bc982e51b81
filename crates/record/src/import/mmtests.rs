//! An mmtests results directory into a record: where its pieces are, the
//! mmap-latency logs, and the record written from them.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{RecordError, Result};
use crate::lines::{is_gzip, open_maybe_gz, read_error, LineReader};
use crate::meta::{Origin, ReclaimScope, RunMeta, Step, Workload};
use crate::writer::RecordWriter;

use super::sysstate::*;
use super::trace::*;
use super::*;

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

/// Most latency samples an mmtests import writes (the counts of all
/// mmap-latency logs added up). Each sample is one loop of at least the
/// 5 ms sleep, so 4 million are 5.5 hours of one step after another, far
/// beyond any stutterp run (a few thousand to tens of thousands); a larger
/// count is corruption, refused before anything is written. It also keeps
/// `latency.csv` (about 25 bytes a sample) well under the reader's
/// `reader::MAX_CSV`.
pub const MAX_LATENCY_SAMPLES: u64 = 4_000_000;

/// Imports an mmtests results directory with default options (format detected).
pub fn import_mmtests(dir: &Path, out: &Path) -> Result<ImportSummary> {
    import_mmtests_with(dir, out, &MmtestsOptions::default())
}

/// Where the pieces of one mmtests iteration are.
pub(super) struct Layout {
    pub(super) run_name: Option<String>,
    pub(super) iter_dir: PathBuf,
    pub(super) logs_dir: Option<PathBuf>,
    pub(super) notes: Vec<String>,
}

pub(super) fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let rd = fs::read_dir(dir).map_err(|e| RecordError::io(dir, "listing", e))?;
    let mut v: Vec<(String, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    v.sort();
    Ok(v)
}

pub(super) fn iter_number(name: &str) -> Option<u32> {
    name.strip_prefix("iter-").and_then(|n| n.parse().ok())
}

/// `BASE`, `BASE.gz`, or (older mmtests) `BASE-RUNNAME` in `dir`.
pub(super) fn find_state_file(dir: &Path, base: &str) -> Option<PathBuf> {
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

pub(super) fn is_iteration_dir(d: &Path) -> bool {
    find_state_file(d, "tests-sysstate").is_some()
        || find_state_file(d, "tests-timestamp").is_some()
        || d.join("stutterp").is_dir()
}

pub(super) fn find_logs_dir(iter: &Path) -> Option<PathBuf> {
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

pub(super) fn locate(dir: &Path, iteration: Option<u32>) -> Result<Layout> {
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
pub(super) struct LatencyLog {
    pub(super) step: u32,
    pub(super) path: PathBuf,
    pub(super) entries: Vec<(u64, u64)>,
}

pub(super) fn read_latency_logs(logs: &Path) -> Result<Vec<LatencyLog>> {
    let mut out: Vec<LatencyLog> = Vec::new();
    // Samples of all logs so far (checked against MAX_LATENCY_SAMPLES).
    let mut total: u64 = 0;
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
            match total.checked_add(e.0) {
                Some(t) if t <= MAX_LATENCY_SAMPLES => total = t,
                _ => {
                    return Err(RecordError::line(
                        &path,
                        ln,
                        format!(
                            "count {} brings the mmap-latency logs to more than {MAX_LATENCY_SAMPLES} \
                             samples (each is one loop of at least 5 ms: over 5.5 hours); a stutterp \
                             log counts thousands. The log is corrupt: fix or delete the line",
                            e.0
                        ),
                    ))
                }
            }
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

pub(super) fn find_ftrace(iter: &Path, test: &str) -> Option<PathBuf> {
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
    meta.machine.memory_bytes = match st.mem_total_kb.unwrap_or(0).checked_mul(1024) {
        Some(b) => b,
        None => {
            return Err(RecordError::Import {
                path: iter.join("tests-sysstate"),
                message: format!(
                    "MemTotal: {} kB is more bytes than 2^64; /proc/meminfo never says so: \
                     the file is corrupt (fix the MemTotal line of its meminfo block)",
                    st.mem_total_kb.unwrap_or(0)
                ),
            })
        }
    };
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
