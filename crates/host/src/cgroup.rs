//! The memory cgroup sandbox of a real run.
//!
//! A run is confined to `reclaimlab-<pid>` under the hierarchy that holds the
//! memory controller — cgroup v2 where it is there, else v1 — with the run's
//! `--memory` limit, so the kernel does memcg limit reclaim and the rest of the
//! host is left alone. On v1 a twin group in the `cpuacct` hierarchy counts the
//! workers' CPU time (v2's `cpu.stat` does it directly). Workers enter the groups
//! in a `pre_exec` hook, before they run a single instruction of their program,
//! so none can escape; they are killed by group (`cgroup.kill` on v2, a SIGKILL
//! sweep of `cgroup.procs` on v1).

use std::ffi::CString;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{HostError, Result};
use crate::sys;

/// A cgroup hierarchy version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// cgroup v1 (a `cgroup` mount with the `memory` option).
    V1,
    /// cgroup v2 (a `cgroup2` mount whose `cgroup.controllers` lists `memory`).
    V2,
}

impl Version {
    /// `memcg-v1` / `memcg-v2`, the `reclaim_scope` of a sandboxed run.
    pub fn scope_label(self) -> &'static str {
        match self {
            Version::V1 => "memcg-v1",
            Version::V2 => "memcg-v2",
        }
    }
}

/// Where the memory controller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryController {
    /// Which version holds it.
    pub version: Version,
    /// The hierarchy's mount point (its root cgroup).
    pub mount: PathBuf,
}

/// Finds the memory controller among `mounts`; `controllers(dir)` returns the text
/// of `dir/cgroup.controllers` (a parameter so that tests need no real cgroupfs).
/// cgroup v2 is preferred when it has the controller.
pub fn detect_with(
    mounts: &[sys::Mount],
    controllers: impl Fn(&Path) -> Option<String>,
) -> Option<MemoryController> {
    let v2 = mounts.iter().find(|m| {
        m.fstype == "cgroup2"
            && controllers(&m.target)
                .map(|t| t.split_whitespace().any(|c| c == "memory"))
                .unwrap_or(false)
    });
    if let Some(m) = v2 {
        return Some(MemoryController {
            version: Version::V2,
            mount: m.target.clone(),
        });
    }
    mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == "memory"))
        .map(|m| MemoryController {
            version: Version::V1,
            mount: m.target.clone(),
        })
}

/// Finds the memory controller on this host.
pub fn detect() -> Option<MemoryController> {
    detect_with(&sys::mounts(), |d| {
        fs::read_to_string(d.join("cgroup.controllers")).ok()
    })
}

/// The cgroup v1 `cpuacct` hierarchy's mount, if any.
pub fn cpuacct_v1_mount(mounts: &[sys::Mount]) -> Option<PathBuf> {
    mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == "cpuacct"))
        .map(|m| m.target.clone())
}

/// Where the cgroup of run `name` goes: directly under the hierarchy's root.
pub fn group_path(mount: &Path, name: &str) -> PathBuf {
    mount.join(name)
}

/// The command that would give a v2 hierarchy the memory controller, or mount v1's.
pub fn fix_command(mounts: &[sys::Mount]) -> String {
    if let Some(m) = mounts.iter().find(|m| m.fstype == "cgroup2") {
        format!(
            "echo +memory > {}/cgroup.subtree_control (needs the memory controller free \
             of cgroup v1: boot with cgroup_no_v1=memory), or mount the v1 controller: \
             mkdir -p /sys/fs/cgroup/memory && mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory",
            m.target.display()
        )
    } else {
        "mkdir -p /sys/fs/cgroup/memory && mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory"
            .to_string()
    }
}

/// A created memory cgroup (plus its v1 cpuacct twin), removed by [`Sandbox::remove`].
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// Hierarchy version of the memory group.
    pub version: Version,
    /// The memory cgroup's directory.
    pub dir: PathBuf,
    /// The v1 cpuacct twin's directory, if one was made.
    pub cpu_dir: Option<PathBuf>,
    /// The memory limit, bytes.
    pub limit: u64,
}

impl Sandbox {
    /// Creates `name` under the memory controller with `limit` bytes (and, on v1, a
    /// twin under `cpuacct_mount`). `on_created` is told each directory as soon as it
    /// exists, so a crash right after still leaves a record of it.
    pub fn create(
        ctrl: &MemoryController,
        name: &str,
        limit: u64,
        cpuacct_mount: Option<&Path>,
        mut on_created: impl FnMut(&Path),
    ) -> Result<Sandbox> {
        let dir = group_path(&ctrl.mount, name);
        if ctrl.version == Version::V2 {
            let sub = ctrl.mount.join("cgroup.subtree_control");
            let enabled = fs::read_to_string(&sub)
                .map(|t| t.split_whitespace().any(|c| c == "memory"))
                .unwrap_or(false);
            if !enabled {
                return Err(HostError::with_fix(
                    format!(
                        "the memory controller is not enabled for children of {} ({} lacks `memory`)",
                        ctrl.mount.display(),
                        sub.display()
                    ),
                    format!("echo +memory > {}", sub.display()),
                ));
            }
        }
        fs::create_dir(&dir).map_err(|e| {
            HostError::with_fix(
                format!("cannot create memory cgroup {}: {e}", dir.display()),
                "run as root; if it exists from an earlier run, `rmdir` it",
            )
        })?;
        on_created(&dir);
        let mut sb = Sandbox {
            version: ctrl.version,
            dir,
            cpu_dir: None,
            limit,
        };
        let limit_file = match ctrl.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        if let Err(e) = sys::write(sb.dir.join(limit_file), &limit.to_string()) {
            let _ = sb.remove();
            return Err(e);
        }
        if ctrl.version == Version::V1 {
            if let Some(m) = cpuacct_mount {
                let d = group_path(m, name);
                if fs::create_dir(&d).is_ok() {
                    on_created(&d);
                    sb.cpu_dir = Some(d);
                }
            }
        }
        Ok(sb)
    }

    /// The `cgroup.procs` files a worker must join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.dir.join("cgroup.procs")];
        if let Some(d) = &self.cpu_dir {
            v.push(d.join("cgroup.procs"));
        }
        v
    }

    /// Makes `cmd`'s child join this sandbox before it execs (and die with the runner).
    pub fn place(&self, cmd: &mut Command) {
        place_in(cmd, &self.procs_files());
    }

    /// Pids in the memory cgroup.
    pub fn pids(&self) -> Vec<u32> {
        read_pids(&self.dir)
    }

    /// Kills every process in the sandbox and waits until it is empty (10 s at most).
    pub fn kill_all(&self) -> Result<()> {
        kill_group(&self.dir, self.version)
    }

    /// `memory.stat` of the group.
    pub fn memory_stat(&self) -> Vec<(String, u64)> {
        sys::parse_vmstat(&sys::read(self.dir.join("memory.stat")).unwrap_or_default())
    }

    /// Peak memory usage, bytes, if the kernel tells.
    pub fn peak_bytes(&self) -> Option<u64> {
        match self.version {
            Version::V1 => sys::read_u64(self.dir.join("memory.max_usage_in_bytes")),
            Version::V2 => sys::read_u64(self.dir.join("memory.peak")),
        }
    }

    /// User and system CPU seconds of everything that ran in the group.
    pub fn cpu_times(&self) -> Option<(f64, f64)> {
        match self.version {
            Version::V2 => {
                let st = sys::parse_vmstat(&sys::read(self.dir.join("cpu.stat")).ok()?);
                let get = |k: &str| st.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
                Some((
                    get("user_usec")? as f64 / 1e6,
                    get("system_usec")? as f64 / 1e6,
                ))
            }
            Version::V1 => {
                let d = self.cpu_dir.as_ref()?;
                let u = sys::read_u64(d.join("cpuacct.usage_user"))?;
                let s = sys::read_u64(d.join("cpuacct.usage_sys"))?;
                let total = sys::read_u64(d.join("cpuacct.usage"));
                Some(split_exact_total(u, s, total))
            }
        }
    }

    /// Kills what is left and removes the groups.
    pub fn remove(&self) -> Result<()> {
        let mut first_err = None;
        for d in std::iter::once(&self.dir).chain(self.cpu_dir.iter()) {
            if let Err(e) = remove_group(d, self.version) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Makes `cmd`'s child write itself into each `cgroup.procs` in `procs` before exec,
/// and ask for SIGKILL when the runner's thread that spawned it dies.
pub fn place_in(cmd: &mut Command, procs: &[PathBuf]) {
    let paths: Vec<CString> = procs
        .iter()
        .filter_map(|p| CString::new(p.as_os_str().as_encoded_bytes()).ok())
        .collect();
    // SAFETY: the hook only calls async-signal-safe functions (open, write, close,
    // prctl) on memory prepared before fork.
    unsafe {
        cmd.pre_exec(move || {
            for p in &paths {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if r != 1 {
                    return Err(err);
                }
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Pids listed in a group's `cgroup.procs`.
pub fn read_pids(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The child cgroups of a group (its subdirectories).
pub fn child_groups(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// cgroup v1's user and system CPU seconds, from `cpuacct.usage_user` and
/// `cpuacct.usage_sys` (ns) scaled to the exact `cpuacct.usage` (ns).
///
/// In kernels since 2021 (6.18 read here) `cpuacct_cpuusage_read()`
/// (kernel/sched/cpuacct.c) reads the user and system figures from the
/// group's tick-sampled `cpustat` (earlier ones split each charge), while
/// `cpuacct.usage` is the exact runtime `cpuacct_charge()` adds up; on a
/// busy VM the two differed by 2 to 8 % here (docs/real-runs.md). The kernel
/// splits a task's exact runtime by its sampled ratio (`cputime_adjust()`,
/// kernel/sched/cputime.c, what `wait4` reports and cgroup v2's `cpu.stat`
/// shows): the same here, so the group's figures and its workers' add up.
/// Without `cpuacct.usage`, or with no samples, the figures as read.
pub fn split_exact_total(user_ns: u64, sys_ns: u64, total_ns: Option<u64>) -> (f64, f64) {
    let sampled = user_ns + sys_ns;
    match total_ns {
        Some(t) if sampled > 0 => {
            let sys = (sys_ns as f64 * t as f64 / sampled as f64).round();
            ((t as f64 - sys) / 1e9, sys / 1e9)
        }
        _ => (user_ns as f64 / 1e9, sys_ns as f64 / 1e9),
    }
}

/// Kills every process of a group and of its child groups (a spec's
/// cgroups), waiting up to 10 s for each to empty.
pub fn kill_group(dir: &Path, version: Version) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for c in child_groups(dir) {
        kill_group(&c, version)?;
    }
    let kill_file = dir.join("cgroup.kill");
    if version == Version::V2 && kill_file.exists() {
        let _ = sys::write(&kill_file, "1");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = read_pids(dir);
        if pids.is_empty() {
            return Ok(());
        }
        for p in &pids {
            // SAFETY: sending a signal has no memory-safety preconditions.
            unsafe { libc::kill(*p as i32, libc::SIGKILL) };
        }
        if Instant::now() > deadline {
            return Err(HostError::with_fix(
                format!(
                    "processes {pids:?} in {} survived SIGKILL for 10 s",
                    dir.display()
                ),
                format!(
                    "wait for them to exit (they may be in uninterruptible I/O), then rmdir {}",
                    dir.display()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills what is in a group and removes it, its child groups first (also
/// for leftovers of a crashed run).
pub fn remove_group(dir: &Path, version: Version) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    kill_group(dir, version)?;
    for c in child_groups(dir) {
        remove_group(&c, version)?;
    }
    let mut last = None;
    for _ in 0..100 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // EBUSY for a moment after the last task exits.
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(HostError::with_fix(
        format!(
            "cannot remove cgroup {}: {}",
            dir.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        ),
        format!("rmdir {}", dir.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_cpu_split_is_scaled_to_the_exact_total() {
        // Sampled 4.2 s user, 7.0 s system; exact 11.03 s.
        let (u, s) = split_exact_total(4_200_000_000, 7_000_000_000, Some(11_030_000_000));
        assert!((u + s - 11.03).abs() < 1e-9, "{u} {s}");
        assert!((s / (u + s) - 7.0 / 11.2).abs() < 1e-9, "{u} {s}");
        assert_eq!(split_exact_total(1_000_000_000, 0, None), (1.0, 0.0));
        assert_eq!(split_exact_total(0, 0, Some(5)), (0.0, 0.0));
    }

    const MOUNTS: &str = "cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
        cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
        cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";

    #[test]
    fn prefers_v2_when_it_has_memory() {
        let m = sys::parse_mounts(MOUNTS);
        let c = detect_with(&m, |_| Some("cpu io memory pids".into())).unwrap();
        assert_eq!(c.version, Version::V2);
        assert_eq!(c.mount, PathBuf::from("/sys/fs/cgroup/unified"));
    }

    #[test]
    fn falls_back_to_v1() {
        // The reference host: v2 mounted without the memory controller.
        let m = sys::parse_mounts(MOUNTS);
        let c = detect_with(&m, |_| Some("hugetlb".into())).unwrap();
        assert_eq!(c.version, Version::V1);
        assert_eq!(c.mount, PathBuf::from("/sys/fs/cgroup/memory"));
        assert_eq!(c.version.scope_label(), "memcg-v1");
        assert_eq!(
            cpuacct_v1_mount(&m),
            Some(PathBuf::from("/sys/fs/cgroup/cpuacct"))
        );
        assert_eq!(
            group_path(&c.mount, "reclaimlab-42"),
            PathBuf::from("/sys/fs/cgroup/memory/reclaimlab-42")
        );
    }

    #[test]
    fn none_without_memory() {
        let m = sys::parse_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
        assert!(detect_with(&m, |_| Some("cpu io".into())).is_none());
        assert!(fix_command(&m).contains("+memory"));
    }
}
