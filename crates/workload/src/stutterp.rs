//! stutterp: mmtests' `pagereclaim-stutterp` workload, its parameters and sizing.
//!
//! Pure: no I/O. The simulator (`reclaimlab sim stutterp`) and the real-kernel
//! runner (`reclaimlab run stutterp`) both size the workload here, so a simulated
//! and a real run of the same machine size see the same worker mix and footprints.
//! The rules follow `shellpack_src/src/stutterp/stutterp-bench` and
//! `bin/generate-stride-range` of mmtests (see `shared/reference/mmtests-method.md`
//! §1): the total working set is (100 + dirty_ratio)% of memory, dirty_ratio% of it
//! file (fio random writers), the rest anon (memory hogs); one mmap-latency worker
//! measures the cost of faulting 128 MiB; worker counts follow the "large stride"
//! sequence from 4 to 4×CPUs (capped at 64); the warmup follows a 5 GiB `dd`
//! calibration write.
//!
//! Memory is whatever the run is sized from: MemTotal of a simulated machine, or
//! the memory cgroup limit of a real run.

use std::fmt;

/// One MiB in bytes.
pub const MIB: u64 = 1 << 20;

/// The size of mmtests' calibration write (`dd … ibs=1048576 count=5120`), MiB.
pub const CALIBRATE_MIB_MMTESTS: u64 = 5120;

/// An invalid stutterp parameter: names the parameter, the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter name (`stutterp.readers`), or the sizing input.
    pub name: String,
    /// The rejected value, as given.
    pub value: String,
    /// What would be accepted.
    pub accepted: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: `{}` is not accepted; accepted: {}",
            self.name, self.value, self.accepted
        )
    }
}

impl std::error::Error for ParamError {}

fn err(name: &str, value: impl fmt::Display, accepted: impl Into<String>) -> ParamError {
    ParamError {
        name: name.to_string(),
        value: value.to_string(),
        accepted: accepted.into(),
    }
}

/// The parameters of stutterp. Defaults are mmtests' `config-pagereclaim-stutterp-noreaders`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StutterpParams {
    /// `STUTTER_DURATION`: seconds each worker count runs after the warmup.
    pub duration_s: u64,
    /// `STUTTER_MIN_THREADS`: the first worker count.
    pub min_threads: u32,
    /// `STUTTER_MAX_THREADS`; `None` = CPUs × 4, capped at 64.
    pub max_threads: Option<u32>,
    /// An explicit list of worker counts, replacing the large-stride sequence.
    pub workers: Option<Vec<u32>>,
    /// fio file readers per step: 0 (`-noreaders`, the default) or 1.
    pub readers: u32,
    /// dirty_ratio used for sizing (`DIRTY_RATIO`); `None` = the machine's `vm.dirty_ratio`.
    pub dirty_ratio: Option<u32>,
    /// `NR_MAP_PAGES` of the mmap-latency worker (32768 = 128 MiB of 4 KiB pages).
    pub mmap_pages: u64,
    /// `MSECS_DELAY`: the mmap-latency worker's sleep per iteration, ms.
    pub sleep_ms: u64,
    /// fio `blocksize` of the writers, bytes.
    pub writer_bs: u64,
    /// Size of the calibration write, MiB (mmtests: 5120).
    pub calibrate_mib: u64,
    /// Warmup override in seconds; `None` = from the calibration time.
    pub warmup_s: Option<u64>,
    /// How big the writers' file set is: as fio runs mmtests' job file, or as
    /// the letters describe it.
    pub file_set: FileSet,
}

/// The size of the fio writers' file set.
///
/// mmtests' job file says `nrfiles=W`, `numjobs=W`, `filesize=WSS_PER_WRITER`:
/// fio's `filesize` is per file and every clone gets its own files, so the
/// writers really wrote W×W files of `WSS_FILE/W`, W×`WSS_FILE` in all
/// (`mmtests-method.md` §1.6). The cover letters describe the intent as files
/// "where the total size of the files add up to the allowed dirty_ratio".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSet {
    /// What fio did with the job file (the 2021 runs): each writer has W files
    /// of `WSS_PER_WRITER`.
    Fio,
    /// The letters' intent: each writer has W files of `WSS_PER_WRITER/W`.
    Intent,
}

impl FileSet {
    /// The name used by `--set stutterp.file_set=`.
    pub fn name(self) -> &'static str {
        match self {
            FileSet::Fio => "fio",
            FileSet::Intent => "intent",
        }
    }
}

impl Default for StutterpParams {
    fn default() -> Self {
        StutterpParams {
            duration_s: 300,
            min_threads: 4,
            max_threads: None,
            workers: None,
            readers: 0,
            dirty_ratio: None,
            mmap_pages: 32768,
            sleep_ms: 5,
            writer_bs: MIB,
            calibrate_mib: CALIBRATE_MIB_MMTESTS,
            warmup_s: None,
            file_set: FileSet::Fio,
        }
    }
}

/// Parameter names, defaults and descriptions, for `reclaimlab list params`.
const PARAMS: &[(&str, &str, &str)] = &[
    (
        "stutterp.duration_s",
        "300",
        "seconds each worker count runs after the warmup (STUTTER_DURATION), 1..=86400",
    ),
    (
        "stutterp.min_threads",
        "4",
        "first worker count of the large-stride sequence, 1..=4096",
    ),
    (
        "stutterp.max_threads",
        "auto",
        "last worker count; auto = CPUs x 4, capped at 64; 1..=4096",
    ),
    (
        "stutterp.workers",
        "auto",
        "explicit comma-separated worker counts (e.g. 4,8), replacing the sequence",
    ),
    (
        "stutterp.readers",
        "0",
        "fio file readers per step: 0 (pagereclaim-stutterp-noreaders) or 1",
    ),
    (
        "stutterp.dirty_ratio",
        "auto",
        "dirty ratio used for sizing, 1..=100; auto = the machine's vm.dirty_ratio",
    ),
    (
        "stutterp.mmap_pages",
        "32768",
        "pages the mmap-latency worker maps and writes per iteration, 1..=16777216",
    ),
    (
        "stutterp.sleep_ms",
        "5",
        "mmap-latency sleep per iteration in ms, subtracted from each sample, 0..=10000",
    ),
    (
        "stutterp.writer_bs",
        "1048576",
        "fio block size of the file writers in bytes, 4096..=67108864",
    ),
    (
        "stutterp.calibrate_mib",
        "5120",
        "size of the dd calibration write in MiB (warmup = its time scaled to 5120 MiB, +1 +5 s)",
    ),
    (
        "stutterp.warmup_s",
        "auto",
        "writer-only warmup in seconds, 0..=3600; auto = from the calibration write",
    ),
    (
        "stutterp.file_set",
        "fio",
        "writers' file set: fio = as fio ran the job file (each writer W files of WSS_FILE/W, W x WSS_FILE in all); intent = WSS_FILE in all, as the letters describe it",
    ),
];

fn parse_u64(name: &str, value: &str, lo: u64, hi: u64) -> Result<u64, ParamError> {
    let accepted = format!("an integer in {lo}..={hi}");
    let v: u64 = value
        .trim()
        .parse()
        .map_err(|_| err(name, value, accepted.clone()))?;
    if v < lo || v > hi {
        return Err(err(name, value, accepted));
    }
    Ok(v)
}

fn is_auto(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("auto")
}

impl StutterpParams {
    /// The parameter table: (name, default, description).
    pub fn list() -> Vec<(&'static str, String, &'static str)> {
        PARAMS
            .iter()
            .map(|(n, d, s)| (*n, d.to_string(), *s))
            .collect()
    }

    /// Whether `name` is a stutterp parameter.
    pub fn is_param(name: &str) -> bool {
        PARAMS.iter().any(|(n, _, _)| *n == name)
    }

    /// Sets one parameter by its `stutterp.*` name (as from `--set K=V`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        match name {
            "stutterp.duration_s" => self.duration_s = parse_u64(name, value, 1, 86_400)?,
            "stutterp.min_threads" => self.min_threads = parse_u64(name, value, 1, 4096)? as u32,
            "stutterp.max_threads" => {
                self.max_threads = if is_auto(value) {
                    None
                } else {
                    Some(parse_u64(name, value, 1, 4096)? as u32)
                }
            }
            "stutterp.workers" => {
                self.workers = if is_auto(value) {
                    None
                } else {
                    let accepted = "auto, or a comma-separated list of integers in 1..=4096";
                    let mut list = Vec::new();
                    for part in value.split(',') {
                        let n: u32 = part
                            .trim()
                            .parse()
                            .map_err(|_| err(name, value, accepted))?;
                        if !(1..=4096).contains(&n) {
                            return Err(err(name, value, accepted));
                        }
                        list.push(n);
                    }
                    Some(list)
                }
            }
            "stutterp.readers" => {
                self.readers = match value.trim() {
                    "0" => 0,
                    "1" => 1,
                    _ => return Err(err(name, value, "0 or 1")),
                }
            }
            "stutterp.dirty_ratio" => {
                self.dirty_ratio = if is_auto(value) {
                    None
                } else {
                    Some(parse_u64(name, value, 1, 100)? as u32)
                }
            }
            "stutterp.mmap_pages" => self.mmap_pages = parse_u64(name, value, 1, 1 << 24)?,
            "stutterp.sleep_ms" => self.sleep_ms = parse_u64(name, value, 0, 10_000)?,
            "stutterp.writer_bs" => self.writer_bs = parse_u64(name, value, 4096, 64 * MIB)?,
            "stutterp.calibrate_mib" => self.calibrate_mib = parse_u64(name, value, 1, 1 << 20)?,
            "stutterp.warmup_s" => {
                self.warmup_s = if is_auto(value) {
                    None
                } else {
                    Some(parse_u64(name, value, 0, 3600)?)
                }
            }
            "stutterp.file_set" => {
                self.file_set = match value.trim() {
                    "fio" => FileSet::Fio,
                    "intent" => FileSet::Intent,
                    _ => return Err(err(name, value, "fio or intent")),
                }
            }
            _ => {
                let names: Vec<&str> = PARAMS.iter().map(|p| p.0).collect();
                return Err(err(
                    "stutterp parameter",
                    name,
                    format!("one of {}", names.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The current value of one parameter, as a string (`auto` for unset optional ones).
    pub fn get(&self, name: &str) -> Option<String> {
        let opt = |o: Option<u64>| o.map_or("auto".to_string(), |v| v.to_string());
        Some(match name {
            "stutterp.duration_s" => self.duration_s.to_string(),
            "stutterp.min_threads" => self.min_threads.to_string(),
            "stutterp.max_threads" => opt(self.max_threads.map(u64::from)),
            "stutterp.workers" => match &self.workers {
                None => "auto".to_string(),
                Some(l) => l
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            },
            "stutterp.readers" => self.readers.to_string(),
            "stutterp.dirty_ratio" => opt(self.dirty_ratio.map(u64::from)),
            "stutterp.mmap_pages" => self.mmap_pages.to_string(),
            "stutterp.sleep_ms" => self.sleep_ms.to_string(),
            "stutterp.writer_bs" => self.writer_bs.to_string(),
            "stutterp.calibrate_mib" => self.calibrate_mib.to_string(),
            "stutterp.warmup_s" => opt(self.warmup_s),
            "stutterp.file_set" => self.file_set.name().to_string(),
            _ => return None,
        })
    }

    /// Every parameter with its current value, names sorted (for `run.json` `params`).
    pub fn to_params(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = PARAMS
            .iter()
            .map(|(n, _, _)| (n.to_string(), self.get(n).unwrap_or_default()))
            .collect();
        v.sort();
        v
    }

    /// `STUTTER_MAX_THREADS` for a machine with `cpus` logical CPUs.
    pub fn max_threads_for(&self, cpus: u32) -> u32 {
        self.max_threads
            .unwrap_or_else(|| cpus.max(1).saturating_mul(4).min(64))
    }

    /// The worker counts (steps) of the run on a machine with `cpus` logical CPUs.
    pub fn worker_counts(&self, cpus: u32) -> Result<Vec<u32>, ParamError> {
        if let Some(list) = &self.workers {
            return Ok(list.clone());
        }
        let max = self.max_threads_for(cpus);
        if max < self.min_threads {
            return Err(err(
                "stutterp.max_threads",
                max,
                format!("a value >= stutterp.min_threads ({})", self.min_threads),
            ));
        }
        Ok(gen_large(self.min_threads, max))
    }

    /// The dirty ratio for sizing: the parameter if set, else the machine's `vm.dirty_ratio`.
    pub fn effective_dirty_ratio(&self, machine_dirty_ratio: u32) -> u32 {
        self.dirty_ratio.unwrap_or(machine_dirty_ratio)
    }

    /// The working-set sizing for `memory_bytes` of memory (MemTotal, or a cgroup limit).
    pub fn sizing(
        &self,
        memory_bytes: u64,
        machine_dirty_ratio: u32,
    ) -> Result<Sizing, ParamError> {
        sizing(
            memory_bytes,
            self.effective_dirty_ratio(machine_dirty_ratio),
        )
    }

    /// The plan of one step with `threads` workers: split and per-worker footprints.
    pub fn step(&self, sizing: &Sizing, threads: u32) -> Result<StepPlan, ParamError> {
        let split = WorkerSplit::new(threads, self.readers);
        let wss_per_writer_mib = sizing.wss_file_mib / u64::from(split.writers);
        let wss_per_memhog_mib = sizing.wss_anon_mib / u64::from(split.hogs);
        let too_small = |what: &str| {
            err(
                "memory size",
                format!("{} MiB", sizing.memory_bytes / MIB),
                format!(
                    "enough memory for at least 1 MiB per {what} at {threads} workers \
                     (give a larger --memory, or fewer stutterp.workers)"
                ),
            )
        };
        if wss_per_writer_mib == 0 {
            return Err(too_small("file writer"));
        }
        if wss_per_memhog_mib == 0 {
            return Err(too_small("memory hog"));
        }
        Ok(StepPlan {
            split,
            wss_per_writer_mib,
            wss_per_memhog_mib,
        })
    }

    /// The size of each writer file in MiB (fio's `filesize`): `WSS_PER_WRITER`
    /// as fio ran mmtests' job file, or `WSS_PER_WRITER / W` for the letters'
    /// intent (`stutterp.file_set`).
    pub fn writer_file_mib(&self, plan: &StepPlan) -> u64 {
        match self.file_set {
            FileSet::Fio => plan.wss_per_writer_mib,
            FileSet::Intent => (plan.wss_per_writer_mib / u64::from(plan.split.writers)).max(1),
        }
    }

    /// The writer-only warmup in seconds, given the calibration write's elapsed time.
    ///
    /// mmtests: `ELASPED = int(secs) + 1`, `WARMUP = ELASPED + 5`, for a 5120 MiB
    /// write. A smaller calibration write is scaled linearly to 5120 MiB first.
    pub fn warmup_from_calibration(&self, calibration_s: f64) -> u64 {
        if let Some(w) = self.warmup_s {
            return w;
        }
        let scaled = calibration_s.max(0.0) * CALIBRATE_MIB_MMTESTS as f64
            / self.calibrate_mib.max(1) as f64;
        warmup_s(scaled)
    }

    /// fio's `runtime=` for a given warmup: `WARMUP + STUTTER_DURATION`.
    pub fn runtime_s(&self, warmup_s: u64) -> u64 {
        warmup_s + self.duration_s
    }

    /// The mmap-latency worker's mapping size in bytes, for a page size.
    pub fn mmap_bytes(&self, page_size: u64) -> u64 {
        self.mmap_pages * page_size
    }
}

/// mmtests' warmup rule for a 5120 MiB calibration time: `int(secs) + 1 + 5`.
pub fn warmup_s(calibration_s: f64) -> u64 {
    calibration_s.max(0.0).floor() as u64 + 1 + 5
}

/// One mmap-latency sample in µs, from one iteration's time in ns: the sleep is
/// subtracted and the result clamped at 0 (the 2021 `mmap-latency.c`).
pub fn mmap_latency_sample_us(iteration_ns: u64, sleep_ms: u64) -> f64 {
    iteration_ns.saturating_sub(sleep_ms * 1_000_000) as f64 / 1000.0
}

/// `gen_large` of mmtests' `bin/generate-stride-range --stride-large`.
///
/// If max > 32: `seq min 3 8`, `seq 12 9 32`, `seq 48 31 max`, then max.
/// Else if max > 8: `seq min 2 8`, `seq 12 6 max`, then max.
/// Else: `seq min 2 max`, then max. Duplicates are dropped, order kept.
pub fn gen_large(min: u32, max: u32) -> Vec<u32> {
    fn seq(out: &mut Vec<u32>, from: u32, step: u32, to: u32) {
        let mut v = from;
        while v <= to {
            out.push(v);
            v += step;
        }
    }
    let mut out = Vec::new();
    if max > 32 {
        seq(&mut out, min, 3, 8);
        seq(&mut out, 12, 9, 32);
        seq(&mut out, 48, 31, max);
    } else if max > 8 {
        seq(&mut out, min, 2, 8);
        seq(&mut out, 12, 6, max);
    } else {
        seq(&mut out, min, 2, max);
    }
    out.push(max);
    let mut seen = Vec::new();
    out.retain(|v| {
        if *v < min || *v > max || seen.contains(v) {
            false
        } else {
            seen.push(*v);
            true
        }
    });
    out
}

/// The working set of a stutterp run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    /// The memory sized from (MemTotal or the cgroup limit), bytes.
    pub memory_bytes: u64,
    /// The dirty ratio used (`DIRTY_RATIO` = `STUTTER_FILE_PERCENTAGE`).
    pub dirty_ratio: u32,
    /// `STUTTER_SIZE = memory × (100 + dirty_ratio) / 100`, bytes.
    pub stutter_size: u64,
    /// `WSS_FILE = STUTTER_SIZE × dirty_ratio / 100`, in MiB (truncated).
    pub wss_file_mib: u64,
    /// `WSS_ANON = STUTTER_SIZE − WSS_FILE`, in MiB (truncated).
    pub wss_anon_mib: u64,
}

/// Sizes stutterp for `memory_bytes` of memory and a dirty ratio (1..=100).
pub fn sizing(memory_bytes: u64, dirty_ratio: u32) -> Result<Sizing, ParamError> {
    if !(1..=100).contains(&dirty_ratio) {
        return Err(err(
            "stutterp.dirty_ratio",
            dirty_ratio,
            "an integer in 1..=100 (set it with --set stutterp.dirty_ratio=N)",
        ));
    }
    if memory_bytes < 16 * MIB {
        return Err(err(
            "memory size",
            format!("{memory_bytes} bytes"),
            "at least 16 MiB",
        ));
    }
    let m = u128::from(memory_bytes);
    let stutter_size = m * u128::from(100 + dirty_ratio) / 100;
    let wss_file = stutter_size * u128::from(dirty_ratio) / 100;
    let wss_anon = stutter_size - wss_file;
    Ok(Sizing {
        memory_bytes,
        dirty_ratio,
        stutter_size: stutter_size as u64,
        wss_file_mib: (wss_file / u128::from(MIB)) as u64,
        wss_anon_mib: (wss_anon / u128::from(MIB)) as u64,
    })
}

/// How one worker count T is split between the worker types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerSplit {
    /// T, the worker count of the step.
    pub threads: u32,
    /// W: fio random writers (`NR_FILE_WRITERS`).
    pub writers: u32,
    /// H: anon memory hogs (`NR_ANON_HOGS`).
    pub hogs: u32,
    /// R: fio random readers (`NR_FILE_READERS`), 0 or 1.
    pub readers: u32,
    /// L: mmap-latency workers (`NR_ANON_LATENCY`), always 1.
    pub latency: u32,
}

impl WorkerSplit {
    /// `W = ⌊(T−R−L)/2⌋`, `H = T−W−R−L`, then W and H forced to at least 1.
    pub fn new(threads: u32, readers: u32) -> WorkerSplit {
        let latency = 1u32;
        let rest = threads.saturating_sub(readers + latency);
        let writers = rest / 2;
        let hogs = threads.saturating_sub(writers + readers + latency);
        WorkerSplit {
            threads,
            writers: writers.max(1),
            hogs: hogs.max(1),
            readers,
            latency,
        }
    }
}

/// One step of the run: the split and the per-worker footprints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPlan {
    /// The worker split.
    pub split: WorkerSplit,
    /// `WSS_PER_WRITER = WSS_FILE / W`, MiB (fio `filesize`).
    pub wss_per_writer_mib: u64,
    /// `WSS_PER_MEMHOG = WSS_ANON / H`, MiB (each hog's mapping).
    pub wss_per_memhog_mib: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gen_large_matches_mmtests_table() {
        let p = StutterpParams::default();
        let rows: &[(u32, &[u32])] = &[
            (2, &[4, 6, 8]),
            (4, &[4, 6, 8, 12, 16]),
            (8, &[4, 6, 8, 12, 18, 24, 30, 32]),
            (12, &[4, 7, 12, 21, 30, 48]),
            (16, &[4, 7, 12, 21, 30, 48, 64]),
            (32, &[4, 7, 12, 21, 30, 48, 64]),
            (128, &[4, 7, 12, 21, 30, 48, 64]),
        ];
        for (cpus, want) in rows {
            assert_eq!(
                p.worker_counts(*cpus).unwrap(),
                want.to_vec(),
                "{cpus} CPUs"
            );
        }
        assert_eq!(gen_large(4, 4), vec![4]);
        assert_eq!(gen_large(4, 12), vec![4, 6, 8, 12]);
        assert_eq!(gen_large(4, 40), vec![4, 7, 12, 21, 30, 40]);
    }

    #[test]
    fn max_threads_is_cpus_times_four_capped() {
        let p = StutterpParams::default();
        assert_eq!(p.max_threads_for(1), 4);
        assert_eq!(p.max_threads_for(2), 8);
        assert_eq!(p.max_threads_for(16), 64);
        assert_eq!(p.max_threads_for(96), 64);
    }

    #[test]
    fn split_matches_noreaders_table() {
        for (t, w, h) in [
            (4, 1, 2),
            (7, 3, 3),
            (12, 5, 6),
            (21, 10, 10),
            (30, 14, 15),
            (48, 23, 24),
            (64, 31, 32),
        ] {
            let s = WorkerSplit::new(t, 0);
            assert_eq!(
                (s.writers, s.hogs, s.readers, s.latency),
                (w, h, 0, 1),
                "T={t}"
            );
        }
        let s = WorkerSplit::new(4, 1);
        assert_eq!((s.writers, s.hogs), (1, 1));
        // Forced to at least one each.
        let s = WorkerSplit::new(2, 1);
        assert_eq!((s.writers, s.hogs), (1, 1));
    }

    #[test]
    fn sizing_of_one_gib_at_dirty_ratio_20() {
        let s = sizing(1 << 30, 20).unwrap();
        assert_eq!(s.stutter_size, (1u64 << 30) * 120 / 100);
        assert_eq!(s.wss_file_mib, 245); // 245.76
        assert_eq!(s.wss_anon_mib, 983); // 983.04
        let p = StutterpParams::default();
        let step = p.step(&s, 4).unwrap();
        assert_eq!(step.wss_per_writer_mib, 245);
        assert_eq!(step.wss_per_memhog_mib, 491);
        // File ≈ 0.24 × RAM, anon ≈ 0.96 × RAM.
        let s = sizing(100 * 1024 * MIB, 20).unwrap();
        assert_eq!(s.wss_file_mib, 24576);
        assert_eq!(s.wss_anon_mib, 98304);
    }

    #[test]
    fn sizing_rejects_bad_inputs() {
        let e = sizing(1 << 30, 0).unwrap_err();
        assert_eq!(e.name, "stutterp.dirty_ratio");
        assert!(e.to_string().contains("1..=100"));
        assert!(sizing(1 << 20, 20).is_err());
        let s = sizing(16 * MIB, 1).unwrap();
        let e = StutterpParams::default().step(&s, 64).unwrap_err();
        assert!(e.to_string().contains("file writer"), "{e}");
    }

    #[test]
    fn warmup_rule() {
        assert_eq!(warmup_s(0.0), 6);
        assert_eq!(warmup_s(9.99), 15);
        assert_eq!(warmup_s(10.0), 16);
        let mut p = StutterpParams::default();
        assert_eq!(p.warmup_from_calibration(3.2), 9);
        p.calibrate_mib = 512; // a tenth of 5 GiB: 2.5 s scales to 25 s
        assert_eq!(p.warmup_from_calibration(2.5), 31);
        p.warmup_s = Some(3);
        assert_eq!(p.warmup_from_calibration(100.0), 3);
        assert_eq!(p.runtime_s(3), 303);
    }

    #[test]
    fn mmap_sample_subtracts_sleep() {
        assert_eq!(mmap_latency_sample_us(25_000_000, 5), 20_000.0);
        assert_eq!(mmap_latency_sample_us(4_000_000, 5), 0.0);
        assert_eq!(mmap_latency_sample_us(5_000_500, 5), 0.5);
    }

    #[test]
    fn set_get_and_errors() {
        let mut p = StutterpParams::default();
        p.set("stutterp.duration_s", "40").unwrap();
        p.set("stutterp.workers", "4, 6").unwrap();
        p.set("stutterp.readers", "1").unwrap();
        p.set("stutterp.dirty_ratio", "10").unwrap();
        p.set("stutterp.warmup_s", "5").unwrap();
        assert_eq!(p.duration_s, 40);
        assert_eq!(p.worker_counts(2).unwrap(), vec![4, 6]);
        assert_eq!(p.get("stutterp.workers").unwrap(), "4,6");
        assert_eq!(p.effective_dirty_ratio(20), 10);
        p.set("stutterp.dirty_ratio", "auto").unwrap();
        assert_eq!(p.effective_dirty_ratio(20), 20);

        let e = p.set("stutterp.readers", "2").unwrap_err();
        assert_eq!(
            e.to_string(),
            "stutterp.readers: `2` is not accepted; accepted: 0 or 1"
        );
        let e = p.set("stutterp.duration_s", "0").unwrap_err();
        assert!(e.to_string().contains("1..=86400"));
        let e = p.set("stutterp.workers", "4,x").unwrap_err();
        assert_eq!(e.name, "stutterp.workers");
        let e = p.set("stutterp.nope", "1").unwrap_err();
        assert!(e.to_string().contains("stutterp.duration_s"));

        let mut q = StutterpParams::default();
        q.set("stutterp.min_threads", "10").unwrap();
        q.set("stutterp.max_threads", "8").unwrap();
        assert!(q.worker_counts(2).is_err());
    }

    #[test]
    fn list_covers_every_settable_name() {
        let p = StutterpParams::default();
        let params = p.to_params();
        assert_eq!(params.len(), StutterpParams::list().len());
        for (name, default, _) in StutterpParams::list() {
            assert_eq!(p.get(name).unwrap(), default, "{name}");
            let mut q = StutterpParams::default();
            q.set(name, &default).unwrap();
            assert_eq!(q, p, "{name}");
        }
    }
}
