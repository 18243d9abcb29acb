//! Summaries from pg_query's protobuf structs (engine `pg_query_protobuf`),
//! following the rules in [`super`]. One walk per statement
//! (`walk_protobuf.rs`) visits every node on a heap stack (no recursion per
//! tree level, so no input can exhaust the thread's stack) for tables, CTE
//! names, calls, locking and `INTO`; then a second pass, again on a heap
//! stack, follows only the query levels that restrict the statement's rows
//! (`levels_protobuf.rs`) and reads each one's condition
//! (`conditions_protobuf.rs`, operands in `values_protobuf.rs`) through the
//! CTE scopes and FROM bodies of `scopes_protobuf.rs`. A statement with a
//! sublink gets a third pass ([`sublinks_protobuf`]).
//!
//! The files mirror the view engine's (`kind`, `session`, `walk`, `levels`,
//! `ctes`, `scopes`, `conditions`, `values`, `joins`, `sublinks`, `schema`),
//! so that
//! each engine stays the other's oracle; `children_protobuf.rs` has no
//! mirror: it is the table of which fields of which protobuf struct may
//! hold nodes (`node_children!`), which parser-ffi generates for the view,
//! checked against the corpus by counting the `Node`s of each tree.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

mod anded_in_protobuf;
mod children_protobuf;
mod conditions_protobuf;
mod ctes_protobuf;
mod joins_protobuf;
mod kind_protobuf;
mod levels_protobuf;
mod schema_protobuf;
mod scopes_protobuf;
mod session_protobuf;
mod sublinks_protobuf;
mod values_protobuf;
mod walk_protobuf;

pub use scopes_protobuf::output_source;

use super::resolve::StatementTables;
use super::ExtractError;
use crate::summary::{StatementSummary, Summary, TableRef};
use children_protobuf::Stack;
use kind_protobuf::{classify, target_and_set_columns};
use levels_protobuf::Levels;
use session_protobuf::session_effect;
use walk_protobuf::{cte_writes, Found};

/// Summarize every statement of `tree` (see [`super`] for the rules).
pub fn summarize(tree: &pb::ParseResult) -> Result<Summary, ExtractError> {
    let mut stack = Stack::default();
    let mut statements = Vec::with_capacity(tree.stmts.len());
    for raw in &tree.stmts {
        let root = inner(&raw.stmt);
        let mut summary = statement(root, &mut stack)?;
        summary.session =
            root.and_then(|root| session_effect(root, raw.stmt_location, raw.stmt_len));
        statements.push(summary);
    }
    let mut summary = Summary { statements };
    summary.canonicalize();
    Ok(summary)
}

fn statement<'a>(
    root: Option<&'a NodeEnum>,
    stack: &mut Stack<'a>,
) -> Result<StatementSummary, ExtractError> {
    let mut found = Found::default();
    if let Some(root) = root {
        found.walk(root, stack)?;
    }
    let (kind, write) = classify(root);
    let Found {
        mut tables,
        calls,
        mut ctes,
        locking,
        select_into,
        modifying_cte,
        sublink,
        join,
    } = found;
    if !ctes.is_empty() {
        tables.retain(|table| table.schema.is_some() || !ctes.contains(&table.name));
    }
    let statement_tables = StatementTables::new(&tables);
    let mut levels = Levels::default();
    if let Some(root) = root {
        levels.run(root, &statement_tables)?;
    }
    let conditions = levels.lists.pop().unwrap_or_default();
    let cte_writes = cte_writes(&levels.scopes);
    let insert_without_columns = levels.insert_without_columns;
    let sublinks = match root {
        Some(root) if sublink => {
            ctes.sort_unstable();
            let is_cte = |name: &str| ctes.binary_search_by(|cte| cte.as_str().cmp(name)).is_ok();
            Some(Box::new(sublinks_protobuf::sublinks(
                root,
                &mut levels,
                &statement_tables,
                stack,
                is_cte,
            )?))
        }
        _ => None,
    };
    let joins = match root {
        Some(root) if join => joins_protobuf::joins(root, stack)?,
        _ => None,
    };
    let (target, set_columns) = target_and_set_columns(root);
    Ok(StatementSummary {
        kind,
        write: write.unwrap_or(select_into || modifying_cte),
        locking,
        tables,
        conditions,
        insert_without_columns,
        target,
        set_columns,
        session: None,
        sublinks,
        joins,
        calls,
        schema_change: root.and_then(schema_protobuf::schema_change),
        cte_writes,
    })
}

fn table_ref(range_var: &pb::RangeVar) -> TableRef {
    TableRef {
        schema: non_empty(&range_var.schemaname),
        name: range_var.relname.clone(),
        alias: range_var
            .alias
            .as_ref()
            .and_then(|alias| non_empty(&alias.aliasname)),
    }
}

/// The node an optional boxed `Node` field holds.
fn inner(field: &Option<Box<pb::Node>>) -> Option<&NodeEnum> {
    field.as_deref().and_then(|node| node.node.as_ref())
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}
