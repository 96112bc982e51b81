//! A workload spec's `[[cgroup]]` tree on the real host: one child memory
//! cgroup per entry under the run's own cgroup (`reclaimlab-<pid>`), on the
//! host's hierarchy (v1 or v2), and what `run.json`'s `cgroups` section keeps
//! of each at the end.
//!
//! The spec may be written with either version's keys; [`plan_tree`] maps
//! them to the control files of the host's version where that version has an
//! equivalent, and refuses where it has none (naming the entry, the key and
//! the fix) before anything on the host is created:
//!
//! | spec key | cgroup v2 | cgroup v1 |
//! |---|---|---|
//! | `memory_max`, `limit_in_bytes` | `memory.max` | `memory.limit_in_bytes` |
//! | `memory_high` | `memory.high` | refused: v1 has no throttling limit |
//! | `memory_low` | `memory.low` | `memory.soft_limit_in_bytes` (best effort: reclaimed first above it under global pressure) |
//! | `memory_min` | `memory.min` | refused: v1 has no hard protection |
//!
//! cgroup v2 allows processes only in leaves of a controlled subtree, so
//! there the workers without `cgroup =` go to a leaf of their own,
//! [`REST_LEAF`], and a worker in a cgroup that has children is refused.
//! Nothing here needs root; [`create_tree`] and [`records`] touch the host.

use std::path::{Path, PathBuf};

use reclaimlab_record::CgroupRecord;
use reclaimlab_workload::cgroups::{CgroupSpec, SizeValue};
use reclaimlab_workload::sim::WORKLOAD_CGROUP;
use reclaimlab_workload::spec::Spec;

use crate::cgroup::Version;
use crate::error::{human_bytes, HostError, Result};
use crate::state::{Entry, RunState};
use crate::sys;

/// The leaf that holds the workers without `cgroup =` on cgroup v2, when the
/// spec has cgroups (v2's "no internal processes" rule).
pub const REST_LEAF: &str = "rest";

/// One child cgroup to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupPlan {
    /// The spec's name (or [`REST_LEAF`]).
    pub name: String,
    /// The parent's spec name; `None`: the run's cgroup.
    pub parent: Option<String>,
    /// The directory relative to the run's cgroup (`congester`, `a/b`).
    pub rel: PathBuf,
    /// Control files to write after `mkdir`, in order: (file, value).
    pub settings: Vec<(String, String)>,
    /// Whether it has children (v2: `+memory` in its `cgroup.subtree_control`).
    pub has_children: bool,
    /// The limits as the record keeps them: max, high (bytes; `None` no limit), low, min.
    pub limits: (Option<u64>, Option<u64>, u64, u64),
}

fn bytes_of(c: &CgroupSpec, key: &str, v: &Option<SizeValue>) -> Result<Option<u64>> {
    let Some(v) = v else { return Ok(None) };
    v.bytes().map(Some).map_err(|e| {
        HostError::with_fix(
            format!("spec cgroup `{}`: {key} = {e}", c.name),
            "a size such as 512M, 1G, 1073741824 or max",
        )
    })
}

/// Plans the spec's cgroups under the run's cgroup of `run_limit` bytes on a
/// `version` host (see the module documentation). Errors name the cgroup,
/// the key and the fix.
pub fn plan_tree(spec: &Spec, version: Version, run_limit: u64) -> Result<Vec<CgroupPlan>> {
    if spec.cgroups.is_empty() {
        return Ok(Vec::new());
    }
    let host = match version {
        Version::V1 => "cgroup v1",
        Version::V2 => "cgroup v2",
    };
    let mut out: Vec<CgroupPlan> = Vec::new();
    for c in &spec.cgroups {
        let max = match bytes_of(c, "limit_in_bytes", &c.limit_in_bytes)? {
            Some(b) => Some(b),
            None => bytes_of(c, "memory_max", &c.memory_max)?,
        };
        let high = bytes_of(c, "memory_high", &c.memory_high)?;
        let low = bytes_of(c, "memory_low", &c.memory_low)?;
        let min = bytes_of(c, "memory_min", &c.memory_min)?;
        let limited = |b: Option<u64>| b.filter(|&b| b != u64::MAX);
        for (key, b) in [
            (
                if c.is_v1() {
                    "limit_in_bytes"
                } else {
                    "memory_max"
                },
                max,
            ),
            ("memory_high", high),
            ("memory_low", low),
            ("memory_min", min),
        ] {
            if let Some(b) = limited(b) {
                if b > run_limit {
                    return Err(HostError::with_fix(
                        format!(
                            "spec cgroup `{}`: {key} = {} is larger than the run's cgroup ({}, --memory), which holds every spec cgroup",
                            c.name,
                            human_bytes(b),
                            human_bytes(run_limit)
                        ),
                        format!(
                            "--memory {}M or more, or a smaller {key}",
                            (b >> 20) + 64
                        ),
                    ));
                }
            }
        }
        let refuse = |key: &str, why: &str| {
            Err(HostError::with_fix(
                format!(
                    "spec cgroup `{}`: {key} has no equivalent on this host's {host} memory controller ({why})",
                    c.name
                ),
                format!(
                    "drop {key} from the spec to run it here (`reclaimlab sim` keeps it), or run on a host with the memory controller on {}",
                    if version == Version::V1 { "cgroup v2" } else { "cgroup v1" }
                ),
            ))
        };
        let value = |b: u64| match (b, version) {
            (u64::MAX, Version::V1) => "-1".to_string(),
            (u64::MAX, Version::V2) => "max".to_string(),
            (b, _) => b.to_string(),
        };
        let mut settings = Vec::new();
        match version {
            Version::V2 => {
                for (f, b) in [
                    ("memory.max", max),
                    ("memory.high", high),
                    ("memory.low", low),
                    ("memory.min", min),
                ] {
                    if let Some(b) = b {
                        settings.push((f.to_string(), value(b)));
                    }
                }
            }
            Version::V1 => {
                if limited(high).is_some() {
                    return refuse(
                        "memory_high",
                        "v1 has no limit that reclaims and throttles without OOM",
                    );
                }
                if limited(min).is_some_and(|b| b > 0) {
                    return refuse("memory_min", "v1 has no hard protection from reclaim");
                }
                if let Some(b) = max {
                    settings.push(("memory.limit_in_bytes".into(), value(b)));
                }
                if let Some(b) = limited(low).filter(|&b| b > 0) {
                    settings.push(("memory.soft_limit_in_bytes".into(), value(b)));
                }
            }
        }
        let rel = match &c.parent {
            None => PathBuf::from(&c.name),
            Some(p) => {
                let parent = out.iter_mut().find(|o| &o.name == p).ok_or_else(|| {
                    HostError::with_fix(
                        format!(
                            "spec cgroup `{}`: parent `{p}` is not a cgroup defined before it",
                            c.name
                        ),
                        "define parents before their children",
                    )
                })?;
                parent.has_children = true;
                parent.rel.join(&c.name)
            }
        };
        out.push(CgroupPlan {
            name: c.name.clone(),
            parent: c.parent.clone(),
            rel,
            settings,
            has_children: false,
            limits: (
                limited(max),
                limited(high),
                limited(low).unwrap_or(0),
                limited(min).unwrap_or(0),
            ),
        });
    }
    if version == Version::V2 {
        for (i, w) in spec.workers.iter().enumerate() {
            if let Some(g) = &w.cgroup {
                if out.iter().any(|o| &o.name == g && o.has_children) {
                    return Err(HostError::with_fix(
                        format!(
                            "worker #{}: cgroup `{g}` has child cgroups, and cgroup v2 allows processes only in leaves",
                            i + 1
                        ),
                        format!("put the worker in a leaf: a new [[cgroup]] with parent = \"{g}\""),
                    ));
                }
            }
        }
        if spec.workers.iter().any(|w| w.cgroup.is_none())
            && !out.iter().any(|o| o.name == REST_LEAF)
        {
            out.push(CgroupPlan {
                name: REST_LEAF.into(),
                parent: None,
                rel: PathBuf::from(REST_LEAF),
                settings: Vec::new(),
                has_children: false,
                limits: (None, None, 0, 0),
            });
        }
    }
    Ok(out)
}

/// The directory (relative to the run's cgroup) a worker in `cgroup` joins:
/// its spec cgroup, else on v2 with a tree the [`REST_LEAF`], else the run's own.
pub fn worker_dir(plans: &[CgroupPlan], cgroup: Option<&str>) -> Option<PathBuf> {
    match cgroup {
        Some(g) => plans.iter().find(|p| p.name == g).map(|p| p.rel.clone()),
        None => plans
            .iter()
            .find(|p| p.name == REST_LEAF && p.settings.is_empty())
            .map(|p| p.rel.clone()),
    }
}

/// Creates the planned cgroups under `top` (the run's memory cgroup), each
/// logged to the state file before its `mkdir`, parents first; on v2 enables
/// the memory controller for the children of `top` and of every parent.
pub fn create_tree(
    state: &mut RunState,
    top: &Path,
    version: Version,
    plans: &[CgroupPlan],
) -> Result<()> {
    let enable = |dir: &Path| -> Result<()> {
        if version == Version::V2 {
            sys::write(dir.join("cgroup.subtree_control"), "+memory").map_err(|e| {
                HostError::with_fix(
                    format!(
                        "cannot enable the memory controller for the children of {}: {}",
                        dir.display(),
                        e.what
                    ),
                    "the run's cgroup must hold no processes; check `reclaimlab doctor`",
                )
            })?;
        }
        Ok(())
    };
    if !plans.is_empty() {
        enable(top)?;
    }
    for p in plans {
        let dir = top.join(&p.rel);
        state.log(Entry::Cgroup(version, dir.clone()))?;
        std::fs::create_dir(&dir).map_err(|e| {
            HostError::with_fix(
                format!("cannot create the spec's cgroup {}: {e}", dir.display()),
                "run as root; `reclaimlab doctor` checks the memory controller",
            )
        })?;
        for (f, v) in &p.settings {
            sys::write(dir.join(f), v).map_err(|e| {
                HostError::with_fix(
                    format!("spec cgroup `{}`: {}", p.name, e.what),
                    format!("the kernel refused {v} for {f}; check the value in the spec"),
                )
            })?;
        }
        if p.has_children {
            enable(&dir)?;
        }
    }
    Ok(())
}

/// Counters of `memory.stat` kept in the record: the VM events (v2; v1's
/// `memory.stat` has only the first four of them).
const STAT_EVENTS: &[&str] = &[
    "pgpgin",
    "pgpgout",
    "pgfault",
    "pgmajfault",
    "pgscan",
    "pgsteal",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgrefill",
    "pgactivate",
    "pgdeactivate",
    "workingset_refault_anon",
    "workingset_refault_file",
];

/// A cgroup's record from its control files: `memory.stat`'s events, and
/// `memory.events` (v2) or `memory.failcnt` and `memory.oom_control`'s
/// `oom_kill`/`under_oom` (v1), by the kernel's names; peak usage from
/// `memory.peak` (v2) or `memory.max_usage_in_bytes` (v1). The groups are
/// new for the run, so the counters are the run's own.
pub fn read_record(
    dir: &Path,
    version: Version,
    name: &str,
    parent: &str,
    limits: (Option<u64>, Option<u64>, u64, u64),
) -> CgroupRecord {
    let stat = sys::parse_vmstat(&sys::read(dir.join("memory.stat")).unwrap_or_default());
    let mut rec = CgroupRecord {
        name: name.to_string(),
        parent: parent.to_string(),
        max_bytes: limits.0,
        high_bytes: limits.1,
        low_bytes: limits.2,
        min_bytes: limits.3,
        ..CgroupRecord::default()
    };
    for (k, v) in &stat {
        if STAT_EVENTS.contains(&k.as_str()) {
            rec.stat.insert(k.clone(), *v);
        }
    }
    match version {
        Version::V2 => {
            rec.peak_bytes = sys::read_u64(dir.join("memory.peak")).unwrap_or(0);
            let ev = sys::parse_vmstat(&sys::read(dir.join("memory.events")).unwrap_or_default());
            rec.events.extend(ev);
        }
        Version::V1 => {
            rec.peak_bytes = sys::read_u64(dir.join("memory.max_usage_in_bytes")).unwrap_or(0);
            if let Some(f) = sys::read_u64(dir.join("memory.failcnt")) {
                rec.events.insert("failcnt".into(), f);
            }
            let oc =
                sys::parse_vmstat(&sys::read(dir.join("memory.oom_control")).unwrap_or_default());
            for (k, v) in oc {
                if k == "oom_kill" || k == "under_oom" {
                    rec.events.insert(k, v);
                }
            }
        }
    }
    rec
}

/// The record's `cgroups` section: the run's own cgroup (named
/// `reclaimlab`, as `sim --machine host:SIZE` names the workload cgroup)
/// and every planned child, parents named as in the spec.
pub fn records(
    top: &Path,
    version: Version,
    run_limit: Option<u64>,
    plans: &[CgroupPlan],
) -> Vec<CgroupRecord> {
    let mut v = vec![read_record(
        top,
        version,
        WORKLOAD_CGROUP,
        "",
        (run_limit, None, 0, 0),
    )];
    for p in plans {
        v.push(read_record(
            &top.join(&p.rel),
            version,
            &p.name,
            p.parent.as_deref().unwrap_or(WORKLOAD_CGROUP),
            p.limits,
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "name='t'\nduration_s=1\n\
        [[cgroup]]\nname='congester'\nmemory_max='512M'\n\
        [[cgroup]]\nname='victim'\nmemory_max='128M'\nmemory_low='64M'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=8\ncgroup='victim'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=8\n";

    fn spec(text: &str) -> Spec {
        Spec::parse(text, "t.toml").unwrap()
    }

    #[test]
    fn v1_maps_max_and_low() {
        let p = plan_tree(&spec(SPEC), Version::V1, 1 << 30).unwrap();
        assert_eq!(p.len(), 2, "no rest leaf on v1: {p:?}");
        assert_eq!(p[0].rel, PathBuf::from("congester"));
        assert_eq!(
            p[0].settings,
            vec![(
                "memory.limit_in_bytes".to_string(),
                (512u64 << 20).to_string()
            )]
        );
        assert_eq!(
            p[1].settings,
            vec![
                (
                    "memory.limit_in_bytes".to_string(),
                    (128u64 << 20).to_string()
                ),
                (
                    "memory.soft_limit_in_bytes".to_string(),
                    (64u64 << 20).to_string()
                )
            ]
        );
        assert_eq!(p[1].limits, (Some(128 << 20), None, 64 << 20, 0));
        assert_eq!(
            worker_dir(&p, Some("victim")),
            Some(PathBuf::from("victim"))
        );
        assert_eq!(worker_dir(&p, None), None);
    }

    #[test]
    fn v2_gets_a_rest_leaf_and_v2_files() {
        let p = plan_tree(&spec(SPEC), Version::V2, 1 << 30).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[1].settings,
            vec![
                ("memory.max".to_string(), (128u64 << 20).to_string()),
                ("memory.low".to_string(), (64u64 << 20).to_string())
            ]
        );
        assert_eq!(p[2].name, REST_LEAF);
        assert_eq!(worker_dir(&p, None), Some(PathBuf::from(REST_LEAF)));
    }

    #[test]
    fn v1_key_on_v2_and_max() {
        let s = spec(
            "name='t'\nduration_s=1\n[[cgroup]]\nname='a'\nlimit_in_bytes='max'\n\
             [[cgroup]]\nname='b'\nparent='a'\nlimit_in_bytes='64M'\n\
             [[worker]]\nkind='anon-hog'\nsize_mib=8\ncgroup='b'\n",
        );
        let p = plan_tree(&s, Version::V2, 1 << 30).unwrap();
        assert_eq!(
            p[0].settings,
            vec![("memory.max".to_string(), "max".to_string())]
        );
        assert!(p[0].has_children);
        assert_eq!(p[1].rel, PathBuf::from("a/b"));
        assert_eq!(p[0].limits.0, None);
        let p1 = plan_tree(&s, Version::V1, 1 << 30).unwrap();
        assert_eq!(
            p1[0].settings,
            vec![("memory.limit_in_bytes".to_string(), "-1".to_string())]
        );
        assert_eq!(p1.len(), 2);
    }

    #[test]
    fn refusals_name_the_cgroup_and_the_fix() {
        let e = plan_tree(&spec(SPEC), Version::V1, 256 << 20).unwrap_err();
        assert!(e.what.contains("spec cgroup `congester`: memory_max = 512.0 MiB is larger than the run's cgroup (256.0 MiB"), "{e}");
        assert!(e.fix.as_deref().unwrap().contains("--memory 576M"), "{e}");
        let high = SPEC.replace("memory_low='64M'", "memory_high='100M'");
        let e = plan_tree(&spec(&high), Version::V1, 1 << 30).unwrap_err();
        assert!(
            e.what
                .contains("`victim`: memory_high has no equivalent on this host's cgroup v1"),
            "{e}"
        );
        assert!(plan_tree(&spec(&high), Version::V2, 1 << 30).is_ok());
        let min = SPEC.replace("memory_low='64M'", "memory_min='10M'");
        let e = plan_tree(&spec(&min), Version::V1, 1 << 30).unwrap_err();
        assert!(e.what.contains("memory_min"), "{e}");
        let inner = spec(
            "name='t'\nduration_s=1\n[[cgroup]]\nname='a'\nmemory_max='64M'\n\
             [[cgroup]]\nname='b'\nparent='a'\nmemory_max='32M'\n\
             [[worker]]\nkind='anon-hog'\nsize_mib=8\ncgroup='a'\n",
        );
        let e = plan_tree(&inner, Version::V2, 1 << 30).unwrap_err();
        assert!(e.what.contains("only in leaves"), "{e}");
        assert!(plan_tree(&inner, Version::V1, 1 << 30).is_ok());
    }

    #[test]
    fn no_cgroups_no_plan() {
        let s = spec("name='t'\nduration_s=1\n[[worker]]\nkind='anon-hog'\nsize_mib=8\n");
        assert!(plan_tree(&s, Version::V2, 1 << 30).unwrap().is_empty());
    }

    #[test]
    fn v1_record_reads_failcnt_and_oom_kill() {
        let d = std::env::temp_dir().join(format!("rl-cgtree-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("memory.stat"),
            "cache 4096\npgpgin 10\npgpgout 7\npgfault 3\npgmajfault 1\n",
        )
        .unwrap();
        std::fs::write(d.join("memory.failcnt"), "42\n").unwrap();
        std::fs::write(
            d.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        )
        .unwrap();
        std::fs::write(d.join("memory.max_usage_in_bytes"), "134217728\n").unwrap();
        let r = read_record(
            &d,
            Version::V1,
            "victim",
            "reclaimlab",
            (Some(128 << 20), None, 0, 0),
        );
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(r.peak_bytes, 128 << 20);
        assert_eq!(r.events.get("failcnt"), Some(&42));
        assert_eq!(r.events.get("oom_kill"), Some(&2));
        assert_eq!(r.stat.get("pgpgin"), Some(&10));
        assert!(!r.stat.contains_key("cache"), "gauges are not events");
        assert_eq!(r.parent, "reclaimlab");
    }
}
