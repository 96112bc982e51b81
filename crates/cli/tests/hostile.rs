//! Issue 22 through the binary: machines and specs with extreme values end
//! with exit 2 and a message naming the input and the fix, before anything
//! is allocated or written; a spec of 10,000 workers simulates and reports
//! in seconds. Each test failed before the fix.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "reclaimlab-hostile-cli-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn machine(memory_mib: u64, swap_mib: u64) -> String {
    format!(
        "name='m'\ncpus=2\nmemory_mib={memory_mib}\nswap_mib={swap_mib}\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n"
    )
}

const SPEC: &str = "name='s'\nduration_s=0.5\n[[worker]]\nkind='mmap-latency'\npages=64\n";

/// Runs `reclaimlab sim SPEC --machine M --out DIR ARGS`: asserts exit 2,
/// no panic, nothing written; returns stderr.
fn sim_refused(dir: &Path, machine_toml: &str, spec: &str, extra: &[&str]) -> String {
    let m = file(dir, "m.toml", machine_toml);
    let s = file(dir, "s.toml", spec);
    let out = dir.join("out");
    let o: Output = bin()
        .args(["sim", &s, "--machine", &m, "--kernel", "v5.16", "--out"])
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "{} was written", out.display());
    err
}

/// A machine declaring 2 GiB under `--max-memory 32M`: refused before it
/// boots, naming the machine, the estimate and the fix.
#[test]
fn a_machine_above_max_memory_is_refused() {
    let d = scratch("maxmem");
    let e = sim_refused(&d, &machine(2048, 0), SPEC, &["--max-memory", "32M"]);
    for w in [
        "m.toml",
        "2048 MiB",
        "needs about",
        "--max-memory",
        "memory_mib",
    ] {
        assert!(e.contains(w), "expected `{w}` in:\n{e}");
    }
    std::fs::remove_dir_all(&d).ok();
}

/// The largest machine the validator accepts (4 TiB, 4 TiB of swap) used
/// to abort with "memory allocation of N bytes failed" (SIGABRT); now it is
/// checked against the host's MemAvailable (24 GiB here, under 1 TiB on
/// any test host).
#[test]
fn the_largest_machine_is_checked_against_the_host() {
    let d = scratch("huge");
    let e = sim_refused(&d, &machine(4 << 20, 4 << 20), SPEC, &[]);
    assert!(
        e.contains("MemAvailable") && e.contains("needs about"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// Values without an upper bound before: swap_mib (32 TB asked), files,
/// size_mib, pages. Each refused at its line, with the accepted range.
#[test]
fn unbounded_values_are_refused_with_their_range() {
    let d = scratch("bounds");
    let e = sim_refused(&d, &machine(128, 33_554_432), SPEC, &[]);
    assert!(
        e.contains("m.toml:4:") && e.contains("swap_mib = 33554432") && e.contains("accepted"),
        "{e}"
    );
    for (field, spec) in [
        (
            "files = 4294967295",
            "kind='file-reader'\nfiles=4294967295\nfile_mib=1\nblock_kib=4\n",
        ),
        (
            "size_mib = 9223372036854775807",
            "kind='anon-hog'\nsize_mib=9223372036854775807\n",
        ),
        (
            "pages = 4294967295",
            "kind='mmap-latency'\npages=4294967295\n",
        ),
    ] {
        let spec = format!("name='s'\nduration_s=1\n[[worker]]\n{spec}");
        let e = sim_refused(&d, &machine(128, 0), &spec, &[]);
        assert!(
            e.contains("s.toml") && e.contains(field) && e.contains("accepted"),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&d).ok();
}

/// A spec of 10,000 workers: simulated in a few seconds, then the report's
/// "set up differently" comparison over its 130,000 settings took minutes
/// (quadratic). Now the whole command takes seconds.
#[test]
fn a_10000_worker_spec_simulates_and_reports_in_seconds() {
    let d = scratch("10k");
    let mut spec = String::from("name='many'\nduration_s=0.2\n");
    for _ in 0..10_000 {
        spec.push_str("[[worker]]\nkind='mmap-latency'\npages=1\nsleep_ms=1000\n");
    }
    let s = file(&d, "s.toml", &spec);
    let m = file(&d, "m.toml", &machine(256, 0));
    let out = d.join("out");
    let t = Instant::now();
    let o = bin()
        .args([
            "sim",
            &s,
            "--machine",
            &m,
            "--kernel",
            "v5.15,v5.16",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("reclaimlab report"));
    assert!(
        took < Duration::from_secs(120),
        "took {took:?}: the report is quadratic again?"
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn guest_only_run_options_are_refused_on_the_host() {
    // Refused before anything is set up: no root, cgroup or tracefs needed.
    for (opt, fix) in [
        (&["--guest-profile"][..], "--kernel debian:6.1"),
        (&["--thp", "never"][..], "transparent_hugepage/enabled"),
    ] {
        let out = bin().args(["run", "stutterp"]).args(opt).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opt:?}: {err}");
        assert!(
            err.contains("only for guest runs") && err.contains(fix),
            "{opt:?}: {err}"
        );
    }
}
