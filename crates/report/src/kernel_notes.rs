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

/// The notes for one run of the report.
pub fn notes(r: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
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
        let n = notes(&r);
        assert!(
            n.len() == 1 && n[0].contains("zeromap") && n[0].contains("160521"),
            "{n:?}"
        );
        r.kernel = "6.1.0-50-amd64".into();
        assert!(notes(&r).is_empty());
        r.kernel = "6.18.44".into();
        r.origin = "sim".into();
        assert!(notes(&r).is_empty());
        r.origin = "real".into();
        r.ops.page_writes_file = 0;
        assert!(notes(&r).is_empty());
    }
}
