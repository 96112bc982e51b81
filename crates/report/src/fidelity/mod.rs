//! Fidelity: how closely a simulated run matches a real one, figure by
//! figure, with a verdict per figure against a stated tolerance.
//!
//! Everything reclaimlab explains rests on the simulated kernel behaving
//! like the real one; this module measures it (issue 20, `docs/fidelity.md`).
//! A run on either side is reduced to a [`Side`]: scalar [`Figure`]s (the
//! Duration and Ops rows, swap and fault counters, latency quantiles per
//! operation) and stall groups per (event, who, reason) with their delay
//! distributions. A side comes from a run record ([`side_from_run`]) or from
//! a published table transcribed with its source ([`letter`]). [`score_pair`]
//! puts two sides row by row — ratio sim/real and its log2 for counts, times
//! and quantiles; difference in points for the shares of stall reasons;
//! Kolmogorov–Smirnov distance for delay distributions — and gives each row
//! a [`Verdict`] and each pair a [`Summary`]. Rows where both sides are 0
//! agree; where one side is 0 they are `missing` or `extra`, never an
//! infinite ratio.
//!
//! The serde field names of [`FidelityReport`] are the
//! `reclaimlab.fidelity/1` schema (`docs/fidelity.md`). Output is
//! deterministic: rows are in the reference side's order, then the
//! simulated side's.

pub mod directions;
mod figures;
pub mod letter;
mod score;
pub mod suite;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::Serialize;

pub use figures::{generation_of, side_from_run};
pub use score::{ks_distance, score_pair, total_summary};

/// The JSON schema name.
pub const SCHEMA: &str = "reclaimlab.fidelity/1";

/// What a figure measures, which decides how two values of it compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A number of events or pages; grows with the machine and the run.
    Count,
    /// Seconds of CPU or wall time.
    Seconds,
    /// Pages per second.
    Rate,
    /// A ratio in % (efficiency, percentage of direct scans).
    Percent,
    /// A latency or delay quantile (ms for latencies, µs for stall delays).
    Quantile,
    /// A share in % of a whole, compared by its difference in points.
    Share,
    /// A distance between two distributions (Kolmogorov–Smirnov, 0–1).
    Distance,
}

impl Kind {
    /// Whether the figure grows with the size of the machine and the run
    /// (counts, times, rates). The others (shares, efficiencies, quantiles,
    /// distances) compare across machine sizes.
    pub fn scales(self) -> bool {
        matches!(self, Kind::Count | Kind::Seconds | Kind::Rate)
    }
}

/// One scalar figure of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// Stable key, e.g. `ops.direct_pages_scanned`, `latency.mmap-4.p99`.
    pub key: String,
    /// The key with its operation or stall group left out
    /// (`latency.p99`): a side that has any figure of a family measures
    /// the family, so a figure of it that the side lacks is absent, not
    /// unknown.
    pub family: String,
    /// Row label as the tables print it (`Ops Direct pages scanned`).
    pub label: String,
    /// Table group: `duration`, `ops`, `vmstat`, `latency`, `stalls`.
    pub group: String,
    /// How it compares.
    pub kind: Kind,
    /// The value.
    pub value: f64,
}

/// The stalls of one (event, who, reason) in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StallGroup {
    /// Tracepoint name (`mm_vmscan_throttled`, `writeback_congestion_wait`, …).
    pub event: String,
    /// `kswapd`, `direct`, or `all` (a source that does not say who).
    pub who: String,
    /// Throttling reason, empty for events without one.
    pub reason: String,
    /// Number of stalls.
    pub count: u64,
    /// Delay µs → number of stalls (empty when the source gives no delays).
    pub delays_us: BTreeMap<u64, u64>,
}

/// One side of a comparison: a run reduced to its figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Side {
    /// Run name.
    pub name: String,
    /// `sim`, `real`, `import` or `letter`.
    pub origin: String,
    /// Kernel profile, `uname -r`, or the letter's column.
    pub kernel: String,
    /// Throttling generation: `congestion` (≤ 5.15), `throttle` (≥ 5.16),
    /// or `other` (a policy or profile of no kernel release).
    pub generation: String,
    /// Workload name.
    pub workload: String,
    /// Machine name (or what the source says of it).
    pub machine: String,
    /// Where the run came from: a record directory, or a file and its citation.
    pub source: String,
    /// Scalar figures in table order.
    pub figures: Vec<Figure>,
    /// Stall groups; `None` when the run has no stall data (no trace).
    pub stalls: Option<Vec<StallGroup>>,
    /// The keys of the rows a published comparison counts (the letter's 38),
    /// when the side declares them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<Vec<String>>,
    /// What the (real) side's kernel did in units the simulator lacks
    /// (`kernel_notes::folio_notes`: anonymous THPs, large page-cache
    /// folios); the pair's warnings repeat them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

/// The tolerances of the verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    /// Counts, times, rates, percentages and quantiles: within if
    /// max(sim/real, real/sim) ≤ factor.
    pub factor: f64,
    /// Shares of stall reasons: within if |sim − real| ≤ this many points.
    pub share_points: f64,
    /// Delay distributions: within if the Kolmogorov–Smirnov distance ≤ this.
    pub ks: f64,
    /// Generation comparisons: a figure that changes by less than this
    /// many % between the older and the newer kernel has no direction.
    pub direction_pct: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            factor: 2.0,
            share_points: 10.0,
            ks: 0.25,
            direction_pct: 10.0,
        }
    }
}

/// The verdict of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Both sides are 0.
    Agree,
    /// Within the tolerance.
    Within,
    /// Outside the tolerance.
    Outside,
    /// The real side has it (non-zero), the simulated side has 0 or nothing.
    Missing,
    /// The simulated side has it (non-zero), the real side has 0 or nothing.
    Extra,
    /// One side does not measure this figure at all: not scored.
    NotCompared,
}

impl Verdict {
    /// Whether the row counts as matching.
    pub fn ok(self) -> bool {
        matches!(self, Verdict::Agree | Verdict::Within)
    }

    /// The name in JSON (`not-compared`).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Within => "within",
            Verdict::Outside => "outside",
            Verdict::Missing => "missing",
            Verdict::Extra => "extra",
            Verdict::NotCompared => "not-compared",
        }
    }

    /// The word printed in tables.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Within => "within",
            Verdict::Outside => "OUTSIDE",
            Verdict::Missing => "MISSING",
            Verdict::Extra => "EXTRA",
            Verdict::NotCompared => "n/c",
        }
    }
}

/// One row of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Stable key (see [`Figure::key`]; stall rows are
    /// `stall.EVENT.WHO.REASON.{count,share,ks,p50,p90,p99}`, REASON `-`
    /// for events without one).
    pub key: String,
    /// Table group.
    pub group: String,
    /// Label.
    pub label: String,
    /// How it compares.
    pub kind: Kind,
    /// Simulated value (`null`: absent or not measured; for distance rows,
    /// always `null`).
    pub sim: Option<f64>,
    /// Real value.
    pub real: Option<f64>,
    /// sim / real, when both are non-zero.
    pub ratio: Option<f64>,
    /// log2(sim / real), when both are non-zero.
    pub log2: Option<f64>,
    /// sim − real in points (share rows), or the distance (distance rows).
    pub diff: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// One of the rows the reference side declares as its headline set.
    pub headline: bool,
}

/// Counts of a set of rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Rows that agree or are within tolerance.
    pub within: usize,
    /// Rows scored (everything but `not-compared`).
    pub of: usize,
    /// Rows of the set that were not compared (one side lacks them).
    pub not_compared: usize,
}

/// The summary of one pair (or of several: [`total_summary`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// All scored rows.
    pub rows: Tally,
    /// within / of, 0–1 (0 when nothing was scored).
    pub share_within: f64,
    /// Rows per verdict.
    pub verdicts: BTreeMap<String, usize>,
    /// Mean of |log2(sim/real)| over rows where both sides are non-zero.
    pub mean_abs_log2: Option<f64>,
    /// 2^mean_abs_log2: the geometric mean of the factor between the sides.
    pub typical_factor: Option<f64>,
    /// The rows the reference side declares as its headline set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<Tally>,
    /// Rows that compare across machine sizes (shares, percentages,
    /// quantiles, distances; not counts, times or rates).
    pub size_free: Tally,
}

/// One simulated run scored against one real run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PairReport {
    /// The simulated side (figures omitted in JSON: the rows carry them).
    pub sim: SideInfo,
    /// The real (reference) side.
    pub real: SideInfo,
    /// Differences that make the comparison weaker (machine, generation).
    pub warnings: Vec<String>,
    /// The summary.
    pub summary: Summary,
    /// The rows, reference order.
    pub rows: Vec<Row>,
}

/// What the report says of a side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SideInfo {
    /// Run name.
    pub name: String,
    /// Origin.
    pub origin: String,
    /// Kernel.
    pub kernel: String,
    /// Throttling generation.
    pub generation: String,
    /// Workload.
    pub workload: String,
    /// Machine.
    pub machine: String,
    /// Record directory or file and citation.
    pub source: String,
}

impl From<&Side> for SideInfo {
    fn from(s: &Side) -> Self {
        SideInfo {
            name: s.name.clone(),
            origin: s.origin.clone(),
            kernel: s.kernel.clone(),
            generation: s.generation.clone(),
            workload: s.workload.clone(),
            machine: s.machine.clone(),
            source: s.source.clone(),
        }
    }
}

/// The whole fidelity report: every pair and the total over them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FidelityReport {
    /// `reclaimlab.fidelity/1`.
    pub schema: String,
    /// The tolerances used.
    pub tolerance: Tolerance,
    /// The pairs, in the order given.
    pub pairs: Vec<PairReport>,
    /// The summary over every pair's rows.
    pub total: Summary,
    /// Older and newer kernel pairs of one workload compared direction by
    /// direction ([`directions`]), as a suite's `[[generations]]` ask.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub generations: Vec<directions::Generations>,
}

/// A pair that cannot be scored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairError(pub String);

impl std::fmt::Display for PairError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PairError {}

/// Scores every pair `(sim, real)` and sums them up. A pair of different
/// workloads is refused (the figures would measure different work).
pub fn fidelity_report(
    pairs: &[(Side, Side)],
    tol: Tolerance,
) -> Result<FidelityReport, PairError> {
    fidelity_report_with_generations(pairs, &[], tol)
}

/// [`fidelity_report`], and for each `(older, newer)` (indices into
/// `pairs`: one run or several of each kernel) the direction of every
/// difference between the two kernels, real against simulated.
pub fn fidelity_report_with_generations(
    pairs: &[(Side, Side)],
    generations: &[(Vec<usize>, Vec<usize>)],
    tol: Tolerance,
) -> Result<FidelityReport, PairError> {
    let scored = pairs
        .iter()
        .map(|(s, r)| score_pair(s, r, tol))
        .collect::<Result<Vec<_>, _>>()?;
    let total = total_summary(&scored);
    let side = |ix: &[usize]| -> Result<Vec<&PairReport>, PairError> {
        if ix.is_empty() {
            return Err(PairError("generations: a side without runs".into()));
        }
        ix.iter()
            .map(|&i| {
                scored.get(i).ok_or_else(|| {
                    PairError(format!(
                        "generations: pair {i}: no such pair among the {}",
                        scored.len()
                    ))
                })
            })
            .collect()
    };
    let generations = generations
        .iter()
        .map(|(o, n)| {
            Ok(directions::compare_generations(
                &side(o)?,
                &side(n)?,
                tol.direction_pct,
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FidelityReport {
        schema: SCHEMA.into(),
        tolerance: tol,
        pairs: scored,
        total,
        generations,
    })
}

/// Reads a run record directory as a side (the report's own reading of it,
/// `crate::load_run` and `crate::build_report`).
pub fn side_from_dir(dir: &std::path::Path) -> Result<Side, crate::LoadError> {
    let input = crate::load_run(dir)?;
    let report = crate::build_report(std::slice::from_ref(&input), crate::Options::default());
    Ok(side_from_run(&input, &report.runs[0]))
}

/// The `reclaimlab.fidelity/1` JSON, pretty-printed, with a final newline.
pub fn render_fidelity_json(report: &FidelityReport) -> Vec<u8> {
    // Plain structs, maps of strings and numbers: serialising cannot fail.
    let mut v = serde_json::to_vec_pretty(report)
        .unwrap_or_else(|e| format!("{{\"schema\":\"{SCHEMA}\",\"error\":\"{e}\"}}").into_bytes());
    v.push(b'\n');
    v
}
