//! The booted OS's reclaimable slab (`[os_slab]`, fs/os.rs): its pinned
//! part shows in `nr_slab_reclaimable`, and global reclaim's `shrink_slab`
//! scans its superblocks' unused dentries and inodes (freeing them, and
//! their slab pages once empty) and the ext4 extent-status entries
//! (freeing none: they stay referenced), while a memcg's limit reclaim
//! sees none of it.

mod common;

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::mm::anon::{touch_anon, Access};
use reclaimlab_kernel::mm::memcontrol::MemcgSpec;
use reclaimlab_kernel::vmstat::Ev;
use std::rc::Rc;

const BASE: &str = "name='os'\ncpus=2\nmemory_mib=128\nswap_mib=256\nboot_used_kib=16384\n";
const DEV: &str = "\n[[devices]]\nname='sda'\nwrite_mb_s=400\nread_mb_s=400\nlatency_us=100\n";
/// 8 MiB of reclaimable slab: proc (seeks 0, 210 dentries deleted with
/// their inodes), sysfs (seeks 0, 42 dentries) and ext4 (seeks 2, 84
/// dentries, 32 referenced extents).
const OS_SLAB: &str = "\n[os_slab]\nreclaimable_kib = 8192\n\
    [[os_slab.supers]]\nfs = 'proc'\nseeks = 0\nunused_dentries = 210\ndelete_inode = true\n\
    [[os_slab.supers]]\nfs = 'sysfs'\nseeks = 0\nunused_dentries = 42\n\
    [[os_slab.supers]]\nfs = 'ext4'\nunused_dentries = 84\nreferenced_extents = 32\n";

const MS: u64 = 1_000_000;

fn gauge(w: &World, name: &str) -> u64 {
    let k = w.k();
    let (names, values) = (k.vmstat_names(), k.vmstat_values());
    values[names.iter().position(|n| *n == name).unwrap()]
}

/// A hog touching 160 MiB of anonymous memory (more than the RAM) over and
/// over, in memcg `memcg` (0: the root).
fn hog(w: &Rc<World>, memcg: u16) {
    let t = w.k().new_task("hog", TaskKind::User, 0);
    w.k().tasks[t as usize].memcg = memcg;
    let w2 = w.clone();
    w.spawn(t, async move {
        let pages = 160 * 256;
        let id = w2.k().mmap_anon(pages);
        loop {
            if touch_anon(&w2, id, 0, pages, true).await == Access::Killed {
                break;
            }
        }
    });
}

fn lru_objects(w: &World) -> usize {
    let k = w.k();
    k.supers
        .iter()
        .map(|s| s.dentry_lru.len() + s.inode_lru.len())
        .sum()
}

#[test]
fn the_os_slab_is_carved_out_of_the_memory_in_use_at_boot() {
    let plain = common::boot_v515(&format!("{BASE}{DEV}"), &[]);
    let os = common::boot_v515(&format!("{BASE}{DEV}{OS_SLAB}"), &[]);
    os.k().check_invariants().unwrap();
    assert_eq!(gauge(&os, "nr_free_pages"), gauge(&plain, "nr_free_pages"));
    assert_eq!(gauge(&plain, "nr_slab_reclaimable"), 0);
    assert_eq!(gauge(&os, "nr_slab_reclaimable"), 2048, "8 MiB");
    assert_eq!(
        gauge(&os, "nr_slab_reclaimable") + gauge(&os, "nr_slab_unreclaimable"),
        gauge(&plain, "nr_slab_unreclaimable"),
        "the same memory in use at boot, split"
    );
    // 336 dentries (16 pages of 21) and 336 inodes (56 pages of 6).
    assert_eq!(os.k().slab_pages(true), 16 + 56);
    assert_eq!(lru_objects(&os), 336);
}

#[test]
fn global_reclaim_scans_the_os_slab_and_frees_what_it_can() {
    let w = common::boot_v515(&format!("{BASE}{DEV}{OS_SLAB}"), &[]);
    let before = gauge(&w, "nr_slab_reclaimable");
    hog(&w, 0);
    w.run_until(3_000 * MS);
    let k = w.k();
    k.check_invariants().unwrap();
    assert!(
        k.event(Ev::PgscanKswapd) + k.event(Ev::PgscanDirect) > 0,
        "reclaim ran"
    );
    let scanned = k.event(Ev::SlabsScanned);
    drop(k);
    // The seeks-0 superblocks are asked for half their objects at every
    // pass: the dentries go, proc's inodes with them, sysfs's and ext4's
    // to the inode LRU and then out.
    assert!(
        lru_objects(&w) < 336 / 2,
        "{} objects left",
        lru_objects(&w)
    );
    let after = gauge(&w, "nr_slab_reclaimable");
    assert!(after < before, "slab pages freed: {before} -> {after}");
    // The referenced extents are scanned again and again, never freed.
    assert!(scanned > 336, "slabs_scanned {scanned}");
    assert_eq!(w.k().supers[2].referenced_extents, 32);
}

#[test]
fn limit_reclaim_in_a_memcg_leaves_the_os_slab_alone() {
    let w = common::boot_v515(&format!("{BASE}{DEV}{OS_SLAB}"), &[]);
    let mut spec = MemcgSpec::new("box");
    spec.max = 32 * 256;
    spec.high = spec.max;
    w.k().mem_cgroup_create(&[spec]).unwrap();
    let id = w.k().memcg_by_name("box").unwrap();
    hog(&w, id);
    w.run_until(2_000 * MS);
    let k = w.k();
    k.check_invariants().unwrap();
    assert!(k.memcgs[id as usize].usage > 0);
    assert_eq!(k.event(Ev::PgscanKswapd), 0, "no global reclaim");
    assert_eq!(
        k.event(Ev::SlabsScanned),
        0,
        "shrink_slab_memcg finds none of the root's objects"
    );
    drop(k);
    assert_eq!(lru_objects(&w), 336);
}
