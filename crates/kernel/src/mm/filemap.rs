//! Files and the page cache: buffered `write()` (dirtying,
//! `balance_dirty_pages_ratelimited`; no access marking, as since 4.7) and
//! `read()` (hits with `mark_page_accessed`, misses that read from the
//! device), shared file mappings, and removal of clean pages by reclaim
//! (leaving a shadow entry, which only a read's insertion counts as a
//! workingset refault, not a write's).
//!
//! Follows `generic_perform_write` and `filemap_read` (mm/filemap.c, 5.15).
//! Simplifications: no readahead (the workloads read randomly, where the
//! kernel's readahead switches itself off), whole-page writes need no read
//! (`write_begin` skips it for full pages), no stable-page waits.

use super::alloc::{alloc_page, Gfp};
use super::memcontrol::ROOT_MEM_CGROUP;
use super::page::{pg, PageFlags, Pfn};
use super::slots::SparseSlots;
use super::swap::{SHADOW, SLOT_EMPTY};
use super::NodeStat;
use crate::block::{submit_bio, ReqKind};
use crate::engine::World;
use crate::sched::{maybe_pay_cpu, DEBT_FLUSH_NS};
use crate::vmstat::Ev;
use crate::Kernel;

/// A regular file on a block device.
#[derive(Debug)]
pub struct File {
    /// Device index.
    pub dev: usize,
    /// Device position of page 0 (files are contiguous extents).
    pub pos: u64,
    /// Size in pages.
    pub size: u32,
    /// Page cache: pfn, shadow (tagged [`SHADOW`]) or [`SLOT_EMPTY`].
    pub cache: SparseSlots,
    /// Dirty pages (`PAGECACHE_TAG_DIRTY` count).
    pub nr_dirty: u64,
    /// Pages under writeback (`PAGECACHE_TAG_WRITEBACK` count): when it
    /// falls to 0 the inode's writeback ended (`wb_inode_writeback_end`).
    pub nr_writeback: u64,
    /// Which pages are dirty (the xarray's `PAGECACHE_TAG_DIRTY`), so that
    /// writeback finds them without walking the whole file.
    pub dirty_tag: Vec<u64>,
    /// `inode->dirtied_when`, if dirty.
    pub dirtied_when: Option<u64>,
    /// `mapping->writeback_index`: where cyclic writeback resumes.
    pub writeback_index: u32,
    /// On its bdi's dirty inode list.
    pub on_dirty_list: bool,
    /// The memcg of the `bdi_writeback` the inode is attached to
    /// (`inode->i_wb->memcg_css`), fixed at its first dirtying
    /// (`inode_attach_wb`): the dirtied page's memcg under cgroup v2, the
    /// root under v1. `None` before. No foreign-inode switching.
    pub wb_memcg: Option<u16>,
    /// A hole-only (sparse) file: reading a missing page zero-fills it
    /// instead of reading the device.
    pub sparse: bool,
    /// Shared mapping: which page-cache pages are mapped (pte present).
    /// Empty until the file is mapped. Simplification: all processes mapping
    /// the file share one page table (one reference per page).
    pub mapped: Vec<u64>,
    /// Accessed bits of the mapped pages.
    pub young: Vec<u64>,
    /// The mapping was advised `MADV_RANDOM` (`VM_RAND_READ`): the
    /// mapped-file-stream reader's.
    pub rand_read: bool,
    /// Its readahead state (`struct file_ra_state`, [`super::readahead`]).
    pub ra: super::readahead::RaState,
    /// Mapped executable (`VM_EXEC`): a program image (`crate::mm::text`),
    /// whose referenced pages reclaim activates on their first pass and
    /// keeps active (`vmscan/lists.rs`).
    pub exec: bool,
    /// Pages whose blocks were never written since the file was laid out
    /// with `fallocate` (unwritten extents): a write into one needs a
    /// conversion at completion (`crate::fs::ioend`), and ext4's
    /// `->writepage` refuses it from reclaim. Empty: every block is
    /// written (a file laid out by writing it, or not fallocated).
    /// Simplified: page granularity; a page is converted when its write
    /// completes, not the whole extent around it.
    pub unwritten: Vec<u64>,
}

/// Bit `index` of a page bitmap; false past its end (an empty bitmap is
/// all clear).
fn page_bit(words: &[u64], index: u32) -> bool {
    words
        .get(index as usize / 64)
        .is_some_and(|m| m & (1 << (index % 64)) != 0)
}

impl File {
    /// The block under page `index` is unwritten (see [`File::unwritten`]).
    pub fn block_unwritten(&self, index: u32) -> bool {
        page_bit(&self.unwritten, index)
    }
    /// Marks the block under page `index` written (its conversion done).
    pub fn mark_written(&mut self, index: u32) {
        if let Some(m) = self.unwritten.get_mut((index / 64) as usize) {
            *m &= !(1 << (index % 64));
        }
    }
    /// The first page at or after `from` tagged dirty, if any (no wrap).
    pub fn next_dirty(&self, from: u32) -> Option<u32> {
        let mut w = from as usize / 64;
        let mut bits = *self.dirty_tag.get(w)? & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                let i = (w * 64) as u32 + bits.trailing_zeros();
                return (i < self.size).then_some(i);
            }
            w += 1;
            bits = *self.dirty_tag.get(w)?;
        }
    }

    /// Whether page `index` is mapped (`page_mapped`; always false for a
    /// file nobody maps, whose bitmap is empty).
    pub fn page_mapped(&self, index: u32) -> bool {
        page_bit(&self.mapped, index)
    }
}

impl Kernel {
    /// Creates a file of `pages` pages on device `dev` (empty page cache).
    pub fn create_file(&mut self, dev: usize, pages: u32) -> u32 {
        let id = self.files.len() as u32;
        let pos = self.devs[dev].alloc_pos;
        self.devs[dev].alloc_pos += u64::from(pages) + 256;
        self.files.push(File {
            dev,
            pos,
            size: pages,
            cache: SparseSlots::new(pages as usize),
            nr_dirty: 0,
            nr_writeback: 0,
            dirty_tag: vec![0; (pages as usize).div_ceil(64)],
            dirtied_when: None,
            writeback_index: 0,
            on_dirty_list: false,
            wb_memcg: None,
            sparse: false,
            mapped: Vec::new(),
            young: Vec::new(),
            rand_read: false,
            ra: Default::default(),
            exec: false,
            unwritten: Vec::new(),
        });
        id
    }

    /// `fallocate(fd, 0, 0, size)` of a new file (fio's default
    /// `fallocate=native`): every block allocated as an unwritten extent.
    pub fn fallocate(&mut self, f: u32) {
        let file = &mut self.files[f as usize];
        let words = (file.size as usize).div_ceil(64);
        file.unwritten = vec![u64::MAX; words];
        if !file.size.is_multiple_of(64) {
            file.unwritten[words - 1] = (1u64 << (file.size % 64)) - 1;
        }
    }

    /// `mmap(MAP_SHARED)` of file `f` (read-only): sets up its page table.
    pub fn mmap_file(&mut self, f: u32) {
        let file = &mut self.files[f as usize];
        if file.mapped.is_empty() {
            let words = (file.size as usize).div_ceil(64);
            file.mapped = vec![0; words];
            file.young = vec![0; words];
        }
        file.rand_read = true;
    }

    /// `folio_referenced` for a file page: tests and clears its young bit.
    /// Returns referencing ptes (0 or 1).
    pub fn file_referenced(&mut self, pfn: Pfn) -> u32 {
        let p = self.frames.get(pfn);
        let file = &mut self.files[p.owner as usize];
        if !file.page_mapped(p.index) {
            return 0;
        }
        // 6.3+ `folio_referenced` → `invalid_folio_referenced_vma`: a
        // mapping without recency is skipped before its ptes are looked
        // at (its accessed bits stay set and are never counted).
        if file.rand_read && self.profile.vma_recency {
            return 0;
        }
        let (w, b) = (p.index as usize / 64, p.index % 64);
        let young = file.young[w] & (1 << b) != 0;
        file.young[w] &= !(1 << b);
        self.rmap_walks += 1;
        u32::from(young)
    }

    /// `try_to_unmap` for a mapped file page.
    pub fn file_unmap(&mut self, pfn: Pfn) {
        let p = self.frames.get(pfn);
        let file = &mut self.files[p.owner as usize];
        if file.mapped.is_empty() {
            return;
        }
        let (w, b) = (p.index as usize / 64, p.index % 64);
        file.mapped[w] &= !(1 << b);
        file.young[w] &= !(1 << b);
    }

    /// `folio_mark_dirty` for a page-cache page: accounts `NR_FILE_DIRTY`,
    /// `nr_dirtied` and `WB_DIRTIED`, and puts the inode on its bdi's dirty
    /// list.
    pub fn set_page_dirty(&mut self, pfn: Pfn) -> bool {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        if p.test(pg::DIRTY) {
            return false;
        }
        p.set(pg::DIRTY);
        let (f, i, memcg) = (p.owner as usize, p.index as usize, p.memcg);
        self.files[f].dirty_tag[i / 64] |= 1 << (i % 64);
        self.nodes[nid].mod_state(NodeStat::NrFileDirty, 1);
        if memcg != ROOT_MEM_CGROUP {
            // The memcg's NR_FILE_DIRTY (__folio_mark_dirty → lruvec stat).
            self.memcgs[memcg as usize].nr_file_dirty += 1;
        }
        if self.files[f].wb_memcg.is_none() {
            // inode_attach_wb() (5.15 fs/fs-writeback.c): with cgroup
            // writeback the dirtied page's memcg's wb; without it (cgroup
            // v1: cgroup_subsys_on_dfl is false) the root's.
            let cgwb = self.cgroup_writeback();
            self.files[f].wb_memcg = Some(if cgwb { memcg } else { ROOT_MEM_CGROUP });
        }
        self.count(Ev::NrDirtied, 1);
        self.current_mut().nr_dirtied += 1;
        let now = self.exec.now();
        let file = &mut self.files[f];
        file.nr_dirty += 1;
        if file.dirtied_when.is_none() {
            file.dirtied_when = Some(now);
        }
        let dev = file.dev;
        if !file.on_dirty_list {
            file.on_dirty_list = true;
            self.bdis[dev].b_dirty.push_back(f as u32);
        }
        self.bdis[dev].dirtied += 1;
        true
    }

    /// Clears `PG_dirty` of a page-cache page for writeback (`folio_clear_dirty_for_io`).
    pub fn clear_page_dirty_for_io(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        debug_assert!(p.test(pg::DIRTY));
        p.clear(pg::DIRTY);
        let (f, i, memcg) = (p.owner as usize, p.index as usize, p.memcg);
        self.files[f].dirty_tag[i / 64] &= !(1 << (i % 64));
        self.nodes[nid].mod_state(NodeStat::NrFileDirty, -1);
        if memcg != ROOT_MEM_CGROUP {
            self.memcgs[memcg as usize].nr_file_dirty -= 1;
        }
        let file = &mut self.files[f];
        file.nr_dirty -= 1;
        if file.nr_dirty == 0 {
            file.dirtied_when = None;
        }
    }

    /// Inserts a new page for `index` of file `f` (`filemap_add_folio`) in
    /// place of whatever shadow entry is there, and adds it to the LRU.
    /// With `write` the page was allocated by a buffered write's
    /// `write_begin`, and a shadow entry it replaces is no refault:
    /// `grab_cache_page_write_begin` asks for `FGP_WRITE`, which adds
    /// `__GFP_WRITE` to the page's gfp mask, and `filemap_add_folio` (6.1;
    /// `add_to_page_cache_lru` in 5.10 and 5.15) calls `workingset_refault`
    /// only for a shadow found by an insertion without `__GFP_WRITE` —
    /// "evicting other data from the working set, only to cache data that
    /// will get overwritten with something else, is a waste of memory". So
    /// a rewritten page is neither counted in `workingset_refault_file`
    /// nor activated; it comes back inactive like any new page. Reads
    /// (`read()` misses, file faults) detect refaults.
    fn add_to_page_cache_lru(
        &mut self,
        f: u32,
        index: u32,
        pfn: Pfn,
        flags: PageFlags,
        write: bool,
    ) {
        let old = self.files[f as usize].cache.get(index as usize);
        {
            let p = self.frames.get_mut(pfn);
            p.flags = flags | pg::FILE;
            p.owner = f;
            p.index = index;
        }
        if !write && old != SLOT_EMPTY && old & SHADOW != 0 {
            let flags = self.workingset_refault(pfn, old & !SHADOW, true);
            self.frames.get_mut(pfn).set(flags);
        }
        self.files[f as usize].cache.set(index as usize, pfn);
        self.account_page(pfn, true, 1);
        self.lru_cache_add(pfn);
    }

    /// Puts newly allocated `pfn` in the page cache as page `index` of
    /// program image `f` with `flags` (a read-around page, locked for its
    /// read; or, at boot, an up-to-date page): a shadow entry there is a
    /// workingset refault ([`Kernel::add_to_page_cache_lru`]).
    pub(crate) fn insert_text_page(&mut self, f: u32, index: u32, pfn: Pfn, flags: PageFlags) {
        self.add_to_page_cache_lru(f, index, pfn, flags, false);
    }

    /// `__remove_mapping` for a clean, unmapped page-cache page: replaces it
    /// by a shadow entry.
    pub fn remove_file_page(&mut self, pfn: Pfn) {
        let shadow = self.workingset_eviction(pfn);
        let p = self.frames.get(pfn);
        let (f, i) = (p.owner as usize, p.index as usize);
        self.files[f].cache.set(i, SHADOW | shadow);
        self.account_page(pfn, true, -1);
    }

    /// Puts a newly allocated `pfn` in the page cache as page `index` of
    /// `f` after a miss. A hole of a sparse file is zero-filled on the spot;
    /// any other page is added locked and the device read to submit for it
    /// (device, position) is returned, for [`read_page`].
    pub(crate) fn page_cache_miss(&mut self, f: u32, index: u32, pfn: Pfn) -> Option<(usize, u64)> {
        if self.files[f as usize].sparse {
            let z = self.params.cost_zero_ns;
            self.charge_sys(z);
            self.add_to_page_cache_lru(f, index, pfn, pg::UPTODATE, false);
            return None;
        }
        self.add_to_page_cache_lru(f, index, pfn, pg::LOCKED, false);
        self.count(Ev::Pgpgin, 4);
        let c = self.params.cost_io_submit_ns;
        self.charge_sys(c);
        let file = &self.files[f as usize];
        Some((file.dev, file.pos + u64::from(index)))
    }

    /// The cached page at `index` of file `f`, if resident.
    pub fn find_get_page(&self, f: u32, index: u32) -> Option<Pfn> {
        super::swap::cached_page(self.files[f as usize].cache.get(index as usize))
    }
}

/// Result of a file operation.
#[derive(Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Done.
    Ok,
    /// The task was OOM-killed.
    Killed,
}

/// Buffered `pwrite()` of whole pages `[index, index+n)` of file `f`.
pub async fn file_write(w: &World, f: u32, index: u32, n: u32) -> FileOp {
    let end = index + n;
    let mut i = index;
    while i < end {
        // Pages that need neither a slow allocation, nor a dirty-page
        // check, nor a CPU payment in between are written in one go; the
        // checks after the last of them are made here, as for any page.
        let done = w.k().file_write_run(f, i, end);
        if done > i {
            i = done;
            crate::writeback::balance_dirty_pages_ratelimited(w, f).await;
            maybe_pay_cpu(w).await;
            continue;
        }
        // The run stops before a page only when it is not cached and its
        // allocation needs the slow path.
        let Some(pfn) = alloc_page(w, Gfp::HIGHUSER_MOVABLE_WRITE).await else {
            return FileOp::Killed;
        };
        {
            let mut k = w.k();
            // Another task may have cached the page while this one waited.
            let pfn = match k.find_get_page(f, i) {
                Some(p) => {
                    k.free_page(pfn);
                    p
                }
                None => {
                    k.add_written_page(f, i, pfn);
                    pfn
                }
            };
            k.write_page(pfn);
        }
        crate::writeback::balance_dirty_pages_ratelimited(w, f).await;
        maybe_pay_cpu(w).await;
        i += 1;
    }
    FileOp::Ok
}

impl Kernel {
    /// Copies a buffered write's page into cached page `pfn` and dirties
    /// it. No mark_page_accessed: since 4.7 ("mm: filemap: only do access
    /// activations on reads", grab_cache_page_write_begin without
    /// FGP_ACCESSED) a buffered write never activates a page, and a write
    /// over a shadow entry is no workingset refault either (see
    /// [`Kernel::add_to_page_cache_lru`]): only a read can bring a written
    /// page back active.
    ///
    /// Its CPU: the copy into the page cache and the filesystem's per-page
    /// write_begin/write_end (6.18 `generic_perform_write`:
    /// `ext4_da_write_begin`, `copy_folio_from_iter_atomic`,
    /// `ext4_da_write_end` → `block_commit_write` → `mark_buffer_dirty`),
    /// measured per page in docs/bench/cpu-costs.md, "Buffered writes".
    fn write_page(&mut self, pfn: Pfn) {
        let c = self.params.cost_write_copy_ns + self.params.cost_fs_write_ns;
        self.charge_sys(c);
        self.set_page_dirty(pfn);
    }

    /// [`Kernel::add_to_page_cache_lru`] for a page a buffered write
    /// allocated, with its CPU: allocation, charge, insert, LRU add and the
    /// filesystem's new-block work (`cost.pagecache_insert_page_ns`).
    fn add_written_page(&mut self, f: u32, index: u32, pfn: Pfn) {
        let c = self.params.cost_pagecache_insert_ns;
        self.charge_sys(c);
        self.add_to_page_cache_lru(f, index, pfn, pg::UPTODATE, true);
    }

    /// Pages `from..` of a buffered write to file `f` (at most to `end`),
    /// each exactly as one round of [`file_write`] with its allocation (if
    /// the page is not cached) served by `get_page_from_freelist` at the
    /// low watermark, without yielding. After each page it stops if
    /// `balance_dirty_pages_ratelimited` or `maybe_pay_cpu` would have work
    /// to do (the caller does it), and before a page whose allocation
    /// needs the slow path. Returns the index of the first page not
    /// written. Between pages that do not block no other task runs, so
    /// this is the same run as one page at a time.
    pub fn file_write_run(&mut self, f: u32, from: u32, end: u32) -> u32 {
        let mut i = from;
        while i < end {
            let pfn = match self.find_get_page(f, i) {
                Some(p) => p,
                None => {
                    let Some(pfn) = self.get_page_charged_fast() else {
                        break;
                    };
                    self.add_written_page(f, i, pfn);
                    pfn
                }
            };
            self.write_page(pfn);
            i += 1;
            if self.bdp_due(self.bdp_wb(f).0) || self.cpu_debt() >= DEBT_FLUSH_NS {
                break;
            }
        }
        i
    }
}

/// `folio_wait_locked`: waits until a page still being read by someone
/// else is unlocked (its read completes and wakes the node's page queue).
pub(crate) async fn wait_on_page_locked(w: &World, pfn: Pfn) {
    loop {
        let nid = {
            let mut k = w.k();
            if !k.frames.get(pfn).test(pg::LOCKED) {
                return;
            }
            let nid = k.frames.nid(pfn);
            let k = &mut *k;
            k.exec.prepare_to_wait(&mut k.nodes[nid].page_wait);
            nid
        };
        w.block(None).await;
        let mut k = w.k();
        let k = &mut *k;
        k.exec.finish_wait(&mut k.nodes[nid].page_wait);
    }
}

/// Reads `pfn` from the device if [`Kernel::page_cache_miss`] asked for it,
/// waiting for the I/O (`filemap_read_folio`).
async fn read_page(w: &World, pfn: Pfn, io: Option<(usize, u64)>) {
    if let Some((dev, pos)) = io {
        crate::sched::pay_cpu(w).await;
        submit_bio(w, dev, ReqKind::FileRead, vec![pfn], pos, true).await;
    }
}

/// Buffered `pread()` of pages `[index, index+n)` of file `f`
/// (`filemap_read` → `filemap_get_pages`, 6.1): a page not cached starts a
/// synchronous readahead of the window [`super::readahead`] picks (one
/// page alone with `readahead.kb=0`, as before 2026-11-28), a cached page
/// marked `PG_readahead` an asynchronous one; then the read waits for the
/// page's I/O if it is still in flight, marks it accessed and copies it.
pub async fn file_read(w: &World, f: u32, index: u32, n: u32) -> FileOp {
    let end = index + n;
    for i in index..end {
        let pfn = loop {
            let hit = w.k().find_get_page(f, i);
            match hit {
                Some(p) => {
                    let marked = {
                        let mut k = w.k();
                        let page = k.frames.get_mut(p);
                        let m = page.test(pg::RECLAIM) && !page.test(pg::WRITEBACK);
                        if m {
                            page.clear(pg::RECLAIM);
                        }
                        m
                    };
                    // page_cache_async_ra(): the next window, not waited for.
                    if marked && !super::readahead::readahead(w, f, i, end - i, true).await {
                        return FileOp::Killed;
                    }
                    wait_on_page_locked(w, p).await;
                    break p;
                }
                None => {
                    // page_cache_sync_readahead(), then the page again.
                    if !super::readahead::readahead(w, f, i, end - i, false).await {
                        return FileOp::Killed;
                    }
                    if w.k().find_get_page(f, i).is_some() {
                        continue;
                    }
                    // filemap_create_folio(): this page alone.
                    let Some(pfn) = alloc_page(w, Gfp::HIGHUSER_MOVABLE).await else {
                        return FileOp::Killed;
                    };
                    let io = {
                        let mut k = w.k();
                        if k.find_get_page(f, i).is_some() {
                            k.free_page(pfn);
                            continue;
                        }
                        k.page_cache_miss(f, i, pfn)
                    };
                    read_page(w, pfn, io).await;
                    break pfn;
                }
            }
        };
        {
            let mut k = w.k();
            if k.frames.get(pfn).owner == f && k.frames.get(pfn).test(pg::FILE) {
                k.mark_page_accessed(pfn);
            }
            let c = k.params.cost_copy_ns;
            k.charge_sys(c);
        }
        maybe_pay_cpu(w).await;
    }
    w.k().files[f as usize].ra.prev_index = Some(end - 1);
    FileOp::Ok
}

/// `n` reads of one byte at random pages of the shared mapping of file `f`
/// (`MADV_RANDOM`, the 2010 mapped-file-stream reader). Runs of hits on
/// mapped pages are handled in one step (young bit, CPU charge); each miss
/// faults as in [`touch_file_mapped`]. `rng` is a [`crate::xorshift`] state.
pub async fn touch_file_mapped_random(w: &World, f: u32, n: u64, rng: &mut u64) -> FileOp {
    let mut left = n;
    while left > 0 {
        let fault_at = {
            let mut k = w.k();
            let k = &mut *k;
            let cost = k.params.cost_touch_random_ns;
            let file = &mut k.files[f as usize];
            let size = u64::from(file.size.max(1));
            let mut hits = 0u64;
            let mut miss = None;
            while left > 0 {
                *rng = crate::xorshift(*rng);
                let j = (*rng % size) as u32;
                left -= 1;
                let (wi, b) = ((j / 64) as usize, j % 64);
                if file.mapped[wi] & (1 << b) == 0 {
                    miss = Some(j);
                    break;
                }
                file.young[wi] |= 1 << b;
                hits += 1;
                // Let the CPU debt be paid now and then, so that long runs
                // of hits still share the CPU.
                if hits >= 4096 {
                    break;
                }
            }
            k.charge_user(hits * cost);
            miss
        };
        maybe_pay_cpu(w).await;
        if let Some(j) = fault_at {
            if filemap_fault(w, f, j).await == FileOp::Killed {
                return FileOp::Killed;
            }
            // The restarted load, at the random reader's cost, and the
            // fault's user time (mm/anon.rs, `charge_faulted_touch`).
            let mut k = w.k();
            let c = k.params.cost_touch_random_ns + k.params.cost_fault_user_ns;
            k.charge_user(c);
        }
    }
    FileOp::Ok
}

/// A read of one byte in each page `[start, end)` of the shared mapping of
/// file `f` (mapped with `MADV_RANDOM`, so faults read one page, no
/// readahead). Mapped resident pages only set young bits; others fault
/// (`filemap_fault`): minor if cached, major otherwise (a device read, or a
/// zero fill for a sparse file's hole).
pub async fn touch_file_mapped(w: &World, f: u32, start: u32, end: u32) -> FileOp {
    let mut i = start;
    while i < end {
        let fault_at = {
            let mut k = w.k();
            let k = &mut *k;
            let cost = k.params.cost_touch_ns;
            let file = &mut k.files[f as usize];
            let mut j = i;
            while j < end {
                let (wi, b) = ((j / 64) as usize, j % 64);
                if file.mapped[wi] & (1 << b) == 0 {
                    break;
                }
                file.young[wi] |= 1 << b;
                j += 1;
            }
            k.charge_user(u64::from(j - i) * cost);
            (j < end).then_some(j)
        };
        maybe_pay_cpu(w).await;
        let Some(j) = fault_at else { break };
        if filemap_fault(w, f, j).await == FileOp::Killed {
            return FileOp::Killed;
        }
        // The restarted load (mm/anon.rs, `charge_faulted_touch`).
        crate::mm::anon::charge_faulted_touch(w, 1);
        i = j + 1;
    }
    FileOp::Ok
}

/// Reads the new pages `pfns` of file `f` (sorted here by index): one
/// request per run of consecutive pages, as `read_pages` submits a
/// readahead batch under one plug; the others first without waiting, then
/// the run holding page `index`, waiting for it (the fault's
/// `folio_lock`). With no run holding it, none is waited for.
pub(crate) async fn read_pages_of(w: &World, f: u32, mut pfns: Vec<Pfn>, index: u32) {
    let (dev, base, idx) = {
        let k = w.k();
        pfns.sort_unstable_by_key(|&p| k.frames.get(p).index);
        let idx: Vec<u32> = pfns.iter().map(|&p| k.frames.get(p).index).collect();
        let file = &k.files[f as usize];
        (file.dev, file.pos, idx)
    };
    let mut runs: Vec<(u32, Vec<Pfn>)> = Vec::new();
    for (n, &p) in pfns.iter().enumerate() {
        match runs.last_mut() {
            Some((_, run)) if idx[n] == idx[n - 1] + 1 => run.push(p),
            _ => runs.push((idx[n], vec![p])),
        }
    }
    let own = runs
        .iter()
        .position(|(first, run)| (*first..*first + run.len() as u32).contains(&index));
    let own = own.map(|i| runs.remove(i));
    for (first, run) in runs {
        submit_bio(
            w,
            dev,
            ReqKind::FileRead,
            run,
            base + u64::from(first),
            false,
        )
        .await;
    }
    if let Some((first, run)) = own {
        submit_bio(
            w,
            dev,
            ReqKind::FileRead,
            run,
            base + u64::from(first),
            true,
        )
        .await;
    }
}

/// The start of a file fault on page `index` of file `f`: the fault
/// counted (`PGFAULT`) and its CPU charged, then the page cache looked up
/// (`filemap_get_folio`).
pub(crate) fn file_fault_lookup(k: &mut Kernel, f: u32, index: u32) -> Option<Pfn> {
    k.count_fault(Ev::Pgfault);
    let c = k.params.cost_fault_ns;
    k.charge_sys(c);
    k.find_get_page(f, index)
}

/// `filemap_fault` for page `index` of file `f`, then maps it young.
async fn filemap_fault(w: &World, f: u32, index: u32) -> FileOp {
    let cached = file_fault_lookup(&mut w.k(), f, index);
    let pfn = match cached {
        Some(p) => {
            wait_on_page_locked(w, p).await;
            p
        }
        None => {
            let Some(pfn) = alloc_page(w, Gfp::HIGHUSER_MOVABLE).await else {
                return FileOp::Killed;
            };
            let io = {
                let mut k = w.k();
                if let Some(p) = k.find_get_page(f, index) {
                    k.free_page(pfn);
                    return map_file_page(&mut k, f, index, p);
                }
                k.count_fault(Ev::Pgmajfault);
                k.page_cache_miss(f, index, pfn)
            };
            read_page(w, pfn, io).await;
            pfn
        }
    };
    let mut k = w.k();
    map_file_page(&mut k, f, index, pfn)
}

/// Sets the pte of page `index` of file `f` if `pfn` is still that page.
pub(crate) fn map_file_page(k: &mut Kernel, f: u32, index: u32, pfn: Pfn) -> FileOp {
    if k.find_get_page(f, index) == Some(pfn) {
        let file = &mut k.files[f as usize];
        let (wi, b) = ((index / 64) as usize, index % 64);
        file.mapped[wi] |= 1 << b;
        file.young[wi] |= 1 << b;
    }
    FileOp::Ok
}
