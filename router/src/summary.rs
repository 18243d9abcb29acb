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

/// The query levels of a statement that join FROM items, anywhere in it
/// (its own level, FROM subqueries, CTE bodies, set operations' arms,
/// sublinks, an INSERT's SELECT). Postgres joins on each database the rows
/// that database holds, so the router must check that the rows each level
/// pairs up live on one database: see [`crate::extract`] for how these
/// facts are read and [`crate::route`] (rule 13) for how they are used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Joins {
    /// One per level with two or more items, or one item and an outer join
    /// (sorted, deduplicated).
    pub levels: Vec<JoinLevel>,
}

/// One query level whose FROM (with an UPDATE's, DELETE's or MERGE's
/// target) has two or more items that may read sharded rows, or one and an
/// outer join.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JoinLevel {
    /// Its tables and derived items, in the order of its FROM's join trees'
    /// leaves, left to right (the target first): every join's sides are
    /// ranges of this list. Functions, table functions and `JSON_TABLE`
    /// are not items (every database computes the same rows from them).
    pub items: Vec<FromItem>,
    /// Its LEFT, RIGHT and FULL joins (a MERGE's join of target and
    /// source counts as a FULL one), in pre-order: a join before the joins
    /// of its sides, the left side's before the right's.
    pub outer_joins: Vec<OuterJoin>,
    /// Equalities of two columns AND-ed into its WHERE or into some join's
    /// ON (sorted, deduplicated).
    pub equalities: Vec<JoinEquality>,
    /// Its joins with USING columns or NATURAL (sorted).
    pub usings: Vec<JoinUsing>,
    /// Its own key condition: the WHERE AND-ed with the ON of the INNER
    /// joins reached through preserved sides (a MERGE's join condition),
    /// as for [`StatementSummary::conditions`]; at most one.
    pub conditions: Vec<Condition>,
}

/// One item of a level's FROM that may read sharded rows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FromItem {
    /// A table. `renamed`: it has column aliases (`orders o(a, b)`), so a
    /// column's name no longer says which column it is.
    Table { table: TableRef, renamed: bool },
    /// A FROM subquery or a reference to a CTE.
    Derived(Box<Derived>),
}

/// A FROM subquery or CTE reference, as far as joining it goes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Derived {
    /// What its columns are qualified with: the subquery's alias, the
    /// reference's alias, else the CTE's name.
    pub name: Option<String>,
    /// `LATERAL`: its query may refer to the items before it.
    pub lateral: bool,
    /// Every table its query names, at any depth, and those of the CTEs it
    /// names, transitively (sorted, deduplicated); empty when
    /// `reads_every_table`.
    pub tables: Vec<TableRef>,
    /// It names more tables than [`crate::extract::MAX_SUBLINK_TABLES`], or
    /// a CTE name the statement defines twice: read it as reading sharded
    /// tables, with no key and no condition.
    pub reads_every_table: bool,
    /// When its query is a plain SELECT: the tables of its own FROM, through
    /// joins of every kind, without column aliases (sorted, deduplicated).
    pub from_tables: Vec<TableRef>,
    /// Its output columns that are plain columns of its own level: (output
    /// name, the column as written there) (sorted, deduplicated).
    pub columns: Vec<(String, ColumnRef)>,
    /// Its `*` and `t.*` outputs (`None`, `Some("t")`), whose columns keep
    /// their names (sorted, deduplicated).
    pub stars: Vec<Option<String>>,
    /// When `lateral`: the equalities of two columns AND-ed into its own
    /// level's condition (as for [`Sublink::equalities`]).
    pub equalities: Vec<(ColumnRef, ColumnRef)>,
    /// Its own level's key condition (as for [`JoinLevel::conditions`]).
    pub conditions: Vec<Condition>,
}

/// A LEFT, RIGHT or FULL join of a level: its sides are
/// `items[left.0..left.1]` and `items[right.0..right.1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OuterJoin {
    pub kind: OuterKind,
    pub left: (usize, usize),
    pub right: (usize, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OuterKind {
    Left,
    Right,
    Full,
}

/// `a = b` between two columns, in ascending order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JoinEquality {
    pub left: ColumnRef,
    pub right: ColumnRef,
    /// The outer join whose ON holds it (an index into
    /// [`JoinLevel::outer_joins`]); `None` for the WHERE and INNER joins.
    pub outer: Option<usize>,
}

/// A join with `USING (columns)`, or NATURAL (`columns` empty).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JoinUsing {
    pub left: (usize, usize),
    pub right: (usize, usize),
    pub columns: Vec<String>,
    pub natural: bool,
    /// The outer join it is, if it is one.
    pub outer: Option<usize>,
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
    /// `PREPARE name [(types)] AS statement`: a statement prepared under a
    /// name, which pgshard tracks itself (see [`crate::prepared`]). The
    /// summary's other facts are the prepared statement's (kind `Other`).
    /// `types`: the declared parameter types as a cast names them
    /// ([`Value::cast`]; `None` for a type without a plain name); the
    /// PREPARE's text is `start..start + len` in the parsed string (`len`
    /// 0: to its end), as the parser's `stmt_location` / `stmt_len` say.
    Prepare {
        name: String,
        types: Vec<Option<String>>,
        start: usize,
        len: usize,
    },
    /// `EXECUTE name [(arguments)]`, alone or wrapped by EXPLAIN or CREATE
    /// TABLE AS (the statement's kind says which): the name and its
    /// arguments; the statement's text is `start..start + len`, as for
    /// [`SessionEffect::Prepare`].
    Execute {
        name: String,
        args: Vec<Argument>,
        start: usize,
        len: usize,
    },
    /// A cursor statement: cursors are state of the server that declared
    /// them.
    Cursor(CursorEffect),
}

/// One argument of `EXECUTE name (arguments)`: what routing can read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Argument {
    /// A literal without a cast, as a key condition reads one
    /// ([`ValueSource::Integer`], [`ValueSource::Text`] for a string
    /// literal, [`ValueSource::Null`]), or a parameter (`$n`).
    Value(ValueSource),
    /// A numeric literal that is not an int4 (`10000000000`, `1.5`, `1e3`),
    /// as written: Postgres reads it as int8 or numeric.
    Number(String),
    /// Anything else: an expression, a cast literal, a boolean.
    Expression,
}

/// What a statement does with a cursor (a named portal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorEffect {
    /// `DECLARE name ... CURSOR ... FOR query` (the statement's tables and
    /// conditions are its query's).
    Declare {
        name: String,
        options: CursorOptions,
    },
    /// `FETCH` (`MOVE` when `moves`) as the parser reads it: `NEXT` is
    /// `Forward` 1, `PRIOR` `Backward` 1, `FIRST` `Absolute` 1, `LAST`
    /// `Absolute` -1, a bare count `Forward` (negative: backward), `ALL`
    /// the count [`FETCH_ALL`].
    Fetch {
        name: String,
        direction: FetchDirection,
        count: i64,
        moves: bool,
    },
    /// `CLOSE name`; `None` for `CLOSE ALL`.
    Close(Option<String>),
    /// `UPDATE` / `DELETE ... WHERE CURRENT OF name`.
    CurrentOf(String),
}

/// A FETCH count meaning `ALL` (Postgres's `FETCH_ALL`, `LONG_MAX`).
pub const FETCH_ALL: i64 = i64::MAX;

/// The options of `DECLARE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CursorOptions {
    /// `BINARY`: rows in binary.
    pub binary: bool,
    /// `SCROLL` (explicitly; `NO SCROLL` and no option are not).
    pub scroll: bool,
    /// `WITH HOLD`: the cursor outlives its transaction.
    pub hold: bool,
}

impl CursorOptions {
    /// From `DeclareCursorStmt.options` (Postgres's `CURSOR_OPT_*` bits).
    pub fn from_bits(bits: i32) -> CursorOptions {
        CursorOptions {
            binary: bits & 0x0001 != 0,
            scroll: bits & 0x0002 != 0,
            hold: bits & 0x0020 != 0,
        }
    }
}

/// A FETCH's direction, as the parser records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchDirection {
    Forward,
    Backward,
    Absolute,
    Relative,
}

impl SessionEffect {
    /// The text of a [`SessionEffect::Set`] in `sql`, the string it was
    /// parsed from, trimmed.
    pub fn set_text<'s>(&self, sql: &'s str) -> Option<&'s str> {
        match self {
            SessionEffect::Set { .. } => self.statement_text(sql),
            _ => None,
        }
    }

    /// The text of the statement a [`SessionEffect::Set`],
    /// [`SessionEffect::Prepare`] or [`SessionEffect::Execute`] belongs to,
    /// in `sql`, the string it was parsed from, trimmed.
    pub fn statement_text<'s>(&self, sql: &'s str) -> Option<&'s str> {
        let (SessionEffect::Set { start, len, .. }
        | SessionEffect::Prepare { start, len, .. }
        | SessionEffect::Execute { start, len, .. }) = self
        else {
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
        self.calls.sort_unstable();
        self.calls.dedup();
        canonicalize_conditions(&mut self.conditions);
        if let Some(sublinks) = &mut self.sublinks {
            sublinks.canonicalize();
        }
        if let Some(joins) = &mut self.joins {
            joins.canonicalize();
        }
        for write in &mut self.cte_writes {
            write.set_columns.sort_unstable();
            write.set_columns.dedup();
            canonicalize_conditions(&mut write.conditions);
        }
        self.cte_writes.sort_unstable();
        self.cte_writes.dedup();
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

impl Joins {
    /// Canonicalize each level's unordered lists (its items keep their
    /// order: join sides are ranges of it), then sort and deduplicate the
    /// levels.
    pub fn canonicalize(&mut self) {
        for level in &mut self.levels {
            canonicalize_conditions(&mut level.conditions);
            level.equalities.sort_unstable();
            level.equalities.dedup();
            level.usings.sort_unstable();
            for item in &mut level.items {
                if let FromItem::Derived(derived) = item {
                    derived.tables.sort_unstable();
                    derived.tables.dedup();
                    derived.from_tables.sort_unstable();
                    derived.from_tables.dedup();
                    derived.columns.sort_unstable();
                    derived.columns.dedup();
                    derived.stars.sort_unstable();
                    derived.stars.dedup();
                    derived.equalities.sort_unstable();
                    derived.equalities.dedup();
                    canonicalize_conditions(&mut derived.conditions);
                }
            }
        }
        self.levels.sort_unstable();
        self.levels.dedup();
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
