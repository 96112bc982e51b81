//! reclaimlab-report: statistics, mmtests-style comparison tables, stall
//! histograms, plots, HTML and JSON for any set of run records.
//!
//! The flow is hyperfine's: measurements become one serde [`Report`]
//! ([`build_report`]), and every exporter ([`render_text`], [`render_json`],
//! [`render_html`]) turns that same struct into bytes. Statistics live in
//! [`stats`], the Ops table in [`ops`], stall histograms in [`stalls`]; only
//! [`source`] knows how a run record is stored on disk. The first run is the
//! baseline of every % column. Output is deterministic: the same records give
//! the same bytes.
//!
//! `sim` and `run` print the comparison when they finish:
//!
//! ```no_run
//! use reclaimlab_report::{render_text, report_from_dirs, Options};
//! let report = report_from_dirs(&["out/v5.15", "out/v5.16"], Options::default())?;
//! print!("{}", render_text(&report));
//! std::fs::write("out/report.html", reclaimlab_report::render_html(&report))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod format;
pub mod input;
pub mod model;
pub mod ops;
pub mod source;
pub mod stalls;
pub mod stats;

use std::path::Path;

pub use format::html::render_html;
pub use format::json::render_json;
pub use format::text::render_text;
pub use input::{LatencySample, RunInput, RunMeta, TraceStatus, VmstatPoint};
pub use model::{build_report, Options, Report, RunReport, Significance, SCHEMA};
pub use source::{load_run, LoadError};

/// Loads every record directory (in order) and builds the report.
pub fn report_from_dirs<P: AsRef<Path>>(dirs: &[P], opts: Options) -> Result<Report, LoadError> {
    let runs = dirs
        .iter()
        .map(|d| load_run(d.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(build_report(&runs, opts))
}
