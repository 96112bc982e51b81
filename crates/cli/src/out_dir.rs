//! The output folder of `sim`: which records it holds, in which order, and
//! whether a new `sim` may write there.
//!
//! `sim` writes one record per run into `--out` and a `report.html` over
//! them. Two things keep that folder honest:
//!
//! * **Order.** `runs.txt` lists the folder's records in the order of the
//!   command line (the `--kernel` order, then the sweep's), the first the
//!   baseline, with the command that wrote them. `reclaimlab report FOLDER`
//!   reads the records in that order, so its columns are `sim`'s; records
//!   the file does not list follow in natural order.
//! * **No silent mixing.** A folder holding records that the new `sim` would
//!   not replace (an earlier run with other kernels or sweep values) is
//!   refused unless `--force`, because its `report.html` would be
//!   overwritten and a later `report FOLDER` would mix old and new runs.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use anyhow::bail;

/// The order file in a `sim` output folder.
pub const ORDER_FILE: &str = "runs.txt";

/// The records directly under `dir` (subdirectories with a `run.json`, not
/// hidden: an unfinished record is `.NAME.partial-PID`), in natural order.
pub fn records_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    found.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    found
}

/// The records under `dir` in the order its [`ORDER_FILE`] gives (those it
/// lists and that exist), then the others in natural order; and the command
/// the file records, if any.
pub fn records_in_order(dir: &Path) -> (Vec<PathBuf>, Option<String>) {
    let mut all = records_in(dir);
    let Ok(text) = std::fs::read_to_string(dir.join(ORDER_FILE)) else {
        return (all, None);
    };
    let mut command = None;
    let mut ordered = Vec::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("# command: ") {
            command = Some(c.to_string());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(i) = all
            .iter()
            .position(|p| p.file_name().is_some_and(|n| n == line))
        {
            ordered.push(all.remove(i));
        }
    }
    ordered.extend(all);
    (ordered, command)
}

/// Writes [`ORDER_FILE`]: the record folder names in run order and the command.
pub fn write_order(out: &Path, dirs: &[PathBuf], command: &str) -> anyhow::Result<()> {
    let mut text = format!(
        "# reclaimlab sim: the records of this folder in the order of the command line;\n\
         # the first is the baseline. `reclaimlab report {}` reads them in this order.\n\
         # command: {command}\n",
        out.display()
    );
    for d in dirs {
        if let Some(n) = d.file_name() {
            text.push_str(&n.to_string_lossy());
            text.push('\n');
        }
    }
    let path = out.join(ORDER_FILE);
    crate::write_file::write_whole(&path, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Checks that `sim` may write the records `planned` into `out`: refuses
/// (unless `force`) when `out` holds other records that would stay beside
/// them. Says on stderr what it replaces or, with `force`, keeps.
pub fn check_out(out: &Path, planned: &[PathBuf], force: bool) -> anyhow::Result<()> {
    let existing = records_in(out);
    let (replaced, older): (Vec<&PathBuf>, Vec<&PathBuf>) =
        existing.iter().partition(|p| planned.contains(p));
    let names = |v: &[&PathBuf]| {
        let mut s: Vec<String> = v
            .iter()
            .take(4)
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        if v.len() > 4 {
            s.push(format!("and {} more", v.len() - 4));
        }
        s.join(", ")
    };
    if !older.is_empty() {
        if !force {
            bail!(
                "--out {}: the folder holds {} record(s) of an earlier `sim` that this one would not replace ({}); \
                 its report.html would be overwritten and `reclaimlab report {}` would mix old and new runs. \
                 Give another --out, remove those records, or add --force to keep them beside the new ones",
                out.display(),
                older.len(),
                names(&older),
                out.display()
            );
        }
        eprintln!(
            "reclaimlab: --force: keeping {} older record(s) in {} beside the new ones ({}); `reclaimlab report {}` reads them all, the new ones first",
            older.len(),
            out.display(),
            names(&older),
            out.display()
        );
    }
    if !replaced.is_empty() {
        eprintln!(
            "reclaimlab: replacing {} record(s) of an earlier run in {}",
            replaced.len(),
            out.display()
        );
    }
    Ok(())
}

/// This process's command line, as a user would type it (`reclaimlab` for
/// the binary's path; arguments with spaces or shell characters quoted).
pub fn command_line() -> String {
    let mut parts = vec!["reclaimlab".to_string()];
    for a in std::env::args().skip(1) {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+@%".contains(c));
        parts.push(if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        });
    }
    parts.join(" ")
}

/// Compares with runs of digits as numbers: `swappiness=2` before
/// `swappiness=10`, `v5.15` before `v5.16`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let na = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
                let nb = b.find(|c: char| !c.is_ascii_digit()).unwrap_or(b.len());
                let (da, db) = (
                    a[..na].trim_start_matches('0'),
                    b[..nb].trim_start_matches('0'),
                );
                let o = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
                if o != Ordering::Equal {
                    return o;
                }
                (a, b) = (&a[na..], &b[nb..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                (a, b) = (&a[x.len_utf8()..], &b[y.len_utf8()..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("reclaimlab-outdir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn record(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("run.json"), "{}").unwrap();
    }

    #[test]
    fn the_order_file_gives_the_command_line_order() {
        let d = tmp("order");
        for n in ["v5.15", "v5.16", "v5.16-rc1", "extra"] {
            record(&d.join(n));
        }
        let planned: Vec<PathBuf> = ["v5.15", "v5.16-rc1", "v5.16"]
            .iter()
            .map(|n| d.join(n))
            .collect();
        write_order(&d, &planned, "reclaimlab sim stutterp").unwrap();
        let (got, cmd) = records_in_order(&d);
        let names: Vec<String> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["v5.15", "v5.16-rc1", "v5.16", "extra"]);
        assert_eq!(cmd.as_deref(), Some("reclaimlab sim stutterp"));
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn older_records_are_refused_without_force() {
        let d = tmp("force");
        record(&d.join("v5.15"));
        record(&d.join("none"));
        let planned = vec![d.join("v5.15"), d.join("v5.16")];
        let e = format!("{:#}", check_out(&d, &planned, false).unwrap_err());
        assert!(
            e.contains("holds 1 record(s) of an earlier `sim`")
                && e.contains("(none)")
                && e.contains("--force"),
            "{e}"
        );
        check_out(&d, &planned, true).unwrap();
        // Only records this run replaces: a rerun, allowed.
        std::fs::remove_dir_all(d.join("none")).unwrap();
        check_out(&d, &planned, false).unwrap();
        // No folder yet: fine.
        check_out(&d.join("new"), &planned, false).unwrap();
        std::fs::remove_dir_all(&d).ok();
    }
}
