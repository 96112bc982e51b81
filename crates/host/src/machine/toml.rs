//! The host's machine profile as a machine-file TOML.

use crate::error::{human_bytes, HostError, Result};

use super::*;

/// A TOML basic string (quoted and escaped).
pub fn toml_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                o.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The machine profile as machine-file TOML (`reclaimlab_kernel::machine`'s
/// fields), with comments saying where each figure came from. Pure: the facts
/// and the bandwidth are given. Also returns warnings for the user (sizes
/// `run` would refuse).
pub fn machine_toml(
    arg: &HostArg,
    facts: &HostFacts,
    bw: &Bandwidth,
) -> Result<(String, Vec<String>)> {
    let mut warnings = Vec::new();
    let (memory, mem_note) = match arg.memory {
        HostMemory::All => (
            facts.mem_total,
            "MemTotal (as `run --scope host`)".to_string(),
        ),
        HostMemory::Limit(b) => {
            let label = size_arg(b);
            if b < 64 * MIB {
                return Err(HostError::with_fix(
                    format!("--machine host:{label}: too small; the simulator needs at least 64 MiB (and `run --memory` at least 256 MiB)"),
                    "--machine host:1G",
                ));
            }
            if b > facts.mem_total {
                return Err(HostError::with_fix(
                    format!(
                        "--machine host:{label}: more than this host's {} of RAM",
                        human_bytes(facts.mem_total)
                    ),
                    format!(
                        "--machine host:all for the whole machine, or at most host:{}M",
                        facts.mem_total / MIB
                    ),
                ));
            }
            if b < 256 * MIB {
                warnings.push(format!(
                    "host:{label}: `run --memory` refuses less than 256 MiB for stutterp"
                ));
            }
            if b > facts.mem_total / 10 * 9 {
                warnings.push(format!(
                    "host:{label}: `run --memory` refuses more than 90% of RAM; the matching real run is `--scope host` (`--machine host:all`)"
                ));
            }
            (
                facts.mem_total,
                format!("MemTotal, with the workload in a memory cgroup limited to {label} (as `run --memory {label}`):\n#   the simulator runs the cgroup's limit reclaim, as the real run does"),
            )
        }
    };
    let memory_mib = memory / MIB;
    if memory_mib > 4 * 1024 * 1024 {
        return Err(HostError::with_fix(
            format!(
                "--machine host: {} of memory is more than the simulator's 4 TiB",
                human_bytes(memory)
            ),
            "--machine host:SIZE with a smaller SIZE",
        ));
    }
    let swap = facts.swap_total + arg.swap_file.unwrap_or(0);
    let swap_note = match (facts.swap_total, arg.swap_file) {
        (0, None) => {
            warnings.push("this host has no swap: stutterp's anon hogs cannot be reclaimed (the real run needs --swap-file SIZE; add swap=SIZE to match it)".into());
            "none active".to_string()
        }
        (s, None) => format!("active swap ({})", human_bytes(s)),
        (s, Some(f)) => format!(
            "active swap ({}) + {} as `run --swap-file {}` adds",
            human_bytes(s),
            human_bytes(f),
            size_arg(f)
        ),
    };
    // The simulator splits memory evenly over nodes and needs a CPU and
    // 32 MiB per node.
    let nodes = facts
        .nodes
        .min(facts.cpus)
        .min((memory_mib / 32).max(1) as u32)
        .max(1);
    let nodes_note = if nodes == facts.nodes {
        "/sys/devices/system/node".to_string()
    } else {
        format!(
            "{} in /sys/devices/system/node, capped at one per CPU and per 32 MiB",
            facts.nodes
        )
    };
    // A single spinning disk streams at most ~300 MB/s; virtual disks (virtio,
    // Xen) often say `rotational` whatever is behind them.
    const SPINNING_MAX_MB_S: f64 = 300.0;
    let (dev_name, rotational, dev_note) = match &facts.device {
        Some(d) => {
            let fastest = bw.device_write_mb_s().max(if bw.read_measured {
                bw.device_read_mb_s()
            } else {
                0.0
            });
            let rotating = d.rotational && fastest <= SPINNING_MAX_MB_S;
            let kind = match (d.rotational, rotating) {
                (true, true) => "rotating".to_string(),
                (true, false) => format!(
                    "says rotational but moves {fastest:.0} MB/s, more than a spinning disk can: taken as flash"
                ),
                _ => "flash or virtual".to_string(),
            };
            (
                d.name.clone(),
                rotating,
                format!(
                    "{}: {kind}; queue/nr_requests {}",
                    d.name,
                    d.nr_requests.map_or("unknown".into(), |n| n.to_string())
                ),
            )
        }
        None => (
            "data".to_string(),
            false,
            "no block device found under it (overlay, network or device-mapper without sysfs); named `data`".to_string(),
        ),
    };
    // Latency and seek from the single 4 KiB direct reads where they were
    // measured; else the defaults of the built-in machines by kind. The
    // queue depth is not measured.
    let (default_latency, default_seek) = if rotational {
        (200.0, 6000.0)
    } else {
        (80.0, 20.0)
    };
    // The tag set's depth where sysfs shows it (blk-mq); else the built-in
    // machines' 32 (a SATA disk's NCQ).
    let (queue_depth, qd_note) = match facts.device.as_ref().and_then(|d| d.nr_tags) {
        Some(n) if n > 0 => (
            n,
            format!("{n}, the disk's mq/0/nr_tags (requests in flight at once)"),
        ),
        _ => (
            32,
            "not readable (no mq/0/nr_tags); the built-in machines' 32".to_string(),
        ),
    };
    let (latency_us, seek_us, latency_note) = match bw.latency {
        Some(l) => {
            let (lat, seek) = l.device_params(bw.device_read_mb_s());
            (
                lat,
                seek,
                format!(
                    "latency_us, seek_us: measured, 4 KiB O_DIRECT reads one at a time: {:.1} µs in order, \
                     {:.1} µs at random offsets (latency = in order less the transfer at read_mb_s; \
                     seek = random less in order)",
                    l.seq_4k_us, l.rand_4k_us
                ),
            )
        }
        None => (
            default_latency,
            default_seek,
            format!(
                "latency_us, seek_us: not measured (direct reads refused or too slow); defaults for a {} device",
                if rotational { "rotating" } else { "flash" }
            ),
        ),
    };
    // blk-mq unless the kernel predates 5.0 and the disk has no `mq` directory.
    let single_queue = matches!(&facts.device, Some(d) if !d.mq)
        && facts
            .kernel
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| m < 5);
    let layer = if single_queue {
        "single-queue"
    } else {
        "blk-mq"
    };
    let name = "host";
    let mem_label = match arg.memory {
        HostMemory::All => format!("all {}", human_bytes(memory)),
        HostMemory::Limit(b) => format!("a {} cgroup", human_bytes(b)),
    };
    let description = format!(
        "this host ({}{}): {} CPUs, {} of {} RAM, {} swap, {} writing {:.0} MB/s (measured {})",
        facts.hostname,
        if facts.hostname.is_empty() {
            facts.kernel.clone()
        } else {
            format!(", {}", facts.kernel)
        },
        facts.cpus,
        mem_label,
        human_bytes(facts.mem_total),
        human_bytes(swap),
        dev_name,
        bw.device_write_mb_s(),
        utc_date(bw.when_unix)
    );
    let (write_note, read_note) = match bw.direct {
        Some(d) => (
            format!(
                "measured, that file overwritten in 1 MiB O_DIRECT writes, {DIRECT_DEPTH} in flight, and fdatasync \
                 (the calibration write `dd if=/dev/zero bs=1M count={} conv=fdatasync`, which times the page cache too, gave {:.1})",
                bw.mib, bw.write_mb_s
            ),
            match d.read_mb_s {
                Some(_) => format!(
                    "measured, 1 MiB O_DIRECT reads of that file, {DIRECT_DEPTH} in flight (buffered sequential reads gave {:.1})",
                    bw.read_mb_s
                ),
                None => format!(
                    "measured: buffered sequential 1 MiB reads of that file after dropping its cached pages \
                     (direct reads were cut short); {:.1}",
                    bw.read_mb_s
                ),
            },
        ),
        None => (
            format!(
                "measured, `dd if=/dev/zero bs=1M count={} conv=fdatasync` in {} (run's calibration write; \
                 direct I/O was refused, so this times the page cache too)",
                bw.mib,
                facts.dir.display()
            ),
            if bw.read_measured {
                "measured: sequential 1 MiB reads of that file after dropping its cached pages".to_string()
            } else {
                "ESTIMATED as equal to the write bandwidth (the file's cached pages could not be dropped to measure it)".to_string()
            },
        ),
    };
    let mut t = String::new();
    t.push_str(&format!(
        "# This host as a reclaimlab machine profile (`sim --machine host`); bandwidth measured {}.\n\
         # Pass this file to `sim --machine FILE` to repeat a run exactly; `--machine host`\n\
         # measures again after a day (the bandwidth varies between measurements).\n\
         # host: {}   kernel: {}\n\
         # cpus: sched_getaffinity of the process; nodes: {nodes_note}\n\
         # memory: {mem_note}; MemTotal {}\n\
         # swap: {swap_note}\n\
         # data device: the one holding {} ({dev_note})\n\
         # write_mb_s: {write_note}\n\
         # read_mb_s: {read_note}\n\
         # {latency_note}\n\
         # queue_depth: {qd_note}\n\
         # layer: {layer} (from the disk's sysfs `mq` directory and the kernel version)\n\
         # scheduler, max_sectors_kb, wbt_lat_usec: the disk's sysfs queue settings, where readable\n",
        utc_date(bw.when_unix),
        facts.hostname,
        facts.kernel,
        human_bytes(facts.mem_total),
        facts.dir.display(),
    ));
    t.push_str(&format!("name = {}\n", toml_str(name)));
    t.push_str(&format!("description = {}\n", toml_str(&description)));
    t.push_str(&format!("cpus = {}\n", facts.cpus));
    t.push_str(&format!("nodes = {nodes}\n"));
    t.push_str(&format!("memory_mib = {memory_mib}\n"));
    t.push_str(&format!("swap_mib = {}\n", swap / MIB));
    if let Some(thp) = facts.thp {
        t.push_str(&format!(
            "thp = {}  # /sys/kernel/mm/transparent_hugepage/enabled: with khugepaged running, min_free_kbytes is raised at boot\n",
            toml_str(thp)
        ));
    }
    if let HostMemory::Limit(b) = arg.memory {
        let version = facts.memcg_version.unwrap_or(2);
        t.push_str(&format!(
            "\n# the cgroup `run --memory` creates; version: {}\n",
            match facts.memcg_version {
                Some(_) => "this host's memory controller (/proc/self/mounts)",
                None => "no memory controller mounted here: v2 assumed",
            }
        ));
        t.push_str("[workload_cgroup]\n");
        t.push_str(&format!("memory_max_mib = {}\n", b / MIB));
        t.push_str(&format!("version = {version}\n"));
    }
    t.push_str("\n[[devices]]\n");
    t.push_str(&format!("name = {}\n", toml_str(&dev_name)));
    t.push_str(&format!("layer = {}\n", toml_str(layer)));
    t.push_str(&format!("write_mb_s = {:.1}\n", bw.device_write_mb_s()));
    t.push_str(&format!("read_mb_s = {:.1}\n", bw.device_read_mb_s()));
    t.push_str(&format!("latency_us = {latency_us:.1}\n"));
    t.push_str(&format!("seek_us = {seek_us:.1}\n"));
    t.push_str(&format!("queue_depth = {queue_depth}\n"));
    // The block layer's own settings, as sysfs has them (the simulator
    // models none, mq-deadline and blk-wbt; another scheduler is noted and
    // left to the default).
    if let Some(d) = &facts.device {
        match d.scheduler.as_deref() {
            Some(sched @ ("none" | "mq-deadline")) if !single_queue => {
                t.push_str(&format!("scheduler = {}\n", toml_str(sched)));
            }
            Some(other) => t.push_str(&format!(
                "# scheduler: {other} on this host (not modelled; the kernel's default is used)\n"
            )),
            None => {}
        }
        if let Some(kb) = d.max_sectors_kb {
            t.push_str(&format!("max_sectors_kb = {kb}\n"));
        }
        if let Some(us) = d.wbt_lat_usec {
            t.push_str(&format!("wbt_lat_usec = {us}\n"));
        }
        // What the kernel goes by (swap readahead, swap slots, blk-wbt's
        // default), whatever the device's speed says about it.
        t.push_str(&format!(
            "rotational = {}  # queue/rotational\n",
            d.rotational
        ));
    }
    // The filesystem decides whether reclaim can write a dirty page and
    // when a write into a fallocated block ends (reclaimlab's DataFs).
    match facts.fstype.as_deref() {
        Some(fs @ ("xfs" | "ext4")) => {
            t.push_str(&format!("fs = {}  # {} (/proc/mounts)\n", toml_str(fs), facts.dir.display()))
        }
        Some(other) => t.push_str(&format!(
            "# fs: {other} at {} (not modelled: a filesystem that writes any dirty page from reclaim and ends writes at the bio)\n",
            facts.dir.display()
        )),
        None => {}
    }
    Ok((t, warnings))
}
