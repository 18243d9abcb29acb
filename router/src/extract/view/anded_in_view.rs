//! `column IN (SELECT key ...)` AND-ed into a SELECT's WHERE, from the
//! zero-copy view (see [`crate::extract`], sublink facts): such a sublink
//! compares each outer row only with the inner rows whose selected column
//! equals the outer one, so its select column and the outer column count as
//! an equality of its own level (rule 12 may then correlate it on the key).

use parser_ffi::protobuf::{BoolExprType, SetOperation, SubLinkType};
use parser_ffi::view::{List, Node, NodeRef, SelectStmt};

use super::values_view::column_of;
use crate::summary::ColumnRef;

/// The sublinks `= ANY (SELECT ...)` / `IN (SELECT ...)` with a plain column
/// on the left that are AND-ed into `select`'s WHERE, each with that column.
pub(super) fn anded_ins<'a>(select: SelectStmt<'a>, found: &mut Vec<(Node<'a>, ColumnRef)>) {
    let mut exprs: Vec<Node<'a>> = select.where_clause().into_iter().collect();
    while let Some(expr) = exprs.pop() {
        match expr.kind() {
            NodeRef::BoolExpr(bool_expr) if bool_expr.boolop() == BoolExprType::AndExpr => {
                exprs.extend(bool_expr.args().iter().flatten());
            }
            NodeRef::SubLink(sublink)
                if sublink.sub_link_type() == SubLinkType::AnySublink
                    && is_equality(sublink.oper_name()) =>
            {
                if let Some(outer) = sublink.testexpr().and_then(column_of) {
                    found.push((expr, outer.to_column()));
                }
            }
            _ => {}
        }
    }
}

/// `IN` (no operator name) or `= ANY`.
fn is_equality(oper_name: List<'_>) -> bool {
    match oper_name.len() {
        0 => true,
        1 => oper_name
            .get(0)
            .is_some_and(|op| matches!(op.kind(), NodeRef::String(op) if op.sval() == Some("="))),
        _ => false,
    }
}

/// The column an IN sublink's query selects, when each of its result rows
/// comes from inner rows that all hold that column's value: a plain SELECT
/// of that one column, without LIMIT/OFFSET, DISTINCT ON or windows, either
/// not grouped (and without HAVING) or grouped by that column among plain
/// expressions (no grouping sets).
pub(super) fn selected_key(select: SelectStmt<'_>) -> Option<ColumnRef> {
    if select.op() != SetOperation::SetopNone
        || select.limit_count().is_some()
        || select.limit_offset().is_some()
        || !select.window_clause().is_empty()
        || select.distinct_clause().iter().any(|item| item.is_some())
    {
        return None;
    }
    let targets = select.target_list();
    if targets.len() != 1 {
        return None;
    }
    let NodeRef::ResTarget(target) = targets.get(0)?.kind() else {
        return None;
    };
    let key = target.val().and_then(column_of)?.to_column();
    if select.group_clause().is_empty() {
        return select.having_clause().is_none().then_some(key);
    }
    let mut grouped = false;
    for item in select.group_clause().iter() {
        let item = item?;
        if matches!(item.kind(), NodeRef::GroupingSet(_)) {
            return None;
        }
        grouped |= column_of(item).is_some_and(|c| c.to_column() == key);
    }
    grouped.then_some(key)
}
