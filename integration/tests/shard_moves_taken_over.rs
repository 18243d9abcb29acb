//! Moves of plain sharded tables (one table holding rows of several
//! logical shards) and of tables partitioned by hash (a partition per
//! logical shard), two tables per placement group, interrupted by a crash
//! of pgshard (in this process, or SIGKILL of its own process), against
//! two real Postgres 15 servers with `wal_level = logical`: mid copy (the
//! first table's rows on the target, the second's not), mid catch-up,
//! and while holding statements (the source fenced, a write of the shard
//! waiting) the next instance rolls it back; after the switch (the
//! source's rows of the shard fenced and not yet deleted) it finishes the
//! cleanup. Either way each row is in exactly one database, the one the
//! placement names, a held write was never run, keyless statements through
//! the next instance count every row once, no fence trigger is left after
//! a rollback, and no slot, publication or subscription is left.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::moves::{
    admin, app, count, held_write, logical_servers, never_answered, no_stream_left, placement,
    shard_of, superuser, users, wait_move, wait_parked, First, SHARD_COUNT,
};
use integration::TestProxy;
use proxy::reshard::fault::Fault;

/// Accounts made before the move: ids 1 to ACCOUNTS.
const ACCOUNTS: i64 = 500;

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"accounts\"
column = \"id\"
data_type = \"bigint\"
shard_count = 8

[[sharded_tables]]
database = \"prod\"
name = \"transfers\"
column = \"account\"
data_type = \"bigint\"
shard_count = 8
";

/// The logical shard the tests move (from database 0 to 1).
const MOVING: usize = 2;

const ACCOUNTS_TABLE: &str = "accounts (id bigint PRIMARY KEY, n bigint NOT NULL)";
const TRANSFERS_TABLE: &str =
    "transfers (account bigint NOT NULL, id bigint NOT NULL, amount bigint NOT NULL, PRIMARY KEY (account, id))";

/// `definition` (`name (columns)`) on database `database` of two: one
/// table, or partitioned by hash on its first column with the partitions
/// of the logical shards placed there.
fn table(definition: &str, database: usize, partitioned: bool) -> String {
    if !partitioned {
        return format!("CREATE TABLE {definition}");
    }
    let (name, columns) = definition.split_once(' ').unwrap();
    let key = columns.trim_start_matches('(').split(' ').next().unwrap();
    let mut sql = format!("CREATE TABLE {definition} PARTITION BY HASH ({key})");
    for s in (0..SHARD_COUNT).filter(|s| s % 2 == database) {
        sql.push_str(&format!(
            "; CREATE TABLE {name}_{s} PARTITION OF {name} \
             FOR VALUES WITH (MODULUS {SHARD_COUNT}, REMAINDER {s})"
        ));
    }
    sql
}

/// Crash pgshard (in this process, or SIGKILL with `sigkill`) with a move
/// of logical shard 2 parked at `fault`; the next instance rolls it back
/// (or, after the switch, finishes it).
async fn crash_at(fault: Fault, parked: &str, partitioned: bool, sigkill: bool) {
    let servers = logical_servers(2);
    create(&servers, partitioned);
    let config = common::moves_config(&servers, "", SHARDING);
    let (first, port) = First::start(&config, fault, sigkill).await;
    let admin1 = common::connect(port, "admin", "admin-pw", "admin")
        .await
        .unwrap();
    let id = common::rows(&admin1, &format!("MOVE SHARD {MOVING} TO 1")).await[0]["id"].clone();
    wait_parked(&admin1, &id, parked).await;
    let b = superuser(&servers[1], 1).await;
    if fault == Fault::MidCopy {
        half_copied(&b, partitioned).await;
    }
    let client = common::connect(port, "app", "app-pw", "prod")
        .await
        .unwrap();
    let mut ids = (1_000_000..).filter(|&id| shard_of(id, SHARD_COUNT) == MOVING);
    // While holding, a write of the shard waits when pgshard dies (and is
    // never run); at the other points, writes of the shard acknowledged
    // before the crash.
    let (held, written): (_, Vec<i64>) = if fault == Fault::WhileHolding {
        let held_id = ids.next().unwrap();
        let sql = format!("INSERT INTO accounts VALUES ({held_id}, 1)");
        (Some((held_id, held_write(client, sql).await)), Vec::new())
    } else {
        let written: Vec<i64> = ids.by_ref().take(20).collect();
        for &id in &written {
            let sql = format!("INSERT INTO accounts VALUES ({id}, 1)");
            client.simple_query(&sql).await.unwrap();
        }
        (None, written)
    };
    drop(admin1);
    first.stop();
    let held_id = held.as_ref().map(|(id, _)| *id);
    if let Some((_, write)) = held {
        never_answered(write).await;
    }

    let next = TestProxy::start(&config, &users()).unwrap();
    let moves = &next.state().moves;
    moves.set_cleanup_delay(Duration::from_millis(300));
    moves.set_poll_interval(Duration::from_millis(100));
    moves.set_lease(Duration::from_millis(300));
    let admin2 = admin(&next).await;
    let status = wait_move(&admin2, &id, |s| s == "done" || s == "failed").await;
    let switched = fault == Fault::AfterSwitch;
    let a = superuser(&servers[0], 0).await;
    no_stream_left(&a, &b).await;
    if switched {
        assert_eq!(status["step"], "done", "{status:?}");
    } else {
        assert_eq!(status["step"], "failed", "{status:?}");
        assert!(status["error"].contains("interrupted"), "{status:?}");
        let fences = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgshard_fence%'";
        assert_eq!(count(&a, fences).await, 0, "the rollback drops the fence");
    }
    let owner = usize::from(switched);
    assert_eq!(placement(&admin2).await[MOVING].0, owner);
    if partitioned {
        partitions_placed(owner, (&a, &b)).await;
    }
    let accounts: Vec<i64> = (1..=ACCOUNTS).chain(written.iter().copied()).collect();
    once_each("accounts", "id", &accounts, owner, (&a, &b)).await;
    let transfers: Vec<i64> = (1..=ACCOUNTS).collect();
    once_each("transfers", "account", &transfers, owner, (&a, &b)).await;
    if let Some(held_id) = held_id {
        let sql = format!("SELECT count(*) FROM accounts WHERE id = {held_id}");
        assert_eq!(
            count(&a, &sql).await + count(&b, &sql).await,
            0,
            "never run"
        );
    }
    // Keyless statements through the next instance see every row once,
    // and the shard takes writes again.
    let through = app(&next).await;
    let total: i64 = through
        .query_one("SELECT count(*) FROM accounts", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, accounts.len() as i64);
    let again = ids.next().unwrap();
    let sql = format!("INSERT INTO accounts VALUES ({again}, 1)");
    through.simple_query(&sql).await.unwrap();
    let sql = format!("SELECT count(*) FROM accounts WHERE id = {again}");
    let home = if owner == 0 { &a } else { &b };
    assert_eq!(count(home, &sql).await, 1);
}

/// `accounts` (500 rows) and `transfers` (one per account) on both
/// databases, by the default placement.
fn create(servers: &[integration::PgServer], partitioned: bool) {
    for (database, server) in servers.iter().enumerate() {
        let ids: Vec<String> = (1..=ACCOUNTS)
            .filter(|&id| shard_of(id, SHARD_COUNT) % 2 == database)
            .map(|id| id.to_string())
            .collect();
        server
            .psql(
                &format!("shard_{database}"),
                &format!(
                    "SET ROLE app; {}; {}; \
                     INSERT INTO accounts SELECT id, 0 FROM unnest('{{{ids}}}'::bigint[]) id; \
                     INSERT INTO transfers SELECT id, 1, 5 FROM unnest('{{{ids}}}'::bigint[]) id",
                    table(ACCOUNTS_TABLE, database, partitioned),
                    table(TRANSFERS_TABLE, database, partitioned),
                    ids = ids.join(",")
                ),
            )
            .unwrap();
    }
}

/// The copy stopped after the first table (`accounts`): the shard's rows
/// of it on the target, none of `transfers`.
async fn half_copied(b: &tokio_postgres::Client, partitioned: bool) {
    let moving: Vec<String> = (1..=ACCOUNTS)
        .filter(|&id| shard_of(id, SHARD_COUNT) == MOVING)
        .map(|id| id.to_string())
        .collect();
    let (accounts, transfers) = if partitioned {
        (format!("accounts_{MOVING}"), format!("transfers_{MOVING}"))
    } else {
        ("accounts".to_owned(), "transfers".to_owned())
    };
    let list = moving.join(",");
    let copied = format!("SELECT count(*) FROM {accounts} WHERE id IN ({list})");
    assert_eq!(
        count(b, &copied).await,
        moving.len() as i64,
        "accounts copied"
    );
    let copied = format!("SELECT count(*) FROM {transfers} WHERE account IN ({list})");
    assert_eq!(count(b, &copied).await, 0, "transfers not copied yet");
}

/// The shard's partitions attached on database `owner`, gone from the
/// other.
async fn partitions_placed(
    owner: usize,
    (a, b): (&tokio_postgres::Client, &tokio_postgres::Client),
) {
    let (home, away) = if owner == 1 { (b, a) } else { (a, b) };
    for table in ["accounts", "transfers"] {
        let part = format!(
            "SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass('{table}_{MOVING}')"
        );
        let there = format!("SELECT count(*) FROM pg_class WHERE relname = '{table}_{MOVING}'");
        assert_eq!(count(home, &part).await, 1, "{table}'s partition attached");
        assert_eq!(count(away, &there).await, 0, "no partition left behind");
    }
}

/// Each of `keys` in `column` of `table` exactly once, on the database the
/// placement names (`owner` for the moving shard), and nothing else.
async fn once_each(
    table: &str,
    column: &str,
    keys: &[i64],
    owner: usize,
    (a, b): (&tokio_postgres::Client, &tokio_postgres::Client),
) {
    let mut found: Vec<(i64, usize)> = Vec::new();
    for (database, client) in [a, b].into_iter().enumerate() {
        let sql = format!("SELECT {column} FROM {table}");
        for row in client.query(&sql, &[]).await.unwrap() {
            found.push((row.get(0), database));
        }
    }
    found.sort_unstable();
    let want: Vec<(i64, usize)> = {
        let mut want: Vec<(i64, usize)> = keys
            .iter()
            .map(|&k| {
                (
                    k,
                    if shard_of(k, SHARD_COUNT) == MOVING {
                        owner
                    } else {
                        shard_of(k, SHARD_COUNT) % 2
                    },
                )
            })
            .collect();
        want.sort_unstable();
        want
    };
    assert_eq!(found.len(), want.len(), "{table}: every row once");
    assert_eq!(found, want, "{table}: each row where the placement says");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_catch_up_rolls_a_plain_move_back() {
    crash_at(Fault::MidCatchup, "catchup", false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_switch_finishes_a_plain_move() {
    crash_at(Fault::AfterSwitch, "switched", false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_catch_up_rolls_a_partition_move_back() {
    crash_at(Fault::MidCatchup, "catchup", true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_switch_finishes_a_partition_move() {
    crash_at(Fault::AfterSwitch, "switched", true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_mid_copy_rolls_a_plain_move_back() {
    crash_at(Fault::MidCopy, "copy", false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_mid_copy_rolls_a_partition_move_back() {
    crash_at(Fault::MidCopy, "copy", true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_while_holding_rolls_a_plain_move_back() {
    crash_at(Fault::WhileHolding, "fenced", false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_while_holding_rolls_a_partition_move_back() {
    crash_at(Fault::WhileHolding, "fenced", true, true).await;
}
