//! The OOM kills of each run, in the text and HTML reports: when, whom,
//! the victim's memory, free memory at the time and why reclaim gave up,
//! and per run the "free memory at OOM" figure (at its first kill) that
//! the 2020 XFS series was judged by (reference §3.8: "premature OOM killer
//! invocation, sometimes with as much as 45% of RAM being free").

use std::fmt::Write as _;

use super::html::esc;
use super::text::{fit, fit_to, MAX_CELL};
use crate::model::Report;

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
        let none = build_report(&[run("b", &[])], Options::default());
        assert!(!crate::format::text::render_text(&none).contains("OOM kills"));
    }
}
