//! The fidelity suites committed under docs/fidelity/ parse, and every real
//! record they name opens (the simulated side is made by
//! docs/fidelity/run-suites.sh, not committed).

use std::path::Path;

use reclaimlab_report::fidelity::suite::load_suite;
use reclaimlab_report::load_run;

#[test]
fn committed_suites_name_real_records_that_open() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fidelity");
    let mut pairs = 0;
    for name in ["suite-tuning.toml", "suite-held-out.toml"] {
        let suite = load_suite(&dir.join(name)).unwrap();
        for (_, real) in &suite.pairs {
            let run = load_run(real).unwrap_or_else(|e| panic!("{name}: {}: {e}", real.display()));
            assert!(
                !run.latency.is_empty(),
                "{}: no latency samples",
                real.display()
            );
            pairs += 1;
        }
    }
    assert_eq!(
        pairs, 56,
        "tuning: three runs of the host's stutterp, three 6.1 guest runs, the host's mapped-file-stream and \
         four runs of its dirty-pressure, two of memcg-congestion and its victim alone, two of fsmark-mlock-1g; held out: two guests' stutterp with THPs on and off, their \
         mapped-file-stream and dirty-pressure, three runs of each (six of mapped-file-stream, six or seven of \
         dirty-pressure)"
    );
}
