//! The CTEs a run of the query levels meets (zero-copy view): a WITH's
//! CTEs entered into scope, a data-modifying one evaluated at the top
//! whether referenced or not, a referenced one evaluated once and its
//! conditions added where a contributing FROM names it.

use parser_ffi::view::WithClause;

use super::levels_view::OUT;
use super::levels_view::{Levels, Task};
use super::scopes_view::{CteState, Scope};
use super::walk_view::is_data_modifying;
use crate::extract::MAX_CTE_CONDITION_NODES;

impl<'a> Levels<'_, 'a> {
    pub(super) fn enter(&mut self, with: Option<WithClause<'a>>, scope: Scope) -> Scope {
        match with {
            Some(with) => self.scopes.enter(with, scope),
            None => scope,
        }
    }

    /// At the top, the data-modifying CTEs of the WITH just entered are
    /// evaluated, referenced or not (pushed last: they run first, in
    /// order): their conditions are their writes' (`cte_writes`), added to
    /// a level only where a contributing FROM references them.
    pub(super) fn data_modifying_ctes(&mut self, top: bool, scope: Scope, depth: usize) {
        let Some(position) = scope.filter(|_| top) else {
            return;
        };
        let Some(with) = self.scopes.groups.get(position.group) else {
            return;
        };
        for cte in (with.first..with.first + with.len).rev() {
            let modifying = self.scopes.ctes[cte].body.is_some_and(is_data_modifying);
            if modifying && matches!(self.scopes.ctes[cte].state, CteState::Pending) {
                self.scopes.ctes[cte].state = CteState::Running;
                self.evaluate(cte, depth);
            }
        }
    }

    /// Queue the evaluation of CTE `cte`'s body (its state is Running).
    pub(super) fn evaluate(&mut self, cte: usize, depth: usize) {
        let body = self.new_sink();
        self.tasks.push(Task::CteDone { cte, body });
        if let Some(query) = self.scopes.ctes[cte].body {
            self.tasks.push(Task::Query {
                query,
                scope: self.scopes.body_scope(cte),
                depth: depth + 1,
                sink: body,
            });
        }
    }

    /// CTE number `cte` contributes to `sink`: evaluate its body first if
    /// not done yet; while it is being evaluated, a reference adds nothing.
    pub(super) fn reference(&mut self, cte: usize, depth: usize, sink: usize) {
        match self.scopes.ctes[cte].state {
            CteState::Pending => {
                self.scopes.ctes[cte].state = CteState::Running;
                self.tasks.push(Task::AddCte { cte, sink });
                self.evaluate(cte, depth);
            }
            CteState::Running => {}
            CteState::Done { .. } => self.add_cte(cte, sink),
        }
    }

    pub(super) fn add_cte(&mut self, cte: usize, sink: usize) {
        let sinks = &mut *self.sinks;
        let target = match sink.checked_sub(1).and_then(|index| sinks.get_mut(index)) {
            Some(target) => target,
            None => &mut self.out,
        };
        let Some(entry) = self.scopes.ctes.get_mut(cte) else {
            return;
        };
        // Canonicalize drops repeated conditions of the statement's own list,
        // so a CTE referenced again there need not be copied again (the
        // copies would cost time and memory in proportion to the references).
        let run = self.scopes.run;
        if sink == OUT && entry.in_out == run {
            return;
        }
        if let CteState::Done { conditions, nodes } = &entry.state {
            if *nodes <= MAX_CTE_CONDITION_NODES {
                target.extend(conditions.iter().cloned());
                if sink == OUT {
                    entry.in_out = run;
                }
            }
        }
    }
}
