//! The user time of a page fault: `getrusage` user and system CPU per page
//! of first touches, against a touch of a resident page, for
//! `cost.fault_user_ns` (the tick books the exception's entry and return
//! and the TLB refill after the fault to user mode, so a faulting task has
//! user time beyond its one access).
//!
//! - anonymous: one store per page of a fresh private mapping
//!   (`MADV_NOHUGEPAGE`), then a second pass over the resident pages;
//! - file: one load per page of a sparse file mapped `MAP_SHARED` with
//!   `MADV_RANDOM` (mapped-file-stream's reader; holes, no I/O), in
//!   `/var/tmp` or `$1`.
//!
//! Run: `cargo run --release -p reclaimlab-host --example fault_user_time [DIR]`
//! Results: docs/bench/cpu-costs.md, "The user time of a fault".

const PAGE: usize = 4096;
const PAGES: usize = 1 << 18; // 1 GiB
const REPS: usize = 5;

/// (user, system) CPU of this process so far, ns.
fn rusage_ns() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// User and system ns per page of `f` over `PAGES` pages.
fn per_page(f: impl FnOnce()) -> (f64, f64) {
    let (u0, s0) = rusage_ns();
    f();
    let (u1, s1) = rusage_ns();
    ((u1 - u0) / PAGES as f64, (s1 - s0) / PAGES as f64)
}

fn anon() -> [(f64, f64); 2] {
    let p = reclaimlab_host::workers::map_anon(PAGES * PAGE).expect("mmap");
    // SAFETY: advice on the mapping just made.
    unsafe { libc::madvise(p.cast(), PAGES * PAGE, libc::MADV_NOHUGEPAGE) };
    let pass = |v: u8| {
        for i in 0..PAGES {
            // SAFETY: inside the mapping.
            unsafe { p.add(i * PAGE).write_volatile(v) };
        }
    };
    let first = per_page(|| pass(1));
    let resident = per_page(|| pass(2));
    // SAFETY: p maps PAGES pages.
    unsafe { libc::munmap(p.cast(), PAGES * PAGE) };
    [first, resident]
}

fn file(dir: &std::path::Path) -> (f64, f64) {
    let path = dir.join(format!("fault-user-time-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap_or_else(|e| {
            panic!(
                "cannot create {}: {e} (give a writable DIR)",
                path.display()
            )
        });
    f.set_len((PAGES * PAGE) as u64).expect("ftruncate");
    let p = reclaimlab_host::sys::map_file_shared_ro(&f, PAGES * PAGE)
        .expect("mmap")
        .cast::<u8>();
    // SAFETY: advice on the mapping just made.
    unsafe { libc::madvise(p.cast(), PAGES * PAGE, libc::MADV_RANDOM) };
    let mut sum = 0u64;
    let r = per_page(|| {
        for i in 0..PAGES {
            // SAFETY: inside the mapping.
            sum += u64::from(unsafe { p.add(i * PAGE).read_volatile() });
        }
    });
    std::hint::black_box(sum);
    // SAFETY: p maps PAGES pages.
    unsafe { libc::munmap(p.cast(), PAGES * PAGE) };
    drop(f);
    let _ = std::fs::remove_file(&path);
    r
}

fn stats(v: &[f64]) -> String {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    format!("{mean:.0} ({lo:.0}-{hi:.0})")
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or("/var/tmp".into()));
    let mut rows: [Vec<f64>; 6] = Default::default();
    for _ in 0..REPS {
        let [(fu, fs), (ru, _)] = anon();
        let (lu, ls) = file(&dir);
        for (i, v) in [fu, fs, ru, lu, ls].into_iter().enumerate() {
            rows[i].push(v);
        }
    }
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    println!(
        "kernel {}; {REPS} runs of {PAGES} pages, ns per page, mean (min-max)",
        kernel.trim()
    );
    println!();
    println!("| access | user | system |");
    println!("|---|---|---|");
    println!(
        "| anonymous store, faulting | {} | {} |",
        stats(&rows[0]),
        stats(&rows[1])
    );
    println!("| anonymous store, resident | {} | |", stats(&rows[2]));
    println!(
        "| file hole load (MADV_RANDOM), faulting | {} | {} |",
        stats(&rows[3]),
        stats(&rows[4])
    );
}
