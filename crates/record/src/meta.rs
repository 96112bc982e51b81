//! `run.json`: the typed metadata of a run record.
//!
//! The JSON shape is the contract in `docs/run-record.md`; these types are its
//! one implementation, shared by the simulator, the real runner, the importers
//! and the report so that no two of them can drift apart. Reading is lenient
//! where the contract says so (unknown keys are ignored, optional keys default)
//! and strict where it matters (schema version, required keys: see
//! [`RunMeta::from_json`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{RecordError, Result};

/// The schema string of this version of the record format.
pub const SCHEMA: &str = "reclaimlab.run/1";

/// The version of reclaimlab that wrote a record (this crate's version).
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where a run came from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The simulated kernel (`reclaimlab sim`).
    Sim,
    /// The real, running kernel (`reclaimlab run`).
    Real,
    /// Imported from external data (`reclaimlab import`).
    Import,
}

impl Origin {
    /// The label as written in `run.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Sim => "sim",
            Origin::Real => "real",
            Origin::Import => "import",
        }
    }
}

/// Which reclaim a run exercised. Reports use it to choose counters: a memcg
/// run's scanning shows in `pgscan_anon`/`pgscan_file`, not in
/// `pgscan_direct`/`pgscan_kswapd`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReclaimScope {
    /// Global (node) reclaim: kswapd and direct reclaim against the whole machine.
    #[serde(rename = "global")]
    Global,
    /// Limit reclaim of a cgroup-v1 memory controller.
    #[serde(rename = "memcg-v1")]
    MemcgV1,
    /// Limit reclaim of a cgroup-v2 memory controller.
    #[serde(rename = "memcg-v2")]
    MemcgV2,
    /// Not known (an imported trace that does not say).
    #[serde(rename = "unknown")]
    Unknown,
}

impl ReclaimScope {
    /// The label as written in `run.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReclaimScope::Global => "global",
            ReclaimScope::MemcgV1 => "memcg-v1",
            ReclaimScope::MemcgV2 => "memcg-v2",
            ReclaimScope::Unknown => "unknown",
        }
    }
}

/// One block device of the machine.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Device {
    /// Device name (`sda`, `nvme0n1`, `vda`).
    pub name: String,
    /// Block layer: `blk-mq` or `sq` (the old single-queue request layer).
    #[serde(default)]
    pub layer: String,
    /// Sequential write bandwidth, MB/s (0 = unknown).
    #[serde(default)]
    pub write_mb_s: f64,
    /// Sequential read bandwidth, MB/s (0 = unknown).
    #[serde(default)]
    pub read_mb_s: f64,
    /// Per-request service latency, µs (0 = unknown).
    #[serde(default)]
    pub latency_us: f64,
    /// Queue depth (0 = unknown).
    #[serde(default)]
    pub queue_depth: u32,
    /// Random-I/O penalty per request, µs (simulated devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_us: Option<f64>,
    /// I/O scheduler (`none`, `mq-deadline`, …), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// Largest request, KiB (`queue/max_sectors_kb`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sectors_kb: Option<u32>,
    /// blk-wbt's target latency, µs (0: off), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wbt_lat_usec: Option<u64>,
}

/// The machine a run ran on (simulated or real). A zero count means unknown
/// (an import that could not tell).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Machine {
    /// Profile name (`small`, `host`, `unknown`, ...).
    pub name: String,
    /// Logical CPUs (0 = unknown).
    pub cpus: u32,
    /// NUMA nodes (0 = unknown).
    #[serde(default)]
    pub nodes: u32,
    /// Memory available to the run, bytes: MemTotal, or the cgroup limit of a
    /// sandboxed real run (0 = unknown).
    pub memory_bytes: u64,
    /// Kernel timer frequency (`CONFIG_HZ`), if known.
    #[serde(default)]
    pub hz: Option<u32>,
    /// Swap space, bytes (0 = none or unknown).
    #[serde(default)]
    pub swap_bytes: u64,
    /// Block devices.
    #[serde(default)]
    pub devices: Vec<Device>,
}

impl Machine {
    /// A machine nothing is known about (imports).
    pub fn unknown() -> Self {
        Machine {
            name: "unknown".into(),
            ..Machine::default()
        }
    }
}

/// The workload that was run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Workload {
    /// Workload name (`stutterp`, `mapped-file-stream`, `trace` for an imported trace).
    pub name: String,
    /// The spec it was built from: a built-in name, or a spec file path.
    #[serde(default)]
    pub spec: String,
}

/// One step of a run: for stutterp one worker count.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The step's number (stutterp: the worker count). It labels latency series
    /// (`mmap-4`) and the `step` column of the CSV files.
    pub step: u32,
    /// Start, seconds from the record's time 0.
    pub start_s: f64,
    /// End, seconds from the record's time 0.
    pub end_s: f64,
}

/// CPU and wall time of the whole run, as mmtests' `time ::` line (`%U`, `%S`,
/// `%e`). Zero means unknown.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct Duration {
    /// User CPU seconds, children included.
    pub user_s: f64,
    /// System CPU seconds, children included.
    pub system_s: f64,
    /// Elapsed wall-clock seconds.
    pub elapsed_s: f64,
}

/// What was captured, and what was not.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Capture {
    /// Whether `trace.txt.gz` holds captured tracepoint lines.
    pub trace: bool,
    /// Events enabled or seen, as `subsystem:event` where known (`vmscan:mm_vmscan_throttled`).
    #[serde(default)]
    pub events: Vec<String>,
    /// Events the kernel reported lost (ring buffer overruns).
    #[serde(default)]
    pub lost_events: u64,
    /// The trace clock's reading at the record's time 0: trace timestamp minus
    /// this is a time on the record's time base.
    #[serde(default)]
    pub trace_time_offset_s: f64,
    /// Input lines an importer skipped because they did not parse (see `notes`).
    #[serde(default)]
    pub skipped_lines: u64,
    /// Lines in `trace.txt.gz`, set by the writer; readers use it to detect a
    /// file cut short at a gzip member boundary (0 = not recorded).
    #[serde(default)]
    pub trace_lines: u64,
    /// Free-text notes: why something was not captured, what an importer skipped
    /// or assumed.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// CPU time of one task (optional per-task accounting).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TaskTime {
    /// Task name as the kernel shows it (`comm`).
    pub comm: String,
    /// Process id (simulated or real).
    pub pid: u32,
    /// The step the task belonged to, if any.
    #[serde(default)]
    pub step: Option<u32>,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub system_s: f64,
    /// Pages the task allocated (simulated runs; absent when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_allocated: Option<u64>,
    /// Pages the task freed: its `munmap` and what its own reclaim freed
    /// (simulated runs; absent when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_freed: Option<u64>,
}

/// One memory cgroup of the run: its limits, `memory.stat` VM events and
/// `memory.events`, by the kernel's key names (simulated runs; real runs:
/// their own cgroup and a spec's, with cgroup v1's `failcnt` and
/// `oom_kill`/`under_oom` as `events` where v1 has no `memory.events`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CgroupRecord {
    /// Name (`reclaimlab` for the machine's workload cgroup).
    pub name: String,
    /// Parent's name (empty: the root).
    #[serde(default)]
    pub parent: String,
    /// `memory.max` / `memory.limit_in_bytes`, bytes (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// `memory.high`, bytes (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_bytes: Option<u64>,
    /// `memory.low`, bytes.
    #[serde(default)]
    pub low_bytes: u64,
    /// `memory.min`, bytes.
    #[serde(default)]
    pub min_bytes: u64,
    /// Largest usage, bytes (`memory.peak`; the largest of the steps).
    #[serde(default)]
    pub peak_bytes: u64,
    /// `memory.stat` VM events (`pgscan_kswapd`, …), summed over the steps.
    #[serde(default)]
    pub stat: BTreeMap<String, u64>,
    /// `memory.events` (`low high max oom oom_kill`), summed over the steps.
    #[serde(default)]
    pub events: BTreeMap<String, u64>,
    /// Seconds its tasks slept in the `memory.high` penalty.
    #[serde(default)]
    pub high_delay_s: f64,
}

/// One OOM kill.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct OomKillRecord {
    /// When, seconds on the run's time base.
    pub t_s: f64,
    /// The step it happened in.
    #[serde(default)]
    pub step: Option<u32>,
    /// Victim's pid.
    pub pid: u32,
    /// Victim's comm.
    pub comm: String,
    /// Victim's memory cgroup (empty: the root).
    #[serde(default)]
    pub cgroup: String,
    /// `CONSTRAINT_NONE` (global OOM) or `CONSTRAINT_MEMCG`.
    pub constraint: String,
    /// The victim's memory (resident + swapped), KiB.
    pub victim_kib: u64,
    /// Free memory on the machine at the time, KiB.
    pub free_kib: u64,
    /// Why reclaim gave up (`no_progress_loops=17 > MAX_RECLAIM_RETRIES=16`,
    /// `watermark check failed: …`, a memcg charge's retries), or for a real
    /// run what the kernel said; empty where unknown (records before it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Where a real run learnt of the kill (`memory.events`, `mark_victim`,
    /// `dmesg`); empty for simulated runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// The contents of `run.json`. See `docs/run-record.md` for each key.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunMeta {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The run's name, used as its column label in reports (`v5.16`).
    pub name: String,
    /// Where the run came from.
    pub origin: Origin,
    /// Kernel profile (sim), `uname -r` (real), what the source says or `unknown` (import).
    pub kernel: String,
    /// The machine.
    pub machine: Machine,
    /// The workload.
    pub workload: Workload,
    /// Every parameter that shaped the run, as strings, keys sorted.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// Random seed (simulated runs), `null` where there is none.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Version of reclaimlab that wrote the record.
    pub tool_version: String,
    /// Which reclaim the run exercised.
    pub reclaim_scope: ReclaimScope,
    /// Steps in order, with their time spans.
    pub steps: Vec<Step>,
    /// CPU and wall time of the whole run.
    pub duration: Duration,
    /// What was captured.
    pub capture: Capture,
    /// Per-task CPU time (optional; omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskTime>,
    /// Memory cgroups other than the root (optional; omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupRecord>,
    /// OOM kills (optional; omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_kills: Vec<OomKillRecord>,
}

/// Top-level keys `run.json` must have.
pub const REQUIRED_KEYS: &[&str] = &[
    "schema",
    "name",
    "origin",
    "kernel",
    "machine",
    "workload",
    "tool_version",
    "reclaim_scope",
    "steps",
    "duration",
    "capture",
];

impl RunMeta {
    /// A metadata skeleton: the given name, origin and kernel; unknown machine;
    /// no steps; nothing captured; this tool's version. Fill in the rest.
    pub fn new(name: impl Into<String>, origin: Origin, kernel: impl Into<String>) -> Self {
        RunMeta {
            schema: SCHEMA.to_string(),
            name: name.into(),
            origin,
            kernel: kernel.into(),
            machine: Machine::unknown(),
            workload: Workload::default(),
            params: BTreeMap::new(),
            seed: None,
            tool_version: TOOL_VERSION.to_string(),
            reclaim_scope: ReclaimScope::Global,
            steps: Vec::new(),
            duration: Duration::default(),
            capture: Capture::default(),
            tasks: Vec::new(),
            cgroups: Vec::new(),
            oom_kills: Vec::new(),
        }
    }

    /// The step whose time span contains `t_s` (seconds on the record's time
    /// base); a time exactly on a boundary belongs to the later step. Times
    /// before the first step belong to none, times after the last step's end to none.
    pub fn step_at(&self, t_s: f64) -> Option<u32> {
        let mut found = None;
        for s in &self.steps {
            if t_s >= s.start_s && t_s <= s.end_s {
                found = Some(s.step);
            }
        }
        found
    }

    /// Serialises as `run.json` writes it: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        // Serialising these plain types cannot fail (string keys, no foreign maps).
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parses and validates `run.json` text. `path` is only used in messages.
    ///
    /// Checks, in order: valid JSON object; `schema` equal to [`SCHEMA`]; every
    /// key of [`REQUIRED_KEYS`] present; then every value's type (a message
    /// naming the key).
    pub fn from_json(text: &str, path: &Path) -> Result<RunMeta> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| RecordError::Meta {
                path: path.to_path_buf(),
                key: "(document)".into(),
                message: format!(
                    "not valid JSON at line {} column {}: {e}; a JSON object as in docs/run-record.md is expected",
                    e.line(),
                    e.column()
                ),
            })?;
        let obj = value.as_object().ok_or_else(|| RecordError::Meta {
            path: path.to_path_buf(),
            key: "(document)".into(),
            message: "expected a JSON object".into(),
        })?;
        match obj.get("schema") {
            Some(serde_json::Value::String(s)) if s == SCHEMA => {}
            Some(serde_json::Value::String(s)) => {
                return Err(RecordError::Schema {
                    path: path.to_path_buf(),
                    found: s.clone(),
                    expected: SCHEMA,
                })
            }
            Some(_) => {
                return Err(RecordError::Meta {
                    path: path.to_path_buf(),
                    key: "schema".into(),
                    message: format!("expected the string {SCHEMA:?}"),
                })
            }
            None => {
                return Err(RecordError::Meta {
                    path: path.to_path_buf(),
                    key: "schema".into(),
                    message: format!("required key missing; expected {SCHEMA:?}"),
                })
            }
        }
        for key in REQUIRED_KEYS {
            if !obj.contains_key(*key) {
                return Err(RecordError::Meta {
                    path: path.to_path_buf(),
                    key: (*key).into(),
                    message: "required key missing (see docs/run-record.md)".into(),
                });
            }
        }
        // Type-check key by key so the message can name the key.
        for key in REQUIRED_KEYS {
            let v = &obj[*key];
            let check = match *key {
                "origin" => serde_json::from_value::<Origin>(v.clone())
                    .map(drop)
                    .map_err(|_| "expected one of \"sim\", \"real\", \"import\"".to_string()),
                "reclaim_scope" => serde_json::from_value::<ReclaimScope>(v.clone())
                    .map(drop)
                    .map_err(|_| {
                        "expected one of \"global\", \"memcg-v1\", \"memcg-v2\", \"unknown\""
                            .to_string()
                    }),
                "machine" => serde_json::from_value::<Machine>(v.clone())
                    .map(drop)
                    .map_err(|e| e.to_string()),
                "workload" => serde_json::from_value::<Workload>(v.clone())
                    .map(drop)
                    .map_err(|e| e.to_string()),
                "steps" => serde_json::from_value::<Vec<Step>>(v.clone())
                    .map(drop)
                    .map_err(|e| {
                        format!(
                            "{e}; expected a list of {{\"step\": N, \"start_s\": S, \"end_s\": S}}"
                        )
                    }),
                "duration" => serde_json::from_value::<Duration>(v.clone())
                    .map(drop)
                    .map_err(|e| {
                        format!(
                            "{e}; expected {{\"user_s\": S, \"system_s\": S, \"elapsed_s\": S}}"
                        )
                    }),
                "capture" => serde_json::from_value::<Capture>(v.clone())
                    .map(drop)
                    .map_err(|e| e.to_string()),
                _ => {
                    if v.is_string() {
                        Ok(())
                    } else {
                        Err("expected a string".to_string())
                    }
                }
            };
            if let Err(message) = check {
                return Err(RecordError::Meta {
                    path: path.to_path_buf(),
                    key: (*key).into(),
                    message,
                });
            }
        }
        serde_json::from_value::<RunMeta>(value).map_err(|e| RecordError::Meta {
            path: path.to_path_buf(),
            key: "(document)".into(),
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_example_parses() {
        let text = r#"{
  "schema": "reclaimlab.run/1",
  "name": "v5.16",
  "origin": "sim",
  "kernel": "v5.16",
  "machine": {
    "name": "small", "cpus": 2, "nodes": 1, "memory_bytes": 1073741824,
    "hz": 250, "swap_bytes": 1073741824,
    "devices": [ { "name": "sda", "layer": "blk-mq", "write_mb_s": 500.0,
                   "read_mb_s": 500.0, "latency_us": 100.0, "queue_depth": 32 } ]
  },
  "workload": { "name": "stutterp", "spec": "stutterp" },
  "params": { "vm.dirty_ratio": "20", "stutterp.duration_s": "300" },
  "seed": 1,
  "tool_version": "0.1.0",
  "reclaim_scope": "global",
  "steps": [ { "step": 4, "start_s": 0.0, "end_s": 300.0 } ],
  "duration": { "user_s": 1.0, "system_s": 2.0, "elapsed_s": 300.0 },
  "capture": { "trace": true, "events": ["vmscan:mm_vmscan_throttled"],
               "lost_events": 0, "trace_time_offset_s": 0.0, "notes": [] },
  "tasks": [ { "comm": "kswapd0", "pid": 51, "step": 4, "user_s": 0.0, "system_s": 1.5 } ],
  "some_future_key": 3
}"#;
        let m = RunMeta::from_json(text, Path::new("run.json")).unwrap();
        assert_eq!(m.origin, Origin::Sim);
        assert_eq!(m.machine.devices[0].queue_depth, 32);
        assert_eq!(m.tasks[0].step, Some(4));
        assert_eq!(m.step_at(10.0), Some(4));
        let again = RunMeta::from_json(&m.to_json(), Path::new("run.json")).unwrap();
        assert_eq!(m, again);
    }

    #[test]
    fn missing_key_is_named() {
        let mut m = RunMeta::new("x", Origin::Import, "unknown");
        m.steps.push(Step {
            step: 1,
            start_s: 0.0,
            end_s: 1.0,
        });
        let mut v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        v.as_object_mut().unwrap().remove("kernel");
        let err = RunMeta::from_json(&v.to_string(), Path::new("r/run.json")).unwrap_err();
        let s = err.to_string();
        assert!(s.contains("r/run.json") && s.contains("kernel"), "{s}");
    }

    #[test]
    fn wrong_schema_and_bad_origin() {
        let m = RunMeta::new("x", Origin::Import, "unknown");
        let t = m.to_json().replace("reclaimlab.run/1", "reclaimlab.run/9");
        let s = RunMeta::from_json(&t, Path::new("run.json"))
            .unwrap_err()
            .to_string();
        assert!(s.contains("reclaimlab.run/9"), "{s}");
        let t = m.to_json().replace("\"import\"", "\"imported\"");
        let s = RunMeta::from_json(&t, Path::new("run.json"))
            .unwrap_err()
            .to_string();
        assert!(s.contains("origin") && s.contains("\"real\""), "{s}");
    }
}
