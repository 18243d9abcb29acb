//! pg_query nodes as the cross-shard planner reads and builds them: names,
//! integer literals, `*`, an expression's shape without its locations,
//! select-list items, and the casts, literals and sort keys a rewrite adds.

use parser_ffi::protobuf::{self as pb, node::Node as N};

/// A call's function name, lower-cased as the parser leaves it; a schema
/// other than `pg_catalog` makes it a user function (`None`).
pub(super) fn function_name(call: &pb::FuncCall) -> Option<&str> {
    let names: Vec<&str> = call
        .funcname
        .iter()
        .filter_map(|n| match &n.node {
            Some(N::String(s)) => Some(s.sval.as_str()),
            _ => None,
        })
        .collect();
    match names.as_slice() {
        [name] | ["pg_catalog", name] => Some(name),
        _ => None,
    }
}

/// `GROUPING SETS`, `ROLLUP`, `CUBE`.
pub(super) fn is_grouping_set(node: &pb::Node) -> bool {
    matches!(node.node, Some(N::GroupingSet(_)))
}

/// An integer literal.
pub(super) fn integer(node: &pb::Node) -> Option<i64> {
    match &node.node {
        Some(N::AConst(pb::AConst {
            val: Some(pb::a_const::Val::Ival(i)),
            ..
        })) => Some(i64::from(i.ival)),
        Some(N::AConst(pb::AConst {
            val: Some(pb::a_const::Val::Fval(f)),
            ..
        })) => f.fval.parse().ok(),
        _ => None,
    }
}

/// `*` or `t.*`.
pub(super) fn is_star(node: Option<&pb::Node>) -> bool {
    match node.and_then(|n| n.node.as_ref()) {
        Some(N::ColumnRef(c)) => c.fields.iter().any(|f| matches!(f.node, Some(N::AStar(_)))),
        _ => false,
    }
}

/// An unqualified column name (`ORDER BY total`).
pub(super) fn bare_name(node: &pb::Node) -> Option<&str> {
    match &node.node {
        Some(N::ColumnRef(c)) => match c.fields.as_slice() {
            [pb::Node {
                node: Some(N::String(s)),
            }] => Some(&s.sval),
            _ => None,
        },
        _ => None,
    }
}

/// An expression with its locations taken out: two expressions with the
/// same shape are the same expression.
pub(super) fn shape(node: &pb::Node) -> String {
    let text = format!("{node:?}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    // `location`, and `rexpr_list_start` / `list_end` and the like.
    while let Some(at) = position_field(rest) {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        rest = tail.trim_start_matches(|c: char| c == '-' || c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// The end of the next `location: ` / `_start: ` / `_end: ` label in `text`.
fn position_field(text: &str) -> Option<usize> {
    ["location: ", "_start: ", "_end: "]
        .iter()
        .filter_map(|label| text.find(label).map(|at| at + label.len()))
        .min()
}

/// An int8 constant.
pub(super) fn int8_literal(value: i64) -> pb::Node {
    let constant = match i32::try_from(value) {
        Ok(ival) => pb::a_const::Val::Ival(pb::Integer { ival }),
        Err(_) => pb::a_const::Val::Fval(pb::Float {
            fval: value.to_string(),
        }),
    };
    pb::Node {
        node: Some(N::AConst(pb::AConst {
            isnull: false,
            location: -1,
            val: Some(constant),
        })),
    }
}

/// `node::pg_catalog.int8`.
pub(super) fn int8_cast(node: pb::Node) -> pb::Node {
    type_cast(node, "int8")
}

/// `node::pg_catalog.<type_name>`.
pub(super) fn type_cast(node: pb::Node, type_name: &str) -> pb::Node {
    let name = |s: &str| pb::Node {
        node: Some(N::String(pb::String { sval: s.into() })),
    };
    pb::Node {
        node: Some(N::TypeCast(Box::new(pb::TypeCast {
            arg: Some(Box::new(node)),
            type_name: Some(pb::TypeName {
                names: vec![name("pg_catalog"), name(type_name)],
                type_oid: 0,
                setof: false,
                pct_type: false,
                typmods: Vec::new(),
                typemod: -1,
                array_bounds: Vec::new(),
                location: -1,
            }),
            location: -1,
        }))),
    }
}

/// The name Postgres gives a select-list item's column: its alias, else a
/// column reference's column or a function call's function name.
pub(super) fn output_name(target: &pb::Node) -> Option<&str> {
    let Some(N::ResTarget(target)) = &target.node else {
        return None;
    };
    if !target.name.is_empty() {
        return Some(&target.name);
    }
    match target.val.as_deref().and_then(|v| v.node.as_ref())? {
        N::ColumnRef(c) => match c.fields.last()?.node.as_ref()? {
            N::String(s) => Some(&s.sval),
            _ => None,
        },
        N::FuncCall(call) => match call.funcname.last()?.node.as_ref()? {
            N::String(s) => Some(&s.sval),
            _ => None,
        },
        _ => None,
    }
}

/// `ORDER BY node` (ascending, default NULLS order).
pub(super) fn sort_by(node: &pb::Node) -> pb::Node {
    pb::Node {
        node: Some(N::SortBy(Box::new(pb::SortBy {
            node: Some(Box::new(node.clone())),
            sortby_dir: pb::SortByDir::SortbyDefault as i32,
            sortby_nulls: pb::SortByNulls::SortbyNullsDefault as i32,
            use_op: Vec::new(),
            location: -1,
        }))),
    }
}

/// A select-list item of `node`, unnamed.
pub(super) fn res_target(node: pb::Node) -> pb::Node {
    pb::Node {
        node: Some(N::ResTarget(Box::new(pb::ResTarget {
            name: String::new(),
            indirection: Vec::new(),
            val: Some(Box::new(node)),
            location: -1,
        }))),
    }
}

/// A select-list item's expression.
pub(super) fn target_val(node: &pb::Node) -> Option<&pb::Node> {
    match &node.node {
        Some(N::ResTarget(target)) => target.val.as_deref(),
        _ => None,
    }
}

/// An ORDER BY item's expression.
pub(super) fn sort_node(node: &pb::Node) -> Option<&pb::Node> {
    match &node.node {
        Some(N::SortBy(sort)) => sort.node.as_deref(),
        _ => None,
    }
}
