//! Simulator speed benchmark: simulated seconds per wall second and page
//! events (faults + pages scanned + pages written) per wall second on named
//! scenarios, one core each, plus peak memory.
//!
//! Run: `cargo run --release -p reclaimlab-workload --example bench [FILTER]`
//! (peak RSS is the process's high-water mark: run one scenario per process
//! for its own figure, as docs/bench/sim-speed.md does).
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
}

impl Sink for Deltas {
    fn vmstat_names(&mut self, n: &[&str]) {
        self.names = n.iter().map(|s| s.to_string()).collect();
    }
    fn vmstat(&mut self, _t: f64, _s: u32, v: &[u64]) {
        if self.first.is_empty() {
            self.first = v.to_vec();
        }
        self.last = v.to_vec();
    }
    fn trace(&mut self, text: &str) {
        self.trace_bytes += text.len();
    }
    fn latency(&mut self, _: u32, _: &str, _: f64, _: f64) {}
}

impl Deltas {
    fn d(&self, n: &str) -> u64 {
        let i = self.names.iter().position(|x| x == n).unwrap();
        self.last[i] - self.first[i]
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

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
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
        let events =
            s.d("pgfault") + s.d("pgscan_kswapd") + s.d("pgscan_direct") + s.d("nr_written");
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
