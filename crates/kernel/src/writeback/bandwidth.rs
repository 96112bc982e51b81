//! The write bandwidth estimate of a `bdi_writeback` (mm/page-writeback.c,
//! 5.15: `__wb_update_bandwidth`, `wb_update_write_bandwidth`,
//! `wb_bandwidth_estimate_start`, `wb_max_pause`).
//!
//! Why it matters here: the flusher's per-inode chunk
//! (`writeback_chunk_size`), the dirtiers' base rate and their longest
//! pause all scale with what the device was *seen* to write, not with its
//! datasheet speed. Under reclaim the two differ: reads (swap-ins) go first
//! in mq-deadline and blk-wbt holds background writes back, so the
//! estimate falls and the flusher writes smaller chunks per inode.
//!
//! Updates come from the flusher (`do_writepages`), from the dirtiers
//! (`balance_dirty_pages`), and from the delayed `wb->bw_dwork`, queued
//! `BANDWIDTH_INTERVAL` after an inode's writeback ends
//! (`wb_inode_writeback_end`) so that the tail of a burst is counted.
//!
//! The dirtiers' updates also run the rate control of dirty throttling
//! (`position.rs`). Simplified: one wb per device.

use std::rc::Rc;

use super::position::{cgroup_ino, wb_update_dirty_ratelimit, Dtc};
use super::Bdi;
use crate::engine::World;
use crate::Kernel;

/// `INIT_BW`: 100 MB/s in pages per second.
pub const INIT_BW: u64 = 100 << (20 - 12);

impl Bdi {
    /// A `bdi_writeback` as `wb_init` leaves it.
    pub fn new() -> Bdi {
        Bdi {
            write_bandwidth: INIT_BW,
            avg_write_bandwidth: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            ..Bdi::default()
        }
    }
}

impl Bdi {
    /// `wb_update_write_bandwidth`: blends the pages written in the last
    /// `elapsed` jiffies into `write_bandwidth` over a period of
    /// `roundup_pow_of_two(3 * HZ)` jiffies (a longer gap replaces it
    /// outright), then moves `avg_write_bandwidth` an eighth of the way
    /// towards it when the old and new estimates agree on the direction
    /// (the kernel's spike filter).
    fn update_write_bandwidth(&mut self, elapsed: u64, hz: u64) {
        let period = (3 * hz).next_power_of_two();
        let written = self.written;
        let mut bw = (written - written.min(self.written_stamp)) * hz;
        let mut avg = self.avg_write_bandwidth;
        let old = self.write_bandwidth;
        if elapsed > period {
            bw /= elapsed;
            avg = bw;
        } else {
            bw += old * (period - elapsed);
            bw >>= period.trailing_zeros();
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        self.write_bandwidth = bw;
        self.avg_write_bandwidth = avg.max(1);
        self.written_stamp = written;
    }
}

impl Kernel {
    /// `BANDWIDTH_INTERVAL`: `max(HZ/5, 1)` jiffies between updates.
    fn bandwidth_interval(&self) -> u64 {
        (self.params.hz / 5).max(1)
    }

    /// `wb_bandwidth_estimate_start` (called by `do_writepages`): after
    /// more than `WB_BANDWIDTH_IDLE_JIF` (HZ) without an update and with no
    /// writeback in flight, restart the estimate period now, so that idle
    /// time does not count as slow writing.
    pub(super) fn wb_bandwidth_estimate_start(&mut self, d: usize) {
        let now = self.jiffies();
        let b = &mut self.bdis[d];
        if now.saturating_sub(b.bw_time_stamp) > self.params.hz && b.nr_writeback == 0 {
            b.dirtied_stamp = b.dirtied;
            b.written_stamp = b.written;
            b.bw_time_stamp = now;
        }
    }

    /// The `time_is_before_jiffies(wb->bw_time_stamp + BANDWIDTH_INTERVAL)`
    /// check of `do_writepages` and `balance_dirty_pages`, then
    /// `__wb_update_bandwidth`; from `balance_dirty_pages` (`dtc` given,
    /// its `pos_ratio` computed) with the dirty limit and rate updates.
    pub(super) fn wb_maybe_update_bandwidth(&mut self, d: usize, dtc: Option<&Dtc>) {
        self.wb_maybe_update_bandwidth_m(d, dtc, None);
    }

    /// The same with a memcg domain (`mdtc`, of memcg `m`), whose dirty
    /// limit and rate are updated after the global domain's, as 5.15's
    /// `__wb_update_bandwidth(gdtc, mdtc, true)` does.
    pub(super) fn wb_maybe_update_bandwidth_m(
        &mut self,
        d: usize,
        dtc: Option<&Dtc>,
        mdtc: Option<(u16, &Dtc)>,
    ) {
        let now = self.jiffies();
        if now > self.bdis[d].bw_time_stamp + self.bandwidth_interval() {
            self.wb_update_bandwidth(d, now, dtc, mdtc);
        }
    }

    /// `wb_inode_writeback_end` (5.15): an inode's last page under writeback
    /// finished; queue the delayed update `BANDWIDTH_INTERVAL` from now
    /// (`queue_delayed_work` leaves an already queued one as it is).
    pub(super) fn wb_inode_writeback_end(&mut self, d: usize) {
        if self.bdis[d].bw_dwork_at.is_some() {
            return;
        }
        let at = self.exec.now() + self.bandwidth_interval() * self.params.tick_ns();
        self.bdis[d].bw_dwork_at = Some(at);
        self.exec.wake_up_all(&mut self.bdis[d].bw_dwork_wait);
    }

    /// `__wb_update_bandwidth`: with `update_ratelimit` (a `dtc` from
    /// `balance_dirty_pages`) first `domain_update_dirty_limit` and
    /// `wb_update_dirty_ratelimit`, then the bandwidth estimate.
    fn wb_update_bandwidth(
        &mut self,
        d: usize,
        now: u64,
        dtc: Option<&Dtc>,
        mdtc: Option<(u16, &Dtc)>,
    ) {
        let hz = self.params.hz;
        let interval = self.bandwidth_interval();
        let elapsed = now.saturating_sub(self.bdis[d].bw_time_stamp).max(1);
        let dirtied = self.bdis[d].dirtied;
        if let Some(dtc) = dtc {
            self.wb_domain.domain_update_dirty_limit(dtc, now, interval);
            let u = wb_update_dirty_ratelimit(
                &self.wb_domain,
                &mut self.bdis[d],
                dtc,
                dirtied,
                elapsed,
                hz,
            );
            // The wb's cgroup (the memcg's wb when it has a domain).
            let ino = mdtc.map_or(1, |(m, _)| cgroup_ino(m));
            self.trace_bdi_dirty_ratelimit(d, &u, ino);
            if let Some((m, mdtc)) = mdtc {
                let dom = &mut self.memcgs[m as usize].cgwb_domain;
                dom.domain_update_dirty_limit(mdtc, now, interval);
                let dom = *dom;
                let u =
                    wb_update_dirty_ratelimit(&dom, &mut self.bdis[d], mdtc, dirtied, elapsed, hz);
                self.trace_bdi_dirty_ratelimit(d, &u, cgroup_ino(m));
            }
        }
        let b = &mut self.bdis[d];
        b.update_write_bandwidth(elapsed, hz);
        b.dirtied_stamp = dirtied;
        b.bw_time_stamp = now;
    }

    /// `wb_max_pause`: the longest `balance_dirty_pages` pause, in jiffies:
    /// long enough to let the wb's dirty pages drain at the estimated rate,
    /// at most `MAX_PAUSE` (`max(HZ/5, 1)`).
    pub(super) fn wb_max_pause(&self, d: usize, wb_dirty: u64) -> u64 {
        let hz = self.params.hz;
        let bw = self.bdis[d].avg_write_bandwidth;
        let t = wb_dirty / (1 + bw / (1 + hz / 8).next_power_of_two()) + 1;
        t.min((hz / 5).max(1))
    }
}

/// `wb_update_bandwidth_workfn`: the delayed update of device `d`'s
/// estimate, run when `wb_inode_writeback_end` queued it.
pub async fn bw_dwork(w: Rc<World>, d: usize) {
    loop {
        let due = {
            let mut k = w.k();
            let k = &mut *k;
            match k.bdis[d].bw_dwork_at {
                Some(at) => Some(at),
                None => {
                    k.exec.prepare_to_wait(&mut k.bdis[d].bw_dwork_wait);
                    None
                }
            }
        };
        match due {
            Some(at) => {
                w.sleep_until(at).await;
                let mut k = w.k();
                k.bdis[d].bw_dwork_at = None;
                let now = k.jiffies();
                k.wb_update_bandwidth(d, now, None, None);
            }
            None => {
                w.block(None).await;
                let mut k = w.k();
                let k = &mut *k;
                k.exec.finish_wait(&mut k.bdis[d].bw_dwork_wait);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady writer at 50 MB/s (12800 pages/s), updates every 50
    /// jiffies at HZ=250: both estimates fall from INIT_BW monotonically,
    /// never below the true rate, and settle on it; the average lags.
    #[test]
    fn estimate_converges_to_the_written_rate() {
        let mut b = Bdi::new();
        let mut last = (INIT_BW, INIT_BW);
        for i in 1..=300 {
            b.written += 12800 / 5;
            b.update_write_bandwidth(50, 250);
            let now = (b.write_bandwidth, b.avg_write_bandwidth);
            assert!(
                now.0 <= last.0 && now.1 <= last.1,
                "update {i}: {last:?} -> {now:?}"
            );
            assert!(
                now.0 >= 12800 - 1 && now.1 >= 12800 - 1,
                "update {i}: {now:?}"
            );
            if i == 5 {
                assert!(now.1 > now.0, "the average lags: {now:?}");
            }
            last = now;
        }
        assert!(last.0 < 12900 && last.1 < 13300, "{last:?}");
    }

    /// After a gap longer than the period the estimate is the rate of that
    /// gap alone, average included.
    #[test]
    fn a_long_gap_replaces_the_estimate() {
        let mut b = Bdi::new();
        b.written = 2000 * 10; // 2000 pages/s over 10 s
        b.update_write_bandwidth(2500, 250);
        assert_eq!((b.write_bandwidth, b.avg_write_bandwidth), (2000, 2000));
    }
}
