//! The sublink facts ([`Sublinks`]) as both engines gather them: each walks
//! the statement once more (only when it has a sublink), scoped like the
//! condition pass, and fills [`Regions`]; [`Regions::finish`], shared, then
//! follows CTE references and builds the summary, so that what the engines
//! cannot disagree on is written once.

use super::MAX_SUBLINK_TABLES;
use crate::summary::{ColumnRef, Condition, Sublink, Sublinks, TableRef};

/// Region 0: everything outside sublinks; region `i + 1`: sublink `i`'s own
/// part (not the sublinks nested in it, which are regions of their own).
pub(super) const OUTSIDE: usize = 0;

/// What a region walk found.
#[derive(Default)]
pub(super) struct Regions {
    /// Per region: the tables it reads itself (CTE bodies defined in it
    /// included, wherever referenced).
    tables: Vec<Vec<TableRef>>,
    /// Per region: the CTEs (by number) it references.
    refs: Vec<Vec<usize>>,
    /// Per CTE number: the tables its body reads itself (not in sublinks or
    /// CTE bodies nested in it), and the CTEs its body references or
    /// defines.
    cte_tables: Vec<Vec<TableRef>>,
    cte_refs: Vec<Vec<usize>>,
    other_names: Vec<String>,
    unnamed_item: bool,
}

/// A sublink's own level, read by an engine: see [`Sublink::from_tables`],
/// [`Sublink::equalities`] and [`Sublink::in_key`].
#[derive(Default)]
pub(super) struct OwnLevel {
    pub from_tables: Vec<TableRef>,
    pub equalities: Vec<(ColumnRef, ColumnRef)>,
    pub in_key: Option<(ColumnRef, ColumnRef)>,
}

impl OwnLevel {
    /// Note `a = b` between two columns, the pair in ascending order.
    pub fn equality(&mut self, a: ColumnRef, b: ColumnRef) {
        self.equalities.push(if a <= b { (a, b) } else { (b, a) });
    }
}

impl Regions {
    pub fn new() -> Regions {
        let mut regions = Regions::default();
        regions.tables.push(Vec::new());
        regions.refs.push(Vec::new());
        regions
    }

    /// Open the region of a new sublink; its number.
    pub fn new_sublink(&mut self) -> usize {
        self.tables.push(Vec::new());
        self.refs.push(Vec::new());
        self.tables.len() - 1
    }

    /// Region `region` (inside the body of CTE `cte`, if any) reads `table`.
    pub fn table(&mut self, region: usize, cte: Option<usize>, table: TableRef) {
        if let Some(cte) = cte {
            grow(&mut self.cte_tables, cte).push(table.clone());
        }
        if let Some(tables) = self.tables.get_mut(region) {
            tables.push(table);
        }
    }

    /// Region `region` (inside the body of CTE `cte`, if any) references
    /// CTE `target`, called `name` there.
    pub fn reference(&mut self, region: usize, cte: Option<usize>, target: usize, name: &str) {
        if let Some(cte) = cte {
            grow(&mut self.cte_refs, cte).push(target);
        }
        if let Some(refs) = self.refs.get_mut(region) {
            refs.push(target);
        }
        self.name(name);
    }

    /// The body of CTE `inner` is defined inside the body of CTE `outer`.
    pub fn contains(&mut self, outer: Option<usize>, inner: usize) {
        if let Some(outer) = outer {
            grow(&mut self.cte_refs, outer).push(inner);
        }
    }

    /// A FROM item other than a table goes by `name`.
    pub fn name(&mut self, name: &str) {
        self.other_names.push(name.to_owned());
    }

    /// A FROM item goes by a name that cannot be told.
    pub fn unnamed(&mut self) {
        self.unnamed_item = true;
    }

    /// The summary's facts, given each sublink's conditions and own level
    /// (in region order) and which unqualified names are CTE names (such
    /// names are never tables, as in the statement's `tables`).
    pub fn finish(
        mut self,
        levels: Vec<(Vec<Condition>, OwnLevel)>,
        is_cte: impl Fn(&str) -> bool,
    ) -> Sublinks {
        let not_cte = |table: &TableRef| table.schema.is_some() || !is_cte(&table.name);
        let mut seen: Vec<usize> = Vec::new();
        let mut pending = Vec::new();
        let mut subqueries = Vec::with_capacity(levels.len());
        for (index, (conditions, own)) in levels.into_iter().enumerate() {
            let region = index + 1;
            let mut tables = std::mem::take(&mut self.tables[region]);
            // Follow the CTEs it references, counting what they read.
            let mut count = tables.len();
            let mut closure = Vec::new();
            pending.clear();
            pending.extend(self.refs[region].iter().copied());
            while let Some(cte) = pending.pop() {
                if count > MAX_SUBLINK_TABLES {
                    break;
                }
                let mark = grow(&mut seen, cte);
                if *mark == region {
                    continue;
                }
                *mark = region;
                closure.push(cte);
                count += 1 + self.cte_tables.get(cte).map_or(0, Vec::len);
                pending.extend(self.cte_refs.get(cte).into_iter().flatten().copied());
            }
            let reads_every_table = count > MAX_SUBLINK_TABLES;
            if reads_every_table {
                tables.clear();
            } else {
                for cte in closure {
                    if let Some(more) = self.cte_tables.get(cte) {
                        tables.extend(more.iter().cloned());
                    }
                }
                tables.retain(not_cte);
            }
            let OwnLevel {
                mut from_tables,
                equalities,
                in_key,
            } = own;
            from_tables.retain(not_cte);
            subqueries.push(Sublink {
                tables,
                reads_every_table,
                conditions,
                from_tables,
                equalities,
                in_key,
            });
        }
        let mut tables_outside = std::mem::take(&mut self.tables[OUTSIDE]);
        tables_outside.retain(not_cte);
        Sublinks {
            subqueries,
            tables_outside,
            other_names: self.other_names,
            unnamed_item: self.unnamed_item,
        }
    }
}

/// `list[index]`, growing the list as needed.
fn grow<T: Default>(list: &mut Vec<T>, index: usize) -> &mut T {
    if list.len() <= index {
        list.resize_with(index + 1, T::default);
    }
    &mut list[index]
}
