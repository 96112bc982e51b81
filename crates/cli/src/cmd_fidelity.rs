//! `reclaimlab fidelity SIM REAL | --pair SIM REAL... | --letter FILE SIM... | --suite FILE [--json] [--html FILE] [--tolerance F] [--share-points P] [--ks D]`
//!
//! Scores simulated run records against real ones (or against a published
//! table transcribed with its source, `--letter`), figure by figure, with a
//! verdict per row and a summary per pair (docs/fidelity.md). The work is
//! `reclaimlab_report::fidelity`; this file only pairs the inputs. A pair of
//! different workloads, a record that cannot be read or a transcription
//! that does not parse end with exit code 2 and a message naming it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use reclaimlab_kernel::profile::{profile, profiles};
use reclaimlab_report::fidelity::{letter, side_from_dir, suite};
use reclaimlab_report::{
    fidelity_report_with_generations, render_fidelity_html, render_fidelity_json,
    render_fidelity_text, Side, Tolerance,
};

/// Arguments of `reclaimlab fidelity`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// One pair: a simulated record, then the real record it is scored
    /// against. With `--letter`: the simulated records (or directories
    /// holding them, such as a `sim --out`), each paired with the letter's
    /// column of its kernel profile.
    #[arg(value_name = "RECORD")]
    pub records: Vec<PathBuf>,
    /// A further pair, SIM then REAL (repeatable).
    #[arg(long, num_args = 2, value_names = ["SIM", "REAL"], action = clap::ArgAction::Append)]
    pub pair: Vec<PathBuf>,
    /// Score the pairs and letters a suite file lists
    /// (`reclaimlab.fidelity-suite/1`; paths relative to the file).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
    /// Score the records against a transcribed letter
    /// (`reclaimlab.letter/1`, e.g. docs/fidelity/letters-2021-v2.toml).
    #[arg(long, value_name = "FILE")]
    pub letter: Option<PathBuf>,
    /// Print the `reclaimlab.fidelity/1` JSON instead of the text tables.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page of the scores to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Factor within which counts, times, rates, percentages and quantiles
    /// agree (sim/real between 1/F and F).
    #[arg(long, default_value_t = 2.0, value_name = "F")]
    pub tolerance: f64,
    /// Points within which the shares of stall reasons agree.
    #[arg(long, default_value_t = 10.0, value_name = "P")]
    pub share_points: f64,
    /// Kolmogorov–Smirnov distance within which delay distributions agree.
    #[arg(long, default_value_t = 0.25, value_name = "D")]
    pub ks: f64,
    /// For a suite's `[[generations]]`: a change between the older and the
    /// newer kernel of less than this many % has no direction.
    #[arg(long, default_value_t = 10.0, value_name = "PCT")]
    pub direction_band: f64,
}

fn side(dir: &Path) -> anyhow::Result<Side> {
    side_from_dir(dir).with_context(|| format!("cannot read run record {}", dir.display()))
}

/// Runs `reclaimlab fidelity`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.tolerance.is_finite() && args.tolerance >= 1.0) {
        bail!(
            "--tolerance {}: expected a factor of at least 1 (2 means within a factor of 2)",
            args.tolerance
        );
    }
    if !(args.share_points.is_finite() && args.share_points >= 0.0) {
        bail!(
            "--share-points {}: expected a number of points, 0 or more",
            args.share_points
        );
    }
    if !(args.ks.is_finite() && (0.0..=1.0).contains(&args.ks)) {
        bail!("--ks {}: expected a distance from 0 to 1", args.ks);
    }
    if !(args.direction_band.is_finite() && args.direction_band >= 0.0) {
        bail!(
            "--direction-band {}: expected a percentage, 0 or more",
            args.direction_band
        );
    }
    let tol = Tolerance {
        factor: args.tolerance,
        share_points: args.share_points,
        ks: args.ks,
        direction_pct: args.direction_band,
    };
    let mut pairs: Vec<(Side, Side)> = Vec::new();
    for p in args.pair.chunks(2) {
        if let [s, r] = p {
            pairs.push((side(s)?, side(r)?));
        }
    }
    match &args.letter {
        Some(file) => pairs.extend(letter_pairs(file, &args.records)?),
        None => match args.records.as_slice() {
            [] => {}
            [s, r] => pairs.push((side(s)?, side(r)?)),
            other => bail!(
                "{} record(s) given: expected SIM REAL (one pair), --pair SIM REAL for more, or --letter FILE SIM... to score against a transcribed letter",
                other.len()
            ),
        },
    }
    let mut generations = Vec::new();
    if let Some(file) = &args.suite {
        let suite = suite::load_suite(file)?;
        // The suite's pairs follow those given before it.
        let first = pairs.len();
        generations.extend(suite.generations.iter().map(|(o, n)| {
            let shift = |v: &[usize]| v.iter().map(|i| first + i).collect::<Vec<_>>();
            (shift(o), shift(n))
        }));
        for (s, r) in &suite.pairs {
            pairs.push((side(s)?, side(r)?));
        }
        for (letter, sims) in &suite.letters {
            pairs.extend(letter_pairs(letter, sims)?);
        }
    }
    if pairs.is_empty() {
        bail!("nothing to score: give SIM REAL, --pair SIM REAL, --letter FILE SIM... or --suite FILE");
    }
    let report = fidelity_report_with_generations(&pairs, &generations, tol)?;
    for p in &report.pairs {
        for w in &p.warnings {
            eprintln!(
                "reclaimlab: warning: {} vs {}: {w}",
                p.sim.name, p.real.name
            );
        }
    }
    let out = if args.json {
        render_fidelity_json(&report)
    } else {
        render_fidelity_text(&report).into_bytes()
    };
    crate::write_file::to_stdout(&out)?;
    if let Some(path) = &args.html {
        crate::write_file::write_whole(path, &render_fidelity_html(&report))
            .with_context(|| format!("cannot write the HTML page to {}", path.display()))?;
        eprintln!("reclaimlab: fidelity page written to {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Pairs each simulated record (a directory of records stands for them)
/// with the letter's column of its kernel profile. Records of a profile the
/// letter has no column for are skipped with a warning.
pub(crate) fn letter_pairs(file: &Path, records: &[PathBuf]) -> anyhow::Result<Vec<(Side, Side)>> {
    let letter = letter::load_letter(file)?;
    // A column names the simulator profile it is compared with; one that
    // names no profile would never be paired, silently.
    let names: Vec<&str> = profiles().iter().map(|p| p.name).collect();
    for r in &letter.runs {
        if profile(&r.kernel_profile).is_none() {
            bail!(
                "--letter {}: run `{}` has kernel_profile = \"{}\", which is not a kernel profile{} (known: {}; `reclaimlab list kernels`); fix the transcription",
                file.display(),
                r.side.name,
                r.kernel_profile,
                crate::suggest::hint(&r.kernel_profile, &names),
                names.join(", ")
            );
        }
    }
    if records.is_empty() {
        bail!(
            "--letter {}: give the simulated records to score (e.g. the `--out` of `reclaimlab sim stutterp --kernel {}`)",
            file.display(),
            letter.kernels().join(",")
        );
    }
    let mut dirs = Vec::new();
    for r in records {
        if r.join("run.json").exists() {
            dirs.push(r.clone());
        } else {
            let inner = crate::out_dir::records_in(r);
            if inner.is_empty() {
                dirs.push(r.clone());
            }
            dirs.extend(inner);
        }
    }
    let mut pairs = Vec::new();
    for d in dirs {
        let s = side(&d)?;
        match letter.run_for_kernel(&s.kernel) {
            Some(col) => pairs.push((s, col.side.clone())),
            None => eprintln!(
                "reclaimlab: warning: {} is kernel `{}`; {} has columns for {} only: skipped",
                d.display(),
                s.kernel,
                file.display(),
                letter.kernels().join(", ")
            ),
        }
    }
    if pairs.is_empty() {
        bail!(
            "--letter {}: none of the records is of a kernel the letter has a column for ({})",
            file.display(),
            letter.kernels().join(", ")
        );
    }
    Ok(pairs)
}
