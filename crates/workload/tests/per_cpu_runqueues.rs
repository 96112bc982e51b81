//! Per-CPU run queues (5.15 kernel/sched/fair.c: `select_idle_sibling`,
//! `newidle_balance`, `load_balance`): identical memory hogs that together
//! overflow their cgroup do not thrash in lock step, as they did under the
//! simulator's single run queue until 2026-11-28. Tasks stay on their
//! CPUs, CPUs carry unequal loads, the hogs with more CPU pass over their
//! memory sooner, keep it young and stay resident, and the others thrash:
//! the split every real run shows (docs/fidelity.md, "A run queue per CPU").

mod common;
use common::*;

/// Two CPUs, 1 GiB, a slow disk.
const GUESTLIKE: &str = "name='g'\ncpus=2\nmemory_mib=1024\nswap_mib=1024\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=300\nseek_us=0\nqueue_depth=64\n";

/// Four hogs of 68 MiB in a 256 MiB cgroup, beside two buffered writers
/// and an mmap-latency loop (dirty-pressure at the guests' size).
const FOUR_HOGS: &str = "name='dp'\nduration_s=40\nwarmup_s=2\n\
    [[cgroup]]\nname='box'\nmemory_max='256M'\n\
    [[worker]]\nkind='file-writer'\ncount=2\nfiles=2\nfile_mib=32\ncgroup='box'\n\
    [[worker]]\nkind='anon-hog'\ncount=4\nsize_mib=68\ncgroup='box'\n\
    [[worker]]\nkind='mmap-latency'\npages=8192\ncgroup='box'\n";

#[test]
fn identical_hogs_split_into_resident_and_thrashing() {
    let (_, s) = sim(&machine(GUESTLIKE), "v6.1", FOUR_HOGS, 1, &[]);
    let mut user: Vec<f64> = s
        .tasks
        .iter()
        .filter(|t| t.comm == "memory-hog")
        .map(|t| t.user_s)
        .collect();
    assert_eq!(user.len(), 4);
    user.sort_by(f64::total_cmp);
    // A resident hog spends its time touching pages (user time); a
    // thrashing one in faults and reclaim (system time).
    assert!(
        user[3] > 10.0 * user[0],
        "the hogs' user seconds {user:?}: some should stay resident while others thrash"
    );
}
