//! Block devices: bandwidth, latency, a random-I/O penalty, a request limit,
//! and the two request layers' view of congestion.
//!
//! Service model: the device transfers one request at a time at its
//! bandwidth (requests in flight share the bandwidth, so FIFO service is
//! equivalent for throughput), a request that does not continue the previous
//! one pays `seek_us` more, and every request completes `latency_us` after its
//! transfer ends. Completions are handled by a per-device interrupt task.
//!
//! Congestion (kernel-reclaim.md §B.2): the single-queue layer
//! (`block/blk-core.c` ≤4.20, `blk_queue_congestion_threshold`) marks the bdi
//! congested when a direction's requests in flight reach
//! `nr_requests - nr_requests/8 + 1` and clears it (`clear_bdi_congested`,
//! which wakes `congestion_wait` sleepers) when they drop below
//! `nr_requests - nr_requests/8 - nr_requests/16 - 1`. blk-mq never does either.

use std::collections::VecDeque;

use crate::engine::{TaskId, WaitQueue, World};
use crate::machine::{DeviceSpec, Layer};
use crate::mm::page::Pfn;
use crate::params::Params;
use crate::Kernel;

/// `BLK_RW_ASYNC`: writes (writeback, swap-out).
pub const BLK_RW_ASYNC: usize = 0;
/// `BLK_RW_SYNC`: reads.
pub const BLK_RW_SYNC: usize = 1;

/// What a request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    /// File pages written back.
    FileWrite,
    /// Anon pages written to swap.
    SwapOut,
    /// File pages read.
    FileRead,
    /// Anon pages read from swap.
    SwapIn,
}

impl ReqKind {
    fn dir(self) -> usize {
        match self {
            ReqKind::FileWrite | ReqKind::SwapOut => BLK_RW_ASYNC,
            ReqKind::FileRead | ReqKind::SwapIn => BLK_RW_SYNC,
        }
    }
}

/// A request.
#[derive(Debug)]
pub struct Request {
    /// Kind.
    pub kind: ReqKind,
    /// Pages, in device order.
    pub pages: Vec<Pfn>,
    /// Device position of the first page (in pages).
    pub pos: u64,
    /// Completion time.
    pub done_at: u64,
    /// Task waiting for it, with its block sequence.
    pub waiter: Option<(TaskId, u32)>,
}

/// A block device and its request queue.
#[derive(Debug)]
pub struct BlockDev {
    /// Name.
    pub name: String,
    /// Request layer.
    pub layer: Layer,
    /// ns per 4 KiB page written.
    pub write_ns_per_page: f64,
    /// ns per 4 KiB page read.
    pub read_ns_per_page: f64,
    /// Completion latency, ns.
    pub latency_ns: u64,
    /// Random-I/O penalty, ns.
    pub seek_ns: u64,
    /// Request slots per direction.
    pub nr_requests: u32,
    /// Congestion on threshold (single-queue).
    pub congestion_on: u32,
    /// Congestion off threshold (single-queue).
    pub congestion_off: u32,
    /// Requests in flight per direction.
    pub in_flight: [u32; 2],
    /// Congested per direction (`WB_{a}sync_congested`).
    pub congested: [bool; 2],
    /// End of the current transfer.
    pub busy_until: u64,
    /// Position after the last transferred request.
    pub next_pos: u64,
    /// Requests in completion order.
    pub completions: VecDeque<Request>,
    /// The interrupt task sleeps here when idle.
    pub irq_wait: WaitQueue,
    /// Submitters wait here for a free request slot (`get_request`).
    pub slot_wait: [WaitQueue; 2],
    /// Next free device position for new files.
    pub alloc_pos: u64,
    /// Pages written, read.
    pub pages_written: u64,
    /// Pages read.
    pub pages_read: u64,
}

impl BlockDev {
    /// A device from its machine description.
    pub fn new(d: &DeviceSpec, p: &Params) -> BlockDev {
        // The single-queue layer has `nr_requests` per direction; blk-mq
        // with an I/O scheduler allocates 2 × the hardware queue depth
        // (`blk_mq_init_sched`: `2 * min(queue_depth, BLKDEV_DEFAULT_RQ)`).
        let nr = match d.layer {
            Layer::SingleQueue => p.nr_requests as u32,
            Layer::BlkMq => 2 * d.queue_depth.min(128),
        };
        BlockDev {
            name: d.name.clone(),
            layer: d.layer,
            write_ns_per_page: 4096.0 * 1000.0 / d.write_mb_s,
            read_ns_per_page: 4096.0 * 1000.0 / d.read_mb_s,
            latency_ns: (d.latency_us * 1000.0) as u64,
            seek_ns: (d.seek_us * 1000.0) as u64,
            nr_requests: nr,
            congestion_on: (nr - nr / 8 + 1).min(nr),
            congestion_off: (nr - nr / 8 - nr / 16).saturating_sub(1).max(1),
            in_flight: [0; 2],
            congested: [false; 2],
            busy_until: 0,
            next_pos: 0,
            completions: VecDeque::new(),
            irq_wait: WaitQueue::default(),
            slot_wait: Default::default(),
            alloc_pos: 1 << 32,
            pages_written: 0,
            pages_read: 0,
        }
    }
}

impl Kernel {
    /// `set_bdi_congested`
    fn set_bdi_congested(&mut self, d: usize, dir: usize) {
        if !self.devs[d].congested[dir] {
            self.devs[d].congested[dir] = true;
            self.nr_wb_congested[dir] += 1;
        }
    }

    /// `clear_bdi_congested`: also wakes `congestion_wait` sleepers of that direction.
    pub fn clear_bdi_congested(&mut self, d: usize, dir: usize) {
        if self.devs[d].congested[dir] {
            self.devs[d].congested[dir] = false;
            self.nr_wb_congested[dir] -= 1;
        }
        let wq = &mut self.congestion_wqh[dir];
        if wq.active() {
            self.exec.wake_up_all(wq);
        }
    }

    /// Queues a request that has a slot: computes its completion time and
    /// wakes the device's interrupt task if it was idle.
    fn queue_request(&mut self, d: usize, mut rq: Request) {
        let now = self.exec.now();
        let dir = rq.kind.dir();
        let dev = &mut self.devs[d];
        let n = rq.pages.len() as u64;
        let per = if dir == BLK_RW_ASYNC {
            dev.write_ns_per_page
        } else {
            dev.read_ns_per_page
        };
        let mut service = (per * n as f64) as u64;
        if rq.pos != dev.next_pos {
            service += dev.seek_ns;
        }
        dev.next_pos = rq.pos + n;
        let start = dev.busy_until.max(now);
        dev.busy_until = start + service;
        rq.done_at = dev.busy_until + dev.latency_ns;
        if dir == BLK_RW_ASYNC {
            dev.pages_written += n;
        } else {
            dev.pages_read += n;
        }
        dev.in_flight[dir] += 1;
        let congest =
            dev.layer == Layer::SingleQueue && dev.in_flight[dir] + 1 >= dev.congestion_on;
        dev.completions.push_back(rq);
        if dev.irq_wait.active() {
            let mut wq = std::mem::take(&mut dev.irq_wait);
            self.exec.wake_up_all(&mut wq);
        }
        if congest {
            self.set_bdi_congested(d, dir);
        }
    }

    /// Finishes the first request of device `d` (its completion time has come).
    fn complete_request(&mut self, d: usize) {
        let Some(rq) = self.devs[d].completions.pop_front() else {
            return;
        };
        let dir = rq.kind.dir();
        match rq.kind {
            ReqKind::FileWrite | ReqKind::SwapOut => {
                for &pfn in &rq.pages {
                    self.folio_end_writeback(pfn);
                }
            }
            ReqKind::FileRead | ReqKind::SwapIn => {
                // folio_end_read(): uptodate, unlock, wake the lock's waiters.
                for &pfn in &rq.pages {
                    let p = self.frames.get_mut(pfn);
                    p.set(crate::mm::page::pg::UPTODATE);
                    p.clear(crate::mm::page::pg::LOCKED);
                    let nid = p.nid as usize;
                    if self.nodes[nid].page_wait.active() {
                        let mut wq = std::mem::take(&mut self.nodes[nid].page_wait);
                        self.exec.wake_up_all(&mut wq);
                        self.nodes[nid].page_wait = wq;
                    }
                }
            }
        }
        if let Some((t, seq)) = rq.waiter {
            self.exec.wake(t, seq, crate::engine::Wake::Woken);
        }
        let dev = &mut self.devs[d];
        dev.in_flight[dir] -= 1;
        let clear = dev.layer == Layer::SingleQueue
            && dev.in_flight[dir] < dev.congestion_off
            && dev.congested[dir];
        let mut wq = std::mem::take(&mut dev.slot_wait[dir]);
        self.exec.wake_one(&mut wq);
        let rest = std::mem::take(&mut self.devs[d].slot_wait[dir]);
        self.devs[d].slot_wait[dir] = wq;
        debug_assert!(rest.is_empty());
        if clear {
            self.clear_bdi_congested(d, dir);
        }
    }
}

/// `submit_bio`: waits for a request slot (`get_request` sleeps in
/// `io_schedule`), then queues the request. If `wait` is true, also waits for
/// its completion (a read the caller needs).
pub async fn submit_bio(w: &World, d: usize, kind: ReqKind, pages: Vec<Pfn>, pos: u64, wait: bool) {
    let dir = kind.dir();
    loop {
        let full = {
            let mut k = w.k();
            let k = &mut *k;
            let dev = &mut k.devs[d];
            if dev.in_flight[dir] < dev.nr_requests {
                false
            } else {
                k.exec.prepare_to_wait(&mut dev.slot_wait[dir]);
                true
            }
        };
        if !full {
            break;
        }
        w.block(None).await;
        let mut k = w.k();
        let k = &mut *k;
        k.exec.finish_wait(&mut k.devs[d].slot_wait[dir]);
    }
    {
        let mut k = w.k();
        let waiter = if wait {
            let t = k.exec.current();
            Some((t, k.exec.sched[t as usize].wait_seq))
        } else {
            None
        };
        k.queue_request(
            d,
            Request {
                kind,
                pages,
                pos,
                done_at: 0,
                waiter,
            },
        );
    }
    if wait {
        w.block(None).await;
    }
}

/// The device's interrupt task: completes requests at their time.
pub async fn device_irq(w: std::rc::Rc<World>, d: usize) {
    loop {
        let next = {
            let mut k = w.k();
            let k = &mut *k;
            match k.devs[d].completions.front().map(|r| r.done_at) {
                None => {
                    k.exec.prepare_to_wait(&mut k.devs[d].irq_wait);
                    None
                }
                Some(at) => Some(at),
            }
        };
        match next {
            None => {
                w.block(None).await;
                let mut k = w.k();
                let k = &mut *k;
                k.exec.finish_wait(&mut k.devs[d].irq_wait);
            }
            Some(at) => {
                w.sleep_until(at).await;
                w.k().complete_request(d);
            }
        }
    }
}
