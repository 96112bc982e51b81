//! kswapd pays for the work it does before it sleeps.
//!
//! Kernel paths add small work to a task's CPU *debt* and the task pays
//! it before it blocks (crates/kernel/src/sched.rs). kswapd blocks only
//! when its node is balanced, so work charged as debt during a pass —
//! the put-back's spin on `lru_lock`, the rmap walks of deactivation —
//! would let it scan on as if that work took no time, and with the lock
//! modelled take batch after batch ahead of the direct reclaimers queued
//! behind it. In the kernel, kswapd's CPU does that work in order
//! (5.15 `shrink_inactive_list`: `move_pages_to_lru` under
//! `spin_lock_irq(&lruvec->lru_lock)`, then the next batch).

mod common;

use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::mm::anon::touch_anon;

/// 4 CPUs, 256 MiB, swap on a fast disk: four hogs of 80 MiB each keep
/// kswapd waking and sleeping.
const MACHINE: &str = "name='four'\ncpus=4\nmemory_mib=256\nswap_mib=512\n[[devices]]\nname='sda'\nwrite_mb_s=400\nread_mb_s=400\nlatency_us=100\n";
const MS: u64 = 1_000_000;

#[test]
fn a_sleeping_kswapd_owes_no_cpu() {
    // The lock modelled at its measured hold: the put-back spins.
    let w = common::boot_v515(MACHINE, &[("lru_lock.page_ns", "223")]);
    let pages = 80 * 256;
    for i in 0..4 {
        let t = w.k().new_task("hog", TaskKind::User, 0);
        let w2 = w.clone();
        w.spawn(t, async move {
            let id = w2.k().mmap_anon(pages);
            // Start apart, so that kswapd is sometimes ahead.
            let _ = touch_anon(&w2, id, 0, pages / (4 - i), true).await;
            loop {
                let _ = touch_anon(&w2, id, 0, pages, true).await;
            }
        });
    }
    let kswapd = w
        .k()
        .tasks
        .iter()
        .position(|t| t.comm == "kswapd0")
        .expect("kswapd0 runs");
    let (mut asleep, mut awake) = (0, 0);
    let mut t = 0;
    while t < 3_000 * MS {
        t += MS / 4;
        w.run_until(t);
        let k = w.k();
        let task = &k.tasks[kswapd];
        if k.nodes[0].kswapd_running {
            awake += 1;
            continue;
        }
        asleep += 1;
        assert_eq!(
            task.cpu_debt_sys + task.cpu_debt_user,
            0,
            "kswapd asleep at {t} ns still owes CPU for its last pass"
        );
    }
    assert!(awake > 0, "kswapd never ran: no reclaim in this test");
    assert!(asleep > 0, "kswapd never slept: the check above never ran");
    let spun: u64 = w.k().tasks.iter().map(|t| t.lru_lock_spin_ns).sum();
    assert!(
        spun > 0,
        "nobody spun on lru_lock: the put-back's spin is not tested"
    );
}
