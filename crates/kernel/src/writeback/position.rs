//! The two feedback loops of dirty throttling (mm/page-writeback.c, 5.15;
//! the same through 6.1): the *position* control (`wb_position_ratio`),
//! which scales a dirtier's rate by how far the dirty pages are from their
//! setpoint, and the *rate* control (`wb_update_dirty_ratelimit`), which
//! every 200 ms moves the wb's base rate `dirty_ratelimit` towards the
//! rate at which the dirtiers, together, match the device's write
//! bandwidth. Both read the domain's `dirty_limit`, which follows a rising
//! threshold at once but a falling one only by 1/32 of the gap per update
//! (`update_dirty_limit`).
//!
//! Why the lag matters to reclaim: the threshold is a share of free plus
//! file pages, so when reclaim empties the file LRU the threshold falls at
//! once, but the hard limit the dirtiers are throttled against follows it
//! down over seconds. Meanwhile writers keep dirtying at near their full
//! rate and the file pages reclaim meets are dirty ones it cannot write.
//!
//! All arithmetic is the kernel's fixed point (`RATELIMIT_CALC_SHIFT`),
//! with its unsigned wrap-around where the C code has it.
//!
//! The same lines serve a memcg's dirty domain (`memcg->cgwb_domain`, its
//! own lagging `dirty_limit`), whose position `balance_dirty_pages` takes
//! when it is the lower (see `dirty`).
//! Simplified: no `BDI_CAP_STRICTLIMIT`; `wb_thresh` (`__wb_calc_thresh`,
//! the wb's share of the domain's recent writeout completions) is the
//! whole threshold once the wb completed any writeback, as it is for the
//! one device that holds every file in these machines, and 0 before.

use super::Bdi;
use crate::Kernel;

/// The `cgroup_ino` the writeback tracepoints print for a wb of memcg
/// `m`: 1 for the root, as on a cgroup v2 host, and 1 + the memcg's id
/// (its creation order) for the others, where the kernel prints the
/// cgroup directory's kernfs inode number (also in creation order, but
/// with gaps).
pub fn cgroup_ino(m: u16) -> u64 {
    1 + u64::from(m)
}

/// `RATELIMIT_CALC_SHIFT`: `pos_ratio` is a fraction of `1 << 10`.
pub const RATELIMIT_CALC_SHIFT: u32 = 10;

/// `struct dirty_throttle_control` for one domain (global or memcg).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dtc {
    /// `thresh`: the dirty threshold (`vm.dirty_ratio` of dirtyable memory).
    pub thresh: u64,
    /// `bg_thresh`: the background threshold.
    pub bg_thresh: u64,
    /// `dirty`: dirty + writeback pages.
    pub dirty: u64,
    /// `wb_thresh`: this wb's share of `thresh`.
    pub wb_thresh: u64,
    /// `wb_dirty`: this wb's dirty + writeback pages.
    pub wb_dirty: u64,
    /// `pos_ratio`, a fraction of `1 << RATELIMIT_CALC_SHIFT`.
    pub pos_ratio: u64,
}

/// `struct wb_domain` (the global one, or a memcg's): the hard dirty limit.
#[derive(Clone, Copy, Debug, Default)]
pub struct WbDomain {
    /// `dirty_limit`, in pages: at least the dirty pages, lagging a
    /// falling threshold.
    pub dirty_limit: u64,
    /// `dirty_limit_tstamp`, in jiffies.
    pub dirty_limit_tstamp: u64,
}

/// `dirty_freerun_ceiling`: below this no dirtier is throttled.
pub fn dirty_freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

impl WbDomain {
    /// `hard_dirty_limit`: the limit the control lines aim below.
    pub fn hard_dirty_limit(&self, thresh: u64) -> u64 {
        self.dirty_limit.max(thresh)
    }

    /// `update_dirty_limit`: follow a rising threshold in one step, a
    /// falling one by 1/32 of the gap (never below the dirty pages).
    fn update_dirty_limit(&mut self, dtc: &Dtc) {
        if self.dirty_limit < dtc.thresh {
            self.dirty_limit = dtc.thresh;
            return;
        }
        let target = dtc.thresh.max(dtc.dirty);
        if self.dirty_limit > target {
            self.dirty_limit -= (self.dirty_limit - target) >> 5;
        }
    }

    /// `domain_update_dirty_limit`: at most once per `BANDWIDTH_INTERVAL`.
    pub fn domain_update_dirty_limit(&mut self, dtc: &Dtc, now: u64, interval: u64) {
        if now < self.dirty_limit_tstamp + interval {
            return;
        }
        self.update_dirty_limit(dtc);
        self.dirty_limit_tstamp = now;
    }
}

/// `pos_ratio_polynom`: `1 + ((setpoint - dirty) / (limit - setpoint))^3`,
/// clamped to [0, 2], in fixed point.
fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> u64 {
    let x = ((setpoint as i64 - dirty as i64) << RATELIMIT_CALC_SHIFT)
        / (limit.wrapping_sub(setpoint) | 1) as i64;
    let mut pos_ratio = x;
    pos_ratio = pos_ratio.wrapping_mul(x) >> RATELIMIT_CALC_SHIFT;
    pos_ratio = pos_ratio.wrapping_mul(x) >> RATELIMIT_CALC_SHIFT;
    pos_ratio += 1 << RATELIMIT_CALC_SHIFT;
    pos_ratio.clamp(0, 2 << RATELIMIT_CALC_SHIFT) as u64
}

/// `wb_position_ratio` without strictlimit: the global control line (the
/// cubic around the setpoint between freerun and the hard limit), scaled
/// by the wb control line (linear, falling to 1/4 over `8 * write_bw`
/// pages past the wb's setpoint) and raised in the wb reserve area (below
/// half of `wb_thresh`, so that a wb's pool of dirty pages never runs dry).
pub fn wb_position_ratio(dom: &WbDomain, wb: &Bdi, dtc: &mut Dtc) {
    let write_bw = wb.avg_write_bandwidth;
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = dom.hard_dirty_limit(dtc.thresh);
    dtc.pos_ratio = 0;
    if dtc.dirty >= limit {
        return;
    }
    let setpoint = (freerun + limit) / 2;
    let mut pos_ratio = pos_ratio_polynom(setpoint, dtc.dirty, limit);
    let wb_thresh = dtc.wb_thresh.min(dtc.thresh);
    // A wb idle for long has a tiny share; honour it a reasonable one.
    let wb_thresh = wb_thresh.max((limit - dtc.dirty) / 8);
    // wb_setpoint = setpoint * wb_thresh / thresh, in 16-bit fixed point.
    let x = (wb_thresh << 16) / (dtc.thresh | 1);
    let wb_setpoint = setpoint.wrapping_mul(x) >> 16;
    // span = 8 * write_bw for a single wb, moving to wb_thresh for JBOD.
    let span = dtc
        .thresh
        .wrapping_sub(wb_thresh)
        .wrapping_add(8 * write_bw)
        .wrapping_mul(x)
        >> 16;
    let x_intercept = wb_setpoint.wrapping_add(span);
    if dtc.wb_dirty < x_intercept.wrapping_sub(span / 4) {
        pos_ratio = pos_ratio.wrapping_mul(x_intercept - dtc.wb_dirty)
            / (x_intercept.wrapping_sub(wb_setpoint) | 1);
    } else {
        pos_ratio /= 4;
    }
    // The wb reserve area.
    let x_intercept = wb_thresh / 2;
    if dtc.wb_dirty < x_intercept {
        if dtc.wb_dirty > x_intercept / 8 {
            pos_ratio = pos_ratio.wrapping_mul(x_intercept) / dtc.wb_dirty;
        } else {
            pos_ratio = pos_ratio.wrapping_mul(8);
        }
    }
    dtc.pos_ratio = pos_ratio;
}

/// What `wb_update_dirty_ratelimit` measured, for `trace_bdi_dirty_ratelimit`.
pub struct RatelimitUpdate {
    pub dirty_rate: u64,
    pub task_ratelimit: u64,
}

/// `wb_update_dirty_ratelimit`: moves `wb.dirty_ratelimit` towards the
/// balanced rate `task_ratelimit * write_bw / dirty_rate` (what N dirtiers
/// at that rate would need to match the device), but only while the
/// position error points the same way, and by a step that shrinks near
/// the target. `dirtied` pages were dirtied on this wb in all, `elapsed`
/// jiffies since the last update.
pub fn wb_update_dirty_ratelimit(
    dom: &WbDomain,
    wb: &mut Bdi,
    dtc: &Dtc,
    dirtied: u64,
    elapsed: u64,
    hz: u64,
) -> RatelimitUpdate {
    let dirty = dtc.dirty;
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = dom.hard_dirty_limit(dtc.thresh);
    let setpoint = (freerun + limit) / 2;
    let write_bw = wb.avg_write_bandwidth;
    let mut dirty_ratelimit = wb.dirty_ratelimit;
    let dirty_rate = dirtied.wrapping_sub(wb.dirtied_stamp) * hz / elapsed;
    // Each dirtier's rate over the last 200 ms (+1 helps ramp up from tiny
    // values).
    let task_ratelimit = ((dirty_ratelimit * dtc.pos_ratio) >> RATELIMIT_CALC_SHIFT) + 1;
    let balanced = (task_ratelimit * write_bw / (dirty_rate | 1)).min(write_bw);
    let mut step = 0;
    if dirty < setpoint {
        let x = wb
            .balanced_dirty_ratelimit
            .min(balanced)
            .min(task_ratelimit);
        if dirty_ratelimit < x {
            step = x - dirty_ratelimit;
        }
    } else {
        let x = wb
            .balanced_dirty_ratelimit
            .max(balanced)
            .max(task_ratelimit);
        if dirty_ratelimit > x {
            step = dirty_ratelimit - x;
        }
    }
    // Track slower near the target: no point chasing a fluctuating rate.
    let shift = dirty_ratelimit / (2 * step + 1);
    step = if shift < 64 {
        (step >> shift).div_ceil(8)
    } else {
        0
    };
    if dirty_ratelimit < balanced {
        dirty_ratelimit += step;
    } else {
        dirty_ratelimit -= step;
    }
    wb.dirty_ratelimit = dirty_ratelimit.max(1);
    wb.balanced_dirty_ratelimit = balanced;
    RatelimitUpdate {
        dirty_rate,
        task_ratelimit,
    }
}

impl Kernel {
    /// `trace_bdi_dirty_ratelimit` (include/trace/events/writeback.h),
    /// rates in KB/s; a verbose-trace event.
    pub(super) fn trace_bdi_dirty_ratelimit(&mut self, d: usize, u: &RatelimitUpdate, ino: u64) {
        if !self.trace_cfg.verbose {
            return;
        }
        let kbps = |pages: u64| pages * 4;
        let b = &self.bdis[d];
        let (bw, avg, rate, bal) = (
            b.write_bandwidth,
            b.avg_write_bandwidth,
            b.dirty_ratelimit,
            b.balanced_dirty_ratelimit,
        );
        let bdi = format!("{}:0", 8 + d * 16);
        crate::trace!(
            self,
            "bdi_dirty_ratelimit",
            "bdi {}: write_bw={} awrite_bw={} dirty_rate={} dirty_ratelimit={} task_ratelimit={} balanced_dirty_ratelimit={} cgroup_ino={}",
            bdi, kbps(bw), kbps(avg), kbps(u.dirty_rate), kbps(rate), kbps(u.task_ratelimit), kbps(bal), ino
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writeback::bandwidth::INIT_BW;

    const ONE: u64 = 1 << RATELIMIT_CALC_SHIFT;

    fn dtc(thresh: u64, bg: u64, dirty: u64) -> Dtc {
        Dtc {
            thresh,
            bg_thresh: bg,
            dirty,
            wb_thresh: thresh,
            wb_dirty: dirty,
            pos_ratio: 0,
        }
    }

    /// The global cubic: 2 at freerun, 1 at the setpoint, 0 at the limit
    /// (freerun 149, setpoint 200, limit 251: `limit - setpoint` is odd, so
    /// the kernel's `| 1` leaves the divisor as it is).
    #[test]
    fn polynom_is_two_one_zero_across_the_scope() {
        assert_eq!(pos_ratio_polynom(200, 149, 251), 2 * ONE);
        assert_eq!(pos_ratio_polynom(200, 200, 251), ONE);
        assert_eq!(pos_ratio_polynom(200, 251, 251), 0);
        // dirty 225: x = -25 * 1024 / 51 = -501 (truncated), x^2 >> 10 =
        // 245, * x >> 10 = -120 (arithmetic shift), + 1024 = 904: about
        // 1 - (1/2)^3.
        assert_eq!(pos_ratio_polynom(200, 225, 251), 904);
    }

    /// Hand-computed single-wb case: thresh 10000, bg 5000 (freerun 7500,
    /// setpoint 8750), dirty 8750, write_bw 1000: the global line gives 1;
    /// the wb line, with span = 8 * write_bw = 8000 around wb_setpoint =
    /// 8750 * 65536 / 10001 >> 16 = 8749, gives (16749 - 8750) / 8000;
    /// no reserve area (wb_dirty over wb_thresh / 2).
    #[test]
    fn single_wb_position_by_hand() {
        let dom = WbDomain {
            dirty_limit: 10_000,
            dirty_limit_tstamp: 0,
        };
        let wb = Bdi {
            avg_write_bandwidth: 1000,
            ..Bdi::new()
        };
        let mut d = dtc(10_000, 5_000, 8_750);
        wb_position_ratio(&dom, &wb, &mut d);
        let x = (10_000u64 << 16) / 10_001;
        let wb_setpoint = (8_750 * x) >> 16;
        let span = (8_000 * x) >> 16;
        let want = ONE * (wb_setpoint + span - 8_750) / ((span) | 1);
        assert_eq!(d.pos_ratio, want);
        assert!(d.pos_ratio < ONE && d.pos_ratio > ONE * 9 / 10);
    }

    /// A lagging `dirty_limit` moves the setpoint up: the same dirty pages
    /// that sit at the setpoint of the current threshold are throttled less
    /// while the limit is still high.
    #[test]
    fn lagging_limit_throttles_less() {
        let wb = Bdi {
            avg_write_bandwidth: 1000,
            ..Bdi::new()
        };
        let caught_up = WbDomain {
            dirty_limit: 10_000,
            dirty_limit_tstamp: 0,
        };
        let lagging = WbDomain {
            dirty_limit: 20_000,
            dirty_limit_tstamp: 0,
        };
        let (mut a, mut b) = (dtc(10_000, 5_000, 9_900), dtc(10_000, 5_000, 9_900));
        wb_position_ratio(&caught_up, &wb, &mut a);
        wb_position_ratio(&lagging, &wb, &mut b);
        assert!(
            b.pos_ratio > a.pos_ratio,
            "{} <= {}",
            b.pos_ratio,
            a.pos_ratio
        );
        // At the current threshold's limit nothing passes; under the old one
        // the dirtiers still get a rate.
        let (mut a, mut b) = (dtc(10_000, 5_000, 10_000), dtc(10_000, 5_000, 10_000));
        wb_position_ratio(&caught_up, &wb, &mut a);
        wb_position_ratio(&lagging, &wb, &mut b);
        assert_eq!(a.pos_ratio, 0);
        assert!(b.pos_ratio > 0);
    }

    /// `update_dirty_limit`: up at once, down by 1/32 of the gap to
    /// max(thresh, dirty) per update, and only once per interval.
    #[test]
    fn dirty_limit_follows_up_at_once_and_down_slowly() {
        let mut dom = WbDomain::default();
        dom.domain_update_dirty_limit(&dtc(3_200, 1_600, 0), 100, 50);
        assert_eq!(dom.dirty_limit, 3_200);
        dom.domain_update_dirty_limit(&dtc(0, 0, 0), 120, 50);
        assert_eq!(dom.dirty_limit, 3_200, "within the interval");
        dom.domain_update_dirty_limit(&dtc(0, 0, 0), 150, 50);
        assert_eq!(dom.dirty_limit, 3_100);
        // Never below the dirty pages.
        dom.domain_update_dirty_limit(&dtc(0, 0, 3_100), 200, 50);
        assert_eq!(dom.dirty_limit, 3_100);
    }

    /// Closed loop: N dirtiers each dirty at the rate they are given, the
    /// device writes `write_bw`; the rate control brings `dirty_ratelimit`
    /// to write_bw / N, and the position control the dirty pages near the
    /// setpoint.
    #[test]
    fn dirty_ratelimit_converges_to_bandwidth_shared_by_the_dirtiers() {
        let dom = WbDomain {
            dirty_limit: 100_000,
            dirty_limit_tstamp: 0,
        };
        let write_bw = 12_800;
        let mut wb = Bdi {
            avg_write_bandwidth: write_bw,
            ..Bdi::new()
        };
        assert_eq!(wb.dirty_ratelimit, INIT_BW);
        let n = 4;
        let (mut dirty, mut dirtied) = (80_000u64, 0);
        for _ in 0..600 {
            let mut d = dtc(100_000, 50_000, dirty);
            wb_position_ratio(&dom, &wb, &mut d);
            // 50 jiffies at HZ=250: a fifth of a second of dirtying and writing.
            let rate = (wb.dirty_ratelimit * d.pos_ratio) >> RATELIMIT_CALC_SHIFT;
            dirtied += n * rate / 5;
            dirty = (dirty + n * rate / 5).saturating_sub(write_bw / 5);
            let d = Dtc {
                dirty,
                wb_dirty: dirty,
                ..d
            };
            wb_update_dirty_ratelimit(&dom, &mut wb, &d, dirtied, 50, 250);
            wb.dirtied_stamp = dirtied;
        }
        let want = write_bw / n;
        assert!(
            wb.dirty_ratelimit.abs_diff(want) < want / 10,
            "dirty_ratelimit {} vs {want}",
            wb.dirty_ratelimit
        );
        assert!(dirty.abs_diff(87_500) < 5_000, "dirty {dirty}");
    }
}
