//! A move's record on the databases, where any pgshard instance can read
//! it (as the two-phase decisions are kept): the SQL of
//! - `pgshard.moves`: one row per move, on the source and on the target,
//!   its phase moved along in the same transaction as the change it
//!   records (the fence on the source, the switch on the target);
//! - `pgshard.shards`: which logical shards of which placement group each
//!   database holds (the first move of a cluster writes the placement in
//!   force to every database; a move takes the shard from the source at
//!   the fence and gives it to the target at the switch);
//! - `pgshard.move_marks`: rows written on the source and published with
//!   the moving tables; one seen on the target means the target has
//!   applied everything the source committed before it.
//!
//! - `pgshard.move_tables`: the tables a move carries (on the source and
//!   the target), so that whoever finishes or undoes it knows them;
//! - the move's `owner` (the pgshard process running it) and its
//!   `heartbeat`, renewed while it runs: a move whose heartbeat is older
//!   than the lease is finished or rolled back by the next instance that
//!   looks (`recover.rs`).
//!
//! - `pgshard.instances`: per pgshard instance and cluster, when its last
//!   read of these tables began, how long that read keeps it serving
//!   keyless statements, and the moves it has marked (`instances.rs`);
//!   written on every database of a pinned cluster each poll.
//!
//! - `pgshard.moving(rel, move)`: raises 55P03 "send it again"; the stub
//!   views of fenced family tables call it (`stub.rs`).
//!
//! Any login may read `pgshard.shards` and `pgshard.moves`, and write
//! `pgshard.instances` (every pgshard instance reads and acknowledges with
//! the cluster's first user: `overlay.rs`).

use super::sql::literal;
use super::state::Phase;

/// The tables, made where missing (every statement is idempotent).
/// (The advisory lock: see `execute::two_phase::CREATE_DECISIONS`.)
pub const CREATE: &str = "SELECT pg_advisory_xact_lock(31638942761710180); \
    CREATE SCHEMA IF NOT EXISTS pgshard; \
     CREATE TABLE IF NOT EXISTS pgshard.moves (\
     id text PRIMARY KEY, cluster text NOT NULL, grp text NOT NULL, shard int NOT NULL, \
     source int NOT NULL, target int NOT NULL, phase text NOT NULL, error text, \
     started_at timestamptz NOT NULL DEFAULT now(), switched_at timestamptz, \
     finished_at timestamptz); \
     CREATE TABLE IF NOT EXISTS pgshard.shards (\
     grp text NOT NULL, shard int NOT NULL, since text NOT NULL, PRIMARY KEY (grp, shard)); \
     CREATE TABLE IF NOT EXISTS pgshard.move_marks (\
     move text NOT NULL, seq bigint NOT NULL, at timestamptz NOT NULL DEFAULT now(), \
     PRIMARY KEY (move, seq)); \
     ALTER TABLE pgshard.moves ADD COLUMN IF NOT EXISTS owner text, \
     ADD COLUMN IF NOT EXISTS heartbeat timestamptz; \
     CREATE TABLE IF NOT EXISTS pgshard.move_tables (\
     move text NOT NULL, schema text NOT NULL, name text NOT NULL, \
     PRIMARY KEY (move, schema, name)); \
     CREATE TABLE IF NOT EXISTS pgshard.instances (\
     instance text NOT NULL, cluster text NOT NULL, begun timestamptz NOT NULL, \
     fresh_ms bigint NOT NULL, seen timestamptz, marked text[] NOT NULL DEFAULT '{}', \
     PRIMARY KEY (instance, cluster)); \
     CREATE OR REPLACE FUNCTION pgshard.moving(rel text, move text) RETURNS boolean \
     LANGUAGE plpgsql STABLE AS $pgshard$ BEGIN RAISE EXCEPTION USING ERRCODE = '55P03', \
     MESSAGE = format('%s is being moved to another database by pgshard (move %s): nothing ran; \
     send the statement again (the whole transaction, if one was open)', rel, move); END $pgshard$; \
     GRANT USAGE ON SCHEMA pgshard TO PUBLIC; \
     GRANT SELECT ON pgshard.shards, pgshard.moves TO PUBLIC; \
     GRANT SELECT, INSERT, UPDATE ON pgshard.instances TO PUBLIC";

/// The table of marks, as the publication names it.
pub const MARKS: &str = "pgshard.move_marks";

/// What identifies a move in `pgshard.moves`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveRow {
    pub id: String,
    pub cluster: String,
    /// The placement group, as shown (`postgres/8`).
    pub group: String,
    pub shard: usize,
    pub source: usize,
    pub target: usize,
}

/// The move's row, at `phase`, owned by `owner` (replaced if it is
/// there).
pub fn insert(row: &MoveRow, phase: Phase, owner: &str) -> String {
    format!(
        "INSERT INTO pgshard.moves (id, cluster, grp, shard, source, target, phase, owner, heartbeat) \
         VALUES ({}, {}, {}, {}, {}, {}, {}, {}, now()) \
         ON CONFLICT (id) DO UPDATE SET phase = EXCLUDED.phase",
        literal(&row.id),
        literal(&row.cluster),
        literal(&row.group),
        row.shard,
        row.source,
        row.target,
        literal(phase.as_str()),
        literal(owner),
    )
}

/// The move's row moved to `phase` (with the time of the switch or of the
/// end when it is one of those).
pub fn set_phase(id: &str, phase: Phase) -> String {
    let stamp = match phase {
        Phase::Switched => ", switched_at = now()",
        Phase::Done | Phase::Failed => ", finished_at = now()",
        _ => "",
    };
    format!(
        "UPDATE pgshard.moves SET phase = {}{stamp} WHERE id = {}",
        literal(phase.as_str()),
        literal(id)
    )
}

/// The move's row failed with `error`.
pub fn fail(id: &str, error: &str) -> String {
    format!(
        "UPDATE pgshard.moves SET phase = 'failed', error = {}, finished_at = now() WHERE id = {}",
        literal(error),
        literal(id)
    )
}

/// Record that this database holds logical shards `shards` of `group`,
/// where it has no record of them yet.
pub fn pin(group: &str, shards: &[usize], since: &str) -> String {
    if shards.is_empty() {
        return "SELECT 1".to_owned();
    }
    let values: Vec<String> = shards
        .iter()
        .map(|s| format!("({}, {s}, {})", literal(group), literal(since)))
        .collect();
    format!(
        "INSERT INTO pgshard.shards (grp, shard, since) VALUES {} ON CONFLICT DO NOTHING",
        values.join(", ")
    )
}

/// This database no longer holds `shard` of `group`.
pub fn give_up(group: &str, shard: usize) -> String {
    format!(
        "DELETE FROM pgshard.shards WHERE grp = {} AND shard = {shard}",
        literal(group)
    )
}

/// This database holds `shard` of `group` since move `id`.
pub fn take(group: &str, shard: usize, id: &str) -> String {
    format!(
        "INSERT INTO pgshard.shards (grp, shard, since) VALUES ({}, {shard}, {}) \
         ON CONFLICT (grp, shard) DO UPDATE SET since = EXCLUDED.since",
        literal(group),
        literal(id)
    )
}

/// Mark number `seq` of move `id` (written on the source).
pub fn mark(id: &str, seq: u32) -> String {
    format!(
        "INSERT INTO {MARKS} (move, seq) VALUES ({}, {seq}) ON CONFLICT DO NOTHING",
        literal(id)
    )
}

/// One row when mark `seq` of move `id` has arrived (asked of the target).
pub fn mark_seen(id: &str, seq: u32) -> String {
    format!(
        "SELECT 1 FROM {MARKS} WHERE move = {} AND seq = {seq}",
        literal(id)
    )
}

/// The marks of move `id`, gone once it has ended (on either database).
pub fn forget_marks(id: &str) -> String {
    format!("DELETE FROM {MARKS} WHERE move = {}", literal(id))
}

/// The move's heartbeat renewed (its owner is alive).
pub fn heartbeat(id: &str) -> String {
    format!(
        "UPDATE pgshard.moves SET heartbeat = now() WHERE id = {}",
        literal(id)
    )
}

/// Record the tables move `id` carries: (schema, name).
pub fn record_tables(id: &str, tables: &[(String, String)]) -> String {
    if tables.is_empty() {
        return "SELECT 1".to_owned();
    }
    let values: Vec<String> = tables
        .iter()
        .map(|(schema, name)| format!("({}, {}, {})", literal(id), literal(schema), literal(name)))
        .collect();
    format!(
        "INSERT INTO pgshard.move_tables (move, schema, name) VALUES {} ON CONFLICT DO NOTHING",
        values.join(", ")
    )
}

/// The moves not ended whose owner has not renewed its heartbeat for
/// `lease_ms` (asked of each database).
pub fn orphans(lease_ms: u128) -> String {
    format!(
        "SELECT id, grp, shard::text, source::text, target::text, phase FROM pgshard.moves \
         WHERE phase NOT IN ('done', 'failed') \
         AND (heartbeat IS NULL OR heartbeat < now() - interval '{lease_ms} milliseconds')"
    )
}

/// The tables move `id` carries: (schema, name).
pub fn tables_of(id: &str) -> String {
    format!(
        "SELECT schema, name FROM pgshard.move_tables WHERE move = {} ORDER BY 1, 2",
        literal(id)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> MoveRow {
        MoveRow {
            id: "m1".to_owned(),
            cluster: "pr'od".to_owned(),
            group: "postgres/8".to_owned(),
            shard: 3,
            source: 0,
            target: 1,
        }
    }

    #[test]
    fn statements() {
        let cases: &[(String, &str)] = &[
            (
                insert(&row(), Phase::Planned, "p1"),
                "INSERT INTO pgshard.moves (id, cluster, grp, shard, source, target, phase, owner, heartbeat) \
                 VALUES ('m1', 'pr''od', 'postgres/8', 3, 0, 1, 'planned', 'p1', now()) \
                 ON CONFLICT (id) DO UPDATE SET phase = EXCLUDED.phase",
            ),
            (
                record_tables("m1", &[("public".to_owned(), "events_p7".to_owned())]),
                "INSERT INTO pgshard.move_tables (move, schema, name) VALUES \
                 ('m1', 'public', 'events_p7') ON CONFLICT DO NOTHING",
            ),
            (
                set_phase("m1", Phase::Switched),
                "UPDATE pgshard.moves SET phase = 'switched', switched_at = now() WHERE id = 'm1'",
            ),
            (
                set_phase("m1", Phase::Copy),
                "UPDATE pgshard.moves SET phase = 'copy' WHERE id = 'm1'",
            ),
            (
                fail("m1", "it's gone"),
                "UPDATE pgshard.moves SET phase = 'failed', error = 'it''s gone', \
                 finished_at = now() WHERE id = 'm1'",
            ),
            (
                pin("postgres/8", &[1, 3], "config"),
                "INSERT INTO pgshard.shards (grp, shard, since) VALUES ('postgres/8', 1, 'config'), \
                 ('postgres/8', 3, 'config') ON CONFLICT DO NOTHING",
            ),
            (pin("postgres/8", &[], "config"), "SELECT 1"),
            (
                give_up("postgres/8", 3),
                "DELETE FROM pgshard.shards WHERE grp = 'postgres/8' AND shard = 3",
            ),
            (
                mark("m1", 2),
                "INSERT INTO pgshard.move_marks (move, seq) VALUES ('m1', 2) ON CONFLICT DO NOTHING",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
