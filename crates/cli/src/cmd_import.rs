//! `reclaimlab import`: external data (ftrace text, mmtests results) into a run
//! record. Thin: the importers live in `reclaimlab_record::import`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use reclaimlab_record::import::{
    import_mmtests_with, import_trace, ImportSummary, LatencyFormat, MmtestsOptions,
};

/// Arguments of `reclaimlab import`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// An ftrace text capture: tracefs `trace`/`trace_pipe` text or
    /// `trace-cmd report` output, plain or gzip. Garbled lines are skipped,
    /// counted and noted in run.json; the import fails only if nothing parses.
    Trace {
        /// The trace file.
        src: PathBuf,
        /// The record directory to write (replaced if it is an existing record).
        #[arg(long)]
        out: PathBuf,
    },
    /// An mmtests results directory (work/log/RUN, work/log/RUN/iter-N, or a
    /// directory holding tests-sysstate and stutterp/logs).
    Mmtests {
        /// The results directory.
        src: PathBuf,
        /// The record directory to write (replaced if it is an existing record).
        #[arg(long)]
        out: PathBuf,
        /// Format of the mmap-latency logs: `2021` (5 ms sleep already
        /// subtracted, batched lines), `raw` (current mmtests: 5 ms subtracted on
        /// import), or `auto` (detect).
        #[arg(long, default_value = "auto", value_parser = ["auto", "2021", "raw"])]
        latency_format: String,
        /// Name of the run in reports (default: the mmtests run name).
        #[arg(long)]
        name: Option<String>,
        /// Which iter-N to import when there are several (default: the lowest).
        #[arg(long)]
        iteration: Option<u32>,
    },
}

fn print(kind: &str, src: &std::path::Path, s: &ImportSummary) -> anyhow::Result<()> {
    let steps: Vec<String> = s.steps.iter().map(u32::to_string).collect();
    outln!("imported {kind} {} into {}", src.display(), s.out.display());
    outln!(
        "  trace lines {}, skipped {}, lost events {}, latency samples {}, vmstat rows {}, steps {}",
        s.trace_lines,
        s.skipped_lines,
        s.lost_events,
        s.latency_samples,
        s.vmstat_rows,
        steps.join(",")
    );
    for n in &s.notes {
        outln!("  note: {n}");
    }
    Ok(())
}

/// Runs `reclaimlab import`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Trace { src, out } => {
            let s = import_trace(&src, &out).context("import trace")?;
            print("trace", &src, &s)?;
        }
        What::Mmtests {
            src,
            out,
            latency_format,
            name,
            iteration,
        } => {
            let latency_format = match latency_format.as_str() {
                "2021" => LatencyFormat::Subtracted2021,
                "raw" => LatencyFormat::Raw,
                _ => LatencyFormat::Auto,
            };
            let opts = MmtestsOptions {
                latency_format,
                name,
                iteration,
            };
            let s = import_mmtests_with(&src, &out, &opts).context("import mmtests")?;
            print("mmtests results", &src, &s)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
