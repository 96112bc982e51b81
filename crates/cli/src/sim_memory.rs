//! `sim`'s host-memory check (issue 22): before the first simulation
//! starts, estimate the host memory the runs will need at once and refuse,
//! with exit 2 and a message naming the machine, the workload and the fix,
//! when it is above what the host has available (`MemAvailable` in
//! `/proc/meminfo`) or above `--max-memory`.
//!
//! Without it a machine or workload the validators accept (a 4 TiB machine,
//! a 32 TB swap area, a hog of terabytes) ends in "memory allocation of N
//! bytes failed" and SIGABRT, or in the host's OOM killer, minutes in.
//!
//! The estimate is an upper bound of the arrays the simulator allocates
//! whole ([`Machine::host_bytes_estimate`] for the machine; here the
//! workload's page tables, file tags and tasks), not of what a run
//! touches: the arrays are zeroed allocations, and the host commits only
//! the parts a run reaches, so a run usually uses much less.

use anyhow::bail;
use reclaimlab_kernel::machine::Machine;
use reclaimlab_workload::sim::StepSpec;
use reclaimlab_workload::spec::WorkerKind;

/// What every simulation needs besides its arrays: the engine, trace and
/// vmstat buffers, the compressed trace held until the record is written.
const BASE_BYTES: u64 = 64 << 20;

/// Host bytes per simulated process (task, its future, its run queue
/// entries), rounded up.
const TASK_BYTES: u64 = 16 << 10;

/// Host bytes the workers of one step allocate whole: per anonymous page a
/// page-table entry (`u32`) and a young bit; per file page a dirty tag bit
/// and a page-cache index entry per 64 pages, plus mapped and young bits for
/// mapped files; and a [`TASK_BYTES`] per process.
pub fn workload_bytes(step: &StepSpec) -> u64 {
    let mut total: u64 = 0;
    for w in &step.workers {
        let count = u64::from(w.count);
        let file_pages = w.file_mib.saturating_mul(256);
        let files = w.files;
        // Per file page, in 1/64 byte: dirty tag 8, page-cache index 4.
        let file_64ths = |mapped: bool| -> u64 {
            let per = 8 + 4 + if mapped { 16 } else { 0 };
            file_pages.saturating_mul(files).saturating_mul(per) / 64
        };
        let bytes = match w.kind {
            WorkerKind::AnonHog | WorkerKind::Mlock => w
                .size_mib
                .saturating_mul(256)
                .saturating_mul(4 + 1)
                .saturating_mul(count),
            WorkerKind::MmapLatency => u64::from(w.pages)
                .saturating_mul(4 + 1)
                .saturating_mul(count),
            WorkerKind::FileWriter | WorkerKind::FileReader => {
                file_64ths(false).saturating_mul(count)
            }
            WorkerKind::MmapFileReader if w.shared => file_64ths(true),
            WorkerKind::MmapFileReader => file_64ths(true).saturating_mul(count),
            // Inodes and dentries live in simulated memory, bounded by the
            // machine's pages (counted with the machine); ~100 host bytes
            // per object.
            WorkerKind::FsCreate => 0,
        };
        total = total
            .saturating_add(bytes)
            .saturating_add(count.saturating_mul(TASK_BYTES));
    }
    total
}

/// Host bytes one simulation of `steps` on `machine` needs at most (each
/// step boots its own machine; one step runs at a time per job).
pub fn job_bytes(machine: &Machine, steps: &[StepSpec]) -> u64 {
    let workload = steps.iter().map(workload_bytes).max().unwrap_or(0);
    machine
        .host_bytes_estimate()
        .saturating_add(workload)
        .saturating_add(BASE_BYTES)
}

/// `MemAvailable` of `/proc/meminfo`, bytes (`None` where there is none).
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line
        .trim_start_matches("MemAvailable:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// GiB with two decimals, for messages.
fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30))
}

/// Refuses a `sim` whose `threads` concurrent jobs of `per_job` bytes each
/// need more than `max` (from `--max-memory`) or the host's `available`.
/// `what` names the machine and workload for the message.
pub fn check(
    what: &str,
    per_job: u64,
    threads: usize,
    max: Option<u64>,
    available: Option<u64>,
) -> anyhow::Result<()> {
    let need = per_job.saturating_mul(threads.max(1) as u64);
    let (limit, from) = match (max, available) {
        (Some(m), _) => (m, "--max-memory"),
        (None, Some(a)) => (
            a,
            "the host's available memory (MemAvailable in /proc/meminfo)",
        ),
        (None, None) => return Ok(()),
    };
    if need <= limit {
        return Ok(());
    }
    let runs = if threads > 1 {
        format!(" ({} per simulation, {threads} at once)", gib(per_job))
    } else {
        String::new()
    };
    let alone = if threads > 1 && per_job <= limit {
        "; or run fewer at once (fewer --kernel profiles or --sweep values)"
    } else {
        ""
    };
    bail!(
        "{what}: the simulation needs about {}{runs} of host memory, more than {from} allows ({}). \
         Fix: a smaller memory_mib or swap_mib in the machine file, smaller workers \
         (size_mib, files, file_mib, pages, count){alone}, or, if the host has the memory, \
         --max-memory with a larger size (e.g. --max-memory {}G)",
        gib(need),
        gib(limit),
        need.div_ceil(1 << 30)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_workload::spec::Spec;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let m = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(parse_mem_available(m), Some(1_024_000));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn estimate_grows_with_machine_and_workload() {
        let small = Machine::load("small").unwrap();
        let mut big = small.clone();
        big.memory_mib *= 4;
        let spec = Spec::parse(
            "name='s'\nduration_s=2\n[[worker]]\nkind='anon-hog'\ncount=2\nsize_mib=1024\n",
            "s",
        )
        .unwrap();
        let steps = [StepSpec::from_spec(&spec)];
        assert!(job_bytes(&big, &steps) > job_bytes(&small, &steps));
        // Two hogs of 1 GiB: 2 x 262,144 pages x 5 bytes, plus two tasks.
        assert_eq!(workload_bytes(&steps[0]), 2 * 262_144 * 5 + 2 * TASK_BYTES);
    }

    #[test]
    fn refusal_names_the_limit_and_the_fix() {
        let e = check("machine `m`", 3 << 30, 2, Some(4 << 30), Some(1 << 40))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("machine `m`") && e.contains("--max-memory"),
            "{e}"
        );
        assert!(
            e.contains("6.00 GiB") && e.contains("run fewer at once"),
            "{e}"
        );
        assert!(check("m", 1 << 30, 1, None, Some(2 << 30)).is_ok());
        let e = check("m", 3 << 30, 1, None, Some(2 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("MemAvailable"), "{e}");
        assert!(check("m", u64::MAX, 4, None, None).is_ok());
    }
}
