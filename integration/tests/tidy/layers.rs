//! The proxy's layers (ARCHITECTURE.md's layer table), checked on its
//! import graph: a module names only modules of lower layers, or modules
//! its own layer lists before it, never one above.

use super::imports::Graph;
use super::{rust_files, workspace};

/// The proxy's layers, lowest first; each lists its top-level modules
/// (files under `proxy/src`, with their children) from low to high. A
/// module may name a module of a lower layer, or one listed before it in
/// its own layer. The crate root (`lib.rs`, which only declares modules)
/// and the binary's `main.rs` stand above them all.
pub const PROXY_LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "lock",
            "id_hash",
            "logging",
            "unique_ids",
            "config_files",
            "interrupt",
            "catalog_epoch",
            "metrics",
        ],
    ),
    ("protocol", &["protocol", "errors"]),
    ("conn", &["auth", "conn"]),
    ("pool", &["pool"]),
    ("execute", &["execute", "pubsub"]),
    ("session", &["session"]),
    (
        "top",
        &[
            "reshard",
            "state",
            "node_lock",
            "schema",
            "admin",
            "openmetrics",
            "listener",
            "workers",
        ],
    ),
];

/// (layer, position in the layer) of a module path, by its first segment.
fn place(module: &str) -> Option<(usize, usize)> {
    let top = module.split("::").next()?;
    PROXY_LAYERS
        .iter()
        .enumerate()
        .find_map(|(layer, (_, modules))| {
            modules
                .iter()
                .position(|m| *m == top)
                .map(|position| (layer, position))
        })
}

/// What is wrong with `from` naming `to`, if anything.
fn violation(from: &str, to: &str) -> Option<String> {
    let (Some(here), Some(there)) = (place(from), place(to)) else {
        return None;
    };
    let top = |m: &str| m.split("::").next().unwrap_or("").to_owned();
    if top(from) == top(to) {
        return None;
    }
    let name = |(layer, _): (usize, usize)| PROXY_LAYERS[layer].0;
    if there.0 > here.0 {
        Some(format!(
            "{from} (layer {}) names {to} of the higher layer {}",
            name(here),
            name(there)
        ))
    } else if there.0 == here.0 && there.1 > here.1 {
        Some(format!(
            "{from} names {to}, listed after it in the layer {}",
            name(here)
        ))
    } else {
        None
    }
}

/// Imports go down the layer table: no module names a higher layer, or a
/// module its own layer lists after it; every proxy module has a layer.
#[test]
fn proxy_imports_go_down_the_layers() {
    let dir = "proxy/src";
    let src = workspace().join(dir);
    let files = rust_files(dir);
    let skip =
        |file: &str| file.starts_with("bin/") || file.ends_with("tests.rs") || file == "main.rs";
    let graph = Graph::read(&src, &files, skip);
    let unplaced: Vec<&String> = graph
        .modules
        .iter()
        .filter(|m| !m.is_empty() && place(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "proxy modules with no layer (add them to PROXY_LAYERS and ARCHITECTURE.md): {unplaced:#?}"
    );
    let upward: Vec<String> = graph
        .edges
        .iter()
        .filter_map(|&(from, to)| violation(&graph.modules[from], &graph.modules[to]))
        .collect();
    assert!(upward.is_empty(), "imports up the layers: {upward:#?}");
}

#[test]
fn the_layer_rule_itself() {
    let cases = [
        ("session::routing", "execute::merge", None),
        (
            "conn::server",
            "session::params",
            Some("higher layer session"),
        ),
        ("pool", "pool::places", None),
        (
            "lock",
            "interrupt",
            Some("listed after it in the layer base"),
        ),
        ("interrupt", "lock", None),
        (
            "admin",
            "listener",
            Some("listed after it in the layer top"),
        ),
    ];
    for (from, to, expected) in cases {
        let found = violation(from, to);
        match expected {
            None => assert_eq!(found, None, "{from} -> {to}"),
            Some(part) => assert!(
                found.as_deref().is_some_and(|f| f.contains(part)),
                "{from} -> {to}: {found:?}"
            ),
        }
    }
}
