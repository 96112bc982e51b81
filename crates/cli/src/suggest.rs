//! "Did you mean …?" for names given on the command line: kernel profiles
//! and machines.
//!
//! Generic over whatever list of names exists (the kernel profiles in
//! `crates/kernel/src/profile.rs` grow as generations are added), so nothing
//! here knows a profile by name. A name matches after normalisation first
//! (case, and the `v` kernel versions carry: `5.15` → `v5.15`), then by edit
//! distance, with the same bound `--set` uses for parameter names
//! ([`reclaimlab_kernel::params::closest`]).

use reclaimlab_kernel::params::closest;

/// The name in `names` that `given` most likely meant, if any is close.
pub fn did_you_mean(given: &str, names: &[&str]) -> Option<String> {
    let norm = |s: &str| {
        let l = s.trim().to_ascii_lowercase();
        l.strip_prefix('v').map(str::to_string).unwrap_or(l)
    };
    let g = norm(given);
    if g.is_empty() {
        return None;
    }
    // Same name but for case or the leading `v`: the answer, whatever else
    // is close.
    if let Some(n) = names.iter().find(|n| norm(n) == g) {
        return Some((*n).to_string());
    }
    // Compare normalised forms, so that `5.16rc1` finds `v5.16-rc1` by the
    // one edit it lacks.
    let normed: Vec<String> = names.iter().map(|n| norm(n)).collect();
    let refs: Vec<&str> = normed.iter().map(String::as_str).collect();
    let hit = closest(&g, &refs)?;
    names
        .iter()
        .zip(&normed)
        .find(|(_, n)| **n == hit)
        .map(|(n, _)| (*n).to_string())
}

/// ` (did you mean `X`?)`, or nothing when no name is close.
pub fn hint(given: &str, names: &[&str]) -> String {
    did_you_mean(given, names)
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNELS: &[&str] = &[
        "v2.6.36",
        "v2.6.37",
        "v4.16",
        "v4.17",
        "v5.15",
        "v5.16-rc1",
        "v5.16",
        "none",
    ];
    const MACHINES: &[&str] = &["small", "laptop", "slice-2021", "testbox-2021"];

    #[test]
    fn kernel_versions_without_their_v() {
        assert_eq!(did_you_mean("5.15", KERNELS).as_deref(), Some("v5.15"));
        assert_eq!(did_you_mean("5.16", KERNELS).as_deref(), Some("v5.16"));
        assert_eq!(
            did_you_mean("V5.16-RC1", KERNELS).as_deref(),
            Some("v5.16-rc1")
        );
        assert_eq!(
            did_you_mean("5.16rc1", KERNELS).as_deref(),
            Some("v5.16-rc1")
        );
        assert_eq!(did_you_mean("2.6.36", KERNELS).as_deref(), Some("v2.6.36"));
        assert_eq!(did_you_mean("v4.61", KERNELS).as_deref(), Some("v4.16"));
    }

    #[test]
    fn machines_by_edit_distance() {
        assert_eq!(did_you_mean("smal", MACHINES).as_deref(), Some("small"));
        assert_eq!(
            did_you_mean("slice2021", MACHINES).as_deref(),
            Some("slice-2021")
        );
        assert_eq!(did_you_mean("Laptop", MACHINES).as_deref(), Some("laptop"));
    }

    #[test]
    fn nothing_close_is_no_suggestion() {
        assert_eq!(did_you_mean("workstation-with-nvme", MACHINES), None);
        assert_eq!(did_you_mean("", KERNELS), None);
        assert_eq!(hint("zzzzzzzzzzzz", KERNELS), "");
        assert_eq!(hint("5.15", KERNELS), " (did you mean `v5.15`?)");
    }
}
