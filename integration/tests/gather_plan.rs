//! The gather planner (`router::gather`, issue 34) against one Postgres:
//! for the differential test's seeded SELECTs (`cross_shard_diff/`) and a
//! list of statements the streaming merge refuses, run each plan by hand on
//! the reference (each gather's CREATE, its shard SELECT over the whole
//! table into the temp table, as the shards' rows together would be, then
//! the finish) and compare with the statement itself. A plan must give the
//! statement's answer (its columns, types and rows) exactly; the planner
//! may refuse. This checks the planner's columns, pushed conditions and
//! rewrite; the proxy does not run plans yet.
//!
//! Environment: `PGSHARD_GATHER_SEED` (default: from the clock; printed),
//! `PGSHARD_GATHER_N` generated statements (default 600).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
    pub mod generator;
    pub mod sources;
}

use std::sync::Arc;

use common::{connect, sharded_config, USERS};
use cross_shard_diff::data::{self, Data};
use cross_shard_diff::generator::Generator;
use router::catalog::{Catalog, CatalogRow, Table};
use router::config::Config;
use router::gather::{plan, GatherOptions, GatherPlan};
use router::sharding::Sharding;
use tokio_postgres::{Client, SimpleQueryMessage};

/// Statements beyond the streaming merge, with whether their order is
/// total.
const BEYOND: &[(&str, bool)] = &[
    ("SELECT round(avg(score), 2) FROM users", true),
    ("SELECT count(DISTINCT grp) FROM orders o JOIN users u ON u.id = o.user_id", true),
    ("SELECT count(*) FROM (SELECT id FROM users ORDER BY id LIMIT 10) s", true),
    ("SELECT grp FROM users UNION SELECT qty FROM orders ORDER BY 1", true),
    ("SELECT name FROM users INTERSECT SELECT note FROM orders", false),
    ("SELECT id, rank() OVER (ORDER BY score DESC NULLS LAST, id) FROM users ORDER BY id", true),
    ("SELECT DISTINCT ON (grp) grp, id FROM users ORDER BY grp, id", true),
    ("SELECT grp, count(*) FROM users GROUP BY ROLLUP (grp) ORDER BY grp NULLS FIRST, 2", true),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY score) FROM users", true),
    ("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > 50", false),
    ("SELECT id FROM users WHERE score > (SELECT avg(score) FROM users)", false),
    ("SELECT id FROM users WHERE id = 5 AND score > (SELECT avg(score) FROM users)", false),
    ("SELECT t.team, count(o.id) FROM teams t LEFT JOIN users u ON u.grp = t.grp LEFT JOIN orders o ON o.user_id = u.id AND o.note <> 'gift' GROUP BY t.team ORDER BY t.team", true),
    ("SELECT u.name, (SELECT max(qty) FROM orders o WHERE o.qty > u.grp) FROM users u WHERE u.score < 30", false),
    ("SELECT id FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.qty = u.grp)", false),
    ("WITH s AS (SELECT grp, count(*) AS c FROM users GROUP BY grp) SELECT max(c) FROM s", true),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n, count(u.id) FROM r LEFT JOIN users u ON u.grp = r.n GROUP BY n ORDER BY n", true),
    ("SELECT u.* FROM users u WHERE u.grp = 3 AND u.score BETWEEN 10 AND 90", false),
    ("SELECT * FROM users NATURAL JOIN teams", false),
    ("SELECT id, grp FROM users JOIN teams USING (grp) WHERE grp > 2 AND weight IS NOT NULL", false),
    ("SELECT a, b FROM users AS u (a, b) WHERE b < 4", false),
    ("SELECT o.user_id, sum(o.price) FILTER (WHERE o.qty > 2) FROM orders o GROUP BY o.user_id HAVING sum(o.qty) > (SELECT avg(qty) FROM orders)", false),
    ("SELECT lower(name), count(*) FROM users WHERE upper(name) LIKE 'A%' OR name IS NULL GROUP BY 1", false),
    ("SELECT id FROM users WHERE created > DATE '2020-01-01' + 30 AND active IS TRUE", false),
    ("SELECT string_agg(note, ',' ORDER BY note, id) FROM orders WHERE user_id IN (SELECT id FROM users WHERE grp = 2)", true),
    ("SELECT u.id, o.id FROM users u LEFT JOIN orders o ON o.user_id = u.id AND o.note IS NULL AND o.qty > 2 WHERE u.grp = 4", false),
    ("SELECT u.id, o.id FROM orders o RIGHT JOIN users u ON o.user_id = u.id AND coalesce(o.note, '') = '' WHERE o.id IS NULL", false),
    ("SELECT u.id, o.id FROM users u FULL JOIN orders o ON o.user_id = u.id AND o.qty > 5 AND u.score > 50", false),
    ("SELECT u.id, u.name, count(o.id) FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.id", false),
    ("SELECT o.user_id, o.id, o.qty FROM orders o GROUP BY o.user_id, o.id HAVING o.qty > 3", false),
    ("SELECT j.name, j.qty FROM (users u JOIN orders o ON o.user_id = u.id) AS j WHERE j.qty > 3", false),
    ("SELECT j.user_id, j.score FROM users u JOIN orders o USING (id) AS j", false),
    ("SELECT x.id, x.n FROM users u, LATERAL (SELECT u.id, count(*) AS n FROM orders o WHERE o.user_id = u.id) x WHERE u.grp = 1", false),
];

#[tokio::test(flavor = "multi_thread")]
async fn plans_give_the_statements_answers() {
    let seed = std::env::var("PGSHARD_GATHER_SEED")
        .map(|s| s.parse().expect("PGSHARD_GATHER_SEED: an unsigned integer"))
        .unwrap_or_else(|_| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(1, |d| d.as_secs())
        });
    let n: usize = std::env::var("PGSHARD_GATHER_N").map_or(600, |n| n.parse().unwrap());
    println!("seed {seed} (PGSHARD_GATHER_SEED={seed} to repeat), {n} statements");
    let servers = common::servers(2);
    let shard = connect(servers[0].port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    let reference = connect(servers[1].port(), "app", "app-pw", "shard_1")
        .await
        .unwrap();
    let data = Data::generate(seed);
    data::load(&data, &[shard], &reference).await;
    let sharding = sharding(&servers, &reference).await;
    let mut generator = Generator::new(seed, data.user_ids());
    let mut cases: Vec<(String, bool)> =
        BEYOND.iter().map(|(s, o)| ((*s).to_owned(), *o)).collect();
    while cases.len() < BEYOND.len() + n {
        let case = generator.next_case();
        if case.setup.is_none() {
            cases.push((case.sql, case.ordered));
        }
    }
    let (mut planned, mut refused, mut wrong) = (0, Vec::new(), Vec::new());
    for (sql, ordered) in &cases {
        let plan = match plan(sql, &sharding, &GatherOptions::default()) {
            Ok(plan) => plan,
            Err(err) => {
                refused.push(format!("{sql}: {err}"));
                continue;
            }
        };
        planned += 1;
        let want = answer(&reference, sql, *ordered).await;
        let got = run(&reference, &plan, *ordered).await;
        if got != want {
            wrong.push(format!(
                "{sql}\n  plan {plan:#?}\n  got  {got:?}\n  want {want:?}"
            ));
        }
    }
    println!(
        "{planned} planned and run, {} refused, {} wrong",
        refused.len(),
        wrong.len()
    );
    for line in refused.iter().take(20) {
        println!("refused: {line}");
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(planned > cases.len() / 2, "most statements plan");
}

/// The diff test's sharding, with the reference's tables as the catalog.
async fn sharding(servers: &[integration::PgServer], reference: &Client) -> Sharding {
    let toml = sharded_config(&servers[..1], "", data::SHARDING);
    let config = Config::from_toml(&toml, USERS).unwrap();
    let mut sharding = Sharding::clone(&config.clusters["prod"].sharding);
    let sql = "SELECT c.relname, \
                 (SELECT string_agg(attname, ' ' ORDER BY attnum) FROM pg_attribute \
                   WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped), \
                 (SELECT string_agg(a.attname, ' ' ORDER BY k.n) FROM pg_index i, \
                   unnest(i.indkey) WITH ORDINALITY k(attnum, n), pg_attribute a \
                   WHERE i.indrelid = c.oid AND i.indisprimary \
                     AND a.attrelid = c.oid AND a.attnum = k.attnum) \
               FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'";
    let mut rows = Vec::new();
    for message in reference.simple_query(sql).await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            rows.push(CatalogRow::Table(Table {
                schema: "public".into(),
                name: row.get(0).unwrap().to_owned(),
                columns: row.get(1).unwrap().split(' ').map(str::to_owned).collect(),
                primary_key: row
                    .get(2)
                    .map_or_else(Vec::new, |k| k.split(' ').map(str::to_owned).collect()),
            }));
        }
    }
    sharding.catalog = Some(Arc::new(Catalog::from_rows(rows)));
    sharding
}

/// A statement's answer: its column names and types, its rows (sorted
/// unless `ordered`), or its error's SQLSTATE.
type Answer = Result<(Vec<String>, Vec<Vec<Option<String>>>), String>;

async fn answer(client: &Client, sql: &str, ordered: bool) -> Answer {
    let statement = client.prepare(sql).await.map_err(|e| code(&e))?;
    let columns = statement
        .columns()
        .iter()
        .map(|c| format!("{}:{}", c.name(), c.type_()))
        .collect();
    let mut rows = Vec::new();
    for message in client.simple_query(sql).await.map_err(|e| code(&e))? {
        if let SimpleQueryMessage::Row(row) = message {
            rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            );
        }
    }
    if !ordered {
        rows.sort();
    }
    Ok((columns, rows))
}

fn code(err: &tokio_postgres::Error) -> String {
    err.code()
        .map_or_else(|| err.to_string(), |c| c.code().to_owned())
}

/// `plan` run on one database: its gathers read the whole tables.
async fn run(client: &Client, plan: &GatherPlan, ordered: bool) -> Answer {
    client.batch_execute("BEGIN").await.unwrap();
    for gather in &plan.gathers {
        client.batch_execute(&gather.create_sql).await.unwrap();
        let fill = format!("INSERT INTO pg_temp.{} {}", gather.temp, gather.shard_sql);
        client.batch_execute(&fill).await.unwrap();
        if let Some(key) = &gather.key_sql {
            client.batch_execute(key).await.unwrap();
        }
    }
    let got = answer(client, &plan.finish_sql, ordered).await;
    client.batch_execute("ROLLBACK").await.unwrap();
    got
}
