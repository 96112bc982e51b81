//! The workloads' threads and one repetition of a workload: its thread
//! pinned, in a memory cgroup of its own, warmed up, perf over it.

use std::fs::{self, File};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use reclaimlab_host::bench::{
    allowed_cpus, drop_cache, gettid, pin, sleep_or_stop, Readers, TempFile,
};
use reclaimlab_host::cpu_probe::ProbeCgroup;
use reclaimlab_host::{swap, sys};

use crate::perf::{record_and_tally, Run};
use crate::{memcg_path, Args, Workload, MIB, NAME, PAGE};

/// The anon workload's temporary swap file, swapped off and removed on drop.
pub struct SwapFile(PathBuf);

impl Drop for SwapFile {
    fn drop(&mut self) {
        if let Err(e) = swap::remove_swap_file(&self.0) {
            eprintln!("{NAME}: {e}");
        }
    }
}

/// What a workload's runs need, made before them and removed after them
/// (at the end, on error and on Ctrl-C: the signal flag makes the runs
/// return "interrupted"): the sparse file of `reclaim` and `mapped-file`,
/// and for `anon` a temporary swap file unless swap is on (as
/// `anon_reclaim_cost`).
pub struct Prepared {
    pub file: Option<TempFile>,
    /// The `write` workload's files, laid out.
    pub files: Vec<TempFile>,
    _swap: Option<SwapFile>,
}

pub fn prepare(args: &Args, w: Workload) -> Result<Prepared, String> {
    let pid = std::process::id();
    let mut p = Prepared {
        file: None,
        files: Vec::new(),
        _swap: None,
    };
    match w {
        Workload::Reclaim => {
            let path = args.dir.join(format!(".reclaimlab-perf-{pid}.dat"));
            eprintln!(
                "{NAME}: sparse file {}, memory cgroup reclaimlab-probe-{pid}, perf data {}/.reclaimlab-perf-{pid}-* (all removed at the end)",
                path.display(),
                args.dir.display()
            );
            p.file = Some(TempFile::sparse(&path, args.file_mib * MIB)?);
        }
        Workload::MappedFile => {
            let path = args.dir.join(format!(".reclaimlab-perf-{pid}-mapped.dat"));
            p.file = Some(TempFile::sparse(&path, args.map_mib * MIB)?);
        }
        Workload::Anon if swap::active().is_empty() => {
            let path = args.dir.join(format!(".reclaimlab-perf-{pid}.swap"));
            eprintln!(
                "{NAME}: no swap on; a temporary swap file {} (removed at the end)",
                path.display()
            );
            swap::create_swap_file(&path, (args.map_mib * 4).max(1024) * MIB)
                .map_err(|e| e.to_string())?;
            p._swap = Some(SwapFile(path));
        }
        Workload::Write => {
            eprintln!(
                "{NAME}: {} files of {} MiB {}/.reclaimlab-perf-{pid}-write.* laid out (removed at the end)",
                args.write_files,
                args.write_file_mib,
                args.dir.display()
            );
            p.files = crate::write::lay_out(&args.dir, args.write_files, args.write_file_mib)?;
        }
        Workload::Anon | Workload::Mmap => {}
    }
    Ok(p)
}

/// A thread pinned to a CPU running a workload's loop until stopped;
/// stopped and joined on drop.
struct LoopThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<(), String>>>,
    tid: u32,
    /// The thread's name in errors ("the mmap thread …").
    what: &'static str,
}

/// A loop's body: it runs until the flag is set, and calls the function
/// once it is set up (then its thread id is known and the start returns).
pub type Body = Box<dyn FnOnce(&AtomicBool, &dyn Fn()) -> Result<(), String> + Send>;

impl LoopThread {
    fn start(what: &'static str, cpu: usize, body: Body) -> Result<LoopThread, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let s = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            pin(cpu);
            body(&s, &|| {
                let _ = tx.send(gettid());
            })
        });
        let tid = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| format!("the {what} thread did not start"))?;
        Ok(LoopThread {
            stop,
            handle: Some(handle),
            tid,
            what,
        })
    }

    fn finish(mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(format!("the {} thread panicked", self.what)),
            None => Ok(()),
        }
    }
}

impl Drop for LoopThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// mmtests' mmap-latency loop: map `bytes` anonymous private, write 8
/// bytes a page, unmap, repeat; pages touched counted in `pages`.
fn mmap_loop(bytes: usize, pages: Arc<AtomicU64>) -> Body {
    Box::new(move |stop, ready| {
        ready();
        let mut local = 0u64;
        while !stop.load(Ordering::Relaxed) {
            // SAFETY: a fresh private anonymous mapping of `bytes`,
            // written within its bounds and unmapped below.
            unsafe {
                let m = libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if m == libc::MAP_FAILED {
                    return Err(format!(
                        "mmap of {bytes} bytes failed: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                libc::madvise(m, bytes, libc::MADV_NOHUGEPAGE);
                let base = m as *mut u8;
                for off in (0..bytes).step_by(PAGE as usize) {
                    std::ptr::write_volatile(base.add(off) as *mut u64, off as u64 | 1);
                    local += 1;
                    if local.is_multiple_of(256) {
                        pages.store(local, Ordering::Relaxed);
                    }
                }
                libc::munmap(m, bytes);
            }
        }
        Ok(())
    })
}

/// Touches one word per page of a mapping of `bytes`, pass after pass:
/// anonymous private (written, non-zero, so every pass dirties the page
/// again) or `file`'s shared mapping (read).
fn touch_loop(bytes: usize, file: Option<PathBuf>) -> Body {
    Box::new(move |stop, ready| {
        let f = match &file {
            Some(p) => {
                Some(File::open(p).map_err(|e| format!("cannot open {}: {e}", p.display()))?)
            }
            None => None,
        };
        let (prot, flags, fd) = match &f {
            Some(f) => (libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd()),
            None => (
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            ),
        };
        // SAFETY: a fresh mapping of `bytes`, touched within its bounds
        // and unmapped below.
        let m = unsafe { libc::mmap(std::ptr::null_mut(), bytes, prot, flags, fd, 0) };
        if m == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {bytes} bytes failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: advice on our own mapping. (Not MADV_RANDOM for the
        // file: 6.18's `vma_has_recency` then makes folio_referenced
        // skip the mapping. So the file's fault readahead makes large
        // folios; the removal tracepoint counts them.)
        unsafe { libc::madvise(m, bytes, libc::MADV_NOHUGEPAGE) };
        ready();
        let base = m as *mut u8;
        let mut pass = 1u64;
        let mut sum = 0u64;
        'outer: loop {
            for off in (0..bytes).step_by(PAGE as usize) {
                if off % (1 << 20) == 0 && stop.load(Ordering::Relaxed) {
                    break 'outer;
                }
                // SAFETY: off < bytes, within the mapping.
                unsafe {
                    let w = base.add(off) as *mut u64;
                    if f.is_some() {
                        sum = sum.wrapping_add(std::ptr::read_volatile(w));
                    } else {
                        std::ptr::write_volatile(w, pass << 32 | off as u64 | 1);
                    }
                }
            }
            pass += 1;
        }
        std::hint::black_box(sum);
        // SAFETY: unmapping what we mapped.
        unsafe { libc::munmap(m, bytes) };
        Ok(())
    })
}

/// The measured thread of a workload.
enum Worker {
    Readers(Readers),
    Mmap(LoopThread),
    Toucher(LoopThread),
}

impl Worker {
    fn tid(&self) -> u32 {
        match self {
            Worker::Readers(r) => r.tids[0],
            Worker::Mmap(l) | Worker::Toucher(l) => l.tid,
        }
    }

    /// Stops it. The touching (or writing) thread's error fails the run; a reader's
    /// or the mmap loop's does not (as this program always had it).
    fn finish(self) -> Result<(), String> {
        match self {
            Worker::Readers(r) => {
                let _ = r.finish();
                Ok(())
            }
            Worker::Mmap(l) => {
                let _ = l.finish();
                Ok(())
            }
            Worker::Toucher(l) => l.finish(),
        }
    }
}

/// Repetition `rep` of `w` (`file`: the workload's sparse file, for
/// `reclaim` and `mapped-file`; `files`: `write`'s files). `reclaim` runs the `lru_lock_hold`
/// single reader in a `--limit-mib` cgroup, `anon` and `mapped-file` the
/// toucher in a `--map-limit-mib` one (perf in the parent cgroup: its
/// buffers must not be reclaimed there), `mmap` its loop in a cgroup
/// without a (practical) limit; then perf over the thread with the
/// workload's tracepoints, and the thread's faults around it.
pub fn run(
    args: &Args,
    w: Workload,
    file: Option<&Path>,
    files: &[PathBuf],
    rep: usize,
    stop: &AtomicBool,
) -> Result<Run, String> {
    if let Some(f) = file {
        drop_cache(f);
    }
    let cpu = *allowed_cpus().last().ok_or("no CPU allowed")?;
    let (cg, root_procs) = match w {
        Workload::Reclaim => limited_cgroup(args.limit_mib)?,
        Workload::Anon | Workload::MappedFile => limited_cgroup(args.map_limit_mib)?,
        Workload::Mmap | Workload::Write => {
            // A memory cgroup of its own without a (practical) limit, one
            // level below the root as the reclaim workload's: the charge
            // path is the same in every run, whichever cgroup this
            // process started in.
            let cg = ProbeCgroup::create(1 << 62);
            if cg.is_none() {
                eprintln!(
                    "{NAME}: no memory cgroup of its own for the {} loop; it runs in {}",
                    w.name(),
                    memcg_path()
                );
            }
            (cg, None)
        }
    };
    let touched = Arc::new(AtomicU64::new(0));
    let bytes = |mib: u64| (mib * MIB) as usize;
    let worker = match (w, file) {
        (Workload::Reclaim, Some(f)) => {
            Worker::Readers(Readers::start(&[f.to_path_buf()], &[cpu], true)?)
        }
        (Workload::Reclaim, None) => return Err("the reclaim workload needs its file".into()),
        (Workload::Mmap, _) => Worker::Mmap(LoopThread::start(
            "mmap",
            cpu,
            mmap_loop(bytes(args.mmap_mib), Arc::clone(&touched)),
        )?),
        (Workload::Write, _) => Worker::Toucher(LoopThread::start(
            "write",
            cpu,
            crate::write::write_loop(
                files.to_vec(),
                args.write_file_mib,
                args.write_drop,
                Arc::clone(&touched),
            ),
        )?),
        (Workload::Anon | Workload::MappedFile, _) => Worker::Toucher(LoopThread::start(
            "touching",
            cpu,
            touch_loop(bytes(args.map_mib), file.map(Path::to_path_buf)),
        )?),
    };
    sleep_or_stop(stop, args.warm_s)?;
    let tid = worker.tid();
    let unperfed = match w {
        Workload::Write => Some(crate::write::without_perf(tid, &touched, args.secs, stop)?),
        _ => None,
    };
    let (p0, f0, v0) = (
        touched.load(Ordering::Relaxed),
        thread_faults(tid),
        nr_written(),
    );
    let (mut p1, mut f1, mut v1) = (0, (0, 0), 0);
    let mut cg = Some(cg);
    let mut worker = Some(worker);
    let mut finished = Ok(());
    let mut run = record_and_tally(args, w, rep, tid, root_procs.as_deref(), stop, || {
        f1 = thread_faults(tid);
        p1 = touched.load(Ordering::Relaxed);
        v1 = nr_written();
        if let Some(x) = worker.take() {
            finished = x.finish();
        }
        if let Some(f) = file {
            drop_cache(f);
        }
        drop(cg.take());
    })?;
    finished?;
    let t = &mut run.tally;
    t.faults = f1.0.saturating_sub(f0.0);
    t.major_faults = f1.1.saturating_sub(f0.1);
    t.vm_written = v1.saturating_sub(v0);
    t.loop_pages = p1 - p0;
    t.without_perf = unperfed;
    run.pages = match w {
        Workload::Mmap => p1 - p0,
        // pwrite's bytes in perf's window (the loop's count spans perf's
        // start-up and stop too).
        Workload::Write => t.write_bytes / PAGE,
        _ => t.scanned,
    };
    Ok(run)
}

/// A memory cgroup limited to `mib`, and its parent's `cgroup.procs`
/// (where perf goes).
fn limited_cgroup(mib: u64) -> Result<(Option<ProbeCgroup>, Option<PathBuf>), String> {
    let cg = ProbeCgroup::create((mib * MIB) as usize).ok_or_else(|| {
        "cannot make a memory cgroup (needs root and v1's memory hierarchy at /sys/fs/cgroup/memory or v2's memory controller)".to_string()
    })?;
    let root_procs = cg
        .dir
        .parent()
        .map(|p| p.join("cgroup.procs"))
        .ok_or("the cgroup has no parent")?;
    Ok((Some(cg), Some(root_procs)))
}

/// Field `i` (counted from 1 with the pid, as proc(5) does) of this
/// process's thread `tid`'s `stat`, as a number (0 if unreadable).
pub fn thread_stat_field(tid: u32) -> impl Fn(usize) -> u64 {
    let stat = fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    // stat_fields starts at field 3.
    let f: Vec<u64> = sys::stat_fields(&stat)
        .unwrap_or_default()
        .iter()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    move |i: usize| f.get(i - 3).copied().unwrap_or(0)
}

/// A thread's (minor + major, major) faults so far, from its `stat`.
fn thread_faults(tid: u32) -> (u64, u64) {
    // Fields 10 (minflt) and 12 (majflt).
    let n = thread_stat_field(tid);
    (n(10) + n(12), n(12))
}

/// /proc/vmstat's `nr_written`: pages whose writeback completed, the
/// whole machine's.
fn nr_written() -> u64 {
    fs::read_to_string("/proc/vmstat")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("nr_written ")?.trim().parse().ok())
        .unwrap_or(0)
}
