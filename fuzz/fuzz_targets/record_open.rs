//! A record whose run.json, vmstat.csv and latency.csv are the fuzzer's
//! bytes (split at 0xff bytes): opened and reported, or refused — never a
//! panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0xff);
    let run = parts.next().unwrap_or_default();
    let vm = parts.next().unwrap_or(b"t_s,step\n");
    let lat = parts.next().unwrap_or(b"step,metric,t_s,value_us\n");
    let dir = std::env::temp_dir().join(format!("reclaimlab-fuzz-rec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("run.json"), run).unwrap();
    std::fs::write(dir.join("vmstat.csv"), vm).unwrap();
    std::fs::write(dir.join("latency.csv"), lat).unwrap();
    if let Ok(run) = reclaimlab_report::load_run(&dir) {
        let r = reclaimlab_report::build_report(&[run.clone(), run], Default::default());
        let _ = reclaimlab_report::render_text(&r);
        let _ = reclaimlab_report::render_json(&r);
        let _ = reclaimlab_report::render_html(&r);
    }
    let _ = std::fs::remove_dir_all(&dir);
});
