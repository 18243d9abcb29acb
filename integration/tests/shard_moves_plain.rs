//! Moving a logical shard of plain sharded tables (issue 33, step 8):
//! tables holding rows of several logical shards on each of two real
//! Postgres 15 servers (`wal_level = logical`), one with a primary key on
//! its sharding key, one without any (the move sets `REPLICA IDENTITY
//! FULL` for its duration, as `resharding_replica_identity_full` allows).
//! `MOVE SHARD` moves one logical shard's rows from database 0 to 1 while
//! clients insert, update and delete keyed rows through pgshard the whole
//! time: no write fails, none is lost, and afterwards each row is in
//! exactly one database, the one the new placement names. Between the
//! switch and the cleanup, a stale write made directly on database 0 to a
//! moved row is refused by the fence (55000), keyless statements on the
//! group's tables are refused (0A000), and the fence stays after the
//! cleanup for stale INSERTs. No slot, publication or subscription is
//! left. Also: a table whose replica identity lacks the key is refused
//! unless FULL is allowed, and the failed move leaves nothing behind; the
//! fence waits for a transaction on database 0 itself that wrote a row of
//! the shard, whose write then reaches database 1; a shard moved there and
//! back is served by database 0 again, and database 1 is fenced; a second
//! pgshard instance with the old placement gets the fence error for its
//! UPDATE, DELETE and INSERT on the moved shard, never a write.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::moves::logical_servers;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Cluster, USERS};
use integration::{PgServer, TestProxy};
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};

const SHARD_COUNT: usize = 8;
/// Accounts made before the move: ids 1 to ACCOUNTS.
const ACCOUNTS: i64 = 2000;

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"accounts\"
column = \"id\"
data_type = \"bigint\"
shard_count = 8

[[sharded_tables]]
database = \"prod\"
name = \"entries\"
column = \"account\"
data_type = \"bigint\"
shard_count = 8
";

const TABLES: &str = "CREATE TABLE accounts (id bigint PRIMARY KEY, n bigint NOT NULL, v text); \
    CREATE TABLE entries (account bigint NOT NULL, k bigint NOT NULL, v text)";

fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"mover-pw\"\n\
         server_user = \"postgres\"\n"
    )
}

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

/// The database that holds `id` once `moving` is on database 1.
fn home(id: i64, moving: usize) -> usize {
    match shard_of(id) {
        s if s == moving => 1,
        s => s % 2,
    }
}

async fn superuser(server: &PgServer, database: &str) -> tokio_postgres::Client {
    common::connect_str(&server.conninfo("postgres", None, database))
        .await
        .unwrap()
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

async fn show_move(admin: &tokio_postgres::Client) -> std::collections::HashMap<String, String> {
    let rows = common::rows(admin, "SHOW MOVES").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].clone()
}

/// Wait for the move's step to be one of `steps`.
async fn wait_step(admin: &tokio_postgres::Client, steps: &[&str]) -> BTreeMap<String, String> {
    let begun = Instant::now();
    loop {
        let status = show_move(admin).await;
        if steps.contains(&status["step"].as_str()) || status["step"] == "failed" {
            return status.into_iter().collect();
        }
        assert!(begun.elapsed() < Duration::from_secs(120), "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the clients were told was written.
#[derive(Default)]
struct Log {
    inserted: BTreeSet<i64>,
    deleted: BTreeSet<i64>,
    /// Updates acknowledged, by account.
    updates: BTreeMap<i64, i64>,
    entries: BTreeSet<(i64, i64)>,
}

/// Three clients through pgshard until `stop`: new accounts (extended
/// protocol), updates of accounts 1..=1000 each with an entry (a simple
/// protocol transaction), deletes of accounts 1001 onwards (extended).
async fn writers(
    cluster: &Cluster,
    stop: &Arc<AtomicBool>,
    log: &Arc<Mutex<Log>>,
) -> Vec<tokio::task::JoinHandle<Vec<String>>> {
    let mut handles = Vec::new();
    for role in 0..3 {
        let client = cluster.connect().await;
        let (stop, log) = (Arc::clone(stop), Arc::clone(log));
        handles.push(tokio::spawn(async move {
            let mut errors = Vec::new();
            let mut i: i64 = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let done = match role {
                    0 => {
                        let id = 1_000_000 + i;
                        let sql = "INSERT INTO accounts (id, n, v) VALUES ($1, 0, 'new')";
                        let done = client.execute(sql, &[&id]).await.map(drop);
                        if done.is_ok() {
                            log.lock().unwrap().inserted.insert(id);
                        }
                        done
                    }
                    1 => {
                        let id = 1 + i % 1000;
                        let sql = format!(
                            "BEGIN; UPDATE accounts SET n = n + 1 WHERE id = {id}; \
                             INSERT INTO entries (account, k, v) VALUES ({id}, {i}, 'e'); COMMIT"
                        );
                        let done = client.simple_query(&sql).await.map(drop);
                        if done.is_ok() {
                            let mut log = log.lock().unwrap();
                            *log.updates.entry(id).or_default() += 1;
                            log.entries.insert((id, i));
                        }
                        done
                    }
                    _ => {
                        let id = 1000 + i;
                        if id > ACCOUNTS {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            continue;
                        }
                        let sql = "DELETE FROM accounts WHERE id = $1";
                        let done = client.execute(sql, &[&id]).await.map(|n| {
                            assert_eq!(n, 1, "account {id} deleted");
                        });
                        if done.is_ok() {
                            log.lock().unwrap().deleted.insert(id);
                        }
                        done
                    }
                };
                if let Err(e) = done {
                    errors.push(common::describe(&e));
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            errors
        }));
    }
    handles
}

/// Two servers with the tables on both, `ACCOUNTS` accounts and an entry
/// each placed by their logical shard; pgshard over them.
fn start(general: &str) -> Cluster {
    let servers = logical_servers(2);
    for (database, server) in servers.iter().enumerate() {
        let mine: Vec<String> = (1..=ACCOUNTS)
            .filter(|&id| shard_of(id) % 2 == database)
            .map(|id| id.to_string())
            .collect();
        server
            .psql(
                &format!("shard_{database}"),
                &format!(
                    "SET ROLE app; {TABLES}; \
                     INSERT INTO accounts SELECT id, 0, 'old' FROM unnest('{{{ids}}}'::bigint[]) id; \
                     INSERT INTO entries SELECT id, 0, 'old' FROM unnest('{{{ids}}}'::bigint[]) id",
                    ids = mine.join(",")
                ),
            )
            .unwrap();
    }
    let config = common::moves_config(&servers, general, SHARDING);
    let proxy = TestProxy::start(&config, &users()).unwrap();
    Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plain_shard_moves_while_clients_write() {
    common::watch_proxy_panics();
    let general = "cutover_timeout = 10000\nresharding_replication_retry_min_delay = 100\n\
                   resharding_replica_identity_full = true";
    let cluster = start(general);
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_secs(3));
    let moving = 2;
    let stop = Arc::new(AtomicBool::new(false));
    let log: Arc<Mutex<Log>> = Arc::default();
    let handles = writers(&cluster, &stop, &log).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let admin = cluster.admin().await;
    common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await;
    let client = cluster.connect().await;
    let status = wait_step(&admin, &["cleanup", "done"]).await;
    assert_eq!(status["step"], "cleanup", "{status:?}");

    // Between the switch and the cleanup: the old rows are on database 0,
    // fenced, and keyless statements are refused.
    let (a, b) = (
        superuser(&cluster.servers[0], "shard_0").await,
        superuser(&cluster.servers[1], "shard_1").await,
    );
    let moved = (1..=1000).find(|&id| shard_of(id) == moving).unwrap();
    let stale = a
        .simple_query(&format!(
            "UPDATE accounts SET n = n + 100 WHERE id = {moved}"
        ))
        .await
        .unwrap_err();
    assert_eq!(common::code(&stale), Some("55000"), "{stale:?}");
    let message = stale.as_db_error().unwrap().message();
    assert!(
        message.starts_with(&format!(
            "logical shard {moving} of group postgres/8 moved to database 1"
        )),
        "{message}"
    );
    let keyless = client
        .simple_query("SELECT count(*) FROM accounts")
        .await
        .unwrap_err();
    assert_eq!(common::code(&keyless), Some("0A000"), "{keyless:?}");
    let message = keyless.as_db_error().unwrap().message();
    assert!(
        message.contains("without its sharding key id while logical shard(s) 2"),
        "{message}"
    );

    let status = wait_step(&admin, &["done"]).await;
    // Writes go on after the cleanup, then stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut errors = Vec::new();
    for h in handles {
        errors.extend(h.await.unwrap());
    }
    println!("SHOW MOVES: {status:?}");
    assert_eq!(status["step"], "done", "{status:?}");
    assert_eq!(status["error"], "");
    assert_eq!(errors, Vec::<String>::new(), "no write fails");
    assert_eq!(common::proxy_panics(), 0);
    let (held, waited) = cluster.proxy.state().metrics.move_holds();
    println!("{held} statements held by the cutover, {waited:?} in all");

    let log = std::mem::take(&mut *log.lock().unwrap());
    check_accounts(&log, moving, (&a, &b)).await;
    // A stale INSERT on database 0 still fails after the cleanup.
    let id = (2_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    let stale = a
        .simple_query(&format!("INSERT INTO accounts VALUES ({id}, 0, 'stale')"))
        .await
        .unwrap_err();
    assert_eq!(common::code(&stale), Some("55000"), "{stale:?}");
    // Other shards' rows are written on database 0 as before.
    let other = (2_000_000..).find(|&id| shard_of(id) == 0).unwrap();
    a.simple_query(&format!(
        "INSERT INTO accounts VALUES ({other}, 0, 'x'); DELETE FROM accounts WHERE id = {other}"
    ))
    .await
    .unwrap();
    // Keyless statements are served again, from one copy of each row.
    let through: i64 = client
        .query_one("SELECT count(*) FROM accounts", &[])
        .await
        .unwrap()
        .get(0);
    let direct = count(&a, "SELECT count(*) FROM accounts").await
        + count(&b, "SELECT count(*) FROM accounts").await;
    assert_eq!(through, direct);
    // Nothing of the stream left; the replica identity is back.
    assert_eq!(
        count(&a, "SELECT count(*) FROM pg_replication_slots").await,
        0
    );
    assert_eq!(count(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(count(&b, "SELECT count(*) FROM pg_subscription").await, 0);
    let identity: String = a
        .query_one(
            "SELECT relreplident::text FROM pg_class WHERE relname = 'entries'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(identity, "d");
    let fence: bool = a
        .query_one(
            &format!("SELECT fenced FROM pgshard.fences WHERE shard = {moving}"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(fence);
}

/// Each account and entry the clients were told about is in exactly one
/// database, the one its logical shard is placed on now, with every
/// acknowledged update applied once.
async fn check_accounts(
    log: &Log,
    moving: usize,
    (a, b): (&tokio_postgres::Client, &tokio_postgres::Client),
) {
    let mut expected: BTreeMap<i64, i64> = (1..=ACCOUNTS)
        .chain(log.inserted.iter().copied())
        .filter(|id| !log.deleted.contains(id))
        .map(|id| (id, log.updates.get(&id).copied().unwrap_or(0)))
        .collect();
    assert!(log.updates.keys().any(|&id| shard_of(id) == moving));
    assert!(log.inserted.iter().any(|&id| shard_of(id) == moving));
    assert!(log.deleted.iter().any(|&id| shard_of(id) == moving));
    let mut found = BTreeMap::new();
    for (database, client) in [a, b].into_iter().enumerate() {
        for row in client
            .query("SELECT id, n FROM accounts", &[])
            .await
            .unwrap()
        {
            let (id, n): (i64, i64) = (row.get(0), row.get(1));
            assert_eq!(
                home(id, moving),
                database,
                "account {id} on database {database}"
            );
            assert!(found.insert(id, n).is_none(), "account {id} twice");
        }
    }
    assert_eq!(found.len(), expected.len());
    for (id, n) in &found {
        assert_eq!(expected.remove(id), Some(*n), "account {id}");
    }
    let mut entries = BTreeSet::new();
    for (database, client) in [a, b].into_iter().enumerate() {
        let sql = "SELECT account, k FROM entries WHERE v <> 'old'";
        for row in client.query(sql, &[]).await.unwrap() {
            let (account, k): (i64, i64) = (row.get(0), row.get(1));
            assert_eq!(home(account, moving), database, "entry {account}/{k}");
            assert!(entries.insert((account, k)), "entry {account}/{k} twice");
        }
        let old = count(client, "SELECT count(*) FROM entries WHERE v = 'old'").await;
        let want = (1..=ACCOUNTS)
            .filter(|&id| home(id, moving) == database)
            .count();
        assert_eq!(old, want as i64, "old entries on database {database}");
    }
    assert_eq!(entries, log.entries);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_table_without_the_key_in_its_replica_identity_is_refused() {
    // entries has no primary key and resharding_replica_identity_full is
    // off: the move fails at its checks and leaves nothing behind.
    let cluster = start("");
    let admin = cluster.admin().await;
    common::rows(&admin, "MOVE SHARD 2 TO 1").await;
    let status = wait_step(&admin, &["done"]).await;
    assert_eq!(status["step"], "failed");
    assert!(
        status["error"].contains(
            "table \"public\".\"entries\"'s replica identity does not include its sharding key account"
        ),
        "{status:?}"
    );
    let a = superuser(&cluster.servers[0], "shard_0").await;
    let b = superuser(&cluster.servers[1], "shard_1").await;
    assert_eq!(
        count(
            &a,
            "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgshard_fence%'"
        )
        .await,
        0
    );
    assert_eq!(count(&a, "SELECT count(*) FROM pgshard.fences").await, 0);
    assert_eq!(count(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(
        count(&b, "SELECT count(*) FROM accounts").await,
        (1..=ACCOUNTS).filter(|&id| shard_of(id) % 2 == 1).count() as i64
    );
    // Keyless statements are served again.
    let client = cluster.connect().await;
    let all: i64 = client
        .query_one("SELECT count(*) FROM accounts", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(all, ACCOUNTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fence_waits_for_a_direct_writer_of_the_shard() {
    // A client on database 0 itself (not through pgshard) has updated a
    // row of the moving shard and not committed: the fence waits for it
    // (each cutover attempt gives up at cutover_timeout and lets traffic
    // go on at database 0), and once it commits the next attempt
    // switches, with its write on database 1.
    let general = "cutover_timeout = 1000\nresharding_replication_retry_min_delay = 100\n\
                   resharding_replication_retry_max_attempts = 0\n\
                   resharding_replica_identity_full = true";
    let cluster = start(general);
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_millis(200));
    let moving = 2;
    let mut ids = (1..=ACCOUNTS).filter(|&id| shard_of(id) == moving);
    let (moved, other) = (ids.next().unwrap(), ids.next().unwrap());
    // A transaction through pgshard on the shard keeps the cutover from
    // starting until the direct writer has begun (a reader: it does not
    // hold the fence triggers back).
    let client = cluster.connect().await;
    let read = format!("SELECT n FROM accounts WHERE id = {other}");
    client
        .simple_query(&format!("BEGIN; {read}"))
        .await
        .unwrap();
    let admin = cluster.admin().await;
    common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await;
    wait_step(&admin, &["slot", "copy", "catchup"]).await;
    client.simple_query(&read).await.unwrap();
    wait_step(&admin, &["catchup", "holding"]).await;
    let direct = superuser(&cluster.servers[0], "shard_0").await;
    direct
        .simple_query(&format!(
            "BEGIN; UPDATE accounts SET n = n + 1000 WHERE id = {moved}"
        ))
        .await
        .unwrap();
    client.simple_query("COMMIT").await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let status = show_move(&admin).await;
    assert!(
        ["catchup", "holding", "fenced"].contains(&status["step"].as_str()),
        "{status:?}"
    );
    // Keyed statements on the shard still run meanwhile, at database 0.
    client
        .execute("UPDATE accounts SET n = n + 1 WHERE id = $1", &[&other])
        .await
        .unwrap();
    direct.simple_query("COMMIT").await.unwrap();
    let status = wait_step(&admin, &["done"]).await;
    assert_eq!(status["step"], "done", "{status:?}");
    let b = superuser(&cluster.servers[1], "shard_1").await;
    let n = |id: i64| format!("SELECT n FROM accounts WHERE id = {id}");
    assert_eq!(count(&b, &n(moved)).await, 1000);
    assert_eq!(count(&b, &n(other)).await, 1);
    let left = format!("SELECT count(*) FROM accounts WHERE id IN ({moved}, {other})");
    assert_eq!(count(&direct, &left).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_shard_moves_there_and_back() {
    // Database 0 keeps the fence of the shard it gave away; when the shard
    // comes back, the switch lifts it there, and database 1 is fenced.
    let cluster = start("resharding_replica_identity_full = true");
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_millis(200));
    let admin = cluster.admin().await;
    let moving = 2;
    for target in [1, 0] {
        common::rows(&admin, &format!("MOVE SHARD {moving} TO {target}")).await;
        let begun = Instant::now();
        loop {
            let rows = common::rows(&admin, "SHOW MOVES").await;
            let last = rows.last().unwrap();
            if last["step"] == "done" {
                break;
            }
            assert_ne!(last["step"], "failed", "{rows:?}");
            assert!(begun.elapsed() < Duration::from_secs(60), "{rows:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let client = cluster.connect().await;
    let id = (3_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    client
        .execute("INSERT INTO accounts VALUES ($1, 0, 'back')", &[&id])
        .await
        .unwrap();
    client
        .execute("UPDATE accounts SET n = 7 WHERE id = $1", &[&id])
        .await
        .unwrap();
    let (a, b) = (
        superuser(&cluster.servers[0], "shard_0").await,
        superuser(&cluster.servers[1], "shard_1").await,
    );
    assert_eq!(
        count(&a, &format!("SELECT n FROM accounts WHERE id = {id}")).await,
        7
    );
    let (on_a, on_b) = (client_ids(&a).await, client_ids(&b).await);
    assert!(
        on_a.iter().all(|&id| shard_of(id).is_multiple_of(2)),
        "database 0"
    );
    assert!(on_b.iter().all(|&id| shard_of(id) % 2 == 1), "database 1");
    assert_eq!(on_a.len() + on_b.len(), ACCOUNTS as usize + 1);
    let fenced =
        |shard| format!("SELECT count(*) FROM pgshard.fences WHERE fenced AND shard = {shard}");
    assert_eq!(
        count(&a, &fenced(moving)).await,
        0,
        "database 0's fence lifted"
    );
    assert_eq!(count(&b, &fenced(moving)).await, 1, "database 1 fenced");
    let stale = (4_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    let stale = b
        .simple_query(&format!(
            "INSERT INTO accounts VALUES ({stale}, 0, 'stale')"
        ))
        .await
        .unwrap_err();
    assert_eq!(common::code(&stale), Some("55000"), "{stale:?}");
}

async fn client_ids(client: &tokio_postgres::Client) -> Vec<i64> {
    client
        .query("SELECT id FROM accounts", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_instance_gets_the_fence_error_never_a_write() {
    // A second pgshard over the same databases does not learn the new
    // placement (its reads stopped after start-up): its writes to the
    // moved shard go to database 0 and fail there, before and after the
    // cleanup.
    let general = "resharding_replica_identity_full = true";
    let cluster = start(general);
    let config = common::moves_config(&cluster.servers, general, SHARDING);
    let stale = TestProxy::start(&config, &users()).unwrap();
    stale
        .state()
        .moves
        .set_poll_interval(Duration::from_secs(600));
    let stale = common::connect(stale.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_secs(2));
    let moving = 2;
    let moved = (1..=ACCOUNTS).find(|&id| shard_of(id) == moving).unwrap();
    let admin = cluster.admin().await;
    common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await;
    let status = wait_step(&admin, &["cleanup", "done"]).await;
    assert_eq!(status["step"], "cleanup", "{status:?}");
    let refused = |e: tokio_postgres::Error| {
        assert_eq!(common::code(&e), Some("55000"), "{e:?}");
    };
    let update = format!("UPDATE accounts SET n = 5 WHERE id = {moved}");
    refused(stale.simple_query(&update).await.unwrap_err());
    let delete = format!("DELETE FROM accounts WHERE id = {moved}");
    refused(stale.simple_query(&delete).await.unwrap_err());
    wait_step(&admin, &["done"]).await;
    let new = (5_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    let insert = format!("INSERT INTO accounts VALUES ({new}, 0, 'stale')");
    refused(stale.simple_query(&insert).await.unwrap_err());
    // The moved row is on database 1 only, unchanged.
    let (a, b) = (
        superuser(&cluster.servers[0], "shard_0").await,
        superuser(&cluster.servers[1], "shard_1").await,
    );
    let row = format!("SELECT count(*) FROM accounts WHERE id IN ({moved}, {new})");
    assert_eq!(count(&a, &row).await, 0);
    assert_eq!(count(&b, &row).await, 1);
    let n = format!("SELECT n FROM accounts WHERE id = {moved}");
    assert_eq!(count(&b, &n).await, 0);
}
