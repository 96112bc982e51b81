//! Behaviour tests of slab reclaim (seed 004): shrinkers, the superblock
//! shrinker over the XFS inode cache, and the three `xfs.inode_reclaim`
//! modes. Each names the kernel function it checks.

mod common;

use common::{machine, sim};

/// 512 MiB, 2 CPUs, no swap, one SSD.
const BOX: &str = "name='box'\ncpus=2\nmemory_mib=512\nswap_mib=0\n[[devices]]\nname='sda'\nwrite_mb_s=20\nread_mb_s=25\nlatency_us=500\nseek_us=50\n";

fn fsmark(secs: u32) -> String {
    format!("name='fsmark'\nduration_s={secs}\n[[worker]]\nkind='fs-create'\ncount=16\ndirs=16\n")
}

#[test]
fn debug_modes() {
    for log in ["16", "64", "128"] {
        for mode in ["sync", "async", "async-pinned"] {
            let (c, s) = sim(
                &machine(BOX),
                "v5.9",
                &fsmark(10),
                1,
                &[("xfs.inode_reclaim", mode), ("xfs.log_mib", log)],
            );
            eprintln!(
                "{log} {mode}: {:?} slabs_scanned {} allocstall {} oom {} creates {}",
                s.xfs,
                c.delta("slabs_scanned"),
                c.delta("allocstall_normal"),
                c.delta("oom_kill"),
                c.lat.len()
            );
        }
    }
}
