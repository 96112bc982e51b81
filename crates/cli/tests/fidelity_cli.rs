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

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reclaimlab-fidcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_reclaimcongest_v2_record_is_scored_against_the_series_column() {
    // The `base` fixture relabelled as a run of the v2 series' profile: it
    // pairs with the letter's series column (the series as measured, not
    // as merged), and both sides are of the throttle generation.
    let d = scratch("v2");
    let rec = d.join("reclaimcongest-v2");
    std::fs::create_dir_all(&rec).unwrap();
    for f in ["latency.csv", "trace.txt.gz", "vmstat.csv"] {
        std::fs::copy(PathBuf::from(fx("base")).join(f), rec.join(f)).unwrap();
    }
    let run = std::fs::read_to_string(PathBuf::from(fx("base")).join("run.json")).unwrap();
    assert!(run.contains("\"kernel\": \"v5.15\""));
    std::fs::write(
        rec.join("run.json"),
        run.replace("\"kernel\": \"v5.15\"", "\"kernel\": \"reclaimcongest-v2\""),
    )
    .unwrap();
    let letter = root().join("docs/fidelity/letters-2021-v2.toml");
    let o = run_fid(&[letter.to_str().unwrap(), rec.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["pairs"][0]["real"]["name"],
        "5.15.0-rc1-mm-reclaimcongest-v2r5"
    );
    assert_eq!(v["pairs"][0]["sim"]["generation"], "throttle");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("generation"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

fn run_fid(letter_and_records: &[&str]) -> Output {
    let (letter, records) = letter_and_records.split_first().unwrap();
    let mut args = vec!["--letter", letter, "--json"];
    args.extend(records);
    run(&args)
}

#[test]
fn a_letter_column_naming_no_profile_exits_2_naming_it() {
    let d = scratch("badprofile");
    let good = std::fs::read_to_string(root().join("docs/fidelity/letters-2021-v2.toml")).unwrap();
    let bad = good.replace(
        "kernel_profile = \"reclaimcongest-v2\"",
        "kernel_profile = \"reclaimcongest-v3\"",
    );
    assert_ne!(good, bad);
    let file = d.join("letter.toml");
    std::fs::write(&file, bad).unwrap();
    let o = run_fid(&[file.to_str().unwrap(), &fx("base")]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    for want in [
        file.to_str().unwrap(),
        "run `5.15.0-rc1-mm-reclaimcongest-v2r5`",
        "kernel_profile = \"reclaimcongest-v3\"",
        "not a kernel profile",
        "did you mean `reclaimcongest-v2`",
        "v5.16-rc1",
    ] {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}
