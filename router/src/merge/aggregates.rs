//! Aggregates as the cross-shard planner reads them: where the aggregates
//! and window functions of a SELECT are, which aggregates combine exactly
//! (and what a select-list item's column is), what FROM items and nested
//! queries must not do, and the rewrites `avg` and the spreads (`stddev`,
//! `variance`) run as on the shards.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::keys::KeyColumns;
use super::nodes::{function_name, type_cast};
use super::{Aggregate, Column, Unmergeable};

/// Postgres's built-in aggregates whose partial results pgshard does not
/// combine (those it does are [`supported`]); a call of one is refused.
const OTHER_AGGREGATES: &[&str] = &[
    "avg",
    "any_value",
    "bit_and",
    "bit_or",
    "bit_xor",
    "corr",
    "covar_pop",
    "covar_samp",
    "cume_dist",
    "dense_rank",
    "json_agg",
    "json_agg_strict",
    "json_object_agg",
    "json_object_agg_strict",
    "json_object_agg_unique",
    "json_object_agg_unique_strict",
    "jsonb_agg",
    "jsonb_agg_strict",
    "jsonb_object_agg",
    "jsonb_object_agg_strict",
    "jsonb_object_agg_unique",
    "jsonb_object_agg_unique_strict",
    "mode",
    "percent_rank",
    "percentile_cont",
    "percentile_disc",
    "range_agg",
    "range_intersect_agg",
    "rank",
    "regr_avgx",
    "regr_avgy",
    "regr_count",
    "regr_intercept",
    "regr_r2",
    "regr_slope",
    "regr_sxx",
    "regr_sxy",
    "regr_syy",
    "xmlagg",
];

/// The aggregates that combine exactly.
fn supported(name: &str) -> Option<Aggregate> {
    Some(match name {
        "count" => Aggregate::Count,
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "bool_and" | "every" => Aggregate::BoolAnd,
        "bool_or" => Aggregate::BoolOr,
        "avg" => Aggregate::Avg,
        "stddev" | "stddev_samp" => Aggregate::Spread {
            sample: true,
            root: true,
        },
        "variance" | "var_samp" => Aggregate::Spread {
            sample: true,
            root: false,
        },
        "stddev_pop" => Aggregate::Spread {
            sample: false,
            root: true,
        },
        "var_pop" => Aggregate::Spread {
            sample: false,
            root: false,
        },
        "string_agg" => Aggregate::Ordered { string: true },
        "array_agg" => Aggregate::Ordered { string: false },
        _ => return None,
    })
}

/// Whether `call` is an aggregate call (not a window function).
fn is_aggregate_call(call: &pb::FuncCall) -> bool {
    if call.over.is_some() {
        return false;
    }
    let named = function_name(call)
        .is_some_and(|name| supported(name).is_some() || OTHER_AGGREGATES.contains(&name));
    named
        || call.agg_star
        || call.agg_distinct
        || call.agg_within_group
        || call.agg_filter.is_some()
        || !call.agg_order.is_empty()
}

/// Visit every function call of an expression, outside sublinks (their
/// aggregates are their own query's). An expression kind this walker does
/// not know is refused when it hides a call.
fn calls(
    node: Option<&pb::Node>,
    visit: &mut dyn FnMut(&pb::FuncCall) -> Result<(), Unmergeable>,
) -> Result<(), Unmergeable> {
    let Some(node) = node.and_then(|n| n.node.as_ref()) else {
        return Ok(());
    };
    let all = |nodes: &[pb::Node],
               visit: &mut dyn FnMut(&pb::FuncCall) -> Result<(), Unmergeable>| {
        nodes.iter().try_for_each(|n| calls(Some(n), visit))
    };
    match node {
        N::FuncCall(call) => {
            visit(call)?;
            all(&call.args, visit)?;
            all(&call.agg_order, visit)?;
            calls(call.agg_filter.as_deref(), visit)
        }
        N::AExpr(e) => {
            calls(e.lexpr.as_deref(), visit)?;
            calls(e.rexpr.as_deref(), visit)
        }
        N::BoolExpr(e) => all(&e.args, visit),
        N::TypeCast(e) => calls(e.arg.as_deref(), visit),
        N::CollateClause(e) => calls(e.arg.as_deref(), visit),
        N::NullTest(e) => calls(e.arg.as_deref(), visit),
        N::BooleanTest(e) => calls(e.arg.as_deref(), visit),
        N::CoalesceExpr(e) => all(&e.args, visit),
        N::MinMaxExpr(e) => all(&e.args, visit),
        N::CaseExpr(e) => {
            calls(e.arg.as_deref(), visit)?;
            all(&e.args, visit)?;
            calls(e.defresult.as_deref(), visit)
        }
        N::CaseWhen(e) => {
            calls(e.expr.as_deref(), visit)?;
            calls(e.result.as_deref(), visit)
        }
        N::RowExpr(e) => all(&e.args, visit),
        N::AArrayExpr(e) => all(&e.elements, visit),
        N::NamedArgExpr(e) => calls(e.arg.as_deref(), visit),
        N::AIndirection(e) => calls(e.arg.as_deref(), visit),
        N::List(e) => all(&e.items, visit),
        N::SortBy(e) => calls(e.node.as_deref(), visit),
        N::ColumnRef(_) | N::AConst(_) | N::ParamRef(_) | N::AStar(_) | N::SubLink(_) => Ok(()),
        N::SqlvalueFunction(_) | N::String(_) | N::Integer(_) => Ok(()),
        N::GroupingFunc(_) => Err(Unmergeable::Construct("GROUPING()")),
        other => {
            if format!("{other:?}").contains("FuncCall") {
                Err(Unmergeable::Unreadable(
                    "an expression kind it does not know holds a function call",
                ))
            } else {
                Ok(())
            }
        }
    }
}

/// Whether an expression holds an aggregate call (outside sublinks).
pub(super) fn has_aggregate(node: Option<&pb::Node>) -> bool {
    calls(node, &mut |call| {
        if is_aggregate_call(call) {
            Err(Unmergeable::Average)
        } else {
            Ok(())
        }
    })
    .is_err()
}

/// Refuse window functions and aggregates that do not combine. When each
/// shard's groups are whole (`whole_groups`), every aggregate is final on
/// its shard. An aggregate over the DISTINCT values of a sharding key
/// combines as the aggregate does: each value is on one shard.
pub(super) fn check(
    node: Option<&pb::Node>,
    keys: &KeyColumns,
    whole_groups: bool,
) -> Result<(), Unmergeable> {
    calls(node, &mut |call| {
        if call.over.is_some() {
            return Err(Unmergeable::Construct("a window function"));
        }
        if !is_aggregate_call(call) || whole_groups {
            return Ok(());
        }
        let name = function_name(call).unwrap_or("a user-defined aggregate");
        if let Some(Aggregate::Ordered { string }) = supported(name) {
            return super::ordered::check(call, string);
        }
        let distinct_keys = matches!(
            supported(name),
            Some(
                Aggregate::Count
                    | Aggregate::Sum
                    | Aggregate::Min
                    | Aggregate::Max
                    | Aggregate::Avg
            )
        ) && matches!(call.args.as_slice(), [arg] if keys.is_key(Some(arg)));
        if call.agg_distinct && !distinct_keys {
            return Err(Unmergeable::Construct(
                "an aggregate over DISTINCT values (count(DISTINCT ...)) of a column that is not the sharding key",
            ));
        }
        if call.agg_within_group {
            return Err(Unmergeable::Aggregate(name.to_owned()));
        }
        match supported(name) {
            Some(_) => Ok(()),
            None => Err(Unmergeable::Aggregate(name.to_owned())),
        }
    })
}

/// A select-list column of an aggregating query: a group key (no aggregate
/// in it) or exactly one supported aggregate call.
pub(super) fn column_kind(node: Option<&pb::Node>) -> Result<Column, Unmergeable> {
    if !has_aggregate(node) {
        return Ok(Column::Key);
    }
    // `count(*)::int`: a cast to a number type keeps the order of the
    // values and sums of them, so partial results combine in the cast's
    // type (the merge checks its range as the cast would).
    let (call, cast) = match node.and_then(|n| n.node.as_ref()) {
        Some(N::FuncCall(call)) => (Some(call), None),
        Some(N::TypeCast(cast)) => match cast.arg.as_deref().and_then(|a| a.node.as_ref()) {
            Some(N::FuncCall(call)) => (Some(call), cast.type_name.as_ref()),
            _ => (None, None),
        },
        _ => (None, None),
    };
    if let Some(call) = call {
        let inner = call.args.iter().any(|a| has_aggregate(Some(a)));
        if let (Some(kind), false) = (function_name(call).and_then(supported), inner) {
            let cast_ok = match cast {
                None => true,
                Some(type_name) => {
                    matches!(
                        kind,
                        Aggregate::Count | Aggregate::Sum | Aggregate::Min | Aggregate::Max
                    ) && number_type(type_name)
                }
            };
            if cast_ok && call.over.is_none() {
                return Ok(Column::Aggregate(kind));
            }
        }
    }
    Err(Unmergeable::AggregateInExpression)
}

/// `int2`, `int4`, `int8` or `numeric` (any typmod: rounding keeps order),
/// as the parser names them.
fn number_type(type_name: &pb::TypeName) -> bool {
    let last = type_name.names.last().and_then(|n| match &n.node {
        Some(N::String(s)) => Some(s.sval.as_str()),
        _ => None,
    });
    type_name.array_bounds.is_empty() && matches!(last, Some("int2" | "int4" | "int8" | "numeric"))
}

/// A FROM item: subqueries in it run on each shard alone, so they must not
/// need rows of other shards.
pub(super) fn check_from(item: &pb::Node) -> Result<(), Unmergeable> {
    match &item.node {
        Some(N::RangeSubselect(sub)) => check_nested(sub.subquery.as_deref(), "a subquery in FROM"),
        Some(N::JoinExpr(join)) => {
            join.larg.as_deref().map_or(Ok(()), check_from)?;
            join.rarg.as_deref().map_or(Ok(()), check_from)
        }
        _ => Ok(()),
    }
}

/// A nested query that each shard computes over its own rows only: it must
/// not aggregate, deduplicate, sort-and-cut or combine rows across shards.
pub(super) fn check_nested(
    query: Option<&pb::Node>,
    what: &'static str,
) -> Result<(), Unmergeable> {
    let Some(N::SelectStmt(select)) = query.and_then(|q| q.node.as_ref()) else {
        return Ok(());
    };
    let refuse = || Err(Unmergeable::Construct(what_aggregates(what)));
    if select.op != pb::SetOperation::SetopNone as i32 {
        if select.op != pb::SetOperation::SetopUnion as i32 || !select.all {
            return refuse();
        }
        for arm in [&select.larg, &select.rarg].into_iter().flatten() {
            let node = pb::Node {
                node: Some(N::SelectStmt(arm.clone())),
            };
            check_nested(Some(&node), what)?;
        }
        return Ok(());
    }
    let cuts = !select.group_clause.is_empty()
        || select.having_clause.is_some()
        || !select.distinct_clause.is_empty()
        || select.limit_count.is_some()
        || select.limit_offset.is_some()
        || !select.window_clause.is_empty();
    let targets = select.target_list.iter().map(|t| match &t.node {
        Some(N::ResTarget(t)) => t.val.as_deref(),
        _ => None,
    });
    let mut windows = false;
    let mut aggregates = false;
    for target in targets {
        calls(target, &mut |call| {
            windows |= call.over.is_some();
            aggregates |= is_aggregate_call(call);
            Ok(())
        })?;
    }
    if cuts || windows || aggregates {
        return refuse();
    }
    select.from_clause.iter().try_for_each(check_from)
}

fn what_aggregates(what: &'static str) -> &'static str {
    match what {
        "a WITH query" => "a WITH query that aggregates, deduplicates, limits or combines rows",
        _ => "a subquery in FROM that aggregates, deduplicates, limits or combines rows",
    }
}

/// Rewrite the select-list item `avg(args) [FILTER]` to `sum(args)
/// [FILTER]`; the `count(args) [FILTER]` to run beside it.
pub(super) fn average_to_sum(target: &mut pb::Node) -> Result<pb::Node, Unmergeable> {
    let Some(N::ResTarget(target)) = &mut target.node else {
        return Err(Unmergeable::AggregateInExpression);
    };
    if target.name.is_empty() {
        // The client's column keeps the name Postgres gives it.
        target.name = "avg".into();
    }
    let Some(pb::Node {
        node: Some(N::FuncCall(call)),
    }) = target.val.as_deref_mut()
    else {
        return Err(Unmergeable::AggregateInExpression);
    };
    let name = |s: &str| pb::Node {
        node: Some(N::String(pb::String { sval: s.into() })),
    };
    let mut count = call.clone();
    count.funcname = vec![name("pg_catalog"), name("count")];
    call.funcname = vec![name("pg_catalog"), name("sum")];
    Ok(pb::Node {
        node: Some(N::FuncCall(count)),
    })
}

/// Rewrite the select-list item `stddev(x) [FILTER]` (or another spread)
/// to `sum(x) [FILTER]`; the `count(x)` and `sum(x::numeric * x::numeric)`
/// (same FILTER) to run beside it.
pub(super) fn spread_to_sums(target: &mut pb::Node) -> Result<(pb::Node, pb::Node), Unmergeable> {
    let Some(N::ResTarget(res)) = &mut target.node else {
        return Err(Unmergeable::AggregateInExpression);
    };
    if res.name.is_empty() {
        // The client's column keeps the name Postgres gives it.
        let written = match res.val.as_deref().and_then(|v| v.node.as_ref()) {
            Some(N::FuncCall(call)) => function_name(call).map(str::to_owned),
            _ => None,
        };
        res.name = written.ok_or(Unmergeable::AggregateInExpression)?;
    }
    let Some(pb::Node {
        node: Some(N::FuncCall(call)),
    }) = res.val.as_deref_mut()
    else {
        return Err(Unmergeable::AggregateInExpression);
    };
    let [argument] = call.args.as_slice() else {
        return Err(Unmergeable::AggregateInExpression);
    };
    let name = |s: &str| pb::Node {
        node: Some(N::String(pb::String { sval: s.into() })),
    };
    let numeric = |node: &pb::Node| type_cast(node.clone(), "numeric");
    let square = pb::Node {
        node: Some(N::AExpr(Box::new(pb::AExpr {
            kind: pb::AExprKind::AexprOp as i32,
            name: vec![name("*")],
            lexpr: Some(Box::new(numeric(argument))),
            rexpr: Some(Box::new(numeric(argument))),
            rexpr_list_start: -1,
            rexpr_list_end: -1,
            location: -1,
        }))),
    };
    let mut count = call.clone();
    count.funcname = vec![name("pg_catalog"), name("count")];
    let mut squares = call.clone();
    squares.funcname = vec![name("pg_catalog"), name("sum")];
    squares.args = vec![square];
    call.funcname = vec![name("pg_catalog"), name("sum")];
    let node = |call: Box<pb::FuncCall>| pb::Node {
        node: Some(N::FuncCall(call)),
    };
    Ok((node(count), node(squares)))
}
