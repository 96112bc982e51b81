//! Memory cgroups in a workload spec: `[[cgroup]]` entries and the
//! `cgroup = "NAME"` of a `[[worker]]`.
//!
//! ```toml
//! [[cgroup]]
//! name = "congester"
//! memory_max = "512M"        # cgroup v2 memory.max ("max": no limit)
//! memory_high = "480M"       # optional: memory.high, memory.low, memory.min
//!
//! [[cgroup]]
//! name = "victim"
//! limit_in_bytes = "128M"    # cgroup v1 memory.limit_in_bytes instead
//! ```
//!
//! A spec uses the keys of one cgroup version: v2's `memory_*` or v1's
//! `limit_in_bytes` (which sets `memcg.version=1` for the run). Sizes are
//! bytes, or a number with K, M, G or T (binary), or `max`.

use reclaimlab_kernel::mm::memcontrol::{MemcgSpec, PAGE_COUNTER_MAX};
use serde::Deserialize;

/// A size as written: a number of bytes or a string such as `512M`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SizeValue {
    /// Bytes.
    Bytes(u64),
    /// `512M`, `1G`, `max`.
    Text(String),
}

impl SizeValue {
    /// Bytes, `u64::MAX` for `max`, or why not.
    pub fn bytes(&self) -> Result<u64, String> {
        let t = match self {
            SizeValue::Bytes(b) => return Ok(*b),
            SizeValue::Text(t) => t.trim(),
        };
        if t == "max" {
            return Ok(u64::MAX);
        }
        let not_a_size = || format!("`{t}` is not a size (e.g. 512M, 1G, 1073741824 or max)");
        let (num, unit) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], Some(c)),
            _ => (t, None),
        };
        let n: u64 = num.trim().parse().map_err(|_| not_a_size())?;
        let mult: u64 = match unit.map(|c| c.to_ascii_uppercase()) {
            None => 1,
            Some('K') => 1 << 10,
            Some('M') => 1 << 20,
            Some('G') => 1 << 30,
            Some('T') => 1 << 40,
            Some(c) => return Err(format!("`{t}`: unknown unit `{c}` (accepted: K, M, G, T)")),
        };
        n.checked_mul(mult).ok_or_else(not_a_size)
    }
}

/// One `[[cgroup]]` entry.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupSpec {
    /// Name, unique in the spec.
    pub name: String,
    /// Parent cgroup (defined earlier); the root if absent.
    #[serde(default)]
    pub parent: Option<String>,
    /// v2 `memory.max`.
    #[serde(default)]
    pub memory_max: Option<SizeValue>,
    /// v2 `memory.high`.
    #[serde(default)]
    pub memory_high: Option<SizeValue>,
    /// v2 `memory.low`.
    #[serde(default)]
    pub memory_low: Option<SizeValue>,
    /// v2 `memory.min`.
    #[serde(default)]
    pub memory_min: Option<SizeValue>,
    /// v1 `memory.limit_in_bytes`.
    #[serde(default)]
    pub limit_in_bytes: Option<SizeValue>,
}

impl CgroupSpec {
    /// Uses v1's key.
    pub fn is_v1(&self) -> bool {
        self.limit_in_bytes.is_some()
    }
    /// Uses any of v2's keys.
    pub fn is_v2(&self) -> bool {
        self.memory_max.is_some()
            || self.memory_high.is_some()
            || self.memory_low.is_some()
            || self.memory_min.is_some()
    }
}

/// Checks a spec's cgroups and turns them into the kernel's, sizes in
/// pages; `Err` says which entry and field is wrong and what is accepted.
/// `machine_mib` bounds every limit.
pub fn memcg_specs(cgroups: &[CgroupSpec], machine_mib: u64) -> Result<Vec<MemcgSpec>, String> {
    let v1 = cgroups.iter().any(CgroupSpec::is_v1);
    let v2 = cgroups.iter().any(CgroupSpec::is_v2);
    if v1 && v2 {
        return Err("cgroups mix v1's `limit_in_bytes` with v2's `memory_*` keys: a machine has one hierarchy; use one version's keys".into());
    }
    let mut out: Vec<MemcgSpec> = Vec::new();
    for (i, c) in cgroups.iter().enumerate() {
        let at = format!("cgroup #{} (`{}`)", i + 1, c.name);
        if c.name.is_empty()
            || c.name.len() > 64
            || !c
                .name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
        {
            return Err(format!(
                "{at}: name must be 1-64 characters of letters, digits, `-`, `_` or `.`"
            ));
        }
        if out.iter().any(|m| m.name == c.name) {
            return Err(format!(
                "{at}: defined twice; give each [[cgroup]] a distinct name"
            ));
        }
        if let Some(p) = &c.parent {
            if !out.iter().any(|m| &m.name == p) {
                return Err(format!(
                    "{at}: parent `{p}` is not a cgroup defined before it (parents come first, which also rules out cycles)"
                ));
            }
        }
        let mut m = MemcgSpec::new(&c.name);
        m.parent = c.parent.clone();
        let limit = |field: &str, v: &Option<SizeValue>, dflt: u64| -> Result<u64, String> {
            let Some(v) = v else {
                return Ok(dflt);
            };
            let b = v.bytes().map_err(|e| format!("{at}: {field} = {e}"))?;
            if b == u64::MAX {
                return Ok(PAGE_COUNTER_MAX);
            }
            if b > machine_mib << 20 {
                return Err(format!(
                    "{at}: {field} = {} MiB is more than the machine's {machine_mib} MiB (use `max` for no limit)",
                    b >> 20
                ));
            }
            Ok(b >> 12)
        };
        m.max = limit("memory_max", &c.memory_max, PAGE_COUNTER_MAX)?;
        if c.is_v1() {
            m.max = limit("limit_in_bytes", &c.limit_in_bytes, PAGE_COUNTER_MAX)?;
        }
        m.high = limit("memory_high", &c.memory_high, PAGE_COUNTER_MAX)?;
        m.low = limit("memory_low", &c.memory_low, 0)?;
        m.min = limit("memory_min", &c.memory_min, 0)?;
        if m.max < 256 {
            return Err(format!(
                "{at}: a limit of {} KiB is below the 1 MiB a cgroup needs to make progress",
                m.max * 4
            ));
        }
        out.push(m);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg(name: &str, parent: Option<&str>, max: &str) -> CgroupSpec {
        CgroupSpec {
            name: name.into(),
            parent: parent.map(String::from),
            memory_max: Some(SizeValue::Text(max.into())),
            memory_high: None,
            memory_low: None,
            memory_min: None,
            limit_in_bytes: None,
        }
    }

    #[test]
    fn sizes_parse() {
        let t = |s: &str| SizeValue::Text(s.into()).bytes();
        assert_eq!(t("512M"), Ok(512 << 20));
        assert_eq!(t("1g"), Ok(1 << 30));
        assert_eq!(t("max"), Ok(u64::MAX));
        assert_eq!(SizeValue::Bytes(4096).bytes(), Ok(4096));
        assert!(t("12Q").unwrap_err().contains("unknown unit"));
        assert!(t("lots").unwrap_err().contains("not a size"));
        assert!(t("99999999999T").unwrap_err().contains("not a size"));
    }

    #[test]
    fn the_tree_is_checked() {
        let ok = memcg_specs(&[cg("a", None, "64M"), cg("b", Some("a"), "32M")], 1024).unwrap();
        assert_eq!(ok[1].max, 32 * 256);
        assert_eq!(ok[1].parent.as_deref(), Some("a"));
        let e = memcg_specs(&[cg("b", Some("a"), "32M"), cg("a", None, "64M")], 1024).unwrap_err();
        assert!(
            e.contains("parent `a` is not a cgroup defined before it"),
            "{e}"
        );
        let e = memcg_specs(&[cg("a", None, "2G")], 1024).unwrap_err();
        assert!(e.contains("more than the machine's 1024 MiB"), "{e}");
        let e = memcg_specs(&[cg("a", None, "1M"), cg("a", None, "1M")], 1024).unwrap_err();
        assert!(e.contains("defined twice"), "{e}");
        let mut v1 = cg("c", None, "1M");
        v1.limit_in_bytes = Some(SizeValue::Text("64M".into()));
        let e = memcg_specs(&[cg("a", None, "64M"), v1], 1024).unwrap_err();
        assert!(e.contains("mix v1"), "{e}");
    }
}
