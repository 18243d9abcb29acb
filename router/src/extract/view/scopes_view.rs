//! The CTE scopes of a statement and what names resolve to (zero-copy view):
//! the WITH lists in scope at a level, the FROM items a level names, and the
//! bodies (select lists, FROM items) of subqueries and CTEs that `resolve.rs`
//! reads through.

use parser_ffi::protobuf::SetOperation;
use parser_ffi::view::{self, Alias, List, Node, NodeRef, RangeVar, SelectStmt, Walk, WithClause};

use crate::extract::resolve::{Bodies, Body, Item, Name, Output};
use crate::summary::Condition;

/// Where a name is looked up: the CTEs of group `group` numbered below
/// `end`, then the group's outer scope. `None`: no CTE visible.
pub(super) type Scope = Option<ScopePosition>;

#[derive(Clone, Copy)]
pub(super) struct ScopePosition {
    pub(super) group: usize,
    end: usize,
}

/// Every CTE of the contributing levels, by WITH (a group), with lookups in
/// O(groups in scope x log CTEs).
#[derive(Default)]
pub(super) struct Scopes<'a> {
    pub(super) ctes: Vec<Cte<'a>>,
    pub(super) groups: Vec<Group>,
    /// Each group's (name, CTE number)s, sorted by name, one range per group.
    by_name: Vec<(&'a str, usize)>,
    /// Counts the runs of [`Levels`](super::levels_view::Levels) (the
    /// statement's, then one per sublink), which share these CTEs and
    /// their evaluated conditions.
    pub(super) run: usize,
}

pub(super) struct Cte<'a> {
    pub(super) body: Option<Node<'a>>,
    /// Its column names (`WITH c (a, b) AS ...`).
    colnames: List<'a>,
    group: usize,
    pub(super) state: CteState,
    /// The run (see [`Scopes::run`]) whose own list its conditions were
    /// added to last.
    pub(super) in_out: usize,
}

pub(super) struct Group {
    /// Its CTEs are numbered `first..first + len`, its names are
    /// `by_name[first..first + len]` (the same numbers: both grow together).
    pub(super) first: usize,
    pub(super) len: usize,
    recursive: bool,
    outer: Scope,
}

pub(super) enum CteState {
    Pending,
    Running,
    Done {
        conditions: Vec<Condition>,
        nodes: usize,
    },
}

impl<'a> Scopes<'a> {
    pub(super) fn clear(&mut self) {
        self.ctes.clear();
        self.groups.clear();
        self.by_name.clear();
    }

    /// Add a WITH's CTEs; returns the scope of its query.
    pub(super) fn enter(&mut self, with: WithClause<'a>, outer: Scope) -> Scope {
        let group = self.groups.len();
        let first = self.ctes.len();
        for cte in with.ctes().iter().flatten() {
            if let NodeRef::CommonTableExpr(cte) = cte.kind() {
                let name = cte.ctename().unwrap_or_default();
                self.by_name.push((name, self.ctes.len()));
                self.ctes.push(Cte {
                    body: cte.ctequery(),
                    colnames: cte.aliascolnames(),
                    group,
                    state: CteState::Pending,
                    in_out: 0,
                });
            }
        }
        let end = self.ctes.len();
        self.by_name[first..end].sort_unstable();
        self.groups.push(Group {
            first,
            len: end - first,
            recursive: with.recursive(),
            outer,
        });
        Some(ScopePosition { group, end })
    }

    /// What a CTE's body sees: in a RECURSIVE WITH every CTE of it, else the
    /// earlier ones.
    pub(super) fn body_scope(&self, cte: usize) -> Scope {
        let group = self.ctes[cte].group;
        let end = match self.groups.get(group) {
            Some(with) if with.recursive => with.first + with.len,
            _ => cte,
        };
        Some(ScopePosition { group, end })
    }

    /// The CTE an unqualified name refers to from `scope`, if any.
    pub(super) fn find(&self, scope: Scope, name: &str) -> Option<usize> {
        let mut scope = scope;
        while let Some(position) = scope {
            let group = self.groups.get(position.group)?;
            let names = self.by_name.get(group.first..group.first + group.len)?;
            // The first visible CTE of that name, if several (Postgres
            // refuses those).
            let from = names.partition_point(|&(candidate, _)| candidate < name);
            let found = names[from..]
                .iter()
                .take_while(|&&(candidate, _)| candidate == name)
                .map(|&(_, cte)| cte)
                .find(|&cte| cte < position.end);
            if found.is_some() {
                return found;
            }
            scope = group.outer;
        }
        None
    }
}

/// A query behind a derived item, and the CTEs it sees.
type Query<'a> = (Node<'a>, Scope);

/// A level's FROM items for resolution (see [`super::resolve`]): `target`
/// (an UPDATE's, DELETE's, MERGE's or INSERT's relation) first, then the
/// leaves of `from`'s join trees, left to right.
pub(super) fn from_items<'a>(
    from: impl Iterator<Item = Node<'a>>,
    target: Option<RangeVar<'a>>,
    scope: Scope,
    scopes: &Scopes<'a>,
) -> Vec<Item<'a, Query<'a>>> {
    let mut items = Vec::new();
    if let Some(table) = target.and_then(name_of) {
        items.push(Item::Table {
            table,
            renamed: false,
        });
    }
    // Join trees: left sides followed at once, right ones stacked (so a
    // FROM without joins allocates nothing here).
    let mut pending: Vec<Node<'a>> = Vec::new();
    for top in from {
        let mut next = Some(top);
        while let Some(node) = next.take().or_else(|| pending.pop()) {
            match node.kind() {
                NodeRef::JoinExpr(join) => {
                    pending.extend(join.rarg());
                    next = join.larg();
                }
                NodeRef::RangeTableSample(sample) => next = sample.relation(),
                NodeRef::RangeVar(range) => {
                    let Some(table) = name_of(range) else {
                        continue;
                    };
                    let cte = match table.schema {
                        None => scopes.find(scope, table.name),
                        Some(_) => None,
                    };
                    let alias = range.alias();
                    match cte {
                        Some(cte) => {
                            let Some(body) = scopes.ctes[cte].body else {
                                continue;
                            };
                            items.push(Item::Derived {
                                name: Some(table.alias.unwrap_or(table.name)),
                                colnames: colnames(Some(scopes.ctes[cte].colnames), alias),
                                query: (body, scopes.body_scope(cte)),
                            });
                        }
                        None => items.push(Item::Table {
                            table,
                            renamed: alias.is_some_and(|alias| !alias.colnames().is_empty()),
                        }),
                    }
                }
                NodeRef::RangeSubselect(subselect) => {
                    let Some(query) = subselect.subquery() else {
                        continue;
                    };
                    let alias = subselect.alias();
                    items.push(Item::Derived {
                        name: alias.and_then(|alias| alias.aliasname()),
                        colnames: colnames(None, alias),
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
pub(super) fn name_of(range: RangeVar<'_>) -> Option<Name<'_>> {
    Some(Name {
        schema: range.schemaname(),
        name: range.relname()?,
        alias: range.alias().and_then(|alias| alias.aliasname()),
    })
}

/// A CTE's column names overridden position by position by an alias's.
fn colnames<'a>(cte: Option<List<'a>>, alias: Option<Alias<'a>>) -> Vec<&'a str> {
    let strings = |list: List<'a>| -> Vec<&'a str> {
        list.iter()
            .flatten()
            .filter_map(|node| match node.kind() {
                NodeRef::String(name) => name.sval(),
                _ => None,
            })
            .collect()
    };
    let mut names = cte.map_or_else(Vec::new, strings);
    let alias = alias.map_or_else(Vec::new, |alias| strings(alias.colnames()));
    for (position, name) in alias.into_iter().enumerate() {
        match names.get_mut(position) {
            Some(slot) => *slot = name,
            None => names.push(name),
        }
    }
    names
}

/// What resolution reads of the queries behind derived items.
pub(super) struct ViewBodies<'s, 'a> {
    pub(super) scopes: &'s mut Scopes<'a>,
}

impl<'a> Bodies<'a> for ViewBodies<'_, 'a> {
    type Query = Query<'a>;

    fn body(&mut self, (query, scope): Query<'a>) -> Body<'a, Query<'a>> {
        let mut body = Body {
            outputs: Vec::new(),
            passes: false,
            items: Vec::new(),
        };
        let targets = match query.kind() {
            NodeRef::SelectStmt(select) if select.op() == SetOperation::SetopNone => {
                if select.values_lists().is_empty() {
                    body.passes = passes(select);
                    let scope = match select.with_clause() {
                        Some(with) => self.scopes.enter(with, scope),
                        None => scope,
                    };
                    let from = select.from_clause().iter().flatten();
                    body.items = from_items(from, None, scope, self.scopes);
                }
                Some(select.target_list())
            }
            NodeRef::SelectStmt(select) => {
                // A set operation: its leftmost arm names the columns.
                let mut arm = select;
                while let Some(left) = arm.larg().filter(|_| arm.op() != SetOperation::SetopNone) {
                    arm = left;
                }
                Some(arm.target_list())
            }
            NodeRef::InsertStmt(insert) => insert.returning_clause().map(|r| r.exprs()),
            NodeRef::UpdateStmt(update) => update.returning_clause().map(|r| r.exprs()),
            NodeRef::DeleteStmt(delete) => delete.returning_clause().map(|r| r.exprs()),
            NodeRef::MergeStmt(merge) => merge.returning_clause().map(|r| r.exprs()),
            _ => None,
        };
        if let Some(targets) = targets {
            body.outputs = targets.iter().map(output_of).collect();
        }
        body
    }
}

/// A select-list item as resolution sees it.
fn output_of(target: Option<Node<'_>>) -> Output<'_> {
    let Some(NodeRef::ResTarget(target)) = target.map(Node::kind) else {
        return Output::Unnamed;
    };
    let name = target.name();
    if let Some(NodeRef::ColumnRef(column)) = target.val().map(Node::kind) {
        let fields = column.fields();
        let last = fields.len().checked_sub(1).and_then(|at| fields.get(at));
        let previous = fields.len().checked_sub(2).and_then(|at| fields.get(at));
        let qualifier = previous.and_then(|field| match field.kind() {
            NodeRef::String(name) => name.sval(),
            _ => None,
        });
        match last.map(Node::kind) {
            Some(NodeRef::AStar(_)) => return Output::Star(qualifier),
            Some(NodeRef::String(column)) => {
                if let Some(column) = column.sval() {
                    return Output::Column {
                        name: name.unwrap_or(column),
                        table: qualifier,
                        column,
                    };
                }
            }
            _ => {}
        }
    }
    match name {
        Some(name) => Output::Named(name),
        None => Output::Unnamed,
    }
}

/// Whether a plain SELECT's rows are each computed where their source rows
/// live (see `resolve::Body::passes`).
fn passes(select: SelectStmt<'_>) -> bool {
    let distinct_on = select.distinct_clause().iter().any(|item| item.is_some());
    if select.limit_count().is_some()
        || select.limit_offset().is_some()
        || distinct_on
        || !select.window_clause().is_empty()
    {
        return false;
    }
    let mut window = false;
    let mut stack = Vec::new();
    for target in select.target_list().iter().flatten() {
        view::walk_with(&mut stack, target, |node| match node {
            NodeRef::FuncCall(call) if call.over().is_some() => {
                window = true;
                Walk::Stop
            }
            _ => Walk::Continue,
        });
        if window {
            return false;
        }
    }
    true
}
