//! The query levels that restrict a statement's rows (protobuf structs):
//! followed with a task stack from the statement through preserved FROM items,
//! subqueries, referenced CTEs, set operations and INSERT ... SELECT, each
//! level's own condition read and resolved (see **conditions** in
//! [`crate::extract`]).

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::conditions_protobuf::{and, condition, fits, or, row_condition};
use super::scopes_protobuf::{from_items, CteState, ProtobufBodies, Scope, Scopes};
use super::{inner, non_empty};
use crate::extract::resolve::{Resolver, StatementTables};
use crate::extract::{ExtractError, MAX_DEPTH};
use crate::summary::Condition;

/// The second pass: the query levels that restrict the statement's rows (see
/// [`super`]), on a heap stack of tasks, run depth first in the statement's
/// order (a CTE's body is evaluated completely when first referenced; the
/// data-modifying CTEs of the statement's own WITH before what its FROM
/// leads to). `lists` holds the condition lists being filled: the
/// statement's at the bottom, one more per UNION arm and per CTE body under
/// evaluation.
///
/// Query levels open around a task are counted (the statement's own query
/// is level 1; a set operation's arms, a FROM subquery, an INSERT's SELECT
/// and a referenced CTE's body are one deeper): past [`MAX_DEPTH`] the
/// statement is [`ExtractError::TooDeep`], so that conditions (a UNION chain
/// nests its ORs) stay as shallow as the rest.
#[derive(Default)]
pub(super) struct Levels<'a> {
    pub(super) tasks: Vec<Task<'a>>,
    pub(super) lists: Vec<Vec<Condition>>,
    pub(super) scopes: Scopes<'a>,
    pub(super) insert_without_columns: bool,
}

/// A query: a node, or a SelectStmt held directly (a set operation's arm).
#[derive(Clone, Copy)]
pub(super) enum Query<'a> {
    Node(&'a NodeEnum),
    Select(&'a pb::SelectStmt),
}

pub(super) enum Task<'a> {
    /// Add the conditions of `query` (at tree depth `depth`, query level
    /// `level`, naming the CTEs of `scope`) to the innermost list; `top`: the
    /// statement's own query.
    Query {
        query: Query<'a>,
        depth: usize,
        level: usize,
        scope: Scope,
        top: bool,
    },
    /// Start a new innermost list.
    Open,
    /// Close the two innermost lists (a UNION's arms): their `Or` goes to the
    /// list below.
    Union,
    /// A contributing FROM (at query level `level`) references CTE `index`
    /// (`add`), or the statement's own WITH holds the data-modifying CTE
    /// `index` (not `add`): evaluate its body if that has not been done,
    /// then, if `add`, add its conditions to the innermost list (capped).
    Cte {
        index: usize,
        level: usize,
        add: bool,
    },
    /// CTE `index`'s body is evaluated (the innermost list): keep it, add it
    /// if `add`.
    CteDone { index: usize, add: bool },
}

impl<'a> Levels<'a> {
    /// The conditions of the statement `root` (left in `lists[0]`).
    pub(super) fn run(
        &mut self,
        root: &'a NodeEnum,
        tables: &StatementTables,
    ) -> Result<(), ExtractError> {
        // EXPLAIN, COPY (query), CREATE TABLE AS, DECLARE, PREPARE: the
        // wrapped query is the statement's level.
        let mut node = root;
        let mut depth = 1;
        loop {
            let query = match node {
                NodeEnum::ExplainStmt(wrapper) => &wrapper.query,
                NodeEnum::CopyStmt(wrapper) => &wrapper.query,
                NodeEnum::CreateTableAsStmt(wrapper) => &wrapper.query,
                NodeEnum::DeclareCursorStmt(wrapper) => &wrapper.query,
                NodeEnum::PrepareStmt(wrapper) => &wrapper.query,
                _ => break,
            };
            let Some(query) = inner(query) else {
                break;
            };
            node = query;
            depth += 1;
        }
        self.lists.push(Vec::new());
        self.tasks.push(Task::Query {
            query: Query::Node(node),
            depth,
            level: 1,
            scope: None,
            top: true,
        });
        self.drain(tables)
    }

    /// The conditions of `query` (a sublink's, at tree depth `depth`) seeing
    /// the CTEs of `scope`.
    pub(super) fn run_at(
        &mut self,
        query: &'a NodeEnum,
        depth: usize,
        scope: Scope,
        tables: &StatementTables,
    ) -> Result<Vec<Condition>, ExtractError> {
        self.lists.clear();
        self.tasks.clear();
        self.lists.push(Vec::new());
        self.tasks.push(Task::Query {
            query: Query::Node(query),
            depth,
            level: 1,
            scope,
            top: false,
        });
        self.drain(tables)?;
        Ok(self.lists.pop().unwrap_or_default())
    }

    /// Run the queued tasks.
    fn drain(&mut self, tables: &StatementTables) -> Result<(), ExtractError> {
        while let Some(task) = self.tasks.pop() {
            match task {
                Task::Query {
                    query,
                    depth,
                    level,
                    scope,
                    top,
                } => {
                    if level > MAX_DEPTH {
                        return Err(ExtractError::TooDeep);
                    }
                    let at = At {
                        depth,
                        level,
                        scope,
                    };
                    self.query(query, at, top, tables)?;
                }
                Task::Open => self.lists.push(Vec::new()),
                Task::Union => {
                    let right = self.lists.pop().unwrap_or_default();
                    let left = self.lists.pop().unwrap_or_default();
                    if let (Some(left), Some(right)) = (and(left), and(right)) {
                        self.add(Some(Condition::Or(vec![left, right])));
                    }
                }
                Task::Cte { index, level, add } => self.cte(index, level, add),
                Task::CteDone { index, add } => {
                    let conditions = self.lists.pop().unwrap_or_default();
                    let fits = fits(&conditions);
                    if let Some(cte) = self.scopes.ctes.get_mut(index) {
                        cte.state = CteState::Done { conditions, fits };
                    }
                    // Level 0: adding a finished CTE queues nothing.
                    self.cte(index, 0, add);
                }
            }
        }
        Ok(())
    }

    /// Add a level's condition, if any, to the innermost list.
    fn add(&mut self, condition: Option<Condition>) {
        if let (Some(condition), Some(list)) = (condition, self.lists.last_mut()) {
            list.push(condition);
        }
    }

    fn query(
        &mut self,
        query: Query<'a>,
        at: At,
        top: bool,
        tables: &StatementTables,
    ) -> Result<(), ExtractError> {
        let node = match query {
            Query::Select(select) => return self.select(select, at, top, tables),
            Query::Node(NodeEnum::SelectStmt(select)) => {
                return self.select(select, at, top, tables)
            }
            Query::Node(node) => node,
        };
        let depth = at.depth;
        let mut parts = Vec::new();
        let (at, from, target) = match node {
            NodeEnum::InsertStmt(insert) => {
                let at = self.with(insert.with_clause.as_ref(), at);
                self.insert(insert, at, tables);
                self.data_modifying_ctes(top, at);
                return Ok(());
            }
            NodeEnum::UpdateStmt(update) => {
                let at = self.with(update.with_clause.as_ref(), at);
                parts.extend(condition(update.where_clause.as_deref(), depth + 1)?);
                self.from(&update.from_clause, at, &mut parts)?;
                (at, &update.from_clause[..], update.relation.as_ref())
            }
            NodeEnum::DeleteStmt(delete) => {
                let at = self.with(delete.with_clause.as_ref(), at);
                parts.extend(condition(delete.where_clause.as_deref(), depth + 1)?);
                self.from(&delete.using_clause, at, &mut parts)?;
                (at, &delete.using_clause[..], delete.relation.as_ref())
            }
            NodeEnum::MergeStmt(merge) => {
                let at = self.with(merge.with_clause.as_ref(), at);
                parts.extend(condition(merge.join_condition.as_deref(), depth + 1)?);
                let source = merge.source_relation.as_deref();
                let source = source.map_or(&[][..], std::slice::from_ref);
                self.from(source, at, &mut parts)?;
                (at, source, merge.relation.as_ref())
            }
            _ => return Ok(()),
        };
        let resolved = self.resolve(and(parts), from, target, at.scope, tables);
        self.add(resolved);
        self.data_modifying_ctes(top, at);
        Ok(())
    }

    /// A level's condition with its columns resolved against its FROM
    /// items and `target` (see [`super::resolve`]).
    fn resolve(
        &mut self,
        condition: Option<Condition>,
        from: &'a [pb::Node],
        target: Option<&'a pb::RangeVar>,
        scope: Scope,
        tables: &StatementTables,
    ) -> Option<Condition> {
        let condition = condition?;
        let items = from_items(from, target, scope, &self.scopes);
        let mut bodies = ProtobufBodies {
            scopes: &mut self.scopes,
        };
        Resolver::new(items, &mut bodies, tables).condition(condition)
    }

    /// A SELECT: its own level, or a set operation's arms.
    fn select(
        &mut self,
        select: &'a pb::SelectStmt,
        at: At,
        top: bool,
        tables: &StatementTables,
    ) -> Result<(), ExtractError> {
        let at = self.with(select.with_clause.as_ref(), at);
        let arm = |arm: &'a Option<Box<pb::SelectStmt>>| {
            arm.as_deref().map(|select| Task::Query {
                query: Query::Select(select),
                depth: at.depth + 1,
                level: at.level + 1,
                scope: at.scope,
                top: false,
            })
        };
        // Tasks run last pushed first: left arms before right ones.
        match select.op() {
            pb::SetOperation::SetopUnion => {
                if let (Some(left), Some(right)) = (arm(&select.larg), arm(&select.rarg)) {
                    self.tasks.push(Task::Union);
                    self.tasks.push(right);
                    self.tasks.push(Task::Open);
                    self.tasks.push(left);
                    self.tasks.push(Task::Open);
                }
            }
            pb::SetOperation::SetopIntersect => {
                self.tasks.extend(arm(&select.rarg));
                self.tasks.extend(arm(&select.larg));
            }
            pb::SetOperation::SetopExcept => self.tasks.extend(arm(&select.larg)),
            _ => {
                let mut parts = Vec::new();
                parts.extend(condition(select.where_clause.as_deref(), at.depth + 1)?);
                self.from(&select.from_clause, at, &mut parts)?;
                let resolved =
                    self.resolve(and(parts), &select.from_clause, None, at.scope, tables);
                self.add(resolved);
            }
        }
        self.data_modifying_ctes(top, at);
        Ok(())
    }

    /// The FROM items reached through preserved sides: the quals of INNER
    /// joins go to `parts`; subqueries and CTE references are queued, to be
    /// evaluated in the order written. `at` is the level's own place.
    fn from(
        &mut self,
        items: &'a [pb::Node],
        at: At,
        parts: &mut Vec<Condition>,
    ) -> Result<(), ExtractError> {
        let mut pending: Vec<(&'a pb::Node, usize)> = items
            .iter()
            .rev()
            .map(|item| (item, at.depth + 1))
            .collect();
        let queued = self.tasks.len();
        while let Some((item, depth)) = pending.pop() {
            if depth > MAX_DEPTH {
                return Err(ExtractError::TooDeep);
            }
            match item.node.as_ref() {
                Some(NodeEnum::JoinExpr(join)) => {
                    let (left, right) = match join.jointype() {
                        pb::JoinType::JoinInner => {
                            parts.extend(condition(join.quals.as_deref(), depth + 1)?);
                            (&join.larg, &join.rarg)
                        }
                        pb::JoinType::JoinLeft => (&join.larg, &None),
                        pb::JoinType::JoinRight => (&None, &join.rarg),
                        _ => (&None, &None),
                    };
                    pending.extend(right.as_deref().map(|side| (side, depth + 1)));
                    pending.extend(left.as_deref().map(|side| (side, depth + 1)));
                }
                Some(NodeEnum::RangeSubselect(subselect)) => {
                    let query = inner(&subselect.subquery);
                    self.tasks.extend(query.map(|query| Task::Query {
                        query: Query::Node(query),
                        depth: depth + 1,
                        level: at.level + 1,
                        scope: at.scope,
                        top: false,
                    }));
                }
                Some(NodeEnum::RangeVar(range_var)) if range_var.schemaname.is_empty() => {
                    let found = self.scopes.find(at.scope, &range_var.relname);
                    self.tasks.extend(found.map(|index| Task::Cte {
                        index,
                        level: at.level,
                        add: true,
                    }));
                }
                _ => {}
            }
        }
        // Queued in the order written; run in that order.
        self.tasks[queued..].reverse();
        Ok(())
    }

    /// An INSERT: its VALUES rows, or its SELECT's levels.
    fn insert(&mut self, insert: &'a pb::InsertStmt, at: At, tables: &StatementTables) {
        match inner(&insert.select_stmt) {
            Some(NodeEnum::SelectStmt(values))
                if !values.values_lists.is_empty()
                    && values.op() == pb::SetOperation::SetopNone =>
            {
                let found = self.values(insert, values);
                let resolved = self.resolve(found, &[], insert.relation.as_ref(), None, tables);
                self.add(resolved);
            }
            Some(source) => self.tasks.push(Task::Query {
                query: Query::Node(source),
                depth: at.depth + 1,
                level: at.level + 1,
                scope: at.scope,
                top: false,
            }),
            // DEFAULT VALUES.
            None => {}
        }
    }

    /// `INSERT ... VALUES`: one condition for all rows (see [`super`]).
    fn values(&mut self, insert: &pb::InsertStmt, values: &pb::SelectStmt) -> Option<Condition> {
        if insert.cols.is_empty() {
            self.insert_without_columns = true;
            return None;
        }
        let target = insert.relation.as_ref()?;
        let alias = target
            .alias
            .as_ref()
            .and_then(|alias| non_empty(&alias.aliasname));
        let table = alias.unwrap_or_else(|| target.relname.clone());
        let mut rows = Vec::with_capacity(values.values_lists.len());
        for row in &values.values_lists {
            let Some(NodeEnum::List(row)) = row.node.as_ref() else {
                return None;
            };
            rows.push(row_condition(&table, &insert.cols, &row.items)?);
        }
        or(rows)
    }
}

/// Where a query sits: its tree depth, its query level, the CTEs it sees.
#[derive(Clone, Copy)]
pub(super) struct At {
    pub(super) depth: usize,
    pub(super) level: usize,
    pub(super) scope: Scope,
}
