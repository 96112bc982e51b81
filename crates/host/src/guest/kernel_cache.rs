//! The kernel cache: Debian kernel packages fetched through apt, kept by exact
//! version, and the modules a guest must load by hand.
//!
//! The archive is the one the host's own apt sources name (no host name is
//! written here): [`archive_of`] finds the Debian archive entry among the
//! system's sources, and [`sources_line`] points a *private* apt state (its own
//! `sources.list`, lists and cache under the cache directory, passed with
//! `-o Dir::…`) at the suite that ships the series, so the host's apt state is
//! never touched. A package is downloaded once (`apt-get download PKG=VER`) into
//! `debs/`, unpacked with `dpkg-deb -x` into `kernels/PKG_VER/`, and marked
//! complete only after unpacking, so an interrupted fetch is redone.
//!
//! The `.deb` ships no `modules.dep` (depmod runs at install), so the load
//! order of the few modules a guest needs is worked out here from each
//! module's own `.modinfo` `depends=` string ([`modinfo_depends`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{HostError, Result};
use crate::guest::spec::{KernelSpec, DEBIAN_SERIES};
use crate::sys;

/// One entry of the system's apt sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptSource {
    /// The archive URI.
    pub uri: String,
    /// Its suites (`bookworm`, `bookworm-updates`).
    pub suites: Vec<String>,
    /// Its components (`main`).
    pub components: Vec<String>,
    /// The keyring (`Signed-By`), if named.
    pub signed_by: Option<String>,
}

/// Parses apt sources: deb822 stanzas (`*.sources`) and one-line
/// `deb [opts] URI SUITE COMP...` entries (`*.list`). `deb-src` is skipped.
pub fn parse_sources(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    let mut stanza: BTreeMap<String, String> = BTreeMap::new();
    let flush = |st: &mut BTreeMap<String, String>, out: &mut Vec<AptSource>| {
        let types = st.get("types").cloned().unwrap_or_default();
        let enabled = st.get("enabled").is_none_or(|e| e != "no");
        if types.split_whitespace().any(|t| t == "deb") && enabled {
            for uri in st
                .get("uris")
                .map(|s| s.as_str())
                .unwrap_or("")
                .split_whitespace()
            {
                out.push(AptSource {
                    uri: uri.trim_end_matches('/').to_string(),
                    suites: words(st.get("suites")),
                    components: words(st.get("components")),
                    signed_by: st.get("signed-by").cloned(),
                });
            }
        }
        st.clear();
    };
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('#') {
            continue;
        }
        if l.is_empty() {
            flush(&mut stanza, &mut out);
            continue;
        }
        if let Some(rest) = l.strip_prefix("deb ") {
            out.extend(parse_one_line(rest));
            continue;
        }
        if let Some((k, v)) = l.split_once(':') {
            if !k.contains(' ') {
                stanza.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    flush(&mut stanza, &mut out);
    out
}

fn words(s: Option<&String>) -> Vec<String> {
    s.map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn parse_one_line(rest: &str) -> Option<AptSource> {
    let mut rest = rest.trim();
    let mut signed_by = None;
    if let Some(r) = rest.strip_prefix('[') {
        let (opts, after) = r.split_once(']')?;
        for o in opts.split_whitespace() {
            if let Some(v) = o.strip_prefix("signed-by=") {
                signed_by = Some(v.to_string());
            }
        }
        rest = after.trim();
    }
    let mut it = rest.split_whitespace();
    let uri = it.next()?.trim_end_matches('/').to_string();
    let suite = it.next()?.to_string();
    Some(AptSource {
        uri,
        suites: vec![suite],
        components: it.map(str::to_string).collect(),
        signed_by,
    })
}

/// The Debian archive among `sources`: the first entry with component `main`
/// whose suites include a plain Debian release name (not `-security` or
/// `-updates`), so a security mirror or a third-party repository is never chosen.
pub fn archive_of(sources: &[AptSource]) -> Option<&AptSource> {
    sources.iter().find(|s| {
        s.components.iter().any(|c| c == "main")
            && s.suites
                .iter()
                .any(|su| DEBIAN_SERIES.iter().any(|(_, name)| name == su))
    })
}

/// The `sources.list` line of the private apt state for `suite` of `archive`.
pub fn sources_line(archive: &AptSource, suite: &str) -> String {
    match &archive.signed_by {
        Some(k) => format!("deb [signed-by={k}] {} {suite} main\n", archive.uri),
        None => format!("deb {} {suite} main\n", archive.uri),
    }
}

/// The package `linux-image-amd64` depends on in `apt-cache depends` output.
pub fn parse_meta_depends(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let d = l.trim().strip_prefix("Depends:")?.trim();
        (d.starts_with("linux-image-") && d != "linux-image-amd64").then(|| d.to_string())
    })
}

/// The `Version:` of `apt-cache show` output.
pub fn parse_version(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| Some(l.strip_prefix("Version:")?.trim().to_string()))
}

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct KernelFiles {
    /// What was asked for.
    pub spec: KernelSpec,
    /// `uname -r` of the kernel (the modules directory's name).
    pub release: String,
    /// The package and exact version (`linux-image-…_5.10.223-1`), or the path.
    pub source: String,
    /// The kernel image.
    pub vmlinuz: PathBuf,
    /// `lib/modules/<release>`.
    pub modules: Option<PathBuf>,
    /// The kernel's config, if shipped.
    pub config: Option<PathBuf>,
}

/// The cache directory: `$XDG_CACHE_HOME/reclaimlab`, else `~/.cache/reclaimlab`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("reclaimlab");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/reclaimlab")
}

fn run_tool(cmd: &mut Command, what: &str, fix: &str) -> Result<String> {
    let out = cmd
        .output()
        .map_err(|e| HostError::with_fix(format!("cannot run {what}: {e}"), fix))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(4).collect();
        return Err(HostError::with_fix(
            format!(
                "{what} failed ({}): {}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ),
            fix,
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Makes a kernel ready: fetches and unpacks a Debian one (cached), or checks a path.
pub fn prepare(spec: &KernelSpec, cache: &Path, refresh: bool) -> Result<KernelFiles> {
    match spec {
        KernelSpec::Debian { series, suite } => fetch_debian(spec, series, suite, cache, refresh),
        KernelSpec::Path { vmlinuz, modules } => from_path(spec, vmlinuz, modules.as_deref()),
    }
}

fn from_path(spec: &KernelSpec, vmlinuz: &Path, modules: Option<&Path>) -> Result<KernelFiles> {
    if !vmlinuz.is_file() {
        return Err(HostError::with_fix(
            format!("--kernel {}: no such file", vmlinuz.display()),
            "give the path of a bzImage/vmlinuz, or debian:5.10 / debian:6.1",
        ));
    }
    let mut release = None;
    let mut mods = None;
    if let Some(m) = modules {
        let lm = m.join("lib/modules");
        let dir = if lm.is_dir() {
            fs::read_dir(&lm)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| e.ok())
                .map(|e| e.path())
        } else if m.join("kernel").is_dir() || m.join("modules.order").is_file() {
            Some(m.to_path_buf())
        } else {
            None
        };
        let dir = dir.ok_or_else(|| {
            HostError::with_fix(
                format!(
                    "--kernel …:{}: holds neither lib/modules/RELEASE nor a modules tree",
                    m.display()
                ),
                "give the directory you passed to `make modules_install INSTALL_MOD_PATH=DIR`",
            )
        })?;
        release = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        mods = Some(dir);
    }
    let config = vmlinuz
        .parent()
        .map(|p| p.join(".config"))
        .filter(|c| c.is_file());
    Ok(KernelFiles {
        spec: spec.clone(),
        release: release.unwrap_or_else(|| "unknown".into()),
        source: vmlinuz.display().to_string(),
        vmlinuz: vmlinuz.to_path_buf(),
        modules: mods,
        config,
    })
}

/// The `-o` options of the private apt state in `dir`.
fn apt_opts(dir: &Path) -> Vec<String> {
    let d = dir.display();
    vec![
        format!("-oDir::Etc::SourceList={d}/sources.list"),
        "-oDir::Etc::SourceParts=/dev/null".into(),
        format!("-oDir::State::Lists={d}/lists"),
        format!("-oDir::Cache={d}/cache"),
        "-oDir::State::Status=/dev/null".into(),
        "-oAcquire::IndexTargets::deb::DEP-11::DefaultEnabled=false".into(),
        "-oAcquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false".into(),
        "-oAPT::Sandbox::User=root".into(),
        "-qq".into(),
    ]
}

fn system_sources() -> String {
    let mut text = fs::read_to_string("/etc/apt/sources.list").unwrap_or_default();
    text.push('\n');
    let mut files: Vec<PathBuf> = fs::read_dir("/etc/apt/sources.list.d")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for f in files {
        let n = f.to_string_lossy();
        if n.ends_with(".sources") || n.ends_with(".list") {
            text.push_str(&fs::read_to_string(&f).unwrap_or_default());
            text.push('\n');
        }
    }
    text
}

fn fetch_debian(
    spec: &KernelSpec,
    series: &str,
    suite: &str,
    cache: &Path,
    refresh: bool,
) -> Result<KernelFiles> {
    for tool in ["apt-get", "apt-cache", "dpkg-deb"] {
        if sys::which(tool).is_none() {
            return Err(HostError::with_fix(
                format!("--kernel debian:{series}: {tool} not found; Debian kernels are fetched with apt"),
                "run on a Debian/Ubuntu host, or give a kernel you built: --kernel path/to/bzImage:MODULES_DIR",
            ));
        }
    }
    let srcs = parse_sources(&system_sources());
    let archive = archive_of(&srcs).ok_or_else(|| {
        HostError::with_fix(
            "no Debian archive among the apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d): cannot tell where to fetch Debian kernels from",
            "add a Debian mirror to the apt sources, or give a kernel you built: --kernel path/to/bzImage",
        )
    })?;
    let apt = cache.join(format!("apt-{suite}"));
    for d in ["lists/partial", "cache/archives/partial"] {
        fs::create_dir_all(apt.join(d))
            .map_err(|e| HostError::io("cannot create", &apt.join(d), e))?;
    }
    let list = apt.join("sources.list");
    let line = sources_line(archive, suite);
    let stale = fs::read_to_string(&list).ok().as_deref() != Some(line.as_str());
    let no_lists = fs::read_dir(apt.join("lists"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().is_file())
                .count()
                == 0
        })
        .unwrap_or(true);
    fs::write(&list, &line).map_err(|e| HostError::io("cannot write", &list, e))?;
    let opts = apt_opts(&apt);
    if stale || no_lists || refresh {
        eprintln!(
            "reclaimlab run: apt: updating the package lists of {suite} ({})",
            archive.uri
        );
        run_tool(
            Command::new("apt-get").args(&opts).arg("update"),
            &format!("apt-get update for {suite} (sources {})", list.display()),
            "check the network and the mirror; the lists are kept under the cache directory",
        )?;
    }
    let deps = run_tool(
        Command::new("apt-cache")
            .args(&opts)
            .args(["depends", "linux-image-amd64"]),
        &format!("apt-cache depends linux-image-amd64 ({suite})"),
        "run again with --refresh-kernels to update the package lists",
    )?;
    let pkg = parse_meta_depends(&deps).ok_or_else(|| {
        HostError::with_fix(
            format!("{suite}: linux-image-amd64 depends on no linux-image package; the archive does not serve debian:{series}"),
            "choose another series, or --refresh-kernels",
        )
    })?;
    let show = run_tool(
        Command::new("apt-cache")
            .args(&opts)
            .args(["show", "--no-all-versions", &pkg]),
        &format!("apt-cache show {pkg}"),
        "run again with --refresh-kernels",
    )?;
    let version = parse_version(&show)
        .ok_or_else(|| HostError::new(format!("apt-cache show {pkg}: no Version field")))?;
    let release = pkg.trim_start_matches("linux-image-").to_string();
    let key = format!("{pkg}_{version}");
    let dir = cache.join("kernels").join(&key);
    // Last use, for pruning (guest::cache).
    super::cache::touch(&dir.join(".complete"));
    if !dir.join(".complete").is_file() {
        let debs = cache.join("debs");
        fs::create_dir_all(&debs).map_err(|e| HostError::io("cannot create", &debs, e))?;
        let deb = debs.join(format!("{pkg}_{}_amd64.deb", version.replace(':', "%3a")));
        if !deb.is_file() {
            eprintln!(
                "reclaimlab run: apt: downloading {pkg} {version} into {}",
                debs.display()
            );
            run_tool(
                Command::new("apt-get")
                    .current_dir(&debs)
                    .args(&opts)
                    .args(["download", &format!("{pkg}={version}")]),
                &format!("apt-get download {pkg}={version}"),
                "check the network; `--refresh-kernels` if the archive moved on",
            )?;
        }
        let _ = fs::remove_dir_all(&dir);
        let part = dir.with_extension("partial");
        let _ = fs::remove_dir_all(&part);
        fs::create_dir_all(&part).map_err(|e| HostError::io("cannot create", &part, e))?;
        run_tool(
            Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&part),
            &format!("dpkg-deb -x {}", deb.display()),
            format!("remove {} and run again", deb.display()).as_str(),
        )?;
        fs::write(part.join(".complete"), format!("{key}\n"))
            .map_err(|e| HostError::io("cannot write", &part, e))?;
        fs::rename(&part, &dir).map_err(|e| HostError::io("cannot rename", &part, e))?;
    }
    let vmlinuz = dir.join(format!("boot/vmlinuz-{release}"));
    if !vmlinuz.is_file() {
        return Err(HostError::with_fix(
            format!(
                "{}: no boot/vmlinuz-{release} in the unpacked package",
                dir.display()
            ),
            format!("remove {} and run again", dir.display()),
        ));
    }
    let config = Some(dir.join(format!("boot/config-{release}"))).filter(|c| c.is_file());
    Ok(KernelFiles {
        spec: spec.clone(),
        source: format!("{pkg} {version}"),
        modules: Some(dir.join(format!("lib/modules/{release}"))),
        release,
        vmlinuz,
        config,
    })
}

/// A module's dependencies, from the `depends=` string of its `.modinfo`
/// section (the same string depmod reads), names normalised to `_`.
pub fn modinfo_depends(ko: &[u8]) -> Vec<String> {
    let pat = b"depends=";
    let Some(i) = memchr_find(ko, pat) else {
        return Vec::new();
    };
    let rest = &ko[i + pat.len()..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .map(|s| s.trim().replace('-', "_"))
        .filter(|s| !s.is_empty())
        .collect()
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    // `depends=` sits right after a NUL in .modinfo; requiring it avoids a match
    // inside some other string.
    hay.windows(needle.len() + 1)
        .position(|w| w[0] == 0 && &w[1..] == needle)
        .map(|p| p + 1)
}

/// Every `.ko` under `modules`, by normalised name.
pub fn module_index(modules: &Path) -> BTreeMap<String, PathBuf> {
    let mut idx = BTreeMap::new();
    let mut stack = vec![modules.join("kernel")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".ko"))
            {
                idx.insert(n.replace('-', "_"), p.clone());
            }
        }
    }
    idx
}

/// The load order of `wanted` and their dependencies (dependencies first);
/// `deps_of` gives a module's dependencies. Modules not in `index` (built in,
/// or absent: optional ones) are skipped; an absent module of `required` is an error.
pub fn load_order(
    wanted: &[&str],
    required: &[&str],
    index: &BTreeMap<String, PathBuf>,
    deps_of: &dyn Fn(&Path) -> Vec<String>,
) -> std::result::Result<Vec<PathBuf>, String> {
    fn visit(
        n: &str,
        index: &BTreeMap<String, PathBuf>,
        deps_of: &dyn Fn(&Path) -> Vec<String>,
        out: &mut Vec<PathBuf>,
        seen: &mut Vec<String>,
    ) {
        if seen.iter().any(|s| s == n) {
            return;
        }
        seen.push(n.to_string());
        if let Some(p) = index.get(n) {
            for d in deps_of(p) {
                visit(&d, index, deps_of, out, seen);
            }
            out.push(p.clone());
        }
    }
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for w in wanted {
        visit(w, index, deps_of, &mut out, &mut seen);
    }
    Ok(out).and_then(|o| {
        for r in required {
            if !index.contains_key(*r) {
                return Err(format!("module {r} not found"));
            }
        }
        Ok(o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEB822: &str = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n\
        URIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\
        Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n\
        Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n";

    #[test]
    fn archive_is_taken_from_the_system_sources() {
        let text = format!("deb https://packages.example/apt cloud-sdk main\n{DEB822}");
        let s = parse_sources(&text);
        assert_eq!(s.len(), 3);
        let a = archive_of(&s).unwrap();
        assert_eq!(a.uri, "http://mirror.example/debian");
        assert_eq!(
            sources_line(a, "bullseye"),
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian bullseye main\n"
        );
    }

    #[test]
    fn one_line_sources_and_no_archive() {
        let s = parse_sources("deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian/ bullseye main contrib\ndeb-src http://x y main\n");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].signed_by.as_deref(), Some("/k.gpg"));
        assert_eq!(s[0].uri, "http://m.example/debian");
        assert!(archive_of(&parse_sources("deb http://ppa.example/x jammy main\n")).is_none());
        let disabled =
            "Types: deb\nURIs: http://m/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n";
        assert!(parse_sources(disabled).is_empty());
    }

    #[test]
    fn apt_output_is_parsed() {
        let deps = "linux-image-amd64\n  Depends: linux-image-5.10.0-32-amd64\n";
        assert_eq!(
            parse_meta_depends(deps).unwrap(),
            "linux-image-5.10.0-32-amd64"
        );
        assert_eq!(
            parse_version("Package: x\nVersion: 5.10.223-1\nSize: 1\n").unwrap(),
            "5.10.223-1"
        );
        assert!(parse_meta_depends("linux-image-amd64\n").is_none());
    }

    #[test]
    fn modinfo_depends_and_order() {
        let ko = b"\x7fELF...\0license=GPL\0depends=jbd2,mbcache,crc16\0vermagic=5.10\0";
        assert_eq!(modinfo_depends(ko), vec!["jbd2", "mbcache", "crc16"]);
        assert!(modinfo_depends(b"\0license=GPL\0depends=\0").is_empty());
        let mut idx = BTreeMap::new();
        for n in [
            "ext4",
            "jbd2",
            "mbcache",
            "crc16",
            "virtio_blk",
            "virtio",
            "virtio_ring",
        ] {
            idx.insert(n.to_string(), PathBuf::from(format!("{n}.ko")));
        }
        let deps = |p: &Path| -> Vec<String> {
            match p.to_str().unwrap() {
                "ext4.ko" => vec!["jbd2".into(), "mbcache".into(), "crc16".into()],
                "jbd2.ko" => vec!["crc16".into()],
                "virtio_blk.ko" => vec!["virtio".into(), "virtio_ring".into()],
                _ => vec![],
            }
        };
        let o = load_order(
            &["virtio_blk", "ext4", "crc32c_generic"],
            &["ext4"],
            &idx,
            &deps,
        )
        .unwrap();
        let names: Vec<&str> = o.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "virtio.ko",
                "virtio_ring.ko",
                "virtio_blk.ko",
                "crc16.ko",
                "jbd2.ko",
                "mbcache.ko",
                "ext4.ko"
            ]
        );
        assert!(load_order(&["ext4"], &["nvme"], &idx, &deps).is_err());
    }
}
