//! `reclaimlab fidelity` through the binary, on the report crate's record
//! fixtures and the committed letter transcription: a record against itself
//! is all within; different workloads end with exit code 2 and a message
//! naming both; a letter column is picked by the record's kernel profile.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fx(name: &str) -> String {
    root()
        .join("crates/report/tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> Output {
    bin().arg("fidelity").args(args).output().expect("runs")
}

#[test]
fn a_record_against_itself_is_all_within() {
    let base = fx("base");
    let o = run(&[&base, &base, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "reclaimlab.fidelity/1");
    assert_eq!(v["total"]["rows"]["within"], v["total"]["rows"]["of"]);
    let o = run(&[&base, &base]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("rows within tolerance (100 %)"), "{text}");
}

#[test]
fn different_workloads_exit_2_naming_both() {
    let o = run(&["--pair", &fx("base"), &fx("other")]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("different workloads") && err.contains("`mapped-file-stream`"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_arguments_exit_2() {
    let base = fx("base");
    for args in [
        vec![base.as_str()],
        vec![base.as_str(), base.as_str(), "--tolerance", "0.5"],
        vec![],
        vec![base.as_str(), "/nonexistent/record"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
    }
}

#[test]
fn a_letter_column_is_picked_by_kernel_profile() {
    // The `base` fixture is a v5.15 stutterp run on the `small` machine: it
    // is scored against the vanilla column, with a machine warning, over the
    // letter's 18 headline rows of that column: 12 compared, and the Max-99
    // of the six steps the fixture did not run (7 to 64) not compared.
    let letter = root().join("docs/fidelity/letters-2021-v2.toml");
    let o = run(&["--letter", letter.to_str().unwrap(), &fx("base"), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pairs"][0]["real"]["name"], "5.15.0-rc1-vanilla");
    assert_eq!(v["pairs"][0]["summary"]["headline"]["of"], 12);
    assert_eq!(v["pairs"][0]["summary"]["headline"]["not_compared"], 6);
    assert!(String::from_utf8_lossy(&o.stderr).contains("different machines"));
    // The `new` fixture is v5.16: the letter has no column for it.
    let o = run(&["--letter", letter.to_str().unwrap(), &fx("new")]);
    assert_eq!(o.status.code(), Some(2));
}
