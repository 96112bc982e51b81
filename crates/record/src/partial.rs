//! The life of a record's partial directory, beside the record it will
//! become: its names (`.NAME.partial-PID`, and `.NAME.old-PID` for the record
//! it replaces), the lock its writer holds, and the clean-up after writers
//! that died (a crash, a SIGKILL), which must never touch a live writer's
//! directory nor lose the last finished record. [`crate::writer`] uses it.

use std::fs::{self, File};
use std::path::Path;

use crate::error::{RecordError, Result};

/// The name of the partial directory of record `name` written by process `pid`.
pub(crate) fn partial_name(name: &str, pid: u32) -> String {
    format!(".{name}.partial-{pid}")
}

/// The name under which process `pid` moves aside the record `name` it replaces.
pub(crate) fn old_name(name: &str, pid: u32) -> String {
    format!(".{name}.old-{pid}")
}

/// The PID in `file_name` if it is exactly `.NAME.partial-PID` (PID all
/// decimal digits) for this `name`.
pub(crate) fn partial_pid(file_name: &str, name: &str) -> Option<u32> {
    suffixed_pid(file_name, name, ".partial-")
}

/// The PID in `file_name` if it is exactly `.NAME.old-PID`: a finished record
/// moved aside while its replacement was renamed into place.
pub(crate) fn old_pid(file_name: &str, name: &str) -> Option<u32> {
    suffixed_pid(file_name, name, ".old-")
}

pub(crate) fn suffixed_pid(file_name: &str, name: &str, tag: &str) -> Option<u32> {
    let digits = file_name
        .strip_prefix('.')?
        .strip_prefix(name)?
        .strip_prefix(tag)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The lock file of a partial directory. Its writer holds an exclusive
/// `flock` on it from just after creating the directory until the directory
/// is gone (renamed into place, or removed); the kernel drops the lock when
/// the process exits, however it dies. So the lock is free exactly when the
/// writer is gone, whatever PID namespace it ran in.
pub(crate) const LOCK_FILE: &str = ".lock";

/// What the lock file is created and locked as, before being renamed to
/// [`LOCK_FILE`]: a `.lock` that exists is therefore always locked while its
/// writer runs, and a cleaner can never take it in the instant between its
/// creation and its locking.
pub(crate) const LOCK_FILE_NEW: &str = ".lock.new";

/// Creates the lock file in the new partial directory `dir` and locks it.
/// `None` if that fails (a file system without locks): the writer then goes
/// on without one and is judged by the rule for older versions.
pub(crate) fn lock_partial(dir: &Path) -> Option<File> {
    let new = dir.join(LOCK_FILE_NEW);
    let lock = File::create(&new)
        .ok()
        .filter(|f| f.try_lock().is_ok())
        .filter(|_| fs::rename(&new, dir.join(LOCK_FILE)).is_ok());
    if lock.is_none() {
        let _ = fs::remove_file(&new);
    }
    lock
}

/// What the lock file of a partial directory says about its writer.
pub(crate) enum Writer {
    /// It holds the lock (or the lock file cannot be opened): in use.
    Running,
    /// It is gone: the lock was free, and is now held through this file by
    /// the caller, which keeps other cleaners away while it cleans up.
    Gone(File),
    /// No lock file: written by a version before locking, or by a writer that
    /// could not lock (see [`lock_partial`]), or created an instant ago.
    Unknown,
}

pub(crate) fn probe_writer(partial: &Path) -> Writer {
    // Opened for writing: NFS emulates flock with POSIX locks, and an
    // exclusive one needs a file open for writing.
    let opened = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(partial.join(LOCK_FILE));
    match opened {
        Ok(f) => match f.try_lock() {
            Ok(()) => Writer::Gone(f),
            Err(_) => Writer::Running,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Writer::Unknown,
        Err(_) => Writer::Running,
    }
}

/// How long a directory without a lock file must have been left untouched
/// before a writer whose PID this process cannot see counts as gone.
pub(crate) const QUIET_BEFORE_STALE: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether `dir` or anything directly in it was modified within `quiet`
/// (a writer appends to its files as it runs).
pub(crate) fn recently_modified(dir: &Path, quiet: std::time::Duration) -> bool {
    // A time in the future (another host's clock) counts as recent.
    let recent = |m: fs::Metadata| match m.modified().ok().and_then(|t| t.elapsed().ok()) {
        Some(age) => age < quiet,
        None => true,
    };
    if fs::symlink_metadata(dir).is_ok_and(recent) {
        return true;
    }
    fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| fs::symlink_metadata(e.path()).is_ok_and(recent))
    })
}

/// The rule for a directory whose writer left no lock file (older versions):
/// in use while `/proc/PID` exists, and also while `dir` or a file in it was
/// modified in the last ten minutes, since a writer in another PID namespace
/// (a container sharing the directory) is invisible in this `/proc`. Without
/// a `/proc` (not Linux, or not mounted) always in use.
pub(crate) fn legacy_in_use(pid: u32, dir: &Path) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists()
        || proc.join(pid.to_string()).exists()
        || recently_modified(dir, QUIET_BEFORE_STALE)
}

/// Puts a record moved aside as `old` by a writer now gone back at
/// `final_dir` if nothing took its place (the writer was killed between its
/// two renames); otherwise that copy is superseded and removed.
pub(crate) fn settle_old(old: &Path, final_dir: &Path) {
    if !fs::symlink_metadata(old).is_ok_and(|m| m.is_dir()) {
        return;
    }
    if fs::symlink_metadata(final_dir).is_err() && fs::rename(old, final_dir).is_ok() {
        return;
    }
    let _ = fs::remove_dir_all(old);
}

/// Removes `.NAME.partial-PID` if its writer is gone, after settling the
/// record that writer may have moved aside as `.NAME.old-PID`.
///
/// The old record is settled here, under the partial directory's lock, and
/// not on its own: a writer moves the old record aside and renames its own
/// into place (or, if that fails, puts the old one back) only while its
/// partial directory exists and is locked. So while that lock is held, the
/// `.old-PID` may still be put back by its writer and must not be touched;
/// once it is free, the writer died between its two renames and the old
/// record is this cleaner's to restore.
pub(crate) fn remove_partial_if_dead(parent: &Path, name: &str, pid: u32) {
    let partial = parent.join(partial_name(name, pid));
    let lock = match probe_writer(&partial) {
        Writer::Running => return,
        Writer::Gone(lock) => Some(lock),
        Writer::Unknown if legacy_in_use(pid, &partial) => return,
        Writer::Unknown => None,
    };
    settle_old(&parent.join(old_name(name, pid)), &parent.join(name));
    let _ = fs::remove_dir_all(&partial);
    // Released only now, so no other cleaner works on the same directories.
    drop(lock);
}

/// Settles `.NAME.old-PID` when `.NAME.partial-PID` is gone. Its writer then
/// got past renaming its record into place, or gave up after failing to (its
/// partial directory was removed): it will never put this copy back, only
/// remove it. So if `NAME` exists the copy is superseded and goes at once,
/// whether or not its writer still runs. If `NAME` does not exist, the copy
/// is the latest record there is and goes back to `NAME` once the rule for
/// older versions ([`legacy_in_use`]) says its writer is gone.
pub(crate) fn settle_orphaned_old(parent: &Path, name: &str, pid: u32) {
    if fs::symlink_metadata(parent.join(partial_name(name, pid))).is_ok() {
        return; // Settled with its partial directory, by its lock.
    }
    let old = parent.join(old_name(name, pid));
    let final_dir = parent.join(name);
    if fs::symlink_metadata(&final_dir).is_err() && legacy_in_use(pid, &old) {
        return;
    }
    settle_old(&old, &final_dir);
}

/// Removes the partial directories `.NAME.partial-PID` in `parent` whose
/// writers are gone (a crash, a SIGKILL), so they do not pile up, and
/// settles the records those writers had moved aside (`.NAME.old-PID`). A
/// writer is gone when the lock of its partial directory is free
/// ([`LOCK_FILE`]); a directory without a lock file follows the rule for
/// older versions ([`legacy_in_use`]). This process's own writers hold their
/// locks, so their directories are kept like any other's. Best effort:
/// errors are ignored (another process may be cleaning up at the same time).
pub(crate) fn remove_dead_partials(parent: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        // A real directory, not a symlink to one elsewhere.
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let file_name = e.file_name();
        let Some(f) = file_name.to_str() else {
            continue;
        };
        if let Some(pid) = partial_pid(f, name) {
            remove_partial_if_dead(parent, name, pid);
        } else if let Some(pid) = old_pid(f, name) {
            settle_orphaned_old(parent, name, pid);
        }
    }
}

/// Clears the way for this process's partial directory of record `name`.
/// No writer of this process uses it (the caller has just claimed it among
/// the writer's active directories), but it may exist: left by an earlier process with the same
/// PID (without a lock file, the rule for older versions keeps it while this
/// PID runs), or being written by a process with the same PID in another PID
/// namespace. That one holds its lock: refused rather than destroyed.
pub(crate) fn clear_own_partial(parent: &Path, name: &str, final_dir: &Path) -> Result<()> {
    let partial_dir = parent.join(partial_name(name, std::process::id()));
    if fs::symlink_metadata(&partial_dir).is_err() {
        return Ok(());
    }
    let lock = probe_writer(&partial_dir);
    if matches!(lock, Writer::Running) {
        return Err(RecordError::Usage {
            path: final_dir.to_path_buf(),
            message: format!(
                "{} is in use by another process with this PID (in another PID namespace); \
                 give each run its own --out directory",
                partial_dir.display()
            ),
        });
    }
    settle_old(&parent.join(old_name(name, std::process::id())), final_dir);
    fs::remove_dir_all(&partial_dir)
        .map_err(|e| RecordError::io(&partial_dir, "removing a stale partial record", e))?;
    drop(lock);
    Ok(())
}
