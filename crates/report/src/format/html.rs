//! One self-contained HTML page, for a kernel developer to read first: no
//! external requests, no JavaScript, inline CSS and SVG only.
//!
//! The page is a list of [`Section`]s, rendered in the order
//! [`sections`] gives, each with an anchor in the table of contents:
//!
//! 1. **What was run**: the command (where known), workload and its
//!    settings, machine with its size and devices, kernels, seeds, the
//!    reclaimlab version, and a key of the runs with their colours;
//! 2. **Summary**: the headline figures, a column per run with the % against
//!    the baseline, and the Amean differences that are significant;
//! 3. **Sweep** plots (figures against a swept number), when the runs are a
//!    sweep (`format/sweep.rs`);
//! 4. **Latency**, **reclaim velocity** and **stall** plots
//!    (`format/html_plots.rs`, drawn by `format/plot.rs`);
//! 5. the **mmtests tables** as HTML tables (`format/html_tables.rs`), the
//!    stall tables with their `uniq -c` histograms folded, and mmtests'
//!    ftrace stall monitors (`format/ftrace.rs`);
//! 6. the text report itself, folded, to paste into a mail.
//!
//! A new kind of section (the fidelity comparison, say) is a function that
//! returns a [`Section`], pushed in [`sections`] where it belongs. The output
//! is deterministic: same report, same bytes.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::html_plots::{latency_plots, stall_plots, velocity_plots};
use super::html_tables::{differences_table, figures_tables, latency_table, stall_tables};
use super::plot::{hex, run_color, si};
use crate::format::text::{fit, fit_to, render_text, too_few_samples_note, MAX_CELL};
use crate::model::{Report, RunReport, Significance};

/// `s` escaped and cut to a table cell's [`MAX_CELL`] characters, as the text
/// report cuts it; a cut value keeps its whole text on hover (`title`), so a
/// 70,000-character run name neither stretches a table off the page nor is
/// lost (issue 22).
pub(crate) fn esc_fit(s: &str) -> String {
    match fit(s) {
        std::borrow::Cow::Borrowed(s) => esc(s),
        std::borrow::Cow::Owned(cut) => {
            format!("<span title=\"{}\">{}</span>", esc(s), esc(&cut))
        }
    }
}

pub(crate) fn esc(s: &str) -> String {
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

/// A section of the page: its anchor, its heading (`<h2>`) and its HTML.
pub struct Section {
    /// The anchor (`id`), unique in the page.
    pub id: String,
    /// The heading, also the table of contents' entry.
    pub title: String,
    /// The HTML under the heading.
    pub body: String,
}

impl Section {
    fn new(id: &str, title: &str, fill: impl FnOnce(&mut String)) -> Self {
        let mut body = String::new();
        fill(&mut body);
        Section {
            id: id.into(),
            title: title.into(),
            body,
        }
    }
}

/// The page's sections, in order. Add a section by pushing it here.
pub fn sections(report: &Report) -> Vec<Section> {
    let mut s = vec![
        Section::new("run", "What was run", |o| what_was_run(report, o)),
        Section::new("summary", "Summary", |o| summary(report, o)),
    ];
    let mut sweep = String::new();
    if super::sweep::sweep_plots(report, &mut sweep) {
        s.push(Section {
            id: "sweep".into(),
            title: "Sweep".into(),
            body: sweep,
        });
    }
    s.push(Section::new("latency", "Latency distributions", |o| {
        plots(o, "Each line is a run: the fraction of its samples at or above x, both axes logarithmic, so the tail (Max-99, Max) is at the bottom right. All latency plots share their axes.", |o| latency_plots(report, o))
    }));
    s.push(Section::new("velocity", "Reclaim velocity", |o| {
        plots(o, "Pages per second over time, a plot per counter, a line per run (each interval's mean rate).", |o| velocity_plots(report, o))
    }));
    s.push(Section::new("stalls", "Stall distributions", |o| {
        plots(o, "Per event and reason: the fraction of stalls that slept at least x, on a log axis; kswapd dashed, direct reclaim solid.", |o| stall_plots(report, o))
    }));
    // Sections of other modules (the fidelity comparison of a real run
    // against a simulated one, say) go here, before the tables.
    s.push(Section::new("tables", "mmtests tables", |o| {
        o.push_str("<h3 id=\"tables-latency\">Latency (ms)</h3>\n<p class=\"note\">% against the first run, positive = better (lower); <b>*…*</b> marks a significant Amean difference.</p>\n");
        latency_table(report, o);
        o.push_str("<h3 id=\"tables-figures\">Duration, CPU and Ops</h3>\n");
        figures_tables(report, o);
        o.push_str("<h3 id=\"tables-setup\">Set up differently</h3>\n");
        differences_table(report, o);
    }));
    let mut oom = String::new();
    if super::oom::oom_html(&mut oom, report) {
        s.push(Section {
            id: "oom".into(),
            title: "OOM kills".into(),
            body: oom,
        });
    }
    s.push(Section::new("stall-tables", "Stall tables", |o| {
        stall_tables(report, o);
        super::ftrace::ftrace_html(o, report);
    }));
    s.push(Section::new("text", "The text report", |o| {
        let _ = writeln!(
            o,
            "<details><summary>As <code>reclaimlab report</code> prints it (mmtests' compare format), to paste into a mail</summary><pre>{}</pre></details>",
            esc(&render_text(report))
        );
    }));
    s
}

fn plots(out: &mut String, note: &str, draw: impl FnOnce(&mut String)) {
    let _ = writeln!(out, "<p class=\"note\">{note}</p>\n<div class=\"plots\">");
    draw(out);
    out.push_str("</div>\n");
}

/// The distinct values of a field over the runs, in run order.
fn distinct<'a>(report: &'a Report, f: impl Fn(&'a RunReport) -> &'a str) -> Vec<&'a str> {
    let mut seen = BTreeSet::new();
    report
        .runs
        .iter()
        .map(f)
        .filter(|v| seen.insert(*v))
        .collect()
}

fn what_was_run(report: &Report, out: &mut String) {
    out.push_str("<dl class=\"about\">\n");
    let mut row = |k: &str, v: String| {
        let _ = writeln!(out, "<dt>{k}</dt><dd>{v}</dd>");
    };
    if let Some(c) = &report.command {
        row("command", format!("<code>{}</code>", esc(c)));
    }
    let list = |v: Vec<&str>| v.iter().map(|s| esc(s)).collect::<Vec<_>>().join("; ");
    let workloads: Vec<String> = report
        .runs
        .iter()
        .map(|r| {
            if r.about.workload_spec.is_empty() || r.about.workload_spec == r.workload {
                r.workload.clone()
            } else {
                format!("{} ({})", r.workload, r.about.workload_spec)
            }
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    row("workload", esc(&workloads.join("; ")));
    // The workload's own settings, where every run has the same value.
    if let Some(first) = report.runs.first() {
        let common: Vec<String> = first
            .about
            .workload_settings
            .iter()
            .filter(|kv| {
                report
                    .runs
                    .iter()
                    .all(|r| r.about.workload_settings.contains(kv))
            })
            .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
            .collect();
        if !common.is_empty() {
            row("workload settings", common.join(" "));
        }
    }
    row(
        "machine",
        list(distinct(report, |r| r.about.machine.as_str())),
    );
    row("kernels", list(distinct(report, |r| r.kernel.as_str())));
    row("seeds", list(distinct(report, |r| r.about.seed.as_str())));
    row("origin", list(distinct(report, |r| r.origin.as_str())));
    row(
        "reclaimlab",
        list(distinct(report, |r| r.about.tool_version.as_str())),
    );
    let rule = match report.significance {
        Significance::Ttest => "two-sample t-test, p &lt; 0.10 (mmtests 2018–2024)",
        Significance::Ci => "mean ± 1.96·stddev intervals, |cidiff| &gt; 1 (mmtests 2024–)",
    };
    row("significance", rule.to_string());
    out.push_str("</dl>\n");
    for n in &report.notes {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            esc(&fit_to(n, 5 * MAX_CELL))
        );
    }
    let _ = writeln!(
        out,
        "<table class=\"left\"><tr><th>colour</th><th>run</th><th>origin</th><th>kernel</th><th>reclaim scope</th><th>record</th></tr>"
    );
    for (i, r) in report.runs.iter().enumerate() {
        let base = if i == 0 { " (baseline)" } else { "" };
        let _ = writeln!(
            out,
            "<tr><td><i class=\"sw\" style=\"border-color:{c};background:{c}\"></i></td><td>{}{base}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc_fit(&r.name),
            esc_fit(&r.origin),
            esc_fit(&r.kernel),
            esc_fit(&r.reclaim_scope),
            esc_fit(&r.record),
            c = hex(run_color(i))
        );
    }
    out.push_str("</table>\n");
    if !report.differences.is_empty() {
        out.push_str("<p>What the runs are set up differently in: <a href=\"#tables-setup\">Set up differently</a>.</p>\n");
    }
}

/// A headline figure: its label, its value in a run, and whether lower is
/// better (for the sign of its %).
type Headline<'a> = (String, Box<dyn Fn(&RunReport) -> Option<f64> + 'a>);

fn headlines(report: &Report) -> Vec<Headline<'_>> {
    let mut h: Vec<Headline> = Vec::new();
    if let Some(op) = report.comparable.compared.last() {
        h.push((
            format!("Amean {op} (ms)"),
            Box::new(move |r: &RunReport| r.latency.get(op).map(|l| l.amean)),
        ));
        h.push((
            format!("Max-99 {op} (ms)"),
            Box::new(move |r: &RunReport| r.latency.get(op).map(|l| l.max99)),
        ));
    }
    h.push((
        "Direct pages scanned".into(),
        Box::new(|r: &RunReport| Some(r.ops.direct_pages_scanned as f64)),
    ));
    h.push((
        "Kswapd pages scanned".into(),
        Box::new(|r: &RunReport| Some(r.ops.kswapd_pages_scanned as f64)),
    ));
    h.push((
        "Direct efficiency %".into(),
        Box::new(|r: &RunReport| Some(r.ops.direct_efficiency_pct)),
    ));
    h.push((
        "Page reclaim immediate".into(),
        Box::new(|r: &RunReport| Some(r.ops.page_reclaim_immediate as f64)),
    ));
    h.push((
        "Duration System (s)".into(),
        Box::new(|r: &RunReport| Some(r.duration.system_s)),
    ));
    h.push((
        "Duration User (s)".into(),
        Box::new(|r: &RunReport| Some(r.duration.user_s)),
    ));
    h.push((
        "Seconds slept in traced stalls".into(),
        Box::new(|r: &RunReport| r.stalled_s()),
    ));
    h
}

fn summary(report: &Report, out: &mut String) {
    let h = headlines(report);
    let heaviest = report.comparable.compared.last();
    let cell = |fi: usize, ri: usize| -> String {
        let r = &report.runs[ri];
        let Some(v) = (h[fi].1)(r) else {
            return "<td>–</td>".into();
        };
        let base = (h[fi].1)(&report.runs[0]);
        let sig = fi == 0
            && heaviest
                .and_then(|op| r.latency.get(op))
                .and_then(|l| l.vs_baseline.as_ref())
                .is_some_and(|v| v.significant);
        let pct = match base {
            Some(b) if ri > 0 && b != 0.0 => {
                format!(" <span class=\"pct\">({:+.1}%)</span>", (v - b) * 100.0 / b)
            }
            _ => String::new(),
        };
        let class = if sig { " class=\"sig\"" } else { "" };
        format!(
            "<td{class}>{}{}{pct}</td>",
            si(v),
            if sig { " *" } else { "" }
        )
    };
    out.push_str("<p class=\"note\">% is the change against the baseline (the first run): + means more, whatever is better. * marks a significant Amean difference.</p>\n");
    let many = report.runs.len() > super::runs::MANY_RUNS;
    if many {
        // A row per run, so that a sweep reads down the page.
        out.push_str("<table class=\"cmp\"><tr><th>run</th>");
        for (label, _) in &h {
            let _ = write!(out, "<th>{}</th>", esc_fit(label));
        }
        out.push_str("</tr>\n");
        for ri in 0..report.runs.len() {
            let _ = write!(
                out,
                "<tr><td><i class=\"sw\" style=\"border-color:{c};background:{c}\"></i>{}</td>",
                esc_fit(&report.runs[ri].name),
                c = hex(run_color(ri))
            );
            for fi in 0..h.len() {
                out.push_str(&cell(fi, ri));
            }
            out.push_str("</tr>\n");
        }
    } else {
        out.push_str("<table class=\"cmp\"><tr><th>figure</th>");
        for (ri, r) in report.runs.iter().enumerate() {
            let _ = write!(
                out,
                "<th><i class=\"sw\" style=\"border-color:{c};background:{c}\"></i>{}</th>",
                esc_fit(&r.name),
                c = hex(run_color(ri))
            );
        }
        out.push_str("</tr>\n");
        for (fi, (label, _)) in h.iter().enumerate() {
            let _ = write!(out, "<tr><td>{}</td>", esc_fit(label));
            for ri in 0..report.runs.len() {
                out.push_str(&cell(fi, ri));
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</table>\n");
    // The significant differences, in words.
    let mut sig = Vec::new();
    for op in &report.comparable.compared {
        let Some(b) = report.runs.first().and_then(|r| r.latency.get(op)) else {
            continue;
        };
        for r in report.runs.iter().skip(1) {
            let Some(l) = r.latency.get(op) else { continue };
            let Some(v) = l.vs_baseline.as_ref().filter(|v| v.significant) else {
                continue;
            };
            let how = match (v.p_value, v.cidiff) {
                (Some(p), _) => format!("p = {p:.3}"),
                (_, Some(c)) => format!("cidiff = {c:.2}"),
                _ => "zero spread on both sides".into(),
            };
            let word = if l.amean > b.amean {
                "slower"
            } else {
                "faster"
            };
            sig.push(format!(
                "<li><b>{}</b>: Amean {} {:.1} ms against {:.1} ms, {word} ({:+.2}%, {how}; n = {} and {})</li>",
                esc_fit(&r.name),
                esc_fit(op),
                l.amean,
                b.amean,
                -v.pct.amean,
                l.n,
                b.n
            ));
        }
    }
    if sig.is_empty() {
        out.push_str("<p>No Amean difference against the baseline is significant.</p>\n");
    } else {
        let _ = writeln!(
            out,
            "<p>Significant Amean differences against the baseline ({}):</p>\n<ul>",
            esc(&report.baseline)
        );
        for s in sig.iter().take(40) {
            out.push_str(s);
            out.push('\n');
        }
        if sig.len() > 40 {
            let _ = writeln!(out, "<li>and {} more (see the tables)</li>", sig.len() - 40);
        }
        out.push_str("</ul>\n");
    }
    if let Some(note) = too_few_samples_note(report) {
        let _ = writeln!(
            out,
            "<p class=\"note\">Note: {}.</p>",
            esc(&fit_to(&note, 5 * MAX_CELL))
        );
    }
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222;line-height:1.4}\
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.5em}\
pre,code{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12px}pre{background:#f7f7f7;padding:1em;overflow-x:auto}\
table{border-collapse:collapse;font-size:13px;margin:.5em 0;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right;white-space:nowrap}\
th{background:#f0f0f0}table.left td,table.cmp td:first-child,table.cmp td:nth-child(2),table.left3 td:nth-child(-n+3){text-align:left}\
table.cmp.left td{text-align:left}td.sig{font-weight:bold;color:#a00}.pct{color:#666}tr.few td{color:#8a4b00}\
.note{color:#8a4b00}dl.about{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:bold}dd{margin:0}\
nav.toc ul{columns:2}figure.plot{display:inline-block;margin:.5em;vertical-align:top;max-width:100%}\
figure.plot svg{max-width:100%;height:auto;border:1px solid #eee}figcaption.legend{font-size:12px;max-width:560px}\
figcaption.legend span{margin-right:1em;display:inline-block}\
i.sw{display:inline-block;width:18px;height:0;border-top:3px solid;vertical-align:middle;margin-right:4px}\
i.sw.dashed{border-top-style:dashed}i.sw.dot{height:0}details{margin:.3em 0}summary{cursor:pointer}";

/// Renders the report as one self-contained HTML page.
pub fn render_html(report: &Report) -> Vec<u8> {
    render_html_with(report, &[])
}

/// The page with further sections (self-contained HTML fragments such as
/// [`super::fidelity_html::fidelity_section`]) after its own, and their CSS.
pub fn render_html_with(report: &Report, extra: &[String]) -> Vec<u8> {
    let mut out = String::new();
    let names: Vec<&str> = report.runs.iter().map(|r| r.name.as_str()).collect();
    // A sweep's hundreds of names do not make a title.
    let title = match names.as_slice() {
        [first, .., last] if names.len() > super::runs::MANY_RUNS => {
            format!("reclaimlab report: {} runs, {first} … {last}", names.len())
        }
        _ => format!("reclaimlab report: {}", names.join(" vs ")),
    };
    let title = fit_to(&title, 2 * MAX_CELL);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{CSS}{}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        if extra.is_empty() {
            ""
        } else {
            super::fidelity_html::FIDELITY_CSS
        },
        esc(&title)
    );
    let sections = sections(report);
    out.push_str("<nav class=\"toc\"><b>Contents</b><ul>\n");
    for s in &sections {
        let _ = writeln!(
            out,
            "<li><a href=\"#{}\">{}</a></li>",
            esc(&s.id),
            esc(&s.title)
        );
    }
    if !extra.is_empty() {
        out.push_str("<li><a href=\"#fidelity\">Fidelity</a></li>\n");
    }
    out.push_str("</ul></nav>\n");
    for s in &sections {
        let _ = writeln!(
            out,
            "<section id=\"{}\"><h2>{}</h2>",
            esc(&s.id),
            esc(&s.title)
        );
        out.push_str(&s.body);
        out.push_str("</section>\n");
    }
    if !extra.is_empty() {
        out.push_str("<section id=\"fidelity\">\n");
        for section in extra {
            out.push_str(section);
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body></html>\n");
    out.into_bytes()
}
