//! One join level (rule 13) connected: a union-find over its items joins
//! those that co-located key equalities connect (WHERE and INNER joins at
//! once, outer joins' ONs as their kept sides allow), and each connected
//! part keeps the conditions that say where its rows live.

use std::collections::HashMap;

use crate::sharding::Sharding;
use crate::summary::{FromItem, JoinLevel, OuterKind, TableRef};

use super::items::Items;
use super::{Label, LevelPlan, Part, SHARDED};
use crate::route::keys::{Compiled, Keys};
use crate::route::shard_set::ShardSet;
use crate::route::{Route, RouteError};

/// One level being connected: its items, and a union-find over them.
pub(super) struct Level<'a> {
    items: Items<'a>,
    parent: Vec<usize>,
}

/// Passes over a level's outer joins before giving up connecting more: the
/// joins are visited innermost first, so nested joins connect in one pass;
/// a further pass is needed only when an enclosing join's ON connects a
/// side an inner join keeps. Stopping early connects less, which refuses
/// more, never less.
const MAX_PASSES: usize = 8;

impl<'a> Level<'a> {
    pub(super) fn new(
        level: &'a JoinLevel,
        sharding: &'a Sharding,
    ) -> Result<Level<'a>, RouteError> {
        Ok(Level {
            items: Items::new(level, sharding)?,
            parent: (0..level.items.len()).collect(),
        })
    }

    /// What to check per execution, if anything; an error if nothing can
    /// make the level exact.
    pub(super) fn plan(mut self) -> Result<Option<LevelPlan>, RouteError> {
        let everywhere = self.everywhere();
        if self.items.nodes.iter().flatten().count() < 2 && everywhere.is_none() {
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
            plan.check(&[], self.items.sharding, &Route::All)?;
            return Ok(None);
        }
        Ok(Some(plan))
    }

    /// The first sharded item an outer join matches with rows every
    /// database holds (no sharded item on a side it keeps), if any.
    fn everywhere(&self) -> Option<Label> {
        let first = |(start, end): (usize, usize)| {
            self.items
                .nodes
                .get(start..end)
                .and_then(|side| side.iter().flatten().next())
                .map(|(label, _)| label.clone())
        };
        self.items.level.outer_joins.iter().find_map(|join| {
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
        let joins = self.items.level.outer_joins.len();
        let mut on: Vec<Vec<(usize, usize)>> = vec![Vec::new(); joins];
        let mut filters = Vec::new();
        for equality in &self.items.level.equalities {
            let pairs = self.items.pairs(&equality.left, &equality.right);
            match equality.outer.and_then(|k| on.get_mut(k)) {
                Some(list) => list.extend(pairs),
                None => filters.extend(pairs),
            }
        }
        for using in &self.items.level.usings {
            let pairs = self.items.using_pairs(using);
            match using.outer.and_then(|k| on.get_mut(k)) {
                Some(list) => list.extend(pairs),
                None => filters.extend(pairs),
            }
        }
        for (i, j) in self.items.lateral_pairs() {
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
            for (k, join) in self.items.level.outer_joins.iter().enumerate().rev() {
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
        let items = &self.items.level.items;
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
            if self.items.nodes[i].is_none() {
                continue;
            }
            let root = self.find(i);
            let group = *group_of.entry(root).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[group].push(i);
        }
        groups
            .iter()
            .map(|members| self.part(members, &tables))
            .collect()
    }

    /// One connected part: its members' conditions (the level's as it
    /// names their tables, and their derived items' own) and family tables.
    fn part(&self, members: &[usize], tables: &[TableRef]) -> Part {
        let items = &self.items.level.items;
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
            tables,
            sharding: self.items.sharding,
            only: Some(&own),
        };
        let mut conditions: Vec<Compiled> = self
            .items
            .level
            .conditions
            .iter()
            .map(|condition| keys.compile(condition, 0))
            .collect();
        let mut families: Option<ShardSet> = None;
        let mut empty = false;
        for &i in members {
            if let FromItem::Derived(derived) = &items[i] {
                let keys = Keys {
                    tables: &derived.from_tables,
                    sharding: self.items.sharding,
                    only: None,
                };
                conditions.extend(
                    derived
                        .conditions
                        .iter()
                        .map(|condition| keys.compile(condition, 0)),
                );
            }
            if let Some((_, Some(set))) = &self.items.nodes[i] {
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
            .and_then(|&i| self.items.nodes[i].as_ref())
            .map(|(label, _)| label.clone())
            .unwrap_or(Label {
                table: String::new(),
                what: SHARDED,
            });
        Part {
            conditions,
            families: families.filter(|_| !empty),
            empty,
            label,
        }
    }

    /// Whether the sharded items of `items[start..end]` (at least one) are
    /// connected.
    fn connected(&mut self, (start, end): (usize, usize)) -> bool {
        let mut root = None;
        for i in start..end.min(self.items.nodes.len()) {
            if self.items.nodes[i].is_none() {
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

    /// The outer join whose sides hold items `i` and `j` apart (their
    /// lowest common join), if it is an outer one.
    fn separating(&self, i: usize, j: usize) -> Option<usize> {
        let inside = |i: usize, (start, end): (usize, usize)| start <= i && i < end;
        self.items.level.outer_joins.iter().position(|join| {
            (inside(i, join.left) && inside(j, join.right))
                || (inside(i, join.right) && inside(j, join.left))
        })
    }
}
