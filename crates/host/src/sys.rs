//! Small readers of the host's `/proc` and `/sys` files, and command lookup.
//!
//! Kept apart from the runner so that every parser is a pure function of the
//! file's text and can be unit-tested with a fixture string.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{HostError, Result};

/// Reads a whole file to a string, naming the file on error.
pub fn read(path: impl AsRef<Path>) -> Result<String> {
    let p = path.as_ref();
    fs::read_to_string(p).map_err(|e| HostError::io("cannot read", p, e))
}

/// Writes `value` to a control file (`/proc/sys/...`, cgroup, tracefs) in one write.
pub fn write(path: impl AsRef<Path>, value: &str) -> Result<()> {
    let p = path.as_ref();
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(p)
        .map_err(|e| HostError::io("cannot open for writing", p, e))?;
    f.write_all(value.as_bytes())
        .map_err(|e| HostError::io(&format!("cannot write `{}` to", value.trim()), p, e))
}

/// Whether the current process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Logical CPUs online.
pub fn cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// A shared read-only mapping of the first `len` bytes of the open file
/// `f` (the caller unmaps it), or the `mmap` error.
pub fn map_file_shared_ro(f: &std::fs::File, len: usize) -> std::io::Result<*mut libc::c_void> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: a shared read-only mapping of a file the caller holds open;
    // MAP_FAILED is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p)
}

/// The page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// CLOCK_MONOTONIC now, in ns (the `mono` trace clock reads the same clock).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `uname -r`.
pub fn kernel_release() -> String {
    read("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Parses `key: value kB` lines of `/proc/meminfo` into bytes for `key`.
pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, rest) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        let mut it = rest.split_whitespace();
        let v: u64 = it.next()?.parse().ok()?;
        Some(match it.next() {
            Some("kB") => v * 1024,
            _ => v,
        })
    })
}

/// MemTotal and SwapTotal of this host, bytes.
pub fn mem_and_swap() -> (u64, u64) {
    let t = read("/proc/meminfo").unwrap_or_default();
    (
        meminfo_bytes(&t, "MemTotal").unwrap_or(0),
        meminfo_bytes(&t, "SwapTotal").unwrap_or(0),
    )
}

/// Parses `/proc/vmstat` text: `name value` per line, in file order.
pub fn parse_vmstat(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v: u64 = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// One counter of `/proc/vmstat` now (0 if it cannot be read or is absent).
pub fn vmstat_counter(name: &str) -> u64 {
    parse_vmstat(&read("/proc/vmstat").unwrap_or_default())
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
        .unwrap_or(0)
}

/// One line (`some` or `full`) of a PSI pressure file.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiLine {
    /// avg10 (%).
    pub avg10: f64,
    /// avg60 (%).
    pub avg60: f64,
    /// avg300 (%).
    pub avg300: f64,
    /// Total stall time, µs.
    pub total_us: u64,
}

/// A PSI pressure file (`/proc/pressure/memory`, `memory.pressure`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Psi {
    /// Some tasks stalled.
    pub some: PsiLine,
    /// All non-idle tasks stalled.
    pub full: PsiLine,
}

/// Parses a PSI pressure file.
pub fn parse_psi(text: &str) -> Option<Psi> {
    let mut psi = Psi::default();
    let mut seen = false;
    for l in text.lines() {
        let mut it = l.split_whitespace();
        let which = it.next()?;
        let mut line = PsiLine::default();
        for kv in it {
            let (k, v) = kv.split_once('=')?;
            match k {
                "avg10" => line.avg10 = v.parse().ok()?,
                "avg60" => line.avg60 = v.parse().ok()?,
                "avg300" => line.avg300 = v.parse().ok()?,
                "total" => line.total_us = v.parse().ok()?,
                _ => {}
            }
        }
        match which {
            "some" => psi.some = line,
            "full" => psi.full = line,
            _ => continue,
        }
        seen = true;
    }
    seen.then_some(psi)
}

/// One line of `/proc/mounts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// What is mounted (`/dev/loop0`, `cgroup`, …).
    pub source: PathBuf,
    /// Mount point.
    pub target: PathBuf,
    /// Filesystem type.
    pub fstype: String,
    /// Mount options.
    pub options: Vec<String>,
}

/// Parses `/proc/mounts`.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 4 {
                return None;
            }
            Some(Mount {
                source: PathBuf::from(f[0].replace("\\040", " ")),
                target: PathBuf::from(f[1].replace("\\040", " ")),
                fstype: f[2].to_string(),
                options: f[3].split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// The mount holding `path`: the mount whose target is the longest
/// prefix of it (the last such line when one is mounted over another, as
/// `/proc/mounts` lists them in mount order).
pub fn mount_of<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.target))
        .max_by_key(|m| m.target.components().count())
}

/// The host's mounts (empty if `/proc/mounts` cannot be read).
pub fn mounts() -> Vec<Mount> {
    parse_mounts(&read("/proc/mounts").unwrap_or_default())
}

/// Finds an executable on `PATH` (plus the sbin directories, where root's tools live).
pub fn which(cmd: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"])
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(cmd))
        .find(|p| {
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        });
    found
}

/// `CONFIG_HZ=` from a kernel config text.
pub fn config_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ=")?.trim().parse().ok())
}

/// The running kernel's config text, from `/boot/config-$(uname -r)` or `/proc/config.gz`.
pub fn kernel_config() -> Option<(String, PathBuf)> {
    let boot = PathBuf::from(format!("/boot/config-{}", kernel_release()));
    if let Ok(t) = fs::read_to_string(&boot) {
        return Some((t, boot));
    }
    let gz = PathBuf::from("/proc/config.gz");
    let f = fs::File::open(&gz).ok()?;
    let mut s = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .ok()?;
    Some((s, gz))
}

/// Reads a single integer from a file (a sysctl).
pub fn read_u64(path: impl AsRef<Path>) -> Option<u64> {
    read(path).ok()?.trim().parse().ok()
}

/// Whether a process with this pid exists (signal 0).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as i32, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The start time of a process (field 22 of `/proc/PID/stat`, clock ticks since
/// boot), to tell a pid from a later process that reused it.
pub fn pid_start_time(pid: u32) -> Option<u64> {
    let s = read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_start_time(&s)
}

/// The fields of a `/proc/PID/stat` line from field 3 (`state`) on: index
/// `n - 3` is field `n` of proc(5). `comm` may hold spaces and parentheses,
/// so the fields restart after the last ')'.
pub fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace().collect())
}

/// Field 22 (`starttime`) of a `/proc/PID/stat` line.
pub fn parse_stat_start_time(stat: &str) -> Option<u64> {
    stat_fields(stat)?.get(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo() {
        let t =
            "MemTotal:       24684096 kB\nSwapTotal:             0 kB\nHugePages_Total:       0\n";
        assert_eq!(meminfo_bytes(t, "MemTotal"), Some(24684096 * 1024));
        assert_eq!(meminfo_bytes(t, "SwapTotal"), Some(0));
        assert_eq!(meminfo_bytes(t, "HugePages_Total"), Some(0));
        assert_eq!(meminfo_bytes(t, "Nope"), None);
    }

    #[test]
    fn mount_of_takes_the_deepest_and_latest_mount() {
        let m = parse_mounts(
            "/dev/vda1 / ext4 rw 0 0\n/dev/vdb /var/tmp xfs rw 0 0\n\
             tmpfs /var/tmp tmpfs rw 0 0\n/dev/vdc /var/tmpx btrfs rw 0 0\n",
        );
        let fs = |p: &str| mount_of(&m, Path::new(p)).map(|m| m.fstype.as_str());
        assert_eq!(fs("/var/tmp/reclaimlab-1"), Some("tmpfs"));
        assert_eq!(fs("/var/tmpx/a"), Some("btrfs"));
        assert_eq!(fs("/home/x"), Some("ext4"));
        assert_eq!(mount_of(&[], Path::new("/x")).map(|m| &m.fstype), None);
    }

    #[test]
    fn psi() {
        let t = "some avg10=1.50 avg60=0.20 avg300=0.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=99\n";
        let p = parse_psi(t).unwrap();
        assert_eq!(p.some.total_us, 12345);
        assert_eq!(p.some.avg10, 1.5);
        assert_eq!(p.full.total_us, 99);
        assert!(parse_psi("").is_none());
    }

    #[test]
    fn vmstat_and_mounts() {
        let v = parse_vmstat("nr_free_pages 100\npgscan_file 7\n");
        assert_eq!(
            v,
            vec![("nr_free_pages".into(), 100), ("pgscan_file".into(), 7)]
        );
        let m = parse_mounts(
            "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n",
        );
        assert_eq!(m[0].fstype, "cgroup");
        assert!(m[0].options.contains(&"memory".to_string()));
        assert_eq!(m[1].target, PathBuf::from("/sys/fs/cgroup/unified"));
    }

    #[test]
    fn stat_start_time() {
        let s = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(parse_stat_start_time(s), Some(98765));
        assert_eq!(
            config_hz("# x\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
    }
}
