//! Measures, on this host's real kernel, how long `lruvec->lru_lock` is
//! held per page moved: the simulator's `lru_lock.page_ns`
//! (crates/kernel/src/vmscan/lru_lock.rs), which is off by default because
//! it had not been measured.
//!
//! **What the kernel does under the lock** (read in 6.1, `e451e259ee44`
//! `mm/vmscan.c` and `mm/swap.c`, and mainline 6.17/6.18, which the host's
//! 6.18 matches: its `/proc/kallsyms` has `lru_note_cost_unlock_irq`):
//!
//! - `shrink_inactive_list`: `lru_add_drain()` first (this CPU's pending LRU
//!   additions, up to a folio batch of 31, moved onto the lists under the
//!   same lock by `folio_batch_move_lru`); then `spin_lock_irq(lru_lock)`
//!   around `isolate_lru_folios`, which walks up to `nr_to_scan` (32) folios
//!   from the list's tail and, per folio, checks the zone, the LRU flag and
//!   `may_unmap`, takes a reference (`folio_try_get`), clears the LRU flag
//!   and `list_move`s it to the private list (and fires
//!   `mm_vmscan_lru_isolate`, inside the lock), then updates the LRU sizes
//!   and the scan counters and unlocks. `shrink_folio_list` runs without
//!   the lock (a clean page's `__remove_mapping` takes the mapping's
//!   `i_pages` lock instead). The lock is taken again for
//!   `move_folios_to_lru`, per surviving folio `folio_set_lru`,
//!   `folio_put_testzero` and `lruvec_add_folio` (6.18 batches folios whose
//!   last reference it dropped and frees them with the lock dropped, every
//!   31; 6.1 drops it only for large ones), and the steal counters.
//!   6.1 then unlocks and `lru_note_cost` takes the lock once more for this
//!   lruvec and again for each ancestor's; 6.18 (Hugh Dickins' "mm:
//!   lru_note_cost_unlock_irq()", 6.17) keeps the lock into
//!   `lru_note_cost_unlock_irq`, which just unlocks when the cost is zero
//!   (no pageout, nothing rotated: every page reclaimed).
//! - `shrink_active_list`: the same isolation under one acquisition,
//!   `folio_referenced` per folio without the lock, then one acquisition for
//!   both `move_folios_to_lru` calls (and, in 6.18, the cost; in 6.1 it
//!   has no `lru_note_cost` call).
//! - Besides reclaim, the readers' own page-cache insertions take the lock:
//!   `folio_add_lru` queues each new folio in a per-CPU batch of 31 and
//!   `folio_batch_move_lru` adds the batch under one acquisition.
//!
//! So per clean page reclaimed, the lock is held for one isolation step
//! (a few list and flag operations on the folio's cache lines) and, on the
//! reader's side, one LRU addition; the put-back moves almost nothing.
//!
//! **Method.** A memory cgroup (v2 or v1; 256 MiB by default) with this
//! process in it, and one sparse file per reader (512 MiB each, 4x the
//! limit in all) in `--dir` (default `/var/tmp`): reading a hole makes
//! clean, unmapped, zero-filled page cache with no I/O, so the readers do
//! nothing but allocate, insert, copy and reclaim (limit reclaim of the
//! same lruvec), the case where the lock's share is largest.
//! `POSIX_FADV_RANDOM` makes the readahead allocate order-0 folios (6.18's
//! ext4 would otherwise build large folios, docs/memcg.md), as the
//! simulator's pages are; `--large-folios` leaves the readahead alone.
//! Each reader is a thread pinned to its own CPU reading its file in 128
//! KiB `pread`s, round and round. After a warm-up (the cgroup fills) a
//! private tracefs instance records, for the readers' thread ids only,
//! `lock:contention_begin`/`_end` and `vmscan:mm_vmscan_lru_isolate`, with
//! the `x86-tsc` clock (the text output of the ns clocks has 1 µs
//! resolution; the TSC rate is measured against CLOCK_MONOTONIC). Runs:
//! `1` (one reader, no contention: the CPU reference), `2` (two readers)
//! and `2s` (two, with the waiters' stacks, below).
//!
//! **Which lock is `lru_lock`.** The tracepoints give the lock's address
//! (hashed by `%p`, stable within a boot), not its name. Nothing in
//! `isolate_lru_folios` takes another spinlock, so when a reader's
//! `contention_end` on address A is followed by that reader's
//! `mm_vmscan_lru_isolate` with no lock event between them (within 50 µs),
//! A was held across the isolation: A is the lruvec's `lru_lock`. The
//! address with most such cases is taken; the table of the most contended
//! addresses shows the others (the files' `i_pages` locks, the zone lock).
//!
//! **From waits to holds.** With PV spinlocks (this KVM guest: "PV
//! spinlocks enabled") every contended acquisition goes through the
//! queued slow path, where 6.x fires `contention_begin` on entry and
//! `contention_end` once the lock is taken (`queued_spin_lock_slowpath`;
//! on bare metal the first waiter's pending-bit spin is not traced). With
//! two contenders a waiter arrives while the other holds the lock and waits
//! for the rest of that hold: if it arrives at a uniformly random point of
//! a hold of length H, the wait is uniform on [0, H]. Hence the
//! estimators, each with its assumption:
//! - (a) hold ≈ 2 x mean wait: holds of one length. With holds of unequal
//!   length a waiter lands in long ones more often, so this is the
//!   length-weighted mean hold, above the plain mean.
//! - (b) hold ≈ p99 wait (≈ the longest ordinary hold; the max is also
//!   shown but is where a preempted vCPU lands).
//! - (c) direct: from a reader's contended acquisition (`contention_end`)
//!   to its `mm_vmscan_lru_isolate`, both inside the same hold: the
//!   isolation of one batch, plus the end of the `contention_end` event.
//!   An upper bound when the acquisition was another one, such as
//!   `lru_add_drain`'s, released and retaken just before isolating; so
//!   the run `2s` records each waiter's kernel stack (a `stacktrace`
//!   trigger on `contention_begin`: unwound while waiting, not while
//!   holding; `sym-offset` on, since `shrink_inactive_list` is inlined and
//!   its two acquisitions differ only in offset) and keeps the isolation's
//!   own site: the one whose waits are all followed by an isolation,
//!   quickest per page. A line fit against the batch's pages splits a
//!   per-batch part from the per-page part.
//! - (u) utilisation: an acquisition finds the lock held with probability
//!   U, the other reader's share of time holding it; with k acquisitions
//!   per isolation batch (2 in 6.18: isolate, put back; plus a drain and
//!   about one batch of LRU additions per 32 pages read, so k ≈ 3–4), U ≈
//!   waits / (k x batches), and the lock is held 2U of the wall time by the
//!   two readers together: per page scanned 2U x wall / pages.
//!
//! Per page for (a)–(c): the hold per isolation batch / pages per batch.
//! Cross-check: the readers' system CPU per page scanned, two readers
//! against one; the difference should be about the time spent waiting per
//! page (sum of waits / pages) plus what contention costs in cache misses.
//!
//! **Guarding against the VM.** The host is a nested VM with 2 vCPUs: a
//! vCPU preempted by the hypervisor while its thread holds the lock makes
//! the other wait the whole preemption (and PV waiters halt after a spin
//! threshold). Medians and p90/p99 are robust to a few such waits; the max
//! is shown apart, and so is the steal time and the other tasks' CPU in
//! the window (`/proc/stat`). Tracing adds to the holds: one
//! `mm_vmscan_lru_isolate` event per batch is written inside the lock, and
//! a contended acquisition writes `contention_end` inside it (the minimum
//! wait, about one event's cost, is shown).
//!
//! The cgroup, the files and the tracefs instance are removed at the end,
//! on error and on Ctrl-C (a second Ctrl-C exits at once and leaves them:
//! their paths are printed first).
//!
//! Needs root, tracefs with the `lock` and `vmscan` events, and a memory
//! cgroup hierarchy.
//!
//! Run: `cargo run --release -p reclaimlab-host --example lru_lock_hold -- [--dir DIR]
//!      [--limit-mib M] [--file-mib M] [--secs S] [--warm-s S] [--runs 1,2,2s]
//!      [--large-folios] [--buffer-kb K] [--keep-trace DIR]`
//! Results: docs/bench/cpu-costs.md, "lru_lock hold time per page".

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reclaimlab_host::bench::cli::{need_disk_dir, need_root, run_main, Flags};
use reclaimlab_host::bench::{
    allowed_cpus, clk_tck, drop_cache, parse_proc_stat_cpu, sleep_or_stop, thread_times, Readers,
    TempFile,
};
use reclaimlab_host::cpu_probe::ProbeCgroup;
use reclaimlab_host::{runner, sys, tracefs};

const MIB: u64 = 1 << 20;
const NAME: &str = "lru_lock_hold";
/// How soon after a contended acquisition an isolation event must follow
/// to count as inside the same hold, ns.
const SAME_HOLD_NS: f64 = 50_000.0;
/// Isolation batches in limit reclaim: `SWAP_CLUSTER_MAX`.
const BATCH: f64 = 32.0;

// ---------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, PartialEq)]
struct Args {
    dir: PathBuf,
    limit_mib: u64,
    file_mib: u64,
    secs: f64,
    warm_s: f64,
    /// Runs: reader count, and whether the waiters' stacks are recorded.
    runs: Vec<(usize, bool)>,
    large_folios: bool,
    buffer_kb: u32,
    keep_trace: Option<PathBuf>,
}

const USAGE: &str = "usage: lru_lock_hold [--dir DIR] [--limit-mib M] [--file-mib M] [--secs S] [--warm-s S] [--runs 1,2,2s] [--large-folios] [--buffer-kb K] [--keep-trace DIR]";

/// Parses the command line (without the program name).
fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("/var/tmp"),
        limit_mib: 256,
        file_mib: 512,
        secs: 5.0,
        warm_s: 2.0,
        runs: vec![(1, false), (2, false), (2, true)],
        large_folios: false,
        buffer_kb: 65536,
        keep_trace: None,
    };
    let mut f = Flags::new(args, USAGE);
    while let Some(flag) = f.next_flag() {
        match flag {
            "--dir" => a.dir = PathBuf::from(f.value()?),
            "--limit-mib" => a.limit_mib = f.num("the cgroup limit in MiB")?,
            "--file-mib" => a.file_mib = f.num("each reader's file size in MiB")?,
            "--secs" => a.secs = f.secs()?,
            "--warm-s" => a.warm_s = f.secs()?,
            "--buffer-kb" => a.buffer_kb = f.num("the trace buffer per CPU in KiB")? as u32,
            "--runs" => {
                let v = f.value()?;
                a.runs = v
                    .split(',')
                    .map(|r| match r.trim() {
                        "1" => Ok((1, false)),
                        "2" => Ok((2, false)),
                        "2s" => Ok((2, true)),
                        other => Err(format!(
                            "`--runs {v}`: `{other}` is not a run; accepted: 1, 2 (readers) and 2s (two readers, waiters' stacks recorded), comma-separated (e.g. 1,2,2s)"
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--large-folios" => a.large_folios = true,
            "--keep-trace" => a.keep_trace = Some(PathBuf::from(f.value()?)),
            _ => return Err(f.unknown()),
        }
    }
    if a.limit_mib < 16 || a.limit_mib > 64 * 1024 {
        return Err(format!("`--limit-mib {}`: 16..=65536", a.limit_mib));
    }
    if a.file_mib < a.limit_mib || a.file_mib > 64 * 1024 {
        return Err(format!(
            "`--file-mib {}`: each file must be at least the limit ({} MiB) and at most 65536 MiB, or nothing is reclaimed",
            a.file_mib, a.limit_mib
        ));
    }
    if !(1024..=1 << 20).contains(&a.buffer_kb) {
        return Err(format!("`--buffer-kb {}`: 1024..=1048576", a.buffer_kb));
    }
    Ok(a)
}

// ---------------------------------------------------------------------------
// Pure helpers: trace parsing and statistics

/// One line of the trace, split into its header and the event's fields.
#[derive(Debug, Clone, PartialEq)]
struct TraceLine<'a> {
    pid: u32,
    /// The timestamp in the clock's units: ns for `secs.usecs` clocks,
    /// cycles for `x86-tsc` (printed as a bare count).
    ts: u64,
    event: &'a str,
    fields: &'a str,
}

/// A timestamp: `secs.fraction` in ns, or a bare counter as it is.
fn parse_ts(t: &str) -> Option<u64> {
    match t.split_once('.') {
        Some((s, f)) => {
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let frac: u64 = f.parse().ok()?;
            Some(s.parse::<u64>().ok()? * 1_000_000_000 + frac * 10u64.pow(9 - f.len() as u32))
        }
        None => t.parse().ok(),
    }
}

/// Parses `  comm-PID  [CPU] flags  TS: event: fields`; the comm may hold
/// dashes, spaces and brackets, so the header is found from `[CPU]` on.
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
    let pid = line[..open].trim_end().rsplit_once('-')?.1.parse().ok()?;
    let rest = &line[close + 1..];
    let mut pos = 0;
    let mut ts = None;
    for tok in rest.split_whitespace() {
        let at = pos + rest[pos..].find(tok)?;
        pos = at + tok.len();
        if let Some(t) = tok.strip_suffix(':') {
            ts = Some(parse_ts(t)?);
            break;
        }
    }
    let after = rest[pos..].trim_start();
    // `<stack trace>` has no fields.
    let (event, fields) = after.split_once(':').unwrap_or((after, ""));
    Some(TraceLine {
        pid,
        ts: ts?,
        event: event.trim(),
        fields: fields.trim(),
    })
}

/// The value of `key=` in a `key=value` list.
fn field_eq<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
}

/// What an event line means here.
#[derive(Debug, Clone, PartialEq)]
enum Ev<'a> {
    /// `contention_begin`: lock address (as printed), flags (`SPIN`, `MUTEX`, …).
    Begin(&'a str, &'a str),
    /// `contention_end`: lock address.
    End(&'a str),
    /// `mm_vmscan_lru_isolate`.
    Isolate(Batch),
    /// A stack trace (its frames follow on lines of their own).
    Stack,
}

/// One `isolate_lru_folios` call.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Batch {
    requested: u64,
    scanned: u64,
    taken: u64,
    /// From an active list (`shrink_active_list`).
    active: bool,
}

fn classify<'a>(l: &TraceLine<'a>) -> Option<Ev<'a>> {
    match l.event {
        "contention_begin" => {
            let addr = l.fields.split_whitespace().next()?;
            let flags = l
                .fields
                .split_once("flags=")
                .map(|(_, f)| f.trim_end_matches(')'))
                .unwrap_or("");
            Some(Ev::Begin(addr, flags))
        }
        "contention_end" => Some(Ev::End(l.fields.split_whitespace().next()?)),
        "<stack trace>" => Some(Ev::Stack),
        "mm_vmscan_lru_isolate" => {
            let n = |k| field_eq(l.fields, k)?.parse::<u64>().ok();
            Some(Ev::Isolate(Batch {
                requested: n("nr_requested")?,
                scanned: n("nr_scanned")?,
                taken: n("nr_taken")?,
                active: field_eq(l.fields, "lru")?.starts_with("active"),
            }))
        }
        _ => None,
    }
}

/// Everything the trace says, in the clock's units.
#[derive(Debug, Default)]
struct Analysis {
    /// Lock addresses as printed, and the flags of their first wait.
    addrs: Vec<(String, String)>,
    /// Waiters' call sites (from their stack traces, see [`site_of`]).
    sites: Vec<String>,
    /// Waits: (pid, address index, ticks, site index).
    waits: Vec<(u32, usize, u64, Option<usize>)>,
    /// Isolation batches: (pid, batch).
    batches: Vec<(u32, Batch)>,
    /// Per address: contended acquisitions followed by an isolation inside the same hold.
    credits: Vec<u64>,
    /// Contended acquisition → isolation event inside one hold: (address,
    /// ticks, pages scanned, site index).
    direct: Vec<(usize, u64, u64, Option<usize>)>,
    unparsed: u64,
    unmatched_ends: u64,
    /// First and last timestamp.
    span: (u64, u64),
}

/// A waiter's call site from its stack (innermost first): the first frame
/// that is not lock or tracing machinery, with its offset, and its caller,
/// e.g. `shrink_lruvec+0x2b1/0x8e0 < shrink_node_memcgs`.
fn site_of(frames: &[String]) -> String {
    let machinery = |f: &str| {
        let name = f.split('+').next().unwrap_or(f);
        [
            "spin_lock",
            "slowpath",
            "trace",
            "stack",
            "_raw_",
            "queued_",
            "lock_contended",
        ]
        .iter()
        .any(|m| name.contains(m))
    };
    let mut it = frames.iter().filter(|f| !machinery(f));
    match (it.next(), it.next()) {
        (Some(a), Some(b)) => format!("{a} < {}", b.split('+').next().unwrap_or(b)),
        (Some(a), None) => a.clone(),
        _ => "?".into(),
    }
}

/// Reads a trace (lines in time order, as the `trace` file merges the CPUs).
/// `same_hold` is [`SAME_HOLD_NS`] in the clock's units.
fn analyse(text: &str, same_hold: u64) -> Analysis {
    let mut a = Analysis::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut site_index: HashMap<String, usize> = HashMap::new();
    // Per pid: open waits (address, start, site), and the last contended acquisition.
    type Open = (usize, u64, Option<usize>);
    let mut open: HashMap<u32, Vec<Open>> = HashMap::new();
    let mut last_end: HashMap<u32, (usize, u64, Option<usize>)> = HashMap::new();
    // A stack trace being read: its pid and frames.
    let mut stack: Option<(u32, Vec<String>)> = None;
    let mut finish_stack = |stack: &mut Option<(u32, Vec<String>)>,
                            a: &mut Analysis,
                            open: &mut HashMap<u32, Vec<Open>>| {
        if let Some((pid, frames)) = stack.take() {
            let name = site_of(&frames);
            let n = site_index.len();
            let si = *site_index.entry(name.clone()).or_insert(n);
            if si == a.sites.len() {
                a.sites.push(name);
            }
            // The stack belongs to the wait its contention_begin just opened.
            if let Some(w) = open.get_mut(&pid).and_then(|v| v.last_mut()) {
                if w.2.is_none() {
                    w.2 = Some(si);
                }
            }
        }
    };
    for line in text.lines() {
        if let Some(f) = line.trim_start().strip_prefix("=>") {
            if let Some((_, frames)) = stack.as_mut() {
                frames.push(f.trim().to_string());
            }
            continue;
        }
        finish_stack(&mut stack, &mut a, &mut open);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some(l) = parse_line(line) else {
            a.unparsed += 1;
            continue;
        };
        let Some(ev) = classify(&l) else {
            a.unparsed += 1;
            continue;
        };
        if a.span.0 == 0 {
            a.span.0 = l.ts;
        }
        a.span.1 = l.ts;
        let mut intern = |addr: &str, flags: &str| -> usize {
            *index.entry(addr.to_string()).or_insert_with(|| {
                a.addrs.push((addr.to_string(), flags.to_string()));
                a.credits.push(0);
                a.addrs.len() - 1
            })
        };
        match ev {
            Ev::Begin(addr, flags) => {
                let i = intern(addr, flags);
                open.entry(l.pid).or_default().push((i, l.ts, None));
                last_end.remove(&l.pid);
            }
            Ev::End(addr) => {
                let i = intern(addr, "");
                let waiting = open.entry(l.pid).or_default();
                match waiting.iter().rposition(|w| w.0 == i) {
                    Some(k) => {
                        let (_, t0, site) = waiting.remove(k);
                        a.waits.push((l.pid, i, l.ts.saturating_sub(t0), site));
                        last_end.insert(l.pid, (i, l.ts, site));
                    }
                    None => {
                        a.unmatched_ends += 1;
                        last_end.remove(&l.pid);
                    }
                }
            }
            Ev::Isolate(b) => {
                a.batches.push((l.pid, b));
                if let Some((i, t, site)) = last_end.remove(&l.pid) {
                    let d = l.ts.saturating_sub(t);
                    if d <= same_hold {
                        a.credits[i] += 1;
                        a.direct.push((i, d, b.scanned, site));
                    }
                }
            }
            Ev::Stack => stack = Some((l.pid, Vec::new())),
        }
    }
    finish_stack(&mut stack, &mut a, &mut open);
    a
}

impl Analysis {
    /// The lruvec's lock: the address most often held across an isolation.
    fn lru_lock(&self) -> Option<usize> {
        (0..self.addrs.len())
            .filter(|&i| self.credits[i] > 0)
            .max_by_key(|&i| (self.credits[i], std::cmp::Reverse(i)))
    }

    /// Waits on address `i`, ticks.
    fn waits_on(&self, i: usize) -> Vec<f64> {
        self.waits
            .iter()
            .filter(|w| w.1 == i)
            .map(|w| w.2 as f64)
            .collect()
    }

    /// The isolation's own acquisition site on lock `i`: the last
    /// acquisition before `isolate_lru_folios`, so nearly every wait there
    /// is followed by an isolation in the same hold (at least 90 % of at
    /// least 20 waits), and of such sites the one with the shortest median
    /// time to it per page scanned (`prepare_scan_control`'s site, also
    /// followed by isolations, does `get_scan_count` and a drain first).
    fn isolate_site(&self, i: usize) -> Option<usize> {
        (0..self.sites.len())
            .filter_map(|s| {
                let waits = self
                    .waits
                    .iter()
                    .filter(|w| w.1 == i && w.3 == Some(s))
                    .count();
                let per_page: Vec<f64> = self
                    .direct
                    .iter()
                    .filter(|d| d.0 == i && d.3 == Some(s) && d.2 > 0)
                    .map(|d| d.1 as f64 / d.2 as f64)
                    .collect();
                (per_page.len() >= 20 && per_page.len() * 10 >= waits * 9)
                    .then(|| (s, summary(&per_page).map_or(f64::INFINITY, |x| x.p50)))
            })
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .map(|x| x.0)
    }
}

/// Count, mean, quantiles (nearest rank) and extremes of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Summary {
    n: usize,
    mean: f64,
    min: f64,
    p10: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

fn summary(v: &[f64]) -> Option<Summary> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = |p: f64| s[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    Some(Summary {
        n: s.len(),
        mean: s.iter().sum::<f64>() / s.len() as f64,
        min: s[0],
        p10: rank(0.1),
        p50: rank(0.5),
        p90: rank(0.9),
        p99: rank(0.99),
        max: s[s.len() - 1],
    })
}

/// Least-squares line `y = a + b x` through `(x, y)` points: (a, b);
/// `None` with fewer than two distinct x.
fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// Estimator (u): the lock's hold time per page scanned, ns, from the
/// share of acquisitions that found it held. `waits` contended
/// acquisitions out of `k` per isolation batch over `batches` batches by
/// two readers, `pages` scanned by both over `wall_ns`: each reader holds
/// the lock U = waits / (k x batches) of the time, the two 2U.
fn hold_per_page_from_utilisation(
    waits: u64,
    batches: u64,
    k: f64,
    wall_ns: f64,
    pages: u64,
) -> Option<f64> {
    if batches == 0 || pages == 0 || k <= 0.0 {
        return None;
    }
    let u = waits as f64 / (k * batches as f64);
    Some(2.0 * u * wall_ns / pages as f64)
}

// ---------------------------------------------------------------------------
// Host side: /proc readers

/// TSC cycles per ns, against CLOCK_MONOTONIC over 200 ms.
#[cfg(target_arch = "x86_64")]
fn tsc_per_ns() -> Option<f64> {
    // SAFETY: rdtsc has no preconditions on x86_64.
    let (c0, t0) = (unsafe { core::arch::x86_64::_rdtsc() }, sys::mono_ns());
    std::thread::sleep(Duration::from_millis(200));
    let (c1, t1) = (unsafe { core::arch::x86_64::_rdtsc() }, sys::mono_ns());
    (t1 > t0 && c1 > c0).then(|| (c1 - c0) as f64 / (t1 - t0) as f64)
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_per_ns() -> Option<f64> {
    None
}

// ---------------------------------------------------------------------------
// Guards

/// A private tracefs instance and the stacktrace trigger set in it, both
/// removed on drop.
struct Trace(tracefs::Instance, std::cell::RefCell<Option<PathBuf>>);

impl Drop for Trace {
    fn drop(&mut self) {
        if let Some(t) = self.1.borrow_mut().take() {
            let _ = sys::write(t, "!stacktrace");
        }
        if let Err(e) = self.0.remove() {
            eprintln!("{NAME}: {e}");
        }
    }
}

// ---------------------------------------------------------------------------
// One measurement

/// What one run measured.
struct Run {
    readers: usize,
    stacks: bool,
    wall_ns: f64,
    ticks_per_ns: f64,
    analysis: Analysis,
    /// Per reader: (tid, user s, system s, on-CPU s).
    cpu: Vec<(u32, f64, f64, f64)>,
    /// Busy CPU of everything else and steal, in CPUs (of the wall time).
    other_cpus: f64,
    steal_cpus: f64,
    bytes: u64,
    lost: u64,
    loadavg: String,
}

fn measure(
    args: &Args,
    root: &Path,
    files: &[PathBuf],
    stacks: bool,
    label: &str,
    tsc: Option<f64>,
    stop: &AtomicBool,
) -> Result<Run, String> {
    for f in files {
        drop_cache(f);
    }
    let cpus = allowed_cpus();
    if cpus.len() < files.len() {
        return Err(format!(
            "{} readers need {} CPUs; this process may run on {}",
            files.len(),
            files.len(),
            cpus.len()
        ));
    }
    let cg = ProbeCgroup::create((args.limit_mib * MIB) as usize).ok_or_else(|| {
        "cannot make a memory cgroup (needs root and a memory controller, v1 or v2)".to_string()
    })?;
    let readers = Readers::start(files, &cpus, !args.large_folios)?;
    sleep_or_stop(stop, args.warm_s)?;
    let events: Vec<String> = [
        "lock:contention_begin",
        "lock:contention_end",
        "vmscan:mm_vmscan_lru_isolate",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let name = format!("reclaimlab-lru-hold-{}", std::process::id());
    let trace = Trace(
        tracefs::Instance::create(root, &name, &events, args.buffer_kb)
            .map_err(|e| e.to_string())?,
        Default::default(),
    );
    let ticks_per_ns = match tsc {
        Some(r) if sys::write(trace.0.dir.join("trace_clock"), "x86-tsc").is_ok() => r,
        _ => 1.0,
    };
    let filter = readers
        .tids
        .iter()
        .map(|t| format!("common_pid == {t}"))
        .collect::<Vec<_>>()
        .join(" || ");
    for e in &events {
        sys::write(tracefs::event_dir(&trace.0.dir, e).join("filter"), &filter)
            .map_err(|e| e.to_string())?;
    }
    if stacks {
        // The waiter's kernel stack, written while it waits (not while
        // anyone holds the lock); with offsets, to tell apart the
        // acquisitions inlined into one function.
        sys::write(trace.0.dir.join("options/sym-offset"), "1").map_err(|e| e.to_string())?;
        let trigger = tracefs::event_dir(&trace.0.dir, "lock:contention_begin").join("trigger");
        trace.1.replace(Some(trigger.clone()));
        sys::write(&trigger, &format!("stacktrace if {filter}")).map_err(|e| e.to_string())?;
    }
    let times = |tids: &[u32]| tids.iter().map(|&t| thread_times(t)).collect::<Vec<_>>();
    let stat0 = parse_proc_stat_cpu(&fs::read_to_string("/proc/stat").unwrap_or_default());
    let (t0, b0, c0) = (
        sys::mono_ns(),
        readers.bytes.load(Ordering::Relaxed),
        times(&readers.tids),
    );
    trace.0.start().map_err(|e| e.to_string())?;
    let slept = sleep_or_stop(stop, args.secs);
    trace.0.stop().map_err(|e| e.to_string())?;
    let (t1, b1, c1) = (
        sys::mono_ns(),
        readers.bytes.load(Ordering::Relaxed),
        times(&readers.tids),
    );
    let stat1 = parse_proc_stat_cpu(&fs::read_to_string("/proc/stat").unwrap_or_default());
    let loadavg = fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    let tids = readers.tids.clone();
    readers.finish()?;
    slept?;
    for f in files {
        drop_cache(f);
    }
    // Out of the cgroup before reading the trace: its text is not the readers' memory.
    drop(cg);
    let lost = trace.0.lost_events();
    let text = fs::read_to_string(trace.0.dir.join("trace"))
        .map_err(|e| format!("cannot read the trace: {e}"))?;
    drop(trace);
    if let Some(dir) = &args.keep_trace {
        let p = dir.join(format!(
            "{NAME}-{}.txt",
            label.replace([' ', ',', '\''], "_")
        ));
        fs::write(&p, &text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        eprintln!("{NAME}: trace kept in {}", p.display());
    }
    let wall_ns = (t1 - t0) as f64;
    let tck = clk_tck();
    let cpu: Vec<_> = tids
        .iter()
        .zip(c0.iter().zip(&c1))
        .map(|(&tid, (a, b))| {
            (
                tid,
                (b.0 - a.0) as f64 / tck,
                (b.1 - a.1) as f64 / tck,
                (b.2 - a.2) as f64 / 1e9,
            )
        })
        .collect();
    let ours: f64 = cpu.iter().map(|c| c.3).sum();
    let (other_cpus, steal_cpus) = match (stat0, stat1) {
        (Some(a), Some(b)) => (
            (((b.0 - a.0) as f64 / tck) - ours).max(0.0) / (wall_ns / 1e9),
            ((b.1 - a.1) as f64 / tck) / (wall_ns / 1e9),
        ),
        _ => (f64::NAN, f64::NAN),
    };
    let same_hold = (SAME_HOLD_NS * ticks_per_ns) as u64;
    Ok(Run {
        readers: files.len(),
        stacks,
        wall_ns,
        ticks_per_ns,
        analysis: analyse(&text, same_hold),
        cpu,
        other_cpus,
        steal_cpus,
        bytes: b1 - b0,
        lost,
        loadavg,
    })
}

// ---------------------------------------------------------------------------
// Report

fn q(s: &Option<Summary>) -> String {
    match s {
        Some(s) => format!(
            "{} / {:.0} / {:.0} / {:.0} / {:.0} / {:.0} / {:.0}",
            s.n, s.mean, s.min, s.p50, s.p90, s.p99, s.max
        ),
        None => "—".into(),
    }
}

/// The numbers one run gives, for the final table.
struct Key {
    readers: usize,
    stacks: bool,
    sys_per_page: f64,
    pages_per_s: f64,
    waits_per_batch: f64,
    wait: Option<Summary>,
    direct: Option<Summary>,
    per_page_a: f64,
    per_page_b: f64,
    per_page_c: f64,
    /// (c) restricted to the isolation's own acquisition site (runs with stacks).
    per_page_site: f64,
    per_page_u: [f64; 3],
    wait_per_page: f64,
    other_cpus: f64,
    steal_cpus: f64,
}

fn report(label: &str, r: &Run) -> Key {
    let a = &r.analysis;
    let ns = 1.0 / r.ticks_per_ns;
    let inactive: Vec<&Batch> = a
        .batches
        .iter()
        .map(|b| &b.1)
        .filter(|b| !b.active)
        .collect();
    let active_n = a.batches.len() - inactive.len();
    let scanned: u64 = a.batches.iter().map(|b| b.1.scanned).sum();
    let scanned_inactive: u64 = inactive.iter().map(|b| b.scanned).sum();
    let taken: u64 = a.batches.iter().map(|b| b.1.taken).sum();
    let full = inactive.iter().filter(|b| b.scanned == b.requested).count();
    let per_batch = if a.batches.is_empty() {
        f64::NAN
    } else {
        scanned as f64 / a.batches.len() as f64
    };
    let sys_s: f64 = r.cpu.iter().map(|c| c.2).sum();
    let user_s: f64 = r.cpu.iter().map(|c| c.1).sum();
    let run_s: f64 = r.cpu.iter().map(|c| c.3).sum();
    let sys_per_page = sys_s * 1e9 / scanned.max(1) as f64;
    println!("\n### {label}\n");
    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| traced window; clock | {:.2} s; {} |",
        r.wall_ns / 1e9,
        if r.ticks_per_ns != 1.0 {
            format!("x86-tsc, {:.4} cycles/ns", r.ticks_per_ns)
        } else {
            "mono (1 µs resolution)".into()
        }
    );
    println!(
        "| read | {:.0} MiB/s |",
        r.bytes as f64 / MIB as f64 / (r.wall_ns / 1e9)
    );
    println!(
        "| isolation batches: inactive / active lists | {} / {} |",
        inactive.len(),
        active_n
    );
    println!(
        "| pages scanned (inactive {}), taken; per batch; inactive batches at nr_requested | {scanned}, {taken}; {per_batch:.1}; {:.1} % |",
        scanned_inactive,
        100.0 * full as f64 / inactive.len().max(1) as f64
    );
    println!(
        "| readers' CPU: user / system / on CPU (s) | {user_s:.2} / {sys_s:.2} / {run_s:.2} |"
    );
    println!("| **system CPU per page scanned** | **{sys_per_page:.0} ns** |");
    println!(
        "| other tasks' CPU / steal, in CPUs; load average | {:.2} / {:.3}; {} |",
        r.other_cpus, r.steal_cpus, r.loadavg
    );
    println!(
        "| trace lines not understood / unmatched ends / lost events | {} / {} / {} |",
        a.unparsed, a.unmatched_ends, r.lost
    );
    // The most contended addresses.
    let mut order: Vec<usize> = (0..a.addrs.len()).collect();
    let count = |i: usize| a.waits.iter().filter(|w| w.1 == i).count();
    let counts: Vec<usize> = order.iter().map(|&i| count(i)).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
    let lock = a.lru_lock();
    println!("\n| lock address (hashed) | flags | waits | followed by an isolation in the same hold | total wait (µs) |");
    println!("|---|---|---|---|---|");
    for &i in order.iter().take(5) {
        let total: f64 = a.waits_on(i).iter().sum::<f64>() * ns / 1000.0;
        println!(
            "| {}{} | {} | {} | {} | {:.0} |",
            a.addrs[i].0,
            if Some(i) == lock { " (lru_lock)" } else { "" },
            a.addrs[i].1,
            counts[i],
            a.credits[i],
            total
        );
    }
    let all_wait: f64 = a.waits.iter().map(|w| w.2 as f64).sum::<f64>() * ns;
    let Some(lock) = lock else {
        println!("\nNo contended acquisition was followed by an isolation: lru_lock not identified (too little contention).");
        return Key {
            readers: r.readers,
            stacks: r.stacks,
            sys_per_page,
            pages_per_s: scanned as f64 / (r.wall_ns / 1e9),
            waits_per_batch: 0.0,
            wait: None,
            direct: None,
            per_page_a: f64::NAN,
            per_page_b: f64::NAN,
            per_page_c: f64::NAN,
            per_page_site: f64::NAN,
            per_page_u: [f64::NAN; 3],
            wait_per_page: all_wait / scanned.max(1) as f64,
            other_cpus: r.other_cpus,
            steal_cpus: r.steal_cpus,
        };
    };
    let w: Vec<f64> = a.waits_on(lock).iter().map(|x| x * ns).collect();
    let ws = summary(&w);
    let lock_wait: f64 = w.iter().sum();
    let waits_per_batch = w.len() as f64 / a.batches.len().max(1) as f64;
    let direct: Vec<f64> = a
        .direct
        .iter()
        .filter(|d| d.0 == lock)
        .map(|d| d.1 as f64 * ns)
        .collect();
    let ds = summary(&direct);
    let direct_pp: Vec<f64> = a
        .direct
        .iter()
        .filter(|d| d.0 == lock && d.2 > 0)
        .map(|d| d.1 as f64 * ns / d.2 as f64)
        .collect();
    let dps = summary(&direct_pp);
    let pages_per_batch = if per_batch.is_finite() {
        per_batch
    } else {
        BATCH
    };
    let per_page_a = ws.map_or(f64::NAN, |s| 2.0 * s.mean / pages_per_batch);
    let per_page_b = ws.map_or(f64::NAN, |s| s.p99 / pages_per_batch);
    let per_page_c = dps.map_or(f64::NAN, |s| s.p50);
    let per_page_u = [2.0, 3.0, 4.0].map(|k| {
        hold_per_page_from_utilisation(
            w.len() as u64,
            a.batches.len() as u64,
            k,
            r.wall_ns,
            scanned,
        )
        .unwrap_or(f64::NAN)
    });
    println!("\n| lru_lock | value |");
    println!("|---|---|");
    println!(
        "| waits: n / mean / min / p50 / p90 / p99 / max (ns) | {} |",
        q(&ws)
    );
    println!("| waits per isolation batch | {waits_per_batch:.3} |");
    println!(
        "| time waiting per page scanned: lru_lock / all locks (ns) | {:.1} / {:.1} |",
        lock_wait / scanned.max(1) as f64,
        all_wait / scanned.max(1) as f64
    );
    println!(
        "| (c) contended acquisition → isolation event, per batch: n / mean / min / p50 / p90 / p99 / max (ns) | {} |",
        q(&ds)
    );
    println!(
        "| (c) the same per page scanned: p10 / p50 / p90 (ns) | {} |",
        dps.map_or("—".into(), |s| format!(
            "{:.1} / {:.1} / {:.1}",
            s.p10, s.p50, s.p90
        ))
    );
    println!(
        "| (a) 2 x mean wait, per acquisition; per page ({pages_per_batch:.1} pages a batch) | {:.0} ns; {per_page_a:.1} ns |",
        ws.map_or(f64::NAN, |s| 2.0 * s.mean)
    );
    println!(
        "| (b) p99 wait, per acquisition; per page | {:.0} ns; {per_page_b:.1} ns |",
        ws.map_or(f64::NAN, |s| s.p99)
    );
    println!(
        "| (u) utilisation, hold per page scanned, k = 2 / 3 / 4 acquisitions a batch | {:.1} / {:.1} / {:.1} ns |",
        per_page_u[0], per_page_u[1], per_page_u[2]
    );
    let mut per_page_site = f64::NAN;
    let mut iso_fit = None;
    if !a.sites.is_empty() {
        let iso = a.isolate_site(lock);
        println!("\n| waiter's site on lru_lock | waits | wait p50 / p90 (ns) | followed by an isolation in the same hold | acquisition → isolation p10 / p50 / p90 (ns) | the same per page scanned, p10 / p50 / p90 (ns) |");
        println!("|---|---|---|---|---|---|");
        let mut sites: Vec<(usize, usize)> = (0..a.sites.len())
            .map(|si| {
                (
                    si,
                    a.waits
                        .iter()
                        .filter(|w| w.1 == lock && w.3 == Some(si))
                        .count(),
                )
            })
            .filter(|x| x.1 > 0)
            .collect();
        sites.sort_by_key(|x| std::cmp::Reverse(x.1));
        let fmt3 = |s: Option<Summary>, d: usize| {
            s.map_or("—".into(), |s| {
                format!("{:.d$} / {:.d$} / {:.d$}", s.p10, s.p50, s.p90)
            })
        };
        for &(si, n) in sites.iter().take(8) {
            let w: Vec<f64> = a
                .waits
                .iter()
                .filter(|w| w.1 == lock && w.3 == Some(si))
                .map(|w| w.2 as f64 * ns)
                .collect();
            let d: Vec<&(usize, u64, u64, Option<usize>)> = a
                .direct
                .iter()
                .filter(|d| d.0 == lock && d.3 == Some(si))
                .collect();
            let dv: Vec<f64> = d.iter().map(|d| d.1 as f64 * ns).collect();
            let dp: Vec<f64> = d
                .iter()
                .filter(|d| d.2 > 0)
                .map(|d| d.1 as f64 * ns / d.2 as f64)
                .collect();
            let ws = summary(&w);
            if Some(si) == iso {
                per_page_site = summary(&dp).map_or(f64::NAN, |s| s.p50);
                // Below the p90, to keep preempted holds out of the fit.
                let cut = summary(&dv).map_or(f64::INFINITY, |s| s.p90);
                let pts: Vec<(f64, f64)> = d
                    .iter()
                    .filter(|d| (d.1 as f64 * ns) <= cut)
                    .map(|d| (d.2 as f64, d.1 as f64 * ns))
                    .collect();
                iso_fit = fit_line(&pts).map(|f| (f, pts.len()));
            }
            println!(
                "| `{}`{} | {n} | {} | {} | {} | {} |",
                a.sites[si],
                if Some(si) == iso {
                    " (isolation's own)"
                } else {
                    ""
                },
                ws.map_or("—".into(), |s| format!("{:.0} / {:.0}", s.p50, s.p90)),
                d.len(),
                fmt3(summary(&dv), 0),
                fmt3(summary(&dp), 1)
            );
        }
        if let Some(((c, b), n)) = iso_fit {
            let sizes: std::collections::BTreeSet<u64> = a
                .direct
                .iter()
                .filter(|d| d.0 == lock && d.3 == iso)
                .map(|d| d.2)
                .collect();
            println!(
                "\nIsolation's own acquisitions, acquisition → isolation event against pages scanned (least squares, {n} batches up to the p90, sizes {sizes:?}): {c:.0} ns + {b:.1} ns per page."
            );
        }
    }
    Key {
        readers: r.readers,
        stacks: r.stacks,
        sys_per_page,
        pages_per_s: scanned as f64 / (r.wall_ns / 1e9),
        waits_per_batch,
        wait: ws,
        direct: ds,
        per_page_a,
        per_page_b,
        per_page_c,
        per_page_site,
        per_page_u,
        wait_per_page: all_wait / scanned.max(1) as f64,
        other_cpus: r.other_cpus,
        steal_cpus: r.steal_cpus,
    }
}

fn summary_table(keys: &[Key]) {
    println!("\n### Summary\n");
    println!("| readers | pages scanned/s | system ns/page | lock waits/batch | wait mean / p50 / p90 / p99 / max (ns) | (c) isolation hold p50 (ns/batch) | per page: (a) / (b) / (c) / (c, isolation's site) / (u, k=3) ns | wait ns/page (all locks) | other CPUs / steal |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for k in keys {
        let w = k.wait.map_or("—".into(), |s| {
            format!(
                "{:.0} / {:.0} / {:.0} / {:.0} / {:.0}",
                s.mean, s.p50, s.p90, s.p99, s.max
            )
        });
        println!(
            "| {}{} | {:.0} | {:.0} | {:.3} | {w} | {} | {:.1} / {:.1} / {:.1} / {:.1} / {:.1} | {:.1} | {:.2} / {:.3} |",
            k.readers,
            if k.stacks { " (stacks)" } else { "" },
            k.pages_per_s,
            k.sys_per_page,
            k.waits_per_batch,
            k.direct.map_or("—".into(), |s| format!("{:.0}", s.p50)),
            k.per_page_a,
            k.per_page_b,
            k.per_page_c,
            k.per_page_site,
            k.per_page_u[1],
            k.wait_per_page,
            k.other_cpus,
            k.steal_cpus
        );
    }
    let one = keys.iter().find(|k| k.readers == 1);
    let two = keys.iter().find(|k| k.readers == 2 && !k.stacks);
    if let (Some(a), Some(b)) = (one, two) {
        println!(
            "\nCross-check: system CPU per page scanned, two readers − one: {:.0} ns; traced waiting per page (two readers, all locks): {:.1} ns.",
            b.sys_per_page - a.sys_per_page,
            b.wait_per_page
        );
    }
}

// ---------------------------------------------------------------------------

fn main() {
    run_main(NAME, parse_args, preflight, main_root);
}

/// Refuses early, naming what is missing and how to get it.
fn preflight(args: &Args) -> Result<(), String> {
    need_root("tracefs, a memory cgroup")?;
    need_disk_dir(&args.dir)
}

fn main_root(args: &Args) -> Result<(), String> {
    let stop = runner::install_signal_flag().map_err(|e| e.to_string())?;
    let (root, _mounted) = tracefs::find_or_mount().map_err(|e| e.to_string())?;
    for ev in [
        "lock:contention_begin",
        "lock:contention_end",
        "vmscan:mm_vmscan_lru_isolate",
    ] {
        if !tracefs::has_event(&root, ev) {
            return Err(format!(
                "this kernel has no {ev} tracepoint (lock events since 5.19; needs CONFIG_TRACEPOINTS)"
            ));
        }
    }
    let pid = std::process::id();
    let readers = args.runs.iter().map(|r| r.0).max().unwrap_or(1);
    let paths: Vec<PathBuf> = (0..readers)
        .map(|i| args.dir.join(format!(".reclaimlab-lru-hold-{pid}-{i}.dat")))
        .collect();
    eprintln!(
        "{NAME}: files {} (sparse), a memory cgroup reclaimlab-probe-{pid}, tracefs instance reclaimlab-lru-hold-{pid} (all removed at the end)",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut files = Vec::new();
    for p in &paths {
        files.push(TempFile::sparse(p, args.file_mib * MIB)?);
    }
    let tsc = tsc_per_ns();
    println!(
        "kernel {}, {} CPUs; memory cgroup of {} MiB; one sparse {} MiB file per reader in {}; {} folios; {} s traced after {} s warm-up",
        sys::kernel_release(),
        sys::cpus(),
        args.limit_mib,
        args.file_mib,
        args.dir.display(),
        if args.large_folios { "large (readahead as is)" } else { "order-0 (POSIX_FADV_RANDOM)" },
        args.secs,
        args.warm_s
    );
    let mut keys = Vec::new();
    for &(n, stacks) in &args.runs {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let label = format!(
            "{n} reader{}{}",
            if n == 1 { "" } else { "s" },
            if stacks {
                ", waiters' stacks recorded"
            } else {
                ""
            }
        );
        let run = measure(args, &root, &paths[..n], stacks, &label, tsc, &stop)?;
        keys.push(report(&label, &run));
    }
    summary_table(&keys);
    drop(files);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_host::bench::cli::{assert_refused, parsed};

    #[test]
    fn runs_options_and_their_errors() {
        let a = parsed(parse_args, &[]);
        assert_eq!(
            (a.limit_mib, a.file_mib, a.runs.clone()),
            (256, 512, vec![(1, false), (2, false), (2, true)])
        );
        let a = parsed(
            parse_args,
            &["--runs", "2,2s", "--secs", "3", "--large-folios"],
        );
        assert_eq!(
            (a.runs.clone(), a.secs, a.large_folios),
            (vec![(2, false), (2, true)], 3.0, true)
        );
        assert_refused(parse_args, &["--runs", "3"], "is not a run");
        assert_refused(parse_args, &["--secs", "0"], "(0, 600]");
        assert_refused(parse_args, &["--file-mib", "100"], "at least the limit");
        assert_refused(parse_args, &["--limit-mib"], "needs a value");
        assert_refused(parse_args, &["--bogus"], "unknown argument");
    }

    #[test]
    fn trace_lines_parse_both_clocks() {
        let l = parse_line("  lru_lock_hold-4242    [001] d..1. 8623477234553: contention_begin: 0x00000000a1b2c3d4 (flags=SPIN)").unwrap();
        assert_eq!(
            (l.pid, l.ts, l.event),
            (4242, 8623477234553, "contention_begin")
        );
        assert_eq!(classify(&l), Some(Ev::Begin("0x00000000a1b2c3d4", "SPIN")));
        let l =
            parse_line(" kworker/u8:2-[x]-77 [000] ..... 12.000345: contention_end: 0xabc (ret=0)")
                .unwrap();
        assert_eq!((l.pid, l.ts), (77, 12_000_345_000));
        assert_eq!(classify(&l), Some(Ev::End("0xabc")));
        let l = parse_line("  r-9 [000] d..1. 100: mm_vmscan_lru_isolate: classzone=3 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=31 lru=inactive_file").unwrap();
        assert_eq!(
            classify(&l),
            Some(Ev::Isolate(Batch {
                requested: 32,
                scanned: 32,
                taken: 31,
                active: false
            }))
        );
        assert!(parse_line("# tracer: nop").is_none());
        assert_eq!(parse_ts("1.5"), Some(1_500_000_000));
        assert_eq!(parse_ts("1.x"), None);
    }

    fn line(pid: u32, ts: u64, ev: &str) -> String {
        format!("  r-{pid} [000] d..1. {ts}: {ev}\n")
    }

    #[test]
    fn waits_pair_by_pid_and_the_lock_held_across_isolation_is_found() {
        let iso = "mm_vmscan_lru_isolate: classzone=3 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file";
        let mut t = String::from("# header\n");
        // pid 1 waits 300 on A, then isolates 2000 later: A is held across it.
        t += &line(1, 1000, "contention_begin: 0xA (flags=SPIN)");
        // pid 2 waits on B meanwhile (nested begin/end of another pid).
        t += &line(2, 1100, "contention_begin: 0xB (flags=SPIN)");
        t += &line(1, 1300, "contention_end: 0xA (ret=0)");
        t += &line(2, 1500, "contention_end: 0xB (ret=0)");
        t += &line(1, 3300, iso);
        // pid 2 waits on B again, but takes C before isolating: no credit to B.
        t += &line(2, 4000, "contention_begin: 0xB (flags=SPIN)");
        t += &line(2, 4100, "contention_end: 0xB (ret=0)");
        t += &line(2, 4200, "contention_begin: 0xC (flags=SPIN)");
        t += &line(2, 4300, "contention_end: 0xC (ret=0)");
        t += &line(2, 5000, iso);
        // Too long after the acquisition: another hold.
        t += &line(1, 6000, "contention_begin: 0xA (flags=SPIN)");
        t += &line(1, 6100, "contention_end: 0xA (ret=0)");
        t += &line(1, 90000, iso);
        // An end without its begin.
        t += &line(3, 91000, "contention_end: 0xD (ret=0)");
        let a = analyse(&t, 50_000);
        assert_eq!(a.unparsed, 0);
        assert_eq!(a.unmatched_ends, 1);
        let idx = |name: &str| a.addrs.iter().position(|x| x.0 == name).unwrap();
        assert_eq!(a.waits_on(idx("0xA")), vec![300.0, 100.0]);
        assert_eq!(a.waits_on(idx("0xB")), vec![400.0, 100.0]);
        assert_eq!(a.credits[idx("0xA")], 1);
        assert_eq!(a.credits[idx("0xB")], 0);
        assert_eq!(a.credits[idx("0xC")], 1);
        assert_eq!(
            a.direct,
            vec![(idx("0xA"), 2000, 32, None), (idx("0xC"), 700, 32, None)]
        );
        assert_eq!(a.batches.len(), 3);
        // A tie (one credit each) goes to the address seen first.
        assert_eq!(a.lru_lock(), Some(idx("0xA")));
        assert_eq!(a.addrs[idx("0xA")].1, "SPIN");
    }

    #[test]
    fn stacks_name_the_waiters_site() {
        let iso = "mm_vmscan_lru_isolate: classzone=3 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file";
        let mut t = String::new();
        t += &line(1, 1000, "contention_begin: 0xA (flags=SPIN)");
        t += &line(1, 1000, "<stack trace>");
        t += " => trace_event_raw_event_contention_begin+0x4b/0x90\n";
        t += " => __pv_queued_spin_lock_slowpath+0x10e/0x380\n";
        t += " => _raw_spin_lock_irq+0x3b/0x60\n";
        t += " => shrink_lruvec+0x76f/0xe40\n";
        t += " => shrink_node+0xde/0x870\n";
        t += &line(1, 1300, "contention_end: 0xA (ret=0)");
        t += &line(1, 5300, iso);
        // A wait without a stack keeps no site.
        t += &line(1, 9000, "contention_begin: 0xA (flags=SPIN)");
        t += &line(1, 9100, "contention_end: 0xA (ret=0)");
        let a = analyse(&t, 50_000);
        assert_eq!(a.unparsed, 0);
        assert_eq!(
            a.sites,
            vec!["shrink_lruvec+0x76f/0xe40 < shrink_node".to_string()]
        );
        assert_eq!(a.waits[0].3, Some(0));
        assert_eq!(a.waits[1].3, None);
        assert_eq!(a.direct, vec![(0, 4000, 32, Some(0))]);
        // One credited wait of two: not enough to name the isolation's site.
        assert_eq!(a.isolate_site(0), None);
        assert_eq!(site_of(&[]), "?");
    }

    #[test]
    fn the_isolations_own_site_is_always_followed_by_one_and_quickest() {
        let iso = "mm_vmscan_lru_isolate: classzone=3 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file";
        let mut t = String::new();
        let mut ts = 1000;
        // (site, µs to the isolation or none): X 3 µs, Y 5 µs, Z 1 µs but
        // only every other wait followed by an isolation.
        for k in 0..40 {
            for (frame, to) in [
                ("x+0x1/0x9", Some(3000)),
                ("y+0x2/0x9", Some(5000)),
                ("z+0x3/0x9", (k % 2 == 0).then_some(1000)),
            ] {
                t += &line(1, ts, "contention_begin: 0xA (flags=SPIN)");
                t += &line(1, ts, "<stack trace>");
                t += &format!(" => {frame}\n => caller+0x0/0x9\n");
                t += &line(1, ts + 100, "contention_end: 0xA (ret=0)");
                if let Some(d) = to {
                    t += &line(1, ts + 100 + d, iso);
                }
                ts += 100_000;
            }
        }
        let a = analyse(&t, 50_000);
        let x = a.sites.iter().position(|s| s.starts_with("x+")).unwrap();
        assert_eq!(a.isolate_site(0), Some(x));
    }

    #[test]
    fn summary_is_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        let s = summary(&v).unwrap();
        assert_eq!(
            (s.n, s.min, s.p10, s.p50, s.p90, s.p99, s.max),
            (100, 1.0, 10.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(s.mean, 50.5);
        assert_eq!(summary(&[]), None);
        assert_eq!(summary(&[7.0]).unwrap().p99, 7.0);
    }

    #[test]
    fn least_squares_line() {
        let (a, b) = fit_line(&[(16.0, 500.0), (32.0, 900.0), (32.0, 1100.0)]).unwrap();
        assert!(
            (b - 31.25).abs() < 1e-9 && (a - 0.0).abs() < 1e-9,
            "{a} {b}"
        );
        assert_eq!(fit_line(&[(32.0, 1.0), (32.0, 2.0)]), None);
        assert_eq!(fit_line(&[(1.0, 1.0)]), None);
    }

    #[test]
    fn utilisation_estimate() {
        // 1000 waits out of 3 acquisitions in each of 10,000 batches: U = 1/30;
        // the two readers hold the lock 2/30 of 1 s for 320,000 pages.
        let h = hold_per_page_from_utilisation(1000, 10_000, 3.0, 1e9, 320_000).unwrap();
        assert!((h - 2.0 / 30.0 * 1e9 / 320_000.0).abs() < 1e-9, "{h}");
        assert_eq!(hold_per_page_from_utilisation(1, 0, 3.0, 1e9, 1), None);
    }
}
