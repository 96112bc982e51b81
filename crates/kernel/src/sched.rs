//! CPUs as a contended resource: N CPUs, a FIFO run queue, time slices.
//!
//! A task pays for work with [`run_on_cpu`]: it takes a free CPU or queues for
//! one, holds it for at most one slice (`sched.slice_us`), then hands it to the
//! next queued task, and repeats until the work is paid. Reclaim scanning
//! therefore takes CPU time away from workers exactly when CPUs are scarce.
//! Simplification: round-robin instead of CFS's vruntime; no preemption of a
//! slice by a waking task; no per-CPU run queues or migration cost.
//!
//! Small work items are not paid one by one: kernel paths add to the task's
//! CPU *debt* ([`Kernel::charge_sys`], [`Kernel::charge_user`]) and pay it with
//! [`pay_cpu`] before they block or when it exceeds [`DEBT_FLUSH_NS`], so the
//! event count stays proportional to work batches, not pages.

use std::collections::VecDeque;

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
    /// the time they started waiting.
    pub runqueue: VecDeque<(TaskId, u32, u64)>,
}

impl Cpus {
    /// `n` idle CPUs.
    pub fn new(n: usize) -> Cpus {
        Cpus {
            holder: vec![None; n],
            runqueue: VecDeque::new(),
        }
    }
    /// Drops an exiting task from the run queue and frees its CPU.
    pub fn forget(&mut self, t: TaskId) {
        self.runqueue.retain(|e| e.0 != t);
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

    /// Takes a free CPU for the current task, or queues it. True if it holds one.
    fn take_cpu(&mut self) -> bool {
        let t = self.exec.current();
        if let Some(c) = self.cpus.holder.iter().position(|h| h.is_none()) {
            self.cpus.holder[c] = Some(t);
            self.tasks[t as usize].cpu = c as u32;
            return true;
        }
        let seq = self.exec.sched[t as usize].wait_seq;
        let now = self.exec.now();
        self.cpus.runqueue.push_back((t, seq, now));
        false
    }

    /// Gives the current task's CPU to the next queued task, or frees it.
    fn release_cpu(&mut self) {
        let t = self.exec.current();
        let Some(c) = self.cpus.holder.iter().position(|h| *h == Some(t)) else {
            return;
        };
        self.cpus.holder[c] = None;
        while let Some((next, seq, since)) = self.cpus.runqueue.pop_front() {
            if self.exec.sched[next as usize].exited {
                continue;
            }
            let now = self.exec.now();
            self.cpus.holder[c] = Some(next);
            self.tasks[next as usize].cpu = c as u32;
            self.tasks[next as usize].runq_ns += now - since;
            self.exec.wake(next, seq, crate::engine::Wake::Woken);
            break;
        }
    }
}

/// Runs the current task on a CPU for `user` + `sys` ns of work, waiting for a
/// CPU and yielding it every slice when others wait.
pub async fn run_on_cpu(w: &World, mut user: u64, mut sys: u64) {
    while user + sys > 0 {
        let got = w.k().take_cpu();
        if !got {
            w.block(None).await;
        }
        let end = {
            let mut k = w.k();
            let slice = k.params.slice_us * 1000;
            let u = user.min(slice);
            let s = sys.min(slice - u);
            user -= u;
            sys -= s;
            let task = k.current_mut();
            task.user_ns += u;
            task.sys_ns += s;
            k.exec.now() + u + s
        };
        w.sleep_until(end).await;
        w.k().release_cpu();
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
