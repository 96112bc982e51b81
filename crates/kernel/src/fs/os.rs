//! The booted OS's reclaimable slab (the machine's `[os_slab]`): what of
//! the memory in use at boot is reclaimable slab, and the objects of it
//! the shrinkers see at each reclaim pass.
//!
//! A real guest holds ~16-20 MiB of reclaimable slab when its workload
//! starts, almost all of it pinned: dentries and inodes in use (an
//! initramfs root's dentries are pinned for good, `simple_mknod`'s
//! `dget`), xarray nodes of page cache, buffer heads. What reclaim's
//! `shrink_slab` sees of it is small: the unused dentries on each
//! superblock's `s_dentry_lru` (proc, sysfs and cgroup2 set
//! `s_shrink.seeks = 0`, so `do_shrink_slab` asks for half of them at every
//! priority [5.10 and 6.1 fs/proc/root.c, fs/kernfs/mount.c]) and ext4's
//! extent-status entries (`ext4_es_count`, a shrinker of its own per ext4
//! superblock, `DEFAULT_SEEKS`, not NUMA- or memcg-aware [5.10 and 6.1
//! fs/ext4/extents_status.c `ext4_es_register_shrinker`]).
//!
//! Simplified, as docs/slab.md says: the OS's objects are made at boot and
//! never again (nothing in the simulation opens a proc file or faults a
//! binary's page from the tools disk); the extent-status entries stay
//! referenced, so `ext4_es_scan` frees none of them (`es_reclaim_extents`
//! skips and unmarks a referenced extent; the running binaries' page-cache
//! misses mark it again before the next scan); every inode of the OS's
//! filesystems is one `inode_cache` object; all of it is on node 0 and
//! charged to no memcg, so only root (global) reclaim's `shrink_slab`
//! sees it, as `shrink_slab_memcg` would not [6.1 mm/vmscan.c].

use crate::mm::shrinker::{ShrinkerKind, DEFAULT_SEEKS, SHRINKER_MEMCG_AWARE, SHRINKER_NUMA_AWARE};
use crate::mm::slab::Cache;
use crate::Kernel;

use super::SuperBlock;

/// `s_type->name` for a machine's `fs` string (a `&'static str` for the
/// trace and the superblock): the names a guest has, else `os`.
fn fs_name(fs: &str) -> &'static str {
    match fs {
        "proc" => "proc",
        "sysfs" => "sysfs",
        "cgroup2" => "cgroup2",
        "ext4" => "ext4",
        "tmpfs" => "tmpfs",
        "devtmpfs" => "devtmpfs",
        _ => "os",
    }
}

impl Kernel {
    /// Builds the machine's `[os_slab]` at boot: the LRU objects' slab
    /// pages are taken from the top of node 0's memory in use at boot (so
    /// MemTotal and MemFree are as before), the rest of the reclaimable
    /// figure stays there as pinned slab, and each OS filesystem's
    /// shrinkers are registered (`alloc_super`: `DEFAULT_SEEKS` unless the
    /// fs says 0, batch 1024, NUMA- and memcg-aware [6.1 fs/super.c]).
    pub(crate) fn with_os_slab(mut self) -> Self {
        let os = self.machine.os_slab.clone();
        if os.is_empty() || self.nodes.is_empty() {
            return self;
        }
        let want = os.lru_slab_pages();
        let used = self.nodes[0].boot_used;
        let take = want.min(used);
        let top = self.frames.node_range(0).start + used as u32;
        let mut pfns = (top - take as u32..top).rev();
        self.nodes[0].boot_used -= take;
        let mut slab_page = |k: &mut Kernel, c: Cache| -> bool {
            match pfns.next() {
                Some(pfn) => {
                    let p = k.frames.get_mut(pfn);
                    p.flags = 0;
                    p.owner = 0;
                    k.kmem_cache_new_slab(c, pfn);
                    true
                }
                None => false,
            }
        };
        let mut on_lru_pages = 0u64;
        for s in &os.supers {
            let fs = fs_name(&s.fs);
            let sb = self.supers.len();
            if s.referenced_extents > 0 {
                // ext4_fill_super → ext4_es_register_shrinker, before
                // mount_bdev registers the superblock's own shrinker.
                self.register_shrinker(ShrinkerKind::Ext4Es(sb), DEFAULT_SEEKS, 0, 0);
            }
            let shrinker = self.register_shrinker(
                ShrinkerKind::Super(sb),
                s.seeks,
                1024,
                SHRINKER_NUMA_AWARE | SHRINKER_MEMCG_AWARE,
            );
            let mut sbk = SuperBlock::os(fs, shrinker, s.delete_inode);
            sbk.referenced_extents = s.referenced_extents;
            self.supers.push(sbk);
            // An object of cache `c`: from a partial slab, else from a new
            // slab page taken off the memory in use at boot.
            let mut alloc = |k: &mut Kernel, c: Cache| match k.kmem_cache_alloc_partial(c) {
                Some(o) => Some(o),
                None if slab_page(k, c) => {
                    on_lru_pages += 1;
                    k.kmem_cache_alloc_partial(c)
                }
                None => None,
            };
            for _ in 0..s.unused_dentries {
                let d = alloc(&mut self, Cache::Dentry);
                let i = alloc(&mut self, Cache::Inode);
                let (Some(d), Some(i)) = (d, i) else {
                    // Not enough memory in use at boot for them (the
                    // machine check keeps this from happening).
                    break;
                };
                let s = &mut self.supers[sb];
                s.inode_objs.push(Some(i));
                let ino = (s.inode_objs.len() - 1) as u32;
                self.d_instantiate_unused(sb, d, ino);
            }
        }
        self.slab.boot_pinned = (os.reclaimable_kib / 4)
            .saturating_sub(on_lru_pages)
            .min(self.nodes.iter().map(|n| n.boot_used).sum());
        self
    }

    /// `ext4_es_count` of OS superblock `sb`: its extent-status entries
    /// (`es_stats_shk_cnt`).
    pub fn ext4_es_count(&self, sb: usize) -> u64 {
        self.supers[sb].referenced_extents
    }
}
