//! `REBALANCE ... PARALLEL n` against real Postgres 15 servers (issue 33,
//! step 10): a placement group of a table family and a plain table on two
//! of four databases is spread over all four, two moves at a time on
//! disjoint databases, while a keyed writer runs through pgshard. The
//! moves of a round really overlap (SHOW MOVES shows both under way at
//! once), they cut over one at a time, no write fails, and every table and
//! row ends on exactly one database, the one the new placement names, with
//! every acknowledged write. Writes still go through after the catalog is
//! read again (RELOAD): the fence triggers the moves leave on the sources
//! are pgshard's own, not the application's.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::moves::*;

/// Steps of a move under way (started, not ended).
fn under_way(step: &str) -> bool {
    !matches!(step, "planned" | "done" | "failed")
}

fn cutting_over(step: &str) -> bool {
    matches!(step, "holding" | "fenced")
}

/// Accounts of the plain table.
const ACCOUNTS: i64 = 200;

/// `accounts (id, n)` on every database, each row on the database
/// `placement` gives its logical shard.
fn create_accounts(servers: &[integration::PgServer], placement: &[usize]) {
    for (database, server) in servers.iter().enumerate() {
        let ids: Vec<String> = (1..=ACCOUNTS)
            .filter(|&id| placement[shard_of(id, SHARD_COUNT)] == database)
            .map(|id| format!("({id})"))
            .collect();
        let mut sql = "SET ROLE app; CREATE TABLE accounts (id bigint PRIMARY KEY, n bigint NOT NULL DEFAULT 0)".to_owned();
        if !ids.is_empty() {
            sql.push_str(&format!(
                "; INSERT INTO accounts (id) VALUES {}",
                ids.join(", ")
            ));
        }
        server.psql(&format!("shard_{database}"), &sql).unwrap();
    }
}

/// Keyed writes: an insert into `events_p<t>` and an update of one
/// account, each of which must succeed; the inserts per table and updates
/// per account acknowledged.
async fn write(client: &tokio_postgres::Client, i: i64, acked: &mut HashMap<(char, i64), i64>) {
    let t = i % TABLES;
    let sql = format!("INSERT INTO events_p{t} (k) VALUES (-1)");
    client
        .simple_query(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    *acked.entry(('t', t)).or_default() += 1;
    let id = 1 + i % ACCOUNTS;
    let sql = format!("UPDATE accounts SET n = n + 1 WHERE id = {id}");
    let done = client
        .execute(sql.as_str(), &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    assert_eq!(done, 1, "{sql}");
    *acked.entry(('a', id)).or_default() += 1;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_moves_on_disjoint_databases_overlap_and_lose_nothing() {
    let servers = logical_servers(4);
    let two = default_placement();
    create_tables(&servers[..2], TABLES, SHARD_COUNT, &two);
    create_accounts(&servers, &two);
    let accounts = format!(
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"accounts\"\ncolumn = \"id\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\nshard_count = {SHARD_COUNT}\nplacement = {two:?}\n"
    );
    let sharding = format!("{}{accounts}", family(&format!("placement = {two:?}\n")));
    let config = common::moves_config(&servers, "", &sharding);
    let proxy = start(&config);
    let admin = admin(&proxy).await;

    // A keyed writer through pgshard the whole time: every insert must
    // succeed (held during a cutover, never refused).
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, client) = (Arc::clone(&stop), app(&proxy).await);
        tokio::spawn(async move {
            let mut acked: HashMap<(char, i64), i64> = HashMap::new();
            let mut i = 0i64;
            while !stop.load(Ordering::Relaxed) {
                write(&client, i, &mut acked).await;
                i += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            (client, i, acked)
        })
    };

    let planned = common::rows(&admin, "REBALANCE prod PARALLEL 2").await;
    assert_eq!(planned.len(), 4, "{planned:?}");
    let mut rounds: HashMap<String, Vec<&HashMap<String, String>>> = HashMap::new();
    for m in &planned {
        rounds.entry(m["round"].clone()).or_default().push(m);
    }
    assert_eq!(rounds.len(), 2, "{planned:?}");
    for (round, moves) in &rounds {
        let [x, y] = moves.as_slice() else {
            panic!("round {round}: {moves:?}")
        };
        let xs = BTreeSet::from([&x["source"], &x["target"]]);
        assert!(!xs.contains(&y["source"]) && !xs.contains(&y["target"]));
        let note = if round == "0" { "" } else { "after round 0" };
        assert!(x["note"].starts_with(note), "{x:?}");
    }

    // Watch SHOW MOVES until every move has ended.
    let ids: Vec<String> = planned.iter().map(|m| m["id"].clone()).collect();
    let mut overlapped: BTreeSet<String> = BTreeSet::new();
    let begun = Instant::now();
    let last = loop {
        let rows = common::rows(&admin, "SHOW MOVES").await;
        let mine: Vec<_> = rows.iter().filter(|r| ids.contains(&r["id"])).collect();
        let busy: Vec<_> = mine.iter().filter(|r| under_way(&r["step"])).collect();
        if busy.len() >= 2 {
            overlapped.extend(busy.iter().map(|r| r["id"].clone()));
        }
        let cutovers = mine.iter().filter(|r| cutting_over(&r["step"])).count();
        assert!(cutovers <= 1, "one cutover at a time: {mine:?}");
        if mine
            .iter()
            .all(|r| r["step"] == "done" || r["step"] == "failed")
        {
            break rows;
        }
        assert!(begun.elapsed() < Duration::from_secs(180), "{mine:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for m in last.iter().filter(|r| ids.contains(&r["id"])) {
        assert_eq!(m["step"], "done", "{m:?}");
    }
    // Both moves of each round were seen under way at once.
    assert_eq!(
        overlapped.len(),
        4,
        "overlapping: {overlapped:?} of {ids:?}"
    );

    // Keep writing a little on the new placement, then stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let (client, mut i, mut acked) = writer.await.unwrap();
    // The catalog read again (as every 60 s): the sources' fence triggers
    // do not make the group's tables unroutable.
    common::rows(&admin, "RELOAD").await;
    for _ in 0..ACCOUNTS {
        write(&client, i, &mut acked).await;
        i += 1;
    }

    let placed = placement(&admin).await;
    for database in 0..4 {
        let held = placed.iter().filter(|(d, _)| *d == database).count();
        assert_eq!(held, 2, "database {database}: {placed:?}");
    }
    let mut clients = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        clients.push(superuser(server, i).await);
    }
    for t in 0..TABLES {
        let owner = placed[shard_of(t, SHARD_COUNT)].0;
        let want = 100 + acked.get(&('t', t)).copied().unwrap_or(0);
        for (database, client) in clients.iter().enumerate() {
            let rows = rows_of(client, t).await;
            if database == owner {
                assert_eq!(rows, want, "events_p{t} on database {database}");
            } else {
                assert_eq!(rows, -1, "events_p{t} also on database {database}");
            }
        }
    }
    for id in 1..=ACCOUNTS {
        let owner = placed[shard_of(id, SHARD_COUNT)].0;
        let sql = format!("SELECT coalesce(max(n), -1) FROM accounts WHERE id = {id}");
        for (database, client) in clients.iter().enumerate() {
            let n = count(client, &sql).await;
            if database == owner {
                assert_eq!(n, acked[&('a', id)], "account {id} on database {database}");
            } else {
                assert_eq!(n, -1, "account {id} also on database {database}");
            }
        }
    }
    for pair in clients.chunks(2) {
        no_stream_left(&pair[0], &pair[1]).await;
    }
    assert!(common::rows(&admin, "REBALANCE").await.is_empty());
}
