//! Measures what a contended spinlock costs on this host: the time for the
//! lock (and the data it protects) to move from one CPU to another, the
//! `lru_lock.handoff_ns` of the simulator's `lru_lock` model.
//!
//! Two threads pinned to two CPUs take a test-and-test-and-set lock in
//! turn and, holding it, update two cache lines (as `isolate_lru_folios`
//! updates the list head and the lruvec's counters under
//! `lruvec->lru_lock`). Taking away what one thread alone pays and what
//! passing the turn costs by itself leaves the handoff: the lock word and
//! the data lines travelling between the CPUs' caches.
//!
//! Run: `cargo run --release -p reclaimlab-host --example lock_handoff`
//! Results: docs/bench/cpu-costs.md

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[repr(align(64))]
struct Line(AtomicU64);

struct Shared {
    lock: AtomicBool,
    _pad: [u64; 7],
    head: Line,
    count: Line,
    /// Whose turn it is (0 or 1), so that the two threads alternate.
    turn: Line,
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

fn critical(s: &Shared) {
    s.head.0.fetch_add(1, Ordering::Relaxed);
    s.count.0.fetch_add(1, Ordering::Relaxed);
}

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; the call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn new_shared() -> Arc<Shared> {
    Arc::new(Shared {
        lock: AtomicBool::new(false),
        _pad: [0; 7],
        head: Line(AtomicU64::new(0)),
        count: Line(AtomicU64::new(0)),
        turn: Line(AtomicU64::new(0)),
    })
}

/// ns per acquisition, one thread alone.
fn alone(n: u64) -> f64 {
    let s = new_shared();
    pin(0);
    let t = Instant::now();
    for _ in 0..n {
        lock(&s);
        critical(&s);
        s.lock.store(false, Ordering::Release);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// ns per acquisition, two threads on two CPUs taking the lock in turn.
fn alternating(n: u64) -> f64 {
    in_turn(n, true)
}

/// ns per turn of the two threads passing the turn alone (no lock, no data):
/// what `alternating` pays to make the threads alternate.
fn turn_only(n: u64) -> f64 {
    in_turn(n, false)
}

fn in_turn(n: u64, with_lock: bool) -> f64 {
    let s = new_shared();
    let t = Instant::now();
    let threads: Vec<_> = (0..2u64)
        .map(|me| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                pin(me as usize);
                for _ in 0..n / 2 {
                    while s.turn.0.load(Ordering::Acquire) != me {
                        spin_loop();
                    }
                    if with_lock {
                        lock(&s);
                        critical(&s);
                        s.lock.store(false, Ordering::Release);
                    }
                    s.turn.0.store(1 - me, Ordering::Release);
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
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("lock_handoff: needs two CPUs, this host has {cpus}");
        std::process::exit(2);
    }
    let n = 4_000_000;
    let best = |f: fn(u64) -> f64| (0..5).map(|_| f(n)).fold(f64::INFINITY, f64::min);
    let a = best(alone);
    let b = best(alternating);
    let c = best(turn_only);
    println!("best of 5, {n} acquisitions each");
    println!("| measurement | ns per acquisition |");
    println!("|---|---|");
    println!("| lock + two lines, one CPU | {a:.1} |");
    println!("| lock + two lines, two CPUs in turn | {b:.1} |");
    println!("| passing the turn alone, two CPUs | {c:.1} |");
    println!(
        "| handoff: in turn - turn alone - one CPU | {:.1} |",
        b - c - a
    );
}
