//! The clients of `shard_moves_partitioned`: keyed writers through pgshard
//! that log what they were told was written, and the check that each
//! logged order is in exactly one database, the one its shard is on now.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{self, Cluster};
use crate::{home, shard_of, ORDERS};

/// What the clients were told was written.
#[derive(Default)]
pub struct Log {
    pub inserted: BTreeSet<i64>,
    pub deleted: BTreeSet<i64>,
    /// Updates acknowledged, by order.
    pub updates: BTreeMap<i64, i64>,
}

/// Three clients through pgshard until `stop`: new orders (extended
/// protocol), updates of orders 1..=1000 (a simple protocol transaction),
/// deletes of orders 1001 onwards (extended).
pub async fn writers(
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
                        let sql = "INSERT INTO orders (id, n, v) VALUES ($1, 0, 'new')";
                        let done = client.execute(sql, &[&id]).await.map(drop);
                        if done.is_ok() {
                            log.lock().unwrap().inserted.insert(id);
                        }
                        done
                    }
                    1 => {
                        let id = 1 + i % 1000;
                        let sql =
                            format!("BEGIN; UPDATE orders SET n = n + 1 WHERE id = {id}; COMMIT");
                        let done = client.simple_query(&sql).await.map(drop);
                        if done.is_ok() {
                            *log.lock().unwrap().updates.entry(id).or_default() += 1;
                        }
                        done
                    }
                    _ => {
                        let id = 1000 + i;
                        if id > ORDERS {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            continue;
                        }
                        let sql = "DELETE FROM orders WHERE id = $1";
                        let done = client.execute(sql, &[&id]).await.map(|n| {
                            assert_eq!(n, 1, "order {id} deleted");
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

/// Each order the clients were told about is in exactly one database,
/// the one its logical shard is placed on now (in the partition of its
/// shard), with every acknowledged update applied once.
pub async fn check_orders(
    log: &Log,
    moving: usize,
    (a, b): (&tokio_postgres::Client, &tokio_postgres::Client),
) {
    let mut expected: BTreeMap<i64, i64> = (1..=ORDERS)
        .chain(log.inserted.iter().copied())
        .filter(|id| !log.deleted.contains(id))
        .map(|id| (id, log.updates.get(&id).copied().unwrap_or(0)))
        .collect();
    assert!(log.updates.keys().any(|&id| shard_of(id) == moving));
    assert!(log.inserted.iter().any(|&id| shard_of(id) == moving));
    assert!(log.deleted.iter().any(|&id| shard_of(id) == moving));
    let mut found = BTreeMap::new();
    for (database, client) in [a, b].into_iter().enumerate() {
        let sql = "SELECT id, n, tableoid::regclass::text FROM orders";
        for row in client.query(sql, &[]).await.unwrap() {
            let (id, n, part): (i64, i64, String) = (row.get(0), row.get(1), row.get(2));
            assert_eq!(
                home(id, moving),
                database,
                "order {id} on database {database}"
            );
            assert_eq!(part, format!("orders_{}", shard_of(id)), "order {id}");
            assert!(found.insert(id, n).is_none(), "order {id} twice");
        }
    }
    assert_eq!(found.len(), expected.len());
    for (id, n) in &found {
        assert_eq!(expected.remove(id), Some(*n), "order {id}");
    }
}
