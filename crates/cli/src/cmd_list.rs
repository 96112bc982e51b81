//! `reclaimlab list` (being written).

use std::process::ExitCode;

/// Arguments of `reclaimlab list`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `reclaimlab list`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`reclaimlab list` is not built yet")
}
