//! The statement summary: everything routing needs from one parsed statement,
//! independent of how the tree is represented. Extractors (`extract/`) build
//! it once per statement text; [`crate::route`] reads it for every execution.
//!
//! Values in key predicates are kept as written (literal text or parameter
//! number): typing and hashing them is the router's job, because the column's
//! configured data type decides how `'42'` or a 4-byte binary parameter reads.

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
    /// Anything else (LISTEN, NOTIFY, VACUUM, PREPARE, EXECUTE, CALL, DO, ...).
    Other,
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
}

/// The subqueries inside a statement's expressions (SubLinks: `x IN
/// (SELECT ...)`, `EXISTS (...)`, a scalar `(SELECT ...)`, `op ANY/ALL
/// (SELECT ...)`, `ARRAY(SELECT ...)`), wherever they sit. Postgres runs a
/// sublink on the database that evaluates the expression around it, over
/// that database's rows only, so the router must check where each one may
/// run: see [`crate::extract`] for how these facts are read and
/// [`crate::route`] (rule 12) for how they are used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sublinks {
    /// One per sublink, nested ones too (sorted, deduplicated).
    pub subqueries: Vec<Sublink>,
    /// The tables the statement reads outside its sublinks: in its own
    /// levels, FROM subqueries, set operations and the bodies of CTEs
    /// defined outside sublinks (sorted, deduplicated).
    pub tables_outside: Vec<TableRef>,
    /// The names by which FROM items other than tables can be referred to,
    /// anywhere in the statement: aliases of subqueries, functions, table
    /// functions and joins, the alias (else the name) of a CTE reference,
    /// the function name of a function without an alias (sorted,
    /// deduplicated). A column qualified with one of these is not a table's.
    pub other_names: Vec<String>,
    /// Some FROM item goes by a name that cannot be told: a function without
    /// an alias that is not a plain call (`FROM coalesce(...)`, `FROM
    /// current_date`). No qualifier is then known to name a table of an
    /// enclosing query.
    pub unnamed_item: bool,
}

/// One subquery inside an expression.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sublink {
    /// The tables its query reads: anywhere in it (FROM, FROM subqueries,
    /// set operations, the bodies of its own CTEs) except inside sublinks
    /// nested in it (each is a sublink of its own), plus the tables of the
    /// CTEs of enclosing queries that it references, transitively (sorted,
    /// deduplicated). Empty when `reads_every_table`.
    pub tables: Vec<TableRef>,
    /// It reads more tables than [`crate::extract::MAX_SUBLINK_TABLES`] (its
    /// own and its referenced CTEs', counted with repeats): read it as if it
    /// read every table of the statement, with no condition and no
    /// correlation.
    pub reads_every_table: bool,
    /// The key conditions that restrict its rows: the statement rules for
    /// conditions applied to its query, CTEs of enclosing queries included
    /// where its contributing FROMs reference them.
    pub conditions: Vec<Condition>,
    /// The tables of its own level's FROM (through joins of every kind, not
    /// inside FROM subqueries): what a qualified column of its own level can
    /// name. Empty unless its query is a plain SELECT.
    pub from_tables: Vec<TableRef>,
    /// Equalities of two columns (`a.k = b.k`) AND-ed into its own level's
    /// condition (its WHERE and the quals of INNER joins reached through
    /// preserved sides, as for conditions), each pair in ascending order:
    /// where it may be correlated with an enclosing query. Empty unless its
    /// query is a plain SELECT.
    pub equalities: Vec<(ColumnRef, ColumnRef)>,
}

/// What a statement does to the session's state on its server connection,
/// as a pooler must track it to move the session between connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEffect {
    /// `SET name = ...`, `SET name TO ...`, `SET name FROM CURRENT` (session
    /// scope). `name` lower-cased; the statement is replayed from its text,
    /// `start..start + len` in the parsed string (`len` 0: to its end), as
    /// the parser's `stmt_location` / `stmt_len` say.
    Set {
        name: String,
        start: usize,
        len: usize,
    },
    /// `RESET name`, `SET name TO DEFAULT`.
    Reset { name: String },
    /// `RESET ALL`.
    ResetAll,
    /// `SET LOCAL ...`, `SET TRANSACTION ...`, `SET CONSTRAINTS ...`: ends
    /// with the transaction. The statement's command tag.
    TransactionScoped(&'static str),
    /// A session change the pooler cannot replay (`SET SESSION
    /// CHARACTERISTICS AS TRANSACTION ...`).
    Untracked,
    /// `DEALLOCATE name`; `None` for `DEALLOCATE ALL`.
    Deallocate(Option<String>),
    /// `DISCARD ALL`.
    DiscardAll,
}

impl SessionEffect {
    /// The text of a [`SessionEffect::Set`] in `sql`, the string it was
    /// parsed from, trimmed.
    pub fn set_text<'s>(&self, sql: &'s str) -> Option<&'s str> {
        let SessionEffect::Set { start, len, .. } = self else {
            return None;
        };
        let text = match len {
            0 => sql.get(*start..)?,
            len => sql.get(*start..start.checked_add(*len)?)?,
        };
        Some(text.trim())
    }
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
        self.tables.sort_unstable();
        self.tables.dedup();
        self.set_columns.sort_unstable();
        self.set_columns.dedup();
        canonicalize_conditions(&mut self.conditions);
        if let Some(sublinks) = &mut self.sublinks {
            sublinks.canonicalize();
        }
    }

    /// Every condition of the statement: its own, then its sublinks'.
    pub fn all_conditions(&self) -> impl Iterator<Item = &Condition> {
        let sublinks = self.sublinks.as_deref().map_or(&[][..], |s| &s.subqueries);
        self.conditions.iter().chain(
            sublinks
                .iter()
                .flat_map(|sublink| sublink.conditions.iter()),
        )
    }

    /// [`StatementSummary::all_conditions`], mutable, in the same order.
    pub fn all_conditions_mut(&mut self) -> impl Iterator<Item = &mut Condition> {
        let sublinks = self
            .sublinks
            .as_deref_mut()
            .map_or(&mut [][..], |s| &mut s.subqueries);
        self.conditions.iter_mut().chain(
            sublinks
                .iter_mut()
                .flat_map(|sublink| sublink.conditions.iter_mut()),
        )
    }
}

impl Sublinks {
    /// Sort and deduplicate every list, each sublink's too, then the
    /// sublinks themselves (two equal sublinks need checking once).
    pub fn canonicalize(&mut self) {
        for sublink in &mut self.subqueries {
            sublink.tables.sort_unstable();
            sublink.tables.dedup();
            canonicalize_conditions(&mut sublink.conditions);
            sublink.from_tables.sort_unstable();
            sublink.from_tables.dedup();
            sublink.equalities.sort_unstable();
            sublink.equalities.dedup();
        }
        self.subqueries.sort_unstable();
        self.subqueries.dedup();
        self.tables_outside.sort_unstable();
        self.tables_outside.dedup();
        self.other_names.sort_unstable();
        self.other_names.dedup();
    }
}

/// Canonicalize each condition, then sort and deduplicate the list.
fn canonicalize_conditions(conditions: &mut Vec<Condition>) {
    for condition in conditions.iter_mut() {
        condition.canonicalize();
    }
    sort_conditions(conditions);
    conditions.dedup();
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
