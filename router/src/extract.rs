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
//!   Ddl, write; CallStmt -> Other, write; DoStmt -> Do (its `as` and
//!   `language` DefElems; language `plpgsql` when absent), write; anything
//!   else -> Other.
//! - **locking**: any SELECT level with a locking clause.
//! - **calls**: every FuncCall anywhere (a CallStmt's own too), named by
//!   its last name part and the one before it (schema), with each
//!   positional argument that is a constant or parameter through casts as
//!   a value (as for conditions), `None` for any other expression.
//! - **tables**: every RangeVar in the statement (any depth: FROM, JOIN,
//!   subqueries, CTE bodies, INSERT/UPDATE/DELETE/MERGE/COPY/DDL targets),
//!   except unqualified names equal to a CTE name defined anywhere in the
//!   statement. schema = `schemaname`, name = `relname`, alias = `alias.aliasname`.
//! - **conditions**: the key conditions that restrict the statement's rows,
//!   from the query levels that do; all must hold. A level's own condition:
//!   a SELECT's WHERE AND-ed with the quals of the INNER JoinExprs of its FROM
//!   reached through preserved sides (both sides of INNER, the left of LEFT,
//!   the right of RIGHT, neither of FULL; at any join nesting); an UPDATE's
//!   WHERE with its FROM, a DELETE's WHERE with its USING, a MERGE's join
//!   condition with its source (one FROM item), alike; an INSERT's VALUES
//!   (below). A level whose condition is empty adds nothing. The levels that
//!   contribute:
//!   - the statement's own: the top-level SELECT / INSERT / UPDATE / DELETE /
//!     MERGE, or the query that EXPLAIN, COPY (query) TO, CREATE TABLE AS,
//!     DECLARE CURSOR or PREPARE wraps;
//!   - from a contributing level, the FROM items reached through preserved
//!     sides (every item of a SELECT's or UPDATE's FROM list, of a DELETE's
//!     USING, a MERGE's source; then join sides as above), recursively: a
//!     subquery (RangeSubselect, LATERAL or not) adds its query's conditions;
//!     an unqualified RangeVar naming a CTE in scope adds that CTE's (below);
//!   - an INSERT's SELECT (INSERT ... SELECT);
//!   - set operations (a SelectStmt with `op`): UNION (ALL or not) adds ONE
//!     condition, the `Or` of its arms' (each arm's conditions AND-ed, one
//!     left as is), and none if some arm has none; INTERSECT adds every arm's
//!     conditions; EXCEPT the left arm's only. Nested set operations combine
//!     the same way, recursively.
//!
//!   Nothing else contributes. Subqueries inside expressions (SubLinks of
//!   every kind: IN, EXISTS, NOT EXISTS, ANY/ALL, scalar, ARRAY(...), wherever
//!   they sit: WHERE, target list, HAVING, ON, VALUES, SET, RETURNING) add
//!   nothing, nor do their own FROM subqueries and CTEs; neither do FROM
//!   items on the nullable side of an outer join, nor EXCEPT's right arm:
//!   they filter or extend the statement's rows, they do not say where those
//!   rows live (`WHERE k = 3 OR id IN (SELECT ... WHERE k = 4)` reads every
//!   shard). Sublinks have conditions of their own, in **sublinks** below.
//!
//!   **Resolution** (`extract/resolve.rs`, shared by both engines): each
//!   column of a level's own condition is resolved against that level's
//!   FROM items (through joins of every kind; an UPDATE's, DELETE's or
//!   MERGE's target first; an INSERT's VALUES rows against its target), as
//!   Postgres resolves it, and a comparison restricts rows only through a
//!   column of a table of the level:
//!   - `q.c`: the item named `q` (a table by its alias, else its name; a
//!     subquery by its alias; a CTE reference by its alias, else the CTE's
//!     name). A table with column aliases, a function, a join's alias, or
//!     no item of the level (an enclosing query's) gives nothing;
//!   - `c`: the one FROM subquery or CTE reference of the level that
//!     certainly outputs `c` (a plain column or an `AS c`, after column
//!     aliases; two: Postgres finds it ambiguous, nothing); else the
//!     level's tables without column aliases (any of them may have it: a
//!     key there is certain, as Postgres would find the column ambiguous
//!     otherwise) and what the `*` / `t.*` outputs of its derived items
//!     pass through;
//!   - a derived item's output `c` passes through when its query is a plain
//!     SELECT (no set operation, VALUES, LIMIT, OFFSET, FETCH, DISTINCT
//!     ON, window function or WINDOW clause: its rows are each computed
//!     where their source rows live; grouping is fine) and `c` is a plain
//!     column of its select list (`k`, `t.k AS c`) or comes through its
//!     `*` / `t.*`, renamed position by position by the CTE's column
//!     names, then the reference's alias's (a name reaching a `*` drops it
//!     and what follows); the column it passes is then resolved at that
//!     query's level, and so on down. Anything else (computed, `AS c` of an
//!     expression, a data-modifying CTE's RETURNING) gives nothing.
//!
//!   A column resolved to tables is written so that the router (which
//!   looks qualifiers up among the statement's tables, alias first, then
//!   name, and an unqualified column among all of them) finds the same
//!   table: as written when unqualified at a level whose tables are all the
//!   statement's tables; else `alias.c` (or `name.c`) per table, the
//!   comparison repeated for each and AND-ed. A qualifier that would find
//!   another table among the statement's is dropped. A comparison whose
//!   column resolves to nothing gives no condition (an AND goes on without
//!   it, an OR gives none). Following one column stops after
//!   [`MAX_RESOLUTION_STEPS`] items or [`MAX_DEPTH`] levels (then it gives
//!   nothing).
//!
//!   **CTEs** are scoped as in Postgres (a WITH's CTEs are visible to its
//!   query and the levels below; to each other in a RECURSIVE WITH, to the
//!   later ones only otherwise). A CTE's body is evaluated once per
//!   statement, as a query of its own, and its conditions are added wherever
//!   a contributing FROM references the CTE; a reference met while the body
//!   is being evaluated (recursion) adds nothing. A CTE referenced only from
//!   sublinks, or not at all, adds nothing. Data-modifying CTEs (INSERT /
//!   UPDATE / DELETE / MERGE) of the top-level statement's WITH are
//!   evaluated whether referenced or not (they run either way): their
//!   conditions are their writes' (**cte_writes**), and go to a level only
//!   where a contributing FROM references them, as any CTE's.
//!   A CTE whose conditions count more than [`MAX_CTE_CONDITION_NODES`]
//!   nodes (each Eq, Any, And and Or one) adds nothing where it is
//!   referenced: CTEs referencing each other could otherwise multiply a
//!   statement's conditions exponentially, and a condition left out only
//!   makes routing read more shards, never fewer. (A data-modifying CTE of
//!   the top-level WITH is added once however large: an INSERT's rows must
//!   go to their shards only.) CTEs with the same name in one WITH (which
//!   Postgres refuses): the first one counts.
//! - **sublinks** ([`crate::summary::Sublinks`]): `None` unless the statement
//!   has a SubLink (anywhere). Then one more walk visits every node, scoped
//!   like the condition pass (a query's WITH makes its CTEs visible to the
//!   query; a CTE body sees the earlier CTEs of its WITH, all of them if
//!   RECURSIVE, and the enclosing scopes), and sorts what it meets into
//!   regions: each SubLink opens a region for everything below it (the
//!   sublinks nested in it open their own); the rest is outside. An
//!   unqualified RangeVar whose name is a CTE in scope is a reference to
//!   it; other RangeVars are tables of their region (and of the CTE body
//!   they are in, if any). Per sublink, in region order:
//!   - **tables**: its region's, plus the tables of the CTE bodies it
//!     references, and of those these reference or define, transitively
//!     (never of sublinks nested in them); past [`MAX_SUBLINK_TABLES`]
//!     (counting each such CTE as one plus its own tables, repeats too),
//!     none, and `reads_every_table`;
//!   - **conditions**: the condition pass run on its query as the
//!     statement's own (not `top`: no data-modifying CTEs), from the scope
//!     it sits in, so that the CTEs of enclosing queries it references
//!     through contributing FROMs add theirs;
//!   - **from_tables** and **equalities**, only when its query is a SELECT
//!     without a set operation: the RangeVars of its FROM through JoinExprs
//!     of every type (and a TABLESAMPLE's relation), and the `col = col`
//!     A_Exprs (operator `=`, both sides columns as for conditions) met
//!     through ANDs only in its WHERE and in the quals of INNER joins
//!     reached through preserved sides (as for conditions); and, when the
//!     SubLink is `col IN (SELECT ...)` or `col = ANY (SELECT ...)` (a
//!     column on the left) met through ANDs only in the WHERE of a
//!     SelectStmt, and its query selects one column (a ResTarget that is a
//!     ColumnRef), has no LIMIT, OFFSET, DISTINCT ON or WINDOW, and either
//!     no GROUP BY and no HAVING or a GROUP BY without grouping sets that
//!     lists that same ColumnRef: **in_key**, that column and the one on
//!     the left (each outer row meets only inner rows, whole groups of
//!     them, holding its own value).
//!
//!   **tables_outside**: the region outside sublinks. **other_names**:
//!   RangeSubselect, RangeFunction, RangeTableFunc (default `xmltable`),
//!   JsonTable (default `json_table`) and JoinExpr aliases (and a join's
//!   USING alias), the alias (else the name) of each CTE reference, and for
//!   a RangeFunction without an alias the last name part of each FuncCall
//!   it calls; any other function there, and a RangeSubselect without an
//!   alias (Postgres 16+), sets **unnamed_item**. All lists are
//!   sorted and deduplicated (sublinks too); tables named like a CTE of the
//!   statement are dropped, as from `tables`.
//! - **joins** ([`crate::summary::Joins`]): `None` unless the statement has
//!   a JoinExpr, a SELECT whose FROM list has two items or more, an UPDATE
//!   with FROM, a DELETE with USING, or a MERGE, and one of its levels
//!   joins. Then one more walk meets every node and reads, for each
//!   SelectStmt without a set operation (anywhere: sublinks, FROM
//!   subqueries, CTE bodies, arms, the wrapped query), UpdateStmt,
//!   DeleteStmt and MergeStmt, a [`crate::summary::JoinLevel`], kept when
//!   it has two items or more, or one and an outer join:
//!   - **items**, in order: an UPDATE's, DELETE's or MERGE's relation,
//!     then the leaves of the FROM list's (USING list's, MERGE source's)
//!     join trees, left to right: a RangeVar (through RangeTableSample) is
//!     a table (`renamed` when its alias has column names), unless its
//!     unqualified name is a CTE name of the statement: then it is a
//!     derived item reading that CTE (when several CTEs have the name, one
//!     that `reads_every_table`); a RangeSubselect is a derived item.
//!     Functions, table functions and JSON_TABLE are not items;
//!   - **outer_joins**: each LEFT, RIGHT or FULL JoinExpr (any other
//!     non-INNER type as FULL), in pre-order (a join before its left side,
//!     its left side before its right), with the item ranges of its two
//!     sides; a MERGE's target and source are first, as a FULL join;
//!   - **equalities**: the `col = col` A_Exprs (as for sublinks) met
//!     through ANDs only in the WHERE (`outer: None`), the quals of INNER
//!     joins at any depth (`None`), the quals of each outer join (its
//!     index), a MERGE's join condition (its FULL join's);
//!   - **usings**: each JoinExpr with USING columns or NATURAL: its sides'
//!     ranges, the columns, and its outer join, if it is one;
//!   - **conditions**: the level's own condition, as for **conditions**
//!     (its WHERE, then the quals of INNER joins reached through preserved
//!     sides in pre-order, AND-ed: one as is; a MERGE's join condition).
//!
//!   A derived item: **name**, the subquery's alias (a CTE reference's
//!   alias, else the CTE's name); **lateral**; **tables**, every RangeVar
//!   under its query (sublinks included), those named like a CTE replaced
//!   by the tables of every CTE of that name, transitively; past
//!   [`MAX_SUBLINK_TABLES`] (with repeats) none, and `reads_every_table`.
//!   When its query is a SELECT without a set operation: **from_tables**,
//!   the RangeVars of its FROM through JoinExprs of every type and
//!   RangeTableSample, without column aliases nor CTE names;
//!   **columns** and **stars**, its select list's plain ColumnRefs (output
//!   name: the ResTarget's, else the column's) and `*` / `t.*`, renamed by
//!   position by the CTE's column names, then the alias's (an alias
//!   reaching a `*` drops it and what follows); **equalities** (when
//!   lateral) and **conditions**, as for a sublink's own level and for a
//!   level's own condition. Lists are sorted and deduplicated; a level's
//!   items keep their order.
//! - **schema_change** ([`crate::summary::SchemaChange`]), of the top-level
//!   statement only: CreateTableAsStmt (its IntoClause's `rel`; a
//!   materialized view when `objtype` says so; `with_data` unless
//!   `skipData`) and a SelectStmt with an IntoClause on itself or on its
//!   leftmost arm (SELECT INTO) -> CreateAs, also when an ExplainStmt with
//!   an `analyze` option (no argument, or one other than `false`, `off`,
//!   `no`, `0`) wraps one; RefreshMatViewStmt without `skipData` ->
//!   Refresh; RenameStmt of a table, materialized view or foreign table ->
//!   RenameTable (the new name in the relation's schema as written), of a
//!   column of one -> Columns (`renamed`); AlterObjectSchemaStmt of one ->
//!   RenameTable (`to` is `newschema.relname`); AlterTableStmt of one with
//!   DROP COLUMN or ADD COLUMN commands -> Columns (`dropped`, `added`,
//!   sorted). Tables are named as in **tables**. `None` otherwise.
//! - **cte_writes** ([`crate::summary::CteWrite`]): per data-modifying CTE
//!   the condition pass evaluated (those of the top-level statement's WITH,
//!   the only ones Postgres allows), in CTE order: `inserts` for INSERT and
//!   MERGE, its relation and assigned columns as for **target** and
//!   **set_columns**, and its body's conditions (not capped).
//! - **session**: VariableSetStmt: SET LOCAL and SET TRANSACTION (a
//!   `VAR_SET_MULTI` named TRANSACTION) -> TransactionScoped("SET"); RESET
//!   ALL -> ResetAll; SET name TO value(s) / FROM CURRENT -> Set with the
//!   lower-cased name and the RawStmt's `stmt_location` / `stmt_len`; SET
//!   name TO DEFAULT and RESET name -> Reset; anything else (SET SESSION
//!   CHARACTERISTICS) -> Untracked. ConstraintsSetStmt ->
//!   TransactionScoped("SET CONSTRAINTS"); DeallocateStmt -> Deallocate (the
//!   name, `None` for ALL); DiscardStmt ALL -> DiscardAll; PrepareStmt ->
//!   Prepare (the name, each declared type's last name part lower-cased as
//!   for casts, the RawStmt's span); ExecuteStmt, alone or as the query of
//!   an ExplainStmt or CreateTableAsStmt -> Execute (the name, the RawStmt's
//!   span, and per argument: an A_Const Integer, String or NULL -> that
//!   value, a Float -> Number with its text, a ParamRef -> Param, anything
//!   else (casts included) -> Expression); DeclareCursorStmt -> Cursor(Declare) (its name; BINARY, SCROLL and
//!   WITH HOLD from its option bits); FetchStmt -> Cursor(Fetch) (name,
//!   direction, `howMany`, `ismove`); ClosePortalStmt -> Cursor(Close)
//!   (`None` for CLOSE ALL); an UPDATE or DELETE whose WHERE is `CURRENT OF
//!   name` -> Cursor(CurrentOf); `None` otherwise.
//!   (`SET pgdog.*` gets its effect too: on an unsharded cluster it is an
//!   ordinary custom setting.)
//! - **target**: the table the statement writes, as in **tables**: an
//!   INSERT's, UPDATE's, DELETE's or MERGE's relation, a COPY ... FROM's
//!   table; of the top-level statement only (or of the statement EXPLAIN
//!   explains), never of a data-modifying CTE. `None` otherwise.
//! - **set_columns**: the columns a top-level UPDATE (or the UPDATE that
//!   EXPLAIN explains) assigns, and those of every UPDATE action of a MERGE
//!   (`WHEN MATCHED` and `WHEN NOT MATCHED BY SOURCE ... THEN UPDATE SET`:
//!   both change target rows): each ResTarget's name (`SET (a, b) = ...`
//!   names both; `SET a[1] = ...` names `a`), sorted and deduplicated. Not
//!   INSERT ... ON CONFLICT DO UPDATE's: upserts routinely assign every
//!   column, the key included, to the value the row already has.
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
//!     name, last part, lower-cased in ASCII only, as Postgres folds
//!     identifiers (the parser already turns `int` into `pg_catalog.int4`).
//!     Locations are the A_Const's.
//! - **INSERT VALUES**: with a column list, each row gives an `And` of `Eq`s
//!   of the columns whose value is a value (as above), with `table` = the
//!   target's alias or else its name; one `Eq` is returned as is. Several
//!   rows give an `Or` of the rows (a row giving no condition makes the whole
//!   VALUES give none). Without a column list, `insert_without_columns` is
//!   set (by any INSERT ... VALUES that contributes, as above: the top-level
//!   one or a data-modifying CTE). `INSERT ... SELECT`: the SELECT's levels,
//!   as above.
//! - Finally [`Summary::canonicalize`] sorts and deduplicates tables,
//!   conditions (a CTE referenced twice adds its conditions once) and
//!   set_columns, so the order in which a walker meets things does not matter.
//! - A tree nested deeper than [`MAX_DEPTH`] levels of expression, or more
//!   than [`MAX_DEPTH`] contributing query levels deep (the statement's own
//!   query is level 1; a set operation's arms, a FROM subquery, an INSERT's
//!   SELECT and a referenced CTE's body are each one deeper than the level
//!   that leads to them, so a UNION chain is as deep as it is long, and so
//!   are its nested ORs), gives [`ExtractError::TooDeep`], never a stack
//!   overflow.

mod joins;
pub mod protobuf;
mod resolve;
mod sublinks;
pub mod view;

#[cfg(test)]
mod tests;

use crate::summary::Summary;

#[allow(unused_imports)]
use crate::summary::{Condition, StatementSummary};

/// Deepest expression nesting the extractors follow.
pub const MAX_DEPTH: usize = 1000;

/// Largest CTE condition (in nodes) that is copied to where the CTE is
/// referenced (see the rules above).
pub const MAX_CTE_CONDITION_NODES: usize = 1000;

/// Most tables a sublink's facts list (its own and those of the CTEs it
/// references, counted with repeats) before it is read as reading every
/// table of the statement (see the rules above): a statement with many
/// sublinks referencing CTE chains could otherwise list tables in proportion
/// to their product.
pub const MAX_SUBLINK_TABLES: usize = 1000;

/// Most steps (a FROM item looked at, a subquery's or CTE's output column
/// followed) taken to resolve one condition column (see **resolution**
/// above); past it the column restricts nothing.
pub const MAX_RESOLUTION_STEPS: usize = 1000;

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
