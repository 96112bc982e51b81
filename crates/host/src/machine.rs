//! This host as a machine profile for the simulator (`sim --machine host`).
//!
//! The profile describes what a real run of the same workload would get, so a
//! real and a simulated run can be put side by side in one report:
//!
//! | `--machine`            | memory                                   | swap                      |
//! |------------------------|------------------------------------------|---------------------------|
//! | `host`                 | 1 GiB, `run`'s default `--memory`        | the host's active swap    |
//! | `host:2G`              | 2 GiB, as `run --memory 2G`              | the host's active swap    |
//! | `host:all`             | MemTotal, as `run --scope host`          | the host's active swap    |
//! | `host:1G,swap=2G`      | 1 GiB                                    | active swap + 2 GiB, as `run --swap-file 2G` |
//! | `host:1G,dir=/data`    | 1 GiB; the data device is the one holding `/data`, as `run --data-dir /data` |
//!
//! CPUs are those this process may run on (`sched_getaffinity`), nodes those
//! under `/sys/devices/system/node`. One data device, the one holding the
//! directory the real run writes to (`/var/tmp` unless `dir=`), with its write
//! bandwidth *measured* by `run`'s own calibration write ([`calibration_write`]:
//! `dd conv=fdatasync`, a buffered write and one `fdatasync`) of a few hundred
//! MiB, and its read bandwidth measured by reading that file back after
//! dropping its cached pages (or, where they cannot be dropped, estimated as
//! equal to the write bandwidth and labelled so). Latency, seek time and queue
//! depth are defaults by kind (flash or rotating), labelled as such.
//!
//! A measurement varies from one call to the next, so it is cached for
//! [`CACHE_MAX_AGE_S`] per directory, device and size (under
//! `$XDG_CACHE_HOME/reclaimlab` or `~/.cache/reclaimlab`), and the resolved
//! profile is meant to be written next to the run records as a TOML file that
//! repeats the run exactly.
//!
//! Nothing here needs root.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::error::{human_bytes, parse_size, HostError, Result};
use crate::{doctor, sys};

const MIB: u64 = 1 << 20;

/// `run`'s default `--memory`, which `--machine host` matches.
pub const DEFAULT_RUN_MEMORY: u64 = 1 << 30;
/// `run`'s default parent of its data directory (`--data-dir`).
pub const DEFAULT_DATA_DIR: &str = "/var/tmp";
/// Size of the bandwidth measurement's file, MiB, unless
/// `RECLAIMLAB_HOST_MEASURE_MIB` says otherwise.
pub const DEFAULT_MEASURE_MIB: u64 = 512;
/// How long a cached measurement is reused, seconds.
pub const CACHE_MAX_AGE_S: u64 = 24 * 3600;

/// The accepted spellings, for error messages.
const SYNTAX: &str =
    "--machine host, host:2G, host:all, host:1G,swap=2G or host:1G,dir=/data (items after `host:` separated by commas)";

/// `run`'s calibration write: `dd if=/dev/zero of=FILE bs=1M count=MIB conv=fdatasync`,
/// output discarded. `run` times it for stutterp's warmup; `--machine host`
/// times it for the data device's write bandwidth.
pub fn calibration_write(file: &Path, mib: u64) -> Command {
    let mut cmd = Command::new("dd");
    cmd.arg("if=/dev/zero")
        .arg(format!("of={}", file.display()))
        .arg("bs=1M")
        .arg(format!("count={mib}"))
        .arg("conv=fdatasync")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// How much memory the profile gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostMemory {
    /// A cgroup limit, bytes (`run --memory`).
    Limit(u64),
    /// The whole of MemTotal (`run --scope host`).
    All,
}

/// A parsed `--machine host[:ITEM,...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostArg {
    /// Memory.
    pub memory: HostMemory,
    /// Extra swap, bytes, as `run --swap-file` would add.
    pub swap_file: Option<u64>,
    /// The directory whose device is measured (`run --data-dir`).
    pub dir: Option<PathBuf>,
}

impl HostArg {
    /// Parses `host`, `host:SIZE`, `host:all`, `host:…,swap=SIZE`, `host:…,dir=DIR`.
    /// `None` if `s` does not name the host at all (a built-in name or a file);
    /// a file called `host` can be given as `./host`.
    pub fn parse(s: &str) -> Option<Result<HostArg>> {
        let rest = if s == "host" {
            ""
        } else {
            s.strip_prefix("host:")?
        };
        Some(Self::parse_items(s, rest))
    }

    fn parse_items(whole: &str, rest: &str) -> Result<HostArg> {
        let bad = |what: String| {
            Err(HostError::with_fix(
                format!("--machine {whole}: {what}"),
                format!("write {SYNTAX}"),
            ))
        };
        let mut arg = HostArg {
            memory: HostMemory::Limit(DEFAULT_RUN_MEMORY),
            swap_file: None,
            dir: None,
        };
        if whole != "host" && rest.trim().is_empty() {
            return bad("nothing after `host:`".into());
        }
        let mut memory_seen = false;
        for item in rest.split(',').filter(|_| !rest.is_empty()) {
            let item = item.trim();
            if item.is_empty() {
                return bad("an empty item between commas".into());
            }
            if let Some(v) = item.strip_prefix("swap=") {
                if arg.swap_file.is_some() {
                    return bad("`swap=` given twice".into());
                }
                arg.swap_file = Some(size(whole, "swap=", v)?);
            } else if let Some(v) = item.strip_prefix("dir=") {
                if arg.dir.is_some() {
                    return bad("`dir=` given twice".into());
                }
                if v.is_empty() {
                    return bad("`dir=` needs a directory".into());
                }
                arg.dir = Some(PathBuf::from(v));
            } else {
                if memory_seen {
                    return bad(format!(
                        "`{item}`: the memory is already given (one SIZE or `all`)"
                    ));
                }
                memory_seen = true;
                arg.memory = if item == "all" {
                    HostMemory::All
                } else if item.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                    HostMemory::Limit(size(whole, "", item)?)
                } else {
                    return bad(format!(
                        "`{item}` is not a size, `all`, `swap=SIZE` or `dir=DIR`"
                    ));
                };
            }
        }
        Ok(arg)
    }

    /// The directory the real run would write to, hence the one measured.
    pub fn data_dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
    }
}

/// A size as `run --memory` accepts it: `1G`, `1536M`, or bytes.
pub fn size_arg(b: u64) -> String {
    // Masks rather than `%`: `is_multiple_of` is newer than the workspace's rust-version.
    if b & ((1 << 30) - 1) == 0 {
        format!("{}G", b >> 30)
    } else if b & (MIB - 1) == 0 {
        format!("{}M", b / MIB)
    } else {
        b.to_string()
    }
}

fn size(whole: &str, key: &str, v: &str) -> Result<u64> {
    parse_size(&format!("--machine {whole}"), v).map_err(|e| {
        HostError::with_fix(
            e.what,
            format!("give {key}SIZE as bytes or a number with K, M, G or T (powers of 1024), e.g. host:2G or host:1G,swap=2G"),
        )
    })
}

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
    /// The active I/O scheduler (`queue/scheduler`, the bracketed name).
    pub scheduler: Option<String>,
    /// `queue/max_sectors_kb`.
    pub max_sectors_kb: Option<u32>,
    /// `queue/wbt_lat_usec` (absent when the kernel has no blk-wbt).
    pub wbt_lat_usec: Option<u64>,
}

/// The bracketed (active) name in a `queue/scheduler` line such as
/// `none [mq-deadline] kyber`.
fn active_scheduler(line: &str) -> Option<String> {
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
    })
}

/// A bandwidth measurement of the device under a directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Bandwidth {
    /// Sequential buffered write + `fdatasync`, MB/s (10^6 bytes).
    pub write_mb_s: f64,
    /// Sequential read, MB/s.
    pub read_mb_s: f64,
    /// Whether `read_mb_s` was measured (else estimated as the write bandwidth).
    pub read_measured: bool,
    /// Size written, MiB.
    pub mib: u64,
    /// When, seconds since the epoch.
    pub when_unix: u64,
}

/// Options of a measurement.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// Size of the file written, MiB.
    pub mib: u64,
    /// The cache directory (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Reuse a cached measurement younger than this, seconds.
    pub max_age_s: u64,
}

impl MeasureOptions {
    /// The defaults: [`DEFAULT_MEASURE_MIB`] (or `RECLAIMLAB_HOST_MEASURE_MIB`),
    /// the user's cache directory, [`CACHE_MAX_AGE_S`].
    pub fn from_env() -> Result<MeasureOptions> {
        let mib = match std::env::var("RECLAIMLAB_HOST_MEASURE_MIB") {
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(n) if (1..=65536).contains(&n) => n,
                _ => {
                    return Err(HostError::with_fix(
                        format!("RECLAIMLAB_HOST_MEASURE_MIB=`{v}`: not a size in MiB from 1 to 65536"),
                        format!("unset it (default {DEFAULT_MEASURE_MIB}) or give a number, e.g. RECLAIMLAB_HOST_MEASURE_MIB=512"),
                    ))
                }
            },
            Err(_) => DEFAULT_MEASURE_MIB,
        };
        Ok(MeasureOptions {
            mib,
            cache_dir: default_cache_dir(),
            max_age_s: CACHE_MAX_AGE_S,
        })
    }
}

/// `$XDG_CACHE_HOME/reclaimlab`, else `$HOME/.cache/reclaimlab`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| {
        let p = PathBuf::from(v);
        p.is_absolute().then_some(p)
    };
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(abs)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(abs)
                .map(|h| h.join(".cache"))
        })
        .map(|c| c.join("reclaimlab"))
}

/// Filesystems with no disk under them (`statfs` magic numbers), by name.
const NOT_ON_A_DISK: [(i64, &str); 4] = [
    (0x0102_1994, "tmpfs, in memory"),
    (0x8584_58f6, "ramfs, in memory"),
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
];

fn fs_type(dir: &Path) -> Option<i64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs on a valid C string into a zeroed struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    #[allow(clippy::unnecessary_cast)]
    (r == 0).then_some(st.f_type as i64)
}

/// Removes the measurement file however the measurement ends.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Pages of `f` in the page cache, and all its pages (`mincore`).
fn resident_pages(f: &fs::File, len: u64) -> Option<(usize, usize)> {
    let page = sys::page_size() as usize;
    let len = len as usize;
    if len == 0 {
        return None;
    }
    // SAFETY: a private read-only mapping of a regular file we hold open;
    // unmapped before returning.
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
        return None;
    }
    let n = len.div_ceil(page);
    let mut vec = vec![0u8; n];
    // SAFETY: vec holds one byte per page of the mapping.
    let r = unsafe { libc::mincore(p, len, vec.as_mut_ptr()) };
    // SAFETY: p/len is the mapping made above.
    unsafe { libc::munmap(p, len) };
    (r == 0).then(|| (vec.iter().filter(|&&b| b & 1 == 1).count(), n))
}

/// Measures the device under `dir`: `run`'s calibration write of `mib` MiB,
/// then a read of the same file after dropping its cached pages. Needs write
/// access to `dir` and `mib` MiB free there; leaves nothing behind.
pub fn measure(dir: &Path, mib: u64) -> Result<Bandwidth> {
    let dir_fix = "give a writable directory on the disk the real run uses: --machine host:dir=DIR (as `run --data-dir DIR`)";
    if !dir.is_dir() {
        return Err(HostError::with_fix(
            format!(
                "--machine host: {} is not a directory, so its disk cannot be measured",
                dir.display()
            ),
            dir_fix,
        ));
    }
    if let Some(t) = fs_type(dir) {
        if let Some((_, what)) = NOT_ON_A_DISK.iter().find(|(m, _)| *m == t) {
            return Err(HostError::with_fix(
                format!("--machine host: {} is not on a disk ({what}): there is no device bandwidth to measure", dir.display()),
                dir_fix,
            ));
        }
    }
    if let Some(free) = doctor::free_bytes(dir) {
        if free < mib * MIB + mib * MIB / 10 {
            return Err(HostError::with_fix(
                format!(
                    "--machine host: {} has {} free; the bandwidth measurement writes {}",
                    dir.display(),
                    human_bytes(free),
                    human_bytes(mib * MIB)
                ),
                format!("free some space, or {dir_fix}, or a smaller RECLAIMLAB_HOST_MEASURE_MIB"),
            ));
        }
    }
    let path = dir.join(format!("reclaimlab-measure-{}", std::process::id()));
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            HostError::with_fix(
                format!(
                    "--machine host: cannot write a test file in {} to measure its disk: {e}",
                    dir.display()
                ),
                dir_fix,
            )
        })?;
    let guard = TempFile(path);
    let t = Instant::now();
    let status = calibration_write(&guard.0, mib).status().map_err(|e| {
        HostError::with_fix(
            format!("--machine host: cannot run dd for the bandwidth measurement: {e}"),
            "install coreutils (dd), or describe the machine in a TOML file (`reclaimlab list machines`)",
        )
    })?;
    let write_s = t.elapsed().as_secs_f64();
    if !status.success() {
        return Err(HostError::with_fix(
            format!(
                "--machine host: `dd ... of={} bs=1M count={mib} conv=fdatasync` failed ({status})",
                guard.0.display()
            ),
            dir_fix,
        ));
    }
    let bytes = mib * MIB;
    let write_mb_s = bytes as f64 / 1e6 / write_s.max(1e-6);
    // Read back from the device, not the page cache: the file is clean after
    // fdatasync, so POSIX_FADV_DONTNEED drops its pages; mincore checks.
    let mut read_mb_s = None;
    if let Ok(mut f) = fs::File::open(&guard.0) {
        // SAFETY: fadvise on an open descriptor.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let dropped = resident_pages(&f, bytes).is_some_and(|(res, all)| res * 100 <= all);
        if dropped {
            let mut buf = vec![0u8; MIB as usize];
            let mut got = 0u64;
            let t = Instant::now();
            while let Ok(n) = f.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got += n as u64;
            }
            let s = t.elapsed().as_secs_f64();
            if got == bytes {
                read_mb_s = Some(bytes as f64 / 1e6 / s.max(1e-6));
            }
        }
    }
    drop(guard);
    Ok(Bandwidth {
        write_mb_s: round1(write_mb_s),
        read_mb_s: round1(read_mb_s.unwrap_or(write_mb_s)),
        read_measured: read_mb_s.is_some(),
        mib,
        when_unix: now_unix(),
    })
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
pub fn utc_date(secs: u64) -> String {
    // Howard Hinnant's civil_from_days.
    let days = (secs / 86400) as i64;
    let (h, m) = ((secs % 86400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02} UTC")
}

/// Where a bandwidth came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provenance {
    /// Measured now; cached in this file (or not cached, with the reason).
    Measured(std::result::Result<PathBuf, String>),
    /// Reused from this cache file.
    Cached(PathBuf),
}

const CACHE_FILE: &str = "host-bandwidth.json";

fn cache_key(dir: &Path, mib: u64) -> Option<(String, String)> {
    let canon = fs::canonicalize(dir).ok()?;
    let dev = fs::metadata(&canon).ok()?.dev();
    Some((
        canon.to_string_lossy().into_owned(),
        format!("{}:{}:{mib}", libc::major(dev), libc::minor(dev)),
    ))
}

fn cache_lookup(file: &Path, dir: &str, key: &str, now: u64, max_age: u64) -> Option<Bandwidth> {
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(file).ok()?).ok()?;
    v.get("entries")?.as_array()?.iter().find_map(|e| {
        if e.get("dir")?.as_str()? != dir || e.get("key")?.as_str()? != key {
            return None;
        }
        let when = e.get("when_unix")?.as_u64()?;
        if when > now || now - when > max_age {
            return None;
        }
        Some(Bandwidth {
            write_mb_s: e.get("write_mb_s")?.as_f64()?,
            read_mb_s: e.get("read_mb_s")?.as_f64()?,
            read_measured: e.get("read_measured")?.as_bool()?,
            mib: e.get("mib")?.as_u64()?,
            when_unix: when,
        })
    })
}

fn cache_store(
    file: &Path,
    dir: &str,
    key: &str,
    bw: &Bandwidth,
    max_age: u64,
) -> std::io::Result<()> {
    let now = bw.when_unix;
    let mut entries: Vec<serde_json::Value> = fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("entries").and_then(|e| e.as_array()).cloned())
        .unwrap_or_default();
    entries.retain(|e| {
        let same = e.get("dir").and_then(|d| d.as_str()) == Some(dir)
            && e.get("key").and_then(|k| k.as_str()) == Some(key);
        let fresh = e
            .get("when_unix")
            .and_then(|w| w.as_u64())
            .is_some_and(|w| w <= now && now - w <= max_age);
        !same && fresh
    });
    entries.push(serde_json::json!({
        "dir": dir,
        "key": key,
        "date": utc_date(now),
        "when_unix": now,
        "mib": bw.mib,
        "write_mb_s": bw.write_mb_s,
        "read_mb_s": bw.read_mb_s,
        "read_measured": bw.read_measured,
    }));
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "what": "reclaimlab --machine host: bandwidth measurements, reused for a day; delete this file to measure again",
        "entries": entries,
    }))?;
    if let Some(parent) = file.parent() {
        fs::create_dir_all(parent)?;
    }
    let tmp = file.with_extension(format!("json.{}", std::process::id()));
    fs::write(&tmp, text)?;
    fs::rename(&tmp, file)
}

/// The bandwidth of the device under `dir`: a cached measurement if one is
/// fresh enough, else measured now (and cached).
pub fn bandwidth(dir: &Path, opts: &MeasureOptions) -> Result<(Bandwidth, Provenance)> {
    let key = cache_key(dir, opts.mib);
    let file = opts.cache_dir.as_ref().map(|d| d.join(CACHE_FILE));
    let now = now_unix();
    if let (Some(f), Some((d, k))) = (&file, &key) {
        if let Some(bw) = cache_lookup(f, d, k, now, opts.max_age_s) {
            return Ok((bw, Provenance::Cached(f.clone())));
        }
    }
    let bw = measure(dir, opts.mib)?;
    let stored = match (&file, &key) {
        (Some(f), Some((d, k))) => cache_store(f, d, k, &bw, opts.max_age_s)
            .map(|_| f.clone())
            .map_err(|e| format!("cannot write the cache {}: {e}", f.display())),
        (None, _) => Err("no cache directory ($XDG_CACHE_HOME and $HOME unset)".into()),
        (_, None) => Err(format!("cannot identify {} for the cache", dir.display())),
    };
    Ok((bw, Provenance::Measured(stored)))
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                o.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The machine profile as machine-file TOML (`reclaimlab_kernel::machine`'s
/// fields), with comments saying where each figure came from. Pure: the facts
/// and the bandwidth are given. Also returns warnings for the user (sizes
/// `run` would refuse).
pub fn machine_toml(
    arg: &HostArg,
    facts: &HostFacts,
    bw: &Bandwidth,
) -> Result<(String, Vec<String>)> {
    let mut warnings = Vec::new();
    let (memory, mem_note) = match arg.memory {
        HostMemory::All => (
            facts.mem_total,
            "MemTotal (as `run --scope host`)".to_string(),
        ),
        HostMemory::Limit(b) => {
            let label = size_arg(b);
            if b < 64 * MIB {
                return Err(HostError::with_fix(
                    format!("--machine host:{label}: too small; the simulator needs at least 64 MiB (and `run --memory` at least 256 MiB)"),
                    "--machine host:1G",
                ));
            }
            if b > facts.mem_total {
                return Err(HostError::with_fix(
                    format!(
                        "--machine host:{label}: more than this host's {} of RAM",
                        human_bytes(facts.mem_total)
                    ),
                    format!(
                        "--machine host:all for the whole machine, or at most host:{}M",
                        facts.mem_total / MIB
                    ),
                ));
            }
            if b < 256 * MIB {
                warnings.push(format!(
                    "host:{label}: `run --memory` refuses less than 256 MiB for stutterp"
                ));
            }
            if b > facts.mem_total / 10 * 9 {
                warnings.push(format!(
                    "host:{label}: `run --memory` refuses more than 90% of RAM; the matching real run is `--scope host` (`--machine host:all`)"
                ));
            }
            (
                b,
                format!("the memory cgroup limit (as `run --memory {label}`), simulated as a machine of\n#   that size: the simulator has only the root memcg, so global reclaim (kswapd, direct)\n#   stands in for the real run's limit reclaim"),
            )
        }
    };
    let memory_mib = memory / MIB;
    if memory_mib > 4 * 1024 * 1024 {
        return Err(HostError::with_fix(
            format!(
                "--machine host: {} of memory is more than the simulator's 4 TiB",
                human_bytes(memory)
            ),
            "--machine host:SIZE with a smaller SIZE",
        ));
    }
    let swap = facts.swap_total + arg.swap_file.unwrap_or(0);
    let swap_note = match (facts.swap_total, arg.swap_file) {
        (0, None) => {
            warnings.push("this host has no swap: stutterp's anon hogs cannot be reclaimed (the real run needs --swap-file SIZE; add swap=SIZE to match it)".into());
            "none active".to_string()
        }
        (s, None) => format!("active swap ({})", human_bytes(s)),
        (s, Some(f)) => format!(
            "active swap ({}) + {} as `run --swap-file {}` adds",
            human_bytes(s),
            human_bytes(f),
            size_arg(f)
        ),
    };
    // The simulator splits memory evenly over nodes and needs a CPU and
    // 32 MiB per node.
    let nodes = facts
        .nodes
        .min(facts.cpus)
        .min((memory_mib / 32).max(1) as u32)
        .max(1);
    let nodes_note = if nodes == facts.nodes {
        "/sys/devices/system/node".to_string()
    } else {
        format!(
            "{} in /sys/devices/system/node, capped at one per CPU and per 32 MiB",
            facts.nodes
        )
    };
    // A single spinning disk streams at most ~300 MB/s; virtual disks (virtio,
    // Xen) often say `rotational` whatever is behind them.
    const SPINNING_MAX_MB_S: f64 = 300.0;
    let (dev_name, rotational, dev_note) = match &facts.device {
        Some(d) => {
            let fastest = bw.write_mb_s.max(if bw.read_measured { bw.read_mb_s } else { 0.0 });
            let rotating = d.rotational && fastest <= SPINNING_MAX_MB_S;
            let kind = match (d.rotational, rotating) {
                (true, true) => "rotating".to_string(),
                (true, false) => format!(
                    "says rotational but moves {fastest:.0} MB/s, more than a spinning disk can: taken as flash"
                ),
                _ => "flash or virtual".to_string(),
            };
            (
                d.name.clone(),
                rotating,
                format!(
                    "{}: {kind}; queue/nr_requests {}",
                    d.name,
                    d.nr_requests.map_or("unknown".into(), |n| n.to_string())
                ),
            )
        }
        None => (
            "data".to_string(),
            false,
            "no block device found under it (overlay, network or device-mapper without sysfs); named `data`".to_string(),
        ),
    };
    // Latency, seek and queue depth are not measured: the defaults of the
    // built-in machines by kind.
    let (latency_us, seek_us, queue_depth) = if rotational {
        (200.0, 6000.0, 32)
    } else {
        (80.0, 20.0, 32)
    };
    // blk-mq unless the kernel predates 5.0 and the disk has no `mq` directory.
    let single_queue = matches!(&facts.device, Some(d) if !d.mq)
        && facts
            .kernel
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| m < 5);
    let layer = if single_queue {
        "single-queue"
    } else {
        "blk-mq"
    };
    let name = "host";
    let mem_label = match arg.memory {
        HostMemory::All => format!("all {}", human_bytes(memory)),
        HostMemory::Limit(b) => format!("a {} cgroup", human_bytes(b)),
    };
    let description = format!(
        "this host ({}{}): {} CPUs, {} of {} RAM, {} swap, {} writing {:.0} MB/s (measured {})",
        facts.hostname,
        if facts.hostname.is_empty() {
            facts.kernel.clone()
        } else {
            format!(", {}", facts.kernel)
        },
        facts.cpus,
        mem_label,
        human_bytes(facts.mem_total),
        human_bytes(swap),
        dev_name,
        bw.write_mb_s,
        utc_date(bw.when_unix)
    );
    let read_note = if bw.read_measured {
        "measured: sequential 1 MiB reads of that file after dropping its cached pages".to_string()
    } else {
        "ESTIMATED as equal to the write bandwidth (the file's cached pages could not be dropped to measure it)".to_string()
    };
    let mut t = String::new();
    t.push_str(&format!(
        "# This host as a reclaimlab machine profile (`sim --machine host`); bandwidth measured {}.\n\
         # Pass this file to `sim --machine FILE` to repeat a run exactly; `--machine host`\n\
         # measures again after a day (the bandwidth varies between measurements).\n\
         # host: {}   kernel: {}\n\
         # cpus: sched_getaffinity of the process; nodes: {nodes_note}\n\
         # memory: {mem_note}; MemTotal {}\n\
         # swap: {swap_note}\n\
         # data device: the one holding {} ({dev_note})\n\
         # write_mb_s: measured, `dd if=/dev/zero bs=1M count={} conv=fdatasync` in {} (run's calibration write)\n\
         # read_mb_s: {read_note}\n\
         # latency_us, seek_us, queue_depth: not measured; defaults for a {} device\n\
         # layer: {layer} (from the disk's sysfs `mq` directory and the kernel version)\n\
         # scheduler, max_sectors_kb, wbt_lat_usec: the disk's sysfs queue settings, where readable\n",
        utc_date(bw.when_unix),
        facts.hostname,
        facts.kernel,
        human_bytes(facts.mem_total),
        facts.dir.display(),
        bw.mib,
        facts.dir.display(),
        if rotational { "rotating" } else { "flash" },
    ));
    t.push_str(&format!("name = {}\n", toml_str(name)));
    t.push_str(&format!("description = {}\n", toml_str(&description)));
    t.push_str(&format!("cpus = {}\n", facts.cpus));
    t.push_str(&format!("nodes = {nodes}\n"));
    t.push_str(&format!("memory_mib = {memory_mib}\n"));
    t.push_str(&format!("swap_mib = {}\n", swap / MIB));
    t.push_str("\n[[devices]]\n");
    t.push_str(&format!("name = {}\n", toml_str(&dev_name)));
    t.push_str(&format!("layer = {}\n", toml_str(layer)));
    t.push_str(&format!("write_mb_s = {:.1}\n", bw.write_mb_s));
    t.push_str(&format!("read_mb_s = {:.1}\n", bw.read_mb_s));
    t.push_str(&format!("latency_us = {latency_us:.1}\n"));
    t.push_str(&format!("seek_us = {seek_us:.1}\n"));
    t.push_str(&format!("queue_depth = {queue_depth}\n"));
    // The block layer's own settings, as sysfs has them (the simulator
    // models none, mq-deadline and blk-wbt; another scheduler is noted and
    // left to the default).
    if let Some(d) = &facts.device {
        match d.scheduler.as_deref() {
            Some(sched @ ("none" | "mq-deadline")) if !single_queue => {
                t.push_str(&format!("scheduler = {}\n", toml_str(sched)));
            }
            Some(other) => t.push_str(&format!(
                "# scheduler: {other} on this host (not modelled; the kernel's default is used)\n"
            )),
            None => {}
        }
        if let Some(kb) = d.max_sectors_kb {
            t.push_str(&format!("max_sectors_kb = {kb}\n"));
        }
        if let Some(us) = d.wbt_lat_usec {
            t.push_str(&format!("wbt_lat_usec = {us}\n"));
        }
    }
    Ok((t, warnings))
}

/// `--machine host…` resolved: the profile's TOML and what to tell the user.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Machine-file TOML.
    pub toml: String,
    /// Lines for stderr: where the bandwidth came from, warnings.
    pub notes: Vec<String>,
    /// The bandwidth used.
    pub bandwidth: Bandwidth,
}

/// Resolves a parsed `--machine host…`: gathers the facts, measures (or reuses
/// a cached measurement) and builds the profile.
pub fn resolve(arg: &HostArg, opts: &MeasureOptions) -> Result<Resolved> {
    let dir = arg.data_dir();
    let facts = gather_facts(&dir)?;
    let dev = facts
        .device
        .as_ref()
        .map_or("its device".to_string(), |d| d.name.clone());
    let mut notes = Vec::new();
    let (bw, prov) = bandwidth(&dir, opts)?;
    let figures = format!(
        "write {:.0} MB/s, read {:.0} MB/s{}",
        bw.write_mb_s,
        bw.read_mb_s,
        if bw.read_measured {
            ""
        } else {
            " (estimated = write)"
        }
    );
    match prov {
        Provenance::Cached(f) => notes.push(format!(
            "--machine host: reusing the measurement of {} ({dev}) from {}: {figures}; cached in {} (delete it to measure again)",
            dir.display(),
            utc_date(bw.when_unix),
            f.display()
        )),
        Provenance::Measured(stored) => {
            notes.push(format!(
                "--machine host: measured {} ({dev}) with a {} MiB dd conv=fdatasync write and read-back: {figures}",
                dir.display(),
                bw.mib
            ));
            notes.push(match stored {
                Ok(f) => format!(
                    "--machine host: cached in {} for {} h (delete it to measure again)",
                    f.display(),
                    opts.max_age_s / 3600
                ),
                Err(why) => format!("--machine host: not cached ({why}); the next call measures again"),
            });
        }
    }
    let (toml, warnings) = machine_toml(arg, &facts, &bw)?;
    notes.extend(
        warnings
            .into_iter()
            .map(|w| format!("--machine host: warning: {w}")),
    );
    Ok(Resolved {
        toml,
        notes,
        bandwidth: bw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(s: &str) -> HostArg {
        HostArg::parse(s).expect("a host arg").expect("valid")
    }

    fn err(s: &str) -> String {
        HostArg::parse(s)
            .expect("a host arg")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_host_args() {
        assert_eq!(HostArg::parse("small"), None);
        assert_eq!(HostArg::parse("hostile.toml"), None);
        assert_eq!(HostArg::parse("./host"), None);
        assert_eq!(
            arg("host"),
            HostArg {
                memory: HostMemory::Limit(1 << 30),
                swap_file: None,
                dir: None
            }
        );
        assert_eq!(arg("host:2G").memory, HostMemory::Limit(2 << 30));
        assert_eq!(arg("host:512M").memory, HostMemory::Limit(512 << 20));
        assert_eq!(arg("host:all").memory, HostMemory::All);
        let a = arg("host:1G,swap=2G,dir=/data");
        assert_eq!(a.memory, HostMemory::Limit(1 << 30));
        assert_eq!(a.swap_file, Some(2 << 30));
        assert_eq!(a.data_dir(), PathBuf::from("/data"));
        let a = arg("host:swap=1G");
        assert_eq!(a.memory, HostMemory::Limit(DEFAULT_RUN_MEMORY));
        assert_eq!(a.data_dir(), PathBuf::from(DEFAULT_DATA_DIR));
    }

    #[test]
    fn rejects_bad_host_args() {
        let e = err("host:lots");
        assert!(e.contains("`lots` is not a size, `all`"), "{e}");
        assert!(e.contains("fix: write --machine host, host:2G"), "{e}");
        let e = err("host:2X");
        assert!(e.contains("`2X` is not a size"), "{e}");
        assert!(e.contains("fix:"), "{e}");
        assert!(err("host:").contains("nothing after"));
        assert!(err("host:1G,,swap=1G").contains("empty item"));
        assert!(err("host:1G,2G").contains("already given"));
        assert!(err("host:all,1G").contains("already given"));
        assert!(err("host:swap=big").contains("`big` is not a size"));
        assert!(err("host:0").contains("`0` is not a size"));
        assert!(err("host:dir=").contains("needs a directory"));
    }

    fn facts() -> HostFacts {
        HostFacts {
            hostname: "box".into(),
            kernel: "6.1.0".into(),
            cpus: 4,
            nodes: 1,
            mem_total: 16 << 30,
            swap_total: 2 << 30,
            dir: PathBuf::from("/var/tmp"),
            device: Some(BlockDev {
                name: "nvme0n1".into(),
                rotational: false,
                nr_requests: Some(255),
                mq: true,
                scheduler: Some("none".into()),
                max_sectors_kb: Some(512),
                wbt_lat_usec: Some(2000),
            }),
        }
    }

    #[test]
    fn active_scheduler_is_the_bracketed_name() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            active_scheduler("[none] mq-deadline").as_deref(),
            Some("none")
        );
        assert_eq!(active_scheduler("none"), None);
    }

    fn bw() -> Bandwidth {
        Bandwidth {
            write_mb_s: 812.5,
            read_mb_s: 1500.0,
            read_measured: true,
            mib: 256,
            when_unix: 1_700_000_000,
        }
    }

    #[test]
    fn builds_the_profile_from_facts() {
        let (t, w) = machine_toml(&arg("host"), &facts(), &bw()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        for line in [
            "name = \"host\"\n",
            "cpus = 4\n",
            "nodes = 1\n",
            "memory_mib = 1024\n",
            "swap_mib = 2048\n",
            "name = \"nvme0n1\"\n",
            "layer = \"blk-mq\"\n",
            "write_mb_s = 812.5\n",
            "read_mb_s = 1500.0\n",
            "queue_depth = 32\n",
        ] {
            assert!(t.contains(line), "{line:?} missing in\n{t}");
        }
        assert!(t.contains("# read_mb_s: measured"), "{t}");
        let (t, _) = machine_toml(&arg("host:all,swap=1G"), &facts(), &bw()).unwrap();
        assert!(
            t.contains("memory_mib = 16384\n") && t.contains("swap_mib = 3072\n"),
            "{t}"
        );
        let mut b = bw();
        b.read_measured = false;
        let (t, _) = machine_toml(&arg("host:2G"), &facts(), &b).unwrap();
        assert!(
            t.contains("memory_mib = 2048\n") && t.contains("ESTIMATED"),
            "{t}"
        );
    }

    #[test]
    fn profile_sizes_checked_against_the_host() {
        let e = machine_toml(&arg("host:32G"), &facts(), &bw())
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than this host's 16.0 GiB"), "{e}");
        assert!(e.contains("fix: --machine host:all"), "{e}");
        let e = machine_toml(&arg("host:32M"), &facts(), &bw())
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 64 MiB"), "{e}");
        let (_, w) = machine_toml(&arg("host:128M"), &facts(), &bw()).unwrap();
        assert!(w.iter().any(|w| w.contains("256 MiB")), "{w:?}");
        let (_, w) = machine_toml(&arg("host:15G"), &facts(), &bw()).unwrap();
        assert!(w.iter().any(|w| w.contains("90%")), "{w:?}");
        let mut f = facts();
        f.swap_total = 0;
        let (t, w) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(t.contains("swap_mib = 0\n"));
        assert!(w.iter().any(|w| w.contains("no swap")), "{w:?}");
    }

    #[test]
    fn nodes_capped_and_odd_devices_named() {
        let mut f = facts();
        f.nodes = 8;
        f.cpus = 2;
        f.device = None;
        let (t, _) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(t.contains("nodes = 2\n") && t.contains("capped"), "{t}");
        assert!(t.contains("name = \"data\"\n"), "{t}");
        f.hostname = "we\"ird\\".into();
        let (t, _) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(t.contains("we\\\"ird\\\\"), "{t}");
    }

    #[test]
    fn fast_rotational_disks_are_taken_as_flash() {
        let mut f = facts();
        f.device.as_mut().unwrap().rotational = true;
        let mut b = bw();
        b.write_mb_s = 150.0;
        b.read_mb_s = 160.0;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 6000.0\n") && t.contains("nvme0n1: rotating"),
            "{t}"
        );
        b.read_mb_s = 1450.2;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 20.0\n") && t.contains("moves 1450 MB/s"),
            "{t}"
        );
        b.read_measured = false;
        b.read_mb_s = b.write_mb_s;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(t.contains("seek_us = 6000.0\n"), "{t}");
        b.write_mb_s = 1116.5;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 20.0\n") && t.contains("taken as flash"),
            "{t}"
        );
    }

    #[test]
    fn sizes_as_run_spells_them() {
        assert_eq!(size_arg(1 << 30), "1G");
        assert_eq!(size_arg(1536 << 20), "1536M");
        assert_eq!(size_arg(1000), "1000");
        let (t, _) = machine_toml(&arg("host:1536M,swap=2G"), &facts(), &bw()).unwrap();
        assert!(
            t.contains("`run --memory 1536M`") && t.contains("`run --swap-file 2G`"),
            "{t}"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn cache_round_trip_and_expiry() {
        let d = std::env::temp_dir().join(format!("reclaimlab-cache-test-{}", std::process::id()));
        let f = d.join(CACHE_FILE);
        let b = Bandwidth {
            when_unix: 1_000_000,
            ..bw()
        };
        cache_store(&f, "/var/tmp", "8:0:256", &b, 3600).unwrap();
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:256", 1_000_100, 3600),
            Some(b.clone())
        );
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:16", 1_000_100, 3600),
            None
        );
        assert_eq!(cache_lookup(&f, "/data", "8:0:256", 1_000_100, 3600), None);
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:256", 1_000_000 + 3601, 3600),
            None
        );
        let text = fs::read_to_string(&f).unwrap();
        assert!(
            text.contains("\"date\": \"1970-01-12 13:46 UTC\""),
            "{text}"
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unwritable_or_missing_directory_is_a_clear_error() {
        let e = measure(Path::new("/nonexistent/reclaimlab"), 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not a directory") && e.contains("fix: give a writable directory"),
            "{e}"
        );
        let e = measure(Path::new("/proc"), 1).unwrap_err().to_string();
        assert!(
            e.contains("/proc is not on a disk (proc)") && e.contains("fix:"),
            "{e}"
        );
    }
}
