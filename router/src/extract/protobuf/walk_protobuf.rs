//! The one walk over every node of a statement (protobuf structs): tables, CTE
//! names, function calls, locking, `INTO`, data-modifying CTEs, and whether a
//! sublink or a join needs the passes that read them.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::children_protobuf::{Item, Stack};
use super::kind_protobuf::target_and_set_columns;
use super::scopes_protobuf::{CteState, Scopes};
use super::values_protobuf::value;
use super::{inner, table_ref};
use crate::extract::{ExtractError, MAX_DEPTH};
use crate::summary::{Call, CteWrite, TableRef};

/// The writes of the data-modifying CTEs the condition pass evaluated
/// (those of the statement's own WITH: Postgres allows no others).
pub(super) fn cte_writes(scopes: &Scopes<'_>) -> Vec<CteWrite> {
    scopes
        .ctes
        .iter()
        .filter_map(|cte| {
            let body = cte.body?;
            let inserts = match body {
                NodeEnum::InsertStmt(_) | NodeEnum::MergeStmt(_) => true,
                NodeEnum::UpdateStmt(_) | NodeEnum::DeleteStmt(_) => false,
                _ => return None,
            };
            let CteState::Done { conditions, .. } = &cte.state else {
                return None;
            };
            let (table, set_columns) = target_and_set_columns(Some(body));
            Some(CteWrite {
                inserts,
                table: table?,
                set_columns,
                conditions: conditions.clone(),
            })
        })
        .collect()
}

/// A FuncCall as the summary keeps it; `None` when its name is not a plain
/// (schema-qualified) name.
fn call_of(call: &pb::FuncCall) -> Option<Call> {
    let name_at = |i: usize| match call.funcname.get(i).and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::String(name)) => Some(name.sval.clone()),
        _ => None,
    };
    let last = call.funcname.len().checked_sub(1)?;
    let name = name_at(last)?;
    let schema = last.checked_sub(1).and_then(name_at);
    let args = call.args.iter().map(value).collect();
    Some(Call { schema, name, args })
}

/// What the walk of one statement collects.
#[derive(Default)]
pub(super) struct Found {
    pub(super) tables: Vec<TableRef>,
    pub(super) calls: Vec<Call>,
    pub(super) ctes: Vec<String>,
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

impl Found {
    /// Visit every node under `root`, depth first, on `stack`.
    pub(super) fn walk<'a>(
        &mut self,
        root: &'a NodeEnum,
        stack: &mut Stack<'a>,
    ) -> Result<(), ExtractError> {
        stack.items.clear();
        stack.items.push((Item::Node(root), 1));
        while let Some((item, depth)) = stack.items.pop() {
            if depth > MAX_DEPTH {
                stack.items.clear();
                return Err(ExtractError::TooDeep);
            }
            if self.visit(item) {
                stack.depth = depth + 1;
                item.push_children(stack);
            }
        }
        Ok(())
    }

    /// Take what `item` gives; `false` to skip what lies below it.
    fn visit(&mut self, item: Item<'_>) -> bool {
        let node = match item {
            Item::Node(node) => node,
            Item::RangeVar(range_var) => return self.table(range_var),
            Item::Select(select) => {
                self.select(select);
                return true;
            }
            Item::Other(_) => return true,
        };
        match node {
            NodeEnum::RangeVar(range_var) => return self.table(range_var),
            // `FOR UPDATE OF o` names FROM items (often aliases), not tables.
            NodeEnum::LockingClause(_) => return false,
            NodeEnum::CommonTableExpr(cte) => {
                self.ctes.push(cte.ctename.clone());
                self.modifying_cte |= matches!(
                    inner(&cte.ctequery),
                    Some(
                        NodeEnum::InsertStmt(_)
                            | NodeEnum::UpdateStmt(_)
                            | NodeEnum::DeleteStmt(_)
                            | NodeEnum::MergeStmt(_)
                    )
                );
            }
            NodeEnum::SelectStmt(select) => self.select(select),
            NodeEnum::SubLink(_) => self.sublink = true,
            NodeEnum::FuncCall(call) => self.calls.extend(call_of(call)),
            // Its FuncCall is held directly (a node in C); its arguments
            // are nodes the walk meets.
            NodeEnum::CallStmt(call) => {
                self.calls
                    .extend(call.funccall.as_deref().and_then(call_of));
            }
            NodeEnum::JoinExpr(_) | NodeEnum::MergeStmt(_) => self.join = true,
            NodeEnum::UpdateStmt(update) => self.join |= !update.from_clause.is_empty(),
            NodeEnum::DeleteStmt(delete) => self.join |= !delete.using_clause.is_empty(),
            _ => {}
        }
        true
    }

    /// Note a table; `true`: the walk goes on into its alias.
    fn table(&mut self, range_var: &pb::RangeVar) -> bool {
        if !range_var.relname.is_empty() {
            self.tables.push(table_ref(range_var));
        }
        true
    }

    fn select(&mut self, select: &pb::SelectStmt) {
        self.locking |= !select.locking_clause.is_empty();
        self.select_into |= select.into_clause.is_some();
        self.join |= select.from_clause.len() > 1;
    }
}
