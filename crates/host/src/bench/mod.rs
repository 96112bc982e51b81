//! Helpers shared by the host benchmarks (`crates/host/examples`): reading
//! `/proc` for CPU times, pinning threads, temporary files, and reader
//! threads that make clean page cache from sparse files (the set-up of
//! `lru_lock_hold` and `perf_page_costs`, docs/bench/cpu-costs.md);
//! [`cli`], their command lines and exit codes.

pub mod cli;

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::sys;

/// Bytes per `pread` of the [`Readers`].
pub const READ_BYTES: usize = 128 * 1024;

/// `/proc/stat`'s first line: (busy, steal) in clock ticks.
pub fn parse_proc_stat_cpu(text: &str) -> Option<(u64, u64)> {
    let l = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = l
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice
    if v.len() < 8 {
        return None;
    }
    let busy = v[0] + v[1] + v[2] + v[5] + v[6];
    Some((busy, v[7]))
}

/// A thread's (user, system) ticks from its `stat` and time on CPU, ns,
/// from its `schedstat`.
pub fn thread_times(tid: u32) -> (u64, u64, u64) {
    let stat = fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    let f = sys::stat_fields(&stat).unwrap_or_default();
    let tick = |n: usize| f.get(n - 3).and_then(|x| x.parse().ok()).unwrap_or(0);
    let run = fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    (tick(14), tick(15), run)
}

/// Clock ticks per second (`_SC_CLK_TCK`).
pub fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as f64
    } else {
        100.0
    }
}

/// This thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Pins this thread to `cpu`.
pub fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; the call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; the call fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Drops `path`'s clean pages from the page cache (`POSIX_FADV_DONTNEED`).
pub fn drop_cache(path: &Path) {
    if let Ok(f) = File::open(path) {
        // SAFETY: advice on our own open file.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

/// A file removed on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// Creates `path` as a sparse file of `bytes` (holes, no blocks),
    /// removed on drop, also when sizing it fails.
    pub fn sparse(path: &Path, bytes: u64) -> Result<TempFile, String> {
        let f = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let t = TempFile(path.to_path_buf());
        f.set_len(bytes)
            .map_err(|e| format!("cannot size {}: {e}", path.display()))?;
        Ok(t)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        drop_cache(&self.0);
        if let Err(e) = fs::remove_file(&self.0) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("reclaimlab: cannot remove {}: {e}", self.0.display());
            }
        }
    }
}

/// Threads reading files in 128 KiB `pread`s, round and round, each
/// pinned to a CPU (`POSIX_FADV_RANDOM` when `random`: order-0 folios),
/// stopped and joined on drop.
pub struct Readers {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<Result<(), String>>>,
    /// The readers' thread ids, in the order of the files.
    pub tids: Vec<u32>,
    /// Bytes read so far, all readers together.
    pub bytes: Arc<AtomicU64>,
}

impl Readers {
    pub fn start(files: &[PathBuf], cpus: &[usize], random: bool) -> Result<Readers, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let bytes = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let mut r = Readers {
            stop: Arc::clone(&stop),
            handles: Vec::new(),
            tids: Vec::new(),
            bytes: Arc::clone(&bytes),
        };
        for (i, path) in files.iter().enumerate() {
            let (path, stop, bytes, tx) = (
                path.clone(),
                Arc::clone(&stop),
                Arc::clone(&bytes),
                tx.clone(),
            );
            let cpu = cpus[i % cpus.len()];
            r.handles.push(std::thread::spawn(move || {
                pin(cpu);
                let f = File::open(&path)
                    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
                if random {
                    // SAFETY: advice on our own open file.
                    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
                }
                let size = f.metadata().map(|m| m.len()).unwrap_or(0);
                let _ = tx.send(gettid());
                let mut buf = vec![0u8; READ_BYTES];
                let mut off = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let n = f
                        .read_at(&mut buf, off)
                        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                    bytes.fetch_add(n as u64, Ordering::Relaxed);
                    off += n as u64;
                    if n == 0 || off >= size {
                        off = 0;
                    }
                }
                Ok(())
            }));
        }
        drop(tx);
        for _ in files {
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(t) => r.tids.push(t),
                Err(_) => return Err("a reader thread did not start".into()),
            }
        }
        Ok(r)
    }

    pub fn finish(mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            h.join()
                .map_err(|_| "a reader thread panicked".to_string())??;
        }
        Ok(())
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Sleeps `secs`, or fails with "interrupted" as soon as `stop` is set.
pub fn sleep_or_stop(stop: &AtomicBool, secs: f64) -> Result<(), String> {
    let end = sys::mono_ns() + (secs * 1e9) as u64;
    while sys::mono_ns() < end {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_busy_and_steal() {
        let t = "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(parse_proc_stat_cpu(t), Some((160, 7)));
        assert_eq!(parse_proc_stat_cpu("cpu 1 2\n"), None);
    }
}
