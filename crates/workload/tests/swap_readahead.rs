//! Swap readahead as a fault does it (`swap_vma_readahead`, 5.15 = 6.1
//! mm/swap_state.c), inside a memory cgroup at its limit: the window grows
//! with readahead hits to 2^`vm.page-cluster` pages, and each page of it is
//! charged with reclaim like the faulting one. Before 2026-11-28 the
//! simulator read ahead only from free memory below the limit, so a full
//! cgroup read one page per major fault; the real guests read about six
//! (docs/fidelity.md, "Swap readahead in a full cgroup").

mod common;
use common::*;

/// 512 MiB with 512 MiB of swap on a fast disk.
const SWAPPY: &str = "name='swappy'\ncpus=2\nmemory_mib=512\nswap_mib=512\n[[devices]]\nname='sda'\nwrite_mb_s=400\nread_mb_s=400\nlatency_us=100\nseek_us=0\nqueue_depth=64\n";

/// One hog of 96 MiB passing over its pages in a 64 MiB cgroup: every pass
/// swaps in most of them, in address order.
const HOG_IN_BOX: &str = "name='ra'\nduration_s=20\nwarmup_s=0\n\
    [[cgroup]]\nname='box'\nmemory_max='64M'\n\
    [[worker]]\nkind='anon-hog'\nsize_mib=96\ncgroup='box'\n";

/// The same with its swap device rotational to the kernel (as a qemu
/// guest's virtio disk is): readahead by slot (`swap_cluster_readahead`).
const SWAPPY_ROTATIONAL: &str = "name='swappy'\ncpus=2\nmemory_mib=512\nswap_mib=512\n[[devices]]\nname='vdc'\nwrite_mb_s=400\nread_mb_s=400\nlatency_us=100\nseek_us=0\nqueue_depth=64\nrotational=true\n";

/// (pswpin, pgmajfault, swap_ra, swap_ra_hit) with `vm.page-cluster` = `pc`.
fn swapins(pc: &str) -> (u64, u64, u64, u64) {
    swapins_on(SWAPPY, pc)
}

fn swapins_on(m: &str, pc: &str) -> (u64, u64, u64, u64) {
    let (c, _) = sim(
        &machine(m),
        "v6.1",
        HOG_IN_BOX,
        1,
        &[("vm.page-cluster", pc)],
    );
    (
        c.delta("pswpin"),
        c.delta("pgmajfault"),
        c.delta("swap_ra"),
        c.delta("swap_ra_hit"),
    )
}

#[test]
fn a_full_cgroup_reads_ahead_a_window_per_major_fault() {
    let (pswpin, majflt, ra, hits) = swapins("3");
    assert!(
        pswpin > 20_000,
        "the hog should thrash its cgroup: {pswpin} swap-ins"
    );
    // A sequential pass settles at the full window of 8 pages.
    let per_fault = pswpin as f64 / majflt as f64;
    assert!(
        per_fault > 6.0 && per_fault <= 8.0,
        "{pswpin} pages read in {majflt} major faults: {per_fault:.2} a fault"
    );
    assert_eq!(
        pswpin,
        majflt + ra,
        "every page read is the faulting one or readahead"
    );
    // A sequential pass uses nearly all it read ahead.
    assert!(
        hits * 100 >= ra * 95,
        "{hits} hits of {ra} pages read ahead"
    );
}

#[test]
fn page_cluster_zero_reads_only_the_faulting_page() {
    let (pswpin, majflt, ra, hits) = swapins("0");
    assert!(pswpin > 20_000, "{pswpin} swap-ins");
    assert_eq!(pswpin, majflt);
    assert_eq!((ra, hits), (0, 0));
}

/// On a rotational swap device the window is a block of slots around the
/// faulting one, sized by everyone's hits. A hog's pages swapped out in
/// address order sit in slots in that order (5.15 `scan_swap_map_slots`
/// hands a disk's slots out in sequence), so its sequential pass reads
/// ahead as much, and uses as much of it, as by address.
#[test]
fn a_rotational_swap_device_reads_ahead_by_slot() {
    let (pswpin, majflt, ra, hits) = swapins_on(SWAPPY_ROTATIONAL, "3");
    assert!(pswpin > 20_000, "{pswpin} swap-ins");
    let per_fault = pswpin as f64 / majflt as f64;
    assert!(
        per_fault > 6.0 && per_fault <= 8.0,
        "{pswpin} pages read in {majflt} major faults: {per_fault:.2} a fault"
    );
    assert_eq!(pswpin, majflt + ra);
    assert!(
        hits * 100 >= ra * 90,
        "{hits} hits of {ra} pages read ahead"
    );
}
