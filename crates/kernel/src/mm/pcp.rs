//! Per-CPU page lists (`zone->per_cpu_pageset`, order 0): free pages a CPU
//! keeps for itself, outside `NR_FREE_PAGES`, so that watermark checks do
//! not see them.
//!
//! A page freed on a CPU goes on that CPU's list for the page's zone; an
//! order-0 allocation takes from the allocating CPU's list, refilling it
//! with `batch` pages from the buddy lists when empty (`rmqueue_bulk`);
//! once a list holds `high` pages, freeing returns some to the buddy lists
//! (`free_pcppages_bulk`). Direct reclaim that still finds no page drains
//! every CPU's lists and tries once more (`drain_all_pages`). How large the
//! lists may grow changed in 5.14 (profile `pcp_high`):
//! - up to 5.13 (5.10.265 mm/page_alloc.c, `pageset_set_batch`,
//!   `free_unref_page_commit`): `high` = 6 x `batch`, and each overflow
//!   returns `batch` pages;
//! - from 5.14 (5.15.0 and 6.1 `zone_highsize`, `nr_pcp_high`,
//!   `nr_pcp_free`): `high` = the zone's low watermark shared among the
//!   node's CPUs (at least 4 x `batch`), cut to 4 x `batch` while kswapd
//!   reclaims the node (`ZONE_RECLAIM_ACTIVE`), and an overflow returns
//!   `batch` pages doubled for each overflow since the CPU last allocated
//!   (`free_factor`), leaving at least `batch`.
//!
//! `batch` is `zone_batchsize`: a quarter of 0.1 % of the zone (at most
//! 1 MiB), rounded to 2^n - 1 (63 pages for a zone of 1 GiB or more).
//! Simplifications: the pages stay on the node's free list, which decides
//! which page is handed out; the lists only decide how many of them count as
//! free. One list per CPU and node (no migrate types); nothing drains a CPU's
//! list when it idles (`vmstat_update` drains only remote nodes' lists).

/// How large a CPU's list may grow (see the module comment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PcpHigh {
    /// Up to 5.13: 6 x `batch`, overflows return `batch`.
    SixBatch,
    /// 5.14+: the low watermark over the node's CPUs, cut while kswapd
    /// runs, overflows return a growing share.
    LowWmark,
    /// No kernel: no page is kept per CPU (every free page counts as free),
    /// as the simulator had it before the lists were modelled.
    #[default]
    None,
}

impl PcpHigh {
    /// `policy.pcp_high` values.
    pub const CHOICES: [(&'static str, PcpHigh); 3] = [
        ("6batch", PcpHigh::SixBatch),
        ("low_wmark", PcpHigh::LowWmark),
        ("none", PcpHigh::None),
    ];
}

/// One node's (zone's) per-CPU lists.
#[derive(Clone, Debug, Default)]
pub struct Pcp {
    /// The profile's rule, fixed at boot.
    rule: PcpHigh,
    /// Pages on each CPU's list.
    count: Vec<u32>,
    /// `free_factor` per CPU (5.14+).
    free_factor: Vec<u32>,
    /// Pages on all the lists.
    pub total: u64,
    /// `pcp->batch`.
    pub batch: u32,
    /// `pcp->high` (kswapd idle).
    pub high: u32,
}

/// `zone_batchsize` for a zone of `managed` pages.
pub fn zone_batchsize(managed: u64) -> u32 {
    let mut batch = (managed >> 10).min(256) / 4;
    if batch < 1 {
        batch = 1;
    }
    let x = batch + batch / 2;
    // rounddown_pow_of_two(x) - 1
    let pow = 1u64 << (63 - x.leading_zeros());
    (pow - 1) as u32
}

impl Pcp {
    /// The lists of a node with `managed` pages and low watermark `low`,
    /// for `cpus` CPUs in all, `node_cpus` of them on this node.
    pub fn new(rule: PcpHigh, managed: u64, low: u64, cpus: u32, node_cpus: u32) -> Pcp {
        // pcp->batch is at least 1 (`pageset_set_batch`'s max(1UL, batch),
        // 5.15 `zone_set_pageset_high_and_batch`); 5.10's high is 6 x the
        // zone's batch size, 0 for a tiny zone (every free goes back).
        let zb = zone_batchsize(managed);
        let batch = zb.max(1);
        let high = match rule {
            PcpHigh::SixBatch => 6 * zb,
            PcpHigh::LowWmark => ((low / u64::from(node_cpus.max(1))) as u32).max(batch << 2),
            PcpHigh::None => 0,
        };
        Pcp {
            rule,
            count: vec![0; cpus.max(1) as usize],
            free_factor: vec![0; cpus.max(1) as usize],
            total: 0,
            batch,
            high,
        }
    }

    /// An order-0 allocation on `cpu` (`rmqueue_pcplist`), with `buddy`
    /// pages on the node's buddy lists: takes a page off the CPU's list,
    /// refilling it first if empty. False if neither has a page.
    pub fn take(&mut self, cpu: usize, buddy: u64) -> bool {
        if self.rule == PcpHigh::None {
            return buddy > 0;
        }
        let cpu = cpu % self.count.len();
        if self.rule == PcpHigh::LowWmark {
            self.free_factor[cpu] >>= 1;
        }
        if self.count[cpu] == 0 {
            let got = u64::from(self.batch).min(buddy) as u32;
            if got == 0 {
                return false;
            }
            self.count[cpu] = got;
            self.total += u64::from(got);
        }
        self.count[cpu] -= 1;
        self.total -= 1;
        true
    }

    /// A page freed on `cpu` (`free_unref_page_commit`), `reclaiming` while
    /// kswapd reclaims the node: onto the CPU's list, and the list's excess
    /// back to the buddy lists.
    pub fn put(&mut self, cpu: usize, reclaiming: bool) {
        if self.rule == PcpHigh::None {
            return;
        }
        let cpu = cpu % self.count.len();
        self.count[cpu] += 1;
        self.total += 1;
        let n = match self.rule {
            PcpHigh::None => unreachable!("returned above"),
            PcpHigh::SixBatch => {
                if self.count[cpu] < self.high {
                    return;
                }
                self.batch
            }
            PcpHigh::LowWmark => {
                // nr_pcp_high(), then, over it, nr_pcp_free().
                let high = if reclaiming {
                    (self.batch << 2).min(self.high)
                } else {
                    self.high
                };
                if self.count[cpu] < high {
                    return;
                }
                if high < self.batch {
                    1
                } else {
                    let (min, max) = (self.batch, high - self.batch);
                    let b = self
                        .batch
                        .checked_shl(self.free_factor[cpu])
                        .unwrap_or(u32::MAX);
                    if b < max {
                        self.free_factor[cpu] += 1;
                    }
                    b.clamp(min, max.max(min))
                }
            }
        };
        let n = n.min(self.count[cpu]);
        self.count[cpu] -= n;
        self.total -= u64::from(n);
    }

    /// `drain_all_pages`: every list back to the buddy lists.
    pub fn drain(&mut self) {
        self.count.iter_mut().for_each(|c| *c = 0);
        self.total = 0;
    }

    /// Pages on `cpu`'s list.
    pub fn count(&self, cpu: usize) -> u32 {
        self.count[cpu % self.count.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_and_high_follow_the_zone() {
        // 1 GiB or more: 256 / 4 = 64, rounddown_pow_of_two(96) - 1 = 63.
        assert_eq!(zone_batchsize(262_144), 63);
        assert_eq!(zone_batchsize(16 << 20), 63);
        // 128 MiB: 32 / 4 = 8 -> 12 -> 7.
        assert_eq!(zone_batchsize(32_768), 7);
        assert_eq!(zone_batchsize(100), 0, "1 -> rounddown(1) - 1");
        let tiny = Pcp::new(PcpHigh::SixBatch, 100, 10, 1, 1);
        assert_eq!((tiny.batch, tiny.high), (1, 0));
        let mut tiny = tiny;
        tiny.put(0, false);
        assert_eq!(tiny.total, 0, "a tiny zone keeps nothing per CPU");
        let old = Pcp::new(PcpHigh::SixBatch, 262_144, 1_236, 2, 2);
        assert_eq!((old.batch, old.high), (63, 378));
        let new = Pcp::new(PcpHigh::LowWmark, 262_144, 1_236, 2, 2);
        assert_eq!(new.high, 618);
        // Never below 4 x batch.
        assert_eq!(Pcp::new(PcpHigh::LowWmark, 262_144, 100, 2, 2).high, 252);
    }

    #[test]
    fn a_list_grows_to_high_then_returns_pages() {
        let mut p = Pcp::new(PcpHigh::SixBatch, 262_144, 1_236, 2, 2);
        for _ in 0..377 {
            p.put(0, false);
        }
        assert_eq!(p.total, 377);
        p.put(0, false);
        assert_eq!(p.count(0), 378 - 63, "the 378th returns a batch");
        // An allocation on the other CPU refills its own list from the buddy.
        assert!(p.take(1, 1_000));
        assert_eq!(p.count(1), 62);
        assert!(p.take(1, 0) && p.count(1) == 61);
        p.drain();
        assert_eq!((p.total, p.count(0)), (0, 0));
        // Empty list, empty buddy: no page.
        assert!(!p.take(0, 0));
    }

    #[test]
    fn since_5_14_kswapd_shrinks_the_lists_and_overflows_grow() {
        let mut p = Pcp::new(PcpHigh::LowWmark, 262_144, 1_236, 2, 2);
        for _ in 0..617 {
            p.put(0, false);
        }
        assert_eq!(p.count(0), 617);
        // While kswapd reclaims, high is 4 x batch: the next free returns
        // batch << free_factor (63, then 126, ...) but leaves batch.
        p.put(0, true);
        assert_eq!(p.count(0), 618 - 63);
        p.put(0, true);
        assert_eq!(p.count(0), 556 - 126);
        p.put(0, true);
        assert_eq!(p.count(0), 431 - 189, "clamped to high - batch");
    }
}
