//! What must hold after each fault, read from the shards directly (not
//! through the relays) and from pgshard's admin console: balances, tagged
//! transactions, gapless offsets, no prepared transaction, no server
//! connection leaked.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use super::workload::{Ledger, Seen, PARTITIONS};

/// Application name of the checker's direct connections, left out when
/// counting pgshard's server connections.
const CHECKER: &str = "faults-checker";

/// A direct connection to shard `i` at `port`.
pub async fn direct(port: u16, i: usize) -> Client {
    crate::common::connect_str(&format!(
        "host=127.0.0.1 port={port} user=app password=app-pw dbname=shard_{i} \
         application_name={CHECKER}"
    ))
    .await
    .unwrap()
}

async fn one(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

/// Poll `check` until it returns `None` or `limit` passes; how long it
/// took, or the last complaint.
pub async fn within<F, Fut>(limit: Duration, mut check: F) -> Result<Duration, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            None => return Ok(started.elapsed()),
            Some(why) if started.elapsed() >= limit => return Err(why),
            Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Prepared transactions left on any shard, described.
pub async fn prepared(shards: &[Client]) -> Option<String> {
    let mut left = Vec::new();
    for (i, shard) in shards.iter().enumerate() {
        for row in shard
            .query("SELECT gid FROM pg_prepared_xacts", &[])
            .await
            .unwrap()
        {
            left.push(format!("shard {i}: {}", row.get::<_, String>(0)));
        }
    }
    (!left.is_empty()).then(|| format!("prepared transactions left: {left:?}"))
}

/// Prepared transactions on shard `i` at `port` (0 when it cannot say).
pub async fn prepared_count(port: u16, i: usize) -> i64 {
    let Ok(client) = crate::common::connect(port, "app", "app-pw", &format!("shard_{i}")).await
    else {
        return 0;
    };
    client
        .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
        .await
        .map_or(0, |row| row.get(0))
}

/// Tags found in `sql`'s first column across the shards.
async fn tags(shards: &[Client], sql: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for shard in shards {
        for row in shard.query(sql, &[]).await.unwrap() {
            let tag: String = row.get(0);
            found.insert(tag.trim().to_owned());
        }
    }
    found
}

/// Every transaction whose COMMIT succeeded is there, none that failed
/// before its COMMIT is, and nothing else; returns the in-doubt ones that
/// committed.
fn account(what: &str, ledger: &Ledger, found: &BTreeSet<String>) -> Vec<String> {
    let missing: Vec<_> = ledger
        .committed
        .keys()
        .filter(|t| !found.contains(*t))
        .collect();
    assert!(
        missing.is_empty(),
        "{what}: committed but missing: {missing:?}"
    );
    let phantom: Vec<_> = ledger
        .failed
        .iter()
        .filter(|t| found.contains(*t))
        .collect();
    assert!(
        phantom.is_empty(),
        "{what}: failed before COMMIT but present: {phantom:?}"
    );
    let unknown: Vec<_> = found
        .iter()
        .filter(|t| !ledger.committed.contains_key(*t) && !ledger.in_doubt.contains_key(*t))
        .collect();
    assert!(
        unknown.is_empty(),
        "{what}: present but never sent: {unknown:?}"
    );
    ledger
        .in_doubt
        .keys()
        .filter(|t| found.contains(*t))
        .cloned()
        .collect()
}

/// Balances: every transaction (pgbench's and ours) applied all of its
/// updates or none, and ours sum to exactly what committed. Returns the
/// pgbench history rows (filler NULL).
pub async fn balances(shards: &[Client], seen: &Seen) -> i64 {
    let mut sums = [0i64; 4];
    for shard in shards {
        for (k, sql) in [
            "SELECT coalesce(sum(abalance), 0)::bigint FROM pgbench_accounts",
            "SELECT coalesce(sum(bbalance), 0)::bigint FROM pgbench_branches",
            "SELECT coalesce(sum(tbalance), 0)::bigint FROM pgbench_tellers",
            "SELECT coalesce(sum(delta), 0)::bigint FROM pgbench_history",
        ]
        .iter()
        .enumerate()
        {
            sums[k] += one(shard, sql).await;
        }
    }
    assert!(
        sums.iter().all(|&s| s == sums[0]),
        "account, branch, teller and history sums differ: {sums:?}"
    );
    let found = tags(
        shards,
        "SELECT filler FROM pgbench_history WHERE filler IS NOT NULL",
    )
    .await;
    let expected: i64 = {
        let ledger = seen.transfers.lock().unwrap();
        let landed = account("transfers", &ledger, &found);
        ledger.committed.values().sum::<i64>()
            + landed.iter().map(|t| ledger.in_doubt[t]).sum::<i64>()
    };
    let mut ours = 0;
    let mut pgbench_rows = 0;
    for shard in shards {
        let sql =
            "SELECT coalesce(sum(delta), 0)::bigint FROM pgbench_history WHERE filler IS NOT NULL";
        ours += one(shard, sql).await;
        pgbench_rows += one(
            shard,
            "SELECT count(*) FROM pgbench_history WHERE filler IS NULL",
        )
        .await;
    }
    assert_eq!(ours, expected, "the transfers' deltas do not add up");
    pgbench_rows
}

/// Offsets: per partition, the log holds offsets 0..next without a gap,
/// the producers' batches are exactly accounted for, and the consumer read
/// them all, in order. Returns the messages in the logs.
pub async fn offsets(shards: &[Client], seen: &Seen) -> i64 {
    let mut total = 0;
    let mut found = BTreeSet::new();
    let consumed = seen.consumed.lock().unwrap().clone();
    for p in 0..PARTITIONS {
        let mut partition = None;
        for shard in shards {
            // Each partition's tables live on one shard only.
            let sql = format!(
                "SELECT (SELECT next FROM msg_counters WHERE partition_id = {p}), \
                 count(*), coalesce(min(off), 0), coalesce(max(off), -1) FROM msg_log_p{p}"
            );
            let Ok(rows) = shard.query(&sql, &[]).await else {
                continue;
            };
            let row = &rows[0];
            let Some(next) = row.get::<_, Option<i64>>(0) else {
                continue;
            };
            partition = Some((
                next,
                row.get::<_, i64>(1),
                row.get::<_, i64>(2),
                row.get::<_, i64>(3),
            ));
            let sql = format!(
                "SELECT DISTINCT substring(convert_from(payload, 'UTF8') from '^(w[0-9]+-[0-9]+)-') \
                 FROM msg_log_p{p}"
            );
            found.extend(tags(std::slice::from_ref(shard), &sql).await);
        }
        let (next, count, min, max) =
            partition.unwrap_or_else(|| panic!("partition {p} is on no shard"));
        assert_eq!(
            (count, min, max),
            (next, 0, next - 1),
            "partition {p}: offsets not gapless 0..{next}"
        );
        assert_eq!(
            consumed.get(&p).copied().unwrap_or(0),
            next,
            "partition {p}: the consumer did not read to the end"
        );
        total += next;
    }
    let violations = seen.violations.lock().unwrap().clone();
    assert!(violations.is_empty(), "the consumer saw {violations:?}");
    let ledger = seen.batches.lock().unwrap();
    let landed = account("producers", &ledger, &found);
    let expected = (ledger.committed.len() + landed.len()) as i64 * super::workload::BATCH;
    assert_eq!(total, expected, "messages in the logs");
    total
}

/// pgshard's server connections for user `app`: the backend pids SHOW
/// SERVERS lists per shard, and whether any pool has clients waiting or
/// servers active.
async fn pgshard_servers(admin: &Client) -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let mut servers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in crate::common::rows(admin, "SHOW SERVERS").await {
        if row["user"] == "app" {
            servers
                .entry(row["shard"].clone())
                .or_default()
                .insert(row["remote_pid"].clone());
        }
    }
    let mut busy = Vec::new();
    for row in crate::common::rows(admin, "SHOW POOLS").await {
        for column in ["cl_active", "cl_waiting", "sv_active", "sv_login"] {
            if row["user"] == "app" && row[column] != "0" {
                busy.push(format!("shard {} {column} = {}", row["shard"], row[column]));
            }
        }
    }
    (servers, busy)
}

/// No server connection leaked: once the clients are gone, no pool has
/// clients or active servers, at most `pool_size` servers per shard, and
/// the backends on each shard are exactly those SHOW SERVERS lists, besides
/// pgshard's own two on shard 0, outside the pools: the node id's advisory
/// lock (`node_lock.rs`, kept alive with `SELECT 1`) and the catalog reader
/// (`schema.rs`).
pub async fn pools_settled(admin: &Client, shards: &[Client], pool_size: usize) -> Option<String> {
    let (servers, busy) = pgshard_servers(admin).await;
    if !busy.is_empty() {
        return Some(format!("pools still busy: {busy:?}"));
    }
    for (i, shard) in shards.iter().enumerate() {
        let listed = servers.get(&i.to_string()).cloned().unwrap_or_default();
        if listed.len() > pool_size {
            return Some(format!("shard {i}: {} server connections", listed.len()));
        }
        let sql = format!(
            "SELECT pid::text, format('%s %s [%s] %s', application_name, state, backend_start, query) \
             FROM pg_stat_activity WHERE usename = 'app' AND datname = 'shard_{i}' \
             AND backend_type = 'client backend' AND application_name <> '{CHECKER}' \
             AND NOT (datname = 'shard_0' AND (query LIKE 'SELECT pg_try_advisory_lock(%' \
               OR query = 'SELECT 1' OR query LIKE '%pg_get_viewdef(c.oid)%'))"
        );
        let rows = shard.query(&sql, &[]).await.unwrap();
        let backends: BTreeSet<String> = rows.iter().map(|r| r.get(0)).collect();
        if backends != listed {
            let unlisted: Vec<String> = rows
                .iter()
                .filter(|r| !listed.contains(&r.get::<_, String>(0)))
                .map(|r| format!("{}: {}", r.get::<_, String>(0), r.get::<_, String>(1)))
                .collect();
            return Some(format!(
                "shard {i}: backends {backends:?}, SHOW SERVERS {listed:?}; not listed: {unlisted:#?}"
            ));
        }
    }
    None
}
