//! `import trace` of any bytes (plain or gzip), then `report` of the
//! record: an error or a record, never a panic; the record reads back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("reclaimlab-fuzz-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("t.txt");
    std::fs::write(&src, data).unwrap();
    let rec = dir.join("rec");
    if reclaimlab_record::import_trace(&src, &rec).is_ok() {
        let run = reclaimlab_report::load_run(&rec).expect("an imported record loads");
        let r = reclaimlab_report::build_report(&[run], Default::default());
        let _ = reclaimlab_report::render_text(&r);
    }
    let _ = std::fs::remove_dir_all(&dir);
});
