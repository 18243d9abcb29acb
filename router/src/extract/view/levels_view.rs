//! The query levels that restrict a statement's rows (zero-copy view): followed
//! with a task stack from the statement through preserved FROM items,
//! subqueries, referenced CTEs, set operations and INSERT ... SELECT, each
//! level's own condition read and resolved (see **conditions** in
//! [`crate::extract`]).

use parser_ffi::protobuf::{JoinType, SetOperation};
use parser_ffi::view::{InsertStmt, List, Node, NodeRef, RangeVar, SelectStmt};

use smallvec::{smallvec, SmallVec};

use super::conditions_view::{condition, count_nodes, row_condition, Booleans, Gathered};
use super::scopes_view::{from_items, name_of, CteState, Scope, Scopes, ViewBodies};
use crate::extract::resolve::{Resolver, StatementTables};
use crate::extract::{ExtractError, MAX_DEPTH};
use crate::summary::Condition;

/// The conditions of the levels that contribute (see the rules in [`super`]).
///
/// Levels nest as deep as the parser lets them and set operations chain
/// without limit, so this is a task machine rather than a recursion: a level
/// is read at once (its WHERE, its FROM's join tree with the INNER quals),
/// and what it leads to (FROM subqueries, referenced CTEs, UNION arms) waits
/// on `tasks`. Conditions collect in sinks: `out` (sink 0, the statement's)
/// and `sinks[n - 1]` for each UNION arm and CTE body. Tasks run depth first
/// in the statement's order, as the recursive reading of the rules would: a
/// CTE's body is evaluated completely when first referenced. A plain
/// statement (no subquery, CTE or set operation in FROM) needs no task and
/// allocates nothing here.
pub(super) struct Levels<'s, 'a> {
    pub(super) tasks: &'s mut Vec<Task<'a>>,
    pub(super) out: Vec<Condition>,
    pub(super) sinks: &'s mut Vec<Vec<Condition>>,
    /// A FROM's join tree still to look at.
    pub(super) joins: &'s mut Vec<Node<'a>>,
    pub(super) scopes: &'s mut Scopes<'a>,
    pub(super) booleans: &'s mut Booleans<'a>,
    /// The statement's tables, for resolving condition columns.
    pub(super) tables: &'s StatementTables<'s>,
    pub(super) insert_without_columns: bool,
}

/// The buffers of the condition pass, lent to each run of [`Levels`] (the
/// statement's own, then each sublink's).
pub(super) struct Passes<'s, 'a> {
    pub tasks: &'s mut Vec<Task<'a>>,
    pub sinks: &'s mut Vec<Vec<Condition>>,
    pub joins: &'s mut Vec<Node<'a>>,
    pub scopes: &'s mut Scopes<'a>,
    pub booleans: &'s mut Booleans<'a>,
    pub tables: &'s StatementTables<'s>,
}

impl<'s, 'a> Passes<'s, 'a> {
    /// A run of the levels over these buffers (cleared, but for the CTE
    /// scopes, which the runs of one statement share).
    pub(super) fn levels(&mut self) -> Levels<'_, 'a> {
        self.tasks.clear();
        self.sinks.clear();
        self.joins.clear();
        Levels {
            tasks: &mut *self.tasks,
            out: Vec::new(),
            sinks: &mut *self.sinks,
            joins: &mut *self.joins,
            scopes: &mut *self.scopes,
            booleans: &mut *self.booleans,
            tables: self.tables,
            insert_without_columns: false,
        }
    }
}

/// Work left for [`Levels`]. `depth` counts the query levels open around
/// the task (the statement's own query is at 1); `sink` is where the
/// conditions found go.
pub(super) enum Task<'a> {
    /// A contributing level (below the statement's own query).
    Query {
        query: Node<'a>,
        scope: Scope,
        depth: usize,
        sink: usize,
    },
    /// A contributing FROM references a CTE.
    Reference {
        cte: usize,
        depth: usize,
        sink: usize,
    },
    /// Both arms of a UNION are done: the OR of their AND-ed conditions.
    Union {
        left: usize,
        right: usize,
        sink: usize,
    },
    /// A CTE's body is done; its conditions are in sink `body`.
    CteDone { cte: usize, body: usize },
    /// Add a CTE's conditions to `sink` (capped).
    AddCte { cte: usize, sink: usize },
}

/// The statement's own sink.
pub(super) const OUT: usize = 0;

impl<'a> Levels<'_, 'a> {
    /// The conditions of the statement's own query.
    pub(super) fn run(self, query: Node<'a>) -> Result<(Vec<Condition>, bool), ExtractError> {
        self.run_at(query, None, true)
    }

    /// The conditions of `query` seeing the CTEs of `scope`; `top`: the
    /// statement's own query (its WITH's data-modifying CTEs contribute).
    pub(super) fn run_at(
        mut self,
        query: Node<'a>,
        scope: Scope,
        top: bool,
    ) -> Result<(Vec<Condition>, bool), ExtractError> {
        // A new run: CTE conditions added to an earlier run's list are not
        // in this one's.
        self.scopes.run += 1;
        self.query(query, scope, top, 1, OUT)?;
        while let Some(task) = self.tasks.pop() {
            match task {
                Task::Query {
                    query,
                    scope,
                    depth,
                    sink,
                } => self.query(query, scope, false, depth, sink)?,
                Task::Reference { cte, depth, sink } => self.reference(cte, depth, sink),
                Task::Union { left, right, sink } => {
                    let left = and_all(std::mem::take(self.sink(left)));
                    let right = and_all(std::mem::take(self.sink(right)));
                    if let (Some(left), Some(right)) = (left, right) {
                        self.sink(sink).push(Condition::Or(vec![left, right]));
                    }
                }
                Task::CteDone { cte, body } => {
                    let conditions = std::mem::take(self.sink(body));
                    let nodes = count_nodes(&conditions);
                    self.scopes.ctes[cte].state = CteState::Done { conditions, nodes };
                }
                Task::AddCte { cte, sink } => self.add_cte(cte, sink),
            }
        }
        Ok((self.out, self.insert_without_columns))
    }

    pub(super) fn new_sink(&mut self) -> usize {
        self.sinks.push(Vec::new());
        self.sinks.len()
    }

    fn sink(&mut self, sink: usize) -> &mut Vec<Condition> {
        match sink
            .checked_sub(1)
            .and_then(|index| self.sinks.get_mut(index))
        {
            Some(sink) => sink,
            None => &mut self.out,
        }
    }

    /// Read one level. `top`: the statement's own query, whose WITH's
    /// data-modifying CTEs contribute unreferenced.
    fn query(
        &mut self,
        query: Node<'a>,
        scope: Scope,
        top: bool,
        depth: usize,
        sink: usize,
    ) -> Result<(), ExtractError> {
        if depth > MAX_DEPTH {
            return Err(ExtractError::TooDeep);
        }
        // Tasks pushed last run first: a WITH's data-modifying CTEs are
        // pushed after what the query leads to.
        let (with, own_expr, from, target) = match query.kind() {
            NodeRef::SelectStmt(select) => return self.select(select, scope, top, depth, sink),
            NodeRef::InsertStmt(insert) => {
                let scope = self.enter(insert.with_clause(), scope);
                match insert.select_stmt() {
                    Some(source) if !self.values(insert, source, sink) => {
                        // INSERT ... SELECT (never itself an INSERT: no deeper).
                        self.query(source, scope, false, depth + 1, sink)?;
                    }
                    // VALUES, done; or DEFAULT VALUES.
                    _ => {}
                }
                self.data_modifying_ctes(top, scope, depth);
                return Ok(());
            }
            NodeRef::UpdateStmt(update) => (
                update.with_clause(),
                update.where_clause(),
                FromItems::List(update.from_clause()),
                update.relation(),
            ),
            NodeRef::DeleteStmt(delete) => (
                delete.with_clause(),
                delete.where_clause(),
                FromItems::List(delete.using_clause()),
                delete.relation(),
            ),
            NodeRef::MergeStmt(merge) => (
                merge.with_clause(),
                merge.join_condition(),
                FromItems::One(merge.source_relation()),
                merge.relation(),
            ),
            _ => return Ok(()),
        };
        let scope = self.enter(with, scope);
        self.level(own_expr, from, target, scope, depth, sink)?;
        self.data_modifying_ctes(top, scope, depth);
        Ok(())
    }

    /// A SELECT level: a set operation's arms, or its own condition.
    fn select(
        &mut self,
        select: SelectStmt<'a>,
        scope: Scope,
        top: bool,
        depth: usize,
        sink: usize,
    ) -> Result<(), ExtractError> {
        let scope = self.enter(select.with_clause(), scope);
        let (larg, rarg) = (select.larg(), select.rarg());
        let arm = |query: SelectStmt<'a>, sink| Task::Query {
            query: query.as_node(),
            scope,
            depth: depth + 1,
            sink,
        };
        match select.op() {
            SetOperation::SetopUnion => {
                if let (Some(larg), Some(rarg)) = (larg, rarg) {
                    let (left, right) = (self.new_sink(), self.new_sink());
                    self.tasks.push(Task::Union { left, right, sink });
                    self.tasks.push(arm(rarg, right));
                    self.tasks.push(arm(larg, left));
                }
            }
            SetOperation::SetopIntersect => {
                self.tasks.extend(rarg.map(|rarg| arm(rarg, sink)));
                self.tasks.extend(larg.map(|larg| arm(larg, sink)));
            }
            SetOperation::SetopExcept => {
                self.tasks.extend(larg.map(|larg| arm(larg, sink)));
            }
            _ => {
                let from = FromItems::List(select.from_clause());
                self.level(select.where_clause(), from, None, scope, depth, sink)?;
            }
        }
        self.data_modifying_ctes(top, scope, depth);
        Ok(())
    }

    /// A level's own condition (`expr` AND-ed with the quals of the INNER
    /// joins of its FROM reached through preserved sides), its columns
    /// resolved against the level's FROM items and `target` (an UPDATE's,
    /// DELETE's or MERGE's), goes to `sink`; the FROM's subqueries and CTE
    /// references become tasks, run in order.
    fn level(
        &mut self,
        expr: Option<Node<'a>>,
        from: FromItems<'a>,
        target: Option<RangeVar<'a>>,
        scope: Scope,
        depth: usize,
        sink: usize,
    ) -> Result<(), ExtractError> {
        let mut own = Gathered::Empty;
        self.expression(expr, &mut own)?;
        let start = self.tasks.len();
        for item in from.nodes().flatten() {
            // Join trees nest as deep as they have joins: a stack of right
            // sides, read after their left ones. A FROM item that is no
            // join (the common case) never touches it, so a plain level
            // allocates nothing here.
            let mut next = Some(item);
            while let Some(item) = next.take().or_else(|| self.joins.pop()) {
                match item.kind() {
                    NodeRef::JoinExpr(join) => {
                        let (left, right) = match join.jointype() {
                            JoinType::JoinInner => {
                                self.expression(join.quals(), &mut own)?;
                                (join.larg(), join.rarg())
                            }
                            JoinType::JoinLeft => (join.larg(), None),
                            JoinType::JoinRight => (None, join.rarg()),
                            _ => (None, None),
                        };
                        self.joins.extend(right);
                        next = left;
                    }
                    NodeRef::RangeSubselect(subselect) => {
                        if let Some(query) = subselect.subquery() {
                            self.tasks.push(Task::Query {
                                query,
                                scope,
                                depth: depth + 1,
                                sink,
                            });
                        }
                    }
                    NodeRef::RangeVar(range) if range.schemaname().is_none() => {
                        let cte = range
                            .relname()
                            .and_then(|name| self.scopes.find(scope, name));
                        if let Some(cte) = cte {
                            self.tasks.push(Task::Reference { cte, depth, sink });
                        }
                    }
                    _ => {}
                }
            }
        }
        self.tasks[start..].reverse();
        if let Some(own) = own.into_and() {
            if self.lone_table_keeps(&own, from, target, scope) {
                self.sink(sink).push(own);
                return Ok(());
            }
            let items = from_items(from.nodes().flatten(), target, scope, self.scopes);
            let mut bodies = ViewBodies {
                scopes: &mut *self.scopes,
            };
            let resolved = Resolver::new(items, &mut bodies, self.tables).condition(own);
            self.sink(sink).extend(resolved);
        }
        Ok(())
    }

    /// Resolution's common case, told without building the level's items:
    /// the level reads one plain table (its FROM's only item, no column
    /// alias and no CTE of that name; or an UPDATE's or DELETE's target
    /// alone), the statement's only table, and `own`'s columns are
    /// unqualified or qualified by it. Then every column stays as written,
    /// as [`Resolver`] would keep it (a level of tables only, all of the
    /// statement's).
    fn lone_table_keeps(
        &self,
        own: &Condition,
        from: FromItems<'a>,
        target: Option<RangeVar<'a>>,
        scope: Scope,
    ) -> bool {
        let mut nodes = from.nodes();
        let table = match (target, nodes.next()) {
            (Some(target), None | Some(None)) => name_of(target),
            (None, Some(Some(node))) => match node.kind() {
                NodeRef::RangeVar(range)
                    if range
                        .alias()
                        .is_none_or(|alias| alias.colnames().is_empty()) =>
                {
                    name_of(range).filter(|table| {
                        table.schema.is_some() || self.scopes.find(scope, table.name).is_none()
                    })
                }
                _ => None,
            },
            _ => None,
        };
        let Some(table) = table.filter(|_| nodes.next().is_none()) else {
            return false;
        };
        if !self.tables.is_only(table.schema, table.name) {
            return false;
        }
        let qualifier = table.alias.unwrap_or(table.name);
        // One comparison (a point lookup) needs no stack.
        if let Condition::Eq { column, .. } | Condition::Any { column, .. } = own {
            return column.table.as_deref().is_none_or(|q| q == qualifier);
        }
        let mut stack: SmallVec<[&Condition; 8]> = smallvec![own];
        while let Some(condition) = stack.pop() {
            match condition {
                Condition::Eq { column, .. } | Condition::Any { column, .. } => {
                    if column.table.as_deref().is_some_and(|q| q != qualifier) {
                        return false;
                    }
                }
                Condition::And(children) | Condition::Or(children) => stack.extend(children),
            }
        }
        true
    }

    /// An INSERT's VALUES rows, if its source is VALUES (else false).
    fn values(&mut self, insert: InsertStmt<'a>, source: Node<'a>, sink: usize) -> bool {
        let NodeRef::SelectStmt(values) = source.kind() else {
            return false;
        };
        let rows = values.values_lists();
        if rows.is_empty() || values.op() != SetOperation::SetopNone {
            return false;
        }
        let columns = insert.cols();
        if columns.is_empty() {
            self.insert_without_columns = true;
            return true;
        }
        let target = insert.relation();
        let table = target
            .and_then(|target| target.alias())
            .and_then(|alias| alias.aliasname())
            .or(target.and_then(|target| target.relname()));
        let Some(table) = table else {
            return true;
        };
        let mut any = Gathered::Empty;
        for row in rows.iter() {
            let Some(NodeRef::List(row)) = row.map(Node::kind) else {
                return true;
            };
            match row_condition(table, columns, row) {
                Some(found) => any.push(found, rows.len()),
                None => return true,
            }
        }
        if let Some(rows) = any.into_or() {
            if self.lone_table_keeps(&rows, FromItems::One(None), target, None) {
                self.sink(sink).push(rows);
                return true;
            }
            let items = from_items(std::iter::empty(), target, None, self.scopes);
            let mut bodies = ViewBodies {
                scopes: &mut *self.scopes,
            };
            let resolved = Resolver::new(items, &mut bodies, self.tables).condition(rows);
            self.sink(sink).extend(resolved);
        }
        true
    }

    /// AND an expression's condition into `own`.
    fn expression(
        &mut self,
        expr: Option<Node<'a>>,
        own: &mut Gathered,
    ) -> Result<(), ExtractError> {
        if let Some(expr) = expr {
            if let Some(found) = condition(expr, self.booleans)? {
                own.push(found, 2);
            }
        }
        Ok(())
    }
}

/// A level's FROM: a list (SELECT, UPDATE, DELETE's USING) or one item (a
/// MERGE's source).
#[derive(Clone, Copy)]
enum FromItems<'a> {
    List(List<'a>),
    One(Option<Node<'a>>),
}

impl<'a> FromItems<'a> {
    fn nodes(self) -> impl Iterator<Item = Option<Node<'a>>> {
        let (list, one) = match self {
            FromItems::List(list) => (Some(list), None),
            FromItems::One(node) => (None, Some(node)),
        };
        list.into_iter().flat_map(List::iter).chain(one)
    }
}

/// A list of conditions AND-ed: one as is, none gives none.
fn and_all(mut conditions: Vec<Condition>) -> Option<Condition> {
    match conditions.len() {
        0 | 1 => conditions.pop(),
        _ => Some(Condition::And(conditions)),
    }
}
