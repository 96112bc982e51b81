//! `reclaimlab doctor`: what this host can `run`, and how to fix what is missing.
//!
//! Thin: the checks live in `reclaimlab_host::doctor`. Exit 0 when `run` can
//! work here, 2 when something required is missing.

use std::process::ExitCode;

/// Arguments of `reclaimlab doctor`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `reclaimlab doctor`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    let d = reclaimlab_host::doctor::diagnose();
    crate::write_file::to_stdout(d.render())?;
    Ok(if d.can_run() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
