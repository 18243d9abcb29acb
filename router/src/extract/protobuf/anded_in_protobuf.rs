//! `column IN (SELECT key ...)` AND-ed into a SELECT's WHERE, from pg_query's
//! protobuf structs (see [`crate::extract`], sublink facts): such a sublink
//! compares each outer row only with the inner rows whose selected column
//! equals the outer one, so its select column and the outer column count as
//! an equality of its own level (rule 12 may then correlate it on the key).

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::values_protobuf::column;
use crate::summary::ColumnRef;

/// The sublinks `= ANY (SELECT ...)` / `IN (SELECT ...)` with a plain column
/// on the left that are AND-ed into `select`'s WHERE, each with that column.
pub(super) fn anded_ins<'a>(
    select: &'a pb::SelectStmt,
    found: &mut Vec<(&'a pb::SubLink, ColumnRef)>,
) {
    let mut exprs: Vec<&pb::Node> = select.where_clause.as_deref().into_iter().collect();
    while let Some(expr) = exprs.pop() {
        match expr.node.as_ref() {
            Some(NodeEnum::BoolExpr(bool_expr))
                if bool_expr.boolop() == pb::BoolExprType::AndExpr =>
            {
                exprs.extend(bool_expr.args.iter());
            }
            Some(NodeEnum::SubLink(sublink))
                if sublink.sub_link_type() == pb::SubLinkType::AnySublink
                    && is_equality(&sublink.oper_name) =>
            {
                if let Some(outer) = sublink.testexpr.as_deref().and_then(column) {
                    found.push((sublink, outer));
                }
            }
            _ => {}
        }
    }
}

/// The outer column of `sublink` if it is one of `ins`.
pub(super) fn anded_in(
    ins: &[(&pb::SubLink, ColumnRef)],
    sublink: &pb::SubLink,
) -> Option<ColumnRef> {
    ins.iter()
        .find(|(found, _)| std::ptr::eq(*found, sublink))
        .map(|(_, outer)| outer.clone())
}

/// `IN` (no operator name) or `= ANY`.
fn is_equality(oper_name: &[pb::Node]) -> bool {
    match oper_name {
        [] => true,
        [op] => matches!(op.node.as_ref(), Some(NodeEnum::String(op)) if op.sval == "="),
        _ => false,
    }
}

/// The column an IN sublink's query selects, when each of its result rows
/// comes from inner rows that all hold that column's value: a plain SELECT
/// of that one column, without LIMIT/OFFSET, DISTINCT ON or windows, either
/// not grouped (and without HAVING) or grouped by that column among plain
/// expressions (no grouping sets).
pub(super) fn selected_key(select: &pb::SelectStmt) -> Option<ColumnRef> {
    if select.op() != pb::SetOperation::SetopNone
        || select.limit_count.is_some()
        || select.limit_offset.is_some()
        || !select.window_clause.is_empty()
        || select
            .distinct_clause
            .iter()
            .any(|item| item.node.is_some())
    {
        return None;
    }
    let [target] = select.target_list.as_slice() else {
        return None;
    };
    let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() else {
        return None;
    };
    let key = target.val.as_deref().and_then(column)?;
    if select.group_clause.is_empty() {
        return select.having_clause.is_none().then_some(key);
    }
    let mut grouped = false;
    for item in &select.group_clause {
        match item.node.as_ref() {
            Some(NodeEnum::GroupingSet(_)) | None => return None,
            _ => grouped |= column(item).is_some_and(|c| c == key),
        }
    }
    grouped.then_some(key)
}
