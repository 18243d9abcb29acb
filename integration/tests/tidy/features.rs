//! One build for every command: each package selection that compiles
//! pgshard resolves the same features for every crate pgshard is built from.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use super::workspace;

/// The selections our scripts and docs build with: the demo (`-p
/// integration`), the bench scripts (`-p bench`), a plain `cargo build`.
const SELECTIONS: [&[&str]; 3] = [&["-p", "integration"], &["-p", "bench"], &["--workspace"]];

/// `name version` -> the feature lists it is compiled with (a crate can be
/// compiled twice: once for the host's proc-macros, once for the target).
fn features(selection: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace())
        .args(["tree", "--locked", "-e", "normal,build", "--prefix", "none"])
        .args(["-f", "{p} [{f}]"])
        .args(selection)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo tree {selection:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut crates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        // `syn v3.0.9 [clone-impls,full]`, `thiserror-impl v2.0.1 (proc-macro) [] (*)`,
        // `proxy v0.1.0 (/work/proxy) []`
        let mut words = line.split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        let Some(list) = line
            .split('[')
            .nth(1)
            .and_then(|rest| rest.split(']').next())
        else {
            continue;
        };
        crates
            .entry(format!("{name} {version}"))
            .or_default()
            .insert(list.to_string());
    }
    crates
}

#[test]
fn one_build_for_every_selection() {
    let proxy = features(&["-p", "proxy"]);
    assert!(
        proxy.keys().any(|name| name.starts_with("tokio ")),
        "cargo tree -p proxy lists no tokio: {proxy:?}"
    );
    let mut drift = Vec::new();
    for selection in SELECTIONS {
        let other = features(selection);
        for (name, lists) in &proxy {
            match other.get(name) {
                Some(theirs) if theirs != lists => drift.push(format!(
                    "{name}: `-p proxy` compiles it with {lists:?}, `{}` with {theirs:?}",
                    selection.join(" ")
                )),
                _ => {}
            }
        }
    }
    assert!(
        drift.is_empty(),
        "package selections compile pgshard's crates with different features, so each \
         rebuilds pgshard; ask for the union in [workspace.dependencies] and in \
         proxy/Cargo.toml's feature-unification entries:\n{}",
        drift.join("\n")
    );
}
