//! Measuring the data device: `run`'s calibration write, then reading the
//! file back with its cached pages dropped (the buffered bandwidths), then
//! single 4 KiB direct reads of it, in order and at random (the per-request
//! latency and the random-access penalty the simulator's device model
//! takes), then 1 MiB direct writes and reads at depth (the device's own
//! bandwidths, which the simulator takes where they were measured).

use crate::error::{human_bytes, HostError, Result};
use crate::{doctor, sys};
use std::fs;
use std::io::Read;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::*;

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
    /// 4 KiB `O_DIRECT` reads one at a time (`None`: the filesystem refused
    /// direct I/O, or the measurement was cut short).
    pub latency: Option<Latency>,
    /// 1 MiB `O_DIRECT` writes and reads, [`DIRECT_DEPTH`] in flight (`None`:
    /// the filesystem refused direct I/O, or the measurement was cut short).
    pub direct: Option<Direct>,
}

impl Bandwidth {
    /// The device's write bandwidth for the simulator: the direct
    /// measurement where there is one. The calibration write (`dd
    /// conv=fdatasync`) times the page cache as much as the device: on the
    /// reference host it gave 171–337 MB/s where the device takes 1 MiB
    /// direct writes at 2,000 MB/s (docs/fidelity.md).
    pub fn device_write_mb_s(&self) -> f64 {
        self.direct.map_or(self.write_mb_s, |d| d.write_mb_s)
    }

    /// The device's read bandwidth for the simulator: direct reads at depth
    /// where measured, else the buffered read-back.
    pub fn device_read_mb_s(&self) -> f64 {
        self.direct
            .and_then(|d| d.read_mb_s)
            .unwrap_or(self.read_mb_s)
    }
}

/// Requests in flight in the direct bandwidth measurement: about what the
/// flusher keeps at a blk-mq disk (blk-wbt's default background depth is a
/// quarter to all of its 16 for a queue this deep), and enough to keep a
/// virtual disk's back end busy.
pub const DIRECT_DEPTH: u32 = 8;

/// The device's bandwidth with the page cache out of the way: the
/// measurement file overwritten, then read, in 1 MiB `O_DIRECT` requests,
/// [`DIRECT_DEPTH`] at a time, front to back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Direct {
    /// Writes, including the closing `fdatasync`, MB/s.
    pub write_mb_s: f64,
    /// Reads, MB/s (`None`: cut short).
    pub read_mb_s: Option<f64>,
}

/// Single 4 KiB direct reads of the measurement file, one in flight: mean
/// service time of reads in file order and at random offsets. Whether the
/// sysfs `rotational` flag is true says little on virtual machines (virtio
/// disks say 1 over flash); these times are what the device does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Mean time of a read that continues the previous one, µs.
    pub seq_4k_us: f64,
    /// Mean time of a read at a random 4 KiB-aligned offset, µs.
    pub rand_4k_us: f64,
}

impl Latency {
    /// The simulator's device parameters from the two times: a request
    /// completes `latency_us` after its transfer (the in-order read less its
    /// transfer at `read_mb_s`), and one that does not continue the
    /// previous pays `seek_us` more (the random read less the in-order one).
    /// `(latency_us, seek_us)`, each at least 0.
    pub fn device_params(&self, read_mb_s: f64) -> (f64, f64) {
        let transfer_us = if read_mb_s > 0.0 {
            4096.0 / read_mb_s
        } else {
            0.0
        };
        (
            (self.seq_4k_us - transfer_us).max(0.0),
            (self.rand_4k_us - self.seq_4k_us).max(0.0),
        )
    }
}

/// `O_DIRECT` wants buffers aligned to the logical block size (4 KiB at
/// most on the disks here): room for `len` bytes at a 4 KiB boundary.
fn direct_buf(len: usize) -> Vec<u8> {
    vec![0u8; len + 4096]
}

/// The 4 KiB-aligned `len` bytes of a [`direct_buf`].
fn aligned(raw: &mut [u8], len: usize) -> &mut [u8] {
    let off = raw.as_ptr().align_offset(4096);
    &mut raw[off..off + len]
}

/// Reads per pattern, and the time each pattern may take at most.
const LATENCY_READS: u32 = 1_000;
const LATENCY_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// Times [`LATENCY_READS`] single 4 KiB `O_DIRECT` reads of `path` (`bytes`
/// long) in order from the start, then as many at random offsets (a fixed
/// xorshift sequence, so repeated measurements read the same blocks). `None`
/// if direct I/O is refused or too few reads fit [`LATENCY_BUDGET`].
fn measure_latency(path: &Path, bytes: u64) -> Option<Latency> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const BLOCK: usize = 4096;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()?;
    let mut raw = direct_buf(BLOCK);
    let buf = aligned(&mut raw, BLOCK);
    let blocks = bytes / BLOCK as u64;
    if blocks < 2 * u64::from(LATENCY_READS) {
        return None;
    }
    let mut time = |offset_of: &mut dyn FnMut(u32) -> u64| -> Option<f64> {
        let t = Instant::now();
        let mut n = 0u32;
        while n < LATENCY_READS && t.elapsed() < LATENCY_BUDGET {
            if f.read_at(buf, offset_of(n)).ok()? != BLOCK {
                return None;
            }
            n += 1;
        }
        (n >= LATENCY_READS / 10).then(|| t.elapsed().as_secs_f64() * 1e6 / f64::from(n))
    };
    let seq_4k_us = time(&mut |i| u64::from(i) * BLOCK as u64)?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let rand_4k_us = time(&mut |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % blocks) * BLOCK as u64
    })?;
    Some(Latency {
        seq_4k_us: round1(seq_4k_us),
        rand_4k_us: round1(rand_4k_us),
    })
}

/// Time each direct pass may take at most; a pass cut short by it still
/// counts if it moved a tenth of the file.
const DIRECT_BUDGET: std::time::Duration = std::time::Duration::from_secs(4);

/// One pass over `path` (`bytes` long, already written) in 1 MiB
/// `O_DIRECT` requests: [`DIRECT_DEPTH`] threads, thread `i` taking blocks
/// `i`, `i + DEPTH`, … so the device sees the file front to back with
/// `DEPTH` requests in flight. Writes end with `fdatasync` (inside the
/// time). MB/s, or `None` if direct I/O is refused or too little moved.
fn direct_pass(path: &Path, bytes: u64, write: bool) -> Option<f64> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const BLOCK: usize = MIB as usize;
    let f = fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()?;
    let blocks = bytes / MIB;
    if blocks < u64::from(DIRECT_DEPTH) {
        return None;
    }
    let t = Instant::now();
    let moved: Vec<Option<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..u64::from(DIRECT_DEPTH))
            .map(|i| {
                let f = &f;
                s.spawn(move || -> Option<u64> {
                    let mut raw = direct_buf(BLOCK);
                    let buf = aligned(&mut raw, BLOCK);
                    buf.fill(0x5a);
                    let mut done = 0u64;
                    let mut b = i;
                    while b < blocks && t.elapsed() < DIRECT_BUDGET {
                        let n = if write {
                            f.write_at(buf, b * MIB).ok()?
                        } else {
                            f.read_at(buf, b * MIB).ok()?
                        };
                        if n != BLOCK {
                            return None;
                        }
                        done += 1;
                        b += u64::from(DIRECT_DEPTH);
                    }
                    Some(done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    if write {
        f.sync_data().ok()?;
    }
    let secs = t.elapsed().as_secs_f64();
    let done: u64 = moved.into_iter().sum::<Option<u64>>()?;
    (done * 10 >= blocks).then(|| round1(done as f64 * MIB as f64 / 1e6 / secs.max(1e-6)))
}

/// The direct measurement: an overwrite pass, then a read pass.
fn measure_direct(path: &Path, bytes: u64) -> Option<Direct> {
    let write_mb_s = direct_pass(path, bytes, true)?;
    Some(Direct {
        write_mb_s,
        read_mb_s: direct_pass(path, bytes, false),
    })
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
pub(super) const NOT_ON_A_DISK: [(i64, &str); 4] = [
    (0x0102_1994, "tmpfs, in memory"),
    (0x8584_58f6, "ramfs, in memory"),
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
];

pub(super) fn fs_type(dir: &Path) -> Option<i64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs on a valid C string into a zeroed struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    #[allow(clippy::unnecessary_cast)]
    (r == 0).then_some(st.f_type as i64)
}

/// Removes the measurement file however the measurement ends.
pub(super) struct TempFile(pub(super) PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Pages of `f` in the page cache, and all its pages (`mincore`).
pub(super) fn resident_pages(f: &fs::File, len: u64) -> Option<(usize, usize)> {
    let page = sys::page_size() as usize;
    let len = len as usize;
    if len == 0 {
        return None;
    }
    // Unmapped before returning.
    let p = sys::map_file_shared_ro(f, len).ok()?;
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
    let latency = measure_latency(&guard.0, bytes);
    let direct = measure_direct(&guard.0, bytes);
    drop(guard);
    Ok(Bandwidth {
        write_mb_s: round1(write_mb_s),
        read_mb_s: round1(read_mb_s.unwrap_or(write_mb_s)),
        read_measured: read_mb_s.is_some(),
        mib,
        when_unix: now_unix(),
        latency,
        direct,
    })
}

pub(super) fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

pub(super) fn now_unix() -> u64 {
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
