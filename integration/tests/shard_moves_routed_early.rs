//! Keyless statements routed before an instance marked a move (issue 33):
//! a `SELECT count(*)` without the sharding key, routed before the move's
//! marker was installed and kept waiting for a server (the pool of the
//! target database exhausted by a held transaction) until after the move
//! went past its marking step, must not count the copied rows twice. The
//! mover's own process (the one instance here) goes past its mark only
//! once that statement finished: SHOW MOVES names it in `waiting_for`
//! meanwhile, and the count is exact. And an instance that has never read
//! a cluster's move records (a database down since start-up) refuses
//! keyless statements after waiting for the first read, instead of serving
//! them by its config; once a read succeeds it serves them, exact.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::moves::{
    admin, app, logical_servers, shard_of, start, wait_move, wait_parked, SHARD_COUNT,
};
use integration::PgServer;
use proxy::reshard::fault::Fault;
use tokio_postgres::Client;

const ACCOUNTS: i64 = 500;

/// How SHOW MOVES' `waiting_for` names the mover's own process while its
/// sessions that began routing before the mark are busy.
const ROUTED_BEFORE: &str = "began routing before the mark";

/// The logical shard the test moves (from database 0 to 1).
const MOVING: usize = 2;

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"accounts\"
column = \"id\"
data_type = \"bigint\"
shard_count = 8
";

/// Two servers with `accounts` (ids 1 to ACCOUNTS, by the default
/// placement), and the config in front of them with `general` lines (the
/// default freshness bound, 10 s: the keyless count must be served, not
/// refused by a 3 s bound that lapsed on a loaded host).
fn cluster(general: &str) -> (Vec<PgServer>, String) {
    let servers = logical_servers(2);
    for (database, server) in servers.iter().enumerate() {
        let ids: Vec<String> = (1..=ACCOUNTS)
            .filter(|&id| shard_of(id, SHARD_COUNT) % 2 == database)
            .map(|id| id.to_string())
            .collect();
        let sql = format!(
            "SET ROLE app; CREATE TABLE accounts (id bigint PRIMARY KEY, n bigint NOT NULL); \
             INSERT INTO accounts SELECT id, 0 FROM unnest('{{{}}}'::bigint[]) id",
            ids.join(",")
        );
        server.psql(&format!("shard_{database}"), &sql).unwrap();
    }
    let config = common::sharded_config(&servers, general, SHARDING);
    (servers, config)
}

async fn keyless(client: &Client) -> Result<i64, tokio_postgres::Error> {
    let row = client
        .query_one("SELECT count(*) FROM accounts", &[])
        .await?;
    Ok(row.get(0))
}

/// An id whose logical shard is on `database` (1: the target).
fn on_database(database: usize) -> i64 {
    (1..=ACCOUNTS)
        .find(|&id| shard_of(id, SHARD_COUNT) % 2 == database)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keyless_count_routed_before_the_mark_finishes_before_any_row_is_copied() {
    // One server per database, and a checkout that waits long enough.
    let (_servers, config) = cluster("default_pool_size = 1\ncheckout_timeout = 60000");
    let proxy = start(&config);
    proxy.state().moves.inject(Fault::MidCopy);
    // The target's only server, held by an open transaction.
    let holder = app(&proxy).await;
    holder.batch_execute("BEGIN").await.unwrap();
    let keyed = format!("SELECT n FROM accounts WHERE id = {}", on_database(1));
    assert_eq!(holder.query(&keyed, &[]).await.unwrap().len(), 1);
    // The count is routed now (no move marked), and waits for that server.
    let counter = app(&proxy).await;
    let counting = tokio::spawn(async move { keyless(&counter).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    if counting.is_finished() {
        panic!("the count did not wait for a server: {:?}", counting.await);
    }
    let admin = admin(&proxy).await;
    let id = common::rows(&admin, &format!("MOVE SHARD {MOVING} TO 1")).await[0]["id"].clone();
    // The move waits in its marking step for the count (on a pgshard that
    // does not wait, it copies rows meanwhile).
    let begun = Instant::now();
    let waiting = loop {
        let row = wait_move(&admin, &id, |s| s != "planned" && s != "schema").await;
        if row["step"] != "marking" || row["waiting_for"].contains(ROUTED_BEFORE) {
            break row;
        }
        // The cluster's first move: 10.5 s before it waits for marks.
        assert!(begun.elapsed() < Duration::from_secs(40), "{row:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    if waiting["step"] == "marking" {
        // It keeps waiting while the count is not done.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let still = wait_move(&admin, &id, |_| true).await;
        assert_eq!(still["step"], "marking", "{still:?}");
    } else {
        // A pgshard that does not wait: the shard's rows are copied while
        // the count waits.
        wait_parked(&admin, &id, "copy").await;
    }
    assert!(!counting.is_finished());
    holder.batch_execute("COMMIT").await.unwrap();
    let counted = counting.await.unwrap();
    assert_eq!(
        counted.unwrap(),
        ACCOUNTS,
        "the count routed before the mark"
    );
    assert_eq!(waiting["step"], "marking", "{waiting:?}");
    assert_eq!(waiting["rows_copied"], "0", "{waiting:?}");
    // Then the move goes on, and copies the shard's rows.
    let parked = wait_move(&admin, &id, |s| s == "copy" || s == "failed").await;
    assert_eq!(parked["step"], "copy", "{parked:?}");
    // A keyless count now is refused (the marker), never served twice.
    let client = app(&proxy).await;
    let err = keyless(&client).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    proxy.state().moves.clear_fault(Fault::MidCopy);
    let status = wait_move(&admin, &id, |s| s == "done" || s == "failed").await;
    assert_eq!(status["step"], "done", "{status:?}");
    let begun = Instant::now();
    loop {
        match keyless(&client).await {
            Ok(n) => {
                assert_eq!(n, ACCOUNTS, "after the move");
                break;
            }
            Err(err) => assert_eq!(common::code(&err), Some("0A000"), "{err:?}"),
        }
        assert!(begun.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_that_never_read_the_moves_refuses_keyless_statements() {
    // A connect_timeout a loaded host's logins fit in (1 s did not always).
    let (mut servers, config) = cluster("connect_timeout = 3000");
    // Database 1 is down from before the start: the move records cannot
    // be read.
    servers[1].stop().unwrap();
    let proxy = start(&config);
    let client = app(&proxy).await;
    let begun = Instant::now();
    let err = keyless(&client).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    let message = err.as_db_error().unwrap().message().to_owned();
    assert!(message.contains("has not read lately"), "{message}");
    // It names the database whose reads fail and why, not its address.
    assert!(
        message.contains(
            "(its reads fail: database 1: cannot connect: Connection refused (os error 111); \
             none has succeeded since it started)"
        ),
        "{message}"
    );
    assert!(!message.contains("127.0.0.1"), "{message}");
    assert!(
        begun.elapsed() >= Duration::from_millis(2_900),
        "it waited for the first read first: {:?}",
        begun.elapsed()
    );
    // A keyed statement on the database that answers is served.
    let sql = format!("SELECT n FROM accounts WHERE id = {}", on_database(0));
    assert_eq!(client.query(&sql, &[]).await.unwrap().len(), 1);
    servers[1].start_again().unwrap();
    let begun = Instant::now();
    loop {
        // Refused until the next read (1 s), or failed while the server
        // comes back; never served by the config alone.
        if let Ok(n) = keyless(&client).await {
            assert_eq!(n, ACCOUNTS, "once read");
            break;
        }
        assert!(begun.elapsed() < Duration::from_secs(20), "never read");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(admin(&proxy).await);
}
