//! `posix_fadvise(POSIX_FADV_DONTNEED)` → `invalidate_mapping_pages`
//! (6.1 mm/truncate.c `invalidate_mapping_pagevec`): the shadow entries
//! that reclaim left in the range go with the clean pages
//! (`invalidate_exceptional_entry` → `clear_shadow_entry`), so a read
//! after it allocates a new page instead of refaulting. fio's
//! `invalidate=1` does this at every pass of a time-based job
//! (docs/fidelity.md, "Why the simulation over-reclaims on the memcg
//! tuning pairs"). The check reads the pages back: a buffered write over a
//! shadow entry is never a refault, with or without fadvise
//! (`crates/workload/tests/write_refaults.rs`).

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::mm::fadvise::fadvise_dontneed;
use reclaimlab_kernel::mm::filemap::file_read;
use reclaimlab_kernel::mm::swap::{SHADOW, SLOT_EMPTY};
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::vmstat::Ev;
use reclaimlab_kernel::{boot, SimConfig};
use std::rc::Rc;

const MACHINE: &str = "name='small'\ncpus=1\nmemory_mib=128\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n";

/// A 64-page file whose first 32 pages were evicted by reclaim (shadow
/// entries) and whose last 32 were never cached; `fadvise` first when
/// asked, then a read of all 64. Returns the file refaults counted and
/// how many shadow entries were left just before the read.
fn read_after_eviction(fadvise_first: bool) -> (u64, u64) {
    let m = Machine::from_toml(MACHINE, "test").unwrap();
    let p = profile("v6.1").unwrap();
    let w: Rc<World> = boot(&SimConfig::new(m, p, Params::defaults(p), 1));
    let f = w.k().create_file(0, 64);
    {
        let mut k = w.k();
        // As `remove_file_page` leaves them: a shadow with a clock reading.
        for i in 0..32 {
            k.files[f as usize].cache.set(i, SHADOW | 1);
        }
    }
    let t = w.k().new_task("fio", TaskKind::User, 0);
    let left = Rc::new(std::cell::Cell::new(0u64));
    let (w2, left2) = (w.clone(), left.clone());
    w.spawn(t, async move {
        if fadvise_first {
            fadvise_dontneed(&w2, f).await;
        }
        {
            let k = w2.k();
            let c = &k.files[f as usize].cache;
            let n = (0..64)
                .filter(|&i| {
                    let e = c.get(i);
                    e != SLOT_EMPTY && e & SHADOW != 0
                })
                .count();
            left2.set(n as u64);
        }
        let _ = file_read(&w2, f, 0, 64).await;
    });
    w.run_until(1_000_000_000);
    let refaults = w.k().event(Ev::WorkingsetRefaultFile);
    (refaults, left.get())
}

#[test]
fn fadvise_dontneed_drops_the_shadow_entries() {
    let (refaults, left) = read_after_eviction(false);
    assert_eq!(
        (refaults, left),
        (32, 32),
        "without fadvise the evicted pages refault"
    );
    let (refaults, left) = read_after_eviction(true);
    assert_eq!(
        left, 0,
        "invalidate_mapping_pages clears the shadow entries"
    );
    assert_eq!(
        refaults, 0,
        "a read after fadvise(DONTNEED) is not a refault"
    );
}
