//! `reclaimlab import` (being written).

use std::process::ExitCode;

/// Arguments of `reclaimlab import`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `reclaimlab import`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`reclaimlab import` is not built yet")
}
