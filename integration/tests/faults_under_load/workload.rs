//! The client side of the fault test: TPC-B-like transfers with exact
//! client-side accounting (each tagged in `pgbench_history.filler`), large
//! statements, and a probe that measures when a shard serves again; the
//! pub/sub producers and consumer, and the record of every statement's
//! latency and error, are the harness's (`integration::workload`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use integration::workload::{
    consumer, producer, record, run_tagged, Conn, Ledger, On, Outcome, Seen, Stop, BATCH,
    PARTITIONS,
};

/// Accounts (and their branch) on each shard, for transfers that cross.
pub struct Accounts {
    pub by_shard: [Vec<i32>; 2],
}

/// A transfer task: TPC-B-like transactions (account, teller, branch,
/// history), alternating an account on either shard, each tagged
/// `t<task>-<seq>` in the history's filler.
pub async fn transfers(port: u16, task: u32, accounts: Arc<Accounts>, seen: Arc<Seen>, stop: Stop) {
    let mut conn = Conn::new(port);
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(client) = conn.get(&seen).await else {
            continue;
        };
        seq += 1;
        let list = &accounts.by_shard[usize::try_from(seq % 2).unwrap()];
        let aid = list[usize::try_from(seq / 2).unwrap() % list.len()];
        let tid = i32::try_from(seq % 10).unwrap() + 1;
        let delta = i32::try_from(seq % 97).unwrap() + 1;
        let tag = format!("t{task}-{seq}");
        let outcome = transfer(client, &seen, (aid, tid, delta), &tag).await;
        record(&seen.transfers, outcome, tag, i64::from(delta));
        if outcome != Outcome::Committed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn transfer(
    client: On<'_>,
    seen: &Seen,
    (aid, tid, delta): (i32, i32, i32),
    tag: &str,
) -> Outcome {
    let statements = [
        format!("UPDATE pgbench_accounts SET abalance = abalance + {delta} WHERE aid = {aid}"),
        format!("UPDATE pgbench_tellers SET tbalance = tbalance + {delta} WHERE tid = {tid}"),
        format!("UPDATE pgbench_branches SET bbalance = bbalance + {delta} WHERE bid = 1"),
        format!(
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime, filler) \
             VALUES ({tid}, 1, {aid}, {delta}, now(), '{tag}')"
        ),
    ];
    run_tagged(client, seen, "transfer", &statements).await
}

/// Probe `sql` (which needs the faulted shard) every 50 ms until it works;
/// how long that took.
pub async fn serves_again(port: u16, sql: &str, limit: Duration) -> Result<Duration, String> {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < limit {
        match crate::common::connect(port, "app", "app-pw", "prod").await {
            Ok(client) => match client.simple_query(sql).await {
                Ok(_) => return Ok(started.elapsed()),
                Err(err) => last = crate::common::describe(&err),
            },
            Err(err) => last = crate::common::describe(&err),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(last)
}

/// Large statements to account `aid`'s shard: a 64 KiB query, then a
/// 64 KiB result, in turn (what a throttled direction slows most).
pub async fn bulk(port: u16, aid: i32, seen: Arc<Seen>, stop: Stop) {
    let mut conn = Conn::new(port);
    let big = "x".repeat(64 * 1024);
    let statements = [
        format!("SELECT length('{big}') FROM pgbench_accounts WHERE aid = {aid}"),
        format!("SELECT repeat('y', 65536) FROM pgbench_accounts WHERE aid = {aid}"),
    ];
    for (n, sql) in statements.iter().cycle().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Some((client, last)) = conn.get(&seen).await else {
            continue;
        };
        let what = if n % 2 == 0 {
            "bulk query"
        } else {
            "bulk result"
        };
        if seen
            .timed((what, last), client.simple_query(sql))
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
