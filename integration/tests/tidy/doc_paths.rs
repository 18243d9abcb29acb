//! Docs name files that exist: every path in backquotes in README.md,
//! ARCHITECTURE.md and docs/*.md is a file or folder of the repository.

use std::path::Path;
use std::process::Command;

use super::workspace;

/// Names in backquotes that look like paths but are not the repository's:
/// the config files a user writes, libpg_query's own sources, patterns, and
/// what a run writes (under `target/`, the demo's `.demo/`).
const NOT_OURS: &[&str] = &[
    "pgdog.toml",
    "users.toml",
    "pg_query_outfuncs_conds.c",
    "pg_query_outfuncs_defs.c",
    "pg_query_enum_defs.c",
    "view/X_view.rs",
    "protobuf/X_protobuf.rs",
    ".demo/",
];

/// The repository's files, as git lists them (relative, `/`-separated).
fn tracked() -> Vec<String> {
    let out = Command::new("git")
        .current_dir(workspace())
        .args(["ls-files"])
        .output()
        .unwrap();
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A doc may name a file from the repository's root or from any folder
/// (`session/login.rs` inside proxy's section), and a folder with a `/`.
fn names_a_file(files: &[String], name: &str) -> bool {
    let name = name.split("::").next().unwrap_or(name);
    let folder = name.strip_suffix('/');
    files.iter().any(|f| match folder {
        Some(dir) => f.starts_with(&format!("{dir}/")) || f.contains(&format!("/{dir}/")),
        None => f == name || f.ends_with(&format!("/{name}")),
    })
}

/// The backquoted words of a line that look like a path: a file name with
/// one of our extensions, or words joined by `/` with no spaces.
fn paths_in(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (i, quoted) in line.split('`').enumerate() {
        let path_chars = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
        if i % 2 == 0 || quoted.is_empty() || !quoted.chars().all(path_chars) {
            continue;
        }
        let file = [".rs", ".sh", ".toml", ".md", ".c", ".txt"]
            .iter()
            .any(|ext| quoted.ends_with(ext));
        let path = quoted.contains('/') && !quoted.starts_with('/') && !quoted.contains("//");
        if (file || path) && !quoted.starts_with("target/") && !NOT_OURS.contains(&quoted) {
            found.push(quoted);
        }
    }
    found
}

#[test]
fn docs_name_files_that_exist() {
    let files = tracked();
    let mut docs = vec!["README.md".to_owned(), "ARCHITECTURE.md".to_owned()];
    docs.extend(files.iter().filter(|f| f.starts_with("docs/")).cloned());
    let mut missing = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(workspace().join(Path::new(doc))).unwrap();
        for (n, line) in text.lines().enumerate() {
            for path in paths_in(line) {
                if !names_a_file(&files, path) {
                    missing.push(format!("{doc}:{}: {path}", n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs name files that do not exist: {missing:#?}"
    );
}
