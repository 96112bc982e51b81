//! The HTML report's sweep plots: headline figures against a swept number.
//!
//! A sweep (`sim --sweep NAME=V1,V2,…`) asks how a figure moves with a
//! parameter; the tables answer it a column or a row at a time, a plot at a
//! glance. The x axis is the first setting that differs between the runs,
//! takes at least three numeric values and is not the seed or the machine
//! (`Report::differences`); each line is one combination of the other
//! differing settings (the kernel, a second swept setting), its points in x
//! order. Without such a setting there is nothing to plot.
//!
//! Labels are short: a line is named only by the settings that tell the
//! lines apart (a kernel's eight `policy.*` values follow from its name, so
//! `v5.16`, not `v5.16,policy.direct_congested=…`), with the whole set of
//! values on hover. Points carry markers; ticks are SI (`10 k`).

use super::plot::{bounds, figure, run_color, Axis, Line, Style};
use crate::model::{Report, RunReport};

/// Distinct x values below which a sweep is not plotted.
const MIN_POINTS: usize = 3;

/// One plotted figure: title, y-axis label, and its value in a run.
type Figure<'a> = (
    String,
    &'static str,
    Box<dyn Fn(&RunReport) -> Option<f64> + 'a>,
);

/// Appends the sweep plots (a heading and one plot per figure), if the runs
/// are a numeric sweep; returns whether they were.
pub(crate) fn sweep_plots(report: &Report, out: &mut String) -> bool {
    let Some(xi) = report.differences.iter().position(|d| {
        let numeric: Option<Vec<f64>> = d.values.iter().map(|v| v.parse().ok()).collect();
        let mut distinct = numeric.unwrap_or_default();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        !matches!(d.name.as_str(), "seed" | "machine") && distinct.len() >= MIN_POINTS
    }) else {
        return false;
    };
    let x = &report.differences[xi];
    let xs_of: Vec<Option<f64>> = x.values.iter().map(|v| v.parse().ok()).collect();
    // The settings that name a line: greedily, the kernel first, each one
    // that splits the runs into more lines than those already taken, and
    // none that only follows x (a second name for the swept value).
    let n = report.runs.len();
    let mut naming: Vec<usize> = Vec::new();
    let mut order: Vec<usize> = (0..report.differences.len()).filter(|&i| i != xi).collect();
    order.sort_by_key(|&i| report.differences[i].name != "kernel");
    let groups = |set: &[usize]| -> usize {
        let mut keys: Vec<Vec<&str>> = (0..n)
            .map(|r| {
                set.iter()
                    .map(|&d| report.differences[d].values[r].as_str())
                    .collect()
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys.len()
    };
    for d in order {
        let follows_x = (0..n).all(|a| {
            (0..n).all(|b| {
                xs_of[a] != xs_of[b]
                    || report.differences[d].values[a] == report.differences[d].values[b]
            })
        });
        if follows_x {
            continue;
        }
        let mut with = naming.clone();
        with.push(d);
        if groups(&with) > groups(&naming) {
            naming.push(d);
        }
    }
    let part = |d: usize, run: usize| {
        let diff = &report.differences[d];
        if diff.name == "kernel" {
            diff.values[run].clone()
        } else {
            format!("{}={}", diff.name, diff.values[run])
        }
    };
    let label = |run: usize| -> String {
        let parts: Vec<String> = naming.iter().map(|&d| part(d, run)).collect();
        if parts.is_empty() {
            "runs".to_string()
        } else {
            parts.join(", ")
        }
    };
    let full_label = |run: usize| -> String {
        let parts: Vec<String> = (0..report.differences.len())
            .filter(|&d| d != xi)
            .map(|d| part(d, run))
            .collect();
        parts.join(", ")
    };
    let mut figures: Vec<Figure> = Vec::new();
    if let Some(op) = report.comparable.compared.last() {
        figures.push((
            format!("Amean {op}"),
            "latency, ms",
            Box::new(move |r: &RunReport| r.latency.get(op).map(|l| l.amean)),
        ));
        figures.push((
            format!("Max-99 {op}"),
            "latency, ms",
            Box::new(move |r: &RunReport| r.latency.get(op).map(|l| l.max99)),
        ));
    }
    figures.push((
        "Direct pages scanned".into(),
        "pages",
        Box::new(|r: &RunReport| Some(r.ops.direct_pages_scanned as f64)),
    ));
    figures.push((
        "Page reclaim immediate".into(),
        "pages",
        Box::new(|r: &RunReport| Some(r.ops.page_reclaim_immediate as f64)),
    ));
    figures.push((
        "Duration System".into(),
        "seconds",
        Box::new(|r: &RunReport| Some(r.duration.system_s)),
    ));
    figures.push((
        "Seconds slept in traced stalls".into(),
        "seconds",
        Box::new(|r: &RunReport| r.stalled_s()),
    ));
    // A log x axis when the values span two decades or more (timeouts
    // from 1 ms to 500 ms), as long as all are positive.
    let xs: Vec<f64> = xs_of.iter().flatten().copied().collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let log_x = xmin > 0.0 && xmax / xmin >= 100.0;
    out.push_str(&format!(
        "<h3 id=\"sweep-plots\">Figures against {}</h3>\n<div class=\"plots\">\n",
        super::html::esc_fit(&x.name)
    ));
    for (title, y_desc, value) in &figures {
        let mut lines: Vec<Line> = Vec::new();
        for (i, r) in report.runs.iter().enumerate() {
            let (Some(xv), Some(yv)) = (xs_of[i], value(r)) else {
                continue;
            };
            let name = label(i);
            match lines.iter_mut().find(|l| l.name == name) {
                Some(l) => l.points.push((xv, yv)),
                None => {
                    let full = full_label(i);
                    lines.push(Line {
                        full: (full != name).then_some(full),
                        name,
                        color: run_color(lines.len()),
                        style: Style::Markers,
                        points: vec![(xv, yv)],
                    })
                }
            }
        }
        for l in &mut lines {
            l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let Some((_, _, ymin, ymax)) = bounds(&lines) else {
            continue;
        };
        let y = Axis {
            desc: y_desc.to_string(),
            range: (ymin.min(0.0), ymax.abs().max(1e-9) * 1.05),
            log: false,
        };
        let x_axis = if log_x {
            Axis {
                desc: format!("{} (log)", x.name),
                range: (xmin / 1.2, xmax * 1.2),
                log: true,
            }
        } else {
            let pad = ((xmax - xmin) * 0.03).max(1e-9);
            Axis {
                desc: x.name.clone(),
                range: (xmin - pad, xmax + pad),
                log: false,
            }
        };
        out.push_str(&figure(
            &format!("{title} against {}", x.name),
            &x_axis,
            &y,
            &lines,
        ));
    }
    out.push_str("</div>\n");
    true
}
