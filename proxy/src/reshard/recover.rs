//! Moves left behind by a pgshard process that stopped (killed, crashed,
//! shut down) while running them, found on the databases by any instance
//! (this one after a restart, or another): a move whose heartbeat is older
//! than the lease is claimed (its owner replaced, in one statement, so two
//! instances never take the same move) and
//! - before its switch, rolled back: the source still serves the shard
//!   (unfenced if it was fenced), and what the move made goes (the
//!   subscription, the publication and slot, the tables on the target);
//! - from its switch on, finished: the target serves the shard (the
//!   placement readers learn it from `pgshard.shards`), so the stream is
//!   dropped and the source's old tables after the cleanup delay.
//!
//! [`watch`] also keeps the placement read from the databases current
//! (`overlay.rs`), every poll interval.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use router::sharding::Sharding;
use tracing::{info, warn};

use crate::session::Shared;

use super::db::Link;
use super::mover::{Made, Table};
use super::overlay;
use super::partitioned::{self, PartTable};
use super::plain::{self, PlainTable};
use super::plan::{MoveError, Plan};
use super::readers::Readers;
use super::sql::literal;
use super::state::Phase;
use super::{cleanup, marker, rollback, store, MoveStatus, Moves};

/// Until the process ends: read the placement the databases record, and
/// take over moves left behind, every poll interval.
pub async fn watch(shared: Arc<Shared>, moves: Arc<Moves>) {
    let mut readers = Readers::default();
    loop {
        overlay::refresh(&shared, &moves, &mut readers).await;
        for cluster in sharded(&shared) {
            if !readers.pinned(&cluster) {
                continue;
            }
            if let Err(error) = orphans(&shared, &moves, &mut readers, &cluster).await {
                warn!(cluster, "cannot look for moves left behind: {error}");
            }
        }
        tokio::time::sleep(moves.poll_interval()).await;
    }
}

/// The clusters with placement groups.
fn sharded(shared: &Shared) -> Vec<String> {
    shared
        .config()
        .clusters
        .iter()
        .filter(|(_, c)| c.shards.len() > 1 && !c.sharding.groups().is_empty())
        .map(|(name, _)| name.clone())
        .collect()
}

/// A move's rows as the databases have them: its plan and the phase of
/// each row.
struct Found {
    plan: Plan,
    phases: Vec<Phase>,
}

async fn orphans(
    shared: &Arc<Shared>,
    moves: &Arc<Moves>,
    readers: &mut Readers,
    cluster: &str,
) -> Result<(), MoveError> {
    let config = shared.config();
    let Some(running) = config.clusters.get(cluster) else {
        return Ok(());
    };
    let sql = store::orphans(moves.lease().as_millis());
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for index in 0..running.shards.len() {
        let exists = readers
            .rows(
                shared,
                (cluster, index),
                "SELECT to_regclass('pgshard.moves')::text",
            )
            .await?;
        if exists
            .first()
            .and_then(|r| r.first())
            .is_none_or(Option::is_none)
        {
            continue;
        }
        for row in readers.rows(shared, (cluster, index), &sql).await? {
            let Some((plan, phase)) = parse(cluster, &running.sharding, &row) else {
                continue;
            };
            let entry = found.entry(plan.id.clone()).or_insert(Found {
                plan,
                phases: Vec::new(),
            });
            entry.phases.push(phase);
        }
    }
    for (id, found) in found {
        let ours = moves
            .list()
            .iter()
            .any(|m| m.id == id && !m.phase.is_final());
        if ours || !claim(shared, moves, &found.plan).await? {
            continue;
        }
        let (shared, moves) = (Arc::clone(shared), Arc::clone(moves));
        tokio::spawn(async move { take_over(&shared, &moves, found).await });
    }
    Ok(())
}

/// A row of [`store::orphans`], with the group the running config has.
fn parse(cluster: &str, sharding: &Sharding, row: &[Option<String>]) -> Option<(Plan, Phase)> {
    let [Some(id), Some(group), Some(shard), Some(source), Some(target), Some(phase)] = row else {
        return None;
    };
    let members = sharding
        .groups()
        .into_iter()
        .find(|g| g.id.to_string() == *group)?;
    let group = members.id;
    let tables = members
        .tables
        .iter()
        .filter_map(|&i| sharding.tables.get(i))
        .cloned()
        .collect();
    let plan = Plan {
        id: id.clone(),
        cluster: cluster.to_owned(),
        group,
        shard: shard.parse().ok()?,
        source: source.parse().ok()?,
        target: target.parse().ok()?,
        families: Vec::new(),
        tables,
    };
    Some((plan, Phase::parse(phase)?))
}

/// Make this process the move's owner (on its source's row), unless
/// another instance renewed or claimed it meanwhile.
async fn claim(shared: &Shared, moves: &Moves, plan: &Plan) -> Result<bool, MoveError> {
    let sql = format!(
        "UPDATE pgshard.moves SET owner = {}, heartbeat = now() WHERE id = {} \
         AND (heartbeat IS NULL OR heartbeat < now() - interval '{} milliseconds') RETURNING id",
        literal(&moves.owner),
        literal(&plan.id),
        moves.lease().as_millis()
    );
    let link = Link::superuser(shared, &plan.cluster, &[plan.source, plan.target]).await?;
    let mut a = link.connect(plan.source).await?;
    Ok(!a.rows("claim the move", &sql).await?.is_empty())
}

/// Finish or roll back a move claimed from a stopped process.
async fn take_over(shared: &Arc<Shared>, moves: &Arc<Moves>, found: Found) {
    let plan = found.plan;
    let switched = found.phases.iter().any(|p| p.switched());
    let phase = found
        .phases
        .iter()
        .copied()
        .max_by_key(|p| Phase::ALL.iter().position(|q| q == p))
        .unwrap_or(Phase::Planned);
    moves.adopt(MoveStatus {
        id: plan.id.clone(),
        cluster: plan.cluster.clone(),
        group: plan.group.to_string(),
        shard: plan.shard,
        source: plan.source,
        target: plan.target,
        phase,
        rows_copied: 0,
        lag_bytes: None,
        started: Instant::now(),
        finished: None,
        max_wait: None,
        error: None,
        taken_over: true,
        marked: false,
        waiting_for: Vec::new(),
    });
    moves.update(&plan.id, |s| {
        s.phase = phase;
        s.finished = None;
        s.error = None;
    });
    if !plan.tables.is_empty() {
        // Its rows may be on both databases until it is undone or cleaned
        // up: keyless statements on the group are refused meanwhile.
        marker::mark_moving(shared, moves, &plan);
    }
    info!(
        id = plan.id,
        "move of logical shard {} left at {phase} by a stopped pgshard: {}",
        plan.shard,
        if switched {
            "finishing it"
        } else {
            "rolling it back"
        }
    );
    let outcome = match Link::superuser(shared, &plan.cluster, &[plan.source, plan.target]).await {
        Ok(link) if switched => finish(shared, &link, &plan, moves).await,
        Ok(link) => roll_back(shared, moves, &link, &plan).await,
        Err(error) => Err(error),
    };
    match outcome {
        Ok(()) if switched => {}
        Ok(()) => moves.finished(&plan.id, Some(interrupted(&plan).to_string())),
        Err(error) => {
            warn!(
                id = plan.id,
                "taking over the move failed (tried again later): {error}"
            );
            moves.update(&plan.id, |s| {
                s.phase = Phase::Failed;
                s.finished = Some(Instant::now());
                s.error = Some(format!("taking over: {error}"));
            });
        }
    }
}

fn interrupted(plan: &Plan) -> MoveError {
    MoveError::Interrupted(plan.source)
}

/// The tables the move carries, as recorded on its source.
async fn tables(link: &Link, plan: &Plan) -> Result<Vec<Table>, MoveError> {
    let mut a = link.connect(plan.source).await?;
    let rows = a
        .rows("read the move's tables", &store::tables_of(&plan.id))
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| match row.as_slice() {
            [Some(schema), Some(name)] => Some(Table {
                schema: schema.clone(),
                name: name.clone(),
            }),
            _ => None,
        })
        .collect())
}

/// The move's plain tables and tables partitioned by hash, as the source
/// has them.
async fn row_tables(
    link: &Link,
    plan: &Plan,
) -> Result<(Vec<PlainTable>, Vec<PartTable>), MoveError> {
    let mut a = link.connect(plan.source).await?;
    let plain = plain::recovered(plan, &mut a).await?;
    let parts = partitioned::recovered(plan, &mut a).await?;
    Ok((plain, parts))
}

/// Before the switch: undo everything, the source serves the shard.
async fn roll_back(
    shared: &Shared,
    moves: &Moves,
    link: &Link,
    plan: &Plan,
) -> Result<(), MoveError> {
    let (plain, parts) = row_tables(link, plan).await?;
    let mut b = link.connect(plan.target).await?;
    let subscribed = format!(
        "SELECT 1 FROM pg_subscription WHERE subname = {}",
        literal(&plan.stream_name())
    );
    let subscription = b
        .value("look for the subscription", &subscribed)
        .await?
        .is_some();
    let made = Made {
        tables: tables(link, plan).await?,
        on_target: true,
        stream: true,
        subscription,
        fenced: true,
        plain,
        parts,
    };
    rollback::rollback(shared, moves, link, plan, &made, &interrupted(plan)).await;
    Ok(())
}

/// After the switch: drop the stream now, the old tables later.
async fn finish(
    shared: &Arc<Shared>,
    link: &Link,
    plan: &Plan,
    moves: &Arc<Moves>,
) -> Result<(), MoveError> {
    let tables = tables(link, plan).await?;
    let (plain, parts) = row_tables(link, plan).await?;
    let (mut a, mut b) = (
        link.connect(plan.source).await?,
        link.connect(plan.target).await?,
    );
    let subscribed = format!(
        "SELECT 1 FROM pg_subscription WHERE subname = {}",
        literal(&plan.stream_name())
    );
    if b.value("look for the subscription", &subscribed)
        .await?
        .is_some()
    {
        cleanup::drop_stream(plan, &mut a, &mut b).await?;
    } else {
        let name = super::sql::ident(&plan.stream_name());
        a.run(
            "drop the publication",
            &format!("DROP PUBLICATION IF EXISTS {name}"),
        )
        .await?;
        cleanup::drop_slot_waiting(plan, &mut a).await?;
    }
    for db in [&mut a, &mut b] {
        db.run(
            "record the phase",
            &store::set_phase(&plan.id, Phase::Cleanup),
        )
        .await?;
    }
    moves.set_phase(&plan.id, Phase::Cleanup);
    let made = Made {
        tables,
        plain,
        parts,
        ..Made::default()
    };
    cleanup::finish_later(
        (Arc::clone(shared), link.clone()),
        plan.clone(),
        made,
        moves.cleanup_delay(),
        Arc::clone(moves),
    );
    Ok(())
}
