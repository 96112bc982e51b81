//! The superblock shrinker over the dentry LRU, the VFS inode LRU and the
//! filesystem's own cached objects [5.9 fs/super.c `super_cache_count`,
//! `super_cache_scan`; fs/dcache.c `prune_dcache_sb`; fs/inode.c
//! `prune_icache_sb`, `inode_lru_isolate`].
//!
//! Simplified: dentries and inodes of a create are used once, so neither
//! `DCACHE_REFERENCED` nor `I_REFERENCED` is ever set (the kernel sets them
//! only on a second use while on the LRU) and nothing rotates; new files
//! are empty, so `inode_lru_isolate` never invalidates page cache and
//! `pginodesteal`/`kswapd_inodesteal` stay 0 (the counters exist);
//! `trylock_super` never fails.
//!
//! Two kinds of superblock: the workload's XFS mount (its inodes are
//! `xfs_inode`s that eviction tags for XFS's own reclaim), and the booted
//! OS's filesystems (`[os_slab]` of the machine, made by
//! [`crate::fs::os`]): proc, sysfs, the tools disk's ext4, whose evicted
//! inodes are freed at once (`evict` → `destroy_inode`) and which have no
//! cached objects of their own (`nr_cached_objects` is XFS's only).

use std::collections::VecDeque;

use super::xfs_icache::XfsMount;
use crate::engine::World;
use crate::mm::shrinker::{ShrinkControl, SHRINK_EMPTY, SHRINK_STOP};
use crate::mm::slab::{Cache, Obj};
use crate::Kernel;

/// A dentry: its slab object and its inode (an index into the mount's inodes).
#[derive(Clone, Copy, Debug)]
pub struct Dentry {
    /// `dentry` slab object.
    pub obj: Obj,
    /// `d_inode`.
    pub inode: u32,
}

/// A mounted filesystem (`struct super_block`).
#[derive(Debug)]
pub struct SuperBlock {
    /// Its device.
    pub dev: usize,
    /// Index of `s_shrink`.
    pub shrinker: usize,
    /// Dentries by index (`None`: freed).
    pub dentries: Vec<Option<Dentry>>,
    /// Free dentry indexes.
    free_dentries: Vec<u32>,
    /// `s_dentry_lru`: unused dentries, oldest first.
    pub dentry_lru: VecDeque<u32>,
    /// `s_inode_lru`: unused inodes (no dentry), oldest first.
    pub inode_lru: VecDeque<u32>,
    /// The XFS side (empty for the OS's filesystems).
    pub xfs: XfsMount,
    /// Filesystem type (`s_type->name`).
    pub fs: &'static str,
    /// For the OS's filesystems: each inode's slab object (`None`:
    /// freed); XFS keeps its inodes in [`XfsMount`].
    pub inode_objs: Vec<Option<Obj>>,
    /// The last `iput` deletes the inode (`generic_delete_inode`) rather
    /// than putting it on `s_inode_lru`.
    pub delete_inode: bool,
    /// ext4: extent-status entries that stay referenced (see
    /// `OsSuper::referenced_extents`); its `s_es_shrinker`, if any.
    pub referenced_extents: u64,
}

impl SuperBlock {
    /// A freshly mounted XFS on `dev`.
    pub fn new(dev: usize, shrinker: usize, agcount: usize, log_bytes: u64) -> SuperBlock {
        SuperBlock {
            dev,
            shrinker,
            dentries: Vec::new(),
            free_dentries: Vec::new(),
            dentry_lru: VecDeque::new(),
            inode_lru: VecDeque::new(),
            xfs: XfsMount::new(agcount, log_bytes),
            fs: "xfs",
            inode_objs: Vec::new(),
            delete_inode: false,
            referenced_extents: 0,
        }
    }

    /// One of the booted OS's filesystems (no device of the machine's).
    pub fn os(fs: &'static str, shrinker: usize, delete_inode: bool) -> SuperBlock {
        SuperBlock {
            dev: usize::MAX,
            shrinker,
            dentries: Vec::new(),
            free_dentries: Vec::new(),
            dentry_lru: VecDeque::new(),
            inode_lru: VecDeque::new(),
            xfs: XfsMount::default(),
            fs,
            inode_objs: Vec::new(),
            delete_inode,
            referenced_extents: 0,
        }
    }

    /// Whether this is the workload's XFS mount.
    pub fn is_xfs(&self) -> bool {
        self.fs == "xfs"
    }
}

/// `mult_frac(x, n, d)`.
fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    (x / d) * n + (x % d) * n / d
}

impl Kernel {
    /// `d_instantiate` of a new file's dentry, then its last `dput` after
    /// `close()`: the dentry is unused and goes on the tail of the LRU
    /// (`retain_dentry` → `d_lru_add`), still holding its inode.
    pub fn d_instantiate_unused(&mut self, sb: usize, obj: Obj, inode: u32) {
        let s = &mut self.supers[sb];
        let d = Dentry { obj, inode };
        let i = match s.free_dentries.pop() {
            Some(i) => {
                s.dentries[i as usize] = Some(d);
                i
            }
            None => {
                s.dentries.push(Some(d));
                (s.dentries.len() - 1) as u32
            }
        };
        s.dentry_lru.push_back(i);
    }

    /// `super_cache_count` [5.9 fs/super.c]: the fs's cached objects plus
    /// the two LRUs, scaled by `vfs_cache_pressure` (`vfs_pressure_ratio`).
    pub fn super_cache_count(&self, sb: usize, _sc: &ShrinkControl) -> u64 {
        let s = &self.supers[sb];
        let total =
            s.xfs.reclaimable_count() + s.dentry_lru.len() as u64 + s.inode_lru.len() as u64;
        if total == 0 {
            return SHRINK_EMPTY;
        }
        mult_frac(total, self.params.vfs_cache_pressure, 100)
    }

    /// `prune_dcache_sb`: frees up to `nr` dentries from the LRU head
    /// (`dentry_lru_isolate` → `shrink_dentry_list` → `dentry_kill`); each
    /// drops its inode, which `iput_final` puts on the inode LRU.
    fn prune_dcache_sb(&mut self, sb: usize, nr: u64) -> u64 {
        let mut freed = 0;
        while freed < nr {
            let s = &mut self.supers[sb];
            let Some(i) = s.dentry_lru.pop_front() else {
                break;
            };
            let d = s.dentries[i as usize]
                .take()
                .expect("an LRU dentry is live");
            s.free_dentries.push(i);
            // dentry_kill → dentry_unlink_inode → iput: the inode's last
            // reference goes; iput_final keeps it on the inode LRU unless
            // the fs's drop_inode says delete (proc), which evicts it now.
            if s.delete_inode {
                if let Some(o) = s.inode_objs[d.inode as usize].take() {
                    self.kmem_cache_free(Cache::Inode, o);
                }
            } else {
                s.inode_lru.push_back(d.inode);
            }
            self.kmem_cache_free(Cache::Dentry, d.obj);
            freed += 1;
        }
        freed
    }

    /// `prune_icache_sb`: up to `nr` inodes from the LRU head are evicted
    /// (`inode_lru_isolate` → `dispose_list` → `evict`). XFS:
    /// `xfs_fs_destroy_inode` → `xfs_inode_set_reclaim_tag`, the
    /// `xfs_inode` memory stays until XFS reclaims it; the OS's
    /// filesystems: `destroy_inode` frees the inode's slab object.
    fn prune_icache_sb(&mut self, sb: usize, nr: u64) -> u64 {
        let mut freed = 0;
        while freed < nr {
            let Some(ino) = self.supers[sb].inode_lru.pop_front() else {
                break;
            };
            if self.supers[sb].is_xfs() {
                self.supers[sb].xfs.set_reclaim_tag(ino);
            } else if let Some(o) = self.supers[sb].inode_objs[ino as usize].take() {
                self.kmem_cache_free(Cache::Inode, o);
            }
            freed += 1;
        }
        freed
    }
}

/// `super_cache_scan` [5.9 fs/super.c]: `SHRINK_STOP` without `__GFP_FS`;
/// otherwise `nr_to_scan` split in proportion over dentries, inodes and
/// the fs's objects (each part + 1), pruned in that order. XFS's
/// `free_cached_objects` returns 0 in 5.8 (an error code) and 5.9, so only
/// dentries and inodes count as freed.
pub async fn super_cache_scan(w: &World, sb: usize, sc: &mut ShrinkControl) -> u64 {
    if !sc.gfp.fs {
        return SHRINK_STOP;
    }
    let (freed, fs_objects) = {
        let mut k = w.k();
        let s = &k.supers[sb];
        let fs_objects = s.xfs.reclaimable_count();
        let inodes = s.inode_lru.len() as u64;
        let dentries = s.dentry_lru.len() as u64;
        let total = fs_objects + inodes + dentries + 1;
        let nr = sc.nr_to_scan;
        let d = mult_frac(nr, dentries, total);
        let i = mult_frac(nr, inodes, total);
        let f = mult_frac(nr, fs_objects, total);
        let mut freed = k.prune_dcache_sb(sb, d + 1);
        freed += k.prune_icache_sb(sb, i + 1);
        (freed, if fs_objects > 0 { f + 1 } else { 0 })
    };
    if fs_objects > 0 {
        super::xfs_icache::xfs_reclaim_inodes_nr(w, sb, fs_objects).await;
    }
    freed
}
