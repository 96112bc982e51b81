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
//! On by default since 2026-11-27 at the holds measured on the reference
//! host (a nested 2-vCPU VM, 6.18; docs/bench/cpu-costs.md:
//! `perf_page_costs`, by where `cpu-clock` samples land while interrupts
//! are off, and `lru_lock_hold`, from the lock's tracepoints): 223 ns per
//! page isolated, 49–64 per page an LRU addition puts on a list, 31 per
//! page munmap releases; the scan they are part of is 303 ns per page
//! (`perf_page_costs`). The hand-over cost is measured too
//! (crates/host/examples/lock_handoff.rs). `lru_lock.page_ns=0` turns the
//! model off. It was off before: on the 2-vCPU fidelity machines it made
//! reclaim spin where the real kernel hardly waits. Two faults of the
//! simulation, not of the lock, were behind that: a task gave up its CPU
//! after every piece of work and queued again (a reclaimer, batch after
//! batch, waited for every CPU-bound task's slice; sched.rs now keeps the
//! CPU until the task blocks or its slice ends), and kswapd never paid
//! its put-back's spin (below). docs/fidelity.md, "The CPU a task keeps,
//! and the lock turned on", has the scores with and without it.
//!
//! A waiter waits at most for one hold like its own per other CPU: a
//! booking is made when a task's work is due, and with more runnable
//! tasks than CPUs more of them can arrive at one instant than a
//! spinlock's queue, which only running CPUs join, could hold.
//!
//! The lock's other takers (mm/swap.c, 5.15): a task's LRU additions
//! (faults, swap-ins, page-cache inserts) take it once per `PAGEVEC_SIZE`
//! (15) pages, holding it `lru_lock.add_page_ns` per page
//! (`__pagevec_lru_add`; mm/lru.rs `lru_cache_add`), and the mmap-latency
//! worker's munmap takes it once per `SWAP_CLUSTER_MAX` (32) pages,
//! `lru_lock.release_page_ns` per page (`release_pages`; mm/anon.rs
//! `release_lru_pages`). They spin behind reclaimers like anyone else.
//!
//! Every spin is paid before the task's next batch: the isolation's with
//! the batch's work, the put-back's on its own (vmscan/lists.rs). Until
//! 2026-11-27 the put-back's spin was left as CPU debt, which kswapd, who
//! blocks only when balanced, never paid during a pass: it took batch
//! after batch ahead of the direct reclaimers queued behind it (75 % of
//! a full-size storm's scanning with the lock on; 40 % once it paid).
//!
//! A task's own hold never makes it spin: when the lock's last booking is
//! its own, from work it has charged but not yet paid (a run of faults,
//! a 1 MiB write's page-cache inserts), it takes the lock as that hold
//! ends.
//!
//! Simplifications: `lru_note_cost`'s brief acquisition is counted as part
//! of the put-back hold; activations and rotations through their per-CPU
//! pagevecs, LRU additions by kernel threads' completions, and munmap at a
//! task's exit do not take the lock; a run of work charged at once (a
//! fault run, a large read) books its acquisitions at the run's start, so
//! reclaimers arriving during the run do not delay its later batches; the
//! pages are taken at the time of arrival and the spinning is paid with
//! the batch's CPU work that follows (tasks pay CPU after the fact, see
//! sched.rs), so a task that must queue for a CPU keeps its turn meanwhile.
//!
//! Measured effect (2026-11-27, late; docs/fidelity.md): at full size
//! (`testbox-2021`, 32 CPUs) the storms' direct scanning is bounded by
//! the two nodes' locks: the series' comes within a factor of 2 of the
//! letter's, 5.15's falls to 0.18 of it (its real storms scanned 2,000
//! million pages, more than these holds let through in the simulated
//! storms' length), and kswapd's scanning comes within for both.

use crate::Kernel;

impl Kernel {
    /// Takes the lruvec's `lru_lock` for `pages` pages of list work and
    /// returns the ns the current task spins first, which the caller adds
    /// to the CPU it pays for that work (a task already on its CPU spins
    /// there; it does not queue for a CPU again).
    pub(super) fn lru_lock(&mut self, nid: usize, memcg: usize, pages: u64) -> u64 {
        let hold = pages * self.params.lru_lock_page_ns;
        self.lru_lock_held(nid, memcg, hold)
    }

    /// Takes the lruvec's `lru_lock` for `hold_ns` and returns the ns the
    /// current task spins first (0 with the model off, `lru_lock.page_ns`
    /// 0). For the lock's takers outside reclaim, whose hold per page is
    /// their own parameter.
    pub(crate) fn lru_lock_held(&mut self, nid: usize, memcg: usize, hold_ns: u64) -> u64 {
        if self.params.lru_lock_page_ns == 0 {
            return 0;
        }
        let handoff_ns = self.params.lru_lock_handoff_ns;
        let now = self.exec.now();
        let me = self.exec.current();
        let ahead = u64::from(self.machine.cpus.saturating_sub(1));
        let lv = &mut self.nodes[nid].lruvecs[memcg];
        let (acquired, spin) = if lv.lru_lock_free_at <= now {
            (now, 0)
        } else if lv.lru_lock_last == me {
            // Its own earlier hold, from work charged but not yet paid
            // (several batches of one run of work): the task was busy
            // with that work meanwhile, not waiting.
            (lv.lru_lock_free_at, 0)
        } else {
            // At most the other CPUs can be ahead of a spinning CPU (a
            // holder or waiter keeps its CPU, interrupts off, until it is
            // through), each for about a hold like this one: the queue the
            // model books can be longer, because a task arrives here when
            // its work is due and pays for its CPU afterwards, so more
            // tasks than CPUs can arrive at one instant.
            let at = (lv.lru_lock_free_at + handoff_ns).min(now + ahead * (hold_ns + handoff_ns));
            (at, at - now)
        };
        lv.lru_lock_free_at = lv.lru_lock_free_at.max(acquired + hold_ns);
        lv.lru_lock_last = me;
        self.current_mut().lru_lock_spin_ns += spin;
        spin
    }

    /// Whether the lock is modelled (`lru_lock.page_ns` above 0).
    pub fn lru_lock_modelled(&self) -> bool {
        self.params.lru_lock_page_ns > 0
    }
}
