//! Measures with `perf record -e cpu-clock -g` (software sampling: it works
//! in a VM without a hardware PMU) what the host's kernel spends per page
//! in the steps the simulator charges: scanning and reclaiming a clean
//! page-cache page (`cost.scan_page_ns`, `cost.reclaim_page_ns`), adding a
//! page to the LRU and releasing it at munmap (the other takers of
//! `lruvec->lru_lock`, crates/kernel/src/vmscan/lru_lock.rs), and the anon
//! fault, zeroing and munmap (`cost.fault_ns`, `cost.zero_page_ns`,
//! `cost.unmap_page_ns`).
//!
//! **Workloads.**
//! - `reclaim`: the `lru_lock_hold` single-reader set-up — one thread,
//!   pinned, in a memory cgroup (256 MiB) reading a sparse 512 MiB file in
//!   `/var/tmp` with 128 KiB `pread`s and `POSIX_FADV_RANDOM` (order-0
//!   folios, no I/O: holes read as zeros), round and round, so it
//!   reclaims the file's older clean pages itself (limit reclaim). Pages
//!   scanned and reclaimed come from the `mm_vmscan_lru_shrink_inactive`
//!   and `mm_vmscan_lru_shrink_active` tracepoints recorded in the same
//!   `perf record` (one event per batch of up to 32 pages).
//! - `mmap`: mmtests' `mmap-latency` loop — map 128 MiB anonymous private
//!   (`MADV_NOHUGEPAGE`), write 8 bytes per 4 KiB page, unmap, repeat; no
//!   limit, no memory pressure. Pages are counted by the loop.
//!
//! **Attribution.** Each sample's kernel call chain is read from
//! `perf script`; a sample goes to the group of the innermost frame that
//! names one (the tables below, `RECLAIM` and `MMAP`), so a group holds a
//! function and its callees minus the callees that name another group.
//! `cpu-clock` fires from a timer interrupt, so it cannot fire where
//! interrupts are off: `lru_lock` is taken with `spin_lock_irq*`, and a
//! sample due while it is held lands on the instruction after the unlock
//! re-enables interrupts (in `_raw_spin_unlock_irq[restore]`). Those
//! samples are attributed by the unlock's caller to "… under lru_lock":
//! that is the time the lock was held (plus the uncontended acquisition),
//! which no function-level profile shows otherwise.
//!
//! - `anon` (not run by default: it needs swap): `anon_reclaim_cost`'s
//!   set-up — one pinned thread in a 64 MiB memory cgroup writing one
//!   non-zero word per page of a 256 MiB anonymous mapping
//!   (`MADV_NOHUGEPAGE`), pass after pass, so every touch is a swap-in
//!   fault whose charge reclaims another page to swap (limit reclaim). A
//!   temporary swap file in `--dir` is made if no swap is on, and swapped
//!   off and removed at the end, on error and on Ctrl-C. The `MAPPED`
//!   table splits the inactive scan (isolation, `folio_referenced`'s rmap
//!   walk, checks, put back) and the reclaim (`try_to_unmap`, the TLB
//!   flush, `folio_alloc_swap`, `swap_writeout`, freeing from the swap
//!   cache) and the swap-in fault; `mm_vmscan_write_folio` counts pages
//!   written. `--one-cpu` puts the whole process (and perf) on the
//!   thread's CPU: its mm is then live on one CPU and the flush needs no
//!   IPI (x86's `arch_tlbbatch_should_defer`).
//! - `mapped-file`: the same with a sparse file mapped shared and read
//!   (clean mapped page cache; 6.18's ext4 reads ahead into large folios,
//!   counted by `mm_filemap_delete_from_page_cache`).
//!
//! Needs root, `perf`, kernel symbols (`/proc/kallsyms` with addresses) and
//! a memory cgroup (v1's `memory` hierarchy or v2's controller); `anon`
//! also `mkswap`/`swapon` and 1 GiB in `--dir`. The cgroup, the sparse
//! files, the swap file and perf's data files are removed at the end, on
//! error and on Ctrl-C.
//!
//! Run: `cargo run --release -p reclaimlab-host --example perf_page_costs --
//!      [--workloads reclaim,mmap,anon,mapped-file] [--reps N] [--secs S]
//!      [--freq HZ] [--warm-s S] [--dir DIR] [--limit-mib M] [--file-mib M]
//!      [--mmap-mib M] [--map-mib M] [--map-limit-mib M] [--one-cpu]`
//! Results: docs/bench/cpu-costs.md, "Per-page kernel CPU by function
//! (perf)" and its subsection on mapped pages.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use reclaimlab_host::bench::{
    allowed_cpus, clk_tck, drop_cache, gettid, parse_proc_stat_cpu, pin, sleep_or_stop, Readers,
    TempFile,
};
use reclaimlab_host::cpu_probe::ProbeCgroup;
use reclaimlab_host::{runner, swap, sys};

const MIB: u64 = 1 << 20;
const NAME: &str = "perf_page_costs";
const PAGE: u64 = 4096;

// ---------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    Reclaim,
    Mmap,
    Anon,
    MappedFile,
}

#[derive(Debug, Clone, PartialEq)]
struct Args {
    workloads: Vec<Workload>,
    reps: usize,
    secs: f64,
    freq: u64,
    warm_s: f64,
    dir: PathBuf,
    limit_mib: u64,
    file_mib: u64,
    mmap_mib: u64,
    map_mib: u64,
    map_limit_mib: u64,
    one_cpu: bool,
}

const USAGE: &str = "usage: perf_page_costs [--workloads reclaim,mmap,anon,mapped-file] [--reps N] [--secs S] [--freq HZ] [--warm-s S] [--dir DIR] [--limit-mib M] [--file-mib M] [--mmap-mib M] [--map-mib M] [--map-limit-mib M] [--one-cpu]";

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        workloads: vec![Workload::Reclaim, Workload::Mmap],
        reps: 3,
        secs: 5.0,
        freq: 20_000,
        warm_s: 2.0,
        dir: PathBuf::from("/var/tmp"),
        limit_mib: 256,
        file_mib: 512,
        mmap_mib: 128,
        map_mib: 256,
        map_limit_mib: 64,
        one_cpu: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value; {USAGE}"))
        };
        let num = |v: &str, what: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("`{flag} {v}`: {what} must be a whole number; {USAGE}"))
        };
        let secs = |v: &str| match v.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s <= 600.0 => Ok(s),
            _ => Err(format!(
                "`{flag} {v}`: seconds must be a number in (0, 600]; {USAGE}"
            )),
        };
        match flag.as_str() {
            "--workloads" => {
                let v = value()?;
                a.workloads = v
                    .split(',')
                    .map(|w| match w.trim() {
                        "reclaim" => Ok(Workload::Reclaim),
                        "mmap" => Ok(Workload::Mmap),
                        "anon" => Ok(Workload::Anon),
                        "mapped-file" => Ok(Workload::MappedFile),
                        other => Err(format!(
                            "`--workloads {v}`: `{other}` is not a workload; accepted: reclaim, mmap, anon, mapped-file (comma-separated)"
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--reps" => a.reps = num(&value()?, "the repetitions")? as usize,
            "--secs" => a.secs = secs(&value()?)?,
            "--warm-s" => a.warm_s = secs(&value()?)?,
            "--freq" => a.freq = num(&value()?, "the sampling frequency in Hz")?,
            "--dir" => a.dir = PathBuf::from(value()?),
            "--limit-mib" => a.limit_mib = num(&value()?, "the cgroup limit in MiB")?,
            "--file-mib" => a.file_mib = num(&value()?, "the file size in MiB")?,
            "--mmap-mib" => a.mmap_mib = num(&value()?, "the mapping size in MiB")?,
            "--map-mib" => a.map_mib = num(&value()?, "the mapping size in MiB")?,
            "--map-limit-mib" => a.map_limit_mib = num(&value()?, "the cgroup limit in MiB")?,
            "--one-cpu" => a.one_cpu = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        }
    }
    if !(1..=20).contains(&a.reps) {
        return Err(format!("`--reps {}`: 1..=20", a.reps));
    }
    // cpu-clock's hrtimer period is at least 10 µs.
    if !(100..=100_000).contains(&a.freq) {
        return Err(format!(
            "`--freq {}`: 100..=100000 Hz (cpu-clock samples at most every 10 µs)",
            a.freq
        ));
    }
    if a.limit_mib < 16 || a.limit_mib > 64 * 1024 {
        return Err(format!("`--limit-mib {}`: 16..=65536", a.limit_mib));
    }
    if a.file_mib < 2 * a.limit_mib || a.file_mib > 64 * 1024 {
        return Err(format!(
            "`--file-mib {}`: at least twice the limit ({} MiB) and at most 65536, or the reader rarely reclaims",
            a.file_mib, a.limit_mib
        ));
    }
    if !(1..=4096).contains(&a.mmap_mib) {
        return Err(format!("`--mmap-mib {}`: 1..=4096", a.mmap_mib));
    }
    if a.map_limit_mib < 16 || a.map_mib < 2 * a.map_limit_mib || a.map_mib > 16 * 1024 {
        return Err(format!(
            "`--map-mib {}` / `--map-limit-mib {}`: the limit at least 16 and the mapping at least twice the limit (at most 16384), or the toucher rarely reclaims",
            a.map_mib, a.map_limit_mib
        ));
    }
    if a.workloads.is_empty() {
        return Err(format!("`--workloads` is empty; {USAGE}"));
    }
    Ok(a)
}

// ---------------------------------------------------------------------------
// Attribution (pure)

/// Where a sample due under a spinlock taken with interrupts off lands.
const UNLOCKS: &[&str] = &["_raw_spin_unlock_irq", "_raw_spin_unlock_irqrestore"];

const ALLOC: &[&str] = &[
    "filemap_alloc_folio_noprof",
    "vma_alloc_folio_noprof",
    "alloc_pages_mpol",
    "__alloc_frozen_pages_noprof",
    "alloc_frozen_pages_noprof",
    "__alloc_pages_noprof",
    "alloc_pages_noprof",
    "get_page_from_freelist",
];
const CHARGE: &[&str] = &[
    "__mem_cgroup_charge",
    "charge_memcg",
    "try_charge_memcg",
    "mem_cgroup_charge",
];
const LRU_ADD: &[&str] = &[
    "folio_batch_move_lru",
    "lru_add",
    "lru_add_fn",
    "__folio_batch_add_and_move",
    "folio_add_lru",
    "folio_add_lru_vma",
    "lru_add_drain",
    "lru_add_drain_cpu",
];
const FREE: &[&str] = &[
    "free_unref_folios",
    "free_unref_page_list",
    "free_unref_page",
    "free_frozen_pages",
    "__free_frozen_pages",
    "free_frozen_page_commit",
    "mem_cgroup_uncharge_folios",
    "__mem_cgroup_uncharge_folios",
    "uncharge_batch",
    "uncharge_folio",
    "__mem_cgroup_uncharge",
    "__mem_cgroup_uncharge_list",
];
const RELEASE: &[&str] = &[
    "folios_put_refs",
    "release_pages",
    "__page_cache_release",
    "free_pages_and_swap_cache",
    "tlb_batch_pages_flush",
    "tlb_flush_mmu",
    "tlb_finish_mmu",
];
const ZERO: &[&str] = &[
    "clear_page_erms",
    "clear_page_rep",
    "clear_page_orig",
    "clear_pages",
    "folio_zero_user",
    "clear_user_highpage",
    "clear_user_page",
];

/// How one workload's samples are grouped.
struct Scheme {
    /// Unlock callers: a sample in `_raw_spin_unlock_irq*` called from one
    /// of these goes to the group (the time the lock was held).
    held: &'static [(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    )],
    /// The groups, by function; the innermost frame naming one decides.
    /// Each entry may require an ancestor (outer frame) among a list.
    groups: &'static [(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    )],
    /// Sums of groups, printed after them: the figures the simulator's
    /// parameters mean, less sensitive to where a sample lands between
    /// neighbouring groups.
    sums: &'static [(&'static str, &'static [&'static str])],
}

const RECLAIM: Scheme = Scheme {
    held: &[
        // shrink_inactive_list is inlined into shrink_lruvec on the host's
        // 6.18, and so is the put-back's unlock (`lru_note_cost_unlock_irq`
        // inlined): both holds end in a `_raw_spin_unlock_irq` called from
        // shrink_lruvec, told apart only by the return offset (printed).
        (
            "isolation (+ put back) under lru_lock",
            &[
                "shrink_lruvec",
                "shrink_inactive_list",
                "isolate_lru_folios",
            ],
            &[],
        ),
        (
            "put back under lru_lock",
            &[
                "lru_note_cost_unlock_irq",
                "move_folios_to_lru",
                "lru_note_cost",
            ],
            &[],
        ),
        (
            "LRU add under lru_lock",
            &["folio_batch_move_lru", "__pagevec_lru_add"],
            &[],
        ),
    ],
    groups: &[
        ("isolation, rest", &["isolate_lru_folios"], &[]),
        (
            "freeing (remove mapping, uncharge, free)",
            &["__remove_mapping"],
            &[],
        ),
        (
            "freeing (remove mapping, uncharge, free)",
            FREE,
            &["shrink_folio_list"],
        ),
        (
            "checks (shrink_folio_list, rest)",
            &["shrink_folio_list"],
            &[],
        ),
        (
            "put back, rest",
            &[
                "move_folios_to_lru",
                "lru_note_cost_unlock_irq",
                "lru_note_cost",
            ],
            &[],
        ),
        ("LRU add, rest", LRU_ADD, &[]),
        (
            "reclaim, rest (shrink_node/lruvec, slab, counters)",
            &[
                "try_to_free_mem_cgroup_pages",
                "do_try_to_free_pages",
                "shrink_node",
            ],
            &[],
        ),
        ("memcg charge (not reclaim)", CHARGE, &[]),
        (
            "page-cache insert",
            &["__filemap_add_folio", "filemap_add_folio"],
            &[],
        ),
        ("page allocation", ALLOC, &[]),
        (
            "ext4 reads the hole (zero-fill)",
            &[
                "read_pages",
                "ext4_mpage_readpages",
                "ext4_readahead",
                "zero_user_segments",
            ],
            &[],
        ),
        (
            "copy to user",
            &[
                "copy_page_to_iter",
                "copy_folio_to_iter",
                "_copy_to_user",
                "rep_movs_alternative",
            ],
            &[],
        ),
    ],
    sums: &[
        (
            "= scan: isolation + checks + put back",
            &[
                "isolation (+ put back) under lru_lock",
                "isolation, rest",
                "checks (shrink_folio_list, rest)",
                "put back, rest",
            ],
        ),
        (
            "= scan with reclaim's per-batch rest",
            &[
                "isolation (+ put back) under lru_lock",
                "isolation, rest",
                "checks (shrink_folio_list, rest)",
                "put back, rest",
                "reclaim, rest (shrink_node/lruvec, slab, counters)",
            ],
        ),
        ("= LRU add", &["LRU add under lru_lock", "LRU add, rest"]),
        (
            "= read side: allocate, charge, insert, LRU add, zero-fill, copy",
            &[
                "LRU add under lru_lock",
                "LRU add, rest",
                "memcg charge (not reclaim)",
                "page-cache insert",
                "page allocation",
                "ext4 reads the hole (zero-fill)",
                "copy to user",
            ],
        ),
    ],
};

const MMAP: Scheme = Scheme {
    held: &[
        (
            "LRU add under lru_lock",
            &["folio_batch_move_lru", "__pagevec_lru_add"],
            &[],
        ),
        (
            "release under lru_lock",
            &["folios_put_refs", "release_pages", "__page_cache_release"],
            &[],
        ),
    ],
    groups: &[
        ("fault: zeroing", ZERO, &[]),
        // The fault's first locked instruction after the zeroing is the
        // page-table lock's (uncontended here: one thread); it waits for
        // `clear_page`'s stores to drain, so samples that belong to the
        // zeroing land there.
        (
            "fault: pte lock (drains the zeroing's stores)",
            &["_raw_spin_lock"],
            &["handle_mm_fault"],
        ),
        ("LRU add, rest", LRU_ADD, &[]),
        ("fault: allocation", ALLOC, &["handle_mm_fault"]),
        ("fault: memcg charge", CHARGE, &["handle_mm_fault"]),
        (
            "fault: rest (handle_mm_fault, entry)",
            &[
                "handle_mm_fault",
                "__handle_mm_fault",
                "do_anonymous_page",
                "do_user_addr_fault",
                "exc_page_fault",
                "asm_exc_page_fault",
            ],
            &[],
        ),
        ("munmap: uncharge and free", FREE, &[]),
        ("munmap: release, rest", RELEASE, &[]),
        (
            "munmap: zap",
            &[
                "unmap_page_range",
                "zap_pte_range",
                "zap_present_ptes",
                "unmap_vmas",
            ],
            &[],
        ),
    ],
    sums: &[
        (
            "= fault without zeroing: allocation + charge + rest + LRU add",
            &[
                "fault: allocation",
                "fault: memcg charge",
                "fault: rest (handle_mm_fault, entry)",
                "LRU add under lru_lock",
                "LRU add, rest",
            ],
        ),
        (
            "= zeroing + pte lock",
            &[
                "fault: zeroing",
                "fault: pte lock (drains the zeroing's stores)",
            ],
        ),
        (
            "= fault with zeroing",
            &[
                "fault: zeroing",
                "fault: pte lock (drains the zeroing's stores)",
                "fault: allocation",
                "fault: memcg charge",
                "fault: rest (handle_mm_fault, entry)",
                "LRU add under lru_lock",
                "LRU add, rest",
            ],
        ),
        ("= LRU add", &["LRU add under lru_lock", "LRU add, rest"]),
        (
            "= munmap: zap + release + free",
            &[
                "munmap: zap",
                "munmap: release, rest",
                "release under lru_lock",
                "munmap: uncharge and free",
            ],
        ),
    ],
};

/// Reclaim through a mapping: `anon` (swap) and `mapped-file` (clean
/// mapped page cache). Function names are 6.18's (the host's
/// `/proc/kallsyms`; mainline `mm/vmscan.c`, `mm/rmap.c`, `mm/page_io.c`,
/// `mm/swap_state.c`, `mm/memory.c`). `pageout`, `writeout`,
/// `folio_check_references` and `shrink_inactive_list` are inlined there.
const MAPPED: Scheme = Scheme {
    held: &[
        // The write completion's rotation to the inactive tail
        // (`folio_rotate_reclaimable` → `folio_batch_move_lru`), from the
        // disk's interrupt while this thread runs.
        (
            "write completion: rotate under lru_lock",
            &["folio_batch_move_lru"],
            &["folio_end_writeback", "folio_rotate_reclaimable"],
        ),
        (
            "active list: isolation + put back under lru_lock",
            &["shrink_active_list"],
            &[],
        ),
        (
            "inactive: isolation (+ put back) under lru_lock",
            &[
                "shrink_lruvec",
                "shrink_inactive_list",
                "isolate_lru_folios",
            ],
            &[],
        ),
        (
            "inactive: put back under lru_lock",
            &[
                "lru_note_cost_unlock_irq",
                "move_folios_to_lru",
                "lru_note_cost",
            ],
            &[],
        ),
        (
            "LRU add under lru_lock",
            &["folio_batch_move_lru", "__pagevec_lru_add"],
            &[],
        ),
    ],
    groups: &[
        // perf's recording of the tracepoints: the measurement's own cost.
        (
            "perf's own event recording (tracepoints)",
            &[
                "perf_swevent_event",
                "perf_tp_event",
                "perf_trace_buf_alloc",
                "perf_trace_mm_vmscan_write_folio",
                "perf_trace_mm_vmscan_lru_shrink_inactive",
                "perf_trace_mm_vmscan_lru_shrink_active",
                "__perf_event_overflow",
                "perf_event_output_forward",
                "perf_trace_run_bpf_submit",
            ],
            &[],
        ),
        // Scan of the inactive list.
        ("inactive: isolation, rest", &["isolate_lru_folios"], &[]),
        (
            "inactive: folio_referenced (rmap walk, young bits)",
            &["folio_referenced"],
            &["shrink_folio_list"],
        ),
        // Reclaim: unmap, swap slot, writeout, freeing.
        (
            "unmap: TLB flush (deferred batch, IPIs)",
            &[
                "try_to_unmap_flush",
                "try_to_unmap_flush_dirty",
                "arch_tlbbatch_flush",
                "flush_tlb_multi",
                "native_flush_tlb_multi",
                "kvm_flush_tlb_multi",
                "flush_tlb_mm_range",
                "flush_tlb_func",
                "native_flush_tlb_one_user",
                "smp_call_function_many_cond",
            ],
            &["shrink_folio_list"],
        ),
        (
            "unmap: try_to_unmap (rmap walk, pte → swap entry)",
            &["try_to_unmap"],
            &[],
        ),
        (
            "swap slot + swap cache (folio_alloc_swap)",
            &["folio_alloc_swap", "swap_cache_add_folio"],
            &[],
        ),
        (
            "writeout: submission (swap_writeout, bio)",
            &["swap_writeout", "__swap_writepage", "swap_writepage"],
            &[],
        ),
        (
            "writeout: plug flush (request to the disk)",
            &["blk_finish_plug", "__blk_flush_plug"],
            &["shrink_lruvec", "shrink_node", "shrink_folio_list"],
        ),
        (
            "freeing (remove mapping / swap cache, uncharge, free)",
            &["__remove_mapping"],
            &[],
        ),
        (
            "freeing (remove mapping / swap cache, uncharge, free)",
            FREE,
            &["shrink_folio_list"],
        ),
        (
            "inactive: checks (shrink_folio_list, rest)",
            &["shrink_folio_list"],
            &[],
        ),
        (
            "inactive: put back, rest",
            &[
                "move_folios_to_lru",
                "lru_note_cost_unlock_irq",
                "lru_note_cost",
            ],
            &[],
        ),
        (
            "active list: folio_referenced",
            &["folio_referenced"],
            &["shrink_active_list"],
        ),
        ("active list: rest", &["shrink_active_list"], &[]),
        (
            "write completion (end_swap_bio_write, end_writeback)",
            &[
                "end_swap_bio_write",
                "__end_swap_bio_write",
                "folio_end_writeback",
            ],
            &[],
        ),
        (
            "reclaim, rest (shrink_node/lruvec, slab, counters)",
            &[
                "try_to_free_mem_cgroup_pages",
                "do_try_to_free_pages",
                "shrink_node",
                "shrink_lruvec",
            ],
            &[],
        ),
        // The fault that brings a page back (anon) or in (file).
        (
            "swap-in: read submission",
            &[
                "swap_read_folio",
                "swap_read_unplug",
                "__swap_read_unplug",
                "blk_finish_plug",
            ],
            &["do_swap_page"],
        ),
        (
            "swap-in: memcg charge (not its reclaim)",
            &["mem_cgroup_swapin_charge_folio"],
            &[],
        ),
        ("page allocation", ALLOC, &[]),
        (
            "swap-in: readahead, swap cache (rest)",
            &[
                "swapin_readahead",
                "swap_cluster_readahead",
                "swap_vma_readahead",
                "__read_swap_cache_async",
                "read_swap_cache_async",
            ],
            &[],
        ),
        (
            "swap-in: do_swap_page, rest (pte, rmap, swap free)",
            &["do_swap_page"],
            &[],
        ),
        ("memcg charge (not reclaim)", CHARGE, &[]),
        ("LRU add, rest", LRU_ADD, &[]),
        ("first-touch fault: zeroing", ZERO, &[]),
        (
            "file fault (filemap_fault, readahead, ext4)",
            &["filemap_fault", "do_read_fault", "do_fault"],
            &[],
        ),
        (
            "fault, rest (entry, handle_mm_fault)",
            &[
                "handle_mm_fault",
                "__handle_mm_fault",
                "do_anonymous_page",
                "do_user_addr_fault",
                "exc_page_fault",
                "asm_exc_page_fault",
            ],
            &[],
        ),
    ],
    sums: &[
        (
            "= inactive scan: isolation + folio_referenced + checks + put back",
            &[
                "inactive: isolation (+ put back) under lru_lock",
                "inactive: put back under lru_lock",
                "inactive: isolation, rest",
                "inactive: folio_referenced (rmap walk, young bits)",
                "inactive: checks (shrink_folio_list, rest)",
                "inactive: put back, rest",
            ],
        ),
        (
            "= inactive scan without folio_referenced",
            &[
                "inactive: isolation (+ put back) under lru_lock",
                "inactive: put back under lru_lock",
                "inactive: isolation, rest",
                "inactive: checks (shrink_folio_list, rest)",
                "inactive: put back, rest",
            ],
        ),
        (
            "= active list scan",
            &[
                "active list: isolation + put back under lru_lock",
                "active list: folio_referenced",
                "active list: rest",
            ],
        ),
        (
            "= unmap (try_to_unmap + TLB flush)",
            &[
                "unmap: TLB flush (deferred batch, IPIs)",
                "unmap: try_to_unmap (rmap walk, pte → swap entry)",
            ],
        ),
        (
            "= swap-out: unmap + slot/cache + writeout",
            &[
                "unmap: TLB flush (deferred batch, IPIs)",
                "unmap: try_to_unmap (rmap walk, pte → swap entry)",
                "swap slot + swap cache (folio_alloc_swap)",
                "writeout: submission (swap_writeout, bio)",
                "writeout: plug flush (request to the disk)",
            ],
        ),
        (
            "= write completion (in its interrupt)",
            &[
                "write completion (end_swap_bio_write, end_writeback)",
                "write completion: rotate under lru_lock",
            ],
        ),
        (
            "= swap-in fault (without the reclaim it triggers)",
            &[
                "swap-in: read submission",
                "swap-in: memcg charge (not its reclaim)",
                "page allocation",
                "swap-in: readahead, swap cache (rest)",
                "swap-in: do_swap_page, rest (pte, rmap, swap free)",
                "memcg charge (not reclaim)",
                "LRU add, rest",
                "LRU add under lru_lock",
                "fault, rest (entry, handle_mm_fault)",
            ],
        ),
    ],
};

/// Samples per group (and the total) for one run.
#[derive(Debug, Default, Clone)]
struct Tally {
    /// Group name → samples.
    groups: HashMap<String, u64>,
    /// Kernel samples outside every group.
    kernel_rest: u64,
    /// Samples in user space.
    user: u64,
    /// Leaf kernel symbol → samples (`perf report --no-children --sort symbol`).
    leaves: HashMap<String, u64>,
    /// Unlock leaf samples by caller, with its offset.
    unlock_callers: HashMap<String, u64>,
    /// "group\tleaf" → samples: what each group's time is spent in.
    group_leaves: HashMap<String, u64>,
    /// TLB-flush samples by call chain up to `shrink_folio_list`.
    flush_chains: HashMap<String, u64>,
    /// From the tracepoints: pages scanned (inactive + active), reclaimed.
    scanned: u64,
    reclaimed: u64,
    active_scanned: u64,
    batches: u64,
    /// Inactive-list pages scanned in anon batches; pages activated and
    /// kept (rotated: referenced once) by those scans; the active list's
    /// referenced pages; pages written out (`mm_vmscan_write_folio`).
    anon_scanned: u64,
    activated: u64,
    ref_keep: u64,
    active_referenced: u64,
    written: u64,
    /// Page-cache folios removed and their pages
    /// (`mm_filemap_delete_from_page_cache`).
    folios_removed: u64,
    pages_removed: u64,
    /// Inactive-list pages found still under writeback.
    writeback: u64,
    /// The thread's page faults and major faults (`/proc/.../stat`,
    /// read around `perf record`).
    faults: u64,
    major_faults: u64,
}

impl Tally {
    fn kernel(&self) -> u64 {
        self.groups.values().sum::<u64>() + self.kernel_rest
    }
}

/// The group of one sample, from its kernel frames (innermost first).
fn group_of(scheme: &Scheme, frames: &[&str]) -> Option<&'static str> {
    if let (Some(leaf), Some(caller)) = (frames.first(), frames.get(1)) {
        if UNLOCKS.contains(leaf) {
            if let Some(g) = scheme.held.iter().find(|g| {
                g.1.contains(caller)
                    && (g.2.is_empty() || frames[2..].iter().any(|a| g.2.contains(a)))
            }) {
                return Some(g.0);
            }
        }
    }
    for (i, f) in frames.iter().enumerate() {
        for &(name, funcs, needs) in scheme.groups {
            if funcs.contains(f)
                && (needs.is_empty() || frames[i + 1..].iter().any(|a| needs.contains(a)))
            {
                return Some(name);
            }
        }
    }
    None
}

/// A frame line of `perf script`: `\t ffffffff81234 sym+0x1f ([kernel.kallsyms])`;
/// the symbol without offset, the symbol with it, and whether it is the
/// kernel's.
fn parse_frame(line: &str) -> Option<(&str, &str, bool)> {
    let mut t = line.split_whitespace();
    let _addr = t.next()?;
    let sym = t.next()?;
    let dso = line.rsplit_once('(').map(|x| x.1).unwrap_or("");
    let name = sym.split('+').next().unwrap_or(sym);
    Some((name, sym, dso.starts_with("[kernel.kallsyms]")))
}

/// The value of `key=` in a tracepoint's `key=value` list.
fn field(text: &str, key: &str) -> Option<u64> {
    text.split_whitespace()
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))?
        .parse()
        .ok()
}

/// Reads `perf script`'s text: samples (a header line, then frame lines,
/// then a blank line), the cpu-clock ones attributed.
fn tally(scheme: &Scheme, text: &str) -> Tally {
    let mut t = Tally::default();
    let mut lines = text.lines().peekable();
    while let Some(h) = lines.next() {
        if h.trim().is_empty() || h.starts_with('#') || h.starts_with(char::is_whitespace) {
            continue;
        }
        let mut frames: Vec<(&str, &str, bool)> = Vec::new();
        while let Some(l) = lines.peek() {
            if l.trim().is_empty() || !l.starts_with(char::is_whitespace) {
                break;
            }
            if let Some(f) = parse_frame(l) {
                frames.push(f);
            }
            lines.next();
        }
        if h.contains("cpu-clock") {
            match frames.first() {
                Some((_, _, true)) => {
                    let kernel = || frames.iter().filter(|f| f.2);
                    let k: Vec<&str> = kernel().map(|f| f.0).collect();
                    *t.leaves.entry(k[0].to_string()).or_default() += 1;
                    if UNLOCKS.contains(&k[0]) {
                        // With the call's return offset: inlined callers
                        // differ only in it.
                        let c = kernel().nth(1).map_or("?", |f| f.1);
                        *t.unlock_callers.entry(c.to_string()).or_default() += 1;
                    }
                    let g = group_of(scheme, &k);
                    *t.group_leaves
                        .entry(format!("{}\t{}", g.unwrap_or("kernel, rest"), k[0]))
                        .or_default() += 1;
                    if g.is_some_and(|g| g.starts_with("unmap: TLB flush")) {
                        let chain: Vec<&str> = kernel()
                            .map(|f| f.1)
                            .take_while(|s| !s.starts_with("shrink_folio_list+"))
                            .chain(
                                kernel()
                                    .map(|f| f.1)
                                    .find(|s| s.starts_with("shrink_folio_list+")),
                            )
                            .collect();
                        *t.flush_chains.entry(chain.join(" < ")).or_default() += 1;
                    }
                    match g {
                        Some(g) => *t.groups.entry(g.to_string()).or_default() += 1,
                        None => t.kernel_rest += 1,
                    }
                }
                _ => t.user += 1,
            }
        }
    }
    t
}

/// Adds the pages of the reclaim tracepoints in `text` (`perf script`'s
/// lines, one an event) to `t`.
fn count_tracepoints(t: &mut Tally, text: &str) {
    for h in text.lines() {
        if let Some((_, rest)) = h.split_once("vmscan:mm_vmscan_lru_shrink_inactive:") {
            let n = field(rest, "nr_scanned").unwrap_or(0);
            t.scanned += n;
            t.reclaimed += field(rest, "nr_reclaimed").unwrap_or(0);
            t.batches += 1;
            if rest.contains("RECLAIM_WB_ANON") {
                t.anon_scanned += n;
            }
            t.activated += field(rest, "nr_activate_anon").unwrap_or(0)
                + field(rest, "nr_activate_file").unwrap_or(0);
            t.ref_keep += field(rest, "nr_ref_keep").unwrap_or(0);
            t.writeback += field(rest, "nr_writeback").unwrap_or(0);
        } else if let Some((_, rest)) = h.split_once("vmscan:mm_vmscan_lru_shrink_active:") {
            let n = field(rest, "nr_taken").unwrap_or(0);
            t.scanned += n;
            t.active_scanned += n;
            t.active_referenced += field(rest, "nr_referenced").unwrap_or(0);
        } else if h.contains("vmscan:mm_vmscan_write_folio:") {
            t.written += 1;
        } else if let Some((_, rest)) = h.split_once("filemap:mm_filemap_delete_from_page_cache:") {
            t.folios_removed += 1;
            t.pages_removed += 1 << field(rest, "order").unwrap_or(0).min(20);
        }
    }
}

/// Mean and sample standard deviation.
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

// ---------------------------------------------------------------------------
// perf

/// `perf record` running on this host, stopped (SIGINT, then waited for)
/// on drop; its data file is removed with the [`TempFile`] that owns it.
struct PerfChild(Option<Child>);

impl PerfChild {
    fn stop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: a signal to the child we started, by its pid.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let _ = c.wait();
        }
    }
}

impl Drop for PerfChild {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Records `tid`'s samples for `secs` into `out` (tracepoints: `events`).
/// perf runs in its own process group (a terminal's Ctrl-C reaches only
/// us), and in `root_procs`' cgroup when given (outside the measured
/// memory cgroup: its buffers must not be reclaimed there).
fn perf_record(
    tid: u32,
    freq: u64,
    secs: f64,
    events: &[&str],
    out: &Path,
    root_procs: Option<&Path>,
    stop: &AtomicBool,
) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let period = 1_000_000_000 / freq;
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-q", "-g", "-e"])
        .arg(format!("cpu-clock/period={period}/"));
    for e in events {
        if e.contains('/') {
            cmd.arg("-e").arg(e);
        } else {
            cmd.arg("-e").arg(format!("{e}/call-graph=no/"));
        }
    }
    cmd.arg("-t")
        .arg(tid.to_string())
        .arg("-o")
        .arg(out)
        .args(["--", "sleep"])
        .arg(format!("{secs}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run perf record: {e}"))?;
    let mut guard = PerfChild(Some(child));
    if let (Some(p), Some(c)) = (root_procs, guard.0.as_ref()) {
        let _ = fs::write(p, c.id().to_string());
    }
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let c = guard.0.as_mut().expect("perf child");
        match c.try_wait() {
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = c.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                guard.0 = None;
                if !status.success() {
                    return Err(format!(
                        "perf record failed ({status}): {}",
                        err.trim().lines().take(5).collect::<Vec<_>>().join(" / ")
                    ));
                }
                return Ok(());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for perf record: {e}")),
        }
    }
}

/// `perf script`'s text for `data`, with the fields `fields`. (perf 6.1
/// leaves the tracepoints out when the fields include `ip`, so the call
/// chains and the tracepoints are read in two passes.)
fn perf_script(data: &Path, fields: &str) -> Result<String, String> {
    let out = Command::new("perf")
        .args(["script", "-F", fields, "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run perf script: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "perf script failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

// ---------------------------------------------------------------------------
// Runs

/// The anon workload's temporary swap file, swapped off and removed on drop.
struct SwapFile(PathBuf);

impl Drop for SwapFile {
    fn drop(&mut self) {
        if let Err(e) = swap::remove_swap_file(&self.0) {
            eprintln!("{NAME}: {e}");
        }
    }
}

/// One repetition's result.
struct Run {
    tally: Tally,
    /// Pages: scanned (reclaim) or touched (mmap).
    pages: u64,
    /// ns per cpu-clock sample.
    period_ns: f64,
    wall_s: f64,
    /// Everything else's CPU use during the window, in CPUs, and steal.
    other_cpus: f64,
    steal_cpus: f64,
    loadavg: String,
}

fn proc_stat() -> Option<(u64, u64)> {
    parse_proc_stat_cpu(&fs::read_to_string("/proc/stat").unwrap_or_default())
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs perf over `tid` and reads the result. `own_cpu_s` gives the
/// measured thread's on-CPU seconds so far (to subtract from `/proc/stat`).
#[allow(clippy::too_many_arguments)]
fn record_and_tally(
    args: &Args,
    scheme: &Scheme,
    tid: u32,
    events: &[&str],
    data: &Path,
    root_procs: Option<&Path>,
    stop: &AtomicBool,
    leave_cgroup: impl FnOnce(),
) -> Result<(Tally, f64, f64, f64, String), String> {
    let _data_guard = TempFile(data.to_path_buf());
    let (s0, t0, c0) = (proc_stat(), sys::mono_ns(), thread_on_cpu_s(tid));
    perf_record(tid, args.freq, args.secs, events, data, root_procs, stop)?;
    let (s1, t1, c1) = (proc_stat(), sys::mono_ns(), thread_on_cpu_s(tid));
    let load = loadavg();
    leave_cgroup();
    let text = perf_script(data, "comm,tid,event,ip,sym,symoff,dso")?;
    let mut tally = tally(scheme, &text);
    drop(text);
    if !events.is_empty() {
        count_tracepoints(&mut tally, &perf_script(data, "comm,tid,event,trace")?);
    }
    let wall = (t1 - t0) as f64 / 1e9;
    let tck = clk_tck();
    let (other, steal) = match (s0, s1) {
        (Some(a), Some(b)) => (
            (((b.0 - a.0) as f64 / tck) - (c1 - c0)).max(0.0) / wall,
            ((b.1 - a.1) as f64 / tck) / wall,
        ),
        _ => (f64::NAN, f64::NAN),
    };
    Ok((tally, wall, other, steal, load))
}

fn thread_on_cpu_s(tid: u32) -> f64 {
    fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0) as f64
        / 1e9
}

fn run_reclaim(args: &Args, file: &Path, rep: usize, stop: &AtomicBool) -> Result<Run, String> {
    drop_cache(file);
    let cpus = allowed_cpus();
    let cpu = *cpus.last().ok_or("no CPU allowed")?;
    let cg = ProbeCgroup::create((args.limit_mib * MIB) as usize).ok_or_else(|| {
        "cannot make a memory cgroup (needs root and v1's memory hierarchy at /sys/fs/cgroup/memory or v2's memory controller)".to_string()
    })?;
    let root_procs = cg
        .dir
        .parent()
        .map(|p| p.join("cgroup.procs"))
        .ok_or("the cgroup has no parent")?;
    let readers = Readers::start(&[file.to_path_buf()], &[cpu], true)?;
    sleep_or_stop(stop, args.warm_s)?;
    let tid = readers.tids[0];
    let data = args.dir.join(format!(
        ".reclaimlab-perf-{}-reclaim-{rep}.data",
        std::process::id()
    ));
    let mut cg = Some(cg);
    let mut readers = Some(readers);
    let (tally, wall, other, steal, load) = record_and_tally(
        args,
        &RECLAIM,
        tid,
        &[
            "vmscan:mm_vmscan_lru_shrink_inactive",
            "vmscan:mm_vmscan_lru_shrink_active",
        ],
        &data,
        Some(&root_procs),
        stop,
        || {
            if let Some(r) = readers.take() {
                let _ = r.finish();
            }
            drop_cache(file);
            drop(cg.take());
        },
    )?;
    Ok(Run {
        pages: tally.scanned,
        tally,
        period_ns: 1e9 / args.freq as f64,
        wall_s: wall,
        other_cpus: other,
        steal_cpus: steal,
        loadavg: load,
    })
}

/// mmtests' mmap-latency loop in a pinned thread, counting pages touched.
struct MmapLoop {
    stop: Arc<AtomicBool>,
    pages: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<Result<(), String>>>,
    tid: u32,
}

impl MmapLoop {
    fn start(bytes: usize, cpu: usize) -> Result<MmapLoop, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let pages = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let (s, p) = (Arc::clone(&stop), Arc::clone(&pages));
        let handle = std::thread::spawn(move || {
            pin(cpu);
            let _ = tx.send(gettid());
            let mut local = 0u64;
            while !s.load(Ordering::Relaxed) {
                // SAFETY: a fresh private anonymous mapping of `bytes`,
                // written within its bounds and unmapped below.
                unsafe {
                    let m = libc::mmap(
                        std::ptr::null_mut(),
                        bytes,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    if m == libc::MAP_FAILED {
                        return Err(format!(
                            "mmap of {bytes} bytes failed: {}",
                            std::io::Error::last_os_error()
                        ));
                    }
                    libc::madvise(m, bytes, libc::MADV_NOHUGEPAGE);
                    let base = m as *mut u8;
                    for off in (0..bytes).step_by(PAGE as usize) {
                        std::ptr::write_volatile(base.add(off) as *mut u64, off as u64 | 1);
                        local += 1;
                        if local.is_multiple_of(256) {
                            p.store(local, Ordering::Relaxed);
                        }
                    }
                    libc::munmap(m, bytes);
                }
            }
            Ok(())
        });
        let tid = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the mmap thread did not start".to_string())?;
        Ok(MmapLoop {
            stop,
            pages,
            handle: Some(handle),
            tid,
        })
    }

    fn finish(mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the mmap thread panicked".into()),
            None => Ok(()),
        }
    }
}

impl Drop for MmapLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn run_mmap(args: &Args, rep: usize, stop: &AtomicBool) -> Result<Run, String> {
    let cpu = *allowed_cpus().last().ok_or("no CPU allowed")?;
    // A memory cgroup of its own without a (practical) limit, one level
    // below the root as the reclaim workload's: the charge path is the
    // same in every run, whichever cgroup this process started in.
    let cg = ProbeCgroup::create(1 << 62);
    if cg.is_none() {
        eprintln!(
            "{NAME}: no memory cgroup of its own for the mmap loop; it runs in {}",
            memcg_path()
        );
    }
    let lp = MmapLoop::start((args.mmap_mib * MIB) as usize, cpu)?;
    sleep_or_stop(stop, args.warm_s)?;
    let data = args.dir.join(format!(
        ".reclaimlab-perf-{}-mmap-{rep}.data",
        std::process::id()
    ));
    let p0 = lp.pages.load(Ordering::Relaxed);
    let pages = Arc::clone(&lp.pages);
    let mut lp = Some(lp);
    let mut p1 = 0;
    let (tally, wall, other, steal, load) = record_and_tally(
        args,
        &MMAP,
        lp.as_ref().map_or(0, |l| l.tid),
        &[],
        &data,
        None,
        stop,
        || {
            p1 = pages.load(Ordering::Relaxed);
            if let Some(l) = lp.take() {
                let _ = l.finish();
            }
            drop(cg);
        },
    )?;
    Ok(Run {
        tally,
        pages: p1 - p0,
        period_ns: 1e9 / args.freq as f64,
        wall_s: wall,
        other_cpus: other,
        steal_cpus: steal,
        loadavg: load,
    })
}

/// A pinned thread touching one word per page of a mapping, pass after
/// pass: anonymous private (written, non-zero, so every pass dirties the
/// page again) or a file's shared mapping (read).
struct Toucher {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<(), String>>>,
    tid: u32,
}

impl Toucher {
    fn start(bytes: usize, file: Option<PathBuf>, cpu: usize) -> Result<Toucher, String> {
        use std::os::unix::io::AsRawFd;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let s = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            pin(cpu);
            let f = match &file {
                Some(p) => {
                    Some(File::open(p).map_err(|e| format!("cannot open {}: {e}", p.display()))?)
                }
                None => None,
            };
            let (prot, flags, fd) = match &f {
                Some(f) => (libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd()),
                None => (
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                ),
            };
            // SAFETY: a fresh mapping of `bytes`, touched within its bounds
            // and unmapped below.
            let m = unsafe { libc::mmap(std::ptr::null_mut(), bytes, prot, flags, fd, 0) };
            if m == libc::MAP_FAILED {
                return Err(format!(
                    "mmap of {bytes} bytes failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: advice on our own mapping. (Not MADV_RANDOM for the
            // file: 6.18's `vma_has_recency` then makes folio_referenced
            // skip the mapping. So the file's fault readahead makes large
            // folios; the removal tracepoint counts them.)
            unsafe { libc::madvise(m, bytes, libc::MADV_NOHUGEPAGE) };
            let _ = tx.send(gettid());
            let base = m as *mut u8;
            let mut pass = 1u64;
            let mut sum = 0u64;
            'outer: loop {
                for off in (0..bytes).step_by(PAGE as usize) {
                    if off % (1 << 20) == 0 && s.load(Ordering::Relaxed) {
                        break 'outer;
                    }
                    // SAFETY: off < bytes, within the mapping.
                    unsafe {
                        let w = base.add(off) as *mut u64;
                        if f.is_some() {
                            sum = sum.wrapping_add(std::ptr::read_volatile(w));
                        } else {
                            std::ptr::write_volatile(w, pass << 32 | off as u64 | 1);
                        }
                    }
                }
                pass += 1;
            }
            std::hint::black_box(sum);
            // SAFETY: unmapping what we mapped.
            unsafe { libc::munmap(m, bytes) };
            Ok(())
        });
        let tid = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the touching thread did not start".to_string())?;
        Ok(Toucher {
            stop,
            handle: Some(handle),
            tid,
        })
    }

    fn finish(mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the touching thread panicked".into()),
            None => Ok(()),
        }
    }
}

impl Drop for Toucher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The `anon` workload (`file` None) or `mapped-file` (a sparse file):
/// the toucher in a memory cgroup of `--map-limit-mib`, perf over it with
/// the reclaim tracepoints and the thread's faults.
fn run_mapped(
    args: &Args,
    file: Option<&Path>,
    rep: usize,
    stop: &AtomicBool,
) -> Result<Run, String> {
    if let Some(f) = file {
        drop_cache(f);
    }
    let cpu = *allowed_cpus().last().ok_or("no CPU allowed")?;
    let cg = ProbeCgroup::create((args.map_limit_mib * MIB) as usize).ok_or_else(|| {
        "cannot make a memory cgroup (needs root and v1's memory hierarchy at /sys/fs/cgroup/memory or v2's memory controller)".to_string()
    })?;
    let root_procs = cg
        .dir
        .parent()
        .map(|p| p.join("cgroup.procs"))
        .ok_or("the cgroup has no parent")?;
    let t = Toucher::start(
        (args.map_mib * MIB) as usize,
        file.map(Path::to_path_buf),
        cpu,
    )?;
    sleep_or_stop(stop, args.warm_s)?;
    let tid = t.tid;
    let what = if file.is_some() {
        "mapped-file"
    } else {
        "anon"
    };
    let data = args.dir.join(format!(
        ".reclaimlab-perf-{}-{what}-{rep}.data",
        std::process::id()
    ));
    let mut cg = Some(cg);
    let mut t = Some(t);
    let mut finished = Ok(());
    let f0 = thread_faults(tid);
    let mut f1 = (0, 0);
    let (tally, wall, other, steal, load) = record_and_tally(
        args,
        &MAPPED,
        tid,
        &[
            "vmscan:mm_vmscan_lru_shrink_inactive",
            "vmscan:mm_vmscan_lru_shrink_active",
            "vmscan:mm_vmscan_write_folio",
            "filemap:mm_filemap_delete_from_page_cache",
        ],
        &data,
        Some(&root_procs),
        stop,
        || {
            f1 = thread_faults(tid);
            if let Some(t) = t.take() {
                finished = t.finish();
            }
            if let Some(f) = file {
                drop_cache(f);
            }
            drop(cg.take());
        },
    )?;
    finished?;
    let mut tally = tally;
    tally.faults = f1.0.saturating_sub(f0.0);
    tally.major_faults = f1.1.saturating_sub(f0.1);
    Ok(Run {
        pages: tally.scanned,
        tally,
        period_ns: 1e9 / args.freq as f64,
        wall_s: wall,
        other_cpus: other,
        steal_cpus: steal,
        loadavg: load,
    })
}

/// A thread's (minor + major, major) faults so far, from its `stat`.
fn thread_faults(tid: u32) -> (u64, u64) {
    let stat = fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    let f = sys::stat_fields(&stat).unwrap_or_default();
    // Fields 10 (minflt) and 12 (majflt), counted from 1 with the pid;
    // stat_fields starts at field 3.
    let n = |i: usize| {
        f.get(i - 3)
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (n(10) + n(12), n(12))
}

/// The anon / mapped-file table per event: each row's samples over the
/// count of what it is paid per.
fn report_per_event(runs: &[Run]) {
    type Per = fn(&Tally) -> u64;
    let inactive: Per = |t| t.scanned - t.active_scanned;
    let active: Per = |t| t.active_scanned;
    // Pages unmapped: written to swap (anon), or reclaimed (clean file
    // pages are unmapped and freed in one pass).
    let written: Per = |t| {
        if t.written > 0 {
            t.written
        } else {
            t.reclaimed
        }
    };
    let reclaimed: Per = |t| t.reclaimed;
    // Every page touched faults (its page was reclaimed since the last
    // pass) and its charge reclaims one page: in steady state faults =
    // pages reclaimed (a trial with perf counting every fault: 108,623
    // faults, 108,617 pages reclaimed). The thread's own fault counters
    // cover a wider window (perf's start-up), so the tracepoints' count
    // is the denominator.
    let faults: Per = |t| t.reclaimed;
    // Pages scanned while mapped: those kept (referenced once), activated
    // (referenced again) or unmapped and written; the rest were already
    // unmapped (in the swap cache, written or under writeback).
    let mapped: Per = |t| {
        t.ref_keep
            + t.activated
            + if t.written > 0 {
                t.written
            } else {
                t.reclaimed
            }
    };
    let rows: &[(&str, Per, &str)] = &[
        (
            "= inactive scan: isolation + folio_referenced + checks + put back",
            inactive,
            "inactive page scanned",
        ),
        (
            "inactive: folio_referenced (rmap walk, young bits)",
            inactive,
            "inactive page scanned",
        ),
        (
            "inactive: folio_referenced (rmap walk, young bits)",
            mapped,
            "mapped page scanned",
        ),
        (
            "= inactive scan without folio_referenced",
            inactive,
            "inactive page scanned",
        ),
        (
            "inactive: isolation (+ put back) under lru_lock",
            inactive,
            "inactive page scanned",
        ),
        ("= active list scan", active, "active page scanned"),
        (
            "active list: folio_referenced",
            active,
            "active page scanned",
        ),
        (
            "= unmap (try_to_unmap + TLB flush)",
            written,
            "page unmapped",
        ),
        (
            "unmap: TLB flush (deferred batch, IPIs)",
            written,
            "page unmapped",
        ),
        (
            "swap slot + swap cache (folio_alloc_swap)",
            written,
            "page unmapped",
        ),
        (
            "writeout: submission (swap_writeout, bio)",
            written,
            "page unmapped",
        ),
        (
            "writeout: plug flush (request to the disk)",
            written,
            "page unmapped",
        ),
        (
            "= swap-out: unmap + slot/cache + writeout",
            written,
            "page unmapped",
        ),
        (
            "= write completion (in its interrupt)",
            written,
            "page unmapped",
        ),
        (
            "freeing (remove mapping / swap cache, uncharge, free)",
            reclaimed,
            "page reclaimed",
        ),
        (
            "unmap: try_to_unmap (rmap walk, pte → swap entry)",
            written,
            "page unmapped",
        ),
        (
            "= swap-in fault (without the reclaim it triggers)",
            faults,
            "fault (= page reclaimed)",
        ),
        (
            "file fault (filemap_fault, readahead, ext4)",
            faults,
            "fault (= page reclaimed)",
        ),
        ("**kernel, all**", faults, "fault (= page reclaimed)"),
    ];
    println!("\ncounts per run (from the tracepoints; faults from the thread's stat over a wider window, perf's start-up included):");
    for (i, r) in runs.iter().enumerate() {
        let t = &r.tally;
        println!(
            "run {}: inactive scanned {} (anon {}), activated {}, kept (rotated) {}, under writeback {}, reclaimed {}, written {}, active scanned {} (referenced {}), page-cache folios removed {} ({:.2} pages each), faults {} (major {})",
            i + 1,
            t.scanned - t.active_scanned,
            t.anon_scanned,
            t.activated,
            t.ref_keep,
            t.writeback,
            t.reclaimed,
            t.written,
            t.active_scanned,
            t.active_referenced,
            t.folios_removed,
            t.pages_removed as f64 / t.folios_removed.max(1) as f64,
            t.faults,
            t.major_faults
        );
    }
    println!(
        "\n| kernel CPU, ns per event | per | {} | mean ± sd |",
        (1..=runs.len())
            .map(|i| format!("run {i}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|---|{}---|", "---|".repeat(runs.len()));
    for &(name, per, unit) in rows {
        let samples = |t: &Tally| -> u64 {
            if name == "**kernel, all**" {
                return t.kernel();
            }
            MAPPED
                .sums
                .iter()
                .find(|s| s.0 == name)
                .map(|s| {
                    s.1.iter()
                        .map(|p| t.groups.get(*p).copied().unwrap_or(0))
                        .sum()
                })
                .unwrap_or_else(|| t.groups.get(name).copied().unwrap_or(0))
        };
        let v: Vec<f64> = runs
            .iter()
            .map(|r| samples(&r.tally) as f64 * r.period_ns / per(&r.tally).max(1) as f64)
            .collect();
        let (m, sd) = mean_sd(&v);
        println!(
            "| {name} | {unit} | {} | {m:.1} ± {sd:.1} |",
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
}

// ---------------------------------------------------------------------------
// Report

fn ns_per_page(r: &Run, samples: u64) -> f64 {
    samples as f64 * r.period_ns / r.pages.max(1) as f64
}

fn report(title: &str, scheme: &Scheme, per: &str, runs: &[Run]) {
    println!("\n### {title}\n");
    for (i, r) in runs.iter().enumerate() {
        let t = &r.tally;
        print!(
            "run {}: {:.2} s, {} pages {per}, {} kernel + {} user samples of {:.0} ns; other tasks {:.2} CPUs, steal {:.3}; load {}",
            i + 1,
            r.wall_s,
            r.pages,
            t.kernel(),
            t.user,
            r.period_ns,
            r.other_cpus,
            r.steal_cpus,
            r.loadavg
        );
        if t.batches > 0 {
            print!(
                "; {} inactive batches, {:.1} pages each, reclaimed {} ({:.1} %), active-list pages {}",
                t.batches,
                (t.scanned - t.active_scanned) as f64 / t.batches as f64,
                t.reclaimed,
                100.0 * t.reclaimed as f64 / t.scanned.max(1) as f64,
                t.active_scanned
            );
        }
        println!();
    }
    let mut names: Vec<&str> = scheme.held.iter().map(|g| g.0).collect();
    for g in scheme.groups {
        if !names.contains(&g.0) {
            names.push(g.0);
        }
    }
    println!(
        "\n| kernel CPU, ns per page {per} | {} | mean ± sd | samples (all runs) |",
        (1..=runs.len())
            .map(|i| format!("run {i}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}---|---|", "---|".repeat(runs.len()));
    let row = |name: &str, get: &dyn Fn(&Tally) -> u64| {
        let v: Vec<f64> = runs.iter().map(|r| ns_per_page(r, get(&r.tally))).collect();
        let (m, sd) = mean_sd(&v);
        let n: u64 = runs.iter().map(|r| get(&r.tally)).sum();
        println!(
            "| {name} | {} | {m:.1} ± {sd:.1} | {n} |",
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    };
    for n in &names {
        row(n, &|t: &Tally| t.groups.get(*n).copied().unwrap_or(0));
    }
    row("kernel, rest", &|t: &Tally| t.kernel_rest);
    for (name, parts) in scheme.sums {
        row(name, &|t: &Tally| {
            parts
                .iter()
                .map(|p| t.groups.get(*p).copied().unwrap_or(0))
                .sum()
        });
    }
    row("**kernel, all**", &|t: &Tally| t.kernel());
    row("user space", &|t: &Tally| t.user);
    // What a flat profile shows, and where the unlocks were called from.
    let mut leaves: HashMap<String, u64> = HashMap::new();
    let mut callers: HashMap<String, u64> = HashMap::new();
    for r in runs {
        for (k, v) in &r.tally.leaves {
            *leaves.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &r.tally.unlock_callers {
            *callers.entry(k.clone()).or_default() += v;
        }
    }
    let total: u64 = runs.iter().map(|r| r.tally.kernel()).sum::<u64>().max(1);
    let top = |m: &HashMap<String, u64>, n: usize| {
        let mut v: Vec<_> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter()
            .take(n)
            .map(|(k, c)| format!("{k} {:.1} %", 100.0 * *c as f64 / total as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut gl: HashMap<String, u64> = HashMap::new();
    let mut chains: HashMap<String, u64> = HashMap::new();
    for r in runs {
        for (k, v) in &r.tally.group_leaves {
            *gl.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &r.tally.flush_chains {
            *chains.entry(k.clone()).or_default() += v;
        }
    }
    println!("\nwhere each group's samples are (leaf symbol, % of the group's samples, top 4):");
    for n in names.iter().copied().chain(["kernel, rest"]) {
        let mut v: Vec<(&str, u64)> = gl
            .iter()
            .filter_map(|(k, c)| {
                let (g, leaf) = k.split_once('\t')?;
                (g == n).then_some((leaf, *c))
            })
            .collect();
        let sum: u64 = v.iter().map(|x| x.1).sum();
        if sum == 0 {
            continue;
        }
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        println!(
            "- {n}: {}",
            v.iter()
                .take(4)
                .map(|(l, c)| format!("{l} {:.0} %", 100.0 * *c as f64 / sum as f64))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !chains.is_empty() {
        let mut v: Vec<_> = chains.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        println!("\nTLB flush samples by call chain (top 4):");
        for (c, n) in v.iter().take(4) {
            println!("- {n}: {c}");
        }
    }
    println!(
        "\nflat profile (leaf symbol, % of kernel samples): {}",
        top(&leaves, 14)
    );
    println!(
        "unlock_irq* samples by caller (return offset): {}",
        top(&callers, 10)
    );
}

// ---------------------------------------------------------------------------
// Main

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = preflight(&args) {
        eprintln!("{NAME}: {e}");
        std::process::exit(2);
    }
    if let Err(e) = main_root(&args) {
        eprintln!("{NAME}: {e}");
        std::process::exit(if e == "interrupted" { 130 } else { 1 });
    }
}

/// This process's memory cgroup (v1 `memory:` line, or v2's `0::`).
fn memcg_path() -> String {
    let t = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    t.lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            (ctl.split(',').any(|c| c == "memory") || ctl.is_empty()).then(|| path.to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// Refuses early, naming what is missing and how to get it.
fn preflight(args: &Args) -> Result<(), String> {
    if !sys::is_root() {
        return Err("needs root (perf on kernel code, a memory cgroup); run it with sudo".into());
    }
    if sys::which("perf").is_none() {
        return Err(
            "`perf` is not on PATH; install it (Debian: apt-get install linux-perf)".into(),
        );
    }
    let mut head = String::new();
    let _ = File::open("/proc/kallsyms").and_then(|f| f.take(4096).read_to_string(&mut head));
    let hidden = head.lines().next().is_none_or(|l| {
        l.split_whitespace()
            .next()
            .is_some_and(|a| a.bytes().all(|b| b == b'0'))
    });
    if hidden {
        return Err("/proc/kallsyms shows no addresses, so perf cannot name kernel functions; set `sysctl kernel.kptr_restrict=0` for the run and restore it after".into());
    }
    if args
        .workloads
        .iter()
        .any(|w| matches!(w, Workload::Reclaim | Workload::Anon | Workload::MappedFile))
    {
        let v1 = Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists();
        let v2 = fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|s| s.contains("memory"));
        if !v1 && !v2 {
            return Err("no memory cgroup controller (neither v1's /sys/fs/cgroup/memory nor v2's memory controller); the reclaim, anon and mapped-file workloads need one (run `--workloads mmap` without it)".into());
        }
        if !args.dir.is_dir() {
            return Err(format!(
                "--dir {} is not a directory; pass --dir with a directory on a disk filesystem",
                args.dir.display()
            ));
        }
        let fstype = sys::mount_of(&sys::mounts(), &args.dir)
            .map(|m| m.fstype.clone())
            .unwrap_or_default();
        if ["tmpfs", "ramfs", "devtmpfs"].contains(&fstype.as_str())
            && args.workloads.iter().any(|w| *w != Workload::Mmap)
        {
            return Err(format!(
                "--dir {} is on {fstype}, whose pages are not clean page cache; pass --dir on a disk filesystem such as /var/tmp",
                args.dir.display()
            ));
        }
    }
    Ok(())
}

fn main_root(args: &Args) -> Result<(), String> {
    let stop = runner::install_signal_flag().map_err(|e| e.to_string())?;
    if args.one_cpu {
        // Every thread of this process (and perf, which inherits it) on
        // the measured thread's CPU: the process's mm is then live on one
        // CPU only, and a TLB flush needs no IPI.
        pin(*allowed_cpus().last().ok_or("no CPU allowed")?);
    }
    let pid = std::process::id();
    println!(
        "kernel {}, {} CPUs; perf cpu-clock at {} Hz ({:.0} ns a sample) for {} s after {} s warm-up, {} repetitions; {}",
        sys::kernel_release(),
        sys::cpus(),
        args.freq,
        1e9 / args.freq as f64,
        args.secs,
        args.warm_s,
        args.reps,
        String::from_utf8_lossy(
            &Command::new("date").args(["-u", "+%F %T UTC"]).output().map(|o| o.stdout).unwrap_or_default()
        )
        .trim()
    );
    for &w in &args.workloads {
        let mut runs = Vec::new();
        eprintln!(
            "{NAME}: this process's memory cgroup before the {w:?} runs: {}",
            memcg_path()
        );
        match w {
            Workload::Reclaim => {
                let path = args.dir.join(format!(".reclaimlab-perf-{pid}.dat"));
                eprintln!(
                    "{NAME}: sparse file {}, memory cgroup reclaimlab-probe-{pid}, perf data {}/.reclaimlab-perf-{pid}-* (all removed at the end)",
                    path.display(),
                    args.dir.display()
                );
                let f = File::create(&path)
                    .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                let _file = TempFile(path.clone());
                f.set_len(args.file_mib * MIB)
                    .map_err(|e| format!("cannot size {}: {e}", path.display()))?;
                drop(f);
                for rep in 0..args.reps {
                    runs.push(run_reclaim(args, &path, rep, &stop)?);
                }
                report(
                    &format!(
                        "Clean page-cache reclaim, order-0: one reader, {} MiB memory cgroup, sparse {} MiB file",
                        args.limit_mib, args.file_mib
                    ),
                    &RECLAIM,
                    "scanned",
                    &runs,
                );
            }
            Workload::Anon => {
                // A temporary swap file unless swap is on (as
                // `anon_reclaim_cost`), swapped off and removed on drop:
                // at the end, on error and on Ctrl-C (the signal flag
                // makes the runs return "interrupted").
                let _swap = if swap::active().is_empty() {
                    let path = args.dir.join(format!(".reclaimlab-perf-{pid}.swap"));
                    eprintln!(
                        "{NAME}: no swap on; a temporary swap file {} (removed at the end)",
                        path.display()
                    );
                    swap::create_swap_file(&path, (args.map_mib * 4).max(1024) * MIB)
                        .map_err(|e| e.to_string())?;
                    Some(SwapFile(path))
                } else {
                    None
                };
                for rep in 0..args.reps {
                    runs.push(run_mapped(args, None, rep, &stop)?);
                }
                report(
                    &format!(
                        "Anonymous reclaim to swap: {} MiB anonymous written one word a page, pass after pass, in a {} MiB memory cgroup",
                        args.map_mib, args.map_limit_mib
                    ),
                    &MAPPED,
                    "scanned",
                    &runs,
                );
                report_per_event(&runs);
            }
            Workload::MappedFile => {
                let path = args.dir.join(format!(".reclaimlab-perf-{pid}-mapped.dat"));
                let f = File::create(&path)
                    .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                let _file = TempFile(path.clone());
                f.set_len(args.map_mib * MIB)
                    .map_err(|e| format!("cannot size {}: {e}", path.display()))?;
                drop(f);
                for rep in 0..args.reps {
                    runs.push(run_mapped(args, Some(&path), rep, &stop)?);
                }
                report(
                    &format!(
                        "Mapped clean file pages: a sparse {} MiB file mapped shared, read one word a page, pass after pass, in a {} MiB memory cgroup",
                        args.map_mib, args.map_limit_mib
                    ),
                    &MAPPED,
                    "scanned",
                    &runs,
                );
                report_per_event(&runs);
            }
            Workload::Mmap => {
                for rep in 0..args.reps {
                    runs.push(run_mmap(args, rep, &stop)?);
                }
                report(
                    &format!(
                        "mmap-latency loop: {} MiB anonymous, 8 bytes per page, munmap",
                        args.mmap_mib
                    ),
                    &MMAP,
                    "touched",
                    &runs,
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments_and_their_errors() {
        let a = parse_args(&[]).unwrap();
        assert_eq!((a.reps, a.freq, a.workloads.len()), (3, 20_000, 2));
        let a = parse_args(&s(&["--workloads", "mmap", "--reps", "1"])).unwrap();
        assert_eq!((a.workloads, a.reps), (vec![Workload::Mmap], 1));
        assert!(parse_args(&s(&["--workloads", "swap"]))
            .unwrap_err()
            .contains("`swap` is not a workload"));
        assert!(parse_args(&s(&["--freq", "200000"]))
            .unwrap_err()
            .contains("10 µs"));
        assert!(parse_args(&s(&["--file-mib", "300"]))
            .unwrap_err()
            .contains("twice"));
        let a = parse_args(&s(&["--workloads", "anon,mapped-file", "--one-cpu"])).unwrap();
        assert_eq!(
            (a.workloads, a.one_cpu, a.map_mib, a.map_limit_mib),
            (vec![Workload::Anon, Workload::MappedFile], true, 256, 64)
        );
        assert!(parse_args(&s(&["--map-mib", "100"]))
            .unwrap_err()
            .contains("twice the limit"));
        assert!(parse_args(&s(&["--secs"]))
            .unwrap_err()
            .contains("needs a value"));
    }

    const SCRIPT: &str = "\
reader 100 [001] 1.000: 1 vmscan:mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=31 nr_dirty=0
reader 100 [001] 1.001: 1 vmscan:mm_vmscan_lru_shrink_active: nid=0 nr_taken=4 nr_active=0 nr_deactivated=4 nr_referenced=0 priority=12
reader 100 cpu-clock:
\tffffffff81000001 _raw_spin_unlock_irq+0x1a ([kernel.kallsyms])
\tffffffff81000002 shrink_lruvec+0x76f ([kernel.kallsyms])
\tffffffff81000003 shrink_node+0x10 ([kernel.kallsyms])

reader 100 cpu-clock:
\tffffffff81000004 free_unref_folios+0x1 ([kernel.kallsyms])
\tffffffff81000005 shrink_folio_list+0x2 ([kernel.kallsyms])
\tffffffff81000006 try_to_free_mem_cgroup_pages+0x3 ([kernel.kallsyms])
\tffffffff81000007 filemap_add_folio+0x3 ([kernel.kallsyms])

reader 100 cpu-clock:
\tffffffff81000008 free_unref_folios+0x1 ([kernel.kallsyms])
\tffffffff81000009 move_folios_to_lru+0x2 ([kernel.kallsyms])

reader 100 cpu-clock:
\tffffffff8100000a xas_store+0x1 ([kernel.kallsyms])
\tffffffff8100000b __filemap_add_folio+0x2 ([kernel.kallsyms])
\tffffffff8100000c filemap_add_folio+0x3 ([kernel.kallsyms])

reader 100 cpu-clock:
\tffffffff8100000d vfs_read+0x1 ([kernel.kallsyms])

reader 100 cpu-clock:
\t    55d0 main+0x1 (/usr/bin/reader)

";

    #[test]
    fn samples_go_to_their_innermost_group_and_unlocks_to_the_hold() {
        let mut t = tally(&RECLAIM, SCRIPT);
        count_tracepoints(&mut t, SCRIPT);
        let g = |n: &str| t.groups.get(n).copied().unwrap_or(0);
        assert_eq!(
            (t.scanned, t.reclaimed, t.active_scanned, t.batches),
            (36, 31, 4, 1)
        );
        assert_eq!(g("isolation (+ put back) under lru_lock"), 1);
        // Freeing only under shrink_folio_list; elsewhere the outer group.
        assert_eq!(g("freeing (remove mapping, uncharge, free)"), 1);
        assert_eq!(g("put back, rest"), 1);
        assert_eq!(g("page-cache insert"), 1);
        assert_eq!((t.kernel_rest, t.user, t.kernel()), (1, 1, 5));
        assert_eq!(t.unlock_callers.get("shrink_lruvec+0x76f"), Some(&1));
        // An unlock called from elsewhere is not a hold of lru_lock.
        assert_eq!(
            group_of(
                &RECLAIM,
                &[
                    "_raw_spin_unlock_irq",
                    "__remove_mapping",
                    "shrink_folio_list"
                ]
            ),
            Some("freeing (remove mapping, uncharge, free)")
        );
        assert_eq!(
            group_of(
                &MMAP,
                &[
                    "_raw_spin_unlock_irqrestore",
                    "folios_put_refs",
                    "tlb_flush_mmu"
                ]
            ),
            Some("release under lru_lock")
        );
        assert_eq!(
            group_of(
                &MMAP,
                &["clear_page_erms", "folio_zero_user", "handle_mm_fault"]
            ),
            Some("fault: zeroing")
        );
        assert_eq!(
            group_of(
                &MMAP,
                &[
                    "get_page_from_freelist",
                    "alloc_pages_mpol",
                    "handle_mm_fault"
                ]
            ),
            Some("fault: allocation")
        );
    }

    #[test]
    fn mapped_reclaim_groups_and_counts() {
        let g = |f: &[&str]| group_of(&MAPPED, f);
        // The rmap walk is the scan's under folio_referenced, the unmap's
        // under try_to_unmap.
        assert_eq!(
            g(&[
                "page_vma_mapped_walk",
                "folio_referenced_one",
                "rmap_walk_anon",
                "folio_referenced",
                "shrink_folio_list"
            ]),
            Some("inactive: folio_referenced (rmap walk, young bits)")
        );
        assert_eq!(
            g(&[
                "page_vma_mapped_walk",
                "folio_referenced_one",
                "rmap_walk_anon",
                "folio_referenced",
                "shrink_active_list"
            ]),
            Some("active list: folio_referenced")
        );
        assert_eq!(
            g(&[
                "page_vma_mapped_walk",
                "try_to_unmap_one",
                "rmap_walk_anon",
                "try_to_unmap",
                "shrink_folio_list"
            ]),
            Some("unmap: try_to_unmap (rmap walk, pte → swap entry)")
        );
        // The TLB flush, deferred or not, inside reclaim.
        assert_eq!(
            g(&[
                "smp_call_function_many_cond",
                "on_each_cpu_cond_mask",
                "arch_tlbbatch_flush",
                "try_to_unmap_flush_dirty",
                "shrink_folio_list"
            ]),
            Some("unmap: TLB flush (deferred batch, IPIs)")
        );
        assert_eq!(
            g(&[
                "flush_tlb_mm_range",
                "try_to_unmap_one",
                "rmap_walk_anon",
                "try_to_unmap",
                "shrink_folio_list"
            ]),
            Some("unmap: TLB flush (deferred batch, IPIs)")
        );
        // The same unlock: the write completion's rotation, or an LRU add.
        assert_eq!(
            g(&[
                "_raw_spin_unlock_irqrestore",
                "folio_batch_move_lru",
                "folio_rotate_reclaimable",
                "folio_end_writeback"
            ]),
            Some("write completion: rotate under lru_lock")
        );
        assert_eq!(
            g(&[
                "_raw_spin_unlock_irqrestore",
                "folio_batch_move_lru",
                "lru_add_drain_cpu"
            ]),
            Some("LRU add under lru_lock")
        );
        // Reclaim inside the swap-in's charge is reclaim.
        assert_eq!(
            g(&[
                "__remove_mapping",
                "shrink_folio_list",
                "shrink_lruvec",
                "try_charge_memcg",
                "mem_cgroup_swapin_charge_folio",
                "do_swap_page"
            ]),
            Some("freeing (remove mapping / swap cache, uncharge, free)")
        );
        let mut t = Tally::default();
        count_tracepoints(
            &mut t,
            "t 1 [001] 1.0: 1 vmscan:mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=10 nr_dirty=0 nr_writeback=2 nr_congested=0 nr_immediate=0 nr_activate_anon=1 nr_activate_file=0 nr_ref_keep=11 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
             t 1 [001] 1.0: 1 vmscan:mm_vmscan_write_folio: page=0x1 pfn=0x2 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n",
        );
        assert_eq!(
            (
                t.scanned,
                t.anon_scanned,
                t.reclaimed,
                t.activated,
                t.ref_keep,
                t.writeback,
                t.written
            ),
            (32, 32, 10, 1, 11, 2, 1)
        );
    }

    #[test]
    fn sums_name_existing_groups() {
        for scheme in [&RECLAIM, &MMAP, &MAPPED] {
            for (sum, parts) in scheme.sums {
                for p in *parts {
                    assert!(
                        scheme.held.iter().any(|g| g.0 == *p)
                            || scheme.groups.iter().any(|g| g.0 == *p),
                        "{sum}: {p} is no group"
                    );
                }
            }
        }
    }

    #[test]
    fn mean_and_spread() {
        assert_eq!(mean_sd(&[2.0]), (2.0, 0.0));
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0]);
        assert!((m - 2.0).abs() < 1e-12 && (sd - 1.0).abs() < 1e-12);
    }
}
