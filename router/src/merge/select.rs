//! One SELECT planned for a merge: the constructs no merge answers
//! refused, what the query needs (sorting, LIMIT and OFFSET, groups and
//! aggregates, DISTINCT [ON], HAVING) read into a [`MergePlan`], and the
//! statement rewritten for the shards (hidden columns, LIMIT n + m).

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::aggregates;
use super::columns::{add_hidden, group_columns, resolve, sort_keys};
use super::having;
use super::keys::KeyColumns;
use super::nodes::{self, sort_node, target_val};
use super::sorted;
use super::{Bound, Limit, MergePlan, Unmergeable};

/// The plan, and whether the select was rewritten; `None` when the rows
/// concatenate.
pub(super) fn plan_select(
    select: &mut pb::SelectStmt,
    keys: &KeyColumns,
) -> Result<Option<(MergePlan, bool)>, Unmergeable> {
    // GROUP BY a sharding key: each shard's groups are whole, its rows
    // final (HAVING included); they merge like plain rows.
    let whole_groups = keys.groups_whole(&select.group_clause, &select.target_list);
    refuse_constructs(select, keys, whole_groups)?;
    let star = select
        .target_list
        .iter()
        .any(|t| nodes::is_star(target_val(t)));
    let aggregates = !whole_groups && is_aggregating(select);
    let distinct_on = select.distinct_clause.iter().any(|d| d.node.is_some());
    let distinct = !select.distinct_clause.is_empty() && !distinct_on;
    refuse_aggregated(aggregates, (distinct, distinct_on), star)?;
    let limited = select.limit_count.is_some() || select.limit_offset.is_some();
    if !aggregates && !distinct && !distinct_on && !limited && select.sort_clause.is_empty() {
        return Ok(None);
    }
    let mut rewritten = false;
    if distinct_on && select.sort_clause.is_empty() {
        // Any row per key is Postgres's answer: the shards sort by the
        // keys so that the merge sees each key's rows together.
        rewritten = true;
        select.sort_clause = select.distinct_clause.iter().map(nodes::sort_by).collect();
    }
    let limit = Limit {
        count: bound(select.limit_count.as_deref(), "LIMIT")?,
        offset: bound(select.limit_offset.as_deref(), "OFFSET")?,
    };
    let mut hidden = Vec::new();
    let order = sort_keys(select, &mut hidden)?;
    let having = match select.having_clause.take_if(|_| aggregates) {
        None => None,
        Some(node) => {
            rewritten = true;
            Some(having_predicate(select, &mut hidden, &node)?)
        }
    };
    let distinct_keys = match distinct_on {
        true => distinct_keys(select, &mut hidden)?,
        false => Vec::new(),
    };
    let mut delimiters = Vec::new();
    let mut groups = if aggregates {
        Some(group_columns(&mut *select, &mut hidden, &mut delimiters)?)
    } else {
        None
    };
    let group_hash = match aggregates || distinct {
        true => sorted::sort_groups(select, &mut hidden, groups.as_mut(), &order)?,
        false => None,
    };
    rewritten |= !hidden.is_empty();
    let hidden_count = hidden.len();
    select.target_list.extend(hidden);
    rewritten |= limit_for_shards(select, aggregates || distinct, &limit);
    let plan = MergePlan {
        shard_sql: None,
        hidden: hidden_count,
        targets: select.target_list.len() - hidden_count,
        order,
        limit,
        groups,
        distinct,
        distinct_on: distinct_keys,
        having,
        delimiters,
        group_hash,
    };
    Ok(Some((plan, rewritten)))
}

/// What the merge cannot do when groups span shards (`aggregates`):
/// DISTINCT [ON] over the merged groups' rows (equal aggregates of
/// different groups are one row), or `*` beside aggregates.
fn refuse_aggregated(
    aggregates: bool,
    (distinct, distinct_on): (bool, bool),
    star: bool,
) -> Result<(), Unmergeable> {
    match (aggregates, distinct, distinct_on, star) {
        (false, ..) => Ok(()),
        (true, _, true, _) => Err(Unmergeable::Construct("DISTINCT ON with aggregates")),
        (true, true, _, _) => Err(Unmergeable::Construct("DISTINCT with aggregates")),
        (true, _, _, true) => Err(Unmergeable::Construct(
            "an aggregate with * in the select list",
        )),
        _ => Ok(()),
    }
}

/// Whether `select` aggregates (rule 3): GROUP BY, HAVING, or an
/// aggregate in its select list or ORDER BY.
fn is_aggregating(select: &pb::SelectStmt) -> bool {
    !select.group_clause.is_empty()
        || select.having_clause.is_some()
        || select
            .target_list
            .iter()
            .any(|t| aggregates::has_aggregate(target_val(t)))
        || select
            .sort_clause
            .iter()
            .any(|s| aggregates::has_aggregate(sort_node(s)))
}

/// HAVING read into the predicate the merge evaluates (rule 5), the
/// aggregates and keys it reads matched to columns or added as hidden ones.
fn having_predicate(
    select: &mut pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
    node: &pb::Node,
) -> Result<having::Predicate, Unmergeable> {
    let mut column = |n: &pb::Node| -> Result<usize, Unmergeable> {
        Ok(match resolve(select, Some(n), false)? {
            Some(column) => column,
            None => add_hidden(select, hidden, Some(n)),
        })
    };
    having::predicate(node, &mut column)
}

/// The columns of DISTINCT ON's keys, hidden ones added for the rest.
fn distinct_keys(
    select: &mut pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
) -> Result<Vec<usize>, Unmergeable> {
    let mut keys = Vec::new();
    for item in select.distinct_clause.clone() {
        let column = match resolve(select, Some(&item), true)? {
            Some(column) => column,
            None => add_hidden(select, hidden, Some(&item)),
        };
        keys.push(column);
    }
    Ok(keys)
}

/// The shards' LIMIT and OFFSET: none when the merge needs every shard's
/// groups (`whole`), `LIMIT n + m` for `LIMIT n OFFSET m`; whether the
/// statement changed.
fn limit_for_shards(select: &mut pb::SelectStmt, whole: bool, limit: &Limit) -> bool {
    let limited = select.limit_count.is_some() || select.limit_offset.is_some();
    if whole {
        // Every shard's groups are needed: the window is the merge's.
        select.limit_count = None;
        select.limit_offset = None;
        return limited;
    }
    if limit.offset.is_none() {
        return false;
    }
    let offset = select.limit_offset.take();
    if let (Some(count), Some(offset)) = (select.limit_count.take(), offset) {
        select.limit_count = Some(pushed_limit(count, offset));
    }
    true
}

/// Everything rule 3 and the module docs list as refused.
fn refuse_constructs(
    select: &pb::SelectStmt,
    keys: &KeyColumns,
    whole_groups: bool,
) -> Result<(), Unmergeable> {
    use Unmergeable::Construct;
    if select.op != pb::SetOperation::SetopNone as i32 {
        return Err(Construct("a set operation (UNION, INTERSECT, EXCEPT)"));
    }
    if !select.values_lists.is_empty() {
        return Ok(());
    }
    // FOR UPDATE / SHARE: each shard locks the rows it returns (with a
    // LIMIT, up to the LIMIT's rows each: more than one Postgres locks).
    // NOWAIT or SKIP LOCKED would make a shard fail on, or skip, rows the
    // limit may not reach, so other rows would fill it.
    let waits = |node: &pb::Node| {
        matches!(&node.node, Some(N::LockingClause(c))
            if c.wait_policy != pb::LockWaitPolicy::LockWaitBlock as i32)
    };
    let limited = select.limit_count.is_some() || select.limit_offset.is_some();
    if limited && select.locking_clause.iter().any(waits) {
        return Err(Construct(
            "FOR UPDATE / FOR SHARE with NOWAIT or SKIP LOCKED and LIMIT or OFFSET",
        ));
    }
    if select.group_distinct || select.group_clause.iter().any(nodes::is_grouping_set) {
        return Err(Construct("GROUPING SETS, ROLLUP or CUBE"));
    }
    if !select.window_clause.is_empty() {
        return Err(Construct("a window function"));
    }
    if select.limit_option == pb::LimitOption::WithTies as i32 {
        return Err(Construct("FETCH FIRST ... WITH TIES"));
    }
    let lists = select.target_list.iter().map(target_val);
    let sorts = select.sort_clause.iter().map(sort_node);
    for node in lists
        .chain(sorts)
        .chain(select.group_clause.iter().map(Some))
        .chain(std::iter::once(select.having_clause.as_deref()))
    {
        aggregates::check(node, keys, whole_groups)?;
    }
    for item in &select.from_clause {
        aggregates::check_from(item)?;
    }
    if let Some(with) = &select.with_clause {
        for cte in &with.ctes {
            if let Some(N::CommonTableExpr(cte)) = &cte.node {
                aggregates::check_nested(cte.ctequery.as_deref(), "a WITH query")?;
            }
        }
    }
    Ok(())
}

/// `LIMIT count + offset` for the shards: a literal when both are, else
/// `count::int8 + offset::int8` (the casts keep a parameter's inferred type
/// int8, as in `LIMIT $1`).
fn pushed_limit(count: Box<pb::Node>, offset: Box<pb::Node>) -> Box<pb::Node> {
    if let (Some(n), Some(m)) = (nodes::integer(&count), nodes::integer(&offset)) {
        return Box::new(nodes::int8_literal(n.saturating_add(m)));
    }
    let operator = pb::Node {
        node: Some(N::String(pb::String { sval: "+".into() })),
    };
    Box::new(pb::Node {
        node: Some(N::AExpr(Box::new(pb::AExpr {
            kind: pb::AExprKind::AexprOp as i32,
            name: vec![operator],
            lexpr: Some(Box::new(nodes::int8_cast(*count))),
            rexpr: Some(Box::new(nodes::int8_cast(*offset))),
            rexpr_list_start: -1,
            rexpr_list_end: -1,
            location: -1,
        }))),
    })
}

/// A LIMIT or OFFSET value (rule 6); `None` for absent, ALL or NULL.
fn bound(node: Option<&pb::Node>, what: &'static str) -> Result<Option<Bound>, Unmergeable> {
    let Some(node) = node else {
        return Ok(None);
    };
    match &node.node {
        Some(N::AConst(constant)) if constant.isnull => Ok(None),
        Some(N::ParamRef(param)) => u16::try_from(param.number)
            .map(|n| Some(Bound::Param(n)))
            .map_err(|_| Unmergeable::BoundParam {
                what,
                number: param.number,
            }),
        _ => match nodes::integer(node) {
            Some(value) => Ok(Some(Bound::Value(value))),
            None => Err(Unmergeable::Construct(match what {
                "LIMIT" => "a LIMIT that is not an integer or a parameter",
                _ => "an OFFSET that is not an integer or a parameter",
            })),
        },
    }
}
