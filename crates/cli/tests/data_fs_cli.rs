//! The data filesystem in the main job's machine (slice-2021: XFS, as the
//! 2021 letters' "freshly created XFS filesystem"), end to end.

use std::process::Command;

/// `sim stutterp` with 2 workers for 10 s under v5.15: stdout.
fn stutterp(extra: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "reclaimlab-datafs-{}-{}",
        std::process::id(),
        extra.join("_").replace(['=', '.'], "-")
    ));
    let o = Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
        .args(["sim", "stutterp", "--kernel", "v5.15"])
        .args([
            "--set",
            "stutterp.workers=2",
            "--set",
            "stutterp.duration_s=10",
        ])
        .args(extra)
        .arg("--out")
        .arg(&dir)
        .arg("--force")
        .output()
        .expect("run reclaimlab sim");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The summary row `name`'s value.
fn row(out: &str, name: &str) -> f64 {
    out.lines()
        .find_map(|l| {
            l.strip_prefix(name)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no row {name} in\n{out}"))
}

/// 5.15's XFS has no `->writepage` (`xfs_address_space_operations` has
/// only `->writepages`), so kswapd's `pageout()` activates the dirty file
/// pages it would have written: reclaim writes only swap. With 5.10's
/// `xfs_vm_writepage` (`--set xfs.writepage=1`) the same run has kswapd
/// writing file pages.
#[test]
fn xfs_without_writepage_reclaim_writes_only_swap() {
    let without = stutterp(&[]);
    let with = stutterp(&["--set", "xfs.writepage=1"]);
    assert!(
        row(&with, "Ops Page writes file") > 0.0,
        "with ->writepage kswapd should write file pages:\n{with}"
    );
    assert_eq!(row(&without, "Ops Page writes file"), 0.0, "{without}");
    assert!(row(&without, "Ops Page writes anon") > 0.0, "{without}");
}
