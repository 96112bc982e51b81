//! Machine profiles: CPUs, memory, nodes, block devices, swap.
//!
//! Three are built in (`reclaimlab list machines`); any other comes from a TOML
//! file with the same fields. Errors name the file, the line and what is
//! accepted.

use serde::{Deserialize, Serialize};

/// Request layer of a block device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// blk-mq: never marks a bdi congested (Linux 5.0+ for every local disk).
    BlkMq,
    /// The old single-queue request layer (≤4.20): `nr_requests`, congestion
    /// on/off thresholds, `set/clear_bdi_congested`.
    SingleQueue,
}

impl Layer {
    /// Name as written in machine files.
    pub fn name(self) -> &'static str {
        match self {
            Layer::BlkMq => "blk-mq",
            Layer::SingleQueue => "single-queue",
        }
    }
}

/// blk-mq I/O scheduler of a device (`/sys/block/DEV/queue/scheduler`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// No scheduler: requests go to the device in submission order.
    None,
    /// mq-deadline: reads before writes, writes not starved more than
    /// `writes_starved` read batches (block/mq-deadline.c).
    MqDeadline,
}

impl Scheduler {
    /// Name as written in machine files.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::None => "none",
            Scheduler::MqDeadline => "mq-deadline",
        }
    }
}

/// The filesystem on a device that holds the workload's files, for the two
/// things of it reclaim sees: whether `pageout()` can write a dirty page
/// (`->writepage`), and whether a write into a block never written before
/// (fio's files are `fallocate`d: unwritten extents) ends its pages'
/// writeback only after a workqueue has converted the extent
/// (`crate::fs::ioend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataFs {
    /// XFS: `->writepage` up to 5.10 (`xfs_vm_writepage` →
    /// `iomap_writepage`), none from 5.15 (`xfs_address_space_operations`
    /// has only `->writepages`), so 5.15+ `pageout()` activates every dirty
    /// file page; unwritten and append ioends complete on the per-CPU
    /// `xfs-conv` workqueue (5.15 `xfs_prepare_ioend`, `xfs_end_io`).
    Xfs,
    /// ext4 (`dioread_nolock`, extents): `ext4_writepage` refuses from
    /// reclaim a page whose block is delayed or unwritten (redirties it;
    /// 5.15/6.1 fs/ext4/inode.c); unwritten io_ends complete on
    /// `ext4-rsv-conversion`, one work at a time per filesystem (5.15
    /// `ext4_end_bio` → `ext4_put_io_end_defer` → `ext4_add_complete_io`).
    Ext4,
}

impl DataFs {
    /// Name as written in machine files.
    pub fn name(self) -> &'static str {
        match self {
            DataFs::Xfs => "xfs",
            DataFs::Ext4 => "ext4",
        }
    }
    /// From a mount's filesystem type (`/proc/mounts`), if modelled.
    pub fn from_fstype(t: &str) -> Option<DataFs> {
        match t {
            "xfs" => Some(DataFs::Xfs),
            "ext4" => Some(DataFs::Ext4),
            _ => None,
        }
    }
}

/// One block device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Name (`sda`, `nvme0n1`).
    pub name: String,
    /// Request layer.
    #[serde(default = "default_layer")]
    pub layer: Layer,
    /// Sequential write bandwidth, MB/s (10^6 bytes).
    pub write_mb_s: f64,
    /// Sequential read bandwidth, MB/s.
    pub read_mb_s: f64,
    /// Per-request latency added to transfer time, µs.
    pub latency_us: f64,
    /// Extra service time when a request does not continue the previous one, µs
    /// (the random-I/O penalty: ~0 for flash, milliseconds for a disk).
    #[serde(default)]
    pub seek_us: f64,
    /// Requests in flight the device serves at once (transfer is shared):
    /// the blk-mq tag set's depth (`/sys/block/DEV/mq/0/nr_tags`; SATA's
    /// NCQ 32, virtio-blk's virtqueue, NVMe's 1023).
    #[serde(default = "default_qd")]
    pub queue_depth: u32,
    /// blk-mq I/O scheduler. Unset: the kernel's default
    /// (`elevator_get_default`, 5.15): `none` for multi-queue devices
    /// (here: names starting `nvme`), `mq-deadline` otherwise. The
    /// single-queue layer always serves requests in submission order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Scheduler>,
    /// Largest request, KiB (`/sys/block/DEV/queue/max_sectors_kb`; the
    /// kernel's default is `BLK_DEF_MAX_SECTORS` = 2560 sectors = 1280 KiB):
    /// writeback and swap-out requests are split at this size.
    #[serde(default = "default_max_sectors_kb")]
    pub max_sectors_kb: u32,
    /// blk-wbt's target read latency, µs (`/sys/block/DEV/queue/wbt_lat_usec`;
    /// 0 turns writeback throttling off). Unset: the kernel's default
    /// (`wbt_default_latency_nsec`): 75000 for a rotating disk (here:
    /// `seek_us` of 1 ms or more), 2000 otherwise; the single-queue layer
    /// has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wbt_lat_usec: Option<u64>,
    /// The filesystem holding the workload's files on this device (`xfs`,
    /// `ext4`). Unset: a filesystem whose `->writepage` writes any dirty
    /// page and whose writes end at the bio's completion (what the model
    /// did before filesystems were told apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<DataFs>,
    /// What the kernel believes of the device: rotational unless its driver
    /// set `QUEUE_FLAG_NONROT` (`/sys/block/DEV/queue/rotational`), whatever
    /// is behind it: virtio-blk never sets it, so a qemu guest's disks are
    /// rotational to the guest. The kernel decides by it blk-wbt's default
    /// latency and, for a swap device, `SWP_SOLIDSTATE`: the slot allocator
    /// (5.15 `scan_swap_map_slots`) and the swap readahead
    /// (`swap_use_vma_readahead`: per-VMA only while no rotational swap is
    /// on). Unset: rotational for a seeking disk (`seek_us` of 1 ms or
    /// more), as the simulator decided before the flag was a field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// The device serves reads beside writes: a read does not wait for the
    /// writes the device already holds (each direction has a server of its
    /// own at its bandwidth). Measured on the reference host's virtio disk:
    /// 4 KiB direct reads while 16 × 4 MiB writes are in flight complete in
    /// about 50 µs at the median (90th percentile 65 µs) where each write
    /// takes 28 ms (docs/fidelity.md, "Reads beside writes (measured; an
    /// option, not set on the host)"). Default
    /// false: one server takes every request in turn, so a read queues
    /// behind the writes dispatched before it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reads_beside_writes: bool,
    /// The requests at the device share its bandwidth equally while they
    /// are there (processor sharing), instead of being served one after
    /// another: requests handed over together end together, requests
    /// handed over one at a time end one at a time, and a small read among
    /// large writes ends after its own share. The reference host's virtio
    /// disk behaves so, measured: 16 × 4 MiB direct writes submitted
    /// together all complete after 32 ms, the same kept in flight one
    /// submission at a time complete 2 ms apart (each after ~22 ms), a
    /// 4 KiB read among them in ~50 µs, and writeback's requests in bursts
    /// every ~34 ms (docs/fidelity.md, "A disk that shares its bandwidth").
    /// An approximation of that disk, which completes together what is
    /// handed over in one notification and serves separate submissions
    /// in turn. Overrides `reads_beside_writes`. Default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub shared_bandwidth: bool,
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn default_max_sectors_kb() -> u32 {
    1280
}

impl DeviceSpec {
    /// The scheduler in effect (see [`DeviceSpec::scheduler`]).
    pub fn effective_scheduler(&self) -> Scheduler {
        match (self.layer, self.scheduler) {
            (Layer::SingleQueue, _) => Scheduler::None,
            (_, Some(s)) => s,
            (_, None) if self.name.starts_with("nvme") => Scheduler::None,
            (_, None) => Scheduler::MqDeadline,
        }
    }

    /// blk-wbt's target latency in effect, µs (see [`DeviceSpec::wbt_lat_usec`];
    /// `wbt_default_latency_nsec`: 75 ms unless the queue is non-rotational).
    pub fn effective_wbt_lat_usec(&self) -> u64 {
        match (self.layer, self.wbt_lat_usec) {
            (Layer::SingleQueue, _) => 0,
            (_, Some(v)) => v,
            (_, None) if self.is_rotational() => 75_000,
            (_, None) => 2_000,
        }
    }

    /// Whether the kernel takes the device as rotational (see
    /// [`DeviceSpec::rotational`]).
    pub fn is_rotational(&self) -> bool {
        self.rotational.unwrap_or(self.seek_us >= 1000.0)
    }

    /// `queue/nr_requests` of a blk-mq queue: with an I/O scheduler
    /// `2 * min(queue_depth, BLKDEV_DEFAULT_RQ)` (6.1 `blk_mq_init_sched`),
    /// without one the tag set's depth (`blk_mq_init_allocated_queue`).
    pub fn blk_mq_nr_requests(&self) -> u32 {
        match self.effective_scheduler() {
            Scheduler::None => self.queue_depth,
            _ => 2 * self.queue_depth.min(128),
        }
    }

    /// The queue depth blk-wbt scales its limits by: `blk_queue_depth(q)`
    /// (6.1 include/linux/blkdev.h, read by `wbt_queue_depth_changed`), the
    /// depth a driver set with `blk_set_queue_depth`, else
    /// `q->nr_requests`. Only SCSI sets one (`scsi_change_queue_depth`,
    /// the only caller in 6.1's drivers), so a SCSI disk (`sd*`: SATA,
    /// SAS, USB) throttles by its device's depth, and virtio-blk, NVMe and
    /// the rest by the request pool, twice the tags with a scheduler: a
    /// virtio disk of 128 tags scales up to 192 writes in flight (3/4 of
    /// 256, `rq_depth_calc_max_depth`), not 96.
    pub fn wbt_queue_depth(&self) -> u32 {
        if self.name.starts_with("sd") {
            self.queue_depth
        } else {
            self.blk_mq_nr_requests()
        }
    }
}

fn default_layer() -> Layer {
    Layer::BlkMq
}
fn default_qd() -> u32 {
    32
}

/// A machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Name.
    pub name: String,
    /// One line for `list machines`.
    #[serde(default)]
    pub description: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// NUMA nodes; memory is split evenly.
    #[serde(default = "one")]
    pub nodes: u32,
    /// Memory (RAM), MiB.
    pub memory_mib: u64,
    /// Memory the kernel reserves at boot before the buddy allocator
    /// starts, KiB (a multiple of 4: whole pages): the memmap (`struct page`,
    /// 64 bytes per 4 KiB page), the kernel image, firmware and `memblock`
    /// reservations. These pages are never managed: MemTotal
    /// (`totalram_pages`, the zones' `managed_pages`) is `memory_mib` less
    /// this, and the simulated machine has only the managed pages. The
    /// watermarks and `min_free_kbytes`' default follow the managed pages
    /// (`init_per_zone_wmark_min` → `nr_free_buffer_pages`, 5.15
    /// mm/page_alloc.c), and a workload sized from MemTotal (stutterp) is
    /// sized from them. Default 0: all of `memory_mib` is managed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub boot_reserved_kib: u64,
    /// Memory already in use when the workload starts, KiB (a multiple of
    /// 4): taken from the free lists at boot and never freed. It stands for
    /// what a booted system holds before the workload runs: the kernel's
    /// slab (reclaimable and not), kernel stacks, page tables, percpu and
    /// vmalloc areas, and the OS's own page cache and shmem. Simplification:
    /// all of it is unreclaimable kernel memory (the OS's few MiB of page
    /// cache included); `/proc/vmstat` shows it in `nr_slab_unreclaimable`,
    /// never as free. A guest record's first vmstat sample gives MemTotal
    /// less `nr_free_pages`. Default 0: every managed page is free at boot.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub boot_used_kib: u64,
    /// The booted OS's reclaimable slab, part of [`Machine::boot_used_kib`],
    /// and the objects of it the shrinkers see (`[os_slab]`; docs/slab.md).
    /// Default: none (all of `boot_used_kib` unreclaimable kernel memory).
    #[serde(default, skip_serializing_if = "OsSlab::is_empty")]
    pub os_slab: OsSlab,
    /// Swap size, MiB (0: no swap).
    #[serde(default)]
    pub swap_mib: u64,
    /// Devices; the first holds the data files unless `data_device` says otherwise.
    pub devices: Vec<DeviceSpec>,
    /// Device holding the workload's files.
    #[serde(default)]
    pub data_device: Option<String>,
    /// Device holding swap.
    #[serde(default)]
    pub swap_device: Option<String>,
    /// Device holding the programs' files (the workers' binaries and
    /// shared libraries, whose text they map: `crate::mm::text`). Unset:
    /// the first device (the system disk of a one-disk machine). A qemu
    /// guest has them on its own tools disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_device: Option<String>,
    /// Whether the workers map their programs' text at all (`crate::mm::
    /// text`; `--set sim.program_text=0` turns it off for any machine).
    /// Default true. `slice-2021` says false: a sixteenth of a machine
    /// divides its memory, CPUs and disk but cannot divide the text its
    /// programs share, so its text would thrash at the slice's sixteenth
    /// of the disk as it never does on the machine the slice stands for
    /// (the quick variant's v5.15 refaulted 574,044 text pages in a main
    /// job, `testbox-2021` 2,907 at full size; docs/fidelity.md, "Program
    /// text on the slice").
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub program_text: bool,
    /// The memory cgroup the workload runs in (as `reclaimlab run
    /// --memory` puts it), if any: every worker not placed in a cgroup of
    /// its own runs there, and the workload is sized to its limit.
    #[serde(default)]
    pub workload_cgroup: Option<WorkloadCgroup>,
    /// Transparent huge pages at boot (`/sys/kernel/mm/transparent_hugepage/
    /// enabled`, or `transparent_hugepage=` on the kernel's command line).
    /// The simulator's pages are order 0 whatever this says; what it
    /// changes is the watermarks: with THPs `always` or `madvise`,
    /// khugepaged starts at boot and raises `min_free_kbytes` to keep
    /// pageblocks free ([`crate::mm::thp_recommended_min_free_kbytes`]).
    /// Absent: `never` (the built-in machines: their kernels' THP setting is
    /// not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<ThpEnabled>,
}

/// `transparent_hugepage/enabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpEnabled {
    /// Every anonymous fault may take a huge page.
    Always,
    /// Only `MADV_HUGEPAGE` regions.
    Madvise,
    /// Off: khugepaged is not started.
    Never,
}

impl ThpEnabled {
    /// Name as written in machine files and in `thp.enabled`'s brackets.
    pub fn name(self) -> &'static str {
        match self {
            ThpEnabled::Always => "always",
            ThpEnabled::Madvise => "madvise",
            ThpEnabled::Never => "never",
        }
    }

    /// From a name, or from `/sys/kernel/mm/transparent_hugepage/enabled`'s
    /// text (`always [madvise] never`: the bracketed word).
    pub fn parse(s: &str) -> Option<ThpEnabled> {
        let word = match (s.find('['), s.find(']')) {
            (Some(a), Some(b)) if a < b => &s[a + 1..b],
            _ => s.trim(),
        };
        match word {
            "always" => Some(ThpEnabled::Always),
            "madvise" => Some(ThpEnabled::Madvise),
            "never" => Some(ThpEnabled::Never),
            _ => None,
        }
    }

    /// Whether khugepaged runs (`hugepage_flags_enabled`, 6.1;
    /// `khugepaged_enabled`, 5.10).
    pub fn khugepaged(self) -> bool {
        self != ThpEnabled::Never
    }
}

/// `[os_slab]` of a machine: what of the memory in use at boot is
/// reclaimable slab, and which of it the booted OS's shrinkers see.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsSlab {
    /// `nr_slab_reclaimable` when the workload starts, KiB (a multiple of
    /// 4, at most `boot_used_kib`): shown in `nr_slab_reclaimable`
    /// instead of `nr_slab_unreclaimable`. Most of it is pinned (dentries
    /// and inodes in use, xarray nodes, buffer heads): only the objects
    /// in `supers` are on a shrinker's LRU, and their slab pages are part
    /// of this figure.
    #[serde(default)]
    pub reclaimable_kib: u64,
    /// The OS's mounted filesystems whose shrinkers see objects at boot,
    /// in registration (mount) order.
    #[serde(default)]
    pub supers: Vec<OsSuper>,
}

impl OsSlab {
    /// Nothing given.
    pub fn is_empty(&self) -> bool {
        self.reclaimable_kib == 0 && self.supers.is_empty()
    }

    /// Slab pages the supers' unused dentries and their inodes fill
    /// (`dentry` and `inode_cache` slabs, packed).
    pub fn lru_slab_pages(&self) -> u64 {
        use crate::mm::slab::{objs_per_slab, Cache};
        let d: u64 = self.supers.iter().map(|s| s.unused_dentries).sum();
        d.div_ceil(objs_per_slab(Cache::Dentry)) + d.div_ceil(objs_per_slab(Cache::Inode))
    }
}

/// One mounted filesystem of the booted OS, as its shrinkers see it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsSuper {
    /// Its type, for the trace (`proc`, `sysfs`, `ext4`, …).
    pub fs: String,
    /// `s_shrink.seeks`: 2 (`DEFAULT_SEEKS`, `alloc_super`), 0 for proc
    /// and kernfs (sysfs, cgroup2), which set it to 0 [5.10 and 6.1
    /// fs/proc/root.c `proc_fill_super`, fs/kernfs/mount.c
    /// `kernfs_fill_super`]: `do_shrink_slab` then asks for half the cache
    /// at every priority.
    #[serde(default = "default_seeks")]
    pub seeks: u64,
    /// Unused dentries on `s_dentry_lru` at boot, each holding its inode.
    #[serde(default)]
    pub unused_dentries: u64,
    /// The fs deletes an inode at its last `iput` (`drop_inode` =
    /// `generic_delete_inode`: proc) instead of keeping it on
    /// `s_inode_lru`.
    #[serde(default)]
    pub delete_inode: bool,
    /// ext4 only: extent-status entries its `s_es_shrinker` counts that
    /// stay referenced (the running binaries' extents, looked up again at
    /// every page-cache miss), so `ext4_es_scan` scans and frees none.
    #[serde(default)]
    pub referenced_extents: u64,
}

fn default_seeks() -> u64 {
    2
}

/// `[workload_cgroup]` of a machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadCgroup {
    /// `memory.max` (v1: `memory.limit_in_bytes`), MiB.
    pub memory_max_mib: u64,
    /// The memory controller's cgroup version, 1 or 2 (`memcg.version`).
    #[serde(default = "two")]
    pub version: u32,
}

fn two() -> u32 {
    2
}

fn yes() -> bool {
    true
}

fn is_true(v: &bool) -> bool {
    *v
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Machine {
    /// The memory the workload may use, bytes: its cgroup's limit, or
    /// MemTotal ([`Machine::mem_total_bytes`]), as the real runner reads it
    /// from `/proc/meminfo`.
    pub fn workload_memory_bytes(&self) -> u64 {
        let total = self.mem_total_bytes();
        self.workload_cgroup
            .as_ref()
            .map_or(total, |c| (c.memory_max_mib << 20).min(total))
    }

    /// [`Machine::workload_memory_bytes`] in whole MiB.
    pub fn workload_memory_mib(&self) -> u64 {
        self.workload_memory_bytes() >> 20
    }

    /// MemTotal, bytes: the managed pages ([`Machine::managed_pages`]).
    pub fn mem_total_bytes(&self) -> u64 {
        self.managed_pages() * 4096
    }

    /// The pages the buddy allocator manages (`totalram_pages`): the RAM
    /// less [`Machine::boot_reserved_kib`].
    pub fn managed_pages(&self) -> u64 {
        self.pages()
            .saturating_sub(self.boot_reserved_kib.div_ceil(4))
    }

    /// The pages in use when the workload starts ([`Machine::boot_used_kib`]).
    pub fn boot_used_pages(&self) -> u64 {
        self.boot_used_kib.div_ceil(4)
    }

    /// Populated zones up to `ZONE_NORMAL` on x86-64, which
    /// `set_recommended_min_free_kbytes` counts: `ZONE_DMA` (the first
    /// 16 MiB) and `ZONE_DMA32` (below 4 GiB) on node 0, and `ZONE_NORMAL`
    /// on every node with memory above 4 GiB. The simulator has one zone a
    /// node; this is only their number. Simplified: node 0 is taken to have
    /// memory above 4 GiB when it has more than 3 GiB (the PCI hole below
    /// 4 GiB: qemu's `pc` machine keeps 3 GiB low once RAM exceeds 3.5 GiB;
    /// PCs keep 2 to 3.5 GiB), every other node to have only `ZONE_NORMAL`.
    pub fn populated_zones_upto_normal(&self) -> u64 {
        let node0_mib = self.memory_mib / u64::from(self.nodes.max(1));
        let node0 = if node0_mib > 3 * 1024 { 3 } else { 2 };
        node0 + u64::from(self.nodes.max(1)) - 1
    }
}

fn one() -> u32 {
    1
}

/// Error loading or checking a machine.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// Not a known name and not a readable file.
    #[error("machine `{0}` is neither a built-in machine ({1}) nor a readable TOML file")]
    Unknown(String, String),
    /// TOML syntax or field errors.
    #[error("{file}: {msg}")]
    Parse {
        /// File.
        file: String,
        /// Parser message (with line and column).
        msg: String,
    },
    /// A value that cannot describe a real machine.
    #[error("{at}machine `{name}`: {what}")]
    Impossible {
        /// `FILE:LINE: ` (or `FILE: `) when the machine came from a file, else empty.
        at: String,
        /// Machine.
        name: String,
        /// What is wrong and what is accepted.
        what: String,
    },
}

fn dev(name: &str, w: f64, r: f64, lat: f64, seek: f64, qd: u32) -> DeviceSpec {
    DeviceSpec {
        name: name.into(),
        layer: Layer::BlkMq,
        write_mb_s: w,
        read_mb_s: r,
        latency_us: lat,
        seek_us: seek,
        queue_depth: qd,
        scheduler: None,
        max_sectors_kb: default_max_sectors_kb(),
        wbt_lat_usec: None,
        fs: None,
        rotational: None,
        reads_beside_writes: false,
        shared_bandwidth: false,
    }
}

/// The built-in machines.
pub fn builtin_machines() -> Vec<Machine> {
    vec![
        Machine {
            name: "small".into(),
            description: "2 CPUs, 512 MiB, 512 MiB swap, one SATA SSD: for tests and quick looks".into(),
            cpus: 2,
            nodes: 1,
            memory_mib: 512,
            swap_mib: 512,
            devices: vec![dev("sda", 450.0, 500.0, 80.0, 20.0, 32)],
            data_device: None,
            swap_device: None,
            text_device: None,
            program_text: true,
            workload_cgroup: None,
            thp: None,
            boot_reserved_kib: 0,
            boot_used_kib: 0,
            os_slab: OsSlab::default(),
        },
        // One sixteenth of testbox-2021: its CPUs, memory and storage
        // bandwidth (write 150 MB/s, read 530 MB/s) divided by 16,
        // latencies kept. The seconds it takes to write all memory to disk
        // (~460 s) and the CPU time per byte of I/O stay those of the 2021
        // machines, which is what decides whether dirty and writeback pages
        // reach the LRU tail; the small machine's fast disk empties its
        // memory in about a second. The request size is divided too, so
        // that per-request times, queueing delays and the share of memory
        // under writeback stay those of the whole disk.
        Machine {
            name: "slice-2021".into(),
            description: "testbox-2021 divided by 16: 2 CPUs, 4 GiB, 128 MiB swap, a 9.4 MB/s share of its disk in 80 KiB requests (same seconds-to-write-memory)".into(),
            cpus: 2,
            nodes: 1,
            memory_mib: 4 * 1024,
            swap_mib: 2 * 1024 / 16,
            // 80 KiB requests, a sixteenth of the SSD's 1280 KiB, and its 32
            // NCQ slots: a request takes as long as on the whole disk, a read
            // waits behind as many writes, and the pages under writeback are
            // a sixteenth of the whole machine's.
            devices: vec![DeviceSpec {
                max_sectors_kb: 1280 / 16,
                fs: Some(DataFs::Xfs),
                ..dev("sda", 9.4, 33.0, 80.0, 20.0, 32)
            }],
            data_device: None,
            swap_device: None,
            text_device: None,
            program_text: false,
            workload_cgroup: None,
            thp: None,
            boot_reserved_kib: 0,
            boot_used_kib: 0,
            os_slab: OsSlab::default(),
        },
        // Andrey Ryabinin's 2018 reproducer (seed 003): a system disk and a
        // slow second disk, both on the single-queue request layer as SCSI
        // disks were by default up to 4.18, so a disk with 113 of its 128
        // write requests allocated is congested (blk_queue_congestion_threshold).
        // Memory is plentiful: only the cgroups' limits make reclaim run.
        Machine {
            name: "hdd-pair-2018".into(),
            description: "4 CPUs, 8 GiB, 1 GiB swap, two disks on the single-queue layer: sda (system, 120 MB/s) and sdb (a slow HDD, 25 MB/s)".into(),
            cpus: 4,
            nodes: 1,
            memory_mib: 8 * 1024,
            swap_mib: 1024,
            devices: vec![
                DeviceSpec {
                    layer: Layer::SingleQueue,
                    ..dev("sda", 120.0, 120.0, 200.0, 6000.0, 32)
                },
                DeviceSpec {
                    layer: Layer::SingleQueue,
                    ..dev("sdb", 25.0, 25.0, 200.0, 8000.0, 32)
                },
            ],
            data_device: None,
            swap_device: None,
            text_device: None,
            program_text: true,
            workload_cgroup: None,
            thp: None,
            boot_reserved_kib: 0,
            boot_used_kib: 0,
            os_slab: OsSlab::default(),
        },
        // Seed 001 (2010): Mel Gorman's example in the congestion_wait
        // thread, a fast SSD and a slow USB flash drive in one machine,
        // both on the single-queue request layer (the only one in 2010), so
        // either is congested at 113 of its 128 requests per direction.
        // The stick: USB 2.0 mass storage, one command at a time, 120 KiB
        // requests (max_sectors 240), writing at a few MB/s.
        Machine {
            name: "ssd-usb-2010".into(),
            description: "2 CPUs, 1 GiB, 512 MiB swap, two devices on the single-queue layer: sda (SSD, 200 MB/s, swap) and sdb (a USB flash drive, 4 MB/s write, 20 MB/s read)".into(),
            cpus: 2,
            nodes: 1,
            memory_mib: 1024,
            swap_mib: 512,
            devices: vec![
                DeviceSpec {
                    layer: Layer::SingleQueue,
                    ..dev("sda", 200.0, 250.0, 100.0, 20.0, 32)
                },
                DeviceSpec {
                    layer: Layer::SingleQueue,
                    max_sectors_kb: 120,
                    ..dev("sdb", 4.0, 20.0, 1000.0, 500.0, 1)
                },
            ],
            data_device: None,
            swap_device: None,
            text_device: None,
            program_text: true,
            workload_cgroup: None,
            thp: None,
            boot_reserved_kib: 0,
            boot_used_kib: 0,
            os_slab: OsSlab::default(),
        },
        Machine {
            name: "laptop".into(),
            description: "8 CPUs, 16 GiB, 8 GiB swap, one NVMe SSD".into(),
            cpus: 8,
            nodes: 1,
            memory_mib: 16 * 1024,
            swap_mib: 8 * 1024,
            devices: vec![dev("nvme0n1", 1800.0, 3000.0, 20.0, 5.0, 64)],
            data_device: None,
            swap_device: None,
            text_device: None,
            program_text: true,
            workload_cgroup: None,
            thp: None,
            boot_reserved_kib: 0,
            boot_used_kib: 0,
            os_slab: OsSlab::default(),
        },
        Machine {
            name: "testbox-2021".into(),
            description: "shaped like the 2021 series' test machines: 32 CPUs, 2 nodes, 64 GiB, 2 GiB swap, one disk writing 150 MB/s holding data and swap".into(),
            cpus: 32,
            nodes: 2,
            memory_mib: 64 * 1024,
            // The letters do not record the swap size. 2 GiB: a swap
            // partition as installers commonly propose it, and smaller than
            // stutterp's anon overflow, so swap fills and anon becomes
            // unreclaimable mid-step. With swap for all of the overflow (the
            // 32 GiB this profile had before) no throttling site fires; the
            // README shows both.
            swap_mib: 2 * 1024,
            // The letters' data: "a freshly created XFS filesystem".
            //
            // The write speed is what the v2 letter's elapsed times allow.
            // mmtests' stutterp times a 5 GiB `dd … conv=fdatasync` once
            // and runs fio alone for `int(that time) + 1 + 5` s before every
            // step (mmtests-method.md §1.4), so Duration Elapsed is at least
            // the calibration plus 7 × (warmup + 300 s): the series' 2,432 s
            // leaves 332 s for 8 calibration-lengths and 35 s, a calibration
            // of at most 36 s, 149 MB/s or more (v5.15's 3,020 s bounds it
            // less tightly). The disk was first taken as a 500 MB/s SATA SSD, a
            // guess; with it the simulated runs reclaimed 3.1-3.4 times the
            // letter's pages, with 150 MB/s 0.89-0.92 (docs/fidelity.md,
            // "The disk's speed from the letter's elapsed time"). Reads,
            // latency and queue are not bounded by anything published and
            // stay a SATA SSD's.
            devices: vec![DeviceSpec {
                fs: Some(DataFs::Xfs),
                ..dev("sda", 150.0, 530.0, 80.0, 20.0, 32)
            }],
            data_device: None,
            swap_device: None,
            text_device: None,
            program_text: true,
            workload_cgroup: None,
            thp: None,
            boot_reserved_kib: 0,
            boot_used_kib: 0,
            os_slab: OsSlab::default(),
        },
    ]
}

impl Machine {
    /// A built-in machine by name, or a TOML file.
    pub fn load(name_or_file: &str) -> Result<Machine, MachineError> {
        if let Some(m) = builtin_machines()
            .into_iter()
            .find(|m| m.name == name_or_file)
        {
            return Ok(m);
        }
        let text = match read_text_capped(std::path::Path::new(name_or_file), MAX_TOML_BYTES) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                return Err(MachineError::Parse {
                    file: name_or_file.into(),
                    msg: e.to_string(),
                })
            }
            Err(_) => {
                let names: Vec<String> = builtin_machines().into_iter().map(|m| m.name).collect();
                return Err(MachineError::Unknown(name_or_file.into(), names.join(", ")));
            }
        };
        Machine::from_toml(&text, name_or_file)
    }

    /// Parses and checks a machine file.
    pub fn from_toml(text: &str, file: &str) -> Result<Machine, MachineError> {
        let m: Machine = toml::from_str(text).map_err(|e| MachineError::Parse {
            file: file.into(),
            msg: e.to_string(),
        })?;
        m.check().map_err(|e| match e {
            MachineError::Impossible { name, what, .. } => {
                // Point at the line of the key the message starts with.
                let key = what.split([' ', '`']).next().unwrap_or("");
                let line = (!key.is_empty())
                    .then(|| {
                        text.lines().position(|l| {
                            let l = l.trim_start();
                            l.starts_with(key) && l[key.len()..].trim_start().starts_with('=')
                        })
                    })
                    .flatten();
                let at = match line {
                    Some(n) => format!("{file}:{}: ", n + 1),
                    None => format!("{file}: "),
                };
                MachineError::Impossible { at, name, what }
            }
            other => other,
        })?;
        Ok(m)
    }

    /// Rejects machines that cannot exist or cannot be simulated.
    pub fn check(&self) -> Result<(), MachineError> {
        let bad = |what: String| {
            Err(MachineError::Impossible {
                at: String::new(),
                name: self.name.clone(),
                what,
            })
        };
        if self.cpus == 0 || self.cpus > 4096 {
            return bad(format!("cpus = {} (accepted: 1..=4096)", self.cpus));
        }
        if self.nodes == 0 || self.nodes > 64 || self.nodes > self.cpus {
            return bad(format!(
                "nodes = {} (accepted: 1..=64 and no more than cpus)",
                self.nodes
            ));
        }
        if self.memory_mib < 64 || self.memory_mib > MAX_MIB {
            return bad(format!(
                "memory_mib = {} (accepted: 64..=4194304)",
                self.memory_mib
            ));
        }
        if self.swap_mib > MAX_MIB {
            return bad(format!(
                "swap_mib = {} (accepted: 0..={MAX_MIB}, 4 TiB)",
                self.swap_mib
            ));
        }
        if self.memory_mib / u64::from(self.nodes) < 32 {
            return bad("less than 32 MiB per node".into());
        }
        // The reserved memory and the memory in use at boot leave at least
        // 32 MiB per node managed, and 16 MiB per node free.
        let ram_kib = self.memory_mib * 1024;
        let nodes = u64::from(self.nodes);
        let max_reserved = ram_kib - 32 * 1024 * nodes;
        if self.boot_reserved_kib & 3 != 0 || self.boot_reserved_kib > max_reserved {
            return bad(format!(
                "boot_reserved_kib = {} (accepted: a multiple of 4, whole 4 KiB pages, from 0 to {max_reserved}: memory_mib in KiB less 32 MiB per node; MemTotal is memory_mib less it)",
                self.boot_reserved_kib
            ));
        }
        let max_used = (ram_kib - self.boot_reserved_kib) - 16 * 1024 * nodes;
        if self.boot_used_kib & 3 != 0 || self.boot_used_kib > max_used {
            return bad(format!(
                "boot_used_kib = {} (accepted: a multiple of 4, whole 4 KiB pages, from 0 to {max_used}: MemTotal in KiB less 16 MiB per node left free)",
                self.boot_used_kib
            ));
        }
        if self.os_slab.reclaimable_kib & 3 != 0
            || self.os_slab.reclaimable_kib > self.boot_used_kib
        {
            return bad(format!(
                "os_slab.reclaimable_kib = {} (accepted: a multiple of 4, whole 4 KiB pages, from 0 to boot_used_kib = {}: it is part of the memory in use at boot)",
                self.os_slab.reclaimable_kib, self.boot_used_kib
            ));
        }
        for (i, s) in self.os_slab.supers.iter().enumerate() {
            if s.fs.is_empty()
                || s.seeks > 64
                || s.unused_dentries > 1 << 24
                || s.referenced_extents > 1 << 24
            {
                return bad(format!(
                    "os_slab.supers[{i}] (fs = {:?}, seeks = {}, unused_dentries = {}, referenced_extents = {}) (accepted: a non-empty fs name, seeks 0..=64, counts up to 16777216)",
                    s.fs, s.seeks, s.unused_dentries, s.referenced_extents
                ));
            }
        }
        let os_pages = self.os_slab.lru_slab_pages();
        if os_pages * 4 > self.os_slab.reclaimable_kib {
            return bad(format!(
                "os_slab: the supers' {} unused dentries and their inodes take {os_pages} slab pages, more than reclaimable_kib = {} (accepted: reclaimable_kib of at least {} KiB, since they are part of it)",
                self.os_slab.supers.iter().map(|s| s.unused_dentries).sum::<u64>(),
                self.os_slab.reclaimable_kib,
                os_pages * 4
            ));
        }
        if self.devices.is_empty() {
            return bad(
                "no devices (at least one [[devices]] entry is needed for files and swap)".into(),
            );
        }
        for d in &self.devices {
            if !(d.write_mb_s > 0.0
                && d.read_mb_s > 0.0
                && d.write_mb_s.is_finite()
                && d.read_mb_s.is_finite())
            {
                return bad(format!(
                    "device `{}`: write_mb_s and read_mb_s must be positive",
                    d.name
                ));
            }
            if !(d.latency_us >= 0.0 && d.seek_us >= 0.0) || d.queue_depth == 0 {
                return bad(format!(
                    "device `{}`: latency_us, seek_us must be >= 0 and queue_depth >= 1",
                    d.name
                ));
            }
        }
        for (what, name) in [
            ("data_device", &self.data_device),
            ("swap_device", &self.swap_device),
            ("text_device", &self.text_device),
        ] {
            if let Some(n) = name {
                if !self.devices.iter().any(|d| &d.name == n) {
                    let names: Vec<&str> = self.devices.iter().map(|d| d.name.as_str()).collect();
                    return bad(format!(
                        "{what} = `{n}` is not one of the devices (accepted: {})",
                        names.join(", ")
                    ));
                }
            }
        }
        if let Some(c) = &self.workload_cgroup {
            if c.memory_max_mib < 16 || c.memory_max_mib > self.memory_mib {
                return bad(format!(
                    "[workload_cgroup] memory_max_mib = {} (accepted: 16..={}, the machine's memory_mib)",
                    c.memory_max_mib, self.memory_mib
                ));
            }
            if !(1..=2).contains(&c.version) {
                return bad(format!(
                    "[workload_cgroup] version = {} (accepted: 1 for cgroup v1, 2 for cgroup v2)",
                    c.version
                ));
            }
        }
        Ok(())
    }

    /// Index of the device holding data files.
    pub fn data_dev(&self) -> usize {
        self.dev_index(&self.data_device)
    }
    /// Index of the device holding swap.
    pub fn swap_dev(&self) -> usize {
        self.dev_index(&self.swap_device)
    }
    /// Index of the device holding the programs' files
    /// ([`Machine::text_device`]).
    pub fn text_dev(&self) -> usize {
        self.dev_index(&self.text_device)
    }
    fn dev_index(&self, name: &Option<String>) -> usize {
        name.as_ref()
            .and_then(|n| self.devices.iter().position(|d| &d.name == n))
            .unwrap_or(0)
    }
    /// Memory in 4 KiB pages.
    pub fn pages(&self) -> u64 {
        self.memory_mib * 256
    }

    /// Host memory (bytes) one simulated boot of this machine reserves
    /// before any workload runs: the page frame table (`mm/page.rs`, 20
    /// bytes a page, asserted there), the LRU lists and free lists (a
    /// `u32` a page each, with the lists' 1.5x growth), the page cache and
    /// swap cache entries of resident pages (a `u32` each), and the swap
    /// area's slot map (`mm/swap.rs`: a `u32` and a bit per 4 KiB slot). An
    /// upper estimate: the simulator asks for these arrays whole (zeroed,
    /// so untouched parts cost the host nothing until used, but the
    /// allocation itself fails when the host cannot give it).
    pub fn host_bytes_estimate(&self) -> u64 {
        const PER_PAGE: u64 = 20 + 4 * 3 / 2 + 4 + 4 + 4;
        let pages = self.memory_mib.saturating_mul(256);
        let slots = self.swap_mib.saturating_mul(256);
        pages
            .saturating_mul(PER_PAGE)
            .saturating_add(slots.saturating_mul(4))
            .saturating_add(slots / 8)
    }
}

/// Largest `memory_mib` and `swap_mib` accepted (4 TiB).
pub const MAX_MIB: u64 = 4 * 1024 * 1024;

/// Largest machine or workload TOML file read (a spec of 10,000 workers is
/// under 1 MiB).
pub const MAX_TOML_BYTES: u64 = 16 << 20;

/// Reads a text file of at most `cap` bytes; a larger one (or an endless
/// one, `/dev/zero`) is an `io::ErrorKind::FileTooLarge` error whose
/// message says so, read no further than `cap + 1` bytes.
pub fn read_text_capped(path: &std::path::Path, cap: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut b = Vec::new();
    std::fs::File::open(path)?
        .take(cap + 1)
        .read_to_end(&mut b)?;
    if b.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "larger than {} MiB: not a machine or workload file (they are a few KiB); check the path",
                cap >> 20
            ),
        ));
    }
    String::from_utf8(b).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// blk-wbt scales by `blk_queue_depth`: a SCSI disk's own depth, any
    /// other blk-mq disk's request pool (twice its tags with a scheduler,
    /// its tags without one).
    #[test]
    fn wbt_depth_is_blk_queue_depth() {
        let sata = dev("sda", 500.0, 500.0, 80.0, 20.0, 32);
        assert_eq!(
            (sata.blk_mq_nr_requests(), sata.wbt_queue_depth()),
            (64, 32)
        );
        let virtio = dev("vda", 2600.0, 1100.0, 27.0, 0.6, 128);
        assert_eq!(
            (virtio.blk_mq_nr_requests(), virtio.wbt_queue_depth()),
            (256, 256)
        );
        let deep = dev("vdb", 2600.0, 1100.0, 27.0, 0.6, 1024);
        assert_eq!(
            deep.wbt_queue_depth(),
            256,
            "BLKDEV_DEFAULT_RQ caps the pool"
        );
        let nvme = dev("nvme0n1", 1800.0, 3000.0, 20.0, 5.0, 1023);
        assert_eq!(nvme.effective_scheduler(), Scheduler::None);
        assert_eq!(
            (nvme.blk_mq_nr_requests(), nvme.wbt_queue_depth()),
            (1023, 1023)
        );
    }

    #[test]
    fn builtins_are_valid() {
        for m in builtin_machines() {
            m.check().unwrap();
        }
    }

    #[test]
    fn toml_errors_name_the_line() {
        let e = Machine::from_toml("name = \"x\"\ncpus = \"two\"\n", "m.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.toml") && e.contains("line 2"), "{e}");
        let e = Machine::from_toml("name='x'\ncpus=0\nmemory_mib=100\ndevices=[]\n", "m.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cpus = 0"), "{e}");
    }

    /// The kernel's own memory: absent fields are 0 (every built-in and
    /// hand-written machine manages all its RAM, all free at boot); bad
    /// values are refused with the line, the accepted range and the fix.
    #[test]
    fn boot_memory_fields() {
        for m in builtin_machines() {
            assert_eq!((m.boot_reserved_kib, m.boot_used_kib), (0, 0), "{}", m.name);
            assert_eq!(m.managed_pages(), m.pages());
            assert_eq!(m.mem_total_bytes(), m.memory_mib << 20);
        }
        let base = "name='x'\ncpus=1\nmemory_mib=1024\n[[devices]]\nname='sda'\nwrite_mb_s=10\nread_mb_s=10\nlatency_us=1\n";
        let m = Machine::from_toml(base, "m.toml").unwrap();
        assert_eq!((m.boot_reserved_kib, m.boot_used_kib), (0, 0));
        assert_eq!(m.workload_memory_bytes(), 1 << 30);
        let m = Machine::from_toml(
            &format!("boot_reserved_kib = 61184\nboot_used_kib = 87092\n{base}"),
            "m.toml",
        )
        .unwrap();
        assert_eq!((m.managed_pages(), m.boot_used_pages()), (246_848, 21_773));
        assert_eq!(m.workload_memory_bytes(), 246_848 * 4096);
        assert_eq!(m.workload_memory_mib(), 964);
        // A cgroup's limit stays the limit.
        let m = Machine::from_toml(
            &format!("boot_reserved_kib = 61184\n{base}[workload_cgroup]\nmemory_max_mib = 256\n"),
            "m.toml",
        )
        .unwrap();
        assert_eq!(m.workload_memory_bytes(), 256 << 20);
        for (line, want) in [
            (
                "boot_reserved_kib = 6",
                "boot_reserved_kib = 6 (accepted: a multiple of 4",
            ),
            ("boot_reserved_kib = 1048576", "from 0 to 1015808"),
            (
                "boot_used_kib = 1040000",
                "boot_used_kib = 1040000 (accepted: a multiple of 4",
            ),
            ("boot_used_kib = 10", "MemTotal in KiB less 16 MiB"),
        ] {
            let e = Machine::from_toml(&format!("{line}\n{base}"), "m.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains("m.toml:1:") && e.contains(want), "{line}: {e}");
        }
        let e = Machine::from_toml(&format!("boot_used_kib = -4\n{base}"), "m.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.toml") && e.contains("line 1"), "{e}");
    }

    /// `[os_slab]`: part of the memory in use at boot, large enough for
    /// its supers' objects; bad values name the field and the bound.
    #[test]
    fn os_slab_is_checked() {
        let base = "name='x'\ncpus=1\nmemory_mib=100\nboot_used_kib = 8192\n[[devices]]\nname='sda'\nwrite_mb_s=10\nread_mb_s=10\nlatency_us=1\n";
        let sup = "[[os_slab.supers]]\nfs = 'proc'\nseeks = 0\nunused_dentries = 42\n";
        let m = Machine::from_toml(
            &format!("{base}[os_slab]\nreclaimable_kib = 4096\n{sup}"),
            "m.toml",
        )
        .unwrap();
        // 42 dentries: 2 pages of 21; their inodes: 7 pages of 6.
        assert_eq!(m.os_slab.lru_slab_pages(), 9);
        assert_eq!(m.os_slab.supers[0].seeks, 0);
        for (os, want) in [
            (
                "reclaimable_kib = 8196\n",
                "os_slab.reclaimable_kib = 8196 (accepted: a multiple of 4",
            ),
            ("reclaimable_kib = 6\n", "os_slab.reclaimable_kib = 6"),
            (
                "reclaimable_kib = 32\n",
                "take 9 slab pages, more than reclaimable_kib = 32",
            ),
        ] {
            let e = Machine::from_toml(&format!("{base}[os_slab]\n{os}{sup}"), "m.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{os}: {e}");
        }
    }

    /// `text_device` names the device holding the programs: the first by
    /// default, another by name; an unknown name is refused with the line
    /// and the devices.
    #[test]
    fn text_device_by_name() {
        let base = "name='x'\ncpus=1\nmemory_mib=100\n[[devices]]\nname='sda'\nwrite_mb_s=10\nread_mb_s=10\nlatency_us=1\n[[devices]]\nname='vda'\nwrite_mb_s=10\nread_mb_s=10\nlatency_us=1\n";
        assert_eq!(Machine::from_toml(base, "m.toml").unwrap().text_dev(), 0);
        let m = Machine::from_toml(&format!("text_device = 'vda'\n{base}"), "m.toml").unwrap();
        assert_eq!(m.text_dev(), 1);
        let e = Machine::from_toml(&format!("text_device = 'vdz'\n{base}"), "m.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.toml:1:") && e.contains("sda, vda"), "{e}");
    }

    /// A device's `fs` takes the modelled filesystems by name; another is
    /// refused with the line and the accepted names.
    #[test]
    fn data_filesystem_by_name() {
        let base = "name='x'\ncpus=1\nmemory_mib=100\n[[devices]]\nname='sda'\nwrite_mb_s=10\nread_mb_s=10\nlatency_us=1\n";
        for (fs, want) in [("xfs", DataFs::Xfs), ("ext4", DataFs::Ext4)] {
            let m = Machine::from_toml(&format!("{base}fs='{fs}'\n"), "m.toml").unwrap();
            assert_eq!(m.devices[0].fs, Some(want));
            assert_eq!(DataFs::from_fstype(fs), Some(want));
        }
        assert_eq!(
            Machine::from_toml(base, "m.toml").unwrap().devices[0].fs,
            None
        );
        let e = Machine::from_toml(&format!("{base}fs='btrfs'\n"), "m.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 9") && e.contains("`xfs` or `ext4`"), "{e}");
        let letters = builtin_machines();
        let fs_of = |n: &str| letters.iter().find(|m| m.name == n).unwrap().devices[0].fs;
        assert_eq!(fs_of("testbox-2021"), Some(DataFs::Xfs));
        assert_eq!(fs_of("slice-2021"), Some(DataFs::Xfs));
    }
}
