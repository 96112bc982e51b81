//! The benchmarks' command lines: flags and their values with the errors
//! that name them, `main`'s exit codes, and helpers for the argument tests.

use std::fmt::Debug;
use std::path::Path;

use crate::sys;

/// Walks a command line (without the program name) flag by flag; the
/// values' errors name the flag, the value and the usage.
pub struct Flags<'a> {
    it: std::slice::Iter<'a, String>,
    usage: &'a str,
    flag: &'a str,
}

impl<'a> Flags<'a> {
    pub fn new(args: &'a [String], usage: &'a str) -> Flags<'a> {
        Flags {
            it: args.iter(),
            usage,
            flag: "",
        }
    }

    /// The next flag, or `None` at the end.
    pub fn next_flag(&mut self) -> Option<&'a str> {
        self.flag = self.it.next()?.as_str();
        Some(self.flag)
    }

    /// The current flag's value (the next argument).
    pub fn value(&mut self) -> Result<String, String> {
        self.it
            .next()
            .cloned()
            .ok_or_else(|| format!("`{}` needs a value; {}", self.flag, self.usage))
    }

    /// The current flag's value as a whole number; `what` names it.
    pub fn num(&mut self, what: &str) -> Result<u64, String> {
        let v = self.value()?;
        v.parse::<u64>().map_err(|_| {
            format!(
                "`{} {v}`: {what} must be a whole number; {}",
                self.flag, self.usage
            )
        })
    }

    /// The current flag's value as seconds in (0, 600].
    pub fn secs(&mut self) -> Result<f64, String> {
        let v = self.value()?;
        match v.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s <= 600.0 => Ok(s),
            _ => Err(format!(
                "`{} {v}`: seconds must be a number in (0, 600]; {}",
                self.flag, self.usage
            )),
        }
    }

    /// The error for a flag no option took: the usage for `-h`/`--help`,
    /// else "unknown argument".
    pub fn unknown(&self) -> String {
        match self.flag {
            "-h" | "--help" => self.usage.to_string(),
            other => format!("unknown argument `{other}`; {}", self.usage),
        }
    }
}

/// A benchmark's `main`: parses the arguments and runs the early
/// refusals (both exit 2 with the message), then the measurement (exit
/// 130 when it returns "interrupted", 1 on other errors). Messages go to
/// stderr after `name: `.
pub fn run_main<A>(
    name: &str,
    parse: impl FnOnce(&[String]) -> Result<A, String>,
    refuse: impl FnOnce(&A) -> Result<(), String>,
    run: impl FnOnce(&A) -> Result<(), String>,
) {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv).and_then(|a| refuse(&a).map(|()| a)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("{name}: {e}");
        std::process::exit(if e == "interrupted" { 130 } else { 1 });
    }
}

/// The refusal when not root; `what` names what needs it.
pub fn need_root(what: &str) -> Result<(), String> {
    if sys::is_root() {
        Ok(())
    } else {
        Err(format!("needs root ({what}); run it with sudo"))
    }
}

/// The refusal of a `--dir` that is no directory or is on a memory
/// filesystem, whose pages are not clean page cache.
pub fn need_disk_dir(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!(
            "--dir {} is not a directory; pass --dir with a directory on a disk filesystem (not tmpfs)",
            dir.display()
        ));
    }
    let fstype = sys::mount_of(&sys::mounts(), dir)
        .map(|m| m.fstype.clone())
        .unwrap_or_default();
    if ["tmpfs", "ramfs", "devtmpfs"].contains(&fstype.as_str()) {
        return Err(format!(
            "--dir {} is on {fstype}, whose pages are not clean page cache (shmem is swap-backed); pass --dir on a disk filesystem such as /var/tmp",
            dir.display()
        ));
    }
    Ok(())
}

/// `v` as owned strings (a command line for the tests).
pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// For the argument tests: what `parse` makes of `argv` (panics, naming
/// the error, if it refuses).
#[track_caller]
pub fn parsed<A>(parse: impl Fn(&[String]) -> Result<A, String>, argv: &[&str]) -> A {
    parse(&strings(argv)).unwrap_or_else(|e| panic!("{argv:?} refused: {e}"))
}

/// For the argument tests: asserts that `parse` refuses `argv` with an
/// error containing `part`.
#[track_caller]
pub fn assert_refused<A: Debug>(
    parse: impl Fn(&[String]) -> Result<A, String>,
    argv: &[&str],
    part: &str,
) {
    match parse(&strings(argv)) {
        Ok(a) => panic!("{argv:?} accepted: {a:?}"),
        Err(e) => assert!(e.contains(part), "{argv:?}: `{e}` lacks `{part}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USAGE: &str = "usage: t [--n N] [--secs S]";

    fn parse(args: &[String]) -> Result<(u64, f64), String> {
        let (mut n, mut s) = (1, 1.0);
        let mut f = Flags::new(args, USAGE);
        while let Some(flag) = f.next_flag() {
            match flag {
                "--n" => n = f.num("the count")?,
                "--secs" => s = f.secs()?,
                _ => return Err(f.unknown()),
            }
        }
        Ok((n, s))
    }

    #[test]
    fn a_missing_dir_is_refused() {
        let e = need_disk_dir(Path::new("/nonexistent/reclaimlab")).unwrap_err();
        assert!(
            e.contains("/nonexistent/reclaimlab is not a directory"),
            "{e}"
        );
    }

    #[test]
    fn flags_values_and_their_errors() {
        assert_eq!(
            parse(&strings(&["--n", "4", "--secs", "2.5"])),
            Ok((4, 2.5))
        );
        assert_eq!(
            parse(&strings(&["--n", "x"])).unwrap_err(),
            format!("`--n x`: the count must be a whole number; {USAGE}")
        );
        assert_eq!(
            parse(&strings(&["--secs"])).unwrap_err(),
            format!("`--secs` needs a value; {USAGE}")
        );
        assert_refused(parse, &["--secs", "0"], "(0, 600]");
        assert_refused(parse, &["--secs", "inf"], "(0, 600]");
        assert_eq!(parse(&strings(&["--help"])).unwrap_err(), USAGE);
        assert_eq!(
            parse(&strings(&["--bogus"])).unwrap_err(),
            format!("unknown argument `--bogus`; {USAGE}")
        );
    }
}
