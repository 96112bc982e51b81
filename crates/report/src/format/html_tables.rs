//! The mmtests tables of the HTML report, as HTML tables: the same figures as
//! the text report (`format/text.rs`), a column per run (and a % column
//! against the baseline for latency), with long `uniq -c` stall histograms
//! folded in `<details>`.

use std::fmt::Write as _;

use super::html::{esc, esc_fit};
use super::plot::{hex, run_color};
use super::text::{
    fit_to, fix_zero, min_samples, stat_value, too_few_samples_note, MAX_CELL, SMALL_N, STATS,
};
use crate::model::Report;
use crate::ops::{memcg_rows, ops_rows};
use crate::stalls::{uniq_c_histogram, StallEvent};

/// Runs' header cells, each with its colour and `span` columns.
fn run_headers(report: &Report, span: usize) -> String {
    let mut h = String::new();
    for (i, r) in report.runs.iter().enumerate() {
        let _ = write!(
            h,
            "<th colspan=\"{span}\"><i class=\"sw\" style=\"border-color:{c};background:{c}\"></i>{}</th>",
            esc_fit(&r.name),
            c = hex(run_color(i))
        );
    }
    h
}

/// A number as the text report prints it (`prec` decimals), for a cell.
fn num(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{:.prec$}", fix_zero(x))
    } else {
        format!("{x}")
    }
}

/// mmtests' latency table: statistic × operation rows, value and % per run,
/// `*…*` and bold where the Amean difference is significant.
pub(crate) fn latency_table(report: &Report, out: &mut String) {
    let ops = &report.comparable.compared;
    if ops.is_empty() {
        out.push_str("<p class=\"note\">No latency operation is present in every run: no latency comparison.</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<table class=\"cmp\"><tr><th>statistic</th><th>operation</th>{}</tr>",
        run_headers(report, 2)
    );
    for (si, stat) in STATS.iter().enumerate() {
        for op in ops {
            let _ = write!(out, "<tr><td>{stat}</td><td>{}</td>", esc_fit(op));
            for r in &report.runs {
                let Some(l) = r.latency.get(op) else {
                    out.push_str("<td></td><td></td>");
                    continue;
                };
                let (pct, sig) = match &l.vs_baseline {
                    Some(v) => {
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
                    None => (0.0, false),
                };
                let pct_cell = if sig {
                    format!("<td class=\"sig\">*{:.2}%*</td>", fix_zero(pct))
                } else {
                    format!("<td class=\"pct\">{:.2}%</td>", fix_zero(pct))
                };
                let _ = write!(out, "<td>{}</td>{pct_cell}", num(stat_value(l, si), 4));
            }
            out.push_str("</tr>\n");
        }
    }
    for op in ops.iter().filter(|op| min_samples(report, op) < SMALL_N) {
        let _ = write!(
            out,
            "<tr class=\"few\"><td>Samples</td><td>{}</td>",
            esc_fit(op)
        );
        for r in &report.runs {
            let n = r
                .latency
                .get(op)
                .map(|l| l.n.to_string())
                .unwrap_or_default();
            let _ = write!(out, "<td>{n}</td><td></td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    if let Some(note) = too_few_samples_note(report) {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}.</p>",
            esc(&fit_to(&note, 5 * MAX_CELL))
        );
    }
}

/// A table of named rows, a value per run (`prec` decimals).
fn plain(
    report: &Report,
    out: &mut String,
    prefix: &str,
    rows: &[(String, Vec<f64>)],
    prec: usize,
) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<table class=\"cmp\"><tr><th>{prefix}</th>{}</tr>",
        run_headers(report, 1)
    );
    for (label, vals) in rows {
        let _ = write!(out, "<tr><td>{}</td>", esc_fit(label));
        for v in vals {
            let _ = write!(out, "<td>{}</td>", num(*v, prec));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// Duration, CPU and pages by task class, and the Ops table.
pub(crate) fn figures_tables(report: &Report, out: &mut String) {
    let runs = &report.runs;
    plain(
        report,
        out,
        "Duration (s)",
        &[
            (
                "User".into(),
                runs.iter().map(|r| r.duration.user_s).collect(),
            ),
            (
                "System".into(),
                runs.iter().map(|r| r.duration.system_s).collect(),
            ),
            (
                "Elapsed".into(),
                runs.iter().map(|r| r.duration.elapsed_s).collect(),
            ),
        ],
        2,
    );
    let mut classes: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.task_cpu.iter().map(|t| t.class.as_str()))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    type Pick = fn(&crate::input::TaskUse) -> Option<f64>;
    let by_class = |what: &[(&str, Pick)]| -> Vec<(String, Vec<f64>)> {
        let mut rows = Vec::new();
        for c in &classes {
            for (label, pick) in what {
                let vals: Vec<Option<f64>> = runs
                    .iter()
                    .map(|r| r.task_cpu.iter().find(|t| t.class == *c).and_then(pick))
                    .collect();
                if vals.iter().any(|v| v.is_some_and(|v| v > 0.0)) {
                    rows.push((
                        format!("{c} {label}"),
                        vals.into_iter().map(|v| v.unwrap_or(0.0)).collect(),
                    ));
                }
            }
        }
        rows
    };
    plain(
        report,
        out,
        "CPU by task class (s)",
        &by_class(&[
            ("User", |t| Some(t.user_s)),
            ("System", |t| Some(t.system_s)),
        ]),
        2,
    );
    plain(
        report,
        out,
        "Pages by task class",
        &by_class(&[
            ("allocated", |t| t.pages_allocated.map(|p| p as f64)),
            ("freed", |t| t.pages_freed.map(|p| p as f64)),
        ]),
        0,
    );
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    let per_run: Vec<Vec<(&str, f64)>> = runs.iter().map(|r| ops_rows(&r.ops)).collect();
    if let Some(first) = per_run.first() {
        for (i, (label, _)) in first.iter().enumerate() {
            rows.push((label.to_string(), per_run.iter().map(|r| r[i].1).collect()));
        }
    }
    if runs.iter().any(|r| r.ops.memcg.is_some()) {
        let per_run: Vec<Vec<(&str, f64)>> = runs.iter().map(|r| memcg_rows(&r.ops)).collect();
        if let Some(first) = per_run.first() {
            for (i, (label, _)) in first.iter().enumerate() {
                rows.push((label.to_string(), per_run.iter().map(|r| r[i].1).collect()));
            }
        }
    }
    plain(report, out, "Ops", &rows, 2);
}

/// What the runs are set up differently in, a column per run.
pub(crate) fn differences_table(report: &Report, out: &mut String) {
    if report.differences.is_empty() {
        out.push_str("<p>The runs are set up alike (same settings in every record).</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<table class=\"cmp left\"><tr><th>setting</th>{}</tr>",
        run_headers(report, 1)
    );
    for d in &report.differences {
        let _ = write!(out, "<tr><td>{}</td>", esc_fit(&d.name));
        for v in &d.values {
            let _ = write!(out, "<td>{}</td>", esc_fit(v));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    if report.settings_in_some_runs > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more setting(s) recorded by only some of the runs.</p>",
            report.settings_in_some_runs
        );
    }
}

/// Per run: the stall summary table, and the `uniq -c` histograms folded.
pub(crate) fn stall_tables(report: &Report, out: &mut String) {
    for (i, r) in report.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h3><i class=\"sw\" style=\"border-color:{c};background:{c}\"></i>{}</h3>",
            esc_fit(&r.name),
            c = hex(run_color(i))
        );
        if !r.trace.present {
            let note = r
                .trace
                .note
                .as_deref()
                .unwrap_or("the record has no trace.txt.gz");
            let _ = writeln!(
                out,
                "<p class=\"note\">No trace: {}</p>",
                esc(&fit_to(note, 5 * MAX_CELL))
            );
            continue;
        }
        if r.stall_summary.is_empty() {
            out.push_str("<p>No stall events.</p>\n");
            continue;
        }
        out.push_str("<table class=\"left3\"><tr><th>event</th><th>who</th><th>reason</th><th>count</th><th>not delayed %</th><th>hit timeout %</th><th>mean delay µs</th><th>p99 delay µs</th><th>max delay µs</th><th>slept, s</th></tr>\n");
        for s in &r.stall_summary {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.3}</td></tr>",
                esc_fit(&s.event),
                esc_fit(&s.who),
                esc_fit(if s.reason.is_empty() { "-" } else { &s.reason }),
                s.count,
                s.not_delayed_pct,
                s.hit_timeout_pct,
                s.mean_delay_us,
                s.p99_delay_us,
                s.max_delay_us,
                s.total_delay_s
            );
        }
        out.push_str("</table>\n");
        for ev in StallEvent::ALL {
            for who in ["kswapd", "direct"] {
                let h = uniq_c_histogram(&r.stalls, ev.name(), who);
                if h.is_empty() {
                    continue;
                }
                let lines = h.lines().count();
                let _ = writeln!(
                    out,
                    "<details><summary><code>{} {who}</code>: <code>uniq -c</code> histogram, {lines} line(s)</summary><pre>{}</pre></details>",
                    ev.name(),
                    esc(&h)
                );
            }
        }
    }
}
