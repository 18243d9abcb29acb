//! The items of one join level (rule 13) as its equalities name them: what
//! each item reads (sharded, unknown or family rows, and where family
//! tables put it), which item a qualifier or an unqualified key column
//! names, and the pairs of items an equality, a USING or NATURAL join or a
//! LATERAL subquery's correlation connects on co-located keys.

use std::collections::HashMap;

use crate::sharding::{Key, KeySpace, Sharding};
use crate::summary::{ColumnRef, Derived, FromItem, JoinLevel, JoinUsing};

use super::{Label, FAMILY, OPAQUE, SHARDED, UNKNOWN};
use crate::route::facts::table_facts;
use crate::route::key_values;
use crate::route::shard_set::ShardSet;
use crate::route::tables::{classify, key_spaces, named, TableClass};
use crate::route::RouteError;

/// The items of one join level as its equalities name them: what each
/// reads, the names qualifiers give them, the key spaces of their columns.
pub(super) struct Items<'a> {
    pub(super) level: &'a JoinLevel,
    pub(super) sharding: &'a Sharding,
    /// Per item: what it is if it reads sharded rows, and the databases
    /// its family tables put it on.
    pub(super) nodes: Vec<Option<(Label, Option<ShardSet>)>>,
    /// The columns of `[[sharded_tables]]` (what NATURAL may join on).
    key_columns: Vec<&'a str>,
    /// The names qualifiers give the items, sorted (name, item).
    names: Vec<(&'a str, usize)>,
    /// For an unqualified column: the sharded items keyed by that name,
    /// with their key spaces.
    keyed: HashMap<&'a str, Vec<(usize, Vec<&'a KeySpace>)>>,
}

impl<'a> Items<'a> {
    pub(super) fn new(
        level: &'a JoinLevel,
        sharding: &'a Sharding,
    ) -> Result<Items<'a>, RouteError> {
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
        let mut this = Items {
            level,
            sharding,
            nodes,
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

    /// The sharded items `a = b` connects: pairs of items whose columns
    /// `a` and `b` are sharding keys in one key space.
    pub(super) fn pairs(&self, a: &ColumnRef, b: &ColumnRef) -> Vec<(usize, usize)> {
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
    pub(super) fn using_pairs(&self, using: &JoinUsing) -> Vec<(usize, usize)> {
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
    pub(super) fn lateral_pairs(&self) -> Vec<(usize, usize)> {
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
}

/// What an item is, if it reads sharded (or unknown, or family) rows, and
/// the databases its family tables live on.
pub(super) fn node(
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
