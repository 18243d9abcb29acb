//! The sublink facts from pg_query's protobuf structs (see the rules in
//! [`crate::extract`]): one more walk of the statement, scoped (each query
//! enters its WITH, each CTE body sees what Postgres lets it see), that
//! sorts tables and CTE references into regions ([`Regions`]); then, per
//! sublink, a run of [`Levels`] over its query from the scope it sits in,
//! and a look at its own level. Iterative throughout, like the rest of the
//! engine.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::super::resolve::StatementTables;
use super::super::sublinks::{OwnLevel, Regions, OUTSIDE};
use super::anded_in_protobuf::{anded_in, anded_ins, selected_key};
use super::children_protobuf::{Item, Stack};
use super::conditions_protobuf::equalities;
use super::levels_protobuf::Levels;
use super::scopes_protobuf::{Scope, Scopes};
use super::{inner, non_empty, table_ref};
use crate::extract::ExtractError;
use crate::summary::{ColumnRef, Sublinks};

/// One item still to visit, at tree depth `depth`: the CTEs it sees, its
/// region, and the CTE whose body it is in (not counting bodies outside its
/// sublink).
struct Visit<'a> {
    item: Item<'a>,
    depth: usize,
    scope: Scope,
    region: usize,
    cte: Option<usize>,
}

/// The sublinks of `root` (which has at least one), with the statement's
/// `levels` (their CTEs are shared) and a scratch `stack`; `is_cte` tells
/// the names of the statement's CTEs.
pub(super) fn sublinks<'a>(
    root: &'a NodeEnum,
    levels: &mut Levels<'a>,
    tables: &StatementTables,
    stack: &mut Stack<'a>,
    is_cte: impl Fn(&str) -> bool,
) -> Result<Sublinks, ExtractError> {
    let (regions, queries) = walk(root, levels, stack);
    let mut found = Vec::with_capacity(queries.len());
    for (query, depth, scope, anded_in) in queries {
        let conditions = match query {
            Some(query) => levels.run_at(query, depth, scope, tables)?,
            None => Vec::new(),
        };
        found.push((conditions, own_level(query, anded_in)));
    }
    Ok(regions.finish(found, is_cte))
}

/// A sublink's query, its tree depth, the CTEs it sees, and the outer
/// column when it is an IN AND-ed into a SELECT's WHERE.
type Query<'a> = (Option<&'a NodeEnum>, usize, Scope, Option<ColumnRef>);

/// The walk: the statement's regions (its own levels, each sublink's, and
/// the CTEs and names in each), and each sublink's query.
fn walk<'a>(
    root: &'a NodeEnum,
    levels: &mut Levels<'a>,
    stack: &mut Stack<'a>,
) -> (Regions, Vec<Query<'a>>) {
    let mut regions = Regions::new();
    let mut queries: Vec<Query<'a>> = Vec::new();
    let mut ins: Vec<(&'a pb::SubLink, ColumnRef)> = Vec::new();
    let mut visits = vec![Visit {
        item: Item::Node(root),
        depth: 1,
        scope: None,
        region: OUTSIDE,
        cte: None,
    }];
    while let Some(Visit {
        item,
        depth,
        mut scope,
        mut region,
        mut cte,
    }) = visits.pop()
    {
        let node = match item {
            Item::Node(node) => node,
            Item::RangeVar(range_var) => {
                range_var_item(range_var, scope, region, cte, &levels.scopes, &mut regions);
                continue;
            }
            Item::Select(_) | Item::Other(_) => {
                if let Item::Select(select) = item {
                    anded_ins(select, &mut ins);
                    if let Some(with) = &select.with_clause {
                        let at = (depth, region, cte);
                        let (scopes, visits) = (&mut levels.scopes, &mut visits);
                        scope = enter(with, scope, at, scopes, &mut regions, visits);
                    }
                }
                push_children(item, depth, (scope, region, cte), stack, &mut visits);
                continue;
            }
        };
        let with = match node {
            NodeEnum::SubLink(sublink) => {
                region = regions.new_sublink();
                cte = None;
                let anded_in = anded_in(&ins, sublink);
                queries.push((inner(&sublink.subselect), depth + 1, scope, anded_in));
                None
            }
            NodeEnum::RangeVar(range_var) => {
                range_var_item(range_var, scope, region, cte, &levels.scopes, &mut regions);
                continue;
            }
            // CTE bodies are visited from their WITH's query, below.
            NodeEnum::CommonTableExpr(_)
            // `FOR UPDATE OF o` names FROM items, not tables.
            | NodeEnum::LockingClause(_)
            | NodeEnum::ColumnRef(_)
            | NodeEnum::AConst(_)
            | NodeEnum::ParamRef(_) => continue,
            other => {
                if let NodeEnum::SelectStmt(select) = other {
                    anded_ins(select, &mut ins);
                }
                item_names(other, &mut regions);
                with_clause(other)
            }
        };
        if let Some(with) = with {
            let at = (depth, region, cte);
            let (scopes, visits) = (&mut levels.scopes, &mut visits);
            scope = enter(with, scope, at, scopes, &mut regions, visits);
        }
        push_children(item, depth, (scope, region, cte), stack, &mut visits);
    }
    (regions, queries)
}

/// The WITH clause of a statement node.
fn with_clause(node: &NodeEnum) -> Option<&pb::WithClause> {
    match node {
        NodeEnum::SelectStmt(select) => select.with_clause.as_ref(),
        NodeEnum::InsertStmt(insert) => insert.with_clause.as_ref(),
        NodeEnum::UpdateStmt(update) => update.with_clause.as_ref(),
        NodeEnum::DeleteStmt(delete) => delete.with_clause.as_ref(),
        NodeEnum::MergeStmt(merge) => merge.with_clause.as_ref(),
        _ => None,
    }
}

/// The names a FROM item other than a table gives itself (a subquery's,
/// function's or join's alias), which outer qualifiers cannot mean.
fn item_names(node: &NodeEnum, regions: &mut Regions) {
    match node {
        NodeEnum::RangeSubselect(subselect) => match &subselect.alias {
            Some(alias) if !alias.aliasname.is_empty() => regions.name(&alias.aliasname),
            // Postgres 16+ lets a FROM subquery go without a name.
            _ => regions.unnamed(),
        },
        NodeEnum::RangeFunction(function) => {
            if function.alias.is_some() {
                name(function.alias.as_ref(), None, regions);
            } else {
                function_names(&function.functions, regions);
            }
        }
        NodeEnum::RangeTableFunc(function) => {
            name(function.alias.as_ref(), Some("xmltable"), regions)
        }
        NodeEnum::JsonTable(table) => name(table.alias.as_ref(), Some("json_table"), regions),
        NodeEnum::JoinExpr(join) => {
            name(join.alias.as_ref(), None, regions);
            name(join.join_using_alias.as_ref(), None, regions);
        }
        _ => {}
    }
}

/// Queue `item`'s children (one deeper) with the given scope, region and CTE.
fn push_children<'a>(
    item: Item<'a>,
    depth: usize,
    (scope, region, cte): (Scope, usize, Option<usize>),
    stack: &mut Stack<'a>,
    visits: &mut Vec<Visit<'a>>,
) {
    stack.items.clear();
    stack.depth = depth + 1;
    item.push_children(stack);
    visits.extend(stack.items.drain(..).map(|(item, depth)| Visit {
        item,
        depth,
        scope,
        region,
        cte,
    }));
}

/// A query's WITH (the query at `depth`, in `region`, inside CTE body
/// `cte`): its CTEs become visible (the scope returned) and their bodies are
/// queued, each seeing what Postgres lets it see.
fn enter<'a>(
    with: &'a pb::WithClause,
    outer: Scope,
    (depth, region, cte): (usize, usize, Option<usize>),
    scopes: &mut Scopes<'a>,
    regions: &mut Regions,
    visits: &mut Vec<Visit<'a>>,
) -> Scope {
    let first = scopes.ctes.len();
    // WithClause (depth + 1) > its list of CTEs (+ 2) > ctequery (+ 3).
    let scope = scopes.enter(with, outer, depth + 3);
    for index in first..scopes.ctes.len() {
        regions.contains(cte, index);
        if let Some(body) = scopes.ctes[index].body {
            visits.push(Visit {
                item: Item::Node(body),
                depth: depth + 3,
                scope: scopes.body_scope(index),
                region,
                cte: Some(index),
            });
        }
    }
    scope
}

/// A RangeVar: a CTE reference if its unqualified name is a CTE in scope,
/// else a table.
fn range_var_item(
    range_var: &pb::RangeVar,
    scope: Scope,
    region: usize,
    cte: Option<usize>,
    scopes: &Scopes<'_>,
    regions: &mut Regions,
) {
    if range_var.relname.is_empty() {
        return;
    }
    if range_var.schemaname.is_empty() {
        if let Some(target) = scopes.find(scope, &range_var.relname) {
            let alias = range_var
                .alias
                .as_ref()
                .map(|alias| alias.aliasname.as_str())
                .filter(|alias| !alias.is_empty());
            regions.reference(region, cte, target, alias.unwrap_or(&range_var.relname));
            return;
        }
    }
    regions.table(region, cte, table_ref(range_var));
}

/// A FROM item named by `alias`, else by `default` if it has one.
fn name(alias: Option<&pb::Alias>, default: Option<&str>, regions: &mut Regions) {
    let alias = alias.and_then(|alias| non_empty(&alias.aliasname));
    if let Some(name) = alias.as_deref().or(default) {
        regions.name(name);
    }
}

/// A function in FROM without an alias goes by its name: each call's last
/// name part (several for ROWS FROM); any other expression (`coalesce(...)`,
/// `current_date`) by a name we cannot tell.
fn function_names(functions: &[pb::Node], regions: &mut Regions) {
    for item in functions {
        // Each item is a list: the function, then its column definitions.
        let function = match item.node.as_ref() {
            Some(NodeEnum::List(parts)) => parts.items.first().and_then(|f| f.node.as_ref()),
            _ => None,
        };
        let called = match function {
            Some(NodeEnum::FuncCall(call)) => {
                call.funcname
                    .last()
                    .and_then(|last| match last.node.as_ref() {
                        Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
                        _ => None,
                    })
            }
            _ => None,
        };
        match called {
            Some(called) => regions.name(called),
            None => regions.unnamed(),
        }
    }
}

/// A sublink's own level: the tables of its FROM (through joins of every
/// kind) and the column equalities AND-ed into its WHERE and the quals of
/// INNER joins reached through preserved sides, and, for an IN AND-ed into
/// a SELECT's WHERE (`anded_in`: its outer column), the column it selects
/// equal to that one when its shape allows. Nothing unless a plain SELECT.
fn own_level(query: Option<&NodeEnum>, anded_in: Option<ColumnRef>) -> OwnLevel {
    let mut own = OwnLevel::default();
    let Some(NodeEnum::SelectStmt(select)) = query else {
        return own;
    };
    if select.op() != pb::SetOperation::SetopNone {
        return own;
    }
    let mut exprs: Vec<&pb::Node> = select.where_clause.as_deref().into_iter().collect();
    // FROM items, with whether they are reached through preserved sides.
    let mut items: Vec<(&pb::Node, bool)> =
        select.from_clause.iter().map(|item| (item, true)).collect();
    while let Some((item, preserved)) = items.pop() {
        match item.node.as_ref() {
            Some(NodeEnum::JoinExpr(join)) => {
                let (left, right) = match join.jointype() {
                    pb::JoinType::JoinInner => {
                        if preserved {
                            exprs.extend(join.quals.as_deref());
                        }
                        (preserved, preserved)
                    }
                    pb::JoinType::JoinLeft => (preserved, false),
                    pb::JoinType::JoinRight => (false, preserved),
                    _ => (false, false),
                };
                items.extend(join.larg.as_deref().map(|side| (side, left)));
                items.extend(join.rarg.as_deref().map(|side| (side, right)));
            }
            Some(NodeEnum::RangeVar(range_var)) if !range_var.relname.is_empty() => {
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
    // The AND skeleton of those expressions.
    for expr in exprs {
        equalities(expr, |left, right| own.equality(left, right));
    }
    if let Some(outer) = anded_in {
        own.in_key = selected_key(select).map(|key| (key, outer));
    }
    own
}
