//! Recovery of two-phase commits: at start and every
//! `two_phase_commit_recovery_interval`, each sharded database's shards are
//! asked for the prepared transactions pgshard left (`pg_prepared_xacts`,
//! gids made by `two_phase::gid`), and each one older than [`GRACE`] is
//! committed or rolled back as its decider decided (`two_phase.rs` says
//! why asking cannot race a commit in flight). Any pgshard instance
//! resolves any other's: nothing here needs this process's memory, though
//! the local log's pending commits are used first when there is one.
//! Decision rows no prepared transaction needs any more are deleted after
//! [`KEEP_DECISIONS`], only in a pass that could list every shard of the
//! database (a shard that is down may hold parts that need theirs).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use super::{ask_decision, create_decisions, parse_gid, Coordinator, DECISIONS, GID_PREFIX};
use crate::pool::clusters::{ClusterPools, Clusters};
use crate::pool::gate::Gate;
use crate::pool::Pool;

/// A prepared transaction younger than this is left alone: its pgshard is
/// most likely committing it right now.
pub const GRACE: Duration = Duration::from_secs(2);

/// Decision rows are kept this long after no prepared part needs them.
const KEEP_DECISIONS: &str = "10 minutes";

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub committed: usize,
    pub rolled_back: usize,
    /// Prepared parts that could not be resolved this time (a shard or
    /// its decider unreachable).
    pub unresolved: usize,
}

/// Resolve what was left, then again every `interval` (if any), until
/// shutdown.
pub async fn run(
    clusters: &Clusters,
    coordinator: &Coordinator,
    gate: &Gate,
    interval: Option<Duration>,
) {
    let mut shutdown = gate.shutdown.subscribe();
    loop {
        let report = pass(clusters, coordinator).await;
        if report != Report::default() {
            info!(?report, "two-phase commit recovery");
        }
        let Some(interval) = interval else {
            return;
        };
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// A prepared part found on a shard.
struct Prepared {
    gid: String,
    owner: String,
    old: bool,
}

/// One recovery pass over every sharded database.
pub async fn pass(clusters: &Clusters, coordinator: &Coordinator) -> Report {
    let mut report = Report::default();
    let logged: BTreeMap<String, String> = coordinator
        .log
        .pending()
        .into_iter()
        .map(|(_, p)| (p.txn, p.database))
        .collect();
    for (database, users) in clusters.sharded_pools() {
        let shards = users.first().map_or(0, |(_, pools)| pools.len());
        let primary = |user: &str, shard: usize| -> Option<Arc<Pool>> {
            let (_, pools) = users.iter().find(|(u, _)| u == user)?;
            pools.get(shard)?.primary().cloned()
        };
        let mut live = HashSet::new();
        // Whether every shard's prepared parts were listed: only then is
        // `live` all that still needs a decision.
        let mut listed_all = true;
        let roles = clusters.config().server_roles(&database);
        for shard in 0..shards {
            let Some(any) = users.first().and_then(|(u, _)| primary(u, shard)) else {
                listed_all = false;
                continue;
            };
            let Some(found) = list(&any, &database, shard, coordinator, &roles).await else {
                listed_all = false;
                report.unresolved += 1;
                continue;
            };
            for prepared in found {
                let Some((txn, decider, _)) = parse_gid(&prepared.gid) else {
                    continue;
                };
                live.insert(txn.to_owned());
                if !prepared.old {
                    continue;
                }
                let known = logged.contains_key(txn).then_some(true);
                let decision = match known {
                    Some(commit) => Some(commit),
                    None => match primary(&prepared.owner, decider) {
                        Some(pool) => decide(&pool, txn, &roles).await,
                        None => None,
                    },
                };
                let own = primary(&prepared.owner, shard);
                match (decision, own) {
                    (Some(commit), Some(pool)) if finish(&pool, &prepared.gid, commit).await => {
                        if commit {
                            report.committed += 1;
                        } else {
                            report.rolled_back += 1;
                        }
                    }
                    _ => report.unresolved += 1,
                }
            }
        }
        if !listed_all {
            // A shard that is down may hold prepared parts whose decision
            // must outlive it (deleting it would make them roll back).
            continue;
        }
        forget_decisions(&users, &live).await;
        let finished = logged
            .iter()
            .filter(|(txn, db)| **db == database && !live.contains(*txn));
        for (txn, _) in finished {
            let _ = coordinator.log.done(&coordinator.instance, txn).await;
        }
    }
    coordinator.log.remove_finished(&coordinator.instance);
    report
}

/// The pgshard prepared transactions on `pool`'s database (and the
/// decision table made sure of); `None` when the shard cannot be asked.
async fn list(
    pool: &Arc<Pool>,
    database: &str,
    shard: usize,
    coordinator: &Coordinator,
    roles: &[String],
) -> Option<Vec<Prepared>> {
    let mut server = pool.checkout().await.ok()?;
    let login = &pool.settings.server_user;
    if !coordinator.ensured(database, shard, login) {
        let create = create_decisions(roles, true);
        match server.conn.query(&create).await.ok()?.error {
            None => coordinator.set_ensured(database, shard, login),
            Some((code, message)) => {
                warn!(database, shard, code, message, "cannot create {DECISIONS}")
            }
        }
    }
    let sql = format!(
        "SELECT gid, owner, prepared < now() - interval '{} milliseconds' \
         FROM pg_prepared_xacts WHERE database = current_database() \
         AND starts_with(gid, '{GID_PREFIX}')",
        GRACE.as_millis()
    );
    let answer = server.conn.query(&sql).await.ok()?;
    pool.checkin(server);
    if let Some((code, message)) = answer.error {
        warn!(
            database,
            shard, code, message, "cannot list prepared transactions"
        );
        return None;
    }
    let found = answer
        .rows
        .into_iter()
        .filter_map(|row| match row.as_slice() {
            [Some(gid), Some(owner), Some(old)] => Some(Prepared {
                gid: gid.clone(),
                owner: owner.clone(),
                old: old == "t",
            }),
            _ => None,
        });
    Some(found.collect())
}

/// The decider's decision on `txn`: `Some(true)` commit, `Some(false)`
/// abort (recorded now if nothing was), `None` if it cannot be asked.
async fn decide(pool: &Arc<Pool>, txn: &str, roles: &[String]) -> Option<bool> {
    let mut server = pool.checkout().await.ok()?;
    let mut answer = server.conn.query(&ask_decision(txn)).await.ok()?;
    if answer
        .error
        .as_ref()
        .is_some_and(|(code, _)| code == "42P01")
    {
        // No decision table on the decider: nothing was ever decided there.
        let _ = server
            .conn
            .query(&create_decisions(roles, false))
            .await
            .ok()?;
        answer = server.conn.query(&ask_decision(txn)).await.ok()?;
    }
    pool.checkin(server);
    if let Some((code, message)) = answer.error {
        warn!(
            txn,
            code, message, "cannot read a two-phase commit decision"
        );
        return None;
    }
    match answer.rows.first()?.first()?.as_deref() {
        Some("commit") => Some(true),
        Some("abort") => Some(false),
        _ => None,
    }
}

/// COMMIT PREPARED (or ROLLBACK PREPARED) `gid`; whether it is resolved
/// (done now, or by someone else meanwhile).
async fn finish(pool: &Arc<Pool>, gid: &str, commit: bool) -> bool {
    let Ok(mut server) = pool.checkout().await else {
        return false;
    };
    let verb = if commit { "COMMIT" } else { "ROLLBACK" };
    let Ok(answer) = server.conn.query(&format!("{verb} PREPARED '{gid}'")).await else {
        return false;
    };
    pool.checkin(server);
    match answer.error {
        None => true,
        // Resolved by another pgshard in between.
        Some((code, _)) if code == "42704" => true,
        Some((code, message)) => {
            warn!(gid, code, message, "cannot resolve a prepared transaction");
            false
        }
    }
}

/// Delete old decision rows that no prepared part (`live`) still needs.
async fn forget_decisions(users: &[(String, ClusterPools)], live: &HashSet<String>) {
    let Some((_, pools)) = users.first() else {
        return;
    };
    let keep: Vec<String> = live.iter().map(|t| format!("'{t}'")).collect();
    let keep = if keep.is_empty() {
        String::new()
    } else {
        format!(" AND txn NOT IN ({})", keep.join(","))
    };
    let sql = format!(
        "DELETE FROM {DECISIONS} WHERE decided_at < now() - interval '{KEEP_DECISIONS}'{keep}"
    );
    for primary in pools.iter().filter_map(|shard| shard.primary()) {
        if let Ok(mut server) = primary.checkout().await {
            if server.conn.query(&sql).await.is_ok() {
                primary.checkin(server);
            }
        }
    }
}
