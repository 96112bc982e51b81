//! The direction of each difference between two kernel generations: the
//! issue's target that "the direction of every difference between the two
//! kernel generations [be] the same as on the real kernels".
//!
//! Two scored pairs of one suite, the same workload on an older and a newer
//! kernel (the 5.10 and 6.1 guests, say), give each figure four values:
//! real older, real newer, simulated older, simulated newer. Where the real
//! kernels differ by more than the band (10 % by default: a smaller change
//! is taken as none), the simulated pair should differ the same way. Figures
//! compared: counts, times, rates, percentages and quantiles (not shares of
//! stall reasons, whose points say more than a direction, nor distances).
//! A count below [`MIN_COUNT`] on both kernels has no direction either: a
//! handful of events (3 against 0 pages reclaimed immediately) is noise.
//!
//! One run of each kernel cannot tell a difference between the kernels from
//! one between two runs: two runs of the same guest case have differed by a
//! factor of two in swap-ins (docs/fidelity.md). So a side may hold several
//! runs (replicates): the means are compared against the band, and with two
//! runs or more on both sides a move past the band counts only if mmtests'
//! t-test (`stats::ttest`, p < 0.10, the rule behind its `*` marks) finds
//! it; otherwise it is `noise`, not scored. The simulated side follows the
//! same rule over its own runs (one per real record, each on that record's
//! machine), so a simulated difference that the machines' spread explains
//! does not count as a direction either.

use serde::Serialize;

use super::{Kind, PairReport, Row};
use crate::stats::{amean, coeffvar, stddev, ttest, MeanSd};

/// Counts under this on both sides of a comparison are flat: their Poisson
/// noise alone is 10 % or more.
pub const MIN_COUNT: f64 = 100.0;

/// Which way a figure moves from the older kernel to the newer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Larger on the newer kernel by more than the band.
    Up,
    /// Smaller by more than the band.
    Down,
    /// Within the band (or zero on both).
    Flat,
}

impl Direction {
    /// The word printed in tables.
    pub fn word(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
            Direction::Flat => "flat",
        }
    }
}

/// `older` → `newer` with a band of `band_pct` % (a factor of 1 + band/100
/// either way: 10 % makes 100 → 109 and 100 → 92 flat): a value that goes from
/// zero to non-zero moves; non-positive values count as zero.
pub fn direction(older: f64, newer: f64, band_pct: f64) -> Direction {
    let (a, b) = (older.max(0.0), newer.max(0.0));
    if a == 0.0 || b == 0.0 {
        return match (a > 0.0, b > 0.0) {
            (false, true) => Direction::Up,
            (true, false) => Direction::Down,
            _ => Direction::Flat,
        };
    }
    let band = (1.0 + band_pct / 100.0).log2();
    let l = (b / a).log2();
    if l >= band {
        Direction::Up
    } else if l <= -band {
        Direction::Down
    } else {
        Direction::Flat
    }
}

/// One figure of a generation comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DirectionRow {
    /// The rows' key ([`Row::key`]).
    pub key: String,
    /// Label.
    pub label: String,
    /// Real values, older and newer kernel (the mean of the runs).
    pub real: (f64, f64),
    /// Simulated values (`null` where a simulated record lacks the figure).
    pub sim: (Option<f64>, Option<f64>),
    /// The real kernels' direction.
    pub real_direction: Direction,
    /// The simulated direction (`null` without both simulated values).
    pub sim_direction: Option<Direction>,
    /// With runs to test: the real means' p-value (`null` with one run a
    /// side, or where the means are within the band).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_p: Option<f64>,
    /// The same for the simulated runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_p: Option<f64>,
    /// The real means moved past the band but the runs' spread explains it
    /// (t-test p >= 0.10): `flat`, shown as `noise`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub real_noise: bool,
    /// The same for the simulated runs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sim_noise: bool,
    /// With two runs or more on both sides: the real runs' coefficient of
    /// variation, %, older and newer (how far one run of the case is from
    /// another: the spread any comparison with one run has to live with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_cv_pct: Option<(f64, f64)>,
    /// Whether they agree; `null` where the real kernels do not differ
    /// (flat) or the simulation lacks the figure: not scored.
    pub agree: Option<bool>,
}

impl DirectionRow {
    /// The real direction's word: `noise` for a move the runs' spread explains.
    pub fn real_word(&self) -> &'static str {
        if self.real_noise {
            "noise"
        } else {
            self.real_direction.word()
        }
    }
    /// The simulated direction's word (`-` without it).
    pub fn sim_word(&self) -> &'static str {
        match self.sim_direction {
            _ if self.sim_noise => "noise",
            Some(d) => d.word(),
            None => "-",
        }
    }
}

/// Pairs of one workload on an older and a newer kernel, compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Generations {
    /// The older pairs' real side: name (kernel), record (the first run's).
    pub older: String,
    /// The newer pairs' real side.
    pub newer: String,
    /// Runs (pairs) on each side: older, newer.
    pub runs: (usize, usize),
    /// The band, %.
    pub band_pct: f64,
    /// Every figure all real records have, in the first older pair's order.
    pub rows: Vec<DirectionRow>,
    /// Scored rows (the real kernels differ and the simulation has both
    /// values) whose directions agree.
    pub agree: usize,
    /// Scored rows.
    pub of: usize,
}

fn directional(r: &Row) -> bool {
    !matches!(r.kind, Kind::Share | Kind::Distance)
}

/// A direction from runs of each kernel: the means against the band (and
/// [`MIN_COUNT`] for counts), then, with two runs or more a side, the
/// t-test. Returns the direction, the p-value if tested, and whether a move
/// past the band was found to be noise.
fn runs_direction(
    older: &[f64],
    newer: &[f64],
    kind: Kind,
    band_pct: f64,
) -> (Direction, Option<f64>, bool) {
    let (Some(a), Some(b)) = (amean(older), amean(newer)) else {
        return (Direction::Flat, None, false);
    };
    let moved = if kind == Kind::Count && a.max(b) < MIN_COUNT {
        Direction::Flat
    } else {
        direction(a, b, band_pct)
    };
    if moved == Direction::Flat || older.len() < 2 || newer.len() < 2 {
        return (moved, None, false);
    }
    let side = |v: &[f64], mean: f64| MeanSd {
        mean,
        sd: stddev(v).unwrap_or(0.0),
        n: v.len(),
    };
    match ttest(side(older, a), side(newer, b)) {
        Some(t) if !t.significant => (Direction::Flat, Some(t.p), true),
        Some(t) => (moved, Some(t.p), false),
        None => (moved, None, false),
    }
}

/// Compares the pairs on the older kernel with the pairs on the newer one
/// (one or more runs each; every slice non-empty).
pub fn compare_generations(
    older: &[&PairReport],
    newer: &[&PairReport],
    band_pct: f64,
) -> Generations {
    let mut rows = Vec::new();
    let Some(first) = older.first() else {
        return Generations {
            older: String::new(),
            newer: String::new(),
            runs: (0, newer.len()),
            band_pct,
            rows,
            agree: 0,
            of: 0,
        };
    };
    // The figure in every pair of a side, real and simulated; a figure some
    // real record lacks is left out, one a simulated record lacks has no
    // simulated direction.
    let values = |side: &[&PairReport], key: &str| -> Option<(Vec<f64>, Option<Vec<f64>>)> {
        let mut real = Vec::new();
        let mut sim = Some(Vec::new());
        for p in side {
            let r = p.rows.iter().find(|r| r.key == key)?;
            real.push(r.real?);
            match (&mut sim, r.sim) {
                (Some(v), Some(x)) => v.push(x),
                _ => sim = None,
            }
        }
        Some((real, sim))
    };
    for o in first.rows.iter().filter(|r| directional(r)) {
        let (Some((ro, so)), Some((rn, sn))) = (values(older, &o.key), values(newer, &o.key))
        else {
            continue;
        };
        let (real_direction, real_p, real_noise) = runs_direction(&ro, &rn, o.kind, band_pct);
        let (sim_direction, sim_p, sim_noise) = match (&so, &sn) {
            (Some(a), Some(b)) => {
                let (d, p, n) = runs_direction(a, b, o.kind, band_pct);
                (Some(d), p, n)
            }
            _ => (None, None, false),
        };
        let agree = match (real_direction, sim_direction) {
            (Direction::Flat, _) | (_, None) => None,
            (r, Some(s)) => Some(r == s),
        };
        let mean = |v: &Option<Vec<f64>>| v.as_deref().and_then(amean);
        let real_cv_pct = (ro.len() >= 2 && rn.len() >= 2)
            .then(|| Some((coeffvar(&ro)?, coeffvar(&rn)?)))
            .flatten();
        rows.push(DirectionRow {
            key: o.key.clone(),
            label: o.label.clone(),
            real: (amean(&ro).unwrap_or(0.0), amean(&rn).unwrap_or(0.0)),
            sim: (mean(&so), mean(&sn)),
            real_direction,
            sim_direction,
            real_p,
            sim_p,
            real_noise,
            sim_noise,
            real_cv_pct,
            agree,
        });
    }
    let of = rows.iter().filter(|r| r.agree.is_some()).count();
    let agree = rows.iter().filter(|r| r.agree == Some(true)).count();
    let side = |ps: &[&PairReport]| match ps {
        [p] => format!("{} ({}), {}", p.real.name, p.real.kernel, p.real.source),
        [p, ..] => format!(
            "{} ({}), {} and {} more run(s)",
            p.real.name,
            p.real.kernel,
            p.real.source,
            ps.len() - 1
        ),
        [] => String::new(),
    };
    Generations {
        older: side(older),
        newer: side(newer),
        runs: (older.len(), newer.len()),
        band_pct,
        rows,
        agree,
        of,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_within_the_band_is_flat() {
        assert_eq!(direction(100.0, 109.0, 10.0), Direction::Flat);
        assert_eq!(direction(100.0, 111.0, 10.0), Direction::Up);
        assert_eq!(direction(100.0, 92.0, 10.0), Direction::Flat);
        assert_eq!(direction(100.0, 90.0, 10.0), Direction::Down);
        assert_eq!(direction(100.0, 90.0, 5.0), Direction::Down);
        assert_eq!(direction(0.0, 3.0, 10.0), Direction::Up);
        assert_eq!(direction(3.0, 0.0, 10.0), Direction::Down);
        assert_eq!(direction(0.0, 0.0, 10.0), Direction::Flat);
    }

    #[test]
    fn replicates_turn_a_move_their_spread_explains_into_noise() {
        // Means 100 -> 130 (past the band) with runs that overlap: noise.
        let (d, p, noise) = runs_direction(
            &[60.0, 100.0, 140.0],
            &[90.0, 130.0, 170.0],
            Kind::Count,
            10.0,
        );
        assert_eq!((d, noise), (Direction::Flat, true));
        assert!(p.unwrap() > 0.10);
        // The same means with tight runs: a direction.
        let (d, p, noise) = runs_direction(
            &[99.0, 100.0, 101.0],
            &[129.0, 130.0, 131.0],
            Kind::Count,
            10.0,
        );
        assert_eq!((d, noise), (Direction::Up, false));
        assert!(p.unwrap() < 0.10);
        // One run a side: the band alone, untested.
        assert_eq!(
            runs_direction(&[100.0], &[130.0], Kind::Count, 10.0),
            (Direction::Up, None, false)
        );
        // Within the band: flat, untested, whatever the spread.
        assert_eq!(
            runs_direction(&[100.0, 101.0], &[104.0, 105.0], Kind::Count, 10.0),
            (Direction::Flat, None, false)
        );
        // Small counts have no direction.
        assert_eq!(
            runs_direction(&[10.0, 11.0], &[50.0, 51.0], Kind::Count, 10.0),
            (Direction::Flat, None, false)
        );
    }
}
