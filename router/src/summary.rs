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
    /// operation's arms combined into one; never sublinks: see
    /// [`crate::extract`]): all must hold, so the router intersects the
    /// shard sets they give.
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
        for condition in &mut self.conditions {
            condition.canonicalize();
        }
        sort_conditions(&mut self.conditions);
        self.conditions.dedup();
    }
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
