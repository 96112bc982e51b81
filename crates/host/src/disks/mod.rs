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
//! [`plan_disks`] is pure (no root); [`create_disk`] (in `make.rs`) touches
//! the host, each thing logged to the run's state file before it exists.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use reclaimlab_workload::spec::{Spec, WorkerKind};

use crate::error::{human_bytes, HostError, Result};
use crate::sys;

const MIB: u64 = 1 << 20;

mod make;
pub use make::*;

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
        let files_bytes = u64::from(w.count) * w.files * w.file_mib * MIB;
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
pub(crate) fn run_cmd(cmd: &mut Command) -> Result<String> {
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
