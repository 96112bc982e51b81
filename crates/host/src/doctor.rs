//! `reclaimlab doctor`: what this host can `run`, and how to fix what is missing.
//!
//! Each check names the thing, what was found and where, and — for anything
//! missing — the command that fixes it. Only root, a memory controller and fio
//! are required for `run` (a host without tracefs still records vmstat, a host
//! without swap can get a temporary swap file); the rest is information that
//! explains a run's results (HZ, THP, MGLRU, dirty ratios, PSI).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::human_bytes;
use crate::{cgroup, state, swap, sys, tracefs};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Present and usable.
    Ok,
    /// Information only.
    Info,
    /// Missing or degraded; `run` still works (maybe with an option or less capture).
    Warn,
    /// Missing and required: `run` cannot work until it is fixed.
    Missing,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Info => "info",
            Status::Warn => "warn",
            Status::Missing => "MISSING",
        }
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked (`root`, `tracefs`, `tracepoint`, ...).
    pub name: String,
    /// The outcome.
    pub status: Status,
    /// What was found, and where.
    pub detail: String,
    /// The command or change that fixes it.
    pub fix: Option<String>,
}

fn check(name: &str, status: Status, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check {
        name: name.to_string(),
        status,
        detail: detail.into(),
        fix,
    }
}

/// The full diagnosis of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    /// A one-line description of the host (kernel, CPUs, memory).
    pub host: String,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl Diagnosis {
    /// Whether `run` can work here (nothing required is missing).
    pub fn can_run(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Missing)
    }

    /// The diagnosis as text for a terminal.
    pub fn render(&self) -> String {
        let mut s = format!("reclaimlab doctor: {}\n", self.host);
        for c in &self.checks {
            let _ = writeln!(s, "  {:<8} {:<16} {}", c.status.label(), c.name, c.detail);
            if let Some(f) = &c.fix {
                let _ = writeln!(s, "  {:<8} {:<16}   fix: {}", "", "", f);
            }
        }
        let missing = self
            .checks
            .iter()
            .filter(|c| c.status == Status::Missing)
            .count();
        if missing == 0 {
            s.push_str("=> `reclaimlab run` can work on this host.\n");
        } else {
            let _ = writeln!(
                s,
                "=> `reclaimlab run` cannot work here: {missing} required piece(s) missing (see fix: lines)."
            );
        }
        s
    }
}

/// Why a relevant event may be absent on a kernel.
fn absent_reason(event: &str) -> &'static str {
    match event {
        "writeback:writeback_congestion_wait" | "writeback:writeback_wait_iff_congested" => {
            "removed in 5.18 with congestion_wait(); expected on newer kernels"
        }
        "vmscan:mm_vmscan_throttled" => "added in 5.16 (reclaim_throttle); needs a newer kernel",
        _ => "this kernel does not have it (disabled tracepoints or an old kernel)",
    }
}

/// Runs every check on this host. If tracefs is not mounted and we are root, it is
/// mounted for a moment to list the tracepoints, then unmounted again.
pub fn diagnose() -> Diagnosis {
    let mut checks = Vec::new();
    let root = sys::is_root();
    let (mem, swap_total) = sys::mem_and_swap();
    let host = format!(
        "kernel {}, {} CPUs, {} RAM, {} swap",
        sys::kernel_release(),
        sys::cpus(),
        human_bytes(mem),
        human_bytes(swap_total)
    );

    // root
    if root {
        checks.push(check("root", Status::Ok, "running as root", None));
    } else {
        checks.push(check(
            "root",
            Status::Missing,
            "not root: cgroups, tracefs and swap need root",
            Some("run as root: sudo reclaimlab run ...".into()),
        ));
    }

    // tracefs and tracepoints
    let mounts = sys::mounts();
    let mounted = tracefs::find_mounted(&mounts);
    let mut temp_mount: Option<PathBuf> = None;
    let trace_root: Option<PathBuf> = match &mounted {
        Some(p) => {
            checks.push(check(
                "tracefs",
                Status::Ok,
                format!("mounted at {}", p.display()),
                None,
            ));
            Some(p.clone())
        }
        None if tracefs::mountable() => {
            checks.push(check(
                "tracefs",
                Status::Ok,
                format!(
                    "not mounted, but mountable: `run` mounts it at {} and unmounts it afterwards",
                    tracefs::TRACEFS_DEFAULT
                ),
                None,
            ));
            if root {
                if let Ok(p) = tracefs::mount() {
                    temp_mount = Some(p.clone());
                    Some(p)
                } else {
                    None
                }
            } else {
                None
            }
        }
        None => {
            checks.push(check(
                "tracefs",
                Status::Warn,
                "not available (no tracefs in /proc/filesystems): runs record vmstat but no traces",
                Some("use a kernel built with CONFIG_FTRACE / CONFIG_TRACING".into()),
            ));
            None
        }
    };
    match &trace_root {
        Some(r) => {
            let instances = r.join("instances").exists();
            checks.push(check(
                "trace instances",
                if instances { Status::Ok } else { Status::Warn },
                if instances {
                    format!("{}/instances exists: runs use a private buffer", r.display())
                } else {
                    "no instances/ directory: runs cannot capture without the global buffer, so they record no traces".into()
                },
                None,
            ));
            for e in tracefs::RELEVANT_EVENTS {
                if tracefs::has_event(r, e) {
                    checks.push(check("tracepoint", Status::Ok, *e, None));
                } else {
                    checks.push(check(
                        "tracepoint",
                        Status::Info,
                        format!("{e}: absent ({})", absent_reason(e)),
                        None,
                    ));
                }
            }
        }
        None => checks.push(check(
            "tracepoints",
            Status::Info,
            "not checked (tracefs not available to this user)",
            None,
        )),
    }
    if let Some(p) = temp_mount {
        let _ = tracefs::unmount(&p);
    }

    // memory controller
    match cgroup::detect() {
        Some(c) => {
            let detail = match c.version {
                cgroup::Version::V2 => format!(
                    "cgroup v2 at {}: runs exercise memcg-v2 limit reclaim",
                    c.mount.display()
                ),
                cgroup::Version::V1 => format!(
                    "cgroup v1 at {}: runs exercise memcg-v1 limit reclaim (no ISOLATED/CONGESTED throttling, docs/reference/kernel-reclaim.md §D.3)",
                    c.mount.display()
                ),
            };
            checks.push(check("memory cgroup", Status::Ok, detail, None));
            if c.version == cgroup::Version::V1 {
                match cgroup::cpuacct_v1_mount(&mounts) {
                    Some(m) => checks.push(check(
                        "cpuacct",
                        Status::Ok,
                        format!("cgroup v1 cpuacct at {}: workers' CPU time is counted", m.display()),
                        None,
                    )),
                    None => checks.push(check(
                        "cpuacct",
                        Status::Warn,
                        "no v1 cpuacct hierarchy: workers' CPU time comes from wait4() only",
                        Some("mkdir -p /sys/fs/cgroup/cpuacct && mount -t cgroup -o cpuacct cgroup /sys/fs/cgroup/cpuacct".into()),
                    )),
                }
            }
        }
        None => checks.push(check(
            "memory cgroup",
            Status::Missing,
            "no hierarchy holds the memory controller: `run` cannot sandbox (only --scope host would work)",
            Some(cgroup::fix_command(&mounts)),
        )),
    }

    // swap
    let areas = swap::active();
    if areas.is_empty() {
        checks.push(check(
            "swap",
            Status::Warn,
            "no swap: stutterp's anon hogs cannot be reclaimed",
            Some("pass --swap-file 2G to `run` (a temporary swap file, removed afterwards), or add swap: fallocate -l 2G /swapfile && chmod 600 /swapfile && mkswap /swapfile && swapon /swapfile".into()),
        ));
    } else {
        let list: Vec<String> = areas
            .iter()
            .map(|a| format!("{} ({})", a.path.display(), human_bytes(a.size)))
            .collect();
        checks.push(check("swap", Status::Ok, list.join(", "), None));
    }
    for tool in ["mkswap", "swapon", "swapoff"] {
        if sys::which(tool).is_none() {
            checks.push(check(
                tool,
                Status::Warn,
                format!("`{tool}` not found: --swap-file cannot work"),
                Some("apt-get install -y util-linux (or your distribution's util-linux)".into()),
            ));
        }
    }

    // fio
    match sys::which("fio") {
        Some(p) => {
            let v = std::process::Command::new(&p)
                .arg("--version")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            checks.push(check(
                "fio",
                Status::Ok,
                format!("{} {v}", p.display()),
                None,
            ));
        }
        None => checks.push(check(
            "fio",
            Status::Missing,
            "fio not found on PATH: stutterp's file writers and readers are fio jobs",
            Some("apt-get install -y fio (Debian/Ubuntu), dnf install -y fio (Fedora/RHEL)".into()),
        )),
    }

    // THP
    let thp = sys::read("/sys/kernel/mm/transparent_hugepage/enabled")
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|_| "not available".into());
    checks.push(check(
        "THP",
        Status::Info,
        format!("transparent_hugepage/enabled: {thp} (mmtests 2021 ran with the default; since 2026 it sets never)"),
        None,
    ));

    // HZ
    match sys::kernel_config() {
        Some((cfg, from)) => match sys::config_hz(&cfg) {
            Some(hz) => checks.push(check(
                "HZ",
                Status::Info,
                format!("CONFIG_HZ={hz} (from {}): 1 jiffy = {} ms", from.display(), 1000.0 / f64::from(hz.max(1))),
                None,
            )),
            None => checks.push(check("HZ", Status::Info, format!("no CONFIG_HZ in {}", from.display()), None)),
        },
        None => checks.push(check(
            "HZ",
            Status::Info,
            "unknown: neither /boot/config-$(uname -r) nor /proc/config.gz",
            Some("modprobe configs (for /proc/config.gz), or install the kernel's config file in /boot".into()),
        )),
    }

    // PSI
    match sys::read("/proc/pressure/memory") {
        Ok(_) => checks.push(check("PSI", Status::Ok, "/proc/pressure/memory present", None)),
        Err(_) => checks.push(check(
            "PSI",
            Status::Warn,
            "/proc/pressure/memory absent: no memory pressure figures",
            Some("boot with psi=1 (kernels with CONFIG_PSI_DEFAULT_DISABLED=y), or a kernel with CONFIG_PSI=y".into()),
        )),
    }

    // MGLRU
    let lru_gen = Path::new("/sys/kernel/mm/lru_gen/enabled");
    let mglru = match sys::read(lru_gen) {
        Ok(v) => {
            let v = v.trim().to_string();
            let on = u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap_or(0) != 0;
            format!(
                "MGLRU built, enabled={v} ({})",
                if on {
                    "multi-gen LRU in use"
                } else {
                    "classic LRU in use"
                }
            )
        }
        Err(_) => "MGLRU not built (classic active/inactive LRU)".to_string(),
    };
    checks.push(check("MGLRU", Status::Info, mglru, None));

    // dirty ratios
    let g = |n: &str| sys::read_u64(format!("/proc/sys/vm/{n}"));
    let dr = g("dirty_ratio");
    let dbr = g("dirty_background_ratio");
    let db = g("dirty_bytes").unwrap_or(0);
    let dbb = g("dirty_background_bytes").unwrap_or(0);
    let mut d = format!(
        "vm.dirty_ratio={} vm.dirty_background_ratio={}",
        dr.map_or("?".into(), |v| v.to_string()),
        dbr.map_or("?".into(), |v| v.to_string())
    );
    if db != 0 || dbb != 0 {
        let _ = write!(
            d,
            " (vm.dirty_bytes={db}, vm.dirty_background_bytes={dbb} override the ratios; stutterp sizing still uses dirty_ratio)"
        );
    }
    checks.push(check("dirty", Status::Info, d, None));

    // data dir space
    let free = free_bytes(Path::new("/var/tmp"));
    checks.push(check(
        "data dir",
        Status::Info,
        format!(
            "/var/tmp: {} free (fio files and the swap file go there unless --data-dir)",
            free.map_or("?".into(), human_bytes)
        ),
        None,
    ));

    // a spec's devices (`device =`): throttled loop devices
    match crate::cgroup::detect() {
        Some(c) => {
            let v2_root = (c.version == crate::cgroup::Version::V2).then_some(c.mount.as_path());
            match crate::disks::preflight(c.version, v2_root) {
                Ok(()) => checks.push(check(
                    "spec devices",
                    Status::Ok,
                    format!(
                        "a spec's `device =` can be a loop device throttled by the block I/O controller ({})",
                        if c.version == crate::cgroup::Version::V1 {
                            "the root blkio group's blkio.throttle.*_bps_device"
                        } else {
                            "io.max of the run's cgroup"
                        }
                    ),
                    None,
                )),
                Err(e) => checks.push(check("spec devices", Status::Warn, e.what, e.fix)),
            }
        }
        None => checks.push(check(
            "spec devices",
            Status::Warn,
            "a spec's `device =` needs the run's memory cgroup, and there is no memory controller",
            None,
        )),
    }

    // loop devices of crashed runs (no state file needed: their backing file names the run)
    for (dev, image) in crate::disks::orphan_loops(|p| state::is_live_run(p, None)) {
        checks.push(check(
            "leftovers",
            Status::Warn,
            format!(
                "loop device {} of a crashed run is still attached ({})",
                dev.display(),
                image.display()
            ),
            Some("the next `reclaimlab run` detaches it (and unmounts and unthrottles it) at its start".into()),
        ));
    }

    // leftovers of crashed runs
    let dead = state::dead_runs(Path::new(state::STATE_DIR));
    if dead.is_empty() {
        checks.push(check(
            "leftovers",
            Status::Ok,
            format!("no leftovers of crashed runs ({})", state::STATE_DIR),
            None,
        ));
    } else {
        for (pid, entries) in dead {
            let list: Vec<String> = entries.iter().map(|e| e.to_line()).collect();
            checks.push(check(
                "leftovers",
                Status::Warn,
                format!("crashed run {pid} left: {}", list.join("; ")),
                Some("the next `reclaimlab run` cleans them up at its start".into()),
            ));
        }
    }

    Diagnosis { host, checks }
}

/// Free bytes for unprivileged use on the filesystem of `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs on a valid C string into a zeroed struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (r == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_and_verdict() {
        let d = Diagnosis {
            host: "kernel x".into(),
            checks: vec![
                check("root", Status::Ok, "running as root", None),
                check(
                    "fio",
                    Status::Missing,
                    "fio not found",
                    Some("apt-get install -y fio".into()),
                ),
            ],
        };
        assert!(!d.can_run());
        let t = d.render();
        assert!(t.contains("MISSING  fio"), "{t}");
        assert!(t.contains("fix: apt-get install -y fio"), "{t}");
        assert!(t.contains("cannot work"));
        let ok = Diagnosis {
            host: "k".into(),
            checks: vec![check("root", Status::Ok, "", None)],
        };
        assert!(ok.can_run());
    }

    #[test]
    fn diagnose_does_not_change_mounts() {
        let before = sys::mounts();
        let d = diagnose();
        assert!(!d.checks.is_empty());
        let after = sys::mounts();
        assert_eq!(
            before.iter().filter(|m| m.fstype == "tracefs").count(),
            after.iter().filter(|m| m.fstype == "tracefs").count()
        );
    }
}
