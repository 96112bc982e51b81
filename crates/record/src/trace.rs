//! The ftrace text-line parser.
//!
//! Simulated, real and imported runs all store tracepoint lines in the kernel's
//! own text format, so one parser serves every origin. It accepts what
//! `/sys/kernel/tracing/trace` and `trace_pipe` print (with or without the
//! irq-info flags column, with or without the `(tgid)` column, `<...>` for
//! unknown comms) and what `trace-cmd report` prints. It is on the hot path of
//! imports and reports (millions of lines), so it is zero-copy (spans into the
//! line), uses no regex, and finds separators with `memchr`.
//!
//! ```text
//!            <...>-1234  [001] .....  12.345678: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK
//!  kworker/u8:2-my-1234  (  1200) [001] d..1.  12.345678: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000
//!          kswapd0-51    [000]  1234.567890: mm_vmscan_throttled: nid=0 ...        (trace-cmd report, no flags)
//! ```

use std::fmt;

/// Why a line is not an event. Everything but [`ParseError::Garbled`] is a
/// normal non-event line that readers skip silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// An empty or whitespace-only line.
    Blank,
    /// A `#` comment (the `trace` file's header, `##### CPU 1 buffer started ####`).
    Comment,
    /// A `trace-cmd report` header line (`cpus=4`, `version = 6`, `CPU 0 is empty`, ...).
    Header,
    /// A lost-events marker: `CPU:N [LOST M EVENTS]`.
    LostEvents {
        /// The CPU whose buffer overflowed.
        cpu: u32,
        /// How many events were lost.
        lost: u64,
    },
    /// A line that should be an event but is not well formed; the text says
    /// what part was expected.
    Garbled(&'static str),
}

impl ParseError {
    /// Whether this is a normal non-event line (not an error).
    pub fn is_skippable(&self) -> bool {
        !matches!(self, ParseError::Garbled(_))
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Blank => f.write_str("blank line"),
            ParseError::Comment => f.write_str("comment line"),
            ParseError::Header => f.write_str("trace-cmd header line"),
            ParseError::LostEvents { cpu, lost } => write!(f, "CPU:{cpu} lost {lost} events"),
            ParseError::Garbled(what) => write!(
                f,
                "not an ftrace event line: expected {what} \
                 (accepted: `COMM-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS`, FLAGS optional)"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Byte spans of a parsed line (shared by [`TraceLine`] and [`OwnedTraceLine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spans {
    comm: (u32, u32),
    flags: (u32, u32),
    ts: (u32, u32),
    event: (u32, u32),
    fields: (u32, u32),
    pid: u32,
    tgid: Option<u32>,
    cpu: u32,
}

/// One parsed event line, borrowing the text it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceLine<'a> {
    line: &'a str,
    s: Spans,
}

#[inline]
fn span(line: &str, (a, b): (u32, u32)) -> &str {
    line.get(a as usize..b as usize).unwrap_or("")
}

impl<'a> TraceLine<'a> {
    pub(crate) fn spans(&self) -> Spans {
        self.s
    }
    /// Rebuilds a line from spans found by parsing the same text.
    pub(crate) fn from_spans(line: &'a str, s: Spans) -> Self {
        TraceLine { line, s }
    }
    /// The whole line as parsed (without the newline).
    pub fn raw(&self) -> &'a str {
        self.line
    }
    /// The task name (`kswapd0`, `<...>` when the kernel did not know it). May
    /// contain spaces and dashes.
    pub fn comm(&self) -> &'a str {
        span(self.line, self.s.comm)
    }
    /// The task's pid (the number after the last dash before `[cpu]`).
    pub fn pid(&self) -> u32 {
        self.s.pid
    }
    /// The thread-group id, when the `(tgid)` column was printed and known.
    pub fn tgid(&self) -> Option<u32> {
        self.s.tgid
    }
    /// The CPU the event was recorded on.
    pub fn cpu(&self) -> u32 {
        self.s.cpu
    }
    /// The irq-info/latency flags column (`.....`, `d..2`), if printed.
    pub fn flags(&self) -> Option<&'a str> {
        if self.s.flags.0 == self.s.flags.1 {
            None
        } else {
            Some(span(self.line, self.s.flags))
        }
    }
    /// The timestamp as printed (`12.345678`).
    pub fn timestamp_str(&self) -> &'a str {
        span(self.line, self.s.ts)
    }
    /// The timestamp in nanoseconds (exact for the `SECS.FRACTION` format; a
    /// counter clock's plain integer is returned as is).
    pub fn timestamp_ns(&self) -> u64 {
        parse_ts_ns(self.timestamp_str().as_bytes())
    }
    /// The timestamp in seconds.
    pub fn timestamp_s(&self) -> f64 {
        let t = self.timestamp_str();
        match t.find('.') {
            Some(_) => self.timestamp_ns() as f64 / 1e9,
            None => t.parse::<f64>().unwrap_or(0.0),
        }
    }
    /// The event name (`mm_vmscan_throttled`).
    pub fn event(&self) -> &'a str {
        span(self.line, self.s.event)
    }
    /// The text after `event: ` (`nid=0 usec_timeout=100000 ...`).
    pub fn fields(&self) -> &'a str {
        span(self.line, self.s.fields)
    }
    /// The value of `name=value` in the fields (up to the next space).
    #[inline]
    pub fn field(&self, name: &str) -> Option<&'a str> {
        find_field(self.fields(), name)
    }
    /// A field as an unsigned decimal integer.
    #[inline]
    pub fn field_u64(&self, name: &str) -> Option<u64> {
        self.field(name).and_then(parse_u64)
    }
    /// A field as a signed decimal integer.
    pub fn field_i64(&self, name: &str) -> Option<i64> {
        let v = self.field(name)?;
        match v.strip_prefix('-') {
            Some(rest) => parse_u64(rest)
                .and_then(|u| i64::try_from(u).ok())
                .map(|u| -u),
            None => parse_u64(v).and_then(|u| i64::try_from(u).ok()),
        }
    }
    /// The delay of a throttling event: `usect_delayed` (the spelling of
    /// `mm_vmscan_throttled`, a typo kept by the kernel) or `usec_delayed`
    /// (`writeback_congestion_wait`, `writeback_wait_iff_congested`).
    pub fn usec_delayed(&self) -> Option<u64> {
        self.field_u64("usect_delayed")
            .or_else(|| self.field_u64("usec_delayed"))
    }
    /// Whether the task is kswapd (comm `kswapd` followed by digits only, the
    /// rule of mmtests' ftrace reports). Every other task is "direct".
    pub fn is_kswapd(&self) -> bool {
        is_kswapd_comm(self.comm())
    }
    /// An owned copy (allocates).
    pub fn to_owned_line(&self) -> OwnedTraceLine {
        OwnedTraceLine {
            line: self.line.to_string(),
            s: self.s,
        }
    }
}

/// A parsed line that owns its text (for iterators and collections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedTraceLine {
    line: String,
    s: Spans,
}

impl OwnedTraceLine {
    /// A borrowed view with all accessors.
    pub fn get(&self) -> TraceLine<'_> {
        TraceLine {
            line: &self.line,
            s: self.s,
        }
    }
}

/// Whether a comm names a kswapd thread (`^kswapd[0-9]*$`).
pub fn is_kswapd_comm(comm: &str) -> bool {
    comm.strip_prefix("kswapd")
        .is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit()))
}

#[inline]
fn find_field<'a>(fields: &'a str, name: &str) -> Option<&'a str> {
    let f = fields.as_bytes();
    let n = name.as_bytes();
    let mut i = 0;
    while i < f.len() {
        if f[i] == b' ' {
            i += 1;
            continue;
        }
        let end = memchr::memchr(b' ', &f[i..]).map_or(f.len(), |p| i + p);
        let tok = &f[i..end];
        if tok.len() > n.len() && tok[n.len()] == b'=' && &tok[..n.len()] == n {
            return fields.get(i + n.len() + 1..end);
        }
        i = end + 1;
    }
    None
}

#[inline]
fn parse_u64(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

#[inline]
fn parse_ts_ns(b: &[u8]) -> u64 {
    let mut secs: u64 = 0;
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        secs = secs.saturating_mul(10).saturating_add((b[i] - b'0') as u64);
        i += 1;
    }
    if i == b.len() {
        return secs;
    }
    let mut frac: u64 = 0;
    let mut digits = 0;
    i += 1; // '.'
    while i < b.len() && b[i].is_ascii_digit() && digits < 9 {
        frac = frac * 10 + (b[i] - b'0') as u64;
        digits += 1;
        i += 1;
    }
    while digits < 9 {
        frac *= 10;
        digits += 1;
    }
    // Saturating: an absurd timestamp (over 584 years) pins at the maximum
    // instead of wrapping to a small one that would reorder the trace.
    secs.saturating_mul(1_000_000_000).saturating_add(frac)
}

#[inline]
fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

/// Whether `tok` (without its final `:`) is a timestamp: digits, optionally one
/// `.` followed by digits.
#[inline]
fn is_timestamp(tok: &[u8]) -> bool {
    if tok.is_empty() || !tok[0].is_ascii_digit() {
        return false;
    }
    let mut dot = false;
    for &c in tok {
        if c == b'.' {
            if dot {
                return false;
            }
            dot = true;
        } else if !c.is_ascii_digit() {
            return false;
        }
    }
    true
}

fn parse_lost(b: &[u8]) -> Option<ParseError> {
    // "CPU:N [LOST M EVENTS]"
    let rest = b.strip_prefix(b"CPU:")?;
    let mut i = 0;
    let mut cpu: u32 = 0;
    while i < rest.len() && rest[i].is_ascii_digit() {
        cpu = cpu
            .saturating_mul(10)
            .saturating_add((rest[i] - b'0') as u32);
        i += 1;
    }
    let lb = memchr::memchr(b'[', rest)?;
    let mut j = lb + 1;
    // "[LOST 123 EVENTS]" or "[123 EVENTS DROPPED]"
    while j < rest.len() && !rest[j].is_ascii_digit() {
        j += 1;
    }
    let mut lost: u64 = 0;
    while j < rest.len() && rest[j].is_ascii_digit() {
        lost = lost
            .saturating_mul(10)
            .saturating_add((rest[j] - b'0') as u64);
        j += 1;
    }
    Some(ParseError::LostEvents { cpu, lost })
}

/// Parses one line of ftrace text (`trace`, `trace_pipe`, `trace-cmd report`).
///
/// A trailing `\n`/`\r` is ignored. Blank lines, `#` comments, trace-cmd header
/// lines and lost-event markers return the corresponding skippable
/// [`ParseError`]; a line that is none of those and not a well-formed event
/// returns [`ParseError::Garbled`].
pub fn parse_trace_line(line: &str) -> Result<TraceLine<'_>, ParseError> {
    let mut b = line.as_bytes();
    while let [rest @ .., b'\n' | b'\r'] = b {
        b = rest;
    }
    let line = &line[..b.len()];
    if b.len() > u32::MAX as usize {
        return Err(ParseError::Garbled("a line shorter than 4 GiB"));
    }
    let first = skip_spaces(b, 0);
    if first == b.len() {
        return Err(ParseError::Blank);
    }
    match b[first] {
        b'#' => return Err(ParseError::Comment),
        b'C' if first == 0 => {
            if let Some(l) = parse_lost(b) {
                return Err(l);
            }
            if b.starts_with(b"CPU ") {
                return Err(ParseError::Header);
            }
        }
        b'c' if first == 0 && b.starts_with(b"cpus=") => return Err(ParseError::Header),
        b'v' if first == 0 && b.starts_with(b"version =") => return Err(ParseError::Header),
        _ => {}
    }

    // Find `[CPU]`: a `[` preceded by a space and followed by digits and `]`.
    // Normally the first one; a comm may itself contain `[N]`, so on failure
    // the next candidate is tried.
    let mut first_err = None;
    for p in memchr::memchr_iter(b'[', b) {
        if p == 0 || b[p - 1] != b' ' {
            continue;
        }
        let mut q = p + 1;
        let mut v: u32 = 0;
        while q < b.len() && b[q].is_ascii_digit() {
            v = v.saturating_mul(10).saturating_add((b[q] - b'0') as u32);
            q += 1;
        }
        if q > p + 1 && q < b.len() && b[q] == b']' {
            match parse_after_cpu(line, p, q, v) {
                Ok(t) => return Ok(t),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
    }
    Err(first_err.unwrap_or(ParseError::Garbled("a `[CPU]` column")))
}

/// Parses the rest of an event line around the `[CPU]` column at
/// `cpu_open..=cpu_close` (`line` already trimmed of its newline).
#[inline]
fn parse_after_cpu(
    line: &str,
    cpu_open: usize,
    cpu_close: usize,
    cpu: u32,
) -> Result<TraceLine<'_>, ParseError> {
    let b = line.as_bytes();
    // Task: `COMM-PID`, optionally followed by `(TGID)`.
    let mut head_end = cpu_open;
    while head_end > 0 && b[head_end - 1] == b' ' {
        head_end -= 1;
    }
    let mut tgid = None;
    if head_end > 0 && b[head_end - 1] == b')' {
        let Some(open) = memchr::memrchr(b'(', &b[..head_end]) else {
            return Err(ParseError::Garbled("`(TGID)` with its opening parenthesis"));
        };
        let inner = line[open + 1..head_end - 1].trim();
        tgid = parse_u64(inner).and_then(|v| u32::try_from(v).ok());
        head_end = open;
        while head_end > 0 && b[head_end - 1] == b' ' {
            head_end -= 1;
        }
    }
    let Some(dash) = memchr::memrchr(b'-', &b[..head_end]) else {
        return Err(ParseError::Garbled("`COMM-PID` before `[CPU]`"));
    };
    let Some(pid) = parse_u64(&line[dash + 1..head_end]).and_then(|v| u32::try_from(v).ok()) else {
        return Err(ParseError::Garbled(
            "a numeric PID after the last `-` of `COMM-PID`",
        ));
    };
    let comm_start = skip_spaces(b, 0);
    if comm_start > dash {
        return Err(ParseError::Garbled("`COMM-PID` before `[CPU]`"));
    }

    // After `]`: optional flags, then `TIMESTAMP:`.
    let mut i = skip_spaces(b, cpu_close + 1);
    let tok_end = |i: usize| memchr::memchr2(b' ', b'\t', &b[i..]).map_or(b.len(), |p| i + p);
    let mut e = tok_end(i);
    let mut flags = (i as u32, i as u32);
    let is_ts = |s: usize, e: usize| e > s + 1 && b[e - 1] == b':' && is_timestamp(&b[s..e - 1]);
    if !is_ts(i, e) {
        if i == e {
            return Err(ParseError::Garbled("`TIMESTAMP:` after `[CPU]`"));
        }
        flags = (i as u32, e as u32);
        i = skip_spaces(b, e);
        e = tok_end(i);
        if !is_ts(i, e) {
            return Err(ParseError::Garbled(
                "`TIMESTAMP:` (seconds.micros) after the flags",
            ));
        }
    }
    let ts = (i as u32, (e - 1) as u32);

    // `EVENT: FIELDS`
    let i = skip_spaces(b, e);
    let Some(colon) = memchr::memchr(b':', &b[i..]).map(|p| i + p) else {
        return Err(ParseError::Garbled("`EVENT: FIELDS` after the timestamp"));
    };
    if colon == i || memchr::memchr(b' ', &b[i..colon]).is_some() {
        return Err(ParseError::Garbled("an event name followed by `:`"));
    }
    let mut fs = colon + 1;
    if fs < b.len() && b[fs] == b' ' {
        fs += 1;
    }
    Ok(TraceLine {
        line,
        s: Spans {
            comm: (comm_start as u32, dash as u32),
            flags,
            ts,
            event: (i as u32, colon as u32),
            fields: (fs as u32, b.len() as u32),
            pid,
            tgid,
            cpu,
        },
    })
}

/// The subsystem of well-known reclaim-related events, for `subsystem:event`
/// names in `capture.events`.
pub fn event_subsystem(event: &str) -> Option<&'static str> {
    if event.starts_with("mm_vmscan_") || event.starts_with("mm_shrink_slab") {
        Some("vmscan")
    } else if event.starts_with("writeback_") || event == "balance_dirty_pages" {
        Some("writeback")
    } else if event.starts_with("mm_compaction_") {
        Some("compaction")
    } else if event.starts_with("mm_page_alloc") || event.starts_with("mm_page_free") {
        Some("kmem")
    } else if event.starts_with("psi_") {
        Some("psi")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_format_with_flags() {
        let l = parse_trace_line("           <...>-1234  [001] .....  12.345678: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK\n").unwrap();
        assert_eq!(l.comm(), "<...>");
        assert_eq!(l.pid(), 1234);
        assert_eq!(l.cpu(), 1);
        assert_eq!(l.flags(), Some("....."));
        assert_eq!(l.timestamp_str(), "12.345678");
        assert_eq!(l.timestamp_ns(), 12_345_678_000);
        assert!((l.timestamp_s() - 12.345678).abs() < 1e-9);
        assert_eq!(l.event(), "mm_vmscan_throttled");
        assert_eq!(l.field("nid"), Some("0"));
        assert_eq!(l.field_u64("usec_timeout"), Some(100000));
        assert_eq!(l.usec_delayed(), Some(4000));
        assert_eq!(l.field("reason"), Some("VMSCAN_THROTTLE_WRITEBACK"));
        assert_eq!(l.field("usec"), None);
        assert_eq!(l.field("timeout"), None);
        assert!(!l.is_kswapd());
    }

    #[test]
    fn kswapd_usec_delayed() {
        let l = parse_trace_line("         kswapd0-51    [000] .....  12.400000: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000").unwrap();
        assert_eq!(l.comm(), "kswapd0");
        assert_eq!(l.pid(), 51);
        assert!(l.is_kswapd());
        assert_eq!(l.usec_delayed(), Some(104000));
        assert_eq!(l.field_i64("usec_timeout"), Some(100000));
    }

    #[test]
    fn comm_with_spaces_and_dashes() {
        let l = parse_trace_line(" Web Content-x-9-4242 [003] d..1. 100.000001: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE").unwrap();
        assert_eq!(l.comm(), "Web Content-x-9");
        assert_eq!(l.pid(), 4242);
        assert_eq!(l.cpu(), 3);
        assert_eq!(l.flags(), Some("d..1."));
        assert_eq!(l.field("gfp_flags"), Some("GFP_HIGHUSER_MOVABLE"));
        let l =
            parse_trace_line("kworker/u8:2-my [x]-77 [000] .... 1.5: mm_vmscan_throttled: nid=0")
                .unwrap();
        assert_eq!(l.comm(), "kworker/u8:2-my [x]");
        assert_eq!(l.pid(), 77);
        let l = parse_trace_line("  foo [1] bar-12 [003] .... 2.5: ev: x=1").unwrap();
        assert_eq!((l.comm(), l.pid(), l.cpu()), ("foo [1] bar", 12, 3));
    }

    #[test]
    fn tgid_column_and_old_flags() {
        let l = parse_trace_line("            bash-1977  ( 1977) [002] d..2   123.456789: mm_vmscan_throttled: nid=0 usec_timeout=20000 usect_delayed=20000 reason=VMSCAN_THROTTLE_ISOLATED").unwrap();
        assert_eq!(l.comm(), "bash");
        assert_eq!(l.tgid(), Some(1977));
        assert_eq!(l.flags(), Some("d..2"));
        let l = parse_trace_line("  bash-1977  (-----) [002] ....   1.0: e: ").unwrap();
        assert_eq!(l.tgid(), None);
        assert_eq!(l.fields(), "");
    }

    #[test]
    fn trace_cmd_format() {
        let l = parse_trace_line("   kswapd0-51    [000]  1234.567890: mm_vmscan_throttled: nid=0 usec_timeout=500000 usect_delayed=500000 reason=VMSCAN_THROTTLE_NOPROGRESS").unwrap();
        assert_eq!(l.flags(), None);
        assert_eq!(l.timestamp_str(), "1234.567890");
        assert_eq!(l.field("reason"), Some("VMSCAN_THROTTLE_NOPROGRESS"));
        assert_eq!(parse_trace_line("cpus=4"), Err(ParseError::Header));
        assert_eq!(parse_trace_line("version = 6"), Err(ParseError::Header));
        assert_eq!(parse_trace_line("CPU 1 is empty"), Err(ParseError::Header));
        assert_eq!(
            parse_trace_line("CPU:1 [LOST 1234 EVENTS]"),
            Err(ParseError::LostEvents { cpu: 1, lost: 1234 })
        );
    }

    #[test]
    fn counter_clock_and_crlf() {
        let l = parse_trace_line("  a-1 [0] ... 987654321: ev: x=1\r\n").unwrap();
        assert_eq!(l.timestamp_ns(), 987654321);
        assert_eq!(l.field_u64("x"), Some(1));
    }

    #[test]
    fn skippable_and_garbled() {
        assert_eq!(parse_trace_line(""), Err(ParseError::Blank));
        assert_eq!(parse_trace_line("   \n"), Err(ParseError::Blank));
        assert_eq!(parse_trace_line("# tracer: nop"), Err(ParseError::Comment));
        assert_eq!(
            parse_trace_line("##### CPU 1 buffer started ####"),
            Err(ParseError::Comment)
        );
        for bad in [
            "hello world",
            "  a-1 [000] .... notatime: ev: x",
            "  a-b [000] .... 1.0: ev: x",
            "  a1 [000] .... 1.0: ev: x",
            "  a-1 [000] .... 1.0: no colon here",
            "  a-1 [000] .... 1.0:",
            "  a-1 [000]",
            "  a-12 [000] .... 1.0: do_sys_open <-sys_open",
            "  a-12 [000] .... 1.0",
        ] {
            match parse_trace_line(bad) {
                Err(ParseError::Garbled(_)) => {}
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
        let msg = parse_trace_line("hello").unwrap_err().to_string();
        assert!(msg.contains("COMM-PID [CPU]"), "{msg}");
    }

    #[test]
    fn owned_line() {
        let text = String::from("  a-1 [000] .... 1.0: ev: x=5");
        let o = parse_trace_line(&text).unwrap().to_owned_line();
        drop(text);
        assert_eq!(o.get().field_u64("x"), Some(5));
        assert_eq!(o.get().event(), "ev");
    }

    #[test]
    fn never_panics_on_mangled_lines() {
        let lines = [
            "           <...>-1234  [001] .....  12.345678: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK",
            "            bash-1977  ( 1977) [002] d..2   123.456789: mm_vmscan_throttled: nid=0",
            " Web Content-x-9-4242 [003] d..1. 100.000001: e: a=1 b=2",
            "CPU:1 [LOST 1234 EVENTS]",
            "héllo wörld-12 [000] ... 1.0: ev: ü=ü",
        ];
        for l in lines {
            for end in 0..=l.len() {
                if let Some(p) = l.get(..end) {
                    let _ = parse_trace_line(p)
                        .map(|t| (t.field("a"), t.usec_delayed(), t.timestamp_s()));
                }
                if let (Some(a), Some(b)) = (l.get(..end), l.get(end..)) {
                    for ins in ["[", "]", "-", ":", " ", "(", ")", "[9]", "\r"] {
                        let m = format!("{a}{ins}{b}");
                        let _ = parse_trace_line(&m)
                            .map(|t| (t.comm(), t.field("nid"), t.timestamp_ns()));
                    }
                }
            }
        }
    }

    #[test]
    fn kswapd_rule() {
        assert!(is_kswapd_comm("kswapd"));
        assert!(is_kswapd_comm("kswapd12"));
        assert!(!is_kswapd_comm("kswapd0:0"));
        assert!(!is_kswapd_comm("xkswapd0"));
    }
}
