//! A statement's kind and write flag, its target table and the columns it
//! sets (protobuf structs; see the rules in [`crate::extract`]).

use parser_ffi::protobuf::{self as pb, a_const::Val, node::Node as NodeEnum};

use super::{inner, non_empty, table_ref};
use crate::summary::{InlineCode, StatementKind, TableRef};

/// The table the statement writes and the columns an UPDATE (or a MERGE's
/// UPDATE actions) assigns: of the statement, or of the one EXPLAIN explains.
pub(super) fn target_and_set_columns(root: Option<&NodeEnum>) -> (Option<TableRef>, Vec<String>) {
    let stmt = match root {
        Some(NodeEnum::ExplainStmt(explain)) => inner(&explain.query),
        stmt => stmt,
    };
    let mut columns = Vec::new();
    let relation = match stmt {
        Some(NodeEnum::InsertStmt(insert)) => &insert.relation,
        Some(NodeEnum::UpdateStmt(update)) => {
            assigned(&update.target_list, &mut columns);
            &update.relation
        }
        Some(NodeEnum::DeleteStmt(delete)) => &delete.relation,
        Some(NodeEnum::MergeStmt(merge)) => {
            // WHEN MATCHED and WHEN NOT MATCHED BY SOURCE: both update.
            for clause in &merge.merge_when_clauses {
                if let Some(NodeEnum::MergeWhenClause(clause)) = clause.node.as_ref() {
                    if clause.command_type() == pb::CmdType::CmdUpdate {
                        assigned(&clause.target_list, &mut columns);
                    }
                }
            }
            &merge.relation
        }
        Some(NodeEnum::CopyStmt(copy)) if copy.is_from => &copy.relation,
        _ => return (None, Vec::new()),
    };
    let target = relation
        .as_ref()
        .filter(|range_var| !range_var.relname.is_empty())
        .map(table_ref);
    columns.sort_unstable();
    columns.dedup();
    (target, columns)
}

/// The column names a SET list assigns.
fn assigned(targets: &[pb::Node], columns: &mut Vec<String>) {
    for target in targets {
        if let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() {
            columns.extend(non_empty(&target.name));
        }
    }
}

/// The statement's kind and whether it writes: `None` for a SELECT, which
/// writes if some SelectStmt of it has INTO or some CTE modifies data
/// (Postgres accepts those only at the top, and refuses the statement
/// otherwise). An EXPLAIN takes the explained statement's `write`.
pub(super) fn classify(root: Option<&NodeEnum>) -> (StatementKind, Option<bool>) {
    use StatementKind as K;
    let (kind, write) = match root {
        None => (K::Other, false),
        Some(NodeEnum::SelectStmt(_)) => return (K::Select, None),
        Some(NodeEnum::InsertStmt(_)) => (K::Insert, true),
        Some(NodeEnum::UpdateStmt(_)) => (K::Update, true),
        Some(NodeEnum::DeleteStmt(_)) => (K::Delete, true),
        Some(NodeEnum::MergeStmt(_)) => (K::Merge, true),
        Some(NodeEnum::CopyStmt(copy)) => (K::Copy { to: !copy.is_from }, copy.is_from),
        Some(NodeEnum::TransactionStmt(transaction)) => (transaction_kind(transaction), false),
        Some(NodeEnum::VariableSetStmt(set)) => (set_kind(set), false),
        Some(NodeEnum::VariableShowStmt(_) | NodeEnum::DiscardStmt(_)) => (K::Session, false),
        Some(NodeEnum::ExplainStmt(explain)) => {
            let query = inner(&explain.query);
            // The grammar explains no EXPLAIN; a hand-built tree that does
            // is not followed further.
            let write = match query {
                Some(NodeEnum::ExplainStmt(_)) => Some(false),
                query => classify(query).1,
            };
            return (K::Explain, write);
        }
        Some(NodeEnum::DoStmt(code)) => (K::Do(Box::new(inline_code(&code.args))), true),
        Some(NodeEnum::CallStmt(_)) => (K::Other, true),
        Some(node) if is_ddl(node) => (K::Ddl, true),
        Some(_) => (K::Other, false),
    };
    (kind, Some(write))
}

/// A DO block's language and body, from its DefElems (`as`, `language`).
fn inline_code(args: &[pb::Node]) -> InlineCode {
    let mut code = InlineCode {
        language: "plpgsql".to_owned(),
        body: String::new(),
    };
    for arg in args {
        let Some(NodeEnum::DefElem(elem)) = arg.node.as_ref() else {
            continue;
        };
        let Some(NodeEnum::String(value)) = inner(&elem.arg) else {
            continue;
        };
        match elem.defname.as_str() {
            "as" => code.body.clone_from(&value.sval),
            "language" => code.language = value.sval.to_ascii_lowercase(),
            _ => {}
        }
    }
    code
}

fn transaction_kind(transaction: &pb::TransactionStmt) -> StatementKind {
    use pb::TransactionStmtKind as T;
    match transaction.kind() {
        T::TransStmtBegin | T::TransStmtStart => StatementKind::Begin,
        T::TransStmtCommit => StatementKind::Commit,
        T::TransStmtRollback => StatementKind::Rollback,
        _ => StatementKind::TransactionOther,
    }
}

/// `SET pgdog.shard` / `pgdog.sharding_key`: one literal gives its text
/// (`SET x TO DEFAULT` is `RESET x`); any other form of SET on them (several
/// values, `FROM CURRENT`) is left to the server, as a plain session command.
fn set_kind(set: &pb::VariableSetStmt) -> StatementKind {
    use pb::VariableSetKind as V;
    let wrap: fn(Option<String>) -> StatementKind = match set.name.as_str() {
        "pgdog.shard" => StatementKind::SetShard,
        "pgdog.sharding_key" => StatementKind::SetShardingKey,
        _ => return StatementKind::Session,
    };
    let value = match (set.kind(), set.args.as_slice()) {
        (V::VarReset | V::VarSetDefault, _) => None,
        (V::VarSetValue, [arg]) => match arg.node.as_ref() {
            Some(NodeEnum::AConst(pb::AConst { val: Some(val), .. })) => Some(match val {
                Val::Ival(int) => int.ival.to_string(),
                Val::Sval(text) => text.sval.clone(),
                Val::Fval(float) => float.fval.clone(),
                Val::Boolval(_) | Val::Bsval(_) => return StatementKind::Session,
            }),
            _ => return StatementKind::Session,
        },
        _ => return StatementKind::Session,
    };
    wrap(value)
}

/// Schema changes: what Postgres logs under `log_statement = 'ddl'`, plus
/// TRUNCATE and REFRESH MATERIALIZED VIEW (both rewrite a table's data on
/// every shard, as DDL runs).
fn is_ddl(node: &NodeEnum) -> bool {
    macro_rules! any_of {
        ($($variant:ident)*) => { matches!(node, $(NodeEnum::$variant(_))|*) };
    }
    any_of! {
        CreateSchemaStmt CreateStmt CreateTableSpaceStmt CreateExtensionStmt CreateFdwStmt
        CreateForeignServerStmt CreateForeignTableStmt CreateUserMappingStmt
        CreatePolicyStmt CreateAmStmt CreateTrigStmt CreateEventTrigStmt CreatePlangStmt
        CreateRoleStmt CreateSeqStmt CreateDomainStmt CreateOpClassStmt CreateOpFamilyStmt
        CreateStatsStmt CreateFunctionStmt CreateEnumStmt CreateRangeStmt CreatedbStmt
        CreateTableAsStmt CreateConversionStmt CreateCastStmt CreateTransformStmt
        CreatePublicationStmt CreateSubscriptionStmt AlterTableStmt AlterCollationStmt
        AlterDomainStmt AlterDefaultPrivilegesStmt AlterTableSpaceOptionsStmt
        AlterTableMoveAllStmt AlterExtensionStmt AlterExtensionContentsStmt AlterFdwStmt
        AlterForeignServerStmt AlterUserMappingStmt AlterPolicyStmt AlterEventTrigStmt
        AlterRoleStmt AlterRoleSetStmt AlterSeqStmt AlterOpFamilyStmt AlterStatsStmt
        AlterFunctionStmt AlterObjectDependsStmt AlterObjectSchemaStmt AlterOwnerStmt
        AlterOperatorStmt AlterTypeStmt AlterEnumStmt AlterDatabaseStmt
        AlterDatabaseRefreshCollStmt AlterDatabaseSetStmt AlterSystemStmt
        AlterTsdictionaryStmt AlterTsconfigurationStmt AlterPublicationStmt
        AlterSubscriptionStmt DropStmt DropTableSpaceStmt DropUserMappingStmt DropRoleStmt
        DropdbStmt DropOwnedStmt DropSubscriptionStmt IndexStmt TruncateStmt RenameStmt
        CommentStmt SecLabelStmt GrantStmt GrantRoleStmt ViewStmt DefineStmt
        CompositeTypeStmt RuleStmt ReassignOwnedStmt ImportForeignSchemaStmt RefreshMatViewStmt
    }
}
