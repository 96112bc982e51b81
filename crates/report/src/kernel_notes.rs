//! Notes on a real kernel's counters that mean something else than the
//! simulated kernel's of the same name, by the kernel's version.
//!
//! Since 6.12 (`mm: store zero pages to be swapped out in a bitmap`)
//! `swap_writeout` skips the write of a zero-filled anonymous folio after
//! `pageout` has counted it in `nr_vmscan_write`, and `pswpout` does not
//! count it; mmtests' "Page writes file" (`nr_vmscan_write - pswpout`)
//! then holds those anonymous pages too. Only kswapd writes file pages
//! (`shrink_folio_list`), so under limit or direct reclaim alone a non-zero
//! figure there is zero-filled anon pages; the simulated kernel (≤ 6.1
//! profiles) has no zeromap.
//!
//! Two more are not about a counter but about the unit reclaim works on,
//! which the simulated kernel (order-0 pages only, `mm/page.rs`) does not
//! have, so a real run's figures for the memory they cover measure another
//! mechanism ([`folio_notes`]; `reclaimlab fidelity` repeats them as warnings):
//!
//! - **Anonymous THPs** (`thp.enabled` `[always]`, Debian's kernels'
//!   default): a hog's memory faults in as 2 MiB folios, and
//!   `isolate_lru_folios` takes, keeps, activates and swaps each as one unit
//!   of 512 pages (6.1 guest, 2026-11-27: 948 of 17,469 anon batches scanned
//!   512 or more pages, half the anon pages scanned).
//! - **Large page-cache folios**: XFS from 5.18 (from buffered writes since
//!   6.6's iomap write path), ext4 from 6.16. A 1 MiB write is one folio of
//!   up to 256 pages, and one `SWAP_CLUSTER_MAX` batch of reclaim takes it
//!   whole (6.18, 2026-11-27: 77,816 of 78,227 file batches were 256 pages).

use crate::model::RunReport;

/// `major.minor` of a kernel release string (`6.18.44-fc-v657`,
/// `5.10.0-32-amd64`), `None` for a simulated profile's name (`v6.1`) or
/// anything else.
pub fn release(kernel: &str) -> Option<(u32, u32)> {
    let mut it = kernel.split(['.', '-']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The value of `key` in a run's settings (its `run.json` params).
fn setting<'a>(settings: &'a [(String, String)], key: &str) -> Option<&'a str> {
    settings
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// What a real run's kernel did in units the simulated kernel does not
/// have: anonymous THPs and large page-cache folios (module comment). Empty
/// for simulated and imported runs, and when the record does not say.
pub fn folio_notes(origin: &str, kernel: &str, settings: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    if origin != "real" {
        return out;
    }
    if let Some(thp) = setting(settings, "thp.enabled") {
        if thp.contains("[always]") {
            out.push(format!(
                "transparent huge pages were on for all anonymous memory (thp.enabled: {thp}): the kernel \
                 faulted, scanned, kept, activated and swapped the workers' memory in 2 MiB folios of 512 pages; \
                 the simulator has order-0 pages only, so compare anonymous-side counts with care \
                 (`run --kernel … --thp never` makes a guest run that it can follow)"
            ));
        }
    }
    let fs = setting(settings, "run.data_fs");
    let large = release(kernel).and_then(|v| match fs {
        Some("ext4") if v >= (6, 16) => Some("ext4, since 6.16"),
        Some("xfs") if v >= (6, 6) => Some("XFS, since 5.18; from buffered writes since 6.6"),
        _ => None,
    });
    if let (Some(why), Some(fs)) = (large, fs) {
        out.push(format!(
            "the workload's files were on {fs}, whose page cache this kernel keeps in large folios ({why}): \
             a 1 MiB write is one folio of up to 256 pages, which one reclaim batch takes, writes and frees \
             whole; the simulator's page cache is order-0, so compare file-side counts with care"
        ));
    }
    out
}

/// The notes for one run of the report.
pub fn notes(r: &RunReport, settings: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = folio_notes(&r.origin, &r.kernel, settings)
        .into_iter()
        .map(|n| format!("{}: {n}", r.name))
        .collect();
    if r.origin != "real" {
        return out;
    }
    if let Some(v) = release(&r.kernel) {
        if v >= (6, 12) && r.ops.page_writes_file > 0 {
            out.push(format!(
                "{}: kernel {} (6.12 or later) skips writing zero-filled anonymous pages to swap (zeromap) after \
                 counting them in nr_vmscan_write, so its Page writes file ({}) holds those anonymous pages \
                 (only kswapd writes file pages; limit and direct reclaim never do)",
                r.name, r.kernel, r.ops.page_writes_file
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases() {
        assert_eq!(release("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(release("5.10.0-32-amd64"), Some((5, 10)));
        assert_eq!(release("6.1"), Some((6, 1)));
        assert_eq!(release("v6.1"), None);
        assert_eq!(release("none"), None);
    }

    #[test]
    fn zeromap_note_only_for_real_6_12_and_later() {
        let mut r = RunReport {
            name: "real".into(),
            origin: "real".into(),
            kernel: "6.18.44-fc-v657".into(),
            ..RunReport::default()
        };
        r.ops.page_writes_file = 160_521;
        let n = notes(&r, &[]);
        assert!(
            n.len() == 1 && n[0].contains("zeromap") && n[0].contains("160521"),
            "{n:?}"
        );
        r.kernel = "6.1.0-50-amd64".into();
        assert!(notes(&r, &[]).is_empty());
        r.kernel = "6.18.44".into();
        r.origin = "sim".into();
        assert!(notes(&r, &[]).is_empty());
        r.origin = "real".into();
        r.ops.page_writes_file = 0;
        assert!(notes(&r, &[]).is_empty());
    }

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn thp_note_only_when_always_on_a_real_run() {
        let on = settings(&[("thp.enabled", "[always] madvise never")]);
        let n = folio_notes("real", "6.1.0-50-amd64", &on);
        assert!(n.len() == 1 && n[0].contains("2 MiB folios"), "{n:?}");
        assert!(folio_notes("sim", "v6.1", &on).is_empty());
        let madvise = settings(&[("thp.enabled", "always [madvise] never")]);
        assert!(folio_notes("real", "6.18.44", &madvise).is_empty());
        assert!(folio_notes("real", "6.18.44", &[]).is_empty());
    }

    #[test]
    fn large_folio_note_follows_filesystem_and_release() {
        let ext4 = settings(&[("run.data_fs", "ext4")]);
        let xfs = settings(&[("run.data_fs", "xfs")]);
        let n = folio_notes("real", "6.18.44-fc-v657", &ext4);
        assert!(n.len() == 1 && n[0].contains("ext4, since 6.16"), "{n:?}");
        assert!(folio_notes("real", "6.12.5", &ext4).is_empty());
        assert_eq!(folio_notes("real", "6.6.0", &xfs).len(), 1);
        assert!(folio_notes("real", "6.1.0-50-amd64", &xfs).is_empty());
        // Unknown filesystem (records before run.data_fs): no claim.
        assert!(folio_notes("real", "6.18.44", &[]).is_empty());
        let r = RunReport {
            name: "host".into(),
            origin: "real".into(),
            kernel: "6.18.44".into(),
            ..RunReport::default()
        };
        let n = notes(&r, &ext4);
        assert!(
            n.len() == 1 && n[0].starts_with("host: the workload's files"),
            "{n:?}"
        );
    }
}
