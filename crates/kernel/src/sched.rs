//! CPUs as a contended resource: N CPUs, a run queue each, time slices.
//!
//! A task pays for work with [`run_on_cpu`]: it takes a free CPU or queues for
//! one and keeps it, from one piece of work to the next, until it blocks
//! (the engine's block hands the CPU on) or has used one slice
//! (`sched.slice_us`) while another task waits on its CPU; then the queued
//! task with the smallest virtual runtime gets it. Reclaim scanning
//! therefore takes CPU time away from workers exactly when CPUs are scarce.
//! (Until 2026-11-27 a task gave its CPU up after every piece of work, so a
//! reclaimer working batch by batch queued behind every CPU-bound task's
//! whole slice.)
//!
//! The queue order follows CFS (kernel/sched/fair.c, 5.15): a task's
//! `vruntime` grows with the CPU time it uses, and a task that comes back
//! after sleeping is placed at no less than `min_vruntime` minus half the
//! scheduling latency (`place_entity` with `GENTLE_FAIR_SLEEPERS`;
//! `sysctl_sched_latency` 6 ms scaled by 1 + log2(CPUs), CPUs capped at 8),
//! and a new task one slice after `min_vruntime` (`START_DEBIT`). So
//! a kswapd or flusher that slept runs before the hogs that have been burning
//! CPU, as on a real machine. A waking task more than the wake-up granularity
//! (1 ms, scaled like the latency) of vruntime behind the task running on
//! its CPU preempts it (`check_preempt_wakeup`), at the end of the piece of
//! work that task is doing.
//!
//! Each CPU has its own queue, as CFS does (`struct rq`). A waking task goes
//! back to the CPU it last ran on if that is idle, else to any idle CPU,
//! else it queues on its last CPU (`select_task_rq_fair` →
//! `select_idle_sibling`); a CPU that runs out of tasks pulls one queued on
//! another (`newidle_balance`), and every 32 ms a CPU with two runnable
//! tasks more than another hands it one (the periodic `load_balance`). So
//! tasks stay on their CPUs and CPUs carry unequal loads for a while, as on
//! a real machine, where a single global queue shares them out perfectly.
//! That inequality matters: identical workers that thrash memory in lock
//! step under a single queue split, as on the real kernels (one or two
//! hogs of four stay resident, the others thrash), once some get more CPU
//! than others (docs/fidelity.md, "A run queue per CPU").
//!
//! Simplifications: one `min_vruntime` for all CPUs (CFS keeps one per
//! queue and renormalises a migrating task's vruntime); no `wake_affine`
//! pull towards the waker's CPU, no cache-hot check on migration, no
//! migration cost; load is counted in tasks, not in PELT load; all tasks at
//! nice 0.
//!
//! Small work items are not paid one by one: kernel paths add to the task's
//! CPU *debt* ([`Kernel::charge_sys`], [`Kernel::charge_user`]) and pay it with
//! [`pay_cpu`] before they block or when it exceeds [`DEBT_FLUSH_NS`], so the
//! event count stays proportional to work batches, not pages.

use std::collections::BTreeMap;

use crate::engine::{TaskId, World};
use crate::Kernel;

/// Debt above which a path should pay before continuing.
pub const DEBT_FLUSH_NS: u64 = 1_000_000;

/// One CPU's queue of waiting tasks: (vruntime, arrival) → (task, block
/// sequence, waiting since).
pub type RunQueue = BTreeMap<(u64, u64), (TaskId, u32, u64)>;

/// Interval of the periodic load balance between busy CPUs: the MC
/// domain's `balance_interval` (its weight in ms, 2 on two CPUs) times
/// `busy_factor` 16 (5.15 `sd_init`), rounded to 32 ms for any count.
const BUSY_BALANCE_INTERVAL_NS: u64 = 32_000_000;

/// The CPUs.
#[derive(Debug, Default)]
pub struct Cpus {
    /// Task holding each CPU.
    pub holder: Vec<Option<TaskId>>,
    /// Each CPU's run queue: the tasks waiting for it, with the block
    /// sequence they wait under and the time they started waiting, in
    /// `pick_next_entity` order: by vruntime (fixed while a task waits: only
    /// running tasks accrue it), then by arrival (the rbtree's leftmost; CFS
    /// breaks ties the same way, a new entity going right of equal keys).
    pub runqueues: Vec<RunQueue>,
    /// When the periodic load balance may next look (`rq->next_balance`).
    next_balance: u64,
    /// Arrivals so far: the second half of the queue's key.
    arrivals: u64,
    /// CFS `min_vruntime`: never decreases.
    pub min_vruntime: u64,
    /// Half the scaled scheduling latency: the most a sleeper is credited.
    pub sleeper_credit_ns: u64,
}

impl Cpus {
    /// `n` idle CPUs.
    pub fn new(n: usize) -> Cpus {
        // sysctl_sched_latency = 6 ms * (1 + ilog2(min(ncpus, 8)))
        // (SCHED_TUNABLESCALING_LOG); GENTLE_FAIR_SLEEPERS credits half.
        let factor = 1 + u64::from(n.clamp(1, 8).ilog2());
        Cpus {
            holder: vec![None; n],
            runqueues: vec![BTreeMap::new(); n],
            next_balance: 0,
            arrivals: 0,
            min_vruntime: 0,
            sleeper_credit_ns: 6_000_000 * factor / 2,
        }
    }
    /// Drops an exiting task from the run queue and frees its CPU.
    pub fn forget(&mut self, t: TaskId) {
        for rq in &mut self.runqueues {
            rq.retain(|_, e| e.0 != t);
        }
        for h in &mut self.holder {
            if *h == Some(t) {
                *h = None;
            }
        }
    }
    /// CPUs busy right now.
    pub fn busy(&self) -> usize {
        self.holder.iter().filter(|h| h.is_some()).count()
    }
    /// Tasks waiting for CPU `c`.
    pub fn queued(&self, c: usize) -> bool {
        !self.runqueues[c].is_empty()
    }
    /// Runnable tasks of CPU `c` (`rq->nr_running`): its holder and queue.
    fn nr_running(&self, c: usize) -> usize {
        usize::from(self.holder[c].is_some()) + self.runqueues[c].len()
    }
    /// `select_task_rq_fair` for a task last on CPU `prev`, simplified to
    /// `select_idle_sibling` with `prev` as the target (all CPUs share the
    /// last-level cache): `prev` if idle, else the first idle CPU, else
    /// `prev`. A new task (`fork`: `find_idlest_cpu`) goes to an idle CPU,
    /// else to the one with the fewest runnable tasks. Not modelled:
    /// `wake_affine`'s pull towards the waker's CPU.
    fn select_cpu(&self, prev: usize, new: bool) -> usize {
        if self.holder[prev].is_none() {
            return prev;
        }
        if let Some(c) = self.holder.iter().position(|h| h.is_none()) {
            return c;
        }
        if new {
            return (0..self.holder.len())
                .min_by_key(|&c| (self.nr_running(c), c))
                .unwrap_or(prev);
        }
        prev
    }
    /// The busiest other CPU's first queued task, for CPU `c` going idle
    /// (`newidle_balance` → `load_balance` → `detach_tasks`, simplified:
    /// the leftmost task of the longest queue, no cache-hot check).
    fn pull_for_idle(&mut self, c: usize) -> Option<(TaskId, u32, u64)> {
        let busiest = (0..self.runqueues.len())
            .filter(|&o| o != c && !self.runqueues[o].is_empty())
            .max_by_key(|&o| (self.runqueues[o].len(), std::cmp::Reverse(o)))?;
        self.runqueues[busiest].pop_first().map(|(_, e)| e)
    }
    /// The periodic load balance (`run_rebalance_domains`, every
    /// [`BUSY_BALANCE_INTERVAL_NS`] while busy): a CPU with at least two
    /// runnable tasks more than another moves its leftmost queued task to
    /// that one's queue (`calculate_imbalance` for `group_overloaded`
    /// between two CPUs of one domain, simplified to task counts).
    fn periodic_balance(&mut self, now: u64) {
        if now < self.next_balance || self.holder.len() < 2 {
            return;
        }
        self.next_balance = now + BUSY_BALANCE_INTERVAL_NS;
        let n = self.holder.len();
        let busiest = (0..n)
            .max_by_key(|&c| (self.nr_running(c), std::cmp::Reverse(c)))
            .unwrap_or(0);
        let idlest = (0..n).min_by_key(|&c| (self.nr_running(c), c)).unwrap_or(0);
        if self.nr_running(busiest) >= self.nr_running(idlest) + 2 {
            if let Some((k, e)) = self.runqueues[busiest].pop_first() {
                self.runqueues[idlest].insert(k, e);
            }
        }
    }
}

impl Kernel {
    /// Adds system CPU work to the current task's debt.
    #[inline]
    pub fn charge_sys(&mut self, ns: u64) {
        self.current_mut().cpu_debt_sys += ns;
    }
    /// Adds user CPU work to the current task's debt.
    #[inline]
    pub fn charge_user(&mut self, ns: u64) {
        self.current_mut().cpu_debt_user += ns;
    }
    /// The current task's unpaid CPU work.
    #[inline]
    pub fn cpu_debt(&self) -> u64 {
        let t = self.current();
        t.cpu_debt_sys + t.cpu_debt_user
    }

    /// Takes a free CPU for the current task, or queues it. True if it holds
    /// one. `waking`: the task comes back from a sleep or from other work,
    /// not from the end of its own slice (`place_entity`).
    fn take_cpu(&mut self, waking: bool) -> bool {
        let t = self.exec.current();
        let mut new = false;
        if waking {
            let min = self.cpus.min_vruntime;
            let credit = self.cpus.sleeper_credit_ns;
            let slice = self.params.slice_us * 1000;
            let task = &mut self.tasks[t as usize];
            task.vruntime = if task.placed {
                task.vruntime.max(min.saturating_sub(credit))
            } else {
                // A new task starts one slice behind (START_DEBIT).
                task.placed = true;
                new = true;
                min + slice
            };
        }
        let c = self
            .cpus
            .select_cpu(self.tasks[t as usize].cpu as usize, new);
        self.tasks[t as usize].cpu = c as u32;
        if self.cpus.holder[c].is_none() {
            self.cpus.holder[c] = Some(t);
            return true;
        }
        if waking {
            // check_preempt_wakeup(): a waking task whose vruntime is more
            // than the wakeup granularity (1 ms scaled like the latency)
            // behind the task running on its CPU preempts it, at the end of
            // the piece of work that task is doing (its slice is over).
            let gran = self.cpus.sleeper_credit_ns / 3;
            let me = self.tasks[t as usize].vruntime;
            if let Some(v) = self.cpus.holder[c] {
                if self.tasks[v as usize].vruntime > me + gran {
                    self.tasks[v as usize].slice_left = 0;
                }
            }
        }
        let seq = self.exec.sched[t as usize].wait_seq;
        let now = self.exec.now();
        let key = (self.tasks[t as usize].vruntime, self.cpus.arrivals);
        self.cpus.arrivals += 1;
        self.cpus.runqueues[c].insert(key, (t, seq, now));
        false
    }

    /// Whether task `t` holds a CPU.
    pub fn holds_cpu(&self, t: TaskId) -> bool {
        let c = self.tasks[t as usize].cpu as usize;
        self.cpus.holder.get(c) == Some(&Some(t))
    }

    /// The current task blocks (sleeps, waits for I/O, a lock or a timer):
    /// if it holds a CPU, the CPU goes to the next queued task
    /// (`schedule()` from `__schedule(SM_NONE)` with the task off the run
    /// queue). Called by the engine's block; not while the task waits for
    /// its own work to be done in [`run_on_cpu`].
    pub fn cpu_on_block(&mut self) {
        let t = self.exec.current();
        if !self.tasks[t as usize].in_burst {
            self.hand_on_cpu(t);
        }
    }

    /// Gives the current task's CPU to the next queued task, or frees it.
    fn release_cpu(&mut self) {
        let t = self.exec.current();
        self.hand_on_cpu(t);
    }

    /// Gives task `t`'s CPU, if it holds one, to the next queued task, or
    /// frees it.
    pub(crate) fn hand_on_cpu(&mut self, t: TaskId) {
        // `cpu` is where the task last ran; it holds that CPU still, or none.
        let c = self.tasks[t as usize].cpu as usize;
        if self.cpus.holder.get(c) != Some(&Some(t)) {
            debug_assert!(!self.cpus.holder.contains(&Some(t)));
            return;
        }
        self.cpus.holder[c] = None;
        self.tasks[t as usize].slice_left = 0;
        // (An exiting task left the queue in `task_exited` → `Cpus::forget`.)
        debug_assert!(self
            .cpus
            .runqueues
            .iter()
            .flat_map(|rq| rq.values())
            .all(|e| !self.exec.sched[e.0 as usize].exited));
        // pick_next_entity(): the smallest vruntime, earliest arrival on
        // ties; a CPU left with nothing to run pulls a task queued on
        // another (newidle balance).
        let picked = match self.cpus.runqueues[c].pop_first() {
            Some((_, e)) => Some(e),
            None => self.cpus.pull_for_idle(c),
        };
        if let Some((next, seq, since)) = picked {
            let now = self.exec.now();
            self.cpus.holder[c] = Some(next);
            self.tasks[next as usize].cpu = c as u32;
            self.tasks[next as usize].runq_ns += now - since;
            self.exec.wake(next, seq, crate::engine::Wake::Woken);
        }
    }

    /// `update_min_vruntime`: the smallest vruntime of the running and
    /// queued tasks, never going backwards.
    fn update_min_vruntime(&mut self) {
        let running = self.cpus.holder.iter().flatten();
        let leftmost = self
            .cpus
            .runqueues
            .iter()
            .filter_map(|rq| rq.keys().next().map(|k| k.0))
            .min();
        if let Some(m) = running
            .map(|&t| self.tasks[t as usize].vruntime)
            .chain(leftmost)
            .min()
        {
            self.cpus.min_vruntime = self.cpus.min_vruntime.max(m);
        }
    }
}

/// Runs the current task on a CPU for `user` + `sys` ns of work, waiting for a
/// CPU and yielding it every slice when others wait.
pub async fn run_on_cpu(w: &World, mut user: u64, mut sys: u64) {
    let mut waking = true;
    while user + sys > 0 {
        // A task keeps its CPU from one piece of work to the next until it
        // blocks or its slice is used up (`check_preempt_tick`); only then
        // does a queued task get it. Yielding after every piece would make
        // a task that works in many small pieces (a reclaimer, batch after
        // batch) queue behind every CPU-bound task's whole slice.
        let (holds, slice_over, queued) = {
            let k = w.k();
            let t = k.exec.current();
            (
                k.holds_cpu(t),
                k.tasks[t as usize].slice_left == 0,
                k.cpus.queued(k.tasks[t as usize].cpu as usize),
            )
        };
        if holds && slice_over {
            // The scheduler tick of a busy CPU: the periodic load balance.
            let mut k = w.k();
            let now = k.exec.now();
            k.cpus.periodic_balance(now);
        }
        if !holds || (slice_over && queued) {
            if holds {
                w.k().release_cpu();
            }
            let got = w.k().take_cpu(waking);
            if !got {
                w.block(None).await;
            }
        }
        waking = false;
        let end = {
            let mut k = w.k();
            let slice = k.params.slice_us * 1000;
            let task = k.current_mut();
            if task.slice_left == 0 {
                task.slice_left = slice;
            }
            let u = user.min(task.slice_left);
            let s = sys.min(task.slice_left - u);
            user -= u;
            sys -= s;
            task.slice_left -= u + s;
            task.user_ns += u;
            task.sys_ns += s;
            task.vruntime += u + s;
            task.in_burst = true;
            k.update_min_vruntime();
            k.exec.now() + u + s
        };
        w.sleep_until(end).await;
        w.k().current_mut().in_burst = false;
    }
}

/// Pays the current task's CPU debt.
pub async fn pay_cpu(w: &World) {
    let (u, s) = {
        let mut k = w.k();
        let t = k.current_mut();
        (
            std::mem::take(&mut t.cpu_debt_user),
            std::mem::take(&mut t.cpu_debt_sys),
        )
    };
    run_on_cpu(w, u, s).await;
}

/// Pays the debt if it exceeds [`DEBT_FLUSH_NS`].
pub async fn maybe_pay_cpu(w: &World) {
    if w.k().cpu_debt() >= DEBT_FLUSH_NS {
        pay_cpu(w).await;
    }
}
