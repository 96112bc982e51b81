//! Behaviour tests of memory cgroups: limit reclaim, OOM, `memory.high`,
//! protection, cgroup v1's writeback waits, and the 4.16/4.17 congestion
//! flags (seed 003). Each names the kernel function it checks.

mod common;

use common::{machine, sim, Collect};
use reclaimlab_workload::sim::RunSummary;

/// 1 GiB, one fast disk, no swap: only the cgroups' limits make reclaim run.
const ROOMY: &str = "name='roomy'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";

fn cgroup<'a>(s: &'a RunSummary, name: &str) -> &'a reclaimlab_kernel::mm::memcontrol::MemCgroup {
    s.cgroups
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no cgroup {name}"))
}

fn vm(s: &RunSummary, name: &str, ev: &str) -> u64 {
    let i = reclaimlab_kernel::mm::memcontrol::MEMCG_VM_NAMES
        .iter()
        .position(|n| *n == ev)
        .unwrap();
    cgroup(s, name).vm[i]
}

fn event(s: &RunSummary, name: &str, ev: &str) -> u64 {
    let i = reclaimlab_kernel::mm::memcontrol::MEMCG_EVENT_NAMES
        .iter()
        .position(|n| *n == ev)
        .unwrap();
    cgroup(s, name).events[i]
}

/// `try_charge_memcg` → `try_to_free_mem_cgroup_pages` (5.15.0): a cgroup
/// whose page cache outgrows `memory.max` is reclaimed down to it by its
/// own limit reclaim, which counts the memcg's `pgscan_direct` and the
/// global `pgscan_file` but not the global `pgscan_direct`/`allocstall`
/// (`cgroup_reclaim(sc)` guards them); a cgroup beside it is untouched.
#[test]
fn limit_reclaim_holds_a_cgroup_at_its_max() {
    let spec = "name='lim'\nduration_s=6\n\
        [[cgroup]]\nname='box'\nmemory_max='64M'\n\
        [[cgroup]]\nname='free'\n\
        [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=256\npattern='sequential'\ncgroup='box'\nin_warmup=false\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=32\nblock_kib=64\ncgroup='free'\n";
    let (c, s) = sim(&machine(ROOMY), "v5.15", spec, 1, &[]);
    let b = cgroup(&s, "box");
    assert!(
        b.peak <= 64 * 256,
        "peak {} pages over the 64 MiB limit",
        b.peak
    );
    assert!(
        b.peak > 60 * 256,
        "the writer should fill its cgroup: peak {}",
        b.peak
    );
    assert!(event(&s, "box", "max") > 0);
    assert!(vm(&s, "box", "pgscan_direct") > 10_000);
    assert!(vm(&s, "box", "pgsteal_direct") > 10_000);
    assert_eq!(
        c.delta("pgscan_direct"),
        0,
        "limit reclaim is not global direct reclaim"
    );
    assert_eq!(c.delta("allocstall_normal"), 0);
    assert!(c.delta("pgscan_file") >= vm(&s, "box", "pgscan_direct"));
    assert_eq!(vm(&s, "free", "pgscan_direct"), 0);
    assert_eq!(event(&s, "free", "max"), 0);
}

/// `mem_cgroup_oom` → `out_of_memory` with `oc->memcg` (5.15.0): an anon
/// hog larger than its cgroup, with no swap, is killed by the memcg OOM
/// killer (an outcome in the record, not a crash); a task in another cgroup
/// is not chosen, though it is larger.
#[test]
fn a_cgroup_too_small_for_its_hog_ooms_inside_the_cgroup() {
    let spec = "name='oom'\nduration_s=5\n\
        [[cgroup]]\nname='tight'\nmemory_max='32M'\n\
        [[cgroup]]\nname='big'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=48\ncgroup='tight'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=200\ncgroup='big'\n";
    let (c, s) = sim(&machine(ROOMY), "v5.16", spec, 1, &[]);
    assert!(!s.oom_kills.is_empty(), "no OOM kill");
    for (_, o, cg) in &s.oom_kills {
        assert_eq!(cg, "tight");
        assert_eq!(o.constraint, "CONSTRAINT_MEMCG");
        assert!(
            o.free_pages > 100 * 256,
            "the machine had memory free: {}",
            o.free_pages
        );
    }
    assert!(event(&s, "tight", "oom") > 0 && event(&s, "tight", "oom_kill") > 0);
    assert_eq!(event(&s, "big", "oom_kill"), 0);
    // The victim's forced charges end with its fault: it faults no more.
    assert!(
        cgroup(&s, "tight").peak <= 32 * 256 + 1,
        "peak {}",
        cgroup(&s, "tight").peak
    );
    assert_eq!(c.delta("oom_kill"), s.oom_kills.len() as u64);
    assert!(!c.events("mark_victim").is_empty());
}

/// `mem_cgroup_handle_over_high` (5.15.0 = 6.1.0): a hog that pushes its
/// cgroup over `memory.high` is reclaimed (`high` events) and, once the
/// overage outgrows what reclaim can give back (no swap for its anon),
/// sleeps the penalty; below `memory.max` nothing is charged at the limit.
#[test]
fn memory_high_reclaims_then_penalises() {
    let spec = "name='high'\nduration_s=5\n\
        [[cgroup]]\nname='soft'\nmemory_high='40M'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=48\ncgroup='soft'\n";
    let (_c, s) = sim(&machine(ROOMY), "v5.15", spec, 1, &[]);
    assert!(event(&s, "soft", "high") > 0, "no high event");
    assert_eq!(event(&s, "soft", "max"), 0);
    assert!(
        cgroup(&s, "soft").high_delay_ns > 100_000_000,
        "penalty slept only {} ns",
        cgroup(&s, "soft").high_delay_ns
    );
}

/// `shrink_node_memcgs` / `mem_cgroup_below_min` (5.15.0): under global
/// pressure, a cgroup whose usage is within its `memory.min` is skipped;
/// its twin without protection is reclaimed.
#[test]
fn memory_min_shields_a_cgroup_from_global_reclaim() {
    let tiny = "name='tiny'\ncpus=2\nmemory_mib=160\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";
    let spec = "name='min'\nduration_s=8\nwarmup_s=0\n\
        [[cgroup]]\nname='kept'\nmemory_min='48M'\n\
        [[cgroup]]\nname='open'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='kept'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='open'\n\
        [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=400\npattern='sequential'\n";
    let (_c, s) = sim(&machine(tiny), "v5.16", spec, 1, &[]);
    let scanned = |n: &str| vm(&s, n, "pgscan_kswapd") + vm(&s, n, "pgscan_direct");
    assert!(
        scanned("open") > 100,
        "the open cgroup was not reclaimed: {}",
        scanned("open")
    );
    assert_eq!(scanned("kept"), 0, "the protected cgroup was scanned");
}

/// `shrink_node_memcgs` / `mem_cgroup_below_low` (5.15.0): `memory.low`
/// shields a cgroup as long as others have reclaimable pages (it is
/// skipped, and no `low` event is counted: the `memcg_low_reclaim` retry
/// is never needed).
#[test]
fn memory_low_shields_a_cgroup_while_others_can_give() {
    let tiny = "name='tiny'\ncpus=2\nmemory_mib=160\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";
    let spec = "name='min'\nduration_s=8\nwarmup_s=0\n\
        [[cgroup]]\nname='kept'\nmemory_low='48M'\n\
        [[cgroup]]\nname='open'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='kept'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='open'\n\
        [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=400\npattern='sequential'\n";
    let (_c, s) = sim(&machine(tiny), "v5.16", spec, 1, &[]);
    let scanned = |n: &str| vm(&s, n, "pgscan_kswapd") + vm(&s, n, "pgscan_direct");
    assert!(
        scanned("open") > 100,
        "the open cgroup was not reclaimed: {}",
        scanned("open")
    );
    assert_eq!(scanned("kept"), 0, "the protected cgroup was scanned");
    assert_eq!(event(&s, "kept", "low"), 0);
}

/// `shrink_folio_list` case 3 (5.15.0, `!writeback_throttling_sane`):
/// cgroup v1 limit reclaim waits for pages it marked under writeback;
/// under v2 it never does. 6.0's WRITEBACK throttle after waking the
/// flushers (the v6.1 profile) fires for v1 only.
#[test]
fn cgroup_v1_limit_reclaim_waits_on_writeback() {
    let slow = "name='slow'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=20\nread_mb_s=40\nlatency_us=500\nseek_us=4000\n";
    // Files the writers pass over several times in the run (each pass
    // writes every block once), so that reclaim meets pages it marked
    // before still under writeback: 2 × 40 MiB in a 48 MiB cgroup.
    let spec = |key: &str| {
        format!(
            "name='v1'\nduration_s=10\n\
             [[cgroup]]\nname='w'\n{key}='48M'\n\
             [[worker]]\nkind='file-writer'\ncount=2\nfiles=1\nfile_mib=40\ncgroup='w'\nin_warmup=false\n"
        )
    };
    let (c1, s1) = sim(
        &machine(slow),
        "v6.1",
        &spec("limit_in_bytes"),
        1,
        &[("memcg.version", "1")],
    );
    let (c2, s2) = sim(&machine(slow), "v6.1", &spec("memory_max"), 1, &[]);
    assert!(s1.writeback_waits.0 > 0, "v1 never waited on writeback");
    assert_eq!(s2.writeback_waits.0, 0, "v2 waited on writeback");
    let wb = |c: &Collect| {
        c.events("mm_vmscan_throttled")
            .iter()
            .filter(|(_, f)| f.contains("VMSCAN_THROTTLE_WRITEBACK"))
            .count()
    };
    assert!(wb(&c1) > 0, "no v1 WRITEBACK throttle under v6.1");
    assert_eq!(wb(&c2), 0, "v2 limit reclaim throttled for WRITEBACK");
    assert!(event(&s1, "w", "max") > 0 && event(&s2, "w", "max") > 0);
}

/// Seed 003 (Ryabinin, 2018; 4.16 `shrink_inactive_list` against 4.17
/// `shrink_node`): the congester's cgroup v2 limit reclaim, finding all its
/// dirty pages on a congested single-queue disk, sets the node's
/// PGDAT_CONGESTED under v4.16, which only kswapd clears; the victim's own
/// limit reclaim then sleeps in wait_iff_congested after its batches. Under
/// v4.17 the flag is the congester's own and the victim does not sleep.
/// With v4.16's per-batch flags turned off (`policy.congestion_flags=
/// per_pass`), the victim does not sleep either: the leak is the cause.
#[test]
fn seed_003_memcg_congestion_leaks_only_before_4_17() {
    let m = reclaimlab_kernel::machine::Machine::load("hdd-pair-2018").unwrap();
    let spec = include_str!("../../../examples/workloads/memcg-congestion.toml")
        .replace("file_mib = 2048", "file_mib = 256");
    let victim = |c: &Collect, s: &RunSummary| {
        let comm = s
            .tasks
            .iter()
            .rev()
            .find(|t| t.comm == "fio")
            .map(|t| format!("fio-{}", t.pid))
            .unwrap();
        let slept: u64 = c
            .trace
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{comm} ")))
            .filter_map(|l| l.split(": writeback_wait_iff_congested: ").nth(1))
            .map(|f| common::field(f, "usec_delayed"))
            .sum();
        let elapsed_us = c
            .lat
            .iter()
            .find(|l| l.1 == "elapsed")
            .map_or(f64::INFINITY, |l| l.3);
        (slept as f64, elapsed_us)
    };
    let (c16, s16) = sim(&m, "v4.16", &spec, 1, &[]);
    let (c17, s17) = sim(&m, "v4.17", &spec, 1, &[]);
    let (off, soff) = sim(
        &m,
        "v4.16",
        &spec,
        1,
        &[("policy.congestion_flags", "per_pass")],
    );
    let (slept16, el16) = victim(&c16, &s16);
    let (slept17, el17) = victim(&c17, &s17);
    let (slept_off, _) = victim(&off, &soff);
    assert!(el17.is_finite(), "the victim did not finish under v4.17");
    assert!(
        slept16 > 0.3 * el16.min(s16.elapsed_s * 1e6),
        "v4.16 victim slept {slept16} us of {el16} us"
    );
    assert_eq!(slept17, 0.0, "the v4.17 victim slept in wait_iff_congested");
    assert_eq!(slept_off, 0.0, "v4.16 without per-batch flags still leaked");
    assert!(
        el16 > 2.0 * el17,
        "elapsed v4.16 {el16} us, v4.17 {el17} us"
    );
}
