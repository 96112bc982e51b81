//! Block devices: bandwidth, latency, a random-I/O penalty, a request limit,
//! and the two request layers' view of congestion.
//!
//! Service model: the device transfers one request at a time at its
//! bandwidth (requests in flight share the bandwidth, so FIFO service is
//! equivalent for throughput), a request that does not continue the previous
//! one pays `seek_us` more, and every request completes `latency_us` after its
//! transfer ends. Completions are handled by a per-device interrupt task.
//!
//! Which request the device serves next is the I/O scheduler's choice. With
//! `none` (and on the single-queue layer) requests are served in submission
//! order. With `mq-deadline` (the kernel's default for single-queue-hardware
//! devices such as SATA disks) requests wait in the scheduler, one FIFO per
//! direction, and at most `queue_depth` are at the device at once; a slot that
//! frees goes to a read before a write, unless writes have waited through
//! `writes_starved` read batches, and a batch runs up to `fifo_batch`
//! requests of one direction (`__dd_dispatch_request`, block/mq-deadline.c
//! 5.15). Simplified: no sector sorting within a direction (FIFO), no
//! expiry (it only reorders within a direction, which FIFO order already
//! does), one priority class, and request tags per direction (the kernel
//! shares them; blk-wbt keeps writeback from taking them all).
//!
//! Congestion (kernel-reclaim.md §B.2): the single-queue layer
//! (`block/blk-core.c` ≤4.20, `blk_queue_congestion_threshold`) marks the bdi
//! congested when a direction's requests in flight reach
//! `nr_requests - nr_requests/8 + 1` and clears it (`clear_bdi_congested`,
//! which wakes `congestion_wait` sleepers) when they drop below
//! `nr_requests - nr_requests/8 - nr_requests/16 - 1`. blk-mq never does either.

pub mod wbt;

use std::collections::VecDeque;

use wbt::{RqWait, Wbt};

use crate::engine::{TaskId, WaitQueue, World};
use crate::machine::{DeviceSpec, Layer, Scheduler};
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
    /// Per-device sequence number.
    pub id: u64,
    /// When it went to the device (`io_start_time_ns`).
    pub started: u64,
    /// The blk-wbt queue it holds a slot of, if it is a tracked write.
    pub wbt: Option<RqWait>,
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
    /// End of the current transfer, per server ([`BlockDev::server`]).
    pub busy_until: [u64; 2],
    /// Position after the last transferred request, per server.
    pub next_pos: [u64; 2],
    /// Requests in completion order, per server.
    pub completions: [VecDeque<Request>; 2],
    /// How the device serves the requests dispatched to it.
    pub service: Service,
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
    /// I/O scheduler in effect.
    pub scheduler: Scheduler,
    /// Requests the device serves at once (mq-deadline dispatch limit).
    pub queue_depth: u32,
    /// Requests waiting in mq-deadline, per direction, oldest first.
    pub pending: [VecDeque<Request>; 2],
    /// Requests dispatched to the device and not yet completed.
    pub dispatched: u32,
    /// mq-deadline state: direction of the current batch, requests in it,
    /// read batches since writes last went (`last_dir`, `batching`, `starved`).
    pub dd_last_dir: usize,
    /// See `dd_last_dir`.
    pub dd_batching: u64,
    /// See `dd_last_dir`.
    pub dd_starved: u64,
    /// `fifo_batch` and `writes_starved`.
    pub dd_tunables: (u64, u64),
    /// Largest request, in pages (`max_sectors_kb` / 4).
    pub max_request_pages: usize,
    /// Writeback throttling.
    pub wbt: Wbt,
    /// Next request id.
    pub next_id: u64,
}

impl BlockDev {
    /// A device from its machine description.
    pub fn new(d: &DeviceSpec, p: &Params) -> BlockDev {
        // The single-queue layer has `nr_requests` per direction; blk-mq
        // with an I/O scheduler allocates 2 × the hardware queue depth
        // (`blk_mq_init_sched`: `2 * min(queue_depth, BLKDEV_DEFAULT_RQ)`).
        let nr = match d.layer {
            Layer::SingleQueue => p.nr_requests as u32,
            Layer::BlkMq => d.blk_mq_nr_requests(),
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
            busy_until: [0; 2],
            next_pos: [0; 2],
            completions: Default::default(),
            service: Service::of(d),
            irq_wait: WaitQueue::default(),
            slot_wait: Default::default(),
            alloc_pos: 1 << 32,
            pages_written: 0,
            pages_read: 0,
            scheduler: d.effective_scheduler(),
            queue_depth: d.queue_depth.max(1),
            pending: Default::default(),
            dispatched: 0,
            dd_last_dir: BLK_RW_SYNC,
            dd_batching: 0,
            dd_starved: 0,
            dd_tunables: (p.dd_fifo_batch, p.dd_writes_starved),
            max_request_pages: (d.max_sectors_kb / 4).max(1) as usize,
            wbt: Wbt::new(
                d.wbt_queue_depth(),
                d.effective_wbt_lat_usec() * 1000,
                (p.hz / 10).max(1) * p.tick_ns(),
            ),
            next_id: 0,
        }
    }
}

/// How a device serves the requests dispatched to it.
#[derive(Debug)]
pub enum Service {
    /// One server takes every request in turn, first in first out
    /// (server 0): the default.
    Fifo,
    /// Reads are served beside writes ([`DeviceSpec::reads_beside_writes`]):
    /// each direction has a server of its own, first in first out.
    PerDirection,
    /// The requests at the device share its bandwidth
    /// ([`DeviceSpec::shared_bandwidth`], which wins over
    /// `reads_beside_writes`): they are in `reqs` with the work (ns at the
    /// full bandwidth) each has left, brought up to date at `at`, and move
    /// to `completions[0]` when it runs out.
    Shared {
        /// The requests at the device and the work each has left.
        reqs: Vec<(Request, f64)>,
        /// When `reqs`' work was last brought up to date.
        at: u64,
    },
}

impl Service {
    /// The service a device's description asks for.
    fn of(d: &DeviceSpec) -> Service {
        if d.shared_bandwidth {
            Service::Shared {
                reqs: Vec::new(),
                at: 0,
            }
        } else if d.reads_beside_writes {
            Service::PerDirection
        } else {
            Service::Fifo
        }
    }
}

impl BlockDev {
    /// Shared bandwidth: takes the time since the last update off the work
    /// left of every request at the device, each getting an equal share.
    fn shared_advance(&mut self, now: u64) {
        let Service::Shared { reqs, at } = &mut self.service else {
            return;
        };
        let since = std::mem::replace(at, now);
        if reqs.is_empty() || now <= since {
            return;
        }
        let each = (now - since) as f64 / reqs.len() as f64;
        for (_, left) in reqs.iter_mut() {
            *left -= each;
        }
    }

    /// Shared bandwidth: when the request with the least work left ends, if
    /// no other arrives before.
    fn shared_next_end(&self) -> Option<u64> {
        let Service::Shared { reqs, at } = &self.service else {
            return None;
        };
        let least = reqs.iter().map(|(_, l)| *l).fold(f64::INFINITY, f64::min);
        least
            .is_finite()
            .then(|| at + (least.max(0.0) * reqs.len() as f64).ceil() as u64)
    }

    /// Shared bandwidth: moves the requests whose work is done to the
    /// completions, due after the device's latency, in the order they
    /// were dispatched.
    fn shared_finish(&mut self, now: u64) {
        let lat = self.latency_ns;
        let Service::Shared { reqs: v, .. } = &mut self.service else {
            return;
        };
        let mut i = 0;
        while i < v.len() {
            // Half a nanosecond: what the float arithmetic may leave over.
            if v[i].1 <= 0.5 {
                let (mut rq, _) = v.remove(i);
                rq.done_at = now + lat;
                self.completions[0].push_back(rq);
            } else {
                i += 1;
            }
        }
    }

    /// The server that takes a request of direction `dir`: its own with
    /// [`Service::PerDirection`], else server 0 ([`Service::Shared`] keeps
    /// its requests apart and ends them into server 0).
    fn server(&self, dir: usize) -> usize {
        match self.service {
            Service::PerDirection => dir,
            Service::Fifo | Service::Shared { .. } => 0,
        }
    }

    /// The server whose next completion comes first, and its time (the
    /// write server on a tie).
    fn next_completion(&self) -> Option<(usize, u64)> {
        (0..2)
            .filter_map(|sv| self.completions[sv].front().map(|r| (sv, r.done_at)))
            .min_by_key(|&(sv, at)| (at, sv))
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

    /// Queues a request that has a slot: counts it in flight (congestion is
    /// judged on requests allocated, as `get_request` did) and hands it to
    /// the device now (`none`) or to mq-deadline.
    fn queue_request(&mut self, d: usize, rq: Request) {
        let dir = rq.kind.dir();
        let dev = &mut self.devs[d];
        let n = rq.pages.len() as u64;
        if dir == BLK_RW_ASYNC {
            dev.pages_written += n;
        } else {
            dev.pages_read += n;
        }
        dev.in_flight[dir] += 1;
        let congest =
            dev.layer == Layer::SingleQueue && dev.in_flight[dir] + 1 >= dev.congestion_on;
        match dev.scheduler {
            Scheduler::None => self.start_transfer(d, rq),
            Scheduler::MqDeadline => {
                self.devs[d].pending[dir].push_back(rq);
                self.dd_dispatch(d);
            }
        }
        if congest {
            self.set_bdi_congested(d, dir);
        }
    }

    /// The device takes `rq`: computes its completion time and wakes the
    /// interrupt task if it was idle.
    fn start_transfer(&mut self, d: usize, mut rq: Request) {
        let now = self.exec.now();
        let dev = &mut self.devs[d];
        let n = rq.pages.len() as u64;
        let per = if rq.kind.dir() == BLK_RW_ASYNC {
            dev.write_ns_per_page
        } else {
            dev.read_ns_per_page
        };
        let mut service = (per * n as f64) as u64;
        let sv = dev.server(rq.kind.dir());
        if rq.pos != dev.next_pos[sv] {
            service += dev.seek_ns;
        }
        dev.next_pos[sv] = rq.pos + n;
        rq.started = now;
        if rq.kind.dir() == BLK_RW_SYNC && dev.wbt.enabled() {
            dev.wbt.read_issued(rq.id, now);
        }
        dev.dispatched += 1;
        if let Service::Shared { .. } = dev.service {
            // Processor sharing: the request joins those at the device with
            // its work; when each ends depends on who else is there.
            dev.shared_advance(now);
            if let Service::Shared { reqs, .. } = &mut dev.service {
                reqs.push((rq, service as f64));
            }
        } else {
            let start = dev.busy_until[sv].max(now);
            dev.busy_until[sv] = start + service;
            rq.done_at = dev.busy_until[sv] + dev.latency_ns;
            dev.completions[sv].push_back(rq);
        }
        if dev.irq_wait.active() {
            let mut wq = std::mem::take(&mut dev.irq_wait);
            self.exec.wake_up_all(&mut wq);
        }
    }

    /// mq-deadline's dispatch (`dd_dispatch_request` → `__dd_dispatch_request`,
    /// block/mq-deadline.c 5.15) while the device has a free slot: go on
    /// with the current batch while it has requests and fewer than
    /// `fifo_batch` went; otherwise reads first, unless writes are waiting
    /// and `starved++ >= writes_starved`.
    fn dd_dispatch(&mut self, d: usize) {
        loop {
            let dev = &mut self.devs[d];
            if dev.dispatched >= dev.queue_depth {
                return;
            }
            let (fifo_batch, writes_starved) = dev.dd_tunables;
            let reads = !dev.pending[BLK_RW_SYNC].is_empty();
            let writes = !dev.pending[BLK_RW_ASYNC].is_empty();
            let dir = if dev.dd_batching < fifo_batch && !dev.pending[dev.dd_last_dir].is_empty() {
                dev.dd_last_dir
            } else {
                let dir = if reads {
                    // `writes && starved++ >= writes_starved`
                    let starved = writes && {
                        let before = dev.dd_starved;
                        dev.dd_starved += 1;
                        before >= writes_starved
                    };
                    if starved {
                        dev.dd_starved = 0;
                        BLK_RW_ASYNC
                    } else {
                        BLK_RW_SYNC
                    }
                } else if writes {
                    dev.dd_starved = 0;
                    BLK_RW_ASYNC
                } else {
                    return;
                };
                dev.dd_last_dir = dir;
                dev.dd_batching = 0;
                dir
            };
            dev.dd_batching += 1;
            let rq = dev.pending[dir]
                .pop_front()
                .expect("direction has a request");
            self.start_transfer(d, rq);
        }
    }

    /// Finishes the first request of device `d` (its completion time has come).
    fn complete_request(&mut self, d: usize) {
        let Some(sv) = self.devs[d].next_completion().map(|(sv, _)| sv) else {
            return;
        };
        let Some(rq) = self.devs[d].completions[sv].pop_front() else {
            return;
        };
        let dir = rq.kind.dir();
        match rq.kind {
            ReqKind::FileWrite | ReqKind::SwapOut => {
                // A data write into unwritten blocks goes to its
                // filesystem's conversion work first, which ends the pages'
                // writeback later (fs/ioend.rs); any other write ends here.
                let deferred = rq.kind == ReqKind::FileWrite && self.fs_end_bio(d, &rq.pages);
                if !deferred {
                    for &pfn in &rq.pages {
                        self.folio_end_writeback(pfn);
                    }
                }
            }
            ReqKind::FileRead | ReqKind::SwapIn => {
                // folio_end_read(): uptodate, unlock, wake the lock's waiters.
                for &pfn in &rq.pages {
                    let nid = self.frames.nid(pfn);
                    let p = self.frames.get_mut(pfn);
                    p.set(crate::mm::page::pg::UPTODATE);
                    p.clear(crate::mm::page::pg::LOCKED);
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
        self.wbt_done(d, &rq);
        let dev = &mut self.devs[d];
        dev.in_flight[dir] -= 1;
        dev.dispatched -= 1;
        if dev.scheduler == Scheduler::MqDeadline {
            self.dd_dispatch(d);
        }
        let dev = &mut self.devs[d];
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

impl Kernel {
    /// blk-wbt's `wb_recent_wait`: a dirtier of this device paused in
    /// `balance_dirty_pages` within the last second.
    fn wb_recent_wait(&self, d: usize) -> bool {
        let hz_ns = self.params.hz * self.params.tick_ns();
        self.bdis
            .get(d)
            .and_then(|b| b.dirty_sleep)
            .is_some_and(|t| self.exec.now() < t + hz_ns)
    }

    /// blk-wbt's part of a completion (`wbt_done` and the stat window).
    fn wbt_done(&mut self, d: usize, rq: &Request) {
        if !self.devs[d].wbt.enabled() {
            return;
        }
        let now = self.exec.now();
        let recent = self.wb_recent_wait(d);
        let wbt = &mut self.devs[d].wbt;
        wbt.completed(rq.id, rq.kind.dir() == BLK_RW_SYNC, now - rq.started, now);
        if let Some(q) = rq.wbt {
            if wbt.rqw_done(q, recent) {
                self.wbt_wake(d, q, recent);
            }
        }
        self.wbt_timer(d, recent);
    }

    /// Hands free slots of queue `q` to its waiters in order and wakes them
    /// (`recent`: [`Kernel::wb_recent_wait`] now).
    fn wbt_wake(&mut self, d: usize, q: RqWait, recent: bool) {
        let now = self.exec.now();
        for wt in self.devs[d].wbt.hand_out(q, recent, now) {
            self.exec.wake(wt.task, wt.seq, crate::engine::Wake::Woken);
        }
    }

    /// Runs blk-wbt's window timer if its window ended; hands out slots
    /// when the limits grew (`rwb_wake_all`).
    fn wbt_timer(&mut self, d: usize, recent: bool) {
        let now = self.exec.now();
        if self.devs[d].wbt.timer(now, recent) {
            self.wbt_wake(d, RqWait::Bg, recent);
            self.wbt_wake(d, RqWait::Kswapd, recent);
        }
    }
}

/// `wbt_wait` (`rq_qos_throttle` in `blk_mq_submit_bio`, before a request
/// is allocated): a write takes a slot if nobody is queued ahead and its
/// queue's writes in flight are below its limit; otherwise it sleeps until a
/// completion hands it one. Returns the queue whose slot it holds, or `None`
/// for untracked I/O (reads, wbt off).
async fn wbt_wait(w: &World, d: usize, kind: ReqKind) -> Option<RqWait> {
    if kind.dir() != BLK_RW_ASYNC {
        return None;
    }
    loop {
        let queued = {
            let mut k = w.k();
            if !k.devs[d].wbt.enabled() {
                return None;
            }
            let recent = k.wb_recent_wait(d);
            k.wbt_timer(d, recent);
            let kswapd = k.current_is_kswapd();
            let q = if kswapd { RqWait::Kswapd } else { RqWait::Bg };
            // Flusher writeback is background writeback (REQ_BACKGROUND).
            let background = kind == ReqKind::FileWrite;
            let now = k.exec.now();
            let t = k.exec.current();
            let seq = k.exec.sched[t as usize].wait_seq;
            let wbt = &mut k.devs[d].wbt;
            let i = q as usize;
            let limit = wbt.get_limit(kswapd, background, recent, now);
            if wbt.waiters[i].is_empty() && wbt.inflight[i] < limit {
                wbt.inflight[i] += 1;
                return Some(q);
            }
            wbt.waiters[i].push_back(wbt::Waiter {
                task: t,
                seq,
                kswapd,
                background,
            });
            (q, t)
        };
        w.block(None).await;
        // Woken by hand_out (the slot is ours), or by something else (a
        // kill): then leave the queue and try again.
        let mut k = w.k();
        let waiters = &mut k.devs[d].wbt.waiters[queued.0 as usize];
        match waiters.iter().position(|x| x.task == queued.1) {
            None => return Some(queued.0),
            Some(pos) => {
                waiters.remove(pos);
            }
        }
    }
}

/// `submit_bio`: waits for a request slot (`get_request` sleeps in
/// `io_schedule`), then queues the request. If `wait` is true, also waits for
/// its completion (a read the caller needs).
pub async fn submit_bio(w: &World, d: usize, kind: ReqKind, pages: Vec<Pfn>, pos: u64, wait: bool) {
    let dir = kind.dir();
    let wbt = wbt_wait(w, d, kind).await;
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
        let id = k.devs[d].next_id;
        k.devs[d].next_id += 1;
        k.queue_request(
            d,
            Request {
                kind,
                pages,
                pos,
                done_at: 0,
                waiter,
                id,
                started: 0,
                wbt,
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
        let (next, dynamic) = {
            let mut k = w.k();
            let k = &mut *k;
            let dev = &mut k.devs[d];
            let next = match (
                dev.next_completion().map(|(_, at)| at),
                dev.shared_next_end(),
            ) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            // With two servers a request dispatched now may end before the
            // one the task would sleep for: it sleeps on the queue too, and
            // start_transfer wakes it.
            let dynamic = !matches!(dev.service, Service::Fifo);
            if next.is_none() || dynamic {
                k.exec.prepare_to_wait(&mut k.devs[d].irq_wait);
            }
            (next, dynamic)
        };
        match next {
            None => {
                w.block(None).await;
                let mut k = w.k();
                let k = &mut *k;
                k.exec.finish_wait(&mut k.devs[d].irq_wait);
            }
            Some(at) if dynamic => {
                w.block(Some(at)).await;
                let mut k = w.k();
                let k = &mut *k;
                k.exec.finish_wait(&mut k.devs[d].irq_wait);
                let now = k.exec.now();
                k.devs[d].shared_advance(now);
                k.devs[d].shared_finish(now);
                while k.devs[d].next_completion().is_some_and(|(_, t)| t <= now) {
                    k.complete_request(d);
                }
            }
            Some(at) => {
                w.sleep_until(at).await;
                w.k().complete_request(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::profile::profile;

    fn kernel(split: bool) -> Kernel {
        kernel_with(&format!("reads_beside_writes={split}"))
    }

    fn kernel_with(extra: &str) -> Kernel {
        let m = Machine::from_toml(
            &format!("name='d'\ncpus=1\nmemory_mib=64\nswap_mib=64\n[[devices]]\nname='vdc'\nwrite_mb_s=4096\nread_mb_s=4096\nlatency_us=0\nscheduler='none'\n{extra}\n"),
            "test",
        )
        .unwrap();
        let p = profile("v6.1").unwrap();
        Kernel::new(m, p.clone(), Params::defaults(p), 1)
    }

    fn rq(kind: ReqKind, pages: usize, pos: u64, id: u64) -> Request {
        Request {
            kind,
            pages: vec![0; pages],
            pos,
            done_at: 0,
            waiter: None,
            id,
            started: 0,
            wbt: None,
        }
    }

    /// One server: a read waits for the writes before it. Two
    /// (`reads_beside_writes`): it does not, and the earlier completion
    /// comes first.
    #[test]
    fn reads_beside_writes_do_not_queue_behind_them() {
        for split in [false, true] {
            let mut k = kernel(split);
            // 4096 MB/s: 1000 ns a page; four 1024-page writes, then a read.
            for i in 0..4 {
                k.start_transfer(0, rq(ReqKind::FileWrite, 1024, 1024 * i, i));
            }
            k.start_transfer(0, rq(ReqKind::SwapIn, 1, 1 << 20, 9));
            let (sv, at) = k.devs[0].next_completion().unwrap();
            if split {
                assert_eq!((sv, at), (BLK_RW_SYNC, 1_000), "the read ends first");
            } else {
                assert_eq!((sv, at), (0, 1_024_000), "the first write ends first");
                let read = k.devs[0].completions[0].back().unwrap();
                assert!(
                    read.done_at > 4 * 1_024_000,
                    "the read waited: {}",
                    read.done_at
                );
            }
        }
    }

    /// Shared bandwidth: requests at the device together end together; a
    /// small read among them ends after its own share.
    #[test]
    fn shared_bandwidth_ends_together_what_came_together() {
        let mut k = kernel_with("shared_bandwidth=true");
        for i in 0..4 {
            k.start_transfer(0, rq(ReqKind::FileWrite, 1024, 1024 * i, i));
        }
        k.start_transfer(0, rq(ReqKind::SwapIn, 1, 1 << 20, 9));
        let dev = &mut k.devs[0];
        // Five at the device: the read's 1000 ns of work at a fifth each
        // (the seek to its far position is 0 here: seek_us defaults to 0).
        assert_eq!(dev.shared_next_end(), Some(5_000));
        dev.shared_advance(5_000);
        dev.shared_finish(5_000);
        assert_eq!(dev.completions[0].len(), 1, "the read alone");
        assert_eq!(dev.completions[0][0].kind, ReqKind::SwapIn);
        // The four writes have 1,023,000 ns each left, a quarter each.
        let end = dev.shared_next_end().unwrap();
        assert_eq!(end, 5_000 + 4 * 1_023_000);
        dev.shared_advance(end);
        dev.shared_finish(end);
        assert_eq!(dev.completions[0].len(), 5, "the four writes together");
        assert!(dev.completions[0].iter().skip(1).all(|r| r.done_at == end));
        assert_eq!(dev.shared_next_end(), None);
    }
}
