//! Real-kernel tests of `reclaimlab run` with a spec's `[[cgroup]]` tree and
//! `device =` entries (crates/host/src/cgtree.rs, disks.rs): a small
//! memcg-congestion (a congester cgroup writing to a 25 MB/s loop device, a
//! victim cgroup reading a 120 MB/s one) records both cgroups and both
//! measured devices, and leaves no cgroup, loop device, mount or throttle
//! rule behind, also after a SIGINT in the middle; bad input (a cgroup
//! larger than --memory, a device the machine lacks, no --machine, not
//! root) exits 2 and changes nothing.
//!
//! Opt-in like host_run.rs: only with `RECLAIMLAB_REAL_TESTS=1`, as root,
//! with fio, losetup and the blkio throttle; otherwise they print `SKIPPED:`
//! and why. The no-root test needs no opt-in: it changes nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reclaimlab_host::{cgroup, disks, sys};

static SERIAL: Mutex<()> = Mutex::new(());

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_reclaimlab"))
}

fn cannot_run() -> Option<String> {
    if std::env::var("RECLAIMLAB_REAL_TESTS").as_deref() != Ok("1") {
        return Some(
            "real-kernel tests are opt-in; set RECLAIMLAB_REAL_TESTS=1 (as root they create cgroups, loop devices and throttle rules, and undo them)".into(),
        );
    }
    if !sys::is_root() {
        return Some("not root".into());
    }
    let Some(c) = cgroup::detect() else {
        return Some("no memory controller".into());
    };
    if sys::which("fio").is_none() {
        return Some("fio is not installed".into());
    }
    let v2_root = (c.version == cgroup::Version::V2).then_some(c.mount.as_path());
    if let Err(e) = disks::preflight(c.version, v2_root) {
        return Some(e.what);
    }
    None
}

macro_rules! skip_unless_host_can_run {
    () => {
        if let Some(why) = cannot_run() {
            eprintln!("SKIPPED: this host cannot do a real run with devices: {why}");
            return;
        }
    };
}

const SPEC: &str = "name = \"congestion-small\"\nduration_s = DURATION\nwarmup_s = 3\n\
    [[cgroup]]\nname = \"congester\"\nmemory_max = \"192M\"\n\
    [[cgroup]]\nname = \"victim\"\nmemory_max = \"64M\"\n\
    [[worker]]\nkind = \"file-writer\"\ncount = 2\nfile_mib = 128\nblock_kib = 1024\npattern = \"sequential\"\ndevice = \"sdb\"\ncgroup = \"congester\"\n\
    [[worker]]\nkind = \"file-reader\"\nfile_mib = READ_MIB\nblock_kib = 128\npattern = \"sequential\"\npasses = 1\ndevice = \"sda\"\ncgroup = \"victim\"\nin_warmup = false\n";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rl-cg-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn spec_file(dir: &Path, duration: u32, read_mib: u32) -> PathBuf {
    let f = dir.join("spec.toml");
    std::fs::write(
        &f,
        SPEC.replace("DURATION", &duration.to_string())
            .replace("READ_MIB", &read_mib.to_string()),
    )
    .unwrap();
    f
}

/// The throttle rules of the root blkio group (v1), to compare before and after.
fn throttle_rules() -> String {
    disks::v1_throttle_files()
        .map(|(w, r)| sys::read(w).unwrap_or_default() + &sys::read(r).unwrap_or_default())
        .unwrap_or_default()
}

/// What run `pid` may have left: its cgroups (and their children), loop
/// devices backed by its files, mounts under its data dir, its state file.
fn leftovers(pid: u32) -> Vec<String> {
    let name = format!("reclaimlab-{pid}");
    let mut found = Vec::new();
    if let Some(c) = cgroup::detect() {
        if c.mount.join(&name).exists() {
            found.push(c.mount.join(&name).display().to_string());
        }
    }
    for (dev, img) in disks::loop_backings() {
        if img.to_string_lossy().contains(&name) {
            found.push(format!("loop {} on {}", dev.display(), img.display()));
        }
    }
    for m in sys::mounts() {
        if m.target.to_string_lossy().contains(&name) {
            found.push(format!("mount {}", m.target.display()));
        }
    }
    for p in [
        PathBuf::from("/var/tmp").join(&name),
        PathBuf::from(format!("/run/reclaimlab/{pid}.state")),
    ] {
        if p.exists() {
            found.push(p.display().to_string());
        }
    }
    found
}

fn start(args: &[&str], out: &Path) -> Child {
    Command::new(bin())
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Asserts that run `pid` left nothing behind.
fn assert_nothing_left(pid: u32) {
    let left = leftovers(pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Starts the spec's run on `hdd-pair-2018` and waits until its victim
/// cgroup holds a process (the step is under way): the child and its pid.
fn start_until_the_victim_runs(spec: &Path, out: &Path) -> (Child, u32) {
    let mut child = start(&[spec.to_str().unwrap(), "--machine", "hdd-pair-2018"], out);
    let pid = child.id();
    let victim = cgroup::detect()
        .unwrap()
        .mount
        .join(format!("reclaimlab-{pid}"))
        .join("victim");
    let end = Instant::now() + Duration::from_secs(240);
    while cgroup::read_pids(&victim).is_empty() {
        assert!(Instant::now() < end, "the victim never started");
        assert!(child.try_wait().unwrap().is_none(), "run ended early");
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, pid)
}

/// A copy of `spec` whose congester may take 512 MiB: more than a 384 MiB run has.
fn too_big_spec(dir: &Path, spec: &Path) -> PathBuf {
    let big = dir.join("big.toml");
    std::fs::write(
        &big,
        std::fs::read_to_string(spec)
            .unwrap()
            .replace("192M", "512M"),
    )
    .unwrap();
    big
}

#[test]
fn spec_cgroups_and_devices_are_recorded_and_undone() {
    skip_unless_host_can_run!();
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmp("ok");
    let spec = spec_file(&dir, 120, 256);
    let rules0 = throttle_rules();
    let out = dir.join("rec");
    let child = start(
        &[spec.to_str().unwrap(), "--machine", "hdd-pair-2018"],
        &out,
    );
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "run failed: {stderr}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let cgs = meta["cgroups"].as_array().unwrap();
    let names: Vec<&str> = cgs.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reclaimlab", "congester", "victim"]);
    assert_eq!(cgs[1]["max_bytes"], 192u64 << 20);
    assert_eq!(cgs[2]["parent"], "reclaimlab");
    // The victim's 64 MiB limit was hit reading 256 MiB: limit reclaim ran.
    let peak = cgs[2]["peak_bytes"].as_u64().unwrap();
    assert!(peak > 32 << 20 && peak <= 64 << 20, "victim peak {peak}");
    let ev = &cgs[2]["events"];
    assert!(
        ev["failcnt"].as_u64().unwrap_or(0) > 0 || ev["max"].as_u64().unwrap_or(0) > 0,
        "the victim's limit was never hit: {ev}"
    );
    // Both devices, measured near their limits.
    let devs = meta["machine"]["devices"].as_array().unwrap();
    let sdb = devs
        .iter()
        .find(|d| d["name"] == "sdb")
        .expect("sdb recorded");
    let w = sdb["write_mb_s"].as_f64().unwrap();
    assert!(
        (12.5..=37.5).contains(&w),
        "sdb measured {w} MB/s against 25"
    );
    assert!(meta["params"]["device.sdb.method"]
        .as_str()
        .unwrap()
        .contains("throttle"));
    // The victim's pass is an `elapsed` sample.
    let lat = std::fs::read_to_string(out.join("latency.csv")).unwrap();
    assert!(lat.lines().any(|l| l.contains(",elapsed,")), "{lat}");
    assert_nothing_left(pid);
    assert_eq!(throttle_rules(), rules0, "throttle rules changed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_mid_run_leaves_no_cgroup_or_device() {
    skip_unless_host_can_run!();
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmp("int");
    // A victim that reads far longer than the test waits.
    let spec = spec_file(&dir, 600, 1024);
    let rules0 = throttle_rules();
    let (child, pid) = start_until_the_victim_runs(&spec, &dir.join("rec"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_left(pid);
    assert_eq!(throttle_rules(), rules0, "throttle rules changed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `reclaimlab run ARGS` expecting exit 2 and `msg` on stderr, and
/// that nothing of the run is left.
fn refused(args: &[&str], msg: &str) {
    let dir = tmp("bad");
    let out = dir.join("rec");
    let child = start(args, &out);
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(msg),
        "{args:?}: wanted `{msg}` in: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out.exists(), "a record was written for refused input");
    assert_nothing_left(pid);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_exits_2_and_changes_nothing() {
    skip_unless_host_can_run!();
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmp("specs");
    let spec = spec_file(&dir, 10, 64);
    let big = too_big_spec(&dir, &spec);
    refused(
        &[big.to_str().unwrap(), "--machine", "hdd-pair-2018", "--memory", "384M"],
        "spec cgroup `congester`: memory_max = 512.0 MiB is larger than the run's cgroup (384.0 MiB",
    );
    let s = spec.to_str().unwrap();
    refused(
        &[s, "--machine", "laptop"],
        "device = `sdb` is not a device of machine `laptop`",
    );
    refused(&[s], "no --machine was given");
    let nodev = dir.join("nodev.toml");
    std::fs::write(
        &nodev,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("device = \"sdb\"\n", "")
            .replace("device = \"sda\"\n", ""),
    )
    .unwrap();
    refused(
        &[nodev.to_str().unwrap(), "--machine", "hdd-pair-2018"],
        "no worker of",
    );
    refused(&[s, "--machine", "no-such-machine"], "no-such-machine");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn not_root_exits_2_and_changes_nothing() {
    // As root, drop to `nobody` with runuser; as a normal user, run as is.
    let dir = tmp("noroot");
    let spec = spec_file(&dir, 10, 64);
    let _ = Command::new("chmod")
        .arg("-R")
        .arg("a+rX")
        .arg(&dir)
        .status();
    let mut cmd = if sys::is_root() {
        if sys::which("runuser").is_none() {
            eprintln!("SKIPPED: root without runuser cannot drop to another user");
            return;
        }
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(bin());
        c
    } else {
        Command::new(bin())
    };
    let o = cmd
        .arg("run")
        .arg(&spec)
        .args(["--machine", "hdd-pair-2018", "--out", "/nonexistent/rl-rec"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if stderr.contains("Permission denied") && stderr.contains("runuser") {
        eprintln!(
            "SKIPPED: nobody cannot execute {}: {stderr}",
            bin().display()
        );
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crashed_runs_devices_and_cgroups_are_cleaned_by_the_next_start() {
    skip_unless_host_can_run!();
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmp("crash");
    let spec = spec_file(&dir, 600, 1024);
    let rules0 = throttle_rules();
    let (mut child, pid) = start_until_the_victim_runs(&spec, &dir.join("rec"));
    // A crash: nothing is undone.
    child.kill().unwrap();
    child.wait().unwrap();
    let left = leftovers(pid);
    assert!(
        left.iter().any(|l| l.starts_with("loop ")),
        "a SIGKILLed run should leave its loop devices: {left:?}"
    );
    assert_ne!(throttle_rules(), rules0, "and its throttle rules");
    // The next start cleans up before it refuses its own bad input.
    let big = too_big_spec(&dir, &spec);
    let o = Command::new(bin())
        .args([
            "run",
            big.to_str().unwrap(),
            "--machine",
            "hdd-pair-2018",
            "--memory",
            "384M",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cleaned up leftover of crashed run {pid}")),
        "{stderr}"
    );
    assert_nothing_left(pid);
    assert_eq!(throttle_rules(), rules0, "throttle rules not restored");
    let _ = std::fs::remove_dir_all(&dir);
}
