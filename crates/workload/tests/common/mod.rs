//! What the behaviour tests share: a sink that keeps everything, and a
//! one-call simulation of a spec on a machine under a profile.

#![allow(dead_code)]

use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::SimConfig;
use reclaimlab_workload::sim::{run, RunSummary, Sink, StepSpec};
use reclaimlab_workload::spec::Spec;

#[derive(Default)]
pub struct Collect {
    pub names: Vec<String>,
    pub rows: Vec<Vec<u64>>,
    pub trace: String,
    pub lat: Vec<(u32, String, f64, f64)>,
}

impl Sink for Collect {
    fn vmstat_names(&mut self, names: &[&str]) {
        self.names = names.iter().map(|s| s.to_string()).collect();
    }
    fn vmstat(&mut self, _t: f64, _s: u32, v: &[u64]) {
        self.rows.push(v.to_vec());
    }
    fn trace(&mut self, text: &str) {
        self.trace.push_str(text);
    }
    fn latency(&mut self, step: u32, metric: &str, t: f64, us: f64) {
        self.lat.push((step, metric.into(), t, us));
    }
}

impl Collect {
    pub fn delta(&self, name: &str) -> u64 {
        let i = self
            .names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("no counter {name}"));
        self.rows.last().unwrap()[i] - self.rows[0][i]
    }
    /// Trace lines of `event`, as (comm, fields).
    pub fn events(&self, event: &str) -> Vec<(String, String)> {
        let tag = format!(": {event}: ");
        self.trace
            .lines()
            .filter_map(|l| {
                let at = l.find(&tag)?;
                let comm = l.trim_start().split('-').next().unwrap_or("").to_string();
                Some((comm, l[at + tag.len()..].to_string()))
            })
            .collect()
    }
}

pub fn field(fields: &str, name: &str) -> u64 {
    fields
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {fields}"))
}

pub fn machine(toml: &str) -> Machine {
    Machine::from_toml(toml, "test").unwrap()
}

pub fn sim(
    m: &Machine,
    kernel: &str,
    spec: &str,
    seed: u64,
    set: &[(&str, &str)],
) -> (Collect, RunSummary) {
    let mut p = profile(kernel).unwrap().clone();
    let mut params = Params::defaults(&p);
    for (k, v) in set {
        if reclaimlab_kernel::profile::POLICY_NAMES.contains(k) {
            p.set(k, v).unwrap();
        } else {
            params.set(k, v).unwrap();
        }
    }
    let cfg = SimConfig::new(m.clone(), &p, params, seed);
    let spec = Spec::parse(spec, "test").unwrap();
    let mut c = Collect::default();
    let s = run(
        &cfg,
        &[StepSpec::from_spec(&spec)],
        &mut c,
        &mut |_| {},
        true,
    );
    assert_eq!(s.invariant_error, None, "kernel invariants");
    (c, s)
}
