//! What each step of a real run starts: the fio job (file writers and readers)
//! and reclaimlab's own workers, before and after the warmup.
//!
//! Both workload sources become the same plan: stutterp (sized from the memory
//! limit, one step per worker count, job files as mmtests writes them) and a
//! generic TOML workload spec (`crates/workload/src/spec.rs`, one step numbered
//! 1, its file workers as fio jobs and its anon/mmap workers as our own).

use reclaimlab_workload::spec::{Pattern, Spec, WorkerKind, WorkerSpec};
use reclaimlab_workload::stutterp::{StepPlan, StutterpParams, MIB};

use crate::fio;

/// One of reclaimlab's own worker processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proc {
    /// `reclaimlab worker memory-hog BYTES`.
    Hog {
        /// Mapping size.
        bytes: u64,
    },
    /// `reclaimlab worker mmap-latency`.
    MmapLatency {
        /// Pages per iteration.
        pages: u64,
        /// Sleep per iteration, ms.
        sleep_ms: u64,
    },
    /// `reclaimlab worker mlock` (fsworkers.rs).
    Mlock {
        /// Bytes to lock in all.
        bytes: u64,
        /// Bytes per step (0: all at once).
        step_bytes: u64,
        /// Time between steps, ms.
        interval_ms: u64,
    },
    /// `reclaimlab worker fs-create` on the run's filesystem image.
    FsCreate {
        /// Directories.
        dirs: u32,
        /// Files per process (0: endless).
        files: u64,
        /// Bytes per file.
        file_size: u64,
        /// Process number (file names), from 0.
        index: u32,
    },
    /// `reclaimlab worker mmap-file-reader` (workers.rs): one byte per
    /// page of its files through a shared read-only mapping with
    /// `MADV_RANDOM`, as Johannes Weiner's mapped-file-stream.c; the
    /// runner makes the files first (step.rs).
    MmapFileReader {
        /// The spec worker (0-based), which names its files.
        worker: usize,
        /// This process among the worker's `count`, from 0.
        index: u32,
        /// Files per process (or per worker, if `shared`).
        files: u64,
        /// Bytes per file.
        file_bytes: u64,
        /// Holes only: every fault zero-fills, no device read.
        sparse: bool,
        /// Random pages (with repeats, a file's page count per pass) rather
        /// than in order.
        random: bool,
        /// Passes before it exits (0: until the step ends).
        passes: u32,
        /// Every process maps the worker's one set of files.
        shared: bool,
        /// The spec device its files live on (`None`: the data directory).
        device: Option<String>,
    },
}

/// How the fio job of a step is written, given the warmup in seconds.
#[derive(Debug, Clone)]
pub enum FioJob {
    /// mmtests' stutterp job file.
    Stutterp(StutterpParams, StepPlan),
    /// One `[[worker]]` of a TOML spec (its 0-based index), a fio process of its own.
    SpecWorker(WorkerSpec, usize),
}

impl FioJob {
    /// The job file text for a warmup of `warmup_s` and a measured `duration_s`.
    pub fn text(&self, warmup_s: u64, duration_s: u64) -> String {
        match self {
            FioJob::Stutterp(p, plan) => fio::stutterp_job_file(p, plan, warmup_s + duration_s),
            FioJob::SpecWorker(w, i) => {
                let runtime = if w.starts_in_warmup() {
                    warmup_s + duration_s
                } else {
                    duration_s
                };
                worker_job_file(w, *i, runtime)
            }
        }
    }
}

/// One fio process of a step, and where it runs.
#[derive(Debug, Clone)]
pub struct FioProc {
    /// Its job file.
    pub job: FioJob,
    /// A label (`fio` for stutterp, the job name `writer-1` for a spec worker).
    pub label: String,
    /// The spec cgroup it joins (`None`: the run's cgroup).
    pub cgroup: Option<String>,
    /// The spec device its files live on (`None`: the data directory).
    pub device: Option<String>,
    /// Starts with the warmup (else after it).
    pub early: bool,
    /// Ends on its own (`passes` of a sequential reader): the step ends when
    /// every finite process has, and its elapsed time is a sample.
    pub finite: bool,
}

/// One of reclaimlab's own workers and the spec cgroup it joins.
pub type Placed = (Proc, Option<String>);

/// One step of a real run.
#[derive(Debug, Clone)]
pub struct StepWork {
    /// Step number (stutterp: the worker count; a spec: 1).
    pub step: u32,
    /// A line for the user.
    pub describe: String,
    /// The fio processes (stutterp: one; a spec: one per file worker).
    pub fio: Vec<FioProc>,
    /// Disk space the fio files take (in the data directory).
    pub disk_bytes: u64,
    /// Started with fio, at the start of the warmup.
    pub early: Vec<Placed>,
    /// Started after the warmup.
    pub late: Vec<Placed>,
}

impl StepWork {
    /// Whether the step needs a filesystem image (an fs-create worker).
    pub fn needs_fs_image(&self) -> bool {
        self.early
            .iter()
            .chain(&self.late)
            .any(|p| matches!(p.0, Proc::FsCreate { .. }))
    }
}

/// The steps of stutterp for `plans` (one per worker count).
pub fn stutterp_steps(
    params: &StutterpParams,
    counts: &[u32],
    plans: &[StepPlan],
) -> Vec<StepWork> {
    counts
        .iter()
        .zip(plans)
        .map(|(t, plan)| {
            let mut late: Vec<Placed> = (0..plan.split.hogs)
                .map(|_| {
                    (
                        Proc::Hog {
                            bytes: plan.wss_per_memhog_mib * MIB,
                        },
                        None,
                    )
                })
                .collect();
            late.push((
                Proc::MmapLatency {
                    pages: params.mmap_pages,
                    sleep_ms: params.sleep_ms,
                },
                None,
            ));
            StepWork {
                step: *t,
                describe: format!(
                    "{} writer(s) of {} MiB, {} hog(s) of {} MiB, {} reader(s), 1 mmap-latency",
                    plan.split.writers,
                    plan.wss_per_writer_mib,
                    plan.split.hogs,
                    plan.wss_per_memhog_mib,
                    plan.split.readers
                ),
                fio: vec![FioProc {
                    job: FioJob::Stutterp(params.clone(), *plan),
                    label: "fio".into(),
                    cgroup: None,
                    device: None,
                    early: true,
                    finite: false,
                }],
                disk_bytes: fio::stutterp_disk_bytes(params, plan),
                early: Vec::new(),
                late,
            }
        })
        .collect()
}

/// The single step of a TOML workload spec (every worker kind has a real
/// counterpart).
pub fn spec_step(spec: &Spec) -> StepWork {
    let mut early = Vec::new();
    let mut late = Vec::new();
    let mut fio_procs = Vec::new();
    let mut disk = 0;
    let mut parts = Vec::new();
    for (i, w) in spec.workers.iter().enumerate() {
        let list = if w.starts_in_warmup() {
            &mut early
        } else {
            &mut late
        };
        let at = w
            .cgroup
            .as_ref()
            .map(|c| format!(" in {c}"))
            .unwrap_or_default();
        match w.kind {
            WorkerKind::AnonHog => {
                for _ in 0..w.count {
                    list.push((
                        Proc::Hog {
                            bytes: w.size_mib * MIB,
                        },
                        w.cgroup.clone(),
                    ));
                }
                parts.push(format!("{} anon-hog(s) of {} MiB{at}", w.count, w.size_mib));
            }
            WorkerKind::MmapLatency => {
                for _ in 0..w.count {
                    list.push((
                        Proc::MmapLatency {
                            pages: u64::from(w.pages),
                            sleep_ms: w.sleep_ms,
                        },
                        w.cgroup.clone(),
                    ));
                }
                parts.push(format!("{} mmap-latency{at}", w.count));
            }
            WorkerKind::Mlock => {
                for _ in 0..w.count {
                    list.push((
                        Proc::Mlock {
                            bytes: w.size_mib * MIB,
                            step_bytes: u64::from(w.step_mib) * MIB,
                            interval_ms: (w.step_interval_s * 1000.0) as u64,
                        },
                        w.cgroup.clone(),
                    ));
                }
                parts.push(format!(
                    "{} mlock of {} MiB{}",
                    w.count,
                    w.size_mib,
                    if w.step_mib > 0 {
                        format!(" in {} MiB steps every {} s", w.step_mib, w.step_interval_s)
                    } else {
                        String::new()
                    }
                ));
            }
            WorkerKind::FsCreate => {
                for i in 0..w.count {
                    list.push((
                        Proc::FsCreate {
                            dirs: w.dirs,
                            files: w.files,
                            file_size: w.file_size,
                            index: i,
                        },
                        w.cgroup.clone(),
                    ));
                }
                parts.push(format!(
                    "{} fs-create over {} dirs ({} files each, {} bytes)",
                    w.count,
                    w.dirs,
                    if w.files == 0 {
                        "endless".to_string()
                    } else {
                        w.files.to_string()
                    },
                    w.file_size
                ));
            }
            WorkerKind::MmapFileReader => {
                let sets = if w.shared { 1 } else { u64::from(w.count) };
                if w.device.is_none() && !w.sparse {
                    disk += sets * w.files * w.file_mib * MIB;
                }
                for index in 0..w.count {
                    list.push((
                        Proc::MmapFileReader {
                            worker: i,
                            index,
                            files: w.files,
                            file_bytes: w.file_mib * MIB,
                            sparse: w.sparse,
                            random: w.pattern == Pattern::Random,
                            passes: w.passes,
                            shared: w.shared,
                            device: w.device.clone(),
                        },
                        w.cgroup.clone(),
                    ));
                }
                parts.push(format!(
                    "{} mmap-file-reader(s) of {} {}file(s) of {} MiB{}, {}, {}{at}",
                    w.count,
                    w.files,
                    if w.sparse { "sparse " } else { "" },
                    w.file_mib,
                    if w.shared && w.count > 1 {
                        " shared"
                    } else {
                        ""
                    },
                    if w.pattern == Pattern::Random {
                        "random pages"
                    } else {
                        "in order"
                    },
                    if w.passes == 0 {
                        "endless".to_string()
                    } else {
                        format!("{} pass(es)", w.passes)
                    }
                ));
            }
            WorkerKind::FileWriter | WorkerKind::FileReader => {
                if w.device.is_none() {
                    disk += u64::from(w.count) * w.files * w.file_mib * MIB;
                }
                let label = crate::disks::job_name(w.kind, i);
                parts.push(format!(
                    "{label}: {} x {} file(s) of {} MiB{at}{} (fio)",
                    w.count,
                    w.files,
                    w.file_mib,
                    w.device
                        .as_ref()
                        .map(|d| format!(" on {d}"))
                        .unwrap_or_default()
                ));
                fio_procs.push(FioProc {
                    job: FioJob::SpecWorker(w.clone(), i),
                    label,
                    cgroup: w.cgroup.clone(),
                    device: w.device.clone(),
                    early: w.starts_in_warmup(),
                    finite: w.is_finite(),
                });
            }
        }
    }
    StepWork {
        step: 1,
        describe: parts.join(", "),
        fio: fio_procs,
        disk_bytes: disk,
        early,
        late,
    }
}

/// The fio job file of one spec worker (index `i`, 0-based): buffered
/// libaio like stutterp's, named `writer-N`/`reader-N` (so its files are
/// `NAME.JOB.FILE`). Endless workers run `runtime_s`; a finite one
/// (`passes` of a sequential reader) reads its files `passes` times and
/// exits, `runtime_s` being only a cap.
pub fn worker_job_file(w: &WorkerSpec, i: usize, runtime_s: u64) -> String {
    let rw = match (w.kind, w.pattern) {
        (WorkerKind::FileWriter, Pattern::Random) => "randwrite",
        (WorkerKind::FileWriter, Pattern::Sequential) => "write",
        (_, Pattern::Random) => "randread",
        (_, Pattern::Sequential) => "read",
    };
    // The spec's `invalidate` (fio's own default, 1): fadvise(DONTNEED) per pass.
    let mut s = format!(
        "[global]\ndirect=0\nioengine=libaio\ninvalidate={}\n",
        u8::from(w.invalidate)
    );
    if w.is_finite() {
        s.push_str(&format!("loops={}\n", w.passes));
    } else {
        s.push_str("time_based\n");
    }
    s.push_str(&format!(
        "runtime={runtime_s}\n\n[{name}]\nreadwrite={rw}\nblocksize={bs}\nnrfiles={f}\nnumjobs={c}\nfilesize={m}m\n",
        name = crate::disks::job_name(w.kind, i),
        bs = w.block_kib * 1024,
        f = w.files,
        c = w.count,
        m = w.file_mib,
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "name = \"mix\"\nduration_s = 30\nwarmup_s = 5\n\
        [[worker]]\nkind = \"file-writer\"\ncount = 2\nfiles = 4\nfile_mib = 64\n\
        [[worker]]\nkind = \"anon-hog\"\ncount = 2\nsize_mib = 200\n\
        [[worker]]\nkind = \"file-reader\"\nfiles = 8\nfile_mib = 32\nblock_kib = 4\npattern = \"sequential\"\n\
        [[worker]]\nkind = \"mmap-latency\"\npages = 1024\n";

    #[test]
    fn spec_becomes_one_step() {
        let spec = Spec::parse(SPEC, "mix.toml").unwrap();
        let st = spec_step(&spec);
        assert_eq!(st.step, 1);
        assert!(st.early.is_empty());
        assert_eq!(
            st.late,
            vec![
                (Proc::Hog { bytes: 200 * MIB }, None),
                (Proc::Hog { bytes: 200 * MIB }, None),
                (
                    Proc::MmapLatency {
                        pages: 1024,
                        sleep_ms: 5
                    },
                    None
                )
            ]
        );
        assert_eq!(st.disk_bytes, (2 * 4 * 64 + 8 * 32) * MIB);
        assert_eq!(st.fio.len(), 2);
        assert!(st.fio[0].early && !st.fio[1].early);
        assert_eq!(st.fio[1].label, "reader-3");
        assert_eq!(
            st.fio[0].job.text(5, 30),
            "[global]\ndirect=0\nioengine=libaio\ninvalidate=1\ntime_based\nruntime=35\n\
             \n[writer-1]\nreadwrite=randwrite\nblocksize=1048576\nnrfiles=4\nnumjobs=2\nfilesize=64m\n"
        );
        assert_eq!(
            st.fio[1].job.text(5, 30),
            "[global]\ndirect=0\nioengine=libaio\ninvalidate=1\ntime_based\nruntime=30\n\
             \n[reader-3]\nreadwrite=read\nblocksize=4096\nnrfiles=8\nnumjobs=1\nfilesize=32m\n"
        );
    }

    /// The built-in mapped-file-stream: one reader of its own sparse 4 GiB
    /// file, after the warmup, finite; no disk space (holes); a shared
    /// worker of two processes and written files needs one set of blocks.
    #[test]
    fn mapped_file_stream_is_a_real_worker() {
        let spec = Spec::builtin("mapped-file-stream").unwrap();
        let st = spec_step(&spec);
        assert!(st.fio.is_empty() && st.early.is_empty());
        assert_eq!(
            st.late,
            vec![(
                Proc::MmapFileReader {
                    worker: 0,
                    index: 0,
                    files: 1,
                    file_bytes: 4096 * MIB,
                    sparse: true,
                    random: false,
                    passes: 1,
                    shared: false,
                    device: None,
                },
                None
            )]
        );
        assert_eq!(st.disk_bytes, 0);
        let shared = Spec::parse(
            "name = \"s\"\nduration_s = 30\n[[worker]]\nkind = \"mmap-file-reader\"\n\
             count = 2\nfiles = 3\nfile_mib = 8\npattern = \"random\"\n",
            "s.toml",
        )
        .unwrap();
        let st = spec_step(&shared);
        assert_eq!(st.late.len(), 2);
        assert_eq!(st.disk_bytes, 3 * 8 * MIB, "one set of files for both");
        assert!(
            st.describe.contains(
                "2 mmap-file-reader(s) of 3 file(s) of 8 MiB shared, random pages, endless"
            ),
            "{}",
            st.describe
        );
    }

    #[test]
    fn memcg_congestion_places_each_fio_in_its_cgroup_and_device() {
        let spec = Spec::builtin("memcg-congestion").unwrap();
        let st = spec_step(&spec);
        assert_eq!(st.fio.len(), 2);
        let (w, r) = (&st.fio[0], &st.fio[1]);
        assert_eq!(
            (w.cgroup.as_deref(), w.device.as_deref()),
            (Some("congester"), Some("sdb"))
        );
        assert!(w.early && !w.finite);
        assert_eq!(
            (r.cgroup.as_deref(), r.device.as_deref()),
            (Some("victim"), Some("sda"))
        );
        assert!(!r.early && r.finite);
        assert_eq!(st.disk_bytes, 0, "their files are on the run's disks");
        let text = r.job.text(10, 3600);
        assert!(
            text.contains("loops=1\nruntime=3600\n") && !text.contains("time_based"),
            "{text}"
        );
        assert!(
            text.contains("[reader-2]\nreadwrite=read\nblocksize=131072\n"),
            "{text}"
        );
    }

    #[test]
    fn stutterp_steps_start_hogs_then_latency_after_warmup() {
        let p = StutterpParams::default();
        let s = reclaimlab_workload::stutterp::sizing(1 << 30, 20).unwrap();
        let plans = vec![p.step(&s, 4).unwrap()];
        let st = stutterp_steps(&p, &[4], &plans);
        assert_eq!(st.len(), 1);
        assert_eq!(st[0].late.len(), 3);
        assert!(matches!(
            st[0].late[2].0,
            Proc::MmapLatency {
                pages: 32768,
                sleep_ms: 5
            }
        ));
        assert!(st[0].fio[0].job.text(6, 300).contains("runtime=306\n"));
    }
}
