//! A run record reduced to the figures fidelity compares ([`Side`]).
//!
//! The Ops and Duration rows are the report's own (`crate::ops`, computed
//! once by `build_report`), so a fidelity row and the comparison table never
//! disagree; latency quantiles are mmtests' nearest-rank floor percentiles
//! (`crate::stats`) over the raw samples; stall groups are the report's
//! stall buckets summed per (event, who, reason).

use std::collections::BTreeMap;

use crate::input::RunInput;
use crate::model::RunReport;
use crate::ops::Ops;
use crate::stats::{self, Preferred};

use super::{Figure, Kind, Side, StallGroup};

/// The Ops rows fidelity compares: mmtests label, key, kind, value.
pub(super) fn ops_figures(ops: &Ops) -> Vec<(&'static str, &'static str, Kind, f64)> {
    use Kind::*;
    let mut v = vec![
        (
            "Direct pages scanned",
            "direct_pages_scanned",
            Count,
            ops.direct_pages_scanned as f64,
        ),
        (
            "Kswapd pages scanned",
            "kswapd_pages_scanned",
            Count,
            ops.kswapd_pages_scanned as f64,
        ),
        (
            "Kswapd pages reclaimed",
            "kswapd_pages_reclaimed",
            Count,
            ops.kswapd_pages_reclaimed as f64,
        ),
        (
            "Direct pages reclaimed",
            "direct_pages_reclaimed",
            Count,
            ops.direct_pages_reclaimed as f64,
        ),
        (
            "Kswapd efficiency %",
            "kswapd_efficiency_pct",
            Percent,
            ops.kswapd_efficiency_pct,
        ),
        (
            "Kswapd velocity",
            "kswapd_velocity",
            Rate,
            ops.kswapd_velocity,
        ),
        (
            "Direct efficiency %",
            "direct_efficiency_pct",
            Percent,
            ops.direct_efficiency_pct,
        ),
        (
            "Direct velocity",
            "direct_velocity",
            Rate,
            ops.direct_velocity,
        ),
        (
            "Percentage direct scans",
            "percentage_direct_scans",
            Percent,
            ops.percentage_direct_scans,
        ),
        (
            "Page writes by reclaim",
            "page_writes_by_reclaim",
            Count,
            ops.page_writes_by_reclaim as f64,
        ),
        (
            "Page writes file",
            "page_writes_file",
            Count,
            ops.page_writes_file as f64,
        ),
        (
            "Page writes anon",
            "page_writes_anon",
            Count,
            ops.page_writes_anon as f64,
        ),
        (
            "Page reclaim immediate",
            "page_reclaim_immediate",
            Count,
            ops.page_reclaim_immediate as f64,
        ),
        (
            "Slabs scanned",
            "slabs_scanned",
            Count,
            ops.slabs_scanned as f64,
        ),
        (
            "Direct inode steals",
            "direct_inode_steals",
            Count,
            ops.direct_inode_steals as f64,
        ),
        (
            "Kswapd inode steals",
            "kswapd_inode_steals",
            Count,
            ops.kswapd_inode_steals as f64,
        ),
    ];
    if let Some(m) = &ops.memcg {
        v.extend([
            (
                "Memcg pages scanned",
                "memcg_pages_scanned",
                Count,
                m.pages_scanned as f64,
            ),
            (
                "Memcg pages reclaimed",
                "memcg_pages_reclaimed",
                Count,
                m.pages_reclaimed as f64,
            ),
            (
                "Memcg efficiency %",
                "memcg_efficiency_pct",
                Percent,
                m.efficiency_pct,
            ),
        ]);
    }
    v
}

/// The key of an Ops row by its mmtests label (without the `Ops ` prefix),
/// with its kind; `None` for a label fidelity does not know.
pub(super) fn ops_key(label: &str) -> Option<(&'static str, Kind)> {
    let probe = Ops {
        memcg: Some(Default::default()),
        ..Ops::default()
    };
    ops_figures(&probe)
        .into_iter()
        .find(|(l, ..)| *l == label)
        .map(|(_, k, kind, _)| (k, kind))
}

/// The position of an Ops key in the report's row order.
pub(super) fn ops_rank(key: &str) -> usize {
    let probe = Ops {
        memcg: Some(Default::default()),
        ..Ops::default()
    };
    ops_figures(&probe)
        .iter()
        .position(|(_, k, ..)| *k == key)
        .unwrap_or(usize::MAX)
}

/// vmstat counters fidelity compares beyond the Ops table: swap-in,
/// swap-out, major faults, swap readahead (pages read ahead, and those a
/// fault then found: `swap_ra`, `swap_ra_hit`, counted since 4.14), and the
/// refaults that `workingset_refault` found recent enough to activate, and
/// of those, the pages that had been active before eviction (the restores,
/// which add to their type's reclaim cost; 5.9+ names). A record without
/// a counter has no such row. And the OOM kills (`oom_kill`, global and
/// memcg OOMs alike, 4.13+), a row only where either side killed
/// ([`QUIET_UNLESS_NONZERO`]).
const VMSTAT: [(&str, &str); 10] = [
    ("oom_kill", "OOM kills (oom_kill)"),
    ("pswpin", "Swap ins (pswpin)"),
    ("pswpout", "Swap outs (pswpout)"),
    ("pgmajfault", "Major faults (pgmajfault)"),
    ("swap_ra", "Swap readahead (swap_ra)"),
    ("swap_ra_hit", "Swap readahead hits (swap_ra_hit)"),
    (
        "workingset_activate_anon",
        "Refaults activated, anon (workingset_activate_anon)",
    ),
    (
        "workingset_restore_anon",
        "of them restores (workingset_restore_anon)",
    ),
    (
        "workingset_activate_file",
        "Refaults activated, file (workingset_activate_file)",
    ),
    (
        "workingset_restore_file",
        "of them restores (workingset_restore_file)",
    ),
];

/// Figures that make a row only where either side is non-zero: an
/// outcome most workloads never have, which would otherwise add an
/// agreeing 0 against 0 to every pair.
pub(super) const QUIET_UNLESS_NONZERO: [&str; 1] = ["vmstat.oom_kill"];

/// Latency statistics per operation: key suffix, label, percentile
/// (`None`: the mean).
pub(super) const LATENCY: [(&str, &str, Option<f64>); 5] = [
    ("amean", "Amean", None),
    ("p50", "Pct-50", Some(50.0)),
    ("p90", "Max-90", Some(90.0)),
    ("p99", "Max-99", Some(99.0)),
    ("max", "Max", Some(100.0)),
];

/// A figure.
pub(super) fn figure(
    key: String,
    family: &str,
    label: String,
    group: &str,
    kind: Kind,
    value: f64,
) -> Figure {
    Figure {
        key,
        family: family.to_string(),
        label,
        group: group.to_string(),
        kind,
        value,
    }
}

/// The throttling generation a kernel belongs to: `congestion` up to 5.15
/// (`congestion_wait`, `wait_iff_congested`), `throttle` from 5.16
/// (`reclaim_throttle`), `other` for anything that is not a kernel version
/// (`none`, a policy). Reads the first `MAJOR.MINOR` in the name, so
/// `v5.15`, `5.15.0-rc1` and `6.8.0-45-generic` all work; a name with
/// `reclaimcongest` in it is Mel Gorman's series on a 5.15 base
/// (`5.15.0-rc1-mm-reclaimcongest-v2r5`, the `reclaimcongest-v2` profile):
/// `throttle`.
pub fn generation_of(kernel: &str) -> &'static str {
    if kernel.contains("reclaimcongest") {
        return "throttle";
    }
    let b = kernel.as_bytes();
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = 0;
    while i < b.len() {
        let n = digits(i);
        if n == 0 {
            i += 1;
            continue;
        }
        if b.get(i + n) == Some(&b'.') && digits(i + n + 1) > 0 {
            let m = digits(i + n + 1);
            let major: u32 = kernel[i..i + n].parse().unwrap_or(0);
            let minor: u32 = kernel[i + n + 1..i + n + 1 + m].parse().unwrap_or(0);
            return if (major, minor) >= (5, 16) {
                "throttle"
            } else {
                "congestion"
            };
        }
        i += n;
    }
    "other"
}

/// A run (its input and its report row) as a fidelity [`Side`].
pub fn side_from_run(input: &RunInput, run: &RunReport) -> Side {
    let mut figures = Vec::new();
    let d = &run.duration;
    for (k, label, v) in [
        ("user_s", "Duration User", d.user_s),
        ("system_s", "Duration System", d.system_s),
        ("elapsed_s", "Duration Elapsed", d.elapsed_s),
    ] {
        let key = format!("duration.{k}");
        figures.push(figure(
            key.clone(),
            &key,
            label.into(),
            "duration",
            Kind::Seconds,
            v,
        ));
    }
    // kswapd's CPU: what background reclaim cost (simulated records list
    // kswapd's task; real ones since 2026-11-28, from /proc/PID/stat).
    if let Some(k) = input.meta.task_cpu.iter().find(|t| t.class == "kswapd") {
        let key = "duration.kswapd_system_s".to_string();
        figures.push(figure(
            key.clone(),
            &key,
            "Duration System kswapd".into(),
            "duration",
            Kind::Seconds,
            k.system_s,
        ));
    }
    for (label, k, kind, v) in ops_figures(&run.ops) {
        let key = format!("ops.{k}");
        figures.push(figure(
            key.clone(),
            &key,
            format!("Ops {label}"),
            "ops",
            kind,
            v,
        ));
    }
    for (counter, label) in VMSTAT {
        if let Some(&v) = run.vmstat_delta.get(counter) {
            let key = format!("vmstat.{counter}");
            figures.push(figure(
                key.clone(),
                &key,
                label.into(),
                "vmstat",
                Kind::Count,
                v as f64,
            ));
        }
    }
    // Latency quantiles per operation, in the report's step order.
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for s in input.latency.iter().filter(|s| s.value_us.is_finite()) {
        samples
            .entry(format!("{}-{}", s.metric, s.step))
            .or_default()
            .push(s.value_us / 1000.0);
    }
    for (op, _) in &run.latency.0 {
        let Some(vals) = samples.get_mut(op) else {
            continue;
        };
        stats::sort_preferred(vals, Preferred::Lower);
        for (stat, label, p) in LATENCY {
            let v = match p {
                None => stats::amean(vals),
                Some(p) => stats::percentile_sorted(vals, p),
            };
            if let Some(v) = v {
                figures.push(figure(
                    format!("latency.{op}.{stat}"),
                    &format!("latency.{stat}"),
                    format!("{label} {op} (ms)"),
                    "latency",
                    Kind::Quantile,
                    v,
                ));
            }
        }
    }
    let stalls = run.trace.present.then(|| {
        let mut groups: Vec<StallGroup> = Vec::new();
        for c in &run.stalls {
            let i = match groups
                .iter()
                .position(|g| g.event == c.event && g.who == c.who && g.reason == c.reason)
            {
                Some(i) => i,
                None => {
                    groups.push(StallGroup {
                        event: c.event.clone(),
                        who: c.who.clone(),
                        reason: c.reason.clone(),
                        ..StallGroup::default()
                    });
                    groups.len() - 1
                }
            };
            groups[i].count += c.count;
            *groups[i].delays_us.entry(c.usec_delayed).or_insert(0) += c.count;
        }
        groups
    });
    let machine = input
        .meta
        .settings
        .iter()
        .find(|(k, _)| k == "machine")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    Side {
        name: run.name.clone(),
        origin: run.origin.clone(),
        kernel: run.kernel.clone(),
        generation: generation_of(&run.kernel).into(),
        workload: run.workload.clone(),
        machine,
        source: run.record.clone(),
        figures,
        stalls,
        headline: None,
        caveats: crate::kernel_notes::folio_notes(&run.origin, &run.kernel, &input.meta.settings),
    }
}
