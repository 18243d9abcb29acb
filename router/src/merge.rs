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
//! 8. Groups of a GROUP BY that rule 7 does not make whole, and the rows
//!    of a plain DISTINCT, come sorted: each shard sorts them by a hidden
//!    `pg_catalog.hash_record(ROW(<group keys>))` (constants left out),
//!    after the client's ORDER BY when every ORDER BY item is a group key
//!    (instead of it otherwise). The merge combines a group once every
//!    shard's next row is past it and holds about one row per shard;
//!    groups the client orders otherwise (`ORDER BY count(*)`) are held
//!    for the final sort, bounded (see `merge/sorted.rs` for why a hash).
//!    Not with `*` in the select list.
//!
//! The plan says nothing about types: the proxy compares and combines values
//! by the types the shards describe, and fails the statement (never guesses)
//! on a type or collation it cannot compare exactly.

mod aggregates;
mod columns;
mod having;
pub(crate) mod keys;
mod nodes;
mod ordered;
mod select;
mod sorted;

#[cfg(test)]
mod tests;

use parser_ffi::protobuf::{self as pb, node::Node as N};
use parser_ffi::ParseError;

use crate::sharding::Sharding;
use keys::KeyColumns;
use select::plan_select;

pub use having::{Comparison, Operand, Predicate};
pub use sorted::order_in_groups;

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
    /// Sorted groups (rule 8): the hidden column (a group key) holding
    /// `hash_record(ROW(<group keys>))`, which each shard sorts its groups
    /// by (after the client's ORDER BY when that is all group keys).
    /// `None`: the groups come in any order and the merge holds them all.
    /// (A u16 keeps [`Shape`] small: Postgres allows 1,664 columns.)
    pub group_hash: Option<u16>,
}

impl MergePlan {
    /// Whether the groups come sorted and in the client's order: each
    /// combined group can go out as soon as it is complete.
    pub fn groups_streamed(&self) -> bool {
        self.group_hash.is_some() && order_in_groups(&self.order, self.groups.as_deref())
    }
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
    Parse(#[from] ParseError),
    #[error("the statement could not be analysed for a cross-shard merge: {0}")]
    Unreadable(&'static str),
    #[error("the statement could not be analysed for a cross-shard merge: position {0} is not in the select list")]
    Position(i64),
    #[error("the statement could not be analysed for a cross-shard merge: {what} ${number}")]
    BoundParam { what: &'static str, number: i32 },
}

/// A FROM item (subqueries through joins) or WITH query (`query`) that
/// aggregates, deduplicates, limits or combines rows (what a cross-shard
/// SELECT refuses there): each shard would compute it over its own rows
/// only. Used by [`crate::carry::cuts_rows`] for writes.
pub fn cuts_rows(item: Option<&pb::Node>, query: Option<&pb::Node>) -> bool {
    item.is_some_and(|item| aggregates::check_from(item).is_err())
        || query.is_some_and(|q| aggregates::check_nested(Some(q), "a WITH query").is_err())
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
                shape: Shape::Refuse(Unmergeable::Parse(err)),
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
                Err(err) => Shape::Refuse(Unmergeable::Parse(err)),
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
            Err(err) => Shape::Refuse(Unmergeable::Parse(err)),
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
