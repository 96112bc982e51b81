//! `reclaimlab sim` stopped by a signal mid-run: it removes the partial
//! directories of the unfinished records (`.NAME.partial-PID`), keeps the
//! finished ones, says so on stderr and exits with status 130. Each case runs
//! a few seconds; the timeouts are generous for a slow 2-core machine.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "reclaimlab-siminterrupt-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A started `reclaimlab`, killed (SIGKILL) if the test ends before it does.
struct Running {
    child: Child,
    stderr: PathBuf,
}

impl Running {
    /// Starts `reclaimlab ARGS` with stderr to `dir/stderr.txt`.
    fn start(dir: &Path, args: &[&str]) -> Running {
        let stderr = dir.join("stderr.txt");
        let child = Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start reclaimlab");
        Running { child, stderr }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends `kill -SIG` to the process.
    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} {}", self.child.id());
    }

    /// Waits up to `secs` for the process to end; fails the test (after a
    /// SIGKILL) if it does not.
    fn wait(&mut self, secs: u64) -> ExitStatus {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!(
            "reclaimlab did not end within {secs} s of the signal; stderr:\n{}",
            self.stderr()
        );
    }

    /// Waits up to `secs` until `ready()`; fails the test if the process ends
    /// first or the time runs out.
    fn wait_for(&mut self, secs: u64, what: &str, mut ready: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(secs);
        while !ready() {
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!(
                    "reclaimlab ended ({s}) before {what}; stderr:\n{}",
                    self.stderr()
                );
            }
            assert!(
                Instant::now() < end,
                "no {what} within {secs} s; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `sim stutterp` on `small` under v5.15 with `extra` arguments, into `out`.
fn small_v515<'a>(extra: &[&'a str], out: &'a str) -> Vec<&'a str> {
    let mut a = vec!["sim", "stutterp", "--machine", "small", "--kernel", "v5.15"];
    a.extend_from_slice(extra);
    a.extend_from_slice(&["--out", out]);
    a
}

/// The names of the entries of `dir` that are partial records.
fn partials(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-"))
        .collect()
}

#[test]
fn sigint_mid_run_removes_the_partial_record() {
    let dir = scratch("sigint");
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    // 3 steps of 600 s after their warmups: about half a minute of wall time
    // on a fast machine, so the run is still in its first step when signalled.
    let mut run = Running::start(
        &dir,
        &small_v515(&["--set", "stutterp.duration_s=600"], out_s),
    );
    run.wait_for(60, "partial record directory", || {
        !partials(&out).is_empty()
    });
    std::thread::sleep(Duration::from_millis(1500));
    run.signal("INT");
    let status = run.wait(60);
    let err = run.stderr();
    assert_eq!(status.code(), Some(130), "exit status; stderr:\n{err}");
    assert!(err.contains("interrupted"), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "stderr:\n{err}");
    assert_eq!(partials(&out), Vec::<String>::new(), "left in {out_s}");
    assert!(
        !out.join("v5.15").exists(),
        "an unfinished record appeared under its final name"
    );
    assert!(!out.join("report.html").exists(), "a report was written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_keeps_the_finished_records() {
    let dir = scratch("sigterm");
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    // A short run (about 1 s of wall time) and a long one: the short one
    // finishes (in parallel, or first on one core), the long one is cut short.
    // The wait is a guard against a hang, not a speed check: on a 2-core
    // machine loaded to 10 the short run took close to two minutes.
    let mut run = Running::start(
        &dir,
        &small_v515(&["--sweep", "stutterp.duration_s=1,600"], out_s),
    );
    let short = out.join("v5.15,stutterp.duration_s=1");
    let long_partial = format!(".v5.15,stutterp.duration_s=600.partial-{}", run.child.id());
    run.wait_for(400, "finished short record and partial long one", || {
        short.join("run.json").is_file() && out.join(&long_partial).is_dir()
    });
    std::thread::sleep(Duration::from_millis(500));
    run.signal("TERM");
    let status = run.wait(60);
    let err = run.stderr();
    assert_eq!(status.code(), Some(130), "exit status; stderr:\n{err}");
    assert!(
        err.contains("interrupted")
            && err.contains("finished records kept: v5.15,stutterp.duration_s=1"),
        "stderr:\n{err}"
    );
    assert_eq!(partials(&out), Vec::<String>::new(), "left in {out_s}");
    assert!(
        short.join("run.json").is_file(),
        "the finished record is gone"
    );
    assert!(
        !out.join("v5.15,stutterp.duration_s=600").exists(),
        "an unfinished record appeared under its final name"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
