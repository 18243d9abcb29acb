//! INSERT ... SELECT with ON CONFLICT (DO NOTHING, DO UPDATE with EXCLUDED
//! and WHERE, ON CONSTRAINT), RETURNING and OVERRIDING, whose rows change
//! shard: generated simple queries whose keys meet rows already there (and,
//! some, each other: 21000), and the same through the extended protocol
//! (tokio-postgres: named statements with binary parameters and results,
//! unnamed ones through `query_typed`), compared with the reference
//! Postgres (tags, returned rows as multisets, error codes, whole tables).

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row};

use super::{client, common, same_tables, start};

/// A generated INSERT ... SELECT with ON CONFLICT, RETURNING or
/// OVERRIDING; its small keys meet the rows earlier ones wrote, `base`
/// makes the rest fresh.
pub fn statement(rng: &mut Xoshiro256PlusPlus, base: i64) -> String {
    let n = rng.random_range(0..=100);
    let k = rng.random_range(0..=30);
    let g = rng.random_range(0..8);
    match rng.random_range(0..9) {
        0 => format!("INSERT INTO made (id, v) SELECT g, 'u{n}' FROM generate_series(1, {k}) g ON CONFLICT (id) DO NOTHING"),
        1 => format!("INSERT INTO made (id, v, n) SELECT g, 'u{n}', g FROM generate_series({g}, {k}) g ON CONFLICT (id) DO UPDATE SET v = made.v || excluded.v, n = coalesce(made.n, 0) + excluded.n WHERE made.n < {n} RETURNING id, v, n"),
        2 => format!("INSERT INTO made AS m (id, n) SELECT id % 40, score FROM users WHERE abs(id) < 100000 AND grp = {g} ON CONFLICT (id) DO UPDATE SET n = excluded.n RETURNING m.id * 2, m.n"),
        3 => format!("INSERT INTO made (id, v) SELECT g, 'k' FROM generate_series(1, {k}) g ON CONFLICT ON CONSTRAINT made_pkey DO UPDATE SET v = excluded.v || made.id RETURNING *"),
        4 => format!("INSERT INTO made (id, at) SELECT {base} + g, g / 7.0 FROM generate_series(1, {k}) g RETURNING id, at, v, n"),
        5 => format!("INSERT INTO users (id, grp, score, name) SELECT id + 1, grp, score + 1, name FROM users WHERE abs(id) < 100000 AND grp = {g} ON CONFLICT (id) DO UPDATE SET score = excluded.score WHERE users.grp IS DISTINCT FROM excluded.grp RETURNING id, score"),
        6 => format!("INSERT INTO teams (grp, team, weight) SELECT grp % 5, coalesce(max(name), '-'), count(*) FROM users WHERE grp IS NOT NULL AND score >= {n} GROUP BY grp % 5 ON CONFLICT (grp) DO UPDATE SET weight = teams.weight + excluded.weight RETURNING grp, weight"),
        7 => format!("INSERT INTO made (id, n) OVERRIDING USER VALUE SELECT {base} + g, g FROM generate_series(1, {k}) g RETURNING n"),
        _ => format!("INSERT INTO made (id, v) SELECT g % 3, 'twice' FROM generate_series(1, {k}) g ON CONFLICT (id) DO UPDATE SET v = excluded.v"),
    }
}

/// A parameter list as tokio-postgres takes it.
type Params = Vec<Box<dyn ToSql + Sync + Send>>;

/// A generated bound INSERT ... SELECT ... RETURNING id, v, n (or without
/// RETURNING), its parameters, and their types for `query_typed`.
fn bound(rng: &mut Xoshiro256PlusPlus, base: i64) -> (&'static str, Params, Vec<Type>) {
    let k: i32 = rng.random_range(0..=20);
    let low: i64 = rng.random_range(0..3) * 10;
    let g: i32 = rng.random_range(0..8);
    let v = format!("e{}", rng.random_range(0..100));
    match rng.random_range(0..4) {
        0 => (
            "INSERT INTO made (id, v, n) SELECT g + $1::bigint, $2::text, g FROM \
             generate_series(1, $3::int) g ON CONFLICT (id) DO UPDATE SET v = excluded.v, \
             n = made.n + excluded.n RETURNING id, v, n",
            vec![Box::new(low), Box::new(v), Box::new(k)],
            vec![Type::INT8, Type::TEXT, Type::INT4],
        ),
        1 => (
            "INSERT INTO made (id, n) SELECT id % 50 + $1::bigint, max(score) FROM users WHERE \
             abs(id) < 100000 AND grp = $2::int GROUP BY id % 50 ON CONFLICT (id) DO NOTHING \
             RETURNING id, v, n",
            vec![Box::new(low), Box::new(g)],
            vec![Type::INT8, Type::INT4],
        ),
        2 => (
            "INSERT INTO made (id, v) SELECT $1::bigint + g, 'x' FROM generate_series(1, 5) g \
             ON CONFLICT ON CONSTRAINT made_pkey DO NOTHING",
            vec![Box::new(low)],
            vec![Type::INT8],
        ),
        _ => (
            "INSERT INTO made (id, v) SELECT $1::bigint + g, $2::text FROM \
             generate_series(1, $3::int) g RETURNING id, v, n",
            vec![Box::new(base), Box::new(v), Box::new(k)],
            vec![Type::INT8, Type::TEXT, Type::INT4],
        ),
    }
}

/// What a bound statement did: its rows (as text, sorted) and, without
/// RETURNING, its count; or its error's code.
type Bound = Result<Vec<String>, String>;

fn texts(rows: Vec<Row>) -> Vec<String> {
    let mut out: Vec<String> = rows
        .iter()
        .map(|row| {
            let id: Option<i64> = row.get(0);
            let v: Option<String> = row.get(1);
            let n: Option<i32> = row.get(2);
            format!("{id:?}|{v:?}|{n:?}")
        })
        .collect();
    out.sort();
    out
}

/// `sql` with `params` through `client`: as a named prepared statement
/// (`typed`: unnamed, with the parameters' types given).
async fn run(client: &Client, sql: &str, params: &Params, types: &[Type], typed: bool) -> Bound {
    let refs: Vec<&(dyn ToSql + Sync)> = params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let returning = sql.contains("RETURNING");
    let result = match (typed, returning) {
        (false, true) => client.query(sql, &refs).await.map(texts),
        (false, false) => client
            .execute(sql, &refs)
            .await
            .map(|n| vec![n.to_string()]),
        (true, _) => {
            let pairs: Vec<(&(dyn ToSql + Sync), Type)> =
                refs.iter().copied().zip(types.iter().cloned()).collect();
            client.query_typed(sql, &pairs).await.map(texts)
        }
    };
    result.map_err(|e| {
        eprintln!("{sql}: {}", common::describe(&e));
        common::code(&e).unwrap_or("?").to_owned()
    })
}

/// `count` bound statements through pgshard on `n` shards and on the
/// reference: the same rows or error codes, and the same tables.
pub async fn extended_differential(n: usize, seed: u64, count: usize) {
    let setup = start(n, "cross_shard_finish = \"coordinator\"", seed).await;
    let proxy = client(&setup).await;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        let (sql, params, types) = bound(&mut rng, 1_000_000 * (i as i64 + 1));
        let typed = rng.random_range(0..2) == 1;
        let got = run(&proxy, sql, &params, &types, typed).await;
        let want = run(&setup.direct, sql, &params, &types, typed).await;
        if got != want {
            let failure =
                format!("{sql} (typed: {typed})\n  pgshard:   {got:?}\n  reference: {want:?}");
            eprintln!("{failure}");
            failures.push(failure);
        }
        if i % 10 == 9 || i + 1 == count {
            same_tables(&setup, &proxy, sql).await;
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed}, {n} shards:\n{}",
        failures.join("\n")
    );
    assert_eq!(common::proxy_panics(), 0);
}

/// A client's cancel reaches the shards' part of an INSERT ... SELECT
/// (shard 1's rows insert slowly, through a trigger that sleeps): the
/// statement ends with 57014 long before the rows would be in, and
/// nothing is written.
pub async fn cancel_reaches_the_shards() {
    let setup = start(2, "cross_shard_finish = \"coordinator\"", 3457).await;
    setup.shards[1]
        .batch_execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \
             'BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END'; \
             CREATE TRIGGER slow BEFORE INSERT ON made_on_shard FOR EACH ROW EXECUTE FUNCTION slow()",
        )
        .await
        .unwrap();
    let proxy = client(&setup).await;
    let token = proxy.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let started = std::time::Instant::now();
    // 200 rows, about 100 on shard 1: 50 s of sleeping.
    let sql = "INSERT INTO made (id, v) SELECT g, 'c' FROM generate_series(1, 200) g";
    let e = proxy.simple_query(sql).await.unwrap_err();
    assert_eq!(common::code(&e), Some("57014"), "{}", common::describe(&e));
    let elapsed = started.elapsed();
    assert!(elapsed.as_secs() < 30, "cancelled after {elapsed:?}");
    canceller.await.unwrap();
    for shard in &setup.shards {
        let count: i64 = shard
            .query_one("SELECT count(*) FROM made", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(count, 0);
    }
    assert_eq!(common::proxy_panics(), 0);
}
