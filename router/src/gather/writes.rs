//! Data-modifying WITH queries across shards (rule 13 of
//! [`crate::gather`]): each INSERT, UPDATE or DELETE of the statement's
//! top-level WITH becomes a write gather (it runs on the shards its own
//! routing picks and its RETURNING rows fill a temp table on the
//! coordinator), and the statement's text gets that query's body replaced
//! by a read of its temp table (`SELECT * FROM pg_temp.pgshard_w<N>`).
//!
//! One Postgres runs every part of such a statement on the snapshot from
//! before it: no part sees the WITH queries' effects. Running them first
//! would let the rest see them, so a table a WITH query writes may be read
//! or written by no other part (checked here for the other WITH queries,
//! by the caller for the rest), and no two WITH queries may write one
//! table.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::leaves::table_ref;
use super::scope::Walk;
use super::{Gather, GatherOptions, GatherPlan, NotGathered};
use crate::route::tables::{classify, TableClass};
use crate::sharding::Sharding;
use crate::summary::TableRef;

/// A statement whose data-modifying WITH queries are write gathers.
#[derive(Debug)]
pub(super) struct Staged {
    /// The write gathers, in the WITH's order.
    pub gathers: Vec<Gather>,
    /// The statement with each WITH query that writes replaced by a read
    /// of its temp table (one without RETURNING left out).
    pub sql: String,
    /// The tables the WITH queries write.
    pub written: Vec<TableRef>,
    /// The temp tables, read in place on the coordinator.
    pub temps: Vec<String>,
    /// The names of the WITH queries without RETURNING: no part may read
    /// them (Postgres refuses that too).
    pub silent: Vec<String>,
}

/// A write gather's data-modifying WITH query (rule 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// An INSERT: its rows must go to one shard, the one they belong to.
    pub inserts: bool,
    /// It has RETURNING (without, its temp table has no columns and no
    /// rows).
    pub returning: bool,
}

/// Plan the rest of a statement whose data-modifying WITH queries are
/// `staged` (rule 13).
pub(super) fn plan(
    staged: Staged,
    sharding: &Sharding,
    options: &GatherOptions,
) -> Result<GatherPlan, NotGathered> {
    let tree = parser_ffi::parse_protobuf(&staged.sql).map_err(NotGathered::Deparse)?;
    let [raw] = tree.stmts.as_slice() else {
        return Err(NotGathered::Unreadable(
            "the statement without its WITH writes",
        ));
    };
    let Some(NodeEnum::SelectStmt(select)) = raw.stmt.as_deref().and_then(|s| s.node.as_ref())
    else {
        return Err(NotGathered::Unreadable(
            "the statement without its WITH writes",
        ));
    };
    let walked = Walk::statement(select, &staged.temps)?;
    for table in &walked.tables {
        let named = table_ref(table.range_var);
        if let Some(written) = staged.written.iter().find(|w| same_table(w, &named)) {
            return Err(NotGathered::Snapshot(written.name.clone()));
        }
        if named.schema.is_none() && staged.silent.contains(&named.name) {
            return Err(NotGathered::NoReturning(named.name));
        }
    }
    let sql = staged.sql.as_str();
    super::planned(
        sql,
        raw,
        &walked,
        sharding,
        options,
        (None, None),
        staged.gathers,
    )
}

/// One data-modifying WITH query, read from its node.
struct Dml<'a> {
    relation: &'a pb::RangeVar,
    returning: &'a [pb::Node],
    /// An UPDATE's FROM, a DELETE's USING.
    from: &'a [pb::Node],
    with: Option<&'a pb::WithClause>,
    inserts: bool,
}

impl<'a> Dml<'a> {
    /// The write `node` is, `None` for a SELECT (or anything else that
    /// writes nothing); MERGE is refused.
    fn of(node: &'a pb::Node) -> Result<Option<Dml<'a>>, NotGathered> {
        let returning = |r: &'a Option<pb::ReturningClause>| match r {
            Some(r) => r.exprs.as_slice(),
            None => &[],
        };
        let (relation, dml) = match node.node.as_ref() {
            Some(NodeEnum::InsertStmt(i)) => (
                &i.relation,
                (
                    returning(&i.returning_clause),
                    &[][..],
                    &i.with_clause,
                    true,
                ),
            ),
            Some(NodeEnum::UpdateStmt(u)) => (
                &u.relation,
                (
                    returning(&u.returning_clause),
                    u.from_clause.as_slice(),
                    &u.with_clause,
                    false,
                ),
            ),
            Some(NodeEnum::DeleteStmt(d)) => (
                &d.relation,
                (
                    returning(&d.returning_clause),
                    d.using_clause.as_slice(),
                    &d.with_clause,
                    false,
                ),
            ),
            Some(NodeEnum::MergeStmt(_)) => return Err(NotGathered::WriteMerge),
            _ => return Ok(None),
        };
        let relation = relation
            .as_ref()
            .ok_or(NotGathered::Unreadable("a WITH query's table"))?;
        let (returning, from, with, inserts) = dml;
        Ok(Some(Dml {
            relation,
            returning,
            from,
            with: with.as_ref(),
            inserts,
        }))
    }
}

/// The write gathers of `select`'s top-level WITH and the statement over
/// their temp tables; `None` when its WITH writes nothing.
pub(super) fn stage(
    select: &pb::SelectStmt,
    sharding: &Sharding,
    serial: u32,
) -> Result<Option<Staged>, NotGathered> {
    let Some(with) = &select.with_clause else {
        return Ok(None);
    };
    let ctes: Vec<&pb::CommonTableExpr> = with
        .ctes
        .iter()
        .filter_map(|node| match node.node.as_ref() {
            Some(NodeEnum::CommonTableExpr(cte)) => Some(&**cte),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = ctes.iter().map(|cte| cte.ctename.as_str()).collect();
    let mut staged = Staged {
        gathers: Vec::new(),
        sql: String::new(),
        written: Vec::new(),
        temps: Vec::new(),
        silent: Vec::new(),
    };
    let mut kept = Vec::new();
    let mut reads: Vec<Vec<TableRef>> = Vec::new();
    for cte in ctes {
        let Some(query) = cte.ctequery.as_deref() else {
            return Err(NotGathered::Unreadable("a WITH query"));
        };
        let Some(dml) = Dml::of(query)? else {
            kept.push(pb::Node {
                node: Some(NodeEnum::CommonTableExpr(Box::new(cte.clone()))),
            });
            continue;
        };
        if let Some(written) = staged
            .gathers
            .iter()
            .find(|g| same_table(&g.table, &table_ref(dml.relation)))
        {
            return Err(NotGathered::WrittenTwice(written.table.name.clone()));
        }
        let number = staged.gathers.len() + 1;
        let (gather, read) = write_gather((cte, query, &dml), &names, sharding, (serial, number))?;
        let (temp, table) = (gather.temp.clone(), gather.table.clone());
        staged.gathers.push(gather);
        staged.written.push(table);
        reads.push(read);
        match dml.returning.is_empty() {
            true => staged.silent.push(cte.ctename.clone()),
            false => {
                let mut cte = cte.clone();
                cte.ctequery = Some(Box::new(read_of(&temp)?));
                kept.push(pb::Node {
                    node: Some(NodeEnum::CommonTableExpr(Box::new(cte))),
                });
            }
        }
        staged.temps.push(temp);
    }
    if staged.gathers.is_empty() {
        return Ok(None);
    }
    crossed(&reads, &staged.written)?;
    let mut select = select.clone();
    select.with_clause = match kept.is_empty() {
        true => None,
        false => Some(pb::WithClause {
            ctes: kept,
            ..with.clone()
        }),
    };
    staged.sql = deparse(pb::Node {
        node: Some(NodeEnum::SelectStmt(Box::new(select))),
    })?;
    Ok(Some(staged))
}

/// The write gather of the WITH query `cte` (its `query`, read as `dml`),
/// number `number` of the plan `serial`, and the tables it reads.
fn write_gather(
    (cte, query, dml): (&pb::CommonTableExpr, &pb::Node, &Dml<'_>),
    names: &[&str],
    sharding: &Sharding,
    (serial, number): (u32, usize),
) -> Result<(Gather, Vec<TableRef>), NotGathered> {
    let table = table_ref(dml.relation);
    if !matches!(
        classify(&table, sharding),
        TableClass::Sharded | TableClass::Unknown
    ) {
        return Err(NotGathered::WriteNotSharded(table.name));
    }
    let shard_sql = deparse(query.clone())?;
    let read = tables_of(&shard_sql)?;
    if let Some(other) = read
        .iter()
        .find(|t| t.schema.is_none() && names.contains(&t.name.as_str()))
    {
        return Err(NotGathered::WriteReadsWith(
            cte.ctename.clone(),
            other.name.clone(),
        ));
    }
    let temp = match serial {
        0 => format!("pgshard_w{number}"),
        serial => format!("pgshard_{serial}_w{number}"),
    };
    let shape = deparse(shape(dml))?;
    let gather = Gather {
        create_sql: format!(
            "CREATE TEMP TABLE pg_temp.{temp} ON COMMIT DROP AS {shape} WITH NO DATA"
        ),
        temp,
        table,
        shard_sql,
        key_sql: None,
        write: Some(Write {
            inserts: dml.inserts,
            returning: !dml.returning.is_empty(),
        }),
    };
    Ok((gather, read))
}

/// Refuse a WITH query reading a table another one writes (`reads[i]`:
/// what query `i` reads, `written[i]`: what it writes): it would see its
/// effects (its own table it reads on its own snapshot, on its shard).
fn crossed(reads: &[Vec<TableRef>], written: &[TableRef]) -> Result<(), NotGathered> {
    for (i, read) in reads.iter().enumerate() {
        for (j, written) in written.iter().enumerate() {
            if i != j && read.iter().any(|t| same_table(t, written)) {
                return Err(NotGathered::Snapshot(written.name.clone()));
            }
        }
    }
    Ok(())
}

/// Whether `a` and `b` may name one table (a name without its schema may
/// mean any schema's).
pub(super) fn same_table(a: &TableRef, b: &TableRef) -> bool {
    a.name == b.name && (a.schema.is_none() || b.schema.is_none() || a.schema == b.schema)
}

/// The SELECT whose columns are a write's RETURNING list's, over its
/// table (and its FROM or USING): the temp table's shape.
fn shape(dml: &Dml<'_>) -> pb::Node {
    let mut from = vec![pb::Node {
        node: Some(NodeEnum::RangeVar(dml.relation.clone())),
    }];
    from.extend(dml.from.iter().cloned());
    let select = pb::SelectStmt {
        target_list: dml.returning.to_vec(),
        from_clause: from,
        with_clause: dml.with.cloned(),
        limit_option: pb::LimitOption::Default.into(),
        op: pb::SetOperation::SetopNone.into(),
        ..Default::default()
    };
    pb::Node {
        node: Some(NodeEnum::SelectStmt(Box::new(select))),
    }
}

/// `SELECT * FROM pg_temp.<temp>`, as a node.
fn read_of(temp: &str) -> Result<pb::Node, NotGathered> {
    let sql = format!("SELECT * FROM pg_temp.{temp}");
    let tree = parser_ffi::parse_protobuf(&sql).map_err(NotGathered::Deparse)?;
    tree.stmts
        .into_iter()
        .next()
        .and_then(|raw| raw.stmt)
        .map(|stmt| *stmt)
        .ok_or(NotGathered::Unreadable("a temp table's read"))
}

/// The text of the statement `node`.
fn deparse(node: pb::Node) -> Result<String, NotGathered> {
    let tree = pb::ParseResult {
        version: 0,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(node)),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    parser_ffi::deparse_protobuf(&tree).map_err(NotGathered::Deparse)
}

/// Every table the statement `sql` names (CTE names in scope are not
/// tables).
fn tables_of(sql: &str) -> Result<Vec<TableRef>, NotGathered> {
    let tree = parser_ffi::parse_protobuf(sql).map_err(NotGathered::Parse)?;
    let summary = crate::extract::summarize_protobuf(&tree)
        .map_err(|_| NotGathered::Unreadable("a WITH query nested this deeply"))?;
    Ok(summary
        .statements
        .into_iter()
        .flat_map(|statement| statement.tables)
        .collect())
}

/// Refuse a statement whose own target (an INSERT's, whose SELECT has the
/// WITH) is written by one of its data-modifying WITH queries too.
pub fn target_written(statement: &crate::summary::StatementSummary) -> Result<(), NotGathered> {
    let Some(target) = &statement.target else {
        return Ok(());
    };
    match statement
        .cte_writes
        .iter()
        .find(|write| same_table(&write.table, target))
    {
        Some(write) => Err(NotGathered::Snapshot(write.table.name.clone())),
        None => Ok(()),
    }
}
