//! `reclaimlab report DIR... [--json] [--html FILE [--letter FILE]] [--csv FILE] [--significance ttest|ci] [--keep-going]`
//!
//! Reads run records (the first is the baseline), prints the mmtests-style
//! comparison (or the `reclaimlab.report/1` JSON with `--json`), and writes
//! the self-contained HTML page with `--html`. A record that cannot be read is
//! an error (exit 2). Unparsable trace lines are skipped and counted; they and
//! a truncated trace are reported, and end with exit code 2 unless
//! `--keep-going`.

use std::path::PathBuf;

use crate::out_dir::records_in_order;
use std::process::ExitCode;

use anyhow::Context;
use reclaimlab_report::{
    fidelity_report, fidelity_section, render_csv, render_html_with, render_json, render_text,
    report_from_dirs, Options, Significance, Tolerance,
};

/// Arguments of `reclaimlab report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run record directories; the first is the baseline. A directory that
    /// is not a record but holds records (the `--out` of a sweep) stands
    /// for them, in natural order (`=2` before `=10`).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Print the `reclaimlab.report/1` JSON instead of the text tables.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report (tables and SVG plots) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write every figure as CSV to FILE, a row each:
    /// `run,table,row,value` (docs/report-csv.md).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Significance rule for the `*` marks: `ttest` (mmtests 2018-2024,
    /// p < 0.10) or `ci` (mmtests since 2024-11, mean ± 1.96·s intervals).
    #[arg(long, default_value = "ttest", value_parser = ["ttest", "ci"])]
    pub significance: String,
    /// Also score the runs against a transcribed letter (docs/fidelity.md)
    /// and add the scores to the `--html` page: each run is paired with the
    /// letter's column of its kernel profile.
    #[arg(long, value_name = "FILE", requires = "html")]
    pub letter: Option<PathBuf>,
    /// Exit 0 even if a trace was truncated or had lines that did not parse.
    #[arg(long)]
    pub keep_going: bool,
}

/// Runs `reclaimlab report`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let significance = Significance::parse(&args.significance).with_context(|| {
        format!(
            "--significance {}: expected `ttest` or `ci`",
            args.significance
        )
    })?;
    let (dirs, command) = expand_record_dirs(&args.dirs);
    let mut report =
        report_from_dirs(&dirs, Options { significance }).context("cannot read run record")?;
    report.command = command;
    let out = if args.json {
        render_json(&report)
    } else {
        render_text(&report).into_bytes()
    };
    crate::write_file::to_stdout(&out)?;
    if let Some(path) = &args.html {
        let sections = match &args.letter {
            Some(letter) => {
                let pairs = crate::cmd_fidelity::letter_pairs(letter, &dirs)?;
                let scores = fidelity_report(&pairs, Tolerance::default())?;
                vec![fidelity_section(&scores)]
            }
            None => Vec::new(),
        };
        crate::write_file::write_whole(path, &render_html_with(&report, &sections))
            .with_context(|| format!("cannot write the HTML report to {}", path.display()))?;
        eprintln!("reclaimlab: HTML report written to {}", path.display());
    }
    if let Some(path) = &args.csv {
        crate::write_file::write_whole(path, &render_csv(&report))
            .with_context(|| format!("cannot write the CSV report to {}", path.display()))?;
        eprintln!("reclaimlab: CSV report written to {}", path.display());
    }
    let mut problems = false;
    for r in &report.runs {
        for ex in &r.trace.bad_examples {
            eprintln!("reclaimlab: warning: skipped trace line: {ex}");
        }
        if r.trace.bad_lines > r.trace.bad_examples.len() as u64 {
            eprintln!(
                "reclaimlab: warning: {}: {} unparsable trace lines skipped in all",
                r.name, r.trace.bad_lines
            );
        }
        if let Some(t) = &r.trace.truncated {
            eprintln!("reclaimlab: error: {t}");
        }
        problems |= r.trace.bad_lines > 0 || r.trace.truncated.is_some();
    }
    if problems && !args.keep_going {
        eprintln!("reclaimlab: the report above is incomplete (see warnings); exit code 2 (use --keep-going to exit 0)");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// Each of `dirs` that is not a record itself (no `run.json`) but holds
/// records, replaced by them in `sim`'s order (its `runs.txt`), the rest in
/// natural order; the rest as given (a directory with neither is left for
/// the reader to report). With a single folder, also the command that
/// `runs.txt` records, for the HTML header.
fn expand_record_dirs(dirs: &[PathBuf]) -> (Vec<PathBuf>, Option<String>) {
    let mut out = Vec::new();
    let mut command = None;
    for d in dirs {
        let inner = if d.join("run.json").exists() {
            Vec::new()
        } else {
            let (inner, cmd) = records_in_order(d);
            if dirs.len() == 1 {
                command = cmd;
            }
            inner
        };
        if inner.is_empty() {
            out.push(d.clone());
        } else {
            eprintln!(
                "reclaimlab: {} is not a run record but holds {}: reading those",
                d.display(),
                inner.len()
            );
            out.extend(inner);
        }
    }
    (out, command)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::out_dir::natural_cmp;

    #[test]
    fn natural_order_reads_numbers_as_numbers() {
        let mut v = vec!["s=10", "s=2", "v5.16-rc1", "v5.15", "s=02x", "s=2", "v5.16"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            ["s=2", "s=2", "s=02x", "s=10", "v5.15", "v5.16", "v5.16-rc1"]
        );
    }

    #[test]
    fn a_folder_of_records_stands_for_them() {
        let tmp = std::env::temp_dir().join(format!("reclaimlab-expand-{}", std::process::id()));
        for d in [
            "sweep/p=10",
            "sweep/p=2",
            "sweep/.p=3.partial-1",
            "sweep/empty",
            "one",
        ] {
            std::fs::create_dir_all(tmp.join(d)).unwrap();
        }
        for d in ["sweep/p=10", "sweep/p=2", "sweep/.p=3.partial-1", "one"] {
            std::fs::write(tmp.join(d).join("run.json"), "{}").unwrap();
        }
        let (got, _) = expand_record_dirs(&[tmp.join("one"), tmp.join("sweep"), tmp.join("none")]);
        let want: Vec<PathBuf> = ["one", "sweep/p=2", "sweep/p=10", "none"]
            .iter()
            .map(|d| tmp.join(d))
            .collect();
        assert_eq!(got, want);
        std::fs::remove_dir_all(&tmp).ok();
    }
}
