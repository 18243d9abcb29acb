//! The gather planner (issue 34): how to finish on one Postgres, the
//! coordinator, a SELECT the streaming merge cannot answer. Pure: it plans
//! from the statement's text, the sharding config and its catalog; the
//! proxy runs the plan (`proxy/src/session/gather.rs`).
//!
//! A plan gathers the rows of each table the statement reads that is not
//! whole on the coordinator into a temp table there, then runs the
//! client's statement, unchanged but for those tables' names, over them:
//! windows, set operations, sublinks, outer joins, collations and numeric
//! scales are then Postgres's own.
//!
//! Rules:
//! 1. Only a SELECT (one statement, no `INTO`), with FOR UPDATE/SHARE only
//!    at its own level (rule 14) and with data-modifying WITH only at its top
//!    (rule 13, not under EXPLAIN or DECLARE); anything else is refused
//!    ([`NotGathered`], 0A000 for the client).
//! 2. Every level is walked (set operation arms, FROM subqueries and
//!    LATERAL ones, joins, CTE bodies, sublinks anywhere): each RangeVar
//!    not naming a CTE in scope (scoped as Postgres scopes them) is a
//!    table. Sharded, unknown and family tables are gathered; omnisharded
//!    and catalog tables are read in place. A name the catalog knows as a
//!    view, materialized view or sequence, or an unknown table the catalog
//!    does not list, is refused (its rows per shard are not its rows). An
//!    expression node the walk does not know is refused.
//! 3. Each gathered table brings the columns a reference anywhere may
//!    mean: `q.col` with `q` its alias (else its name), an unqualified
//!    `col` the catalog shows it has, its joins' USING columns; all of them
//!    (`*`) when a `*` is written at its level or `q.*` names it, it is a
//!    side of a NATURAL join, its alias renames columns, a column named
//!    through it is not one the catalog lists, or the catalog does not know
//!    it. At least one column. Keeping more columns is exact.
//! 4. Refused: a whole-row reference to a gathered table (`SELECT o FROM
//!    orders o`: the temp table's row type is another), its system columns
//!    (`ctid`, `tableoid`...), a column written with its schema
//!    (`public.orders.id`), TABLESAMPLE on it, `nextval`/`setval` unless
//!    the coordinator is database 0 (where sequences are drawn), more than
//!    [`MAX_GATHERS`] gathers.
//! 5. Conditions the shards apply (`gather/pushdown.rs`): AND-ed parts of
//!    the table's level's WHERE (or INNER join ON reached through preserved
//!    sides) for a table reached through preserved sides only, or of the ON
//!    of the join it is a side of when that join is INNER or it is the
//!    nullable side of a LEFT or RIGHT join, whose column references are
//!    surely its own and whose nodes are on a short list that answers alike
//!    everywhere. They stay in the finish too.
//! 6. Each gather: `SELECT <columns> FROM <table as written> [WHERE
//!    <pushed>]` on the shards (the router routes it: a pushed key picks
//!    one shard), into `CREATE TEMP TABLE pg_temp.pgshard_g<N> ON COMMIT
//!    DROP AS <the same SELECT without WHERE> WITH NO DATA` on the
//!    coordinator (the column types, typmods included, are the table's).
//!    Gathers with the same shard SELECT are one.
//! 7. The finish: the client's text with each gathered RangeVar's name
//!    replaced by `pg_temp.pgshard_g<N>`, followed by ` AS "<name>"` when
//!    it had no alias; nothing else changes (parameters included: the
//!    finish takes the client's).
//! 8. A gathered table whose primary key's columns are all gathered and
//!    all listed by a GROUP BY gets that key on its temp table once its
//!    rows are in (`Gather::key_sql`): Postgres lets `GROUP BY u.id` select
//!    `u.name` only through it. Rows of one key on two shards then fail the
//!    statement (one Postgres would have refused them), never answer it.
//! 9. `EXPLAIN [options] <SELECT>` plans the SELECT; the finish is the
//!    EXPLAIN over the temp tables ([`Explain`]): without ANALYZE they stay
//!    empty (nothing is gathered), with it the gathers run first.
//! 10. With [`GatherOptions::gather_all`] (a coordinator session of its own
//!     inside the client's transaction block) omnisharded tables are
//!     gathered too, from the block's servers: the coordinator's own copy is
//!     not the one the block sees (its writes, its snapshot).
//! 11. `DECLARE name ... CURSOR FOR <SELECT>` plans the SELECT; the finish
//!     is the DECLARE over the temp tables ([`GatherPlan::cursor`]), which
//!     then outlive the statement (the cursor reads them as it is fetched).
//! 12. [`GatherOptions::serial`] > 0 names the temp tables
//!     `pgshard_<serial>_g<N>`: temp tables a portal or cursor keeps while
//!     later statements of its transaction gather too.
//! 13. Data-modifying WITH (`gather/writes.rs`): each INSERT, UPDATE or
//!     DELETE of the top-level WITH is a write gather ([`Gather::write`]):
//!     its own text runs on the shards its own routing picks (inside one
//!     transaction spanning them: the caller's), its RETURNING rows fill
//!     `pg_temp.pgshard_w<N>` (shaped as `SELECT <RETURNING list> FROM
//!     <its table> [, its FROM or USING] WITH NO DATA`), and the rest of the
//!     statement is planned as a SELECT whose WITH query reads that table
//!     (`SELECT * FROM pg_temp.pgshard_w<N>`; one without RETURNING is left
//!     out, and naming it is refused as Postgres refuses it). One Postgres
//!     gives every part the snapshot from before the statement, so refused:
//!     a table a WITH query writes read or written by any other part (the
//!     rest, another WITH query; the caller checks an INSERT's target), two
//!     WITH queries writing one table, a WITH query that names another WITH
//!     query, MERGE, a write to a table that is not sharded (or unknown).
//!     The write gathers run first, in the WITH's order.
//! 14. FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE of the statement's
//!     own level (`gather/locking.rs`): each gathered table of that level a
//!     clause covers (all, or those `OF` names) gets the strongest such
//!     clause on its gather (`... FOR UPDATE [NOWAIT | SKIP LOCKED]`): each
//!     shard locks the rows it gathers, more than one Postgres locks (rows
//!     the finish then filters out too); the finish keeps its clauses.
//!     Refused: a clause in a subquery, a WITH query or a set operation, over
//!     a FROM subquery, in a cursor, NOWAIT or SKIP LOCKED with LIMIT or
//!     OFFSET.
//!
//! The caller routes the statement first: what rules 1-3 and 15 of
//! [`crate::route`] decide (overrides, one database, functions, DO blocks,
//! triggers and sequences that reach sharded tables) never comes here, so
//! a function the statement calls runs on the coordinator over its own
//! database only when routing found it reaches no sharded table.

mod exprs;
mod leaves;
mod locking;
mod pushdown;
mod rewrite;
mod scope;
mod writes;

pub use writes::{target_written, Write};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tpch_tests;

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};
use parser_ffi::ParseError;

use crate::sharding::Sharding;
use crate::summary::TableRef;
use rewrite::Swap;
use scope::Walk;

/// Most gathers one statement may need.
pub const MAX_GATHERS: usize = 64;

/// What the plan depends on besides the statement and the sharding config.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GatherOptions {
    /// The database that finishes the statement.
    pub coordinator: usize,
    /// Gather omnisharded tables too (rule 2): the coordinator is a session
    /// of its own inside the client's transaction block.
    pub gather_all: bool,
    /// Names the temp tables apart from other plans' in one transaction
    /// (rule 12); 0: `pgshard_g<N>`.
    pub serial: u32,
}

/// How to answer a statement on the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatherPlan {
    pub gathers: Vec<Gather>,
    /// The client's statement over the temp tables.
    pub finish_sql: String,
    /// The statement has parameters (the finish takes the client's).
    pub finish_params: bool,
    /// A description, one line per gather and one for the finish.
    pub lines: Vec<String>,
    /// The statement is an EXPLAIN of the SELECT planned (rule 9):
    /// `finish_sql` is that EXPLAIN over the temp tables.
    pub explain: Option<Explain>,
    /// The statement is a DECLARE of a cursor over the SELECT planned
    /// (rule 11): `finish_sql` is that DECLARE over the temp tables.
    pub cursor: Option<Cursor>,
}

/// The cursor a gathered DECLARE makes (rule 11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub name: String,
    /// `WITH HOLD`: it outlives its transaction.
    pub hold: bool,
}

/// `CURSOR_OPT_HOLD` of Postgres's `parsenodes.h`.
const CURSOR_OPT_HOLD: i32 = 0x0020;

/// An EXPLAIN of a gathered SELECT (rule 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explain {
    /// `ANALYZE`: the gathers run, the finish's plan is measured.
    pub analyze: bool,
    /// The text format: pgshard's lines go before the coordinator's plan.
    pub text: bool,
    /// The SELECT the coordinator finishes (over the temp tables), without
    /// the EXPLAIN.
    pub query: String,
}

/// One table's rows brought to the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gather {
    /// The temp table's name (`pgshard_g1`), in `pg_temp`.
    pub temp: String,
    pub table: TableRef,
    /// Run on the coordinator first.
    pub create_sql: String,
    /// Run on the shards the router routes it to; its rows fill the temp
    /// table.
    pub shard_sql: String,
    /// Run on the coordinator once the rows are in: the table's primary
    /// key, when a GROUP BY relies on it (rule 8).
    pub key_sql: Option<String>,
    /// `shard_sql` is a data-modifying WITH query (rule 13), which writes.
    pub write: Option<Write>,
}

/// Why a statement is not planned for the coordinator.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NotGathered {
    #[error("{0}")]
    Parse(ParseError),
    #[error("only a SELECT can be finished on the coordinator")]
    NotSelect,
    #[error("FOR UPDATE/SHARE {0} is not done across shards yet")]
    Locking(&'static str),
    #[error("a data-modifying WITH cannot be finished on the coordinator")]
    DataModifyingWith,
    #[error("{0} is not a table the catalog lists (a view or sequence, or not read yet): its rows on each shard are not its rows")]
    NotATable(String),
    #[error(
        "a whole-row reference to {0} cannot be finished on the coordinator: name its columns"
    )]
    WholeRow(String),
    #[error("the system column {1} of {0} is not gathered from the shards")]
    SystemColumn(String, String),
    #[error("a column of {0} written with its schema cannot be finished on the coordinator: write it without the schema")]
    SchemaQualified(String),
    #[error("TABLESAMPLE on {0} cannot be finished on the coordinator")]
    TableSample(String),
    #[error("{0}() draws from a sequence: only a coordinator on database 0 can run it")]
    Sequence(String),
    #[error("the statement reads {0} sharded tables: at most {MAX_GATHERS} can be gathered")]
    TooManyGathers(usize),
    #[error("pgshard cannot read {0} here yet")]
    Unreadable(&'static str),
    #[error("MERGE in a WITH query across shards is not done yet")]
    WriteMerge,
    #[error("a data-modifying WITH query on {0}, which is not a sharded table, cannot run across shards yet")]
    WriteNotSharded(String),
    #[error("the data-modifying WITH query {0} reads the WITH query {1}: each runs on its own across shards, so this is not done yet")]
    WriteReadsWith(String, String),
    #[error("{0} is written by a data-modifying WITH query and read or written by another part of the statement: one Postgres gives every part the snapshot from before the statement, while across shards the WITH query runs first and the rest would see its effects")]
    Snapshot(String),
    #[error("{0} is written by two data-modifying WITH queries, which one Postgres runs on one snapshot and pgshard one after the other")]
    WrittenTwice(String),
    #[error("WITH query \"{0}\" does not have a RETURNING clause")]
    NoReturning(String),
    #[error("the statement could not be rewritten: {0}")]
    Deparse(ParseError),
}

/// Plan `sql` (one SELECT) for the coordinator.
pub fn plan(
    sql: &str,
    sharding: &Sharding,
    options: &GatherOptions,
) -> Result<GatherPlan, NotGathered> {
    let tree = parser_ffi::parse_protobuf(sql).map_err(NotGathered::Parse)?;
    let [raw] = tree.stmts.as_slice() else {
        return Err(NotGathered::NotSelect);
    };
    let (select, explain, cursor) = match raw.stmt.as_deref().and_then(|s| s.node.as_ref()) {
        Some(NodeEnum::SelectStmt(select)) => (select.as_ref(), None, None),
        Some(NodeEnum::ExplainStmt(explain)) => match explained_select(explain) {
            Some(select) => (select, Some(explain_options(explain)), None),
            None => return Err(NotGathered::NotSelect),
        },
        Some(NodeEnum::DeclareCursorStmt(declare)) => {
            match declare.query.as_deref().and_then(|q| q.node.as_ref()) {
                Some(NodeEnum::SelectStmt(select)) => {
                    let cursor = Cursor {
                        name: declare.portalname.clone(),
                        hold: declare.options & CURSOR_OPT_HOLD != 0,
                    };
                    (select.as_ref(), None, Some(cursor))
                }
                _ => return Err(NotGathered::NotSelect),
            }
        }
        _ => return Err(NotGathered::NotSelect),
    };
    if explain.is_none() && cursor.is_none() {
        if let Some(staged) = writes::stage(select, sharding, options.serial)? {
            return writes::plan(staged, sharding, options);
        }
    }
    let walked = Walk::statement(select, &[])?;
    planned(
        sql,
        raw,
        &walked,
        sharding,
        options,
        (explain, cursor),
        Vec::new(),
    )
}

/// The plan of the walked SELECT `raw` of `sql`, the gathers after
/// `writes` (rule 13).
fn planned(
    sql: &str,
    raw: &pb::RawStmt,
    walked: &scope::Walked<'_>,
    sharding: &Sharding,
    options: &GatherOptions,
    (explain, cursor): (Option<(bool, bool)>, Option<Cursor>),
    writes: Vec<Gather>,
) -> Result<GatherPlan, NotGathered> {
    if options.coordinator != 0 {
        let drawn = ["nextval", "setval"];
        if let Some(call) = walked.calls.iter().find(|c| drawn.contains(c)) {
            return Err(NotGathered::Sequence((*call).to_owned()));
        }
    }
    locking::check(walked, cursor.is_some())?;
    let leaves = leaves::leaves(walked, sharding, options.gather_all)?;
    let (gathers, swaps) = gathers(walked, &leaves, sharding, options.serial)?;
    let gathers: Vec<Gather> = writes.into_iter().chain(gathers).collect();
    if gathers.len() > MAX_GATHERS {
        return Err(NotGathered::TooManyGathers(gathers.len()));
    }
    let (text, swaps) = statement_text(sql, raw, swaps)?;
    let finish_sql = rewrite::finish(text, swaps)?;
    let mut lines: Vec<String> = gathers
        .iter()
        .map(|g| match g.write {
            Some(_) => format!("Write {}: {}", g.temp, g.shard_sql),
            None => format!("Gather {}: {}", g.temp, g.shard_sql),
        })
        .collect();
    lines.push(format!("Finish on database {}", options.coordinator));
    let explain = match explain {
        Some((analyze, text)) => Some(Explain {
            analyze,
            text,
            query: explained_query(&finish_sql)?,
        }),
        None => None,
    };
    Ok(GatherPlan {
        gathers,
        finish_sql,
        finish_params: walked.params,
        lines,
        explain,
        cursor,
    })
}

/// The SELECT an EXPLAIN explains (`None`: it explains something else).
fn explained_select(explain: &pb::ExplainStmt) -> Option<&pb::SelectStmt> {
    match explain.query.as_deref().and_then(|q| q.node.as_ref()) {
        Some(NodeEnum::SelectStmt(select)) => Some(select),
        _ => None,
    }
}

/// An EXPLAIN's `ANALYZE` and whether its format is text.
fn explain_options(explain: &pb::ExplainStmt) -> (bool, bool) {
    let mut analyze = false;
    let mut text = true;
    for option in &explain.options {
        let Some(NodeEnum::DefElem(d)) = &option.node else {
            continue;
        };
        let arg = d.arg.as_deref().and_then(|a| a.node.as_ref());
        match d.defname.as_str() {
            "analyze" => analyze = option_on(arg),
            "format" => {
                text =
                    matches!(arg, Some(NodeEnum::String(s)) if s.sval.eq_ignore_ascii_case("text"))
            }
            _ => {}
        }
    }
    (analyze, text)
}

/// A boolean EXPLAIN option's value as Postgres reads it (no value: on).
fn option_on(arg: Option<&NodeEnum>) -> bool {
    match arg {
        None => true,
        Some(NodeEnum::Boolean(b)) => b.boolval,
        Some(NodeEnum::Integer(i)) => i.ival != 0,
        Some(NodeEnum::String(s)) => {
            let value = s.sval.to_ascii_lowercase();
            matches!(value.as_str(), "true" | "on" | "yes" | "1" | "t" | "y")
        }
        Some(_) => true,
    }
}

/// The SELECT of a rewritten EXPLAIN, deparsed on its own.
fn explained_query(finish_sql: &str) -> Result<String, NotGathered> {
    let tree = parser_ffi::parse_protobuf(finish_sql).map_err(NotGathered::Deparse)?;
    let query = tree
        .stmts
        .first()
        .and_then(|raw| match raw.stmt.as_deref()?.node.as_ref()? {
            NodeEnum::ExplainStmt(explain) => explain.query.clone(),
            _ => None,
        })
        .ok_or(NotGathered::Unreadable("the rewritten EXPLAIN"))?;
    let tree = pb::ParseResult {
        version: tree.version,
        stmts: vec![pb::RawStmt {
            stmt: Some(query),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    parser_ffi::deparse_protobuf(&tree).map_err(NotGathered::Deparse)
}

/// The gathers of `leaves` (identical ones once) and the swaps that put
/// their temp tables in the finish.
fn gathers(
    walked: &scope::Walked<'_>,
    leaves: &[leaves::Leaf],
    sharding: &Sharding,
    serial: u32,
) -> Result<(Vec<Gather>, Vec<Swap>), NotGathered> {
    let catalog = sharding.catalog.as_deref();
    let mut gathers: Vec<Gather> = Vec::new();
    let mut swaps = Vec::new();
    for leaf in leaves {
        let table = &walked.tables[leaf.table];
        let columns = leaf.columns.as_deref();
        let pushed = pushdown::pushable(table, walked, catalog);
        let lock = locking::lock_of(walked, table);
        let shard_sql = rewrite::shard_select(table.range_var, columns, &pushed, lock)?;
        let temp = match gathers.iter().find(|g| g.shard_sql == shard_sql) {
            Some(same) => same.temp.clone(),
            None => {
                let temp = match serial {
                    0 => format!("pgshard_g{}", gathers.len() + 1),
                    serial => format!("pgshard_{serial}_g{}", gathers.len() + 1),
                };
                let shape = rewrite::shard_select(table.range_var, columns, &[], None)?;
                gathers.push(Gather {
                    create_sql: format!(
                        "CREATE TEMP TABLE pg_temp.{temp} ON COMMIT DROP AS {shape} WITH NO DATA"
                    ),
                    key_sql: leaf.primary_key.as_ref().map(|key| {
                        let key: Vec<String> = key.iter().map(|k| rewrite::quoted(k)).collect();
                        format!(
                            "ALTER TABLE pg_temp.{temp} ADD PRIMARY KEY ({})",
                            key.join(", ")
                        )
                    }),
                    temp: temp.clone(),
                    table: leaves::table_ref(table.range_var),
                    shard_sql,
                    write: None,
                });
                temp
            }
        };
        let range_var = table.range_var;
        swaps.push(Swap {
            location: usize::try_from(range_var.location)
                .map_err(|_| NotGathered::Unreadable("a table name's place in the text"))?,
            temp,
            alias: range_var.alias.is_none().then(|| range_var.relname.clone()),
        });
    }
    Ok((gathers, swaps))
}

/// The statement's own text in `sql` (without what follows it), and the
/// swaps' locations in it.
fn statement_text<'s>(
    sql: &'s str,
    raw: &pb::RawStmt,
    swaps: Vec<Swap>,
) -> Result<(&'s str, Vec<Swap>), NotGathered> {
    let start = usize::try_from(raw.stmt_location).unwrap_or(0);
    let text = match usize::try_from(raw.stmt_len) {
        Ok(len) if len > 0 => sql.get(start..start + len),
        _ => sql.get(start..),
    }
    .unwrap_or(sql)
    .trim_end();
    let swaps = swaps
        .into_iter()
        .map(|swap| match swap.location.checked_sub(start) {
            Some(location) => Ok(Swap { location, ..swap }),
            None => Err(NotGathered::Unreadable("a table name's place in the text")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((text, swaps))
}
