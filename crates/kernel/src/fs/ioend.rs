//! The data filesystem as reclaim sees it: whether `pageout()` may write a
//! dirty file page (`->writepage`), and when a write into a block never
//! written before ends.
//!
//! A device's filesystem is its machine entry's `fs` (`xfs`, `ext4`, or
//! unset: a filesystem that writes any dirty page and ends writes at the
//! bio's completion). A file's never-written blocks are its
//! [`crate::mm::filemap::File::unwritten`] pages (fio `fallocate`s its
//! files).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use crate::engine::{WaitQueue, World};
use crate::machine::DataFs;
use crate::mm::page::Pfn;
use crate::sched::pay_cpu;
use crate::Kernel;

/// What the data filesystem's `->writepage` does with a dirty page that
/// kswapd's `pageout()` hands it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsWritepage {
    /// Writes it (starts writeback).
    Write,
    /// There is no `->writepage`: `pageout()` returns `PAGE_ACTIVATE`.
    None,
    /// Redirties it without writing (`redirty_page_for_writepage`).
    Redirty,
}

impl Kernel {
    /// The data filesystem of file page `pfn` and the kernel decide
    /// `->writepage`:
    /// - XFS from 5.15 has none (`xfs_address_space_operations` lists only
    ///   `->writepages`; 5.8–5.10 had `xfs_vm_writepage` → `iomap_writepage`,
    ///   which kswapd may call: only direct reclaim is refused there).
    /// - ext4's `ext4_writepage` (5.15 and 6.1 fs/ext4/inode.c) will not
    ///   allocate blocks or convert unwritten extents: a page with a
    ///   delayed or unwritten buffer is redirtied and, called from reclaim
    ///   (`PF_MEMALLOC`) or with 4 KiB blocks, left unwritten. Simplified:
    ///   a page of a written block is written; the model has no delayed
    ///   allocation (files not fallocated count as laid out).
    pub fn fs_writepage(&self, pfn: Pfn) -> FsWritepage {
        let p = self.frames.get(pfn);
        let f = &self.files[p.owner as usize];
        match self.machine.devices[f.dev].fs {
            Some(DataFs::Xfs) if !self.profile.xfs_writepage => FsWritepage::None,
            Some(DataFs::Ext4) if f.block_unwritten(p.index) => FsWritepage::Redirty,
            _ => FsWritepage::Write,
        }
    }
}

/// A completed write waiting for its conversion: the pages of one file
/// one request carried (an ioend / io_end; simplified: a request is one).
#[derive(Debug)]
pub struct Ioend {
    /// Page index in the file of the first page.
    pub start: u32,
    /// The pages, in file order.
    pub pages: Vec<Pfn>,
}

/// One device's filesystem completion work: the inodes whose conversion
/// work is queued and their completed ioends.
#[derive(Debug, Default)]
pub struct ConversionQueue {
    /// Inodes whose work is queued, in `queue_work` order.
    pub works: VecDeque<u32>,
    /// Each inode's ioends waiting for its work (XFS `i_ioend_list`, ext4
    /// `i_rsv_conversion_list`), by file id.
    pub pending: BTreeMap<u32, Vec<Ioend>>,
    /// Inodes whose work a worker is running: a work is not reentrant
    /// (queued again while it runs, it runs after, on the same worker:
    /// `find_worker_executing_work`).
    pub running: BTreeSet<u32>,
    /// Idle conversion workers.
    pub idle: WaitQueue,
    /// Pages under writeback waiting for a conversion now.
    pub pages_waiting: u64,
    /// Ioends queued for conversion so far.
    pub ioends: u64,
    /// Conversions (transactions) run so far.
    pub conversions: u64,
    /// Pages whose writeback ended through a conversion so far.
    pub pages_converted: u64,
    /// The most pages ever waiting at once.
    pub max_pages_waiting: u64,
}

impl Kernel {
    /// The write of `pages` to device `d` completed. On a filesystem that
    /// converts unwritten extents at completion, a write that touched one
    /// is queued for its inode's conversion work and its pages stay under
    /// writeback: XFS `xfs_prepare_ioend` routes unwritten ioends to
    /// `xfs_end_bio`, which adds the ioend to the inode's list and queues
    /// the inode's work on `xfs-conv` when the list was empty; ext4
    /// `ext4_end_bio` → `ext4_put_io_end_defer` → `ext4_add_complete_io`
    /// does the same on `ext4-rsv-conversion` (5.15 fs/xfs/xfs_aops.c,
    /// fs/ext4/page-io.c). Returns false (nothing taken) otherwise; the
    /// caller ends the pages' writeback.
    pub fn fs_end_bio(&mut self, d: usize, pages: &[Pfn]) -> bool {
        if self.machine.devices[d].fs.is_none() {
            return false;
        }
        let unwritten = pages.iter().any(|&pfn| {
            let p = self.frames.get(pfn);
            p.test(crate::mm::page::pg::FILE)
                && p.owner != crate::mm::anon::ORPHAN
                && self.files[p.owner as usize].block_unwritten(p.index)
        });
        if !unwritten {
            return false;
        }
        // A request holds one file's pages (the flusher writes an inode at
        // a time; reclaim merges adjacent pages, and files are apart).
        let p = self.frames.get(pages[0]);
        let (file, start) = (p.owner, p.index);
        let q = &mut self.conversions[d];
        let list = q.pending.entry(file).or_default();
        if list.is_empty() {
            q.works.push_back(file);
            self.exec.wake_one(&mut q.idle);
        }
        list.push(Ioend {
            start,
            pages: pages.to_vec(),
        });
        q.ioends += 1;
        q.pages_waiting += pages.len() as u64;
        q.max_pages_waiting = q.max_pages_waiting.max(q.pages_waiting);
        true
    }

    /// The end of one conversion: the blocks are written, the pages end
    /// writeback (`iomap_finish_ioends`, `ext4_release_io_end` →
    /// `ext4_finish_bio` → `end_page_writeback`).
    fn fs_ioend_done(&mut self, d: usize, pages: &[Pfn]) {
        for &pfn in pages {
            let p = self.frames.get(pfn);
            if p.test(crate::mm::page::pg::FILE) && p.owner != crate::mm::anon::ORPHAN {
                let (f, i) = (p.owner as usize, p.index);
                self.files[f].mark_written(i);
            }
            self.folio_end_writeback(pfn);
        }
        let q = &mut self.conversions[d];
        q.pages_waiting -= pages.len() as u64;
        q.pages_converted += pages.len() as u64;
        q.conversions += 1;
    }
}

/// Workers that convert on device `d`'s filesystem: one per CPU for XFS
/// (`xfs-conv` is a bound, concurrency-managed workqueue: one running work
/// per CPU), one for ext4 (`ext4-rsv-conversion` has `max_active` 1). None
/// for a device without `fs`.
pub fn conversion_workers(fs: Option<DataFs>, cpus: u32) -> u32 {
    match fs {
        None => 0,
        Some(DataFs::Xfs) => cpus,
        Some(DataFs::Ext4) => 1,
    }
}

/// A conversion worker of device `d`: takes an inode's work, takes all its
/// ioends (`list_replace_init`), and converts them one transaction at a
/// time, paying `cost.{ext4,xfs}_convert_ns` (and `_page_ns` per page) of
/// CPU for each, measured on 6.18 (docs/bench/cpu-costs.md), before their
/// pages end writeback. XFS sorts the inode's ioends and merges contiguous
/// ones first (`xfs_end_io`: `iomap_sort_ioends`, `iomap_ioend_try_merge`),
/// one `xfs_iomap_write_unwritten` transaction per merged range; ext4
/// converts io_end by io_end (`ext4_do_flush_completed_IO`).
/// Simplified: the transaction's log reservation, memory allocations and
/// the inode lock are not modelled, only its CPU; a new ioend of an inode
/// whose work runs queues the work again, as `queue_work` of a running
/// work does.
pub async fn conversion_worker(w: Rc<World>, d: usize) {
    loop {
        let file = {
            let mut k = w.k();
            let k = &mut *k;
            let q = &mut k.conversions[d];
            match q.works.iter().position(|f| !q.running.contains(f)) {
                Some(i) => {
                    let f = q.works.remove(i).expect("in range");
                    q.running.insert(f);
                    Some(f)
                }
                None => {
                    k.exec.prepare_to_wait(&mut k.conversions[d].idle);
                    None
                }
            }
        };
        let Some(file) = file else {
            w.block(None).await;
            let mut k = w.k();
            let k = &mut *k;
            k.exec.finish_wait(&mut k.conversions[d].idle);
            continue;
        };
        let (mut list, xfs, cost, per_page) = {
            let mut k = w.k();
            let list = k.conversions[d].pending.remove(&file).unwrap_or_default();
            let xfs = k.machine.devices[d].fs == Some(DataFs::Xfs);
            let p = &k.params;
            let (cost, per_page) = if xfs {
                (p.cost_xfs_convert_ns, p.cost_xfs_convert_page_ns)
            } else {
                (p.cost_ext4_convert_ns, p.cost_ext4_convert_page_ns)
            };
            (list, xfs, cost, per_page)
        };
        if xfs {
            list.sort_by_key(|e| e.start);
            let mut merged: Vec<Ioend> = Vec::with_capacity(list.len());
            for e in list {
                match merged.last_mut() {
                    Some(m) if m.start + m.pages.len() as u32 == e.start => {
                        m.pages.extend_from_slice(&e.pages)
                    }
                    _ => merged.push(e),
                }
            }
            list = merged;
        }
        for e in list {
            w.k().charge_sys(cost + per_page * e.pages.len() as u64);
            pay_cpu(&w).await;
            w.k().fs_ioend_done(d, &e.pages);
        }
        w.k().conversions[d].running.remove(&file);
    }
}
