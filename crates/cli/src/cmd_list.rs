//! `reclaimlab list kernels|machines|workloads|params`

use std::process::ExitCode;

use reclaimlab_kernel::machine::builtin_machines;
use reclaimlab_kernel::params::Params;
use reclaimlab_kernel::profile::{profile, profiles};
use reclaimlab_workload::stutterp::StutterpParams;

/// What to list.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum What {
    /// Kernel profiles (throttling generations).
    Kernels,
    /// Built-in machines.
    Machines,
    /// Built-in workloads and the spec format.
    Workloads,
    /// Every `--set` parameter with its default.
    Params,
}

/// Arguments of `reclaimlab list`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to list.
    pub what: What,
    /// Show parameter defaults under this profile.
    #[arg(long, default_value = "v5.16")]
    pub kernel: String,
}

/// Runs `reclaimlab list`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Kernels => {
            let width = profiles().iter().map(|p| p.name.len()).max().unwrap_or(0);
            for p in profiles() {
                outln!("{:<width$} {}", p.name, p.description);
                let sites: Vec<String> = p
                    .policy_pairs()
                    .iter()
                    .map(|(k, v)| format!("{}={v}", k.trim_start_matches("policy.")))
                    .collect();
                outln!("{:<width$} {}", "", sites.join(" "));
            }
            outln!(
                "\nAny other policy: a profile with some of its call sites changed, e.g.\n\
                 \x20 --kernel v5.16-rc1 --sweep policy.noprogress=rc1,none   (the series as merged, without NOPROGRESS)\n\
                 \x20 --kernel reclaimcongest-v2 --set policy.memcg_noprogress=0   (the series as the v2 letter measured it, without its memcg sleep)\n\
                 \x20 --kernel v5.15 --set policy.too_many_isolated=throttle_isolated\n\
                 \x20 --kernel v5.16 --set policy.noprogress=backoff --set throttle.noprogress.timeout_us=500000   (reclaimlab's own)\n\
                 \x20 --kernel v5.16-rc1 --sweep policy.rate_priority=off,gross,net   (reclaimlab's own: who may skip a sleep, by allocation rate)\n\
                 `reclaimlab list params` shows every policy.* setting and the values it takes."
            );
        }
        What::Machines => {
            for m in builtin_machines() {
                outln!("{:<13} {}", m.name, m.description);
            }
            outln!(
                "{:<13} this host as the real run sees it: its CPUs and nodes, 1 GiB as `run`'s default cgroup\n{:<13} (`host:2G` as `run --memory 2G`, `host:all` all of MemTotal, `,swap=2G` as `run --swap-file 2G`,\n{:<13} `,dir=DIR` as `run --data-dir DIR`), its swap, and the data device's measured bandwidth (cached a day);\n{:<13} `sim` writes the resolved profile to OUT/machine-host.toml to repeat the run",
                "host", "", "", ""
            );
            outln!("\nAny other machine: a TOML file with the same fields, e.g.\n");
            outln!("name = \"hdd\"\ncpus = 4\nmemory_mib = 4096\nswap_mib = 4096\n# optional: the kernel's own memory, KiB (default 0; a guest record gives both):\n# boot_reserved_kib = 61184   # kept before the buddy allocator: MemTotal = memory_mib less it\n# boot_used_kib = 87092       # in use when the workload starts, never freed (kernel memory)\n[[devices]]\nname = \"sda\"\nlayer = \"single-queue\"   # or \"blk-mq\" (default)\nwrite_mb_s = 120\nread_mb_s = 130\nlatency_us = 200\nseek_us = 6000\nqueue_depth = 32\n# optional (defaults: the kernel's; scheduler and wbt on blk-mq only):\n# scheduler = \"mq-deadline\"   # or \"none\"; default none for nvme*, mq-deadline otherwise\n# max_sectors_kb = 1280        # largest request\n# wbt_lat_usec = 75000         # blk-wbt target: 75000 if rotational, else 2000; 0 = off\n# rotational = true            # queue/rotational as the kernel has it (default: seek_us >= 1000); a rotational swap device reads ahead by slot");
        }
        What::Workloads => {
            outln!("{:<20} mmtests pagereclaim-stutterp(-noreaders): fio random writers, anon hogs, mmap-latency (stutterp.* parameters)", "stutterp");
            for (name, what, _) in reclaimlab_workload::spec::BUILTIN {
                outln!("{name:<20} {what} (examples/workloads/{name}.toml)");
            }
            outln!("{:<20} a workload spec composing workers; examples/workloads/mix.toml shows every kind and field", "FILE.toml");
        }
        What::Params => {
            let p = profile(&args.kernel).ok_or_else(|| {
                let names: Vec<&str> = profiles().iter().map(|p| p.name).collect();
                anyhow::anyhow!(
                    "--kernel {}: unknown kernel profile{} (known: {}; `reclaimlab list kernels`)",
                    args.kernel,
                    crate::suggest::hint(&args.kernel, &names),
                    names.join(", ")
                )
            })?;
            outln!(
                "{:<45} {:>10}  description (defaults under {})",
                "name",
                "default",
                p.name
            );
            for i in Params::list(p) {
                outln!(
                    "{:<45} {:>10}  {} [{}..={}]",
                    i.name,
                    i.default,
                    i.help,
                    i.min,
                    i.max
                );
            }
            for i in p.policy_list() {
                outln!(
                    "{:<45} {:>10}  {} [{}]",
                    i.name,
                    i.value,
                    i.help,
                    i.accepted.join(", ")
                );
            }
            for (name, default, help) in StutterpParams::list() {
                outln!("{:<45} {:>10}  {}", name, default, help);
            }
            outln!(
                "{:<45} {:>10}  the random seed, as --seed; `--sweep seed=1,2,3` repeats each run with other seeds",
                "seed", 1
            );
            outln!(
                "{:<45} {:>10}  a key of a spec's [[worker]] entries on every worker of KIND (mlock.size_mib=384); keys: {}",
                "KIND.KEY",
                "-",
                reclaimlab_workload::spec::WORKER_KEYS.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
