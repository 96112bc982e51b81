//! The arithmetic of `shrink_lruvec`'s loop, apart from the scanning it
//! drives, so that the two generations' stopping rules can be read (and
//! tested) side by side.
//!
//! Each round takes up to `SWAP_CLUSTER_MAX` pages from every evictable
//! list that still has a target (`for_each_evictable_lru`); the loop runs
//! while the inactive anon or either file list has one (the active anon
//! target only rides along). Once a round has brought the lruvec's
//! reclaimed pages to `nr_to_reclaim` (never in global direct reclaim at
//! `DEF_PRIORITY`, "a normal event … best to do a batch of work at once"),
//! the type with less left stops and the other's remaining targets are cut
//! to the share of its original target that the stopped type had left.
//!
//! What happens after that cut is where the kernels differ:
//! - up to 5.19 (5.15.0 mm/vmscan.c, `scan_adjusted`), the cut sets the
//!   same flag that exempts direct reclaim at `DEF_PRIORITY`, so the loop
//!   scans the rest of the cut targets without looking at `nr_to_reclaim`
//!   again. At low priority, or when `get_scan_count` split the pressure
//!   very unevenly, that rest is most of a list: f53af4285d77 ("mm: vmscan:
//!   fix extreme overreclaim and swap floods") shows limit reclaim asked
//!   for 1,047 pages taking 4.4 million;
//! - from 6.0 (6.1.0; backported to 5.10.157, so 5.10.265 too,
//!   `proportional_reclaim`), the flag only records the `DEF_PRIORITY`
//!   exemption; after the cut the next round runs and the loop ends at the
//!   check after it, which finds the stopped type at zero ("we only make one
//!   nudge towards proportionality once we've got nr_to_reclaim").

use super::SWAP_CLUSTER_MAX;

/// One `shrink_lruvec` call's scan targets and stopping state, indexed as
/// `EVICTABLE_LRUS` (inactive anon, active anon, inactive file, active
/// file).
#[derive(Clone, Debug)]
pub(super) struct LruvecScan {
    /// `nr[]`: what is left to scan of each list.
    nr: [u64; 4],
    /// `targets[]`: `get_scan_count`'s targets as they were.
    targets: [u64; 4],
    /// No more stopping checks (5.15's `scan_adjusted`; in 6.0+ only the
    /// `DEF_PRIORITY` exemption, `proportional_reclaim`).
    exempt: bool,
    /// 6.0+: the cut does not exempt the rest from the checks.
    proportional_reclaim: bool,
}

impl LruvecScan {
    /// A loop over `targets`; `def_priority_direct` is global direct
    /// reclaim at `DEF_PRIORITY`, which never stops early.
    pub(super) fn new(
        targets: [u64; 4],
        def_priority_direct: bool,
        proportional_reclaim: bool,
    ) -> LruvecScan {
        LruvecScan {
            nr: targets,
            targets,
            exempt: def_priority_direct,
            proportional_reclaim,
        }
    }

    /// The next round's batch for each list (0: not scanned this round),
    /// taken off what is left; `None` once the loop's condition fails.
    pub(super) fn next_round(&mut self) -> Option<[u64; 4]> {
        if self.nr[0] == 0 && self.nr[2] == 0 && self.nr[3] == 0 {
            return None;
        }
        let mut round = [0; 4];
        for (n, r) in self.nr.iter_mut().zip(round.iter_mut()) {
            *r = (*n).min(SWAP_CLUSTER_MAX);
            *n -= *r;
        }
        Some(round)
    }

    /// After a round that brought the call's reclaimed pages to
    /// `nr_reclaimed`: `true` when the loop stops here.
    pub(super) fn stop_after_round(&mut self, nr_reclaimed: u64, nr_to_reclaim: u64) -> bool {
        if nr_reclaimed < nr_to_reclaim || self.exempt {
            return false;
        }
        let nr = &mut self.nr;
        let nr_file = nr[2] + nr[3];
        let nr_anon = nr[0] + nr[1];
        // "It's just vindictive to attack the larger once the smaller has
        // gone to zero."
        if nr_file == 0 || nr_anon == 0 {
            return true;
        }
        let t = &self.targets;
        let (stop, other, percentage) = if nr_file > nr_anon {
            (0, 2, nr_anon * 100 / (t[0] + t[1] + 1))
        } else {
            (2, 0, nr_file * 100 / (t[2] + t[3] + 1))
        };
        nr[stop] = 0;
        nr[stop + 1] = 0;
        for l in [other, other + 1] {
            let scanned = t[l] - nr[l];
            nr[l] = t[l] * (100 - percentage) / 100;
            nr[l] -= nr[l].min(scanned);
        }
        if !self.proportional_reclaim {
            self.exempt = true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::LruvecScan;

    /// Pages scanned by one call whose every scanned page is reclaimed.
    fn scanned(targets: [u64; 4], direct_def: bool, fixed: bool, nr_to_reclaim: u64) -> u64 {
        let mut s = LruvecScan::new(targets, direct_def, fixed);
        let mut total = 0;
        while let Some(round) = s.next_round() {
            total += round.iter().sum::<u64>();
            if s.stop_after_round(total, nr_to_reclaim) {
                break;
            }
        }
        total
    }

    #[test]
    fn after_its_nudge_5_15_scans_the_rest_and_6_0_stops() {
        // Low priority, pressure mostly on anon: anon 4,096 + 1,024,
        // file 64 + 64. Reclaim wants 32 pages.
        let t = [4_096, 1_024, 64, 64];
        // The first round scans 128 pages; the cut stops the file lists
        // (less left: 64 of 129, 49 %) and leaves anon 51 % of its
        // targets less what was scanned: 2,088 - 32 and 522 - 32.
        let old = scanned(t, false, false, 32);
        assert_eq!(old, 128 + (2_088 - 32) + (522 - 32));
        // 6.0: one more round (32 + 32), then the stopped type is zero.
        let new = scanned(t, false, true, 32);
        assert_eq!(new, 128 + 64);
    }

    #[test]
    fn direct_reclaim_at_def_priority_scans_its_targets_in_both() {
        let t = [300, 100, 500, 200];
        let all: u64 = t.iter().sum();
        assert_eq!(scanned(t, true, false, 32), all);
        assert_eq!(scanned(t, true, true, 32), all);
    }

    #[test]
    fn nothing_changes_until_enough_is_reclaimed() {
        // nr_to_reclaim above everything: both scan every target.
        let t = [300, 100, 500, 200];
        let all: u64 = t.iter().sum();
        assert_eq!(scanned(t, false, false, 10_000), all);
        assert_eq!(scanned(t, false, true, 10_000), all);
        // One type without targets: both stop at the first check.
        let t = [0, 0, 640, 0];
        assert_eq!(scanned(t, false, false, 32), 32);
        assert_eq!(scanned(t, false, true, 32), 32);
    }
}
