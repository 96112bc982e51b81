//! `reclaimlab run`: a workload on the real, running kernel, recorded as a run record.
//!
//! The order of a run, and why:
//! 1. Check everything that can be checked before touching the host (root, fio,
//!    memory controller, swap, sizes, disk space), so a bad invocation changes nothing.
//! 2. Undo the leftovers of crashed runs (state files in `/run/reclaimlab`).
//! 3. Create, each logged to this run's state file first: the data dir, a
//!    temporary swap file, the memory cgroup, the tracefs mount (if needed) and a
//!    private trace instance.
//! 4. Calibrate (a `dd` write, for the warmup), then start the capture: the
//!    `trace_pipe` thread and the 1 s `/proc/vmstat` + PSI sampler.
//! 5. Per worker count: fio writers (and reader) alone for the warmup, then the
//!    memory hogs and the mmap-latency worker for the duration; all of them in
//!    the cgroup; then kill the cgroup's processes and collect their samples.
//! 6. Stop the capture, write `run.json` and move the record into place.
//! 7. Undo everything in reverse, also on Ctrl-C, SIGTERM or a panic.

mod hostload;
mod kthreads;
mod oomwork;
mod prepare;
mod setup;
mod step;

use prepare::{plan_run, RunPlan};
use setup::{calibrate, cgroup_notes, cgroup_psi, create_sandbox, set_up_trace};

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use reclaimlab_record::{
    Device, Duration, Machine, Origin, ReclaimScope, RecordWriter, RunMeta, Step, TaskTime,
    Workload,
};
use reclaimlab_workload::spec::{is_worker_key, Spec};
use reclaimlab_workload::stutterp::{StutterpParams, MIB};

use crate::cgroup::{self, Sandbox, Version};
use crate::children::{self, reap};
use crate::error::{human_bytes, HostError, Result};
use crate::state::{self, Entry, RunState};
use crate::{cgtree, disks, doctor, fio, plan, swap, sys, tracefs, workers};

/// Where the run confines its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A memory cgroup with a limit (limit reclaim).
    Cgroup,
    /// The whole machine (global reclaim); needs explicit confirmation.
    Host,
}

/// Everything `reclaimlab run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Workload name (`stutterp`) or a spec file.
    pub workload: String,
    /// The memory limit of the cgroup (cgroup scope).
    pub memory: u64,
    /// Cgroup or whole host.
    pub scope: Scope,
    /// `--yes-i-own-this-host`.
    pub confirm_host: bool,
    /// Size of a temporary swap file to create, if any.
    pub swap_file: Option<u64>,
    /// `--set K=V` pairs, in order.
    pub sets: Vec<(String, String)>,
    /// `--duration S`: the stutterp duration per step.
    pub duration_s: Option<u64>,
    /// Record directory (default `./real-stutterp-<unix time>`).
    pub out: Option<PathBuf>,
    /// Parent of the data directory (default `/var/tmp`).
    pub data_dir: Option<PathBuf>,
    /// The run's name in reports (default: `uname -r`).
    pub name: Option<String>,
    /// The binary whose hidden `worker` subcommands run the workers.
    pub exe: PathBuf,
    /// Where state files go (default [`state::STATE_DIR`]).
    pub state_dir: PathBuf,
    /// The machine whose devices a spec's `device =` names (`--machine`).
    pub machine: Option<String>,
    /// That machine's devices and bandwidths.
    pub devices: Vec<disks::DeviceBw>,
}

impl RunOptions {
    /// Options with defaults for `workload`.
    pub fn new(workload: &str, exe: PathBuf) -> RunOptions {
        RunOptions {
            workload: workload.to_string(),
            memory: 1 << 30,
            scope: Scope::Cgroup,
            confirm_host: false,
            swap_file: None,
            sets: Vec::new(),
            duration_s: None,
            out: None,
            data_dir: None,
            name: None,
            exe,
            state_dir: PathBuf::from(state::STATE_DIR),
            machine: None,
            devices: Vec::new(),
        }
    }
}

/// What a finished (or interrupted) run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The record directory.
    pub record: PathBuf,
    /// Whether a signal cut the run short.
    pub interrupted: bool,
    /// Leftovers of earlier runs that were cleaned up at the start.
    pub cleaned: Vec<String>,
    /// The run's metadata as written.
    pub meta: RunMeta,
    /// Trace lines captured.
    pub trace_lines: u64,
    /// vmstat rows written.
    pub vmstat_rows: u64,
    /// Latency samples written.
    pub latency_samples: u64,
    /// CPU seconds the capture thread used.
    pub capture_cpu_s: f64,
}

fn say(msg: &str) {
    eprintln!("reclaimlab run: {msg}");
}

/// Installs SIGINT/SIGTERM/SIGHUP handlers that set the returned flag; a second
/// SIGINT exits at once (the next start cleans up).
pub fn install_signal_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let e = |e: std::io::Error| HostError::new(format!("cannot install signal handlers: {e}"));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag)).map_err(e)?;
        signal_hook::flag::register(sig, Arc::clone(&flag)).map_err(e)?;
    }
    Ok(flag)
}

/// Sleeps up to `secs`, waking early when `stop` is set or `check` fails.
fn wait(stop: &AtomicBool, secs: f64, mut check: impl FnMut() -> Result<()>) -> Result<bool> {
    let end = sys::mono_ns() + (secs * 1e9) as u64;
    while sys::mono_ns() < end {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        check()?;
        let left = end.saturating_sub(sys::mono_ns());
        std::thread::sleep(StdDuration::from_nanos(left.min(100_000_000)));
    }
    Ok(!stop.load(Ordering::Relaxed))
}

/// The things a run created; undone by [`Resources::undo`] or on drop.
struct Resources {
    state: RunState,
    sandbox: Option<Sandbox>,
    instance: Option<tracefs::Instance>,
    done: bool,
}

impl Resources {
    fn undo(&mut self) -> Vec<HostError> {
        if self.done {
            return Vec::new();
        }
        self.done = true;
        if let Some(sb) = &self.sandbox {
            let _ = sb.kill_all();
        }
        self.state.undo_all()
    }
}

impl Drop for Resources {
    fn drop(&mut self) {
        for e in self.undo() {
            eprintln!("reclaimlab run: clean-up: {e}");
        }
    }
}

/// What the vmstat sampler returns: PSI at start and end, peak avg10 some/full, an error.
type SamplerOut = (Option<sys::Psi>, Option<sys::Psi>, f64, f64, Option<String>);

/// The capture threads; stopped and joined on drop (an early error return), so the
/// trace instance is no longer read when it is removed.
struct Threads {
    stop: Arc<AtomicBool>,
    trace: Option<std::thread::JoinHandle<tracefs::StreamStats>>,
    sampler: Option<std::thread::JoinHandle<SamplerOut>>,
}

impl Drop for Threads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.trace.take() {
            let _ = h.join();
        }
        if let Some(h) = self.sampler.take() {
            let _ = h.join();
        }
    }
}

/// A sysctl to set for the run (host scope only), and its old value.
#[derive(Debug, Clone)]
struct Sysctl {
    path: PathBuf,
    value: String,
}

fn sysctl_path(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(name.replace('.', "/"))
}

/// The block device holding `dir`, described for `run.json` (best effort).
fn device_of(dir: &Path, write_mb_s: f64) -> Option<Device> {
    let bd = crate::machine::block_device_of(dir)?;
    Some(Device {
        layer: if bd.mq { "blk-mq" } else { "sq" }.into(),
        queue_depth: bd.nr_requests.unwrap_or(0),
        write_mb_s,
        scheduler: bd.scheduler,
        max_sectors_kb: bd.max_sectors_kb,
        wbt_lat_usec: bd.wbt_lat_usec,
        name: bd.name,
        ..Device::default()
    })
}

/// Whether a child has exited (without reaping it).
fn exited(pid: u32) -> bool {
    // SAFETY: waitid with WNOWAIT only peeks at the child's state.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is valid to read after waitid.
    r == 0 && unsafe { info.si_pid() } != 0
}

fn tail(path: &Path, n: usize) -> String {
    let t = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = t.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Checks and resolves `--set` pairs: stutterp parameters, and `vm.*` sysctls
/// (host scope only, since they are host-wide).
fn apply_sets(opts: &RunOptions, params: &mut StutterpParams) -> Result<Vec<Sysctl>> {
    let mut sysctls = Vec::new();
    for (k, v) in &opts.sets {
        if k.starts_with("stutterp.") {
            params.set(k, v).map_err(|e| {
                HostError::with_fix(format!("--set {k}={v}: {e}"), "reclaimlab list params")
            })?;
        } else if is_worker_key(k) {
            // Applied to the spec by `with_worker_sets`.
        } else if k == "capture.events" {
            tracefs::check_events_spec(v).map_err(|e| {
                HostError::with_fix(
                    format!("--set capture.events: {e}"),
                    "--set capture.events=default",
                )
            })?;
        } else if k.starts_with("vm.") {
            let path = sysctl_path(k);
            if !path.exists() {
                return Err(HostError::with_fix(
                    format!("--set {k}: this kernel has no {}", path.display()),
                    "use a sysctl name from `sysctl -a | grep ^vm.`",
                ));
            }
            if opts.scope != Scope::Host {
                return Err(HostError::with_fix(
                    format!("--set {k}={v}: {k} is host-wide, and this run is confined to a cgroup"),
                    "drop the --set, or run with --scope host --yes-i-own-this-host on a dedicated machine",
                ));
            }
            sysctls.push(Sysctl {
                path,
                value: v.clone(),
            });
        } else {
            return Err(HostError::with_fix(
                format!("--set {k}={v}: unknown parameter `{k}` for `run`"),
                "stutterp.* parameters (reclaimlab list params), a spec's worker keys (mlock.size_mib), capture.events, or vm.* sysctls with --scope host",
            ));
        }
    }
    if let Some(d) = opts.duration_s {
        params
            .set("stutterp.duration_s", &d.to_string())
            .map_err(|e| HostError::new(format!("--duration: {e}")))?;
    }
    Ok(sysctls)
}

/// A spec with the `--set KIND.KEY=V` worker keys applied (`mlock.size_mib=950`:
/// every mlock worker), before anything is planned or created.
fn with_worker_sets(opts: &RunOptions, mut spec: Spec) -> Result<Spec> {
    for (k, v) in opts.sets.iter().filter(|(k, _)| is_worker_key(k)) {
        spec.set_worker_key(k, v).map_err(|e| {
            HostError::with_fix(
                format!("--set {k}={v}: {e}"),
                "name a worker kind and key of the spec (`reclaimlab list workloads`), e.g. --set mlock.size_mib=900",
            )
        })?;
    }
    Ok(spec)
}

/// Runs a workload on this host. See the module documentation for the order of things.
pub fn run(opts: &RunOptions, stop: Arc<AtomicBool>) -> Result<RunOutcome> {
    if opts.workload == "stutterp" {
        if let Some((k, _)) = opts.sets.iter().find(|(k, _)| is_worker_key(k)) {
            return Err(HostError::with_fix(
                format!("--set {k}: a key of a workload spec's [[worker]] entries, and stutterp is not a spec"),
                "drop the --set, or give a spec (`reclaimlab list workloads`)",
            ));
        }
        return run_workload(opts, stop, Source::Stutterp);
    }
    let run_workload = |opts: &RunOptions, stop, source: Source| {
        let source = match source {
            Source::Spec(spec) => Source::Spec(with_worker_sets(opts, spec)?),
            s => s,
        };
        run_workload(opts, stop, source)
    };
    let p = Path::new(&opts.workload);
    if !p.exists() {
        if let Some(spec) = Spec::builtin(&opts.workload) {
            return run_workload(opts, stop, Source::Spec(spec));
        }
    }
    if p.is_file() || opts.workload.ends_with(".toml") {
        let spec = Spec::load(&opts.workload).map_err(|e| {
            HostError::with_fix(
                e.to_string(),
                "fix the spec (format: `reclaimlab list workloads`), or run stutterp",
            )
        })?;
        return run_workload(opts, stop, Source::Spec(spec));
    }
    // A built-in spec by name (`reclaimlab list workloads`).
    if let Some(spec) = Spec::builtin(&opts.workload) {
        return run_workload(opts, stop, Source::Spec(spec));
    }
    Err(HostError::with_fix(
        format!(
            "workload `{}`: unknown; `run` takes `stutterp`, a built-in spec ({}) or a workload spec file (TOML)",
            opts.workload,
            reclaimlab_workload::spec::BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
        ),
        "reclaimlab run stutterp, or reclaimlab run path/to/spec.toml (see `reclaimlab list workloads`)",
    ))
}

/// Checks before anything is created. Returns the memory to size from.
fn preflight(
    opts: &RunOptions,
    needs_swap: bool,
) -> Result<(Option<cgroup::MemoryController>, PathBuf, u64)> {
    if !sys::is_root() {
        return Err(HostError::with_fix(
            "`reclaimlab run` needs root (cgroups, tracefs, swap)",
            "run it as root (sudo reclaimlab run ...); `reclaimlab doctor` lists what else is needed",
        ));
    }
    let fio = sys::which("fio").ok_or_else(|| {
        HostError::with_fix(
            "fio not found on PATH: stutterp's file writers are fio jobs",
            "apt-get install -y fio (Debian/Ubuntu) or dnf install -y fio",
        )
    })?;
    let (mem_total, _) = sys::mem_and_swap();
    let ctrl = match opts.scope {
        Scope::Host => {
            if !opts.confirm_host {
                return Err(HostError::with_fix(
                    "--scope host runs the workload against the whole machine's memory (global reclaim, heavy swapping, possibly OOM kills of other processes)",
                    "only on a dedicated test machine or VM: add --yes-i-own-this-host",
                ));
            }
            cgroup::detect()
        }
        Scope::Cgroup => {
            let c = cgroup::detect().ok_or_else(|| {
                HostError::with_fix(
                    "no cgroup hierarchy holds the memory controller: cannot sandbox the run",
                    cgroup::fix_command(&sys::mounts()),
                )
            })?;
            Some(c)
        }
    };
    let memory = match opts.scope {
        Scope::Host => mem_total,
        Scope::Cgroup => {
            if opts.workload == "stutterp" && opts.memory < 256 * MIB {
                return Err(HostError::with_fix(
                    format!(
                        "--memory {}: too small for stutterp (its mmap-latency worker alone maps 128 MiB)",
                        human_bytes(opts.memory)
                    ),
                    "--memory 1G (at least 256M)",
                ));
            }
            // A spec's own cgroups are checked against --memory when they are planned.
            if opts.memory < 16 * MIB {
                return Err(HostError::with_fix(
                    format!(
                        "--memory {}: too small for any workload",
                        human_bytes(opts.memory)
                    ),
                    "--memory 1G (at least 16M)",
                ));
            }
            if opts.memory > mem_total / 10 * 9 {
                return Err(HostError::with_fix(
                    format!(
                        "--memory {}: more than 90% of this host's {} RAM; the run would hit global reclaim, not the cgroup limit",
                        human_bytes(opts.memory),
                        human_bytes(mem_total)
                    ),
                    format!("--memory {}M or less", mem_total / 2 / MIB),
                ));
            }
            opts.memory
        }
    };
    // Anon hogs need swap to be reclaimable; a workload of locked memory and
    // file creation (the OOM seed) is meant to run without.
    if needs_swap && swap::active().is_empty() && opts.swap_file.is_none() {
        return Err(HostError::with_fix(
            "this host has no swap: stutterp's anon hogs could not be reclaimed (the run would OOM, not stall)",
            "add --swap-file 2G (a temporary swap file, removed afterwards), or add swap to the host",
        ));
    }
    if opts.swap_file.is_some() {
        for tool in ["mkswap", "swapon", "swapoff"] {
            if sys::which(tool).is_none() {
                return Err(HostError::with_fix(
                    format!("--swap-file needs `{tool}`, which is not on PATH"),
                    "apt-get install -y util-linux",
                ));
            }
        }
    }
    Ok((ctrl, fio, memory))
}

/// Where a run's steps come from.
enum Source {
    /// The built-in stutterp.
    Stutterp,
    /// A generic TOML workload spec.
    Spec(Spec),
}

/// Steps 3–7 of a run (see the module documentation), on the plan of
/// [`plan_run`].
fn run_workload(opts: &RunOptions, stop: Arc<AtomicBool>, source: Source) -> Result<RunOutcome> {
    let RunPlan {
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
    } = plan_run(opts, &source)?;

    // Before anything exists: mlock workers that cannot fit, a missing mkfs.
    let fs_tool = oomwork::check(&steps_work, memory)?;

    // 3. Create things, logging each first.
    let mut res = Resources {
        state: RunState::create_in(&opts.state_dir)?,
        sandbox: None,
        instance: None,
        done: false,
    };
    let data = data_parent.join(&name);
    res.state.log(Entry::DataDir(data.clone()))?;
    fs::create_dir_all(&data)
        .map_err(|e| HostError::io("cannot create data directory", &data, e))?;
    let mut notes: Vec<String> = Vec::new();

    if let Some(size) = opts.swap_file {
        let path = data_parent.join(format!("{name}.swap"));
        res.state.log(Entry::SwapFile(path.clone()))?;
        say(&format!(
            "creating a {} swap file {}",
            human_bytes(size),
            path.display()
        ));
        swap::create_swap_file(&path, size)?;
        notes.push(format!(
            "temporary swap file of {} (removed after the run)",
            human_bytes(size)
        ));
    }
    for s in &sysctls {
        let old = sys::read(&s.path)?.trim().to_string();
        res.state.log(Entry::Sysctl(s.path.clone(), old.clone()))?;
        sys::write(&s.path, &s.value)?;
        notes.push(format!(
            "set {} = {} (was {old}; restored after the run)",
            s.path.display(),
            s.value
        ));
    }

    let mut fs_mnt: Option<PathBuf> = None;
    if let Some((fstype, tool)) = &fs_tool {
        let img = oomwork::image_path(&data_parent, &name);
        res.state.log(Entry::FsImage(img.clone()))?;
        say(&format!(
            "creating a {} {fstype} image {} for the fs-create workers",
            human_bytes(crate::fsimage::IMAGE_BYTES),
            img.display()
        ));
        let mnt = crate::fsimage::create(&img, fstype, tool)?;
        notes.push(format!(
            "fs-create ran on a {fstype} image ({}, sparse, loop-mounted on {}; removed after the run)",
            human_bytes(crate::fsimage::IMAGE_BYTES),
            mnt.display()
        ));
        fs_mnt = Some(mnt);
    }

    let mounts = sys::mounts();
    // The filesystem of the workload's files: its page cache's folio sizes
    // follow it (report's kernel notes: ext4 from 6.16, XFS from 5.18).
    let data_fs = sys::mount_of(&mounts, &data).map(|m| m.fstype.clone());
    let (scope_label, sandbox) =
        create_sandbox(&mut res, ctrl.as_ref(), opts.scope, memory, &mounts, &name)?;
    res.sandbox = sandbox.clone();
    let made_disks = setup::create_spec_env(
        &mut res,
        sandbox.as_ref(),
        &disk_plans,
        &cg_plans,
        &data,
        &mut notes,
    )?;
    let procs: Vec<PathBuf> = sandbox
        .as_ref()
        .map(|s| s.procs_files())
        .unwrap_or_default();
    let reclaim_scope = match scope_label {
        "memcg-v1" => ReclaimScope::MemcgV1,
        "memcg-v2" => ReclaimScope::MemcgV2,
        _ => ReclaimScope::Global,
    };
    if let Some(sb) = &sandbox {
        say(&format!(
            "sandbox {} ({}, limit {})",
            sb.dir.display(),
            scope_label,
            if sb.limit > 0 {
                human_bytes(sb.limit)
            } else {
                "none".into()
            }
        ));
    }

    let events_spec = opts
        .sets
        .iter()
        .rev()
        .find(|(k, _)| k == "capture.events")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "default".into());
    // Tracefs: mount if needed, then a private instance.
    let events = set_up_trace(&mut res, &mounts, &events_spec, &name, &mut notes)?;

    // 4. Calibration (before the record's time 0, as mmtests runs it before the loop).
    let mut write_mb_s = 0.0;
    let warmup: f64 = match (spec_warmup, params.warmup_s) {
        (Some(w), _) => w,
        (None, Some(w)) => w as f64,
        (None, None) => {
            let secs = calibrate(&data, params.calibrate_mib, &procs, sandbox.as_ref(), &stop)?;
            // MiB written per second, in MB/s (10^6 bytes) as the field says.
            write_mb_s = params.calibrate_mib as f64 * 1.048_576 / secs.max(1e-3);
            let w = params.warmup_from_calibration(secs);
            notes.push(format!(
                "calibration: {} MiB in {secs:.1} s ({write_mb_s:.0} MB/s), warmup {w} s",
                params.calibrate_mib
            ));
            w as f64
        }
    };

    // The record.
    let (mem_total, _) = sys::mem_and_swap();
    let swap_total: u64 = swap::active().iter().map(|a| a.size).sum();
    let hz = sys::kernel_config().and_then(|(c, _)| sys::config_hz(&c));
    let mut meta = RunMeta::new(
        opts.name.clone().unwrap_or_else(sys::kernel_release),
        Origin::Real,
        sys::kernel_release(),
    );
    meta.machine = Machine {
        name: "host".into(),
        cpus,
        nodes: crate::machine::numa_nodes(),
        memory_bytes: memory,
        hz,
        swap_bytes: swap_total,
        devices: device_of(&data, write_mb_s).into_iter().collect(),
    };
    setup::record_disks(&mut meta, &made_disks);
    if let Some(mname) = &opts.machine {
        meta.params
            .insert("run.devices_of_machine".into(), mname.clone());
    }
    match &source {
        Source::Stutterp => {
            meta.workload = Workload {
                name: "stutterp".into(),
                spec: "stutterp".into(),
            };
            for (k, v) in params.to_params() {
                meta.params.insert(k, v);
            }
            if let Some(r) = sizing_ratio {
                meta.params
                    .insert("stutterp.dirty_ratio".into(), r.to_string());
            }
            meta.params
                .insert("stutterp.warmup_s".into(), warmup.to_string());
        }
        Source::Spec(spec) => {
            meta.workload = Workload {
                name: spec.name.clone(),
                spec: opts.workload.clone(),
            };
            for (k, v) in spec.to_params() {
                meta.params.insert(k, v);
            }
            meta.params
                .insert("spec.duration_s".into(), duration_s.to_string());
            meta.params
                .insert("spec.warmup_s".into(), warmup.to_string());
        }
    }
    meta.params
        .insert("vm.dirty_ratio".into(), dirty_after.to_string());
    for n in ["dirty_background_ratio", "swappiness", "min_free_kbytes"] {
        if let Ok(v) = sys::read(format!("/proc/sys/vm/{n}")) {
            meta.params.insert(format!("vm.{n}"), v.trim().to_string());
        }
    }
    if let Ok(v) = sys::read("/sys/kernel/mm/transparent_hugepage/enabled") {
        meta.params
            .insert("thp.enabled".into(), v.trim().to_string());
    }
    if let Some(fs) = &data_fs {
        meta.params.insert("run.data_fs".into(), fs.clone());
    }
    meta.params.insert("run.scope".into(), scope_label.into());
    meta.params
        .insert("capture.events".into(), events_spec.clone());
    meta.params
        .insert("run.memory_bytes".into(), memory.to_string());
    meta.params
        .insert("host.mem_total_bytes".into(), mem_total.to_string());
    meta.reclaim_scope = reclaim_scope;
    let writer = RecordWriter::create(&out, meta.clone())
        .map_err(|e| HostError::new(format!("cannot start the record: {e}")))?;
    let writer = Arc::new(Mutex::new(writer));

    // Time 0.
    let t0 = sys::mono_ns();
    let t_of = move |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
    let cur_step = Arc::new(AtomicU32::new(steps_work.first().map_or(0, |s| s.step)));
    let capture_stop = Arc::new(AtomicBool::new(false));
    let mut threads = Threads {
        stop: Arc::clone(&capture_stop),
        trace: None,
        sampler: None,
    };
    let mut trace_clock = String::new();
    if let Some(inst) = &res.instance {
        trace_clock = inst.clock();
        let w = Arc::clone(&writer);
        let h = inst.stream(Arc::clone(&capture_stop), move |block| {
            if let Ok(mut w) = w.lock() {
                let _ = w.trace_bytes(block.as_bytes());
            }
        })?;
        threads.trace = Some(h);
        inst.start()?;
    }
    // vmstat + PSI sampler.
    threads.sampler = Some({
        let w = Arc::clone(&writer);
        let stop_s = Arc::clone(&capture_stop);
        let step = Arc::clone(&cur_step);
        std::thread::Builder::new()
            .name("vmstat".into())
            .spawn(move || -> SamplerOut {
                let mut header: Option<Vec<String>> = None;
                let (mut psi0, mut psi1) = (None, None);
                let (mut peak_some, mut peak_full) = (0.0f64, 0.0f64);
                let mut err = None;
                let mut next = t0;
                loop {
                    let last = stop_s.load(Ordering::Acquire);
                    let now = sys::mono_ns();
                    let text = fs::read_to_string("/proc/vmstat").unwrap_or_default();
                    match reclaimlab_record::parse_proc_vmstat(&text, Path::new("/proc/vmstat"), 1)
                    {
                        Ok(snap) => {
                            let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
                            if header.is_none() {
                                let names: Vec<String> = snap.names().map(str::to_string).collect();
                                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                                if let Err(e) = w.vmstat_header(&refs) {
                                    err = Some(e.to_string());
                                }
                                header = Some(names);
                            }
                            let h = header.as_deref().unwrap_or(&[]);
                            let values: Vec<u64> = if snap.counters.len() == h.len()
                                && snap.counters.iter().zip(h).all(|((n, _), hn)| n == hn)
                            {
                                snap.counters.iter().map(|(_, v)| *v).collect()
                            } else {
                                h.iter().map(|n| snap.get(n).unwrap_or(0)).collect()
                            };
                            if let Err(e) =
                                w.vmstat_row(t_of(now), step.load(Ordering::Relaxed), &values)
                            {
                                err.get_or_insert(e.to_string());
                            }
                        }
                        Err(e) => {
                            err.get_or_insert(e.to_string());
                        }
                    }
                    if let Some(p) = fs::read_to_string("/proc/pressure/memory")
                        .ok()
                        .as_deref()
                        .and_then(sys::parse_psi)
                    {
                        if psi0.is_none() {
                            psi0 = Some(p);
                        }
                        peak_some = peak_some.max(p.some.avg10);
                        peak_full = peak_full.max(p.full.avg10);
                        psi1 = Some(p);
                    }
                    if last {
                        break;
                    }
                    next += 1_000_000_000;
                    while sys::mono_ns() < next && !stop_s.load(Ordering::Acquire) {
                        let left = next.saturating_sub(sys::mono_ns());
                        std::thread::sleep(StdDuration::from_nanos(left.min(50_000_000)));
                    }
                }
                (psi0, psi1, peak_some, peak_full, err)
            })
            .map_err(|e| HostError::new(format!("cannot start the vmstat sampler: {e}")))?
    });
    // CPU already used in the group (the calibration write) is not the run's.
    let cpu0 = sandbox.as_ref().and_then(|s| s.cpu_times());
    let host0 = hostload::read();
    let stat0 = sandbox
        .as_ref()
        .map(|s| s.memory_stat())
        .unwrap_or_default();
    let cg_psi0 = sandbox.as_ref().and_then(cgroup_psi);
    let mut lru_last: Vec<(String, u64)> = Vec::new();

    // 5. The steps.
    let mut steps: Vec<Step> = Vec::new();
    let mut tasks: Vec<TaskTime> = Vec::new();
    // kswapd's CPU per step, listed after the duration is summed (kthreads.rs).
    let mut kthread_tasks: Vec<TaskTime> = Vec::new();
    let mut latency_samples = 0u64;
    let mut failure: Option<HostError> = None;
    let mut interrupted = false;
    let top_dir = sandbox.as_ref().map(|s| s.dir.clone());
    let cpu_procs: Vec<PathBuf> = sandbox
        .as_ref()
        .and_then(|s| s.cpu_dir.as_ref().map(|d| d.join("cgroup.procs")))
        .into_iter()
        .collect();
    let procs_for = |g: Option<&str>| -> Vec<PathBuf> {
        match (&top_dir, cgtree::worker_dir(&cg_plans, g)) {
            (Some(top), Some(rel)) => {
                let mut v = vec![top.join(rel).join("cgroup.procs")];
                v.extend(cpu_procs.iter().cloned());
                v
            }
            _ => procs.clone(),
        }
    };
    let dir_for = |d: Option<&str>| -> PathBuf {
        made_disks
            .iter()
            .find(|m| Some(m.name.as_str()) == d)
            .map(|m| m.mount.join("files"))
            .unwrap_or_else(|| data.join("stutterp-data"))
    };
    let mut all_pids: Vec<u32> = Vec::new();
    let step_ctx = step::StepCtx {
        opts,
        data: &data,
        fio_path: &fio_path,
        warmup,
        duration_s,
        t0,
        stop: &stop,
        procs_for: &procs_for,
        dir_for: &dir_for,
        fs_mnt: fs_mnt.as_deref(),
        oom_root: sandbox.as_ref().map(|sb| (sb.dir.as_path(), sb.version)),
    };
    // The runner reaps fio's job processes itself (children.rs); restored after the steps.
    let was_subreaper = children::is_subreaper();
    let subreaper = was_subreaper || children::set_subreaper(true);
    'steps: for work in &steps_work {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let t = work.step;
        cur_step.store(t, Ordering::Relaxed);
        let start_ns = sys::mono_ns();
        let kthreads0 = kthreads::snapshot();
        say(&format!(
            "step {t}: {}; warmup {warmup} s, duration {duration_s} s",
            work.describe
        ));
        if opts.scope == Scope::Host {
            // mmtests: sync; echo 3 > drop_caches before each iteration (host scope only:
            // inside a cgroup it would throw away everyone else's cache).
            let _ = Command::new("sync").status();
            let _ = sys::write("/proc/sys/vm/drop_caches", "3");
        }
        let fio_dir = data.join("stutterp-data");
        let mut so = step::StepOut::default();
        let step_result = step::run_step(&step_ctx, work, &mut so);
        let step::StepOut {
            pids,
            lat_files,
            elapsed,
            worker_logs,
            notes: step_notes,
        } = so;
        notes.extend(step_notes);
        match step_result {
            Ok(true) => {}
            Ok(false) => interrupted = true,
            Err(e) => failure = Some(e),
        }
        kthread_tasks.extend(kthreads::step_tasks(&kthreads0, &kthreads::snapshot(), t));
        // fio's job processes, listed before the kill: the runner reaps them
        // after fio, for their CPU (children.rs says why).
        let fio_jobs: Vec<(u32, Vec<u32>)> = pids
            .iter()
            .filter(|(comm, p)| comm == "fio" && !exited(*p))
            .map(|(_, p)| (*p, children::children_of(*p)))
            .collect();
        // The cgroup's LRU lists while the workers still hold their pages.
        if let Some(sb) = &sandbox {
            lru_last = sb.memory_stat();
        }
        // Stop the step's workers: by group, so fio's job processes go too.
        match &sandbox {
            Some(sb) => {
                if let Err(e) = sb.kill_all() {
                    failure.get_or_insert(e);
                }
            }
            None => {
                let jobs = fio_jobs.iter().flat_map(|(_, j)| j.iter());
                for p in pids.iter().map(|(_, p)| p).chain(jobs) {
                    // SAFETY: signalling our own children and fio's.
                    unsafe { libc::kill(*p as i32, libc::SIGKILL) };
                }
            }
        }
        for (comm, p) in &pids {
            let jobs = fio_jobs
                .iter()
                .find(|(f, _)| f == p)
                .map_or(&[][..], |(_, j)| j.as_slice());
            let Some(tree) = children::reap_tree(*p, jobs, subreaper) else {
                continue;
            };
            if tree.reaped > 0 {
                notes.push(format!(
                    "step {t}: {comm} pid {p}: its {} job processes, reaped at the step's end, used user {:.3} s, system {:.3} s (in its CPU figures)",
                    tree.reaped, tree.children.0, tree.children.1
                ));
            }
            let Some((u, s)) = tree.total() else {
                notes.push(format!(
                    "step {t}: {comm} pid {p}: CPU unknown, left out of the CPU {comm} figures: {} of its job processes could not be reaped (the kernel refused PR_SET_CHILD_SUBREAPER); its parent process alone used user {:.3} s, system {:.3} s",
                    tree.lost, tree.own.0, tree.own.1
                ));
                continue;
            };
            tasks.push(TaskTime {
                comm: comm.clone(),
                pid: *p,
                step: Some(t),
                user_s: u,
                system_s: s,
                ..TaskTime::default()
            });
        }
        let end_ns = sys::mono_ns();
        steps.push(Step {
            step: t,
            start_s: t_of(start_ns),
            end_s: t_of(end_ns),
        });
        let mut samples: Vec<(f64, f64)> = Vec::new();
        for f in &lat_files {
            if let Ok(text) = fs::read_to_string(f) {
                samples.extend(workers::parse_latency_file(&text));
            }
        }
        samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        let logs = oomwork::read_worker_logs(t, &worker_logs);
        {
            let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
            for (ts, v) in samples {
                if w.latency(t, "mmap", ts, v).is_ok() {
                    latency_samples += 1;
                }
            }
            // A finite worker's run time, as the simulator's `elapsed` samples.
            for (label, pid, ts, us) in &elapsed {
                if w.latency(t, "elapsed", *ts, *us).is_ok() {
                    latency_samples += 1;
                }
                notes.push(format!(
                    "step {t}: {label} (pid {pid}) finished its passes in {:.3} s",
                    us / 1e6
                ));
            }
            // Each mlock step's time to lock, as the simulator's `mlock`
            // samples.
            for &(ts, us) in &logs.mlock_samples {
                if w.latency(t, "mlock", ts, us).is_ok() {
                    latency_samples += 1;
                }
            }
        }
        notes.extend(logs.notes);
        all_pids.extend(pids.iter().map(|(_, p)| *p));
        let _ = fs::remove_dir_all(&fio_dir);
        if failure.is_some() || interrupted {
            break 'steps;
        }
    }
    if stop.load(Ordering::Relaxed) {
        interrupted = true;
    }
    if !was_subreaper {
        children::set_subreaper(false);
    }

    // 6. Stop capture.
    let end_ns = sys::mono_ns();
    let host1 = hostload::read();
    let mut lost = 0;
    if let Some(inst) = &res.instance {
        let _ = inst.stop();
        lost = inst.lost_events();
    }
    capture_stop.store(true, Ordering::Release);
    let stream_stats = threads
        .trace
        .take()
        .and_then(|h| h.join().ok())
        .unwrap_or_default();
    let (psi0, psi1, peak_some, peak_full, sampler_err) = threads
        .sampler
        .take()
        .and_then(|h| h.join().ok())
        .unwrap_or((None, None, 0.0, 0.0, Some("sampler thread panicked".into())));
    drop(threads);
    if let Some(e) = sampler_err {
        notes.push(format!("vmstat sampling problem: {e}"));
    }
    if let (Some(a), Some(b)) = (psi0, psi1) {
        notes.push(format!(
            "psi memory (host-wide): some {:.3} s, full {:.3} s stalled during the run; peak avg10 some {:.2}%, full {:.2}%",
            b.some.total_us.saturating_sub(a.some.total_us) as f64 / 1e6,
            b.full.total_us.saturating_sub(a.full.total_us) as f64 / 1e6,
            peak_some,
            peak_full
        ));
    } else {
        notes.push("psi: /proc/pressure/memory not available".into());
    }
    let mut cg_records = Vec::new();
    if let Some(sb) = &sandbox {
        notes.extend(cgroup_notes(sb, &stat0, &lru_last, cg_psi0));
        if opts.scope == Scope::Cgroup || !cg_plans.is_empty() {
            let lim = (opts.scope == Scope::Cgroup).then_some(memory);
            cg_records = cgtree::records(&sb.dir, sb.version, lim, &cg_plans);
            notes.extend(cg_records.iter().map(setup::cgroup_record_note));
        }
    }
    // OOM kills, as data (oomwork.rs).
    let oom_kills = oomwork::capture_kills(&all_pids, t0, &steps, sandbox.as_ref(), &mut notes);
    if interrupted {
        notes.push(format!(
            "interrupted by a signal at t={:.1} s; the last step is cut short",
            t_of(end_ns)
        ));
    }
    if let Some(f) = &failure {
        notes.push(format!("run failed: {}", f.what));
    }
    if !trace_clock.is_empty() && trace_clock != "mono" {
        notes.push(format!(
            "trace clock is `{trace_clock}` (no `mono` on this kernel): trace_time_offset_s is approximate"
        ));
    }
    // SAFETY: rusage is plain data; getrusage writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    notes.push(format!(
        "capture thread: {} lines, {} bytes, {:.3} CPU s; whole runner (capture, sampling, set-up): {:.3} CPU s",
        stream_stats.lines,
        stream_stats.bytes,
        stream_stats.cpu_ns as f64 / 1e9,
        tv(ru.ru_utime) + tv(ru.ru_stime)
    ));

    let (cg_user, cg_sys) = sandbox
        .as_ref()
        .and_then(|s| s.cpu_times())
        .map(|(u, s)| {
            let (u0, s0) = cpu0.unwrap_or((0.0, 0.0));
            ((u - u0).max(0.0), (s - s0).max(0.0))
        })
        .unwrap_or_else(|| {
            tasks
                .iter()
                .fold((0.0, 0.0), |(u, s), t| (u + t.user_s, s + t.system_s))
        });
    // After the sums: the Duration rows are the workload's CPU alone.
    tasks.append(&mut kthread_tasks);
    match (host0, host1) {
        (Some(a), Some(b)) => notes.push(hostload::note(
            a,
            b,
            cg_user + cg_sys + tv(ru.ru_utime) + tv(ru.ru_stime),
        )),
        _ => notes.push("host CPU during the run: /proc/stat not readable".into()),
    }
    let mut writer = Arc::try_unwrap(writer)
        .map_err(|_| HostError::new("internal: the record writer is still shared"))?
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let trace_lines = writer.trace_line_count();
    let vmstat_rows = writer.vmstat_row_count();
    {
        let m = writer.meta_mut();
        m.steps = steps;
        m.duration = Duration {
            user_s: cg_user,
            system_s: cg_sys,
            elapsed_s: t_of(end_ns),
        };
        m.capture.trace = res.instance.is_some();
        m.capture.events = events.clone();
        m.capture.lost_events = lost;
        m.capture.trace_time_offset_s = t0 as f64 / 1e9;
        m.capture.notes = notes.clone();
        m.tasks = tasks;
        m.cgroups = cg_records;
        m.oom_kills = oom_kills;
        if let Some((fstype, _)) = &fs_tool {
            m.params.insert("run.fs".into(), (*fstype).into());
        }
    }
    let meta = writer.meta().clone();
    let record = writer
        .finish()
        .map_err(|e| HostError::new(format!("cannot finish the record: {e}")))?;

    // 7. Undo.
    let errs = res.undo();
    if !errs.is_empty() {
        let list: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        return Err(HostError::with_fix(
            format!(
                "the run finished (record {}), but cleaning up failed: {}",
                record.display(),
                list.join("; ")
            ),
            "run `reclaimlab run` again later: it cleans up leftovers of earlier runs at start",
        ));
    }
    if let Some(f) = failure {
        return Err(HostError {
            what: format!(
                "{} (a partial record was written to {})",
                f.what,
                record.display()
            ),
            fix: f.fix,
        });
    }
    Ok(RunOutcome {
        record,
        interrupted,
        cleaned,
        meta,
        trace_lines,
        vmstat_rows,
        latency_samples,
        capture_cpu_s: stream_stats.cpu_ns as f64 / 1e9,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_paths() {
        assert_eq!(
            sysctl_path("vm.dirty_ratio"),
            PathBuf::from("/proc/sys/vm/dirty_ratio")
        );
    }

    #[test]
    fn sets_are_checked() {
        let mut o = RunOptions::new("stutterp", PathBuf::from("/bin/true"));
        let mut p = StutterpParams::default();
        o.sets = vec![("stutterp.readers".into(), "1".into())];
        assert!(apply_sets(&o, &mut p).unwrap().is_empty());
        assert_eq!(p.readers, 1);
        o.sets = vec![("vm.dirty_ratio".into(), "10".into())];
        let e = apply_sets(&o, &mut p).unwrap_err();
        assert!(e.to_string().contains("host-wide"), "{e}");
        o.sets = vec![("bogus".into(), "1".into())];
        assert!(apply_sets(&o, &mut p)
            .unwrap_err()
            .to_string()
            .contains("unknown parameter"));
        o.sets = vec![("stutterp.readers".into(), "5".into())];
        assert!(apply_sets(&o, &mut p)
            .unwrap_err()
            .to_string()
            .contains("0 or 1"));
        o.sets.clear();
        o.duration_s = Some(30);
        apply_sets(&o, &mut p).unwrap();
        assert_eq!(p.duration_s, 30);
    }

    #[test]
    fn unknown_workload_is_named() {
        let o = RunOptions::new("no-such-workload", PathBuf::from("/bin/true"));
        let e = run(&o, Arc::new(AtomicBool::new(false))).unwrap_err();
        assert!(
            e.to_string()
                .contains("workload `no-such-workload`: unknown")
                && e.to_string().contains("memcg-congestion"),
            "{e}"
        );
    }
}
