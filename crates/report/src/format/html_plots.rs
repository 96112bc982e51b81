//! The HTML report's per-run plots: latency and stall distributions, and
//! reclaim velocity over time.
//!
//! Distributions are CCDFs (the fraction of samples at or above x) on a log
//! y axis, the tail-emphasising view: the 1 % of samples above Max-99 sit a
//! decade above the bottom rather than squashed into the top edge of a CDF.
//! Latency also has a log x axis (outliers span orders of magnitude); stall
//! delays keep a linear one, since many stalls are 0 µs. Every latency plot
//! shares its axes with the others, so steps compare at a glance; velocity
//! plots have one line per run and a plot per counter, so that kswapd's
//! rates are not drawn against a direct-scan spike of another scale.

use std::fmt::Write as _;

use super::html::esc_fit;
use super::plot::{bounds, figure, run_color, Axis, Line, Style};
use crate::model::Report;
use crate::stalls::{delay_distribution, StallEvent};

/// More runs than this and the per-run plots are left out (a sweep has its
/// own plots).
pub(crate) const MAX_PLOTTED_RUNS: usize = 12;

/// A run's legend label: its name, or `#i` and the name's end, with the
/// whole name on hover, when the name is long (sweep labels run to 200
/// characters).
pub(crate) fn short_name(report: &Report, i: usize) -> (String, Option<String>) {
    let name = &report.runs[i].name;
    if name.chars().count() <= 48 {
        (name.clone(), None)
    } else {
        // The end of a sweep label is what tells its runs apart.
        let c: Vec<char> = name.chars().collect();
        let tail: String = c[c.len() - 40..].iter().collect();
        (format!("#{} …{tail}", i + 1), Some(name.clone()))
    }
}

/// Whether per-run plots are drawn; a note when not.
pub(crate) fn too_many_runs(report: &Report, out: &mut String) -> bool {
    if report.runs.len() > MAX_PLOTTED_RUNS {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} runs: per-run plots are drawn for at most {MAX_PLOTTED_RUNS}; the sweep plots and the tables have them all.</p>",
            report.runs.len()
        );
        return true;
    }
    false
}

/// Latency CCDFs, one plot per operation, a line per run, shared axes.
pub(crate) fn latency_plots(report: &Report, out: &mut String) {
    if too_many_runs(report, out) {
        return;
    }
    let mut labels: Vec<&str> = Vec::new();
    for r in &report.runs {
        for (l, _) in &r.plots.latency_ccdf {
            if !labels.contains(&l.as_str()) {
                labels.push(l);
            }
        }
    }
    if labels.is_empty() {
        out.push_str("<p class=\"note\">No latency samples.</p>\n");
        return;
    }
    let plots: Vec<(&str, Vec<Line>)> = labels
        .iter()
        .map(|&label| {
            let lines = report
                .runs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let (_, pts) = r.plots.latency_ccdf.iter().find(|(k, _)| k == label)?;
                    let (name, full) = short_name(report, i);
                    Some(Line {
                        name,
                        full,
                        color: run_color(i),
                        style: Style::Solid,
                        points: pts.iter().filter(|p| p.0 > 0.0).copied().collect(),
                    })
                })
                .collect();
            (label, lines)
        })
        .collect();
    let all: Vec<&Line> = plots.iter().flat_map(|(_, l)| l.iter()).collect();
    let (xmin, xmax, ymin) = all
        .iter()
        .flat_map(|l| l.points.iter())
        .fold((f64::MAX, 0.0f64, 1.0f64), |(a, b, c), p| {
            (a.min(p.0), b.max(p.0), c.min(p.1))
        });
    let x = Axis {
        desc: "latency, ms (log)".into(),
        range: (xmin * 0.9, xmax * 1.1),
        log: true,
    };
    let y = Axis {
        desc: "fraction of samples ≥ x (log)".into(),
        range: (ymin * 0.5, 1.05),
        log: true,
    };
    for (label, lines) in &plots {
        out.push_str(&figure(
            &format!("{label}: latency tail (CCDF)"),
            &x,
            &y,
            lines,
        ));
    }
}

/// Reclaim velocity: a plot per counter (kswapd scan, direct scan, kswapd
/// steal, direct steal, and the memcg counters where a run has them), a
/// line per run, each interval's mean rate drawn flat, merged to at most
/// [`MAX_BINS`] intervals.
pub(crate) fn velocity_plots(report: &Report, out: &mut String) {
    if too_many_runs(report, out) {
        return;
    }
    type Get = fn(&crate::input::VmstatPoint) -> i64;
    let mut series: Vec<(&str, Get)> = vec![
        ("kswapd scan", |p| p.kswapd_scan),
        ("direct scan", |p| p.direct_scan),
        ("kswapd steal", |p| p.kswapd_steal),
        ("direct steal", |p| p.direct_steal),
    ];
    if report.runs.iter().any(|r| r.ops.memcg.is_some()) {
        series.push(("anon+file scan (memcg)", |p| p.lru_scan));
        series.push(("anon+file steal (memcg)", |p| p.lru_steal));
    }
    for r in report.runs.iter().filter(|r| r.plots.vmstat.len() < 2) {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}: fewer than two vmstat samples, no velocity.</p>",
            esc_fit(&r.name)
        );
    }
    for (what, get) in series {
        let lines: Vec<Line> = report
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.plots.vmstat.len() >= 2)
            .map(|(i, r)| {
                let (name, full) = short_name(report, i);
                Line {
                    name,
                    full,
                    color: run_color(i),
                    style: Style::Solid,
                    points: rates(&r.plots.vmstat, get),
                }
            })
            .collect();
        let Some((xmin, xmax, _, ymax)) = bounds(&lines) else {
            continue;
        };
        if ymax <= 0.0 {
            let _ = writeln!(out, "<p class=\"note\">{what}: 0 pages/s in every run.</p>");
            continue;
        }
        out.push_str(&figure(
            &format!("{what} velocity"),
            &Axis {
                desc: "time, s".into(),
                range: (xmin, xmax),
                log: false,
            },
            &Axis {
                desc: "pages/s".into(),
                range: (0.0, ymax * 1.05),
                log: false,
            },
            &lines,
        ));
    }
}

/// Intervals a velocity line is merged to, at most.
const MAX_BINS: usize = 240;

/// Mean rate per interval, as flat segments, with neighbouring intervals
/// merged so that a line has at most [`MAX_BINS`] of them.
fn rates(
    v: &[crate::input::VmstatPoint],
    get: fn(&crate::input::VmstatPoint) -> i64,
) -> Vec<(f64, f64)> {
    let step = (v.len() - 1).div_ceil(MAX_BINS).max(1);
    let idx: Vec<usize> = (0..v.len()).step_by(step).chain([v.len() - 1]).collect();
    idx.windows(2)
        .filter(|w| w[1] > w[0] && v[w[1]].t_s > v[w[0]].t_s)
        .flat_map(|w| {
            let (a, b) = (&v[w[0]], &v[w[1]]);
            let rate = ((get(b) - get(a)) as f64 / (b.t_s - a.t_s)).max(0.0);
            [(a.t_s, rate), (b.t_s, rate)]
        })
        .collect()
}

/// Stall delay CCDFs per (event, reason): a line per run and who (kswapd
/// dashed, direct solid), the run's colour.
pub(crate) fn stall_plots(report: &Report, out: &mut String) {
    if too_many_runs(report, out) {
        return;
    }
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in &report.runs {
        for s in &r.stall_summary {
            let k = (s.event.clone(), s.reason.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.sort_by_key(|(e, r)| {
        (
            StallEvent::ALL.iter().position(|x| x.name() == e),
            r.clone(),
        )
    });
    if keys.is_empty() {
        out.push_str("<p class=\"note\">No stall events in any trace.</p>\n");
        return;
    }
    for (event, reason) in &keys {
        let mut lines = Vec::new();
        for (i, r) in report.runs.iter().enumerate() {
            for who in ["kswapd", "direct"] {
                let d = delay_distribution(&r.stalls, event, reason, Some(who));
                let n: u64 = d.values().sum();
                if n == 0 {
                    continue;
                }
                // P(delay ≥ x): all at the smallest delay, 1/n at the largest.
                let mut above = n;
                let pts: Vec<(f64, f64)> = d
                    .iter()
                    .map(|(&us, &c)| {
                        let p = (us as f64 / 1000.0, above as f64 / n as f64);
                        above -= c;
                        p
                    })
                    .collect();
                let (name, full) = short_name(report, i);
                lines.push(Line {
                    name: format!("{name} {who} (n={n})"),
                    full: full.map(|f| format!("{f} {who}")),
                    color: run_color(i),
                    style: if who == "kswapd" {
                        Style::Dashed
                    } else {
                        Style::Solid
                    },
                    points: stairs_down(&pts),
                });
            }
        }
        let Some((_, xmax, ymin, _)) = bounds(&lines) else {
            continue;
        };
        let title = if reason.is_empty() {
            format!("{event}: delay tail (CCDF)")
        } else {
            format!("{event} {reason}: delay tail (CCDF)")
        };
        out.push_str(&figure(
            &title,
            &Axis {
                desc: "delay, ms".into(),
                range: (0.0, if xmax > 0.0 { xmax * 1.05 } else { 1.0 }),
                log: false,
            },
            &Axis {
                desc: "fraction of stalls ≥ x (log)".into(),
                // At least a decade, so that the axis has a tick below 1.
                range: ((ymin * 0.5).min(0.05), 1.05),
                log: true,
            },
            &lines,
        ));
    }
}

/// A CCDF as stairs: flat at each level up to the next value, then down.
fn stairs_down(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, points[i - 1].1));
        }
        out.push((x, y));
    }
    out
}
