//! The join facts from the zero-copy view (see the rules in
//! [`crate::extract`]): one more walk of the statement finds its query
//! levels and CTEs; each level's FROM is then read into a
//! [`LevelBuilder`] and each subquery and CTE body into [`QueryFacts`].
//! Iterative throughout, like the rest of the engine: join trees on a
//! stack, conditions through [`condition`].

use parser_ffi::protobuf::{JoinType, SetOperation};
use parser_ffi::view::{self, Alias, JoinExpr, List, Node, NodeRef, RangeVar, SelectStmt, Walk};

use super::super::joins::{
    finish, LevelBuilder, OwnFacts, QueryFacts, RawCte, RawItem, RawLevel, Target,
};
use super::super::MAX_SUBLINK_TABLES;
use super::conditions_view::{condition, equalities, Booleans};
use super::values_view::column_of;
use crate::extract::ExtractError;
use crate::summary::{Joins, OuterKind, TableRef};

/// The join facts of `stmt`, walked on `stack`.
pub(super) fn joins<'a>(
    stmt: Node<'a>,
    stack: &mut Vec<Node<'a>>,
    booleans: &mut Booleans<'a>,
) -> Result<Option<Box<Joins>>, ExtractError> {
    let mut levels: Vec<NodeRef<'a>> = Vec::new();
    let mut ctes = Vec::new();
    view::walk_with(stack, stmt, |node| match node {
        NodeRef::SelectStmt(_)
        | NodeRef::UpdateStmt(_)
        | NodeRef::DeleteStmt(_)
        | NodeRef::MergeStmt(_) => {
            levels.push(node);
            Walk::Continue
        }
        NodeRef::CommonTableExpr(cte) => {
            ctes.push(cte);
            Walk::Continue
        }
        NodeRef::RangeVar(_)
        | NodeRef::ColumnRef(_)
        | NodeRef::AConst(_)
        | NodeRef::ParamRef(_) => Walk::SkipChildren,
        _ => Walk::Continue,
    });
    let mut reader = Reader {
        stack,
        steps: Vec::new(),
        booleans,
    };
    let mut found = Vec::new();
    for node in levels {
        if let Some(level) = reader.level(node)? {
            found.push(level);
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut raw_ctes = Vec::with_capacity(ctes.len());
    for cte in ctes {
        let query = match cte.ctequery() {
            Some(query) => reader.query(query)?,
            None => QueryFacts::default(),
        };
        raw_ctes.push(RawCte {
            name: cte.ctename().unwrap_or_default().to_owned(),
            colnames: names(cte.aliascolnames()),
            query,
        });
    }
    Ok(finish(found, raw_ctes))
}

/// One step of a FROM's join trees: an item (and whether it is reached
/// through preserved sides), or a join's middle or end.
enum Step<'a> {
    Item(Node<'a>, bool),
    Mid(usize),
    Close(usize),
}

/// The buffers the reads share.
struct Reader<'s, 'a> {
    stack: &'s mut Vec<Node<'a>>,
    steps: Vec<Step<'a>>,
    booleans: &'s mut Booleans<'a>,
}

impl<'a> Reader<'_, 'a> {
    /// A level's facts, if it joins (see [`LevelBuilder::finish`]).
    fn level(&mut self, node: NodeRef<'a>) -> Result<Option<RawLevel>, ExtractError> {
        let mut level = LevelBuilder::default();
        let (where_clause, from) = match node {
            NodeRef::SelectStmt(select) => {
                if select.op() != SetOperation::SetopNone || select.from_clause().is_empty() {
                    return Ok(None);
                }
                (select.where_clause(), select.from_clause())
            }
            NodeRef::UpdateStmt(update) => {
                target(update.relation(), &mut level);
                (update.where_clause(), update.from_clause())
            }
            NodeRef::DeleteStmt(delete) => {
                target(delete.relation(), &mut level);
                (delete.where_clause(), delete.using_clause())
            }
            NodeRef::MergeStmt(merge) => {
                // The target and the source, joined as a FULL join would
                // (unmatched rows of either side may be acted on).
                let join = level.open(Some(OuterKind::Full), Vec::new(), false);
                target(merge.relation(), &mut level);
                level.mid(join);
                let outer = level.outer(join);
                self.tree(merge.source_relation().into_iter(), &mut level)?;
                level.close(join);
                if let Some(on) = merge.join_condition() {
                    equalities(on, |a, b| level.equality(a, b, outer));
                    level.condition_of(on, self.booleans)?;
                }
                return Ok(level.finish());
            }
            _ => return Ok(None),
        };
        if let Some(expr) = where_clause {
            equalities(expr, |a, b| level.equality(a, b, None));
            level.condition_of(expr, self.booleans)?;
        }
        self.tree(from.iter().flatten(), &mut level)?;
        Ok(level.finish())
    }

    /// Read FROM `items` (reached through preserved sides) into `level`.
    fn tree(
        &mut self,
        items: impl Iterator<Item = Node<'a>>,
        level: &mut LevelBuilder,
    ) -> Result<(), ExtractError> {
        for item in items {
            self.steps.push(Step::Item(item, true));
            while let Some(step) = self.steps.pop() {
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
                match item.kind() {
                    NodeRef::JoinExpr(join) => self.join_expr(join, preserved, level)?,
                    NodeRef::RangeVar(range) => {
                        if let Some(table) = table_of(range) {
                            level.item(RawItem::Table {
                                table,
                                colnames: colnames(range.alias()),
                            });
                        }
                    }
                    NodeRef::RangeSubselect(subselect) => {
                        let query = match subselect.subquery() {
                            Some(query) => self.query(query)?,
                            None => QueryFacts::default(),
                        };
                        level.item(RawItem::Subquery {
                            name: subselect
                                .alias()
                                .and_then(|alias| alias.aliasname())
                                .map(str::to_owned),
                            lateral: subselect.lateral(),
                            colnames: colnames(subselect.alias()),
                            query,
                        });
                    }
                    NodeRef::RangeTableSample(sample) => {
                        self.steps.extend(
                            sample
                                .relation()
                                .map(|relation| Step::Item(relation, preserved)),
                        );
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A join of a FROM tree: opened in `level` (its ON's equalities, and
    /// its condition when INNER and reached through preserved sides), its
    /// sides queued between its middle and its close.
    fn join_expr(
        &mut self,
        join: JoinExpr<'a>,
        preserved: bool,
        level: &mut LevelBuilder,
    ) -> Result<(), ExtractError> {
        let kind = match join.jointype() {
            JoinType::JoinInner => None,
            JoinType::JoinLeft => Some(OuterKind::Left),
            JoinType::JoinRight => Some(OuterKind::Right),
            _ => Some(OuterKind::Full),
        };
        let index = level.open(kind, names(join.using_clause()), join.is_natural());
        let outer = level.outer(index);
        if let Some(quals) = join.quals() {
            equalities(quals, |a, b| level.equality(a, b, outer));
            if kind.is_none() && preserved {
                level.condition_of(quals, self.booleans)?;
            }
        }
        let (left, right) = match kind {
            None => (preserved, preserved),
            Some(OuterKind::Left) => (preserved, false),
            Some(OuterKind::Right) => (false, preserved),
            Some(OuterKind::Full) => (false, false),
        };
        self.steps.push(Step::Close(index));
        self.steps
            .extend(join.rarg().map(|side| Step::Item(side, right)));
        self.steps.push(Step::Mid(index));
        self.steps
            .extend(join.larg().map(|side| Step::Item(side, left)));
        Ok(())
    }

    /// The facts of a subquery or CTE body.
    fn query(&mut self, query: Node<'a>) -> Result<QueryFacts, ExtractError> {
        let mut facts = QueryFacts::default();
        view::walk_with(self.stack, query, |node| match node {
            NodeRef::RangeVar(range) => {
                facts.tables.extend(table_of(range));
                if facts.tables.len() > MAX_SUBLINK_TABLES {
                    Walk::Stop
                } else {
                    Walk::SkipChildren
                }
            }
            NodeRef::ColumnRef(_) | NodeRef::AConst(_) | NodeRef::ParamRef(_) => Walk::SkipChildren,
            _ => Walk::Continue,
        });
        if let NodeRef::SelectStmt(select) = query.kind() {
            if select.op() == SetOperation::SetopNone {
                facts.own = Some(self.own(select)?);
            }
        }
        Ok(facts)
    }

    /// A plain SELECT's own level.
    fn own(&mut self, select: SelectStmt<'a>) -> Result<OwnFacts, ExtractError> {
        let mut own = OwnFacts::default();
        let mut conditions = Vec::new();
        if let Some(expr) = select.where_clause() {
            equalities(expr, |a, b| own.equality(a, b));
            conditions.extend(condition(expr, self.booleans)?);
        }
        // FROM items, with whether they are reached through preserved sides.
        let mut items: Vec<(Node<'a>, bool)> = select
            .from_clause()
            .iter()
            .flatten()
            .map(|item| (item, true))
            .collect();
        items.reverse();
        while let Some((item, preserved)) = items.pop() {
            match item.kind() {
                NodeRef::JoinExpr(join) => {
                    let (left, right) = match join.jointype() {
                        JoinType::JoinInner => {
                            if let (Some(quals), true) = (join.quals(), preserved) {
                                equalities(quals, |a, b| own.equality(a, b));
                                conditions.extend(condition(quals, self.booleans)?);
                            }
                            (preserved, preserved)
                        }
                        JoinType::JoinLeft => (preserved, false),
                        JoinType::JoinRight => (false, preserved),
                        _ => (false, false),
                    };
                    items.extend(join.rarg().map(|side| (side, right)));
                    items.extend(join.larg().map(|side| (side, left)));
                }
                NodeRef::RangeVar(range) if colnames(range.alias()).is_empty() => {
                    own.from_tables.extend(table_of(range));
                }
                NodeRef::RangeTableSample(sample) => {
                    items.extend(sample.relation().map(|relation| (relation, preserved)));
                }
                _ => {}
            }
        }
        own.conditions
            .extend(super::super::joins::and_all(conditions));
        own.targets = select
            .target_list()
            .iter()
            .flatten()
            .map(target_of)
            .collect();
        Ok(own)
    }
}

/// One select-list item.
fn target_of(target: Node<'_>) -> Target {
    let NodeRef::ResTarget(target) = target.kind() else {
        return Target::Other;
    };
    let val = target.val();
    let Some(NodeRef::ColumnRef(column_ref)) = val.map(Node::kind) else {
        return Target::Other;
    };
    let fields = column_ref.fields();
    let last = fields
        .len()
        .checked_sub(1)
        .and_then(|last| fields.get(last));
    if let Some(NodeRef::AStar(_)) = last.map(Node::kind) {
        let qualifier = fields
            .len()
            .checked_sub(2)
            .and_then(|at| fields.get(at))
            .and_then(|field| match field.kind() {
                NodeRef::String(name) => name.sval(),
                _ => None,
            });
        return Target::Star(qualifier.map(str::to_owned));
    }
    match val.and_then(column_of) {
        Some(column) => Target::Column(
            target.name().unwrap_or(column.column).to_owned(),
            column.to_column(),
        ),
        None => Target::Other,
    }
}

impl LevelBuilder {
    /// AND `expr`'s key condition, if it has one, into the level's own.
    fn condition_of<'a>(
        &mut self,
        expr: Node<'a>,
        booleans: &mut Booleans<'a>,
    ) -> Result<(), ExtractError> {
        if let Some(found) = condition(expr, booleans)? {
            self.condition(found);
        }
        Ok(())
    }
}

/// An UPDATE's, DELETE's or MERGE's target: the level's first item.
fn target(relation: Option<RangeVar<'_>>, level: &mut LevelBuilder) {
    if let Some(table) = relation.and_then(table_of) {
        level.item(RawItem::Table {
            table,
            colnames: Vec::new(),
        });
    }
}

fn table_of(range: RangeVar<'_>) -> Option<TableRef> {
    Some(TableRef {
        schema: range.schemaname().map(str::to_owned),
        name: range.relname()?.to_owned(),
        alias: range
            .alias()
            .and_then(|alias| alias.aliasname())
            .map(str::to_owned),
    })
}

fn colnames(alias: Option<Alias<'_>>) -> Vec<String> {
    alias.map_or_else(Vec::new, |alias| names(alias.colnames()))
}

/// A list of String nodes (USING columns, column aliases).
fn names(list: List<'_>) -> Vec<String> {
    list.iter()
        .flatten()
        .filter_map(|node| match node.kind() {
            NodeRef::String(name) => name.sval().map(str::to_owned),
            _ => None,
        })
        .collect()
}
