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
//!
//! And one the median factor does not stand for: an anonymous page's trip
//! through swap ([`swap_cycle`], `cost swap_cycle_ns`), the work of reclaim
//! and of a swap-in fault, which an emulated CPU (qemu TCG) slows far more
//! than it slows faults and stores (its TLB flushes and page-table walks
//! are emulated): the guest's machine carries it as `swapout-ns=`
//! (`guest::machine`).

use std::time::Instant;

const PAGE: usize = 4096;

/// What each measurement stands for, and the simulator's default for it, ns
/// per page (`crates/kernel/src/params.rs`; the CLI's tests check these
/// against the defaults, so a change there fails a test here).
pub const REFERENCE: &[(&str, &str, f64)] = &[
    // A first touch's wall time: the fault, the zeroing and the fault's
    // user time (`cost.fault_user_ns`, since 2026-11-27; 1980 before).
    (
        "fault_zero_ns",
        "cost.fault_ns + cost.zero_page_ns + cost.fault_user_ns",
        2180.0,
    ),
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

/// The base a guest's `swapout-ns=` is measured against: its swap cycle
/// (a swap-in fault and one page reclaimed to swap, at the ~3 pages
/// scanned per page reclaimed the host measured) less this times the
/// slowdown. It is the simulator's system CPU for that cycle without
/// `cost.swapout_page_ns` at its defaults when the probe was written:
/// `cost.fault_ns + 3 x (cost.scan_page_ns + cost.rmap_page_ns) +
/// cost.reclaim_anon_page_ns + 2 x cost.io_submit_page_ns` (one read, one
/// write). Fixed, so that the machine strings keep their meaning: `sim`
/// takes the cycle back and subtracts its present costs of the rest of it
/// (the CLI's `machine_arg::guest_swapout_ns`; the swap-in and the swap
/// write's submission are charged as measured since 2026-11-27).
pub const SWAP_CYCLE_BASE_NS: f64 = 1900.0 + 3.0 * (300.0 + 220.0) + 370.0 + 2.0 * 300.0;

/// A memory cgroup with this whole process in it, limited to `limit`
/// bytes, v2 (as a guest mounts it) or v1: for measurements of reclaim
/// ([`swap_cycle`], the `anon_reclaim_cost` example). The process leaves
/// it and it is removed on drop.
pub struct ProbeCgroup {
    /// The cgroup's directory.
    pub dir: std::path::PathBuf,
    parent_procs: std::path::PathBuf,
    limit_file: &'static str,
}

impl ProbeCgroup {
    /// Creates `reclaimlab-probe-PID` under the memory hierarchy's root and
    /// moves this process into it; `None` without root or a memory cgroup.
    pub fn create(limit: usize) -> Option<ProbeCgroup> {
        use std::path::Path;
        let name = format!("reclaimlab-probe-{}", std::process::id());
        let (parent, limit_file) = if std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|s| s.contains("memory"))
        {
            (Path::new("/sys/fs/cgroup"), "memory.max")
        } else if Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
            (Path::new("/sys/fs/cgroup/memory"), "memory.limit_in_bytes")
        } else {
            return None;
        };
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let cg = ProbeCgroup {
            parent_procs: parent.join("cgroup.procs"),
            dir,
            limit_file,
        };
        cg.set_limit(limit)?;
        std::fs::write(cg.dir.join("cgroup.procs"), std::process::id().to_string()).ok()?;
        Some(cg)
    }

    /// Sets the limit, bytes. Lowering it below the usage reclaims in this
    /// write, in this process's context (v2 `memory_max_write`, v1
    /// `mem_cgroup_resize_max`), so its system time is that reclaim's.
    pub fn set_limit(&self, limit: usize) -> Option<()> {
        std::fs::write(self.dir.join(self.limit_file), limit.to_string()).ok()
    }
}

impl Drop for ProbeCgroup {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.parent_procs, std::process::id().to_string());
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// User CPU a first touch's fault costs beyond the store itself, ns per
/// page: `cost.fault_user_ns` as this machine's kernel books it. The
/// exception's entry and return and the TLB refill after it run outside
/// the kernel's accounting window, so the tick books them to user mode
/// (docs/fidelity.md, "A fault's user time"); an emulated CPU (qemu TCG)
/// slows them far less than it slows the kernel's code, so the median
/// factor does not stand for them. First touches of fresh `pages`-page
/// mappings (mapped, written a word a page, unmapped), repeated for at
/// least `secs` seconds: a kernel that samples user and system time by
/// the tick (5.10 and 6.1 as Debian builds them: `TICK_CPU_ACCOUNTING`,
/// or `VIRT_CPU_ACCOUNTING_GEN` without `nohz_full=`) books a fault's few
/// per cent of user time to a few ticks a second, so the loop runs long
/// enough for some hundreds of them; the figure is this thread's user
/// time (`RUSAGE_THREAD`) over the pages touched, less `store_ns` (a
/// resident store's cost, [`measure`]'s `touch_page_ns`), never below 0.
/// `None` if nothing could be mapped.
pub fn fault_user_time(pages: usize, secs: f64, store_ns: f64) -> Option<f64> {
    let utime = || {
        // SAFETY: getrusage writes into the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        ru.ru_utime.tv_sec as f64 * 1e9 + ru.ru_utime.tv_usec as f64 * 1e3
    };
    let (t, u0) = (Instant::now(), utime());
    let mut touched = 0usize;
    while touched == 0 || t.elapsed().as_secs_f64() < secs {
        let p = map(pages)?;
        for i in 0..pages {
            // SAFETY: inside the mapping.
            unsafe { p.add(i * PAGE).write_volatile(1) };
        }
        // SAFETY: p came from map(pages).
        unsafe { libc::munmap(p as *mut libc::c_void, pages * PAGE) };
        touched += pages;
    }
    Some(((utime() - u0) / touched as f64 - store_ns).max(0.0))
}

/// This process's system CPU, ns.
fn process_stime_ns() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_stime.tv_sec as u64 * 1_000_000_000 + ru.ru_stime.tv_usec as u64 * 1000
}

fn pswpin() -> u64 {
    crate::sys::vmstat_counter("pswpin")
}

/// `Some` if the free swap holds `pages` pages.
fn swap_holds(pages: usize) -> Option<()> {
    let swap_free =
        crate::sys::meminfo_bytes(&std::fs::read_to_string("/proc/meminfo").ok()?, "SwapFree")?;
    (swap_free >= (pages * PAGE) as u64).then_some(())
}

/// Pass `n` of the swap probes: a distinct non-zero word written to each
/// of the `pages` pages at `p` (a [`map`]ping), so that none is a zero page.
fn write_pass(p: *mut u8, pages: usize, n: u64) {
    for i in 0..pages {
        // SAFETY: the caller's mapping holds `pages` pages.
        unsafe { (p.add(i * PAGE) as *mut u64).write_volatile(n * 0x9e37_79b9 + i as u64) };
    }
}

/// System CPU per swapped-in page, ns, of one process writing a non-zero
/// word to each page of `pages` anonymous pages (order-0) in a memory
/// cgroup of a quarter of that, passes 2 and 3 (as the
/// `anon_reclaim_cost` example, docs/bench/cpu-costs.md). `None` without
/// swap, root or a memory cgroup; the cgroup is removed afterwards.
pub fn swap_cycle(pages: usize) -> Option<f64> {
    swap_holds(pages)?;
    let cg = ProbeCgroup::create(pages * PAGE / 4)?;
    let p = map(pages)?;
    let pass = |n: u64| write_pass(p, pages, n);
    pass(1);
    let (t0, in0) = (process_stime_ns(), pswpin());
    pass(2);
    pass(3);
    let (dt, dn) = (process_stime_ns() - t0, pswpin() - in0);
    // SAFETY: p came from map(pages).
    unsafe { libc::munmap(p as *mut libc::c_void, pages * PAGE) };
    drop(cg);
    (dn > pages as u64 / 2).then(|| dt as f64 / dn as f64)
}

/// The swap cycle's two halves, ns of system CPU per page: a page reclaimed
/// to swap, and a page read back by a fault. [`swap_cycle`] times them
/// together, as they alternate in a thrashing task; here they are apart.
/// `pages` resident anonymous pages (order-0, written once) are pushed out
/// by lowering their cgroup's limit to a quarter of them: the write's
/// system time over the pages written to swap (`pswpout`) is reclaim's
/// half (the scan, the reverse-map walk, the unmap, `add_to_swap`, the
/// write's submission, the free after it; no TLB shootdown, the one
/// process being on this CPU). Then the limit is lifted and every page
/// written again: that pass's system time over the pages read (`pswpin`,
/// 8-page readahead included) is the fault's half (the fault, the swap
/// cache, the charge, the read's submission, the map). Best of two
/// rounds each. `None` without swap, root or a memory cgroup, or when
/// fewer than half the pages moved.
pub fn swap_halves(pages: usize) -> Option<(f64, f64)> {
    swap_holds(pages)?;
    // Room for the pages and this process's own memory (text, heap).
    let room = pages * PAGE + (64 << 20);
    let cg = ProbeCgroup::create(room)?;
    let p = map(pages)?;
    let pass = |n: u64| write_pass(p, pages, n);
    let pswpout = || crate::sys::vmstat_counter("pswpout");
    pass(1);
    let (mut out, mut back) = (f64::INFINITY, f64::INFINITY);
    for round in 0..2 {
        let (t0, o0) = (process_stime_ns(), pswpout());
        let lowered = cg.set_limit(pages * PAGE / 4);
        let (dt, dn) = (process_stime_ns() - t0, pswpout() - o0);
        if lowered.is_none() || dn < pages as u64 / 2 {
            break;
        }
        out = out.min(dt as f64 / dn as f64);
        cg.set_limit(room)?;
        let (t0, i0) = (process_stime_ns(), pswpin());
        pass(round + 2);
        let (dt, dn) = (process_stime_ns() - t0, pswpin() - i0);
        if dn < pages as u64 / 2 {
            break;
        }
        back = back.min(dt as f64 / dn as f64);
    }
    // SAFETY: p came from map(pages).
    unsafe { libc::munmap(p as *mut libc::c_void, pages * PAGE) };
    drop(cg);
    (out.is_finite() && back.is_finite()).then_some((out, back))
}

/// CPU per context switch, ns: two processes hand a byte back and forth
/// over two pipes for about `secs` seconds, both on one CPU (`lat_ctx`'s
/// method, lmbench): every handoff is a pipe write and read, a wake-up
/// (`try_to_wake_up`) and a switch (`schedule`, `finish_task_switch`).
/// The whole machine's busy time (`/proc/stat`: all but idle, iowait and
/// steal) over the handoffs, so that interrupts count too: meant for an
/// otherwise idle machine. `None` if the pipes or
/// the fork fail.
pub fn switch_cost(secs: f64) -> Option<f64> {
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    // SAFETY: pipe() fills the two-element arrays.
    if unsafe { libc::pipe(a.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: as above.
    if unsafe { libc::pipe(b.as_mut_ptr()) } != 0 {
        // SAFETY: closing the descriptors pipe() gave.
        unsafe {
            libc::close(a[0]);
            libc::close(a[1]);
        }
        return None;
    }
    let busy = || {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| crate::bench::parse_proc_stat_cpu(&t))
            .map(|(b, _)| b)
    };
    // Both on this CPU, so that a handoff is a wake-up and a switch, with
    // no IPI to an idle CPU and no idle loop (a busy machine's case); the
    // child inherits the mask, the parent gets its own back at the end.
    // SAFETY: the sets are plain bitmaps the calls fill or read.
    let old_mask = unsafe {
        let mut m: libc::cpu_set_t = std::mem::zeroed();
        let got = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut m) == 0;
        let cpu = libc::sched_getcpu();
        if got && cpu >= 0 {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut one);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
        }
        got.then_some(m)
    };
    let busy0 = busy();
    // SAFETY: the child only reads, writes and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut c = 0u8;
        // SAFETY: one byte into a valid buffer, on the pipes made above;
        // the child ends with _exit, without the parent's destructors.
        unsafe {
            // Only the parent writes `a` and reads `b`: the child's read
            // sees the end of the file when the parent closes its end.
            libc::close(a[1]);
            libc::close(b[0]);
            while libc::read(a[0], (&mut c as *mut u8).cast(), 1) == 1 {
                libc::write(b[1], (&c as *const u8).cast(), 1);
            }
            libc::_exit(0);
        }
    }
    // SAFETY: closing the child's ends in the parent.
    unsafe {
        libc::close(a[0]);
        libc::close(b[1]);
    }
    let t = Instant::now();
    let mut rounds = 0u64;
    let mut ok = pid > 0;
    let mut c = 1u8;
    while ok && t.elapsed().as_secs_f64() < secs {
        for _ in 0..256 {
            // SAFETY: as in the child.
            ok = unsafe {
                libc::write(a[1], (&c as *const u8).cast(), 1) == 1
                    && libc::read(b[0], (&mut c as *mut u8).cast(), 1) == 1
            };
            if !ok {
                break;
            }
            rounds += 1;
        }
    }
    let spent = busy().zip(busy0).map(|(x, y)| x.saturating_sub(y));
    // SAFETY: closing our descriptors (the child sees EOF and exits);
    // reaping it.
    unsafe {
        libc::close(a[1]);
        libc::close(b[0]);
        if pid > 0 {
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
        }
    }
    if let Some(m) = old_mask {
        // SAFETY: the mask sched_getaffinity gave.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &m) };
    }
    if !ok || rounds == 0 {
        return None;
    }
    let ns = spent? as f64 * 1e9 / crate::bench::clk_tck();
    Some(ns / (2.0 * rounds as f64))
}

/// The active swap area's read times as this system sees them: `O_DIRECT`
/// reads of the first area in `/proc/swaps` ([`direct_read_times`]). In a
/// guest this is the virtio request's round trip through qemu (and, under
/// TCG, the emulated interrupt and wake-up): the wait of every major fault,
/// which the swap disk's nominal figures do not measure (`guest::machine`).
/// An error says why not (no swap, direct reads refused).
pub fn swap_read_times() -> Result<(f64, f64), String> {
    let swaps = std::fs::read_to_string("/proc/swaps").map_err(|e| format!("/proc/swaps: {e}"))?;
    // "Filename Type Size(KiB) Used Priority", then one line per area.
    let line = swaps.lines().nth(1).ok_or("no swap area")?;
    let mut it = line.split_whitespace();
    let path = it.next().ok_or("no swap area")?;
    let size_kib: u64 = it
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("/proc/swaps: no size in `{line}`"))?;
    direct_read_times(std::path::Path::new(path), size_kib * 1024)
        .map_err(|e| format!("{path}: {e}"))
}

/// Mean ns of one `O_DIRECT` read of 4 KiB and of 64 KiB (a swap-in's
/// readahead window is 8 pages at `vm.page-cluster` 3; 64 KiB gives the
/// transfer more weight), one at a time, at fixed pseudo-random 64 KiB
/// aligned offsets in the first 256 MiB of `path` (`bytes` long); best of
/// 3 interleaved rounds of 64 reads each. [`read_latency_bandwidth`] turns
/// them into a device's latency and bandwidth.
pub fn direct_read_times(path: &std::path::Path, bytes: u64) -> Result<(f64, f64), String> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| format!("open O_DIRECT: {e}"))?;
    const BIG: usize = 64 << 10;
    let mut raw = vec![0u8; BIG + 4096];
    let off = raw.as_ptr().align_offset(4096);
    let buf = &mut raw[off..off + BIG];
    let span = bytes.min(256 << 20) / BIG as u64;
    if span < 16 {
        return Err(format!("{bytes} bytes: too small"));
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut time = |len: usize, n: u32| -> Result<f64, String> {
        let t = Instant::now();
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x % span) * BIG as u64;
            match f.read_at(&mut buf[..len], at) {
                Ok(got) if got == len => {}
                Ok(got) => return Err(format!("a {len}-byte read at {at} gave {got}")),
                Err(e) => return Err(format!("a {len}-byte read at {at}: {e}")),
            }
        }
        Ok(t.elapsed().as_nanos() as f64 / f64::from(n))
    };
    let (mut small, mut big) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        small = small.min(time(4096, 64)?);
        big = big.min(time(BIG, 64)?);
    }
    Ok((small, big))
}

/// A device's request latency, ns, and read bandwidth, bytes/s, from the
/// times of one 4 KiB and one 64 KiB read ([`direct_read_times`]): the
/// bandwidth is the 60 KiB the larger read adds over the time it adds,
/// the latency the 4 KiB read less its transfer. When the larger read is
/// not slower (the transfer is lost in the noise of a fixed cost) the
/// whole 4 KiB time is latency and the bandwidth is `None`.
pub fn read_latency_bandwidth(t4k_ns: f64, t64k_ns: f64) -> (f64, Option<f64>) {
    if t64k_ns.partial_cmp(&t4k_ns) != Some(std::cmp::Ordering::Greater) {
        return (t4k_ns, None);
    }
    let bw = (60 << 10) as f64 / ((t64k_ns - t4k_ns) / 1e9);
    ((t4k_ns - 4096.0 / bw * 1e9).max(0.0), Some(bw))
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

    /// One round at least, whatever the time asked for; a store cost above
    /// the whole user time floors the figure at 0.
    #[test]
    fn fault_user_time_touches_at_least_once_and_is_never_negative() {
        let v = fault_user_time(64, 0.0, 0.0).unwrap();
        assert!(v.is_finite() && v >= 0.0, "{v}");
        assert_eq!(fault_user_time(64, 0.0, 1e12), Some(0.0));
    }

    #[test]
    fn latency_and_bandwidth_from_two_read_sizes() {
        // 100 µs + 4 KiB at 100 MB/s, and + 64 KiB.
        let (t4, t64) = (
            100_000.0 + 4096.0 / 100e6 * 1e9,
            100_000.0 + 65536.0 / 100e6 * 1e9,
        );
        let (lat, bw) = read_latency_bandwidth(t4, t64);
        assert!((lat - 100_000.0).abs() < 1.0, "{lat}");
        assert!((bw.unwrap() - 100e6).abs() < 1e3);
        assert_eq!(read_latency_bandwidth(5000.0, 4900.0), (5000.0, None));
    }

    #[test]
    fn direct_reads_of_a_file_are_timed() {
        let dir =
            std::env::var_os("TMPDIR").map_or_else(|| "/var/tmp".into(), std::path::PathBuf::from);
        let p = dir.join(format!("rl-probe-read-{}", std::process::id()));
        std::fs::write(&p, vec![7u8; 2 << 20]).unwrap();
        let t = direct_read_times(&p, 2 << 20);
        let _ = std::fs::remove_file(&p);
        // Filesystems without O_DIRECT (tmpfs) refuse: nothing to check then.
        if let Ok((t4, t64)) = t {
            assert!(t4 > 0.0 && t64 > 0.0, "{t4} {t64}");
        }
    }

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
            slowdown(&s(&[21800.0, 1600.0, 240.0, 300000.0])),
            Some(25.0)
        );
        assert_eq!(slowdown(&s(&[2180.0, 80.0, 8.0])), Some(1.0));
        assert_eq!(slowdown(&[("other".into(), 5.0)]), None);
        assert_eq!(slowdown(&[]), None);
    }

    #[test]
    fn a_context_switch_costs_something() {
        // Two processes handing a byte back and forth for 0.3 s: at least
        // one clock tick of busy time, and less than a millisecond a handoff.
        let v = switch_cost(0.3).expect("pipes and fork work here");
        assert!(v.is_finite() && v > 0.0 && v < 1e6, "{v} ns a handoff");
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
