//! The cache of bandwidth measurements, per directory, device and size.

use crate::error::Result;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::*;

/// Where a bandwidth came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provenance {
    /// Measured now; cached in this file (or not cached, with the reason).
    Measured(std::result::Result<PathBuf, String>),
    /// Reused from this cache file.
    Cached(PathBuf),
}

pub(super) const CACHE_FILE: &str = "host-bandwidth.json";

pub(super) fn cache_key(dir: &Path, mib: u64) -> Option<(String, String)> {
    let canon = fs::canonicalize(dir).ok()?;
    let dev = fs::metadata(&canon).ok()?.dev();
    Some((
        canon.to_string_lossy().into_owned(),
        format!("{}:{}:{mib}", libc::major(dev), libc::minor(dev)),
    ))
}

pub(super) fn cache_lookup(
    file: &Path,
    dir: &str,
    key: &str,
    now: u64,
    max_age: u64,
) -> Option<Bandwidth> {
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(file).ok()?).ok()?;
    v.get("entries")?.as_array()?.iter().find_map(|e| {
        if e.get("dir")?.as_str()? != dir || e.get("key")?.as_str()? != key {
            return None;
        }
        let when = e.get("when_unix")?.as_u64()?;
        if when > now || now - when > max_age {
            return None;
        }
        Some(Bandwidth {
            write_mb_s: e.get("write_mb_s")?.as_f64()?,
            read_mb_s: e.get("read_mb_s")?.as_f64()?,
            read_measured: e.get("read_measured")?.as_bool()?,
            mib: e.get("mib")?.as_u64()?,
            when_unix: when,
            // An entry from before latencies were measured is a miss (`?`):
            // the device is measured again rather than given defaults.
            latency: match e.get("latency")? {
                serde_json::Value::Null => None,
                l => Some(Latency {
                    seq_4k_us: l.get("seq_4k_us")?.as_f64()?,
                    rand_4k_us: l.get("rand_4k_us")?.as_f64()?,
                }),
            },
            // Likewise an entry from before the direct bandwidths.
            direct: match e.get("direct")? {
                serde_json::Value::Null => None,
                d => Some(Direct {
                    write_mb_s: d.get("write_mb_s")?.as_f64()?,
                    read_mb_s: d.get("read_mb_s")?.as_f64(),
                }),
            },
        })
    })
}

pub(super) fn cache_store(
    file: &Path,
    dir: &str,
    key: &str,
    bw: &Bandwidth,
    max_age: u64,
) -> std::io::Result<()> {
    let now = bw.when_unix;
    let mut entries: Vec<serde_json::Value> = fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("entries").and_then(|e| e.as_array()).cloned())
        .unwrap_or_default();
    entries.retain(|e| {
        let same = e.get("dir").and_then(|d| d.as_str()) == Some(dir)
            && e.get("key").and_then(|k| k.as_str()) == Some(key);
        let fresh = e
            .get("when_unix")
            .and_then(|w| w.as_u64())
            .is_some_and(|w| w <= now && now - w <= max_age);
        !same && fresh
    });
    entries.push(serde_json::json!({
        "dir": dir,
        "key": key,
        "date": utc_date(now),
        "when_unix": now,
        "mib": bw.mib,
        "write_mb_s": bw.write_mb_s,
        "read_mb_s": bw.read_mb_s,
        "read_measured": bw.read_measured,
        "latency": bw.latency.map(|l| serde_json::json!({
            "seq_4k_us": l.seq_4k_us,
            "rand_4k_us": l.rand_4k_us,
        })),
        "direct": bw.direct.map(|d| serde_json::json!({
            "write_mb_s": d.write_mb_s,
            "read_mb_s": d.read_mb_s,
        })),
    }));
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "what": "reclaimlab --machine host: bandwidth measurements, reused for a day; delete this file to measure again",
        "entries": entries,
    }))?;
    if let Some(parent) = file.parent() {
        fs::create_dir_all(parent)?;
    }
    let tmp = file.with_extension(format!("json.{}", std::process::id()));
    fs::write(&tmp, text)?;
    fs::rename(&tmp, file)
}

/// The bandwidth of the device under `dir`: a cached measurement if one is
/// fresh enough, else measured now (and cached).
pub fn bandwidth(dir: &Path, opts: &MeasureOptions) -> Result<(Bandwidth, Provenance)> {
    let key = cache_key(dir, opts.mib);
    let file = opts.cache_dir.as_ref().map(|d| d.join(CACHE_FILE));
    let now = now_unix();
    if let (Some(f), Some((d, k))) = (&file, &key) {
        if let Some(bw) = cache_lookup(f, d, k, now, opts.max_age_s) {
            return Ok((bw, Provenance::Cached(f.clone())));
        }
    }
    let bw = measure(dir, opts.mib)?;
    let stored = match (&file, &key) {
        (Some(f), Some((d, k))) => cache_store(f, d, k, &bw, opts.max_age_s)
            .map(|_| f.clone())
            .map_err(|e| format!("cannot write the cache {}: {e}", f.display())),
        (None, _) => Err("no cache directory ($XDG_CACHE_HOME and $HOME unset)".into()),
        (_, None) => Err(format!("cannot identify {} for the cache", dir.display())),
    };
    Ok((bw, Provenance::Measured(stored)))
}
