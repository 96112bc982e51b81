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

use flate2::bufread::MultiGzDecoder;

use crate::error::{RecordError, Result};

/// Longest line accepted (bytes). Longer lines are an error, so a binary file
/// given by mistake cannot make a reader allocate without bound.
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
                if self.buf.len() > MAX_LINE {
                    return Some(Err(io::Error::new(io::ErrorKind::InvalidData, LONG_LINE)));
                }
                let n = self.buf.len() * 2;
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

/// Opens a file for reading, decompressing it (on a helper thread) if it is
/// gzip (by its magic bytes, not its name).
pub fn open_maybe_gz(path: &Path) -> Result<Box<dyn Read + Send>> {
    let gz = is_gzip(path)?;
    let f = File::open(path).map_err(|e| RecordError::io(path, "opening", e))?;
    let r = BufReader::with_capacity(CHUNK, f);
    if gz {
        // Inflate on a helper thread while the caller parses.
        let t = crate::gzthread::GunzipThread::spawn(MultiGzDecoder::new(r))
            .map_err(|e| RecordError::io(path, "starting a reader thread for", e))?;
        Ok(Box::new(t))
    } else {
        Ok(Box::new(r))
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
}
