//! Which table a key condition's column is a column of, as both engines
//! read it (see **resolution** in [`crate::extract`]): a query level's
//! condition restricts rows only through columns of that level's own
//! tables, or through an output column of a FROM subquery or CTE reference
//! of the level that passes a column of such a table through unchanged.
//! Each engine describes a level's FROM items ([`Item`]) and, when asked,
//! the query behind a derived item ([`Bodies::body`]); what the columns
//! resolve to, and how a resolved column is written so that the router
//! finds the same table among the statement's, is decided here once.

use super::{MAX_DEPTH, MAX_RESOLUTION_STEPS};
use crate::summary::{ColumnRef, Condition, TableRef};

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

/// The statement's tables (the summary's `tables`), to tell which
/// qualifier the router will resolve to which table. Indexed only for
/// statements with many tables.
pub(super) struct StatementTables<'t> {
    tables: &'t [TableRef],
    index: Option<Index<'t>>,
}

/// Sorted views of many tables.
struct Index<'t> {
    /// (alias, schema, name) of the aliased tables, sorted.
    by_alias: Vec<(&'t str, Option<&'t str>, &'t str)>,
    /// (name, schema) of every table, sorted.
    by_name: Vec<(&'t str, Option<&'t str>)>,
    /// (schema, name) of every table, sorted, deduplicated.
    set: Vec<(Option<&'t str>, &'t str)>,
}

/// Statements with at most this many tables are looked up by scanning.
const SCANNED_TABLES: usize = 8;

impl<'t> Index<'t> {
    fn new(tables: &'t [TableRef]) -> Index<'t> {
        let mut by_alias: Vec<_> = tables
            .iter()
            .filter_map(|t| Some((t.alias.as_deref()?, t.schema.as_deref(), t.name.as_str())))
            .collect();
        by_alias.sort_unstable();
        let mut by_name: Vec<_> = tables
            .iter()
            .map(|t| (t.name.as_str(), t.schema.as_deref()))
            .collect();
        by_name.sort_unstable();
        let mut set: Vec<_> = by_name
            .iter()
            .map(|&(name, schema)| (schema, name))
            .collect();
        set.sort_unstable();
        set.dedup();
        Index {
            by_alias,
            by_name,
            set,
        }
    }
}

impl<'t> StatementTables<'t> {
    pub fn new(tables: &'t [TableRef]) -> StatementTables<'t> {
        StatementTables {
            tables,
            index: (tables.len() > SCANNED_TABLES).then(|| Index::new(tables)),
        }
    }

    /// The qualifier that makes the router (which looks a qualifier up
    /// among the statement's tables by alias first, then by name) find a
    /// table with `table`'s schema and name: its alias, else its name;
    /// `None` when that finds another table too (or none).
    fn qualifier<'n>(&self, table: Name<'n>) -> Option<&'n str> {
        let q = table.qualifier();
        let wanted = (table.schema, table.name);
        // The tables the router may find: those aliased `q`, else those
        // named `q`; all must be `table`'s.
        let all_wanted = |found: &mut dyn Iterator<Item = (Option<&str>, &str)>| {
            let mut any = false;
            for candidate in found {
                if candidate != wanted {
                    return Some(false);
                }
                any = true;
            }
            any.then_some(true)
        };
        let verdict = match &self.index {
            None => {
                let mut aliased = self
                    .tables
                    .iter()
                    .filter(|t| t.alias.as_deref() == Some(q))
                    .map(|t| (t.schema.as_deref(), t.name.as_str()));
                all_wanted(&mut aliased).or_else(|| {
                    let mut named = self
                        .tables
                        .iter()
                        .filter(|t| t.name == q)
                        .map(|t| (t.schema.as_deref(), t.name.as_str()));
                    all_wanted(&mut named)
                })
            }
            Some(index) => {
                let from = index.by_alias.partition_point(|&(alias, ..)| alias < q);
                let mut aliased = index.by_alias[from..]
                    .iter()
                    .take_while(|&&(alias, ..)| alias == q)
                    .map(|&(_, schema, name)| (schema, name));
                all_wanted(&mut aliased).or_else(|| {
                    let from = index.by_name.partition_point(|&(name, _)| name < q);
                    let mut named = index.by_name[from..]
                        .iter()
                        .take_while(|&&(name, _)| name == q)
                        .map(|&(name, schema)| (schema, name));
                    all_wanted(&mut named)
                })
            }
        };
        (verdict == Some(true)).then_some(q)
    }

    /// [`StatementTables::covered_by`] of a level's tables given in any
    /// order (without allocating for statements of few tables); false for
    /// none.
    fn covers<'l>(&self, tables: &mut dyn Iterator<Item = (Option<&'l str>, &'l str)>) -> bool {
        if self.index.is_some() {
            let mut set: Vec<_> = tables.collect();
            set.sort_unstable();
            set.dedup();
            return !set.is_empty() && self.covered_by(&set);
        }
        let mut any = false;
        let mut seen = 0u64;
        for table in tables {
            any = true;
            let position = self
                .tables
                .iter()
                .position(|t| (t.schema.as_deref(), t.name.as_str()) == table);
            match position {
                Some(i) => seen |= 1 << i,
                None => return false,
            }
        }
        // Every statement table (a duplicate counts with its twin) seen.
        any && self.tables.iter().enumerate().all(|(i, t)| {
            seen & (1 << i) != 0
                || self.tables[..i].iter().enumerate().any(|(j, u)| {
                    seen & (1 << j) != 0
                        && (u.schema.as_deref(), u.name.as_str())
                            == (t.schema.as_deref(), t.name.as_str())
                })
        })
    }

    /// Whether `tables` (sorted, deduplicated) are every table of the
    /// statement: an unqualified column of theirs resolves, among any of
    /// the router's lists that holds them, to the same tables.
    fn covered_by(&self, tables: &[(Option<&str>, &str)]) -> bool {
        if let Some(index) = &self.index {
            return index.set.as_slice() == tables;
        }
        fn of(t: &TableRef) -> (Option<&str>, &str) {
            (t.schema.as_deref(), t.name.as_str())
        }
        self.tables
            .iter()
            .all(|t| tables.binary_search(&of(t)).is_ok())
            && tables
                .iter()
                .all(|&wanted| self.tables.iter().any(|t| of(t) == wanted))
    }
}

/// What one condition column becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mapped {
    /// The column as written.
    Same,
    /// No table's key: the comparison restricts nothing.
    Drop,
    /// These columns, each of which restricts (the comparison is repeated
    /// for each, AND-ed).
    Columns(Vec<ColumnRef>),
}

/// A level whose columns are resolved: the level itself (0) and the
/// bodies of derived items fetched on the way.
struct Level<'a, Q> {
    items: Vec<Item<'a, Q>>,
    /// Per item, once fetched: its body's outputs (renamed) and level.
    fetched: Vec<Option<Fetched<'a>>>,
    /// (qualifier, item), sorted: built for levels with many items.
    names: Option<Vec<(&'a str, usize)>>,
    /// Its unrenamed tables' (schema, name)s, sorted, deduplicated, once
    /// computed.
    tables: Option<Vec<(Option<&'a str>, &'a str)>>,
}

struct Fetched<'a> {
    outputs: Vec<Output<'a>>,
    passes: bool,
    level: usize,
}

/// Where a column was found.
enum Found<'w> {
    /// A column of table item `item` of `level`.
    Table {
        level: usize,
        item: usize,
        column: &'w str,
    },
    /// An unqualified column of one of `level`'s tables.
    Level { level: usize, column: &'w str },
}

/// Levels with more items than this get a sorted name index.
const INDEXED_ITEMS: usize = 16;

/// Resolves the columns of one level's condition.
pub(super) struct Resolver<'r, 'a, B: Bodies<'a>> {
    bodies: &'r mut B,
    tables: &'r StatementTables<'r>,
    levels: Vec<Level<'a, B::Query>>,
}

impl<'r, 'a, B: Bodies<'a>> Resolver<'r, 'a, B> {
    pub fn new(
        items: Vec<Item<'a, B::Query>>,
        bodies: &'r mut B,
        tables: &'r StatementTables<'r>,
    ) -> Resolver<'r, 'a, B> {
        Resolver {
            bodies,
            tables,
            levels: vec![Level {
                items,
                fetched: Vec::new(),
                names: None,
                tables: None,
            }],
        }
    }

    /// `condition` with its columns resolved (see [`rewrite`]).
    pub fn condition(&mut self, condition: Condition) -> Option<Condition> {
        rewrite(condition, &mut |column| self.column(column))
    }

    /// What `written`, a column of the level's condition, becomes.
    pub fn column(&mut self, written: &ColumnRef) -> Mapped {
        let only_tables = self.levels[0]
            .items
            .iter()
            .all(|item| matches!(item, Item::Table { .. }));
        if only_tables {
            return self.of_tables(written);
        }
        self.resolve(written)
    }

    /// [`Resolver::column`] at a level of tables only (the common case),
    /// without following anything.
    fn of_tables(&mut self, written: &ColumnRef) -> Mapped {
        let Some(qualifier) = written.table.as_deref() else {
            let mut tables = self.levels[0].items.iter().filter_map(|item| match item {
                Item::Table {
                    table,
                    renamed: false,
                } => Some((table.schema, table.name)),
                _ => None,
            });
            if self.tables.covers(&mut tables) {
                return Mapped::Same;
            }
            let has_tables = self.levels[0]
                .items
                .iter()
                .any(|item| matches!(item, Item::Table { renamed: false, .. }));
            if !has_tables {
                return Mapped::Drop;
            }
            let found = Found::Level {
                level: 0,
                column: &written.column,
            };
            return self.emit(written, vec![found]);
        };
        let table = match self
            .named(0, qualifier)
            .map(|item| &self.levels[0].items[item])
        {
            Some(&Item::Table {
                table,
                renamed: false,
            }) => table,
            _ => return Mapped::Drop,
        };
        match self.tables.qualifier(table) {
            Some(q) if q == qualifier => Mapped::Same,
            Some(q) => Mapped::Columns(vec![ColumnRef {
                table: Some(q.to_owned()),
                column: written.column.clone(),
            }]),
            None => Mapped::Drop,
        }
    }

    fn resolve(&mut self, written: &ColumnRef) -> Mapped {
        let mut found: Vec<Found<'_>> = Vec::new();
        let mut work: Vec<(usize, Option<&str>, &str, usize)> =
            vec![(0, written.table.as_deref(), written.column.as_str(), 0)];
        let mut steps = 0;
        while let Some((level, qualifier, column, depth)) = work.pop() {
            steps += 1;
            if steps > MAX_RESOLUTION_STEPS || depth > MAX_DEPTH {
                // Too far to follow: restricting nothing is safe.
                return Mapped::Drop;
            }
            match qualifier {
                Some(qualifier) => {
                    let Some(item) = self.named(level, qualifier) else {
                        // An enclosing query's, or no table's.
                        continue;
                    };
                    match &self.levels[level].items[item] {
                        Item::Table { renamed: false, .. } => found.push(Found::Table {
                            level,
                            item,
                            column,
                        }),
                        Item::Table { renamed: true, .. } => {}
                        Item::Derived { .. } => self.through(level, item, column, depth, &mut work),
                    }
                }
                None => self.unqualified(level, column, depth, &mut found, &mut work),
            }
        }
        self.emit(written, found)
    }

    /// An unqualified column of `level`: the one derived item that
    /// certainly outputs it (else Postgres finds it ambiguous), or else
    /// its tables' and what its derived items' stars pass through.
    fn unqualified<'w>(
        &mut self,
        level: usize,
        column: &'w str,
        depth: usize,
        found: &mut Vec<Found<'w>>,
        work: &mut Vec<(usize, Option<&'w str>, &'w str, usize)>,
    ) where
        'a: 'w,
    {
        let derived: Vec<usize> = (0..self.levels[level].items.len())
            .filter(|&i| matches!(self.levels[level].items[i], Item::Derived { .. }))
            .collect();
        let mut certain = Vec::new();
        for &item in &derived {
            let outputs = self.fetch(level, item).map_or(&[][..], |f| &f.outputs);
            if outputs.iter().any(|o| o.name() == Some(column)) {
                certain.push(item);
            }
        }
        match certain.as_slice() {
            [item] => return self.through(level, *item, column, depth, work),
            [] => {}
            // Ambiguous: Postgres refuses the statement.
            _ => return,
        }
        let has_tables = self.levels[level]
            .items
            .iter()
            .any(|item| matches!(item, Item::Table { renamed: false, .. }));
        if has_tables {
            found.push(Found::Level { level, column });
        }
        for item in derived {
            let Some(fetched) = self.fetch(level, item).filter(|f| f.passes) else {
                continue;
            };
            let inner = fetched.level;
            for output in &fetched.outputs {
                if let Output::Star(star) = *output {
                    work.push((inner, star, column, depth + 1));
                }
            }
        }
    }

    /// Output `column` of derived item `item` of `level`: the plain column
    /// it passes through, or what its stars pass through.
    fn through<'w>(
        &mut self,
        level: usize,
        item: usize,
        column: &'w str,
        depth: usize,
        work: &mut Vec<(usize, Option<&'w str>, &'w str, usize)>,
    ) where
        'a: 'w,
    {
        let Some(fetched) = self.fetch(level, item) else {
            return;
        };
        let inner = fetched.level;
        let mut named = fetched
            .outputs
            .iter()
            .filter(|output| output.name() == Some(column));
        if let Some(first) = named.next() {
            if let (None, true, Output::Column { table, column, .. }) =
                (named.next(), fetched.passes, *first)
            {
                work.push((inner, table, column, depth + 1));
            }
            return;
        }
        if !fetched.passes {
            return;
        }
        for output in &fetched.outputs {
            if let Output::Star(star) = *output {
                work.push((inner, star, column, depth + 1));
            }
        }
    }

    /// Derived item `item` of `level`'s body, fetched once (`None` for a
    /// table item, which has none).
    fn fetch(&mut self, level: usize, item: usize) -> Option<&Fetched<'a>> {
        let at = &mut self.levels[level];
        if at.fetched.len() < at.items.len() {
            at.fetched.resize_with(at.items.len(), || None);
        }
        if self.levels[level].fetched[item].is_none() {
            let Item::Derived {
                colnames, query, ..
            } = &self.levels[level].items[item]
            else {
                return None;
            };
            let (colnames, query) = (colnames.clone(), *query);
            let body = self.bodies.body(query);
            let outputs = renamed(body.outputs, &colnames);
            self.levels.push(Level {
                items: body.items,
                fetched: Vec::new(),
                names: None,
                tables: None,
            });
            let inner = self.levels.len() - 1;
            self.levels[level].fetched[item] = Some(Fetched {
                outputs,
                passes: body.passes,
                level: inner,
            });
        }
        self.levels[level].fetched[item].as_ref()
    }

    /// The item of `level` that `qualifier` names: a table by its alias
    /// (by its name when it has none), a derived item by its name; the
    /// first, if several (Postgres refuses those).
    fn named(&mut self, level: usize, qualifier: &str) -> Option<usize> {
        let at = &mut self.levels[level];
        let name_of = |item: &Item<'a, B::Query>| match item {
            Item::Table { table, .. } => Some(table.qualifier()),
            Item::Derived { name, .. } => *name,
        };
        if at.items.len() <= INDEXED_ITEMS {
            return at.items.iter().position(|i| name_of(i) == Some(qualifier));
        }
        let names = at.names.get_or_insert_with(|| {
            let mut names: Vec<(&'a str, usize)> = at
                .items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| Some((name_of(item)?, i)))
                .collect();
            names.sort_unstable();
            names
        });
        let from = names.partition_point(|&(name, _)| name < qualifier);
        names
            .get(from)
            .filter(|&&(name, _)| name == qualifier)
            .map(|&(_, i)| i)
    }

    /// The columns to write for what was found.
    fn emit(&mut self, written: &ColumnRef, found: Vec<Found<'_>>) -> Mapped {
        let mut out: Vec<ColumnRef> = Vec::new();
        for found in found {
            match found {
                Found::Table {
                    level,
                    item,
                    column,
                } => {
                    if let Item::Table { table, .. } = &self.levels[level].items[item] {
                        out.extend(self.qualified(*table, column));
                    }
                }
                Found::Level { level, column } => {
                    let statement = self.tables;
                    if statement.covered_by(level_tables(&mut self.levels[level])) {
                        out.push(ColumnRef {
                            table: None,
                            column: column.to_owned(),
                        });
                        continue;
                    }
                    let names: Vec<Name<'a>> = self.levels[level]
                        .items
                        .iter()
                        .filter_map(|item| match item {
                            Item::Table {
                                table,
                                renamed: false,
                            } => Some(*table),
                            _ => None,
                        })
                        .collect();
                    for table in names {
                        out.extend(self.qualified(table, column));
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        match out.as_slice() {
            [] => Mapped::Drop,
            [only] if only == written => Mapped::Same,
            _ => Mapped::Columns(out),
        }
    }

    /// `table.column`, qualified so that the router finds `table`.
    fn qualified(&self, table: Name<'_>, column: &str) -> Option<ColumnRef> {
        Some(ColumnRef {
            table: Some(self.tables.qualifier(table)?.to_owned()),
            column: column.to_owned(),
        })
    }
}

/// A level's unrenamed tables' (schema, name)s, sorted, deduplicated.
fn level_tables<'l, 'a, Q>(level: &'l mut Level<'a, Q>) -> &'l [(Option<&'a str>, &'a str)] {
    let items = &level.items;
    level.tables.get_or_insert_with(|| {
        let mut set: Vec<(Option<&'a str>, &'a str)> = items
            .iter()
            .filter_map(|item| match item {
                Item::Table {
                    table,
                    renamed: false,
                } => Some((table.schema, table.name)),
                _ => None,
            })
            .collect();
        set.sort_unstable();
        set.dedup();
        set
    })
}

/// Outputs renamed position by position by `colnames`; a name reaching a
/// `*` drops it and every output after it (their positions are unknown).
fn renamed<'a>(outputs: Vec<Output<'a>>, colnames: &[&'a str]) -> Vec<Output<'a>> {
    if colnames.is_empty() {
        return outputs;
    }
    let mut out = Vec::with_capacity(outputs.len());
    for (position, output) in outputs.into_iter().enumerate() {
        let Some(&name) = colnames.get(position) else {
            out.push(output);
            continue;
        };
        out.push(match output {
            Output::Star(_) => break,
            Output::Column { table, column, .. } => Output::Column {
                name,
                table,
                column,
            },
            Output::Named(_) | Output::Unnamed => Output::Named(name),
        });
    }
    out
}

/// `condition` with each column mapped by `map`: a dropped one gives no
/// condition (an AND goes on without it, an OR gives none), a column that
/// becomes several repeats its comparison for each, AND-ed. Unchanged (and
/// not copied) when every column stays as written. Iterative: conditions
/// nest as deep as [`MAX_DEPTH`].
pub(super) fn rewrite(
    condition: Condition,
    map: &mut impl FnMut(&ColumnRef) -> Mapped,
) -> Option<Condition> {
    // The common shape, one comparison: no stacks.
    if let Condition::Eq { column, .. } | Condition::Any { column, .. } = &condition {
        let m = map(column);
        return map_leaf(condition, m);
    }
    let mut mapped: Vec<Mapped> = Vec::new();
    let mut changed = false;
    let mut stack: Vec<&Condition> = vec![&condition];
    // The last column mapped (a long OR or IN list names one many times).
    let mut last: Option<&ColumnRef> = None;
    while let Some(node) = stack.pop() {
        match node {
            Condition::Eq { column, .. } | Condition::Any { column, .. } => {
                let m = match (last, mapped.last()) {
                    (Some(previous), Some(m)) if previous == column => m.clone(),
                    _ => map(column),
                };
                last = Some(column);
                changed |= m != Mapped::Same;
                mapped.push(m);
            }
            Condition::And(children) | Condition::Or(children) => {
                stack.extend(children.iter().rev());
            }
        }
    }
    if !changed {
        return Some(condition);
    }
    enum Task {
        Node(Condition),
        And(usize),
        Or(usize),
    }
    let mut mapped = mapped.into_iter();
    let mut tasks = vec![Task::Node(condition)];
    let mut results: Vec<Option<Condition>> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Node(Condition::And(children)) => {
                tasks.push(Task::And(children.len()));
                tasks.extend(children.into_iter().rev().map(Task::Node));
            }
            Task::Node(Condition::Or(children)) => {
                tasks.push(Task::Or(children.len()));
                tasks.extend(children.into_iter().rev().map(Task::Node));
            }
            Task::Node(leaf) => {
                let m = mapped.next().unwrap_or(Mapped::Drop);
                results.push(map_leaf(leaf, m));
            }
            Task::And(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                results.push(and(children.into_iter().flatten().collect()));
            }
            Task::Or(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                let children: Option<Vec<Condition>> = children.into_iter().collect();
                results.push(children.and_then(or));
            }
        }
    }
    results.pop().flatten()
}

/// A comparison with its column mapped.
fn map_leaf(leaf: Condition, mapped: Mapped) -> Option<Condition> {
    match mapped {
        Mapped::Same => Some(leaf),
        Mapped::Drop => None,
        Mapped::Columns(columns) => {
            let with = |column: ColumnRef| match &leaf {
                Condition::Eq { value, .. } => Condition::Eq {
                    column,
                    value: value.clone(),
                },
                Condition::Any { value, .. } => Condition::Any {
                    column,
                    value: value.clone(),
                },
                other => other.clone(),
            };
            and(columns.into_iter().map(with).collect())
        }
    }
}

fn and(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 | 1 => parts.pop(),
        _ => Some(Condition::And(parts)),
    }
}

fn or(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 | 1 => parts.pop(),
        _ => Some(Condition::Or(parts)),
    }
}
