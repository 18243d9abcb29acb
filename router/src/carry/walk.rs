//! Where a write's carried subqueries sit (rule 1 of [`super`]): the one
//! write's read-only WITH, WHERE, SET values, FROM/USING items and VALUES
//! rows, and the expression nodes walked to reach their subqueries.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::NotCarried;

/// The places of the one write in `tree` whose subqueries may be carried
/// (rule 1): its WITH clause (read-only CTEs only) and the roots
/// [`visit`] walks, in the order both [`super::plan`] and
/// [`super::CarryPlan::write_sql`] count them.
pub(super) struct Places<'t> {
    pub with: Option<&'t mut pb::WithClause>,
    pub roots: Vec<&'t mut pb::Node>,
}

pub(super) fn places(tree: &mut pb::ParseResult) -> Result<Places<'_>, NotCarried> {
    let [raw] = tree.stmts.as_mut_slice() else {
        return Err(NotCarried::NotWrite);
    };
    let node = raw.stmt.as_deref_mut().and_then(|s| s.node.as_mut());
    let mut roots = Vec::new();
    let with = match node {
        Some(NodeEnum::UpdateStmt(update)) => {
            roots.extend(update.where_clause.as_deref_mut());
            roots.extend(update.target_list.iter_mut());
            roots.extend(update.from_clause.iter_mut());
            update.with_clause.as_mut()
        }
        Some(NodeEnum::DeleteStmt(delete)) => {
            roots.extend(delete.where_clause.as_deref_mut());
            roots.extend(delete.using_clause.iter_mut());
            delete.with_clause.as_mut()
        }
        Some(NodeEnum::InsertStmt(insert)) => {
            let select = insert
                .select_stmt
                .as_deref_mut()
                .and_then(|s| s.node.as_mut());
            match select {
                Some(NodeEnum::SelectStmt(select)) if !select.values_lists.is_empty() => {
                    roots.extend(select.values_lists.iter_mut());
                }
                _ => return Err(NotCarried::NotWrite),
            }
            insert.with_clause.as_mut()
        }
        _ => return Err(NotCarried::NotWrite),
    };
    if let Some(with) = &with {
        // A data-modifying WITH is not a read to run first.
        let read_only = with.ctes.iter().all(|cte| match cte.node.as_ref() {
            Some(NodeEnum::CommonTableExpr(cte)) => matches!(
                cte.ctequery.as_deref().and_then(|q| q.node.as_ref()),
                Some(NodeEnum::SelectStmt(_))
            ),
            _ => false,
        });
        if !read_only {
            return Err(NotCarried::NotWrite);
        }
    }
    Ok(Places { with, roots })
}

/// Call `f` on each CTE of `places`' WITH, then [`visit`] its roots.
pub(super) fn each_place(places: Places<'_>, f: &mut dyn FnMut(&mut pb::Node)) {
    if let Some(with) = places.with {
        for cte in &mut with.ctes {
            f(cte);
        }
    }
    for root in places.roots {
        visit(root, f);
    }
}

/// Call `f` on every subquery node reached from `node` through the
/// expression nodes known here, a subquery's left side (`x` of `x IN`)
/// before the subquery itself, and on every FROM subquery (a
/// RangeSubselect) of the FROM items reached through joins; a subquery's
/// own SELECT is not entered. Of a multiple-column SET, `(a, b) = (SELECT
/// ...)`, only the first column's copy of the subquery is visited (the one
/// the statement is written back with).
pub(super) fn visit(node: &mut pb::Node, f: &mut dyn FnMut(&mut pb::Node)) {
    let Some(inner) = node.node.as_mut() else {
        return;
    };
    match inner {
        NodeEnum::SubLink(sublink) => {
            boxed(&mut sublink.testexpr, f);
            f(node);
        }
        NodeEnum::RangeSubselect(_) => f(node),
        NodeEnum::JoinExpr(e) => {
            boxed(&mut e.larg, f);
            boxed(&mut e.rarg, f);
            boxed(&mut e.quals, f);
        }
        NodeEnum::MultiAssignRef(e) if e.colno == 1 => boxed(&mut e.source, f),
        NodeEnum::BoolExpr(e) => each(&mut e.args, f),
        NodeEnum::AExpr(e) => {
            boxed(&mut e.lexpr, f);
            boxed(&mut e.rexpr, f);
        }
        NodeEnum::FuncCall(e) if e.over.is_none() && e.agg_order.is_empty() => each(&mut e.args, f),
        NodeEnum::TypeCast(e) => boxed(&mut e.arg, f),
        NodeEnum::NullTest(e) => boxed(&mut e.arg, f),
        NodeEnum::BooleanTest(e) => boxed(&mut e.arg, f),
        NodeEnum::CollateClause(e) => boxed(&mut e.arg, f),
        NodeEnum::CoalesceExpr(e) => each(&mut e.args, f),
        NodeEnum::MinMaxExpr(e) => each(&mut e.args, f),
        NodeEnum::RowExpr(e) => each(&mut e.args, f),
        NodeEnum::AArrayExpr(e) => each(&mut e.elements, f),
        NodeEnum::List(e) => each(&mut e.items, f),
        NodeEnum::ResTarget(e) => boxed(&mut e.val, f),
        NodeEnum::CaseExpr(e) => {
            boxed(&mut e.arg, f);
            each(&mut e.args, f);
            boxed(&mut e.defresult, f);
        }
        NodeEnum::CaseWhen(e) => {
            boxed(&mut e.expr, f);
            boxed(&mut e.result, f);
        }
        _ => {}
    }
}

fn boxed(node: &mut Option<Box<pb::Node>>, f: &mut dyn FnMut(&mut pb::Node)) {
    if let Some(node) = node.as_deref_mut() {
        visit(node, f);
    }
}

fn each(nodes: &mut [pb::Node], f: &mut dyn FnMut(&mut pb::Node)) {
    for node in nodes {
        visit(node, f);
    }
}

/// How many columns `select` returns, when its text tells: its first
/// VALUES row's, its left arm's for a set operation, else its target
/// list's when no `*` is in it.
pub(super) fn columns(select: &pb::SelectStmt) -> Option<usize> {
    if let Some(larg) = select.larg.as_deref() {
        return columns(larg);
    }
    if let Some(row) = select.values_lists.first() {
        return match row.node.as_ref() {
            Some(NodeEnum::List(list)) => Some(list.items.len()),
            _ => None,
        };
    }
    let star = select.target_list.iter().any(|target| {
        let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() else {
            return true;
        };
        match target.val.as_deref().and_then(|v| v.node.as_ref()) {
            Some(NodeEnum::ColumnRef(column)) => column
                .fields
                .iter()
                .any(|f| matches!(f.node, Some(NodeEnum::AStar(_)))),
            _ => false,
        }
    });
    (!star && !select.target_list.is_empty()).then_some(select.target_list.len())
}
