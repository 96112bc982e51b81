//! XFS cluster buffers, metadata I/O, log space and the AIL push: the
//! cleaning side of the inode cache [fs/xfs/xfs_buf.c `xfs_buf_read`,
//! `xfs_buftarg_shrink_scan`; fs/xfs/xfs_inode.c `xfs_iflush_cluster`;
//! fs/xfs/xfs_trans_ail.c `xfsaild`; fs/xfs/xfs_log.c
//! `xlog_grant_head_wait`], split from `xfs_icache` (its module comment
//! says what is simplified).

use std::rc::Rc;

use super::xfs_icache::{wait_on, Wq};
use super::CLUSTER_PAGES;
use crate::engine::World;
use crate::mm::alloc::Gfp;
use crate::mm::page::Pfn;
use crate::Kernel;

/// Clusters `xfsaild` submits before waiting for them.
const AIL_PUSH_BATCH: usize = 64;

impl Kernel {
    /// `xfs_buftarg_shrink_count`: buffers on the LRU.
    pub fn xfs_buftarg_shrink_count(&self, sb: usize) -> u64 {
        self.supers[sb].xfs.buf_lru.len() as u64
    }

    /// `xfs_buftarg_shrink_scan`: frees up to `nr` unused buffers from the
    /// LRU head, their pages credited to the reclaimer [5.9
    /// fs/xfs/xfs_buf.c `xfs_buf_free`: `reclaimed_slab += b_page_count`].
    /// Buffers held, under I/O or already freed are dropped from the LRU.
    pub fn xfs_buftarg_shrink_scan(&mut self, sb: usize, nr: u64) -> u64 {
        let mut freed = 0;
        for _ in 0..nr {
            let x = &mut self.supers[sb].xfs;
            let Some(c) = x.buf_lru.pop_front() else {
                break;
            };
            let cl = &mut x.clusters[c as usize];
            cl.on_lru = false;
            if cl.held || cl.flushing || cl.pages.is_empty() {
                continue;
            }
            for p in std::mem::take(&mut cl.pages) {
                self.free_page_reclaimed(p);
            }
            freed += 1;
        }
        freed
    }

    /// Every page XFS buffers hold (for the conservation check).
    pub fn fs_pfns(&self) -> Vec<Pfn> {
        self.supers
            .iter()
            .flat_map(|s| {
                let c = s.xfs.clusters.iter().flat_map(|c| c.pages.iter().copied());
                c.chain(s.xfs.pending.iter().copied())
            })
            .collect()
    }

    /// When a metadata transfer of `pages` queued now ends.
    pub(super) fn meta_io(&mut self, sb: usize, pages: usize, write: bool) -> u64 {
        let dev = &self.devs[self.supers[sb].dev];
        let per = if write {
            dev.write_ns_per_page
        } else {
            dev.read_ns_per_page
        };
        let (lat, now) = (dev.latency_ns, self.exec.now());
        let x = &mut self.supers[sb].xfs;
        let start = x.meta_busy_until.max(now);
        x.meta_busy_until = start + (per * pages as f64) as u64;
        x.meta_busy_until + lat
    }

    /// Starts writing cluster `c`: its dirty inodes are flush-locked.
    /// Returns the write's end.
    pub(super) fn xfs_iflush_cluster_start(&mut self, sb: usize, c: u32) -> u64 {
        let x = &mut self.supers[sb].xfs;
        let cl = &mut x.clusters[c as usize];
        cl.flushing = true;
        for &m in &cl.inodes {
            if let Some(ip) = x.inodes[m as usize].as_mut() {
                ip.flushing = ip.dirty;
            }
        }
        x.stats.cluster_writes += 1;
        self.meta_io(sb, CLUSTER_PAGES, true)
    }

    /// `xfs_buf_iodone` of a cluster write (`xfs_iflush_done`): its
    /// flushed inodes are clean and leave the log; the buffer is released.
    pub(super) fn xfs_iflush_done(&mut self, sb: usize, c: u32) {
        let x = &mut self.supers[sb].xfs;
        let mut cleaned = 0;
        let cl = &mut x.clusters[c as usize];
        for &m in &cl.inodes {
            if let Some(ip) = x.inodes[m as usize].as_mut() {
                if ip.flushing {
                    ip.flushing = false;
                    ip.dirty = false;
                    cleaned += 1;
                }
            }
        }
        cl.flushing = false;
        cl.dirty -= cleaned;
        x.dirty -= u64::from(cleaned);
        if cl.dirty == 0 {
            cl.held = false;
        } else if !cl.in_ail {
            cl.in_ail = true;
            x.ail.push_back(c);
        }
        x.buf_release(c);
        for wq in [&mut x.io_wait, &mut x.log_wait] {
            let mut q = std::mem::take(wq);
            self.exec.wake_up_all(&mut q);
            *wq = q;
        }
    }
}

/// Pages for a cluster buffer (`xfs_buf_allocate_memory`), held in the
/// mount's `pending` until [`take_pending`] installs them.
pub(super) async fn alloc_buf_pages(w: &World, sb: usize, gfp: Gfp) -> Option<Vec<Pfn>> {
    let mut pages = Vec::with_capacity(CLUSTER_PAGES);
    for _ in 0..CLUSTER_PAGES {
        match crate::mm::alloc::alloc_page_unaccounted(w, gfp).await {
            Some(p) => {
                w.k().supers[sb].xfs.pending.push(p);
                pages.push(p)
            }
            None => {
                let mut k = w.k();
                take_pending(&mut k, sb, &pages);
                for p in pages {
                    k.free_page(p);
                }
                return None;
            }
        }
    }
    Some(pages)
}

/// Removes `pages` from the mount's `pending`.
pub(super) fn take_pending(k: &mut Kernel, sb: usize, pages: &[Pfn]) {
    k.supers[sb].xfs.pending.retain(|p| !pages.contains(p));
}

/// `xfs_buf_read` of cluster `c` if it is not cached: allocate its pages
/// and read it (the read-modify-write of a flush, or with `for_create` a
/// create logging an inode into a cluster whose buffer was reclaimed,
/// counted apart). False if the pages could not be had.
pub(super) async fn xfs_buf_read(w: &World, sb: usize, c: u32, for_create: bool) -> bool {
    if !w.k().supers[sb].xfs.clusters[c as usize].pages.is_empty() {
        return true;
    }
    let Some(pages) = alloc_buf_pages(w, sb, Gfp::NOFS).await else {
        return false;
    };
    let done = {
        let mut k = w.k();
        if for_create {
            k.supers[sb].xfs.stats.create_buffer_reads += 1;
        } else {
            k.supers[sb].xfs.stats.buffer_reads += 1;
        }
        k.meta_io(sb, CLUSTER_PAGES, false)
    };
    w.sleep_until(done).await;
    let mut k = w.k();
    take_pending(&mut k, sb, &pages);
    let cl = &mut k.supers[sb].xfs.clusters[c as usize];
    if cl.pages.is_empty() {
        cl.pages = pages;
    } else {
        for p in pages {
            k.free_page(p);
        }
    }
    true
}

/// Waits for log space (`xlog_grant_head_wait`): the AIL is pushed and
/// the create sleeps until written inodes free some.
pub async fn xlog_grant_head_wait(w: &World, sb: usize) {
    let mut counted = false;
    loop {
        {
            let mut k = w.k();
            let killed = k.current().killed;
            let x = &mut k.supers[sb].xfs;
            if x.dirty < x.log_items || killed {
                return;
            }
            if !counted {
                x.stats.log_waits += 1;
                counted = true;
            }
            let mut wq = std::mem::take(&mut x.aild_wait);
            k.exec.wake_up_all(&mut wq);
            k.supers[sb].xfs.aild_wait = wq;
        }
        wait_on(w, sb, Wq::Log).await;
    }
}

/// Writes cluster `c` and waits for it (`xfs_iflush` + `xfs_bwrite` in 5.8
/// `xfs_reclaim_inode` with `SYNC_WAIT`), reading it first if it is not
/// cached. False if the buffer's pages could not be had.
pub(super) async fn xfs_iflush_sync(w: &World, sb: usize, c: u32) -> bool {
    if !xfs_buf_read(w, sb, c, false).await {
        return false;
    }
    if w.k().supers[sb].xfs.clusters[c as usize].flushing {
        return true;
    }
    let done = w.k().xfs_iflush_cluster_start(sb, c);
    w.sleep_until(done).await;
    w.k().xfs_iflush_done(sb, c);
    true
}

/// `xfsaild`: pushes the AIL from its oldest item while the log is more
/// than 3/4 full or `xfs_ail_push_all` was asked: writes up to
/// `AIL_PUSH_BATCH` clusters (reading back any whose buffer was
/// reclaimed), waits for them, cleans their inodes.
pub async fn xfsaild(w: Rc<World>, sb: usize) {
    loop {
        let batch: Vec<u32> = {
            let mut k = w.k();
            let x = &mut k.supers[sb].xfs;
            let target = x.log_items * 3 / 4;
            let mut batch = Vec::new();
            let mut pending = 0u64;
            while batch.len() < AIL_PUSH_BATCH && (x.push_all || x.dirty - pending > target) {
                let Some(c) = x.ail.pop_front() else {
                    x.push_all = false;
                    break;
                };
                let cl = &mut x.clusters[c as usize];
                cl.in_ail = false;
                if cl.dirty == 0 || cl.flushing {
                    continue;
                }
                pending += u64::from(cl.dirty);
                batch.push(c);
            }
            if batch.is_empty() {
                x.push_all = false;
            }
            batch
        };
        if batch.is_empty() {
            let deadline = {
                let mut k = w.k();
                let k = &mut *k;
                k.exec.prepare_to_wait(&mut k.supers[sb].xfs.aild_wait);
                k.exec.now() + 50_000_000
            };
            w.block(Some(deadline)).await;
            let mut k = w.k();
            let k = &mut *k;
            k.exec.finish_wait(&mut k.supers[sb].xfs.aild_wait);
            continue;
        }
        let mut last = 0;
        let mut started = Vec::with_capacity(batch.len());
        for c in batch {
            if !xfs_buf_read(&w, sb, c, false).await {
                // No memory for the buffer: back in the AIL for later.
                let mut k = w.k();
                let x = &mut k.supers[sb].xfs;
                if !x.clusters[c as usize].in_ail {
                    x.clusters[c as usize].in_ail = true;
                    x.ail.push_back(c);
                }
                continue;
            }
            let mut k = w.k();
            if k.supers[sb].xfs.clusters[c as usize].flushing {
                continue;
            }
            last = last.max(k.xfs_iflush_cluster_start(sb, c));
            started.push(c);
        }
        w.sleep_until(last).await;
        let mut k = w.k();
        for c in started {
            k.xfs_iflush_done(sb, c);
        }
        if k.current().killed {
            return;
        }
    }
}
