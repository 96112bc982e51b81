//! mmtests' ftrace stall monitor tables (`crate::monitor`) in text and HTML.
//!
//! Each table is headed as `compare-kernels.sh` heads it (`Ftrace direct
//! reclaim allocation stalls`, `Ftrace congestion_wait kswapd`, …) plus its
//! unit, and laid out as the latency table (`Compare.pm`'s `%12.4f` and
//! ` (%7.2f%%)` columns, the first run the baseline, rows named `STAT OP`;
//! a table whose values need more than 11 characters widens its columns).
//! One departure: `compare-mmtests.pl --print-monitor` hides the % column of
//! monitors; here it is shown, `pndiff` for the statistics and `pdiff` for the
//! `Samples` rows (`Stat.pm`'s `stat_compare`), without significance marks.
//! A run without a sample in a table has no statistics there: those cells
//! are blank, its `Samples` rows 0.

use std::fmt::Write as _;

use super::html::{esc, esc_fit};
use super::text::{chars, column_widths, fit, fix_zero, header, num, COMPARE, FIELD};
use crate::model::Report;
use crate::monitor::FtraceTable;

/// The row names of table `ti`: those of a run that has every row (one with
/// samples; every shown table has one).
fn row_names(report: &Report, ti: usize) -> Vec<&str> {
    report
        .runs
        .iter()
        .filter_map(|r| r.ftrace_stalls.get(ti))
        .max_by_key(|t| t.rows.len())
        .map(|t| t.rows.iter().map(|r| r.stat.as_str()).collect())
        .unwrap_or_default()
}

/// The % shown for a row of run `ri`: 0 for the baseline, else the stored
/// comparison (none where the baseline has no such value).
fn pct_of(t: &FtraceTable, stat: &str, ri: usize) -> Option<f64> {
    let row = t.row(stat)?;
    if ri == 0 {
        Some(0.0)
    } else {
        row.pct
    }
}

/// Appends the ftrace stall tables (nothing when no run has a sample in any).
pub(super) fn ftrace_section(out: &mut String, report: &Report) {
    let Some(first) = report.runs.first() else {
        return;
    };
    if first.ftrace_stalls.is_empty() {
        return;
    }
    out.push_str(
        "\nFtrace stall monitors (mmtests compare-kernels.sh with INCLUDE_FTRACE=yes): % against the baseline, \
         pndiff (positive = shorter stalls) except the Samples rows, pdiff (positive = more stalls; -100% = all gone); \
         no significance marks; a blank cell: no such stall in that run.\n\
         Units as the kernel prints them: congestion_wait and wait_iff_congested usec_delayed in us \
         (mmtests labels the same numbers ms); balance_dirty_pages pause in ms \
         (mmtests shows 4x, taking it for jiffies at HZ=250).\n",
    );
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    for (ti, t) in first.ftrace_stalls.iter().enumerate() {
        // A column is the value then ` (%7.2f%%)`, as in the latency table;
        // the value field widens past `%12.4f` only when a value (a µs
        // delay of a second or more) would otherwise touch its neighbour.
        let longest = report
            .runs
            .iter()
            .filter_map(|r| r.ftrace_stalls.get(ti))
            .flat_map(|t| &t.rows)
            .map(|r| num(r.value, 0, 4).len() + 1)
            .fold(FIELD, usize::max);
        let widths = column_widths(longest + COMPARE + 4, &names);
        let stats = row_names(report, ti);
        let stat_w = stats.iter().map(|s| chars(s)).max().unwrap_or(0);
        let op = t.operation.as_str();
        let _ = writeln!(out, "\n{} ({})", t.table, t.unit);
        header(out, stat_w + 1 + op.len(), &widths, &names);
        for stat in &stats {
            let mut line = format!("{:<stat_w$} {op}", fit(stat));
            for (ri, (run, &width)) in report.runs.iter().zip(&widths).enumerate() {
                let Some(rt) = run.ftrace_stalls.get(ti) else {
                    let _ = write!(line, "{:>width$}", "");
                    continue;
                };
                let Some(row) = rt.row(stat) else {
                    let _ = write!(line, "{:>width$}", "");
                    continue;
                };
                line.push_str(&num(row.value, width - (COMPARE + 4), 4));
                match pct_of(rt, stat, ri) {
                    Some(p) => {
                        let _ = write!(line, " ({:>COMPARE$.2}%)", fix_zero(p));
                    }
                    None => {
                        let _ = write!(line, "{:>w$}", "", w = COMPARE + 4);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

/// The same tables as HTML tables (value and % per run).
pub(super) fn ftrace_html(out: &mut String, report: &Report) {
    let Some(first) = report.runs.first() else {
        return;
    };
    if first.ftrace_stalls.is_empty() {
        return;
    }
    out.push_str("<h2>Ftrace stall monitors (mmtests)</h2>\n<p class=\"note\">As compare-kernels.sh prints them with INCLUDE_FTRACE=yes. % against the first run: pndiff (positive = shorter stalls), the Samples rows pdiff (positive = more stalls; −100% = all gone). congestion_wait and wait_iff_congested are in µs (mmtests labels the same numbers ms); balance_dirty_pages pause is the kernel's ms (mmtests shows 4×). A blank cell: no such stall in that run.</p>\n");
    for (ti, t) in first.ftrace_stalls.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h3>{} ({})</h3>\n<table class=\"cmp\"><tr><th>{}</th>",
            esc(&t.table),
            esc(&t.unit),
            esc_fit(&t.operation)
        );
        for r in &report.runs {
            let _ = write!(out, "<th>{}</th><th>%</th>", esc_fit(&r.name));
        }
        out.push_str("</tr>\n");
        for stat in row_names(report, ti) {
            let _ = write!(out, "<tr><td>{}</td>", esc_fit(stat));
            for (ri, run) in report.runs.iter().enumerate() {
                let Some(rt) = run.ftrace_stalls.get(ti) else {
                    out.push_str("<td></td><td></td>");
                    continue;
                };
                let value = rt.row(stat).map(|r| format!("{:.4}", fix_zero(r.value)));
                let pct = pct_of(rt, stat, ri).map(|p| format!("{:.2}%", fix_zero(p)));
                let _ = write!(
                    out,
                    "<td>{}</td><td>{}</td>",
                    value.unwrap_or_default(),
                    pct.unwrap_or_default()
                );
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
}
