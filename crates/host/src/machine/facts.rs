//! What the host is: its CPUs, nodes, memory, swap and the block device
//! holding the data directory.

use crate::error::{HostError, Result};
use crate::sys;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The block device under a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDev {
    /// Kernel name of the whole disk (`sda`, `nvme0n1`, `vda`, `dm-0`).
    pub name: String,
    /// `queue/rotational` is 1.
    pub rotational: bool,
    /// `queue/nr_requests`, if readable.
    pub nr_requests: Option<u32>,
    /// The disk has an `mq` directory (blk-mq).
    pub mq: bool,
    /// The blk-mq tag set's depth, `mq/0/nr_tags`: the requests the driver
    /// has in flight at once (the first hardware queue's; every queue of a
    /// tag set has the same).
    pub nr_tags: Option<u32>,
    /// The active I/O scheduler (`queue/scheduler`, the bracketed name).
    pub scheduler: Option<String>,
    /// `queue/max_sectors_kb`.
    pub max_sectors_kb: Option<u32>,
    /// `queue/wbt_lat_usec` (absent when the kernel has no blk-wbt).
    pub wbt_lat_usec: Option<u64>,
}

/// The bracketed (active) name in a `queue/scheduler` line such as
/// `none [mq-deadline] kyber`.
pub(super) fn active_scheduler(line: &str) -> Option<String> {
    let start = line.find('[')? + 1;
    let end = start + line[start..].find(']')?;
    Some(line[start..end].to_string())
}

/// The disk holding `dir` (a partition's parent), from `/sys/dev/block`; `None`
/// for filesystems without one (overlay, tmpfs, network).
pub fn block_device_of(dir: &Path) -> Option<BlockDev> {
    let dev = fs::metadata(dir).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let sysdir = fs::canonicalize(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    let disk = if sysdir.join("partition").exists() {
        sysdir.parent()?.to_path_buf()
    } else {
        sysdir
    };
    Some(BlockDev {
        name: disk.file_name()?.to_string_lossy().into_owned(),
        rotational: sys::read_u64(disk.join("queue/rotational")) == Some(1),
        nr_requests: sys::read_u64(disk.join("queue/nr_requests")).map(|v| v as u32),
        mq: disk.join("mq").exists(),
        nr_tags: sys::read_u64(disk.join("mq/0/nr_tags")).map(|v| v as u32),
        scheduler: fs::read_to_string(disk.join("queue/scheduler"))
            .ok()
            .and_then(|l| active_scheduler(&l)),
        max_sectors_kb: sys::read_u64(disk.join("queue/max_sectors_kb")).map(|v| v as u32),
        wbt_lat_usec: sys::read_u64(disk.join("queue/wbt_lat_usec")),
    })
}

/// What the profile is built from, apart from the bandwidth.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// CPUs this process may run on.
    pub cpus: u32,
    /// NUMA nodes online.
    pub nodes: u32,
    /// MemTotal, bytes.
    pub mem_total: u64,
    /// Active swap, bytes.
    pub swap_total: u64,
    /// The directory measured.
    pub dir: PathBuf,
    /// Its disk, if it has one.
    pub device: Option<BlockDev>,
    /// The memory controller's cgroup version (1 or 2), if it is mounted.
    pub memcg_version: Option<u32>,
    /// The filesystem type of the directory's mount (`/proc/mounts`).
    pub fstype: Option<String>,
    /// `/sys/kernel/mm/transparent_hugepage/enabled`'s mode, if readable.
    pub thp: Option<&'static str>,
}

/// NUMA nodes of this host (`/sys/devices/system/node/nodeN`), at least 1.
pub(crate) fn numa_nodes() -> u32 {
    fs::read_dir("/sys/devices/system/node")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.strip_prefix("node")
                        .is_some_and(|d| d.parse::<u32>().is_ok())
                })
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

/// Reads the facts of this host for a run writing to `dir`.
pub fn gather_facts(dir: &Path) -> Result<HostFacts> {
    let proc_fix = "mount /proc (mount -t proc proc /proc), or describe the machine in a TOML file (`reclaimlab list machines`)";
    let meminfo = sys::read("/proc/meminfo").map_err(|e| HostError::with_fix(e.what, proc_fix))?;
    let mem_total = sys::meminfo_bytes(&meminfo, "MemTotal")
        .ok_or_else(|| HostError::with_fix("/proc/meminfo has no MemTotal line", proc_fix))?;
    let swaps = sys::read("/proc/swaps").map_err(|e| HostError::with_fix(e.what, proc_fix))?;
    let swap_total = crate::swap::parse_swaps(&swaps)
        .iter()
        .map(|a| a.size)
        .sum();
    Ok(HostFacts {
        hostname: sys::read("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        kernel: sys::kernel_release(),
        cpus: sys::cpus(),
        nodes: numa_nodes(),
        mem_total,
        swap_total,
        dir: dir.to_path_buf(),
        device: block_device_of(dir),
        memcg_version: crate::cgroup::detect().map(|c| match c.version {
            crate::cgroup::Version::V1 => 1,
            crate::cgroup::Version::V2 => 2,
        }),
        fstype: sys::mount_of(&sys::mounts(), dir).map(|m| m.fstype.clone()),
        thp: sys::read("/sys/kernel/mm/transparent_hugepage/enabled")
            .ok()
            .and_then(|t| crate::guest::machine::thp_mode(&t)),
    })
}
