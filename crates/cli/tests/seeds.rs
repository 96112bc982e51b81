//! Seeds and reports, end to end through the binary (issue 3, "Must show"):
//! the same seed gives the same report bytes, and two seeds of one kernel
//! rarely differ significantly.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reclaimlab-seeds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `reclaimlab sim stutterp` on the small machine, short steps, one kernel.
fn sim(out: &Path, seed: u32, extra: &[&str]) {
    let o = bin()
        .args([
            "sim",
            "stutterp",
            "--machine",
            "small",
            "--kernel",
            "v5.16",
            "--set",
            "stutterp.duration_s=20",
        ])
        .args(extra)
        .args(["--seed", &seed.to_string()])
        .arg("--out")
        .arg(out)
        .output()
        .expect("run reclaimlab sim");
    assert!(
        o.status.success(),
        "sim failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn report(dirs: &[&Path], json: bool) -> Vec<u8> {
    let mut c = bin();
    c.arg("report");
    if json {
        c.arg("--json");
    }
    let o = c.args(dirs).output().expect("run reclaimlab report");
    assert!(
        o.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Determinism through the whole pipeline: simulate, write the record,
/// render the report and the HTML; again from scratch into the same place.
#[test]
fn same_seed_gives_the_same_report_bytes() {
    let out = scratch("same");
    sim(&out, 7, &[]);
    let run = out.join("v5.16");
    let first = (
        report(&[&run], false),
        report(&[&run], true),
        std::fs::read(out.join("report.html")).unwrap(),
        std::fs::read(run.join("trace.txt.gz")).unwrap(),
        std::fs::read(run.join("vmstat.csv")).unwrap(),
    );
    std::fs::remove_dir_all(&out).unwrap();
    sim(&out, 7, &[]);
    let second = (
        report(&[&run], false),
        report(&[&run], true),
        std::fs::read(out.join("report.html")).unwrap(),
        std::fs::read(run.join("trace.txt.gz")).unwrap(),
        std::fs::read(run.join("vmstat.csv")).unwrap(),
    );
    assert!(first.0 == second.0, "text report differs");
    assert!(first.1 == second.1, "JSON report differs");
    assert!(first.2 == second.2, "HTML report differs");
    assert!(first.3 == second.3, "trace differs");
    assert!(first.4 == second.4, "vmstat differs");
    std::fs::remove_dir_all(&out).unwrap();
}

/// Two seeds of one kernel are two samples of the same system: with a
/// p < 0.10 test, about one Amean row in ten may be marked by chance, and
/// many more would mean the seed changes the system, not the sample.
///
/// Run at two workers only, where the small machine has one steady state
/// (measured, 12 seeds of 20 s steps: Amean 85.8–87.7 ms). At four it has
/// two since the run queues are per CPU (2026-11-28): one of the two hogs
/// stays resident and takes a CPU (Amean ~94 ms, 8 seeds of 12) or
/// neither does (~87 ms), as the real host's pair splits one resident,
/// one thrashing (docs/fidelity.md, "A run queue per CPU").
/// From five workers up it had two before that already: after
/// the hogs start, the file LRU either recovers (~75 K pages) or stays
/// collapsed, where the dirty limit (a share of free + file pages) stays
/// near zero and holds the writers back, which keeps it collapsed. Which
/// one a run settles in depends on the seed, and the mmap means of the two
/// differ by 10-15 %, so there two seeds do differ significantly — a
/// property of the simulated system, said in the README, not of the
/// statistics this test checks.
#[test]
fn two_seeds_of_one_kernel_rarely_show_significance() {
    let dirs: Vec<PathBuf> = (1..=12)
        .map(|s| {
            let d = scratch(&format!("seed{s}"));
            sim(&d, s, &["--set", "stutterp.workers=2"]);
            d.join("v5.16")
        })
        .collect();
    let mut rows = 0;
    let mut significant = 0;
    for pair in [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11)] {
        let json = report(&[&dirs[pair.0], &dirs[pair.1]], true);
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let runs = v["runs"].as_array().expect("runs array");
        for (label, op) in runs[1]["latency"].as_object().expect("latency object") {
            let Some(vs) = op.get("vs_baseline") else {
                continue;
            };
            rows += 1;
            if vs["significant"].as_bool() == Some(true) {
                significant += 1;
                eprintln!("significant by chance: {label} in pair {pair:?}");
            }
        }
    }
    assert!(
        rows >= 6,
        "expected 6 pairs of Amean comparisons, got {rows}"
    );
    assert!(
        significant <= 1,
        "{significant} of {rows} seed-vs-seed Amean rows significant"
    );
    for d in dirs {
        std::fs::remove_dir_all(d.parent().unwrap()).unwrap();
    }
}
