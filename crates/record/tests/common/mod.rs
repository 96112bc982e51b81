//! What the record crate's integration tests share: a fixture's path, a
//! fresh directory per test, and a recursive copy of a directory.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// A file under `tests/fixtures/`.
pub fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

/// A fresh, empty temporary directory, named by the test file
/// (`CARGO_CRATE_NAME` is the test target's name), the process, `name` and
/// the thread (property-test cases of different tests run side by side).
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "reclaimlab-{}-test-{}-{name}-{:?}",
        env!("CARGO_CRATE_NAME"),
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// Copies `src` into `dst`, subdirectories included.
pub fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            fs::copy(e.path(), to).unwrap();
        }
    }
}
