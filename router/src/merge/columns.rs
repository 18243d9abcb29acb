//! Sort, group and DISTINCT keys matched to the select list's output
//! columns (by position, output name or the same expression: rule 2), or
//! added as hidden columns, and the aggregates of a grouped select list
//! read into the columns the merge combines.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::aggregates;
use super::nodes::{self, res_target, target_val};
use super::ordered;
use super::{Aggregate, Column, SortKey, Unmergeable};

/// The sort keys of ORDER BY; expressions not in the select list are added
/// to `hidden`.
pub(super) fn sort_keys(
    select: &pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
) -> Result<Vec<SortKey>, Unmergeable> {
    let mut keys = Vec::with_capacity(select.sort_clause.len());
    for item in &select.sort_clause {
        let Some(N::SortBy(sort)) = &item.node else {
            return Err(Unmergeable::Unreadable("an ORDER BY item"));
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
pub(super) fn group_columns(
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
        .map(|t| aggregates::column_kind(target_val(t)))
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
        let count = aggregates::average_to_sum(target)?;
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
        let (count, squares) = aggregates::spread_to_sums(target)?;
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
pub(super) fn resolve(
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
        .any(|t| nodes::is_star(target_val(t)));
    if star && nodes::integer(node).is_some() {
        return Err(Unmergeable::Construct(
            "ORDER BY or GROUP BY position with * in the select list",
        ));
    }
    if star {
        // Where a `*` ends is the shards' to say: keys go after it, hidden.
        return Ok(None);
    }
    if let Some(position) = nodes::integer(node) {
        let index = usize::try_from(position - 1)
            .ok()
            .filter(|&i| i < select.target_list.len());
        return match index {
            Some(index) if !nodes::is_star(target_val(&select.target_list[index])) => {
                Ok(Some(index))
            }
            _ => Err(Unmergeable::Position(position)),
        };
    }
    let by_name = || {
        let name = nodes::bare_name(node)?;
        select
            .target_list
            .iter()
            .position(|t| nodes::output_name(t) == Some(name))
    };
    let by_expression = || {
        let shape = nodes::shape(node);
        select
            .target_list
            .iter()
            .position(|t| target_val(t).is_some_and(|v| nodes::shape(v) == shape))
    };
    Ok(if names_first {
        by_name().or_else(by_expression)
    } else {
        by_expression().or_else(by_name)
    })
}

/// Append `node` as a hidden output column; its index.
pub(super) fn add_hidden(
    select: &pb::SelectStmt,
    hidden: &mut Vec<pb::Node>,
    node: Option<&pb::Node>,
) -> usize {
    let index = select.target_list.len() + hidden.len();
    let shape = node.map(nodes::shape);
    if let Some(at) = hidden
        .iter()
        .position(|h| target_val(h).map(nodes::shape) == shape)
    {
        return select.target_list.len() + at;
    }
    if let Some(node) = node {
        hidden.push(res_target(node.clone()));
    }
    index
}
