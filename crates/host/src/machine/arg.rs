//! The `--machine host…` argument: memory, swap and data directory.

use crate::error::{parse_size, HostError, Result};
use std::path::PathBuf;

use super::*;

/// How much memory the profile gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostMemory {
    /// A cgroup limit, bytes (`run --memory`).
    Limit(u64),
    /// The whole of MemTotal (`run --scope host`).
    All,
}

/// A parsed `--machine host[:ITEM,...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostArg {
    /// Memory.
    pub memory: HostMemory,
    /// Extra swap, bytes, as `run --swap-file` would add.
    pub swap_file: Option<u64>,
    /// The directory whose device is measured (`run --data-dir`).
    pub dir: Option<PathBuf>,
}

impl HostArg {
    /// Parses `host`, `host:SIZE`, `host:all`, `host:…,swap=SIZE`, `host:…,dir=DIR`.
    /// `None` if `s` does not name the host at all (a built-in name or a file);
    /// a file called `host` can be given as `./host`.
    pub fn parse(s: &str) -> Option<Result<HostArg>> {
        let rest = if s == "host" {
            ""
        } else {
            s.strip_prefix("host:")?
        };
        Some(Self::parse_items(s, rest))
    }

    fn parse_items(whole: &str, rest: &str) -> Result<HostArg> {
        let bad = |what: String| {
            Err(HostError::with_fix(
                format!("--machine {whole}: {what}"),
                format!("write {SYNTAX}"),
            ))
        };
        let mut arg = HostArg {
            memory: HostMemory::Limit(DEFAULT_RUN_MEMORY),
            swap_file: None,
            dir: None,
        };
        if whole != "host" && rest.trim().is_empty() {
            return bad("nothing after `host:`".into());
        }
        let mut memory_seen = false;
        for item in rest.split(',').filter(|_| !rest.is_empty()) {
            let item = item.trim();
            if item.is_empty() {
                return bad("an empty item between commas".into());
            }
            if let Some(v) = item.strip_prefix("swap=") {
                if arg.swap_file.is_some() {
                    return bad("`swap=` given twice".into());
                }
                arg.swap_file = Some(size(whole, "swap=", v)?);
            } else if let Some(v) = item.strip_prefix("dir=") {
                if arg.dir.is_some() {
                    return bad("`dir=` given twice".into());
                }
                if v.is_empty() {
                    return bad("`dir=` needs a directory".into());
                }
                arg.dir = Some(PathBuf::from(v));
            } else {
                if memory_seen {
                    return bad(format!(
                        "`{item}`: the memory is already given (one SIZE or `all`)"
                    ));
                }
                memory_seen = true;
                arg.memory = if item == "all" {
                    HostMemory::All
                } else if item.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                    HostMemory::Limit(size(whole, "", item)?)
                } else {
                    return bad(format!(
                        "`{item}` is not a size, `all`, `swap=SIZE` or `dir=DIR`"
                    ));
                };
            }
        }
        Ok(arg)
    }

    /// The directory the real run would write to, hence the one measured.
    pub fn data_dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
    }
}

/// A size as `run --memory` accepts it: `1G`, `1536M`, or bytes.
pub fn size_arg(b: u64) -> String {
    // Masks rather than `%`: `is_multiple_of` is newer than the workspace's rust-version.
    if b & ((1 << 30) - 1) == 0 {
        format!("{}G", b >> 30)
    } else if b & (MIB - 1) == 0 {
        format!("{}M", b / MIB)
    } else {
        b.to_string()
    }
}

pub(super) fn size(whole: &str, key: &str, v: &str) -> Result<u64> {
    parse_size(&format!("--machine {whole}"), v).map_err(|e| {
        HostError::with_fix(
            e.what,
            format!("give {key}SIZE as bytes or a number with K, M, G or T (powers of 1024), e.g. host:2G or host:1G,swap=2G"),
        )
    })
}
