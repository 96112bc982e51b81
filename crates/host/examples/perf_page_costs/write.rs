//! The `write` workload: fio's buffered random-write job of the
//! `dirty-pressure` workload (`direct=0`, `invalidate=1`, `time_based`,
//! `readwrite=randwrite`, `blocksize=1m`, `nrfiles=2`, `filesize=16m`),
//! one job in one pinned thread: its files laid out first (written in
//! full and synced, as fio lays them out), then pass after pass over the
//! file set, each pass starting with `posix_fadvise(DONTNEED)` on every
//! file (fio's `invalidate=1` at each file open) and writing every 1 MiB
//! block of every file once, in a random order, files taken in turn (fio's
//! random map and `file_service_type=roundrobin`). fio submits through
//! libaio's `io_submit`, which for a buffered file runs the same
//! `ext4_file_write_iter` synchronously; this thread calls `pwrite`.
//!
//! Here too: the `WRITE` scheme (the write path's steps, 6.18's function
//! names) and the table per event (per page written back, per page
//! inserted, per page dropped).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use reclaimlab_host::bench::{clk_tck, sleep_or_stop, TempFile};

use crate::perf::Run;
use crate::report::{run_columns, samples, values_and_mean};
use crate::schemes::{Scheme, ALLOC, CHARGE, FREE, LRU_ADD, LRU_ADD_UNLOCK};
use crate::tally::Tally;
use crate::workloads::Body;
use crate::{MIB, PAGE};

/// The block size of every write (fio's `blocksize=1048576`).
const BLOCK: u64 = MIB;

/// Lays out `n` files of `mib` MiB in `dir` (written in full with the
/// loop's data and synced), removed on drop.
pub fn lay_out(dir: &Path, n: u64, mib: u64) -> Result<Vec<TempFile>, String> {
    let pid = std::process::id();
    let buf = block();
    let mut files = Vec::new();
    for i in 0..n {
        let path = dir.join(format!(".reclaimlab-perf-{pid}-write.{i}"));
        let f =
            File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        files.push(TempFile(path.clone()));
        for b in 0..mib {
            f.write_all_at(&buf, b * BLOCK)
                .map_err(|e| format!("cannot lay out {}: {e}", path.display()))?;
        }
        f.sync_all()
            .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
    }
    Ok(files)
}

/// One block of non-zero data.
fn block() -> Vec<u8> {
    (0..BLOCK).map(|i| (i % 251) as u8 | 1).collect()
}

/// A small deterministic generator (xorshift64*) for the write order.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }

    /// The blocks 0..n in a random order (Fisher–Yates).
    fn permutation(&mut self, n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
        v
    }
}

/// The write loop over `paths` (each `mib` MiB): pages written by
/// `pwrite` counted in `pages`. With `drop`, each file is `fdatasync`ed
/// before its fadvise, so the fadvise finds every folio clean and not
/// under writeback and drops it, and the next pass writes into new folios
/// (not fio's job: that measures a page-cache insertion per page).
pub fn write_loop(paths: Vec<PathBuf>, mib: u64, drop: bool, pages: Arc<AtomicU64>) -> Body {
    Box::new(move |stop, ready| {
        let files = paths
            .iter()
            .map(|p| {
                OpenOptions::new()
                    .write(true)
                    .open(p)
                    .map_err(|e| format!("cannot open {}: {e}", p.display()))
            })
            .collect::<Result<Vec<File>, String>>()?;
        let buf = block();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut written = 0u64;
        ready();
        while !stop.load(Ordering::Relaxed) {
            // A pass: invalidate every file (fio's `invalidate=1` at each
            // open), then every block of every file once, files in turn.
            for f in &files {
                if drop {
                    f.sync_data()
                        .map_err(|e| format!("fdatasync failed: {e}"))?;
                }
                // SAFETY: advice on our own open file.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
            let orders: Vec<Vec<u64>> = files.iter().map(|_| rng.permutation(mib)).collect();
            for b in 0..mib as usize {
                for (f, order) in files.iter().zip(&orders) {
                    f.write_all_at(&buf, order[b] * BLOCK)
                        .map_err(|e| format!("pwrite failed: {e}"))?;
                    written += BLOCK / PAGE;
                    pages.store(written, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    })
}

/// The thread's (system, user) CPU in ns per page written over `secs`
/// without perf: what perf's own cost (its sampling interrupt unwinding
/// two stacks every period) adds to the table is the difference.
pub fn without_perf(
    tid: u32,
    pages: &AtomicU64,
    secs: f64,
    stop: &AtomicBool,
) -> Result<(f64, f64), String> {
    let times = || {
        // Fields 14 (utime) and 15 (stime) in ticks.
        let n = crate::workloads::thread_stat_field(tid);
        (pages.load(Ordering::Relaxed), n(14), n(15))
    };
    let a = times();
    sleep_or_stop(stop, secs)?;
    let b = times();
    let per = |ticks: u64| ticks as f64 / clk_tck() * 1e9 / (b.0 - a.0).max(1) as f64;
    Ok((per(b.2 - a.2), per(b.1 - a.1)))
}

/// The write path's steps. 6.18's names (the host's `/proc/kallsyms`;
/// mainline `mm/filemap.c` `generic_perform_write`, `fs/ext4/inode.c`
/// `ext4_da_write_begin`/`ext4_da_write_end`/`ext4_do_writepages`,
/// `fs/buffer.c`, `mm/fadvise.c` `generic_fadvise`, `mm/truncate.c`
/// `mapping_try_invalidate`). Inlined there, so absent: `folio_account_dirtied`,
/// `ext4_da_do_write_end`, `mpage_map_and_submit_extent`.
pub const WRITE: Scheme = Scheme {
    held: &[("LRU add under lru_lock", LRU_ADD_UNLOCK, &[])],
    groups: &[
        // perf's recording of the tracepoints: the measurement's own cost.
        (
            "perf's own event recording (tracepoints)",
            &[
                "perf_swevent_event",
                "perf_tp_event",
                "perf_trace_buf_alloc",
                "perf_trace_mm_filemap_op_page_cache",
                "perf_trace_mm_filemap_op_page_cache_range",
                "perf_trace_ext4_writepages_result",
                "__perf_event_overflow",
                "perf_event_output_forward",
                "perf_trace_run_bpf_submit",
            ],
            &[],
        ),
        // The disk's completion interrupt, taken while this thread runs
        // (charged to it as system time, as fio's is).
        (
            "I/O completion (interrupt: ext4_end_bio, folio_end_writeback)",
            &[
                "ext4_end_bio",
                "ext4_finish_bio",
                "folio_end_writeback",
                "__folio_end_writeback",
                "folio_end_writeback_no_dropbehind",
                "blk_update_request",
                "blk_mq_end_request",
                "blk_done_softirq",
                "handle_softirqs",
                "__irq_exit_rcu",
                "common_interrupt",
                "asm_common_interrupt",
            ],
            &[],
        ),
        (
            "copy from user",
            &[
                "copy_folio_from_iter_atomic",
                "copy_page_from_iter_atomic",
                "_copy_from_iter",
                "rep_movs_alternative",
                "fault_in_iov_iter_readable",
                "fault_in_readable",
            ],
            &[],
        ),
        ("new folio: page allocation", ALLOC, &[]),
        // 6.18's __filemap_get_folio calls it (filemap_alloc_folio inlined).
        ("new folio: page allocation", &["folio_alloc_noprof"], &[]),
        ("new folio: memcg charge", CHARGE, &[]),
        (
            "new folio: page-cache insert (xarray)",
            &["__filemap_add_folio", "filemap_add_folio"],
            &[],
        ),
        ("LRU add, rest", LRU_ADD, &[]),
        (
            "new folio: buffer heads (create_empty_buffers)",
            &[
                "create_empty_buffers",
                "folio_alloc_buffers",
                "alloc_buffer_head",
            ],
            &[],
        ),
        (
            "page-cache lookup, folio lock (__filemap_get_folio)",
            &[
                "__filemap_get_folio",
                "filemap_get_entry",
                "__folio_lock",
                "folio_wait_stable",
                "folio_wait_writeback",
            ],
            &[],
        ),
        (
            "dirty accounting (__folio_mark_dirty)",
            &[
                "__folio_mark_dirty",
                "folio_account_dirtied",
                "filemap_dirty_folio",
                "block_dirty_folio",
                "folio_mark_dirty",
            ],
            &[],
        ),
        (
            "ext4 write_begin (buffers, delalloc reservation)",
            &[
                "ext4_da_write_begin",
                "ext4_block_write_begin",
                "ext4_da_get_block_prep",
                "ext4_da_reserve_space",
                "ext4_insert_delayed_block",
                "ext4_es_lookup_extent",
                "ext4_nonda_switch",
            ],
            &[],
        ),
        (
            "ext4 write_end (mark buffers dirty, i_size)",
            &[
                "ext4_da_write_end",
                "ext4_da_do_write_end",
                "block_write_end",
                "block_commit_write",
                "mark_buffer_dirty",
            ],
            &[],
        ),
        (
            "inode update: mtime, journal (file_update_time)",
            &[
                "file_update_time",
                "file_update_time_flags",
                "generic_update_time",
                "file_modified_flags",
                "kiocb_modified",
                "file_remove_privs_flags",
                "ext4_dirty_inode",
                "__ext4_mark_inode_dirty",
            ],
            &[],
        ),
        (
            "balance_dirty_pages",
            &[
                "balance_dirty_pages_ratelimited_flags",
                "balance_dirty_pages_ratelimited",
                "balance_dirty_pages",
            ],
            &[],
        ),
        // Writeback from fadvise's `__filemap_fdatawrite_range`.
        (
            "writeback: block mapping (ext4_map_blocks)",
            &[
                "ext4_map_blocks",
                "mpage_map_and_submit_extent",
                "mpage_map_one_extent",
                "ext4_ext_map_blocks",
                "ext4_mb_new_blocks",
            ],
            &[],
        ),
        (
            "writeback: bio build and submit (ext4_bio_write_folio)",
            &[
                "ext4_bio_write_folio",
                "ext4_io_submit",
                "__folio_start_writeback",
                "bio_add_folio",
                "bio_add_page",
                "bio_alloc_bioset",
                "submit_bio",
                "submit_bio_noacct",
                "submit_bio_noacct_nocheck",
                "__submit_bio",
                "blk_mq_submit_bio",
                "blk_finish_plug",
                "__blk_flush_plug",
            ],
            &[],
        ),
        (
            "writeback: dirty walk, per buffer (mpage_prepare_extent_to_map)",
            &[
                "mpage_prepare_extent_to_map",
                "mpage_process_page_bufs",
                "mpage_process_folio",
                "mpage_submit_folio",
                "folio_clear_dirty_for_io",
                "filemap_get_folios_tag",
                "mpage_release_unused_pages",
                "ext4_do_writepages",
                "ext4_writepages",
                "do_writepages",
                "filemap_fdatawrite_wbc",
                "__filemap_fdatawrite_range",
            ],
            &[],
        ),
        // The drop of clean folios: fadvise's `mapping_try_invalidate`.
        ("invalidation: freeing", FREE, &["mapping_try_invalidate"]),
        (
            "invalidation: freeing",
            &["folios_put_refs", "__folio_batch_release"],
            &["mapping_try_invalidate"],
        ),
        (
            "invalidation: evict (buffers, page-cache removal)",
            &[
                "mapping_try_invalidate",
                "invalidate_mapping_pages",
                "mapping_evict_folio",
                "try_to_free_buffers",
                "drop_buffers",
                "free_buffer_head",
                "remove_mapping",
                "__remove_mapping",
                "__filemap_remove_folio",
                "find_lock_entries",
            ],
            &[],
        ),
        (
            "fdatasync (--write-drop): wait, journal, rest",
            &[
                "ext4_sync_file",
                "file_write_and_wait_range",
                "__filemap_fdatawait_range",
                "filemap_fdatawait_range",
                "jbd2_complete_transaction",
                "jbd2_log_wait_commit",
                "blkdev_issue_flush",
            ],
            &[],
        ),
        (
            "fadvise, rest",
            &["generic_fadvise", "vfs_fadvise", "ksys_fadvise64_64"],
            &[],
        ),
        (
            "pwrite, rest (entry, vfs_write, generic_perform_write)",
            &[
                "generic_perform_write",
                "ext4_buffered_write_iter",
                "ext4_file_write_iter",
                "vfs_write",
                "ksys_pwrite64",
                "__x64_sys_pwrite64",
                "x64_sys_call",
                "do_syscall_64",
                "entry_SYSCALL_64",
                "entry_SYSCALL_64_after_hwframe",
                "syscall_exit_to_user_mode",
            ],
            &[],
        ),
    ],
    sums: &[
        (
            "= new folio: allocation + charge + insert + LRU add + buffer heads",
            &[
                "new folio: page allocation",
                "new folio: memcg charge",
                "new folio: page-cache insert (xarray)",
                "LRU add under lru_lock",
                "LRU add, rest",
                "new folio: buffer heads (create_empty_buffers)",
            ],
        ),
        (
            "= ext4 per-page write: lookup + write_begin + write_end + dirty + inode",
            &[
                "page-cache lookup, folio lock (__filemap_get_folio)",
                "ext4 write_begin (buffers, delalloc reservation)",
                "ext4 write_end (mark buffers dirty, i_size)",
                "dirty accounting (__folio_mark_dirty)",
                "inode update: mtime, journal (file_update_time)",
            ],
        ),
        (
            "= writeback submission: walk + mapping + bio",
            &[
                "writeback: block mapping (ext4_map_blocks)",
                "writeback: bio build and submit (ext4_bio_write_folio)",
                "writeback: dirty walk, per buffer (mpage_prepare_extent_to_map)",
            ],
        ),
        (
            "= invalidation: evict + freeing",
            &[
                "invalidation: evict (buffers, page-cache removal)",
                "invalidation: freeing",
            ],
        ),
    ],
};

/// The table per event: each row's samples over the count it is paid per
/// (pages written back by this thread's writeback, from
/// `ext4:ext4_writepages_result`; pages inserted and dropped, from the
/// `filemap` tracepoints).
pub fn report_write(runs: &[Run]) {
    println!("\ncounts per run:");
    for (i, r) in runs.iter().enumerate() {
        let t = &r.tally;
        println!(
            "run {}: pages written by pwrite {} (sys_exit_pwrite64; the loop counted {} over a window with perf's start-up and stop), written back by the thread (ext4_writepages_result) {} ({:.2} pages written a page written back; /proc/vmstat nr_written, all the machine's, {}), page-cache folios inserted {} ({} pages, {:.2} % of the pages written), removed {} ({} pages)",
            i + 1,
            r.pages,
            t.loop_pages,
            t.wb_pages,
            r.pages as f64 / t.wb_pages.max(1) as f64,
            t.vm_written,
            t.folios_added,
            t.pages_added,
            100.0 * t.pages_added as f64 / r.pages.max(1) as f64,
            t.folios_removed,
            t.pages_removed
        );
    }
    let sys: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.tally.without_perf.map(|x| x.0))
        .collect();
    let user: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.tally.without_perf.map(|x| x.1))
        .collect();
    if !sys.is_empty() {
        println!(
            "\nthe thread without perf, just before it, as long, ns per page written: system {}, user {}",
            values_and_mean(&sys),
            values_and_mean(&user)
        );
    }
    type Per = fn(&Tally) -> u64;
    let wb: Per = |t| t.wb_pages;
    let added: Per = |t| t.pages_added;
    let removed: Per = |t| t.pages_removed;
    let rows: &[(&str, Per, &str)] = &[
        (
            "= writeback submission: walk + mapping + bio",
            wb,
            "page written back",
        ),
        (
            "I/O completion (interrupt: ext4_end_bio, folio_end_writeback)",
            wb,
            "page written back",
        ),
        (
            "= new folio: allocation + charge + insert + LRU add + buffer heads",
            added,
            "page inserted",
        ),
        ("= invalidation: evict + freeing", removed, "page dropped"),
        ("**kernel, all**", wb, "page written back"),
    ];
    println!(
        "\n| kernel CPU, ns per event | per | {} | mean ± sd |",
        run_columns(runs)
    );
    println!("|---|---|{}---|", "---|".repeat(runs.len()));
    for &(name, per, unit) in rows {
        if runs.iter().any(|r| per(&r.tally) == 0) {
            println!("| {name} | {unit} | (none in a run's window) |");
            continue;
        }
        let v: Vec<f64> = runs
            .iter()
            .map(|r| {
                samples(&WRITE, &r.tally, name) as f64 * r.period_ns / per(&r.tally).max(1) as f64
            })
            .collect();
        println!("| {name} | {unit} | {} |", values_and_mean(&v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tally::group_of;

    /// Each sample's group from its kernel frames, innermost first.
    #[test]
    fn write_path_chains_go_to_their_group() {
        let cases: &[(&str, &str)] = &[
            (
                "copy from user",
                "copy_folio_from_iter_atomic < generic_perform_write < ext4_buffered_write_iter < vfs_write",
            ),
            // The disk's interrupt during the copy is the completion's.
            (
                "I/O completion (interrupt: ext4_end_bio, folio_end_writeback)",
                "_raw_spin_unlock_irqrestore < ext4_finish_bio < ext4_end_bio < blk_update_request < blk_mq_end_request < blk_done_softirq < handle_softirqs < __irq_exit_rcu < common_interrupt < asm_common_interrupt < copy_folio_from_iter_atomic < generic_perform_write",
            ),
            (
                "new folio: page allocation",
                "get_page_from_freelist < __alloc_frozen_pages_noprof < alloc_pages_mpol < folio_alloc_noprof < __filemap_get_folio < ext4_da_write_begin < generic_perform_write",
            ),
            (
                "new folio: page allocation",
                "folio_alloc_noprof < __filemap_get_folio < ext4_da_write_begin",
            ),
            (
                "new folio: page-cache insert (xarray)",
                "xas_store < __filemap_add_folio < filemap_add_folio < __filemap_get_folio < ext4_da_write_begin",
            ),
            (
                "page-cache lookup, folio lock (__filemap_get_folio)",
                "xas_load < filemap_get_entry < __filemap_get_folio < ext4_da_write_begin",
            ),
            (
                "new folio: buffer heads (create_empty_buffers)",
                "__memcg_slab_post_alloc_hook < kmem_cache_alloc_noprof < alloc_buffer_head < folio_alloc_buffers < create_empty_buffers < ext4_block_write_begin < ext4_da_write_begin",
            ),
            (
                "ext4 write_begin (buffers, delalloc reservation)",
                "_raw_read_lock < ext4_es_lookup_extent < ext4_da_get_block_prep < ext4_block_write_begin < ext4_da_write_begin",
            ),
            (
                "ext4 write_end (mark buffers dirty, i_size)",
                "mark_buffer_dirty < block_commit_write < block_write_end < ext4_da_write_end < generic_perform_write",
            ),
            (
                "dirty accounting (__folio_mark_dirty)",
                "lruvec_stat_mod_folio < __folio_mark_dirty < mark_buffer_dirty < block_commit_write",
            ),
            // The journal under the mtime update is the inode's, not the
            // write_end's.
            (
                "inode update: mtime, journal (file_update_time)",
                "ext4_mark_iloc_dirty < __ext4_mark_inode_dirty < ext4_dirty_inode < __mark_inode_dirty < generic_update_time < file_update_time_flags < ext4_buffered_write_iter",
            ),
            (
                "writeback: bio build and submit (ext4_bio_write_folio)",
                "iowrite16 < vp_notify < virtqueue_notify < virtio_queue_rq < blk_mq_dispatch_rq_list < blk_mq_flush_plug_list < blk_add_rq_to_plug < blk_mq_submit_bio < __submit_bio < submit_bio_noacct_nocheck < ext4_bio_write_folio < mpage_process_page_bufs < mpage_prepare_extent_to_map < ext4_do_writepages < __filemap_fdatawrite_range < generic_fadvise",
            ),
            (
                "writeback: dirty walk, per buffer (mpage_prepare_extent_to_map)",
                "lruvec_stat_mod_folio < folio_clear_dirty_for_io < mpage_submit_folio < mpage_process_page_bufs < mpage_prepare_extent_to_map < ext4_do_writepages < __filemap_fdatawrite_range < generic_fadvise",
            ),
            // Freeing counts as the invalidation's only under it.
            (
                "invalidation: freeing",
                "free_unref_folios < folios_put_refs < mapping_try_invalidate < generic_fadvise",
            ),
            (
                "invalidation: evict (buffers, page-cache removal)",
                "kmem_cache_free < free_buffer_head < try_to_free_buffers < mapping_evict_folio < mapping_try_invalidate < generic_fadvise",
            ),
            (
                "LRU add under lru_lock",
                "_raw_spin_unlock_irqrestore < folio_batch_move_lru < lru_add_drain_cpu < lru_add_drain < generic_fadvise",
            ),
            (
                "pwrite, rest (entry, vfs_write, generic_perform_write)",
                "fdget < __x64_sys_pwrite64 < do_syscall_64",
            ),
        ];
        for &(group, chain) in cases {
            let frames: Vec<&str> = chain.split(" < ").collect();
            assert_eq!(group_of(&WRITE, &frames), Some(group), "{chain}");
        }
        // Freeing outside an invalidation is nobody's group here.
        assert_eq!(
            group_of(
                &WRITE,
                &["free_unref_folios", "folios_put_refs", "tlb_flush_mmu"]
            ),
            None
        );
    }

    #[test]
    fn every_pass_writes_every_block_once() {
        let mut r = Rng(1);
        let mut p = r.permutation(16);
        let q = r.permutation(16);
        assert_ne!(p, q, "the order changes from pass to pass");
        p.sort_unstable();
        assert_eq!(p, (0..16).collect::<Vec<_>>());
    }
}
