//! Conservation and flag invariants, checked by tests and on demand: every
//! frame is free, on exactly one LRU list, or isolated; gauges match the
//! frames; page tables, page cache and swap cache point at the right frames.

use crate::mm::anon::{ORPHAN, PTE_NONE, PTE_SWAP};
use crate::mm::page::{pg, Lru};
use crate::mm::swap::{SHADOW, SLOT_EMPTY};
use crate::mm::NodeStat;
use crate::Kernel;

impl Kernel {
    /// Checks every invariant; returns the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        let total = self.frames.pages.len();
        let mut seen = vec![0u8; total];
        let mut free = 0usize;
        for (nid, node) in self.nodes.iter().enumerate() {
            for pfn in node.free.iter() {
                let p = self.frames.get(pfn);
                if p.flags != pg::BUDDY {
                    return Err(format!("free pfn {pfn} has flags {:#x}", p.flags));
                }
                if self.frames.nid(pfn) != nid {
                    return Err(format!(
                        "free pfn {pfn} on node {nid}'s list belongs to node {}",
                        self.frames.nid(pfn)
                    ));
                }
                seen[pfn as usize] += 1;
                free += 1;
            }
            for (m, lv) in node.lruvecs.iter().enumerate() {
                for (li, list) in lv.lists.iter().enumerate() {
                    list.check()
                        .map_err(|e| format!("node {nid} memcg {m} list {li}: {e}"))?;
                    let mut n = 0u64;
                    for (pos, cur) in list.iter_from_head() {
                        let p = self.frames.get(cur);
                        if p.lru_pos != pos {
                            return Err(format!(
                                "pfn {cur}: position {} on the list but {pos} in the ring",
                                p.lru_pos
                            ));
                        }
                        if !p.test(pg::LRU) || p.test(pg::ISOLATED | pg::BUDDY) {
                            return Err(format!("pfn {cur} on list {li} has flags {:#x}", p.flags));
                        }
                        if Lru::of(p.flags) as usize != li
                            || p.memcg as usize != m
                            || self.frames.nid(cur) != nid
                        {
                            return Err(format!(
                                "pfn {cur} (flags {:#x}) on the wrong list {li}",
                                p.flags
                            ));
                        }
                        seen[cur as usize] += 1;
                        n += 1;
                    }
                    if list.len != n {
                        return Err(format!(
                            "node {nid} list {li}: len {} but {n} linked",
                            list.len
                        ));
                    }
                }
            }
        }
        // Every page is charged to the memcg it names and to that memcg's
        // ancestors (the page counters are hierarchical; the root is not
        // counted). Free pages name the root.
        if self.memcgs.len() > 1 {
            let mut charged = vec![0u64; self.memcgs.len()];
            for p in &self.frames.pages {
                let mut m = Some(p.memcg);
                while let Some(id) = m.filter(|&id| id != 0) {
                    charged[id as usize] += 1;
                    m = self.memcgs[id as usize].parent;
                }
            }
            for (id, mc) in self.memcgs.iter().enumerate().skip(1) {
                if mc.usage != charged[id] {
                    return Err(format!(
                        "memcg {} ({id}): usage {} but {} pages charged to it or below",
                        mc.name, mc.usage, charged[id]
                    ));
                }
            }
        }
        // Slab pages and XFS buffer pages are held by their caches; the
        // pages in use since boot by the kernel (each node's lowest).
        let mut kernel_page = vec![false; if self.supers.is_empty() { 0 } else { total }];
        let boot_used = self.nodes.iter().enumerate().flat_map(|(nid, n)| {
            let start = self.frames.node_range(nid).start;
            start..start + n.boot_used as u32
        });
        for pfn in self
            .slab_pfns()
            .into_iter()
            .chain(self.fs_pfns())
            .chain(boot_used)
        {
            let p = self.frames.get(pfn);
            if p.flags != 0 {
                return Err(format!(
                    "slab/buffer/boot-used pfn {pfn} has flags {:#x}",
                    p.flags
                ));
            }
            seen[pfn as usize] += 1;
            if let Some(k) = kernel_page.get_mut(pfn as usize) {
                *k = true;
            }
        }
        let (mut iso, mut wb, mut dirty, mut swc) = ([0i64; 2], 0i64, 0i64, 0i64);
        let mut file_wb = vec![0u64; self.bdis.len()];
        let mut per_file_wb = vec![0u64; self.files.len()];
        // Per memcg: (file pages dirty, pages under writeback).
        let mut per_memcg = vec![(0u64, 0u64); self.memcgs.len()];
        for (pfn, p) in self.frames.pages.iter().enumerate() {
            if p.test(pg::ISOLATED) {
                if p.test(pg::LRU | pg::BUDDY) {
                    return Err(format!("isolated pfn {pfn} has flags {:#x}", p.flags));
                }
                seen[pfn] += 1;
                iso[usize::from(p.test(pg::FILE))] += 1;
            }
            if seen[pfn] != 1 {
                return Err(format!(
                    "pfn {pfn} (flags {:#x}) is in {} places (free, LRU, isolated)",
                    p.flags, seen[pfn]
                ));
            }
            if p.test(pg::BUDDY) || kernel_page.get(pfn).copied().unwrap_or(false) {
                continue;
            }
            if p.test(pg::WRITEBACK) {
                wb += 1;
                per_memcg[p.memcg as usize].1 += 1;
            }
            if p.test(pg::FILE) && p.test(pg::DIRTY) {
                dirty += 1;
                per_memcg[p.memcg as usize].0 += 1;
            }
            if p.test(pg::FILE) && p.test(pg::SWAPBACKED) {
                return Err(format!("pfn {pfn} is both file and swap-backed"));
            }
            if p.test(pg::SWAPCACHE) {
                swc += 1;
                if self.swap.cache.get(p.swap as usize) != pfn as u32 {
                    return Err(format!(
                        "pfn {pfn} in swap cache slot {} which points elsewhere",
                        p.swap
                    ));
                }
            }
            if p.test(pg::FILE)
                && p.owner != ORPHAN
                && self.files[p.owner as usize].cache.get(p.index as usize) != pfn as u32
            {
                return Err(format!("file pfn {pfn} not in its page cache slot"));
            }
            if p.test(pg::FILE) && p.test(pg::WRITEBACK) {
                file_wb[self.files[p.owner as usize].dev] += 1;
                per_file_wb[p.owner as usize] += 1;
            }
            if !p.test(pg::FILE) && p.owner != ORPHAN && !p.test(pg::SWAPCACHE) {
                let m = &self.anon[p.owner as usize];
                if !m.alive || m.pte.get(p.index as usize) != pfn as u32 {
                    return Err(format!(
                        "anon pfn {pfn} not mapped by its owner and not in swap cache"
                    ));
                }
            }
        }
        for (f, file) in self.files.iter().enumerate() {
            if file.nr_writeback != per_file_wb[f] {
                return Err(format!(
                    "file {f}: {} pages counted under writeback, {} flagged",
                    file.nr_writeback, per_file_wb[f]
                ));
            }
        }
        for (m, c) in self.memcgs.iter().enumerate().skip(1) {
            if (c.nr_file_dirty, c.nr_writeback) != per_memcg[m] {
                return Err(format!(
                    "memcg {m}: counted {} dirty and {} under writeback, flagged {} and {}",
                    c.nr_file_dirty, c.nr_writeback, per_memcg[m].0, per_memcg[m].1
                ));
            }
        }
        for (d, b) in self.bdis.iter().enumerate() {
            if b.nr_writeback != file_wb[d] {
                return Err(format!(
                    "device {d}: {} file pages counted under writeback, {} flagged",
                    b.nr_writeback, file_wb[d]
                ));
            }
        }
        let sum = |s: NodeStat| self.nodes.iter().map(|n| n.state(s)).sum::<i64>();
        let checks = [
            ("nr_isolated_anon", sum(NodeStat::NrIsolatedAnon), iso[0]),
            ("nr_isolated_file", sum(NodeStat::NrIsolatedFile), iso[1]),
            ("nr_writeback", sum(NodeStat::NrWriteback), wb),
            ("nr_dirty", sum(NodeStat::NrFileDirty), dirty),
            ("nr_swapcache", sum(NodeStat::NrSwapcache), swc),
        ];
        for (name, gauge, counted) in checks {
            if gauge != counted {
                return Err(format!(
                    "{name} is {gauge} but {counted} pages have the flag"
                ));
            }
        }
        for (f, file) in self.files.iter().enumerate() {
            let tagged: u64 = file
                .dirty_tag
                .iter()
                .map(|w| u64::from(w.count_ones()))
                .sum();
            if tagged != file.nr_dirty {
                return Err(format!(
                    "file {f}: {tagged} pages tagged dirty but nr_dirty is {}",
                    file.nr_dirty
                ));
            }
            for i in set_bits(&file.dirty_tag) {
                let e = file.cache.get(i);
                if e == SLOT_EMPTY || e & SHADOW != 0 || !self.frames.get(e).test(pg::DIRTY) {
                    return Err(format!(
                        "file {f} page {i} is tagged dirty but is not a dirty cached page"
                    ));
                }
            }
            for i in set_bits(&file.mapped) {
                let e = file.cache.get(i);
                if e == SLOT_EMPTY || e & SHADOW != 0 {
                    return Err(format!(
                        "file {f} page {i} is mapped but not in the page cache"
                    ));
                }
            }
        }
        for (id, m) in self.anon.iter().enumerate() {
            if !m.alive {
                continue;
            }
            for (i, e) in m.pte.iter().enumerate() {
                if e == PTE_NONE {
                    continue;
                }
                if e & PTE_SWAP != 0 {
                    let slot = e & !PTE_SWAP;
                    let c = self.swap.cache.get(slot as usize);
                    if c != SLOT_EMPTY && c & SHADOW == 0 && self.frames.get(c).swap != slot {
                        return Err(format!("mapping {id} index {i}: swap slot {slot} caches a page of another slot"));
                    }
                } else {
                    let p = self.frames.get(e);
                    if p.owner != id as u32 || p.index as usize != i || p.test(pg::BUDDY) {
                        return Err(format!(
                            "mapping {id} index {i} maps pfn {e} owned by {} index {}",
                            p.owner, p.index
                        ));
                    }
                }
            }
        }
        let _ = free;
        Ok(())
    }
}

/// The indices of the set bits of a bitmap stored as 64-bit words.
fn set_bits(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(wi, &word)| {
        let mut bits = word;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let i = wi * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                i
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::set_bits;

    #[test]
    fn set_bits_lists_each_set_bit_in_order() {
        let v: Vec<usize> = set_bits(&[0b101, 0, 1 << 63]).collect();
        assert_eq!(v, vec![0, 2, 191]);
    }
}
