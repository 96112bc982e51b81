//! Issue 22: importers and the record reader survive hostile input — no
//! panic, no hang, nothing written without bound, no number silently wrong.
//! Each test failed before the fix and passes within seconds after it.

use std::fs;
use std::io::Write as _;
use std::sync::mpsc;
use std::time::Duration;

use reclaimlab_record::*;

mod common;
use common::*;

/// Runs `f` on a thread and fails if it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

const STALL: &str = "  kswapd0-51 [000] ..... 1.000000: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK";

/// A 1.5 MiB line: `import trace` used to take lines up to 2 MiB (its
/// message said 1 MiB) into a record the report then hung on. Now the
/// importer and every reader stop at exactly `lines::MAX_LINE`.
#[test]
fn a_one_and_a_half_mib_line_is_refused_at_its_line() {
    let d = tmp("long");
    let src = d.join("t.txt");
    let long = format!("{STALL} x={}", "y".repeat(3 << 19));
    fs::write(&src, format!("{STALL}\n{long}\n{STALL}\n")).unwrap();
    let e = import_trace(&src, &d.join("rec")).unwrap_err().to_string();
    assert!(
        e.contains("t.txt:2:") && e.contains("longer than 1 MiB"),
        "{e}"
    );
    assert!(!d.join("rec").exists());
    // The writer refuses such a line too, so no record can carry one.
    let mut w = RecordWriter::create(&d.join("w"), RunMeta::new("w", Origin::Import, "k")).unwrap();
    let e = w.trace_line(&long).unwrap_err().to_string();
    assert!(e.contains("MAX_LINE"), "{e}");
    fs::remove_dir_all(&d).ok();
}

/// `COUNT LATENCY_NS` with a count of 2^64-1: `import mmtests` wrote
/// latency rows without end (2.1 GB in 11 s). Now: refused at the line,
/// nothing written.
#[test]
fn a_count_of_2_pow_64_minus_1_is_refused_before_writing() {
    let d = tmp("count");
    let src = d.join("src");
    copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
    fs::write(
        src.join("stutterp/logs/mmap-latency-4.log"),
        "3 1500000\n18446744073709551615 1500000\n",
    )
    .unwrap();
    let out = d.join("rec");
    let e = within(Duration::from_secs(30), move || {
        import_mmtests(&src, &out).unwrap_err().to_string()
    });
    assert!(
        e.contains("mmap-latency-4.log:2:") && e.contains("18446744073709551615"),
        "{e}"
    );
    assert!(e.contains("fix or delete the line"), "{e}");
    assert!(!d.join("rec").exists());
    // Counts that add up past the limit over several lines too.
    let src = d.join("src");
    let half = MAX_LATENCY_SAMPLES / 2 + 1;
    fs::write(
        src.join("stutterp/logs/mmap-latency-4.log"),
        format!("{half} 1500000\n{half} 1500000\n"),
    )
    .unwrap();
    let e = import_mmtests(&src, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("mmap-latency-4.log:2:"), "{e}");
    fs::remove_dir_all(&d).ok();
}

/// A MemTotal that overflows in bytes became `memory_bytes: 0` silently.
#[test]
fn an_overflowing_memtotal_is_an_error() {
    let d = tmp("memtotal");
    let src = d.join("src");
    copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
    let t = fs::read_to_string(src.join("tests-sysstate")).unwrap();
    let line = t
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .unwrap()
        .to_string();
    fs::write(
        src.join("tests-sysstate"),
        t.replace(&line, "MemTotal:       18446744073709551 kB"),
    )
    .unwrap();
    let e = import_mmtests(&src, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("MemTotal") && e.contains("corrupt"), "{e}");
    fs::remove_dir_all(&d).ok();
}

/// A vmstat value of 2^64-1 printed as "Direct pages scanned -1.00".
#[test]
fn a_vmstat_value_above_2_pow_63_is_refused() {
    assert!(parse_vmstat_line("pgscan_direct 18446744073709551615")
        .unwrap_err()
        .contains("2^63-1"));
    assert_eq!(
        parse_vmstat_line("pgscan_direct 9223372036854775807").unwrap(),
        Some(("pgscan_direct", i64::MAX as u64))
    );
}

/// A `tests-sysstate` bigger than any real one (here: a gzip that expands
/// past the ratio limit) is refused with a message saying so, not "(out of
/// memory)" after exhausting it.
#[test]
fn an_oversized_sysstate_is_refused_clearly() {
    let d = tmp("sysstate");
    let src = d.join("src");
    copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![b'\n'; 1 << 20]).unwrap();
    let member = enc.finish().unwrap();
    fs::remove_file(src.join("tests-sysstate")).unwrap();
    fs::write(src.join("tests-sysstate.gz"), member.repeat(512)).unwrap();
    let e = import_mmtests(&src, &d.join("rec"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tests-sysstate.gz") && e.contains("decompresses to more than"),
        "{e}"
    );
    fs::remove_dir_all(&d).ok();
}

/// `run.json` pointed at something endless or huge: read with a cap.
#[test]
fn an_oversized_run_json_is_refused() {
    let d = tmp("runjson");
    let rec = d.join("rec");
    let mut w = RecordWriter::create(&rec, RunMeta::new("r", Origin::Import, "k")).unwrap();
    w.vmstat_header(&["pgscan_direct"]).unwrap();
    w.finish().unwrap();
    let f = fs::File::create(rec.join("run.json")).unwrap();
    f.set_len(reader::MAX_RUN_JSON + 1).unwrap();
    let e = Record::open(&rec).unwrap_err().to_string();
    assert!(
        e.contains("run.json:1:") && e.contains("larger than 64 MiB"),
        "{e}"
    );
    fs::remove_dir_all(&d).ok();
}

/// A `time ::` line whose seconds overflow to infinity (`1e999`) or are
/// negative is refused at its line of `tests-sysstate`: it used to pass the
/// importer and fail at the end with "run.json values are not finite
/// numbers", naming the output directory instead of the input.
#[test]
fn an_infinite_time_is_refused_at_its_sysstate_line() {
    for bad in ["1e999", "-3", "NaN"] {
        let d = tmp(&format!("time-{bad}"));
        let src = d.join("src");
        copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
        let p = src.join("tests-sysstate");
        let text = fs::read_to_string(&p).unwrap();
        let text = text.replace("2277.67 elapsed", &format!("{bad} elapsed"));
        fs::write(&p, text).unwrap();
        let e = import_mmtests(&src, &d.join("rec"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tests-sysstate:47") && e.contains("finite, not negative"),
            "{bad}: {e}"
        );
        assert!(!d.join("rec").exists(), "{bad}: a record was left");
        fs::remove_dir_all(&d).ok();
    }
}
