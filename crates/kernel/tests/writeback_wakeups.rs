//! Two writeback paths that no record shows directly, observed on a booted
//! kernel (mm/page-writeback.c, 5.15):
//!
//! - the end of `balance_dirty_pages`, reached from the freerun exit too,
//!   starts background writeback once dirty pages exceed the background
//!   threshold, even while they stay below freerun;
//! - `wb_inode_writeback_end` queues the delayed bandwidth update
//!   (`wb->bw_dwork`), which refreshes the estimate `BANDWIDTH_INTERVAL`
//!   after an inode's last page finished writeback, when no flusher or
//!   dirtier is there to do it.

mod common;

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::vmstat::Ev;
use std::rc::Rc;

const MACHINE: &str = "name='wb'\ncpus=2\nmemory_mib=256\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n";
const SEC: u64 = 1_000_000_000;

/// Boots the machine and starts one task that writes `pages` pages of a
/// new file once, then exits.
fn write_once(pages: u32) -> Rc<World> {
    common::boot_one_writer(MACHINE, pages)
}

/// Dirty pages between the background threshold and freerun: the writer is
/// never throttled, and only the freerun exit can start writeback within
/// the first second (the flusher's own periodic wake-up, which would also
/// see the background threshold crossed, comes at 5 s,
/// `dirty_writeback_centisecs`).
#[test]
fn the_freerun_exit_starts_background_writeback() {
    let (thresh, bg) = {
        let w = write_once(0);
        let k = w.k();
        k.dirty_thresholds()
    };
    let freerun = (thresh + bg) / 2;
    let pages = ((bg + freerun) / 2) as u32;
    assert!(u64::from(pages) > bg && u64::from(pages) < freerun);
    let w = write_once(pages);
    w.run_until(SEC);
    let written = w.k().event(Ev::NrWritten);
    assert!(
        written > 0,
        "{pages} dirty pages (background {bg}, freerun {freerun}) not written in 1 s"
    );
}

/// Once everything is written and the writer has gone, the estimate is
/// still refreshed: `bw_time_stamp` moves past the last completion.
#[test]
fn bw_dwork_refreshes_the_estimate_after_the_last_page() {
    let (thresh, bg) = write_once(0).k().dirty_thresholds();
    let w = write_once(((thresh + bg) / 2) as u32);
    // Step until all writeback has finished, noting when.
    let mut t = 0;
    let done_at = loop {
        t += SEC / 100;
        assert!(t < 60 * SEC, "writeback never finished");
        w.run_until(t);
        let k = w.k();
        if k.event(Ev::NrWritten) > 0 && k.nr_dirty() + k.nr_writeback() == 0 {
            break k.jiffies();
        }
    };
    let stamp_then = w.k().bdis[0].bw_time_stamp;
    w.run_until(t + SEC);
    let k = w.k();
    assert!(
        k.bdis[0].bw_dwork_at.is_none(),
        "the delayed update never ran"
    );
    assert!(
        k.bdis[0].bw_time_stamp > stamp_then && k.bdis[0].bw_time_stamp >= done_at,
        "estimate not refreshed after writeback ended at jiffy {done_at}: stamp {stamp_then} -> {}",
        k.bdis[0].bw_time_stamp
    );
}
