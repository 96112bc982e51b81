//! `reclaimlab sim` (being written).

use std::process::ExitCode;

/// Arguments of `reclaimlab sim`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `reclaimlab sim`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`reclaimlab sim` is not built yet")
}
