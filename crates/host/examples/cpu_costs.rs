//! Measures, on this host's real kernel, the CPU costs the simulator charges
//! as `cost.*` parameters, where a user-space measurement can isolate them:
//!
//! - `cost.zero_page_ns`: `memset` of a 4 KiB page already mapped (what
//!   `clear_page` costs, as a user-space stand-in);
//! - `cost.fault_ns` + `cost.zero_page_ns`: first write to each page of a
//!   fresh anonymous mapping (`do_anonymous_page`: allocate, zero, map), per
//!   page; THP is avoided with `MADV_NOHUGEPAGE` so every fault is order-0;
//! - `cost.touch_page_ns`: one store per resident page, sequential pass;
//! - `cost.touch_random_page_ns`: one load per resident page at random;
//! - `cost.copy_page_ns`: `pread` from a page-cached file, 4 KiB and 1 MiB
//!   at a time (fio's block size), per 4 KiB;
//! - `munmap` per page (freeing), for reference.
//!
//! Run: `cargo run --release -p reclaimlab-host --example cpu_costs`
//! Results: docs/bench/cpu-costs.md

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::time::Instant;

const PAGE: usize = 4096;

fn best_of<F: FnMut() -> f64>(n: usize, mut f: F) -> f64 {
    (0..n).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn map(pages: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping; checked for MAP_FAILED.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            pages * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert!(p != libc::MAP_FAILED, "mmap failed");
        libc::madvise(p, pages * PAGE, libc::MADV_NOHUGEPAGE);
        p as *mut u8
    }
}

fn unmap(p: *mut u8, pages: usize) {
    // SAFETY: p came from map(pages).
    unsafe {
        libc::munmap(p as *mut libc::c_void, pages * PAGE);
    }
}

fn main() {
    let pages = 65536; // 256 MiB
    let mut rows: Vec<(&str, f64, &str)> = Vec::new();

    // First-touch faults (allocate + zero + map), and munmap.
    let mut unmap_ns = f64::INFINITY;
    let fault = best_of(5, || {
        let p = map(pages);
        let t = Instant::now();
        for i in 0..pages {
            // SAFETY: within the mapping.
            unsafe { std::ptr::write_volatile(p.add(i * PAGE), 1u8) };
        }
        let ns = t.elapsed().as_nanos() as f64 / pages as f64;
        let t = Instant::now();
        unmap(p, pages);
        unmap_ns = unmap_ns.min(t.elapsed().as_nanos() as f64 / pages as f64);
        ns
    });
    rows.push((
        "anon write fault, per page (fault + zero)",
        fault,
        "cost.fault_ns + cost.zero_page_ns",
    ));

    // Zeroing a resident page.
    let p = map(pages);
    for i in 0..pages {
        // SAFETY: within the mapping.
        unsafe { std::ptr::write_volatile(p.add(i * PAGE), 1u8) };
    }
    let zero = best_of(5, || {
        let t = Instant::now();
        for i in 0..pages {
            // SAFETY: within the mapping.
            unsafe { std::ptr::write_bytes(p.add(i * PAGE), 0, PAGE) };
        }
        t.elapsed().as_nanos() as f64 / pages as f64
    });
    rows.push(("memset of a resident 4 KiB page", zero, "cost.zero_page_ns"));

    // Sequential touch of resident pages (one store per page).
    let seq = best_of(5, || {
        let t = Instant::now();
        for i in 0..pages {
            // SAFETY: within the mapping.
            unsafe { std::ptr::write_volatile(p.add(i * PAGE) as *mut u64, i as u64) };
        }
        t.elapsed().as_nanos() as f64 / pages as f64
    });
    rows.push((
        "one store per resident page, sequential",
        seq,
        "cost.touch_page_ns",
    ));

    // Random touch of resident pages (one load per page).
    let rand = best_of(5, || {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut sum = 0u64;
        let t = Instant::now();
        for _ in 0..pages {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % pages as u64) as usize;
            // SAFETY: within the mapping.
            sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(p.add(i * PAGE)) } as u64);
        }
        std::hint::black_box(sum);
        t.elapsed().as_nanos() as f64 / pages as f64
    });
    rows.push((
        "one load per resident page, random",
        rand,
        "cost.touch_random_page_ns",
    ));
    unmap(p, pages);
    rows.push((
        "munmap, per resident page",
        unmap_ns,
        "(freeing; part of cost.reclaim_page_ns)",
    ));

    // pread of 4 KiB from the page cache.
    let dir = std::env::temp_dir();
    let path = dir.join(format!("reclaimlab-cpu-costs-{}", std::process::id()));
    let file_pages = 16384; // 64 MiB
    {
        let mut f = std::fs::File::create(&path).expect("create temp file");
        let buf = vec![7u8; PAGE * 256];
        for _ in 0..file_pages / 256 {
            f.write_all(&buf).expect("write temp file");
        }
    }
    let f = std::fs::File::open(&path).expect("open temp file");
    let mut buf = vec![0u8; PAGE];
    for i in 0..file_pages {
        f.read_at(&mut buf, (i * PAGE) as u64).unwrap();
    }
    let copy = best_of(5, || {
        let t = Instant::now();
        for i in 0..file_pages {
            f.read_at(&mut buf, (i * PAGE) as u64).unwrap();
        }
        t.elapsed().as_nanos() as f64 / file_pages as f64
    });
    rows.push((
        "pread of 4 KiB, page-cached",
        copy,
        "cost.copy_page_ns + one syscall",
    ));
    let mut big = vec![0u8; PAGE * 256];
    let copy_1m = best_of(5, || {
        let t = Instant::now();
        for i in 0..file_pages / 256 {
            f.read_at(&mut big, (i * PAGE * 256) as u64).unwrap();
        }
        t.elapsed().as_nanos() as f64 / file_pages as f64
    });
    let _ = std::fs::remove_file(&path);
    rows.push((
        "pread of 1 MiB, page-cached, per 4 KiB",
        copy_1m,
        "cost.copy_page_ns",
    ));

    let uname = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_string();
    println!("kernel {} on {cpu}; best of 5, ns per page", uname.trim());
    println!();
    println!("| measurement | ns per page | parameter |");
    println!("|---|---|---|");
    for (what, ns, param) in rows {
        println!("| {what} | {ns:.0} | `{param}` |");
    }
}
