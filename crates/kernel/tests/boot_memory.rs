//! The kernel's own memory at boot (`boot_reserved_kib`, `boot_used_kib`):
//! a machine manages its RAM less what the kernel reserved, and starts with
//! the memory in use at boot taken from the free lists.

use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::mm::{zone_watermarks, WMARK_MIN};
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::{boot, SimConfig};

/// A 1 GiB machine on `nodes` nodes with the extra lines `extra`.
fn machine(nodes: u32, extra: &str) -> Machine {
    let t = format!(
        "name='bm'\ncpus=2\nnodes={nodes}\nmemory_mib=1024\nswap_mib=0\n{extra}\n[[devices]]\nname='sda'\n\
         write_mb_s=100\nread_mb_s=100\nlatency_us=100\n"
    );
    Machine::from_toml(&t, "test").unwrap()
}

fn gauge(names: &[&str], values: &[u64], name: &str) -> u64 {
    values[names.iter().position(|n| *n == name).unwrap()]
}

/// (nr_free_pages, nr_slab_unreclaimable, managed pages, min watermark of
/// node 0) right after boot, with the invariants checked.
fn booted(m: Machine) -> (u64, u64, u64, u64) {
    let p = profile("v5.15").unwrap();
    let w = boot(&SimConfig::new(m, p, Params::defaults(p), 1));
    let k = w.k();
    k.check_invariants().unwrap();
    let (names, values) = (k.vmstat_names(), k.vmstat_values());
    (
        gauge(&names, &values, "nr_free_pages"),
        gauge(&names, &values, "nr_slab_unreclaimable"),
        k.nodes.iter().map(|n| n.managed).sum(),
        k.nodes[0].wmark[WMARK_MIN],
    )
}

/// The guest-5.10-stutterp-nothp record's figures: MemTotal 987,392 KiB of
/// 1 GiB (246,848 pages), 87,092 KiB (21,773 pages) in use at its first
/// vmstat sample, whose nr_free_pages was 225,075.
#[test]
fn reserved_and_used_memory_are_not_free_at_boot() {
    let (free, unrecl, managed, min) = booted(machine(1, ""));
    assert_eq!((free, unrecl, managed), (262_144, 0, 262_144));
    // min_free_kbytes = int_sqrt(1 GiB in KiB * 16) = 4096: 1024 pages.
    assert_eq!(min, 1024);

    let m = machine(1, "boot_reserved_kib = 61184\nboot_used_kib = 87092");
    assert_eq!(m.mem_total_bytes(), 246_848 * 4096);
    let (free, unrecl, managed, min) = booted(m);
    assert_eq!(
        (free, unrecl, managed),
        (225_075, 21_773, 246_848),
        "free as the guest's first sample; the used pages unreclaimable kernel memory"
    );
    // init_per_zone_wmark_min sizes min_free_kbytes from the managed pages:
    // int_sqrt(987392 * 16) = 3974 KiB, 993 pages.
    assert_eq!(min, 993);
    assert_eq!(zone_watermarks(0, 10, 246_848, 246_848)[WMARK_MIN], 993);
}

/// On two nodes the memory is split like the RAM; the invariants hold.
#[test]
fn two_nodes_share_the_reserved_and_used_memory() {
    let (free, unrecl, managed, _) = booted(machine(
        2,
        "boot_reserved_kib = 65536\nboot_used_kib = 40004",
    ));
    assert_eq!(managed, 262_144 - 16_384);
    assert_eq!((free, unrecl), (managed - 10_001, 10_001));
}

/// THPs on: khugepaged's `set_recommended_min_free_kbytes` raises the min
/// watermark to 11 pageblocks a zone (the real 1 GiB guests with THPs
/// `always`: `vm.min_free_kbytes` 45056, with `never` 3955); `never`, or
/// no `thp` line, keeps the default.
#[test]
fn thp_raises_the_min_watermark_at_boot() {
    let base = "boot_reserved_kib = 61184\nboot_used_kib = 87092";
    let (.., never) = booted(machine(1, &format!("{base}\nthp = 'never'")));
    let (.., absent) = booted(machine(1, base));
    let (.., always) = booted(machine(1, &format!("{base}\nthp = 'always'")));
    let (.., madvise) = booted(machine(1, &format!("{base}\nthp = 'madvise'")));
    assert_eq!((never, absent), (993, 993));
    assert_eq!(always, 45_056 / 4, "2 zones x 11 pageblocks of 512 pages");
    assert_eq!(madvise, always);
    // An unknown mode is refused with the file named.
    let t = "name='bm'\ncpus=2\nmemory_mib=1024\nthp='sometimes'\n[[devices]]\nname='sda'\n\
             write_mb_s=100\nread_mb_s=100\nlatency_us=100\n";
    let e = Machine::from_toml(t, "bm.toml").unwrap_err().to_string();
    assert!(e.contains("bm.toml") && e.contains("sometimes"), "{e}");
}
