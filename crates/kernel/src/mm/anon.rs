//! Anonymous memory: mappings with page tables and accessed ("young") bits,
//! minor and major (swap-in) faults, `munmap`.
//!
//! A page-table entry is a `u32`: a pfn, a swap slot tagged with
//! [`PTE_SWAP`], or [`PTE_NONE`]. Young bits live in a bitmap beside the
//! table so a worker's pass over resident memory sets them 64 pages at a time
//! (DESIGN.md: resident accesses cost CPU, not events).
//!
//! Fault paths follow `do_anonymous_page` and `do_swap_page` (mm/memory.c,
//! 5.15): new anon pages go to the inactive anon list
//! (`lru_cache_add_inactive_or_unevictable`, since 5.9); a write fault on a
//! swapped-in page reuses it, dropping it from the swap cache and dirtying it
//! (`reuse_swap_page`, 5.15). Simplifications: one vma per mapping, no
//! sharing/fork, no THP, the pte dirty bit is not tracked: a mapping that was
//! ever written counts as dirty when `try_to_unmap` unmaps it.

use super::alloc::{alloc_page, Gfp};
use super::page::{pg, PageFlags, Pfn};
use super::slots::Slots;
use super::swap::{cached_page, SHADOW, SLOT_EMPTY};
use super::NodeStat;
use crate::block::{submit_bio, ReqKind};
use crate::engine::{TaskId, World};
use crate::mm::page::Lru;
use crate::sched::{maybe_pay_cpu, DEBT_FLUSH_NS};
use crate::vmstat::Ev;
use crate::Kernel;

/// Empty pte.
pub const PTE_NONE: u32 = u32::MAX;
/// Swap-entry tag.
pub const PTE_SWAP: u32 = 1 << 31;
/// `page.owner` of a page whose mapping is gone while reclaim or writeback holds it.
pub const ORPHAN: u32 = u32::MAX;

/// An anonymous mapping (one `vm_area_struct` with its page table).
#[derive(Debug)]
pub struct AnonMapping {
    /// Owning task.
    pub owner: TaskId,
    /// Page-table entries.
    pub pte: Slots,
    /// Accessed bits.
    pub young: Vec<u64>,
    /// Resident pages (`MM_ANONPAGES`).
    pub resident: u64,
    /// Swap entries (`MM_SWAPENTS`).
    pub swapents: u64,
    /// Written at least once (stands in for pte dirty bits).
    pub written: bool,
    /// Still mapped.
    pub alive: bool,
    /// `VM_LOCKED`: `mlock`ed; its pages go to the unevictable LRU (mm/mlock.rs).
    pub locked: bool,
    /// `swap_readahead_info`: sizes the next swap readahead (mm/swap_state.rs).
    pub swap_ra: super::swap_state::SwapRaInfo,
}

/// Result of a user access that may fail.
#[derive(Debug, PartialEq, Eq)]
pub enum Access {
    /// Done.
    Ok,
    /// The task was OOM-killed (fatal signal): it must exit.
    Killed,
}

impl Kernel {
    /// `mmap(MAP_ANONYMOUS|MAP_PRIVATE)` of `pages` pages for the current task.
    pub fn mmap_anon(&mut self, pages: u32) -> u32 {
        let owner = self.exec.current();
        let id = self.anon.len() as u32;
        let words = (pages as usize).div_ceil(64);
        let (pte, young) = match self.spare_anon_tables.take() {
            Some((pte, mut young)) => {
                young.clear();
                young.resize(words, 0);
                (Slots::reuse(pte, pages as usize), young)
            }
            None => (Slots::new(pages as usize), vec![0; words]),
        };
        self.anon.push(AnonMapping {
            owner,
            pte,
            young,
            resident: 0,
            swapents: 0,
            written: false,
            alive: true,
            locked: false,
            swap_ra: Default::default(),
        });
        self.tasks[owner as usize].mappings.push(id);
        id
    }

    /// `munmap`: frees resident pages and swap entries (`zap_pte_range`),
    /// charging the unmapping's CPU to the current task. Pages that
    /// reclaim has isolated or that are under writeback are orphaned and
    /// freed by whoever holds them.
    pub fn munmap(&mut self, id: u32) {
        let _ = self.munmap_batched(id, false);
    }

    /// [`Kernel::munmap`] whose caller, with `batched` and `lru_lock`
    /// modelled, pays the pages it took off LRU lists through their
    /// `release_pages` batches with [`release_lru_pages`]: returns them by
    /// lruvec, their CPU not charged here. Otherwise returns nothing and
    /// charges all of the unmapping's CPU.
    pub fn munmap_batched(&mut self, id: u32, batched: bool) -> LruRelease {
        let batched = batched && self.lru_lock_modelled();
        let mut released = LruRelease::new();
        let m = &mut self.anon[id as usize];
        if !m.alive {
            return released;
        }
        if m.locked {
            self.munlock_vma_pages_all(id);
        }
        let m = &mut self.anon[id as usize];
        m.alive = false;
        let pte = std::mem::take(&mut m.pte);
        let young = std::mem::take(&mut m.young);
        m.resident = 0;
        m.swapents = 0;
        let owner = m.owner;
        self.tasks[owner as usize].mappings.retain(|&x| x != id);
        let mut freed = 0u64;
        // The frames of a mapping lie all over the frame table: ask for the
        // frame `AHEAD` entries on while this one is freed, so that the
        // misses overlap (a hint only; see mm/lru_list.rs).
        const AHEAD: usize = 8;
        for (i, e) in pte.iter().enumerate() {
            if let Some(next) = pte.get_checked(i + AHEAD) {
                if next & PTE_SWAP == 0 {
                    crate::mm::lru_list::prefetch(&self.frames, next);
                }
            }
            if e == PTE_NONE {
                continue;
            }
            if e & PTE_SWAP != 0 {
                let slot = e & !PTE_SWAP;
                if let Some(c) = cached_page(self.swap.cache.get(slot as usize)) {
                    // Still in the swap cache: free it with its slot, or let
                    // its holder (reclaim, I/O) do so.
                    self.orphan_or_free(c, false);
                } else {
                    self.swap.free_slot(slot);
                }
                continue;
            }
            freed += 1;
            let lruvec = self.orphan_or_free(e, true);
            if let Some((nid, memcg)) = lruvec.filter(|_| batched) {
                match released
                    .iter_mut()
                    .find(|r| (r.0, r.1) == (nid as u32, memcg as u32))
                {
                    Some(r) => r.2 += 1,
                    None => released.push((nid as u32, memcg as u32, 1)),
                }
            }
        }
        // The pages left holes in their LRU lists (orphan_or_free): put
        // the lists' ends back on live pages, squeeze where needed.
        for node in &mut self.nodes {
            for lruvec in &mut node.lruvecs {
                for list in &mut lruvec.lists {
                    list.settle(&mut self.frames);
                }
            }
        }
        let deferred: u64 = released.iter().map(|r| u64::from(r.2)).sum();
        self.charge_sys((freed - deferred) * self.params.cost_unmap_ns);
        self.spare_anon_tables = Some((pte, young));
        released
    }

    /// Frees an anon page whose last mapping went away, or orphans it if
    /// reclaim or I/O holds a reference. Its LRU list is left for
    /// [`Kernel::munmap`] to settle. Returns the lruvec, `(nid, memcg)`,
    /// whose list it was taken off, if it was on one.
    fn orphan_or_free(&mut self, pfn: Pfn, mapped: bool) -> Option<(usize, usize)> {
        let nid = self.frames.nid(pfn);
        let p = *self.frames.get(pfn);
        if mapped {
            self.nodes[nid].mod_state(NodeStat::NrAnonPages, -1);
        }
        if p.test(pg::ISOLATED | pg::WRITEBACK | pg::LOCKED) {
            self.frames.get_mut(pfn).owner = ORPHAN;
            return None;
        }
        let lru = self.lru_del_unsettled(pfn, &p);
        if p.test(pg::SWAPCACHE) {
            self.delete_from_swap_cache(pfn);
        }
        self.free_page(pfn);
        lru.map(|(nid, memcg, _)| (nid, memcg))
    }

    /// `folio_referenced` for an anon page: tests and clears its young bit.
    /// Returns the number of referencing ptes (0 or 1) or `None` if unmapped.
    pub fn anon_referenced(&mut self, pfn: Pfn) -> Option<u32> {
        let p = self.frames.get(pfn);
        if p.owner == ORPHAN {
            return None;
        }
        let m = &mut self.anon[p.owner as usize];
        let i = p.index as usize;
        if !m.alive || (i >= m.pte.len() || m.pte.get(i) != pfn) {
            return None;
        }
        let (w, b) = (i / 64, i % 64);
        let young = m.young[w] & (1 << b) != 0;
        m.young[w] &= !(1 << b);
        self.rmap_walks += 1;
        Some(u32::from(young))
    }

    /// `try_to_unmap` of an anon page in the swap cache: replaces its pte by
    /// the swap entry; transfers the (approximated) pte dirty bit.
    pub fn anon_unmap(&mut self, pfn: Pfn) {
        let (owner, index, slot) = {
            let p = self.frames.get(pfn);
            (p.owner, p.index as usize, p.swap)
        };
        if owner == ORPHAN {
            return;
        }
        let m = &mut self.anon[owner as usize];
        if m.alive && m.pte.get(index) == pfn {
            m.pte.set(index, PTE_SWAP | slot);
            m.resident -= 1;
            m.swapents += 1;
            if m.written {
                self.frames.get_mut(pfn).set(pg::DIRTY);
            }
            let nid = self.frames.nid(pfn);
            self.nodes[nid].mod_state(NodeStat::NrAnonPages, -1);
        }
    }
}

/// Sets the young bits of pages `[from, to)`: the partial words at either
/// end bit by bit, the whole words between with one fill.
fn set_young_range(young: &mut [u64], from: usize, to: usize) {
    if from >= to {
        return;
    }
    let mask = |lo: usize, hi: usize| -> u64 {
        // Bits [lo, hi) of a word, 0 <= lo < hi <= 64.
        let high = if hi == 64 { u64::MAX } else { (1u64 << hi) - 1 };
        high & !((1u64 << lo) - 1)
    };
    let (w0, b0) = (from / 64, from % 64);
    let (w1, b1) = (to / 64, to % 64);
    if w0 == w1 {
        young[w0] |= mask(b0, b1);
        return;
    }
    young[w0] |= mask(b0, 64);
    young[w0 + 1..w1].fill(u64::MAX);
    if b1 > 0 {
        young[w1] |= mask(0, b1);
    }
}

/// A write (or read) of one word in every page of `range` of mapping `id`,
/// as a worker's loop does. Resident pages cost `cost.touch_page_ns` each and
/// set young bits a word at a time; missing pages fault.
pub async fn touch_anon(w: &World, id: u32, start: u32, end: u32, write: bool) -> Access {
    let mut i = start;
    while i < end {
        // Fast path: whole words of resident pages.
        let fault_at = {
            let mut k = w.k();
            let k = &mut *k;
            let cost = k.params.cost_touch_ns;
            let m = &mut k.anon[id as usize];
            if write {
                m.written = true;
            }
            let mut j = i;
            let mut found = None;
            if m.resident == m.pte.len() as u64 {
                // Every page is resident: no pte needs looking at.
                set_young_range(&mut m.young, i as usize, end as usize);
                j = end;
            }
            while j < end {
                let e = m.pte.get(j as usize);
                if e & PTE_SWAP != 0 || e == PTE_NONE {
                    found = Some(j);
                    break;
                }
                let (wi, b) = ((j / 64) as usize, j % 64);
                if b == 0 && j + 64 <= end && m.pte.none_has(j as usize..j as usize + 64, PTE_SWAP)
                {
                    m.young[wi] = u64::MAX;
                    j += 64;
                    continue;
                }
                m.young[wi] |= 1 << b;
                j += 1;
            }
            let touched = u64::from(j - i);
            k.charge_user(touched * cost);
            found
        };
        maybe_pay_cpu(w).await;
        // A safe point: the program's own text (mm/text.rs).
        if crate::mm::text::touch_text(w).await == crate::mm::filemap::FileOp::Killed {
            return Access::Killed;
        }
        let Some(j) = fault_at else { break };
        // A run of empty ptes whose pages the allocator's fast path can
        // give is faulted in without a yield; the first page it cannot
        // take goes the whole way.
        let next = w.k().do_anonymous_run(id, j, end);
        if next > j {
            charge_faulted_touch(w, next - j);
            i = next;
            continue;
        }
        if handle_anon_fault(w, id, j, write).await == Access::Killed {
            return Access::Killed;
        }
        charge_faulted_touch(w, 1);
        i = j + 1;
    }
    Access::Ok
}

/// The user-space access that faulted is restarted once the fault is
/// handled (6.1 x86 `exc_page_fault` → `do_user_addr_fault` →
/// `handle_mm_fault`, then back to the faulting instruction), and then
/// costs a store like any resident page: `cost.touch_page_ns` of user time for each of the `n`
/// pages faulted in. Without it a worker whose pages all fault (a
/// thrashing hog, mmap-latency's fresh mappings) had no user time at all.
/// On top of it each fault costs the task `cost.fault_user_ns` of user
/// time: the exception's entry and return and the TLB refill after it
/// happen outside the kernel's accounting window, and the tick books them
/// to user mode.
pub fn charge_faulted_touch(w: &World, n: u32) {
    let mut k = w.k();
    let c = k.params.cost_touch_ns + k.params.cost_fault_user_ns;
    k.charge_user(u64::from(n) * c);
}

impl Kernel {
    /// Minor faults on the empty ptes of mapping `id` from `from` on, each
    /// exactly as [`handle_anon_fault`] → `do_anonymous_page` with the
    /// allocation served by `get_page_from_freelist` at the low watermark,
    /// but without the task yielding between them. Stops before the first
    /// pte that is not empty, at `end`, before a page the fast path cannot
    /// give (the caller takes the slow path for it), and once the task's
    /// CPU debt reaches [`DEBT_FLUSH_NS`] (where [`touch_anon`] pays).
    /// Returns the index of the first page not faulted in.
    ///
    /// Why this gives the same run as one fault at a time: between two
    /// faults that do not block, no other task runs, and nothing in a
    /// fault reads the LRU lists; so the new pages can go to their list in
    /// one [`super::lru_list::LruList::push_head_many`], in fault order,
    /// as the kernel's per-CPU `lru_add` batch (5.15 `pagevec`) also
    /// delays them.
    pub fn do_anonymous_run(&mut self, id: u32, from: u32, end: u32) -> u32 {
        let (fault_ns, zero_ns) = (self.params.cost_fault_ns, self.params.cost_zero_ns);
        let mut batch = self.pfn_vec();
        let mut batch_lru: Option<(usize, usize)> = None;
        let mut j = from;
        while j < end {
            if j > from && self.cpu_debt() >= DEBT_FLUSH_NS {
                break;
            }
            let m = &self.anon[id as usize];
            if !m.alive || m.pte.get(j as usize) != PTE_NONE {
                break;
            }
            let Some(pfn) = self.get_page_charged_fast() else {
                break;
            };
            self.count_fault(Ev::Pgfault);
            self.charge_sys(fault_ns + zero_ns);
            // do_anonymous_page's flags, and PG_lru for the batch's list.
            let flags = self.new_anon_page_flags(id) | pg::LRU;
            let lruvec = self.install_anon_page(id, j, pfn, flags);
            if batch_lru.is_some_and(|l| l != lruvec) {
                self.flush_fault_batch(batch_lru, &mut batch);
            }
            batch_lru = Some(lruvec);
            batch.push(pfn);
            self.lru_add_batch_note(pfn);
            j += 1;
        }
        self.flush_fault_batch(batch_lru, &mut batch);
        self.recycle_pfn_vec(batch);
        j
    }

    /// Puts a fault run's new pages at the head of their list: inactive
    /// anon, or unevictable for a `VM_LOCKED` mapping (a run is of one
    /// mapping, so of one list).
    fn flush_fault_batch(&mut self, lru: Option<(usize, usize)>, batch: &mut Vec<Pfn>) {
        if let Some((nid, memcg)) = lru {
            let list = batch.first().map_or(Lru::InactiveAnon, |&pfn| {
                Lru::of(self.frames.get(pfn).flags)
            }) as usize;
            self.nodes[nid].lruvecs[memcg].lists[list].push_head_many(&mut self.frames, batch);
        }
        batch.clear();
    }
}

/// Pages a munmap took off LRU lists: `(nid, memcg, pages)` per lruvec.
pub type LruRelease = Vec<(u32, u32, u32)>;

/// The `release_pages` batches of a munmap (5.15 mm/swap.c): the pages
/// leave their lists under the lruvec's `lru_lock`, which the function
/// drops and retakes every `SWAP_CLUSTER_MAX` pages so as not to keep
/// interrupts off for long. Each batch waits its turn for the lock at the
/// time it is reached, behind reclaimers holding it, and then pays its
/// pages' unmapping CPU (`cost.unmap_page_ns`, the hold
/// `lru_lock.release_page_ns` included). Simplification: the pages were
/// freed when [`Kernel::munmap`] ran; only the time is spread out.
pub async fn release_lru_pages(w: &World, released: LruRelease) {
    const SWAP_CLUSTER_MAX: u32 = 32;
    for (nid, memcg, pages) in released {
        let mut left = pages;
        while left > 0 {
            let n = left.min(SWAP_CLUSTER_MAX);
            left -= n;
            let cost = {
                let mut k = w.k();
                let hold = u64::from(n) * k.params.lru_lock_release_page_ns;
                let spin = k.lru_lock_held(nid as usize, memcg as usize, hold);
                spin + u64::from(n) * k.params.cost_unmap_ns
            };
            crate::sched::run_on_cpu(w, 0, cost).await;
        }
    }
}

/// `handle_mm_fault` for anon page `index` of mapping `id`.
pub async fn handle_anon_fault(w: &World, id: u32, index: u32, write: bool) -> Access {
    let e = {
        let mut k = w.k();
        k.count_fault(Ev::Pgfault);
        let c = k.params.cost_fault_ns;
        k.charge_sys(c);
        k.anon[id as usize].pte.get(index as usize)
    };
    if e == PTE_NONE {
        do_anonymous_page(w, id, index).await
    } else {
        do_swap_page(w, id, index, e & !PTE_SWAP, write).await
    }
}

/// `do_anonymous_page`: allocate, zero, map, add to the inactive anon LRU.
async fn do_anonymous_page(w: &World, id: u32, index: u32) -> Access {
    let Some(pfn) = alloc_page(w, Gfp::HIGHUSER_MOVABLE).await else {
        return Access::Killed;
    };
    let mut k = w.k();
    if !k.anon[id as usize].alive {
        k.free_page(pfn);
        return Access::Ok;
    }
    let z = k.params.cost_zero_ns;
    k.charge_sys(z);
    let flags = k.new_anon_page_flags(id);
    k.map_new_anon(id, index, pfn, flags);
    Access::Ok
}

impl Kernel {
    /// Installs `pfn` at `index` of mapping `id` with `flags`, young, and
    /// puts it on the LRU its flags select.
    fn map_new_anon(&mut self, id: u32, index: u32, pfn: Pfn, flags: PageFlags) {
        self.install_anon_page(id, index, pfn, flags);
        self.lru_cache_add(pfn);
    }

    /// Installs `pfn` at `index` of mapping `id` with `flags`, young;
    /// returns its lruvec, `(nid, memcg)`. The LRU is the caller's.
    fn install_anon_page(
        &mut self,
        id: u32,
        index: u32,
        pfn: Pfn,
        flags: PageFlags,
    ) -> (usize, usize) {
        let nid = self.frames.nid(pfn);
        let p = self.frames.get_mut(pfn);
        p.flags = flags;
        p.owner = id;
        p.index = index;
        let memcg = p.memcg as usize;
        self.nodes[nid].mod_state(NodeStat::NrAnonPages, 1);
        if flags & pg::MLOCKED != 0 {
            self.account_mlocked_fault(nid);
        }
        let m = &mut self.anon[id as usize];
        m.pte.set(index as usize, pfn);
        m.young[index as usize / 64] |= 1 << (index % 64);
        m.resident += 1;
        (nid, memcg)
    }
}

impl Kernel {
    /// `__read_swap_cache_async` for a newly allocated `pfn`: puts it in the
    /// swap cache for `slot` (locked until the read completes) and on the
    /// inactive anon LRU (or the active one, for a workingset refault).
    pub(crate) fn swapin_page(&mut self, pfn: Pfn, id: u32, index: u32, slot: u32) {
        self.count(Ev::Pswpin, 1);
        self.count(Ev::Pgpgin, 4);
        let shadow = self.swap.cache.get(slot as usize);
        let refault_flags = if shadow != SLOT_EMPTY && shadow & SHADOW != 0 {
            self.workingset_refault(pfn, shadow & !SHADOW, false)
        } else {
            0
        };
        self.swap.cache.set(slot as usize, pfn);
        // 4.20-5.10: "Caller will initiate read into locked page";
        // SetPageWorkingset() on every page read from swap.
        let ws = if self.profile.swapin_workingset {
            pg::WORKINGSET
        } else {
            0
        };
        {
            let p = self.frames.get_mut(pfn);
            p.flags = pg::SWAPBACKED | pg::SWAPCACHE | pg::LOCKED | refault_flags | ws;
            p.owner = id;
            p.index = index;
            p.swap = slot;
        }
        let nid = self.frames.nid(pfn);
        self.nodes[nid].mod_state(NodeStat::NrSwapcache, 1);
        self.lru_cache_add(pfn);
    }
}

/// `do_swap_page`: the page is found in the swap cache (minor; waits if it
/// is still being read) or read from the swap device with the readahead
/// around it (major, waits for the I/O).
async fn do_swap_page(w: &World, id: u32, index: u32, slot: u32, write: bool) -> Access {
    let cached = cached_page(w.k().swap.cache.get(slot as usize));
    let pfn = if let Some(cached) = cached {
        // Swap-cache hit: the page is still resident (under writeback, or
        // read ahead by an earlier fault); folio_lock_or_retry waits for a
        // read in flight.
        w.k().lookup_swap_cache_hit(id, index, cached);
        crate::mm::filemap::wait_on_page_locked(w, cached).await;
        cached
    } else {
        let Some(pfn) = alloc_page(w, Gfp::HIGHUSER_MOVABLE).await else {
            return Access::Killed;
        };
        {
            let mut k = w.k();
            // The allocation may have slept in reclaim, and meanwhile
            // another task's readahead by slot (a rotational swap device:
            // `swap_cluster_readahead` reads whoever's slots) may have put
            // this slot's page in the swap cache. 5.15/6.1
            // `__read_swap_cache_async` looks the slot up again after
            // allocating (`swapcache_prepare` fails with -EEXIST, the loop
            // finds the page) and the fault goes on with that page;
            // here the access faults again and finds it (simplified: a
            // minor fault, where the kernel counts this one major).
            if !k.anon[id as usize].alive
                || k.anon[id as usize].pte.get(index as usize) != (PTE_SWAP | slot)
                || cached_page(k.swap.cache.get(slot as usize)).is_some()
            {
                k.free_page(pfn);
                return Access::Ok;
            }
            k.count_fault(Ev::Pgmajfault);
            k.swapin_page(pfn, id, index, slot);
        }
        let mut pages = crate::mm::swap_state::swapin_readahead(w, id, index, slot).await;
        pages.push(pfn);
        {
            // Per page read, the faulting one and its readahead alike
            // (5.15 `__read_swap_cache_async` allocates, charges and adds
            // each to the swap cache and the LRU; `swap_readpage` builds
            // and submits a bio for each, under one plug): cost.swapin_page_ns,
            // measured with the submission in it, in place of
            // cost.io_submit_page_ns. What is per fault (entry,
            // `handle_mm_fault`, the pte and rmap, `swap_free`) is
            // cost.fault_ns, paid by every fault, major or minor: a
            // readahead page pays it when it is faulted in. Not charged: the
            // switch back in after sleeping on the read (docs/fidelity.md,
            // "Swap-in and swap-write CPU measured").
            let mut k = w.k();
            let c = k.params.cost_swapin_ns * pages.len() as u64;
            k.charge_sys(c);
        }
        crate::sched::pay_cpu(w).await;
        submit_swap_reads(w, pages, pfn).await;
        pfn
    };
    let mut k = w.k();
    // Reclaim may have freed the page between the read's end and now (it
    // was clean, in the swap cache and unmapped): the access faults again.
    if k.swap.cache.get(slot as usize) != pfn {
        return Access::Ok;
    }
    let m = &mut k.anon[id as usize];
    if !m.alive || m.pte.get(index as usize) != (PTE_SWAP | slot) {
        return Access::Ok;
    }
    m.pte.set(index as usize, pfn);
    m.young[index as usize / 64] |= 1 << (index % 64);
    m.resident += 1;
    m.swapents -= 1;
    let nid = k.frames.nid(pfn);
    k.nodes[nid].mod_state(NodeStat::NrAnonPages, 1);
    // reuse_swap_page(): an exclusive page written to is dropped from the
    // swap cache and dirtied, unless its writeback is still in flight.
    let flags = k.frames.get(pfn).flags;
    if write && flags & pg::WRITEBACK == 0 && flags & pg::SWAPCACHE != 0 {
        k.delete_from_swap_cache(pfn);
        k.frames.get_mut(pfn).set(pg::DIRTY);
    } else if flags & pg::SWAPCACHE != 0 && k.swap.full() && flags & pg::WRITEBACK == 0 {
        // try_to_free_swap() when swap is more than half full.
        k.delete_from_swap_cache(pfn);
        k.frames.get_mut(pfn).set(pg::DIRTY);
    }
    Access::Ok
}

/// Submits the swap reads of a fault: `pages` (the faulting `pfn` and its
/// readahead) sorted by slot, one request per run of consecutive slots
/// (what the plug merges), the others first without waiting, then the run
/// of `pfn`, waiting for it (`swap_readpage` under `blk_start_plug`, then
/// `folio_lock` on the faulting page).
async fn submit_swap_reads(w: &World, mut pages: Vec<Pfn>, pfn: Pfn) {
    let (dev, base, slots) = {
        let k = w.k();
        pages.sort_unstable_by_key(|&p| k.frames.get(p).swap);
        let slots: Vec<u32> = pages.iter().map(|&p| k.frames.get(p).swap).collect();
        (k.swap.dev, k.swap.base_pos, slots)
    };
    let mut runs: Vec<(u64, Vec<Pfn>)> = Vec::new();
    for (i, &p) in pages.iter().enumerate() {
        match runs.last_mut() {
            Some((_, run)) if slots[i] == slots[i - 1] + 1 => run.push(p),
            _ => runs.push((base + u64::from(slots[i]), vec![p])),
        }
    }
    let own = runs
        .iter()
        .position(|(_, r)| r.contains(&pfn))
        .expect("the faulting page is read");
    let (pos, run) = runs.remove(own);
    for (pos, run) in runs {
        submit_bio(w, dev, ReqKind::SwapIn, run, pos, false).await;
    }
    submit_bio(w, dev, ReqKind::SwapIn, run, pos, true).await;
}

#[cfg(test)]
mod tests {
    use super::set_young_range;

    #[test]
    fn young_range_sets_exactly_the_range() {
        let mut y = vec![0u64; 3];
        set_young_range(&mut y, 62, 130);
        assert_eq!(y[0], 0b11 << 62);
        assert_eq!(y[1], u64::MAX);
        assert_eq!(y[2], 0b11);
        let mut z = vec![0u64; 1];
        set_young_range(&mut z, 3, 3);
        assert_eq!(z[0], 0);
    }
}
