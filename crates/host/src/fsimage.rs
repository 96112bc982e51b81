//! The filesystem image an `fs-create` worker creates its files on: a
//! sparse file, `mkfs.xfs` (or `mkfs.ext4` where xfsprogs is missing),
//! loop-mounted on a directory beside it; unmounted, detached and removed
//! after the run, on Ctrl-C or error, or by the next run after a crash
//! (the state file's `fsimage IMG` entry, logged before anything exists).
//!
//! Paths: `<data parent>/reclaimlab-<pid>.img`, mounted on the same path
//! with `.mnt` for `.img`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{HostError, Result};
use crate::sys;

/// Size of the sparse image file: room for millions of empty files (XFS
/// allocates inodes as it goes; ext4 is made with an inode per 4 KiB).
pub const IMAGE_BYTES: u64 = 4 << 30;

/// The filesystem a run will make and the `mkfs` that makes it:
/// `("xfs", path)` where `mkfs.xfs` is on the `PATH`, else `("ext4", …)`.
pub fn mkfs_tool() -> Result<(&'static str, PathBuf)> {
    mkfs_tool_with(sys::which)
}

/// [`mkfs_tool`] with `which` to look tools up.
fn mkfs_tool_with(which: impl Fn(&str) -> Option<PathBuf>) -> Result<(&'static str, PathBuf)> {
    for (fs, tool) in [("xfs", "mkfs.xfs"), ("ext4", "mkfs.ext4")] {
        if let Some(p) = which(tool) {
            return Ok((fs, p));
        }
    }
    Err(HostError::with_fix(
        "an fs-create worker needs a filesystem image, but neither mkfs.xfs nor mkfs.ext4 is on the PATH".to_string(),
        "install xfsprogs (`apt-get install -y xfsprogs`; the seed's filesystem) or e2fsprogs, or drop the fs-create [[worker]]".to_string(),
    ))
}

/// Where image `img` is mounted.
pub fn mount_point(img: &Path) -> PathBuf {
    img.with_extension("mnt")
}

/// Makes image `img` with `tool` (a `mkfs_tool()` result) and loop-mounts
/// it on [`mount_point`]. The caller has logged `img` in the state file.
pub fn create(img: &Path, fstype: &str, tool: &Path) -> Result<PathBuf> {
    let f = fs::File::create(img).map_err(|e| HostError::io("cannot create", img, e))?;
    f.set_len(IMAGE_BYTES)
        .map_err(|e| HostError::io("cannot size the filesystem image", img, e))?;
    drop(f);
    let mut mkfs = Command::new(tool);
    if fstype == "xfs" {
        mkfs.args(["-q", "-f"]);
    } else {
        mkfs.args(["-q", "-F", "-i", "4096"]);
    }
    run(mkfs.arg(img), "make the filesystem")?;
    let mnt = mount_point(img);
    fs::create_dir_all(&mnt).map_err(|e| HostError::io("cannot create", &mnt, e))?;
    run(
        Command::new("mount")
            .args(["-o", "loop"])
            .arg(img)
            .arg(&mnt),
        "loop-mount the filesystem image",
    )?;
    Ok(mnt)
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let line = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| HostError::new(format!("cannot {what}: {line}: {e}")))?;
    if !out.status.success() {
        return Err(HostError::with_fix(
            format!(
                "cannot {what}: {line} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            "loop devices and mount need root (and a free /dev/loopN); see `reclaimlab doctor`"
                .to_string(),
        ));
    }
    Ok(())
}

/// Undoes [`create`]: unmounts (the loop device goes with it: `mount -o
/// loop` sets autoclear; any loop device still on the image is detached),
/// removes the mount point and the image. Missing pieces are fine.
pub fn remove(img: &Path) -> Result<()> {
    let mnt = mount_point(img);
    if sys::mounts().iter().any(|m| m.target == mnt) {
        let st = Command::new("umount").arg(&mnt).status();
        if !st.is_ok_and(|s| s.success()) {
            // Busy (a worker still exiting): detach lazily.
            let _ = Command::new("umount").arg("-l").arg(&mnt).status();
        }
    }
    if let Ok(out) = Command::new("losetup").arg("-j").arg(img).output() {
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((dev, _)) = l.split_once(':') {
                let _ = Command::new("losetup").args(["-d", dev]).status();
            }
        }
    }
    match fs::remove_dir(&mnt) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(HostError::io("cannot remove the mount point", &mnt, e)),
    }
    match fs::remove_file(img) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(HostError::io("cannot remove the filesystem image", img, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XFS first, ext4 without xfsprogs, and without either an error
    /// naming both tools and the package to install.
    #[test]
    fn mkfs_tool_prefers_xfs_and_names_the_fix() {
        let only = |have: &'static str| move |t: &str| (t == have).then(|| PathBuf::from(t));
        assert_eq!(mkfs_tool_with(|t| Some(t.into())).unwrap().0, "xfs");
        assert_eq!(mkfs_tool_with(only("mkfs.ext4")).unwrap().0, "ext4");
        let e = mkfs_tool_with(|_| None).unwrap_err().to_string();
        assert!(
            e.contains("mkfs.xfs")
                && e.contains("mkfs.ext4")
                && e.contains("apt-get install -y xfsprogs"),
            "{e}"
        );
    }

    #[test]
    fn the_mount_point_sits_beside_the_image() {
        assert_eq!(
            mount_point(Path::new("/var/tmp/reclaimlab-7.img")),
            PathBuf::from("/var/tmp/reclaimlab-7.mnt")
        );
    }
}
