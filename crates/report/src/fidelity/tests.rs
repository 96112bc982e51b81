//! Tests of fidelity scoring: a record against itself is perfect; a
//! perturbed record fails exactly the rows perturbed; zeros never make an
//! infinite ratio; the committed letter transcription loads as 38 headline
//! rows whose stated totals its histograms sum to.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::letter::{load_letter, parse_letter};
use super::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> Side {
    side_from_dir(&root().join("tests/fixtures").join(name)).expect("fixture loads")
}

fn letter_path() -> PathBuf {
    root().join("../../docs/fidelity/letters-2021-v2.toml")
}

fn row<'a>(p: &'a PairReport, key: &str) -> &'a Row {
    p.rows
        .iter()
        .find(|r| r.key == key)
        .unwrap_or_else(|| panic!("no row {key}"))
}

fn failing(p: &PairReport) -> Vec<String> {
    p.rows
        .iter()
        .filter(|r| !r.verdict.ok() && r.verdict != Verdict::NotCompared)
        .map(|r| r.key.clone())
        .collect()
}

fn set(side: &mut Side, key: &str, value: f64) {
    side.figures
        .iter_mut()
        .find(|f| f.key == key)
        .unwrap_or_else(|| panic!("no figure {key}"))
        .value = value;
}

#[test]
fn a_record_against_itself_is_perfect() {
    for name in ["base", "new", "memcg"] {
        let s = fixture(name);
        let p = score_pair(&s, &s, Tolerance::default()).unwrap();
        assert!(p.warnings.is_empty(), "{name}: {:?}", p.warnings);
        assert!(p.rows.len() > 30, "{name}: {} rows", p.rows.len());
        assert_eq!(failing(&p), Vec::<String>::new(), "{name}");
        assert_eq!(p.summary.rows.within, p.summary.rows.of);
        assert!(!p.rows.iter().any(|r| r.verdict == Verdict::NotCompared));
        assert_eq!(p.summary.mean_abs_log2, Some(0.0));
        assert_eq!(p.summary.typical_factor, Some(1.0));
        assert_eq!(p.summary.share_within, 1.0);
    }
}

#[test]
fn the_base_fixture_has_stall_rows() {
    let s = fixture("base");
    let p = score_pair(&s, &s, Tolerance::default()).unwrap();
    let stalls: Vec<&Row> = p.rows.iter().filter(|r| r.group == "stalls").collect();
    assert!(stalls
        .iter()
        .any(|r| r.kind == Kind::Distance && r.diff == Some(0.0)));
    assert!(stalls.iter().any(|r| r.kind == Kind::Share));
}

#[test]
fn a_perturbed_record_fails_the_rows_perturbed_and_no_others() {
    let real = fixture("base");
    let mut sim = real.clone();
    // 3x the direct scanning: outside a factor of 2. Efficiency and velocity
    // are their own figures and stay as they were.
    let v = real
        .figures
        .iter()
        .find(|f| f.key == "ops.direct_pages_scanned")
        .unwrap()
        .value;
    set(&mut sim, "ops.direct_pages_scanned", 3.0 * v);
    // 1.9x the elapsed time: still within.
    let e = real
        .figures
        .iter()
        .find(|f| f.key == "duration.elapsed_s")
        .unwrap()
        .value;
    set(&mut sim, "duration.elapsed_s", 1.9 * e);
    // Immediate reclaim to 0: missing.
    set(&mut sim, "ops.page_reclaim_immediate", 0.0);
    // A NaN elapsed-like figure is not measured, never a NaN ratio.
    set(&mut sim, "duration.user_s", f64::NAN);
    let p = score_pair(&sim, &real, Tolerance::default()).unwrap();
    assert_eq!(
        failing(&p),
        ["ops.direct_pages_scanned", "ops.page_reclaim_immediate"]
    );
    assert_eq!(
        row(&p, "ops.direct_pages_scanned").verdict,
        Verdict::Outside
    );
    assert!((row(&p, "ops.direct_pages_scanned").log2.unwrap() - 3f64.log2()).abs() < 1e-12);
    assert_eq!(row(&p, "duration.elapsed_s").verdict, Verdict::Within);
    assert_eq!(
        row(&p, "ops.page_reclaim_immediate").verdict,
        Verdict::Missing
    );
    assert_eq!(row(&p, "ops.page_reclaim_immediate").ratio, None);
    assert_eq!(row(&p, "duration.user_s").verdict, Verdict::NotCompared);
    assert_eq!(row(&p, "duration.user_s").ratio, None);
    // A wider tolerance lets the 3x through.
    let wide = Tolerance {
        factor: 3.5,
        ..Tolerance::default()
    };
    let p = score_pair(&sim, &real, wide).unwrap();
    assert_eq!(failing(&p), ["ops.page_reclaim_immediate"]);
}

#[test]
fn a_latency_operation_only_one_side_ran_is_not_compared() {
    let real = fixture("base");
    let op = real
        .figures
        .iter()
        .find(|f| f.group == "latency")
        .map(|f| f.key.split('.').nth(1).unwrap().to_string())
        .expect("the fixture has latency");
    let mut sim = real.clone();
    sim.figures
        .retain(|f| !f.key.starts_with(&format!("latency.{op}.")));
    let p = score_pair(&sim, &real, Tolerance::default()).unwrap();
    let nc: Vec<&str> = p
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::NotCompared)
        .map(|r| r.key.as_str())
        .collect();
    assert_eq!(nc.len(), 5, "{nc:?}"); // amean, p50, p90, p99, max
    assert!(nc.iter().all(|k| k.starts_with(&format!("latency.{op}."))));
    assert_eq!(failing(&p), Vec::<String>::new());
    assert_eq!(p.summary.rows.not_compared, 5);
}

fn group(event: &str, who: &str, reason: &str, delays: &[(u64, u64)]) -> StallGroup {
    let delays_us: BTreeMap<u64, u64> = delays.iter().copied().collect();
    StallGroup {
        event: event.into(),
        who: who.into(),
        reason: reason.into(),
        count: delays_us.values().sum(),
        delays_us,
    }
}

fn stall_side(groups: Vec<StallGroup>) -> Side {
    Side {
        name: "s".into(),
        origin: "sim".into(),
        kernel: "v5.16".into(),
        generation: "throttle".into(),
        workload: "stutterp".into(),
        machine: "small".into(),
        stalls: Some(groups),
        ..Side::default()
    }
}

#[test]
fn stall_rows_perturbed_fail_by_reason_share_and_distance() {
    let t = "mm_vmscan_throttled";
    let (wb, np) = ("VMSCAN_THROTTLE_WRITEBACK", "VMSCAN_THROTTLE_NOPROGRESS");
    let real = stall_side(vec![
        group(t, "direct", wb, &[(0, 50), (104000, 50)]),
        group(t, "direct", np, &[(104000, 100)]),
    ]);
    // Same counts and shares, WRITEBACK delays all at the timeout.
    let sim = stall_side(vec![
        group(t, "direct", wb, &[(104000, 100)]),
        group(t, "direct", np, &[(104000, 100)]),
    ]);
    let p = score_pair(&sim, &real, Tolerance::default()).unwrap();
    let wbk = format!("stall.{t}.direct.{wb}");
    // Half the real stalls end at once, none of the simulated: KS 0.5 and
    // the median 0 against 104000; p90 and p99 agree.
    assert_eq!(failing(&p), [format!("{wbk}.ks"), format!("{wbk}.p50")]);
    // p50 is 0 on the real side: missing/extra, never infinite.
    assert_eq!(row(&p, &format!("{wbk}.p50")).verdict, Verdict::Extra);
    let ks = row(&p, &format!("{wbk}.ks"));
    assert_eq!(ks.diff, Some(0.5));
    assert_eq!(ks.verdict, Verdict::Outside);
    // No WRITEBACK at all in the simulation: count missing, share 50 points off.
    let sim = stall_side(vec![group(t, "direct", np, &[(104000, 100)])]);
    let p = score_pair(&sim, &real, Tolerance::default()).unwrap();
    assert_eq!(row(&p, &format!("{wbk}.count")).verdict, Verdict::Missing);
    let share = row(&p, &format!("{wbk}.share"));
    assert_eq!(
        (share.sim, share.real, share.diff),
        (Some(0.0), Some(50.0), Some(-50.0))
    );
    assert_eq!(share.verdict, Verdict::Outside);
    let np_share = row(&p, &format!("stall.{t}.direct.{np}.share"));
    assert_eq!(np_share.diff, Some(50.0));
    assert!(p.rows.iter().all(|r| r.ratio.is_none_or(f64::is_finite)));
    assert!(p.rows.iter().all(|r| r.log2.is_none_or(f64::is_finite)));
}

#[test]
fn an_event_the_reference_does_not_split_by_who_is_summed() {
    let cw = "writeback_congestion_wait";
    let real = stall_side(vec![group(cw, "all", "", &[(104000, 10)])]);
    let sim = stall_side(vec![
        group(cw, "kswapd", "", &[(104000, 4)]),
        group(cw, "direct", "", &[(108000, 6)]),
    ]);
    let p = score_pair(&sim, &real, Tolerance::default()).unwrap();
    let c = row(&p, &format!("stall.{cw}.all.-.count"));
    assert_eq!(
        (c.sim, c.real, c.verdict),
        (Some(10.0), Some(10.0), Verdict::Within)
    );
    assert!(!p
        .rows
        .iter()
        .any(|r| r.key.contains(".kswapd.") || r.key.contains(".direct.")));
    let ks = row(&p, &format!("stall.{cw}.all.-.ks")).diff.unwrap();
    assert!((ks - 0.6).abs() < 1e-12, "{ks}");
}

#[test]
fn ks_distance_by_hand() {
    let d = |a: &[(u64, u64)], b: &[(u64, u64)]| {
        ks_distance(&a.iter().copied().collect(), &b.iter().copied().collect())
    };
    assert_eq!(d(&[(0, 1), (10, 1)], &[(10, 2)]), Some(0.5));
    assert_eq!(d(&[(5, 3)], &[(5, 7)]), Some(0.0));
    assert_eq!(d(&[(1, 1)], &[(2, 1)]), Some(1.0));
    assert_eq!(d(&[], &[(2, 1)]), None);
}

#[test]
fn different_workloads_are_refused_and_other_machines_warned() {
    let a = fixture("base");
    let b = fixture("other");
    let e = score_pair(&a, &b, Tolerance::default()).unwrap_err();
    assert!(
        e.0.contains("`stutterp`") && e.0.contains("`mapped-file-stream`"),
        "{e}"
    );
    let mut c = a.clone();
    c.machine = "testbox-2021".into();
    c.kernel = "v5.16".into();
    c.generation = generation_of("v5.16").into();
    let p = score_pair(&a, &c, Tolerance::default()).unwrap();
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("different machines"));
    assert!(p.warnings[1].contains("different throttling generations"));
    // A real side's folio caveats become the pair's warnings, named.
    c.name = "guest".into();
    c.caveats = vec!["transparent huge pages were on".into()];
    let p = score_pair(&a, &c, Tolerance::default()).unwrap();
    assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);
    assert_eq!(p.warnings[2], "guest: transparent huge pages were on");
}

#[test]
fn generations_from_kernel_names() {
    assert_eq!(generation_of("v5.15"), "congestion");
    assert_eq!(generation_of("5.15.0-rc1"), "congestion");
    assert_eq!(generation_of("v5.16-rc1"), "throttle");
    assert_eq!(generation_of("6.8.0-45-generic"), "throttle");
    assert_eq!(generation_of("4.19.0"), "congestion");
    assert_eq!(generation_of("reclaimcongest-v2"), "throttle");
    assert_eq!(
        generation_of("5.15.0-rc1-mm-reclaimcongest-v2r5"),
        "throttle"
    );
    assert_eq!(generation_of("none"), "other");
    assert_eq!(generation_of("policy-x"), "other");
}

#[test]
fn the_letter_transcription_has_38_headline_rows_and_consistent_totals() {
    let l = load_letter(&letter_path()).expect("letter loads");
    assert_eq!(
        l.source.message_id,
        "20210929100914.14704-1-mgorman@techsingularity.net"
    );
    // The series column is the series as measured (v2r5), not as merged.
    assert_eq!(l.kernels(), ["v5.15", "reclaimcongest-v2"]);
    assert!(l.run_for_kernel("v5.16-rc1").is_none());
    let heads: usize = l
        .runs
        .iter()
        .map(|r| r.side.headline.as_ref().unwrap().len())
        .sum();
    assert_eq!(heads, 38);
    let v2 = &l.run_for_kernel("reclaimcongest-v2").unwrap().side;
    assert_eq!(v2.generation, "throttle");
    let counts: Vec<(String, u64)> = v2
        .stalls
        .iter()
        .flatten()
        .map(|g| (format!("{} {}", g.who, g.reason), g.count))
        .collect();
    assert_eq!(
        counts,
        [
            ("kswapd VMSCAN_THROTTLE_WRITEBACK".to_string(), 372),
            ("direct VMSCAN_THROTTLE_ISOLATED".to_string(), 16909),
            ("direct VMSCAN_THROTTLE_NOPROGRESS".to_string(), 77844),
            ("direct VMSCAN_THROTTLE_WRITEBACK".to_string(), 113415),
        ]
    );
    let v515 = &l.run_for_kernel("v5.15").unwrap().side;
    let total: u64 = v515.stalls.iter().flatten().map(|g| g.count).sum();
    assert_eq!(total, 128612 + 681);
    // Scored against itself, the letter is 38 of 38.
    let pairs: Vec<(Side, Side)> = l
        .runs
        .iter()
        .map(|r| (r.side.clone(), r.side.clone()))
        .collect();
    let rep = fidelity_report(&pairs, Tolerance::default()).unwrap();
    assert_eq!(
        rep.total.headline,
        Some(Tally {
            within: 38,
            of: 38,
            not_compared: 0
        })
    );
}

#[test]
fn a_letter_whose_histogram_does_not_sum_to_its_total_is_refused() {
    let text = std::fs::read_to_string(letter_path()).unwrap();
    let bad = text.replacen("count = 16909", "count = 16910", 1);
    let e = parse_letter(&bad, "x.toml").unwrap_err();
    assert!(
        e.to_string()
            .contains("stated count 16910 but the histogram sums to 16909"),
        "{e}"
    );
    let bad = text.replacen("\"Slabs scanned\"", "\"Slab scanned\"", 1);
    let e = parse_letter(&bad, "x.toml").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("x.toml: run `5.15.0-rc1-vanilla`: unknown Ops row `Slab scanned`"),
        "{e}"
    );
}

#[test]
fn json_names_the_schema_and_verdicts_in_kebab_case() {
    let s = fixture("base");
    let rep = fidelity_report(&[(s.clone(), s)], Tolerance::default()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&render_fidelity_json(&rep)).unwrap();
    assert_eq!(v["schema"], SCHEMA);
    assert_eq!(v["tolerance"]["factor"], 2.0);
    let verdicts: Vec<&str> = v["pairs"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert!(verdicts.iter().all(|v| ["agree", "within"].contains(v)));
    for v in [
        Verdict::Agree,
        Verdict::Within,
        Verdict::Outside,
        Verdict::Missing,
        Verdict::Extra,
        Verdict::NotCompared,
    ] {
        assert_eq!(serde_json::to_value(v).unwrap(), v.name());
    }
    assert_eq!(v["total"]["rows"]["within"], v["total"]["rows"]["of"]);
}

/// `[[generations]]`: where the real kernels differ by more than the band,
/// the simulated pair must differ the same way; a flat real difference is
/// not scored, nor is a count too small to have a direction.
#[test]
fn generation_directions_are_compared_figure_by_figure() {
    let real_old = fixture("base");
    let mut real_new = fixture("base");
    let scanned = "ops.direct_pages_scanned";
    let before = real_old
        .figures
        .iter()
        .find(|f| f.key == scanned)
        .unwrap()
        .value;
    assert!(before >= 200.0, "the fixture scans: {before}");
    set(&mut real_new, scanned, before * 2.0);
    // The simulation goes the other way for direct scanning.
    let sim_old = fixture("base");
    let mut sim_new = fixture("base");
    set(&mut sim_new, scanned, before / 2.0);
    let pairs = [(sim_old, real_old), (sim_new, real_new)];
    let rep = fidelity_report_with_generations(&pairs, &[(vec![0], vec![1])], Tolerance::default())
        .unwrap();
    let g = &rep.generations[0];
    let r = g.rows.iter().find(|r| r.key == scanned).unwrap();
    assert_eq!(r.real_direction, directions::Direction::Up);
    assert_eq!(r.sim_direction, Some(directions::Direction::Down));
    assert_eq!(r.agree, Some(false));
    // Every other figure is the same on both kernels: flat, not scored.
    assert_eq!((g.agree, g.of), (0, 1));
    assert!(g
        .rows
        .iter()
        .filter(|r| r.key != scanned)
        .all(|r| r.agree.is_none()));
    // Same direction: agrees. A pair index out of range is refused.
    let mut pairs = pairs;
    set(&mut pairs[1].0, scanned, before * 3.0);
    let rep = fidelity_report_with_generations(&pairs, &[(vec![0], vec![1])], Tolerance::default())
        .unwrap();
    assert_eq!((rep.generations[0].agree, rep.generations[0].of), (1, 1));
    assert!(
        fidelity_report_with_generations(&pairs, &[(vec![0], vec![2])], Tolerance::default())
            .is_err()
    );
    // The JSON carries them; a report without them has no key.
    let json = String::from_utf8(render_fidelity_json(&rep)).unwrap();
    assert!(json.contains("\"generations\"") && json.contains("\"real_direction\": \"up\""));
    let plain = fidelity_report(&pairs, Tolerance::default()).unwrap();
    assert!(!String::from_utf8(render_fidelity_json(&plain))
        .unwrap()
        .contains("\"generations\""));
}

/// Replicates: with two runs of each kernel, a difference of the means that
/// the runs' spread explains is noise (not scored), one they do not explain
/// is a direction.
#[test]
fn generation_replicates_tell_noise_from_a_direction() {
    let scanned = "ops.direct_pages_scanned";
    let base = fixture("base")
        .figures
        .iter()
        .find(|f| f.key == scanned)
        .unwrap()
        .value;
    let run = |real: f64, sim: f64| {
        let (mut s, mut r) = (fixture("base"), fixture("base"));
        set(&mut r, scanned, base * real);
        set(&mut s, scanned, base * sim);
        (s, r)
    };
    // Real: 1.0, 1.6 -> 1.4, 2.0 (means +40 %, spread as large): noise.
    // Simulated: 1.0, 1.01 -> 1.5, 1.51: a clear rise.
    let pairs = [run(1.0, 1.0), run(1.6, 1.01), run(1.4, 1.5), run(2.0, 1.51)];
    let rep =
        fidelity_report_with_generations(&pairs, &[(vec![0, 1], vec![2, 3])], Tolerance::default())
            .unwrap();
    let g = &rep.generations[0];
    assert_eq!(g.runs, (2, 2));
    let r = g.rows.iter().find(|r| r.key == scanned).unwrap();
    assert!(
        (r.real.0 - base * 1.3).abs() < 1e-6 * base,
        "the mean of the runs"
    );
    assert_eq!(
        (r.real_direction, r.real_noise, r.real_word()),
        (directions::Direction::Flat, true, "noise")
    );
    assert!(r.real_p.unwrap() >= 0.10);
    assert_eq!(
        (r.sim_direction, r.sim_word()),
        (Some(directions::Direction::Up), "up")
    );
    assert_eq!(r.agree, None, "noise is not scored");
    // Each side's spread: runs 1.0 and 1.6 of the base, sd/mean = 0.424/1.3.
    let (cv_old, _) = r.real_cv_pct.unwrap();
    assert!(
        (cv_old - 100.0 * 0.6 / 2f64.sqrt() / 1.3).abs() < 0.01,
        "{cv_old}"
    );
    // Tight real runs make it a direction, which the simulation matches.
    let pairs = [
        run(1.0, 1.0),
        run(1.02, 1.01),
        run(1.4, 1.5),
        run(1.42, 1.51),
    ];
    let rep =
        fidelity_report_with_generations(&pairs, &[(vec![0, 1], vec![2, 3])], Tolerance::default())
            .unwrap();
    let r = rep.generations[0]
        .rows
        .iter()
        .find(|r| r.key == scanned)
        .unwrap();
    assert_eq!(
        (r.real_direction, r.agree),
        (directions::Direction::Up, Some(true))
    );
    let text = crate::format::fidelity_text::render_fidelity_text(&rep);
    assert!(text.contains("2 and 2 runs"), "{text}");
    // A side without runs is refused.
    assert!(
        fidelity_report_with_generations(&pairs, &[(vec![], vec![2])], Tolerance::default())
            .is_err()
    );
}

/// OOM kills make a row only where either side killed: 0 against 0 adds
/// nothing to a pair, a kill on one side is missing on the other.
#[test]
fn oom_kills_make_a_row_only_where_either_side_killed() {
    let s = fixture("base");
    let with = |side: &Side, v: f64| {
        let mut side = side.clone();
        side.figures.retain(|f| f.key != "vmstat.oom_kill");
        side.figures.push(figures::figure(
            "vmstat.oom_kill".into(),
            "vmstat.oom_kill",
            "OOM kills (oom_kill)".into(),
            "vmstat",
            Kind::Count,
            v,
        ));
        side
    };
    let quiet = score_pair(&with(&s, 0.0), &with(&s, 0.0), Tolerance::default()).unwrap();
    assert!(quiet.rows.iter().all(|r| r.key != "vmstat.oom_kill"));
    let killed = score_pair(&with(&s, 0.0), &with(&s, 2.0), Tolerance::default()).unwrap();
    assert_eq!(row(&killed, "vmstat.oom_kill").verdict, Verdict::Missing);
    let both = score_pair(&with(&s, 1.0), &with(&s, 2.0), Tolerance::default()).unwrap();
    assert_eq!(row(&both, "vmstat.oom_kill").verdict, Verdict::Within);
}
