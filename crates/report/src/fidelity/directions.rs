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

use serde::Serialize;

use super::{Kind, PairReport, Row};

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
    /// Real values, older and newer kernel.
    pub real: (f64, f64),
    /// Simulated values (`null` where the simulated record lacks the figure).
    pub sim: (Option<f64>, Option<f64>),
    /// The real kernels' direction.
    pub real_direction: Direction,
    /// The simulated direction (`null` without both simulated values).
    pub sim_direction: Option<Direction>,
    /// Whether they agree; `null` where the real kernels do not differ
    /// (flat) or the simulation lacks the figure: not scored.
    pub agree: Option<bool>,
}

/// Two pairs of one workload on an older and a newer kernel, compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Generations {
    /// The older pair's real side: name (kernel), record.
    pub older: String,
    /// The newer pair's real side.
    pub newer: String,
    /// The band, %.
    pub band_pct: f64,
    /// Every figure both real records have, in the older pair's order.
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

/// Compares the pair on the older kernel with the pair on the newer one.
pub fn compare_generations(older: &PairReport, newer: &PairReport, band_pct: f64) -> Generations {
    let mut rows = Vec::new();
    for o in older.rows.iter().filter(|r| directional(r)) {
        let Some(n) = newer.rows.iter().find(|n| n.key == o.key) else {
            continue;
        };
        let (Some(ro), Some(rn)) = (o.real, n.real) else {
            continue;
        };
        let dir = |a: f64, b: f64| {
            if o.kind == Kind::Count && a.max(b) < MIN_COUNT {
                Direction::Flat
            } else {
                direction(a, b, band_pct)
            }
        };
        let real_direction = dir(ro, rn);
        let sim_direction = match (o.sim, n.sim) {
            (Some(a), Some(b)) => Some(dir(a, b)),
            _ => None,
        };
        let agree = match (real_direction, sim_direction) {
            (Direction::Flat, _) | (_, None) => None,
            (r, Some(s)) => Some(r == s),
        };
        rows.push(DirectionRow {
            key: o.key.clone(),
            label: o.label.clone(),
            real: (ro, rn),
            sim: (o.sim, n.sim),
            real_direction,
            sim_direction,
            agree,
        });
    }
    let of = rows.iter().filter(|r| r.agree.is_some()).count();
    let agree = rows.iter().filter(|r| r.agree == Some(true)).count();
    let side = |p: &PairReport| format!("{} ({}), {}", p.real.name, p.real.kernel, p.real.source);
    Generations {
        older: side(older),
        newer: side(newer),
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
}
