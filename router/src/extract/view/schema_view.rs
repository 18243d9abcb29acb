//! The schema-change facts from the zero-copy view (see **schema_change**
//! in [`crate::extract`]).

use parser_ffi::protobuf::{AlterTableType, ObjectType, SetOperation};
use parser_ffi::view::{List, Node, NodeRef, RangeVar};

use crate::summary::{SchemaChange, TableRef};

/// What `stmt` (a top-level statement) does to a table's placement.
pub(super) fn schema_change(stmt: Node<'_>) -> Option<Box<SchemaChange>> {
    let change = match stmt.kind() {
        NodeRef::ExplainStmt(explain) if analyzes(explain.options()) => created(explain.query()?)?,
        NodeRef::CreateTableAsStmt(_) | NodeRef::SelectStmt(_) => created(stmt)?,
        NodeRef::RefreshMatViewStmt(refresh) if !refresh.skip_data() => SchemaChange::Refresh {
            table: table(refresh.relation()?)?,
        },
        NodeRef::RenameStmt(rename) => {
            let relation = rename.relation()?;
            let to = rename.newname()?;
            match rename.rename_type() {
                kind if is_relation(kind) => SchemaChange::RenameTable {
                    table: table(relation)?,
                    to: TableRef {
                        schema: relation.schemaname().map(str::to_owned),
                        name: to.to_owned(),
                        alias: None,
                    },
                },
                ObjectType::ObjectColumn if is_relation(rename.relation_type()) => {
                    SchemaChange::Columns {
                        table: table(relation)?,
                        renamed: vec![(rename.subname()?.to_owned(), to.to_owned())],
                        dropped: Vec::new(),
                        added: Vec::new(),
                    }
                }
                _ => return None,
            }
        }
        NodeRef::AlterObjectSchemaStmt(alter) if is_relation(alter.object_type()) => {
            let relation = alter.relation()?;
            SchemaChange::RenameTable {
                table: table(relation)?,
                to: TableRef {
                    schema: Some(alter.newschema()?.to_owned()),
                    name: relation.relname()?.to_owned(),
                    alias: None,
                },
            }
        }
        NodeRef::AlterTableStmt(alter) if is_relation(alter.objtype()) => {
            let (mut dropped, mut added) = (Vec::new(), Vec::new());
            for cmd in alter.cmds().iter().flatten() {
                let NodeRef::AlterTableCmd(cmd) = cmd.kind() else {
                    continue;
                };
                match cmd.subtype() {
                    AlterTableType::AtDropColumn => dropped.extend(cmd.name().map(str::to_owned)),
                    AlterTableType::AtAddColumn => {
                        if let Some(NodeRef::ColumnDef(def)) = cmd.def().map(Node::kind) {
                            added.extend(def.colname().map(str::to_owned));
                        }
                    }
                    _ => {}
                }
            }
            if dropped.is_empty() && added.is_empty() {
                return None;
            }
            dropped.sort_unstable();
            added.sort_unstable();
            SchemaChange::Columns {
                table: table(alter.relation()?)?,
                renamed: Vec::new(),
                dropped,
                added,
            }
        }
        _ => return None,
    };
    Some(Box::new(change))
}

/// A CREATE TABLE AS (or materialized view) or a SELECT with INTO (on
/// itself or its leftmost arm).
fn created(node: Node<'_>) -> Option<SchemaChange> {
    match node.kind() {
        NodeRef::CreateTableAsStmt(create) => {
            let into = create.into()?;
            Some(SchemaChange::CreateAs {
                table: table(into.rel()?)?,
                matview: create.objtype() == ObjectType::ObjectMatview,
                with_data: !into.skip_data(),
            })
        }
        NodeRef::SelectStmt(select) => {
            let mut arm = select;
            while arm.into_clause().is_none() && arm.op() != SetOperation::SetopNone {
                arm = arm.larg()?;
            }
            let into = arm.into_clause()?;
            Some(SchemaChange::CreateAs {
                table: table(into.rel()?)?,
                matview: false,
                with_data: !into.skip_data(),
            })
        }
        _ => None,
    }
}

/// Tables, materialized views and foreign tables: what the config names.
fn is_relation(kind: ObjectType) -> bool {
    matches!(
        kind,
        ObjectType::ObjectTable | ObjectType::ObjectMatview | ObjectType::ObjectForeignTable
    )
}

/// Whether EXPLAIN's options run the statement (`ANALYZE`, unless given
/// as false).
fn analyzes(options: List<'_>) -> bool {
    options.iter().flatten().any(|option| {
        let NodeRef::DefElem(option) = option.kind() else {
            return false;
        };
        if option.defname() != Some("analyze") {
            return false;
        }
        match option.arg().map(Node::kind) {
            None => true,
            Some(NodeRef::String(value)) => !value
                .sval()
                .is_some_and(|v| matches!(v, "false" | "off" | "no" | "0")),
            Some(NodeRef::Integer(value)) => value.ival() != 0,
            Some(_) => true,
        }
    })
}

fn table(range: RangeVar<'_>) -> Option<TableRef> {
    Some(TableRef {
        schema: range.schemaname().map(str::to_owned),
        name: range.relname()?.to_owned(),
        alias: range
            .alias()
            .and_then(|alias| alias.aliasname())
            .map(str::to_owned),
    })
}
