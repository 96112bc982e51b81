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
//! The memcg domain (`mdtc`, cgroup v2 writeback): a write to an inode
//! whose wb belongs to a non-root memcg is also held to that memcg's own
//! dirty limit, a ratio of what the memcg may use (its file pages plus its
//! headroom under `memory.max`/`memory.high`, capped by the clean memory
//! outside it: `mdtc_calc_avail`), and the lower of the two domains'
//! position ratios sets the rate (5.15 `balance_dirty_pages`; 4.16 and 6.1
//! have the same domain logic). The `balance_dirty_pages` trace line then
//! shows the memcg domain's dirty pages and setpoints (its `limit` stays
//! the global domain's `dirty_limit`, as the kernel prints it).
//! Simplified (see also the module doc of `writeback`): one wb per device,
//! shared by the memcgs writing to it (bandwidth, rate, `dirty_exceeded`);
//! the memcg wb's `wb_dirty` is the memcg's own dirty + writeback pages on
//! all devices; writers whose inode has no memcg domain keep the data
//! device's wb as before; no `mem_cgroup_flush_foreign` (5.3+: an inode
//! keeps the wb of its first dirtier, and no workload here shares files
//! across cgroups); no per-CPU `bdp_ratelimits` or `dirty_throttle_leaks`.

use super::position::{
    cgroup_ino, dirty_freerun_ceiling, wb_position_ratio, Dtc, RATELIMIT_CALC_SHIFT,
};
use crate::engine::World;
use crate::Kernel;

/// `DIRTY_POLL_THRESH`: 128 KiB of pages.
const DIRTY_POLL_THRESH: i64 = 32;

/// `balance_dirty_pages_ratelimited` after dirtying pages of file `f`:
/// calls `balance_dirty_pages` once the task dirtied `nr_dirtied_pause`
/// pages (8 while its wb is over its limit).
pub async fn balance_dirty_pages_ratelimited(w: &World, f: u32) {
    let (due, wb) = {
        let k = w.k();
        let wb = k.bdp_wb(f);
        (k.bdp_due(wb.0), wb)
    };
    if due {
        balance_dirty_pages(w, wb).await;
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
    /// The wb a write to file `f` is balanced on (`inode_to_wb`): the
    /// file's device and its memcg when the inode's wb has a memcg domain
    /// (cgroup v2, not the root); otherwise the data device's wb, as before
    /// the memcg domain was modelled, with no memcg.
    pub(crate) fn bdp_wb(&self, f: u32) -> (usize, Option<u16>) {
        let file = &self.files[f as usize];
        match file.wb_memcg {
            Some(m) if self.mem_cgroup_has_wb_domain(m) => (file.dev, Some(m)),
            _ => (self.machine.data_dev(), None),
        }
    }

    /// The test of `balance_dirty_pages_ratelimited`: has the current task
    /// dirtied enough pages to look at the dirty limits again?
    pub(crate) fn bdp_due(&self, d: usize) -> bool {
        let t = self.current();
        let mut ratelimit = t.nr_dirtied_pause;
        if self.bdis[d].dirty_exceeded {
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

/// `balance_dirty_pages` (5.15) on wb `(device, memcg)`.
async fn balance_dirty_pages(w: &World, (d, memcg): (usize, Option<u16>)) {
    let (start_time, pages_dirtied) = {
        let k = w.k();
        (k.jiffies(), k.current().nr_dirtied)
    };
    let mut last = LastRound::default();
    loop {
        let round = {
            let mut k = w.k();
            bdp_round(&mut k, d, memcg, start_time, pages_dirtied, &mut last)
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
fn bdp_round(
    k: &mut Kernel,
    d: usize,
    memcg: Option<u16>,
    start_time: u64,
    pages_dirtied: u64,
    last: &mut LastRound,
) -> Round {
    let hz = k.params.hz;
    let mut now = k.jiffies();
    let gavail = k.global_dirtyable_memory();
    let (thresh, bg_thresh) = k.domain_dirty_limits(gavail);
    let nr_reclaimable = k.nr_dirty();
    let dirty = nr_reclaimable + k.nr_writeback();
    last.nr_reclaimable = nr_reclaimable;
    last.bg_thresh = bg_thresh;
    let kernel_controls = k.params.dirty_kernel_controls != 0;
    // The memcg domain, when the wb has one: the same basic calculations
    // for the memcg (mem_cgroup_wb_stats, mdtc_calc_avail,
    // domain_dirty_limits); wb_dirty_limits gives its wb the whole memcg
    // threshold once the device completed any writeback, as for the global
    // domain.
    let written = k.bdis[d].written > 0;
    let mdtc = memcg.and_then(|m| {
        let (m_thresh, m_bg, m_dirty, own) = k.memcg_dirty_domain(m, gavail, dirty, true)?;
        let mdtc = Dtc {
            thresh: m_thresh,
            bg_thresh: m_bg,
            dirty: m_dirty,
            wb_thresh: if written { m_thresh } else { 0 },
            wb_dirty: own,
            pos_ratio: 0,
        };
        Some((m, mdtc))
    });
    // Free running only under both domains' freerun ceilings.
    let m_free = mdtc.is_none_or(|(_, m)| m.dirty <= dirty_freerun_ceiling(m.thresh, m.bg_thresh));
    if dirty <= dirty_freerun_ceiling(thresh, bg_thresh) && m_free {
        if !kernel_controls {
            k.bdis[d].dirty_exceeded = false;
        }
        let m_intv = mdtc.map_or(u64::MAX, |(_, m)| dirty_poll_interval(m.dirty, m.thresh));
        let t = k.current_mut();
        t.dirty_paused_when = now;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = dirty_poll_interval(dirty, thresh).min(m_intv);
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
        kernel_controls_round(k, d, dtc, mdtc, last)
    } else {
        estimate_round(k, d, dtc, mdtc, nr_reclaimable)
    };
    let (dirty_ratelimit, task_ratelimit) = (trace.dirty_ratelimit, trace.task_ratelimit);
    // The pause and the loop follow the domain that set the rate (sdtc).
    let max_pause = k.wb_max_pause(d, trace.wb_dirty) as i64;
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
            trace.emit(k, d, pages_dirtied, period, pause.min(0), start_time);
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
    trace.emit(k, d, pages_dirtied, period, pause, start_time);
    k.bdis[d].dirty_sleep = Some(k.exec.now());
    let deadline = k.timeout_deadline(pause as u64).1;
    let t = k.current_mut();
    t.dirty_paused_when = now + pause as u64;
    t.nr_dirtied = 0;
    t.nr_dirtied_pause = nr_dirtied_pause;
    // Only a zero rate limit loops, and only while the wb has more dirty
    // pages than its counters' per-CPU error.
    let again = task_ratelimit == 0 && trace.wb_dirty > k.wb_stat_error();
    Round::Pause { deadline, again }
}

/// 5.15's controls (`writeback.kernel_controls=1`): start background
/// writeback, `dirty_exceeded`, `wb_position_ratio`, the bandwidth, dirty
/// limit and rate updates every `BANDWIDTH_INTERVAL`, and the task's rate
/// `dirty_ratelimit * pos_ratio`.
fn kernel_controls_round(
    k: &mut Kernel,
    d: usize,
    mut dtc: Dtc,
    mdtc: Option<(u16, Dtc)>,
    last: &mut LastRound,
) -> BdpTrace {
    // if (unlikely(!writeback_in_progress(wb))) wb_start_background_writeback(wb)
    k.wake_flusher(d);
    last.dirty_exceeded = dtc.wb_dirty > dtc.wb_thresh && dtc.dirty > dtc.thresh;
    wb_position_ratio(&k.wb_domain, &k.bdis[d], &mut dtc);
    // The memcg domain's position; the lower ratio of the two rules.
    let mut sdtc = dtc;
    let mdtc = mdtc.map(|(m, mut md)| {
        last.dirty_exceeded |= md.wb_dirty > md.wb_thresh && md.dirty > md.thresh;
        wb_position_ratio(&k.memcgs[m as usize].cgwb_domain, &k.bdis[d], &mut md);
        if md.pos_ratio < dtc.pos_ratio {
            sdtc = md;
        }
        (m, md)
    });
    if last.dirty_exceeded {
        k.bdis[d].dirty_exceeded = true;
    }
    k.wb_maybe_update_bandwidth_m(d, Some(&dtc), mdtc.as_ref().map(|(m, md)| (*m, md)));
    let dirty_ratelimit = k.bdis[d].dirty_ratelimit;
    // The tracepoint's view: the global domain's limit as it stands, the
    // rest from the domain that set the rate.
    let limit = k.wb_domain.dirty_limit;
    let setpoint = (limit + dirty_freerun_ceiling(sdtc.thresh, sdtc.bg_thresh)) / 2;
    BdpTrace {
        limit,
        setpoint,
        bdi_setpoint: setpoint * sdtc.wb_thresh / (sdtc.thresh + 1),
        dirty: sdtc.dirty,
        wb_dirty: sdtc.wb_dirty,
        dirty_ratelimit,
        task_ratelimit: (dirty_ratelimit * sdtc.pos_ratio) >> RATELIMIT_CALC_SHIFT,
        cgroup_ino: mdtc.map_or(1, |(m, _)| cgroup_ino(m)),
    }
}

/// The estimate (`writeback.kernel_controls=0`, the default for now): the
/// global cubic around the setpoint between freerun and the *current*
/// threshold, no wb line, at the write bandwidth shared by the tasks that
/// dirtied in the last second.
fn estimate_round(
    k: &mut Kernel,
    d: usize,
    dtc: Dtc,
    mdtc: Option<(u16, Dtc)>,
    nr_reclaimable: u64,
) -> BdpTrace {
    if nr_reclaimable > dtc.bg_thresh || (mdtc.is_some() && k.wb_over_bg_thresh(d).is_some()) {
        // The global domain's background threshold, or (cgroup v2) the
        // memcg domain's.
        k.wake_flusher(d);
    }
    let me = k.exec.current();
    let now_ns = k.exec.now();
    let dirtiers = &mut k.bdis[d].dirtiers;
    dirtiers.retain(|&(t, at)| t != me && now_ns.saturating_sub(at) < 1_000_000_000);
    dirtiers.push((me, now_ns));
    let nr_dirtiers = dirtiers.len() as f64;
    let exceeded = |c: &Dtc| c.wb_dirty > c.thresh && c.dirty > c.thresh;
    k.bdis[d].dirty_exceeded = exceeded(&dtc) || mdtc.is_some_and(|(_, m)| exceeded(&m));
    // The lower of the two domains' positions rules (as in the kernel).
    let (mut limit, mut setpoint, mut pos_ratio) = estimate_position(&dtc);
    let mut sdtc = dtc;
    if let Some((_, m)) = mdtc {
        let (m_limit, m_setpoint, m_pos) = estimate_position(&m);
        if m_pos < pos_ratio {
            (limit, setpoint, pos_ratio, sdtc) = (m_limit, m_setpoint, m_pos, m);
        }
    }
    k.wb_maybe_update_bandwidth(d, None);
    let dirty_ratelimit = ((k.bdis[d].avg_write_bandwidth as f64 / nr_dirtiers) as u64).max(1);
    BdpTrace {
        limit,
        setpoint,
        bdi_setpoint: setpoint,
        dirty: sdtc.dirty,
        wb_dirty: sdtc.wb_dirty,
        dirty_ratelimit,
        task_ratelimit: (dirty_ratelimit as f64 * pos_ratio) as u64,
        cgroup_ino: mdtc.map_or(1, |(m, _)| cgroup_ino(m)),
    }
}

/// The estimate's position in one domain: (limit, setpoint, pos_ratio),
/// the cubic around the setpoint between freerun and the current threshold.
fn estimate_position(dtc: &Dtc) -> (u64, u64, f64) {
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = dtc.thresh.max(freerun + 1);
    let setpoint = (freerun + limit) / 2;
    let x = (setpoint as f64 - dtc.dirty as f64) / ((limit - setpoint) as f64 + 1.0);
    let pos_ratio = if dtc.dirty >= limit {
        0.0
    } else {
        (1.0 + x * x * x).clamp(0.0, 2.0)
    };
    (limit, setpoint, pos_ratio)
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
    /// The wb's cgroup (`__trace_wb_assign_cgroup`): 1 for the root's wb.
    cgroup_ino: u64,
}

impl BdpTrace {
    /// `trace_balance_dirty_pages` (include/trace/events/writeback.h):
    /// `limit` is the domain's `dirty_limit` as it stands, `setpoint`
    /// halfway from freerun to it, `bdi_setpoint` that scaled by
    /// `wb_thresh / (thresh + 1)` (the estimate prints its own limit and
    /// setpoint); rates in KB/s; `paused`, `pause`, `period` and `think` in
    /// ms (`x * 1000 / HZ`), `think` from the task's virtual pause end.
    fn emit(
        &self,
        k: &mut Kernel,
        d: usize,
        dirtied: u64,
        period: i64,
        pause: i64,
        start_time: u64,
    ) {
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
        let bdi = format!("{}:0", 8 + d * 16);
        crate::trace!(
            k,
            "balance_dirty_pages",
            "bdi {}: limit={} setpoint={} dirty={} bdi_setpoint={} bdi_dirty={} dirty_ratelimit={} task_ratelimit={} dirtied={} dirtied_pause={} paused={} pause={} period={} think={} cgroup_ino={}",
            bdi, self.limit, self.setpoint, self.dirty, self.bdi_setpoint, self.wb_dirty,
            kbps(self.dirty_ratelimit), kbps(self.task_ratelimit), dirtied, dirtied_pause,
            ms(jiffies - start_time as i64), ms(pause), ms(period), think, self.cgroup_ino
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
