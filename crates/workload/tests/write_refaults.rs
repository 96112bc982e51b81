//! A buffered write over a shadow entry is no workingset refault: the page
//! a write allocates carries `__GFP_WRITE` (`grab_cache_page_write_begin`
//! asks for `FGP_WRITE`), and `filemap_add_folio` (6.1; 5.10/5.15
//! `add_to_page_cache_lru`) calls `workingset_refault` only for a shadow
//! found without it. A read of an evicted page is one. Before this was
//! modelled every page fio rewrote after reclaim evicted it counted in
//! `workingset_refault_file` and came back active (docs/fidelity.md, "File
//! refaults and their activation (2026-11-28)").

mod common;
use common::*;

/// 96 MiB, no swap, a quick disk: a 192 MiB file cannot stay cached.
const SMALL: &str = "name='small'\ncpus=2\nmemory_mib=96\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";

/// A writer over a file twice the size of memory, in passes without
/// `fadvise(DONTNEED)` (which would drop the shadow entries): from the
/// second pass on every page it writes replaces a shadow entry reclaim
/// left, and none of them is a refault or an activation.
#[test]
fn rewriting_evicted_pages_is_no_refault() {
    let spec = "name='w'\nduration_s=8\nwarmup_s=0\n[[worker]]\nkind='file-writer'\ncount=1\nfiles=1\nfile_mib=192\nblock_kib=1024\npattern='sequential'\ninvalidate=false\n";
    let (c, _) = sim(&machine(SMALL), "v6.1", spec, 1, &[]);
    let file_pages = 192 * 256;
    assert!(
        c.delta("nr_dirtied") > 2 * file_pages,
        "the writer must rewrite its file at least once after reclaim evicted it: {} pages dirtied",
        c.delta("nr_dirtied")
    );
    assert!(
        c.delta("pgsteal_kswapd") + c.delta("pgsteal_direct") > file_pages,
        "reclaim must evict the written pages (leaving shadow entries)"
    );
    assert_eq!(
        c.delta("workingset_refault_file"),
        0,
        "a write's page-cache insertion is not a refault"
    );
    assert_eq!(c.delta("workingset_activate_file"), 0);
}

/// The same file read instead, at random: a page read after its eviction
/// is a refault (the reader's misses carry no `__GFP_WRITE`).
#[test]
fn rereading_evicted_pages_is_a_refault() {
    let spec = "name='r'\nduration_s=8\nwarmup_s=0\n[[worker]]\nkind='file-reader'\ncount=1\nfiles=1\nfile_mib=192\nblock_kib=1024\npattern='random'\n";
    let (c, _) = sim(&machine(SMALL), "v6.1", spec, 1, &[]);
    let file_pages = 192 * 256;
    assert!(
        c.delta("pgsteal_kswapd") + c.delta("pgsteal_direct") > file_pages / 4,
        "reclaim must evict the read pages"
    );
    assert!(
        c.delta("workingset_refault_file") > file_pages / 4,
        "reads of evicted pages refault: {}",
        c.delta("workingset_refault_file")
    );
}
