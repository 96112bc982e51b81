//! The ftrace text line parser, and the report's stall and monitor
//! aggregators that read its fields: any bytes, no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use reclaimlab_report::monitor::MonitorAggregator;
use reclaimlab_report::stalls::StallAggregator;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut agg = StallAggregator::new();
    let mut mon = MonitorAggregator::new();
    for line in text.lines() {
        if let Ok(l) = reclaimlab_record::parse_trace_line(line) {
            let field = |n: &str| l.field(n);
            if agg.observe_fields(l.event(), l.comm(), field).is_ok() {
                let _ = mon.observe_fields(l.event(), l.comm(), l.pid(), l.timestamp_ns(), field);
            }
        }
    }
    let _ = agg.finish();
    let _ = mon.finish();
});
