//! The gather planner's SQL (rules 6-7 of [`crate::gather`]): what each
//! gather runs on the shards and creates on the coordinator, built as
//! protobuf structs and deparsed; and the finish, the client's own text
//! with each gathered table's name replaced by its temp table's (aliased
//! by the name it had, so every qualifier still resolves), spliced at the
//! RangeVars' locations so that nothing else of the text changes.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::locking::Lock;
use super::NotGathered;

/// `SELECT <columns> FROM <table as written> [WHERE <conditions>]`.
pub(super) fn shard_select(
    range_var: &pb::RangeVar,
    columns: Option<&[String]>,
    conditions: &[&pb::Node],
    lock: Option<Lock>,
) -> Result<String, NotGathered> {
    let targets = match columns {
        Some(columns) => columns
            .iter()
            .map(|c| target(column_ref(Some(c))))
            .collect(),
        None => vec![target(column_ref(None))],
    };
    let where_clause = match conditions {
        [] => None,
        [one] => Some(Box::new((*one).clone())),
        many => Some(Box::new(node(NodeEnum::BoolExpr(Box::new(pb::BoolExpr {
            xpr: None,
            boolop: pb::BoolExprType::AndExpr.into(),
            args: many.iter().map(|c| (*c).clone()).collect(),
            location: -1,
        }))))),
    };
    let select = pb::SelectStmt {
        target_list: targets,
        from_clause: vec![node(NodeEnum::RangeVar(range_var.clone()))],
        where_clause,
        locking_clause: lock.map(Lock::clause).into_iter().collect(),
        limit_option: pb::LimitOption::Default.into(),
        op: pb::SetOperation::SetopNone.into(),
        ..Default::default()
    };
    let tree = pb::ParseResult {
        version: 0,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(node(NodeEnum::SelectStmt(Box::new(select))))),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    parser_ffi::deparse_protobuf(&tree).map_err(NotGathered::Deparse)
}

fn node(node: NodeEnum) -> pb::Node {
    pb::Node { node: Some(node) }
}

fn target(value: pb::Node) -> pb::Node {
    node(NodeEnum::ResTarget(Box::new(pb::ResTarget {
        name: String::new(),
        indirection: Vec::new(),
        val: Some(Box::new(value)),
        location: -1,
    })))
}

/// A column by name, or `*`.
fn column_ref(name: Option<&str>) -> pb::Node {
    let field = match name {
        Some(name) => node(NodeEnum::String(pb::String {
            sval: name.to_owned(),
        })),
        None => node(NodeEnum::AStar(pb::AStar {})),
    };
    node(NodeEnum::ColumnRef(pb::ColumnRef {
        fields: vec![field],
        location: -1,
    }))
}

/// `name` as a quoted identifier.
pub(super) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// One RangeVar of the client's text to replace: where its name starts,
/// the temp table, and the alias to add when it has none.
pub(super) struct Swap {
    pub location: usize,
    pub temp: String,
    pub alias: Option<String>,
}

/// The client's `sql` with each swap applied: the name at its location
/// (`name`, `schema.name`, quoted or not, a `*` after it kept) replaced by
/// `pg_temp.<temp>`, then ` AS "<name>"` when it had no alias.
pub(super) fn finish(sql: &str, mut swaps: Vec<Swap>) -> Result<String, NotGathered> {
    let tokens = parser_ffi::scan(sql).map_err(NotGathered::Deparse)?;
    swaps.sort_by_key(|swap| std::cmp::Reverse(swap.location));
    let mut out = sql.to_owned();
    for swap in swaps {
        let Some(first) = tokens.iter().position(|t| t.start == swap.location) else {
            return Err(NotGathered::Unreadable("a table name's place in the text"));
        };
        let text = |i: usize| tokens.get(i).map(|t| &sql[t.start..t.end]);
        let mut last = first;
        while text(last + 1) == Some(".") && tokens.get(last + 2).is_some() {
            last += 2;
        }
        let name_end = tokens[last].end;
        let mut insert_at = name_end;
        if text(last + 1) == Some("*") {
            insert_at = tokens[last + 1].end;
        }
        if let Some(alias) = &swap.alias {
            out.insert_str(insert_at, &format!(" AS {}", quoted(alias)));
        }
        out.replace_range(swap.location..name_end, &format!("pg_temp.{}", swap.temp));
    }
    Ok(out)
}
