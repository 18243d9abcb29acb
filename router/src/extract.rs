//! Statement summaries from parsed trees: [`summarize`] walks parser-ffi's
//! zero-copy view of the C tree (the default engine), [`summarize_protobuf`]
//! walks pg_query's protobuf structs (engine `pg_query_protobuf`). Both follow
//! the rules below and must give identical summaries: each is the other's
//! oracle (`router/tests/extract_engines.rs`).
//!
//! # Rules
//! - One [`StatementSummary`] per top-level statement, in order.
//! - **kind / write**: SelectStmt -> Select (write if it has an INTO clause or
//!   a data-modifying CTE); InsertStmt/UpdateStmt/DeleteStmt/MergeStmt ->
//!   Insert/Update/Delete/Merge, write; CopyStmt -> Copy { to: !is_from },
//!   write when `is_from`; TransactionStmt: BEGIN/START -> Begin, COMMIT ->
//!   Commit, ROLLBACK -> Rollback, the rest -> TransactionOther;
//!   VariableSetStmt on `pgdog.shard` / `pgdog.sharding_key` -> SetShard /
//!   SetShardingKey (the value's text: integer literals in decimal, strings as
//!   is; `None` for RESET); other VariableSetStmt, VariableShowStmt,
//!   DiscardStmt -> Session; ExplainStmt -> Explain with the explained
//!   statement's tables, conditions, locking and write; schema changes
//!   (Create*/Alter*/Drop*/Index/Truncate/Rename/Comment/Grant/View/...) ->
//!   Ddl, write; CallStmt and DoStmt -> Other, write; anything else -> Other.
//! - **locking**: any SELECT level with a locking clause.
//! - **tables**: every RangeVar in the statement (any depth: FROM, JOIN,
//!   subqueries, CTE bodies, INSERT/UPDATE/DELETE/MERGE/COPY/DDL targets),
//!   except unqualified names equal to a CTE name defined anywhere in the
//!   statement. schema = `schemaname`, name = `relname`, alias = `alias.aliasname`.
//! - **conditions**: one per query level that yields a condition (a level
//!   whose condition is empty adds nothing). Levels: every SelectStmt (its
//!   WHERE AND-ed with the quals of INNER JoinExprs in its FROM, at any join
//!   nesting), every UpdateStmt / DeleteStmt (WHERE), every MergeStmt (its
//!   join condition), and an InsertStmt's VALUES (below). Set operations'
//!   arms, subqueries in FROM, sublinks and CTE bodies are levels of their own.
//! - An expression becomes a [`Condition`] like this (anything else is "no
//!   condition"):
//!   - AND: the children's conditions (dropping those without one); one left
//!     is returned as is, none gives no condition.
//!   - OR: all children must give a condition, else no condition.
//!   - NOT: no condition.
//!   - `col = v` / `v = col` (operator name's last part `=`): `Eq`.
//!   - `col IN (v1, ...)`: one value gives `Eq`, more give `Or` of `Eq`s;
//!     `NOT IN` gives none.
//!   - `col = ANY(v)` where v is a value (parameter, array literal): `Any`;
//!     `col = ANY(ARRAY[v1, ...])`: like IN.
//!   - A column is a ColumnRef whose last field is a String (not `*`):
//!     `column` = that, `table` = the field before it, if any. A cast column
//!     (`col::text = ...`) is not a column.
//!   - A value: A_Const (Integer -> `Integer`; Float and String -> `Text`;
//!     NULL -> `Null`; Boolean and BitString are not values), ParamRef ->
//!     `Param`, or a TypeCast of a value: `cast` = the outermost cast's type
//!     name, last part, lower-cased (the parser already turns `int` into
//!     `pg_catalog.int4`). Locations are the A_Const's.
//! - **INSERT VALUES**: with a column list, each row gives an `And` of `Eq`s
//!   of the columns whose value is a value (as above), with `table` = the
//!   target's alias or else its name; one `Eq` is returned as is. Several
//!   rows give an `Or` of the rows (a row giving no condition makes the whole
//!   VALUES give none). Without a column list, `insert_without_columns` is
//!   set. `INSERT ... SELECT`: the SELECT's levels as usual.
//! - Finally [`Summary::canonicalize`] sorts tables and conditions, so the
//!   order in which a walker meets things does not matter.
//! - A tree nested deeper than [`MAX_DEPTH`] levels of expression gives
//!   [`ExtractError::TooDeep`], never a stack overflow.

pub mod protobuf;
pub mod view;

#[cfg(test)]
mod tests;

use crate::summary::Summary;

#[allow(unused_imports)]
use crate::summary::{Condition, StatementSummary};

/// Deepest expression nesting the extractors follow.
pub const MAX_DEPTH: usize = 1000;

/// Why a tree could not be summarized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("statement is nested too deeply to route (more than {MAX_DEPTH} levels)")]
    TooDeep,
}

/// Summarize a tree parsed by parser-ffi (the zero-copy engine).
pub fn summarize(tree: &parser_ffi::ParseTree) -> Result<Summary, ExtractError> {
    view::summarize(tree)
}

/// Summarize pg_query's protobuf structs.
pub fn summarize_protobuf(
    tree: &parser_ffi::protobuf::ParseResult,
) -> Result<Summary, ExtractError> {
    protobuf::summarize(tree)
}
