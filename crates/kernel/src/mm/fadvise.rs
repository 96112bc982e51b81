//! `posix_fadvise(POSIX_FADV_DONTNEED)` over a whole file, as fio's
//! `invalidate=1` (its default) issues it each time it opens a job's file:
//! at the start and again at every pass over the file in a time-based job.
//!
//! `generic_fadvise` (mm/fadvise.c, 5.15 and 6.1): start writeback of the
//! file's dirty pages (`__filemap_fdatawrite_range`, `WB_SYNC_NONE`; 5.15
//! skips it while the backing device is write-congested, which only the
//! single-queue layer ever is), then drop every page that is clean, not
//! under writeback, not locked and not mapped (`invalidate_mapping_pages` →
//! `mapping_evict_folio`, 6.1 `mapping_try_invalidate`). Pages still dirty
//! or under writeback stay; the next pass's write finds them cached, while
//! every dropped page has to be allocated (and charged) again.
//!
//! The range's shadow entries, left by reclaim's evictions, are removed
//! too (6.1 `invalidate_mapping_pagevec` → `invalidate_exceptional_entry`
//! → `clear_shadow_entry`, the same in 5.15), so the next pass's write of
//! an evicted index is a new page, not a workingset refault.
//!
//! Simplified: the dropped pages leave no workingset shadow entry
//! (`__remove_mapping(…, reclaimed = false)` leaves none either) and count
//! no vmstat event (the kernel counts none); the CPU cost is that of
//! reclaim's freeing per page and of submission per page written.

use super::page::pg;
use super::swap::{SHADOW, SLOT_EMPTY};
use crate::block::BLK_RW_ASYNC;
use crate::engine::World;
use crate::sched::maybe_pay_cpu;
use crate::writeback::{write_and_submit, WbCursor};
use crate::Kernel;

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` on file `f`.
pub async fn fadvise_dontneed(w: &World, f: u32) {
    let congested = {
        let k = w.k();
        let d = k.files[f as usize].dev;
        k.devs[d].congested[BLK_RW_ASYNC]
    };
    if !congested {
        // __filemap_fdatawrite_range: the whole file, each bio submitted
        // as it is built (writeback::write_and_submit).
        let mut cur = WbCursor::new(0);
        write_and_submit(w, f, &mut cur, u64::MAX, false).await;
    }
    w.k().invalidate_mapping_pages(f);
    maybe_pay_cpu(w).await;
}

impl Kernel {
    /// `invalidate_mapping_pages` over all of file `f`: frees the cached
    /// pages that are clean, not under writeback, not locked, not isolated
    /// by a reclaimer and not mapped, and clears every shadow entry.
    /// Returns how many pages it freed.
    pub fn invalidate_mapping_pages(&mut self, f: u32) -> u64 {
        let size = self.files[f as usize].size;
        let mut freed = 0u64;
        for i in 0..size {
            let e = self.files[f as usize].cache.get(i as usize);
            if e == SLOT_EMPTY {
                continue;
            }
            if e & SHADOW != 0 {
                // invalidate_exceptional_entry → clear_shadow_entry (6.1
                // mm/truncate.c, also 5.15): a shadow entry is dropped too,
                // so the next write of this index is a new page, not a
                // refault.
                self.files[f as usize].cache.set(i as usize, SLOT_EMPTY);
                continue;
            }
            let p = self.frames.get(e);
            if self.files[f as usize].page_mapped(i)
                || p.test(pg::DIRTY | pg::WRITEBACK | pg::LOCKED | pg::ISOLATED)
                || !p.test(pg::LRU)
            {
                continue;
            }
            self.lru_del(e);
            self.files[f as usize].cache.set(i as usize, SLOT_EMPTY);
            self.account_page(e, true, -1);
            self.frames.get_mut(e).flags = 0;
            self.free_page(e);
            freed += 1;
        }
        let c = self.params.cost_reclaim_ns;
        self.charge_sys(freed * c);
        freed
    }
}
