//! Quick look: a small dirty-pressure mix under each profile.
use reclaimlab_kernel::{machine::Machine, params::Params, profile::profile, SimConfig};
use reclaimlab_workload::sim::{run, Sink, StepSpec};
use reclaimlab_workload::spec::Spec;

struct Count {
    lines: Vec<String>,
    vm: Vec<Vec<u64>>,
    names: Vec<String>,
    lat: Vec<f64>,
}
impl Sink for Count {
    fn vmstat_names(&mut self, n: &[&str]) {
        self.names = n.iter().map(|s| s.to_string()).collect();
    }
    fn vmstat(&mut self, _t: f64, _s: u32, v: &[u64]) {
        self.vm.push(v.to_vec());
    }
    fn trace(&mut self, text: &str) {
        self.lines.extend(text.lines().map(String::from));
    }
    fn latency(&mut self, _s: u32, _m: &str, _t: f64, us: f64) {
        self.lat.push(us);
    }
}

fn main() {
    let spec = Spec::parse(
        r#"
name = "smoke"
duration_s = 20
warmup_s = 3
[[worker]]
kind = "file-writer"
count = 2
files = 2
file_mib = 64
[[worker]]
kind = "anon-hog"
count = 2
size_mib = 260
[[worker]]
kind = "mmap-latency"
"#,
        "smoke",
    )
    .unwrap();
    for k in ["v5.15", "v5.16", "none"] {
        let p = profile(k).unwrap();
        let cfg = SimConfig::new(
            Machine::load(&std::env::var("M").unwrap_or("small".into())).unwrap(),
            p,
            Params::defaults(p),
            1,
        );
        let mut sink = Count {
            lines: vec![],
            vm: vec![],
            names: vec![],
            lat: vec![],
        };
        let t0 = std::time::Instant::now();
        let s = run(
            &cfg,
            &[StepSpec::from_spec(&spec)],
            &mut sink,
            &mut |_| {},
            true,
        );
        let wall = t0.elapsed().as_secs_f64();
        let first = &sink.vm[0];
        let last = sink.vm.last().unwrap();
        let d = |n: &str| {
            let i = sink.names.iter().position(|x| x == n).unwrap();
            last[i] - first[i]
        };
        println!(
            "== {k}: wall {wall:.2}s events {} trace {} inv {:?}",
            s.events, s.trace_lines, s.invariant_error
        );
        println!(
            "   user {:.2} sys {:.2} elapsed {:.1}",
            s.user_s, s.system_s, s.elapsed_s
        );
        for n in [
            "pgscan_kswapd",
            "pgscan_direct",
            "pgsteal_kswapd",
            "pgsteal_direct",
            "nr_vmscan_write",
            "nr_vmscan_immediate_reclaim",
            "pswpout",
            "pswpin",
            "pgfault",
            "pgmajfault",
            "allocstall_normal",
            "oom_kill",
            "pgrotated",
            "nr_dirtied",
            "nr_written",
        ] {
            print!("{n}={} ", d(n));
        }
        println!();
        let mut h = std::collections::BTreeMap::new();
        for l in &sink.lines {
            let ev = l.split(": ").nth(1).unwrap_or("");
            let who = if l.trim_start().starts_with("kswapd") {
                "kswapd"
            } else {
                "direct"
            };
            if ev.contains("throttled") || ev.contains("congest") {
                let f = l.split(": ").nth(2).unwrap_or("");
                *h.entry(format!("{who} {ev} {}", f.replace("nid=0 ", "")))
                    .or_insert(0) += 1;
            }
        }
        let mut v: Vec<_> = h.into_iter().collect();
        v.sort_by_key(|x| x.1);
        for (l, c) in v.iter().rev().take(12) {
            println!("   {c:7} {l}");
        }
        let mut lat = sink.lat.clone();
        lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if !lat.is_empty() {
            println!(
                "   mmap n={} mean={:.1}ms max={:.1}ms",
                lat.len(),
                lat.iter().sum::<f64>() / lat.len() as f64 / 1000.0,
                lat.last().unwrap() / 1000.0
            );
        }
    }
}
