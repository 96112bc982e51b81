//! The guest cache, bounded: what `run --kernel` keeps under its cache
//! directory, how much disk each part takes, and pruning.
//!
//! Every rebuilt `reclaimlab` binary makes a new tools disk (~130 MB on
//! disk, 300 MB sparse) and base initramfs, and a new Debian kernel ABI a new
//! unpacked kernel (~350 MB) and `.deb`; nothing removed them. Now:
//! - `run --kernel` prunes the tools images after preparing its own, keeping
//!   the `--cache-keep N` most recently used (default [`DEFAULT_KEEP_IMAGES`]);
//! - `reclaimlab cache` lists the entries, and `reclaimlab cache --prune`
//!   applies `--keep N` and, with `--max-size SIZE`, removes the least
//!   recently used entries (images, kernels with their `.deb`, per-kernel
//!   initramfs parts) until the cache fits.
//!
//! "Used" is the file's mtime: a guest run touches the image, kernel and
//! initramfs part it boots with (at each boot). An entry used within the
//! last [`IN_USE_S`] is never removed (another guest run may be about to
//! read it), nor is a `keep` entry (the calling run's own). Leftovers of
//! interrupted builds (`stage-*`, `*.partial`) are always removed unless
//! that recent. The apt state (`apt-SUITE/`, a few MB, needed to name the
//! kernel versions) is listed and never removed.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{human_bytes, HostError, Result};

/// Tools images kept by `run --kernel`'s automatic pruning.
pub const DEFAULT_KEEP_IMAGES: usize = 2;

/// Entries used more recently than this are never pruned, seconds.
pub const IN_USE_S: u64 = 3600;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A tools disk and its base initramfs, for one `reclaimlab` binary.
    Image,
    /// An unpacked kernel package and its `.deb`.
    Kernel,
    /// A kernel's initramfs part (its modules and config).
    KernelPart,
    /// A leftover of an interrupted build or unpack.
    Leftover,
    /// A private apt state (never pruned).
    Apt,
}

impl Kind {
    /// The name in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Kernel => "kernel",
            Kind::KernelPart => "kernel-initramfs",
            Kind::Leftover => "leftover",
            Kind::Apt => "apt-state",
        }
    }
}

/// One cache entry: the files that go together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: Kind,
    /// Its name (the key, the package and version).
    pub name: String,
    /// Its files and directories.
    pub paths: Vec<PathBuf>,
    /// Disk space used (allocated blocks, so sparse images count as stored).
    pub bytes: u64,
    /// Last use: the newest mtime of its marker files.
    pub used: SystemTime,
}

fn disk_usage(p: &Path) -> u64 {
    let Ok(m) = fs::symlink_metadata(p) else {
        return 0;
    };
    let own = m.blocks() * 512;
    if !m.is_dir() {
        return own;
    }
    own + fs::read_dir(p)
        .map(|d| d.flatten().map(|e| disk_usage(&e.path())).sum::<u64>())
        .unwrap_or(0)
}

fn mtime(p: &Path) -> SystemTime {
    fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Marks `path` as used now (its mtime); errors are ignored (a read-only
/// cache still works, it is only pruned sooner).
pub fn touch(path: &Path) {
    if let Ok(f) = fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// The entries of the cache at `cache` (empty if it does not exist), sorted
/// by kind and name.
pub fn list(cache: &Path) -> Vec<Entry> {
    let mut v = Vec::new();
    let names = |d: &Path| -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        n.sort();
        n
    };
    let entry = |kind, name: &str, paths: Vec<PathBuf>, markers: &[PathBuf]| Entry {
        kind,
        name: name.to_string(),
        bytes: paths.iter().map(|p| disk_usage(p)).sum(),
        used: markers
            .iter()
            .map(|p| mtime(p))
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH),
        paths,
    };
    let images = cache.join("images");
    for n in names(&images) {
        let p = images.join(&n);
        if let Some(key) = n
            .strip_prefix("tools-")
            .and_then(|k| k.strip_suffix(".img"))
        {
            let base = images.join(format!("base-{key}.cpio.gz"));
            let mut paths = vec![p.clone()];
            if base.exists() {
                paths.push(base.clone());
            }
            v.push(entry(Kind::Image, key, paths, &[p, base]));
        } else if let Some(key) = n
            .strip_prefix("base-")
            .and_then(|k| k.strip_suffix(".cpio.gz"))
        {
            // A base without its tools disk: a build that stopped half-way.
            if !images.join(format!("tools-{key}.img")).exists() {
                v.push(entry(Kind::Leftover, &n, vec![p.clone()], &[p]));
            }
        } else if n.starts_with("kernel-") && n.ends_with(".cpio.gz") {
            v.push(entry(Kind::KernelPart, &n, vec![p.clone()], &[p]));
        } else if n.starts_with("stage-") {
            v.push(entry(Kind::Leftover, &n, vec![p.clone()], &[p]));
        }
    }
    let kernels = cache.join("kernels");
    let debs = cache.join("debs");
    let deb_names = names(&debs);
    for n in names(&kernels) {
        let p = kernels.join(&n);
        if n.ends_with(".partial") {
            v.push(entry(Kind::Leftover, &n, vec![p.clone()], &[p]));
            continue;
        }
        let mut paths = vec![p.clone()];
        paths.extend(
            deb_names
                .iter()
                .filter(|d| deb_key(d).as_deref() == Some(n.as_str()))
                .map(|d| debs.join(d)),
        );
        v.push(entry(Kind::Kernel, &n, paths, &[p.join(".complete")]));
    }
    // A .deb whose kernel was never unpacked (or was removed by hand).
    for d in &deb_names {
        if deb_key(d).is_none_or(|k| !kernels.join(&k).exists()) {
            let p = debs.join(d);
            v.push(entry(Kind::Leftover, d, vec![p.clone()], &[p]));
        }
    }
    for n in names(cache) {
        if n.starts_with("apt-") {
            let p = cache.join(&n);
            v.push(entry(Kind::Apt, &n, vec![p.clone()], &[p]));
        }
    }
    v.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    v
}

/// The kernel key (`PKG_VERSION`) of a `.deb` name as `apt-get download` writes it.
fn deb_key(deb: &str) -> Option<String> {
    deb.strip_suffix("_amd64.deb")
        .map(|k| k.replace("%3a", ":"))
}

/// How to prune.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Tools images kept, most recently used first (`None`: no limit).
    pub keep_images: Option<usize>,
    /// Total size the cache is brought under, by least recent use.
    pub max_bytes: Option<u64>,
    /// Paths never removed, with the entries holding them (the calling
    /// run's own files).
    pub keep: Vec<PathBuf>,
    /// Entries used within this long are never removed.
    pub in_use: Duration,
}

/// Which entries `policy` removes, at time `now` (pure: nothing is removed).
pub fn plan(entries: &[Entry], policy: &Policy, now: SystemTime) -> Vec<Entry> {
    let protected = |e: &Entry| {
        e.kind == Kind::Apt
            || e.paths
                .iter()
                .any(|p| policy.keep.iter().any(|k| k.starts_with(p)))
            || now.duration_since(e.used).unwrap_or_default() < policy.in_use
    };
    let mut gone: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.kind == Kind::Leftover && !protected(e))
        .collect();
    if let Some(n) = policy.keep_images {
        let mut images: Vec<&Entry> = entries.iter().filter(|e| e.kind == Kind::Image).collect();
        images.sort_by(|a, b| b.used.cmp(&a.used).then(a.name.cmp(&b.name)));
        // The kept ones count towards N even when protected for another reason.
        gone.extend(images.into_iter().skip(n).filter(|e| !protected(e)));
    }
    if let Some(max) = policy.max_bytes {
        let mut total: u64 = entries
            .iter()
            .filter(|e| !gone.contains(e))
            .map(|e| e.bytes)
            .sum();
        let mut lru: Vec<&Entry> = entries
            .iter()
            .filter(|e| !gone.contains(e) && !protected(e))
            .collect();
        lru.sort_by(|a, b| a.used.cmp(&b.used).then(a.name.cmp(&b.name)));
        for e in lru {
            if total <= max {
                break;
            }
            total = total.saturating_sub(e.bytes);
            gone.push(e);
        }
    }
    let mut out: Vec<Entry> = gone.into_iter().cloned().collect();
    out.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    out.dedup();
    out
}

/// Removes the entries of [`plan`]; returns them.
pub fn prune(cache: &Path, policy: &Policy) -> Result<Vec<Entry>> {
    let gone = plan(&list(cache), policy, SystemTime::now());
    for e in &gone {
        for p in &e.paths {
            let r = if p.is_dir() {
                fs::remove_dir_all(p)
            } else {
                fs::remove_file(p)
            };
            match r {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(HostError::with_fix(
                        format!("cannot remove {} from the guest cache: {err}", p.display()),
                        format!(
                            "remove it by hand, or check the permissions of {}",
                            cache.display()
                        ),
                    ))
                }
            }
        }
    }
    Ok(gone)
}

/// `run --kernel`'s pruning after it prepared its kernels and image: keeps
/// the `keep_images` most recently used images and everything holding a
/// `keep` path. Returns what to tell the user (`None`: nothing removed).
pub fn auto_prune(cache: &Path, keep_images: usize, keep: Vec<PathBuf>) -> Option<String> {
    let policy = Policy {
        keep_images: Some(keep_images),
        max_bytes: None,
        keep,
        in_use: Duration::from_secs(IN_USE_S),
    };
    match prune(cache, &policy) {
        Ok(gone) if gone.is_empty() => None,
        Ok(gone) => Some(format!(
            "cache: removed {} ({}) from {}, keeping the {keep_images} most recently used image(s) (--cache-keep; `reclaimlab cache` lists the rest)",
            gone.iter()
                .map(|e| format!("{} {}", e.kind.as_str(), e.name))
                .collect::<Vec<_>>()
                .join(", "),
            human_bytes(gone.iter().map(|e| e.bytes).sum()),
            cache.display()
        )),
        Err(e) => Some(format!("cache: not pruned: {e}")),
    }
}

/// One line per entry for `reclaimlab cache`: kind, name, size, last use.
pub fn describe(e: &Entry, now: SystemTime) -> String {
    let age = now.duration_since(e.used).unwrap_or_default().as_secs();
    let ago = match age {
        0..=59 => format!("{age} s ago"),
        60..=3599 => format!("{} min ago", age / 60),
        3600..=172_799 => format!("{:.1} h ago", age as f64 / 3600.0),
        _ => format!("{} days ago", age / 86_400),
    };
    format!(
        "{:<17} {:<48} {:>10}  used {ago}",
        e.kind.as_str(),
        e.name,
        human_bytes(e.bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("reclaimlab-cache-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn file(p: &Path, bytes: usize, age_s: u64) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, vec![1u8; bytes]).unwrap();
        let f = fs::File::options().append(true).open(p).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(age_s))
            .unwrap();
    }

    /// A cache as `run --kernel` leaves it: three images of different ages,
    /// two kernels (one with its .deb), a kernel part, a stale stage dir, a
    /// stray .deb and an apt state.
    fn fixture(tag: &str) -> PathBuf {
        let c = tmp(tag);
        let day = 86_400;
        for (key, age) in [("aaaa", 3 * day), ("bbbb", 2 * day), ("cccc", 60)] {
            file(&c.join(format!("images/tools-{key}.img")), 40_000, age);
            file(&c.join(format!("images/base-{key}.cpio.gz")), 4_000, age);
        }
        file(
            &c.join("images/kernel-6.1.0-50-amd64-1234.cpio.gz"),
            8_000,
            5 * day,
        );
        fs::create_dir_all(c.join("images/stage-dddd-99")).unwrap();
        let k1 = c.join("kernels/linux-image-5.10.0-32-amd64_5.10.223-1");
        file(&k1.join("boot/vmlinuz"), 100_000, 0);
        file(&k1.join(".complete"), 10, 4 * day);
        file(
            &c.join("debs/linux-image-5.10.0-32-amd64_5.10.223-1_amd64.deb"),
            50_000,
            4 * day,
        );
        let k2 = c.join("kernels/linux-image-6.1.0-50-amd64_6.1.176-1");
        file(&k2.join("boot/vmlinuz"), 100_000, 0);
        file(&k2.join(".complete"), 10, 2 * day);
        file(
            &c.join("debs/linux-image-6.1.0-1-amd64_6.1.1-1_amd64.deb"),
            30_000,
            9 * day,
        );
        file(&c.join("apt-bookworm/sources.list"), 100, 9 * day);
        c
    }

    #[test]
    fn lists_entries_by_kind_with_sizes() {
        let c = fixture("list");
        let l = list(&c);
        let kinds: Vec<(Kind, &str)> = l.iter().map(|e| (e.kind, e.name.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (Kind::Image, "aaaa"),
                (Kind::Image, "bbbb"),
                (Kind::Image, "cccc"),
                (Kind::Kernel, "linux-image-5.10.0-32-amd64_5.10.223-1"),
                (Kind::Kernel, "linux-image-6.1.0-50-amd64_6.1.176-1"),
                (Kind::KernelPart, "kernel-6.1.0-50-amd64-1234.cpio.gz"),
                (
                    Kind::Leftover,
                    "linux-image-6.1.0-1-amd64_6.1.1-1_amd64.deb"
                ),
                (Kind::Leftover, "stage-dddd-99"),
                (Kind::Apt, "apt-bookworm"),
            ]
        );
        // An image is its tools disk and base; a kernel its dir and its .deb.
        assert_eq!(l[0].paths.len(), 2);
        assert!(l[0].bytes >= 44_000, "{}", l[0].bytes);
        assert_eq!(l[3].paths.len(), 2);
        assert!(l[3].bytes >= 150_000, "{}", l[3].bytes);
        assert_eq!(l[4].paths.len(), 1);
        // Last use of a kernel is its .complete marker, not its files.
        let age = SystemTime::now()
            .duration_since(l[3].used)
            .unwrap()
            .as_secs();
        assert!((4 * 86_400 - 60..4 * 86_400 + 60).contains(&age), "{age}");
        assert!(describe(&l[0], SystemTime::now()).contains("3 days ago"));
        assert!(list(&c.join("nonexistent")).is_empty());
        fs::remove_dir_all(&c).unwrap();
    }

    #[test]
    fn keeps_the_newest_images_and_never_recent_or_kept_ones() {
        let c = fixture("keep");
        let l = list(&c);
        let now = SystemTime::now();
        let names = |v: Vec<Entry>| v.into_iter().map(|e| e.name).collect::<Vec<_>>();
        let p = Policy {
            keep_images: Some(1),
            in_use: Duration::from_secs(IN_USE_S),
            ..Policy::default()
        };
        // The newest image stays; the two older go, with the leftovers (the
        // stage dir is fresh: protected as maybe in use).
        assert_eq!(
            names(plan(&l, &p, now)),
            vec![
                "aaaa",
                "bbbb",
                "linux-image-6.1.0-1-amd64_6.1.1-1_amd64.deb"
            ]
        );
        // A run's own image is kept even when older than N others.
        let p2 = Policy {
            keep: vec![c.join("images/tools-aaaa.img")],
            ..p.clone()
        };
        assert_eq!(names(plan(&l, &p2, now))[0], "bbbb");
        // Nothing asked: only leftovers.
        let p3 = Policy {
            in_use: Duration::from_secs(IN_USE_S),
            ..Policy::default()
        };
        assert_eq!(
            names(plan(&l, &p3, now)),
            vec!["linux-image-6.1.0-1-amd64_6.1.1-1_amd64.deb"]
        );
        fs::remove_dir_all(&c).unwrap();
    }

    #[test]
    fn a_size_cap_removes_least_recently_used_first() {
        let c = fixture("cap");
        let l = list(&c);
        let total: u64 = l.iter().map(|e| e.bytes).sum();
        let stray = l
            .iter()
            .find(|e| e.name.ends_with("6.1.1-1_amd64.deb"))
            .unwrap()
            .bytes;
        let now = SystemTime::now();
        let p = Policy {
            max_bytes: Some(total - stray - 1),
            in_use: Duration::from_secs(IN_USE_S),
            ..Policy::default()
        };
        // The stray .deb (a leftover, 9 days) goes anyway; the oldest entry
        // after it, the kernel part (5 days), then fits the cap.
        let g = plan(&l, &p, now);
        let names: Vec<&str> = g.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "kernel-6.1.0-50-amd64-1234.cpio.gz",
                "linux-image-6.1.0-1-amd64_6.1.1-1_amd64.deb"
            ]
        );
        // A cap of 0 removes everything but the apt state and what is in use.
        let p0 = Policy {
            max_bytes: Some(0),
            ..p
        };
        let g = plan(&l, &p0, now);
        assert!(g
            .iter()
            .all(|e| e.kind != Kind::Apt && e.name != "cccc" && e.name != "stage-dddd-99"));
        assert_eq!(g.len(), l.len() - 3, "{g:?}");
        // And prune removes exactly those.
        let removed = prune(&c, &p0).unwrap();
        assert_eq!(removed.len(), g.len());
        let left: Vec<String> = list(&c).into_iter().map(|e| e.name).collect();
        assert_eq!(left, vec!["cccc", "stage-dddd-99", "apt-bookworm"]);
        assert!(!c
            .join("debs/linux-image-5.10.0-32-amd64_5.10.223-1_amd64.deb")
            .exists());
        fs::remove_dir_all(&c).unwrap();
    }

    #[test]
    fn touch_marks_use() {
        let c = tmp("touch");
        let f = c.join("x");
        file(&f, 1, 86_400);
        touch(&f);
        assert!(
            SystemTime::now()
                .duration_since(mtime(&f))
                .unwrap()
                .as_secs()
                < 60
        );
        fs::remove_dir_all(&c).unwrap();
    }
}
