//! Measures with `perf record -e cpu-clock -g` (software sampling: it works
//! in a VM without a hardware PMU) what the host's kernel spends per page
//! in the steps the simulator charges: scanning and reclaiming a clean
//! page-cache page (`cost.scan_page_ns`, `cost.reclaim_page_ns`), adding a
//! page to the LRU and releasing it at munmap (the other takers of
//! `lruvec->lru_lock`, crates/kernel/src/vmscan/lru_lock.rs), and the anon
//! fault, zeroing and munmap (`cost.fault_ns`, `cost.zero_page_ns`,
//! `cost.unmap_page_ns`).
//!
//! **Workloads.**
//! - `reclaim`: the `lru_lock_hold` single-reader set-up — one thread,
//!   pinned, in a memory cgroup (256 MiB) reading a sparse 512 MiB file in
//!   `/var/tmp` with 128 KiB `pread`s and `POSIX_FADV_RANDOM` (order-0
//!   folios, no I/O: holes read as zeros), round and round, so it
//!   reclaims the file's older clean pages itself (limit reclaim). Pages
//!   scanned and reclaimed come from the `mm_vmscan_lru_shrink_inactive`
//!   and `mm_vmscan_lru_shrink_active` tracepoints recorded in the same
//!   `perf record` (one event per batch of up to 32 pages).
//! - `mmap`: mmtests' `mmap-latency` loop — map 128 MiB anonymous private
//!   (`MADV_NOHUGEPAGE`), write 8 bytes per 4 KiB page, unmap, repeat; no
//!   limit, no memory pressure. Pages are counted by the loop.
//!
//! **Attribution.** Each sample's kernel call chain is read from
//! `perf script`; a sample goes to the group of the innermost frame that
//! names one (the tables below, `RECLAIM` and `MMAP`), so a group holds a
//! function and its callees minus the callees that name another group.
//! `cpu-clock` fires from a timer interrupt, so it cannot fire where
//! interrupts are off: `lru_lock` is taken with `spin_lock_irq*`, and a
//! sample due while it is held lands on the instruction after the unlock
//! re-enables interrupts (in `_raw_spin_unlock_irq[restore]`). Those
//! samples are attributed by the unlock's caller to "… under lru_lock":
//! that is the time the lock was held (plus the uncontended acquisition),
//! which no function-level profile shows otherwise.
//!
//! - `anon` (not run by default: it needs swap): `anon_reclaim_cost`'s
//!   set-up — one pinned thread in a 64 MiB memory cgroup writing one
//!   non-zero word per page of a 256 MiB anonymous mapping
//!   (`MADV_NOHUGEPAGE`), pass after pass, so every touch is a swap-in
//!   fault whose charge reclaims another page to swap (limit reclaim). A
//!   temporary swap file in `--dir` is made if no swap is on, and swapped
//!   off and removed at the end, on error and on Ctrl-C. The `MAPPED`
//!   table splits the inactive scan (isolation, `folio_referenced`'s rmap
//!   walk, checks, put back) and the reclaim (`try_to_unmap`, the TLB
//!   flush, `folio_alloc_swap`, `swap_writeout`, freeing from the swap
//!   cache) and the swap-in fault; `mm_vmscan_write_folio` counts pages
//!   written. `--one-cpu` puts the whole process (and perf) on the
//!   thread's CPU: its mm is then live on one CPU and the flush needs no
//!   IPI (x86's `arch_tlbbatch_should_defer`).
//! - `mapped-file`: the same with a sparse file mapped shared and read
//!   (clean mapped page cache; 6.18's ext4 reads ahead into large folios,
//!   counted by `mm_filemap_delete_from_page_cache`).
//!
//! - `write`: fio's buffered random-write job of the `dirty-pressure`
//!   workload (1 MiB `pwrite`s at random 1 MiB-aligned offsets over
//!   `--write-files` files of `--write-file-mib` MiB laid out in `--dir`,
//!   `posix_fadvise(DONTNEED)` on every file at every pass, as fio's
//!   `invalidate=1`), one pinned thread in a memory cgroup without a
//!   (practical) limit. `--write-drop` adds an `fdatasync` before each
//!   fadvise, so every page is dropped and written again into a new folio
//!   (page-cache insertion per page). Pages written come from
//!   `sys_exit_pwrite64`, pages written back by the thread from
//!   `ext4_writepages_result`, folios inserted and dropped from the
//!   `filemap` tracepoints; the thread's CPU per page without perf, just
//!   before it, is printed beside (perf's own cost). `write.rs` has its
//!   loop, its `WRITE` groups and its table per event.
//!
//! Needs root, `perf`, kernel symbols (`/proc/kallsyms` with addresses) and
//! a memory cgroup (v1's `memory` hierarchy or v2's controller); `anon`
//! also `mkswap`/`swapon` and 1 GiB in `--dir`. The cgroup, the sparse
//! files, the swap file and perf's data files are removed at the end, on
//! error and on Ctrl-C.
//!
//! Run: `cargo run --release -p reclaimlab-host --example perf_page_costs --
//!      [--workloads reclaim,mmap,anon,mapped-file,write] [--reps N] [--secs S]
//!      [--freq HZ] [--warm-s S] [--dir DIR] [--limit-mib M] [--file-mib M]
//!      [--mmap-mib M] [--map-mib M] [--map-limit-mib M] [--write-files N]
//!      [--write-file-mib M] [--write-drop] [--one-cpu]`
//! Results: docs/bench/cpu-costs.md, "Per-page kernel CPU by function
//! (perf)" and its subsections on mapped pages and buffered writes.
//!
//! **Files.** This one: the arguments, the refusals and the loop over the
//! workloads; `workloads.rs`: the threads and one repetition; `perf.rs`:
//! `perf record` and `perf script`; `schemes.rs`: the groups; `tally.rs`:
//! the attribution; `report.rs`: the tables.

mod perf;
mod report;
mod schemes;
mod tally;
mod workloads;
mod write;

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use reclaimlab_host::bench::cli::{need_disk_dir, need_root, run_main, Flags};
use reclaimlab_host::bench::{allowed_cpus, pin};
use reclaimlab_host::{runner, sys};

use report::{report, report_per_event};
use schemes::{Scheme, MAPPED, MMAP, RECLAIM};

const MIB: u64 = 1 << 20;
const NAME: &str = "perf_page_costs";
const PAGE: u64 = 4096;

// ---------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    Reclaim,
    Mmap,
    Anon,
    MappedFile,
    Write,
}

impl Workload {
    const ALL: [Workload; 5] = [
        Workload::Reclaim,
        Workload::Mmap,
        Workload::Anon,
        Workload::MappedFile,
        Workload::Write,
    ];

    /// Its name in `--workloads` and in perf's data files.
    fn name(self) -> &'static str {
        match self {
            Workload::Reclaim => "reclaim",
            Workload::Mmap => "mmap",
            Workload::Anon => "anon",
            Workload::MappedFile => "mapped-file",
            Workload::Write => "write",
        }
    }

    /// How its samples are grouped.
    fn scheme(self) -> &'static Scheme {
        match self {
            Workload::Reclaim => &RECLAIM,
            Workload::Mmap => &MMAP,
            Workload::Anon | Workload::MappedFile => &MAPPED,
            Workload::Write => &write::WRITE,
        }
    }

    /// The tracepoints perf records with the samples.
    fn events(self) -> &'static [&'static str] {
        match self {
            Workload::Reclaim => &[
                "vmscan:mm_vmscan_lru_shrink_inactive",
                "vmscan:mm_vmscan_lru_shrink_active",
            ],
            Workload::Mmap => &[],
            Workload::Anon | Workload::MappedFile => &[
                "vmscan:mm_vmscan_lru_shrink_inactive",
                "vmscan:mm_vmscan_lru_shrink_active",
                "vmscan:mm_vmscan_write_folio",
                "filemap:mm_filemap_delete_from_page_cache",
            ],
            Workload::Write => &[
                "syscalls:sys_exit_pwrite64",
                "ext4:ext4_writepages_result",
                "filemap:mm_filemap_add_to_page_cache",
                "filemap:mm_filemap_delete_from_page_cache",
            ],
        }
    }

    /// Its report's title.
    fn title(self, args: &Args) -> String {
        match self {
            Workload::Reclaim => format!(
                "Clean page-cache reclaim, order-0: one reader, {} MiB memory cgroup, sparse {} MiB file",
                args.limit_mib, args.file_mib
            ),
            Workload::Mmap => format!(
                "mmap-latency loop: {} MiB anonymous, 8 bytes per page, munmap",
                args.mmap_mib
            ),
            Workload::Anon => format!(
                "Anonymous reclaim to swap: {} MiB anonymous written one word a page, pass after pass, in a {} MiB memory cgroup",
                args.map_mib, args.map_limit_mib
            ),
            Workload::MappedFile => format!(
                "Mapped clean file pages: a sparse {} MiB file mapped shared, read one word a page, pass after pass, in a {} MiB memory cgroup",
                args.map_mib, args.map_limit_mib
            ),
            Workload::Write => format!(
                "Buffered random writes (fio's dirty-pressure job): {} files of {} MiB, 1 MiB pwrites, {}fadvise(DONTNEED) on every file at every pass",
                args.write_files,
                args.write_file_mib,
                if args.write_drop { "fdatasync and " } else { "" }
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Args {
    workloads: Vec<Workload>,
    reps: usize,
    secs: f64,
    freq: u64,
    warm_s: f64,
    dir: PathBuf,
    limit_mib: u64,
    file_mib: u64,
    mmap_mib: u64,
    map_mib: u64,
    map_limit_mib: u64,
    write_files: u64,
    write_file_mib: u64,
    write_drop: bool,
    one_cpu: bool,
}

const USAGE: &str = "usage: perf_page_costs [--workloads reclaim,mmap,anon,mapped-file,write] [--reps N] [--secs S] [--freq HZ] [--warm-s S] [--dir DIR] [--limit-mib M] [--file-mib M] [--mmap-mib M] [--map-mib M] [--map-limit-mib M] [--write-files N] [--write-file-mib M] [--write-drop] [--one-cpu]";

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        workloads: vec![Workload::Reclaim, Workload::Mmap],
        reps: 3,
        secs: 5.0,
        freq: 20_000,
        warm_s: 2.0,
        dir: PathBuf::from("/var/tmp"),
        limit_mib: 256,
        file_mib: 512,
        mmap_mib: 128,
        map_mib: 256,
        map_limit_mib: 64,
        write_files: 2,
        write_file_mib: 16,
        write_drop: false,
        one_cpu: false,
    };
    let mut f = Flags::new(args, USAGE);
    while let Some(flag) = f.next_flag() {
        match flag {
            "--workloads" => {
                let v = f.value()?;
                a.workloads = v
                    .split(',')
                    .map(|w| {
                        let w = w.trim();
                        Workload::ALL.into_iter().find(|k| k.name() == w).ok_or_else(|| format!(
                            "`--workloads {v}`: `{w}` is not a workload; accepted: reclaim, mmap, anon, mapped-file, write (comma-separated)"
                        ))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--reps" => a.reps = f.num("the repetitions")? as usize,
            "--secs" => a.secs = f.secs()?,
            "--warm-s" => a.warm_s = f.secs()?,
            "--freq" => a.freq = f.num("the sampling frequency in Hz")?,
            "--dir" => a.dir = PathBuf::from(f.value()?),
            "--limit-mib" => a.limit_mib = f.num("the cgroup limit in MiB")?,
            "--file-mib" => a.file_mib = f.num("the file size in MiB")?,
            "--mmap-mib" => a.mmap_mib = f.num("the mapping size in MiB")?,
            "--map-mib" => a.map_mib = f.num("the mapping size in MiB")?,
            "--map-limit-mib" => a.map_limit_mib = f.num("the cgroup limit in MiB")?,
            "--write-files" => a.write_files = f.num("the number of files")?,
            "--write-file-mib" => a.write_file_mib = f.num("the file size in MiB")?,
            "--write-drop" => a.write_drop = true,
            "--one-cpu" => a.one_cpu = true,
            _ => return Err(f.unknown()),
        }
    }
    if !(1..=20).contains(&a.reps) {
        return Err(format!("`--reps {}`: 1..=20", a.reps));
    }
    // cpu-clock's hrtimer period is at least 10 µs.
    if !(100..=100_000).contains(&a.freq) {
        return Err(format!(
            "`--freq {}`: 100..=100000 Hz (cpu-clock samples at most every 10 µs)",
            a.freq
        ));
    }
    if a.limit_mib < 16 || a.limit_mib > 64 * 1024 {
        return Err(format!("`--limit-mib {}`: 16..=65536", a.limit_mib));
    }
    if a.file_mib < 2 * a.limit_mib || a.file_mib > 64 * 1024 {
        return Err(format!(
            "`--file-mib {}`: at least twice the limit ({} MiB) and at most 65536, or the reader rarely reclaims",
            a.file_mib, a.limit_mib
        ));
    }
    if !(1..=4096).contains(&a.mmap_mib) {
        return Err(format!("`--mmap-mib {}`: 1..=4096", a.mmap_mib));
    }
    if a.map_limit_mib < 16 || a.map_mib < 2 * a.map_limit_mib || a.map_mib > 16 * 1024 {
        return Err(format!(
            "`--map-mib {}` / `--map-limit-mib {}`: the limit at least 16 and the mapping at least twice the limit (at most 16384), or the toucher rarely reclaims",
            a.map_mib, a.map_limit_mib
        ));
    }
    if !(1..=16).contains(&a.write_files) || !(1..=4096).contains(&a.write_file_mib) {
        return Err(format!(
            "`--write-files {}` / `--write-file-mib {}`: 1..=16 files of 1..=4096 MiB",
            a.write_files, a.write_file_mib
        ));
    }
    if a.workloads.is_empty() {
        return Err(format!("`--workloads` is empty; {USAGE}"));
    }
    Ok(a)
}

// ---------------------------------------------------------------------------
// Main

fn main() {
    run_main(NAME, parse_args, preflight, main_root);
}

/// This process's memory cgroup (v1 `memory:` line, or v2's `0::`).
fn memcg_path() -> String {
    let t = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    t.lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            (ctl.split(',').any(|c| c == "memory") || ctl.is_empty()).then(|| path.to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// Refuses early, naming what is missing and how to get it.
fn preflight(args: &Args) -> Result<(), String> {
    need_root("perf on kernel code, a memory cgroup")?;
    if sys::which("perf").is_none() {
        return Err(
            "`perf` is not on PATH; install it (Debian: apt-get install linux-perf)".into(),
        );
    }
    let mut head = String::new();
    let _ = File::open("/proc/kallsyms").and_then(|f| f.take(4096).read_to_string(&mut head));
    let hidden = head.lines().next().is_none_or(|l| {
        l.split_whitespace()
            .next()
            .is_some_and(|a| a.bytes().all(|b| b == b'0'))
    });
    if hidden {
        return Err("/proc/kallsyms shows no addresses, so perf cannot name kernel functions; set `sysctl kernel.kptr_restrict=0` for the run and restore it after".into());
    }
    if args.workloads.contains(&Workload::Write) {
        need_disk_dir(&args.dir)?;
    }
    if args
        .workloads
        .iter()
        .any(|w| matches!(w, Workload::Reclaim | Workload::Anon | Workload::MappedFile))
    {
        let v1 = Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists();
        let v2 = fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|s| s.contains("memory"));
        if !v1 && !v2 {
            return Err("no memory cgroup controller (neither v1's /sys/fs/cgroup/memory nor v2's memory controller); the reclaim, anon and mapped-file workloads need one (run `--workloads mmap` without it)".into());
        }
        need_disk_dir(&args.dir)?;
    }
    Ok(())
}

fn main_root(args: &Args) -> Result<(), String> {
    let stop = runner::install_signal_flag().map_err(|e| e.to_string())?;
    if args.one_cpu {
        // Every thread of this process (and perf, which inherits it) on
        // the measured thread's CPU: the process's mm is then live on one
        // CPU only, and a TLB flush needs no IPI.
        pin(*allowed_cpus().last().ok_or("no CPU allowed")?);
    }
    println!(
        "kernel {}, {} CPUs; perf cpu-clock at {} Hz ({:.0} ns a sample) for {} s after {} s warm-up, {} repetitions; {}",
        sys::kernel_release(),
        sys::cpus(),
        args.freq,
        1e9 / args.freq as f64,
        args.secs,
        args.warm_s,
        args.reps,
        String::from_utf8_lossy(
            &Command::new("date").args(["-u", "+%F %T UTC"]).output().map(|o| o.stdout).unwrap_or_default()
        )
        .trim()
    );
    for &w in &args.workloads {
        eprintln!(
            "{NAME}: this process's memory cgroup before the {w:?} runs: {}",
            memcg_path()
        );
        let prepared = workloads::prepare(args, w)?;
        let file = prepared.file.as_ref().map(|f| f.0.as_path());
        let files: Vec<PathBuf> = prepared.files.iter().map(|f| f.0.clone()).collect();
        let mut runs = Vec::new();
        for rep in 0..args.reps {
            runs.push(workloads::run(args, w, file, &files, rep, &stop)?);
        }
        let per = match w {
            Workload::Mmap => "touched",
            Workload::Write => "written",
            _ => "scanned",
        };
        report(&w.title(args), w.scheme(), per, &runs);
        match w {
            Workload::Anon | Workload::MappedFile => report_per_event(&runs),
            Workload::Write => write::report_write(&runs),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_host::bench::cli::{assert_refused, parsed};

    #[test]
    fn workloads_options_and_their_errors() {
        let a = parsed(parse_args, &[]);
        assert_eq!((a.reps, a.freq, a.workloads.len()), (3, 20_000, 2));
        let a = parsed(parse_args, &["--workloads", "mmap", "--reps", "1"]);
        assert_eq!((a.workloads, a.reps), (vec![Workload::Mmap], 1));
        assert_refused(
            parse_args,
            &["--workloads", "swap"],
            "`swap` is not a workload",
        );
        assert_refused(parse_args, &["--freq", "200000"], "10 µs");
        assert_refused(parse_args, &["--file-mib", "300"], "twice");
        let a = parsed(
            parse_args,
            &["--workloads", "anon,mapped-file", "--one-cpu"],
        );
        assert_eq!(
            (a.workloads, a.one_cpu, a.map_mib, a.map_limit_mib),
            (vec![Workload::Anon, Workload::MappedFile], true, 256, 64)
        );
        assert_refused(parse_args, &["--map-mib", "100"], "twice the limit");
        assert_refused(parse_args, &["--secs"], "needs a value");
        let a = parsed(parse_args, &["--workloads", "write", "--write-files", "3"]);
        assert_eq!(
            (a.workloads, a.write_files, a.write_file_mib),
            (vec![Workload::Write], 3, 16)
        );
        assert_refused(parse_args, &["--write-file-mib", "0"], "1..=4096 MiB");
    }

    #[test]
    fn workload_names_round_trip() {
        for w in Workload::ALL {
            let a = parsed(parse_args, &["--workloads", w.name()]);
            assert_eq!(a.workloads, vec![w]);
        }
    }
}
