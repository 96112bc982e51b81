//! The OOM point of a sweep over the mlock size: per setting (the runs
//! grouped by everything but the locked size), the smallest locked size
//! that was OOM-killed and the largest that was not, with the first kill's
//! time, the free memory at it, the memory locked by then and the
//! allocation stalls. Dave Chinner's 2019/2020 XFS tests were judged this
//! way (reference §3.10: "at what mlock size does the OOM killer fire").
//!
//! The locked size of a run is `Σ size_mib × count` over the `mlock`
//! workers its parameters record (`spec.workerN.kind = mlock`), so
//! simulated and real runs of any spec take part. There is a table only
//! when the runs lock at least two sizes and at least one run was killed.

use std::collections::HashMap;

use serde::Serialize;

use crate::input::RunInput;

/// One run as a point of the sweep.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OomSweepRun {
    /// The run's name.
    pub run: String,
    /// Memory its mlock workers lock in all, MiB.
    pub mlock_mib: u64,
    /// Time of its first OOM kill, s; absent when nothing was killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_kill_s: Option<f64>,
    /// Free memory at the first kill, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_at_kill_kib: Option<u64>,
    /// `nr_mlock` at the last vmstat sample at or before the first kill
    /// (without a kill: at the run's end), KiB; absent without `nr_mlock`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_kib: Option<u64>,
    /// Direct reclaim entries (Σ `allocstall_*`) up to that sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc_stalls: Option<i64>,
}

/// One setting: its runs in size order and its OOM point.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OomSetting {
    /// What the setting's runs share that other settings' do not (`v5.9,
    /// xfs.inode_reclaim=async`); `all runs` when only the size differs.
    pub setting: String,
    /// The largest locked size without an OOM kill, MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_without_kill_mib: Option<u64>,
    /// The smallest locked size with an OOM kill, MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smallest_killed_mib: Option<u64>,
    /// The runs, smallest size first.
    pub runs: Vec<OomSweepRun>,
}

impl OomSetting {
    /// The run at the smallest killed size.
    pub fn first_killed(&self) -> Option<&OomSweepRun> {
        self.runs.iter().find(|r| r.first_kill_s.is_some())
    }

    /// The run at the largest size without a kill.
    pub fn last_unkilled(&self) -> Option<&OomSweepRun> {
        self.runs.iter().rev().find(|r| r.first_kill_s.is_none())
    }
}

/// The table: a row per setting, in the order of their first run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OomPoints {
    /// What was swept: `mlock size (MiB)`.
    pub size: String,
    /// The settings.
    pub settings: Vec<OomSetting>,
}

/// The locked size of a run (MiB) and the settings that make it, from its
/// recorded parameters; `None` without an mlock worker.
fn mlock_size(run: &RunInput) -> Option<(u64, Vec<String>)> {
    let get = |k: &str| {
        run.meta
            .settings
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let mut total = 0u64;
    let mut keys = Vec::new();
    let mut any = false;
    for (k, v) in &run.meta.settings {
        let Some(i) = k
            .strip_prefix("spec.worker")
            .and_then(|r| r.strip_suffix(".kind"))
        else {
            continue;
        };
        if v != "mlock" {
            continue;
        }
        let size_key = format!("spec.worker{i}.size_mib");
        let size: u64 = get(&size_key)?.parse().ok()?;
        let count: u64 = get(&format!("spec.worker{i}.count"))
            .and_then(|c| c.parse().ok())
            .unwrap_or(1);
        total = total.saturating_add(size.saturating_mul(count));
        keys.push(size_key);
        any = true;
    }
    any.then_some((total, keys))
}

/// A setting (every recorded setting but the size) and its runs.
type Group<'a> = (Vec<(&'a str, &'a str)>, Vec<usize>);

/// The OOM points of the runs, if they differ in their locked size and
/// some run was killed.
pub fn oom_points(runs: &[RunInput]) -> Option<OomPoints> {
    let sized: Vec<(usize, u64, Vec<String>)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| mlock_size(r).map(|(s, k)| (i, s, k)))
        .collect();
    let mut sizes: Vec<u64> = sized.iter().map(|x| x.1).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let killed = sized.iter().any(|x| !runs[x.0].meta.oom_kills.is_empty());
    if sizes.len() < 2 || !killed {
        return None;
    }
    // Everything a run records but its locked size.
    let key_of = |i: usize, skip: &[String]| -> Vec<(&str, &str)> {
        runs[i]
            .meta
            .settings
            .iter()
            .filter(|(k, _)| !skip.contains(k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    };
    let mut groups: Vec<Group> = Vec::new();
    for (i, _, skip) in &sized {
        let key = key_of(*i, skip);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(*i),
            None => groups.push((key, vec![*i])),
        }
    }
    let names = setting_names(&groups.iter().map(|g| g.0.clone()).collect::<Vec<_>>());
    let size_of: HashMap<usize, u64> = sized.iter().map(|x| (x.0, x.1)).collect();
    let settings = groups
        .iter()
        .zip(names)
        .map(|((_, members), setting)| {
            let mut rows: Vec<OomSweepRun> = members
                .iter()
                .map(|&i| sweep_run(&runs[i], size_of[&i]))
                .collect();
            rows.sort_by_key(|r| r.mlock_mib);
            OomSetting {
                setting,
                largest_without_kill_mib: rows
                    .iter()
                    .filter(|r| r.first_kill_s.is_none())
                    .map(|r| r.mlock_mib)
                    .max(),
                smallest_killed_mib: rows
                    .iter()
                    .filter(|r| r.first_kill_s.is_some())
                    .map(|r| r.mlock_mib)
                    .min(),
                runs: rows,
            }
        })
        .collect();
    Some(OomPoints {
        size: "mlock size (MiB)".into(),
        settings,
    })
}

fn sweep_run(run: &RunInput, mlock_mib: u64) -> OomSweepRun {
    let first = run
        .meta
        .oom_kills
        .iter()
        .min_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let until = first.map_or(f64::INFINITY, |k| k.t_s);
    let sample = run
        .vmstat_series
        .iter()
        .take_while(|p| p.t_s <= until)
        .last()
        .or(run.vmstat_series.first());
    let base = run.vmstat_series.first().map_or(0, |p| p.allocstall);
    OomSweepRun {
        run: run.meta.name.clone(),
        mlock_mib,
        first_kill_s: first.map(|k| k.t_s),
        free_at_kill_kib: first.map(|k| k.free_kib),
        locked_kib: sample.map(|p| u64::try_from(p.nr_mlock.max(0)).unwrap_or(0) * 4),
        alloc_stalls: sample.map(|p| p.allocstall - base),
    }
}

/// A short name per group: the settings that tell the groups apart, the
/// kernel first, each only if it splits the groups further (a kernel's
/// `policy.*` values follow from its name).
fn setting_names(keys: &[Vec<(&str, &str)>]) -> Vec<String> {
    if keys.len() < 2 {
        return vec!["all runs".to_string(); keys.len()];
    }
    let value = |g: usize, name: &str| -> String {
        keys[g]
            .iter()
            .find(|(k, _)| *k == name)
            .map_or("-".to_string(), |(_, v)| v.to_string())
    };
    let mut candidates: Vec<&str> = Vec::new();
    for k in keys {
        for (n, _) in k {
            if !candidates.contains(n) {
                candidates.push(n);
            }
        }
    }
    candidates.retain(|n| (1..keys.len()).any(|g| value(g, n) != value(0, n)));
    candidates.sort_by_key(|n| *n != "kernel");
    let distinct = |set: &[&str]| -> usize {
        let mut v: Vec<Vec<String>> = (0..keys.len())
            .map(|g| set.iter().map(|n| value(g, n)).collect())
            .collect();
        v.sort();
        v.dedup();
        v.len()
    };
    let mut naming: Vec<&str> = Vec::new();
    for n in candidates {
        let mut with = naming.clone();
        with.push(n);
        if distinct(&with) > distinct(&naming) {
            naming = with;
        }
    }
    (0..keys.len())
        .map(|g| {
            let parts: Vec<String> = naming
                .iter()
                .map(|n| {
                    if *n == "kernel" {
                        value(g, n)
                    } else {
                        format!("{n}={}", value(g, n))
                    }
                })
                .collect();
            parts.join(", ")
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::input::{RunMeta, VmstatPoint};
    use reclaimlab_record::OomKillRecord;

    /// A run of the fsmark-mlock spec at `mib` locked under `mode`, killed
    /// at `kill` (time, free KiB) if given; vmstat every second for 10 s
    /// with 100 locked pages and 10 allocation stalls more each second.
    pub(crate) fn run(mode: &str, mib: u64, kill: Option<(f64, u64)>) -> RunInput {
        let settings = [
            ("kernel", "v5.9"),
            ("seed", "1"),
            ("spec.worker1.count", "1"),
            ("spec.worker1.kind", "mlock"),
            ("spec.worker1.size_mib", &mib.to_string()),
            ("spec.worker2.count", "16"),
            ("spec.worker2.kind", "fs-create"),
            ("xfs.inode_reclaim", mode),
        ];
        RunInput {
            meta: RunMeta {
                name: format!("v5.9,xfs.inode_reclaim={mode},mlock.size_mib={mib}"),
                workload: "fsmark-mlock".into(),
                reclaim_scope: "global".into(),
                settings: settings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                oom_kills: kill
                    .map(|(t_s, free_kib)| OomKillRecord {
                        t_s,
                        pid: 7,
                        comm: "mlock".into(),
                        constraint: "CONSTRAINT_NONE".into(),
                        free_kib,
                        ..OomKillRecord::default()
                    })
                    .into_iter()
                    .collect(),
                ..RunMeta::default()
            },
            vmstat_series: (0..=10)
                .map(|i| VmstatPoint {
                    t_s: f64::from(i),
                    nr_mlock: i64::from(i) * 100,
                    allocstall: 5 + i64::from(i) * 10,
                    ..VmstatPoint::default()
                })
                .collect(),
            ..RunInput::default()
        }
    }

    #[test]
    fn each_setting_gets_its_oom_point() {
        let runs = vec![
            run("sync", 320, None),
            run("sync", 384, None),
            run("sync", 448, Some((7.5, 2048))),
            run("async", 448, Some((3.2, 4096))),
            run("async", 320, None),
            run("async", 384, Some((4.0, 3072))),
        ];
        let p = oom_points(&runs).expect("sizes differ and some run was killed");
        assert_eq!(p.settings.len(), 2);
        let (sync, asy) = (&p.settings[0], &p.settings[1]);
        assert_eq!(sync.setting, "xfs.inode_reclaim=sync");
        assert_eq!(asy.setting, "xfs.inode_reclaim=async");
        assert_eq!(
            (sync.largest_without_kill_mib, sync.smallest_killed_mib),
            (Some(384), Some(448))
        );
        assert_eq!(
            (asy.largest_without_kill_mib, asy.smallest_killed_mib),
            (Some(320), Some(384))
        );
        let k = asy.first_killed().unwrap();
        assert_eq!((k.mlock_mib, k.first_kill_s), (384, Some(4.0)));
        // The vmstat sample at 4 s: 400 locked pages, 40 stalls since 0 s.
        assert_eq!((k.locked_kib, k.alloc_stalls), (Some(1600), Some(40)));
        assert_eq!(k.free_at_kill_kib, Some(3072));
        // Without a kill, the run's end.
        let n = sync.last_unkilled().unwrap();
        assert_eq!((n.mlock_mib, n.alloc_stalls), (384, Some(100)));
        let sizes: Vec<u64> = asy.runs.iter().map(|r| r.mlock_mib).collect();
        assert_eq!(sizes, [320, 384, 448], "in size order");
    }

    #[test]
    fn no_table_without_a_size_sweep_or_a_kill() {
        assert!(oom_points(&[run("sync", 320, None), run("sync", 384, None)]).is_none());
        assert!(oom_points(&[
            run("sync", 320, Some((1.0, 1))),
            run("async", 320, Some((1.0, 1)))
        ])
        .is_none());
        let one = oom_points(&[run("sync", 320, None), run("sync", 384, Some((1.0, 1)))]).unwrap();
        assert_eq!(one.settings[0].setting, "all runs");
        assert_eq!(one.settings[0].largest_without_kill_mib, Some(320));
    }
}
