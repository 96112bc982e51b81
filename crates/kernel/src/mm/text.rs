//! Program text: the executable file mappings every process has (its
//! binary and shared libraries), and the pages of them a running program
//! touches.
//!
//! A program image is a file on the machine's text device
//! ([`crate::machine::Machine::text_device`]) mapped `VM_EXEC` and shared
//! by every process that runs it (one page table for all, as for any
//! shared file mapping here: `mm/filemap.rs`). A task may have a *hot
//! set*: the pages of its images it references while it runs user code
//! (what the workload says; measured for the real workers). At a *safe
//! point* — [`touch_text`], called by the worker loops and by
//! [`crate::mm::anon::touch_anon`] between its batches, never from inside
//! `pay_cpu` — a task that has run user code since its last touch
//! references its hot set: mapped pages get their accessed bit set, an
//! unmapped one faults ([`text_fault`]: 6.1/5.10 `filemap_fault`), minor if
//! it is still cached, major (a device read with mmap read-around) if not.
//!
//! Reclaim treats these pages as the kernel treats `VM_EXEC` file pages
//! (`vmscan/lists.rs`): activated on their first referenced pass over the
//! inactive list, kept on the active list while referenced.
//!
//! How often: the first `fast` hot pages (an innermost loop's) at every
//! safe point, the others at the first safe point `period_ns` or more of
//! simulated time after their last reference (the smallest of the measured
//! windows, 10 ms, 100 ms and 1 s, in which a worker referenced its whole
//! hot set in every trial). A task that does not run (blocked in reclaim,
//! waiting for I/O) references nothing, so its text ages on the LRU lists.
//! Simplifications: the period is wall time of the measuring host, not
//! scaled by a machine's CPU speed; no fault-around (`filemap_map_pages`: each page is mapped by its
//! own fault), no async readahead (`PG_readahead`), the read-around's
//! pages are allocated like the faulting page (the kernel's readahead
//! allocations add `__GFP_NORETRY`). `mmap_miss` is kept per task and
//! image (the kernel keeps it in each process's `struct file`).

use super::alloc::{alloc_page, alloc_page_charged, Gfp};
use super::filemap::{map_file_page, read_pages_of, wait_on_page_locked, FileOp};
use super::page::{pg, Pfn};
use crate::engine::World;
use crate::sched::pay_cpu;
use crate::vmstat::Ev;
use crate::Kernel;

/// The read-around window of a mapped file's major fault, pages: the
/// default `bdi->ra_pages` (`VM_READAHEAD_PAGES`, 128 KiB: `read_ahead_kb`
/// of a virtio or SCSI disk that sets no optimal I/O size).
pub const RA_PAGES: u32 = 32;

/// `MMAP_LOTSAMISS` (mm/filemap.c, 5.10 and 6.1): a file whose mapping
/// missed more than this many times net of hits gets no more read-around.
pub const MMAP_LOTSAMISS: u32 = 100;

/// A task's program text: its hot pages and per-image fault state.
#[derive(Clone, Debug, Default)]
pub struct TaskText {
    /// Hot pages, `(file, index)`.
    pub pages: Vec<(u32, u32)>,
    /// The first `fast` of them are referenced at every safe point (the
    /// innermost loop's).
    pub fast: usize,
    /// The others are referenced at the first safe point at least this
    /// long (ns, simulated time) after their last reference.
    pub period_ns: u64,
    /// When the others were last referenced (`None`: not yet).
    pub touched_at: Option<u64>,
    /// The task's `user_ns` at its last safe point.
    pub touched_user_ns: u64,
    /// `file->f_ra.mmap_miss` of each image it maps, `(file, misses)`.
    pub mmap_miss: Vec<(u32, u32)>,
}

impl TaskText {
    fn mmap_miss_mut(&mut self, f: u32) -> &mut u32 {
        let i = match self.mmap_miss.iter().position(|e| e.0 == f) {
            Some(i) => i,
            None => {
                self.mmap_miss.push((f, 0));
                self.mmap_miss.len() - 1
            }
        };
        &mut self.mmap_miss[i].1
    }
}

/// Page `j` of `n` hot pages of an image of `size` pages: spread evenly,
/// `⌊(j + ½)·size / n⌋` (where in the image the hot pages lie was not
/// measured; see docs/simulator.md, "Program text").
pub fn spread_index(j: u32, n: u32, size: u32) -> u32 {
    let n = u64::from(n.max(1));
    let i = (2 * u64::from(j) + 1) * u64::from(size) / (2 * n);
    (i as u32).min(size.saturating_sub(1))
}

/// The read-around window of a major fault on page `index` of a file of
/// `size` pages (6.1 `do_sync_mmap_readahead`: `ra_pages` pages starting
/// `ra_pages / 2` before the fault, clipped at the file's start and end),
/// or the page alone once `mmap_miss` exceeds [`MMAP_LOTSAMISS`].
pub fn read_around(index: u32, size: u32, mmap_miss: u32) -> std::ops::Range<u32> {
    if mmap_miss > MMAP_LOTSAMISS {
        return index..index + 1;
    }
    let start = index.saturating_sub(RA_PAGES / 2);
    let end = (start + RA_PAGES).min(size);
    start..end.max(index + 1)
}

impl Kernel {
    /// The file of program image `name` of `pages` pages on the text
    /// device, created (mapped `VM_EXEC`) at its first mention. With
    /// `cached`, a new image starts wholly in the page cache, mapped and
    /// young, on the inactive file list, charged to the root cgroup: as
    /// the processes that were started left it on a booted system
    /// (their faults put each page on the inactive list, young). The pages
    /// come off the free lists without watermarks or reclaim (boot).
    pub fn program_image(&mut self, name: &str, pages: u32, cached: bool) -> u32 {
        if let Some(&(_, f)) = self.images.iter().find(|(n, _)| n == name) {
            return f;
        }
        let dev = self.machine.text_dev();
        let f = self.create_file(dev, pages.max(1));
        self.mmap_file(f);
        let file = &mut self.files[f as usize];
        file.rand_read = false;
        file.exec = true;
        self.images.push((name.to_string(), f));
        if cached {
            for i in 0..pages {
                let Some(pfn) = self.get_page_from_freelist(None) else {
                    break;
                };
                let p = self.frames.get_mut(pfn);
                p.memcg = super::memcontrol::ROOT_MEM_CGROUP;
                p.flags = pg::UPTODATE | pg::FILE;
                p.owner = f;
                p.index = i;
                self.files[f as usize].cache.set(i as usize, pfn);
                self.account_page(pfn, true, 1);
                self.lru_add(pfn);
                map_file_page(self, f, i, pfn);
            }
        }
        f
    }

    /// Gives task `t` its hot set `pages` (`(file, index)`): the first
    /// `fast` referenced at every safe point, the rest every `period_ns`.
    pub fn set_task_text(
        &mut self,
        t: crate::TaskId,
        pages: Vec<(u32, u32)>,
        fast: usize,
        period_ns: u64,
    ) {
        let user = self.tasks[t as usize].user_ns;
        self.tasks[t as usize].text = Some(Box::new(TaskText {
            pages,
            fast,
            period_ns,
            touched_at: None,
            touched_user_ns: user,
            mmap_miss: Vec::new(),
        }));
    }

    /// References the current task's mapped hot pages from the `from`th
    /// up to `to`; returns the first one that is not mapped, if any.
    fn touch_mapped_text(&mut self, from: usize, to: usize) -> Option<(usize, u32, u32)> {
        let t = self.exec.current() as usize;
        let text = self.tasks[t].text.as_ref()?;
        for (j, &(f, i)) in text.pages.iter().enumerate().take(to).skip(from) {
            let file = &mut self.files[f as usize];
            let (w, b) = ((i / 64) as usize, i % 64);
            if file.mapped[w] & (1 << b) == 0 {
                return Some((j, f, i));
            }
            file.young[w] |= 1 << b;
        }
        None
    }
}

/// A safe point of the current task: if it ran user code since its last
/// one, it references its hot text (see the module comment). Each page
/// that is not mapped faults once ([`text_fault`]). Returns
/// [`FileOp::Killed`] if the task was OOM-killed in a fault.
pub async fn touch_text(w: &World) -> FileOp {
    let to = {
        let mut k = w.k();
        let t = k.exec.current() as usize;
        let (user, now) = (k.tasks[t].user_ns, k.exec.now());
        match k.tasks[t].text.as_mut() {
            Some(text) if text.touched_user_ns != user => {
                text.touched_user_ns = user;
                if text
                    .touched_at
                    .is_none_or(|at| now.saturating_sub(at) >= text.period_ns)
                {
                    text.touched_at = Some(now);
                    text.pages.len()
                } else {
                    text.fast
                }
            }
            _ => return FileOp::Ok,
        }
    };
    let mut from = 0;
    loop {
        let miss = w.k().touch_mapped_text(from, to);
        let Some((j, f, i)) = miss else {
            return FileOp::Ok;
        };
        if text_fault(w, f, i).await == FileOp::Killed {
            return FileOp::Killed;
        }
        // The restarted instruction fetch and the exception's user time
        // (mm/anon.rs, `charge_faulted_touch`).
        crate::mm::anon::charge_faulted_touch(w, 1);
        from = j + 1;
    }
}

/// `filemap_fault` (6.1; 5.10 alike) for page `index` of program image `f`
/// from an instruction fetch, then maps it young. A cached page is a minor
/// fault (`do_async_mmap_readahead` counts it a hit: `mmap_miss` down by
/// one); a missing one a major fault that first reads the window around
/// it (`do_sync_mmap_readahead`'s read-around, [`read_around`]): every
/// missing page of the window is allocated and added to the page cache
/// (a shadow entry found there is a workingset refault,
/// `filemap_add_folio` → `workingset_refault`), the contiguous runs are
/// read, and the task waits for the run holding its page.
pub async fn text_fault(w: &World, f: u32, index: u32) -> FileOp {
    let cached = super::filemap::file_fault_lookup(&mut w.k(), f, index);
    if let Some(p) = cached {
        {
            let mut k = w.k();
            let t = k.exec.current() as usize;
            if let Some(text) = k.tasks[t].text.as_mut() {
                let m = text.mmap_miss_mut(f);
                *m = m.saturating_sub(1);
            }
        }
        wait_on_page_locked(w, p).await;
        let mut k = w.k();
        return map_file_page(&mut k, f, index, p);
    }
    let window = {
        let mut k = w.k();
        k.count_fault(Ev::Pgmajfault);
        let size = k.files[f as usize].size;
        let t = k.exec.current() as usize;
        let miss = match k.tasks[t].text.as_mut() {
            Some(text) => {
                let m = text.mmap_miss_mut(f);
                // "Avoid banging the cache line if not needed".
                if *m < MMAP_LOTSAMISS * 10 {
                    *m += 1;
                }
                *m
            }
            None => 0,
        };
        read_around(index, size, miss)
    };
    let mut read: Vec<Pfn> = Vec::new();
    let mut killed = false;
    for j in window {
        if w.k().find_get_page(f, j).is_some() {
            continue;
        }
        // The first allocation pays any memory.high penalty, as a fault's
        // does; the window's others are within the same fault.
        let got = if read.is_empty() {
            alloc_page(w, Gfp::HIGHUSER_MOVABLE).await
        } else {
            alloc_page_charged(w, Gfp::HIGHUSER_MOVABLE).await
        };
        let Some(pfn) = got else {
            killed = true;
            break;
        };
        let mut k = w.k();
        if k.find_get_page(f, j).is_some() {
            k.free_page(pfn);
            continue;
        }
        k.insert_text_page(f, j, pfn, pg::LOCKED);
        k.count(Ev::Pgpgin, 4);
        let c = k.params.cost_io_submit_ns;
        k.charge_sys(c);
        read.push(pfn);
    }
    if !read.is_empty() {
        pay_cpu(w).await;
        read_pages_of(w, f, read, index).await;
    }
    if killed {
        return FileOp::Killed;
    }
    let Some(p) = w.k().find_get_page(f, index) else {
        // Reclaimed again before it could be mapped: the next safe point
        // faults it again.
        return FileOp::Ok;
    };
    wait_on_page_locked(w, p).await;
    let mut k = w.k();
    map_file_page(&mut k, f, index, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_pages_spread_over_the_image() {
        assert_eq!(spread_index(0, 1, 100), 50);
        let v: Vec<u32> = (0..4).map(|j| spread_index(j, 4, 100)).collect();
        assert_eq!(v, [12, 37, 62, 87]);
        // More hot pages than pages: clipped to the image, every index valid.
        assert!((0..10).all(|j| spread_index(j, 10, 3) < 3));
        assert_eq!(spread_index(0, 0, 0), 0);
    }

    #[test]
    fn read_around_is_centred_and_clipped() {
        assert_eq!(read_around(100, 400, 0), 84..116);
        assert_eq!(read_around(3, 400, 0), 0..32);
        assert_eq!(read_around(395, 400, 5), 379..400);
        assert_eq!(read_around(0, 1, 0), 0..1);
        // Many misses net of hits: the faulting page alone.
        assert_eq!(read_around(100, 400, MMAP_LOTSAMISS), 84..116);
        assert_eq!(read_around(100, 400, MMAP_LOTSAMISS + 1), 100..101);
    }

    #[test]
    fn mmap_miss_is_per_image() {
        let mut t = TaskText::default();
        *t.mmap_miss_mut(3) += 2;
        *t.mmap_miss_mut(5) += 1;
        *t.mmap_miss_mut(3) += 1;
        assert_eq!(t.mmap_miss, vec![(3, 3), (5, 1)]);
    }
}
