//! An UPDATE that changes a row's sharding key to a value that belongs on
//! another shard (PgDog's `[rewrite] shard_key = "rewrite"`): the row
//! moves. Pure: from pg_query's protobuf tree, the statements the proxy
//! runs, deparsed.
//!
//! The proxy runs, in one transaction per shard:
//! 1. on the shards the UPDATE's WHERE routes to, [`KeyMove::delete`]:
//!    `DELETE FROM t WHERE <its WHERE> RETURNING <every stored column>`,
//!    the old row (one row at most, or the statement fails);
//! 2. on the shard of the new key ([`KeyMove::target`]),
//!    [`KeyMove::insert`]: `INSERT INTO t AS <alias> (<columns>)
//!    OVERRIDING SYSTEM VALUE SELECT <each column's SET expression, or the
//!    column> FROM (VALUES (<the old row, as parameters>)) AS
//!    <alias>(<columns>) [RETURNING ...]`. The SET expressions are
//!    evaluated over the old row's values exactly as the UPDATE would
//!    (same names, and an INSERT coerces to the columns' types the way an
//!    UPDATE assigns: lengths checked, no cast Postgres would not make).
//!
//! What moves: `UPDATE t [AS a] SET key = <literal or parameter>[, col =
//! <expression>]... WHERE ...` on a `[[sharded_tables]]` table. Refused with
//! the reason: FROM, WITH, `WHERE CURRENT OF`, `SET (a, b) = ...`,
//! `DEFAULT`, assignments to an element or field, a new key that is not a
//! literal or a parameter, and subqueries (they would read another shard's
//! rows).

use parser_ffi::protobuf::{self as pb, node::Node as N};
use parser_ffi::ParseError;

use crate::hash;
use crate::route::tables::{entry_names, target_table};
use crate::route::ParamValue;
use crate::sharding::{Key, ShardedTable, Sharding};
use crate::split::{LiteralKey, SplitError};
use crate::summary::StatementSummary;

/// Why an UPDATE of a sharding key cannot move its row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    #[error("an UPDATE that changes the sharding key moves its row to the new key's shard only when {0}")]
    Unsupported(&'static str),
    #[error("the UPDATE's new sharding key {column}: {why}")]
    Key { column: String, why: NewKeyError },
    #[error("the UPDATE could not be analysed for moving its row: {0}")]
    Parse(#[from] ParseError),
    #[error("the UPDATE could not be analysed for moving its row: {0}")]
    Split(#[from] SplitError),
    /// What of the statement (or the config) could not be read.
    #[error("the UPDATE could not be analysed for moving its row: {0}")]
    Unreadable(&'static str),
}

/// Why the new value of a sharding key places the row nowhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NewKeyError {
    #[error("no shard is configured for it")]
    NoShard,
    #[error("{}", new_key_reason(.0))]
    Value(LiteralKey),
}

/// A new key that [`crate::split::literal_key`] could not type.
fn new_key_reason(why: &LiteralKey) -> String {
    match why {
        LiteralKey::EmptyCast => "an empty cast".into(),
        LiteralKey::Null => "it is NULL".into(),
        LiteralKey::NotNumberOrString => "it is not a number or a string".into(),
        LiteralKey::NoParam(n) => format!("${n} has no value"),
        LiteralKey::NullParam(n) => format!("${n} is NULL"),
        LiteralKey::BadParam(n, e) => format!("${n}: {e}"),
        LiteralKey::NegatedExpression | LiteralKey::Expression => {
            "it must be a literal or a parameter, not an expression".into()
        }
        LiteralKey::Invalid(e) => e.to_string(),
    }
}

use MoveError::Unsupported;

/// A statement with its parameters renumbered from `$1`, and the index
/// each number stands for (see [`KeyMove::insert`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renumbered {
    pub sql: String,
    pub params: Vec<usize>,
}

/// An UPDATE of a sharding key, read for moving its row.
#[derive(Debug, Clone)]
pub struct KeyMove {
    update: pb::UpdateStmt,
    /// The key's `[[sharded_tables]]` entry.
    entry: usize,
    /// The key's new value (a literal or a parameter, maybe cast).
    new_key: pb::Node,
    /// The highest parameter number the UPDATE uses.
    parameters: usize,
}

impl KeyMove {
    /// Read the UPDATE `sql` (summarized as `summary`) whose SET changes
    /// the sharding key of its table in `sharding`.
    pub fn plan(
        sql: &str,
        summary: &StatementSummary,
        sharding: &Sharding,
    ) -> Result<KeyMove, MoveError> {
        let tree = parser_ffi::parse_protobuf(sql)?;
        let update = match tree.stmts.as_slice() {
            [raw] => match raw.stmt.as_ref().and_then(|s| s.node.as_ref()) {
                Some(N::UpdateStmt(update)) => update.as_ref().clone(),
                _ => return Err(Unsupported("it is one UPDATE statement")),
            },
            _ => return Err(Unsupported("it is sent alone (one statement per query)")),
        };
        if update.with_clause.is_some() || !update.from_clause.is_empty() {
            return Err(Unsupported("it has no WITH and no FROM"));
        }
        if matches!(
            update.where_clause.as_deref().and_then(|w| w.node.as_ref()),
            Some(N::CurrentOfExpr(_))
        ) {
            return Err(Unsupported("it is not WHERE CURRENT OF a cursor"));
        }
        if summary.sublinks.is_some() {
            return Err(Unsupported(
                "it has no subqueries (they would read the rows of another shard)",
            ));
        }
        let entry = key_entry(&update, sharding)?;
        let column = &sharding.tables[entry].column;
        let mut new_key = None;
        for target in &update.target_list {
            let Some(N::ResTarget(target)) = &target.node else {
                return Err(MoveError::Unreadable("a SET target"));
            };
            let value = target.val.as_deref().and_then(|v| v.node.as_ref());
            match value {
                Some(N::MultiAssignRef(_)) => {
                    return Err(Unsupported(
                        "its SET assigns columns one by one (no (a, b) = ...)",
                    ))
                }
                Some(N::SetToDefault(_)) => return Err(Unsupported("its SET assigns no DEFAULT")),
                None => return Err(MoveError::Unreadable("a SET without a value")),
                _ => {}
            }
            if !target.indirection.is_empty() {
                return Err(Unsupported(
                    "its SET assigns whole columns (no element or field)",
                ));
            }
            if target.name == *column {
                new_key = target.val.as_deref().cloned();
            }
        }
        let new_key = new_key.ok_or(Unsupported("its SET assigns the sharding key"))?;
        if !literal_or_parameter(&new_key) {
            return Err(MoveError::Key {
                column: column.clone(),
                why: NewKeyError::Value(LiteralKey::Expression),
            });
        }
        let parameters = parameters(sql)?;
        Ok(KeyMove {
            update,
            entry,
            new_key,
            parameters,
        })
    }

    /// The table, as written (schema-qualified when it is).
    pub fn table(&self) -> String {
        let relation = self.update.relation.as_ref();
        match relation {
            Some(r) if !r.schemaname.is_empty() => format!("{}.{}", r.schemaname, r.relname),
            Some(r) => r.relname.clone(),
            None => String::new(),
        }
    }

    /// The sharding key's column.
    pub fn key_column<'s>(&self, sharding: &'s Sharding) -> Option<&'s str> {
        sharding.tables.get(self.entry).map(|e| e.column.as_str())
    }

    /// The UPDATE returns rows.
    pub fn returning(&self) -> bool {
        self.update
            .returning_clause
            .as_ref()
            .is_some_and(|r| !r.exprs.is_empty())
    }

    /// The database of the new key, with the Bind's `params` (none in the
    /// simple protocol).
    pub fn target(
        &self,
        sharding: &Sharding,
        params: &[ParamValue<'_>],
    ) -> Result<usize, MoveError> {
        let entry = sharding
            .tables
            .get(self.entry)
            .ok_or(MoveError::Unreadable("the sharding config changed"))?;
        let key = new_key(&self.new_key, entry, params).map_err(|why| MoveError::Key {
            column: entry.column.clone(),
            why,
        })?;
        hash::database(&entry.keys, &key).ok_or_else(|| MoveError::Key {
            column: entry.column.clone(),
            why: NewKeyError::NoShard,
        })
    }

    /// `DELETE FROM t WHERE <the UPDATE's WHERE> RETURNING <columns>` (no
    /// RETURNING without columns: what the proxy routes to find the row's
    /// shards); its parameters are the client's (0-based indexes).
    pub fn delete(&self, columns: &[String]) -> Result<Renumbered, MoveError> {
        let mut tree = template("DELETE FROM t")?;
        let Some(N::DeleteStmt(delete)) = first_node(&mut tree) else {
            return Err(MoveError::Unreadable("the DELETE template"));
        };
        delete.relation = self.update.relation.clone();
        delete.where_clause = self.update.where_clause.clone();
        if !columns.is_empty() {
            delete.returning_clause = Some(pb::ReturningClause {
                options: Vec::new(),
                exprs: columns
                    .iter()
                    .map(|c| target(None, Some(column_ref(c))))
                    .collect(),
            });
        }
        deparse_renumbered(&tree)
    }

    /// The INSERT that puts the moved row on the new key's shard, writing
    /// `columns` (the table's stored columns, in the order of
    /// [`KeyMove::delete`]'s RETURNING). Its parameter indexes below
    /// [`KeyMove::parameters`] are the client's; index `parameters + i` is
    /// the old row's value of `columns[i]`.
    pub fn insert(&self, columns: &[String]) -> Result<Renumbered, MoveError> {
        let sql = "INSERT INTO t (a) OVERRIDING SYSTEM VALUE SELECT a FROM (VALUES (1)) AS v(a)";
        let mut tree = template(sql)?;
        let Some(N::InsertStmt(insert)) = first_node(&mut tree) else {
            return Err(MoveError::Unreadable("the INSERT template"));
        };
        let relation = self.update.relation.clone().unwrap_or_default();
        let alias = relation
            .alias
            .as_ref()
            .map_or_else(|| relation.relname.clone(), |a| a.aliasname.clone());
        insert.relation = Some(relation);
        insert.cols = columns.iter().map(|c| target(Some(c), None)).collect();
        insert.returning_clause = self.update.returning_clause.clone();
        let Some(N::SelectStmt(select)) = insert.select_stmt.as_mut().and_then(|s| s.node.as_mut())
        else {
            return Err(MoveError::Unreadable("the INSERT template"));
        };
        select.target_list = columns
            .iter()
            .map(|c| {
                target(
                    None,
                    Some(self.assigned(c).unwrap_or_else(|| column_ref(c))),
                )
            })
            .collect();
        let Some(N::RangeSubselect(from)) =
            select.from_clause.first_mut().and_then(|f| f.node.as_mut())
        else {
            return Err(MoveError::Unreadable("the INSERT template"));
        };
        from.alias = Some(pb::Alias {
            aliasname: alias,
            colnames: columns.iter().map(|c| string(c)).collect(),
        });
        let Some(N::SelectStmt(values)) = from.subquery.as_mut().and_then(|s| s.node.as_mut())
        else {
            return Err(MoveError::Unreadable("the INSERT template"));
        };
        let old_row = (0..columns.len()).map(|i| param(self.parameters + i + 1));
        values.values_lists = vec![pb::Node {
            node: Some(N::List(pb::List {
                items: old_row.collect(),
            })),
        }];
        deparse_renumbered(&tree)
    }

    /// The highest parameter number the UPDATE uses (0: none).
    pub fn parameters(&self) -> usize {
        self.parameters
    }

    /// The SET expression of `column`, if the UPDATE assigns it.
    fn assigned(&self, column: &str) -> Option<pb::Node> {
        self.update.target_list.iter().find_map(|t| match &t.node {
            Some(N::ResTarget(t)) if t.name == column => t.val.as_deref().cloned(),
            _ => None,
        })
    }
}

/// The `[[sharded_tables]]` entry of the UPDATE's table.
fn key_entry(update: &pb::UpdateStmt, sharding: &Sharding) -> Result<usize, MoveError> {
    let relation = update
        .relation
        .as_ref()
        .ok_or(MoveError::Unreadable("no target table"))?;
    let (table, named) = target_table(relation, sharding);
    let named = named.ok_or(Unsupported("its table is sharded by a key column"))?;
    let sets = |entry: &ShardedTable| {
        update
            .target_list
            .iter()
            .any(|t| matches!(&t.node, Some(N::ResTarget(t)) if t.name == entry.column))
    };
    sharding
        .tables
        .iter()
        .position(|e| match named {
            true => entry_names(e, &table),
            false => e.name.is_none() && sets(e),
        })
        .ok_or(Unsupported("its table is sharded by a key column"))
}

/// The new key: a literal or a parameter, optionally cast.
fn new_key(
    value: &pb::Node,
    entry: &ShardedTable,
    params: &[ParamValue<'_>],
) -> Result<Key, NewKeyError> {
    crate::split::literal_key(value, entry.keys.data_type, params).map_err(NewKeyError::Value)
}

/// A literal or a parameter, optionally cast (a negative number is a
/// negated literal in some positions).
fn literal_or_parameter(value: &pb::Node) -> bool {
    let mut value = value;
    while let Some(N::TypeCast(cast)) = &value.node {
        match cast.arg.as_deref() {
            Some(arg) => value = arg,
            None => return false,
        }
    }
    match &value.node {
        Some(N::AConst(_) | N::ParamRef(_)) => true,
        Some(N::AExpr(e)) => {
            crate::split::is_negation(e)
                && matches!(
                    e.rexpr.as_deref().and_then(|r| r.node.as_ref()),
                    Some(N::AConst(_))
                )
        }
        _ => false,
    }
}

/// The highest parameter number in `sql` (0: none).
fn parameters(sql: &str) -> Result<usize, MoveError> {
    if !sql.contains('$') {
        return Ok(0);
    }
    let tokens = parser_ffi::scan(sql)?;
    let param = pb::Token::Param as i32;
    Ok(tokens
        .iter()
        .filter(|t| t.token == param)
        .filter_map(|t| sql.get(t.start + 1..t.end)?.parse::<usize>().ok())
        .max()
        .unwrap_or(0))
}

fn template(sql: &str) -> Result<pb::ParseResult, MoveError> {
    Ok(parser_ffi::parse_protobuf(sql)?)
}

fn first_node(tree: &mut pb::ParseResult) -> Option<&mut N> {
    tree.stmts.first_mut()?.stmt.as_mut()?.node.as_mut()
}

fn deparse_renumbered(tree: &pb::ParseResult) -> Result<Renumbered, MoveError> {
    let sql = parser_ffi::deparse_protobuf(tree)?;
    let (sql, params) = crate::split::renumber(&sql)?;
    Ok(Renumbered { sql, params })
}

fn string(s: &str) -> pb::Node {
    pb::Node {
        node: Some(N::String(pb::String { sval: s.to_owned() })),
    }
}

fn column_ref(column: &str) -> pb::Node {
    pb::Node {
        node: Some(N::ColumnRef(pb::ColumnRef {
            fields: vec![string(column)],
            location: -1,
        })),
    }
}

fn param(number: usize) -> pb::Node {
    pb::Node {
        node: Some(N::ParamRef(pb::ParamRef {
            number: i32::try_from(number).unwrap_or(i32::MAX),
            location: -1,
        })),
    }
}

/// A ResTarget: a name (an INSERT's column), a value (a list's item), or
/// both.
fn target(name: Option<&str>, value: Option<pb::Node>) -> pb::Node {
    pb::Node {
        node: Some(N::ResTarget(Box::new(pb::ResTarget {
            name: name.unwrap_or_default().to_owned(),
            indirection: Vec::new(),
            val: value.map(Box::new),
            location: -1,
        }))),
    }
}

#[cfg(test)]
mod tests;
