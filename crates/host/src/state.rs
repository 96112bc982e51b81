//! The run's state file: what a run changed on the host, so that a crashed run's
//! leftovers can be found and undone by the next start.
//!
//! `/run/reclaimlab/<pid>.state` lists, one per line and in creation order, each
//! thing the run made or changed (`cgroup-v1 DIR`, `instance DIR`, `swapfile
//! PATH`, `mount PATH`, `datadir PATH`, `sysctl PATH OLD`). Every entry is
//! appended and synced *before* the thing is created, so the file always covers
//! at least what exists. A clean exit undoes everything in reverse and deletes the
//! file. On start, [`clean_leftovers`] undoes the state files of runs that are no
//! longer alive, and also sweeps `reclaimlab-<pid>` cgroups, tracefs instances,
//! swap files and data dirs of dead pids that no state file names (a crash
//! between creation and logging, or a reboot that emptied `/run`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cgroup::{self, Version};
use crate::error::{HostError, Result};
use crate::{swap, sys, tracefs};

/// Where state files live.
pub const STATE_DIR: &str = "/run/reclaimlab";

/// The name prefix of everything a run creates (`reclaimlab-<pid>`).
pub const PREFIX: &str = "reclaimlab-";

/// One thing a run created or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A cgroup directory (memory or cpuacct twin).
    Cgroup(Version, PathBuf),
    /// A tracefs instance directory.
    Instance(PathBuf),
    /// A temporary swap file.
    SwapFile(PathBuf),
    /// A tracefs mount this run made.
    Mount(PathBuf),
    /// A data directory (fio files, worker logs).
    DataDir(PathBuf),
    /// A sysctl file and its value before the run.
    Sysctl(PathBuf, String),
    /// A child process (a guest's qemu) and its start time, killed on undo.
    Process(u32, Option<u64>),
    /// The loop device(s) backed by this image file (a spec's device),
    /// detached on undo (their mounts first).
    Loop(PathBuf),
    /// A filesystem this run mounted (a spec device's), unmounted on undo.
    FsMount(PathBuf),
    /// A block I/O throttle rule this run set: the cgroup v1 file and the
    /// device's `MAJ:MIN`; undone by writing `MAJ:MIN 0`.
    Throttle(PathBuf, String),
    /// A loop-mounted filesystem image (`fsimage.rs`): unmounted, its mount
    /// point and the image removed on undo.
    FsImage(PathBuf),
}

impl Entry {
    /// The state-file line for this entry.
    pub fn to_line(&self) -> String {
        match self {
            Entry::Cgroup(Version::V1, p) => format!("cgroup-v1 {}", p.display()),
            Entry::Cgroup(Version::V2, p) => format!("cgroup-v2 {}", p.display()),
            Entry::Instance(p) => format!("instance {}", p.display()),
            Entry::SwapFile(p) => format!("swapfile {}", p.display()),
            Entry::Mount(p) => format!("mount {}", p.display()),
            Entry::DataDir(p) => format!("datadir {}", p.display()),
            Entry::Sysctl(p, old) => format!("sysctl {} {}", p.display(), old),
            Entry::FsImage(p) => format!("fsimage {}", p.display()),
            Entry::Process(pid, start) => match start {
                Some(t) => format!("process {pid} {t}"),
                None => format!("process {pid}"),
            },
            Entry::Loop(p) => format!("loop {}", p.display()),
            Entry::FsMount(p) => format!("fsmount {}", p.display()),
            Entry::Throttle(f, mm) => format!("throttle {mm} {}", f.display()),
        }
    }

    /// Parses a state-file line.
    pub fn parse(line: &str) -> Option<Entry> {
        let (kind, rest) = line.split_once(' ')?;
        Some(match kind {
            "cgroup-v1" => Entry::Cgroup(Version::V1, rest.into()),
            "cgroup-v2" => Entry::Cgroup(Version::V2, rest.into()),
            "instance" => Entry::Instance(rest.into()),
            "swapfile" => Entry::SwapFile(rest.into()),
            "mount" => Entry::Mount(rest.into()),
            "datadir" => Entry::DataDir(rest.into()),
            "fsimage" => Entry::FsImage(rest.into()),
            "sysctl" => {
                let (p, old) = rest.split_once(' ')?;
                Entry::Sysctl(p.into(), old.to_string())
            }
            "process" => {
                let mut it = rest.split_whitespace();
                let pid = it.next()?.parse().ok()?;
                Entry::Process(pid, it.next().and_then(|t| t.parse().ok()))
            }
            "loop" => Entry::Loop(rest.into()),
            "fsmount" => Entry::FsMount(rest.into()),
            "throttle" => {
                let (mm, f) = rest.split_once(' ')?;
                Entry::Throttle(f.into(), mm.to_string())
            }
            _ => return None,
        })
    }

    /// Undoes this entry.
    pub fn undo(&self) -> Result<()> {
        match self {
            Entry::Cgroup(v, p) => cgroup::remove_group(p, *v),
            Entry::Instance(p) => tracefs::remove_instance_dir(p),
            Entry::SwapFile(p) => swap::remove_swap_file(p),
            Entry::FsImage(p) => crate::fsimage::remove(p),
            Entry::Mount(p) => {
                if !sys::mounts()
                    .iter()
                    .any(|m| m.target == *p && m.fstype == "tracefs")
                {
                    return Ok(());
                }
                // Someone else's instance (another run, another tool) still uses it.
                let users: Vec<String> = fs::read_dir(p.join("instances"))
                    .map(|rd| {
                        rd.filter_map(|e| e.ok())
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                if !users.is_empty() {
                    return Err(HostError::with_fix(
                        format!(
                            "tracefs at {} was mounted by a reclaimlab run but is in use (instances: {}); left mounted",
                            p.display(),
                            users.join(", ")
                        ),
                        format!(
                            "the next `reclaimlab run` retries; or `umount {}` once those instances are gone",
                            p.display()
                        ),
                    ));
                }
                tracefs::unmount(p)
            }
            Entry::DataDir(p) => match fs::remove_dir_all(p) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(HostError::io("cannot remove data directory", p, e)),
            },
            Entry::Sysctl(p, old) => sys::write(p, old),
            Entry::Process(pid, start) => {
                // Only the very process logged: a reused pid has another start time.
                if sys::pid_alive(*pid) && (start.is_none() || sys::pid_start_time(*pid) == *start)
                {
                    // SAFETY: signalling a process this run (or a crashed run) started.
                    unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
                }
                Ok(())
            }
            Entry::Loop(image) => crate::disks::detach_image(image),
            Entry::FsMount(p) => crate::disks::unmount(p),
            Entry::Throttle(f, mm) => crate::disks::reset_throttle(f, mm),
        }
    }
}

/// A parsed state file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateFile {
    /// The run's pid.
    pub pid: u32,
    /// Its start time (clock ticks since boot), to tell it from a reused pid.
    pub start_time: Option<u64>,
    /// What it created, in order.
    pub entries: Vec<Entry>,
}

/// Parses a state file's text.
pub fn parse(text: &str) -> StateFile {
    let mut st = StateFile::default();
    for l in text.lines() {
        if let Some(p) = l.strip_prefix("pid ") {
            st.pid = p.trim().parse().unwrap_or(0);
        } else if let Some(t) = l.strip_prefix("start ") {
            st.start_time = t.trim().parse().ok();
        } else if let Some(e) = Entry::parse(l) {
            st.entries.push(e);
        }
    }
    st
}

/// The pid in a `reclaimlab-<pid>` name (with an optional `.suffix`).
pub fn pid_of_name(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let digits = rest.split('.').next()?;
    digits.parse().ok()
}

/// Whether `pid` is a live reclaimlab process (started at `start_time`, if given).
pub fn is_live_run(pid: u32, start_time: Option<u64>) -> bool {
    if !sys::pid_alive(pid) {
        return false;
    }
    let comm = sys::read(format!("/proc/{pid}/comm")).unwrap_or_default();
    if !comm.contains("reclaimlab") {
        return false;
    }
    match start_time {
        Some(t) => sys::pid_start_time(pid) == Some(t),
        None => true,
    }
}

/// The state file of the running process, written as the run creates things.
#[derive(Debug)]
pub struct RunState {
    path: PathBuf,
    entries: Vec<Entry>,
}

impl RunState {
    /// Creates `/run/reclaimlab/<pid>.state` (or under `dir`).
    pub fn create_in(dir: &Path) -> Result<RunState> {
        fs::create_dir_all(dir).map_err(|e| HostError::io("cannot create", dir, e))?;
        let pid = std::process::id();
        let path = dir.join(format!("{pid}.state"));
        let start = sys::pid_start_time(pid)
            .map(|t| format!("start {t}\n"))
            .unwrap_or_default();
        fs::write(&path, format!("pid {pid}\n{start}"))
            .map_err(|e| HostError::io("cannot write state file", &path, e))?;
        Ok(RunState {
            path,
            entries: Vec::new(),
        })
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Logs `e` (synced to disk) before the thing is created.
    pub fn log(&mut self, e: Entry) -> Result<()> {
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|err| HostError::io("cannot append to state file", &self.path, err))?;
        writeln!(f, "{}", e.to_line())
            .and_then(|_| f.sync_data())
            .map_err(|err| HostError::io("cannot append to state file", &self.path, err))?;
        self.entries.push(e);
        Ok(())
    }

    /// Undoes every entry in reverse order; returns the errors (empty = host as found),
    /// and removes the state file only when all undos succeeded.
    pub fn undo_all(&mut self) -> Vec<HostError> {
        let failed = undo_entries(&self.entries);
        let errs = keep_failed(&self.path, &failed);
        self.entries = failed.into_iter().map(|(e, _)| e).collect();
        errs
    }
}

/// Removes a state file when nothing failed; otherwise rewrites it with only the
/// entries whose undo failed (so the next start retries just those). Returns the errors.
fn keep_failed(path: &Path, failed: &[(Entry, HostError)]) -> Vec<HostError> {
    if failed.is_empty() {
        let _ = fs::remove_file(path);
        return Vec::new();
    }
    let old = parse(&fs::read_to_string(path).unwrap_or_default());
    let mut text = format!("pid {}\n", old.pid);
    if let Some(t) = old.start_time {
        text.push_str(&format!("start {t}\n"));
    }
    for (e, _) in failed {
        text.push_str(&e.to_line());
        text.push('\n');
    }
    let _ = fs::write(path, text);
    failed.iter().map(|(_, err)| err.clone()).collect()
}

fn undo_entries(entries: &[Entry]) -> Vec<(Entry, HostError)> {
    // Throttles first (so that workers waiting on a slow device finish
    // their I/O and die quickly, and unmounting flushes at full speed), then
    // the workers (cgroups, children before parents: reverse order of
    // creation, kept by the stable sort), then what they used.
    let mut errs = Vec::new();
    let mut order: Vec<&Entry> = entries.iter().rev().collect();
    order.sort_by_key(|e| match e {
        Entry::Throttle(..) => 0,
        Entry::Process(..) => 1,
        Entry::Cgroup(..) => 1,
        Entry::FsMount(_) => 2,
        // After the workers (cgroups), which may hold files open on it.
        Entry::FsImage(_) => 2,
        Entry::Loop(_) => 3,
        Entry::Instance(_) => 4,
        Entry::DataDir(_) => 5,
        Entry::SwapFile(_) => 6,
        Entry::Sysctl(..) => 7,
        Entry::Mount(_) => 8,
    });
    for e in order {
        if let Err(err) = e.undo() {
            errs.push((e.clone(), err));
        }
    }
    errs
}

/// State files of runs that are no longer alive (their leftovers await clean-up):
/// `(pid, entries)`.
pub fn dead_runs(state_dir: &Path) -> Vec<(u32, Vec<Entry>)> {
    let mut v = Vec::new();
    if let Ok(rd) = fs::read_dir(state_dir) {
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.extension().and_then(|s| s.to_str()) != Some("state") {
                continue;
            }
            let st = parse(&fs::read_to_string(&p).unwrap_or_default());
            if !is_live_run(st.pid, st.start_time) {
                v.push((st.pid, st.entries));
            }
        }
    }
    v
}

/// Places where `reclaimlab-<pid>` leftovers may be, as (directory, kind) pairs.
pub fn sweep_places() -> Vec<(PathBuf, &'static str)> {
    let mounts = sys::mounts();
    let mut v = Vec::new();
    if let Some(c) = cgroup::detect() {
        v.push((
            c.mount.clone(),
            match c.version {
                Version::V1 => "cgroup-v1",
                Version::V2 => "cgroup-v2",
            },
        ));
    }
    if let Some(m) = cgroup::cpuacct_v1_mount(&mounts) {
        v.push((m, "cgroup-v1"));
    }
    if let Some(t) = tracefs::find_mounted(&mounts) {
        v.push((t.join("instances"), "instance"));
    }
    v.push((PathBuf::from("/var/tmp"), "file"));
    v
}

/// Picks leftovers among `names` in a directory: `reclaimlab-<pid>` names whose
/// pid is not `live` and not in `owned` (entries a state file will undo).
pub fn leftover_names(
    names: &[String],
    live: impl Fn(u32) -> bool,
    owned: &[u32],
) -> Vec<(String, u32)> {
    names
        .iter()
        .filter_map(|n| Some((n.clone(), pid_of_name(n)?)))
        .filter(|(_, pid)| !live(*pid) && !owned.contains(pid))
        .collect()
}

/// Finds and undoes the leftovers of dead runs. Returns a line per thing cleaned
/// (for the user: "cleaned up ... of crashed run 1234"), and errors.
pub fn clean_leftovers(state_dir: &Path) -> (Vec<String>, Vec<HostError>) {
    let (mut said, mut errs) = clean_state_files(state_dir);
    let (s2, e2) = sweep_orphans();
    said.extend(s2);
    errs.extend(e2);
    (said, errs)
}

/// Undoes the state files of dead runs in `state_dir`.
pub fn clean_state_files(state_dir: &Path) -> (Vec<String>, Vec<HostError>) {
    let mut said = Vec::new();
    let mut errs = Vec::new();
    let me = std::process::id();
    let mut entries_of_dead: Vec<(u32, Vec<Entry>, PathBuf)> = Vec::new();
    if let Ok(rd) = fs::read_dir(state_dir) {
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.extension().and_then(|s| s.to_str()) != Some("state") {
                continue;
            }
            let st = parse(&fs::read_to_string(&p).unwrap_or_default());
            if st.pid == me || is_live_run(st.pid, st.start_time) {
                continue;
            }
            entries_of_dead.push((st.pid, st.entries, p));
        }
    }
    for (pid, entries, path) in entries_of_dead {
        let failed = undo_entries(&entries);
        for e in &entries {
            if !failed.iter().any(|(f, _)| f == e) {
                said.push(format!(
                    "cleaned up leftover of crashed run {pid}: {}",
                    e.to_line()
                ));
            }
        }
        errs.extend(keep_failed(&path, &failed));
    }
    (said, errs)
}

/// Removes `reclaimlab-<pid>` cgroups, instances, swap files and data dirs of
/// dead pids that no state file named.
pub fn sweep_orphans() -> (Vec<String>, Vec<HostError>) {
    let mut said = Vec::new();
    let mut errs = Vec::new();
    let me = std::process::id();
    // Loop devices first: their mounts and images live in the data dirs.
    for (dev, image) in crate::disks::orphan_loops(|p| p == me || is_live_run(p, None)) {
        match crate::disks::detach_image(&image) {
            Ok(()) => said.push(format!(
                "cleaned up leftover of a crashed run: loop device {} ({})",
                dev.display(),
                image.display()
            )),
            Err(e) => errs.push(e),
        }
    }
    for (dir, kind) in sweep_places() {
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        let names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        for (name, pid) in leftover_names(&names, |p| p == me || is_live_run(p, None), &[]) {
            let path = dir.join(&name);
            let entry = match kind {
                "cgroup-v1" => Entry::Cgroup(Version::V1, path),
                "cgroup-v2" => Entry::Cgroup(Version::V2, path),
                "instance" => Entry::Instance(path),
                _ if name.ends_with(".swap") => Entry::SwapFile(path),
                _ if name.ends_with(".img") => Entry::FsImage(path),
                // The image's mount point: undone with its image.
                _ if name.ends_with(".mnt") => continue,
                _ if path.is_dir() => Entry::DataDir(path),
                _ => continue,
            };
            match entry.undo() {
                Ok(()) => said.push(format!(
                    "cleaned up leftover of crashed run {pid}: {}",
                    entry.to_line()
                )),
                Err(e) => errs.push(e),
            }
        }
    }
    (said, errs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let es = [
            Entry::Cgroup(Version::V1, "/sys/fs/cgroup/memory/reclaimlab-7".into()),
            Entry::Cgroup(Version::V2, "/sys/fs/cgroup/reclaimlab-7".into()),
            Entry::Instance("/sys/kernel/tracing/instances/reclaimlab-7".into()),
            Entry::SwapFile("/var/tmp/reclaimlab-7.swap".into()),
            Entry::Mount("/sys/kernel/tracing".into()),
            Entry::DataDir("/var/tmp/reclaimlab-7".into()),
            Entry::Sysctl("/proc/sys/vm/dirty_ratio".into(), "20".into()),
            Entry::Process(4242, Some(99)),
            Entry::Process(4243, None),
            Entry::Loop("/var/tmp/reclaimlab-7/sdb.img".into()),
            Entry::FsMount("/var/tmp/reclaimlab-7/dev-sdb".into()),
            Entry::Throttle(
                "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device".into(),
                "7:3".into(),
            ),
        ];
        let text = format!(
            "pid 7\nstart 123\n{}\n",
            es.iter().map(Entry::to_line).collect::<Vec<_>>().join("\n")
        );
        let st = parse(&text);
        assert_eq!(st.pid, 7);
        assert_eq!(st.start_time, Some(123));
        assert_eq!(st.entries, es.to_vec());
    }

    #[test]
    fn leftovers_are_dead_unowned_runs() {
        let names: Vec<String> = [
            "reclaimlab-10",
            "reclaimlab-11.swap",
            "reclaimlab-12",
            "reclaimlab-x",
            "process_api",
            "reclaimlab-13",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let live = |p: u32| p == 12;
        let got = leftover_names(&names, live, &[13]);
        assert_eq!(
            got,
            vec![
                ("reclaimlab-10".to_string(), 10),
                ("reclaimlab-11.swap".to_string(), 11)
            ]
        );
        assert_eq!(pid_of_name("reclaimlab-99.swap"), Some(99));
        assert_eq!(pid_of_name("reclaimlab-"), None);
        assert_eq!(pid_of_name("other-1"), None);
    }

    #[test]
    fn failed_undos_stay_in_the_state_file() {
        let dir = std::env::temp_dir().join(format!("rl-state-fail-{}", std::process::id()));
        let mut st = RunState::create_in(&dir).unwrap();
        let data = dir.join("d");
        fs::create_dir_all(&data).unwrap();
        st.log(Entry::DataDir(data.clone())).unwrap();
        let bad = Entry::Sysctl("/nonexistent/reclaimlab/x".into(), "1".into());
        st.log(bad.clone()).unwrap();
        let errs = st.undo_all();
        assert_eq!(errs.len(), 1);
        assert!(!data.exists());
        let left = parse(&fs::read_to_string(st.path()).unwrap());
        assert_eq!(left.pid, std::process::id());
        assert_eq!(left.entries, vec![bad]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn state_file_is_written_and_removed() {
        let dir = std::env::temp_dir().join(format!("rl-state-test-{}", std::process::id()));
        let mut st = RunState::create_in(&dir).unwrap();
        let data = dir.join("reclaimlab-data");
        st.log(Entry::DataDir(data.clone())).unwrap();
        fs::create_dir_all(&data).unwrap();
        let text = fs::read_to_string(st.path()).unwrap();
        assert!(
            text.contains(&format!("datadir {}", data.display())),
            "{text}"
        );
        assert!(st.undo_all().is_empty());
        assert!(!data.exists());
        assert!(!st.path().exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn dead_state_files_are_undone() {
        let dir = std::env::temp_dir().join(format!("rl-state-dead-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let data = dir.join("some-data");
        fs::create_dir_all(&data).unwrap();
        // pid 0x7fff_fff0 is not alive.
        fs::write(
            dir.join("2147483632.state"),
            format!("pid 2147483632\ndatadir {}\n", data.display()),
        )
        .unwrap();
        let (said, errs) = clean_state_files(&dir);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(!data.exists());
        assert!(!dir.join("2147483632.state").exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
