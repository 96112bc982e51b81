//! Writing an output file whole or not at all, and standard output without
//! dying of a closed pipe.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file beside it, renamed into
/// place once complete: a signal, a full disk or a crash mid-write leaves the
/// previous file (or none), never a truncated HTML report. A target that is
/// not a regular file (a symlink, a FIFO, `/dev/stdout`) is written through
/// directly, as the user meant it.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_file() {
            return std::fs::write(path, bytes);
        }
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` to standard output. A reader that went away
/// (`reclaimlab list params | head`) is not an error and not a panic: the
/// rest of the output is dropped and the command goes on (a `run` still
/// puts the host back). Any other failure is an error that says so.
pub fn to_stdout(bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    match o.write_all(bytes.as_ref()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir =
            std::env::temp_dir().join(format!("reclaimlab-write-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("report.html");
        std::fs::write(&p, "old").unwrap();
        write_whole(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A symlink is written through, not replaced.
        let target = dir.join("target.html");
        let link = dir.join("link.html");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_whole(&link, b"via link").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "via link");
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_file(&target).unwrap();
        // A directory that does not exist: an error, and nothing created.
        assert!(write_whole(&dir.join("missing/report.html"), b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
