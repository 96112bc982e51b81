//! Mechanisms found while comparing the 6.1 guest's memcg runs with the
//! simulation (docs/fidelity.md, "Why the simulation over-reclaims on the
//! memcg tuning pairs"). Each test fails with its mechanism taken out;
//! fadvise's shadow entries: crates/kernel/tests/fadvise_shadows.rs.

mod common;
use common::*;

/// 512 MiB, one disk, no swap.
const ROOMY: &str = "name='roomy'\ncpus=2\nmemory_mib=512\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\nseek_us=0\nqueue_depth=64\n";

/// Pages an mmap-latency iteration maps and faults in.
const LAT_PAGES: u64 = 2048;

/// A 2 s mmap-latency loop of `LAT_PAGES` pages with the restarted store
/// costing `touch_ns` and each fault `fault_user_ns` of user time:
/// (iterations begun and completed, the task's user seconds).
fn latency_loop_user(touch_ns: u64, fault_user_ns: u64) -> (u64, f64) {
    let spec = format!(
        "name='lat'\nduration_s=2\nwarmup_s=0\n[[worker]]\nkind='mmap-latency'\npages={LAT_PAGES}\nsleep_ms=5\n"
    );
    let (t, f) = (touch_ns.to_string(), fault_user_ns.to_string());
    let (c, s) = sim(
        &machine(ROOMY),
        "v6.1",
        &spec,
        1,
        &[
            ("cost.touch_page_ns", t.as_str()),
            ("cost.fault_user_ns", f.as_str()),
        ],
    );
    let t = s
        .tasks
        .iter()
        .find(|t| t.comm == "mmap-latency")
        .expect("an mmap-latency task");
    // Every page of each completed iteration was a fault (a new mapping)
    // and one store; samples count the iterations after the first.
    (c.lat.len() as u64 + 1, t.user_s)
}

/// A fault costs the faulting task user time of its own
/// (`cost.fault_user_ns`: the exception's entry and return and the TLB
/// refill the tick books to user mode; docs/bench/cpu-costs.md): with the
/// store free, an mmap-latency loop's user time is its faults'.
#[test]
fn a_fault_costs_user_time_of_its_own() {
    let fault_user_ns = 1000u64;
    let (iterations, user_s) = latency_loop_user(0, fault_user_ns);
    let (lo, hi) = (
        (iterations * LAT_PAGES * fault_user_ns) as f64 / 1e9,
        ((iterations + 1) * LAT_PAGES * fault_user_ns) as f64 / 1e9,
    );
    assert!(
        user_s >= lo * 0.99 && user_s <= hi * 1.01,
        "{iterations} iterations of {LAT_PAGES} faults at {fault_user_ns} ns: {lo:.4}..{hi:.4} s of user time expected, got {user_s:.4}"
    );
}

/// The store that faulted a page in runs again once the fault returns
/// (6.1 x86 `exc_page_fault` → `handle_mm_fault`, then the faulting
/// instruction once more) and costs user time like any store. An
/// mmap-latency loop faults every page of every mapping, so before this
/// its user time was exactly zero.
#[test]
fn a_store_that_faulted_costs_user_time() {
    let touch_ns = 1000u64;
    // The fault's own user time (cost.fault_user_ns) left out: this is the
    // restarted store's.
    let (iterations, user_s) = latency_loop_user(touch_ns, 0);
    let expected = (iterations * LAT_PAGES * touch_ns) as f64 / 1e9;
    assert!(
        user_s >= expected * 0.99,
        "{iterations} iterations of {LAT_PAGES} faulted stores at {touch_ns} ns: {expected:.4} s of user time expected, got {user_s:.4}"
    );
    // And no more than the iterations begun (one may be cut by the end).
    let bound = ((iterations + 1) * LAT_PAGES * touch_ns) as f64 / 1e9;
    assert!(user_s <= bound * 1.01, "user {user_s:.4} > {bound:.4}");
}
