//! Where the databases say logical shards are: `pgshard.shards` read from
//! every database of each sharded cluster (at start-up, before clients are
//! served; then every poll interval, 1 s, once a move has recorded the
//! cluster's placement, and every second on new connections before that), laid over the running placement
//! (`pool::clusters::overlay`). A logical shard with exactly one owner is
//! placed there; one with none (a move between its fence and its switch)
//! or two stays where the running config has it. This is how an instance
//! that starts, or one that did not run the move, learns of a switch.
//! With the placement, the moves `pgshard.moves` records unfinished are
//! read and marked moving ([`mark`]), so that every instance refuses the
//! keyless statements a move makes inexact, not only the one running it.
//! Each read of a pinned cluster is announced and acknowledged in
//! `pgshard.instances` (`instances.rs`: a move copies no row of a plain
//! table before every live instance has marked it), and each complete
//! read renews how long keyless statements may be served
//! (`pool::clusters::freshness`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

use crate::pool::clusters::overlay::{Placed, Recorded};
use crate::session::Shared;

use super::instances;
use super::plan::MoveError;
use super::readers::Readers;
use super::state::Phase;
use super::Moves;

/// How often a cluster is read: a cluster no move has touched yet (no
/// `pgshard.shards` on any database) on new connections each time (a
/// cluster with a move every poll interval, the same by default, on kept
/// connections).
const UNPINNED_EVERY: Duration = router::config::READ_INTERVAL;

/// The rows of `pgshard.shards`.
const SHARDS: &str = "SELECT grp, shard::text, since FROM pgshard.shards";

/// Read where every sharded cluster's databases say their logical shards
/// are and place them so; the clusters whose placement changed.
pub async fn refresh(shared: &Shared, moves: &Moves, readers: &mut Readers) -> Vec<String> {
    let config = shared.config();
    let mut changed = Vec::new();
    for (name, cluster) in &config.clusters {
        if cluster.shards.len() < 2 || cluster.sharding.groups().is_empty() || !readers.due(name) {
            continue;
        }
        // A switch this process makes while the read is on its way wins.
        let read_from = shared.clusters.overlay_epoch();
        let begun = Instant::now();
        // Keyless statements are served this long after the read began
        // (`instances.rs` says why that is exact).
        let fresh = config.general.resharding_freshness_timeout();
        let read = match read(shared, readers, name).await {
            Ok(owners) => {
                let pinned = !owners.is_empty();
                readers.looked(name, pinned, UNPINNED_EVERY);
                if place(shared, name, owners, read_from) {
                    changed.push(name.clone());
                }
                match pinned {
                    true => marked_and_acknowledged(shared, moves, readers, name, fresh).await,
                    false => Ok(()),
                }
            }
            Err(error) => {
                readers.looked(name, readers.pinned(name), UNPINNED_EVERY);
                Err(error)
            }
        };
        match read {
            Ok(()) => shared.read_fresh(name, begun, begun + fresh),
            Err(error) => {
                // Looked at again later (a warning each time: a pinned
                // cluster whose databases do not answer is news).
                if readers.pinned(name) {
                    warn!(
                        cluster = name,
                        "cannot read where logical shards are, or the moves under way: {error}"
                    );
                } else {
                    debug!(
                        cluster = name,
                        "cannot read where logical shards are: {error}"
                    );
                }
                let why = readers.missed(name).unwrap_or_else(|| error.to_string());
                shared.read_failed(name, &why);
            }
        }
    }
    changed
}

/// Announce the read on every database (`pgshard.instances.begun`), read
/// and mark the moves under way, acknowledge them; what failed.
async fn marked_and_acknowledged(
    shared: &Shared,
    moves: &Moves,
    readers: &mut Readers,
    cluster: &str,
    fresh: Duration,
) -> Result<(), MoveError> {
    let databases = shared
        .config()
        .clusters
        .get(cluster)
        .map_or(0, |c| c.shards.len());
    let begin = instances::begin_read(&moves.owner, cluster, fresh);
    let mut acked = Vec::new();
    for index in 0..databases {
        if announce(shared, readers, (cluster, index), &begin).await? {
            acked.push(index);
        }
    }
    let marked = mark(shared, readers, cluster).await?;
    // A move newly marked is acknowledged once the sessions counted before
    // its marker was installed gave their counts back (`instances.rs`).
    let flights = &shared.clusters.keyless;
    let marked = readers
        .acks(cluster)
        .acknowledgeable(flights, cluster, marked, moves.poll_interval())
        .await;
    let ack = instances::acknowledge(&moves.owner, cluster, &marked);
    for index in acked {
        readers.rows(shared, (cluster, index), &ack).await?;
    }
    Ok(())
}

/// `begin` on database `index`, where it has `pgshard.instances`; whether
/// it has.
async fn announce(
    shared: &Shared,
    readers: &mut Readers,
    (cluster, index): (&str, usize),
    begin: &str,
) -> Result<bool, MoveError> {
    let exists = readers
        .rows(shared, (cluster, index), instances::EXISTS)
        .await?;
    if exists
        .first()
        .and_then(|r| r.first())
        .is_none_or(Option::is_none)
    {
        return Ok(false);
    }
    readers.rows(shared, (cluster, index), begin).await?;
    Ok(true)
}

/// The first read, at start-up.
pub async fn first_read(shared: &Shared, moves: &Moves) {
    refresh(shared, moves, &mut Readers::default()).await;
}

/// Per group (as stored: `postgres/8`), per logical shard: its owners.
type Owners = HashMap<String, HashMap<usize, Vec<Placed>>>;

async fn read(shared: &Shared, readers: &mut Readers, cluster: &str) -> Result<Owners, MoveError> {
    let databases = shared
        .config()
        .clusters
        .get(cluster)
        .map_or(0, |c| c.shards.len());
    // Exists where the first move of the cluster made it; the query reads
    // it only where it exists (a missing table fails the plan otherwise).
    let mut owners: Owners = HashMap::new();
    for index in 0..databases {
        let exists = readers
            .rows(
                shared,
                (cluster, index),
                "SELECT to_regclass('pgshard.shards')::text",
            )
            .await?;
        if exists
            .first()
            .and_then(|r| r.first())
            .is_none_or(Option::is_none)
        {
            continue;
        }
        for row in readers.rows(shared, (cluster, index), SHARDS).await? {
            let [Some(group), Some(shard), Some(since)] = row.as_slice() else {
                continue;
            };
            let Ok(shard) = shard.parse::<usize>() else {
                continue;
            };
            owners
                .entry(group.clone())
                .or_default()
                .entry(shard)
                .or_default()
                .push(Placed {
                    database: index,
                    since: since.clone(),
                });
        }
    }
    Ok(owners)
}

/// The moves `cluster`'s databases record unfinished (of any instance),
/// marked moving in the running config: keyless statements that could see
/// the moving rows on two databases are refused here too, from start-up
/// on, while the move runs elsewhere or waits to be taken over. A failed
/// read keeps the markers read before; else the moves marked.
async fn mark(
    shared: &Shared,
    readers: &mut Readers,
    cluster: &str,
) -> Result<Vec<String>, MoveError> {
    let moves = unfinished(shared, readers, cluster).await?;
    let ids: Vec<String> = moves.iter().map(|m| m.id.clone()).collect();
    let shown: Vec<String> = moves
        .iter()
        .map(|m| format!("{} (shard {} of {})", m.id, m.shard, m.group))
        .collect();
    let shown = shown.join(", ");
    if shared.set_recorded_moving(cluster, moves) {
        info!(
            cluster,
            "moves recorded unfinished on the databases (pgshard.moves): marked moving {shown}"
        );
    }
    Ok(ids)
}

/// The moves of `cluster` that `pgshard.moves` records unfinished on some
/// database, as they mark their group's shards: with
/// `[[sharded_tables]]` in the group, until the move is done or failed
/// (their keyless statements refused: the shard's rows may be on both
/// databases until the cleanup); table families' only until the switch (a
/// family table is on one database at a time).
async fn unfinished(
    shared: &Shared,
    readers: &mut Readers,
    cluster: &str,
) -> Result<Vec<Recorded>, MoveError> {
    let config = shared.config();
    let Some(running) = config.clusters.get(cluster) else {
        return Ok(Vec::new());
    };
    // Per move: its group, shard, and whether a database records it
    // switched.
    let mut moves: HashMap<String, (String, usize, bool)> = HashMap::new();
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
        for row in readers.rows(shared, (cluster, index), UNFINISHED).await? {
            let [Some(id), Some(group), Some(shard), Some(phase)] = row.as_slice() else {
                continue;
            };
            let (Ok(shard), Some(phase)) = (shard.parse::<usize>(), Phase::parse(phase)) else {
                continue;
            };
            let entry = moves
                .entry(id.clone())
                .or_insert_with(|| (group.clone(), shard, false));
            entry.2 |= phase.switched();
        }
    }
    let mut marked = Vec::new();
    for group in running.sharding.groups() {
        let refuse_keyless = !group.tables.is_empty();
        let name = group.id.to_string();
        for (id, (g, shard, switched)) in &moves {
            if *g == name && (refuse_keyless || !switched) {
                marked.push(Recorded {
                    id: id.clone(),
                    group: group.id,
                    shard: *shard,
                    refuse_keyless,
                });
            }
        }
    }
    Ok(marked)
}

/// The moves not ended, as each database records them.
const UNFINISHED: &str = "SELECT id, grp, shard::text, phase FROM pgshard.moves \
    WHERE phase NOT IN ('done', 'failed')";

/// Lay `owners`, read since the overlay's epoch was `read_from`, over
/// `cluster`'s running placement; whether it changed.
fn place(shared: &Shared, cluster: &str, owners: Owners, read_from: u64) -> bool {
    let config = shared.config();
    let Some(running) = config.clusters.get(cluster) else {
        return false;
    };
    let groups: Vec<_> = running.sharding.groups().iter().map(|g| g.id).collect();
    let mut changed = false;
    for group in groups {
        let Some(shards) = owners.get(&group.to_string()) else {
            continue;
        };
        let placed: Vec<Option<Placed>> = (0..group.shard_count)
            .map(|s| match shards.get(&s).map(Vec::as_slice) {
                Some([one]) => Some(one.clone()),
                Some(many @ [_, _, ..]) => {
                    let on: Vec<String> = many.iter().map(|p| p.database.to_string()).collect();
                    warn!(
                        cluster,
                        "logical shard {s} of group {group} is recorded on databases {}: routed by the running placement",
                        on.join(", ")
                    );
                    None
                }
                _ => None,
            })
            .collect();
        if shared.update_placement(cluster, |o| {
            o.set(cluster, group, placed, read_from);
        }) {
            info!(
                cluster,
                "placement of group {group} changed, as the databases record it (pgshard.shards)"
            );
            changed = true;
        }
    }
    changed
}
