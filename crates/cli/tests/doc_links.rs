//! Every file the documentation or a message cites exists in the repository:
//!
//! * the links (`[text](path)`) of README.md and of every Markdown file
//!   under docs/, relative to the file that holds them;
//! * the paths written in backticks there (`docs/…`, `crates/…`,
//!   `examples/…`, `*.md`), from the repository root, the file's folder or
//!   a docs/ folder (docs/reference/, copies of notes that cite other
//!   projects' files, only for its links);
//! * the Markdown files and `docs/` paths named in the string literals of
//!   crates/*/src (error messages, `doctor`'s advice), from the root or, for a
//!   bare file name, anywhere under docs/.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                files_under(&p, ext, out);
            }
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// The targets of `[text](target)` links, without `#fragment`; external
/// and in-page links left out.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or("").trim();
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            out.push(target.to_string());
        }
    }
    out
}

/// Paths in backticks that name a file of the repository.
fn backticked_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 0
            || part.contains(char::is_whitespace)
            || part.contains('*')
            || part.contains('{')
        {
            continue;
        }
        let part = part.trim_end_matches(['.', ',', ':', ')']);
        let repo_dir = ["docs/", "crates/", "examples/", ".ci/"]
            .iter()
            .any(|d| part.starts_with(d));
        if repo_dir || part.ends_with(".md") {
            out.push(part.to_string());
        }
    }
    out
}

fn exists_from(bases: &[&Path], p: &str) -> bool {
    bases.iter().any(|b| b.join(p).exists())
}

#[test]
fn every_cited_file_exists() {
    let root = root();
    let docs = root.join("docs");
    let mut md = vec![root.join("README.md")];
    files_under(&docs, "md", &mut md);
    let mut missing = Vec::new();
    for f in &md {
        let text = std::fs::read_to_string(f).unwrap();
        let dir = f.parent().unwrap();
        for l in links(&text) {
            if !dir.join(&l).exists() {
                missing.push(format!("{}: link {l}", f.display()));
            }
        }
        // The reference notes cite other projects' files in backticks.
        if f.starts_with(docs.join("reference")) {
            continue;
        }
        for p in backticked_paths(&text) {
            if !exists_from(
                &[
                    &root,
                    dir,
                    &docs,
                    &docs.join("reference"),
                    &docs.join("bench"),
                ],
                &p,
            ) {
                missing.push(format!("{}: `{p}`", f.display()));
            }
        }
    }
    // String literals in the sources: what messages tell the user to read.
    let mut rs = Vec::new();
    files_under(&root.join("crates"), "rs", &mut rs);
    rs.retain(|p| p.components().any(|c| c.as_os_str() == "src"));
    let mut cited = 0;
    for f in &rs {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for (i, lit) in code.split('"').enumerate() {
                if i % 2 == 0 {
                    continue;
                }
                for word in lit.split(|c: char| c.is_whitespace() || "(),;`".contains(c)) {
                    let word = word.trim_end_matches(['.', ':']);
                    let is_doc = word.ends_with(".md") || word.starts_with("docs/");
                    if !is_doc || word.contains('{') {
                        continue;
                    }
                    cited += 1;
                    let found = root.join(word).exists()
                        || (!word.contains('/') && {
                            let mut all = Vec::new();
                            files_under(&docs, "md", &mut all);
                            all.iter().any(|p| p.file_name().is_some_and(|x| x == word))
                        });
                    if !found {
                        missing.push(format!("{}:{}: \"{word}\"", f.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(
        cited > 0,
        "no documentation cited in the sources? the scan is broken"
    );
    assert!(
        missing.is_empty(),
        "cited but not in the repository:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_scanners_find_what_they_should() {
    assert_eq!(
        links("see [a](docs/a.md#x), [b](https://x.org) and [c](#top)"),
        ["docs/a.md"]
    );
    assert_eq!(
        backticked_paths(
            "run `cargo test`, read `docs/a.md`, `reference/b.md`. and `crates/x/src/y.rs`."
        ),
        ["docs/a.md", "reference/b.md", "crates/x/src/y.rs"]
    );
}
