//! Two sides put row by row: ratios, distances, verdicts and summaries.
//!
//! The rules (`docs/fidelity.md` §Tolerance):
//! - counts, times, rates, percentages and quantiles compare by ratio
//!   sim/real; within when the larger over the smaller is at most the factor
//!   (default 2);
//! - shares of stall reasons (a group's count over all stalls of the same
//!   `who`) compare by their difference in points (default 10);
//! - delay distributions compare by the two-sample Kolmogorov–Smirnov
//!   distance, the largest gap between the two empirical CDFs (default 0.25);
//! - both sides 0 is `agree`; only the simulated side 0 is `missing`, only
//!   the real side 0 is `extra`: no ratio is ever infinite or NaN;
//! - a figure one side does not measure at all (its family absent: a
//!   letter has no p50, a run without a trace has no stalls), and the
//!   latency of an operation only one side ran (a step the other machine's
//!   CPU count does not have), is `not-compared` and is not scored.

use std::collections::{BTreeMap, BTreeSet};

use crate::stats::percentile_counts;

use super::{
    Figure, Kind, PairError, PairReport, Row, Side, SideInfo, StallGroup, Summary, Tally,
    Tolerance, Verdict,
};

/// The two-sample Kolmogorov–Smirnov distance between two distributions
/// given as value → count: the largest |F_a(x) − F_b(x)| over every value
/// either has (Kolmogorov 1933, Smirnov 1948; the empirical CDFs are step
/// functions, so the supremum is reached at a sample value). `None` when
/// either is empty.
pub fn ks_distance(a: &BTreeMap<u64, u64>, b: &BTreeMap<u64, u64>) -> Option<f64> {
    let na: u64 = a.values().sum();
    let nb: u64 = b.values().sum();
    if na == 0 || nb == 0 {
        return None;
    }
    let xs: BTreeSet<u64> = a.keys().chain(b.keys()).copied().collect();
    let (mut ca, mut cb, mut d) = (0u64, 0u64, 0f64);
    for x in xs {
        ca += a.get(&x).copied().unwrap_or(0);
        cb += b.get(&x).copied().unwrap_or(0);
        d = d.max((ca as f64 / na as f64 - cb as f64 / nb as f64).abs());
    }
    Some(d)
}

/// A row of a figure compared by ratio.
fn factor_row(base: RowBase, sim: Option<f64>, real: Option<f64>, tol: &Tolerance) -> Row {
    let (s, r) = (sim.unwrap_or(0.0), real.unwrap_or(0.0));
    let (mut ratio, mut log2) = (None, None);
    let verdict = if !s.is_finite() || !r.is_finite() {
        // A record that says NaN or infinity for a figure does not measure it.
        Verdict::NotCompared
    } else if s == 0.0 && r == 0.0 {
        Verdict::Agree
    } else if s == 0.0 {
        Verdict::Missing
    } else if r == 0.0 {
        Verdict::Extra
    } else {
        let q = s / r;
        ratio = Some(q);
        if q > 0.0 {
            log2 = Some(q.log2());
            // A hair of slack so that exactly 2x is within on every platform.
            if q.max(1.0 / q) <= tol.factor * (1.0 + 1e-12) {
                Verdict::Within
            } else {
                Verdict::Outside
            }
        } else {
            // Opposite signs (Page writes file can be negative).
            Verdict::Outside
        }
    };
    base.finish(sim, real, ratio, log2, None, verdict)
}

/// What every row has before it is compared.
struct RowBase {
    key: String,
    group: String,
    label: String,
    kind: Kind,
    headline: bool,
}

impl RowBase {
    fn finish(
        self,
        sim: Option<f64>,
        real: Option<f64>,
        ratio: Option<f64>,
        log2: Option<f64>,
        diff: Option<f64>,
        verdict: Verdict,
    ) -> Row {
        Row {
            key: self.key,
            group: self.group,
            label: self.label,
            kind: self.kind,
            sim,
            real,
            ratio,
            log2,
            diff,
            verdict,
            headline: self.headline,
        }
    }
}

/// The rows of the scalar figures: the reference's order, then figures
/// only the simulated side has.
fn figure_rows(sim: &Side, real: &Side, tol: &Tolerance, headline: &BTreeSet<&str>) -> Vec<Row> {
    let families =
        |s: &Side| -> BTreeSet<String> { s.figures.iter().map(|f| f.family.clone()).collect() };
    let (sim_fam, real_fam) = (families(sim), families(real));
    let find = |s: &'_ Side, key: &str| s.figures.iter().find(|f| f.key == key).map(|f| f.value);
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    let all: Vec<&Figure> = real.figures.iter().chain(sim.figures.iter()).collect();
    for f in all {
        if !seen.insert(f.key.as_str()) {
            continue;
        }
        let (s, r) = (find(sim, &f.key), find(real, &f.key));
        if super::figures::QUIET_UNLESS_NONZERO.contains(&f.key.as_str())
            && s.unwrap_or(0.0) == 0.0
            && r.unwrap_or(0.0) == 0.0
        {
            continue;
        }
        let base = RowBase {
            key: f.key.clone(),
            group: f.group.clone(),
            label: f.label.clone(),
            kind: f.kind,
            headline: headline.contains(f.key.as_str()),
        };
        // A latency operation only one side ran (the steps follow the
        // machine's CPU count) is not compared, as the report leaves out
        // operations not in every run.
        let op_in = |side: &Side| match latency_op(&f.key) {
            Some(op) => side.figures.iter().any(|g| latency_op(&g.key) == Some(op)),
            None => true,
        };
        let measured = (s.is_some() || sim_fam.contains(&f.family))
            && (r.is_some() || real_fam.contains(&f.family))
            && op_in(sim)
            && op_in(real);
        rows.push(if measured {
            factor_row(base, s, r, tol)
        } else {
            base.finish(s, r, None, None, None, Verdict::NotCompared)
        });
    }
    rows
}

/// The operation of a latency key (`latency.mmap-4.p99` → `mmap-4`).
fn latency_op(key: &str) -> Option<&str> {
    key.strip_prefix("latency.")?.split('.').next()
}

/// The stall groups of both sides made comparable: an event that either
/// side reports without saying who (`who = all`) is summed over who on both.
fn comparable_stalls(
    sim: &[StallGroup],
    real: &[StallGroup],
) -> (Vec<StallGroup>, Vec<StallGroup>) {
    let pooled: BTreeSet<&str> = sim
        .iter()
        .chain(real)
        .filter(|g| g.who == "all")
        .map(|g| g.event.as_str())
        .collect();
    let merge = |groups: &[StallGroup]| -> Vec<StallGroup> {
        let mut out: Vec<StallGroup> = Vec::new();
        for g in groups {
            let who = if pooled.contains(g.event.as_str()) {
                "all"
            } else {
                g.who.as_str()
            };
            match out
                .iter_mut()
                .find(|o| o.event == g.event && o.who == who && o.reason == g.reason)
            {
                Some(o) => {
                    o.count += g.count;
                    for (&d, &c) in &g.delays_us {
                        *o.delays_us.entry(d).or_insert(0) += c;
                    }
                }
                None => out.push(StallGroup {
                    who: who.to_string(),
                    ..g.clone()
                }),
            }
        }
        out
    };
    (merge(sim), merge(real))
}

fn short_event(event: &str) -> &str {
    match event {
        "mm_vmscan_throttled" => "throttled",
        "writeback_congestion_wait" => "congestion_wait",
        "writeback_wait_iff_congested" => "wait_iff_congested",
        e => e,
    }
}

/// The key prefix of a stall group: `stall.EVENT.WHO.REASON` (`-` for none).
pub(super) fn stall_key(event: &str, who: &str, reason: &str) -> String {
    let reason = if reason.is_empty() { "-" } else { reason };
    format!("stall.{event}.{who}.{reason}")
}

/// The rows of the stall groups: count, share of its `who`'s stalls, and
/// (when both sides have delays) the KS distance and p50/p90/p99 delays.
fn stall_rows(sim: &Side, real: &Side, tol: &Tolerance, headline: &BTreeSet<&str>) -> Vec<Row> {
    let (s_groups, r_groups) = match (&sim.stalls, &real.stalls) {
        (Some(s), Some(r)) => comparable_stalls(s, r),
        (s, r) => {
            // One side has no stall data: list the other's groups, unscored.
            let groups = s.as_ref().or(r.as_ref()).cloned().unwrap_or_default();
            return groups
                .iter()
                .map(|g| {
                    let key = format!("{}.count", stall_key(&g.event, &g.who, &g.reason));
                    let v = Some(g.count as f64);
                    let (sv, rv) = if s.is_some() { (v, None) } else { (None, v) };
                    RowBase {
                        headline: headline.contains(key.as_str()),
                        key,
                        group: "stalls".into(),
                        label: stall_label(g, "count"),
                        kind: Kind::Count,
                    }
                    .finish(sv, rv, None, None, None, Verdict::NotCompared)
                })
                .collect();
        }
    };
    let totals = |groups: &[StallGroup]| -> BTreeMap<String, u64> {
        let mut t = BTreeMap::new();
        for g in groups {
            *t.entry(g.who.clone()).or_insert(0) += g.count;
        }
        t
    };
    let (s_tot, r_tot) = (totals(&s_groups), totals(&r_groups));
    let mut order: Vec<(String, String, String)> = Vec::new();
    for g in r_groups.iter().chain(&s_groups) {
        let k = (g.event.clone(), g.who.clone(), g.reason.clone());
        if !order.contains(&k) {
            order.push(k);
        }
    }
    let empty = StallGroup::default();
    let mut rows = Vec::new();
    for (event, who, reason) in order {
        let pick = |gs: &'_ [StallGroup]| -> Option<StallGroup> {
            gs.iter()
                .find(|g| g.event == event && g.who == who && g.reason == reason)
                .cloned()
        };
        let (sg, rg) = (pick(&s_groups), pick(&r_groups));
        let named = sg.as_ref().or(rg.as_ref()).unwrap_or(&empty);
        let prefix = stall_key(&event, &who, &reason);
        let base = |what: &str, kind: Kind| {
            let key = format!("{prefix}.{what}");
            RowBase {
                headline: headline.contains(key.as_str()),
                key,
                group: "stalls".into(),
                label: stall_label(named, what),
                kind,
            }
        };
        let (sc, rc) = (
            sg.as_ref().map_or(0, |g| g.count),
            rg.as_ref().map_or(0, |g| g.count),
        );
        rows.push(factor_row(
            base("count", Kind::Count),
            sg.as_ref().map(|g| g.count as f64),
            rg.as_ref().map(|g| g.count as f64),
            tol,
        ));
        let share = |c: u64, tot: &BTreeMap<String, u64>| {
            let t = tot.get(&who).copied().unwrap_or(0);
            if t == 0 {
                0.0
            } else {
                100.0 * c as f64 / t as f64
            }
        };
        let (ss, rs) = (share(sc, &s_tot), share(rc, &r_tot));
        let diff = ss - rs;
        let verdict = if diff.abs() <= tol.share_points {
            Verdict::Within
        } else {
            Verdict::Outside
        };
        rows.push(base("share", Kind::Share).finish(
            Some(ss),
            Some(rs),
            None,
            None,
            Some(diff),
            verdict,
        ));
        let (Some(sg), Some(rg)) = (&sg, &rg) else {
            continue;
        };
        let Some(d) = ks_distance(&sg.delays_us, &rg.delays_us) else {
            continue;
        };
        let verdict = if d <= tol.ks {
            Verdict::Within
        } else {
            Verdict::Outside
        };
        rows.push(base("ks", Kind::Distance).finish(None, None, None, None, Some(d), verdict));
        for (what, p) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0)] {
            rows.push(factor_row(
                base(what, Kind::Quantile),
                Some(percentile_counts(&sg.delays_us, p) as f64),
                Some(percentile_counts(&rg.delays_us, p) as f64),
                tol,
            ));
        }
    }
    rows
}

fn stall_label(g: &StallGroup, what: &str) -> String {
    let reason = g
        .reason
        .strip_prefix("VMSCAN_THROTTLE_")
        .unwrap_or(&g.reason);
    let head = if reason.is_empty() {
        format!("{} {}", short_event(&g.event), g.who)
    } else {
        format!("{} {} {}", short_event(&g.event), g.who, reason)
    };
    let tail = match what {
        "count" => "count",
        "share" => "share %",
        "ks" => "delay KS",
        "p50" => "delay p50 (us)",
        "p90" => "delay p90 (us)",
        "p99" => "delay p99 (us)",
        w => w,
    };
    format!("{head} {tail}")
}

/// Scores a simulated side against a real one. Refuses two different
/// workloads; warns when the machines or throttling generations differ.
pub fn score_pair(sim: &Side, real: &Side, tol: Tolerance) -> Result<PairReport, PairError> {
    if sim.workload != real.workload {
        return Err(PairError(format!(
            "{} ({}) and {} ({}) are runs of different workloads, `{}` and `{}`: their figures measure different work; pair each simulated run with a real run of the same workload (`reclaimlab sim {}` for the second)",
            sim.name, sim.source, real.name, real.source, sim.workload, real.workload, real.workload
        )));
    }
    let mut warnings = Vec::new();
    if sim.machine != real.machine {
        warnings.push(format!(
            "different machines: {} ran on `{}`, {} on `{}`: counts, times and rates scale with the machine; compare shares, efficiencies, quantiles and distances (the size-free rows)",
            sim.name, sim.machine, real.name, real.machine
        ));
    }
    if sim.generation != real.generation {
        warnings.push(format!(
            "different throttling generations: {} is `{}` ({}), {} is `{}` ({})",
            sim.name, sim.kernel, sim.generation, real.name, real.kernel, real.generation
        ));
    }
    for side in [sim, real] {
        for c in &side.caveats {
            warnings.push(format!("{}: {c}", side.name));
        }
    }
    let headline: BTreeSet<&str> = real.headline.iter().flatten().map(String::as_str).collect();
    let mut rows = figure_rows(sim, real, &tol, &headline);
    rows.extend(stall_rows(sim, real, &tol, &headline));
    let summary = summarise(&rows, real.headline.is_some());
    Ok(PairReport {
        sim: SideInfo::from(sim),
        real: SideInfo::from(real),
        warnings,
        summary,
        rows,
    })
}

fn summarise(rows: &[Row], has_headline: bool) -> Summary {
    let tally = |keep: &dyn Fn(&Row) -> bool| {
        let (scored, unscored): (Vec<&Row>, Vec<&Row>) = rows
            .iter()
            .filter(|r| keep(r))
            .partition(|r| r.verdict != Verdict::NotCompared);
        Tally {
            within: scored.iter().filter(|r| r.verdict.ok()).count(),
            of: scored.len(),
            not_compared: unscored.len(),
        }
    };
    let all = tally(&|_| true);
    let mut verdicts = BTreeMap::new();
    for r in rows {
        *verdicts.entry(r.verdict.name().to_string()).or_insert(0) += 1;
    }
    let logs: Vec<f64> = rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotCompared)
        .filter_map(|r| r.log2)
        .map(f64::abs)
        .collect();
    let mean_abs_log2 = (!logs.is_empty()).then(|| logs.iter().sum::<f64>() / logs.len() as f64);
    Summary {
        rows: all,
        share_within: if all.of == 0 {
            0.0
        } else {
            all.within as f64 / all.of as f64
        },
        verdicts,
        mean_abs_log2,
        typical_factor: mean_abs_log2.map(f64::exp2),
        headline: has_headline.then(|| tally(&|r| r.headline)),
        size_free: tally(&|r| !r.kind.scales()),
    }
}

/// The summary over every pair's rows together.
pub fn total_summary(pairs: &[PairReport]) -> Summary {
    let rows: Vec<Row> = pairs.iter().flat_map(|p| p.rows.iter().cloned()).collect();
    summarise(&rows, pairs.iter().any(|p| p.summary.headline.is_some()))
}
