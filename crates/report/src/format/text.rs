//! Plain-text report in mmtests' compare format, plus stall histograms.
//!
//! The layout follows `Compare.pm`/`PrintGeneric.pm`: a two-row header of run
//! names split at the first `-` (with mmtests' `-rcN` rule), rows grouped by
//! statistic (`Min mmap-4`, `Min mmap-7`, …, `Amean mmap-4`, …) with the
//! statistic left-aligned to the longest statistic name and the operation to
//! the longest operation name, values as `%12.4f`, and for latency a
//! ` (%7.2f%%)` column against the first run whose parentheses become `*` when
//! the Amean difference is significant. Duration and Ops have no % column
//! (mmtests forces `hideCompare` for monitors) and print `%12.2f` (Duration)
//! and `%15.2f` with row names padded to 28 (Ops), as the 2021 letters show. Stall
//! histograms use the `sort | uniq -c | sort -n` shape of the 2021 letters.
//! mmtests' ftrace stall monitor tables follow them (`format/ftrace.rs`).
//!
//! Departures for small samples: an operation where some run has fewer than
//! ten samples gets a `Samples` row after the statistics, and where a run has
//! fewer than two, no `*` (see `stats::MIN_SAMPLES`) and a footnote saying so.
//!
//! One departure, for long run names (`reclaimlab sim --sweep` makes names of
//! 45+ characters): mmtests prints an overlong name in full and lets it stick
//! out past its fixed-width column, so headers and values drift apart. Here a
//! run's column is as wide as the table's field or as its longer header row
//! plus a separating space, whichever is wider, and its values are
//! right-aligned to that width (the latency value field takes the extra, the
//! ` (%7.2f%%)` part stays). Names are never cut. When every header row fits
//! in its field (at most 11 characters for Duration, 14 for Ops, 22 for
//! latency) the output is byte for byte the fixed-width layout above.

use std::fmt::Write as _;

use crate::model::{LatencyReport, Report, RunReport, Significance};
use crate::ops::{memcg_rows, ops_rows};
use crate::stalls::{uniq_c_histogram, StallEvent};

/// Value width of the latency and Duration tables (`Compare.pm` fieldLength 12).
pub(super) const FIELD: usize = 12;
/// Width of the % number (` (%7.2f%%)`).
pub(super) const COMPARE: usize = 7;
/// Value width of the Ops table, and the width its row names are padded to,
/// as the 2021 letters show them (`Ops Direct pages scanned          1056608451.00`).
const OPS_FIELD: usize = 15;
const OPS_NAME: usize = 28;

/// Splits a run name into mmtests' two header rows.
fn split_name(name: &str) -> (String, String) {
    match name.find('-') {
        None => (String::new(), name.to_string()),
        Some(mut i) => {
            let rest = &name[i..];
            let b = rest.as_bytes();
            if b.len() >= 4 && &rest[..3] == "-rc" && b[3].is_ascii_digit() {
                // "5.15.0-rc3-vanilla" → "5.15.0-rc3" / "vanilla".
                let end = rest[1..].find('-').map(|j| i + 1 + j).unwrap_or(name.len());
                i = end;
            }
            if i >= name.len() {
                (String::new(), name.to_string())
            } else {
                (name[..i].to_string(), name[i + 1..].to_string())
            }
        }
    }
}

pub(super) fn fix_zero(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

pub(super) fn num(x: f64, width: usize, prec: usize) -> String {
    if x.is_finite() {
        format!("{:>width$.prec$}", fix_zero(x))
    } else {
        format!(
            "{:>width$}",
            if x.is_nan() {
                "nan"
            } else if x > 0.0 {
                "inf"
            } else {
                "-inf"
            }
        )
    }
}

/// Widest text cell, in characters: a run name, metric, event, reason,
/// setting or value longer than this is cut to it, ending in `…`. Text
/// comes from records and traces that anyone may have written; without a
/// cap one 70,000-character `reason=` would make a column that wide (and
/// `format!` panics on widths over 65,535). Sweep run names (45+
/// characters) fit whole.
pub(crate) const MAX_CELL: usize = 100;

/// A cell's text cut to [`MAX_CELL`] characters (the last one `…`).
pub(crate) fn fit(s: &str) -> std::borrow::Cow<'_, str> {
    fit_to(s, MAX_CELL)
}

/// `s` cut to `max` characters (the last one `…`), borrowed when it fits.
pub(crate) fn fit_to(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some(_) => {
            let cut = s.char_indices().nth(max - 1).map_or(s.len(), |(i, _)| i);
            std::borrow::Cow::Owned(format!("{}…", &s[..cut]))
        }
    }
}

/// Display width of a cell once cut by [`fit`] (what `{:>w$}` pads by).
pub(crate) fn chars(s: &str) -> usize {
    s.chars().take(MAX_CELL + 1).count().min(MAX_CELL)
}

/// The width of a column of labels: the longest, and at least 24.
fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> usize {
    labels.map(chars).max().unwrap_or(0).max(24)
}

/// Width of each run's column: the table's fixed field width, widened to
/// one separating space plus the longer of the run's two header rows when the
/// name does not fit. With names that fit (at most `field - 1` characters per
/// row) every column keeps the fixed width, and the output is mmtests' own;
/// a longer name widens only its column, so its values stay right-aligned
/// under it instead of drifting left of an overlong header as in mmtests.
pub(super) fn column_widths(field: usize, names: &[&str]) -> Vec<usize> {
    names
        .iter()
        .map(|n| {
            let (a, b) = split_name(n);
            field.max(1 + chars(&a).max(chars(&b)))
        })
        .collect()
}

pub(super) fn header(out: &mut String, first_width: usize, widths: &[usize], names: &[&str]) {
    let split: Vec<(String, String)> = names.iter().map(|n| split_name(n)).collect();
    let first_row_empty = split.iter().all(|(a, _)| a.is_empty());
    for row in 0..2 {
        if row == 0 && first_row_empty {
            continue;
        }
        let mut line = format!("{:>first_width$}", "");
        for ((a, b), width) in split.iter().zip(widths) {
            let cell = if row == 0 { a } else { b };
            // A separating space, then right-aligned to the column's end
            // (`column_widths` leaves room for the space).
            let _ = write!(line, " {:>w$}", fit(cell), w = width - 1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

pub(crate) const STATS: [&str; 9] = [
    "Min",
    "Amean",
    "Stddev",
    "CoeffVar",
    "Max-90",
    "Max-95",
    "Max-99",
    "Max",
    "BAmean-95",
];

pub(crate) fn stat_value(l: &LatencyReport, i: usize) -> f64 {
    [
        l.min, l.amean, l.stddev, l.coeffvar, l.max90, l.max95, l.max99, l.max, l.bamean95,
    ][i]
}

fn latency_table(out: &mut String, report: &Report) {
    let ops = &report.comparable.compared;
    if ops.is_empty() || report.runs.is_empty() {
        return;
    }
    let stat_w = STATS.iter().map(|s| s.len()).max().unwrap_or(0);
    let op_w = ops.iter().map(|s| chars(s)).max().unwrap_or(0);
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    // A column is the value then ` (%7.2f%%)`; widening goes to the value.
    let widths = column_widths(FIELD + COMPARE + 4, &names);
    header(out, stat_w + 1 + op_w, &widths, &names);
    for (si, stat) in STATS.iter().enumerate() {
        for op in ops {
            let mut line = format!("{stat:<stat_w$} {:<op_w$}", fit(op));
            for (ri, (run, &width)) in report.runs.iter().zip(&widths).enumerate() {
                let Some(l) = run.latency.get(op) else {
                    let _ = write!(line, "{:>width$}", "");
                    continue;
                };
                line.push_str(&num(stat_value(l, si), width - (COMPARE + 4), 4));
                let (pct, sig) = match (&l.vs_baseline, ri) {
                    (Some(v), _) => {
                        let p = [
                            v.pct.min,
                            v.pct.amean,
                            v.pct.stddev,
                            v.pct.coeffvar,
                            v.pct.max90,
                            v.pct.max95,
                            v.pct.max99,
                            v.pct.max,
                            v.pct.bamean95,
                        ][si];
                        (p, *stat == "Amean" && v.significant)
                    }
                    _ => (0.0, false),
                };
                let (o, c) = if sig { ('*', '*') } else { ('(', ')') };
                let _ = write!(line, " {o}{:>COMPARE$.2}%{c}", fix_zero(pct));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    // `Samples` rows (not mmtests'): the sample count of each operation where
    // some run has few, so that a large % on a handful of samples reads as
    // what it is.
    for op in ops.iter().filter(|op| min_samples(report, op) < SMALL_N) {
        let mut line = format!("{:<stat_w$} {:<op_w$}", "Samples", fit(op));
        for (run, &width) in report.runs.iter().zip(&widths) {
            match run.latency.get(op) {
                Some(l) => {
                    let _ = write!(
                        line,
                        "{:>w$}{:>pad$}",
                        l.n,
                        "",
                        w = width - (COMPARE + 4),
                        pad = COMPARE + 4
                    );
                }
                None => {
                    let _ = write!(line, "{:>width$}", "");
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Below this many samples in some run, an operation gets a `Samples` row.
pub(crate) const SMALL_N: usize = 10;

/// The fewest samples any run has of an operation (runs without it aside).
pub(crate) fn min_samples(report: &Report, op: &str) -> usize {
    report
        .runs
        .iter()
        .filter_map(|r| r.latency.get(op).map(|l| l.n))
        .min()
        .unwrap_or(0)
}

/// The footnote for operations where a run has fewer samples than a
/// significance test needs: which, and why they carry no mark. `None` when
/// every compared operation has enough in every run.
pub(crate) fn too_few_samples_note(report: &Report) -> Option<String> {
    let mut cases = Vec::new();
    for op in &report.comparable.compared {
        let few: Vec<String> = report
            .runs
            .iter()
            .filter_map(|r| {
                let n = r.latency.get(op)?.n;
                (n < crate::stats::MIN_SAMPLES).then(|| format!("{} has {n}", r.name))
            })
            .collect();
        if !few.is_empty() {
            cases.push(format!("{op} ({})", few.join(", ")));
        }
    }
    if cases.is_empty() {
        return None;
    }
    Some(format!(
        "no significance mark for {}: a test needs at least {} samples on each side \
         (one sample has no spread; mmtests would take its stddev as 0 and mark any difference)",
        cases.join("; "),
        crate::stats::MIN_SAMPLES
    ))
}

fn plain_table(
    out: &mut String,
    prefix: &str,
    rows: &[(String, Vec<f64>)],
    names: &[&str],
    (min_name, width): (usize, usize),
) {
    let op_w = rows
        .iter()
        .map(|(l, _)| chars(l))
        .max()
        .unwrap_or(0)
        .max(min_name);
    let widths = column_widths(width, names);
    header(out, prefix.len() + 1 + op_w, &widths, names);
    for (l, vals) in rows {
        let mut line = format!("{prefix} {:<op_w$}", fit(l));
        for (v, &w) in vals.iter().zip(&widths) {
            line.push_str(&num(*v, w, 2));
        }
        out.push_str(&line);
        out.push('\n');
    }
}

fn duration_table(out: &mut String, report: &Report) {
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    let rows = vec![
        (
            "User".to_string(),
            report.runs.iter().map(|r| r.duration.user_s).collect(),
        ),
        (
            "System".to_string(),
            report.runs.iter().map(|r| r.duration.system_s).collect(),
        ),
        (
            "Elapsed".to_string(),
            report.runs.iter().map(|r| r.duration.elapsed_s).collect(),
        ),
    ];
    plain_table(out, "Duration", &rows, &names, (0, FIELD));
}

/// CPU seconds by task class (kswapd, the workers, kworkers), user and
/// system rows, in the Duration table's layout: who paid for reclaim. Then,
/// where the records count them (simulated runs), the pages each class
/// allocated and freed: who took memory. Nothing when no run recorded
/// per-task times.
fn task_cpu_table(out: &mut String, report: &Report) {
    let mut classes: Vec<&str> = Vec::new();
    for r in &report.runs {
        for t in &r.task_cpu {
            if !classes.contains(&t.class.as_str()) {
                classes.push(&t.class);
            }
        }
    }
    classes.sort_unstable();
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    type Pick = fn(&crate::input::TaskUse) -> Option<f64>;
    let table = |out: &mut String, prefix: &str, width: usize, what: &[(&str, Pick)]| {
        let mut rows = Vec::new();
        for c in &classes {
            for (label, pick) in what {
                let vals: Vec<Option<f64>> = report
                    .runs
                    .iter()
                    .map(|r| r.task_cpu.iter().find(|t| t.class == *c).and_then(pick))
                    .collect();
                if vals.iter().any(|v| v.is_some_and(|v| v > 0.0)) {
                    let vals = vals.into_iter().map(|v| v.unwrap_or(0.0)).collect();
                    rows.push((format!("{c} {label}"), vals));
                }
            }
        }
        if !rows.is_empty() {
            plain_table(out, prefix, &rows, &names, (0, width));
            out.push('\n');
        }
    };
    table(
        out,
        "CPU",
        FIELD,
        &[
            ("User", |t| Some(t.user_s)),
            ("System", |t| Some(t.system_s)),
        ],
    );
    // Page counts run to hundreds of millions: the Ops table's columns.
    table(
        out,
        "Pages",
        OPS_FIELD,
        &[
            ("allocated", |t| t.pages_allocated.map(|p| p as f64)),
            ("freed", |t| t.pages_freed.map(|p| p as f64)),
        ],
    );
}

fn ops_table(out: &mut String, report: &Report) {
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    let per_run: Vec<Vec<(&str, f64)>> = report.runs.iter().map(|r| ops_rows(&r.ops)).collect();
    if let Some(first) = per_run.first() {
        for (i, (label, _)) in first.iter().enumerate() {
            rows.push((label.to_string(), per_run.iter().map(|r| r[i].1).collect()));
        }
    }
    if report.runs.iter().any(|r| r.ops.memcg.is_some()) {
        let per_run: Vec<Vec<(&str, f64)>> =
            report.runs.iter().map(|r| memcg_rows(&r.ops)).collect();
        if let Some(first) = per_run.first() {
            for (i, (label, _)) in first.iter().enumerate() {
                rows.push((label.to_string(), per_run.iter().map(|r| r[i].1).collect()));
            }
        }
    }
    plain_table(out, "Ops", &rows, &names, (OPS_NAME, OPS_FIELD));
}

fn scope_lines(out: &mut String, report: &Report) {
    out.push_str(
        "Reclaim scope (which reclaim each run exercised, and which counters show its scanning):\n",
    );
    // Names padded to the longest so the scope column lines up.
    let name_w = label_width(report.runs.iter().map(|r| r.name.as_str()));
    for r in &report.runs {
        let counters = if r.scan_counters == "lru" {
            "pgscan_anon/pgscan_file, pgsteal_anon/pgsteal_file (Memcg rows)"
        } else {
            "pgscan_direct/pgscan_kswapd, pgsteal_direct/pgsteal_kswapd"
        };
        let _ = writeln!(
            out,
            "  {:<name_w$} {:<9} {}",
            fit(&r.name),
            fit(&r.reclaim_scope),
            counters
        );
    }
}

fn stall_section(out: &mut String, run: &RunReport) {
    let t = &run.trace;
    let _ = write!(out, "Stalls: {}", fit(&run.name));
    if t.present {
        let _ = write!(
            out,
            " (trace {}: {} lines, {} stall events, {} unparsed",
            t.file, t.lines, t.stall_events, t.bad_lines
        );
        if t.lost_events > 0 {
            let _ = write!(out, ", {} lost", t.lost_events);
        }
        if t.truncated.is_some() {
            out.push_str(", TRUNCATED");
        }
        out.push_str(")\n");
    } else {
        let _ = writeln!(
            out,
            " (no trace: {})",
            t.note
                .as_deref()
                .unwrap_or("the record has no trace.txt.gz")
        );
        return;
    }
    if run.stalls.is_empty() {
        out.push_str("  no stall events (mm_vmscan_throttled, writeback_congestion_wait, writeback_wait_iff_congested)\n");
        return;
    }
    for ev in StallEvent::ALL {
        for who in ["kswapd", "direct"] {
            let h = uniq_c_histogram(&run.stalls, ev.name(), who);
            if h.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{} {}", ev.name(), who);
            out.push_str(&h);
        }
    }
    out.push('\n');
    // Text columns at least as wide as today's layout, wider if a trace
    // carries a longer event, task class or reason, so the numbers stay put.
    fn reason(r: &str) -> &str {
        if r.is_empty() {
            "-"
        } else {
            r
        }
    }
    let sum = &run.stall_summary;
    let ev_w = sum.iter().map(|s| chars(&s.event)).fold(28, usize::max);
    let who_w = sum.iter().map(|s| chars(&s.who)).fold(6, usize::max);
    let why_w = sum
        .iter()
        .map(|s| chars(reason(&s.reason)))
        .fold(27, usize::max);
    let _ = writeln!(
        out,
        "{:<ev_w$} {:<who_w$} {:<why_w$} {:>9} {:>11} {:>11} {:>13} {:>11}",
        "Event",
        "Who",
        "Reason",
        "Count",
        "NotDelayed%",
        "HitTimeout%",
        "MeanDelay-us",
        "P99Delay-us"
    );
    for s in sum {
        let _ = writeln!(
            out,
            "{:<ev_w$} {:<who_w$} {:<why_w$} {:>9} {:>11.2} {:>11.2} {:>13.1} {:>11}",
            fit(&s.event),
            fit(&s.who),
            fit(reason(&s.reason)),
            s.count,
            s.not_delayed_pct,
            s.hit_timeout_pct,
            s.mean_delay_us,
            s.p99_delay_us
        );
    }
}

/// Renders the whole report as text (deterministic).
/// What differs between the runs: one line per setting, a column per run.
fn difference_lines(out: &mut String, report: &Report) {
    if report.differences.is_empty() && report.settings_in_some_runs == 0 {
        return;
    }
    out.push('\n');
    out.push_str("Set up differently (kernel, machine, seed and parameters of each record):\n");
    if report.settings_in_some_runs > 0 {
        let _ = writeln!(
            out,
            "  ({} more setting(s) recorded by only some of the runs)",
            report.settings_in_some_runs
        );
    }
    if report.differences.is_empty() {
        return;
    }
    let name_w = label_width(report.differences.iter().map(|d| d.name.as_str()));
    // A column as wide as its run's name or its widest value.
    let widths: Vec<usize> = report
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            report
                .differences
                .iter()
                .map(|d| chars(&d.values[i]))
                .fold(chars(&r.name), usize::max)
        })
        .collect();
    let mut line = format!("  {:<name_w$}", "");
    for (r, w) in report.runs.iter().zip(&widths) {
        let _ = write!(line, "  {:<w$}", fit(&r.name));
    }
    out.push_str(line.trim_end());
    out.push('\n');
    for d in &report.differences {
        let mut line = format!("  {:<name_w$}", fit(&d.name));
        for (v, w) in d.values.iter().zip(&widths) {
            let _ = write!(line, "  {:<w$}", fit(v));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let sig = match report.significance {
        Significance::Ttest => "t-test, * if p < 0.10 (mmtests 2018-2024)",
        Significance::Ci => {
            "interval rule, * if |cidiff| > 1 with mean +/- 1.96*stddev (mmtests 2024-)"
        }
    };
    let _ = writeln!(
        out,
        "reclaimlab report: {} run(s), baseline {}; % columns against the baseline, positive = better; significance: {sig}",
        report.runs.len(),
        fit(&report.baseline)
    );
    // A note may quote names from the records (metrics, runs, settings):
    // bounded as a table cell is, five cells' worth.
    for n in &report.notes {
        let _ = writeln!(out, "note: {}", fit_to(n, 5 * MAX_CELL));
    }
    out.push('\n');
    if report.runs.len() > super::runs::MANY_RUNS {
        super::runs::runs_table(&mut out, report);
        out.push('\n');
    }
    if report.comparable.compared.is_empty() {
        out.push_str("No latency operation is present in every run: no latency comparison.\n\n");
    } else {
        out.push_str("Latency (ms)\n");
        latency_table(&mut out, report);
        if let Some(note) = too_few_samples_note(report) {
            let _ = writeln!(out, "note: {}", fit_to(&note, 5 * MAX_CELL));
        }
        out.push('\n');
    }
    duration_table(&mut out, report);
    out.push('\n');
    task_cpu_table(&mut out, report);
    ops_table(&mut out, report);
    out.push('\n');
    scope_lines(&mut out, report);
    difference_lines(&mut out, report);
    super::oom::oom_text(&mut out, report);
    for run in &report.runs {
        out.push('\n');
        stall_section(&mut out, run);
    }
    super::ftrace::ftrace_section(&mut out, report);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{LatencySample, RunInput, RunMeta};
    use crate::model::{build_report, Options};
    use crate::ops::Duration;

    fn run(name: &str, means_ms: &[(u32, f64)], dur: Duration, vm: &[(&str, i64)]) -> RunInput {
        RunInput {
            meta: RunMeta {
                name: name.into(),
                workload: "stutterp".into(),
                reclaim_scope: "global".into(),
                duration: dur,
                ..RunMeta::default()
            },
            latency: means_ms
                .iter()
                .map(|&(step, ms)| LatencySample {
                    step,
                    metric: "mmap".into(),
                    t_s: 0.0,
                    value_us: ms * 1000.0,
                })
                .collect(),
            vmstat_delta: vm.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..RunInput::default()
        }
    }

    /// The layout of Mel Gorman's v4 cover letter (2021-10-19), line for line.
    #[test]
    fn v4_letter_layout() {
        let steps = [4, 7, 12, 21, 30, 48];
        let base_means = [31.4003, 38.1641, 60.0981, 161.2699, 174.5589, 8106.8160];
        let new_means = [
            176.8729, 605.8866, 2866.8561, 118.6587, 3729.2263, 1463.7815,
        ];
        let zip = |m: &[f64]| {
            steps
                .iter()
                .copied()
                .zip(m.iter().copied())
                .collect::<Vec<_>>()
        };
        let base = run(
            "5.15.0-rc1-vanilla",
            &zip(&base_means),
            Duration {
                user_s: 6989.03,
                system_s: 7308.12,
                elapsed_s: 2277.67,
            },
            &[
                ("pgscan_direct", 1_056_608_451),
                ("pgscan_kswapd", 109_795_048),
            ],
        );
        let new = run(
            "5.15.0-rc1-mm-reclaimcongest-v4r2",
            &zip(&new_means),
            Duration {
                user_s: 2368.70,
                system_s: 843.35,
                elapsed_s: 2131.77,
            },
            &[("pgscan_direct", 76_886_196), ("pgscan_kswapd", 82_179_688)],
        );
        let t = render_text(&build_report(&[base, new], Options::default()));
        let expect = [
            "                              5.15.0-rc1             5.15.0-rc1",
            "                                 vanilla mm-reclaimcongest-v4r2",
            "Amean     mmap-4      31.4003 (   0.00%)    176.8729 (-463.28%)",
            "Amean     mmap-7      38.1641 (   0.00%)    605.8866 (-1487.58%)",
            "Amean     mmap-48   8106.8160 (   0.00%)   1463.7815 (  81.94%)",
            // The letter's Duration and Ops tables overflow: its 22-character
            // "mm-reclaimcongest-v4r2" header sticks out past the 12/15-wide
            // value columns (`Duration User        6989.03     2368.70`,
            // `                                        vanilla mm-reclaimcongest-v4r2`
            // over `Ops Direct pages scanned          1056608451.00    76886196.00`).
            // Here that column widens to the name, so values end under it;
            // the first column, whose name fits, is the letter's.
            "                  5.15.0-rc1             5.15.0-rc1",
            "                     vanilla mm-reclaimcongest-v4r2",
            "Duration User        6989.03                2368.70",
            "Duration Elapsed     2277.67                2131.77",
            "                                     5.15.0-rc1             5.15.0-rc1",
            "                                        vanilla mm-reclaimcongest-v4r2",
            "Ops Direct pages scanned          1056608451.00            76886196.00",
            "Ops Kswapd pages scanned           109795048.00            82179688.00",
            "Ops Percentage direct scans               90.59                  48.34",
        ];
        for line in expect {
            assert!(
                t.lines().any(|l| l == line),
                "missing line\n{line}\nin\n{t}"
            );
        }
    }

    /// The runs' set-up differences: settings all runs record and that
    /// differ are listed, a column per run; settings only some record are
    /// counted; settings alike are left out.
    #[test]
    fn differences_list_what_is_set_up_differently() {
        let d = Duration::default();
        let settings = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let mut a = run("v5.15", &[(4, 1.0)], d, &[]);
        a.meta.settings = settings(&[
            ("kernel", "v5.15"),
            ("seed", "1"),
            ("policy.noprogress", "none"),
            ("vm.dirty_ratio", "20"),
        ]);
        let mut b = run("v5.16-rc1", &[(4, 1.0)], d, &[]);
        b.meta.settings = settings(&[
            ("kernel", "v5.16-rc1"),
            ("seed", "1"),
            ("policy.noprogress", "rc1"),
            ("vm.dirty_ratio", "20"),
            ("only.here", "x"),
        ]);
        let r = build_report(&[a.clone(), b], Options::default());
        let names: Vec<&str> = r.differences.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["kernel", "policy.noprogress"]);
        assert_eq!(r.differences[1].values, ["none", "rc1"]);
        assert_eq!(r.settings_in_some_runs, 1);
        let text = render_text(&r);
        assert!(
            text.contains("  (1 more setting(s) recorded by only some of the runs)\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  policy.noprogress         none   rc1\n"),
            "{text}"
        );
        let alone = build_report(&[a], Options::default());
        assert!(
            alone.differences.is_empty() && !render_text(&alone).contains("Set up differently")
        );
    }

    /// One latency sample against many: the Amean differs by far more than
    /// the many samples' spread, which mmtests would mark `*`; here there is
    /// no mark, a footnote says why, and a `Samples` row shows the counts.
    #[test]
    fn one_sample_gets_no_mark_and_a_footnote() {
        let d = Duration::default();
        let many: Vec<(u32, f64)> = (0..40).map(|i| (8, 200.0 + f64::from(i % 5))).collect();
        let base = run("v5.15", &many, d, &[]);
        let new = run("v5.16-rc1", &[(8, 52_000.0)], d, &[]);
        let r = build_report(&[base, new], Options::default());
        let v = r.runs[1]
            .latency
            .get("mmap-8")
            .unwrap()
            .vs_baseline
            .clone()
            .unwrap();
        assert!(!v.significant, "{v:?}");
        let t = render_text(&r);
        let amean = t.lines().find(|l| l.starts_with("Amean")).unwrap();
        assert!(!amean.contains('*'), "{amean}");
        assert!(
            t.contains("note: no significance mark for mmap-8 (v5.16-rc1 has 1): a test needs at least 2 samples on each side"),
            "{t}"
        );
        let samples = t.lines().find(|l| l.starts_with("Samples")).unwrap();
        assert_eq!(
            samples.split_whitespace().collect::<Vec<_>>(),
            ["Samples", "mmap-8", "40", "1"]
        );
        // Two samples on the new side: tested, and significant.
        let new2 = run("v5.16-rc1", &[(8, 52_000.0), (8, 52_010.0)], d, &[]);
        let base = run("v5.15", &many, d, &[]);
        let r = build_report(&[base, new2], Options::default());
        assert!(
            r.runs[1]
                .latency
                .get("mmap-8")
                .unwrap()
                .vs_baseline
                .as_ref()
                .unwrap()
                .significant
        );
        assert!(too_few_samples_note(&r).is_none());
    }

    #[test]
    fn header_split() {
        assert_eq!(
            split_name("5.15.0-rc3-vanilla"),
            ("5.15.0-rc3".into(), "vanilla".into())
        );
        assert_eq!(
            split_name("5.15.0-rc3-mm-reclaimcongest-v4r2"),
            ("5.15.0-rc3".into(), "mm-reclaimcongest-v4r2".into())
        );
        assert_eq!(split_name("v5.15"), ("".into(), "v5.15".into()));
        assert_eq!(split_name("v5.16-rc1"), ("".into(), "v5.16-rc1".into()));
        assert_eq!(split_name("a-b"), ("a".into(), "b".into()));
    }

    /// A sweep's many runs get a table with a row each, before the columns.
    #[test]
    fn many_runs_get_a_row_each() {
        let runs: Vec<RunInput> = (1..=7)
            .map(|i| {
                let m = 10.0 * f64::from(i);
                run(
                    &format!("p={i}"),
                    &[(4, m), (4, m + 2.0)],
                    Duration {
                        user_s: 1.0,
                        system_s: 2.0,
                        elapsed_s: 100.0 + f64::from(i),
                    },
                    &[("pgscan_direct", 1000 * i64::from(i))],
                )
            })
            .collect();
        let t = render_text(&build_report(&runs, Options::default()));
        let table: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.starts_with("Runs, one per row (7 runs"))
            .take(9)
            .collect();
        assert_eq!(table.len(), 9, "{t}");
        assert!(table[1].starts_with("run ") && table[1].contains("Amean mmap-4"));
        assert!(table[1].contains("Max-99 mmap-4") && table[1].contains("Direct scanned"));
        // Row per run in run order: the baseline at 0 %, the second 10 ms
        // slower in Amean (11 -> 21 ms: -90.91 %, significant), its scanning.
        assert!(table[2].starts_with("p=1 ") && table[2].contains("11.0000 (   0.00%)"));
        assert!(
            table[3].starts_with("p=2 ") && table[3].contains("21.0000 * -90.91%*"),
            "{}",
            table.join("\n")
        );
        assert!(table[3].contains(" 102.00 ") && table[3].trim_end().contains(" 2000 "));
        assert!(table[8].starts_with("p=7 "));
        // Nor are their names the HTML page's title.
        let html = crate::format::html::render_html(&build_report(&runs, Options::default()));
        let html = String::from_utf8(html).unwrap();
        assert!(html.contains("<title>reclaimlab report: 7 runs, p=1 … p=7</title>"));
        // Two runs read well in columns: no table of runs.
        let two = build_report(&runs[..2], Options::default());
        assert!(!render_text(&two).contains("Runs, one per row"));
        let html = String::from_utf8(crate::format::html::render_html(&two)).unwrap();
        assert!(html.contains("<title>reclaimlab report: p=1 vs p=2</title>"));
    }

    /// A numeric sweep gets plots of its figures against the swept value,
    /// a line per kernel; a seed sweep, or too few values, none.
    #[test]
    fn a_numeric_sweep_is_plotted_against_its_values() {
        let mk = |kernel: &str, t: u32, ms: f64| {
            let mut r = run(
                &format!("{kernel},t={t}"),
                &[(4, ms), (4, ms + 1.0)],
                Duration::default(),
                &[("pgscan_direct", i64::from(t))],
            );
            r.meta.settings = vec![
                ("kernel".into(), kernel.into()),
                ("seed".into(), "1".into()),
                ("t".into(), t.to_string()),
            ];
            r
        };
        let mut runs = Vec::new();
        for k in ["v5.15", "v5.16"] {
            for (t, ms) in [(1000, 10.0), (10, 30.0), (100, 20.0)] {
                runs.push(mk(k, t, ms));
            }
        }
        let r = build_report(&runs, Options::default());
        let html = String::from_utf8(crate::format::html::render_html(&r)).unwrap();
        let sweep = &html[html
            .find("<h2>Sweep</h2>\n<h3 id=\"sweep-plots\">Figures against t</h3>")
            .expect("sweep plots")..];
        let sweep = &sweep[..sweep.find("<h2>Latency distributions").unwrap()];
        // Short labels: the kernel alone names a line; markers on points.
        assert!(
            sweep.contains("</i>v5.15</span>") && sweep.contains("<circle"),
            "{sweep}"
        );
        assert!(
            sweep.contains("Amean mmap-4 against t")
                && sweep.contains("Direct pages scanned against t")
        );
        // Two lines (the kernels) of three points each, in x order, on the
        // first plot: log x (10 to 1000), so evenly spaced.
        let first = &sweep[..sweep.find("</svg>").unwrap()];
        let lines: Vec<&str> = first
            .split("<polyline ")
            .skip(1)
            .filter(|p| !p.contains("stroke=\"#000000\""))
            .map(|p| {
                let p = &p[p.find("points=\"").unwrap() + 8..];
                &p[..p.find('"').unwrap()]
            })
            .filter(|p| p.split_whitespace().count() == 3)
            .collect();
        assert_eq!(lines.len(), 2, "{first}");
        let xs: Vec<f64> = lines[0]
            .split_whitespace()
            .map(|xy| xy.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs[0] < xs[1] && xs[1] < xs[2]);
        assert!(((xs[1] - xs[0]) - (xs[2] - xs[1])).abs() <= 1.0, "{xs:?}");
        // Only two values, or only seeds: no sweep plots.
        let two: Vec<RunInput> = runs
            .iter()
            .filter(|r| !r.meta.name.ends_with("=100"))
            .cloned()
            .collect();
        let html = String::from_utf8(crate::format::html::render_html(&build_report(
            &two,
            Options::default(),
        )))
        .unwrap();
        assert!(!html.contains("<h2>Sweep</h2>"));
        let seeds: Vec<RunInput> = (1..=3)
            .map(|s| {
                let mut r = mk("v5.16", 10, 10.0);
                r.meta.name = format!("v5.16,seed={s}");
                r.meta.settings[1].1 = s.to_string();
                r
            })
            .collect();
        let html = String::from_utf8(crate::format::html::render_html(&build_report(
            &seeds,
            Options::default(),
        )))
        .unwrap();
        assert!(!html.contains("<h2>Sweep</h2>"));
    }
}
