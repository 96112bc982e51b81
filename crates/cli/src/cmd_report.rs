//! `reclaimlab report` (being written).

use std::process::ExitCode;

/// Arguments of `reclaimlab report`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `reclaimlab report`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`reclaimlab report` is not built yet")
}
