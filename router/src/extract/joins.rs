//! The join facts ([`Joins`]) as both engines gather them: each engine
//! walks the statement once more (only when it has a join, a FROM list of
//! two or more items, an UPDATE ... FROM, a DELETE ... USING or a MERGE),
//! reads every query level's FROM through a [`LevelBuilder`] and every
//! subquery and CTE body it may join into [`QueryFacts`]; [`finish`],
//! shared, then turns references to CTEs into derived items, follows the
//! CTEs a derived item names, and builds the summary, so that what the
//! engines cannot disagree on is written once.

use super::MAX_SUBLINK_TABLES;
use crate::summary::{
    ColumnRef, Condition, Derived, FromItem, JoinEquality, JoinLevel, JoinUsing, Joins, OuterJoin,
    OuterKind, TableRef,
};

/// One level as an engine read it: tables that may turn out to be CTE
/// references, subqueries with their queries' facts.
#[derive(Default)]
pub(super) struct RawLevel {
    items: Vec<RawItem>,
    outer_joins: Vec<OuterJoin>,
    equalities: Vec<JoinEquality>,
    usings: Vec<JoinUsing>,
    conditions: Vec<Condition>,
}

pub(super) enum RawItem {
    /// A RangeVar, with its alias's column names.
    Table {
        table: TableRef,
        colnames: Vec<String>,
    },
    /// A RangeSubselect.
    Subquery {
        name: Option<String>,
        lateral: bool,
        colnames: Vec<String>,
        query: QueryFacts,
    },
}

/// What joining a subquery or CTE body needs to know about its query.
#[derive(Default, Clone)]
pub(super) struct QueryFacts {
    /// Every RangeVar under it (CTE references included), at most
    /// [`MAX_SUBLINK_TABLES`] + 1.
    pub tables: Vec<TableRef>,
    /// Its own level, when it is a SELECT without a set operation.
    pub own: Option<OwnFacts>,
}

/// A plain SELECT's own level.
#[derive(Default, Clone)]
pub(super) struct OwnFacts {
    /// Its FROM's RangeVars (through joins of every kind), without those
    /// with column aliases.
    pub from_tables: Vec<TableRef>,
    /// Its select list, in order.
    pub targets: Vec<Target>,
    /// Column equalities AND-ed into its WHERE and the ON of INNER joins
    /// reached through preserved sides.
    pub equalities: Vec<(ColumnRef, ColumnRef)>,
    /// Its key condition (WHERE AND-ed with those ONs), if any.
    pub conditions: Vec<Condition>,
}

/// One select-list item.
#[derive(Clone)]
pub(super) enum Target {
    /// A plain column, output as `name`.
    Column(String, ColumnRef),
    /// `*` (`None`) or `t.*`.
    Star(Option<String>),
    /// Anything else.
    Other,
}

impl OwnFacts {
    /// Note `a = b` between two columns, the pair in ascending order.
    pub fn equality(&mut self, a: ColumnRef, b: ColumnRef) {
        self.equalities.push(if a <= b { (a, b) } else { (b, a) });
    }
}

/// Builds one level's [`RawLevel`] as an engine walks its FROM: items in
/// leaf order, each join opened before its left side, marked between its
/// sides and closed after its right side.
#[derive(Default)]
pub(super) struct LevelBuilder {
    level: RawLevel,
    /// Per join opened: where its items start, where its right side starts,
    /// and its outer join, if it is one.
    joins: Vec<OpenJoin>,
}

struct OpenJoin {
    start: usize,
    mid: usize,
    outer: Option<usize>,
    using: Vec<String>,
    natural: bool,
}

impl LevelBuilder {
    pub fn item(&mut self, item: RawItem) {
        self.level.items.push(item);
    }

    /// Open a join (`outer`: its kind, `None` for INNER or CROSS) with its
    /// USING columns or NATURAL; returns its number for [`Self::mid`],
    /// [`Self::close`] and [`Self::outer`].
    pub fn open(&mut self, outer: Option<OuterKind>, using: Vec<String>, natural: bool) -> usize {
        let start = self.level.items.len();
        let outer = outer.map(|kind| {
            self.level.outer_joins.push(OuterJoin {
                kind,
                left: (start, start),
                right: (start, start),
            });
            self.level.outer_joins.len() - 1
        });
        self.joins.push(OpenJoin {
            start,
            mid: start,
            outer,
            using,
            natural,
        });
        self.joins.len() - 1
    }

    /// The outer join that join `join` is, if it is one.
    pub fn outer(&self, join: usize) -> Option<usize> {
        self.joins.get(join).and_then(|open| open.outer)
    }

    /// Join `join`'s left side is done.
    pub fn mid(&mut self, join: usize) {
        let at = self.level.items.len();
        if let Some(open) = self.joins.get_mut(join) {
            open.mid = at;
        }
    }

    /// Join `join`'s right side is done.
    pub fn close(&mut self, join: usize) {
        let end = self.level.items.len();
        let Some(open) = self.joins.get_mut(join) else {
            return;
        };
        let left = (open.start, open.mid);
        let right = (open.mid, end);
        if let Some(outer) = open.outer.and_then(|o| self.level.outer_joins.get_mut(o)) {
            outer.left = left;
            outer.right = right;
        }
        if open.natural || !open.using.is_empty() {
            self.level.usings.push(JoinUsing {
                left,
                right,
                columns: std::mem::take(&mut open.using),
                natural: open.natural,
                outer: open.outer,
            });
        }
    }

    /// `a = b` in the WHERE or an INNER join's ON (`outer: None`), or in
    /// the ON of outer join `outer`.
    pub fn equality(&mut self, a: ColumnRef, b: ColumnRef, outer: Option<usize>) {
        let (left, right) = if a <= b { (a, b) } else { (b, a) };
        self.level
            .equalities
            .push(JoinEquality { left, right, outer });
    }

    /// AND a condition into the level's own.
    pub fn condition(&mut self, condition: Condition) {
        self.level.conditions.push(condition);
    }

    /// The level, if it has two items or more, or an item and an outer
    /// join (whose other side may be a function or VALUES).
    pub fn finish(mut self) -> Option<RawLevel> {
        let items = self.level.items.len();
        if items < 2 && (items == 0 || self.level.outer_joins.is_empty()) {
            return None;
        }
        let conditions = std::mem::take(&mut self.level.conditions);
        self.level.conditions.extend(and_all(conditions));
        Some(self.level)
    }
}

/// A list of conditions AND-ed: one as is, none gives none.
pub(super) fn and_all(mut conditions: Vec<Condition>) -> Option<Condition> {
    match conditions.len() {
        0 | 1 => conditions.pop(),
        _ => Some(Condition::And(conditions)),
    }
}

/// A CTE of the statement: its name, its column names and its body's facts.
pub(super) struct RawCte {
    pub name: String,
    pub colnames: Vec<String>,
    pub query: QueryFacts,
}

/// The summary's facts from the levels and CTEs an engine read; `None`
/// when no level joins two items.
pub(super) fn finish(levels: Vec<RawLevel>, mut ctes: Vec<RawCte>) -> Option<Box<Joins>> {
    if levels.is_empty() {
        return None;
    }
    ctes.sort_by(|a, b| a.name.cmp(&b.name));
    let ctes = Ctes { ctes };
    let levels = levels
        .into_iter()
        .map(|level| JoinLevel {
            items: level
                .items
                .into_iter()
                .map(|item| ctes.item(item))
                .collect(),
            outer_joins: level.outer_joins,
            equalities: level.equalities,
            usings: level.usings,
            conditions: level.conditions,
        })
        .collect();
    Some(Box::new(Joins { levels }))
}

/// The statement's CTEs, sorted by name.
struct Ctes {
    ctes: Vec<RawCte>,
}

impl Ctes {
    /// The CTEs called `name` (an unqualified reference to one of them).
    fn named(&self, name: &str) -> &[RawCte] {
        let from = self.ctes.partition_point(|cte| cte.name.as_str() < name);
        let to = from + self.ctes[from..].partition_point(|cte| cte.name.as_str() == name);
        &self.ctes[from..to]
    }

    fn is_cte(&self, table: &TableRef) -> bool {
        table.schema.is_none() && !self.named(&table.name).is_empty()
    }

    fn item(&self, item: RawItem) -> FromItem {
        match item {
            RawItem::Table { table, colnames } if self.is_cte(&table) => {
                let name = table.alias.clone().unwrap_or_else(|| table.name.clone());
                match self.named(&table.name) {
                    [cte] => {
                        self.derived(Some(name), false, &[&cte.colnames, &colnames], &cte.query)
                    }
                    // Several CTEs of that name in different scopes: which
                    // one is meant is not told here.
                    _ => FromItem::Derived(Box::new(Derived {
                        name: Some(name),
                        lateral: false,
                        tables: Vec::new(),
                        reads_every_table: true,
                        from_tables: Vec::new(),
                        columns: Vec::new(),
                        stars: Vec::new(),
                        equalities: Vec::new(),
                        conditions: Vec::new(),
                    })),
                }
            }
            RawItem::Table { table, colnames } => FromItem::Table {
                table,
                renamed: !colnames.is_empty(),
            },
            RawItem::Subquery {
                name,
                lateral,
                colnames,
                query,
            } => self.derived(name, lateral, &[&colnames], &query),
        }
    }

    /// A derived item reading `query`, its columns renamed by each list of
    /// `renames` in turn.
    fn derived(
        &self,
        name: Option<String>,
        lateral: bool,
        renames: &[&[String]],
        query: &QueryFacts,
    ) -> FromItem {
        let (tables, reads_every_table) = self.tables(query);
        let mut derived = Derived {
            name,
            lateral,
            tables,
            reads_every_table,
            from_tables: Vec::new(),
            columns: Vec::new(),
            stars: Vec::new(),
            equalities: Vec::new(),
            conditions: Vec::new(),
        };
        if let (Some(own), false) = (&query.own, reads_every_table) {
            derived.from_tables = own
                .from_tables
                .iter()
                .filter(|table| !self.is_cte(table))
                .cloned()
                .collect();
            let mut targets = own.targets.clone();
            for names in renames {
                rename(&mut targets, names);
            }
            for target in targets {
                match target {
                    Target::Column(name, column) => derived.columns.push((name, column)),
                    Target::Star(qualifier) => derived.stars.push(qualifier),
                    Target::Other => {}
                }
            }
            if lateral {
                derived.equalities = own.equalities.clone();
            }
            derived.conditions = own.conditions.clone();
        }
        FromItem::Derived(Box::new(derived))
    }

    /// The tables `query` names and those of the CTEs it names,
    /// transitively (every CTE of a name), and whether there were more
    /// than [`MAX_SUBLINK_TABLES`] (counted with repeats).
    fn tables(&self, query: &QueryFacts) -> (Vec<TableRef>, bool) {
        let mut tables = Vec::new();
        let mut seen = vec![false; self.ctes.len()];
        let mut pending: Vec<&QueryFacts> = vec![query];
        let mut count = 0;
        while let Some(facts) = pending.pop() {
            count += facts.tables.len();
            if count > MAX_SUBLINK_TABLES {
                return (Vec::new(), true);
            }
            for table in &facts.tables {
                if !self.is_cte(table) {
                    tables.push(table.clone());
                    continue;
                }
                let from = self
                    .ctes
                    .partition_point(|cte| cte.name.as_str() < table.name.as_str());
                for (index, cte) in self.ctes.iter().enumerate().skip(from) {
                    if cte.name != table.name {
                        break;
                    }
                    if !seen[index] {
                        seen[index] = true;
                        pending.push(&cte.query);
                    }
                }
            }
        }
        (tables, false)
    }
}

/// Rename a select list's outputs by position, as column aliases do. The
/// positions after a `*` are not known: a `*` the aliases reach, and what
/// follows it, are dropped.
fn rename(targets: &mut Vec<Target>, names: &[String]) {
    for (position, name) in names.iter().enumerate() {
        match targets.get_mut(position) {
            Some(Target::Column(output, _)) => output.clone_from(name),
            Some(Target::Star(_)) => {
                targets.truncate(position);
                return;
            }
            Some(Target::Other) => {}
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str) -> Target {
        Target::Column(
            name.to_owned(),
            ColumnRef {
                table: None,
                column: name.to_owned(),
            },
        )
    }

    fn names(targets: &[Target]) -> Vec<String> {
        targets
            .iter()
            .map(|target| match target {
                Target::Column(name, _) => name.clone(),
                Target::Star(_) => "*".to_owned(),
                Target::Other => "?".to_owned(),
            })
            .collect()
    }

    #[test]
    fn column_aliases_rename_by_position_up_to_a_star() {
        let rename_to = |targets: &[Target], to: &[&str]| {
            let mut targets = targets.to_vec();
            let to: Vec<String> = to.iter().map(|s| (*s).to_owned()).collect();
            rename(&mut targets, &to);
            names(&targets)
        };
        let list = [column("a"), Target::Other, column("b")];
        assert_eq!(rename_to(&list, &["x", "y"]), ["x", "?", "b"]);
        assert_eq!(rename_to(&list, &["x", "y", "z", "w"]), ["x", "?", "z"]);
        let star = [column("a"), Target::Star(None), column("b")];
        assert_eq!(rename_to(&star, &["x"]), ["x", "*", "b"]);
        assert_eq!(rename_to(&star, &["x", "y"]), ["x"]);
    }
}
