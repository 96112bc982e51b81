//! XFS cluster buffers, metadata I/O, log space and the AIL push: the
//! cleaning side of the inode cache [fs/xfs/xfs_buf.c `xfs_buf_read`,
//! `xfs_buftarg_shrink_scan`; fs/xfs/xfs_inode.c `xfs_iflush_cluster`;
//! fs/xfs/xfs_trans_ail.c `xfsaild`, `xfsaild_push`], split from
//! `xfs_icache` (its module comment says what is simplified; the log is
//! in `xfs_log`).

use std::rc::Rc;

use super::xfs_icache::{wait_on, AilItem, Wq};
use super::xfs_log::xfs_log_force;
use super::CLUSTER_PAGES;
use crate::engine::World;
use crate::mm::alloc::Gfp;
use crate::mm::page::Pfn;
use crate::Kernel;

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

    /// Starts writing cluster `c`: its dirty inodes are flush-locked, but
    /// not the pinned ones (`xfs_iflush_cluster` skips an inode with a pin
    /// count [5.8.1 fs/xfs/xfs_inode.c]). Returns the write's end.
    pub(super) fn xfs_iflush_cluster_start(&mut self, sb: usize, c: u32) -> u64 {
        let x = &mut self.supers[sb].xfs;
        let cl = &mut x.clusters[c as usize];
        cl.flushing = true;
        for &m in &cl.inodes {
            if let Some(ip) = x.inodes[m as usize].as_mut() {
                ip.flushing = ip.dirty && !x.log.pinned(ip.seq);
            }
        }
        x.stats.cluster_writes += 1;
        self.meta_io(sb, CLUSTER_PAGES, true)
    }

    /// `xfs_buf_iodone` of a cluster write (`xfs_iflush_done`): its
    /// flushed inodes are clean and leave the AIL (the tail may move); a
    /// cluster with committed dirty inodes left stays at the oldest one's
    /// LSN; the buffer is released.
    pub(super) fn xfs_iflush_done(&mut self, sb: usize, c: u32) {
        let x = &mut self.supers[sb].xfs;
        let mut cleaned = 0;
        let mut oldest: Option<u64> = None;
        let cl = &mut x.clusters[c as usize];
        for &m in &cl.inodes {
            if let Some(ip) = x.inodes[m as usize].as_mut() {
                if ip.flushing {
                    ip.flushing = false;
                    ip.dirty = false;
                    cleaned += 1;
                } else if ip.dirty && !x.log.pinned(ip.seq) {
                    oldest = Some(oldest.map_or(ip.lsn, |o| o.min(ip.lsn)));
                }
            }
        }
        cl.flushing = false;
        cl.dirty -= cleaned;
        x.dirty -= u64::from(cleaned);
        if cl.dirty == 0 {
            cl.held = false;
        }
        if let Some(old) = cl.ail_lsn.take() {
            x.ail.remove(&(old, AilItem::Cluster(c)));
        }
        if let Some(l) = oldest {
            cl.ail_lsn = Some(l);
            x.ail.insert((l, AilItem::Cluster(c)));
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

/// Writes cluster `c` and waits for it (`xfs_iflush` + `xfs_bwrite` in 5.8
/// `xfs_reclaim_inode` with `SYNC_WAIT`), reading it first if it is not
/// cached. False if the buffer's pages could not be had. A cluster under
/// write (by `xfsaild`, which skipped this inode while it was pinned) is
/// waited for first, as `xfs_imap_to_bp` waits for the buffer's lock.
pub(super) async fn xfs_iflush_sync(w: &World, sb: usize, c: u32) -> bool {
    if !xfs_buf_read(w, sb, c, false).await {
        return false;
    }
    if w.k().supers[sb].xfs.clusters[c as usize].flushing {
        while w.k().supers[sb].xfs.clusters[c as usize].flushing {
            wait_on(w, sb, Wq::Io).await;
        }
        return true;
    }
    let done = w.k().xfs_iflush_cluster_start(sb, c);
    w.sleep_until(done).await;
    w.k().xfs_iflush_done(sb, c);
    true
}

/// A directory's or AG's metadata write, as one page.
const SHARED_WRITE_PAGES: usize = 1;

/// Writes `xfsaild` may have in flight before `submit_bio` blocks: the
/// block layer's request count (`BLKDEV_MAX_RQ`, 128).
const META_NR_REQUESTS: usize = 128;

/// Skips an AIL pass once this many items were stuck (`xfsaild_push`).
const AIL_MAX_STUCK: u32 = 100;

/// `xfsaild` [5.8.1/5.9.1 fs/xfs/xfs_trans_ail.c `xfsaild_push`]: a pass
/// first forces the log (synchronously) if pinned items were met since the
/// last force and the last pass ended (`ail_log_flush`,
/// `ail_last_pushed_lsn == 0`); it then walks the AIL from where the last
/// pass stopped up to the target (`xlog_grant_push_ail`'s quarter of the
/// log beyond the tail, or everything after `xfs_ail_push_all`): a cluster
/// with committed dirty inodes is queued for writing, a directory's or
/// AG's metadata likewise unless it is pinned (relogged in a checkpoint
/// not yet on disk: `XFS_ITEM_PINNED`, counted stuck); one under I/O
/// counts as `XFS_ITEM_FLUSHING`. More than 100 stuck ends the pass. The
/// queued buffers are submitted without waiting for them
/// (`xfs_buf_delwri_submit_nowait`; but no more than 128 in flight;
/// a cluster whose buffer was reclaimed is read back first, synchronously,
/// as `xfs_iflush` → `xfs_imap_to_bp` does) and complete in
/// [`xfs_buf_ioend_worker`]. It then sleeps 50 ms when the target was
/// reached, 20 ms (and restarts from the AIL's start) when over 90 % of
/// the items were stuck or flushing, 10 ms otherwise; a push wakes it.
/// (5.8/5.9's `xfs_iflush` read the buffer with `XBF_TRYLOCK`; the
/// model's read always proceeds.)
pub async fn xfsaild(w: Rc<World>, sb: usize) {
    // xfsaild runs with PF_MEMALLOC [5.8.1/5.9.1 fs/xfs/xfs_trans_ail.c
    // `xfsaild`: `memalloc_noreclaim_save`]: a buffer it reads back takes
    // pages from the reserves rather than reclaiming.
    w.k().memalloc_noreclaim_save();
    loop {
        let force = {
            let mut k = w.k();
            let x = &mut k.supers[sb].xfs;
            if x.ail_log_flush > 0 && x.ail_last_pushed == 0 && !x.ail.is_empty() {
                x.ail_log_flush = 0;
                true
            } else {
                false
            }
        };
        if force {
            xfs_log_force(&w, sb).await;
        }
        let (batch, shared, tout) = {
            let mut k = w.k();
            let x = &mut k.supers[sb].xfs;
            let target = x.ail_target;
            let mut batch = Vec::new();
            let mut shared = Vec::new();
            let (mut stuck, mut flushing, mut count) = (0u32, 0u32, 0u32);
            let mut reached = true;
            let mut last_pushed = x.ail_last_pushed;
            let from = (x.ail_last_pushed, AilItem::Cluster(0));
            for &(lsn, it) in x.ail.range(from..) {
                if lsn > target {
                    break;
                }
                count += 1;
                match it {
                    AilItem::Cluster(c) => {
                        if x.clusters[c as usize].flushing {
                            flushing += 1;
                        } else {
                            batch.push(c);
                        }
                        last_pushed = lsn;
                    }
                    AilItem::Dir(_) | AilItem::Ag(_) => {
                        let (seq, writing) = match it {
                            AilItem::Dir(d) => {
                                let d = &x.log.dirs[&d];
                                (d.seq, d.writing)
                            }
                            AilItem::Ag(a) => {
                                let a = &x.log.ags[a as usize];
                                (a.seq, a.writing)
                            }
                            AilItem::Cluster(_) => unreachable!(),
                        };
                        if x.log.pinned(seq) {
                            stuck += 1;
                            x.ail_log_flush += 1;
                            x.stats.ail_pinned += 1;
                        } else if writing {
                            flushing += 1;
                            last_pushed = lsn;
                        } else {
                            shared.push((lsn, it));
                            last_pushed = lsn;
                        }
                    }
                }
                if stuck > AIL_MAX_STUCK {
                    reached = false;
                    break;
                }
            }
            x.ail_last_pushed = last_pushed;
            let tout = if count == 0 || reached {
                x.ail_last_pushed = 0;
                50
            } else if (stuck + flushing) * 100 / count > 90 {
                x.ail_last_pushed = 0;
                20
            } else {
                10
            };
            for &(_, it) in &shared {
                match it {
                    AilItem::Dir(d) => x.log.dirs.get_mut(&d).expect("logged").writing = true,
                    AilItem::Ag(a) => x.log.ags[a as usize].writing = true,
                    AilItem::Cluster(_) => {}
                }
            }
            (batch, shared, tout)
        };
        for c in batch {
            // submit_bio blocks while the queue's requests are all in
            // flight (`blk_mq_get_tag`).
            while w.k().supers[sb].xfs.ioend.len() >= META_NR_REQUESTS {
                wait_on(&w, sb, Wq::Io).await;
            }
            if !xfs_buf_read(&w, sb, c, false).await {
                // No memory for the buffer: it stays in the AIL for later.
                continue;
            }
            let mut k = w.k();
            if k.supers[sb].xfs.clusters[c as usize].flushing {
                continue;
            }
            let end = k.xfs_iflush_cluster_start(sb, c);
            k.xfs_buf_submit(sb, end, IoDone::Cluster(c));
        }
        if !shared.is_empty() {
            let mut k = w.k();
            let end = k.meta_io(sb, SHARED_WRITE_PAGES * shared.len(), true);
            k.xfs_buf_submit(sb, end, IoDone::Shared(shared));
        }
        if w.k().current().killed {
            return;
        }
        let deadline = {
            let mut k = w.k();
            let k = &mut *k;
            k.exec.prepare_to_wait(&mut k.supers[sb].xfs.aild_wait);
            k.exec.now() + tout * 1_000_000
        };
        w.block(Some(deadline)).await;
        let mut k = w.k();
        let k = &mut *k;
        k.exec.finish_wait(&mut k.supers[sb].xfs.aild_wait);
    }
}

/// A metadata write in flight, completed by [`xfs_buf_ioend_worker`].
#[derive(Debug)]
pub enum IoDone {
    /// A cluster buffer (`xfs_iflush_done`).
    Cluster(u32),
    /// Directory and AG metadata at their AIL LSNs.
    Shared(Vec<(u64, AilItem)>),
}

/// Buffer I/O completion (`xfs_buf_ioend` from the block layer's
/// completion): the writes `xfsaild` submitted, in order (the metadata
/// queue is first in, first out).
pub async fn xfs_buf_ioend_worker(w: Rc<World>, sb: usize) {
    loop {
        let next = w.k().supers[sb].xfs.ioend.front().map(|&(t, _)| t);
        let Some(at) = next else {
            {
                let mut k = w.k();
                let k = &mut *k;
                k.exec.prepare_to_wait(&mut k.supers[sb].xfs.ioend_wait);
            }
            w.block(None).await;
            let mut k = w.k();
            let k = &mut *k;
            k.exec.finish_wait(&mut k.supers[sb].xfs.ioend_wait);
            continue;
        };
        w.sleep_until(at).await;
        let mut k = w.k();
        let now = k.exec.now();
        while let Some((t, _)) = k.supers[sb].xfs.ioend.front() {
            if *t > now {
                break;
            }
            let (_, done) = k.supers[sb].xfs.ioend.pop_front().expect("front");
            match done {
                IoDone::Cluster(c) => k.xfs_iflush_done(sb, c),
                IoDone::Shared(items) => k.xfs_shared_write_done(sb, &items),
            }
        }
    }
}

impl Kernel {
    /// Queues a write ending at `end` for [`xfs_buf_ioend_worker`].
    fn xfs_buf_submit(&mut self, sb: usize, end: u64, done: IoDone) {
        let x = &mut self.supers[sb].xfs;
        x.ioend.push_back((end, done));
        self.exec.wake_up_all(&mut x.ioend_wait);
    }

    /// Completion of `xfsaild`'s directory and AG metadata writes: each
    /// leaves the AIL unless a checkpoint relogged it meanwhile (it then
    /// sits at the newer LSN).
    fn xfs_shared_write_done(&mut self, sb: usize, items: &[(u64, AilItem)]) {
        let x = &mut self.supers[sb].xfs;
        for &(lsn, it) in items {
            let slot = match it {
                AilItem::Dir(d) => {
                    let d = x.log.dirs.get_mut(&d).expect("logged");
                    d.writing = false;
                    &mut d.lsn
                }
                AilItem::Ag(a) => {
                    let a = &mut x.log.ags[a as usize];
                    a.writing = false;
                    &mut a.lsn
                }
                AilItem::Cluster(_) => continue,
            };
            if *slot == Some(lsn) {
                *slot = None;
                x.ail.remove(&(lsn, it));
            }
        }
        if !items.is_empty() {
            self.exec.wake_up_all(&mut x.log_wait);
            self.exec.wake_up_all(&mut x.io_wait);
        }
    }
}
