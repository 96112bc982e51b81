//! `reclaimlab run`: a workload on the real, running kernel, and the hidden
//! `reclaimlab worker` programs it starts.
//!
//! Thin: argument parsing and wiring. The runner, the sandbox, the capture and
//! the worker loops live in `reclaimlab_host`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use reclaimlab_host::{parse_size, RunOptions, Scope};

/// Where the workload runs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeArg {
    /// Inside a memory cgroup with the --memory limit (limit reclaim). The default.
    Cgroup,
    /// On the whole machine (global reclaim); needs --yes-i-own-this-host.
    Host,
}

/// Arguments of `reclaimlab run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workload: `stutterp`, a built-in spec (`memcg-congestion`, …) or a
    /// workload spec file (TOML; see `reclaimlab list workloads`).
    pub workload: String,
    /// The machine whose devices a spec's `device = "NAME"` names (a built-in
    /// machine or a machine file, as for `sim`): each such device becomes a
    /// loop device of the run, throttled to that device's bandwidth,
    /// measured, and removed afterwards. E.g. `--machine hdd-pair-2018`.
    #[arg(long, value_name = "M|FILE")]
    pub machine: Option<String>,
    /// Memory limit of the sandbox cgroup (default 1G); the workload is sized from it.
    /// With --kernel: a cgroup v2 limit inside the guest (default: none, global reclaim).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Run inside a memory cgroup (default) or on the whole host.
    #[arg(long, value_enum, default_value_t = ScopeArg::Cgroup)]
    pub scope: ScopeArg,
    /// Confirms --scope host: this machine is a dedicated test box or VM.
    #[arg(long)]
    pub yes_i_own_this_host: bool,
    /// Create a temporary swap file of SIZE for the run (removed afterwards).
    #[arg(long, value_name = "SIZE")]
    pub swap_file: Option<String>,
    /// Set a parameter: `stutterp.*` (see `reclaimlab list params`); a spec's
    /// worker key `KIND.KEY` on every worker of that kind (`mlock.size_mib=950`);
    /// `capture.events=default|all|none|SUBSYS:EVENT,...` (tracepoints to capture;
    /// `all` adds the high-rate mm_vmscan_lru_shrink_inactive); `vm.*` sysctls
    /// with --scope host (restored afterwards).
    #[arg(long = "set", value_name = "K=V")]
    pub sets: Vec<String>,
    /// Seconds each worker count runs after the warmup (stutterp.duration_s; a spec: its duration_s). With --kernel: stutterp 30 by default (TCG is slow), a spec its own
    #[arg(long, value_name = "S")]
    pub duration: Option<u64>,
    /// The run record directory to write.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where fio's files go (a `reclaimlab-<pid>` directory is made inside; default /var/tmp).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The run's name in reports (default: `uname -r`).
    #[arg(long)]
    pub name: Option<String>,
    /// Boot these kernels in qemu guests and run there, one after another:
    /// `debian:5.10,debian:6.1` (fetched with apt, cached), or
    /// `PATH/bzImage[:MODULES_DIR]` for a kernel you built. See docs/guests.md.
    #[arg(long, value_name = "K[,K...]")]
    pub kernel: Option<String>,
    /// Guest RAM (with --kernel).
    #[arg(long, default_value = "2G", value_name = "SIZE")]
    pub guest_memory: String,
    /// Guest vCPUs (with --kernel).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub guest_cpus: u32,
    /// Rounds over the kernels, alternating which boots first (with --kernel).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: u32,
    /// The guest data disk's bandwidth cap, MB/s (with --kernel).
    #[arg(long, default_value_t = 16, value_name = "MB_S")]
    pub disk_mb_s: u64,
    /// The positive control before the workload (with --kernel): `global`
    /// (a hog and a writer on a 2 MB/s disk, whole guest), `cgroup` (the same in
    /// a 256 MiB cgroup v2), or `none`.
    #[arg(long, default_value = "cgroup", value_name = "KIND")]
    pub control: String,
    /// Transparent huge pages in the guest (with --kernel): `never`,
    /// `madvise` or `always`, given to its kernel as `transparent_hugepage=`;
    /// default: the kernel's own (Debian's: `always`). The simulator has
    /// order-0 pages only, so `never` makes a guest run comparable with it.
    #[arg(long, value_name = "MODE")]
    pub thp: Option<String>,
    /// With --kernel: boot the guest kernel with `profile=2` and write its
    /// profile of the workload (kernel functions by timer ticks, from
    /// /proc/profile and /proc/kallsyms) as NAME.profile.txt beside the
    /// records: where the guest's system time goes.
    #[arg(long)]
    pub guest_profile: bool,
    /// Seconds a guest may take to reach its /init (with --kernel).
    #[arg(long, default_value_t = 300, value_name = "S")]
    pub boot_timeout: u64,
    /// Kernel and image cache (default $XDG_CACHE_HOME/reclaimlab or ~/.cache/reclaimlab).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Update the cached apt package lists before resolving debian:X.Y.
    #[arg(long)]
    pub refresh_kernels: bool,
    /// Guest images (one per reclaimlab binary, ~130 MB each) kept in the
    /// cache, most recently used first, this run's among them; 0: never
    /// prune (with --kernel; `reclaimlab cache` lists and prunes by hand).
    #[arg(long, value_name = "N", default_value_t = reclaimlab_host::guest::cache::DEFAULT_KEEP_IMAGES)]
    pub cache_keep: usize,
}

/// Arguments of the hidden `reclaimlab worker` programs.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    #[command(subcommand)]
    worker: Worker,
}

#[derive(Subcommand, Debug)]
enum Worker {
    /// stutterp's mmap-latency loop; one `t_s value_us` line per iteration.
    MmapLatency {
        /// Output file for the samples.
        #[arg(long)]
        out: PathBuf,
        /// Pages mapped and written per iteration.
        #[arg(long, default_value_t = 32768)]
        pages: u64,
        /// Sleep per iteration, ms (subtracted from each sample).
        #[arg(long, default_value_t = 5)]
        sleep_ms: u64,
        /// CLOCK_MONOTONIC ns of the record's time 0.
        #[arg(long, default_value_t = 0)]
        t0_mono_ns: u64,
        /// Stop after this many seconds (0 = run until killed).
        #[arg(long, default_value_t = 0)]
        duration_s: u64,
    },
    /// stutterp's anon memory hog: map SIZE and write every page, forever.
    MemoryHog {
        /// Bytes to map (or a size like 512M).
        size: String,
    },
    /// The CPU-speed probe a guest runs for `sim --machine guest:…`:
    /// `cost KEY NS_PER_PAGE` lines (reclaimlab_host::cpu_probe).
    CpuCosts {
        /// MiB mapped per repetition.
        #[arg(long, default_value_t = 32)]
        mib: usize,
    },
    /// The squeeze: mmap + mlock BYTES (in steps), then hold until killed.
    Mlock {
        /// Bytes to lock.
        bytes: u64,
        /// Bytes per step (0: all at once).
        #[arg(long, default_value_t = 0)]
        step: u64,
        /// Ms between steps.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// CLOCK_MONOTONIC ns of the record's time 0.
        #[arg(long, default_value_t = 0)]
        t0_mono_ns: u64,
    },
    /// mapped-file-stream: one byte per page of FILES through shared
    /// read-only mappings with MADV_RANDOM, PASSES times.
    MmapFileReader {
        /// The files (made by the runner).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Passes over the files (0: until killed).
        #[arg(long, default_value_t = 1)]
        passes: u32,
        /// Random pages (as many reads a pass as pages, with repeats) instead of in order.
        #[arg(long)]
        random: bool,
        /// Seed of the random order.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// fs_mark-like creation of files round-robin in DIRS directories of DIR.
    FsCreate {
        /// Directory (the run's filesystem image).
        dir: PathBuf,
        /// Directories.
        #[arg(long, default_value_t = 16)]
        dirs: u32,
        /// Files to create (0: until killed).
        #[arg(long, default_value_t = 0)]
        files: u64,
        /// Bytes per file.
        #[arg(long, default_value_t = 0)]
        file_size: u64,
        /// Process number (in file names).
        #[arg(long, default_value_t = 0)]
        index: u32,
    },
}

fn parse_sets(sets: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    sets.iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .with_context(|| {
                    format!("--set `{s}`: expected K=V, e.g. --set stutterp.duration_s=60")
                })
        })
        .collect()
}

/// Runs `reclaimlab run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()
        .context("cannot find this program's own path (/proc/self/exe) to start its workers")?;
    if args.kernel.is_some() {
        return run_guests(args, exe);
    }
    if args.guest_profile {
        anyhow::bail!(
            "--guest-profile: only for guest runs (--kernel); this host's kernel was not booted with profile=\n  fix: add --kernel debian:6.1 (or another guest kernel), or profile the host with perf"
        );
    }
    if let Some(t) = &args.thp {
        anyhow::bail!(
            "--thp {t}: only for guest runs (--kernel); on this host transparent huge pages are a host-wide setting that `run` does not change\n  fix: drop --thp, or set /sys/kernel/mm/transparent_hugepage/enabled yourself (the record notes it as thp.enabled)"
        );
    }
    let mut o = RunOptions::new(&args.workload, exe);
    o.memory = parse_size("--memory", args.memory.as_deref().unwrap_or("1G"))?;
    o.scope = match args.scope {
        ScopeArg::Cgroup => Scope::Cgroup,
        ScopeArg::Host => Scope::Host,
    };
    o.confirm_host = args.yes_i_own_this_host;
    o.swap_file = args
        .swap_file
        .as_deref()
        .map(|s| parse_size("--swap-file", s))
        .transpose()?;
    o.sets = parse_sets(&args.sets)?;
    o.duration_s = args.duration;
    o.out = args.out;
    o.data_dir = args.data_dir;
    o.name = args.name;
    if let Some(m) = &args.machine {
        if m == "host" || m.starts_with("host:") {
            anyhow::bail!(
                "--machine {m}: `run` already runs on this host; --machine names the machine whose devices the spec's `device =` entries are (e.g. hdd-pair-2018)\n  fix: give a built-in machine (`reclaimlab list machines`) or a machine file"
            );
        }
        let machine = reclaimlab_kernel::machine::Machine::load(m)
            .with_context(|| format!("--machine {m}"))?;
        o.machine = Some(machine.name.clone());
        o.devices = machine
            .devices
            .iter()
            .map(|d| reclaimlab_host::disks::DeviceBw {
                name: d.name.clone(),
                write_mb_s: d.write_mb_s,
                read_mb_s: d.read_mb_s,
            })
            .collect();
    }
    let stop = reclaimlab_host::runner::install_signal_flag()?;
    let outcome = reclaimlab_host::run(&o, stop)?;
    let m = &outcome.meta;
    outln!(
        "recorded {} ({} on {}, {}): {} vmstat samples, {} latency samples, {} trace lines ({} lost), {} steps; workers used {:.1} s user, {:.1} s system in {:.1} s",
        outcome.record.display(),
        m.workload.name,
        m.kernel,
        m.reclaim_scope.as_str(),
        outcome.vmstat_rows,
        outcome.latency_samples,
        outcome.trace_lines,
        m.capture.lost_events,
        m.steps.len(),
        m.duration.user_s,
        m.duration.system_s,
        m.duration.elapsed_s,
    );
    for n in &m.capture.notes {
        outln!("  note: {n}");
    }
    outln!();
    match reclaimlab_report::report_from_dirs(
        std::slice::from_ref(&outcome.record),
        reclaimlab_report::Options::default(),
    ) {
        Ok(r) => crate::write_file::to_stdout(reclaimlab_report::render_text(&r))?,
        Err(e) => {
            eprintln!("reclaimlab run: warning: the record was written but cannot be reported: {e}")
        }
    }
    Ok(if outcome.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// `reclaimlab run --kernel …`: the workload in a qemu guest per kernel.
fn run_guests(args: Args, exe: PathBuf) -> anyhow::Result<ExitCode> {
    use reclaimlab_host::guest;
    if args.scope != ScopeArg::Cgroup
        || args.swap_file.is_some()
        || args.data_dir.is_some()
        || args.machine.is_some()
    {
        anyhow::bail!(
            "--scope, --swap-file, --data-dir and --machine are for runs on this host; a guest run (--kernel) has its own swap and data disks and runs under global reclaim, or a cgroup limit with --memory\n  fix: drop them"
        );
    }
    let kernels = guest::spec::parse_kernels(args.kernel.as_deref().unwrap_or_default())?;
    let mut o = guest::GuestOptions::new(&args.workload, kernels, exe);
    o.guest_memory = parse_size("--guest-memory", &args.guest_memory)?;
    o.memory = args
        .memory
        .as_deref()
        .map(|m| parse_size("--memory", m))
        .transpose()?;
    o.cpus = args.guest_cpus.clamp(1, 64);
    o.repeat = args.repeat.max(1);
    o.sets = parse_sets(&args.sets)?;
    o.duration_s = args
        .duration
        .unwrap_or_else(|| guest::default_duration_s(&args.workload));
    o.disk_mb_s = args.disk_mb_s.max(1);
    o.control = match args.control.as_str() {
        "global" => guest::Control::Global,
        "cgroup" => guest::Control::Cgroup,
        "none" => guest::Control::None,
        other => {
            anyhow::bail!("--control {other}: unknown\n  fix: --control global, cgroup or none")
        }
    };
    o.thp = match args.thp.as_deref() {
        None => None,
        Some(m @ ("never" | "madvise" | "always")) => Some(m.to_string()),
        Some(other) => anyhow::bail!(
            "--thp {other}: unknown mode\n  fix: --thp never, madvise or always (or leave it out for the kernel's default)"
        ),
    };
    o.kernel_profile = args.guest_profile;
    o.out = args.out;
    o.boot_timeout_s = args.boot_timeout;
    o.refresh = args.refresh_kernels;
    o.cache_keep = args.cache_keep;
    if let Some(c) = args.cache_dir {
        o.cache_dir = c;
    }
    let stop = reclaimlab_host::runner::install_signal_flag()?;
    let t0 = std::time::Instant::now();
    let outcome = guest::run_guests(&o, stop)?;
    outln!(
        "guest runs in {} ({} boot(s), qemu {}); kernels and images ready after {:.1} s; total {:.0} s",
        outcome.out.display(),
        outcome.runs.len(),
        outcome.accel.as_str(),
        outcome.prepare_s,
        t0.elapsed().as_secs_f64()
    );
    for r in &outcome.runs {
        outln!(
            "  {}: {} ({}), MGLRU {}; boot {:.1} s, first workload second at {:.1} s, wall {:.0} s",
            r.name,
            r.facts.release,
            r.kernel.source,
            r.facts.lru_gen,
            r.boot_s.unwrap_or(0.0),
            r.to_workload_s.unwrap_or(0.0),
            r.wall_s
        );
        match &r.control {
            Some((_, ev)) => outln!(
                "    positive control: {} ({})",
                guest::results::describe_counts(ev),
                if ev.is_empty() {
                    "NO throttling fired: an empty workload trace proves nothing"
                } else {
                    "throttling fires, the capture works"
                }
            ),
            None if r.facts.control_exit.is_some() => outln!(
                "    positive control: FAILED in the guest (exit {:?}); see {}.control.log",
                r.facts.control_exit,
                r.record.display()
            ),
            None => outln!("    positive control: not run"),
        }
        outln!(
            "    workload throttling: {}",
            guest::results::describe_counts(&r.events)
        );
        if let Some(n) = r.missing.describe(&r.facts.release) {
            outln!("    {n}");
        }
        outln!(
            "    as a simulator machine: sim --machine {} (CPU {})",
            r.machine.to_arg(),
            if r.facts.costs.is_empty() {
                "not measured".to_string()
            } else {
                format!(
                    "{}x slower than the simulator's defaults, measured in the guest",
                    guest::machine::fmt_factor(r.machine.cpu_slowdown)
                )
            }
        );
    }
    outln!();
    let dirs: Vec<PathBuf> = outcome.runs.iter().map(|r| r.record.clone()).collect();
    if !dirs.is_empty() {
        match reclaimlab_report::report_from_dirs(&dirs, reclaimlab_report::Options::default()) {
            Ok(r) => crate::write_file::to_stdout(reclaimlab_report::render_text(&r))?,
            Err(e) => eprintln!(
                "reclaimlab run: warning: the records were written but cannot be reported: {e}"
            ),
        }
    }
    let failed: Vec<String> = outcome
        .runs
        .iter()
        .filter(|r| r.facts.workload_exit != Some(0))
        .map(|r| {
            format!(
                "{} (exit {:?}; log {}.workload.log)",
                r.name,
                r.facts.workload_exit,
                r.record.display()
            )
        })
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "the workload failed inside the guest for {}; the records hold what was captured\n  fix: read the logs named",
            failed.join(", ")
        );
    }
    Ok(if outcome.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs one hidden worker program.
pub fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let stop = reclaimlab_host::workers::stop_flag()?;
    match args.worker {
        Worker::MmapLatency {
            out,
            pages,
            sleep_ms,
            t0_mono_ns,
            duration_s,
        } => {
            reclaimlab_host::workers::set_comm("mmap-latency");
            reclaimlab_host::workers::mmap_latency(
                &out, pages, sleep_ms, t0_mono_ns, duration_s, stop,
            )?
        }
        Worker::MemoryHog { size } => {
            reclaimlab_host::workers::set_comm("memory-hog");
            reclaimlab_host::workers::memory_hog(parse_size("memory-hog SIZE", &size)?, stop)?
        }
        Worker::CpuCosts { mib } => {
            let costs = reclaimlab_host::cpu_probe::measure(mib * 256, 3);
            for (k, v) in &costs {
                outln!("cost {k} {v:.1}");
            }
            let store = costs.iter().find(|(k, _)| k == "touch_page_ns");
            if let Some(v) = store
                .and_then(|(_, s)| reclaimlab_host::cpu_probe::fault_user_time(mib * 256, 8.0, *s))
            {
                outln!("cost fault_user_ns {v:.1}");
            }
            if let Some(v) = reclaimlab_host::cpu_probe::swap_cycle(mib * 64) {
                outln!("cost swap_cycle_ns {v:.1}");
            }
            if let Some((out, back)) = reclaimlab_host::cpu_probe::swap_halves(mib * 64) {
                outln!("cost swap_out_ns {out:.1}");
                outln!("cost swap_in_ns {back:.1}");
            }
            if let Some(v) = reclaimlab_host::cpu_probe::switch_cost(2.0) {
                outln!("cost ctx_switch_ns {v:.1}");
            }
            match reclaimlab_host::cpu_probe::swap_read_times() {
                Ok((t4, t64)) => {
                    outln!("cost swap_read_4k_ns {t4:.1}");
                    outln!("cost swap_read_64k_ns {t64:.1}");
                }
                Err(e) => outln!("probe swap reads not timed: {e}"),
            }
        }
        Worker::Mlock {
            bytes,
            step,
            interval_ms,
            t0_mono_ns,
        } => {
            reclaimlab_host::workers::set_comm("mlock");
            reclaimlab_host::fsworkers::mlock_hold(
                bytes,
                step,
                std::time::Duration::from_millis(interval_ms),
                t0_mono_ns,
                stop,
            )?
        }
        Worker::MmapFileReader {
            files,
            passes,
            random,
            seed,
        } => {
            reclaimlab_host::workers::set_comm("mapped-file-stream");
            reclaimlab_host::workers::mmap_file_reader(&files, random, passes, seed, stop)?
        }
        Worker::FsCreate {
            dir,
            dirs,
            files,
            file_size,
            index,
        } => {
            reclaimlab_host::workers::set_comm("fs_mark");
            reclaimlab_host::fsworkers::fs_create(&dir, dirs, files, file_size, index, stop)?
        }
    }
    Ok(ExitCode::SUCCESS)
}
