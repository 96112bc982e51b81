//! The workers' program text: which program images each worker maps, and
//! how many pages of each it references while it runs (its hot set). The
//! kernel side is `reclaimlab_kernel::mm::text`.
//!
//! Measured inputs, not fitted (docs/simulator.md, "Program text"): on the
//! reference host (6.18), `/proc/PID/clear_refs`, then one second later the
//! `Referenced:` and `Rss:` of each executable file mapping in
//! `/proc/PID/smaps`, 8 times, for `reclaimlab worker memory-hog 256M`,
//! `reclaimlab worker mmap-latency --pages 8192` and the fio job process
//! of a stutterp writer job (`ioengine=libaio`, `time_based`, 1 MiB random
//! writes, `invalidate=1`). The hot count of an image is the smallest of
//! the 8 (a shared library's pages are also referenced by whatever other
//! process runs it; the smallest count is the worker's own); an image's
//! size is the most pages of it any of these processes had resident.
//! Not modelled: fio's parent process (it references 17 pages of fio and
//! 51 of libc a second), the runner's own sampler (`reclaimlab run`, once a
//! second), the dynamic loader and the other libraries (resident, never
//! referenced in a second).

use crate::spec::WorkerKind;

/// A program image: its name and the pages of it resident.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// File name.
    pub name: &'static str,
    /// Resident text pages (the most any measured process had).
    pub pages: u32,
}

/// The `reclaimlab` binary (memory-hog and mmap-latency are `reclaimlab
/// worker …`): 413 pages resident in memory-hog, 365 in mmap-latency.
pub const RECLAIMLAB: Image = Image {
    name: "reclaimlab",
    pages: 413,
};
/// glibc's `libc.so.6`, shared by all (316 pages resident in fio's parent,
/// 239 in memory-hog).
pub const LIBC: Image = Image {
    name: "libc.so.6",
    pages: 316,
};
/// The `fio` binary (128 pages resident in the parent, 112 in the job).
pub const FIO: Image = Image {
    name: "fio",
    pages: 128,
};
/// `libaio.so.1` (one page, referenced every second by the job).
pub const LIBAIO: Image = Image {
    name: "libaio.so.1",
    pages: 1,
};

/// How often a worker of `kind` references its hot set: `(fast, period)`,
/// the pages it referenced within 10 ms in every trial (its first `fast`
/// hot pages: memory-hog's and mmap-latency's one page of `reclaimlab`),
/// and the smallest window in which it referenced all of them in every
/// trial (ns): 100 ms for memory-hog and mmap-latency, 1 s for fio's job
/// (none at all in some 100 ms windows: blocked in its writes).
pub fn hot_period(kind: WorkerKind) -> (usize, u64) {
    match kind {
        WorkerKind::AnonHog | WorkerKind::MmapLatency => (1, 100_000_000),
        _ => (0, 1_000_000_000),
    }
}

/// The hot set of a worker kind: `(image, pages referenced in a second)`.
/// Kinds not measured have none.
pub fn hot_text(kind: WorkerKind) -> &'static [(Image, u32)] {
    match kind {
        WorkerKind::AnonHog => &[(RECLAIMLAB, 10), (LIBC, 3)],
        WorkerKind::MmapLatency => &[(RECLAIMLAB, 10), (LIBC, 5)],
        // The measured job wrote; a reader's loop is fio's same
        // submission path (an assumption: not measured).
        WorkerKind::FileWriter | WorkerKind::FileReader => &[(FIO, 26), (LIBC, 4), (LIBAIO, 1)],
        _ => &[],
    }
}

/// Loads the images `kinds` use into the kernel (in the page cache, as on
/// a booted system whose programs have run) and returns nothing; called
/// once per step, before any worker starts.
pub fn load_images(k: &mut reclaimlab_kernel::Kernel, kinds: impl Iterator<Item = WorkerKind>) {
    for kind in kinds {
        for (img, _) in hot_text(kind) {
            k.program_image(img.name, img.pages, true);
        }
    }
}

/// The hot pages, `(file, index)`, of a worker of `kind`: each image's hot
/// pages spread evenly over it (`reclaimlab_kernel::mm::text::spread_index`).
pub fn hot_pages(k: &mut reclaimlab_kernel::Kernel, kind: WorkerKind) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for (img, n) in hot_text(kind) {
        let f = k.program_image(img.name, img.pages, true);
        let n = (*n).min(img.pages);
        v.extend((0..n).map(|j| {
            (
                f,
                reclaimlab_kernel::mm::text::spread_index(j, n, img.pages),
            )
        }));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hot count fits its image, and the three measured kinds have
    /// text, the others none.
    #[test]
    fn hot_sets_fit_their_images() {
        for kind in [
            WorkerKind::AnonHog,
            WorkerKind::MmapLatency,
            WorkerKind::FileWriter,
            WorkerKind::FileReader,
        ] {
            let h = hot_text(kind);
            assert!(!h.is_empty());
            assert!(
                h.iter().all(|(img, n)| *n > 0 && *n <= img.pages),
                "{kind:?}"
            );
        }
        assert!(hot_text(WorkerKind::Mlock).is_empty());
        assert!(hot_text(WorkerKind::MmapFileReader).is_empty());
    }
}
