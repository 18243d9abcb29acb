//! The sharding-key columns a SELECT's FROM clause exposes: every row with
//! a given value of one lives on the one shard the value hashes to, so a
//! group (or a set of DISTINCT values) of such a column is whole on one
//! shard and needs no merge.
//!
//! Rows are where their key hashes: pgshard places every row it writes by
//! its key and refuses a row without one (a NULL or missing key), so there
//! is no NULL-key group to be split across shards. A table on the nullable
//! side of an outer join gives no key column (its NULL-extended rows are on
//! every shard), nor do tables in FROM subqueries or CTEs (a CTE may shadow
//! a table's name).

use std::cell::Cell;

use parser_ffi::protobuf::{self as pb, node::Node as N};

use crate::route::tables::{classify, entry_names, TableClass};
use crate::sharding::{KeySpace, Sharding};
use crate::summary::TableRef;

/// Key columns of a SELECT's FROM items.
#[derive(Debug, Default)]
pub(crate) struct KeyColumns {
    columns: Vec<KeyColumn>,
    /// The FROM clause is exactly one table (an unqualified column can
    /// then only be that table's).
    single: bool,
    /// A reference was found to be a key: the plan depends on the config.
    used: Cell<bool>,
}

/// One table's key column.
#[derive(Debug)]
struct KeyColumn {
    /// The name a qualified reference uses: the alias, else the table's.
    qualifier: String,
    column: String,
    /// The table is named by a `[[sharded_tables]]` entry, so it has the
    /// column; a column-only entry does not say the table has it.
    named: bool,
    /// How its values map to databases.
    keys: KeySpace,
}

impl KeyColumns {
    pub(crate) fn of(select: &pb::SelectStmt, sharding: &Sharding) -> KeyColumns {
        let mut keys = KeyColumns::default();
        if select.with_clause.is_some() || sharding.is_trivial() {
            return keys;
        }
        let mut items: Vec<&pb::Node> = select.from_clause.iter().collect();
        let mut tables = 0;
        while let Some(item) = items.pop() {
            match &item.node {
                Some(N::JoinExpr(join)) => {
                    tables += 2; // A join is never "exactly one table".
                    let (left, right) = match join.jointype() {
                        pb::JoinType::JoinInner => (&join.larg, &join.rarg),
                        pb::JoinType::JoinLeft => (&join.larg, &None),
                        pb::JoinType::JoinRight => (&None, &join.rarg),
                        _ => (&None, &None),
                    };
                    items.extend(left.as_deref());
                    items.extend(right.as_deref());
                }
                Some(N::RangeVar(range)) => {
                    tables += 1;
                    keys.add(range, sharding);
                }
                _ => tables += 2,
            }
        }
        keys.single = tables == 1;
        keys
    }

    fn add(&mut self, range: &pb::RangeVar, sharding: &Sharding) {
        let alias = range.alias.as_ref().map(|a| a.aliasname.clone());
        let table = TableRef {
            schema: (!range.schemaname.is_empty()).then(|| range.schemaname.clone()),
            name: range.relname.clone(),
            alias: alias.clone(),
        };
        let named = match classify(&table, sharding) {
            TableClass::Sharded => true,
            TableClass::Unknown => false,
            _ => return,
        };
        let qualifier = alias.unwrap_or_else(|| range.relname.clone());
        for entry in &sharding.tables {
            let applies = match named {
                true => entry_names(entry, &table),
                false => entry.name.is_none(),
            };
            if applies {
                self.columns.push(KeyColumn {
                    qualifier: qualifier.clone(),
                    column: entry.column.clone(),
                    named,
                    keys: entry.keys.clone(),
                });
            }
        }
    }

    /// Whether `node` is a plain reference to a key column.
    pub(super) fn is_key(&self, node: Option<&pb::Node>) -> bool {
        self.key_space(node).is_some()
    }

    /// The key space of the key column `node` refers to, if it is one.
    pub(crate) fn key_space(&self, node: Option<&pb::Node>) -> Option<&KeySpace> {
        let Some(N::ColumnRef(reference)) = node.and_then(|n| n.node.as_ref()) else {
            return None;
        };
        let names: Option<Vec<&str>> = reference
            .fields
            .iter()
            .map(|f| match &f.node {
                Some(N::String(s)) => Some(s.sval.as_str()),
                _ => None,
            })
            .collect();
        let found = match names.as_deref() {
            Some([column]) => self
                .columns
                .iter()
                .find(|k| k.column == *column && (k.named || self.single)),
            Some([qualifier, column]) => self
                .columns
                .iter()
                .find(|k| k.column == *column && k.qualifier == *qualifier),
            _ => None,
        };
        if found.is_some() {
            self.used.set(true);
        }
        found.map(|k| &k.keys)
    }

    /// Whether the plan used what the config says the keys are.
    pub(super) fn used(&self) -> bool {
        self.used.get()
    }

    /// Whether a GROUP BY item is a key column, written as the column or
    /// as the position of the select-list item that is: each group is then
    /// whole on one shard.
    pub(super) fn groups_whole(&self, group_clause: &[pb::Node], targets: &[pb::Node]) -> bool {
        group_clause.iter().any(|item| {
            let target = super::nodes::integer(item)
                .and_then(|position| usize::try_from(position).ok()?.checked_sub(1))
                .and_then(|index| targets.get(index))
                .and_then(super::nodes::target_val);
            self.is_key(target.or(Some(item)))
        })
    }
}
