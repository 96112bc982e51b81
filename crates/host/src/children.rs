//! The CPU of a worker's own child processes: fio forks one process per job,
//! and `run` records what fio *and* its jobs used.
//!
//! A process's `wait4` rusage is its own CPU plus that of the children *it*
//! reaped (kernel/exit.c `wait_task_zombie()` reports `RUSAGE_BOTH`, v3.4 to
//! v6.x). The runner ends a step by SIGKILLing the whole group, fio and its
//! jobs at once, so fio never reaps its jobs and their CPU would be in no
//! one's figure. So the runner makes itself a *child subreaper*
//! (`prctl(PR_SET_CHILD_SUBREAPER)`): when fio dies, the kernel hands its
//! children, zombies included, to the runner (kernel/exit.c
//! `find_new_reaper()` and `reparent_leader()`), which reaps each with
//! `wait4` and adds its rusage to fio's. A job fio reaped itself (one that
//! ended before the step did) is in fio's own figure already, so nothing is
//! counted twice.
//!
//! Why this and not fio's own report (`--output-format=json`, `usr_cpu` and
//! `sys_cpu` per job): fio writes its report only when it ends cleanly, and
//! the runner kills it at the step's end as mmtests does; fio's figures
//! leave out the `ramp_time`, its parent process and its helper threads,
//! and come as percentages of the job's runtime, rounded. The kernel's own
//! accounting of every process, read when it is reaped, has none of these
//! gaps. Why not `/proc/PID/stat` (`utime`/`stime`): it counts in clock
//! ticks and must be read before the kill, missing what the jobs used
//! between the reading and their death.

use std::fs;

/// `ppid` and state of a `/proc/PID/stat` line (fields 4 and 3).
pub fn parse_stat_ppid(stat: &str) -> Option<(u32, char)> {
    let f = crate::sys::stat_fields(stat)?;
    let state = f.first()?.chars().next()?;
    let ppid = f.get(4 - 3)?.parse().ok()?;
    Some((ppid, state))
}

/// The children of `pid` now, by a scan of `/proc` (no need for the
/// kernel's optional `/proc/PID/task/TID/children`), sorted.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v: Vec<u32> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .as_deref()
                .and_then(parse_stat_ppid)
                .is_some_and(|(pp, _)| pp == pid)
        })
        .collect();
    v.sort_unstable();
    v
}

/// Makes this process a child subreaper (`on`) or not; false when the
/// kernel refuses (before v3.4).
pub fn set_subreaper(on: bool) -> bool {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag and touches no memory.
    unsafe {
        libc::prctl(
            libc::PR_SET_CHILD_SUBREAPER,
            libc::c_ulong::from(on),
            0,
            0,
            0,
        ) == 0
    }
}

/// Whether this process is a child subreaper now.
pub fn is_subreaper() -> bool {
    let mut v: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int to the pointer.
    let r = unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut v as *mut libc::c_int) };
    r == 0 && v != 0
}

/// Waits for a child with `wait4`: its user and system CPU seconds, with
/// those of the children it reaped; `None` when it is not (or no longer)
/// this process's child.
pub fn reap(pid: u32) -> Option<(f64, f64)> {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut ru) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break r;
    };
    if r <= 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((tv(ru.ru_utime), tv(ru.ru_stime)))
}

/// A worker process's CPU with that of its child processes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TreeCpu {
    /// User and system seconds of the process and the children it reaped.
    pub own: (f64, f64),
    /// User and system seconds of the children the runner reaped.
    pub children: (f64, f64),
    /// Children the runner reaped.
    pub reaped: usize,
    /// Children whose CPU is in no figure (not reaped by the process, and
    /// not handed to the runner): the total is then too low, by an unknown amount.
    pub lost: usize,
}

impl TreeCpu {
    /// User and system seconds of the process and all its children, `None`
    /// (unknown) when some child's CPU was lost.
    pub fn total(&self) -> Option<(f64, f64)> {
        (self.lost == 0).then_some((self.own.0 + self.children.0, self.own.1 + self.children.1))
    }
}

/// Reaps `pid`, then the `children` it had when they were listed (before
/// the kill), which its death handed to this process if it is a subreaper
/// (`subreaper`). A child that is not this process's to reap was reaped by
/// `pid` itself (its CPU is in `pid`'s figure) when this process is a
/// subreaper, and is lost otherwise. `None` when `pid` itself cannot be reaped.
pub fn reap_tree(pid: u32, children: &[u32], subreaper: bool) -> Option<TreeCpu> {
    let own = reap(pid)?;
    let mut t = TreeCpu {
        own,
        ..TreeCpu::default()
    };
    for &c in children {
        match reap(c) {
            Some((u, s)) => {
                t.children.0 += u;
                t.children.1 += s;
                t.reaped += 1;
            }
            None if subreaper => {}
            None => t.lost += 1,
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn stat_ppid() {
        let s =
            "1234 (a (weird) name) S 77 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 98765";
        assert_eq!(parse_stat_ppid(s), Some((77, 'S')));
        assert_eq!(parse_stat_ppid("12 (x) Z 1"), Some((1, 'Z')));
        assert_eq!(parse_stat_ppid("12 (x)"), None);
        assert_eq!(parse_stat_ppid("garbage"), None);
    }

    #[test]
    fn totals_are_unknown_when_a_child_is_lost() {
        let t = TreeCpu {
            own: (1.0, 2.0),
            children: (3.0, 4.0),
            reaped: 2,
            lost: 0,
        };
        assert_eq!(t.total(), Some((4.0, 6.0)));
        assert_eq!(TreeCpu { lost: 1, ..t }.total(), None);
    }

    /// A shell whose child burns CPU, both SIGKILLed as a step's end kills
    /// fio and its jobs: with the subreaper, the child's CPU is counted; the
    /// shell's own figure (all there was before) has almost none of it.
    /// (One test for both cases: the subreaper flag is per process.)
    #[test]
    fn a_killed_parents_children_are_reaped_with_their_cpu() {
        let run = |subreaper: bool| -> TreeCpu {
            assert!(set_subreaper(subreaper));
            assert_eq!(is_subreaper(), subreaper);
            // Reaped below by reap_tree's wait4, not by Child::wait.
            #[allow(clippy::zombie_processes)]
            let ch = Command::new("sh")
                // Two CPU burners and the builtin `wait`: the shell stays
                // a shell with exactly two children (a last command such as
                // `sleep` may be exec'd in place of the shell by dash).
                .args([
                    "-c",
                    "sh -c 'while :; do :; done' & sh -c 'while :; do :; done' & wait",
                ])
                .spawn()
                .expect("sh");
            let pid = ch.id();
            let end = Instant::now() + Duration::from_secs(10);
            let kids = loop {
                let k = children_of(pid);
                if k.len() == 2 || Instant::now() > end {
                    break k;
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            assert_eq!(kids.len(), 2, "{kids:?}");
            // Let the loops burn at least 0.4 s of CPU between them, however
            // busy the machine is (read from /proc, in clock ticks).
            let ticks = |p: u32| -> u64 {
                let st = fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                let f = crate::sys::stat_fields(&st).unwrap_or_default();
                // Fields 14 and 15: utime, stime.
                let n = |k: usize| {
                    f.get(k - 3)
                        .and_then(|x| x.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                n(14) + n(15)
            };
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
            let end = Instant::now() + Duration::from_secs(20);
            while kids.iter().map(|&k| ticks(k)).sum::<u64>() * 10 < 4 * hz && Instant::now() < end
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            for p in std::iter::once(pid).chain(kids.iter().copied()) {
                // SAFETY: signalling processes this test started.
                unsafe { libc::kill(p as i32, libc::SIGKILL) };
            }
            let t = reap_tree(pid, &kids, subreaper).expect("the shell is ours");
            if !subreaper {
                // Left to init: make sure they are gone.
                for p in &kids {
                    // SAFETY: as above.
                    unsafe { libc::kill(*p as i32, libc::SIGKILL) };
                }
            }
            t
        };
        let with = run(true);
        let without = run(false);
        let _ = set_subreaper(false);
        assert_eq!((with.reaped, with.lost), (2, 0), "{with:?}");
        let (u, s) = with.total().unwrap();
        assert!(u + s > 0.2, "{with:?}");
        assert!(with.own.0 + with.own.1 < 0.1, "{with:?}");
        assert_eq!((without.reaped, without.lost), (0, 2), "{without:?}");
        assert_eq!(without.total(), None);
    }
}
