//! Reading `perf script`: each `cpu-clock` sample attributed to its group
//! by its kernel call chain ([`group_of`]), and the reclaim tracepoints'
//! page counts.

use std::collections::HashMap;

use crate::schemes::{Scheme, UNLOCKS};

/// Samples per group (and the total) for one run.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Group name → samples.
    pub groups: HashMap<String, u64>,
    /// Kernel samples outside every group.
    pub kernel_rest: u64,
    /// Samples in user space.
    pub user: u64,
    /// Leaf kernel symbol → samples (`perf report --no-children --sort symbol`).
    pub leaves: HashMap<String, u64>,
    /// Unlock leaf samples by caller, with its offset.
    pub unlock_callers: HashMap<String, u64>,
    /// "group\tleaf" → samples: what each group's time is spent in.
    pub group_leaves: HashMap<String, u64>,
    /// TLB-flush samples by call chain up to `shrink_folio_list`.
    pub flush_chains: HashMap<String, u64>,
    /// From the tracepoints: pages scanned (inactive + active), reclaimed.
    pub scanned: u64,
    pub reclaimed: u64,
    pub active_scanned: u64,
    pub batches: u64,
    /// Inactive-list pages scanned in anon batches; pages activated and
    /// kept (rotated: referenced once) by those scans; the active list's
    /// referenced pages; pages written out (`mm_vmscan_write_folio`).
    pub anon_scanned: u64,
    pub activated: u64,
    pub ref_keep: u64,
    pub active_referenced: u64,
    pub written: u64,
    /// Page-cache folios removed and their pages
    /// (`mm_filemap_delete_from_page_cache`).
    pub folios_removed: u64,
    pub pages_removed: u64,
    /// Page-cache folios inserted and their pages
    /// (`mm_filemap_add_to_page_cache`).
    pub folios_added: u64,
    pub pages_added: u64,
    /// Pages written back by the thread's writeback
    /// (`ext4_writepages_result`'s `pages_written`), and /proc/vmstat's
    /// `nr_written` over the window (the whole machine's).
    pub wb_pages: u64,
    pub vm_written: u64,
    /// Bytes `pwrite` returned (`sys_exit_pwrite64`), in perf's window.
    pub write_bytes: u64,
    /// Pages the write loop counted, over a window wider than perf's.
    pub loop_pages: u64,
    /// The thread's system and user CPU per page written without perf,
    /// in ns (measured just before perf, for as long).
    pub without_perf: Option<(f64, f64)>,
    /// Inactive-list pages found still under writeback.
    pub writeback: u64,
    /// The thread's page faults and major faults (`/proc/.../stat`,
    /// read around `perf record`).
    pub faults: u64,
    pub major_faults: u64,
}

impl Tally {
    pub fn kernel(&self) -> u64 {
        self.groups.values().sum::<u64>() + self.kernel_rest
    }
}

/// The group of one sample, from its kernel frames (innermost first).
pub fn group_of(scheme: &Scheme, frames: &[&str]) -> Option<&'static str> {
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
pub fn tally(scheme: &Scheme, text: &str) -> Tally {
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
pub fn count_tracepoints(t: &mut Tally, text: &str) {
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
        } else if let Some((_, rest)) = h.split_once("filemap:mm_filemap_add_to_page_cache:") {
            t.folios_added += 1;
            t.pages_added += 1 << field(rest, "order").unwrap_or(0).min(20);
        } else if let Some((_, rest)) = h.split_once("syscalls:sys_exit_pwrite64:") {
            let ret = rest.trim().trim_start_matches("0x");
            // An error is a negative return (shown as its 64-bit hex).
            let n = u64::from_str_radix(ret, 16).unwrap_or(0);
            t.write_bytes += if (n as i64) < 0 { 0 } else { n };
        } else if let Some((_, rest)) = h.split_once("ext4:ext4_writepages_result:") {
            // `key value` pairs here, not `key=value`.
            let mut words = rest.split_whitespace();
            let n = words.by_ref().skip_while(|w| *w != "pages_written").nth(1);
            t.wb_pages += n.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::{MAPPED, MMAP, RECLAIM};

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
    }

    /// Each sample's group from its kernel frames, innermost first.
    #[test]
    fn call_chains_go_to_their_group() {
        let cases: &[(&Scheme, &str, &str)] = &[
            // An unlock called from elsewhere is not a hold of lru_lock.
            (
                &RECLAIM,
                "freeing (remove mapping, uncharge, free)",
                "_raw_spin_unlock_irq < __remove_mapping < shrink_folio_list",
            ),
            (
                &MMAP,
                "release under lru_lock",
                "_raw_spin_unlock_irqrestore < folios_put_refs < tlb_flush_mmu",
            ),
            (
                &MMAP,
                "fault: zeroing",
                "clear_page_erms < folio_zero_user < handle_mm_fault",
            ),
            (
                &MMAP,
                "fault: allocation",
                "get_page_from_freelist < alloc_pages_mpol < handle_mm_fault",
            ),
            // The rmap walk is the scan's under folio_referenced, the
            // unmap's under try_to_unmap.
            (
                &MAPPED,
                "inactive: folio_referenced (rmap walk, young bits)",
                "page_vma_mapped_walk < folio_referenced_one < rmap_walk_anon < folio_referenced < shrink_folio_list",
            ),
            (
                &MAPPED,
                "active list: folio_referenced",
                "page_vma_mapped_walk < folio_referenced_one < rmap_walk_anon < folio_referenced < shrink_active_list",
            ),
            (
                &MAPPED,
                "unmap: try_to_unmap (rmap walk, pte → swap entry)",
                "page_vma_mapped_walk < try_to_unmap_one < rmap_walk_anon < try_to_unmap < shrink_folio_list",
            ),
            // The TLB flush, deferred or not, inside reclaim.
            (
                &MAPPED,
                "unmap: TLB flush (deferred batch, IPIs)",
                "smp_call_function_many_cond < on_each_cpu_cond_mask < arch_tlbbatch_flush < try_to_unmap_flush_dirty < shrink_folio_list",
            ),
            (
                &MAPPED,
                "unmap: TLB flush (deferred batch, IPIs)",
                "flush_tlb_mm_range < try_to_unmap_one < rmap_walk_anon < try_to_unmap < shrink_folio_list",
            ),
            // The same unlock: the write completion's rotation, or an LRU add.
            (
                &MAPPED,
                "write completion: rotate under lru_lock",
                "_raw_spin_unlock_irqrestore < folio_batch_move_lru < folio_rotate_reclaimable < folio_end_writeback",
            ),
            (
                &MAPPED,
                "LRU add under lru_lock",
                "_raw_spin_unlock_irqrestore < folio_batch_move_lru < lru_add_drain_cpu",
            ),
            // Reclaim inside the swap-in's charge is reclaim.
            (
                &MAPPED,
                "freeing (remove mapping / swap cache, uncharge, free)",
                "__remove_mapping < shrink_folio_list < shrink_lruvec < try_charge_memcg < mem_cgroup_swapin_charge_folio < do_swap_page",
            ),
        ];
        for &(scheme, group, chain) in cases {
            let frames: Vec<&str> = chain.split(" < ").collect();
            assert_eq!(group_of(scheme, &frames), Some(group), "{chain}");
        }
    }

    #[test]
    fn mapped_reclaim_counts() {
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
    fn write_counts() {
        let mut t = Tally::default();
        count_tracepoints(
            &mut t,
            "w 1 [001] 1.0: filemap:mm_filemap_add_to_page_cache: dev 254:0 ino bc6f9 pfn=0x417500 ofs=13631488 order=8\n\
             w 1 [001] 1.0: filemap:mm_filemap_add_to_page_cache: dev 254:0 ino bc6f9 pfn=0x417600 ofs=0 order=0\n\
             w 1 [001] 1.0: filemap:mm_filemap_delete_from_page_cache: dev 254:0 ino bc706 pfn=0x21db00 ofs=0 order=8\n\
             w 1 [001] 1.0: ext4:ext4_writepages_result: dev 254,0 ino 771833 ret 0 pages_written 4096 pages_skipped 0 sync_mode 0 writeback_index 0\n\
             w 1 [001] 1.0: syscalls:sys_exit_pwrite64: 0x100000\n\
             w 1 [001] 1.0: syscalls:sys_exit_pwrite64: 0xfffffffffffffffc\n",
        );
        // A failed call (-EINTR) adds nothing.
        assert_eq!(t.write_bytes, 1 << 20);
        assert_eq!(
            (
                t.folios_added,
                t.pages_added,
                t.folios_removed,
                t.pages_removed,
                t.wb_pages
            ),
            (2, 257, 1, 256, 4096)
        );
    }
}
