//! The CTEs a run of the query levels meets (protobuf structs): a WITH's
//! CTEs entered into scope, a data-modifying one evaluated at the top
//! whether referenced or not, a referenced one evaluated once and its
//! conditions added where a contributing FROM names it.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::levels_protobuf::Query;
use super::levels_protobuf::{At, Levels, Task};
use super::scopes_protobuf::CteState;

impl<'a> Levels<'a> {
    /// Where a query's WITH (if any) puts its levels: its CTEs become visible.
    pub(super) fn with(&mut self, with: Option<&'a pb::WithClause>, at: At) -> At {
        let Some(with) = with else {
            return at;
        };
        // WithClause (depth + 1) > its list of CTEs (+ 2) > ctequery (+ 3).
        let scope = self.scopes.enter(with, at.scope, at.depth + 3);
        At { scope, ..at }
    }

    /// At the statement's own level, the data-modifying CTEs of its WITH
    /// (the scope `at` names) are evaluated whether referenced or not (their
    /// conditions are their writes', added to a level only where a
    /// contributing FROM references them). Called once the level has queued
    /// what it leads to: they are evaluated first, in order.
    pub(super) fn data_modifying_ctes(&mut self, top: bool, at: At) {
        let Some(position) = at.scope.filter(|_| top) else {
            return;
        };
        let Some(group) = self.scopes.groups.get(position.group) else {
            return;
        };
        for index in (group.first..group.first + group.len).rev() {
            let modifying = self.scopes.ctes.get(index).is_some_and(|cte| {
                matches!(
                    cte.body,
                    Some(
                        NodeEnum::InsertStmt(_)
                            | NodeEnum::UpdateStmt(_)
                            | NodeEnum::DeleteStmt(_)
                            | NodeEnum::MergeStmt(_)
                    )
                )
            });
            if modifying {
                self.cte(index, at.level, false);
            }
        }
    }

    /// Evaluate CTE `index`, and add its conditions to the innermost list
    /// if `add` (see [`Task::Cte`]).
    pub(super) fn cte(&mut self, index: usize, level: usize, add: bool) {
        let Levels {
            tasks,
            lists,
            scopes,
            ..
        } = self;
        let scope = scopes.body_scope(index);
        let Some(cte) = scopes.ctes.get_mut(index) else {
            return;
        };
        match &cte.state {
            CteState::New => {
                cte.state = CteState::Evaluating;
                tasks.push(Task::CteDone { index, add });
                tasks.extend(cte.body.map(|body| Task::Query {
                    query: Query::Node(body),
                    depth: cte.depth,
                    level: level + 1,
                    scope,
                    top: false,
                }));
                tasks.push(Task::Open);
            }
            // Referenced from its own body: nothing more to add.
            CteState::Evaluating => {}
            CteState::Done { conditions, fits } => {
                if let (true, Some(list)) = (*fits && add, lists.last_mut()) {
                    list.extend(conditions.iter().cloned());
                }
            }
        }
    }
}
