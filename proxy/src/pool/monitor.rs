//! The monitor of a shard's `role = "auto"` servers: one task per shard,
//! with a connection of its own to each server (outside the pools' sizes,
//! logged in as the first user whose pool is on it), that asks each
//! whether it is in recovery and for its WAL position and timeline. One
//! round runs at once (writes need a primary), then one every
//! `lsn_check_interval` from `lsn_check_delay` on, and one as soon as a
//! checkout could not reach the primary. A server's check (connecting if
//! need be, and the query) gets `lsn_check_timeout`; one that fails counts
//! the server down. `pool/roles.rs` decides from what a round saw, so a
//! promotion is noticed within `lsn_check_interval + lsn_check_timeout`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::task::JoinSet;

use super::roles::{parse_lsn, Seen, ShardRoles};
use crate::conn::server::{ServerConn, ServerError};

/// One query answers everything a round needs: in recovery or not, the WAL
/// position written (primary) or replayed (replica), and the primary's
/// timeline (the first eight hex digits of its current WAL file's name).
const CHECK: &str = "SELECT pg_is_in_recovery(), \
    CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END, \
    CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END";

/// The least time between two rounds asked for by checkouts.
const REQUESTED_GAP: Duration = Duration::from_millis(50);

/// The monitor's connections, by server.
type Conns = Vec<Option<Box<ServerConn>>>;

/// Check `roles`' servers until the shard's roles are dropped (a RELOAD
/// that changed its servers or checks starts another monitor).
pub(super) async fn watch(roles: Weak<ShardRoles>) {
    let Some(checks) = roles.upgrade().map(|r| r.checks) else {
        return;
    };
    let mut conns: Conns = Vec::new();
    if !round(&roles, &mut conns).await {
        return;
    }
    tokio::time::sleep(checks.delay).await;
    let mut tick = tokio::time::interval(checks.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        let Some(shard) = roles.upgrade() else { return };
        let requested = tokio::select! {
            _ = tick.tick() => false,
            () = shard.check_requested() => true,
        };
        drop(shard);
        if !round(&roles, &mut conns).await {
            return;
        }
        if requested {
            tokio::time::sleep(REQUESTED_GAP).await;
        }
    }
}

/// Check every server at once and record what was seen; `false` when the
/// shard's roles are gone.
async fn round(roles: &Weak<ShardRoles>, conns: &mut Conns) -> bool {
    let Some(shard) = roles.upgrade() else {
        return false;
    };
    conns.resize_with(shard.servers(), || None);
    let mut checks = JoinSet::new();
    for (i, conn) in conns.iter_mut().enumerate() {
        let target = shard.target(i);
        let conn = conn.take();
        let timeout = shard.checks.timeout;
        checks.spawn(async move {
            let Some((target, connect_timeout)) = target else {
                return (i, None, Seen::Down("no pool logs in to it".to_owned()));
            };
            let checked = tokio::time::timeout(timeout, async move {
                let mut kept = conn;
                if kept.as_mut().is_some_and(|c| c.is_broken_while_idle()) {
                    kept = None;
                }
                let mut conn = match kept {
                    Some(conn) => conn,
                    None => ServerConn::connect(&target, connect_timeout, 0).await?,
                };
                let seen = check(&mut conn).await?;
                Ok::<_, CheckError>((conn, seen))
            })
            .await;
            match checked {
                Ok(Ok((conn, seen))) => (i, Some(conn), seen),
                Ok(Err(why)) => (i, None, Seen::Down(why.to_string())),
                Err(_) => (
                    i,
                    None,
                    Seen::Down(format!(
                        "no answer within lsn_check_timeout ({} ms)",
                        timeout.as_millis()
                    )),
                ),
            }
        });
    }
    let mut seen = vec![Seen::Down("not checked".to_owned()); shard.servers()];
    while let Some(done) = checks.join_next().await {
        if let Ok((i, conn, saw)) = done {
            conns[i] = conn;
            seen[i] = saw;
        }
    }
    shard.apply(&seen);
    true
}

/// Why a server's role could not be checked (shown as its state).
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("the check failed: {message} ({code})")]
    Failed { code: String, message: String },
    #[error("the check returned no {0}")]
    Missing(&'static str),
}

/// One server's answer to [`CHECK`].
async fn check(conn: &mut ServerConn) -> Result<Seen, CheckError> {
    let answer = conn.query(CHECK).await?;
    if let Some((code, message)) = answer.error {
        return Err(CheckError::Failed { code, message });
    }
    let row = answer.rows.first().ok_or(CheckError::Missing("row"))?;
    let text = |c: usize| row.get(c).cloned().flatten();
    let lsn = text(1).as_deref().and_then(parse_lsn).unwrap_or(0);
    match text(0).as_deref() {
        Some("t") => Ok(Seen::Replica { lsn }),
        Some("f") => {
            let timeline = text(2)
                .and_then(|t| u32::from_str_radix(&t, 16).ok())
                .ok_or(CheckError::Missing("timeline"))?;
            Ok(Seen::Primary { timeline, lsn })
        }
        _ => Err(CheckError::Missing("pg_is_in_recovery()")),
    }
}

/// Start the monitor of `roles` on the current runtime.
pub fn start(roles: &Arc<ShardRoles>) {
    tokio::spawn(watch(Arc::downgrade(roles)));
}
