//! Buffered-writeback throttling (block/blk-wbt.c and the `rq_depth` helpers
//! of block/blk-rq-qos.c, 5.15): the block layer's own brake on writes, on by
//! default for every blk-mq disk.
//!
//! Why it matters to reclaim: without it, writeback and swap-out fill the
//! device's queue and every read — a swap-in, a page-cache miss — waits
//! behind them. wbt counts the writes in flight and makes a writer sleep
//! (before it gets a request) while that count is at its limit. The limit
//! comes from a depth that shrinks when reads are slow: every monitoring
//! window (100 ms, shorter when scaled down) it looks at the fastest read
//! completed in the window; above the target latency (`wbt_lat_usec`: 2 ms
//! for flash, 75 ms for a rotating disk) the depth halves, down to 1; when
//! reads are fast it grows back.
//!
//! Kept: `get_limit` (kswapd and writers recently paused in
//! `balance_dirty_pages` get the whole depth, background writeback a
//! quarter, others half; a read within HZ/10 makes it a quarter),
//! `wbt_rqw_done`'s wake rule (with a volatile write cache: not until the
//! queue drains, unless a dirtier was paused within a second),
//! `latency_exceeded` including the stuck-read check, `scale_up`,
//! `scale_down`, `rq_depth_calc_max_depth`, the window length, and the
//! hand-off of slots to waiters in arrival order (`rq_qos_wait`,
//! `rq_qos_wake_function`: the waker takes the slot for the first waiter and
//! stops at the first that cannot have one). Simplified: the window is
//! evaluated at the first block-layer event after it ends (a window with no
//! events is skipped, as the kernel's timer is not re-armed when idle).

use std::collections::VecDeque;

use crate::engine::TaskId;

/// `RWB_DEF_DEPTH`: the depth at scale step 0 (bounded by the queue depth).
const RWB_DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: the monitoring window at scale step ≤ 0.
const RWB_WINDOW_NSEC: u64 = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`: writes a window needs to judge read latency.
const RWB_MIN_WRITE_SAMPLES: u32 = 3;
/// `RWB_UNKNOWN_BUMP`: windows without data before drifting back to step 0.
const RWB_UNKNOWN_BUMP: u32 = 5;

/// Which wait queue and in-flight count a write uses (`WBT_RWQ_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqWait {
    /// Everyone but kswapd.
    Bg = 0,
    /// kswapd's own.
    Kswapd = 1,
}

/// A writer sleeping in `wbt_wait`: the task, its block sequence, and what
/// decides its limit (`get_limit`: kswapd, background writeback).
#[derive(Clone, Copy, Debug)]
pub struct Waiter {
    /// Task.
    pub task: TaskId,
    /// Its block sequence, for the wake-up.
    pub seq: u32,
    /// A kswapd write.
    pub kswapd: bool,
    /// Background writeback (`REQ_BACKGROUND`).
    pub background: bool,
}

/// `latency_exceeded` verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lat {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// One device's `struct rq_wb` with its `rq_depth`.
#[derive(Debug)]
pub struct Wbt {
    /// Target read latency, ns; 0 disables wbt.
    pub min_lat_ns: u64,
    /// `rq_depth.queue_depth`.
    queue_depth: u32,
    /// `rq_depth.scale_step`: > 0 scaled down, < 0 scaled up.
    pub scale_step: i32,
    scaled_max: bool,
    /// `rq_depth.max_depth`.
    pub max_depth: u32,
    /// `wb_normal`, `wb_background`.
    pub wb_normal: u32,
    /// See `wb_normal`.
    pub wb_background: u32,
    /// Tracked writes in flight, per [`RqWait`].
    pub inflight: [u32; 2],
    /// Writers waiting for a slot, per [`RqWait`], in arrival order.
    pub waiters: [VecDeque<Waiter>; 2],
    /// Last read issued, completed (ns).
    last_issue: u64,
    last_comp: u64,
    /// HZ/10 in ns: how recent a read makes `close_io` true.
    close_io_ns: u64,
    /// The oldest read in flight, for the stuck-read check: (request id,
    /// time it went to the device) — `sync_cookie`, `sync_issue`.
    pub sync_issue: Option<(u64, u64)>,
    /// The current window: start, length, and its samples.
    win_start: u64,
    cur_win: u64,
    read_samples: u32,
    read_min: u64,
    write_samples: u32,
    unknown_cnt: u32,
}

impl Wbt {
    /// `wbt_init`: depth 16 (or the queue depth if smaller), step 0;
    /// `close_io_ns` is HZ/10 in ns.
    pub fn new(queue_depth: u32, min_lat_ns: u64, close_io_ns: u64) -> Wbt {
        let mut w = Wbt {
            min_lat_ns,
            queue_depth: queue_depth.max(1),
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            inflight: [0; 2],
            waiters: Default::default(),
            last_issue: 0,
            last_comp: 0,
            close_io_ns,
            sync_issue: None,
            win_start: 0,
            cur_win: RWB_WINDOW_NSEC,
            read_samples: 0,
            read_min: u64::MAX,
            write_samples: 0,
            unknown_cnt: 0,
        };
        w.calc_max_depth();
        w.calc_wb_limits();
        w
    }

    /// Whether wbt throttles at all.
    pub fn enabled(&self) -> bool {
        self.min_lat_ns > 0
    }

    /// `rq_depth_calc_max_depth`: returns true when scaling up hit the cap.
    fn calc_max_depth(&mut self) -> bool {
        let mut ret = false;
        if self.queue_depth == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
            } else {
                self.max_depth = 2;
                ret = true;
            }
            return ret;
        }
        let mut depth = RWB_DEF_DEPTH.min(self.queue_depth);
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            depth = 1 + ((depth - 1) << (-self.scale_step).min(31));
            if depth > maxd {
                depth = maxd;
                ret = true;
            }
        }
        self.max_depth = depth;
        ret
    }

    /// `calc_wb_limits`.
    fn calc_wb_limits(&mut self) {
        if self.min_lat_ns == 0 {
            self.wb_normal = 0;
            self.wb_background = 0;
        } else if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4); // (max + 3) / 4
        }
    }

    /// `scale_up` (`rq_depth_scale_up`); true when the limits grew and the
    /// waiters should be woken (`rwb_wake_all`).
    fn scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        true
    }

    /// `scale_down` (`rq_depth_scale_down`).
    fn scale_down(&mut self, hard_throttle: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
    }

    /// `get_limit` for a buffered write.
    pub fn get_limit(&self, kswapd: bool, background: bool, recent_wait: bool, now: u64) -> u32 {
        if recent_wait || kswapd {
            self.max_depth
        } else if background || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// `close_io`: a read issued or completed within HZ/10.
    fn close_io(&self, now: u64) -> bool {
        now < self.last_issue + self.close_io_ns || now < self.last_comp + self.close_io_ns
    }

    /// `wbt_rqw_done`: a tracked write completed; returns whether to wake
    /// the queue's waiters. A disk with a volatile write cache
    /// (`QUEUE_FLAG_WC`, assumed here as for nearly every SATA/NVMe disk)
    /// drains to empty before waking, unless a dirtier was paused recently.
    pub fn rqw_done(&mut self, rq: RqWait, recent_wait: bool) -> bool {
        let i = rq as usize;
        self.inflight[i] -= 1;
        let inflight = self.inflight[i];
        let limit = if recent_wait { self.wb_normal } else { 0 };
        if inflight > 0 && inflight >= limit {
            return false;
        }
        !self.waiters[i].is_empty() && (inflight == 0 || limit - inflight >= self.wb_background / 2)
    }

    /// `rq_qos_wake_function` over queue `rq`'s waiters in order: each that
    /// is below its limit gets a slot (counted here) and is returned to be
    /// woken; the first that is not stops the walk.
    pub fn hand_out(&mut self, rq: RqWait, recent_wait: bool, now: u64) -> Vec<Waiter> {
        let i = rq as usize;
        let mut woken = Vec::new();
        while let Some(&wt) = self.waiters[i].front() {
            let limit = self.get_limit(wt.kswapd, wt.background, recent_wait, now);
            if self.inflight[i] >= limit {
                break;
            }
            self.inflight[i] += 1;
            self.waiters[i].pop_front();
            woken.push(wt);
        }
        woken
    }

    /// A read went to the device (`wbt_issue` + `wb_timestamp(last_issue)`).
    pub fn read_issued(&mut self, id: u64, now: u64) {
        self.last_issue = now;
        if self.sync_issue.is_none() {
            self.sync_issue = Some((id, now));
        }
    }

    /// A request completed: its latency joins the window's samples
    /// (blk-stat, from the time it went to the device).
    pub fn completed(&mut self, id: u64, read: bool, lat: u64, now: u64) {
        if read {
            self.last_comp = now;
            self.read_samples += 1;
            self.read_min = self.read_min.min(lat);
            if self.sync_issue.map(|s| s.0) == Some(id) {
                self.sync_issue = None;
            }
        } else {
            self.write_samples += 1;
        }
    }

    /// `wb_timer_fn`, run lazily: if the current window has ended, judge it
    /// and start the next. Returns true when the limits grew (wake all).
    pub fn timer(&mut self, now: u64, recent_wait: bool) -> bool {
        if now < self.win_start + self.cur_win {
            return false;
        }
        let status = self.latency_exceeded(now, recent_wait);
        let mut wake = false;
        match status {
            Lat::Exceeded => self.scale_down(true),
            Lat::Ok | Lat::UnknownWrites => wake = self.scale_up(),
            Lat::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= RWB_UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        wake = self.scale_up();
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        // rwb_arm_timer(): shorter windows when scaled down.
        self.cur_win = if self.scale_step > 0 {
            (RWB_WINDOW_NSEC << 4) / int_sqrt(((self.scale_step + 1) as u64) << 8)
        } else {
            RWB_WINDOW_NSEC
        };
        self.win_start = now;
        self.read_samples = 0;
        self.read_min = u64::MAX;
        self.write_samples = 0;
        wake
    }

    /// `latency_exceeded`.
    fn latency_exceeded(&self, now: u64, recent_wait: bool) -> Lat {
        let thislat = self.sync_issue.map_or(0, |(_, at)| now - at);
        if thislat > self.cur_win || (thislat > self.min_lat_ns && self.read_samples == 0) {
            return Lat::Exceeded;
        }
        if !(self.read_samples >= 1 && self.write_samples >= RWB_MIN_WRITE_SAMPLES) {
            if self.write_samples > 0 || recent_wait || self.inflight.iter().any(|&n| n > 0) {
                return Lat::UnknownWrites;
            }
            return Lat::Unknown;
        }
        if self.read_min > self.min_lat_ns {
            return Lat::Exceeded;
        }
        Lat::Ok
    }
}

/// `int_sqrt`.
fn int_sqrt(x: u64) -> u64 {
    (x as f64).sqrt() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_follow_rq_depth_calc_max_depth() {
        let mut w = Wbt::new(32, 2_000_000, 40_000_000);
        assert_eq!((w.max_depth, w.wb_normal, w.wb_background), (16, 8, 4));
        w.scale_down(true);
        assert_eq!(w.max_depth, 8);
        for _ in 0..10 {
            w.scale_down(true);
        }
        assert_eq!((w.max_depth, w.wb_normal, w.wb_background), (1, 1, 1));
        assert_eq!(w.scale_step, 4, "stops at depth 1");
        // Scaling up past step 0 is capped at 3/4 of the queue depth.
        for _ in 0..10 {
            w.scale_up();
        }
        assert_eq!(w.max_depth, 24);
    }

    #[test]
    fn slow_reads_scale_down_fast_reads_scale_up() {
        let mut w = Wbt::new(32, 2_000_000, 40_000_000);
        for i in 0..3 {
            w.completed(i, false, 1_000_000, 10);
        }
        w.completed(9, true, 5_000_000, 20);
        w.timer(RWB_WINDOW_NSEC, true);
        assert_eq!(w.scale_step, 1);
        assert!(
            w.cur_win < RWB_WINDOW_NSEC,
            "scaled-down windows are shorter"
        );
        for i in 0..3 {
            w.completed(i, false, 1_000_000, RWB_WINDOW_NSEC + 10);
        }
        w.completed(9, true, 500_000, RWB_WINDOW_NSEC + 20);
        assert!(w.timer(2 * RWB_WINDOW_NSEC, true));
        assert_eq!(w.scale_step, 0);
    }

    #[test]
    fn a_stuck_read_counts_as_exceeded() {
        let mut w = Wbt::new(32, 2_000_000, 40_000_000);
        w.read_issued(1, 0);
        w.timer(RWB_WINDOW_NSEC + 1, false);
        assert_eq!(w.scale_step, 1);
    }

    #[test]
    fn write_cache_drains_before_waking_unless_dirtiers_wait() {
        let mut w = Wbt::new(32, 2_000_000, 40_000_000);
        w.inflight[0] = 3;
        // Nobody waits: never wake.
        assert!(!w.rqw_done(RqWait::Bg, false));
        assert_eq!(w.inflight[0], 2);
        let waiter = |task| Waiter {
            task,
            seq: 0,
            kswapd: false,
            background: true,
        };
        w.waiters[0].push_back(waiter(7));
        w.waiters[0].push_back(waiter(8));
        // A volatile write cache: no wake-up until the queue is empty.
        assert!(!w.rqw_done(RqWait::Bg, false));
        assert!(w.rqw_done(RqWait::Bg, false));
        assert_eq!(w.inflight[0], 0);
        // Slots go in arrival order, up to the background limit (4).
        let got = w.hand_out(RqWait::Bg, false, 0);
        assert_eq!(got.iter().map(|x| x.task).collect::<Vec<_>>(), vec![7, 8]);
        assert_eq!(w.inflight[0], 2);
        // A dirtier paused within the last second: waking starts once the
        // queue is below wb_normal (8) by at least wb_background / 2.
        w.waiters[0].push_back(waiter(9));
        assert!(w.rqw_done(RqWait::Bg, true));
        assert_eq!(w.inflight[0], 1);
        w.inflight[0] = 8;
        assert!(
            !w.rqw_done(RqWait::Bg, true),
            "7 in flight, limit 8: 1 < 4 / 2"
        );
        w.inflight[0] = 10;
        assert!(!w.rqw_done(RqWait::Bg, true), "at or above wb_normal");
    }
}
