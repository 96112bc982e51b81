//! A quick probe of this CPU's speed at the work the simulator charges as
//! `cost.*`: run inside a guest (`reclaimlab worker cpu-costs`), it gives the
//! factor by which the guest's CPU is slower than the simulator's defaults,
//! so that `sim --machine guest:…,cpu-slowdown=F` simulates the guest's slow
//! CPU (see `guest::machine`).
//!
//! The same measurements as `examples/cpu_costs.rs` (docs/bench/cpu-costs.md),
//! smaller (32 MiB, best of 3) because a TCG guest is slow: first touches of a
//! fresh anonymous mapping (`do_anonymous_page`: fault, zero, map), `memset`
//! of resident pages, one store per resident page, and `munmap`.

use std::time::Instant;

const PAGE: usize = 4096;

/// What each measurement stands for, and the simulator's default for it, ns
/// per page (`crates/kernel/src/params.rs`; the CLI's tests check these
/// against the defaults, so a change there fails a test here).
pub const REFERENCE: &[(&str, &str, f64)] = &[
    ("fault_zero_ns", "cost.fault_ns + cost.zero_page_ns", 1980.0),
    ("zero_page_ns", "cost.zero_page_ns", 80.0),
    ("touch_page_ns", "cost.touch_page_ns", 8.0),
    ("unmap_page_ns", "cost.unmap_page_ns", 300.0),
];

/// One measurement: its key (a [`REFERENCE`] name) and ns per page.
pub type Sample = (String, f64);

fn map(pages: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping, checked for MAP_FAILED.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            pages * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        libc::madvise(p, pages * PAGE, libc::MADV_NOHUGEPAGE);
        Some(p as *mut u8)
    }
}

/// Measures `pages` pages, best of `reps`; ns per page for each [`REFERENCE`]
/// key. Empty if the memory cannot be mapped.
pub fn measure(pages: usize, reps: usize) -> Vec<Sample> {
    let mut best = [f64::INFINITY; 4];
    for _ in 0..reps.max(1) {
        let Some(p) = map(pages) else {
            return Vec::new();
        };
        let per = |t: Instant| t.elapsed().as_nanos() as f64 / pages as f64;
        let t = Instant::now();
        for i in 0..pages {
            // SAFETY: inside the mapping.
            unsafe { p.add(i * PAGE).write_volatile(1) };
        }
        best[0] = best[0].min(per(t));
        let t = Instant::now();
        for i in 0..pages {
            // SAFETY: inside the mapping.
            unsafe { std::ptr::write_bytes(p.add(i * PAGE), 0, PAGE) };
        }
        best[1] = best[1].min(per(t));
        let t = Instant::now();
        for i in 0..pages {
            // SAFETY: inside the mapping.
            unsafe { p.add(i * PAGE + 64).write_volatile(2) };
        }
        best[2] = best[2].min(per(t));
        let t = Instant::now();
        // SAFETY: p came from map(pages).
        unsafe { libc::munmap(p as *mut libc::c_void, pages * PAGE) };
        best[3] = best[3].min(per(t));
    }
    REFERENCE
        .iter()
        .zip(best)
        .map(|((k, _, _), v)| (k.to_string(), v))
        .collect()
}

/// The slowdown against the simulator's defaults: the median of the
/// measured/default ratios (robust to one measurement that a busy host
/// disturbed). `None` without any known sample.
pub fn slowdown(samples: &[Sample]) -> Option<f64> {
    let mut r: Vec<f64> = samples
        .iter()
        .filter_map(|(k, v)| {
            REFERENCE
                .iter()
                .find(|(n, _, _)| n == k)
                .map(|(_, _, d)| v / d)
        })
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if r.is_empty() {
        return None;
    }
    r.sort_by(f64::total_cmp);
    let n = r.len();
    Some(if n % 2 == 1 {
        r[n / 2]
    } else {
        (r[n / 2 - 1] + r[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowdown_is_the_median_ratio() {
        let s = |v: &[f64]| -> Vec<Sample> {
            REFERENCE
                .iter()
                .zip(v)
                .map(|((k, _, _), x)| (k.to_string(), *x))
                .collect()
        };
        // Ratios 10, 20, 30, 1000: the median of an even count is the mean of the middle two.
        assert_eq!(
            slowdown(&s(&[19800.0, 1600.0, 240.0, 300000.0])),
            Some(25.0)
        );
        assert_eq!(slowdown(&s(&[1980.0, 80.0, 8.0])), Some(1.0));
        assert_eq!(slowdown(&[("other".into(), 5.0)]), None);
        assert_eq!(slowdown(&[]), None);
    }

    #[test]
    fn measures_this_cpu() {
        let m = measure(1024, 1);
        assert_eq!(m.len(), REFERENCE.len());
        assert!(m.iter().all(|(_, v)| v.is_finite() && *v > 0.0), "{m:?}");
        // A first touch faults, zeroes and maps: dearer than a store to a resident page.
        assert!(m[0].1 > m[2].1, "{m:?}");
    }
}
