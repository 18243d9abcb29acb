//! Moving a logical shard of plain sharded tables (`[[sharded_tables]]`
//! with `name` and `column`: one table holding rows of several logical
//! shards on each database). Only the shard's rows move, selected by
//! `router::hash::predicate` (accepted by PG15 as a publication row
//! filter: built-in immutable functions only):
//! - checks: the table on both databases with the same columns, no row
//!   of the shard on the target yet, and a replica identity on the source
//!   that includes the key (PG15 refuses UPDATE and DELETE on a table
//!   published with a row filter on columns outside it): else
//!   `REPLICA IDENTITY FULL` for the move when
//!   `resharding_replica_identity_full`, or a refusal;
//! - the fence: row triggers on the source (`WHEN` the row is in the
//!   shard) calling `pgshard.fence()`, installed before the copy, and a
//!   guard row in `pgshard.fences` per (group, shard). Each write to a row
//!   of the shard takes the guard row `FOR SHARE` until its transaction
//!   ends; the fence sets the row's `fenced`, so it waits for exactly the
//!   transactions that wrote rows of the shard, and every later write gets
//!   55000 (or 40001 under REPEATABLE READ). The triggers and the fenced
//!   row stay after the move: stale INSERTs keep failing;
//! - the publication lists the table `WHERE (<predicate>)`, and the copy
//!   selects the same rows;
//! - cleanup: the source's rows of the shard deleted in batches (the
//!   fence bypassed by `pgshard.move_bypass`), the replica identity put
//!   back. A rollback deletes the target's copied rows and the triggers.
//!
//! From the copy until the cleanup the shard's rows are on both
//! databases, so keyless statements on the group's tables are refused
//! (the router's moving marker with `refuse_keyless`, kept over the
//! switch until the cleanup: [`marker`]).

use std::time::Duration;

use router::hash::predicate;
use router::sharding::{KeySpace, ShardedTable};

use super::db::Db;
use super::plan::{MoveError, Plan};
use super::sql::{ident, literal, qualified, Table};

/// The fences table and the trigger function, made where missing.
/// (The advisory lock: see `execute::two_phase::CREATE_DECISIONS`.)
pub const FENCES: &str = "SELECT pg_advisory_xact_lock(31638942761710180); \
    CREATE SCHEMA IF NOT EXISTS pgshard; \
    CREATE TABLE IF NOT EXISTS pgshard.fences (grp text NOT NULL, shard int NOT NULL, \
    move text NOT NULL, target int NOT NULL, fenced boolean NOT NULL DEFAULT false, \
    PRIMARY KEY (grp, shard)); \
    CREATE OR REPLACE FUNCTION pgshard.fence() RETURNS trigger LANGUAGE plpgsql \
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $pgshard$ \
    DECLARE f pgshard.fences; \
    BEGIN \
      SELECT * INTO f FROM pgshard.fences WHERE grp = TG_ARGV[0] AND shard = TG_ARGV[1]::int \
        FOR SHARE; \
      IF f.fenced AND f.move IS DISTINCT FROM current_setting('pgshard.move_bypass', true) THEN \
        RAISE EXCEPTION USING ERRCODE = '55000', MESSAGE = format(\
          'logical shard %s of group %s moved to database %s (move %s): this database no longer serves its rows of %s', \
          f.shard, f.grp, f.target, f.move, TG_TABLE_NAME), \
          HINT = 'route by the current placement: a pgshard instance that sends this here has not read the new placement yet'; \
      END IF; \
      IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; \
      RETURN NEW; \
    END $pgshard$";

/// Rows deleted per statement by the cleanup.
const BATCH: usize = 10_000;

/// A plain table of a moving group, as found on the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainTable {
    pub table: Table,
    /// The key column (unquoted).
    pub column: String,
    pub keys: KeySpace,
    /// When the move set `REPLICA IDENTITY FULL`: what to put back
    /// (`DEFAULT`, `NOTHING`, `USING INDEX "i"`).
    pub identity: Option<String>,
}

impl PlainTable {
    /// The predicate of the moving shard's rows, over the key as `row`
    /// (`NEW`, `OLD`) has it, or as the table has it.
    pub fn predicate(&self, shard: usize, row: Option<&str>) -> Result<String, MoveError> {
        let column = match row {
            Some(row) => format!("{row}.{}", ident(&self.column)),
            None => ident(&self.column),
        };
        predicate(&self.keys, &column, &[shard]).map_err(|e| MoveError::Check(e.to_string()))
    }

    /// The publication's entry: the table with its row filter.
    pub fn publication_member(&self, shard: usize) -> Result<String, MoveError> {
        Ok(format!(
            "{} WHERE ({})",
            self.table.sql(),
            self.predicate(shard, None)?
        ))
    }
}

/// What the snapshot copy copies: `whole` (the family tables, the shard's
/// partitions) whole, the plain tables' rows of the shard.
pub fn copies(
    plan: &Plan,
    whole: &[Table],
    plain: &[PlainTable],
) -> Result<Vec<(Table, Option<String>)>, MoveError> {
    let mut copies: Vec<(Table, Option<String>)> =
        whole.iter().map(|t| (t.clone(), None)).collect();
    for table in plain {
        copies.push((
            table.table.clone(),
            Some(table.predicate(plan.shard, None)?),
        ));
    }
    Ok(copies)
}

/// The plan's plain tables on the source, checked against the target,
/// and its partitioned ones (with their entries: `partitioned.rs` checks
/// them).
pub async fn tables<'p>(
    plan: &'p Plan,
    replica_identity_full: bool,
    a: &mut Db,
    b: &mut Db,
) -> Result<(Vec<PlainTable>, Vec<(Table, &'p ShardedTable)>), MoveError> {
    a.run("create the fences table", FENCES).await?;
    b.run("create the fences table", FENCES).await?;
    let (mut found, mut partitioned) = (Vec::new(), Vec::new());
    for entry in &plan.tables {
        let Some(name) = &entry.name else {
            continue;
        };
        let Some((table, kind)) = resolve(a, entry.schema.as_deref(), name).await? else {
            // Not made on the source: nothing of it to move.
            continue;
        };
        if kind == "p" {
            partitioned.push((table, entry));
            continue;
        }
        let plain = PlainTable {
            column: entry.column.clone(),
            keys: entry.keys.clone(),
            identity: identity(a, &table, &entry.column, replica_identity_full).await?,
            table,
        };
        check_target(plan, &plain, a, b).await?;
        found.push(plain);
    }
    Ok((found, partitioned))
}

/// The plan's plain tables on the source, for a move taken over from a
/// stopped process (`recover.rs`): as [`tables`] finds them, without the
/// target's checks (its copy may be there already). The replica identity
/// the move may have replaced is not known any more: it stays as it is.
pub async fn recovered(plan: &Plan, a: &mut Db) -> Result<Vec<PlainTable>, MoveError> {
    let mut found = Vec::new();
    for entry in &plan.tables {
        let Some(name) = &entry.name else {
            continue;
        };
        if let Some((table, kind)) = resolve(a, entry.schema.as_deref(), name).await? {
            if kind != "p" {
                found.push(PlainTable {
                    table,
                    column: entry.column.clone(),
                    keys: entry.keys.clone(),
                    identity: None,
                });
            }
        }
    }
    Ok(found)
}

/// `name` (in `schema`, or on the search path) on `db`: the table and its
/// `relkind`.
pub(super) async fn resolve(
    db: &mut Db,
    schema: Option<&str>,
    name: &str,
) -> Result<Option<(Table, String)>, MoveError> {
    let path = match schema {
        Some(schema) => qualified(schema, name),
        None => ident(name),
    };
    let sql = format!(
        "SELECT n.nspname, c.relname, c.relkind FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass({})",
        literal(&path)
    );
    let rows = db.rows("look for the table", &sql).await?;
    Ok(match rows.first().map(Vec::as_slice) {
        Some([Some(schema), Some(name), Some(kind)]) => Some((
            Table {
                schema: schema.clone(),
                name: name.clone(),
            },
            kind.clone(),
        )),
        _ => None,
    })
}

/// The table on the target, with the source's columns and types, and no
/// row of the moving shard yet.
pub(super) async fn check_target(
    plan: &Plan,
    plain: &PlainTable,
    a: &mut Db,
    b: &mut Db,
) -> Result<(), MoveError> {
    let name = plain.table.sql();
    let there = format!("SELECT to_regclass({})", literal(&name));
    if b.value("look for the table", &there).await?.is_none() {
        return Err(MoveError::Check(format!(
            "table {name} is missing on database {}: a plain sharded table is on every database (create it there first)",
            plan.target
        )));
    }
    let columns = format!(
        "SELECT string_agg(quote_ident(attname) || ' ' || format_type(atttypid, atttypmod), ', ' \
         ORDER BY attname) FROM pg_attribute WHERE attrelid = {}::regclass AND attnum > 0 \
         AND NOT attisdropped",
        literal(&name)
    );
    let (on_a, on_b) = (
        a.value("read the columns", &columns).await?,
        b.value("read the columns", &columns).await?,
    );
    if on_a != on_b {
        return Err(MoveError::Check(format!(
            "table {name} has other columns on database {} ({}) than on database {} ({}): make them the same first",
            plan.target,
            on_b.unwrap_or_default(),
            plan.source,
            on_a.unwrap_or_default()
        )));
    }
    let rows = format!(
        "SELECT 1 FROM {name} WHERE {} LIMIT 1",
        plain.predicate(plan.shard, None)?
    );
    if b.value("look for the shard's rows", &rows).await?.is_some() {
        return Err(MoveError::Check(format!(
            "table {name} on database {} holds rows of logical shard {} already (no one reads them there: the placement sends the shard to database {}): delete them first",
            plan.target, plan.shard, plan.source
        )));
    }
    Ok(())
}

/// Whether the table's replica identity on the source covers `column`:
/// `None` when it does, the identity to put back when the move sets FULL,
/// a refusal when it may not.
pub(super) async fn identity(
    a: &mut Db,
    table: &Table,
    column: &str,
    full_allowed: bool,
) -> Result<Option<String>, MoveError> {
    let sql = format!(
        "SELECT c.relreplident::text, \
         (SELECT quote_ident(ic.relname) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid \
          WHERE i.indrelid = c.oid AND i.indisreplident), \
         EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = c.oid \
          AND a.attnum = ANY (i.indkey) WHERE i.indrelid = c.oid AND a.attname = {} \
          AND CASE c.relreplident WHEN 'd' THEN i.indisprimary WHEN 'i' THEN i.indisreplident \
          ELSE false END)::text \
         FROM pg_class c WHERE c.oid = {}::regclass",
        literal(column),
        literal(&table.sql())
    );
    let rows = a.rows("read the replica identity", &sql).await?;
    let (kind, index, covered) = match rows.first().map(Vec::as_slice) {
        Some([Some(kind), index, Some(covered)]) => {
            (kind.clone(), index.clone(), covered == "true")
        }
        _ => return Err(MoveError::Check(format!("table {} vanished", table.sql()))),
    };
    if kind == "f" || covered {
        return Ok(None);
    }
    if !full_allowed {
        return Err(MoveError::Check(format!(
            "table {}'s replica identity does not include its sharding key {column}: while the move publishes the table's rows of the moving shard (a row filter on {column}), Postgres refuses UPDATE and DELETE on it; give it a primary key (or REPLICA IDENTITY USING INDEX) that includes {column}, or set resharding_replica_identity_full = true to have the move use REPLICA IDENTITY FULL for its duration (each replicated UPDATE and DELETE then scans the table on the target)",
            table.sql()
        )));
    }
    Ok(Some(match (kind.as_str(), index) {
        ("i", Some(index)) => format!("USING INDEX {index}"),
        ("n", _) => "NOTHING".to_owned(),
        _ => "DEFAULT".to_owned(),
    }))
}

/// The fence triggers' names on a table, for logical shard `shard`.
pub(super) fn trigger_names(shard: usize) -> [String; 3] {
    ["ins", "upd", "del"].map(|op| format!("pgshard_fence_{shard}_{op}"))
}

/// The source's fence triggers (on plain tables, after `sql`: the
/// partitions' triggers) and guard row (unfenced), and `REPLICA IDENTITY FULL` where
/// the move needs it: one transaction, retried when it waits too long for
/// the tables' locks.
pub async fn install(
    a: &mut Db,
    plan: &Plan,
    tables: &[PlainTable],
    mut sql: Vec<String>,
) -> Result<(), MoveError> {
    if tables.is_empty() && sql.is_empty() {
        return Ok(());
    }
    let group = literal(&plan.group.to_string());
    let args = format!("{group}, '{}'", plan.shard);
    for plain in tables {
        let t = plain.table.sql();
        let [ins, upd, del] = trigger_names(plan.shard).map(|n| ident(&n));
        let (new, old) = (
            plain.predicate(plan.shard, Some("NEW"))?,
            plain.predicate(plan.shard, Some("OLD"))?,
        );
        sql.push(format!("CREATE OR REPLACE TRIGGER {ins} BEFORE INSERT ON {t} FOR EACH ROW WHEN ({new}) EXECUTE FUNCTION pgshard.fence({args})"));
        sql.push(format!("CREATE OR REPLACE TRIGGER {upd} BEFORE UPDATE ON {t} FOR EACH ROW WHEN ({old} OR {new}) EXECUTE FUNCTION pgshard.fence({args})"));
        sql.push(format!("CREATE OR REPLACE TRIGGER {del} BEFORE DELETE ON {t} FOR EACH ROW WHEN ({old}) EXECUTE FUNCTION pgshard.fence({args})"));
        if plain.identity.is_some() {
            sql.push(format!("ALTER TABLE {t} REPLICA IDENTITY FULL"));
        }
    }
    sql.push(format!(
        "INSERT INTO pgshard.fences (grp, shard, move, target, fenced) VALUES ({group}, {}, {}, {}, false) \
         ON CONFLICT (grp, shard) DO UPDATE SET move = EXCLUDED.move, target = EXCLUDED.target, fenced = false",
        plan.shard,
        literal(&plan.id),
        plan.target
    ));
    locked(a, "install the fence triggers", &sql.join("; ")).await
}

/// Run `sql` as one transaction under a short `lock_timeout`, again while
/// it times out (up to about 30 s): DDL on a busy table waits for its
/// writers, and writers queue behind it meanwhile.
pub(super) async fn locked(db: &mut Db, what: &str, sql: &str) -> Result<(), MoveError> {
    let text = format!("SELECT set_config('lock_timeout', '50ms', true); {sql}");
    let mut tries = 0;
    loop {
        match db.run(what, &text).await {
            Err(MoveError::Server { message, .. })
                if message.ends_with("(55P03)") && tries < 300 =>
            {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            done => return done,
        }
    }
}

/// The fence (in the source's fence transaction): waits for the
/// transactions that wrote rows of the shard, then refuses the rest.
pub fn fence(plan: &Plan) -> String {
    fenced(plan, true)
}

/// The fence lifted (a cutover abandoned).
pub fn unfence(plan: &Plan) -> String {
    fenced(plan, false)
}

fn fenced(plan: &Plan, on: bool) -> String {
    format!(
        "UPDATE pgshard.fences SET fenced = {on} WHERE grp = {} AND shard = {} AND move = {}",
        literal(&plan.group.to_string()),
        plan.shard,
        literal(&plan.id)
    )
}

/// In the target's switch transaction: an old fence of the shard there
/// (from a move that took it away before) no longer applies.
pub fn take_back(plan: &Plan) -> String {
    format!(
        "DELETE FROM pgshard.fences WHERE grp = {} AND shard = {}",
        literal(&plan.group.to_string()),
        plan.shard
    )
}

/// A rollback's statements: on the source, the triggers, the guard row
/// and the replica identity; on the target, the copied rows (the target's
/// triggers off: an old fence there must not refuse it).
pub fn undo(plan: &Plan, tables: &[PlainTable]) -> Result<(Vec<String>, Vec<String>), MoveError> {
    let (mut source, mut target) = (Vec::new(), Vec::new());
    for plain in tables {
        let t = plain.table.sql();
        for name in trigger_names(plan.shard) {
            source.push(format!("DROP TRIGGER IF EXISTS {} ON {t}", ident(&name)));
        }
        if let Some(identity) = &plain.identity {
            source.push(format!("ALTER TABLE {t} REPLICA IDENTITY {identity}"));
        }
        target.push(format!(
            "SET session_replication_role = replica; DELETE FROM {t} WHERE {}; \
             SET session_replication_role = origin",
            plain.predicate(plan.shard, None)?
        ));
    }
    source.push(format!(
        "DELETE FROM pgshard.fences WHERE grp = {} AND shard = {} AND move = {}",
        literal(&plan.group.to_string()),
        plan.shard,
        literal(&plan.id)
    ));
    Ok((source, target))
}

/// After the switch and the cleanup delay: the source's rows of the shard
/// deleted in batches (past the fence), the replica identity put back. The
/// triggers and the fenced guard row stay. How many rows went.
pub async fn clean_source(
    a: &mut Db,
    plan: &Plan,
    tables: &[PlainTable],
) -> Result<u64, MoveError> {
    if tables.is_empty() {
        return Ok(0);
    }
    a.run(
        "bypass the fence",
        &format!("SET pgshard.move_bypass = {}", literal(&plan.id)),
    )
    .await?;
    let mut deleted = 0;
    for plain in tables {
        let t = plain.table.sql();
        let sql = format!(
            "WITH gone AS (DELETE FROM {t} WHERE ctid = ANY (ARRAY (SELECT ctid FROM {t} WHERE {} LIMIT {BATCH})) \
             RETURNING 1) SELECT count(*) FROM gone",
            plain.predicate(plan.shard, None)?
        );
        loop {
            let gone = a
                .value("delete the old rows", &sql)
                .await?
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            deleted += gone;
            if gone == 0 {
                break;
            }
            // Leave the source's other traffic room.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if let Some(identity) = &plain.identity {
            let sql = format!("ALTER TABLE {t} REPLICA IDENTITY {identity}");
            locked(a, "put the replica identity back", &sql).await?;
        }
    }
    a.run("end the bypass", "RESET pgshard.move_bypass").await?;
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use router::sharding::{DataType, GroupFunction, GroupId, Hasher, ShardFunction};

    use super::*;

    fn keys() -> KeySpace {
        KeySpace {
            data_type: DataType::BigInt,
            function: ShardFunction::Hash {
                hasher: Hasher::Postgres,
                shard_count: 8,
            },
            placement: (0..8).map(|s| s % 2).collect(),
            moving: None,
        }
    }

    fn plan() -> Plan {
        Plan {
            id: "m1".to_owned(),
            cluster: "prod".to_owned(),
            group: GroupId {
                function: GroupFunction::Hash(Hasher::Postgres),
                shard_count: 8,
            },
            shard: 3,
            source: 1,
            target: 0,
            families: Vec::new(),
            tables: Vec::new(),
        }
    }

    fn table(identity: Option<&str>) -> PlainTable {
        PlainTable {
            table: Table {
                schema: "public".to_owned(),
                name: "accounts".to_owned(),
            },
            column: "id".to_owned(),
            keys: keys(),
            identity: identity.map(str::to_owned),
        }
    }

    #[test]
    fn statements() {
        let shard3 =
            "(((hashint8extended((\"id\")::int8, 8816678312871386365) & 7) + 3) & 7) IN (3)";
        let (source, target) = undo(&plan(), &[table(Some("DEFAULT"))]).unwrap();
        let cases: Vec<(String, String)> = vec![
            (table(None).predicate(3, None).unwrap(), shard3.to_owned()),
            (
                table(None).predicate(3, Some("NEW")).unwrap(),
                shard3.replace("(\"id\")", "(NEW.\"id\")"),
            ),
            (
                table(None).publication_member(3).unwrap(),
                format!("\"public\".\"accounts\" WHERE ({shard3})"),
            ),
            (
                fence(&plan()),
                "UPDATE pgshard.fences SET fenced = true WHERE grp = 'postgres/8' AND shard = 3 AND move = 'm1'".to_owned(),
            ),
            (
                unfence(&plan()),
                "UPDATE pgshard.fences SET fenced = false WHERE grp = 'postgres/8' AND shard = 3 AND move = 'm1'".to_owned(),
            ),
            (
                take_back(&plan()),
                "DELETE FROM pgshard.fences WHERE grp = 'postgres/8' AND shard = 3".to_owned(),
            ),
            (
                source.join("; "),
                "DROP TRIGGER IF EXISTS \"pgshard_fence_3_ins\" ON \"public\".\"accounts\"; \
                 DROP TRIGGER IF EXISTS \"pgshard_fence_3_upd\" ON \"public\".\"accounts\"; \
                 DROP TRIGGER IF EXISTS \"pgshard_fence_3_del\" ON \"public\".\"accounts\"; \
                 ALTER TABLE \"public\".\"accounts\" REPLICA IDENTITY DEFAULT; \
                 DELETE FROM pgshard.fences WHERE grp = 'postgres/8' AND shard = 3 AND move = 'm1'"
                    .to_owned(),
            ),
            (
                target.join("; "),
                format!(
                    "SET session_replication_role = replica; DELETE FROM \"public\".\"accounts\" \
                     WHERE {shard3}; SET session_replication_role = origin"
                ),
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
