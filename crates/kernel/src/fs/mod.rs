//! A filesystem model just large enough for slab reclaim: an XFS mount per
//! device with its dentry and VFS inode caches ([`super_block`]) and XFS's
//! inode cache, cluster buffers, AIL and reclaim ([`xfs_icache`]).
//!
//! An fs_mark-style create ([`xfs_create`]) reserves log space, allocates
//! a dentry, an `xfs_inode` and its log item from slab, commits the inode,
//! its directory's and its AG's changes to the CIL ([`xfs_log`], where
//! they stay pinned until their checkpoint is on disk) and leaves the
//! dentry unused on the dentry LRU, as closing a new zero-length file
//! does. Dirty inodes are cleaned by writing their cluster buffer (32
//! inodes, 16 KiB) once unpinned: by the AIL push (`xfsaild`), or, under
//! `xfs.inode_reclaim=sync`, by the inode shrinker itself. See
//! `docs/slab.md` for what is simplified.

pub mod ioend;
pub mod os;
pub mod super_block;
pub mod xfs_buf;
pub mod xfs_icache;
pub mod xfs_log;

use std::rc::Rc;

use crate::engine::World;
use crate::mm::alloc::Gfp;
use crate::mm::slab::{kmem_cache_alloc, Cache};
pub use super_block::SuperBlock;

/// How XFS reclaims inodes (`xfs.inode_reclaim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InodeReclaim {
    /// ≤5.8: `xfs_reclaim_inodes_nr` passes `SYNC_TRYLOCK | SYNC_WAIT`: a
    /// per-AG mutex (blocking once every AG was skipped), waits on flushing
    /// inodes, and dirty inodes written synchronously (their cluster
    /// buffer read first if it is not cached) [5.8 fs/xfs/xfs_icache.c].
    Sync,
    /// The 2019 RFC state: non-blocking reclaim (dirty, flushing inodes
    /// skipped) without cluster-buffer pinning, so cleaning a dirty inode
    /// whose buffer was reclaimed needs a read (and pages) in the AIL push.
    Async,
    /// 5.9 as merged: non-blocking reclaim, and the cluster buffer held by
    /// the inode's log item from its first logging until it is clean
    /// [5.9 fs/xfs/libxfs/xfs_trans_inode.c `xfs_trans_log_inode`].
    AsyncPinned,
}

impl InodeReclaim {
    /// Every value, by the name `--set xfs.inode_reclaim=NAME` takes.
    pub const CHOICES: [(&'static str, InodeReclaim); 3] = [
        ("sync", InodeReclaim::Sync),
        ("async", InodeReclaim::Async),
        ("async-pinned", InodeReclaim::AsyncPinned),
    ];
}

/// Inodes per cluster buffer (16 KiB of 512-byte inodes: v5 XFS's
/// `inode_cluster_size` for 512-byte inodes).
pub const INODES_PER_CLUSTER: usize = 32;
/// Pages of a cluster buffer.
pub const CLUSTER_PAGES: usize = 4;
/// Mounts XFS on device `dev` (once; later calls return the same
/// superblock): registers its shrinkers and starts `xfsaild`, the CIL
/// push work, the log worker and the background inode reclaim worker.
pub fn mount(w: &Rc<World>, dev: usize) -> usize {
    if let Some(i) = w.k().supers.iter().position(|s| s.is_xfs() && s.dev == dev) {
        return i;
    }
    let sb = {
        let mut k = w.k();
        let i = k.supers.len();
        let agcount = k.params.xfs_agcount as usize;
        let log_bytes = k.params.xfs_log_mib << 20;
        use crate::mm::shrinker::{
            ShrinkerKind, DEFAULT_SEEKS, SHRINKER_MEMCG_AWARE, SHRINKER_NUMA_AWARE,
        };
        // alloc_super: seeks DEFAULT_SEEKS, batch 1024, NUMA and memcg
        // aware [5.9 fs/super.c]; xfs_alloc_buftarg: DEFAULT_SEEKS, NUMA
        // aware [5.9 fs/xfs/xfs_buf.c].
        let shrinker = k.register_shrinker(
            ShrinkerKind::Super(i),
            DEFAULT_SEEKS,
            1024,
            SHRINKER_NUMA_AWARE | SHRINKER_MEMCG_AWARE,
        );
        k.register_shrinker(
            ShrinkerKind::XfsBuf(i),
            DEFAULT_SEEKS,
            0,
            SHRINKER_NUMA_AWARE,
        );
        k.supers
            .push(SuperBlock::new(dev, shrinker, agcount, log_bytes));
        i
    };
    let name = w.k().devs[dev].name.clone();
    let t = w
        .k()
        .new_task(&format!("xfsaild/{name}"), crate::TaskKind::Kthread, 0);
    w.spawn(t, xfs_buf::xfsaild(w.clone(), sb));
    let t = w.k().new_task(
        &format!("kworker/{sb}:1H-xfs-buf/{name}"),
        crate::TaskKind::Kthread,
        0,
    );
    w.spawn(t, xfs_buf::xfs_buf_ioend_worker(w.clone(), sb));
    let t = w.k().new_task(
        &format!("kworker/u:1-xfs-cil/{name}"),
        crate::TaskKind::Kthread,
        0,
    );
    w.spawn(t, xfs_log::xlog_cil_push_worker(w.clone(), sb));
    let t = w.k().new_task(
        &format!("kworker/{sb}:1-xfs-sync/{name}"),
        crate::TaskKind::Kthread,
        0,
    );
    w.spawn(t, xfs_log::xfs_log_worker(w.clone(), sb));
    let t = w.k().new_task(
        &format!("kworker/{sb}:2-xfs-reclaim/{name}"),
        crate::TaskKind::Kthread,
        0,
    );
    w.spawn(t, xfs_icache::xfs_reclaim_worker(w.clone(), sb));
    sb
}

/// Outcome of a create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateResult {
    /// Created.
    Done,
    /// The task was OOM-killed (or an allocation failed): stop.
    Killed,
    /// No inode left (`xfs.maxicount` reached: ENOSPC): stop creating.
    NoSpace,
}

/// `open(O_CREAT)` + `close()` of a new empty file in directory `dir` of
/// superblock `sb`: `d_alloc` (GFP_KERNEL), then in a transaction
/// (GFP_NOFS: `xfs_trans_alloc` sets `memalloc_nofs_save`) the
/// `xfs_inode` (`xfs_inode_alloc`), a new cluster buffer when the AG's
/// last one is full (`xfs_ialloc_ag_alloc`), the inode log item
/// (`xfs_inode_item_init`), and the inode, directory and AG changes
/// committed to the CIL (`xfs_trans_commit` → `xfs_log_commit_cil`), then
/// `xlog_cil_push_background` [5.8/5.9 fs/xfs/xfs_inode.c `xfs_create`].
/// Reserves log space first (`xfs_trans_alloc` → `xfs_log_reserve`; the
/// kernel takes it after the dentry, which changes nothing here).
pub async fn xfs_create(w: &World, sb: usize, dir: u32) -> CreateResult {
    // xfs_dialloc: no new inode past m_maxicount [5.9 fs/xfs/xfs_ialloc.c;
    // simplified: counted per inode, not per 64-inode chunk, and checked
    // before the transaction's log reservation rather than inside it].
    {
        let k = w.k();
        let max = k.params.xfs_maxicount;
        if max > 0 && k.supers[sb].xfs.inodes_allocated() >= max {
            return CreateResult::NoSpace;
        }
    }
    xfs_log::xfs_log_reserve(w, sb).await;
    let Some(dentry) = kmem_cache_alloc(w, Cache::Dentry, Gfp::KERNEL).await else {
        w.k().xfs_log_ungrant(sb);
        return CreateResult::Killed;
    };
    let Some(ip) = kmem_cache_alloc(w, Cache::XfsInode, Gfp::NOFS_NOFAIL).await else {
        let mut k = w.k();
        k.kmem_cache_free(Cache::Dentry, dentry);
        k.xfs_log_ungrant(sb);
        return CreateResult::Killed;
    };
    let ag = {
        let k = w.k();
        (dir as usize) % k.supers[sb].xfs.ags.len()
    };
    let Some((cluster, new_chunk)) = xfs_icache::xfs_ialloc_cluster(w, sb, ag).await else {
        let mut k = w.k();
        k.kmem_cache_free(Cache::Dentry, dentry);
        k.kmem_cache_free(Cache::XfsInode, ip);
        k.xfs_log_ungrant(sb);
        return CreateResult::Killed;
    };
    let Some(ili) = kmem_cache_alloc(w, Cache::XfsIli, Gfp::NOFS_NOFAIL).await else {
        let mut k = w.k();
        k.kmem_cache_free(Cache::Dentry, dentry);
        k.kmem_cache_free(Cache::XfsInode, ip);
        k.xfs_log_ungrant(sb);
        return CreateResult::Killed;
    };
    {
        let mut k = w.k();
        let ino = k.xfs_inode_new(sb, ag, cluster, ip, ili);
        k.xlog_cil_commit_create(sb, dir, ag, ino, new_chunk);
        k.d_instantiate_unused(sb, dentry, ino);
        let c = k.params.cost_fs_create_ns;
        k.charge_sys(c);
    }
    xfs_log::xlog_cil_push_background(w, sb).await;
    CreateResult::Done
}
