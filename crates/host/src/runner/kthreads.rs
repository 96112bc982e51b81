//! The CPU of the kernel's reclaim threads during a step.
//!
//! A record's tasks are the workload's processes; the simulated records
//! also list kswapd, whose CPU says how much reclaim the background could
//! afford. On a real kernel kswapd is a kernel thread (a child of
//! `kthreadd`, pid 2) that no `wait4` reports, so its time is read from
//! `/proc/PID/stat` (`utime`, `stime`, fields 14 and 15, in clock ticks)
//! at the start and the end of each step. Tick-sampled, so good to a tick
//! per step (10 ms at USER_HZ 100); the workers' figures stay the exact
//! ones `wait4` gives (children.rs says why they do not use these fields).
//! The threads are listed after the duration is summed: the record's
//! Duration rows remain the workload's CPU, as in the simulator's.

use std::fs;

use reclaimlab_record::TaskTime;

/// One kernel reclaim thread's CPU so far: pid, comm, user and system ticks.
pub(super) type KthreadTimes = Vec<(u32, String, u64, u64)>;

/// Whether a kernel thread's name is one whose CPU the record keeps.
fn kept(comm: &str) -> bool {
    comm.starts_with("kswapd")
}

/// Parses one `/proc/PID/stat` line into (comm, utime, stime).
fn parse_stat(stat: &str) -> Option<(String, u64, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let f = crate::sys::stat_fields(stat)?;
    // Field n of proc(5) is f[n - 3]: utime 14, stime 15.
    let utime = f.get(11)?.parse().ok()?;
    let stime = f.get(12)?.parse().ok()?;
    Some((comm, utime, stime))
}

/// The kept kernel threads now (children of `kthreadd`, pid 2); empty if
/// /proc cannot be read.
pub(super) fn snapshot() -> KthreadTimes {
    crate::children::children_of(2)
        .into_iter()
        .filter_map(|pid| {
            let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (comm, u, st) = parse_stat(&s)?;
            kept(&comm).then_some((pid, comm, u, st))
        })
        .collect()
}

/// Each thread present at both ends: its CPU over the step, as a task of
/// that step.
pub(super) fn step_tasks(before: &KthreadTimes, after: &KthreadTimes, step: u32) -> Vec<TaskTime> {
    let hz = crate::bench::clk_tck();
    after
        .iter()
        .filter_map(|(pid, comm, u1, s1)| {
            let (_, _, u0, s0) = before.iter().find(|b| b.0 == *pid && b.1 == *comm)?;
            Some(TaskTime {
                comm: comm.clone(),
                pid: *pid,
                step: Some(step),
                user_s: u1.saturating_sub(*u0) as f64 / hz,
                system_s: s1.saturating_sub(*s0) as f64 / hz,
                ..TaskTime::default()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_threads_stat_line_parses_and_deltas_are_per_thread() {
        let line = "43 (kswapd0) S 2 0 0 0 -1 2129984 0 0 0 0 7 1234 0 0 20 0 1 0 33 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        assert_eq!(parse_stat(line), Some(("kswapd0".to_string(), 7, 1234)));
        // A comm with spaces and parentheses still parses from the last ')'.
        let odd = "7 (a (b) c) S 1 0 0 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 33";
        assert_eq!(parse_stat(odd), Some(("a (b) c".to_string(), 5, 6)));
        assert_eq!(parse_stat("garbage"), None);
        assert!(kept("kswapd1") && !kept("kworker/0:1"));
        let before = vec![(43, "kswapd0".to_string(), 7, 1000)];
        let after = vec![
            (43, "kswapd0".to_string(), 7, 1000 + 250),
            (44, "kswapd1".to_string(), 0, 9),
        ];
        let t = step_tasks(&before, &after, 3);
        assert_eq!(t.len(), 1, "a thread seen at one end only is left out");
        assert_eq!(
            (t[0].comm.as_str(), t[0].pid, t[0].step),
            ("kswapd0", 43, Some(3))
        );
        assert_eq!(t[0].user_s, 0.0);
        assert!(t[0].system_s > 0.0);
    }

    /// On this machine: every kswapd kernel thread /proc shows is in the
    /// snapshot (none where the namespace hides kernel threads).
    #[test]
    fn the_snapshot_finds_this_machines_kswapd_threads() {
        let mut seen: Vec<u32> = fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    s.contains("(kswapd")
                        && crate::children::parse_stat_ppid(&s).is_some_and(|(pp, _)| pp == 2)
                })
            })
            .collect();
        seen.sort_unstable();
        let got: Vec<u32> = snapshot().iter().map(|t| t.0).collect();
        assert_eq!(got, seen);
    }
}
