//! stutterp sizes itself from MemTotal, as the real runner reads it from
//! /proc/meminfo: the machine's RAM less what the kernel reserved at boot
//! (`boot_reserved_kib`); a workload cgroup's limit stays the limit.

use reclaimlab_kernel::machine::Machine;
use reclaimlab_workload::sim::stutterp_steps;
use reclaimlab_workload::spec::WorkerKind;
use reclaimlab_workload::stutterp::{sizing, StutterpParams};

const BASE: &str = "name='g'\ncpus=2\nmemory_mib=1024\nswap_mib=1024\n";
const DEV: &str =
    "[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=300\nqueue_depth=64\n";

/// (hogs, MiB each) of the first step.
fn hogs(extra: &str, cgroup: &str) -> (u32, u64) {
    let m = Machine::from_toml(&format!("{BASE}{extra}\n{DEV}{cgroup}"), "test").unwrap();
    let steps = stutterp_steps(&StutterpParams::default(), &m, 20).unwrap();
    let h = steps[0]
        .workers
        .iter()
        .find(|w| w.kind == WorkerKind::AnonHog)
        .unwrap();
    (h.count, h.size_mib)
}

#[test]
fn stutterp_is_sized_from_memtotal() {
    let p = StutterpParams::default();
    let t = |b: u64| {
        let s = sizing(b, 20).unwrap();
        let first = p.worker_counts(2).unwrap()[0];
        let plan = p.step(&s, first).unwrap();
        (plan.split.hogs, plan.wss_per_memhog_mib)
    };
    // The guest-5.10 records' MemTotal: 246,848 pages of 1 GiB.
    let memtotal = 246_848 * 4096;
    assert_eq!(hogs("", ""), t(1 << 30), "no reservation: the RAM");
    let reserved = hogs("boot_reserved_kib = 61184\nboot_used_kib = 87092", "");
    assert_eq!(reserved, t(memtotal), "sized from MemTotal");
    assert_ne!(
        reserved,
        hogs("", ""),
        "MemTotal sizes differ from the RAM's"
    );
    // The memory in use at boot is not subtracted: /proc/meminfo's
    // MemTotal counts it.
    assert_eq!(hogs("boot_reserved_kib = 61184", ""), reserved);
    // A cgroup's limit stays the limit.
    let cg = "[workload_cgroup]\nmemory_max_mib = 256\n";
    assert_eq!(hogs("boot_reserved_kib = 61184", cg), hogs("", cg));
    assert_eq!(hogs("", cg), t(256 << 20));
}
