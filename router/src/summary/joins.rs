//! The join facts of a statement ([`Joins`]): per query level that joins,
//! its FROM items (tables and derived items with what they expose), its
//! outer joins, and its key-candidate equalities and USING joins (rule 13).

use super::{canonicalize_conditions, ColumnRef, Condition, TableRef};

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
