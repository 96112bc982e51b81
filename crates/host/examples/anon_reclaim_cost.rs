//! Measures, on this host's real kernel, what one anonymous page's trip
//! through swap costs in CPU: the simulator's `cost.fault_ns`,
//! `cost.scan_page_ns`, `cost.reclaim_page_ns` and `cost.io_submit_page_ns`
//! together, which docs/bench/cpu-costs.md lists as estimates.
//!
//! Method: a thread inside a 64 MiB memory cgroup maps 256 MiB of
//! anonymous memory (`MADV_NOHUGEPAGE`: order-0 pages, as the simulator has)
//! and writes one non-zero word per page, pass after pass (non-zero, so
//! 6.12's zeromap cannot skip the writes). After the first pass every page
//! it touches was swapped out: its fault reads it back (swap-in), and the
//! charge of that page makes the thread reclaim another one (limit reclaim:
//! scan, unmap, add to swap, submit its write). The thread's system time per
//! swapped-in page is then the whole cycle: one swap-in fault and one
//! page's reclaim, each with its I/O submission (waiting for the disk is not
//! CPU time). `/proc/vmstat` gives the pages swapped in and out and those
//! scanned and reclaimed (host-wide: run it on a quiet host).
//!
//! Needs root, a memory cgroup, `mkswap`, and 1 GiB free in `$TMPDIR` (or
//! the current directory) for a temporary swap file; the swap file and the
//! cgroup are removed at the end, also when the measurement panics.
//! Interrupting it with Ctrl-C leaves them: `swapoff FILE; rm FILE; rmdir
//! CGROUP` (the paths are printed first).
//!
//! Run: `cargo run --release -p reclaimlab-host --example anon_reclaim_cost`
//! Results: docs/bench/cpu-costs.md

use std::path::PathBuf;

use reclaimlab_host::cpu_probe::ProbeCgroup;
use reclaimlab_host::swap;
use reclaimlab_host::sys::vmstat_counter;

const MIB: usize = 1 << 20;
const MAP_MIB: usize = 256;
const LIMIT_MIB: usize = 64;
const SWAP_MIB: usize = 1024;
const PASSES: usize = 5;

/// This thread's system time, ns (`RUSAGE_THREAD`).
fn thread_stime_ns() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_stime.tv_sec as u64 * 1_000_000_000 + ru.ru_stime.tv_usec as u64 * 1000
}

/// The run's temporary swap file (`reclaimlab_host::swap`, as `run
/// --swap-file` makes it), swapped off and removed on drop.
struct SwapFile(PathBuf);

impl Drop for SwapFile {
    fn drop(&mut self) {
        if let Err(e) = swap::remove_swap_file(&self.0) {
            eprintln!("anon_reclaim_cost: {e}");
        }
    }
}

const COUNTERS: [&str; 6] = [
    "pswpin",
    "pswpout",
    "pgscan_anon",
    "pgsteal_anon",
    "pgmajfault",
    "pgfault",
];

fn main() {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let swap_path = dir.join(".reclaimlab-anon-reclaim-cost.swap");
    eprintln!(
        "anon_reclaim_cost: swap file {} and a cgroup reclaimlab-probe-{} (both removed at the end)",
        swap_path.display(),
        std::process::id()
    );
    if let Err(e) = swap::create_swap_file(&swap_path, (SWAP_MIB * MIB) as u64) {
        eprintln!("anon_reclaim_cost: {e}");
        std::process::exit(2);
    }
    let swap = SwapFile(swap_path);
    let bytes = MAP_MIB * MIB;
    // Unmapped below. A failure panics, so that the swap file's guard
    // above still runs (process::exit would skip it).
    let p = reclaimlab_host::workers::map_anon(bytes)
        .unwrap_or_else(|e| panic!("anon_reclaim_cost: {e}"))
        .cast::<libc::c_void>();
    // SAFETY: advice on our own mapping.
    unsafe { libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE) };
    let words = p as *mut u64;
    let step = 4096 / 8;
    let Some(memcg) = ProbeCgroup::create(LIMIT_MIB * MIB) else {
        eprintln!("anon_reclaim_cost: cannot make a memory cgroup; run as root on a host with memory cgroups");
        // process::exit runs no destructors: swap off and remove the
        // swap file first.
        drop(swap);
        std::process::exit(2);
    };
    println!("| pass | system ms | swap-ins | swap-outs | anon scanned | anon reclaimed | ns system per swap-in |");
    println!("|---|---|---|---|---|---|---|");
    let mut per_swapin = Vec::new();
    for pass in 1..=PASSES {
        let before: Vec<u64> = COUNTERS.iter().map(|c| vmstat_counter(c)).collect();
        let t0 = thread_stime_ns();
        for i in (0..bytes / 8).step_by(step) {
            // SAFETY: i < bytes / 8 indexes the mapping.
            unsafe {
                words
                    .add(i)
                    .write_volatile(pass as u64 * 0x9e37_79b9 + i as u64)
            };
        }
        let st = thread_stime_ns() - t0;
        let d: Vec<u64> = COUNTERS
            .iter()
            .zip(&before)
            .map(|(c, b)| vmstat_counter(c) - b)
            .collect();
        let ns = if d[0] > 0 {
            st as f64 / d[0] as f64
        } else {
            f64::NAN
        };
        if pass > 1 {
            per_swapin.push(ns);
        }
        println!(
            "| {pass} | {:.1} | {} | {} | {} | {} | {:.0} |",
            st as f64 / 1e6,
            d[0],
            d[1],
            d[2],
            d[3],
            ns
        );
    }
    // SAFETY: unmapping what we mapped.
    unsafe { libc::munmap(p, bytes) };
    drop(memcg);
    drop(swap);
    per_swapin.sort_by(f64::total_cmp);
    println!(
        "\nsystem CPU per swapped-in page (passes 2..{PASSES}, median): {:.0} ns",
        per_swapin[per_swapin.len() / 2]
    );
}
