//! reclaimlab-host: the real-kernel side of reclaimlab.
//!
//! Runs workloads on the running kernel and records what the kernel says, in the
//! same run record the simulator writes: a memory cgroup sandbox ([`cgroup`]), a
//! private tracefs instance streamed to `trace.txt.gz` ([`tracefs`]), `/proc/vmstat`
//! and PSI sampling, fio job files ([`fio`]), stutterp's own worker programs
//! ([`workers`]), temporary swap ([`swap`]), and a state file so that whatever a
//! run changed is undone — at the end, on a signal, or after a crash ([`state`]).
//! [`doctor`] says what a host can run and how to fix what it lacks; [`machine`]
//! describes this host as a machine profile for the simulator (`sim --machine host`).

pub mod bench;
pub mod cgroup;
pub mod cgtree;
pub mod children;
pub mod cpu_probe;
pub mod disks;
pub mod doctor;
pub mod error;
pub mod fio;
pub mod fsimage;
pub mod fsworkers;
pub mod guest;
pub mod machine;
pub mod oomcapture;
pub mod plan;
pub mod runner;
pub mod state;
pub mod swap;
pub mod sys;
pub mod tracefs;
pub mod workers;

pub use error::{parse_size, HostError, Result};
pub use runner::{run, RunOptions, RunOutcome, Scope};
