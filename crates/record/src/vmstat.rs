//! `/proc/vmstat` counters: the kernel's text format, and the sampled table of a
//! record (`vmstat.csv`).
//!
//! The real runner samples `/proc/vmstat`, the mmtests importer reads its
//! snapshots, and the simulator names its counters the same way, so the parser
//! and the table live here, next to the record they end up in. Counter order is
//! kept as the kernel printed it (it groups related counters), never sorted.

use std::path::Path;

use crate::error::{RecordError, Result};

/// Counters of one `/proc/vmstat` snapshot, in the kernel's order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VmstatSnapshot {
    /// `(name, value)` pairs in file order.
    pub counters: Vec<(String, u64)>,
}

impl VmstatSnapshot {
    /// The value of a counter.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
    /// Counter names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.counters.iter().map(|(n, _)| n.as_str())
    }
}

/// Whether a `/proc/vmstat` name is an event counter (only ever grows while
/// the machine is up) rather than a gauge: the `nr_*` items are gauges except
/// the node counters that count events, and `workingset_nodes` is a gauge.
pub fn is_event_counter(name: &str) -> bool {
    const NR_EVENTS: &[&str] = &[
        "nr_vmscan_write",
        "nr_vmscan_immediate_reclaim",
        "nr_dirtied",
        "nr_written",
        "nr_throttled_written",
        "nr_foll_pin_acquired",
        "nr_foll_pin_released",
    ];
    if name.starts_with("nr_") {
        return NR_EVENTS.contains(&name);
    }
    name != "workingset_nodes"
}

/// Largest counter value accepted (`i64::MAX`): deltas are signed, and no
/// kernel counter gets near it, so a larger value is corruption, refused
/// rather than wrapped into a negative figure.
pub const MAX_COUNTER: u64 = i64::MAX as u64;

/// Parses one `name value` line of `/proc/vmstat`. Blank lines give `Ok(None)`.
///
/// Values are non-negative integers; a negative value (some per-cpu-drifted
/// gauges, e.g. `nr_zone_write_pending` on some kernels, can read negative
/// briefly) is clamped to 0 rather than rejected, since it is what the kernel printed.
pub fn parse_vmstat_line(line: &str) -> std::result::Result<Option<(&str, u64)>, String> {
    let line = line.trim_end_matches(['\n', '\r']);
    let mut it = line.split_ascii_whitespace();
    let Some(name) = it.next() else {
        return Ok(None);
    };
    let Some(value) = it.next() else {
        return Err(format!(
            "expected `NAME VALUE` (a /proc/vmstat line), found only {name:?}"
        ));
    };
    if it.next().is_some() {
        return Err(format!(
            "expected `NAME VALUE` (a /proc/vmstat line), found more than two fields: {line:?}"
        ));
    }
    if !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err(format!(
            "counter name {name:?} is not a /proc/vmstat name (letters, digits, `_`)"
        ));
    }
    let v = if let Some(neg) = value.strip_prefix('-') {
        neg.parse::<u64>().map(|_| 0)
    } else {
        value.parse::<u64>()
    };
    match v {
        Ok(v) if v > MAX_COUNTER => Err(format!(
            "value {value} of {name:?} is above 2^63-1; no /proc/vmstat counter reaches it \
             (a corrupted file? re-capture it)"
        )),
        Ok(v) => Ok(Some((name, v))),
        Err(_) => Err(format!(
            "value {value:?} of {name:?} is not an integer (a /proc/vmstat line is `NAME INTEGER`)"
        )),
    }
}

/// Parses the whole text of `/proc/vmstat`. `path` and `first_line` (1-based
/// line number of `text`'s first line in that file) are used in error messages.
pub fn parse_proc_vmstat(text: &str, path: &Path, first_line: u64) -> Result<VmstatSnapshot> {
    let mut counters = Vec::with_capacity(256);
    for (i, line) in text.lines().enumerate() {
        match parse_vmstat_line(line) {
            Ok(Some((n, v))) => counters.push((n.to_string(), v)),
            Ok(None) => {}
            Err(m) => return Err(RecordError::line(path, first_line + i as u64, m)),
        }
    }
    Ok(VmstatSnapshot { counters })
}

/// One row of `vmstat.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct VmstatRow {
    /// Seconds from the record's time 0.
    pub t_s: f64,
    /// The step the sample belongs to.
    pub step: u32,
    /// Values, in the order of [`Vmstat::counters`].
    pub values: Vec<u64>,
}

/// The contents of `vmstat.csv`: counter names and rows in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vmstat {
    /// Counter names (the header after `t_s,step`).
    pub counters: Vec<String>,
    /// Samples in time order.
    pub rows: Vec<VmstatRow>,
}

impl Vmstat {
    /// Column index of a counter.
    pub fn index(&self, counter: &str) -> Option<usize> {
        self.counters.iter().position(|c| c == counter)
    }

    /// Whether the record has this counter.
    pub fn has(&self, counter: &str) -> bool {
        self.index(counter).is_some()
    }

    /// Last minus first row over the whole run; `None` if the counter is absent
    /// or there are fewer than two rows. Gauges (`nr_free_pages`) can go down,
    /// hence signed. Across a restart of the counters (a reboot between two
    /// rows, or a simulated record written before its counters carried on
    /// across steps: see [`Vmstat::restarts`]) an event counter is counted
    /// from 0 again; a lone event counter dipping (`nr_dirtied` goes down on
    /// a redirty) is an ordinary negative change.
    pub fn delta(&self, counter: &str) -> Option<i64> {
        let i = self.index(counter)?;
        if self.rows.len() < 2 {
            return None;
        }
        self.column_delta(i, &self.restart_rows())
    }

    fn column_delta(&self, i: usize, restart_rows: &[usize]) -> Option<i64> {
        let first = *self.rows.first()?.values.get(i)?;
        let last = *self.rows.last()?.values.get(i)?;
        if restart_rows.is_empty() || !is_event_counter(&self.counters[i]) {
            return Some(last as i64 - first as i64); // both <= MAX_COUNTER
        }
        let mut total: i64 = 0;
        let mut prev = first;
        for (r, row) in self.rows.iter().enumerate().skip(1) {
            let v = *row.values.get(i)?;
            total = total.saturating_add(if restart_rows.binary_search(&r).is_ok() {
                v as i64
            } else {
                v as i64 - prev as i64
            });
            prev = v;
        }
        Some(total)
    }

    /// Rows at which the event counters restarted: more than half of those
    /// that had counted anything went back.
    fn restart_rows(&self) -> Vec<usize> {
        let events: Vec<usize> = (0..self.counters.len())
            .filter(|&i| is_event_counter(&self.counters[i]))
            .collect();
        (1..self.rows.len())
            .filter(|&r| {
                let (a, b) = (&self.rows[r - 1].values, &self.rows[r].values);
                let (mut seen, mut back) = (0, 0);
                for &i in &events {
                    if let (Some(&x), Some(&y)) = (a.get(i), b.get(i)) {
                        if x > 0 {
                            seen += 1;
                            back += usize::from(y < x);
                        }
                    }
                }
                back * 2 > seen
            })
            .collect()
    }

    /// Where the event counters restarted: the time of each such row.
    /// Empty for a well-formed record of one boot.
    pub fn restarts(&self) -> Vec<f64> {
        self.restart_rows()
            .into_iter()
            .map(|r| self.rows[r].t_s)
            .collect()
    }

    /// Last minus first row of one step; `None` if the counter is absent or the
    /// step has fewer than two rows (an imported mmtests run has only whole-run
    /// snapshots: use [`Vmstat::delta`]).
    pub fn delta_in_step(&self, counter: &str, step: u32) -> Option<i64> {
        let i = self.index(counter)?;
        let mut rows = self.rows.iter().filter(|r| r.step == step);
        let first = rows.next()?;
        let last = rows.next_back()?;
        Some(*last.values.get(i)? as i64 - *first.values.get(i)? as i64)
    }

    /// Whole-run deltas of every counter, in header order (empty with fewer
    /// than two rows), as [`Vmstat::delta`] computes them.
    pub fn deltas(&self) -> Vec<(&str, i64)> {
        if self.rows.len() < 2 {
            return Vec::new();
        }
        let restarts = self.restart_rows();
        (0..self.counters.len())
            .filter_map(|i| Some((self.counters[i].as_str(), self.column_delta(i, &restarts)?)))
            .collect()
    }

    /// Values of one counter over time: `(t_s, step, value)`.
    pub fn series(&self, counter: &str) -> Vec<(f64, u32, u64)> {
        match self.index(counter) {
            Some(i) => self
                .rows
                .iter()
                .map(|r| (r.t_s, r.step, r.values.get(i).copied().unwrap_or(0)))
                .collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_vmstat() {
        let s = parse_proc_vmstat(
            "nr_free_pages 1000\npgscan_kswapd 5\n\npgscan_direct 7\n",
            Path::new("x"),
            1,
        )
        .unwrap();
        assert_eq!(s.counters.len(), 3);
        assert_eq!(s.get("pgscan_direct"), Some(7));
        assert_eq!(s.names().next(), Some("nr_free_pages"));
    }

    #[test]
    fn bad_line_names_file_and_line() {
        let e = parse_proc_vmstat("a 1\nb x\n", Path::new("tests-sysstate"), 10).unwrap_err();
        assert_eq!(
            e.to_string().split(':').take(2).collect::<Vec<_>>(),
            ["tests-sysstate", "11"]
        );
    }

    #[test]
    fn deltas() {
        let v = Vmstat {
            counters: vec!["pgscan_kswapd".into(), "nr_free_pages".into()],
            rows: vec![
                VmstatRow {
                    t_s: 0.0,
                    step: 4,
                    values: vec![10, 5],
                },
                VmstatRow {
                    t_s: 1.0,
                    step: 4,
                    values: vec![15, 3],
                },
                VmstatRow {
                    t_s: 2.0,
                    step: 6,
                    values: vec![20, 3],
                },
                VmstatRow {
                    t_s: 3.0,
                    step: 6,
                    values: vec![26, 9],
                },
            ],
        };
        assert_eq!(v.delta("pgscan_kswapd"), Some(16));
        assert_eq!(v.delta("nr_free_pages"), Some(4));
        assert_eq!(v.delta_in_step("pgscan_kswapd", 6), Some(6));
        assert_eq!(v.delta_in_step("nr_free_pages", 4), Some(-2));
        assert_eq!(v.delta_in_step("pgscan_kswapd", 8), None);
        assert_eq!(v.delta("zz"), None);
        assert_eq!(
            v.deltas(),
            vec![("pgscan_kswapd", 16), ("nr_free_pages", 4)]
        );
    }

    /// When the event counters restart (a reboot, or one boot per step) the
    /// delta sums their stretches, each from 0; gauges are last − first; a
    /// lone counter dipping is a negative change, not a restart.
    #[test]
    fn restarted_counters_sum_their_stretches() {
        let row = |t_s: f64, step: u32, values: Vec<u64>| VmstatRow { t_s, step, values };
        let v = Vmstat {
            counters: vec![
                "pgscan_direct".into(),
                "nr_dirty".into(),
                "nr_dirtied".into(),
            ],
            rows: vec![
                row(0.0, 4, vec![0, 100, 0]),
                row(1.0, 4, vec![70, 50, 40]),
                row(1.0, 6, vec![0, 10, 0]),
                row(2.0, 6, vec![30, 90, 25]),
                row(3.0, 6, vec![35, 90, 23]),
            ],
        };
        assert_eq!(v.delta("pgscan_direct"), Some(105));
        assert_eq!(v.delta("nr_dirtied"), Some(63));
        assert_eq!(v.delta("nr_dirty"), Some(-10));
        assert_eq!(v.restarts(), vec![1.0]);
        assert!(is_event_counter("workingset_refault_file"));
        assert!(!is_event_counter("workingset_nodes"));
        assert!(!is_event_counter("nr_writeback"));
    }
}
