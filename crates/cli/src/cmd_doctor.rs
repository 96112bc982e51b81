//! `reclaimlab doctor` (being written).

use std::process::ExitCode;

/// Arguments of `reclaimlab doctor`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `reclaimlab doctor`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`reclaimlab doctor` is not built yet")
}
