//! The sublink facts from the zero-copy view (see the rules in
//! [`crate::extract`]): one more walk of the statement, scoped (each query
//! enters its WITH, each CTE body sees what Postgres lets it see), that
//! sorts tables and CTE references into regions ([`Regions`]); then, per
//! sublink, a run of [`Levels`](super::levels_view::Levels) over its query
//! from the scope it sits in, and a look at its own level. Iterative
//! throughout, like the rest of the engine.

use parser_ffi::protobuf::{JoinType, SetOperation};
use parser_ffi::view::{Alias, Node, NodeRef, RangeVar, WithClause};

use super::super::sublinks::{OwnLevel, Regions, OUTSIDE};
use super::anded_in_view::{anded_ins, selected_key};
use super::conditions_view::equalities;
use super::levels_view::Passes;
use super::scopes_view::{Scope, Scopes};
use crate::extract::ExtractError;
use crate::summary::{ColumnRef, Sublinks, TableRef};

/// One node still to visit: the CTEs it sees, its region, and the CTE
/// whose body it is in (not counting bodies outside its sublink).
struct Visit<'a> {
    node: Node<'a>,
    scope: Scope,
    region: usize,
    cte: Option<usize>,
}

/// The sublinks of `stmt` (which has at least one); `is_cte` tells the
/// names of the statement's CTEs.
pub(super) fn sublinks<'a>(
    stmt: Node<'a>,
    mut passes: Passes<'_, 'a>,
    is_cte: impl Fn(&str) -> bool,
) -> Result<Sublinks, ExtractError> {
    let (regions, queries) = walk(stmt, passes.scopes);
    let mut levels = Vec::with_capacity(queries.len());
    for (query, scope, anded_in) in queries {
        let conditions = match query {
            Some(query) => passes.levels().run_at(query, scope, false)?.0,
            None => Vec::new(),
        };
        levels.push((conditions, own_level(query, anded_in)));
    }
    Ok(regions.finish(levels, is_cte))
}

/// A sublink's query, the CTEs it sees, and the outer column when it is an
/// IN AND-ed into a SELECT's WHERE.
type Query<'a> = (Option<Node<'a>>, Scope, Option<ColumnRef>);

/// The walk: the statement's regions (its own levels, each sublink's, and
/// the CTEs and names in each), and each sublink's query.
fn walk<'a>(stmt: Node<'a>, scopes: &mut Scopes<'a>) -> (Regions, Vec<Query<'a>>) {
    let mut regions = Regions::new();
    let mut queries: Vec<Query<'a>> = Vec::new();
    let mut ins: Vec<(Node<'a>, ColumnRef)> = Vec::new();
    let mut stack = vec![Visit {
        node: stmt,
        scope: None,
        region: OUTSIDE,
        cte: None,
    }];
    let mut children = Vec::new();
    while let Some(Visit {
        node,
        mut scope,
        mut region,
        mut cte,
    }) = stack.pop()
    {
        let with = match node.kind() {
            NodeRef::SubLink(sublink) => {
                region = regions.new_sublink();
                cte = None;
                let anded_in = ins
                    .iter()
                    .find(|(found, _)| found.is(node))
                    .map(|(_, outer)| outer.clone());
                queries.push((sublink.subselect(), scope, anded_in));
                None
            }
            NodeRef::RangeVar(range) => {
                range_var(range, scope, region, cte, scopes, &mut regions);
                continue;
            }
            // CTE bodies are visited from their WITH's query, below.
            NodeRef::CommonTableExpr(_)
            // `FOR UPDATE OF o` names FROM items, not tables.
            | NodeRef::LockingClause(_)
            | NodeRef::ColumnRef(_)
            | NodeRef::AConst(_)
            | NodeRef::ParamRef(_) => continue,
            other => {
                if let NodeRef::SelectStmt(select) = other {
                    anded_ins(select, &mut ins);
                }
                item_names(other, &mut regions);
                with_clause(other)
            }
        };
        if let Some(with) = with {
            scope = enter(with, scope, region, cte, scopes, &mut regions, &mut stack);
        }
        node.push_children(&mut children);
        stack.extend(children.drain(..).map(|node| Visit {
            node,
            scope,
            region,
            cte,
        }));
    }
    (regions, queries)
}

/// The WITH clause of a statement node.
fn with_clause(node: NodeRef<'_>) -> Option<WithClause<'_>> {
    match node {
        NodeRef::SelectStmt(select) => select.with_clause(),
        NodeRef::InsertStmt(insert) => insert.with_clause(),
        NodeRef::UpdateStmt(update) => update.with_clause(),
        NodeRef::DeleteStmt(delete) => delete.with_clause(),
        NodeRef::MergeStmt(merge) => merge.with_clause(),
        _ => None,
    }
}

/// The names a FROM item other than a table gives itself (a subquery's,
/// function's or join's alias), which outer qualifiers cannot mean.
fn item_names(node: NodeRef<'_>, regions: &mut Regions) {
    match node {
        NodeRef::RangeSubselect(subselect) => {
            match subselect.alias().and_then(|alias| alias.aliasname()) {
                Some(alias) if !alias.is_empty() => regions.name(alias),
                // Postgres 16+ lets a FROM subquery go without a name.
                _ => regions.unnamed(),
            }
        }
        NodeRef::RangeFunction(function) => {
            if function.alias().is_some() {
                name(function.alias(), None, regions);
            } else {
                function_names(function.functions(), regions);
            }
        }
        NodeRef::RangeTableFunc(function) => name(function.alias(), Some("xmltable"), regions),
        NodeRef::JsonTable(table) => name(table.alias(), Some("json_table"), regions),
        NodeRef::JoinExpr(join) => {
            name(join.alias(), None, regions);
            name(join.join_using_alias(), None, regions);
        }
        _ => {}
    }
}

/// A query's WITH: its CTEs become visible (the scope returned) and their
/// bodies are queued, each seeing what Postgres lets it see.
fn enter<'a>(
    with: WithClause<'a>,
    outer: Scope,
    region: usize,
    cte: Option<usize>,
    scopes: &mut Scopes<'a>,
    regions: &mut Regions,
    stack: &mut Vec<Visit<'a>>,
) -> Scope {
    let first = scopes.ctes.len();
    let scope = scopes.enter(with, outer);
    for inner in first..scopes.ctes.len() {
        regions.contains(cte, inner);
        if let Some(body) = scopes.ctes[inner].body {
            stack.push(Visit {
                node: body,
                scope: scopes.body_scope(inner),
                region,
                cte: Some(inner),
            });
        }
    }
    scope
}

/// A RangeVar: a CTE reference if its unqualified name is a CTE in scope,
/// else a table.
fn range_var(
    range: RangeVar<'_>,
    scope: Scope,
    region: usize,
    cte: Option<usize>,
    scopes: &Scopes<'_>,
    regions: &mut Regions,
) {
    let Some(relname) = range.relname() else {
        return;
    };
    let alias = range.alias().and_then(|alias| alias.aliasname());
    if range.schemaname().is_none() {
        if let Some(target) = scopes.find(scope, relname) {
            regions.reference(region, cte, target, alias.unwrap_or(relname));
            return;
        }
    }
    regions.table(region, cte, table_of(range, relname));
}

fn table_of(range: RangeVar<'_>, relname: &str) -> TableRef {
    TableRef {
        schema: range.schemaname().map(str::to_owned),
        name: relname.to_owned(),
        alias: range
            .alias()
            .and_then(|alias| alias.aliasname())
            .map(str::to_owned),
    }
}

/// A FROM item named by `alias`, else by `default` if it has one.
fn name(alias: Option<Alias<'_>>, default: Option<&str>, regions: &mut Regions) {
    if let Some(name) = alias.and_then(|alias| alias.aliasname()).or(default) {
        regions.name(name);
    }
}

/// A function in FROM without an alias goes by its name: each call's last
/// name part (several for ROWS FROM); any other expression (`coalesce(...)`,
/// `current_date`) by a name we cannot tell.
fn function_names(functions: parser_ffi::view::List<'_>, regions: &mut Regions) {
    for item in functions.iter().flatten() {
        // Each item is a list: the function, then its column definitions.
        let function = match item.kind() {
            NodeRef::List(parts) => parts.get(0),
            _ => None,
        };
        let called = match function.map(Node::kind) {
            Some(NodeRef::FuncCall(call)) => {
                let names = call.funcname();
                names
                    .len()
                    .checked_sub(1)
                    .and_then(|last| names.get(last))
                    .and_then(|last| match last.kind() {
                        NodeRef::String(name) => name.sval(),
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
fn own_level(query: Option<Node<'_>>, anded_in: Option<ColumnRef>) -> OwnLevel {
    let mut own = OwnLevel::default();
    let Some(NodeRef::SelectStmt(select)) = query.map(Node::kind) else {
        return own;
    };
    if select.op() != SetOperation::SetopNone {
        return own;
    }
    let mut exprs: Vec<Node<'_>> = select.where_clause().into_iter().collect();
    // FROM items, with whether they are reached through preserved sides.
    let mut items: Vec<(Node<'_>, bool)> = select
        .from_clause()
        .iter()
        .flatten()
        .map(|item| (item, true))
        .collect();
    while let Some((item, preserved)) = items.pop() {
        match item.kind() {
            NodeRef::JoinExpr(join) => {
                let (left, right) = match join.jointype() {
                    JoinType::JoinInner => {
                        if preserved {
                            exprs.extend(join.quals());
                        }
                        (preserved, preserved)
                    }
                    JoinType::JoinLeft => (preserved, false),
                    JoinType::JoinRight => (false, preserved),
                    _ => (false, false),
                };
                items.extend(join.larg().map(|side| (side, left)));
                items.extend(join.rarg().map(|side| (side, right)));
            }
            NodeRef::RangeVar(range) => {
                if let Some(relname) = range.relname() {
                    own.from_tables.push(table_of(range, relname));
                }
            }
            NodeRef::RangeTableSample(sample) => {
                items.extend(sample.relation().map(|relation| (relation, preserved)));
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
