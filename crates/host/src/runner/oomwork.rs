//! What a run with the OOM seed's workers (issue 19: `mlock`, `fs-create`)
//! checks before it creates anything, and what it makes of their output
//! afterwards.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{HostError, Result};
use crate::plan::{Proc, StepWork};
use crate::{fsimage, sys};

/// Refuses mlock workers that cannot fit, before anything is created: their
/// locked memory in all against the memory the run gives the workload (the
/// cgroup's limit with `--memory`, else the machine's), since locked memory
/// cannot be reclaimed and the kernel could only OOM-kill. Returns the
/// filesystem and `mkfs` of the image an fs-create worker needs (an error
/// naming the missing tool if there is none).
pub(super) fn check(steps: &[StepWork], memory: u64) -> Result<Option<(&'static str, PathBuf)>> {
    let (mem_total, _) = sys::mem_and_swap();
    for w in steps {
        let locked: u64 = w
            .early
            .iter()
            .chain(&w.late)
            .map(|p| match &p.0 {
                Proc::Mlock { bytes, .. } => *bytes,
                _ => 0,
            })
            .sum();
        let limit = if memory > 0 {
            memory.min(mem_total)
        } else {
            mem_total
        };
        if locked > 0 && locked >= limit {
            return Err(HostError::with_fix(
                format!(
                    "the mlock worker(s) of step {} lock {} MiB, but the run has {} MiB ({}): locked memory cannot be reclaimed, so the kernel could only OOM-kill",
                    w.step,
                    locked >> 20,
                    limit >> 20,
                    if memory > 0 && memory < mem_total { "its --memory cgroup limit" } else { "the machine's memory" }
                ),
                format!("lower size_mib below {} MiB, or raise --memory", limit >> 20),
            ));
        }
    }
    // Permission to lock: the workers inherit the runner's RLIMIT_MEMLOCK
    // (raised here) or its CAP_IPC_LOCK.
    let most = steps
        .iter()
        .flat_map(|w| w.early.iter().chain(&w.late))
        .filter_map(|p| match &p.0 {
            Proc::Mlock { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .max();
    if let Some(bytes) = most {
        crate::fsworkers::raise_memlock_limit(bytes)?;
    }
    if steps.iter().any(StepWork::needs_fs_image) {
        return fsimage::mkfs_tool().map(Some);
    }
    Ok(None)
}

/// The workers' logs, read once: their lines for the record's notes
/// ([`worker_notes`]) and the mlock workers' steps ([`mlock_steps`]).
pub(super) struct WorkerLogs {
    /// Notes.
    pub notes: Vec<String>,
    /// (t_s, µs the step took to lock) of every mlock step.
    pub mlock_samples: Vec<(f64, f64)>,
}

/// Reads the step's worker logs once for both [`WorkerLogs`] parts.
pub(super) fn read_worker_logs(step: u32, logs: &[(String, PathBuf)]) -> WorkerLogs {
    let texts: Vec<(String, String)> = logs
        .iter()
        .map(|(comm, path)| (comm.clone(), fs::read_to_string(path).unwrap_or_default()))
        .collect();
    let mlock_samples = texts
        .iter()
        .filter(|(c, _)| c == "mlock")
        .flat_map(|(_, t)| mlock_steps(t))
        .collect();
    WorkerLogs {
        notes: worker_notes(step, &texts),
        mlock_samples,
    }
}

/// An mlock worker's steps from its log: (t_s, µs the step took to lock)
/// for each `t_s locked_mib step_us` line; lines without the step's time
/// (or not numbers: an error) are skipped.
fn mlock_steps(text: &str) -> Vec<(f64, f64)> {
    let mut v = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let [t, _, us] = f[..] {
            if let (Ok(t), Ok(us)) = (t.parse::<f64>(), us.parse::<f64>()) {
                if t.is_finite() && us.is_finite() && us >= 0.0 {
                    v.push((t, us));
                }
            }
        }
    }
    v
}

/// Lines for the record's notes from the workers' logs: how much each
/// mlock worker had locked (its last `t_s MiB` line), the files each
/// fs-create worker made, and any error a worker printed.
fn worker_notes(step: u32, logs: &[(String, String)]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut files = 0u64;
    let mut creators = 0;
    for (comm, text) in logs {
        let last = text.lines().last().unwrap_or("").trim();
        match comm.as_str() {
            "mlock" => {
                let locked = text
                    .lines()
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .next_back();
                notes.push(match locked {
                    Some(m) => format!(
                        "step {step}: the mlock worker had locked {m} MiB ({})",
                        last
                    ),
                    None if last.is_empty() => format!(
                        "step {step}: the mlock worker finished no step (killed while locking its first, see OOM kills)"
                    ),
                    None => format!("step {step}: the mlock worker locked nothing: {last}"),
                });
            }
            "fs_mark" => {
                creators += 1;
                files += last
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
                if last.contains("ENOSPC") {
                    notes.push(format!(
                        "step {step}: an fs-create worker filled the image (ENOSPC)"
                    ));
                }
            }
            _ => {}
        }
    }
    if creators > 0 {
        notes.push(format!(
            "step {step}: {creators} fs-create worker(s) created about {files} files (each reports every 1000)"
        ));
    }
    notes
}

/// The image path of run `name` under `data_parent`.
pub(super) fn image_path(data_parent: &Path, name: &str) -> PathBuf {
    data_parent.join(format!("{name}.img"))
}

/// The run's OOM kills, as data: the kernel log's reports of the run's
/// processes `pids` (from `t0`, CLOCK_MONOTONIC ns of the record's time 0),
/// each given its step and cgroup, and the cgroup's own kill counter, which
/// also counts what the log does not show; both summed up in `notes`.
pub(super) fn capture_kills(
    pids: &[u32],
    t0: u64,
    steps: &[reclaimlab_record::Step],
    sandbox: Option<&crate::cgroup::Sandbox>,
    notes: &mut Vec<String>,
) -> Vec<reclaimlab_record::OomKillRecord> {
    let mut oom_kills = crate::oomcapture::read_kernel_log()
        .map(|log| crate::oomcapture::kills_in_log(&log, pids, t0 as f64 / 1e9))
        .unwrap_or_default();
    for k in &mut oom_kills {
        k.step = steps
            .iter()
            .find(|s| k.t_s >= s.start_s && k.t_s <= s.end_s)
            .map(|s| s.step);
        if let Some(sb) = sandbox {
            k.cgroup = sb
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
    }
    if let Some(sb) = sandbox {
        let n = crate::oomcapture::cgroup_tree_oom_kills(&sb.dir, sb.version);
        if n > 0 || !oom_kills.is_empty() {
            notes.push(format!(
                "OOM kills: {n} by the counters of the run's cgroups ({}), {} of the run's processes in the kernel log",
                match sb.version {
                    crate::cgroup::Version::V1 => "memory.oom_control oom_kill",
                    crate::cgroup::Version::V2 => "memory.events oom_kill",
                },
                oom_kills.len()
            ));
        }
    }
    for k in &oom_kills {
        notes.push(format!(
            "OOM kill at {:.3} s: pid {} ({}), victim {} MiB, {} MiB free; {}",
            k.t_s,
            k.pid,
            k.comm,
            k.victim_kib >> 10,
            k.free_kib >> 10,
            k.reason
        ));
    }
    oom_kills
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mlock worker's steps become samples and its last line the note;
    /// an error line and the old two-field lines give no sample.
    #[test]
    fn mlock_steps_become_samples_and_the_last_the_note() {
        let dir = std::env::temp_dir().join(format!("rl-mlocklog-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let log = dir.join("mlock.log");
        fs::write(
            &log,
            "5.012 100 812345.5\n10.020 200\n15.031 300 901000.0\nmlock worker: mlock failed\n",
        )
        .unwrap();
        let logs = vec![("mlock".to_string(), log)];
        let read = read_worker_logs(1, &logs);
        assert_eq!(
            read.mlock_samples,
            vec![(5.012, 812_345.5), (15.031, 901_000.0)]
        );
        assert!(
            read.notes[0].contains("had locked 300 MiB"),
            "{:?}",
            read.notes
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
