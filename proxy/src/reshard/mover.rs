//! One move of a logical shard, from the checks to the end of catch-up:
//! the family tables of the shard found on the source (its plain tables'
//! part is `plain.rs`'s, its partitions' `partitioned.rs`'s), their schema made on the target (`pg_dump`), the change stream
//! opened first (a publication, then a slot whose snapshot is exported),
//! the rows copied under that snapshot (`execute::copy_relay`), and a
//! native subscription on the target that takes the slot over and
//! applies what changed since. `cutover.rs` and `cleanup.rs` finish it;
//! `rollback.rs` undoes what a failed move made before its switch.

use std::time::{Duration, Instant};

use router::config::CopyFormat;
use router::hash::logical_shard;
use router::sharding::Key;

use crate::execute::copy_relay::{relay, statements};

use super::db::{dump, server, Db, Link};
use super::fault::{self, Fault};
use super::partitioned::PartTable;
use super::plain::PlainTable;
use super::plan::{MoveError, Plan};
use super::sql::{conninfo_pair, ident, literal, qualified};
use super::state::Phase;
use super::{store, Moves};

/// The schema the source's tables of a moved shard go to at the fence.
pub const MOVED_SCHEMA: &str = "pgshard_moved";

pub use super::sql::Table;

/// What a move has made so far (what a rollback undoes).
#[derive(Debug, Default)]
pub struct Made {
    /// The family tables of the shard.
    pub tables: Vec<Table>,
    /// The plain tables (the shard's rows of them move).
    pub plain: Vec<PlainTable>,
    /// The tables partitioned by hash (the shard's partition moves).
    pub parts: Vec<PartTable>,
    pub on_target: bool,
    pub stream: bool,
    pub subscription: bool,
    pub fenced: bool,
}

impl Made {
    /// Whether the move fences rows on the source by trigger (plain
    /// tables, partitions) under the shard's guard row.
    pub fn row_fence(&self) -> bool {
        !self.plain.is_empty() || !self.parts.is_empty()
    }

    /// The tables that move whole: the family tables and the shard's
    /// partitions.
    pub fn whole(&self) -> Vec<Table> {
        let parts = self.parts.iter().map(|p| &p.part);
        self.tables.iter().chain(parts).cloned().collect()
    }
}

/// The move's row on the source and the target, the placement pinned on
/// every database, and the checks; the shard's family tables on the
/// source, and when this move pinned the cluster first (no database
/// recorded a placement before it).
pub async fn prepare(
    link: &Link,
    plan: &Plan,
    placement: &[usize],
    moves: &Moves,
) -> Result<(Vec<Table>, Option<Instant>), MoveError> {
    let group = plan.group.to_string();
    let mut pinned_before = false;
    for database in 0..link.targets.len() {
        let mut db = link.connect(database).await?;
        db.run("create pgshard's tables", store::CREATE).await?;
        let pinned = "SELECT 1 FROM pgshard.shards LIMIT 1";
        pinned_before |= db.value("look for a placement", pinned).await?.is_some();
        let held: Vec<usize> = (0..placement.len())
            .filter(|&s| placement.get(s) == Some(&database))
            .collect();
        db.run("record the placement", &store::pin(&group, &held, "config"))
            .await?;
        if database == plan.source || database == plan.target {
            db.run(
                "record the move",
                &store::insert(&moves.row(plan), Phase::Planned, &moves.owner),
            )
            .await?;
        }
    }
    let mut a = link.connect(plan.source).await?;
    let wal_level = a.value("check wal_level", "SHOW wal_level").await?;
    if wal_level.as_deref() != Some("logical") {
        return Err(MoveError::Check(format!(
            "database {} has wal_level = {}: a move streams changes by logical replication, which needs wal_level = logical (a restart)",
            plan.source,
            wal_level.unwrap_or_default()
        )));
    }
    let first_pin = (!pinned_before).then(Instant::now);
    let tables = family_tables(&mut a, plan).await?;
    let mut b = link.connect(plan.target).await?;
    for table in &tables {
        let there = format!("SELECT to_regclass({})", literal(&table.sql()));
        if b.value("look for the table", &there).await?.is_some() {
            return Err(MoveError::Check(format!(
                "table {} exists on database {} already: a family table lives on one database (drop it there, or move its rows by hand)",
                table.sql(),
                plan.target
            )));
        }
        let moved = format!(
            "SELECT to_regclass({})",
            literal(&qualified(MOVED_SCHEMA, &table.name))
        );
        if a.value("look for a moved table", &moved).await?.is_some() {
            return Err(MoveError::Check(format!(
                "{} on database {} is left from an earlier move: drop it first",
                qualified(MOVED_SCHEMA, &table.name),
                plan.source
            )));
        }
    }
    Ok((tables, first_pin))
}

/// The tables of the plan's families whose key falls into the moving
/// logical shard, on the source.
async fn family_tables(a: &mut Db, plan: &Plan) -> Result<Vec<Table>, MoveError> {
    let mut tables = Vec::new();
    for (schema, prefix, keys) in &plan.families {
        let schema_filter = match schema {
            Some(schema) => format!("n.nspname = {}", literal(schema)),
            None => format!(
                "n.nspname NOT IN ('pg_catalog', 'information_schema', 'pgshard', {}) \
                 AND n.nspname NOT LIKE 'pg\\_%'",
                literal(MOVED_SCHEMA)
            ),
        };
        let sql = format!(
            "SELECT n.nspname, c.relname, c.relkind FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND starts_with(c.relname, {}) AND {schema_filter} \
             ORDER BY 1, 2",
            literal(prefix)
        );
        for row in a.rows("list the family's tables", &sql).await? {
            let [Some(schema), Some(name), Some(kind)] = row.as_slice() else {
                continue;
            };
            let Some(key) = name
                .strip_prefix(prefix.as_str())
                .and_then(|n| n.parse::<i64>().ok())
            else {
                continue;
            };
            if logical_shard(keys, &Key::Int(key)) != Some(plan.shard) {
                continue;
            }
            if kind == "p" {
                return Err(MoveError::Check(format!(
                    "family table {} is partitioned: pgshard moves a family's tables whole, and not partitioned ones; move its partitions' rows by hand",
                    qualified(schema, name)
                )));
            }
            tables.push(Table {
                schema: schema.clone(),
                name: name.clone(),
            });
        }
    }
    Ok(tables)
}

/// The tables made on the target from the source's definitions (before
/// the rows: no index but the ones constraints need come later).
pub async fn schema(
    link: &Link,
    source: usize,
    tables: &[Table],
    section: &str,
    b: &mut Db,
) -> Result<(), MoveError> {
    let names: Vec<String> = tables.iter().map(Table::sql).collect();
    let text = dump(link.target(source)?, &names, section).await?;
    if !text.trim().is_empty() {
        b.run(&format!("create the tables ({section})"), &text)
            .await?;
    }
    Ok(())
}

/// The publication and the slot on the source (in that order: the
/// walsender looks the publication up as of the slot's start); the
/// replication connection that keeps the exported snapshot alive, and the
/// snapshot's name. Plain tables are published with a row filter, and
/// then TRUNCATE is not (a filter does not apply to it).
pub async fn stream(
    link: &Link,
    plan: &Plan,
    made: &Made,
    a: &mut Db,
) -> Result<(Db, String), MoveError> {
    let name = plan.stream_name();
    // Partitions are published as themselves (not via their root): the
    // target applies to its standalone table of the same name.
    let mut members: Vec<String> = made.whole().iter().map(Table::sql).collect();
    let plain = &made.plain;
    for table in plain {
        members.push(table.publication_member(plan.shard)?);
    }
    members.push(store::MARKS.to_owned());
    let publish = if plain.is_empty() {
        ""
    } else {
        " WITH (publish = 'insert, update, delete')"
    };
    a.run(
        "create the publication",
        &format!(
            "CREATE PUBLICATION {} FOR TABLE {}{publish}",
            ident(&name),
            members.join(", ")
        ),
    )
    .await?;
    let mut walsender = link.login(plan.source, true).await?;
    let rows = walsender
        .rows(
            "create the replication slot",
            &format!("CREATE_REPLICATION_SLOT {name} LOGICAL pgoutput (SNAPSHOT 'export')"),
        )
        .await?;
    let snapshot = rows
        .first()
        .and_then(|r| r.get(2).cloned().flatten())
        .ok_or_else(|| {
            server(
                plan.source,
                "create the replication slot",
                "no snapshot exported".to_owned(),
            )
        })?;
    Ok((walsender, snapshot))
}

/// The rows of `tables` as of `snapshot` (all of them, or those the
/// predicate beside a table selects), from the source to the target
/// (their triggers off there); rows copied are counted in `moves`.
pub async fn copy(
    link: &Link,
    plan: &Plan,
    tables: &[(Table, Option<String>)],
    snapshot: &str,
    format: CopyFormat,
    moves: &Moves,
) -> Result<(), MoveError> {
    let mut a = link.connect(plan.source).await?;
    a.run("begin the copy", "BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await?;
    a.run(
        "take the slot's snapshot",
        &format!("SET TRANSACTION SNAPSHOT {}", literal(snapshot)),
    )
    .await?;
    let mut b = link.connect(plan.target).await?;
    b.run(
        "turn the target's triggers off",
        "SET session_replication_role = replica",
    )
    .await?;
    let (mut source, mut target) = (a.conn, b.conn);
    for (n, (table, filter)) in tables.iter().enumerate() {
        moves.check(&plan.id)?;
        let mut db = Db {
            conn: source,
            index: plan.source,
        };
        let sql = format!(
            "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = {}::regclass \
             AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            literal(&table.sql())
        );
        let columns: Vec<String> = db
            .rows("read the columns", &sql)
            .await?
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
        let (copy_out, copy_in) = statements(&table.sql(), &columns, filter.as_deref(), format);
        let (copied, a, b) = relay(db.conn, &copy_out, target, &copy_in)
            .await
            .map_err(|e| server(plan.target, &format!("copy {}", table.sql()), e.to_string()))?;
        moves.update(&plan.id, |s| s.rows_copied += copied.rows);
        (source, target) = (a, b);
        if n == 0 {
            fault::park(moves, &plan.id, Fault::MidCopy).await?;
        }
    }
    Db {
        conn: source,
        index: plan.source,
    }
    .run("end the copy", "COMMIT")
    .await
}

/// The subscription on the target, which takes the slot over from its
/// consistent point.
pub async fn subscribe(
    link: &Link,
    plan: &Plan,
    format: CopyFormat,
    b: &mut Db,
) -> Result<(), MoveError> {
    let source = link.target(plan.source)?;
    let mut conninfo = vec![
        conninfo_pair("host", &source.host),
        conninfo_pair("port", &source.port.to_string()),
        conninfo_pair("dbname", &source.database),
        conninfo_pair("user", &source.user),
    ];
    if let Some(password) = &source.password {
        conninfo.push(conninfo_pair("password", password));
    }
    let name = plan.stream_name();
    let sql = format!(
        "CREATE SUBSCRIPTION {} CONNECTION {} PUBLICATION {} WITH (create_slot = false, \
         slot_name = {}, copy_data = false, streaming = on, binary = {}, synchronous_commit = off)",
        ident(&name),
        literal(&conninfo.join(" ")),
        ident(&name),
        literal(&name),
        format == CopyFormat::Binary,
    );
    b.run("create the subscription", &sql).await
}

/// Wait until the slot's lag is at most `threshold` bytes (shown in SHOW
/// MOVES); an apply error on the target fails the move.
/// The `seq` of the mark catch-up waits for (the cutover's attempts
/// write 1, 2, ...).
const CATCH_UP_MARK: u32 = 0;

pub async fn catch_up(
    plan: &Plan,
    threshold: u64,
    moves: &Moves,
    a: &mut Db,
    b: &mut Db,
) -> Result<(), MoveError> {
    let name = plan.stream_name();
    let lag = format!(
        "SELECT COALESCE(pg_current_wal_lsn() - confirmed_flush_lsn, 0)::bigint \
         FROM pg_replication_slots WHERE slot_name = {}",
        literal(&name)
    );
    let errors = format!(
        "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = {}",
        literal(&name)
    );
    // A mark written now shows on the target once its apply worker runs
    // and has applied everything before it. The lag alone can be small
    // before the worker has even started (Postgres's launcher starts
    // workers at most once per wal_retrieve_retry_interval, 5 s): the
    // cutover would then hold statements until it gave up.
    a.run(
        "write the catch-up mark",
        &store::mark(&plan.id, CATCH_UP_MARK),
    )
    .await?;
    let mut applying = false;
    loop {
        moves.check(&plan.id)?;
        if !applying {
            applying = b
                .value(
                    "wait for the catch-up mark",
                    &store::mark_seen(&plan.id, CATCH_UP_MARK),
                )
                .await?
                .is_some();
        }
        let bytes = a
            .value("read the lag", &lag)
            .await?
            .and_then(|v| v.parse::<u64>().ok());
        moves.update(&plan.id, |s| s.lag_bytes = bytes);
        let failed = b.value("read the subscription's errors", &errors).await?;
        if failed.is_some_and(|n| n != "0") {
            return Err(server(
                plan.target,
                "apply the changes",
                "the subscription failed to apply a change (the target's server log says why)"
                    .to_owned(),
            ));
        }
        if applying && bytes.is_some_and(|b| b <= threshold) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(if applying { 200 } else { 20 })).await;
    }
}
