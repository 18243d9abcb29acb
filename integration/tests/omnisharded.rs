//! Omnisharded tables, and tables the config does not name, which are
//! omnisharded by default (PgDog's rule, issue 12): DDL creates them on
//! every shard, writes reach every shard atomically and answer as one
//! Postgres would (one copy's RETURNING rows and row count, in both
//! protocols), COPY writes every row on every shard, reads come from one
//! copy, and copies found to differ fail the write (XX001) and roll it back.
//! `unlisted_tables = "sharded"` opts out.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::wire::{self, Wire};
use common::{code, column, Cluster};

/// Two-phase commit on, its log in the temp dir.
const TWO_PHASE: &str =
    "two_phase_commit = true\ntwo_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc\"";

/// Every shard's copy of `settings`, as `k=v` lines in key order.
async fn copies(cluster: &Cluster) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for shard in cluster.shards().await {
        let rows = shard
            .query("SELECT k, v FROM settings ORDER BY k", &[])
            .await
            .unwrap();
        all.push(
            rows.iter()
                .map(|r| format!("{}={}", r.get::<_, String>(0), r.get::<_, String>(1)))
                .collect(),
        );
    }
    all
}

#[tokio::test]
async fn unlisted_tables_are_omnisharded_and_answer_as_one_postgres() {
    common::watch_proxy_panics();
    for general in ["", TWO_PHASE] {
        let cluster = Cluster::start_sharded_raw(3, general, "");
        let client = cluster.connect().await;
        // DDL through pgshard: the table exists on every shard.
        client
            .batch_execute("CREATE TABLE settings (k text PRIMARY KEY, v text NOT NULL)")
            .await
            .unwrap();
        // Simple protocol: one copy's reply.
        let rows = client
            .simple_query("INSERT INTO settings VALUES ('a', '1'), ('b', '2') RETURNING k")
            .await
            .unwrap();
        let returned: Vec<_> = rows
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .collect();
        assert_eq!(returned, ["a", "b"], "{general}");
        let tag = rows.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        });
        assert_eq!(tag, Some(2), "INSERT 0 2, not one count per shard");
        // Extended protocol: the row count a driver reads.
        let n = client
            .execute("UPDATE settings SET v = $1 WHERE k = $2", &[&"10", &"a"])
            .await
            .unwrap();
        assert_eq!(n, 1, "UPDATE 1");
        let returned = client
            .query(
                "INSERT INTO settings VALUES ($1, $2) RETURNING v",
                &[&"c", &"3"],
            )
            .await
            .unwrap();
        assert_eq!(returned.len(), 1, "one RETURNING row");
        assert_eq!(
            client
                .execute("DELETE FROM settings WHERE k = $1", &[&"b"])
                .await
                .unwrap(),
            1
        );
        let every = vec!["a=10".to_owned(), "c=3".to_owned()];
        assert_eq!(copies(&cluster).await, vec![every.clone(); 3], "{general}");
        // Reads come from one copy.
        assert_eq!(
            column(&client, "SELECT k FROM settings ORDER BY k", "k").await,
            ["a", "c"]
        );
        let count = client
            .query_one("SELECT count(*) FROM settings", &[])
            .await
            .unwrap();
        assert_eq!(count.get::<_, i64>(0), 2);
        // Joined with a sharded table: each shard joins its own rows with
        // its whole copy.
        let (a, b) = common::keys_on_both_shards(&cluster).await;
        for key in [a, b] {
            client
                .execute(
                    "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 1, 'a')",
                    &[&key],
                )
                .await
                .unwrap();
        }
        let joined = column(
            &client,
            "SELECT o.tenant_id FROM orders o JOIN settings s ON s.k = o.item ORDER BY 1",
            "tenant_id",
        )
        .await;
        assert_eq!(joined, [a.to_string(), b.to_string()]);

        // In a transaction with a sharded write: all or nothing.
        let mut tx_client = cluster.connect().await;
        let tx = tx_client.transaction().await.unwrap();
        tx.execute("INSERT INTO settings VALUES ($1, $2)", &[&"t", &"in txn"])
            .await
            .unwrap();
        tx.execute(
            "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 2, 't')",
            &[&a],
        )
        .await
        .unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(copies(&cluster).await, vec![every.clone(); 3]);
        let tx = tx_client.transaction().await.unwrap();
        tx.execute("INSERT INTO settings VALUES ($1, $2)", &[&"t", &"in txn"])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut with_t = every.clone();
        with_t.push("t=in txn".to_owned());
        assert_eq!(copies(&cluster).await, vec![with_t.clone(); 3]);

        // COPY: every row on every shard, counted once.
        let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
        raw.send(&wire::query("COPY settings (k, v) FROM STDIN"))
            .await;
        while raw.recv().await.0 != b'G' {}
        raw.send(&wire::message(b'd', b"x\tcopied\ny\tcopied\n"))
            .await;
        raw.send(&wire::message(b'c', b"")).await;
        let replies = raw.until_ready().await;
        let tags: Vec<_> = replies.iter().filter(|(t, _)| *t == b'C').collect();
        assert_eq!(tags.len(), 1);
        assert_eq!(tags[0].1.as_ref(), b"COPY 2\0");
        assert!(copies(&cluster).await.iter().all(|c| c.len() == 5));

        // Copies that differ (a row written behind pgshard's back, on one
        // shard): a write that finds it fails and changes nothing.
        let shards = cluster.shards().await;
        shards[1]
            .batch_execute("INSERT INTO settings VALUES ('stray', 'one shard')")
            .await
            .unwrap();
        let err = client
            .execute("UPDATE settings SET v = $1 WHERE k LIKE $2", &[&"z", &"%"])
            .await
            .unwrap_err();
        assert_eq!(code(&err), Some("XX001"), "{err}");
        let err = client
            .simple_query("DELETE FROM settings")
            .await
            .unwrap_err();
        assert_eq!(code(&err), Some("XX001"), "{err}");
        let after = copies(&cluster).await;
        assert!(after[0].iter().all(|kv| !kv.ends_with("=z")), "{after:?}");
        assert_eq!(after[0].len(), 5, "rolled back: {after:?}");
        assert_eq!(after[1].len(), 6, "rolled back: {after:?}");
        let left: i64 = shards[0]
            .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(left, 0);
        // The stray row goes the way it came, so that the copies agree
        // again (dropping the cluster checks that they do).
        shards[1]
            .batch_execute("DELETE FROM settings WHERE k = 'stray'")
            .await
            .unwrap();
    }
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn unlisted_tables_sharded_by_an_unknown_key_when_configured() {
    let cluster = Cluster::start_sharded_raw(2, "unlisted_tables = \"sharded\"", "");
    let client = cluster.connect().await;
    client
        .batch_execute("CREATE TABLE settings (k text PRIMARY KEY, v text NOT NULL)")
        .await
        .unwrap();
    let err = client
        .execute("INSERT INTO settings VALUES ($1, $2)", &[&"a", &"1"])
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("0A000"), "{err}");
    let message = common::describe(&err);
    assert!(message.contains("omnisharded_tables"), "{message}");
    // A row on each shard, written directly: a keyless read sees both.
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        shard
            .execute("INSERT INTO settings VALUES ($1, 'x')", &[&i.to_string()])
            .await
            .unwrap();
    }
    assert_eq!(
        column(&client, "SELECT k FROM settings ORDER BY k", "k").await,
        ["0", "1"]
    );
}

/// With a column-only `[[sharded_tables]]` entry (PgDog's `column =
/// "user_id"` without a name), an unlisted table is sharded by that column
/// when it has it and omnisharded when the shards' catalog shows it has
/// none, as PgDog decides with its schema cache: pgshard reads the catalog
/// at start, after DDL through it, and after RELOAD.
#[tokio::test]
async fn with_a_column_only_entry_the_catalog_decides() {
    let extra =
        "[[sharded_tables]]\ndatabase = \"prod\"\ncolumn = \"user_id\"\ndata_type = \"bigint\"\n";
    let cluster = Cluster::start_sharded_raw(2, "", extra);
    let client = cluster.connect().await;
    client
        .batch_execute("CREATE TABLE settings (k text PRIMARY KEY, v text NOT NULL)")
        .await
        .unwrap();
    client
        .batch_execute("CREATE TABLE visits (user_id bigint NOT NULL, page text NOT NULL)")
        .await
        .unwrap();
    // The catalog is read again shortly after the DDL: until then the new
    // table is sharded by a key pgshard does not know (the write refused).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match client
            .execute("INSERT INTO settings VALUES ($1, $2)", &[&"a", &"1"])
            .await
        {
            Ok(n) => {
                assert_eq!(n, 1);
                break;
            }
            Err(err) => {
                assert_eq!(code(&err), Some("0A000"), "{err}");
                assert!(std::time::Instant::now() < deadline, "never omnisharded");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
    for shard in cluster.shards().await {
        let n = column(&shard, "SELECT count(*) AS n FROM settings", "n").await;
        assert_eq!(n, ["1"], "a copy on every shard");
    }
    assert_eq!(
        column(&client, "SELECT count(*) AS n FROM settings", "n").await,
        ["1"]
    );
    // visits has user_id: sharded by it.
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    // Without a column list the table's columns locate the key (simple
    // and extended protocol).
    client
        .batch_execute(&format!("INSERT INTO visits VALUES ({a}, 'home')"))
        .await
        .unwrap();
    client
        .execute("INSERT INTO visits VALUES ($1, 'home')", &[&b])
        .await
        .unwrap();
    let shards = cluster.shards().await;
    for shard in &shards {
        let n = column(shard, "SELECT count(*) AS n FROM visits", "n").await;
        assert_eq!(n, ["1"], "one row per shard");
    }
    let err = client
        .execute("INSERT INTO visits (page) VALUES ('no key')", &[])
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("0A000"), "{err}");
    // A table made behind pgshard's back is known after RELOAD.
    for shard in &shards {
        shard
            .batch_execute("CREATE TABLE notes (id int PRIMARY KEY, body text)")
            .await
            .unwrap();
    }
    let admin = cluster.admin().await;
    admin.simple_query("RELOAD").await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while client
        .execute("INSERT INTO notes VALUES (1, 'x')", &[])
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "notes never omnisharded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for shard in &shards {
        let n = column(shard, "SELECT count(*) AS n FROM notes", "n").await;
        assert_eq!(n, ["1"]);
    }
}

/// Statements that write an omnisharded table from sharded rows, in any
/// shape (a data-modifying WITH query, UPDATE ... FROM, DELETE ... USING,
/// a sublink in VALUES, SET or ON CONFLICT, MERGE), are refused before any
/// copy is written, in both protocols; data-modifying WITH queries on
/// sharded tables run on every shard their rows may be on (issue 38).
#[tokio::test]
async fn writes_from_sharded_rows_are_exact_or_refused() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let client = cluster.connect().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    client
        .simple_query(&format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'), ({a}, 2, 'y'), ({b}, 1, 'x'), ({b}, 2, 'y')"
        ))
        .await
        .unwrap();
    client
        .simple_query(
            "INSERT INTO countries (code, name) VALUES ('fr', 'France'), ('de', 'Germany')",
        )
        .await
        .unwrap();
    for sql in [
        "WITH x AS (INSERT INTO countries (code, name) SELECT item, 'x' FROM orders RETURNING *) SELECT 1".to_owned(),
        format!("WITH x AS (UPDATE countries SET name = 'x' RETURNING *) SELECT * FROM orders WHERE tenant_id = {a}"),
        "WITH x AS (DELETE FROM countries RETURNING *) SELECT count(*) FROM orders".to_owned(),
        "UPDATE countries c SET name = o.item FROM orders o WHERE o.item = 'x'".to_owned(),
        "DELETE FROM countries c USING orders o WHERE o.item = c.code".to_owned(),
        "INSERT INTO countries (code, name) VALUES ((SELECT max(item) FROM orders), 'x')".to_owned(),
        "UPDATE countries SET name = (SELECT max(item) FROM orders)".to_owned(),
        "INSERT INTO countries (code, name) VALUES ('fr', 'x') ON CONFLICT (code) DO UPDATE SET name = (SELECT max(item) FROM orders)".to_owned(),
        "MERGE INTO countries c USING orders o ON c.code = o.item WHEN MATCHED THEN DELETE".to_owned(),
        format!("WITH i AS (INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 9, 'z') RETURNING *) SELECT count(*) FROM orders"),
        "WITH i AS (INSERT INTO orders (id, item) VALUES (9, 'z') RETURNING *) SELECT * FROM i".to_owned(),
        // Its rows would need a merge across shards.
        "WITH d AS (DELETE FROM orders WHERE item = 'none' RETURNING *) SELECT count(*) FROM orders".to_owned(),
    ] {
        let err = client.simple_query(&sql).await.unwrap_err();
        assert_eq!(code(&err), Some("0A000"), "{sql}: {err:?}");
        let err = client.execute(sql.as_str(), &[]).await.unwrap_err();
        assert_eq!(code(&err), Some("0A000"), "{sql}: {err:?}");
    }
    let names = column(&client, "SELECT name FROM countries ORDER BY code", "name").await;
    assert_eq!(names, vec!["Germany", "France"]);
    // A DELETE in a WITH query reaches every shard its rows are on, even
    // when the rest of the statement is keyed to one.
    let seen = column(
        &client,
        &format!("WITH d AS (DELETE FROM orders WHERE item = 'x' RETURNING *) SELECT id FROM orders WHERE tenant_id = {a}"),
        "id",
    )
    .await;
    assert_eq!(seen.len(), 2);
    let left = column(
        &client,
        "SELECT count(*) AS n FROM orders WHERE item = 'x'",
        "n",
    )
    .await;
    assert_eq!(left, vec!["0"]);
    let n = client
        .execute(
            "WITH d AS (DELETE FROM orders WHERE item = $1 RETURNING *) SELECT * FROM orders",
            &[&"y"],
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    let left = column(&client, "SELECT count(*) AS n FROM orders", "n").await;
    assert_eq!(left, vec!["0"]);
    // An INSERT in a WITH query goes to its rows' shard, with the rest.
    let inserted = column(
        &client,
        &format!("WITH i AS (INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 7, 'q') RETURNING id) SELECT id FROM i"),
        "id",
    )
    .await;
    assert_eq!(inserted, vec!["7"]);
    let on_b = column(
        &cluster.shard(1).await,
        "SELECT count(*) AS n FROM orders WHERE id = 7",
        "n",
    )
    .await;
    assert_eq!(on_b, vec!["1"]);
    assert_eq!(common::proxy_panics(), 0);
}
