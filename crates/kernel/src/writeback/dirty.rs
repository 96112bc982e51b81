//! Dirty throttling: `balance_dirty_pages_ratelimited` and
//! `balance_dirty_pages` (mm/page-writeback.c, 5.15; the same in 5.10–6.1
//! but for folios).
//!
//! Why the details matter to reclaim: a dirtier's pause is what is left
//! of its *period* (the time its pages are worth at its rate limit) after
//! the time it already spent since its last pause, its "think time". A
//! writer that spent that time in direct reclaim, or waiting for a CPU,
//! owes no pause at all, and keeps dirtying at its rate limit; its debt
//! or credit is carried in `dirty_paused_when`, a virtual clock. Without
//! this compensation a writer under memory pressure would be slowed twice,
//! by reclaim and by the full pause.
//!
//! The rate a dirtier is held to is a base rate scaled by `pos_ratio`:
//! with `writeback.kernel_controls=1` both come from the kernel's control
//! lines (`position.rs`): the wb's `dirty_ratelimit`, and the position
//! against `dom->dirty_limit`, which lags a falling threshold. The default
//! for now is an estimate: the global cubic against the current threshold,
//! at the write bandwidth shared by the recent dirtiers (README: with the
//! kernel's controls the full-size v5.15 scans several times what the
//! 2021 letters measured, which points at a cost the simulation lacks).
//! Simplified (see also the module doc of `writeback`): one wb per device
//! and only the global domain; no per-CPU `bdp_ratelimits` or
//! `dirty_throttle_leaks`.

use super::position::{dirty_freerun_ceiling, wb_position_ratio, Dtc, RATELIMIT_CALC_SHIFT};
use crate::engine::World;
use crate::Kernel;

/// `DIRTY_POLL_THRESH`: 128 KiB of pages.
const DIRTY_POLL_THRESH: i64 = 32;

/// `balance_dirty_pages_ratelimited`: calls `balance_dirty_pages` once the
/// task dirtied `nr_dirtied_pause` pages (8 while its wb is over its limit).
pub async fn balance_dirty_pages_ratelimited(w: &World) {
    let due = w.k().bdp_due();
    if due {
        balance_dirty_pages(w).await;
    }
}

/// `dirty_poll_interval`: how many pages a task may dirty before checking again.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1u64 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

/// `ilog2` of a positive number (0 for 0, which the kernel never passes).
fn ilog2(x: u64) -> u32 {
    x.checked_ilog2().unwrap_or(0)
}

impl Kernel {
    /// The test of `balance_dirty_pages_ratelimited`: has the current task
    /// dirtied enough pages to look at the dirty limits again?
    pub(crate) fn bdp_due(&self) -> bool {
        let t = self.current();
        let mut ratelimit = t.nr_dirtied_pause;
        if self.bdis[self.machine.data_dev()].dirty_exceeded {
            ratelimit = ratelimit.min(32 >> 2);
        }
        t.nr_dirtied >= ratelimit
    }

    /// `wb_min_pause` (5.15): the shortest pause worth sleeping, in jiffies,
    /// and the pages to dirty before the next check (`nr_dirtied_pause`):
    /// about 10 ms for one dirtier, 10 ms more per doubling of the
    /// dirtiers, at most half of `max_pause`, and at least
    /// `DIRTY_POLL_THRESH` pages between checks where the rate allows.
    fn wb_min_pause(
        &self,
        d: usize,
        max_pause: i64,
        task_ratelimit: u64,
        dirty_ratelimit: u64,
    ) -> (i64, u64) {
        let hz = self.params.hz as i64;
        let round_hz = self.params.hz.next_power_of_two() as i64;
        let hi = i64::from(ilog2(self.bdis[d].avg_write_bandwidth));
        let lo = i64::from(ilog2(dirty_ratelimit));
        let (dirty_ratelimit, task_ratelimit) = (dirty_ratelimit as i64, task_ratelimit as i64);
        let mut t = (hz / 100).max(1);
        if hi > lo {
            t += (hi - lo) * (10 * hz) / 1024;
        }
        t = t.min(1 + max_pause / 2);
        let mut pages = dirty_ratelimit * t / round_hz;
        if pages < DIRTY_POLL_THRESH {
            t = max_pause;
            pages = dirty_ratelimit * t / round_hz;
            if pages > DIRTY_POLL_THRESH {
                pages = DIRTY_POLL_THRESH;
                t = hz * DIRTY_POLL_THRESH / dirty_ratelimit;
            }
        }
        let pause = hz * pages / (task_ratelimit + 1);
        if pause > max_pause {
            t = max_pause;
            pages = task_ratelimit * t / round_hz;
        }
        let min_pause = if pages >= DIRTY_POLL_THRESH {
            1 + t / 2
        } else {
            t
        };
        (min_pause, pages.max(0) as u64)
    }

    /// `wb_stat_error()`: the per-CPU slack of a wb counter
    /// (`nr_cpu_ids * WB_STAT_BATCH`).
    fn wb_stat_error(&self) -> u64 {
        let cpus = u64::from(self.machine.cpus);
        cpus * 8 * (1 + u64::from(ilog2(cpus)))
    }
}

/// What one round of `balance_dirty_pages` decided.
enum Round {
    /// Leave the loop (free running, or the pause was too short to take).
    Done,
    /// Sleep until the deadline (ns); then leave unless `again`.
    Pause { deadline: u64, again: bool },
}

/// What the end of `balance_dirty_pages` reads of its last round: the
/// kernel's loop variables `nr_reclaimable`, `gdtc->bg_thresh` and
/// `dirty_exceeded`.
#[derive(Default)]
struct LastRound {
    nr_reclaimable: u64,
    bg_thresh: u64,
    dirty_exceeded: bool,
}

/// `balance_dirty_pages` (5.15).
async fn balance_dirty_pages(w: &World) {
    let (start_time, pages_dirtied) = {
        let k = w.k();
        (k.jiffies(), k.current().nr_dirtied)
    };
    let mut last = LastRound::default();
    loop {
        let round = {
            let mut k = w.k();
            bdp_round(&mut k, start_time, pages_dirtied, &mut last)
        };
        let Round::Pause { deadline, again } = round else {
            break;
        };
        // io_schedule_timeout(pause) in TASK_KILLABLE.
        w.sleep_until(deadline).await;
        if !again || w.k().current().killed {
            break;
        }
    }
    let mut k = w.k();
    let d = k.machine.data_dev();
    if k.params.dirty_kernel_controls != 0 {
        // The end of 5.15's balance_dirty_pages (5.19 moved the background
        // start into the loop): clear dirty_exceeded if the last round was
        // under the limits, and start background writeback once the last
        // round's reclaimable pages exceed its background threshold (waking
        // a flusher that is already writing changes nothing:
        // writeback_in_progress).
        if !last.dirty_exceeded {
            k.bdis[d].dirty_exceeded = false;
        }
        if k.params.laptop_mode == 0 && last.nr_reclaimable > last.bg_thresh {
            k.wake_flusher(d);
        }
    } else {
        // The estimate's end, as before the kernel controls: the thresholds
        // looked at again.
        let (_, bg) = k.dirty_thresholds();
        if k.nr_dirty() > bg && k.params.laptop_mode == 0 {
            k.wake_flusher(d);
        }
    }
}

/// One pass of `balance_dirty_pages`' loop at jiffy `now`: the limits,
/// the position and rate controls, the task's rate limit, and its pause
/// (think time deducted).
fn bdp_round(k: &mut Kernel, start_time: u64, pages_dirtied: u64, last: &mut LastRound) -> Round {
    let hz = k.params.hz;
    let mut now = k.jiffies();
    let (thresh, bg_thresh) = k.dirty_thresholds();
    let nr_reclaimable = k.nr_dirty();
    let dirty = nr_reclaimable + k.nr_writeback();
    last.nr_reclaimable = nr_reclaimable;
    last.bg_thresh = bg_thresh;
    let d = k.machine.data_dev();
    let kernel_controls = k.params.dirty_kernel_controls != 0;
    if dirty <= dirty_freerun_ceiling(thresh, bg_thresh) {
        if !kernel_controls {
            k.bdis[d].dirty_exceeded = false;
        }
        let t = k.current_mut();
        t.dirty_paused_when = now;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = dirty_poll_interval(dirty, thresh);
        return Round::Done;
    }
    // wb_dirty_limits(): the wb's share of the threshold (see position.rs)
    // and its dirty + writeback pages.
    let dtc = Dtc {
        thresh,
        bg_thresh,
        dirty,
        wb_thresh: if k.bdis[d].written > 0 { thresh } else { 0 },
        wb_dirty: nr_reclaimable + k.bdis[d].nr_writeback,
        pos_ratio: 0,
    };
    let trace = if kernel_controls {
        kernel_controls_round(k, d, dtc, last)
    } else {
        estimate_round(k, d, dtc, nr_reclaimable)
    };
    let (dirty_ratelimit, task_ratelimit) = (trace.dirty_ratelimit, trace.task_ratelimit);
    let max_pause = k.wb_max_pause(d, dtc.wb_dirty) as i64;
    let (min_pause, nr_dirtied_pause) =
        k.wb_min_pause(d, max_pause, task_ratelimit, dirty_ratelimit);
    let (period, mut pause);
    // A zero rate limit (over the limit) takes the longest pause.
    if let Some(p) = (hz * pages_dirtied).checked_div(task_ratelimit) {
        period = p as i64;
        pause = period;
        let paused_when = k.current().dirty_paused_when;
        if paused_when != 0 {
            pause -= now as i64 - paused_when as i64;
        }
        // Under a second of think time is compensated in later periods
        // through the virtual time; more is forgotten (a light dirtier).
        if pause < min_pause {
            trace.emit(k, pages_dirtied, period, pause.min(0), start_time);
            let t = k.current_mut();
            if pause < -(hz as i64) {
                t.dirty_paused_when = now;
                t.nr_dirtied = 0;
            } else if period != 0 {
                t.dirty_paused_when = t.dirty_paused_when.wrapping_add_signed(period);
                t.nr_dirtied = 0;
            } else if t.nr_dirtied_pause <= pages_dirtied {
                t.nr_dirtied_pause += pages_dirtied;
            }
            return Round::Done;
        }
        if pause > max_pause {
            // For an occasional drop of task_ratelimit.
            now += (pause - max_pause).min(max_pause) as u64;
            pause = max_pause;
        }
    } else {
        period = max_pause;
        pause = max_pause;
    }
    trace.emit(k, pages_dirtied, period, pause, start_time);
    k.bdis[d].dirty_sleep = Some(k.exec.now());
    let deadline = k.timeout_deadline(pause as u64).1;
    let t = k.current_mut();
    t.dirty_paused_when = now + pause as u64;
    t.nr_dirtied = 0;
    t.nr_dirtied_pause = nr_dirtied_pause;
    // Only a zero rate limit loops, and only while the wb has more dirty
    // pages than its counters' per-CPU error.
    let again = task_ratelimit == 0 && dtc.wb_dirty > k.wb_stat_error();
    Round::Pause { deadline, again }
}

/// 5.15's controls (`writeback.kernel_controls=1`): start background
/// writeback, `dirty_exceeded`, `wb_position_ratio`, the bandwidth, dirty
/// limit and rate updates every `BANDWIDTH_INTERVAL`, and the task's rate
/// `dirty_ratelimit * pos_ratio`.
fn kernel_controls_round(k: &mut Kernel, d: usize, mut dtc: Dtc, last: &mut LastRound) -> BdpTrace {
    // if (unlikely(!writeback_in_progress(wb))) wb_start_background_writeback(wb)
    k.wake_flusher(d);
    last.dirty_exceeded = dtc.wb_dirty > dtc.wb_thresh && dtc.dirty > dtc.thresh;
    wb_position_ratio(&k.wb_domain, &k.bdis[d], &mut dtc);
    if last.dirty_exceeded {
        k.bdis[d].dirty_exceeded = true;
    }
    k.wb_maybe_update_bandwidth(d, Some(&dtc));
    let dirty_ratelimit = k.bdis[d].dirty_ratelimit;
    // The tracepoint's view: the domain's limit as it stands.
    let limit = k.wb_domain.dirty_limit;
    let setpoint = (limit + dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh)) / 2;
    BdpTrace {
        limit,
        setpoint,
        bdi_setpoint: setpoint * dtc.wb_thresh / (dtc.thresh + 1),
        dirty: dtc.dirty,
        wb_dirty: dtc.wb_dirty,
        dirty_ratelimit,
        task_ratelimit: (dirty_ratelimit * dtc.pos_ratio) >> RATELIMIT_CALC_SHIFT,
    }
}

/// The estimate (`writeback.kernel_controls=0`, the default for now): the
/// global cubic around the setpoint between freerun and the *current*
/// threshold, no wb line, at the write bandwidth shared by the tasks that
/// dirtied in the last second.
fn estimate_round(k: &mut Kernel, d: usize, dtc: Dtc, nr_reclaimable: u64) -> BdpTrace {
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    if nr_reclaimable > dtc.bg_thresh {
        k.wake_flusher(d);
    }
    let me = k.exec.current();
    let now_ns = k.exec.now();
    let dirtiers = &mut k.bdis[d].dirtiers;
    dirtiers.retain(|&(t, at)| t != me && now_ns.saturating_sub(at) < 1_000_000_000);
    dirtiers.push((me, now_ns));
    let nr_dirtiers = dirtiers.len() as f64;
    k.bdis[d].dirty_exceeded = dtc.wb_dirty > dtc.thresh && dtc.dirty > dtc.thresh;
    let limit = dtc.thresh.max(freerun + 1);
    let setpoint = (freerun + limit) / 2;
    let x = (setpoint as f64 - dtc.dirty as f64) / ((limit - setpoint) as f64 + 1.0);
    let pos_ratio = if dtc.dirty >= limit {
        0.0
    } else {
        (1.0 + x * x * x).clamp(0.0, 2.0)
    };
    k.wb_maybe_update_bandwidth(d, None);
    let dirty_ratelimit = ((k.bdis[d].avg_write_bandwidth as f64 / nr_dirtiers) as u64).max(1);
    BdpTrace {
        limit,
        setpoint,
        bdi_setpoint: setpoint,
        dirty: dtc.dirty,
        wb_dirty: dtc.wb_dirty,
        dirty_ratelimit,
        task_ratelimit: (dirty_ratelimit as f64 * pos_ratio) as u64,
    }
}

/// The fields of a `balance_dirty_pages` trace line known before the
/// pause is decided.
struct BdpTrace {
    limit: u64,
    setpoint: u64,
    bdi_setpoint: u64,
    dirty: u64,
    wb_dirty: u64,
    dirty_ratelimit: u64,
    task_ratelimit: u64,
}

impl BdpTrace {
    /// `trace_balance_dirty_pages` (include/trace/events/writeback.h):
    /// `limit` is the domain's `dirty_limit` as it stands, `setpoint`
    /// halfway from freerun to it, `bdi_setpoint` that scaled by
    /// `wb_thresh / (thresh + 1)` (the estimate prints its own limit and
    /// setpoint); rates in KB/s; `paused`, `pause`, `period` and `think` in
    /// ms (`x * 1000 / HZ`), `think` from the task's virtual pause end.
    fn emit(&self, k: &mut Kernel, dirtied: u64, period: i64, pause: i64, start_time: u64) {
        let hz = k.params.hz as i64;
        let jiffies = k.jiffies() as i64;
        let ms = |j: i64| j * 1000 / hz;
        let kbps = |pages: u64| pages * 4;
        let t = k.current();
        let think = if t.dirty_paused_when == 0 {
            0
        } else {
            ms(jiffies - t.dirty_paused_when as i64)
        };
        let dirtied_pause = t.nr_dirtied_pause;
        let bdi = format!("{}:0", 8 + k.machine.data_dev() * 16);
        crate::trace!(
            k,
            "balance_dirty_pages",
            "bdi {}: limit={} setpoint={} dirty={} bdi_setpoint={} bdi_dirty={} dirty_ratelimit={} task_ratelimit={} dirtied={} dirtied_pause={} paused={} pause={} period={} think={} cgroup_ino=1",
            bdi, self.limit, self.setpoint, self.dirty, self.bdi_setpoint, self.wb_dirty,
            kbps(self.dirty_ratelimit), kbps(self.task_ratelimit), dirtied, dirtied_pause,
            ms(jiffies - start_time as i64), ms(pause), ms(period), think
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_interval_is_a_power_of_two_near_the_square_root_of_the_margin() {
        assert_eq!(dirty_poll_interval(100, 100), 1);
        assert_eq!(dirty_poll_interval(0, 1 << 16), 1 << 8);
        assert_eq!(dirty_poll_interval(0, (1 << 16) - 1), 1 << 7);
        assert_eq!(dirty_poll_interval(200, 100), 1);
    }
}
