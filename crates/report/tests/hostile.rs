//! Issue 22: the report survives hostile records — no panic, no hang,
//! bounded memory. Each test failed (panicked, hung or took minutes) before
//! the fix and passes within seconds after it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reclaimlab_report::input::RunInput;
use reclaimlab_report::{build_report, load_run, render_html, render_json, render_text, Options};

fn fixture_base() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reclaimlab-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A copy of fixture `base` in `dir`, its run.json changed by `edit`, its
/// trace replaced by `trace` (raw bytes, gzipped here unless they already are).
fn record(dir: &Path, edit: impl FnOnce(&mut serde_json::Value), trace: &[u8]) -> PathBuf {
    for e in std::fs::read_dir(fixture_base()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let meta = dir.join("run.json");
    let mut j: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    edit(&mut j);
    std::fs::write(&meta, serde_json::to_vec(&j).unwrap()).unwrap();
    let gz = if trace.starts_with(&[0x1f, 0x8b]) {
        trace.to_vec()
    } else {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(trace).unwrap();
        enc.finish().unwrap()
    };
    std::fs::write(dir.join("trace.txt.gz"), gz).unwrap();
    dir.to_path_buf()
}

/// Runs `f` on a thread; fails the test if it takes longer than `limit`
/// (a hang before the fix must fail the test, not stall the suite).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?} (a hang?)"))
}

const STALL: &str = "         kswapd0-51    [000] .....  1.000000: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK";

/// A 70,000-character field in every place text is laid out: run name,
/// parameter value, latency metric, stall reason. Before: "Formatting
/// argument out of range" (a width over 65,535). After: cut with `…`.
#[test]
fn a_70000_character_field_is_cut_not_a_panic() {
    let dir = scratch("wide");
    let long = "x".repeat(70_000);
    let trace = format!(
        "{}\n{STALL}\n",
        STALL.replace("VMSCAN_THROTTLE_WRITEBACK", &long)
    );
    let a = dir.join("a");
    let b = dir.join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let name = long.clone();
    record(
        &a,
        |j| {
            j["name"] = serde_json::json!(name);
            j["params"]["vm.dirty_ratio"] = serde_json::json!("1".repeat(70_000));
            j["params"][&"k".repeat(70_000)] = serde_json::json!("1");
        },
        trace.as_bytes(),
    );
    record(&b, |_| {}, trace.as_bytes());
    for d in [&a, &b] {
        let mut csv = std::fs::read_to_string(d.join("latency.csv")).unwrap();
        csv.push_str(&format!("4,{},1.0,100.0\n", "m".repeat(70_000)));
        std::fs::write(d.join("latency.csv"), csv).unwrap();
    }
    let runs: Vec<RunInput> = [&a, &b].iter().map(|d| load_run(d).unwrap()).collect();
    let r = build_report(&runs, Options::default());
    let text = render_text(&r);
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
    let wide_line = text
        .lines()
        .find(|l| l.chars().count() == widest)
        .unwrap_or("");
    assert!(
        widest < 1_000,
        "a line of {widest} characters: {}",
        wide_line.chars().take(120).collect::<String>()
    );
    assert!(
        text.contains("xxx…"),
        "the run name is cut with an ellipsis"
    );
    // The other formats carry the values whole.
    assert!(String::from_utf8_lossy(&render_json(&r)).contains(&long));
    // The HTML page cuts what it shows as the text report does, and keeps
    // the whole value on hover only (`title="…"` attributes).
    let html = String::from_utf8(render_html(&r)).unwrap();
    let mut shown = String::with_capacity(html.len());
    let mut rest = html.as_str();
    while let Some(i) = rest.find("title=\"") {
        shown.push_str(&rest[..i]);
        let after = &rest[i + 7..];
        rest = &after[after.find('"').map_or(after.len(), |j| j + 1)..];
    }
    shown.push_str(rest);
    for (what, s) in [("run name", "x"), ("parameter", "1"), ("metric", "m")] {
        let run = s.repeat(1_000);
        assert!(
            !shown.contains(&run),
            "the HTML shows a {what} of 1,000 characters or more"
        );
    }
    assert!(
        html.contains(&format!("title=\"{long}\"")),
        "the whole name on hover"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A 1.5 MiB line in the trace. Before: the report's chunk producer
/// re-copied the carried partial line forever. After: the line is skipped,
/// counted and named, and the lines after it are read.
#[test]
fn a_one_and_a_half_mib_line_is_skipped_not_a_hang() {
    for (tag, tail) in [("nl", "\n"), ("eof", "")] {
        let dir = scratch(&format!("long-{tag}"));
        let long = "y".repeat(3 << 19);
        let trace = format!("{STALL}\n{long}\n{STALL}\n{long}{tail}");
        let d = record(&dir, |_| {}, trace.as_bytes());
        let run = within(Duration::from_secs(30), move || load_run(&d).unwrap());
        assert_eq!(run.trace.stall_events, 2, "{tag}");
        assert_eq!(
            run.trace.bad_lines, 2,
            "{tag}: {:?}",
            run.trace.bad_examples
        );
        assert!(
            run.trace.bad_examples[0].contains("trace.txt.gz:2: a line longer than 1 MiB"),
            "{:?}",
            run.trace.bad_examples
        );
        assert_eq!(run.trace.lines, 4);
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// 1 GiB of zeros as `trace.txt.gz` (1 MiB members, 1 MiB of gzip in all).
/// Before: minutes of decompression. After: an error naming the file once it
/// has expanded past the ratio limit, in well under a second of inflating.
#[test]
fn a_gzip_bomb_is_refused() {
    let dir = scratch("bomb");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![0u8; 1 << 20]).unwrap();
    let member = enc.finish().unwrap();
    let bomb: Vec<u8> = member.repeat(1024);
    let d = record(&dir, |_| {}, &bomb);
    let t = Instant::now();
    let e = within(Duration::from_secs(60), move || load_run(&d).unwrap_err());
    let msg = e.to_string();
    assert!(
        msg.contains("trace.txt.gz") && msg.contains("decompresses to more than"),
        "{msg}"
    );
    assert!(msg.contains("zcat"), "the fix is named: {msg}");
    eprintln!("refused in {:.2} s", t.elapsed().as_secs_f64());
    std::fs::remove_dir_all(&dir).ok();
}

/// The settings of a spec of 10,000 workers (13 each): "set up differently"
/// used to compare them in O(n²) (minutes); it is linear now.
#[test]
fn settings_of_10000_workers_compare_in_linear_time() {
    let settings = |seed: &str| -> Vec<(String, String)> {
        let mut v = vec![("seed".to_string(), seed.to_string())];
        for w in 1..=10_000 {
            for f in [
                "kind",
                "count",
                "size_mib",
                "files",
                "file_mib",
                "block_kib",
                "pattern",
                "pages",
                "sleep_ms",
                "sparse",
                "in_warmup",
                "passes",
                "shared",
            ] {
                v.push((format!("spec.worker{w}.{f}"), format!("{w}{f}")));
            }
        }
        v
    };
    let run = |name: &str, seed: &str| {
        let mut r = RunInput::default();
        r.meta.name = name.into();
        r.meta.settings = settings(seed);
        r
    };
    let mut b = run("b", "2");
    b.meta.settings[77].1 = "changed".into();
    let runs = vec![run("a", "1"), b];
    let r = within(Duration::from_secs(30), move || {
        build_report(&runs, Options::default())
    });
    let names: Vec<&str> = r.differences.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["seed", r.differences[1].name.as_str()]);
    assert_eq!(r.differences[1].values[1], "changed");
    assert!(render_text(&r).contains("changed"));
}

/// A latency.csv naming a new metric on every row (50,000): the latency
/// table and the "what is comparable" pass looked each up in a list
/// (quadratic, minutes); now by index.
#[test]
fn many_latency_metrics_report_in_linear_time() {
    let run = |name: &str| {
        let mut r = RunInput::default();
        r.meta.name = name.into();
        r.latency = (0..50_000)
            .map(|i| reclaimlab_report::LatencySample {
                step: 1,
                metric: format!("m{i}"),
                t_s: 0.0,
                value_us: 1000.0 + f64::from(i),
            })
            .collect();
        r
    };
    let runs = vec![run("a"), run("b")];
    let (r, text) = within(Duration::from_secs(60), move || {
        let r = build_report(&runs, Options::default());
        let t = render_text(&r);
        (r, t)
    });
    assert_eq!(r.comparable.compared.len(), 50_000);
    assert!(
        text.lines()
            .any(|l| l.starts_with("Amean ") && l.contains(" m49999-1 ")),
        "the last metric is in the table"
    );
}
