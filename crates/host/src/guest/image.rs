//! The guest's boot image: a small initramfs (busybox, `/init`, the kernel's
//! modules, the run's job script) and a read-only ext4 tools disk (this
//! `reclaimlab` binary, fio, and their shared libraries as `ldd` lists them).
//!
//! Why two parts: fio's libraries alone are ~80 MiB, and an initramfs stays in
//! the guest's RAM unreclaimable, which would distort a memory experiment; a
//! disk's files are ordinary page cache. The initramfs is three gzip'd cpio
//! archives concatenated (the kernel unpacks each in turn): the base (cached),
//! the kernel's modules (cached per release), and the run's job script.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::error::{HostError, Result};
use crate::sys;

/// One cpio entry: a directory, a file (mode, bytes) or a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpioEntry {
    /// A directory.
    Dir(String),
    /// A regular file with its permission bits.
    File(String, u32, Vec<u8>),
    /// A symlink `name -> target`.
    Symlink(String, String),
}

/// Writes `entries` as a cpio "newc" archive (the format the kernel's
/// initramfs unpacker reads, `init/initramfs.c`), with mtimes 0 so that the
/// same inputs give the same bytes.
pub fn cpio_newc(entries: &[CpioEntry]) -> Vec<u8> {
    fn header(out: &mut Vec<u8>, ino: u32, mode: u32, size: usize, name: &str) {
        let h = format!(
            "070701{ino:08X}{mode:08X}{:08X}{:08X}{:08X}{:08X}{size:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            0, 0, 1, 0, 0, 0, 0, 0, name.len() + 1, 0
        );
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let ino = i as u32 + 1;
        let (mode, name, data): (u32, &str, &[u8]) = match e {
            CpioEntry::Dir(n) => (0o040755, n, &[]),
            CpioEntry::File(n, m, d) => (0o100000 | m, n, d),
            CpioEntry::Symlink(n, t) => (0o120777, n, t.as_bytes()),
        };
        header(
            &mut out,
            ino,
            mode,
            data.len(),
            name.trim_start_matches('/'),
        );
        out.extend_from_slice(data);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
    header(&mut out, 0, 0, 0, "TRAILER!!!");
    out
}

/// gzip of a cpio archive.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

/// The guest's `/init`: mounts, loads the modules in `/mods` in name order
/// (the host numbered them in dependency order), finds the disks by their
/// virtio serial, mounts the tools disk, says `RECLAIMLAB-BOOTED`, then runs
/// `/job.sh` and powers off whatever happens.
pub fn init_script() -> String {
    r#"#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin:/tools/bin:/tools/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /sys/fs/cgroup /sys/kernel/tracing
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in memory cpu io; do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
for m in /mods/*.ko; do
  [ -e "$m" ] && { insmod "$m" 2>/dev/null || echo "reclaimlab-guest: insmod $m failed"; }
done
i=0
while [ $i -lt 50 ]; do
  for d in /sys/block/vd*; do
    [ -e "$d/serial" ] || continue
    s=$(cat "$d/serial"); eval "DISK_$s=/dev/${d##*/}"
  done
  [ -n "$DISK_results" ] && [ -n "$DISK_tools" ] && [ -b "$DISK_results" ] && break
  i=$((i+1)); sleep 0.2
done
mkdir -p /tools /data /ctl /out
mount -t ext4 -o ro,noload "$DISK_tools" /tools || echo "reclaimlab-guest: cannot mount the tools disk $DISK_tools"
echo "RECLAIMLAB-BOOTED $(uname -r)"
. /job.sh
echo "RECLAIMLAB-DONE"
poweroff -f
"#
    .to_string()
}

/// What the job script runs in the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Arguments of the positive control's `reclaimlab run` (empty: none).
    pub control_args: Vec<String>,
    /// The control's workload spec text, written to `/control.toml`.
    pub control_spec: String,
    /// Arguments of the workload's `reclaimlab run`.
    pub workload_args: Vec<String>,
    /// sysctls set before the control (in order), restored in reverse before the workload.
    pub control_sysctls: Vec<(String, String)>,
    /// A workload spec's text, written to `/workload.toml` (None: stutterp).
    pub workload_spec: Option<String>,
    /// Tracepoints the run asks for beyond [`crate::tracefs::RELEVANT_EVENTS`]
    /// (`--set capture.events=…`), as `subsystem:event`: probed in the
    /// guest's `available_events` with the others, so the host does not
    /// report a captured one as missing.
    pub extra_events: Vec<String>,
}

fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The tracepoints the guest's facts probe: the runner's own
/// ([`crate::tracefs::RELEVANT_EVENTS`]) and the run's extra ones that look
/// like `subsystem:event` (lower-case letters, digits, `_`), each once.
fn probed_events(extra: &[String]) -> Vec<String> {
    let mut v: Vec<String> = crate::tracefs::RELEVANT_EVENTS
        .iter()
        .map(|e| e.to_string())
        .collect();
    for e in extra {
        let ok = e.split_once(':').is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && e.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b':')
        });
        if ok && !v.contains(e) {
            v.push(e.clone());
        }
    }
    v
}

/// The job script `/init` sources: swap on, data disk mounted, the guest's
/// facts written, the control and the workload run with this very binary's
/// `run` (so the record is made by the host runner's own code), and every
/// result written as a tar stream onto the raw results disk.
pub fn job_script(job: &Job) -> String {
    let mut s = String::from(
        "mkswap \"$DISK_swap\" >/dev/null && swapon \"$DISK_swap\"\n\
         mount -t ext4 \"$DISK_data\" /data || echo \"reclaimlab-guest: cannot mount the data disk\"\n\
         [ -n \"$DISK_ctl\" ] && mount -t ext4 \"$DISK_ctl\" /ctl\n\
         {\n  echo \"release $(uname -r)\"\n  echo \"cpus $(nproc)\"\n  \
         echo \"memtotal_kb $(awk '/^MemTotal/ {print $2}' /proc/meminfo)\"\n  \
         echo \"swap_kb $(awk '/^SwapTotal/ {print $2}' /proc/meminfo)\"\n  \
         echo \"lru_gen $(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo absent)\"\n  \
         for e in EVENTS; do\n    \
         grep -qx \"$e\" /sys/kernel/tracing/available_events && echo \"event $e\"\n  done\n\
         reclaimlab worker cpu-costs 2>/dev/null\n\
         } > /out/facts.txt\ncat /out/facts.txt\n",
    )
    // Every tracepoint a run may ask for, as `subsystem:event` (the form of
    // available_events' lines), so the host can say which the kernel lacks;
    // a name that is not one (the user's) is left out rather than quoted
    // into the script.
    .replace("EVENTS", &probed_events(&job.extra_events).join(" "));
    if !job.control_args.is_empty() {
        s.push_str("cat > /control.toml <<'RECLAIMLAB_EOF'\n");
        s.push_str(&job.control_spec);
        s.push_str("RECLAIMLAB_EOF\n");
        for (k, v) in &job.control_sysctls {
            let p = format!("/proc/sys/{}", k.replace('.', "/"));
            s.push_str(&format!(
                "old_{n}=$(cat {p}); echo {v} > {p}\n",
                n = k.replace('.', "_"),
                v = sh_quote(v)
            ));
        }
        s.push_str("echo RECLAIMLAB-CONTROL-START\n");
        s.push_str(&format!(
            "reclaimlab {} > /out/control.log 2>&1; echo \"control exit $?\" >> /out/facts.txt\n",
            job.control_args
                .iter()
                .map(|a| sh_quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        // In reverse: writing `vm.dirty_ratio` last also clears a `vm.dirty_bytes`
        // that cannot be written back to its old 0 (its minimum is two pages).
        for (k, _) in job.control_sysctls.iter().rev() {
            let p = format!("/proc/sys/{}", k.replace('.', "/"));
            s.push_str(&format!(
                "echo $old_{} > {p} 2>/dev/null\n",
                k.replace('.', "_")
            ));
        }
        s.push_str("rm -rf /ctl/* 2>/dev/null; tail -3 /out/control.log\n");
    }
    if let Some(w) = &job.workload_spec {
        s.push_str("cat > /workload.toml <<'RECLAIMLAB_EOF'\n");
        s.push_str(w);
        s.push_str("RECLAIMLAB_EOF\n");
    }
    s.push_str("[ -w /proc/profile ] && echo 0 > /proc/profile\n");
    s.push_str("echo RECLAIMLAB-WORKLOAD-START\n");
    s.push_str(&format!(
        "reclaimlab {} > /out/workload.log 2>&1; echo \"workload exit $?\" >> /out/facts.txt\n",
        job.workload_args
            .iter()
            .map(|a| sh_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    s.push_str("[ -r /proc/profile ] && cp /proc/profile /out/profile.bin && cat /proc/kallsyms > /out/kallsyms.txt\n");
    s.push_str(
        "tail -5 /out/workload.log\nswapoff -a 2>/dev/null\nsync\n\
         tar -cf \"$DISK_results\" -C /out . && sync && echo RECLAIMLAB-RESULTS-WRITTEN\n",
    );
    s
}

/// The base initramfs: directories, busybox (static) and `/init`.
pub fn base_entries(busybox: &[u8]) -> Vec<CpioEntry> {
    let mut v: Vec<CpioEntry> = [
        "bin",
        "dev",
        "proc",
        "sys",
        "run",
        "tmp",
        "mods",
        "boot",
        "lib",
        "lib/modules",
        "var",
        "var/tmp",
    ]
    .iter()
    .map(|d| CpioEntry::Dir(d.to_string()))
    .collect();
    v.push(CpioEntry::File(
        "bin/busybox".into(),
        0o755,
        busybox.to_vec(),
    ));
    v.push(CpioEntry::Symlink("bin/sh".into(), "busybox".into()));
    // The tools disk's dynamic loader and libraries, at the paths binaries ask for.
    v.push(CpioEntry::Symlink("lib64".into(), "/tools/lib64".into()));
    v.push(CpioEntry::Symlink(
        "lib/x86_64-linux-gnu".into(),
        "/tools/lib/x86_64-linux-gnu".into(),
    ));
    v.push(CpioEntry::Symlink("usr".into(), "/tools/usr".into()));
    v.push(CpioEntry::File(
        "init".into(),
        0o755,
        init_script().into_bytes(),
    ));
    v
}

/// Shared libraries of `bin` as `ldd` lists them (absolute paths), the loader included.
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        let path = match l.split_once("=>") {
            Some((_, r)) => r.split_whitespace().next(),
            None => l.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            v.push(PathBuf::from(p));
        }
    }
    v
}

fn ldd(bin: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(bin).output().map_err(|e| {
        HostError::with_fix(
            format!("cannot run ldd {}: {e}", bin.display()),
            "install libc-bin (ldd)",
        )
    })?;
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// A cache key of files: their paths, sizes and mtimes, and a salt (the scripts).
pub fn files_key(files: &[PathBuf], salt: &str) -> String {
    // FNV-1a, 64 bit: enough to tell a rebuilt binary from the cached one.
    let mut h: u64 = 0xcbf29ce484222325;
    let mut eat = |b: &[u8]| {
        for x in b {
            h ^= u64::from(*x);
            h = h.wrapping_mul(0x100000001b3);
        }
    };
    eat(salt.as_bytes());
    for f in files {
        eat(f.to_string_lossy().as_bytes());
        if let Ok(m) = fs::metadata(f) {
            eat(&m.len().to_le_bytes());
            if let Ok(t) = m.modified().and_then(|t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_err(std::io::Error::other)
            }) {
                eat(&t.as_nanos().to_le_bytes());
            }
        }
    }
    format!("{h:016x}")
}

/// Builds (or finds cached) the base initramfs and the tools disk for `exe`;
/// returns `(base.cpio.gz, tools.img)`.
pub fn base_and_tools(cache: &Path, exe: &Path) -> Result<(PathBuf, PathBuf)> {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            HostError::with_fix(
                "busybox not found: the guest's /init and shell are busybox",
                "apt-get install -y busybox-static",
            )
        })?;
    if !ldd(&busybox)?.is_empty() {
        return Err(HostError::with_fix(
            format!(
                "{} is dynamically linked; the initramfs needs a static busybox",
                busybox.display()
            ),
            "apt-get install -y busybox-static",
        ));
    }
    let fio = sys::which("fio").ok_or_else(|| {
        HostError::with_fix(
            "fio not found: stutterp's writers in the guest are fio jobs",
            "apt-get install -y fio",
        )
    })?;
    if sys::which("mkfs.ext4").is_none() {
        return Err(HostError::with_fix(
            "mkfs.ext4 not found: the guest's tools and data disks are ext4",
            "apt-get install -y e2fsprogs",
        ));
    }
    let mut files = vec![exe.to_path_buf(), fio.clone(), busybox.clone()];
    for b in [exe, fio.as_path()] {
        files.extend(ldd(b)?);
    }
    files.sort();
    files.dedup();
    let key = files_key(&files, &(init_script() + env!("CARGO_PKG_VERSION")));
    let dir = cache.join("images");
    fs::create_dir_all(&dir).map_err(|e| HostError::io("cannot create", &dir, e))?;
    let base = dir.join(format!("base-{key}.cpio.gz"));
    let tools = dir.join(format!("tools-{key}.img"));
    if base.is_file() && tools.is_file() {
        super::cache::touch(&tools);
        super::cache::touch(&base);
        return Ok((base, tools));
    }
    eprintln!(
        "reclaimlab run: building the guest image (tools disk {})",
        tools.display()
    );
    let bb = fs::read(&busybox).map_err(|e| HostError::io("cannot read", &busybox, e))?;
    let stage = dir.join(format!("stage-{key}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&stage);
    let copy = |src: &Path, dst: &Path| -> Result<()> {
        if let Some(p) = dst.parent() {
            fs::create_dir_all(p).map_err(|e| HostError::io("cannot create", p, e))?;
        }
        fs::copy(src, dst)
            .map(|_| ())
            .map_err(|e| HostError::io("cannot copy", src, e))
    };
    let r = (|| -> Result<()> {
        copy(exe, &stage.join("bin/reclaimlab"))?;
        copy(&fio, &stage.join("bin/fio"))?;
        for lib in &files[..] {
            let l = lib.to_string_lossy();
            // Full paths: libraries find each other by RUNPATH (fio's ceph
            // libraries live in /usr/lib/x86_64-linux-gnu/ceph). The initramfs
            // links /lib64, /lib/x86_64-linux-gnu and /usr into the tools disk.
            // (Path::starts_with compares whole components: "/lib64" would not match "/lib".)
            if l.starts_with("/lib") || l.starts_with("/usr/lib") {
                copy(lib, &stage.join(l.trim_start_matches('/')))?;
            }
        }
        let bytes: u64 = files
            .iter()
            .filter_map(|f| fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        let size_mib = bytes / (1 << 20) * 2 + 64;
        let part = tools.with_extension("partial");
        let f = fs::File::create(&part).map_err(|e| HostError::io("cannot create", &part, e))?;
        f.set_len(size_mib << 20)
            .map_err(|e| HostError::io("cannot size", &part, e))?;
        drop(f);
        let out = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-L", "rl-tools", "-d"])
            .arg(&stage)
            .arg(&part)
            .output()
            .map_err(|e| HostError::new(format!("cannot run mkfs.ext4: {e}")))?;
        if !out.status.success() {
            return Err(HostError::new(format!(
                "mkfs.ext4 -d {} failed: {}",
                stage.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        fs::rename(&part, &tools).map_err(|e| HostError::io("cannot rename", &part, e))?;
        let gz = gzip(&cpio_newc(&base_entries(&bb)));
        fs::write(&base, gz).map_err(|e| HostError::io("cannot write", &base, e))
    })();
    let _ = fs::remove_dir_all(&stage);
    r.map(|_| (base, tools))
}

/// The cpio entries of a kernel's part: its config (so the guest's runner reads
/// HZ from `/boot/config-RELEASE`) and its modules as `/mods/NN-name.ko`.
pub fn kernel_entries(
    release: &str,
    config: Option<&[u8]>,
    modules: &[(String, Vec<u8>)],
) -> Vec<CpioEntry> {
    let mut v = Vec::new();
    if let Some(c) = config {
        v.push(CpioEntry::File(
            format!("boot/config-{release}"),
            0o644,
            c.to_vec(),
        ));
    }
    v.push(CpioEntry::Dir(format!("lib/modules/{release}")));
    for (i, (name, data)) in modules.iter().enumerate() {
        v.push(CpioEntry::File(
            format!("mods/{i:02}-{name}"),
            0o644,
            data.clone(),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpio_newc_layout() {
        let a = cpio_newc(&[CpioEntry::File(
            "init".into(),
            0o755,
            b"#!/bin/sh\n".to_vec(),
        )]);
        assert!(a.starts_with(b"070701"));
        // mode 0100755, size 10, namesize 5 ("init\0")
        assert_eq!(&a[14..22], b"000081ED");
        assert_eq!(&a[54..62], b"0000000A");
        assert_eq!(&a[94..102], b"00000005");
        assert_eq!(&a[110..115], b"init\0");
        assert_eq!(a.len() % 4, 0);
        let body = &a[116..126];
        assert_eq!(body, b"#!/bin/sh\n");
        assert!(a.windows(10).any(|w| w == b"TRAILER!!!"));
        assert_eq!(
            a,
            cpio_newc(&[CpioEntry::File(
                "/init".into(),
                0o755,
                b"#!/bin/sh\n".to_vec()
            )])
        );
    }

    #[test]
    fn ldd_output() {
        let t = "\tlinux-vdso.so.1 (0x00007f)\n\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x1)\n\t/lib64/ld-linux-x86-64.so.2 (0x2)\n\tnot a dynamic executable\n";
        assert_eq!(
            parse_ldd(t),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libm.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
    }

    #[test]
    fn job_script_runs_control_then_workload_and_writes_results() {
        let j = Job {
            control_args: vec![
                "run".into(),
                "/control.toml".into(),
                "--memory".into(),
                "128M".into(),
            ],
            control_spec: "name = \"control\"\n".into(),
            workload_args: vec![
                "run".into(),
                "stutterp".into(),
                "--name".into(),
                "a b".into(),
            ],
            control_sysctls: vec![("vm.dirty_ratio".into(), "60".into())],
            workload_spec: None,
            extra_events: vec![
                "vmscan:mm_shrink_slab_start".into(),
                "x; rm -rf /".into(),
                "vmscan:mm_vmscan_throttled".into(),
            ],
        };
        let s = job_script(&j);
        // A requested tracepoint outside the runner's list is probed too;
        // something that is not a tracepoint name never reaches the script.
        assert!(s.contains(" vmscan:mm_shrink_slab_start; do\n"), "{s}");
        assert!(!s.contains("x; rm"));
        assert_eq!(s.matches("vmscan:mm_vmscan_throttled").count(), 1);
        let c = s
            .find("reclaimlab run /control.toml --memory 128M")
            .unwrap();
        let w = s.find("reclaimlab run stutterp --name 'a b'").unwrap();
        let restore = s
            .find("echo $old_vm_dirty_ratio > /proc/sys/vm/dirty_ratio")
            .unwrap();
        assert!(s.find("echo 60 > /proc/sys/vm/dirty_ratio").unwrap() < c);
        assert!(c < restore && restore < w);
        assert!(s.find("tar -cf \"$DISK_results\"").unwrap() > w);
        assert!(s.contains("name = \"control\"\nRECLAIMLAB_EOF\n"));
        let no_control = job_script(&Job {
            control_args: vec![],
            ..j
        });
        assert!(!no_control.contains("control.toml"));
    }

    #[test]
    fn init_boots_then_sources_the_job_and_powers_off() {
        let s = init_script();
        let booted = s.find("RECLAIMLAB-BOOTED").unwrap();
        assert!(s.find("insmod").unwrap() < booted);
        assert!(booted < s.find(". /job.sh").unwrap());
        assert!(s.trim_end().ends_with("poweroff -f"));
    }

    #[test]
    fn files_key_changes_with_salt() {
        let f = vec![PathBuf::from("/nonexistent/x")];
        assert_ne!(files_key(&f, "a"), files_key(&f, "b"));
        assert_eq!(files_key(&f, "a"), files_key(&f, "a"));
    }
}
