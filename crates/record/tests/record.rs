//! Write → open round trips, atomicity, and validation errors.

use std::fs;
use std::path::{Path, PathBuf};

use reclaimlab_record::*;

mod common;
use common::*;

fn meta() -> RunMeta {
    let mut m = RunMeta::new("v5.16", Origin::Sim, "v5.16");
    m.workload = Workload {
        name: "stutterp".into(),
        spec: "stutterp".into(),
    };
    m.machine = Machine {
        name: "small".into(),
        cpus: 2,
        nodes: 1,
        memory_bytes: 1 << 30,
        hz: Some(250),
        swap_bytes: 1 << 30,
        devices: vec![],
    };
    m.steps = vec![
        Step {
            step: 4,
            start_s: 0.0,
            end_s: 10.0,
        },
        Step {
            step: 6,
            start_s: 10.0,
            end_s: 20.0,
        },
    ];
    m.seed = Some(1);
    m.capture.trace = true;
    m.capture.events = vec!["vmscan:mm_vmscan_throttled".into()];
    m
}

const L1: &str = "           <...>-1234  [001] .....  12.345678: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK";
const L2: &str = "         kswapd0-51    [000] .....  12.400000: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000";

fn write_sample(dir: &Path) -> PathBuf {
    let out = dir.join("rec");
    let mut w = RecordWriter::create(&out, meta()).unwrap();
    w.vmstat_header(&["nr_free_pages", "pgscan_direct"])
        .unwrap();
    w.vmstat_row(0.0, 4, &[1000, 0]).unwrap();
    w.vmstat_row(10.0, 4, &[900, 50]).unwrap();
    w.vmstat_row(10.0, 6, &[900, 50]).unwrap();
    w.vmstat_row(20.0, 6, &[800, 170]).unwrap();
    w.latency(4, "mmap", 1.5, 23456.0).unwrap();
    w.latency(4, "mmap", 2.5, 0.25).unwrap();
    w.latency(6, "mmap", 12.0, 100.0).unwrap();
    w.trace_line(L1).unwrap();
    w.trace_line(L2).unwrap();
    w.meta_mut().duration = Duration {
        user_s: 1.0,
        system_s: 2.0,
        elapsed_s: 20.0,
    };
    assert!(!out.exists(), "final dir must not exist before finish");
    w.finish().unwrap()
}

#[test]
fn round_trip() {
    let d = tmp("rt");
    let out = write_sample(&d);
    let r = Record::open(&out).unwrap();
    assert_eq!(r.meta().duration.elapsed_s, 20.0);
    assert_eq!(r.meta().name, "v5.16");
    assert_eq!(r.vmstat().counters, vec!["nr_free_pages", "pgscan_direct"]);
    assert_eq!(r.vmstat().rows.len(), 4);
    assert_eq!(r.vmstat().delta("pgscan_direct"), Some(170));
    assert_eq!(r.vmstat().delta("nr_free_pages"), Some(-200));
    assert_eq!(r.vmstat().delta_in_step("pgscan_direct", 6), Some(120));
    assert_eq!(r.latency().len(), 3);
    assert_eq!(r.latency_values("mmap", 4), vec![23456.0, 0.25]);
    assert_eq!(
        r.latency_series(),
        vec![("mmap".to_string(), 4), ("mmap".to_string(), 6)]
    );
    let mut t = r.trace_lines().unwrap().unwrap();
    let a = t.next_line().unwrap().unwrap();
    assert_eq!(a.raw(), L1);
    assert_eq!(a.usec_delayed(), Some(4000));
    let b = t.next().unwrap().unwrap();
    assert_eq!(b.get().comm(), "kswapd0");
    assert!(t.next().is_none());
    // No partial directory left behind.
    let left: Vec<_> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("rec")]);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn deterministic_bytes() {
    let d1 = tmp("det1");
    let d2 = tmp("det2");
    let a = write_sample(&d1);
    let b = write_sample(&d2);
    for f in ["run.json", "vmstat.csv", "latency.csv", "trace.txt.gz"] {
        assert_eq!(
            fs::read(a.join(f)).unwrap(),
            fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    fs::remove_dir_all(&d1).unwrap();
    fs::remove_dir_all(&d2).unwrap();
}

#[test]
fn drop_without_finish_leaves_nothing() {
    let d = tmp("drop");
    {
        let mut w = RecordWriter::create(&d.join("rec"), meta()).unwrap();
        w.trace_line(L1).unwrap();
        w.latency(4, "mmap", 0.0, 1.0).unwrap();
    }
    assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn replaces_existing_record_only_at_finish() {
    let d = tmp("replace");
    let out = write_sample(&d);
    let mut m = meta();
    m.name = "second".into();
    let w = RecordWriter::create(&out, m).unwrap();
    assert_eq!(Record::open(&out).unwrap().meta().name, "v5.16");
    w.finish().unwrap();
    assert_eq!(Record::open(&out).unwrap().meta().name, "second");
    assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
    // A non-record directory is never replaced.
    let other = d.join("precious");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("data"), "x").unwrap();
    let err = RecordWriter::create(&other, meta())
        .unwrap()
        .finish()
        .unwrap_err();
    assert!(err.to_string().contains("not a run record"), "{err}");
    assert!(other.join("data").exists());
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn corrupt_run_json() {
    let d = tmp("json");
    let out = write_sample(&d);
    fs::write(
        out.join("run.json"),
        "{ \"schema\": \"reclaimlab.run/1\", \"name\": ",
    )
    .unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(
        e.contains("run.json") && e.contains("not valid JSON"),
        "{e}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&meta().to_json()).unwrap();
    v.as_object_mut().unwrap().remove("steps");
    fs::write(out.join("run.json"), v.to_string()).unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(e.contains("run.json") && e.contains("steps"), "{e}");
    fs::remove_file(out.join("run.json")).unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(e.contains("run.json") && e.contains("missing"), "{e}");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_vmstat_row() {
    let d = tmp("vm");
    let out = write_sample(&d);
    let p = out.join("vmstat.csv");
    let text = fs::read_to_string(&p).unwrap();
    fs::write(&p, text.replace("10.000000,4,900,50", "10.000000,4,900")).unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(e.contains("vmstat.csv:3:") && e.contains("columns"), "{e}");
    fs::write(&p, text.replace("10.000000,4,900,50", "10.000000,4,900,-5")).unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(
        e.contains("vmstat.csv:3:") && e.contains("pgscan_direct"),
        "{e}"
    );
    fs::write(&p, text.replace("t_s,step", "time,step")).unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(e.contains("vmstat.csv:1:"), "{e}");
    fs::write(&p, &text).unwrap();
    let p = out.join("latency.csv");
    let text = fs::read_to_string(&p).unwrap();
    fs::write(
        &p,
        text.replace("4,mmap,2.500000,0.25", "4,mmap,2.500000,abc"),
    )
    .unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(
        e.contains("latency.csv:3:") && e.contains("value_us"),
        "{e}"
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn truncated_gzip_names_the_file() {
    let d = tmp("gz");
    let out = d.join("rec");
    let mut w = RecordWriter::create(&out, meta()).unwrap();
    // Enough varied lines that the compressed stream is several blocks.
    for i in 0..200_000u64 {
        w.trace_line(&format!("  fio-{} [00{}] ..... {}.{:06}: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed={} reason=VMSCAN_THROTTLE_WRITEBACK", 1000 + i % 97, i % 4, i / 1000, i % 1_000_000, (i * 7919) % 100_000)).unwrap();
    }
    w.finish().unwrap();
    let p = out.join("trace.txt.gz");
    let bytes = fs::read(&p).unwrap();
    fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let r = Record::open(&out).unwrap();
    let mut t = r.trace_lines().unwrap().unwrap();
    let mut n = 0;
    let err = loop {
        match t.next_line() {
            Some(Ok(_)) => n += 1,
            Some(Err(e)) => break e,
            None => panic!("truncated gzip read to the end without an error"),
        }
    };
    let s = err.to_string();
    assert!(
        s.contains("trace.txt.gz:") && s.contains("truncated"),
        "{s}"
    );
    assert!(n > 0 && n < 200_000, "{n}");
    assert!(t.next_line().is_none());
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn garbled_trace_line_can_be_skipped() {
    let d = tmp("garbled");
    let out = d.join("rec");
    let mut w = RecordWriter::create(&out, meta()).unwrap();
    w.trace_line("# tracer: nop").unwrap();
    w.trace_line(L1).unwrap();
    w.trace_line("this is not a trace line").unwrap();
    w.trace_line(L2).unwrap();
    w.finish().unwrap();
    let r = Record::open(&out).unwrap();
    let mut t = r.trace_lines().unwrap().unwrap();
    assert!(t.next_line().unwrap().is_ok());
    let e = t.next_line().unwrap().unwrap_err().to_string();
    assert!(e.contains("trace.txt.gz:3:"), "{e}");
    assert_eq!(
        t.next_line().unwrap().unwrap().event(),
        "writeback_congestion_wait"
    );
    assert!(t.next_line().is_none());
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn no_trace_is_none() {
    let d = tmp("notrace");
    let out = d.join("rec");
    let mut m = meta();
    m.capture.trace = false;
    m.capture.notes.push("no tracefs".into());
    let w = RecordWriter::create(&out, m).unwrap();
    w.finish().unwrap();
    let r = Record::open(&out).unwrap();
    assert!(r.trace_lines().unwrap().is_none());
    assert!(r.vmstat().rows.is_empty());
    assert_eq!(r.vmstat().delta("x"), None);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn second_writer_on_same_record_is_refused() {
    let d = tmp("twice");
    let out = d.join("rec");
    let w1 = RecordWriter::create(&out, meta()).unwrap();
    let e = RecordWriter::create(&out, meta())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("another writer"), "{e}");
    w1.finish().unwrap();
    // Once finished, the name is free again.
    RecordWriter::create(&out, meta())
        .unwrap()
        .finish()
        .unwrap();
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn non_finite_meta_is_refused_not_written() {
    let d = tmp("nan");
    let out = d.join("rec");
    let mut w = RecordWriter::create(&out, meta()).unwrap();
    w.meta_mut().duration.elapsed_s = f64::NAN;
    let e = w.finish().unwrap_err().to_string();
    assert!(e.contains("duration.elapsed_s"), "{e}");
    assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
    let mut w = RecordWriter::create(&out, meta()).unwrap();
    assert!(w.latency(4, "mmap", 0.0, f64::INFINITY).is_err());
    assert!(w.latency(4, "a,b", 0.0, 1.0).is_err());
    assert!(w.vmstat_row(0.0, 4, &[1]).is_err(), "row before header");
    w.vmstat_header(&["a", "b"]).unwrap();
    assert!(w.vmstat_row(0.0, 4, &[1]).is_err(), "short row");
    assert!(w.trace_line("a\nb").is_err());
    drop(w);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn missing_trace_when_meta_says_captured() {
    let d = tmp("mtrace");
    let out = write_sample(&d);
    fs::remove_file(out.join("trace.txt.gz")).unwrap();
    let e = Record::open(&out).unwrap_err().to_string();
    assert!(
        e.contains("trace.txt.gz") && e.contains("capture.trace"),
        "{e}"
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn empty_trace_when_captured_but_silent() {
    let d = tmp("silent");
    let out = d.join("rec");
    RecordWriter::create(&out, meta())
        .unwrap()
        .finish()
        .unwrap();
    let r = Record::open(&out).unwrap();
    let mut t = r.trace_lines().unwrap().unwrap();
    assert!(t.next_line().is_none());
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn trace_cut_at_a_member_boundary_is_detected() {
    let d = tmp("member");
    let out = d.join("rec");
    let mut w = RecordWriter::create(&out, meta()).unwrap();
    // Over 1 MiB of text: at least two gzip members.
    for i in 0..20_000u64 {
        w.trace_line(&format!("  fio-{} [001] ..... {}.{:06}: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK", 100 + i % 7, i / 1000, i % 1000)).unwrap();
    }
    w.finish().unwrap();
    let p = out.join("trace.txt.gz");
    let bytes = fs::read(&p).unwrap();
    // The second member starts at the next gzip header after the first.
    let second = (10..bytes.len() - 3)
        .find(|&i| bytes[i..i + 4] == [0x1f, 0x8b, 8, 0])
        .expect("two members");
    fs::write(&p, &bytes[..second]).unwrap();
    let r = Record::open(&out).unwrap();
    assert_eq!(r.meta().capture.trace_lines, 20_000);
    let mut t = r.trace_lines().unwrap().unwrap();
    let mut n = 0;
    let err = loop {
        match t.next_line() {
            Some(Ok(_)) => n += 1,
            Some(Err(e)) => break e.to_string(),
            None => panic!("a cut at a member boundary went unnoticed"),
        }
    };
    assert!(n > 0 && n < 20_000);
    assert!(
        err.contains("trace.txt.gz:") && err.contains("records 20000"),
        "{err}"
    );
    fs::remove_dir_all(&d).unwrap();
}

/// An OOM kill written before `reason` and `source` existed still reads
/// (both empty), and a kill without them writes no such keys, so older
/// readers see the record they knew.
#[test]
fn oom_kill_without_reason_reads_and_writes_as_before() {
    let old = r#"{"t_s":1.5,"step":1,"pid":7,"comm":"memory-hog","cgroup":"","constraint":"CONSTRAINT_NONE","victim_kib":4096,"free_kib":1024}"#;
    let k: reclaimlab_record::OomKillRecord = serde_json::from_str(old).unwrap();
    assert_eq!((k.reason.as_str(), k.source.as_str()), ("", ""));
    assert_eq!(serde_json::to_string(&k).unwrap(), old);
    let new = reclaimlab_record::OomKillRecord {
        reason: "no_progress_loops=17 > MAX_RECLAIM_RETRIES=16".into(),
        ..k
    };
    let text = serde_json::to_string(&new).unwrap();
    assert!(
        text.ends_with(r#""reason":"no_progress_loops=17 > MAX_RECLAIM_RETRIES=16"}"#),
        "{text}"
    );
    let back: reclaimlab_record::OomKillRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(back, new);
}
