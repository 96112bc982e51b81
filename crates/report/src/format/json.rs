//! `report --json`: the `reclaimlab.report/1` schema (docs/report-json.md).
//!
//! The `Report` struct's serde names are the schema; this module only fixes
//! the byte form: pretty-printed, keys in struct order or sorted (maps are
//! BTreeMaps or step-ordered), floats by serde_json's shortest round-trip
//! formatting, non-finite floats as `null`, a final newline.

use crate::model::Report;

/// Serialises the report as JSON bytes.
pub fn render_json(report: &Report) -> Vec<u8> {
    // Serialising plain structs, maps of strings and numbers cannot fail.
    let mut v = serde_json::to_vec_pretty(report).unwrap_or_else(|e| {
        format!("{{\"schema\":\"reclaimlab.report/1\",\"error\":\"{e}\"}}").into_bytes()
    });
    v.push(b'\n');
    v
}
