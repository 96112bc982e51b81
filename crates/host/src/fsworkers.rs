//! The worker programs of the OOM seed (issue 19), run as hidden
//! subcommands like those of `workers.rs`: `reclaimlab worker mlock …`
//! locks memory the way Dave Chinner's squeeze tests did (2019 RFC:
//! "progressively locking 2GB of memory at time"; 2020: 14.5–15 GB pinned
//! with `mlock()`), and `reclaimlab worker fs-create …` creates files the
//! way `fs_mark -S0 -s 0` does (reference §3.10): zero-length files
//! (or `file_size` bytes), no fsync, round-robin over directories.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{HostError, Result};
use crate::sys;

/// Raises `RLIMIT_MEMLOCK` to at least `bytes` (root may; others only up
/// to their hard limit). The error names the limit and the fix.
pub fn raise_memlock_limit(bytes: u64) -> Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
    if lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= bytes {
        return Ok(());
    }
    let want = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &want) } == 0 {
        return Ok(());
    }
    // Raising the hard limit needs CAP_SYS_RESOURCE; but with CAP_IPC_LOCK
    // mlock ignores the limit (5.9.1 mm/mlock.c do_mlock: `locked <=
    // lock_limit || capable(CAP_IPC_LOCK)`), as for root in most containers.
    if has_cap_ipc_lock() {
        return Ok(());
    }
    Err(HostError::with_fix(
        format!(
            "cannot mlock {} MiB: RLIMIT_MEMLOCK is {} KiB (hard {} KiB), raising it was refused ({}), and the process lacks CAP_IPC_LOCK",
            bytes >> 20,
            lim.rlim_cur >> 10,
            lim.rlim_max >> 10,
            std::io::Error::last_os_error()
        ),
        "run as root (reclaimlab run raises the limit for its mlock worker), or raise the limit first: `ulimit -l unlimited`, or memlock in /etc/security/limits.conf".to_string(),
    ))
}

/// Whether the effective capabilities include `CAP_IPC_LOCK` (bit 14).
fn has_cap_ipc_lock() -> bool {
    sys::read("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 14) != 0)
}

/// The mlock worker: `mmap` + `mlock` + touch `bytes` in steps of `step`
/// (0: all at once) every `interval`, then hold until `stop`. Prints
/// `t_s locked_mib step_us` after each step, the last the time the step
/// took to map, lock and touch (the runner keeps the output, so a run
/// killed by the OOM killer shows how far it got, and records each step's
/// time as an `mlock` latency sample, as the simulator's mlock worker
/// does).
pub fn mlock_hold(
    bytes: u64,
    step: u64,
    interval: Duration,
    t0_mono_ns: u64,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    raise_memlock_limit(bytes)?;
    let page = sys::page_size();
    let step = if step == 0 { bytes } else { step };
    let out = std::io::stdout();
    let mut locked = 0u64;
    while locked < bytes && !stop.load(Ordering::Relaxed) {
        let start = std::time::Instant::now();
        let n = step.min(bytes - locked).div_ceil(page) * page;
        // SAFETY: an anonymous private mapping with no address hint.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                n as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(HostError::new(format!(
                "mlock worker: mmap of {n} bytes failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: p maps n bytes; mlock populates and locks them.
        if unsafe { libc::mlock(p, n as usize) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(HostError::with_fix(
                format!(
                    "mlock worker: mlock of {} MiB (after {} MiB locked) failed: {e}",
                    n >> 20,
                    locked >> 20
                ),
                "ENOMEM/EPERM: RLIMIT_MEMLOCK or the memory cgroup is too small for size_mib; lock less or raise --memory".to_string(),
            ));
        }
        // Write each page too, as the 2019 test's memory was used.
        let mut off = 0;
        while off < n {
            // SAFETY: within the locked mapping.
            unsafe { std::ptr::write_volatile(p.cast::<u8>().add(off as usize), 1) };
            off += page;
        }
        locked += n;
        let step_us = start.elapsed().as_secs_f64() * 1e6;
        let t_s = sys::mono_ns().saturating_sub(t0_mono_ns) as f64 / 1e9;
        let _ = writeln!(out.lock(), "{t_s:.3} {} {step_us:.1}", locked >> 20);
        if locked < bytes {
            let rest = interval.saturating_sub(start.elapsed());
            sleep_unless_stopped(rest, &stop);
        }
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let end = std::time::Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let now = std::time::Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(100)));
    }
}

/// The fs_mark-like creator: process `index` creates `files` files (0:
/// until `stop`) of `file_size` bytes, `d0`…`d{dirs-1}` under `dir` in
/// turn, no fsync. Stops creating at `ENOSPC` (the image is full) and
/// waits for `stop`. Prints the number of files created every 1000 files
/// and when it ends.
pub fn fs_create(
    dir: &Path,
    dirs: u32,
    files: u64,
    file_size: u64,
    index: u32,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let dirs = dirs.max(1);
    for d in 0..dirs {
        let p = dir.join(format!("d{d}"));
        match fs::create_dir(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(HostError::io("fs-create: cannot create", &p, e)),
        }
    }
    let data = vec![0xa5u8; file_size.min(1 << 20) as usize];
    let mut n: u64 = 0;
    let mut full = false;
    while !stop.load(Ordering::Relaxed) && (files == 0 || n < files) {
        let p = dir
            .join(format!("d{}", n % u64::from(dirs)))
            .join(format!("p{index}-{n}"));
        match create_one(&p, file_size, &data) {
            Ok(()) => {
                n += 1;
                // Progress, since the runner SIGKILLs its workers at the
                // end of a step: the last line is (about) the count.
                if n.is_multiple_of(1000) {
                    println!("{n}");
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                full = true;
                break;
            }
            Err(e) => return Err(HostError::io("fs-create: cannot create", &p, e)),
        }
    }
    println!("{n}{}", if full { " ENOSPC" } else { "" });
    while full && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn create_one(p: &Path, size: u64, data: &[u8]) -> std::io::Result<()> {
    let mut f = fs::File::create(p)?;
    let mut left = size;
    while left > 0 {
        let k = left.min(data.len() as u64) as usize;
        f.write_all(&data[..k])?;
        left -= k as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_create_makes_files_round_robin() {
        let dir = std::env::temp_dir().join(format!("rl-fscreate-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs_create(&dir, 4, 10, 3, 7, Arc::new(AtomicBool::new(false))).unwrap();
        let counts: Vec<usize> = (0..4)
            .map(|d| fs::read_dir(dir.join(format!("d{d}"))).unwrap().count())
            .collect();
        let size = fs::metadata(dir.join("d1").join("p7-5")).unwrap().len();
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(counts, [3, 3, 2, 2]);
        assert_eq!(size, 3);
    }
}
