//! Cross-shard SELECT planning: what a keyless read that runs on several
//! shards needs so that the client gets exactly what one Postgres holding
//! every row would answer, or why pgshard cannot give that.
//!
//! [`plan`] reads one SELECT (pg_query's protobuf tree, decoded by
//! [`parser_ffi::parse_protobuf`]: the direct conversion's recursion has
//! debug-build frames too large for a tokio worker's stack, and a fan-out
//! costs far more than the decode) and gives a [`Shape`]:
//! - [`Shape::Concat`]: the shards' rows together are the answer, in any
//!   order (a plain filter, a co-located join): the proxy streams them
//!   untouched;
//! - [`Shape::Merge`]: a [`MergePlan`] the proxy applies to the shards'
//!   replies: a k-way merge of the shards' sorted streams (ORDER BY), LIMIT
//!   and OFFSET, partial aggregates combined per group (GROUP BY, plain
//!   aggregates, DISTINCT), and the statement the shards run instead of the
//!   client's (hidden sort and group columns appended to the select list,
//!   `LIMIT n OFFSET m` sent as `LIMIT n + m`);
//! - [`Shape::Refuse`]: anything whose rows depend on rows of several shards
//!   in a way the merge does not rebuild (window functions, set
//!   operations, `count(DISTINCT)` of a column that is not a key, aggregates inside expressions or in FROM
//!   subqueries and CTEs, `FOR UPDATE`, DISTINCT ON, ...), with the
//!   construct named.
//!
//! # Rules
//! 1. Output columns are the select list's, in order; a `*` stands for
//!    however many columns the shards describe. Hidden columns go after
//!    them and are stripped from every reply.
//! 2. A sort or group key is matched to an output column by position
//!    (`ORDER BY 2`), by an output name (`ORDER BY total` for `sum(x) AS
//!    total`; in GROUP BY only when no select-list expression matches), or
//!    by the same expression (`ORDER BY lower(name)` with `lower(name)` in
//!    the list; locations ignored). Otherwise it becomes a hidden column.
//! 3. A query aggregates when it has GROUP BY or an aggregate in its select
//!    list or ORDER BY. Each output column is then a group key (no
//!    aggregate in it: Postgres has checked it is computable from the
//!    groups) or one supported aggregate call: `count`, `sum`, `min`, `max`,
//!    `bool_and`, `bool_or`, `every`, `avg` (run as `sum` plus a hidden
//!    `count`), `stddev` / `variance` and their `_samp` / `_pop` forms (run
//!    as `sum` plus a hidden `count` and sum of squares in numeric; float
//!    arguments are refused when the shards describe them), with an
//!    optional FILTER. Shards return
//!    their partial groups, all of them (LIMIT and OFFSET are applied after
//!    merging, so they are taken off the shards' statement).
//! 4. Without aggregation, DISTINCT merges like a GROUP BY of every output
//!    column; DISTINCT ON keeps the first of the merged rows per key (the
//!    shards sort by the keys when the statement does not sort); ORDER BY is a k-way merge of the shards' own sorted output;
//!    `LIMIT n OFFSET m` asks each shard for `n + m` rows.
//! 5. HAVING is taken off the shards' statement; the aggregates and keys it
//!    reads become columns (hidden when not selected) and the merge keeps
//!    the groups it holds for (see `merge/having.rs` for what it can read).
//! 6. LIMIT / OFFSET are integer literals, bind parameters, `ALL` or NULL.
//! 7. A GROUP BY item that is a sharding key column (`merge/keys.rs` says
//!    which columns are) makes every group whole on its shard: any
//!    aggregate is final there, HAVING stays on the shards, and the rows
//!    merge like plain rows (rule 4). An aggregate over the DISTINCT values
//!    of a key column (`count(DISTINCT id)`) combines like the aggregate:
//!    each value's rows are on one shard. A plan that used the keys says so
//!    ([`Planned::by_key`]): it holds for that config only.
//!
//! The plan says nothing about types: the proxy compares and combines values
//! by the types the shards describe, and fails the statement (never guesses)
//! on a type or collation it cannot compare exactly.

mod expr;
mod having;
pub(crate) mod keys;
mod ordered;

#[cfg(test)]
mod tests;

use parser_ffi::protobuf::{self as pb, node::Node as N};

use crate::sharding::Sharding;
use keys::KeyColumns;

pub use having::{Comparison, Operand, Predicate};

/// What a cross-shard SELECT needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// The rows of every shard, in any order, are the answer.
    Concat,
    Merge(MergePlan),
    Refuse(Unmergeable),
}

/// How the shards' replies become the client's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MergePlan {
    /// The statement the shards run instead of the client's, when it differs.
    pub shard_sql: Option<String>,
    /// Hidden columns after the output columns (stripped from replies).
    pub hidden: usize,
    /// Items of the select list. Column numbers from `targets` on name
    /// hidden columns, counted from the end of the row minus `hidden` (a
    /// `*` stands for as many columns as the shards describe).
    pub targets: usize,
    /// Sort keys over the shards' columns (output and hidden), major first.
    pub order: Vec<SortKey>,
    /// Row window applied after merging.
    pub limit: Limit,
    /// Per shard column (output then hidden): group key or aggregate. `None`
    /// when the query does not aggregate; `Some` with no keys: one group.
    pub groups: Option<Vec<Column>>,
    /// Without aggregation: duplicate rows (all output columns) collapse.
    pub distinct: bool,
    /// DISTINCT ON: of the merged (sorted) rows, the first per value of
    /// these columns.
    pub distinct_on: Vec<usize>,
    /// HAVING, evaluated on the merged groups.
    pub having: Option<Predicate>,
    /// The delimiters of `string_agg` columns ([`Column::Ordered`]).
    pub delimiters: Vec<String>,
}

/// One sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    /// 0-based column of the shards' rows.
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A column of an aggregating query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Key,
    Aggregate(Aggregate),
    /// `avg(x)`: the shards return `sum(x)` here and `count(x)` in column
    /// `count`; the merge divides as Postgres's numeric division does.
    Average {
        count: usize,
    },
    /// `stddev` / `variance` and their `_samp` / `_pop` forms: the shards
    /// return `sum(x)` here, `count(x)` in column `count` and
    /// `sum(x::numeric * x::numeric)` in column `squares`; the merge
    /// finishes as Postgres's numeric_stddev_internal does.
    Spread {
        count: usize,
        squares: usize,
        sample: bool,
        root: bool,
    },
    /// `string_agg` / `array_agg` with an ORDER BY inside: the shards return
    /// `array_agg(x ORDER BY ...)` here and `array_agg(k ORDER BY ...)` for
    /// each of the `count` sort keys in the columns from `keys` on (bit i of
    /// `descending` / `nulls_first`: key i's direction); the merge
    /// interleaves them by the keys. `delimiter`: a `string_agg`'s, in
    /// [`MergePlan::delimiters`] (the array's values are joined with it).
    Ordered {
        keys: usize,
        count: u8,
        descending: u8,
        nulls_first: u8,
        delimiter: Option<usize>,
    },
    /// A sort key array of an [`Column::Ordered`], merged with it.
    OrderedKey,
}

/// An aggregate whose partial results combine exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// Partial counts are summed (int8).
    Count,
    /// Partial sums are summed in the result type (int8 or numeric).
    Sum,
    Min,
    Max,
    /// `bool_and` / `every`.
    BoolAnd,
    BoolOr,
    /// Only while planning: becomes [`Column::Average`].
    Avg,
    /// Only while planning: becomes [`Column::Spread`].
    Spread {
        sample: bool,
        root: bool,
    },
    /// Only while planning: becomes [`Column::Ordered`].
    Ordered {
        string: bool,
    },
}

/// LIMIT and OFFSET as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limit {
    /// `None`: no LIMIT (or `LIMIT ALL` / `LIMIT NULL`).
    pub count: Option<Bound>,
    pub offset: Option<Bound>,
}

/// A LIMIT or OFFSET value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Value(i64),
    /// `$n`, 1-based.
    Param(u16),
}

/// Why a cross-shard SELECT cannot be answered exactly; the message names
/// the construct and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unmergeable {
    #[error("{0} across shards is not supported: add the sharding key to the WHERE clause so the statement runs on one shard")]
    Construct(&'static str),
    #[error("aggregate {0}() across shards is not supported (count, sum, avg, min, max, bool_and, bool_or, stddev and variance are, and any aggregate grouped by the sharding key): add the sharding key to the WHERE clause so the statement runs on one shard")]
    Aggregate(String),
    /// Internal: marks an aggregate found while walking an expression.
    #[error("an aggregate")]
    Average,
    #[error("an aggregate inside an expression across shards is not supported: select the aggregate itself, or add the sharding key to the WHERE clause")]
    AggregateInExpression,
    #[error("the statement could not be analysed for a cross-shard merge: {0}")]
    Unreadable(String),
}

/// A plan, and whether it depends on which columns are sharding keys
/// (then it holds for this sharding config only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub shape: Shape,
    pub by_key: bool,
}

/// Plan the SELECT `sql` (one statement) for running on several shards of
/// `sharding`.
pub fn plan(sql: &str, sharding: &Sharding) -> Planned {
    let mut tree = match parser_ffi::parse_protobuf(sql) {
        Ok(tree) => tree,
        Err(err) => {
            return Planned {
                shape: Shape::Refuse(Unmergeable::Unreadable(err.to_string())),
                by_key: false,
            }
        }
    };
    let Some(select) = top_select(&mut tree) else {
        return Planned {
            shape: Shape::Concat,
            by_key: false,
        };
    };
    let keys = KeyColumns::of(select, sharding);
    let shape = match plan_select(select, &keys) {
        Ok(None) => Shape::Concat,
        Ok(Some((plan, rewritten))) => match rewritten {
            false => Shape::Merge(plan),
            true => match parser_ffi::deparse_protobuf(&tree) {
                Ok(sql) => Shape::Merge(MergePlan {
                    shard_sql: Some(sql),
                    ..plan
                }),
                Err(err) => Shape::Refuse(Unmergeable::Unreadable(err.to_string())),
            },
        },
        Err(why) => Shape::Refuse(why),
    };
    Planned {
        shape,
        by_key: keys.used(),
    }
}

/// An EXPLAIN of a SELECT that runs on several shards: the SELECT's shape,
/// whether the plan is in text (pgshard can add its own lines), and the
/// EXPLAIN the shards run when the SELECT is rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    pub shape: Shape,
    pub text: bool,
    pub shard_sql: Option<String>,
}

/// Whether the rows of `select` (a `COPY (query) TO`'s) need more than
/// the shards' rows side by side: `Ok(true)` for a merge, `Err` for what no
/// merge can answer.
pub fn select_needs_merge(
    select: &mut pb::SelectStmt,
    sharding: &Sharding,
) -> Result<bool, Unmergeable> {
    let keys = KeyColumns::of(select, sharding);
    plan_select(select, &keys).map(|plan| plan.is_some())
}

/// Plan `sql` if it is an EXPLAIN of a SELECT (`None` otherwise).
pub fn explain(sql: &str, sharding: &Sharding) -> Option<Explained> {
    let mut tree = parser_ffi::parse_protobuf(sql).ok()?;
    let [raw] = tree.stmts.as_mut_slice() else {
        return None;
    };
    let N::ExplainStmt(explain) = raw.stmt.as_mut()?.node.as_mut()? else {
        return None;
    };
    let text = explain.options.iter().all(|option| match &option.node {
        Some(N::DefElem(d)) if d.defname == "format" => matches!(
            d.arg.as_deref().and_then(|a| a.node.as_ref()),
            Some(N::String(s)) if s.sval.eq_ignore_ascii_case("text")
        ),
        _ => true,
    });
    let N::SelectStmt(select) = explain.query.as_mut()?.node.as_mut()? else {
        return None;
    };
    let keys = KeyColumns::of(select, sharding);
    let (shape, rewritten) = match plan_select(select, &keys) {
        Ok(None) => (Shape::Concat, false),
        Ok(Some((plan, rewritten))) => (Shape::Merge(plan), rewritten),
        Err(why) => (Shape::Refuse(why), false),
    };
    let shard_sql = match rewritten {
        true => Some(parser_ffi::deparse_protobuf(&tree).ok()?),
        false => None,
    };
    Some(Explained {
        shape,
        text,
        shard_sql,
    })
}

/// Plan `sql` if it is a `DECLARE ... CURSOR FOR` a SELECT (`None`
/// otherwise): the shape of its query, with the DECLARE the shards run as
/// the plan's `shard_sql` when the query is rewritten.
pub fn declare(sql: &str, sharding: &Sharding) -> Option<Planned> {
    let mut tree = parser_ffi::parse_protobuf(sql).ok()?;
    let [raw] = tree.stmts.as_mut_slice() else {
        return None;
    };
    let N::DeclareCursorStmt(declare) = raw.stmt.as_mut()?.node.as_mut()? else {
        return None;
    };
    let N::SelectStmt(select) = declare.query.as_mut()?.node.as_mut()? else {
        return None;
    };
    let keys = KeyColumns::of(select, sharding);
    let shape = match plan_select(select, &keys) {
        Ok(None) => Shape::Concat,
        Ok(Some((plan, false))) => Shape::Merge(plan),
        Ok(Some((plan, true))) => match parser_ffi::deparse_protobuf(&tree) {
            Ok(sql) => Shape::Merge(MergePlan {
                shard_sql: Some(sql),
                ..plan
            }),
            Err(err) => Shape::Refuse(Unmergeable::Unreadable(err.to_string())),
        },
        Err(why) => Shape::Refuse(why),
    };
    Some(Planned {
        shape,
        by_key: keys.used(),
    })
}

/// The statement's SELECT (an EXPLAIN's is not merged: `None`).
fn top_select(tree: &mut pb::ParseResult) -> Option<&mut pb::SelectStmt> {
    let [raw] = tree.stmts.as_mut_slice() else {
        return None;
    };
    match raw.stmt.as_mut()?.node.as_mut()? {
        N::SelectStmt(select) => Some(select),
        _ => None,
    }
}

/// The plan, and whether the select was rewritten; `None` when the rows
/// concatenate.
fn plan_select(
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
        .any(|t| expr::is_star(target_val(t)));
    let aggregates = !whole_groups
        && (!select.group_clause.is_empty()
            || select.having_clause.is_some()
            || select
                .target_list
                .iter()
                .any(|t| expr::has_aggregate(target_val(t)))
            || select
                .sort_clause
                .iter()
                .any(|s| expr::has_aggregate(sort_node(s))));
    let distinct_on = select.distinct_clause.iter().any(|d| d.node.is_some());
    let distinct = !select.distinct_clause.is_empty() && !distinct_on;
    if distinct_on && aggregates {
        return Err(Unmergeable::Construct("DISTINCT ON with aggregates"));
    }
    if star && aggregates {
        return Err(Unmergeable::Construct(
            "an aggregate with * in the select list",
        ));
    }
    let limited = select.limit_count.is_some() || select.limit_offset.is_some();
    if !aggregates && !distinct && !distinct_on && !limited && select.sort_clause.is_empty() {
        return Ok(None);
    }
    let mut rewritten = false;
    if distinct_on && select.sort_clause.is_empty() {
        // Any row per key is Postgres's answer: the shards sort by the
        // keys so that the merge sees each key's rows together.
        rewritten = true;
        select.sort_clause = select.distinct_clause.iter().map(expr::sort_by).collect();
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
            let mut column = |n: &pb::Node| -> Result<usize, Unmergeable> {
                Ok(match resolve(select, Some(n), false)? {
                    Some(column) => column,
                    None => add_hidden(select, &mut hidden, Some(n)),
                })
            };
            Some(having::predicate(&node, &mut column)?)
        }
    };
    let mut distinct_keys = Vec::new();
    if distinct_on {
        for item in select.distinct_clause.clone() {
            let column = match resolve(select, Some(&item), true)? {
                Some(column) => column,
                None => add_hidden(select, &mut hidden, Some(&item)),
            };
            distinct_keys.push(column);
        }
    }
    let mut delimiters = Vec::new();
    let groups = if aggregates {
        Some(group_columns(&mut *select, &mut hidden, &mut delimiters)?)
    } else {
        None
    };
    rewritten |= !hidden.is_empty();
    let hidden_count = hidden.len();
    select.target_list.extend(hidden);
    if aggregates || distinct {
        // Every shard's groups are needed: the window is the merge's.
        rewritten |= limited;
        select.limit_count = None;
        select.limit_offset = None;
    } else if limit.offset.is_some() {
        rewritten = true;
        let offset = select.limit_offset.take();
        if let (Some(count), Some(offset)) = (select.limit_count.take(), offset) {
            select.limit_count = Some(pushed_limit(count, offset));
        }
    }
    let plan = MergePlan {
        shard_sql: None,
        hidden: hidden_count,
        targets: select.target_list.len() - hidden_count,
        order,
        limit,
        groups,
        distinct: distinct && !aggregates,
        distinct_on: distinct_keys,
        having,
        delimiters,
    };
    Ok(Some((plan, rewritten)))
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
    if !select.locking_clause.is_empty() {
        return Err(Construct("FOR UPDATE / FOR SHARE"));
    }
    if select.group_distinct || select.group_clause.iter().any(expr::is_grouping_set) {
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
        expr::check(node, keys, whole_groups)?;
    }
    for item in &select.from_clause {
        expr::check_from(item)?;
    }
    if let Some(with) = &select.with_clause {
        for cte in &with.ctes {
            if let Some(N::CommonTableExpr(cte)) = &cte.node {
                expr::check_nested(cte.ctequery.as_deref(), "a WITH query")?;
            }
        }
    }
    Ok(())
}

/// The sort keys of ORDER BY; expressions not in the select list are added
/// to `hidden`.
fn sort_keys(
    select: &pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
) -> Result<Vec<SortKey>, Unmergeable> {
    let mut keys = Vec::with_capacity(select.sort_clause.len());
    for item in &select.sort_clause {
        let Some(N::SortBy(sort)) = &item.node else {
            return Err(Unmergeable::Unreadable("an ORDER BY item".into()));
        };
        let descending = match pb::SortByDir::try_from(sort.sortby_dir) {
            Ok(pb::SortByDir::SortbyDesc) => true,
            Ok(pb::SortByDir::SortbyUsing) => {
                return Err(Unmergeable::Construct("ORDER BY ... USING"))
            }
            _ => false,
        };
        let nulls_first = match pb::SortByNulls::try_from(sort.sortby_nulls) {
            Ok(pb::SortByNulls::SortbyNullsFirst) => true,
            Ok(pb::SortByNulls::SortbyNullsLast) => false,
            _ => descending,
        };
        let node = sort.node.as_deref();
        let column = match resolve(select, node, true)? {
            Some(column) => column,
            None => add_hidden(select, hidden, node),
        };
        keys.push(SortKey {
            column,
            descending,
            nulls_first,
        });
    }
    Ok(keys)
}

/// Group key or aggregate for every column, hidden group keys added.
fn group_columns(
    select: &mut pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
    delimiters: &mut Vec<String>,
) -> Result<Vec<Column>, Unmergeable> {
    for item in select.group_clause.clone() {
        if resolve(select, Some(&item), false)?.is_none() {
            add_hidden(select, hidden, Some(&item));
        }
    }
    let targets = select.target_list.iter().chain(hidden.iter());
    let mut columns = targets
        .map(|t| expr::column_kind(target_val(t)))
        .collect::<Result<Vec<_>, _>>()?;
    // avg(x) runs as sum(x) with a hidden count(x) beside it.
    for column in 0..columns.len() {
        if columns[column] != Column::Aggregate(Aggregate::Avg) {
            continue;
        }
        let visible = select.target_list.len();
        let target = match column.checked_sub(visible) {
            None => &mut select.target_list[column],
            Some(at) => &mut hidden[at],
        };
        let count = expr::average_to_sum(target)?;
        columns[column] = Column::Average {
            count: visible + hidden.len(),
        };
        hidden.push(res_target(count));
        columns.push(Column::Aggregate(Aggregate::Count));
    }
    // stddev(x) and the like run as sum(x) with count(x) and the sum of
    // squares beside it.
    for column in 0..columns.len() {
        let Column::Aggregate(Aggregate::Spread { sample, root }) = columns[column] else {
            continue;
        };
        let visible = select.target_list.len();
        let target = match column.checked_sub(visible) {
            None => &mut select.target_list[column],
            Some(at) => &mut hidden[at],
        };
        let (count, squares) = expr::spread_to_sums(target)?;
        columns[column] = Column::Spread {
            count: visible + hidden.len(),
            squares: visible + hidden.len() + 1,
            sample,
            root,
        };
        hidden.push(res_target(count));
        hidden.push(res_target(squares));
        columns.push(Column::Aggregate(Aggregate::Count));
        columns.push(Column::Aggregate(Aggregate::Sum));
    }
    // string_agg / array_agg with ORDER BY run as array_agg with the sort
    // keys' arrays beside them.
    for column in 0..columns.len() {
        if !matches!(
            columns[column],
            Column::Aggregate(Aggregate::Ordered { .. })
        ) {
            continue;
        }
        let visible = select.target_list.len();
        let first_key = visible + hidden.len();
        let target = match column.checked_sub(visible) {
            None => &mut select.target_list[column],
            Some(at) => &mut hidden[at],
        };
        let (ordered, keys) = ordered::split(target, first_key, delimiters)?;
        columns[column] = ordered;
        for key in keys {
            hidden.push(res_target(key));
            columns.push(Column::OrderedKey);
        }
    }
    Ok(columns)
}

/// The output column a sort or group item names (rule 2).
fn resolve(
    select: &pb::SelectStmt,
    node: Option<&pb::Node>,
    names_first: bool,
) -> Result<Option<usize>, Unmergeable> {
    let Some(node) = node else {
        return Ok(None);
    };
    let star = select
        .target_list
        .iter()
        .any(|t| expr::is_star(target_val(t)));
    if star && expr::integer(node).is_some() {
        return Err(Unmergeable::Construct(
            "ORDER BY or GROUP BY position with * in the select list",
        ));
    }
    if star {
        // Where a `*` ends is the shards' to say: keys go after it, hidden.
        return Ok(None);
    }
    if let Some(position) = expr::integer(node) {
        let index = usize::try_from(position - 1)
            .ok()
            .filter(|&i| i < select.target_list.len());
        return match index {
            Some(index) if !expr::is_star(target_val(&select.target_list[index])) => {
                Ok(Some(index))
            }
            _ => Err(Unmergeable::Unreadable(format!(
                "position {position} is not in the select list"
            ))),
        };
    }
    let by_name = || {
        let name = expr::bare_name(node)?;
        select
            .target_list
            .iter()
            .position(|t| expr::output_name(t) == Some(name))
    };
    let by_expression = || {
        let shape = expr::shape(node);
        select
            .target_list
            .iter()
            .position(|t| target_val(t).is_some_and(|v| expr::shape(v) == shape))
    };
    Ok(if names_first {
        by_name().or_else(by_expression)
    } else {
        by_expression().or_else(by_name)
    })
}

/// Append `node` as a hidden output column; its index.
fn add_hidden(
    select: &pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
    node: Option<&pb::Node>,
) -> usize {
    let index = select.target_list.len() + hidden.len();
    let shape = node.map(expr::shape);
    if let Some(at) = hidden
        .iter()
        .position(|h| target_val(h).map(expr::shape) == shape)
    {
        return select.target_list.len() + at;
    }
    if let Some(node) = node {
        hidden.push(res_target(node.clone()));
    }
    index
}

/// A select-list item of `node`, unnamed.
fn res_target(node: pb::Node) -> pb::Node {
    pb::Node {
        node: Some(N::ResTarget(Box::new(pb::ResTarget {
            name: String::new(),
            indirection: Vec::new(),
            val: Some(Box::new(node)),
            location: -1,
        }))),
    }
}

/// `LIMIT count + offset` for the shards: a literal when both are, else
/// `count::int8 + offset::int8` (the casts keep a parameter's inferred type
/// int8, as in `LIMIT $1`).
fn pushed_limit(count: Box<pb::Node>, offset: Box<pb::Node>) -> Box<pb::Node> {
    if let (Some(n), Some(m)) = (expr::integer(&count), expr::integer(&offset)) {
        return Box::new(expr::int8_literal(n.saturating_add(m)));
    }
    let operator = pb::Node {
        node: Some(N::String(pb::String { sval: "+".into() })),
    };
    Box::new(pb::Node {
        node: Some(N::AExpr(Box::new(pb::AExpr {
            kind: pb::AExprKind::AexprOp as i32,
            name: vec![operator],
            lexpr: Some(Box::new(expr::int8_cast(*count))),
            rexpr: Some(Box::new(expr::int8_cast(*offset))),
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
            .map_err(|_| Unmergeable::Unreadable(format!("{what} ${}", param.number))),
        _ => match expr::integer(node) {
            Some(value) => Ok(Some(Bound::Value(value))),
            None => Err(Unmergeable::Construct(match what {
                "LIMIT" => "a LIMIT that is not an integer or a parameter",
                _ => "an OFFSET that is not an integer or a parameter",
            })),
        },
    }
}

/// A select-list item's expression.
fn target_val(node: &pb::Node) -> Option<&pb::Node> {
    match &node.node {
        Some(N::ResTarget(target)) => target.val.as_deref(),
        _ => None,
    }
}

/// An ORDER BY item's expression.
fn sort_node(node: &pb::Node) -> Option<&pb::Node> {
    match &node.node {
        Some(N::SortBy(sort)) => sort.node.as_deref(),
        _ => None,
    }
}
