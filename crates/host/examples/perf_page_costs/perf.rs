//! `perf record` over the measured thread and `perf script`'s text read
//! back: one repetition's [`Run`], with the rest of the machine's CPU use
//! over the same window.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reclaimlab_host::bench::{clk_tck, parse_proc_stat_cpu, TempFile};
use reclaimlab_host::sys;

use crate::tally::{count_tracepoints, tally, Tally};
use crate::{Args, Workload};

/// `perf record` running on this host, stopped (SIGINT, then waited for)
/// on drop; its data file is removed with the [`TempFile`] that owns it.
struct PerfChild(Option<Child>);

impl PerfChild {
    fn stop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: a signal to the child we started, by its pid.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let _ = c.wait();
        }
    }
}

impl Drop for PerfChild {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Records `tid`'s samples for `secs` into `out` (tracepoints: `events`).
/// perf runs in its own process group (a terminal's Ctrl-C reaches only
/// us), and in `root_procs`' cgroup when given (outside the measured
/// memory cgroup: its buffers must not be reclaimed there).
fn perf_record(
    tid: u32,
    freq: u64,
    secs: f64,
    events: &[&str],
    out: &Path,
    root_procs: Option<&Path>,
    stop: &AtomicBool,
) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let period = 1_000_000_000 / freq;
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-q", "-g", "-e"])
        .arg(format!("cpu-clock/period={period}/"));
    for e in events {
        if e.contains('/') {
            cmd.arg("-e").arg(e);
        } else {
            cmd.arg("-e").arg(format!("{e}/call-graph=no/"));
        }
    }
    cmd.arg("-t")
        .arg(tid.to_string())
        .arg("-o")
        .arg(out)
        .args(["--", "sleep"])
        .arg(format!("{secs}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run perf record: {e}"))?;
    let mut guard = PerfChild(Some(child));
    if let (Some(p), Some(c)) = (root_procs, guard.0.as_ref()) {
        let _ = fs::write(p, c.id().to_string());
    }
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let c = guard.0.as_mut().expect("perf child");
        match c.try_wait() {
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = c.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                guard.0 = None;
                if !status.success() {
                    return Err(format!(
                        "perf record failed ({status}): {}",
                        err.trim().lines().take(5).collect::<Vec<_>>().join(" / ")
                    ));
                }
                return Ok(());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for perf record: {e}")),
        }
    }
}

/// `perf script`'s text for `data`, with the fields `fields`. (perf 6.1
/// leaves the tracepoints out when the fields include `ip`, so the call
/// chains and the tracepoints are read in two passes.)
fn perf_script(data: &Path, fields: &str) -> Result<String, String> {
    let out = Command::new("perf")
        .args(["script", "-F", fields, "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run perf script: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "perf script failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One repetition's result.
pub struct Run {
    pub tally: Tally,
    /// Pages: scanned (reclaim) or touched (mmap).
    pub pages: u64,
    /// ns per cpu-clock sample.
    pub period_ns: f64,
    pub wall_s: f64,
    /// Everything else's CPU use during the window, in CPUs, and steal.
    pub other_cpus: f64,
    pub steal_cpus: f64,
    pub loadavg: String,
}

fn proc_stat() -> Option<(u64, u64)> {
    parse_proc_stat_cpu(&fs::read_to_string("/proc/stat").unwrap_or_default())
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs perf over `tid` for repetition `rep` of `w` and reads the result,
/// calling `leave_cgroup` between the two (perf has stopped; the workload
/// is to stop and its memory cgroup go). The run's `pages` are left 0 for
/// the caller. Everything else's CPU use comes from `/proc/stat` less the
/// measured thread's on-CPU time.
pub fn record_and_tally(
    args: &Args,
    w: Workload,
    rep: usize,
    tid: u32,
    root_procs: Option<&Path>,
    stop: &AtomicBool,
    leave_cgroup: impl FnOnce(),
) -> Result<Run, String> {
    let data = args.dir.join(format!(
        ".reclaimlab-perf-{}-{}-{rep}.data",
        std::process::id(),
        w.name()
    ));
    let _data_guard = TempFile(data.clone());
    let events = w.events();
    let (s0, t0, c0) = (proc_stat(), sys::mono_ns(), thread_on_cpu_s(tid));
    perf_record(tid, args.freq, args.secs, events, &data, root_procs, stop)?;
    let (s1, t1, c1) = (proc_stat(), sys::mono_ns(), thread_on_cpu_s(tid));
    let load = loadavg();
    leave_cgroup();
    let text = perf_script(&data, "comm,tid,event,ip,sym,symoff,dso")?;
    let mut tally = tally(w.scheme(), &text);
    drop(text);
    if !events.is_empty() {
        count_tracepoints(&mut tally, &perf_script(&data, "comm,tid,event,trace")?);
    }
    let wall = (t1 - t0) as f64 / 1e9;
    let tck = clk_tck();
    let (other, steal) = match (s0, s1) {
        (Some(a), Some(b)) => (
            (((b.0 - a.0) as f64 / tck) - (c1 - c0)).max(0.0) / wall,
            ((b.1 - a.1) as f64 / tck) / wall,
        ),
        _ => (f64::NAN, f64::NAN),
    };
    Ok(Run {
        tally,
        pages: 0,
        period_ns: 1e9 / args.freq as f64,
        wall_s: wall,
        other_cpus: other,
        steal_cpus: steal,
        loadavg: load,
    })
}

fn thread_on_cpu_s(tid: u32) -> f64 {
    fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0) as f64
        / 1e9
}
