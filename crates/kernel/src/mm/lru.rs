//! LRU list maintenance and the workingset clock: adding and removing pages,
//! `mark_page_accessed`'s two-step activation, rotation of reclaimed pages
//! when their writeback ends, refault detection, freeing frames.
//!
//! Follows mm/swap.c and mm/workingset.c of 5.15. Simplification: the
//! per-CPU pagevecs that batch LRU moves are not modelled; moves take effect
//! at once.

use super::page::{pg, Lru, Page, PageFlags, Pfn};
use super::NodeStat;
use crate::vmstat::Ev;
use crate::Kernel;

/// The eviction clock bits of a shadow entry (below the `SHADOW` marker).
pub const SHADOW_AGE: u32 = (1 << 30) - 1;
/// The shadow entry's workingset bit (`pack_shadow`'s `workingset`).
pub const SHADOW_WORKINGSET: u32 = 1 << 30;

impl Kernel {
    /// `lru_cache_add`: puts `pfn` at the head of the list its flags select.
    pub fn lru_add(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get(pfn);
        let (memcg, lru) = (p.memcg as usize, Lru::of(p.flags));
        self.frames.get_mut(pfn).set(pg::LRU);
        self.nodes[nid].lruvecs[memcg].lists[lru as usize].push_head(&mut self.frames, pfn);
    }

    /// `lru_cache_add` from a task (a fault, a swap-in, a page-cache
    /// insert): the page goes on its list at once, and every
    /// `PAGEVEC_SIZE` pages the task takes the page's `lru_lock` for the
    /// batch, as 5.15's `__pagevec_lru_add` does when the CPU's
    /// `lru_pvecs.lru_add` fills, spinning first if reclaimers hold it.
    /// The batch is kept per task, not per CPU, and locks the lruvec of
    /// the page that fills it (the kernel relocks when the lruvec
    /// changes). The hold is part of the adding path's own cost; only the
    /// spinning is charged here.
    pub fn lru_cache_add(&mut self, pfn: Pfn) {
        self.lru_add(pfn);
        self.lru_add_batch_note(pfn);
    }

    /// Counts a page `pfn` added to the LRU by the current task in its
    /// LRU-addition batch, taking `lru_lock` when the batch is full (see
    /// [`Kernel::lru_cache_add`]); nothing with the lock not modelled.
    pub fn lru_add_batch_note(&mut self, pfn: Pfn) {
        if !self.lru_lock_modelled() {
            return;
        }
        // include/linux/pagevec.h (5.15): PAGEVEC_SIZE
        const PAGEVEC_SIZE: u32 = 15;
        let t = self.current_mut();
        t.lru_add_batch += 1;
        if t.lru_add_batch < PAGEVEC_SIZE {
            return;
        }
        t.lru_add_batch = 0;
        let (nid, memcg) = (self.frames.nid(pfn), self.frames.get(pfn).memcg as usize);
        let hold = u64::from(PAGEVEC_SIZE) * self.params.lru_lock_add_page_ns;
        let spin = self.lru_lock_held(nid, memcg, hold);
        self.charge_sys(spin);
    }

    /// `lru_add` at the tail (`lru_move_tail`).
    pub fn lru_add_tail(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get(pfn);
        let (memcg, lru) = (p.memcg as usize, Lru::of(p.flags));
        self.frames.get_mut(pfn).set(pg::LRU);
        self.nodes[nid].lruvecs[memcg].lists[lru as usize].push_tail(&mut self.frames, pfn);
    }

    /// `del_page_from_lru_list`, if the page is on an LRU.
    pub fn lru_del(&mut self, pfn: Pfn) {
        let p = *self.frames.get(pfn);
        if let Some((nid, memcg, lru)) = self.lru_del_unsettled(pfn, &p) {
            self.nodes[nid].lruvecs[memcg].lists[lru as usize].settle(&mut self.frames);
        }
    }

    /// [`Kernel::lru_del`] for `pfn`, whose frame the caller has read as
    /// `p`, leaving its list unsettled (`LruList::remove_unsettled`): for a
    /// caller that takes many pages off and settles the lists once. Returns
    /// the list the page was on.
    pub fn lru_del_unsettled(&mut self, pfn: Pfn, p: &Page) -> Option<(usize, usize, Lru)> {
        if !p.test(pg::LRU) {
            return None;
        }
        let (nid, memcg, lru) = (self.frames.nid(pfn), p.memcg as usize, Lru::of(p.flags));
        self.nodes[nid].lruvecs[memcg].lists[lru as usize].remove_unsettled(&self.frames, pfn);
        self.frames.get_mut(pfn).clear(pg::LRU);
        Some((nid, memcg, lru))
    }

    /// `activate_page`: inactive → active list head, `pgactivate`.
    pub fn activate_page(&mut self, pfn: Pfn) {
        let p = self.frames.get(pfn);
        if p.test(pg::ACTIVE | pg::UNEVICTABLE) || !p.test(pg::LRU) {
            return;
        }
        self.lru_del(pfn);
        self.frames.get_mut(pfn).set(pg::ACTIVE);
        self.lru_add(pfn);
        self.count(Ev::Pgactivate, 1);
        // workingset_activation(): an activation ages the clock.
        self.workingset_age_nonresident(pfn);
    }

    /// `mark_page_accessed` (mm/swap.c 5.15): inactive,unreferenced →
    /// inactive,referenced → active,unreferenced.
    pub fn mark_page_accessed(&mut self, pfn: Pfn) {
        let p = self.frames.get(pfn);
        if !p.test(pg::REFERENCED) {
            self.frames.get_mut(pfn).set(pg::REFERENCED);
        } else if !p.test(pg::ACTIVE) && !p.test(pg::UNEVICTABLE) {
            if p.test(pg::LRU) {
                self.activate_page(pfn);
            } else {
                // Isolated: __lru_cache_activate_page would mark it for the putback.
                self.frames.get_mut(pfn).set(pg::ACTIVE);
            }
            self.frames.get_mut(pfn).clear(pg::REFERENCED);
        }
    }

    /// `workingset_age_nonresident` for one page: advances the workingset
    /// clock of `pfn`'s lruvec (activations, refault activations, active
    /// pages put back by reclaim; evictions advance it in
    /// `workingset_eviction`).
    pub(crate) fn workingset_age_nonresident(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get(pfn);
        self.nodes[nid].lruvecs[p.memcg as usize].nonresident_age += 1;
    }

    /// `workingset_eviction` (mm/workingset.c 5.15): advances the clock and
    /// returns the shadow value to leave in the page cache or swap slot: the
    /// clock reading (30 bits here) and whether the page was in the
    /// workingset (`PG_workingset`, set when it was deactivated from an
    /// active list), as `pack_shadow` stores them.
    ///
    /// Simplified: the clock stamped and aged is that of the page's own
    /// memcg. 5.15 and 6.1 stamp the lruvec of the reclaim's target memcg
    /// (`target_memcg`, the root for global reclaim), store its id in the
    /// shadow, and `workingset_age_nonresident` ages each ancestor too;
    /// the two agree whenever reclaim targets the page's own memcg (every
    /// eviction of the fidelity suites), not for a child's pages evicted
    /// by global or ancestor reclaim.
    pub fn workingset_eviction(&mut self, pfn: Pfn) -> u32 {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get(pfn);
        let ws = if p.test(pg::WORKINGSET) {
            SHADOW_WORKINGSET
        } else {
            0
        };
        let l = &mut self.nodes[nid].lruvecs[p.memcg as usize];
        l.nonresident_age += 1;
        (l.nonresident_age as u32 & SHADOW_AGE) | ws
    }

    /// `workingset_refault`: counts the refault and decides whether the page
    /// comes back active: refault distance within `workingset_size`
    /// (mm/workingset.c 5.15: active file; anon refaults add inactive file;
    /// if swap is usable, active anon, and file refaults add inactive anon
    /// too — cache may challenge all of anon).
    ///
    /// Returns the flags the page comes back with: none, `PG_active`, or
    /// `PG_active | PG_workingset` when it was in the workingset before
    /// eviction — only then is the refault IO noted as reclaim cost
    /// (`lru_note_cost_page`), as in 5.15.
    pub fn workingset_refault(&mut self, pfn: Pfn, shadow: u32, file: bool) -> PageFlags {
        let nid = self.frames.nid(pfn);
        let memcg = self.frames.get(pfn).memcg as usize;
        self.count(
            if file {
                Ev::WorkingsetRefaultFile
            } else {
                Ev::WorkingsetRefaultAnon
            },
            1,
        );
        let lv = &mut self.nodes[nid].lruvecs[memcg];
        let now = lv.nonresident_age as u32 & SHADOW_AGE;
        let distance = u64::from(now.wrapping_sub(shadow & SHADOW_AGE) & SHADOW_AGE);
        let swap_ok = self.swap.nr_free > 0;
        let lv = &self.nodes[nid].lruvecs[memcg];
        let mut workingset = lv.size(Lru::ActiveFile);
        if !file {
            workingset += lv.size(Lru::InactiveFile);
        }
        if swap_ok {
            workingset += lv.size(Lru::ActiveAnon);
            if file {
                workingset += lv.size(Lru::InactiveAnon);
            }
        }
        if distance > workingset {
            return 0;
        }
        // SetPageActive + workingset_age_nonresident.
        self.workingset_age_nonresident(pfn);
        self.count(
            if file {
                Ev::WorkingsetActivateFile
            } else {
                Ev::WorkingsetActivateAnon
            },
            1,
        );
        // WORKINGSET_ACTIVATE is a hierarchical lruvec state: counted for
        // the page's memcg and each ancestor.
        let mut m = Some(memcg as u16);
        while let Some(id) = m {
            self.nodes[nid].lruvecs[id as usize].ws_activate[usize::from(file)] += 1;
            m = self.memcgs[id as usize].parent;
        }
        if shadow & SHADOW_WORKINGSET == 0 {
            return pg::ACTIVE;
        }
        // The page was active before eviction: the refault is IO that
        // reclaiming this type caused (lru_note_cost_page), and a restore
        // of the workingset (WORKINGSET_RESTORE).
        self.count(
            if file {
                Ev::WorkingsetRestoreFile
            } else {
                Ev::WorkingsetRestoreAnon
            },
            1,
        );
        // lru_note_cost_refault: the page's I/O, no rotation.
        self.lru_note_cost(nid, memcg, file, 1, 0);
        pg::ACTIVE | pg::WORKINGSET
    }

    /// `lru_note_cost`: IO caused by reclaiming `file` (or anon) pages,
    /// decayed so that recent cost dominates (mm/swap.c 5.15).
    ///
    /// Charged to the lruvec and each of its memcg's ancestors
    /// (`parent_lruvec`), each decayed against its hierarchical size.
    ///
    /// `nr_io` pages of I/O (written by reclaim, or refaulted) and
    /// `nr_rotated` pages scanned without being reclaimed: up to 6.1 the
    /// cost is the I/O alone, a page each; from 6.2
    /// (`policy.lru_cost_rotations`, 0538a82c39e9 mm/swap.c
    /// `lru_note_cost`) `nr_io * SWAP_CLUSTER_MAX + nr_rotated`.
    pub fn lru_note_cost(
        &mut self,
        nid: usize,
        memcg: usize,
        file: bool,
        nr_io: u64,
        nr_rotated: u64,
    ) {
        let n = if self.profile.lru_cost_rotations {
            nr_io * crate::vmscan::SWAP_CLUSTER_MAX + nr_rotated
        } else {
            nr_io
        };
        let mut m = Some(memcg as u16);
        while let Some(id) = m {
            let id = id as usize;
            let lrusize: u64 = if self.memcgs.len() == 1 {
                self.nodes[nid].lruvecs[id]
                    .lists
                    .iter()
                    .map(|l| l.len)
                    .sum()
            } else {
                crate::mm::page::EVICTABLE_LRUS
                    .iter()
                    .map(|&l| self.lruvec_page_state(nid, id, l))
                    .sum()
            };
            let lv = &mut self.nodes[nid].lruvecs[id];
            if file {
                lv.file_cost += n;
            } else {
                lv.anon_cost += n;
            }
            if lv.file_cost + lv.anon_cost > lrusize / 4 {
                lv.file_cost /= 2;
                lv.anon_cost /= 2;
            }
            m = self.memcgs[id].parent;
        }
    }

    /// Returns a frame to its node's free list.
    pub fn free_page(&mut self, pfn: Pfn) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        debug_assert!(
            !p.test(pg::LRU | pg::BUDDY | pg::WRITEBACK | pg::SWAPCACHE),
            "freeing busy page {pfn}: {:#x}",
            p.flags
        );
        p.flags = pg::BUDDY;
        p.owner = 0;
        self.memcg_uncharge_page(pfn);
        // free_unref_page(): onto this CPU's list for the page's node.
        let cpu = self.current().cpu as usize;
        let node = &mut self.nodes[nid];
        node.free.push(pfn);
        node.pcp.put(cpu, node.kswapd_running);
        self.count(Ev::Pgfree, 1);
        self.rate_count_free();
    }

    /// `folio_rotate_reclaimable` (mm/swap.c): a page reclaim marked
    /// `PG_reclaim` finished writeback: if it is on the LRU, clean and
    /// evictable, move it to the inactive tail so the next scan frees it.
    pub fn folio_rotate_reclaimable(&mut self, pfn: Pfn) {
        let p = self.frames.get(pfn);
        if p.test(pg::LOCKED | pg::DIRTY | pg::UNEVICTABLE) || !p.test(pg::LRU) {
            return;
        }
        self.lru_del(pfn);
        self.frames.get_mut(pfn).clear(pg::ACTIVE);
        self.lru_add_tail(pfn);
        self.count(Ev::Pgrotated, 1);
    }

    /// Adjusts the file/anon page counters of a page entering or leaving use.
    pub fn account_page(&mut self, pfn: Pfn, file: bool, d: i64) {
        let nid = self.frames.nid(pfn);
        if file {
            self.nodes[nid].mod_state(NodeStat::NrFilePages, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::machine::Machine;
    use crate::params::Params;
    use crate::profile::profile;
    use crate::Kernel;

    fn kernel(name: &str) -> Kernel {
        let m = Machine::from_toml(
            "name='c'\ncpus=1\nmemory_mib=64\nswap_mib=64\n[[devices]]\nname='vdc'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n",
            "test",
        )
        .unwrap();
        let p = profile(name).unwrap();
        let mut k = Kernel::new(m, p.clone(), Params::defaults(p), 1);
        // A large LRU, so that no decay halves the costs below.
        k.nodes[0].lruvecs[0].lists[0].len = 1 << 20;
        k
    }

    /// Up to 6.1 reclaim's cost is its I/O, a page each; from 6.2
    /// (0538a82c39e9) I/O weighs SWAP_CLUSTER_MAX a page and every page
    /// scanned without being reclaimed adds one.
    #[test]
    fn lru_cost_counts_rotations_from_6_2() {
        for (name, file_cost, anon_cost) in [("v6.1", 2, 0), ("v6.18", 2 * 32 + 30, 5)] {
            let mut k = kernel(name);
            k.lru_note_cost(0, 0, true, 2, 30);
            k.lru_note_cost(0, 0, false, 0, 5);
            let lv = &k.nodes[0].lruvecs[0];
            assert_eq!(
                (lv.file_cost, lv.anon_cost),
                (file_cost, anon_cost),
                "{name}"
            );
        }
        // The decay still halves both once they pass a quarter of the LRU.
        let mut k = kernel("v6.18");
        k.nodes[0].lruvecs[0].lists[0].len = 400;
        k.lru_note_cost(0, 0, true, 3, 10);
        let lv = &k.nodes[0].lruvecs[0];
        assert_eq!(lv.file_cost, 53, "106 > 400 / 4: halved");
    }
}
