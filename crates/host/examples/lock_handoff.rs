//! Measures what a contended spinlock costs on this host: the time for the
//! lock (and the data it guards) to move from one CPU to another, the
//! `lru_lock.handoff_ns` of the simulator's `lru_lock` model.
//!
//! Two threads pinned to two CPUs take a test-and-test-and-set lock and,
//! holding it, update two cache lines (as `isolate_lru_folios` updates the
//! list head and the lruvec's counters under `lruvec->lru_lock`) and note
//! themselves as the last owner. A thread only tries for the lock once the
//! other one had it last, so every acquisition is one hand-over from the
//! other CPU. Against one thread doing the same alone, the difference per
//! acquisition is the handoff: the lock word and the data lines travelling
//! between the CPUs' caches.
//!
//! Run: `cargo run --release -p reclaimlab-host --example lock_handoff`
//! Results: docs/bench/cpu-costs.md

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[repr(C, align(64))]
struct Line(AtomicU64);

#[repr(C)]
struct Shared {
    lock: AtomicBool,
    _pad: [u8; 63],
    /// Which thread held the lock last (2: none yet).
    owner: Line,
    head: Line,
    count: Line,
}

fn lock(s: &Shared) {
    loop {
        if !s.lock.swap(true, Ordering::Acquire) {
            return;
        }
        while s.lock.load(Ordering::Relaxed) {
            spin_loop();
        }
    }
}

fn critical(s: &Shared, me: u64) {
    s.head.0.fetch_add(1, Ordering::Relaxed);
    s.count.0.fetch_add(1, Ordering::Relaxed);
    s.owner.0.store(me, Ordering::Relaxed);
}

/// The first two CPUs this process may run on.
fn two_cpus() -> Result<[usize; 2], String> {
    // SAFETY: a zeroed cpu_set_t is valid; the call fills it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!(
                "sched_getaffinity: {}",
                std::io::Error::last_os_error()
            ));
        }
        set
    };
    // SAFETY: reading bits of an initialised set.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .take(2)
        .collect();
    match cpus[..] {
        [a, b] => Ok([a, b]),
        _ => Err(format!("needs two CPUs, may run on {}", cpus.len())),
    }
}

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; the call only reads it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        rc,
        0,
        "sched_setaffinity({cpu}): {}",
        std::io::Error::last_os_error()
    );
}

fn new_shared() -> Arc<Shared> {
    Arc::new(Shared {
        lock: AtomicBool::new(false),
        _pad: [0; 63],
        owner: Line(AtomicU64::new(2)),
        head: Line(AtomicU64::new(0)),
        count: Line(AtomicU64::new(0)),
    })
}

/// ns per acquisition, one thread alone.
fn alone(cpus: [usize; 2], n: u64) -> f64 {
    let s = new_shared();
    pin(cpus[0]);
    let t = Instant::now();
    for _ in 0..n {
        lock(&s);
        critical(&s, 0);
        s.lock.store(false, Ordering::Release);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// ns per acquisition, two threads on two CPUs, each acquisition a
/// hand-over from the other CPU.
fn handed_over(cpus: [usize; 2], n: u64) -> f64 {
    let s = new_shared();
    let t = Instant::now();
    let threads: Vec<_> = (0..2u64)
        .map(|me| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                pin(cpus[me as usize]);
                for _ in 0..n / 2 {
                    // Only the other thread changes `owner` away from us.
                    while s.owner.0.load(Ordering::Acquire) == me {
                        spin_loop();
                    }
                    lock(&s);
                    critical(&s, me);
                    s.lock.store(false, Ordering::Release);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let cpus = match two_cpus() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lock_handoff: {e}");
            std::process::exit(2);
        }
    };
    let n = 4_000_000;
    let best =
        |f: fn([usize; 2], u64) -> f64| (0..5).map(|_| f(cpus, n)).fold(f64::INFINITY, f64::min);
    let a = best(alone);
    let b = best(handed_over);
    println!(
        "CPUs {} and {}; best of 5, {n} acquisitions each",
        cpus[0], cpus[1]
    );
    println!("| measurement | ns per acquisition |");
    println!("|---|---|");
    println!("| lock + three lines, one CPU | {a:.1} |");
    println!("| lock + three lines, handed over between two CPUs | {b:.1} |");
    println!("| handoff (difference) | {:.1} |", b - a);
}
