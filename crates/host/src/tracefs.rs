//! tracefs: find or mount it, list the reclaim tracepoints this kernel has, and
//! capture them through a private instance.
//!
//! A run never touches the global trace buffer (someone else may be using it):
//! it creates `instances/reclaimlab-<pid>`, sets that instance's clock to `mono`
//! (CLOCK_MONOTONIC, so trace timestamps map onto the record's time base with
//! one offset), enables only the relevant events, and streams its `trace_pipe`
//! from a thread. Lost events are read from the instance's per-CPU `stats`.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::{HostError, Result};
use crate::sys;

/// Where tracefs is normally mounted.
pub const TRACEFS_DEFAULT: &str = "/sys/kernel/tracing";

/// The tracepoints relevant to reclaim stalls, `subsystem:event`, in report order.
/// Kernels have different subsets (the congestion events are gone since 5.18,
/// `mm_vmscan_throttled` exists since 5.16).
pub const RELEVANT_EVENTS: &[&str] = &[
    "vmscan:mm_vmscan_throttled",
    "vmscan:mm_vmscan_direct_reclaim_begin",
    "vmscan:mm_vmscan_direct_reclaim_end",
    "vmscan:mm_vmscan_kswapd_wake",
    "vmscan:mm_vmscan_kswapd_sleep",
    "vmscan:mm_vmscan_wakeup_kswapd",
    "vmscan:mm_vmscan_lru_shrink_inactive",
    "vmscan:mm_vmscan_memcg_reclaim_begin",
    "vmscan:mm_vmscan_memcg_reclaim_end",
    "writeback:writeback_congestion_wait",
    "writeback:writeback_wait_iff_congested",
    "writeback:balance_dirty_pages",
    // An OOM kill's victim (include/trace/events/oom.h); fires once per kill.
    "oom:mark_victim",
];

/// Relevant events that fire per LRU scan batch (tens of thousands per second
/// under memcg pressure): captured only with `capture.events=all`, since the
/// text formatting of every event costs the capture thread about 2 µs of kernel
/// time (docs/bench/capture.md) and `/proc/vmstat` has the same totals.
pub const HIGH_RATE_EVENTS: &[&str] = &["vmscan:mm_vmscan_lru_shrink_inactive"];

/// Checks a `capture.events` value: `default`, `all`, `none`, or a comma list of
/// `subsystem:event` names.
pub fn check_events_spec(spec: &str) -> std::result::Result<(), String> {
    match spec.trim() {
        "default" | "all" | "none" => Ok(()),
        list => {
            for e in list.split(',') {
                let e = e.trim();
                let ok = e.split_once(':').is_some_and(|(s, n)| {
                    !s.is_empty()
                        && !n.is_empty()
                        && (s.to_string() + n)
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                });
                if !ok {
                    return Err(format!(
                        "`{e}` is not an event name; accepted: default, all, none, or a comma list of subsystem:event (e.g. vmscan:mm_vmscan_throttled)"
                    ));
                }
            }
            Ok(())
        }
    }
}

/// The events a `capture.events` spec asks for (see [`check_events_spec`]).
pub fn requested_events(spec: &str) -> Vec<String> {
    match spec.trim() {
        "none" => Vec::new(),
        "all" => RELEVANT_EVENTS.iter().map(|e| e.to_string()).collect(),
        "default" => RELEVANT_EVENTS
            .iter()
            .filter(|e| !HIGH_RATE_EVENTS.contains(e))
            .map(|e| e.to_string())
            .collect(),
        list => list.split(',').map(|e| e.trim().to_string()).collect(),
    }
}

/// Finds a mounted tracefs: a `tracefs` mount, or `tracing/` in a mounted debugfs.
pub fn find_mounted(mounts: &[sys::Mount]) -> Option<PathBuf> {
    if let Some(m) = mounts.iter().find(|m| m.fstype == "tracefs") {
        return Some(m.target.clone());
    }
    mounts
        .iter()
        .filter(|m| m.fstype == "debugfs")
        .map(|m| m.target.join("tracing"))
        .find(|p| p.join("trace_pipe").exists())
}

/// Whether this kernel can mount tracefs (`tracefs` in `/proc/filesystems`).
pub fn mountable() -> bool {
    sys::read("/proc/filesystems")
        .map(|t| {
            t.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false)
}

/// The command that mounts tracefs at its usual place.
pub fn mount_command() -> String {
    format!("mount -t tracefs nodev {TRACEFS_DEFAULT}")
}

/// Mounts tracefs at [`TRACEFS_DEFAULT`].
pub fn mount() -> Result<PathBuf> {
    let target = PathBuf::from(TRACEFS_DEFAULT);
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS_DEFAULT])
        .status()
        .map_err(|e| HostError::new(format!("cannot run `{}`: {e}", mount_command())))?;
    if !status.success() {
        return Err(HostError::with_fix(
            format!("`{}` failed ({status})", mount_command()),
            "run as root on a kernel with CONFIG_TRACING (tracefs in /proc/filesystems)",
        ));
    }
    Ok(target)
}

/// A tracefs mount this program made, unmounted when dropped.
#[derive(Debug)]
pub struct MountGuard(PathBuf);

impl Drop for MountGuard {
    fn drop(&mut self) {
        let _ = unmount(&self.0);
    }
}

/// The mounted tracefs, or one mounted now (with the guard that unmounts
/// it when dropped, leaving the host as it was).
pub fn find_or_mount() -> Result<(PathBuf, Option<MountGuard>)> {
    if let Some(r) = find_mounted(&sys::mounts()) {
        return Ok((r, None));
    }
    let r = mount()?;
    Ok((r.clone(), Some(MountGuard(r))))
}

/// Unmounts a tracefs this program mounted.
pub fn unmount(target: &Path) -> Result<()> {
    let status = std::process::Command::new("umount")
        .arg(target)
        .status()
        .map_err(|e| HostError::new(format!("cannot run `umount {}`: {e}", target.display())))?;
    if !status.success() {
        return Err(HostError::with_fix(
            format!("`umount {}` failed ({status})", target.display()),
            format!("umount {} once nothing uses it", target.display()),
        ));
    }
    Ok(())
}

/// The directory of an event (`events/vmscan/mm_vmscan_throttled`) under a tracefs root.
pub fn event_dir(root: &Path, event: &str) -> PathBuf {
    let (sys, name) = event.split_once(':').unwrap_or(("", event));
    root.join("events").join(sys).join(name)
}

/// Whether the kernel has `event` (`subsystem:event`).
pub fn has_event(root: &Path, event: &str) -> bool {
    event_dir(root, event).join("enable").exists()
}

/// Splits `events` into those this kernel has and those it lacks.
pub fn available_events(root: &Path, events: &[String]) -> (Vec<String>, Vec<String>) {
    events.iter().cloned().partition(|e| has_event(root, e))
}

/// Sums lost events over per-CPU `stats` texts: `overrun` (overwritten) plus
/// `dropped events` (not recorded because the buffer was full).
pub fn lost_from_stats<'a>(stats: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut lost = 0;
    for text in stats {
        for l in text.lines() {
            if let Some((k, v)) = l.split_once(':') {
                if k.trim() == "overrun" || k.trim() == "dropped events" {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    lost
}

/// Sums a per-CPU `stats` counter (`entries`, `read events`, ...).
pub fn stat_sum<'a>(stats: impl IntoIterator<Item = &'a str>, key: &str) -> u64 {
    stats
        .into_iter()
        .flat_map(|t| t.lines())
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().parse::<u64>().unwrap_or(0))
        .sum()
}

/// A private tracefs instance (`instances/<name>`), removed by [`Instance::remove`].
#[derive(Debug)]
pub struct Instance {
    /// The instance directory.
    pub dir: PathBuf,
    /// Events enabled in it.
    pub events: Vec<String>,
}

/// What a capture thread saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Lines read from `trace_pipe`.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// CPU time of the capture thread (user + system), ns.
    pub cpu_ns: u64,
    /// User CPU time of the capture thread, ns.
    pub user_ns: u64,
    /// System CPU time of the capture thread (formatting in the kernel, reads), ns.
    pub sys_ns: u64,
    /// Wake-ups of the capture loop.
    pub wakeups: u64,
}

impl Instance {
    /// Creates the instance and enables `events` in it (with the `mono` clock and a
    /// `buffer_kb` per-CPU buffer). Tracing starts off; call [`Instance::start`].
    pub fn create(root: &Path, name: &str, events: &[String], buffer_kb: u32) -> Result<Instance> {
        let dir = root.join("instances").join(name);
        fs::create_dir(&dir).map_err(|e| {
            HostError::with_fix(
                format!("cannot create tracefs instance {}: {e}", dir.display()),
                "run as root with tracefs mounted read-write",
            )
        })?;
        let inst = Instance {
            dir,
            events: events.to_vec(),
        };
        let setup = || -> Result<()> {
            sys::write(inst.dir.join("tracing_on"), "0")?;
            // `mono` is CLOCK_MONOTONIC; older kernels without it keep `local`.
            let _ = sys::write(inst.dir.join("trace_clock"), "mono");
            sys::write(inst.dir.join("buffer_size_kb"), &buffer_kb.to_string())?;
            for e in events {
                sys::write(event_dir(&inst.dir, e).join("enable"), "1")?;
            }
            Ok(())
        };
        if let Err(e) = setup() {
            let _ = inst.remove();
            return Err(e);
        }
        Ok(inst)
    }

    /// The instance's trace clock name (the selected one in `trace_clock`).
    pub fn clock(&self) -> String {
        let t = sys::read(self.dir.join("trace_clock")).unwrap_or_default();
        t.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .unwrap_or_else(|| "local".into())
    }

    /// Turns tracing on in this instance.
    pub fn start(&self) -> Result<()> {
        sys::write(self.dir.join("tracing_on"), "1")
    }

    /// Turns tracing off in this instance (the buffer can still be drained).
    pub fn stop(&self) -> Result<()> {
        sys::write(self.dir.join("tracing_on"), "0")
    }

    fn stats_texts(&self) -> Vec<String> {
        let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) else {
            return Vec::new();
        };
        rd.filter_map(|e| e.ok())
            .filter_map(|e| fs::read_to_string(e.path().join("stats")).ok())
            .collect()
    }

    /// Events lost so far (overrun + dropped, all CPUs).
    pub fn lost_events(&self) -> u64 {
        let t = self.stats_texts();
        lost_from_stats(t.iter().map(String::as_str))
    }

    /// Starts a thread that streams `trace_pipe` into `sink` until `stop` is set
    /// and the pipe is drained. `sink` gets blocks of whole lines, each ending in
    /// `\n`, as they arrive. The thread returns its statistics.
    pub fn stream<F>(&self, stop: Arc<AtomicBool>, mut sink: F) -> Result<JoinHandle<StreamStats>>
    where
        F: FnMut(&str) + Send + 'static,
    {
        let path = self.dir.join("trace_pipe");
        let mut f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| HostError::io("cannot open", &path, e))?;
        let h = std::thread::Builder::new()
            .name("trace-pipe".into())
            .spawn(move || {
                let mut st = StreamStats::default();
                let mut buf = vec![0u8; 1 << 16];
                let mut pending: Vec<u8> = Vec::with_capacity(1 << 16);
                loop {
                    let stopping = stop.load(Ordering::Acquire);
                    let mut got_any = false;
                    loop {
                        match f.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                got_any = true;
                                st.bytes += n as u64;
                                pending.extend_from_slice(&buf[..n]);
                                if let Some(last) = pending.iter().rposition(|&b| b == b'\n') {
                                    let block = &pending[..=last];
                                    st.lines +=
                                        block.iter().filter(|&&b| b == b'\n').count() as u64;
                                    sink(&String::from_utf8_lossy(block));
                                    pending.drain(..=last);
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            Err(_) => break,
                        }
                    }
                    if stopping && !got_any {
                        break;
                    }
                    st.wakeups += 1;
                    // Batch: poll() on trace_pipe wakes for every event, which costs
                    // more than the events; a fixed pause lets the per-CPU buffers
                    // (8 MiB each) absorb 100 ms of events, read in page-sized chunks.
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                if !pending.is_empty() {
                    pending.push(b'\n');
                    sink(&String::from_utf8_lossy(&pending));
                    st.lines += 1;
                }
                st.cpu_ns = thread_cpu_ns();
                (st.user_ns, st.sys_ns) = thread_rusage_ns();
                st
            })
            .map_err(|e| HostError::new(format!("cannot start the trace capture thread: {e}")))?;
        Ok(h)
    }

    /// Disables the events and removes the instance directory.
    pub fn remove(&self) -> Result<()> {
        remove_instance_dir(&self.dir)
    }
}

/// Turns an instance off and removes it (also used for leftovers of a crashed run).
pub fn remove_instance_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let _ = sys::write(dir.join("tracing_on"), "0");
    let _ = sys::write(dir.join("events/enable"), "0");
    let mut last = None;
    for _ in 0..50 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        // EBUSY while a reader still has trace_pipe open.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(HostError::with_fix(
        format!(
            "cannot remove tracefs instance {}: {}",
            dir.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        ),
        format!("rmdir {} once nothing reads its trace_pipe", dir.display()),
    ))
}

/// User and system CPU time of the calling thread, ns.
pub fn thread_rusage_ns() -> (u64, u64) {
    // SAFETY: rusage is plain data; getrusage writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// CPU time (user + system) of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_events_sum_overrun_and_dropped() {
        let cpu0 = "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 100\ndropped events: 2\nread events: 7\n";
        let cpu1 = "entries: 0\noverrun: 0\ndropped events: 5\nread events: 1\n";
        assert_eq!(lost_from_stats([cpu0, cpu1]), 10);
        assert_eq!(stat_sum([cpu0, cpu1], "read events"), 8);
    }

    #[test]
    fn event_specs() {
        assert!(check_events_spec("default").is_ok());
        assert!(
            check_events_spec("vmscan:mm_vmscan_throttled, writeback:balance_dirty_pages").is_ok()
        );
        assert!(check_events_spec("mm_vmscan_throttled")
            .unwrap_err()
            .contains("subsystem:event"));
        let d = requested_events("default");
        assert!(d.contains(&"vmscan:mm_vmscan_throttled".to_string()));
        assert!(!d.contains(&"vmscan:mm_vmscan_lru_shrink_inactive".to_string()));
        assert_eq!(requested_events("all").len(), RELEVANT_EVENTS.len());
        assert!(requested_events("none").is_empty());
    }

    #[test]
    fn event_paths() {
        let root = Path::new("/sys/kernel/tracing");
        assert_eq!(
            event_dir(root, "vmscan:mm_vmscan_throttled"),
            PathBuf::from("/sys/kernel/tracing/events/vmscan/mm_vmscan_throttled")
        );
        let mounts = sys::parse_mounts("tracefs /sys/kernel/tracing tracefs rw 0 0\n");
        assert_eq!(
            find_mounted(&mounts),
            Some(PathBuf::from("/sys/kernel/tracing"))
        );
        assert_eq!(find_mounted(&[]), None);
    }
}
