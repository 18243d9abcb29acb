//! The router on random SQL (issue 35): statements from a generator of
//! SQL shapes over sharded, omnisharded and unknown tables, and mutations
//! (byte flips, truncations, splices) of a corpus of real statements
//! (parser-ffi's corpus, the SQL of the router's route tests), through
//! what the proxy does with a statement's text: split it into statements,
//! look it up in the AST cache (parse, summarize, template), route it with
//! random bind parameters. Never a panic; the two parser engines route
//! alike; a warm cache (the template of another text of the same shape)
//! routes as a cold one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/fuzz.rs"]
#[allow(dead_code)]
mod fuzz;
#[path = "../../parser-ffi/tests/shared/corpus.rs"]
mod shared_corpus;

use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use router::cache::AstCache;
use router::config::Config;
use router::route::{ParamValue, Routed};
use router::sharding::{ParserEngine, Sharding};

use fuzz::{config, mutated};

const TABLES: &str = r#"
[[sharded_tables]]
database = "CLUSTER"
name = "orders"
column = "tenant_id"
data_type = "bigint"
[[sharded_tables]]
database = "CLUSTER"
name = "accounts"
column = "email"
data_type = "text"
[[sharded_tables]]
database = "CLUSTER"
name = "sessions"
column = "session_id"
data_type = "uuid"
[[sharded_tables]]
database = "CLUSTER"
name = "metrics"
column = "device_id"
hasher = "citus"
shard_count = 8
[[sharded_tables]]
database = "CLUSTER"
name = "stores"
column = "region_id"
data_type = "integer"
shard_count = 2
[[sharded_tables.mapping]]
values = [1, 2]
shard = 0
[[sharded_tables.mapping]]
values = [3, 4]
shard = 1
[[sharded_tables]]
database = "CLUSTER"
name = "archives"
column = "year"
data_type = "smallint"
shard_count = 2
[[sharded_tables.mapping]]
start = 2000
end = 2010
shard = 0
[[sharded_tables.mapping]]
start = 2010
shard = 1
[[sharded_tables]]
database = "CLUSTER"
column = "customer_id"
[[omnisharded_tables]]
database = "CLUSTER"
tables = ["countries", "ref.currencies"]
"#;

/// `prod` (2 databases), `big` (4), `strict` (2, cross-shard disabled),
/// `solo` (1).
fn clusters() -> &'static Vec<Arc<Sharding>> {
    static CLUSTERS: OnceLock<Vec<Arc<Sharding>>> = OnceLock::new();
    CLUSTERS.get_or_init(|| {
        let mut out = Vec::new();
        for (name, databases, strict) in [
            ("prod", 2, false),
            ("big", 4, false),
            ("strict", 2, true),
            ("solo", 1, false),
        ] {
            let mut toml = String::new();
            if strict {
                toml.push_str("[general]\ncross_shard_disabled = true\n");
            }
            for shard in 0..databases {
                toml.push_str(&format!(
                    "[[databases]]\nname = \"{name}\"\nhost = \"h\"\ndatabase_name = \"db{shard}\"\nshard = {shard}\n"
                ));
            }
            toml.push_str(&TABLES.replace("CLUSTER", name));
            let users = format!("[[users]]\nname = \"a\"\ndatabase = \"{name}\"\npassword = \"p\"\n");
            let config = Config::from_toml(&toml, &users).unwrap();
            out.push(Arc::clone(&config.clusters[name].sharding));
        }
        out
    })
}

/// The SQL string literals of the router's route tests.
fn test_statements() -> Vec<String> {
    const KEYWORDS: [&str; 16] = [
        "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "BEGIN", "COPY", "SET", "CREATE", "ALTER",
        "DROP", "EXPLAIN", "PREPARE", "EXECUTE", "DECLARE", "MERGE",
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/routes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.push(root.join("src/route/tests.rs"));
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let mut rest = text.as_str();
        while let Some(start) = rest.find('"') {
            let mut literal = String::new();
            let mut chars = rest[start + 1..].char_indices();
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some((_, 'n')) => literal.push('\n'),
                        Some((_, c)) => literal.push(c),
                        None => {}
                    },
                    '"' => {
                        end = start + 1 + i + 1;
                        break;
                    }
                    c => literal.push(c),
                }
            }
            rest = &rest[end.min(rest.len())..];
            if KEYWORDS.iter().any(|k| literal.starts_with(k)) {
                out.push(literal);
            }
        }
    }
    out
}

/// Every corpus statement: parser-ffi's and the route tests'.
fn corpus() -> &'static Vec<String> {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut all: Vec<String> = shared_corpus::corpus()
            .into_iter()
            .map(|(_, sql)| sql)
            .collect();
        all.extend(test_statements());
        all
    })
}

/// A value where a key may stand: literals of every key type, hostile
/// ones, parameters, NULL, casts.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        (0..5i64).prop_map(|v| v.to_string()),
        Just("99999999999999999999999".to_owned()),
        "'[a-z]{0,4}'",
        Just("'0000000-0000-0000-0000-000000000000'".to_owned()),
        Just("'11111111-1111-1111-1111-111111111111'::uuid".to_owned()),
        (1..4u8).prop_map(|n| format!("${n}")),
        (1..4u8).prop_map(|n| format!("${n}::bigint")),
        Just("NULL".to_owned()),
        Just("2::numeric".to_owned()),
        Just("-3".to_owned()),
        Just("'2'::text".to_owned()),
    ]
}

fn table() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop::sample::select(vec![
        ("orders", "tenant_id"),
        ("accounts", "email"),
        ("sessions", "session_id"),
        ("metrics", "device_id"),
        ("stores", "region_id"),
        ("archives", "year"),
        ("invoices", "customer_id"),
        ("countries", "code"),
        ("ref.currencies", "code"),
        ("unknown_t", "id"),
    ])
}

/// A WHERE clause on key `k` (and `x`), one to three conditions.
fn condition() -> impl Strategy<Value = String> {
    let one = (value(), value(), 0..6u8).prop_map(|(a, b, shape)| match shape {
        0 => format!("k = {a}"),
        1 => format!("k IN ({a}, {b})"),
        2 => format!("k = ANY({a})"),
        3 => format!("(k = {a} OR k = {b})"),
        4 => format!("k BETWEEN {a} AND {b}"),
        _ => format!("x > {a}"),
    });
    prop::collection::vec(one, 1..4).prop_map(|c| c.join(" AND "))
}

/// Statements of many shapes, with `k` the table's key column.
fn statement() -> impl Strategy<Value = String> {
    (table(), table(), condition(), value(), value(), 0..12u8, 0..4u8).prop_map(
        |((t, k), (u, uk), cond, a, b, shape, prefix)| {
            let cond = cond.replace("k ", &format!("{k} ")).replace("(k ", &format!("({k} "));
            let sql = match shape {
                0 => format!("SELECT * FROM {t} WHERE {cond}"),
                1 => format!("INSERT INTO {t} ({k}, x) VALUES ({a}, 1), ({b}, 2)"),
                2 => format!("UPDATE {t} SET x = {a} WHERE {cond}"),
                3 => format!("DELETE FROM {t} WHERE {cond} RETURNING *"),
                4 => format!("SELECT count(*), sum(x), avg(x), max(y) FROM {t} WHERE {cond} GROUP BY y HAVING count(*) > {a} ORDER BY 2 DESC LIMIT 3 OFFSET 1"),
                5 => format!("SELECT * FROM {t} a JOIN {u} b ON a.{k} = b.{uk} WHERE a.{cond}"),
                6 => format!("WITH c AS (SELECT * FROM {t} WHERE {cond}) SELECT * FROM c JOIN {u} ON true"),
                7 => format!("SELECT * FROM {t} WHERE {k} IN (SELECT {uk} FROM {u} WHERE {uk} = {a})"),
                8 => format!("SELECT {k} FROM {t} WHERE {cond} UNION ALL SELECT {uk} FROM {u}"),
                9 => format!("UPDATE {t} SET {k} = {a} WHERE {k} = {b}"),
                10 => format!("INSERT INTO {t} ({k}) SELECT {uk} FROM {u} ON CONFLICT ({k}) DO UPDATE SET x = {a}"),
                _ => format!("SELECT DISTINCT ON ({k}) * FROM {t} WHERE {cond} ORDER BY {k}, x FOR UPDATE"),
            };
            match prefix {
                0 => sql,
                1 => format!("/* pgdog_shard: {} */ {sql}", a.len() % 3),
                2 => format!("BEGIN; {sql}; COMMIT"),
                _ => format!("{sql}; SELECT 1"),
            }
        },
    )
}

/// Bind parameters of every kind: text, binary (ints of each width,
/// uuids, arrays, random bytes), NULL.
fn params() -> impl Strategy<Value = Vec<(u8, Vec<u8>)>> {
    let param = prop_oneof![
        Just((0u8, Vec::new())),
        "[0-9a-f-]{0,36}".prop_map(|t| (1u8, t.into_bytes())),
        any::<i64>().prop_map(|v| (1u8, v.to_string().into_bytes())),
        any::<i64>().prop_map(|v| (2u8, v.to_be_bytes().to_vec())),
        any::<i32>().prop_map(|v| (2u8, v.to_be_bytes().to_vec())),
        any::<i16>().prop_map(|v| (2u8, v.to_be_bytes().to_vec())),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| (2u8, b)),
        prop::collection::vec(any::<i64>(), 0..3).prop_map(|vs| {
            let mut out = Vec::new();
            for word in [1, 0, 20, vs.len() as i32, 1] {
                out.extend_from_slice(&word.to_be_bytes());
            }
            for v in vs {
                out.extend_from_slice(&8i32.to_be_bytes());
                out.extend_from_slice(&v.to_be_bytes());
            }
            (2u8, out)
        }),
    ];
    prop::collection::vec(param, 0..4)
}

fn as_params(params: &[(u8, Vec<u8>)]) -> Vec<ParamValue<'_>> {
    params
        .iter()
        .map(|(kind, bytes)| match kind {
            0 => ParamValue::Null,
            1 => ParamValue::Text(bytes),
            _ => ParamValue::Binary(bytes),
        })
        .collect()
}

/// What routing `sql` in `cache` gives, as text (routes or errors), per
/// cluster.
fn route(
    cache: &AstCache,
    engine: ParserEngine,
    sql: &str,
    params: &[ParamValue<'_>],
) -> Vec<String> {
    let _ = router::query_string::pieces(sql);
    let lookup = match cache.lookup(sql, engine) {
        Ok(lookup) => lookup,
        // The proxy sends a text it cannot look up anywhere (`Any`): the
        // server gives the client its syntax error, an empty one answers
        // EmptyQueryResponse.
        Err(_) => return vec!["Any false".to_owned(); clusters().len()],
    };
    let params = lookup.params(params);
    clusters()
        .iter()
        .map(
            |sharding| match lookup.entry.route(&params, &lookup.overrides, sharding) {
                Ok(Routed { route, write, .. }) => format!("{route:?} {write}"),
                Err(error) => format!("error: {error}"),
            },
        )
        .collect()
}

/// A statement routed by both engines, cold and after a warm-up text of
/// the same shape: the same answers.
fn check(sql: &str, warm_up: &str, params: &[(u8, Vec<u8>)]) -> Result<(), TestCaseError> {
    let params = as_params(params);
    let cold = route(
        &AstCache::new(100, 1 << 20),
        ParserEngine::ZeroCopy,
        sql,
        &params,
    );
    let protobuf = route(
        &AstCache::new(100, 1 << 20),
        ParserEngine::PgQueryProtobuf,
        sql,
        &params,
    );
    prop_assert_eq!(&cold, &protobuf, "engines differ on {:?}", sql);
    let warm_cache = AstCache::new(100, 1 << 20);
    let _ = route(&warm_cache, ParserEngine::ZeroCopy, warm_up, &params);
    let warm = route(&warm_cache, ParserEngine::ZeroCopy, sql, &params);
    prop_assert_eq!(
        &cold,
        &warm,
        "warm cache (after {:?}) differs on {:?}",
        warm_up,
        sql
    );
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    /// Generated statements, routed after another of the same shape.
    #[test]
    fn generated_statements_route_alike(
        (sql, warm_up) in (statement(), any::<u64>()).prop_map(|(sql, seed)| {
            // The same text with other literal digits: the same template.
            let digit = char::from(b'0' + (seed % 10) as u8);
            let other: String = sql.chars().map(|c| if c.is_ascii_digit() && c != '0' { digit } else { c }).collect();
            (sql, other)
        }),
        params in params(),
    ) {
        check(&sql, &warm_up, &params)?;
    }

    /// Mutations of real statements.
    #[test]
    fn mutated_corpus_statements_route_alike(
        bytes in mutated(prop::sample::select(corpus().clone()).prop_map(String::into_bytes), 4),
        params in params(),
    ) {
        let sql = String::from_utf8_lossy(&bytes);
        check(&sql, &sql, &params)?;
    }

    /// Two corpus statements spliced together.
    #[test]
    fn spliced_corpus_statements_route_alike(
        a in prop::sample::select(corpus().clone()),
        b in prop::sample::select(corpus().clone()),
        at in any::<prop::sample::Index>(),
        params in params(),
    ) {
        let cut = a.char_indices().map(|(i, _)| i).nth(at.index(a.chars().count().max(1))).unwrap_or(0);
        let sql = format!("{}{}", &a[..cut], b);
        check(&sql, &a, &params)?;
    }
}

#[test]
fn the_corpus_is_loaded() {
    assert!(corpus().len() > 1000, "{}", corpus().len());
    assert!(test_statements().len() > 300, "{}", test_statements().len());
}
