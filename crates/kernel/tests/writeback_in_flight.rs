//! How many pages the flusher holds under writeback ahead of the device.
//!
//! In 5.15 `->writepages` (XFS: `iomap_writepages` over
//! `write_cache_pages`) marks each page under writeback as it adds it to a
//! bio and submits each bio as soon as it is full or the next page does
//! not continue it; the flusher then sleeps in the block layer (blk-wbt's
//! `wbt_wait`, request tags) before it marks more. So the pages under
//! writeback are about what the block layer admitted plus one request,
//! however large `writeback_chunk_size` (here thousands of pages) is.

mod common;

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::vmstat::Ev;
use std::rc::Rc;

/// 1 GiB, a 100 MB/s disk taking 64 KiB requests (16 pages), 4 in its queue:
/// blk-wbt's depth is at most 4 requests, 64 pages.
const MACHINE: &str = "name='wbq'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\nqueue_depth=4\nmax_sectors_kb=64\n";
const MS: u64 = 1_000_000;

fn boot_writer(pages: u32) -> Rc<World> {
    common::boot_one_writer(MACHINE, pages)
}

/// Background writeback of tens of thousands of dirty pages: at no time
/// are more pages under writeback than the device's wbt depth of requests
/// plus two (one being built, one admitted past the limit), while the
/// flusher's chunk is thousands of pages.
#[test]
fn the_flusher_marks_pages_as_it_submits_them() {
    let (thresh, bg) = boot_writer(0).k().dirty_thresholds();
    let freerun = (thresh + bg) / 2;
    let pages = ((bg + freerun) / 2) as u32;
    let w = boot_writer(pages);
    let request = 16u64;
    let bound = (4 + 2) * request;
    let mut most = 0;
    let mut t = 0;
    while t < 2_000 * MS {
        t += MS / 2;
        w.run_until(t);
        most = most.max(w.k().nr_writeback());
    }
    let written = w.k().event(Ev::NrWritten);
    assert!(
        written > 10 * bound,
        "only {written} pages written in 2 s: the flusher did not run"
    );
    assert!(
        most <= bound,
        "{most} pages under writeback at once (bound {bound}: 4 requests of {request} pages in flight, one more admitted, one being built)"
    );
}
