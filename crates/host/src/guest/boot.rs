//! One boot of a guest: its disks, its initramfs, qemu, and reading back
//! and labelling what it wrote. Called by [`super::run_guests`] for each
//! kernel and round; everything it creates lives in the run's temp dir, which
//! the caller logged to the state file.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::kernel_cache::{self, KernelFiles};
use super::machine::GuestMachine;
use super::qemu::{self, Accel, Disk, Ended, Vm};
use super::{image, job_for, results, say, Control, GuestOptions, GuestRun, CONTROL_DISK_BPS};
use crate::error::{HostError, Result};
use crate::state::{Entry, RunState};
use crate::sys;

/// The data disk's (sparse) size: room for the control's 1.5x-RAM file and stutterp's files.
pub(super) fn data_disk_bytes(guest_memory: u64) -> u64 {
    guest_memory * 4 + (2 << 30)
}

/// Makes an ext4 filesystem on `img`; `journal: false` leaves out the journal,
/// so that writers on a capped disk block in the VM (dirty limits, reclaim)
/// rather than behind jbd2 commits waiting on the same slow disk.
fn mkfs(img: &Path, journal: bool) -> Result<()> {
    let mut cmd = Command::new("mkfs.ext4");
    cmd.args(["-q", "-F"]);
    if !journal {
        cmd.args(["-O", "^has_journal"]);
    }
    let mk = cmd
        .arg(img)
        .output()
        .map_err(|e| HostError::new(format!("cannot run mkfs.ext4: {e}")))?;
    if !mk.status.success() {
        return Err(HostError::new(format!(
            "mkfs.ext4 {} failed: {}",
            img.display(),
            String::from_utf8_lossy(&mk.stderr).trim()
        )));
    }
    Ok(())
}

fn sparse(path: &Path, bytes: u64) -> Result<()> {
    let f = fs::File::create(path).map_err(|e| HostError::io("cannot create", path, e))?;
    f.set_len(bytes)
        .map_err(|e| HostError::io("cannot size", path, e))
}

/// The initramfs of one boot: base + kernel part (cached per release) + job.
fn initrd_for(
    cache: &Path,
    base: &Path,
    k: &KernelFiles,
    job: &image::Job,
    out: &Path,
) -> Result<()> {
    let kpart = cache.join(format!(
        "images/kernel-{}-{}.cpio.gz",
        k.release,
        image::files_key(std::slice::from_ref(&k.vmlinuz), &k.source)
    ));
    // Last use of each cached part, for pruning (guest::cache): a later
    // boot of this run reads them again.
    super::cache::touch(&kpart);
    super::cache::touch(base);
    if !kpart.is_file() {
        let mut mods = Vec::new();
        if let Some(md) = &k.modules {
            let idx = kernel_cache::module_index(md);
            let builtin = fs::read_to_string(md.join("modules.builtin")).unwrap_or_default();
            for m in ["virtio_pci", "virtio_blk", "ext4"] {
                let built_in = builtin.lines().any(|l| l.ends_with(&format!("/{m}.ko")));
                if !built_in && !idx.contains_key(m) {
                    return Err(HostError::with_fix(
                        format!(
                            "kernel {}: module {m} is neither built in nor in {}",
                            k.release,
                            md.display()
                        ),
                        "a kernel with virtio-blk and ext4 (built in or as modules)",
                    ));
                }
            }
            let deps = |p: &Path| {
                fs::read(p)
                    .map(|b| kernel_cache::modinfo_depends(&b))
                    .unwrap_or_default()
            };
            let order = kernel_cache::load_order(
                &[
                    "virtio_pci",
                    "virtio_blk",
                    "crc32c_generic",
                    "crc32c_intel",
                    "ext4",
                ],
                &[],
                &idx,
                &deps,
            )
            .map_err(HostError::new)?;
            for p in order {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                mods.push((
                    name,
                    fs::read(&p).map_err(|e| HostError::io("cannot read", &p, e))?,
                ));
            }
        }
        let config = k.config.as_ref().and_then(|c| fs::read(c).ok());
        let gz = image::gzip(&image::cpio_newc(&image::kernel_entries(
            &k.release,
            config.as_deref(),
            &mods,
        )));
        fs::write(&kpart, gz).map_err(|e| HostError::io("cannot write", &kpart, e))?;
    }
    let mut bytes = fs::read(base).map_err(|e| HostError::io("cannot read", base, e))?;
    bytes.extend(fs::read(&kpart).map_err(|e| HostError::io("cannot read", &kpart, e))?);
    let job_entries = vec![image::CpioEntry::File(
        "job.sh".into(),
        0o755,
        image::job_script(job).into_bytes(),
    )];
    bytes.extend(image::gzip(&image::cpio_newc(&job_entries)));
    fs::write(out, bytes).map_err(|e| HostError::io("cannot write", out, e))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn boot_one(
    opts: &GuestOptions,
    qemu_bin: &Path,
    accel: Accel,
    k: &KernelFiles,
    name: &str,
    base: &Path,
    tools: &Path,
    tmp: &Path,
    out: &Path,
    spec_text: Option<&str>,
    st: &mut RunState,
    stop: &AtomicBool,
) -> Result<Option<GuestRun>> {
    let file_name = name.replace('#', "-r");
    let job = job_for(opts, name, spec_text);
    let initrd = tmp.join("initrd.gz");
    initrd_for(&opts.cache_dir, base, k, &job, &initrd)?;
    let data = tmp.join("data.img");
    sparse(&data, data_disk_bytes(opts.guest_memory))?;
    mkfs(&data, true)?;
    let ctl = tmp.join("control.img");
    if opts.control != Control::None {
        sparse(&ctl, 6 << 30)?;
        mkfs(&ctl, false)?;
    }
    let swap = tmp.join("swap.img");
    sparse(&swap, opts.guest_memory)?;
    let res = tmp.join("results.img");
    sparse(&res, 1 << 30)?;
    let console = out.join(format!("{file_name}.console.log"));
    let mut vm = Vm {
        kernel: k.vmlinuz.clone(),
        initrd,
        memory_mib: opts.guest_memory >> 20,
        cpus: opts.cpus,
        accel,
        disks: vec![
            Disk {
                image: tools.to_path_buf(),
                serial: "tools".into(),
                bps: None,
                readonly: true,
            },
            Disk {
                image: data,
                serial: "data".into(),
                bps: Some(opts.disk_mb_s * 1_000_000),
                readonly: false,
            },
            Disk {
                image: swap,
                serial: "swap".into(),
                bps: None,
                readonly: false,
            },
            Disk {
                image: res.clone(),
                serial: "results".into(),
                bps: None,
                readonly: false,
            },
        ],
        console: console.clone(),
        cmdline: opts
            .thp
            .iter()
            .map(|m| format!("transparent_hugepage={m}"))
            .chain(opts.kernel_profile.then(|| "profile=2".to_string()))
            .collect(),
    };
    if opts.control != Control::None {
        vm.disks.push(Disk {
            image: ctl,
            serial: "ctl".into(),
            bps: Some(CONTROL_DISK_BPS),
            readonly: false,
        });
    }
    say(&format!(
        "booting {name}: {} ({}), {} MiB, {} vCPUs, {} (console {})",
        k.release,
        k.source,
        vm.memory_mib,
        vm.cpus,
        accel.as_str(),
        console.display()
    ));
    let t0 = Instant::now();
    let mut running = qemu::start(qemu_bin, &vm)?;
    st.log(Entry::Process(
        running.pid,
        sys::pid_start_time(running.pid),
    ))?;
    let steps = 2u64;
    let budget = opts.boot_timeout_s
        + 120
        + if opts.control != Control::None {
            40 + 120
        } else {
            0
        }
        + steps * (opts.duration_s + 10) * 2
        + 300;
    let (ended, boot_s, to_workload_s) = qemu::watch(
        &mut running,
        &console,
        Duration::from_secs(opts.boot_timeout_s),
        Duration::from_secs(budget),
        stop,
    );
    drop(running);
    let wall_s = t0.elapsed().as_secs_f64();
    match ended {
        Ended::Done => {}
        Ended::Stopped => return Ok(None),
        Ended::NoBoot => {
            return Err(HostError::with_fix(
                format!("{name} ({}) did not reach its /init within {} s; console log kept: {}", k.release, opts.boot_timeout_s, console.display()),
                "read the console log; a slow host needs --boot-timeout 600; a kernel of your own needs virtio, serial 8250 and initramfs support",
            ))
        }
        Ended::Timeout => {
            return Err(HostError::with_fix(
                format!("{name}: the guest's job did not finish within {budget} s; console log kept: {}", console.display()),
                "a shorter --duration, or fewer stutterp.workers",
            ))
        }
        Ended::Exited(why) => {
            return Err(HostError::with_fix(
                format!("{name}: qemu ended before the job finished ({why}); console log kept: {}", console.display()),
                "read the console log (an OOM kill or a panic in the guest shows there)",
            ))
        }
    }
    let unpack = tmp.join("results");
    let _ = fs::remove_dir_all(&unpack);
    fs::create_dir_all(&unpack).map_err(|e| HostError::io("cannot create", &unpack, e))?;
    let t = Command::new("tar")
        .arg("-xf")
        .arg(&res)
        .arg("-C")
        .arg(&unpack)
        .output()
        .map_err(|e| HostError::new(format!("cannot run tar: {e}")))?;
    if !t.status.success() {
        return Err(HostError::with_fix(
            format!(
                "{name}: the results disk holds no tar ({}); console log: {}",
                String::from_utf8_lossy(&t.stderr).trim(),
                console.display()
            ),
            "read the console log: the guest's job failed before writing its results",
        ));
    }
    let facts =
        results::parse_facts(&fs::read_to_string(unpack.join("facts.txt")).unwrap_or_default());
    for log in ["control.log", "workload.log"] {
        let _ = fs::copy(unpack.join(log), out.join(format!("{file_name}.{log}")));
    }
    if opts.kernel_profile {
        let table = match (
            fs::read(unpack.join("profile.bin")),
            fs::read_to_string(unpack.join("kallsyms.txt")),
        ) {
            (Ok(p), Ok(k)) => super::profile::profile_table(&p, &k, 200),
            _ => {
                Err("the guest wrote no /proc/profile (a kernel without CONFIG_PROFILING?)".into())
            }
        };
        let dst = out.join(format!("{file_name}.profile.txt"));
        match table {
            Ok(t) => match fs::write(&dst, t) {
                Ok(()) => eprintln!(
                    "reclaimlab run: {name}: the kernel's profile of the workload: {}",
                    dst.display()
                ),
                Err(e) => eprintln!(
                    "reclaimlab run: warning: {name}: cannot write {}: {e}",
                    dst.display()
                ),
            },
            Err(e) => eprintln!("reclaimlab run: warning: {name}: no kernel profile: {e}"),
        }
    }
    facts.check_tracepoints(&k.spec.label())?;
    let requested = crate::tracefs::requested_events(
        opts.sets
            .iter()
            .rev()
            .find(|(s, _)| s == "capture.events")
            .map_or("default", |(_, v)| v.as_str()),
    );
    let missing = facts.missing_events(&requested);
    let missing_note = missing.describe(&facts.release);
    if let Some(n) = &missing_note {
        say(&format!("{name}: {n}"));
    }
    let wrec = unpack.join("workload");
    let crec = unpack.join("control");
    let (machine, boot_memory_note) = with_boot_memory(guest_machine(opts, &facts), &wrec);
    let mut params = BTreeMap::new();
    params.insert("guest.machine".to_string(), machine.to_arg());
    params.insert("guest.events_missing".to_string(), missing.param());
    params.insert(
        "guest.cpu_slowdown".to_string(),
        super::machine::fmt_factor(machine.cpu_slowdown),
    );
    for (k, v) in &facts.costs {
        params.insert(format!("guest.cpu.{k}"), format!("{v:.1}"));
    }
    params.insert("guest.accel".to_string(), accel.as_str().to_string());
    params.insert("guest.kernel_source".to_string(), k.source.clone());
    params.insert(
        "guest.memory_mib".to_string(),
        (opts.guest_memory >> 20).to_string(),
    );
    params.insert("guest.vcpus".to_string(), opts.cpus.to_string());
    params.insert(
        "guest.disk_bps".to_string(),
        (opts.disk_mb_s * 1_000_000).to_string(),
    );
    params.insert("guest.lru_gen".to_string(), facts.lru_gen.clone());
    params.insert(
        "guest.thp".to_string(),
        opts.thp.clone().unwrap_or_else(|| "kernel default".into()),
    );
    let mut control = None;
    let mut notes = vec![format!(
        "guest: {} booted under qemu {} ({} MiB, {} vCPUs, data disk capped at {} MB/s){}",
        k.release,
        accel.as_str(),
        opts.guest_memory >> 20,
        opts.cpus,
        opts.disk_mb_s,
        if accel == Accel::Tcg {
            "; TCG: the CPU is many times slower than the host's while timeouts are wall-clock"
        } else {
            ""
        }
    )];
    notes.push(match facts.costs.is_empty() {
        false => format!(
            "guest CPU: {}x slower than the simulator's cost.* defaults (median of {}); simulate this guest with `sim --machine {}`",
            super::machine::fmt_factor(machine.cpu_slowdown),
            facts
                .costs
                .iter()
                .filter(|(k, _)| crate::cpu_probe::REFERENCE.iter().any(|(n, _, _)| n == k))
                .map(|(k, v)| format!("{k} {v:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            machine.to_arg()
        ),
        true => format!(
            "guest CPU: not measured (no cost lines in facts.txt); `sim --machine {}` assumes the simulator's own CPU speed",
            machine.to_arg()
        ),
    });
    if let (Some((_, cycle)), Some(swapout)) = (
        facts.costs.iter().find(|(k, _)| k == "swap_cycle_ns"),
        machine.swapout_ns,
    ) {
        notes.push(format!(
            "guest swap cycle: {:.0} µs of system time per page swapped in and another reclaimed to swap \
             (the probe, in an 8 MiB cgroup), less the probe's base for the fault, scan, free and submissions at this \
             slowdown, {:.0} µs: swapout-ns={swapout} (sim sets cost.swapout_page_ns to the cycle less its present costs of the rest)",
            cycle / 1000.0,
            crate::cpu_probe::SWAP_CYCLE_BASE_NS * machine.cpu_slowdown / 1000.0
        ));
    }
    if let (Some(l), Some(b)) = (machine.swap_lat_us, machine.swap_mb_s) {
        let bw = if b >= 100_000.0 {
            "a transfer too fast to tell from it (64 KiB took no longer than 4 KiB)".to_string()
        } else {
            format!("{b} MB/s")
        };
        notes.push(format!(
            "guest swap disk: {l} µs a read request, {bw} (O_DIRECT reads of the swap area, one at a time, \
             4 and 64 KiB, best of 3; the machine's vdc: swap-lat-us=, swap-mb-s=)"
        ));
    }
    notes.extend(boot_memory_note);
    notes.extend(missing_note.clone());
    let machine_name = machine.to_arg();
    if opts.control != Control::None {
        if crec.join("run.json").is_file() {
            let ev = results::record_throttle_events(&crec);
            notes.push(format!(
                "positive control ({}-control): throttling events {}",
                file_name,
                results::describe_counts(&ev)
            ));
            let dst = out.join(format!("{file_name}-control"));
            // The control ran in its own cgroup (or the whole guest), not
            // in the workload's: its machine says so.
            let cm = with_boot_memory(control_machine(&machine, opts.control), &crec)
                .0
                .to_arg();
            let mut cparams = params.clone();
            cparams.insert("guest.machine".to_string(), cm.clone());
            move_record(
                &crec,
                &dst,
                &format!("{name} control"),
                &cparams,
                &Vec::from_iter(missing_note.clone()),
                &cm,
            )?;
            control = Some((dst, ev));
        } else {
            notes.push(format!(
                "positive control: no record (exit {:?}); see {file_name}.control.log",
                facts.control_exit
            ));
        }
    }
    if !wrec.join("run.json").is_file() {
        return Err(HostError::with_fix(
            format!(
                "{name}: the guest's workload wrote no record (exit {:?}); its log: {}",
                facts.workload_exit,
                out.join(format!("{file_name}.workload.log")).display()
            ),
            "read that log and the console log",
        ));
    }
    let events = results::record_throttle_events(&wrec);
    let dst = out.join(&file_name);
    move_record(&wrec, &dst, name, &params, &notes, &machine_name)?;
    say(&format!(
        "{name}: done in {wall_s:.0} s (boot {:.1} s, workload from {:.1} s); throttling: control {}, workload {}",
        boot_s.unwrap_or(0.0),
        to_workload_s.unwrap_or(0.0),
        control.as_ref().map(|(_, e)| results::describe_counts(e)).unwrap_or_else(|| "not run".into()),
        results::describe_counts(&events)
    ));
    Ok(Some(GuestRun {
        name: name.into(),
        kernel: k.clone(),
        record: dst,
        control,
        events,
        facts,
        machine,
        missing,
        boot_s,
        to_workload_s,
        wall_s,
        console,
    }))
}

/// The machine this boot was, for `sim --machine`: the options' sizes and
/// the CPU slowdown the guest measured (1 if it measured nothing), rounded
/// as the `guest:…` string spells it.
pub(super) fn guest_machine(opts: &GuestOptions, facts: &results::Facts) -> GuestMachine {
    let slowdown = crate::cpu_probe::slowdown(&facts.costs)
        .map(|f| f.clamp(0.1, super::machine::MAX_SLOWDOWN))
        .unwrap_or(1.0);
    let cpu_slowdown = super::machine::fmt_factor(slowdown).parse().unwrap_or(1.0);
    // The swap cycle the guest measured, less what the simulator charges
    // for the rest of it at this slowdown: the swap-out's own cost there.
    let swapout_ns = facts
        .costs
        .iter()
        .find(|(k, _)| k == "swap_cycle_ns")
        .map(|(_, v)| {
            let rest = crate::cpu_probe::SWAP_CYCLE_BASE_NS * cpu_slowdown;
            ((v - rest).max(0.0).round() as u64).min(super::machine::MAX_SWAPOUT_NS)
        });
    // The swap disk's read latency and bandwidth the guest measured
    // (cpu_probe::swap_read_latency), rounded as the string spells them.
    let cost = |k: &str| facts.costs.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    // A transfer lost in the noise leaves the bandwidth at the largest a
    // machine takes: every request costs its latency only.
    let (swap_lat_us, swap_mb_s) = match (cost("swap_read_4k_ns"), cost("swap_read_64k_ns")) {
        (Some(t4), Some(t64)) => {
            let (lat, bw) = crate::cpu_probe::read_latency_bandwidth(t4, t64);
            let mb_s = bw.map_or(100_000.0, |b| (b / 1e6).round().clamp(1.0, 100_000.0));
            let lat_us = ((lat / 100.0).round() / 10.0).min(super::machine::MAX_SWAP_LAT_US);
            (Some(lat_us), Some(mb_s))
        }
        _ => (None, None),
    };
    let mut m = GuestMachine {
        memory: opts.guest_memory,
        cpus: opts.cpus,
        disk_mb_s: opts.disk_mb_s,
        swap: opts.guest_memory,
        cgroup: opts.memory,
        cpu_slowdown,
        swapout_ns,
        // Set below, as measured.
        reclaim_ns: None,
        swapin_ns: None,
        switch_ns: None,
        swap_lat_us,
        swap_mb_s,
        // Set from the workload's record once it is back (with_boot_memory).
        mem_total_kb: None,
        boot_used_kb: None,
        slab_kb: None,
        // Likewise: the guest kernel's own thp.enabled (with_boot_memory).
        thp: None,
    };
    // The halves of the swap cycle and a context switch, as measured.
    m.fill_probe_figures(cost);
    m
}

/// The guest's machine with the kernel's own memory as its record `rec`
/// shows it (MemTotal, and MemTotal less the first vmstat sample's free
/// pages: `memtotal-kb=`, `boot-used-kb=`), and a note when the record
/// cannot give it (the machine is then left without them).
pub(super) fn with_boot_memory(m: GuestMachine, rec: &Path) -> (GuestMachine, Option<String>) {
    if !rec.join("run.json").is_file() {
        return (m, None);
    }
    let m = GuestMachine {
        thp: super::machine::record_thp(rec),
        ..m
    };
    match super::machine::record_boot_memory(rec) {
        Ok(Some((total, used))) => match m.with_boot_memory(total, used) {
            Some(g) => (super::machine::with_record_slab(g, rec), None),
            None => (
                m,
                Some(format!("guest memory: MemTotal {total} KiB with {used} KiB in use at the first vmstat sample is out of range; the machine string leaves them out (sim: all RAM managed and free)")),
            ),
        },
        Ok(None) => (
            m,
            Some("guest memory: no MemTotal or no vmstat.csv in the record; the machine string leaves memtotal-kb= and boot-used-kb= out".into()),
        ),
        Err(e) => (m, Some(format!("guest memory: {e}"))),
    }
}

/// The machine the positive control ran on: the guest, with the control's
/// cgroup ([`Control::Cgroup`]: 256 MiB) or none ([`Control::Global`]).
pub(super) fn control_machine(m: &GuestMachine, control: Control) -> GuestMachine {
    GuestMachine {
        cgroup: (control == Control::Cgroup).then_some(256 << 20),
        ..m.clone()
    }
}

fn move_record(
    src: &Path,
    dst: &Path,
    name: &str,
    params: &BTreeMap<String, String>,
    notes: &[String],
    machine_name: &str,
) -> Result<()> {
    let rj = src.join("run.json");
    let text = fs::read_to_string(&rj).map_err(|e| HostError::io("cannot read", &rj, e))?;
    let new = results::label_run_json(&text, name, params, notes, machine_name)
        .map_err(|e| HostError::new(format!("{}: {e}", rj.display())))?;
    fs::write(&rj, new).map_err(|e| HostError::io("cannot write", &rj, e))?;
    // The unpack dir and the output may be on different filesystems: copy.
    fs::create_dir_all(dst).map_err(|e| HostError::io("cannot create", dst, e))?;
    for e in fs::read_dir(src)
        .map_err(|e| HostError::io("cannot read", src, e))?
        .flatten()
    {
        if e.path().is_file() {
            let to = dst.join(e.file_name());
            fs::copy(e.path(), &to).map_err(|err| HostError::io("cannot copy to", &to, err))?;
        }
    }
    Ok(())
}
