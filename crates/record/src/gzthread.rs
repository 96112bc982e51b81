//! Gzip compression and decompression on background threads.
//!
//! Compressing the trace is the slowest part of writing a record (deflate runs
//! at a fraction of the speed lines are produced or parsed), so the writer cuts
//! the byte stream into fixed 1 MiB chunks and compresses each, on worker
//! threads, into its own gzip member; a writer thread puts the members into the
//! file in order. The file is a valid multi-member gzip (RFC 1952 §2.2; `zcat`,
//! `gzip -t` and `MultiGzDecoder` read it as one stream). Because chunk
//! boundaries depend only on the bytes, the output is the same whatever the
//! number of threads or the sizes of the writes: deterministic. Memory is
//! bounded: a fixed number of chunks in flight.
//!
//! Reading is the mirror image ([`GunzipThread`]): inflating runs on one
//! thread while the caller splits and parses lines on another.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::mem;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use flate2::{Compression, GzBuilder};

/// Bytes of input per gzip member.
const MEMBER: usize = 1 << 20;
/// Bytes per chunk handed to the decompressing side's consumer.
const CHUNK: usize = 256 * 1024;
/// Chunks queued at most (decompression side).
const IN_FLIGHT: usize = 4;
/// Compressor threads at most.
const MAX_WORKERS: usize = 4;

/// Moves bytes from the front of `data` into `buf` up to a member's worth;
/// true if `buf` is then full (the caller compresses it and calls again).
#[inline]
fn fill_member(buf: &mut Vec<u8>, data: &mut &[u8]) -> bool {
    let take = (MEMBER - buf.len()).min(data.len());
    buf.extend_from_slice(&data[..take]);
    *data = &data[take..];
    buf.len() == MEMBER
}

/// Compresses one chunk into a complete gzip member (no name, mtime 0).
fn member(data: &[u8], level: u32) -> io::Result<Vec<u8>> {
    let mut enc = GzBuilder::new().mtime(0).write(
        Vec::with_capacity(data.len() / 4 + 64),
        Compression::new(level),
    );
    enc.write_all(data)?;
    enc.finish()
}

/// A chunk to compress, or members compressed elsewhere ([`GzMembers`])
/// to put in the file as they are.
enum Payload {
    Raw(Vec<u8>),
    Members(Vec<u8>),
}

type Job = (u64, Payload);
type Done = (u64, io::Result<Vec<u8>>, Vec<u8>);

/// Gzip members built in memory on the caller's thread, cut as
/// `GzThread` cuts them (every 1 MiB of input), for a writer to put into
/// its file later (`GzThread::write_members`): how the simulation of one
/// step, running beside others, holds its trace until the steps before it
/// are in the record. About a tenth of the text's size.
#[derive(Default)]
pub struct GzMembers {
    buf: Vec<u8>,
    out: Vec<u8>,
    level: u32,
    /// Lines (newlines) in the text so far.
    pub lines: u64,
}

impl GzMembers {
    /// An empty stream compressed at `level` (0–9).
    pub fn new(level: u32) -> GzMembers {
        GzMembers {
            level,
            ..GzMembers::default()
        }
    }

    /// Appends text (whole lines).
    pub fn push(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.lines += memchr::memchr_iter(b'\n', data).count() as u64;
        while fill_member(&mut self.buf, &mut data) {
            self.cut()?;
        }
        Ok(())
    }

    fn cut(&mut self) -> io::Result<()> {
        let m = member(&self.buf, self.level)?;
        self.out.extend_from_slice(&m);
        self.buf.clear();
        Ok(())
    }

    /// The members, the last holding the rest of the text (none for no
    /// text), and the number of lines.
    pub fn finish(mut self) -> io::Result<(Vec<u8>, u64)> {
        if !self.buf.is_empty() {
            self.cut()?;
        }
        Ok((self.out, self.lines))
    }
}

/// A `Write` that gzips into a file on background threads. Call
/// [`GzThread::finish`] to complete the file; dropping it without finishing
/// stops the threads (the file is then incomplete).
pub struct GzThread {
    tx: Option<SyncSender<Job>>,
    back: Receiver<Vec<u8>>,
    workers: Vec<JoinHandle<()>>,
    writer: Option<JoinHandle<io::Result<()>>>,
    buf: Vec<u8>,
    seq: u64,
}

impl GzThread {
    /// Creates `path` and starts the compressors (`level` 0–9).
    pub fn create(path: &Path, level: u32) -> io::Result<GzThread> {
        let file = File::create(path)?;
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, MAX_WORKERS);
        let (tx, rx) = sync_channel::<Job>(n * 2);
        let rx = Arc::new(Mutex::new(rx));
        let (done_tx, done_rx) = sync_channel::<Done>(n * 2);
        let (back_tx, back) = sync_channel::<Vec<u8>>(n * 2 + 2);
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            let rx = Arc::clone(&rx);
            let done_tx = done_tx.clone();
            workers.push(
                std::thread::Builder::new()
                    .name(format!("trace-gzip-{i}"))
                    .spawn(move || loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        let Ok((seq, payload)) = job else { return };
                        let (out, data) = match payload {
                            Payload::Raw(data) => (member(&data, level), data),
                            Payload::Members(m) => (Ok(m), Vec::new()),
                        };
                        if done_tx.send((seq, out, data)).is_err() {
                            return;
                        }
                    })?,
            );
        }
        drop(done_tx);
        let writer = std::thread::Builder::new()
            .name("trace-gzip-write".into())
            .spawn(move || -> io::Result<()> {
                let mut w = BufWriter::with_capacity(CHUNK, file);
                let mut next = 0u64;
                let mut waiting: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
                for (seq, out, mut data) in done_rx {
                    if data.capacity() > 0 {
                        data.clear();
                        let _ = back_tx.try_send(data);
                    }
                    waiting.insert(seq, out?);
                    while let Some(m) = waiting.remove(&next) {
                        w.write_all(&m)?;
                        next += 1;
                    }
                }
                if !waiting.is_empty() {
                    return Err(io::Error::other("a trace compressor thread stopped early"));
                }
                w.flush()?;
                w.get_ref().sync_all()
            })?;
        Ok(GzThread {
            tx: Some(tx),
            back,
            workers,
            writer: Some(writer),
            buf: Vec::with_capacity(MEMBER),
            seq: 0,
        })
    }

    fn stop(&mut self) -> io::Result<()> {
        self.tx.take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        match self.writer.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the trace writer thread panicked")),
            None => Err(io::Error::other("the trace writer thread stopped")),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        let next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(MEMBER));
        let full = mem::replace(&mut self.buf, next);
        self.send_payload(Payload::Raw(full))
    }

    /// Puts gzip members compressed elsewhere ([`GzMembers::finish`]) into
    /// the file after everything written so far, which ends its own member
    /// first.
    pub fn write_members(&mut self, members: Vec<u8>) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.send()?;
        }
        if members.is_empty() {
            return Ok(());
        }
        self.send_payload(Payload::Members(members))
    }

    fn send_payload(&mut self, payload: Payload) -> io::Result<()> {
        let sent = match &self.tx {
            Some(tx) => tx.send((self.seq, payload)).is_ok(),
            None => false,
        };
        self.seq += 1;
        if sent {
            Ok(())
        } else {
            // A thread ended: its error is the writer's result.
            Err(self
                .stop()
                .err()
                .unwrap_or_else(|| io::Error::other("the trace compressor stopped")))
        }
    }

    /// Sends the rest (at least one member, so an empty trace is a valid
    /// gzip), waits for the threads, and syncs the file.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.buf.is_empty() || self.seq == 0 {
            self.send()?;
        }
        self.stop()
    }
}

impl Write for GzThread {
    #[inline]
    fn write(&mut self, mut data: &[u8]) -> io::Result<usize> {
        let len = data.len();
        while fill_member(&mut self.buf, &mut data) {
            self.send()?;
        }
        Ok(len)
    }

    #[inline]
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.write(data).map(drop)
    }

    /// A no-op: data reaches the file at [`GzThread::finish`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for GzThread {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A `Read` over any reader run on a background thread (used for gzip
/// decoders): the inner reader fills chunks there; this side hands them out.
/// An error of the inner reader is returned once, after the data before it.
pub struct GunzipThread {
    rx: Receiver<io::Result<Vec<u8>>>,
    back: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
    handle: Option<JoinHandle<()>>,
}

impl GunzipThread {
    /// Starts reading `inner` on a background thread.
    pub fn spawn<R: io::Read + Send + 'static>(mut inner: R) -> io::Result<GunzipThread> {
        let (tx, rx) = sync_channel::<io::Result<Vec<u8>>>(IN_FLIGHT);
        let (back, back_rx) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
        let handle = std::thread::Builder::new()
            .name("trace-gunzip".into())
            .spawn(move || loop {
                let mut chunk = back_rx.try_recv().unwrap_or_default();
                chunk.resize(CHUNK, 0);
                let mut filled = 0;
                let res = loop {
                    match inner.read(&mut chunk[filled..]) {
                        Ok(0) => break Ok(true),
                        Ok(n) => {
                            filled += n;
                            if filled == chunk.len() {
                                break Ok(false);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => break Err(e),
                    }
                };
                chunk.truncate(filled);
                let stop = !matches!(res, Ok(false));
                if !chunk.is_empty() && tx.send(Ok(chunk)).is_err() {
                    return;
                }
                if let Err(e) = res {
                    let _ = tx.send(Err(e));
                }
                if stop {
                    return;
                }
            })?;
        Ok(GunzipThread {
            rx,
            back,
            cur: Vec::new(),
            pos: 0,
            done: false,
            handle: Some(handle),
        })
    }
}

impl io::Read for GunzipThread {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    let old = mem::replace(&mut self.cur, chunk);
                    let _ = self.back.try_send(old);
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Drop for GunzipThread {
    fn drop(&mut self) {
        // Unblock the thread (its sends fail once the receiver is gone).
        let (_, dead) = sync_channel(0);
        drop(mem::replace(&mut self.rx, dead));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn members_decode_and_do_not_depend_on_write_sizes() {
        let dir = std::env::temp_dir().join(format!("gzthread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.gz");
        let mut data = Vec::new();
        for i in 0..300_000 {
            data.extend_from_slice(format!("line {i} some text here\n").as_bytes());
        }
        let mut g = GzThread::create(&p, 1).unwrap();
        for l in data.chunks(37) {
            g.write_all(l).unwrap();
        }
        g.finish().unwrap();
        let small_writes = std::fs::read(&p).unwrap();
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&small_writes[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
        let mut g = GzThread::create(&p, 1).unwrap();
        g.write_all(&data).unwrap();
        g.finish().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), small_writes);
        // Nothing written: still a valid (empty) gzip.
        GzThread::create(&p, 1).unwrap().finish().unwrap();
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&std::fs::read(&p).unwrap()[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn members_built_elsewhere_go_in_between_in_order() {
        let dir = std::env::temp_dir().join(format!("gzmembers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("m.gz");
        let text = |from: u32, n: u32| -> Vec<u8> {
            (from..from + n)
                .flat_map(|i| format!("line {i} of some trace\n").into_bytes())
                .collect()
        };
        let (a, b, c) = (text(0, 1000), text(1000, 90_000), text(91_000, 10));
        let mut m = GzMembers::new(1);
        for l in b.chunks(1000) {
            m.push(l).unwrap();
        }
        let (members, lines) = m.finish().unwrap();
        assert_eq!(lines, 90_000);
        let mut g = GzThread::create(&p, 1).unwrap();
        g.write_all(&a).unwrap();
        g.write_members(members).unwrap();
        g.write_members(Vec::new()).unwrap();
        g.write_all(&c).unwrap();
        g.finish().unwrap();
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&std::fs::read(&p).unwrap()[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, [a, b, c].concat());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn gunzip_thread_reads_all_then_the_error() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut r = GunzipThread::spawn(io::Cursor::new(data.clone())).unwrap();
        let mut back = Vec::new();
        r.read_to_end(&mut back).unwrap();
        assert_eq!(back, data);

        struct Failing(usize);
        impl io::Read for Failing {
            fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "cut"));
                }
                let n = b.len().min(self.0);
                b[..n].fill(b'x');
                self.0 -= n;
                Ok(n)
            }
        }
        let mut r = GunzipThread::spawn(Failing(1000)).unwrap();
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(got.len(), 1000);
        // Dropping early does not hang.
        let r = GunzipThread::spawn(io::repeat(b'a').take(100 << 20)).unwrap();
        drop(r);
    }
}
