//! The `--kernel` argument of a guest run: which kernels to boot.
//!
//! `debian:5.10` names a Debian release's kernel series (fetched through apt
//! from the archive the host's own sources name); `path/to/vmlinuz[:modules]`
//! names a kernel someone built, with the directory that holds its
//! `lib/modules/<release>` tree (or the release directory itself). Several
//! kernels are separated by commas: `debian:5.10,debian:6.1`.

use std::path::PathBuf;

use crate::error::{HostError, Result};

/// The Debian releases whose kernel series `debian:X.Y` can name: (series, suite).
/// Debian keeps one kernel ABI per release, so the series picks the suite.
pub const DEBIAN_SERIES: &[(&str, &str)] = &[
    ("4.19", "buster"),
    ("5.10", "bullseye"),
    ("6.1", "bookworm"),
    ("6.12", "trixie"),
];

/// One kernel to boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSpec {
    /// Debian's kernel of a release: `debian:5.10`.
    Debian {
        /// The series asked for (`5.10`).
        series: String,
        /// The Debian suite that ships it (`bullseye`).
        suite: String,
    },
    /// A kernel image on disk, and where its modules are.
    Path {
        /// The `vmlinuz` (bzImage).
        vmlinuz: PathBuf,
        /// A directory holding `lib/modules/<release>/` or the release dir itself.
        modules: Option<PathBuf>,
    },
}

impl KernelSpec {
    /// A short label for file and run names (`debian-5.10`, `vmlinuz-custom`).
    pub fn label(&self) -> String {
        match self {
            KernelSpec::Debian { series, .. } => format!("debian-{series}"),
            KernelSpec::Path { vmlinuz, .. } => vmlinuz
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "vmlinuz".into())
                .replace(
                    |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '.',
                    "_",
                ),
        }
    }
}

/// Parses `--kernel`: a comma list of `debian:X.Y` or `PATH[:MODULES]`.
pub fn parse_kernels(arg: &str) -> Result<Vec<KernelSpec>> {
    let accepted = DEBIAN_SERIES
        .iter()
        .map(|(s, _)| format!("debian:{s}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = Vec::new();
    for item in arg.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(HostError::with_fix(
                format!("--kernel `{arg}`: an empty entry"),
                "e.g. --kernel debian:5.10,debian:6.1",
            ));
        }
        let k = if let Some(series) = item.strip_prefix("debian:") {
            let suite = DEBIAN_SERIES
                .iter()
                .find(|(s, _)| *s == series)
                .map(|(_, suite)| suite.to_string())
                .ok_or_else(|| {
                    HostError::with_fix(
                        format!(
                            "--kernel {item}: Debian ships no kernel series `{series}` in a release reclaimlab knows"
                        ),
                        format!("one of {accepted}, or a path to a vmlinuz you built"),
                    )
                })?;
            KernelSpec::Debian {
                series: series.to_string(),
                suite,
            }
        } else if item.contains(':') && !item.starts_with('/') && !item.starts_with('.') {
            return Err(HostError::with_fix(
                format!(
                    "--kernel {item}: unknown kernel source `{}`",
                    item.split(':').next().unwrap_or("")
                ),
                format!("one of {accepted}, or PATH/vmlinuz[:MODULES_DIR]"),
            ));
        } else {
            let (v, m) = match item.split_once(':') {
                Some((v, m)) => (v, Some(PathBuf::from(m))),
                None => (item, None),
            };
            KernelSpec::Path {
                vmlinuz: PathBuf::from(v),
                modules: m,
            }
        };
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// The order of boots for `repeat` rounds over `n` kernels: round r boots every
/// kernel, starting from kernel `r % n`, so drift of the host (other load, a
/// warming cache) falls on each kernel alike. Returns `(round, kernel index)`.
pub fn boot_order(n: usize, repeat: u32) -> Vec<(u32, usize)> {
    let mut v = Vec::new();
    for r in 0..repeat {
        for i in 0..n {
            v.push((r, (i + r as usize) % n));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_series_and_paths() {
        let k = parse_kernels("debian:5.10, debian:6.1,/boot/vmlinuz-x:/tmp/m,./bzImage").unwrap();
        assert_eq!(
            k[0],
            KernelSpec::Debian {
                series: "5.10".into(),
                suite: "bullseye".into()
            }
        );
        assert_eq!(k[1].label(), "debian-6.1");
        assert_eq!(
            k[2],
            KernelSpec::Path {
                vmlinuz: "/boot/vmlinuz-x".into(),
                modules: Some("/tmp/m".into())
            }
        );
        assert_eq!(
            k[3],
            KernelSpec::Path {
                vmlinuz: "./bzImage".into(),
                modules: None
            }
        );
    }

    #[test]
    fn bad_kernels_are_named() {
        let e = parse_kernels("debian:5.4").unwrap_err();
        assert!(e.what.contains("`5.4`"), "{e}");
        assert!(e.fix.unwrap().contains("debian:5.10"));
        let e = parse_kernels("fedora:6.1").unwrap_err();
        assert!(e.what.contains("unknown kernel source `fedora`"), "{e}");
        assert!(parse_kernels("debian:5.10,,debian:6.1").is_err());
    }

    #[test]
    fn duplicates_collapse() {
        assert_eq!(parse_kernels("debian:6.1,debian:6.1").unwrap().len(), 1);
    }

    #[test]
    fn repeats_alternate_the_first_kernel() {
        assert_eq!(
            boot_order(2, 3),
            vec![(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)]
        );
        assert_eq!(boot_order(1, 2), vec![(0, 0), (1, 0)]);
    }
}
