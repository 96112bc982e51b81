//! Parse-throughput benchmark of the ftrace text parser and the trace paths
//! built on it.
//!
//! Generates a trace file of N lines (default 5 million) in the kernel's format
//! with a realistic event mix, then times, over the page-cached file:
//! 1. line splitting only (the `grep -c` floor);
//! 2. every line parsed, plus a one-event histogram of `mm_vmscan_throttled`
//!    by (reason, usect_delayed) — what the `awk` one-liner does;
//! 3. `reclaimlab import trace` (parse + gzip into a record);
//! 4. streaming the record's `trace.txt.gz` back with `Record::trace_lines`.
//!
//! Run: `cargo run --release -p reclaimlab-record --example parse_bench -- [LINES] [DIR]`

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use reclaimlab_record::lines::LineReader;
use reclaimlab_record::{import_trace, parse_trace_line, Record};

fn generate(path: &PathBuf, n: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    w.write_all(b"# tracer: nop\n#\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n")?;
    let comms = [
        "kswapd0",
        "fio",
        "memory-hog",
        "mmap-latency",
        "kworker/u8:2",
        "Web Content",
    ];
    let reasons = [
        ("VMSCAN_THROTTLE_WRITEBACK", 100_000u64),
        ("VMSCAN_THROTTLE_ISOLATED", 20_000),
        ("VMSCAN_THROTTLE_NOPROGRESS", 500_000),
    ];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut ts_us: u64 = 1_000_000;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ts_us += 1 + (x % 50);
        let comm = comms[(x >> 8) as usize % comms.len()];
        let pid = 51 + (x >> 16) % 4000;
        let cpu = (x >> 24) % 4;
        let (s, us) = (ts_us / 1_000_000, ts_us % 1_000_000);
        match i % 4 {
            0 | 1 => {
                let (reason, timeout) = reasons[(x >> 32) as usize % 3];
                let delayed = 4000 * ((x >> 40) % (timeout / 4000 + 1));
                writeln!(w, "{comm:>16}-{pid:<7} [{cpu:03}] ..... {s:5}.{us:06}: mm_vmscan_throttled: nid=0 usec_timeout={timeout} usect_delayed={delayed} reason={reason}")?;
            }
            2 => writeln!(w, "{comm:>16}-{pid:<7} [{cpu:03}] ..... {s:5}.{us:06}: writeback_congestion_wait: usec_timeout=100000 usec_delayed={}", 4000 * ((x >> 40) % 26))?,
            _ => writeln!(w, "{comm:>16}-{pid:<7} [{cpu:03}] d..1. {s:5}.{us:06}: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed={} nr_dirty=3 nr_writeback=1 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=2 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC", (x >> 40) % 33)?,
        }
    }
    w.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn mbs(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / 1e6 / secs
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// CPU time of the whole process (all threads), seconds, from /proc/self/stat.
fn process_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the `(comm)`: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs `f` `runs` times; returns the last description, the best wall time
/// and the CPU time (all threads) of that run.
fn best_of(runs: usize, mut f: impl FnMut() -> Res<String>) -> Res<(String, f64, f64)> {
    let mut best = (f64::INFINITY, 0.0);
    let mut what = String::new();
    for _ in 0..runs {
        let c = process_cpu_s();
        let t = Instant::now();
        what = f()?;
        let wall = t.elapsed().as_secs_f64();
        if wall < best.0 {
            best = (wall, process_cpu_s() - c);
        }
    }
    Ok((what, best.0, best.1))
}

fn report(name: &str, bytes: u64, (what, s, cpu): (String, f64, f64)) {
    println!(
        "{name}:\n  {what}\n  best wall {s:.3} s = {:.0} MB/s of trace text; CPU {cpu:.2} s (all threads)",
        mbs(bytes, s)
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(5_000_000);
    let dir = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("reclaimlab-parse-bench"));
    std::fs::create_dir_all(&dir)?;
    let trace = dir.join("trace.txt");
    let t = Instant::now();
    // Reuse a file generated earlier with the same line count.
    let stamp = dir.join("trace.lines");
    let bytes = match std::fs::read_to_string(&stamp) {
        Ok(s) if s.trim() == n.to_string() && trace.is_file() => std::fs::metadata(&trace)?.len(),
        _ => {
            let b = generate(&trace, n)?;
            std::fs::write(&stamp, n.to_string())?;
            b
        }
    };
    println!(
        "generated {n} lines, {:.1} MB in {:.1} s: {}",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        trace.display()
    );
    // Warm the page cache.
    let mut r = LineReader::new(File::open(&trace)?);
    while let Some(l) = r.next_line() {
        l?;
    }

    println!(
        "load average before timing: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    const RUNS: usize = 3;
    // `PARSE_BENCH_ONLY=parse` runs only the parse phase (for `perf stat`).
    let only_parse = std::env::var("PARSE_BENCH_ONLY").is_ok_and(|v| v == "parse");

    // 1. Split only.
    let s = best_of(RUNS, || {
        let mut r = LineReader::new(File::open(&trace)?);
        let mut lines = 0u64;
        while let Some(l) = r.next_line() {
            l?;
            lines += 1;
        }
        Ok(format!("{lines} lines"))
    })?;
    report("split lines only (grep -c floor)", bytes, s);

    // 2. Parse every line + histogram.
    let s = best_of(RUNS, || {
        let mut r = LineReader::new(File::open(&trace)?);
        let mut hist: HashMap<String, HashMap<u64, u64>> = HashMap::new();
        let (mut events, mut other) = (0u64, 0u64);
        while let Some(l) = r.next_line() {
            let l = l?;
            let Ok(text) = std::str::from_utf8(l) else {
                other += 1;
                continue;
            };
            match parse_trace_line(text) {
                Ok(tl) => {
                    events += 1;
                    if tl.event() == "mm_vmscan_throttled" {
                        let reason = tl.field("reason").unwrap_or("");
                        let d = tl.usec_delayed().unwrap_or(0);
                        // Look up without allocating; allocate only for a new reason.
                        let by_delay = match hist.get_mut(reason) {
                            Some(h) => h,
                            None => hist.entry(reason.to_string()).or_default(),
                        };
                        *by_delay.entry(d).or_insert(0) += 1;
                    }
                }
                Err(_) => other += 1,
            }
        }
        let buckets: usize = hist.values().map(HashMap::len).sum();
        Ok(format!(
            "{events} events, {other} other lines, {buckets} buckets"
        ))
    })?;
    report(
        "parse every line + throttle histogram (awk equivalent)",
        bytes,
        s,
    );
    if only_parse {
        return Ok(());
    }

    // 3. Import (parse + gzip into a record).
    let out = dir.join("record");
    let s = best_of(RUNS, || {
        let sum = import_trace(&trace, &out)?;
        let gz = std::fs::metadata(out.join("trace.txt.gz"))?.len();
        Ok(format!(
            "{} lines, trace.txt.gz {:.1} MB",
            sum.trace_lines,
            gz as f64 / 1e6
        ))
    })?;
    report(
        "import trace (parse + gzip level 1 into a record)",
        bytes,
        s,
    );

    // 4. Stream the record's trace back.
    let rec = Record::open(&out)?;
    let s = best_of(RUNS, || {
        let mut tl = rec.trace_lines()?.ok_or("record has no trace")?;
        let mut k = 0u64;
        let mut delayed_sum = 0u64;
        while let Some(l) = tl.next_line() {
            let l = l?;
            delayed_sum = delayed_sum.wrapping_add(l.usec_delayed().unwrap_or(0));
            k += 1;
        }
        Ok(format!("{k} lines (checksum {delayed_sum})"))
    })?;
    let secs = s.1;
    report("stream record trace.txt.gz (gunzip + parse)", bytes, s);
    println!(
        "  = {:.2} M lines/s; 10 million lines in {:.1} s",
        n as f64 / 1e6 / secs,
        10e6 / (n as f64 / secs)
    );
    Ok(())
}
