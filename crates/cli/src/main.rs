/*!
The `reclaimlab` binary: the definition of the command line, and glue.

Every subcommand lives in its own `cmd_*.rs` file with its clap arguments and a
`run` function; the library crates do the work. Errors from user input end the
process with exit code 2 and a message that names the input and the fix.
*/

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `println!` through [`write_file::to_stdout`], in functions that return
/// `anyhow::Result`: a closed pipe ends the output, not the process.
macro_rules! outln {
    () => {
        $crate::write_file::to_stdout("\n")?
    };
    ($($arg:tt)*) => {
        $crate::write_file::to_stdout(format!("{}\n", format_args!($($arg)*)))?
    };
}

mod cmd_cache;
mod cmd_doctor;
mod cmd_fidelity;
mod cmd_import;
mod cmd_list;
mod cmd_report;
mod cmd_run;
mod cmd_sim;
mod machine_arg;
mod out_dir;
mod sim_memory;
mod sim_params;
mod sim_pool;
mod sim_steps;
mod suggest;
mod sweep_check;
mod write_file;

/// A laboratory for Linux memory-reclaim stalls.
#[derive(Parser, Debug)]
#[command(name = "reclaimlab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// Simulate a workload on the simulated kernel under one or more kernel profiles.
    Sim(cmd_sim::Args),
    /// Run a workload on the real, running kernel (inside a memory cgroup by default).
    Run(cmd_run::Args),
    /// Compare run records side by side (the first is the baseline).
    Report(cmd_report::Args),
    /// Score simulated runs against real ones (or a transcribed letter), figure by figure.
    Fidelity(cmd_fidelity::Args),
    /// Import external data (ftrace text, mmtests results) into a run record.
    Import(cmd_import::Args),
    /// List kernel profiles, machines, workloads or parameters.
    List(cmd_list::Args),
    /// Say what this host can `run`, and how to fix what is missing.
    Doctor(cmd_doctor::Args),
    /// List or prune the guest kernel and image cache of `run --kernel`.
    Cache(cmd_cache::Args),
    /// Internal worker programs used by `run` (not for direct use).
    #[command(hide = true)]
    Worker(cmd_run::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.mode {
        Mode::Sim(a) => cmd_sim::run(a),
        Mode::Run(a) => cmd_run::run(a),
        Mode::Report(a) => cmd_report::run(a),
        Mode::Fidelity(a) => cmd_fidelity::run(a),
        Mode::Import(a) => cmd_import::run(a),
        Mode::List(a) => cmd_list::run(a),
        Mode::Doctor(a) => cmd_doctor::run(a),
        Mode::Cache(a) => cmd_cache::run(a),
        Mode::Worker(a) => cmd_run::worker(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("reclaimlab: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
