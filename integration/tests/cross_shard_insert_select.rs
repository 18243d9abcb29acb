//! INSERT ... SELECT whose rows change shard (issue 34): the SELECT runs on
//! the coordinator path, its rows go to the shards their keys hash to. A
//! seeded differential test runs generated INSERT ... SELECT statements
//! (from generate_series, from tables not co-located with the target, with
//! WHERE, ORDER BY / LIMIT, aggregates, windows, DISTINCT, with and without
//! column lists, defaults, casts, NULL keys, into an omnisharded table)
//! through pgshard on 2 and 4 shards and on one reference Postgres, and
//! compares each statement's tag (or error code), then every table, each
//! shard's copy of the omnisharded one included. On the shards the sharded
//! tables are hash partitions of one remainder, so a row sent to the wrong
//! shard fails. Hand-picked cases: a block rolled back, two-phase commit,
//! the gather limit, a shard failing mid-way and a shard down (nothing
//! committed anywhere), and what stays refused.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

/// ON CONFLICT, RETURNING and OVERRIDING, in both protocols.
#[path = "insert_select/upserts.rs"]
mod upserts;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
}

use common::{connect, sharded_config, USERS};
use cross_shard_diff::data::{self, Data};
use integration::{PgServer, TestProxy};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::types::Type;
use tokio_postgres::{Client, SimpleQueryMessage};

/// `made` (sharded by `id`, like `users`): defaults to see applied per
/// shard; on a shard a hash partition of its remainder.
fn made_schema(partition: Option<(usize, usize)>) -> String {
    let columns = "(id bigint NOT NULL, v text DEFAULT 'dflt', n int DEFAULT 7, \
                   at numeric(6,1), PRIMARY KEY (id))";
    match partition {
        None => format!("CREATE TABLE made {columns}"),
        Some((n, i)) => format!(
            "CREATE TABLE made {columns} PARTITION BY HASH (id); \
             CREATE TABLE made_on_shard PARTITION OF made FOR VALUES WITH (MODULUS {n}, REMAINDER {i})"
        ),
    }
}

struct Setup {
    servers: Vec<PgServer>,
    _reference: PgServer,
    direct: Client,
    shards: Vec<Client>,
    proxy: TestProxy,
    _data: Data,
}

async fn start(n: usize, general: &str, seed: u64) -> Setup {
    common::watch_proxy_panics();
    let data = Data::generate(seed);
    let mut servers = common::servers(n + 1);
    let reference = servers.pop().unwrap();
    let mut shards = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let db = format!("shard_{i}");
        shards.push(connect(server.port(), "app", "app-pw", &db).await.unwrap());
    }
    let direct = connect(reference.port(), "app", "app-pw", &format!("shard_{n}"))
        .await
        .unwrap();
    data::load(&data, &shards, &direct).await;
    for (i, shard) in shards.iter().enumerate() {
        shard
            .batch_execute(&made_schema(Some((n, i))))
            .await
            .unwrap();
    }
    direct.batch_execute(&made_schema(None)).await.unwrap();
    let config = sharded_config(&servers, general, data::SHARDING);
    let proxy = TestProxy::start(&config, USERS).unwrap();
    Setup {
        servers,
        _reference: reference,
        direct,
        shards,
        proxy,
        _data: data,
    }
}

async fn client(setup: &Setup) -> Client {
    connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// A statement's outcome: its command tags and returned rows (sorted: a
/// multiset), or its error's code.
type Outcome = Result<Vec<String>, String>;

/// `sql` on `client`, retried while the proxy's read of the move records
/// is late (it then refuses keyless statements for a moment).
async fn query(
    client: &Client,
    sql: &str,
) -> Result<Vec<SimpleQueryMessage>, tokio_postgres::Error> {
    let mut tries = 0;
    loop {
        match client.simple_query(sql).await {
            Err(e) if common::describe(&e).contains("has not read lately") && tries < 20 => {
                eprintln!("{sql}: retried: {}", common::describe(&e));
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            result => return result,
        }
    }
}

async fn outcome(client: &Client, sql: &str) -> Outcome {
    match query(client, sql).await {
        Ok(messages) => {
            let (mut tags, mut returned) = (Vec::new(), Vec::new());
            for message in messages {
                match message {
                    SimpleQueryMessage::CommandComplete(n) => tags.push(n.to_string()),
                    SimpleQueryMessage::Row(row) => returned.push(
                        (0..row.len())
                            .map(|i| row.get(i).unwrap_or("NULL"))
                            .collect::<Vec<_>>()
                            .join("|"),
                    ),
                    _ => {}
                }
            }
            returned.sort();
            tags.extend(returned);
            Ok(tags)
        }
        Err(e) => {
            eprintln!("{sql}: {}", common::describe(&e));
            Err(common::code(&e).unwrap_or("?").to_owned())
        }
    }
}

async fn message(client: &Client, sql: &str) -> (String, String) {
    let e = query(client, sql).await.unwrap_err();
    (
        common::code(&e).unwrap_or("?").to_owned(),
        common::describe(&e),
    )
}

async fn rows(client: &Client, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for message in query(client, sql).await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            out.push(row.get(0).unwrap_or("NULL").to_owned());
        }
    }
    out
}

const TABLES: [&str; 3] = [
    "SELECT users::text FROM users ORDER BY id",
    "SELECT orders::text FROM orders ORDER BY user_id, id",
    "SELECT made::text FROM made ORDER BY id",
];

/// Every row of the written tables through `client`, in a fixed order.
async fn contents(client: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for sql in TABLES {
        out.extend(rows(client, sql).await);
    }
    out
}

/// The tables through pgshard and on the reference are the same, and
/// every shard's copy of `teams` is the reference's.
async fn same_tables(setup: &Setup, proxy: &Client, after: &str) {
    let (got, want) = (contents(proxy).await, contents(&setup.direct).await);
    assert!(got == want, "tables differ after {after}");
    let teams = "SELECT teams::text FROM teams ORDER BY grp";
    let want = rows(&setup.direct, teams).await;
    for (i, shard) in setup.shards.iter().enumerate() {
        assert!(
            rows(shard, teams).await == want,
            "shard {i}'s teams differ after {after}"
        );
    }
}

/// A generated INSERT ... SELECT whose rows may change shard; `base` makes
/// its keys fresh.
fn statement(rng: &mut Xoshiro256PlusPlus, base: i64) -> String {
    let n = rng.random_range(0..=100);
    let k = rng.random_range(0..=30);
    let g = rng.random_range(0..8);
    match rng.random_range(0..16) {
        0 => format!("INSERT INTO made (id, v) SELECT g + {base}, 'g' || g FROM generate_series(1, {k}) g"),
        1 => format!("INSERT INTO made SELECT g + {base} FROM generate_series(1, {k}) g"),
        2 => format!("INSERT INTO made (id, n, at) SELECT {base} + id, grp, amount FROM users WHERE abs(id) < 100000 AND score > {n}"),
        3 => format!("INSERT INTO made (id, v) SELECT {base} + id, name FROM users WHERE abs(id) < 100000 ORDER BY score DESC NULLS LAST, id LIMIT {k}"),
        4 => format!("INSERT INTO made (id, n) SELECT {base} + grp, count(*) FROM users WHERE grp IS NOT NULL GROUP BY grp"),
        5 => format!("INSERT INTO made (id) SELECT DISTINCT {base} + qty FROM orders WHERE qty IS NOT NULL"),
        6 => format!("INSERT INTO made (id, n) SELECT {base} + row_number() OVER (ORDER BY id), score FROM users WHERE grp = {g}"),
        7 => format!("INSERT INTO users (id, grp, score, name) SELECT DISTINCT ON (id) {base} + id, qty, {n}, note FROM orders WHERE abs(id) < 100000 AND qty > {g} ORDER BY id, user_id"),
        8 => format!("INSERT INTO users SELECT {base} + id, grp, score, name FROM users WHERE abs(id) < 100000 AND grp = {g}"),
        9 => format!("INSERT INTO orders (user_id, id, qty, note) SELECT {base} + id, id, grp, name FROM users WHERE abs(id) < 100000 AND score < {n}"),
        10 => format!("INSERT INTO orders (user_id, id, price) SELECT id, {base} + id, amount FROM users WHERE abs(id) < 100000 AND grp = {g}"),
        11 => format!("INSERT INTO teams (grp, team, weight) SELECT {base} + grp, coalesce(max(name), '-'), count(*) FROM users WHERE grp IS NOT NULL GROUP BY grp"),
        12 => format!("INSERT INTO made (id, at) SELECT g::numeric + 0.4 + {base}, g / 3.0 FROM generate_series(1, {k}) g"),
        13 => format!("INSERT INTO made (id, v) SELECT CASE WHEN g = 3 THEN NULL ELSE g + {base} END, 'n' FROM generate_series(1, {k}) g"),
        14 => format!("WITH s AS (SELECT id, score FROM users WHERE abs(id) < 100000 AND score > {n}) INSERT INTO made (id, n) SELECT {base} + id, score FROM s"),
        _ => format!("INSERT INTO made (id, v) SELECT '{base}', 'literal' UNION ALL SELECT {base} + 1, name FROM users WHERE id = (SELECT min(id) FROM users)"),
    }
}

/// `count` generated statements through pgshard on `n` shards and on the
/// reference: the same tags (or error codes), and the same tables after
/// every 10 and at the end.
async fn differential(n: usize, seed: u64, count: usize) {
    let setup = start(n, "cross_shard_finish = \"coordinator\"", seed).await;
    let proxy = client(&setup).await;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        let base = 1_000_000 * (i as i64 + 1);
        let sql = match rng.random_range(0..2) {
            0 => statement(&mut rng, base),
            _ => upserts::statement(&mut rng, base),
        };
        let got = outcome(&proxy, &sql).await;
        let want = outcome(&setup.direct, &sql).await;
        if got != want {
            failures.push(format!(
                "{sql}\n  pgshard:   {got:?}\n  reference: {want:?}"
            ));
        }
        if i % 10 == 9 || i + 1 == count {
            same_tables(&setup, &proxy, &sql).await;
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed}, {n} shards:\n{}",
        failures.join("\n")
    );
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn insert_select_matches_one_postgres_on_2_shards() {
    differential(2, 3451, 48).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn insert_select_matches_one_postgres_on_4_shards() {
    differential(4, 3452, 48).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bound_insert_select_matches_one_postgres_on_2_shards() {
    upserts::extended_differential(2, 3455, 32).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_reaches_the_shards() {
    upserts::cancel_reaches_the_shards().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bound_insert_select_matches_one_postgres_on_4_shards() {
    upserts::extended_differential(4, 3456, 32).await;
}

/// The same script through pgshard and on the reference: the same
/// outcomes, then the same tables.
async fn same_script(setup: &Setup, proxy: &Client, script: &[&str]) {
    for sql in script {
        let got = outcome(proxy, sql).await;
        let want = outcome(&setup.direct, sql).await;
        assert_eq!(got, want, "{sql}\n  in {script:?}");
    }
    same_tables(setup, proxy, &format!("{script:?}")).await;
}

const SPREAD: &str = "INSERT INTO made (id, v) SELECT g, 'spread' FROM generate_series(1, 40) g";

const UPSERT: &str = "INSERT INTO made (id, v) SELECT g, 'up' FROM generate_series(1, 60) g \
                      ON CONFLICT (id) DO UPDATE SET v = made.v || excluded.v RETURNING id, v";

#[tokio::test(flavor = "multi_thread")]
async fn blocks_two_phase_and_what_stays_refused() {
    let setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ntwo_phase_commit = true\n\
         two_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc-insel\"",
        3453,
    )
    .await;
    let proxy = client(&setup).await;
    // A block rolled back leaves nothing anywhere; one committed (two-phase)
    // keeps its rows, and its SELECT sees the block's own writes.
    let script = [
        "BEGIN",
        SPREAD,
        "SELECT count(*) FROM made",
        "ROLLBACK",
        "BEGIN",
        "UPDATE users SET score = 1000 WHERE grp = 1",
        "INSERT INTO made (id, n) SELECT 100 + id, score FROM users WHERE score = 1000",
        "INSERT INTO made (id, v) SELECT n + id, 'again' FROM made",
        UPSERT,
        "COMMIT",
        // No column list: the key's place is the catalog's (these ran on
        // every shard unchecked, the first one's rows kept where read).
        "INSERT INTO made SELECT 5000 + id, name, grp FROM users WHERE id % 3 = 0",
        "INSERT INTO made SELECT id + 0, 'same', 1 FROM users WHERE id % 3 = 1",
        SPREAD,
        UPSERT,
        "BEGIN",
        UPSERT,
        "ROLLBACK",
    ];
    same_script(&setup, &proxy, &script).await;
    for shard in &setup.shards {
        assert_eq!(
            rows(shard, "SELECT count(*) FROM pg_prepared_xacts").await,
            ["0"]
        );
    }
    // What stays refused says what and why: a conflict target without
    // the sharding key (conflicting rows could be on two shards).
    for sql in [
        "INSERT INTO made (id) SELECT id + 1 FROM users ON CONFLICT DO NOTHING",
        "INSERT INTO users (id, grp) SELECT id + 1, 1 FROM users ON CONFLICT (grp) DO NOTHING",
    ] {
        let (code, text) = message(&proxy, sql).await;
        assert_eq!(code, "0A000", "{sql}: {text}");
        assert!(
            text.contains("ON CONFLICT target includes the sharding key")
                && text.contains("sharding key from its SELECT"),
            "{text}"
        );
    }
    // An omnisharded target's conflicts are alike on every copy: any
    // conflict target does.
    let sql = "INSERT INTO teams (grp, team) SELECT grp, 'x' FROM users WHERE grp IS NOT NULL \
               ON CONFLICT DO NOTHING RETURNING grp";
    assert_eq!(
        outcome(&proxy, sql).await,
        outcome(&setup.direct, sql).await
    );
    // The extended protocol sends them too, outside and inside a block.
    for sql in [
        "INSERT INTO made (id) SELECT g + 500 FROM generate_series(1, 3) g",
        "INSERT INTO made (id) SELECT id + 900000 FROM users WHERE abs(id) < 100000",
    ] {
        let got = proxy.execute(sql, &[]).await.unwrap();
        let want = setup.direct.execute(sql, &[]).await.unwrap();
        assert_eq!(got, want, "{sql}");
    }
    let bound =
        "INSERT INTO made (id, v) SELECT g + $1::bigint, 'b' FROM generate_series(1, 30) g \
                 ON CONFLICT (id) DO UPDATE SET v = excluded.v RETURNING id";
    proxy.batch_execute("BEGIN").await.unwrap();
    assert_eq!(proxy.query(bound, &[&7i64]).await.unwrap().len(), 30);
    proxy.batch_execute("ROLLBACK").await.unwrap();
    // `query_typed` (Parse, Bind, Describe of the statement, Execute, Sync)
    // of a statement finished on the coordinator, a SELECT's too.
    let select =
        "SELECT count(*) FROM users u JOIN orders o ON o.id = u.grp WHERE u.id > $1::bigint";
    let typed = [(
        &0i64 as &(dyn tokio_postgres::types::ToSql + Sync),
        Type::INT8,
    )];
    let got: i64 = proxy.query_typed(select, &typed).await.unwrap()[0].get(0);
    let want: i64 = setup.direct.query_typed(select, &typed).await.unwrap()[0].get(0);
    assert_eq!(got, want);
    // A NULL key fails the statement, as the key column's NOT NULL does on one
    // Postgres; nothing was written.
    let (code, text) = message(&proxy, "INSERT INTO made (id) SELECT NULL::bigint").await;
    assert_eq!(code, "23502", "{text}");
    same_tables(&setup, &proxy, "the refusals").await;
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_limit_a_shard_failing_and_a_shard_down_leave_nothing() {
    let mut setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ncross_shard_gather_limit = { rows = 30, bytes = 100000 }",
        3454,
    )
    .await;
    let proxy = client(&setup).await;
    let (code, text) = message(&proxy, SPREAD).await;
    assert_eq!(code, "54000", "{text}");
    assert!(text.contains("cross_shard_gather_limit.rows"), "{text}");
    let (code, text) = message(&proxy, UPSERT).await;
    assert_eq!(code, "54000", "{text}");
    same_tables(&setup, &proxy, "the limit").await;
    // Shard 1 refuses a row mid-way (a constraint only it has): nothing is
    // committed on shard 0 either.
    setup.shards[1]
        .batch_execute("ALTER TABLE made_on_shard ADD CONSTRAINT few CHECK (n < 5)")
        .await
        .unwrap();
    let sql = "INSERT INTO made (id, n) SELECT g, g FROM generate_series(1, 20) g";
    let (code, text) = message(&proxy, sql).await;
    assert_eq!(code, "23514", "{text}");
    for shard in &setup.shards {
        assert_eq!(rows(shard, "SELECT count(*) FROM made").await, ["0"]);
    }
    // A shard down: a clear error, and nothing on the other shard.
    setup.servers[1].stop().unwrap();
    let small = "INSERT INTO made (id) SELECT g FROM generate_series(1, 20) g";
    let (code, text) = message(&proxy, small).await;
    assert!(
        code.starts_with("08") || code == "57P01" || code == "53300",
        "{code}: {text}"
    );
    assert_eq!(
        rows(&setup.shards[0], "SELECT count(*) FROM made").await,
        ["0"]
    );
    assert_eq!(common::proxy_panics(), 0);
}
