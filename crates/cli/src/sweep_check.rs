//! A warning when runs that were meant to differ produced the same results:
//! most often a swept parameter that the kernel profile never reads (a
//! `throttle.noprogress.*` timeout under `v5.15`, which has no NOPROGRESS
//! throttling), or a kernel difference the workload never reaches.
//!
//! Detected cheaply after the fact: two records are the same run if their
//! `vmstat.csv`, `latency.csv` and `trace.txt.gz` are byte-identical (the
//! simulator is deterministic, and `run.json`, which names the settings,
//! is left out). Files of different sizes are never read.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

/// The files whose bytes make a run's results.
const RESULT_FILES: [&str; 3] = ["vmstat.csv", "latency.csv", "trace.txt.gz"];

/// A fingerprint of a record's results: sizes, then (for records whose sizes
/// match another's) a hash of the bytes.
fn sizes(dir: &Path) -> Vec<u64> {
    RESULT_FILES
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).map_or(u64::MAX, |m| m.len()))
        .collect()
}

fn content_hash(dir: &Path) -> Option<u64> {
    let mut h = DefaultHasher::new();
    for f in RESULT_FILES {
        match std::fs::read(dir.join(f)) {
            Ok(bytes) => bytes.hash(&mut h),
            Err(_) => 0u8.hash(&mut h),
        }
    }
    Some(h.finish())
}

/// Groups of records (two or more each, in the given order) whose results
/// are byte-identical.
pub fn identical_groups(dirs: &[PathBuf]) -> Vec<Vec<PathBuf>> {
    let mut by_size: BTreeMap<Vec<u64>, Vec<&PathBuf>> = BTreeMap::new();
    for d in dirs {
        by_size.entry(sizes(d)).or_default().push(d);
    }
    let mut groups: Vec<Vec<PathBuf>> = Vec::new();
    for same_size in by_size.values().filter(|v| v.len() > 1) {
        let mut by_hash: BTreeMap<u64, Vec<PathBuf>> = BTreeMap::new();
        for d in same_size {
            if let Some(h) = content_hash(d) {
                by_hash.entry(h).or_default().push((*d).clone());
            }
        }
        groups.extend(by_hash.into_values().filter(|v| v.len() > 1));
    }
    // In run order, by each group's first run.
    groups.sort_by_key(|g| dirs.iter().position(|d| *d == g[0]));
    groups
}

/// Prints a warning for each group of identical runs, naming the swept
/// parameters as the likely reason when there are any.
pub fn warn_identical(dirs: &[PathBuf], swept: &[String]) {
    for g in identical_groups(dirs) {
        let names: Vec<String> = g
            .iter()
            .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        let why = if swept.is_empty() {
            "the kernels (or settings) that differ between them made no difference to this workload on this machine".to_string()
        } else {
            format!(
                "`--sweep {}` had no effect on them (the profile may not read that parameter, or the workload never reaches the code that does)",
                swept.join("`, `--sweep ")
            )
        };
        eprintln!(
            "reclaimlab: warning: {} runs produced byte-identical results ({}): {why}",
            g.len(),
            names.join(", ")
        );
    }
}

/// The parameter names of `--sweep NAME=…` arguments.
pub fn names(sweeps: &[String]) -> Vec<String> {
    sweeps
        .iter()
        .filter_map(|s| s.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_results_are_grouped_and_settings_ignored() {
        let base =
            std::env::temp_dir().join(format!("reclaimlab-sweepcheck-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let mk = |name: &str, vm: &str, run_json: &str| {
            let d = base.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vmstat.csv"), vm).unwrap();
            std::fs::write(d.join("latency.csv"), "step,metric,t_s,value_us\n").unwrap();
            std::fs::write(d.join("run.json"), run_json).unwrap();
            d
        };
        let a = mk("a", "t_s,x\n0,1\n", "{\"p\":1}");
        let b = mk("b", "t_s,x\n0,2\n", "{\"p\":2}");
        let c = mk("c", "t_s,x\n0,1\n", "{\"p\":3}");
        let d = mk("d", "t_s,x\n0,10\n", "{}");
        let dirs = vec![a.clone(), b, c.clone(), d];
        assert_eq!(identical_groups(&dirs), vec![vec![a, c]]);
        std::fs::remove_dir_all(&base).ok();
    }
}
