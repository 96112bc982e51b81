//! A fidelity suite file: the pairs to score, kept in the repository.
//!
//! `reclaimlab fidelity --suite FILE` reads a TOML file
//! (`reclaimlab.fidelity-suite/1`, `docs/fidelity.md`) listing record pairs
//! and letters with the simulated records to score against them, so a
//! matrix of comparisons is one command. Relative paths are relative to the
//! suite file's directory, as in any file that names others.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::letter::LetterError;

/// The suite schema name.
pub const SUITE_SCHEMA: &str = "reclaimlab.fidelity-suite/1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    schema: String,
    #[serde(default)]
    pair: Vec<PairFile>,
    #[serde(default)]
    letter: Vec<LetterFile>,
    #[serde(default)]
    generations: Vec<GenerationsFile>,
}

/// Pairs of one workload on an older and a newer kernel, named by their
/// real records: one record a side, or several runs of each (replicates),
/// whose spread decides which differences are more than noise.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerationsFile {
    older: Records,
    newer: Records,
}

/// One real record, or a list of runs of the same case.
#[derive(Deserialize)]
#[serde(untagged)]
enum Records {
    One(PathBuf),
    Many(Vec<PathBuf>),
}

impl Records {
    fn paths(&self) -> &[PathBuf] {
        match self {
            Records::One(p) => std::slice::from_ref(p),
            Records::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairFile {
    sim: PathBuf,
    real: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LetterFile {
    file: PathBuf,
    sims: Vec<PathBuf>,
}

/// A loaded suite, paths resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Suite {
    /// Record pairs (simulated, real), in file order.
    pub pairs: Vec<(PathBuf, PathBuf)>,
    /// Letters and the simulated records (or folders of them) to score
    /// against each.
    pub letters: Vec<(PathBuf, Vec<PathBuf>)>,
    /// `[[generations]]`: pairs of `pairs` (indices), the older kernel's
    /// and the newer's (one or more runs each), whose differences are
    /// compared direction by direction.
    pub generations: Vec<(Vec<usize>, Vec<usize>)>,
}

/// Parses a suite; `path` names it in errors and anchors relative paths.
pub fn parse_suite(text: &str, path: &Path) -> Result<Suite, LetterError> {
    let err = |message: String| LetterError {
        path: path.display().to_string(),
        message,
    };
    let f: SuiteFile =
        toml::from_str(text).map_err(|e| err(format!("not a fidelity suite: {e}")))?;
    if f.schema != SUITE_SCHEMA {
        return Err(err(format!(
            "schema `{}`: expected `{SUITE_SCHEMA}`",
            f.schema
        )));
    }
    if f.pair.is_empty() && f.letter.is_empty() {
        return Err(err(
            "no [[pair]] or [[letter]] entries: nothing to score".into()
        ));
    }
    let base = path.parent().unwrap_or(Path::new(""));
    let at = |p: &Path| base.join(p);
    let pairs: Vec<(PathBuf, PathBuf)> = f.pair.iter().map(|p| (at(&p.sim), at(&p.real))).collect();
    let index = |real: &Path, which: &str| {
        pairs.iter().position(|(_, r)| *r == at(real)).ok_or_else(|| {
            err(format!(
                "[[generations]] {which} = `{}` is not the real record of any [[pair]]: name one of the pairs' `real` paths",
                real.display()
            ))
        })
    };
    let side = |rs: &Records, which: &str| -> Result<Vec<usize>, LetterError> {
        if rs.paths().is_empty() {
            return Err(err(format!(
                "[[generations]] {which} = []: name at least one real record"
            )));
        }
        let mut v = Vec::new();
        for p in rs.paths() {
            let i = index(p, which)?;
            if v.contains(&i) {
                return Err(err(format!(
                    "[[generations]] {which} names `{}` twice: each run counts once",
                    p.display()
                )));
            }
            v.push(i);
        }
        Ok(v)
    };
    let generations = f
        .generations
        .iter()
        .map(|g| {
            let (o, n) = (side(&g.older, "older")?, side(&g.newer, "newer")?);
            if let Some(&i) = o.iter().find(|i| n.contains(i)) {
                return Err(err(format!(
                    "[[generations]]: `{}` is both older and newer",
                    pairs[i].1.display()
                )));
            }
            Ok((o, n))
        })
        .collect::<Result<Vec<_>, LetterError>>()?;
    Ok(Suite {
        generations,
        pairs,
        letters: f
            .letter
            .iter()
            .map(|l| (at(&l.file), l.sims.iter().map(|s| at(s)).collect()))
            .collect(),
    })
}

/// Reads a suite file.
pub fn load_suite(path: &Path) -> Result<Suite, LetterError> {
    let text = std::fs::read_to_string(path).map_err(|e| LetterError {
        path: path.display().to_string(),
        message: format!("cannot read the suite: {e}"),
    })?;
    parse_suite(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_suite_and_errors_name_it() {
        let s = parse_suite(
            "schema = 'reclaimlab.fidelity-suite/1'\n[[pair]]\nsim = 'a'\nreal = '/abs/b'\n[[letter]]\nfile = 'l.toml'\nsims = ['../out']\n",
            Path::new("suites/suite.toml"),
        )
        .unwrap();
        assert_eq!(
            s.pairs,
            [(PathBuf::from("suites/a"), PathBuf::from("/abs/b"))]
        );
        assert_eq!(
            s.letters,
            [(
                PathBuf::from("suites/l.toml"),
                vec![PathBuf::from("suites/../out")]
            )]
        );
        let g = parse_suite(
            "schema = 'reclaimlab.fidelity-suite/1'\n[[pair]]\nsim = 'a'\nreal = 'r/old'\n[[pair]]\nsim = 'b'\nreal = 'r/new'\n[[generations]]\nolder = 'r/old'\nnewer = 'r/new'\n",
            Path::new("suites/suite.toml"),
        )
        .unwrap();
        assert_eq!(g.generations, [(vec![0], vec![1])]);
        // Replicates: lists of runs a side; a run named twice, or on both
        // sides, is refused.
        let two = "schema = 'reclaimlab.fidelity-suite/1'\n[[pair]]\nsim = 'a'\nreal = 'r/o1'\n[[pair]]\nsim = 'b'\nreal = 'r/o2'\n[[pair]]\nsim = 'c'\nreal = 'r/n1'\n[[generations]]\n";
        let g = parse_suite(
            &format!("{two}older = ['r/o1', 'r/o2']\nnewer = 'r/n1'\n"),
            Path::new("s.toml"),
        )
        .unwrap();
        assert_eq!(g.generations, [(vec![0, 1], vec![2])]);
        for (bad, says) in [
            (
                "older = ['r/o1', 'r/o1']\nnewer = 'r/n1'\n",
                "names `r/o1` twice",
            ),
            (
                "older = ['r/o1']\nnewer = ['r/n1', 'r/o1']\n",
                "is both older and newer",
            ),
            (
                "older = []\nnewer = 'r/n1'\n",
                "name at least one real record",
            ),
        ] {
            let e = parse_suite(&format!("{two}{bad}"), Path::new("s.toml")).unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
        }
        let e = parse_suite(
            "schema = 'reclaimlab.fidelity-suite/1'\n[[pair]]\nsim = 'a'\nreal = 'r/old'\n[[generations]]\nolder = 'r/old'\nnewer = 'r/gone'\n",
            Path::new("s.toml"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml: [[generations]] newer = `r/gone` is not the real record of any [[pair]]: name one of the pairs' `real` paths"
        );
        let e = parse_suite(
            "schema = 'reclaimlab.fidelity-suite/1'\n",
            Path::new("s.toml"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml: no [[pair]] or [[letter]] entries: nothing to score"
        );
        let e = parse_suite(
            "schema = 'x'\n[[pair]]\nsim='a'\nreal='b'\n",
            Path::new("s.toml"),
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .contains("expected `reclaimlab.fidelity-suite/1`"));
    }
}
