//! Property tests (issue 22): the trace line parser, the line reader, the
//! trace and mmtests importers and the record reader never panic, whatever
//! the bytes — random, or real lines from the fixtures mutated (bytes
//! flipped, inserted, cut, fields swapped for huge or odd values). Cases are
//! few (`PROPTEST_CASES` raises them) so the suite stays within seconds;
//! `fuzz/` runs the same targets for as long as one likes.

use std::fs;

use proptest::prelude::*;
use reclaimlab_record::lines::{LineReader, MAX_LINE};
use reclaimlab_record::*;

mod common;
use common::*;

/// Real trace lines (tracefs and `trace-cmd report` captures).
fn real_lines() -> Vec<String> {
    let mut v = Vec::new();
    for f in ["trace/kernel-trace.txt", "trace/trace-cmd-report.txt"] {
        let t = fs::read_to_string(fixture(f)).unwrap();
        v.extend(t.lines().map(str::to_string));
    }
    v
}

/// Values that break parsers: huge, negative, empty, non-ASCII, separators.
const ODD: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "",
    "=",
    ":",
    "9999999999999999999999.999999999",
    "\u{fffd}",
    "é",
    " ",
    "0x10",
    "nan",
    "inf",
];

/// A mutation of `s`: bytes replaced, inserted, removed, or a token swapped
/// for an odd value.
fn mutate(s: &str, ops: &[(u8, usize, u8)]) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    for &(op, at, byte) in ops {
        let i = if b.is_empty() { 0 } else { at % (b.len() + 1) };
        match op % 4 {
            0 if i < b.len() => b[i] = byte,
            1 => b.insert(i, byte),
            2 if i < b.len() => {
                b.remove(i);
            }
            _ => {
                // Swap the token at i for an odd value.
                let start = b[..i]
                    .iter()
                    .rposition(|&c| c == b' ' || c == b'=')
                    .map_or(0, |p| p + 1);
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b' ')
                    .map_or(b.len(), |p| i + p);
                let odd = ODD[byte as usize % ODD.len()].as_bytes();
                b.splice(start..end.max(start), odd.iter().copied());
            }
        }
    }
    b
}

fn ops() -> impl Strategy<Value = Vec<(u8, usize, u8)>> {
    prop::collection::vec((any::<u8>(), any::<usize>(), any::<u8>()), 1..8)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Any string: a line, a skip, or a parse error — never a panic; a
    /// parsed line's parts are slices of it.
    #[test]
    fn trace_line_parser_never_panics(s in any::<String>()) {
        if let Ok(l) = parse_trace_line(&s) {
            prop_assert!(s.contains(l.event()));
            let _ = (l.comm(), l.pid(), l.timestamp_ns(), l.usec_delayed(), l.field("reason"));
        }
    }

    /// Real lines mutated: never a panic; the fields read back are those
    /// the text holds.
    #[test]
    fn mutated_real_lines_never_panic(i in any::<usize>(), ops in ops()) {
        let lines = real_lines();
        let b = mutate(&lines[i % lines.len()], &ops);
        let s = String::from_utf8_lossy(&b);
        if let Ok(l) = parse_trace_line(&s) {
            if let Some(v) = l.field("usec_timeout") {
                prop_assert!(s.contains(v));
            }
        }
    }

    /// The line reader gives back exactly the input's lines (`split('\n')`),
    /// for any bytes and any line lengths under the limit.
    #[test]
    fn line_reader_matches_split(data in prop::collection::vec(any::<u8>(), 0..4096), long in 0usize..3) {
        let mut data = data;
        // Sometimes a line near the 256 KiB buffer edge.
        if long > 0 {
            data.extend(std::iter::repeat_n(b'a', 256 * 1024 * long - 3));
        }
        let mut want: Vec<&[u8]> = data.split(|&c| c == b'\n').collect();
        if want.last().is_some_and(|l| l.is_empty()) {
            want.pop();
        }
        let mut r = LineReader::new(&data[..]);
        let mut got = Vec::new();
        while let Some(l) = r.next_line() {
            got.push(l.unwrap().to_vec());
        }
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(&g[..], *w);
            prop_assert!(g.len() <= MAX_LINE);
        }
    }

    /// A trace file of mutated real lines: imported or refused with an
    /// error naming the file; an imported record reads back, its trace
    /// line count what the import said.
    #[test]
    fn trace_importer_never_panics(picks in prop::collection::vec((any::<usize>(), ops()), 1..20)) {
        let lines = real_lines();
        let d = tmp("imp");
        let src = d.join("t.txt");
        let mut text = Vec::new();
        for (i, ops) in &picks {
            text.extend(mutate(&lines[i % lines.len()], ops));
            text.push(b'\n');
        }
        fs::write(&src, &text).unwrap();
        match import_trace(&src, &d.join("rec")) {
            Ok(s) => {
                let r = Record::open(&d.join("rec")).unwrap();
                let mut t = r.trace_lines().unwrap().unwrap();
                let mut n = 0;
                while let Some(l) = t.next_line() {
                    l.unwrap();
                    n += 1;
                }
                prop_assert_eq!(n, s.trace_lines);
            }
            Err(e) => prop_assert!(e.to_string().contains("t.txt"), "{}", e),
        }
        fs::remove_dir_all(&d).ok();
    }

    /// mmtests logs and sysstate with mutated lines: imported or refused
    /// naming a file — never a panic, never more than the sample limit.
    #[test]
    fn mmtests_importer_never_panics(log_ops in ops(), state_line in any::<usize>(), state_ops in ops()) {
        let d = tmp("mm");
        let src = d.join("src");
        copy_dir(&fixture("mmtests-2021/work/log/vanilla/iter-0"), &src);
        let log = src.join("stutterp/logs/mmap-latency-4.log");
        let t = fs::read_to_string(&log).unwrap();
        fs::write(&log, mutate(&t, &log_ops)).unwrap();
        let st = src.join("tests-sysstate");
        let t = fs::read_to_string(&st).unwrap();
        let mut lines: Vec<Vec<u8>> = t.lines().map(|l| l.as_bytes().to_vec()).collect();
        let k = state_line % lines.len();
        lines[k] = mutate(&String::from_utf8_lossy(&lines[k]), &state_ops);
        fs::write(&st, lines.join(&b'\n')).unwrap();
        match import_mmtests(&src, &d.join("rec")) {
            Ok(s) => {
                prop_assert!(s.latency_samples <= MAX_LATENCY_SAMPLES);
                Record::open(&d.join("rec")).unwrap();
            }
            Err(e) => prop_assert!(e.to_string().contains(&*d.to_string_lossy()), "{}", e),
        }
        fs::remove_dir_all(&d).ok();
    }

    /// A valid record with run.json, vmstat.csv or latency.csv mutated:
    /// opened or refused naming the file — never a panic.
    #[test]
    fn record_reader_never_panics(which in 0usize..3, ops in ops()) {
        let d = tmp("rd");
        let rec = d.join("rec");
        import_trace(&fixture("trace/kernel-trace.txt"), &rec).unwrap();
        let f = ["run.json", "vmstat.csv", "latency.csv"][which];
        let t = fs::read_to_string(rec.join(f)).unwrap_or_default();
        fs::write(rec.join(f), mutate(&t, &ops)).unwrap();
        if let Err(e) = Record::open(&rec) {
            prop_assert!(e.to_string().contains(f), "{}", e);
        }
        fs::remove_dir_all(&d).ok();
    }
}
