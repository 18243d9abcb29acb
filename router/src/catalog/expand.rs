//! A statement that names views, as routing must read it: each view it reads
//! replaced by its query in parentheses (`FROM bigv` becomes `FROM (SELECT
//! ... FROM big) AS bigv`), and the view a write targets replaced by the
//! table it writes through (`INSERT INTO bigv` becomes `INSERT INTO big AS
//! bigv`). The result is routed and merged in the statement's place, so a
//! view over sharded tables is read as its query would be: keys through
//! its columns, merges as for its tables. Views of views are replaced until
//! none is left.
//!
//! Only the text pgshard analyses changes; what the shards run is the
//! client's statement, unless merging needs a rewritten statement, which is
//! then written from this text.

use parser_ffi::view::{self, Node, NodeRef, RangeVar, Walk};
use parser_ffi::ParseTree;

use super::{Catalog, SimpleView};
use crate::route::RouteError;
use crate::sharding::Sharding;
use crate::summary::TableRef;

/// Views inside views are replaced this many times at most.
const MAX_ROUNDS: usize = 16;

/// `sql` with its views replaced (see the module docs); `None` when it
/// names no view. Errors say why a view's statement cannot be routed
/// exactly.
pub fn expand(sql: &str, sharding: &Sharding) -> Result<Option<String>, RouteError> {
    let Some(catalog) = sharding.catalog.as_deref().filter(|c| c.has_views()) else {
        return Ok(None);
    };
    let mut text = None::<String>;
    for _ in 0..MAX_ROUNDS {
        let current = text.as_deref().unwrap_or(sql);
        match expand_once(current, catalog, sharding)? {
            Some(next) => text = Some(next),
            None => return Ok(text),
        }
    }
    Err(RouteError::BehindName {
        what: "views".to_owned(),
        why: format!("its views nest more than {MAX_ROUNDS} deep"),
    })
}

/// One round: the views `sql` names directly.
fn expand_once(
    sql: &str,
    catalog: &Catalog,
    sharding: &Sharding,
) -> Result<Option<String>, RouteError> {
    // Text that does not parse is the server's to refuse.
    let Ok(tree) = ParseTree::parse(sql) else {
        return Ok(None);
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut stack = Vec::new();
    for raw in tree.statements() {
        let Some(stmt) = raw.stmt() else {
            continue;
        };
        if !reads_through_views(stmt) {
            continue;
        }
        let target = write_target(stmt);
        let mut ranges = Vec::new();
        let mut ctes = Vec::new();
        view::walk_with(&mut stack, stmt, |node| match node {
            NodeRef::RangeVar(range) => {
                ranges.push(range);
                Walk::Continue
            }
            NodeRef::CommonTableExpr(cte) => {
                ctes.extend(cte.ctename());
                Walk::Continue
            }
            // `FOR UPDATE OF v` names a FROM item; `INTO t` a new table.
            NodeRef::LockingClause(_) | NodeRef::IntoClause(_) => Walk::SkipChildren,
            _ => Walk::Continue,
        });
        for range in ranges {
            edits.extend(edit(sql, range, &ctes, target, catalog, sharding)?);
        }
    }
    if edits.is_empty() {
        return Ok(None);
    }
    splice(sql, edits).map(Some)
}

/// The edit that replaces `range` in `sql`, when it names a view: its
/// query in parentheses, or (the write's `target`, at that location) the
/// table it writes through.
fn edit(
    sql: &str,
    range: RangeVar<'_>,
    ctes: &[&str],
    target: Option<i32>,
    catalog: &Catalog,
    sharding: &Sharding,
) -> Result<Option<(usize, usize, String)>, RouteError> {
    let Some(name) = range.relname() else {
        return Ok(None);
    };
    let schema = range.schemaname();
    let Some((_, found)) = catalog.view(schema, name) else {
        return Ok(None);
    };
    if schema.is_none() && ctes.contains(&name) {
        return Err(RouteError::BehindName {
            what: format!("view {name}"),
            why: format!("the statement also defines a CTE named {name}, and pgshard cannot tell which one each reference means; rename the CTE"),
        });
    }
    let start = usize::try_from(range.location()).unwrap_or(usize::MAX);
    let Some(end) = name_end(sql, start) else {
        return Err(unreadable(name));
    };
    let alias = range.alias().and_then(|a| a.aliasname());
    let is_target = target.is_some_and(|t| t == range.location());
    let replacement = if is_target {
        let table = TableRef {
            schema: schema.map(str::to_owned),
            name: name.to_owned(),
            alias: None,
        };
        through(&table, found.simple.as_ref(), sharding)?
    } else {
        if !range.inh() {
            return Err(RouteError::BehindName {
                what: format!("view {name}"),
                why: "it is read with ONLY".to_owned(),
            });
        }
        format!("({})", found.query)
    };
    let replacement = match alias {
        Some(_) => replacement,
        None => format!("{replacement} AS {}", quote(name)),
    };
    Ok(Some((start, end, replacement)))
}

/// `sql` with each `(start, end, replacement)` edit made (they must not
/// overlap).
fn splice(sql: &str, mut edits: Vec<(usize, usize, String)>) -> Result<String, RouteError> {
    edits.sort_by_key(|(start, _, _)| *start);
    let mut out = String::with_capacity(sql.len() + edits.iter().map(|e| e.2.len()).sum::<usize>());
    let mut at = 0;
    for (start, end, replacement) in edits {
        if start < at {
            return Err(unreadable("a view"));
        }
        out.push_str(&sql[at..start]);
        out.push_str(&replacement);
        at = end;
    }
    out.push_str(&sql[at..]);
    Ok(out)
}

/// Statements whose views are read where they run: queries and writes,
/// what wraps a query (EXPLAIN, DECLARE, PREPARE, CREATE TABLE AS, COPY
/// (query)), CALL. Schema changes are not (CREATE VIEW names the tables
/// its query reads, DROP VIEW the view itself).
fn reads_through_views(stmt: Node<'_>) -> bool {
    matches!(
        stmt.kind(),
        NodeRef::SelectStmt(_)
            | NodeRef::InsertStmt(_)
            | NodeRef::UpdateStmt(_)
            | NodeRef::DeleteStmt(_)
            | NodeRef::MergeStmt(_)
            | NodeRef::ExplainStmt(_)
            | NodeRef::DeclareCursorStmt(_)
            | NodeRef::PrepareStmt(_)
            | NodeRef::CreateTableAsStmt(_)
            | NodeRef::CallStmt(_)
    ) || matches!(stmt.kind(), NodeRef::CopyStmt(copy) if copy.query().is_some())
}

/// The location of the relation a write writes (the explained one's).
fn write_target(stmt: Node<'_>) -> Option<i32> {
    let relation = match stmt.kind() {
        NodeRef::InsertStmt(insert) => insert.relation(),
        NodeRef::UpdateStmt(update) => update.relation(),
        NodeRef::DeleteStmt(delete) => delete.relation(),
        NodeRef::MergeStmt(merge) => merge.relation(),
        NodeRef::ExplainStmt(explain) => return explain.query().and_then(write_target),
        _ => None,
    };
    relation.map(|r| r.location())
}

/// The table a write through `view` writes, as the statement should name
/// it for routing; an error unless the view shows one table's rows with
/// its sharding keys under their own names.
fn through(
    view: &TableRef,
    simple: Option<&SimpleView>,
    sharding: &Sharding,
) -> Result<String, RouteError> {
    let refuse = |why: String| RouteError::BehindName {
        what: format!("view {}", view.name),
        why,
    };
    let Some(simple) = simple else {
        return Err(refuse("pgshard routes writes only through views of one table's rows and columns (no join, aggregate, DISTINCT, LIMIT or set operation), by the table's sharding key; write the table itself".to_owned()));
    };
    for key in key_columns(&simple.base, sharding) {
        for (column, shows) in &simple.columns {
            if *column == key && shows.as_deref() != Some(key) {
                return Err(refuse(format!(
                    "its column {column} is not the sharding key {key} of {}, whose name it has; write {} itself",
                    simple.base.name, simple.base.name
                )));
            }
        }
    }
    Ok(match &simple.base.schema {
        Some(schema) => format!("{}.{}", quote(schema), quote(&simple.base.name)),
        None => quote(&simple.base.name),
    })
}

/// The columns that may key `table`: its own entries' and the column-only
/// entries'.
fn key_columns<'s>(table: &TableRef, sharding: &'s Sharding) -> Vec<&'s str> {
    let mut columns: Vec<&str> = sharding
        .tables
        .iter()
        .filter(|entry| entry.name.is_none() || crate::route::tables::entry_names(entry, table))
        .map(|entry| entry.column.as_str())
        .collect();
    columns.sort_unstable();
    columns.dedup();
    columns
}

fn unreadable(name: &str) -> RouteError {
    RouteError::BehindName {
        what: format!("view {name}"),
        why: "pgshard cannot find where its name ends in the statement".to_owned(),
    }
}

/// Where the (possibly qualified, possibly quoted) name starting at
/// `start` ends.
fn name_end(sql: &str, start: usize) -> Option<usize> {
    let bytes = sql.as_bytes();
    let mut at = identifier_end(bytes, start)?;
    loop {
        let mut next = at;
        while bytes.get(next).is_some_and(u8::is_ascii_whitespace) {
            next += 1;
        }
        if bytes.get(next) != Some(&b'.') {
            return Some(at);
        }
        next += 1;
        while bytes.get(next).is_some_and(u8::is_ascii_whitespace) {
            next += 1;
        }
        at = identifier_end(bytes, next)?;
    }
}

/// Where the identifier starting at `start` ends: `"..."` (with `""`
/// inside) or a run of letters, digits, `_`, `$` and non-ASCII bytes.
fn identifier_end(bytes: &[u8], start: usize) -> Option<usize> {
    if bytes.get(start) == Some(&b'"') {
        let mut at = start + 1;
        loop {
            match bytes.get(at)? {
                b'"' if bytes.get(at + 1) == Some(&b'"') => at += 2,
                b'"' => return Some(at + 1),
                _ => at += 1,
            }
        }
    }
    let is_part = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$' || *b >= 0x80;
    let mut at = start;
    while bytes.get(at).is_some_and(is_part) {
        at += 1;
    }
    (at > start).then_some(at)
}

/// `name` as a quoted identifier (always quoted: a view may be named
/// like a keyword).
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
