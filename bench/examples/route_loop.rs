//! Runs one step of routing over one route-bench statement in a loop, for
//! callgrind (`bench/route_instructions.sh`) and perf:
//! `route_loop MODE STATEMENT ITERATIONS`, MODE one of `parse` (the parse
//! alone), `summary` (parse + summary), `miss` (parse + summary + route:
//! a cache miss), `prepared` (route from the cache entry a statement
//! already holds: a Bind of a named prepared statement), `hit` (look the
//! text up in a warm AST cache and route with the entry's plan: a repeated
//! simple query or unnamed prepared statement); STATEMENT a name
//! of [`bench::route_set::prepared_set`]. Each mode includes the one
//! before it, so a step's own cost is the difference.

use router::cache::AstCache;
use router::route::{self, Overrides};
use router::sharding::ParserEngine;

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(name), Some(iterations)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: route_loop parse|summary|miss|prepared|hit STATEMENT ITERATIONS");
        std::process::exit(2);
    };
    let iterations: usize = iterations.parse().unwrap_or(1000);
    let set = bench::route_set::prepared_set();
    let Some((_, sql, params)) = set.iter().find(|(n, ..)| n == name) else {
        eprintln!("unknown statement {name}");
        std::process::exit(2);
    };
    let params = bench::route_set::text_params(params);
    let sharding = bench::route_set::sharding();
    let cache = AstCache::new(100, 1 << 20);
    let Ok(lookup) = cache.lookup(sql, ParserEngine::ZeroCopy) else {
        eprintln!("{name} does not parse");
        std::process::exit(1);
    };
    let mut work = 0usize;
    for _ in 0..iterations {
        work += match mode.as_str() {
            "prepared" => usize::from(
                lookup
                    .entry
                    .route(&params, &lookup.overrides, &sharding)
                    .is_ok(),
            ),
            "hit" => hit(&cache, sql, &params, &sharding),
            _ => miss(mode, sql, &params, &sharding),
        };
    }
    println!("{work}");
}

/// A cache hit: look the text up and route with the entry's plan.
fn hit(
    cache: &AstCache,
    sql: &str,
    params: &[route::ParamValue<'_>],
    sharding: &std::sync::Arc<router::sharding::Sharding>,
) -> usize {
    let Ok(lookup) = cache.lookup(sql, ParserEngine::ZeroCopy) else {
        return 0;
    };
    let params = lookup.params(params);
    usize::from(
        lookup
            .entry
            .route(&params, &lookup.overrides, sharding)
            .is_ok(),
    )
}

/// The first `mode` steps of a cache miss; what they give, to keep them.
fn miss(
    mode: &str,
    sql: &str,
    params: &[route::ParamValue<'_>],
    sharding: &router::sharding::Sharding,
) -> usize {
    let Ok(tree) = parser_ffi::ParseTree::parse(sql) else {
        return 0;
    };
    if mode == "parse" {
        return tree.statements().count();
    }
    let Ok(summary) = router::extract::summarize(&tree) else {
        return 0;
    };
    if mode == "summary" {
        return summary.statements.len();
    }
    usize::from(route::route_all(&summary, params, &Overrides::default(), sharding).is_ok())
}
