//! Transactions that span shards, on partition-only shards (a misrouted row
//! fails loudly): statements for other shards join the transaction, DDL and
//! keyless statements run inside it on every shard, savepoints cover every
//! shard, an error anywhere aborts the whole, COMMIT and ROLLBACK end it
//! everywhere (two-phase when `two_phase_commit` is on, with a failing
//! PREPARE or decider rolling every shard back), and statements outside a
//! transaction that write on several shards are atomic.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{code, column, Cluster};

fn cluster(n: usize, general: &str) -> Cluster {
    common::watch_proxy_panics();
    Cluster::start_sharded_raw(n, general, "")
}

/// Two-phase commit on, its log in the temp dir (each pgshard writes a file
/// of its own there).
const TWO_PHASE: &str =
    "two_phase_commit = true\ntwo_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc\"";

/// Run `statements` (separated by `;` at the end of a line or between
/// statements written on one line with `; `) one simple query each, as
/// drivers send them.
async fn run(
    client: &tokio_postgres::Client,
    statements: &str,
) -> Result<(), tokio_postgres::Error> {
    for statement in statements
        .split("; ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        client.simple_query(statement).await?;
    }
    Ok(())
}

/// The `item`s of `tenant_id = key` on a shard, as its server has them.
async fn items(shard: &tokio_postgres::Client, key: i64) -> Vec<String> {
    column(
        shard,
        &format!("SELECT item FROM orders WHERE tenant_id = {key} ORDER BY id"),
        "item",
    )
    .await
}

async fn prepared_left(cluster: &Cluster) -> Vec<String> {
    let mut left = Vec::new();
    for shard in cluster.shards().await {
        left.extend(column(&shard, "SELECT gid FROM pg_prepared_xacts", "gid").await);
    }
    left
}

#[tokio::test]
async fn writes_on_two_shards_commit_and_roll_back_together() {
    for general in ["", TWO_PHASE] {
        let cluster = cluster(2, general);
        let (a, b) = common::keys_on_both_shards(&cluster).await;
        let shards = cluster.shards().await;
        let client = cluster.connect().await;
        run(&client, &format!(
                "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a1'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'b1')"
            ))
            .await
            .unwrap_or_else(|e| panic!("{general}: {}", common::describe(&e)));
        // A keyless read inside the transaction sees its own rows on both.
        assert_eq!(
            column(&client, "SELECT count(*) AS n FROM orders", "n").await,
            vec!["2"]
        );
        // Nothing is visible outside before COMMIT.
        assert_eq!(items(&shards[1], b).await, Vec::<String>::new());
        run(&client, "COMMIT").await.unwrap();
        assert_eq!(items(&shards[0], a).await, vec!["a1"], "{general}");
        assert_eq!(items(&shards[1], b).await, vec!["b1"], "{general}");
        run(&client, &format!(
                "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 2, 'a2'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 2, 'b2'); ROLLBACK"
            ))
            .await
            .unwrap();
        assert_eq!(items(&shards[0], a).await, vec!["a1"], "{general}");
        assert_eq!(items(&shards[1], b).await, vec!["b1"], "{general}");
        assert_eq!(prepared_left(&cluster).await, Vec::<String>::new());
        if !general.is_empty() {
            // The decider recorded its decision.
            let mut decisions = 0;
            for shard in &shards {
                decisions += column(shard, "SELECT count(*) AS n FROM pgshard.decisions", "n")
                    .await[0]
                    .parse::<usize>()
                    .unwrap();
            }
            assert_eq!(decisions, 1);
        }
    }
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn ddl_and_keyless_statements_run_inside_the_transaction_on_every_shard() {
    let cluster = cluster(2, TWO_PHASE);
    let shards = cluster.shards().await;
    let client = cluster.connect().await;
    let tables = |name: &'static str| {
        let shards = &shards;
        async move {
            let mut found = Vec::new();
            for shard in shards {
                let sql = format!("SELECT count(*) AS n FROM pg_tables WHERE tablename = '{name}'");
                found.push(column(shard, &sql, "n").await[0].clone());
            }
            found
        }
    };
    run(&client, "BEGIN; CREATE TABLE t2 (a int); ROLLBACK")
        .await
        .unwrap();
    assert_eq!(tables("t2").await, vec!["0", "0"]);
    run(
        &client,
        "BEGIN; CREATE TABLE t2 (a int); CREATE TABLE t3 (a int); COMMIT",
    )
    .await
    .unwrap();
    assert_eq!(tables("t2").await, vec!["1", "1"]);
    assert_eq!(tables("t3").await, vec!["1", "1"]);
    // A missing table gets Postgres's own error, and aborts the transaction.
    run(&client, "BEGIN").await.unwrap();
    let err = run(&client, "SELECT * FROM no_such_table")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("42P01"), "{}", common::describe(&err));
    let err = run(&client, "SELECT 1").await.unwrap_err();
    assert_eq!(code(&err), Some("25P02"));
    run(&client, "ROLLBACK").await.unwrap();
    // Outside a transaction, DDL that fails on one shard changes no shard.
    shards[1]
        .batch_execute("CREATE TABLE only1 (a int)")
        .await
        .unwrap();
    let err = run(&client, "CREATE TABLE only1 (a int)")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("42P07"), "{}", common::describe(&err));
    assert_eq!(tables("only1").await, vec!["0", "1"]);
    assert_eq!(prepared_left(&cluster).await, Vec::<String>::new());
    // The table made behind pgshard's back goes the same way, so that the
    // copies agree again (dropping the cluster checks that they do).
    shards[1].batch_execute("DROP TABLE only1").await.unwrap();
}

#[tokio::test]
async fn savepoints_cover_every_shard_even_ones_joined_later() {
    let cluster = cluster(2, "");
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let shards = cluster.shards().await;
    let client = cluster.connect().await;
    // Shard 1 joins after the savepoint: rolling back to it undoes its row.
    run(&client, &format!(
            "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a1'); SAVEPOINT s1; \
             INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'b1'); INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 2, 'a2'); \
             ROLLBACK TO SAVEPOINT s1; INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 3, 'b3'); \
             SAVEPOINT s2; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 4, 'a4'); RELEASE s2; COMMIT"
        ))
        .await
        .unwrap();
    assert_eq!(items(&shards[0], a).await, vec!["a1", "a4"]);
    assert_eq!(items(&shards[1], b).await, vec!["b3"]);
    // An error aborts the whole; ROLLBACK TO a savepoint taken before it
    // recovers every shard.
    run(
        &client,
        &format!(
            "BEGIN; SAVEPOINT s; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 5, 'a5')"
        ),
    )
    .await
    .unwrap();
    let err = run(
        &client,
        &format!("INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 3, 'dup')"),
    )
    .await
    .unwrap_err();
    assert_eq!(code(&err), Some("23505"));
    let err = run(
        &client,
        &format!("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 6, 'a6')"),
    )
    .await
    .unwrap_err();
    assert_eq!(code(&err), Some("25P02"));
    run(
        &client,
        &format!(
            "ROLLBACK TO s; INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 7, 'b7'); COMMIT"
        ),
    )
    .await
    .unwrap();
    assert_eq!(items(&shards[0], a).await, vec!["a1", "a4"]);
    assert_eq!(items(&shards[1], b).await, vec!["b3", "b7"]);
    // An error and COMMIT: everything rolled back, as Postgres does.
    run(
        &client,
        &format!("BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 8, 'a8')"),
    )
    .await
    .unwrap();
    let err = run(
        &client,
        &format!("INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 3, 'dup')"),
    )
    .await
    .unwrap_err();
    assert_eq!(code(&err), Some("23505"));
    let messages = client.simple_query("COMMIT").await.unwrap();
    assert!(matches!(
        messages.last(),
        Some(tokio_postgres::SimpleQueryMessage::CommandComplete(_))
    ));
    assert_eq!(items(&shards[0], a).await, vec!["a1", "a4"]);
    assert_eq!(common::proxy_panics(), 0);
}

/// A trigger that fails the transaction at its end on one shard (a
/// deferred constraint trigger): checked at PREPARE, or at the decider's
/// COMMIT.
async fn fail_at_commit(shard: &tokio_postgres::Client) {
    shard
        .batch_execute(
            "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               IF NEW.item = 'boom' THEN RAISE EXCEPTION 'boom at commit'; END IF; RETURN NEW; END $$; \
             CREATE CONSTRAINT TRIGGER boom AFTER INSERT ON orders_on_shard \
               DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION boom()",
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_shard_failing_at_commit_rolls_every_shard_back() {
    let cluster = cluster(2, TWO_PHASE);
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let shards = cluster.shards().await;
    fail_at_commit(&shards[1]).await;
    let client = cluster.connect().await;
    // The decider is the shard used last: shard 1 first (it fails at its
    // COMMIT, after shard 0 prepared), then shard 0 (shard 1's PREPARE
    // fails).
    for (first, second) in [((a, "a"), (b, "boom")), ((b, "boom"), (a, "a"))] {
        run(&client, &format!(
                "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({}, 1, '{}'); INSERT INTO orders (tenant_id, id, item) VALUES ({}, 1, '{}')",
                first.0, first.1, second.0, second.1
            ))
            .await
            .unwrap();
        let err = run(&client, "COMMIT").await.unwrap_err();
        let text = common::describe(&err);
        assert!(text.contains("boom at commit"), "{text}");
        assert_eq!(items(&shards[0], a).await, Vec::<String>::new());
        assert_eq!(items(&shards[1], b).await, Vec::<String>::new());
        assert_eq!(prepared_left(&cluster).await, Vec::<String>::new());
        // The session goes on, outside any transaction.
        assert_eq!(column(&client, "SELECT 1 AS one", "one").await, vec!["1"]);
    }
}

/// Without two-phase commit, COMMIT is one per shard: a shard failing at
/// its COMMIT after another committed is reported with the shards that
/// committed, never silently.
#[tokio::test]
async fn one_phase_commit_names_the_shards_that_committed() {
    let cluster = cluster(2, "");
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let shards = cluster.shards().await;
    fail_at_commit(&shards[1]).await;
    let client = cluster.connect().await;
    run(&client, &format!(
            "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'boom')"
        ))
        .await
        .unwrap();
    let err = run(&client, "COMMIT").await.unwrap_err();
    let text = common::describe(&err);
    assert!(text.contains("boom at commit"), "{text}");
    let committed = items(&shards[0], a).await;
    if committed.is_empty() {
        assert!(text.contains("every shard rolled back"), "{text}");
    } else {
        assert!(text.contains("shard(s) [0] committed"), "{text}");
    }
    assert_eq!(items(&shards[1], b).await, Vec::<String>::new());
}

/// Statements for several shards sent in the extended protocol inside a
/// transaction (a driver's `execute` of a keyless UPDATE, a keyless
/// count, a pipeline) run inside it on every shard: ROLLBACK undoes them
/// everywhere, COMMIT keeps them (two-phase with it on), and one that
/// fails aborts the transaction (25P02 after it) until ROLLBACK, or until
/// ROLLBACK TO a savepoint taken before it.
#[tokio::test]
async fn extended_protocol_statements_for_several_shards_run_inside_the_transaction() {
    for general in ["", TWO_PHASE] {
        let cluster = cluster(2, general);
        let (a, b) = common::keys_on_both_shards(&cluster).await;
        let shards = cluster.shards().await;
        let mut client = cluster.connect().await;
        for (key, id) in [(a, 1i64), (b, 1)] {
            client
                .execute(
                    "INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, 'new')",
                    &[&key, &id],
                )
                .await
                .unwrap();
        }
        for commit in [false, true] {
            let tx = client.transaction().await.unwrap();
            // Keyless: every shard, inside the transaction.
            let updated = tx
                .execute("UPDATE orders SET item = $1", &[&"updated"])
                .await
                .unwrap_or_else(|e| panic!("{general}: {}", common::describe(&e)));
            assert_eq!(updated, 2);
            let row = tx
                .query_one("SELECT count(*) FROM orders WHERE item = $1", &[&"updated"])
                .await
                .unwrap();
            assert_eq!(row.get::<_, i64>(0), 2, "the transaction sees its writes");
            // Outside, nothing yet.
            assert_eq!(items(&shards[0], a).await.len(), 1);
            assert_eq!(items(&shards[0], a).await, ["new"]);
            if commit {
                tx.commit().await.unwrap();
            } else {
                tx.rollback().await.unwrap();
            }
            let expected = if commit { "updated" } else { "new" };
            assert_eq!(items(&shards[0], a).await, [expected], "{general} {commit}");
            assert_eq!(items(&shards[1], b).await, [expected], "{general} {commit}");
        }
        // A failing statement for several shards aborts the transaction;
        // a savepoint taken before it recovers it on every shard.
        let tx = client.transaction().await.unwrap();
        tx.execute("UPDATE orders SET item = $1", &[&"before"])
            .await
            .unwrap();
        tx.batch_execute("SAVEPOINT s").await.unwrap();
        let err = tx
            .execute("UPDATE orders SET id = id / $1", &[&0i64])
            .await
            .unwrap_err();
        assert_eq!(code(&err), Some("22012"), "{err}");
        let err = tx.query("SELECT 1", &[]).await.unwrap_err();
        assert_eq!(code(&err), Some("25P02"), "{err}");
        tx.batch_execute("ROLLBACK TO SAVEPOINT s").await.unwrap();
        tx.execute("UPDATE orders SET item = item || $1", &[&"+after"])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(items(&shards[0], a).await, ["before+after"]);
        assert_eq!(items(&shards[1], b).await, ["before+after"]);
        // Savepoints and settings sent in the extended protocol reach every
        // shard the transaction holds (and shards joining later).
        let tx = client.transaction().await.unwrap();
        tx.execute("UPDATE orders SET item = $1", &[&"kept"])
            .await
            .unwrap();
        tx.execute("SAVEPOINT s2", &[]).await.unwrap();
        tx.execute("UPDATE orders SET item = $1", &[&"undone"])
            .await
            .unwrap();
        tx.execute("ROLLBACK TO SAVEPOINT s2", &[]).await.unwrap();
        tx.execute("SET LOCAL statement_timeout = '7s'", &[])
            .await
            .unwrap();
        for key in [a, b] {
            let sql = format!(
                "SELECT current_setting('statement_timeout') FROM orders WHERE tenant_id = {key}"
            );
            let row = tx.query_one(&sql, &[]).await.unwrap();
            assert_eq!(row.get::<_, String>(0), "7s", "shard of {key}");
        }
        tx.execute("RELEASE SAVEPOINT s2", &[]).await.unwrap();
        let err = tx
            .execute("ROLLBACK TO SAVEPOINT no_such", &[])
            .await
            .unwrap_err();
        assert_eq!(code(&err), Some("3B001"), "{err}");
        tx.rollback().await.unwrap();
        assert_eq!(items(&shards[0], a).await, ["before+after"]);
        let tx = client.transaction().await.unwrap();
        tx.execute("UPDATE orders SET item = $1", &[&"kept"])
            .await
            .unwrap();
        tx.execute("SAVEPOINT s3", &[]).await.unwrap();
        tx.execute("UPDATE orders SET item = $1", &[&"undone"])
            .await
            .unwrap();
        tx.execute("ROLLBACK TO SAVEPOINT s3", &[]).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(items(&shards[0], a).await, ["kept"]);
        assert_eq!(items(&shards[1], b).await, ["kept"]);
        assert!(prepared_left(&cluster).await.is_empty());
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// A savepoint statement that fails on the transaction's one shard (a
/// ROLLBACK TO of no such savepoint) is not replayed on a shard joining
/// later: after ROLLBACK TO a real savepoint, the join succeeds.
#[tokio::test]
async fn a_failed_savepoint_statement_is_not_replayed_on_joining_shards() {
    let cluster = cluster(2, "");
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let client = cluster.connect().await;
    run(
        &client,
        &format!(
            "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'); SAVEPOINT s"
        ),
    )
    .await
    .unwrap();
    let err = run(&client, "ROLLBACK TO SAVEPOINT nope")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("3B001"), "{err}");
    run(&client, "ROLLBACK TO SAVEPOINT s").await.unwrap();
    run(
        &client,
        &format!("INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'b'); COMMIT"),
    )
    .await
    .unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    let shards = cluster.shards().await;
    assert_eq!(items(&shards[0], a).await, ["a"]);
    assert_eq!(items(&shards[1], b).await, ["b"]);
}
