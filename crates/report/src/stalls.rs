//! Reclaim stall histograms from tracepoint lines, in one streaming pass.
//!
//! The 2021 "congestion_wait" letters showed stalls as `sort | uniq -c | sort -n`
//! histograms of `mm_vmscan_throttled` (and of the older
//! `writeback_congestion_wait` / `writeback_wait_iff_congested`) lines, cut from
//! `usec_timeout=` onward and split kswapd vs everyone else
//! (`shared/reference/mmtests-method.md` §4). This module counts
//! `(event, who, reason, usec_timeout, usec_delayed)` tuples in a hash map —
//! memory is bounded by the number of distinct tuples, not by the trace length —
//! and renders them in that shape, plus a per-reason summary (count, share not
//! delayed, share that ran to the timeout, mean and p99 delay) and per-reason
//! delay distributions for plots.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use serde::Serialize;

/// The stall tracepoints reclaimlab understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StallEvent {
    /// `vmscan:mm_vmscan_throttled` (5.16+): nid, usec_timeout, usect_delayed, reason.
    Throttled,
    /// `writeback:writeback_congestion_wait` (≤5.15): usec_timeout, usec_delayed.
    CongestionWait,
    /// `writeback:writeback_wait_iff_congested` (≤5.15): usec_timeout, usec_delayed.
    WaitIffCongested,
}

impl StallEvent {
    /// All events, in report order.
    pub const ALL: [StallEvent; 3] = [
        StallEvent::Throttled,
        StallEvent::CongestionWait,
        StallEvent::WaitIffCongested,
    ];

    /// The tracepoint name as ftrace prints it.
    pub fn name(self) -> &'static str {
        match self {
            StallEvent::Throttled => "mm_vmscan_throttled",
            StallEvent::CongestionWait => "writeback_congestion_wait",
            StallEvent::WaitIffCongested => "writeback_wait_iff_congested",
        }
    }

    /// The event for a tracepoint name, if it is a stall event.
    pub fn from_name(name: &str) -> Option<StallEvent> {
        match name {
            "mm_vmscan_throttled" => Some(StallEvent::Throttled),
            "writeback_congestion_wait" => Some(StallEvent::CongestionWait),
            "writeback_wait_iff_congested" => Some(StallEvent::WaitIffCongested),
            _ => None,
        }
    }

    /// The name of the delay field (the kernel's typo `usect_delayed` for
    /// `mm_vmscan_throttled`).
    pub fn delayed_field(self) -> &'static str {
        match self {
            StallEvent::Throttled => "usect_delayed",
            _ => "usec_delayed",
        }
    }
}

/// `kswapd` if the task's comm matches `^kswapd[0-9]*$`, else `direct`.
pub fn is_kswapd(comm: &str) -> bool {
    comm.strip_prefix("kswapd")
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
}

/// A small multiply-rotate hasher (FxHash-style) for the tuple keys: the
/// counts map is hit once per stall line, and SipHash would dominate.
#[derive(Default, Clone, Copy)]
struct TupleHasher(u64);

impl Hasher for TupleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    event: StallEvent,
    kswapd: bool,
    reason: u16,
    timeout: u64,
    delayed: u64,
}

/// Streaming counter of stall tuples (bounded memory).
#[derive(Debug, Default)]
pub struct StallAggregator {
    counts: HashMap<Key, u64, BuildHasherDefault<TupleHasher>>,
    /// Distinct reasons (a handful): a linear scan beats hashing the string.
    reasons: Vec<String>,
}

/// Why a stall line's fields could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError(pub String);

impl StallAggregator {
    /// A new, empty aggregator.
    pub fn new() -> Self {
        Self::default()
    }

    fn reason_id(&mut self, reason: &str) -> u16 {
        if let Some(id) = self.reasons.iter().position(|r| r == reason) {
            return id as u16;
        }
        if self.reasons.len() >= 1024 {
            // Not a kernel trace; fold the rest into the last reason seen.
            return (self.reasons.len() - 1) as u16;
        }
        self.reasons.push(reason.to_string());
        (self.reasons.len() - 1) as u16
    }

    /// Counts one stall.
    pub fn observe(
        &mut self,
        event: StallEvent,
        comm: &str,
        reason: &str,
        usec_timeout: u64,
        usec_delayed: u64,
    ) {
        let reason = self.reason_id(reason);
        let key = Key {
            event,
            kswapd: is_kswapd(comm),
            reason,
            timeout: usec_timeout,
            delayed: usec_delayed,
        };
        *self.counts.entry(key).or_insert(0) += 1;
    }

    /// Counts one trace line given its event name, comm and a field accessor.
    /// Returns `Ok(false)` for events that are not stall events, and an error
    /// naming the field when a stall event lacks a usable field.
    pub fn observe_fields<'a>(
        &mut self,
        event_name: &str,
        comm: &str,
        field: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<bool, FieldError> {
        let Some(event) = StallEvent::from_name(event_name) else {
            return Ok(false);
        };
        let num = |name: &str| -> Result<u64, FieldError> {
            let v = field(name)
                .ok_or_else(|| FieldError(format!("{event_name}: no field `{name}`")))?;
            v.parse::<u64>().map_err(|_| {
                FieldError(format!(
                    "{event_name}: field `{name}={v}` is not a non-negative integer"
                ))
            })
        };
        let timeout = num("usec_timeout")?;
        let delayed = match event {
            // Accept the spelling without the typo too (importers, patched kernels).
            StallEvent::Throttled => match field("usect_delayed") {
                Some(v) => v.parse::<u64>().map_err(|_| {
                    FieldError(format!(
                        "{event_name}: field `usect_delayed={v}` is not a non-negative integer"
                    ))
                })?,
                None => num("usec_delayed")?,
            },
            _ => num(event.delayed_field())?,
        };
        let reason = match event {
            StallEvent::Throttled => field("reason").unwrap_or(""),
            _ => "",
        };
        self.observe(event, comm, reason, timeout, delayed);
        Ok(true)
    }

    /// Number of stalls counted so far.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Sorted, deterministic result.
    pub fn finish(self) -> Stalls {
        let mut counts: Vec<StallCount> = self
            .counts
            .iter()
            .map(|(k, &count)| StallCount {
                event: k.event.name().to_string(),
                who: who_name(k.kswapd).to_string(),
                reason: self
                    .reasons
                    .get(k.reason as usize)
                    .cloned()
                    .unwrap_or_default(),
                usec_timeout: k.timeout,
                usec_delayed: k.delayed,
                count,
            })
            .collect();
        counts.sort_by(|a, b| {
            (
                event_rank(&a.event),
                who_rank(&a.who),
                &a.reason,
                a.usec_timeout,
                a.usec_delayed,
            )
                .cmp(&(
                    event_rank(&b.event),
                    who_rank(&b.who),
                    &b.reason,
                    b.usec_timeout,
                    b.usec_delayed,
                ))
        });
        let summary = summarise(&counts);
        Stalls { counts, summary }
    }
}

fn who_name(kswapd: bool) -> &'static str {
    if kswapd {
        "kswapd"
    } else {
        "direct"
    }
}

fn who_rank(who: &str) -> u8 {
    u8::from(who != "kswapd")
}

fn event_rank(event: &str) -> usize {
    StallEvent::ALL
        .iter()
        .position(|e| e.name() == event)
        .unwrap_or(StallEvent::ALL.len())
}

/// One histogram bucket: how many stalls had exactly these values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StallCount {
    /// Tracepoint name.
    pub event: String,
    /// `kswapd` or `direct`.
    pub who: String,
    /// Throttling reason (`VMSCAN_THROTTLE_*`), empty for events without one.
    pub reason: String,
    /// Timeout asked for, µs.
    pub usec_timeout: u64,
    /// Time actually slept, µs.
    pub usec_delayed: u64,
    /// Number of stalls.
    pub count: u64,
}

/// Per (event, who, reason) summary of stalls.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StallSummary {
    /// Tracepoint name.
    pub event: String,
    /// `kswapd` or `direct`.
    pub who: String,
    /// Throttling reason, empty for events without one.
    pub reason: String,
    /// Number of stalls.
    pub count: u64,
    /// Share of stalls with `usec_delayed` = 0, %.
    pub not_delayed_pct: f64,
    /// Share of stalls that slept at least their timeout, %.
    pub hit_timeout_pct: f64,
    /// Mean delay, µs.
    pub mean_delay_us: f64,
    /// 99th percentile delay (nearest-rank floor, ascending), µs.
    pub p99_delay_us: u64,
    /// Largest delay, µs.
    pub max_delay_us: u64,
    /// Sum of all delays, s.
    pub total_delay_s: f64,
}

/// All stall data of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stalls {
    /// Histogram buckets, sorted by event, who (kswapd first), reason,
    /// timeout, delay.
    pub counts: Vec<StallCount>,
    /// Per (event, who, reason) summaries in the same order.
    pub summary: Vec<StallSummary>,
}

type GroupKey = (String, String, String);

fn summarise(counts: &[StallCount]) -> Vec<StallSummary> {
    let mut groups: Vec<(GroupKey, Vec<&StallCount>)> = Vec::new();
    for c in counts {
        let key = (c.event.clone(), c.who.clone(), c.reason.clone());
        match groups.last_mut() {
            Some((k, v)) if *k == key => v.push(c),
            _ => groups.push((key, vec![c])),
        }
    }
    groups
        .into_iter()
        .map(|((event, who, reason), rows)| {
            let count: u64 = rows.iter().map(|r| r.count).sum();
            let not_delayed: u64 = rows
                .iter()
                .filter(|r| r.usec_delayed == 0)
                .map(|r| r.count)
                .sum();
            let hit: u64 = rows
                .iter()
                .filter(|r| r.usec_delayed >= r.usec_timeout)
                .map(|r| r.count)
                .sum();
            let total_us: u128 = rows
                .iter()
                .map(|r| r.count as u128 * r.usec_delayed as u128)
                .sum();
            let mut dist: BTreeMap<u64, u64> = BTreeMap::new();
            for r in &rows {
                *dist.entry(r.usec_delayed).or_insert(0) += r.count;
            }
            let pct = |x: u64| {
                if count == 0 {
                    0.0
                } else {
                    100.0 * x as f64 / count as f64
                }
            };
            StallSummary {
                event,
                who,
                reason,
                count,
                not_delayed_pct: pct(not_delayed),
                hit_timeout_pct: pct(hit),
                mean_delay_us: if count == 0 {
                    0.0
                } else {
                    total_us as f64 / count as f64
                },
                p99_delay_us: percentile_counts(&dist, 99.0),
                max_delay_us: dist.keys().next_back().copied().unwrap_or(0),
                total_delay_s: total_us as f64 / 1e6,
            }
        })
        .collect()
}

/// Nearest-rank floor percentile over a value → count distribution
/// (defined once, in [`crate::stats`]).
pub use crate::stats::percentile_counts;

/// The delay distribution (µs → count) of one (event, reason), optionally
/// restricted to one `who`.
pub fn delay_distribution(
    counts: &[StallCount],
    event: &str,
    reason: &str,
    who: Option<&str>,
) -> BTreeMap<u64, u64> {
    let mut dist = BTreeMap::new();
    for c in counts
        .iter()
        .filter(|c| c.event == event && c.reason == reason && who.is_none_or(|w| c.who == w))
    {
        *dist.entry(c.usec_delayed).or_insert(0) += c.count;
    }
    dist
}

/// The line text from `usec_timeout=` onward, as the kernel prints it.
pub fn line_text(c: &StallCount) -> String {
    match StallEvent::from_name(&c.event) {
        Some(StallEvent::Throttled) => format!(
            "usec_timeout={} usect_delayed={} reason={}",
            c.usec_timeout, c.usec_delayed, c.reason
        ),
        _ => format!(
            "usec_timeout={} usec_delayed={}",
            c.usec_timeout, c.usec_delayed
        ),
    }
}

/// Renders the buckets of one event and who as `sort | uniq -c | sort -n`
/// would: `%7d text`, ascending by count, ties in byte order of the text.
pub fn uniq_c_histogram(counts: &[StallCount], event: &str, who: &str) -> String {
    let mut rows: Vec<(u64, String)> = counts
        .iter()
        .filter(|c| c.event == event && c.who == who)
        .map(|c| (c.count, line_text(c)))
        .collect();
    rows.sort();
    let mut out = String::new();
    for (n, text) in rows {
        // A reason of any length from a trace: cut as a text cell is.
        out.push_str(&format!(
            "{n:>7} {}\n",
            crate::format::text::fit_to(&text, 2 * crate::format::text::MAX_CELL)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kswapd_names() {
        assert!(is_kswapd("kswapd0"));
        assert!(is_kswapd("kswapd"));
        assert!(is_kswapd("kswapd12"));
        assert!(!is_kswapd("kswapd0:0"));
        assert!(!is_kswapd("<...>"));
        assert!(!is_kswapd("fio"));
    }

    fn sample() -> Stalls {
        let mut a = StallAggregator::new();
        let wb = "VMSCAN_THROTTLE_WRITEBACK";
        for _ in 0..17 {
            a.observe(StallEvent::Throttled, "kswapd0", wb, 100000, 4000);
        }
        a.observe(StallEvent::Throttled, "kswapd0", wb, 100000, 100000);
        a.observe(StallEvent::Throttled, "kswapd0", wb, 100000, 0);
        for _ in 0..3 {
            a.observe(
                StallEvent::Throttled,
                "fio",
                "VMSCAN_THROTTLE_NOPROGRESS",
                500000,
                500000,
            );
        }
        a.observe(StallEvent::CongestionWait, "memory-hog", "", 100000, 104000);
        a.finish()
    }

    #[test]
    fn uniq_c_shape() {
        let s = sample();
        let h = uniq_c_histogram(&s.counts, "mm_vmscan_throttled", "kswapd");
        assert_eq!(
            h,
            "      1 usec_timeout=100000 usect_delayed=0 reason=VMSCAN_THROTTLE_WRITEBACK\n\
             \x20     1 usec_timeout=100000 usect_delayed=100000 reason=VMSCAN_THROTTLE_WRITEBACK\n\
             \x20    17 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
        );
        let h = uniq_c_histogram(&s.counts, "writeback_congestion_wait", "direct");
        assert_eq!(h, "      1 usec_timeout=100000 usec_delayed=104000\n");
    }

    #[test]
    fn summary_by_hand() {
        let s = sample();
        let k = &s.summary[0];
        assert_eq!(
            (k.event.as_str(), k.who.as_str()),
            ("mm_vmscan_throttled", "kswapd")
        );
        assert_eq!(k.count, 19);
        assert!((k.not_delayed_pct - 100.0 / 19.0).abs() < 1e-12);
        assert!((k.hit_timeout_pct - 100.0 / 19.0).abs() < 1e-12);
        assert!((k.mean_delay_us - (17.0 * 4000.0 + 100000.0) / 19.0).abs() < 1e-9);
        // int(19·0.99) = 18 → the 18th smallest: 0, 4000×17 → 4000.
        assert_eq!(k.p99_delay_us, 4000);
        assert_eq!(k.max_delay_us, 100000);
        let d = &s.summary[1];
        assert_eq!(
            (d.who.as_str(), d.reason.as_str(), d.count),
            ("direct", "VMSCAN_THROTTLE_NOPROGRESS", 3)
        );
        assert_eq!(d.hit_timeout_pct, 100.0);
        assert_eq!(s.summary[2].event, "writeback_congestion_wait");
    }

    #[test]
    fn observe_fields_errors() {
        let mut a = StallAggregator::new();
        let f = |name: &str| match name {
            "usec_timeout" => Some("100000"),
            "usec_delayed" => Some("x"),
            _ => None,
        };
        assert!(a
            .observe_fields("writeback_congestion_wait", "fio", f)
            .is_err());
        assert_eq!(
            a.observe_fields("mm_vmscan_direct_reclaim_begin", "fio", f),
            Ok(false)
        );
        let g = |name: &str| match name {
            "usec_timeout" => Some("20000"),
            "usect_delayed" => Some("0"),
            "reason" => Some("VMSCAN_THROTTLE_ISOLATED"),
            _ => None,
        };
        assert_eq!(
            a.observe_fields("mm_vmscan_throttled", "kswapd1", g),
            Ok(true)
        );
        assert_eq!(a.total(), 1);
    }
}
