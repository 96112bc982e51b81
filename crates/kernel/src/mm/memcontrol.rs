//! The memory controller (mm/memcontrol.c): a tree of memory cgroups, each
//! with a hierarchical page counter and the limits of cgroup v2
//! (`memory.max`, `memory.high`, `memory.low`, `memory.min`) or v1
//! (`memory.limit_in_bytes`, which is `memory.max` here); charging with
//! limit reclaim (`try_charge_memcg`), the memcg OOM killer, the
//! `memory.high` penalty sleep (`mem_cgroup_handle_over_high`) and the
//! per-cgroup counters of `memory.stat` and `memory.events`.
//!
//! Read from 5.15.0 and 6.1.0 mm/memcontrol.c (`try_charge_memcg`,
//! `mem_cgroup_oom`, `mem_cgroup_handle_over_high`, `calculate_overage`,
//! `calculate_high_delay`, `reclaim_high`, `mem_cgroup_margin`) and 4.17
//! `try_charge` for the older retry count; `../shared/reference/
//! memcg-shrinkers-bdi.md` §1.1, §2.
//!
//! Simplified, and why it is safe here:
//! - No per-CPU charge stock: every page is charged to the counters at
//!   once (the kernel charges `MEMCG_CHARGE_BATCH` pages and keeps the rest
//!   in stock, so its usage runs up to a batch per CPU ahead). The one place
//!   where the batch decides behaviour, `memory.high`, keeps it: pages charged
//!   over `high` accumulate in `current->memcg_nr_pages_over_high` and the
//!   task pays once per batch, as the kernel's per-batch charge does.
//! - No swap counter (`memory.swap.max`, v1 memsw): swapped-out pages leave
//!   the memcg's usage.
//! - Protection (`memory.low`/`min`) is the declared value capped by usage
//!   and by the parent's effective protection; the kernel's
//!   `effective_protection` also shares a parent's protection among
//!   children in proportion to their usage (not done: reported as a
//!   simplification when siblings overcommit).
//! - The page's memcg is the charging task's for page cache and anon, and
//!   the faulting task's on swap-in (the kernel uses the swap record).

use crate::engine::World;
use crate::mm::alloc::Gfp;
use crate::mm::page::{Lru, Pfn};
use crate::writeback::WbDomain;
use crate::Kernel;

/// Id of the root memory cgroup.
pub const ROOT_MEM_CGROUP: u16 = 0;
/// `MEMCG_CHARGE_BATCH` (5.15; 64 in 6.1).
pub const MEMCG_CHARGE_BATCH: u64 = 32;
/// No limit (`PAGE_COUNTER_MAX`).
pub const PAGE_COUNTER_MAX: u64 = u64::MAX;
/// `MEMCG_DELAY_PRECISION_SHIFT`
const MEMCG_DELAY_PRECISION_SHIFT: u32 = 20;
/// `MEMCG_DELAY_SCALING_SHIFT`
const MEMCG_DELAY_SCALING_SHIFT: u32 = 14;

/// `memory.events` entries (`enum memcg_memory_event`), in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemcgEvent {
    /// Reclaim went below `memory.low` protection.
    Low = 0,
    /// Usage over `memory.high` (reclaim_high ran).
    High,
    /// A charge hit `memory.max`.
    Max,
    /// The memcg OOM path was entered.
    Oom,
    /// A task was OOM-killed in the cgroup.
    OomKill,
}
/// Names of [`MemcgEvent`] as `memory.events` prints them.
pub const MEMCG_EVENT_NAMES: [&str; 5] = ["low", "high", "max", "oom", "oom_kill"];

/// Per-memcg VM events (`memcg_vm_event_stat[]`), as v2 `memory.stat` of
/// 6.1 prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum MemcgVm {
    PgscanKswapd = 0,
    PgscanDirect,
    PgstealKswapd,
    PgstealDirect,
    Pgfault,
    Pgmajfault,
    Pgrefill,
    Pgactivate,
    Pgdeactivate,
}
/// Names of [`MemcgVm`] in `memory.stat`.
pub const MEMCG_VM_NAMES: [&str; 9] = [
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgfault",
    "pgmajfault",
    "pgrefill",
    "pgactivate",
    "pgdeactivate",
];

/// What a workload asks for: one cgroup, limits in pages.
#[derive(Clone, Debug, PartialEq)]
pub struct MemcgSpec {
    /// Name (unique).
    pub name: String,
    /// Parent's name (`None`: the root).
    pub parent: Option<String>,
    /// `memory.max` (v1: `memory.limit_in_bytes`), pages.
    pub max: u64,
    /// `memory.high`, pages.
    pub high: u64,
    /// `memory.low`, pages.
    pub low: u64,
    /// `memory.min`, pages.
    pub min: u64,
}

impl MemcgSpec {
    /// An unlimited cgroup under the root.
    pub fn new(name: &str) -> MemcgSpec {
        MemcgSpec {
            name: name.into(),
            parent: None,
            max: PAGE_COUNTER_MAX,
            high: PAGE_COUNTER_MAX,
            low: 0,
            min: 0,
        }
    }
}

/// One memory cgroup (`struct mem_cgroup`, the parts reclaim reads).
#[derive(Clone, Debug)]
pub struct MemCgroup {
    /// Name (the root's is empty).
    pub name: String,
    /// Parent id (`None` for the root).
    pub parent: Option<u16>,
    /// `memory.max`, pages.
    pub max: u64,
    /// `memory.high`, pages.
    pub high: u64,
    /// `memory.low`, pages.
    pub low: u64,
    /// `memory.min`, pages.
    pub min: u64,
    /// `memory.current`: pages charged here and below (the page counter).
    pub usage: u64,
    /// `memory.peak` (the counter's watermark).
    pub peak: u64,
    /// `memory.events`, hierarchical as in v2 (counted here and up).
    pub events: [u64; 5],
    /// `memory.stat` VM events, hierarchical.
    pub vm: [u64; 9],
    /// Seconds tasks of this cgroup slept in the `memory.high` penalty.
    pub high_delay_ns: u64,
    /// This memcg and its descendants, pre-order (`mem_cgroup_iter` order).
    pub subtree: Vec<u16>,
    /// Its own (not hierarchical) `NR_FILE_DIRTY` pages.
    pub nr_file_dirty: u64,
    /// Its own `NR_WRITEBACK` pages.
    pub nr_writeback: u64,
    /// `memcg->cgwb_domain`: the memcg dirty domain's hard limit (cgroup v2).
    pub cgwb_domain: WbDomain,
}

impl MemCgroup {
    fn new(name: &str, parent: Option<u16>) -> MemCgroup {
        MemCgroup {
            name: name.into(),
            parent,
            max: PAGE_COUNTER_MAX,
            high: PAGE_COUNTER_MAX,
            low: 0,
            min: 0,
            usage: 0,
            peak: 0,
            events: [0; 5],
            vm: [0; 9],
            high_delay_ns: 0,
            subtree: Vec::new(),
            nr_file_dirty: 0,
            nr_writeback: 0,
            cgwb_domain: WbDomain::default(),
        }
    }

    /// The root memcg.
    pub fn root() -> MemCgroup {
        let mut r = MemCgroup::new("", None);
        r.subtree = vec![ROOT_MEM_CGROUP];
        r
    }
}

/// Error creating the cgroup tree.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MemcgError {
    /// Two cgroups of one name.
    #[error("cgroup `{0}` is defined twice; give each [[cgroup]] a distinct name")]
    Duplicate(String),
    /// A parent no cgroup has as its name (or a cycle).
    #[error("cgroup `{name}`: parent `{parent}` is not defined before it (or the parents form a cycle); define the parent first, or leave `parent` out for the root")]
    Parent {
        /// Child.
        name: String,
        /// Parent asked for.
        parent: String,
    },
    /// More cgroups than page frames can name.
    #[error("{0} cgroups: at most 4096 are supported")]
    TooMany(usize),
}

impl Kernel {
    /// Creates the cgroups of `specs` (parents before children) under the
    /// root, with a lruvec per node each.
    pub fn mem_cgroup_create(&mut self, specs: &[MemcgSpec]) -> Result<(), MemcgError> {
        if specs.len() >= 4096 {
            return Err(MemcgError::TooMany(specs.len()));
        }
        for s in specs {
            if s.name.is_empty() || self.memcg_by_name(&s.name).is_some() {
                return Err(MemcgError::Duplicate(s.name.clone()));
            }
            let parent = match &s.parent {
                None => ROOT_MEM_CGROUP,
                Some(p) => self.memcg_by_name(p).ok_or_else(|| MemcgError::Parent {
                    name: s.name.clone(),
                    parent: p.clone(),
                })?,
            };
            let id = self.memcgs.len() as u16;
            let mut m = MemCgroup::new(&s.name, Some(parent));
            m.max = s.max;
            m.high = s.high;
            m.low = s.low;
            m.min = s.min;
            self.memcgs.push(m);
            for node in &mut self.nodes {
                node.lruvecs.push(Default::default());
            }
            // Pre-order subtrees: a new (last-defined) child goes at the end
            // of each ancestor's list, after its earlier siblings' subtrees.
            let mut a = Some(id);
            while let Some(x) = a {
                self.memcgs[x as usize].subtree.push(id);
                a = self.memcgs[x as usize].parent;
            }
        }
        Ok(())
    }

    /// The memcg called `name`.
    pub fn memcg_by_name(&self, name: &str) -> Option<u16> {
        self.memcgs
            .iter()
            .position(|m| m.name == name)
            .map(|i| i as u16)
    }

    /// `mem_cgroup_is_root`
    #[inline]
    pub fn mem_cgroup_is_root(memcg: u16) -> bool {
        memcg == ROOT_MEM_CGROUP
    }

    /// Is `memcg` `ancestor` or below it (`mem_cgroup_is_descendant`)?
    pub fn mem_cgroup_is_descendant(&self, mut memcg: u16, ancestor: u16) -> bool {
        loop {
            if memcg == ancestor {
                return true;
            }
            match self.memcgs[memcg as usize].parent {
                Some(p) => memcg = p,
                None => return false,
            }
        }
    }

    /// `page_counter_try_charge` of one page from `memcg` up to (not
    /// including) the root: `Err(memcg over its limit)` at the first level
    /// that would exceed `max`, charging nothing.
    fn page_counter_try_charge(&mut self, memcg: u16) -> Result<(), u16> {
        let mut c = Some(memcg);
        while let Some(m) = c.filter(|&m| !Self::mem_cgroup_is_root(m)) {
            let mc = &self.memcgs[m as usize];
            if mc.usage + 1 > mc.max {
                return Err(m);
            }
            c = mc.parent;
        }
        self.page_counter_charge(memcg);
        Ok(())
    }

    /// `page_counter_charge`: one page, unconditionally (the `force:` path).
    fn page_counter_charge(&mut self, memcg: u16) {
        let mut c = Some(memcg);
        while let Some(m) = c.filter(|&m| !Self::mem_cgroup_is_root(m)) {
            let mc = &mut self.memcgs[m as usize];
            mc.usage += 1;
            mc.peak = mc.peak.max(mc.usage);
            c = mc.parent;
        }
    }

    /// `page_counter_uncharge` of one page.
    fn page_counter_uncharge(&mut self, memcg: u16) {
        let mut c = Some(memcg);
        while let Some(m) = c.filter(|&m| !Self::mem_cgroup_is_root(m)) {
            let mc = &mut self.memcgs[m as usize];
            debug_assert!(mc.usage > 0, "uncharging memcg {m} below zero");
            mc.usage = mc.usage.saturating_sub(1);
            c = mc.parent;
        }
    }

    /// `mem_cgroup_margin`: pages that can still be charged to `memcg`
    /// (only its own counter, as the kernel's).
    pub fn mem_cgroup_margin(&self, memcg: u16) -> u64 {
        let m = &self.memcgs[memcg as usize];
        m.max.saturating_sub(m.usage)
    }

    /// `mem_cgroup_wb_domain` (5.15 mm/memcontrol.c; the same in 4.16 and
    /// 6.1): the dirty domain of a wb whose memcg is `memcg`, if it has
    /// one: only with cgroup writeback, which needs cgroup v2
    /// (`cgroup_subsys_on_dfl`: on v1 every wb is the root's) and
    /// `memcg.cgroup_writeback`, and never for the root.
    pub fn mem_cgroup_has_wb_domain(&self, memcg: u16) -> bool {
        self.cgroup_writeback() && !Self::mem_cgroup_is_root(memcg)
    }

    /// `inode_cgwb_enabled`: cgroup writeback is on (cgroup v2 and
    /// `memcg.cgroup_writeback`).
    pub fn cgroup_writeback(&self) -> bool {
        self.params.memcg_version == 2 && self.params.memcg_cgroup_writeback != 0
    }

    /// `mem_cgroup_wb_stats` (5.15 = 6.1 mm/memcontrol.c): `memcg`'s file
    /// LRU pages, its headroom (the least of `min(max, high) - usage` over
    /// it and its ancestors below the root), dirty and writeback pages,
    /// as `(filepages, headroom, dirty, writeback)`. The page counts are
    /// hierarchical, as 5.15's rstat `memcg_page_state` is (4.16's counted
    /// the memcg's own pages only: the same without nested cgroups).
    pub fn mem_cgroup_wb_stats(&self, memcg: u16) -> (u64, u64, u64, u64) {
        let (mut filepages, mut dirty, mut writeback) = (0, 0, 0);
        for &m in &self.memcgs[memcg as usize].subtree {
            let c = &self.memcgs[m as usize];
            dirty += c.nr_file_dirty;
            writeback += c.nr_writeback;
            for n in &self.nodes {
                let lv = &n.lruvecs[m as usize];
                filepages += lv.size(Lru::InactiveFile) + lv.size(Lru::ActiveFile);
            }
        }
        let mut headroom = PAGE_COUNTER_MAX;
        let mut c = memcg;
        while let Some(parent) = self.memcgs[c as usize].parent {
            let m = &self.memcgs[c as usize];
            let ceiling = m.max.min(m.high);
            headroom = headroom.min(ceiling.saturating_sub(m.usage));
            c = parent;
        }
        (filepages, headroom, dirty, writeback)
    }

    /// `memcg_memory_event`: counts `ev` on `memcg` and its ancestors (v2
    /// `memory.events` are hierarchical without `memory_localevents`).
    pub fn memcg_memory_event(&mut self, memcg: u16, ev: MemcgEvent) {
        let mut c = Some(memcg);
        while let Some(m) = c {
            self.memcgs[m as usize].events[ev as usize] += 1;
            c = self.memcgs[m as usize].parent;
        }
    }

    /// `count_memcg_events`: a VM event of the pages of `memcg`, counted
    /// there and up (the hierarchical `memory.stat`).
    #[inline]
    pub fn count_memcg_events(&mut self, memcg: u16, ev: MemcgVm, n: u64) {
        if self.memcgs.len() == 1 {
            return;
        }
        let mut c = Some(memcg);
        while let Some(m) = c {
            self.memcgs[m as usize].vm[ev as usize] += n;
            c = self.memcgs[m as usize].parent;
        }
    }

    /// Counts a `pgfault` or `pgmajfault` (`count_vm_event` and
    /// `count_memcg_event_mm`) of the current task.
    #[inline]
    pub fn count_fault(&mut self, e: crate::vmstat::Ev) {
        self.count(e, 1);
        let memcg = self.current().memcg;
        if !Self::mem_cgroup_is_root(memcg) {
            let m = if e == crate::vmstat::Ev::Pgmajfault {
                MemcgVm::Pgmajfault
            } else {
                MemcgVm::Pgfault
            };
            self.count_memcg_events(memcg, m, 1);
        }
    }

    /// For the allocation fast paths that take pages inside one borrow of
    /// the kernel (fault and write runs): charges one page to the current
    /// task's memcg if it fits under every limit with no level over
    /// `memory.high`. `false` sends the caller to the slow path
    /// ([`crate::mm::alloc::alloc_page`]), which charges with reclaim.
    #[inline]
    pub fn memcg_try_charge_fast(&mut self) -> bool {
        let memcg = self.current().memcg;
        if Self::mem_cgroup_is_root(memcg) {
            return true;
        }
        let mut c = Some(memcg);
        while let Some(m) = c.filter(|&m| !Self::mem_cgroup_is_root(m)) {
            let mc = &self.memcgs[m as usize];
            if mc.usage + 1 > mc.max || mc.usage + 1 > mc.high {
                return false;
            }
            c = mc.parent;
        }
        self.page_counter_charge(memcg);
        true
    }

    /// `get_page_from_freelist` at the low watermark and the charge, for
    /// the fast runs: `None` if either needs the slow path.
    #[inline]
    pub fn get_page_charged_fast(&mut self) -> Option<Pfn> {
        if !self.memcg_try_charge_fast() {
            return None;
        }
        match self.get_page_from_freelist(Some(crate::mm::WMARK_LOW)) {
            Some(p) => {
                self.memcg_commit(p);
                Some(p)
            }
            None => {
                self.memcg_cancel_charge();
                None
            }
        }
    }

    /// Undoes [`Kernel::memcg_try_charge_fast`] when no page was found.
    #[inline]
    pub fn memcg_cancel_charge(&mut self) {
        let memcg = self.current().memcg;
        if !Self::mem_cgroup_is_root(memcg) {
            self.page_counter_uncharge(memcg);
        }
    }

    /// `commit_charge`: the page now belongs to the current task's memcg.
    #[inline]
    pub fn memcg_commit(&mut self, pfn: Pfn) {
        let memcg = self.current().memcg;
        self.frames.get_mut(pfn).memcg = memcg;
    }

    /// `commit_charge` of a page `mem_cgroup_try_charge` paid for, with the
    /// `memory.high` bookkeeping of the charge (`done_restock`): a page
    /// charged while the cgroup or an ancestor is over `memory.high` adds
    /// to `current->memcg_nr_pages_over_high`, paid for on the way back to
    /// user space, which here is the task's next allocation
    /// ([`crate::mm::alloc::alloc_page`]).
    pub fn memcg_commit_charged(&mut self, pfn: Pfn) {
        let memcg = self.current().memcg;
        if Self::mem_cgroup_is_root(memcg) {
            return;
        }
        self.memcg_commit(pfn);
        if self.memcg_over_high(memcg) {
            self.current_mut().memcg_nr_pages_over_high += 1;
        }
    }

    /// `mem_cgroup_uncharge` of a page being freed.
    #[inline]
    pub fn memcg_uncharge_page(&mut self, pfn: Pfn) {
        let p = self.frames.get_mut(pfn);
        let memcg = p.memcg;
        if !Self::mem_cgroup_is_root(memcg) {
            p.memcg = ROOT_MEM_CGROUP;
            self.page_counter_uncharge(memcg);
        }
    }

    /// Effective `memory.min` and `memory.low` of `memcg` in reclaim
    /// under `root` (`mem_cgroup_calculate_protection`, simplified: see the
    /// module comment). The reclaim root itself and the root memcg are
    /// never protected.
    pub fn mem_cgroup_protection(&self, root: u16, memcg: u16) -> (u64, u64) {
        if memcg == root || Self::mem_cgroup_is_root(memcg) {
            return (0, 0);
        }
        let m = &self.memcgs[memcg as usize];
        let (mut emin, mut elow) = (m.min.min(m.usage), m.low.min(m.usage));
        if let Some(p) = m.parent.filter(|&p| p != root) {
            let (pmin, plow) = self.mem_cgroup_protection(root, p);
            emin = emin.min(pmin);
            elow = elow.min(plow);
        }
        (emin, elow)
    }

    /// `mem_find_max_overage`: the largest `calculate_overage` of `memcg`
    /// and its ancestors.
    fn mem_find_max_overage(&self, memcg: u16) -> u64 {
        let mut max = 0;
        let mut c = Some(memcg);
        while let Some(m) = c.filter(|&m| !Self::mem_cgroup_is_root(m)) {
            let mc = &self.memcgs[m as usize];
            max = max.max(calculate_overage(mc.usage, mc.high));
            c = mc.parent;
        }
        max
    }

    /// `calculate_high_delay` (5.15.0 = 6.1.0), in jiffies.
    fn calculate_high_delay(&self, nr_pages: u64, max_overage: u64) -> u64 {
        if max_overage == 0 {
            return 0;
        }
        let mut penalty =
            u128::from(max_overage) * u128::from(max_overage) * u128::from(self.params.hz);
        penalty >>= MEMCG_DELAY_PRECISION_SHIFT;
        penalty >>= MEMCG_DELAY_SCALING_SHIFT;
        (penalty * u128::from(nr_pages) / u128::from(MEMCG_CHARGE_BATCH)) as u64
    }

    /// Does `memcg` or an ancestor have usage over `memory.high`?
    fn memcg_over_high(&self, memcg: u16) -> bool {
        let mut c = Some(memcg);
        while let Some(m) = c.filter(|&m| !Self::mem_cgroup_is_root(m)) {
            let mc = &self.memcgs[m as usize];
            if mc.usage > mc.high {
                return true;
            }
            c = mc.parent;
        }
        false
    }

    /// `oom_badness` of a user task's memory.
    pub(crate) fn task_badness(&self, t: usize) -> u64 {
        let task = &self.tasks[t];
        task.mappings
            .iter()
            .map(|&m| self.anon[m as usize].resident + self.anon[m as usize].swapents)
            .sum::<u64>()
            + 1
    }
}

/// `calculate_overage`: how far `usage` is over `high`, as a fraction in
/// 20-bit fixed point.
pub fn calculate_overage(usage: u64, high: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    // Prevent division by 0 in overage calculation.
    let high = high.max(1);
    let overage = u128::from(usage - high) << MEMCG_DELAY_PRECISION_SHIFT;
    (overage / u128::from(high)).min(u128::from(u64::MAX)) as u64
}

/// `try_charge_memcg` (5.15.0; `nr_retries` is the profile's: 5 up to 5.8,
/// `MAX_RECLAIM_RETRIES` = 16 from 5.9) for one page of the current task.
///
/// The kernel allocates the page first and charges it after; here the
/// charge comes first, so that no frame is held outside every list while
/// limit reclaim runs (which the invariant checks would flag); the
/// difference is one page of the node's memory for the duration. The
/// charge always succeeds in the end: reclaim, an OOM kill, or forcing
/// it over the limit (an OOM victim, a killed task, nothing to kill).
pub async fn mem_cgroup_try_charge(w: &World, gfp: Gfp) {
    let memcg = w.k().current().memcg;
    if Kernel::mem_cgroup_is_root(memcg) {
        return;
    }
    let mut nr_retries = w.k().params.memcg_charge_retries;
    loop {
        let Err(over) = w.k().page_counter_try_charge(memcg) else {
            return;
        };
        {
            let mut k = w.k();
            // should_force_charge(): an OOM victim or a task with a fatal
            // signal may go over the limit to exit.
            let t = k.current();
            if t.oom_victim || t.killed || t.is_kswapd() {
                k.page_counter_charge(memcg);
                return;
            }
            k.memcg_memory_event(over, MemcgEvent::Max);
        }
        let nr_reclaimed = crate::vmscan::try_to_free_mem_cgroup_pages(w, over, 1, gfp).await;
        if w.k().mem_cgroup_margin(over) >= 1 {
            continue;
        }
        // (drain_all_stock: there is no per-CPU stock.)
        // nr_reclaimed && nr_pages <= (1 << PAGE_ALLOC_COSTLY_ORDER): retry.
        if nr_reclaimed > 0 {
            continue;
        }
        if nr_retries > 0 {
            nr_retries -= 1;
            continue;
        }
        if w.k().current().killed {
            w.k().page_counter_charge(memcg);
            return;
        }
        match mem_cgroup_oom(w, over, gfp).await {
            OomStatus::Success => nr_retries = w.k().params.memcg_charge_retries,
            OomStatus::Failed => {
                // force: charge over the limit anyway.
                w.k().page_counter_charge(memcg);
                return;
            }
        }
    }
}

/// Result of [`mem_cgroup_oom`].
enum OomStatus {
    /// A victim was killed or is exiting, or the margin fits now: retry.
    Success,
    /// Nothing to kill: force the charge.
    Failed,
}

/// `mem_cgroup_oom` → `mem_cgroup_out_of_memory` → `out_of_memory` with
/// `oc->memcg` (5.15.0): a victim among the tasks of `memcg`'s subtree.
async fn mem_cgroup_oom(w: &World, memcg: u16, gfp: Gfp) -> OomStatus {
    let locked = {
        let mut k = w.k();
        k.memcg_memory_event(memcg, MemcgEvent::Oom);
        k.oom_lock
    };
    if locked {
        // mutex_lock_killable(&oom_lock): another OOM kill is under way;
        // wait a jiffy and let the caller retry.
        let t = {
            let k = w.k();
            k.exec.now() + k.params.tick_ns()
        };
        w.sleep_until(t).await;
        return OomStatus::Success;
    }
    let mut k = w.k();
    if k.mem_cgroup_margin(memcg) >= 1 {
        return OomStatus::Success;
    }
    k.oom_lock = true;
    let reason = format!(
        "memcg charge: limit reclaim of cgroup `{}` made no progress in {} retries (usage {} >= max {} pages)",
        k.memcgs[memcg as usize].name,
        k.params.memcg_charge_retries,
        k.memcgs[memcg as usize].usage,
        k.memcgs[memcg as usize].max
    );
    let progress = k.out_of_memory(Some(memcg), gfp, &reason);
    k.oom_lock = false;
    if progress {
        OomStatus::Success
    } else {
        OomStatus::Failed
    }
}

/// `mem_cgroup_handle_over_high` (5.15.0 = 6.1.0): reclaim the cgroups over
/// `memory.high` while that helps, then sleep a penalty that grows with the
/// square of the overage (`schedule_timeout_killable`, at most 2 s).
///
/// Runs once a batch (`MEMCG_CHARGE_BATCH`) of pages has been charged over
/// `memory.high`, as the kernel's per-batch charge adds a batch at a time.
pub async fn mem_cgroup_handle_over_high(w: &World) {
    let (memcg, nr_pages) = {
        let mut k = w.k();
        let t = k.current_mut();
        if t.memcg_nr_pages_over_high < MEMCG_CHARGE_BATCH {
            return;
        }
        let n = std::mem::take(&mut t.memcg_nr_pages_over_high);
        (t.memcg, n)
    };
    let mut nr_retries = w.k().params.max_reclaim_retries;
    let mut in_retry = false;
    loop {
        let n = if in_retry {
            crate::vmscan::SWAP_CLUSTER_MAX
        } else {
            nr_pages
        };
        let nr_reclaimed = reclaim_high(w, memcg, n).await;
        let penalty = {
            let k = w.k();
            let over = k.mem_find_max_overage(memcg);
            k.calculate_high_delay(nr_pages, over).min(2 * k.params.hz) // MEMCG_MAX_HIGH_DELAY_JIFFIES
        };
        let hz = w.k().params.hz;
        // Don't bother sleeping for tiny penalties (HZ/100).
        if penalty <= hz / 100 {
            return;
        }
        if nr_reclaimed > 0 || nr_retries > 0 {
            if nr_reclaimed == 0 {
                nr_retries -= 1;
            }
            in_retry = true;
            continue;
        }
        if w.k().current().killed {
            return;
        }
        let (start, end) = {
            let k = w.k();
            let now = k.exec.now();
            (now, now + penalty * k.params.tick_ns())
        };
        w.sleep_until(end).await;
        let mut k = w.k();
        let slept = k.exec.now() - start;
        k.memcgs[memcg as usize].high_delay_ns += slept;
        return;
    }
}

/// `reclaim_high`: for `memcg` and each ancestor over `memory.high`, a
/// `MEMCG_HIGH` event and limit reclaim of `nr_pages`.
async fn reclaim_high(w: &World, memcg: u16, nr_pages: u64) -> u64 {
    let mut nr_reclaimed = 0;
    let mut c = Some(memcg);
    while let Some(m) = c.filter(|&m| !Kernel::mem_cgroup_is_root(m)) {
        let over = {
            let k = w.k();
            let mc = &k.memcgs[m as usize];
            mc.usage > mc.high
        };
        if over {
            w.k().memcg_memory_event(m, MemcgEvent::High);
            nr_reclaimed +=
                crate::vmscan::try_to_free_mem_cgroup_pages(w, m, nr_pages, Gfp::HIGHUSER_MOVABLE)
                    .await;
        }
        c = w.k().memcgs[m as usize].parent;
    }
    nr_reclaimed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overage_is_a_20_bit_fraction() {
        assert_eq!(calculate_overage(100, 100), 0);
        assert_eq!(calculate_overage(99, 100), 0);
        // 10 % over: 0.1 * 2^20.
        assert_eq!(calculate_overage(110, 100), (10 << 20) / 100);
        // high 0 acts as a threshold of 1 page: (5 - 1) / 1.
        assert_eq!(calculate_overage(5, 0), 4 << 20);
    }
}
