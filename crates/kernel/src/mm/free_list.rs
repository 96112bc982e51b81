//! A node's free pages: the order-0 buddy free list (`zone->free_area[0]`).

use super::page::Pfn;

/// The free pages of one node, in the order `rmqueue` hands them out.
///
/// At boot every page of the node is free, lowest pfn first; a freed page
/// goes on top and is the next one taken (`free_one_page` adds to the head
/// of the list, `__rmqueue_smallest` takes from the head; order 0 only, so
/// no buddy merging or splitting changes the order). Holding the boot pages
/// as a range rather than one entry each means a 64 GiB machine's list
/// costs host memory only for the pages freed since, instead of 64 MiB of
/// pfns written at boot and read back once. The per-CPU lists
/// (`pcp->lists`) are counted apart (mm/pcp.rs): their pages stay here, in
/// this order, and only leave `NR_FREE_PAGES`.
#[derive(Clone, Debug, Default)]
pub struct FreeList {
    /// Pages freed since boot and not yet taken again, newest last.
    freed: Vec<Pfn>,
    /// Pages free since boot, never allocated: `next..end`, taken in order.
    next: Pfn,
    end: Pfn,
}

impl FreeList {
    /// All pages of `start..end` free, the lowest to be taken first.
    pub fn new(start: Pfn, end: Pfn) -> FreeList {
        FreeList {
            freed: Vec::new(),
            next: start,
            end,
        }
    }
    /// Number of free pages.
    #[inline]
    pub fn len(&self) -> usize {
        self.freed.len() + (self.end - self.next) as usize
    }
    /// Whether no page is free.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Puts `pfn` on top.
    #[inline]
    pub fn push(&mut self, pfn: Pfn) {
        self.freed.push(pfn);
    }
    /// Takes the top page.
    #[inline]
    pub fn pop(&mut self) -> Option<Pfn> {
        self.freed.pop().or_else(|| {
            (self.next < self.end).then(|| {
                self.next += 1;
                self.next - 1
            })
        })
    }
    /// The page `n` places below the top (0 is the top), if any: what the
    /// `n + 1`-th next `pop` returns unless pages are freed meanwhile.
    #[inline]
    pub fn peek(&self, n: usize) -> Option<Pfn> {
        match self.freed.len().checked_sub(n + 1) {
            Some(i) => Some(self.freed[i]),
            None => {
                let k = (n - self.freed.len()) as Pfn;
                (k < self.end - self.next).then(|| self.next + k)
            }
        }
    }
    /// Every free page, top first.
    pub fn iter(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.freed.iter().rev().copied().chain(self.next..self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_pages_go_lowest_first_and_freed_pages_on_top() {
        let mut f = FreeList::new(10, 14);
        assert_eq!(
            (f.len(), f.peek(0), f.peek(3), f.peek(4)),
            (4, Some(10), Some(13), None)
        );
        assert_eq!(f.pop(), Some(10));
        f.push(10);
        f.push(3);
        assert_eq!(f.iter().collect::<Vec<_>>(), vec![3, 10, 11, 12, 13]);
        assert_eq!(
            (f.peek(0), f.peek(1), f.peek(2)),
            (Some(3), Some(10), Some(11))
        );
        let taken: Vec<_> = std::iter::from_fn(|| f.pop()).collect();
        assert_eq!(taken, vec![3, 10, 11, 12, 13]);
        assert!(f.is_empty() && f.peek(0).is_none());
    }
}
