//! One self-contained HTML page: tables and inline SVG plots, no external requests.
//!
//! Plots are drawn with `plotters`' SVG backend built without font features
//! (its "naive" text layout; the browser renders `<text>` with its own fonts),
//! so the crate builds on machines without fontconfig. The page has inline CSS
//! only. Plots: latency CDF per operation (one line per run), kswapd vs direct
//! scan and steal velocity over time per run (from `vmstat.csv`), and stall
//! delay CDFs per (event, reason) (one line per run and who); mmtests' ftrace
//! stall monitor tables follow the stall tables (`format/ftrace.rs`). The output is
//! deterministic: same report, same bytes.

use std::fmt::Write as _;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use crate::format::text::render_text;
use crate::model::Report;
use crate::stalls::{delay_distribution, uniq_c_histogram, StallEvent};

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

pub(super) struct Line {
    pub(super) name: String,
    pub(super) points: Vec<(f64, f64)>,
}

pub(super) fn draw_lines<X>(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x: X,
    y: std::ops::Range<f64>,
    lines: &[Line],
) -> String
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let mut svg = String::new();
    let res = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
        let root = SVGBackend::with_string(&mut svg, (720, 380)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        for (i, l) in lines.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(l.points.iter().copied(), c.stroke_width(2)))?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
        root.present()?;
        Ok(())
    })();
    match res {
        Ok(()) => svg,
        Err(e) => format!(
            "<p class=\"note\">plot {} could not be drawn: {}</p>",
            esc(title),
            esc(&e.to_string())
        ),
    }
}

pub(super) fn bounds(lines: &[Line]) -> Option<(f64, f64, f64, f64)> {
    let mut it = lines
        .iter()
        .flat_map(|l| l.points.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let first = it.next()?;
    let mut b = (first.0, first.0, first.1, first.1);
    for p in it {
        b.0 = b.0.min(p.0);
        b.1 = b.1.max(p.0);
        b.2 = b.2.min(p.1);
        b.3 = b.3.max(p.1);
    }
    Some(b)
}

/// Step CDF as a polyline: horizontal then vertical segments.
fn stairs(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2 + 1);
    let mut prev_y = 0.0;
    for &(x, y) in points {
        out.push((x, prev_y));
        out.push((x, y));
        prev_y = y;
    }
    out
}

fn latency_plots(report: &Report, out: &mut String) {
    let mut labels: Vec<String> = Vec::new();
    for r in &report.runs {
        for (l, _) in &r.plots.latency_cdf {
            if !labels.contains(l) {
                labels.push(l.clone());
            }
        }
    }
    if labels.is_empty() {
        out.push_str("<p class=\"note\">No latency samples.</p>\n");
        return;
    }
    for l in &labels {
        let lines: Vec<Line> = report
            .runs
            .iter()
            .filter_map(|r| {
                let pts = r.plots.latency_cdf.iter().find(|(k, _)| k == l)?;
                Some(Line {
                    name: r.name.clone(),
                    points: stairs(&pts.1),
                })
            })
            .collect();
        let Some((xmin, xmax, _, _)) = bounds(&lines) else {
            continue;
        };
        // Log x axis: latency outliers span orders of magnitude.
        let lo = if xmin > 0.0 {
            xmin
        } else {
            (xmax * 1e-4).max(1e-6)
        };
        let hi = if xmax > lo { xmax * 1.05 } else { lo * 10.0 };
        let lines: Vec<Line> = lines
            .into_iter()
            .map(|mut ln| {
                for p in &mut ln.points {
                    p.0 = p.0.max(lo);
                }
                ln
            })
            .collect();
        out.push_str(&draw_lines(
            &format!("{l}: latency distribution (CDF)"),
            "latency, ms (log)",
            "fraction of samples <= x",
            (lo..hi).log_scale(),
            0.0..1.0,
            &lines,
        ));
        out.push('\n');
    }
}

fn velocity_plots(report: &Report, out: &mut String) {
    for r in &report.runs {
        let v = &r.plots.vmstat;
        if v.len() < 2 {
            let _ = writeln!(
                out,
                "<p class=\"note\">{}: fewer than two vmstat samples, no velocity plot.</p>",
                esc(&r.name)
            );
            continue;
        }
        type Get = fn(&crate::input::VmstatPoint) -> i64;
        let mut series: Vec<(&str, Get)> = vec![
            ("kswapd scan", |p| p.kswapd_scan),
            ("direct scan", |p| p.direct_scan),
            ("kswapd steal", |p| p.kswapd_steal),
            ("direct steal", |p| p.direct_steal),
        ];
        if r.ops.memcg.is_some() {
            series.push(("anon+file scan (memcg)", |p| p.lru_scan));
            series.push(("anon+file steal (memcg)", |p| p.lru_steal));
        }
        let lines: Vec<Line> = series
            .iter()
            .map(|(name, get)| Line {
                name: name.to_string(),
                // Each interval's mean rate, drawn flat over the interval.
                points: v
                    .windows(2)
                    .filter(|w| w[1].t_s > w[0].t_s)
                    .flat_map(|w| {
                        let d = (get(&w[1]) - get(&w[0])) as f64;
                        let rate = (d / (w[1].t_s - w[0].t_s)).max(0.0);
                        [(w[0].t_s, rate), (w[1].t_s, rate)]
                    })
                    .collect(),
            })
            .collect();
        let Some((xmin, xmax, _, ymax)) = bounds(&lines) else {
            continue;
        };
        let xmax = if xmax > xmin { xmax } else { xmin + 1.0 };
        let ymax = if ymax > 0.0 { ymax * 1.05 } else { 1.0 };
        out.push_str(&draw_lines(
            &format!("{}: reclaim velocity", r.name),
            "time, s",
            "pages/s",
            xmin..xmax,
            0.0..ymax,
            &lines,
        ));
        out.push('\n');
    }
}

fn stall_plots(report: &Report, out: &mut String) {
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
        for r in &report.runs {
            for who in ["kswapd", "direct"] {
                let d = delay_distribution(&r.stalls, event, reason, Some(who));
                let n: u64 = d.values().sum();
                if n == 0 {
                    continue;
                }
                let mut acc = 0;
                let pts: Vec<(f64, f64)> = d
                    .iter()
                    .map(|(&us, &c)| {
                        acc += c;
                        (us as f64 / 1000.0, acc as f64 / n as f64)
                    })
                    .collect();
                lines.push(Line {
                    name: format!("{} {who} (n={n})", r.name),
                    points: stairs(&pts),
                });
            }
        }
        let Some((_, xmax, _, _)) = bounds(&lines) else {
            continue;
        };
        let xmax = if xmax > 0.0 { xmax * 1.05 } else { 1.0 };
        let title = if reason.is_empty() {
            format!("{event}: delay distribution (CDF)")
        } else {
            format!("{event} {reason}: delay distribution (CDF)")
        };
        out.push_str(&draw_lines(
            &title,
            "delay, ms",
            "fraction of stalls <= x",
            0.0..xmax,
            0.0..1.0,
            &lines,
        ));
        out.push('\n');
    }
}

fn stall_tables(report: &Report, out: &mut String) {
    for r in &report.runs {
        let _ = writeln!(out, "<h3>{}</h3>", esc(&r.name));
        if !r.trace.present {
            let _ = writeln!(
                out,
                "<p class=\"note\">No trace: {}</p>",
                esc(r
                    .trace
                    .note
                    .as_deref()
                    .unwrap_or("the record has no trace.txt.gz"))
            );
            continue;
        }
        if r.stall_summary.is_empty() {
            out.push_str("<p class=\"note\">No stall events.</p>\n");
            continue;
        }
        out.push_str("<table><tr><th>event</th><th>who</th><th>reason</th><th>count</th><th>not delayed %</th><th>hit timeout %</th><th>mean delay µs</th><th>p99 delay µs</th><th>max delay µs</th></tr>\n");
        for s in &r.stall_summary {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.event),
                esc(&s.who),
                esc(&s.reason),
                s.count,
                s.not_delayed_pct,
                s.hit_timeout_pct,
                s.mean_delay_us,
                s.p99_delay_us,
                s.max_delay_us
            );
        }
        out.push_str("</table>\n");
        let mut pre = String::new();
        for ev in StallEvent::ALL {
            for who in ["kswapd", "direct"] {
                let h = uniq_c_histogram(&r.stalls, ev.name(), who);
                if !h.is_empty() {
                    let _ = writeln!(pre, "{} {who}", ev.name());
                    pre.push_str(&h);
                }
            }
        }
        let _ = writeln!(
            out,
            "<details><summary>uniq -c histograms</summary><pre>{}</pre></details>",
            esc(&pre)
        );
    }
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;max-width:1200px;color:#222}\
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
pre{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12px;background:#f7f7f7;padding:1em;overflow-x:auto}\
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}\
th{background:#f0f0f0}td:nth-child(-n+3){text-align:left}.note{color:#8a4b00}\
table.cmp td{text-align:right}table.cmp td:first-child{text-align:left}\
.plots svg{max-width:100%;height:auto;margin:.5em 0;border:1px solid #eee}";

/// Renders the report as one self-contained HTML page.
pub fn render_html(report: &Report) -> Vec<u8> {
    render_html_with(report, &[])
}

/// The page with further sections (self-contained HTML fragments such as
/// [`super::fidelity_html::fidelity_section`]) after its own, and their CSS.
pub fn render_html_with(report: &Report, sections: &[String]) -> Vec<u8> {
    let mut out = String::new();
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    // A sweep's hundreds of names do not make a title.
    let title = match names.as_slice() {
        [first, .., last] if names.len() > super::runs::MANY_RUNS => {
            format!("reclaimlab report: {} runs, {first} … {last}", names.len())
        }
        _ => format!("reclaimlab report: {}", names.join(" vs ")),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}{}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        if sections.is_empty() {
            ""
        } else {
            super::fidelity_html::FIDELITY_CSS
        },
        esc(&title)
    );
    out.push_str("<table><tr><th>run</th><th>origin</th><th>kernel</th><th>workload</th><th>reclaim scope</th><th>record</th></tr>\n");
    for r in &report.runs {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.name),
            esc(&r.origin),
            esc(&r.kernel),
            esc(&r.workload),
            esc(&r.reclaim_scope),
            esc(&r.record)
        );
    }
    out.push_str("</table>\n");
    for n in &report.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    let _ = writeln!(
        out,
        "<h2>Comparison (mmtests compare format)</h2>\n<pre>{}</pre>",
        esc(&render_text(report))
    );
    super::sweep::sweep_plots(report, &mut out);
    out.push_str("<h2>Latency distributions</h2>\n<div class=\"plots\">\n");
    latency_plots(report, &mut out);
    out.push_str("</div>\n<h2>Reclaim velocity: kswapd vs direct</h2>\n<div class=\"plots\">\n");
    velocity_plots(report, &mut out);
    out.push_str("</div>\n<h2>Stalls</h2>\n<div class=\"plots\">\n");
    stall_plots(report, &mut out);
    out.push_str("</div>\n");
    stall_tables(report, &mut out);
    super::ftrace::ftrace_html(&mut out, report);
    for section in sections {
        out.push_str(section);
    }
    out.push_str("</body></html>\n");
    out.into_bytes()
}
