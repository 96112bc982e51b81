//! fio's passes (`workers::file_writer`): each random pass writes every
//! block once, and with `invalidate` (fio's default) starts with
//! `posix_fadvise(POSIX_FADV_DONTNEED)` (`mm/fadvise.rs`), which drops the
//! file's clean pages so that the pass allocates them again. And the
//! flusher's periodic and start-all work is sized by the dirty pages when it
//! starts (`wb_check_old_data_flush`), not endless.

mod common;
use common::*;

/// 256 MiB, a 15 MB/s disk: no memory pressure; a 16 MiB file.
const ROOMY: &str = "name='roomy'\ncpus=2\nmemory_mib=256\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=15\nread_mb_s=30\nlatency_us=500\nseek_us=0\nqueue_depth=64\n";

fn writer(invalidate: bool) -> String {
    format!(
        "name='w'\nduration_s=20\nwarmup_s=0\n[[worker]]\nkind='file-writer'\ncount=1\nfiles=1\nfile_mib=16\nblock_kib=1024\ninvalidate={invalidate}\n"
    )
}

/// A writer held to the disk's speed by a small dirty limit makes passes of
/// about a second; the pages it wrote early in a pass are written back and
/// clean when the next pass starts. With `invalidate` they are dropped and
/// allocated again, pass after pass; without, the file is allocated once.
#[test]
fn invalidate_drops_the_clean_pages_at_each_pass() {
    let m = machine(ROOMY);
    let set = [("vm.dirty_ratio", "1"), ("vm.dirty_background_ratio", "0")];
    let (kept, _) = sim(&m, "v6.1", &writer(false), 1, &set);
    let (dropped, _) = sim(&m, "v6.1", &writer(true), 1, &set);
    let file_pages = 16 * 256;
    let a_kept = kept.delta("pgalloc_normal");
    let a_dropped = dropped.delta("pgalloc_normal");
    assert!(
        a_kept <= file_pages + file_pages / 8,
        "without invalidate the file is allocated once: {a_kept}"
    );
    assert!(
        a_dropped > 4 * file_pages,
        "with invalidate the passes allocate again: {a_dropped} vs {file_pages}"
    );
    // Dropped pages are freed (pgfree), not reclaimed: no scanning at all.
    assert_eq!(
        dropped.delta("pgscan_kswapd") + dropped.delta("pgscan_direct"),
        0
    );
}

/// With plenty of memory and no dirty limit in reach, the writer redirties
/// its file as fast as it can; the flusher writes it back only in the
/// periodic (kupdate) rounds, each at most the dirty pages it started with,
/// so the disk is idle between rounds rather than busy for good: over 20 s
/// with a 5 s period, at most about four rounds' worth.
#[test]
fn kupdate_rounds_are_sized_by_the_dirty_pages() {
    let m = machine(ROOMY);
    let (c, _) = sim(&m, "v6.1", &writer(false), 1, &[]);
    let file_pages = 16 * 256;
    let written = c.delta("nr_written");
    assert!(written > 0, "the periodic writeback runs");
    assert!(
        written <= 5 * file_pages,
        "rounds are bounded by the dirty pages: {written} written of a {file_pages}-page file"
    );
}
