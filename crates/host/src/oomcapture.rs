//! OOM kills of a real run, captured as data (not as a failure): the
//! kernel's own report in the kernel log (`dump_header` and
//! `__oom_kill_process`, 5.9.1–6.1.0 mm/oom_kill.c: "invoked oom-killer:
//! gfp_mask=…, order=…", the `Mem-Info` block of a global OOM or
//! "memory: usage …kB, limit …kB" of a memcg OOM, "oom-kill:constraint=…",
//! "Killed process PID (comm) total-vm:…kB, anon-rss:…kB, file-rss:…kB,
//! shmem-rss:…kB"), kept for the run's own processes; and the memory
//! cgroup's kill counter (v1 `memory.oom_control` `oom_kill`, v2
//! `memory.events` `oom_kill`), which counts kills even when the log is
//! unreadable. The `oom:mark_victim` tracepoint lands in `trace.txt.gz`
//! with the other events (tracefs.rs).

use std::path::Path;
use std::process::Command;

use reclaimlab_record::OomKillRecord;

use crate::cgroup::Version;
use crate::sys;

/// The memory cgroup's OOM kill counter (`oom_kill` of v1
/// `memory.oom_control` or v2 `memory.events`), 0 where absent.
pub fn cgroup_oom_kills(dir: &Path, version: Version) -> u64 {
    let file = match version {
        Version::V1 => "memory.oom_control",
        Version::V2 => "memory.events",
    };
    sys::read(dir.join(file))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
        .unwrap_or(0)
}

/// OOM kills in the memory cgroup `dir` and every cgroup below it: v2's
/// `memory.events` is hierarchical, so its own counter; v1 counts per
/// cgroup, so the sum over the tree (a kill in a spec's child cgroup is not
/// in the run's cgroup's `memory.oom_control`).
pub fn cgroup_tree_oom_kills(dir: &Path, version: Version) -> u64 {
    fn v1_sum(dir: &Path, depth: u32) -> u64 {
        let mut n = cgroup_oom_kills(dir, Version::V1);
        if depth < 8 {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    n += v1_sum(&e.path(), depth + 1);
                }
            }
        }
        n
    }
    match version {
        Version::V1 => v1_sum(dir, 0),
        Version::V2 => cgroup_oom_kills(dir, Version::V2),
    }
}

/// The kernel log as `dmesg` prints it (`[seconds] text` lines), or `None`
/// where it cannot be read (not root, `kernel.dmesg_restrict`).
pub fn read_kernel_log() -> Option<String> {
    let out = Command::new("dmesg").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `value` of `key` in a log line (`anon-rss:1234kB` → 1234).
fn kb_field(line: &str, key: &str) -> Option<u64> {
    let at = line.find(key)? + key.len();
    let digits: String = line[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The OOM kills in `log` (from [`read_kernel_log`]) of the processes
/// `pids`, at or after `t0_s` (seconds of the log's clock, `local_clock`,
/// which is CLOCK_MONOTONIC's on these hosts), timed on the record's base.
pub fn kills_in_log(log: &str, pids: &[u32], t0_s: f64) -> Vec<OomKillRecord> {
    let mut out = Vec::new();
    let mut invoked = String::new();
    let mut free_kib: Option<u64> = None;
    let mut constraint = String::new();
    let mut memcg_line = String::new();
    for raw in log.lines() {
        let Some((ts, text)) = raw
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .and_then(|(t, rest)| Some((t.trim().parse::<f64>().ok()?, rest.trim())))
        else {
            continue;
        };
        if ts < t0_s {
            continue;
        }
        if let Some(at) = text.find("invoked oom-killer: ") {
            invoked = text[at + "invoked oom-killer: ".len()..].to_string();
            free_kib = None;
            memcg_line.clear();
            constraint.clear();
        } else if text.starts_with("memory: usage ") {
            // A memcg OOM: free = limit - usage of the cgroup.
            memcg_line = text.to_string();
            if let (Some(u), Some(l)) = (kb_field(text, "usage "), kb_field(text, "limit ")) {
                free_kib = Some(l.saturating_sub(u));
            }
        } else if text.contains(" free:") && text.contains("free_pcp:") && free_kib.is_none() {
            // show_mem's Mem-Info line, in pages.
            free_kib = kb_field(text, " free:").map(|p| p * sys::page_size() / 1024);
        } else if let Some(c) = text.strip_prefix("oom-kill:constraint=") {
            constraint = c.split(',').next().unwrap_or("").to_string();
        } else if let Some(at) = text.find("Killed process ") {
            let rest = &text[at + "Killed process ".len()..];
            let Some(pid) = rest.split_whitespace().next().and_then(|p| p.parse().ok()) else {
                continue;
            };
            if !pids.contains(&pid) {
                continue;
            }
            let comm = rest
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .map_or(String::new(), |(c, _)| c.to_string());
            let rss = ["anon-rss:", "file-rss:", "shmem-rss:"]
                .iter()
                .filter_map(|k| kb_field(rest, k))
                .sum();
            let memcg = text.contains("Memory cgroup out of memory");
            let mut reason = if memcg {
                format!("memory cgroup out of memory ({memcg_line})")
            } else {
                "out of memory (global: should_reclaim_retry gave up)".to_string()
            };
            if !invoked.is_empty() {
                reason.push_str(&format!("; invoked oom-killer: {invoked}"));
            }
            out.push(OomKillRecord {
                t_s: ts - t0_s,
                step: None,
                pid,
                comm,
                cgroup: String::new(),
                constraint: if constraint.is_empty() {
                    if memcg {
                        "CONSTRAINT_MEMCG"
                    } else {
                        "CONSTRAINT_NONE"
                    }
                    .to_string()
                } else {
                    constraint.clone()
                },
                victim_kib: rss,
                free_kib: free_kib.unwrap_or(0),
                reason,
                source: "dmesg".into(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memcg OOM report as 5.15 prints it: the victim, its rss, the
    /// cgroup's usage and limit, and only the run's own pids.
    /// v1: a kill in a child cgroup counts (its counters are per cgroup);
    /// v2: the top's hierarchical counter alone.
    #[test]
    fn oom_kills_are_counted_over_the_tree() {
        let d = std::env::temp_dir().join(format!("rl-oomtree-{}", std::process::id()));
        let child = d.join("congester");
        std::fs::create_dir_all(&child).unwrap();
        let ctl = |n: u64| format!("oom_kill_disable 0\nunder_oom 0\noom_kill {n}\n");
        std::fs::write(d.join("memory.oom_control"), ctl(0)).unwrap();
        std::fs::write(child.join("memory.oom_control"), ctl(0)).unwrap();
        assert_eq!(cgroup_tree_oom_kills(&d, Version::V1), 0);
        std::fs::write(child.join("memory.oom_control"), ctl(1)).unwrap();
        assert_eq!(cgroup_tree_oom_kills(&d, Version::V1), 1);
        let ev = |n: u64| format!("low 0\nhigh 0\nmax 3\noom 1\noom_kill {n}\n");
        std::fs::write(d.join("memory.events"), ev(1)).unwrap();
        std::fs::write(child.join("memory.events"), ev(1)).unwrap();
        assert_eq!(cgroup_tree_oom_kills(&d, Version::V2), 1);
        assert_eq!(cgroup_tree_oom_kills(&d.join("missing"), Version::V2), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_memcg_oom_report_becomes_a_kill_record() {
        let log = "[  90.000000] earlier: Killed process 77 (mlock) total-vm:1kB, anon-rss:1kB\n\
[ 100.100000] fs_mark invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n\
[ 100.100100] memory: usage 1048576kB, limit 1048576kB, failcnt 123\n\
[ 100.100200] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/reclaimlab-9,task_memcg=/reclaimlab-9,task=mlock,pid=4242,uid=0\n\
[ 100.100300] Memory cgroup out of memory: Killed process 4242 (mlock) total-vm:925000kB, anon-rss:921600kB, file-rss:1200kB, shmem-rss:0kB, UID:0 pgtables:1900kB oom_score_adj:0\n\
[ 100.200000] Memory cgroup out of memory: Killed process 5555 (other) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n";
        let k = kills_in_log(log, &[4242, 77], 95.0);
        assert_eq!(k.len(), 1, "{k:?}");
        let k = &k[0];
        assert_eq!((k.pid, k.comm.as_str()), (4242, "mlock"));
        assert!((k.t_s - 5.1003).abs() < 1e-6);
        assert_eq!(k.victim_kib, 921_600 + 1200);
        assert_eq!(k.free_kib, 0);
        assert_eq!(k.constraint, "CONSTRAINT_MEMCG");
        assert!(
            k.reason.contains("limit 1048576kB") && k.reason.contains("order=0"),
            "{}",
            k.reason
        );
        assert_eq!(k.source, "dmesg");
    }
}
