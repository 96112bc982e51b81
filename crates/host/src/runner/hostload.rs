//! What else the host's CPUs did during a real run.
//!
//! A real run shares the host: a build in the background takes CPU time the
//! workers would have had, and the record's CPU and latency figures then say
//! as much about the host as about the kernel. `/proc/stat`'s first line
//! (`cpu  user nice system idle iowait irq softirq steal …`, in USER_HZ ticks)
//! read at the start and the end of the steps gives the host's busy time;
//! less the run's own (its cgroup's CPU and the runner's) it is the time
//! spent on everything else: the kernel's threads working for the run
//! (flusher, kswapd, interrupts) and other work on the host. Niced user time
//! is shown apart, since background builds usually run niced.

use std::fs;

/// `/proc/stat`'s aggregate `cpu` line, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct CpuStat {
    /// user + nice + system + irq + softirq + steal.
    pub busy_s: f64,
    /// nice (user time of niced processes).
    pub nice_s: f64,
    /// busy + idle + iowait.
    pub total_s: f64,
    /// Context switches since boot (the `ctxt` line), if given.
    pub ctxt: Option<u64>,
}

/// Parses `/proc/stat`'s `cpu` line; `None` if it is missing or garbled.
pub(super) fn parse_cpu_line(text: &str, ticks_per_s: f64) -> Option<CpuStat> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<f64>().ok())
        .collect::<Option<Vec<f64>>>()?;
    if v.len() < 8 || ticks_per_s <= 0.0 {
        return None;
    }
    let (user, nice, system, idle, iowait, irq, softirq, steal) =
        (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    let busy = user + nice + system + irq + softirq + steal;
    let ctxt = text
        .lines()
        .find_map(|l| l.strip_prefix("ctxt "))
        .and_then(|v| v.trim().parse().ok());
    Some(CpuStat {
        busy_s: busy / ticks_per_s,
        nice_s: nice / ticks_per_s,
        total_s: (busy + idle + iowait) / ticks_per_s,
        ctxt,
    })
}

/// Reads `/proc/stat` now.
pub(super) fn read() -> Option<CpuStat> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    parse_cpu_line(&fs::read_to_string("/proc/stat").ok()?, hz as f64)
}

/// The share of the host's CPU time that other work may take before the
/// note warns that the record's CPU and latency figures are not the
/// kernel's alone.
const BUSY_WARN: f64 = 0.25;

/// The note: the host's busy time over the run, the run's own share, and
/// the rest, with a warning when the rest is large. `run_cpu_s` is the
/// run's cgroup CPU plus the runner's own.
pub(super) fn note(a: CpuStat, b: CpuStat, run_cpu_s: f64) -> String {
    let total = (b.total_s - a.total_s).max(0.0);
    let busy = (b.busy_s - a.busy_s).max(0.0);
    let nice = (b.nice_s - a.nice_s).max(0.0);
    let other = (busy - run_cpu_s).max(0.0);
    let share = |x: f64| if total > 0.0 { 100.0 * x / total } else { 0.0 };
    let mut s = format!(
        "host CPU during the run (/proc/stat): {busy:.1} s busy of {total:.1} s ({:.0} %); \
         the run's cgroup and runner {run_cpu_s:.1} s; everything else {other:.1} s ({:.0} %: \
         kernel threads working for the run, and other work on the host), of which niced user time {nice:.1} s",
        share(busy),
        share(other)
    );
    // Every switch costs the CPU (a guest under qemu's TCG: 40-48 µs,
    // docs/guests.md), so their rate says where system time may go.
    if let (Some(x), Some(y)) = (a.ctxt, b.ctxt) {
        let n = y.saturating_sub(x);
        let wall = total / f64::from(crate::sys::cpus().max(1));
        if wall > 0.0 {
            s.push_str(&format!(
                "; {n} context switches (/proc/stat ctxt: {:.0} a second)",
                n as f64 / wall
            ));
        }
    }
    if total > 0.0 && other / total > BUSY_WARN {
        s.push_str(&format!(
            "; warning: more than {:.0} % of the host's CPU went to other work, so this record's CPU times \
             and latencies are not the kernel's alone (run it on an idle host to compare with a simulation)",
            100.0 * BUSY_WARN
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_cpu_line() {
        let t = "cpu  100 50 30 800 20 5 5 10 0 0\ncpu0 50 25 15 400 10 2 3 5 0 0\nctxt 12345\n";
        let c = parse_cpu_line(t, 100.0).unwrap();
        assert_eq!(c.ctxt, Some(12345));
        assert_eq!(
            parse_cpu_line("cpu  1 2 3 4 5 6 7 8\nctxt many\n", 100.0)
                .unwrap()
                .ctxt,
            None
        );
        assert_eq!(c.busy_s, 2.0);
        assert_eq!(c.nice_s, 0.5);
        assert_eq!(c.total_s, 10.2);
        assert_eq!(parse_cpu_line("cpu0 1 2 3\n", 100.0), None);
        assert_eq!(parse_cpu_line("cpu  1 2 x 4 5 6 7 8\n", 100.0), None);
        assert_eq!(parse_cpu_line("cpu  1 2 3\n", 100.0), None);
    }

    #[test]
    fn counts_the_context_switches() {
        let a = CpuStat {
            ctxt: Some(1000),
            ..CpuStat::default()
        };
        let b = CpuStat {
            busy_s: 10.0,
            total_s: 20.0 * f64::from(crate::sys::cpus()),
            ctxt: Some(41_000),
            ..CpuStat::default()
        };
        let n = note(a, b, 5.0);
        assert!(
            n.contains("40000 context switches (/proc/stat ctxt: 2000 a second)"),
            "{n}"
        );
        assert!(!note(CpuStat::default(), b, 5.0).contains("context switches"));
    }

    #[test]
    fn warns_when_other_work_took_the_cpus() {
        let a = CpuStat::default();
        let quiet = CpuStat {
            busy_s: 60.0,
            nice_s: 1.0,
            total_s: 200.0,
            ctxt: None,
        };
        let n = note(a, quiet, 50.0);
        assert!(n.contains("everything else 10.0 s (5 %"), "{n}");
        assert!(!n.contains("warning"), "{n}");
        let busy = CpuStat {
            busy_s: 180.0,
            nice_s: 120.0,
            total_s: 200.0,
            ctxt: None,
        };
        let n = note(a, busy, 50.0);
        assert!(
            n.contains("everything else 130.0 s (65 %") && n.contains("niced user time 120.0 s"),
            "{n}"
        );
        assert!(n.contains("warning: more than 25 %"), "{n}");
    }
}
