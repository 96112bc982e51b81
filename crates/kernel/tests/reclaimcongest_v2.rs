//! What the `reclaimcongest-v2` profile (Mel Gorman's series as the 2021
//! v2 letter measured it) does differently from `v5.16-rc1` (the series as
//! merged), observed on a booted kernel; each test also runs the merged
//! behaviour, so it fails if the v2 mechanism is taken away.

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::mm::alloc::Gfp;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::{profile, KernelProfile, Reason};
use reclaimlab_kernel::sched::run_on_cpu;
use reclaimlab_kernel::throttle::reclaim_throttle;
use reclaimlab_kernel::vmscan::try_to_free_mem_cgroup_pages;
use reclaimlab_kernel::{boot, SimConfig};
use std::rc::Rc;

const MACHINE: &str = "name='v2'\ncpus=1\nmemory_mib=128\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n";
const MS: u64 = 1_000_000;

fn boot_with(p: &KernelProfile) -> Rc<World> {
    let m = Machine::from_toml(MACHINE, "test").unwrap();
    boot(&SimConfig::new(m, p, Params::defaults(p), 1))
}

fn v2() -> KernelProfile {
    profile("reclaimcongest-v2").unwrap().clone()
}

fn rc1() -> KernelProfile {
    profile("v5.16-rc1").unwrap().clone()
}

/// The `usect_delayed=` of every `mm_vmscan_throttled` line traced so far.
fn delays(w: &World) -> Vec<u64> {
    let t = w.k().take_trace();
    t.lines()
        .filter(|l| l.contains("mm_vmscan_throttled:"))
        .map(|l| {
            let v = l.split("usect_delayed=").nth(1).unwrap();
            v.split(' ').next().unwrap().parse().unwrap()
        })
        .collect()
}

/// A task sleeps on NOPROGRESS while a CPU hog holds the only CPU: when its
/// timeout expires it must wait for the CPU. v2's tracepoint reports the
/// time until it ran again (past the HZ/10 timeout); the merged one reports
/// at most the timeout (HZ/2 there).
fn sleep_behind_a_hog(p: &KernelProfile) -> (Vec<u64>, u64, u64) {
    let w = boot_with(p);
    for i in 0..2 {
        let hog = w.k().new_task(&format!("hog{i}"), TaskKind::User, 0);
        let w2 = w.clone();
        w.spawn(hog, async move {
            for _ in 0..10 {
                run_on_cpu(&w2, 300 * MS, 0).await;
            }
        });
    }
    let t = w.k().new_task("sleeper", TaskKind::User, 0);
    let w3 = w.clone();
    w.spawn(t, async move {
        reclaim_throttle(&w3, 0, Reason::Noprogress).await;
    });
    // Mid-sleep: who the WRITEBACK wake-up is scaled by.
    w.run_until(50 * MS);
    let counted = w.k().nodes[0].nr_writeback_throttled;
    w.run_until(2_000 * MS);
    let timeout = w.k().params.noprogress_timeout_us;
    (delays(&w), counted, timeout)
}

#[test]
fn v2_traces_the_time_slept_and_counts_every_throttled_task() {
    let (d, counted, timeout) = sleep_behind_a_hog(&v2());
    assert_eq!(timeout, 100_000, "HZ/10");
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0] > timeout, "v2 delay {} not past the timeout", d[0]);
    assert_eq!(
        counted, 1,
        "a NOPROGRESS sleeper counts in nr_reclaim_throttled"
    );

    let (d, counted, timeout) = sleep_behind_a_hog(&rc1());
    assert_eq!(timeout, 500_000, "HZ/2");
    assert_eq!(d, [timeout], "the merged tracepoint caps at the timeout");
    assert_eq!(counted, 0, "only WRITEBACK waiters count from v4 2/8");
}

#[test]
fn v2_wakes_noprogress_waiters_on_any_progress() {
    // One page reclaimed of 1000 scanned: 0.1 %, below 66ce520bb7c2's 12.5 %.
    let w = boot_with(&v2());
    assert!(w.k().noprogress_wake(0, 1, 1000));
    assert!(!w.k().noprogress_wake(0, 0, 1000));
    let w = boot_with(&rc1());
    assert!(!w.k().noprogress_wake(0, 1, 1000));
    assert!(w.k().noprogress_wake(0, 126, 1000));
}

/// Limit reclaim of a memcg with nothing to reclaim: every priority pass
/// below DEF_PRIORITY-2 sleeps in consider_reclaim_throttle (10 passes), and
/// v2 sleeps once more at the end of try_to_free_mem_cgroup_pages.
fn noprogress_sleeps_of_empty_memcg_reclaim(p: &KernelProfile) -> u64 {
    let w = boot_with(p);
    let t = w.k().new_task("reclaimer", TaskKind::User, 0);
    let w2 = w.clone();
    w.spawn(t, async move {
        let n = try_to_free_mem_cgroup_pages(&w2, 0, 32, Gfp::HIGHUSER_MOVABLE).await;
        assert_eq!(n, 0);
    });
    w.run_until(20_000 * MS);
    let k = w.k();
    k.stats.throttled[Reason::Noprogress as usize]
}

#[test]
fn v2_sleeps_once_more_after_memcg_reclaim_that_freed_nothing() {
    let with = noprogress_sleeps_of_empty_memcg_reclaim(&v2());
    let mut without = v2();
    without.set("policy.memcg_noprogress", "0").unwrap();
    let without = noprogress_sleeps_of_empty_memcg_reclaim(&without);
    assert!(without > 0);
    assert_eq!(with, without + 1);
    assert_eq!(noprogress_sleeps_of_empty_memcg_reclaim(&rc1()), without);
}
