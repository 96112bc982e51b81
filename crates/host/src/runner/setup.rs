//! Step 3 and 4 of a run, apart from the main line: the memory cgroup, the
//! trace capture and the calibration write, each logged to the run's state
//! file before it is created; and the cgroup's notes at the end.

use super::*;

/// The cgroup's memory pressure (cgroup v2 has per-group PSI), if readable.
pub(super) fn cgroup_psi(sb: &Sandbox) -> Option<sys::Psi> {
    fs::read_to_string(sb.dir.join("memory.pressure"))
        .ok()
        .as_deref()
        .and_then(sys::parse_psi)
}

/// The capture notes of the run's cgroup at its end: its `memory.stat`
/// counters since `stat0`, its peak usage, and its memory pressure since
/// `psi0`.
pub(super) fn cgroup_notes(
    sb: &Sandbox,
    stat0: &[(String, u64)],
    lru_last: &[(String, u64)],
    psi0: Option<sys::Psi>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let stat1 = sb.memory_stat();
    let delta = |k: &str| {
        let a = stat0.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        let b = stat1.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        b.map(|b| b.saturating_sub(a.unwrap_or(0)))
    };
    let keys = [
        "pgpgin",
        "pgpgout",
        "pgfault",
        "pgmajfault",
        "pgscan",
        "pgsteal",
        "pgrefill",
        "pgactivate",
        "pgdeactivate",
        "workingset_refault_anon",
        "workingset_refault_file",
        "workingset_activate_anon",
        "workingset_activate_file",
    ];
    let parts: Vec<String> = keys
        .iter()
        .filter_map(|k| delta(k).map(|v| format!("{k} +{v}")))
        .collect();
    if !parts.is_empty() {
        notes.push(format!(
            "cgroup memory.stat deltas ({}): {}",
            sb.dir.display(),
            parts.join(", ")
        ));
    }
    // The LRU lists at the end of the last step, read before its workers
    // were killed, as the simulator's vmstat gauges show them (whether the
    // hogs' anon pages ended active says whether reclaim protected them).
    let lru: Vec<String> = [
        "inactive_anon",
        "active_anon",
        "inactive_file",
        "active_file",
        "unevictable",
    ]
    .iter()
    .filter_map(|k| {
        let v = lru_last.iter().find(|(n, _)| n == k)?.1;
        Some(format!("{k} {}", human_bytes(v)))
    })
    .collect();
    if !lru.is_empty() {
        notes.push(format!(
            "cgroup LRU lists at the end of the last step: {}",
            lru.join(", ")
        ));
    }
    if let Some(p) = sb.peak_bytes() {
        notes.push(format!("cgroup peak memory usage {}", human_bytes(p)));
    }
    if let (Some(a), Some(b)) = (psi0, cgroup_psi(sb)) {
        notes.push(format!(
            "psi memory (the cgroup's memory.pressure): some {:.3} s, full {:.3} s stalled during the run",
            b.some.total_us.saturating_sub(a.some.total_us) as f64 / 1e6,
            b.full.total_us.saturating_sub(a.full.total_us) as f64 / 1e6,
        ));
    }
    notes
}

/// The run's memory cgroup (part of step 3), both its directories logged
/// before they are created: limited to `memory` in cgroup scope; in host
/// scope a group without a limit, only to kill and account the workers.
/// Returns the reclaim scope's label and the sandbox (none without a
/// memory controller).
pub(super) fn create_sandbox(
    res: &mut Resources,
    ctrl: Option<&cgroup::MemoryController>,
    scope: Scope,
    memory: u64,
    mounts: &[sys::Mount],
    name: &str,
) -> Result<(&'static str, Option<Sandbox>)> {
    Ok(match (ctrl, scope) {
        (Some(c), scope) => {
            let limit = if scope == Scope::Cgroup {
                memory
            } else {
                u64::MAX
            };
            let cpuacct = if c.version == Version::V1 {
                cgroup::cpuacct_v1_mount(mounts)
            } else {
                None
            };
            // Log both possible directories before creating them.
            res.state
                .log(Entry::Cgroup(c.version, cgroup::group_path(&c.mount, name)))?;
            if let Some(m) = &cpuacct {
                res.state
                    .log(Entry::Cgroup(Version::V1, cgroup::group_path(m, name)))?;
            }
            let sb = if scope == Scope::Cgroup {
                Sandbox::create(c, name, limit, cpuacct.as_deref(), |_| {})?
            } else {
                // Host scope: a group without a limit, only to kill and account workers.
                let sb = Sandbox::create(c, name, u64::MAX / 2, cpuacct.as_deref(), |_| {});
                match sb {
                    Ok(mut s) => {
                        let f = match c.version {
                            Version::V1 => "memory.limit_in_bytes",
                            Version::V2 => "memory.max",
                        };
                        let _ = sys::write(
                            s.dir.join(f),
                            if c.version == Version::V2 {
                                "max"
                            } else {
                                "-1"
                            },
                        );
                        s.limit = 0;
                        s
                    }
                    Err(e) => return Err(e),
                }
            };
            let label = if scope == Scope::Cgroup {
                c.version.scope_label()
            } else {
                "global"
            };
            (label, Some(sb))
        }
        (None, _) => ("global", None),
    })
}

/// The trace capture (part of step 3): mounts tracefs if it is not (logged
/// first), then creates the run's private instance with the requested
/// events this kernel has. Returns those events (none: no trace, and
/// `notes` says why).
pub(super) fn set_up_trace(
    res: &mut Resources,
    mounts: &[sys::Mount],
    events_spec: &str,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<String>> {
    let mut trace_root = tracefs::find_mounted(mounts);
    if tracefs::requested_events(events_spec).is_empty() {
        notes.push("no trace captured: capture.events=none".into());
        trace_root = None;
    } else if trace_root.is_none() && tracefs::mountable() {
        match tracefs::mount() {
            Ok(p) => {
                res.state.log(Entry::Mount(p.clone()))?;
                trace_root = Some(p);
            }
            Err(e) => notes.push(format!("no trace captured: {e}")),
        }
    } else if trace_root.is_none() {
        notes.push("no trace captured: this kernel has no tracefs (CONFIG_TRACING)".into());
    }
    let mut events = Vec::new();
    if let Some(root) = &trace_root {
        let (have, lack) = tracefs::available_events(root, &tracefs::requested_events(events_spec));
        if !lack.is_empty() {
            notes.push(format!(
                "requested events this kernel lacks: {}",
                lack.join(", ")
            ));
        }
        if !root.join("instances").is_dir() {
            notes.push(format!(
                "no trace captured: {}/instances is missing and the global buffer is never used",
                root.display()
            ));
        } else if have.is_empty() {
            notes.push(
                "no trace captured: none of the reclaim tracepoints exist on this kernel".into(),
            );
        } else {
            let dir = root.join("instances").join(name);
            res.state.log(Entry::Instance(dir))?;
            match tracefs::Instance::create(root, name, &have, 8192) {
                Ok(i) => {
                    events = have;
                    res.instance = Some(i);
                }
                Err(e) => notes.push(format!("no trace captured: {e}")),
            }
        }
    }
    Ok(events)
}

/// `run`'s calibration write (step 4): `dd` of `mib` MiB into `data`, in
/// the cgroup, timed; the file is removed. Returns the seconds it took. A
/// stop request kills it and is an error (the caller's guards clean up).
pub(super) fn calibrate(
    data: &Path,
    mib: u64,
    procs: &[PathBuf],
    sandbox: Option<&Sandbox>,
    stop: &AtomicBool,
) -> Result<f64> {
    let f = data.join("ddfile");
    say(&format!(
        "calibrating: writing {mib} MiB with dd (conv=fdatasync) for the warmup"
    ));
    let t = sys::mono_ns();
    let mut cmd = crate::machine::calibration_write(&f, mib);
    cgroup::place_in(&mut cmd, procs);
    let child = cmd
        .spawn()
        .map_err(|e| HostError::new(format!("cannot run dd for calibration: {e}")))?;
    let cpid = child.id();
    while !exited(cpid) && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(StdDuration::from_millis(100));
    }
    if stop.load(Ordering::Relaxed) {
        if let Some(sb) = sandbox {
            let _ = sb.kill_all();
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(cpid as i32, libc::SIGKILL) };
    }
    reap(cpid);
    let secs = (sys::mono_ns() - t) as f64 / 1e9;
    let _ = fs::remove_file(&f);
    if stop.load(Ordering::Relaxed) {
        return Err(HostError::new(
            "interrupted during calibration; the host is cleaned up",
        ));
    }
    Ok(secs)
}

/// A cgroup of the record as a note, in the words `sim` uses for its own.
pub(super) fn cgroup_record_note(c: &reclaimlab_record::CgroupRecord) -> String {
    let mib = |b: Option<u64>| b.map_or("max".to_string(), |b| format!("{} MiB", b >> 20));
    let ev: Vec<String> = c
        .events
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let st: Vec<String> = c
        .stat
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    format!(
        "cgroup `{}`: memory.max {}, memory.high {}, peak {} MiB, memory.events: {}; memory.stat events: {}",
        c.name,
        mib(c.max_bytes),
        mib(c.high_bytes),
        c.peak_bytes >> 20,
        if ev.is_empty() { "none".to_string() } else { ev.join(", ") },
        if st.is_empty() { "none".to_string() } else { st.join(", ") },
    )
}

/// A spec's devices and cgroups (part of step 3): the devices first, each
/// made, throttled and measured in the run's cgroup (which on cgroup v2 may
/// hold processes only until its children exist), a reader's prefilled
/// files moved into the fio directory `files`; then the cgroup tree.
/// Returns the made devices; `notes` gets a line per device.
pub(super) fn create_spec_env(
    res: &mut Resources,
    sandbox: Option<&Sandbox>,
    disk_plans: &[disks::DiskPlan],
    cg_plans: &[cgtree::CgroupPlan],
    data: &Path,
    notes: &mut Vec<String>,
) -> Result<Vec<disks::MadeDisk>> {
    // A spec's devices (measured in the run's cgroup, which on cgroup v2
    // may hold processes only until its children exist), then its cgroups.
    let mut made_disks: Vec<disks::MadeDisk> = Vec::new();
    if !disk_plans.is_empty() {
        let sb = sandbox.ok_or_else(|| {
            HostError::new("internal: a spec with devices needs the run's cgroup")
        })?;
        for p in disk_plans {
            say(&format!(
                "making device `{}`: a loop device throttled to {:.1} MB/s write, {:.1} MB/s read; measuring it",
                p.name,
                p.write_bps as f64 / 1e6,
                p.read_bps as f64 / 1e6
            ));
            let m = disks::create_disk(
                &mut res.state,
                p,
                data,
                sb.version,
                &sb.dir,
                &sb.procs_files(),
            )?;
            fs::create_dir_all(m.mount.join("files"))
                .map_err(|e| HostError::io("cannot create", &m.mount, e))?;
            for (f, _) in &p.prefill {
                fs::rename(m.mount.join(f), m.mount.join("files").join(f))
                    .map_err(|e| HostError::io("cannot move", &m.mount.join(f), e))?;
            }
            say(&m.note());
            notes.push(m.note());
            made_disks.push(m);
        }
    }
    if !cg_plans.is_empty() {
        let sb = sandbox.ok_or_else(|| {
            HostError::new("internal: a spec with cgroups needs the run's cgroup")
        })?;
        cgtree::create_tree(&mut res.state, &sb.dir, sb.version, cg_plans)?;
        for p in cg_plans {
            say(&format!(
                "cgroup {} ({})",
                sb.dir.join(&p.rel).display(),
                if p.settings.is_empty() {
                    "no limits".to_string()
                } else {
                    p.settings
                        .iter()
                        .map(|(f, v)| format!("{f} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        }
    }
    Ok(made_disks)
}

/// The made devices in the record: a device each in `machine.devices`
/// (measured bandwidths), and their method, limits and measurements as
/// `device.NAME.*` parameters.
pub(super) fn record_disks(meta: &mut RunMeta, made_disks: &[disks::MadeDisk]) {
    for m in made_disks {
        meta.machine.devices.push(Device {
            name: m.name.clone(),
            layer: "blk-mq".into(),
            write_mb_s: m.measured.0,
            read_mb_s: m.measured.2,
            ..Device::default()
        });
        let k = |f: &str| format!("device.{}.{f}", m.name);
        meta.params.insert(k("loop"), m.dev.display().to_string());
        meta.params.insert(k("method"), m.method.clone());
        meta.params.insert(
            k("write_limit_mb_s"),
            format!("{:.1}", m.write_bps as f64 / 1e6),
        );
        meta.params.insert(
            k("read_limit_mb_s"),
            format!("{:.1}", m.read_bps as f64 / 1e6),
        );
        meta.params.insert(
            k("measured_direct_write_mb_s"),
            format!("{:.1}", m.measured.0),
        );
        meta.params.insert(
            k("measured_buffered_sync_write_mb_s"),
            format!("{:.1}", m.measured.1),
        );
        meta.params.insert(
            k("measured_direct_read_mb_s"),
            format!("{:.1}", m.measured.2),
        );
    }
}
