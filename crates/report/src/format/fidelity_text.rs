//! `reclaimlab fidelity`: the text table of a [`FidelityReport`].
//!
//! One table per pair — each figure's simulated and real value, sim/real and
//! its log2 (or the difference in points, or the distance), the verdict —
//! then the pair's summary; a total over the pairs when there are several.
//! Rows neither side can score (`not-compared`) are counted, not printed.

use std::fmt::Write as _;

use super::text::{chars, fit, fit_to};
use crate::fidelity::directions::{DirectionRow, Generations};
use crate::fidelity::{FidelityReport, Kind, PairReport, Row, Summary, Tally, Verdict};

/// A value as the tables print it: integers without decimals from 1000 on.
pub(crate) fn value(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// The comparison column of a row: sim/real for ratio rows, ±points for
/// shares, `D=` for distances.
pub(crate) fn comparison(r: &Row) -> (String, String) {
    match r.kind {
        Kind::Share => (
            r.diff.map_or("-".into(), |d| format!("{d:+.1} pts")),
            String::new(),
        ),
        Kind::Distance => (
            r.diff.map_or("-".into(), |d| format!("D={d:.3}")),
            String::new(),
        ),
        _ => (
            r.ratio.map_or("-".into(), |q| {
                if (0.01..1000.0).contains(&q.abs()) {
                    format!("{q:.3}")
                } else {
                    format!("{q:.2e}")
                }
            }),
            r.log2.map_or("-".into(), |l| format!("{l:+.2}")),
        ),
    }
}

/// The summary as one paragraph of lines.
pub(crate) fn summary_lines(s: &Summary) -> Vec<String> {
    let pct = |w: usize, of: usize| {
        if of == 0 {
            0.0
        } else {
            100.0 * w as f64 / of as f64
        }
    };
    let unscored = |t: Tally| {
        if t.not_compared == 0 {
            String::new()
        } else {
            format!("; {} not compared", t.not_compared)
        }
    };
    let mut v = vec![format!(
        "{} of {} rows within tolerance ({:.0} %){}",
        s.rows.within,
        s.rows.of,
        pct(s.rows.within, s.rows.of),
        unscored(s.rows)
    )];
    if let Some(h) = s.headline {
        v.push(format!(
            "headline rows (the reference's own set): {} of {} within{}",
            h.within,
            h.of,
            unscored(h)
        ));
    }
    v.push(format!(
        "size-free rows (shares, percentages, quantiles, distances): {} of {} within{}",
        s.size_free.within,
        s.size_free.of,
        unscored(s.size_free)
    ));
    if let (Some(m), Some(f)) = (s.mean_abs_log2, s.typical_factor) {
        v.push(format!(
            "typical factor between the sides {f:.2} (mean |log2 sim/real| {m:.2}, rows where both are non-zero)"
        ));
    }
    let verdicts: Vec<String> = s.verdicts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    v.push(format!("verdicts: {}", verdicts.join(", ")));
    v
}

fn pair_text(out: &mut String, p: &PairReport) {
    let _ = writeln!(
        out,
        "Fidelity: {} ({}, {}, {}) against {} ({}, {}, {})",
        p.sim.name,
        p.sim.origin,
        p.sim.kernel,
        p.sim.machine,
        p.real.name,
        p.real.origin,
        p.real.kernel,
        p.real.machine
    );
    let _ = writeln!(out, "  sim:  {}", p.sim.source);
    let _ = writeln!(out, "  real: {}", p.real.source);
    for w in &p.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    let width = p
        .rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotCompared)
        .map(|r| chars(&r.label) + 2)
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        out,
        "\n  {:<width$} {:>15} {:>15} {:>11} {:>7}  verdict",
        "", "sim", "real", "sim/real", "log2"
    );
    let mut group = "";
    for r in p.rows.iter().filter(|r| r.verdict != Verdict::NotCompared) {
        if r.group != group {
            group = &r.group;
            let _ = writeln!(out, "  [{group}]");
        }
        let (cmp, log2) = comparison(r);
        // Labels come from records (latency metric names): cut as any cell.
        let label = if r.headline {
            format!("{} *", fit(&r.label))
        } else {
            fit(&r.label).into_owned()
        };
        let (s, real) = match r.kind {
            Kind::Distance => (String::new(), String::new()),
            _ => (value(r.sim), value(r.real)),
        };
        let _ = writeln!(
            out,
            "  {label:<width$} {s:>15} {real:>15} {cmp:>11} {log2:>7}  {}",
            r.verdict.word()
        );
    }
    let nc: Vec<&str> = p
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::NotCompared)
        .map(|r| r.key.as_str())
        .collect();
    if !nc.is_empty() {
        let _ = writeln!(
            out,
            "  not compared (only one side measures them): {} rows, e.g. {}",
            nc.len(),
            nc.iter().take(4).copied().collect::<Vec<_>>().join(", ")
        );
    }
    if p.rows.iter().any(|r| r.headline) {
        let _ = writeln!(out, "  * a headline row of the reference");
    }
    out.push('\n');
    for l in summary_lines(&p.summary) {
        let _ = writeln!(out, "  {l}");
    }
    out.push('\n');
}

/// Renders the report as text.
pub fn render_fidelity_text(report: &FidelityReport) -> String {
    let mut out = String::new();
    let t = report.tolerance;
    let _ = writeln!(
        out,
        "Tolerance: factor {} for counts, times, rates, percentages and quantiles; {} points for shares of stall reasons; KS distance {} for delay distributions\n",
        t.factor, t.share_points, t.ks
    );
    for p in &report.pairs {
        pair_text(&mut out, p);
    }
    if report.pairs.len() > 1 {
        let _ = writeln!(out, "All {} pairs:", report.pairs.len());
        for l in summary_lines(&report.total) {
            let _ = writeln!(out, "  {l}");
        }
    }
    for g in &report.generations {
        generations_text(&mut out, g);
    }
    if let Some(l) = generations_total_line(&report.generations) {
        let _ = writeln!(out, "\n{l}");
    }
    out
}

/// The total over several generation comparisons (`None` for one or none).
pub(crate) fn generations_total_line(gs: &[Generations]) -> Option<String> {
    let (agree, of) = gs.iter().fold((0, 0), |(a, o), g| (a + g.agree, o + g.of));
    (gs.len() > 1).then(|| {
        format!(
            "All {} generation comparisons: {agree} of {of} directions as on the real kernels",
            gs.len()
        )
    })
}

/// The heading line of a generation comparison.
pub(crate) fn generations_heading(g: &Generations) -> String {
    let tested = if g.runs.0 >= 2 && g.runs.1 >= 2 {
        format!(
            "; {} and {} runs: a change the t-test does not find (p >= 0.10) is noise",
            g.runs.0, g.runs.1
        )
    } else {
        String::new()
    };
    format!(
        "Generations: {} -> {} (a change under {} % is flat{tested})",
        g.older, g.newer, g.band_pct
    )
}

/// Its summary line.
pub(crate) fn generations_summary(g: &Generations) -> String {
    format!(
        "{} of {} directions as on the real kernels (figures the real kernels differ on, and the simulation has)",
        g.agree, g.of
    )
}

/// The verdict word of a direction row.
pub(crate) fn direction_word(r: &DirectionRow) -> &'static str {
    match r.agree {
        Some(true) => "same",
        Some(false) => "OPPOSITE",
        None => "-",
    }
}

fn generations_text(out: &mut String, g: &Generations) {
    let _ = writeln!(out, "\n{}", generations_heading(g));
    // With replicates, each real mean's run-to-run spread (CV %) beside it.
    let cv = g.runs.0 >= 2 && g.runs.1 >= 2;
    let spread = |r: &DirectionRow, i: usize| match (cv, r.real_cv_pct) {
        (false, _) => String::new(),
        (true, Some(c)) => format!(" {:>4.0}%", if i == 0 { c.0 } else { c.1 }),
        (true, None) => "     -".into(),
    };
    let head = |s: &str| {
        if cv {
            format!("{s} (cv)")
        } else {
            s.to_string()
        }
    };
    let w = if cv { 18 } else { 12 };
    let _ = writeln!(
        out,
        "  {:<40} {:>w$} {:>w$} {:>5}  {:>12} {:>12} {:>5}  verdict",
        "",
        head("real older"),
        head("real newer"),
        "",
        "sim older",
        "sim newer",
        ""
    );
    for r in &g.rows {
        let _ = writeln!(
            out,
            "  {:<40} {:>w$} {:>w$} {:>5}  {:>12} {:>12} {:>5}  {}",
            fit_to(&r.label, 40),
            format!("{}{}", value(Some(r.real.0)), spread(r, 0)),
            format!("{}{}", value(Some(r.real.1)), spread(r, 1)),
            r.real_word(),
            value(r.sim.0),
            value(r.sim.1),
            r.sim_word(),
            direction_word(r)
        );
    }
    let _ = writeln!(out, "  {}", generations_summary(g));
}
