//! Moving a logical shard of a sharded table partitioned by hash (a
//! `[[sharded_tables]]` entry whose table is `PARTITION BY HASH (key)` on
//! each database, with one partition `FOR VALUES WITH (MODULUS
//! shard_count, REMAINDER s)` per logical shard `s` placed there). The
//! shard's partition moves whole:
//! - checks: the parent partitioned by hash on the entry's column on both
//!   databases (the postgres hasher only: its logical shard is the
//!   partition's remainder; Postgres allows no DEFAULT partition beside
//!   hash partitions, which DETACH CONCURRENTLY would refuse), the
//!   shard's partition on the source, and the replica identity as for
//!   plain tables. The target's (empty) partition of the shard, in the
//!   layout with every partition everywhere, is replaced;
//! - the target gets the partition as a standalone table (`LIKE` its
//!   parent there) with a helper `CHECK (satisfies_hash_partition(..))`,
//!   the partition constraint itself, so that the ATTACH at the switch
//!   needs no scan (PG15: "partition constraint ... is implied by
//!   existing constraints"). Detached, no one reads it before the switch;
//! - the publication lists the source's partition as itself, and the copy
//!   takes it whole;
//! - the fence: row triggers on the source's partition (no `WHEN`: each
//!   of its rows is the shard's) calling `pgshard.fence()` with the
//!   shard's guard row (`plain.rs`);
//! - the switch attaches the target's table to its parent (in the switch
//!   transaction: ShareUpdateExclusive on the parent, its traffic goes on)
//!   and drops the helper CHECK;
//! - cleanup, after the delay: the source's partition detached
//!   concurrently (no AccessExclusive on its parent) and dropped; a stale
//!   INSERT there then finds no partition (23514).
//!
//! Keyless statements on the group's tables are refused from the copy to
//! the cleanup, as for plain tables (the source's partition stays
//! attached, fenced, until then).

use router::sharding::{Hasher, ShardFunction, ShardedTable};

use super::db::Db;
use super::plain::{self, PlainTable};
use super::plan::{MoveError, Plan};
use super::sql::{ident, literal, Table};

/// The helper constraint on the target's standalone partition.
const CHECK: &str = "pgshard_move_check";

/// A partitioned table of a moving group, as found on the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartTable {
    /// The partitioned parent (same schema and name on both databases).
    pub parent: Table,
    /// The source's partition of the moving shard (the target's gets its
    /// name).
    pub part: Table,
    /// The key column (unquoted).
    pub column: String,
    pub shard_count: usize,
    /// The target's empty partition of the shard (every partition on
    /// every database, as `pgbench --partitions` makes them): detached and
    /// dropped when the target's table is made, made again by a rollback.
    pub replaces: Option<Table>,
    /// When the move set `REPLICA IDENTITY FULL` on the partition: what
    /// to put back on a rollback.
    pub identity: Option<String>,
}

impl PartTable {
    /// The partition bound of logical shard `shard`, as `pg_get_expr`
    /// prints it.
    fn bound(&self, shard: usize) -> String {
        format!(
            "FOR VALUES WITH (modulus {}, remainder {shard})",
            self.shard_count
        )
    }
}

/// The plan's plain tables (`plain::tables`) and its tables partitioned
/// by hash, checked on both databases.
pub async fn tables(
    plan: &Plan,
    full: bool,
    a: &mut Db,
    b: &mut Db,
) -> Result<(Vec<PlainTable>, Vec<PartTable>), MoveError> {
    let (plain, partitioned) = plain::tables(plan, full, a, b).await?;
    let mut parts = Vec::new();
    for (parent, entry) in partitioned {
        parts.push(found(plan, entry, parent, full, (&mut *a, &mut *b)).await?);
    }
    Ok((plain, parts))
}

/// The plan's tables partitioned by hash with the source's partition of
/// the shard, for a move taken over from a stopped process
/// (`recover.rs`): without the checks (the move made its changes
/// already). What the move replaced on the target and the replica
/// identity it replaced on the source are not known any more: a rollback
/// leaves the target without a partition of the shard, and FULL stays.
pub async fn recovered(plan: &Plan, a: &mut Db) -> Result<Vec<PartTable>, MoveError> {
    let mut found = Vec::new();
    for entry in &plan.tables {
        let Some(name) = &entry.name else {
            continue;
        };
        let ShardFunction::Hash { shard_count, .. } = entry.keys.function else {
            continue;
        };
        let Some((parent, kind)) = plain::resolve(a, entry.schema.as_deref(), name).await? else {
            continue;
        };
        if kind != "p" {
            continue;
        }
        let mut table = PartTable {
            parent,
            part: Table {
                schema: String::new(),
                name: String::new(),
            },
            column: entry.column.clone(),
            shard_count,
            replaces: None,
            identity: None,
        };
        let bound = table.bound(plan.shard);
        if let Some((part, _)) = partitions(a, &table.parent)
            .await?
            .into_iter()
            .find(|(_, b)| *b == bound)
        {
            table.part = part;
            found.push(table);
        }
    }
    Ok(found)
}

/// Partitioned `parent` of `entry` on the source, checked on both
/// databases, with its partition of the moving shard.
async fn found(
    plan: &Plan,
    entry: &ShardedTable,
    parent: Table,
    full: bool,
    (a, b): (&mut Db, &mut Db),
) -> Result<PartTable, MoveError> {
    let name = parent.sql();
    let shard_count = match entry.keys.function {
        ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count,
        } => shard_count,
        _ => {
            return Err(MoveError::Check(format!(
                "table {name} is partitioned, and group {} does not hash as Postgres partitions do (hasher = \"postgres\"): its partitions are not its logical shards, so pgshard cannot move them",
                plan.group
            )))
        }
    };
    let as_plain = PlainTable {
        table: parent.clone(),
        column: entry.column.clone(),
        keys: entry.keys.clone(),
        identity: None,
    };
    plain::check_target(plan, &as_plain, a, b).await?;
    let mut table = PartTable {
        parent,
        part: Table {
            schema: String::new(),
            name: String::new(),
        },
        column: entry.column.clone(),
        shard_count,
        replaces: None,
        identity: None,
    };
    for (db, database) in [(&mut *a, plan.source), (&mut *b, plan.target)] {
        check_key(db, database, &table).await?;
    }
    let on_a = partitions(a, &table.parent).await?;
    let on_b = partitions(b, &table.parent).await?;
    let (part, replaces) = shard_partition(plan, &table, &on_a, &on_b)?;
    // (`check_target` found no row of the shard on the target's parent,
    // so its partition of the shard, if any, is empty.)
    let there = format!("SELECT to_regclass({})", literal(&part.sql()));
    if replaces.as_ref() != Some(&part)
        && b.value("look for the partition", &there).await?.is_some()
    {
        return Err(MoveError::Check(format!(
            "database {} has a table {} already: the move would make the partition of logical shard {} there; drop or rename it",
            plan.target,
            part.sql(),
            plan.shard
        )));
    }
    table.identity = plain::identity(a, &part, &entry.column, full).await?;
    table.part = part;
    table.replaces = replaces;
    Ok(table)
}

/// The source's partition of the moving shard, from both databases'
/// partitions (`partitions`): a plain table on the source; and the
/// target's, when it has one (a plain table too: the move replaces it).
fn shard_partition(
    plan: &Plan,
    table: &PartTable,
    on_a: &[(Table, String)],
    on_b: &[(Table, String)],
) -> Result<(Table, Option<Table>), MoveError> {
    let name = table.parent.sql();
    let bound = table.bound(plan.shard);
    let of_shard = |b: &str| {
        b.strip_prefix(bound.as_str())
            .is_some_and(|r| r.is_empty() || r.starts_with(" ("))
    };
    if let Some((part, b)) = on_b.iter().find(|(_, b)| of_shard(b) && *b != bound) {
        return Err(MoveError::Check(format!(
            "table {name} on database {} has partition {} for logical shard {} already, and not a plain table ({b}): drop it there",
            plan.target,
            part.sql(),
            plan.shard,
        )));
    }
    let replaces = on_b
        .iter()
        .find(|(_, b)| *b == bound)
        .map(|(t, _)| t.clone());
    if let Some((part, b)) = on_a.iter().find(|(_, b)| of_shard(b) && *b != bound) {
        return Err(MoveError::Check(format!(
            "partition {} of table {name} on database {} is not a plain table ({b}): pgshard moves a logical shard's partition only when it holds its rows itself (not partitioned further, not foreign)",
            part.sql(),
            plan.source
        )));
    }
    match on_a.iter().find(|(_, b)| *b == bound) {
        Some((part, _)) => Ok((part.clone(), replaces)),
        None => Err(MoveError::Check(format!(
            "table {name} on database {} has no partition {bound} (logical shard {} of shard_count {}): create it, or give the table the group's partitions",
            plan.source, plan.shard, table.shard_count
        ))),
    }
}

/// The parent on `db` is partitioned by hash on the key column alone.
async fn check_key(db: &mut Db, database: usize, table: &PartTable) -> Result<(), MoveError> {
    let sql = format!(
        "SELECT p.partstrat::text || ' ' || p.partnatts || ' ' || \
         coalesce((SELECT attname FROM pg_attribute WHERE attrelid = p.partrelid \
         AND attnum = p.partattrs[0]), '') FROM pg_partitioned_table p \
         WHERE p.partrelid = {}::regclass",
        literal(&table.parent.sql())
    );
    let key = db.value("read the partition key", &sql).await?;
    if key.as_deref() != Some(&format!("h 1 {}", table.column)) {
        return Err(MoveError::Check(format!(
            "table {} on database {database} is not partitioned by hash on its sharding key {} alone (PARTITION BY HASH ({})): pgshard moves partitions of that layout only",
            table.parent.sql(),
            table.column,
            ident(&table.column)
        )));
    }
    Ok(())
}

/// The partitions of `parent` on `db`, with their bounds (and their
/// `relkind` after the bound, in parentheses, when not a plain table).
async fn partitions(db: &mut Db, parent: &Table) -> Result<Vec<(Table, String)>, MoveError> {
    let sql = format!(
        "SELECT n.nspname, c.relname, pg_get_expr(c.relpartbound, c.oid) \
         || CASE c.relkind WHEN 'r' THEN '' ELSE ' (' || c.relkind::text || ')' END FROM pg_inherits i \
         JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE i.inhparent = {}::regclass",
        literal(&parent.sql())
    );
    Ok(db
        .rows("list the partitions", &sql)
        .await?
        .into_iter()
        .filter_map(|row| match row.as_slice() {
            [Some(schema), Some(name), Some(bound)] => Some((
                Table {
                    schema: schema.clone(),
                    name: name.clone(),
                },
                bound.clone(),
            )),
            _ => None,
        })
        .collect())
}

/// The target's standalone partitions, like their parents there (but for
/// identity: a partition made `PARTITION OF` has none in PG15), with the
/// helper CHECK, owned by the parents' owners.
pub async fn create(b: &mut Db, plan: &Plan, tables: &[PartTable]) -> Result<(), MoveError> {
    for table in tables {
        let parent = table.parent.sql();
        let owner = format!(
            "SELECT quote_ident(pg_get_userbyid(relowner)) FROM pg_class WHERE oid = {}::regclass",
            literal(&parent)
        );
        let owner = b.value("read the table's owner", &owner).await?;
        let mut sql = Vec::new();
        if let Some(empty) = &table.replaces {
            // In one transaction with the new table: refused if a row came.
            let e = empty.sql();
            sql.push(format!("ALTER TABLE {parent} DETACH PARTITION {e}"));
            sql.push(format!(
                "DO $pgshard$ BEGIN IF EXISTS (SELECT 1 FROM {e}) THEN \
                 RAISE EXCEPTION 'partition {} holds rows'; END IF; END $pgshard$",
                e.replace('\'', "''")
            ));
            sql.push(format!("DROP TABLE {e}"));
        }
        sql.push(format!(
            "CREATE TABLE {} (LIKE {parent} INCLUDING ALL EXCLUDING IDENTITY, CONSTRAINT {} CHECK ({}))",
            table.part.sql(),
            ident(CHECK),
            partition_check(table, plan.shard)
        ));
        if let Some(owner) = owner {
            sql.push(format!("ALTER TABLE {} OWNER TO {owner}", table.part.sql()));
        }
        plain::locked(b, "create the partition", &sql.join("; ")).await?;
    }
    Ok(())
}

/// The partition constraint of `shard` under the parent, as a CHECK.
fn partition_check(table: &PartTable, shard: usize) -> String {
    format!(
        "satisfies_hash_partition({}::regclass, {}, {shard}, {})",
        literal(&table.parent.sql()),
        table.shard_count,
        ident(&table.column)
    )
}

/// The fence triggers on the source's partitions (every row of them is
/// the shard's) and `REPLICA IDENTITY FULL` where the move needs it.
pub fn fence_triggers(plan: &Plan, tables: &[PartTable]) -> Vec<String> {
    let group = literal(&plan.group.to_string());
    let args = format!("{group}, '{}'", plan.shard);
    let mut sql = Vec::new();
    for table in tables {
        let t = table.part.sql();
        for (name, op) in plain::trigger_names(plan.shard)
            .iter()
            .zip(["INSERT", "UPDATE", "DELETE"])
        {
            sql.push(format!(
                "CREATE OR REPLACE TRIGGER {} BEFORE {op} ON {t} FOR EACH ROW \
                 EXECUTE FUNCTION pgshard.fence({args})",
                ident(name)
            ));
        }
        if table.identity.is_some() {
            sql.push(format!("ALTER TABLE {t} REPLICA IDENTITY FULL"));
        }
    }
    sql
}

/// In the target's switch transaction: its partitions attached (the
/// helper CHECK makes the attach skip the scan), the CHECK dropped.
pub fn attach(plan: &Plan, tables: &[PartTable]) -> Vec<String> {
    let mut sql = Vec::new();
    for table in tables {
        sql.push(format!(
            "ALTER TABLE {} ATTACH PARTITION {} FOR VALUES WITH (MODULUS {}, REMAINDER {})",
            table.parent.sql(),
            table.part.sql(),
            table.shard_count,
            plan.shard
        ));
        sql.push(format!(
            "ALTER TABLE {} DROP CONSTRAINT {}",
            table.part.sql(),
            ident(CHECK)
        ));
    }
    sql
}

/// A rollback's statements: on the source, the partitions' triggers and
/// replica identity; on the target, its standalone partitions.
pub fn undo(plan: &Plan, tables: &[PartTable]) -> (Vec<String>, Vec<String>) {
    let (mut source, mut target) = (Vec::new(), Vec::new());
    for table in tables {
        let t = table.part.sql();
        for name in plain::trigger_names(plan.shard) {
            source.push(format!("DROP TRIGGER IF EXISTS {} ON {t}", ident(&name)));
        }
        if let Some(identity) = &table.identity {
            source.push(format!("ALTER TABLE {t} REPLICA IDENTITY {identity}"));
        }
        // Never attached before the switch: a standalone table, ours while
        // it has the helper CHECK.
        target.push(format!(
            "DO $pgshard$ BEGIN IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass({}) \
             AND conname = {}) THEN DROP TABLE {t}; END IF; END $pgshard$",
            literal(&t),
            literal(CHECK)
        ));
        if let Some(empty) = &table.replaces {
            let (e, parent) = (empty.sql(), table.parent.sql());
            target.push(format!(
                "DO $pgshard$ BEGIN IF to_regclass({}) IS NULL THEN CREATE TABLE {e} PARTITION OF {parent} {}; \
                 EXECUTE format('ALTER TABLE %s OWNER TO %I', {}, (SELECT pg_get_userbyid(relowner) \
                 FROM pg_class WHERE oid = {}::regclass)); END IF; END $pgshard$",
                literal(&e),
                table.bound(plan.shard),
                literal(&e),
                literal(&parent)
            ));
        }
    }
    (source, target)
}

/// After the switch and the cleanup delay: the source's partitions
/// detached concurrently (each on its own: outside a transaction) and
/// dropped.
pub async fn clean_source(a: &mut Db, tables: &[PartTable]) -> Result<(), MoveError> {
    for table in tables {
        let t = table.part.sql();
        let attached = format!(
            "SELECT 1 FROM pg_inherits WHERE inhrelid = {}::regclass",
            literal(&t)
        );
        if a.value("look for the partition", &attached)
            .await?
            .is_some()
        {
            let detach = format!(
                "ALTER TABLE {} DETACH PARTITION {t} CONCURRENTLY",
                table.parent.sql()
            );
            a.run("detach the old partition", &detach).await?;
        }
        a.run("drop the old partition", &format!("DROP TABLE {t}"))
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use router::sharding::{GroupFunction, GroupId};

    use super::*;

    fn plan() -> Plan {
        Plan {
            id: "m1".to_owned(),
            cluster: "prod".to_owned(),
            group: GroupId {
                function: GroupFunction::Hash(Hasher::Postgres),
                shard_count: 4,
            },
            shard: 2,
            source: 0,
            target: 1,
            families: Vec::new(),
            tables: Vec::new(),
        }
    }

    fn table(identity: Option<&str>) -> PartTable {
        let t = |name: &str| Table {
            schema: "public".to_owned(),
            name: name.to_owned(),
        };
        PartTable {
            parent: t("orders"),
            part: t("orders_2"),
            column: "id".to_owned(),
            shard_count: 4,
            replaces: None,
            identity: identity.map(str::to_owned),
        }
    }

    #[test]
    fn statements() {
        let (source, target) = undo(&plan(), &[table(Some("DEFAULT"))]);
        let cases: Vec<(String, &str)> = vec![
            (table(None).bound(2), "FOR VALUES WITH (modulus 4, remainder 2)"),
            (
                partition_check(&table(None), 2),
                "satisfies_hash_partition('\"public\".\"orders\"'::regclass, 4, 2, \"id\")",
            ),
            (
                fence_triggers(&plan(), &[table(Some("DEFAULT"))]).join("; "),
                "CREATE OR REPLACE TRIGGER \"pgshard_fence_2_ins\" BEFORE INSERT ON \"public\".\"orders_2\" FOR EACH ROW EXECUTE FUNCTION pgshard.fence('postgres/4', '2'); \
                 CREATE OR REPLACE TRIGGER \"pgshard_fence_2_upd\" BEFORE UPDATE ON \"public\".\"orders_2\" FOR EACH ROW EXECUTE FUNCTION pgshard.fence('postgres/4', '2'); \
                 CREATE OR REPLACE TRIGGER \"pgshard_fence_2_del\" BEFORE DELETE ON \"public\".\"orders_2\" FOR EACH ROW EXECUTE FUNCTION pgshard.fence('postgres/4', '2'); \
                 ALTER TABLE \"public\".\"orders_2\" REPLICA IDENTITY FULL",
            ),
            (
                attach(&plan(), &[table(None)]).join("; "),
                "ALTER TABLE \"public\".\"orders\" ATTACH PARTITION \"public\".\"orders_2\" FOR VALUES WITH (MODULUS 4, REMAINDER 2); \
                 ALTER TABLE \"public\".\"orders_2\" DROP CONSTRAINT \"pgshard_move_check\"",
            ),
            (
                source.join("; "),
                "DROP TRIGGER IF EXISTS \"pgshard_fence_2_ins\" ON \"public\".\"orders_2\"; \
                 DROP TRIGGER IF EXISTS \"pgshard_fence_2_upd\" ON \"public\".\"orders_2\"; \
                 DROP TRIGGER IF EXISTS \"pgshard_fence_2_del\" ON \"public\".\"orders_2\"; \
                 ALTER TABLE \"public\".\"orders_2\" REPLICA IDENTITY DEFAULT",
            ),
            (
                target.join("; "),
                "DO $pgshard$ BEGIN IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass('\"public\".\"orders_2\"') \
                 AND conname = 'pgshard_move_check') THEN DROP TABLE \"public\".\"orders_2\"; END IF; END $pgshard$",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    type Parts = Vec<(Table, String)>;

    #[test]
    fn the_shards_partition() {
        let t = |name: &str| Table {
            schema: "public".to_owned(),
            name: name.to_owned(),
        };
        let bound = |s: usize, kind: &str| {
            (
                t(&format!("o_{s}")),
                format!("FOR VALUES WITH (modulus 4, remainder {s}){kind}"),
            )
        };
        let (a, b) = (
            vec![bound(0, ""), bound(2, "")],
            vec![bound(1, ""), bound(3, "")],
        );
        let find = |a: &[(Table, String)], b: &[(Table, String)]| {
            shard_partition(&plan(), &table(None), a, b).map_err(|e| e.to_string())
        };
        assert_eq!(find(&a, &b), Ok((t("o_2"), None)));
        let every = vec![bound(1, ""), bound(2, ""), bound(3, "")];
        assert_eq!(find(&a, &every), Ok((t("o_2"), Some(t("o_2")))));
        let cases: Vec<(Parts, Parts, &str)> = vec![
            (vec![bound(0, "")], b.clone(), "table \"public\".\"orders\" on database 0 has no partition FOR VALUES WITH (modulus 4, remainder 2) (logical shard 2 of shard_count 4)"),
            (a.clone(), vec![bound(2, " (p)")], "table \"public\".\"orders\" on database 1 has partition \"public\".\"o_2\" for logical shard 2 already"),
            (vec![bound(2, " (p)")], b.clone(), "partition \"public\".\"o_2\" of table \"public\".\"orders\" on database 0 is not a plain table (FOR VALUES WITH (modulus 4, remainder 2) (p))"),
        ];
        for (a, b, want) in cases {
            let got = find(&a, &b).unwrap_err();
            assert!(got.starts_with(want), "{got}");
        }
    }
}
