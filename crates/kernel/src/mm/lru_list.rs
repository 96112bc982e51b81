//! One LRU list (`lruvec->lists[lru]`), kept in the order the kernel's
//! `struct list_head` keeps it, but stored as a ring of frame numbers.
//!
//! The kernel links pages through `page->lru`; a simulator that does the
//! same walks a chain of dependent loads over a frame table of hundreds of
//! MiB whenever reclaim takes pages from the tail, one cache miss after the
//! other (200–340 ns a hop on the reference VM; docs/bench/sim-speed.md).
//! Here the list is a ring of pfns, oldest at `start`, newest at `end - 1`,
//! and each page remembers its position (`Page::lru_pos`). Taking from the
//! tail reads the ring in order, so the frames of a whole batch can be
//! fetched at once ([`LruList::take_tail`] + [`prefetch`]); adding at the
//! head touches only the new page. A page taken from the middle
//! (`list_del`) leaves a hole that the ends skip; when the holes exceed
//! half the pages they are squeezed out, and a full ring grows by half.
//!
//! The order of live pages is exactly that of `list_add` (head) and
//! `list_add_tail` (tail, `lru_move_tail`), so runs are byte-identical to
//! the linked list this replaced.

use super::page::{Frames, Pfn, NO_PFN};

/// Smallest ring allocated.
const MIN_CAP: u32 = 64;

/// One LRU list: a ring of pfns with holes.
#[derive(Clone, Debug, Default)]
pub struct LruList {
    /// Slots, holding each page as `!pfn`, so that a hole (`!NO_PFN`) is 0
    /// and a new ring is memory the allocator hands out zeroed.
    buf: Vec<Pfn>,
    /// The position `buf[0]` holds this time round the ring: `start - base`
    /// is in `[0, cap)`, so every live position is in `[base, base + 2 cap)`
    /// and its slot is `pos - base`, less `cap` past the end of `buf`.
    base: u32,
    /// Logical position of the oldest page (the tail). Positions wrap.
    start: u32,
    /// One past the logical position of the newest page (the head).
    end: u32,
    /// Number of pages on the list.
    pub len: u64,
}

impl LruList {
    /// Where position `pos` lives in `buf`.
    #[inline]
    fn index(&self, pos: u32) -> usize {
        let cap = self.buf.len() as u32;
        let d = pos.wrapping_sub(self.base);
        (if d >= cap { d - cap } else { d }) as usize
    }

    /// The page at logical position `pos`, `NO_PFN` for a hole.
    #[inline]
    fn slot(&self, pos: u32) -> Pfn {
        !self.buf[self.index(pos)]
    }

    #[inline]
    fn set_slot(&mut self, pos: u32, pfn: Pfn) {
        let i = self.index(pos);
        self.buf[i] = !pfn;
    }

    /// Moves the tail `n` positions towards the head (at most to the end
    /// of the ring's current turn).
    #[inline]
    fn advance_start_by(&mut self, n: u32) {
        self.start = self.start.wrapping_add(n);
        if self.start.wrapping_sub(self.base) >= self.buf.len() as u32 {
            self.base = self.base.wrapping_add(self.buf.len() as u32);
        }
    }

    /// Moves the tail one position towards the head.
    #[inline]
    fn advance_start(&mut self) {
        self.advance_start_by(1);
    }

    #[inline]
    fn span(&self) -> u32 {
        self.end.wrapping_sub(self.start)
    }

    /// The oldest page (`lru_to_folio(&lruvec->lists[lru])`), if any.
    #[inline]
    pub fn tail(&self) -> Option<Pfn> {
        (self.len > 0).then(|| self.slot(self.start))
    }

    /// The newest page, if any.
    pub fn head(&self) -> Option<Pfn> {
        (self.len > 0).then(|| self.slot(self.end.wrapping_sub(1)))
    }

    /// Takes up to `n` pages off the tail, oldest first, into `out`, without
    /// looking at their frames.
    pub fn take_tail(&mut self, f: &mut Frames, n: usize, out: &mut Vec<Pfn>) {
        let first = out.len();
        let cap = self.buf.len() as u32;
        let mut want = n;
        while want > 0 && self.start != self.end {
            // The slots from the tail to the end of the ring or of the list,
            // whichever comes first: no wrap to check slot by slot. (The
            // tail is within one turn of `base`, so its slot is `start - base`.)
            let i = self.start.wrapping_sub(self.base) as usize;
            let run = (cap as usize - i).min(self.span() as usize);
            let mut used = 0;
            for slot in &mut self.buf[i..i + run] {
                used += 1;
                // 0 is a hole (`!NO_PFN`).
                if *slot != 0 {
                    out.push(!*slot);
                    *slot = 0;
                    want -= 1;
                    if want == 0 {
                        break;
                    }
                }
            }
            self.advance_start_by(used);
        }
        let taken = (out.len() - first) as u64;
        if taken == 0 {
            return;
        }
        self.len -= taken;
        if self.len == 0 {
            self.clear();
            return;
        }
        while self.slot(self.start) == NO_PFN {
            self.advance_start();
        }
        self.maybe_compact(f);
    }

    /// Starts loading the frames of the next `n` pages at the tail (of the
    /// first `2n` slots, holes skipped), the batch the next `take_tail` will
    /// likely take: while the caller works on this batch, those misses are
    /// served, instead of all stalling the next isolation at once.
    pub fn prefetch_tail(&self, f: &Frames, n: usize) {
        // In at most two runs of slots (to the end of the ring, then from
        // its start), as `take_tail`: no wrap check per slot.
        let cap = self.buf.len();
        let mut slots = (self.span() as usize).min(2 * n);
        let mut left = n;
        let mut i = self.start.wrapping_sub(self.base) as usize;
        while slots > 0 && left > 0 {
            let run = (cap - i).min(slots);
            for &slot in &self.buf[i..i + run] {
                // 0 is a hole (`!NO_PFN`).
                if slot != 0 {
                    prefetch(f, !slot);
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
            }
            slots -= run;
            i = 0;
        }
    }

    /// The ring's own invariants (for the invariant checker): both ends on
    /// live pages, the tail within one turn of `base`, the span within the
    /// ring.
    pub fn check(&self) -> Result<(), String> {
        if self.len == 0 {
            return if self.start == self.end {
                Ok(())
            } else {
                Err(format!("empty list spans {}", self.span()))
            };
        }
        let cap = self.buf.len() as u32;
        if self.span() > cap || u64::from(self.span()) < self.len {
            return Err(format!(
                "span {} for {} pages in {cap} slots",
                self.span(),
                self.len
            ));
        }
        if self.start.wrapping_sub(self.base) >= cap {
            return Err(format!(
                "tail {} more than a turn past base {}",
                self.start, self.base
            ));
        }
        if self.slot(self.start) == NO_PFN || self.slot(self.end.wrapping_sub(1)) == NO_PFN {
            return Err("an end of the list is a hole".into());
        }
        Ok(())
    }

    /// Pages from the head to the tail (for the invariant checker).
    pub fn iter_from_head(&self) -> impl Iterator<Item = (u32, Pfn)> + '_ {
        let span = if self.buf.is_empty() { 0 } else { self.span() };
        (0..span)
            .map(move |i| {
                let pos = self.end.wrapping_sub(1).wrapping_sub(i);
                (pos, self.slot(pos))
            })
            .filter(|&(_, pfn)| pfn != NO_PFN)
    }

    /// Adds `pfn` at the head (`list_add`).
    pub fn push_head(&mut self, f: &mut Frames, pfn: Pfn) {
        self.push_head_many(f, std::slice::from_ref(&pfn));
    }

    /// Adds `pfns` at the head in order, the last one newest (`list_add` of
    /// each): one room check for the lot.
    pub fn push_head_many(&mut self, f: &mut Frames, pfns: &[Pfn]) {
        if pfns.is_empty() {
            return;
        }
        self.make_room(f, pfns.len());
        // The slots from the head to the end of the ring, then (if the
        // batch wraps) from the ring's start: no wrap check slot by slot.
        let i = self.index(self.end);
        let (here, wrapped) = pfns.split_at(pfns.len().min(self.buf.len() - i));
        let mut pos = self.end;
        for (slot, &pfn) in self.buf[i..i + here.len()].iter_mut().zip(here) {
            *slot = !pfn;
            f.get_mut(pfn).lru_pos = pos;
            pos = pos.wrapping_add(1);
        }
        for (slot, &pfn) in self.buf[..wrapped.len()].iter_mut().zip(wrapped) {
            *slot = !pfn;
            f.get_mut(pfn).lru_pos = pos;
            pos = pos.wrapping_add(1);
        }
        self.end = pos;
        self.len += pfns.len() as u64;
    }

    /// Adds `pfn` at the tail (`list_add_tail`, as `lru_move_tail`).
    pub fn push_tail(&mut self, f: &mut Frames, pfn: Pfn) {
        self.make_room(f, 1);
        let pos = self.start.wrapping_sub(1);
        if pos.wrapping_sub(self.base) >= self.buf.len() as u32 {
            self.base = self.base.wrapping_sub(self.buf.len() as u32);
        }
        self.start = pos;
        self.set_slot(pos, pfn);
        f.get_mut(pfn).lru_pos = pos;
        self.len += 1;
    }

    /// Takes `pfn` off the list (`list_del`).
    pub fn remove(&mut self, f: &mut Frames, pfn: Pfn) {
        self.remove_unsettled(f, pfn);
        self.settle(f);
    }

    /// Takes `pfn` off the list (`list_del`) but leaves the ends and the
    /// squeeze to [`LruList::settle`]: for a caller that takes many pages
    /// off in a row and reads no list meanwhile (`munmap`), so that a long
    /// run of holes is walked, and the ring squeezed, once.
    #[inline]
    pub fn remove_unsettled(&mut self, f: &Frames, pfn: Pfn) {
        let pos = f.get(pfn).lru_pos;
        debug_assert_eq!(self.slot(pos), pfn, "pfn {pfn} not at its position");
        self.set_slot(pos, NO_PFN);
        self.len -= 1;
    }

    /// Puts both ends back on live pages after [`LruList::remove_unsettled`]
    /// (so that `tail()` and `head()` are one load) and squeezes the ring
    /// if it has become mostly holes; nothing to do on a list that is
    /// settled.
    pub fn settle(&mut self, f: &mut Frames) {
        if self.len == 0 {
            self.clear();
            return;
        }
        while self.slot(self.start) == NO_PFN {
            self.advance_start();
        }
        while self.slot(self.end.wrapping_sub(1)) == NO_PFN {
            self.end = self.end.wrapping_sub(1);
        }
        self.maybe_compact(f);
    }

    /// The list became empty: every slot is a hole again; a large ring is
    /// given back.
    fn clear(&mut self) {
        if self.buf.len() > 4 * MIN_CAP as usize {
            self.buf = Vec::new();
        }
        self.base = 0;
        self.start = 0;
        self.end = 0;
    }

    /// Squeezes the holes out when they are more than half the pages (so
    /// that walking the tail crosses few holes; each hole is one removal,
    /// so the squeeze, span + live renumbered, is paid for),
    /// and gives memory back when a list that was large has shrunk to a
    /// quarter of its ring (its removals pay for that squeeze too; the
    /// squeezed ring is at most three times the pages, so it takes a
    /// quarter fewer pages to squeeze again).
    #[inline]
    fn maybe_compact(&mut self, f: &mut Frames) {
        let holes = u64::from(self.span()) - self.len;
        let slack = self.len.max(u64::from(MIN_CAP));
        if holes > slack / 2 + u64::from(MIN_CAP) || self.buf.len() as u64 > 4 * slack {
            self.compact(f);
        }
    }

    /// Makes room for `n` more pages at either end: while the ring is too
    /// full (at most a third of it holes, see `maybe_compact`) it grows by
    /// half, and the pages keep their positions, so no frame is touched.
    #[inline]
    fn make_room(&mut self, f: &mut Frames, n: usize) {
        while self.buf.is_empty() || self.span() as usize + n > self.buf.len() {
            self.grow(f);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, f: &mut Frames) {
        let old_cap = self.buf.len() as u32;
        if old_cap == 0 {
            self.compact(f);
            return;
        }
        // In place: rotate the tail to slot 0, then extend by exactly half
        // (`reserve_exact`: `resize` alone would double the allocation).
        let first = self.index(self.start);
        self.buf.rotate_left(first);
        self.buf.reserve_exact((old_cap / 2) as usize);
        self.buf.resize((old_cap + old_cap / 2) as usize, 0);
        self.base = self.start;
    }

    /// Rewrites the ring without holes, in a ring of one and a half times
    /// the pages (plus `MIN_CAP`), the pages placed a quarter in so that
    /// either end can grow; renumbers every page.
    #[cold]
    #[inline(never)]
    fn compact(&mut self, f: &mut Frames) {
        debug_assert!(self.len < 1 << 30, "positions need a ring under 2^31 slots");
        let cap = (self.len + self.len / 2) as u32 + MIN_CAP;
        let mut buf = vec![0; cap as usize];
        let first = cap / 4;
        let mut pos = first;
        if !self.buf.is_empty() {
            let mut p = self.start;
            while p != self.end {
                let pfn = self.slot(p);
                if pfn != NO_PFN {
                    buf[pos as usize] = !pfn;
                    f.get_mut(pfn).lru_pos = pos;
                    pos += 1;
                }
                p = p.wrapping_add(1);
            }
        }
        self.buf = buf;
        self.base = 0;
        self.start = first;
        self.end = pos;
    }
}

/// Asks the CPU to start loading `pfn`'s frame, so that the frames of a
/// batch taken from an LRU tail arrive together instead of one miss after
/// the other. A hint only: it changes no result.
#[inline]
pub fn prefetch(f: &Frames, pfn: Pfn) {
    #[cfg(target_arch = "x86_64")]
    {
        let p: *const super::page::Page = f.get(pfn);
        // SAFETY: `_mm_prefetch` never faults and reads nothing the
        // program sees; the pointer is to a live element of the table.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (f, pfn);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(l: &LruList) -> Vec<Pfn> {
        l.iter_from_head().map(|(_, p)| p).collect()
    }

    #[test]
    fn list_order_and_remove() {
        let mut f = Frames::new(4, 1);
        let mut l = LruList::default();
        l.push_head(&mut f, 0);
        l.push_head(&mut f, 1);
        l.push_tail(&mut f, 2);
        assert_eq!((l.head(), l.tail(), l.len), (Some(1), Some(2), 3));
        assert_eq!(order(&l), vec![1, 0, 2]);
        l.remove(&mut f, 0);
        assert_eq!(order(&l), vec![1, 2]);
        l.remove(&mut f, 2);
        assert_eq!((l.head(), l.tail()), (Some(1), Some(1)));
        l.remove(&mut f, 1);
        assert_eq!((l.head(), l.tail(), l.len), (None, None, 0));
    }

    /// Against a plain deque through growth, hole squeezing and wrap-around:
    /// the same pages in the same order after every operation.
    #[test]
    fn matches_a_deque_under_random_operations() {
        let n = 500u32;
        let mut f = Frames::new(n as usize, 1);
        let mut l = LruList::default();
        let mut model: std::collections::VecDeque<Pfn> = Default::default();
        let mut on = vec![false; n as usize];
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for step in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pfn = (x % u64::from(n)) as Pfn;
            match (x >> 32) % 8 {
                0 | 1 if !on[pfn as usize] => {
                    l.push_head(&mut f, pfn);
                    model.push_front(pfn);
                    on[pfn as usize] = true;
                }
                2 if !on[pfn as usize] => {
                    l.push_tail(&mut f, pfn);
                    model.push_back(pfn);
                    on[pfn as usize] = true;
                }
                3 if on[pfn as usize] => {
                    l.remove(&mut f, pfn);
                    model.retain(|&p| p != pfn);
                    on[pfn as usize] = false;
                }
                5 => {
                    let k = ((x >> 40) % 40) as usize;
                    let mut got = vec![9999];
                    l.take_tail(&mut f, k, &mut got);
                    assert_eq!(got[0], 9999, "take_tail appends");
                    let want: Vec<Pfn> = model.iter().rev().take(k).copied().collect();
                    assert_eq!(&got[1..], &want[..]);
                    for &p in &got[1..] {
                        assert_eq!(model.pop_back(), Some(p));
                        on[p as usize] = false;
                    }
                }
                6 => {
                    // A batch of pages not on the list, in order.
                    let mut batch: Vec<Pfn> = Vec::new();
                    for d in 0..((x >> 40) % 50) as u32 {
                        let p = (pfn + d * 7) % n;
                        if !on[p as usize] && !batch.contains(&p) {
                            batch.push(p);
                        }
                    }
                    l.push_head_many(&mut f, &batch);
                    for &p in &batch {
                        model.push_front(p);
                        on[p as usize] = true;
                    }
                }
                7 => {
                    // As munmap: several pages off, then one settle.
                    for d in 0..((x >> 40) % 60) as u32 {
                        let p = (pfn + d * 11) % n;
                        if on[p as usize] {
                            l.remove_unsettled(&f, p);
                            model.retain(|&q| q != p);
                            on[p as usize] = false;
                        }
                    }
                    l.settle(&mut f);
                }
                4 => {
                    if let Some(t) = l.tail() {
                        l.remove(&mut f, t);
                        assert_eq!(model.pop_back(), Some(t));
                        on[t as usize] = false;
                    }
                }
                _ => {}
            }
            assert_eq!(l.len, model.len() as u64);
            l.check().unwrap();
            // Memory and the holes a tail walk crosses stay bounded.
            assert!(l.buf.len() as u64 <= 4 * l.len.max(u64::from(MIN_CAP)) + u64::from(MIN_CAP));
            assert!(l.buf.capacity() <= 2 * l.buf.len().max(4 * MIN_CAP as usize));
            if l.len > 0 {
                // maybe_compact's rule (a list under MIN_CAP pages counts as MIN_CAP).
                let slack = l.len.max(u64::from(MIN_CAP));
                assert!(u64::from(l.span()) - l.len <= slack / 2 + u64::from(MIN_CAP) + 1);
            }
            assert_eq!(l.tail(), model.back().copied());
            assert_eq!(l.head(), model.front().copied());
            if step % 1000 == 0 {
                assert_eq!(order(&l), model.iter().copied().collect::<Vec<_>>());
                let mut batch = Vec::new();
                l.take_tail(&mut f, 7, &mut batch);
                let want: Vec<Pfn> = model.iter().rev().take(7).copied().collect();
                assert_eq!(batch, want);
                for &p in &batch {
                    assert_eq!(model.pop_back(), Some(p));
                    on[p as usize] = false;
                }
            }
        }
    }

    /// Fill, drain to a few pages (the ring is given back in part), take
    /// big batches, empty it, fill again: the order and the invariants hold
    /// throughout.
    #[test]
    fn fill_drain_and_refill() {
        let n = 5000u32;
        let mut f = Frames::new(n as usize, 1);
        let mut l = LruList::default();
        let mut model: std::collections::VecDeque<Pfn> = Default::default();
        for round in 0..3 {
            for p in 0..n {
                if (p + round) % 3 == 0 {
                    l.push_tail(&mut f, p);
                    model.push_back(p);
                } else {
                    l.push_head(&mut f, p);
                    model.push_front(p);
                }
            }
            l.check().unwrap();
            let full = l.buf.len();
            // Remove two of every three pages from the middle outwards.
            for p in (0..n).filter(|p| p % 3 != 0) {
                l.remove(&mut f, p);
                model.retain(|&q| q != p);
                l.check().unwrap();
            }
            assert!(
                l.buf.len() < full,
                "a ring that shrank to a third keeps {full} slots"
            );
            // Take the rest from the tail in batches of up to 500.
            while l.len > 0 {
                let mut batch = Vec::new();
                l.take_tail(&mut f, 500, &mut batch);
                for &p in &batch {
                    assert_eq!(model.pop_back(), Some(p));
                }
                l.check().unwrap();
                assert_eq!(
                    l.iter_from_head().map(|(_, p)| p).collect::<Vec<_>>(),
                    model.iter().copied().collect::<Vec<_>>()
                );
            }
            assert!(
                model.is_empty() && l.buf.is_empty(),
                "an emptied large ring is given back"
            );
        }
    }
}
