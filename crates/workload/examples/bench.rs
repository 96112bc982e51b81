//! Simulator speed benchmark: simulated seconds per wall second and page
//! events (faults + pages scanned + pages written) per wall second on named
//! scenarios, one core each, plus peak memory.
//!
//! Run: `cargo run --release -p reclaimlab-workload --example bench [FILTER]`
//! (peak RSS is the process's high-water mark: run one scenario per process
//! for its own figure, as docs/bench/sim-speed.md does).
//!
//! `bench --steps MACHINE KERNEL [WORKERS]` runs the whole stutterp
//! benchmark at its mmtests size (every worker count, or only `WORKERS`,
//! mmtests' warmup and 300 s) and prints the same figures per step: what
//! `reclaimlab sim stutterp --machine MACHINE --kernel KERNEL` simulates,
//! step by step, without writing a record.
//! Results: docs/bench/sim-speed.md

use std::time::Instant;

use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::SimConfig;
use reclaimlab_workload::sim::{run, stutterp_steps, Sink};
use reclaimlab_workload::stutterp::StutterpParams;

#[derive(Default)]
struct Deltas {
    names: Vec<String>,
    first: Vec<u64>,
    last: Vec<u64>,
    trace_bytes: usize,
    /// Per step: (step, first sample's time, last sample's time, wall
    /// seconds since the start at its last sample, page events at its first
    /// and last sample).
    steps: Vec<(u32, f64, f64, f64, u64, u64)>,
    t0: Option<Instant>,
}

/// Names of the counters whose sum is a page event.
const EVENTS: [&str; 4] = ["pgfault", "pgscan_kswapd", "pgscan_direct", "nr_written"];

impl Sink for Deltas {
    fn vmstat_names(&mut self, n: &[&str]) {
        self.names = n.iter().map(|s| s.to_string()).collect();
    }
    fn vmstat(&mut self, t: f64, step: u32, v: &[u64]) {
        if self.first.is_empty() {
            self.first = v.to_vec();
        }
        self.last = v.to_vec();
        let wall = self.t0.map_or(0.0, |t0| t0.elapsed().as_secs_f64());
        let events: u64 = EVENTS.iter().map(|n| self.at(n)).sum();
        match self.steps.last_mut() {
            Some(s) if s.0 == step => {
                s.2 = t;
                s.3 = wall;
                s.5 = events;
            }
            _ => self.steps.push((step, t, t, wall, events, events)),
        }
    }
    fn trace(&mut self, text: &str) {
        self.trace_bytes += text.len();
    }
    fn latency(&mut self, _: u32, _: &str, _: f64, _: f64) {}
}

impl Deltas {
    fn index(&self, n: &str) -> usize {
        self.names.iter().position(|x| x == n).unwrap()
    }
    fn d(&self, n: &str) -> u64 {
        let i = self.index(n);
        self.last[i] - self.first[i]
    }
    /// Counter `n` in the last sample.
    fn at(&self, n: &str) -> u64 {
        self.last[self.index(n)]
    }
}

fn peak_rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// `--steps MACHINE KERNEL`: the whole benchmark, one row per step. A
/// step's wall time runs from the previous step's last sample to its own,
/// so it includes booting its kernel.
fn steps(m: &str, k: &str, workers: Option<&String>) {
    let machine = Machine::load(m).unwrap_or_else(|e| panic!("machine {m}: {e}"));
    let p = profile(k).unwrap_or_else(|| panic!("no kernel profile {k}"));
    let params = Params::defaults(p);
    let mut sp = StutterpParams::default();
    if let Some(w) = workers {
        sp.set("stutterp.workers", w).unwrap();
    }
    let steps = stutterp_steps(&sp, &machine, params.dirty_ratio as u32).unwrap();
    let cfg = SimConfig::new(machine.clone(), p, params, 1);
    let mut s = Deltas {
        t0: Some(Instant::now()),
        ..Deltas::default()
    };
    run(&cfg, &steps, &mut s, &mut |_| {}, false);
    println!("| {m} {k} step | sim s | wall s | sim s / wall s | page events | Mevents / wall s |");
    println!("|---|---|---|---|---|---|");
    let (mut wall0, mut ev0, mut sim_total) = (0.0, 0, 0.0);
    for &(step, t0, t1, wall, _, ev) in &s.steps {
        let (sim, w, e) = (t1 - t0, wall - wall0, ev - ev0);
        println!(
            "| {step} | {sim:.0} | {w:.2} | {:.1} | {e} | {:.2} |",
            sim / w,
            e as f64 / w / 1e6
        );
        (wall0, ev0) = (wall, ev);
        sim_total += sim;
    }
    println!(
        "| all | {sim_total:.0} | {wall0:.2} | {:.1} | {ev0} | {:.2} |",
        sim_total / wall0,
        ev0 as f64 / wall0 / 1e6
    );
    println!("peak RSS {:.0} MiB", peak_rss_mib());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--steps") {
        let (m, k) = match (args.get(2), args.get(3)) {
            (Some(m), Some(k)) => (m, k),
            _ => panic!("usage: bench --steps MACHINE KERNEL [WORKERS]"),
        };
        return steps(m, k, args.get(4));
    }
    let filter = args.get(1).cloned().unwrap_or_default();
    let scenarios: &[(&str, &str, &str, u32, u64)] = &[
        ("small/stutterp-4", "small", "v5.15", 4, 60),
        ("small/stutterp-8", "small", "v5.16", 8, 60),
        ("slice-2021/stutterp-8", "slice-2021", "v5.15", 8, 120),
        ("laptop/stutterp-12", "laptop", "v5.16", 12, 20),
        (
            "testbox-2021/stutterp-21/v5.15",
            "testbox-2021",
            "v5.15",
            21,
            40,
        ),
        (
            "testbox-2021/stutterp-21/v5.16",
            "testbox-2021",
            "v5.16",
            21,
            40,
        ),
        (
            "testbox-2021/stutterp-64/v5.16",
            "testbox-2021",
            "v5.16",
            64,
            40,
        ),
    ];
    println!("| scenario | kernel | sim s | wall s | sim s / wall s | page events | Mevents / wall s | peak RSS MiB | machine pages x 64 B MiB |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &(name, m, k, workers, dur) in scenarios {
        if !name.contains(&filter) {
            continue;
        }
        let machine = Machine::load(m).unwrap();
        let p = profile(k).unwrap();
        let params = Params::defaults(p);
        let mut sp = StutterpParams::default();
        sp.set("stutterp.workers", &workers.to_string()).unwrap();
        sp.set("stutterp.duration_s", &dur.to_string()).unwrap();
        sp.set("stutterp.warmup_s", "2").unwrap();
        let steps = stutterp_steps(&sp, &machine, params.dirty_ratio as u32).unwrap();
        let cfg = SimConfig::new(machine.clone(), p, params, 1);
        let mut s = Deltas::default();
        let t0 = Instant::now();
        let sum = run(&cfg, &steps, &mut s, &mut |_| {}, false);
        let wall = t0.elapsed().as_secs_f64();
        // nr_written counts every page whose writeback ended (flusher and
        // reclaim writes, swap-out included).
        let events: u64 = EVENTS.iter().map(|n| s.d(n)).sum();
        println!(
            "| {name} | {k} | {:.0} | {wall:.2} | {:.1} | {events} | {:.2} | {:.0} | {:.0} |",
            sum.elapsed_s,
            sum.elapsed_s / wall,
            events as f64 / wall / 1e6,
            peak_rss_mib(),
            machine.pages() as f64 * 64.0 / 1048576.0
        );
    }
}
