//! The thread pool of a `sim`: every step of every run is a job, in an
//! order that keeps the cores busy to the end and the open records few.
//!
//! Jobs are taken in [`work_items`] order by one worker thread per core,
//! each with its progress bar; what a step produces goes to its run's
//! [`Assembly`], which writes the record in step order (`sim_steps`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use reclaimlab_kernel::SimConfig;
use reclaimlab_record::RunMeta;
use reclaimlab_workload::sim::{run_step, step_starts, StepSpec};

use crate::sim_steps::{Assembly, Outcome, StepBuffer};

/// One simulation: a profile at one sweep point, fully planned.
pub struct Job {
    /// The run's name in the record and the report.
    pub name: String,
    pub cfg: SimConfig,
    pub steps: Vec<StepSpec>,
    pub meta: RunMeta,
    pub dir: PathBuf,
}

impl Job {
    /// Simulated seconds of all its steps.
    pub fn total_s(&self) -> f64 {
        self.steps.iter().map(|s| s.total_s()).sum()
    }
}

/// A job for the thread pool: some steps of one run, simulated in order.
pub struct Item {
    run: usize,
    steps: std::ops::Range<usize>,
    /// Where the first starts on the run's time base.
    base_ns: u64,
    /// Simulated seconds.
    len_s: f64,
}

/// Runs whose steps [`work_items`] mixes at a time, per thread (and at
/// least [`MIN_RUN_WINDOW`]).
const RUN_WINDOW_PER_THREAD: usize = 2;
/// The smallest run window.
const MIN_RUN_WINDOW: usize = 16;

/// How many runs [`work_items`] mixes at a time for `threads` threads.
///
/// A run holds its record open — three files and a lock, and in memory
/// every finished step waiting for an earlier one — from the start of its
/// first job to the end of its last. Ordering all the jobs of a sweep
/// heaviest first would start every run's heaviest step before any run
/// finished: a 200-point sweep held 200 records open and 900 MB of
/// waiting steps, and failed with "Too many open files" under a soft limit
/// of 256 (1024 is common). Windows of a few runs per thread keep both
/// bounded while the cores still finish together.
pub fn run_window(threads: usize) -> usize {
    (threads * RUN_WINDOW_PER_THREAD).max(MIN_RUN_WINDOW)
}

/// Every step of every run as its own job (a run whose step starts are
/// not known beforehand, see `step_starts`, is one job): runs in windows
/// of `window` (in run order, see [`run_window`]), and within a window
/// heaviest first — simulated seconds times workers, a rough cost — so
/// that the cores finish together.
pub fn work_items(jobs: &[Job], window: usize) -> Vec<Item> {
    let window = window.max(1);
    let mut items: Vec<(usize, f64, Item)> = Vec::new();
    for (run, job) in jobs.iter().enumerate() {
        let w = run / window;
        let cost = |st: &StepSpec| {
            let workers: u32 = st.workers.iter().map(|w| w.count).sum();
            st.total_s() * f64::from(1 + workers)
        };
        match step_starts(&job.steps) {
            Some(starts) => {
                for (k, st) in job.steps.iter().enumerate() {
                    let item = Item {
                        run,
                        steps: k..k + 1,
                        base_ns: starts[k],
                        len_s: st.total_s(),
                    };
                    items.push((w, cost(st), item));
                }
            }
            None => {
                let item = Item {
                    run,
                    steps: 0..job.steps.len(),
                    base_ns: 0,
                    len_s: job.total_s(),
                };
                items.push((w, job.steps.iter().map(cost).sum(), item));
            }
        }
    }
    // Stable: equal costs keep run and step order.
    items.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    items.into_iter().map(|(_, _, it)| it).collect()
}

/// Runs `items` (from [`work_items`]) on `threads` worker threads, with a
/// progress bar per thread and one for all, until done or `stop`. Returns
/// each job's outcome (none if it never finished) and the seconds of one
/// core its steps took.
pub fn run_jobs(
    jobs: &[Job],
    items: &[Item],
    threads: usize,
    check: bool,
    stop: &AtomicBool,
) -> (Vec<Option<Outcome>>, Vec<f64>) {
    // One bar per worker thread, showing the step it works on, and one for all runs.
    let bars = indicatif::MultiProgress::new();
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bars.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let template = "[{bar:24}] {pos:>5}/{len:<5} sim s  {elapsed_precise} eta {eta:<4} {wide_msg}";
    let style = indicatif::ProgressStyle::with_template(template)
        .expect("valid template")
        .progress_chars("=> ");
    let total: u64 = items.iter().map(|it| it.len_s.ceil() as u64).sum();
    let overall = if items.len() > 1 {
        let pb = bars.add(indicatif::ProgressBar::new(total));
        pb.set_style(style.clone());
        pb.set_message(format!("all: 0/{} runs done", jobs.len()));
        pb
    } else {
        indicatif::ProgressBar::hidden()
    };
    let worker_bars: Vec<indicatif::ProgressBar> = (0..threads)
        .map(|_| {
            let pb = bars.add(indicatif::ProgressBar::new(0));
            pb.set_style(style.clone());
            pb
        })
        .collect();
    let assemblies: Vec<Mutex<Assembly>> = jobs
        .iter()
        .map(|j| {
            Mutex::new(Assembly::new(
                &j.name,
                &j.dir,
                j.meta.clone(),
                j.steps.len(),
            ))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for pb in &worker_bars {
            let (overall, assemblies) = (&overall, &assemblies);
            let (next, done) = (&next, &done);
            s.spawn(move || loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= items.len() || stop.load(Ordering::SeqCst) {
                    pb.finish_and_clear();
                    break;
                }
                let item = &items[n];
                let (job, asm) = (&jobs[item.run], &assemblies[item.run]);
                let len = item.len_s.ceil() as u64;
                if !asm.lock().expect("no poisoned lock").start() {
                    // Its record cannot be written, or a step of the run
                    // failed: nothing to add to.
                    overall.inc(len);
                    continue;
                }
                pb.reset();
                pb.set_length(len);
                let mut shown = 0;
                let mut base_ns = item.base_ns;
                for k in item.steps.clone() {
                    let st = &job.steps[k];
                    pb.set_message(format!("{} step {}", job.name, st.step));
                    let started = std::time::Instant::now();
                    let mut buf = StepBuffer::new();
                    let r = run_step(
                        &job.cfg,
                        st,
                        base_ns,
                        &mut buf,
                        &mut |t| {
                            let pos = ((t - item.base_ns as f64 / 1e9) as u64).min(len);
                            if pos > shown {
                                pb.set_position(pos);
                                overall.inc(pos - shown);
                                shown = pos;
                            }
                        },
                        check,
                        stop,
                    );
                    base_ns = r.end_ns;
                    let interrupted = r.interrupted;
                    let mut a = asm.lock().expect("no poisoned lock");
                    a.wall_s += started.elapsed().as_secs_f64();
                    let was_wanted = a.wanted();
                    a.add(k, buf, r);
                    if was_wanted && !a.wanted() {
                        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                        overall.set_message(format!("all: {n}/{} runs done", jobs.len()));
                    }
                    if interrupted || !a.wanted() {
                        break;
                    }
                }
                overall.inc(len.saturating_sub(shown));
            });
        }
    });
    let (results, walls): (Vec<Option<Outcome>>, Vec<f64>) = assemblies
        .into_iter()
        .map(|a| {
            let mut a = a.into_inner().expect("no poisoned lock");
            (a.outcome.take(), a.wall_s)
        })
        .unzip();
    if stop.load(Ordering::SeqCst) {
        overall.abandon();
    } else {
        overall.finish();
    }
    (results, walls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_steps::tiny_machine;
    use reclaimlab_kernel::params::Params;
    use reclaimlab_kernel::profile::profile;
    use reclaimlab_record::Origin;
    use reclaimlab_workload::spec::Spec;

    /// A sweep's jobs come in windows of runs, heaviest first within each,
    /// so that only a window's worth of records is open at a time.
    #[test]
    fn work_items_mix_a_window_of_runs_at_a_time() {
        let m = tiny_machine();
        let p = profile("v5.16").unwrap();
        let spec = Spec::parse(
            "name='s'\nduration_s=2\n[[worker]]\nkind='anon-hog'\ncount=1\nsize_mib=8\n",
            "s",
        )
        .unwrap();
        // Three steps of 1, 3 and 2 hogs: each run's heaviest is its second.
        let steps: Vec<StepSpec> = [1, 3, 2]
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let mut st = StepSpec {
                    step: i as u32 + 1,
                    ..StepSpec::from_spec(&spec)
                };
                st.workers[0].count = n;
                st
            })
            .collect();
        let jobs: Vec<Job> = (0..5)
            .map(|r| Job {
                name: format!("r{r}"),
                cfg: SimConfig::new(m.clone(), p, Params::defaults(p), 1),
                steps: steps.clone(),
                meta: RunMeta::new(format!("r{r}"), Origin::Sim, "v5.16"),
                dir: PathBuf::from(format!("r{r}")),
            })
            .collect();
        let order: Vec<(usize, usize)> = work_items(&jobs, 2)
            .iter()
            .map(|it| (it.run, it.steps.start))
            .collect();
        assert_eq!(
            order,
            [
                (0, 1),
                (1, 1),
                (0, 2),
                (1, 2),
                (0, 0),
                (1, 0),
                (2, 1),
                (3, 1),
                (2, 2),
                (3, 2),
                (2, 0),
                (3, 0),
                (4, 1),
                (4, 2),
                (4, 0),
            ]
        );
        // One window: heaviest first across all runs, as before windows.
        let all: Vec<usize> = work_items(&jobs, 16)
            .iter()
            .map(|it| it.steps.start)
            .collect();
        assert_eq!(all, [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0]);
        assert_eq!(
            (run_window(1), run_window(2), run_window(64)),
            (16, 16, 128)
        );
    }
}
