//! The workload spec and machine TOML parsers: any text, no panic; what
//! they accept stays inside the documented bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(s) = reclaimlab_workload::spec::Spec::parse(text, "f.toml") {
        for w in &s.workers {
            assert!(w.files <= u64::from(reclaimlab_workload::spec::MAX_FILES));
            assert!(w.pages <= reclaimlab_workload::spec::MAX_PAGES);
        }
        let _ = s.to_params();
    }
    if let Ok(m) = reclaimlab_kernel::machine::Machine::from_toml(text, "f.toml") {
        assert!(m.swap_mib <= reclaimlab_kernel::machine::MAX_MIB);
        let _ = m.host_bytes_estimate();
    }
});
