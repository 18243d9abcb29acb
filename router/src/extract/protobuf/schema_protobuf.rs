//! The schema-change facts from pg_query's protobuf structs (see
//! **schema_change** in [`crate::extract`]).

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::{inner, non_empty, table_ref};
use crate::summary::{SchemaChange, TableRef};

/// What `root` (a top-level statement) does to a table's placement.
pub(super) fn schema_change(root: &NodeEnum) -> Option<Box<SchemaChange>> {
    let change = match root {
        NodeEnum::ExplainStmt(explain) if analyzes(&explain.options) => {
            created(inner(&explain.query)?)?
        }
        NodeEnum::CreateTableAsStmt(_) | NodeEnum::SelectStmt(_) => created(root)?,
        NodeEnum::RefreshMatViewStmt(refresh) if !refresh.skip_data => SchemaChange::Refresh {
            table: table(refresh.relation.as_ref()?)?,
        },
        NodeEnum::RenameStmt(rename) => {
            let relation = rename.relation.as_ref()?;
            let to = non_empty(&rename.newname)?;
            match rename.rename_type() {
                kind if is_relation(kind) => SchemaChange::RenameTable {
                    table: table(relation)?,
                    to: TableRef {
                        schema: non_empty(&relation.schemaname),
                        name: to,
                        alias: None,
                    },
                },
                pb::ObjectType::ObjectColumn if is_relation(rename.relation_type()) => {
                    SchemaChange::Columns {
                        table: table(relation)?,
                        renamed: vec![(non_empty(&rename.subname)?, to)],
                        dropped: Vec::new(),
                        added: Vec::new(),
                    }
                }
                _ => return None,
            }
        }
        NodeEnum::AlterObjectSchemaStmt(alter) if is_relation(alter.object_type()) => {
            let relation = alter.relation.as_ref()?;
            SchemaChange::RenameTable {
                table: table(relation)?,
                to: TableRef {
                    schema: Some(non_empty(&alter.newschema)?),
                    name: non_empty(&relation.relname)?,
                    alias: None,
                },
            }
        }
        NodeEnum::AlterTableStmt(alter) if is_relation(alter.objtype()) => {
            let (mut dropped, mut added) = (Vec::new(), Vec::new());
            for cmd in &alter.cmds {
                let Some(NodeEnum::AlterTableCmd(cmd)) = cmd.node.as_ref() else {
                    continue;
                };
                match cmd.subtype() {
                    pb::AlterTableType::AtDropColumn => dropped.extend(non_empty(&cmd.name)),
                    pb::AlterTableType::AtAddColumn => {
                        if let Some(NodeEnum::ColumnDef(def)) = inner(&cmd.def) {
                            added.extend(non_empty(&def.colname));
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
                table: table(alter.relation.as_ref()?)?,
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
fn created(node: &NodeEnum) -> Option<SchemaChange> {
    match node {
        NodeEnum::CreateTableAsStmt(create) => {
            let into = create.into.as_deref()?;
            Some(SchemaChange::CreateAs {
                table: table(into.rel.as_ref()?)?,
                matview: create.objtype() == pb::ObjectType::ObjectMatview,
                with_data: !into.skip_data,
            })
        }
        NodeEnum::SelectStmt(select) => {
            let mut arm: &pb::SelectStmt = select;
            while arm.into_clause.is_none() && arm.op() != pb::SetOperation::SetopNone {
                arm = arm.larg.as_deref()?;
            }
            let into = arm.into_clause.as_deref()?;
            Some(SchemaChange::CreateAs {
                table: table(into.rel.as_ref()?)?,
                matview: false,
                with_data: !into.skip_data,
            })
        }
        _ => None,
    }
}

/// Tables, materialized views and foreign tables: what the config names.
fn is_relation(kind: pb::ObjectType) -> bool {
    matches!(
        kind,
        pb::ObjectType::ObjectTable
            | pb::ObjectType::ObjectMatview
            | pb::ObjectType::ObjectForeignTable
    )
}

/// Whether EXPLAIN's options run the statement (`ANALYZE`, unless given
/// as false).
fn analyzes(options: &[pb::Node]) -> bool {
    options.iter().any(|option| {
        let Some(NodeEnum::DefElem(option)) = option.node.as_ref() else {
            return false;
        };
        if option.defname != "analyze" {
            return false;
        }
        match inner(&option.arg) {
            None => true,
            Some(NodeEnum::String(value)) => {
                !matches!(value.sval.as_str(), "false" | "off" | "no" | "0")
            }
            Some(NodeEnum::Integer(value)) => value.ival != 0,
            Some(_) => true,
        }
    })
}

fn table(range: &pb::RangeVar) -> Option<TableRef> {
    non_empty(&range.relname)?;
    Some(table_ref(range))
}
