//! reclaimlab-record: the run record.
//!
//! Every run — simulated, real or imported — converges on one directory format
//! (`docs/run-record.md`), so everything downstream (reports, comparisons) is
//! written once. This crate owns that format: typed metadata ([`RunMeta`]), an
//! atomic streaming writer ([`RecordWriter`]), a validating reader
//! ([`Record`]) with a streaming trace iterator ([`TraceLines`]), the parsers of
//! the kernel's own text formats (ftrace lines: [`parse_trace_line`];
//! `/proc/vmstat`: [`parse_proc_vmstat`]), and the importers of external data
//! ([`import`]). It depends on nothing else of reclaimlab.

#![warn(missing_docs)]

pub mod error;
mod gzthread;
pub use gzthread::GzMembers;
pub mod import;
pub mod lines;
pub mod meta;
mod partial;
pub mod reader;
pub mod trace;
pub mod vmstat;
pub mod writer;

pub use error::{RecordError, Result};
pub use import::{
    import_mmtests, import_mmtests_with, import_trace, ImportSummary, LatencyFormat,
    MmtestsOptions, MAX_LATENCY_SAMPLES,
};
pub use meta::{
    Capture, CgroupRecord, Device, Duration, Machine, OomKillRecord, Origin, ReclaimScope, RunMeta,
    Step, TaskTime, Workload, SCHEMA, TOOL_VERSION,
};
pub use reader::{LatencySample, Record, TraceLines};
pub use trace::{is_kswapd_comm, parse_trace_line, OwnedTraceLine, ParseError, TraceLine};
pub use vmstat::{parse_proc_vmstat, parse_vmstat_line, Vmstat, VmstatRow, VmstatSnapshot};
pub use writer::{files, RecordWriter};
