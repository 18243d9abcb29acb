//! The CTE scopes of a statement and what names resolve to (protobuf structs):
//! the WITH lists in scope at a level, the FROM items a level names, and the
//! bodies (select lists, FROM items) of subqueries and CTEs that `resolve.rs`
//! reads through.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::children_protobuf::{Item, Stack};
use super::inner;
use crate::extract::resolve::{self, Bodies, Body, Name, Output, Resolver, StatementTables};
use crate::summary::{ColumnRef, Condition, TableRef};

/// The CTEs a name is looked up in: those of WITH number `group` numbered
/// below `end`, then the group's outer scope. `None`: no CTE visible.
pub(super) type Scope = Option<ScopePosition>;

#[derive(Clone, Copy)]
pub(super) struct ScopePosition {
    pub(super) group: usize,
    end: usize,
}

/// The CTEs of the contributing levels, by WITH (a group); names are looked
/// up by binary search, so many CTEs cost n log n.
#[derive(Default)]
pub(super) struct Scopes<'a> {
    pub(super) ctes: Vec<Cte<'a>>,
    pub(super) groups: Vec<Group>,
    /// Each group's (name, CTE number)s sorted, at the group's CTE numbers.
    by_name: Vec<(&'a str, usize)>,
}

pub(super) struct Cte<'a> {
    pub(super) body: Option<&'a NodeEnum>,
    /// Its column names (`WITH c (a, b) AS ...`).
    colnames: &'a [pb::Node],
    /// Tree depth of the body.
    pub(super) depth: usize,
    group: usize,
    pub(super) state: CteState,
}

pub(super) struct Group {
    pub(super) first: usize,
    pub(super) len: usize,
    recursive: bool,
    outer: Scope,
}

pub(super) enum CteState {
    New,
    Evaluating,
    /// Evaluated; `fits`: small enough to be copied where referenced.
    Done {
        conditions: Vec<Condition>,
        fits: bool,
    },
}

impl<'a> Scopes<'a> {
    /// Add a WITH's CTEs (bodies at tree depth `depth`) below `outer`; the
    /// scope of the WITH's query.
    pub(super) fn enter(&mut self, with: &'a pb::WithClause, outer: Scope, depth: usize) -> Scope {
        let group = self.groups.len();
        let first = self.ctes.len();
        for cte in &with.ctes {
            let Some(NodeEnum::CommonTableExpr(cte)) = cte.node.as_ref() else {
                continue;
            };
            self.by_name.push((&cte.ctename, self.ctes.len()));
            self.ctes.push(Cte {
                body: inner(&cte.ctequery),
                colnames: &cte.aliascolnames,
                depth,
                group,
                state: CteState::New,
            });
        }
        let end = self.ctes.len();
        if let Some(names) = self.by_name.get_mut(first..end) {
            names.sort_unstable();
        }
        self.groups.push(Group {
            first,
            len: end - first,
            recursive: with.recursive,
            outer,
        });
        Some(ScopePosition { group, end })
    }

    /// What CTE `index`'s body sees: in a RECURSIVE WITH every CTE of it,
    /// else the earlier ones, then the outer scope.
    pub(super) fn body_scope(&self, index: usize) -> Scope {
        let group = self.ctes.get(index)?.group;
        let end = match self.groups.get(group) {
            Some(with) if with.recursive => with.first + with.len,
            _ => index,
        };
        Some(ScopePosition { group, end })
    }

    /// The CTE an unqualified name refers to from `scope`: the first visible
    /// one of that name (Postgres refuses two in one WITH), innermost first.
    pub(super) fn find(&self, mut scope: Scope, name: &str) -> Option<usize> {
        while let Some(position) = scope {
            let group = self.groups.get(position.group)?;
            let names = self.by_name.get(group.first..group.first + group.len)?;
            let from = names.partition_point(|&(candidate, _)| candidate < name);
            let found = names
                .get(from..)?
                .iter()
                .take_while(|&&(candidate, _)| candidate == name)
                .map(|&(_, index)| index)
                .find(|&index| index < position.end);
            if found.is_some() {
                return found;
            }
            scope = group.outer;
        }
        None
    }
}

/// The columns that output column `column` of `query` (its select list
/// renamed by `colnames`, as a table created from it would name its
/// columns) passes through, resolved and written as condition columns are
/// (see **resolution** in [`super`]) among `tables`, a statement's: what
/// `... FROM (query) AS q (colnames) WHERE column = v` would be keyed by.
/// Empty when it passes none through.
pub fn output_source(
    query: &NodeEnum,
    colnames: &[&str],
    column: &str,
    tables: &[TableRef],
) -> Vec<ColumnRef> {
    let mut scopes = Scopes::default();
    let item = resolve::Item::Derived {
        name: None,
        colnames: colnames.to_vec(),
        query: (query, None),
    };
    let tables = StatementTables::new(tables);
    let mut bodies = ProtobufBodies {
        scopes: &mut scopes,
    };
    let written = ColumnRef {
        table: None,
        column: column.to_owned(),
    };
    let mapped = Resolver::new(vec![item], &mut bodies, &tables).column(&written);
    match mapped {
        resolve::Mapped::Same => vec![written],
        resolve::Mapped::Drop => Vec::new(),
        resolve::Mapped::Columns(columns) => columns,
    }
}

/// A query behind a derived item, and the CTEs it sees.
type Derived<'a> = (&'a NodeEnum, Scope);

/// A level's FROM items for resolution (see [`super::resolve`]): `target`
/// (an UPDATE's, DELETE's, MERGE's or INSERT's relation) first, then the
/// leaves of `from`'s join trees, left to right.
pub(super) fn from_items<'a>(
    from: &'a [pb::Node],
    target: Option<&'a pb::RangeVar>,
    scope: Scope,
    scopes: &Scopes<'a>,
) -> Vec<resolve::Item<'a, Derived<'a>>> {
    let mut items = Vec::new();
    if let Some(table) = target.and_then(name_of) {
        items.push(resolve::Item::Table {
            table,
            renamed: false,
        });
    }
    // Join trees: left sides followed at once, right ones stacked (so a
    // FROM without joins allocates nothing here).
    let mut pending: Vec<&'a NodeEnum> = Vec::new();
    for top in from.iter().filter_map(|n| n.node.as_ref()) {
        let mut next = Some(top);
        while let Some(node) = next.take().or_else(|| pending.pop()) {
            match node {
                NodeEnum::JoinExpr(join) => {
                    pending.extend(inner(&join.rarg));
                    next = inner(&join.larg);
                }
                NodeEnum::RangeTableSample(sample) => next = inner(&sample.relation),
                NodeEnum::RangeVar(range) => {
                    let Some(table) = name_of(range) else {
                        continue;
                    };
                    let cte = match table.schema {
                        None => scopes.find(scope, table.name),
                        Some(_) => None,
                    };
                    let alias = range.alias.as_ref();
                    match cte.and_then(|index| Some((index, scopes.ctes.get(index)?))) {
                        Some((index, cte)) => {
                            let Some(body) = cte.body else {
                                continue;
                            };
                            items.push(resolve::Item::Derived {
                                name: Some(table.alias.unwrap_or(table.name)),
                                colnames: colnames(cte.colnames, alias),
                                query: (body, scopes.body_scope(index)),
                            });
                        }
                        None => items.push(resolve::Item::Table {
                            table,
                            renamed: alias.is_some_and(|alias| !alias.colnames.is_empty()),
                        }),
                    }
                }
                NodeEnum::RangeSubselect(subselect) => {
                    let Some(query) = inner(&subselect.subquery) else {
                        continue;
                    };
                    let alias = subselect.alias.as_ref();
                    items.push(resolve::Item::Derived {
                        name: alias.and_then(|alias| non_empty_str(&alias.aliasname)),
                        colnames: colnames(&[], alias),
                        query: (query, scope),
                    });
                }
                _ => {}
            }
        }
    }
    items
}

/// A RangeVar's names.
fn name_of(range: &pb::RangeVar) -> Option<Name<'_>> {
    Some(Name {
        schema: non_empty_str(&range.schemaname),
        name: non_empty_str(&range.relname)?,
        alias: range
            .alias
            .as_ref()
            .and_then(|alias| non_empty_str(&alias.aliasname)),
    })
}

/// A CTE's column names overridden position by position by an alias's.
fn colnames<'a>(cte: &'a [pb::Node], alias: Option<&'a pb::Alias>) -> Vec<&'a str> {
    let strings = |list: &'a [pb::Node]| -> Vec<&'a str> {
        list.iter()
            .filter_map(|node| match node.node.as_ref() {
                Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
                _ => None,
            })
            .collect()
    };
    let mut names = strings(cte);
    let alias = alias.map_or_else(Vec::new, |alias| strings(&alias.colnames));
    for (position, name) in alias.into_iter().enumerate() {
        match names.get_mut(position) {
            Some(slot) => *slot = name,
            None => names.push(name),
        }
    }
    names
}

/// What resolution reads of the queries behind derived items.
pub(super) struct ProtobufBodies<'s, 'a> {
    pub(super) scopes: &'s mut Scopes<'a>,
}

impl<'a> Bodies<'a> for ProtobufBodies<'_, 'a> {
    type Query = Derived<'a>;

    fn body(&mut self, (query, scope): Derived<'a>) -> Body<'a, Derived<'a>> {
        let mut body = Body {
            outputs: Vec::new(),
            passes: false,
            items: Vec::new(),
        };
        let returning = |clause: &'a Option<pb::ReturningClause>| {
            clause.as_ref().map(|clause| clause.exprs.as_slice())
        };
        let targets = match query {
            NodeEnum::SelectStmt(select) if select.op() == pb::SetOperation::SetopNone => {
                if select.values_lists.is_empty() {
                    body.passes = passes(select);
                    let scope = match &select.with_clause {
                        // Bodies entered here are never evaluated as tasks:
                        // their depth does not count.
                        Some(with) => self.scopes.enter(with, scope, 0),
                        None => scope,
                    };
                    body.items = from_items(&select.from_clause, None, scope, self.scopes);
                }
                Some(select.target_list.as_slice())
            }
            NodeEnum::SelectStmt(select) => {
                // A set operation: its leftmost arm names the columns.
                let mut arm: &'a pb::SelectStmt = select;
                while arm.op() != pb::SetOperation::SetopNone {
                    match arm.larg.as_deref() {
                        Some(left) => arm = left,
                        None => break,
                    }
                }
                Some(arm.target_list.as_slice())
            }
            NodeEnum::InsertStmt(insert) => returning(&insert.returning_clause),
            NodeEnum::UpdateStmt(update) => returning(&update.returning_clause),
            NodeEnum::DeleteStmt(delete) => returning(&delete.returning_clause),
            NodeEnum::MergeStmt(merge) => returning(&merge.returning_clause),
            _ => None,
        };
        if let Some(targets) = targets {
            body.outputs = targets.iter().map(output_of).collect();
        }
        body
    }
}

/// A select-list item as resolution sees it.
fn output_of(target: &pb::Node) -> Output<'_> {
    let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() else {
        return Output::Unnamed;
    };
    let name = non_empty_str(&target.name);
    if let Some(NodeEnum::ColumnRef(column)) = inner(&target.val) {
        if let Some((last, rest)) = column.fields.split_last() {
            let qualifier = match rest.last().and_then(|field| field.node.as_ref()) {
                Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
                _ => None,
            };
            match last.node.as_ref() {
                Some(NodeEnum::AStar(_)) => return Output::Star(qualifier),
                Some(NodeEnum::String(column)) => {
                    return Output::Column {
                        name: name.unwrap_or(&column.sval),
                        table: qualifier,
                        column: &column.sval,
                    }
                }
                _ => {}
            }
        }
    }
    match name {
        Some(name) => Output::Named(name),
        None => Output::Unnamed,
    }
}

/// Whether a plain SELECT's rows are each computed where their source rows
/// live (see `resolve::Body::passes`).
fn passes(select: &pb::SelectStmt) -> bool {
    let distinct_on = select
        .distinct_clause
        .iter()
        .any(|item| item.node.is_some());
    if select.limit_count.is_some()
        || select.limit_offset.is_some()
        || distinct_on
        || !select.window_clause.is_empty()
    {
        return false;
    }
    let mut stack = Stack::default();
    for target in &select.target_list {
        if let Some(node) = &target.node {
            stack.items.push((Item::Node(node), 1));
        }
    }
    while let Some((item, depth)) = stack.items.pop() {
        if let Item::Node(NodeEnum::FuncCall(call)) = item {
            if call.over.is_some() {
                return false;
            }
        }
        stack.depth = depth + 1;
        item.push_children(&mut stack);
    }
    true
}

fn non_empty_str(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}
