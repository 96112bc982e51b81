//! mmtests' `tests-sysstate`/`tests-timestamp` (vmstat snapshots, `time ::`
//! lines, CPU and node counts), the saved `kernel.version` and kconfig `CONFIG_HZ`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::error::{RecordError, Result};
use crate::lines::{open_maybe_gz, read_capped, LineReader};
use crate::vmstat::{parse_vmstat_line, VmstatSnapshot};

use super::mmtests::list_dir;

/// Largest `tests-sysstate` read (decompressed): its snapshots of
/// `/proc/vmstat`, `meminfo`, `zoneinfo` and `schedstat` come to a few MiB
/// even on machines with hundreds of CPUs.
pub(super) const MAX_SYSSTATE: u64 = 256 << 20;

/// The parts of `tests-sysstate`/`tests-timestamp` the importer uses.
#[derive(Default)]
pub(super) struct SysState {
    pub(super) vm_start: Option<VmstatSnapshot>,
    pub(super) vm_end: Option<VmstatSnapshot>,
    /// (user, system, elapsed)
    pub(super) time: Option<(f64, f64, f64)>,
    pub(super) mem_total_kb: Option<u64>,
    pub(super) cpus: Option<u32>,
    pub(super) nodes: Option<u32>,
    pub(super) test_begin: Option<u64>,
    pub(super) test_end: Option<u64>,
}

pub(super) fn parse_sysstate(path: &Path, test: &str, st: &mut SysState) -> Result<()> {
    let raw = read_capped(
        path,
        MAX_SYSSTATE,
        "mmtests' tests-sysstate (vmstat, meminfo, zoneinfo snapshots)",
    )?;
    let text = String::from_utf8_lossy(&raw);
    #[derive(PartialEq)]
    enum Block {
        None,
        VmStart,
        VmEnd,
        Meminfo,
        Schedstat,
        Zoneinfo,
    }
    let mut block = Block::None;
    let mut snap = VmstatSnapshot::default();
    let mut seen_test = false;
    let mut in_test = false;
    let mut cpus: u32 = 0;
    let mut nodes: BTreeSet<u32> = BTreeSet::new();
    let finish = |block: &Block, snap: &mut VmstatSnapshot, st: &mut SysState| match block {
        Block::VmStart if st.vm_start.is_none() => st.vm_start = Some(std::mem::take(snap)),
        Block::VmEnd if st.vm_end.is_none() => st.vm_end = Some(std::mem::take(snap)),
        _ => *snap = VmstatSnapshot::default(),
    };
    for (i, line) in text.lines().enumerate() {
        let ln = i as u64 + 1;
        if let Some(rest) = line.strip_prefix("test begin :: ") {
            let mut it = rest.split_whitespace();
            let first = it.next();
            if first == Some(test) || first.is_some_and(|f| f.parse::<u64>().is_ok()) {
                // `test begin :: TEST EPOCH`, or the kvm runner's `test begin :: EPOCH`.
                seen_test = true;
                in_test = true;
                let ts = if first == Some(test) {
                    it.next()
                } else {
                    first
                };
                st.test_begin = ts.and_then(|t| t.parse().ok());
            } else {
                in_test = false;
            }
            finish(&block, &mut snap, st);
            block = Block::None;
            continue;
        }
        if let Some(rest) = line.strip_prefix("test end :: ") {
            let mut it = rest.split_whitespace();
            let first = it.next();
            if first == Some(test) {
                st.test_end = it.next().and_then(|t| t.parse().ok());
            } else if in_test {
                st.test_end = first.and_then(|t| t.parse().ok());
            }
            finish(&block, &mut snap, st);
            block = Block::None;
            in_test = false;
            continue;
        }
        if let Some(rest) = line.strip_prefix("time :: ") {
            finish(&block, &mut snap, st);
            block = Block::None;
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.first() != Some(&test) && !f.is_empty() {
                continue;
            }
            // Finite and not negative, or the line is refused here, naming
            // it: `1e999` parses to infinity, which only `run.json`'s final
            // check would have caught, naming the output instead (issue 22).
            let num = |i: usize| {
                f.get(i)
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v >= 0.0)
            };
            match (num(1), num(3), num(5)) {
                (Some(u), Some(s), Some(e))
                    if f.get(2) == Some(&"user")
                        && f.get(4) == Some(&"system")
                        && f.get(6) == Some(&"elapsed") =>
                {
                    st.time.get_or_insert((u, s, e));
                }
                _ => {
                    return Err(RecordError::line(
                        path,
                        ln,
                        format!(
                            "{line:?}: expected `time :: {test} U user S system E elapsed` \
                             with U, S and E seconds (finite, not negative), \
                             as /usr/bin/time -f \"%U user %S system %e elapsed\" prints it"
                        ),
                    ))
                }
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("file ") {
            finish(&block, &mut snap, st);
            let relevant = in_test || !seen_test;
            block = match rest.split_once(" :: ") {
                Some(("start", "/proc/vmstat")) if relevant => Block::VmStart,
                Some(("end", "/proc/vmstat")) if relevant => Block::VmEnd,
                Some(("start", "/proc/meminfo")) if relevant => Block::Meminfo,
                Some(("start", "/proc/schedstat")) if relevant => Block::Schedstat,
                Some(("start", "/proc/zoneinfo")) if relevant => Block::Zoneinfo,
                _ => Block::None,
            };
            continue;
        }
        match block {
            Block::VmStart | Block::VmEnd => {
                if line.contains(" :: ") {
                    // Another mmtests marker ends the block.
                    finish(&block, &mut snap, st);
                    block = Block::None;
                    continue;
                }
                match parse_vmstat_line(line) {
                    Ok(Some((n, v))) => snap.counters.push((n.to_string(), v)),
                    Ok(None) => {}
                    Err(m) => {
                        return Err(RecordError::line(
                            path,
                            ln,
                            format!(
                                "{m}; inside the `file start/end :: /proc/vmstat` block every line \
                                 must be a /proc/vmstat line"
                            ),
                        ))
                    }
                }
            }
            Block::Meminfo => {
                if let Some(v) = line.strip_prefix("MemTotal:") {
                    let kb = v.trim().trim_end_matches("kB").trim();
                    if let Ok(kb) = kb.parse::<u64>() {
                        st.mem_total_kb.get_or_insert(kb);
                    }
                }
            }
            Block::Schedstat => {
                if let Some(r) = line.strip_prefix("cpu") {
                    if r.split_whitespace()
                        .next()
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty())
                    {
                        cpus += 1;
                    }
                }
            }
            Block::Zoneinfo => {
                if let Some(r) = line.strip_prefix("Node ") {
                    if let Some(n) = r.split(',').next().and_then(|n| n.trim().parse().ok()) {
                        nodes.insert(n);
                    }
                }
            }
            Block::None => {}
        }
    }
    finish(&block, &mut snap, st);
    if cpus > 0 {
        st.cpus.get_or_insert(cpus);
    }
    if !nodes.is_empty() {
        st.nodes.get_or_insert(nodes.len() as u32);
    }
    Ok(())
}

pub(super) fn read_kernel_version(iter: &Path) -> Option<String> {
    let t = fs::read_to_string(iter.join("kernel.version")).ok()?;
    // `uname -a`: Linux HOST RELEASE ...
    t.split_whitespace().nth(2).map(str::to_string)
}

/// `CONFIG_HZ` from the `kconfig-RELEASE.txt(.gz)` mmtests saves.
pub(super) fn read_kconfig_hz(iter: &Path) -> Option<u32> {
    let kconfig = list_dir(iter)
        .ok()?
        .into_iter()
        .find(|(n, _)| {
            n.starts_with("kconfig-") && (n.ends_with(".txt.gz") || n.ends_with(".txt"))
        })?
        .1;
    let mut r = LineReader::new(open_maybe_gz(&kconfig).ok()?);
    while let Some(Ok(line)) = r.next_line() {
        if let Some(v) = line.strip_prefix(b"CONFIG_HZ=") {
            return std::str::from_utf8(v).ok()?.trim().parse().ok();
        }
    }
    None
}
