//! The report as one CSV table in long ("tidy") form: a row per figure.
//!
//! Columns `run,table,row,value`: `table` is the report section
//! (`duration`, `task_cpu`, `ops`, `latency`, `latency_vs_baseline`,
//! `stalls`, `ftrace_stalls`, `vmstat_delta`) and `row` the figure's name in it, as the text
//! report labels it. One long table rather than one wide one per section,
//! because a sweep's hundreds of runs and every section then load with one
//! call and pivot as needed (`pandas.read_csv(f).pivot_table(index="run",
//! columns=["table","row"], values="value")`). Runs in report order, the
//! baseline first; values as Rust prints them (shortest round trip), so the
//! bytes are the same for the same report.

use crate::format::text::STATS;
use crate::model::Report;
use crate::ops::{memcg_rows, ops_rows};

/// The report as CSV bytes (header `run,table,row,value`).
pub fn render_csv(report: &Report) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut put = |run: &str, table: &str, row: &str, value: String| {
        // Writing to memory cannot fail.
        let _ = w.write_record([run, table, row, value.as_str()]);
    };
    put("run", "table", "row", "value".into());
    for r in &report.runs {
        let run = r.name.as_str();
        let d = &r.duration;
        for (row, v) in [
            ("User", d.user_s),
            ("System", d.system_s),
            ("Elapsed", d.elapsed_s),
        ] {
            put(run, "duration", row, v.to_string());
        }
        for t in &r.task_cpu {
            put(
                run,
                "task_cpu",
                &format!("{} user_s", t.class),
                t.user_s.to_string(),
            );
            put(
                run,
                "task_cpu",
                &format!("{} system_s", t.class),
                t.system_s.to_string(),
            );
            if let Some(n) = t.pages_allocated {
                put(
                    run,
                    "task_cpu",
                    &format!("{} pages_allocated", t.class),
                    n.to_string(),
                );
            }
            if let Some(n) = t.pages_freed {
                put(
                    run,
                    "task_cpu",
                    &format!("{} pages_freed", t.class),
                    n.to_string(),
                );
            }
        }
        let memcg = if r.ops.memcg.is_some() {
            memcg_rows(&r.ops)
        } else {
            Vec::new()
        };
        for (row, v) in ops_rows(&r.ops).into_iter().chain(memcg) {
            put(run, "ops", row, v.to_string());
        }
        for (op, l) in r.latency.0.iter() {
            let values = [
                l.min, l.amean, l.stddev, l.coeffvar, l.max90, l.max95, l.max99, l.max, l.bamean95,
            ];
            put(run, "latency", &format!("Samples {op}"), l.n.to_string());
            for (stat, v) in STATS.iter().zip(values) {
                put(run, "latency", &format!("{stat} {op}"), v.to_string());
            }
            if let Some(b) = &l.vs_baseline {
                let p = &b.pct;
                let pcts = [
                    p.min, p.amean, p.stddev, p.coeffvar, p.max90, p.max95, p.max99, p.max,
                    p.bamean95,
                ];
                for (stat, v) in STATS.iter().zip(pcts) {
                    put(
                        run,
                        "latency_vs_baseline",
                        &format!("{stat} {op} %"),
                        v.to_string(),
                    );
                }
                let sig = u8::from(b.significant).to_string();
                put(
                    run,
                    "latency_vs_baseline",
                    &format!("Amean {op} significant"),
                    sig,
                );
            }
        }
        for s in &r.stall_summary {
            let who = format!("{} {} {}", s.event, s.who, s.reason);
            let who = who.trim_end();
            for (what, v) in [
                ("count", s.count.to_string()),
                ("not_delayed_pct", s.not_delayed_pct.to_string()),
                ("hit_timeout_pct", s.hit_timeout_pct.to_string()),
                ("mean_delay_us", s.mean_delay_us.to_string()),
                ("p99_delay_us", s.p99_delay_us.to_string()),
                ("max_delay_us", s.max_delay_us.to_string()),
                ("total_delay_s", s.total_delay_s.to_string()),
            ] {
                put(run, "stalls", &format!("{who} {what}"), v);
            }
        }
        // mmtests' ftrace stall monitors: `TABLE (UNIT): STAT OP`, and its
        // % against the baseline as `… %` (pndiff; pdiff on Samples rows).
        for t in &r.ftrace_stalls {
            for row in &t.rows {
                let name = format!("{} ({}): {} {}", t.table, t.unit, row.stat, t.operation);
                put(run, "ftrace_stalls", &name, row.value.to_string());
                if let Some(p) = row.pct {
                    put(run, "ftrace_stalls", &format!("{name} %"), p.to_string());
                }
            }
        }
        for (k, v) in &r.vmstat_delta {
            put(run, "vmstat_delta", k, v.to_string());
        }
    }
    w.into_inner().unwrap_or_default()
}
