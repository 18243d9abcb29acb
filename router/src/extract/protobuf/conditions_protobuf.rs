//! A level's WHERE / ON / VALUES read down its boolean skeleton into key
//! conditions (protobuf structs): `k = v`, `k IN (...)`, `k = ANY(...)`, row
//! comparisons, AND / OR / NOT, capped in size; and the column equalities
//! AND-ed into an expression.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::values_protobuf::{column, value};
use crate::extract::{ExtractError, MAX_CTE_CONDITION_NODES, MAX_DEPTH};
use crate::summary::{ColumnRef, Condition};

/// Whether conditions hold at most [`MAX_CTE_CONDITION_NODES`] Eq, Any, And
/// and Or nodes (counted on a heap stack, stopping past the limit).
pub(super) fn fits(conditions: &[Condition]) -> bool {
    let mut nodes = 0;
    let mut stack: Vec<&Condition> = conditions.iter().collect();
    while let Some(condition) = stack.pop() {
        nodes += 1;
        if nodes > MAX_CTE_CONDITION_NODES {
            return false;
        }
        if let Condition::And(children) | Condition::Or(children) = condition {
            stack.extend(children);
        }
    }
    true
}

/// One VALUES row: the `Eq`s of the columns given a value.
pub(super) fn row_condition(
    table: &str,
    columns: &[pb::Node],
    row: &[pb::Node],
) -> Option<Condition> {
    let eqs = columns.iter().zip(row).filter_map(|(column, expr)| {
        let Some(NodeEnum::ResTarget(target)) = column.node.as_ref() else {
            return None;
        };
        // `(arr[1])`, `(composite.field)` assign a part of the column.
        if !target.indirection.is_empty() || target.name.is_empty() {
            return None;
        }
        let column = ColumnRef {
            table: Some(table.to_owned()),
            column: target.name.clone(),
        };
        Some(Condition::Eq {
            column,
            value: value(expr)?,
        })
    });
    and(eqs.collect())
}

/// The condition an expression gives, if any. Evaluated on a heap stack, not
/// by recursion: AND/OR may nest as deep as the parser allows.
pub(super) fn condition(
    expr: Option<&pb::Node>,
    depth: usize,
) -> Result<Option<Condition>, ExtractError> {
    enum Task<'a> {
        Eval(&'a pb::Node, usize),
        /// Combine the last `n` results.
        And(usize),
        Or(usize),
    }
    let Some(expr) = expr else {
        return Ok(None);
    };
    let mut tasks = vec![Task::Eval(expr, depth)];
    let mut results: Vec<Option<Condition>> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Eval(expr, depth) => {
                if depth > MAX_DEPTH {
                    return Err(ExtractError::TooDeep);
                }
                let bool_expr = match expr.node.as_ref() {
                    Some(NodeEnum::BoolExpr(bool_expr)) => bool_expr,
                    Some(NodeEnum::AExpr(a_expr)) => {
                        results.push(a_expr_condition(a_expr));
                        continue;
                    }
                    _ => {
                        results.push(None);
                        continue;
                    }
                };
                let n = bool_expr.args.len();
                match bool_expr.boolop() {
                    pb::BoolExprType::AndExpr => tasks.push(Task::And(n)),
                    pb::BoolExprType::OrExpr => tasks.push(Task::Or(n)),
                    // NOT, and anything unknown: no condition.
                    _ => {
                        results.push(None);
                        continue;
                    }
                }
                let args = bool_expr.args.iter();
                tasks.extend(args.map(|arg| Task::Eval(arg, depth + 1)));
            }
            Task::And(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                results.push(and(children.into_iter().flatten().collect()));
            }
            Task::Or(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                let children: Option<Vec<_>> = children.into_iter().collect();
                results.push(children.and_then(or));
            }
        }
    }
    Ok(results.pop().flatten())
}

/// `col = v`, `v = col`, `col IN (...)`, `col = ANY(...)`.
fn a_expr_condition(a_expr: &pb::AExpr) -> Option<Condition> {
    let operator = a_expr
        .name
        .last()
        .and_then(|name| match name.node.as_ref() {
            Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
            _ => None,
        });
    if operator != Some("=") {
        return None;
    }
    let left = a_expr.lexpr.as_deref();
    let right = a_expr.rexpr.as_deref()?;
    match a_expr.kind() {
        pb::AExprKind::AexprOp => match (column(left?), column(right)) {
            (Some(column), None) => Some(Condition::Eq {
                column,
                value: value(right)?,
            }),
            (None, Some(column)) => Some(Condition::Eq {
                column,
                value: value(left?)?,
            }),
            _ => None,
        },
        pb::AExprKind::AexprIn => match right.node.as_ref() {
            Some(NodeEnum::List(list)) => in_list(column(left?)?, &list.items),
            _ => None,
        },
        pb::AExprKind::AexprOpAny => {
            let column = column(left?)?;
            match right.node.as_ref() {
                Some(NodeEnum::AArrayExpr(array)) => in_list(column, &array.elements),
                _ => Some(Condition::Any {
                    column,
                    value: value(right)?,
                }),
            }
        }
        _ => None,
    }
}

/// `col IN (v1, ...)`: every element must be a value.
fn in_list(column: ColumnRef, items: &[pb::Node]) -> Option<Condition> {
    let eqs = items.iter().map(|item| {
        Some(Condition::Eq {
            column: column.clone(),
            value: value(item)?,
        })
    });
    or(eqs.collect::<Option<Vec<_>>>()?)
}

/// AND of `parts`: one is returned as is, none gives no condition.
pub(super) fn and(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Condition::And(parts)),
    }
}

/// OR of `parts` (every branch already gave a condition).
pub(super) fn or(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Condition::Or(parts)),
    }
}

/// Call `found` on each `a = b` between two columns met through ANDs only.
pub(super) fn equalities(expr: &pb::Node, mut found: impl FnMut(ColumnRef, ColumnRef)) {
    let mut exprs = vec![expr];
    while let Some(expr) = exprs.pop() {
        match expr.node.as_ref() {
            Some(NodeEnum::BoolExpr(bool_expr))
                if bool_expr.boolop() == pb::BoolExprType::AndExpr =>
            {
                exprs.extend(bool_expr.args.iter());
            }
            Some(NodeEnum::AExpr(a_expr)) if a_expr.kind() == pb::AExprKind::AexprOp => {
                let equals = a_expr.name.last().is_some_and(|name| {
                    matches!(name.node.as_ref(), Some(NodeEnum::String(op)) if op.sval == "=")
                });
                let left = a_expr.lexpr.as_deref().and_then(column);
                let right = a_expr.rexpr.as_deref().and_then(column);
                if let (true, Some(left), Some(right)) = (equals, left, right) {
                    found(left, right);
                }
            }
            _ => {}
        }
    }
}
