//! A guest as a simulator machine: `sim --machine guest:2G,cpus=2,disk=16,…`.
//!
//! `run --kernel` boots its kernels in a qemu guest with a given RAM, vCPUs,
//! a data disk capped by qemu's `throttling.bps-total`, a swap disk of the
//! guest's RAM and, with `--memory`, a cgroup v2 limit inside the guest. The
//! same description, written as `guest:ITEMS`, gives the simulator the same
//! machine, so that `sim` and `run --kernel` of one workload compare like for
//! like. Every guest record names its machine this way (`machine.name` and
//! `params.guest.machine` of its `run.json`): pass that string to
//! `sim --machine`.
//!
//! | item | meaning | default (as `run --kernel`) |
//! |---|---|---|
//! | `SIZE` (first) | guest RAM (`--guest-memory`) | 2G |
//! | `cpus=N` | vCPUs (`--guest-cpus`) | 2 |
//! | `disk=MB/s` | the data disk's cap (`--disk-mb-s`), 10^6 bytes/s | 16 |
//! | `swap=SIZE` | the swap disk (`run` gives it the guest's RAM) | the RAM |
//! | `memory=SIZE` | the cgroup v2 limit inside the guest (`--memory`) | none: global reclaim |
//! | `cpu-slowdown=F` | every `cost.*` CPU cost multiplied by F | 1 |
//! | `memtotal-kb=N` | the guest kernel's MemTotal, KiB (`/proc/meminfo`): the RAM less what it reserved at boot | the RAM (nothing reserved) |
//! | `boot-used-kb=N` | memory in use when the workload started, KiB: MemTotal less the first vmstat sample's `nr_free_pages` | 0 |
//! | `slab-kb=N` | of that, reclaimable slab, KiB: the first vmstat sample's `nr_slab_reclaimable`; with it the OS's shrinkable objects ([`GUEST_OS_SUPERS`]) | 0: none |
//! | `thp=always\|madvise\|never` | the guest kernel's transparent huge pages (`thp.enabled` of its record): with `always` or `madvise` khugepaged raises `min_free_kbytes` at boot, and the watermarks with it (the simulator's pages stay order 0) | `never` |
//!
//! **The kernel's own memory.** A guest kernel manages less than its RAM
//! (the memmap, the kernel image and firmware reservations never reach the
//! buddy allocator) and, when the workload starts, more of it is in use
//! (slab, kernel stacks, page tables, percpu and vmalloc areas, the OS's
//! page cache and shmem). `memtotal-kb=` and `boot-used-kb=` give the
//! machine file's `boot_reserved_kib` (RAM less MemTotal) and
//! `boot_used_kib`. A guest run writes them into its record's machine
//! string; for a record made before that, [`record_machine`] derives them
//! from the record (`params.host.mem_total_bytes` and the first row of
//! `vmstat.csv`). `boot-used-kb` counts everything not free at that sample,
//! the OS's page cache and shmem (a few MiB) included. `slab-kb=` says
//! how much of it is reclaimable slab (the machine file's
//! `[os_slab] reclaimable_kib`), and brings the guest image's shrinkable
//! objects with it ([`GUEST_OS_SUPERS`], docs/slab.md).
//!
//! **The slow CPU.** The simulator has no clock rate: CPU speed is its
//! `cost.*` parameters (ns of CPU per page faulted, zeroed, scanned,
//! reclaimed, …). A TCG guest runs them many times slower while its timeouts
//! stay wall-clock, so `cpu-slowdown=F` multiplies every `cost.*` default by
//! F. A guest run measures F inside the guest ([`crate::cpu_probe`]: first
//! touches, `memset`, stores and `munmap` of a fresh mapping, against the
//! defaults they stand for) and writes it into the record's machine string.
//! The costs the probe cannot reach (scan, reclaim, I/O submission, wake-up)
//! get the same factor: an assumption, said in the machine file.
//!
//! Nothing here boots or measures: pure parsing and formatting.

use crate::error::{parse_size, HostError, Result};
use crate::machine::size_arg;

const MIB: u64 = 1 << 20;

/// The accepted spelling, for error messages.
pub const GUEST_SYNTAX: &str = "--machine guest:2G,cpus=2,disk=16,swap=2G,memory=512M,cpu-slowdown=40 (items after `guest:` separated by commas; all optional; a guest record's machine.name is one)";

/// Largest `cpu-slowdown`; a scaled cost above its parameter's maximum is
/// capped there (`sim`'s `scale_costs`).
pub const MAX_SLOWDOWN: f64 = 500.0;

/// What the booted guest's shrinkers see in the root memcg when its
/// workload starts, as `(fs, seeks, unused dentries, delete_inode,
/// referenced extents)`: measured once with `mm_shrink_slab_start`'s
/// `cache items` at the first kswapd pass of Debian 6.1 in this guest
/// image (docs/slab.md, "The booted OS's slab"): three superblocks with
/// `seeks = 0` (proc and kernfs: 12, 15 and 6 objects), the tools disk's
/// ext4 superblock (2) and its extent-status shrinker (32 entries, the
/// count both kernels show nearly all the run). Which seeks-0 superblock
/// is proc is not in the trace; proc's inodes are deleted at their last
/// `iput` (`generic_delete_inode`), so its objects are dentries only.
pub const GUEST_OS_SUPERS: [(&str, u64, u64, bool, u64); 4] = [
    ("proc", 0, 12, true, 0),
    ("sysfs", 0, 15, false, 0),
    ("cgroup2", 0, 6, false, 0),
    ("ext4", 2, 2, false, 32),
];

/// KiB of slab pages [`GUEST_OS_SUPERS`]' dentries and their inodes fill:
/// the simulator's `dentry` slab holds 21 a page, its `inode_cache` 6
/// (crates/kernel/src/mm/slab.rs), which checks this again.
pub fn guest_os_lru_kb() -> u64 {
    let d: u64 = GUEST_OS_SUPERS.iter().map(|s| s.2).sum();
    (d.div_ceil(21) + d.div_ceil(6)) * 4
}

/// Largest `swapout-ns`: `cost.swapout_page_ns`'s maximum.
pub const MAX_SWAPOUT_NS: u64 = 100_000_000;

/// Largest `swap-lat-us`: one second.
pub const MAX_SWAP_LAT_US: f64 = 1_000_000.0;

/// The mode `transparent_hugepage/enabled` selects, from a mode's name or
/// from the file's text (`always [madvise] never`: the bracketed word).
pub fn thp_mode(s: &str) -> Option<&'static str> {
    let word = match (s.find('['), s.find(']')) {
        (Some(a), Some(b)) if a < b => &s[a + 1..b],
        _ => s.trim(),
    };
    ["always", "madvise", "never"]
        .into_iter()
        .find(|m| *m == word)
}

/// A guest as `run --kernel` boots it.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestMachine {
    /// Guest RAM, bytes.
    pub memory: u64,
    /// vCPUs.
    pub cpus: u32,
    /// The data disk's cap, MB/s (10^6 bytes/s), reads and writes together.
    pub disk_mb_s: u64,
    /// Swap, bytes.
    pub swap: u64,
    /// A cgroup v2 limit inside the guest, bytes.
    pub cgroup: Option<u64>,
    /// Multiplier of every `cost.*` parameter.
    pub cpu_slowdown: f64,
    /// The swap-out's cost as the guest measured it (`swapout-ns=`): its
    /// swap cycle ([`crate::cpu_probe::swap_cycle`]) less
    /// [`crate::cpu_probe::SWAP_CYCLE_BASE_NS`] at `cpu_slowdown`; `sim`
    /// sets `cost.swapout_page_ns` from it. None: the default times
    /// `cpu_slowdown`, as every other cost.
    pub swapout_ns: Option<u64>,
    /// The swap cycle's halves as the guest measured them apart
    /// ([`crate::cpu_probe::swap_halves`]): system CPU per page reclaim
    /// writes to swap (`reclaim-ns=`) and per page a fault reads back
    /// (`swapin-ns=`), guest ns. `sim` scales reclaim's own costs to the
    /// first and sets the swap-in's to the second, in place of the median
    /// factor (and of `swapout-ns=`). None: not measured.
    pub reclaim_ns: Option<u64>,
    /// See `reclaim_ns`.
    pub swapin_ns: Option<u64>,
    /// CPU per context switch as the guest measured it
    /// ([`crate::cpu_probe::switch_cost`]; `switch-ns=`), guest ns: `sim`
    /// sets `cost.wakeup_ns` to it. None: the default times the slowdown.
    pub switch_ns: Option<u64>,
    /// The swap disk as the guest measured it (`swap-lat-us=`,
    /// `swap-mb-s=`; [`crate::cpu_probe::swap_read_latency`]): one read's
    /// latency, µs, and the read bandwidth, MB/s. None: the nominal
    /// 100 µs and 200 MB/s.
    pub swap_lat_us: Option<f64>,
    /// See `swap_lat_us`.
    pub swap_mb_s: Option<f64>,
    /// The guest kernel's MemTotal, KiB (`memtotal-kb=`). None: all of
    /// the RAM (what `sim` assumed before guests recorded it).
    pub mem_total_kb: Option<u64>,
    /// Memory in use when the workload started, KiB (`boot-used-kb=`).
    /// None: nothing.
    pub boot_used_kb: Option<u64>,
    /// Of that, reclaimable slab, KiB (`slab-kb=`). None: none.
    pub slab_kb: Option<u64>,
    /// The guest kernel's transparent huge pages (`thp=`): `always`,
    /// `madvise` or `never`. None: not given (the simulator takes `never`).
    pub thp: Option<&'static str>,
}

/// The probe's figures a guest machine carries as measured: its item and
/// the probe's key (`reclaimlab worker cpu-costs`, `guest.cpu.*`).
pub const PROBE_ITEMS: [(&str, &str); 3] = [
    ("reclaim-ns", "swap_out_ns"),
    ("swapin-ns", "swap_in_ns"),
    ("switch-ns", "ctx_switch_ns"),
];

impl GuestMachine {
    /// Sets each [`PROBE_ITEMS`] item this machine lacks from `probe` (ns
    /// by the probe's key), rounded and capped as the item takes it; a
    /// figure that is not a finite non-negative number is left out.
    /// Returns the items set: (item, probe key, ns).
    pub fn fill_probe_figures(
        &mut self,
        probe: impl Fn(&str) -> Option<f64>,
    ) -> Vec<(&'static str, &'static str, u64)> {
        let mut set = Vec::new();
        for (item, key) in PROBE_ITEMS {
            let field = match item {
                "reclaim-ns" => &mut self.reclaim_ns,
                "swapin-ns" => &mut self.swapin_ns,
                _ => &mut self.switch_ns,
            };
            if field.is_some() {
                continue;
            }
            *field = probe(key)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(|x| (x.round() as u64).min(MAX_SWAPOUT_NS));
            if let Some(n) = *field {
                set.push((item, key, n));
            }
        }
        set
    }

    /// `run --kernel`'s defaults.
    pub fn defaults() -> GuestMachine {
        GuestMachine {
            memory: 2 << 30,
            cpus: 2,
            disk_mb_s: 16,
            swap: 2 << 30,
            cgroup: None,
            cpu_slowdown: 1.0,
            swapout_ns: None,
            reclaim_ns: None,
            swapin_ns: None,
            switch_ns: None,
            swap_lat_us: None,
            swap_mb_s: None,
            mem_total_kb: None,
            boot_used_kb: None,
            slab_kb: None,
            thp: None,
        }
    }

    /// Parses `guest` or `guest:ITEMS`; `None` if `s` does not name a guest
    /// (a file called `guest` can be given as `./guest`).
    pub fn parse(s: &str) -> Option<Result<GuestMachine>> {
        let rest = if s == "guest" {
            ""
        } else {
            s.strip_prefix("guest:")?
        };
        Some(Self::parse_items(s, rest))
    }

    fn parse_items(whole: &str, rest: &str) -> Result<GuestMachine> {
        let bad = |what: String, fix: &str| {
            Err(HostError::with_fix(
                format!("--machine {whole}: {what}"),
                if fix.is_empty() {
                    format!("write {GUEST_SYNTAX}")
                } else {
                    fix.to_string()
                },
            ))
        };
        if whole != "guest" && rest.trim().is_empty() {
            return bad("nothing after `guest:`".into(), "");
        }
        let mut m = GuestMachine::defaults();
        let mut seen: Vec<&str> = Vec::new();
        let mut swap_given = false;
        for (i, item) in rest.split(',').filter(|_| !rest.is_empty()).enumerate() {
            let item = item.trim();
            if item.is_empty() {
                return bad("an empty item between commas".into(), "");
            }
            let (key, v) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None if i == 0 => ("", item),
                None => {
                    return bad(
                        format!("`{item}`: only the first item (the guest's RAM) has no `key=`"),
                        "",
                    )
                }
            };
            if seen.contains(&key) {
                let name = if key.is_empty() { "the RAM" } else { key };
                return bad(format!("{name} given twice"), "");
            }
            seen.push(key);
            let size = |field: &str, ex: &str| -> Result<u64> {
                parse_size(&format!("--machine {whole}: {field}"), v).map_err(|e| {
                    HostError::with_fix(
                        e.what,
                        format!(
                            "give {field} as a size with K, M or G (powers of 1024), e.g. {ex}"
                        ),
                    )
                })
            };
            match key {
                "" => m.memory = size("the RAM (first item)", "guest:2G")?,
                "cpus" => {
                    m.cpus = match v.parse::<u32>() {
                        Ok(n @ 1..=64) => n,
                        _ => return bad(format!("cpus=`{v}` is not 1..=64 vCPUs"), "e.g. guest:2G,cpus=2 (as run --guest-cpus)"),
                    }
                }
                "disk" => {
                    m.disk_mb_s = match v.trim_end_matches("MB/s").parse::<u64>() {
                        Ok(n @ 1..=100_000) => n,
                        _ => return bad(format!("disk=`{v}` is not a bandwidth of 1..=100000 MB/s"), "e.g. guest:2G,disk=16 (as run --disk-mb-s 16)"),
                    }
                }
                "swap" => {
                    m.swap = if v == "0" {
                        0
                    } else {
                        size("swap=", "guest:2G,swap=2G (0 for none)")?
                    };
                    swap_given = true;
                }
                "memory" => m.cgroup = Some(size("memory=", "guest:2G,memory=512M (as run --memory 512M)")?),
                "cpu-slowdown" => {
                    m.cpu_slowdown = match v.trim_end_matches('x').parse::<f64>() {
                        Ok(f) if (0.1..=MAX_SLOWDOWN).contains(&f) => f,
                        _ => return bad(format!("cpu-slowdown=`{v}` is not a factor of 0.1..={MAX_SLOWDOWN}"), "e.g. guest:2G,cpu-slowdown=40 (a TCG guest's record names its measured factor)"),
                    }
                }
                "swapout-ns" => {
                    m.swapout_ns = match v.parse::<u64>() {
                        Ok(n) if n <= MAX_SWAPOUT_NS => Some(n),
                        _ => return bad(format!("swapout-ns=`{v}` is not a whole number of ns up to {MAX_SWAPOUT_NS}"), "e.g. guest:2G,cpu-slowdown=26.5,swapout-ns=900000 (a TCG guest's record names its measured figure)"),
                    }
                }
                "reclaim-ns" | "swapin-ns" | "switch-ns" => {
                    let n = match v.parse::<u64>() {
                        Ok(n) if n <= MAX_SWAPOUT_NS => n,
                        _ => return bad(format!("{key}=`{v}` is not a whole number of ns up to {MAX_SWAPOUT_NS}"), "e.g. guest:1G,cpu-slowdown=19.4,reclaim-ns=18784,swapin-ns=44188,switch-ns=40000 (a TCG guest's record names its measured figures)"),
                    };
                    *match key {
                        "reclaim-ns" => &mut m.reclaim_ns,
                        "swapin-ns" => &mut m.swapin_ns,
                        _ => &mut m.switch_ns,
                    } = Some(n);
                }
                "swap-lat-us" => {
                    m.swap_lat_us = match v.parse::<f64>() {
                        Ok(x) if (0.0..=MAX_SWAP_LAT_US).contains(&x) => Some(x),
                        _ => return bad(format!("swap-lat-us=`{v}` is not a latency of 0..={MAX_SWAP_LAT_US} µs"), "e.g. guest:2G,swap-lat-us=450 (a TCG guest's record names its measured figure)"),
                    }
                }
                "swap-mb-s" => {
                    m.swap_mb_s = match v.parse::<f64>() {
                        Ok(x) if (1.0..=100_000.0).contains(&x) => Some(x),
                        _ => return bad(format!("swap-mb-s=`{v}` is not a bandwidth of 1..=100000 MB/s"), "e.g. guest:2G,swap-mb-s=350 (a TCG guest's record names its measured figure)"),
                    }
                }
                "memtotal-kb" => {
                    m.mem_total_kb = match v.parse::<u64>() {
                        Ok(n) if n > 0 && n & 3 == 0 => Some(n),
                        _ => return bad(format!("memtotal-kb=`{v}` is not a whole number of 4 KiB pages in KiB"), "e.g. guest:1G,memtotal-kb=987392 (the guest's MemTotal in /proc/meminfo; a guest record names it)"),
                    }
                }
                "boot-used-kb" => {
                    m.boot_used_kb = match v.parse::<u64>() {
                        Ok(n) if n & 3 == 0 => Some(n),
                        _ => return bad(format!("boot-used-kb=`{v}` is not a whole number of 4 KiB pages in KiB"), "e.g. guest:1G,memtotal-kb=987392,boot-used-kb=87092 (MemTotal less the free memory when the workload started; a guest record names it)"),
                    }
                }
                "slab-kb" => {
                    m.slab_kb = match v.parse::<u64>() {
                        Ok(n) if n & 3 == 0 => Some(n),
                        _ => return bad(format!("slab-kb=`{v}` is not a whole number of 4 KiB pages in KiB"), "e.g. guest:1G,memtotal-kb=987392,boot-used-kb=87092,slab-kb=19876 (nr_slab_reclaimable x 4 of the first vmstat sample; a guest record names it)"),
                    }
                }
                "thp" => {
                    m.thp = match thp_mode(v) {
                        Some(t) if !v.contains('[') => Some(t),
                        _ => return bad(format!("thp=`{v}` is not always, madvise or never"), "e.g. guest:1G,thp=always (the guest's /sys/kernel/mm/transparent_hugepage/enabled; a guest record names it as thp.enabled)"),
                    }
                }
                other => return bad(format!("unknown item `{other}=`"), &format!("items are SIZE, cpus=, disk=, swap=, memory=, cpu-slowdown=, swapout-ns=, reclaim-ns=, swapin-ns=, switch-ns=, swap-lat-us=, swap-mb-s=, memtotal-kb=, boot-used-kb=, slab-kb=, thp=; write {GUEST_SYNTAX}")),
            }
        }
        if !swap_given {
            m.swap = m.memory;
        }
        m.check(whole)?;
        Ok(m)
    }

    /// The limits `run --kernel` puts on a guest (its preflight), so a
    /// machine described here is one a guest run could have had.
    fn check(&self, whole: &str) -> Result<()> {
        if self.memory < 768 * MIB {
            return Err(HostError::with_fix(
                format!(
                    "--machine {whole}: guest RAM {} MiB is below the 768 MiB a guest run needs",
                    self.memory / MIB
                ),
                "guest:2G (as run --guest-memory 2G)",
            ));
        }
        if self.memory > 1 << 40 {
            return Err(HostError::with_fix(
                format!("--machine {whole}: guest RAM above 1 TiB"),
                "guest:2G",
            ));
        }
        if let Some(c) = self.cgroup {
            if c < 256 * MIB || c > self.memory / 10 * 8 {
                return Err(HostError::with_fix(
                    format!(
                        "--machine {whole}: memory={} is outside 256M..80% of the guest's RAM, as run --memory inside a guest",
                        size_arg(c)
                    ),
                    format!("memory={}M", (self.memory / MIB) / 2),
                ));
            }
        }
        if self.swap > 1 << 40 {
            return Err(HostError::with_fix(
                format!("--machine {whole}: swap above 1 TiB"),
                "swap=SIZE up to the guest's RAM (as run gives it)",
            ));
        }
        // A kernel manages most of its RAM (a 1 GiB guest: 96%): half is
        // the least taken for a MemTotal, and half of MemTotal the most in
        // use before a workload starts.
        let ram_kb = self.memory >> 10;
        if let Some(t) = self.mem_total_kb {
            if t > ram_kb || t < ram_kb / 2 {
                return Err(HostError::with_fix(
                    format!(
                        "--machine {whole}: memtotal-kb={t} is outside half to all of the guest's RAM ({ram_kb} KiB)"
                    ),
                    "give the guest's MemTotal from /proc/meminfo in KiB (its record's params.host.mem_total_bytes / 1024)",
                ));
            }
        }
        if let Some(u) = self.boot_used_kb {
            let total = self.mem_total_kb.unwrap_or(ram_kb);
            if u > total / 2 {
                return Err(HostError::with_fix(
                    format!(
                        "--machine {whole}: boot-used-kb={u} is more than half of MemTotal ({total} KiB)"
                    ),
                    "give MemTotal less nr_free_pages x 4 of the guest's first vmstat sample, in KiB",
                ));
            }
        }
        if let Some(r) = self.slab_kb.filter(|&r| r > 0) {
            let used = self.boot_used_kb.unwrap_or(0);
            let min = guest_os_lru_kb();
            if r > used || r < min {
                return Err(HostError::with_fix(
                    format!(
                        "--machine {whole}: slab-kb={r} is not between the {min} KiB of slab the guest's shrinkable objects fill and boot-used-kb={used}, the memory in use at boot it is part of"
                    ),
                    "give nr_slab_reclaimable x 4 of the guest's first vmstat sample, in KiB, with boot-used-kb= (it is part of that memory)",
                ));
            }
        }
        Ok(())
    }

    /// This machine with the guest kernel's MemTotal and the memory in use
    /// when its workload started, KiB; `None` if they are outside what
    /// `memtotal-kb=` and `boot-used-kb=` accept.
    pub fn with_boot_memory(&self, mem_total_kb: u64, boot_used_kb: u64) -> Option<GuestMachine> {
        let m = GuestMachine {
            mem_total_kb: Some(mem_total_kb),
            boot_used_kb: Some(boot_used_kb),
            ..self.clone()
        };
        (mem_total_kb & 3 == 0 && boot_used_kb & 3 == 0 && m.check("guest").is_ok()).then_some(m)
    }

    /// The canonical `guest:…` string: every item, in a fixed order. Parsing
    /// it gives this machine back.
    pub fn to_arg(&self) -> String {
        let mut s = format!(
            "guest:{},cpus={},disk={},swap={}",
            size_arg(self.memory),
            self.cpus,
            self.disk_mb_s,
            if self.swap == 0 {
                "0".to_string()
            } else {
                size_arg(self.swap)
            }
        );
        if let Some(c) = self.cgroup {
            s.push_str(&format!(",memory={}", size_arg(c)));
        }
        if self.cpu_slowdown != 1.0 {
            s.push_str(&format!(",cpu-slowdown={}", fmt_factor(self.cpu_slowdown)));
        }
        if let Some(n) = self.swapout_ns {
            s.push_str(&format!(",swapout-ns={n}"));
        }
        for (k, v) in [
            ("reclaim-ns", self.reclaim_ns),
            ("swapin-ns", self.swapin_ns),
            ("switch-ns", self.switch_ns),
        ] {
            if let Some(n) = v {
                s.push_str(&format!(",{k}={n}"));
            }
        }
        if let Some(x) = self.swap_lat_us {
            s.push_str(&format!(",swap-lat-us={}", fmt_factor(x)));
        }
        if let Some(x) = self.swap_mb_s {
            s.push_str(&format!(",swap-mb-s={}", fmt_factor(x)));
        }
        if let Some(t) = self.mem_total_kb {
            s.push_str(&format!(",memtotal-kb={t}"));
        }
        if let Some(u) = self.boot_used_kb {
            s.push_str(&format!(",boot-used-kb={u}"));
        }
        if let Some(r) = self.slab_kb {
            s.push_str(&format!(",slab-kb={r}"));
        }
        if let Some(t) = self.thp {
            s.push_str(&format!(",thp={t}"));
        }
        s
    }

    /// The machine as machine-file TOML (`reclaimlab_kernel::machine`'s
    /// fields), with comments saying which figure is the guest's and which
    /// is assumed. The `cpu-slowdown` is not a machine field: the caller
    /// applies it to the `cost.*` parameters ([`GuestMachine::cpu_slowdown`]).
    pub fn machine_toml(&self) -> String {
        let name = self.to_arg();
        let disk = self.disk_mb_s as f64;
        // blk-mq's default elevator (`elevator_get_default`, block/elevator.c
        // in 5.10 and 6.1): none when the device has more than one hardware
        // queue; qemu (>= 5.2) gives virtio-blk-pci one queue per vCPU.
        let scheduler = if self.cpus > 1 { "none" } else { "mq-deadline" };
        let mut t = format!(
            "# A qemu guest as `reclaimlab run --kernel` boots it, as a reclaimlab machine\n\
             # (`sim --machine {name}`).\n\
             # memory_mib: the guest's RAM (-m); {reserved}\n\
             # boot_used_kib: {used}\n\
             # cpus: vCPUs (-smp); their speed is not a machine field: cpu-slowdown={f}\n\
             #   multiplies every cost.* parameter (measured inside the guest by its run;\n\
             #   costs the probe cannot reach, scan/reclaim/io-submit/wake-up, get the same factor)\n\
             # vdb: the data disk, qemu throttling.bps-total = {disk} MB/s, shared by reads and\n\
             #   writes (modelled as {disk} MB/s each way); qemu releases throttled I/O in bursts,\n\
             #   the simulator serves it evenly; latency_us, seek_us: not measured\n\
             # scheduler: {scheduler} (elevator_get_default: virtio-blk has one queue per vCPU);\n\
             # wbt_lat_usec: virtio-blk is rotational to the guest (no QUEUE_FLAG_NONROT): 75 ms\n\
             # queue_depth 128: the guest's nr_requests of 256 is 2 x queue_depth in blk-mq\n\
             {vdc}",
            f = fmt_factor(self.cpu_slowdown),
            reserved = match self.mem_total_kb {
                Some(t) => format!("boot_reserved_kib: RAM less the guest's MemTotal of {t} KiB"),
                None => "its MemTotal was not recorded: all of it is managed here (a real kernel keeps ~4% for itself)".to_string(),
            },
            used = match self.boot_used_kb {
                Some(_) => "MemTotal less the free memory of the guest's first vmstat sample (slab, stacks,\n#   page tables, percpu, the OS's page cache and shmem: all unreclaimable here)",
                None => "not recorded: every managed page free at boot",
            },
            vdc = match (self.swap_lat_us, self.swap_mb_s) {
                (Some(l), Some(b)) => format!("# vdc: the swap disk, not throttled; measured in the guest (O_DIRECT reads of the swap area, one at a time,\n\
                     #   4 and 64 KiB): {} µs a request, {} MB/s (writes: not measured, taken as the reads)\n", fmt_factor(l), fmt_factor(b)),
                _ => "# vdc: the swap disk, not throttled; its speed under qemu is not measured (a nominal 200 MB/s)\n".to_string(),
            },
        );
        t.push_str(&format!("name = {}\n", crate::machine::toml_str(&name)));
        t.push_str(&format!(
            "description = {}\n",
            crate::machine::toml_str(&format!(
                "a qemu guest: {} vCPUs{}, {} MiB, swap {} MiB, data disk capped at {} MB/s{}",
                self.cpus,
                if self.cpu_slowdown != 1.0 {
                    format!(" ({}x slower CPU costs)", fmt_factor(self.cpu_slowdown))
                } else {
                    String::new()
                },
                self.memory / MIB,
                self.swap / MIB,
                self.disk_mb_s,
                self.cgroup
                    .map(|c| format!(", workload in a {} MiB cgroup v2", c / MIB))
                    .unwrap_or_default()
            ))
        ));
        t.push_str(&format!("cpus = {}\nnodes = 1\n", self.cpus));
        t.push_str(&format!("memory_mib = {}\n", self.memory / MIB));
        t.push_str(&format!("swap_mib = {}\n", self.swap / MIB));
        if let Some(total) = self.mem_total_kb {
            t.push_str(&format!(
                "boot_reserved_kib = {}\n",
                (self.memory >> 10).saturating_sub(total)
            ));
        }
        if let Some(u) = self.boot_used_kb.filter(|&u| u > 0) {
            t.push_str(&format!("boot_used_kib = {u}\n"));
        }
        let os_slab = self.slab_kb.filter(|&r| r > 0).map(|r| {
            let mut o = format!(
                "\n# of the memory in use at boot, the guest's nr_slab_reclaimable (slab-kb=), and the\n\
                 # objects its shrinkers see in the root memcg (measured once in this guest image; docs/slab.md)\n\
                 [os_slab]\nreclaimable_kib = {r}\n"
            );
            for (fs, seeks, d, del, ext) in GUEST_OS_SUPERS {
                o.push_str(&format!(
                    "\n[[os_slab.supers]]\nfs = \"{fs}\"\nseeks = {seeks}\nunused_dentries = {d}\n"
                ));
                if del {
                    o.push_str("delete_inode = true\n");
                }
                if ext > 0 {
                    o.push_str(&format!("referenced_extents = {ext}\n"));
                }
            }
            o
        });
        if let Some(thp) = self.thp {
            t.push_str(&format!(
                "thp = \"{thp}\"  # the guest kernel's transparent_hugepage/enabled: khugepaged sets min_free_kbytes\n"
            ));
        }
        t.push_str("data_device = \"vdb\"\nswap_device = \"vdc\"\n");
        t.push_str("text_device = \"vda\"  # the programs (reclaimlab, fio, their libraries) are on the tools disk\n");
        if let Some(c) = self.cgroup {
            t.push_str(&format!(
                "\n[workload_cgroup]\nmemory_max_mib = {}\nversion = 2\n",
                c / MIB
            ));
        }
        if let Some(o) = os_slab {
            t.push_str(&o);
        }
        t.push_str(&format!(
            "\n[[devices]]\nname = \"vdb\"\nlayer = \"blk-mq\"\nwrite_mb_s = {disk:.1}\nread_mb_s = {disk:.1}\n\
             latency_us = 100.0\nseek_us = 0.0\nqueue_depth = 128\nscheduler = \"{scheduler}\"\nwbt_lat_usec = 75000\n\
             rotational = true  # virtio-blk never sets QUEUE_FLAG_NONROT\n\
             fs = \"ext4\"  # the guest's data filesystem (guest::boot makes it with mkfs.ext4)\n"
        ));
        let (lat, bw) = (
            self.swap_lat_us.unwrap_or(100.0),
            self.swap_mb_s.unwrap_or(200.0),
        );
        t.push_str(&format!(
            "\n[[devices]]\nname = \"vdc\"\nlayer = \"blk-mq\"\nwrite_mb_s = {bw:.1}\nread_mb_s = {bw:.1}\n\
             latency_us = {lat:.1}\nseek_us = 0.0\nqueue_depth = 128\n",
        ));
        t.push_str(&format!(
            "scheduler = \"{scheduler}\"\nwbt_lat_usec = 75000\n\
             rotational = true  # so no SWP_SOLIDSTATE: swap readahead by slot, slots allocated in order\n"
        ));
        // The tools disk, last so that the other devices keep their
        // indices: a raw image on the host like the swap disk, not
        // throttled, read-only; its speed is not measured, the swap
        // disk's is taken.
        t.push_str(&format!(
            "\n[[devices]]\nname = \"vda\"  # the tools disk (read-only ext4), not throttled; its speed taken as vdc's\n\
             layer = \"blk-mq\"\nwrite_mb_s = {bw:.1}\nread_mb_s = {bw:.1}\n\
             latency_us = {lat:.1}\nseek_us = 0.0\nqueue_depth = 128\nscheduler = \"{scheduler}\"\nwbt_lat_usec = 75000\nrotational = true\n",
        ));
        t
    }
}

/// `sim --machine DIR` where DIR is a guest run's record: the `guest:…`
/// string in its `run.json` (`params.guest.machine`), and a note for the
/// user if any. `None` if DIR is not a record directory (no `run.json`).
///
/// A record made before guest runs wrote `memtotal-kb=` and `boot-used-kb=`
/// into the string gets them from the record itself ([`record_boot_memory`]),
/// so that old records simulate the kernel's own memory too; one that cannot
/// give them (no `params.host.mem_total_bytes`, no `vmstat.csv`) is
/// simulated with all of its RAM managed and free, as before, with a note.
pub fn record_machine(dir: &std::path::Path) -> Option<Result<(String, Option<String>)>> {
    let rj = dir.join("run.json");
    if !dir.is_dir() || !rj.is_file() {
        return None;
    }
    let v: serde_json::Value = match std::fs::read_to_string(&rj)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            return Some(Err(HostError::with_fix(
                format!("cannot read {}: {e}", rj.display()),
                "give a run record's directory, a machine name or a machine file",
            )))
        }
    };
    let Some(spec) = v["params"]["guest.machine"].as_str() else {
        return Some(Err(HostError::with_fix(
            format!("{} has no params.guest.machine: not a guest run's record (or one made before guest records named their machine)", rj.display()),
            "give the guest as --machine guest:RAM,cpus=N,disk=MB/s[,memory=SIZE] (the record's params guest.memory_mib, guest.vcpus, guest.disk_bps), or a built-in machine",
        )));
    };
    let mut spec = spec.to_string();
    let mut notes: Vec<String> = Vec::new();
    // A record made before guest runs wrote `memtotal-kb=` and
    // `boot-used-kb=`: the record's MemTotal and first vmstat sample.
    if !spec.contains("memtotal-kb=") {
        match record_boot_memory(dir) {
            Ok(Some((total, used))) => {
                spec.push_str(&format!(",memtotal-kb={total},boot-used-kb={used}"));
                notes.push(format!(
                    "the guest's MemTotal {total} KiB (params.host.mem_total_bytes) and {used} KiB in use at its first vmstat sample (MemTotal less nr_free_pages), from the record: memtotal-kb={total},boot-used-kb={used}"
                ));
            }
            Ok(None) => notes.push("the record gives no MemTotal (params.host.mem_total_bytes) or no vmstat.csv: the guest is simulated with all of its RAM managed and free at boot".to_string()),
            Err(e) => return Some(Err(e)),
        }
    }
    // Nor `slab-kb=`: its first vmstat row's nr_slab_reclaimable, if it
    // fits in the memory in use at boot; nor `thp=`: its `thp.enabled`
    // (which sets the watermarks). Both rewrite the string canonically.
    if let Some(Ok(g)) = GuestMachine::parse(&spec) {
        let mut with = g.clone();
        if g.slab_kb.is_none() {
            with = with_record_slab(with, dir);
            if let Some(r) = with.slab_kb {
                notes.push(format!(
                    "{r} KiB of it reclaimable slab (the first vmstat sample's nr_slab_reclaimable): slab-kb={r}, with the guest's shrinkable objects (docs/slab.md)"
                ));
            }
        }
        if g.thp.is_none() {
            // The run.json read above: its params.thp.enabled (record_thp).
            with.thp = v["params"]["thp.enabled"].as_str().and_then(thp_mode);
            if let Some(t) = with.thp {
                notes.push(format!("thp={t} from the record's thp.enabled"));
            }
        }
        // Nor `reclaim-ns=`, `swapin-ns=`, `switch-ns=` (a record made
        // before guest runs wrote them, its probe's raw figures in
        // params.guest.cpu.*: the figures themselves).
        let raw = |k: &str| {
            v["params"][format!("guest.cpu.{k}")]
                .as_str()
                .and_then(|x| x.parse::<f64>().ok())
        };
        for (item, probe, n) in with.fill_probe_figures(raw) {
            notes.push(format!("{item}={n} from the record's guest.cpu.{probe}"));
        }
        if with != g {
            spec = with.to_arg();
        }
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    Some(Ok((spec, note)))
}

/// The guest kernel's THP mode from a record's `params.thp.enabled` (the
/// runner reads `/sys/kernel/mm/transparent_hugepage/enabled`); None if the
/// record does not say or cannot be read.
pub fn record_thp(dir: &std::path::Path) -> Option<&'static str> {
    let t = std::fs::read_to_string(dir.join("run.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&t).ok()?;
    thp_mode(v["params"]["thp.enabled"].as_str()?)
}

/// The guest's MemTotal and the memory in use when its workload started,
/// KiB, from a record: `params.host.mem_total_bytes` of its `run.json`
/// (the guest's `/proc/meminfo`) and MemTotal less `nr_free_pages` of the
/// first row of its `vmstat.csv`. `Ok(None)` when the record has no
/// MemTotal or no `vmstat.csv`; an error when they are there but do not
/// make sense.
pub fn record_boot_memory(dir: &std::path::Path) -> Result<Option<(u64, u64)>> {
    let rj = dir.join("run.json");
    let v: serde_json::Value = std::fs::read_to_string(&rj)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| {
            HostError::with_fix(
                format!("cannot read {}: {e}", rj.display()),
                "give a run record's directory",
            )
        })?;
    let Some(total) = v["params"]["host.mem_total_bytes"].as_str() else {
        return Ok(None);
    };
    let csv = dir.join("vmstat.csv");
    let Ok(f) = std::fs::File::open(&csv) else {
        return Ok(None);
    };
    let fix = "the record is damaged: give the guest as --machine guest:… with memtotal-kb= and boot-used-kb= (or without them: all RAM managed and free)";
    let total_b: u64 = total.parse().map_err(|_| {
        HostError::with_fix(
            format!(
                "{}: params.host.mem_total_bytes `{total}` is not a number of bytes",
                dir.join("run.json").display()
            ),
            fix,
        )
    })?;
    let free = first_sample(f, "nr_free_pages");
    let total_kb = total_b >> 10;
    match free {
        Some(free) if free * 4 <= total_kb && total_b & 4095 == 0 => {
            Ok(Some((total_kb, total_kb - free * 4)))
        }
        _ => Err(HostError::with_fix(
            format!(
                "{}: no nr_free_pages in its first row, or more free pages than MemTotal ({total_b} bytes, a whole number of 4 KiB pages)",
                csv.display()
            ),
            fix,
        )),
    }
}

/// The value of column `name` in the first sample (the row after the
/// header) of a record's `vmstat.csv`, if it has that column and a number
/// there.
fn first_sample(f: std::fs::File, name: &str) -> Option<u64> {
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(f).lines();
    let mut next = || lines.next().and_then(|l| l.ok()).unwrap_or_default();
    let (head, row) = (next(), next());
    head.split(',')
        .position(|h| h.trim() == name)
        .and_then(|i| row.split(',').nth(i))
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// `m` with `slab-kb=` from record `dir`: `nr_slab_reclaimable` x 4 of
/// the first row of its `vmstat.csv`, when the record has it and it fits
/// the machine's `boot-used-kb=` (else `m` unchanged).
pub fn with_record_slab(m: GuestMachine, dir: &std::path::Path) -> GuestMachine {
    let Ok(f) = std::fs::File::open(dir.join("vmstat.csv")) else {
        return m;
    };
    let pages = first_sample(f, "nr_slab_reclaimable");
    match pages {
        Some(p) if p > 0 && p * 4 <= m.boot_used_kb.unwrap_or(0) => GuestMachine {
            slab_kb: Some(p * 4),
            ..m
        },
        _ => m,
    }
}

/// A factor with at most one decimal, no trailing `.0`.
pub fn fmt_factor(f: f64) -> String {
    let r = (f * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> GuestMachine {
        GuestMachine::parse(s).expect("a guest arg").expect("valid")
    }

    fn err(s: &str) -> String {
        GuestMachine::parse(s)
            .expect("a guest arg")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_guest_specs() {
        assert!(GuestMachine::parse("host").is_none());
        assert!(GuestMachine::parse("guests.toml").is_none());
        assert!(GuestMachine::parse("./guest").is_none());
        assert_eq!(ok("guest"), GuestMachine::defaults());
        let m = ok("guest:1G,cpus=1,disk=2,memory=512M,cpu-slowdown=37.5");
        assert_eq!(m.memory, 1 << 30);
        assert_eq!(m.swap, 1 << 30, "swap defaults to the RAM, as run gives it");
        assert_eq!((m.cpus, m.disk_mb_s), (1, 2));
        assert_eq!(m.cgroup, Some(512 << 20));
        assert_eq!(m.cpu_slowdown, 37.5);
        assert_eq!(ok("guest:cpus=4").memory, 2 << 30);
        assert_eq!(ok("guest:2G,swap=0").swap, 0);
        assert_eq!(ok("guest:2G,cpu-slowdown=40x").cpu_slowdown, 40.0);
        let s = ok("guest:2G,cpu-slowdown=26.5,swapout-ns=900000");
        assert_eq!(s.swapout_ns, Some(900_000));
        assert_eq!(ok(&s.to_arg()), s, "to_arg round-trips swapout-ns");
        let s = ok("guest:1G,cpu-slowdown=19.4,reclaim-ns=18784,swapin-ns=44188,switch-ns=40000");
        assert_eq!(
            (s.reclaim_ns, s.swapin_ns, s.switch_ns),
            (Some(18_784), Some(44_188), Some(40_000))
        );
        assert_eq!(
            ok(&s.to_arg()),
            s,
            "to_arg round-trips the halves and the switch"
        );
        assert!(err("guest:1G,switch-ns=-1").contains("switch-ns=`-1`"));
        assert!(err("guest:1G,reclaim-ns=1e9").contains("reclaim-ns=`1e9`"));
        assert!(err("guest:2G,swapout-ns=fast").contains("swapout-ns=`fast`"));
        assert!(err("guest:2G,swapout-ns=200000000").contains("up to 100000000"));
        let s = ok("guest:2G,cpu-slowdown=26.5,swap-lat-us=450.5,swap-mb-s=320");
        assert_eq!((s.swap_lat_us, s.swap_mb_s), (Some(450.5), Some(320.0)));
        assert_eq!(
            ok(&s.to_arg()),
            s,
            "to_arg round-trips swap-lat-us, swap-mb-s"
        );
        let t = s.machine_toml();
        assert!(
            t.contains("latency_us = 450.5") && t.contains("read_mb_s = 320.0"),
            "{t}"
        );
        assert!(ok("guest:2G")
            .machine_toml()
            .contains("latency_us = 100.0\nseek_us = 0.0\nqueue_depth = 128\nscheduler"));
        assert!(err("guest:2G,swap-lat-us=slow").contains("swap-lat-us=`slow`"));
        assert!(err("guest:2G,swap-mb-s=0").contains("swap-mb-s=`0`"));
    }

    #[test]
    fn canonical_string_round_trips() {
        for s in [
            "guest",
            "guest:1536M,cpus=1,disk=2,swap=1G,memory=512M,cpu-slowdown=12.3",
            "guest:4G,swap=0",
            "guest:1G,cpus=2,disk=16,swap=1G,cpu-slowdown=20.5,memtotal-kb=987392,boot-used-kb=87092",
        ] {
            let m = ok(s);
            assert_eq!(ok(&m.to_arg()), m, "{s} -> {}", m.to_arg());
        }
        assert_eq!(ok("guest").to_arg(), "guest:2G,cpus=2,disk=16,swap=2G");
        assert_eq!(fmt_factor(37.46), "37.5");
        assert_eq!(fmt_factor(40.0), "40");
    }

    #[test]
    fn bad_guest_specs_name_the_field_and_fix() {
        for (s, want) in [
            ("guest:", "nothing after `guest:`"),
            ("guest:2G,,cpus=2", "empty item"),
            ("guest:lots", "the RAM (first item): `lots` is not a size"),
            ("guest:2G,cpus=0", "cpus=`0` is not 1..=64"),
            ("guest:2G,cpus=two", "cpus=`two`"),
            ("guest:2G,disk=fast", "disk=`fast` is not a bandwidth"),
            ("guest:2G,swap=lots", "swap=: `lots` is not a size"),
            ("guest:2G,memory=1900M", "memory=1900M is outside 256M..80%"),
            (
                "guest:2G,cpu-slowdown=0",
                "cpu-slowdown=`0` is not a factor",
            ),
            ("guest:2G,cpu-slowdown=9999", "cpu-slowdown=`9999`"),
            ("guest:2G,ram=2G", "unknown item `ram=`"),
            ("guest:2G,cpus=2,cpus=4", "cpus given twice"),
            ("guest:2G,1G", "only the first item"),
            ("guest:512M", "below the 768 MiB"),
        ] {
            let e = err(s);
            assert!(e.contains(want), "{s}: {e}");
            assert!(e.contains("fix:"), "{s}: {e}");
            assert!(e.contains(&format!("--machine {s}")), "{s}: {e}");
        }
    }

    /// MemTotal and the memory in use at boot: from a record, into the
    /// string, into the machine file's fields.
    #[test]
    fn the_kernels_own_memory() {
        let rec = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/fidelity/records/guest-5.10-stutterp-nothp");
        assert_eq!(record_boot_memory(&rec).unwrap(), Some((987_392, 87_092)));
        let (spec, note) = record_machine(&rec).unwrap().unwrap();
        assert!(
            spec.ends_with(",memtotal-kb=987392,boot-used-kb=87092,slab-kb=16004,thp=never"),
            "{spec}"
        );
        let note = note.unwrap();
        assert!(
            note.contains("from the record")
                && note.contains("slab-kb=16004")
                && note.contains("thp=never"),
            "{note}"
        );
        let g = ok(&spec);
        assert_eq!(g.thp, Some("never"));
        assert_eq!(
            (g.mem_total_kb, g.boot_used_kb, g.slab_kb),
            (Some(987_392), Some(87_092), Some(16_004))
        );
        assert_eq!(ok(&g.to_arg()), g);
        let t = g.machine_toml();
        assert!(
            t.contains("boot_reserved_kib = 61184\nboot_used_kib = 87092\n"),
            "{t}"
        );
        assert!(t.contains("[os_slab]\nreclaimable_kib = 16004\n"), "{t}");
        assert!(
            t.contains("fs = \"ext4\"\nseeks = 2\nunused_dentries = 2\nreferenced_extents = 32\n"),
            "{t}"
        );
        // Without the figures: no fields, as before.
        let t = ok("guest:1G").machine_toml();
        assert!(
            !t.contains("boot_reserved_kib =") && !t.contains("boot_used_kib ="),
            "{t}"
        );
        assert_eq!(
            ok("guest:1G").with_boot_memory(987_392, 87_092),
            Some(g.clone()).map(|x| GuestMachine {
                cpu_slowdown: 1.0,
                swapout_ns: None,
                slab_kb: None,
                thp: None,
                ..x
            })
        );
        assert_eq!(ok("guest:1G").with_boot_memory(987_392, 600_000), None);
        // slab-kb= from a record only where it fits the memory in use.
        let small = ok("guest:1G,memtotal-kb=987392,boot-used-kb=8000");
        assert_eq!(with_record_slab(small.clone(), &rec), small);
        assert_eq!(guest_os_lru_kb(), 32);
    }

    /// The guest kernel's THP mode: parsed, written back, into the machine
    /// file; from a record with THPs on; refused when misspelt.
    #[test]
    fn thp_mode_from_the_string_and_the_record() {
        let g = ok("guest:1G,thp=always");
        assert_eq!(g.thp, Some("always"));
        assert_eq!(g.to_arg(), "guest:1G,cpus=2,disk=16,swap=1G,thp=always");
        assert!(g.machine_toml().contains("\nthp = \"always\""));
        assert!(!ok("guest:1G").machine_toml().contains("thp ="));
        assert_eq!(thp_mode("always [madvise] never\n"), Some("madvise"));
        let e = err("guest:1G,thp=[always]");
        assert!(
            e.contains("thp=`[always]` is not always, madvise or never") && e.contains("fix:"),
            "{e}"
        );
        assert!(err("guest:1G,thp=yes").contains("thp=`yes`"));
        let rec = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/fidelity/records/guest-6.1-stutterp");
        assert_eq!(record_thp(&rec), Some("always"));
        let (spec, _) = record_machine(&rec).unwrap().unwrap();
        assert!(
            spec.contains(",boot-used-kb=100260,") && spec.ends_with(",thp=always"),
            "{spec}"
        );
    }

    /// Records made before machine strings carried the halves and the
    /// switch take them from the probe's raw figures; the unpinned switch
    /// figure of the first such records (`switch_ns`) is not the switch.
    #[test]
    fn a_record_without_the_halves_takes_its_probe_figures() {
        let rec =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fidelity/records");
        let (spec, note) = record_machine(&rec.join("guest-6.1-dirty-pressure-e"))
            .unwrap()
            .unwrap();
        assert!(
            spec.contains(",reclaim-ns=62663,swapin-ns=49313,"),
            "{spec}"
        );
        assert!(!spec.contains("switch-ns="), "{spec}");
        assert!(note
            .unwrap()
            .contains("reclaim-ns=62663 from the record's guest.cpu.swap_out_ns"));
        let (spec, _) = record_machine(&rec.join("guest-5.10-dirty-pressure-f"))
            .unwrap()
            .unwrap();
        assert!(spec.contains(",switch-ns=40258,"), "{spec}");
        let (spec, _) = record_machine(&rec.join("guest-6.1-dirty-pressure-b"))
            .unwrap()
            .unwrap();
        assert!(
            !spec.contains("reclaim-ns="),
            "a record without the probe keeps the median: {spec}"
        );
    }

    #[test]
    fn machine_toml_describes_the_guest() {
        let t = ok("guest:2G,cpus=2,disk=16,memory=512M,cpu-slowdown=40").machine_toml();
        for line in [
            "name = \"guest:2G,cpus=2,disk=16,swap=2G,memory=512M,cpu-slowdown=40\"\n",
            "cpus = 2\n",
            "memory_mib = 2048\n",
            "swap_mib = 2048\n",
            "[workload_cgroup]\nmemory_max_mib = 512\nversion = 2\n",
            "write_mb_s = 16.0\nread_mb_s = 16.0\n",
            "scheduler = \"none\"\n",
            "data_device = \"vdb\"\nswap_device = \"vdc\"\n",
            "text_device = \"vda\"",
            "[[devices]]\nname = \"vda\"",
            "fs = \"ext4\"",
        ] {
            assert!(t.contains(line), "{line:?} missing in\n{t}");
        }
        let t = ok("guest:1G,cpus=1").machine_toml();
        assert!(t.contains("scheduler = \"mq-deadline\""), "{t}");
        assert!(!t.contains("workload_cgroup"), "{t}");
    }
}
