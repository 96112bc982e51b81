//! The HTML report's sweep plots: headline figures against a swept number.
//!
//! A sweep (`sim --sweep NAME=V1,V2,…`) asks how a figure moves with a
//! parameter; the tables answer it a column or a row at a time, a plot at a
//! glance. The x axis is the first setting that differs between the runs,
//! takes at least three numeric values and is not the seed or the machine
//! (`Report::differences`); each line is one combination of the other
//! differing settings (the kernel, a second swept setting), its points in x
//! order. Without such a setting there is nothing to plot.

use plotters::prelude::IntoLogRange;

use super::html::{bounds, draw_lines, Line};
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
    // A line per combination of the other differing settings.
    let label = |run: usize| -> String {
        let parts: Vec<String> = report
            .differences
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != xi)
            .map(|(_, d)| {
                if d.name == "kernel" {
                    d.values[run].clone()
                } else {
                    format!("{}={}", d.name, d.values[run])
                }
            })
            .collect();
        if parts.is_empty() {
            "runs".to_string()
        } else {
            parts.join(",")
        }
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
    let xs: Vec<f64> = x.values.iter().filter_map(|v| v.parse().ok()).collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let log_x = xmin > 0.0 && xmax / xmin >= 100.0;
    out.push_str(&format!(
        "<h2>Sweep: figures against {}</h2>\n<div class=\"plots\">\n",
        super::html::esc(&x.name)
    ));
    for (title, y_desc, value) in &figures {
        let mut lines: Vec<Line> = Vec::new();
        for (i, r) in report.runs.iter().enumerate() {
            let (Some(xv), Some(yv)) = (x.values[i].parse::<f64>().ok(), value(r)) else {
                continue;
            };
            let name = label(i);
            match lines.iter_mut().find(|l| l.name == name) {
                Some(l) => l.points.push((xv, yv)),
                None => lines.push(Line {
                    name,
                    points: vec![(xv, yv)],
                }),
            }
        }
        for l in &mut lines {
            l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let Some((_, _, ymin, ymax)) = bounds(&lines) else {
            continue;
        };
        let y = if ymax > ymin {
            ymin.min(0.0)..ymax * 1.05
        } else {
            ymin.min(0.0)..ymax.abs().max(1.0) * 1.05
        };
        let title = format!("{title} against {}", x.name);
        let svg = if log_x {
            draw_lines(
                &title,
                &format!("{} (log)", x.name),
                y_desc,
                (xmin..xmax).log_scale(),
                y,
                &lines,
            )
        } else {
            let pad = ((xmax - xmin) * 0.02).max(1e-9);
            draw_lines(
                &title,
                &x.name,
                y_desc,
                (xmin - pad)..(xmax + pad),
                y,
                &lines,
            )
        };
        out.push_str(&svg);
        out.push('\n');
    }
    out.push_str("</div>\n");
    true
}
