//! The discrete-event core: virtual time, a deterministic single-threaded
//! executor for simulated tasks, timers, wait queues.
//!
//! Kernel paths are written as straight-line `async fn`s. A task is a boxed
//! future; it runs until it awaits one of the blocking primitives here
//! ([`World::block`]), which registers the task on a timer and/or a wait queue
//! and yields. Nothing else ever yields, so between two awaits a task owns the
//! whole kernel state: that is the simulated equivalent of holding every lock,
//! and it is what makes the simulation deterministic.
//!
//! Ordering: the ready queue is FIFO; timers are ordered by `(time, seq)` with
//! a strictly increasing `seq`, so equal times fire in the order they were set
//! (as in ns-3 and nexosim). Cancellation is lazy: each task carries a
//! `wait_seq`; a wake (timer or queue) only takes effect if it names the
//! current `wait_seq` of a blocked task, after which the sequence moves on and
//! every other pending wake for that block becomes stale.

use std::cell::{Cell, RefCell, RefMut};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crate::Kernel;

/// Nanoseconds of simulated time.
pub type Nanos = u64;
/// Index of a simulated task (also its pid minus [`PID_BASE`]).
pub type TaskId = u32;
/// First pid handed out; kernel threads and user tasks share the space.
pub const PID_BASE: u32 = 100;

/// Why a blocked task woke up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Its timeout expired.
    Timeout,
    /// Someone woke its wait queue (or handed it a resource).
    Woken,
}

/// Scheduler-side state of one task.
#[derive(Debug, Default)]
pub struct TaskSched {
    /// Sequence number of the current (or next) block; stale wakes carry older ones.
    pub wait_seq: u32,
    /// True while the task is blocked in [`World::block`].
    pub blocked: bool,
    /// Why the last block ended.
    pub wake: Option<Wake>,
    /// True once the task's future has completed or it was killed.
    pub exited: bool,
}

/// A wait queue: tasks sleeping on an event, each with the block sequence it
/// is waiting under (non-exclusive waiters, as `prepare_to_wait`).
#[derive(Debug, Default)]
pub struct WaitQueue {
    waiters: Vec<(TaskId, u32)>,
}

impl WaitQueue {
    /// True if anybody waits (`waitqueue_active`).
    pub fn active(&self) -> bool {
        !self.waiters.is_empty()
    }
    /// Number of registered waiters.
    pub fn len(&self) -> usize {
        self.waiters.len()
    }
    /// True if nobody waits.
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }
}

/// Timer entry: fire at `.0`, tie-broken by `.1`, for task `.2` under wait seq `.3`.
type TimerEntry = Reverse<(Nanos, u64, TaskId, u32)>;

/// Executor state that lives inside the kernel borrow.
#[derive(Debug, Default)]
pub struct Exec {
    now: Nanos,
    seq: u64,
    ready: VecDeque<TaskId>,
    timers: BinaryHeap<TimerEntry>,
    /// Per-task scheduler state, indexed by [`TaskId`].
    pub sched: Vec<TaskSched>,
    current: TaskId,
    /// Number of timer and ready-queue events processed so far.
    pub events: u64,
}

impl Exec {
    /// Current simulated time.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }
    /// The task being polled.
    #[inline]
    pub fn current(&self) -> TaskId {
        self.current
    }
    /// Sets the clock before anything runs (a step that continues a record's
    /// time base).
    pub fn start_at(&mut self, t: Nanos) {
        debug_assert!(self.timers.is_empty() && self.now <= t);
        self.now = t;
    }
    /// Adds a timer waking task `t` at `at` if its block `seq` is still current.
    pub fn add_timer(&mut self, at: Nanos, t: TaskId, seq: u32) {
        debug_assert!(at >= self.now, "timer set in the past");
        self.seq += 1;
        self.timers.push(Reverse((at, self.seq, t, seq)));
    }
    /// Wakes task `t` if it is blocked under `seq`; returns true if it woke.
    pub fn wake(&mut self, t: TaskId, seq: u32, why: Wake) -> bool {
        let s = &mut self.sched[t as usize];
        if s.blocked && s.wait_seq == seq && !s.exited {
            s.blocked = false;
            s.wait_seq = s.wait_seq.wrapping_add(1);
            s.wake = Some(why);
            self.ready.push_back(t);
            true
        } else {
            false
        }
    }
    /// Registers the current task on `wq` under the sequence its next block will use.
    pub fn prepare_to_wait(&mut self, wq: &mut WaitQueue) {
        let t = self.current;
        let seq = self.sched[t as usize].wait_seq;
        wq.waiters.push((t, seq));
    }
    /// Removes the current task from `wq` (after its block ended either way).
    pub fn finish_wait(&mut self, wq: &mut WaitQueue) {
        let t = self.current;
        wq.waiters.retain(|&(w, _)| w != t);
    }
    /// Wakes every waiter of `wq` (`wake_up` with non-exclusive waiters);
    /// returns how many woke.
    pub fn wake_up_all(&mut self, wq: &mut WaitQueue) -> usize {
        let mut n = 0;
        for (t, seq) in std::mem::take(&mut wq.waiters) {
            if self.wake(t, seq, Wake::Woken) {
                n += 1;
            }
        }
        n
    }
    /// Wakes the first still-blocked waiter of `wq` (an exclusive hand-off);
    /// returns it.
    pub fn wake_one(&mut self, wq: &mut WaitQueue) -> Option<TaskId> {
        while !wq.waiters.is_empty() {
            let (t, seq) = wq.waiters.remove(0);
            if self.wake(t, seq, Wake::Woken) {
                return Some(t);
            }
        }
        None
    }
}

type TaskFuture = Pin<Box<dyn Future<Output = ()>>>;

/// The simulated world: the kernel state and the task futures.
///
/// Shared by every task as `Rc<World>`. Kernel state is borrowed with
/// [`World::k`]; a borrow must never be held across an `.await` (clippy's
/// `await_holding_refcell_ref` is denied in this crate).
pub struct World {
    kernel: RefCell<Kernel>,
    futures: RefCell<Vec<Option<TaskFuture>>>,
    spawned: RefCell<Vec<(TaskId, TaskFuture)>>,
    stop: Cell<bool>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").finish_non_exhaustive()
    }
}

fn noop_waker() -> Waker {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        |_| RawWaker::new(std::ptr::null(), &VTABLE),
        |_| {},
        |_| {},
        |_| {},
    );
    // SAFETY: every vtable function ignores the data pointer; nothing is freed.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

impl World {
    /// Wraps a kernel into a world with no tasks yet.
    pub fn new(kernel: Kernel) -> Rc<World> {
        Rc::new(World {
            kernel: RefCell::new(kernel),
            futures: RefCell::new(Vec::new()),
            spawned: RefCell::new(Vec::new()),
            stop: Cell::new(false),
        })
    }

    /// Borrows the kernel state. Never hold the result across an `.await`.
    #[inline]
    pub fn k(&self) -> RefMut<'_, Kernel> {
        self.kernel.borrow_mut()
    }

    /// Consumes the world and returns the kernel (after the run).
    pub fn into_kernel(self: Rc<Self>) -> Kernel {
        match Rc::try_unwrap(self) {
            Ok(w) => w.kernel.into_inner(),
            Err(_) => panic!("World still shared by a task at the end of the run"),
        }
    }

    /// Registers a future for task `t` (created by `Kernel::new_task`); it
    /// becomes runnable at once.
    pub fn spawn(&self, t: TaskId, fut: impl Future<Output = ()> + 'static) {
        self.spawned.borrow_mut().push((t, Box::pin(fut)));
        self.k().exec.ready.push_back(t);
    }

    /// Drops every task future (they hold `Rc<World>`, a cycle), so the
    /// world can be freed. The world cannot run afterwards.
    pub fn shutdown(&self) {
        self.stop.set(true);
        let futs = std::mem::take(&mut *self.futures.borrow_mut());
        drop(futs);
        let sp = std::mem::take(&mut *self.spawned.borrow_mut());
        drop(sp);
    }

    /// Asks [`World::run_until`] to return at the next event.
    pub fn request_stop(&self) {
        self.stop.set(true);
    }

    fn adopt_spawned(&self) {
        let mut sp = self.spawned.borrow_mut();
        if sp.is_empty() {
            return;
        }
        let mut futs = self.futures.borrow_mut();
        for (t, f) in sp.drain(..) {
            let i = t as usize;
            if futs.len() <= i {
                futs.resize_with(i + 1, || None);
            }
            futs[i] = Some(f);
        }
    }

    /// Runs events until simulated time `until` (exclusive) or until no event
    /// is left or a stop was requested. Returns the time reached.
    ///
    /// A step: take the next ready task (FIFO) and poll it until it blocks; if
    /// none is ready, advance time to the earliest timer and fire it.
    pub fn run_until(&self, until: Nanos) -> Nanos {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        loop {
            if self.stop.get() {
                return self.k().exec.now;
            }
            self.adopt_spawned();
            let next = {
                let mut k = self.k();
                let ex = &mut k.exec;
                ex.events += 1;
                if let Some(t) = ex.ready.pop_front() {
                    ex.current = t;
                    Some(t)
                } else {
                    match ex.timers.peek() {
                        None => return ex.now,
                        Some(Reverse((at, ..))) if *at >= until => {
                            ex.now = until;
                            return until;
                        }
                        Some(_) => {
                            let Reverse((at, _, t, seq)) = ex.timers.pop().expect("peeked");
                            debug_assert!(at >= ex.now, "time went backwards");
                            ex.now = at;
                            ex.wake(t, seq, Wake::Timeout);
                            None
                        }
                    }
                }
            };
            let Some(t) = next else { continue };
            let fut = self
                .futures
                .borrow_mut()
                .get_mut(t as usize)
                .and_then(Option::take);
            let Some(mut fut) = fut else { continue };
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(()) => {
                    self.k().task_exited(t);
                }
                Poll::Pending => {
                    let exited = self.k().exec.sched[t as usize].exited;
                    if !exited {
                        self.futures.borrow_mut()[t as usize] = Some(fut);
                    }
                }
            }
        }
    }

    /// Blocks the current task until woken through a wait queue it registered
    /// on with `prepare_to_wait`, or until `deadline` if given. Returns why it
    /// woke.
    pub fn block(&self, deadline: Option<Nanos>) -> Block<'_> {
        Block {
            w: self,
            deadline,
            armed: false,
        }
    }

    /// Sleeps the current task until time `at` (no early wake).
    pub async fn sleep_until(&self, at: Nanos) {
        if at <= self.k().exec.now {
            return;
        }
        self.block(Some(at)).await;
    }
}

/// Future returned by [`World::block`].
#[derive(Debug)]
pub struct Block<'a> {
    w: &'a World,
    deadline: Option<Nanos>,
    armed: bool,
}

impl Future for Block<'_> {
    type Output = Wake;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Wake> {
        let mut k = self.w.k();
        if !self.armed {
            k.cpu_on_block();
        }
        let ex = &mut k.exec;
        let t = ex.current;
        if !self.armed {
            let seq = ex.sched[t as usize].wait_seq;
            ex.sched[t as usize].blocked = true;
            if let Some(at) = self.deadline {
                let at = at.max(ex.now);
                ex.add_timer(at, t, seq);
            }
            drop(k);
            self.armed = true;
            Poll::Pending
        } else {
            Poll::Ready(ex.sched[t as usize].wake.unwrap_or(Wake::Woken))
        }
    }
}
