//! Routing end to end: SQL text -> parser-ffi -> summary -> route, one line per
//! case, against clusters loaded from `pgdog.toml` text.
//!
//! Expected databases are golden values computed on PostgreSQL 15, not by the
//! code under test: `postgres` hashing is
//! `((hashint8extended(v, 8816678312871386365)::numeric + 2^64
//! + 5305509591434766563) % 2^64) % modulus` (checked against
//! `satisfies_hash_partition` for modulus 2), `hashtextextended` and
//! `uuid_hash_extended` alike; `citus` is
//! `(hashint8(v) + 2^31) / (2^32 / shard_count)`. The values used:
//!
//! | bigint | 1 | 2 | 3 | 4 | 5 | 12 | 13 | 42 | 100 | -1 | -7 | 2^63-1 | -2^63 |
//! |---|---|---|---|---|---|---|---|---|---|---|---|---|---|
//! | mod 2 | 0 | 0 | 1 | 1 | 1 | 0 | 0 | 0 | 1 | 1 | 0 | 0 | 1 |
//! | mod 4 | 0 | 2 | 1 | 3 | 1 | 0 | 2 | 2 | 1 | 1 | 2 | 2 | 3 |
//! | citus@8 index | 0 | 6 | 3 | 2 | 1 | 7 | - | 6 | 4 | 4 | - | - | - |
//!
//! text mod 2 / mod 4: `'foo'` 0/0, `''` 0/2, `'bar'` 0/2, `'acme'` 1/3,
//! `'e'` 1/1. uuid `0000...` 1/1, `1111...` 0/0.
//!
//! Expected routes are written `"any"`, `"all"`, `"N"` (one database), `"N,M"`
//! (several), prefixed `"w "` when the statement writes, or `"err: text"`
//! for an error whose message contains `text`; suffixed `" m"` when the route
//! touches a moving logical shard (`routes/moving.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "routes/clusters.rs"]
mod clusters;
#[path = "routes/joins.rs"]
mod joins;
#[path = "routes/keys.rs"]
mod keys;
#[path = "routes/moving.rs"]
mod moving;
#[path = "routes/resolution.rs"]
mod resolution;
#[path = "routes/statements.rs"]
mod statements;
#[path = "routes/sublinks.rs"]
mod sublinks;
#[path = "routes/tables.rs"]
mod tables;
#[path = "routes/writes.rs"]
mod writes;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use router::config::Config;
use router::route::{route_all, Overrides, ParamValue, Route, Routed};
use router::sharding::Sharding;

const TABLES: &str = r#"
[[sharded_tables]]
database = "CLUSTER"
name = "orders"
column = "tenant_id"
data_type = "bigint"

[[sharded_tables]]
database = "CLUSTER"
name = "order_items"
column = "tenant_id"

[[sharded_tables]]
database = "CLUSTER"
name = "users"
column = "id"

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
PLACEMENT

[[sharded_tables]]
database = "CLUSTER"
name = "stores"
column = "region_id"
data_type = "integer"
shard_count = 2
[[sharded_tables.mapping]]
kind = "list"
values = [1, 2]
shard = 0
[[sharded_tables.mapping]]
kind = "list"
values = [3, 4]
shard = 1

[[sharded_tables]]
database = "CLUSTER"
name = "archives"
column = "year"
data_type = "integer"
shard_count = 2
[[sharded_tables.mapping]]
kind = "range"
start = 2000
end = 2010
shard = 0
[[sharded_tables.mapping]]
kind = "range"
start = 2010
end = 2020
shard = 1

[[sharded_tables]]
database = "CLUSTER"
name = "counters"
column = "partition_id"

[[sharded_tables]]
database = "CLUSTER"
name = "consumer_offsets"
column = "partition_id"

[[sharded_tables]]
database = "CLUSTER"
column = "customer_id"

[[sharded_tables]]
database = "CLUSTER"
name_prefix = "events_p"

[[sharded_tables]]
database = "CLUSTER"
name_prefix = "queue_p"

[[sharded_tables]]
database = "CLUSTER"
name_prefix = "done_p"

[[sharded_tables]]
database = "CLUSTER"
schema = "log"
name_prefix = "part_"

[[sharded_tables]]
database = "CLUSTER"
name = "lineitem"
column = "l_orderkey"
data_type = "bigint"

[[sharded_tables]]
database = "CLUSTER"
name = "torders"
column = "o_orderkey"
data_type = "bigint"

[[omnisharded_tables]]
database = "CLUSTER"
tables = ["countries", "ref.currencies", "customer"]
"#;

/// The columns `cat` knows (TPC-H's `lineitem` and `orders`, the latter as
/// `torders`); `countries` and `accounts` are left out on purpose.
const CATALOG: &[(&str, &[&str])] = &[
    (
        "lineitem",
        &[
            "l_orderkey",
            "l_partkey",
            "l_quantity",
            "l_commitdate",
            "l_receiptdate",
        ],
    ),
    (
        "torders",
        &[
            "o_orderkey",
            "o_custkey",
            "o_orderdate",
            "o_orderpriority",
            "o_totalprice",
        ],
    ),
    ("customer", &["c_custkey", "c_name"]),
    ("users", &["id", "name", "grp", "score"]),
    ("orders", &["tenant_id", "id", "amount", "country"]),
    ("order_items", &["tenant_id", "order_id", "amount"]),
];

fn catalog() -> router::catalog::Catalog {
    router::catalog::Catalog::from_rows(CATALOG.iter().map(|(name, columns)| {
        router::catalog::CatalogRow::Table(router::catalog::Table {
            schema: "public".into(),
            name: (*name).into(),
            columns: columns.iter().map(|c| (*c).into()).collect(),
            primary_key: Vec::new(),
        })
    }))
}

/// `prod`: 2 databases. `big`: 4 databases (citus placement default). `strict`:
/// 2 databases with `cross_shard_disabled`. `solo`: 1 database. `cat`: `prod`
/// with a catalog of [`CATALOG`]'s tables.
fn clusters() -> &'static BTreeMap<String, Sharding> {
    static CLUSTERS: OnceLock<BTreeMap<String, Sharding>> = OnceLock::new();
    CLUSTERS.get_or_init(|| {
        let mut out = BTreeMap::new();
        for (name, databases, placement, strict) in [
            ("prod", 2, "placement = [0, 1, 1, 0, 0, 1, 1, 0]", false),
            ("big", 4, "", false),
            ("strict", 2, "placement = [0, 1, 1, 0, 0, 1, 1, 0]", true),
            ("solo", 1, "", false),
        ] {
            let mut toml = String::new();
            if strict {
                toml.push_str("[general]\ncross_shard_disabled = true\n");
            }
            for shard in 0..databases {
                toml.push_str(&format!(
                    "[[databases]]\nname = \"{name}\"\nhost = \"127.0.0.1\"\ndatabase_name = \"db{shard}\"\nshard = {shard}\n"
                ));
            }
            toml.push_str(
                &TABLES
                    .replace("CLUSTER", name)
                    .replace("PLACEMENT", placement),
            );
            let users = format!("[[users]]\nname = \"app\"\ndatabase = \"{name}\"\npassword = \"pw\"\n");
            let config = Config::from_toml(&toml, &users).expect("fixture config loads");
            let sharding = Sharding::clone(&config.clusters[name].sharding);
            assert_eq!(sharding.databases, databases);
            out.insert(name.to_owned(), sharding);
        }
        let mut cat = out["prod"].clone();
        cat.catalog = Some(std::sync::Arc::new(catalog()));
        out.insert("cat".to_owned(), cat);
        out
    })
}

/// A bind parameter.
enum P {
    /// Text format.
    T(&'static str),
    /// Binary format.
    B(Vec<u8>),
    N,
}
use P::{N, T};

fn i8b(v: i64) -> P {
    P::B(v.to_be_bytes().to_vec())
}
fn i4b(v: i32) -> P {
    P::B(v.to_be_bytes().to_vec())
}
fn i2b(v: i16) -> P {
    P::B(v.to_be_bytes().to_vec())
}
fn bytes(v: &[u8]) -> P {
    P::B(v.to_vec())
}
/// A binary one-dimensional int8[] (element oid 20); `None` is a NULL element.
fn arr8(values: &[Option<i64>]) -> P {
    let mut out = Vec::new();
    let has_null = values.iter().any(Option::is_none);
    for word in [1, i32::from(has_null), 20, values.len() as i32, 1] {
        out.extend_from_slice(&word.to_be_bytes());
    }
    for value in values {
        match value {
            Some(v) => {
                out.extend_from_slice(&8i32.to_be_bytes());
                out.extend_from_slice(&v.to_be_bytes());
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    P::B(out)
}
/// A binary one-dimensional text[] (element oid 25).
fn arr_text(values: &[&str]) -> P {
    let mut out = Vec::new();
    for word in [1, 0, 25, values.len() as i32, 1] {
        out.extend_from_slice(&word.to_be_bytes());
    }
    for value in values {
        out.extend_from_slice(&(value.len() as i32).to_be_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    P::B(out)
}

/// Cases against one cluster with one set of overrides. Every mismatch is
/// collected; dropping the set fails the test listing all of them.
struct Cases {
    sharding: &'static Sharding,
    overrides: Overrides,
    failures: RefCell<Vec<String>>,
}

fn on(cluster: &str) -> Cases {
    Cases {
        sharding: &clusters()[cluster],
        overrides: Overrides::default(),
        failures: RefCell::default(),
    }
}

fn prod() -> Cases {
    on("prod")
}

impl Cases {
    fn shard(mut self, shard: usize) -> Cases {
        self.overrides.shard = Some(shard);
        self
    }

    fn key(mut self, key: &str) -> Cases {
        self.overrides.sharding_key = Some(key.to_owned());
        self
    }

    #[track_caller]
    fn check(&self, sql: &str, params: &[P], expected: &str) {
        let line = std::panic::Location::caller().line();
        let got = self.run(sql, params);
        let ok = match (expected.strip_prefix("err: "), &got) {
            (Some(text), Err(err)) => err.contains(text),
            (Some(_), Ok(_)) => false,
            (None, Ok(routed)) => *routed == parse_expected(expected),
            (None, Err(_)) => false,
        };
        if !ok {
            self.failures.borrow_mut().push(format!(
                "line {line}: {sql}\n    expected {expected}\n    got      {}",
                match got {
                    Ok(routed) => show(&routed),
                    Err(err) => format!("err: {err}"),
                }
            ));
        }
    }

    fn run(&self, sql: &str, params: &[P]) -> Result<Routed, String> {
        let tree = parser_ffi::ParseTree::parse(sql).map_err(|e| format!("parse error: {e}"))?;
        let summary = router::extract::summarize(&tree).map_err(|e| format!("extract: {e}"))?;
        let params: Vec<ParamValue<'_>> = params
            .iter()
            .map(|p| match p {
                P::T(text) => ParamValue::Text(text.as_bytes()),
                P::B(bytes) => ParamValue::Binary(bytes),
                P::N => ParamValue::Null,
            })
            .collect();
        route_all(&summary, &params, &self.overrides, self.sharding).map_err(|e| e.to_string())
    }
}

impl Drop for Cases {
    fn drop(&mut self) {
        let failures = self.failures.take();
        if !failures.is_empty() && !std::thread::panicking() {
            panic!(
                "{} case(s) failed:\n{}",
                failures.len(),
                failures.join("\n")
            );
        }
    }
}

fn parse_expected(expected: &str) -> Routed {
    let (expected, touches_moving) = match expected.strip_suffix(" m") {
        Some(expected) => (expected, true),
        None => (expected, false),
    };
    let (write, route) = match expected.strip_prefix("w ") {
        Some(route) => (true, route),
        None => (false, expected),
    };
    let route = match route {
        "any" => Route::Any,
        "all" => Route::All,
        list => {
            let shards: Vec<usize> = list
                .split(',')
                .map(|s| s.trim().parse().expect("expected route"))
                .collect();
            match shards[..] {
                [one] => Route::Shard(one),
                _ => Route::Shards(shards),
            }
        }
    };
    Routed {
        route,
        write,
        touches_moving,
    }
}

fn show(routed: &Routed) -> String {
    let route = match &routed.route {
        Route::Any => "any".to_owned(),
        Route::All => "all".to_owned(),
        Route::Shard(s) => s.to_string(),
        Route::Shards(s) => s
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
    };
    let route = if routed.write {
        format!("w {route}")
    } else {
        route
    };
    if routed.touches_moving {
        format!("{route} m")
    } else {
        route
    }
}
