//! Parser bench: for each statement of the shared set, in one run,
//! - `protobuf`: pg_query's parse (C encodes protobuf, prost decodes),
//! - `raw`: `parse_raw` (the same structs built straight from the C tree),
//! - `zero_copy_walk`: parse to a C tree + a walk collecting tables and
//!   `column = value` predicates, with no conversion at all,
//! - `floor`: libpg_query's raw parse alone (the physical limit),
//!
//! and deparse: pg_query's protobuf deparse, our deparse of the same protobuf
//! structs (rebuilt as C nodes, no encoding), and the C deparser alone on a
//! tree we parsed. Then one table with ns/op, QPS and the ratios.
//!
//! `cargo bench -p bench --bench parser` (criterion's own flags work too).

use std::ffi::CString;

#[global_allocator]
static ALLOCATOR: bench::Allocator = mimalloc::MiMalloc;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{black_box, Criterion};
use parser_ffi::{deparse, parse_protobuf, parse_raw, ParseTree};

fn parse(c: &mut Criterion, queries: &[(&'static str, String)]) {
    for (name, sql) in queries {
        let mut group = c.benchmark_group(format!("parse/{name}"));
        let c_sql = CString::new(sql.as_str()).unwrap_or_default();
        group.bench_function("protobuf", |b| b.iter(|| parse_protobuf(black_box(sql))));
        group.bench_function("raw", |b| b.iter(|| parse_raw(black_box(sql))));
        group.bench_function("zero_copy_walk", |b| {
            b.iter(|| {
                let tree = ParseTree::parse(black_box(sql));
                if let Ok(tree) = &tree {
                    black_box(bench::walk::tables_and_predicates(tree));
                }
                tree.is_ok()
            })
        });
        group.bench_function("floor", |b| {
            b.iter(|| parser_ffi::bench_floor_raw_parse(black_box(&c_sql)))
        });
        group.finish();
    }
}

fn deparse_benches(c: &mut Criterion, queries: &[(&'static str, String)]) {
    for (name, sql) in queries {
        let (Ok(protobuf), Ok(tree)) = (parse_protobuf(sql), ParseTree::parse(sql)) else {
            continue;
        };
        let mut group = c.benchmark_group(format!("deparse/{name}"));
        group.bench_function("pg_query", |b| {
            b.iter(|| parser_ffi::deparse_pg_query(black_box(&protobuf)))
        });
        group.bench_function("protobuf_direct", |b| {
            b.iter(|| parser_ffi::deparse_protobuf(black_box(&protobuf)))
        });
        group.bench_function("tree", |b| b.iter(|| deparse(black_box(&tree))));
        group.finish();
    }
}

/// Where criterion keeps its results (the same rule criterion applies).
fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("criterion")
}

/// Median ns/op of one benchmark from criterion's estimates, if it ran.
fn median_ns(group: &str, function: &str) -> Option<f64> {
    // Criterion turns the "/" of a group name into "_" in its directory names.
    let path = criterion_home()
        .join(group.replace('/', "_"))
        .join(function)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    // {"mean":{...},"median":{"confidence_interval":{...},"point_estimate":123.4,...},...}
    let median = &text[text.find("\"median\"")?..];
    let value = &median[median.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}

fn geomean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

fn print_table(queries: &[(&'static str, String)]) {
    println!();
    println!("parse: median ns/op (QPS), ratio vs protobuf (x faster), ratio vs floor (x the C parser alone)");
    println!(
        "{:<18} {:>10} {:>22} {:>30} {:>12}",
        "query", "protobuf", "raw", "zero_copy_walk", "floor"
    );
    let mut speedups = Vec::new();
    let mut walk_over_floor = Vec::new();
    for (name, _) in queries {
        let group = format!("parse/{name}");
        let get = |f| median_ns(&group, f);
        let (Some(pb), Some(raw), Some(walk), Some(floor)) = (
            get("protobuf"),
            get("raw"),
            get("zero_copy_walk"),
            get("floor"),
        ) else {
            println!("{name:<18} (not measured in this run)");
            continue;
        };
        speedups.push(pb / raw);
        walk_over_floor.push(walk / floor);
        println!(
            "{name:<18} {pb:>10.0} {:>22} {:>30} {:>12}",
            format!("{raw:.0} ({:.1}x pb, {:.2}x fl)", pb / raw, raw / floor),
            format!("{walk:.0} ({:.1}x pb, {:.3}x fl)", pb / walk, walk / floor),
            format!("{floor:.0}"),
        );
        println!(
            "{:<18} {:>10} {:>22} {:>30} {:>12}",
            "",
            format!("{:.0}/s", 1e9 / pb),
            format!("{:.0}/s", 1e9 / raw),
            format!("{:.0}/s", 1e9 / walk),
            format!("{:.0}/s", 1e9 / floor)
        );
    }
    println!(
        "raw vs protobuf: geomean {:.2}x faster, min {:.2}x; zero-copy walk vs floor: geomean {:.3}x, max {:.3}x",
        geomean(&speedups),
        speedups.iter().copied().fold(f64::INFINITY, f64::min),
        geomean(&walk_over_floor),
        walk_over_floor.iter().copied().fold(0.0, f64::max),
    );

    println!();
    println!("deparse: median ns/op; pg_query = protobuf encode + C decode + C deparser,");
    println!("protobuf_direct = our protobuf structs -> C nodes + C deparser, tree = C deparser alone on our tree");
    let mut vs_pg_query = Vec::new();
    let mut direct_over_c = Vec::new();
    for (name, _) in queries {
        let group = format!("deparse/{name}");
        let get = |f| median_ns(&group, f);
        if let (Some(pg), Some(direct), Some(tree)) =
            (get("pg_query"), get("protobuf_direct"), get("tree"))
        {
            vs_pg_query.push(pg / direct);
            direct_over_c.push(direct / tree);
            println!(
                "{name:<18} pg_query {pg:>8.0}  protobuf_direct {direct:>8.0} ({:.1}x faster, {:.2}x C)  tree {tree:>8.0} ({:.1}x faster than pg_query)",
                pg / direct,
                direct / tree,
                pg / tree
            );
        }
    }
    println!(
        "protobuf_direct vs pg_query: geomean {:.1}x faster; protobuf_direct vs the C deparser: geomean {:.2}x, max {:.2}x",
        geomean(&vs_pg_query),
        geomean(&direct_over_c),
        direct_over_c.iter().copied().fold(0.0, f64::max)
    );
}

fn main() {
    let queries = bench::parser_queries();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    parse(&mut criterion, &queries);
    deparse_benches(&mut criterion, &queries);
    criterion.final_summary();
    print_table(&queries);
}
