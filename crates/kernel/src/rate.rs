//! `policy.rate_priority`: throttle the tasks that outrun reclaim, let the
//! others through. No kernel has it.
//!
//! Mel Gorman closed the 2021 series with an open question: timeouts alone
//! cannot be tuned for every machine, and a better step would be to
//! prioritise tasks by their rate of allocation versus reclaim progress
//! (`seed-phenomena.md` §1). This is one answer, kept small enough to
//! question:
//!
//! - every task counts the pages it allocates (`rmqueue` while it runs) and
//!   the pages it frees (its `munmap`, and the pages its own direct reclaim
//!   frees);
//! - the machine's reclaim rate is `pgsteal_kswapd + pgsteal_direct` per
//!   second;
//! - both rates are measured over windows of `throttle.rate.window_ms`,
//!   rolled when a task reaches a throttling site (a task that reaches one
//!   rarely is judged on its average since the last time);
//! - a user task about to sleep in `reclaim_throttle` for any reason but
//!   ISOLATED (which guards the LRU lock, not memory) goes on without
//!   sleeping if its rate is at most its fair share: the reclaim rate
//!   divided among the live user tasks. `gross` judges the pages it
//!   allocated; `net` those less the pages it gave back, so a task that
//!   maps and unmaps (the stutterp latency worker) or pays for its
//!   allocations by reclaiming is let through, and one that keeps what it
//!   takes (a writer filling the page cache) sleeps.
//!
//! Until a task and the machine have each finished one window, the task
//! sleeps as the profile says. kswapd is never let through (it is not an
//! allocator).

use crate::kernel::TaskKind;
use crate::profile::RatePriority;
use crate::vmstat::Ev;
use crate::Kernel;

/// A task's page counts and its last window's rates.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskRate {
    /// Pages allocated while the task ran.
    pub alloc: u64,
    /// Pages freed while the task ran.
    pub freed: u64,
    window_start: u64,
    window_alloc: u64,
    window_freed: u64,
    /// Pages per second over the last finished window: allocated, and
    /// allocated less freed.
    last: Option<(u64, i64)>,
}

impl TaskRate {
    /// A task's counts, its first window starting at `now` (its creation).
    pub fn starting(now: u64) -> TaskRate {
        TaskRate {
            window_start: now,
            ..TaskRate::default()
        }
    }

    /// Ends the window if it has lasted `window` ns by `now`.
    fn roll(&mut self, now: u64, window: u64) {
        let dt = now - self.window_start;
        if dt < window {
            return;
        }
        let alloc = self.alloc - self.window_alloc;
        let freed = self.freed - self.window_freed;
        let gross = per_second(i128::from(alloc), dt);
        let net = per_second(i128::from(alloc) - i128::from(freed), dt);
        self.last = Some((gross as u64, net));
        self.window_start = now;
        self.window_alloc = self.alloc;
        self.window_freed = self.freed;
    }
}

/// The machine's reclaim rate over its last window.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReclaimRate {
    /// Start and `pgsteal` at the start of the window under way (none
    /// before the first task asks).
    window: Option<(u64, u64)>,
    /// Pages reclaimed per second over the last finished window.
    last: Option<u64>,
}

impl ReclaimRate {
    fn roll(&mut self, now: u64, window: u64, steal: u64) {
        match self.window {
            Some((start, at)) if now - start >= window => {
                self.last = Some(per_second(i128::from(steal - at), now - start) as u64);
                self.window = Some((now, steal));
            }
            Some(_) => {}
            None => self.window = Some((now, steal)),
        }
    }
}

/// `n` events in `dt` ns, per second (integer, so that runs are
/// reproducible bit for bit).
fn per_second(n: i128, dt: u64) -> i64 {
    (n * 1_000_000_000 / i128::from(dt.max(1))) as i64
}

impl Kernel {
    /// Counts a page allocated by the running task.
    #[inline]
    pub(crate) fn rate_count_alloc(&mut self) {
        let t = self.exec.current() as usize;
        if let Some(t) = self.tasks.get_mut(t) {
            t.rate.alloc += 1;
        }
    }

    /// Counts a page freed by the running task.
    #[inline]
    pub(crate) fn rate_count_free(&mut self) {
        let t = self.exec.current() as usize;
        if let Some(t) = self.tasks.get_mut(t) {
            t.rate.freed += 1;
        }
    }

    /// `policy.rate_priority`: may the running task skip this
    /// `reclaim_throttle` sleep? (See the module comment.)
    pub fn rate_lets_through(&mut self) -> bool {
        let policy = self.profile.rate_priority;
        if policy == RatePriority::Off || self.current().kind != TaskKind::User {
            return false;
        }
        let now = self.exec.now();
        let window = self.params.rate_window_ms * 1_000_000;
        let steal = self.event(Ev::PgstealKswapd) + self.event(Ev::PgstealDirect);
        self.reclaim_rate.roll(now, window, steal);
        let users = self
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::User && !t.exited)
            .count() as u64;
        let reclaim = self.reclaim_rate.last;
        let t = self.current_mut();
        t.rate.roll(now, window);
        lets_through(policy, t.rate.last, reclaim, users)
    }
}

/// The rule: a task whose rate over its last window (`(gross, net)` pages
/// per second) is at most its fair share of the machine's reclaim rate
/// (`reclaim` pages per second among `users` tasks) goes on. Without a
/// finished window on either side it sleeps.
fn lets_through(
    policy: RatePriority,
    task: Option<(u64, i64)>,
    reclaim: Option<u64>,
    users: u64,
) -> bool {
    let (Some((gross, net)), Some(reclaim)) = (task, reclaim) else {
        return false;
    };
    let rate = match policy {
        RatePriority::Off => return false,
        RatePriority::Gross => gross as i64,
        RatePriority::Net => net,
    };
    rate <= (reclaim / users.max(1)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_task_window_ends_after_its_length_and_measures_pages_per_second() {
        let mut r = TaskRate::starting(500 * MS);
        r.alloc = 3000;
        r.freed = 1000;
        r.roll(1400 * MS, 1000 * MS);
        assert_eq!(r.last, None, "900 ms is not a whole window");
        r.roll(2500 * MS, 1000 * MS);
        assert_eq!(
            r.last,
            Some((1500, 1000)),
            "2 s: 3000 taken, 1000 given back"
        );
        r.freed = 5000;
        r.roll(3500 * MS, 1000 * MS);
        assert_eq!(r.last, Some((0, -4000)), "a window that gave back more");
    }

    #[test]
    fn the_reclaim_window_starts_when_first_asked() {
        let mut m = ReclaimRate::default();
        m.roll(10_000 * MS, 1000 * MS, 777);
        assert_eq!(m.last, None);
        m.roll(10_500 * MS, 1000 * MS, 800);
        assert_eq!(m.last, None);
        m.roll(12_000 * MS, 1000 * MS, 777 + 4000);
        assert_eq!(m.last, Some(2000));
    }

    #[test]
    fn only_a_task_over_its_fair_share_sleeps() {
        let (g, n) = (RatePriority::Gross, RatePriority::Net);
        // 8000 pages/s reclaimed among 4 tasks: a fair share of 2000.
        let task = Some((50_000, 100));
        assert!(!lets_through(g, task, Some(8000), 4), "heavy allocator");
        assert!(lets_through(n, task, Some(8000), 4), "but gives it back");
        assert!(lets_through(g, Some((2000, 2000)), Some(8000), 4));
        assert!(!lets_through(g, Some((2001, 2001)), Some(8000), 4));
        assert!(!lets_through(n, None, Some(8000), 4), "no window yet");
        assert!(!lets_through(n, task, None, 4), "no machine window yet");
        assert!(!lets_through(RatePriority::Off, task, Some(8000), 4));
    }
}
