//! A move of a plain sharded table (one table holding rows of several
//! logical shards), and of a table partitioned by hash (a partition per
//! logical shard), interrupted by a crash of pgshard, against two real
//! Postgres 15 servers with `wal_level = logical`: mid catch-up (the
//! copy's rows on the target, the source fenced not yet) the next instance
//! rolls it back; after the switch (the source's rows of the shard fenced
//! and not yet deleted) it finishes the cleanup. Either way each row is in
//! exactly one database, the one the placement names, keyless statements
//! through the next instance count every row once, no fence trigger is
//! left after a rollback, and no slot, publication or subscription is
//! left.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::moves::{
    admin, app, count, logical_servers, no_stream_left, placement, start, superuser, users,
    wait_move, SHARD_COUNT,
};
use integration::TestProxy;
use proxy::reshard::fault::Fault;
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};

/// Accounts made before the move: ids 1 to ACCOUNTS.
const ACCOUNTS: i64 = 500;

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"accounts\"
column = \"id\"
data_type = \"bigint\"
shard_count = 8
";

fn shard_of(id: i64) -> usize {
    let keys = KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: SHARD_COUNT,
        },
        placement: (0..SHARD_COUNT).map(|s| s % 2).collect(),
        moving: None,
    };
    logical_shard(&keys, &Key::Int(id)).unwrap()
}

/// `accounts` on database `database` of two: one table, or partitioned
/// by hash with the partitions of the logical shards placed there.
fn accounts(database: usize, partitioned: bool) -> String {
    if !partitioned {
        return "CREATE TABLE accounts (id bigint PRIMARY KEY, n bigint NOT NULL)".into();
    }
    let mut sql =
        "CREATE TABLE accounts (id bigint PRIMARY KEY, n bigint NOT NULL) PARTITION BY HASH (id)"
            .to_owned();
    for s in (0..SHARD_COUNT).filter(|s| s % 2 == database) {
        sql.push_str(&format!(
            "; CREATE TABLE accounts_{s} PARTITION OF accounts \
             FOR VALUES WITH (MODULUS {SHARD_COUNT}, REMAINDER {s})"
        ));
    }
    sql
}

/// Crash pgshard with a move of logical shard 2 parked at `fault`; the
/// next instance rolls it back (or, after the switch, finishes it).
async fn crash_at(fault: Fault, parked: &str, partitioned: bool) {
    const MOVING: usize = 2;
    let servers = logical_servers(2);
    for (database, server) in servers.iter().enumerate() {
        let ids: Vec<String> = (1..=ACCOUNTS)
            .filter(|&id| shard_of(id) % 2 == database)
            .map(|id| id.to_string())
            .collect();
        server
            .psql(
                &format!("shard_{database}"),
                &format!(
                    "SET ROLE app; {}; \
                     INSERT INTO accounts SELECT id, 0 FROM unnest('{{{}}}'::bigint[]) id",
                    accounts(database, partitioned),
                    ids.join(",")
                ),
            )
            .unwrap();
    }
    let config = common::sharded_config(&servers, "", SHARDING);
    let first = start(&config);
    first.state().moves.inject(fault);
    let admin1 = admin(&first).await;
    let id = common::rows(&admin1, &format!("MOVE SHARD {MOVING} TO 1")).await[0]["id"].clone();
    wait_move(&admin1, &id, |s| s == parked).await;
    // Writes of the moving shard acknowledged before the crash.
    let client = app(&first).await;
    let written: Vec<i64> = (1_000_000..)
        .filter(|&id| shard_of(id) == MOVING)
        .take(20)
        .collect();
    for &id in &written {
        let sql = format!("INSERT INTO accounts VALUES ({id}, 1)");
        client.simple_query(&sql).await.unwrap();
    }
    drop((client, admin1));
    first.crash();

    let next = TestProxy::start(&config, &users()).unwrap();
    let moves = &next.state().moves;
    moves.set_cleanup_delay(Duration::from_millis(300));
    moves.set_poll_interval(Duration::from_millis(100));
    moves.set_lease(Duration::from_millis(300));
    let admin2 = admin(&next).await;
    let status = wait_move(&admin2, &id, |s| s == "done" || s == "failed").await;
    let switched = fault == Fault::AfterSwitch;
    let (a, b) = (
        superuser(&servers[0], 0).await,
        superuser(&servers[1], 1).await,
    );
    no_stream_left(&a, &b).await;
    if switched {
        assert_eq!(status["step"], "done", "{status:?}");
    } else {
        assert_eq!(status["step"], "failed", "{status:?}");
        assert!(status["error"].contains("interrupted"), "{status:?}");
        let fences = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgshard_fence%'";
        assert_eq!(count(&a, fences).await, 0, "the rollback drops the fence");
    }
    if partitioned {
        // The shard's partition is on one database, attached there.
        let part = format!(
            "SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass('accounts_{MOVING}')"
        );
        let there = "SELECT count(*) FROM pg_class WHERE relname = 'accounts_2'";
        let (home, away) = if switched { (&b, &a) } else { (&a, &b) };
        assert_eq!(count(home, &part).await, 1, "the partition attached");
        assert_eq!(count(away, there).await, 0, "no partition left behind");
    }
    // Every row once, where the placement says.
    let owner = usize::from(switched);
    assert_eq!(placement(&admin2).await[MOVING].0, owner);
    let all: Vec<i64> = (1..=ACCOUNTS).chain(written.iter().copied()).collect();
    for id in all.iter().copied() {
        let home = if shard_of(id) == MOVING {
            owner
        } else {
            shard_of(id) % 2
        };
        let sql = format!("SELECT count(*) FROM accounts WHERE id = {id}");
        let (here, there) = if home == 0 { (&a, &b) } else { (&b, &a) };
        assert_eq!(
            count(here, &sql).await,
            1,
            "account {id} on database {home}"
        );
        assert_eq!(count(there, &sql).await, 0, "account {id} only on {home}");
    }
    // Keyless statements through the next instance see every row once.
    let through = app(&next).await;
    let total: i64 = through
        .query_one("SELECT count(*) FROM accounts", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, all.len() as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_catch_up_rolls_a_plain_move_back() {
    crash_at(Fault::MidCatchup, "catchup", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_switch_finishes_a_plain_move() {
    crash_at(Fault::AfterSwitch, "switched", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_catch_up_rolls_a_partition_move_back() {
    crash_at(Fault::MidCatchup, "catchup", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_switch_finishes_a_partition_move() {
    crash_at(Fault::AfterSwitch, "switched", true).await;
}
