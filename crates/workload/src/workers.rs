//! The simulated worker programs: what each process of a workload does, as
//! `async fn`s over the simulated kernel's system calls. They mirror the real
//! programs mmtests runs (see `mmtests-method.md` §1.6): fio buffered
//! random writers and readers, `memory-hog`, `mmap-latency`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use reclaimlab_kernel::mm::anon::{release_lru_pages, touch_anon, Access};
use reclaimlab_kernel::mm::fadvise::fadvise_dontneed;
use reclaimlab_kernel::mm::filemap::{
    file_read, file_write, touch_file_mapped, touch_file_mapped_random, FileOp,
};
use reclaimlab_kernel::mm::text::touch_text;
use reclaimlab_kernel::sched::pay_cpu;
use reclaimlab_kernel::{xorshift, World};

use crate::spec::Pattern;

/// One latency sample: metric, time (ns), value (µs).
pub type Sample = (&'static str, u64, f64);
/// Where workers put their samples.
pub type Samples = Rc<RefCell<Vec<Sample>>>;

/// User CPU a fio job spends per I/O (submission, bookkeeping), ns.
const FIO_USER_NS_PER_IO: u64 = 2_000;

fn killed(w: &World) -> bool {
    w.k().current().killed
}

/// mmtests `memory-hog`: one anonymous mapping, one word written per page,
/// endless passes.
pub async fn anon_hog(w: Rc<World>, pages: u32) {
    let m = w.k().mmap_anon(pages);
    loop {
        if touch_anon(&w, m, 0, pages, true).await == Access::Killed || killed(&w) {
            return;
        }
        pay_cpu(&w).await;
        if touch_text(&w).await == FileOp::Killed || killed(&w) {
            return;
        }
    }
}

/// How often a holding mlock worker looks whether it was OOM-killed, ns.
const MLOCK_HOLD_CHECK_NS: u64 = 10_000_000;

/// The squeeze of Dave Chinner's XFS tests (reference §3.10): `mmap` +
/// `mlock` + touch `pages` pages, in steps of `step` pages (0: all at once)
/// every `interval_ns`, then hold them until the run ends. Each step's
/// pages are a `VM_LOCKED` mapping of their own, so they fault straight
/// onto the unevictable list (`lru_cache_add_inactive_or_unevictable`).
/// Records the time each step took to lock as an `mlock` sample (µs).
pub async fn mlock_worker(w: Rc<World>, pages: u32, step: u32, interval_ns: u64, samples: Samples) {
    let step = if step == 0 { pages } else { step };
    let mut locked = 0u32;
    while locked < pages {
        let n = step.min(pages - locked);
        let start = w.k().exec.now();
        let m = {
            let mut k = w.k();
            let m = k.mmap_anon(n);
            k.mlock(m);
            m
        };
        if touch_anon(&w, m, 0, n, true).await == Access::Killed || killed(&w) {
            return;
        }
        pay_cpu(&w).await;
        let now = w.k().exec.now();
        samples
            .borrow_mut()
            .push(("mlock", now, (now - start) as f64 / 1000.0));
        locked += n;
        if locked < pages {
            let until = start + interval_ns;
            while w.k().exec.now() < until {
                let t = (w.k().exec.now() + MLOCK_HOLD_CHECK_NS).min(until);
                w.sleep_until(t).await;
                if killed(&w) {
                    return;
                }
            }
        }
    }
    // Hold: the pages stay locked until the process exits (run end or OOM kill).
    hold_until_killed(&w).await;
}

/// Stays, doing nothing, until the run ends or the task is OOM-killed
/// (looked at every `MLOCK_HOLD_CHECK_NS`).
async fn hold_until_killed(w: &World) {
    loop {
        let t = w.k().exec.now() + MLOCK_HOLD_CHECK_NS;
        w.sleep_until(t).await;
        if killed(w) {
            return;
        }
    }
}

/// A fio buffered writer (`direct=0`, `readwrite=randwrite` or `write`) over
/// its own files, in passes as fio makes them: a random pass writes every
/// block of every file once, in random order (fio's random map, on by
/// default), a sequential pass each file front to back. With `invalidate`
/// (fio's `invalidate=1`, its default) each pass starts with
/// `posix_fadvise(POSIX_FADV_DONTNEED)` on every file, as fio reopens a
/// time-based job's files for each pass and invalidates their cache on
/// open (`td_io_open_file` → `file_invalidate_cache`): the pages written
/// back by then are dropped and have to be allocated again.
pub async fn file_writer(
    w: Rc<World>,
    files: Vec<u32>,
    file_pages: u32,
    block_pages: u32,
    pattern: Pattern,
    invalidate: bool,
    mut rng: u64,
) {
    let blocks = u64::from((file_pages / block_pages).max(1));
    let n = blocks * files.len() as u64;
    loop {
        if invalidate {
            for &f in &files {
                fadvise_dontneed(&w, f).await;
            }
        }
        rng = xorshift(rng);
        let mut order = RandomMap::new(n, rng);
        for i in 0..n {
            let j = match pattern {
                Pattern::Random => order.next_index(),
                Pattern::Sequential => i,
            };
            let (f, b) = (files[(j / blocks) as usize], (j % blocks) as u32);
            w.k().charge_user(FIO_USER_NS_PER_IO);
            if file_write(&w, f, b * block_pages, block_pages).await == FileOp::Killed || killed(&w)
            {
                return;
            }
            // A safe point between I/Os: fio's own text (mm/text.rs).
            if touch_text(&w).await == FileOp::Killed || killed(&w) {
                return;
            }
        }
    }
}

/// A random order of `0..n` without repeats and without storing it: a
/// full-period linear congruential generator modulo the next power of two
/// (multiplier ≡ 1 mod 4, odd increment: Hull–Dobell), skipping values of
/// `n` and above. fio keeps a bitmap of the blocks done instead; the order
/// differs, the property (each block once a pass) is the same.
struct RandomMap {
    n: u64,
    mask: u64,
    mul: u64,
    inc: u64,
    x: u64,
}

impl RandomMap {
    fn new(n: u64, seed: u64) -> RandomMap {
        let m = n.max(1).next_power_of_two();
        RandomMap {
            n: n.max(1),
            mask: m - 1,
            mul: (seed.rotate_left(17) & !3) | 1 | 4, // ≡ 1 mod 4 (bit 2 set keeps it ≠ 1)
            inc: seed | 1,
            x: seed.rotate_left(31),
        }
    }

    /// The next index of the pass (wraps into a new cycle after `n`).
    fn next_index(&mut self) -> u64 {
        loop {
            self.x = self.x.wrapping_mul(self.mul).wrapping_add(self.inc) & self.mask;
            if self.x < self.n {
                return self.x;
            }
        }
    }
}

/// A fio buffered random reader.
#[allow(clippy::too_many_arguments)]
pub async fn file_reader(
    w: Rc<World>,
    files: Vec<u32>,
    file_pages: u32,
    block_pages: u32,
    mut rng: u64,
    pattern: Pattern,
    passes: u32,
    samples: Samples,
    done: Rc<Cell<u32>>,
) {
    let blocks = (file_pages / block_pages).max(1);
    let start = w.k().exec.now();
    if pattern == Pattern::Sequential {
        // `cat FILE... > /dev/null`: each file front to back, `passes`
        // times (0: endlessly), then the elapsed time as a sample.
        let mut pass = 0;
        while passes == 0 || pass < passes {
            for &f in &files {
                for b in 0..blocks {
                    w.k().charge_user(FIO_USER_NS_PER_IO);
                    if file_read(&w, f, b * block_pages, block_pages).await == FileOp::Killed
                        || killed(&w)
                        || touch_text(&w).await == FileOp::Killed
                    {
                        return;
                    }
                }
            }
            pass += 1;
        }
        finished(&w, start, &samples, &done);
        return;
    }
    loop {
        rng = xorshift(rng);
        let f = files[(rng % files.len() as u64) as usize];
        rng = xorshift(rng);
        let b = (rng % u64::from(blocks)) as u32;
        w.k().charge_user(FIO_USER_NS_PER_IO);
        if file_read(&w, f, b * block_pages, block_pages).await == FileOp::Killed
            || killed(&w)
            || touch_text(&w).await == FileOp::Killed
        {
            return;
        }
    }
}

/// mmtests `mmap-latency`: sleep, map `pages` anonymous pages, write one word
/// in each, unmap; the latency is the time between consecutive loop ends
/// minus the sleep (2021 version), in µs.
pub async fn mmap_latency(w: Rc<World>, pages: u32, sleep_ms: u64, samples: Samples) {
    let mut last: Option<u64> = None;
    loop {
        let t = w.k().exec.now() + sleep_ms * 1_000_000;
        w.sleep_until(t).await;
        let m = w.k().mmap_anon(pages);
        if touch_anon(&w, m, 0, pages, true).await == Access::Killed || killed(&w) {
            return;
        }
        let released = w.k().munmap_batched(m, true);
        pay_cpu(&w).await;
        release_lru_pages(&w, released).await;
        if touch_text(&w).await == FileOp::Killed || killed(&w) {
            return;
        }
        let now = w.k().exec.now();
        if let Some(prev) = last {
            let lat_ns = (now - prev).saturating_sub(sleep_ms * 1_000_000);
            samples
                .borrow_mut()
                .push(("mmap", now, lat_ns as f64 / 1000.0));
        }
        last = Some(now);
    }
}

/// A reader of file mappings: one byte per page, in passes over every file
/// (sequential) or at random pages (random), `MADV_RANDOM`. With a non-zero
/// `passes` (mapped-file-stream.c) it exits after that many passes,
/// recording its elapsed time as an `elapsed` sample and counting itself in
/// `done`.
#[allow(clippy::too_many_arguments)]
pub async fn mmap_file_reader(
    w: Rc<World>,
    files: Vec<u32>,
    file_pages: u32,
    pattern: Pattern,
    mut rng: u64,
    passes: u32,
    samples: Samples,
    done: Rc<Cell<u32>>,
) {
    let start = w.k().exec.now();
    let mut pass = 0u32;
    while passes == 0 || pass < passes {
        for &f in &files {
            let op = match pattern {
                Pattern::Sequential => touch_file_mapped(&w, f, 0, file_pages).await,
                Pattern::Random => {
                    touch_file_mapped_random(&w, f, u64::from(file_pages), &mut rng).await
                }
            };
            if op == FileOp::Killed || killed(&w) {
                return;
            }
            pay_cpu(&w).await;
        }
        pass += 1;
    }
    finished(&w, start, &samples, &done);
}

/// Creates per `fsmark-create` sample.
const CREATES_PER_SAMPLE: u64 = 1000;

/// fs_mark `-S0 -s 0`: creates empty files round-robin in its `dirs`
/// directories (numbered from `first_dir`), `files` of them (0: endless),
/// no fsync. Every `CREATES_PER_SAMPLE` creates it records the mean time
/// per create as an `fsmark-create` sample (µs per file; its inverse is the
/// process's creates per second), and, if finite, its run time as
/// `elapsed` at the end.
#[allow(clippy::too_many_arguments)]
pub async fn fs_create(
    w: Rc<World>,
    sb: usize,
    first_dir: u32,
    dirs: u32,
    files: u64,
    samples: Samples,
    done: Rc<Cell<u32>>,
) {
    use reclaimlab_kernel::fs::{xfs_create, CreateResult};
    let start = w.k().exec.now();
    let mut t0 = start;
    let mut n = 0u64;
    while files == 0 || n < files {
        let dir = first_dir + (n % u64::from(dirs)) as u32;
        match xfs_create(&w, sb, dir).await {
            CreateResult::Killed => return,
            // The filesystem is full (ENOSPC): fs_mark stops creating; the
            // process stays until the run ends, as the real worker does.
            CreateResult::NoSpace => return hold_until_killed(&w).await,
            CreateResult::Done => {}
        }
        if killed(&w) {
            return;
        }
        n += 1;
        reclaimlab_kernel::sched::maybe_pay_cpu(&w).await;
        if n.is_multiple_of(CREATES_PER_SAMPLE) {
            pay_cpu(&w).await;
            let now = w.k().exec.now();
            let us = (now - t0) as f64 / 1000.0 / CREATES_PER_SAMPLE as f64;
            samples.borrow_mut().push(("fsmark-create", now, us));
            t0 = now;
        }
    }
    pay_cpu(&w).await;
    finished(&w, start, &samples, &done);
}

/// A finite worker is done: its run time as an `elapsed` sample (µs), and
/// one more of the step's finite workers counted done.
fn finished(w: &World, start: u64, samples: &Samples, done: &Cell<u32>) {
    let now = w.k().exec.now();
    samples
        .borrow_mut()
        .push(("elapsed", now, (now - start) as f64 / 1000.0));
    done.set(done.get() + 1);
}

#[cfg(test)]
mod random_map_tests {
    use super::RandomMap;

    /// Every index once per pass, for sizes that are and are not powers
    /// of two, and a different order for another seed.
    #[test]
    fn a_pass_is_a_permutation() {
        for n in [1u64, 2, 3, 7, 64, 245, 1000] {
            for seed in [1u64, 0xdead_beef, 12345] {
                let mut m = RandomMap::new(n, seed);
                let mut seen: Vec<u64> = (0..n).map(|_| m.next_index()).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n} seed={seed}");
            }
        }
        let a: Vec<u64> = {
            let mut m = RandomMap::new(245, 1);
            (0..245).map(|_| m.next_index()).collect()
        };
        let b: Vec<u64> = {
            let mut m = RandomMap::new(245, 99);
            (0..245).map(|_| m.next_index()).collect()
        };
        assert_ne!(a, b);
        assert_ne!(a, (0..245).collect::<Vec<_>>(), "not in order");
    }
}
