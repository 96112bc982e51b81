//! Readahead of buffered reads: a sequential reader's cache misses read a
//! window of pages in one request, and a marked page in that window starts
//! the next window before the reader needs it, so a `cat` keeps the disk
//! busy rather than paying a request's latency per page.
//!
//! Read in 6.1 mm/readahead.c (`ondemand_readahead`, `get_init_ra_size`,
//! `get_next_ra_size`, `page_cache_ra_unbounded`) and mm/filemap.c
//! (`filemap_get_pages`: `page_cache_sync_readahead` on a miss,
//! `filemap_readahead` on a folio with `PG_readahead`). `PG_readahead` is
//! `PG_reclaim` on a page not under writeback, in the kernel as here
//! ([`pg::RECLAIM`]; swap readahead marks its pages the same way).
//!
//! Simplified: the state (`struct file_ra_state`) is per file, not per
//! open file (the simulated readers open each file once); no
//! `try_context_readahead` (a miss that is neither sequential nor at a
//! marker reads just what was asked, as a standalone random read does when
//! the page cache holds no trace of a stream); no `bdi->io_pages` (a read
//! larger than the window starts a window of its own size at most); the
//! pages are allocated as the reader's own (`readahead_gfp_mask` adds
//! `__GFP_NORETRY`, which the allocator here does not distinguish); order-0
//! pages only (6.1's `page_cache_ra_order` makes larger folios only for
//! filesystems that support them, which ext4 did from 6.16).

use crate::block::{submit_bio, ReqKind};
use crate::engine::World;
use crate::mm::alloc::{alloc_page, Gfp};
use crate::mm::page::{pg, Pfn};
use crate::Kernel;

/// `struct file_ra_state` (6.1 include/linux/fs.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaState {
    /// `start`: where the current window begins.
    pub start: u32,
    /// `size`: pages in the current window.
    pub size: u32,
    /// `async_size`: the window's last pages, whose first is marked to
    /// start the next window.
    pub async_size: u32,
    /// `prev_pos >> PAGE_SHIFT`: the page the last read ended in (None:
    /// `prev_pos = -1`, nothing read yet).
    pub prev_index: Option<u32>,
}

/// A window to read: `nr` pages from `start`, the page `nr - lookahead`
/// into it marked `PG_readahead` (`ractl` plus `page_cache_ra_unbounded`'s
/// arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaWindow {
    /// First page.
    pub start: u32,
    /// Pages.
    pub nr: u32,
    /// `lookahead_size`.
    pub lookahead: u32,
}

/// `get_init_ra_size` (6.1): the first window of a stream.
pub fn init_ra_size(size: u32, max: u32) -> u32 {
    let new = size.max(1).next_power_of_two();
    if new <= max / 32 {
        new * 4
    } else if new <= max / 4 {
        new * 2
    } else {
        max
    }
}

/// `get_next_ra_size` (6.1): the window after one of `cur` pages.
pub fn next_ra_size(cur: u32, max: u32) -> u32 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// `ondemand_readahead` (6.1), on state `ra`, for a read of `req` pages at
/// `index`, `marker` if it found a page marked `PG_readahead` there
/// (`page_cache_async_ra`) rather than a miss (`page_cache_sync_ra`);
/// `next_miss` is `page_cache_next_miss(index + 1, max)`: the first page
/// after `index` not cached, if within `max`. None: read nothing.
pub fn ondemand(
    ra: &mut RaState,
    index: u32,
    req: u32,
    max: u32,
    marker: bool,
    next_miss: Option<u32>,
) -> Option<RaWindow> {
    let req = req.max(1);
    let initial = |ra: &mut RaState| {
        ra.start = index;
        ra.size = init_ra_size(req, max);
        ra.async_size = if ra.size > req {
            ra.size - req
        } else {
            ra.size
        };
    };
    if index == 0 {
        initial(ra);
    } else if index == ra.start + ra.size - ra.async_size || index == ra.start + ra.size {
        // The expected callback: a sequential stream, ramp up and push on.
        ra.start += ra.size;
        ra.size = ra.size.max(next_ra_size(ra.size, max));
        ra.async_size = ra.size;
    } else if marker {
        // A marked page without valid state (interleaved reads): the
        // window starts at the next page not cached.
        let start = next_miss.filter(|&s| s > index && s - index <= max)?;
        ra.start = start;
        ra.size = next_ra_size(start - index + req, max);
        ra.async_size = ra.size;
    } else if req > max || ra.prev_index.is_some_and(|p| index >= p && index - p <= 1) {
        // An oversize read, or a sequential miss.
        initial(ra);
    } else {
        // A standalone, small random read: as asked, the state untouched.
        return Some(RaWindow {
            start: index,
            nr: req,
            lookahead: 0,
        });
    }
    // "Will this read hit the readahead marker made by itself?": merge the
    // next window into this one.
    if index == ra.start && ra.size == ra.async_size {
        let add = next_ra_size(ra.size, max);
        if ra.size + add <= max {
            ra.async_size = add;
            ra.size += add;
        } else {
            ra.size = max;
            ra.async_size = max >> 1;
        }
    }
    Some(RaWindow {
        start: ra.start,
        nr: ra.size,
        lookahead: ra.async_size,
    })
}

impl Kernel {
    /// The readahead window's largest size, pages (`bdi->ra_pages`).
    pub fn ra_pages(&self) -> u32 {
        (self.params.readahead_kb / 4).min(u64::from(u32::MAX)) as u32
    }

    /// `page_cache_next_miss(index + 1, max)`: the first page after `index`
    /// of file `f` not cached, if within `max` pages.
    fn next_miss(&self, f: u32, index: u32, max: u32) -> Option<u32> {
        let size = self.files[f as usize].size;
        (index + 1..size.min(index.saturating_add(max) + 1))
            .find(|&j| self.find_get_page(f, j).is_none())
    }

    /// The window `ondemand_readahead` picks for a read of `req` pages at
    /// `index` of file `f` (see [`ondemand`]); None with readahead off.
    pub fn readahead_window(
        &mut self,
        f: u32,
        index: u32,
        req: u32,
        marker: bool,
    ) -> Option<RaWindow> {
        let max = self.ra_pages();
        if max == 0 {
            return None;
        }
        let next_miss = if marker {
            self.next_miss(f, index, max)
        } else {
            None
        };
        let ra = &mut self.files[f as usize].ra;
        ondemand(ra, index, req, max, marker, next_miss)
    }
}

/// Readahead for a read of `req` pages at `index` of file `f`, at a
/// marked page (`marker`, `page_cache_async_ra`) or a miss
/// (`page_cache_sync_ra`): the window [`Kernel::readahead_window`] picks,
/// read by [`page_cache_ra`] (nothing with readahead off). False if the
/// task was OOM-killed while allocating.
pub async fn readahead(w: &World, f: u32, index: u32, req: u32, marker: bool) -> bool {
    let win = w.k().readahead_window(f, index, req, marker);
    match win {
        Some(win) => page_cache_ra(w, f, win).await,
        None => true,
    }
}

/// `page_cache_ra_unbounded` (6.1): allocates the window's pages that are
/// not cached, adds them to the page cache locked, marks the one
/// `nr - lookahead` into the window `PG_readahead`, and submits each run
/// of contiguous new pages as one read (`read_pages` → the filesystem's
/// `->readahead`), without waiting. A cached page ends the run before it
/// and is skipped. False if the task was OOM-killed while allocating.
pub async fn page_cache_ra(w: &World, f: u32, win: RaWindow) -> bool {
    let end = win
        .start
        .saturating_add(win.nr)
        .min(w.k().files[f as usize].size);
    let mark = win.start + win.nr.saturating_sub(win.lookahead);
    let mut run: Vec<Pfn> = Vec::new();
    let mut run_at: Option<(usize, u64)> = None;
    let mut ok = true;
    for i in win.start..end {
        if w.k().find_get_page(f, i).is_some() {
            submit_run(w, &mut run, &mut run_at).await;
            continue;
        }
        let Some(pfn) = alloc_page(w, Gfp::HIGHUSER_MOVABLE).await else {
            ok = false;
            break;
        };
        let io = {
            let mut k = w.k();
            if k.find_get_page(f, i).is_some() {
                k.free_page(pfn);
                None
            } else {
                let io = k.page_cache_miss(f, i, pfn);
                if i == mark {
                    k.frames.get_mut(pfn).set(pg::RECLAIM);
                }
                io.map(|at| (at, pfn))
            }
        };
        match io {
            Some(((dev, pos), pfn)) => {
                if run_at.is_some_and(|(d, p)| d != dev || p + run.len() as u64 != pos) {
                    submit_run(w, &mut run, &mut run_at).await;
                }
                if run.is_empty() {
                    run_at = Some((dev, pos));
                }
                run.push(pfn);
            }
            // A sparse file's hole: zero-filled, no I/O.
            None => submit_run(w, &mut run, &mut run_at).await,
        }
    }
    submit_run(w, &mut run, &mut run_at).await;
    ok
}

/// Submits the pages gathered so far as one read, without waiting.
async fn submit_run(w: &World, run: &mut Vec<Pfn>, at: &mut Option<(usize, u64)>) {
    if let Some((dev, pos)) = at.take() {
        let pages = std::mem::take(run);
        crate::sched::pay_cpu(w).await;
        submit_bio(w, dev, ReqKind::FileRead, pages, pos, false).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `cat` of 32-page reads with the default 128 KiB window: the first
    /// read's window is 32 pages marked halfway (its own marker merged),
    /// the marker's hit reads the next 32 ahead marked at their first
    /// page, and so on, one window ahead of the reader [6.1
    /// ondemand_readahead].
    #[test]
    fn a_sequential_reader_stays_a_window_ahead() {
        let mut ra = RaState::default();
        let w = ondemand(&mut ra, 0, 32, 32, false, None).unwrap();
        assert_eq!(
            w,
            RaWindow {
                start: 0,
                nr: 32,
                lookahead: 16
            }
        );
        // The reader reaches page 16, marked.
        let w = ondemand(&mut ra, 16, 16, 32, true, Some(32)).unwrap();
        assert_eq!(
            w,
            RaWindow {
                start: 32,
                nr: 32,
                lookahead: 32
            }
        );
        // Page 32 is that window's first, marked.
        let w = ondemand(&mut ra, 32, 32, 32, true, Some(64)).unwrap();
        assert_eq!(
            w,
            RaWindow {
                start: 64,
                nr: 32,
                lookahead: 32
            }
        );
    }

    /// Small reads ramp the window up (a 4-page read of a 32-page maximum
    /// starts an 8-page window, the rest its lookahead), and a small read
    /// neither sequential nor at a marker reads just itself.
    #[test]
    fn windows_ramp_up_and_random_reads_read_alone() {
        assert_eq!(init_ra_size(1, 512), 4);
        assert_eq!(init_ra_size(4, 32), 8);
        assert_eq!(init_ra_size(32, 32), 32);
        assert_eq!(next_ra_size(4, 512), 16);
        assert_eq!(next_ra_size(64, 512), 128);
        assert_eq!(next_ra_size(512, 512), 512);
        let mut ra = RaState {
            prev_index: Some(10),
            ..RaState::default()
        };
        let w = ondemand(&mut ra, 1000, 4, 32, false, None).unwrap();
        assert_eq!(
            w,
            RaWindow {
                start: 1000,
                nr: 4,
                lookahead: 0
            }
        );
        assert_eq!(ra.size, 0, "a random read leaves the state alone");
        // A miss right after the last read is sequential.
        ra.prev_index = Some(999);
        let w = ondemand(&mut ra, 1000, 4, 32, false, None).unwrap();
        assert_eq!(
            w,
            RaWindow {
                start: 1000,
                nr: 8,
                lookahead: 4
            }
        );
    }
}
