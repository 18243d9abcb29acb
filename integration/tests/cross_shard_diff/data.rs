//! The rows of the differential test: `users` sharded by `id`, `orders`
//! co-located with it by `user_id`, the omnisharded `teams`; generated from
//! the seed with NULLs and duplicates, loaded whole into the reference and
//! split by Postgres's own hash into the shards' single partitions.

use std::collections::BTreeMap;

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use tokio_postgres::{Client, SimpleQueryMessage};

/// The `[[sharded_tables]]` and `[[omnisharded_tables]]` sections.
pub const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"users\"
column = \"id\"
data_type = \"bigint\"
hasher = \"postgres\"

[[sharded_tables]]
database = \"prod\"
name = \"orders\"
column = \"user_id\"
data_type = \"bigint\"
hasher = \"postgres\"

[[sharded_tables]]
database = \"prod\"
name = \"made\"
column = \"id\"
data_type = \"bigint\"
hasher = \"postgres\"

[[omnisharded_tables]]
database = \"prod\"
tables = [\"teams\"]
";

/// Names with duplicates, case and byte-order traps, a quote and the empty
/// string (not NULL).
pub const NAMES: &[&str] = &[
    "alice", "Alice", "bob", "Bob", "carol", "dave", "eve", "Émile", "zoe", "a b", "O'Hara", "",
];

/// Order notes, the empty one included.
pub const NOTES: &[&str] = &["gift", "rush", "", "fragile"];

/// Seeded rows as SQL tuples, each with its sharding key.
pub struct Data {
    pub users: Vec<(i64, String)>,
    pub orders: Vec<(i64, String)>,
    pub teams: Vec<String>,
}

/// `text` as an SQL literal.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `Some(value)` with probability `1 - null`, formatted; else `NULL`.
fn maybe(
    rng: &mut Xoshiro256PlusPlus,
    null: f64,
    value: impl FnOnce(&mut Xoshiro256PlusPlus) -> String,
) -> String {
    if rng.random_bool(null) {
        "NULL".to_owned()
    } else {
        value(rng)
    }
}

/// Cents as an exact numeric literal.
fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

impl Data {
    pub fn generate(seed: u64) -> Data {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xDA7A);
        let mut ids: Vec<i64> = (0..400).map(|_| rng.random_range(-300..3000)).collect();
        ids.extend([i64::MAX, i64::MIN + 1, 0, 1, -1]);
        ids.sort_unstable();
        ids.dedup();
        let mut users = Vec::new();
        let mut orders = Vec::new();
        for &id in &ids {
            let r = &mut rng;
            let row = format!(
                "({id}, {}, {}, {}, {}, {}, {})",
                maybe(r, 0.05, |r| r.random_range(0..8).to_string()),
                maybe(r, 0.08, |r| r.random_range(0..=100).to_string()),
                maybe(r, 0.10, |r| literal(NAMES.choose(r).copied().unwrap_or(""))),
                maybe(r, 0.10, |r| r.random_bool(0.6).to_string()),
                maybe(r, 0.10, |r| format!(
                    "DATE '2023-01-01' + {}",
                    r.random_range(0..730)
                )),
                maybe(r, 0.10, |r| money(r.random_range(-100_000..1_000_000))),
            );
            users.push((id, row));
            for order in 1..=rng.random_range(0..=4i64) {
                orders.push((id, order_row(&mut rng, id, order)));
            }
        }
        // Orders of users that do not exist, for the outer joins.
        for user_id in [-5000i64, 5000, 5001, 77_777] {
            orders.push((user_id, order_row(&mut rng, user_id, 1)));
        }
        let teams = [
            "(0, 'red', 3)",
            "(1, 'blue', 1)",
            "(2, 'green', 4)",
            "(3, 'red', 2)",
        ]
        .into_iter()
        .chain(["(4, 'black', NULL)", "(5, 'white', 5)"])
        .map(str::to_owned)
        .collect();
        Data {
            users,
            orders,
            teams,
        }
    }

    /// The users' ids, for keyed statements.
    pub fn user_ids(&self) -> Vec<i64> {
        self.users.iter().map(|(id, _)| *id).collect()
    }
}

fn order_row(rng: &mut Xoshiro256PlusPlus, user_id: i64, id: i64) -> String {
    format!(
        "({user_id}, {id}, {}, {}, {})",
        maybe(rng, 0.10, |r| r.random_range(1..=10).to_string()),
        maybe(rng, 0.10, |r| money(r.random_range(0..20_000))),
        maybe(rng, 0.15, |r| literal(
            NOTES.choose(r).copied().unwrap_or("")
        )),
    )
}

/// The tables; on a shard (`Some((n, i))`) the sharded ones are
/// hash-partitioned parents with the single partition `MODULUS n,
/// REMAINDER i`, so a row on the wrong shard is refused.
pub fn schema(partition: Option<(usize, usize)>) -> String {
    let (by_id, by_user) = match partition {
        Some(_) => (" PARTITION BY HASH (id)", " PARTITION BY HASH (user_id)"),
        None => ("", ""),
    };
    let mut sql = format!(
        "CREATE TABLE users (id bigint PRIMARY KEY, grp int, score int, name text, active bool,\
           created date, amount numeric(12,2)){by_id};\
         CREATE TABLE orders (user_id bigint NOT NULL, id bigint NOT NULL, qty int,\
           price numeric(10,2), note text, PRIMARY KEY (user_id, id)){by_user};\
         CREATE TABLE teams (grp int PRIMARY KEY, team text NOT NULL, weight int);"
    );
    if let Some((n, i)) = partition {
        let part = format!("FOR VALUES WITH (MODULUS {n}, REMAINDER {i})");
        sql.push_str(&format!(
            "CREATE TABLE users_on_shard PARTITION OF users {part};\
             CREATE TABLE orders_on_shard PARTITION OF orders {part};"
        ));
    }
    sql
}

/// `INSERT INTO table VALUES ...` for `rows` (nothing if there are none).
fn insert(table: &str, rows: &[&String]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let values: Vec<&str> = rows.iter().map(|row| row.as_str()).collect();
    format!("INSERT INTO {table} VALUES {};", values.join(", "))
}

/// Create the tables and load the rows: all of them into `reference`, each
/// key's rows into the shard Postgres's hash gives it (asked of the
/// reference, DESIGN.md §2).
pub async fn load<'a>(data: &'a Data, shards: &[Client], reference: &Client) {
    let all_users: Vec<&String> = data.users.iter().map(|(_, row)| row).collect();
    let all_orders: Vec<&String> = data.orders.iter().map(|(_, row)| row).collect();
    let teams: Vec<&String> = data.teams.iter().collect();
    let sql = format!(
        "{}{}{}{}ANALYZE",
        schema(None),
        insert("users", &all_users),
        insert("orders", &all_orders),
        insert("teams", &teams)
    );
    reference.batch_execute(&sql).await.unwrap();
    let placement = placement(reference, shards.len()).await;
    for (i, shard) in shards.iter().enumerate() {
        let mine = |rows: &'a [(i64, String)]| -> Vec<&'a String> {
            rows.iter()
                .filter(|(key, _)| placement[key] == i)
                .map(|(_, row)| row)
                .collect()
        };
        let (users, orders) = (mine(&data.users), mine(&data.orders));
        assert!(!users.is_empty(), "shard {i} got no users");
        let sql = format!(
            "{}{}{}{}ANALYZE",
            schema(Some((shards.len(), i))),
            insert("users", &users),
            insert("orders", &orders),
            insert("teams", &teams)
        );
        shard
            .batch_execute(&sql)
            .await
            .unwrap_or_else(|e| panic!("loading shard {i}: {e:?}"));
    }
}

/// The shard of every key in the reference's tables under the `postgres`
/// hasher with `n` shards, computed by Postgres.
async fn placement(reference: &Client, n: usize) -> BTreeMap<i64, usize> {
    let sql = format!(
        "SELECT k, (((hashint8extended(k, 8816678312871386365)::numeric + 18446744073709551616 \
           + 5305509591434766563) % 18446744073709551616) % {n})::int \
         FROM (SELECT id AS k FROM users UNION SELECT user_id FROM orders) keys"
    );
    let mut placement = BTreeMap::new();
    for message in reference.simple_query(&sql).await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            let key = row.get(0).unwrap().parse().unwrap();
            placement.insert(key, row.get(1).unwrap().parse().unwrap());
        }
    }
    placement
}
