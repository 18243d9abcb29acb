//! The statement summary: everything routing needs from one parsed statement,
//! independent of how the tree is represented. Extractors (`extract/`) build
//! it once per statement text; [`crate::route`] reads it for every execution.
//!
//! Values in key predicates are kept as written (literal text or parameter
//! number): typing and hashing them is the router's job, because the column's
//! configured data type decides how `'42'` or a 4-byte binary parameter reads.
//!
//! What a statement does to session state is `summary/session.rs`'s; the
//! join facts (rule 13) `summary/joins.rs`'s, the sublink facts (rule 12)
//! `summary/sublinks.rs`'s.

mod joins;
mod session;
mod sublinks;

pub use joins::{
    Derived, FromItem, JoinEquality, JoinLevel, JoinUsing, Joins, OuterJoin, OuterKind,
};
pub use session::{
    Argument, CursorEffect, CursorOptions, FetchDirection, SessionEffect, FETCH_ALL,
};
pub use sublinks::{Sublink, Sublinks};

/// One statement string: one summary per statement, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    pub statements: Vec<StatementSummary>,
}

/// What kind of statement, as far as routing cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    Merge,
    /// `COPY table FROM ...` (`to: false`) or `COPY table/query TO ...`.
    Copy {
        to: bool,
    },
    /// `BEGIN` / `START TRANSACTION`.
    Begin,
    /// `COMMIT`, `END`, `COMMIT AND CHAIN` ...
    Commit,
    /// `ROLLBACK`, `ABORT`.
    Rollback,
    /// SAVEPOINT, RELEASE, ROLLBACK TO, PREPARE TRANSACTION and the like:
    /// transaction control that stays on the transaction's shard.
    TransactionOther,
    /// `SET pgdog.shard = N` / `TO N`; `None` for `RESET pgdog.shard`.
    SetShard(Option<String>),
    /// `SET pgdog.sharding_key = v`; `None` for `RESET pgdog.sharding_key`.
    SetShardingKey(Option<String>),
    /// Any other SET / RESET / SHOW / DISCARD: session state, no table.
    Session,
    /// CREATE / ALTER / DROP / TRUNCATE / COMMENT / GRANT ... (schema changes).
    Ddl,
    /// `EXPLAIN [ANALYZE] stmt`: routed like the statement it explains
    /// (the summary's tables and conditions are that statement's).
    Explain,
    /// `DO [LANGUAGE l] 'code'`: an anonymous code block, whose body pgshard
    /// reads for the tables it reaches ([`crate::catalog`]).
    Do(Box<InlineCode>),
    /// Anything else (LISTEN, NOTIFY, VACUUM, PREPARE, EXECUTE, CALL, ...).
    Other,
}

/// The code of a DO block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineCode {
    /// `LANGUAGE`, lower-cased (`plpgsql` when not given, as Postgres).
    pub language: String,
    pub body: String,
}

/// One statement of the string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementSummary {
    pub kind: StatementKind,
    /// Changes data: INSERT/UPDATE/DELETE/MERGE/COPY FROM, data-modifying
    /// CTEs, `SELECT ... INTO`, DDL. Decides where omnisharded tables go.
    pub write: bool,
    /// `FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE` anywhere.
    pub locking: bool,
    /// Every table the statement names, in order of first appearance, once
    /// per (schema, name, alias). CTE names that shadow a table are not tables.
    pub tables: Vec<TableRef>,
    /// Key conditions of the query levels that restrict the statement's
    /// rows (the statement's own level, FROM subqueries and CTEs reached
    /// through preserved join sides, an INSERT's VALUES rows or SELECT; a set
    /// operation's arms combined into one; never sublinks, whose own are in
    /// [`Sublink::conditions`]: see [`crate::extract`]): all must hold, so
    /// the router intersects the shard sets they give.
    pub conditions: Vec<Condition>,
    /// For INSERT: the target's VALUES rows carry no usable key because the
    /// column list is absent (`INSERT INTO t VALUES (...)`); the router refuses
    /// such inserts into sharded tables rather than guess.
    pub insert_without_columns: bool,
    /// The table an INSERT / UPDATE / DELETE / MERGE / COPY FROM writes (the
    /// top-level statement's, or the explained one's; never a CTE's).
    pub target: Option<TableRef>,
    /// Columns a top-level UPDATE (or a MERGE's UPDATE actions) assigns,
    /// sorted and deduplicated; not an upsert's (ON CONFLICT DO UPDATE).
    pub set_columns: Vec<String>,
    /// What the statement does to session state a pooler tracks (settings,
    /// DEALLOCATE, DISCARD ALL); `None` for anything else.
    pub session: Option<SessionEffect>,
    /// The subqueries inside its expressions; `None` when it has none (the
    /// common case costs one pointer).
    pub sublinks: Option<Box<Sublinks>>,
    /// The query levels that join two or more FROM items; `None` when none
    /// does (the common case costs one pointer).
    pub joins: Option<Box<Joins>>,
    /// Every function called by name anywhere in the statement (sorted,
    /// deduplicated): what a name may hide ([`crate::catalog`]).
    pub calls: Vec<Call>,
    /// What a schema change does to a table whose rows' placement depends
    /// on its name or its key column; `None` for anything else.
    pub schema_change: Option<Box<SchemaChange>>,
    /// The writes of its data-modifying WITH queries (Postgres allows them
    /// in the top-level WITH only), sorted.
    pub cte_writes: Vec<CteWrite>,
}

/// A call of a function or procedure by name (`f(x)`, `s.f()`, `count(*)`,
/// `CALL p(1)`), wherever it sits in the statement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Call {
    /// The schema as written (lower-cased unless quoted).
    pub schema: Option<String>,
    pub name: String,
    /// Its positional arguments: a constant or parameter (through casts)
    /// as a [`Value`], `None` for any other expression. A templated cache
    /// entry reads literal values as parameters, as for conditions.
    pub args: Vec<Option<Value>>,
}

/// What one data-modifying WITH query (INSERT, UPDATE, DELETE or MERGE)
/// writes: it runs whatever the rest of the statement does, so the
/// statement must run where its rows are (see [`crate::route`], rule 11).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CteWrite {
    /// An INSERT or a MERGE: it may add rows, which must land on their
    /// shard only.
    pub inserts: bool,
    /// The table it writes, as in [`StatementSummary::target`].
    pub table: TableRef,
    /// The columns it assigns, as in [`StatementSummary::set_columns`].
    pub set_columns: Vec<String>,
    /// The key conditions of its own query (as for
    /// [`StatementSummary::conditions`], which holds them too).
    pub conditions: Vec<Condition>,
}

/// A schema change that fills a new table from a query, or renames or
/// re-keys a table: where a table's rows live follows from its name (the
/// config's entries name tables) and its key column (see [`crate::route`],
/// rule 14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChange {
    /// `CREATE TABLE ... AS`, `SELECT ... INTO`, `CREATE MATERIALIZED VIEW
    /// ... AS` (and `EXPLAIN ANALYZE` of them, which runs them): `table` is
    /// created from the statement's query, whose tables and conditions are
    /// the summary's (`table` is among its tables too). `with_data`: not
    /// `WITH NO DATA`.
    CreateAs {
        table: TableRef,
        matview: bool,
        with_data: bool,
    },
    /// `REFRESH MATERIALIZED VIEW table` (not `WITH NO DATA`).
    Refresh { table: TableRef },
    /// `ALTER TABLE table RENAME TO name` (`to` keeps the schema as
    /// written) or `SET SCHEMA s` (`to` is `s.name`); also of materialized
    /// views and foreign tables.
    RenameTable { table: TableRef, to: TableRef },
    /// `ALTER TABLE table` renaming (`RENAME COLUMN a TO b`: `(a, b)`),
    /// dropping or adding columns (sorted).
    Columns {
        table: TableRef,
        renamed: Vec<(String, String)>,
        dropped: Vec<String>,
        added: Vec<String>,
    },
}

/// A table as the statement names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableRef {
    /// Schema qualifier as written (lower-cased unless quoted, as Postgres does).
    pub schema: Option<String>,
    pub name: String,
    /// `FROM orders o`: `Some("o")`.
    pub alias: Option<String>,
}

/// A condition on columns that may be sharding keys. Leaves that are not
/// key-like (`a > 1`, function calls, column = column) are dropped by the
/// extractor: inside `And` they just do not restrict; an `Or` with such a
/// branch restricts nothing and is dropped whole.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Condition {
    /// `column = value` (either side), `column IN (v1, v2)` gives an `Or`.
    Eq {
        column: ColumnRef,
        value: Value,
    },
    /// `column = ANY(value)`: `value` is an array literal or parameter.
    Any {
        column: ColumnRef,
        value: Value,
    },
    And(Vec<Condition>),
    Or(Vec<Condition>),
}

/// A column reference: `tenant_id`, `o.tenant_id`, `public.orders.tenant_id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ColumnRef {
    /// The qualifier as written: a table name or an alias (`None` if unqualified).
    pub table: Option<String>,
    pub column: String,
}

/// A value compared with a key column.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Value {
    pub source: ValueSource,
    /// Type of an explicit cast (`$3::int`, `'7'::bigint`, `CAST(x AS uuid)`),
    /// the type's last name part lower-cased (`int4`, `int8`, `text`, `uuid`,
    /// `varchar`...), as the parser spells it (`int` becomes `int4`).
    pub cast: Option<String>,
}

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValueSource {
    /// An integer literal that fits an int4 (`42`, `-7`); `location` as below
    /// (for `-7`, the offset of the minus sign, as the parser records it).
    Integer { value: i64, location: i32 },
    /// Any other literal, as text: strings (`'abc'`), numbers too large for
    /// int4 (`9223372036854775807`), floats. `location` is the byte offset of
    /// the literal in the statement text (the parser's `A_Const.location`).
    Text { text: String, location: i32 },
    /// `$n` (1-based, as in SQL).
    Param(u16),
    /// `NULL`: matches no row; routes nowhere in particular.
    Null,
}

impl Summary {
    /// Put every statement in canonical order (see
    /// [`StatementSummary::canonicalize`]).
    pub fn canonicalize(&mut self) {
        for stmt in &mut self.statements {
            stmt.canonicalize();
        }
    }
}

impl StatementSummary {
    /// Sort and deduplicate `tables`, `set_columns` and `conditions` (all
    /// conditions must hold, so a repeated one, as a CTE referenced twice
    /// gives, says nothing more), and sort the children of every `And`/`Or`.
    /// Any total order will do, it only has to be the same for every
    /// extractor: the derived one, sorted in place without allocating.
    pub fn canonicalize(&mut self) {
        sort_dedup(&mut self.tables);
        sort_dedup(&mut self.set_columns);
        sort_dedup(&mut self.calls);
        canonicalize_conditions(&mut self.conditions);
        if let Some(sublinks) = &mut self.sublinks {
            sublinks.canonicalize();
        }
        if let Some(joins) = &mut self.joins {
            joins.canonicalize();
        }
        for write in &mut self.cte_writes {
            sort_dedup(&mut write.set_columns);
            canonicalize_conditions(&mut write.conditions);
        }
        sort_dedup(&mut self.cte_writes);
    }

    /// Every condition of the statement: its own, then its sublinks', then
    /// its join levels' (each level's, then its derived items'), then its
    /// data-modifying WITH queries'.
    pub fn all_conditions(&self) -> impl Iterator<Item = &Condition> {
        let sublinks = self.sublinks.as_deref().map_or(&[][..], |s| &s.subqueries);
        let levels = self.joins.as_deref().map_or(&[][..], |j| &j.levels);
        let writes = self.cte_writes.iter().flat_map(|w| w.conditions.iter());
        self.conditions
            .iter()
            .chain(
                sublinks
                    .iter()
                    .flat_map(|sublink| sublink.conditions.iter()),
            )
            .chain(levels.iter().flat_map(|level| {
                level.conditions.iter().chain(
                    level
                        .items
                        .iter()
                        .filter_map(|item| match item {
                            FromItem::Derived(derived) => Some(derived.conditions.iter()),
                            FromItem::Table { .. } => None,
                        })
                        .flatten(),
                )
            }))
            .chain(writes)
    }

    /// [`StatementSummary::all_conditions`], mutable, in the same order.
    pub fn all_conditions_mut(&mut self) -> impl Iterator<Item = &mut Condition> {
        let sublinks = self
            .sublinks
            .as_deref_mut()
            .map_or(&mut [][..], |s| &mut s.subqueries);
        let levels = self
            .joins
            .as_deref_mut()
            .map_or(&mut [][..], |j| &mut j.levels);
        let writes = self
            .cte_writes
            .iter_mut()
            .flat_map(|w| w.conditions.iter_mut());
        self.conditions
            .iter_mut()
            .chain(
                sublinks
                    .iter_mut()
                    .flat_map(|sublink| sublink.conditions.iter_mut()),
            )
            .chain(levels.iter_mut().flat_map(|level| {
                level.conditions.iter_mut().chain(
                    level
                        .items
                        .iter_mut()
                        .filter_map(|item| match item {
                            FromItem::Derived(derived) => Some(derived.conditions.iter_mut()),
                            FromItem::Table { .. } => None,
                        })
                        .flatten(),
                )
            }))
            .chain(writes)
    }
}

/// Canonicalize each condition, then sort and deduplicate the list.
/// Sorted and deduplicated; a list of one or none (most of them) is left
/// as it is without a call into either.
fn sort_dedup<T: Ord>(list: &mut Vec<T>) {
    if list.len() > 1 {
        list.sort_unstable();
        list.dedup();
    }
}

fn canonicalize_conditions(conditions: &mut Vec<Condition>) {
    for condition in conditions.iter_mut() {
        condition.canonicalize();
    }
    sort_dedup(conditions);
}

impl Condition {
    fn canonicalize(&mut self) {
        if let Condition::And(children) | Condition::Or(children) = self {
            for child in children.iter_mut() {
                child.canonicalize();
            }
            sort_conditions(children);
        }
    }
}

fn sort_conditions(conditions: &mut [Condition]) {
    if conditions.len() > 1 {
        conditions.sort_unstable();
    }
}
