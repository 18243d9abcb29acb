//! Groups the shards send sorted, so that the merge combines them as they
//! stream and holds about one row per shard (rule 8).
//!
//! Each shard sorts its partial groups by a hidden column,
//! `pg_catalog.hash_record(ROW(<group keys>))` (an int4), after the
//! client's ORDER BY items when every one of them is a group key. Why a
//! hash and not the keys themselves: the merge must compare what the shards
//! sorted by, and the planner does not know the keys' types. Sorting text
//! keys `COLLATE "C"` needs the type (COLLATE on an integer is an error);
//! the hash needs nothing: every type Postgres can group by hashing (all
//! the merge can group by) has a hash function that gives equal values
//! (under the key's collation, `1.0` and `1.00`, `0` and `-0`) equal
//! hashes, and the merge orders int4s exactly. Distinct groups whose hashes
//! collide arrive interleaved in one hash run: the merge holds every group
//! of the run (a handful) until each shard's next row is past it.
//!
//! Constants and parameters are left out of the hash (they are the same in
//! every group, and an untyped literal has no hash function). A select list
//! with `*` keeps the unsorted grouping, bounded by `cross_shard_merge_memory`.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::columns::resolve;
use super::nodes::{self, res_target, sort_by, target_val};
use super::{Column, Unmergeable};

/// Sort the shards' groups when they can be (a GROUP BY that is not the
/// sharding key's, or a plain DISTINCT): the hash column added to `hidden`
/// (and to `groups` as a key), the shards' ORDER BY rewritten; the hash
/// column's number.
pub(super) fn sort_groups(
    select: &mut pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
    groups: Option<&mut Vec<Column>>,
    order: &[super::SortKey],
) -> Result<Option<u16>, Unmergeable> {
    let distinct = groups.is_none();
    if !distinct && select.group_clause.is_empty() {
        return Ok(None);
    }
    let Some(hash) = group_hash(select, hidden, distinct)? else {
        return Ok(None);
    };
    let Ok(column) = u16::try_from(select.target_list.len() + hidden.len()) else {
        return Ok(None);
    };
    let streamed = order_in_groups(order, groups.as_deref().map(Vec::as_slice));
    sort_clause(select, &hash, streamed);
    hidden.push(hash);
    if let Some(groups) = groups {
        groups.push(Column::Key);
    }
    Ok(Some(column))
}

/// The hidden column to sort the shards' groups by, if the groups can be
/// sorted: `distinct` for a plain DISTINCT (every output column a key),
/// else the GROUP BY items. `hidden` already holds the group keys that are
/// not in the select list.
fn group_hash(
    select: &pb::SelectStmt,
    hidden: &[pb::Node],
    distinct: bool,
) -> Result<Option<pb::Node>, Unmergeable> {
    let targets = &select.target_list;
    if targets.iter().any(|t| nodes::is_star(target_val(t))) || !select.values_lists.is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::new();
    if distinct {
        keys.extend(targets.iter().filter_map(target_val).cloned());
    } else {
        for item in &select.group_clause {
            let column = resolve(select, Some(item), false)?;
            let node = match column {
                Some(c) if c < targets.len() => target_val(&targets[c]),
                Some(c) => hidden.get(c - targets.len()).and_then(target_val),
                None => Some(item),
            };
            keys.extend(node.cloned());
        }
    }
    keys.retain(|k| !constant(k));
    if keys.is_empty() {
        return Ok(None);
    }
    Ok(Some(res_target(hash_of(keys))))
}

/// The shards' ORDER BY for sorted groups: the client's items first when
/// the merge can emit groups in that order as they complete (`streamed`),
/// then the hash column (`hash`, a select-list item).
fn sort_clause(select: &mut pb::SelectStmt, hash: &pb::Node, streamed: bool) {
    if !streamed {
        select.sort_clause.clear();
    }
    if let Some(value) = target_val(hash) {
        select.sort_clause.push(sort_by(value));
    }
}

/// Whether the client's sort keys are all group keys (each constant
/// within a group; `columns` is `None` for DISTINCT, whose every column
/// is a key): the merge can then emit combined groups in order.
pub fn order_in_groups(order: &[super::SortKey], columns: Option<&[Column]>) -> bool {
    order.iter().all(|key| match columns {
        Some(columns) => columns.get(key.column) == Some(&Column::Key),
        None => true,
    })
}

/// A literal, a parameter, or a cast of one.
fn constant(node: &pb::Node) -> bool {
    match &node.node {
        Some(N::AConst(_) | N::ParamRef(_)) => true,
        Some(N::TypeCast(cast)) => cast.arg.as_deref().is_some_and(constant),
        _ => false,
    }
}

/// `pg_catalog.hash_record(ROW(keys...))`.
fn hash_of(keys: Vec<pb::Node>) -> pb::Node {
    let name = |s: &str| pb::Node {
        node: Some(N::String(pb::String { sval: s.into() })),
    };
    let row = pb::Node {
        node: Some(N::RowExpr(Box::new(pb::RowExpr {
            xpr: None,
            args: keys,
            row_typeid: 0,
            row_format: pb::CoercionForm::CoerceExplicitCall as i32,
            colnames: Vec::new(),
            location: -1,
        }))),
    };
    pb::Node {
        node: Some(N::FuncCall(Box::new(pb::FuncCall {
            funcname: vec![name("pg_catalog"), name("hash_record")],
            args: vec![row],
            agg_order: Vec::new(),
            agg_filter: None,
            over: None,
            agg_within_group: false,
            agg_star: false,
            agg_distinct: false,
            func_variadic: false,
            funcformat: pb::CoercionForm::CoerceExplicitCall as i32,
            location: -1,
        }))),
    }
}
