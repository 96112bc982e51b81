//! Writing a run record, atomically.
//!
//! A record is written into a temporary sibling directory
//! (`.NAME.partial-PID`) and renamed into place by [`RecordWriter::finish`],
//! after `run.json` has been written last: a crash, a Ctrl-C or an error never
//! leaves a half-written record under the final name, and dropping an
//! unfinished writer removes its partial directory. A writer holds a lock on
//! a file in its partial directory, so that other writers of the same record
//! can tell exactly when it is gone and remove what it left behind. The
//! simulator may emit
//! millions of trace lines and latency samples, so every file is buffered, the
//! trace is compressed as it streams, and numbers are formatted without
//! allocating (`itoa`, `ryu`). Output is deterministic: the same calls give the
//! same bytes (fixed gzip level, no timestamp or name in the gzip header).

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::gzthread::GzThread;
use crate::partial::{
    clear_own_partial, lock_partial, old_name, partial_name, remove_dead_partials, LOCK_FILE,
};

use crate::error::{RecordError, Result};
use crate::meta::RunMeta;

/// File names inside a record directory.
pub mod files {
    /// Metadata.
    pub const RUN_JSON: &str = "run.json";
    /// `/proc/vmstat` samples.
    pub const VMSTAT_CSV: &str = "vmstat.csv";
    /// Latency samples.
    pub const LATENCY_CSV: &str = "latency.csv";
    /// Tracepoint lines, gzip.
    pub const TRACE_GZ: &str = "trace.txt.gz";
}

/// The gzip level of `trace.txt.gz`: fast, since the simulator and importers
/// stream millions of lines through it (ftrace text still shrinks about eightfold).
pub const TRACE_GZIP_LEVEL: u32 = 1;

const BUF: usize = 256 * 1024;

/// Partial directories being written by this process.
static ACTIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Writes one run record. See the module documentation.
pub struct RecordWriter {
    final_dir: PathBuf,
    partial_dir: PathBuf,
    /// The locked [`LOCK_FILE`] of `partial_dir`, held until the directory is
    /// gone: the proof, to cleaners of other processes, that this writer runs.
    lock: Option<File>,
    meta: RunMeta,
    vmstat: BufWriter<File>,
    vmstat_cols: Option<usize>,
    latency: BufWriter<File>,
    /// Compressed on a background thread, fed in large chunks.
    trace: Option<GzThread>,
    trace_lines: u64,
    vmstat_rows: u64,
    latency_rows: u64,
    finished: bool,
}

fn create_file(dir: &Path, name: &str) -> Result<BufWriter<File>> {
    let p = dir.join(name);
    let f = File::create(&p).map_err(|e| RecordError::io(&p, "creating", e))?;
    Ok(BufWriter::with_capacity(BUF, f))
}

/// Writes a float for CSV: shortest round-trip form, never exponent-free
/// guarantees aside (ryu may print `1e-7`, which every CSV reader accepts).
#[inline]
fn put_f64(out: &mut impl Write, v: f64) -> std::io::Result<()> {
    let mut b = ryu::Buffer::new();
    out.write_all(b.format_finite(v).as_bytes())
}

/// Writes seconds with microsecond resolution (`12.345678`), without allocating.
#[inline]
fn put_secs(out: &mut impl Write, t_s: f64) -> std::io::Result<()> {
    let us = (t_s * 1e6).round();
    let neg = us < 0.0;
    let us = us.abs() as u64;
    let mut ib = itoa::Buffer::new();
    if neg {
        out.write_all(b"-")?;
    }
    out.write_all(ib.format(us / 1_000_000).as_bytes())?;
    let frac = us % 1_000_000;
    let mut digits = [b'0'; 7];
    digits[0] = b'.';
    let mut f = frac;
    for d in digits[1..].iter_mut().rev() {
        *d = b'0' + (f % 10) as u8;
        f /= 10;
    }
    out.write_all(&digits)
}

impl RecordWriter {
    /// Starts a record that will appear at `final_dir` when finished. The
    /// partial directory `.NAME.partial-PID` is created beside it, holding a
    /// locked lock file (a stale one of the same name is removed first, and
    /// so are the partial directories of this record whose writers are gone).
    /// `final_dir` itself is not touched until [`RecordWriter::finish`].
    pub fn create(final_dir: &Path, meta: RunMeta) -> Result<Self> {
        let name = final_dir
            .file_name()
            .ok_or_else(|| RecordError::Usage {
                path: final_dir.to_path_buf(),
                message: "a record directory needs a name (not `/`, `.` or `..`)".into(),
            })?
            .to_string_lossy()
            .into_owned();
        let parent = match final_dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(|e| RecordError::io(&parent, "creating", e))?;
        remove_dead_partials(&parent, &name);
        let partial_dir = parent.join(partial_name(&name, std::process::id()));
        // Two writers of this process on the same record would share the
        // partial directory: refuse the second rather than destroy the first.
        {
            let mut active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
            if !active.insert(partial_dir.clone()) {
                return Err(RecordError::Usage {
                    path: final_dir.to_path_buf(),
                    message: "another writer of this process is writing this record; give each run its own --out directory"
                        .into(),
                });
            }
        }
        let w = clear_own_partial(&parent, &name, final_dir)
            .and_then(|()| Self::create_in(final_dir, partial_dir.clone(), meta));
        if w.is_err() {
            let mut active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
            active.remove(&partial_dir);
        }
        w
    }

    /// Creates `partial_dir` and the writer; on an error, removes the
    /// directory again, but only once it is this writer's own.
    fn create_in(final_dir: &Path, partial_dir: PathBuf, meta: RunMeta) -> Result<Self> {
        fs::create_dir(&partial_dir).map_err(|e| RecordError::io(&partial_dir, "creating", e))?;
        let w = Self::open_files(final_dir, partial_dir.clone(), meta);
        if w.is_err() {
            let _ = fs::remove_dir_all(&partial_dir);
        }
        w
    }

    fn open_files(final_dir: &Path, partial_dir: PathBuf, meta: RunMeta) -> Result<Self> {
        // First, so that the directory is claimed before anything is in it.
        let lock = lock_partial(&partial_dir);
        let vmstat = create_file(&partial_dir, files::VMSTAT_CSV)?;
        let mut latency = create_file(&partial_dir, files::LATENCY_CSV)?;
        latency
            .write_all(b"step,metric,t_s,value_us\n")
            .map_err(|e| RecordError::io(partial_dir.join(files::LATENCY_CSV), "writing", e))?;
        // Built last and infallibly: a writer that exists owns its directory
        // (its drop removes it).
        Ok(RecordWriter {
            final_dir: final_dir.to_path_buf(),
            vmstat,
            vmstat_cols: None,
            latency,
            partial_dir,
            lock,
            meta,
            trace: None,
            trace_lines: 0,
            vmstat_rows: 0,
            latency_rows: 0,
            finished: false,
        })
    }

    fn io_err(&self, file: &str, e: std::io::Error) -> RecordError {
        RecordError::io(self.partial_dir.join(file), "writing", e)
    }

    fn usage(&self, message: impl Into<String>) -> RecordError {
        RecordError::Usage {
            path: self.final_dir.clone(),
            message: message.into(),
        }
    }

    /// The final directory this writer will produce.
    pub fn final_dir(&self) -> &Path {
        &self.final_dir
    }

    /// The metadata as it stands.
    pub fn meta(&self) -> &RunMeta {
        &self.meta
    }

    /// The metadata, to update before [`RecordWriter::finish`] (duration, steps, notes).
    pub fn meta_mut(&mut self) -> &mut RunMeta {
        &mut self.meta
    }

    /// Replaces the metadata.
    pub fn set_meta(&mut self, meta: RunMeta) {
        self.meta = meta;
    }

    /// Rejects metadata JSON cannot carry (non-finite numbers would be written
    /// as `null` and make the record unreadable).
    fn check_meta(&self) -> Result<()> {
        let m = &self.meta;
        let mut bad = Vec::new();
        let d = &m.duration;
        for (k, v) in [
            ("duration.user_s", d.user_s),
            ("duration.system_s", d.system_s),
            ("duration.elapsed_s", d.elapsed_s),
            ("capture.trace_time_offset_s", m.capture.trace_time_offset_s),
        ] {
            if !v.is_finite() {
                bad.push(k.to_string());
            }
        }
        for (i, s) in m.steps.iter().enumerate() {
            if !s.start_s.is_finite() || !s.end_s.is_finite() {
                bad.push(format!("steps[{i}]"));
            }
        }
        for (i, t) in m.tasks.iter().enumerate() {
            if !t.user_s.is_finite() || !t.system_s.is_finite() {
                bad.push(format!("tasks[{i}]"));
            }
        }
        for (i, dev) in m.machine.devices.iter().enumerate() {
            if !(dev.write_mb_s.is_finite()
                && dev.read_mb_s.is_finite()
                && dev.latency_us.is_finite())
            {
                bad.push(format!("machine.devices[{i}]"));
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(self.usage(format!(
                "run.json values are not finite numbers: {}",
                bad.join(", ")
            )))
        }
    }

    /// Trace lines written so far.
    pub fn trace_line_count(&self) -> u64 {
        self.trace_lines
    }

    /// vmstat rows written so far.
    pub fn vmstat_row_count(&self) -> u64 {
        self.vmstat_rows
    }

    /// Latency samples written so far.
    pub fn latency_count(&self) -> u64 {
        self.latency_rows
    }

    /// Writes the `vmstat.csv` header: `t_s,step,` then the counter names.
    /// Call once, before any [`RecordWriter::vmstat_row`]. Without it the file
    /// holds the header `t_s,step` and no rows.
    pub fn vmstat_header(&mut self, counters: &[&str]) -> Result<()> {
        if self.vmstat_cols.is_some() {
            return Err(self.usage("vmstat_header called twice"));
        }
        for c in counters {
            if c.is_empty() || c.bytes().any(|b| matches!(b, b',' | b'\n' | b'\r' | b'"')) {
                return Err(self.usage(format!(
                    "vmstat counter name {c:?} is not a /proc/vmstat name"
                )));
            }
        }
        let r: std::io::Result<()> = (|| {
            self.vmstat.write_all(b"t_s,step")?;
            for c in counters {
                self.vmstat.write_all(b",")?;
                self.vmstat.write_all(c.as_bytes())?;
            }
            self.vmstat.write_all(b"\n")
        })();
        r.map_err(|e| self.io_err(files::VMSTAT_CSV, e))?;
        self.vmstat_cols = Some(counters.len());
        Ok(())
    }

    /// Appends one `vmstat.csv` row; `values` in header order.
    pub fn vmstat_row(&mut self, t_s: f64, step: u32, values: &[u64]) -> Result<()> {
        let Some(cols) = self.vmstat_cols else {
            return Err(self.usage("vmstat_row before vmstat_header"));
        };
        if values.len() != cols {
            return Err(self.usage(format!(
                "vmstat_row with {} values, the header has {cols} counters",
                values.len()
            )));
        }
        if !t_s.is_finite() {
            return Err(self.usage(format!("vmstat_row time {t_s} is not finite")));
        }
        let r: std::io::Result<()> = (|| {
            let w = &mut self.vmstat;
            put_secs(w, t_s)?;
            let mut ib = itoa::Buffer::new();
            w.write_all(b",")?;
            w.write_all(ib.format(step).as_bytes())?;
            for v in values {
                w.write_all(b",")?;
                w.write_all(ib.format(*v).as_bytes())?;
            }
            w.write_all(b"\n")
        })();
        r.map_err(|e| self.io_err(files::VMSTAT_CSV, e))?;
        self.vmstat_rows += 1;
        Ok(())
    }

    /// Appends one latency sample (`value_us` in microseconds).
    pub fn latency(&mut self, step: u32, metric: &str, t_s: f64, value_us: f64) -> Result<()> {
        if metric.is_empty()
            || metric
                .bytes()
                .any(|b| matches!(b, b',' | b'\n' | b'\r' | b'"'))
        {
            return Err(self.usage(format!(
                "latency metric {metric:?} must be a non-empty name without `,`, quotes or newlines"
            )));
        }
        if !t_s.is_finite() || !value_us.is_finite() {
            return Err(self.usage(format!(
                "latency sample t_s={t_s} value_us={value_us} is not finite"
            )));
        }
        let r: std::io::Result<()> = (|| {
            let w = &mut self.latency;
            let mut ib = itoa::Buffer::new();
            w.write_all(ib.format(step).as_bytes())?;
            w.write_all(b",")?;
            w.write_all(metric.as_bytes())?;
            w.write_all(b",")?;
            put_secs(w, t_s)?;
            w.write_all(b",")?;
            put_f64(w, value_us)?;
            w.write_all(b"\n")
        })();
        r.map_err(|e| self.io_err(files::LATENCY_CSV, e))?;
        self.latency_rows += 1;
        Ok(())
    }

    fn trace_encoder(&mut self) -> Result<&mut GzThread> {
        match self.trace {
            Some(ref mut t) => Ok(t),
            None => {
                let p = self.partial_dir.join(files::TRACE_GZ);
                let g = GzThread::create(&p, TRACE_GZIP_LEVEL)
                    .map_err(|e| RecordError::io(&p, "creating", e))?;
                Ok(self.trace.insert(g))
            }
        }
    }

    /// Appends one trace line (exact kernel ftrace text, without the newline; a
    /// trailing `\n` is tolerated). Creates `trace.txt.gz` on first use.
    #[inline]
    pub fn trace_line(&mut self, line: &str) -> Result<()> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        if memchr::memchr(b'\n', line.as_bytes()).is_some() {
            return Err(self.usage("trace_line given text with an embedded newline"));
        }
        if line.len() > crate::lines::MAX_LINE {
            return Err(self.usage(format!(
                "trace_line given a line of {} bytes; every reader refuses lines longer than {} bytes (lines::MAX_LINE)",
                line.len(),
                crate::lines::MAX_LINE
            )));
        }
        let enc = self.trace_encoder()?;
        let r = enc
            .write_all(line.as_bytes())
            .and_then(|_| enc.write_all(b"\n"));
        r.map_err(|e| self.io_err(files::TRACE_GZ, e))?;
        self.trace_lines += 1;
        Ok(())
    }

    /// Appends raw bytes of already newline-terminated trace lines (importers
    /// copying validated input); the caller guarantees the format.
    pub fn trace_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let enc = self.trace_encoder()?;
        enc.write_all(bytes)
            .map_err(|e| self.io_err(files::TRACE_GZ, e))?;
        self.trace_lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        Ok(())
    }

    /// Appends trace text compressed elsewhere ([`crate::GzMembers`], at
    /// [`TRACE_GZIP_LEVEL`]) holding `lines` lines: its gzip members go into
    /// `trace.txt.gz` as they are, after what was written before.
    pub fn trace_members(&mut self, members: Vec<u8>, lines: u64) -> Result<()> {
        let enc = self.trace_encoder()?;
        enc.write_members(members)
            .map_err(|e| self.io_err(files::TRACE_GZ, e))?;
        self.trace_lines += lines;
        Ok(())
    }

    /// Completes the record: flushes and syncs every file, writes `run.json`
    /// last, and renames the partial directory into place. An existing record
    /// at `final_dir` (a directory with a `run.json`, or an empty directory) is
    /// replaced only now; anything else there is refused. Returns the final path.
    pub fn finish(mut self) -> Result<PathBuf> {
        self.check_meta()?;
        self.meta.capture.trace_lines = self.trace_lines;
        // An empty trace file when a trace was captured but held no line.
        if self.meta.capture.trace && self.trace.is_none() {
            self.trace_encoder()?;
        }
        if self.vmstat_cols.is_none() {
            self.vmstat_header(&[])?;
        }
        let sync = |w: &mut BufWriter<File>, p: PathBuf| -> Result<()> {
            w.flush().map_err(|e| RecordError::io(&p, "writing", e))?;
            w.get_ref()
                .sync_all()
                .map_err(|e| RecordError::io(&p, "syncing", e))
        };
        sync(&mut self.vmstat, self.partial_dir.join(files::VMSTAT_CSV))?;
        sync(&mut self.latency, self.partial_dir.join(files::LATENCY_CSV))?;
        if let Some(g) = self.trace.take() {
            let p = self.partial_dir.join(files::TRACE_GZ);
            g.finish()
                .map_err(|e| RecordError::io(&p, "compressing", e))?;
        }
        let meta_path = self.partial_dir.join(files::RUN_JSON);
        fs::write(&meta_path, self.meta.to_json())
            .map_err(|e| RecordError::io(&meta_path, "writing", e))?;
        if let Ok(f) = File::open(&meta_path) {
            let _ = f.sync_all();
        }

        // Move into place. Everything up to the rename happens while the
        // partial directory exists and is locked: cleaners leave the old
        // record moved aside alone until then (see `remove_partial_if_dead`).
        let fd = &self.final_dir;
        let mut old = None;
        if fs::symlink_metadata(fd).is_ok() {
            let is_record = fd.join(files::RUN_JSON).is_file();
            let is_empty_dir = fs::read_dir(fd)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if !(is_record || is_empty_dir) {
                return Err(RecordError::Usage {
                    path: fd.clone(),
                    message: "exists and is not a run record (no run.json); \
                              refusing to replace it — choose another --out or remove it"
                        .into(),
                });
            }
            let name = fd
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let parent = self
                .partial_dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let o = parent.join(old_name(&name, std::process::id()));
            if o.exists() {
                let _ = fs::remove_dir_all(&o);
            }
            fs::rename(fd, &o)
                .map_err(|e| RecordError::io(fd, "moving the old record aside", e))?;
            old = Some(o);
        }
        if let Err(e) = fs::rename(&self.partial_dir, fd) {
            if let Some(o) = &old {
                let _ = fs::rename(o, fd);
            }
            return Err(RecordError::io(
                fd,
                "renaming the finished record into place",
                e,
            ));
        }
        self.finished = true;
        // The lock file came along; it is no part of the record. Unlinked
        // only now, still locked: a cleaner never saw a lock-less partial
        // directory, and never looks inside `final_dir`. Should this fail,
        // the reader ignores the file.
        if self.lock.is_some() {
            let _ = fs::remove_file(fd.join(LOCK_FILE));
        }
        if let Some(o) = old {
            let _ = fs::remove_dir_all(o);
        }
        Ok(self.final_dir.clone())
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        let mut active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
        active.remove(&self.partial_dir);
        drop(active);
        if !self.finished {
            // Stop the compressor first so its file is closed; errors are moot.
            self.trace.take();
            // Removed while still locked (`lock` is dropped after this body),
            // so no cleaner takes this writer for a dead one meanwhile.
            let _ = fs::remove_dir_all(&self.partial_dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Origin;
    use crate::partial::*;

    #[test]
    fn partial_names() {
        assert_eq!(partial_pid(".x.partial-123", "x"), Some(123));
        assert_eq!(partial_pid(".v5.16,a=b.partial-7", "v5.16,a=b"), Some(7));
        for other in [
            "x.partial-123",
            ".x.partial-",
            ".x.partial-12a",
            ".x.partial-+12",
            ".x.partial-99999999999999999999",
            ".xy.partial-123",
            ".x.partial-1.partial-2",
            ".y.partial-123",
        ] {
            assert_eq!(partial_pid(other, "x"), None, "{other}");
        }
    }

    /// Sets the modification time of each of `paths` (files or directories)
    /// an hour back, as if their writer had stopped then.
    fn last_modified_an_hour_ago(paths: &[PathBuf]) {
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for p in paths {
            fs::File::open(p).unwrap().set_modified(hour_ago).unwrap();
        }
    }

    /// Partial directories without a lock file (written by versions before
    /// locking) follow the PID-and-ten-minutes rule.
    #[test]
    fn removes_partials_of_dead_processes() {
        if !Path::new("/proc/self").exists() {
            return; // No way to tell a dead PID here; nothing is removed.
        }
        let dir =
            std::env::temp_dir().join(format!("reclaimlab-writer-stale-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        // Left by a process that no longer runs (beyond any pid_max).
        let dead = dir.join(".x.partial-999999999");
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("vmstat.csv"), "t_s,step\n").unwrap();
        // Quiet for an hour, so neither an invisible writer's.
        last_modified_an_hour_ago(&[dead.join("vmstat.csv"), dead.clone()]);
        // Of a process this one cannot see (another PID namespace) that is
        // still writing: kept.
        let invisible = dir.join(".x.partial-999999998");
        fs::create_dir(&invisible).unwrap();
        fs::write(invisible.join("vmstat.csv"), "t_s,step\n").unwrap();
        // Of a running process (PID 1 always is): in use, kept.
        let live = dir.join(".x.partial-1");
        fs::create_dir(&live).unwrap();
        // Of a writer that has not yet renamed its locked lock file into
        // place: judged by the same rule, so kept.
        let creating = dir.join(".x.partial-999999997");
        fs::create_dir(&creating).unwrap();
        fs::write(creating.join(LOCK_FILE_NEW), "").unwrap();
        // Not this record's partial directory, or not a partial directory.
        let keep = [
            ".y.partial-999999999",
            ".y.old-999999999",
            "x-notes",
            ".x.partial-999999999x",
        ];
        for k in keep {
            fs::create_dir(dir.join(k)).unwrap();
        }
        let w =
            RecordWriter::create(&dir.join("x"), RunMeta::new("x", Origin::Sim, "v5.15")).unwrap();
        assert!(
            !dead.exists(),
            "the dead process's partial directory is left"
        );
        assert!(
            live.exists(),
            "a running process's partial directory was removed"
        );
        assert!(
            invisible.exists() && creating.exists(),
            "a partial directory written a moment ago was removed"
        );
        for k in keep {
            assert!(dir.join(k).exists(), "{k} was removed");
        }
        drop(w);
        let _ = fs::remove_dir_all(&dir);
    }

    /// Killed between its two renames, a writer leaves the old record aside
    /// (`.x.old-PID`) and no `x`: the next writer of `x` puts it back. Here
    /// without its partial directory, as an older version (or a cleaner of
    /// one) may leave it, so by the PID-and-ten-minutes rule.
    #[test]
    fn restores_a_record_moved_aside_by_a_dead_process() {
        if !Path::new("/proc/self").exists() {
            return;
        }
        let dir =
            std::env::temp_dir().join(format!("reclaimlab-writer-old-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let old = dir.join(".x.old-999999999");
        fs::create_dir(&old).unwrap();
        fs::write(old.join("run.json"), "{}").unwrap();
        // With a record in place, a dead process's old copy is just removed.
        let stale = dir.join(".y.old-999999999");
        fs::create_dir(&stale).unwrap();
        // Both left an hour ago.
        last_modified_an_hour_ago(&[old.join("run.json"), old.clone(), stale.clone()]);
        fs::create_dir(dir.join("y")).unwrap();
        let w =
            RecordWriter::create(&dir.join("x"), RunMeta::new("x", Origin::Sim, "v5.15")).unwrap();
        assert_eq!(fs::read_to_string(dir.join("x/run.json")).unwrap(), "{}");
        assert!(!old.exists());
        drop(w);
        let w =
            RecordWriter::create(&dir.join("y"), RunMeta::new("y", Origin::Sim, "v5.15")).unwrap();
        assert!(!stale.exists() && dir.join("y").exists());
        drop(w);
        let _ = fs::remove_dir_all(&dir);
    }

    /// A fresh, empty directory for one test.
    fn test_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("reclaimlab-writer-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Makes `dir` a partial directory as a writer does, with a file in it
    /// and its lock file locked; returns the lock, which the test holds for
    /// that writer (dropping it plays the writer's death).
    fn locked_partial(dir: &Path) -> File {
        fs::create_dir(dir).unwrap();
        let lock = File::create(dir.join(LOCK_FILE)).unwrap();
        lock.try_lock().unwrap();
        fs::write(dir.join(files::VMSTAT_CSV), "t_s,step\n").unwrap();
        lock
    }

    /// `dir/.NAME.old-PID` holding a record with `run.json` `{}`.
    fn moved_aside(dir: &Path, name: &str, pid: u32) -> PathBuf {
        let old = dir.join(old_name(name, pid));
        fs::create_dir(&old).unwrap();
        fs::write(old.join(files::RUN_JSON), "{}").unwrap();
        old
    }

    fn meta() -> RunMeta {
        RunMeta::new("x", Origin::Sim, "v5.15")
    }

    /// The tests hold locks for other writers from this process, and the
    /// cleaner judges this process's own writers by their locks: both rely
    /// on a lock (flock) belonging to an open file, not to a process, so
    /// that a second open of the file in the same process cannot take it.
    #[test]
    fn a_lock_excludes_another_open_file_of_the_same_process() {
        let dir = test_dir("flock");
        let held = File::create(dir.join(LOCK_FILE)).unwrap();
        held.try_lock().unwrap();
        let other = File::open(dir.join(LOCK_FILE)).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(fs::TryLockError::WouldBlock)
        ));
        assert!(matches!(probe_writer(&dir), Writer::Running));
        drop(held);
        assert!(matches!(probe_writer(&dir), Writer::Gone(_)));
        drop(other);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A writer holding its lock runs, however long ago it last wrote and
    /// although its PID is not in this `/proc` (another PID namespace): its
    /// partial directory and the record it moved aside stay as they are.
    #[test]
    fn keeps_partials_whose_lock_is_held() {
        let dir = test_dir("held");
        let partial = dir.join(".x.partial-999999999");
        let lock = locked_partial(&partial);
        // Between its two renames: the old record aside, no `x` yet.
        let old = moved_aside(&dir, "x", 999999999);
        last_modified_an_hour_ago(&[
            partial.join(LOCK_FILE),
            partial.join(files::VMSTAT_CSV),
            partial.clone(),
            old.join(files::RUN_JSON),
            old.clone(),
        ]);
        let w = RecordWriter::create(&dir.join("x"), meta()).unwrap();
        assert!(
            partial.join(files::VMSTAT_CSV).exists(),
            "a locked partial directory was removed"
        );
        assert!(
            old.exists() && !dir.join("x").exists(),
            "the record moved aside by a running writer was touched"
        );
        drop(w);
        drop(lock);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A free lock means its writer is gone, at once: even though its PID
    /// is in use (PID 1 always is) and its files were written a moment ago.
    /// The record it had moved aside goes back in place.
    #[test]
    fn removes_partials_with_a_free_lock_at_once() {
        let dir = test_dir("free");
        let partial = dir.join(".x.partial-1");
        drop(locked_partial(&partial));
        let old = moved_aside(&dir, "x", 1);
        let w = RecordWriter::create(&dir.join("x"), meta()).unwrap();
        assert!(
            !partial.exists(),
            "the partial directory of a gone writer is left"
        );
        assert!(!old.exists(), "the record moved aside is left aside");
        assert_eq!(fs::read_to_string(dir.join("x/run.json")).unwrap(), "{}");
        drop(w);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A record moved aside whose writer's partial directory is gone (its
    /// record is in place) is a superseded copy: removed at once, although
    /// its writer may still be running (PID 1 is) and removing it.
    #[test]
    fn removes_superseded_records_moved_aside_at_once() {
        let dir = test_dir("superseded");
        let old = moved_aside(&dir, "x", 1);
        fs::create_dir(dir.join("x")).unwrap();
        fs::write(dir.join("x/run.json"), "[]").unwrap();
        let w = RecordWriter::create(&dir.join("x"), meta()).unwrap();
        assert!(!old.exists(), "the superseded copy is left");
        assert_eq!(fs::read_to_string(dir.join("x/run.json")).unwrap(), "[]");
        drop(w);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A writer's partial directory is locked from its creation until it is
    /// renamed into place or removed; no lock file is left in the record.
    #[test]
    fn a_writer_holds_its_lock_until_finished() {
        let dir = test_dir("own");
        let partial = dir.join(partial_name("x", std::process::id()));
        for _ in 0..2 {
            // The second time, the first record is moved aside and replaced.
            let w = RecordWriter::create(&dir.join("x"), meta()).unwrap();
            assert!(matches!(probe_writer(&partial), Writer::Running));
            assert!(!partial.join(LOCK_FILE_NEW).exists());
            let out = w.finish().unwrap();
            let mut names: Vec<_> = fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            assert_eq!(
                names,
                [files::LATENCY_CSV, files::RUN_JSON, files::VMSTAT_CSV]
            );
            crate::Record::open(&out).unwrap();
        }
        drop(RecordWriter::create(&dir.join("x"), meta()).unwrap());
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["x"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A partial directory with this process's PID that this process is not
    /// writing, but whose lock is held: a process with the same PID in
    /// another PID namespace writing the same record. Refused rather than
    /// destroyed; once its lock is free, replaced.
    #[test]
    fn refuses_a_locked_partial_directory_with_its_own_pid() {
        let dir = test_dir("samepid");
        let partial = dir.join(partial_name("x", std::process::id()));
        let lock = locked_partial(&partial);
        fs::write(partial.join("theirs"), "").unwrap();
        match RecordWriter::create(&dir.join("x"), meta()) {
            Err(RecordError::Usage { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a partial directory in use was taken over"),
        }
        assert!(partial.join("theirs").exists());
        drop(lock);
        let w = RecordWriter::create(&dir.join("x"), meta()).unwrap();
        assert!(!partial.join("theirs").exists());
        assert!(matches!(probe_writer(&partial), Writer::Running));
        drop(w);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn secs_format() {
        let mut v = Vec::new();
        put_secs(&mut v, 12.345678).unwrap();
        v.push(b' ');
        put_secs(&mut v, 0.0).unwrap();
        v.push(b' ');
        put_secs(&mut v, 1.0000004).unwrap();
        v.push(b' ');
        put_secs(&mut v, -0.5).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "12.345678 0.000000 1.000000 -0.500000"
        );
    }
}
