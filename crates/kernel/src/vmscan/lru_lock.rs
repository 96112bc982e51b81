//! `lruvec->lru_lock` as a contended resource.
//!
//! Every reclaimer of a lruvec (a memcg on a node; the root's, for global
//! reclaim) takes the same spinlock to take pages off the LRU and to put
//! the survivors back (5.15 `shrink_inactive_list`:
//! `spin_lock_irq(&lruvec->lru_lock)` around `isolate_lru_pages`, again
//! around `move_pages_to_lru`, and `lru_note_cost` once more, for the
//! lruvec and its parents; `shrink_active_list` twice). With dozens of direct reclaimers
//! the lock is rarely free: a waiter spins with interrupts off, burning
//! system time on its CPU, and each acquisition moves the lock and the
//! list heads between CPUs' caches. The 2021 letters' system time, about
//! 5 µs per page scanned on a 64-thread machine, is far above what a
//! page's own reclaim work costs; contention like this is the usual
//! suspect.
//!
//! Model: the lock is free at `Lruvec::lru_lock_free_at`. A task that
//! arrives before then spins until it is its turn (first come, first
//! served, as the kernel's queued spinlock), plus `lru_lock.handoff_ns`
//! for the hand-over, and holds it for `lru_lock.page_ns` per page moved.
//! The hold time is part of the work already charged per page
//! (`cost.scan_page_ns`); only the spinning and the hand-over are extra
//! system CPU. A task's own hold never delays it: the batch's CPU work
//! between taking and putting back (`cost.scan_page_ns` per page) outlasts
//! the hold as long as `lru_lock.page_ns` is below it.
//!
//! Off by default (`lru_lock.page_ns=0`). The hold per page isolated was
//! measured on the reference host (a nested 2-vCPU VM, 6.18:
//! crates/host/examples/lru_lock_hold.rs, docs/bench/cpu-costs.md): about
//! 250 ns, more than the 150 ns `cost.scan_page_ns` charges for the whole
//! scan of a page, which this model assumes contains the hold; the two
//! must be settled together before the lock can be on by default
//! (docs/fidelity.md, "The data filesystem", has the full-size run at the
//! cap). The hand-over cost is measured too
//! (crates/host/examples/lock_handoff.rs).
//!
//! Simplifications: `lru_note_cost`'s brief acquisition is counted as part
//! of the put-back hold; the other takers of the lock (LRU adds from faults and
//! activations through the per-CPU pagevecs, rotation when writeback
//! ends, `release_pages` on munmap) are not modelled; the pages are taken
//! at the time of arrival and the spinning is paid with the batch's CPU
//! work that follows (tasks pay CPU after the fact, see sched.rs), so a
//! task that must queue for a CPU keeps its turn meanwhile.

use crate::Kernel;

impl Kernel {
    /// Takes the lruvec's `lru_lock` for `pages` pages of list work and
    /// returns the ns the current task spins first, which the caller adds
    /// to the CPU it pays for that work (a task already on its CPU spins
    /// there; it does not queue for a CPU again).
    pub(super) fn lru_lock(&mut self, nid: usize, memcg: usize, pages: u64) -> u64 {
        let (page_ns, handoff_ns) = (
            self.params.lru_lock_page_ns,
            self.params.lru_lock_handoff_ns,
        );
        if page_ns == 0 {
            return 0;
        }
        let now = self.exec.now();
        let lv = &mut self.nodes[nid].lruvecs[memcg];
        let acquired = if lv.lru_lock_free_at > now {
            lv.lru_lock_free_at + handoff_ns
        } else {
            now
        };
        lv.lru_lock_free_at = acquired + pages * page_ns;
        let spin = acquired - now;
        self.current_mut().lru_lock_spin_ns += spin;
        spin
    }
}
