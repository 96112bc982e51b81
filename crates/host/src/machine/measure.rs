//! Measuring the data device's bandwidth: `run`'s calibration write, then
//! reading the file back with its cached pages dropped.

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
