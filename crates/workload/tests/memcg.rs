//! Behaviour tests of memory cgroups: limit reclaim, OOM, `memory.high`,
//! protection, cgroup v1's writeback waits, and the 4.16/4.17 congestion
//! flags (seed 003). Each names the kernel function it checks.

mod common;

use common::{field, machine, sim, Collect};
use reclaimlab_workload::sim::RunSummary;

/// 1 GiB, one fast disk, no swap: only the cgroups' limits make reclaim run.
const ROOMY: &str = "name='roomy'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";

fn cgroup<'a>(s: &'a RunSummary, name: &str) -> &'a reclaimlab_kernel::mm::memcontrol::MemCgroup {
    s.cgroups
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no cgroup {name}"))
}

fn vm(s: &RunSummary, name: &str, ev: &str) -> u64 {
    let i = reclaimlab_kernel::mm::memcontrol::MEMCG_VM_NAMES
        .iter()
        .position(|n| *n == ev)
        .unwrap();
    cgroup(s, name).vm[i]
}

fn event(s: &RunSummary, name: &str, ev: &str) -> u64 {
    let i = reclaimlab_kernel::mm::memcontrol::MEMCG_EVENT_NAMES
        .iter()
        .position(|n| *n == ev)
        .unwrap();
    cgroup(s, name).events[i]
}

/// `try_charge_memcg` → `try_to_free_mem_cgroup_pages` (5.15.0): a cgroup
/// whose page cache outgrows `memory.max` is reclaimed down to it by its
/// own limit reclaim, which counts the memcg's `pgscan_direct` and the
/// global `pgscan_file` but not the global `pgscan_direct`/`allocstall`
/// (`cgroup_reclaim(sc)` guards them); a cgroup beside it is untouched.
#[test]
fn limit_reclaim_holds_a_cgroup_at_its_max() {
    let spec = "name='lim'\nduration_s=6\n\
        [[cgroup]]\nname='box'\nmemory_max='64M'\n\
        [[cgroup]]\nname='free'\n\
        [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=256\npattern='sequential'\ncgroup='box'\nin_warmup=false\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=32\nblock_kib=64\ncgroup='free'\n";
    let (c, s) = sim(&machine(ROOMY), "v5.15", spec, 1, &[]);
    let b = cgroup(&s, "box");
    assert!(
        b.peak <= 64 * 256,
        "peak {} pages over the 64 MiB limit",
        b.peak
    );
    assert!(
        b.peak > 60 * 256,
        "the writer should fill its cgroup: peak {}",
        b.peak
    );
    assert!(event(&s, "box", "max") > 0);
    assert!(vm(&s, "box", "pgscan_direct") > 10_000);
    assert!(vm(&s, "box", "pgsteal_direct") > 10_000);
    assert_eq!(
        c.delta("pgscan_direct"),
        0,
        "limit reclaim is not global direct reclaim"
    );
    assert_eq!(c.delta("allocstall_normal"), 0);
    assert!(c.delta("pgscan_file") >= vm(&s, "box", "pgscan_direct"));
    assert_eq!(vm(&s, "free", "pgscan_direct"), 0);
    assert_eq!(event(&s, "free", "max"), 0);
}

/// `mem_cgroup_oom` → `out_of_memory` with `oc->memcg` (5.15.0): an anon
/// hog larger than its cgroup, with no swap, is killed by the memcg OOM
/// killer (an outcome in the record, not a crash); a task in another cgroup
/// is not chosen, though it is larger.
#[test]
fn a_cgroup_too_small_for_its_hog_ooms_inside_the_cgroup() {
    let spec = "name='oom'\nduration_s=5\n\
        [[cgroup]]\nname='tight'\nmemory_max='32M'\n\
        [[cgroup]]\nname='big'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=48\ncgroup='tight'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=200\ncgroup='big'\n";
    let (c, s) = sim(&machine(ROOMY), "v5.16", spec, 1, &[]);
    assert!(!s.oom_kills.is_empty(), "no OOM kill");
    for (_, o, cg) in &s.oom_kills {
        assert_eq!(cg, "tight");
        assert_eq!(o.constraint, "CONSTRAINT_MEMCG");
        assert!(
            o.free_pages > 100 * 256,
            "the machine had memory free: {}",
            o.free_pages
        );
    }
    assert!(event(&s, "tight", "oom") > 0 && event(&s, "tight", "oom_kill") > 0);
    assert_eq!(event(&s, "big", "oom_kill"), 0);
    // The victim's forced charges end with its fault: it faults no more.
    assert!(
        cgroup(&s, "tight").peak <= 32 * 256 + 1,
        "peak {}",
        cgroup(&s, "tight").peak
    );
    assert_eq!(c.delta("oom_kill"), s.oom_kills.len() as u64);
    assert!(!c.events("mark_victim").is_empty());
}

/// `mem_cgroup_handle_over_high` (5.15.0 = 6.1.0): a hog that pushes its
/// cgroup over `memory.high` is reclaimed (`high` events) and, once the
/// overage outgrows what reclaim can give back (no swap for its anon),
/// sleeps the penalty; below `memory.max` nothing is charged at the limit.
#[test]
fn memory_high_reclaims_then_penalises() {
    let spec = "name='high'\nduration_s=5\n\
        [[cgroup]]\nname='soft'\nmemory_high='40M'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=48\ncgroup='soft'\n";
    let (_c, s) = sim(&machine(ROOMY), "v5.15", spec, 1, &[]);
    assert!(event(&s, "soft", "high") > 0, "no high event");
    assert_eq!(event(&s, "soft", "max"), 0);
    assert!(
        cgroup(&s, "soft").high_delay_ns > 100_000_000,
        "penalty slept only {} ns",
        cgroup(&s, "soft").high_delay_ns
    );
}

/// `shrink_node_memcgs` / `mem_cgroup_below_min` (5.15.0): under global
/// pressure, a cgroup whose usage is within its `memory.min` is skipped;
/// its twin without protection is reclaimed.
#[test]
fn memory_min_shields_a_cgroup_from_global_reclaim() {
    let tiny = "name='tiny'\ncpus=2\nmemory_mib=160\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";
    let spec = "name='min'\nduration_s=8\nwarmup_s=0\n\
        [[cgroup]]\nname='kept'\nmemory_min='48M'\n\
        [[cgroup]]\nname='open'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='kept'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='open'\n\
        [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=400\npattern='sequential'\n";
    let (_c, s) = sim(&machine(tiny), "v5.16", spec, 1, &[]);
    let scanned = |n: &str| vm(&s, n, "pgscan_kswapd") + vm(&s, n, "pgscan_direct");
    assert!(
        scanned("open") > 100,
        "the open cgroup was not reclaimed: {}",
        scanned("open")
    );
    assert_eq!(scanned("kept"), 0, "the protected cgroup was scanned");
}

/// `shrink_node_memcgs` / `mem_cgroup_below_low` (5.15.0): `memory.low`
/// shields a cgroup as long as others have reclaimable pages (it is
/// skipped, and no `low` event is counted: the `memcg_low_reclaim` retry
/// is never needed).
#[test]
fn memory_low_shields_a_cgroup_while_others_can_give() {
    let tiny = "name='tiny'\ncpus=2\nmemory_mib=160\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";
    let spec = "name='min'\nduration_s=8\nwarmup_s=0\n\
        [[cgroup]]\nname='kept'\nmemory_low='48M'\n\
        [[cgroup]]\nname='open'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='kept'\n\
        [[worker]]\nkind='file-reader'\nfiles=1\nfile_mib=40\nblock_kib=64\ncgroup='open'\n\
        [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=400\npattern='sequential'\n";
    let (_c, s) = sim(&machine(tiny), "v5.16", spec, 1, &[]);
    let scanned = |n: &str| vm(&s, n, "pgscan_kswapd") + vm(&s, n, "pgscan_direct");
    assert!(
        scanned("open") > 100,
        "the open cgroup was not reclaimed: {}",
        scanned("open")
    );
    assert_eq!(scanned("kept"), 0, "the protected cgroup was scanned");
    assert_eq!(event(&s, "kept", "low"), 0);
}

/// `shrink_folio_list` case 3 (5.15.0, `!writeback_throttling_sane`):
/// cgroup v1 limit reclaim waits for pages it marked under writeback;
/// under v2 it never does. 6.0's WRITEBACK throttle after waking the
/// flushers (the v6.1 profile) fires for v1 only.
#[test]
fn cgroup_v1_limit_reclaim_waits_on_writeback() {
    // blk-wbt off (`wbt_lat_usec=0`): the flusher may then keep a request
    // queue's worth of pages under writeback (64 requests of 1280 KiB, more
    // than the cgroup holds), as on the single-queue layer where case 3
    // came from. With wbt on, it holds a few requests' worth
    // (writeback::write_and_submit) and reclaim seldom meets a page it
    // marked still under writeback.
    let slow = "name='slow'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=20\nread_mb_s=40\nlatency_us=500\nseek_us=4000\nwbt_lat_usec=0\n";
    // Files the writers pass over several times in the run (each pass
    // writes every block once), so that reclaim meets pages it marked
    // before still under writeback: 2 × 40 MiB in a 48 MiB cgroup.
    let spec = |key: &str| {
        format!(
            "name='v1'\nduration_s=10\n\
             [[cgroup]]\nname='w'\n{key}='48M'\n\
             [[worker]]\nkind='file-writer'\ncount=2\nfiles=1\nfile_mib=40\ncgroup='w'\nin_warmup=false\n"
        )
    };
    let (c1, s1) = sim(
        &machine(slow),
        "v6.1",
        &spec("limit_in_bytes"),
        1,
        &[("memcg.version", "1")],
    );
    let (c2, s2) = sim(&machine(slow), "v6.1", &spec("memory_max"), 1, &[]);
    assert!(s1.writeback_waits.0 > 0, "v1 never waited on writeback");
    assert_eq!(s2.writeback_waits.0, 0, "v2 waited on writeback");
    let wb = |c: &Collect| {
        c.events("mm_vmscan_throttled")
            .iter()
            .filter(|(_, f)| f.contains("VMSCAN_THROTTLE_WRITEBACK"))
            .count()
    };
    assert!(wb(&c1) > 0, "no v1 WRITEBACK throttle under v6.1");
    assert_eq!(wb(&c2), 0, "v2 limit reclaim throttled for WRITEBACK");
    assert!(event(&s1, "w", "max") > 0 && event(&s2, "w", "max") > 0);
}

/// Seed 003 (Ryabinin, 2018; 4.16 `shrink_inactive_list` against 4.17
/// `shrink_node`): the congester's cgroup v2 limit reclaim, finding all its
/// dirty pages on a congested single-queue disk, sets the node's
/// PGDAT_CONGESTED under v4.16, which only kswapd clears; the victim's own
/// limit reclaim then sleeps in wait_iff_congested after its batches. Under
/// v4.17 the flag is the congester's own and the victim does not sleep.
/// With v4.16's per-batch flags turned off (`policy.congestion_flags=
/// per_pass`), the victim does not sleep either: the leak is the cause.
///
/// The leak needs the congester's cgroup full of dirty pages, which it is
/// only without cgroup writeback (`memcg.cgroup_writeback=0`: the io
/// controller not on the v2 hierarchy, or a filesystem without
/// `SB_I_CGROUPWB`, such as XFS before 5.3). With it, the congester's
/// writers are held to the cgroup's own dirty limit, its limit reclaim
/// meets only clean pages at the LRU tail, never sets PGDAT_CONGESTED, and
/// the v4.16 victim does not sleep either (docs/memcg.md, seed 003).
#[test]
fn seed_003_memcg_congestion_leaks_only_before_4_17() {
    let m = reclaimlab_kernel::machine::Machine::load("hdd-pair-2018").unwrap();
    let spec = include_str!("../../../examples/workloads/memcg-congestion.toml")
        .replace("file_mib = 2048", "file_mib = 256");
    let victim = |c: &Collect, s: &RunSummary| {
        let comm = s
            .tasks
            .iter()
            .rev()
            .find(|t| t.comm == "fio")
            .map(|t| format!("fio-{}", t.pid))
            .unwrap();
        let slept: u64 = c
            .trace
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{comm} ")))
            .filter_map(|l| l.split(": writeback_wait_iff_congested: ").nth(1))
            .map(|f| common::field(f, "usec_delayed"))
            .sum();
        let elapsed_us = c
            .lat
            .iter()
            .find(|l| l.1 == "elapsed")
            .map_or(f64::INFINITY, |l| l.3);
        (slept as f64, elapsed_us)
    };
    let no_cgwb = ("memcg.cgroup_writeback", "0");
    let (c16, s16) = sim(&m, "v4.16", &spec, 1, &[no_cgwb]);
    let (c17, s17) = sim(&m, "v4.17", &spec, 1, &[no_cgwb]);
    let (off, soff) = sim(
        &m,
        "v4.16",
        &spec,
        1,
        &[no_cgwb, ("policy.congestion_flags", "per_pass")],
    );
    let (cgwb, scgwb) = sim(&m, "v4.16", &spec, 1, &[]);
    let (slept16, el16) = victim(&c16, &s16);
    let (slept17, el17) = victim(&c17, &s17);
    let (slept_off, _) = victim(&off, &soff);
    let (slept_cgwb, el_cgwb) = victim(&cgwb, &scgwb);
    assert_eq!(
        slept_cgwb, 0.0,
        "v4.16 with cgroup writeback: the victim slept in wait_iff_congested"
    );
    assert!(
        el_cgwb <= el17 * 1.01,
        "elapsed v4.16 with cgroup writeback {el_cgwb} us, v4.17 {el17} us"
    );
    assert!(el17.is_finite(), "the victim did not finish under v4.17");
    assert!(
        slept16 > 0.3 * el16.min(s16.elapsed_s * 1e6),
        "v4.16 victim slept {slept16} us of {el16} us"
    );
    assert_eq!(slept17, 0.0, "the v4.17 victim slept in wait_iff_congested");
    assert_eq!(slept_off, 0.0, "v4.16 without per-batch flags still leaked");
    assert!(
        el16 > 2.0 * el17,
        "elapsed v4.16 {el16} us, v4.17 {el17} us"
    );
}

/// 1 GiB, one slow disk (20 MB/s), no swap: a writer outpaces the disk.
const SLOW: &str = "name='slow'\ncpus=2\nmemory_mib=1024\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=20\nread_mb_s=100\nlatency_us=100\nseek_us=50\n";

/// The memcg dirty domain (`mdtc` in 5.15 `balance_dirty_pages`,
/// `mem_cgroup_wb_stats`, `mdtc_calc_avail`, `wb_over_bg_thresh`): a
/// writer in a cgroup v2 with `memory.max` 128M is throttled against the
/// cgroup's own dirty limit, a fifth of what the cgroup may use (about
/// 6,550 pages), long before the global one (a fifth of the machine's
/// 1 GiB), so its dirty and writeback pages stay near that limit; the
/// `balance_dirty_pages` lines that pause it come from its wb's cgroup
/// (`cgroup_ino=2`) and show the memcg domain's dirty pages. The same
/// writer in a v1 cgroup (no cgroup writeback: no memcg domain) or with
/// `memcg.cgroup_writeback=0` is never throttled, and fills its cgroup
/// with dirty pages.
#[test]
fn a_v2_cgroups_writer_is_held_to_the_cgroups_own_dirty_limit() {
    let spec = |limit_key: &str| {
        format!(
            "name='cgwb'\nduration_s=8\n\
             [[cgroup]]\nname='box'\n{limit_key}='128M'\n\
             [[worker]]\nkind='file-writer'\nfiles=1\nfile_mib=1024\npattern='sequential'\ncgroup='box'\nin_warmup=false\n"
        )
    };
    let m = machine(SLOW);
    let peak_dirty = |c: &Collect| {
        let i = c.names.iter().position(|n| n == "nr_dirty").unwrap();
        let j = c.names.iter().position(|n| n == "nr_writeback").unwrap();
        c.rows.iter().map(|r| r[i] + r[j]).max().unwrap()
    };
    let paused = |c: &Collect| {
        c.events("balance_dirty_pages")
            .into_iter()
            .filter(|(_, f)| field(f, "pause") > 0)
            .collect::<Vec<_>>()
    };
    let (v2, _) = sim(&m, "v5.15", &spec("memory_max"), 1, &[]);
    let (v1, _) = sim(
        &m,
        "v5.15",
        &spec("limit_in_bytes"),
        1,
        &[("memcg.version", "1")],
    );
    let (off, _) = sim(
        &m,
        "v5.15",
        &spec("memory_max"),
        1,
        &[("memcg.cgroup_writeback", "0")],
    );
    let (ctl, _) = sim(
        &m,
        "v5.15",
        &spec("memory_max"),
        1,
        &[("writeback.kernel_controls", "1")],
    );
    // The memcg domain's threshold: 20 % of the cgroup's 32,768 pages.
    let m_thresh = 32_768 * 20 / 100;
    // With the kernel's position control (wb_position_ratio on the memcg's
    // cgwb_domain) as with the estimate.
    assert!(paused(&ctl).len() > 20);
    assert!(
        peak_dirty(&ctl) <= m_thresh * 5 / 4,
        "kernel controls: {} pages dirty or under writeback",
        peak_dirty(&ctl)
    );
    let p2 = paused(&v2);
    assert!(p2.len() > 20, "v2 writer paused {} times", p2.len());
    assert!(p2.iter().all(|(_, f)| f.ends_with("cgroup_ino=2")));
    let max_traced = p2.iter().map(|(_, f)| field(f, "dirty")).max().unwrap();
    assert!(
        max_traced <= m_thresh * 11 / 10,
        "the memcg domain's dirty pages reached {max_traced}"
    );
    assert!(
        peak_dirty(&v2) <= m_thresh * 5 / 4,
        "v2: {} pages dirty or under writeback, memcg threshold {m_thresh}",
        peak_dirty(&v2)
    );
    for (name, c) in [("v1", &v1), ("v2 without cgroup writeback", &off)] {
        assert!(
            paused(c).is_empty(),
            "{name}: the writer was throttled: {:?} peak {}",
            paused(c).first(),
            peak_dirty(c)
        );
        assert!(
            peak_dirty(c) > 3 * m_thresh,
            "{name}: only {} pages dirty or under writeback",
            peak_dirty(c)
        );
    }
}

/// A 96 MiB hog cycling through swap in a 32 MiB cgroup of a 1 GiB
/// machine with a fast disk, 4 s under v6.1 with `params` set: its
/// counters and the hog's system seconds.
fn hog_swap_cycle(params: &[(&str, &str)]) -> (Collect, f64) {
    const SWAPPY: &str = "name='swappy'\ncpus=2\nmemory_mib=1024\nswap_mib=1024\n[[devices]]\nname='sda'\nwrite_mb_s=2000\nread_mb_s=2000\nlatency_us=20\nseek_us=5\n";
    let spec = "name='cycle'\nduration_s=4\nwarmup_s=0\n\
        [[cgroup]]\nname='box'\nmemory_max='32M'\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=96\ncgroup='box'\n";
    let (c, s) = sim(&machine(SWAPPY), "v6.1", spec, 1, params);
    let sys = s
        .tasks
        .iter()
        .filter(|t| t.comm == "memory-hog")
        .map(|t| t.system_s)
        .sum();
    (c, sys)
}

/// `shrink_folio_list` → `add_to_swap` → `try_to_unmap` → `pageout`
/// (6.1): an anonymous page's way to swap costs its reclaimer CPU that a
/// clean file page's does not (`cost.swapout_page_ns`, measured by the
/// `anon_reclaim_cost` example). A hog cycling through swap in its cgroup
/// pays it once per page written to swap: its system time per swap-out
/// rises by the parameter, within the noise of everything else it does.
#[test]
fn each_swap_out_costs_its_reclaimer_the_swapout_cpu() {
    let per_swapout = |ns: &str| {
        let (c, sys) = hog_swap_cycle(&[("cost.swapout_page_ns", ns)]);
        let out = c.delta("pswpout");
        assert!(
            out > 10_000,
            "the hog must cycle through swap: {out} swap-outs"
        );
        sys * 1e9 / out as f64
    };
    let (without, with) = (per_swapout("0"), per_swapout("5000"));
    assert!(
        (with - without - 5000.0).abs() < 1500.0,
        "system ns per swap-out: {without:.0} without the cost, {with:.0} with 5000"
    );
}

/// A swap-in (5.15 `do_swap_page` → `swapin_readahead` →
/// `__read_swap_cache_async` and `swap_readpage` for each page of the
/// window) costs the faulting task `cost.swapin_page_ns` per page read,
/// readahead pages included, on top of `cost.fault_ns` per fault; a swap
/// write's submission (5.15 `__swap_writepage`, a bio per page) costs its
/// reclaimer `cost.swap_submit_page_ns` per page written (both measured by
/// `perf_page_costs --workloads anon`). A hog cycling through swap in its
/// cgroup: its system time per page swapped in rises by the first, per page
/// swapped out by the second. The window reads several pages per major
/// fault here, so a cost charged per fault instead would show as a
/// fraction of it.
#[test]
fn swap_reads_and_swap_writes_cost_their_measured_cpu() {
    let run = |swapin: &str, submit: &str| {
        let (c, sys) = hog_swap_cycle(&[
            ("cost.swapin_page_ns", swapin),
            ("cost.swap_submit_page_ns", submit),
        ]);
        let (pin, pout, maj) = (c.delta("pswpin"), c.delta("pswpout"), c.delta("pgmajfault"));
        assert!(
            pin > 10_000 && pout > 10_000,
            "the hog must cycle through swap: {pin} swap-ins, {pout} swap-outs"
        );
        assert!(
            2 * maj < pin,
            "readahead must read several pages per major fault: {maj} major faults, {pin} pages read"
        );
        (sys * 1e9, pin as f64, pout as f64)
    };
    let (base, base_in, base_out) = run("0", "0");
    let (dear_in, pin, _) = run("5000", "0");
    let (dear_out, _, pout) = run("0", "5000");
    let per_in = (
        dear_in / pin - base / base_in,
        dear_out / pout - base / base_out,
    );
    assert!(
        (per_in.0 - 5000.0).abs() < 1500.0,
        "system ns per page swapped in rises by {:.0} with a 5000 ns swap-in page",
        per_in.0
    );
    assert!(
        (per_in.1 - 5000.0).abs() < 1500.0,
        "system ns per page swapped out rises by {:.0} with a 5000 ns swap submission",
        per_in.1
    );
}

/// Without swap nothing is read from or written to swap, so the swap-in
/// and swap-submission costs change nothing: the run is the same, byte
/// for byte, whatever they cost, and a file page's write and read keep
/// `cost.io_submit_page_ns`.
#[test]
fn a_run_without_swap_never_pays_the_swap_costs() {
    const NOSWAP: &str = "name='noswap'\ncpus=2\nmemory_mib=128\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\n";
    let spec = "name='files'\nduration_s=3\nwarmup_s=0\n\
        [[worker]]\nkind='file-writer'\ncount=2\nfiles=2\nfile_mib=48\n\
        [[worker]]\nkind='file-reader'\nfiles=2\nfile_mib=64\nblock_kib=64\n\
        [[worker]]\nkind='anon-hog'\nsize_mib=24\n";
    let run = |set: &[(&str, &str)]| {
        let (c, s) = sim(&machine(NOSWAP), "v6.1", spec, 1, set);
        assert!(
            c.delta("pgscan_kswapd") + c.delta("pgscan_direct") > 10_000,
            "reclaim must run"
        );
        assert!(
            c.delta("pgpgin") > 0 && c.delta("pgpgout") > 0,
            "file I/O must run"
        );
        (c.rows, c.trace, format!("{:?}", s.tasks), s.system_s)
    };
    let dear = [
        ("cost.swapin_page_ns", "100000"),
        ("cost.swap_submit_page_ns", "100000"),
    ];
    assert!(
        run(&[]) == run(&dear),
        "a run without swap changed with the swap costs"
    );
}
