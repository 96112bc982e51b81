//! The error type of the real-kernel side: what failed, where, and the fix.
//!
//! Every failure on a real host is something a user can act on (run as root,
//! mount tracefs, install fio, add swap), so an error carries the fix as well as
//! the cause; the binary prints both and exits 2.

use std::fmt;
use std::path::Path;

/// A host-side failure: `what` names the thing and the place; `fix` says how to repair it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    /// What failed, naming the file, command or setting.
    pub what: String,
    /// The command or change that fixes it, if there is one.
    pub fix: Option<String>,
}

impl HostError {
    /// An error without a fix.
    pub fn new(what: impl Into<String>) -> Self {
        HostError {
            what: what.into(),
            fix: None,
        }
    }

    /// An error with its fix.
    pub fn with_fix(what: impl Into<String>, fix: impl Into<String>) -> Self {
        HostError {
            what: what.into(),
            fix: Some(fix.into()),
        }
    }

    /// An I/O error on `path` while doing `doing`.
    pub fn io(doing: &str, path: &Path, e: std::io::Error) -> Self {
        HostError::new(format!("{doing} {}: {e}", path.display()))
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.what)?;
        if let Some(fix) = &self.fix {
            write!(f, "\n  fix: {fix}")?;
        }
        Ok(())
    }
}

impl std::error::Error for HostError {}

/// Result with [`HostError`].
pub type Result<T> = std::result::Result<T, HostError>;

/// Parses a size: a plain byte count, or a number with K, M, G or T (powers of
/// 1024; `KiB`/`KB`/`k` spellings are all accepted), e.g. `1G`, `512MiB`, `1.5g`.
pub fn parse_size(what: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let bad = || {
        HostError::with_fix(
            format!("{what}: `{s}` is not a size"),
            "give bytes or a number with K, M, G or T (powers of 1024), e.g. 1G or 512M",
        )
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let v = num * mult as f64;
    if !v.is_finite() || v < 1.0 || v > u64::MAX as f64 / 2.0 {
        return Err(bad());
    }
    Ok(v as u64)
}

/// Formats bytes for humans (`1.0 GiB`).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("--memory", "1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("--memory", "512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("--memory", "1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("--memory", "4096").unwrap(), 4096);
        assert_eq!(parse_size("--memory", "2 GB").unwrap(), 2 << 30);
        let e = parse_size("--memory", "lots").unwrap_err();
        assert!(e.to_string().contains("--memory: `lots` is not a size"));
        assert!(parse_size("--memory", "1X").is_err());
        assert!(parse_size("--memory", "0").is_err());
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
        assert_eq!(human_bytes(12), "12 B");
    }
}
