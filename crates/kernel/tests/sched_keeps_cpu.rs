//! A task keeps its CPU from one piece of work to the next.
//!
//! In the kernel a task running kernel code holds its CPU until it
//! blocks, or until the tick finds its slice used up while others wait
//! (`check_preempt_tick`, 5.15 kernel/sched/fair.c). A reclaimer pays for
//! its scanning batch by batch; were each batch a new turn on the run
//! queue, it would wait behind a CPU-bound task's whole slice for every
//! few microseconds of work.

mod common;

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::sched::run_on_cpu;
use std::cell::Cell;
use std::rc::Rc;

const MACHINE: &str = "name='two'\ncpus=2\nmemory_mib=256\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=100\nread_mb_s=100\nlatency_us=100\n";
const MS: u64 = 1_000_000;

/// Two CPU-bound tasks on two CPUs, and a third that does 10 ms of work
/// in 1,000 pieces of 10 µs: it gets about a third of the CPUs, so its
/// work is done in tens of milliseconds, not in 1,000 waits for a slice.
#[test]
fn a_task_working_in_small_pieces_gets_its_share() {
    let w: Rc<World> = common::boot_v515(MACHINE, &[]);
    for _ in 0..2 {
        let t = w.k().new_task("hog", TaskKind::User, 0);
        let w2 = w.clone();
        w.spawn(t, async move {
            loop {
                run_on_cpu(&w2, 100 * MS, 0).await;
            }
        });
    }
    let done_at = Rc::new(Cell::new(0u64));
    let t = w.k().new_task("pieces", TaskKind::User, 0);
    let (w2, d) = (w.clone(), done_at.clone());
    w.spawn(t, async move {
        for _ in 0..1_000 {
            run_on_cpu(&w2, 0, 10_000).await;
        }
        d.set(w2.k().exec.now());
    });
    w.run_until(2_000 * MS);
    let done = done_at.get();
    assert!(done > 0, "10 ms of work in small pieces not done in 2 s");
    // A fair third of two CPUs does it in 15 ms; allow for the slices.
    assert!(
        done < 100 * MS,
        "10 ms of work in small pieces took {} ms beside two CPU-bound tasks",
        done / MS
    );
}

/// With a run queue per CPU, a CPU whose queue runs dry pulls a task queued
/// on another (`newidle_balance`) rather than idle: three tasks that each
/// work 2 ms and sleep 1 ms keep both CPUs busy, and one that sleeps
/// often cannot strand the others on one CPU.
#[test]
fn a_cpu_pulls_work_rather_than_idle() {
    let w: Rc<World> = common::boot_v515(MACHINE, &[]);
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let t = w.k().new_task("worker", TaskKind::User, 0);
        tasks.push(t);
        let w2 = w.clone();
        w.spawn(t, async move {
            loop {
                run_on_cpu(&w2, 2 * MS, 0).await;
                let until = w2.k().exec.now() + MS;
                w2.sleep_until(until).await;
            }
        });
    }
    w.run_until(1_000 * MS);
    let k = w.k();
    let used: u64 = tasks.iter().map(|&t| k.tasks[t as usize].user_ns).sum();
    // Each task wants 2/3 of a CPU, 2 CPUs' worth in all: the CPUs should
    // be busy nearly all the time.
    assert!(
        used > 1_900 * MS,
        "3 tasks used {} ms of 2 CPUs' 2000 ms",
        used / MS
    );
}
