//! Conditions a gather applies on the shards (rule 5 of
//! [`crate::gather`]): an AND-ed part of the leaf's level's WHERE (or of
//! an INNER join's ON reached through preserved sides), for a leaf reached
//! through preserved sides only, or of the ON of the join the leaf is a
//! side of, when that join is INNER or the leaf its nullable side (LEFT
//! JOIN's right: `customer LEFT JOIN orders ON c_custkey = o_custkey AND
//! o_comment NOT LIKE ...` filters orders first), whose every column reference is surely
//! the leaf's and whose nodes are all on a short list of what gives the
//! same answer on a shard as on the coordinator: constants, operators,
//! casts, AND/OR/NOT, IS [NOT] NULL, IS [NOT] TRUE..., IN lists, BETWEEN,
//! LIKE, CASE, COALESCE, GREATEST/LEAST, NULLIF and a fixed list of
//! built-in functions. Parameters, subqueries, aggregates, windows,
//! `now()`-like values and other functions stay on the coordinator, where
//! the condition is evaluated again anyway (it stays in the finish).
//! Pushing less is exact; pushing is only an optimisation.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::leaves::{has_column, qualifier, table_ref};
use super::scope::{Item, Level, TableUse, Walked};
use crate::catalog::Catalog;

/// Functions that give the same answer wherever they run, with the
/// client's settings (which every connection of a session carries).
const SAME_EVERYWHERE: &[&str] = &[
    "abs",
    "btrim",
    "ceil",
    "ceiling",
    "char_length",
    "date_part",
    "date_trunc",
    "extract",
    "floor",
    "left",
    "length",
    "lower",
    "ltrim",
    "md5",
    "mod",
    "position",
    "replace",
    "right",
    "round",
    "rtrim",
    "similar_to_escape",
    "strpos",
    "substr",
    "substring",
    "trunc",
    "upper",
];

/// The conditions of `table`'s level that the gather of `table` can apply.
pub(super) fn pushable<'a>(
    table: &TableUse<'a>,
    walked: &Walked<'a>,
    catalog: Option<&Catalog>,
) -> Vec<&'a pb::Node> {
    let level = &walked.levels[table.level];
    let mut candidates: Vec<&'a pb::Node> = Vec::new();
    let own = table.on.iter();
    let shared = level.conjuncts.iter().filter(|_| table.preserved);
    for conjunct in own.chain(shared) {
        if !candidates.iter().any(|c| std::ptr::eq(*c, *conjunct)) {
            candidates.push(conjunct);
        }
    }
    candidates
        .into_iter()
        .filter(|conjunct| {
            let mut columns = 0;
            let ours = |column: &pb::ColumnRef| {
                columns += 1;
                is_leaf_column(column, table, level, walked, catalog)
            };
            same_everywhere(conjunct, ours) && columns > 0
        })
        .collect()
}

/// Whether `column`, written at the leaf's level, surely means a column
/// of the leaf: qualified by its name (the innermost level with an item of
/// that name is this one), or unqualified when the catalog shows the leaf
/// has it and every other item of the level has not (and no join merges
/// columns).
fn is_leaf_column(
    column: &pb::ColumnRef,
    table: &TableUse<'_>,
    level: &Level<'_>,
    walked: &Walked<'_>,
    catalog: Option<&Catalog>,
) -> bool {
    let names: Vec<&str> = column
        .fields
        .iter()
        .filter_map(|field| match field.node.as_ref() {
            Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
            _ => None,
        })
        .collect();
    if names.len() != column.fields.len() {
        return false;
    }
    let own = table_ref(table.range_var);
    match names.as_slice() {
        [q, name] => *q == qualifier(table.range_var) && has_column(catalog, &own, name),
        [name] => {
            !level.merges
                && has_column(catalog, &own, name)
                && level.items.iter().all(|item| match item {
                    Item::Table(other) => {
                        let other = &walked.tables[*other];
                        std::ptr::eq(other.range_var, table.range_var)
                            || (catalog.is_some()
                                && !has_column(catalog, &table_ref(other.range_var), name)
                                && known(catalog, other))
                    }
                    Item::Other => false,
                })
        }
        _ => false,
    }
}

fn known(catalog: Option<&Catalog>, table: &TableUse<'_>) -> bool {
    let named = table_ref(table.range_var);
    catalog.is_some_and(|c| c.columns(named.schema.as_deref(), &named.name).is_some())
}

/// Whether every node of `node` is on the list, `column` approving each
/// column reference.
fn same_everywhere(node: &pb::Node, mut column: impl FnMut(&pb::ColumnRef) -> bool) -> bool {
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        let Some(node) = node.node.as_ref() else {
            continue;
        };
        let ok = match node {
            NodeEnum::ColumnRef(c) => column(c),
            NodeEnum::AConst(_) | NodeEnum::String(_) => true,
            NodeEnum::TypeCast(cast) => push(&mut pending, &cast.arg),
            NodeEnum::AExpr(a_expr) => {
                push(&mut pending, &a_expr.lexpr) && push(&mut pending, &a_expr.rexpr)
            }
            NodeEnum::BoolExpr(b) => extend(&mut pending, &b.args),
            NodeEnum::NullTest(test) => push(&mut pending, &test.arg),
            NodeEnum::BooleanTest(test) => push(&mut pending, &test.arg),
            NodeEnum::CaseExpr(case) => {
                push(&mut pending, &case.arg)
                    && extend(&mut pending, &case.args)
                    && push(&mut pending, &case.defresult)
            }
            NodeEnum::CaseWhen(when) => {
                push(&mut pending, &when.expr) && push(&mut pending, &when.result)
            }
            NodeEnum::CoalesceExpr(c) => extend(&mut pending, &c.args),
            NodeEnum::MinMaxExpr(m) => extend(&mut pending, &m.args),
            NodeEnum::List(list) => extend(&mut pending, &list.items),
            NodeEnum::FuncCall(call) => plain_call(call) && extend(&mut pending, &call.args),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

fn push<'a>(pending: &mut Vec<&'a pb::Node>, node: &'a Option<Box<pb::Node>>) -> bool {
    pending.extend(node.as_deref());
    true
}

fn extend<'a>(pending: &mut Vec<&'a pb::Node>, nodes: &'a [pb::Node]) -> bool {
    pending.extend(nodes);
    true
}

/// A call of a listed function (unqualified or in `pg_catalog`), not an
/// aggregate or window.
fn plain_call(call: &pb::FuncCall) -> bool {
    let names: Vec<&str> = call
        .funcname
        .iter()
        .filter_map(|n| match n.node.as_ref() {
            Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
            _ => None,
        })
        .collect();
    let listed = match names.as_slice() {
        [name] | ["pg_catalog", name] => SAME_EVERYWHERE.contains(name),
        _ => false,
    };
    listed
        && call.agg_order.is_empty()
        && call.agg_filter.is_none()
        && call.over.is_none()
        && !call.agg_star
        && !call.agg_distinct
        && !call.agg_within_group
}
