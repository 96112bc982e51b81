//! `sim --machine`: a built-in machine, a machine TOML file, or this host.
//!
//! `host`, `host:SIZE`, `host:all`, with `,swap=SIZE` and `,dir=DIR` (see
//! `reclaimlab_host::machine`) describe this host as the real run would see
//! it, with the data device's bandwidth measured (or reused from a cache of a
//! day). Because a measurement varies, the resolved profile is written next to
//! the run records as `machine-host.toml`, which repeats the run exactly.

use std::path::{Path, PathBuf};

use anyhow::Context;
use reclaimlab_host::machine::{self as host_machine, HostArg, MeasureOptions};
use reclaimlab_kernel::machine::Machine;

/// File name of the resolved host profile in the output directory.
pub const HOST_PROFILE_FILE: &str = "machine-host.toml";

/// A resolved `--machine`: the machine, and for `host…` the profile's TOML
/// text to save with the records.
pub struct Resolved {
    /// The machine to simulate.
    pub machine: Machine,
    /// For `--machine host…`: the machine file that repeats it.
    pub host_toml: Option<String>,
}

/// Resolves `--machine`: `host[:…]` describes this host (measuring its data
/// device, or reusing a cached measurement; notes on stderr), anything else is
/// a built-in name or a TOML file ([`Machine::load`]).
pub fn resolve(arg: &str) -> anyhow::Result<Resolved> {
    match HostArg::parse(arg) {
        None => match Machine::load(arg) {
            Ok(machine) => Ok(Resolved {
                machine,
                host_toml: None,
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
                scheduler: Some("bfq".into()),
                max_sectors_kb: Some(1280),
                wbt_lat_usec: Some(75000),
            }),
            memcg_version: Some(2),
        };
        let bw = Bandwidth {
            write_mb_s: 123.4,
            read_mb_s: 150.0,
            read_measured: false,
            mib: 256,
            when_unix: 1_700_000_000,
            latency: None,
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
