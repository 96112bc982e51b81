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
    /// The workload: `stutterp`, or a workload spec file (TOML; see `reclaimlab list workloads`).
    pub workload: String,
    /// Memory limit of the sandbox cgroup; the workload is sized from it.
    #[arg(long, default_value = "1G", value_name = "SIZE")]
    pub memory: String,
    /// Run inside a memory cgroup (default) or on the whole host.
    #[arg(long, value_enum, default_value_t = ScopeArg::Cgroup)]
    pub scope: ScopeArg,
    /// Confirms --scope host: this machine is a dedicated test box or VM.
    #[arg(long)]
    pub yes_i_own_this_host: bool,
    /// Create a temporary swap file of SIZE for the run (removed afterwards).
    #[arg(long, value_name = "SIZE")]
    pub swap_file: Option<String>,
    /// Set a parameter: `stutterp.*` (see `reclaimlab list params`);
    /// `capture.events=default|all|none|SUBSYS:EVENT,...` (tracepoints to capture;
    /// `all` adds the high-rate mm_vmscan_lru_shrink_inactive); `vm.*` sysctls
    /// with --scope host (restored afterwards).
    #[arg(long = "set", value_name = "K=V")]
    pub sets: Vec<String>,
    /// Seconds each worker count runs after the warmup (stutterp.duration_s).
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
    let mut o = RunOptions::new(&args.workload, exe);
    o.memory = parse_size("--memory", &args.memory)?;
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
    let stop = reclaimlab_host::runner::install_signal_flag()?;
    let outcome = reclaimlab_host::run(&o, stop)?;
    let m = &outcome.meta;
    outln!(
        "recorded {} ({} on {}, {}): {} vmstat samples, {} mmap latency samples, {} trace lines ({} lost), {} steps; workers used {:.1} s user, {:.1} s system in {:.1} s",
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
    }
    Ok(ExitCode::SUCCESS)
}
