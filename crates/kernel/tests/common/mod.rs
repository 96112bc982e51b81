//! Set-up shared by the kernel crate's integration tests.
// Each test crate uses some of these.
#![allow(dead_code)]

use reclaimlab_kernel::engine::World;
use reclaimlab_kernel::kernel::TaskKind;
use reclaimlab_kernel::machine::Machine;
use reclaimlab_kernel::mm::filemap::file_write;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::profile;
use reclaimlab_kernel::{boot, SimConfig};
use std::rc::Rc;

/// Boots `machine` (TOML) under v5.15 and starts one task that writes
/// `pages` pages of a new file on its first device once, then exits.
pub fn boot_one_writer(machine: &str, pages: u32) -> Rc<World> {
    let w = boot_v515(machine, &[]);
    let f = w.k().create_file(0, pages);
    let t = w.k().new_task("writer", TaskKind::User, 0);
    let w2 = w.clone();
    w.spawn(t, async move {
        let _ = file_write(&w2, f, 0, pages).await;
    });
    w
}

/// Boots `machine` (TOML) under v5.15 with the parameters `set`
/// changed from their defaults.
pub fn boot_v515(machine: &str, set: &[(&str, &str)]) -> Rc<World> {
    let m = Machine::from_toml(machine, "test").unwrap();
    let p = profile("v5.15").unwrap();
    let mut params = Params::defaults(p);
    for (name, value) in set {
        params.set(name, value).unwrap();
    }
    boot(&SimConfig::new(m, p, params, 1))
}
