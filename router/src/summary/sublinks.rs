//! The sublink facts of a statement ([`Sublinks`]): the tables outside
//! them, and per sublink its tables, conditions, FROM and correlation
//! equalities (rule 12).

use super::{canonicalize_conditions, ColumnRef, Condition, TableRef};

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
    /// `outer IN (SELECT inner ...)` AND-ed into a SELECT's WHERE, when its
    /// query's shape lets each outer row meet only inner rows (whole groups
    /// of them) holding its own value: `(inner, outer)`, `outer` resolved
    /// from the level around the sublink. See [`crate::extract`].
    pub in_key: Option<(ColumnRef, ColumnRef)>,
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
