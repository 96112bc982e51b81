//! Step 5 of a run, one step: start its fio processes and reclaimlab's own
//! workers, each in its cgroup (a spec's `cgroup =`, else the run's) and
//! with its files on its device (a spec's `device =`, else the data
//! directory); the warmup; the measured duration, cut short when every
//! finite worker (a spec's `passes`) has exited, whose elapsed times are
//! recorded as `elapsed` samples as the simulator records them.

use super::*;

/// What a step needs from the run.
pub(super) struct StepCtx<'a> {
    pub(super) opts: &'a RunOptions,
    pub(super) data: &'a Path,
    pub(super) fio_path: &'a Path,
    pub(super) warmup: f64,
    pub(super) duration_s: f64,
    pub(super) t0: u64,
    pub(super) stop: &'a AtomicBool,
    /// The `cgroup.procs` files a worker in a spec cgroup (or none) joins.
    pub(super) procs_for: &'a dyn Fn(Option<&str>) -> Vec<PathBuf>,
    /// The directory a fio process on a spec device (or none) writes in.
    pub(super) dir_for: &'a dyn Fn(Option<&str>) -> PathBuf,
    /// The mounted filesystem image of the fs-create workers, if any.
    pub(super) fs_mnt: Option<&'a Path>,
    /// The run's memory cgroup and its version, whose OOM kill counters
    /// (its own and its children's) tell an OOM-killed fio from a failed one.
    pub(super) oom_root: Option<(&'a Path, cgroup::Version)>,
}

/// What a step started and measured.
#[derive(Default)]
pub(super) struct StepOut {
    /// Every process started: (comm, pid).
    pub(super) pids: Vec<(String, u32)>,
    /// The mmap-latency workers' sample files.
    pub(super) lat_files: Vec<PathBuf>,
    /// Finite workers that exited: (label, pid, t_s at exit, elapsed µs).
    pub(super) elapsed: Vec<(String, u32, f64, f64)>,
    /// The mlock and fs-create workers' logs: (comm, file), for the notes.
    pub(super) worker_logs: Vec<(String, PathBuf)>,
    /// Notes of the step (a fio that ended after an OOM kill).
    pub(super) notes: Vec<String>,
}

/// Runs one step until its end, a stop request or an error; `Ok(false)`
/// when a stop request cut it short. `out` holds what was started either way.
pub(super) fn run_step(ctx: &StepCtx, work: &plan::StepWork, out: &mut StepOut) -> Result<bool> {
    let t = work.step;
    let data = ctx.data;
    let default_dir = data.join("stutterp-data");
    let mut alive_checks: Vec<(u32, PathBuf, PathBuf)> = Vec::new();
    let mut finite: Vec<(String, u32, u64)> = Vec::new();
    let spawn_fio = |fp: &plan::FioProc,
                     out: &mut StepOut,
                     alive_checks: &mut Vec<(u32, PathBuf, PathBuf)>,
                     finite: &mut Vec<(String, u32, u64)>|
     -> Result<()> {
        let dir = match &fp.device {
            Some(_) => (ctx.dir_for)(fp.device.as_deref()),
            None => default_dir.clone(),
        };
        fs::create_dir_all(&dir).map_err(|e| HostError::io("cannot create", &dir, e))?;
        let tag = if fp.label == "fio" {
            format!("{t}")
        } else {
            format!("{t}-{}", fp.label)
        };
        let job = data.join(format!("fio-config.{tag}"));
        let fio_log = data.join(format!("fio-{tag}.log"));
        fs::write(
            &job,
            fp.job
                .text(ctx.warmup.ceil() as u64, ctx.duration_s.ceil() as u64),
        )
        .map_err(|e| HostError::io("cannot write fio job file", &job, e))?;
        let mut cmd = fio::command(
            ctx.fio_path,
            &dir,
            &data.join(format!("fio-{tag}.latlog")),
            &job,
        );
        cmd.stdin(Stdio::null())
            .stdout(
                fs::File::create(&fio_log)
                    .map_err(|e| HostError::io("cannot create", &fio_log, e))?,
            )
            .stderr(Stdio::from(
                fs::File::options()
                    .append(true)
                    .open(&fio_log)
                    .map_err(|e| HostError::io("cannot open", &fio_log, e))?,
            ));
        cgroup::place_in(&mut cmd, &(ctx.procs_for)(fp.cgroup.as_deref()));
        let start = sys::mono_ns();
        let ch = cmd
            .spawn()
            .map_err(|e| HostError::new(format!("cannot start fio: {e}")))?;
        out.pids.push(("fio".into(), ch.id()));
        if fp.finite {
            finite.push((fp.label.clone(), ch.id(), start));
        } else {
            alive_checks.push((ch.id(), fio_log, job));
        }
        Ok(())
    };
    let spawn = |p: &plan::Placed, out: &mut StepOut| -> Result<u32> {
        let mut c = Command::new(&ctx.opts.exe);
        let comm = match p.0 {
            plan::Proc::Hog { bytes } => {
                c.args(["worker", "memory-hog", &bytes.to_string()]);
                "memory-hog"
            }
            plan::Proc::MmapLatency { pages, sleep_ms } => {
                let f = data.join(format!("mmap-latency-{t}.{}.txt", out.lat_files.len()));
                c.args(["worker", "mmap-latency", "--out"]).arg(&f).args([
                    "--pages",
                    &pages.to_string(),
                    "--sleep-ms",
                    &sleep_ms.to_string(),
                    "--t0-mono-ns",
                    &ctx.t0.to_string(),
                ]);
                out.lat_files.push(f);
                "mmap-latency"
            }
            plan::Proc::Mlock {
                bytes,
                step_bytes,
                interval_ms,
            } => {
                c.args(["worker", "mlock", &bytes.to_string(), "--step"])
                    .arg(step_bytes.to_string())
                    .arg("--interval-ms")
                    .arg(interval_ms.to_string())
                    .arg("--t0-mono-ns")
                    .arg(ctx.t0.to_string());
                "mlock"
            }
            plan::Proc::FsCreate {
                dirs,
                files,
                file_size,
                index,
            } => {
                let dir = ctx.fs_mnt.ok_or_else(|| {
                    HostError::new("an fs-create worker without the run's filesystem image")
                })?;
                c.args(["worker", "fs-create"]).arg(dir).args([
                    "--dirs",
                    &dirs.to_string(),
                    "--files",
                    &files.to_string(),
                    "--file-size",
                    &file_size.to_string(),
                    "--index",
                    &index.to_string(),
                ]);
                "fs_mark"
            }
            plan::Proc::MmapFileReader {
                worker,
                index,
                files,
                file_bytes,
                sparse,
                random,
                passes,
                shared,
                ref device,
            } => {
                let dir = match device {
                    Some(_) => (ctx.dir_for)(device.as_deref()),
                    None => default_dir.clone(),
                };
                fs::create_dir_all(&dir).map_err(|e| HostError::io("cannot create", &dir, e))?;
                let owner = if shared { 0 } else { index };
                c.args(["worker", "mmap-file-reader", "--passes"])
                    .arg(passes.to_string())
                    .arg("--seed")
                    .arg((u64::from(index) + 1).to_string());
                if random {
                    c.arg("--random");
                }
                if !sparse && (!shared || index == 0) {
                    say(&format!(
                        "step {t}: writing {files} file(s) of {} MiB for mmap-file-reader {} before it starts",
                        file_bytes >> 20,
                        worker + 1
                    ));
                }
                for f in 0..files {
                    let path = dir.join(format!("mmap-{}.{owner}.{f}", worker + 1));
                    crate::workers::make_reader_file(&path, file_bytes, sparse)?;
                    c.arg(path);
                }
                "mapped-file-stream"
            }
        };
        c.stdin(Stdio::null());
        if matches!(p.0, plan::Proc::Mlock { .. } | plan::Proc::FsCreate { .. }) {
            // The worker's output (mlock: how much it had locked; fs-create:
            // files made) and errors, for the record's notes.
            let log = data.join(format!("{comm}-{t}.{}.log", out.pids.len()));
            let f = fs::File::create(&log).map_err(|e| HostError::io("cannot create", &log, e))?;
            let err = f
                .try_clone()
                .map_err(|e| HostError::io("cannot open", &log, e))?;
            c.stdout(Stdio::from(f)).stderr(Stdio::from(err));
            out.worker_logs.push((comm.to_string(), log));
        } else {
            c.stdout(Stdio::null()).stderr(Stdio::null());
        }
        cgroup::place_in(&mut c, &(ctx.procs_for)(p.1.as_deref()));
        let ch = c.spawn().map_err(|e| {
            HostError::new(format!(
                "cannot start the {comm} worker ({} worker {comm}): {e}",
                ctx.opts.exe.display()
            ))
        })?;
        out.pids.push((comm.to_string(), ch.id()));
        Ok(ch.id())
    };
    if !work.fio.is_empty() {
        let _ = fs::remove_dir_all(&default_dir);
        fs::create_dir_all(&default_dir)
            .map_err(|e| HostError::io("cannot create", &default_dir, e))?;
    }
    for fp in work.fio.iter().filter(|f| f.early) {
        spawn_fio(fp, out, &mut alive_checks, &mut finite)?;
    }
    // A finite reclaimlab worker (a mapped-file-stream reader's `passes`):
    // its run time is a sample, and the step ends when every such worker
    // and every finite fio has.
    let spawn_tracked =
        |p: &plan::Placed, out: &mut StepOut, finite: &mut Vec<(String, u32, u64)>| -> Result<()> {
            let start = sys::mono_ns();
            let pid = spawn(p, out)?;
            if let plan::Proc::MmapFileReader { passes: 1.., .. } = p.0 {
                finite.push(("mapped-file-stream".into(), pid, start));
            }
            Ok(())
        };
    for p in &work.early {
        spawn_tracked(p, out, &mut finite)?;
    }
    // A fio that exits during the step failed, unless the kernel's OOM
    // killer acted in the run's cgroups meanwhile: a kill is the workload's
    // outcome, recorded (oomwork.rs), and the step goes on without it.
    let oom_at_start = ctx
        .oom_root
        .map(|(d, v)| crate::oomcapture::cgroup_tree_oom_kills(d, v));
    let fio_alive = |checks: &mut Vec<(u32, PathBuf, PathBuf)>,
                     notes: &mut Vec<String>|
     -> Result<()> {
        let oom_now = ctx
            .oom_root
            .map(|(d, v)| crate::oomcapture::cgroup_tree_oom_kills(d, v));
        let mut i = 0;
        while i < checks.len() {
            let (pid, log, job) = &checks[i];
            if !exited(*pid) {
                i += 1;
                continue;
            }
            if let (Some(a), Some(b)) = (oom_at_start, oom_now) {
                if b > a {
                    let at = sys::mono_ns().saturating_sub(ctx.t0) as f64 / 1e9;
                    let note = format!(
                        "step {t}: fio (pid {pid}, {}) ended at t={at:.1} s after {} OOM kill(s) in the run's cgroups; the step went on without it",
                        job.display(),
                        b - a
                    );
                    say(&note);
                    notes.push(note);
                    checks.remove(i);
                    continue;
                }
            }
            {
                return Err(HostError::with_fix(
                    format!(
                        "fio exited during step {t}; its log ends:\n{}",
                        tail(log, 8)
                    ),
                    format!(
                        "check the job file {} and the data dir's free space",
                        job.display()
                    ),
                ));
            }
        }
        Ok(())
    };
    let mut step_notes = Vec::new();
    if !wait(ctx.stop, ctx.warmup, || {
        fio_alive(&mut alive_checks, &mut step_notes)
    })? {
        out.notes.append(&mut step_notes);
        return Ok(false);
    }
    for fp in work.fio.iter().filter(|f| !f.early) {
        spawn_fio(fp, out, &mut alive_checks, &mut finite)?;
    }
    for p in &work.late {
        spawn_tracked(p, out, &mut finite)?;
    }
    // The duration, or until every finite worker is done.
    let end = sys::mono_ns() + (ctx.duration_s * 1e9) as u64;
    let had_finite = !finite.is_empty();
    while sys::mono_ns() < end {
        if ctx.stop.load(Ordering::Relaxed) {
            out.notes.append(&mut step_notes);
            return Ok(false);
        }
        let now = sys::mono_ns();
        finite.retain(|(label, pid, start)| {
            if exited(*pid) {
                out.elapsed.push((
                    label.clone(),
                    *pid,
                    now.saturating_sub(ctx.t0) as f64 / 1e9,
                    (now - start) as f64 / 1e3,
                ));
                false
            } else {
                true
            }
        });
        if had_finite && finite.is_empty() {
            say(&format!(
                "step {t}: every finite worker is done; the step ends"
            ));
            break;
        }
        // (fio's own runtime ends with the step: no check in its last seconds.)
        if now + 2_000_000_000 < end {
            if let Err(e) = fio_alive(&mut alive_checks, &mut step_notes) {
                out.notes.append(&mut step_notes);
                return Err(e);
            }
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
    out.notes.append(&mut step_notes);
    Ok(!ctx.stop.load(Ordering::Relaxed))
}
