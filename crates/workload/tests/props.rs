//! Property tests (issue 22): the workload spec and machine parsers never
//! panic on any text, and what they accept is inside the documented
//! bounds (so the simulator's size arithmetic cannot overflow and `sim`'s
//! memory estimate sees every size). Few cases by default
//! (`PROPTEST_CASES` raises them).

use proptest::prelude::*;
use reclaimlab_kernel::machine::{Machine, MAX_MIB};
use reclaimlab_workload::spec::{Spec, MAX_FILES, MAX_PAGES};

const SPEC: &str = include_str!("../../../examples/workloads/mix.toml");
const MACHINE: &str = "name='m'\ncpus=2\nnodes=1\nmemory_mib=1024\nswap_mib=512\n[[devices]]\nname='sda'\nwrite_mb_s=200\nread_mb_s=250\nlatency_us=100\nseek_us=50\nqueue_depth=32\n";

/// Values that break parsers and sizes.
const ODD: &[&str] = &[
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "0",
    "-1",
    "1e308",
    "nan",
    "inf",
    "''",
    "'x'",
    "[]",
    "{}",
    "true",
];

/// `text` with the value of line `line` (a `key = value` line) replaced
/// by an odd value, and a byte perhaps flipped.
fn mutate(text: &str, line: usize, odd: usize, flip: Option<(usize, u8)>) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let k = line % lines.len();
    if let Some(eq) = lines[k].find('=') {
        lines[k] = format!("{}= {}", &lines[k][..eq], ODD[odd % ODD.len()]);
    }
    let mut b = lines.join("\n").into_bytes();
    if let Some((at, byte)) = flip {
        let i = at % b.len();
        b[i] = byte;
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn spec_parser_never_panics_and_bounds_hold(
        line in any::<usize>(), odd in any::<usize>(), flip in proptest::option::of((any::<usize>(), any::<u8>()))
    ) {
        let text = mutate(SPEC, line, odd, flip);
        match Spec::parse(&text, "mix.toml") {
            Ok(s) => {
                for w in &s.workers {
                    prop_assert!(w.count >= 1 && w.count <= 4096);
                    prop_assert!(w.files <= u64::from(MAX_FILES));
                    prop_assert!(w.pages <= MAX_PAGES);
                    prop_assert!(w.size_mib <= MAX_MIB && w.file_mib <= MAX_MIB);
                }
                let _ = s.to_params();
            }
            Err(e) => prop_assert!(e.to_string().contains("mix.toml"), "{}", e),
        }
    }

    #[test]
    fn spec_parser_never_panics_on_any_text(text in any::<String>()) {
        let _ = Spec::parse(&text, "x.toml");
    }

    #[test]
    fn machine_parser_never_panics_and_bounds_hold(
        line in any::<usize>(), odd in any::<usize>(), flip in proptest::option::of((any::<usize>(), any::<u8>()))
    ) {
        let text = mutate(MACHINE, line, odd, flip);
        match Machine::from_toml(&text, "m.toml") {
            Ok(m) => {
                prop_assert!(m.memory_mib <= MAX_MIB && m.swap_mib <= MAX_MIB);
                prop_assert!(m.host_bytes_estimate() < u64::MAX);
            }
            Err(e) => prop_assert!(e.to_string().contains("m.toml"), "{}", e),
        }
    }

    #[test]
    fn machine_parser_never_panics_on_any_text(text in any::<String>()) {
        let _ = Machine::from_toml(&text, "m.toml");
    }
}
