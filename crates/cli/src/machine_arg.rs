//! `sim --machine`: a built-in machine, a machine TOML file, this host, or a
//! qemu guest as `run --kernel` boots it.
//!
//! `guest`, `guest:2G,cpus=2,disk=16,swap=2G,memory=512M,cpu-slowdown=40`
//! (see `reclaimlab_host::guest::machine`), or the directory of a guest run's
//! record (its `params.guest.machine`), describe the guest; the CPU slowdown
//! multiplies every `cost.*` parameter ([`scale_costs`]), before `--set`.
//!
//! `host`, `host:SIZE`, `host:all`, with `,swap=SIZE` and `,dir=DIR` (see
//! `reclaimlab_host::machine`) describe this host as the real run would see
//! it, with the data device's bandwidth measured (or reused from a cache of a
//! day). Because a measurement varies, the resolved profile is written next to
//! the run records as `machine-host.toml`, which repeats the run exactly.

use std::path::{Path, PathBuf};

use anyhow::Context;
use reclaimlab_host::guest::machine::GuestMachine;
use reclaimlab_host::machine::{self as host_machine, HostArg, MeasureOptions};
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::params::Params;

/// File name of the resolved host profile in the output directory.
pub const HOST_PROFILE_FILE: &str = "machine-host.toml";

/// A resolved `--machine`: the machine, and for `host…` the profile's TOML
/// text to save with the records.
pub struct Resolved {
    /// The machine to simulate.
    pub machine: Machine,
    /// For `--machine host…`: the machine file that repeats it.
    pub host_toml: Option<String>,
    /// Multiplier of every `cost.*` parameter (a guest's slow CPU); 1 otherwise.
    pub cpu_slowdown: f64,
    /// `cost.*` values the machine measured itself (a guest's
    /// `swapout-ns=`), set after the scaling and before `--set`.
    pub costs: Vec<(&'static str, String)>,
}

/// Multiplies every `cost.*` parameter by `factor` (rounded to whole ns,
/// capped at the parameter's maximum). 1 leaves them as they are.
pub fn scale_costs(params: &mut Params, factor: f64) {
    if factor == 1.0 {
        return;
    }
    // The ranges do not depend on the profile.
    let ranges = reclaimlab_kernel::profile::profile("v5.15")
        .map(Params::list)
        .unwrap_or_default();
    for (name, value) in params.to_pairs() {
        // The CPU costs, and the lock's hold times, which are CPU time too.
        if !name.starts_with("cost.") && !name.starts_with("lru_lock.") {
            continue;
        }
        let max = ranges
            .iter()
            .find(|i| i.name == name)
            .map_or(1_000_000.0, |i| i.max);
        if let Ok(v) = value.parse::<f64>() {
            // A failed set (out of range) keeps the default; the factor is
            // bounded so that none does (guest::machine::MAX_SLOWDOWN).
            let _ = params.set(name, &format!("{}", (v * factor).round().min(max)));
        }
    }
}

/// The simulator's system CPU for the probe's swap cycle (one swap-in
/// fault and its page read, ~3 pages scanned and mapped, one anonymous
/// page freed, one written to swap) without `cost.swapout_page_ns`, at
/// `params`: what `swapout-ns=` is the rest of, in today's costs.
pub fn swap_cycle_base_ns(params: &Params) -> f64 {
    (params.cost_fault_ns
        + 3 * (params.cost_scan_ns + params.cost_rmap_ns)
        + params.cost_reclaim_anon_ns
        + params.cost_swapin_ns
        + params.cost_swap_submit_ns) as f64
}

/// The simulator's defaults, which a guest's measured figures are set
/// against (the `cost.*` defaults are the same in every profile).
fn default_params() -> Option<Params> {
    reclaimlab_kernel::profile::profile("v5.15").map(Params::defaults)
}

/// `cost.swapout_page_ns` for a guest's `swapout-ns=`: that figure is its
/// measured swap cycle less [`reclaimlab_host::cpu_probe::SWAP_CYCLE_BASE_NS`]
/// times the slowdown (a base fixed when the probe was written, so that the
/// machine strings keep their meaning); the swap-out is the cycle less the
/// simulator's present costs of the rest of it, so that a guest's simulated
/// cycle stays the one it measured when a cost of the rest is measured anew
/// (the swap-in and the swap write's submission, 2026-11-27).
pub fn guest_swapout_ns(swapout_ns: u64, cpu_slowdown: f64) -> u64 {
    let d = default_params().map_or(reclaimlab_host::cpu_probe::SWAP_CYCLE_BASE_NS, |p| {
        swap_cycle_base_ns(&p)
    });
    let cycle = swapout_ns as f64 + reclaimlab_host::cpu_probe::SWAP_CYCLE_BASE_NS * cpu_slowdown;
    (cycle - d * cpu_slowdown).max(0.0).round() as u64
}

/// Reclaim's own costs, which a guest's measured reclaim half
/// (`reclaim-ns=`) scales in place of the median factor: the scan, the
/// reverse-map walk, the unmap and swap-out, the write's submission, the
/// free, and the LRU lock's hold and handoff (part of the scan).
pub const RECLAIM_COSTS: [&str; 8] = [
    "cost.scan_page_ns",
    "cost.rmap_page_ns",
    "cost.reclaim_page_ns",
    "cost.reclaim_anon_page_ns",
    "cost.swapout_page_ns",
    "cost.swap_submit_page_ns",
    "lru_lock.page_ns",
    "lru_lock.handoff_ns",
];

/// The simulator's system CPU, at `params`, for what the probe's reclaim
/// half measures per page written to swap ([`reclaimlab_host::cpu_probe::swap_halves`]):
/// two scans of it (a page touched once is kept by the first scan, which
/// finds its pte young and sets PG_referenced, and reclaimed by the
/// second: 6.1 `folio_check_references`, 5.10 `page_check_references`),
/// the reverse-map walk each time, the swap-out, the write's submission
/// and the free.
pub fn reclaim_half_base_ns(params: &Params) -> f64 {
    (2 * (params.cost_scan_ns + params.cost_rmap_ns)
        + params.cost_swapout_ns
        + params.cost_swap_submit_ns
        + params.cost_reclaim_anon_ns) as f64
}

/// The guest's reclaim factor: its measured reclaim half over
/// [`reclaim_half_base_ns`] at the defaults.
pub fn guest_reclaim_factor(reclaim_ns: u64) -> f64 {
    let base = default_params().map_or(6510.0, |p| reclaim_half_base_ns(&p));
    reclaim_ns as f64 / base
}

/// `cost.swapin_page_ns` for a guest's `swapin-ns=` (system CPU per page a
/// fault reads back from swap, readahead included): the measured half less
/// the fault that maps it, `cost.fault_ns` at the median factor.
pub fn guest_swapin_ns(swapin_ns: u64, cpu_slowdown: f64) -> u64 {
    let fault = default_params().map_or(1900.0, |p| p.cost_fault_ns as f64);
    (swapin_ns as f64 - fault * cpu_slowdown).max(0.0).round() as u64
}

/// Resolves `guest…`: the machine built from the description.
fn resolve_guest(arg: &str, g: &GuestMachine) -> anyhow::Result<Resolved> {
    let machine = Machine::from_toml(&g.machine_toml(), &format!("--machine {arg}"))
        .context("the machine built for this guest is not valid (please report this as a bug)")?;
    if g.cpu_slowdown != 1.0 {
        eprintln!(
            "reclaimlab: --machine {arg}: every cost.* and lru_lock.* parameter x{} (the guest's slower CPU), before --set",
            reclaimlab_host::guest::machine::fmt_factor(g.cpu_slowdown)
        );
    }
    let mut costs = Vec::new();
    if let Some(r) = g.reclaim_ns {
        let f = guest_reclaim_factor(r);
        let d = default_params().map(|p| p.to_pairs()).unwrap_or_default();
        for name in RECLAIM_COSTS {
            if let Some((_, v)) = d.iter().find(|(k, _)| *k == name) {
                let v: f64 = v.parse().unwrap_or(0.0);
                costs.push((name, format!("{}", (v * f).round())));
            }
        }
        eprintln!(
            "reclaimlab: --machine {arg}: reclaim's own costs ({}) x{} (the guest's measured reclaim half, reclaim-ns={r}, in place of the median factor)",
            RECLAIM_COSTS.join(", "),
            reclaimlab_host::guest::machine::fmt_factor((f * 100.0).round() / 100.0)
        );
    }
    if let Some(n) = g.swapin_ns {
        let c = guest_swapin_ns(n, g.cpu_slowdown);
        eprintln!("reclaimlab: --machine {arg}: cost.swapin_page_ns={c} (the guest's measured swap-in half, swapin-ns={n}, less the fault that maps the page)");
        costs.push(("cost.swapin_page_ns", c.to_string()));
    }
    if let Some(n) = g.switch_ns {
        eprintln!("reclaimlab: --machine {arg}: cost.wakeup_ns={n} (the guest's measured context switch, switch-ns=)");
        costs.push(("cost.wakeup_ns", n.to_string()));
    }
    if let (Some(m), None) = (g.swapout_ns, g.reclaim_ns) {
        let n = guest_swapout_ns(m, g.cpu_slowdown);
        eprintln!("reclaimlab: --machine {arg}: cost.swapout_page_ns={n} (the guest's measured swap cycle less the simulator's other costs of it: swapout-ns={m} is against the probe's base)");
        if n == 0 {
            // The probe's whole cycle came out below what the simulator
            // already charges for the rest of it: a swap-out cannot be
            // free, so the measurement (one run of the probe) is suspect.
            eprintln!("reclaimlab: warning: --machine {arg}: the guest's measured swap cycle is below the simulator's other costs of it, so its swap-outs cost no CPU here; the probe's figure is suspect (docs/fidelity.md, \"Directions between the generations\"): give swapout-ns= a value measured again, or --set cost.swapout_page_ns");
        }
        costs.push(("cost.swapout_page_ns", n.to_string()));
    }
    if let (Some(l), Some(b)) = (g.swap_lat_us, g.swap_mb_s) {
        eprintln!("reclaimlab: --machine {arg}: swap disk vdc at {l} µs a request, {b} MB/s (the guest's measured swap reads)");
    }
    Ok(Resolved {
        machine,
        host_toml: None,
        cpu_slowdown: g.cpu_slowdown,
        costs,
    })
}

/// Resolves `--machine`: `host[:…]` describes this host (measuring its data
/// device, or reusing a cached measurement; notes on stderr), anything else is
/// a built-in name or a TOML file ([`Machine::load`]).
pub fn resolve(arg: &str) -> anyhow::Result<Resolved> {
    if let Some(g) = GuestMachine::parse(arg) {
        return resolve_guest(arg, &g?);
    }
    if let Some(spec) = reclaimlab_host::guest::machine::record_machine(Path::new(arg)) {
        let (spec, note) = spec.map_err(|e| anyhow::anyhow!("--machine {arg}: {e}"))?;
        if let Some(n) = note {
            eprintln!("reclaimlab: --machine {arg}: {n}");
        }
        let g = GuestMachine::parse(&spec)
            .with_context(|| {
                format!("--machine {arg}: its guest.machine `{spec}` is not a guest: spec")
            })?
            .with_context(|| format!("--machine {arg}: its guest.machine"))?;
        return resolve_guest(&spec, &g);
    }
    match HostArg::parse(arg) {
        None => match Machine::load(arg) {
            Ok(machine) => Ok(Resolved {
                machine,
                host_toml: None,
                cpu_slowdown: 1.0,
                costs: Vec::new(),
            }),
            Err(e @ reclaimlab_kernel::machine::MachineError::Unknown(..)) => {
                let names: Vec<String> = reclaimlab_kernel::machine::builtin_machines()
                    .into_iter()
                    .map(|m| m.name)
                    .collect();
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                Err(anyhow::anyhow!(
                    "--machine {arg}: {e}{}; `reclaimlab list machines` shows them",
                    crate::suggest::hint(arg, &refs)
                ))
            }
            Err(e) => Err(e.into()),
        },
        Some(host) => resolve_host(arg, &host?, &MeasureOptions::from_env()?),
    }
}

/// [`resolve`] for a parsed `host…` with given measurement options.
pub fn resolve_host(arg: &str, host: &HostArg, opts: &MeasureOptions) -> anyhow::Result<Resolved> {
    let r = host_machine::resolve(host, opts)?;
    for n in &r.notes {
        eprintln!("reclaimlab: {n}");
    }
    let machine = Machine::from_toml(&r.toml, &format!("--machine {arg}")).context(
        "the profile built for this host is not a valid machine (please report this as a bug)",
    )?;
    Ok(Resolved {
        machine,
        host_toml: Some(r.toml),
        cpu_slowdown: 1.0,
        costs: Vec::new(),
    })
}

/// Writes the resolved host profile into `out` (nothing for other machines)
/// and tells the user how to repeat the run with it. Returns the file written.
pub fn save_host_profile(host_toml: Option<&str>, out: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Some(text) = host_toml else {
        return Ok(None);
    };
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create the output directory {}", out.display()))?;
    let file = out.join(HOST_PROFILE_FILE);
    crate::write_file::write_whole(&file, text.as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))?;
    eprintln!(
        "reclaimlab: --machine host: profile written to {f}; pass `--machine {f}` to repeat this run exactly",
        f = file.display()
    );
    Ok(Some(file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_host::machine::{machine_toml, Bandwidth, BlockDev, HostFacts};

    #[test]
    fn other_names_fall_back_to_load() {
        let r = resolve("small").unwrap();
        assert_eq!(r.machine.name, "small");
        assert!(r.host_toml.is_none());
        let e = format!("{:#}", resolve("no-such-machine").err().unwrap());
        assert!(e.contains("neither a built-in machine"), "{e}");
        assert!(!e.contains("did you mean"), "{e}");
        let e = format!("{:#}", resolve("smal").err().unwrap());
        assert!(e.contains("(did you mean `small`?)"), "{e}");
    }

    #[test]
    fn guest_specs_make_the_guest_machine() {
        let r = resolve("guest:2G,cpus=2,disk=16,memory=512M,cpu-slowdown=40").unwrap();
        let m = &r.machine;
        m.check().unwrap();
        assert_eq!(
            m.name,
            "guest:2G,cpus=2,disk=16,swap=2G,memory=512M,cpu-slowdown=40"
        );
        assert_eq!(
            (m.cpus, m.nodes, m.memory_mib, m.swap_mib),
            (2, 1, 2048, 2048)
        );
        assert_eq!(m.workload_memory_mib(), 512);
        assert_eq!(m.workload_cgroup.as_ref().unwrap().version, 2);
        let d = &m.devices[m.data_dev()];
        assert_eq!(
            (d.name.as_str(), d.write_mb_s, d.read_mb_s),
            ("vdb", 16.0, 16.0)
        );
        assert_eq!(
            d.effective_scheduler(),
            reclaimlab_kernel::machine::Scheduler::None
        );
        assert_eq!(d.effective_wbt_lat_usec(), 75_000);
        assert_eq!(m.devices[m.swap_dev()].name, "vdc");
        assert_eq!(r.cpu_slowdown, 40.0);
        assert!(r.host_toml.is_none());
        // Global reclaim: no cgroup; one vCPU: mq-deadline, as the guest's kernel picks.
        let m = resolve("guest:1G,cpus=1").unwrap().machine;
        assert!(m.workload_cgroup.is_none());
        assert_eq!(
            m.devices[0].effective_scheduler(),
            reclaimlab_kernel::machine::Scheduler::MqDeadline
        );
        assert_eq!(resolve("guest").unwrap().cpu_slowdown, 1.0);
    }

    #[test]
    fn bad_guest_specs_name_the_field_and_fix() {
        for (arg, want) in [
            ("guest:2X", "the RAM (first item): `2X` is not a size"),
            ("guest:2G,vcpus=2", "unknown item `vcpus=`"),
            ("guest:2G,memory=2G", "memory=2G is outside"),
            ("guest:", "nothing after `guest:`"),
        ] {
            let e = format!("{:#}", resolve(arg).err().unwrap());
            assert!(e.contains(want) && e.contains("fix:"), "{arg}: {e}");
        }
    }

    #[test]
    fn cost_scaling_multiplies_every_cost() {
        let p = reclaimlab_kernel::profile::profile("v5.15").unwrap();
        let base = Params::defaults(p);
        let mut x = base.clone();
        scale_costs(&mut x, 1.0);
        assert_eq!(x, base);
        scale_costs(&mut x, 40.0);
        assert_eq!(x.cost_fault_ns, base.cost_fault_ns * 40);
        assert_eq!(x.cost_scan_ns, base.cost_scan_ns * 40);
        assert_eq!(x.cost_touch_ns, base.cost_touch_ns * 40);
        assert_eq!(x.cost_wakeup_ns, base.cost_wakeup_ns * 40);
        assert_eq!(x.cost_swapin_ns, base.cost_swapin_ns * 40);
        assert_eq!(x.cost_swap_submit_ns, base.cost_swap_submit_ns * 40);
        assert_eq!(x.hz, base.hz, "only cost.* changes");
        // The largest factor accepted scales every cost.* and lru_lock.*
        // parameter, each staying inside its range, and nothing else.
        let mut y = base.clone();
        let f = reclaimlab_host::guest::machine::MAX_SLOWDOWN;
        scale_costs(&mut y, f);
        let scaled: std::collections::HashMap<_, _> = y.to_pairs().into_iter().collect();
        for (name, v) in base.to_pairs() {
            let got: f64 = scaled[name].parse().unwrap();
            let v: f64 = v.parse().unwrap();
            if name.starts_with("cost.") || name.starts_with("lru_lock.") {
                assert_eq!(got, (v * f).round(), "{name}");
            } else {
                assert_eq!(got, v, "{name}");
            }
        }
    }

    /// The guest's CPU probe compares against the simulator's defaults; it
    /// keeps its own copy (the host crate does not depend on the kernel).
    #[test]
    fn cpu_probe_reference_is_the_simulators_defaults() {
        let d = Params::defaults(reclaimlab_kernel::profile::profile("v5.16").unwrap());
        let want = [
            (
                "fault_zero_ns",
                (d.cost_fault_ns + d.cost_zero_ns + d.cost_fault_user_ns) as f64,
            ),
            ("zero_page_ns", d.cost_zero_ns as f64),
            ("touch_page_ns", d.cost_touch_ns as f64),
            ("unmap_page_ns", d.cost_unmap_ns as f64),
        ];
        for ((k, _, v), (wk, wv)) in reclaimlab_host::cpu_probe::REFERENCE.iter().zip(want) {
            assert_eq!((*k, *v), (wk, wv));
        }
        // The base of `swapout-ns=` is fixed (the simulator's cycle less
        // the swap-out before the swap-in and the swap write's submission
        // were measured): changing it changes what every record's
        // swapout-ns= means.
        assert_eq!(
            reclaimlab_host::cpu_probe::SWAP_CYCLE_BASE_NS,
            1900.0 + 3.0 * (300.0 + 220.0) + 370.0 + 2.0 * 300.0
        );
        assert_eq!(
            swap_cycle_base_ns(&d),
            (d.cost_fault_ns
                + 3 * (d.cost_scan_ns + d.cost_rmap_ns)
                + d.cost_reclaim_anon_ns
                + d.cost_swapin_ns
                + d.cost_swap_submit_ns) as f64
        );
    }

    /// A guest's measured swap-out cost (`swapout-ns=`) replaces the scaled
    /// default, and a sim run on that machine uses it: the measured cycle
    /// less the simulator's present costs of the rest of it at the
    /// slowdown, so the simulated cycle is the measured one.
    #[test]
    fn a_guests_swapout_cost_is_set_after_scaling() {
        let r = resolve("guest:2G,cpu-slowdown=20,swapout-ns=700000").unwrap();
        assert_eq!(r.cpu_slowdown, 20.0);
        // 700000 + 20 x 4430 (the probe's base) - 20 x 7030 (fault 1900,
        // scan and walk 3 x 520, freeing 370, swap-in 2200, submission 1000).
        assert_eq!(
            r.costs,
            vec![("cost.swapout_page_ns", "648000".to_string())]
        );
        let d = Params::defaults(reclaimlab_kernel::profile::profile("v6.1").unwrap());
        let mut x = d.clone();
        scale_costs(&mut x, 20.0);
        x.set("cost.swapout_page_ns", "648000").unwrap();
        assert_eq!(
            swap_cycle_base_ns(&x) + x.cost_swapout_ns as f64,
            700000.0 + 20.0 * reclaimlab_host::cpu_probe::SWAP_CYCLE_BASE_NS,
            "the simulated cycle is the measured one"
        );
        assert_eq!(guest_swapout_ns(1000, 20.0), 0, "never below 0");
        assert!(resolve("guest:2G,cpu-slowdown=20")
            .unwrap()
            .costs
            .is_empty());
    }

    /// A guest's measured halves replace the median factor for reclaim's
    /// own costs and for the swap-in, its switch sets `cost.wakeup_ns`,
    /// and `swapout-ns=` is then left alone: the reclaim half covers it.
    #[test]
    fn a_guests_measured_halves_set_reclaim_and_swapin_costs() {
        let d = Params::defaults(reclaimlab_kernel::profile::profile("v5.15").unwrap());
        let base = reclaim_half_base_ns(&d);
        assert_eq!(
            base, 6510.0,
            "two scans and walks, swap-out, submission, free"
        );
        // A reclaim half three times the host's.
        let r = resolve("guest:1G,cpu-slowdown=20,swapout-ns=500000,reclaim-ns=19530,swapin-ns=45000,switch-ns=40000").unwrap();
        let get = |k: &str| {
            r.costs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.parse::<u64>().unwrap())
        };
        assert_eq!(get("cost.scan_page_ns"), Some(3 * d.cost_scan_ns));
        assert_eq!(get("cost.swapout_page_ns"), Some(3 * d.cost_swapout_ns));
        assert_eq!(get("lru_lock.page_ns"), Some(3 * d.lru_lock_page_ns));
        // 45000 less the fault at the median factor (1900 x 20).
        assert_eq!(
            get("cost.swapin_page_ns"),
            Some(45_000 - 20 * d.cost_fault_ns)
        );
        assert_eq!(get("cost.wakeup_ns"), Some(40_000));
        assert_eq!(
            r.costs
                .iter()
                .filter(|(n, _)| *n == "cost.swapout_page_ns")
                .count(),
            1,
            "swapout-ns= is not applied over the reclaim half"
        );
        assert_eq!(guest_swapin_ns(1000, 20.0), 0, "never below 0");
        assert!((guest_reclaim_factor(6510) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_guest_record_names_its_machine() {
        let tmp = std::env::temp_dir().join(format!("reclaimlab-guest-rec-{}", std::process::id()));
        let rec = tmp.join("debian-6.1");
        std::fs::create_dir_all(&rec).unwrap();
        std::fs::write(
            rec.join("run.json"),
            r#"{"params":{"guest.machine":"guest:2G,cpus=2,disk=16,swap=2G,memory=512M,cpu-slowdown=37.5"}}"#,
        )
        .unwrap();
        let r = resolve(rec.to_str().unwrap()).unwrap();
        assert_eq!(
            r.machine.name,
            "guest:2G,cpus=2,disk=16,swap=2G,memory=512M,cpu-slowdown=37.5"
        );
        assert_eq!(r.cpu_slowdown, 37.5);
        std::fs::write(rec.join("run.json"), r#"{"params":{"run.scope":"host"}}"#).unwrap();
        let e = format!("{:#}", resolve(rec.to_str().unwrap()).err().unwrap());
        assert!(
            e.contains("no params.guest.machine") && e.contains("fix:"),
            "{e}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    /// A committed guest record (made before guest runs wrote the figures)
    /// gives the kernel's own memory from its params and first vmstat row:
    /// MemTotal 1,011,089,408 bytes (246,848 pages) and 225,075 free pages.
    #[test]
    fn a_guest_record_gives_the_kernels_own_memory() {
        let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/fidelity/records/guest-5.10-stutterp-nothp");
        let r = resolve(rec.to_str().unwrap()).unwrap();
        let m = &r.machine;
        assert!(
            m.name
                .ends_with(",memtotal-kb=987392,boot-used-kb=87092,slab-kb=16004,thp=never"),
            "{}",
            m.name
        );
        assert_eq!((m.memory_mib, m.managed_pages()), (1024, 246_848));
        assert_eq!(m.boot_used_pages(), 21_773);
        // Its first row's nr_slab_reclaimable (4,001 pages) and the guest
        // image's shrinkable objects.
        assert_eq!(m.os_slab.reclaimable_kib, 16_004);
        assert_eq!(m.os_slab.supers.len(), 4);
        assert_eq!(m.os_slab.supers[3].referenced_extents, 32);
        assert_eq!(m.mem_total_bytes(), 1_011_089_408);
        // The string resolves to the same machine.
        let again = resolve(&m.name).unwrap().machine;
        assert_eq!(again, *m);

        // A record whose first vmstat row makes no sense is refused.
        let tmp = std::env::temp_dir().join(format!("reclaimlab-guest-bm-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(
            tmp.join("run.json"),
            r#"{"params":{"guest.machine":"guest:1G,cpus=2","host.mem_total_bytes":"1011089408"}}"#,
        )
        .unwrap();
        std::fs::write(tmp.join("vmstat.csv"), "t_s,nr_free_pages\n0.0,999999\n").unwrap();
        let e = format!("{:#}", resolve(tmp.to_str().unwrap()).err().unwrap());
        assert!(e.contains("nr_free_pages") && e.contains("fix:"), "{e}");
        // Without vmstat.csv: as before, all of the RAM managed and free.
        std::fs::remove_file(tmp.join("vmstat.csv")).unwrap();
        let m = resolve(tmp.to_str().unwrap()).unwrap().machine;
        assert_eq!((m.managed_pages(), m.boot_used_pages()), (262_144, 0));
        std::fs::remove_dir_all(&tmp).unwrap();
        // Bad figures in a machine string name the item and the fix.
        for (arg, want) in [
            ("guest:1G,memtotal-kb=6", "memtotal-kb=`6`"),
            (
                "guest:1G,memtotal-kb=2000000",
                "memtotal-kb=2000000 is outside",
            ),
            (
                "guest:1G,memtotal-kb=987392,boot-used-kb=600000",
                "boot-used-kb=600000 is more than half",
            ),
            ("guest:1G,boot-used-kb=x", "boot-used-kb=`x`"),
            ("guest:1G,slab-kb=2", "slab-kb=`2`"),
            (
                "guest:1G,memtotal-kb=987392,boot-used-kb=8000,slab-kb=16004",
                "slab-kb=16004 is not between the 32 KiB",
            ),
            (
                "guest:1G,memtotal-kb=987392,boot-used-kb=87092,slab-kb=20",
                "slab-kb=20 is not between the 32 KiB of slab",
            ),
        ] {
            let e = format!("{:#}", resolve(arg).err().unwrap());
            assert!(e.contains(want) && e.contains("fix:"), "{arg}: {e}");
        }
    }

    #[test]
    fn bad_host_sizes_name_the_fix() {
        for (arg, want) in [
            ("host:2X", "`2X` is not a size"),
            ("host:big", "`big` is not a size, `all`"),
            ("host:1G,swap=-1", "`-1` is not a size"),
            ("host:", "nothing after `host:`"),
        ] {
            let e = format!("{:#}", resolve(arg).err().unwrap());
            assert!(e.contains(want) && e.contains("fix:"), "{arg}: {e}");
        }
    }

    #[test]
    fn injected_facts_make_a_valid_machine() {
        let facts = HostFacts {
            hostname: "box".into(),
            kernel: "6.1.0".into(),
            cpus: 3,
            nodes: 2,
            mem_total: 8 << 30,
            swap_total: 0,
            dir: "/var/tmp".into(),
            device: Some(BlockDev {
                name: "sda".into(),
                rotational: true,
                nr_requests: Some(64),
                mq: true,
                nr_tags: Some(32),
                scheduler: Some("bfq".into()),
                max_sectors_kb: Some(1280),
                wbt_lat_usec: Some(75000),
            }),
            memcg_version: Some(2),
            fstype: Some("btrfs".into()),
            thp: Some("always"),
        };
        let bw = Bandwidth {
            write_mb_s: 123.4,
            read_mb_s: 150.0,
            read_measured: false,
            mib: 256,
            when_unix: 1_700_000_000,
            latency: None,
            direct: None,
        };
        for (a, mem, swap) in [
            ("host", 8192, 0),
            ("host:all", 8192, 0),
            ("host:3G,swap=2G", 8192, 2048),
        ] {
            let arg = HostArg::parse(a).unwrap().unwrap();
            let (t, _) = machine_toml(&arg, &facts, &bw).unwrap();
            let m = Machine::from_toml(&t, a).unwrap_or_else(|e| panic!("{a}: {e}\n{t}"));
            m.check().unwrap();
            assert_eq!(
                (m.cpus, m.nodes, m.memory_mib, m.swap_mib),
                (3, 2, mem, swap)
            );
            assert_eq!(
                m.thp,
                Some(reclaimlab_kernel::machine::ThpEnabled::Always),
                "the host's THP mode is the machine's"
            );
            // host:SIZE puts the workload in a cgroup of SIZE, as `run
            // --memory SIZE` does; host:all runs it in the root.
            let limit = m
                .workload_cgroup
                .as_ref()
                .map(|c| (c.memory_max_mib, c.version));
            let want = match a {
                "host" => Some((1024, 2)),
                "host:all" => None,
                _ => Some((3072, 2)),
            };
            assert_eq!(limit, want, "{a}");
            let d = &m.devices[m.data_dev()];
            assert_eq!(
                (d.name.as_str(), d.write_mb_s, d.read_mb_s),
                ("sda", 123.4, 150.0)
            );
            assert_eq!(d.seek_us, 6000.0, "a rotating disk gets a disk's seek time");
            // sysfs queue settings carry over; an unmodelled scheduler (bfq)
            // leaves the kernel's default.
            assert_eq!((d.max_sectors_kb, d.wbt_lat_usec), (1280, Some(75000)));
            assert_eq!(d.scheduler, None);
            assert!(t.contains("# scheduler: bfq"), "{t}");
        }
    }

    /// Resolves `--machine host` for real, with a 16 MiB measurement and a
    /// private cache, then again from the cache; the saved profile loads back
    /// to the same machine.
    #[test]
    fn host_resolves_measures_and_caches() {
        let tmp =
            std::env::temp_dir().join(format!("reclaimlab-machine-arg-{}", std::process::id()));
        let opts = MeasureOptions {
            mib: 16,
            cache_dir: Some(tmp.join("cache")),
            max_age_s: 3600,
        };
        let t = std::time::Instant::now();
        let host = HostArg::parse("host").unwrap().unwrap();
        let r = match resolve_host("host", &host, &opts) {
            Ok(r) => r,
            Err(e)
                if format!("{e:#}").contains("not on a disk")
                    || format!("{e:#}").contains("cannot write a test file") =>
            {
                eprintln!("skipped: this host's /var/tmp cannot be measured: {e:#}");
                return;
            }
            Err(e) => panic!("{e:#}"),
        };
        let m = &r.machine;
        m.check().unwrap();
        assert_eq!(m.name, "host");
        // The whole host, the workload in a 1 GiB cgroup (as `run`'s default).
        assert_eq!(m.workload_memory_mib(), 1024);
        assert!(m.memory_mib >= 1024);
        let cpus = std::thread::available_parallelism().unwrap().get() as u32;
        assert_eq!(m.cpus, cpus);
        assert!(m.devices[0].write_mb_s > 0.0);
        assert!(tmp.join("cache").join("host-bandwidth.json").is_file());
        let again = resolve_host("host", &host, &opts).unwrap();
        assert_eq!(
            again.machine, r.machine,
            "the second call reuses the cached measurement"
        );
        let file = save_host_profile(r.host_toml.as_deref(), &tmp.join("out"))
            .unwrap()
            .unwrap();
        let loaded = Machine::load(file.to_str().unwrap()).unwrap();
        assert_eq!(&loaded, m);
        assert!(t.elapsed().as_secs_f64() < 5.0, "took {:?}", t.elapsed());
        let e = format!(
            "{:#}",
            resolve_host(
                "host:dir=/nonexistent",
                &HostArg::parse("host:dir=/nonexistent").unwrap().unwrap(),
                &opts
            )
            .err()
            .unwrap()
        );
        assert!(e.contains("not a directory") && e.contains("fix:"), "{e}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
