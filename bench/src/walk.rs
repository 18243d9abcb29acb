//! The reference walk for benches: from a zero-copy tree, collect the tables a
//! statement touches and its `column = value` predicates (value a literal or a
//! bind parameter, possibly cast). Roughly what a router needs to read.

use parser_ffi::view::{self, ConstValue, Node, NodeRef, Walk};
use smallvec::SmallVec;

/// The value side of a `column = value` predicate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Const(ConstValue<'a>),
    Param(i32),
}

/// What the walk found (inline up to 8 of each, as a router's statement
/// summary would keep them).
#[derive(Debug, Default)]
pub struct Found<'a> {
    pub tables: SmallVec<[&'a str; 8]>,
    pub predicates: SmallVec<[(&'a str, Value<'a>); 8]>,
}

/// Walk every statement of `tree`.
pub fn tables_and_predicates(tree: &parser_ffi::ParseTree) -> Found<'_> {
    let mut found = Found::default();
    for stmt in tree.statements() {
        if let Some(root) = stmt.stmt() {
            view::walk(root, |node| visit(node, &mut found));
        }
    }
    found
}

fn visit<'a>(node: NodeRef<'a>, found: &mut Found<'a>) -> Walk {
    match node {
        NodeRef::RangeVar(range_var) => {
            if let Some(name) = range_var.relname() {
                found.tables.push(name);
            }
            // Below a table name is its alias: names only.
            return Walk::SkipChildren;
        }
        NodeRef::AExpr(expr) if expr.kind() == parser_ffi::protobuf::AExprKind::AexprOp => {
            let (left, right) = (expr.lexpr(), expr.rexpr());
            let is_eq = expr.name().len() == 1
                && matches!(expr.name().get(0).map(Node::kind), Some(NodeRef::String(op)) if op.sval() == Some("="));
            if is_eq {
                if let (Some(column), Some(value)) =
                    (left.and_then(column_name), right.and_then(value))
                {
                    found.predicates.push((column, value));
                } else if let (Some(value), Some(column)) =
                    (left.and_then(value), right.and_then(column_name))
                {
                    found.predicates.push((column, value));
                }
            }
            // `column op value`: nothing below but names and values (its
            // operator name is a String list).
            if left.is_none_or(is_leaf) && right.is_none_or(is_leaf) {
                return Walk::SkipChildren;
            }
        }
        // Nodes over leaves only (names, values, columns): nothing below.
        NodeRef::ResTarget(target)
            if target.indirection().is_empty() && target.val().is_none_or(is_leaf) =>
        {
            return Walk::SkipChildren;
        }
        NodeRef::TypeCast(cast) if cast.arg().is_none_or(is_leaf) => return Walk::SkipChildren,
        NodeRef::SortBy(sort) if sort.node().is_none_or(is_leaf) => return Walk::SkipChildren,
        NodeRef::FuncCall(call)
            if call.agg_order().is_empty()
                && call.agg_filter().is_none()
                && call.over().is_none()
                && call.args().iter().all(|arg| arg.is_none_or(is_leaf)) =>
        {
            return Walk::SkipChildren;
        }
        // Leaves for this purpose: their children (a column reference's name
        // parts, a type's name) hold no tables or predicates; read above.
        NodeRef::ColumnRef(_)
        | NodeRef::ParamRef(_)
        | NodeRef::AConst(_)
        | NodeRef::TypeName(_)
        | NodeRef::String(_)
        | NodeRef::AStar(_) => return Walk::SkipChildren,
        _ => {}
    }
    Walk::Continue
}

/// A column reference, constant or parameter (possibly cast): no tables or
/// predicates below it.
fn is_leaf(node: Node<'_>) -> bool {
    match node.kind() {
        NodeRef::ColumnRef(_) | NodeRef::AConst(_) | NodeRef::ParamRef(_) => true,
        NodeRef::TypeCast(cast) => cast.arg().is_some_and(is_leaf),
        _ => false,
    }
}

/// The last name of a column reference (`t.tenant_id` -> `tenant_id`).
fn column_name(node: Node<'_>) -> Option<&str> {
    let NodeRef::ColumnRef(column) = node.kind() else {
        return None;
    };
    let fields = column.fields();
    match fields.get(fields.len().checked_sub(1)?)?.kind() {
        NodeRef::String(name) => name.sval(),
        _ => None,
    }
}

fn value(node: Node<'_>) -> Option<Value<'_>> {
    match node.kind() {
        NodeRef::AConst(constant) => constant.val().map(Value::Const),
        NodeRef::ParamRef(param) => Some(Value::Param(param.number())),
        NodeRef::TypeCast(cast) => cast.arg().and_then(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shared_corpus;

    /// The same collection over every node: no subtree skipped.
    fn everything<'a>(tree: &'a parser_ffi::ParseTree) -> Found<'a> {
        let mut found = Found::default();
        for stmt in tree.statements() {
            if let Some(root) = stmt.stmt() {
                view::walk(root, |node| {
                    let mut skipped = Found::default();
                    visit(node, &mut skipped);
                    found.tables.extend(skipped.tables);
                    found.predicates.extend(skipped.predicates);
                    Walk::Continue
                });
            }
        }
        found
    }

    fn sorted<'a>(found: Found<'a>) -> (Vec<&'a str>, Vec<String>) {
        let mut tables = found.tables.to_vec();
        tables.sort_unstable();
        let mut predicates: Vec<String> =
            found.predicates.iter().map(|p| format!("{p:?}")).collect();
        predicates.sort_unstable();
        (tables, predicates)
    }

    #[test]
    fn skipping_subtrees_loses_nothing_on_the_corpus() {
        let mut checked = 0;
        for (name, sql) in shared_corpus::corpus() {
            let Ok(tree) = parser_ffi::ParseTree::parse(&sql) else {
                continue;
            };
            assert_eq!(
                sorted(tables_and_predicates(&tree)),
                sorted(everything(&tree)),
                "{name}: {sql}"
            );
            checked += 1;
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn finds_tables_and_key_predicates() {
        let tree = parser_ffi::ParseTree::parse(
            "SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id \
             WHERE o.tenant_id = $1::bigint AND 'x' = c.region AND o.amount > 5",
        )
        .unwrap();
        let found = tables_and_predicates(&tree);
        let mut tables = found.tables.clone();
        tables.sort();
        assert_eq!(tables.as_slice(), ["customers", "orders"]);
        let mut predicates = found.predicates.clone();
        predicates.sort_by_key(|(column, _)| *column);
        assert_eq!(
            predicates.as_slice(),
            [
                ("region", Value::Const(ConstValue::String("x"))),
                ("tenant_id", Value::Param(1)),
            ]
        );
    }
}
