//! The XFS log in bytes: transaction reservations on the grant head, the
//! committed item list (CIL) and its checkpoints, log pinning, log forces
//! and the periodic log worker [5.8.1/5.9.1 fs/xfs/xfs_log.c
//! `xfs_log_reserve`, `xlog_grant_head_check`, `xlog_grant_head_wait`,
//! `xlog_grant_push_ail`, `xfs_log_force`, `xfs_log_worker`;
//! fs/xfs/xfs_log_cil.c `xlog_cil_insert_items`, `xlog_cil_push_background`,
//! `xlog_cil_push_work`, `xlog_cil_committed`; fs/xfs/xfs_log_priv.h
//! `XLOG_CIL_SPACE_LIMIT`, `XLOG_CIL_BLOCKING_SPACE_LIMIT`].
//!
//! A create reserves `tr_create` (unit × `XFS_CREATE_LOG_COUNT`) on the
//! grant head, waiting while the log lacks the space; at commit its items'
//! formatted sizes go into the current CIL context, each item counted once
//! per checkpoint with only its growth charged on a relog (the CIL's
//! `diff_len`); the rest of the reservation is given back. Every item
//! committed to the CIL is *pinned* (`iop_pin`) until its checkpoint's
//! commit record is on disk: it cannot be flushed by `xfsaild` nor freed by
//! reclaim. A checkpoint is pushed in the background when the CIL holds
//! `XLOG_CIL_SPACE_LIMIT` (min(log/8, 32 MiB) in 5.8 and 5.9), committers
//! block at twice that until the push work takes the context, and a log
//! force pushes it at once (from `xfsaild` after it met pinned items, from
//! 5.8's blocking reclaim through `xfs_iunpin_wait`, and from the log
//! worker every `xfssyncd_centisecs`). The push work writes the checkpoint
//! through the iclogs (8 × 32 KiB by default, `xlog_get_iclog_buffer_size`)
//! on the device's metadata queue, then its commit record; on completion
//! the items are unpinned and inserted in the AIL at the checkpoint's LSN
//! (`xfs_trans_committed_bulk`), a relogged item moving to it.
//!
//! Simplified: LSNs are byte offsets that never wrap; the reservation per
//! create is a fixed approximation of `tr_create` (not computed from the
//! geometry); per-item sizes are below (`INODE_ITEM_BYTES` …), a buffer's
//! dirty 128-byte chunks each cost a region header (contiguous chunks share
//! one in the kernel); a directory insert dirties its new data entry and
//! one leaf chunk (the kernel also logs the leaf entries it shifts, and the
//! free-index block); the AG's AGI, inode btree and free inode btree
//! blocks, and on a chunk allocation the AGF and free-space btrees, are one
//! header chunk each; the superblock is not logged (lazy counters). The
//! push work runs one checkpoint at a time and waits for its I/O (the
//! kernel's overlaps the next context's formatting with iclog I/O).
//! Directory and AG metadata buffers take no memory in the model.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::xfs_icache::{wait_on, AilItem, Wq};
use crate::engine::World;
use crate::Kernel;

/// Bytes an inode log item adds to a checkpoint: `xfs_inode_item_size`
/// for a new empty file, two vectors (the 56-byte `xfs_inode_log_format`
/// and the 176-byte v3 `xfs_log_dinode`; no fork data) and their op
/// headers (`xlog_cil_insert_items`: 12 bytes a vector).
pub const INODE_ITEM_BYTES: u64 = 56 + 176 + 2 * OP_HEADER;
/// `sizeof(xlog_op_header_t)`.
const OP_HEADER: u64 = 12;
/// A buffer log item's format header for a 4 KiB buffer (one bitmap word:
/// `xfs_buf_log_format_size`, 24 bytes) and its op header.
pub const BUF_FORMAT_BYTES: u64 = 24 + OP_HEADER;
/// One dirty `XFS_BLF_CHUNK` (128 bytes) of a buffer and its region's op
/// header.
pub const CHUNK_BYTES: u64 = 128 + OP_HEADER;
/// A directory data entry (`xfs_dir2_data_entsize`: 8-byte inode number,
/// name length, name, file type, tag, rounded to 8) for a 40-byte name
/// (fs_mark's generated names; the length is assumed, not read).
pub const DIRENT_BYTES: u64 = 56;
/// A directory leaf entry (hash and address).
pub const LEAF_ENT_BYTES: u64 = 8;
/// An `xfs_icreate_log` item (new inode chunk, v5) with its op header.
pub const ICREATE_BYTES: u64 = 32 + OP_HEADER;
/// A 4 KiB directory block.
const DIR_BLOCK: u64 = 4096;
/// Per-AG buffers a create logs (AGI, inobt and finobt leaf blocks), each a
/// format header and one chunk.
const AG_BUFS: u64 = 3;
/// Per-AG buffers a chunk allocation adds (AGF, bnobt, cntbt).
const ALLOC_BUFS: u64 = 3;
/// `tr_create`'s log reservation per unit, bytes: about 150 KiB on a
/// 4 KiB-block v5 filesystem (`xfs_calc_icreate_reservation`; not computed
/// from this geometry).
pub const CREATE_LOG_RES: u64 = 150 * 1024;
/// `XFS_CREATE_LOG_COUNT` [5.8 fs/xfs/libxfs/xfs_trans_resv.h].
pub const CREATE_LOG_COUNT: u64 = 2;
/// Default iclog size (`XLOG_BIG_RECORD_BSIZE`) and its header
/// (`l_iclog_hsize`: one 512-byte sector per 32 KiB).
const ICLOG_SIZE: u64 = 32 * 1024;
const ICLOG_HEADER: u64 = 512;
/// `XLOG_CIL_SPACE_LIMIT`'s cap: `BBTOB(XLOG_TOTAL_REC_SHIFT) << 4` with a
/// v2 log = 8 iclogs × 256 KiB × 16.
const CIL_SPACE_CAP: u64 = 32 << 20;

/// A directory's logging state in the current checkpoint.
#[derive(Debug, Default)]
pub struct DirLog {
    /// Entries so far (the data blocks' fill and the leaf's size).
    pub entries: u64,
    /// Sequence of the checkpoint it was last logged in.
    pub seq: u64,
    /// Dirty data chunks, leaf chunks (offset by 1 << 40) and blocks in
    /// that checkpoint.
    chunks: BTreeSet<u64>,
    blocks: BTreeSet<u64>,
    /// In the AIL at this LSN.
    pub lsn: Option<u64>,
    /// Its buffers are being written by `xfsaild`.
    pub writing: bool,
}

/// An AG's header and btree blocks' logging state.
#[derive(Debug, Default)]
pub struct AgLog {
    /// Sequence of the checkpoint they were last logged in.
    pub seq: u64,
    /// Sequence of the last checkpoint with a chunk allocation.
    pub alloc_seq: u64,
    /// In the AIL at this LSN.
    pub lsn: Option<u64>,
    /// Being written by `xfsaild`.
    pub writing: bool,
}

/// The log of a mount (`struct xlog` with its CIL).
#[derive(Debug, Default)]
pub struct Log {
    /// Log size, bytes (`xfs.log_mib`).
    pub size: u64,
    /// Write head: bytes written (or being written) since mount.
    pub head: u64,
    /// `l_last_sync_lsn`: end of the last checkpoint on disk.
    pub last_sync: u64,
    /// Outstanding transaction reservations (grant head beyond the CIL).
    pub reserved: u64,
    /// Sequence of the current CIL context (`xc_current_sequence`).
    pub seq: u64,
    /// `xc_push_seq`: the highest sequence asked to be pushed.
    pub push_seq: u64,
    /// Highest sequence whose checkpoint is on disk (items unpinned).
    pub done_seq: u64,
    /// The current context's `space_used`.
    pub cil_bytes: u64,
    /// The current context's new inodes (pinned).
    pub cil_inodes: Vec<u32>,
    /// The current context's shared items (directories, AGs).
    pub cil_shared: Vec<AilItem>,
    /// A checkpoint is being written.
    pub pushing: bool,
    /// Per-directory logging state.
    pub dirs: std::collections::BTreeMap<u32, DirLog>,
    /// Per-AG logging state.
    pub ags: Vec<AgLog>,
}

impl Log {
    /// A log of `size` bytes for `agcount` AGs.
    pub fn new(size: u64, agcount: usize) -> Log {
        // LSNs start past the first record's header, so that no item sits at
        // LSN 0 (the kernel's start at cycle 1; a zero target pushes nothing).
        Log {
            size,
            head: ICLOG_HEADER,
            last_sync: ICLOG_HEADER,
            seq: 1,
            ags: (0..agcount.max(1)).map(|_| AgLog::default()).collect(),
            ..Default::default()
        }
    }
    /// `XLOG_CIL_SPACE_LIMIT` [5.8/5.9 fs/xfs/xfs_log_priv.h].
    pub fn cil_space_limit(&self) -> u64 {
        (self.size >> 3).min(CIL_SPACE_CAP)
    }
    /// Whether an item last logged in sequence `seq` is still pinned.
    pub fn pinned(&self, seq: u64) -> bool {
        seq > self.done_seq
    }
}

impl Kernel {
    /// The log tail (`xlog_assign_tail_lsn`): the oldest AIL item's LSN,
    /// or the last checkpoint on disk when the AIL is empty.
    pub fn xlog_tail(&self, sb: usize) -> u64 {
        let x = &self.supers[sb].xfs;
        x.ail.first().map_or(x.log.last_sync, |&(l, _)| l)
    }

    /// Free space on the reserve grant head (`xlog_space_left`): the log
    /// less the space from tail to head, the CIL's and the reservations.
    pub fn xlog_space_left(&self, sb: usize) -> u64 {
        let l = &self.supers[sb].xfs.log;
        let used = l.head - self.xlog_tail(sb) + l.cil_bytes + l.reserved;
        l.size.saturating_sub(used)
    }

    /// `xlog_grant_push_ail`: when less than a quarter of the log (or
    /// `need`, or 256 blocks) is free, sets the AIL target to that much
    /// beyond the tail, no further than the last checkpoint on disk, and
    /// wakes `xfsaild` if the target moved.
    pub fn xlog_grant_push_ail(&mut self, sb: usize, need: u64) {
        let free = self.xlog_space_left(sb);
        let l = &self.supers[sb].xfs.log;
        let threshold = need.max(l.size / 4).max(256 * 512);
        if free >= threshold {
            return;
        }
        let target = (self.xlog_tail(sb) + threshold).min(l.last_sync);
        self.xfs_ail_push(sb, target);
    }

    /// `xfs_ail_push`: raises the AIL target and wakes `xfsaild`.
    pub fn xfs_ail_push(&mut self, sb: usize, target: u64) {
        let x = &mut self.supers[sb].xfs;
        if target > x.ail_target {
            x.ail_target = target;
            self.exec.wake_up_all(&mut x.aild_wait);
        }
    }

    /// `xfs_ail_push_all`: the target becomes the AIL's newest item.
    pub fn xfs_ail_push_all(&mut self, sb: usize) {
        let max = self.supers[sb].xfs.ail.last().map_or(0, |&(l, _)| l);
        let x = &mut self.supers[sb].xfs;
        x.ail_target = x.ail_target.max(max);
        self.exec.wake_up_all(&mut x.aild_wait);
    }

    /// Asks the CIL push work for sequence `seq` (`xlog_cil_push_now`), if
    /// the current context holds anything and is that sequence.
    fn xlog_cil_push_now(&mut self, sb: usize, seq: u64) {
        let l = &mut self.supers[sb].xfs.log;
        if l.cil_inodes.is_empty() && l.cil_shared.is_empty() {
            return;
        }
        if seq >= l.seq && l.push_seq < l.seq {
            l.push_seq = l.seq;
            let x = &mut self.supers[sb].xfs;
            self.exec.wake_up_all(&mut x.cil_wait);
        }
    }

    /// `xlog_cil_insert_items` for a create of inode index `ino` in
    /// directory `dir`, AG `ag` (`new_chunk`: it allocated an inode chunk):
    /// charges each item's new bytes to the context, pins them, and gives
    /// back the reservation. Returns the bytes added.
    pub fn xlog_cil_commit_create(
        &mut self,
        sb: usize,
        dir: u32,
        ag: usize,
        ino: u32,
        new_chunk: bool,
    ) -> u64 {
        let x = &mut self.supers[sb].xfs;
        let l = &mut x.log;
        let seq = l.seq;
        // The new inode: a new item in this context.
        let mut bytes = INODE_ITEM_BYTES;
        if let Some(ip) = x.inodes[ino as usize].as_mut() {
            ip.seq = seq;
        }
        l.cil_inodes.push(ino);
        // The directory: its inode once per checkpoint, then the data and
        // leaf chunks the insert dirties that are not yet dirty.
        let d = l.dirs.entry(dir).or_default();
        if d.seq != seq {
            d.seq = seq;
            d.chunks.clear();
            d.blocks.clear();
            bytes += INODE_ITEM_BYTES;
            l.cil_shared.push(AilItem::Dir(dir));
        }
        let chunk_of = |off: u64| off / 128;
        let start = d.entries * DIRENT_BYTES;
        let mut dirty = Vec::new();
        for c in chunk_of(start)..=chunk_of(start + DIRENT_BYTES - 1) {
            dirty.push(c);
        }
        // The leaf: the entry lands at its hash's place among the others.
        let h = (u64::from(ino) ^ u64::from(dir) << 32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = (h >> 16) % (d.entries + 1);
        dirty.push((1 << 40) + chunk_of(slot * LEAF_ENT_BYTES));
        for c in dirty {
            let block = c / (DIR_BLOCK / 128);
            if d.blocks.insert(block) {
                // A buffer new to this checkpoint: its format header and
                // its block header chunk.
                bytes += BUF_FORMAT_BYTES;
                if d.chunks.insert(block * (DIR_BLOCK / 128)) {
                    bytes += CHUNK_BYTES;
                }
            }
            if d.chunks.insert(c) {
                bytes += CHUNK_BYTES;
            }
        }
        d.entries += 1;
        // The AG's header and inode btree blocks, once per checkpoint; a
        // chunk allocation adds the AGF, the free-space btrees and an
        // icreate item.
        let a = &mut l.ags[ag];
        if a.seq != seq {
            a.seq = seq;
            bytes += AG_BUFS * (BUF_FORMAT_BYTES + CHUNK_BYTES);
            l.cil_shared.push(AilItem::Ag(ag as u16));
        }
        if new_chunk {
            bytes += ICREATE_BYTES;
            if a.alloc_seq != seq {
                a.alloc_seq = seq;
                bytes += ALLOC_BUFS * (BUF_FORMAT_BYTES + CHUNK_BYTES);
            }
        }
        l.cil_bytes += bytes;
        l.reserved = l.reserved.saturating_sub(CREATE_LOG_RES * CREATE_LOG_COUNT);
        x.stats.log_bytes += bytes;
        x.stats.commits += 1;
        bytes
    }

    /// Gives back a reservation unused (a create that failed).
    pub fn xfs_log_ungrant(&mut self, sb: usize) {
        let l = &mut self.supers[sb].xfs.log;
        l.reserved = l.reserved.saturating_sub(CREATE_LOG_RES * CREATE_LOG_COUNT);
        let x = &mut self.supers[sb].xfs;
        self.exec.wake_up_all(&mut x.log_wait);
    }

    /// `xlog_cil_committed` of the checkpoint of sequence `seq` written at
    /// `lsn`: its items are unpinned and go into the AIL at `lsn` (a
    /// relogged directory or AG moves there); waiters on the sequence and
    /// for log space are woken.
    fn xlog_cil_committed(
        &mut self,
        sb: usize,
        seq: u64,
        lsn: u64,
        end: u64,
        inodes: Vec<u32>,
        shared: Vec<AilItem>,
    ) {
        let x = &mut self.supers[sb].xfs;
        x.log.done_seq = seq;
        x.log.last_sync = end;
        x.log.pushing = false;
        for i in inodes {
            let Some(ip) = x.inodes[i as usize].as_mut() else {
                continue;
            };
            if ip.seq != seq || !ip.dirty {
                continue;
            }
            ip.lsn = lsn;
            let cl = &mut x.clusters[ip.cluster as usize];
            if cl.ail_lsn.is_none() {
                cl.ail_lsn = Some(lsn);
                x.ail.insert((lsn, AilItem::Cluster(ip.cluster)));
            }
        }
        for it in shared {
            let slot = match it {
                AilItem::Dir(d) => {
                    let d = x.log.dirs.get_mut(&d).expect("a logged directory");
                    &mut d.lsn
                }
                AilItem::Ag(a) => &mut x.log.ags[a as usize].lsn,
                AilItem::Cluster(_) => continue,
            };
            if let Some(old) = slot.replace(lsn) {
                x.ail.remove(&(old, it));
            }
            x.ail.insert((lsn, it));
        }
        x.stats.checkpoints += 1;
        for wq in [&mut x.force_wait, &mut x.log_wait] {
            self.exec.wake_up_all(wq);
        }
    }
}

/// `xfs_log_reserve` for a create (`tr_create`): pushes the AIL if the log
/// is short of a quarter free (`xlog_grant_push_ail`), then waits while the
/// reservation does not fit (`xlog_grant_head_wait`; woken as the tail
/// moves). Returns at once for a killed task.
pub async fn xfs_log_reserve(w: &World, sb: usize) {
    let need = CREATE_LOG_RES * CREATE_LOG_COUNT;
    let mut counted = false;
    loop {
        {
            let mut k = w.k();
            k.xlog_grant_push_ail(sb, need);
            let killed = k.current().killed;
            if k.xlog_space_left(sb) >= need || killed {
                k.supers[sb].xfs.log.reserved += need;
                return;
            }
            if !counted {
                k.supers[sb].xfs.stats.log_waits += 1;
                counted = true;
            }
        }
        wait_on(w, sb, Wq::Log).await;
    }
}

/// After a commit: `xlog_cil_push_background` queues the push work when
/// the context reaches `XLOG_CIL_SPACE_LIMIT`, and the committer sleeps on
/// `xc_push_wait` while it is at `XLOG_CIL_BLOCKING_SPACE_LIMIT` (twice
/// that) until the push work takes the context.
pub async fn xlog_cil_push_background(w: &World, sb: usize) {
    let seq = {
        let mut k = w.k();
        let l = &k.supers[sb].xfs.log;
        let (used, limit, seq) = (l.cil_bytes, l.cil_space_limit(), l.seq);
        if used < limit {
            return;
        }
        k.xlog_cil_push_now(sb, seq);
        if used < 2 * limit {
            return;
        }
        k.supers[sb].xfs.stats.cil_throttles += 1;
        seq
    };
    while w.k().supers[sb].xfs.log.seq == seq && !w.k().current().killed {
        wait_on(w, sb, Wq::CilThrottle).await;
    }
}

/// `xfs_log_force(mp, XFS_LOG_SYNC)`: pushes the current context and
/// waits until it is on disk (or, with an empty CIL, the one in flight).
pub async fn xfs_log_force(w: &World, sb: usize) {
    let seq = {
        let mut k = w.k();
        k.supers[sb].xfs.stats.log_forces += 1;
        let l = &k.supers[sb].xfs.log;
        let seq = if l.cil_inodes.is_empty() && l.cil_shared.is_empty() {
            l.seq - 1
        } else {
            l.seq
        };
        k.xlog_cil_push_now(sb, seq);
        seq
    };
    xlog_wait_seq(w, sb, seq).await;
}

/// `xfs_iunpin_wait` of an inode last logged in sequence `seq` [5.8
/// fs/xfs/xfs_inode.c: `xfs_iunpin` forces the log up to the inode's
/// `ili_last_lsn` without waiting, then the caller sleeps until the pin
/// count is 0].
pub async fn xfs_iunpin_wait(w: &World, sb: usize, seq: u64) {
    {
        let mut k = w.k();
        if !k.supers[sb].xfs.log.pinned(seq) {
            return;
        }
        k.supers[sb].xfs.stats.log_forces += 1;
        k.xlog_cil_push_now(sb, seq);
    }
    xlog_wait_seq(w, sb, seq).await;
}

/// Sleeps until the checkpoint of sequence `seq` is on disk.
async fn xlog_wait_seq(w: &World, sb: usize, seq: u64) {
    while w.k().supers[sb].xfs.log.pinned(seq) && !w.k().current().killed {
        wait_on(w, sb, Wq::Force).await;
    }
}

/// The CIL push work (`xlog_cil_push_work` on `xfs-cil/DEV`): takes the
/// current context when its sequence was asked for, wakes committers
/// throttled on it, writes the checkpoint through the iclogs and then its
/// commit record on the device, and completes it (`xlog_cil_committed`).
pub async fn xlog_cil_push_worker(w: Rc<World>, sb: usize) {
    loop {
        let job = {
            let mut k = w.k();
            let k = &mut *k;
            let x = &mut k.supers[sb].xfs;
            let l = &mut x.log;
            if l.push_seq >= l.seq && !(l.cil_inodes.is_empty() && l.cil_shared.is_empty()) {
                let seq = l.seq;
                let bytes = l.cil_bytes;
                let inodes = std::mem::take(&mut l.cil_inodes);
                let shared = std::mem::take(&mut l.cil_shared);
                l.cil_bytes = 0;
                l.seq += 1;
                l.pushing = true;
                // The iclogs' headers: one per 32 KiB of checkpoint.
                let written = bytes + bytes.div_ceil(ICLOG_SIZE - ICLOG_HEADER) * ICLOG_HEADER;
                let lsn = l.head;
                l.head += written + ICLOG_HEADER;
                x.stats.checkpoint_bytes += written;
                k.exec.wake_up_all(&mut x.cil_throttle);
                Some((seq, lsn, written, inodes, shared))
            } else {
                None
            }
        };
        let Some((seq, lsn, written, inodes, shared)) = job else {
            wait_on(&w, sb, Wq::Cil).await;
            continue;
        };
        let done = {
            let mut k = w.k();
            let pages = written.div_ceil(4096) as usize;
            k.meta_io(sb, pages, true);
            // The commit record in an iclog of its own, after the rest.
            k.meta_io(sb, 1, true)
        };
        w.sleep_until(done).await;
        let mut k = w.k();
        let end = lsn + written + ICLOG_HEADER;
        k.xlog_cil_committed(sb, seq, lsn, end, inodes, shared);
    }
}

/// The log worker (`xfs_log_worker`) every `xfssyncd_centisecs` (30 s):
/// an asynchronous log force (the CIL is pushed, nobody waits) and
/// `xfs_ail_push_all`. (Log covering of an idle log is not modelled.)
pub async fn xfs_log_worker(w: Rc<World>, sb: usize) {
    loop {
        let at = {
            let k = w.k();
            k.exec.now() + k.params.xfs_syncd_centisecs.max(1) * 10_000_000
        };
        w.sleep_until(at).await;
        let mut k = w.k();
        let seq = k.supers[sb].xfs.log.seq;
        k.supers[sb].xfs.stats.log_forces += 1;
        k.xlog_cil_push_now(sb, seq);
        k.xfs_ail_push_all(sb);
    }
}
