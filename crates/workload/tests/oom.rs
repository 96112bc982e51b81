//! Behaviour tests of the OOM decision: `should_reclaim_retry` (5.9.1
//! mm/page_alloc.c: the per-zone watermark check on `available =
//! zone_reclaimable_pages + NR_FREE_PAGES`, and `no_progress_loops` against
//! `MAX_RECLAIM_RETRIES`), `__alloc_pages_may_oom` → `out_of_memory`, and
//! what the record keeps of each kill (time, victim, its memory, free
//! memory, the reason).

mod common;

use common::{field, machine, sim};

/// No swap: anon memory is not reclaimable, so `available` is free pages
/// plus the file LRU only.
const NOSWAP: &str = "name='noswap'\ncpus=2\nmemory_mib=96\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";

/// With most of memory mlocked (reference §3.8: "Slab and unevictable
/// memory are not in `available`, so with most RAM mlocked the check fails
/// at once"), the first allocation that reclaim cannot satisfy fails the
/// watermark check on its first pass (`no_progress_loops=1`), not after
/// `MAX_RECLAIM_RETRIES` passes; the kill's record names the check, the
/// figures it compared, and the free memory at the time.
#[test]
fn with_most_memory_mlocked_the_watermark_check_decides() {
    let spec = "name='m'\nduration_s=2\n[[worker]]\nkind='mlock'\nsize_mib=72\n[[worker]]\nkind='anon-hog'\nsize_mib=24\n";
    // Program text off (mm/text.rs): its ~700 file pages would be
    // reclaimable, so `available` would pass the watermark check and the
    // kill come after MAX_RECLAIM_RETRIES instead.
    let (c, s) = sim(
        &machine(NOSWAP),
        "v5.15",
        spec,
        1,
        &[("sim.program_text", "0")],
    );
    let (_, kill, _) = s.oom_kills.first().expect("no OOM kill");
    assert!(
        kill.reason
            .starts_with("watermark check failed: node 0: available"),
        "{}",
        kill.reason
    );
    assert!(
        kill.reason.ends_with("(no_progress_loops=1)"),
        "{}",
        kill.reason
    );
    // The trace line the decision came from, just before mark_victim.
    let retry = c.events("reclaim_retry_zone");
    let (_, last) = retry
        .iter()
        .rfind(|(_, f)| f.contains("wmark_check=0"))
        .expect("no failed reclaim_retry_zone");
    let (available, min) = (field(last, "available"), field(last, "min_wmark"));
    assert!(available <= min, "{last}");
    assert_eq!(field(last, "reclaimable"), 0, "{last}");
    // The mlocked pages are not in `available`, and not free either.
    assert!(
        kill.free_pages <= min,
        "free {} > min {min}",
        kill.free_pages
    );
    assert!(
        kill.victim_pages >= 70 * 256,
        "victim {}",
        kill.victim_pages
    );
    assert_eq!(kill.comm, "mlock");
    let victim = c.events("mark_victim");
    assert_eq!(victim[0].1, format!("pid={}", kill.pid));
}

/// The other way out of `should_reclaim_retry`: a few file pages that
/// reclaim cannot free keep `available` just above the min watermark, so
/// the check passes pass after pass while reclaim makes no progress, until
/// `no_progress_loops` exceeds `MAX_RECLAIM_RETRIES` (16).
///
/// Whether the file pages are on the LRU when the mlocker's check runs is
/// a race with the reader (docs/oom.md, "The retry test's race"): when they
/// are not, the check fails at once (`reclaimable 0`) as in the test
/// above. Which way it falls moves with nanoseconds of CPU cost (a
/// faulted store's user time tipped it at the default), so the test runs
/// nine fault costs within ±20 ns of the default (1900 ns), measured: 4
/// give up on the retries, 5 on the check (8 and 1 since the reader reads
/// ahead, 2026-11-28: its allocations are the ones that loop). Every kill is one of the two
/// ways out, a check that fails with the file pages off the LRU, and at
/// least one is the retries' after 16 passing checks without progress.
#[test]
fn no_progress_loops_give_up_after_max_reclaim_retries() {
    let spec = "name='m'\nduration_s=2\n[[worker]]\nkind='mlock'\nsize_mib=72\n[[worker]]\nkind='anon-hog'\nsize_mib=24\n\
                [[worker]]\nkind='file-reader'\nfiles=2\nfile_mib=16\nblock_kib=64\n";
    let mut retries = 0;
    for fault_ns in [
        "1880", "1890", "1895", "1899", "1900", "1901", "1905", "1910", "1920",
    ] {
        let (c, s) = sim(
            &machine(NOSWAP),
            "v5.15",
            spec,
            1,
            // Program text off, as above: what is judged is the loop
            // count against reclaimable pages of the workload's own.
            &[("cost.fault_ns", fault_ns), ("sim.program_text", "0")],
        );
        let (_, kill, _) = s.oom_kills.first().expect("no OOM kill");
        if kill.reason != "no_progress_loops=17 > MAX_RECLAIM_RETRIES=16" {
            assert!(
                kill.reason.starts_with("watermark check failed")
                    && kill.reason.contains("(reclaimable 0 +"),
                "fault {fault_ns} ns: {}",
                kill.reason
            );
            continue;
        }
        retries += 1;
        // The task whose allocation gave up is not always the victim (a
        // reader's readahead can be the one looping while the mlocker,
        // the largest, is killed): some task's checks must show the run.
        let events = c.events("reclaim_retry_zone");
        let mut comms: Vec<&String> = events.iter().map(|(comm, _)| comm).collect();
        comms.sort();
        comms.dedup();
        let looped = comms.iter().any(|who| {
            let passes: Vec<u64> = events
                .iter()
                .filter(|(comm, f)| comm == *who && f.contains("wmark_check=1"))
                .map(|(_, f)| field(f, "no_progress_loops"))
                .collect();
            passes
                .windows(16)
                .any(|w| w == (1..=16).collect::<Vec<_>>())
        });
        assert!(
            looped,
            "fault {fault_ns} ns: no task's run of 16 passing checks without progress (victim {})",
            kill.comm
        );
    }
    assert!(
        retries > 0,
        "the file pages never kept the watermark check passing until the retries ran out"
    );
}
