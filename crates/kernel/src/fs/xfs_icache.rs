//! XFS's inode cache: per-AG reclaimable inodes with a reclaim cursor,
//! dirty inodes cleaned by writing their cluster buffer, the AIL and its
//! push (`xfsaild`, with the buffers and log space in `xfs_buf.rs`), and
//! inode reclaim in the three `xfs.inode_reclaim` modes [5.8 and 5.9 fs/xfs/xfs_icache.c `xfs_reclaim_inodes_nr`,
//! `xfs_reclaim_inodes_ag`, `xfs_reclaim_inode`, `xfs_reclaim_worker`;
//! fs/xfs/xfs_inode.c `xfs_iflush_cluster`; fs/xfs/xfs_trans_ail.c].
//!
//! Simplified (docs/slab.md): the AIL holds cluster buffers, not inode
//! log items, at the LSN of their oldest committed dirty inode, beside one
//! item per directory and per AG for their metadata (`xfs_log.rs`); a push
//! writes a cluster's every dirty unpinned inode (as `xfs_iflush_cluster`
//! does); log space, the CIL and pinning are in `xfs_log.rs`; metadata I/O takes
//! the device's latency and bandwidth on a queue of its own, not through
//! the block layer's request queue; buffers have no `b_lru_ref` (the
//! buffer shrinker frees an unused buffer at its first scan).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use super::xfs_buf::{alloc_buf_pages, take_pending, xfs_buf_read, xfs_iflush_sync};
use super::xfs_log::{xfs_iunpin_wait, Log};
use super::{InodeReclaim, INODES_PER_CLUSTER};
use crate::engine::{WaitQueue, World};
use crate::mm::alloc::Gfp;
use crate::mm::page::Pfn;
use crate::mm::slab::{Cache, Obj};
use crate::Kernel;

/// `XFS_LOOKUP_BATCH`
const XFS_LOOKUP_BATCH: usize = 32;

/// An in-core XFS inode.
#[derive(Clone, Copy, Debug)]
pub struct XfsInode {
    /// `xfs_inode` slab object.
    pub obj: Obj,
    /// `xfs_ili` slab object.
    pub ili: Obj,
    /// Its AG.
    pub ag: u16,
    /// Inode number (increasing per mount).
    pub ino: u64,
    /// Its cluster buffer.
    pub cluster: u32,
    /// Logged and not yet written.
    pub dirty: bool,
    /// Sequence of the checkpoint it was last logged in (pinned until that
    /// checkpoint is on disk).
    pub seq: u64,
    /// LSN of that checkpoint once on disk (its AIL position).
    pub lsn: u64,
    /// Its cluster write is in flight (`xfs_iflock` held).
    pub flushing: bool,
}

/// An allocation group's inode-cache state (`struct xfs_perag`).
#[derive(Debug, Default)]
pub struct Ag {
    /// Inodes tagged `XFS_ICI_RECLAIM_TAG`, by inode number.
    pub reclaimable: BTreeMap<u64, u32>,
    /// `pag_ici_reclaim_cursor`.
    pub cursor: u64,
    /// `pag_ici_reclaim_lock` held (5.8 only).
    pub locked: bool,
    /// Waiters for it.
    pub lock_wait: WaitQueue,
    /// The cluster new inodes of this AG go into.
    pub cur_cluster: Option<u32>,
}

/// An inode cluster buffer.
#[derive(Debug, Default)]
pub struct Cluster {
    /// Its pages (empty: not cached).
    pub pages: Vec<Pfn>,
    /// Inodes allocated in it so far.
    pub filled: usize,
    /// Live inodes in it.
    pub inodes: Vec<u32>,
    /// Dirty inodes.
    pub dirty: u32,
    /// A write is in flight.
    pub flushing: bool,
    /// Held by dirty inodes' log items (`async-pinned`).
    pub held: bool,
    /// In the AIL, at this LSN.
    pub ail_lsn: Option<u64>,
    /// In `buf_lru`.
    pub on_lru: bool,
}

/// Counters of XFS inode reclaim, for tests and summaries.
#[derive(Clone, Copy, Debug, Default)]
pub struct XfsStats {
    /// Inodes freed by reclaim.
    pub reclaimed: u64,
    /// Dirty or flushing inodes reclaim skipped.
    pub skipped: u64,
    /// Of `skipped`, those the background worker (`xfs_reclaim_worker`)
    /// skipped: it walks without `SYNC_WAIT` in 5.8 as well, so only the
    /// rest are the shrinker's.
    pub worker_skipped: u64,
    /// Times a reclaimer blocked (AG lock, flush lock, cluster I/O).
    pub reclaim_waits: u64,
    /// Time reclaimers spent blocked, ns.
    pub reclaim_wait_ns: u64,
    /// Cluster buffers read back by a flush (read-modify-write).
    pub buffer_reads: u64,
    /// Cluster buffers read back by a create (`async-pinned`: logging an
    /// inode pins its cluster's buffer, read in if it was reclaimed).
    pub create_buffer_reads: u64,
    /// Cluster buffers written.
    pub cluster_writes: u64,
    /// Creates that waited for log space.
    pub log_waits: u64,
    /// Create transactions committed to the CIL.
    pub commits: u64,
    /// Bytes committed to the CIL.
    pub log_bytes: u64,
    /// Checkpoints written, and their bytes (iclog headers included).
    pub checkpoints: u64,
    /// Bytes of the checkpoints.
    pub checkpoint_bytes: u64,
    /// Log forces: `xfsaild`'s, 5.8 reclaim's `xfs_iunpin_wait`, the log
    /// worker's.
    pub log_forces: u64,
    /// Inodes found pinned by reclaim.
    pub reclaim_pinned: u64,
    /// Pinned items met by `xfsaild` (`XFS_ITEM_PINNED`).
    pub ail_pinned: u64,
    /// Commits throttled at the CIL's blocking limit.
    pub cil_throttles: u64,
}

impl XfsStats {
    /// Adds `o`'s counts.
    pub fn add(&mut self, o: &XfsStats) {
        self.reclaimed += o.reclaimed;
        self.skipped += o.skipped;
        self.worker_skipped += o.worker_skipped;
        self.reclaim_waits += o.reclaim_waits;
        self.reclaim_wait_ns += o.reclaim_wait_ns;
        self.buffer_reads += o.buffer_reads;
        self.create_buffer_reads += o.create_buffer_reads;
        self.cluster_writes += o.cluster_writes;
        self.log_waits += o.log_waits;
        self.commits += o.commits;
        self.log_bytes += o.log_bytes;
        self.checkpoints += o.checkpoints;
        self.checkpoint_bytes += o.checkpoint_bytes;
        self.log_forces += o.log_forces;
        self.reclaim_pinned += o.reclaim_pinned;
        self.ail_pinned += o.ail_pinned;
        self.cil_throttles += o.cil_throttles;
    }
}

/// The XFS side of a mount.
#[derive(Debug, Default)]
pub struct XfsMount {
    /// Inodes by index (`None`: freed).
    pub inodes: Vec<Option<XfsInode>>,
    free_inodes: Vec<u32>,
    /// Allocation groups.
    pub ags: Vec<Ag>,
    /// Cluster buffers.
    pub clusters: Vec<Cluster>,
    /// The AIL by LSN: clusters with committed dirty inodes, directories
    /// and AGs with logged metadata.
    pub ail: BTreeSet<(u64, AilItem)>,
    /// `ail_target`.
    pub ail_target: u64,
    /// `ail_last_pushed_lsn`.
    pub ail_last_pushed: u64,
    /// `ail_log_flush`: pinned items met since the last log force.
    pub ail_log_flush: u64,
    /// The log and its CIL.
    pub log: Log,
    /// Unused cached buffers (`bt_lru`), oldest first; entries no longer
    /// eligible are dropped when met.
    pub buf_lru: VecDeque<u32>,
    /// Dirty inodes.
    pub dirty: u64,
    next_ino: u64,
    /// `xfsaild` sleeps here.
    pub aild_wait: WaitQueue,
    /// Creates waiting for log space.
    pub log_wait: WaitQueue,
    /// The CIL push work sleeps here.
    pub cil_wait: WaitQueue,
    /// Waiters for a checkpoint to be on disk (log forces, unpin waits).
    pub force_wait: WaitQueue,
    /// Committers throttled at the CIL's blocking limit (`xc_push_wait`).
    pub cil_throttle: WaitQueue,
    /// Waiters for a cluster write or read to finish.
    pub io_wait: WaitQueue,
    /// Writes in flight for the I/O completion worker, by end time.
    pub ioend: VecDeque<(u64, super::xfs_buf::IoDone)>,
    /// The I/O completion worker sleeps here.
    pub ioend_wait: WaitQueue,
    /// End of the last metadata transfer.
    pub meta_busy_until: u64,
    /// Pages allocated for buffers and not yet installed (a read in flight).
    pub pending: Vec<Pfn>,
    /// Counters.
    pub stats: XfsStats,
}

impl XfsMount {
    /// An empty mount with `agcount` AGs and a log of `log_bytes`.
    pub fn new(agcount: usize, log_bytes: u64) -> XfsMount {
        XfsMount {
            ags: (0..agcount.max(1)).map(|_| Ag::default()).collect(),
            log: Log::new(log_bytes, agcount),
            ..Default::default()
        }
    }
    /// Inodes allocated since the mount (`m_icount` without frees: the
    /// simulated creators never unlink).
    pub fn inodes_allocated(&self) -> u64 {
        self.next_ino
    }
    /// `xfs_reclaim_inodes_count`: inodes tagged for reclaim in all AGs.
    pub fn reclaimable_count(&self) -> u64 {
        self.ags.iter().map(|a| a.reclaimable.len() as u64).sum()
    }
    /// `xfs_inode_set_reclaim_tag` of inode index `i`.
    pub fn set_reclaim_tag(&mut self, i: u32) {
        let ip = self.inodes[i as usize].expect("an evicted inode is live");
        self.ags[ip.ag as usize].reclaimable.insert(ip.ino, i);
    }
    /// Puts cluster `c` on the buffer LRU if nothing holds it.
    pub(super) fn buf_release(&mut self, c: u32) {
        let cl = &mut self.clusters[c as usize];
        if !cl.pages.is_empty() && !cl.held && !cl.flushing && !cl.on_lru {
            cl.on_lru = true;
            self.buf_lru.push_back(c);
        }
    }
}

impl Kernel {
    /// The `xfs.inode_reclaim` mode in force.
    pub fn xfs_inode_reclaim(&self) -> InodeReclaim {
        self.profile.xfs_inode_reclaim
    }

    /// A new inode of AG `ag` in `cluster`, logged (dirty) by its create;
    /// the caller commits it to the CIL (`xlog_cil_commit_create`), where
    /// it is pinned and not yet in the AIL.
    pub fn xfs_inode_new(&mut self, sb: usize, ag: usize, cluster: u32, obj: Obj, ili: Obj) -> u32 {
        let pinned = self.xfs_inode_reclaim() == InodeReclaim::AsyncPinned;
        let x = &mut self.supers[sb].xfs;
        let ino = x.next_ino;
        x.next_ino += 1;
        let ip = XfsInode {
            obj,
            ili,
            ag: ag as u16,
            ino,
            cluster,
            dirty: true,
            seq: 0,
            lsn: 0,
            flushing: false,
        };
        let i = match x.free_inodes.pop() {
            Some(i) => {
                x.inodes[i as usize] = Some(ip);
                i
            }
            None => {
                x.inodes.push(Some(ip));
                (x.inodes.len() - 1) as u32
            }
        };
        x.dirty += 1;
        let cl = &mut x.clusters[cluster as usize];
        cl.inodes.push(i);
        cl.dirty += 1;
        if pinned {
            // xfs_trans_log_inode: the log item holds the buffer.
            cl.held = true;
        } else {
            x.buf_release(cluster);
        }
        i
    }

    /// Frees reclaimable inode `ino` of `ag` (`xfs_reclaim_inode` →
    /// `__xfs_inode_free`): its `xfs_inode` and `xfs_ili` objects.
    fn xfs_inode_free(&mut self, sb: usize, ag: usize, ino: u64) {
        let x = &mut self.supers[sb].xfs;
        let Some(i) = x.ags[ag].reclaimable.remove(&ino) else {
            return;
        };
        let ip = x.inodes[i as usize].take().expect("live");
        x.free_inodes.push(i);
        let cl = &mut x.clusters[ip.cluster as usize];
        if let Some(p) = cl.inodes.iter().position(|&m| m == i) {
            cl.inodes.swap_remove(p);
        }
        x.stats.reclaimed += 1;
        self.kmem_cache_free(Cache::XfsInode, ip.obj);
        self.kmem_cache_free(Cache::XfsIli, ip.ili);
    }
}

/// A wait queue of a mount.
#[derive(Clone, Copy)]
pub(super) enum Wq {
    /// Log space.
    Log,
    /// Cluster I/O.
    Io,
    /// An AG's reclaim lock.
    AgLock(usize),
    /// The CIL push work.
    Cil,
    /// A checkpoint's completion.
    Force,
    /// The CIL's blocking limit.
    CilThrottle,
}

/// An item in the AIL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AilItem {
    /// A cluster buffer's dirty inodes.
    Cluster(u32),
    /// A directory's inode and blocks.
    Dir(u32),
    /// An AG's header and btree blocks.
    Ag(u16),
}

impl XfsMount {
    fn wq(&mut self, which: Wq) -> &mut WaitQueue {
        match which {
            Wq::Log => &mut self.log_wait,
            Wq::Io => &mut self.io_wait,
            Wq::AgLock(ag) => &mut self.ags[ag].lock_wait,
            Wq::Cil => &mut self.cil_wait,
            Wq::Force => &mut self.force_wait,
            Wq::CilThrottle => &mut self.cil_throttle,
        }
    }
}

/// Blocks the current task on `which` wait queue of the mount until woken.
pub(super) async fn wait_on(w: &World, sb: usize, which: Wq) {
    {
        let mut k = w.k();
        let k = &mut *k;
        k.exec.prepare_to_wait(k.supers[sb].xfs.wq(which));
    }
    w.block(None).await;
    let mut k = w.k();
    let k = &mut *k;
    k.exec.finish_wait(k.supers[sb].xfs.wq(which));
}

/// The cluster a new inode of `ag` goes in: the AG's current one, or a
/// new chunk's (`xfs_ialloc_ag_alloc`: pages for its buffer, GFP_NOFS).
/// In `async-pinned` mode the buffer must be in memory (`xfs_trans_log_inode`
/// reads it): the create pays the read. `None` if an allocation failed;
/// otherwise the cluster and whether it is a new chunk's.
pub async fn xfs_ialloc_cluster(w: &World, sb: usize, ag: usize) -> Option<(u32, bool)> {
    let cur = {
        let mut k = w.k();
        let x = &mut k.supers[sb].xfs;
        match x.ags[ag].cur_cluster {
            Some(c) if x.clusters[c as usize].filled < INODES_PER_CLUSTER => {
                x.clusters[c as usize].filled += 1;
                Some(c)
            }
            _ => None,
        }
    };
    let c = match cur {
        Some(c) => c,
        None => {
            let c = {
                let mut k = w.k();
                let x = &mut k.supers[sb].xfs;
                x.clusters.push(Cluster {
                    filled: 1,
                    ..Default::default()
                });
                let c = (x.clusters.len() - 1) as u32;
                x.ags[ag].cur_cluster = Some(c);
                c
            };
            // A new chunk's buffer is initialised in memory, not read.
            let pages = alloc_buf_pages(w, sb, Gfp::NOFS).await?;
            let mut k = w.k();
            take_pending(&mut k, sb, &pages);
            if !k.supers[sb].xfs.clusters[c as usize].pages.is_empty() {
                // Another create in this AG read it in meanwhile.
                for p in pages {
                    k.free_page(p);
                }
                return Some((c, true));
            }
            let x = &mut k.supers[sb].xfs;
            x.clusters[c as usize].pages = pages;
            x.buf_release(c);
            return Some((c, true));
        }
    };
    if w.k().xfs_inode_reclaim() == InodeReclaim::AsyncPinned && !xfs_buf_read(w, sb, c, true).await
    {
        return None;
    }
    Some((c, false))
}

/// `xfs_reclaim_inode`: frees inode `ino` of `ag` if it is clean; with
/// `wait` (5.8's `SYNC_WAIT`) first waits for its flush lock, then, if it
/// is pinned, forces the log and waits for the unpin (`xfs_iunpin_wait`),
/// and writes it if dirty; without (5.9), skips it if pinned, dirty or
/// flushing [5.8.1/5.9.1 fs/xfs/xfs_icache.c `xfs_reclaim_inode`].
/// `worker`: the background worker's walk (its skips are counted apart).
async fn xfs_reclaim_inode(w: &World, sb: usize, ag: usize, ino: u64, wait: bool, worker: bool) {
    let mut counted = false;
    loop {
        let (dirty, flushing, pinned, seq, cluster) = {
            let mut k = w.k();
            let x = &mut k.supers[sb].xfs;
            let Some(&i) = x.ags[ag].reclaimable.get(&ino) else {
                return;
            };
            let ip = x.inodes[i as usize].expect("tagged inodes are live");
            let pinned = ip.dirty && x.log.pinned(ip.seq);
            if pinned && !counted {
                x.stats.reclaim_pinned += 1;
                counted = true;
            }
            if !wait && (ip.dirty || ip.flushing) {
                x.stats.skipped += 1;
                if worker {
                    x.stats.worker_skipped += 1;
                }
                return;
            }
            (ip.dirty, ip.flushing, pinned, ip.seq, ip.cluster)
        };
        if !dirty && !flushing {
            w.k().xfs_inode_free(sb, ag, ino);
            return;
        }
        let t0 = w.k().exec.now();
        if flushing {
            // xfs_iflock(): wait for the write in flight.
            wait_on(w, sb, Wq::Io).await;
        } else if pinned {
            xfs_iunpin_wait(w, sb, seq).await;
            if w.k().current().killed {
                return;
            }
        } else if !xfs_iflush_sync(w, sb, cluster).await {
            return;
        }
        let mut k = w.k();
        let now = k.exec.now();
        let st = &mut k.supers[sb].xfs.stats;
        st.reclaim_waits += 1;
        st.reclaim_wait_ns += now - t0;
    }
}

/// `xfs_reclaim_inodes_ag`: walks the AGs' reclaimable inodes from each
/// AG's cursor in batches of `XFS_LOOKUP_BATCH` until `nr` are done.
/// `lock` (5.8): each AG's `pag_ici_reclaim_lock` is tried, skipped AGs
/// retried with a blocking lock if `wait` (`SYNC_WAIT`) and work is left.
async fn xfs_reclaim_inodes_ag(
    w: &World,
    sb: usize,
    mut nr: u64,
    lock: bool,
    wait: bool,
    worker: bool,
) {
    let agcount = w.k().supers[sb].xfs.ags.len();
    let mut trylock = true;
    loop {
        let mut skipped = 0;
        for ag in 0..agcount {
            if nr == 0 {
                break;
            }
            if lock {
                if trylock {
                    let mut k = w.k();
                    let a = &mut k.supers[sb].xfs.ags[ag];
                    if a.locked {
                        skipped += 1;
                        continue;
                    }
                    a.locked = true;
                } else {
                    let t0 = w.k().exec.now();
                    let mut waited = false;
                    while w.k().supers[sb].xfs.ags[ag].locked {
                        waited = true;
                        wait_on(w, sb, Wq::AgLock(ag)).await;
                    }
                    let mut k = w.k();
                    let now = k.exec.now();
                    let x = &mut k.supers[sb].xfs;
                    x.ags[ag].locked = true;
                    if waited {
                        x.stats.reclaim_waits += 1;
                        x.stats.reclaim_wait_ns += now - t0;
                    }
                }
            }
            loop {
                let batch: Vec<u64> = {
                    let k = w.k();
                    let a = &k.supers[sb].xfs.ags[ag];
                    a.reclaimable
                        .range(a.cursor..)
                        .take(XFS_LOOKUP_BATCH)
                        .map(|(&ino, _)| ino)
                        .collect()
                };
                let Some(&last) = batch.last() else {
                    w.k().supers[sb].xfs.ags[ag].cursor = 0;
                    break;
                };
                w.k().supers[sb].xfs.ags[ag].cursor = last + 1;
                for &ino in &batch {
                    xfs_reclaim_inode(w, sb, ag, ino, wait, worker).await;
                }
                nr = nr.saturating_sub(batch.len() as u64);
                if nr == 0 {
                    break;
                }
            }
            if lock {
                let mut k = w.k();
                let k = &mut *k;
                let a = &mut k.supers[sb].xfs.ags[ag];
                a.locked = false;
                k.exec.wake_up_all(&mut a.lock_wait);
            }
        }
        if lock && wait && trylock && skipped > 0 && nr > 0 {
            trylock = false;
            continue;
        }
        return;
    }
}

/// `xfs_reclaim_inodes_nr` (the superblock shrinker's
/// `free_cached_objects`): pushes the AIL and reclaims up to `nr` inodes,
/// blocking (`sync`) or not. Returns 0, as 5.8 (an error code) and 5.9 do.
pub async fn xfs_reclaim_inodes_nr(w: &World, sb: usize, nr: u64) -> u64 {
    let mode = {
        let mut k = w.k();
        let k = &mut *k;
        k.xfs_ail_push_all(sb);
        k.xfs_inode_reclaim()
    };
    let sync = mode == InodeReclaim::Sync;
    xfs_reclaim_inodes_ag(w, sb, nr, sync, sync, false).await;
    0
}

/// The background reclaim worker (`xfs_reclaim_worker`), every
/// `xfssyncd_centisecs / 6` (5 s at the default 30 s): a non-blocking walk
/// of every AG (5.8: `SYNC_TRYLOCK` only).
pub async fn xfs_reclaim_worker(w: Rc<World>, sb: usize) {
    loop {
        let (at, lock) = {
            let k = w.k();
            let ms = k.params.xfs_syncd_centisecs / 6 * 10;
            (
                k.exec.now() + ms.max(10) * 1_000_000,
                k.xfs_inode_reclaim() == InodeReclaim::Sync,
            )
        };
        w.sleep_until(at).await;
        xfs_reclaim_inodes_ag(&w, sb, u64::MAX, lock, false, true).await;
    }
}
