//! 6.3's `vma_has_recency` (`policy.vma_recency`): `folio_referenced`
//! skips a `MADV_RANDOM` mapping, so a mapped-file-stream reader's pages,
//! each read once, go at the first scan instead of being kept once for
//! their young pte (6.1.0 `folio_referenced_one` counts it; only
//! `VM_SEQ_READ` is ignored there). Reclaim's efficiency shows it: about
//! half with 6.1's rule, nearly all with 6.3's.

mod common;
use common::*;

/// 128 MiB, no swap, one fast disk.
const SMALL: &str = "name='s'\ncpus=2\nmemory_mib=128\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=500\nread_mb_s=500\nlatency_us=50\nseek_us=0\nqueue_depth=64\n";

/// (pages scanned, pages reclaimed) by kswapd and direct reclaim while one
/// reader goes once through a 512 MiB sparse file.
fn scanned_reclaimed(recency: &str) -> (u64, u64) {
    let spec = "name='mfs'\nduration_s=60\n[[worker]]\nkind='mmap-file-reader'\nfiles=1\nfile_mib=512\nsparse=true\npattern='sequential'\npasses=1\nshared=false\n";
    let (c, _) = sim(
        &machine(SMALL),
        "v6.1",
        spec,
        1,
        &[("policy.vma_recency", recency)],
    );
    (
        c.delta("pgscan_kswapd") + c.delta("pgscan_direct"),
        c.delta("pgsteal_kswapd") + c.delta("pgsteal_direct"),
    )
}

#[test]
fn random_mappings_lose_their_recency_with_6_3() {
    let (scanned, reclaimed) = scanned_reclaimed("0");
    assert!(reclaimed > 80_000, "{reclaimed} pages reclaimed");
    let eff = reclaimed as f64 / scanned as f64;
    assert!(
        eff < 0.65,
        "6.1: a young mapped page is kept once: {eff:.3}"
    );
    let (scanned, reclaimed) = scanned_reclaimed("1");
    let eff = reclaimed as f64 / scanned as f64;
    assert!(eff > 0.9, "6.3: no reference counted: {eff:.3}");
}
