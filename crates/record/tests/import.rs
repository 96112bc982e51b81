//! Importers on hand-made fixtures (`tests/fixtures/`): expected samples, deltas,
//! trace lines and error messages.

use std::fs;

use reclaimlab_record::*;

mod common;
use common::*;

fn events(r: &Record) -> Vec<(String, String, Option<u64>)> {
    let mut t = r.trace_lines().unwrap().unwrap();
    let mut v = Vec::new();
    while let Some(l) = t.next_line() {
        let l = l.unwrap();
        v.push((
            l.comm().to_string(),
            l.event().to_string(),
            l.usec_delayed(),
        ));
    }
    v
}

#[test]
fn kernel_trace_with_garbled_line() {
    let d = tmp("kt");
    let out = d.join("rec");
    let s = import_trace(&fixture("trace/kernel-trace.txt"), &out).unwrap();
    assert_eq!(s.trace_lines, 6);
    assert_eq!(s.skipped_lines, 1);
    assert_eq!(s.lost_events, 17);
    assert_eq!(s.steps, vec![1]);
    let r = Record::open(&out).unwrap();
    let m = r.meta();
    assert_eq!(m.origin, Origin::Import);
    assert_eq!(m.kernel, "unknown");
    assert_eq!(m.name, "kernel-trace");
    assert_eq!(m.reclaim_scope, ReclaimScope::Unknown);
    assert_eq!(m.capture.skipped_lines, 1);
    assert_eq!(m.capture.lost_events, 17);
    assert_eq!(m.capture.trace_time_offset_s, 100.0);
    assert_eq!(m.duration.elapsed_s, 2.0);
    assert_eq!(
        m.steps,
        vec![Step {
            step: 1,
            start_s: 0.0,
            end_s: 2.0
        }]
    );
    assert_eq!(
        m.capture.events,
        vec![
            "vmscan:mm_vmscan_throttled",
            "writeback:writeback_congestion_wait",
            "writeback:writeback_wait_iff_congested"
        ]
    );
    assert!(
        m.capture.notes[0].contains("kernel-trace.txt:18:"),
        "{:?}",
        m.capture.notes
    );
    let ev = events(&r);
    assert_eq!(ev.len(), 6);
    assert_eq!(
        ev[0],
        ("kswapd0".into(), "mm_vmscan_throttled".into(), Some(4000))
    );
    assert_eq!(ev[2].0, "mmap-latency");
    assert_eq!(
        ev[3],
        (
            "Web Content-7".into(),
            "writeback_congestion_wait".into(),
            Some(104000)
        )
    );
    assert_eq!(ev[4].0, "<...>");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn trace_cmd_report_plain_and_gzip_give_the_same_record() {
    let d = tmp("tc");
    import_trace(&fixture("trace/trace-cmd-report.txt"), &d.join("a")).unwrap();
    let s = import_trace(&fixture("trace/trace-cmd-report.txt.gz"), &d.join("b")).unwrap();
    assert_eq!(s.trace_lines, 3);
    assert_eq!(s.skipped_lines, 0);
    assert_eq!(
        fs::read(d.join("a/trace.txt.gz")).unwrap(),
        fs::read(d.join("b/trace.txt.gz")).unwrap()
    );
    let r = Record::open(&d.join("b")).unwrap();
    let ev = events(&r);
    assert_eq!(
        ev[1],
        (
            "memory-hog".into(),
            "mm_vmscan_throttled".into(),
            Some(500000)
        )
    );
    assert!((r.meta().duration.elapsed_s - 1.0).abs() < 1e-9);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn trace_of_nothing_fails_and_leaves_nothing() {
    let d = tmp("nothing");
    let e = import_trace(&fixture("trace/garbage.txt"), &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("garbage.txt")
            && e.contains("no ftrace event line")
            && e.contains("garbage.txt:2"),
        "{e}"
    );
    assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
    let e = import_trace(&fixture("trace/missing.txt"), &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.txt"), "{e}");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn mmtests_2021_format() {
    let d = tmp("mm2021");
    let out = d.join("rec");
    // Given the work/log directory: the one run under it is found.
    let s = import_mmtests(&fixture("mmtests-2021/work/log"), &out).unwrap();
    assert_eq!(s.steps, vec![4, 7]);
    assert_eq!(s.latency_samples, 8);
    assert_eq!(s.vmstat_rows, 2);
    assert_eq!(s.trace_lines, 6);
    assert_eq!(s.skipped_lines, 1);
    let r = Record::open(&out).unwrap();
    let m = r.meta();
    assert_eq!(m.name, "vanilla");
    assert_eq!(m.kernel, "5.15.0-rc3-vanilla");
    assert_eq!(m.workload.name, "stutterp");
    assert_eq!(m.reclaim_scope, ReclaimScope::Global);
    assert_eq!(m.machine.cpus, 2);
    assert_eq!(m.machine.nodes, 1);
    assert_eq!(m.machine.memory_bytes, 8_000_000 * 1024);
    assert_eq!(m.machine.hz, Some(250));
    assert_eq!(
        m.duration,
        Duration {
            user_s: 123.45,
            system_s: 2345.67,
            elapsed_s: 2277.67
        }
    );
    assert_eq!(m.params["import.latency_format"], "2021");
    // 2021: values already have the 5 ms removed; batches expanded.
    assert_eq!(
        r.latency_values("mmap", 4),
        vec![1500.0, 1500.0, 1500.0, 23456.789, 4000.0, 4000.0]
    );
    assert_eq!(r.latency_values("mmap", 7), vec![10000.0, 7000.0]);
    // Reconstructed times: each loop is value + 5 ms, steps end to end.
    let l4: Vec<f64> = r
        .latency()
        .iter()
        .filter(|s| s.step == 4)
        .map(|s| s.t_s)
        .collect();
    assert!((l4[0] - 0.0065).abs() < 1e-9, "{l4:?}");
    let end4 = 3.0 * 0.0065 + 0.028456789 + 2.0 * 0.009;
    assert!((m.steps[0].end_s - end4).abs() < 1e-6, "{:?}", m.steps);
    assert_eq!(m.steps[1].start_s, m.steps[0].end_s);
    // vmstat deltas as in mmtests' Ops.
    let v = r.vmstat();
    assert_eq!(v.delta("pgscan_direct"), Some(1_000_000));
    assert_eq!(v.delta("pgscan_kswapd"), Some(109_000));
    assert_eq!(v.delta("pgsteal_kswapd"), Some(63_100));
    assert_eq!(v.delta("nr_vmscan_immediate_reclaim"), Some(500));
    assert_eq!(v.delta("nr_free_pages"), Some(-100_000));
    assert_eq!(v.rows[1].t_s, 2277.67);
    assert_eq!((v.rows[0].step, v.rows[1].step), (4, 7));
    assert_eq!(v.delta_in_step("pgscan_direct", 4), None);
    // The trace came along.
    assert!(m.capture.trace);
    assert_eq!(m.capture.lost_events, 17);
    assert_eq!(events(&r).len(), 6);
    // Same directory, the iteration given directly: same record bytes.
    let out2 = d.join("rec2");
    import_mmtests(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &out2).unwrap();
    for f in ["vmstat.csv", "latency.csv", "trace.txt.gz"] {
        assert_eq!(
            fs::read(out.join(f)).unwrap(),
            fs::read(out2.join(f)).unwrap(),
            "{f}"
        );
    }
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn mmtests_current_format_subtracts_the_sleep() {
    let d = tmp("mmcur");
    let out = d.join("rec");
    let s = import_mmtests(&fixture("mmtests-current"), &out).unwrap();
    assert_eq!(s.steps, vec![4]);
    let r = Record::open(&out).unwrap();
    assert_eq!(r.latency_values("mmap", 4), vec![25000.0, 20000.0, 0.0]);
    assert_eq!(r.meta().params["import.latency_format"], "raw");
    assert_eq!(r.meta().machine.hz, None);
    assert_eq!(r.vmstat().delta("pgscan_direct"), Some(60));
    // No time line: elapsed from test begin/end.
    assert_eq!(r.meta().duration.elapsed_s, 400.0);
    assert!(!r.meta().capture.trace);
    assert!(r.trace_lines().unwrap().is_none());
    // Forcing the 2021 reading keeps the values.
    let opts = MmtestsOptions {
        latency_format: LatencyFormat::Subtracted2021,
        name: Some("forced".into()),
        iteration: Some(0),
    };
    import_mmtests_with(&fixture("mmtests-current"), &out, &opts).unwrap();
    let r = Record::open(&out).unwrap();
    assert_eq!(r.meta().name, "forced");
    assert_eq!(r.latency_values("mmap", 4), vec![30000.0, 25000.0, 5000.0]);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn malformed_mmtests_input_names_file_and_line() {
    let d = tmp("mmbad");
    let src = d.join("src");
    copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
    fs::write(
        src.join("stutterp/logs/mmap-latency-4.log"),
        "3 1500000\n1 oops\n",
    )
    .unwrap();
    let e = import_mmtests(&src, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mmap-latency-4.log:2:") && e.contains("COUNT LATENCY_NS"),
        "{e}"
    );
    assert!(!d.join("rec").exists());

    copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
    let t = fs::read_to_string(src.join("tests-sysstate")).unwrap();
    fs::write(
        src.join("tests-sysstate"),
        t.replace("pgscan_direct 1000500", "pgscan_direct lots"),
    )
    .unwrap();
    let e = import_mmtests(&src, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tests-sysstate:35:") && e.contains("/proc/vmstat"),
        "{e}"
    );

    fs::write(
        src.join("tests-sysstate"),
        t.replace("2277.67 elapsed", "elapsed"),
    )
    .unwrap();
    let e = import_mmtests(&src, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tests-sysstate:47:") && e.contains("U user S system E elapsed"),
        "{e}"
    );

    let e = import_mmtests(&d.join("nope"), &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope") && e.contains("mmtests"), "{e}");
    let empty = d.join("empty");
    fs::create_dir(&empty).unwrap();
    let e = import_mmtests(&empty, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no mmtests results found"), "{e}");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn binary_and_truncated_inputs() {
    let d = tmp("bin");
    let bin = d.join("trace.dat");
    fs::write(&bin, vec![0u8; 3 << 20]).unwrap();
    let e = import_trace(&bin, &d.join("rec")).unwrap_err().to_string();
    assert!(
        e.contains("trace.dat:1:") && e.contains("trace-cmd report"),
        "{e}"
    );
    // A gzip cut short: the error names the file and says truncated.
    let mut text = String::new();
    for i in 0..50_000 {
        text.push_str(&format!(
            "  fio-{} [001] ..... {}.{:06}: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed={} reason=VMSCAN_THROTTLE_WRITEBACK\n",
            100 + i % 13,
            i / 1000,
            i % 1000,
            (i * 4000) % 104_000
        ));
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, text.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let cut = d.join("cut.txt.gz");
    fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    let e = import_trace(&cut, &d.join("rec")).unwrap_err().to_string();
    assert!(e.contains("cut.txt.gz:") && e.contains("truncated"), "{e}");
    assert!(!d.join("rec").exists());
    fs::remove_dir_all(&d).unwrap();
}
