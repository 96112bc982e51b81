//! `import mmtests` of a results directory whose mmap-latency log and
//! tests-sysstate are the fuzzer's bytes (split at the first 0xff byte).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (log, state) = match data.iter().position(|&b| b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let dir = std::env::temp_dir().join(format!("reclaimlab-fuzz-mm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let logs = dir.join("src/stutterp/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("mmap-latency-4.log"), log).unwrap();
    std::fs::write(dir.join("src/tests-sysstate"), state).unwrap();
    let rec = dir.join("rec");
    if let Ok(s) = reclaimlab_record::import_mmtests(&dir.join("src"), &rec) {
        assert!(s.latency_samples <= reclaimlab_record::MAX_LATENCY_SAMPLES);
        reclaimlab_record::Record::open(&rec).expect("an imported record opens");
    }
    let _ = std::fs::remove_dir_all(&dir);
});
