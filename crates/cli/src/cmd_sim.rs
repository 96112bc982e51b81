//! `reclaimlab sim WORKLOAD [--kernel P[,P...]] [--machine M|FILE] [--set K=V]... [--sweep K=V1,V2...]... [--seed N] [--out DIR] [--json] [--csv FILE] [--significance ttest|ci] [--force]`
//!
//! Simulates a workload (a built-in name or a TOML spec) under one or more
//! kernel profiles and, with `--sweep`, at every point of a parameter grid:
//! one simulation per (profile × sweep point), each writing its own run
//! record. Each step of a simulation boots its own machine, so every step
//! of every run is a job for a bounded pool of worker threads (one per
//! core), heaviest first; `sim_steps` puts each run's record together in
//! step order.
//! Then prints the comparison (the first run is the baseline). Every input is
//! checked before the first simulation starts or the first directory is
//! made; records depend only on the arguments, never on thread scheduling.
//!
//! SIGINT, SIGTERM or SIGHUP stops the simulations within a simulated
//! vmstat interval: the unfinished records' partial directories are removed,
//! the finished records stay, and the process exits with status 130. A second
//! signal ends the process at once (the next `sim` writing the same records
//! removes what it left).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::{profile, KernelProfile};
use reclaimlab_kernel::SimConfig;
use reclaimlab_record::{Origin, RunMeta};
use reclaimlab_workload::sim::{stutterp_steps, StepSpec};
use reclaimlab_workload::spec::{Spec, WorkerKind};
use reclaimlab_workload::stutterp::StutterpParams;

use crate::sim_params::{
    apply_sets, dir_name, parse_sweeps, run_label, set_param, sweep_points, Settings,
};
use crate::sim_pool::{run_jobs, run_window, work_items, Job};
use crate::sim_steps::{Interrupted, Outcome};

/// Arguments of `reclaimlab sim`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `stutterp`, `mapped-file-stream`, or a workload spec file (TOML; see
    /// `reclaimlab list workloads`).
    pub workload: String,
    /// Kernel profiles to compare, comma-separated (`reclaimlab list kernels`);
    /// the first is the baseline. The default: 5.15, the series as first
    /// merged (5.16-rc1), and 5.16 as released; the series as the 2021 v2
    /// letter measured it is `reclaimcongest-v2`.
    #[arg(long, default_value = "v5.15,v5.16-rc1,v5.16", value_delimiter = ',')]
    pub kernel: Vec<String>,
    /// A built-in machine (`reclaimlab list machines`), a machine TOML file, or
    /// this host: `host`, `host:2G`, `host:all`, `host:1G,swap=2G`, `host:1G,dir=DIR`.
    #[arg(long, default_value = "slice-2021")]
    pub machine: String,
    /// Set a parameter, e.g. `--set vm.dirty_ratio=30`, or change a call
    /// site of the kernel profiles, e.g. `--set policy.noprogress=none`
    /// (`reclaimlab list params`), or a key of a spec's workers as
    /// `KIND.KEY`, e.g. `--set mlock.size_mib=384` (every worker of that kind).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Sweep a parameter over values, e.g.
    /// `--sweep throttle.noprogress.timeout_us=1000,4000,500000`.
    ///
    /// NAME is anything `--set` accepts (kernel, `policy.*` and `stutterp.*` parameters,
    /// a spec's worker keys as `KIND.KEY`, e.g. `mlock.size_mib=320,384,448`);
    /// it cannot also be given with `--set`. Every kernel profile runs at every
    /// value, each run with its own record `OUT/KERNEL,NAME=VALUE` and its own
    /// column in the report (the first kernel at the first value is the
    /// baseline). Repeat `--sweep` for the cartesian product of several
    /// parameters. Values holding commas (`stutterp.workers`) are separated by
    /// `;` instead: `--sweep 'stutterp.workers=4,8;16'`. The runs share the
    /// cores: every step of every run is a job of its own, at most one per
    /// core at a time, heaviest first.
    #[arg(long = "sweep", value_name = "NAME=V1,V2,...")]
    pub sweep: Vec<String>,
    /// Random seed (also a parameter: `--sweep seed=1,2,3` repeats each run
    /// with those seeds).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for the run records (one subdirectory per profile and sweep point).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the HTML report here (default: OUT/report.html).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Also write every figure as CSV to FILE, a row each:
    /// `run,table,row,value` (as `reclaimlab report --csv`).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print the `reclaimlab.report/1` JSON instead of the text tables (as
    /// `reclaimlab report --json`).
    #[arg(long)]
    pub json: bool,
    /// Significance rule for the `*` marks: `ttest` (mmtests 2018-2024,
    /// p < 0.10) or `ci` (mmtests since 2024-11, mean ± 1.96·s intervals).
    #[arg(long, default_value = "ttest", value_parser = ["ttest", "ci"])]
    pub significance: String,
    /// Also record the per-batch `mm_vmscan_lru_shrink_inactive` events.
    #[arg(long)]
    pub trace_verbose: bool,
    /// Check the kernel's conservation invariants at every sample (slow).
    #[arg(long)]
    pub check: bool,
    /// Refuse to start when the simulations would need more host memory
    /// than this (e.g. `8G`, `512M`); the default is the host's available
    /// memory (`MemAvailable`). The need is estimated from the machine and
    /// the workload before anything is allocated.
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Write into an --out folder that holds records of an earlier `sim`
    /// this one does not replace (they stay beside the new ones).
    #[arg(long)]
    pub force: bool,
}

fn record_machine(m: &Machine, hz: u64) -> reclaimlab_record::Machine {
    reclaimlab_record::Machine {
        name: m.name.clone(),
        cpus: m.cpus,
        nodes: m.nodes,
        // MemTotal, as a real run records it (/proc/meminfo).
        memory_bytes: m.mem_total_bytes(),
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
                seek_us: Some(d.seek_us),
                scheduler: Some(d.effective_scheduler().name().into()),
                max_sectors_kb: Some(d.max_sectors_kb),
                wbt_lat_usec: Some(d.effective_wbt_lat_usec()),
            })
            .collect(),
    }
}

/// How `sim` reacts to SIGINT, SIGTERM and SIGHUP: the first signal sets
/// `stop`, which the simulations poll; a signal once `exit_now` is set (by a
/// first signal, or by [`Signals::exit_at_once`]) ends the process with status
/// 130 on the spot.
struct Signals {
    stop: Arc<AtomicBool>,
    exit_now: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        use signal_hook::flag;
        let stop = Arc::new(AtomicBool::new(false));
        let exit_now = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // The shutdown first, so that it sees the flag as the previous
            // signal left it.
            flag::register_conditional_shutdown(sig, 130, Arc::clone(&exit_now))
                .and_then(|_| flag::register(sig, Arc::clone(&exit_now)))
                .and_then(|_| flag::register(sig, Arc::clone(&stop)))
                .context("cannot install the signal handlers")?;
        }
        Ok(Signals { stop, exit_now })
    }

    /// Whether a signal asked to stop.
    fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// From now on a signal ends the process at once: nothing is being
    /// written that a signal could leave half-done.
    fn exit_at_once(&self) {
        self.exit_now.store(true, Ordering::SeqCst);
    }
}

/// Removes what is left of this process's partial records in `out` (dropping
/// an unfinished [`reclaimlab_record::RecordWriter`] already removes its own; this catches one
/// whose removal failed). Returns the ones that could not be removed.
fn remove_own_partials(out: &Path) -> Vec<PathBuf> {
    let suffix = format!(".partial-{}", std::process::id());
    let mut left = Vec::new();
    let Ok(entries) = std::fs::read_dir(out) else {
        return left;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') && name.ends_with(&suffix) {
            let p = e.path();
            if std::fs::remove_dir_all(&p).is_err() && p.exists() {
                left.push(p);
            }
        }
    }
    left
}

/// Reports a `sim` stopped by a signal: the finished records (kept), the runs
/// that failed on their own, and the unfinished records (removed). Status 130.
fn interrupted(jobs: &[Job], results: Vec<Option<Outcome>>, out: &Path) -> ExitCode {
    let mut kept = Vec::new();
    for (job, r) in jobs.iter().zip(results) {
        match r {
            Some(Ok((path, _))) => kept.push(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.display().to_string()),
            ),
            Some(Err(e)) if !e.is::<Interrupted>() => {
                eprintln!("reclaimlab: run {} failed: {e:#}", job.name);
            }
            _ => {}
        }
    }
    let left = remove_own_partials(out);
    let kept = if kept.is_empty() {
        "none".to_string()
    } else {
        kept.join(", ")
    };
    if left.is_empty() {
        eprintln!(
            "reclaimlab: interrupted; removed the unfinished records in {} (finished records kept: {kept})",
            out.display()
        );
    } else {
        let left: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "reclaimlab: interrupted; could not remove the unfinished records {} (finished records kept: {kept})",
            left.join(", ")
        );
    }
    ExitCode::from(130)
}

/// The workload of a `sim`: stutterp (sized per run, since `vm.dirty_ratio`
/// and `stutterp.*` may be swept) or a spec file (the same steps for all).
enum Workload {
    Stutterp,
    Spec {
        name: String,
        file: String,
        /// The spec as read; each run applies its `--set`/`--sweep` worker
        /// keys (`mlock.size_mib`) to a copy, then makes its steps and its
        /// `spec.*` record settings (`Spec::to_params`) from that.
        spec: Box<Spec>,
        /// The cgroup version its cgroups are written for, if it says.
        memcg_version: Option<u64>,
    },
}

/// Runs `reclaimlab sim`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let significance =
        reclaimlab_report::Significance::parse(&args.significance).with_context(|| {
            format!(
                "--significance {}: expected `ttest` or `ci`",
                args.significance
            )
        })?;
    let max_memory = args
        .max_memory
        .as_deref()
        .map(|s| reclaimlab_host::parse_size("--max-memory", s))
        .transpose()?;
    let crate::machine_arg::Resolved {
        machine,
        host_toml,
        cpu_slowdown,
        costs: machine_costs,
    } = crate::machine_arg::resolve(&args.machine)?;
    let mut profiles: Vec<&'static KernelProfile> = Vec::new();
    for k in &args.kernel {
        let names: Vec<&str> = reclaimlab_kernel::profile::profiles()
            .iter()
            .map(|p| p.name)
            .collect();
        let p = profile(k).with_context(|| {
            format!(
                "--kernel {k}: unknown kernel profile{} (known: {}; `reclaimlab list kernels`)",
                crate::suggest::hint(k, &names),
                names.join(", ")
            )
        })?;
        if profiles.iter().any(|q| q.name == p.name) {
            bail!(
                "--kernel {}: `{k}` is given twice; each profile runs once (its record is OUT/{k})",
                args.kernel.join(",")
            );
        }
        profiles.push(p);
    }
    let workload = if args.workload == "stutterp" {
        Workload::Stutterp
    } else {
        let spec = if Path::new(&args.workload).exists() || args.workload.ends_with(".toml") {
            Spec::load(&args.workload)?
        } else if let Some(spec) = Spec::builtin(&args.workload) {
            spec
        } else {
            let mut names = vec!["stutterp"];
            names.extend(reclaimlab_workload::spec::BUILTIN.iter().map(|b| b.0));
            bail!(
                "workload `{}`: not a built-in workload ({}) and no such file; `reclaimlab list workloads` shows the choices",
                args.workload,
                names.join(", ")
            );
        };
        Workload::Spec {
            name: spec.name.clone(),
            file: args.workload.clone(),
            memcg_version: spec.memcg_version(),
            spec: Box::new(spec),
        }
    };
    let spec_of = |w: &Workload| match w {
        Workload::Stutterp => None,
        Workload::Spec { spec, .. } => Some(spec.as_ref().clone()),
    };
    // Validate --set once against the first profile's defaults.
    let mut sp = StutterpParams::default();
    let mut first_spec = spec_of(&workload);
    apply_sets(
        &args.set,
        &mut Settings {
            params: &mut Params::defaults(profiles[0]),
            policy: &mut profiles[0].clone(),
            sp: &mut sp,
            seed: &mut args.seed.clone(),
            spec: first_spec.as_mut(),
        },
    )?;
    let (workload_name, spec_label) = match &workload {
        Workload::Stutterp => ("stutterp".to_string(), "stutterp".to_string()),
        Workload::Spec { name, file, .. } => (name.clone(), file.clone()),
    };
    let sweeps = parse_sweeps(&args.sweep, &args.set, &profiles, first_spec.as_ref())?;
    let points = sweep_points(&sweeps);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/sim-{workload_name}")));
    // Plan every run (parameters, sizing, record) before anything is written.
    let mut jobs: Vec<Job> = Vec::new();
    for p in &profiles {
        for (pi, point) in points.iter().enumerate() {
            let mut params = Params::defaults(p);
            // A guest's slower CPU (--machine guest:…,cpu-slowdown=F), before --set.
            crate::machine_arg::scale_costs(&mut params, cpu_slowdown);
            for (k, v) in &machine_costs {
                params
                    .set(k, v)
                    .map_err(|e| anyhow::anyhow!("--machine {}: {k}={v}: {e}", args.machine))?;
            }
            // The hierarchy the machine's or the spec's cgroups are on,
            // unless --set memcg.version says otherwise.
            if let Some(wc) = &machine.workload_cgroup {
                params.memcg_version = u64::from(wc.version);
            }
            if let Workload::Spec {
                memcg_version: Some(v),
                ..
            } = &workload
            {
                params.memcg_version = *v;
            }
            let mut sp = StutterpParams::default();
            let mut policy = (*p).clone();
            let mut seed = args.seed;
            let mut spec = spec_of(&workload);
            let mut to = Settings {
                params: &mut params,
                policy: &mut policy,
                sp: &mut sp,
                seed: &mut seed,
                spec: spec.as_mut(),
            };
            apply_sets(&args.set, &mut to)?;
            for (k, v) in point {
                set_param(k, v, &mut to).map_err(|e| anyhow!("--sweep {k}={v}: {e}"))?;
            }
            let name = run_label(p, &policy, point);
            let steps = match &workload {
                Workload::Stutterp => stutterp_steps(&sp, &machine, params.dirty_ratio as u32)
                    .map_err(|e| {
                        let run = if point.is_empty() {
                            String::new()
                        } else {
                            format!(" (run {name})")
                        };
                        anyhow!("stutterp on machine `{}`{run}: {e}", machine.name)
                    })?,
                Workload::Spec { file, .. } => {
                    let spec = spec.as_ref().expect("a spec workload has its spec");
                    // The spec as this run has it (its --set and --sweep
                    // worker keys applied) must fit the machine.
                    let at: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    let what = if at.is_empty() {
                        with_sets(file, &args.set)
                    } else {
                        format!("{} at --sweep {}", with_sets(file, &args.set), at.join(" "))
                    };
                    check_spec_on_machine(spec, &what, &machine)?;
                    vec![StepSpec::from_spec(spec)]
                }
            };
            let mut cfg = SimConfig::new(machine.clone(), &policy, params, seed);
            cfg.trace.verbose = args.trace_verbose;
            let mut meta = RunMeta::new(name.clone(), Origin::Sim, p.name);
            meta.machine = record_machine(&machine, cfg.params.hz);
            meta.workload = reclaimlab_record::Workload {
                name: workload_name.clone(),
                spec: spec_label.clone(),
            };
            meta.seed = Some(seed);
            let limited = machine.workload_cgroup.is_some()
                || steps.iter().any(|st| {
                    st.cgroups.iter().any(|c| {
                        c.max != reclaimlab_kernel::mm::memcontrol::PAGE_COUNTER_MAX
                            || c.high != reclaimlab_kernel::mm::memcontrol::PAGE_COUNTER_MAX
                    })
                });
            if limited {
                meta.reclaim_scope = if cfg.params.memcg_version == 1 {
                    reclaimlab_record::ReclaimScope::MemcgV1
                } else {
                    reclaimlab_record::ReclaimScope::MemcgV2
                };
            }
            for (k, v) in cfg.params.to_pairs() {
                meta.params.insert(k.to_string(), v);
            }
            for (k, v) in policy.policy_pairs() {
                meta.params.insert(k.to_string(), v);
            }
            // What the simulated kernel booted with, as a real record reads
            // it from /proc/sys/vm (0 means "the kernel's default" to --set).
            meta.params.insert(
                "vm.min_free_kbytes".to_string(),
                reclaimlab_kernel::mm::boot_min_free_kbytes(
                    cfg.params.min_free_kbytes,
                    machine.thp,
                    machine.populated_zones_upto_normal(),
                    machine.managed_pages(),
                    cfg.params.watermark_scale_factor,
                )
                .to_string(),
            );
            if let Some(t) = machine.thp {
                meta.params
                    .insert("machine.thp".to_string(), t.name().to_string());
            }
            let workload_params = match &workload {
                Workload::Stutterp => sp.to_params(),
                Workload::Spec { .. } => spec.as_ref().map(Spec::to_params).unwrap_or_default(),
            };
            meta.params.extend(workload_params);
            meta.capture = reclaimlab_record::Capture {
                trace: true,
                events: vec!["all simulated tracepoints".into()],
                ..Default::default()
            };
            let dir = out.join(dir_name(&name, p.name, pi));
            if jobs.iter().any(|j| j.dir == dir) {
                bail!(
                    "two runs would share the record {} (please report this as a bug)",
                    dir.display()
                );
            }
            jobs.push(Job {
                name,
                cfg,
                steps,
                meta,
                dir,
            });
        }
    }
    let planned: Vec<PathBuf> = jobs.iter().map(|j| j.dir.clone()).collect();
    crate::out_dir::check_out(&out, &planned, args.force)?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let items = work_items(&jobs, run_window(cores));
    let threads = cores.min(items.len()).max(1);
    // Host memory: estimated and checked before anything is allocated or written.
    let per_job = jobs
        .iter()
        .map(|j| crate::sim_memory::job_bytes(&machine, &j.steps))
        .max()
        .unwrap_or(0);
    crate::sim_memory::check(
        &format!(
            "--machine {} (machine `{}`: {} MiB, swap {} MiB) with workload {}",
            args.machine, machine.name, machine.memory_mib, machine.swap_mib, spec_label
        ),
        per_job,
        threads,
        max_memory,
        crate::sim_memory::mem_available(),
    )?;
    crate::machine_arg::save_host_profile(host_toml.as_deref(), &out)?;
    let signals = Signals::install()?;
    let (min_s, max_s) = jobs.iter().fold((f64::MAX, 0.0f64), |(lo, hi), j| {
        (lo.min(j.total_s()), hi.max(j.total_s()))
    });
    let each_s = if max_s - min_s < 0.5 {
        format!("{max_s:.0}")
    } else {
        format!("{min_s:.0} to {max_s:.0}")
    };
    let grid = if points.len() > 1 {
        format!(" at {} sweep point(s)", points.len())
    } else {
        String::new()
    };
    let boot_memory = if machine.boot_reserved_kib + machine.boot_used_kib > 0 {
        format!(
            "; MemTotal {} KiB, {} KiB in use at boot",
            machine.mem_total_bytes() >> 10,
            machine.boot_used_pages() * 4
        )
    } else {
        String::new()
    };
    eprintln!(
        "reclaimlab: simulating {} on `{}` ({} CPUs, {} MiB{boot_memory}) under {}{grid}: {} run(s) of {} step(s), {each_s} simulated s each, as {} job(s) on {threads} thread(s)",
        workload_name,
        machine.name,
        machine.cpus,
        machine.memory_mib,
        args.kernel.join(", "),
        jobs.len(),
        jobs[0].steps.len(),
        items.len(),
    );
    let wall = std::time::Instant::now();
    let (results, walls) = run_jobs(&jobs, &items, threads, args.check, &signals.stop);
    // Every writer is finished or dropped: a signal from now on may end the
    // process at once. Armed before looking at `stop`, so that no signal
    // goes unanswered.
    signals.exit_at_once();
    if signals.stop_requested() {
        return Ok(interrupted(&jobs, results, &out));
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let mut dirs = Vec::new();
    let mut failed = Vec::new();
    for ((job, r), wall) in jobs.iter().zip(results).zip(walls) {
        match r.expect("every job ran") {
            Ok((path, summary)) => {
                eprintln!(
                    "reclaimlab: {}: {:.0} simulated s in {wall:.1} s of one core ({:.1} times real time), {} events, {} trace lines -> {}",
                    job.name,
                    summary.elapsed_s,
                    summary.elapsed_s / wall.max(1e-9),
                    summary.events,
                    summary.trace_lines,
                    path.display()
                );
                if let Some(note) = crate::sim_steps::rate_note(&summary.rate_passed) {
                    eprintln!("reclaimlab: {}: {note}", job.name);
                }
                let x = &summary.xfs;
                if x.reclaimed + x.skipped + x.cluster_writes + x.commits > 0 {
                    eprintln!(
                        "reclaimlab: {}: XFS inode reclaim freed {} inodes, skipped {} dirty or flushing, blocked {} times for {:.2} s; {} cluster buffers written, {} read back by flushes and {} by creates; {} creates waited for log space; log: {} checkpoints ({:.1} MiB), {} log forces, {} commits throttled at the CIL limit, {} inodes pinned at reclaim, {} pinned items met by xfsaild",
                        job.name,
                        x.reclaimed,
                        x.skipped,
                        x.reclaim_waits,
                        x.reclaim_wait_ns as f64 / 1e9,
                        x.cluster_writes,
                        x.buffer_reads,
                        x.create_buffer_reads,
                        x.log_waits,
                        x.checkpoints,
                        x.checkpoint_bytes as f64 / (1 << 20) as f64,
                        x.log_forces,
                        x.cil_throttles,
                        x.reclaim_pinned,
                        x.ail_pinned
                    );
                }
                if summary.lru_lock_spin_s > 0.0 {
                    eprintln!(
                        "reclaimlab: {}: {:.3} s of system time spinning on lru_lock (kswapd included)",
                        job.name, summary.lru_lock_spin_s
                    );
                }
                dirs.push(path);
            }
            Err(e) => failed.push((job.name.clone(), e)),
        }
    }
    eprintln!("reclaimlab: simulated in {wall_s:.1} s wall time");
    if let Some((name, e)) = failed.into_iter().next() {
        let others = jobs.len() - dirs.len() - 1;
        let also = if others > 0 {
            format!(" ({others} other run(s) failed too)")
        } else {
            String::new()
        };
        return Err(e.context(format!("run {name}{also}")));
    }
    let command = crate::out_dir::command_line();
    crate::out_dir::write_order(&out, &dirs, &command)?;
    crate::sweep_check::warn_identical(&dirs, &crate::sweep_check::names(&args.sweep));
    let opts = reclaimlab_report::Options { significance };
    let mut report = reclaimlab_report::report_from_dirs(&dirs, opts)
        .context("cannot read back the records just written")?;
    report.command = Some(command);
    if args.json {
        crate::write_file::to_stdout(reclaimlab_report::render_json(&report))?;
    } else {
        crate::write_file::to_stdout(reclaimlab_report::render_text(&report))?;
    }
    let html = args.html.clone().unwrap_or_else(|| out.join("report.html"));
    crate::write_file::write_whole(&html, &reclaimlab_report::render_html(&report))
        .with_context(|| format!("cannot write {}", html.display()))?;
    eprintln!("reclaimlab: HTML report: {}", html.display());
    if let Some(path) = &args.csv {
        crate::write_file::write_whole(path, &reclaimlab_report::render_csv(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("reclaimlab: CSV report: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The spec's name for error messages, with the `--set`s that changed it.
fn with_sets(file: &str, sets: &[String]) -> String {
    if sets.is_empty() {
        file.to_string()
    } else {
        format!("{file} with --set {}", sets.join(" --set "))
    }
}

/// What a spec asks of the machine: the devices its workers name, and
/// cgroup limits within the memory the workload gets.
fn check_spec_on_machine(spec: &Spec, file: &str, machine: &Machine) -> anyhow::Result<()> {
    for (i, wk) in spec.workers.iter().enumerate() {
        if wk.kind == reclaimlab_workload::spec::WorkerKind::FsCreate && wk.file_size > 0 {
            bail!(
                "{file}: worker #{}: file_size = {}: the simulator models empty files only (fs_mark -s 0); set file_size = 0, or run it on the real kernel with `reclaimlab run`",
                i + 1,
                wk.file_size
            );
        }
        if let Some(d) = &wk.device {
            if !machine.devices.iter().any(|x| &x.name == d) {
                let names: Vec<&str> = machine.devices.iter().map(|x| x.name.as_str()).collect();
                bail!(
                    "{file}: worker #{}: device = `{d}` is not a device of machine `{}` (its devices: {}); name one of them or pick a machine that has it",
                    i + 1,
                    machine.name,
                    names.join(", ")
                );
            }
        }
    }
    let cgs =
        reclaimlab_workload::cgroups::memcg_specs(&spec.cgroups, machine.workload_memory_mib())
            .map_err(|e| {
                anyhow!(
                    "{file}: {e} (machine `{}` gives the workload {} MiB)",
                    machine.name,
                    machine.workload_memory_mib()
                )
            })?;
    for (i, wk) in spec.workers.iter().enumerate() {
        if wk.kind == WorkerKind::Mlock {
            let want = wk.size_mib.saturating_mul(u64::from(wk.count));
            let have = machine.workload_memory_mib();
            if want >= have {
                bail!(
                    "{file}: worker #{}: mlock of {want} MiB (size_mib {} x count {}) does not fit in the {have} MiB machine `{}` gives the workload: locked memory cannot be reclaimed, so the kernel would only OOM-kill; lock less than {have} MiB (or pick a larger --machine)",
                    i + 1,
                    wk.size_mib,
                    wk.count,
                    machine.name
                );
            }
            if let Some(c) = cgs.iter().find(|c| Some(&c.name) == wk.cgroup.as_ref()) {
                let max_mib = c.max / 256;
                if c.max != reclaimlab_kernel::mm::memcontrol::PAGE_COUNTER_MAX && want >= max_mib {
                    bail!(
                        "{file}: worker #{}: mlock of {want} MiB does not fit in cgroup `{}` (its max is {max_mib} MiB): lock less than {max_mib} MiB or raise the cgroup's max",
                        i + 1,
                        c.name
                    );
                }
            }
        }
    }
    Ok(())
}
