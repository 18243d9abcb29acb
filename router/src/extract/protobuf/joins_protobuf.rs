//! The join facts from pg_query's protobuf structs (see the rules in
//! [`crate::extract`]): one more walk of the statement finds its query
//! levels and CTEs; each level's FROM is then read into a
//! [`LevelBuilder`] and each subquery and CTE body into [`QueryFacts`].
//! Iterative throughout, like the rest of the engine: join trees on a
//! stack, conditions through [`condition`].

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::super::joins::{
    and_all, finish, LevelBuilder, OwnFacts, QueryFacts, RawCte, RawItem, RawLevel, Target,
};
use super::super::MAX_SUBLINK_TABLES;
use super::children_protobuf::{Item, Stack};
use super::conditions_protobuf::{condition, equalities};
use super::values_protobuf::column;
use super::{inner, non_empty, table_ref};
use crate::extract::ExtractError;
use crate::summary::{Joins, OuterKind, TableRef};

/// A level: a plain SELECT, an UPDATE, a DELETE or a MERGE.
enum Level<'a> {
    Select(&'a pb::SelectStmt),
    Update(&'a pb::UpdateStmt),
    Delete(&'a pb::DeleteStmt),
    Merge(&'a pb::MergeStmt),
}

/// The join facts of `root`, walked on `stack`.
pub(super) fn joins<'a>(
    root: &'a NodeEnum,
    stack: &mut Stack<'a>,
) -> Result<Option<Box<Joins>>, ExtractError> {
    let mut levels = Vec::new();
    let mut ctes: Vec<&'a pb::CommonTableExpr> = Vec::new();
    stack.items.clear();
    stack.items.push((Item::Node(root), 1));
    while let Some((item, depth)) = stack.items.pop() {
        match item {
            Item::Select(select) => levels.push(Level::Select(select)),
            Item::Node(NodeEnum::SelectStmt(select)) => levels.push(Level::Select(select)),
            Item::Node(NodeEnum::UpdateStmt(update)) => levels.push(Level::Update(update)),
            Item::Node(NodeEnum::DeleteStmt(delete)) => levels.push(Level::Delete(delete)),
            Item::Node(NodeEnum::MergeStmt(merge)) => levels.push(Level::Merge(merge)),
            Item::Node(NodeEnum::CommonTableExpr(cte)) => ctes.push(cte),
            Item::Node(NodeEnum::RangeVar(_) | NodeEnum::ColumnRef(_)) | Item::RangeVar(_) => {
                continue
            }
            _ => {}
        }
        stack.depth = depth + 1;
        item.push_children(stack);
    }
    let mut found = Vec::new();
    for level in levels {
        if let Some(level) = read_level(level)? {
            found.push(level);
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut raw_ctes = Vec::with_capacity(ctes.len());
    for cte in ctes {
        let query = match inner(&cte.ctequery) {
            Some(query) => query_facts(query, stack)?,
            None => QueryFacts::default(),
        };
        raw_ctes.push(RawCte {
            name: cte.ctename.clone(),
            colnames: names(&cte.aliascolnames),
            query,
        });
    }
    Ok(finish(found, raw_ctes))
}

/// A level's facts, if it joins (see [`LevelBuilder::finish`]).
fn read_level(node: Level<'_>) -> Result<Option<RawLevel>, ExtractError> {
    let mut level = LevelBuilder::default();
    let mut stack = Stack::default();
    let (where_clause, from) = match node {
        Level::Select(select) => {
            if select.op() != pb::SetOperation::SetopNone || select.from_clause.is_empty() {
                return Ok(None);
            }
            (select.where_clause.as_deref(), &select.from_clause)
        }
        Level::Update(update) => {
            target(update.relation.as_ref(), &mut level);
            (update.where_clause.as_deref(), &update.from_clause)
        }
        Level::Delete(delete) => {
            target(delete.relation.as_ref(), &mut level);
            (delete.where_clause.as_deref(), &delete.using_clause)
        }
        Level::Merge(merge) => {
            // The target and the source, joined as a FULL join would
            // (unmatched rows of either side may be acted on).
            let join = level.open(Some(OuterKind::Full), Vec::new(), false);
            target(merge.relation.as_ref(), &mut level);
            level.mid(join);
            let outer = level.outer(join);
            tree(merge.source_relation.as_deref(), &mut level, &mut stack)?;
            level.close(join);
            if let Some(on) = merge.join_condition.as_deref() {
                equalities(on, |a, b| level.equality(a, b, outer));
                condition_of(on, &mut level)?;
            }
            return Ok(level.finish());
        }
    };
    if let Some(expr) = where_clause {
        equalities(expr, |a, b| level.equality(a, b, None));
        condition_of(expr, &mut level)?;
    }
    for item in from {
        tree(Some(item), &mut level, &mut stack)?;
    }
    Ok(level.finish())
}

/// One step of a FROM's join trees: an item (and whether it is reached
/// through preserved sides), or a join's middle or end.
enum Step<'a> {
    Item(&'a pb::Node, bool),
    Mid(usize),
    Close(usize),
}

/// Read one FROM item (reached through preserved sides) into `level`.
fn tree<'a>(
    item: Option<&'a pb::Node>,
    level: &mut LevelBuilder,
    stack: &mut Stack<'a>,
) -> Result<(), ExtractError> {
    let mut steps: Vec<Step<'a>> = item
        .map(|item| Step::Item(item, true))
        .into_iter()
        .collect();
    while let Some(step) = steps.pop() {
        let (item, preserved) = match step {
            Step::Item(item, preserved) => (item, preserved),
            Step::Mid(join) => {
                level.mid(join);
                continue;
            }
            Step::Close(join) => {
                level.close(join);
                continue;
            }
        };
        match item.node.as_ref() {
            Some(NodeEnum::JoinExpr(join)) => join_expr(join, preserved, level, &mut steps)?,
            Some(NodeEnum::RangeVar(range_var)) if !range_var.relname.is_empty() => {
                level.item(RawItem::Table {
                    table: table_ref(range_var),
                    colnames: colnames(range_var.alias.as_ref()),
                });
            }
            Some(NodeEnum::RangeSubselect(subselect)) => {
                let query = match inner(&subselect.subquery) {
                    Some(query) => query_facts(query, stack)?,
                    None => QueryFacts::default(),
                };
                level.item(RawItem::Subquery {
                    name: subselect
                        .alias
                        .as_ref()
                        .and_then(|alias| non_empty(&alias.aliasname)),
                    lateral: subselect.lateral,
                    colnames: colnames(subselect.alias.as_ref()),
                    query,
                });
            }
            Some(NodeEnum::RangeTableSample(sample)) => {
                steps.extend(
                    sample
                        .relation
                        .as_deref()
                        .map(|relation| Step::Item(relation, preserved)),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// A join of a FROM tree: opened in `level` (its ON's equalities, and
/// its condition when INNER and reached through preserved sides), its
/// sides queued on `steps` between its middle and its close.
fn join_expr<'a>(
    join: &'a pb::JoinExpr,
    preserved: bool,
    level: &mut LevelBuilder,
    steps: &mut Vec<Step<'a>>,
) -> Result<(), ExtractError> {
    let kind = match join.jointype() {
        pb::JoinType::JoinInner => None,
        pb::JoinType::JoinLeft => Some(OuterKind::Left),
        pb::JoinType::JoinRight => Some(OuterKind::Right),
        _ => Some(OuterKind::Full),
    };
    let index = level.open(kind, names(&join.using_clause), join.is_natural);
    let outer = level.outer(index);
    if let Some(quals) = join.quals.as_deref() {
        equalities(quals, |a, b| level.equality(a, b, outer));
        if kind.is_none() && preserved {
            condition_of(quals, level)?;
        }
    }
    let (left, right) = match kind {
        None => (preserved, preserved),
        Some(OuterKind::Left) => (preserved, false),
        Some(OuterKind::Right) => (false, preserved),
        Some(OuterKind::Full) => (false, false),
    };
    steps.push(Step::Close(index));
    steps.extend(join.rarg.as_deref().map(|side| Step::Item(side, right)));
    steps.push(Step::Mid(index));
    steps.extend(join.larg.as_deref().map(|side| Step::Item(side, left)));
    Ok(())
}

/// The facts of a subquery or CTE body, its tables walked on `stack`.
fn query_facts<'a>(query: &'a NodeEnum, stack: &mut Stack<'a>) -> Result<QueryFacts, ExtractError> {
    let mut facts = QueryFacts::default();
    stack.items.clear();
    stack.items.push((Item::Node(query), 1));
    while let Some((item, depth)) = stack.items.pop() {
        let range_var = match item {
            Item::RangeVar(range_var) | Item::Node(NodeEnum::RangeVar(range_var)) => range_var,
            Item::Node(NodeEnum::ColumnRef(_) | NodeEnum::AConst(_) | NodeEnum::ParamRef(_)) => {
                continue
            }
            _ => {
                stack.depth = depth + 1;
                item.push_children(stack);
                continue;
            }
        };
        if !range_var.relname.is_empty() {
            facts.tables.push(table_ref(range_var));
            if facts.tables.len() > MAX_SUBLINK_TABLES {
                stack.items.clear();
                break;
            }
        }
    }
    if let NodeEnum::SelectStmt(select) = query {
        if select.op() == pb::SetOperation::SetopNone {
            facts.own = Some(own(select)?);
        }
    }
    Ok(facts)
}

/// A plain SELECT's own level.
fn own(select: &pb::SelectStmt) -> Result<OwnFacts, ExtractError> {
    let mut own = OwnFacts::default();
    let mut conditions = Vec::new();
    if let Some(expr) = select.where_clause.as_deref() {
        equalities(expr, |a, b| own.equality(a, b));
        conditions.extend(condition(Some(expr), 1)?);
    }
    // FROM items, with whether they are reached through preserved sides.
    let mut items: Vec<(&pb::Node, bool)> =
        select.from_clause.iter().map(|item| (item, true)).collect();
    items.reverse();
    while let Some((item, preserved)) = items.pop() {
        match item.node.as_ref() {
            Some(NodeEnum::JoinExpr(join)) => {
                let (left, right) = match join.jointype() {
                    pb::JoinType::JoinInner => {
                        if let (Some(quals), true) = (join.quals.as_deref(), preserved) {
                            equalities(quals, |a, b| own.equality(a, b));
                            conditions.extend(condition(Some(quals), 1)?);
                        }
                        (preserved, preserved)
                    }
                    pb::JoinType::JoinLeft => (preserved, false),
                    pb::JoinType::JoinRight => (false, preserved),
                    _ => (false, false),
                };
                items.extend(join.rarg.as_deref().map(|side| (side, right)));
                items.extend(join.larg.as_deref().map(|side| (side, left)));
            }
            Some(NodeEnum::RangeVar(range_var))
                if !range_var.relname.is_empty()
                    && colnames(range_var.alias.as_ref()).is_empty() =>
            {
                own.from_tables.push(table_ref(range_var));
            }
            Some(NodeEnum::RangeTableSample(sample)) => {
                items.extend(
                    sample
                        .relation
                        .as_deref()
                        .map(|relation| (relation, preserved)),
                );
            }
            _ => {}
        }
    }
    own.conditions.extend(and_all(conditions));
    own.targets = select.target_list.iter().map(target_of).collect();
    Ok(own)
}

/// One select-list item.
fn target_of(target: &pb::Node) -> Target {
    let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() else {
        return Target::Other;
    };
    let val = target.val.as_deref();
    let Some(NodeEnum::ColumnRef(column_ref)) = val.and_then(|val| val.node.as_ref()) else {
        return Target::Other;
    };
    let Some((last, rest)) = column_ref.fields.split_last() else {
        return Target::Other;
    };
    if let Some(NodeEnum::AStar(_)) = last.node.as_ref() {
        let qualifier = match rest.last().and_then(|field| field.node.as_ref()) {
            Some(NodeEnum::String(name)) => Some(name.sval.clone()),
            _ => None,
        };
        return Target::Star(qualifier);
    }
    match val.and_then(column) {
        Some(column) => Target::Column(
            non_empty(&target.name).unwrap_or_else(|| column.column.clone()),
            column,
        ),
        None => Target::Other,
    }
}

/// AND `expr`'s key condition, if it has one, into the level's own.
fn condition_of(expr: &pb::Node, level: &mut LevelBuilder) -> Result<(), ExtractError> {
    if let Some(found) = condition(Some(expr), 1)? {
        level.condition(found);
    }
    Ok(())
}

/// An UPDATE's, DELETE's or MERGE's target: the level's first item.
fn target(relation: Option<&pb::RangeVar>, level: &mut LevelBuilder) {
    if let Some(relation) = relation.filter(|relation| !relation.relname.is_empty()) {
        level.item(RawItem::Table {
            table: table_of(relation),
            colnames: Vec::new(),
        });
    }
}

fn table_of(range_var: &pb::RangeVar) -> TableRef {
    table_ref(range_var)
}

fn colnames(alias: Option<&pb::Alias>) -> Vec<String> {
    alias.map_or_else(Vec::new, |alias| names(&alias.colnames))
}

/// A list of String nodes (USING columns, column aliases).
fn names(list: &[pb::Node]) -> Vec<String> {
    list.iter()
        .filter_map(|node| match node.node.as_ref() {
            Some(NodeEnum::String(name)) => Some(name.sval.clone()),
            _ => None,
        })
        .collect()
}
