//! Importers: external data into run records.
//!
//! So that existing captures and mmtests results can be read and compared with
//! the same report as simulated and real runs, these turn them into ordinary
//! records with origin `import`:
//!
//! - [`import_trace`]: a tracefs `trace`/`trace_pipe` capture or `trace-cmd
//!   report` output, plain or gzip;
//! - [`import_mmtests`]: an mmtests results directory (stutterp's mmap-latency
//!   logs, the `/proc/vmstat` snapshots and `time ::` line of
//!   `tests-sysstate`/`tests-timestamp`, `CONFIG_HZ` of the saved kconfig, and
//!   `ftrace-stutterp.gz` if present).
//!
//! Policy for bad trace lines: a line that is not an event (comment, header,
//! lost-events marker) is dropped silently; a garbled line is skipped, counted
//! in `capture.skipped_lines` and noted (with the first few line numbers) in
//! `capture.notes`; the import fails only if no line at all parses. A malformed
//! mmtests file is an error naming `file:line` and the expected format.

//!
//! Layout: `trace.rs` copies ftrace text into a record (`import_trace`, and
//! the copy `import_mmtests` makes of `ftrace-stutterp.gz`); `mmtests.rs`
//! finds the pieces of an mmtests results directory and writes the record;
//! `sysstate.rs` parses its `tests-sysstate`/`tests-timestamp`, kernel
//! version and kconfig.

mod mmtests;
mod sysstate;
mod trace;

use std::path::PathBuf;

pub use mmtests::{
    import_mmtests, import_mmtests_with, LatencyFormat, MmtestsOptions, MAX_LATENCY_SAMPLES,
};
pub use trace::import_trace;

/// How many garbled lines are listed by number in the notes.
pub(super) const LISTED_GARBLED: usize = 5;

/// What an import produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    /// The record written.
    pub out: PathBuf,
    /// Trace lines written to `trace.txt.gz`.
    pub trace_lines: u64,
    /// Garbled input lines skipped.
    pub skipped_lines: u64,
    /// Events the source reported lost.
    pub lost_events: u64,
    /// Steps of the record.
    pub steps: Vec<u32>,
    /// Latency samples written.
    pub latency_samples: u64,
    /// vmstat rows written.
    pub vmstat_rows: u64,
    /// The notes written to `capture.notes`.
    pub notes: Vec<String>,
}
