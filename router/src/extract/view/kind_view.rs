//! A statement's kind and write flag, its target table and the columns it
//! sets (zero-copy view; see the rules in [`crate::extract`]).

use parser_ffi::protobuf::{CmdType, TransactionStmtKind, VariableSetKind};
use parser_ffi::view::{ConstValue, List, Node, NodeRef, VariableSetStmt};

use super::Write;
use crate::summary::{InlineCode, StatementKind, TableRef};

/// The statement EXPLAIN explains, or the statement itself.
fn explained(stmt: Node<'_>) -> Node<'_> {
    match stmt.kind() {
        NodeRef::ExplainStmt(explain) => explain.query().unwrap_or(stmt),
        _ => stmt,
    }
}

/// The table the statement writes: an INSERT's, UPDATE's, DELETE's or
/// MERGE's relation, a COPY ... FROM's table.
pub(super) fn target(stmt: Node<'_>) -> Option<TableRef> {
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
pub(super) fn set_columns(stmt: Node<'_>) -> Vec<String> {
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
pub(super) fn own_query(stmt: Node<'_>) -> Option<Node<'_>> {
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

/// Kind and write rule of a top-level statement.
pub(super) fn classify(stmt: Node<'_>) -> (StatementKind, Write) {
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
