//! Behaviour tests of the report over small hand-made run records in
//! `tests/fixtures/` (values checked by hand in the comments).

use std::path::PathBuf;

use reclaimlab_report::{
    build_report, load_run, render_html, render_json, render_text, report_from_dirs, Options,
    Significance,
};

fn fx(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn base_new() -> reclaimlab_report::Report {
    report_from_dirs(&[fx("base"), fx("new")], Options::default()).expect("fixtures load")
}

#[test]
fn ops_match_hand_computation() {
    let r = base_new();
    let o = &r.runs[0].ops;
    // vmstat.csv of `base`: last row − first row.
    assert_eq!(o.direct_pages_scanned, 9000);
    assert_eq!(o.kswapd_pages_scanned, 2000);
    assert_eq!(o.kswapd_pages_reclaimed, 1050);
    assert_eq!(o.direct_pages_reclaimed, 90);
    assert_eq!(o.kswapd_efficiency_pct, 52.5); // 100·1050/2000
    assert_eq!(o.direct_efficiency_pct, 1.0); // 100·90/9000
    assert_eq!(o.kswapd_velocity, 100.0); // 2000/20 s
    assert_eq!(o.direct_velocity, 450.0); // 9000/20 s
    assert!((o.percentage_direct_scans - 100.0 * 9000.0 / 11000.0).abs() < 1e-12);
    assert_eq!(o.page_writes_by_reclaim, 100);
    assert_eq!(o.page_writes_anon, 30);
    assert_eq!(o.page_writes_file, 70);
    assert_eq!(o.page_reclaim_immediate, 1200);
    assert_eq!(o.slabs_scanned, 12);
    assert_eq!(o.direct_inode_steals, 3);
    assert_eq!(o.kswapd_inode_steals, 5);
    assert!(o.memcg.is_none());
    assert_eq!(r.runs[0].duration.system_s, 20.25);
}

#[test]
fn latency_statistics_match_hand_computation() {
    let r = base_new();
    let b = r.runs[0].latency.get("mmap-4").unwrap();
    // Samples 1..10 ms: mean 5.5, s = √(82.5/9), Max-90 = sorted[int(9)−1] = 9,
    // BAmean-95 = mean of the first int(9.5) = 9 samples = 5.
    assert_eq!((b.n, b.min, b.amean, b.max), (10, 1.0, 5.5, 10.0));
    assert!((b.stddev - (82.5f64 / 9.0).sqrt()).abs() < 1e-12);
    assert_eq!(
        (b.max90, b.max95, b.max99, b.bamean95),
        (9.0, 9.0, 9.0, 5.0)
    );
    assert_eq!(b.unit, "ms");
    // mmap-6: base 2..20 (mean 11), new 1..10 (mean 5.5): pndiff = 50%,
    // t = 5.5/√(s₁²/10+s₂²/10) = 2.569, df 18, p ≈ 0.019 < 0.10 → significant.
    let n6 = r.runs[1]
        .latency
        .get("mmap-6")
        .unwrap()
        .vs_baseline
        .clone()
        .unwrap();
    assert_eq!(n6.pct.amean, 50.0);
    assert!(n6.significant);
    let p = n6.p_value.unwrap();
    assert!(p > 0.01 && p < 0.03, "p = {p}");
    // mmap-4: 5.5 → 6.0 is −9.09% and not significant.
    let n4 = r.runs[1]
        .latency
        .get("mmap-4")
        .unwrap()
        .vs_baseline
        .clone()
        .unwrap();
    assert_eq!(format!("{:.2}", n4.pct.amean), "-9.09");
    assert!(!n4.significant);
    assert!(r.runs[0]
        .latency
        .get("mmap-4")
        .unwrap()
        .vs_baseline
        .is_none());
}

#[test]
fn text_has_mmtests_layout() {
    let t = render_text(&base_new());
    assert!(
        t.contains("\nAmean     mmap-6     11.0000 (   0.00%)      5.5000 *  50.00%*\n"),
        "{t}"
    );
    assert!(
        t.contains("\nMin       mmap-4      1.0000 (   0.00%)      1.5000 ( -50.00%)\n"),
        "{t}"
    );
    assert!(
        t.contains("\nDuration System        20.25        5.00\n"),
        "{t}"
    );
    assert!(
        t.contains("\nOps Direct pages scanned                9000.00        1000.00\n"),
        "{t}"
    );
    // Stall histograms in `sort | uniq -c | sort -n` shape.
    assert!(t.contains(
        "mm_vmscan_throttled kswapd\n      1 usec_timeout=100000 usect_delayed=100000 reason=VMSCAN_THROTTLE_WRITEBACK\n     17 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
    ), "{t}");
    assert!(
        t.contains(
            "writeback_congestion_wait kswapd\n      3 usec_timeout=100000 usec_delayed=104000\n"
        ),
        "{t}"
    );
    // Stats grouped by statistic, as mmtests prints them.
    let min4 = t.find("Min       mmap-4").unwrap();
    let min6 = t.find("Min       mmap-6").unwrap();
    let amean4 = t.find("Amean     mmap-4").unwrap();
    assert!(min4 < min6 && min6 < amean4);
}

/// The lines of the text table that has a row starting with `row_prefix`:
/// its header rows (starting with a space) and all its rows, not its title
/// (`Latency (ms)`, `Ftrace … (ms)`).
fn table<'a>(text: &'a str, row_prefix: &str) -> Vec<&'a str> {
    let block = text
        .split("\n\n")
        .find(|b| b.lines().any(|l| l.starts_with(row_prefix)))
        .unwrap_or_else(|| panic!("no table with rows `{row_prefix}` in\n{text}"));
    block
        .lines()
        .filter(|l| *l != "Latency (ms)" && !l.starts_with("Ftrace "))
        .collect()
}

/// Every header name ends in the same column as the values under it, and
/// every line of the table is equally long (all columns right-aligned).
fn assert_aligned(text: &str, row_prefix: &str, columns: usize) {
    let lines = table(text, row_prefix);
    let headers: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with(' '))
        .collect();
    let rows: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with(' '))
        .collect();
    assert!(!headers.is_empty() && !rows.is_empty(), "{lines:#?}");
    // End column of each name in the bottom header row (names have no spaces).
    let ends = |l: &str| -> Vec<usize> {
        let b = l.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
            .map(|i| i + 1)
            .collect()
    };
    let cols = ends(headers[headers.len() - 1]);
    assert_eq!(cols.len(), columns, "{lines:#?}");
    for h in &headers {
        for e in ends(h) {
            assert!(cols.contains(&e), "header `{h}` ends off a column {cols:?}");
        }
    }
    for r in &rows {
        let b = r.as_bytes();
        for &e in &cols {
            assert!(
                e <= b.len() && b[e - 1] != b' ' && (e == b.len() || b[e] == b' '),
                "row does not end a value at column {e}:\n{}\n{r}",
                headers.join("\n")
            );
        }
    }
    for l in &lines {
        assert_eq!(
            l.len(),
            lines[0].len(),
            "ragged table:\n{}",
            lines.join("\n")
        );
    }
}

#[test]
fn text_stays_aligned_with_long_run_names() {
    // Names as `reclaimlab sim --sweep` makes them; the second also splits
    // into two header rows at `-rc1-`, and is longer than the first.
    let names = [
        "v5.16-rc1,throttle.noprogress.timeout_us=4000",
        "5.15.0-rc1-mm-reclaimcongest-v4r2,throttle.noprogress.timeout_us=500000",
    ];
    let runs: Vec<_> = [fx("base"), fx("new")]
        .iter()
        .zip(names)
        .map(|(d, n)| {
            let mut r = load_run(d).unwrap();
            r.meta.name = n.to_string();
            r
        })
        .collect();
    let t = render_text(&build_report(&runs, Options::default()));
    assert_aligned(&t, "Min ", 2);
    assert_eq!(
        table(&t, "Min ").len(),
        2 + 9 * 2,
        "2 header rows, then 9 statistics × mmap-4, mmap-6"
    );
    assert_aligned(&t, "Duration ", 2);
    assert_aligned(&t, "Ops ", 2);
    // Latency: the value keeps its `%12.4f` decimals and the % part its shape.
    assert!(
        t.lines()
            .any(|l| l.starts_with("Amean     mmap-6") && l.ends_with("     5.5000 *  50.00%*")),
        "{t}"
    );
    // The scope list lines up its second column too.
    let scope: Vec<usize> = t
        .lines()
        .filter(|l| names.iter().any(|n| l.starts_with(&format!("  {n} "))))
        .map(|l| l.find("global").unwrap())
        .collect();
    assert_eq!(scope.len(), 2, "{t}");
    assert_eq!(scope[0], scope[1], "{t}");
}

#[test]
fn ci_significance_rule() {
    let r = report_from_dirs(
        &[fx("base"), fx("new")],
        Options {
            significance: Significance::Ci,
        },
    )
    .unwrap();
    let v = r.runs[1]
        .latency
        .get("mmap-6")
        .unwrap()
        .vs_baseline
        .clone()
        .unwrap();
    // cidiff = (5.5 − 11) / (1.96·3.0277 + 1.96·6.0553) = −0.309: not significant.
    let c = v.cidiff.unwrap();
    assert!(
        (c + 5.5 / (1.959963984540054 * (3.0276503540974917 + 6.0553007081949835))).abs() < 1e-9,
        "{c}"
    );
    assert!(!v.significant);
    assert!(
        render_text(&r).contains("Amean     mmap-6     11.0000 (   0.00%)      5.5000 (  50.00%)")
    );
}

#[test]
fn json_has_design_keys() {
    let j: serde_json::Value = serde_json::from_slice(&render_json(&base_new())).unwrap();
    assert_eq!(j["schema"], "reclaimlab.report/1");
    let run = &j["runs"][1];
    for k in [
        "name",
        "origin",
        "kernel",
        "workload",
        "record",
        "duration",
        "ops",
        "vmstat_delta",
        "latency",
        "stalls",
    ] {
        assert!(run.get(k).is_some(), "missing runs[].{k}");
    }
    for k in ["user_s", "system_s", "elapsed_s"] {
        assert!(run["duration"][k].is_number(), "duration.{k}");
    }
    for k in [
        "direct_pages_scanned",
        "kswapd_pages_scanned",
        "kswapd_pages_reclaimed",
        "direct_pages_reclaimed",
        "kswapd_efficiency_pct",
        "kswapd_velocity",
        "direct_efficiency_pct",
        "direct_velocity",
        "percentage_direct_scans",
        "page_writes_by_reclaim",
        "page_writes_file",
        "page_writes_anon",
        "page_reclaim_immediate",
        "slabs_scanned",
        "direct_inode_steals",
        "kswapd_inode_steals",
    ] {
        assert!(run["ops"][k].is_number(), "ops.{k}");
    }
    let l = &run["latency"]["mmap-4"];
    for k in [
        "unit", "n", "min", "amean", "stddev", "max90", "max95", "max99", "max",
    ] {
        assert!(l.get(k).is_some(), "latency.{k}");
    }
    assert_eq!(l["unit"], "ms");
    let s = &run["stalls"][0];
    for k in [
        "event",
        "who",
        "reason",
        "usec_timeout",
        "usec_delayed",
        "count",
    ] {
        assert!(s.get(k).is_some(), "stalls[].{k}");
    }
    assert_eq!(run["stalls"][0]["who"], "kswapd");
    assert_eq!(j["runs"][0]["stalls"][0]["reason"], "");
    assert_eq!(run["vmstat_delta"]["pgscan_direct"], 1000);
}

#[test]
fn identical_input_gives_identical_bytes() {
    let a = base_new();
    let b = base_new();
    assert_eq!(render_text(&a), render_text(&b));
    assert_eq!(render_json(&a), render_json(&b));
    assert_eq!(render_html(&a), render_html(&b));
}

#[test]
fn html_is_self_contained() {
    let h = String::from_utf8(render_html(&base_new())).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(
        h.matches("<svg").count() >= 2 + 2 + 4,
        "latency ×2, velocity ×2, stall plots"
    );
    for bad in ["<script", "src=", "<link", "@import", "url("] {
        assert!(!h.contains(bad), "external reference {bad}");
    }
}

#[test]
fn memcg_run_never_shows_a_table_of_zeros() {
    let r = report_from_dirs(&[fx("base"), fx("memcg")], Options::default()).unwrap();
    let m = &r.runs[1];
    assert_eq!(m.reclaim_scope, "memcg-v1");
    assert_eq!(m.scan_counters, "lru");
    let mc = m.ops.memcg.clone().unwrap();
    // pgscan_anon 4000−1000, pgscan_file 10000−2000; steals 1000 and 5000.
    assert_eq!((mc.pages_scanned_anon, mc.pages_scanned_file), (3000, 8000));
    assert_eq!(
        (mc.pages_reclaimed_anon, mc.pages_reclaimed_file),
        (1000, 5000)
    );
    assert_eq!(mc.velocity, 1100.0); // 11000 / 10 s
    let t = render_text(&r);
    assert!(t.contains("Ops Memcg pages scanned file"), "{t}");
    assert!(t.contains("memcg-v1"), "{t}");
    // The different steps are explained and only mmap-4 is compared.
    assert_eq!(r.comparable.compared, vec!["mmap-4".to_string()]);
    assert!(
        r.notes.iter().any(|n| n.contains("mmap-6 (only in v5.15)")),
        "{:?}",
        r.notes
    );
}

#[test]
fn bad_trace_line_is_skipped_and_named() {
    let run = load_run(&fx("memcg")).unwrap();
    assert_eq!(run.trace.bad_lines, 1);
    assert!(
        run.trace.bad_examples[0].contains("trace.txt.gz:2"),
        "{:?}",
        run.trace.bad_examples
    );
    assert_eq!(run.trace.stall_events, 2);
    let r = build_report(&[run], Options::default());
    assert_eq!(r.bad_trace_lines(), 1);
    assert!(r.notes.iter().any(|n| n.contains("did not parse")));
}

#[test]
fn truncated_gzip_stops_and_is_reported() {
    let run = load_run(&fx("truncated")).unwrap();
    assert!(run.trace.truncated.is_some());
    assert!(
        run.trace.stall_events > 0,
        "lines before the cut still count"
    );
    let r = build_report(&[run], Options::default());
    assert!(r.has_truncated_trace());
    assert!(render_text(&r).contains("TRUNCATED"));
}

#[test]
fn different_workloads_are_explained() {
    let r = report_from_dirs(&[fx("base"), fx("other")], Options::default()).unwrap();
    assert!(
        r.notes.iter().any(|n| n.contains("different workloads")),
        "{:?}",
        r.notes
    );
    assert!(r.comparable.compared.is_empty());
    let t = render_text(&r);
    assert!(
        t.contains("No latency operation is present in every run"),
        "{t}"
    );
    assert!(
        t.contains("no trace: tracefs not available on this host"),
        "{t}"
    );
}

#[test]
fn missing_record_is_a_clear_error() {
    let e = load_run(&fx("does-not-exist")).unwrap_err().to_string();
    assert!(
        e.contains("does-not-exist") && e.contains("run record"),
        "{e}"
    );
    let dir = std::env::temp_dir().join(format!("reclaimlab-report-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("run.json"), "{ not json").unwrap();
    let e = load_run(&dir).unwrap_err().to_string();
    assert!(e.contains("run.json"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Copies fixture `name` to `dir/name`.
fn copy_fixture(name: &str, dir: &std::path::Path) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(fx(name)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    to
}

#[test]
fn runs_of_one_name_are_told_apart_by_their_folders() {
    // The same kernel's record from two output folders (before and after
    // a patch): the columns say which is which.
    let tmp = std::env::temp_dir().join(format!("reclaimlab-same-{}", std::process::id()));
    let before = copy_fixture("base", &tmp.join("out/before"));
    let after = copy_fixture("base", &tmp.join("out/after"));
    let name = load_run(&before).unwrap().meta.name;
    let r = report_from_dirs(&[&before, &after], Options::default()).unwrap();
    let names: Vec<&str> = r.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [format!("before/{name}"), format!("after/{name}")],
        "{:?}",
        r.notes
    );
    assert!(!r.notes.iter().any(|n| n.contains("same name")));
    // The same folder twice cannot be told apart: kept, and noted.
    let r = report_from_dirs(&[&before, &before], Options::default()).unwrap();
    assert_eq!(r.runs[0].name, name);
    assert!(r.notes.iter().any(|n| n.contains("same name")));
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn cpu_by_task_class_sums_the_records_tasks() {
    // kswapd0 and kswapd1 are one class, kworkers another; user and
    // system rows appear only where some run spent time.
    let tmp = std::env::temp_dir().join(format!("reclaimlab-taskcpu-{}", std::process::id()));
    let dir = copy_fixture("base", &tmp);
    let meta = dir.join("run.json");
    let mut j: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    j["tasks"] = serde_json::json!([
        { "comm": "kswapd0", "pid": 10, "step": 4, "user_s": 0.0, "system_s": 1.5 },
        { "comm": "kswapd1", "pid": 11, "step": 4, "user_s": 0.0, "system_s": 2.0 },
        { "comm": "kworker/u4:0+flush-8:0", "pid": 12, "user_s": 0.0, "system_s": 0.25 },
        { "comm": "memory-hog", "pid": 13, "step": 4, "user_s": 10.0, "system_s": 4.0,
          "pages_allocated": 1000, "pages_freed": 10 },
        { "comm": "memory-hog", "pid": 14, "step": 8, "user_s": 5.0, "system_s": 1.0,
          "pages_allocated": 2000, "pages_freed": 0 }
    ]);
    std::fs::write(&meta, serde_json::to_vec(&j).unwrap()).unwrap();
    let r = report_from_dirs(&[&dir], Options::default()).unwrap();
    let got: Vec<(&str, f64, f64, Option<u64>)> = r.runs[0]
        .task_cpu
        .iter()
        .map(|t| (t.class.as_str(), t.user_s, t.system_s, t.pages_allocated))
        .collect();
    assert_eq!(
        got,
        [
            ("kswapd", 0.0, 3.5, None),
            ("kworker", 0.0, 0.25, None),
            ("memory-hog", 15.0, 5.0, Some(3000)),
        ]
    );
    let t = render_text(&r);
    assert!(t.contains("CPU kswapd System"), "{t}");
    assert!(t.contains("CPU memory-hog User"), "{t}");
    assert!(!t.contains("CPU kswapd User"), "a row of zeros: {t}");
    assert!(t.contains("Pages memory-hog allocated"), "{t}");
    assert!(!t.contains("Pages kswapd"), "no page counts recorded: {t}");
    assert!(String::from_utf8(render_json(&r))
        .unwrap()
        .contains("\"task_cpu\""));
    // A record without per-task times has no CPU table.
    let t = render_text(&base_new());
    assert!(!t.contains("CPU ") && !t.contains("Pages "), "{t}");
    std::fs::remove_dir_all(&tmp).ok();
}

/// The CSV holds the same figures as the text: one `run,table,row,value`
/// row each, the run names quoted where they need it.
#[test]
fn csv_has_every_figure_in_long_form() {
    let r = base_new();
    let bytes = reclaimlab_report::render_csv(&r);
    let mut rd = csv::Reader::from_reader(&bytes[..]);
    assert_eq!(rd.headers().unwrap(), vec!["run", "table", "row", "value"]);
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    let get = |run: &str, table: &str, row: &str| -> String {
        let hits: Vec<&csv::StringRecord> = rows
            .iter()
            .filter(|x| &x[0] == run && &x[1] == table && &x[2] == row)
            .collect();
        assert_eq!(hits.len(), 1, "{run} {table} {row}");
        hits[0][3].to_string()
    };
    let base = r.runs[0].name.as_str();
    let new = r.runs[1].name.as_str();
    assert_eq!(get(base, "ops", "Direct pages scanned"), "9000");
    assert_eq!(get(base, "ops", "Kswapd efficiency %"), "52.5");
    assert_eq!(get(base, "duration", "System"), "20.25");
    assert_eq!(get(base, "latency", "Amean mmap-4"), "5.5");
    assert_eq!(get(base, "latency", "Samples mmap-4"), "10");
    assert_eq!(get(base, "latency", "Max-90 mmap-4"), "9");
    // Against the baseline: mmap-6 is 50 % better in the second run and
    // significantly so (see latency_statistics_match_hand_computation).
    assert_eq!(get(new, "latency_vs_baseline", "Amean mmap-6 %"), "50");
    assert_eq!(
        get(new, "latency_vs_baseline", "Amean mmap-6 significant"),
        "1"
    );
    assert!(rows
        .iter()
        .all(|x| &x[0] != base || &x[1] != "latency_vs_baseline"));
    assert!(rows
        .iter()
        .any(|x| &x[1] == "stalls" && x[2].ends_with(" count")));
    assert!(rows
        .iter()
        .any(|x| &x[1] == "vmstat_delta" && &x[2] == "pgscan_direct"));
    // A run name with a comma (a sweep's) is one field.
    let mut swept = base_new();
    swept.runs[0].name = "v5.16,vm.swappiness=0".into();
    let bytes = reclaimlab_report::render_csv(&swept);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"v5.16,vm.swappiness=0\",duration,User,"));
    let mut rd = csv::Reader::from_reader(&bytes[..]);
    assert!(rd.records().all(|x| x.unwrap().len() == 4));
}

/// A copy of fixture `base` at `dir/name`, named `name` in its run.json,
/// whose trace is `lines` (gzipped).
fn record_with_trace(dir: &std::path::Path, name: &str, lines: &[String]) -> PathBuf {
    use std::io::Write as _;
    let to = copy_fixture("base", &dir.join(name));
    let to = {
        // copy_fixture puts it at dir/name/base.
        let inner = to.clone();
        let meta = inner.join("run.json");
        let mut j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
        j["name"] = serde_json::json!(name);
        std::fs::write(&meta, serde_json::to_vec(&j).unwrap()).unwrap();
        inner
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"# tracer: nop\n#\n").unwrap();
    for l in lines {
        gz.write_all(l.as_bytes()).unwrap();
        gz.write_all(b"\n").unwrap();
    }
    std::fs::write(to.join("trace.txt.gz"), gz.finish().unwrap()).unwrap();
    to
}

/// One ftrace text line: `COMM-PID [000] ..... SECS: EVENT: FIELDS`.
fn tl(comm: &str, pid: u32, ts: &str, event: &str, fields: &str) -> String {
    format!(
        "{:>16}-{pid:<6} [000] ..... {ts:>12}: {event}: {fields}",
        comm
    )
}

fn bdp(comm: &str, ts: &str, pause: i64) -> String {
    tl(
        comm,
        104,
        ts,
        "balance_dirty_pages",
        &format!("bdi 8:0: limit=208886 setpoint=182775 dirty=156665 bdi_setpoint=182775 bdi_dirty=156665 dirty_ratelimit=102400 task_ratelimit=204776 dirtied=128 dirtied_pause=32 paused=0 pause={pause} period=0 think=0 cgroup_ino=1"),
    )
}

fn reclaim(comm: &str, pid: u32, begin: &str, end: &str) -> [String; 2] {
    [
        tl(
            comm,
            pid,
            begin,
            "mm_vmscan_direct_reclaim_begin",
            "order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
        ),
        tl(
            comm,
            pid,
            end,
            "mm_vmscan_direct_reclaim_end",
            "nr_reclaimed=32",
        ),
    ]
}

/// mmtests' ftrace stall monitors over two hand-made traces: the values,
/// the % against the baseline (pndiff; pdiff on the Samples rows), a run
/// without samples in a table, and every exporter.
#[test]
fn ftrace_monitors_compare_two_runs() {
    let tmp = std::env::temp_dir().join(format!("reclaimlab-ftrace-{}", std::process::id()));
    let cw = "writeback_congestion_wait";
    let mut base: Vec<String> = Vec::new();
    // Direct reclaim stalls 4, 12 and 200 ms (fio-7 twice, memory-hog-8,
    // interleaved with fio's second stall).
    base.extend(reclaim("fio", 7, "1.000000", "1.004000"));
    base.push(tl(
        "fio",
        7,
        "2.000000",
        "mm_vmscan_direct_reclaim_begin",
        "order=0 gfp_flags=GFP_KERNEL",
    ));
    base.extend(reclaim("memory-hog", 8, "2.001000", "2.201000"));
    base.push(tl(
        "fio",
        7,
        "2.012000",
        "mm_vmscan_direct_reclaim_end",
        "nr_reclaimed=1",
    ));
    // congestion_wait: kswapd 104000 µs; fio's 0 is below the threshold.
    base.push(tl(
        "kswapd0",
        51,
        "3.000000",
        cw,
        "usec_timeout=100000 usec_delayed=104000",
    ));
    base.push(tl(
        "fio",
        7,
        "3.100000",
        cw,
        "usec_timeout=100000 usec_delayed=0",
    ));
    // balance_dirty_pages: pauses 8 and 40 ms count, 0 and -3 do not.
    for (ts, p) in [("4.0", 8), ("4.1", 0), ("4.2", -3), ("4.3", 40)] {
        base.push(bdp("fio", ts, p));
    }
    let mut new: Vec<String> = Vec::new();
    // Two stalls of 2 ms; no congestion_wait; pauses 8 ms ×3.
    new.extend(reclaim("fio", 7, "1.000000", "1.002000"));
    new.extend(reclaim("fio", 7, "1.500000", "1.502000"));
    for ts in ["4.0", "4.1", "4.2"] {
        new.push(bdp("fio", ts, 8));
    }
    let a = record_with_trace(&tmp, "base", &base);
    let b = record_with_trace(&tmp, "new", &new);
    let r = report_from_dirs(&[&a, &b], Options::default()).unwrap();
    assert_eq!(
        r.runs[0].trace.bad_lines, 0,
        "{:?}",
        r.runs[0].trace.bad_examples
    );
    assert_eq!(r.runs[0].trace.monitor_events, 6 + 2 + 4);
    let titles: Vec<&str> = r.runs[1]
        .ftrace_stalls
        .iter()
        .map(|t| t.table.as_str())
        .collect();
    assert_eq!(
        titles,
        [
            "Ftrace direct reclaim allocation stalls",
            "Ftrace congestion_wait kswapd",
            "Ftrace balance_dirty_pages"
        ]
    );
    let t = render_text(&r);
    let expect = [
        "Ftrace direct reclaim allocation stalls (ms)",
        "                                            base                    new",
        // Base 4, 12, 200 ms: Min 4, mean 72; 2nd-qrtle rank int(1.5) = 1
        // → 4; Max-90 rank int(2.7) = 2 → 12. New 2, 2.
        "Min                 delay      4.0000 (   0.00%)      2.0000 (  50.00%)",
        "2nd-qrtle           delay      4.0000 (   0.00%)      2.0000 (  50.00%)",
        "Max-90              delay     12.0000 (   0.00%)      2.0000 (  83.33%)",
        // pndiff(2, 200) = 99; pndiff(2, 72) = 100 − 200/72 = 97.22.
        "Max                 delay    200.0000 (   0.00%)      2.0000 (  99.00%)",
        "Amean               delay     72.0000 (   0.00%)      2.0000 (  97.22%)",
        // pdiff(2, 3) = 200/3 − 100 = −33.33; [0,5): pdiff(2, 1) = 100;
        // [10,100): 1 → 0 is −100 %, all gone (mmtests' pdiff: 0).
        "Samples             delay      3.0000 (   0.00%)      2.0000 ( -33.33%)",
        "Samples-[0,5)       delay      1.0000 (   0.00%)      2.0000 ( 100.00%)",
        "Samples-[10,100)    delay      1.0000 (   0.00%)      0.0000 (-100.00%)",
        "Samples-[100,500)   delay      1.0000 (   0.00%)      0.0000 (-100.00%)",
        // congestion_wait in µs; the new run has none: blank statistics,
        // Samples 0.
        "Ftrace congestion_wait kswapd (us)",
        "Amean               latency 104000.0000 (   0.00%)",
        "Samples             latency      1.0000 (   0.00%)      0.0000 (-100.00%)",
        "Samples-[5000,max)  latency      1.0000 (   0.00%)      0.0000 (-100.00%)",
        // balance_dirty_pages: 8, 40 vs 8, 8, 8 (ms as printed).
        "Ftrace balance_dirty_pages (ms)",
        "Amean               latency     24.0000 (   0.00%)      8.0000 (  66.67%)",
        "Samples             latency      2.0000 (   0.00%)      3.0000 (  50.00%)",
        "Samples-[5,10)      latency      1.0000 (   0.00%)      3.0000 ( 200.00%)",
        "Samples-[40,50)     latency      1.0000 (   0.00%)      0.0000 (-100.00%)",
    ];
    for line in expect {
        assert!(
            t.lines().any(|l| l == line),
            "missing line\n{line}\nin\n{t}"
        );
    }
    // The section follows the stall histograms.
    assert!(t.find("Stalls: new").unwrap() < t.find("Ftrace direct reclaim").unwrap());
    assert_aligned(&t, "Samples-[0,5)       delay", 2);
    assert_aligned(&t, "Samples-[30,35)", 2);
    // JSON: per run, table, unit, rows; % only on the compared run.
    let j: serde_json::Value = serde_json::from_slice(&render_json(&r)).unwrap();
    let bt = &j["runs"][0]["ftrace_stalls"][2];
    assert_eq!(bt["table"], "Ftrace balance_dirty_pages");
    assert_eq!(bt["unit"], "ms");
    assert_eq!(bt["samples"], 2);
    let nt = &j["runs"][1]["ftrace_stalls"][1];
    assert_eq!(nt["samples"], 0);
    assert_eq!(nt["rows"][0]["stat"], "Samples");
    assert_eq!(nt["rows"][0]["pct"], -100.0);
    assert!(j["runs"][0]["ftrace_stalls"][0]["rows"][0]
        .get("pct")
        .is_none());
    assert_eq!(
        j["runs"][1]["ftrace_stalls"][0]["rows"][11]["stat"],
        "Amean"
    );
    // CSV: one `ftrace_stalls` row per value and per %.
    let csv = String::from_utf8(reclaimlab_report::render_csv(&r)).unwrap();
    assert!(
        csv.contains("\nnew,ftrace_stalls,Ftrace balance_dirty_pages (ms): Samples latency %,50\n"),
        "{csv}"
    );
    assert!(csv
        .contains("\nbase,ftrace_stalls,Ftrace congestion_wait kswapd (us): Max latency,104000\n"));
    // HTML: the tables.
    let h = String::from_utf8(render_html(&r)).unwrap();
    assert!(h.contains("<h3>Ftrace congestion_wait kswapd (us)</h3>"));
    assert!(h.contains(
        "<tr><td>Amean</td><td>24.0000</td><td>0.00%</td><td>8.0000</td><td>66.67%</td></tr>"
    ));
    std::fs::remove_dir_all(&tmp).ok();
}

/// Records whose traces have none of the monitors' events (only
/// mm_vmscan_throttled) get no ftrace stall section anywhere.
#[test]
fn no_monitor_events_no_ftrace_section() {
    let r = report_from_dirs(&[fx("new"), fx("memcg")], Options::default()).unwrap();
    assert!(r.runs.iter().all(|r| r.ftrace_stalls.is_empty()));
    assert!(!render_text(&r).contains("Ftrace"));
    assert!(!String::from_utf8(render_html(&r))
        .unwrap()
        .contains("Ftrace"));
    let j: serde_json::Value = serde_json::from_slice(&render_json(&r)).unwrap();
    assert_eq!(j["runs"][0]["ftrace_stalls"], serde_json::json!([]));
    // A trace with the events but no sample above the threshold (only
    // usec_delayed=0, a begin never ended): no section either.
    let tmp = std::env::temp_dir().join(format!("reclaimlab-noftrace-{}", std::process::id()));
    let d = record_with_trace(
        &tmp,
        "zero",
        &[
            tl(
                "fio",
                7,
                "1.0",
                "writeback_wait_iff_congested",
                "usec_timeout=100000 usec_delayed=0",
            ),
            tl(
                "fio",
                7,
                "2.0",
                "mm_vmscan_direct_reclaim_begin",
                "order=0 gfp_flags=GFP_KERNEL",
            ),
            bdp("fio", "3.0", 0),
        ],
    );
    let r = report_from_dirs(&[&d], Options::default()).unwrap();
    assert_eq!(r.runs[0].trace.monitor_events, 3);
    assert!(!render_text(&r).contains("Ftrace"), "{}", render_text(&r));
    std::fs::remove_dir_all(&tmp).ok();
}

/// A monitor event without its field is a skipped line named by file:line,
/// as for the stall events.
#[test]
fn monitor_line_without_its_field_is_skipped_and_named() {
    let tmp = std::env::temp_dir().join(format!("reclaimlab-badftrace-{}", std::process::id()));
    let d = record_with_trace(
        &tmp,
        "bad",
        &[
            bdp("fio", "1.0", 8),
            tl(
                "fio",
                7,
                "2.0",
                "balance_dirty_pages",
                "bdi 8:0: limit=1 paused=0",
            ),
        ],
    );
    let run = load_run(&d).unwrap();
    assert_eq!(run.trace.bad_lines, 1);
    // Two header lines, then the good line (3) and the bad one (4).
    assert!(
        run.trace.bad_examples[0]
            .ends_with("trace.txt.gz:4: balance_dirty_pages: no field `pause`"),
        "{:?}",
        run.trace.bad_examples
    );
    assert_eq!(run.trace.monitor_events, 1);
    std::fs::remove_dir_all(&tmp).ok();
}
