//! Mechanisms found while comparing the 6.1 guest's memcg runs with the
//! simulation (docs/fidelity.md, "Why the simulation over-reclaims on the
//! memcg tuning pairs"). Each test fails with its mechanism taken out;
//! fadvise's shadow entries: crates/kernel/tests/fadvise_shadows.rs.

mod common;
use common::*;

/// 512 MiB, one disk, no swap.
const ROOMY: &str = "name='roomy'\ncpus=2\nmemory_mib=512\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\nseek_us=0\nqueue_depth=64\n";

/// A fault costs the faulting task user time of its own
/// (`cost.fault_user_ns`: the exception's entry and return and the TLB
/// refill the tick books to user mode; docs/bench/cpu-costs.md): with the
/// store free, an mmap-latency loop's user time is its faults'.
#[test]
fn a_fault_costs_user_time_of_its_own() {
    let pages = 2048u64;
    let fault_user_ns = 1000u64;
    let spec = format!(
        "name='lat'\nduration_s=2\nwarmup_s=0\n[[worker]]\nkind='mmap-latency'\npages={pages}\nsleep_ms=5\n"
    );
    let f = fault_user_ns.to_string();
    let (c, s) = sim(
        &machine(ROOMY),
        "v6.1",
        &spec,
        1,
        &[
            ("cost.touch_page_ns", "0"),
            ("cost.fault_user_ns", f.as_str()),
        ],
    );
    let t = s
        .tasks
        .iter()
        .find(|t| t.comm == "mmap-latency")
        .expect("an mmap-latency task");
    let iterations = c.lat.len() as u64 + 1;
    let (lo, hi) = (
        (iterations * pages * fault_user_ns) as f64 / 1e9,
        ((iterations + 1) * pages * fault_user_ns) as f64 / 1e9,
    );
    assert!(
        t.user_s >= lo * 0.99 && t.user_s <= hi * 1.01,
        "{iterations} iterations of {pages} faults at {fault_user_ns} ns: {lo:.4}..{hi:.4} s of user time expected, got {:.4}",
        t.user_s
    );
}

/// The store that faulted a page in runs again once the fault returns
/// (6.1 x86 `exc_page_fault` → `handle_mm_fault`, then the faulting
/// instruction once more) and costs user time like any store. An
/// mmap-latency loop faults every page of every mapping, so before this
/// its user time was exactly zero.
#[test]
fn a_store_that_faulted_costs_user_time() {
    let pages = 2048u64;
    let touch_ns = 1000u64;
    let spec = format!(
        "name='lat'\nduration_s=2\nwarmup_s=0\n[[worker]]\nkind='mmap-latency'\npages={pages}\nsleep_ms=5\n"
    );
    let touch = touch_ns.to_string();
    let (c, s) = sim(
        &machine(ROOMY),
        "v6.1",
        &spec,
        1,
        // The fault's own user time (cost.fault_user_ns) left out: this
        // is the restarted store's.
        &[
            ("cost.touch_page_ns", touch.as_str()),
            ("cost.fault_user_ns", "0"),
        ],
    );
    let t = s
        .tasks
        .iter()
        .find(|t| t.comm == "mmap-latency")
        .expect("an mmap-latency task");
    // Every page of each completed iteration was a fault (a new mapping)
    // and one store; samples count the iterations after the first.
    let iterations = c.lat.len() as u64 + 1;
    let expected = (iterations * pages * touch_ns) as f64 / 1e9;
    assert!(
        t.user_s >= expected * 0.99,
        "{} iterations of {pages} faulted stores at {touch_ns} ns: {expected:.4} s of user time expected, got {:.4}",
        iterations,
        t.user_s
    );
    // And no more than the iterations begun (one may be cut by the end).
    let bound = ((iterations + 1) * pages * touch_ns) as f64 / 1e9;
    assert!(
        t.user_s <= bound * 1.01,
        "user {:.4} > {bound:.4}",
        t.user_s
    );
}
