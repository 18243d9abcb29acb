//! Parser bench: for each statement of the shared set, in one run,
//! - `protobuf`: pg_query's parse (C encodes protobuf, prost decodes),
//! - `raw`: `parse_raw` (the same structs built straight from the C tree),
//! - `zero_copy_walk`: parse to a C tree + a walk collecting tables and
//!   `column = value` predicates, with no conversion at all,
//! - `floor`: libpg_query's raw parse alone (the physical limit),
//!
//! and deparse: pg_query's protobuf deparse, our deparse of the same protobuf
//! structs (rebuilt as C nodes, no encoding), and the C deparser alone on a
//! tree we parsed. Criterion reports each on its own; the closing table times
//! the variants interleaved (this machine is noisy, and ratios of runs taken
//! minutes apart are not trustworthy), with ns/op, QPS and the ratios.
//!
//! `cargo bench -p bench --bench parser` (criterion's own flags work too).

use std::ffi::CString;

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;
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
                    black_box(&bench::walk::tables_and_predicates(tree));
                }
                tree.is_ok()
            })
        });
        if let Ok(tree) = ParseTree::parse(sql) {
            // The walk alone, over a tree parsed once.
            group.bench_function("walk", |b| {
                b.iter(|| {
                    bench::walk::tables_and_predicates(black_box(&tree))
                        .tables
                        .len()
                })
            });
        }
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

fn print_table(queries: &[(&'static str, String)]) {
    println!();
    println!("Table: interleaved timing (41 rounds of ~4 ms batches per variant, rotating order);");
    println!("ns/op are medians, ratios are medians of per-round ratios.");
    println!();
    println!("parse: ns/op (QPS) and ratio: x = protobuf / variant (faster), fl = variant / floor");
    println!(
        "{:<18} {:>16} {:>28} {:>28} {:>16}",
        "query", "protobuf", "raw", "zero_copy_walk", "floor"
    );
    let mut speedups = Vec::new();
    let mut walk_over_floor = Vec::new();
    // The zero-copy parse without the walk: how the walk's cost splits off.
    let mut parse_over_floor = Vec::new();
    for (name, sql) in queries {
        let c_sql = CString::new(sql.as_str()).unwrap_or_default();
        let (ns, vs_protobuf) = bench::timing::interleaved(&[
            &|| {
                black_box(parse_protobuf(black_box(sql)).is_ok());
            },
            &|| {
                black_box(parse_raw(black_box(sql)).is_ok());
            },
            &|| {
                if let Ok(tree) = ParseTree::parse(black_box(sql)) {
                    black_box(&bench::walk::tables_and_predicates(&tree));
                }
            },
            &|| {
                black_box(parser_ffi::bench_floor_raw_parse(black_box(&c_sql)));
            },
        ]);
        let (_, vs_floor) = bench::timing::interleaved(&[
            &|| {
                black_box(parser_ffi::bench_floor_raw_parse(black_box(&c_sql)));
            },
            &|| {
                black_box(parse_raw(black_box(sql)).is_ok());
            },
            &|| {
                if let Ok(tree) = ParseTree::parse(black_box(sql)) {
                    black_box(&bench::walk::tables_and_predicates(&tree));
                }
            },
            &|| {
                black_box(ParseTree::parse(black_box(sql)).is_ok());
            },
        ]);
        // vs_floor holds floor / variant; report variant / floor.
        let (raw_fl, walk_fl) = (1.0 / vs_floor[1], 1.0 / vs_floor[2]);
        parse_over_floor.push(1.0 / vs_floor[3]);
        speedups.push(vs_protobuf[1]);
        walk_over_floor.push(walk_fl);
        let qps = |ns: f64| format!("{:.0}/s", 1e9 / ns);
        println!(
            "{name:<18} {:>16} {:>28} {:>28} {:>16}",
            format!("{:.0}", ns[0]),
            format!("{:.0} ({:.1}x, {:.2} fl)", ns[1], vs_protobuf[1], raw_fl),
            format!("{:.0} ({:.1}x, {:.3} fl)", ns[2], vs_protobuf[2], walk_fl),
            format!("{:.0}", ns[3]),
        );
        println!(
            "{:<18} {:>16} {:>28} {:>28} {:>16}",
            "",
            qps(ns[0]),
            qps(ns[1]),
            qps(ns[2]),
            qps(ns[3])
        );
    }
    println!(
        "raw vs protobuf: geomean {:.2}x faster, min {:.2}x; zero-copy parse + walk vs floor: geomean {:.3}, max {:.3}",
        bench::timing::geomean(&speedups),
        speedups.iter().copied().fold(f64::INFINITY, f64::min),
        bench::timing::geomean(&walk_over_floor),
        walk_over_floor.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "zero-copy parse alone (no walk) vs floor: geomean {:.3}, max {:.3}",
        bench::timing::geomean(&parse_over_floor),
        parse_over_floor.iter().copied().fold(0.0, f64::max),
    );

    println!();
    println!("deparse: ns/op; pg_query = protobuf encode + C decode + C deparser;");
    println!("protobuf_direct = our protobuf structs -> C nodes + C deparser; tree = the C deparser alone on our tree");
    let mut vs_pg_query = Vec::new();
    let mut direct_over_c = Vec::new();
    for (name, sql) in queries {
        let (Ok(protobuf), Ok(tree)) = (parse_protobuf(sql), ParseTree::parse(sql)) else {
            continue;
        };
        let (ns, vs_tree) = bench::timing::interleaved(&[
            &|| {
                black_box(deparse(black_box(&tree)).is_ok());
            },
            &|| {
                black_box(parser_ffi::deparse_protobuf(black_box(&protobuf)).is_ok());
            },
            &|| {
                black_box(parser_ffi::deparse_pg_query(black_box(&protobuf)).is_ok());
            },
        ]);
        let (direct_c, pg_c) = (1.0 / vs_tree[1], 1.0 / vs_tree[2]);
        vs_pg_query.push(pg_c / direct_c);
        direct_over_c.push(direct_c);
        println!(
            "{name:<18} tree {:>8.0}  protobuf_direct {:>8.0} ({direct_c:.2}x the C deparser)  pg_query {:>8.0} ({pg_c:.2}x)",
            ns[0], ns[1], ns[2]
        );
    }
    println!(
        "protobuf_direct vs pg_query: geomean {:.1}x faster; protobuf_direct vs the C deparser: geomean {:.2}x, max {:.2}x",
        bench::timing::geomean(&vs_pg_query),
        bench::timing::geomean(&direct_over_c),
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
    // `--profile-time N` (criterion's mode for profilers) runs the selected
    // benches only: the table would drown them in the profile.
    if !std::env::args().any(|arg| arg == "--profile-time") {
        print_table(&queries);
    }
}
