//! The report: per workload, each group's kernel CPU per page scanned
//! (or touched) in every run, mean ± sd, the sums, where each group's
//! samples are, and for the mapped workloads a table per event.

use std::collections::HashMap;

use crate::perf::Run;
use crate::schemes::{Scheme, MAPPED};
use crate::tally::Tally;

/// Mean and sample standard deviation.
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

/// "run 1 | run 2 | …", the runs' columns of a table's header.
pub fn run_columns(runs: &[Run]) -> String {
    (1..=runs.len())
        .map(|i| format!("run {i}"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A row's cells: each run's value, then "mean ± sd".
pub fn values_and_mean(v: &[f64]) -> String {
    let (m, sd) = mean_sd(v);
    format!(
        "{} | {m:.1} ± {sd:.1}",
        v.iter()
            .map(|x| format!("{x:.1}"))
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

/// The samples of the row `name`: all the kernel's, "kernel, rest", one
/// of `scheme`'s sums, or a group.
pub fn samples(scheme: &Scheme, t: &Tally, name: &str) -> u64 {
    let group = |g: &str| t.groups.get(g).copied().unwrap_or(0);
    match name {
        "**kernel, all**" => t.kernel(),
        "kernel, rest" => t.kernel_rest,
        _ => scheme
            .sums
            .iter()
            .find(|s| s.0 == name)
            .map_or_else(|| group(name), |s| s.1.iter().map(|p| group(p)).sum()),
    }
}

/// One of the tallies' maps summed over the runs.
fn merged(runs: &[Run], map: impl Fn(&Tally) -> &HashMap<String, u64>) -> HashMap<String, u64> {
    let mut all: HashMap<String, u64> = HashMap::new();
    for r in runs {
        for (k, v) in map(&r.tally) {
            *all.entry(k.clone()).or_default() += v;
        }
    }
    all
}

fn ns_per_page(r: &Run, samples: u64) -> f64 {
    samples as f64 * r.period_ns / r.pages.max(1) as f64
}

pub fn report(title: &str, scheme: &Scheme, per: &str, runs: &[Run]) {
    println!("\n### {title}\n");
    for (i, r) in runs.iter().enumerate() {
        let t = &r.tally;
        print!(
            "run {}: {:.2} s, {} pages {per}, {} kernel + {} user samples of {:.0} ns; other tasks {:.2} CPUs, steal {:.3}; load {}",
            i + 1,
            r.wall_s,
            r.pages,
            t.kernel(),
            t.user,
            r.period_ns,
            r.other_cpus,
            r.steal_cpus,
            r.loadavg
        );
        if t.batches > 0 {
            print!(
                "; {} inactive batches, {:.1} pages each, reclaimed {} ({:.1} %), active-list pages {}",
                t.batches,
                (t.scanned - t.active_scanned) as f64 / t.batches as f64,
                t.reclaimed,
                100.0 * t.reclaimed as f64 / t.scanned.max(1) as f64,
                t.active_scanned
            );
        }
        println!();
    }
    let mut names: Vec<&str> = scheme.held.iter().map(|g| g.0).collect();
    for g in scheme.groups {
        if !names.contains(&g.0) {
            names.push(g.0);
        }
    }
    println!(
        "\n| kernel CPU, ns per page {per} | {} | mean ± sd | samples (all runs) |",
        run_columns(runs)
    );
    println!("|---|{}---|---|", "---|".repeat(runs.len()));
    let row = |name: &str, get: &dyn Fn(&Tally) -> u64| {
        let v: Vec<f64> = runs.iter().map(|r| ns_per_page(r, get(&r.tally))).collect();
        let n: u64 = runs.iter().map(|r| get(&r.tally)).sum();
        println!("| {name} | {} | {n} |", values_and_mean(&v));
    };
    for n in names.iter().copied().chain(["kernel, rest"]) {
        row(n, &|t: &Tally| samples(scheme, t, n));
    }
    for (name, _) in scheme.sums {
        row(name, &|t: &Tally| samples(scheme, t, name));
    }
    row("**kernel, all**", &|t: &Tally| t.kernel());
    row("user space", &|t: &Tally| t.user);
    // What a flat profile shows, and where the unlocks were called from.
    let leaves = merged(runs, |t| &t.leaves);
    let callers = merged(runs, |t| &t.unlock_callers);
    let total: u64 = runs.iter().map(|r| r.tally.kernel()).sum::<u64>().max(1);
    let top = |m: &HashMap<String, u64>, n: usize| {
        let mut v: Vec<_> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter()
            .take(n)
            .map(|(k, c)| format!("{k} {:.1} %", 100.0 * *c as f64 / total as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let gl = merged(runs, |t| &t.group_leaves);
    let chains = merged(runs, |t| &t.flush_chains);
    println!("\nwhere each group's samples are (leaf symbol, % of the group's samples, top 4):");
    for n in names.iter().copied().chain(["kernel, rest"]) {
        let mut v: Vec<(&str, u64)> = gl
            .iter()
            .filter_map(|(k, c)| {
                let (g, leaf) = k.split_once('\t')?;
                (g == n).then_some((leaf, *c))
            })
            .collect();
        let sum: u64 = v.iter().map(|x| x.1).sum();
        if sum == 0 {
            continue;
        }
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        println!(
            "- {n}: {}",
            v.iter()
                .take(4)
                .map(|(l, c)| format!("{l} {:.0} %", 100.0 * *c as f64 / sum as f64))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !chains.is_empty() {
        let mut v: Vec<_> = chains.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        println!("\nTLB flush samples by call chain (top 4):");
        for (c, n) in v.iter().take(4) {
            println!("- {n}: {c}");
        }
    }
    println!(
        "\nflat profile (leaf symbol, % of kernel samples): {}",
        top(&leaves, 14)
    );
    println!(
        "unlock_irq* samples by caller (return offset): {}",
        top(&callers, 10)
    );
}

/// The anon / mapped-file table per event: each row's samples over the
/// count of what it is paid per.
pub fn report_per_event(runs: &[Run]) {
    type Per = fn(&Tally) -> u64;
    let inactive: Per = |t| t.scanned - t.active_scanned;
    let active: Per = |t| t.active_scanned;
    // Pages unmapped: written to swap (anon), or reclaimed (clean file
    // pages are unmapped and freed in one pass).
    let written: Per = |t| {
        if t.written > 0 {
            t.written
        } else {
            t.reclaimed
        }
    };
    let reclaimed: Per = |t| t.reclaimed;
    // Every page touched faults (its page was reclaimed since the last
    // pass) and its charge reclaims one page: in steady state faults =
    // pages reclaimed (a trial with perf counting every fault: 108,623
    // faults, 108,617 pages reclaimed). The thread's own fault counters
    // cover a wider window (perf's start-up), so the tracepoints' count
    // is the denominator.
    let faults: Per = |t| t.reclaimed;
    // Pages scanned while mapped: those kept (referenced once), activated
    // (referenced again) or unmapped and written; the rest were already
    // unmapped (in the swap cache, written or under writeback).
    let mapped: Per = |t| {
        t.ref_keep
            + t.activated
            + if t.written > 0 {
                t.written
            } else {
                t.reclaimed
            }
    };
    let rows: &[(&str, Per, &str)] = &[
        (
            "= inactive scan: isolation + folio_referenced + checks + put back",
            inactive,
            "inactive page scanned",
        ),
        (
            "inactive: folio_referenced (rmap walk, young bits)",
            inactive,
            "inactive page scanned",
        ),
        (
            "inactive: folio_referenced (rmap walk, young bits)",
            mapped,
            "mapped page scanned",
        ),
        (
            "= inactive scan without folio_referenced",
            inactive,
            "inactive page scanned",
        ),
        (
            "inactive: isolation (+ put back) under lru_lock",
            inactive,
            "inactive page scanned",
        ),
        ("= active list scan", active, "active page scanned"),
        (
            "active list: folio_referenced",
            active,
            "active page scanned",
        ),
        (
            "= unmap (try_to_unmap + TLB flush)",
            written,
            "page unmapped",
        ),
        (
            "unmap: TLB flush (deferred batch, IPIs)",
            written,
            "page unmapped",
        ),
        (
            "swap slot + swap cache (folio_alloc_swap)",
            written,
            "page unmapped",
        ),
        (
            "writeout: submission (swap_writeout, bio)",
            written,
            "page unmapped",
        ),
        (
            "writeout: plug flush (request to the disk)",
            written,
            "page unmapped",
        ),
        (
            "= swap-out: unmap + slot/cache + writeout",
            written,
            "page unmapped",
        ),
        (
            "= write completion (in its interrupt)",
            written,
            "page unmapped",
        ),
        (
            "freeing (remove mapping / swap cache, uncharge, free)",
            reclaimed,
            "page reclaimed",
        ),
        (
            "unmap: try_to_unmap (rmap walk, pte → swap entry)",
            written,
            "page unmapped",
        ),
        (
            "= swap-in fault (without the reclaim it triggers)",
            faults,
            "fault (= page reclaimed)",
        ),
        (
            "file fault (filemap_fault, readahead, ext4)",
            faults,
            "fault (= page reclaimed)",
        ),
        ("**kernel, all**", faults, "fault (= page reclaimed)"),
    ];
    println!("\ncounts per run (from the tracepoints; faults from the thread's stat over a wider window, perf's start-up included):");
    for (i, r) in runs.iter().enumerate() {
        let t = &r.tally;
        println!(
            "run {}: inactive scanned {} (anon {}), activated {}, kept (rotated) {}, under writeback {}, reclaimed {}, written {}, active scanned {} (referenced {}), page-cache folios removed {} ({:.2} pages each), faults {} (major {})",
            i + 1,
            t.scanned - t.active_scanned,
            t.anon_scanned,
            t.activated,
            t.ref_keep,
            t.writeback,
            t.reclaimed,
            t.written,
            t.active_scanned,
            t.active_referenced,
            t.folios_removed,
            t.pages_removed as f64 / t.folios_removed.max(1) as f64,
            t.faults,
            t.major_faults
        );
    }
    println!(
        "\n| kernel CPU, ns per event | per | {} | mean ± sd |",
        run_columns(runs)
    );
    println!("|---|---|{}---|", "---|".repeat(runs.len()));
    for &(name, per, unit) in rows {
        let v: Vec<f64> = runs
            .iter()
            .map(|r| {
                let t = &r.tally;
                samples(&MAPPED, t, name) as f64 * r.period_ns / per(t).max(1) as f64
            })
            .collect();
        println!("| {name} | {unit} | {} |", values_and_mean(&v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_spread() {
        assert_eq!(mean_sd(&[2.0]), (2.0, 0.0));
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0]);
        assert!((m - 2.0).abs() < 1e-12 && (sd - 1.0).abs() < 1e-12);
    }
}
