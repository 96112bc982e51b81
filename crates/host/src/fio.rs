//! fio job files for stutterp's file writers and reader, as mmtests writes them.
//!
//! The text follows `stutterp-bench` (mmtests-method.md §1.6): buffered libaio
//! random writers, `W` jobs of `W` files of `WSS_PER_WRITER` MiB each, running
//! `WARMUP + DURATION` seconds; optionally one random reader over 32 files of
//! 100 MiB that switches file every 16 I/Os.

use std::path::Path;
use std::process::Command;

use reclaimlab_workload::stutterp::{StepPlan, StutterpParams};

/// The job file for one stutterp step, byte for byte as mmtests writes
/// `logs/fio-config.$NR_WORKERS`.
pub fn stutterp_job_file(params: &StutterpParams, plan: &StepPlan, runtime_s: u64) -> String {
    let mut s = format!(
        "[global]\n\
         direct=0\n\
         ioengine=libaio\n\
         runtime={runtime_s}\n\
         blocksize={bs}\n\
         invalidate=1\n\
         time_based\n\
         ramp_time=5\n\
         log_avg_msec=10\n\
         group_reporting=1\n\
         \n\
         [writer]\n\
         nrfiles={w}\n\
         numjobs={w}\n\
         filesize={f}m\n\
         readwrite=randwrite\n",
        bs = params.writer_bs,
        w = plan.split.writers,
        f = params.writer_file_mib(plan),
    );
    if plan.split.readers > 0 {
        s.push_str(
            "\n[reader]\n\
             new_group\n\
             filesize=100m\n\
             nrfiles=32\n\
             numjobs=1\n\
             file_service_type=random:16\n\
             readwrite=randread\n",
        );
    }
    s
}

/// Disk space the step's fio files take: W jobs × W files of the writer file
/// size (`WSS_PER_WRITER`, or less with `stutterp.file_set=intent`), plus the
/// reader's 32 × 100 MiB.
pub fn stutterp_disk_bytes(params: &StutterpParams, plan: &StepPlan) -> u64 {
    let w = u64::from(plan.split.writers);
    let mut b = (w * w * params.writer_file_mib(plan)) << 20;
    if plan.split.readers > 0 {
        b += (32 * 100) << 20;
    }
    b
}

/// `fio --directory=DATA --minimal --write_lat_log LOG JOBFILE`, as mmtests runs it.
pub fn command(fio: &Path, data_dir: &Path, latlog: &Path, job_file: &Path) -> Command {
    let mut c = Command::new(fio);
    c.arg(format!("--directory={}", data_dir.display()))
        .arg("--minimal")
        .arg("--write_lat_log")
        .arg(latlog)
        .arg(job_file);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_workload::stutterp::sizing;

    #[test]
    fn job_file_noreaders() {
        let p = StutterpParams::default();
        let s = sizing(1 << 30, 20).unwrap();
        let plan = p.step(&s, 4).unwrap();
        let text = stutterp_job_file(&p, &plan, 311);
        assert_eq!(
            text,
            "[global]\ndirect=0\nioengine=libaio\nruntime=311\nblocksize=1048576\n\
             invalidate=1\ntime_based\nramp_time=5\nlog_avg_msec=10\ngroup_reporting=1\n\n\
             [writer]\nnrfiles=1\nnumjobs=1\nfilesize=245m\nreadwrite=randwrite\n"
        );
        assert_eq!(stutterp_disk_bytes(&p, &plan), 245 << 20);
    }

    #[test]
    fn job_file_with_reader() {
        let mut p = StutterpParams::default();
        p.set("stutterp.readers", "1").unwrap();
        let s = sizing(4 << 30, 20).unwrap();
        let plan = p.step(&s, 8).unwrap();
        assert_eq!((plan.split.writers, plan.split.hogs), (3, 3));
        let text = stutterp_job_file(&p, &plan, 100);
        assert!(
            text.contains("[writer]\nnrfiles=3\nnumjobs=3\nfilesize=327m\n"),
            "{text}"
        );
        assert!(text.ends_with(
            "\n[reader]\nnew_group\nfilesize=100m\nnrfiles=32\nnumjobs=1\n\
             file_service_type=random:16\nreadwrite=randread\n"
        ));
        assert_eq!(stutterp_disk_bytes(&p, &plan), (9 * 327 + 3200) << 20);
    }

    #[test]
    fn intent_file_set_divides_the_files() {
        let mut p = StutterpParams::default();
        p.set("stutterp.file_set", "intent").unwrap();
        let s = sizing(4 << 30, 20).unwrap();
        let plan = p.step(&s, 8).unwrap();
        let text = stutterp_job_file(&p, &plan, 100);
        assert!(
            text.contains("nrfiles=3\nnumjobs=3\nfilesize=109m\n"),
            "{text}"
        );
        assert_eq!(stutterp_disk_bytes(&p, &plan), (9 * 109) << 20);
    }
}
