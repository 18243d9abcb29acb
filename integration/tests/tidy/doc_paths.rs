//! Docs lead somewhere: every path in backquotes in README.md,
//! ARCHITECTURE.md and docs/*.md is a file or folder of the repository, and
//! every relative link of a Markdown file reaches a file (and its heading).

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

/// GitHub's anchor for a heading: lower case, backquotes and punctuation
/// dropped (but `-` and `_`), spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

/// The relative link targets of a line: `[text](target)` not on the web.
fn links_in(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .filter(|target| !target.contains("://") && !target.starts_with("mailto:"))
        .collect()
}

#[test]
fn doc_links_reach_a_file_and_heading() {
    let files = tracked();
    let docs: Vec<&String> = files.iter().filter(|f| f.ends_with(".md")).collect();
    let mut broken = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(workspace().join(doc.as_str())).unwrap();
        let dir = Path::new(doc.as_str()).parent().unwrap_or(Path::new(""));
        for (n, line) in text.lines().enumerate() {
            for target in links_in(line) {
                let (file, heading) = target.split_once('#').unwrap_or((target, ""));
                let path = workspace().join(dir).join(file);
                let reached = if file.is_empty() {
                    anchors(&text).iter().any(|a| a == heading)
                } else if heading.is_empty() || !file.ends_with(".md") {
                    path.exists()
                } else {
                    std::fs::read_to_string(&path)
                        .is_ok_and(|body| anchors(&body).iter().any(|a| a == heading))
                };
                if !reached {
                    broken.push(format!("{doc}:{}: {target}", n + 1));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "doc links that lead nowhere: {broken:#?}"
    );
}
