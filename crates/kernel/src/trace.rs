//! Tracepoints, printed exactly as the kernel's ftrace text output prints them
//! (`trace_print_context` + the event's `TP_printk`), into a buffer the runner
//! drains into the run record's `trace.txt.gz`.

use std::fmt::Write as _;

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
        // trace_print_context(): "%16s-%-7d [%03d] " then irq flags, then "%5lu.%06lu: "
        let _ = write!(
            buf,
            "{:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: {}: ",
            task.comm, task.pid, task.cpu, secs, usecs, event
        );
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
