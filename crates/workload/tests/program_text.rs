//! Program text (mm/text.rs): the workers' hot text pages, under anon
//! pressure, are evicted and refault as workingset (activated, and
//! restored: they were active before eviction), as the real guests'
//! `workingset_*_file` counters show; reclaim's `VM_EXEC` branches
//! (`vmscan.vm_exec_rules`) change how they fare; and without program
//! text (`sim.program_text=0`) no file page refaults at all.

mod common;
use common::*;

/// 256 MiB, 512 MiB of swap, one disk.
const M: &str = "name='t'\ncpus=2\nmemory_mib=256\nswap_mib=512\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\nseek_us=0\nqueue_depth=32\n";

/// Two memory hogs of 160 MiB and the mmap-latency worker, 40 s.
const SPEC: &str = "name='text'\nduration_s=40\n[[worker]]\nkind='anon-hog'\ncount=2\nsize_mib=160\n[[worker]]\nkind='mmap-latency'\npages=8192\n";

/// (refaults, activations, restores, pgmajfault) of file pages.
fn file_refaults(set: &[(&str, &str)]) -> (u64, u64, u64, u64) {
    let (c, _) = sim(&machine(M), "v6.1", SPEC, 1, set);
    (
        c.delta("workingset_refault_file"),
        c.delta("workingset_activate_file"),
        c.delta("workingset_restore_file"),
        c.delta("pgmajfault"),
    )
}

#[test]
fn text_pages_refault_as_workingset() {
    let (refault, activate, restore, _) = file_refaults(&[]);
    eprintln!("with text: refault {refault} activate {activate} restore {restore}");
    assert!(refault > 50, "text pages evicted and read back: {refault}");
    assert!(
        activate * 10 >= refault * 8 && restore * 10 >= activate * 8,
        "mostly activated and restored: {refault} {activate} {restore}"
    );
    let (r0, a0, s0, _) = file_refaults(&[("sim.program_text", "0")]);
    assert_eq!((r0, a0, s0), (0, 0, 0), "no text, no file refaults");
    let (r1, a1, s1, _) = file_refaults(&[("vmscan.vm_exec_rules", "0")]);
    eprintln!("without VM_EXEC rules: refault {r1} activate {a1} restore {s1}");
    // Without them a referenced text page gets a second trip round the
    // inactive list and is deactivated at every active scan: more of it is
    // evicted, and what comes back had mostly not been active (measured:
    // 330/330/330 with the rules, 742/489/35 without).
    assert!(
        r1 > refault,
        "more refaults without the rules: {r1} vs {refault}"
    );
    assert!(s1 * 2 < r1, "few restores without the rules: {s1} of {r1}");
}

/// A machine that says `program_text = false` (as `slice-2021` does) maps
/// no text: no file page refaults, the same as `sim.program_text=0`.
#[test]
fn a_machine_can_leave_program_text_out() {
    let m = format!("program_text = false\n{M}");
    let (c, _) = sim(&machine(&m), "v6.1", SPEC, 1, &[]);
    assert_eq!(c.delta("workingset_refault_file"), 0);
    let slice = reclaimlab_kernel::machine::builtin_machines()
        .into_iter()
        .find(|m| m.name == "slice-2021")
        .expect("slice-2021 is built in");
    assert!(!slice.program_text, "the slice leaves its text out");
}
