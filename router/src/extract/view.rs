//! Summaries from parser-ffi's zero-copy view of the C tree (the default engine).
//!
//! Two passes per statement (three with a sublink: see [`sublinks_view`]),
//! none recursing on the tree's depth:
//! - one iterative walk ([`view::walk_with`] on a reused stack) meets every
//!   node once for what the rules take from anywhere in the statement:
//!   tables, CTE names (for the tables' exclusion rule), locking and the
//!   SELECT write flags;
//! - [`Levels`] then follows only the query structure of the levels that
//!   contribute conditions (FROM lists through preserved join sides,
//!   subqueries in FROM, referenced CTEs, set operations, INSERT ... SELECT)
//!   and reads each level's WHERE / ON / VALUES down its boolean skeleton.
//!
//! Nothing recurses on the tree: query levels are followed with a task stack
//! and nested AND/OR/NOT evaluated on explicit stacks (both refused past
//! [`MAX_DEPTH`]), join trees and cast chains are followed with loops.
//! Strings are copied out of the tree only for the summary itself.

use parser_ffi::protobuf::{
    AExprKind, BoolExprType, CmdType, DiscardMode, FetchDirection, JoinType, SetOperation,
    TransactionStmtKind, VariableSetKind,
};
use parser_ffi::view::{
    self, AConst, Alias, ConstValue, InsertStmt, List, Node, NodeRef, RangeVar, SelectStmt,
    TypeName, VariableSetStmt, Walk, WithClause,
};
use parser_ffi::ParseTree;

mod joins_view;
mod schema_view;
mod sublinks_view;

use super::resolve::{Bodies, Body, Item, Name, Output, Resolver, StatementTables};
use super::{ExtractError, MAX_CTE_CONDITION_NODES, MAX_DEPTH};
use crate::summary::{
    Argument, Call, ColumnRef, Condition, CteWrite, CursorEffect, CursorOptions,
    FetchDirection as Direction, InlineCode, SessionEffect, StatementKind, StatementSummary,
    Summary, TableRef, Value, ValueSource,
};

/// Summarize every statement of `tree` (see the rules in [`super`]).
pub fn summarize(tree: &ParseTree) -> Result<Summary, ExtractError> {
    let mut scratch = Scratch {
        stack: Vec::with_capacity(32),
        ..Scratch::default()
    };
    let mut statements = Vec::with_capacity(tree.statement_list().len());
    for raw in tree.statements() {
        let summary = match raw.stmt() {
            Some(stmt) => {
                let mut summary = statement(stmt, &mut scratch)?;
                summary.session = session_effect(stmt, raw.stmt_location(), raw.stmt_len());
                summary
            }
            // raw_parser never leaves a RawStmt empty; summarize it as nothing.
            None => StatementSummary {
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
            },
        };
        statements.push(summary);
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

fn statement<'a>(
    stmt: Node<'a>,
    scratch: &mut Scratch<'a>,
) -> Result<StatementSummary, ExtractError> {
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
    let write = match write {
        Write::Always => true,
        Write::Never => false,
        Write::IfSelectWrites => found.select_into || found.modifying_cte,
    };

    tasks.clear();
    sinks.clear();
    joins.clear();
    scopes.clear();
    let tables = without_ctes(found.tables, found.cte_names);
    let statement_tables = StatementTables::new(&tables);
    let (conditions, insert_without_columns) = match own_query(stmt) {
        Some(query) => Levels {
            tasks: &mut *tasks,
            out: Vec::new(),
            sinks: &mut *sinks,
            joins: &mut *joins,
            scopes: &mut *scopes,
            booleans: &mut *booleans,
            tables: &statement_tables,
            insert_without_columns: false,
        }
        .run(query)?,
        None => (Vec::new(), false),
    };
    let cte_writes = cte_writes(scopes);
    let join_levels = if found.join {
        joins_view::joins(stmt, stack, booleans)?
    } else {
        None
    };
    let sublinks = if found.sublink {
        let cte_names: &[&str] = found.cte_names;
        let passes = sublinks_view::Passes {
            tasks,
            sinks,
            joins,
            scopes,
            booleans,
            tables: &statement_tables,
        };
        let is_cte = |name: &str| cte_names.binary_search(&name).is_ok();
        Some(Box::new(sublinks_view::sublinks(stmt, passes, is_cte)?))
    } else {
        None
    };
    Ok(StatementSummary {
        kind,
        write,
        locking: found.locking,
        tables,
        conditions,
        insert_without_columns,
        target: target(stmt),
        set_columns: set_columns(stmt),
        session: None,
        sublinks,
        joins: join_levels,
        calls: found.calls,
        schema_change: schema_view::schema_change(stmt),
        cte_writes,
    })
}

/// What a top-level statement does to tracked session state (see the
/// rules in [`super`]); `location` and `len` are its RawStmt's.
fn session_effect(stmt: Node<'_>, location: i32, len: i32) -> Option<SessionEffect> {
    match stmt.kind() {
        NodeRef::VariableSetStmt(set) => {
            let kind = set.kind();
            let transaction = kind == VariableSetKind::VarSetMulti
                && set
                    .name()
                    .is_some_and(|n| n.eq_ignore_ascii_case("TRANSACTION"));
            if set.is_local() || transaction {
                return Some(SessionEffect::TransactionScoped("SET"));
            }
            let name = || set.name().map(str::to_ascii_lowercase);
            Some(match kind {
                VariableSetKind::VarResetAll => SessionEffect::ResetAll,
                VariableSetKind::VarSetValue | VariableSetKind::VarSetCurrent => {
                    match (name(), usize::try_from(location), usize::try_from(len)) {
                        (Some(name), Ok(start), Ok(len)) => SessionEffect::Set { name, start, len },
                        _ => SessionEffect::Untracked,
                    }
                }
                VariableSetKind::VarSetDefault | VariableSetKind::VarReset => match name() {
                    Some(name) => SessionEffect::Reset { name },
                    None => SessionEffect::Untracked,
                },
                _ => SessionEffect::Untracked,
            })
        }
        NodeRef::ConstraintsSetStmt(_) => Some(SessionEffect::TransactionScoped("SET CONSTRAINTS")),
        NodeRef::DeallocateStmt(stmt) if stmt.isall() => Some(SessionEffect::Deallocate(None)),
        NodeRef::DeallocateStmt(stmt) => {
            Some(SessionEffect::Deallocate(Some(stmt.name()?.to_owned())))
        }
        NodeRef::DiscardStmt(discard) if discard.target() == DiscardMode::DiscardAll => {
            Some(SessionEffect::DiscardAll)
        }
        NodeRef::PrepareStmt(prepare) => Some(SessionEffect::Prepare {
            name: prepare.name()?.to_owned(),
            types: prepare
                .argtypes()
                .iter()
                .map(|node| match node.map(Node::kind) {
                    Some(NodeRef::TypeName(name)) => type_name(name),
                    _ => None,
                })
                .collect(),
            start: usize::try_from(location).ok()?,
            len: usize::try_from(len).ok()?,
        }),
        _ => {
            let execute = match stmt.kind() {
                NodeRef::ExecuteStmt(execute) => execute,
                NodeRef::ExplainStmt(explain) => match explain.query()?.kind() {
                    NodeRef::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                NodeRef::CreateTableAsStmt(create) => match create.query()?.kind() {
                    NodeRef::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                _ => return cursor_effect(stmt).map(SessionEffect::Cursor),
            };
            Some(SessionEffect::Execute {
                name: execute.name()?.to_owned(),
                args: execute.params().iter().map(argument).collect(),
                start: usize::try_from(location).ok()?,
                len: usize::try_from(len).ok()?,
            })
        }
    }
}

/// An EXECUTE's argument (see [`Argument`]).
fn argument(node: Option<Node<'_>>) -> Argument {
    let Some(node) = node else {
        return Argument::Expression;
    };
    match node.kind() {
        NodeRef::AConst(constant) if constant.isnull() => Argument::Value(ValueSource::Null),
        NodeRef::AConst(constant) => {
            let location = constant.location();
            match constant.val() {
                Some(ConstValue::Integer(value)) => Argument::Value(ValueSource::Integer {
                    value: i64::from(value),
                    location,
                }),
                Some(ConstValue::String(text)) => Argument::Value(ValueSource::Text {
                    text: text.to_owned(),
                    location,
                }),
                Some(ConstValue::Float(text)) => Argument::Number(text.to_owned()),
                _ => Argument::Expression,
            }
        }
        NodeRef::ParamRef(param) => match u16::try_from(param.number()) {
            Ok(number) if number > 0 => Argument::Value(ValueSource::Param(number)),
            _ => Argument::Expression,
        },
        _ => Argument::Expression,
    }
}

/// What a top-level statement does with a cursor (see the rules in
/// [`super`]).
fn cursor_effect(stmt: Node<'_>) -> Option<CursorEffect> {
    let current_of = |clause: Option<Node<'_>>| match clause.map(Node::kind) {
        Some(NodeRef::CurrentOfExpr(current)) => current.cursor_name().map(str::to_owned),
        _ => None,
    };
    Some(match stmt.kind() {
        NodeRef::DeclareCursorStmt(declare) => CursorEffect::Declare {
            name: declare.portalname()?.to_owned(),
            options: CursorOptions::from_bits(declare.options()),
        },
        NodeRef::FetchStmt(fetch) => CursorEffect::Fetch {
            name: fetch.portalname()?.to_owned(),
            direction: match fetch.direction() {
                FetchDirection::FetchBackward => Direction::Backward,
                FetchDirection::FetchAbsolute => Direction::Absolute,
                FetchDirection::FetchRelative => Direction::Relative,
                _ => Direction::Forward,
            },
            count: fetch.how_many(),
            moves: fetch.ismove(),
        },
        NodeRef::ClosePortalStmt(close) => {
            CursorEffect::Close(close.portalname().map(str::to_owned))
        }
        NodeRef::UpdateStmt(update) => CursorEffect::CurrentOf(current_of(update.where_clause())?),
        NodeRef::DeleteStmt(delete) => CursorEffect::CurrentOf(current_of(delete.where_clause())?),
        _ => return None,
    })
}

/// The statement EXPLAIN explains, or the statement itself.
fn explained(stmt: Node<'_>) -> Node<'_> {
    match stmt.kind() {
        NodeRef::ExplainStmt(explain) => explain.query().unwrap_or(stmt),
        _ => stmt,
    }
}

/// The table the statement writes: an INSERT's, UPDATE's, DELETE's or
/// MERGE's relation, a COPY ... FROM's table.
fn target(stmt: Node<'_>) -> Option<TableRef> {
    let relation = match explained(stmt).kind() {
        NodeRef::InsertStmt(insert) => insert.relation(),
        NodeRef::UpdateStmt(update) => update.relation(),
        NodeRef::DeleteStmt(delete) => delete.relation(),
        NodeRef::MergeStmt(merge) => merge.relation(),
        NodeRef::CopyStmt(copy) if copy.is_from() => copy.relation(),
        _ => None,
    }?;
    Some(TableRef {
        schema: relation.schemaname().map(str::to_owned),
        name: relation.relname()?.to_owned(),
        alias: relation
            .alias()
            .and_then(|alias| alias.aliasname())
            .map(str::to_owned),
    })
}

/// The columns an UPDATE, or a MERGE's UPDATE actions, assign (canonicalize
/// sorts them).
fn set_columns(stmt: Node<'_>) -> Vec<String> {
    let mut columns = Vec::new();
    let mut add = |targets: List<'_>| {
        for target in targets.iter().flatten() {
            if let NodeRef::ResTarget(target) = target.kind() {
                columns.extend(target.name().map(str::to_owned));
            }
        }
    };
    match explained(stmt).kind() {
        NodeRef::UpdateStmt(update) => add(update.target_list()),
        NodeRef::MergeStmt(merge) => {
            for clause in merge.merge_when_clauses().iter().flatten() {
                if let NodeRef::MergeWhenClause(clause) = clause.kind() {
                    // WHEN MATCHED and WHEN NOT MATCHED BY SOURCE both
                    // update target rows (NOT MATCHED BY TARGET cannot).
                    if clause.command_type() == CmdType::CmdUpdate {
                        add(clause.target_list());
                    }
                }
            }
        }
        _ => {}
    }
    columns
}

/// The statement's own query: the statement itself, or the query EXPLAIN,
/// COPY (query) TO, CREATE TABLE AS, DECLARE CURSOR or PREPARE wraps.
fn own_query(stmt: Node<'_>) -> Option<Node<'_>> {
    let mut stmt = stmt;
    // A loop: EXPLAIN may wrap CREATE TABLE AS, which wraps a query.
    loop {
        stmt = match stmt.kind() {
            NodeRef::SelectStmt(_)
            | NodeRef::InsertStmt(_)
            | NodeRef::UpdateStmt(_)
            | NodeRef::DeleteStmt(_)
            | NodeRef::MergeStmt(_) => return Some(stmt),
            NodeRef::ExplainStmt(explain) => explain.query()?,
            NodeRef::CopyStmt(copy) => copy.query()?,
            NodeRef::CreateTableAsStmt(create) => create.query()?,
            NodeRef::DeclareCursorStmt(declare) => declare.query()?,
            NodeRef::PrepareStmt(prepare) => prepare.query()?,
            _ => return None,
        };
    }
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

/// Kind and write rule of a top-level statement.
fn classify(stmt: Node<'_>) -> (StatementKind, Write) {
    use StatementKind as K;
    match stmt.kind() {
        NodeRef::SelectStmt(_) => (K::Select, Write::IfSelectWrites),
        NodeRef::InsertStmt(_) => (K::Insert, Write::Always),
        NodeRef::UpdateStmt(_) => (K::Update, Write::Always),
        NodeRef::DeleteStmt(_) => (K::Delete, Write::Always),
        NodeRef::MergeStmt(_) => (K::Merge, Write::Always),
        NodeRef::CopyStmt(copy) => {
            let write = if copy.is_from() {
                Write::Always
            } else {
                Write::Never
            };
            (
                K::Copy {
                    to: !copy.is_from(),
                },
                write,
            )
        }
        NodeRef::TransactionStmt(txn) => {
            let kind = match txn.kind() {
                TransactionStmtKind::TransStmtBegin | TransactionStmtKind::TransStmtStart => {
                    K::Begin
                }
                TransactionStmtKind::TransStmtCommit => K::Commit,
                TransactionStmtKind::TransStmtRollback => K::Rollback,
                _ => K::TransactionOther,
            };
            (kind, Write::Never)
        }
        NodeRef::VariableSetStmt(set) => (variable_set(set), Write::Never),
        NodeRef::VariableShowStmt(_) | NodeRef::DiscardStmt(_) => (K::Session, Write::Never),
        NodeRef::ExplainStmt(explain) => {
            let write = explain
                .query()
                .map_or(Write::Never, |query| classify(query).1);
            (K::Explain, write)
        }
        NodeRef::DoStmt(code) => (K::Do(Box::new(inline_code(code.args()))), Write::Always),
        NodeRef::CallStmt(_) => (K::Other, Write::Always),
        node if is_ddl(node) => (K::Ddl, Write::Always),
        _ => (K::Other, Write::Never),
    }
}

/// A DO block's language and body, from its DefElems (`as`, `language`).
fn inline_code(args: List<'_>) -> InlineCode {
    let mut code = InlineCode {
        language: "plpgsql".to_owned(),
        body: String::new(),
    };
    for arg in args.iter().flatten() {
        let NodeRef::DefElem(elem) = arg.kind() else {
            continue;
        };
        let value = match elem.arg().map(Node::kind) {
            Some(NodeRef::String(value)) => value.sval().unwrap_or_default(),
            _ => continue,
        };
        match elem.defname() {
            Some("as") => value.clone_into(&mut code.body),
            Some("language") => code.language = value.to_ascii_lowercase(),
            _ => {}
        }
    }
    code
}

/// `SET` / `RESET`: the two pgdog settings, or session state.
fn variable_set(set: VariableSetStmt<'_>) -> StatementKind {
    let shard = match set.name() {
        Some("pgdog.shard") => true,
        Some("pgdog.sharding_key") => false,
        _ => return StatementKind::Session,
    };
    let value = match set.kind() {
        // `SET x TO DEFAULT` means what `RESET x` means.
        VariableSetKind::VarReset | VariableSetKind::VarSetDefault => None,
        VariableSetKind::VarSetValue if set.args().len() == 1 => {
            let text = match set.args().get(0).map(Node::kind) {
                Some(NodeRef::AConst(value)) => match value.val() {
                    Some(ConstValue::Integer(int)) => int.to_string(),
                    Some(ConstValue::String(text) | ConstValue::Float(text)) => text.to_owned(),
                    _ => return StatementKind::Session,
                },
                _ => return StatementKind::Session,
            };
            Some(text)
        }
        // Several values, FROM CURRENT: Postgres refuses or keeps its own
        // meaning; pass it on as session state.
        _ => return StatementKind::Session,
    };
    if shard {
        StatementKind::SetShard(value)
    } else {
        StatementKind::SetShardingKey(value)
    }
}

/// Schema changes (and the other catalog-changing statements routed with them).
#[rustfmt::skip]
fn is_ddl(node: NodeRef<'_>) -> bool {
    use NodeRef as N;
    matches!(
        node,
        N::CreateSchemaStmt(_) | N::AlterTableStmt(_) | N::AlterCollationStmt(_)
            | N::AlterDomainStmt(_) | N::GrantStmt(_) | N::GrantRoleStmt(_)
            | N::AlterDefaultPrivilegesStmt(_) | N::CreateStmt(_) | N::CreateTableSpaceStmt(_)
            | N::DropTableSpaceStmt(_) | N::AlterTableSpaceOptionsStmt(_)
            | N::AlterTableMoveAllStmt(_) | N::CreateExtensionStmt(_) | N::AlterExtensionStmt(_)
            | N::AlterExtensionContentsStmt(_) | N::CreateFdwStmt(_) | N::AlterFdwStmt(_)
            | N::CreateForeignServerStmt(_) | N::AlterForeignServerStmt(_)
            | N::CreateForeignTableStmt(_) | N::CreateUserMappingStmt(_)
            | N::AlterUserMappingStmt(_) | N::DropUserMappingStmt(_)
            | N::ImportForeignSchemaStmt(_) | N::CreatePolicyStmt(_) | N::AlterPolicyStmt(_)
            | N::CreateAmStmt(_) | N::CreateTrigStmt(_) | N::CreateEventTrigStmt(_)
            | N::AlterEventTrigStmt(_) | N::CreatePLangStmt(_) | N::CreateRoleStmt(_)
            | N::AlterRoleStmt(_) | N::AlterRoleSetStmt(_) | N::DropRoleStmt(_)
            | N::CreateSeqStmt(_) | N::AlterSeqStmt(_) | N::DefineStmt(_) | N::CreateDomainStmt(_)
            | N::CreateOpClassStmt(_) | N::CreateOpFamilyStmt(_) | N::AlterOpFamilyStmt(_)
            | N::DropStmt(_) | N::TruncateStmt(_) | N::CommentStmt(_) | N::SecLabelStmt(_)
            | N::IndexStmt(_) | N::CreateStatsStmt(_) | N::AlterStatsStmt(_)
            | N::CreateFunctionStmt(_) | N::AlterFunctionStmt(_) | N::RenameStmt(_)
            | N::AlterObjectDependsStmt(_) | N::AlterObjectSchemaStmt(_) | N::AlterOwnerStmt(_)
            | N::AlterOperatorStmt(_) | N::AlterTypeStmt(_) | N::RuleStmt(_)
            | N::CompositeTypeStmt(_) | N::CreateEnumStmt(_) | N::CreateRangeStmt(_)
            | N::AlterEnumStmt(_) | N::ViewStmt(_) | N::CreatedbStmt(_) | N::AlterDatabaseStmt(_)
            | N::AlterDatabaseRefreshCollStmt(_) | N::AlterDatabaseSetStmt(_) | N::DropdbStmt(_)
            | N::AlterSystemStmt(_) | N::CreateTableAsStmt(_) | N::RefreshMatViewStmt(_)
            | N::CreateConversionStmt(_) | N::CreateCastStmt(_) | N::CreateTransformStmt(_)
            | N::DropOwnedStmt(_) | N::ReassignOwnedStmt(_) | N::AlterTsDictionaryStmt(_)
            | N::AlterTsConfigurationStmt(_) | N::CreatePublicationStmt(_)
            | N::AlterPublicationStmt(_) | N::CreateSubscriptionStmt(_)
            | N::AlterSubscriptionStmt(_) | N::DropSubscriptionStmt(_)
    )
}

/// What the walk collects from anywhere in a statement.
struct Found<'s, 'a> {
    /// Every RangeVar (CTE references included until the end).
    tables: Vec<TableRef>,
    /// Every FuncCall.
    calls: Vec<Call>,
    cte_names: &'s mut Vec<&'a str>,
    locking: bool,
    select_into: bool,
    modifying_cte: bool,
    /// The statement has a SubLink.
    sublink: bool,
    /// The statement may join FROM items: it has a JoinExpr, a FROM list
    /// of two items or more, an UPDATE ... FROM, a DELETE ... USING or a
    /// MERGE.
    join: bool,
}

impl<'a> Found<'_, 'a> {
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
fn cte_writes(scopes: &Scopes<'_>) -> Vec<CteWrite> {
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

fn is_data_modifying(query: Node<'_>) -> bool {
    matches!(
        query.kind(),
        NodeRef::InsertStmt(_)
            | NodeRef::UpdateStmt(_)
            | NodeRef::DeleteStmt(_)
            | NodeRef::MergeStmt(_)
    )
}

/// The conditions of the levels that contribute (see the rules in [`super`]).
///
/// Levels nest as deep as the parser lets them and set operations chain
/// without limit, so this is a task machine rather than a recursion: a level
/// is read at once (its WHERE, its FROM's join tree with the INNER quals),
/// and what it leads to (FROM subqueries, referenced CTEs, UNION arms) waits
/// on `tasks`. Conditions collect in sinks: `out` (sink 0, the statement's)
/// and `sinks[n - 1]` for each UNION arm and CTE body. Tasks run depth first
/// in the statement's order, as the recursive reading of the rules would: a
/// CTE's body is evaluated completely when first referenced. A plain
/// statement (no subquery, CTE or set operation in FROM) needs no task and
/// allocates nothing here.
struct Levels<'s, 'a> {
    tasks: &'s mut Vec<Task<'a>>,
    out: Vec<Condition>,
    sinks: &'s mut Vec<Vec<Condition>>,
    /// A FROM's join tree still to look at.
    joins: &'s mut Vec<Node<'a>>,
    scopes: &'s mut Scopes<'a>,
    booleans: &'s mut Booleans<'a>,
    /// The statement's tables, for resolving condition columns.
    tables: &'s StatementTables<'s>,
    insert_without_columns: bool,
}

/// Work left for [`Levels`]. `depth` counts the query levels open around
/// the task (the statement's own query is at 1); `sink` is where the
/// conditions found go.
enum Task<'a> {
    /// A contributing level (below the statement's own query).
    Query {
        query: Node<'a>,
        scope: Scope,
        depth: usize,
        sink: usize,
    },
    /// A contributing FROM references a CTE.
    Reference {
        cte: usize,
        depth: usize,
        sink: usize,
    },
    /// Both arms of a UNION are done: the OR of their AND-ed conditions.
    Union {
        left: usize,
        right: usize,
        sink: usize,
    },
    /// A CTE's body is done; its conditions are in sink `body`.
    CteDone { cte: usize, body: usize },
    /// Add a CTE's conditions to `sink` (capped).
    AddCte { cte: usize, sink: usize },
}

/// The statement's own sink.
const OUT: usize = 0;

impl<'a> Levels<'_, 'a> {
    /// The conditions of the statement's own query.
    fn run(self, query: Node<'a>) -> Result<(Vec<Condition>, bool), ExtractError> {
        self.run_at(query, None, true)
    }

    /// The conditions of `query` seeing the CTEs of `scope`; `top`: the
    /// statement's own query (its WITH's data-modifying CTEs contribute).
    fn run_at(
        mut self,
        query: Node<'a>,
        scope: Scope,
        top: bool,
    ) -> Result<(Vec<Condition>, bool), ExtractError> {
        // A new run: CTE conditions added to an earlier run's list are not
        // in this one's.
        self.scopes.run += 1;
        self.query(query, scope, top, 1, OUT)?;
        while let Some(task) = self.tasks.pop() {
            match task {
                Task::Query {
                    query,
                    scope,
                    depth,
                    sink,
                } => self.query(query, scope, false, depth, sink)?,
                Task::Reference { cte, depth, sink } => self.reference(cte, depth, sink),
                Task::Union { left, right, sink } => {
                    let left = and_all(std::mem::take(self.sink(left)));
                    let right = and_all(std::mem::take(self.sink(right)));
                    if let (Some(left), Some(right)) = (left, right) {
                        self.sink(sink).push(Condition::Or(vec![left, right]));
                    }
                }
                Task::CteDone { cte, body } => {
                    let conditions = std::mem::take(self.sink(body));
                    let nodes = count_nodes(&conditions);
                    self.scopes.ctes[cte].state = CteState::Done { conditions, nodes };
                }
                Task::AddCte { cte, sink } => self.add_cte(cte, sink),
            }
        }
        Ok((self.out, self.insert_without_columns))
    }

    fn new_sink(&mut self) -> usize {
        self.sinks.push(Vec::new());
        self.sinks.len()
    }

    fn sink(&mut self, sink: usize) -> &mut Vec<Condition> {
        match sink
            .checked_sub(1)
            .and_then(|index| self.sinks.get_mut(index))
        {
            Some(sink) => sink,
            None => &mut self.out,
        }
    }

    /// Read one level. `top`: the statement's own query, whose WITH's
    /// data-modifying CTEs contribute unreferenced.
    fn query(
        &mut self,
        query: Node<'a>,
        scope: Scope,
        top: bool,
        depth: usize,
        sink: usize,
    ) -> Result<(), ExtractError> {
        if depth > MAX_DEPTH {
            return Err(ExtractError::TooDeep);
        }
        // Tasks pushed last run first: a WITH's data-modifying CTEs are
        // pushed after what the query leads to.
        let (with, own_expr, from, target) = match query.kind() {
            NodeRef::SelectStmt(select) => {
                let scope = self.enter(select.with_clause(), scope);
                let (larg, rarg) = (select.larg(), select.rarg());
                let arm = |query: SelectStmt<'a>, sink| Task::Query {
                    query: query.as_node(),
                    scope,
                    depth: depth + 1,
                    sink,
                };
                match select.op() {
                    SetOperation::SetopUnion => {
                        if let (Some(larg), Some(rarg)) = (larg, rarg) {
                            let (left, right) = (self.new_sink(), self.new_sink());
                            self.tasks.push(Task::Union { left, right, sink });
                            self.tasks.push(arm(rarg, right));
                            self.tasks.push(arm(larg, left));
                        }
                    }
                    SetOperation::SetopIntersect => {
                        self.tasks.extend(rarg.map(|rarg| arm(rarg, sink)));
                        self.tasks.extend(larg.map(|larg| arm(larg, sink)));
                    }
                    SetOperation::SetopExcept => {
                        self.tasks.extend(larg.map(|larg| arm(larg, sink)));
                    }
                    _ => {
                        let from = FromItems::List(select.from_clause());
                        self.level(select.where_clause(), from, None, scope, depth, sink)?;
                    }
                }
                self.data_modifying_ctes(top, scope, depth);
                return Ok(());
            }
            NodeRef::InsertStmt(insert) => {
                let scope = self.enter(insert.with_clause(), scope);
                match insert.select_stmt() {
                    Some(source) if !self.values(insert, source, sink) => {
                        // INSERT ... SELECT (never itself an INSERT: no deeper).
                        self.query(source, scope, false, depth + 1, sink)?;
                    }
                    // VALUES, done; or DEFAULT VALUES.
                    _ => {}
                }
                self.data_modifying_ctes(top, scope, depth);
                return Ok(());
            }
            NodeRef::UpdateStmt(update) => (
                update.with_clause(),
                update.where_clause(),
                FromItems::List(update.from_clause()),
                update.relation(),
            ),
            NodeRef::DeleteStmt(delete) => (
                delete.with_clause(),
                delete.where_clause(),
                FromItems::List(delete.using_clause()),
                delete.relation(),
            ),
            NodeRef::MergeStmt(merge) => (
                merge.with_clause(),
                merge.join_condition(),
                FromItems::One(merge.source_relation()),
                merge.relation(),
            ),
            _ => return Ok(()),
        };
        let scope = self.enter(with, scope);
        self.level(own_expr, from, target, scope, depth, sink)?;
        self.data_modifying_ctes(top, scope, depth);
        Ok(())
    }

    /// A level's own condition (`expr` AND-ed with the quals of the INNER
    /// joins of its FROM reached through preserved sides), its columns
    /// resolved against the level's FROM items and `target` (an UPDATE's,
    /// DELETE's or MERGE's), goes to `sink`; the FROM's subqueries and CTE
    /// references become tasks, run in order.
    fn level(
        &mut self,
        expr: Option<Node<'a>>,
        from: FromItems<'a>,
        target: Option<RangeVar<'a>>,
        scope: Scope,
        depth: usize,
        sink: usize,
    ) -> Result<(), ExtractError> {
        let mut own = Gathered::Empty;
        self.expression(expr, &mut own)?;
        let start = self.tasks.len();
        for item in from.nodes().flatten() {
            // Join trees nest as deep as they have joins: a stack. Right
            // sides are pushed first, so left ones are read first.
            self.joins.push(item);
            while let Some(item) = self.joins.pop() {
                match item.kind() {
                    NodeRef::JoinExpr(join) => {
                        let (left, right) = match join.jointype() {
                            JoinType::JoinInner => {
                                self.expression(join.quals(), &mut own)?;
                                (join.larg(), join.rarg())
                            }
                            JoinType::JoinLeft => (join.larg(), None),
                            JoinType::JoinRight => (None, join.rarg()),
                            _ => (None, None),
                        };
                        self.joins.extend(right);
                        self.joins.extend(left);
                    }
                    NodeRef::RangeSubselect(subselect) => {
                        if let Some(query) = subselect.subquery() {
                            self.tasks.push(Task::Query {
                                query,
                                scope,
                                depth: depth + 1,
                                sink,
                            });
                        }
                    }
                    NodeRef::RangeVar(range) if range.schemaname().is_none() => {
                        let cte = range
                            .relname()
                            .and_then(|name| self.scopes.find(scope, name));
                        if let Some(cte) = cte {
                            self.tasks.push(Task::Reference { cte, depth, sink });
                        }
                    }
                    _ => {}
                }
            }
        }
        self.tasks[start..].reverse();
        if let Some(own) = own.into_and() {
            let items = from_items(from.nodes().flatten(), target, scope, self.scopes);
            let mut bodies = ViewBodies {
                scopes: &mut *self.scopes,
            };
            let resolved = Resolver::new(items, &mut bodies, self.tables).condition(own);
            self.sink(sink).extend(resolved);
        }
        Ok(())
    }

    /// An INSERT's VALUES rows, if its source is VALUES (else false).
    fn values(&mut self, insert: InsertStmt<'a>, source: Node<'a>, sink: usize) -> bool {
        let NodeRef::SelectStmt(values) = source.kind() else {
            return false;
        };
        let rows = values.values_lists();
        if rows.is_empty() || values.op() != SetOperation::SetopNone {
            return false;
        }
        let columns = insert.cols();
        if columns.is_empty() {
            self.insert_without_columns = true;
            return true;
        }
        let target = insert.relation();
        let table = target
            .and_then(|target| target.alias())
            .and_then(|alias| alias.aliasname())
            .or(target.and_then(|target| target.relname()));
        let Some(table) = table else {
            return true;
        };
        let mut any = Gathered::Empty;
        for row in rows.iter() {
            let Some(NodeRef::List(row)) = row.map(Node::kind) else {
                return true;
            };
            match row_condition(table, columns, row) {
                Some(found) => any.push(found, rows.len()),
                None => return true,
            }
        }
        if let Some(rows) = any.into_or() {
            let items = from_items(std::iter::empty(), target, None, self.scopes);
            let mut bodies = ViewBodies {
                scopes: &mut *self.scopes,
            };
            let resolved = Resolver::new(items, &mut bodies, self.tables).condition(rows);
            self.sink(sink).extend(resolved);
        }
        true
    }

    /// AND an expression's condition into `own`.
    fn expression(
        &mut self,
        expr: Option<Node<'a>>,
        own: &mut Gathered,
    ) -> Result<(), ExtractError> {
        if let Some(expr) = expr {
            if let Some(found) = condition(expr, self.booleans)? {
                own.push(found, 2);
            }
        }
        Ok(())
    }

    fn enter(&mut self, with: Option<WithClause<'a>>, scope: Scope) -> Scope {
        match with {
            Some(with) => self.scopes.enter(with, scope),
            None => scope,
        }
    }

    /// At the top, the data-modifying CTEs of the WITH just entered are
    /// evaluated, referenced or not (pushed last: they run first, in
    /// order): their conditions are their writes' (`cte_writes`), added to
    /// a level only where a contributing FROM references them.
    fn data_modifying_ctes(&mut self, top: bool, scope: Scope, depth: usize) {
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
    fn evaluate(&mut self, cte: usize, depth: usize) {
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
    fn reference(&mut self, cte: usize, depth: usize, sink: usize) {
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

    fn add_cte(&mut self, cte: usize, sink: usize) {
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

/// A level's FROM: a list (SELECT, UPDATE, DELETE's USING) or one item (a
/// MERGE's source).
#[derive(Clone, Copy)]
enum FromItems<'a> {
    List(List<'a>),
    One(Option<Node<'a>>),
}

impl<'a> FromItems<'a> {
    fn nodes(self) -> impl Iterator<Item = Option<Node<'a>>> {
        let (list, one) = match self {
            FromItems::List(list) => (Some(list), None),
            FromItems::One(node) => (None, Some(node)),
        };
        list.into_iter().flat_map(List::iter).chain(one)
    }
}

/// A list of conditions AND-ed: one as is, none gives none.
fn and_all(mut conditions: Vec<Condition>) -> Option<Condition> {
    match conditions.len() {
        0 | 1 => conditions.pop(),
        _ => Some(Condition::And(conditions)),
    }
}

/// Where a name is looked up: the CTEs of group `group` numbered below
/// `end`, then the group's outer scope. `None`: no CTE visible.
type Scope = Option<ScopePosition>;

#[derive(Clone, Copy)]
struct ScopePosition {
    group: usize,
    end: usize,
}

/// Every CTE of the contributing levels, by WITH (a group), with lookups in
/// O(groups in scope x log CTEs).
#[derive(Default)]
struct Scopes<'a> {
    ctes: Vec<Cte<'a>>,
    groups: Vec<Group>,
    /// Each group's (name, CTE number)s, sorted by name, one range per group.
    by_name: Vec<(&'a str, usize)>,
    /// Counts the runs of [`Levels`] (the statement's, then one per
    /// sublink), which share these CTEs and their evaluated conditions.
    run: usize,
}

struct Cte<'a> {
    body: Option<Node<'a>>,
    /// Its column names (`WITH c (a, b) AS ...`).
    colnames: List<'a>,
    group: usize,
    state: CteState,
    /// The run (see [`Scopes::run`]) whose own list its conditions were
    /// added to last.
    in_out: usize,
}

struct Group {
    /// Its CTEs are numbered `first..first + len`, its names are
    /// `by_name[first..first + len]` (the same numbers: both grow together).
    first: usize,
    len: usize,
    recursive: bool,
    outer: Scope,
}

enum CteState {
    Pending,
    Running,
    Done {
        conditions: Vec<Condition>,
        nodes: usize,
    },
}

impl<'a> Scopes<'a> {
    fn clear(&mut self) {
        self.ctes.clear();
        self.groups.clear();
        self.by_name.clear();
    }

    /// Add a WITH's CTEs; returns the scope of its query.
    fn enter(&mut self, with: WithClause<'a>, outer: Scope) -> Scope {
        let group = self.groups.len();
        let first = self.ctes.len();
        for cte in with.ctes().iter().flatten() {
            if let NodeRef::CommonTableExpr(cte) = cte.kind() {
                let name = cte.ctename().unwrap_or_default();
                self.by_name.push((name, self.ctes.len()));
                self.ctes.push(Cte {
                    body: cte.ctequery(),
                    colnames: cte.aliascolnames(),
                    group,
                    state: CteState::Pending,
                    in_out: 0,
                });
            }
        }
        let end = self.ctes.len();
        self.by_name[first..end].sort_unstable();
        self.groups.push(Group {
            first,
            len: end - first,
            recursive: with.recursive(),
            outer,
        });
        Some(ScopePosition { group, end })
    }

    /// What a CTE's body sees: in a RECURSIVE WITH every CTE of it, else the
    /// earlier ones.
    fn body_scope(&self, cte: usize) -> Scope {
        let group = self.ctes[cte].group;
        let end = match self.groups.get(group) {
            Some(with) if with.recursive => with.first + with.len,
            _ => cte,
        };
        Some(ScopePosition { group, end })
    }

    /// The CTE an unqualified name refers to from `scope`, if any.
    fn find(&self, scope: Scope, name: &str) -> Option<usize> {
        let mut scope = scope;
        while let Some(position) = scope {
            let group = self.groups.get(position.group)?;
            let names = self.by_name.get(group.first..group.first + group.len)?;
            // The first visible CTE of that name, if several (Postgres
            // refuses those).
            let from = names.partition_point(|&(candidate, _)| candidate < name);
            let found = names[from..]
                .iter()
                .take_while(|&&(candidate, _)| candidate == name)
                .map(|&(_, cte)| cte)
                .find(|&cte| cte < position.end);
            if found.is_some() {
                return found;
            }
            scope = group.outer;
        }
        None
    }
}

/// A query behind a derived item, and the CTEs it sees.
type Query<'a> = (Node<'a>, Scope);

/// A level's FROM items for resolution (see [`super::resolve`]): `target`
/// (an UPDATE's, DELETE's, MERGE's or INSERT's relation) first, then the
/// leaves of `from`'s join trees, left to right.
fn from_items<'a>(
    from: impl Iterator<Item = Node<'a>>,
    target: Option<RangeVar<'a>>,
    scope: Scope,
    scopes: &Scopes<'a>,
) -> Vec<Item<'a, Query<'a>>> {
    let mut items = Vec::new();
    if let Some(table) = target.and_then(name_of) {
        items.push(Item::Table {
            table,
            renamed: false,
        });
    }
    // Join trees: left sides followed at once, right ones stacked (so a
    // FROM without joins allocates nothing here).
    let mut pending: Vec<Node<'a>> = Vec::new();
    for top in from {
        let mut next = Some(top);
        while let Some(node) = next.take().or_else(|| pending.pop()) {
            match node.kind() {
                NodeRef::JoinExpr(join) => {
                    pending.extend(join.rarg());
                    next = join.larg();
                }
                NodeRef::RangeTableSample(sample) => next = sample.relation(),
                NodeRef::RangeVar(range) => {
                    let Some(table) = name_of(range) else {
                        continue;
                    };
                    let cte = match table.schema {
                        None => scopes.find(scope, table.name),
                        Some(_) => None,
                    };
                    let alias = range.alias();
                    match cte {
                        Some(cte) => {
                            let Some(body) = scopes.ctes[cte].body else {
                                continue;
                            };
                            items.push(Item::Derived {
                                name: Some(table.alias.unwrap_or(table.name)),
                                colnames: colnames(Some(scopes.ctes[cte].colnames), alias),
                                query: (body, scopes.body_scope(cte)),
                            });
                        }
                        None => items.push(Item::Table {
                            table,
                            renamed: alias.is_some_and(|alias| !alias.colnames().is_empty()),
                        }),
                    }
                }
                NodeRef::RangeSubselect(subselect) => {
                    let Some(query) = subselect.subquery() else {
                        continue;
                    };
                    let alias = subselect.alias();
                    items.push(Item::Derived {
                        name: alias.and_then(|alias| alias.aliasname()),
                        colnames: colnames(None, alias),
                        query: (query, scope),
                    });
                }
                _ => {}
            }
        }
    }
    items
}

/// A RangeVar's names.
fn name_of(range: RangeVar<'_>) -> Option<Name<'_>> {
    Some(Name {
        schema: range.schemaname(),
        name: range.relname()?,
        alias: range.alias().and_then(|alias| alias.aliasname()),
    })
}

/// A CTE's column names overridden position by position by an alias's.
fn colnames<'a>(cte: Option<List<'a>>, alias: Option<Alias<'a>>) -> Vec<&'a str> {
    let strings = |list: List<'a>| -> Vec<&'a str> {
        list.iter()
            .flatten()
            .filter_map(|node| match node.kind() {
                NodeRef::String(name) => name.sval(),
                _ => None,
            })
            .collect()
    };
    let mut names = cte.map_or_else(Vec::new, strings);
    let alias = alias.map_or_else(Vec::new, |alias| strings(alias.colnames()));
    for (position, name) in alias.into_iter().enumerate() {
        match names.get_mut(position) {
            Some(slot) => *slot = name,
            None => names.push(name),
        }
    }
    names
}

/// What resolution reads of the queries behind derived items.
struct ViewBodies<'s, 'a> {
    scopes: &'s mut Scopes<'a>,
}

impl<'a> Bodies<'a> for ViewBodies<'_, 'a> {
    type Query = Query<'a>;

    fn body(&mut self, (query, scope): Query<'a>) -> Body<'a, Query<'a>> {
        let mut body = Body {
            outputs: Vec::new(),
            passes: false,
            items: Vec::new(),
        };
        let targets = match query.kind() {
            NodeRef::SelectStmt(select) if select.op() == SetOperation::SetopNone => {
                if select.values_lists().is_empty() {
                    body.passes = passes(select);
                    let scope = match select.with_clause() {
                        Some(with) => self.scopes.enter(with, scope),
                        None => scope,
                    };
                    let from = select.from_clause().iter().flatten();
                    body.items = from_items(from, None, scope, self.scopes);
                }
                Some(select.target_list())
            }
            NodeRef::SelectStmt(select) => {
                // A set operation: its leftmost arm names the columns.
                let mut arm = select;
                while let Some(left) = arm.larg().filter(|_| arm.op() != SetOperation::SetopNone) {
                    arm = left;
                }
                Some(arm.target_list())
            }
            NodeRef::InsertStmt(insert) => insert.returning_clause().map(|r| r.exprs()),
            NodeRef::UpdateStmt(update) => update.returning_clause().map(|r| r.exprs()),
            NodeRef::DeleteStmt(delete) => delete.returning_clause().map(|r| r.exprs()),
            NodeRef::MergeStmt(merge) => merge.returning_clause().map(|r| r.exprs()),
            _ => None,
        };
        if let Some(targets) = targets {
            body.outputs = targets.iter().map(output_of).collect();
        }
        body
    }
}

/// A select-list item as resolution sees it.
fn output_of(target: Option<Node<'_>>) -> Output<'_> {
    let Some(NodeRef::ResTarget(target)) = target.map(Node::kind) else {
        return Output::Unnamed;
    };
    let name = target.name();
    if let Some(NodeRef::ColumnRef(column)) = target.val().map(Node::kind) {
        let fields = column.fields();
        let last = fields.len().checked_sub(1).and_then(|at| fields.get(at));
        let previous = fields.len().checked_sub(2).and_then(|at| fields.get(at));
        let qualifier = previous.and_then(|field| match field.kind() {
            NodeRef::String(name) => name.sval(),
            _ => None,
        });
        match last.map(Node::kind) {
            Some(NodeRef::AStar(_)) => return Output::Star(qualifier),
            Some(NodeRef::String(column)) => {
                if let Some(column) = column.sval() {
                    return Output::Column {
                        name: name.unwrap_or(column),
                        table: qualifier,
                        column,
                    };
                }
            }
            _ => {}
        }
    }
    match name {
        Some(name) => Output::Named(name),
        None => Output::Unnamed,
    }
}

/// Whether a plain SELECT's rows are each computed where their source rows
/// live (see `resolve::Body::passes`).
fn passes(select: SelectStmt<'_>) -> bool {
    let distinct_on = select.distinct_clause().iter().any(|item| item.is_some());
    if select.limit_count().is_some()
        || select.limit_offset().is_some()
        || distinct_on
        || !select.window_clause().is_empty()
    {
        return false;
    }
    let mut window = false;
    let mut stack = Vec::new();
    for target in select.target_list().iter().flatten() {
        view::walk_with(&mut stack, target, |node| match node {
            NodeRef::FuncCall(call) if call.over().is_some() => {
                window = true;
                Walk::Stop
            }
            _ => Walk::Continue,
        });
        if window {
            return false;
        }
    }
    true
}

/// How many Eq, Any, And and Or nodes `conditions` hold (without recursion).
fn count_nodes(conditions: &[Condition]) -> usize {
    let mut count = 0;
    let mut stack: Vec<&[Condition]> = vec![conditions];
    while let Some(list) = stack.pop() {
        count += list.len();
        for condition in list {
            if let Condition::And(children) | Condition::Or(children) = condition {
                stack.push(children);
            }
        }
    }
    count
}

/// One VALUES row: the `Eq`s of the plain columns given a value.
fn row_condition(table: &str, columns: List<'_>, row: List<'_>) -> Option<Condition> {
    let mut all = Gathered::default();
    for (column, value) in columns.iter().zip(row.iter()) {
        let Some(NodeRef::ResTarget(target)) = column.map(Node::kind) else {
            continue;
        };
        // `(arr[1])`, `(composite.field)` assign a part of the column.
        if !target.indirection().is_empty() {
            continue;
        }
        let (Some(name), Some(value)) = (target.name(), value.and_then(value_of)) else {
            continue;
        };
        let eq = Condition::Eq {
            column: ColumnRef {
                table: Some(table.to_owned()),
                column: name.to_owned(),
            },
            value: value.to_value(),
        };
        all.push(eq, columns.len());
    }
    all.into_and()
}

/// The condition a level's expression gives, if any.
///
/// The common shapes, a comparison or one AND/OR of comparisons, are read
/// directly; nested AND/OR/NOT below the top go to [`nested_condition`].
fn condition<'a>(
    expr: Node<'a>,
    booleans: &mut Booleans<'a>,
) -> Result<Option<Condition>, ExtractError> {
    match expr.kind() {
        NodeRef::BoolExpr(bool_expr) => {
            let args = bool_expr.args();
            let mut frame = Frame::new(bool_op(bool_expr), args.len());
            for arg in args.iter().flatten() {
                let found = match arg.kind() {
                    NodeRef::BoolExpr(_) => nested_condition(arg, 2, booleans)?,
                    NodeRef::AExpr(a_expr) => comparison(a_expr),
                    _ => None,
                };
                frame.fold(found);
            }
            Ok(frame.finish())
        }
        NodeRef::AExpr(a_expr) => Ok(comparison(a_expr)),
        _ => Ok(None),
    }
}

fn bool_op(bool_expr: view::BoolExpr<'_>) -> BoolOp {
    match bool_expr.boolop() {
        BoolExprType::AndExpr => BoolOp::And,
        BoolExprType::OrExpr => BoolOp::Or,
        _ => BoolOp::Not,
    }
}

/// The condition of an expression at `depth` (a level's expression is at
/// depth 1, a boolean node's arguments one deeper).
///
/// AND/OR/NOT are evaluated with explicit stacks (one [`Frame`] per open
/// boolean node, its arguments waiting on `pending`) rather than recursion, so
/// no input can exhaust the thread's stack. Meeting any node deeper than
/// [`MAX_DEPTH`] is [`ExtractError::TooDeep`]. Every argument is looked at,
/// even after an OR branch without a condition, so whether a tree is too deep
/// does not depend on what its other branches hold.
fn nested_condition<'a>(
    expr: Node<'a>,
    depth: usize,
    booleans: &mut Booleans<'a>,
) -> Result<Option<Condition>, ExtractError> {
    let Booleans { frames, pending } = booleans;
    frames.clear();
    pending.clear();
    let mut next = expr;
    loop {
        if depth + frames.len() > MAX_DEPTH {
            return Err(ExtractError::TooDeep);
        }
        let mut result = match next.kind() {
            NodeRef::BoolExpr(bool_expr) => {
                let args = bool_expr.args();
                let before = pending.len();
                args.push_nodes(pending);
                let mut frame = Frame::new(bool_op(bool_expr), args.len());
                frame.remaining = pending.len() - before;
                frames.push(frame);
                None
            }
            NodeRef::AExpr(a_expr) => Some(comparison(a_expr)),
            _ => Some(None),
        };
        // Fold the result into the open frames, closing those that are done,
        // until one has another argument to look at.
        loop {
            let Some(frame) = frames.last_mut() else {
                return Ok(result.flatten());
            };
            if let Some(found) = result.take() {
                frame.fold(found);
            }
            if frame.remaining > 0 {
                frame.remaining -= 1;
                if let Some(arg) = pending.pop() {
                    next = arg;
                    break;
                }
            }
            let done = frames.pop().and_then(Frame::finish);
            result = Some(done);
        }
    }
}

/// The stacks [`nested_condition`] works on, reused from one expression to the next.
#[derive(Default)]
struct Booleans<'a> {
    frames: Vec<Frame>,
    /// Arguments of the open frames not looked at yet (each frame's on top of
    /// its parent's).
    pending: Vec<Node<'a>>,
}

/// An AND, OR or NOT being evaluated.
struct Frame {
    op: BoolOp,
    /// Number of arguments (to size the result).
    capacity: usize,
    /// Arguments still on the pending stack.
    remaining: usize,
    gathered: Gathered,
    /// For OR: every branch so far gave a condition.
    keyed: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BoolOp {
    And,
    Or,
    Not,
}

impl Frame {
    fn new(op: BoolOp, capacity: usize) -> Frame {
        Frame {
            op,
            capacity,
            remaining: 0,
            gathered: Gathered::Empty,
            keyed: true,
        }
    }

    /// Take in the condition (or none) of one argument.
    fn fold(&mut self, found: Option<Condition>) {
        match (self.op, found) {
            (BoolOp::And, Some(found)) => self.gathered.push(found, self.capacity),
            (BoolOp::Or, Some(found)) if self.keyed => self.gathered.push(found, self.capacity),
            (BoolOp::Or, None) => {
                self.keyed = false;
                self.gathered = Gathered::Empty;
            }
            _ => {}
        }
    }

    fn finish(self) -> Option<Condition> {
        match self.op {
            BoolOp::And => self.gathered.into_and(),
            BoolOp::Or => self.gathered.into_or(),
            // NOT restricts nothing we can use.
            BoolOp::Not => None,
        }
    }
}

/// `col = v`, `v = col`, `col IN (...)`, `col = ANY(...)`.
fn comparison(a_expr: view::AExpr<'_>) -> Option<Condition> {
    let kind = a_expr.kind();
    if !matches!(
        kind,
        AExprKind::AexprOp | AExprKind::AexprOpAny | AExprKind::AexprIn
    ) || !is_equals(a_expr.name())
    {
        return None;
    }
    let left = a_expr.lexpr()?;
    let right = a_expr.rexpr()?;
    match kind {
        AExprKind::AexprOp => {
            let (column, value) = match column_of(left) {
                Some(column) => (column, value_of(right)?),
                None => (column_of(right)?, value_of(left)?),
            };
            Some(Condition::Eq {
                column: column.to_column(),
                value: value.to_value(),
            })
        }
        AExprKind::AexprOpAny => {
            let column = column_of(left)?;
            match right.kind() {
                NodeRef::AArrayExpr(array) => one_of(column, array.elements()),
                _ => Some(Condition::Any {
                    column: column.to_column(),
                    value: value_of(right)?.to_value(),
                }),
            }
        }
        // AexprIn (`NOT IN` is named `<>`, refused above).
        _ => match right.kind() {
            NodeRef::List(values) => one_of(column_of(left)?, values),
            _ => None,
        },
    }
}

/// `col IN (v1, ...)`: one `Eq`, or an `Or` of them; every element a value.
fn one_of(column: Column<'_>, values: List<'_>) -> Option<Condition> {
    // Check every element before copying anything out.
    if !values
        .iter()
        .all(|value| value.and_then(value_of).is_some())
    {
        return None;
    }
    let mut any = Gathered::default();
    for value in values.iter().flatten().filter_map(value_of) {
        let eq = Condition::Eq {
            column: column.to_column(),
            value: value.to_value(),
        };
        any.push(eq, values.len());
    }
    any.into_or()
}

/// Whether an operator name's last part is `=`.
fn is_equals(name: List<'_>) -> bool {
    let count = name.len();
    match count.checked_sub(1).and_then(|last| name.get(last)) {
        Some(last) => matches!(last.kind(), NodeRef::String(op) if op.sval() == Some("=")),
        None => false,
    }
}

/// A column, borrowed from the tree.
#[derive(Clone, Copy)]
struct Column<'a> {
    table: Option<&'a str>,
    column: &'a str,
}

impl Column<'_> {
    fn to_column(self) -> ColumnRef {
        ColumnRef {
            table: self.table.map(str::to_owned),
            column: self.column.to_owned(),
        }
    }
}

/// A ColumnRef ending in a name (not `*`).
fn column_of(node: Node<'_>) -> Option<Column<'_>> {
    let NodeRef::ColumnRef(column) = node.kind() else {
        return None;
    };
    let mut previous = None;
    let mut last = None;
    for field in column.fields().iter() {
        previous = last;
        last = field;
    }
    let NodeRef::String(name) = last?.kind() else {
        return None;
    };
    let table = match previous.map(Node::kind) {
        Some(NodeRef::String(table)) => table.sval(),
        _ => None,
    };
    Some(Column {
        table,
        column: name.sval()?,
    })
}

/// A value, borrowed from the tree.
#[derive(Clone, Copy)]
struct ValueOf<'a> {
    source: SourceOf<'a>,
    /// The outermost cast's type.
    cast: Option<TypeName<'a>>,
}

#[derive(Clone, Copy)]
enum SourceOf<'a> {
    Integer(i32, i32),
    Text(&'a str, i32),
    Param(u16),
    Null,
}

impl ValueOf<'_> {
    fn to_value(self) -> Value {
        let source = match self.source {
            SourceOf::Integer(value, location) => ValueSource::Integer {
                value: i64::from(value),
                location,
            },
            SourceOf::Text(text, location) => ValueSource::Text {
                text: text.to_owned(),
                location,
            },
            SourceOf::Param(number) => ValueSource::Param(number),
            SourceOf::Null => ValueSource::Null,
        };
        Value {
            source,
            cast: self.cast.and_then(type_name),
        }
    }
}

/// A constant, a parameter, or casts of one (followed in a loop: a chain of
/// a million casts costs no stack).
fn value_of(node: Node<'_>) -> Option<ValueOf<'_>> {
    let mut cast = None;
    let mut node = node;
    loop {
        match node.kind() {
            NodeRef::TypeCast(type_cast) => {
                if cast.is_none() {
                    cast = Some(type_cast.type_name()?);
                }
                node = type_cast.arg()?;
            }
            NodeRef::AConst(constant) => {
                return Some(ValueOf {
                    source: constant_of(constant)?,
                    cast,
                })
            }
            NodeRef::ParamRef(param) => {
                // `$0` and numbers past the protocol's 65535 name no parameter.
                let number = u16::try_from(param.number()).ok().filter(|&n| n > 0)?;
                return Some(ValueOf {
                    source: SourceOf::Param(number),
                    cast,
                });
            }
            _ => return None,
        }
    }
}

fn constant_of(constant: AConst<'_>) -> Option<SourceOf<'_>> {
    if constant.isnull() {
        return Some(SourceOf::Null);
    }
    let location = constant.location();
    match constant.val()? {
        ConstValue::Integer(value) => Some(SourceOf::Integer(value, location)),
        ConstValue::Float(text) | ConstValue::String(text) => Some(SourceOf::Text(text, location)),
        ConstValue::Boolean(_) | ConstValue::BitString(_) => None,
    }
}

/// A type name's last part, lower-cased in ASCII (as Postgres folds names).
fn type_name(type_name: TypeName<'_>) -> Option<String> {
    let names = type_name.names();
    let last = names.get(names.len().checked_sub(1)?)?;
    match last.kind() {
        NodeRef::String(name) => name.sval().map(str::to_ascii_lowercase),
        _ => None,
    }
}

/// Conditions gathered for an AND or an OR; allocates only for a second one.
#[derive(Default)]
enum Gathered {
    #[default]
    Empty,
    One(Condition),
    Many(Vec<Condition>),
}

impl Gathered {
    /// Add one; `capacity` is how many are expected in all.
    fn push(&mut self, condition: Condition, capacity: usize) {
        match self {
            Gathered::Many(all) => all.push(condition),
            Gathered::Empty => *self = Gathered::One(condition),
            Gathered::One(_) => {
                if let Gathered::One(first) = std::mem::take(self) {
                    let mut all = Vec::with_capacity(capacity.max(2));
                    all.push(first);
                    all.push(condition);
                    *self = Gathered::Many(all);
                }
            }
        }
    }

    /// AND rule: conditions without a use were never added; one stays as is.
    fn into_and(self) -> Option<Condition> {
        match self {
            Gathered::Empty => None,
            Gathered::One(condition) => Some(condition),
            Gathered::Many(all) => Some(Condition::And(all)),
        }
    }

    /// OR rule (the caller drops the whole OR if a branch gave nothing).
    fn into_or(self) -> Option<Condition> {
        match self {
            Gathered::Empty => None,
            Gathered::One(condition) => Some(condition),
            Gathered::Many(all) => Some(Condition::Or(all)),
        }
    }
}

/// Call `found` on each `a = b` between two columns met through ANDs only.
fn equalities(expr: Node<'_>, mut found: impl FnMut(ColumnRef, ColumnRef)) {
    let mut exprs = vec![expr];
    while let Some(expr) = exprs.pop() {
        match expr.kind() {
            NodeRef::BoolExpr(bool_expr) if bool_expr.boolop() == BoolExprType::AndExpr => {
                exprs.extend(bool_expr.args().iter().flatten());
            }
            NodeRef::AExpr(a_expr)
                if a_expr.kind() == AExprKind::AexprOp && is_equals(a_expr.name()) =>
            {
                let left = a_expr.lexpr().and_then(column_of);
                let right = a_expr.rexpr().and_then(column_of);
                if let (Some(left), Some(right)) = (left, right) {
                    found(left.to_column(), right.to_column());
                }
            }
            _ => {}
        }
    }
}
