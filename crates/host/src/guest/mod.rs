//! `reclaimlab run --kernel …`: a workload on real kernels booted in qemu guests.
//!
//! The second real-kernel backend (the first is the host cgroup runner). Each
//! guest runs this very binary's `reclaimlab run` inside it, so the record is
//! made by the same runner code (tracefs capture, vmstat sampling, workers,
//! fio) as on a host; this module only boots, feeds and collects:
//! 1. check the host (qemu, tools, memory, disk) before creating anything;
//! 2. fetch and cache the kernels ([`kernel_cache`]), build and cache the
//!    initramfs and tools disk ([`image`]);
//! 3. per boot (kernels alternated across rounds, one guest at a time): fresh
//!    sparse data, swap and results disks in `/var/tmp/reclaimlab-PID` (logged
//!    to the state file), qemu `nice`d and logged, the console watched with a
//!    boot limit and a run limit ([`qemu`]); the guest runs a positive
//!    control and the workload and writes a tar of its records onto the raw
//!    results disk, which is read back and labelled ([`results`]);
//! 4. everything undone on the end, an error or a signal (the state file's undo).

mod boot;
pub mod cache;
pub mod image;
pub mod kernel_cache;
pub mod machine;
pub mod profile;
pub mod qemu;
pub mod results;
pub mod spec;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{human_bytes, HostError, Result};
use crate::state::{self, Entry, RunState};
use crate::sys;
use boot::{boot_one, data_disk_bytes};
use kernel_cache::KernelFiles;
use qemu::Accel;
use spec::KernelSpec;

/// Everything a guest run was asked to do.
#[derive(Debug, Clone)]
pub struct GuestOptions {
    /// `stutterp` or a workload spec file.
    pub workload: String,
    /// The kernels, in order.
    pub kernels: Vec<KernelSpec>,
    /// Guest RAM, bytes.
    pub guest_memory: u64,
    /// vCPUs.
    pub cpus: u32,
    /// A cgroup v2 limit inside the guest (limit reclaim); None: global reclaim.
    pub memory: Option<u64>,
    /// Rounds over the kernels.
    pub repeat: u32,
    /// `--set` pairs passed to the guest's `reclaimlab run`.
    pub sets: Vec<(String, String)>,
    /// Seconds per workload step (`run` sets [`default_duration_s`] when
    /// `--duration` is not given).
    pub duration_s: u64,
    /// The data disk's bandwidth cap, MB/s (qemu `throttling.bps-total`).
    pub disk_mb_s: u64,
    /// The positive control before the workload.
    pub control: Control,
    /// Output directory (default `./guest-<workload>-<unix time>`).
    pub out: Option<PathBuf>,
    /// Kernel and image cache.
    pub cache_dir: PathBuf,
    /// Update the apt package lists even if cached.
    pub refresh: bool,
    /// Tools images kept in the cache after this run's (the most recently
    /// used, this run's own among them); 0: no pruning ([`cache`]).
    pub cache_keep: usize,
    /// Seconds to wait for the guest's `/init`.
    pub boot_timeout_s: u64,
    /// `transparent_hugepage=` on the guest kernel's command line
    /// (`never`, `madvise`, `always`); None: the kernel's default.
    pub thp: Option<String>,
    /// Boot with `profile=2` and write the kernel's profile of the
    /// workload as `NAME.profile.txt` ([`profile`]).
    pub kernel_profile: bool,
    /// This binary, copied into the guest.
    pub exe: PathBuf,
    /// State files (default [`state::STATE_DIR`]).
    pub state_dir: PathBuf,
}

impl GuestOptions {
    /// Defaults for `workload` on `kernels`.
    pub fn new(workload: &str, kernels: Vec<KernelSpec>, exe: PathBuf) -> GuestOptions {
        GuestOptions {
            workload: workload.into(),
            kernels,
            guest_memory: 2 << 30,
            cpus: 2,
            memory: None,
            repeat: 1,
            sets: Vec::new(),
            duration_s: 30,
            disk_mb_s: 16,
            control: Control::Cgroup,
            out: None,
            cache_dir: kernel_cache::default_cache_dir(),
            refresh: false,
            cache_keep: cache::DEFAULT_KEEP_IMAGES,
            boot_timeout_s: 300,
            thp: None,
            kernel_profile: false,
            exe,
            state_dir: PathBuf::from(state::STATE_DIR),
        }
    }
}

/// One boot's results.
#[derive(Debug, Clone)]
pub struct GuestRun {
    /// `debian-5.10` (plus `#N` for rounds after the first).
    pub name: String,
    /// The kernel booted.
    pub kernel: KernelFiles,
    /// The workload's record.
    pub record: PathBuf,
    /// The positive control's record and its throttling events.
    pub control: Option<(PathBuf, BTreeMap<String, u64>)>,
    /// The workload's throttling events.
    pub events: BTreeMap<String, u64>,
    /// The guest's facts.
    pub facts: results::Facts,
    /// The guest as a simulator machine (`sim --machine` of `machine.to_arg()`).
    pub machine: machine::GuestMachine,
    /// Tracepoints the run asked for that the guest kernel lacks.
    pub missing: results::MissingEvents,
    /// Seconds from qemu's start to `/init`, and to the workload's start.
    pub boot_s: Option<f64>,
    /// See `boot_s`.
    pub to_workload_s: Option<f64>,
    /// Wall seconds of the boot.
    pub wall_s: f64,
    /// The console log.
    pub console: PathBuf,
}

/// What a guest run produced.
#[derive(Debug, Clone)]
pub struct GuestOutcome {
    /// The output directory.
    pub out: PathBuf,
    /// One per boot, in boot order.
    pub runs: Vec<GuestRun>,
    /// The accelerator used.
    pub accel: Accel,
    /// Seconds spent fetching kernels and building images before the first boot.
    pub prepare_s: f64,
    /// Whether a signal cut it short.
    pub interrupted: bool,
}

fn say(msg: &str) {
    eprintln!("reclaimlab run: {msg}");
}

/// The positive control (`Control::Cgroup`): in a memory cgroup of 256 MiB
/// (the runner's minimum) beside an anon hog of 176 MiB, two sequential
/// buffered writers of 1 GiB on their own disk capped at [`CONTROL_DISK_BPS`]
/// (slower than a TCG guest can dirty pages), with the dirty limit raised so
/// the cgroup's LRU fills with dirty and writeback pages. That is the state
/// both generations throttle limit reclaim on: `shrink_node` marks the lruvec
/// congested when every dirty page it met was under writeback for reclaim
/// (`nr_dirty == nr_congested`), and then a direct reclaimer waits:
/// `wait_iff_congested` in 5.10, `reclaim_throttle(VMSCAN_THROTTLE_CONGESTED)`
/// in 6.1 (mm/vmscan.c, both versions); 6.1 also throttles on
/// `VMSCAN_THROTTLE_WRITEBACK` from kswapd and `ISOLATED` from `too_many_isolated`.
pub fn control_spec(kind: Control, guest_memory: u64) -> String {
    let (file_mib, hog_mib) = match kind {
        Control::Cgroup => (1024, 176),
        // Global: a hog of 60% of RAM, so that the writer's dirty pages reach
        // the LRU tail within seconds even on a TCG guest's slow CPU.
        _ => (3072, (guest_memory >> 20) * 6 / 10),
    };
    format!(
        "name = \"positive-control\"\nduration_s = 35\nwarmup_s = 3\n\n\
         [[worker]]\nkind = \"file-writer\"\ncount = 2\nfiles = 1\nfile_mib = {file_mib}\nblock_kib = 1024\npattern = \"sequential\"\n\n\
         [[worker]]\nkind = \"anon-hog\"\ncount = 1\nsize_mib = {hog_mib}\n\n\
         [[worker]]\nkind = \"mmap-latency\"\npages = 2048\n"
    )
}

/// Which positive control runs before the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// None.
    None,
    /// Limit reclaim in a 256 MiB cgroup v2.
    Cgroup,
    /// Global reclaim (kswapd and direct) of the whole guest.
    Global,
}

/// The bandwidth cap of the control's disk, bytes/s.
pub const CONTROL_DISK_BPS: u64 = 2_000_000;

/// The guest job for `opts`: the control's and the workload's `reclaimlab run` arguments.
pub fn job_for(opts: &GuestOptions, name: &str, spec_text: Option<&str>) -> image::Job {
    let mut w: Vec<String> = vec!["run".into()];
    w.push(if spec_text.is_some() {
        "/workload.toml".into()
    } else {
        opts.workload.clone()
    });
    match opts.memory {
        Some(m) => w.extend([
            "--scope".into(),
            "cgroup".into(),
            "--memory".into(),
            format!("{}M", m >> 20),
        ]),
        None => w.extend(["--scope", "host", "--yes-i-own-this-host"].map(String::from)),
    }
    w.extend(["--data-dir", "/data", "--out", "/out/workload", "--name"].map(String::from));
    w.push(name.into());
    w.extend(["--duration".into(), opts.duration_s.to_string()]);
    let has = |k: &str| opts.sets.iter().any(|(s, _)| s == k);
    if spec_text.is_none() {
        if !has("stutterp.workers") {
            w.extend(["--set".into(), "stutterp.workers=2".into()]);
        }
        if !has("stutterp.warmup_s") {
            w.extend(["--set".into(), "stutterp.warmup_s=5".into()]);
        }
    }
    for (k, v) in &opts.sets {
        w.extend(["--set".into(), format!("{k}={v}")]);
    }
    let mut control_spec_text = String::new();
    let mut c = Vec::new();
    if opts.control != Control::None {
        control_spec_text = control_spec(opts.control, opts.guest_memory);
        c = [
            "run",
            "/control.toml",
            "--data-dir",
            "/ctl",
            "--out",
            "/out/control",
            "--name",
        ]
        .map(String::from)
        .to_vec();
        let scope: &[&str] = match opts.control {
            Control::Cgroup => &["--scope", "cgroup", "--memory", "256M"],
            _ => &["--scope", "host", "--yes-i-own-this-host"],
        };
        c.splice(2..2, scope.iter().map(|s| s.to_string()));
        c.push(format!("{name} control"));
    }
    // The tracepoints asked for, as the runner will read them.
    let asked = opts
        .sets
        .iter()
        .rev()
        .find(|(s, _)| s == "capture.events")
        .map_or("default", |(_, v)| v.as_str());
    let extra_events = crate::tracefs::requested_events(asked)
        .into_iter()
        .filter(|e| !crate::tracefs::RELEVANT_EVENTS.contains(&e.as_str()))
        .collect();
    image::Job {
        extra_events,
        control_args: c,
        control_spec: control_spec_text,
        workload_args: w,
        // A dirty limit far above the cgroup's size (vm.dirty_bytes, scaled by
        // the cgroup's share of memory in `domain_dirty_limits`) lets the
        // writer fill the cgroup's LRU with dirty pages instead of being held
        // in balance_dirty_pages; a low background ratio keeps writeback going.
        control_sysctls: vec![
            ("vm.dirty_ratio".into(), "20".into()),
            ("vm.dirty_background_ratio".into(), "5".into()),
            ("vm.dirty_bytes".into(), "8589934592".into()),
        ],
        workload_spec: spec_text.map(|t| {
            let mut t = t.to_string();
            if !t.ends_with('\n') {
                t.push('\n');
            }
            t
        }),
    }
}

fn need_tool(name: &str, fix: &str) -> Result<PathBuf> {
    sys::which(name).ok_or_else(|| {
        HostError::with_fix(
            format!("{name} not found on PATH: a guest run needs it"),
            fix,
        )
    })
}

/// Checks the host before anything is created; returns the qemu binary.
fn preflight(opts: &GuestOptions, data_parent: &Path) -> Result<PathBuf> {
    let qemu = need_tool("qemu-system-x86_64", "apt-get install -y qemu-system-x86")?;
    need_tool("tar", "apt-get install -y tar")?;
    need_tool("nice", "apt-get install -y coreutils")?;
    need_tool("mkfs.ext4", "apt-get install -y e2fsprogs")?;
    if opts.guest_memory < 768 << 20 {
        return Err(HostError::with_fix(
            format!(
                "--guest-memory {}: too small for a guest that runs stutterp",
                human_bytes(opts.guest_memory)
            ),
            "--guest-memory 2G (at least 768M)",
        ));
    }
    if let Some(m) = opts.memory {
        if m < 256 << 20 || m > opts.guest_memory / 10 * 8 {
            return Err(HostError::with_fix(
                format!("--memory {}: the cgroup limit inside the guest must be 256M..80% of --guest-memory ({})", human_bytes(m), human_bytes(opts.guest_memory)),
                format!("--memory {}M", (opts.guest_memory >> 20) / 2),
            ));
        }
    }
    let avail = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| sys::meminfo_bytes(&t, "MemAvailable"))
        .unwrap_or(u64::MAX);
    if avail < opts.guest_memory + (512 << 20) {
        return Err(HostError::with_fix(
            format!(
                "this host has {} available; a guest of {} needs that plus 512 MiB for qemu",
                human_bytes(avail),
                human_bytes(opts.guest_memory)
            ),
            format!(
                "--guest-memory {}M, or free memory on the host",
                (avail.saturating_sub(512 << 20) >> 20).max(768)
            ),
        ));
    }
    let need = data_disk_bytes(opts.guest_memory) + opts.guest_memory;
    if let Some(free) = crate::doctor::free_bytes(data_parent) {
        if free < need {
            return Err(HostError::with_fix(
                format!(
                    "{} has {} free; a guest's data and swap disks may grow to {}",
                    data_parent.display(),
                    human_bytes(free),
                    human_bytes(need)
                ),
                "free space under /var/tmp, or a smaller --guest-memory",
            ));
        }
    }
    workload_spec_text(&opts.workload)?;
    Ok(qemu)
}

/// The seconds a guest's workload step runs when `--duration` is not given:
/// a spec's own `duration_s` (for mapped-file-stream a cap its reader
/// normally ends well before), stutterp's 30 (TCG is slow). A spec that
/// cannot be read or parsed gets 30 here and its error from the run.
pub fn default_duration_s(workload: &str) -> u64 {
    const STUTTERP_S: u64 = 30;
    match workload_spec_text(workload) {
        Ok(Some(text)) => reclaimlab_workload::spec::Spec::parse(&text, workload)
            .map_or(STUTTERP_S, |s| s.duration_s.ceil().max(1.0) as u64),
        _ => STUTTERP_S,
    }
}

/// The spec text a guest's `/workload.toml` gets: `None` for stutterp, a
/// spec file's text, or a built-in spec's (`mapped-file-stream`, …), a file
/// of that name first, as `run` on the host takes it.
fn workload_spec_text(workload: &str) -> Result<Option<String>> {
    if workload == "stutterp" {
        return Ok(None);
    }
    let path = Path::new(workload);
    if path.is_file() {
        return fs::read_to_string(path)
            .map(Some)
            .map_err(|e| HostError::io("cannot read", path, e));
    }
    match reclaimlab_workload::spec::BUILTIN.iter().find(|b| b.0 == workload) {
        Some(b) => Ok(Some(b.2.to_string())),
        None => Err(HostError::with_fix(
            format!("workload `{workload}`: not stutterp, a built-in spec or a spec file"),
            "reclaimlab run stutterp --kernel …, a built-in spec or a workload spec file (reclaimlab list workloads)",
        )),
    }
}

/// Runs the workload on each kernel in a guest. See the module documentation.
pub fn run_guests(opts: &GuestOptions, stop: Arc<AtomicBool>) -> Result<GuestOutcome> {
    let data_parent = PathBuf::from("/var/tmp");
    let qemu_bin = preflight(opts, &data_parent)?;
    let spec_text = workload_spec_text(&opts.workload)?;
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let kvm_opens = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let accel = qemu::detect_accel(&cpuinfo, kvm_opens);
    let (cleaned, _) = state::clean_leftovers(&opts.state_dir);
    for c in cleaned {
        say(&c);
    }
    let t_prep = Instant::now();
    let mut kernels = Vec::new();
    for k in &opts.kernels {
        kernels.push(kernel_cache::prepare(k, &opts.cache_dir, opts.refresh)?);
    }
    let (base, tools) = image::base_and_tools(&opts.cache_dir, &opts.exe)?;
    let prepare_s = t_prep.elapsed().as_secs_f64();
    if opts.cache_keep > 0 {
        let mut keep = vec![base.clone(), tools.clone()];
        keep.extend(kernels.iter().map(|k| k.vmlinuz.clone()));
        if let Some(msg) = cache::auto_prune(&opts.cache_dir, opts.cache_keep, keep) {
            say(&msg);
        }
    }
    let out = opts.out.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from(format!("guest-stutterp-{secs}"))
    });
    if out.exists()
        && fs::read_dir(&out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(HostError::with_fix(
            format!("--out {}: exists and is not empty", out.display()),
            "choose another --out, or remove it",
        ));
    }
    fs::create_dir_all(&out).map_err(|e| HostError::io("cannot create", &out, e))?;

    let mut st = RunState::create_in(&opts.state_dir)?;
    let tmp = data_parent.join(format!("{}{}", state::PREFIX, std::process::id()));
    let result = (|| -> Result<(Vec<GuestRun>, bool)> {
        st.log(Entry::DataDir(tmp.clone()))?;
        fs::create_dir_all(&tmp).map_err(|e| HostError::io("cannot create", &tmp, e))?;
        let mut runs = Vec::new();
        for (round, ki) in spec::boot_order(kernels.len(), opts.repeat) {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok((runs, true));
            }
            let k = &kernels[ki];
            let name = if round == 0 {
                k.spec.label()
            } else {
                format!("{}#{}", k.spec.label(), round + 1)
            };
            let r = boot_one(
                opts,
                &qemu_bin,
                accel,
                k,
                &name,
                &base,
                &tools,
                &tmp,
                &out,
                spec_text.as_deref(),
                &mut st,
                &stop,
            )?;
            match r {
                Some(run) => runs.push(run),
                None => return Ok((runs, true)),
            }
        }
        Ok((runs, false))
    })();
    let errs = st.undo_all();
    for e in &errs {
        say(&format!("clean-up: {e}"));
    }
    let (runs, interrupted) = result?;
    Ok(GuestOutcome {
        out,
        runs,
        accel,
        prepare_s,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// stutterp needs no spec; a built-in name gives its text; a name that
    /// is neither a built-in nor a file is refused, naming both.
    #[test]
    fn guest_workloads_take_builtin_specs() {
        assert_eq!(workload_spec_text("stutterp").unwrap(), None);
        let t = workload_spec_text("mapped-file-stream").unwrap().unwrap();
        assert_eq!(
            default_duration_s("mapped-file-stream"),
            600,
            "the spec's own cap"
        );
        assert_eq!(default_duration_s("stutterp"), 30);
        assert!(t.contains("kind = \"mmap-file-reader\""), "{t}");
        let e = workload_spec_text("no-such-workload")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not stutterp, a built-in spec or a spec file"),
            "{e}"
        );
    }

    #[test]
    fn job_arguments_follow_the_options() {
        let mut o = GuestOptions::new("stutterp", vec![], "/x".into());
        o.sets = vec![("stutterp.readers".into(), "0".into())];
        let j = job_for(&o, "debian-5.10", None);
        let w = j.workload_args.join(" ");
        assert!(w.starts_with("run stutterp --scope host --yes-i-own-this-host --data-dir /data --out /out/workload --name debian-5.10 --duration 30"), "{w}");
        assert!(
            w.contains(
                "--set stutterp.workers=2 --set stutterp.warmup_s=5 --set stutterp.readers=0"
            ),
            "{w}"
        );
        assert_eq!(j.control_args[1], "/control.toml");
        assert!(
            j.control_spec.contains("file_mib = 1024")
                && j.control_args
                    .join(" ")
                    .contains("--scope cgroup --memory 256M --data-dir /ctl"),
            "{}",
            j.control_spec
        );
        o.memory = Some(512 << 20);
        o.control = Control::None;
        o.sets = vec![("stutterp.workers".into(), "4".into())];
        let j = job_for(&o, "n", None);
        let w = j.workload_args.join(" ");
        assert!(w.contains("--scope cgroup --memory 512M"), "{w}");
        assert!(!w.contains("stutterp.workers=2"), "{w}");
        assert!(j.control_args.is_empty());
        assert!(
            j.extra_events.is_empty(),
            "the default events need no extra probe"
        );
        // Tracepoints asked for beyond the runner's list are probed too.
        o.sets = vec![(
            "capture.events".into(),
            "vmscan:mm_vmscan_throttled,vmscan:mm_shrink_slab_start".into(),
        )];
        let j = job_for(&o, "n", None);
        assert_eq!(
            j.extra_events,
            vec!["vmscan:mm_shrink_slab_start".to_string()]
        );
    }

    #[test]
    fn a_boot_names_its_machine_with_the_measured_slowdown() {
        let mut o = GuestOptions::new("stutterp", vec![], "/x".into());
        o.guest_memory = 1 << 30;
        o.memory = Some(512 << 20);
        o.disk_mb_s = 2;
        let f = results::parse_facts(
            "cost fault_zero_ns 41378\ncost zero_page_ns 16505\ncost touch_page_ns 291\ncost unmap_page_ns 3267\n",
        );
        let m = boot::guest_machine(&o, &f);
        // Ratios 19.0, 206, 36.4, 10.9 (the first against 2180 ns, the
        // fault with its user time): the median is (19.0 + 36.4) / 2.
        assert_eq!(
            m.to_arg(),
            "guest:1G,cpus=2,disk=2,swap=1G,memory=512M,cpu-slowdown=27.7"
        );
        let again = machine::GuestMachine::parse(&m.to_arg()).unwrap().unwrap();
        assert_eq!(again, m);
        assert_eq!(
            boot::control_machine(&m, Control::Cgroup).to_arg(),
            "guest:1G,cpus=2,disk=2,swap=1G,memory=256M,cpu-slowdown=27.7"
        );
        assert_eq!(boot::control_machine(&m, Control::Global).cgroup, None);
        // Nothing measured: the simulator's own speed, no item.
        let m = boot::guest_machine(&o, &results::Facts::default());
        assert_eq!(m.cpu_slowdown, 1.0);
        assert!(!m.to_arg().contains("cpu-slowdown"));
    }

    /// A boot's machine string takes MemTotal, the memory in use at the
    /// first vmstat sample, the reclaimable slab of it (`slab-kb=`) and THPs (`thp=`)
    /// from the workload's record (here a committed
    /// guest record); a directory without a record leaves them out.
    #[test]
    fn a_boot_names_the_kernels_own_memory() {
        let mut o = GuestOptions::new("stutterp", vec![], "/x".into());
        o.guest_memory = 1 << 30;
        let m = boot::guest_machine(&o, &results::Facts::default());
        let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/fidelity/records/guest-5.10-stutterp-nothp");
        let (g, note) = boot::with_boot_memory(m.clone(), &rec);
        assert_eq!(note, None);
        assert_eq!(
            g.to_arg(),
            "guest:1G,cpus=2,disk=16,swap=1G,memtotal-kb=987392,boot-used-kb=87092,slab-kb=16004,thp=never"
        );
        assert_eq!(
            boot::with_boot_memory(m.clone(), Path::new("/nonexistent")),
            (m, None)
        );
    }

    #[test]
    fn preflight_names_bad_sizes() {
        let mut o = GuestOptions::new("stutterp", vec![], "/x".into());
        o.guest_memory = 256 << 20;
        if sys::which("qemu-system-x86_64").is_some() {
            let e = preflight(&o, Path::new("/var/tmp")).unwrap_err();
            assert!(e.what.contains("--guest-memory"), "{e}");
            o.guest_memory = 2 << 30;
            o.memory = Some(1900 << 20);
            let e = preflight(&o, Path::new("/var/tmp")).unwrap_err();
            assert!(e.what.contains("--memory"), "{e}");
        } else {
            let e = preflight(&o, Path::new("/var/tmp")).unwrap_err();
            assert!(e.what.contains("qemu-system-x86_64 not found"), "{e}");
        }
    }
}
