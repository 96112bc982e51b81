//! Per-CPU page lists (mm/pcp.rs): pages freed on a CPU stay on its list,
//! out of `NR_FREE_PAGES`, up to `high`; 5.10 lets a list hold 6 x batch
//! pages, 5.15 the low watermark over the node's CPUs (`zone_highsize`).

mod common;

use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::mm::anon::touch_anon;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::SimConfig;

/// 2 CPUs, 1 GiB, one node: batch 63.
const MACHINE: &str = "name='two'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=400\nread_mb_s=400\nlatency_us=100\n";

/// Boots under `kernel`, faults 64 MiB in and unmaps it: (pages on the
/// per-CPU lists, free pages as `NR_FREE_PAGES` counts them, all free pages).
fn after_munmap(kernel: &str) -> (u64, u64, u64, u32) {
    let m = reclaimlab_kernel::machine::Machine::from_toml(MACHINE, "test").unwrap();
    let p = profile(kernel).unwrap();
    let params = reclaimlab_kernel::params::Params::defaults(p);
    let w = reclaimlab_kernel::boot(&SimConfig::new(m, p, params, 1));
    let t = w.k().new_task("hog", TaskKind::User, 0);
    let w2 = w.clone();
    w.spawn(t, async move {
        let id = w2.k().mmap_anon(16_384);
        let _ = touch_anon(&w2, id, 0, 16_384, true).await;
        w2.k().munmap(id);
    });
    w.run_until(5_000_000_000);
    let k = w.k();
    let node = &k.nodes[0];
    (
        node.pcp.total,
        node.nr_free(),
        node.free.len() as u64,
        node.pcp.high,
    )
}

#[test]
fn freed_pages_stay_on_the_cpus_list_out_of_nr_free_pages() {
    let (on_lists, nr_free, all, high) = after_munmap("v5.10");
    assert_eq!(high, 378, "5.10: 6 x batch");
    assert!(
        on_lists > 0 && on_lists < u64::from(high),
        "{on_lists} pages kept per CPU"
    );
    assert_eq!(nr_free + on_lists, all);
    let (on_lists_515, _, _, high_515) = after_munmap("v5.15");
    assert!(
        high_515 > high,
        "5.15: the low watermark over 2 CPUs, {high_515}"
    );
    assert!(on_lists_515 > 0 && on_lists_515 < u64::from(high_515));
}
