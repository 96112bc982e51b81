//! Summary statistics and comparison functions, as mmtests computes them.
//!
//! Everything here is a pure function over `f64` samples so that the numbers in
//! a reclaimlab report can be checked against mmtests by hand. The definitions
//! follow `bin/lib/MMTests/Stat.pm`, `Summarise.pm` and `Compare.pm` (see
//! `shared/reference/mmtests-method.md` §2):
//!
//! * samples are sorted in the *preferred* order (ascending when lower is
//!   better, as for latency);
//! * percentiles are a nearest-rank floor, `sorted[max(1, int(n·p/100)) − 1]`,
//!   labelled `Max-p` as in mmtests 2019–2026;
//! * `BAmean-p` is the mean of the first `int(n·p/100)` sorted samples;
//! * the % column is `pndiff` (lower preferred) or `pdiff` (higher preferred)
//!   with mmtests' special cases;
//! * significance is the 2018–2024 two-sample t-test (unpooled SE,
//!   df = n₁+n₂−2, p < 0.10) or, with `--significance ci`, the interval rule of
//!   2024-11 (mean ± 1.96·s, significant if |cidiff| > 1).
//!
//! One departure from mmtests: neither test marks anything where either side
//! has fewer than [`MIN_SAMPLES`] samples. mmtests' `calc_stddev` gives 0 for
//! one sample, so its t-test sees a zero standard error and calls any
//! difference significant, and its interval rule sees a zero-width interval
//! and does the same; a single sample says nothing about spread, so here the
//! tests return `None` and the report says why in a footnote.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Which direction is better for a metric (mmtests' "preferred value").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preferred {
    /// Lower is better (latencies, times): ascending sort, `pndiff`.
    Lower,
    /// Higher is better (throughput): descending sort, `pdiff`.
    Higher,
}

/// The significance level of mmtests' t-test (`_SignificanceLevel`).
pub const SIGNIFICANCE_LEVEL: f64 = 0.10;

/// The fewest samples each side needs before a significance test is run: a
/// standard deviation needs two.
pub const MIN_SAMPLES: usize = 2;

/// `qnorm(0.975)`: the half-width factor of mmtests' 95% interval (α = 0.05).
pub const Z_975: f64 = 1.959_963_984_540_054;

/// Sorts samples in the preferred order (NaNs last, deterministic).
pub fn sort_preferred(samples: &mut [f64], pref: Preferred) {
    samples.sort_by(|a, b| a.total_cmp(b));
    if pref == Preferred::Higher {
        samples.reverse();
    }
}

/// Smallest sample (`Min`); `None` if empty.
pub fn min(samples: &[f64]) -> Option<f64> {
    samples.iter().copied().reduce(f64::min)
}

/// Largest sample (`Max`); `None` if empty.
pub fn max(samples: &[f64]) -> Option<f64> {
    samples.iter().copied().reduce(f64::max)
}

/// Arithmetic mean Σx/n (`Amean`); `None` if empty.
pub fn amean(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    Some(samples.iter().sum::<f64>() / samples.len() as f64)
}

/// Sample standard deviation √(Σ(x−mean)²/(n−1)) (`Stddev`, `calc_stddev`).
/// mmtests returns 0 for a single sample; so does this.
pub fn stddev(samples: &[f64]) -> Option<f64> {
    let mean = amean(samples)?;
    let n = samples.len();
    if n < 2 {
        return Some(0.0);
    }
    let ss: f64 = samples.iter().map(|x| (x - mean) * (x - mean)).sum();
    Some((ss / (n - 1) as f64).sqrt())
}

/// Coefficient of variation 100·stddev/mean (`CoeffVar`); 0 when the mean is 0.
pub fn coeffvar(samples: &[f64]) -> Option<f64> {
    let mean = amean(samples)?;
    let sd = stddev(samples)?;
    if mean == 0.0 {
        return Some(0.0);
    }
    Some(100.0 * sd / mean)
}

/// The 1-based rank of mmtests' nearest-rank floor percentile among `n`
/// samples: `max(1, int(n·p/100))`, at most `n`. The one definition behind
/// [`percentile_sorted`] and [`percentile_counts`].
pub fn nearest_rank(n: u64, p: f64) -> u64 {
    (((n as f64) * p / 100.0).floor() as u64).clamp(1, n.max(1))
}

/// Nearest-rank floor percentile on samples already sorted in the preferred
/// order: `sorted[max(1, int(n·p/100)) − 1]` (`Max-p`).
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let idx = nearest_rank(n as u64, p) as usize - 1;
    sorted.get(idx.min(n - 1)).copied()
}

/// The same percentile over a value → count distribution, ascending (lower
/// preferred): the value at rank [`nearest_rank`] of the expanded samples.
/// 0 for an empty distribution.
pub fn percentile_counts(dist: &std::collections::BTreeMap<u64, u64>, p: f64) -> u64 {
    let n: u64 = dist.values().sum();
    if n == 0 {
        return 0;
    }
    let rank = nearest_rank(n, p);
    let mut seen = 0;
    for (&v, &c) in dist {
        seen += c;
        if seen >= rank {
            return v;
        }
    }
    dist.keys().next_back().copied().unwrap_or(0)
}

/// Mean of the best p% of samples already sorted in the preferred order: the
/// first `int(n·p/100)` of them (`BAmean-p`). With fewer than one sample in
/// that share, mmtests' loop averages nothing; we return the first sample so
/// the row is not empty.
pub fn bamean_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let k = (((n as f64) * p / 100.0).floor() as usize).clamp(1, n);
    amean(&sorted[..k])
}

/// mmtests' `pndiff(new, base) = 100 − new·100/base` (lower is better;
/// positive means better). Equal → 0; new = 0 → 100; base = 0 → −99.
pub fn pndiff(new: f64, base: f64) -> f64 {
    if new == base {
        0.0
    } else if new == 0.0 {
        100.0
    } else if base == 0.0 {
        -99.0
    } else {
        100.0 - new * 100.0 / base
    }
}

/// mmtests' `pdiff(new, base) = new·100/base − 100` (higher is better).
/// new = 0 or equal → 0; base = 0 → 100.
pub fn pdiff(new: f64, base: f64) -> f64 {
    if new == 0.0 || new == base {
        0.0
    } else if base == 0.0 {
        100.0
    } else {
        new * 100.0 / base - 100.0
    }
}

/// `pdiff` for counts (the `Samples` rows): as [`pdiff`], except that a count
/// falling to 0 is −100 %, all of it gone. mmtests' `pdiff` returns 0 when
/// the new value is 0, which reads as "no change"; here it would hide a
/// stall kind that disappeared.
pub fn pdiff_count(new: f64, base: f64) -> f64 {
    if new == 0.0 && base > 0.0 {
        -100.0
    } else {
        pdiff(new, base)
    }
}

/// The compare function for a statistic: `pndiff` when lower is preferred,
/// and always for Stddev and CoeffVar (`Summarise::getStatCompareFunc`).
pub fn compare(new: f64, base: f64, pref: Preferred, is_spread: bool) -> f64 {
    if is_spread || pref == Preferred::Lower {
        pndiff(new, base)
    } else {
        pdiff(new, base)
    }
}

/// Mean, standard deviation and sample count of one operation in one run —
/// what `Summarise::extractSummary` stores for the significance tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanSd {
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n−1).
    pub sd: f64,
    /// Number of samples.
    pub n: usize,
}

/// Result of the 2018–2024 t-test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TTest {
    /// t = |m₁−m₂| / SE (infinite when both SEs are 0 and the means differ).
    pub t: f64,
    /// Degrees of freedom n₁+n₂−2.
    pub df: f64,
    /// Two-sided p-value 2·P(T > t).
    pub p: f64,
    /// p < [`SIGNIFICANCE_LEVEL`].
    pub significant: bool,
}

/// mmtests' `Compare::_significanceTest` (2018-10 to 2024-11): unpooled
/// SE = √(s₁²/n₁ + s₂²/n₂), df = n₁+n₂−2 (not Welch), two-sided p from
/// Student's t; significant if p < 0.10. If both SEs are 0, any difference is
/// significant (p = 0) and no difference is not (p = 1). `None` when a run
/// has fewer than [`MIN_SAMPLES`] samples (mmtests would test a single
/// sample with s = 0; see the module comment) or df < 1.
pub fn ttest(a: MeanSd, b: MeanSd) -> Option<TTest> {
    if a.n < MIN_SAMPLES || b.n < MIN_SAMPLES {
        return None;
    }
    let df = (a.n + b.n) as f64 - 2.0;
    if df < 1.0 {
        return None;
    }
    let se1 = a.sd / (a.n as f64).sqrt();
    let se2 = b.sd / (b.n as f64).sqrt();
    let diff = (a.mean - b.mean).abs();
    if se1 == 0.0 && se2 == 0.0 {
        let significant = diff != 0.0;
        return Some(TTest {
            t: if significant { f64::INFINITY } else { 0.0 },
            df,
            p: if significant { 0.0 } else { 1.0 },
            significant,
        });
    }
    let se = (se1 * se1 + se2 * se2).sqrt();
    let t = diff / se;
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * dist.sf(t)).clamp(0.0, 1.0);
    Some(TTest {
        t,
        df,
        p,
        significant: p < SIGNIFICANCE_LEVEL,
    })
}

/// Result of the interval rule (mmtests since 2024-11).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CiTest {
    /// Difference divided by the sum of the facing half-widths.
    pub cidiff: f64,
    /// |cidiff| > 1.
    pub significant: bool,
}

/// mmtests' confidence-interval rule (Jan Kara, `8cd087ae`): each mean gets
/// the interval mean ± 1.96·s (*not* divided by √n, as `_calc_meanci` does);
/// `cidiff = (new − base) / (facing half-widths)`; significant if
/// |cidiff| > 1. Equal means are never significant; different means with
/// zero-width intervals always are. `None` when a run has fewer than
/// [`MIN_SAMPLES`] samples (its interval would have zero width only because
/// one sample has no spread).
pub fn citest(new: MeanSd, base: MeanSd) -> Option<CiTest> {
    if new.n < MIN_SAMPLES || base.n < MIN_SAMPLES {
        return None;
    }
    let hw_new = Z_975 * new.sd;
    let hw_base = Z_975 * base.sd;
    let diff = new.mean - base.mean;
    // Facing half-widths: whichever sides of the two intervals point at each
    // other. The intervals are symmetric, so both cases sum the same widths.
    let facing = hw_new + hw_base;
    let cidiff = if diff == 0.0 {
        0.0
    } else if facing == 0.0 {
        diff.signum() * f64::INFINITY
    } else {
        diff / facing
    };
    Some(CiTest {
        cidiff,
        significant: cidiff.abs() > 1.0,
    })
}

/// The row set reclaimlab prints for a latency operation (mmtests'
/// Multiops rows plus the Max-p rows the 2021 letters quote).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// `Min`.
    pub min: f64,
    /// `Amean`.
    pub amean: f64,
    /// `Stddev` (n−1).
    pub stddev: f64,
    /// `CoeffVar` (%).
    pub coeffvar: f64,
    /// `Max-90`.
    pub max90: f64,
    /// `Max-95`.
    pub max95: f64,
    /// `Max-99`.
    pub max99: f64,
    /// `Max`.
    pub max: f64,
    /// `BAmean-95`.
    pub bamean95: f64,
}

/// Summarises samples (any order; they are copied and sorted). An empty input
/// gives an all-zero summary with n = 0.
pub fn summarise(samples: &[f64], pref: Preferred) -> Summary {
    if samples.is_empty() {
        return Summary::default();
    }
    let mut sorted = samples.to_vec();
    sort_preferred(&mut sorted, pref);
    Summary {
        n: sorted.len(),
        min: min(&sorted).unwrap_or(0.0),
        amean: amean(&sorted).unwrap_or(0.0),
        stddev: stddev(&sorted).unwrap_or(0.0),
        coeffvar: coeffvar(&sorted).unwrap_or(0.0),
        max90: percentile_sorted(&sorted, 90.0).unwrap_or(0.0),
        max95: percentile_sorted(&sorted, 95.0).unwrap_or(0.0),
        max99: percentile_sorted(&sorted, 99.0).unwrap_or(0.0),
        max: max(&sorted).unwrap_or(0.0),
        bamean95: bamean_sorted(&sorted, 95.0).unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() <= eps
    }

    #[test]
    fn basic_statistics_by_hand() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, Σ(x−5)² = 32, s = √(32/7).
        let x = [9.0, 2.0, 4.0, 4.0, 5.0, 4.0, 7.0, 5.0];
        let s = summarise(&x, Preferred::Lower);
        assert_eq!(s.n, 8);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert_eq!(s.amean, 5.0);
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(
            s.coeffvar,
            100.0 * (32.0f64 / 7.0).sqrt() / 5.0,
            1e-12
        ));
        // int(8·0.90)=7 → sorted[6] = 7; int(8·0.95)=7 → 7; int(8·0.99)=7 → 7.
        assert_eq!(s.max90, 7.0);
        assert_eq!(s.max95, 7.0);
        assert_eq!(s.max99, 7.0);
        // BAmean-95: first int(7.6)=7 samples: (2+4+4+4+5+5+7)/7 = 31/7.
        assert!(close(s.bamean95, 31.0 / 7.0, 1e-12));
    }

    #[test]
    fn percentile_nearest_rank_floor() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&sorted, 90.0), Some(90.0));
        assert_eq!(percentile_sorted(&sorted, 99.0), Some(99.0));
        // n=5: int(4.5)=4 → sorted[3]; int(0.05)=0 → max(1,0)-1 = 0.
        let s5 = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile_sorted(&s5, 90.0), Some(4.0));
        assert_eq!(percentile_sorted(&s5, 1.0), Some(1.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
        // Higher preferred: descending order, so Max-90 is the 10th-lowest.
        let mut h = sorted.clone();
        sort_preferred(&mut h, Preferred::Higher);
        assert_eq!(percentile_sorted(&h, 90.0), Some(11.0));
    }

    #[test]
    fn percentile_counts_is_percentile_sorted_expanded() {
        // 1×3, 2×1, 7×4: n = 8, sorted 1 1 1 2 7 7 7 7.
        let dist: std::collections::BTreeMap<u64, u64> = [(1, 3), (2, 1), (7, 4)].into();
        let sorted = [1.0, 1.0, 1.0, 2.0, 7.0, 7.0, 7.0, 7.0];
        for p in [1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 100.0] {
            assert_eq!(
                Some(percentile_counts(&dist, p) as f64),
                percentile_sorted(&sorted, p),
                "p = {p}"
            );
        }
        // int(8·0.5) = 4 → the 4th: 2; int(8·0.25) = 2 → 1.
        assert_eq!(percentile_counts(&dist, 50.0), 2);
        assert_eq!(percentile_counts(&dist, 25.0), 1);
        assert_eq!(percentile_counts(&Default::default(), 50.0), 0);
    }

    #[test]
    fn single_sample() {
        let s = summarise(&[3.5], Preferred::Lower);
        assert_eq!(
            (s.min, s.amean, s.stddev, s.max90, s.bamean95),
            (3.5, 3.5, 0.0, 3.5, 3.5)
        );
    }

    #[test]
    fn pndiff_v4_letter() {
        // Amean mmap-4 31.4003 → 176.8729 in the v4 cover letter: −463.28%.
        let d = pndiff(176.8729, 31.4003);
        assert_eq!(format!("{d:.2}"), "-463.28");
    }

    #[test]
    fn pndiff_pdiff_special_cases() {
        assert_eq!(pndiff(5.0, 5.0), 0.0);
        assert_eq!(pndiff(0.0, 5.0), 100.0);
        assert_eq!(pndiff(5.0, 0.0), -99.0);
        assert_eq!(pndiff(0.0, 0.0), 0.0);
        assert_eq!(pndiff(5.0, 10.0), 50.0);
        assert_eq!(pdiff(0.0, 5.0), 0.0);
        assert_eq!(pdiff(5.0, 5.0), 0.0);
        assert_eq!(pdiff(5.0, 0.0), 100.0);
        assert_eq!(pdiff(15.0, 10.0), 50.0);
        assert_eq!(compare(15.0, 10.0, Preferred::Higher, true), -50.0);
        // Counts: falling to 0 is all of it gone, not "no change".
        assert_eq!(pdiff_count(0.0, 4.0), -100.0);
        assert_eq!(pdiff_count(0.0, 0.0), 0.0);
        assert_eq!(pdiff_count(3.0, 4.0), -25.0);
        assert_eq!(pdiff_count(3.0, 0.0), 100.0);
    }

    #[test]
    fn ttest_by_hand() {
        // m1=10 s1=2 n1=4; m2=13 s2=2 n2=4: SE = √(1+1) = √2, t = 3/√2 =
        // 2.1213, df = 6. R: 2*pt(2.1213203, 6, lower.tail=FALSE) = 0.07814.
        let r = ttest(
            MeanSd {
                mean: 10.0,
                sd: 2.0,
                n: 4,
            },
            MeanSd {
                mean: 13.0,
                sd: 2.0,
                n: 4,
            },
        )
        .unwrap();
        assert!(close(r.t, 3.0 / 2f64.sqrt(), 1e-12));
        assert_eq!(r.df, 6.0);
        assert!(close(r.p, 0.078_14, 5e-5), "p = {}", r.p);
        assert!(r.significant);
        // Same but s=4: SE = √8, t = 1.0607, p ≈ 0.3297 → not significant.
        let r = ttest(
            MeanSd {
                mean: 10.0,
                sd: 4.0,
                n: 4,
            },
            MeanSd {
                mean: 13.0,
                sd: 4.0,
                n: 4,
            },
        )
        .unwrap();
        assert!(close(r.p, 0.3297, 5e-4), "p = {}", r.p);
        assert!(!r.significant);
    }

    #[test]
    fn ttest_both_se_zero() {
        let a = MeanSd {
            mean: 1.0,
            sd: 0.0,
            n: 3,
        };
        let b = MeanSd {
            mean: 2.0,
            sd: 0.0,
            n: 3,
        };
        assert!(ttest(a, b).unwrap().significant);
        assert!(!ttest(a, a).unwrap().significant);
        assert!(ttest(MeanSd { n: 1, ..a }, MeanSd { n: 1, ..b }).is_none());
    }

    /// The case: one latency sample against many. mmtests would mark
    /// the Amean difference significant (s = 0 for one sample, so SE is the
    /// other side's alone); neither rule may mark it here.
    #[test]
    fn one_sample_is_never_significant() {
        let one = MeanSd {
            mean: 52_000.0,
            sd: 0.0,
            n: 1,
        };
        let many = MeanSd {
            mean: 200.0,
            sd: 5.0,
            n: 400,
        };
        assert!(ttest(many, one).is_none());
        assert!(ttest(one, many).is_none());
        assert!(citest(one, many).is_none());
        assert!(citest(many, one).is_none());
        // Two samples each are enough to test.
        let two = MeanSd {
            n: 2,
            sd: 1.0,
            ..one
        };
        assert!(ttest(many, two).unwrap().significant);
        assert!(citest(two, many).unwrap().significant);
    }

    #[test]
    fn citest_by_hand() {
        // base 10 ± 1.96·1, new 14 ± 1.96·1: cidiff = 4/3.92 = 1.0204 → *.
        let base = MeanSd {
            mean: 10.0,
            sd: 1.0,
            n: 100,
        };
        let new = MeanSd {
            mean: 14.0,
            sd: 1.0,
            n: 100,
        };
        let c = citest(new, base).unwrap();
        assert!(close(c.cidiff, 4.0 / (2.0 * Z_975), 1e-12));
        assert!(c.significant);
        // 13: 3/3.92 < 1 → not significant (n does not matter: no √n).
        let c = citest(MeanSd { mean: 13.0, ..new }, base).unwrap();
        assert!(!c.significant);
        let c = citest(MeanSd { mean: 6.0, ..new }, base).unwrap();
        assert!(c.cidiff < -1.0 && c.significant);
    }
}
