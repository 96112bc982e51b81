//! `reclaimlab sim WORKLOAD [--kernel P[,P...]] [--machine M|FILE] [--set K=V]... [--seed N] [--out DIR]`
//!
//! Simulates a workload (a built-in name or a TOML spec) under one or more
//! kernel profiles, in parallel on the available cores, writes one run record
//! per profile, and prints the comparison (the first profile is the baseline).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::{bail, Context};
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::params::{closest, Params};
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::SimConfig;
use reclaimlab_record::{Origin, RecordWriter, RunMeta};
use reclaimlab_workload::sim::{run as run_sim, stutterp_steps, RunSummary, Sink, StepSpec};
use reclaimlab_workload::spec::Spec;
use reclaimlab_workload::stutterp::StutterpParams;

/// Arguments of `reclaimlab sim`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `stutterp`, or a workload spec file (TOML; see `reclaimlab list workloads`).
    pub workload: String,
    /// Kernel profiles to compare, comma-separated (`reclaimlab list kernels`).
    #[arg(long, default_value = "v5.15,v5.16", value_delimiter = ',')]
    pub kernel: Vec<String>,
    /// A built-in machine (`reclaimlab list machines`), a machine TOML file, or
    /// this host: `host`, `host:2G`, `host:all`, `host:1G,swap=2G`, `host:1G,dir=DIR`.
    #[arg(long, default_value = "small")]
    pub machine: String,
    /// Set a parameter, e.g. `--set vm.dirty_ratio=30` (`reclaimlab list params`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for the run records (one subdirectory per profile).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the HTML report here (default: OUT/report.html).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Also record the per-batch `mm_vmscan_lru_shrink_inactive` events.
    #[arg(long)]
    pub trace_verbose: bool,
    /// Check the kernel's conservation invariants at every sample (slow).
    #[arg(long)]
    pub check: bool,
}

/// Splits `--set` values into kernel parameters and workload parameters.
fn apply_sets(sets: &[String], params: &mut Params, sp: &mut StutterpParams) -> anyhow::Result<()> {
    for s in sets {
        let Some((k, v)) = s.split_once('=') else {
            bail!("--set {s}: expected NAME=VALUE, e.g. --set vm.dirty_ratio=30");
        };
        let (k, v) = (k.trim(), v.trim());
        if k.starts_with("stutterp.") {
            sp.set(k, v)
                .map_err(|e| anyhow::anyhow!("--set {s}: {e}"))?;
            continue;
        }
        if let Err(e) = params.set(k, v) {
            if let reclaimlab_kernel::params::ParamError::Unknown { .. } = e {
                let mut names: Vec<&str> = Params::NAMES.to_vec();
                let sp_names: Vec<&str> = StutterpParams::list().iter().map(|x| x.0).collect();
                names.extend(sp_names);
                let hint = closest(k, &names)
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                bail!("--set {s}: unknown parameter `{k}`{hint}; `reclaimlab list params` shows them all");
            }
            bail!("--set {s}: {e}");
        }
    }
    Ok(())
}

/// A [`Sink`] writing a run record; remembers the first write error.
struct RecordSink {
    w: RecordWriter,
    err: Option<anyhow::Error>,
}

impl RecordSink {
    fn check(&mut self, r: Result<(), reclaimlab_record::RecordError>) {
        if let (Err(e), None) = (r, &self.err) {
            self.err = Some(e.into());
        }
    }
}

impl Sink for RecordSink {
    fn vmstat_names(&mut self, names: &[&str]) {
        let r = self.w.vmstat_header(names);
        self.check(r);
    }
    fn vmstat(&mut self, t_s: f64, step: u32, values: &[u64]) {
        let r = self.w.vmstat_row(t_s, step, values);
        self.check(r);
    }
    fn trace(&mut self, text: &str) {
        let r = self.w.trace_bytes(text.as_bytes());
        self.check(r);
    }
    fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64) {
        let r = self.w.latency(step, metric, t_s, value_us);
        self.check(r);
    }
}

fn record_machine(m: &Machine, hz: u64) -> reclaimlab_record::Machine {
    reclaimlab_record::Machine {
        name: m.name.clone(),
        cpus: m.cpus,
        nodes: m.nodes,
        memory_bytes: m.memory_mib << 20,
        hz: Some(hz as u32),
        swap_bytes: m.swap_mib << 20,
        devices: m
            .devices
            .iter()
            .map(|d| reclaimlab_record::Device {
                name: d.name.clone(),
                layer: d.layer.name().into(),
                write_mb_s: d.write_mb_s,
                read_mb_s: d.read_mb_s,
                latency_us: d.latency_us,
                queue_depth: d.queue_depth,
            })
            .collect(),
    }
}

struct Job {
    name: String,
    cfg: SimConfig,
    dir: PathBuf,
}

/// Runs one simulation into a record. Returns the record's path.
fn simulate(
    job: &Job,
    steps: &[StepSpec],
    meta: RunMeta,
    check: bool,
    progress: &(dyn Fn(&str, f64) + Sync),
) -> anyhow::Result<(PathBuf, RunSummary)> {
    let writer = RecordWriter::create(&job.dir, meta)
        .with_context(|| format!("cannot create the run record {}", job.dir.display()))?;
    let mut sink = RecordSink {
        w: writer,
        err: None,
    };
    let summary = run_sim(
        &job.cfg,
        steps,
        &mut sink,
        &mut |t| progress(&job.name, t),
        check,
    );
    if let Some(e) = sink.err.take() {
        return Err(e.context(format!("writing the run record {}", job.dir.display())));
    }
    if let Some(e) = &summary.invariant_error {
        bail!(
            "{}: kernel invariant violated: {e} (please report this as a bug)",
            job.name
        );
    }
    let m = sink.w.meta_mut();
    m.steps = summary
        .steps
        .iter()
        .map(|&(step, start_s, end_s)| reclaimlab_record::Step {
            step,
            start_s,
            end_s,
        })
        .collect();
    m.duration = reclaimlab_record::Duration {
        user_s: summary.user_s,
        system_s: summary.system_s,
        elapsed_s: summary.elapsed_s,
    };
    m.tasks = summary
        .tasks
        .iter()
        .map(|t| reclaimlab_record::TaskTime {
            comm: t.comm.clone(),
            pid: t.pid,
            step: Some(t.step),
            user_s: t.user_s,
            system_s: t.system_s,
        })
        .collect();
    let path = sink
        .w
        .finish()
        .with_context(|| format!("cannot finish the run record {}", job.dir.display()))?;
    Ok((path, summary))
}

/// Runs `reclaimlab sim`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let crate::machine_arg::Resolved { machine, host_toml } =
        crate::machine_arg::resolve(&args.machine)?;
    let mut profiles = Vec::new();
    for k in &args.kernel {
        let names: Vec<&str> = reclaimlab_kernel::profile::profiles()
            .iter()
            .map(|p| p.name)
            .collect();
        let p = profile(k).with_context(|| {
            format!(
                "--kernel {k}: unknown kernel profile (known: {}; `reclaimlab list kernels`)",
                names.join(", ")
            )
        })?;
        profiles.push(p);
    }
    let mut sp = StutterpParams::default();
    // Validate --set once against the first profile's defaults.
    apply_sets(&args.set, &mut Params::defaults(profiles[0]), &mut sp)?;
    let (workload_name, spec_label, steps) = if args.workload == "stutterp" {
        let p0 = Params::defaults(profiles[0]);
        let mut p = p0.clone();
        apply_sets(&args.set, &mut p, &mut StutterpParams::default())?;
        let steps = stutterp_steps(&sp, &machine, p.dirty_ratio as u32)
            .map_err(|e| anyhow::anyhow!("stutterp on machine `{}`: {e}", machine.name))?;
        ("stutterp".to_string(), "stutterp".to_string(), steps)
    } else if Path::new(&args.workload).exists() || args.workload.ends_with(".toml") {
        let spec = Spec::load(&args.workload)?;
        (
            spec.name.clone(),
            args.workload.clone(),
            vec![StepSpec::from_spec(&spec)],
        )
    } else {
        bail!("workload `{}`: not a built-in workload (stutterp) and no such file; `reclaimlab list workloads` shows the choices", args.workload);
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/sim-{workload_name}")));
    crate::machine_arg::save_host_profile(host_toml.as_deref(), &out)?;
    let mut jobs = Vec::new();
    for p in &profiles {
        let mut params = Params::defaults(p);
        apply_sets(&args.set, &mut params, &mut StutterpParams::default())?;
        let mut cfg = SimConfig::new(machine.clone(), p, params, args.seed);
        cfg.trace.verbose = args.trace_verbose;
        jobs.push(Job {
            name: p.name.to_string(),
            cfg,
            dir: out.join(p.name),
        });
    }
    let total_s: f64 = steps.iter().map(|s| s.total_s()).sum();
    eprintln!(
        "reclaimlab: simulating {} on `{}` ({} CPUs, {} MiB) under {}: {} step(s), {:.0} simulated s each",
        workload_name,
        machine.name,
        machine.cpus,
        machine.memory_mib,
        args.kernel.join(", "),
        steps.len(),
        total_s
    );
    let bars = indicatif::MultiProgress::new();
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bars.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let style = indicatif::ProgressStyle::with_template(
        "{prefix:>10} [{bar:30}] {pos:>6}/{len} sim s  {elapsed_precise} eta {eta}",
    )
    .expect("valid template");
    let pbs: Vec<indicatif::ProgressBar> = jobs
        .iter()
        .map(|j| {
            let pb = bars.add(indicatif::ProgressBar::new(total_s.ceil() as u64));
            pb.set_style(style.clone());
            pb.set_prefix(j.name.clone());
            pb
        })
        .collect();
    let progress = |name: &str, t: f64| {
        if let Some(i) = jobs.iter().position(|j| j.name == name) {
            pbs[i].set_position(t as u64);
        }
    };
    let results: Mutex<Vec<Option<anyhow::Result<(PathBuf, RunSummary)>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let wall = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= jobs.len() {
                    break;
                }
                let job = &jobs[i];
                let mut meta = RunMeta::new(job.name.clone(), Origin::Sim, job.name.clone());
                meta.machine = record_machine(&machine, job.cfg.params.hz);
                meta.workload = reclaimlab_record::Workload {
                    name: workload_name.clone(),
                    spec: spec_label.clone(),
                };
                meta.seed = Some(args.seed);
                for (k, v) in job.cfg.params.to_pairs() {
                    meta.params.insert(k.to_string(), v);
                }
                if workload_name == "stutterp" {
                    for (k, v) in sp.to_params() {
                        meta.params.insert(k, v);
                    }
                }
                meta.capture = reclaimlab_record::Capture {
                    trace: true,
                    events: vec!["all simulated tracepoints".into()],
                    ..Default::default()
                };
                let r = simulate(job, &steps, meta, args.check, &progress);
                pbs[i].finish();
                results.lock().expect("no poisoned lock")[i] = Some(r);
            });
        }
    });
    let wall_s = wall.elapsed().as_secs_f64();
    let mut dirs = Vec::new();
    for (job, r) in jobs
        .iter()
        .zip(results.into_inner().expect("no poisoned lock"))
    {
        let (path, summary) = r.expect("every job ran")?;
        eprintln!(
            "reclaimlab: {}: {:.0} simulated s, {} events, {} trace lines -> {}",
            job.name,
            summary.elapsed_s,
            summary.events,
            summary.trace_lines,
            path.display()
        );
        dirs.push(path);
    }
    eprintln!("reclaimlab: simulated in {wall_s:.1} s wall time");
    let report = reclaimlab_report::report_from_dirs(&dirs, reclaimlab_report::Options::default())
        .context("cannot read back the records just written")?;
    print!("{}", reclaimlab_report::render_text(&report));
    let html = args.html.clone().unwrap_or_else(|| out.join("report.html"));
    std::fs::write(&html, reclaimlab_report::render_html(&report))
        .with_context(|| format!("cannot write {}", html.display()))?;
    eprintln!("reclaimlab: HTML report: {}", html.display());
    Ok(ExitCode::SUCCESS)
}
