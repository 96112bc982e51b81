//! reclaimlab-report: statistics, mmtests-style comparison tables, stall
//! histograms, plots, HTML and JSON for any set of run records.
//!
//! The flow is hyperfine's: measurements become one serde [`Report`]
//! ([`build_report`]), and every exporter ([`render_text`], [`render_json`],
//! [`render_html`]) turns that same struct into bytes. Statistics live in
//! [`stats`], the Ops table in [`ops`], stall histograms in [`stalls`],
//! mmtests' ftrace stall monitors in [`monitor`], the simulator's fidelity
//! to real runs in [`fidelity`]; only
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

pub mod fidelity;
pub mod format;
pub mod input;
pub mod kernel_notes;
pub mod model;
pub mod monitor;
pub mod oom_point;
pub mod ops;
pub mod source;
pub mod stalls;
pub mod stats;

use std::path::Path;

pub use fidelity::{
    fidelity_report, fidelity_report_with_generations, render_fidelity_json, FidelityReport, Side,
    Tolerance,
};
pub use format::csv::render_csv;
pub use format::fidelity_html::{fidelity_section, render_fidelity_html};
pub use format::fidelity_text::render_fidelity_text;
pub use format::html::{render_html, render_html_with};
pub use format::json::render_json;
pub use format::text::render_text;
pub use input::{LatencySample, RunInput, RunMeta, TaskUse, TraceStatus, VmstatPoint};
pub use model::{build_report, Options, Report, RunReport, Significance, SCHEMA};
pub use source::{load_run, LoadError};

/// Loads every record directory (in order) and builds the report.
pub fn report_from_dirs<P: AsRef<Path>>(dirs: &[P], opts: Options) -> Result<Report, LoadError> {
    let mut runs = dirs
        .iter()
        .map(|d| load_run(d.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    label_same_names(&mut runs);
    Ok(build_report(&runs, opts))
}

/// Runs that share a name (the same kernel from two output directories,
/// say a build before and after a patch) get the fewest of their record
/// directory's parent folders in front of it that tell them apart:
/// `before/v5.16` and `after/v5.16`. The same directory given twice keeps
/// its name; the report then notes the clash.
fn label_same_names(runs: &mut [RunInput]) {
    let parents = |r: &RunInput| -> Vec<String> {
        let dir = Path::new(&r.meta.record);
        let mut v: Vec<String> = dir
            .parent()
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.reverse();
        v
    };
    let names: Vec<String> = runs.iter().map(|r| r.meta.name.clone()).collect();
    for name in &names {
        let same: Vec<usize> = (0..runs.len())
            .filter(|&i| runs[i].meta.name == *name)
            .collect();
        if same.len() < 2 {
            continue;
        }
        let ups: Vec<Vec<String>> = same.iter().map(|&i| parents(&runs[i])).collect();
        let deepest = ups.iter().map(Vec::len).max().unwrap_or(0);
        let label = |up: &[String], k: usize| -> String {
            let mut parts: Vec<&str> = up.iter().take(k).map(String::as_str).collect();
            parts.reverse();
            parts.push(name);
            parts.join("/")
        };
        let Some(k) = (1..=deepest).find(|&k| {
            let labels: std::collections::BTreeSet<String> =
                ups.iter().map(|u| label(u, k)).collect();
            labels.len() == same.len()
        }) else {
            continue;
        };
        for (&i, up) in same.iter().zip(&ups) {
            runs[i].meta.name = label(up, k);
        }
    }
}
