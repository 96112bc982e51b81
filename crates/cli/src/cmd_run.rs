//! `reclaimlab run` (being written).

use std::process::ExitCode;

/// Arguments of `reclaimlab run`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Arguments of the hidden `reclaimlab worker` programs.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {}

/// Runs `reclaimlab run`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`reclaimlab run` is not built yet")
}

/// Runs one hidden worker program.
pub fn worker(_args: WorkerArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("worker programs are not built yet")
}
