//! A buffered write's CPU (docs/bench/cpu-costs.md, "Buffered writes"):
//! every page written pays `cost.write_copy_page_ns` and
//! `cost.fs_write_page_ns`; a page the write has to put in the page cache
//! pays `cost.pagecache_insert_page_ns` too, a page already cached does
//! not.

mod common;

use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::mm::filemap::file_write;

const MACHINE: &str = "name='small'\ncpus=1\nmemory_mib=128\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n";

/// System ns of one task writing `pages` pages of a new file twice (the
/// second time into the cached pages), with the three costs set.
fn sys_ns(copy: u64, fs: u64, insert: u64, pages: u32) -> u64 {
    let (c, f, i) = (copy.to_string(), fs.to_string(), insert.to_string());
    let w = common::boot_v515(
        MACHINE,
        &[
            ("cost.write_copy_page_ns", &c),
            ("cost.fs_write_page_ns", &f),
            ("cost.pagecache_insert_page_ns", &i),
        ],
    );
    let file = w.k().create_file(0, pages);
    let t = w.k().new_task("writer", TaskKind::User, 0);
    let w2 = w.clone();
    w.spawn(t, async move {
        let _ = file_write(&w2, file, 0, pages).await;
        let _ = file_write(&w2, file, 0, pages).await;
        // The CPU still owed is paid before the task ends.
        reclaimlab_kernel::sched::pay_cpu(&w2).await;
    });
    w.run_until(2_000_000_000);
    let k = w.k();
    k.tasks[t as usize].sys_ns
}

#[test]
fn written_pages_pay_the_copy_and_the_fs_new_pages_the_insert() {
    let pages = 64;
    let base = sys_ns(0, 0, 0, pages);
    // Two writes of every page: the copy and the fs work twice each.
    assert_eq!(sys_ns(1000, 0, 0, pages) - base, 2 * 64 * 1000);
    assert_eq!(sys_ns(0, 300, 0, pages) - base, 2 * 64 * 300);
    // Only the first write puts the pages in the page cache.
    assert_eq!(sys_ns(0, 0, 5000, pages) - base, 64 * 5000);
}
