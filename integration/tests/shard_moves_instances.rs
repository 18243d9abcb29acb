//! Keyless statements during a move of a plain sharded table, on every
//! pgshard instance in front of the same two Postgres 15 servers (issue
//! 33): while `pgshard.moves` records the move unfinished, a statement on
//! the group's table without its sharding key (that would count the
//! moving shard's rows on both databases) is refused with 0A000 by the
//! instance that runs the move, by another one that does not, and by one
//! started after the first was killed mid-move (before the 30-second
//! lease lets it take the move over); keyed statements are served all
//! along; once the move is done (or rolled back) every instance serves
//! the keyless statement again, exact.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::moves::{admin, app, logical_servers, shard_of, start, wait_move, First, SHARD_COUNT};
use integration::PgServer;
use proxy::reshard::fault::Fault;
use tokio_postgres::Client;

const ACCOUNTS: i64 = 500;

/// The logical shard the tests move (from database 0 to 1).
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
/// placement), and the config in front of them.
fn cluster() -> (Vec<PgServer>, String) {
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
    let config = common::sharded_config(&servers, "", SHARDING);
    (servers, config)
}

async fn keyless(client: &Client) -> Result<i64, tokio_postgres::Error> {
    let row = client
        .query_one("SELECT count(*) FROM accounts", &[])
        .await?;
    Ok(row.get(0))
}

/// Wait (at most 10 s) until the keyless count on `client` is refused
/// with 0A000 (`refused`), or served with every row once.
async fn until_keyless(client: &Client, refused: bool, who: &str) {
    let begun = Instant::now();
    loop {
        match keyless(client).await {
            Err(err) if common::code(&err) == Some("0A000") => {
                let message = err.as_db_error().unwrap().message().to_owned();
                assert!(message.contains("accounts"), "{message}");
                if refused {
                    return;
                }
            }
            Err(err) => panic!("{who}: {err:?}"),
            Ok(n) if !refused => {
                assert_eq!(n, ACCOUNTS, "{who}: every row once");
                return;
            }
            Ok(_) => {}
        }
        assert!(
            begun.elapsed() < Duration::from_secs(10),
            "{who}: keyless statements {}",
            if refused { "refused" } else { "served" }
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A keyed read of the moving shard is served.
async fn keyed(client: &Client) {
    let id = (1..=ACCOUNTS)
        .find(|&id| shard_of(id, SHARD_COUNT) == MOVING)
        .unwrap();
    let sql = format!("SELECT n FROM accounts WHERE id = {id}");
    assert_eq!(client.query(&sql, &[]).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_instance_refuses_keyless_statements_while_a_move_is_unfinished() {
    let (_servers, config) = cluster();
    let first = start(&config);
    first.state().moves.inject(Fault::MidCatchup);
    let second = start(&config);
    let (one, two) = (app(&first).await, app(&second).await);
    until_keyless(&one, false, "the moving instance, before").await;
    until_keyless(&two, false, "the other instance, before").await;
    let admin1 = admin(&first).await;
    let id = common::rows(&admin1, &format!("MOVE SHARD {MOVING} TO 1")).await[0]["id"].clone();
    wait_move(&admin1, &id, |s| s == "catchup").await;
    until_keyless(&one, true, "the moving instance, during").await;
    until_keyless(&two, true, "the other instance, during").await;
    keyed(&one).await;
    keyed(&two).await;
    assert!(
        second.state().moves.list().is_empty(),
        "the other instance runs no move"
    );
    first.state().moves.clear_fault(Fault::MidCatchup);
    let status = wait_move(&admin1, &id, |s| s == "done" || s == "failed").await;
    assert_eq!(status["step"], "done", "{status:?}");
    until_keyless(&one, false, "the moving instance, after").await;
    until_keyless(&two, false, "the other instance, after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_started_after_a_kill_refuses_keyless_statements_until_the_take_over() {
    let (_servers, config) = cluster();
    let (first, port) = First::start(&config, Fault::MidCatchup, true).await;
    let admin1 = common::connect(port, "admin", "admin-pw", "admin")
        .await
        .unwrap();
    let id = common::rows(&admin1, &format!("MOVE SHARD {MOVING} TO 1")).await[0]["id"].clone();
    wait_move(&admin1, &id, |s| s == "catchup").await;
    drop(admin1);
    first.stop();
    // The lease (30 s) keeps the move from being taken over for a while:
    // the new instance reads it unfinished before its first client.
    let next = start(&config);
    let client = app(&next).await;
    let err = keyless(&client).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    keyed(&client).await;
    assert!(
        next.state().moves.list().is_empty(),
        "not taken over yet: {:?}",
        next.state().moves.list()
    );
    next.state().moves.set_lease(Duration::from_millis(300));
    let admin2 = admin(&next).await;
    let status = wait_move(&admin2, &id, |s| s == "failed").await;
    assert!(status["error"].contains("interrupted"), "{status:?}");
    until_keyless(&client, false, "after the take-over").await;
}
