//! Tests of the ftrace stall monitors on hand-built lines and distributions
//! (values worked out by hand in the comments).

use super::*;

/// A trace line for the tests: event, comm, pid, timestamp (µs), fields.
type Line<'a> = (&'a str, &'a str, u32, u64, &'a [(&'a str, &'a str)]);

fn feed(lines: &[Line]) -> Monitors {
    let mut a = MonitorAggregator::new();
    for &(event, comm, pid, ts_us, fields) in lines {
        let f = |n: &str| fields.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
        a.observe_fields(event, comm, pid, ts_us * 1000, f).unwrap();
    }
    a.finish()
}

fn value(t: &FtraceTable, stat: &str) -> f64 {
    t.row(stat).unwrap_or_else(|| panic!("no row {stat}")).value
}

fn dist(pairs: &[(u64, u64)]) -> Monitors {
    Monitors {
        dists: [(MonitorTable::AllocStall, pairs.iter().copied().collect())].into(),
    }
}

#[test]
fn row_names_are_mmtests_stat_names() {
    let rows = MonitorTable::CongestionWaitOther.row_names();
    assert_eq!(
        rows,
        [
            "Min",
            "1st-qrtle",
            "2nd-qrtle",
            "3rd-qrtle",
            "Max-1",
            "Max-5",
            "Max-10",
            "Max-90",
            "Max-95",
            "Max-99",
            "Max",
            "Amean",
            "Samples",
            "Samples-[0,5)",
            "Samples-[5,10)",
            "Samples-[10,100)",
            "Samples-[100,500)",
            "Samples-[500,1000)",
            "Samples-[1000,5000)",
            "Samples-[5000,max)"
        ]
    );
    let bdp = MonitorTable::BalanceDirtyPages.row_names();
    assert_eq!(bdp.len(), 13 + 13);
    assert_eq!(
        bdp[13..16],
        ["Samples-[0,5)", "Samples-[5,10)", "Samples-[10,20)"]
    );
    assert_eq!(bdp[25], "Samples-[5000,max)");
}

/// Pairing: per `pid-comm`, a begin replaced by a later begin, an end
/// without a begin ignored, a begin never ended dropped.
#[test]
fn alloc_stall_pairs_by_task() {
    let begin = "mm_vmscan_direct_reclaim_begin";
    let end = "mm_vmscan_direct_reclaim_end";
    let m = feed(&[
        // fio-7: 1.000000 → 1.002500: 2.5 ms.
        (begin, "fio", 7, 1_000_000, &[]),
        (end, "fio", 7, 1_002_500, &[]),
        // An end with nothing pending: ignored.
        (end, "fio", 7, 1_003_000, &[]),
        // memory-hog-8 begins at 2 s, begins again at 2.010 s (replaces
        // the first), ends at 2.017 s: 7 ms, not 17.
        (begin, "memory-hog", 8, 2_000_000, &[]),
        (begin, "memory-hog", 8, 2_010_000, &[]),
        // Interleaved: another task (same pid, other comm) and kswapd,
        // which is counted too (no kswapd split).
        (begin, "mmap-latency", 8, 2_011_000, &[]),
        (begin, "kswapd0", 51, 2_012_000, &[]),
        (end, "memory-hog", 8, 2_017_000, &[]),
        // mmap-latency-8: 2.011 → 2.111: 100 ms (edge of [100,500)).
        (end, "mmap-latency", 8, 2_111_000, &[]),
        // kswapd0-51: 2.012 → 2.012: 0 ms (counted: threshold −1).
        (end, "kswapd0", 51, 2_012_000, &[]),
        // Begun, never ended: dropped.
        (begin, "fio", 9, 3_000_000, &[]),
    ]);
    let t = &ftrace_tables(&[&m])[0][0];
    assert_eq!(t.table, "Ftrace direct reclaim allocation stalls");
    assert_eq!((t.unit.as_str(), t.operation.as_str()), ("ms", "delay"));
    // Samples: 0, 2.5, 7, 100 ms.
    assert_eq!(t.samples, 4);
    assert_eq!(value(t, "Min"), 0.0);
    assert_eq!(value(t, "Max"), 100.0);
    // (0 + 2.5 + 7 + 100) / 4 = 27.375.
    assert_eq!(value(t, "Amean"), 27.375);
    // Ranks max(1, int(4·p/100)): 25 → 1 (0), 50 → 2 (2.5), 75 → 3 (7),
    // 1/5/10 → 1 (0), 90/95/99 → 3 (7).
    assert_eq!(value(t, "1st-qrtle"), 0.0);
    assert_eq!(value(t, "2nd-qrtle"), 2.5);
    assert_eq!(value(t, "3rd-qrtle"), 7.0);
    assert_eq!(value(t, "Max-10"), 0.0);
    assert_eq!(value(t, "Max-99"), 7.0);
    // [0,5): 0 and 2.5; [5,10): 7; [100,500): 100.
    assert_eq!(value(t, "Samples-[0,5)"), 2.0);
    assert_eq!(value(t, "Samples-[5,10)"), 1.0);
    assert_eq!(value(t, "Samples-[10,100)"), 0.0);
    assert_eq!(value(t, "Samples-[100,500)"), 1.0);
    assert_eq!(value(t, "Samples-[5000,max)"), 0.0);
}

/// Timestamps are kept exact: 1.000001 → 1.000004 is 0.003 ms, and
/// 4.999999 ms sits below the 5 ms edge.
#[test]
fn alloc_stall_keeps_microseconds() {
    let m = dist(&[(3_000, 1), (4_999_999, 1), (5_000_000, 1)]);
    let t = &ftrace_tables(&[&m])[0][0];
    assert_eq!(value(t, "Min"), 0.003);
    assert_eq!(value(t, "Samples-[0,5)"), 2.0);
    assert_eq!(value(t, "Samples-[5,10)"), 1.0);
    let m = feed(&[
        ("mm_vmscan_direct_reclaim_begin", "a", 1, 1_000_001, &[]),
        ("mm_vmscan_direct_reclaim_end", "a", 1, 1_000_004, &[]),
    ]);
    assert_eq!(m.dists[&MonitorTable::AllocStall], [(3_000, 1)].into());
}

/// congestion_wait and wait_iff_congested: only delays > 0, split by
/// `^kswapd[0-9]*$`, µs as printed, buckets on the µs values.
#[test]
fn congestion_threshold_and_kswapd_split() {
    let cw = "writeback_congestion_wait";
    let wi = "writeback_wait_iff_congested";
    let d = |v: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![("usec_timeout", "100000"), ("usec_delayed", v)]
    };
    let (d0, d4, d5, d104k, d100k) = (d("0"), d("4"), d("5"), d("104000"), d("100000"));
    let m = feed(&[
        (cw, "kswapd0", 51, 1, &d104k),
        (cw, "kswapd1", 52, 2, &d100k),
        (cw, "kswapd0", 51, 3, &d0),   // not > 0: no sample
        (cw, "kswapd0:0", 53, 4, &d5), // not kswapd (a kworker-like name)
        (cw, "fio", 7, 5, &d4),
        (wi, "fio", 7, 6, &d0),
        (wi, "fio", 7, 7, &d0),
    ]);
    let tables = ftrace_tables(&[&m]);
    let titles: Vec<&str> = tables[0].iter().map(|t| t.table.as_str()).collect();
    // wait_iff_congested had only zero delays: no table.
    assert_eq!(
        titles,
        [
            "Ftrace congestion_wait kswapd",
            "Ftrace congestion_wait not kswapd"
        ]
    );
    let k = &tables[0][0];
    assert_eq!((k.unit.as_str(), k.operation.as_str()), ("us", "latency"));
    // kswapd: 100000, 104000 µs. Mean 102000; Max-50: rank 1 → 100000.
    assert_eq!(k.samples, 2);
    assert_eq!(value(k, "Amean"), 102000.0);
    assert_eq!(value(k, "2nd-qrtle"), 100000.0);
    assert_eq!(value(k, "Samples-[5000,max)"), 2.0);
    // not kswapd: 4 µs ([0,5)) and 5 µs ([5,10)).
    let o = &tables[0][1];
    assert_eq!((o.samples, value(o, "Min"), value(o, "Max")), (2, 4.0, 5.0));
    assert_eq!(value(o, "Samples-[0,5)"), 1.0);
    assert_eq!(value(o, "Samples-[5,10)"), 1.0);
}

/// balance_dirty_pages: `pause` > 0 in ms as printed (not ×4), its own
/// buckets (…, [30,35), [35,40), …).
#[test]
fn balance_dirty_pages_pause() {
    let p = |v: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![("paused", "0"), ("pause", v), ("dirtied_pause", "32")]
    };
    let (p0, pm4, p4, p32, p35, p60, p200) =
        (p("0"), p("-4"), p("4"), p("32"), p("35"), p("60"), p("200"));
    let e = "balance_dirty_pages";
    let m = feed(&[
        (e, "fio", 7, 1, &p0),  // not > 0
        (e, "fio", 7, 2, &pm4), // negative: no sleep
        (e, "fio", 7, 3, &p4),
        (e, "fio", 7, 4, &p32),
        (e, "fio", 7, 5, &p35),
        (e, "fio", 7, 6, &p60),
        (e, "fio", 7, 7, &p200),
    ]);
    let t = &ftrace_tables(&[&m])[0][0];
    assert_eq!(t.table, "Ftrace balance_dirty_pages");
    assert_eq!(t.unit, "ms");
    // 4, 32, 35, 60, 200: mean 331/5 = 66.2; Max-90: rank int(4.5) = 4 → 60.
    assert_eq!(t.samples, 5);
    assert_eq!(value(t, "Amean"), 66.2);
    assert_eq!(value(t, "Max-90"), 60.0);
    assert_eq!(value(t, "3rd-qrtle"), 35.0); // rank int(3.75) = 3
    assert_eq!(value(t, "Samples-[0,5)"), 1.0);
    assert_eq!(value(t, "Samples-[30,35)"), 1.0);
    assert_eq!(value(t, "Samples-[35,40)"), 1.0);
    assert_eq!(value(t, "Samples-[50,60)"), 0.0);
    assert_eq!(value(t, "Samples-[60,100)"), 1.0);
    assert_eq!(value(t, "Samples-[100,500)"), 1.0);
}

#[test]
fn missing_or_bad_fields_are_errors() {
    let mut a = MonitorAggregator::new();
    let none = |_: &str| None;
    let e = a
        .observe_fields("balance_dirty_pages", "fio", 1, 0, none)
        .unwrap_err();
    assert_eq!(e.0, "balance_dirty_pages: no field `pause`");
    let bad = |n: &str| (n == "usec_delayed").then_some("x");
    let e = a
        .observe_fields("writeback_wait_iff_congested", "fio", 1, 0, bad)
        .unwrap_err();
    assert!(e.0.contains("`usec_delayed=x`"), "{}", e.0);
    assert_eq!(
        a.observe_fields("mm_vmscan_kswapd_wake", "kswapd0", 1, 0, none),
        Ok(false)
    );
    assert!(a.finish().dists.is_empty());
}

/// Two runs: pndiff on the statistics, pdiff on the Samples rows; a run
/// without samples in a table keeps only its (zero) Samples rows.
#[test]
fn compare_with_the_baseline() {
    // Baseline: 10 ms ×2, 20 ms ×2 (ns). New: 5 ms ×3.
    let base = dist(&[(10_000_000, 2), (20_000_000, 2)]);
    let new = dist(&[(5_000_000, 3)]);
    let none = Monitors::default();
    let t = ftrace_tables(&[&base, &new, &none]);
    let (b, n, z) = (&t[0][0], &t[1][0], &t[2][0]);
    assert!(b.rows.iter().all(|r| r.pct.is_none()));
    // Amean 15 → 5: pndiff = 100 − 5·100/15 = 66.67 %.
    let amean = n.row("Amean").unwrap();
    assert_eq!(amean.value, 5.0);
    assert_eq!(format!("{:.2}", amean.pct.unwrap()), "66.67");
    // Max 20 → 5: 75 %.
    assert_eq!(n.row("Max").unwrap().pct, Some(75.0));
    // Samples 4 → 3: pdiff = 3·100/4 − 100 = −25 %.
    assert_eq!(n.row("Samples").unwrap().pct, Some(-25.0));
    // [5,10): 0 → 3: pdiff with base 0 → 100 (mmtests' special case);
    // [10,100): 4 → 0: −100 %, all gone (mmtests' pdiff would say 0 %).
    assert_eq!(n.row("Samples-[5,10)").unwrap().pct, Some(100.0));
    assert_eq!(n.row("Samples-[10,100)").unwrap().pct, Some(-100.0));
    // The run without samples: no statistics, Samples 0 (−100 %).
    assert!(z.row("Min").is_none() && z.row("Amean").is_none());
    assert_eq!(z.samples, 0);
    assert_eq!(z.row("Samples").unwrap().value, 0.0);
    assert_eq!(z.row("Samples").unwrap().pct, Some(-100.0));
    assert_eq!(z.rows.len(), 1 + 7);
    // No run with samples: no table at all.
    assert!(ftrace_tables(&[&none, &none]).iter().all(Vec::is_empty));
}
