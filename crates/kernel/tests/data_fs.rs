//! The data filesystem as reclaim sees it (`reclaimlab_kernel::fs::ioend`):
//! which dirty pages `pageout()` can write, and writes into unwritten
//! extents that end only after a conversion worker's transaction.

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::fs::ioend::FsWritepage;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::mm::filemap::file_write;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::vmstat::Ev;
use reclaimlab_kernel::{boot, SimConfig};
use std::rc::Rc;

const MS: u64 = 1_000_000;

/// 1 GiB, 2 CPUs, a 100 MB/s disk taking 1280 KiB requests (320 pages),
/// with the filesystem line `fs` ("" for none).
fn machine(fs: &str) -> Machine {
    let t = format!(
        "name='dfs'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\n\
         write_mb_s=100\nread_mb_s=100\nlatency_us=100\nqueue_depth=8\n{fs}\n"
    );
    Machine::from_toml(&t, "test").unwrap()
}

/// Boots `fs` under `kernel` with each conversion costing `cost_ns`,
/// and a task that writes `pages` pages of a new file, fallocated or not.
fn boot_writer(
    fs: &str,
    kernel: &str,
    cost_ns: u64,
    pages: u32,
    fallocate: bool,
) -> (Rc<World>, u32) {
    let p = profile(kernel).unwrap();
    let mut params = Params::defaults(p);
    for (name, v) in [
        ("cost.ext4_convert_ns", cost_ns),
        ("cost.xfs_convert_ns", cost_ns),
        ("cost.ext4_convert_page_ns", 0),
        ("cost.xfs_convert_page_ns", 0),
    ] {
        params.set(name, &v.to_string()).unwrap();
    }
    let w = boot(&SimConfig::new(machine(fs), p, params, 1));
    let f = w.k().create_file(0, pages.max(1));
    if fallocate {
        w.k().fallocate(f);
    }
    let t = w.k().new_task("writer", TaskKind::User, 0);
    let w2 = w.clone();
    w.spawn(t, async move {
        let _ = file_write(&w2, f, 0, pages).await;
    });
    (w, f)
}

/// Twice the dirty threshold: the writer is held to the disk's pace by
/// `balance_dirty_pages` and writeback runs throughout.
fn pages_over_background() -> u32 {
    let (w, _) = boot_writer("", "v5.15", 0, 0, false);
    let (thresh, _) = w.k().dirty_thresholds();
    (2 * thresh) as u32
}

/// ext4's `rsv_conversion_wq` runs one work at a time: with a conversion
/// costing 50 ms of CPU, written pages end writeback at the worker's pace
/// (one request's pages per 50 ms), not the disk's, and every page that
/// ended writeback came through a conversion; without `fs` the same write
/// ends at the disk's pace with no conversion.
#[test]
fn ext4_writes_into_unwritten_extents_end_at_the_conversion_workers_pace() {
    let pages = pages_over_background();
    let (w, _) = boot_writer("fs='ext4'", "v5.15", 50 * MS, pages, true);
    w.run_until(2_000 * MS);
    let k = w.k();
    let q = &k.conversions[0];
    let written = k.event(Ev::NrWritten);
    assert!(q.conversions > 0, "no conversion ran");
    assert_eq!(
        written, q.pages_converted,
        "a page ended writeback without its conversion"
    );
    // 2 s at one conversion per 50 ms: at most 40 (+1 running) requests.
    assert!(q.conversions <= 41, "{} conversions in 2 s", q.conversions);
    assert!(written <= 41 * 320, "{written} pages converted in 2 s");
    assert!(
        q.max_pages_waiting > 4 * 320,
        "only {} pages waited for conversion",
        q.max_pages_waiting
    );
    drop(k);

    let (w, _) = boot_writer("", "v5.15", 50 * MS, pages, true);
    w.run_until(2_000 * MS);
    let k = w.k();
    assert_eq!(k.conversions[0].conversions, 0);
    assert!(
        k.event(Ev::NrWritten) > 2 * 41 * 320,
        "without a filesystem model the disk's pace: {} pages",
        k.event(Ev::NrWritten)
    );
}

/// Overwrites need no conversion: a file laid out by writing it (not
/// fallocated) ends its writes at the bio, on ext4 as anywhere.
#[test]
fn writes_into_written_blocks_need_no_conversion() {
    let pages = pages_over_background();
    let (w, _) = boot_writer("fs='ext4'", "v5.15", 50 * MS, pages, false);
    w.run_until(2_000 * MS);
    let k = w.k();
    assert_eq!(k.conversions[0].conversions, 0);
    assert!(k.event(Ev::NrWritten) > 2 * 41 * 320);
}

/// XFS converts on a per-CPU workqueue and merges an inode's contiguous
/// ioends that piled up while its work ran into one transaction
/// (`xfs_end_io`): fewer conversions than ioends; once written back the
/// blocks are no longer unwritten.
#[test]
fn xfs_merges_contiguous_ioends_and_marks_blocks_written() {
    let pages = pages_over_background();
    let (w, f) = boot_writer("fs='xfs'", "v5.15", 50 * MS, pages, true);
    w.run_until(3_000 * MS);
    let k = w.k();
    let q = &k.conversions[0];
    assert!(q.conversions > 0);
    assert!(
        q.conversions < q.ioends,
        "{} conversions for {} ioends: nothing merged",
        q.conversions,
        q.ioends
    );
    assert_eq!(k.event(Ev::NrWritten), q.pages_converted);
    let file = &k.files[f as usize];
    let converted = (0..pages).filter(|&i| !file.block_unwritten(i)).count() as u64;
    assert_eq!(
        converted, q.pages_converted,
        "blocks marked written = pages converted"
    );
}

/// `->writepage` by filesystem and kernel, for a dirty page of a
/// fallocated file and for the same page once its block is written.
#[test]
fn writepage_depends_on_the_filesystem_and_the_kernel() {
    let decide = |fs: &str, kernel: &str, written: bool| {
        let (w, f) = boot_writer(fs, kernel, 0, 1, true);
        w.run_until(MS);
        let mut k = w.k();
        let pfn = k.find_get_page(f, 0).expect("the page is cached");
        if written {
            k.files[f as usize].mark_written(0);
        }
        k.fs_writepage(pfn)
    };
    assert_eq!(decide("fs='xfs'", "v5.15", false), FsWritepage::None);
    assert_eq!(decide("fs='xfs'", "v6.1", true), FsWritepage::None);
    assert_eq!(decide("fs='xfs'", "v5.9", false), FsWritepage::Write);
    assert_eq!(decide("fs='ext4'", "v5.15", false), FsWritepage::Redirty);
    assert_eq!(decide("fs='ext4'", "v6.1", true), FsWritepage::Write);
    assert_eq!(decide("", "v5.15", false), FsWritepage::Write);
}
