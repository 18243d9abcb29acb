//! Which table a key condition's column is a column of, as both engines
//! read it (see **resolution** in [`crate::extract`]): a query level's
//! condition restricts rows only through columns of that level's own
//! tables, or through an output column of a FROM subquery or CTE reference
//! of the level that passes a column of such a table through unchanged.
//! Each engine describes a level's FROM items ([`Item`]) and, when asked,
//! the query behind a derived item ([`Bodies::body`]): that contract is
//! this file. What the columns resolve to (`resolve/resolver.rs`), how a
//! condition is rewritten with them (`resolve/rewrite.rs`) and how a
//! resolved column is written so that the router finds the same table
//! among the statement's (`resolve/statement_tables.rs`) is decided once,
//! for both engines.

mod resolver;
mod rewrite;
mod statement_tables;

pub(super) use resolver::Resolver;
pub(super) use rewrite::Mapped;
pub(super) use statement_tables::StatementTables;

/// A table as a FROM item names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Name<'a> {
    pub schema: Option<&'a str>,
    pub name: &'a str,
    pub alias: Option<&'a str>,
}

impl<'a> Name<'a> {
    /// What a qualified column of this item is qualified with.
    fn qualifier(self) -> &'a str {
        self.alias.unwrap_or(self.name)
    }
}

/// One FROM item of a level (through joins of every kind). Functions,
/// table functions and joins' own aliases are left out: a column qualified
/// with their name, or not found among these, is no table's.
pub(super) enum Item<'a, Q> {
    /// A RangeVar that names no CTE in scope; `renamed`: its alias has
    /// column names, so a column's name no longer says which it is.
    Table { table: Name<'a>, renamed: bool },
    /// A FROM subquery (`name`: its alias) or a CTE reference (the
    /// reference's alias, else the CTE's name); `colnames`: the CTE's column
    /// names overridden position by position by the alias's.
    Derived {
        name: Option<&'a str>,
        colnames: Vec<&'a str>,
        query: Q,
    },
}

/// The query behind a derived item, as far as its output columns go.
pub(super) struct Body<'a, Q> {
    /// Its select list in order (a set operation's: its leftmost arm's; a
    /// data-modifying CTE's: its RETURNING list).
    pub outputs: Vec<Output<'a>>,
    /// A plain SELECT whose rows are each computed where the rows they come
    /// from live: no set operation, VALUES, LIMIT, OFFSET or FETCH,
    /// DISTINCT ON, window function or WINDOW clause (grouping and
    /// aggregates are fine: a group of a passed-through key column is
    /// whole on one database).
    pub passes: bool,
    /// Its own level's FROM items (when it passes).
    pub items: Vec<Item<'a, Q>>,
}

/// One select-list item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output<'a> {
    /// A plain column (`k`, `t.k`), output as `name`.
    Column {
        name: &'a str,
        table: Option<&'a str>,
        column: &'a str,
    },
    /// `*` (`None`) or `t.*`.
    Star(Option<&'a str>),
    /// Anything else, with its explicit name (`AS name`).
    Named(&'a str),
    /// Anything else without one.
    Unnamed,
}

impl<'a> Output<'a> {
    /// The name it is certainly output as.
    fn name(self) -> Option<&'a str> {
        match self {
            Output::Column { name, .. } | Output::Named(name) => Some(name),
            Output::Star(_) | Output::Unnamed => None,
        }
    }
}

/// What an engine reads for resolution, on demand.
pub(super) trait Bodies<'a> {
    type Query: Copy;
    fn body(&mut self, query: Self::Query) -> Body<'a, Self::Query>;
}
