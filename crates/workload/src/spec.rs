//! The generic workload spec: a TOML file composing workers.
//!
//! ```toml
//! name = "mix"
//! duration_s = 30          # after the warmup
//! warmup_s = 5             # writers run alone first (0: none)
//!
//! [[worker]]
//! kind = "file-writer"     # buffered writes, like fio
//! count = 2
//! files = 4
//! file_mib = 64
//! block_kib = 1024
//! pattern = "random"       # or "sequential"; each pass writes every block once
//! invalidate = true        # fio's default: fadvise(DONTNEED) the files at each pass
//! fallocate = true         # fio's default: files laid out as unwritten extents
//!
//! [[worker]]
//! kind = "anon-hog"        # writes one word per page, endless passes
//! count = 2
//! size_mib = 200
//!
//! [[worker]]
//! kind = "file-reader"     # buffered random reads
//! files = 8
//! file_mib = 32
//! block_kib = 4
//!
//! [[worker]]
//! kind = "mmap-latency"    # sleep, map, write each page, unmap; records latency
//! pages = 32768
//! sleep_ms = 5
//!
//! [[worker]]
//! kind = "mmap-file-reader" # processes sharing a file mapping, one byte per page
//! count = 4
//! files = 1
//! file_mib = 64
//! pattern = "sequential"
//! sparse = true            # holes: faults zero-fill, no device reads
//!
//! [[worker]]
//! kind = "mlock"           # maps, mlock()s and holds memory (unevictable)
//! size_mib = 64            # how much it locks in all
//! step_mib = 16            # lock in steps of this much (0: all at once)
//! step_interval_s = 1.0    # seconds between steps; then hold to the end
//!
//! [[worker]]
//! kind = "fs-create"       # fs_mark-like: creates files round-robin in dirs
//! count = 2                # processes
//! dirs = 16                # directories (default 16)
//! files = 0                # files per process (default 0: endless)
//! file_size = 0            # bytes per file (default 0: empty files)
//! ```

use serde::Deserialize;

/// Kind of worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerKind {
    /// Anonymous memory hog (mmtests `memory-hog`).
    AnonHog,
    /// Buffered file writer (fio `randwrite`/`write`, `direct=0`).
    FileWriter,
    /// Buffered file reader (fio `randread`).
    FileReader,
    /// mmtests' `mmap-latency` loop.
    MmapLatency,
    /// Readers of a shared file mapping, one byte per page (`MADV_RANDOM`):
    /// the 2010 mapped-file-stream test. All `count` processes map the same
    /// `files`.
    MmapFileReader,
    /// Maps anonymous memory, `mlock`s it (in `step_mib` steps every
    /// `step_interval_s`, or all at once) and holds it to the end: the
    /// squeeze of Dave Chinner's 2019/2020 XFS tests (reference §3.10).
    Mlock,
    /// fs_mark-like file creation: each process creates `files` files
    /// (0: endlessly) of `file_size` bytes, round-robin over `dirs`
    /// directories (reference §3.10: `fs_mark -S0 -s 0`). Real runs only
    /// on this branch; the simulated one comes with the slab model.
    FsCreate,
}

impl WorkerKind {
    /// The kind's name in a spec (`kind = "…"`).
    pub fn name(self) -> &'static str {
        match self {
            WorkerKind::AnonHog => "anon-hog",
            WorkerKind::FileWriter => "file-writer",
            WorkerKind::FileReader => "file-reader",
            WorkerKind::MmapLatency => "mmap-latency",
            WorkerKind::MmapFileReader => "mmap-file-reader",
            WorkerKind::Mlock => "mlock",
            WorkerKind::FsCreate => "fs-create",
        }
    }
}

impl WorkerKind {
    /// Every kind, in the order of the spec documentation.
    pub const ALL: [WorkerKind; 7] = [
        WorkerKind::AnonHog,
        WorkerKind::FileWriter,
        WorkerKind::FileReader,
        WorkerKind::MmapLatency,
        WorkerKind::MmapFileReader,
        WorkerKind::Mlock,
        WorkerKind::FsCreate,
    ];

    /// The kind named `name` (`mlock`, `fs-create`, …).
    pub fn from_name(name: &str) -> Option<WorkerKind> {
        WorkerKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The `[[worker]]` keys `KIND.KEY` may set from the command line
/// (`--set mlock.size_mib=384`, `--sweep mlock.size_mib=320,384,448`): every
/// numeric, boolean and pattern key. `kind`, `cgroup` and `device` name
/// things and stay in the file.
pub const WORKER_KEYS: &[&str] = &[
    "count",
    "size_mib",
    "files",
    "file_mib",
    "block_kib",
    "pattern",
    "pages",
    "sleep_ms",
    "sparse",
    "in_warmup",
    "passes",
    "invalidate",
    "fallocate",
    "shared",
    "step_mib",
    "step_interval_s",
    "dirs",
    "file_size",
];

/// Whether `name` has the form of a worker key, `KIND.KEY` with a known
/// kind (`mlock.size_mib`); whether the spec has such a worker and the key
/// exists is [`Spec::set_worker_key`]'s to say.
pub fn is_worker_key(name: &str) -> bool {
    name.split_once('.')
        .is_some_and(|(k, _)| WorkerKind::from_name(k).is_some())
}

/// Access pattern of file workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Random block-aligned offsets.
    #[default]
    Random,
    /// Sequential, wrapping at the end of each file.
    Sequential,
}

/// One `[[worker]]` entry.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    /// Kind.
    pub kind: WorkerKind,
    /// How many processes of this kind.
    #[serde(default = "one")]
    pub count: u32,
    /// Anon hog size, MiB.
    #[serde(default)]
    pub size_mib: u64,
    /// Files per file worker (default 1); fs-create: files each process
    /// creates (default 0: endless). Left unset in the TOML it reads
    /// [`FILES_UNSET`] until [`Spec::parse`] fills in the kind's default.
    #[serde(default = "files_unset")]
    pub files: u64,
    /// Size of each file, MiB.
    #[serde(default)]
    pub file_mib: u64,
    /// I/O size, KiB.
    #[serde(default = "default_block")]
    pub block_kib: u64,
    /// Access pattern.
    #[serde(default)]
    pub pattern: Pattern,
    /// mmap-latency: pages mapped per iteration.
    #[serde(default = "default_pages")]
    pub pages: u32,
    /// mmap-latency: sleep per iteration, ms.
    #[serde(default = "default_sleep")]
    pub sleep_ms: u64,
    /// File workers: the files are sparse (holes read as zeros, no I/O).
    #[serde(default)]
    pub sparse: bool,
    /// Starts with the warmup (writers) instead of after it.
    #[serde(default)]
    pub in_warmup: Option<bool>,
    /// mmap-file-reader: passes over its files before the process exits,
    /// recording its elapsed time as an `elapsed` sample; 0 = endless. When
    /// every finite worker of a step has exited, the step ends (at the next
    /// vmstat sample) even before `duration_s`.
    #[serde(default)]
    pub passes: u32,
    /// file-writer: fio's `invalidate` (default true, as fio's): each pass
    /// over the files starts with `posix_fadvise(POSIX_FADV_DONTNEED)` on
    /// them, dropping their clean cached pages.
    #[serde(default = "yes")]
    pub invalidate: bool,
    /// file-writer: fio's `fallocate=native` (default true, as fio's): each
    /// step's files are created with `fallocate(fd, 0, 0, size)`, so every
    /// first write lands in an unwritten extent (converted at completion;
    /// refused by ext4's `->writepage` from reclaim). false: the files'
    /// blocks are all written (as a file laid out by writing it).
    #[serde(default = "yes")]
    pub fallocate: bool,
    /// mmap-file-reader: all `count` processes map the same files (true, the
    /// default) or each its own (false, as in mapped-file-stream.c).
    #[serde(default = "yes")]
    pub shared: bool,
    /// The `[[cgroup]]` its processes run in (absent: the root cgroup, or
    /// the machine's `[workload_cgroup]`).
    #[serde(default)]
    pub cgroup: Option<String>,
    /// The device its files live on (a device name of the machine; absent:
    /// the machine's data device).
    #[serde(default)]
    pub device: Option<String>,
    /// mlock: lock in steps of this many MiB (0: all at once).
    #[serde(default)]
    pub step_mib: u32,
    /// mlock: seconds between steps.
    #[serde(default = "default_step_interval")]
    pub step_interval_s: f64,
    /// fs-create: directories the files go round-robin into.
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// fs-create: bytes written to each file (0: empty files).
    #[serde(default)]
    pub file_size: u64,
}

/// `files` as read when the TOML does not set it (see [`WorkerSpec::files`]).
pub const FILES_UNSET: u64 = u64::MAX;

fn files_unset() -> u64 {
    FILES_UNSET
}
fn default_step_interval() -> f64 {
    1.0
}
fn default_dirs() -> u32 {
    16
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}
fn default_block() -> u64 {
    1024
}
fn default_pages() -> u32 {
    32768
}
fn default_sleep() -> u64 {
    5
}

impl WorkerSpec {
    /// A worker of `kind` with defaults.
    pub fn new(kind: WorkerKind) -> WorkerSpec {
        WorkerSpec {
            kind,
            count: 1,
            size_mib: 0,
            files: 1,
            file_mib: 0,
            block_kib: default_block(),
            pattern: Pattern::Random,
            pages: default_pages(),
            sleep_ms: default_sleep(),
            sparse: false,
            in_warmup: None,
            passes: 0,
            shared: true,
            invalidate: true,
            fallocate: true,
            cgroup: None,
            device: None,
            step_mib: 0,
            step_interval_s: default_step_interval(),
            dirs: default_dirs(),
            file_size: 0,
        }
    }
    /// Whether its processes end on their own (`passes` of an
    /// mmap-file-reader), ending the step once all such are done.
    pub fn is_finite(&self) -> bool {
        if self.kind == WorkerKind::FsCreate {
            return self.files > 0;
        }
        self.passes > 0
            && (self.kind == WorkerKind::MmapFileReader
                || (self.kind == WorkerKind::FileReader && self.pattern == Pattern::Sequential))
    }

    /// Whether it starts with the warmup: writers do by default.
    pub fn starts_in_warmup(&self) -> bool {
        self.in_warmup
            .unwrap_or(self.kind == WorkerKind::FileWriter)
    }
}

/// A workload spec file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Name.
    pub name: String,
    /// Seconds measured after the warmup.
    pub duration_s: f64,
    /// Seconds the warmup workers run alone first.
    #[serde(default)]
    pub warmup_s: f64,
    /// Workers.
    #[serde(rename = "worker")]
    pub workers: Vec<WorkerSpec>,
    /// Memory cgroups the workers may be placed in (see [`crate::cgroups`]).
    #[serde(rename = "cgroup", default)]
    pub cgroups: Vec<crate::cgroups::CgroupSpec>,
}

/// A spec that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// Unreadable file.
    #[error("{file}: cannot read the workload spec: {err}")]
    Io {
        /// File.
        file: String,
        /// OS error.
        err: std::io::Error,
    },
    /// TOML or field error (the message has line and column, and a hint
    /// of the accepted fields when a field is unknown or missing).
    #[error("{file}: {msg}{hint}")]
    Parse {
        /// File.
        file: String,
        /// Parser message.
        msg: String,
        /// What is accepted, when the error is about fields; else empty.
        hint: String,
    },
    /// A value out of range.
    #[error("{file}: worker #{index} ({kind:?}): {what}")]
    Invalid {
        /// File.
        file: String,
        /// 1-based worker index.
        index: usize,
        /// Kind.
        kind: WorkerKind,
        /// What is wrong and what is accepted.
        what: String,
    },
    /// Spec-level value out of range.
    #[error("{file}: {what}")]
    Bad {
        /// File.
        file: String,
        /// What is wrong.
        what: String,
    },
}

/// Most files one worker entry may have.
pub const MAX_FILES: u32 = 65_536;
/// Most pages an mmap-latency worker maps (4 TiB).
pub const MAX_PAGES: u32 = 1 << 30;

/// The built-in workloads that are plain specs: (name, description, TOML).
pub const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "memcg-congestion",
        "Andrey Ryabinin's 2018 reproducer: a congester cgroup writing to a slow disk and a victim cgroup reading another; run with --machine hdd-pair-2018 --kernel v4.16,v4.17",
        include_str!("../../../examples/workloads/memcg-congestion.toml"),
    ),
    (
        "usb-stick-2010",
        "Mel Gorman's 2010 example: a dd to a slow USB stick congests it while a reader of a file on the SSD reclaims; run with --machine ssd-usb-2010 --kernel v2.6.36,v2.6.37,none",
        include_str!("../../../examples/workloads/usb-stick-2010.toml"),
    ),
    (
        "fsmark-mlock",
        "Dave Chinner's 2020 XFS inode-reclaim test: 16 fs_mark -S0 creators of empty files beside a process mlocking 416 MiB in 32 MiB steps every 2 s; run with --machine examples/machines/xfs-box.toml --kernel v5.9 --sweep xfs.inode_reclaim=sync,async,async-pinned --sweep mlock.size_mib=464,480,496,504,508 (docs/slab.md)",
        include_str!("../../../examples/workloads/fsmark-mlock.toml"),
    ),
    (
        "mapped-file-stream",
        "Johannes Weiner's 2010 sparse-file mmap reader (one byte per page, MADV_RANDOM), judged by elapsed time and vmstat",
        include_str!("../../../examples/workloads/mapped-file-stream.toml"),
    ),
    (
        "fsmark-mlock-1g",
        "The same test sized for `reclaimlab run fsmark-mlock-1g --memory 1G` (real kernel): 16 creators beside 900 MiB mlocked in 100 MiB steps every 5 s (docs/oom.md)",
        include_str!("../../../examples/workloads/fsmark-mlock-1g.toml"),
    )];

impl Spec {
    /// A built-in spec by name (`reclaimlab list workloads`).
    pub fn builtin(name: &str) -> Option<Spec> {
        BUILTIN
            .iter()
            .find(|b| b.0 == name)
            .map(|b| Spec::parse(b.2, b.0).expect("built-in spec parses"))
    }

    /// Every setting of the spec, defaults filled in, as `(name, value)`
    /// for the run record's parameters (`spec.duration_s`,
    /// `spec.worker2.count`, …): a record says what its workers were even
    /// once the file has changed, and `report` lists the settings two runs
    /// differ in.
    pub fn to_params(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("spec.duration_s".to_string(), self.duration_s.to_string()),
            ("spec.warmup_s".to_string(), self.warmup_s.to_string()),
        ];
        for (i, w) in self.workers.iter().enumerate() {
            let kind = w.kind.name();
            let pattern = match w.pattern {
                Pattern::Random => "random",
                Pattern::Sequential => "sequential",
            };
            let fields = [
                ("kind", kind.to_string()),
                ("count", w.count.to_string()),
                ("size_mib", w.size_mib.to_string()),
                ("files", w.files.to_string()),
                ("file_mib", w.file_mib.to_string()),
                ("block_kib", w.block_kib.to_string()),
                ("pattern", pattern.to_string()),
                ("pages", w.pages.to_string()),
                ("sleep_ms", w.sleep_ms.to_string()),
                ("sparse", w.sparse.to_string()),
                ("in_warmup", w.starts_in_warmup().to_string()),
                ("passes", w.passes.to_string()),
                ("shared", w.shared.to_string()),
            ];
            for (f, value) in fields {
                v.push((format!("spec.worker{}.{f}", i + 1), value));
            }
            // The keys of the newer kinds, only where they apply, so that
            // older records' parameters stay as they were.
            let extra: &[(&str, String)] = match w.kind {
                WorkerKind::Mlock => &[
                    ("step_mib", w.step_mib.to_string()),
                    ("step_interval_s", w.step_interval_s.to_string()),
                ],
                WorkerKind::FsCreate => &[
                    ("dirs", w.dirs.to_string()),
                    ("file_size", w.file_size.to_string()),
                ],
                _ => &[],
            };
            for (f, value) in extra {
                v.push((format!("spec.worker{}.{f}", i + 1), value.clone()));
            }
            if let Some(c) = &w.cgroup {
                v.push((format!("spec.worker{}.cgroup", i + 1), c.clone()));
            }
            if let Some(d) = &w.device {
                v.push((format!("spec.worker{}.device", i + 1), d.clone()));
            }
        }
        if let Ok(cgs) = crate::cgroups::memcg_specs(&self.cgroups, u64::MAX >> 20) {
            let lim = |p: u64| {
                if p == reclaimlab_kernel::mm::memcontrol::PAGE_COUNTER_MAX {
                    "max".to_string()
                } else {
                    format!("{}K", p * 4)
                }
            };
            for (i, c) in cgs.iter().enumerate() {
                let k = |f: &str| format!("spec.cgroup{}.{f}", i + 1);
                v.push((k("name"), c.name.clone()));
                v.push((k("parent"), c.parent.clone().unwrap_or_default()));
                v.push((k("max"), lim(c.max)));
                v.push((k("high"), lim(c.high)));
                v.push((k("low"), lim(c.low)));
                v.push((k("min"), lim(c.min)));
            }
        }
        v
    }

    /// The cgroup version the spec's cgroups are written for: 1 if any
    /// uses v1's `limit_in_bytes`, else `None` (the run's `memcg.version`).
    pub fn memcg_version(&self) -> Option<u64> {
        self.cgroups.iter().any(|c| c.is_v1()).then_some(1)
    }

    /// Sets `KIND.KEY = value` on every worker of that kind (`mlock.size_mib`
    /// = 384: each `mlock` worker locks 384 MiB) and checks the whole spec
    /// again. The error names what is wrong and what is accepted: a kind the
    /// spec has no worker of, a key that is not a worker key, a value of the
    /// wrong type or out of range. Returns how many workers it changed.
    pub fn set_worker_key(&mut self, name: &str, value: &str) -> Result<usize, String> {
        let Some((kind_name, key)) = name.split_once('.') else {
            return Err(format!(
                "`{name}` is not a worker key; expected KIND.KEY, e.g. mlock.size_mib"
            ));
        };
        let kinds: Vec<&str> = {
            let mut v: Vec<&str> = self.workers.iter().map(|w| w.kind.name()).collect();
            v.dedup();
            v.sort_unstable();
            v.dedup();
            v
        };
        let Some(kind) = WorkerKind::from_name(kind_name) else {
            let all: Vec<&str> = WorkerKind::ALL.iter().map(|k| k.name()).collect();
            return Err(format!(
                "`{kind_name}` is not a worker kind (kinds: {})",
                all.join(", ")
            ));
        };
        if !self.workers.iter().any(|w| w.kind == kind) {
            return Err(format!(
                "workload `{}` has no `{kind_name}` worker (its workers: {}); name a kind it has",
                self.name,
                kinds.join(", ")
            ));
        }
        if !WORKER_KEYS.contains(&key) {
            let hint = reclaimlab_kernel::params::closest(key, WORKER_KEYS)
                .map(|c| format!(" (did you mean `{kind_name}.{c}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "`{key}` is not a [[worker]] key that can be set{hint}; settable keys: {}",
                WORKER_KEYS.join(", ")
            ));
        }
        let int = |v: &str| -> Result<u64, String> {
            v.parse::<u64>().map_err(|_| {
                format!("{name} = `{v}`: expected a whole number >= 0, e.g. {name}=384")
            })
        };
        let int32 = |v: &str| -> Result<u32, String> {
            let n = int(v)?;
            u32::try_from(n).map_err(|_| format!("{name} = `{v}`: at most {}", u32::MAX))
        };
        let boolean = |v: &str| -> Result<bool, String> {
            v.parse::<bool>()
                .map_err(|_| format!("{name} = `{v}`: expected true or false"))
        };
        let mut changed = 0;
        for w in self.workers.iter_mut().filter(|w| w.kind == kind) {
            match key {
                "count" => w.count = int32(value)?,
                "size_mib" => w.size_mib = int(value)?,
                "files" => w.files = int(value)?,
                "file_mib" => w.file_mib = int(value)?,
                "block_kib" => w.block_kib = int(value)?,
                "pattern" => {
                    w.pattern = match value {
                        "random" => Pattern::Random,
                        "sequential" => Pattern::Sequential,
                        _ => {
                            return Err(format!(
                                "{name} = `{value}`: expected random or sequential"
                            ))
                        }
                    }
                }
                "pages" => w.pages = int32(value)?,
                "sleep_ms" => w.sleep_ms = int(value)?,
                "sparse" => w.sparse = boolean(value)?,
                "in_warmup" => w.in_warmup = Some(boolean(value)?),
                "passes" => w.passes = int32(value)?,
                "invalidate" => w.invalidate = boolean(value)?,
                "fallocate" => w.fallocate = boolean(value)?,
                "shared" => w.shared = boolean(value)?,
                "step_mib" => w.step_mib = int32(value)?,
                "step_interval_s" => {
                    w.step_interval_s = value.parse::<f64>().map_err(|_| {
                        format!("{name} = `{value}`: expected a number of seconds, e.g. 2.5")
                    })?
                }
                "dirs" => w.dirs = int32(value)?,
                "file_size" => w.file_size = int(value)?,
                _ => unreachable!("every WORKER_KEYS entry is matched"),
            }
            changed += 1;
        }
        let file = self.name.clone();
        self.check(&file)
            .map_err(|e| format!("{name}={value}: {e}"))?;
        Ok(changed)
    }

    /// The value of `KIND.KEY` as the run record stores it (that of the
    /// first worker of the kind), if the spec has one.
    pub fn worker_key_value(&self, name: &str) -> Option<String> {
        let (kind_name, key) = name.split_once('.')?;
        let kind = WorkerKind::from_name(kind_name)?;
        let w = self.workers.iter().find(|w| w.kind == kind)?;
        Some(match key {
            "count" => w.count.to_string(),
            "size_mib" => w.size_mib.to_string(),
            "files" => w.files.to_string(),
            "file_mib" => w.file_mib.to_string(),
            "block_kib" => w.block_kib.to_string(),
            "pattern" => match w.pattern {
                Pattern::Random => "random".to_string(),
                Pattern::Sequential => "sequential".to_string(),
            },
            "pages" => w.pages.to_string(),
            "sleep_ms" => w.sleep_ms.to_string(),
            "sparse" => w.sparse.to_string(),
            "in_warmup" => w.starts_in_warmup().to_string(),
            "passes" => w.passes.to_string(),
            "invalidate" => w.invalidate.to_string(),
            "fallocate" => w.fallocate.to_string(),
            "shared" => w.shared.to_string(),
            "step_mib" => w.step_mib.to_string(),
            "step_interval_s" => w.step_interval_s.to_string(),
            "dirs" => w.dirs.to_string(),
            "file_size" => w.file_size.to_string(),
            _ => return None,
        })
    }

    /// Reads and checks a spec file.
    pub fn load(path: &str) -> Result<Spec, SpecError> {
        let text = reclaimlab_kernel::machine::read_text_capped(
            std::path::Path::new(path),
            reclaimlab_kernel::machine::MAX_TOML_BYTES,
        )
        .map_err(|err| SpecError::Io {
            file: path.into(),
            err,
        })?;
        Spec::parse(&text, path)
    }

    /// Parses and checks spec text.
    pub fn parse(text: &str, file: &str) -> Result<Spec, SpecError> {
        let mut s: Spec = toml::from_str(text).map_err(|e| {
            let msg = e.to_string();
            // An unknown `kind` already lists the accepted ones.
            let hint = if msg.contains("unknown field") || msg.contains("missing field") {
                "\na spec has `name`, `duration_s`, optional `warmup_s`, [[worker]] and optional [[cgroup]] entries; \
                 examples/workloads/mix.toml shows every worker field"
                    .to_string()
            } else {
                String::new()
            };
            SpecError::Parse {
                file: file.into(),
                msg,
                hint,
            }
        })?;
        for w in &mut s.workers {
            if w.files == FILES_UNSET {
                w.files = if w.kind == WorkerKind::FsCreate { 0 } else { 1 };
            }
        }
        s.check(file)?;
        Ok(s)
    }

    fn check(&self, file: &str) -> Result<(), SpecError> {
        if !(self.duration_s > 0.0 && self.duration_s <= 86_400.0) {
            return Err(SpecError::Bad {
                file: file.into(),
                what: format!(
                    "duration_s = {} (accepted: 0 < duration_s <= 86400)",
                    self.duration_s
                ),
            });
        }
        if !(self.warmup_s >= 0.0 && self.warmup_s <= 86_400.0) {
            return Err(SpecError::Bad {
                file: file.into(),
                what: format!("warmup_s = {} (accepted: 0..=86400)", self.warmup_s),
            });
        }
        crate::cgroups::memcg_specs(&self.cgroups, u64::MAX >> 20).map_err(|what| {
            SpecError::Bad {
                file: file.into(),
                what,
            }
        })?;
        if self.workers.is_empty() {
            return Err(SpecError::Bad {
                file: file.into(),
                what: "no [[worker]] entries".into(),
            });
        }
        for (i, w) in self.workers.iter().enumerate() {
            let bad = |what: String| {
                Err(SpecError::Invalid {
                    file: file.into(),
                    index: i + 1,
                    kind: w.kind,
                    what,
                })
            };
            if w.count == 0 || w.count > 4096 {
                return bad(format!("count = {} (accepted: 1..=4096)", w.count));
            }
            match w.kind {
                WorkerKind::AnonHog if w.size_mib == 0 => {
                    return bad("size_mib is required and must be > 0".into())
                }
                WorkerKind::FileWriter | WorkerKind::FileReader | WorkerKind::MmapFileReader => {
                    if w.file_mib == 0 || w.files == 0 {
                        return bad("files and file_mib must be > 0".into());
                    }
                    if w.block_kib < 4
                        || w.block_kib % 4 != 0
                        || w.block_kib > w.file_mib.saturating_mul(1024)
                    {
                        return bad(format!(
                            "block_kib = {} (accepted: a multiple of 4, at most the file size)",
                            w.block_kib
                        ));
                    }
                }
                WorkerKind::MmapLatency if w.pages == 0 => return bad("pages must be > 0".into()),
                WorkerKind::Mlock => {
                    if w.size_mib == 0 {
                        return bad(
                            "size_mib (how much to lock) is required and must be > 0".into()
                        );
                    }
                    if u64::from(w.step_mib) > w.size_mib {
                        return bad(format!(
                            "step_mib = {} is more than size_mib = {} (accepted: 0 = all at once, or 1..=size_mib)",
                            w.step_mib, w.size_mib
                        ));
                    }
                    if !(w.step_interval_s > 0.0 && w.step_interval_s <= 86_400.0) {
                        return bad(format!(
                            "step_interval_s = {} (accepted: 0 < step_interval_s <= 86400)",
                            w.step_interval_s
                        ));
                    }
                }
                WorkerKind::FsCreate => {
                    if w.dirs == 0 || w.dirs > MAX_FILES {
                        return bad(format!("dirs = {} (accepted: 1..={MAX_FILES})", w.dirs));
                    }
                    if w.file_size > 1 << 30 {
                        return bad(format!(
                            "file_size = {} bytes (accepted: at most 1073741824, 1 GiB)",
                            w.file_size
                        ));
                    }
                }
                _ => {}
            }
            let stepped = w.step_mib != 0 || w.step_interval_s != default_step_interval();
            if stepped && w.kind != WorkerKind::Mlock {
                return bad("step_mib and step_interval_s apply to mlock only".into());
            }
            if (w.dirs != default_dirs() || w.file_size != 0) && w.kind != WorkerKind::FsCreate {
                return bad("dirs and file_size apply to fs-create only".into());
            }
            if w.kind != WorkerKind::MmapFileReader && !w.shared {
                return bad("shared applies to mmap-file-reader only".into());
            }
            let finite_ok = w.kind == WorkerKind::MmapFileReader
                || (w.kind == WorkerKind::FileReader && w.pattern == Pattern::Sequential);
            if w.passes != 0 && !finite_ok {
                return bad(
                    "passes applies to mmap-file-reader and sequential file-reader only".into(),
                );
            }
            if let Some(c) = &w.cgroup {
                if !self.cgroups.iter().any(|g| &g.name == c) {
                    let names: Vec<&str> = self.cgroups.iter().map(|g| g.name.as_str()).collect();
                    return bad(format!(
                        "cgroup = `{c}` is not a [[cgroup]] of this spec (defined: {})",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    ));
                }
            }
            if w.file_mib > 4 << 20 {
                return bad(format!(
                    "file_mib = {} (accepted: at most 4194304, 4 TiB)",
                    w.file_mib
                ));
            }
            // Upper bounds, so that sizes multiply without overflow and no
            // value asks the simulator for more than a machine can hold (the
            // largest machine is 4 TiB); `sim` then checks the whole against
            // the host's memory.
            if w.size_mib > 4 << 20 {
                return bad(format!(
                    "size_mib = {} (accepted: 1..=4194304, 4 TiB)",
                    w.size_mib
                ));
            }
            if w.files > u64::from(MAX_FILES) && w.kind != WorkerKind::FsCreate {
                return bad(format!("files = {} (accepted: 1..={MAX_FILES})", w.files));
            }
            if w.kind == WorkerKind::FsCreate && w.files > 1 << 30 {
                return bad(format!(
                    "files = {} (accepted: 0 = endless, or at most 1073741824)",
                    w.files
                ));
            }
            if w.files * w.file_mib > 64 << 20 {
                return bad(format!(
                    "files x file_mib = {} MiB (accepted: at most 67108864, 64 TiB per worker)",
                    w.files * w.file_mib
                ));
            }
            if w.pages > MAX_PAGES {
                return bad(format!(
                    "pages = {} (accepted: 1..={MAX_PAGES}, 4 TiB of 4 KiB pages)",
                    w.pages
                ));
            }
            if w.block_kib > 1 << 20 {
                return bad(format!(
                    "block_kib = {} (accepted: at most 1048576, 1 GiB)",
                    w.block_kib
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let doc = include_str!("spec.rs");
        let start = doc.find("//! name = ").unwrap();
        let end = doc[start..].find("//! ```").unwrap() + start;
        let text: String = doc[start..end]
            .lines()
            .map(|l| l.trim_start_matches("//!").trim_start_matches(' '))
            .collect::<Vec<_>>()
            .join("\n");
        let s = Spec::parse(&text, "example.toml").unwrap();
        assert_eq!(s.workers.len(), 7);
        assert_eq!((s.workers[0].files, s.workers[6].files), (4, 0));
        assert_eq!((s.workers[5].step_mib, s.workers[6].dirs), (16, 16));
        assert!(s.workers[0].starts_in_warmup());
    }

    #[test]
    fn worker_keys_set_every_worker_of_the_kind_and_refuse_bad_input() {
        let mut s = Spec::builtin("fsmark-mlock").unwrap();
        assert_eq!(s.set_worker_key("mlock.size_mib", "384"), Ok(1));
        assert_eq!(s.worker_key_value("mlock.size_mib").as_deref(), Some("384"));
        assert_eq!(s.set_worker_key("fs-create.count", "8"), Ok(1));
        assert_eq!(
            s.workers
                .iter()
                .find(|w| w.kind == WorkerKind::FsCreate)
                .unwrap()
                .count,
            8
        );
        let err = |n: &str, v: &str| s.clone().set_worker_key(n, v).unwrap_err();
        let e = err("anon-hog.size_mib", "10");
        assert!(
            e.contains("no `anon-hog` worker") && e.contains("fs-create, mlock"),
            "{e}"
        );
        let e = err("mlok.size_mib", "10");
        assert!(!is_worker_key("mlok.size_mib"));
        assert!(
            e.contains("not a worker kind") && e.contains("mlock"),
            "{e}"
        );
        let e = err("mlock.size_mb", "10");
        assert!(e.contains("did you mean `mlock.size_mib`"), "{e}");
        let e = err("mlock.cgroup", "a");
        assert!(e.contains("settable keys"), "{e}");
        let e = err("mlock.size_mib", "lots");
        assert!(e.contains("expected a whole number"), "{e}");
        let e = err("mlock.size_mib", "-1");
        assert!(e.contains("expected a whole number"), "{e}");
        let e = err("mlock.size_mib", "0");
        assert!(e.contains("size_mib") && e.contains("> 0"), "{e}");
        let e = err("fs-create.sparse", "yes");
        assert!(e.contains("true or false"), "{e}");
        // A key of another kind is refused by the spec's own checks.
        let e = err("fs-create.step_mib", "4");
        assert!(e.contains("apply to mlock only"), "{e}");
        assert!(is_worker_key("mlock.size_mib") && !is_worker_key("vm.dirty_ratio"));
    }

    #[test]
    fn errors_name_file_line_and_fix() {
        let e = Spec::parse("name='x'\nduration_s=1\n[[worker]]\nkind='hog'\n", "w.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("w.toml") && e.contains("line 4") && e.contains("anon-hog"),
            "{e}"
        );
        let e = Spec::parse(
            "name='x'\nduration_s=1\n[[worker]]\nkind='anon-hog'\n",
            "w.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("worker #1") && e.contains("size_mib"), "{e}");
        let e = Spec::parse(
            "name='x'\nduration_s=-1\n[[worker]]\nkind='anon-hog'\nsize_mib=1\n",
            "w.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("duration_s"), "{e}");
    }
}
