//! `__GFP_NOFAIL` at the OOM stage (5.9 mm/page_alloc.c,
//! `__alloc_pages_may_oom`): when `out_of_memory` returns true — here a
//! global OOM for an allocation without `__GFP_FS`, which kills nothing —
//! a non-failing allocation is given a page below the min watermark
//! (`__alloc_pages_cpuset_fallback` with `ALLOC_NO_WATERMARKS`: "Help
//! non-failing allocations by giving them access to memory reserves"),
//! while an ordinary `GFP_NOFS` allocation goes on retrying.

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::mm::alloc::{alloc_page, Gfp};
use reclaimlab_kernel::mm::WMARK_MIN;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::vmstat::Ev;
use reclaimlab_kernel::{boot, SimConfig};
use std::cell::Cell;
use std::rc::Rc;

/// 128 MiB, no swap: once the free pages are taken nothing is reclaimable.
const MACHINE: &str = "name='tight'\ncpus=2\nmemory_mib=128\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n";

/// Boots, takes every free page down to the min watermark (unreclaimable,
/// as kernel memory is), then lets one task allocate with `gfp`. Returns
/// whether it got a page within 2 s, and the OOM kills.
fn allocate_when_exhausted(gfp: Gfp) -> (bool, u64) {
    let m = Machine::from_toml(MACHINE, "test").unwrap();
    let p = profile("v5.9").unwrap();
    let w: Rc<World> = boot(&SimConfig::new(m, p, Params::defaults(p), 1));
    let got = Rc::new(Cell::new(false));
    let t = w.k().new_task("fs-worker", TaskKind::User, 0);
    let (w2, got2) = (w.clone(), got.clone());
    w.spawn(t, async move {
        {
            let mut k = w2.k();
            let min = k.nodes[0].wmark[WMARK_MIN];
            // Down to min with nothing left on the per-CPU lists either
            // (direct reclaim would drain them back).
            while {
                k.drain_all_pages();
                k.nodes[0].nr_free() > min
            } {
                let _ = k.get_page_from_freelist(None);
            }
        }
        if alloc_page(&w2, gfp).await.is_some() {
            got2.set(true);
        }
    });
    w.run_until(2_000_000_000);
    let kills = w.k().event(Ev::OomKill);
    (got.get(), kills)
}

#[test]
fn a_nofail_allocation_takes_the_reserves_at_the_oom_stage() {
    let (nofail, kills) = allocate_when_exhausted(Gfp::NOFS_NOFAIL);
    assert!(
        nofail,
        "GFP_NOFS | __GFP_NOFAIL must be given a reserve page"
    );
    assert_eq!(kills, 0, "a global OOM without __GFP_FS kills nothing");
    let (plain, kills) = allocate_when_exhausted(Gfp::NOFS);
    assert!(
        !plain,
        "plain GFP_NOFS gets no page below the min watermark"
    );
    assert_eq!(kills, 0);
}
