//! Fast, bounded-memory line splitting over any reader, and opening of plain or
//! gzip-compressed inputs.
//!
//! `BufRead::read_line` copies every line into a caller buffer and allocates on
//! growth; traces run to millions of lines, so this reader fills one large
//! buffer and hands out borrowed slices found with `memchr`, copying only the
//! partial line at a buffer's end. Memory stays bounded by [`MAX_LINE`].

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::bufread::MultiGzDecoder;

use crate::error::{RecordError, Result};

/// Longest line accepted (bytes, without the newline): the one limit that the
/// importers, [`crate::RecordWriter`], the record reader and the report's
/// trace reader all enforce. Longer lines are an error (or, in the report, a
/// skipped garbled line), so a binary file given by mistake cannot make a
/// reader allocate without bound. No tracepoint line comes near it (the
/// kernel's trace buffer pages are 4 KiB).
pub const MAX_LINE: usize = 1 << 20;

const CHUNK: usize = 256 * 1024;

/// Splits a byte stream into lines without the `\n` (a trailing `\r` is kept;
/// parsers trim it). The last line may lack a newline.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    last: (usize, usize),
}

impl<R: Read> LineReader<R> {
    /// Wraps a reader.
    pub fn new(inner: R) -> Self {
        LineReader {
            inner,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            eof: false,
            last: (0, 0),
        }
    }

    /// The line last returned by [`LineReader::next_line`] (empty before the first).
    pub fn last(&self) -> &[u8] {
        &self.buf[self.last.0..self.last.1]
    }

    /// The next line, `None` at the end, or the reader's error (a line longer
    /// than [`MAX_LINE`] is an `InvalidData` error).
    #[allow(clippy::should_implement_trait)]
    pub fn next_line(&mut self) -> Option<io::Result<&[u8]>> {
        let mut scanned = self.start;
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[scanned..self.end]) {
                let s = self.start;
                let e = scanned + pos;
                self.start = e + 1;
                self.last = (s, e);
                return Some(Ok(&self.buf[s..e]));
            }
            scanned = self.end;
            if self.end - self.start > MAX_LINE {
                // Exactly the limit: a line of MAX_LINE bytes passes, one more fails.
                return Some(Err(io::Error::new(io::ErrorKind::InvalidData, LONG_LINE)));
            }
            if self.eof {
                if self.start < self.end {
                    let s = self.start;
                    self.start = self.end;
                    self.last = (s, self.end);
                    return Some(Ok(&self.buf[s..self.end]));
                }
                return None;
            }
            // Make room: move the partial line to the front, grow if full.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                scanned -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                // Room for the longest line plus its newline, at most.
                let n = (self.buf.len() * 2).min(MAX_LINE + CHUNK);
                self.buf.resize(n, 0);
            }
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// The message of the error [`LineReader`] returns for an over-long line.
const LONG_LINE: &str = "a line longer than 1 MiB";

/// Turns an error of reading line `line` of `path` into a [`RecordError`]:
/// an over-long line is a line error (with a hint that the input is not text),
/// an error of a gzip input is [`RecordError::Gzip`] (truncated or corrupt), any
/// other an I/O error.
pub(crate) fn read_error(path: &Path, line: u64, gz: bool, e: io::Error) -> RecordError {
    if e.kind() == io::ErrorKind::InvalidData && e.to_string().starts_with(LONG_LINE) {
        RecordError::line(
            path,
            line,
            format!("{LONG_LINE}: not a text file? (a binary trace.dat must first go through `trace-cmd report`)"),
        )
    } else if gz && e.kind() == io::ErrorKind::InvalidData && e.to_string().starts_with(GZIP_BOMB) {
        if line == 0 {
            RecordError::Import {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        } else {
            RecordError::line(path, line, e.to_string())
        }
    } else if gz {
        RecordError::Gzip {
            path: path.to_path_buf(),
            line,
            err: e,
        }
    } else {
        RecordError::io(path, "reading", e)
    }
}

/// Whether a file starts with the gzip magic bytes.
pub fn is_gzip(path: &Path) -> Result<bool> {
    let mut f = File::open(path).map_err(|e| RecordError::io(path, "opening", e))?;
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match f.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(RecordError::io(path, "reading", e)),
        }
    }
    Ok(got == 2 && magic == [0x1f, 0x8b])
}

/// Most a gzip input may expand (decompressed bytes per compressed byte) once
/// it has produced [`GZIP_RATIO_GRACE`] bytes. ftrace text compresses about
/// 10 times (a simulated stall-heavy trace 11, the report bench's synthetic
/// one 9); deflate's own limit is about 1030 (a file of zeros), so a "gzip
/// bomb" is refused after reading at most 1/200 of what it would expand to.
pub const MAX_GZIP_RATIO: u64 = 200;
/// Decompressed bytes read before the ratio is checked (small files of
/// repeated text may compress better than any trace).
pub const GZIP_RATIO_GRACE: u64 = 64 << 20;

/// How the error of an over-expanding gzip input begins (see [`read_error`]).
pub const GZIP_BOMB: &str = "decompresses to more than";

/// Counts the bytes read through it into a shared counter.
struct Counting<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A gzip decoder that fails with `InvalidData` ([`GZIP_BOMB`]) once its
/// output passes [`GZIP_RATIO_GRACE`] and exceeds [`MAX_GZIP_RATIO`] times
/// the compressed bytes read.
pub struct BoundedGz<R: io::BufRead> {
    inner: MultiGzDecoder<R>,
    compressed: Arc<AtomicU64>,
    out: u64,
}

impl<R: io::BufRead> Read for BoundedGz<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out += n as u64;
        if self.out > GZIP_RATIO_GRACE {
            let c = self.compressed.load(Ordering::Relaxed).max(1);
            if self.out > c.saturating_mul(MAX_GZIP_RATIO) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{GZIP_BOMB} {MAX_GZIP_RATIO} times its compressed size ({} MiB from {} KiB): \
                         not a trace or log (a \"gzip bomb\"?); ftrace text compresses 8-30 times. \
                         If it is genuine, give it uncompressed (`zcat FILE > FILE.txt`)",
                        self.out >> 20,
                        c >> 10
                    ),
                ));
            }
        }
        Ok(n)
    }
}

/// A gzip decoder over `r` bounded as [`BoundedGz`] says.
pub fn gunzip_bounded<R: Read>(r: R) -> BoundedGz<BufReader<impl Read>> {
    let compressed = Arc::new(AtomicU64::new(0));
    let counting = Counting {
        inner: r,
        n: Arc::clone(&compressed),
    };
    BoundedGz {
        inner: MultiGzDecoder::new(BufReader::with_capacity(1 << 16, counting)),
        compressed,
        out: 0,
    }
}

/// Reads a whole input (plain or gzip) of at most `cap` bytes (decompressed):
/// run.json, the CSVs, mmtests' `tests-sysstate`. A larger one is an error
/// naming the file, the limit and the likely cause, before it can exhaust
/// memory (an endless file, a wrong path, a bomb). `what` names the file's role.
pub fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let gz = is_gzip(path)?;
    let mut r = open_maybe_gz(path)?;
    let mut raw = Vec::new();
    (&mut r)
        .take(cap + 1)
        .read_to_end(&mut raw)
        .map_err(|e| read_error(path, 0, gz, e))?;
    if raw.len() as u64 > cap {
        return Err(RecordError::Import {
            path: path.to_path_buf(),
            message: format!(
                "larger than {} MiB{}; {what} is never that large: is this the right file? \
                 (the limit keeps a wrong or endless file from exhausting memory)",
                cap >> 20,
                if gz { " decompressed" } else { "" }
            ),
        });
    }
    Ok(raw)
}

/// Opens a file for reading, decompressing it (on a helper thread) if it is
/// gzip (by its magic bytes, not its name), bounded by [`MAX_GZIP_RATIO`].
pub fn open_maybe_gz(path: &Path) -> Result<Box<dyn Read + Send>> {
    let gz = is_gzip(path)?;
    let f = File::open(path).map_err(|e| RecordError::io(path, "opening", e))?;
    if gz {
        // Inflate on a helper thread while the caller parses.
        let t = crate::gzthread::GunzipThread::spawn(gunzip_bounded(f))
            .map_err(|e| RecordError::io(path, "starting a reader thread for", e))?;
        Ok(Box::new(t))
    } else {
        Ok(Box::new(BufReader::with_capacity(CHUNK, f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(data: &[u8]) -> Vec<Vec<u8>> {
        let mut r = LineReader::new(data);
        let mut out = Vec::new();
        while let Some(l) = r.next_line() {
            out.push(l.unwrap().to_vec());
        }
        out
    }

    #[test]
    fn splits_lines() {
        assert_eq!(
            collect(b"a\nbb\n\nc"),
            vec![b"a".to_vec(), b"bb".to_vec(), vec![], b"c".to_vec()]
        );
        assert_eq!(collect(b""), Vec::<Vec<u8>>::new());
        assert_eq!(collect(b"x\n"), vec![b"x".to_vec()]);
    }

    #[test]
    fn lines_across_chunks() {
        let mut data = Vec::new();
        for i in 0..100_000u32 {
            data.extend_from_slice(format!("line number {i} with some padding text\n").as_bytes());
        }
        let lines = collect(&data);
        assert_eq!(lines.len(), 100_000);
        assert_eq!(
            lines[99_999],
            b"line number 99999 with some padding text".to_vec()
        );
    }

    #[test]
    fn long_line_is_an_error() {
        let data = vec![b'x'; MAX_LINE * 3];
        let mut r = LineReader::new(&data[..]);
        assert!(r.next_line().unwrap().is_err());
    }

    /// Issue 22: lines of 1–2 MiB used to pass (the buffer doubled past the
    /// limit before it was checked). The limit is exact now.
    #[test]
    fn the_limit_is_exact() {
        let mut ok = vec![b'y'; MAX_LINE];
        ok.push(b'\n');
        ok.extend_from_slice(b"next\n");
        assert_eq!(collect(&ok).len(), 2);
        let mut long = vec![b'z'; MAX_LINE * 3 / 2];
        long.push(b'\n');
        let mut r = LineReader::new(&long[..]);
        let e = r.next_line().unwrap().unwrap_err();
        assert!(e.to_string().contains("1 MiB"), "{e}");
        // Also when the line does not end at all (a last line of 1.5 MiB).
        let mut r = LineReader::new(&long[..long.len() - 1]);
        assert!(r.next_line().unwrap().is_err());
    }
}
