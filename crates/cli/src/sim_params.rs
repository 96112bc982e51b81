//! `--set` and `--sweep` for `reclaimlab sim`: parameter names and values
//! (kernel parameters, the profile's `policy.*` call sites and `stutterp.*`),
//! the sweep grid, and the labels and directory names of its runs.
//! Everything here runs before any simulation.

use anyhow::{anyhow, bail};
use reclaimlab_kernel::params::{closest, Params};
use reclaimlab_kernel::profile::{KernelProfile, POLICY_NAMES};
use reclaimlab_workload::spec::{is_worker_key, Spec};
use reclaimlab_workload::stutterp::StutterpParams;

/// The random seed as a parameter (`--seed` sets it too), so that
/// `--sweep seed=1,2,3` repeats a run with other seeds: mmtests' iterations,
/// and the check that two seeds of one kernel rarely differ significantly.
pub(crate) const SEED: &str = "seed";

/// Every name `--set` and `--sweep` accept: kernel parameters, the
/// profile's `policy.*` settings, then stutterp's, then the seed.
pub(crate) fn param_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Params::NAMES.to_vec();
    names.extend(POLICY_NAMES);
    names.extend(StutterpParams::list().iter().map(|x| x.0));
    names.push(SEED);
    names
}

pub(crate) fn is_param(name: &str) -> bool {
    Params::NAMES.contains(&name)
        || POLICY_NAMES.contains(&name)
        || StutterpParams::is_param(name)
        || name == SEED
        || is_worker_key(name)
}

/// What one run's `--set` and `--sweep` values go into: the kernel's
/// parameters, its profile (the `policy.*` settings), stutterp's, and the
/// seed.
pub(crate) struct Settings<'a> {
    pub(crate) params: &'a mut Params,
    pub(crate) policy: &'a mut KernelProfile,
    pub(crate) sp: &'a mut StutterpParams,
    pub(crate) seed: &'a mut u64,
    /// The workload spec whose `KIND.KEY` worker keys may be set
    /// (`mlock.size_mib`); `None` for stutterp.
    pub(crate) spec: Option<&'a mut Spec>,
}

/// The error for an unknown parameter `name` in `flag arg`, with the closest name.
pub(crate) fn unknown_param(flag: &str, arg: &str, name: &str) -> anyhow::Error {
    let hint = closest(name, &param_names())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    anyhow!(
        "{flag} {arg}: unknown parameter `{name}`{hint}; `reclaimlab list params` shows them all"
    )
}

/// Sets a known parameter: `stutterp.*` in `sp`, `policy.*` in the
/// profile, the rest in the kernel's parameters. The error says what is
/// accepted.
pub(crate) fn set_param(name: &str, value: &str, to: &mut Settings) -> Result<(), String> {
    if name == SEED {
        *to.seed = value.parse().map_err(|_| {
            format!("seed `{value}`: expected a whole number 0..=18446744073709551615")
        })?;
        Ok(())
    } else if is_worker_key(name) {
        match to.spec.as_deref_mut() {
            Some(spec) => spec.set_worker_key(name, value).map(|_| ()),
            None => Err(format!(
                "`{name}` is a key of a workload spec's [[worker]] entries, and stutterp is not a spec (its parameters are stutterp.*)"
            )),
        }
    } else if name.starts_with("stutterp.") {
        to.sp.set(name, value).map_err(|e| e.to_string())
    } else if POLICY_NAMES.contains(&name) {
        to.policy.set(name, value).map_err(|e| e.to_string())
    } else {
        to.params.set(name, value).map_err(|e| e.to_string())
    }
}

/// The value of `name` as the run record stores it.
fn recorded_value(name: &str, of: &Settings) -> String {
    if name == SEED {
        of.seed.to_string()
    } else if is_worker_key(name) {
        of.spec
            .as_deref()
            .and_then(|s| s.worker_key_value(name))
            .unwrap_or_default()
    } else if name.starts_with("stutterp.") {
        of.sp.get(name).unwrap_or_default()
    } else if POLICY_NAMES.contains(&name) {
        of.policy.policy_value(name).unwrap_or_default().to_string()
    } else {
        of.params
            .to_pairs()
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }
}

/// Applies every `--set NAME=VALUE`.
pub(crate) fn apply_sets(sets: &[String], to: &mut Settings) -> anyhow::Result<()> {
    for s in sets {
        let Some((k, v)) = s.split_once('=') else {
            bail!("--set {s}: expected NAME=VALUE, e.g. --set vm.dirty_ratio=30");
        };
        let (k, v) = (k.trim(), v.trim());
        if !is_param(k) {
            return Err(unknown_param("--set", s, k));
        }
        set_param(k, v, to).map_err(|e| anyhow!("--set {s}: {e}"))?;
    }
    Ok(())
}

/// One `--sweep NAME=V1,V2,...`: the parameter and its values, each in the
/// form the run record stores (`4e3` becomes `4000`).
#[derive(Debug, PartialEq)]
pub(crate) struct Sweep {
    pub(crate) name: String,
    pub(crate) values: Vec<String>,
}

/// Parses and checks every `--sweep` against every profile, before anything runs.
pub(crate) fn parse_sweeps(
    sweeps: &[String],
    sets: &[String],
    profiles: &[&'static KernelProfile],
    spec: Option<&Spec>,
) -> anyhow::Result<Vec<Sweep>> {
    let stutterp = spec.is_none();
    let set_names: Vec<&str> = sets
        .iter()
        .filter_map(|s| s.split_once('='))
        .map(|(k, _)| k.trim())
        .collect();
    let mut out: Vec<Sweep> = Vec::new();
    for s in sweeps {
        let usage =
            "expected NAME=V1,V2,..., e.g. --sweep throttle.noprogress.timeout_us=1000,4000,500000";
        let Some((name, list)) = s.split_once('=') else {
            bail!("--sweep {s}: {usage}");
        };
        let name = name.trim();
        if name.is_empty() {
            bail!("--sweep {s}: no parameter name; {usage}");
        }
        if !is_param(name) {
            return Err(unknown_param("--sweep", s, name));
        }
        if set_names.contains(&name) {
            bail!("--sweep {s}: `{name}` is also given with --set; a parameter is either set to one value or swept over several, not both (drop the --set, or the --sweep)");
        }
        if out.iter().any(|w| w.name == name) {
            bail!("--sweep {s}: `{name}` is swept twice; give all its values in one --sweep {name}=V1,V2,...");
        }
        if name.starts_with("stutterp.") && !stutterp {
            bail!("--sweep {s}: stutterp.* parameters apply only to the stutterp workload, not to a workload spec file");
        }
        let sep = if list.contains(';') { ';' } else { ',' };
        let mut values: Vec<String> = Vec::new();
        for v in list.split(sep).map(str::trim) {
            if v.is_empty() {
                bail!("--sweep {s}: an empty value; {usage} (values separated by `,`, or by `;` when a value holds commas, as stutterp.workers=4,8;16)");
            }
            // Check the value under every profile, and keep it as recorded.
            let mut canonical = String::new();
            for p in profiles {
                let (mut params, mut sp) = (Params::defaults(p), StutterpParams::default());
                let (mut policy, mut seed) = ((*p).clone(), 0);
                let mut spec = spec.cloned();
                let mut to = Settings {
                    params: &mut params,
                    policy: &mut policy,
                    sp: &mut sp,
                    seed: &mut seed,
                    spec: spec.as_mut(),
                };
                set_param(name, v, &mut to).map_err(|e| anyhow!("--sweep {s}: {e}"))?;
                canonical = recorded_value(name, &to);
            }
            if values.contains(&canonical) {
                let same = if canonical == v {
                    String::new()
                } else {
                    format!(" (as {canonical})")
                };
                bail!("--sweep {s}: the value `{v}` is given twice{same}; each value runs once");
            }
            values.push(canonical);
        }
        out.push(Sweep {
            name: name.to_string(),
            values,
        });
    }
    Ok(out)
}

/// The points of the grid, the first sweep outermost: every combination of
/// one value per sweep, as `(name, value)` in `--sweep` order. One empty
/// point without sweeps.
pub(crate) fn sweep_points(sweeps: &[Sweep]) -> Vec<Vec<(&str, &str)>> {
    let mut points: Vec<Vec<(&str, &str)>> = vec![Vec::new()];
    for sw in sweeps {
        points = points
            .iter()
            .flat_map(|p| {
                sw.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((sw.name.as_str(), v.as_str()));
                    q
                })
            })
            .collect();
    }
    points
}

/// A run's label: the profile, then `,NAME=VALUE` for each `policy.*`
/// setting `--set` changed from the profile's (the run is no longer that
/// kernel), then per sweep.
pub(crate) fn run_label(
    base: &KernelProfile,
    policy: &KernelProfile,
    point: &[(&str, &str)],
) -> String {
    let mut s = base.name.to_string();
    for ((k, v), (_, was)) in policy.policy_pairs().iter().zip(base.policy_pairs()) {
        if *v != was && !point.iter().any(|(n, _)| n == k) {
            s.push_str(&format!(",{k}={v}"));
        }
    }
    for (k, v) in point {
        s.push_str(&format!(",{k}={v}"));
    }
    s
}

/// The record directory name for a label: the label itself with anything
/// but `A-Za-z0-9._-+=,` replaced by `_`; a label too long for a file name
/// becomes `KERNEL,point-N` (N = the sweep point's 1-based index).
pub(crate) fn dir_name(label: &str, kernel: &str, point_index: usize) -> String {
    let safe: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-+=,".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.len() <= 200 {
        safe
    } else {
        format!("{kernel},point-{}", point_index + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_kernel::profile::profile;

    fn sweeps(args: &[&str], stutterp: bool) -> anyhow::Result<Vec<Sweep>> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let profiles = [profile("v5.15").unwrap(), profile("v5.16").unwrap()];
        let spec = Spec::builtin("fsmark-mlock").unwrap();
        parse_sweeps(&args, &[], &profiles, (!stutterp).then_some(&spec))
    }

    #[test]
    fn the_grid_is_the_cartesian_product_first_sweep_outermost() {
        let s = sweeps(
            &["vm.dirty_ratio=10, 40", "vm.swappiness=0,60,1.2e2"],
            false,
        )
        .unwrap();
        assert_eq!(s[1].values, ["0", "60", "120"], "values as recorded");
        let v516 = profile("v5.16").unwrap();
        let labels: Vec<String> = sweep_points(&s)
            .iter()
            .map(|p| run_label(v516, v516, p))
            .collect();
        assert_eq!(
            labels,
            [
                "v5.16,vm.dirty_ratio=10,vm.swappiness=0",
                "v5.16,vm.dirty_ratio=10,vm.swappiness=60",
                "v5.16,vm.dirty_ratio=10,vm.swappiness=120",
                "v5.16,vm.dirty_ratio=40,vm.swappiness=0",
                "v5.16,vm.dirty_ratio=40,vm.swappiness=60",
                "v5.16,vm.dirty_ratio=40,vm.swappiness=120",
            ]
        );
        assert_eq!(sweep_points(&[]), vec![Vec::<(&str, &str)>::new()]);
    }

    #[test]
    fn policy_settings_are_parameters_and_show_in_the_label() {
        let s = sweeps(&["policy.noprogress=none,rc1"], false).unwrap();
        assert_eq!(s[0].values, ["none", "rc1"]);
        let e = sweeps(&["policy.noprogress=rc1,rc2"], false).unwrap_err();
        assert!(
            e.to_string()
                .contains("accepted: none, rc1, final, backoff"),
            "{e}"
        );
        let e = sweeps(&["policy.noprogres=rc1"], false).unwrap_err();
        assert!(
            e.to_string().contains("did you mean `policy.noprogress`?"),
            "{e}"
        );
        let base = profile("v5.16-rc1").unwrap();
        let (mut params, mut sp, mut policy) = (
            Params::defaults(base),
            StutterpParams::default(),
            base.clone(),
        );
        let mut seed = 1;
        let mut to = Settings {
            params: &mut params,
            policy: &mut policy,
            sp: &mut sp,
            seed: &mut seed,
            spec: None,
        };
        let sets = [
            "policy.noprogress=none".to_string(),
            "policy.too_many_isolated=throttle_isolated".to_string(),
        ];
        apply_sets(&sets, &mut to).unwrap();
        // Only what differs from the base profile is in the label; a swept
        // setting is named once, by its sweep.
        assert_eq!(
            run_label(base, &policy, &[]),
            "v5.16-rc1,policy.noprogress=none"
        );
        assert_eq!(
            run_label(base, &policy, &[("policy.noprogress", "none")]),
            "v5.16-rc1,policy.noprogress=none"
        );
    }

    #[test]
    fn list_values_split_on_semicolons() {
        let s = sweeps(&["stutterp.workers=4, 8;16"], true).unwrap();
        assert_eq!(s[0].values, ["4,8", "16"]);
        let s = sweeps(&["stutterp.file_set=fio,intent"], true).unwrap();
        assert_eq!(s[0].values, ["fio", "intent"]);
    }

    #[test]
    fn directory_names_are_safe_and_bounded() {
        assert_eq!(
            dir_name("v5.16,throttle.noprogress.timeout_us=4000", "v5.16", 0),
            "v5.16,throttle.noprogress.timeout_us=4000"
        );
        assert_eq!(dir_name("v5.16,a=x/y z", "v5.16", 0), "v5.16,a=x_y_z");
        let long = format!("v5.16,stutterp.workers={}", vec!["4096"; 60].join(","));
        assert_eq!(dir_name(&long, "v5.16", 2), "v5.16,point-3");
    }

    #[test]
    fn the_seed_is_a_parameter_to_sweep() {
        let s = sweeps(&["seed=1,2,03"], false).unwrap();
        assert_eq!(s[0].values, ["1", "2", "3"]);
        let err = sweeps(&["seed=1,01"], false).unwrap_err().to_string();
        assert!(err.contains("given twice (as 1)"), "{err}");
        let err = sweeps(&["seed=-1"], false).unwrap_err().to_string();
        assert!(err.contains("expected a whole number"), "{err}");
        let v516 = profile("v5.16").unwrap();
        assert_eq!(run_label(v516, v516, &[("seed", "2")]), "v5.16,seed=2");
        let (mut params, mut sp, mut policy, mut seed) = (
            Params::defaults(v516),
            StutterpParams::default(),
            v516.clone(),
            1,
        );
        let mut to = Settings {
            params: &mut params,
            policy: &mut policy,
            sp: &mut sp,
            seed: &mut seed,
            spec: None,
        };
        apply_sets(&["seed=7".to_string()], &mut to).unwrap();
        assert_eq!(seed, 7);
        assert!(is_param("seed") && param_names().contains(&"seed"));
    }

    #[test]
    fn a_specs_worker_keys_are_swept_and_bad_ones_refused() {
        let s = sweeps(
            &[
                "xfs.inode_reclaim=sync,async",
                "mlock.size_mib=320, 384,0448",
            ],
            false,
        )
        .unwrap();
        assert_eq!(s[1].values, ["320", "384", "448"], "values as recorded");
        let v59 = profile("v5.9").unwrap();
        let labels: Vec<String> = sweep_points(&s)
            .iter()
            .map(|p| run_label(v59, v59, p))
            .collect();
        assert_eq!(labels.len(), 6);
        assert_eq!(labels[1], "v5.9,xfs.inode_reclaim=sync,mlock.size_mib=384");
        let err = |a: &str| sweeps(&[a], false).unwrap_err().to_string();
        let e = err("anon-hog.size_mib=1,2");
        assert!(
            e.contains("--sweep anon-hog.size_mib=1,2") && e.contains("no `anon-hog` worker"),
            "{e}"
        );
        let e = err("mlock.size_mb=1,2");
        assert!(e.contains("did you mean `mlock.size_mib`"), "{e}");
        let e = err("mlock.size_mib=320,lots");
        assert!(e.contains("expected a whole number"), "{e}");
        let e = err("mlock.size_mib=320,320");
        assert!(e.contains("given twice"), "{e}");
        let e = err("mlock.step_mib=4096");
        assert!(e.contains("more than size_mib"), "{e}");
        // stutterp has no [[worker]] entries.
        let e = sweeps(&["mlock.size_mib=1,2"], true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("stutterp is not a spec"), "{e}");
        // --set takes them too, into the spec.
        let mut spec = Spec::builtin("fsmark-mlock").unwrap();
        let (mut params, mut sp, mut policy, mut seed) = (
            Params::defaults(v59),
            StutterpParams::default(),
            v59.clone(),
            1,
        );
        let mut to = Settings {
            params: &mut params,
            policy: &mut policy,
            sp: &mut sp,
            seed: &mut seed,
            spec: Some(&mut spec),
        };
        apply_sets(&["mlock.size_mib=352".to_string()], &mut to).unwrap();
        assert_eq!(recorded_value("mlock.size_mib", &to), "352");
        let e = apply_sets(&["mlock.size_mib=x".to_string()], &mut to).unwrap_err();
        assert!(e.to_string().starts_with("--set mlock.size_mib=x: "), "{e}");
    }
}
