//! The mmtests "Ops" table and "Duration" rows, computed from vmstat deltas.
//!
//! Every row follows `bin/lib/MMTests/MonitorMmtestsvmstat.pm` as described in
//! `shared/reference/mmtests-method.md` §3.2: per-zone counter variants are
//! summed with the node-level counter, efficiencies are 100 when nothing was
//! scanned, velocities are pages per second of the whole run's elapsed time.
//!
//! mmtests never looks at `pgscan_anon`/`pgscan_file`, so a run whose reclaim
//! was memcg limit reclaim (which on 6.x kernels leaves `pgscan_direct` and
//! `pgscan_kswapd` at zero) would show a table of zeros. reclaimlab adds
//! "Memcg" rows from `pgscan_{anon,file}` / `pgsteal_{anon,file}` for such runs
//! and labels the reclaim scope, so the scanning that happened is visible.

use std::collections::BTreeMap;

use serde::Serialize;

const ZONES: [&str; 5] = ["dma", "dma32", "normal", "movable", "high"];

/// The Ops table of one run (the key names are the `report --json` schema).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ops {
    /// Σ Δpgscan_direct_{zone} + Δpgscan_direct.
    pub direct_pages_scanned: i64,
    /// Σ Δpgscan_kswapd_{zone} + Δpgscan_kswapd.
    pub kswapd_pages_scanned: i64,
    /// Δkswapd_steal + Σ Δpgsteal_kswapd_{zone} + Δpgsteal_kswapd.
    pub kswapd_pages_reclaimed: i64,
    /// Σ Δpgsteal_{zone} + Σ Δpgsteal_direct_{zone} + Δpgsteal_direct
    /// (minus kswapd steals when the legacy `kswapd_steal` exists).
    pub direct_pages_reclaimed: i64,
    /// 100·kswapd reclaimed / kswapd scanned (100 if nothing scanned).
    pub kswapd_efficiency_pct: f64,
    /// kswapd scanned / elapsed seconds (pages/s).
    pub kswapd_velocity: f64,
    /// 100·direct reclaimed / direct scanned (100 if nothing scanned).
    pub direct_efficiency_pct: f64,
    /// direct scanned / elapsed seconds (pages/s).
    pub direct_velocity: f64,
    /// 100·direct scanned / (direct + kswapd scanned); 0 if nothing scanned.
    pub percentage_direct_scans: f64,
    /// Δnr_vmscan_write.
    pub page_writes_by_reclaim: i64,
    /// Δnr_vmscan_write − Δpswpout (can be negative).
    pub page_writes_file: i64,
    /// Δpswpout.
    pub page_writes_anon: i64,
    /// Δnr_vmscan_immediate_reclaim.
    pub page_reclaim_immediate: i64,
    /// Δslabs_scanned.
    pub slabs_scanned: i64,
    /// Δpginodesteal.
    pub direct_inode_steals: i64,
    /// Δkswapd_inodesteal.
    pub kswapd_inode_steals: i64,
    /// Rows from the LRU-type counters, present for memcg runs (see module doc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<MemcgOps>,
}

/// Scanning and reclaim counted by LRU type (`pgscan_anon` etc.), which on
/// 6.x kernels is where memcg limit reclaim shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemcgOps {
    /// Δpgscan_anon.
    pub pages_scanned_anon: i64,
    /// Δpgscan_file.
    pub pages_scanned_file: i64,
    /// Δpgsteal_anon.
    pub pages_reclaimed_anon: i64,
    /// Δpgsteal_file.
    pub pages_reclaimed_file: i64,
    /// anon + file scanned.
    pub pages_scanned: i64,
    /// anon + file reclaimed.
    pub pages_reclaimed: i64,
    /// 100·reclaimed/scanned (100 if nothing scanned).
    pub efficiency_pct: f64,
    /// scanned / elapsed seconds (pages/s).
    pub velocity: f64,
}

/// Duration of the whole run, as mmtests' `time ::` line (%U, %S, %e).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Duration {
    /// User CPU seconds (including reaped children).
    pub user_s: f64,
    /// System CPU seconds.
    pub system_s: f64,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
}

fn get(d: &BTreeMap<String, i64>, k: &str) -> i64 {
    d.get(k).copied().unwrap_or(0)
}

fn sum_zones(d: &BTreeMap<String, i64>, prefix: &str) -> i64 {
    ZONES.iter().map(|z| get(d, &format!("{prefix}_{z}"))).sum()
}

fn efficiency(reclaimed: i64, scanned: i64) -> f64 {
    if scanned == 0 {
        100.0
    } else {
        100.0 * reclaimed as f64 / scanned as f64
    }
}

/// mmtests uses 1 when the elapsed time is unknown.
fn elapsed_or_one(elapsed_s: f64) -> f64 {
    if elapsed_s.is_finite() && elapsed_s > 0.0 {
        elapsed_s
    } else {
        1.0
    }
}

/// Whether a run needs the memcg rows: its scope says memcg, or the global
/// scan counters are both zero while the LRU-type counters are not.
pub fn needs_memcg_rows(reclaim_scope: &str, delta: &BTreeMap<String, i64>) -> bool {
    if reclaim_scope.starts_with("memcg") {
        return true;
    }
    let global = sum_zones(delta, "pgscan_direct")
        + get(delta, "pgscan_direct")
        + sum_zones(delta, "pgscan_kswapd")
        + get(delta, "pgscan_kswapd");
    let lru = get(delta, "pgscan_anon") + get(delta, "pgscan_file");
    global == 0 && lru != 0
}

/// Computes the Ops table from whole-run vmstat deltas and the elapsed time.
pub fn compute_ops(delta: &BTreeMap<String, i64>, elapsed_s: f64, reclaim_scope: &str) -> Ops {
    let t = elapsed_or_one(elapsed_s);
    let direct_scanned = sum_zones(delta, "pgscan_direct") + get(delta, "pgscan_direct");
    let kswapd_scanned = sum_zones(delta, "pgscan_kswapd") + get(delta, "pgscan_kswapd");
    let kswapd_reclaimed = get(delta, "kswapd_steal")
        + sum_zones(delta, "pgsteal_kswapd")
        + get(delta, "pgsteal_kswapd");
    let mut direct_reclaimed = sum_zones(delta, "pgsteal")
        + sum_zones(delta, "pgsteal_direct")
        + get(delta, "pgsteal_direct");
    if delta.contains_key("kswapd_steal") {
        // Old kernels: pgsteal_{zone} counted all steals, kswapd's included.
        direct_reclaimed -= kswapd_reclaimed;
    }
    let total_scanned = direct_scanned + kswapd_scanned;
    let pswpout = get(delta, "pswpout");
    let vmscan_write = get(delta, "nr_vmscan_write");
    let memcg = needs_memcg_rows(reclaim_scope, delta).then(|| {
        let sa = get(delta, "pgscan_anon");
        let sf = get(delta, "pgscan_file");
        let ra = get(delta, "pgsteal_anon");
        let rf = get(delta, "pgsteal_file");
        MemcgOps {
            pages_scanned_anon: sa,
            pages_scanned_file: sf,
            pages_reclaimed_anon: ra,
            pages_reclaimed_file: rf,
            pages_scanned: sa + sf,
            pages_reclaimed: ra + rf,
            efficiency_pct: efficiency(ra + rf, sa + sf),
            velocity: (sa + sf) as f64 / t,
        }
    });
    Ops {
        direct_pages_scanned: direct_scanned,
        kswapd_pages_scanned: kswapd_scanned,
        kswapd_pages_reclaimed: kswapd_reclaimed,
        direct_pages_reclaimed: direct_reclaimed,
        kswapd_efficiency_pct: efficiency(kswapd_reclaimed, kswapd_scanned),
        kswapd_velocity: kswapd_scanned as f64 / t,
        direct_efficiency_pct: efficiency(direct_reclaimed, direct_scanned),
        direct_velocity: direct_scanned as f64 / t,
        percentage_direct_scans: if total_scanned == 0 {
            0.0
        } else {
            100.0 * direct_scanned as f64 / total_scanned as f64
        },
        page_writes_by_reclaim: vmscan_write,
        page_writes_file: vmscan_write - pswpout,
        page_writes_anon: pswpout,
        page_reclaim_immediate: get(delta, "nr_vmscan_immediate_reclaim"),
        slabs_scanned: get(delta, "slabs_scanned"),
        direct_inode_steals: get(delta, "pginodesteal"),
        kswapd_inode_steals: get(delta, "kswapd_inodesteal"),
        memcg,
    }
}

/// One printable row of the Ops table: mmtests label and the value.
pub fn ops_rows(ops: &Ops) -> Vec<(&'static str, f64)> {
    vec![
        ("Direct pages scanned", ops.direct_pages_scanned as f64),
        ("Kswapd pages scanned", ops.kswapd_pages_scanned as f64),
        ("Kswapd pages reclaimed", ops.kswapd_pages_reclaimed as f64),
        ("Direct pages reclaimed", ops.direct_pages_reclaimed as f64),
        ("Kswapd efficiency %", ops.kswapd_efficiency_pct),
        ("Kswapd velocity", ops.kswapd_velocity),
        ("Direct efficiency %", ops.direct_efficiency_pct),
        ("Direct velocity", ops.direct_velocity),
        ("Percentage direct scans", ops.percentage_direct_scans),
        ("Page writes by reclaim", ops.page_writes_by_reclaim as f64),
        ("Page writes file", ops.page_writes_file as f64),
        ("Page writes anon", ops.page_writes_anon as f64),
        ("Page reclaim immediate", ops.page_reclaim_immediate as f64),
        ("Slabs scanned", ops.slabs_scanned as f64),
        ("Direct inode steals", ops.direct_inode_steals as f64),
        ("Kswapd inode steals", ops.kswapd_inode_steals as f64),
    ]
}

/// The memcg rows (labels and values; zeros when the run has none, so that a
/// multi-run table stays rectangular).
pub fn memcg_rows(ops: &Ops) -> Vec<(&'static str, f64)> {
    let m = ops.memcg.clone().unwrap_or_default();
    vec![
        ("Memcg pages scanned anon", m.pages_scanned_anon as f64),
        ("Memcg pages scanned file", m.pages_scanned_file as f64),
        ("Memcg pages reclaimed anon", m.pages_reclaimed_anon as f64),
        ("Memcg pages reclaimed file", m.pages_reclaimed_file as f64),
        ("Memcg pages scanned", m.pages_scanned as f64),
        ("Memcg pages reclaimed", m.pages_reclaimed as f64),
        ("Memcg efficiency %", m.efficiency_pct),
        ("Memcg velocity", m.velocity),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn v4_letter_ratios() {
        // From the v4 cover letter: direct 1056608451 scanned over 2277.67 s,
        // kswapd 109795048 scanned and 63269243 reclaimed.
        let delta = d(&[
            ("pgscan_direct", 1_056_608_451),
            ("pgscan_kswapd", 109_795_048),
            ("pgsteal_kswapd", 63_269_243),
        ]);
        let o = compute_ops(&delta, 2277.67, "global");
        assert_eq!(format!("{:.2}", o.kswapd_efficiency_pct), "57.62");
        assert_eq!(format!("{:.2}", o.percentage_direct_scans), "90.59");
        assert_eq!(format!("{:.0}", o.direct_velocity), "463899");
        assert!(o.memcg.is_none());
    }

    #[test]
    fn per_zone_sums_and_legacy_kswapd_steal() {
        let delta = d(&[
            ("pgscan_direct_dma32", 10),
            ("pgscan_direct_normal", 20),
            ("pgscan_direct", 5),
            ("pgscan_kswapd_normal", 100),
            ("kswapd_steal", 40),
            ("pgsteal_normal", 70),
            ("pgsteal_dma32", 5),
        ]);
        let o = compute_ops(&delta, 0.0, "global");
        assert_eq!(o.direct_pages_scanned, 35);
        assert_eq!(o.kswapd_pages_scanned, 100);
        assert_eq!(o.kswapd_pages_reclaimed, 40);
        assert_eq!(o.direct_pages_reclaimed, 75 - 40);
        assert_eq!(o.direct_velocity, 35.0); // T defaults to 1
    }

    #[test]
    fn nothing_scanned_is_100_pct_efficient() {
        let o = compute_ops(&BTreeMap::new(), 10.0, "global");
        assert_eq!(o.kswapd_efficiency_pct, 100.0);
        assert_eq!(o.direct_efficiency_pct, 100.0);
        assert_eq!(o.percentage_direct_scans, 0.0);
    }

    #[test]
    fn memcg_rows_when_global_counters_are_zero() {
        let delta = d(&[
            ("pgscan_anon", 300),
            ("pgscan_file", 700),
            ("pgsteal_anon", 100),
            ("pgsteal_file", 400),
            ("nr_vmscan_write", 50),
            ("pswpout", 80),
        ]);
        let o = compute_ops(&delta, 10.0, "global");
        let m = o.memcg.clone().expect("memcg rows");
        assert_eq!(m.pages_scanned, 1000);
        assert_eq!(m.pages_reclaimed, 500);
        assert_eq!(m.efficiency_pct, 50.0);
        assert_eq!(m.velocity, 100.0);
        assert_eq!(o.page_writes_file, -30);
        assert!(compute_ops(&BTreeMap::new(), 1.0, "memcg-v1")
            .memcg
            .is_some());
    }
}
