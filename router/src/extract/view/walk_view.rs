//! The one walk over every node of a statement (zero-copy view): tables, CTE
//! names, function calls, locking, `INTO`, data-modifying CTEs, and whether a
//! sublink or a join needs the passes that read them.

use parser_ffi::view::{self, Node, NodeRef, Walk};

use super::kind_view::{set_columns, target};
use super::scopes_view::{CteState, Scopes};
use super::values_view::{value_of, ValueOf};
use crate::summary::{Call, CteWrite, TableRef};

/// What the walk collects from anywhere in a statement.
pub(super) struct Found<'s, 'a> {
    /// Every RangeVar (CTE references included until the end).
    pub(super) tables: Vec<TableRef>,
    /// Every FuncCall.
    pub(super) calls: Vec<Call>,
    pub(super) cte_names: &'s mut Vec<&'a str>,
    pub(super) locking: bool,
    pub(super) select_into: bool,
    pub(super) modifying_cte: bool,
    /// The statement has a SubLink.
    pub(super) sublink: bool,
    /// The statement may join FROM items: it has a JoinExpr, a FROM list
    /// of two items or more, an UPDATE ... FROM, a DELETE ... USING or a
    /// MERGE.
    pub(super) join: bool,
}

impl<'s, 'a> Found<'s, 'a> {
    /// Walk `stmt` once (on `stack`), collecting CTE names into
    /// `cte_names`.
    pub(super) fn walk(
        stmt: Node<'a>,
        stack: &mut Vec<Node<'a>>,
        cte_names: &'s mut Vec<&'a str>,
    ) -> Found<'s, 'a> {
        cte_names.clear();
        let mut found = Found {
            tables: Vec::new(),
            calls: Vec::new(),
            cte_names,
            locking: false,
            select_into: false,
            modifying_cte: false,
            sublink: false,
            join: false,
        };
        view::walk_with(stack, stmt, |node| found.visit(node));
        found
    }

    fn visit(&mut self, node: NodeRef<'a>) -> Walk {
        match node {
            NodeRef::RangeVar(range) => {
                if let Some(name) = range.relname() {
                    let alias = range.alias().and_then(|alias| alias.aliasname());
                    self.tables.push(TableRef {
                        schema: range.schemaname().map(str::to_owned),
                        name: name.to_owned(),
                        alias: alias.map(str::to_owned),
                    });
                }
                // Only the alias below.
                Walk::SkipChildren
            }
            NodeRef::CommonTableExpr(cte) => {
                if let Some(name) = cte.ctename() {
                    self.cte_names.push(name);
                }
                self.modifying_cte |= cte.ctequery().is_some_and(is_data_modifying);
                Walk::Continue
            }
            NodeRef::SelectStmt(select) => {
                self.locking |= !select.locking_clause().is_empty();
                self.select_into |= select.into_clause().is_some();
                self.join |= select.from_clause().len() > 1;
                Walk::Continue
            }
            NodeRef::JoinExpr(_) | NodeRef::MergeStmt(_) => {
                self.join = true;
                Walk::Continue
            }
            NodeRef::UpdateStmt(update) => {
                self.join |= !update.from_clause().is_empty();
                Walk::Continue
            }
            NodeRef::DeleteStmt(delete) => {
                self.join |= !delete.using_clause().is_empty();
                Walk::Continue
            }
            NodeRef::SubLink(_) => {
                self.sublink = true;
                Walk::Continue
            }
            NodeRef::FuncCall(call) => {
                self.calls.extend(call_of(call));
                Walk::Continue
            }
            // `FOR UPDATE OF o` names FROM items (often aliases), not tables.
            NodeRef::LockingClause(_) => Walk::SkipChildren,
            // Leaves (their children are name parts at most).
            NodeRef::ColumnRef(_) | NodeRef::AConst(_) | NodeRef::ParamRef(_) => Walk::SkipChildren,
            _ => Walk::Continue,
        }
    }
}

/// A FuncCall as the summary keeps it; `None` when its name is not a plain
/// (schema-qualified) name.
fn call_of(call: view::FuncCall<'_>) -> Option<Call> {
    let names = call.funcname();
    let name_at = |i: usize| match names.get(i).map(Node::kind) {
        Some(NodeRef::String(name)) => name.sval(),
        _ => None,
    };
    let last = names.len().checked_sub(1)?;
    let name = name_at(last)?.to_owned();
    let schema = last.checked_sub(1).and_then(name_at).map(str::to_owned);
    let args = call
        .args()
        .iter()
        .map(|arg| arg.and_then(value_of).map(ValueOf::to_value))
        .collect();
    Some(Call { schema, name, args })
}

/// The writes of the data-modifying CTEs the condition pass evaluated
/// (those of the statement's own WITH: Postgres allows no others).
pub(super) fn cte_writes(scopes: &Scopes<'_>) -> Vec<CteWrite> {
    scopes
        .ctes
        .iter()
        .filter_map(|cte| {
            let body = cte.body.filter(|body| is_data_modifying(*body))?;
            let CteState::Done { conditions, .. } = &cte.state else {
                return None;
            };
            Some(CteWrite {
                inserts: matches!(body.kind(), NodeRef::InsertStmt(_) | NodeRef::MergeStmt(_)),
                table: target(body)?,
                set_columns: set_columns(body),
                conditions: conditions.clone(),
            })
        })
        .collect()
}

pub(super) fn is_data_modifying(query: Node<'_>) -> bool {
    matches!(
        query.kind(),
        NodeRef::InsertStmt(_)
            | NodeRef::UpdateStmt(_)
            | NodeRef::DeleteStmt(_)
            | NodeRef::MergeStmt(_)
    )
}
