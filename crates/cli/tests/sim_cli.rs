//! `reclaimlab sim` and `list` through the binary: bad input ends with exit
//! code 2, a message naming the input and what is accepted, no panic and no
//! record; `--sweep` over kernels × values gives one record per run, the same
//! bytes on every invocation. Tiny machine and workload: each case runs well
//! under a second.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reclaimlab-simcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 96 MiB, 2 CPUs, one fast disk (as `crates/workload/tests/behaviour.rs`).
const TINY_MACHINE: &str = "name='tiny'\ncpus=2\nmemory_mib=96\nswap_mib=128\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";

/// Two simulated seconds of writers, hogs and the latency probe: enough to
/// make reclaim and dirty throttling depend on `vm.dirty_ratio`.
const TINY_SPEC: &str = "name='tiny-mix'\nduration_s=1.5\nwarmup_s=0.5\n\
[[worker]]\nkind='file-writer'\ncount=2\nfiles=2\nfile_mib=12\n\
[[worker]]\nkind='anon-hog'\ncount=2\nsize_mib=52\n\
[[worker]]\nkind='mmap-latency'\npages=1024\n";

/// Writes `text` to `dir/name` and returns the path as a string.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Every `run.json` under `dir` (any depth).
fn run_jsons(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            found.extend(run_jsons(&p));
        } else if p.file_name().is_some_and(|n| n == "run.json") {
            found.push(p);
        }
    }
    found
}

/// Runs `reclaimlab ARGS`; asserts exit code 2, no panic, nothing recorded
/// under `out`; returns stderr.
fn fails(args: &[&str], out: &Path) -> String {
    let o: Output = bin().args(args).output().expect("run reclaimlab");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?}: exit code; stderr:\n{err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: panicked:\n{err}");
    assert!(
        run_jsons(out).is_empty(),
        "{args:?}: a record was written under {}",
        out.display()
    );
    assert!(
        !out.join("report.html").exists(),
        "{args:?}: a report was written"
    );
    err
}

/// `sim` of the tiny spec (or `workload`) on the tiny machine (unless `extra`
/// has a `--machine`) in `dir`, output to `dir/out`, plus `extra`.
fn sim_fails(dir: &Path, workload: Option<&str>, extra: &[&str]) -> String {
    let machine = file(dir, "tiny.toml", TINY_MACHINE);
    let spec = file(dir, "spec.toml", TINY_SPEC);
    let out = dir.join("out");
    let mut args = vec!["sim", workload.unwrap_or(&spec)];
    if !extra.contains(&"--machine") {
        args.extend_from_slice(&["--machine", &machine]);
    }
    args.extend_from_slice(extra);
    let out_s = out.to_str().unwrap();
    args.extend_from_slice(&["--out", out_s]);
    fails(&args, &out)
}

fn has_all(err: &str, want: &[&str]) {
    for w in want {
        assert!(err.contains(w), "expected `{w}` in:\n{err}");
    }
}

#[test]
fn unknown_set_name_names_the_closest_parameter() {
    let d = scratch("unknown-set");
    let e = sim_fails(&d, None, &["--set", "vm.dirty_ration=30"]);
    has_all(
        &e,
        &[
            "--set vm.dirty_ration=30",
            "did you mean `vm.dirty_ratio`",
            "list params",
        ],
    );
    let e = sim_fails(&d, None, &["--set", "throttle.noprogress.timeout=4000"]);
    has_all(&e, &["did you mean `throttle.noprogress.timeout_us`"]);
    let e = sim_fails(&d, None, &["--set", "stutterp.duraton_s=3"]);
    has_all(&e, &["did you mean `stutterp.duration_s`"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn out_of_range_and_malformed_set_say_what_is_accepted() {
    let d = scratch("range-set");
    let e = sim_fails(&d, None, &["--set", "vm.dirty_ratio=500"]);
    has_all(&e, &["vm.dirty_ratio", "500", "accepted: 1..=100"]);
    let e = sim_fails(&d, None, &["--set", "vm.swappiness=lots"]);
    has_all(&e, &["`lots` is not a number", "0..=200"]);
    let e = sim_fails(&d, None, &["--set", "vm.swappiness=1.5"]);
    has_all(&e, &["1.5", "0..=200"]);
    let e = sim_fails(&d, Some("stutterp"), &["--set", "stutterp.readers=2"]);
    has_all(&e, &["stutterp.readers", "0 or 1"]);
    let e = sim_fails(&d, None, &["--set", "policy.noprogress=rc2"]);
    has_all(
        &e,
        &[
            "--set policy.noprogress=rc2",
            "accepted: none, rc1, final, backoff",
        ],
    );
    let e = sim_fails(
        &d,
        None,
        &["--sweep", "policy.too_many_isolated=msleep,nap"],
    );
    has_all(&e, &["`nap` is not accepted", "throttle_isolated"]);
    let e = sim_fails(&d, None, &["--set", "policy.noprogres=rc1"]);
    has_all(&e, &["did you mean `policy.noprogress`"]);
    for bad in ["vm.dirty_ratio", "vm.dirty_ratio:30", ""] {
        let e = sim_fails(&d, None, &["--set", bad]);
        has_all(&e, &["expected NAME=VALUE", "--set vm.dirty_ratio=30"]);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unknown_or_repeated_kernel_lists_the_profiles() {
    let d = scratch("kernel");
    let e = sim_fails(&d, None, &["--kernel", "v5.15,v5.99"]);
    has_all(
        &e,
        &[
            "--kernel v5.99",
            "unknown kernel profile",
            "v2.6.36, v2.6.37, v4.16, v4.17, v5.8, v5.9, v5.10, v5.15, reclaimcongest-v2, v5.16-rc1, v5.16, v6.1, v6.18, none",
        ],
    );
    let e = sim_fails(&d, None, &["--kernel", "v5.16,v5.16"]);
    has_all(&e, &["`v5.16` is given twice"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_machine_files_name_the_file_line_and_what_is_accepted() {
    let d = scratch("machine");
    let syntax = file(
        &d,
        "syntax.toml",
        "name='m'\ncpus=2\nmemory_mib=96\n[[devices]\nname='sda'\n",
    );
    let e = sim_fails(&d, None, &["--machine", &syntax]);
    has_all(&e, &[&syntax, "line 4", "invalid table header"]);
    let typo = file(&d, "typo.toml", &TINY_MACHINE.replace("cpus=2", "cpu=2"));
    let e = sim_fails(&d, None, &["--machine", &typo]);
    has_all(&e, &[&typo, "line 2", "unknown field `cpu`", "cpus"]);
    // Impossible machines: the message names the value and the accepted range.
    for (name, from, to, want) in [
        (
            "no-cpus",
            "cpus=2",
            "cpus=0",
            &["cpus = 0", "accepted: 1..=4096"][..],
        ),
        (
            "no-memory",
            "memory_mib=96",
            "memory_mib=0",
            &["memory_mib = 0", "accepted: 64..="][..],
        ),
        (
            "swap-nowhere",
            "swap_mib=128",
            "swap_mib=128\nswap_device='sdb'",
            &["swap_device = `sdb`", "not one of the devices"][..],
        ),
    ] {
        let m = file(&d, &format!("{name}.toml"), &TINY_MACHINE.replace(from, to));
        let e = sim_fails(&d, None, &["--machine", &m]);
        has_all(&e, want);
    }
    let e = sim_fails(&d, None, &["--machine", "no-such-machine"]);
    has_all(
        &e,
        &["no-such-machine", "neither a built-in machine", "small"],
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_workload_specs_name_file_and_line() {
    let d = scratch("spec");
    let kind = file(
        &d,
        "kind.toml",
        "name='w'\nduration_s=1\n[[worker]]\nkind='anon-hogg'\nsize_mib=8\n",
    );
    let e = sim_fails(&d, Some(&kind), &[]);
    has_all(
        &e,
        &[
            &kind,
            "line 4",
            "unknown variant `anon-hogg`",
            "expected one of `anon-hog`, `file-writer`",
        ],
    );
    let missing = file(
        &d,
        "missing.toml",
        "name='w'\n[[worker]]\nkind='anon-hog'\nsize_mib=8\n",
    );
    let e = sim_fails(&d, Some(&missing), &[]);
    has_all(&e, &[&missing, "line 1", "missing field `duration_s`"]);
    let no_size = file(
        &d,
        "nosize.toml",
        "name='w'\nduration_s=1\n[[worker]]\nkind='anon-hog'\n",
    );
    let e = sim_fails(&d, Some(&no_size), &[]);
    has_all(&e, &[&no_size, "worker #1", "size_mib is required"]);
    let e = sim_fails(&d, Some("no-such-workload"), &[]);
    has_all(
        &e,
        &[
            "no-such-workload",
            "not a built-in workload (stutterp, memcg-congestion, usb-stick-2010, fsmark-mlock, mapped-file-stream, fsmark-mlock-1g)",
            "list workloads",
        ],
    );
    // What a spec asks of the machine: a device it has, cgroup limits
    // within its memory, known cgroups (exit 2, nothing written).
    let dev = file(
        &d,
        "dev.toml",
        "name='w'\nduration_s=1\n[[worker]]\nkind='file-reader'\nfile_mib=4\ndevice='sdz'\n",
    );
    let e = sim_fails(&d, Some(&dev), &[]);
    has_all(
        &e,
        &[
            &dev,
            "worker #1",
            "device = `sdz` is not a device of machine",
        ],
    );
    let big = file(
        &d,
        "big.toml",
        "name='w'\nduration_s=1\n[[cgroup]]\nname='c'\nmemory_max='64G'\n[[worker]]\nkind='anon-hog'\nsize_mib=8\ncgroup='c'\n",
    );
    let e = sim_fails(&d, Some(&big), &[]);
    has_all(&e, &[&big, "cgroup #1 (`c`)", "more than the machine's"]);
    let stray = file(
        &d,
        "stray.toml",
        "name='w'\nduration_s=1\n[[worker]]\nkind='anon-hog'\nsize_mib=8\ncgroup='nope'\n",
    );
    let e = sim_fails(&d, Some(&stray), &[]);
    has_all(&e, &[&stray, "cgroup = `nope` is not a [[cgroup]]"]);
    // mlock (issue 19): more than the machine, more than its cgroup, and
    // fs-create of files with data, which the simulator does not model.
    let ml = file(
        &d,
        "ml.toml",
        "name='w'\nduration_s=1\n[[worker]]\nkind='mlock'\nsize_mib=4194304\n",
    );
    let e = sim_fails(&d, Some(&ml), &[]);
    has_all(
        &e,
        &[&ml, "worker #1", "mlock of 4194304 MiB", "lock less than"],
    );
    let mlc = file(
        &d,
        "mlc.toml",
        "name='w'\nduration_s=1\n[[cgroup]]\nname='c'\nmemory_max='64M'\n[[worker]]\nkind='mlock'\nsize_mib=80\ncgroup='c'\n",
    );
    let e = sim_fails(&d, Some(&mlc), &[]);
    has_all(
        &e,
        &[&mlc, "does not fit in cgroup `c`", "its max is 64 MiB"],
    );
    let fsc = file(
        &d,
        "fsc.toml",
        "name='w'\nduration_s=1\n[[worker]]\nkind='fs-create'\ncount=2\nfile_size=4096\n",
    );
    let e = sim_fails(&d, Some(&fsc), &[]);
    has_all(&e, &[&fsc, "file_size = 4096", "reclaimlab run"]);
    let gone = d.join("gone.toml");
    let e = sim_fails(&d, Some(gone.to_str().unwrap()), &[]);
    has_all(&e, &["gone.toml", "cannot read the workload spec"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_sweeps_are_refused_before_anything_runs() {
    let d = scratch("sweep-bad");
    for (args, want) in [
        (
            &["--sweep", "vm.dirty_ration=10,20"][..],
            &[
                "--sweep vm.dirty_ration=10,20",
                "did you mean `vm.dirty_ratio`",
            ][..],
        ),
        (
            &["--sweep", "vm.dirty_ratio=10,500"],
            &["--sweep vm.dirty_ratio=10,500", "accepted: 1..=100"],
        ),
        (
            &["--sweep", "vm.dirty_ratio=10,x"],
            &["`x` is not a number", "1..=100"],
        ),
        (&["--sweep", "vm.dirty_ratio"], &["expected NAME=V1,V2,..."]),
        (&["--sweep", "=10,20"], &["no parameter name"]),
        (&["--sweep", "vm.dirty_ratio=10,,20"], &["an empty value"]),
        (
            &["--sweep", "vm.dirty_ratio=10,1e1"],
            &["`1e1` is given twice (as 10)"],
        ),
        (
            &[
                "--sweep",
                "vm.dirty_ratio=10,20",
                "--set",
                "vm.dirty_ratio=30",
            ],
            &["also given with --set", "not both"],
        ),
        (
            &[
                "--sweep",
                "vm.dirty_ratio=10",
                "--sweep",
                "vm.dirty_ratio=20",
            ],
            &["swept twice"],
        ),
        (
            &["--sweep", "stutterp.duration_s=1,2"],
            &["only to the stutterp workload"],
        ),
    ] {
        let e = sim_fails(&d, None, args);
        has_all(&e, want);
    }
    // stutterp's list-valued parameter: `;` separates the values.
    let e = sim_fails(&d, Some("stutterp"), &["--sweep", "stutterp.workers=4,8;0"]);
    has_all(&e, &["stutterp.workers", "`0` is not accepted", "1..=4096"]);
    // Checked against the workload too: a later sweep value that cannot size
    // stutterp stops the whole sim before the first run.
    let e = sim_fails(
        &d,
        Some("stutterp"),
        &[
            "--sweep",
            "stutterp.min_threads=4,100",
            "--set",
            "stutterp.max_threads=8",
        ],
    );
    has_all(&e, &["stutterp", "min_threads"]);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A spec's worker keys (`KIND.KEY`): a kind the spec lacks, an unknown key,
/// a value of the wrong type, an mlock larger than the machine at one sweep
/// point, and a worker key for stutterp: exit 2, nothing recorded.
#[test]
fn bad_worker_key_sweeps_are_refused_before_anything_runs() {
    let d = scratch("sweep-worker-bad");
    for (args, want) in [
        (
            &["--sweep", "mlock.size_mib=8,16"][..],
            &[
                "--sweep mlock.size_mib=8,16",
                "no `mlock` worker",
                "anon-hog",
            ][..],
        ),
        (
            &["--sweep", "anon-hog.size_mb=8,16"],
            &["did you mean `anon-hog.size_mib`"],
        ),
        (
            &["--set", "anon-hog.size_mib=lots"],
            &["--set anon-hog.size_mib=lots", "expected a whole number"],
        ),
        (
            &["--sweep", "anon-hog.count=1,0"],
            &["count = 0", "accepted: 1..=4096"],
        ),
    ] {
        let e = sim_fails(&d, None, args);
        has_all(&e, want);
    }
    let e = sim_fails(
        &d,
        Some("fsmark-mlock"),
        &[
            "--sweep",
            "mlock.size_mib=64,200",
            "--sweep",
            "mlock.step_mib=8",
        ],
    );
    has_all(
        &e,
        &[
            "at --sweep mlock.size_mib=200",
            "does not fit in the 96 MiB",
            "lock less than 96 MiB",
        ],
    );
    let e = sim_fails(&d, Some("stutterp"), &["--sweep", "mlock.size_mib=1,2"]);
    has_all(&e, &["stutterp is not a spec"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn list_rejects_what_it_does_not_know() {
    let d = scratch("list");
    let e = fails(&["list", "kernel"], &d);
    has_all(
        &e,
        &[
            "invalid value 'kernel'",
            "kernels, machines, workloads, params",
        ],
    );
    let e = fails(&["list", "params", "--kernel", "v5.99"], &d);
    has_all(&e, &["--kernel v5.99", "v5.16"]);
    let o = bin().args(["list", "params"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success()
            && text.contains("vm.dirty_ratio")
            && text.contains("stutterp.duration_s")
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// The record files of one run, by name.
fn record_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Whether `taskset -c 0` works here (to run the second sweep on one core).
fn taskset_works() -> bool {
    Command::new("taskset")
        .args(["-c", "0", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Two kernels × two `vm.dirty_ratio` values: four records, one report
/// naming them all; a second invocation (on one core where `taskset` exists,
/// so with a worker pool of another size) writes the same bytes.
#[test]
fn sweep_gives_one_record_per_run_and_the_same_bytes_every_time() {
    let d = scratch("sweep");
    let machine = file(&d, "tiny.toml", TINY_MACHINE);
    let spec = file(&d, "spec.toml", TINY_SPEC);
    let names = [
        "v5.15,vm.dirty_ratio=10",
        "v5.15,vm.dirty_ratio=40",
        "v5.16,vm.dirty_ratio=10",
        "v5.16,vm.dirty_ratio=40",
    ];
    let run = |out: &Path, one_core: bool| -> String {
        let mut c = if one_core {
            let mut c = Command::new("taskset");
            c.args(["-c", "0", env!("CARGO_BIN_EXE_reclaimlab")]);
            c
        } else {
            bin()
        };
        let o = c
            .args([
                "sim",
                &spec,
                "--machine",
                &machine,
                "--kernel",
                "v5.15,v5.16",
            ])
            .args(["--sweep", "vm.dirty_ratio=10,40", "--out"])
            .arg(out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "sim --sweep failed:\n{err}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (a, b) = (d.join("a"), d.join("b"));
    let report = run(&a, false);
    assert!(
        report.contains("4 run(s), baseline v5.15,vm.dirty_ratio=10"),
        "{report}"
    );
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    let mut dirs: Vec<String> = std::fs::read_dir(&a)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs, names, "one record directory per kernel and value");
    for n in names {
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(a.join(n).join("run.json")).unwrap()).unwrap();
        assert_eq!(meta["name"], n);
        let (kernel, ratio) = n.split_once(",vm.dirty_ratio=").unwrap();
        assert_eq!(meta["kernel"], kernel);
        assert_eq!(meta["params"]["vm.dirty_ratio"], ratio);
        assert!(
            report.contains(&format!("Stalls: {n} (")),
            "report misses {n}"
        );
        assert!(html.contains(&format!("<td>{n}")), "HTML misses {n}");
    }
    assert_ne!(
        std::fs::read(a.join(names[0]).join("vmstat.csv")).unwrap(),
        std::fs::read(a.join(names[1]).join("vmstat.csv")).unwrap(),
        "the swept value reached the simulation"
    );
    let report_b = run(&b, taskset_works());
    for n in names {
        let (fa, fb) = (record_files(&a.join(n)), record_files(&b.join(n)));
        let list: Vec<&str> = fa.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            list,
            ["latency.csv", "run.json", "trace.txt.gz", "vmstat.csv"],
            "{n}"
        );
        for (x, y) in fa.iter().zip(&fb) {
            assert!(x == y, "{n}/{} differs between two invocations", x.0);
        }
    }
    // The reports differ only where they print the records' paths.
    let a_s = a.to_str().unwrap();
    let b_s = b.to_str().unwrap();
    assert_eq!(report.replace(a_s, "OUT"), report_b.replace(b_s, "OUT"));
    std::fs::remove_dir_all(&d).unwrap();
}

/// `--set policy.*` runs a profile with a call site changed: the run's
/// label and record directory say so, and the record lists every site.
#[test]
fn a_changed_policy_is_named_in_the_label_and_recorded() {
    let d = scratch("policy");
    let machine = file(&d, "tiny.toml", TINY_MACHINE);
    let spec = file(&d, "spec.toml", TINY_SPEC);
    let out = d.join("out");
    let o = bin()
        .args(["sim", &spec, "--machine", &machine, "--kernel", "v5.16"])
        .args(["--set", "policy.noprogress=rc1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "sim failed:\n{err}");
    let name = "v5.16,policy.noprogress=rc1";
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(name).join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["name"], name);
    assert_eq!(meta["kernel"], "v5.16");
    assert_eq!(meta["params"]["policy.noprogress"], "rc1");
    assert_eq!(
        meta["params"]["policy.direct_congested"],
        "throttle_congested"
    );
    // The spec's workers, defaults filled in, are in the record too.
    let params = &meta["params"];
    assert_eq!(params["spec.duration_s"], "1.5");
    assert_eq!(params["spec.worker1.kind"], "file-writer");
    assert_eq!(params["spec.worker1.in_warmup"], "true");
    assert_eq!(params["spec.worker2.size_mib"], "52");
    assert_eq!(params["spec.worker3.pages"], "1024");
    assert_eq!(params["spec.worker3.sleep_ms"], "5", "a default");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A reader that goes away (`reclaimlab list params | head -1`) ends the
/// output, not the process: exit 0 and no panic, for every command that
/// prints to stdout.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    for args in [
        &["list", "params"][..],
        &["list", "kernels"],
        &["list", "machines"],
    ] {
        let mut child = bin()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end before the child has written: its writes fail
        // with EPIPE (SIGPIPE is ignored in Rust programs).
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `sim --json` prints the report's JSON instead of the text, with the
/// significance rule asked for, `--csv` writes the CSV too, and
/// `--sweep seed=…` repeats the run.
#[test]
fn sim_prints_json_when_asked() {
    let d = scratch("json");
    let machine = file(&d, "tiny.toml", TINY_MACHINE);
    let spec = file(&d, "spec.toml", TINY_SPEC);
    let out = d.join("out");
    let o = bin()
        .args(["sim", &spec, "--machine", &machine, "--kernel", "v5.16"])
        .args([
            "--sweep",
            "seed=1,2",
            "--json",
            "--significance",
            "ci",
            "--csv",
        ])
        .arg(d.join("r.csv"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "sim failed:\n{err}");
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["schema"], "reclaimlab.report/1");
    assert_eq!(report["significance"], "ci");
    let names: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["v5.16,seed=1", "v5.16,seed=2"]);
    let seed2: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(names[1]).join("run.json")).unwrap())
            .unwrap();
    assert_eq!(seed2["seed"], 2);
    let csv = std::fs::read_to_string(d.join("r.csv")).unwrap();
    assert!(csv.starts_with("run,table,row,value\n\"v5.16,seed=1\",duration,User,"));
    assert!(csv.contains("\"v5.16,seed=2\",ops,Direct pages scanned,"));
    std::fs::remove_dir_all(&d).unwrap();
}
