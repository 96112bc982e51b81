//! The fidelity section of an HTML page, and a page of its own.
//!
//! [`fidelity_section`] returns one `<section class="fidelity">` fragment
//! (a table per pair, its warnings and summary, a verdict class on every
//! row) that any page can embed — the `report --html` page or its rewrite —
//! with the classes styled by [`FIDELITY_CSS`]. [`render_fidelity_html`] wraps
//! it in a self-contained page for `reclaimlab fidelity --html`.
//! Deterministic: same report, same bytes.

use std::fmt::Write as _;

use super::fidelity_text::{
    comparison, direction_word, generations_heading, generations_summary, generations_total_line,
    summary_lines, value,
};
use super::html::{esc, esc_fit};
use crate::fidelity::directions::Generations;
use crate::fidelity::{FidelityReport, Kind, PairReport, Verdict};

/// The CSS for the section's classes.
pub const FIDELITY_CSS: &str = "section.fidelity table{border-collapse:collapse;margin:.5em 0}\
section.fidelity td,section.fidelity th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}\
section.fidelity td:first-child,section.fidelity th:first-child{text-align:left}\
tr.v-within td:last-child,tr.v-agree td:last-child{color:#2a7d2a}\
tr.v-outside td:last-child,tr.v-missing td:last-child,tr.v-extra td:last-child{color:#b22;font-weight:bold}\
tr.headline td:first-child{font-weight:bold}p.warn{color:#a60}";

fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Agree => "v-agree",
        Verdict::Within => "v-within",
        Verdict::Outside => "v-outside",
        Verdict::Missing => "v-missing",
        Verdict::Extra => "v-extra",
        Verdict::NotCompared => "v-nc",
    }
}

fn pair_html(out: &mut String, p: &PairReport) {
    let _ = writeln!(
        out,
        "<h3>{} ({}) against {} ({})</h3>\n<p>sim: {}<br>real: {}</p>",
        esc_fit(&p.sim.name),
        esc_fit(&p.sim.kernel),
        esc_fit(&p.real.name),
        esc_fit(&p.real.kernel),
        esc_fit(&p.sim.source),
        esc_fit(&p.real.source)
    );
    for w in &p.warnings {
        let _ = writeln!(out, "<p class=\"warn\">{}</p>", esc(w));
    }
    let _ = writeln!(out, "<ul>");
    for l in summary_lines(&p.summary) {
        let _ = writeln!(out, "<li>{}</li>", esc(&l));
    }
    let _ = writeln!(out, "</ul>");
    out.push_str("<table><tr><th>figure</th><th>sim</th><th>real</th><th>sim/real</th><th>log2</th><th>verdict</th></tr>\n");
    for r in p.rows.iter().filter(|r| r.verdict != Verdict::NotCompared) {
        let (cmp, log2) = comparison(r);
        let (s, real) = match r.kind {
            Kind::Distance => (String::new(), String::new()),
            _ => (value(r.sim), value(r.real)),
        };
        let cls = if r.headline {
            format!("{} headline", class(r.verdict))
        } else {
            class(r.verdict).to_string()
        };
        let _ = writeln!(
            out,
            "<tr class=\"{cls}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc_fit(&r.label),
            esc(&s),
            esc(&real),
            esc(&cmp),
            esc(&log2),
            r.verdict.word()
        );
    }
    out.push_str("</table>\n");
}

/// The fidelity section: a `<section class="fidelity">` fragment.
pub fn fidelity_section(report: &FidelityReport) -> String {
    let mut out = String::from("<section class=\"fidelity\">\n<h2>Fidelity</h2>\n");
    let t = report.tolerance;
    let _ = writeln!(
        out,
        "<p>Tolerance: factor {} (counts, times, rates, percentages, quantiles), {} points (shares of stall reasons), KS distance {} (delay distributions). Bold rows are the reference's headline set.</p>",
        t.factor, t.share_points, t.ks
    );
    if report.pairs.len() > 1 {
        out.push_str("<p>All pairs:</p><ul>\n");
        for l in summary_lines(&report.total) {
            let _ = writeln!(out, "<li>{}</li>", esc(&l));
        }
        out.push_str("</ul>\n");
    }
    for p in &report.pairs {
        pair_html(&mut out, p);
    }
    for g in &report.generations {
        generations_html(&mut out, g);
    }
    if let Some(l) = generations_total_line(&report.generations) {
        let _ = writeln!(out, "<p>{}.</p>", esc(&l));
    }
    out.push_str("</section>\n");
    out
}

fn generations_html(out: &mut String, g: &Generations) {
    let _ = writeln!(
        out,
        "<h3>{}</h3>\n<p>{}</p>",
        esc_fit(&generations_heading(g)),
        esc(&generations_summary(g))
    );
    out.push_str("<table><tr><th>figure</th><th>real older</th><th>real newer</th><th>real</th><th>sim older</th><th>sim newer</th><th>sim</th><th>verdict</th></tr>\n");
    for r in &g.rows {
        let cls = match r.agree {
            Some(true) => "v-within",
            Some(false) => "v-outside",
            None => "v-nc",
        };
        let _ = writeln!(
            out,
            "<tr class=\"{cls}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc_fit(&r.label),
            esc(&value(Some(r.real.0))),
            esc(&value(Some(r.real.1))),
            r.real_word(),
            esc(&value(r.sim.0)),
            esc(&value(r.sim.1)),
            r.sim_word(),
            direction_word(r)
        );
    }
    out.push_str("</table>\n");
}

/// A self-contained page holding only the fidelity section.
pub fn render_fidelity_html(report: &FidelityReport) -> Vec<u8> {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>reclaimlab fidelity</title><style>body{{font-family:sans-serif}}{FIDELITY_CSS}</style></head><body>\n{}</body></html>\n",
        fidelity_section(report)
    )
    .into_bytes()
}
