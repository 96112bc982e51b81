//! Slab caches made of object slots on order-0 pages taken from the page
//! allocator, so that slab memory is real memory: allocating a slab page
//! may enter reclaim, and freeing objects returns memory only when a page's
//! every slot is empty.
//!
//! Follows SLUB's accounting where it matters to reclaim [5.9 mm/slub.c
//! `allocate_slab`, `__free_slab`]: a new slab page adds to
//! `NR_SLAB_RECLAIMABLE_B` for `SLAB_RECLAIM_ACCOUNT` caches; a slab whose
//! last object is freed goes back to the allocator and, when the freeing
//! task is in reclaim, adds its pages to `current->reclaim_state->
//! reclaimed_slab`, which `shrink_node` adds to `sc->nr_reclaimed`
//! [5.9 mm/vmscan.c `shrink_node`]. Simplified: order-0 slabs (the
//! kernel's `xfs_inode` slabs are order 2), no per-CPU slabs, no
//! `min_partial` empty slabs kept (an empty slab is freed at once), no
//! memcg kmem accounting (slab pages are the root's), no NUMA placement
//! (the task's node first, as for any page).

use super::page::Pfn;
use crate::engine::{TaskId, World};
use crate::mm::alloc::Gfp;
use crate::Kernel;

/// The caches reclaimlab models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// `xfs_inode` (the VFS inode is embedded in it, `ip->i_vnode`, so XFS
    /// has no separate `inode_cache` objects). 1 KiB objects: 4 a page.
    XfsInode = 0,
    /// `dentry`, 192 bytes: 21 a page.
    Dentry = 1,
    /// `xfs_ili`, the inode log item allocated when an inode is first
    /// logged (`xfs_inode_item_init`), freed with the inode; ~200 bytes.
    XfsIli = 2,
    /// The inodes of the booted OS's filesystems (proc's
    /// `proc_inode_cache`, kernfs's `inode_cache`, `ext4_inode_cache`),
    /// folded into one cache of `inode_cache`'s ~600-byte objects: 6 a page.
    Inode = 3,
}

/// Number of [`Cache`]s.
pub const NR_CACHES: usize = 4;

/// Objects a slab page of `c` holds.
pub fn objs_per_slab(c: Cache) -> u64 {
    u64::from(CACHES[c as usize].1)
}

/// `(name, objects per page, SLAB_RECLAIM_ACCOUNT)`, by [`Cache`]: all
/// are created with `SLAB_RECLAIM_ACCOUNT` [5.9 fs/xfs/xfs_super.c
/// `xfs_init_zones`; fs/dcache.c `dcache_init`; fs/inode.c `inode_init`].
const CACHES: [(&str, u16, bool); NR_CACHES] = [
    ("xfs_inode", 4, true),
    ("dentry", 21, true),
    ("xfs_ili", 20, true),
    ("inode_cache", 6, true),
];

/// One object: its slab and its slot there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Obj {
    /// Index of the slab in its cache.
    pub slab: u32,
    /// Slot on the slab's page.
    pub slot: u16,
}

/// One slab: a page of object slots.
#[derive(Clone, Debug, Default)]
struct Slab {
    /// Its page (`NO_PFN` while the slab index is unused).
    pfn: Pfn,
    /// Objects in use.
    inuse: u16,
    /// Free slots.
    freelist: Vec<u16>,
    /// On the cache's partial list.
    on_partial: bool,
}

/// A `kmem_cache`.
#[derive(Clone, Debug)]
pub struct KmemCache {
    /// Name as in `/proc/slabinfo`.
    pub name: &'static str,
    /// Objects a slab holds.
    pub objs_per_slab: u16,
    /// `SLAB_RECLAIM_ACCOUNT`.
    pub reclaimable: bool,
    slabs: Vec<Slab>,
    /// Slab indexes not in use.
    unused: Vec<u32>,
    /// Slabs with free slots (`n->partial`), the most recent last.
    partial: Vec<u32>,
    /// Slab pages held.
    pub nr_slabs: u64,
    /// Objects in use.
    pub active_objs: u64,
}

impl KmemCache {
    fn new(i: usize) -> KmemCache {
        let (name, objs_per_slab, reclaimable) = CACHES[i];
        KmemCache {
            name,
            objs_per_slab,
            reclaimable,
            slabs: Vec::new(),
            unused: Vec::new(),
            partial: Vec::new(),
            nr_slabs: 0,
            active_objs: 0,
        }
    }

    /// A free slot from the partial list, if any.
    fn alloc_from_partial(&mut self) -> Option<Obj> {
        while let Some(&s) = self.partial.last() {
            let slab = &mut self.slabs[s as usize];
            if let Some(slot) = slab.freelist.pop() {
                slab.inuse += 1;
                if slab.freelist.is_empty() {
                    slab.on_partial = false;
                    self.partial.pop();
                }
                self.active_objs += 1;
                return Some(Obj { slab: s, slot });
            }
            slab.on_partial = false;
            self.partial.pop();
        }
        None
    }

    /// Makes `pfn` a new slab on the partial list.
    fn new_slab(&mut self, pfn: Pfn) {
        let s = self.unused.pop().unwrap_or_else(|| {
            self.slabs.push(Slab::default());
            (self.slabs.len() - 1) as u32
        });
        let n = self.objs_per_slab;
        let slab = &mut self.slabs[s as usize];
        slab.pfn = pfn;
        slab.inuse = 0;
        slab.freelist.clear();
        slab.freelist.extend((0..n).rev());
        slab.on_partial = true;
        self.partial.push(s);
        self.nr_slabs += 1;
    }

    /// Frees `obj`; returns the slab's page if that emptied it.
    fn free(&mut self, obj: Obj) -> Option<Pfn> {
        let slab = &mut self.slabs[obj.slab as usize];
        debug_assert!(slab.inuse > 0 && !slab.freelist.contains(&obj.slot));
        slab.inuse -= 1;
        slab.freelist.push(obj.slot);
        self.active_objs -= 1;
        if slab.inuse == 0 {
            // __free_slab: the page goes back to the allocator.
            let pfn = std::mem::replace(&mut slab.pfn, super::page::NO_PFN);
            slab.freelist.clear();
            if slab.on_partial {
                slab.on_partial = false;
                if let Some(i) = self.partial.iter().rposition(|&x| x == obj.slab) {
                    self.partial.swap_remove(i);
                }
            }
            self.unused.push(obj.slab);
            self.nr_slabs -= 1;
            return Some(pfn);
        }
        if !slab.on_partial {
            slab.on_partial = true;
            self.partial.push(obj.slab);
        }
        None
    }

    /// The pages of every slab (for the conservation check).
    pub fn pages(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.slabs
            .iter()
            .filter(|s| s.pfn != super::page::NO_PFN)
            .map(|s| s.pfn)
    }
}

/// Every slab cache, and each task's `reclaim_state`.
#[derive(Clone, Debug)]
pub struct SlabState {
    /// The caches, by [`Cache`].
    pub caches: [KmemCache; NR_CACHES],
    /// `current->reclaim_state->reclaimed_slab` by task (`None`: the task
    /// is not in reclaim, `set_task_reclaim_state` not called).
    reclaim_state: Vec<Option<u64>>,
    /// Tasks that set `PF_MEMALLOC` for good (`memalloc_noreclaim_save`
    /// at a kernel thread's start, as `xfsaild` does).
    noreclaim: Vec<bool>,
    /// Pages of the booted OS's reclaimable slab no shrinker can free (the
    /// machine's `os_slab.reclaimable_kib` less the LRU objects' slabs):
    /// held in the memory in use at boot, reported in
    /// `nr_slab_reclaimable`.
    pub boot_pinned: u64,
}

impl Default for SlabState {
    fn default() -> Self {
        SlabState {
            caches: [
                KmemCache::new(0),
                KmemCache::new(1),
                KmemCache::new(2),
                KmemCache::new(3),
            ],
            reclaim_state: Vec::new(),
            noreclaim: Vec::new(),
            boot_pinned: 0,
        }
    }
}

impl Kernel {
    /// `set_task_reclaim_state(current, &reclaim_state)` on entry to
    /// reclaim (`try_to_free_pages`, `balance_pgdat`): slab pages freed from
    /// now on are credited to this reclaimer.
    pub fn set_task_reclaim_state(&mut self, on: bool) {
        let t = self.exec.current() as usize;
        let rs = &mut self.slab.reclaim_state;
        if rs.len() <= t {
            rs.resize(t + 1, None);
        }
        rs[t] = on.then_some(0);
    }

    /// Whether the current task is in reclaim (`current->reclaim_state`
    /// set; the kernel's `PF_MEMALLOC` too): its allocations may use the
    /// reserves and never recurse into reclaim.
    pub fn in_reclaim(&self) -> bool {
        let t = self.exec.current() as usize;
        matches!(self.slab.reclaim_state.get(t), Some(Some(_)))
            || self.slab.noreclaim.get(t).copied().unwrap_or(false)
    }

    /// `memalloc_noreclaim_save()` for the rest of the current task's life
    /// (a kernel thread that sets it at its start: 5.8/5.9 `xfsaild`): its
    /// allocations take any free page and never enter reclaim.
    pub fn memalloc_noreclaim_save(&mut self) {
        let t = self.exec.current() as usize;
        let nr = &mut self.slab.noreclaim;
        if nr.len() <= t {
            nr.resize(t + 1, false);
        }
        nr[t] = true;
    }

    /// Takes `reclaim_state->reclaimed_slab` and zeroes it (`shrink_node`).
    pub fn take_reclaimed_slab(&mut self) -> u64 {
        let t = self.exec.current() as usize;
        match self.slab.reclaim_state.get_mut(t) {
            Some(Some(n)) => std::mem::take(n),
            _ => 0,
        }
    }

    /// `kmem_cache_free`: a slab whose last object goes returns its page
    /// to the allocator, credited to the current reclaimer if any
    /// [5.9 mm/slub.c `__free_slab`: `current->reclaim_state->reclaimed_slab += pages`].
    pub fn kmem_cache_free(&mut self, c: Cache, obj: Obj) {
        if let Some(pfn) = self.slab.caches[c as usize].free(obj) {
            self.free_page_reclaimed(pfn);
        }
    }

    /// Frees a kernel page a cache held (a slab or a buffer's page),
    /// crediting it to the current reclaimer if any.
    pub fn free_page_reclaimed(&mut self, pfn: Pfn) {
        self.free_page(pfn);
        let t = self.exec.current() as usize;
        if let Some(Some(n)) = self.slab.reclaim_state.get_mut(t) {
            *n += 1;
        }
    }

    /// Makes `pfn` (a page already taken from the allocator) a new slab of `c`.
    pub fn kmem_cache_new_slab(&mut self, c: Cache, pfn: Pfn) {
        self.slab.caches[c as usize].new_slab(pfn);
    }

    /// `kmem_cache_alloc` without a new slab: a slot on a partial slab.
    pub fn kmem_cache_alloc_partial(&mut self, c: Cache) -> Option<Obj> {
        self.slab.caches[c as usize].alloc_from_partial()
    }

    /// Pages of reclaimable (`NR_SLAB_RECLAIMABLE`) or unreclaimable slab.
    pub fn slab_pages(&self, reclaimable: bool) -> u64 {
        self.slab
            .caches
            .iter()
            .filter(|c| c.reclaimable == reclaimable)
            .map(|c| c.nr_slabs)
            .sum()
    }

    /// Every page slab holds.
    pub fn slab_pfns(&self) -> Vec<Pfn> {
        self.slab.caches.iter().flat_map(|c| c.pages()).collect()
    }

    /// The task id a page-allocation helper is running as (for tests).
    pub fn current_task(&self) -> TaskId {
        self.exec.current()
    }
}

/// `kmem_cache_alloc(cache, gfp)`: a slot on a partial slab, else a new
/// slab page from the page allocator (`allocate_slab` → `alloc_pages`,
/// which may reclaim). `None` when the page allocation failed (the task
/// was OOM-killed, or a reclaimer found the reserves empty).
pub async fn kmem_cache_alloc(w: &World, c: Cache, gfp: Gfp) -> Option<Obj> {
    if let Some(o) = w.k().kmem_cache_alloc_partial(c) {
        return Some(o);
    }
    let pfn = crate::mm::alloc::alloc_page_unaccounted(w, gfp).await?;
    let mut k = w.k();
    k.slab.caches[c as usize].new_slab(pfn);
    k.kmem_cache_alloc_partial(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_returns_only_when_every_slot_is_empty() {
        let mut c = KmemCache::new(Cache::XfsInode as usize);
        c.new_slab(7);
        let objs: Vec<Obj> = (0..4).map(|_| c.alloc_from_partial().unwrap()).collect();
        assert!(c.alloc_from_partial().is_none(), "4 slots a page");
        for o in &objs[..3] {
            assert_eq!(c.free(*o), None);
        }
        assert_eq!(c.nr_slabs, 1);
        assert_eq!(c.free(objs[3]), Some(7));
        assert_eq!(c.nr_slabs, 0);
        assert_eq!(c.pages().count(), 0);
    }
}
