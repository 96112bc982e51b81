//! Making a planned disk on the host: the checks before ([`preflight`]),
//! the image, loop device, filesystem, readers' files, throttle
//! ([`create_disk`]) and the measurement ([`measure`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{dev_numbers, run_cmd, v1_throttle_files, DiskPlan, MEASURE_MIB, MIB};
use crate::cgroup::Version;
use crate::error::{HostError, Result};
use crate::state::{Entry, RunState};
use crate::sys;

/// What a made disk is, for the record.
#[derive(Debug, Clone, PartialEq)]
pub struct MadeDisk {
    /// The device name the workers use.
    pub name: String,
    /// `/dev/loopN`.
    pub dev: PathBuf,
    /// Where its filesystem is mounted.
    pub mount: PathBuf,
    /// How it is throttled, for the record.
    pub method: String,
    /// The limits, bytes/s.
    pub write_bps: u64,
    /// Read limit, bytes/s.
    pub read_bps: u64,
    /// Measured MB/s: direct write, buffered write + fdatasync, direct read.
    pub measured: (f64, f64, f64),
}

impl MadeDisk {
    /// A line for the record's notes.
    pub fn note(&self) -> String {
        format!(
            "device `{}`: {} (file-backed loop device, direct I/O to its image, ext4), {}; limits write {:.1} MB/s, read {:.1} MB/s; measured: dd oflag=direct {:.1} MB/s, buffered dd conv=fdatasync {:.1} MB/s, dd iflag=direct {:.1} MB/s ({} MiB each)",
            self.name,
            self.dev.display(),
            self.method,
            self.write_bps as f64 / 1e6,
            self.read_bps as f64 / 1e6,
            self.measured.0,
            self.measured.1,
            self.measured.2,
            MEASURE_MIB
        )
    }
}

/// Checks that this host can make throttled loop devices (before anything
/// is created): `losetup` and `mkfs.ext4`, `/dev/loop-control`, and the
/// block I/O controller's limit (root blkio throttle files on v1; `io` in
/// the root's `cgroup.subtree_control` on v2).
pub fn preflight(version: Version, v2_root: Option<&Path>) -> Result<()> {
    for tool in ["losetup", "mkfs.ext4", "mount", "umount", "dd"] {
        if sys::which(tool).is_none() {
            return Err(HostError::with_fix(
                format!("the spec's devices need `{tool}`, which is not on PATH"),
                "apt-get install -y util-linux e2fsprogs coreutils",
            ));
        }
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err(HostError::with_fix(
            "the spec's devices are loop devices, and this host has no /dev/loop-control (CONFIG_BLK_DEV_LOOP)",
            "modprobe loop, or run the spec without `device =` (`reclaimlab sim` keeps them)",
        ));
    }
    match version {
        Version::V1 => {
            if v1_throttle_files().is_none() {
                return Err(HostError::with_fix(
                    "the spec's devices are throttled with the blkio controller, and no cgroup v1 blkio hierarchy with blkio.throttle.* files is mounted (CONFIG_BLK_DEV_THROTTLING)",
                    "mkdir -p /sys/fs/cgroup/blkio && mount -t cgroup -o blkio cgroup /sys/fs/cgroup/blkio",
                ));
            }
        }
        Version::V2 => {
            let root = v2_root.unwrap_or(Path::new("/sys/fs/cgroup"));
            let sub = root.join("cgroup.subtree_control");
            let ok = sys::read(&sub)
                .map(|t| t.split_whitespace().any(|c| c == "io"))
                .unwrap_or(false);
            if !ok {
                return Err(HostError::with_fix(
                    format!("the spec's devices are throttled with io.max, and the io controller is not enabled for the children of {}", root.display()),
                    format!("echo +io > {}", sub.display()),
                ));
            }
        }
    }
    Ok(())
}

/// Makes disk `p` under `data` (the run's data directory): image file,
/// loop device, ext4, mount, the readers' files, then the throttle, then
/// the measurement. On cgroup v2 the throttle is `io.max` of `top` (the
/// run's cgroup) and the measuring `dd`s join `top_procs`. Everything is
/// logged to `state` before it is made.
pub fn create_disk(
    state: &mut RunState,
    p: &DiskPlan,
    data: &Path,
    version: Version,
    top: &Path,
    top_procs: &[PathBuf],
) -> Result<MadeDisk> {
    let image = data.join(format!("{}.img", p.name));
    let mnt = data.join(format!("dev-{}", p.name));
    // The data dir (logged already) holds the image; the loop entry finds
    // the loop device by its backing file, so a crash right after
    // `losetup` is still undone.
    let f = fs::File::create(&image).map_err(|e| HostError::io("cannot create", &image, e))?;
    f.set_len(p.image_bytes)
        .map_err(|e| HostError::io("cannot size", &image, e))?;
    drop(f);
    state.log(Entry::Loop(image.clone()))?;
    let dev = run_cmd(
        Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(&image),
    )
    .map_err(|e| HostError::with_fix(e.what, "free a loop device (`losetup -a` lists them)"))?;
    let dev = PathBuf::from(dev.trim());
    let mm = dev_numbers(&dev).ok_or_else(|| {
        HostError::new(format!(
            "cannot read the device numbers of {}",
            dev.display()
        ))
    })?;
    run_cmd(
        Command::new("mkfs.ext4")
            .args([
                "-q",
                "-F",
                "-m",
                "0",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
            ])
            .arg(&dev),
    )?;
    fs::create_dir_all(&mnt).map_err(|e| HostError::io("cannot create", &mnt, e))?;
    state.log(Entry::FsMount(mnt.clone()))?;
    run_cmd(
        Command::new("mount")
            .args(["-o", "noatime"])
            .arg(&dev)
            .arg(&mnt),
    )?;
    for (name, bytes) in &p.prefill {
        dd_write(&mnt.join(name), bytes / MIB, "oflag=direct", &[])?;
    }
    // The throttle.
    let method = match version {
        Version::V1 => {
            let (w, r) = v1_throttle_files()
                .ok_or_else(|| HostError::new("the blkio throttle files vanished"))?;
            state.log(Entry::Throttle(w.clone(), mm.clone()))?;
            sys::write(&w, &format!("{mm} {}", p.write_bps))?;
            state.log(Entry::Throttle(r.clone(), mm.clone()))?;
            sys::write(&r, &format!("{mm} {}", p.read_bps))?;
            format!(
                "throttled by {} and read_bps_device on the root blkio cgroup (cgroup v1: applies to the flusher threads' writeback too)",
                w.display()
            )
        }
        Version::V2 => {
            sys::write(
                top.join("io.max"),
                &format!("{mm} wbps={} rbps={}", p.write_bps, p.read_bps),
            )?;
            format!("throttled by io.max of the run's cgroup {} (cgroup v2 writeback is attributed to it)", top.display())
        }
    };
    let measured = measure(&mnt, top_procs)?;
    let target_w = p.write_bps as f64 / 1e6;
    let target_r = p.read_bps as f64 / 1e6;
    // Direct I/O must come within 50 % of the limits both ways; the
    // buffered write (page cache, then writeback through ext4 and the loop
    // device) is slower than direct I/O on a busy host, so for it only the
    // upper bound matters: that the flushers' writeback is throttled too.
    let off = |got: f64, want: f64| !(got >= 0.5 * want && got <= 1.5 * want);
    if off(measured.0, target_w) || measured.1 > 1.5 * target_w || off(measured.2, target_r) {
        return Err(HostError::with_fix(
            format!(
                "device `{}` ({}) cannot be made as slow as asked: limits write {target_w:.1} MB/s, read {target_r:.1} MB/s, measured dd oflag=direct {:.1}, buffered+fdatasync {:.1}, iflag=direct read {:.1} MB/s (more than 50 % off)",
                p.name, dev.display(), measured.0, measured.1, measured.2
            ),
            "the data directory's disk may be slower than the device asked for (try --data-dir on a faster disk), or the throttle is not applied on this kernel; `reclaimlab doctor` checks it",
        ));
    }
    Ok(MadeDisk {
        name: p.name.clone(),
        dev,
        mount: mnt,
        method,
        write_bps: p.write_bps,
        read_bps: p.read_bps,
        measured,
    })
}

/// `dd if=/dev/zero of=FILE bs=1M count=MIB FLAG`; returns MB/s.
fn dd_write(file: &Path, mib: u64, flag: &str, procs: &[PathBuf]) -> Result<f64> {
    let mut c = Command::new("dd");
    c.arg("if=/dev/zero")
        .arg(format!("of={}", file.display()))
        .args(["bs=1M", &format!("count={mib}"), flag, "status=none"]);
    crate::cgroup::place_in(&mut c, procs);
    let t = sys::mono_ns();
    run_cmd(&mut c)?;
    Ok(mib as f64 * MIB as f64 / 1e6 / ((sys::mono_ns() - t) as f64 / 1e9).max(1e-6))
}

/// Measures a made disk mounted at `mnt`: direct write, buffered write
/// with one `fdatasync`, direct read, [`MEASURE_MIB`] each; MB/s.
pub fn measure(mnt: &Path, procs: &[PathBuf]) -> Result<(f64, f64, f64)> {
    let a = mnt.join("reclaimlab-measure-direct");
    let b = mnt.join("reclaimlab-measure-buffered");
    let direct = dd_write(&a, MEASURE_MIB, "oflag=direct", procs)?;
    let buffered = dd_write(&b, MEASURE_MIB, "conv=fdatasync", procs)?;
    let mut c = Command::new("dd");
    c.arg(format!("if={}", a.display())).args([
        "of=/dev/null",
        "bs=1M",
        "iflag=direct",
        "status=none",
    ]);
    crate::cgroup::place_in(&mut c, procs);
    let t = sys::mono_ns();
    run_cmd(&mut c)?;
    let read =
        MEASURE_MIB as f64 * MIB as f64 / 1e6 / ((sys::mono_ns() - t) as f64 / 1e9).max(1e-6);
    let _ = fs::remove_file(&a);
    let _ = fs::remove_file(&b);
    Ok((direct, buffered, read))
}
