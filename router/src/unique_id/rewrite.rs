//! Where a statement calls `pgdog.unique_id()`, and its text with each call
//! replaced by an id pgshard made.
//!
//! A replaced call is exact only where Postgres would evaluate it once per
//! occurrence in the text:
//! 1. a value of an `INSERT ... VALUES` row (or of a bare `VALUES`): each row
//!    is its own occurrence, so split multi-row INSERTs route and split on
//!    the ids like on any literal key; replaced by `<id>::bigint`;
//! 2. the SELECT list or WHERE of a SELECT (or INSERT ... SELECT) with no
//!    FROM, GROUP BY, HAVING, window or set operation, and no other function
//!    call in its SELECT list (a set-returning one would make Postgres call
//!    it once per row); in a top-level SELECT replaced by
//!    `(SELECT <id>::bigint AS unique_id)`, which keeps the column name
//!    Postgres gives the call.
//!
//! Anywhere else (a subquery, a SELECT with FROM, UPDATE, RETURNING,
//! ON CONFLICT, WITH, a DEFAULT in DDL, PREPARE) the call is refused with the
//! reason: one id for many rows would be a plausible wrong answer.

use parser_ffi::view::{self, FuncCall, Node, NodeRef, SelectStmt, Walk};
use parser_ffi::{ParseError, ParseTree};

/// The schema and name of the function.
pub const SCHEMA: &str = "pgdog";
pub const NAME: &str = "unique_id";

/// Why a statement's `pgdog.unique_id()` cannot be replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    #[error("pgdog.unique_id() takes no arguments")]
    Arguments,
    #[error(
        "pgdog.unique_id() is answered by pgshard only where Postgres calls it once: a value in \
         INSERT ... VALUES rows, or a SELECT with no FROM; here it is {0}, where Postgres would \
         call it once per row; make the id with SELECT pgdog.unique_id() first and use the value"
    )]
    Placement(&'static str),
    #[error("the statement calling pgdog.unique_id() could not be parsed: {0}")]
    Parse(#[from] ParseError),
}

/// How one call is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    /// `<id>::bigint`.
    Literal,
    /// `(SELECT <id>::bigint AS unique_id)`: the column keeps its name.
    Named,
}

/// The calls of one statement text, in text order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calls {
    /// Byte range of each call (`pgdog.unique_id()`) and its replacement.
    spans: Vec<(usize, usize, Form)>,
    /// The largest parameter number (`$n`) of the text; 0 when none.
    pub params: usize,
}

/// Whether `sql` may call `pgdog.unique_id()`: a cheap test on the bytes
/// (`unique_id` and `pgdog` in any case), before any parse.
pub fn mentions(sql: &[u8]) -> bool {
    let unique_id = memchr::memchr_iter(b'_', sql).any(|at| {
        let (Some(before), Some(after)) = (at.checked_sub(6), sql.get(at + 1..at + 3)) else {
            return false;
        };
        sql[before..at].eq_ignore_ascii_case(b"unique") && after.eq_ignore_ascii_case(b"id")
    });
    unique_id && sql.windows(5).any(|w| w.eq_ignore_ascii_case(b"pgdog"))
}

/// The calls of `pgdog.unique_id()` in `sql`; `None` when there is none.
pub fn find(sql: &str) -> Result<Option<Calls>, RewriteError> {
    let tree = ParseTree::parse(sql)?;
    let mut found = Found::default();
    let mut total = 0;
    let mut params = 0;
    for raw in tree.statements() {
        let Some(stmt) = raw.stmt() else { continue };
        params = params.max(max_param(stmt));
        let calls = count(stmt)?;
        total += calls;
        if calls > 0 {
            found.statement(stmt);
        }
    }
    if total == 0 {
        return Ok(None);
    }
    if found.calls.len() < total {
        return Err(RewriteError::Placement(found.why.unwrap_or(ELSEWHERE)));
    }
    let tokens = parser_ffi::scan(sql)?;
    let mut spans = Vec::with_capacity(found.calls.len());
    for (start, form) in found.calls {
        let mut after = tokens.iter().filter(|t| t.start > start);
        let open = after.find(|t| &sql[t.start..t.end] == "(");
        let close = after.find(|t| &sql[t.start..t.end] == ")");
        match (open, close) {
            (Some(_), Some(close)) => spans.push((start, close.end, form)),
            _ => return Err(RewriteError::Arguments),
        }
    }
    spans.sort_unstable();
    Ok(Some(Calls { spans, params }))
}

const ELSEWHERE: &str = "in a part of the statement other than those";

impl Calls {
    /// How many ids the text needs.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// `sql` with the calls replaced by `ids` (one per call, in text order).
    pub fn apply(&self, sql: &str, ids: &[i64]) -> String {
        let values: Vec<String> = ids.iter().map(i64::to_string).collect();
        self.replace(sql, &values)
    }

    /// `sql` with the calls replaced by parameters after the client's
    /// `after` ones: `$<after + 1>`, ... (for a prepared statement: each
    /// Bind gets the ids as its last values).
    pub fn apply_params(&self, sql: &str, after: usize) -> String {
        let values: Vec<String> = (1..=self.spans.len())
            .map(|i| format!("${}", after + i))
            .collect();
        self.replace(sql, &values)
    }

    fn replace(&self, sql: &str, values: &[String]) -> String {
        let mut out = String::with_capacity(sql.len() + 32 * self.spans.len());
        let mut at = 0;
        for (&(start, end, form), value) in self.spans.iter().zip(values) {
            out.push_str(&sql[at..start]);
            match form {
                Form::Literal => out.push_str(&format!("{value}::bigint")),
                Form::Named => out.push_str(&format!("(SELECT {value}::bigint AS {NAME})")),
            }
            at = end;
        }
        out.push_str(&sql[at..]);
        out
    }
}

fn ours(call: FuncCall<'_>) -> bool {
    let names = call.funcname();
    let name_at = |i: usize| match names.get(i).map(Node::kind) {
        Some(NodeRef::String(name)) => name.sval(),
        _ => None,
    };
    names.len() == 2 && name_at(0) == Some(SCHEMA) && name_at(1) == Some(NAME)
}

/// The calls anywhere under `root`; an error for a call with arguments.
fn count(root: Node<'_>) -> Result<usize, RewriteError> {
    let mut total = 0;
    let mut arguments = false;
    view::walk(root, |node| {
        if let NodeRef::FuncCall(call) = node {
            if ours(call) {
                total += 1;
                arguments |= !call.args().is_empty()
                    || call.agg_star()
                    || call.agg_distinct()
                    || call.over().is_some()
                    || call.agg_filter().is_some()
                    || !call.agg_order().is_empty();
            }
        }
        Walk::Continue
    });
    if arguments {
        return Err(RewriteError::Arguments);
    }
    Ok(total)
}

/// The calls in places where replacing them is exact, and why another
/// place was not.
#[derive(Default)]
struct Found {
    calls: Vec<(usize, Form)>,
    why: Option<&'static str>,
}

impl Found {
    fn statement(&mut self, stmt: Node<'_>) {
        match stmt.kind() {
            NodeRef::SelectStmt(select) => self.select(select, Form::Named),
            NodeRef::InsertStmt(insert) => {
                if let Some(NodeRef::SelectStmt(select)) = insert.select_stmt().map(Node::kind) {
                    self.select(select, Form::Literal);
                }
                let parts = [
                    insert.on_conflict_clause().map(|c| c.as_node()),
                    insert.returning_clause().map(|c| c.as_node()),
                    insert.with_clause().map(|c| c.as_node()),
                ];
                if parts.into_iter().flatten().any(has_call) {
                    self.why("in ON CONFLICT, RETURNING or WITH");
                }
            }
            _ => self.why("in a statement other than SELECT or INSERT"),
        }
    }

    fn select(&mut self, select: SelectStmt<'_>, form: Form) {
        if select
            .with_clause()
            .is_some_and(|with| has_call(with.as_node()))
        {
            self.why("in a WITH query");
        }
        if !select.values_lists().is_empty() {
            for row in select.values_lists().iter().flatten() {
                self.values(row, Form::Literal);
            }
            return;
        }
        let once = select.from_clause().is_empty()
            && select.group_clause().is_empty()
            && select.having_clause().is_none()
            && select.window_clause().is_empty()
            && select.larg().is_none()
            && select.into_clause().is_none();
        if !once {
            if has_call(select.as_node()) {
                self.why(
                    "in a SELECT with FROM, GROUP BY, HAVING, a window, INTO or a set operation",
                );
            }
            return;
        }
        if let Some(targets) = select.target_list().as_node() {
            if other_call(targets) {
                self.why("beside another function call in the SELECT list (it could return a set)");
                return;
            }
            self.values(targets, form);
        }
        if let Some(condition) = select.where_clause() {
            self.values(condition, form);
        }
    }

    /// The calls in an expression evaluated once, outside subqueries.
    fn values(&mut self, root: Node<'_>, form: Form) {
        let mut in_subquery = false;
        view::walk(root, |node| match node {
            NodeRef::FuncCall(call) if ours(call) => {
                self.calls.push((call.location().max(0) as usize, form));
                Walk::SkipChildren
            }
            NodeRef::SubLink(sublink) => {
                in_subquery |= has_call(sublink.as_node());
                Walk::SkipChildren
            }
            _ => Walk::Continue,
        });
        if in_subquery {
            self.why("in a subquery");
        }
    }

    fn why(&mut self, why: &'static str) {
        self.why.get_or_insert(why);
    }
}

/// The largest `$n` under `root`.
fn max_param(root: Node<'_>) -> usize {
    let mut max = 0;
    view::walk(root, |node| {
        if let NodeRef::ParamRef(param) = node {
            max = max.max(param.number().max(0) as usize);
        }
        Walk::Continue
    });
    max
}

fn has_call(root: Node<'_>) -> bool {
    count(root).unwrap_or(1) > 0
}

/// Whether a function other than `pgdog.unique_id()` is called under `root`.
fn other_call(root: Node<'_>) -> bool {
    let mut other = false;
    view::walk(root, |node| match node {
        NodeRef::FuncCall(call) if !ours(call) => {
            other = true;
            Walk::Stop
        }
        NodeRef::SubLink(_) => Walk::SkipChildren,
        _ => Walk::Continue,
    });
    other
}

#[cfg(test)]
mod tests;
