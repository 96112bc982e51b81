//! How samples are grouped (see the attribution paragraph of `main.rs`):
//! per workload, the holds of `lru_lock` told by the unlock's caller, the
//! groups by function and the sums of groups the simulator's parameters
//! mean. Function names are 6.18's (the host's `/proc/kallsyms`).

/// Where a sample due under a spinlock taken with interrupts off lands.
pub const UNLOCKS: &[&str] = &["_raw_spin_unlock_irq", "_raw_spin_unlock_irqrestore"];

pub const ALLOC: &[&str] = &[
    "filemap_alloc_folio_noprof",
    "vma_alloc_folio_noprof",
    "alloc_pages_mpol",
    "__alloc_frozen_pages_noprof",
    "alloc_frozen_pages_noprof",
    "__alloc_pages_noprof",
    "alloc_pages_noprof",
    "get_page_from_freelist",
];
pub const CHARGE: &[&str] = &[
    "__mem_cgroup_charge",
    "charge_memcg",
    "try_charge_memcg",
    "mem_cgroup_charge",
];
pub const LRU_ADD: &[&str] = &[
    "folio_batch_move_lru",
    "lru_add",
    "lru_add_fn",
    "__folio_batch_add_and_move",
    "folio_add_lru",
    "folio_add_lru_vma",
    "lru_add_drain",
    "lru_add_drain_cpu",
];
pub const FREE: &[&str] = &[
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
/// Unlock callers of the inactive list's isolation (and, inlined on the
/// host's 6.18, its put-back): `shrink_inactive_list` is inlined into
/// `shrink_lruvec` there.
const ISOLATE_UNLOCK: &[&str] = &[
    "shrink_lruvec",
    "shrink_inactive_list",
    "isolate_lru_folios",
];
/// The inactive list's put-back (`move_folios_to_lru`, and the unlock
/// `lru_note_cost_unlock_irq` inlined or not).
const PUT_BACK: &[&str] = &[
    "lru_note_cost_unlock_irq",
    "move_folios_to_lru",
    "lru_note_cost",
];
/// Unlock callers of an LRU addition's batch.
pub const LRU_ADD_UNLOCK: &[&str] = &["folio_batch_move_lru", "__pagevec_lru_add"];
/// A page fault's entry and generic handling.
const FAULT: &[&str] = &[
    "handle_mm_fault",
    "__handle_mm_fault",
    "do_anonymous_page",
    "do_user_addr_fault",
    "exc_page_fault",
    "asm_exc_page_fault",
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
pub struct Scheme {
    /// Unlock callers: a sample in `_raw_spin_unlock_irq*` called from one
    /// of these goes to the group (the time the lock was held).
    pub held: &'static [(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    )],
    /// The groups, by function; the innermost frame naming one decides.
    /// Each entry may require an ancestor (outer frame) among a list.
    pub groups: &'static [(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    )],
    /// Sums of groups, printed after them: the figures the simulator's
    /// parameters mean, less sensitive to where a sample lands between
    /// neighbouring groups.
    pub sums: &'static [(&'static str, &'static [&'static str])],
}

pub const RECLAIM: Scheme = Scheme {
    held: &[
        // shrink_inactive_list is inlined into shrink_lruvec on the host's
        // 6.18, and so is the put-back's unlock (`lru_note_cost_unlock_irq`
        // inlined): both holds end in a `_raw_spin_unlock_irq` called from
        // shrink_lruvec, told apart only by the return offset (printed).
        ("isolation (+ put back) under lru_lock", ISOLATE_UNLOCK, &[]),
        ("put back under lru_lock", PUT_BACK, &[]),
        ("LRU add under lru_lock", LRU_ADD_UNLOCK, &[]),
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
        ("put back, rest", PUT_BACK, &[]),
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

pub const MMAP: Scheme = Scheme {
    held: &[
        ("LRU add under lru_lock", LRU_ADD_UNLOCK, &[]),
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
        ("fault: rest (handle_mm_fault, entry)", FAULT, &[]),
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
pub const MAPPED: Scheme = Scheme {
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
            ISOLATE_UNLOCK,
            &[],
        ),
        ("inactive: put back under lru_lock", PUT_BACK, &[]),
        ("LRU add under lru_lock", LRU_ADD_UNLOCK, &[]),
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
        ("inactive: put back, rest", PUT_BACK, &[]),
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
        ("fault, rest (entry, handle_mm_fault)", FAULT, &[]),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_name_existing_groups() {
        for scheme in [&RECLAIM, &MMAP, &MAPPED, &crate::write::WRITE] {
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
}
