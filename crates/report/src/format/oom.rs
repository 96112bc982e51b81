//! The OOM kills of each run, in the text and HTML reports: when, whom,
//! the victim's memory, free memory at the time and why reclaim gave up,
//! and per run the "free memory at OOM" figure (at its first kill) that
//! the 2020 XFS series was judged by (reference §3.8: "premature OOM killer
//! invocation, sometimes with as much as 45% of RAM being free").

use std::fmt::Write as _;

use super::html::esc;
use super::plot::{figure, run_color, Axis, Line, Style};
use super::text::{fit, fit_to, MAX_CELL};
use crate::model::Report;
use crate::oom_point::{OomPoints, OomSetting};

/// Most kills listed per run (the record lists every one).
const MAX_LISTED: usize = 20;

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn any_kills(report: &Report) -> bool {
    report.runs.iter().any(|r| !r.oom_kills.is_empty())
}

/// The text section; nothing when no run has a kill.
pub(crate) fn oom_text(out: &mut String, report: &Report) {
    if !any_kills(report) {
        return;
    }
    out.push_str("\nOOM kills\n");
    out.push_str("Free memory at OOM (MiB, at the first kill):");
    for r in &report.runs {
        let v = r.free_at_oom_kib.map_or("-".to_string(), mib);
        let _ = write!(out, " {} {v};", fit(&r.name));
    }
    out.push('\n');
    for r in &report.runs {
        for o in r.oom_kills.iter().take(MAX_LISTED) {
            let _ = writeln!(
                out,
                "{} t={:.3}s pid {} ({}) cgroup {} {} victim {} MiB, free {} MiB{}{}",
                fit(&r.name),
                o.t_s,
                o.pid,
                fit(&o.comm),
                if o.cgroup.is_empty() { "/" } else { &o.cgroup },
                o.constraint,
                mib(o.victim_kib),
                mib(o.free_kib),
                if o.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", fit_to(&o.reason, 5 * MAX_CELL))
                },
                if o.source.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", o.source)
                }
            );
        }
        if r.oom_kills.len() > MAX_LISTED {
            let _ = writeln!(
                out,
                "{}: {} more (run.json oom_kills lists every one)",
                fit(&r.name),
                r.oom_kills.len() - MAX_LISTED
            );
        }
    }
    if let Some(p) = &report.oom_points {
        oom_points_text(out, p);
    }
}

fn opt_mib(v: Option<u64>) -> String {
    v.map_or("-".to_string(), |m| m.to_string())
}

/// The cells of a setting's row: no kill up to, killed from, first kill
/// (s), free at it (MiB), locked by then (MiB), allocation stalls to the
/// kill, allocation stalls of the largest run without a kill.
fn row_cells(s: &OomSetting) -> [String; 7] {
    let k = s.first_killed();
    let stalls = |v: Option<i64>| v.map_or("-".to_string(), |n| n.to_string());
    [
        opt_mib(s.largest_without_kill_mib),
        opt_mib(s.smallest_killed_mib),
        k.and_then(|k| k.first_kill_s)
            .map_or("-".to_string(), |t| format!("{t:.2}")),
        k.and_then(|k| k.free_at_kill_kib)
            .map_or("-".to_string(), mib),
        k.and_then(|k| k.locked_kib).map_or("-".to_string(), mib),
        stalls(k.and_then(|k| k.alloc_stalls)),
        stalls(s.last_unkilled().and_then(|r| r.alloc_stalls)),
    ]
}

const POINT_HEADS: [&str; 7] = [
    "No kill up to",
    "Killed from",
    "First kill (s)",
    "Free at kill (MiB)",
    "Locked by then (MiB)",
    "Alloc stalls to kill",
    "Alloc stalls, no kill",
];

/// The OOM point table of a sweep over the mlock size (text).
fn oom_points_text(out: &mut String, p: &OomPoints) {
    let _ = writeln!(
        out,
        "\nOOM point over the {} (runs grouped by everything else; locked memory and allocation stalls at the last vmstat sample up to the kill; the last column is the largest run without a kill, to its end)",
        p.size
    );
    let names: Vec<String> = p
        .settings
        .iter()
        .map(|s| fit(&s.setting).into_owned())
        .collect();
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = write!(out, "{:<w$}", "Setting");
    for h in POINT_HEADS {
        let _ = write!(out, "  {h:>width$}", width = h.len().max(8));
    }
    out.push('\n');
    for (s, name) in p.settings.iter().zip(&names) {
        let _ = write!(out, "{name:<w$}");
        for (c, h) in row_cells(s).iter().zip(POINT_HEADS) {
            let _ = write!(out, "  {c:>width$}", width = h.len().max(8));
        }
        out.push('\n');
    }
    for s in &p.settings {
        let pts: Vec<String> = s
            .runs
            .iter()
            .map(|r| match r.first_kill_s {
                Some(t) => format!("{} killed at {t:.2} s", r.mlock_mib),
                None => format!("{} no kill", r.mlock_mib),
            })
            .collect();
        let _ = writeln!(out, "{}: {}", fit(&s.setting), pts.join("; "));
    }
}

/// The OOM point table and its plots (HTML).
fn oom_points_html(out: &mut String, p: &OomPoints, report: &Report) {
    let _ = writeln!(
        out,
        "<h3 id=\"oom-point\">OOM point over the {}</h3>\n<p class=\"note\">Runs grouped by everything but the locked size. Locked memory and allocation stalls (direct reclaim entries) at the last vmstat sample up to the first kill; the last column is the largest run without a kill, to its end.</p>",
        esc(&p.size)
    );
    out.push_str("<table>\n<tr><th>setting</th>");
    for h in POINT_HEADS {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for s in &p.settings {
        let _ = write!(out, "<tr><td>{}</td>", esc(&s.setting));
        for c in row_cells(s) {
            let _ = write!(out, "<td>{}</td>", esc(&c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<div class=\"plots\">\n");
    let end_of = |run: &str| {
        report
            .runs
            .iter()
            .find(|r| r.name == run)
            .map(|r| r.duration.elapsed_s)
    };
    let mut free_lines = Vec::new();
    let mut time_lines = Vec::new();
    for (i, s) in p.settings.iter().enumerate() {
        let unkilled: Vec<String> = s
            .runs
            .iter()
            .filter(|r| r.first_kill_s.is_none())
            .map(|r| r.mlock_mib.to_string())
            .collect();
        let full = (!unkilled.is_empty())
            .then(|| format!("{}; no kill at {} MiB", s.setting, unkilled.join(", ")));
        free_lines.push(Line {
            name: s.setting.clone(),
            full: full.clone(),
            color: run_color(i),
            style: Style::Markers,
            points: s
                .runs
                .iter()
                .filter_map(|r| Some((r.mlock_mib as f64, r.free_at_kill_kib? as f64 / 1024.0)))
                .collect(),
        });
        time_lines.push(Line {
            name: s.setting.clone(),
            full,
            color: run_color(i),
            style: Style::Markers,
            points: s
                .runs
                .iter()
                .filter_map(|r| Some((r.mlock_mib as f64, r.first_kill_s.or(end_of(&r.run))?)))
                .collect(),
        });
    }
    let sizes: Vec<f64> = p
        .settings
        .iter()
        .flat_map(|s| s.runs.iter().map(|r| r.mlock_mib as f64))
        .collect();
    let (lo, hi) = sizes
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let pad = ((hi - lo) * 0.05).max(1.0);
    let x = Axis {
        desc: p.size.clone(),
        range: (lo - pad, hi + pad),
        log: false,
    };
    for (title, desc, lines) in [
        (
            "Free memory at the first OOM kill (runs without a kill have no point)",
            "free MiB",
            &free_lines,
        ),
        (
            "Time of the first OOM kill (no kill: the run's end)",
            "seconds",
            &time_lines,
        ),
    ] {
        let ymax = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        let y = Axis {
            desc: desc.into(),
            range: (0.0, ymax.max(1e-9) * 1.1),
            log: false,
        };
        out.push_str(&figure(title, &x, &y, lines));
    }
    out.push_str("</div>\n");
}

/// The HTML section body; `false` when no run has a kill.
pub(crate) fn oom_html(out: &mut String, report: &Report) -> bool {
    if !any_kills(report) {
        return false;
    }
    out.push_str("<table>\n<tr><th>run</th><th>free memory at OOM (MiB, first kill)</th><th>kills</th></tr>\n");
    for r in &report.runs {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.name),
            r.free_at_oom_kib.map_or("-".to_string(), mib),
            r.oom_kills.len()
        );
    }
    out.push_str("</table>\n<table>\n<tr><th>run</th><th>t (s)</th><th>pid</th><th>comm</th><th>cgroup</th><th>constraint</th><th>victim (MiB)</th><th>free (MiB)</th><th>why reclaim gave up</th><th>seen in</th></tr>\n");
    for r in &report.runs {
        for o in r.oom_kills.iter().take(MAX_LISTED) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.name),
                o.t_s,
                o.pid,
                esc(&o.comm),
                esc(if o.cgroup.is_empty() { "/" } else { &o.cgroup }),
                esc(&o.constraint),
                mib(o.victim_kib),
                mib(o.free_kib),
                esc(&o.reason),
                esc(&o.source)
            );
        }
    }
    out.push_str("</table>\n");
    if let Some(p) = &report.oom_points {
        oom_points_html(out, p, report);
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::input::{RunInput, RunMeta};
    use crate::model::{build_report, Options};
    use reclaimlab_record::OomKillRecord;

    fn run(name: &str, kills: &[(f64, u64)]) -> RunInput {
        RunInput {
            meta: RunMeta {
                name: name.into(),
                workload: "fsmark-mlock".into(),
                reclaim_scope: "global".into(),
                oom_kills: kills
                    .iter()
                    .map(|&(t_s, free_kib)| OomKillRecord {
                        t_s,
                        pid: 42,
                        comm: "mlock".into(),
                        constraint: "CONSTRAINT_NONE".into(),
                        victim_kib: 800 << 10,
                        free_kib,
                        reason: "watermark check failed: node 0: available 300 (reclaimable 0 + free 300) <= min 313 pages (no_progress_loops=1)".into(),
                        ..OomKillRecord::default()
                    })
                    .collect(),
                ..RunMeta::default()
            },
            ..RunInput::default()
        }
    }

    /// Each kill is listed with its reason, and the "free memory at OOM"
    /// figure is the free memory at the run's first kill (kills sorted by
    /// time), in the text and the JSON; a run without kills has neither.
    #[test]
    fn kills_and_free_memory_at_oom_are_shown() {
        let r = build_report(
            &[run("a", &[(2.0, 9 << 10), (1.0, 3 << 10)]), run("b", &[])],
            Options::default(),
        );
        assert_eq!(r.runs[0].free_at_oom_kib, Some(3 << 10));
        assert_eq!(r.runs[0].oom_kills[0].t_s, 1.0);
        let text = crate::format::text::render_text(&r);
        assert!(
            text.contains("Free memory at OOM (MiB, at the first kill): a 3.0; b -;"),
            "{text}"
        );
        assert!(
            text.contains("a t=1.000s pid 42 (mlock) cgroup / CONSTRAINT_NONE victim 800.0 MiB, free 3.0 MiB: watermark check failed"),
            "{text}"
        );
        let json = String::from_utf8(crate::format::json::render_json(&r)).unwrap();
        assert!(json.contains("\"free_at_oom_kib\": 3072"), "{json}");
        assert_eq!(json.matches("free_at_oom_kib").count(), 1, "{json}");
        let html = String::from_utf8(crate::format::html::render_html(&r)).unwrap();
        assert!(html.contains("why reclaim gave up"));
        assert!(!text.contains("OOM point"), "no size sweep: {text}");
        let none = build_report(&[run("b", &[])], Options::default());
        assert!(!crate::format::text::render_text(&none).contains("OOM kills"));
    }

    /// A sweep over the mlock size gets its OOM point table in the text,
    /// the JSON and the HTML (with its plots).
    #[test]
    fn a_size_sweep_shows_its_oom_points() {
        use crate::oom_point::tests::run as sized;
        let runs = vec![
            sized("sync", 320, None),
            sized("sync", 384, Some((7.5, 2048))),
            sized("async", 320, Some((3.0, 4096))),
            sized("async", 384, Some((2.0, 5120))),
        ];
        let r = build_report(&runs, Options::default());
        let text = crate::format::text::render_text(&r);
        assert!(
            text.contains("OOM point over the mlock size (MiB)"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.starts_with("xfs.inode_reclaim=sync "))
            .unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &cells[1..],
            ["320", "384", "7.50", "2.0", "2.7", "70", "100"],
            "{row}"
        );
        let row = text
            .lines()
            .find(|l| l.starts_with("xfs.inode_reclaim=async "))
            .unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &cells[1..],
            ["-", "320", "3.00", "4.0", "1.2", "30", "-"],
            "{row}"
        );
        assert!(
            text.contains("xfs.inode_reclaim=sync: 320 no kill; 384 killed at 7.50 s"),
            "{text}"
        );
        let json = String::from_utf8(crate::format::json::render_json(&r)).unwrap();
        assert!(
            json.contains("\"oom_points\"") && json.contains("\"smallest_killed_mib\": 320"),
            "{json}"
        );
        let html = String::from_utf8(crate::format::html::render_html(&r)).unwrap();
        assert!(html.contains("id=\"oom-point\""), "{html}");
        let plots = html
            .matches("<figure class=\"plot\" data-points=\"")
            .count();
        assert!(plots >= 2, "{plots} plots");
        assert!(html.contains("Free memory at the first OOM kill"));
        assert!(html.contains("no kill at 320 MiB"));
    }
}
