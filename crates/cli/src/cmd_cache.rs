//! `reclaimlab cache [--prune] [--keep N] [--max-size SIZE] [--dry-run] [--cache-dir DIR]`:
//! the guest kernel and image cache of `run --kernel`, listed or pruned.
//!
//! Thin: the entries and the pruning rules live in
//! `reclaimlab_host::guest::cache` (entries used within the last hour, and
//! the apt state, are never removed).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use reclaimlab_host::guest::cache;

/// Arguments of `reclaimlab cache`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Remove entries: leftovers of interrupted builds always, images beyond
    /// --keep, and the least recently used until the cache fits --max-size.
    #[arg(long)]
    pub prune: bool,
    /// With --prune: guest images kept, most recently used first.
    #[arg(long, value_name = "N", default_value_t = cache::DEFAULT_KEEP_IMAGES)]
    pub keep: usize,
    /// With --prune: bring the whole cache under SIZE (e.g. 2G), least recently used first.
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,
    /// With --prune: say what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The cache (default $XDG_CACHE_HOME/reclaimlab or ~/.cache/reclaimlab, as `run --kernel`).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// Runs `reclaimlab cache`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = args
        .cache_dir
        .clone()
        .unwrap_or_else(reclaimlab_host::guest::kernel_cache::default_cache_dir);
    if !args.prune && (args.max_size.is_some() || args.dry_run) {
        anyhow::bail!(
            "--max-size and --dry-run only apply with --prune\n  fix: reclaimlab cache --prune {}",
            if args.dry_run {
                "--dry-run"
            } else {
                "--max-size SIZE"
            }
        );
    }
    let max_bytes = args
        .max_size
        .as_deref()
        .map(|s| reclaimlab_host::parse_size("--max-size", s))
        .transpose()?;
    let now = SystemTime::now();
    let entries = cache::list(&dir);
    if !args.prune {
        if entries.is_empty() {
            outln!("{}: no guest cache entries", dir.display());
            return Ok(ExitCode::SUCCESS);
        }
        outln!("{}:", dir.display());
        for e in &entries {
            outln!("  {}", cache::describe(e, now));
        }
        outln!(
            "  total {}; `reclaimlab cache --prune [--keep N] [--max-size SIZE]` removes old entries",
            reclaimlab_host::error::human_bytes(entries.iter().map(|e| e.bytes).sum())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let policy = cache::Policy {
        keep_images: Some(args.keep),
        max_bytes,
        keep: Vec::new(),
        in_use: Duration::from_secs(cache::IN_USE_S),
    };
    let gone = if args.dry_run {
        cache::plan(&entries, &policy, now)
    } else {
        cache::prune(&dir, &policy)?
    };
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for e in &gone {
        outln!("{verb} {}", cache::describe(e, now));
    }
    let freed: u64 = gone.iter().map(|e| e.bytes).sum();
    let left: u64 = entries.iter().map(|e| e.bytes).sum::<u64>() - freed;
    outln!(
        "{}: {verb} {} entries ({}); {} left",
        dir.display(),
        gone.len(),
        reclaimlab_host::error::human_bytes(freed),
        reclaimlab_host::error::human_bytes(left)
    );
    if let Some(max) = max_bytes {
        if left > max {
            outln!(
                "note: still above --max-size {}: the rest was used within the last hour or is the apt state",
                reclaimlab_host::error::human_bytes(max)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
