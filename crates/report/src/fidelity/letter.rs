//! Published tables, transcribed with their source, as "real" runs.
//!
//! The 2021 cover letters are the seed's own evidence of how the real
//! kernel behaved (`docs/fidelity/letters-2021-v2.toml`). A transcription is
//! a TOML file (`reclaimlab.letter/1`, `docs/fidelity.md`): the source
//! (author, subject, date, message id, URL), the workload, and per kernel
//! column the Duration rows, the Ops rows by their mmtests labels, latency
//! statistics per operation, and stall histograms as `[usec_delayed, count]`
//! pairs. Every figure is the letter's; the loader derives nothing but the
//! total of a histogram whose total the letter does not state, and refuses
//! a stated total its histogram does not sum to.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use super::figures::{figure, ops_key};
use super::score::stall_key;
use super::{Kind, Side, StallGroup};
use crate::stalls::StallEvent;

/// The transcription schema name.
pub const LETTER_SCHEMA: &str = "reclaimlab.letter/1";

/// A transcription that cannot be used: names the file and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LetterError {
    /// The file.
    pub path: String,
    /// What is wrong and what would be accepted.
    pub message: String,
}

impl fmt::Display for LetterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for LetterError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LetterFile {
    schema: String,
    workload: String,
    machine: String,
    #[serde(default)]
    headline_ops: Vec<String>,
    source: Source,
    runs: Vec<RunFile>,
}

/// Where the tables come from.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Author and address.
    pub author: String,
    /// Subject line.
    pub subject: String,
    /// Date as the message gives it.
    pub date: String,
    /// Message-Id without the angle brackets.
    pub message_id: String,
    /// An archive URL.
    pub url: String,
    /// Lists it was posted to.
    #[serde(default)]
    pub lists: String,
    /// Which copy was read.
    #[serde(default)]
    pub read_from: String,
    /// The test the tables are of.
    #[serde(default)]
    pub test: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    name: String,
    column: String,
    kernel_profile: String,
    generation: String,
    duration: DurationFile,
    #[serde(default)]
    ops: BTreeMap<String, f64>,
    #[serde(default)]
    latency: BTreeMap<String, BTreeMap<String, f64>>,
    #[serde(default)]
    stalls: Vec<StallFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DurationFile {
    user_s: f64,
    system_s: f64,
    elapsed_s: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StallFile {
    event: String,
    who: String,
    reason: String,
    count: Option<u64>,
    delays_us: Vec<(u64, u64)>,
}

/// One kernel column of a transcription.
#[derive(Clone, Debug, PartialEq)]
pub struct LetterRun {
    /// The simulator profile the column is compared with (`v5.15`).
    pub kernel_profile: String,
    /// The column as a side (origin `letter`, with its headline keys).
    pub side: Side,
}

/// A loaded transcription.
#[derive(Clone, Debug, PartialEq)]
pub struct Letter {
    /// The file.
    pub path: String,
    /// Its source.
    pub source: Source,
    /// Its kernel columns, in file order.
    pub runs: Vec<LetterRun>,
}

impl Letter {
    /// The column compared with a simulator profile.
    pub fn run_for_kernel(&self, kernel: &str) -> Option<&LetterRun> {
        self.runs.iter().find(|r| r.kernel_profile == kernel)
    }

    /// The profiles of its columns, for messages.
    pub fn kernels(&self) -> Vec<&str> {
        self.runs
            .iter()
            .map(|r| r.kernel_profile.as_str())
            .collect()
    }
}

/// Latency statistics a transcription may give: TOML table name → key
/// suffix and label (the record side's [`super::figures::LATENCY`]).
const LATENCY_STATS: [(&str, &str, &str); 4] = [
    ("amean_ms", "amean", "Amean"),
    ("p50_ms", "p50", "Pct-50"),
    ("max99_ms", "p99", "Max-99"),
    ("max_ms", "max", "Max"),
];

/// Reads a transcription file.
pub fn load_letter(path: &Path) -> Result<Letter, LetterError> {
    let text = std::fs::read_to_string(path).map_err(|e| LetterError {
        path: path.display().to_string(),
        message: format!("cannot read the transcription: {e}"),
    })?;
    parse_letter(&text, &path.display().to_string())
}

/// Parses a transcription (`path` names it in errors and in each side's source).
pub fn parse_letter(text: &str, path: &str) -> Result<Letter, LetterError> {
    let err = |message: String| LetterError {
        path: path.to_string(),
        message,
    };
    let file: LetterFile =
        toml::from_str(text).map_err(|e| err(format!("not a transcription: {e}")))?;
    if file.schema != LETTER_SCHEMA {
        return Err(err(format!(
            "schema `{}`: expected `{LETTER_SCHEMA}`",
            file.schema
        )));
    }
    let mut headline_ops = Vec::new();
    for label in &file.headline_ops {
        let (k, _) = ops_key(label)
            .ok_or_else(|| err(format!("headline_ops: unknown Ops row `{label}`")))?;
        headline_ops.push(format!("ops.{k}"));
    }
    let citation = format!(
        "{path}: {}, \"{}\", {}, <{}>",
        file.source.author, file.source.subject, file.source.date, file.source.message_id
    );
    let mut runs = Vec::new();
    for r in file.runs {
        let at = |m: String| err(format!("run `{}`: {m}", r.name));
        let mut figures = Vec::new();
        let mut headline: Vec<String> = Vec::new();
        for (k, label, v) in [
            ("user_s", "Duration User", r.duration.user_s),
            ("system_s", "Duration System", r.duration.system_s),
            ("elapsed_s", "Duration Elapsed", r.duration.elapsed_s),
        ] {
            let key = format!("duration.{k}");
            headline.push(key.clone());
            figures.push(figure(
                key.clone(),
                &key,
                label.into(),
                "duration",
                Kind::Seconds,
                v,
            ));
        }
        // Ops in the report's row order, whatever the file's.
        let mut ops = Vec::new();
        for (label, &v) in &r.ops {
            let (k, kind) = ops_key(label).ok_or_else(|| {
                at(format!(
                    "unknown Ops row `{label}` (expected an mmtests label such as `Direct pages scanned`)"
                ))
            })?;
            ops.push((super::figures::ops_rank(k), k, kind, label.clone(), v));
        }
        ops.sort_by_key(|o| o.0);
        for (_, k, kind, label, v) in ops {
            let key = format!("ops.{k}");
            figures.push(figure(
                key.clone(),
                &key,
                format!("Ops {label}"),
                "ops",
                kind,
                v,
            ));
        }
        headline.extend(
            headline_ops
                .iter()
                .filter(|k| figures.iter().any(|f| &f.key == *k))
                .cloned(),
        );
        for (table, values) in &r.latency {
            let (_, stat, label) = LATENCY_STATS
                .iter()
                .find(|(t, ..)| t == table)
                .ok_or_else(|| {
                    at(format!(
                        "unknown latency table `{table}` (expected one of amean_ms, p50_ms, max99_ms, max_ms)"
                    ))
                })?;
            let mut ops: Vec<(&String, f64)> = values.iter().map(|(op, &v)| (op, v)).collect();
            ops.sort_by_key(|(op, _)| op_order(op));
            for (op, v) in ops {
                let key = format!("latency.{op}.{stat}");
                if *stat == "p99" {
                    headline.push(key.clone());
                }
                figures.push(figure(
                    key,
                    &format!("latency.{stat}"),
                    format!("{label} {op} (ms)"),
                    "latency",
                    Kind::Quantile,
                    v,
                ));
            }
        }
        let mut stalls = Vec::new();
        for s in r.stalls {
            if StallEvent::from_name(&s.event).is_none() {
                return Err(at(format!(
                    "stall event `{}`: expected mm_vmscan_throttled, writeback_congestion_wait or writeback_wait_iff_congested",
                    s.event
                )));
            }
            if !["kswapd", "direct", "all"].contains(&s.who.as_str()) {
                return Err(at(format!(
                    "stall who `{}`: expected kswapd, direct or all",
                    s.who
                )));
            }
            let mut delays_us = BTreeMap::new();
            for (d, c) in &s.delays_us {
                *delays_us.entry(*d).or_insert(0) += c;
            }
            let sum: u64 = delays_us.values().sum();
            let count = match s.count {
                Some(c) if !delays_us.is_empty() && c != sum => {
                    return Err(at(format!(
                        "{} {} {}: stated count {c} but the histogram sums to {sum}",
                        s.event, s.who, s.reason
                    )))
                }
                Some(c) => c,
                None => sum,
            };
            headline.push(format!("{}.count", stall_key(&s.event, &s.who, &s.reason)));
            stalls.push(StallGroup {
                event: s.event,
                who: s.who,
                reason: s.reason,
                count,
                delays_us,
            });
        }
        runs.push(LetterRun {
            kernel_profile: r.kernel_profile,
            side: Side {
                name: r.name,
                origin: "letter".into(),
                kernel: r.column,
                generation: r.generation,
                workload: file.workload.clone(),
                machine: file.machine.clone(),
                source: citation.clone(),
                figures,
                stalls: Some(stalls),
                headline: Some(headline),
                caveats: Vec::new(),
            },
        });
    }
    Ok(Letter {
        path: path.to_string(),
        source: file.source,
        runs,
    })
}

/// Orders `mmap-4` before `mmap-12`: by metric, then step as a number.
fn op_order(op: &str) -> (String, u64) {
    match op.rsplit_once('-') {
        Some((m, n)) => (m.to_string(), n.parse().unwrap_or(u64::MAX)),
        None => (op.to_string(), 0),
    }
}
