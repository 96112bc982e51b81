//! Steps 1–2 of a run: undo the leftovers of crashed runs, then check and
//! plan everything that can be before the host is touched.

use super::*;
use reclaimlab_workload::spec::WorkerKind;

/// What a run will do, worked out before anything on the host is created:
/// the parameters and sysctls, the steps, the names and directories.
pub(super) struct RunPlan {
    pub(super) params: StutterpParams,
    pub(super) sysctls: Vec<Sysctl>,
    /// Leftovers of crashed runs undone first (for the outcome).
    pub(super) cleaned: Vec<String>,
    pub(super) ctrl: Option<cgroup::MemoryController>,
    pub(super) fio_path: PathBuf,
    /// The memory the workload is sized for, bytes.
    pub(super) memory: u64,
    pub(super) cpus: u32,
    /// `vm.dirty_ratio` as the run will have it.
    pub(super) dirty_after: u32,
    pub(super) sizing_ratio: Option<u32>,
    pub(super) steps_work: Vec<plan::StepWork>,
    pub(super) duration_s: f64,
    pub(super) spec_warmup: Option<f64>,
    /// `reclaimlab-PID`: the cgroup's, data directory's and swap file's name.
    pub(super) name: String,
    pub(super) data_parent: PathBuf,
    pub(super) out: PathBuf,
    /// A spec's cgroups, under the run's.
    pub(super) cg_plans: Vec<cgtree::CgroupPlan>,
    /// A spec's devices.
    pub(super) disk_plans: Vec<disks::DiskPlan>,
}

/// Steps 1–2 of a run (see the module documentation): undoes the leftovers
/// of crashed runs, then checks and plans everything that can be checked
/// before the host is touched.
pub(super) fn plan_run(opts: &RunOptions, source: &Source) -> Result<RunPlan> {
    let mut params = StutterpParams::default();
    let sysctls = apply_sets(opts, &mut params)?;
    if let Source::Spec(_) = source {
        if let Some((k, _)) = opts.sets.iter().find(|(k, _)| k.starts_with("stutterp.")) {
            return Err(HostError::with_fix(
                format!("--set {k}: stutterp parameters do not apply to a workload spec"),
                "drop the --set; edit the spec file instead",
            ));
        }
    }
    // Leftovers of crashed runs go first: their swap file or cgroup must not be
    // mistaken for this host's own.
    let mut cleaned = Vec::new();
    if sys::is_root() {
        let (c, errs) = state::clean_leftovers(&opts.state_dir);
        for l in &c {
            say(l);
        }
        for e in &errs {
            say(&format!("could not clean a leftover: {e}"));
        }
        cleaned = c;
    }
    // Anon workers need swap to be reclaimable; a spec of file workers does not.
    let needs_swap = match source {
        Source::Stutterp => true,
        Source::Spec(s) => s
            .workers
            .iter()
            .any(|w| matches!(w.kind, WorkerKind::AnonHog | WorkerKind::MmapLatency)),
    };
    let (ctrl, fio_path, memory) = preflight(opts, needs_swap)?;
    let (mut cg_plans, mut disk_plans) = (Vec::new(), Vec::new());
    let names_devices =
        matches!(source, Source::Spec(s) if s.workers.iter().any(|w| w.device.is_some()));
    if let (Some(m), false) = (&opts.machine, names_devices) {
        return Err(HostError::with_fix(
            format!(
                "--machine {m}: `run` takes only the devices of a machine, for a spec whose workers name them (`device =`), and no worker of `{}` does",
                opts.workload
            ),
            "drop --machine (`run` always runs on this host; `sim --machine` simulates another)",
        ));
    }
    if let Source::Spec(spec) = source {
        disk_plans = disks::plan_disks(spec, opts.machine.as_deref(), &opts.devices)?;
        if !spec.cgroups.is_empty() || !disk_plans.is_empty() {
            let Some(c) = &ctrl else {
                return Err(HostError::with_fix(
                    format!(
                        "{}: the spec's cgroups and devices are made under the run's memory cgroup, and this host has no memory controller",
                        opts.workload
                    ),
                    cgroup::fix_command(&sys::mounts()),
                ));
            };
            let (mem_total, _) = sys::mem_and_swap();
            let limit = if opts.scope == Scope::Cgroup {
                memory
            } else {
                mem_total
            };
            cg_plans = cgtree::plan_tree(spec, c.version, limit)?;
            if !disk_plans.is_empty() {
                disks::preflight(c.version, Some(&c.mount))?;
            }
        }
    }
    let cpus = sys::cpus();
    let machine_dirty = sys::read_u64("/proc/sys/vm/dirty_ratio").unwrap_or(20) as u32;
    let dirty_after: u32 = sysctls
        .iter()
        .find(|s| s.path.ends_with("vm/dirty_ratio"))
        .and_then(|s| s.value.trim().parse().ok())
        .unwrap_or(machine_dirty);
    let mut sizing_ratio = None;
    let (steps_work, duration_s, spec_warmup) = match source {
        Source::Stutterp => {
            let sizing = params
                .sizing(memory, dirty_after)
                .map_err(|e| HostError::with_fix(e.to_string(), "--memory 1G"))?;
            sizing_ratio = Some(sizing.dirty_ratio);
            let counts = params
                .worker_counts(cpus)
                .map_err(|e| HostError::with_fix(e.to_string(), "reclaimlab list params"))?;
            let mut plans = Vec::new();
            for t in &counts {
                plans.push(
                    params
                        .step(&sizing, *t)
                        .map_err(|e| HostError::with_fix(e.to_string(), "--memory 1G"))?,
                );
            }
            (
                plan::stutterp_steps(&params, &counts, &plans),
                params.duration_s as f64,
                None,
            )
        }
        Source::Spec(spec) => (
            vec![plan::spec_step(spec)],
            opts.duration_s.map_or(spec.duration_s, |d| d as f64),
            Some(spec.warmup_s),
        ),
    };
    let pid = std::process::id();
    let name = format!("{}{pid}", state::PREFIX);
    let data_parent = opts
        .data_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    if !data_parent.is_dir() {
        return Err(HostError::with_fix(
            format!("--data-dir {}: not a directory", data_parent.display()),
            "give an existing directory on a local disk",
        ));
    }
    let calibrate = spec_warmup.is_none() && params.warmup_s.is_none();
    let need = steps_work.iter().map(|s| s.disk_bytes).max().unwrap_or(0)
        + disks::disk_bytes(&disk_plans)
        + opts.swap_file.unwrap_or(0)
        + params.calibrate_mib * MIB * u64::from(calibrate);
    if let Some(free) = doctor::free_bytes(&data_parent) {
        if free < need + need / 10 {
            return Err(HostError::with_fix(
                format!(
                    "{} has {} free; the run needs about {} (fio files, swap file, calibration)",
                    data_parent.display(),
                    human_bytes(free),
                    human_bytes(need)
                ),
                "--data-dir DIR on a larger filesystem, or a smaller --memory",
            ));
        }
    }
    let out = opts.out.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let wl = match source {
            Source::Stutterp => "stutterp".to_string(),
            Source::Spec(s) => s
                .name
                .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"),
        };
        PathBuf::from(format!("real-{wl}-{secs}"))
    });
    if out.exists()
        && !out.join("run.json").is_file()
        && fs::read_dir(&out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(HostError::with_fix(
            format!("--out {}: exists and is not a run record", out.display()),
            "choose another --out, or remove it",
        ));
    }
    Ok(RunPlan {
        params,
        sysctls,
        cleaned,
        ctrl,
        fio_path,
        memory,
        cpus,
        dirty_after,
        sizing_ratio,
        steps_work,
        duration_s,
        spec_warmup,
        name,
        data_parent,
        out,
        cg_plans,
        disk_plans,
    })
}
