//! What comes back from a guest: the facts it wrote (`facts.txt`), the run
//! records its own `reclaimlab run` made, and the throttling events in them.
//!
//! The records are ordinary run records written inside the guest by the host
//! runner's code; here they are only labelled as guest runs: a name per kernel
//! and round, `guest.*` params (accelerator, package, MGLRU, disk cap) and notes.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::Path;

use crate::error::{HostError, Result};

/// The events whose presence tells the two throttling generations apart.
pub const THROTTLE_EVENTS: &[&str] = &[
    "writeback_congestion_wait",
    "writeback_wait_iff_congested",
    "mm_vmscan_throttled",
];

/// The guest's facts, from `facts.txt` (`key value` lines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// `uname -r`.
    pub release: String,
    /// vCPUs the guest saw.
    pub cpus: u32,
    /// MemTotal, KiB.
    pub memtotal_kb: u64,
    /// `/sys/kernel/mm/lru_gen/enabled`, or `absent`.
    pub lru_gen: String,
    /// Tracepoints present (of the ones asked about), `subsystem:event`
    /// (bare names from older guests' facts are accepted too).
    pub events: Vec<String>,
    /// The CPU probe's measurements (`cost KEY NS` lines), ns per page.
    pub costs: Vec<(String, f64)>,
    /// Exit status of the control's and the workload's `reclaimlab run`.
    pub control_exit: Option<i32>,
    /// See `control_exit`.
    pub workload_exit: Option<i32>,
}

/// Parses `facts.txt`.
pub fn parse_facts(text: &str) -> Facts {
    let mut f = Facts::default();
    for l in text.lines() {
        let (k, v) = l.split_once(' ').unwrap_or((l, ""));
        let v = v.trim();
        match k {
            "release" => f.release = v.to_string(),
            "cpus" => f.cpus = v.parse().unwrap_or(0),
            "memtotal_kb" => f.memtotal_kb = v.parse().unwrap_or(0),
            "lru_gen" => f.lru_gen = v.to_string(),
            "event" => f.events.push(v.to_string()),
            "cost" => {
                if let Some((k, x)) = v.split_once(' ') {
                    if let Ok(x) = x.trim().parse::<f64>() {
                        f.costs.push((k.to_string(), x));
                    }
                }
            }
            "control" => f.control_exit = v.strip_prefix("exit ").and_then(|x| x.parse().ok()),
            "workload" => f.workload_exit = v.strip_prefix("exit ").and_then(|x| x.parse().ok()),
            _ => {}
        }
    }
    f
}

impl Facts {
    /// An error when the kernel has none of the throttling tracepoints.
    pub fn check_tracepoints(&self, kernel: &str) -> Result<()> {
        if self
            .events
            .iter()
            .any(|e| THROTTLE_EVENTS.contains(&bare(e)))
        {
            return Ok(());
        }
        Err(HostError::with_fix(
            format!(
                "kernel {kernel} ({}) has none of the throttling tracepoints {} (tracefs available_events); its runs could not show throttling",
                self.release,
                THROTTLE_EVENTS.join(", ")
            ),
            "use a kernel built with CONFIG_TRACEPOINTS and CONFIG_FTRACE (Debian's have them): debian:5.10, debian:6.1",
        ))
    }
}

/// An event's name without its subsystem (`mm_vmscan_throttled`).
fn bare(e: &str) -> &str {
    e.rsplit(':').next().unwrap_or(e)
}

/// `(major, minor)` of a release string (`6.1.0-50-amd64` gives (6, 1)).
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Why a kernel of version `v` has no `event`, when that is its generation's
/// design rather than a broken kernel: `mm_vmscan_throttled` came with
/// `reclaim_throttle` in 5.16; the congestion tracepoints went with
/// `congestion_wait`'s last callers (gone in the kernels from 5.18, see
/// `tracefs::RELEVANT_EVENTS`).
pub fn expected_absence(event: &str, v: (u32, u32)) -> Option<&'static str> {
    match bare(event) {
        "mm_vmscan_throttled" if v < (5, 16) => Some("added in 5.16"),
        "writeback_congestion_wait" | "writeback_wait_iff_congested" if v >= (5, 18) => {
            Some("removed by 5.18")
        }
        _ => None,
    }
}

/// The tracepoints a run asked for that the guest kernel lacks, split into
/// those its generation never had (`(event, why)`) and the rest: those are
/// the ones whose zeros in the report mean "not captured", not "never fired".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MissingEvents {
    /// Absent by the kernel generation's design.
    pub expected: Vec<(String, &'static str)>,
    /// Absent although this kernel version should have them.
    pub unexpected: Vec<String>,
}

impl MissingEvents {
    /// One line for the record's notes and the terminal; `None` when nothing is missing.
    pub fn describe(&self, release: &str) -> Option<String> {
        if self.expected.is_empty() && self.unexpected.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if !self.unexpected.is_empty() {
            parts.push(format!(
                "MISSING {} (their counts are zero because they could not be captured, not because nothing happened)",
                self.unexpected.join(", ")
            ));
        }
        if !self.expected.is_empty() {
            parts.push(format!(
                "absent by generation: {}",
                self.expected
                    .iter()
                    .map(|(e, why)| format!("{e} ({why})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Some(format!(
            "guest kernel {release}: tracepoints asked for but not in its tracefs available_events: {}",
            parts.join("; ")
        ))
    }

    /// Every missing event, for the `guest.events_missing` param (`none` if none).
    pub fn param(&self) -> String {
        let all: Vec<&str> = self
            .unexpected
            .iter()
            .map(String::as_str)
            .chain(self.expected.iter().map(|(e, _)| e.as_str()))
            .collect();
        if all.is_empty() {
            "none".into()
        } else {
            all.join(",")
        }
    }
}

impl Facts {
    /// Which of `requested` (`subsystem:event`) the guest kernel lacks.
    /// Facts without any event line (a job that failed before listing them)
    /// say nothing: an empty result.
    pub fn missing_events(&self, requested: &[String]) -> MissingEvents {
        let mut m = MissingEvents::default();
        if self.events.is_empty() {
            return m;
        }
        let v = release_version(&self.release);
        for r in requested {
            if self.events.iter().any(|e| bare(e) == bare(r)) {
                continue;
            }
            match v.and_then(|v| expected_absence(r, v)) {
                Some(why) => m.expected.push((r.clone(), why)),
                None => m.unexpected.push(r.clone()),
            }
        }
        m
    }
}

/// Counts throttling events per `event` and, for `mm_vmscan_throttled`, per
/// `event reason`; kswapd's separately (`kswapd:` prefix), as the report does.
pub fn count_throttle_events(trace: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in trace.lines() {
        if l.starts_with('#') {
            continue;
        }
        for e in THROTTLE_EVENTS {
            let tag = format!(" {e}: ");
            if let Some(i) = l.find(&tag) {
                let who = if l.trim_start().starts_with("kswapd") {
                    "kswapd"
                } else {
                    "direct"
                };
                let reason = l[i..]
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("reason="))
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default();
                *m.entry(format!("{e}{reason} ({who})")).or_insert(0) += 1;
            }
        }
    }
    m
}

/// The throttling events of a record's `trace.txt.gz` (empty if none or absent).
pub fn record_throttle_events(record: &Path) -> BTreeMap<String, u64> {
    let Ok(f) = fs::File::open(record.join("trace.txt.gz")) else {
        return BTreeMap::new();
    };
    let mut s = String::new();
    let _ = flate2::read::MultiGzDecoder::new(f).read_to_string(&mut s);
    count_throttle_events(&s)
}

/// One line for a set of event counts: `none` or `a 3, b 1`.
pub fn describe_counts(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Labels a guest's record: its name, `guest.*` params, machine name (the
/// `guest:…` string that `sim --machine` takes) and notes.
pub fn label_run_json(
    json: &str,
    name: &str,
    params: &BTreeMap<String, String>,
    notes: &[String],
    machine_name: &str,
) -> std::result::Result<String, String> {
    let mut v: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let o = v.as_object_mut().ok_or("run.json is not an object")?;
    o.insert("name".into(), name.into());
    let p = o
        .entry("params")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let Some(p) = p.as_object_mut() {
        for (k, val) in params {
            p.insert(k.clone(), val.clone().into());
        }
        let sorted: serde_json::Map<String, serde_json::Value> = std::mem::take(p)
            .into_iter()
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        *p = sorted;
    }
    if let Some(m) = o.get_mut("machine").and_then(|m| m.as_object_mut()) {
        m.insert("name".into(), machine_name.into());
    }
    if let Some(c) = o.get_mut("capture").and_then(|c| c.as_object_mut()) {
        let n = c
            .entry("notes")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(a) = n.as_array_mut() {
            for note in notes {
                a.push(note.clone().into());
            }
        }
    }
    serde_json::to_string_pretty(&v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_parsed_and_tracepoints_checked() {
        let f = parse_facts(
            "release 5.10.0-32-amd64\ncpus 2\nmemtotal_kb 2014000\nlru_gen absent\n\
             event writeback_congestion_wait\nevent mm_vmscan_direct_reclaim_begin\ncontrol exit 0\nworkload exit 2\n",
        );
        assert_eq!(f.release, "5.10.0-32-amd64");
        assert_eq!(f.cpus, 2);
        assert_eq!(f.lru_gen, "absent");
        assert_eq!(f.control_exit, Some(0));
        assert_eq!(f.workload_exit, Some(2));
        assert!(f.check_tracepoints("debian:5.10").is_ok());
        let none = parse_facts("release 6.1\nevent mm_vmscan_direct_reclaim_begin\n");
        let e = none.check_tracepoints("x").unwrap_err();
        assert!(e.what.contains("none of the throttling tracepoints"), "{e}");
    }

    #[test]
    fn missing_tracepoints_are_split_by_generation() {
        let req: Vec<String> = crate::tracefs::requested_events("default");
        let have = |rel: &str, evs: &[&str]| Facts {
            release: rel.into(),
            events: evs.iter().map(|e| e.to_string()).collect(),
            ..Facts::default()
        };
        // 5.10 has the congestion tracepoints and not mm_vmscan_throttled: by design.
        let all_but = |skip: &[&str]| -> Vec<&str> {
            crate::tracefs::RELEVANT_EVENTS
                .iter()
                .copied()
                .filter(|e| !skip.iter().any(|s| e.ends_with(s)))
                .collect()
        };
        let f = have("5.10.0-32-amd64", &all_but(&["mm_vmscan_throttled"]));
        let m = f.missing_events(&req);
        assert!(m.unexpected.is_empty(), "{m:?}");
        assert_eq!(
            m.expected,
            vec![("vmscan:mm_vmscan_throttled".to_string(), "added in 5.16")]
        );
        let d = m.describe(&f.release).unwrap();
        assert!(
            d.contains("absent by generation: vmscan:mm_vmscan_throttled (added in 5.16)")
                && !d.contains("MISSING"),
            "{d}"
        );
        // 6.1 without the congestion ones is expected; without
        // mm_vmscan_throttled and kswapd_wake it is not.
        let f = have(
            "6.1.0-50-amd64",
            &all_but(&[
                "congestion_wait",
                "iff_congested",
                "mm_vmscan_throttled",
                "kswapd_wake",
            ]),
        );
        let m = f.missing_events(&req);
        assert_eq!(
            m.unexpected,
            vec!["vmscan:mm_vmscan_throttled", "vmscan:mm_vmscan_kswapd_wake"]
        );
        assert_eq!(m.expected.len(), 2, "{m:?}");
        let d = m.describe(&f.release).unwrap();
        assert!(d.starts_with("guest kernel 6.1.0-50-amd64: ") && d.contains("MISSING vmscan:mm_vmscan_throttled, vmscan:mm_vmscan_kswapd_wake (their counts are zero"), "{d}");
        assert!(
            m.param()
                .starts_with("vmscan:mm_vmscan_throttled,vmscan:mm_vmscan_kswapd_wake,writeback:"),
            "{}",
            m.param()
        );
        // Nothing missing; no event lines at all says nothing.
        let f = have("6.1.0", crate::tracefs::RELEVANT_EVENTS);
        assert_eq!(f.missing_events(&req).describe("x"), None);
        assert_eq!(f.missing_events(&req).param(), "none");
        assert_eq!(
            have("6.1", &[]).missing_events(&req),
            MissingEvents::default()
        );
        // Bare names (older facts) count as present.
        let f = have("6.1.0", &["mm_vmscan_throttled"]);
        assert!(!f
            .missing_events(&["vmscan:mm_vmscan_throttled".into()])
            .param()
            .contains("throttled"));
        assert_eq!(release_version("5.10.0-32-amd64"), Some((5, 10)));
        assert_eq!(release_version("6.12"), Some((6, 12)));
        assert_eq!(release_version("custom"), None);
    }

    #[test]
    fn cost_lines_are_parsed() {
        let f = parse_facts(
            "release 6.1\ncost fault_zero_ns 81234.5\ncost touch_page_ns 300.0\ncost broken\n",
        );
        assert_eq!(
            f.costs,
            vec![
                ("fault_zero_ns".to_string(), 81234.5),
                ("touch_page_ns".to_string(), 300.0)
            ]
        );
    }

    #[test]
    fn throttle_events_by_reason_and_who() {
        let t = "# header\n\
            kswapd0-51 [000] ..... 1.0: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK\n\
            fio-77 [001] ..... 1.1: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=100000 reason=VMSCAN_THROTTLE_CONGESTED\n\
            fio-77 [001] ..... 1.2: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000\n\
            fio-77 [001] ..... 1.3: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000\n\
            fio-77 [001] ..... 1.4: mm_vmscan_direct_reclaim_begin: order=0\n";
        let m = count_throttle_events(t);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m["mm_vmscan_throttled VMSCAN_THROTTLE_WRITEBACK (kswapd)"],
            1
        );
        assert_eq!(m["writeback_congestion_wait (direct)"], 2);
        assert_eq!(describe_counts(&BTreeMap::new()), "none");
    }

    #[test]
    fn run_json_is_labelled() {
        let j = r#"{"schema":"reclaimlab.run/1","name":"x","machine":{"name":"host","cpus":2},"params":{"z":"1"},"capture":{"trace":true,"notes":["a"]}}"#;
        let mut p = BTreeMap::new();
        p.insert("guest.accel".to_string(), "tcg".to_string());
        let out = label_run_json(
            j,
            "debian-5.10",
            &p,
            &["guest note".into()],
            "guest:2G,cpus=2,disk=16,swap=2G",
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["name"], "debian-5.10");
        assert_eq!(v["machine"]["name"], "guest:2G,cpus=2,disk=16,swap=2G");
        assert_eq!(v["params"]["guest.accel"], "tcg");
        assert_eq!(v["params"]["z"], "1");
        assert_eq!(v["capture"]["notes"][1], "guest note");
        assert!(out.find("guest.accel").unwrap() < out.find("\"z\"").unwrap());
        assert!(label_run_json("[1]", "n", &p, &[], "guest").is_err());
    }
}
