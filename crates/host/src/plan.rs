//! What each step of a real run starts: the fio job (file writers and readers)
//! and reclaimlab's own workers, before and after the warmup.
//!
//! Both workload sources become the same plan: stutterp (sized from the memory
//! limit, one step per worker count, job files as mmtests writes them) and a
//! generic TOML workload spec (`crates/workload/src/spec.rs`, one step numbered
//! 1, its file workers as fio jobs and its anon/mmap workers as our own).

use reclaimlab_workload::spec::{Pattern, Spec, WorkerKind};
use reclaimlab_workload::stutterp::{StepPlan, StutterpParams, MIB};

use crate::error::HostError;
use crate::fio;

/// One of reclaimlab's own worker processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        files: u32,
        /// Bytes per file.
        file_size: u64,
        /// Process number (file names), from 0.
        index: u32,
    },
}

/// How the fio job of a step is written, given the warmup in seconds.
#[derive(Debug, Clone)]
pub enum FioJob {
    /// mmtests' stutterp job file.
    Stutterp(StutterpParams, StepPlan),
    /// The file workers of a TOML spec.
    Spec(Spec),
}

impl FioJob {
    /// The job file text for a warmup of `warmup_s` and a measured `duration_s`.
    pub fn text(&self, warmup_s: u64, duration_s: u64) -> String {
        match self {
            FioJob::Stutterp(p, plan) => fio::stutterp_job_file(p, plan, warmup_s + duration_s),
            FioJob::Spec(s) => spec_job_file(s, warmup_s, duration_s),
        }
    }
}

/// One step of a real run.
#[derive(Debug, Clone)]
pub struct StepWork {
    /// Step number (stutterp: the worker count; a spec: 1).
    pub step: u32,
    /// A line for the user.
    pub describe: String,
    /// The fio job, if the step has file workers.
    pub fio: Option<FioJob>,
    /// Disk space the fio files take.
    pub disk_bytes: u64,
    /// Started with fio, at the start of the warmup.
    pub early: Vec<Proc>,
    /// Started after the warmup.
    pub late: Vec<Proc>,
}

impl StepWork {
    /// Whether the step needs a filesystem image (an fs-create worker).
    pub fn needs_fs_image(&self) -> bool {
        self.early
            .iter()
            .chain(&self.late)
            .any(|p| matches!(p, Proc::FsCreate { .. }))
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
            let mut late: Vec<Proc> = (0..plan.split.hogs)
                .map(|_| Proc::Hog {
                    bytes: plan.wss_per_memhog_mib * MIB,
                })
                .collect();
            late.push(Proc::MmapLatency {
                pages: params.mmap_pages,
                sleep_ms: params.sleep_ms,
            });
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
                fio: Some(FioJob::Stutterp(params.clone(), *plan)),
                disk_bytes: fio::stutterp_disk_bytes(params, plan),
                early: Vec::new(),
                late,
            }
        })
        .collect()
}

/// The single step of a TOML workload spec; an error names a worker kind the
/// real runner cannot start yet.
pub fn spec_step(spec: &Spec, file: &str) -> Result<StepWork, HostError> {
    let mut early = Vec::new();
    let mut late = Vec::new();
    let mut disk = 0;
    let mut has_files = false;
    let mut parts = Vec::new();
    for w in &spec.workers {
        let list = if w.starts_in_warmup() {
            &mut early
        } else {
            &mut late
        };
        match w.kind {
            WorkerKind::AnonHog => {
                for _ in 0..w.count {
                    list.push(Proc::Hog {
                        bytes: w.size_mib * MIB,
                    });
                }
                parts.push(format!("{} anon-hog(s) of {} MiB", w.count, w.size_mib));
            }
            WorkerKind::MmapLatency => {
                for _ in 0..w.count {
                    list.push(Proc::MmapLatency {
                        pages: u64::from(w.pages),
                        sleep_ms: w.sleep_ms,
                    });
                }
                parts.push(format!("{} mmap-latency", w.count));
            }
            WorkerKind::Mlock => {
                for _ in 0..w.count {
                    list.push(Proc::Mlock {
                        bytes: w.size_mib * MIB,
                        step_bytes: u64::from(w.step_mib) * MIB,
                        interval_ms: (w.step_interval_s * 1000.0) as u64,
                    });
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
                    list.push(Proc::FsCreate {
                        dirs: w.dirs,
                        files: w.files,
                        file_size: w.file_size,
                        index: i,
                    });
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
            WorkerKind::FileWriter | WorkerKind::FileReader => {
                has_files = true;
                disk += u64::from(w.count) * u64::from(w.files) * w.file_mib * MIB;
                let kind = if w.kind == WorkerKind::FileWriter {
                    "file-writer"
                } else {
                    "file-reader"
                };
                parts.push(format!(
                    "{} {kind}(s) of {} x {} MiB (fio)",
                    w.count, w.files, w.file_mib
                ));
            }
            #[allow(unreachable_patterns)]
            other => {
                return Err(HostError::with_fix(
                    format!(
                        "{file}: worker kind {other:?} is not supported by `reclaimlab run` yet \
                         (it runs anon-hog, file-writer, file-reader and mmap-latency)"
                    ),
                    format!("simulate it with `reclaimlab sim {file}`, or drop that [[worker]]"),
                ))
            }
        }
    }
    Ok(StepWork {
        step: 1,
        describe: parts.join(", "),
        fio: has_files.then(|| FioJob::Spec(spec.clone())),
        disk_bytes: disk,
        early,
        late,
    })
}

/// The fio job file of a spec's file workers: one job section per `[[worker]]`,
/// buffered libaio like stutterp's; workers that start after the warmup get
/// `startdelay` and a shorter `runtime`.
pub fn spec_job_file(spec: &Spec, warmup_s: u64, duration_s: u64) -> String {
    let mut s = String::from(
        "[global]\ndirect=0\nioengine=libaio\ninvalidate=1\ntime_based\ngroup_reporting=1\n",
    );
    for (i, w) in spec.workers.iter().enumerate() {
        let rw = match (w.kind, w.pattern) {
            (WorkerKind::FileWriter, Pattern::Random) => "randwrite",
            (WorkerKind::FileWriter, Pattern::Sequential) => "write",
            (WorkerKind::FileReader, Pattern::Random) => "randread",
            (WorkerKind::FileReader, Pattern::Sequential) => "read",
            _ => continue,
        };
        let name = if w.kind == WorkerKind::FileWriter {
            "writer"
        } else {
            "reader"
        };
        s.push_str(&format!(
            "\n[{name}-{n}]\nnew_group\nreadwrite={rw}\nblocksize={bs}\nnrfiles={f}\nnumjobs={c}\nfilesize={m}m\n",
            n = i + 1,
            bs = w.block_kib * 1024,
            f = w.files,
            c = w.count,
            m = w.file_mib,
        ));
        if w.starts_in_warmup() || warmup_s == 0 {
            s.push_str(&format!("runtime={}\n", warmup_s + duration_s));
        } else {
            s.push_str(&format!("startdelay={warmup_s}\nruntime={duration_s}\n"));
        }
    }
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
        let st = spec_step(&spec, "mix.toml").unwrap();
        assert_eq!(st.step, 1);
        assert!(st.early.is_empty());
        assert_eq!(
            st.late,
            vec![
                Proc::Hog { bytes: 200 * MIB },
                Proc::Hog { bytes: 200 * MIB },
                Proc::MmapLatency {
                    pages: 1024,
                    sleep_ms: 5
                }
            ]
        );
        assert_eq!(st.disk_bytes, (2 * 4 * 64 + 8 * 32) * MIB);
        let text = st.fio.unwrap().text(5, 30);
        assert_eq!(
            text,
            "[global]\ndirect=0\nioengine=libaio\ninvalidate=1\ntime_based\ngroup_reporting=1\n\
             \n[writer-1]\nnew_group\nreadwrite=randwrite\nblocksize=1048576\nnrfiles=4\nnumjobs=2\nfilesize=64m\nruntime=35\n\
             \n[reader-3]\nnew_group\nreadwrite=read\nblocksize=4096\nnrfiles=8\nnumjobs=1\nfilesize=32m\nstartdelay=5\nruntime=30\n"
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
            st[0].late[2],
            Proc::MmapLatency {
                pages: 32768,
                sleep_ms: 5
            }
        ));
        assert!(st[0]
            .fio
            .as_ref()
            .unwrap()
            .text(6, 300)
            .contains("runtime=306\n"));
    }
}
