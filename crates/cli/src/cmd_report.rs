//! `reclaimlab report DIR... [--json] [--html FILE] [--significance ttest|ci] [--keep-going]`
//!
//! Reads run records (the first is the baseline), prints the mmtests-style
//! comparison (or the `reclaimlab.report/1` JSON with `--json`), and writes
//! the self-contained HTML page with `--html`. A record that cannot be read is
//! an error (exit 2). Unparsable trace lines are skipped and counted; they and
//! a truncated trace are reported, and end with exit code 2 unless
//! `--keep-going`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use reclaimlab_report::{
    render_html, render_json, render_text, report_from_dirs, Options, Significance,
};

/// Arguments of `reclaimlab report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run record directories; the first is the baseline.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Print the `reclaimlab.report/1` JSON instead of the text tables.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report (tables and SVG plots) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Significance rule for the `*` marks: `ttest` (mmtests 2018-2024,
    /// p < 0.10) or `ci` (mmtests since 2024-11, mean ± 1.96·s intervals).
    #[arg(long, default_value = "ttest", value_parser = ["ttest", "ci"])]
    pub significance: String,
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
    let report =
        report_from_dirs(&args.dirs, Options { significance }).context("cannot read run record")?;
    let out = if args.json {
        render_json(&report)
    } else {
        render_text(&report).into_bytes()
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a message.
    if let Err(e) = stdout.write_all(&out).and_then(|()| stdout.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("cannot write the report to stdout");
        }
    }
    if let Some(path) = &args.html {
        crate::write_file::write_whole(path, &render_html(&report))
            .with_context(|| format!("cannot write the HTML report to {}", path.display()))?;
        eprintln!("reclaimlab: HTML report written to {}", path.display());
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
