//! The node id is the instance's own: at start pgshard takes a session
//! advisory lock keyed by its node id on the first primary database it
//! serves (the first cluster by name, its shard 0) and holds it on a
//! connection of its own while it runs. A second instance with the same
//! configured node id in front of the same database finds the lock taken
//! (for [`WAIT`]: a crashed predecessor's server session may still hold it)
//! and refuses to start. An instance with no node id configured (node 0)
//! starts anyway, since most deployments of several instances never call
//! `pgdog.unique_id()`, but answers the call with an error while another
//! holds node 0. Instances that share no database cannot see each other: the
//! check is skipped with a warning when the database cannot be reached, and
//! when the held connection drops, the lock is taken again (an error is
//! logged if another instance took it meanwhile).

use std::sync::Arc;
use std::time::Duration;

use crate::conn::server::{ServerConn, ServerError};
use crate::pool::Pool;
use crate::state::State;

/// The advisory lock's first key: "pgsh" in ASCII. The second is the node id.
pub const LOCK_CLASS: i32 = 0x7067_7368;

/// How long a configured node id's lock is waited for before refusing.
pub const WAIT: Duration = Duration::from_secs(3);

/// How often the held connection is checked.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// Why pgshard cannot run with its node id.
#[derive(Debug, thiserror::Error)]
pub enum NodeLockError {
    #[error(
        "node id {node} is in use by another pgshard in front of database {database} of \
         cluster {cluster} (it holds advisory lock ({LOCK_CLASS}, {node})); give each instance \
         its own general.node_id (or NODE_ID=name-<number>) so their unique ids cannot collide"
    )]
    InUse {
        node: u64,
        cluster: String,
        database: String,
    },
}

/// Take the node id's lock and hold it in a task of the current runtime.
pub async fn acquire(state: &Arc<State>) -> Result<(), NodeLockError> {
    let node = state.unique_ids.node();
    let configured = state.config().general.node_id.is_some();
    let Some(pool) = first_primary(state) else {
        return Ok(());
    };
    let deadline = tokio::time::Instant::now() + if configured { WAIT } else { Duration::ZERO };
    let mut attempt = try_lock(&pool, node).await;
    while matches!(attempt, Ok((_, false))) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        attempt = try_lock(&pool, node).await;
    }
    let in_use = NodeLockError::InUse {
        node,
        cluster: pool.cluster.clone(),
        database: pool.target.database.clone(),
    };
    match attempt {
        Ok((conn, true)) => {
            tokio::spawn(hold(pool, conn, node));
            Ok(())
        }
        Ok((_, false)) if configured => Err(in_use),
        Ok((_, false)) => {
            tracing::warn!("{in_use}; pgdog.unique_id() is refused in this instance");
            state.unique_ids.set_conflict(in_use.to_string());
            Ok(())
        }
        Err(err) => {
            tracing::warn!(
                %err, node, cluster = %pool.cluster,
                "cannot check that no other pgshard uses this node id: its database is unreachable"
            );
            Ok(())
        }
    }
}

fn first_primary(state: &State) -> Option<Arc<Pool>> {
    state
        .all_pools()
        .into_iter()
        .find(|pool| pool.shard == 0 && pool.serves() == crate::pool::roles::RoleNow::Primary)
}

/// A connection of its own, and whether it got the lock.
async fn try_lock(pool: &Pool, node: u64) -> Result<(Box<ServerConn>, bool), ServerError> {
    let mut conn =
        ServerConn::connect(&pool.target, pool.settings.connect_timeout, u64::MAX).await?;
    let sql = format!("SELECT pg_try_advisory_lock({LOCK_CLASS}, {node}::int4)");
    let answer = conn.query(&sql).await?;
    let got = answer
        .rows
        .first()
        .and_then(|row| row.first())
        .is_some_and(|value| value.as_deref() == Some("t"));
    Ok((conn, got))
}

/// Keep the lock's connection alive; take the lock again when it drops.
async fn hold(pool: Arc<Pool>, mut conn: Box<ServerConn>, node: u64) {
    loop {
        tokio::time::sleep(KEEPALIVE).await;
        if conn.query("SELECT 1").await.is_ok() {
            continue;
        }
        match try_lock(&pool, node).await {
            Ok((again, true)) => conn = again,
            Ok((again, false)) => {
                tracing::error!(
                    node, cluster = %pool.cluster,
                    "another pgshard took this node id's lock while the connection holding it was \
                     down: two instances now make ids with the same node id"
                );
                conn = again;
            }
            Err(err) => tracing::warn!(%err, node, "cannot take the node id's lock again"),
        }
    }
}
