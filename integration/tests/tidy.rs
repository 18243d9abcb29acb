//! The architecture invariants ARCHITECTURE.md states, checked on the
//! source: every `.rs` file opens with a `//!` line; `unsafe` code only in
//! parser-ffi; router and parser-ffi do no I/O; the proxy frames network
//! messages (reads lengths off the wire) only in its protocol codec, which
//! does not use tokio.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

#[path = "tidy/doc_paths.rs"]
mod doc_paths;
#[path = "tidy/features.rs"]
mod features;
#[path = "tidy/imports.rs"]
mod imports;
#[path = "tidy/layers.rs"]
mod layers;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every `.rs` file of the workspace's crates, skipping build output and
/// installed dependencies.
fn rust_files(under: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![workspace().join(under)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(
                    name.as_str(),
                    "target" | "node_modules" | ".venv" | ".cache" | "corpus" | "artifacts"
                ) {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of `text` that are code: comments dropped, and nothing from
/// a `#[cfg(test)]` test module on (test modules sit at the end of a
/// file). A `#[cfg(test)] mod tests;` declaration, or a test-only item,
/// does not end the code: what follows it still counts.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| lines[i].trim() == "#[cfg(test)]" && opens_test_module(&lines[i + 1..]))
        .unwrap_or(lines.len());
    lines
        .into_iter()
        .enumerate()
        .take(end)
        .filter(|(_, line)| line.trim() != "#[cfg(test)]")
        .map(|(i, line)| (i + 1, line.split("//").next().unwrap_or("")))
}

/// Whether the item after a `#[cfg(test)]` (past other attributes) is a
/// module with its body here (`mod tests {`).
fn opens_test_module(after: &[&str]) -> bool {
    let item = after
        .iter()
        .map(|line| line.trim())
        .find(|line| !line.starts_with("#["))
        .unwrap_or("");
    let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
    let item = item.strip_prefix("pub ").unwrap_or(item);
    item.starts_with("mod ") && item.ends_with('{')
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace())
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn every_rust_file_says_what_it_owns() {
    let mut missing = Vec::new();
    for crate_dir in ["proxy", "router", "parser-ffi", "bench", "integration"] {
        for file in rust_files(crate_dir) {
            let text = std::fs::read_to_string(&file).unwrap();
            if !text.starts_with("//!") {
                missing.push(relative(&file));
            }
        }
    }
    assert!(missing.is_empty(), "no `//!` first line: {missing:?}");
}

#[test]
fn unsafe_code_lives_only_in_parser_ffi() {
    let mut found = Vec::new();
    for crate_dir in ["proxy", "router", "bench", "integration"] {
        for file in rust_files(crate_dir) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, code) in code_lines(&text) {
                let unsafe_use = code.split_whitespace().any(|word| {
                    word == "unsafe" || word.starts_with("unsafe{") || word.starts_with("unsafe(")
                });
                if unsafe_use && !code.contains('"') {
                    found.push(format!("{}:{line}", relative(&file)));
                }
            }
        }
        let lib = ["src/lib.rs", "src/main.rs"]
            .iter()
            .map(|f| workspace().join(crate_dir).join(f))
            .find(|p| p.exists())
            .unwrap();
        let text = std::fs::read_to_string(&lib).unwrap();
        assert!(
            text.contains("#![forbid(unsafe_code)]"),
            "{} does not forbid unsafe code",
            relative(&lib)
        );
    }
    assert!(found.is_empty(), "unsafe outside parser-ffi: {found:?}");
}

#[test]
fn router_and_parser_ffi_do_no_io() {
    let mut found = Vec::new();
    for dir in ["router/src", "parser-ffi/src"] {
        for file in rust_files(dir) {
            let name = relative(&file);
            // Test files and the valgrind driver binary read the corpus.
            if name.ends_with("tests.rs") || name.contains("/bin/") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, code) in code_lines(&text) {
                for io in ["std::fs", "std::net", "std::process", "tokio", "std::env"] {
                    if code.contains(io) {
                        found.push(format!("{name}:{line}: {io}"));
                    }
                }
            }
        }
    }
    for manifest in ["router/Cargo.toml", "parser-ffi/Cargo.toml"] {
        let text = std::fs::read_to_string(workspace().join(manifest)).unwrap();
        assert!(!text.contains("tokio"), "{manifest} depends on tokio");
    }
    assert!(found.is_empty(), "I/O in a pure crate: {found:?}");
}

#[test]
fn network_lengths_are_read_only_by_the_codec() {
    let mut found = Vec::new();
    for file in rust_files("proxy/src") {
        let name = relative(&file);
        let text = std::fs::read_to_string(&file).unwrap();
        let codec = name.starts_with("proxy/src/protocol");
        for (line, code) in code_lines(&text) {
            if codec {
                if code.contains("tokio") {
                    found.push(format!("{name}:{line}: the codec uses tokio"));
                }
            } else if code.contains("from_be_bytes") {
                // Framing (a length off the wire) belongs to the codec,
                // which checks every length against its cap.
                found.push(format!("{name}:{line}: reads a length outside the codec"));
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

/// Errors are typed: no `Result<_, String>` in the crates' code (tests and
/// binaries' `main` aside), so callers can match on what went wrong.
#[test]
fn errors_are_typed() {
    let mut found = Vec::new();
    for dir in ["parser-ffi/src", "router/src", "proxy/src"] {
        for file in rust_files(dir) {
            let name = relative(&file);
            if name.ends_with("tests.rs") || name.contains("/bin/") || name.ends_with("main.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, code) in code_lines(&text) {
                if string_errors(code) {
                    found.push(format!("{name}:{line}: {}", code.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "Result<_, String>: {found:#?}");
}

/// Whether `code` names a `Result` whose error type is `String`.
fn string_errors(code: &str) -> bool {
    code.match_indices("Result<").any(|(at, open)| {
        let (mut depth, mut comma) = (1, None);
        for (i, c) in code[at + open.len()..].char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                ',' if depth == 1 => comma = Some(i),
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        let args = &code[at + open.len()..at + open.len() + i];
                        return comma.is_some_and(|c| args[c + 1..].trim() == "String");
                    }
                }
                _ => {}
            }
        }
        false
    })
}

#[test]
fn string_errors_are_seen_in_any_nesting() {
    assert!(string_errors("fn f() -> Result<u32, String> {"));
    assert!(string_errors("-> Result<Result<(), String>, ()>"));
    assert!(!string_errors("-> Result<HashMap<String, String>, Error>"));
    assert!(!string_errors("-> Result<Vec<String>, E>"));
}

/// Router, parser-ffi and proxy code stays readable in one sitting: no file
/// with more than 500 lines of code before its tests, no function longer
/// than 80 lines (counted from its `fn` line to its closing brace; test
/// files (`tests.rs`, `*_tests.rs`) and test modules aside).
#[test]
fn files_and_functions_stay_small() {
    const FILE_LINES: usize = 500;
    const FN_LINES: usize = 80;
    let mut found = Vec::new();
    let files = ["router/src", "parser-ffi/src", "proxy/src"]
        .into_iter()
        .flat_map(rust_files);
    for file in files {
        let name = relative(&file);
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = code_lines(&text).map(|(_, code)| code).collect();
        if lines.len() > FILE_LINES {
            found.push(format!("{name}: {} lines", lines.len()));
        }
        let mut i = 0;
        while i < lines.len() {
            let Some(fn_name) = function_name(lines[i]) else {
                i += 1;
                continue;
            };
            let (start, mut depth, mut opened) = (i, 0i64, false);
            while i < lines.len() {
                let code = without_literals(lines[i]);
                depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
                opened |= code.contains('{');
                if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                    break;
                }
                i += 1;
            }
            if i - start + 1 > FN_LINES {
                found.push(format!(
                    "{name}:{}: fn {fn_name} has {} lines",
                    start + 1,
                    i - start + 1
                ));
            }
            i += 1;
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// The name of the function a line declares, if it does.
#[test]
fn function_names_are_read_past_any_visibility() {
    for (line, name) in [
        (
            "    pub(in crate::session) fn route_bind(",
            Some("route_bind"),
        ),
        ("pub(crate) async fn run<T>(x: T) {", Some("run")),
        ("    fn plain() {", Some("plain")),
        ("    let f = |x| x;", None),
    ] {
        assert_eq!(function_name(line), name, "{line}");
    }
}

fn function_name(line: &str) -> Option<&str> {
    // A restricted visibility (`pub(in crate::session)`) is one qualifier,
    // whatever its spaces.
    let line = line.trim_start();
    let line = match line.strip_prefix("pub(") {
        Some(rest) => rest.split_once(')').map_or(rest, |(_, after)| after),
        None => line,
    };
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.next() {
        if word == "fn" {
            let next = words.next()?;
            return next.split(['(', '<']).next();
        }
        let qualifier = word.starts_with("pub")
            || matches!(word, "async" | "const" | "unsafe" | "extern" | "\"C\"");
        if !qualifier {
            return None;
        }
    }
    None
}

/// A line with its string and char literals emptied (their braces do not
/// count).
fn without_literals(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            '\'' if line.contains("'{'") || line.contains("'}'") => {
                // A char literal brace: skip to its closing quote.
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Cycles between files that are known and being taken apart (issue 32);
/// a cycle not listed here fails, and so does one listed that is gone.
const KNOWN_CYCLES: &[&str] = &[];

/// Imports go one way: no two files of a crate name each other, directly
/// or through others (a child module naming its parent does not count).
#[test]
fn no_import_cycle_between_files() {
    let mut found = Vec::new();
    for dir in ["parser-ffi/src", "router/src", "proxy/src"] {
        let src = workspace().join(dir);
        let files = rust_files(dir);
        let skip = |file: &str| {
            file.starts_with("bin/") || file.ends_with("tests.rs") || file == "main.rs"
        };
        let graph = imports::Graph::read(&src, &files, skip);
        for cycle in graph.cycles() {
            found.push(format!("{dir}: {}", cycle.join(" <-> ")));
        }
    }
    let known: Vec<String> = KNOWN_CYCLES.iter().map(|c| c.to_string()).collect();
    if std::env::var_os("SHOW_CYCLES").is_some() {
        for cycle in &found {
            println!("{cycle:?},");
        }
    }
    let new: Vec<&String> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<&String> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(new.is_empty(), "import cycles: {new:#?}");
    assert!(
        gone.is_empty(),
        "cycles gone (take them off KNOWN_CYCLES): {gone:#?}"
    );
}
