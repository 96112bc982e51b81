//! Measures, on this host's real kernel, what converting unwritten extents
//! to written at write completion costs on ext4 and XFS: the price of
//! fio's (and so stutterp's) `fallocate`d files, which the simulator will
//! charge as `cost.unwritten_convert_ns`.
//!
//! The path (read in 6.1, `e451e259ee44`, and mainline): a buffered write
//! into an unwritten extent completes in two parts. The bio completes
//! (ext4: `ext4_end_bio` → `ext4_put_io_end_defer`; XFS: `xfs_end_bio`,
//! chosen by `xfs_prepare_ioend` for unwritten or appending ioends), and
//! the io_end/ioend is put on a per-inode list and the inode's work queued
//! (ext4: `ext4_add_complete_io` queues `i_rsv_conversion_work` on the
//! filesystem's "ext4-rsv-conversion" workqueue, unbound, `max_active` 1;
//! XFS: `i_ioend_work` on the mount's "xfs-conv" workqueue, per-CPU). The
//! work function (`ext4_end_io_rsv_work` → `ext4_do_flush_completed_IO` →
//! `ext4_end_io_end` per io_end → `ext4_convert_unwritten_io_end_vec`, one
//! reserved journal handle per io_end and an `ext4_map_blocks(…CONVERT)`
//! per mapped range; `xfs_end_io` → sort and merge the inode's ioends →
//! `xfs_end_ioend` → `xfs_iomap_write_unwritten`, a transaction per extent)
//! converts, and only then do the folios end writeback.
//!
//! Method, per filesystem and round (default 3, each with a fresh file and
//! the next seed): create a file, `fallocate` it (mode 0: unwritten
//! extents), write N random 1 MiB blocks of it with buffered `pwrite` (each
//! block once, in random order, as fio's `randwrite` with its random map),
//! `fsync`; drop its page cache; write the same blocks again (now written
//! extents: no conversion) and `fsync`. During each pass a private tracefs
//! instance records `workqueue_execute_start`/`_end` (filtered to the
//! conversion work functions), the filesystems' conversion tracepoints
//! (`ext4:ext4_ext_handle_unwritten_extents` with `CONVERT` and without
//! `PRE_IO`, `xfs:xfs_unwritten_convert`; filtered to the file's inode) and
//! `sched_switch` of kworkers, so each work item's wall time splits into
//! time on and off the CPU (irq time that interrupts the worker stays in
//! "on CPU"; timestamps have 1 µs resolution). Cross-check: the CPU time of
//! the writing thread in `fsync` (which submits the writeback) and of all
//! kernel threads (`/proc/…/schedstat`, ns), fallocated pass less overwrite
//! pass, per conversion. The writer's CPU in the writes themselves is
//! printed but left out of it: on this VM it varies 0.1–1 s between
//! identical passes (page-cache memory the hypervisor has to back again
//! after the guest reported it free), which would drown the conversions.
//!
//! (a) ext4: a file in `--dir` (default `/var/tmp`, the host's ext4 root).
//! (b) XFS: a fresh image (file size + 512 MiB, written out) in
//! `--image-dir` (default `/dev/shm`, so that the image file itself is not
//! an ext4 file with unwritten extents of its own), `mkfs.xfs`, a loop device, a mount
//! beside it. The file, the image, the loop device, the mount point and the
//! tracefs instance are removed at the end, on error, and on Ctrl-C (a
//! second Ctrl-C exits at once and leaves them: the paths are printed
//! first).
//!
//! Needs root, tracefs, `mkfs.xfs` and `losetup` (`--fs ext4` needs neither).
//!
//! Run: `cargo run --release -p reclaimlab-host --example unwritten_convert_cost -- [--dir DIR]
//!      [--image-dir DIR] [--fs both|ext4|xfs] [--file-mib M] [--blocks N] [--seed S] [--rounds R]`
//! Results: docs/bench/cpu-costs.md

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reclaimlab_host::bench::cli::{need_root, run_main, Flags};
use reclaimlab_host::{disks, runner, sys, tracefs};

const MIB: u64 = 1 << 20;
const NAME: &str = "unwritten_convert_cost";

// ---------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, PartialEq)]
struct Args {
    dir: PathBuf,
    image_dir: PathBuf,
    ext4: bool,
    xfs: bool,
    file_mib: u64,
    blocks: usize,
    seed: u64,
    rounds: usize,
}

const USAGE: &str = "usage: unwritten_convert_cost [--dir DIR] [--image-dir DIR] [--fs both|ext4|xfs] [--file-mib M] [--blocks N] [--seed S] [--rounds R]";

/// Parses the command line (without the program name).
fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("/var/tmp"),
        image_dir: PathBuf::from("/dev/shm"),
        ext4: true,
        xfs: true,
        file_mib: 1024,
        blocks: 512,
        seed: 1,
        rounds: 3,
    };
    let mut f = Flags::new(args, USAGE);
    while let Some(flag) = f.next_flag() {
        match flag {
            "--dir" => a.dir = PathBuf::from(f.value()?),
            "--image-dir" => a.image_dir = PathBuf::from(f.value()?),
            "--fs" => {
                let v = f.value()?;
                (a.ext4, a.xfs) = match v.as_str() {
                    "both" => (true, true),
                    "ext4" => (true, false),
                    "xfs" => (false, true),
                    _ => return Err(format!("`--fs {v}`: accepted are both, ext4, xfs")),
                }
            }
            "--file-mib" => a.file_mib = f.num("the file size in MiB")?,
            "--blocks" => a.blocks = f.num("the number of 1 MiB blocks")? as usize,
            "--seed" => a.seed = f.num("the seed")?,
            "--rounds" => a.rounds = f.num("the number of rounds")? as usize,
            _ => return Err(f.unknown()),
        }
    }
    if a.file_mib < 2 || a.file_mib > 64 * 1024 {
        return Err(format!(
            "`--file-mib {}`: the file must be 2..=65536 MiB",
            a.file_mib
        ));
    }
    if a.rounds == 0 || a.rounds > 100 {
        return Err(format!("`--rounds {}`: 1..=100", a.rounds));
    }
    if a.blocks == 0 || a.blocks as u64 > a.file_mib {
        return Err(format!(
            "`--blocks {}`: between 1 and the file's {} MiB blocks",
            a.blocks, a.file_mib
        ));
    }
    Ok(a)
}

// ---------------------------------------------------------------------------
// Pure helpers: the random blocks, statistics, trace parsing

/// splitmix64: a small deterministic generator for the block order.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` distinct block numbers of `0..total` in random order (a shuffle's
/// prefix), as fio's random map gives each block once per pass.
fn pick_blocks(total: u64, n: usize, seed: u64) -> Vec<u64> {
    let mut all: Vec<u64> = (0..total).collect();
    let mut s = seed;
    for i in 0..n.min(all.len()) {
        let j = i + (splitmix(&mut s) % (all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(n);
    all
}

/// How many runs of consecutive block numbers `blocks` makes: writeback
/// maps each run as one range (ext4 one io_end up to its 8 MiB extent
/// limit; XFS one ioend, and `xfs_end_io` merges adjacent ones).
fn contiguous_runs(blocks: &[u64]) -> usize {
    let mut b = blocks.to_vec();
    b.sort_unstable();
    b.dedup();
    b.windows(2).filter(|w| w[1] != w[0] + 1).count() + usize::from(!b.is_empty())
}

/// Median, 90th percentile and maximum (nearest rank) of `v`; `None` when empty.
fn quantiles(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = |p: f64| s[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    Some((rank(0.5), rank(0.9), s[s.len() - 1]))
}

/// One line of `trace_pipe`, split into its header and the event's fields.
#[derive(Debug, Clone, PartialEq)]
struct TraceLine<'a> {
    pid: u32,
    cpu: u32,
    ts_ns: u64,
    event: &'a str,
    fields: &'a str,
}

/// `secs.fraction` (as tracefs prints a timestamp) in ns.
fn parse_ts_ns(t: &str) -> Option<u64> {
    let (s, f) = t.split_once('.')?;
    if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: u64 = f.parse().ok()?;
    Some(s.parse::<u64>().ok()? * 1_000_000_000 + frac * 10u64.pow(9 - f.len() as u32))
}

/// Parses `  comm-PID  [CPU] flags  SECS.USECS: event: fields`; the comm may
/// hold dashes and spaces, so the header is found from the `[CPU]` on.
fn parse_line(line: &str) -> Option<TraceLine<'_>> {
    let mut search = 0;
    let (open, close) = loop {
        let o = search + line[search..].find('[')?;
        let c = o + line[o..].find(']')?;
        if c > o + 1 && line[o + 1..c].bytes().all(|b| b.is_ascii_digit()) {
            break (o, c);
        }
        search = o + 1;
    };
    let task = line[..open].trim_end();
    let pid = task.rsplit_once('-')?.1.parse().ok()?;
    let cpu = line[open + 1..close].parse().ok()?;
    let rest = &line[close + 1..];
    // Optional irq-info flags, then the timestamp ending in ':'.
    let mut pos = 0;
    let mut ts_ns = None;
    for tok in rest.split_whitespace() {
        let at = pos + rest[pos..].find(tok)?;
        pos = at + tok.len();
        if let Some(t) = tok.strip_suffix(':') {
            ts_ns = Some(parse_ts_ns(t)?);
            break;
        }
    }
    let after = rest[pos..].trim_start();
    let (event, fields) = after.split_once(':')?;
    Some(TraceLine {
        pid,
        cpu,
        ts_ns: ts_ns?,
        event: event.trim(),
        fields: fields.trim(),
    })
}

/// The value after `key` in a space-separated `key value` list.
fn field_after<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let mut it = fields.split_whitespace();
    while let Some(t) = it.next() {
        if t == key {
            return it.next();
        }
    }
    None
}

/// The value of `key=` in a `key=value` list (sched_switch).
fn field_eq<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
}

/// What an event line means to this measurement.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    /// `workqueue_execute_start`/`_end`: work pointer (as printed), function.
    WorkStart(String, String),
    WorkEnd(String, String),
    /// A conversion at completion: inode, bytes converted (or asked for).
    Convert(u64, u64),
    /// ext4's split of an unwritten extent at submission (`PRE_IO`).
    Split(u64),
    /// `sched_switch`; `preempted`: the previous task left the CPU runnable
    /// (`prev_state` R), not to sleep.
    Switch {
        prev: u32,
        next: u32,
        preempted: bool,
    },
}

fn classify(l: &TraceLine) -> Option<Ev> {
    match l.event {
        "workqueue_execute_start" | "workqueue_execute_end" => {
            let work = field_after(l.fields, "struct")?.trim_end_matches(':');
            let func = field_after(l.fields, "function")?;
            Some(if l.event.ends_with("start") {
                Ev::WorkStart(work.into(), func.into())
            } else {
                Ev::WorkEnd(work.into(), func.into())
            })
        }
        "ext4_ext_handle_unwritten_extents" => {
            let ino = field_after(l.fields, "ino")?.parse().ok()?;
            let flags: Vec<&str> = field_after(l.fields, "flags")?.split('|').collect();
            let blocks: u64 = field_after(l.fields, "m_len")?.parse().ok()?;
            if flags.contains(&"PRE_IO") {
                Some(Ev::Split(ino))
            } else if flags.contains(&"CONVERT") {
                Some(Ev::Convert(ino, blocks * 4096))
            } else {
                None
            }
        }
        "xfs_unwritten_convert" => {
            let hex = |k| {
                u64::from_str_radix(field_after(l.fields, k)?.trim_start_matches("0x"), 16).ok()
            };
            Some(Ev::Convert(hex("ino")?, hex("bytecount")?))
        }
        "sched_switch" => Some(Ev::Switch {
            prev: field_eq(l.fields, "prev_pid")?.parse().ok()?,
            next: field_eq(l.fields, "next_pid")?.parse().ok()?,
            preempted: field_eq(l.fields, "prev_state")?.starts_with('R'),
        }),
        _ => None,
    }
}

/// One execution of a conversion work item.
#[derive(Debug, Clone, PartialEq)]
struct WorkItem {
    work: String,
    func: String,
    pid: u32,
    wall_ns: u64,
    /// Wall time less the time the worker was switched out.
    oncpu_ns: u64,
    /// Of the time switched out, that after being preempted (left the CPU
    /// runnable); the rest it slept (a lock, log space, memory, I/O).
    preempted_ns: u64,
    /// Conversions of the measured inode inside it, and their bytes.
    conversions: u64,
    bytes: u64,
    /// Conversions of other inodes inside it.
    other: u64,
}

/// What one pass's trace says.
#[derive(Debug, Clone, Default, PartialEq)]
struct PassTrace {
    /// Work items of the measured inode (their work struct converted it).
    ours: Vec<WorkItem>,
    /// Work items of other inodes (other files on a shared filesystem).
    others: usize,
    /// Conversions of the inode outside any work item.
    outside: u64,
    /// ext4's submission-time splits of the inode's unwritten extents.
    splits: u64,
    lines: u64,
    unparsed: u64,
}

struct Open {
    work: String,
    func: String,
    start: u64,
    off_cpu: u64,
    preempted: u64,
    /// Switched out since, and whether runnable then.
    out_since: Option<(u64, bool)>,
    conv: Vec<(u64, u64)>,
}

/// Pairs each worker's execute_start with its execute_end (same pid, same
/// work), attributes conversion events to the work item open on their pid,
/// and subtracts the time the worker spent switched out.
fn analyse(text: &str, ino: u64) -> PassTrace {
    let mut pt = PassTrace::default();
    let mut open: HashMap<u32, Open> = HashMap::new();
    let mut items: Vec<(WorkItem, Vec<u64>)> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        pt.lines += 1;
        let Some(l) = parse_line(line) else {
            pt.unparsed += 1;
            continue;
        };
        match classify(&l) {
            Some(Ev::WorkStart(work, func)) => {
                open.insert(
                    l.pid,
                    Open {
                        work,
                        func,
                        start: l.ts_ns,
                        off_cpu: 0,
                        preempted: 0,
                        out_since: None,
                        conv: Vec::new(),
                    },
                );
            }
            Some(Ev::WorkEnd(work, _)) => {
                if let Some(o) = open.remove(&l.pid) {
                    if o.work == work {
                        let wall = l.ts_ns.saturating_sub(o.start);
                        let inos: Vec<u64> = o.conv.iter().map(|c| c.0).collect();
                        let mine: Vec<&(u64, u64)> = o.conv.iter().filter(|c| c.0 == ino).collect();
                        items.push((
                            WorkItem {
                                work: o.work,
                                func: o.func,
                                pid: l.pid,
                                wall_ns: wall,
                                oncpu_ns: wall.saturating_sub(o.off_cpu),
                                preempted_ns: o.preempted,
                                conversions: mine.len() as u64,
                                bytes: mine.iter().map(|c| c.1).sum(),
                                other: (inos.len() - mine.len()) as u64,
                            },
                            inos,
                        ));
                    }
                }
            }
            Some(Ev::Convert(i, bytes)) => match open.get_mut(&l.pid) {
                Some(o) => o.conv.push((i, bytes)),
                None if i == ino => pt.outside += 1,
                None => {}
            },
            Some(Ev::Split(i)) if i == ino => pt.splits += 1,
            Some(Ev::Switch {
                prev,
                next,
                preempted,
            }) => {
                if let Some(o) = open.get_mut(&prev) {
                    o.out_since.get_or_insert((l.ts_ns, preempted));
                }
                if let Some(o) = open.get_mut(&next) {
                    if let Some((t, runnable)) = o.out_since.take() {
                        let d = l.ts_ns.saturating_sub(t);
                        o.off_cpu += d;
                        if runnable {
                            o.preempted += d;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // A work struct is per inode: one that converted the inode once is its.
    let ours: std::collections::HashSet<String> = items
        .iter()
        .filter(|(w, _)| w.conversions > 0)
        .map(|(w, _)| w.work.clone())
        .collect();
    for (w, _) in items {
        if ours.contains(&w.work) {
            pt.ours.push(w);
        } else {
            pt.others += 1;
        }
    }
    pt
}

/// Whether a `/proc/PID/stat` line is a kernel thread's (parent
/// kthreadd, pid 2, or kthreadd itself).
fn is_kthread(stat: &str, pid: u32) -> bool {
    pid == 2
        || sys::stat_fields(stat)
            .and_then(|f| f.get(4 - 3)?.parse::<u32>().ok())
            .is_some_and(|ppid| ppid == 2)
}

/// The first field of `/proc/PID/schedstat`: time on the CPU, ns.
fn schedstat_run_ns(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

// ---------------------------------------------------------------------------
// The host side

/// Time on the CPU of every kernel thread (kworkers, jbd2, loop, …), ns,
/// and its group ([`comm_group`]), by pid, from `/proc/PID/schedstat`
/// (ns, not the 10 ms ticks of `stat`).
fn kthread_snapshot() -> HashMap<u32, (String, u64)> {
    let mut m = HashMap::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return m;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        if !is_kthread(&stat, pid) {
            continue;
        }
        let comm = stat
            .split_once('(')
            .and_then(|(_, r)| r.rsplit_once(')'))
            .map_or("", |(c, _)| c);
        if let Some(ns) = fs::read_to_string(e.path().join("schedstat"))
            .ok()
            .and_then(|t| schedstat_run_ns(&t))
        {
            m.insert(pid, (comm_group(comm).to_string(), ns));
        }
    }
    m
}

/// A kernel thread's group: its name up to the first `/`, or without
/// trailing digits (`kworker/u8:2` → `kworker`, `jbd2/vda-8` → `jbd2`,
/// `loop0` → `loop`).
fn comm_group(comm: &str) -> &str {
    let g = match comm.split_once('/') {
        Some((head, _)) => head,
        None => comm.trim_end_matches(|c: char| c.is_ascii_digit()),
    };
    if g.is_empty() {
        comm
    } else {
        g
    }
}

/// Kernel-thread CPU between two snapshots, ns, by group (threads born in
/// between count whole), largest first.
fn kthread_delta_ns(
    a: &HashMap<u32, (String, u64)>,
    b: &HashMap<u32, (String, u64)>,
) -> Vec<(String, u64)> {
    let mut g: HashMap<String, u64> = HashMap::new();
    for (p, (name, t)) in b {
        let before = a.get(p).map_or(0, |x| x.1);
        *g.entry(name.clone()).or_default() += t.saturating_sub(before);
    }
    let mut v: Vec<(String, u64)> = g.into_iter().collect();
    v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    v
}

/// A private tracefs instance, removed on drop.
struct Trace(tracefs::Instance);

impl Drop for Trace {
    fn drop(&mut self) {
        if let Err(e) = self.0.remove() {
            eprintln!("{NAME}: {e}");
        }
    }
}

/// A file removed on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.0) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("{NAME}: cannot remove {}: {e}", self.0.display());
            }
        }
    }
}

/// The XFS image: image file, loop device, mount point; undone on drop.
struct XfsImage {
    img: PathBuf,
    mnt: PathBuf,
}

impl XfsImage {
    fn create(img: PathBuf, bytes: u64) -> Result<XfsImage, String> {
        let x = XfsImage {
            mnt: img.with_extension("mnt"),
            img,
        };
        // Written out in full, not sparse: the loop device's writes then
        // overwrite existing pages of the image in both passes, instead of
        // allocating them (a cost of the image, not of XFS) in the first.
        let f =
            File::create(&x.img).map_err(|e| format!("cannot create {}: {e}", x.img.display()))?;
        let zeros = vec![0u8; MIB as usize];
        for i in 0..bytes / MIB {
            f.write_all_at(&zeros, i * MIB)
                .map_err(|e| format!("cannot write {}: {e}", x.img.display()))?;
        }
        drop(f);
        run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&x.img))?;
        let dev = run(Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&x.img))?;
        let dev = dev.trim().to_string();
        fs::create_dir_all(&x.mnt)
            .map_err(|e| format!("cannot create {}: {e}", x.mnt.display()))?;
        run(Command::new("mount").arg(&dev).arg(&x.mnt))?;
        Ok(x)
    }
}

impl Drop for XfsImage {
    fn drop(&mut self) {
        if let Err(e) = disks::unmount(&self.mnt) {
            eprintln!("{NAME}: {e}");
        }
        if let Err(e) = disks::detach_image(&self.img) {
            eprintln!("{NAME}: {e}");
        }
        let _ = fs::remove_dir(&self.mnt);
        if let Err(e) = fs::remove_file(&self.img) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("{NAME}: cannot remove {}: {e}", self.img.display());
            }
        }
    }
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// This thread's time on the CPU (user + system; a writer's is nearly all
/// system), ns, from `/proc/thread-self/schedstat`.
fn thread_cpu_ns() -> u64 {
    fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| schedstat_run_ns(&t))
        .unwrap_or_else(tracefs::thread_cpu_ns)
}

/// What one pass measured.
struct Pass {
    wall_s: f64,
    writer_cpu_ns: u64,
    /// Of which in the writes (the rest is fsync).
    writer_write_ns: u64,
    kthreads: Vec<(String, u64)>,
    trace: PassTrace,
    lost: u64,
}

/// One pass: write `blocks` (1 MiB each) with buffered pwrite, fsync,
/// traced; then drop the file's cache so the next pass allocates too.
fn pass(
    root: &Path,
    f: &File,
    ino: u64,
    blocks: &[u64],
    work_fn: &str,
    convert_event: &str,
    stop: &AtomicBool,
) -> Result<Pass, String> {
    let mut events = vec![
        "workqueue:workqueue_execute_start".to_string(),
        "workqueue:workqueue_execute_end".to_string(),
        "sched:sched_switch".to_string(),
    ];
    let has_convert = tracefs::has_event(root, convert_event);
    if has_convert {
        events.push(convert_event.to_string());
    }
    let name = format!("reclaimlab-convert-{}", std::process::id());
    let inst =
        Trace(tracefs::Instance::create(root, &name, &events, 16384).map_err(|e| e.to_string())?);
    let filter = |event: &str, text: &str| -> Result<(), String> {
        let p = tracefs::event_dir(&inst.0.dir, event).join("filter");
        sys::write(&p, text).map_err(|e| format!("{e} (filter `{text}`)"))
    };
    let wq = format!("function.function == {work_fn}");
    filter("workqueue:workqueue_execute_start", &wq)?;
    filter("workqueue:workqueue_execute_end", &wq)?;
    filter(
        "sched:sched_switch",
        "prev_comm ~ \"kworker*\" || next_comm ~ \"kworker*\"",
    )?;
    if has_convert {
        filter(convert_event, &format!("ino == {ino}"))?;
    }
    let text = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&text);
    let done = Arc::new(AtomicBool::new(false));
    let h = inst
        .0
        .stream(Arc::clone(&done), move |b| sink.lock().unwrap().push_str(b))
        .map_err(|e| e.to_string())?;
    inst.0.start().map_err(|e| e.to_string())?;
    let buf: Vec<u8> = (0..MIB as usize).map(|i| (i % 251) as u8 + 1).collect();
    let k0 = kthread_snapshot();
    let s0 = thread_cpu_ns();
    let t0 = std::time::Instant::now();
    let mut result = Ok(());
    for &b in blocks {
        if stop.load(Ordering::Relaxed) {
            result = Err("interrupted".to_string());
            break;
        }
        if let Err(e) = f.write_all_at(&buf, b * MIB) {
            result = Err(format!("pwrite: {e}"));
            break;
        }
    }
    let writer_write_ns = thread_cpu_ns() - s0;
    if result.is_ok() {
        result = f.sync_all().map_err(|e| format!("fsync: {e}"));
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let writer_cpu_ns = thread_cpu_ns() - s0;
    // Let completions that outlive fsync's wait (none expected) finish.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let kthreads = kthread_delta_ns(&k0, &kthread_snapshot());
    let _ = inst.0.stop();
    done.store(true, Ordering::Release);
    let _ = h.join();
    let lost = inst.0.lost_events();
    drop(inst);
    result?;
    // SAFETY: fadvise on an open descriptor; no memory is touched.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    let t = text.lock().unwrap();
    Ok(Pass {
        wall_s,
        writer_cpu_ns,
        writer_write_ns,
        kthreads,
        trace: analyse(&t, ino),
        lost,
    })
}

/// One round: a fresh fallocated file, its two passes.
struct Round {
    seed: u64,
    runs: usize,
    fresh: Pass,
    over: Pass,
}

/// `args.rounds` rounds on a fresh file at `path` each; prints the tables.
fn measure(
    label: &str,
    path: &Path,
    args: &Args,
    root: &Path,
    work_fn: &str,
    convert_event: &str,
    stop: &AtomicBool,
) -> Result<(), String> {
    let mut rounds = Vec::new();
    for r in 0..args.rounds {
        let f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let _file = TempFile(path.to_path_buf());
        let size = args.file_mib * MIB;
        // SAFETY: fallocate on our open descriptor, mode 0 (allocate, unwritten).
        let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) };
        if rc != 0 {
            return Err(format!(
                "fallocate {} MiB on {}: {}",
                args.file_mib,
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        f.sync_all().map_err(|e| format!("fsync: {e}"))?;
        let ino = f
            .metadata()
            .map_err(|e| format!("stat {}: {e}", path.display()))?
            .ino();
        let seed = args.seed + r as u64;
        let blocks = pick_blocks(args.file_mib, args.blocks, seed);
        let fresh = pass(root, &f, ino, &blocks, work_fn, convert_event, stop)?;
        let over = pass(root, &f, ino, &blocks, work_fn, convert_event, stop)?;
        rounds.push(Round {
            seed,
            runs: contiguous_runs(&blocks),
            fresh,
            over,
        });
    }
    report(label, &rounds, tracefs::has_event(root, convert_event));
    Ok(())
}

fn fmt_q(v: &[f64], scale: f64, digits: usize) -> String {
    match quantiles(v) {
        Some((m, p, x)) => format!(
            "{:.d$} / {:.d$} / {:.d$}",
            m / scale,
            p / scale,
            x / scale,
            d = digits
        ),
        None => "—".into(),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn report(label: &str, rounds: &[Round], has_convert: bool) {
    let total = |v: &[(String, u64)]| v.iter().map(|g| g.1).sum::<u64>();
    let conv = |p: &Pass| p.trace.ours.iter().map(|w| w.conversions).sum::<u64>();
    let fsync = |p: &Pass| p.writer_cpu_ns - p.writer_write_ns;
    println!("\n### {label}\n");
    println!("Per round (fallocated pass / overwrite pass):\n");
    println!("| round (seed) | runs of adjacent blocks | conversions (work items) | overwrite: conversions (work items) | submission splits (`PRE_IO`) | wall s | writer CPU ms in the writes | writer CPU ms in fsync | kernel threads' CPU ms | µs on CPU per conversion, traced | µs per conversion, Δ fsync + Δ kernel threads |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, r) in rounds.iter().enumerate() {
        let (f, o) = (&r.fresh, &r.over);
        let c = conv(f);
        let oncpu: u64 = f.trace.ours.iter().map(|w| w.oncpu_ns).sum();
        let per = |x: f64| {
            if c > 0 {
                format!("{:.1}", x / c as f64 / 1e3)
            } else {
                "—".into()
            }
        };
        let delta = (fsync(f) as f64 - fsync(o) as f64)
            + (total(&f.kthreads) as f64 - total(&o.kthreads) as f64);
        println!(
            "| {} ({}) | {} | {} ({}) | {} ({}) | {} | {:.2} / {:.2} | {:.0} / {:.0} | {:.1} / {:.1} | {:.1} / {:.1} | {} | {} |",
            i + 1,
            r.seed,
            r.runs,
            c,
            f.trace.ours.len(),
            conv(o),
            o.trace.ours.len(),
            f.trace.splits,
            f.wall_s,
            o.wall_s,
            ms(f.writer_write_ns),
            ms(o.writer_write_ns),
            ms(fsync(f)),
            ms(fsync(o)),
            ms(total(&f.kthreads)),
            ms(total(&o.kthreads)),
            per(oncpu as f64),
            per(delta)
        );
    }
    let groups = |p: &Pass| {
        p.kthreads
            .iter()
            .filter(|g| g.1 >= 500_000)
            .map(|g| format!("{} {:.1}", g.0, ms(g.1)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(r) = rounds.last() {
        println!(
            "\nKernel threads' CPU ms by group, last round (≥ 0.5 ms): fallocated pass {}; overwrite pass {}.",
            groups(&r.fresh),
            groups(&r.over)
        );
    }
    let items: Vec<&WorkItem> = rounds.iter().flat_map(|r| &r.fresh.trace.ours).collect();
    let with_conv: Vec<&&WorkItem> = items.iter().filter(|w| w.conversions > 0).collect();
    let per_item =
        |f: &dyn Fn(&WorkItem) -> f64| -> Vec<f64> { items.iter().map(|w| f(w)).collect() };
    let per_conv = |f: &dyn Fn(&WorkItem) -> f64| -> Vec<f64> {
        with_conv
            .iter()
            .map(|w| f(w) / w.conversions as f64)
            .collect()
    };
    let n_conv: u64 = items.iter().map(|w| w.conversions).sum();
    let wall: u64 = items.iter().map(|w| w.wall_ns).sum();
    let oncpu: u64 = items.iter().map(|w| w.oncpu_ns).sum();
    println!("\nThe fallocated passes' conversion work items, all rounds:\n");
    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| work items (other files' items on the same filesystem) | {} ({}) |",
        items.len(),
        rounds.iter().map(|r| r.fresh.trace.others).sum::<usize>()
    );
    if has_convert {
        println!(
            "| conversions in them (of the file, outside any work item) | {n_conv} ({}) |",
            rounds.iter().map(|r| r.fresh.trace.outside).sum::<u64>()
        );
        println!(
            "| conversions per work item, median / p90 / max | {} |",
            fmt_q(&per_item(&|w| w.conversions as f64), 1.0, 0)
        );
        println!(
            "| KiB per conversion (per item), median / p90 / max | {} |",
            fmt_q(&per_conv(&|w| w.bytes as f64), 1024.0, 0)
        );
    }
    println!(
        "| µs wall per work item, median / p90 / max | {} |",
        fmt_q(&per_item(&|w| w.wall_ns as f64), 1e3, 1)
    );
    println!(
        "| µs on CPU per work item (wall less switched out), median / p90 / max | {} |",
        fmt_q(&per_item(&|w| w.oncpu_ns as f64), 1e3, 1)
    );
    if has_convert && n_conv > 0 {
        println!(
            "| µs wall per conversion (per item), median / p90 / max | {} |",
            fmt_q(&per_conv(&|w| w.wall_ns as f64), 1e3, 1)
        );
        println!(
            "| µs on CPU per conversion (per item), median / p90 / max | {} |",
            fmt_q(&per_conv(&|w| w.oncpu_ns as f64), 1e3, 1)
        );
        println!(
            "| µs per conversion, all items together: wall / on CPU | {:.1} / {:.1} |",
            wall as f64 / n_conv as f64 / 1e3,
            oncpu as f64 / n_conv as f64 / 1e3
        );
        let out: Vec<&&WorkItem> = items.iter().filter(|w| w.oncpu_ns < w.wall_ns).collect();
        let off: u64 = out.iter().map(|w| w.wall_ns - w.oncpu_ns).sum();
        let pre: u64 = out.iter().map(|w| w.preempted_ns).sum();
        println!(
            "| work items switched out / of them preempted (runnable) / µs switched out, of it preempted | {} of {} / {} / {:.0}, {:.0} |",
            out.len(),
            items.len(),
            out.iter().filter(|w| w.preempted_ns > 0).count(),
            off as f64 / 1e3,
            pre as f64 / 1e3
        );
    }
    let lines: u64 = rounds
        .iter()
        .map(|r| r.fresh.trace.lines + r.over.trace.lines)
        .sum();
    let unparsed: u64 = rounds
        .iter()
        .map(|r| r.fresh.trace.unparsed + r.over.trace.unparsed)
        .sum();
    let lost: u64 = rounds.iter().map(|r| r.fresh.lost + r.over.lost).sum();
    println!(
        "| trace lines, all passes (unparsed) / lost events | {lines} ({unparsed}) / {lost} |"
    );
}

fn main() {
    run_main(
        NAME,
        parse_args,
        |_| need_root("tracefs, mkfs.xfs, losetup, mount"),
        main_root,
    );
}

fn main_root(args: &Args) -> Result<(), String> {
    let stop = runner::install_signal_flag().map_err(|e| e.to_string())?;
    let (root, _mounted) = tracefs::find_or_mount().map_err(|e| e.to_string())?;
    for ev in [
        "workqueue:workqueue_execute_start",
        "workqueue:workqueue_execute_end",
    ] {
        if !tracefs::has_event(&root, ev) {
            return Err(format!("this kernel has no {ev} tracepoint"));
        }
    }
    let pid = std::process::id();
    println!(
        "kernel {}, {} CPUs, {} random 1 MiB blocks of a {} MiB fallocated file, {} rounds from seed {}",
        sys::kernel_release(),
        sys::cpus(),
        args.blocks,
        args.file_mib,
        args.rounds,
        args.seed
    );
    if args.ext4 {
        let path = args.dir.join(format!(".reclaimlab-convert-cost-{pid}.dat"));
        let fstype = sys::mount_of(&sys::mounts(), &args.dir)
            .map(|m| m.fstype.clone())
            .unwrap_or_default();
        if fstype != "ext4" {
            return Err(format!(
                "--dir {} is on `{fstype}`, not ext4; pass --dir on an ext4 filesystem or --fs xfs",
                args.dir.display()
            ));
        }
        eprintln!("{NAME}: ext4 file {} (removed at the end)", path.display());
        measure(
            &format!("ext4 ({})", args.dir.display()),
            &path,
            args,
            &root,
            "ext4_end_io_rsv_work",
            "ext4:ext4_ext_handle_unwritten_extents",
            &stop,
        )?;
    }
    if stop.load(Ordering::Relaxed) {
        return Err("interrupted".into());
    }
    if args.xfs {
        if sys::which("mkfs.xfs").is_none() {
            return Err(
                "mkfs.xfs is not on the PATH: apt-get install -y xfsprogs, or pass --fs ext4"
                    .into(),
            );
        }
        let img = args.image_dir.join(format!("reclaimlab-convert-{pid}.img"));
        eprintln!(
            "{NAME}: XFS image {} on a loop device, mounted on {} (all removed at the end)",
            img.display(),
            img.with_extension("mnt").display()
        );
        let x = XfsImage::create(img, (args.file_mib + 512) * MIB)?;
        measure(
            "XFS (loop device on a fresh image)",
            &x.mnt.join("convert-cost.dat"),
            args,
            &root,
            "xfs_end_io",
            "xfs:xfs_unwritten_convert",
            &stop,
        )?;
        drop(x);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_host::bench::cli::{assert_refused, parsed};

    #[test]
    fn filesystem_options_and_their_errors() {
        let a = parsed(parse_args, &[]);
        assert_eq!(
            (a.file_mib, a.blocks, a.ext4, a.xfs),
            (1024, 512, true, true)
        );
        let a = parsed(
            parse_args,
            &["--fs", "xfs", "--blocks", "8", "--file-mib", "16"],
        );
        assert_eq!((a.ext4, a.xfs, a.blocks, a.file_mib), (false, true, 8, 16));
        assert_refused(parse_args, &["--blocks", "x"], "whole number");
        assert_refused(parse_args, &["--blocks", "2000"], "1024 MiB");
        assert_refused(parse_args, &["--fs", "btrfs"], "ext4, xfs");
        assert_refused(parse_args, &["--dir"], "needs a value");
        assert_refused(parse_args, &["--rounds", "0"], "1..=100");
    }

    #[test]
    fn blocks_are_distinct_deterministic_and_in_range() {
        let a = pick_blocks(1024, 512, 1);
        assert_eq!(a, pick_blocks(1024, 512, 1));
        assert_ne!(a, pick_blocks(1024, 512, 2));
        let mut b = a.clone();
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), 512);
        assert!(b.iter().all(|&x| x < 1024));
        // Random order, not ascending.
        assert_ne!(a, b);
    }

    #[test]
    fn runs_of_adjacent_blocks() {
        assert_eq!(contiguous_runs(&[]), 0);
        assert_eq!(contiguous_runs(&[5]), 1);
        assert_eq!(contiguous_runs(&[7, 5, 6, 9, 1]), 3);
        assert_eq!(contiguous_runs(&[3, 1]), 2);
    }

    #[test]
    fn nearest_rank_quantiles() {
        assert_eq!(quantiles(&[]), None);
        let v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(quantiles(&v), Some((5.0, 9.0, 10.0)));
        assert_eq!(quantiles(&[3.0]), Some((3.0, 3.0, 3.0)));
    }

    #[test]
    fn trace_lines_parse() {
        let l = parse_line(
            " kworker/u8:2-ext4-rsv-c-123   [001] d..1.  4711.000123: workqueue_execute_start: work struct 00000000deadbeef: function ext4_end_io_rsv_work",
        )
        .unwrap();
        assert_eq!((l.pid, l.cpu, l.ts_ns), (123, 1, 4_711_000_123_000));
        assert_eq!(
            classify(&l),
            Some(Ev::WorkStart(
                "00000000deadbeef".into(),
                "ext4_end_io_rsv_work".into()
            ))
        );
        // No irq-info column, a comm with a space and a bracket.
        let l = parse_line("my [x] task-9 [000] 1.5: sched_switch: prev_comm=a prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=kworker/0:1 next_pid=44 next_prio=120").unwrap();
        assert_eq!((l.pid, l.ts_ns), (9, 1_500_000_000));
        assert_eq!(
            classify(&l),
            Some(Ev::Switch {
                prev: 9,
                next: 44,
                preempted: false
            })
        );
        let l = parse_line("kworker/1:3-77 [001] ..... 10.000002: xfs_unwritten_convert: dev 7:0 ino 0x83 isize 0x40000000 disize 0x40000000 pos 0x100000 bytecount 0x200000").unwrap();
        assert_eq!(classify(&l), Some(Ev::Convert(0x83, 0x200000)));
        let conv = "kworker/u8:0-5 [000] ..... 1.000000: ext4_ext_handle_unwritten_extents: dev 254,0 ino 12 m_lblk 256 m_pblk 9000 m_len 256 flags CREATE|UNWRIT|CONVERT|METADATA_NOFAIL allocated 256 newblock 9000";
        assert_eq!(
            classify(&parse_line(conv).unwrap()),
            Some(Ev::Convert(12, 1 << 20))
        );
        let split = conv.replace(
            "CONVERT|METADATA_NOFAIL",
            "PRE_IO|CONVERT|METADATA_NOFAIL|IO_SUBMIT",
        );
        assert_eq!(classify(&parse_line(&split).unwrap()), Some(Ev::Split(12)));
        assert_eq!(parse_line("garbage"), None);
        assert_eq!(parse_ts_ns("1.x"), None);
    }

    #[test]
    fn work_items_pair_attribute_and_subtract_off_cpu_time() {
        let t = "\
w-10 [000] ..... 1.000000: workqueue_execute_start: work struct 00a: function ext4_end_io_rsv_work
w-10 [000] ..... 1.000010: ext4_ext_handle_unwritten_extents: dev 1,1 ino 12 m_lblk 0 m_pblk 1 m_len 256 flags CREATE|UNWRIT|CONVERT allocated 1 newblock 1
w-10 [000] ..... 1.000020: sched_switch: prev_comm=w prev_pid=10 prev_prio=120 prev_state=D ==> next_comm=x next_pid=3 next_prio=120
x-3 [000] ..... 1.000050: sched_switch: prev_comm=x prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=w next_pid=10 next_prio=120
w-10 [000] ..... 1.000060: ext4_ext_handle_unwritten_extents: dev 1,1 ino 12 m_lblk 512 m_pblk 1 m_len 256 flags CREATE|UNWRIT|CONVERT allocated 1 newblock 1
w-10 [000] ..... 1.000070: sched_switch: prev_comm=w prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=3 next_prio=120
x-3 [000] ..... 1.000080: sched_switch: prev_comm=x prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=w next_pid=10 next_prio=120
w-10 [000] ..... 1.000100: workqueue_execute_end: work struct 00a: function ext4_end_io_rsv_work
w-11 [001] ..... 1.000200: workqueue_execute_start: work struct 00b: function ext4_end_io_rsv_work
w-11 [001] ..... 1.000210: ext4_ext_handle_unwritten_extents: dev 1,1 ino 99 m_lblk 0 m_pblk 1 m_len 1 flags CREATE|UNWRIT|CONVERT allocated 1 newblock 1
w-11 [001] ..... 1.000300: workqueue_execute_end: work struct 00b: function ext4_end_io_rsv_work
w-10 [000] ..... 1.000400: workqueue_execute_start: work struct 00a: function ext4_end_io_rsv_work
w-10 [000] ..... 1.000405: workqueue_execute_end: work struct 00a: function ext4_end_io_rsv_work
f-7 [001] ..... 1.000500: ext4_ext_handle_unwritten_extents: dev 1,1 ino 12 m_lblk 0 m_pblk 1 m_len 1 flags CREATE|UNWRIT|PRE_IO|CONVERT allocated 1 newblock 1
";
        let pt = analyse(t, 12);
        assert_eq!(pt.ours.len(), 2, "{pt:?}");
        assert_eq!(pt.others, 1);
        assert_eq!(pt.splits, 1);
        assert_eq!(pt.unparsed, 0);
        let w = &pt.ours[0];
        assert_eq!(
            (
                w.wall_ns,
                w.oncpu_ns,
                w.preempted_ns,
                w.conversions,
                w.bytes
            ),
            (100_000, 60_000, 10_000, 2, 2 << 20)
        );
        // The second run of the same work struct had nothing to convert: still the file's.
        assert_eq!((pt.ours[1].wall_ns, pt.ours[1].conversions), (5_000, 0));
    }

    #[test]
    fn kernel_threads_and_their_run_time() {
        let k = "44 (kworker/u8:2-events) I 2 0 0 0 -1 69238880 0 0 0 0 3 17 0 0 20 0 1 0 100 0 0";
        assert!(is_kthread(k, 44));
        assert!(is_kthread("2 (kthreadd) S 0 0 0", 2));
        let u = "900 (my (odd) 2 prog) S 1 900 900 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 100 0 0";
        assert!(!is_kthread(u, 900));
        assert_eq!(
            schedstat_run_ns("15258996 32063219 497\n"),
            Some(15_258_996)
        );
        assert_eq!(schedstat_run_ns(""), None);
        let k = |n: &str, t: u64| (n.to_string(), t);
        let a = HashMap::from([(1, k("kworker", 100)), (2, k("jbd2", 50))]);
        let b = HashMap::from([
            (1, k("kworker", 160)),
            (2, k("jbd2", 52)),
            (3, k("kworker", 7)),
        ]);
        assert_eq!(
            kthread_delta_ns(&a, &b),
            vec![("kworker".to_string(), 67), ("jbd2".to_string(), 2)]
        );
        assert_eq!(comm_group("kworker/u8:2"), "kworker");
        assert_eq!(comm_group("jbd2/vda-8"), "jbd2");
        assert_eq!(comm_group("loop0"), "loop");
        assert_eq!(comm_group("9p"), "9p");
        assert_eq!(comm_group("42"), "42");
    }
}
