//! reclaimlab's own worker programs, run as hidden subcommands of the binary
//! (`reclaimlab worker mmap-latency …`, `reclaimlab worker memory-hog SIZE`).
//!
//! They mirror mmtests' `mmap-latency.c` and `memory-hog.c` (mmtests-method.md
//! §1.6). The latency worker writes one sample per iteration — the time between
//! the ends of consecutive iterations minus the sleep, in µs, exactly as the
//! simulated worker records it — as a `t_s value_us` line, written straight to
//! the file so a killed worker loses nothing.
//!
//! `reclaimlab worker mmap-file-reader` is Johannes Weiner's 2010
//! mapped-file-stream.c (one byte per page of a shared file mapping with
//! `MADV_RANDOM`), for the spec kind `mmap-file-reader`.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use reclaimlab_workload::stutterp::mmap_latency_sample_us;

use crate::error::{HostError, Result};
use crate::sys;

/// Sets the calling thread's `comm` (what `ps` and trace lines show).
pub fn set_comm(name: &str) {
    if let Ok(c) = std::ffi::CString::new(name) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string (truncated to 15 bytes).
        unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr()) };
    }
}

/// A private anonymous read-write mapping of `bytes` (for the workers and
/// the measurement programs); the caller unmaps it.
pub fn map_anon(bytes: usize) -> Result<*mut u8> {
    // SAFETY: an anonymous private mapping with no address hint.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(HostError::new(format!(
            "mmap of {bytes} bytes failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(p.cast())
}

/// Writes one `u64` per page of `[p, p+bytes)`: `value`, or with `None`
/// the word's own address, as mmtests' `memory-hog.c` does
/// (`*(volatile unsigned long *)p = (unsigned long)p`).
///
/// Never zero: since 6.12 (`mm: store zero pages to be swapped out in a
/// bitmap`) the kernel swaps a zero-filled anonymous page out and in
/// without I/O (`swpout_zero`, `swpin_zero`), so a worker storing 0 (as
/// these did on their first pass until 2026-11-28) makes pages that
/// mmtests' workers never make, and that the simulator does not model.
///
/// # Safety
/// `p` must be a writable mapping of at least `bytes` bytes.
unsafe fn touch(p: *mut u8, bytes: usize, page: usize, value: Option<u64>) {
    let mut off = 0;
    while off < bytes {
        let at = p.add(off);
        std::ptr::write_volatile(at.cast::<u64>(), value.unwrap_or(at as u64));
        off += page;
    }
}

/// The mmap-latency loop: sleep, map `pages` pages, write 8 bytes to each, unmap,
/// take the time. Runs until `stop` is set or `duration_s` passes (0 = forever).
/// Each sample goes to `out` as `t_s value_us`, `t_s` on the record's time base
/// (CLOCK_MONOTONIC minus `t0_mono_ns`).
pub fn mmap_latency(
    out: &Path,
    pages: u64,
    sleep_ms: u64,
    t0_mono_ns: u64,
    duration_s: u64,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let mut f = fs::File::create(out).map_err(|e| HostError::io("cannot create", out, e))?;
    let page = sys::page_size() as usize;
    let bytes = pages as usize * page;
    let sleep = libc::timespec {
        tv_sec: (sleep_ms / 1000) as libc::time_t,
        tv_nsec: ((sleep_ms % 1000) * 1_000_000) as libc::c_long,
    };
    let start = sys::mono_ns();
    let mut prev = start;
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: nanosleep with a valid timespec; EINTR just shortens the sleep.
        unsafe { libc::nanosleep(&sleep, std::ptr::null_mut()) };
        let p = map_anon(bytes)?;
        // SAFETY: p maps `bytes` writable bytes until the munmap below.
        unsafe {
            // mmtests' mmap-latency.c stores the last timestamp (time1).
            touch(p, bytes, page, Some(prev.max(1)));
            libc::munmap(p.cast(), bytes);
        }
        let now = sys::mono_ns();
        let us = mmap_latency_sample_us(now - prev, sleep_ms);
        prev = now;
        let t_s = now.saturating_sub(t0_mono_ns) as f64 / 1e9;
        writeln!(f, "{t_s:.6} {us:.3}").map_err(|e| HostError::io("cannot write", out, e))?;
        if duration_s > 0 && now - start >= duration_s * 1_000_000_000 {
            break;
        }
    }
    Ok(())
}

/// A flag set by SIGTERM or SIGINT, for a worker loop to stop at the end of an iteration.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| HostError::new(format!("cannot install a signal handler: {e}")))?;
    }
    Ok(stop)
}

/// Parses the latency worker's output into `(t_s, value_us)` samples; torn last
/// lines (a killed worker) are skipped.
pub fn parse_latency_file(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let (t, v) = l.split_once(' ')?;
            Some((t.parse().ok()?, v.trim().parse().ok()?))
        })
        .collect()
}

/// The memory hog: map `bytes` of anon memory and write one word per page, pass
/// after pass, forever (or until `stop`); prints each pass's milliseconds.
pub fn memory_hog(bytes: u64, stop: Arc<AtomicBool>) -> Result<()> {
    let page = sys::page_size() as usize;
    let bytes = bytes as usize;
    let p = map_anon(bytes)?;
    let out = std::io::stdout();
    while !stop.load(Ordering::Relaxed) {
        let t = sys::mono_ns();
        // SAFETY: p maps `bytes` writable bytes for the life of the process.
        unsafe { touch(p, bytes, page, None) };
        let _ = writeln!(out.lock(), "{}", (sys::mono_ns() - t) / 1_000_000);
    }
    Ok(())
}

/// Makes a file for [`mmap_file_reader`]: `sparse`, a hole of `bytes`
/// (`ftruncate`, as mapped-file-stream.c does); otherwise `bytes` of zeros
/// written, synced and dropped from the page cache, so that the reader's
/// faults read the disk, as the simulator's files start on the device
/// uncached. A file already of that size is left as it is (the processes
/// of a shared worker use one set).
pub fn make_reader_file(path: &Path, bytes: u64, sparse: bool) -> Result<()> {
    use std::os::unix::io::AsRawFd;
    if fs::metadata(path).is_ok_and(|m| m.len() == bytes) {
        return Ok(());
    }
    let f = fs::File::create(path).map_err(|e| HostError::io("cannot create", path, e))?;
    if sparse {
        return f
            .set_len(bytes)
            .map_err(|e| HostError::io("cannot size", path, e));
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 20, &f);
    let zeros = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        w.write_all(&zeros[..n])
            .map_err(|e| HostError::io("cannot write", path, e))?;
        left -= n as u64;
    }
    w.flush()
        .map_err(|e| HostError::io("cannot write", path, e))?;
    drop(w);
    f.sync_data()
        .map_err(|e| HostError::io("cannot sync", path, e))?;
    // SAFETY: fadvise on an open descriptor; advice only.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

/// The mapped-file-stream reader (Johannes Weiner, linux-mm, 2010): maps
/// each file `MAP_SHARED` read-only with `MADV_RANDOM` (no readahead) and
/// reads one byte per page, in order or at random pages (as many reads as
/// the file has pages, with repeats, xorshift from `seed`), `passes` times
/// (0: until `stop`). Each pass goes over the files one after another, as
/// the simulated reader (`crates/workload/src/workers.rs`) does.
pub fn mmap_file_reader(
    paths: &[std::path::PathBuf],
    random: bool,
    passes: u32,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let page = sys::page_size() as usize;
    let mut maps = Vec::new();
    for path in paths {
        let f = fs::File::open(path).map_err(|e| HostError::io("cannot open", path, e))?;
        let len = f
            .metadata()
            .map_err(|e| HostError::io("cannot stat", path, e))?
            .len() as usize;
        if len < page {
            return Err(HostError::new(format!(
                "{}: {len} bytes, less than a page: nothing to map",
                path.display()
            )));
        }
        let p = sys::map_file_shared_ro(&f, len).map_err(|e| {
            HostError::new(format!(
                "mmap of {} ({len} bytes) failed: {e}",
                path.display()
            ))
        })?;
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(p, len, libc::MADV_RANDOM) };
        maps.push((p.cast::<u8>(), len / page));
    }
    let mut rng = seed | 1;
    let mut sum = 0u64;
    let mut pass = 0;
    'passes: while passes == 0 || pass < passes {
        for &(p, pages) in &maps {
            for i in 0..pages {
                let j = if random {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (rng % pages as u64) as usize
                } else {
                    i
                };
                // SAFETY: j < pages, inside the mapping.
                sum = sum.wrapping_add(u64::from(unsafe { p.add(j * page).read_volatile() }));
                if i % 4096 == 0 && stop.load(Ordering::Relaxed) {
                    break 'passes;
                }
            }
        }
        pass += 1;
    }
    std::hint::black_box(sum);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hog's stores are never zero, whatever the pass (6.12+ swaps a
    /// zero-filled page without I/O): each page holds its own address.
    #[test]
    fn hog_stores_are_never_zero() {
        let page = sys::page_size() as usize;
        let bytes = 8 * page;
        let p = map_anon(bytes).unwrap();
        // SAFETY: p maps `bytes` writable bytes until the munmap below.
        unsafe {
            touch(p, bytes, page, None);
            for i in 0..8 {
                let at = p.add(i * page);
                let v = at.cast::<u64>().read_volatile();
                assert_eq!(v, at as u64);
                assert_ne!(v, 0);
            }
            libc::munmap(p.cast(), bytes);
        }
    }

    #[test]
    fn latency_worker_writes_samples() {
        let out = std::env::temp_dir().join(format!("rl-mmaplat-{}", std::process::id()));
        let t0 = sys::mono_ns();
        // 64 pages, 1 ms sleep, for 1 s.
        mmap_latency(&out, 64, 1, t0, 1, Arc::new(AtomicBool::new(false))).unwrap();
        let samples = parse_latency_file(&fs::read_to_string(&out).unwrap());
        let _ = fs::remove_file(&out);
        assert!(samples.len() > 50, "{}", samples.len());
        assert!(samples.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(samples.iter().all(|(t, v)| *t >= 0.0 && *v >= 0.0));
        // Minus the sleep: a 64-page map costs well under 1 s.
        assert!(samples.iter().all(|(_, v)| *v < 1e6));
        assert_eq!(
            parse_latency_file("1.0 2.5\n2.0 3\n3.0"),
            vec![(1.0, 2.5), (2.0, 3.0)]
        );
    }

    /// A sparse file is made at its size without blocks, a written one with
    /// them; the reader maps and reads both, in order and at random, and
    /// names the file it cannot map.
    #[test]
    fn mmap_file_reader_reads_sparse_and_written_files() {
        let dir = std::env::temp_dir().join(format!("rl-mmapread-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (sparse, written) = (dir.join("s"), dir.join("w"));
        make_reader_file(&sparse, 64 << 20, true).unwrap();
        make_reader_file(&written, 1 << 20, false).unwrap();
        use std::os::unix::fs::MetadataExt;
        let ms = fs::metadata(&sparse).unwrap();
        assert_eq!(ms.len(), 64 << 20);
        assert!(
            ms.blocks() * 512 < 1 << 20,
            "sparse: {} blocks",
            ms.blocks()
        );
        let mw = fs::metadata(&written).unwrap();
        assert_eq!(mw.len(), 1 << 20);
        assert!(
            mw.blocks() * 512 >= 1 << 20,
            "written: {} blocks",
            mw.blocks()
        );
        let stop = Arc::new(AtomicBool::new(false));
        let files = [sparse.clone(), written.clone()];
        mmap_file_reader(&files, false, 2, 7, stop.clone()).unwrap();
        mmap_file_reader(&files, true, 1, 7, stop.clone()).unwrap();
        let tiny = dir.join("t");
        fs::write(&tiny, b"x").unwrap();
        let e = mmap_file_reader(std::slice::from_ref(&tiny), false, 1, 7, stop).unwrap_err();
        assert!(e.to_string().contains("less than a page"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }
}
