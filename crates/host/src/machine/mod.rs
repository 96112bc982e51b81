//! This host as a machine profile for the simulator (`sim --machine host`).
//!
//! The profile describes what a real run of the same workload would get, so a
//! real and a simulated run can be put side by side in one report:
//!
//! | `--machine`            | memory                                   | swap                      |
//! |------------------------|------------------------------------------|---------------------------|
//! | `host`                 | 1 GiB, `run`'s default `--memory`        | the host's active swap    |
//! | `host:2G`              | 2 GiB, as `run --memory 2G`              | the host's active swap    |
//! | `host:all`             | MemTotal, as `run --scope host`          | the host's active swap    |
//! | `host:1G,swap=2G`      | 1 GiB                                    | active swap + 2 GiB, as `run --swap-file 2G` |
//! | `host:1G,dir=/data`    | 1 GiB; the data device is the one holding `/data`, as `run --data-dir /data` |
//!
//! CPUs are those this process may run on (`sched_getaffinity`), nodes those
//! under `/sys/devices/system/node`. One data device, the one holding the
//! directory the real run writes to (`/var/tmp` unless `dir=`), *measured*:
//! `run`'s own calibration write ([`calibration_write`]: `dd conv=fdatasync`)
//! of a few hundred MiB makes a file, which is read back with its cached
//! pages dropped, read in single 4 KiB direct reads (latency and seek), and
//! overwritten and read in 1 MiB direct requests, [`DIRECT_DEPTH`] in flight
//! (the write and read bandwidths the profile takes; where direct I/O is
//! refused, the buffered figures, labelled so). The queue depth is a
//! default, labelled as such.
//!
//! A measurement varies from one call to the next, so it is cached for
//! [`CACHE_MAX_AGE_S`] per directory, device and size (under
//! `$XDG_CACHE_HOME/reclaimlab` or `~/.cache/reclaimlab`), and the resolved
//! profile is meant to be written next to the run records as a TOML file that
//! repeats the run exactly.
//!
//! Nothing here needs root.

//!
//! Layout: `arg.rs` parses the argument, `facts.rs` gathers the host's
//! facts, `measure.rs` measures the data device, `cache.rs` keeps
//! measurements, `toml.rs` writes the profile; [`resolve`] puts them together.

mod arg;
mod cache;
mod facts;
mod measure;
mod toml;

use crate::error::Result;

pub use arg::*;
pub use cache::*;
pub use facts::*;
pub use measure::*;
pub use toml::*;

const MIB: u64 = 1 << 20;

/// `run`'s default `--memory`, which `--machine host` matches.
pub const DEFAULT_RUN_MEMORY: u64 = 1 << 30;
/// `run`'s default parent of its data directory (`--data-dir`).
pub const DEFAULT_DATA_DIR: &str = "/var/tmp";
/// Size of the bandwidth measurement's file, MiB, unless
/// `RECLAIMLAB_HOST_MEASURE_MIB` says otherwise.
pub const DEFAULT_MEASURE_MIB: u64 = 512;
/// How long a cached measurement is reused, seconds.
pub const CACHE_MAX_AGE_S: u64 = 24 * 3600;

/// The accepted spellings, for error messages.
const SYNTAX: &str =
    "--machine host, host:2G, host:all, host:1G,swap=2G or host:1G,dir=/data (items after `host:` separated by commas)";

/// `--machine host…` resolved: the profile's TOML and what to tell the user.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Machine-file TOML.
    pub toml: String,
    /// Lines for stderr: where the bandwidth came from, warnings.
    pub notes: Vec<String>,
    /// The bandwidth used.
    pub bandwidth: Bandwidth,
}

/// Resolves a parsed `--machine host…`: gathers the facts, measures (or reuses
/// a cached measurement) and builds the profile.
pub fn resolve(arg: &HostArg, opts: &MeasureOptions) -> Result<Resolved> {
    let dir = arg.data_dir();
    let facts = gather_facts(&dir)?;
    let dev = facts
        .device
        .as_ref()
        .map_or("its device".to_string(), |d| d.name.clone());
    let mut notes = Vec::new();
    let (bw, prov) = bandwidth(&dir, opts)?;
    let figures = format!(
        "write {:.0} MB/s, read {:.0} MB/s{}{}",
        bw.device_write_mb_s(),
        bw.device_read_mb_s(),
        if bw.read_measured {
            ""
        } else {
            " (estimated = write)"
        },
        if bw.direct.is_some() {
            format!(
                " (1 MiB direct I/O, {DIRECT_DEPTH} in flight; the dd calibration write: {:.0} MB/s)",
                bw.write_mb_s
            )
        } else {
            " (dd calibration write: direct I/O refused)".to_string()
        }
    );
    match prov {
        Provenance::Cached(f) => notes.push(format!(
            "--machine host: reusing the measurement of {} ({dev}) from {}: {figures}; cached in {} (delete it to measure again)",
            dir.display(),
            utc_date(bw.when_unix),
            f.display()
        )),
        Provenance::Measured(stored) => {
            notes.push(format!(
                "--machine host: measured {} ({dev}) with a {} MiB file: {figures}",
                dir.display(),
                bw.mib
            ));
            notes.push(match stored {
                Ok(f) => format!(
                    "--machine host: cached in {} for {} h (delete it to measure again)",
                    f.display(),
                    opts.max_age_s / 3600
                ),
                Err(why) => format!("--machine host: not cached ({why}); the next call measures again"),
            });
        }
    }
    let (toml, warnings) = machine_toml(arg, &facts, &bw)?;
    notes.extend(
        warnings
            .into_iter()
            .map(|w| format!("--machine host: warning: {w}")),
    );
    Ok(Resolved {
        toml,
        notes,
        bandwidth: bw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::{Path, PathBuf};

    fn arg(s: &str) -> HostArg {
        HostArg::parse(s).expect("a host arg").expect("valid")
    }

    fn err(s: &str) -> String {
        HostArg::parse(s)
            .expect("a host arg")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_host_args() {
        assert_eq!(HostArg::parse("small"), None);
        assert_eq!(HostArg::parse("hostile.toml"), None);
        assert_eq!(HostArg::parse("./host"), None);
        assert_eq!(
            arg("host"),
            HostArg {
                memory: HostMemory::Limit(1 << 30),
                swap_file: None,
                dir: None
            }
        );
        assert_eq!(arg("host:2G").memory, HostMemory::Limit(2 << 30));
        assert_eq!(arg("host:512M").memory, HostMemory::Limit(512 << 20));
        assert_eq!(arg("host:all").memory, HostMemory::All);
        let a = arg("host:1G,swap=2G,dir=/data");
        assert_eq!(a.memory, HostMemory::Limit(1 << 30));
        assert_eq!(a.swap_file, Some(2 << 30));
        assert_eq!(a.data_dir(), PathBuf::from("/data"));
        let a = arg("host:swap=1G");
        assert_eq!(a.memory, HostMemory::Limit(DEFAULT_RUN_MEMORY));
        assert_eq!(a.data_dir(), PathBuf::from(DEFAULT_DATA_DIR));
    }

    #[test]
    fn rejects_bad_host_args() {
        let e = err("host:lots");
        assert!(e.contains("`lots` is not a size, `all`"), "{e}");
        assert!(e.contains("fix: write --machine host, host:2G"), "{e}");
        let e = err("host:2X");
        assert!(e.contains("`2X` is not a size"), "{e}");
        assert!(e.contains("fix:"), "{e}");
        assert!(err("host:").contains("nothing after"));
        assert!(err("host:1G,,swap=1G").contains("empty item"));
        assert!(err("host:1G,2G").contains("already given"));
        assert!(err("host:all,1G").contains("already given"));
        assert!(err("host:swap=big").contains("`big` is not a size"));
        assert!(err("host:0").contains("`0` is not a size"));
        assert!(err("host:dir=").contains("needs a directory"));
    }

    fn facts() -> HostFacts {
        HostFacts {
            hostname: "box".into(),
            kernel: "6.1.0".into(),
            cpus: 4,
            nodes: 1,
            mem_total: 16 << 30,
            swap_total: 2 << 30,
            dir: PathBuf::from("/var/tmp"),
            device: Some(BlockDev {
                name: "nvme0n1".into(),
                rotational: false,
                nr_requests: Some(255),
                mq: true,
                nr_tags: Some(1023),
                scheduler: Some("none".into()),
                max_sectors_kb: Some(512),
                wbt_lat_usec: Some(2000),
            }),
            memcg_version: Some(1),
            fstype: Some("ext4".into()),
            thp: Some("madvise"),
        }
    }

    #[test]
    fn active_scheduler_is_the_bracketed_name() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            active_scheduler("[none] mq-deadline").as_deref(),
            Some("none")
        );
        assert_eq!(active_scheduler("none"), None);
    }

    fn bw() -> Bandwidth {
        Bandwidth {
            write_mb_s: 812.5,
            read_mb_s: 1500.0,
            read_measured: true,
            mib: 256,
            when_unix: 1_700_000_000,
            latency: None,
            direct: None,
        }
    }

    /// The direct figures are the device's; the calibration write's only
    /// stands in where direct I/O was refused, and the profile says which.
    #[test]
    fn direct_bandwidths_replace_the_calibration_write() {
        let mut b = bw();
        b.write_mb_s = 171.4;
        b.read_mb_s = 883.3;
        let (t, _) = machine_toml(&arg("host"), &facts(), &b).unwrap();
        assert!(
            t.contains("write_mb_s = 171.4\n") && t.contains("direct I/O was refused"),
            "{t}"
        );
        b.direct = Some(Direct {
            write_mb_s: 2025.9,
            read_mb_s: Some(913.0),
        });
        let (t, _) = machine_toml(&arg("host"), &facts(), &b).unwrap();
        assert!(
            t.contains("write_mb_s = 2025.9\n")
                && t.contains("read_mb_s = 913.0\n")
                && t.contains("O_DIRECT writes, 8 in flight")
                && t.contains("gave 171.4"),
            "{t}"
        );
        // Direct reads cut short: the buffered read-back stands.
        b.direct = Some(Direct {
            write_mb_s: 2025.9,
            read_mb_s: None,
        });
        let (t, _) = machine_toml(&arg("host"), &facts(), &b).unwrap();
        assert!(t.contains("read_mb_s = 883.3\n"), "{t}");
    }

    #[test]
    fn builds_the_profile_from_facts() {
        let (t, w) = machine_toml(&arg("host"), &facts(), &bw()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        for line in [
            "name = \"host\"\n",
            "cpus = 4\n",
            "nodes = 1\n",
            // The host's memory, the workload in a 1 GiB cgroup of the
            // host's (v1) hierarchy, as `run --memory 1G` puts it.
            "memory_mib = 16384\n",
            "[workload_cgroup]\nmemory_max_mib = 1024\nversion = 1\n",
            "swap_mib = 2048\n",
            "name = \"nvme0n1\"\n",
            "layer = \"blk-mq\"\n",
            "write_mb_s = 812.5\n",
            "read_mb_s = 1500.0\n",
            // The tag set's depth, from sysfs.
            "queue_depth = 1023\n",
            // The data directory's filesystem, from its mount.
            "fs = \"ext4\"",
        ] {
            assert!(t.contains(line), "{line:?} missing in\n{t}");
        }
        assert!(t.contains("# read_mb_s: measured"), "{t}");
        let mut f = facts();
        f.fstype = Some("btrfs".into());
        let (t, _) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(!t.contains("\nfs =") && t.contains("# fs: btrfs"), "{t}");
        // Without a readable tag count: the built-in machines' 32, said so.
        let mut f = facts();
        f.device.as_mut().unwrap().nr_tags = None;
        let (t, _) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(
            t.contains("queue_depth = 32\n") && t.contains("# queue_depth: not readable"),
            "{t}"
        );
        let (t, _) = machine_toml(&arg("host:all,swap=1G"), &facts(), &bw()).unwrap();
        assert!(
            t.contains("memory_mib = 16384\n")
                && t.contains("swap_mib = 3072\n")
                && !t.contains("[workload_cgroup]"),
            "{t}"
        );
        let mut b = bw();
        b.read_measured = false;
        let (t, _) = machine_toml(&arg("host:2G"), &facts(), &b).unwrap();
        assert!(
            t.contains("memory_max_mib = 2048\n") && t.contains("ESTIMATED"),
            "{t}"
        );
    }

    #[test]
    fn profile_sizes_checked_against_the_host() {
        let e = machine_toml(&arg("host:32G"), &facts(), &bw())
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than this host's 16.0 GiB"), "{e}");
        assert!(e.contains("fix: --machine host:all"), "{e}");
        let e = machine_toml(&arg("host:32M"), &facts(), &bw())
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 64 MiB"), "{e}");
        let (_, w) = machine_toml(&arg("host:128M"), &facts(), &bw()).unwrap();
        assert!(w.iter().any(|w| w.contains("256 MiB")), "{w:?}");
        let (_, w) = machine_toml(&arg("host:15G"), &facts(), &bw()).unwrap();
        assert!(w.iter().any(|w| w.contains("90%")), "{w:?}");
        let mut f = facts();
        f.swap_total = 0;
        let (t, w) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(t.contains("swap_mib = 0\n"));
        assert!(w.iter().any(|w| w.contains("no swap")), "{w:?}");
    }

    #[test]
    fn nodes_capped_and_odd_devices_named() {
        let mut f = facts();
        f.nodes = 8;
        f.cpus = 2;
        f.device = None;
        let (t, _) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(t.contains("nodes = 2\n") && t.contains("capped"), "{t}");
        assert!(t.contains("name = \"data\"\n"), "{t}");
        f.hostname = "we\"ird\\".into();
        let (t, _) = machine_toml(&arg("host"), &f, &bw()).unwrap();
        assert!(t.contains("we\\\"ird\\\\"), "{t}");
    }

    #[test]
    fn fast_rotational_disks_are_taken_as_flash() {
        let mut f = facts();
        f.device.as_mut().unwrap().rotational = true;
        let mut b = bw();
        b.write_mb_s = 150.0;
        b.read_mb_s = 160.0;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 6000.0\n") && t.contains("nvme0n1: rotating"),
            "{t}"
        );
        b.read_mb_s = 1450.2;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 20.0\n") && t.contains("moves 1450 MB/s"),
            "{t}"
        );
        b.read_measured = false;
        b.read_mb_s = b.write_mb_s;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(t.contains("seek_us = 6000.0\n"), "{t}");
        b.write_mb_s = 1116.5;
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 20.0\n") && t.contains("taken as flash"),
            "{t}"
        );
    }

    /// A measured latency decides `latency_us` and `seek_us`, whatever
    /// sysfs says: a virtio disk that says rotational but reads at random
    /// as fast as in order gets no seek penalty.
    #[test]
    fn measured_latency_replaces_the_defaults() {
        let mut f = facts();
        f.device.as_mut().unwrap().rotational = true;
        let mut b = bw();
        b.write_mb_s = 49.4;
        b.read_mb_s = 204.8; // 20 µs per 4 KiB
        b.latency = Some(Latency {
            seq_4k_us: 120.0,
            rand_4k_us: 134.5,
        });
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("latency_us = 100.0\n") && t.contains("seek_us = 14.5\n"),
            "{t}"
        );
        assert!(t.contains("# latency_us, seek_us: measured"), "{t}");
        // A real spinning disk: random reads pay the seek.
        b.latency = Some(Latency {
            seq_4k_us: 150.0,
            rand_4k_us: 8150.0,
        });
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(t.contains("seek_us = 8000.0\n"), "{t}");
        // In-order reads slower than random ones (a cache in front): no
        // negative seek.
        b.latency = Some(Latency {
            seq_4k_us: 90.0,
            rand_4k_us: 60.0,
        });
        let (t, _) = machine_toml(&arg("host"), &f, &b).unwrap();
        assert!(
            t.contains("seek_us = 0.0\n") && t.contains("latency_us = 70.0\n"),
            "{t}"
        );
    }

    #[test]
    fn sizes_as_run_spells_them() {
        assert_eq!(size_arg(1 << 30), "1G");
        assert_eq!(size_arg(1536 << 20), "1536M");
        assert_eq!(size_arg(1000), "1000");
        let (t, _) = machine_toml(&arg("host:1536M,swap=2G"), &facts(), &bw()).unwrap();
        assert!(
            t.contains("`run --memory 1536M`") && t.contains("`run --swap-file 2G`"),
            "{t}"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn cache_round_trip_and_expiry() {
        let d = std::env::temp_dir().join(format!("reclaimlab-cache-test-{}", std::process::id()));
        let f = d.join(CACHE_FILE);
        let b = Bandwidth {
            when_unix: 1_000_000,
            latency: Some(Latency {
                seq_4k_us: 101.5,
                rand_4k_us: 130.0,
            }),
            direct: Some(Direct {
                write_mb_s: 2000.0,
                read_mb_s: None,
            }),
            ..bw()
        };
        cache_store(&f, "/var/tmp", "8:0:256", &b, 3600).unwrap();
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:256", 1_000_100, 3600),
            Some(b.clone())
        );
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:16", 1_000_100, 3600),
            None
        );
        assert_eq!(cache_lookup(&f, "/data", "8:0:256", 1_000_100, 3600), None);
        // An entry written before latencies were measured is a miss, so
        // the device is measured again.
        let old = std::fs::read_to_string(&f).unwrap();
        let v: serde_json::Value = serde_json::from_str(&old).unwrap();
        let mut v2 = v.clone();
        v2["entries"][0].as_object_mut().unwrap().remove("latency");
        std::fs::write(&f, v2.to_string()).unwrap();
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:256", 1_000_100, 3600),
            None
        );
        // And one from before the direct bandwidths.
        let mut v3 = v.clone();
        v3["entries"][0].as_object_mut().unwrap().remove("direct");
        std::fs::write(&f, v3.to_string()).unwrap();
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:256", 1_000_100, 3600),
            None
        );
        std::fs::write(&f, old).unwrap();
        assert_eq!(
            cache_lookup(&f, "/var/tmp", "8:0:256", 1_000_000 + 3601, 3600),
            None
        );
        let text = fs::read_to_string(&f).unwrap();
        assert!(
            text.contains("\"date\": \"1970-01-12 13:46 UTC\""),
            "{text}"
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unwritable_or_missing_directory_is_a_clear_error() {
        let e = measure(Path::new("/nonexistent/reclaimlab"), 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not a directory") && e.contains("fix: give a writable directory"),
            "{e}"
        );
        let e = measure(Path::new("/proc"), 1).unwrap_err().to_string();
        assert!(
            e.contains("/proc is not on a disk (proc)") && e.contains("fix:"),
            "{e}"
        );
    }
}
