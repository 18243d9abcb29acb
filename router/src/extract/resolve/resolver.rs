//! The resolution itself: a level's condition columns followed to the
//! tables of their own level, through the plain outputs of the FROM
//! subqueries and CTE references the engines describe on demand
//! ([`Bodies`]), bounded in steps and depth.

use smallvec::{smallvec, SmallVec};

use super::rewrite::{rewrite, Mapped};
use super::statement_tables::StatementTables;
use super::{Bodies, Item, Name, Output};
use crate::extract::{MAX_DEPTH, MAX_RESOLUTION_STEPS};
use crate::summary::{ColumnRef, Condition};

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
pub(in crate::extract) struct Resolver<'r, 'a, B: Bodies<'a>> {
    bodies: &'r mut B,
    tables: &'r StatementTables<'r>,
    /// Inline for the level itself: most conditions resolve without
    /// fetching a body, and then nothing is allocated here.
    levels: SmallVec<[Level<'a, B::Query>; 1]>,
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
            levels: smallvec![Level {
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
