//! Summaries from parser-ffi's zero-copy view of the C tree (the default engine).
//!
//! Two passes per statement (three with a sublink: see [`sublinks_view`]),
//! none recursing on the tree's depth:
//! - one iterative walk ([`parser_ffi::view::walk_with`] on a reused stack,
//!   `walk_view.rs`) meets every node once for what the rules take from
//!   anywhere in the statement: tables, CTE names (for the tables'
//!   exclusion rule), calls, locking and the SELECT write flags;
//! - `levels_view.rs` then follows only the query structure of the levels
//!   that contribute conditions (FROM lists through preserved join sides,
//!   subqueries in FROM, referenced CTEs, set operations, INSERT ... SELECT)
//!   and reads each level's WHERE / ON / VALUES down its boolean skeleton
//!   (`conditions_view.rs`, operands in `values_view.rs`), resolving
//!   columns through the CTE scopes and FROM bodies of `scopes_view.rs`
//!   (the CTEs a run evaluates: `ctes_view.rs`).
//!
//! The statement's kind, target and SET columns are `kind_view.rs`'s, its
//! session effect `session_view.rs`'s, its join facts `joins_view.rs`'s and
//! its schema change `schema_view.rs`'s; the protobuf engine has one file
//! for each (`*_protobuf.rs`), so that each stays the other's mirror.
//!
//! Nothing recurses on the tree: query levels are followed with a task stack
//! and nested AND/OR/NOT evaluated on explicit stacks (both refused past
//! [`MAX_DEPTH`](super::MAX_DEPTH)), join trees and cast chains are followed
//! with loops. Strings are copied out of the tree only for the summary
//! itself.

use parser_ffi::view::{Node, NodeRef};
use parser_ffi::ParseTree;

mod anded_in_view;
mod conditions_view;
mod ctes_view;
mod joins_view;
mod kind_view;
mod levels_view;
mod schema_view;
mod scopes_view;
mod session_view;
mod sublinks_view;
mod values_view;
mod walk_view;

use super::resolve::StatementTables;
use super::ExtractError;
use crate::summary::{
    Condition, SessionEffect, StatementKind, StatementSummary, Summary, TableRef,
};
use conditions_view::Booleans;
use kind_view::{classify, own_query, set_columns, target};
use levels_view::{Passes, Task};
use scopes_view::Scopes;
use session_view::session_effect;
use walk_view::{cte_writes, Found};

/// Summarize every statement of `tree` (see the rules in [`super`]).
pub fn summarize(tree: &ParseTree) -> Result<Summary, ExtractError> {
    let mut scratch = Scratch {
        stack: Vec::with_capacity(32),
        ..Scratch::default()
    };
    let mut statements = Vec::with_capacity(tree.statement_list().len());
    for raw in tree.statements() {
        match raw.stmt() {
            Some(stmt) => {
                let session = session_effect(stmt, raw.stmt_location(), raw.stmt_len());
                statement(stmt, session, &mut scratch, &mut statements)?;
            }
            // raw_parser never leaves a RawStmt empty; summarize it as nothing.
            None => statements.push(StatementSummary {
                kind: StatementKind::Other,
                write: false,
                locking: false,
                tables: Vec::new(),
                conditions: Vec::new(),
                insert_without_columns: false,
                target: None,
                set_columns: Vec::new(),
                session: None,
                sublinks: None,
                joins: None,
                calls: Vec::new(),
                schema_change: None,
                cte_writes: Vec::new(),
            }),
        }
    }
    let mut summary = Summary { statements };
    summary.canonicalize();
    Ok(summary)
}

/// Buffers reused across the statements of one string.
#[derive(Default)]
struct Scratch<'a> {
    /// The walk's stack.
    stack: Vec<Node<'a>>,
    /// CTE names met by the walk.
    cte_names: Vec<&'a str>,
    tasks: Vec<Task<'a>>,
    sinks: Vec<Vec<Condition>>,
    /// A FROM's join tree still to look at.
    joins: Vec<Node<'a>>,
    scopes: Scopes<'a>,
    /// State of [`condition`].
    booleans: Booleans<'a>,
}

/// Where a statement's `write` flag comes from.
#[derive(Clone, Copy)]
enum Write {
    Always,
    Never,
    /// A SELECT: writes if some SelectStmt has INTO or some CTE modifies data.
    IfSelectWrites,
}

/// Summarize `stmt` onto `out` (pushed where it is built: a summary is a
/// few hundred bytes, and returning it would copy it twice more).
fn statement<'a>(
    stmt: Node<'a>,
    session: Option<SessionEffect>,
    scratch: &mut Scratch<'a>,
    out: &mut Vec<StatementSummary>,
) -> Result<(), ExtractError> {
    let (kind, write) = classify(stmt);
    let Scratch {
        stack,
        cte_names,
        tasks,
        sinks,
        joins,
        scopes,
        booleans,
    } = scratch;
    let found = Found::walk(stmt, stack, cte_names);
    let write = match write {
        Write::Always => true,
        Write::Never => false,
        Write::IfSelectWrites => found.select_into || found.modifying_cte,
    };

    scopes.clear();
    let tables = without_ctes(found.tables, found.cte_names);
    let statement_tables = StatementTables::new(&tables);
    let mut passes = Passes {
        tasks,
        sinks,
        joins,
        scopes,
        booleans,
        tables: &statement_tables,
    };
    let (conditions, insert_without_columns) = match own_query(stmt) {
        Some(query) => passes.levels().run(query)?,
        None => (Vec::new(), false),
    };
    let cte_writes = cte_writes(passes.scopes);
    let join_levels = match found.join {
        true => joins_view::joins(stmt, stack, passes.booleans)?,
        false => None,
    };
    let sublinks = match found.sublink {
        true => {
            let cte_names: &[&str] = found.cte_names;
            let is_cte = |name: &str| cte_names.binary_search(&name).is_ok();
            Some(Box::new(sublinks_view::sublinks(stmt, passes, is_cte)?))
        }
        false => None,
    };
    out.push(StatementSummary {
        kind,
        write,
        locking: found.locking,
        tables,
        conditions,
        insert_without_columns,
        target: target(stmt),
        set_columns: set_columns(stmt),
        session,
        sublinks,
        joins: join_levels,
        calls: found.calls,
        // A SELECT changes a schema only with INTO, which the walk saw.
        schema_change: match stmt.kind() {
            NodeRef::SelectStmt(_) if !found.select_into => None,
            _ => schema_view::schema_change(stmt),
        },
        cte_writes,
    });
    Ok(())
}

/// Drop the references to CTEs (unqualified names equal to a CTE's name).
fn without_ctes(mut tables: Vec<TableRef>, ctes: &mut [&str]) -> Vec<TableRef> {
    if !ctes.is_empty() {
        // Sorted, so that many CTEs and many tables cost n log n.
        ctes.sort_unstable();
        tables.retain(|table| {
            table.schema.is_some() || ctes.binary_search(&table.name.as_str()).is_err()
        });
    }
    tables
}
