//! Tracepoints, printed exactly as the kernel's ftrace text output prints them
//! (`trace_print_context` + the event's `TP_printk`), into a buffer the runner
//! drains into the run record's `trace.txt.gz`.

use crate::Kernel;

/// Which tracepoints are recorded.
#[derive(Clone, Debug)]
pub struct TraceConfig {
    /// Record anything at all.
    pub enabled: bool,
    /// Also the high-volume per-batch `mm_vmscan_lru_shrink_inactive` and
    /// `balance_dirty_pages` events.
    pub verbose: bool,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            enabled: true,
            verbose: false,
        }
    }
}

impl Kernel {
    /// Starts a trace line for the current task: `comm-pid [cpu] flags secs.usecs: event: `
    /// and returns the buffer to append the fields to. Returns `None` when tracing is off.
    pub fn trace_begin(&mut self, event: &str) -> Option<&mut String> {
        if !self.trace_cfg.enabled {
            return None;
        }
        let t = self.exec.current() as usize;
        let now = self.exec.now();
        let (secs, usecs) = (now / 1_000_000_000, (now / 1_000) % 1_000_000);
        let task = &self.tasks[t];
        let buf = &mut self.trace_buf;
        print_context(buf, &task.comm, task.pid, task.cpu, secs, usecs, event);
        Some(buf)
    }

    /// Ends a trace line.
    pub fn trace_end(&mut self) {
        self.trace_buf.push('\n');
        self.trace_lines += 1;
    }

    /// Takes the trace text emitted so far.
    pub fn take_trace(&mut self) -> String {
        std::mem::take(&mut self.trace_buf)
    }
}

/// `trace_print_context()`: `"%16s-%-7d [%03d] "`, the irq flags, then
/// `"%5lu.%06lu: "`, and the event's name — written by hand, since one
/// such header per line is the bulk of a small run's work through
/// `core::fmt`.
fn print_context(
    buf: &mut String,
    comm: &str,
    pid: u32,
    cpu: u32,
    secs: u64,
    usecs: u64,
    event: &str,
) {
    let mut n = itoa::Buffer::new();
    pad(buf, ' ', 16usize.saturating_sub(comm.chars().count()));
    buf.push_str(comm);
    buf.push('-');
    let p = n.format(pid);
    buf.push_str(p);
    pad(buf, ' ', 7usize.saturating_sub(p.len()));
    buf.push_str(" [");
    let c = n.format(cpu);
    pad(buf, '0', 3usize.saturating_sub(c.len()));
    buf.push_str(c);
    buf.push_str("] ..... ");
    let s = n.format(secs);
    pad(buf, ' ', 5usize.saturating_sub(s.len()));
    buf.push_str(s);
    buf.push('.');
    let us = n.format(usecs);
    pad(buf, '0', 6usize.saturating_sub(us.len()));
    buf.push_str(us);
    buf.push_str(": ");
    buf.push_str(event);
    buf.push_str(": ");
}

/// Appends `n` copies of `c`.
fn pad(buf: &mut String, c: char, n: usize) {
    buf.extend(std::iter::repeat_n(c, n));
}

/// Emits one trace line: `trace!(k, "event", "fmt", args...)`.
#[macro_export]
macro_rules! trace {
    ($k:expr, $event:literal, $($arg:tt)*) => {{
        if let Some(buf) = $k.trace_begin($event) {
            use std::fmt::Write as _;
            let _ = write!(buf, $($arg)*);
            $k.trace_end();
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::print_context;

    /// The hand-written header is the kernel's printf format, also where a
    /// field overflows its width.
    #[test]
    fn print_context_matches_the_printf_format() {
        let cases = [
            ("kswapd0", 45, 3, 12, 7, "mm_vmscan_kswapd_wake"),
            ("fio", 1234567, 0, 0, 0, "e"),
            (
                "a-very-long-command-name",
                123456789,
                1234,
                123456,
                999999,
                "x",
            ),
            ("é-comm", 1, 17, 99999, 10, "y"),
            ("", 0, 999, 100000, 5, "z"),
        ];
        for (comm, pid, cpu, secs, usecs, event) in cases {
            let mut got = String::new();
            print_context(&mut got, comm, pid, cpu, secs, usecs, event);
            let want =
                format!("{comm:>16}-{pid:<7} [{cpu:03}] ..... {secs:>5}.{usecs:06}: {event}: ");
            assert_eq!(got, want);
        }
    }
}
