//! What a body reaches: the tables a view's query, a function's or a DO
//! block's statements read and write, and the functions they call. SQL
//! bodies are parsed and summarized like any statement; PL/pgSQL bodies
//! through libpg_query's PL/pgSQL parser, whose tree gives each embedded
//! statement's text and how it is parsed (`parseMode`). Dynamic SQL
//! (`EXECUTE`), code in other languages and text that does not parse make
//! the reach *opaque*: unknown, so routing treats it as reaching anything.

use parser_ffi::view::{NodeRef, SelectStmt};
use parser_ffi::{ParseError, ParseTree};

use super::SimpleView;
use crate::extract::ExtractError;
use crate::summary::{Call, InlineCode, StatementKind, StatementSummary, Summary, TableRef};

/// How deep nested DO blocks (inside a body's statements) are followed.
const MAX_NESTING: usize = 8;

/// What a body reaches. Lists in order of appearance, with repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// Tables and views its statements name (written ones too).
    pub reads: Vec<TableRef>,
    /// Tables it writes: INSERT/UPDATE/DELETE/MERGE targets, COPY FROM,
    /// the tables of its schema changes and `SELECT ... INTO`.
    pub writes: Vec<TableRef>,
    /// Functions it calls (sequence functions too, with their arguments).
    pub calls: Vec<Call>,
    /// Why what it reaches cannot be known, if it cannot.
    pub opaque: Option<String>,
}

impl Reach {
    fn opaque(why: impl Into<String>) -> Reach {
        Reach {
            opaque: Some(why.into()),
            ..Reach::default()
        }
    }

    fn merge(&mut self, other: Reach) {
        self.reads.extend(other.reads);
        self.writes.extend(other.writes);
        self.calls.extend(other.calls);
        if self.opaque.is_none() {
            self.opaque = other.opaque;
        }
    }

    /// What one summarized statement reaches.
    fn add_statement(&mut self, stmt: &StatementSummary, depth: usize) {
        if let StatementKind::Do(code) = &stmt.kind {
            self.merge(of_code(code, depth + 1));
        }
        self.reads.extend(stmt.tables.iter().cloned());
        if stmt.write {
            match &stmt.target {
                Some(target) => self.writes.push(target.clone()),
                None => self.writes.extend(stmt.tables.iter().cloned()),
            }
        }
        self.calls.extend(stmt.calls.iter().cloned());
    }
}

/// What a function (its `CREATE FUNCTION` statement) reaches.
pub fn of_function(language: &str, definition: &str) -> Reach {
    match language {
        // Compiled code: Postgres's own functions and extensions' (which
        // reach no table of the application's).
        "c" | "internal" => Reach::default(),
        "sql" => match sql_body(definition) {
            Ok(body) => of_sql(&body, 0),
            Err(why) => Reach::opaque(why.to_string()),
        },
        "plpgsql" => of_plpgsql(definition, 0),
        other => Reach::opaque(format!(
            "it is written in {other}, which pgshard does not read"
        )),
    }
}

/// What a DO block's code reaches.
pub fn of_code(code: &InlineCode, depth: usize) -> Reach {
    if depth > MAX_NESTING {
        return Reach::opaque("its DO blocks nest too deep");
    }
    if code.language != "plpgsql" {
        return Reach::opaque(format!(
            "it is written in {}, which pgshard does not read",
            code.language
        ));
    }
    let quote = "$pgshard_do$";
    if code.body.contains(quote) {
        return Reach::opaque("its code cannot be read");
    }
    let wrapped = format!(
        "CREATE FUNCTION pgshard_do() RETURNS void LANGUAGE plpgsql AS {quote}{}{quote}",
        code.body
    );
    of_plpgsql(&wrapped, depth)
}

/// What a string of SQL statements reaches.
fn of_sql(sql: &str, depth: usize) -> Reach {
    if sql.trim().is_empty() {
        return Reach::default();
    }
    let summarize = |sql| -> Result<Summary, BodyError> {
        Ok(crate::extract::summarize(&ParseTree::parse(sql)?)?)
    };
    let summary = match summarize(sql) {
        Ok(summary) => summary,
        Err(err) => return Reach::opaque(format!("a statement of its body cannot be read: {err}")),
    };
    let mut reach = Reach::default();
    for stmt in &summary.statements {
        reach.add_statement(stmt, depth);
    }
    reach
}

/// Why the SQL of a function's body cannot be read.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Summary(#[from] ExtractError),
    #[error("its definition is not a CREATE FUNCTION statement")]
    NotCreateFunction,
    #[error("its body cannot be read")]
    Unreadable,
    #[error("its body cannot be found")]
    NotFound,
}

/// The SQL of a `LANGUAGE sql` function: its `AS '...'` string, or its
/// standard body (`BEGIN ATOMIC ... END`, `RETURN expr`) as text.
fn sql_body(definition: &str) -> Result<String, BodyError> {
    let tree = ParseTree::parse(definition)?;
    let stmt = tree.statements().next().and_then(|raw| raw.stmt());
    let Some(NodeRef::CreateFunctionStmt(create)) = stmt.map(|stmt| stmt.kind()) else {
        return Err(BodyError::NotCreateFunction);
    };
    if let Some(body) = create.sql_body() {
        let upper = definition.to_ascii_uppercase();
        return match body.kind() {
            NodeRef::ReturnStmt(_) => upper
                .rfind("RETURN ")
                .map(|at| format!("SELECT {}", &definition[at + "RETURN ".len()..]))
                .ok_or(BodyError::Unreadable),
            _ => match (upper.find("BEGIN ATOMIC"), upper.rfind("END")) {
                (Some(start), Some(end)) if start + "BEGIN ATOMIC".len() <= end => {
                    Ok(definition[start + "BEGIN ATOMIC".len()..end].to_owned())
                }
                _ => Err(BodyError::Unreadable),
            },
        };
    }
    for option in create.options().iter().flatten() {
        let NodeRef::DefElem(elem) = option.kind() else {
            continue;
        };
        if elem.defname() != Some("as") {
            continue;
        }
        if let Some(NodeRef::List(list)) = elem.arg().map(|arg| arg.kind()) {
            if let Some(NodeRef::String(body)) = list.get(0).map(|node| node.kind()) {
                return Ok(body.sval().unwrap_or_default().to_owned());
            }
        }
    }
    Err(BodyError::NotFound)
}

/// What a PL/pgSQL function reaches: every embedded statement and
/// expression of its tree, parsed as its `parseMode` says.
fn of_plpgsql(definition: &str, depth: usize) -> Reach {
    let rendering = match parser_ffi::parse_plpgsql(definition) {
        Ok(rendering) => rendering,
        Err(err) => return Reach::opaque(format!("its PL/pgSQL cannot be read: {err}")),
    };
    let mut reach = Reach::default();
    if DYNAMIC.iter().any(|marker| rendering.contains(marker)) {
        reach.merge(Reach::opaque("it runs SQL built at run time (EXECUTE)"));
    }
    for embedded in embedded(&rendering) {
        match embedded {
            Some((query, mode)) => reach.merge(of_plpgsql_sql(&query, mode, depth)),
            None => reach.merge(Reach::opaque("its PL/pgSQL cannot be read")),
        }
    }
    reach
}

/// What marks dynamic SQL in the PL/pgSQL rendering: `EXECUTE`, `FOR ...
/// IN EXECUTE`, `RETURN QUERY EXECUTE`, `OPEN ... FOR EXECUTE`.
const DYNAMIC: [&str; 3] = [
    "\"PLpgSQL_stmt_dynexecute\"",
    "\"PLpgSQL_stmt_dynfors\"",
    "\"dynquery\"",
];

/// The embedded statements of libpg_query's PL/pgSQL rendering: each
/// `"PLpgSQL_expr":{"query":"...","parseMode":N}`, read where it stands
/// (the rendering is not always valid JSON as a whole); `None` for one
/// that cannot be read.
fn embedded(rendering: &str) -> Vec<Option<(String, Option<u64>)>> {
    const EXPR: &str = "\"PLpgSQL_expr\":{\"query\":";
    let mut found = Vec::new();
    let mut rest = rendering;
    while let Some(at) = rest.find(EXPR) {
        rest = &rest[at + EXPR.len()..];
        let Some(end) = string_end(rest) else {
            found.push(None);
            break;
        };
        let query = serde_json::from_str::<String>(&rest[..end]).ok();
        rest = &rest[end..];
        let mode = rest.strip_prefix(",\"parseMode\":").and_then(|tail| {
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            tail[..digits].parse().ok()
        });
        found.push(query.map(|query| (query, mode)));
    }
    found
}

/// The length of the JSON string literal `text` starts with, quotes
/// included.
fn string_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut at = 1;
    loop {
        match bytes.get(at)? {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
}

/// One embedded PL/pgSQL statement or expression. `mode` is Postgres's
/// `RawParseMode`: 0 a statement, 2 an expression, 3-5 an assignment
/// (`target := expr`).
fn of_plpgsql_sql(query: &str, mode: Option<u64>, depth: usize) -> Reach {
    match mode {
        Some(2) => of_sql(&format!("SELECT {query}"), depth),
        Some(3..=5) => {
            let value = match query.find(":=") {
                Some(at) => &query[at + 2..],
                None => query.split_once('=').map_or(query, |(_, value)| value),
            };
            of_sql(&format!("SELECT {value}"), depth)
        }
        _ => {
            let reach = of_sql(query, depth);
            if reach.opaque.is_some() {
                // An older rendering without `parseMode`: maybe an expression.
                let expression = of_sql(&format!("SELECT {query}"), depth);
                if expression.opaque.is_none() {
                    return expression;
                }
            }
            reach
        }
    }
}

/// What a view's query reaches, and whether it is a simple view of one
/// table (see [`SimpleView`]).
pub fn of_view(query: &str) -> (Reach, Option<SimpleView>) {
    let reach = of_sql(query, 0);
    let simple = ParseTree::parse(query).ok().and_then(|tree| {
        let stmt = tree.statements().next()?.stmt()?;
        match stmt.kind() {
            NodeRef::SelectStmt(select) => simple_view(select),
            _ => None,
        }
    });
    (reach, simple)
}

/// A SELECT of one table's columns and rows, nothing else: what Postgres
/// writes through (auto-updatable views).
fn simple_view(select: SelectStmt<'_>) -> Option<SimpleView> {
    let plain = select.op() == parser_ffi::protobuf::SetOperation::SetopNone
        && select.distinct_clause().is_empty()
        && select.group_clause().is_empty()
        && select.having_clause().is_none()
        && select.limit_count().is_none()
        && select.limit_offset().is_none()
        && select.with_clause().is_none()
        && select.window_clause().is_empty()
        && select.values_lists().is_empty()
        && select.from_clause().len() == 1;
    if !plain {
        return None;
    }
    let NodeRef::RangeVar(range) = select.from_clause().get(0)?.kind() else {
        return None;
    };
    let base = TableRef {
        schema: range.schemaname().map(str::to_owned),
        name: range.relname()?.to_owned(),
        alias: None,
    };
    let mut columns = Vec::new();
    for target in select.target_list().iter().flatten() {
        let NodeRef::ResTarget(target) = target.kind() else {
            return None;
        };
        // Aggregates, window and set-returning functions make rows of
        // their own (other functions may count too: any call is refused).
        let mut calls = false;
        if let Some(val) = target.val() {
            parser_ffi::view::walk(val, |node| {
                calls |= matches!(node, NodeRef::FuncCall(_) | NodeRef::SubLink(_));
                parser_ffi::view::Walk::Continue
            });
        }
        if calls {
            return None;
        }
        let column = target.val().and_then(|val| match val.kind() {
            NodeRef::ColumnRef(column) => {
                let fields = column.fields();
                match fields.get(fields.len().checked_sub(1)?)?.kind() {
                    NodeRef::String(name) => name.sval().map(str::to_owned),
                    _ => None,
                }
            }
            _ => None,
        });
        let name = target
            .name()
            .map(str::to_owned)
            .or_else(|| column.clone())?;
        columns.push((name, column));
    }
    Some(SimpleView { base, columns })
}
