//! The text report's table of runs, one per row, for sweeps.
//!
//! mmtests' compare tables give each run a column, which reads well for
//! the two to five kernels of a comparison and not at all for a sweep of
//! twenty or two hundred points. Past [`MANY_RUNS`] runs the text report
//! opens with this table: each run's headline figures on one line, in run
//! order, so that a sweep reads down a page. The column tables follow
//! unchanged (every figure stays in them and in the JSON).

use std::fmt::Write as _;

use super::text::{chars, fit};
use crate::model::{Report, RunReport};

/// More runs than this and the text report adds the table of runs.
pub const MANY_RUNS: usize = 6;

/// One column: header and the value of a run (`None`: not in this run).
type Column<'a> = (String, Box<dyn Fn(&RunReport) -> Option<String> + 'a>);

/// Appends the table of runs.
pub fn runs_table(out: &mut String, report: &Report) {
    let mut cols: Vec<Column> = Vec::new();
    // The heaviest compared step's latency (the last: operations are in
    // step order), where it shows throttling most.
    if let Some(op) = report.comparable.compared.last() {
        cols.push((
            format!("Amean {op}"),
            Box::new(move |r: &RunReport| {
                r.latency.get(op).map(|l| {
                    let (pct, sig) = l
                        .vs_baseline
                        .as_ref()
                        .map_or((0.0, false), |v| (v.pct.amean, v.significant));
                    let (o, c) = if sig { ('*', '*') } else { ('(', ')') };
                    format!("{:.4} {o}{:>7.2}%{c}", l.amean, pct + 0.0)
                })
            }),
        ));
        cols.push((
            format!("Max-99 {op}"),
            Box::new(move |r: &RunReport| r.latency.get(op).map(|l| format!("{:.4}", l.max99))),
        ));
    }
    cols.push((
        "Elapsed s".into(),
        Box::new(|r: &RunReport| Some(format!("{:.2}", r.duration.elapsed_s))),
    ));
    cols.push((
        "System s".into(),
        Box::new(|r: &RunReport| Some(format!("{:.2}", r.duration.system_s))),
    ));
    cols.push((
        "Direct scanned".into(),
        Box::new(|r: &RunReport| Some(r.ops.direct_pages_scanned.to_string())),
    ));
    cols.push((
        "Kswapd scanned".into(),
        Box::new(|r: &RunReport| Some(r.ops.kswapd_pages_scanned.to_string())),
    ));
    cols.push((
        "Reclaim immediate".into(),
        Box::new(|r: &RunReport| Some(r.ops.page_reclaim_immediate.to_string())),
    ));
    // Every traced stall (throttled, congestion_wait, wait_iff_congested)
    // and the time slept in them.
    cols.push((
        "Stalls".into(),
        Box::new(|r: &RunReport| {
            (!r.stall_summary.is_empty()).then(|| {
                r.stall_summary
                    .iter()
                    .map(|s| s.count)
                    .sum::<u64>()
                    .to_string()
            })
        }),
    ));
    cols.push((
        "Stalled s".into(),
        Box::new(|r: &RunReport| r.stalled_s().map(|s| format!("{s:.2}"))),
    ));

    let cells: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            cols.iter()
                .map(|(_, f)| f(r).unwrap_or_else(|| "-".into()))
                .collect()
        })
        .collect();
    let name_w = report
        .runs
        .iter()
        .map(|r| chars(&r.name))
        .chain(["run".len()])
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, (h, _))| {
            cells
                .iter()
                .map(|row| chars(&row[i]))
                .chain([chars(h)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = writeln!(
        out,
        "Runs, one per row ({} runs; latency in ms, % against the baseline as below; stalls as traced):",
        report.runs.len()
    );
    let mut line = format!("{:<name_w$}", "run");
    for ((h, _), w) in cols.iter().zip(&widths) {
        let _ = write!(line, "  {:>w$}", fit(h));
    }
    out.push_str(line.trim_end());
    out.push('\n');
    for (r, row) in report.runs.iter().zip(&cells) {
        let mut line = format!("{:<name_w$}", fit(&r.name));
        for (c, w) in row.iter().zip(&widths) {
            let _ = write!(line, "  {:>w$}", fit(c));
        }
        out.push_str(&line);
        out.push('\n');
    }
}
