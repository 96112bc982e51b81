//! Bounds, on this host's real kernel, what reclaiming one clean page-cache
//! page costs: the simulator's `cost.scan_page_ns + cost.reclaim_page_ns`
//! for the easiest case (an inactive, clean, unmapped file page, reclaimed on
//! first sight), which the README calls an estimate.
//!
//! Method: read a 1 GiB file from a cold cache with 1 MiB `pread`s inside a
//! memory cgroup limited to 64 MiB. Every page read beyond the limit is
//! reclaimed by the reading thread itself (limit reclaim,
//! `try_to_free_mem_cgroup_pages`), so the thread's system time covers, per
//! page: the read syscall's share, I/O submission, page allocation,
//! page-cache insertion, the copy to user space, and the reclaim of one older
//! page. That total, per page beyond the limit, is an upper bound on the
//! reclaim cost; subtracting the copy (`cost.copy_page_ns`, measured by the
//! `cpu_costs` example) tightens it. The same read without a limit is
//! printed for reference only: on a virtual machine it pays for the first
//! touch of guest memory the host has not backed yet (nested paging), which
//! the limited run, recycling the same 16 K pages, does not.
//!
//! Needs root and a memory cgroup (v2 with the memory controller, or v1's
//! `memory` hierarchy); writes a 1 GiB file in `$TMPDIR` (or the current
//! directory). The cgroup and the file are removed at the end.
//!
//! Run: `cargo run --release -p reclaimlab-host --example reclaim_cost`
//! Results: docs/bench/cpu-costs.md

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

const MIB: usize = 1 << 20;
const FILE_MIB: usize = 1024;
const LIMIT_MIB: usize = 64;

/// This thread's system time, in ns (`RUSAGE_THREAD`).
fn thread_stime_ns() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_stime.tv_sec as u64 * 1_000_000_000 + ru.ru_stime.tv_usec as u64 * 1000
}

/// Drops `f`'s pages from the page cache (they are clean after fsync).
fn drop_cache(f: &File) {
    // SAFETY: fadvise on an open descriptor; no memory is touched.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Reads the whole file in 1 MiB preads; returns the thread's system ns.
fn read_all(f: &File) -> u64 {
    let mut buf = vec![0u8; MIB];
    let t0 = thread_stime_ns();
    let mut off = 0u64;
    while off < (FILE_MIB * MIB) as u64 {
        let n = f.read_at(&mut buf, off).expect("read");
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    thread_stime_ns() - t0
}

/// A memory cgroup for this measurement: its directory and the file the
/// limit goes into.
struct Memcg {
    dir: PathBuf,
    limit_file: &'static str,
    procs_file: &'static str,
    parent_procs: PathBuf,
}

impl Memcg {
    fn create() -> Result<Memcg, String> {
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
        if fs::read_to_string(v2)
            .map(|s| s.contains("memory"))
            .unwrap_or(false)
        {
            let parent = PathBuf::from("/sys/fs/cgroup");
            let _ = fs::write(parent.join("cgroup.subtree_control"), "+memory");
            let dir = parent.join("reclaimlab-reclaim-cost");
            fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            return Ok(Memcg {
                dir,
                limit_file: "memory.max",
                procs_file: "cgroup.threads",
                parent_procs: parent.join("cgroup.threads"),
            });
        }
        let parent = PathBuf::from("/sys/fs/cgroup/memory");
        if parent.join("memory.limit_in_bytes").exists() {
            let dir = parent.join("reclaimlab-reclaim-cost");
            fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            return Ok(Memcg {
                dir,
                limit_file: "memory.limit_in_bytes",
                procs_file: "tasks",
                parent_procs: parent.join("tasks"),
            });
        }
        Err("no memory cgroup (v2 memory controller or v1 memory hierarchy)".into())
    }

    fn enter(&self, limit_bytes: usize) {
        fs::write(self.dir.join(self.limit_file), limit_bytes.to_string()).expect("set limit");
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        fs::write(self.dir.join(self.procs_file), tid.to_string()).expect("enter cgroup");
    }

    fn leave(&self) {
        // SAFETY: as above.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let _ = fs::write(&self.parent_procs, tid.to_string());
    }

    /// How often the limit was hit (v1 `memory.failcnt`, v2 `memory.events` max).
    fn limit_hits(&self) -> Option<u64> {
        if let Ok(t) = fs::read_to_string(self.dir.join("memory.failcnt")) {
            return t.trim().parse().ok();
        }
        let t = fs::read_to_string(self.dir.join("memory.events")).ok()?;
        t.lines()
            .find_map(|l| l.strip_prefix("max ")?.trim().parse().ok())
    }

    /// `memory.stat` counters that exist (v2: pgscan, pgsteal; v1 has neither).
    fn stat(&self, key: &str) -> Option<u64> {
        let text = fs::read_to_string(self.dir.join("memory.stat")).ok()?;
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok())?
        })
    }
}

impl Drop for Memcg {
    fn drop(&mut self) {
        self.leave();
        // Charged page cache may keep the group alive briefly: retry.
        for _ in 0..50 {
            if fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            let _ = fs::write(self.dir.join("memory.force_empty"), "0");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("reclaim_cost: could not remove {}", self.dir.display());
    }
}

/// A `/proc/vmstat` counter.
fn vmstat(key: &str) -> u64 {
    fs::read_to_string("/proc/vmstat")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse().ok())?
            })
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let memcg = match Memcg::create() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("reclaim_cost: {e}; run as root on a host with memory cgroups");
            std::process::exit(2);
        }
    };
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let path = dir.join(".reclaimlab-reclaim-cost.dat");
    let f = {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .expect("create the test file");
        let chunk = vec![0x5au8; MIB];
        for _ in 0..FILE_MIB {
            f.write_all(&chunk).expect("write the test file");
        }
        f.sync_all().expect("fsync");
        f
    };
    let file_pages = (FILE_MIB * MIB / 4096) as f64;
    let limit_pages = (LIMIT_MIB * MIB / 4096) as f64;
    let (mut free_runs, mut limited_runs, mut per_page) = (Vec::new(), Vec::new(), Vec::new());
    let mut scan_steal = None;
    let mut io = (0.0, 0.0, 0, 0);
    let mut hits = None;
    for _ in 0..5 {
        drop_cache(&f);
        let (t, in0) = (std::time::Instant::now(), vmstat("pgpgin"));
        let free = read_all(&f) as f64;
        io.0 = t.elapsed().as_secs_f64();
        io.2 = vmstat("pgpgin") - in0;
        drop_cache(&f);
        memcg.enter(LIMIT_MIB * MIB);
        let (scan0, steal0) = (memcg.stat("pgscan"), memcg.stat("pgsteal"));
        let (t, in0) = (std::time::Instant::now(), vmstat("pgpgin"));
        let limited = read_all(&f) as f64;
        io.1 = t.elapsed().as_secs_f64();
        io.3 = vmstat("pgpgin") - in0;
        let (scan1, steal1) = (memcg.stat("pgscan"), memcg.stat("pgsteal"));
        hits = memcg.limit_hits();
        memcg.leave();
        drop_cache(&f);
        if let (Some(a), Some(b), Some(c), Some(d)) = (scan0, scan1, steal0, steal1) {
            scan_steal = Some((b - a, d - c));
        }
        free_runs.push(free);
        limited_runs.push(limited);
        per_page.push(limited / (file_pages - limit_pages));
    }
    drop(f);
    let _ = fs::remove_file(&path);
    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| system time, {FILE_MIB} MiB read cold in a {LIMIT_MIB} MiB memory cgroup (median of 5) | {:.1} ms |",
        median(limited_runs) / 1e6
    );
    println!(
        "| the same per page beyond the limit: upper bound of a clean page's reclaim | {:.0} ns (runs: {}) |",
        median(per_page.clone()),
        per_page.iter().map(|p| format!("{p:.0}")).collect::<Vec<_>>().join(", ")
    );
    println!(
        "| limit hits in the last limited run (reclaim happened) | {} |",
        hits.map_or("not exposed".to_string(), |h| h.to_string())
    );
    println!(
        "| reference: the same read without a limit (median of 5) | {:.1} ms |",
        median(free_runs) / 1e6
    );
    println!(
        "| last run: wall s / KiB read from disk (pgpgin), no limit vs limited | {:.2} / {} vs {:.2} / {} |",
        io.0, io.2, io.1, io.3
    );
    match scan_steal {
        Some((scan, steal)) => {
            println!("| pages scanned / reclaimed in the last limited run | {scan} / {steal} |")
        }
        None => println!("| pages scanned / reclaimed | not exposed by this cgroup version |"),
    }
}
