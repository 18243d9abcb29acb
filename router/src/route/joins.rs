//! Rule 13: joins. Postgres joins, on each database, the rows that
//! database holds, so a query level that joins sharded tables (or unknown
//! or family ones, or subqueries and CTEs reading them) answers exactly only
//! when the rows it pairs up live on the same database: when its items are
//! connected by equalities between co-located sharding keys, or all
//! restricted to one database. [`plan`] connects each level's items once
//! per statement and config; [`JoinPlan::check`] evaluates, per execution,
//! where the parts of a level that are not connected live.

use std::collections::HashMap;

use crate::sharding::{Key, KeySpace, Sharding};
use crate::summary::{
    ColumnRef, Derived, FromItem, JoinLevel, JoinUsing, OuterKind, StatementSummary, TableRef,
};

use super::facts::table_facts;
use super::key_values;
use super::keys::{restrict, Compiled, Keys, Restriction};
use super::shard_set::ShardSet;
use super::tables::{classify, key_spaces, named, TableClass};
use super::{ParamValue, Route, RouteError};

/// The levels of a statement whose parts must be checked per execution.
#[derive(Debug, Clone)]
pub(super) struct JoinPlan {
    levels: Vec<LevelPlan>,
}

/// A level whose sharded items are not all connected, or that preserves
/// rows every database holds in an outer join with sharded rows.
#[derive(Debug, Clone)]
struct LevelPlan {
    /// Its connected parts (at least one).
    parts: Vec<Part>,
    /// The sharded item an outer join matches with rows every database
    /// holds, keeping those rows: then the statement must run on one
    /// database, which every part is restricted to.
    everywhere: Option<Label>,
}

/// Items of a level connected by co-located keys: their rows meet on one
/// database. Where they live: the level's condition as it names their
/// tables, their derived items' own conditions and their family tables.
#[derive(Debug, Clone)]
struct Part {
    conditions: Vec<Compiled>,
    families: Option<ShardSet>,
    /// Its family tables and derived items live on no common database: it
    /// pairs no rows.
    empty: bool,
    label: Label,
}

/// A sharded item, as an error names it.
#[derive(Debug, Clone)]
struct Label {
    table: String,
    what: &'static str,
}

const SHARDED: &str = "is sharded";
const UNKNOWN: &str = "is not in the sharding config (so is treated as sharded)";
const FAMILY: &str = "is a sharded table family";
const OPAQUE: &str =
    "may read sharded tables (it names too many tables, or a CTE name defined twice, to tell)";

/// The levels of `stmt` to check per execution; an error if some level can
/// never be exact.
pub(super) fn plan(
    stmt: &StatementSummary,
    sharding: &Sharding,
) -> Result<Option<JoinPlan>, RouteError> {
    let Some(joins) = stmt.joins.as_deref() else {
        return Ok(None);
    };
    let mut levels = Vec::new();
    for level in &joins.levels {
        if let Some(plan) = Level::new(level, sharding)?.plan()? {
            levels.push(plan);
        }
    }
    Ok((!levels.is_empty()).then_some(JoinPlan { levels }))
}

impl JoinPlan {
    /// Whether the levels are exact with these parameters when the
    /// statement runs on `route`.
    pub(super) fn check(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        route: &Route,
    ) -> Result<(), RouteError> {
        self.levels
            .iter()
            .try_for_each(|level| level.check(params, sharding, route))
    }
}

impl LevelPlan {
    fn check(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        route: &Route,
    ) -> Result<(), RouteError> {
        // The parts that may pair rows, and the databases they live on
        // (`None`: anywhere).
        let mut live: Vec<(Option<ShardSet>, &Part)> = Vec::new();
        for part in &self.parts {
            if part.empty {
                continue;
            }
            match restrict(&part.conditions, params, sharding, part.families.clone())? {
                // No row of it matches: it pairs nothing wherever it runs.
                Restriction::Nothing(_) => {}
                Restriction::Free => live.push((None, part)),
                Restriction::Set(set) => live.push((Some(set), part)),
            }
        }
        let single = |set: &Option<ShardSet>| match set {
            Some(set) if set.len() == 1 => set.first(),
            _ => None,
        };
        if let Some(label) = &self.everywhere {
            let on_one = match route {
                Route::Shard(database) => {
                    live.iter().all(|(set, _)| single(set) == Some(*database))
                }
                _ => false,
            };
            if !on_one {
                return Err(RouteError::OuterJoinEverywhere {
                    table: label.table.clone(),
                    what: label.what,
                });
            }
            return Ok(());
        }
        let Some(((first_set, first), rest)) = live.split_first() else {
            return Ok(());
        };
        let database = single(first_set);
        let other = rest
            .iter()
            .find(|(set, _)| database.is_none() || single(set) != database);
        match other {
            Some((_, second)) => Err(RouteError::JoinWithoutKey {
                first: first.label.table.clone(),
                first_what: first.label.what,
                second: second.label.table.clone(),
                second_what: second.label.what,
            }),
            None => Ok(()),
        }
    }
}

/// One level being connected.
struct Level<'a> {
    level: &'a JoinLevel,
    sharding: &'a Sharding,
    /// Per item: what it is if it reads sharded rows, and the databases
    /// its family tables put it on.
    nodes: Vec<Option<(Label, Option<ShardSet>)>>,
    /// Union-find over the items.
    parent: Vec<usize>,
    /// The columns of `[[sharded_tables]]` (what NATURAL may join on).
    key_columns: Vec<&'a str>,
    /// The names qualifiers give the items, sorted (name, item).
    names: Vec<(&'a str, usize)>,
    /// For an unqualified column: the sharded items keyed by that name,
    /// with their key spaces.
    keyed: HashMap<&'a str, Vec<(usize, Vec<&'a KeySpace>)>>,
}

/// Passes over a level's outer joins before giving up connecting more: the
/// joins are visited innermost first, so nested joins connect in one pass;
/// a further pass is needed only when an enclosing join's ON connects a
/// side an inner join keeps. Stopping early connects less, which refuses
/// more, never less.
const MAX_PASSES: usize = 8;

impl<'a> Level<'a> {
    fn new(level: &'a JoinLevel, sharding: &'a Sharding) -> Result<Level<'a>, RouteError> {
        let mut nodes = Vec::with_capacity(level.items.len());
        for item in &level.items {
            nodes.push(node(item, sharding)?);
        }
        let mut key_columns: Vec<&str> =
            sharding.tables.iter().map(|e| e.column.as_str()).collect();
        key_columns.sort_unstable();
        key_columns.dedup();
        let mut names: Vec<(&str, usize)> = level
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let name = match item {
                    FromItem::Table { table, .. } => table.alias.as_deref().unwrap_or(&table.name),
                    FromItem::Derived(derived) => derived.name.as_deref()?,
                };
                Some((name, i))
            })
            .collect();
        names.sort_unstable();
        let mut this = Level {
            level,
            sharding,
            nodes,
            parent: (0..level.items.len()).collect(),
            key_columns,
            names,
            keyed: HashMap::new(),
        };
        // The names an item is keyed by: a sharding key column, or a
        // derived item's output name.
        for (i, item) in level.items.iter().enumerate() {
            if this.nodes[i].is_none() {
                continue;
            }
            let outputs = match item {
                FromItem::Derived(derived) => derived.columns.as_slice(),
                FromItem::Table { .. } => &[],
            };
            let mut candidates: Vec<&'a str> = this.key_columns.clone();
            candidates.extend(outputs.iter().map(|(name, _)| name.as_str()));
            candidates.sort_unstable();
            candidates.dedup();
            for name in candidates {
                let spaces = this.spaces(i, name);
                if !spaces.is_empty() {
                    this.keyed.entry(name).or_default().push((i, spaces));
                }
            }
        }
        Ok(this)
    }

    /// What to check per execution, if anything; an error if nothing can
    /// make the level exact.
    fn plan(mut self) -> Result<Option<LevelPlan>, RouteError> {
        let everywhere = self.everywhere();
        if self.nodes.iter().flatten().count() < 2 && everywhere.is_none() {
            return Ok(None);
        }
        self.connect();
        let parts = self.parts();
        if parts.len() < 2 && everywhere.is_none() {
            return Ok(None);
        }
        let plan = LevelPlan { parts, everywhere };
        if plan.everywhere.is_none()
            && plan
                .parts
                .iter()
                .all(|part| part.conditions.iter().all(Compiled::is_fixed))
        {
            // No parameter can change the outcome: settle it now.
            plan.check(&[], self.sharding, &Route::All)?;
            return Ok(None);
        }
        Ok(Some(plan))
    }

    /// The first sharded item an outer join matches with rows every
    /// database holds (no sharded item on a side it keeps), if any.
    fn everywhere(&self) -> Option<Label> {
        let first = |(start, end): (usize, usize)| {
            self.nodes
                .get(start..end)
                .and_then(|side| side.iter().flatten().next())
                .map(|(label, _)| label.clone())
        };
        self.level.outer_joins.iter().find_map(|join| {
            let (left, right) = (first(join.left), first(join.right));
            match join.kind {
                OuterKind::Left if left.is_none() => right,
                OuterKind::Right if right.is_none() => left,
                OuterKind::Full if left.is_none() || right.is_none() => left.or(right),
                _ => None,
            }
        })
    }

    /// Union the items that co-located key equalities connect: those of the
    /// WHERE and INNER joins at once; an outer join's, until nothing more
    /// changes, those between two items of its nullable side (the rows of
    /// that side that fail them are dropped) and those between its sides
    /// when each side it keeps is connected (each kept row then meets its
    /// partners on its own database, and is null-extended there when it
    /// has none anywhere). An outer join's ON never connects two items of
    /// a side it keeps: it filters none of their rows.
    fn connect(&mut self) {
        let joins = self.level.outer_joins.len();
        let mut on: Vec<Vec<(usize, usize)>> = vec![Vec::new(); joins];
        let mut filters = Vec::new();
        for equality in &self.level.equalities {
            let pairs = self.pairs(&equality.left, &equality.right);
            match equality.outer.and_then(|k| on.get_mut(k)) {
                Some(list) => list.extend(pairs),
                None => filters.extend(pairs),
            }
        }
        for using in &self.level.usings {
            let pairs = self.using_pairs(using);
            match using.outer.and_then(|k| on.get_mut(k)) {
                Some(list) => list.extend(pairs),
                None => filters.extend(pairs),
            }
        }
        for (i, j) in self.lateral_pairs() {
            match self.separating(i, j).and_then(|k| on.get_mut(k)) {
                Some(list) => list.push((i, j)),
                None => filters.push((i, j)),
            }
        }
        for (i, j) in filters {
            self.union(i, j);
        }
        let inside = |i: usize, (start, end): (usize, usize)| start <= i && i < end;
        for _ in 0..MAX_PASSES {
            let mut changed = false;
            // Pre-order reversed: a join's inner joins before it.
            for (k, join) in self.level.outer_joins.iter().enumerate().rev() {
                let (left, right) = (join.left, join.right);
                let nullable = match join.kind {
                    OuterKind::Left => Some(right),
                    OuterKind::Right => Some(left),
                    OuterKind::Full => None,
                };
                if let Some(side) = nullable {
                    for &(i, j) in &on[k] {
                        if inside(i, side) && inside(j, side) {
                            changed |= self.union(i, j);
                        }
                    }
                }
                let kept_connected = match join.kind {
                    OuterKind::Left => self.connected(left),
                    OuterKind::Right => self.connected(right),
                    OuterKind::Full => self.connected(left) && self.connected(right),
                };
                if kept_connected {
                    for &(i, j) in &on[k] {
                        if (inside(i, left) && inside(j, right))
                            || (inside(i, right) && inside(j, left))
                        {
                            changed |= self.union(i, j);
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The level's connected parts, with where their rows may live.
    fn parts(&mut self) -> Vec<Part> {
        let items = &self.level.items;
        let tables: Vec<TableRef> = items
            .iter()
            .filter_map(|item| match item {
                FromItem::Table { table, .. } => Some(table.clone()),
                FromItem::Derived(_) => None,
            })
            .collect();
        // Each part's items, in item order, parts in the order of their
        // first item.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of: HashMap<usize, usize> = HashMap::new();
        for i in 0..items.len() {
            if self.nodes[i].is_none() {
                continue;
            }
            let root = self.find(i);
            let group = *group_of.entry(root).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[group].push(i);
        }
        let mut parts = Vec::with_capacity(groups.len());
        for members in groups {
            // Tables whose columns are what their names say.
            let own: Vec<TableRef> = members
                .iter()
                .filter_map(|&i| match &items[i] {
                    FromItem::Table {
                        table,
                        renamed: false,
                    } => Some(table.clone()),
                    _ => None,
                })
                .collect();
            let keys = Keys {
                tables: &tables,
                sharding: self.sharding,
                only: Some(&own),
            };
            let mut conditions: Vec<Compiled> = self
                .level
                .conditions
                .iter()
                .map(|condition| keys.compile(condition, 0))
                .collect();
            let mut families: Option<ShardSet> = None;
            let mut empty = false;
            for &i in &members {
                if let FromItem::Derived(derived) = &items[i] {
                    let keys = Keys {
                        tables: &derived.from_tables,
                        sharding: self.sharding,
                        only: None,
                    };
                    conditions.extend(
                        derived
                            .conditions
                            .iter()
                            .map(|condition| keys.compile(condition, 0)),
                    );
                }
                if let Some((_, Some(set))) = &self.nodes[i] {
                    match &mut families {
                        None => families = Some(set.clone()),
                        Some(families) => {
                            families.intersect_with(set);
                            empty |= families.is_empty();
                        }
                    }
                }
            }
            let label = members
                .first()
                .and_then(|&i| self.nodes[i].as_ref())
                .map(|(label, _)| label.clone())
                .unwrap_or(Label {
                    table: String::new(),
                    what: SHARDED,
                });
            parts.push(Part {
                conditions,
                families: families.filter(|_| !empty),
                empty,
                label,
            });
        }
        parts
    }

    /// Whether the sharded items of `items[start..end]` (at least one) are
    /// connected.
    fn connected(&mut self, (start, end): (usize, usize)) -> bool {
        let mut root = None;
        for i in start..end.min(self.nodes.len()) {
            if self.nodes[i].is_none() {
                continue;
            }
            let found = self.find(i);
            match root {
                None => root = Some(found),
                Some(root) if root != found => return false,
                Some(_) => {}
            }
        }
        root.is_some()
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Connect items `i` and `j`; whether they were apart.
    fn union(&mut self, i: usize, j: usize) -> bool {
        let (a, b) = (self.find(i), self.find(j));
        if a == b {
            return false;
        }
        self.parent[a.max(b)] = a.min(b);
        true
    }

    /// The sharded items `a = b` connects: pairs of items whose columns
    /// `a` and `b` are sharding keys in one key space.
    fn pairs(&self, a: &ColumnRef, b: &ColumnRef) -> Vec<(usize, usize)> {
        let left = self.resolve(a);
        let right = self.resolve(b);
        let mut pairs = Vec::new();
        for (i, left) in &left {
            for (j, right) in &right {
                if i != j && left.iter().any(|space| right.contains(space)) {
                    pairs.push((*i, *j));
                }
            }
        }
        pairs
    }

    /// The sharded items whose sharding key `column` can be: the item its
    /// qualifier names, or, unqualified, every item keyed by that name (an
    /// item has its key column, so Postgres resolves the name at this
    /// level, or finds it ambiguous).
    fn resolve(&self, column: &ColumnRef) -> Vec<(usize, Vec<&'a KeySpace>)> {
        match &column.table {
            Some(qualifier) => self
                .named_item(qualifier)
                .filter(|&i| self.nodes[i].is_some())
                .map(|i| (i, self.spaces(i, &column.column)))
                .filter(|(_, spaces)| !spaces.is_empty())
                .into_iter()
                .collect(),
            None => self
                .keyed
                .get(column.column.as_str())
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The item a qualifier names: a table by its alias (its name when it
    /// has none), a derived item by its name; the first, if several.
    fn named_item(&self, qualifier: &str) -> Option<usize> {
        let at = self.names.partition_point(|&(name, _)| name < qualifier);
        self.names
            .get(at)
            .filter(|&&(name, _)| name == qualifier)
            .map(|&(_, i)| i)
    }

    /// The key spaces in which `column` of item `i` is a sharding key.
    fn spaces(&self, i: usize, column: &str) -> Vec<&'a KeySpace> {
        let sharding = self.sharding;
        match &self.level.items[i] {
            FromItem::Table {
                table,
                renamed: false,
            } => key_spaces(table, column, sharding),
            FromItem::Table { renamed: true, .. } => Vec::new(),
            FromItem::Derived(derived) => exposed(derived, column, sharding),
        }
    }

    /// The items a USING or NATURAL join connects: those of its two sides
    /// keyed, in one key space, by a column it joins on.
    fn using_pairs(&self, using: &JoinUsing) -> Vec<(usize, usize)> {
        let columns: Vec<&str> = if using.natural {
            self.key_columns.clone()
        } else {
            using.columns.iter().map(String::as_str).collect()
        };
        let mut pairs = Vec::new();
        for column in columns {
            for i in using.left.0..using.left.1 {
                let left = self.spaces(i, column);
                if left.is_empty() || self.nodes[i].is_none() {
                    continue;
                }
                for j in using.right.0..using.right.1 {
                    if self.nodes[j].is_some()
                        && self
                            .spaces(j, column)
                            .iter()
                            .any(|space| left.contains(space))
                    {
                        pairs.push((i, j));
                    }
                }
            }
        }
        pairs
    }

    /// LATERAL subqueries correlated with an item before them on a
    /// co-located key (`LATERAL (SELECT ... FROM orders o WHERE o.user_id =
    /// u.id)`): each of their rows lives where the item's row does.
    fn lateral_pairs(&self) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for (i, item) in self.level.items.iter().enumerate() {
            let FromItem::Derived(derived) = item else {
                continue;
            };
            if !derived.lateral || self.nodes[i].is_none() {
                continue;
            }
            for (a, b) in &derived.equalities {
                for (inner, outer) in [(a, b), (b, a)] {
                    let Some(qualifier) = outer.table.as_deref() else {
                        continue;
                    };
                    if derived.from_tables.iter().any(|t| named(t, qualifier)) {
                        continue;
                    }
                    let Some(j) = self.named_item(qualifier) else {
                        continue;
                    };
                    if j == i || self.nodes[j].is_none() {
                        continue;
                    }
                    let inner_spaces: Vec<&KeySpace> = derived
                        .from_tables
                        .iter()
                        .filter(|t| inner.table.as_deref().is_none_or(|q| named(t, q)))
                        .flat_map(|t| key_spaces(t, &inner.column, self.sharding))
                        .collect();
                    if self
                        .spaces(j, &outer.column)
                        .iter()
                        .any(|space| inner_spaces.contains(space))
                    {
                        pairs.push((i, j));
                    }
                }
            }
        }
        pairs
    }

    /// The outer join whose sides hold items `i` and `j` apart (their
    /// lowest common join), if it is an outer one.
    fn separating(&self, i: usize, j: usize) -> Option<usize> {
        let inside = |i: usize, (start, end): (usize, usize)| start <= i && i < end;
        self.level.outer_joins.iter().position(|join| {
            (inside(i, join.left) && inside(j, join.right))
                || (inside(i, join.right) && inside(j, join.left))
        })
    }
}

/// What an item is, if it reads sharded (or unknown, or family) rows, and
/// the databases its family tables live on.
fn node(
    item: &FromItem,
    sharding: &Sharding,
) -> Result<Option<(Label, Option<ShardSet>)>, RouteError> {
    let label = |table: String, what| Label { table, what };
    Ok(match item {
        FromItem::Table { table, .. } => {
            // `users u`: a table joined with itself is told apart.
            let name = match &table.alias {
                Some(alias) if *alias != table.name => format!("{} {alias}", table.name),
                _ => table.name.clone(),
            };
            match classify(table, sharding) {
                TableClass::Sharded => Some((label(name, SHARDED), None)),
                TableClass::Unknown => Some((label(name, UNKNOWN), None)),
                TableClass::Family { family, key } => {
                    let database =
                        key_values::database(sharding, &family.keys, &Key::Int(key), || {
                            format!("table {}", table.name)
                        })?;
                    let set = ShardSet::single(sharding.databases, database);
                    Some((label(name, FAMILY), Some(set)))
                }
                TableClass::Omnisharded | TableClass::Catalog => None,
            }
        }
        FromItem::Derived(derived) => {
            let by = derived.name.as_deref().unwrap_or("a subquery");
            if derived.reads_every_table {
                return Ok(Some((label(format!("subquery {by}"), OPAQUE), None)));
            }
            let facts = table_facts(None, &derived.tables, sharding)?;
            facts.first_read.map(|(table, what)| {
                (
                    label(format!("{table} (read by {by})"), what),
                    facts.families,
                )
            })
        }
    })
}

/// The key spaces in which a derived item's output `column` is a sharding
/// key: a plain column of a table of its own FROM, or a column of such a
/// table that a `*` passes through.
fn exposed<'a>(derived: &'a Derived, column: &str, sharding: &'a Sharding) -> Vec<&'a KeySpace> {
    let mut spaces = Vec::new();
    let tables = |qualifier: Option<&'a str>| {
        derived
            .from_tables
            .iter()
            .filter(move |t| qualifier.is_none_or(|q| named(t, q)))
    };
    for (name, source) in &derived.columns {
        if name == column {
            for table in tables(source.table.as_deref()) {
                spaces.extend(key_spaces(table, &source.column, sharding));
            }
        }
    }
    for star in &derived.stars {
        for table in tables(star.as_deref()) {
            spaces.extend(key_spaces(table, column, sharding));
        }
    }
    spaces
}
