//! The import graph of a crate, read from its source as text: each file is a
//! module (`a.rs` and `a/mod.rs` are `a`, `a/b.rs` is `a::b`), and a file
//! names another when one of its `use` statements, or a path in its code,
//! starts with `crate::`, `super::`, `self::` or one of its own child
//! modules and reaches that module. Used by the tidy tests to keep imports
//! going one way: no cycle between files, no lower layer naming a higher
//! one. A child module may use its parent's items (that edge never counts
//! towards a cycle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Files as module paths, and which names which.
pub struct Graph {
    /// Module path (`session::routing`) by index; the crate root is "".
    pub modules: Vec<String>,
    /// (from, to) module indexes, `from` naming `to`.
    pub edges: BTreeSet<(usize, usize)>,
}

impl Graph {
    /// The graph of the crate whose sources are under `src` (`lib.rs`
    /// at its root); `skip` leaves files out (binaries, tests).
    pub fn read(src: &Path, files: &[PathBuf], skip: impl Fn(&str) -> bool) -> Graph {
        let mut modules = Vec::new();
        let mut texts = Vec::new();
        for file in files {
            let relative = file
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if skip(&relative) {
                continue;
            }
            modules.push(module_of(&relative));
            texts.push(std::fs::read_to_string(file).unwrap());
        }
        let index: BTreeMap<&str, usize> = modules
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), i))
            .collect();
        let mut edges = BTreeSet::new();
        for (from, text) in texts.iter().enumerate() {
            let here: Vec<&str> = split(&modules[from]);
            for path in paths(text) {
                let Some(absolute) = absolute(&here, &path, &index) else {
                    continue;
                };
                if let Some(to) = longest_module(&absolute, &index) {
                    if to != from {
                        edges.insert((from, to));
                    }
                }
            }
        }
        Graph { modules, edges }
    }

    /// Whether `to` is `from`'s parent, grandparent...
    fn is_ancestor(&self, to: usize, from: usize) -> bool {
        let (to, from) = (&self.modules[to], &self.modules[from]);
        to.is_empty() || from.starts_with(&format!("{to}::"))
    }

    /// The cycles between files (strongly connected sets of two or more),
    /// each sorted, not counting a child naming an ancestor.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let n = self.modules.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(from, to) in &self.edges {
            if !self.is_ancestor(to, from) {
                next[from].push(to);
            }
        }
        let mut found: Vec<Vec<String>> = strongly_connected(&next)
            .into_iter()
            .filter(|set| set.len() > 1)
            .map(|set| {
                let mut names: Vec<String> = set.iter().map(|&i| self.modules[i].clone()).collect();
                names.sort();
                names
            })
            .collect();
        found.sort();
        found
    }
}

/// `a.rs` -> `a`, `a/mod.rs` -> `a`, `a/b.rs` -> `a::b`, `lib.rs` -> "".
fn module_of(relative: &str) -> String {
    let trimmed = relative.trim_end_matches(".rs");
    let trimmed = trimmed.strip_suffix("/mod").unwrap_or(trimmed);
    match trimmed {
        "lib" | "main" => String::new(),
        other => other.replace('/', "::"),
    }
}

fn split(module: &str) -> Vec<&str> {
    module.split("::").filter(|s| !s.is_empty()).collect()
}

/// Every path a file's code names that may be one of its crate's: the
/// whole of each `use` statement (braces expanded), and `crate::`,
/// `super::` and `self::` paths elsewhere. Comments and test modules are
/// left out.
fn paths(text: &str) -> Vec<Vec<String>> {
    let code: String = crate::code_lines(text)
        .map(|(_, line)| line)
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = find_use(rest) {
        let statement = &rest[at..];
        let end = statement.find(';').unwrap_or(statement.len());
        let body = statement[..end].trim_start_matches("use").trim();
        expand(&[], body, &mut found);
        rest = &statement[end..];
    }
    for start in ["crate::", "super::", "self::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(start) {
            let before = rest[..at].chars().next_back();
            let path: String = rest[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                found.push(
                    path.split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect(),
                );
            }
            rest = &rest[at + start.len()..];
        }
    }
    found
}

/// Where the next `use` statement starts (`use`, `pub use`, `pub(...) use`
/// at the start of a line).
fn find_use(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let after_pub = trimmed
            .strip_prefix("pub")
            .map(|rest| match rest.strip_prefix('(') {
                Some(inner) => inner.split_once(')').map_or("", |(_, r)| r),
                None => rest,
            })
            .unwrap_or(trimmed)
            .trim_start();
        if after_pub.starts_with("use ") {
            return Some(offset + (line.len() - after_pub.len()));
        }
        offset += line.len();
    }
    None
}

/// The paths of a use tree (`a::{b, c::{d, e}}`), each after `prefix`.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => {
            for item in split_top(tree) {
                let item = item.split(" as ").next().unwrap_or("").trim();
                let mut path = prefix.to_vec();
                path.extend(
                    item.split("::")
                        .map(str::trim)
                        .filter(|s| !s.is_empty() && *s != "*")
                        .map(str::to_owned),
                );
                out.push(path);
            }
        }
        Some(open) if split_top(tree).len() > 1 => {
            let _ = open;
            for item in split_top(tree) {
                expand(prefix, item, out);
            }
        }
        Some(open) => {
            let mut path = prefix.to_vec();
            path.extend(
                tree[..open]
                    .split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            let inner = tree[open + 1..].trim_end().trim_end_matches('}');
            for item in split_top(inner) {
                expand(&path, item, out);
            }
        }
    }
}

/// `text` split at the commas outside braces.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// `path` as written in module `here`, made absolute; `None` when it is
/// another crate's.
fn absolute(here: &[&str], path: &[String], index: &BTreeMap<&str, usize>) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" => here.iter().map(|s| s.to_string()).collect(),
        "super" => {
            let mut base: Vec<String> = here.iter().map(|s| s.to_string()).collect();
            let mut rest = path;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        child => {
            // A child module of this file, named without `self::`.
            let mut candidate: Vec<String> = here.iter().map(|s| s.to_string()).collect();
            candidate.push(child.to_owned());
            if !index.contains_key(candidate.join("::").as_str()) {
                return None;
            }
            candidate.pop();
            candidate
        }
    };
    let skip = usize::from(matches!(first, "crate" | "self"));
    base.extend(path[skip..].iter().cloned());
    Some(base)
}

/// The module of the longest prefix of `path` that is one.
fn longest_module(path: &[String], index: &BTreeMap<&str, usize>) -> Option<usize> {
    (0..=path.len())
        .rev()
        .find_map(|n| index.get(path[..n].join("::").as_str()).copied())
}

/// Tarjan's strongly connected components, iteratively.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = next.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut out, mut counter) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some((v, i)) = work.pop() {
            if i == 0 {
                index[v] = counter;
                low[v] = counter;
                counter += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = next[v].get(i) {
                work.push((v, i + 1));
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if low[v] == index[v] {
                let mut set = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(set);
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
        }
    }
    out
}
