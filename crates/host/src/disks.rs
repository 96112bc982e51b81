//! The devices a workload spec's workers name (`device = "sdb"`), made real
//! for a run: a file-backed loop device per device, with an ext4 filesystem,
//! throttled to the bandwidth of that device in a machine profile
//! (`run --machine hdd-pair-2018`), measured, and undone afterwards.
//!
//! Why a loop device and the block I/O controller's bandwidth limit: the
//! kernel this was built on has no device mapper (so no `dm-delay`), and on
//! cgroup v1 buffered writeback is not attributed to the writer's blkio
//! cgroup (the flusher threads write from the root), so a limit on the
//! writers' own blkio group would slow only their direct I/O. A limit on the
//! *root* blkio group for the loop device's `MAJ:MIN`
//! (`blkio.throttle.write_bps_device`, `read_bps_device`) applies to every
//! bio sent to that device, the flushers' included, and the device is the
//! run's alone. On cgroup v2 (cgroup writeback attributes dirty pages to
//! their memcg's cgroup) the limit is `io.max` on the run's own cgroup, which
//! holds every worker. The loop device uses direct I/O to its backing file
//! (`losetup --direct-io=on`), so its data is not cached twice.
//!
//! Each disk is measured before the workers start ([`measure`]: `dd
//! oflag=direct`, a buffered `dd conv=fdatasync`, and `dd iflag=direct`), and
//! the run refuses to rely on a disk more than 50 % off its target.
//!
//! [`plan_disks`] is pure (no root); [`create_disk`] touches the host, each
//! thing logged to the run's state file before it exists.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use reclaimlab_workload::spec::{Spec, WorkerKind};

use crate::cgroup::Version;
use crate::error::{human_bytes, HostError, Result};
use crate::state::{Entry, RunState};
use crate::sys;

const MIB: u64 = 1 << 20;

/// A device of a machine profile, as `run --machine` gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceBw {
    /// Name (`sdb`).
    pub name: String,
    /// Sequential write bandwidth, MB/s (10^6 bytes).
    pub write_mb_s: f64,
    /// Sequential read bandwidth, MB/s.
    pub read_mb_s: f64,
}

/// One disk the run makes.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskPlan {
    /// The device name the workers use.
    pub name: String,
    /// Write limit, bytes/s.
    pub write_bps: u64,
    /// Read limit, bytes/s.
    pub read_bps: u64,
    /// Size of the image file (sparse), bytes.
    pub image_bytes: u64,
    /// Files written before the run (readers' files, so that reading them
    /// needs the disk), relative to the filesystem's root: (name, bytes).
    pub prefill: Vec<(String, u64)>,
}

/// The fio job name of worker `index` (0-based) of a spec.
pub fn job_name(kind: WorkerKind, index: usize) -> String {
    let k = if kind == WorkerKind::FileWriter {
        "writer"
    } else {
        "reader"
    };
    format!("{k}-{}", index + 1)
}

/// Plans a disk for each device the spec's workers name, at the bandwidth
/// `devices` (the machine `machine`'s) give it. Errors name the worker, the
/// device and the fix.
pub fn plan_disks(
    spec: &Spec,
    machine: Option<&str>,
    devices: &[DeviceBw],
) -> Result<Vec<DiskPlan>> {
    let mut out: Vec<DiskPlan> = Vec::new();
    for (i, w) in spec.workers.iter().enumerate() {
        let Some(d) = &w.device else { continue };
        let Some(m) = machine else {
            return Err(HostError::with_fix(
                format!(
                    "worker #{}: device = `{d}`: `reclaimlab run` makes each device a worker names as a throttled loop device, at that device's bandwidth in a machine profile, and no --machine was given",
                    i + 1
                ),
                format!("add --machine M, a machine with a device `{d}` (`reclaimlab list machines`, e.g. hdd-pair-2018, or a machine file)"),
            ));
        };
        let Some(bw) = devices.iter().find(|x| &x.name == d) else {
            let names: Vec<&str> = devices.iter().map(|x| x.name.as_str()).collect();
            return Err(HostError::with_fix(
                format!(
                    "worker #{}: device = `{d}` is not a device of machine `{m}` (its devices: {})",
                    i + 1,
                    names.join(", ")
                ),
                "name one of them in the spec, or give a --machine that has it",
            ));
        };
        if !(bw.write_mb_s >= 0.1 && bw.read_mb_s >= 0.1) {
            return Err(HostError::with_fix(
                format!(
                    "machine `{m}`, device `{d}`: write {} MB/s, read {} MB/s cannot be a throttle",
                    bw.write_mb_s, bw.read_mb_s
                ),
                "give the device bandwidths of at least 0.1 MB/s",
            ));
        }
        let files_bytes = u64::from(w.count) * u64::from(w.files) * w.file_mib * MIB;
        let idx = match out.iter().position(|p| &p.name == d) {
            Some(k) => k,
            None => {
                out.push(DiskPlan {
                    name: d.clone(),
                    write_bps: (bw.write_mb_s * 1e6) as u64,
                    read_bps: (bw.read_mb_s * 1e6) as u64,
                    image_bytes: 0,
                    prefill: Vec::new(),
                });
                out.len() - 1
            }
        };
        let p = &mut out[idx];
        p.image_bytes += files_bytes;
        if matches!(w.kind, WorkerKind::FileReader | WorkerKind::MmapFileReader) && !w.sparse {
            let job = job_name(w.kind, i);
            for j in 0..w.count {
                for f in 0..w.files {
                    p.prefill.push((format!("{job}.{j}.{f}"), w.file_mib * MIB));
                }
            }
        }
    }
    for p in &mut out {
        // ext4's metadata and journal, the measurement's files, and slack.
        p.image_bytes += p.image_bytes / 16 + MEASURE_MIB * 2 * MIB + 256 * MIB;
    }
    Ok(out)
}

/// Size of each measurement file, MiB.
pub const MEASURE_MIB: u64 = 64;

/// Runs a command, an error naming it and its stderr.
fn run_cmd(cmd: &mut Command) -> Result<String> {
    let shown = format!("{cmd:?}").replace('"', "");
    let out = cmd
        .output()
        .map_err(|e| HostError::new(format!("cannot run `{shown}`: {e}")))?;
    if !out.status.success() {
        return Err(HostError::new(format!(
            "`{shown}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Loop devices (`/dev/loopN`) whose backing file is `image`.
pub fn loops_backed_by(image: &Path) -> Vec<PathBuf> {
    loop_backings()
        .into_iter()
        .filter(|(_, b)| b == image)
        .map(|(d, _)| d)
        .collect()
}

/// Every attached loop device and its backing file.
pub fn loop_backings() -> Vec<(PathBuf, PathBuf)> {
    let mut v = Vec::new();
    if let Ok(rd) = fs::read_dir("/sys/block") {
        for e in rd.filter_map(|e| e.ok()) {
            let n = e.file_name().to_string_lossy().into_owned();
            if !n.starts_with("loop") {
                continue;
            }
            if let Ok(b) = fs::read_to_string(e.path().join("loop/backing_file")) {
                v.push((PathBuf::from("/dev").join(&n), PathBuf::from(b.trim())));
            }
        }
    }
    v
}

/// `MAJ:MIN` of a block device (from sysfs).
pub fn dev_numbers(dev: &Path) -> Option<String> {
    let n = dev.file_name()?.to_string_lossy().into_owned();
    Some(
        sys::read(format!("/sys/block/{n}/dev"))
            .ok()?
            .trim()
            .to_string(),
    )
}

/// Detaches the loop devices backed by `image` (their mounts first).
pub fn detach_image(image: &Path) -> Result<()> {
    for dev in loops_backed_by(image) {
        for m in sys::mounts().iter().filter(|m| m.source == dev) {
            unmount(&m.target)?;
        }
        if let Some(mm) = dev_numbers(&dev) {
            reset_v1_throttles(&mm);
        }
        run_cmd(Command::new("losetup").arg("-d").arg(&dev))
            .map_err(|e| HostError::with_fix(e.what, format!("losetup -d {}", dev.display())))?;
    }
    Ok(())
}

/// Unmounts `target` if something is mounted there (lazily if busy).
pub fn unmount(target: &Path) -> Result<()> {
    if !sys::mounts().iter().any(|m| m.target == target) {
        return Ok(());
    }
    if run_cmd(Command::new("umount").arg(target)).is_ok() {
        return Ok(());
    }
    run_cmd(Command::new("umount").arg("-l").arg(target))
        .map(|_| ())
        .map_err(|e| HostError::with_fix(e.what, format!("umount {}", target.display())))
}

/// The root blkio group's throttle files (cgroup v1), if mounted.
pub fn v1_throttle_files() -> Option<(PathBuf, PathBuf)> {
    let m = sys::mounts()
        .into_iter()
        .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == "blkio"))?;
    let w = m.target.join("blkio.throttle.write_bps_device");
    let r = m.target.join("blkio.throttle.read_bps_device");
    (w.exists() && r.exists()).then_some((w, r))
}

/// Removes the rule for `mm` from a v1 throttle file, if it has one.
pub fn reset_throttle(file: &Path, mm: &str) -> Result<()> {
    let has = sys::read(file)
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().next() == Some(mm));
    if has {
        sys::write(file, &format!("{mm} 0"))?;
    }
    Ok(())
}

fn reset_v1_throttles(mm: &str) {
    if let Some((w, r)) = v1_throttle_files() {
        let _ = reset_throttle(&w, mm);
        let _ = reset_throttle(&r, mm);
    }
}

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

/// Loop devices left by dead runs: those whose backing file lies in a
/// `reclaimlab-<pid>` directory of a pid `live` says is gone. Returns
/// (device, image).
pub fn orphan_loops(live: impl Fn(u32) -> bool) -> Vec<(PathBuf, PathBuf)> {
    loop_backings()
        .into_iter()
        .filter(|(_, img)| {
            img.components().any(|c| {
                crate::state::pid_of_name(&c.as_os_str().to_string_lossy())
                    .is_some_and(|pid| !live(pid))
            })
        })
        .collect()
}

/// Disk space the run's disks may take (their images are sparse; this is
/// the most they can grow to).
pub fn disk_bytes(plans: &[DiskPlan]) -> u64 {
    plans.iter().map(|p| p.image_bytes).sum()
}

/// A line for the user about the planned disks.
pub fn describe(plans: &[DiskPlan]) -> String {
    plans
        .iter()
        .map(|p| {
            format!(
                "{} ({} image, write {:.1} MB/s, read {:.1} MB/s)",
                p.name,
                human_bytes(p.image_bytes),
                p.write_bps as f64 / 1e6,
                p.read_bps as f64 / 1e6
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdd_pair() -> Vec<DeviceBw> {
        vec![
            DeviceBw {
                name: "sda".into(),
                write_mb_s: 120.0,
                read_mb_s: 120.0,
            },
            DeviceBw {
                name: "sdb".into(),
                write_mb_s: 25.0,
                read_mb_s: 25.0,
            },
        ]
    }

    #[test]
    fn memcg_congestion_gets_two_disks() {
        let spec = Spec::builtin("memcg-congestion").unwrap();
        let p = plan_disks(&spec, Some("hdd-pair-2018"), &hdd_pair()).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].name, "sdb");
        assert_eq!(p[0].write_bps, 25_000_000);
        assert!(p[0].prefill.is_empty(), "writers' files are not prefilled");
        let four_gib = 4096 * MIB;
        assert_eq!(
            p[0].image_bytes,
            four_gib + four_gib / 16 + 128 * MIB + 256 * MIB
        );
        assert_eq!(p[1].name, "sda");
        assert_eq!(p[1].read_bps, 120_000_000);
        assert_eq!(p[1].prefill, vec![("reader-2.0.0".to_string(), 2048 * MIB)]);
        assert_eq!(disk_bytes(&p), p[0].image_bytes + p[1].image_bytes);
        assert!(describe(&p).contains("sdb ("), "{}", describe(&p));
    }

    #[test]
    fn devices_need_a_machine_that_has_them() {
        let spec = Spec::builtin("memcg-congestion").unwrap();
        let e = plan_disks(&spec, None, &[]).unwrap_err();
        assert!(
            e.what.contains("worker #1: device = `sdb`") && e.what.contains("no --machine"),
            "{e}"
        );
        assert!(e.fix.unwrap().contains("--machine"));
        let e = plan_disks(
            &spec,
            Some("laptop"),
            &[DeviceBw {
                name: "nvme0n1".into(),
                write_mb_s: 1000.0,
                read_mb_s: 2000.0,
            }],
        )
        .unwrap_err();
        assert!(
            e.what
                .contains("`sdb` is not a device of machine `laptop` (its devices: nvme0n1)"),
            "{e}"
        );
        let s = Spec::parse(
            "name='t'\nduration_s=1\n[[worker]]\nkind='anon-hog'\nsize_mib=8\n",
            "t",
        )
        .unwrap();
        assert!(plan_disks(&s, None, &[]).unwrap().is_empty());
    }

    #[test]
    fn orphans_are_loops_of_dead_runs() {
        // Pure on the backing paths: only the pid test matters.
        let img = PathBuf::from("/var/tmp/reclaimlab-77/sdb.img");
        let has_dead = img
            .components()
            .any(|c| crate::state::pid_of_name(&c.as_os_str().to_string_lossy()) == Some(77));
        assert!(has_dead);
        assert_eq!(job_name(WorkerKind::FileWriter, 0), "writer-1");
        assert_eq!(job_name(WorkerKind::FileReader, 1), "reader-2");
    }
}
