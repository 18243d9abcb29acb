//! Route bench: what routing one statement costs in the proxy, per path,
//! next to the parse it saves. For each statement of the messaging and
//! pgbench set, on a 2-database cluster with `[[sharded_tables]]`:
//! - `parse`: parser-ffi's zero-copy parse alone (the C parser),
//! - `miss`: parse + summary extraction + route (a cache miss),
//! - `miss_protobuf`: the same with `query_parser_engine = "pg_query_protobuf"`
//!   (pg_query's protobuf parse and the extractor over its structs),
//! - `hit`: AST cache lookup of the text + route with the entry's plan (a
//!   repeated simple query or an unnamed prepared statement),
//! - `prepared`: route alone from the entry a statement already holds (a
//!   Bind of a named prepared statement),
//!
//! and for simple-protocol statements carrying literals, `literal_hit`: the
//! cache lookup of a text with new literal values (templated: the literal
//! lexer builds the key and reads the values, no parse) + route.
//! Criterion reports each; the closing table times them interleaved with
//! ns/op and `hit / parse` (target: under 10%).
//!
//! `cargo bench -p bench --bench route`.

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

use std::sync::Arc;

use bench::route_set::{prepared_set, sharding, text_params};
use criterion::{black_box, Criterion};
use parser_ffi::ParseTree;
use router::cache::AstCache;
use router::route::{self, Overrides, ParamValue};
use router::sharding::{ParserEngine, Sharding};

/// Simple-protocol statements with literals: (name, first text, a text with
/// other values that must hit the same entry).
fn literal_set() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        (
            "pgbench_select",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 81234;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 4242;",
        ),
        (
            "pgbench_update",
            "UPDATE pgbench_accounts SET abalance = abalance + -4123 WHERE aid = 81234;",
            // pgbench's delta is signed: a minus sign is part of the key, so
            // negative and positive deltas make two entries; this pair shares one.
            "UPDATE pgbench_accounts SET abalance = abalance + -2210 WHERE aid = 4242;",
        ),
        (
            "tenant_insert",
            "INSERT INTO orders (tenant_id, id, amount, note) VALUES (17, 12345, 10.5, 'first order')",
            "INSERT INTO orders (tenant_id, id, amount, note) VALUES (99, 54321, 7.25, 'it''s another')",
        ),
    ]
}

/// Parse, summarize and route: a cache miss.
fn miss(sql: &str, params: &[ParamValue<'_>], sharding: &Sharding) -> bool {
    let Ok(tree) = ParseTree::parse(sql) else {
        return false;
    };
    let Ok(summary) = router::extract::summarize(&tree) else {
        return false;
    };
    route::route_all(&summary, params, &Overrides::default(), sharding).is_ok()
}

/// A cache miss with the protobuf engine.
fn miss_protobuf(sql: &str, params: &[ParamValue<'_>], sharding: &Sharding) -> bool {
    let Ok(tree) = parser_ffi::parse_protobuf(sql) else {
        return false;
    };
    let Ok(summary) = router::extract::summarize_protobuf(&tree) else {
        return false;
    };
    route::route_all(&summary, params, &Overrides::default(), sharding).is_ok()
}

/// Look up in the cache and route with the entry's plan: a hit once warm.
fn hit(cache: &AstCache, sql: &str, params: &[ParamValue<'_>], sharding: &Arc<Sharding>) -> bool {
    let Ok(lookup) = cache.lookup(sql, ParserEngine::ZeroCopy) else {
        return false;
    };
    let params = lookup.params(params);
    lookup
        .entry
        .route(&params, &lookup.overrides, sharding)
        .is_ok()
}

fn criterion_benches(c: &mut Criterion, sharding: &Arc<Sharding>) {
    let cache = AstCache::new(10_000, 64 << 20);
    for (name, sql, params) in prepared_set() {
        let params = text_params(&params);
        let mut group = c.benchmark_group(format!("route/{name}"));
        group.bench_function("parse", |b| {
            b.iter(|| ParseTree::parse(black_box(sql)).is_ok())
        });
        group.bench_function("miss", |b| {
            b.iter(|| miss(black_box(sql), &params, sharding))
        });
        group.bench_function("miss_protobuf", |b| {
            b.iter(|| miss_protobuf(black_box(sql), &params, sharding))
        });
        group.bench_function("hit", |b| {
            b.iter(|| hit(&cache, black_box(sql), &params, sharding))
        });
        if let Ok(lookup) = cache.lookup(sql, ParserEngine::ZeroCopy) {
            group.bench_function("prepared", |b| {
                b.iter(|| {
                    black_box(&lookup.entry)
                        .route(&params, &Overrides::default(), sharding)
                        .is_ok()
                })
            });
        }
        group.finish();
    }
    for (name, first, second) in literal_set() {
        let mut group = c.benchmark_group(format!("route_literals/{name}"));
        black_box(hit(&cache, first, &[], sharding));
        group.bench_function("parse", |b| {
            b.iter(|| ParseTree::parse(black_box(second)).is_ok())
        });
        group.bench_function("literal_hit", |b| {
            b.iter(|| hit(&cache, black_box(second), &[], sharding))
        });
        group.finish();
    }
}

fn print_table(sharding: &Arc<Sharding>) {
    let cache = AstCache::new(10_000, 64 << 20);
    println!();
    println!("Table: interleaved timing (41 rounds of ~4 ms batches per variant, rotating order);");
    println!("ns/op are medians; hit/parse = median of per-round ratios (target < 0.10).");
    println!();
    println!(
        "{:<18} {:>10} {:>10} {:>14} {:>10} {:>10} {:>10} {:>12}",
        "statement", "parse", "miss", "miss_protobuf", "hit", "prepared", "hit/parse", "prep/parse"
    );
    for (name, sql, params) in prepared_set() {
        let params = text_params(&params);
        let Ok(lookup) = cache.lookup(sql, ParserEngine::ZeroCopy) else {
            println!("{name:<18} does not parse");
            continue;
        };
        let routed = route::route_all(
            &lookup.entry.summary,
            &params,
            &Overrides::default(),
            sharding,
        );
        let (ns, vs_parse) = bench::timing::interleaved(&[
            &|| {
                black_box(ParseTree::parse(black_box(sql)).is_ok());
            },
            &|| {
                black_box(miss(black_box(sql), &params, sharding));
            },
            &|| {
                black_box(miss_protobuf(black_box(sql), &params, sharding));
            },
            &|| {
                black_box(hit(&cache, black_box(sql), &params, sharding));
            },
            &|| {
                black_box(
                    black_box(&lookup.entry)
                        .route(&params, &Overrides::default(), sharding)
                        .is_ok(),
                );
            },
        ]);
        println!(
            "{name:<18} {:>10.0} {:>10.0} {:>14.0} {:>10.0} {:>10.0} {:>10.3} {:>12.3}   -> {:?}",
            ns[0],
            ns[1],
            ns[2],
            ns[3],
            ns[4],
            1.0 / vs_parse[3],
            1.0 / vs_parse[4],
            routed.map(|r| r.route),
        );
    }
    println!();
    println!("simple protocol with literals: literal_hit = template key + literal values + route");
    println!(
        "{:<18} {:>10} {:>12} {:>16} {:>10}",
        "statement", "parse", "literal_hit", "literal_hit/parse", "templated"
    );
    for (name, first, second) in literal_set() {
        black_box(hit(&cache, first, &[], sharding));
        let templated = cache
            .lookup(second, ParserEngine::ZeroCopy)
            .map(|l| l.hit && l.entry.templated)
            .unwrap_or(false);
        let (ns, vs_parse) = bench::timing::interleaved(&[
            &|| {
                black_box(ParseTree::parse(black_box(second)).is_ok());
            },
            &|| {
                black_box(hit(&cache, black_box(second), &[], sharding));
            },
        ]);
        println!(
            "{name:<18} {:>10.0} {:>12.0} {:>16.3} {:>10}",
            ns[0],
            ns[1],
            1.0 / vs_parse[1],
            templated
        );
    }
    let stats = cache.stats();
    println!();
    println!(
        "cache: {} entries, {} bytes, {} hits, {} misses, {} evictions",
        stats.entries, stats.bytes, stats.hits, stats.misses, stats.evictions
    );
}

fn main() {
    let sharding = sharding();
    let mut criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    criterion_benches(&mut criterion, &sharding);
    criterion.final_summary();
    // `--profile-time N` (criterion's mode for profilers) runs the selected
    // benches only: the table would drown them in the profile.
    if !std::env::args().any(|arg| arg == "--profile-time") {
        print_table(&sharding);
    }
}
