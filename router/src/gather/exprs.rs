//! The expression nodes the gather walk reads ([`super::scope`]), and their
//! children: every node of a raw SELECT's expressions that can hold a
//! column reference or a subquery. Anything else is refused.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::NotGathered;

/// What the walk does with what expressions hold.
pub(super) trait Visit<'a> {
    fn column(&mut self, column: &'a pb::ColumnRef, level: usize);
    fn param(&mut self);
    fn call(&mut self, name: &'a str);
    fn sublink(&mut self, sublink: &'a pb::SubLink, level: usize) -> Result<(), NotGathered>;
    fn nodes(&mut self, nodes: &'a [pb::Node], level: usize) -> Result<(), NotGathered>;
    fn boxed(&mut self, node: &'a Option<Box<pb::Node>>, level: usize) -> Result<(), NotGathered>;
}

/// Visit the children of expression `node`, written at `level`.
pub(super) fn children<'a>(
    walk: &mut impl Visit<'a>,
    node: &'a NodeEnum,
    level: usize,
) -> Result<(), NotGathered> {
    match node {
        NodeEnum::ColumnRef(column) => walk.column(column, level),
        NodeEnum::ParamRef(_) => walk.param(),
        NodeEnum::AConst(_)
        | NodeEnum::SqlvalueFunction(_)
        | NodeEnum::String(_)
        | NodeEnum::AStar(_)
        | NodeEnum::Integer(_)
        | NodeEnum::Float(_)
        | NodeEnum::Boolean(_)
        | NodeEnum::BitString(_)
        | NodeEnum::SetToDefault(_)
        // A function's column definitions in FROM.
        | NodeEnum::ColumnDef(_) => {}
        NodeEnum::SubLink(sublink) => walk.sublink(sublink, level)?,
        NodeEnum::TypeCast(cast) => walk.boxed(&cast.arg, level)?,
        NodeEnum::AExpr(a_expr) => {
            walk.boxed(&a_expr.lexpr, level)?;
            walk.boxed(&a_expr.rexpr, level)?;
        }
        NodeEnum::BoolExpr(bool_expr) => walk.nodes(&bool_expr.args, level)?,
        NodeEnum::NullTest(test) => walk.boxed(&test.arg, level)?,
        NodeEnum::BooleanTest(test) => walk.boxed(&test.arg, level)?,
        NodeEnum::FuncCall(call) => function(walk, call, level)?,
        NodeEnum::WindowDef(window) => window_def(walk, window, level)?,
        NodeEnum::CaseExpr(case) => {
            walk.boxed(&case.arg, level)?;
            walk.nodes(&case.args, level)?;
            walk.boxed(&case.defresult, level)?;
        }
        NodeEnum::CaseWhen(when) => {
            walk.boxed(&when.expr, level)?;
            walk.boxed(&when.result, level)?;
        }
        NodeEnum::CoalesceExpr(coalesce) => walk.nodes(&coalesce.args, level)?,
        NodeEnum::MinMaxExpr(min_max) => walk.nodes(&min_max.args, level)?,
        NodeEnum::AArrayExpr(array) => walk.nodes(&array.elements, level)?,
        NodeEnum::RowExpr(row) => walk.nodes(&row.args, level)?,
        NodeEnum::AIndirection(indirection) => {
            walk.boxed(&indirection.arg, level)?;
            walk.nodes(&indirection.indirection, level)?;
        }
        NodeEnum::AIndices(indices) => {
            walk.boxed(&indices.lidx, level)?;
            walk.boxed(&indices.uidx, level)?;
        }
        NodeEnum::CollateClause(collate) => walk.boxed(&collate.arg, level)?,
        NodeEnum::SortBy(sort) => walk.boxed(&sort.node, level)?,
        NodeEnum::ResTarget(target) => {
            walk.boxed(&target.val, level)?;
            walk.nodes(&target.indirection, level)?;
        }
        NodeEnum::GroupingSet(set) => walk.nodes(&set.content, level)?,
        NodeEnum::GroupingFunc(grouping) => walk.nodes(&grouping.args, level)?,
        NodeEnum::List(list) => walk.nodes(&list.items, level)?,
        _ => return Err(NotGathered::Unreadable("an expression")),
    }
    Ok(())
}

fn function<'a>(
    walk: &mut impl Visit<'a>,
    call: &'a pb::FuncCall,
    level: usize,
) -> Result<(), NotGathered> {
    if let Some(NodeEnum::String(name)) = call.funcname.last().and_then(|n| n.node.as_ref()) {
        walk.call(name.sval.as_str());
    }
    walk.nodes(&call.args, level)?;
    walk.nodes(&call.agg_order, level)?;
    walk.boxed(&call.agg_filter, level)?;
    match &call.over {
        Some(over) => window_def(walk, over, level),
        None => Ok(()),
    }
}

fn window_def<'a>(
    walk: &mut impl Visit<'a>,
    window: &'a pb::WindowDef,
    level: usize,
) -> Result<(), NotGathered> {
    walk.nodes(&window.partition_clause, level)?;
    walk.nodes(&window.order_clause, level)?;
    walk.boxed(&window.start_offset, level)?;
    walk.boxed(&window.end_offset, level)
}
