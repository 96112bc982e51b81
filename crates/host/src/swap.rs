//! Swap for a real run: find what the host has, or make a temporary swap file.
//!
//! stutterp's anon hogs need swap to be reclaimable at all. A host without swap
//! gets a temporary file (`--swap-file SIZE`): allocated, `mkswap`ed and
//! `swapon`ed for the run, `swapoff`ed and deleted afterwards (and after a crash,
//! by the leftover clean-up, from the state file).

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{HostError, Result};
use crate::sys;

/// One active swap area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapArea {
    /// Device or file.
    pub path: PathBuf,
    /// Size, bytes.
    pub size: u64,
}

/// Parses `/proc/swaps` (sizes there are KiB).
pub fn parse_swaps(text: &str) -> Vec<SwapArea> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 3 {
                return None;
            }
            Some(SwapArea {
                path: PathBuf::from(f[0].replace("\\040", " ")),
                size: f[2].parse::<u64>().ok()? * 1024,
            })
        })
        .collect()
}

/// The active swap areas of this host.
pub fn active() -> Vec<SwapArea> {
    parse_swaps(&sys::read("/proc/swaps").unwrap_or_default())
}

fn run(cmd: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| HostError::new(format!("cannot run `{cmd}`: {e}")))?;
    if !out.status.success() {
        return Err(HostError::new(format!(
            "`{cmd} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Creates, formats and enables a swap file of `size` bytes at `path`.
/// On failure nothing is left behind.
pub fn create_swap_file(path: &Path, size: u64) -> Result<()> {
    let res = (|| -> Result<()> {
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| HostError::io("cannot create swap file", path, e))?;
        // SAFETY: fallocate on an open file descriptor.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) };
        if r != 0 {
            // Filesystems without fallocate: write zeros.
            drop(f);
            let p = path.to_string_lossy();
            run(
                "dd",
                &[
                    "if=/dev/zero",
                    &format!("of={p}"),
                    "bs=1M",
                    &format!("count={}", size.div_ceil(1 << 20)),
                    "status=none",
                ],
            )?;
        }
        let p = path.to_string_lossy();
        run("mkswap", &[&p])?;
        if run("swapon", &[&p]).is_err() {
            // A file with holes (some filesystems' fallocate) cannot be swap: rewrite it.
            fs::remove_file(path).map_err(|e| HostError::io("cannot remove", path, e))?;
            run(
                "dd",
                &[
                    "if=/dev/zero",
                    &format!("of={p}"),
                    "bs=1M",
                    &format!("count={}", size.div_ceil(1 << 20)),
                    "status=none",
                ],
            )?;
            fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| HostError::io("cannot chmod", path, e))?;
            run("mkswap", &[&p])?;
            run("swapon", &[&p]).map_err(|e| {
                HostError::with_fix(
                    e.what,
                    "put the swap file on a filesystem that supports swap files (ext4, xfs): --swap-file-dir DIR",
                )
            })?;
        }
        Ok(())
    })();
    if res.is_err() {
        let _ = remove_swap_file(path);
    }
    res
}

/// Turns a swap file off (if active) and deletes it.
pub fn remove_swap_file(path: &Path) -> Result<()> {
    if active().iter().any(|a| a.path == path) {
        run("swapoff", &[&path.to_string_lossy()]).map_err(|e| {
            HostError::with_fix(
                e.what,
                format!("swapoff {} && rm {}", path.display(), path.display()),
            )
        })?;
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(HostError::io("cannot remove swap file", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /var/tmp/reclaimlab-1.swap               file\t\t2097148\t\t0\t\t-2\n";
        let s = parse_swaps(t);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].path, PathBuf::from("/var/tmp/reclaimlab-1.swap"));
        assert_eq!(s[0].size, 2097148 * 1024);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }
}
