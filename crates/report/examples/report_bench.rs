//! Benchmark: the report over a record with 10 million trace lines.
//!
//! Writes (once) a synthetic run record with the record crate's writer — a
//! deterministic mix of `mm_vmscan_throttled` (kswapd and direct, every
//! reason), `writeback_congestion_wait`, `writeback_wait_iff_congested` and
//! non-stall reclaim events — then times loading it and rendering text, JSON
//! and HTML, and prints the peak resident memory (VmHWM) of this process.
//!
//! ```text
//! cargo run --release -p reclaimlab-report --example report_bench -- [--lines N] [--dir DIR] [--report-only] [--phases]
//! ```
//!
//! `--report-only` skips writing (the record at DIR must exist), so VmHWM is
//! the report's alone.

use std::path::PathBuf;
use std::time::Instant;

use reclaimlab_record::{Origin, RecordWriter, RunMeta, Step, Workload};
use reclaimlab_report::{build_report, load_run, render_html, render_json, render_text, Options};

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// User+system CPU seconds of this process so far (/proc/self/stat, 100 Hz ticks).
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split(' ').collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(0.0)
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn write_record(dir: &std::path::Path, lines: u64) -> Result<(), Box<dyn std::error::Error>> {
    let mut meta = RunMeta::new("bench", Origin::Sim, "v5.16");
    meta.workload = Workload {
        name: "stutterp".into(),
        spec: "stutterp".into(),
    };
    meta.steps = vec![Step {
        step: 4,
        start_s: 0.0,
        end_s: 300.0,
    }];
    meta.duration.elapsed_s = 300.0;
    meta.capture.trace = true;
    let mut w = RecordWriter::create(dir, meta)?;
    let counters = [
        "pgscan_kswapd",
        "pgscan_direct",
        "pgsteal_kswapd",
        "pgsteal_direct",
    ];
    w.vmstat_header(&counters)?;
    for i in 0..=300u64 {
        w.vmstat_row(i as f64, 4, &[i * 1000, i * 9000, i * 600, i * 90])?;
    }
    let mut rng = Lcg(42);
    for i in 0..60_000u64 {
        w.latency(
            4,
            "mmap",
            i as f64 * 0.005,
            20_000.0 + (rng.next() % 50_000) as f64,
        )?;
    }
    let reasons = [
        ("VMSCAN_THROTTLE_WRITEBACK", 100_000u64),
        ("VMSCAN_THROTTLE_ISOLATED", 20_000),
        ("VMSCAN_THROTTLE_NOPROGRESS", 500_000),
        ("VMSCAN_THROTTLE_CONGESTED", 100_000),
    ];
    let comms = ["kswapd0", "fio", "memory-hog", "mmap-latency", "<...>"];
    let mut line = String::with_capacity(200);
    for i in 0..lines {
        let r = rng.next();
        let comm = comms[(r % 5) as usize];
        let pid = 50 + (r % 5) * 37;
        let cpu = r % 2;
        let ts = i as f64 * 300.0 / lines as f64;
        line.clear();
        use std::fmt::Write;
        let head = format!("{comm:>16}-{pid:<7} [{cpu:03}] ..... {ts:12.6}: ");
        line.push_str(&head);
        match (r >> 8) % 8 {
            0..=3 => {
                let (reason, timeout) = reasons[((r >> 12) % 4) as usize];
                let delayed = ((r >> 16) % (timeout / 4000 + 2)) * 4000;
                let _ = write!(
                    line,
                    "mm_vmscan_throttled: nid=0 usec_timeout={timeout} usect_delayed={} reason={reason}",
                    delayed.min(timeout)
                );
            }
            4 => {
                let _ = write!(
                    line,
                    "writeback_congestion_wait: usec_timeout=100000 usec_delayed={}",
                    100_000 + ((r >> 16) % 9) * 4000
                );
            }
            5 => {
                let _ = write!(
                    line,
                    "writeback_wait_iff_congested: usec_timeout=100000 usec_delayed={}",
                    if (r >> 16).is_multiple_of(100) {
                        4000
                    } else {
                        0
                    }
                );
            }
            6 => line
                .push_str("mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE"),
            _ => {
                let _ = write!(
                    line,
                    "mm_vmscan_direct_reclaim_end: nr_reclaimed={}",
                    r % 64
                );
            }
        }
        w.trace_line(&line)?;
    }
    w.finish()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut lines: u64 = 10_000_000;
    let mut dir = std::env::temp_dir().join("reclaimlab-report-bench");
    let mut report_only = false;
    let mut phases = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--lines" => lines = args.next().ok_or("--lines N")?.parse()?,
            "--dir" => dir = PathBuf::from(args.next().ok_or("--dir DIR")?),
            "--report-only" => report_only = true,
            "--phases" => phases = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !report_only {
        let t = Instant::now();
        write_record(&dir, lines)?;
        let size = std::fs::metadata(dir.join("trace.txt.gz"))?.len();
        println!(
            "wrote {} ({lines} trace lines, trace.txt.gz {:.1} MiB) in {:.2} s",
            dir.display(),
            size as f64 / 1048576.0,
            t.elapsed().as_secs_f64()
        );
    }
    if phases {
        // Where the time goes: gzip alone, then the record crate's line parser.
        let t = Instant::now();
        let f = std::fs::File::open(dir.join("trace.txt.gz"))?;
        let mut d = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(f));
        let bytes = std::io::copy(&mut d, &mut std::io::sink())?;
        println!(
            "phase gunzip only: {:.2} s ({:.0} MB/s)",
            t.elapsed().as_secs_f64(),
            bytes as f64 / 1e6 / t.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        let mut tl = reclaimlab_record::TraceLines::open(&dir.join("trace.txt.gz"))?;
        let mut n = 0u64;
        while let Some(l) = tl.next_line() {
            n += u64::from(l.is_ok());
        }
        println!(
            "phase gunzip+parse (TraceLines): {:.2} s, {n} event lines",
            t.elapsed().as_secs_f64()
        );
    }
    let t = Instant::now();
    let cpu0 = cpu_s();
    let run = load_run(&dir)?;
    let t_load = t.elapsed().as_secs_f64();
    let report = build_report(&[run], Options::default());
    let text = render_text(&report);
    let json = render_json(&report);
    let html = render_html(&report);
    let t_all = t.elapsed().as_secs_f64();
    let cpu = cpu_s() - cpu0;
    let r = &report.runs[0];
    println!(
        "report: {} trace lines read, {} stall events, {} histogram buckets, {} unparsed",
        r.trace.lines,
        r.trace.stall_events,
        r.stalls.len(),
        r.trace.bad_lines
    );
    println!(
        "load+parse {t_load:.2} s; load+report+text+json+html {t_all:.2} s ({:.1} M lines/s); text {} B, json {} B, html {} B",
        r.trace.lines as f64 / t_all / 1e6,
        text.len(),
        json.len(),
        html.len()
    );
    println!("report CPU time (user+system, both threads) {cpu:.2} s");
    println!("peak RSS (VmHWM) {:.1} MiB", vm_hwm_kib() as f64 / 1024.0);
    Ok(())
}
