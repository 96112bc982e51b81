//! CPUs as a contended resource: N CPUs, a FIFO run queue, time slices.
//!
//! A task pays for work with [`run_on_cpu`]: it takes a free CPU or queues for
//! one and keeps it, from one piece of work to the next, until it blocks
//! (the engine's block hands the CPU on) or has used one slice
//! (`sched.slice_us`) while another task waits; then the queued task with
//! the smallest virtual runtime gets it. Reclaim scanning therefore takes CPU
//! time away from workers exactly when CPUs are scarce. (Until 2026-11-27 a
//! task gave its CPU up after every piece of work, so a reclaimer working
//! batch by batch queued behind every CPU-bound task's whole slice.)
//!
//! The queue order follows CFS (kernel/sched/fair.c, 5.15): a task's
//! `vruntime` grows with the CPU time it uses, and a task that comes back
//! after sleeping is placed at no less than `min_vruntime` minus half the
//! scheduling latency (`place_entity` with `GENTLE_FAIR_SLEEPERS`;
//! `sysctl_sched_latency` 6 ms scaled by 1 + log2(CPUs), CPUs capped at 8),
//! and a new task one slice after `min_vruntime` (`START_DEBIT`). So
//! a kswapd or flusher that slept runs before the hogs that have been burning
//! CPU, as on a real machine. A waking task more than the wake-up granularity
//! (1 ms, scaled like the latency) of vruntime behind the running task with
//! the most preempts it (`check_preempt_wakeup`), at the end of the piece of
//! work that task is doing. Simplifications: one run queue for all CPUs (no
//! per-CPU queues, load balancing or migration cost); all tasks at nice 0.
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

/// The CPUs.
#[derive(Debug, Default)]
pub struct Cpus {
    /// Task holding each CPU.
    pub holder: Vec<Option<TaskId>>,
    /// Tasks waiting for a CPU, with the block sequence they wait under and
    /// the time they started waiting, in `pick_next_entity` order: by
    /// vruntime (fixed while a task waits: only running tasks accrue it),
    /// then by arrival (the rbtree's leftmost; CFS breaks ties the same
    /// way, a new entity going right of equal keys).
    pub runqueue: BTreeMap<(u64, u64), (TaskId, u32, u64)>,
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
            runqueue: BTreeMap::new(),
            arrivals: 0,
            min_vruntime: 0,
            sleeper_credit_ns: 6_000_000 * factor / 2,
        }
    }
    /// Drops an exiting task from the run queue and frees its CPU.
    pub fn forget(&mut self, t: TaskId) {
        self.runqueue.retain(|_, e| e.0 != t);
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
                min + slice
            };
        }
        if let Some(c) = self.cpus.holder.iter().position(|h| h.is_none()) {
            self.cpus.holder[c] = Some(t);
            self.tasks[t as usize].cpu = c as u32;
            return true;
        }
        if waking {
            // check_preempt_wakeup(): a waking task whose vruntime is more
            // than the wakeup granularity (1 ms scaled like the latency)
            // behind a running task's preempts it. Here the running task
            // with the largest vruntime gives up its CPU at the end of the
            // piece of work it is doing (its slice is over).
            let gran = self.cpus.sleeper_credit_ns / 3;
            let me = self.tasks[t as usize].vruntime;
            let victim = self
                .cpus
                .holder
                .iter()
                .flatten()
                .copied()
                .max_by_key(|&h| (self.tasks[h as usize].vruntime, h));
            if let Some(v) = victim {
                if self.tasks[v as usize].vruntime > me + gran {
                    self.tasks[v as usize].slice_left = 0;
                }
            }
        }
        let seq = self.exec.sched[t as usize].wait_seq;
        let now = self.exec.now();
        let key = (self.tasks[t as usize].vruntime, self.cpus.arrivals);
        self.cpus.arrivals += 1;
        self.cpus.runqueue.insert(key, (t, seq, now));
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
            .runqueue
            .values()
            .all(|e| !self.exec.sched[e.0 as usize].exited));
        // pick_next_entity(): the smallest vruntime, earliest arrival on ties.
        if let Some((_, (next, seq, since))) = self.cpus.runqueue.pop_first() {
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
        let leftmost = self.cpus.runqueue.keys().next().map(|k| k.0);
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
                !k.cpus.runqueue.is_empty(),
            )
        };
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
