//! Behaviour tests of mlock and the unevictable LRU (5.9.1 mm/mlock.c
//! `mlock_vma_page`, mm/swap.c `lru_cache_add_inactive_or_unevictable` and
//! `__pagevec_lru_add_fn`, mm/vmscan.c `shrink_lruvec`'s
//! `for_each_evictable_lru`).

mod common;

use common::{machine, sim, Collect};

const TINY: &str = "name='tiny'\ncpus=2\nmemory_mib=96\nswap_mib=128\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";

/// The column `name` of every vmstat row.
fn column(c: &Collect, name: &str) -> Vec<u64> {
    let i = c
        .names
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no counter {name}"));
    c.rows.iter().map(|r| r[i]).collect()
}

/// Pages a `VM_LOCKED` mapping faults in go to the unevictable list
/// (`lru_cache_add_inactive_or_unevictable`: `NR_MLOCK`,
/// `unevictable_pgs_mlocked`; `__pagevec_lru_add_fn`: `unevictable_pgs_culled`)
/// and stay resident while an anon hog beside them is swapped out over and
/// over: reclaim never takes them (`for_each_evictable_lru`). Without the
/// unevictable list they would be on the inactive anon list and swapped
/// like the hog's.
#[test]
fn mlocked_pages_are_never_reclaimed() {
    let spec = "name='ml'\nduration_s=4\n[[worker]]\nkind='mlock'\nsize_mib=40\n[[worker]]\nkind='anon-hog'\nsize_mib=60\n";
    let (c, s) = sim(&machine(TINY), "v5.15", spec, 1, &[]);
    let locked = 40 * 256;
    assert!(
        c.delta("pswpout") > 10_000,
        "little swapping: no pressure, the check is vacuous"
    );
    assert_eq!(s.oom_kills.len(), 0, "OOM kill with 128 MiB of swap");
    // From the first sample after t=0 (the mlock is done by then) to the end.
    for name in ["nr_mlock", "nr_unevictable"] {
        let col = column(&c, name);
        assert!(
            col.len() > 3 && col[1..].iter().all(|&v| v == locked),
            "{name} left {locked}: {col:?}"
        );
    }
    let last = |n: &str| *column(&c, n).last().unwrap();
    assert_eq!(last("unevictable_pgs_mlocked"), locked);
    assert_eq!(last("unevictable_pgs_culled"), locked);
    assert_eq!(last("unevictable_pgs_munlocked"), 0);
}

/// `step_mib`: the squeeze of the 2019 XFS RFC ("progressively locking 2GB
/// of memory at time"): `nr_mlock` rises a step every `step_interval_s`
/// and each step is one `mlock` latency sample.
#[test]
fn mlock_in_steps_locks_a_step_per_interval() {
    let spec = "name='sq'\nduration_s=3\n[[worker]]\nkind='mlock'\nsize_mib=40\nstep_mib=8\nstep_interval_s=0.5\n";
    let (c, _) = sim(
        &machine(TINY),
        "v5.15",
        spec,
        1,
        &[("sim.vmstat_interval_ms", "250")],
    );
    let steps: Vec<f64> = c
        .lat
        .iter()
        .filter(|l| l.1 == "mlock")
        .map(|l| l.2)
        .collect();
    assert_eq!(steps.len(), 5, "one sample per 8 MiB step: {steps:?}");
    for w in steps.windows(2) {
        assert!(
            (w[1] - w[0] - 0.5).abs() < 0.05,
            "steps not 0.5 s apart: {steps:?}"
        );
    }
    let col = column(&c, "nr_mlock");
    assert!(
        col.windows(2).all(|w| w[1] >= w[0]),
        "nr_mlock fell: {col:?}"
    );
    assert!(
        col.iter().all(|v| v % (8 * 256) == 0),
        "not whole steps: {col:?}"
    );
    assert_eq!(*col.last().unwrap(), 40 * 256);
}
