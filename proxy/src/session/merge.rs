//! Cross-shard SELECTs in a session: the merge a fanned-out simple query
//! needs (planned by [`router::merge`]), refused with 0A000 when pgshard
//! cannot answer it exactly, and the shards' text ordering, learned once
//! per database.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::cache::Entry;
use router::copy::{plan_copy_out, CopyOut, Format};
use router::merge::{self, Bound, MergePlan, Operand, Predicate, Shape};
use router::sharding::Sharding;
use router::summary::{StatementKind, Summary};

use super::fan_out::{MergeRequest, Reply};
use super::statements::{Statement, StatementMerge};
use super::Session;
use crate::errors::ClientError;
use crate::execute::merge::values;
use crate::execute::merge::values::numeric::Decimal;
use crate::execute::merge::{CopyRows, Window};
use crate::pool::Pooled;
use crate::protocol::backend::BackendKind;
use crate::protocol::frontend::Bind;
use crate::protocol::sqlstate;
use crate::protocol::{messages, rows};

/// What the shards' collation must be for byte order to be Postgres's:
/// `datcollate` (libc) or `datlocale` (builtin provider, Postgres 17+).
const COLLATION_QUERY: &str = "SELECT datcollate, to_jsonb(d)->>'datlocprovider', to_jsonb(d)->>'datlocale' FROM pg_database d WHERE datname = current_database()";

/// A fanned-out statement's rows: streamed as they come, or merged.
pub(super) enum Rows {
    Concatenated,
    /// Merged; the shards run `sql`.
    Merged {
        sql: Option<String>,
        request: MergeRequest,
    },
}

/// The merge a simple query that runs on several shards needs; `Err` when
/// its answer cannot be exact.
pub(super) fn simple_query_rows(
    entry: &Entry,
    sql: &str,
    sharding: &Sharding,
) -> Result<Rows, ClientError> {
    if entry.concatenates.get().is_some() {
        return Ok(Rows::Concatenated);
    }
    let (planned, by_key) = plan_rows(&entry.summary, sql, sharding);
    let Some(mut plan) = planned? else {
        if !by_key {
            // Holds for every config: the cache entry is shared by all.
            let _ = entry.concatenates.set(());
        }
        return Ok(Rows::Concatenated);
    };
    let window = window(&plan, None)?;
    if let Some(n) = plan
        .having
        .as_ref()
        .and_then(|h| having_params(h).into_iter().max())
    {
        return Err(ClientError::new(
            sqlstate::SYNTAX_ERROR,
            format!("there is no parameter ${n} in a simple query"),
        ));
    }
    let sql = plan.shard_sql.take();
    let request = MergeRequest {
        plan: Arc::new(plan),
        window,
        params: Vec::new(),
    };
    Ok(Rows::Merged { sql, request })
}

/// How a `COPY ... TO STDOUT` on several shards joins their outputs
/// (`None`: it writes no output to join), or why it cannot.
pub(super) fn copy_out(sql: &str, sharding: &Sharding) -> Result<Option<CopyOut>, ClientError> {
    plan_copy_out(sql, sharding)
        .map_err(|why| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string()))
}

/// A simple-query `COPY ... TO STDOUT` on several shards: what the shards
/// run instead (a merged query's SELECT, and whether its rows come in
/// binary), and how their replies become the client's.
pub(super) fn copy_out_reply(
    sql: &str,
    sharding: &Sharding,
) -> Result<(Option<(String, bool)>, Reply), ClientError> {
    let Some(mut out) = copy_out(sql, sharding)? else {
        return Ok((None, Reply::Concat(Vec::new())));
    };
    let Some(merge) = out.merge.take() else {
        return Ok((None, Reply::CopyOut(out)));
    };
    let copy = CopyRows::new(out.format, out.header, &merge);
    let plan = merge.plan;
    let request = MergeRequest {
        window: window(&plan, None)?,
        plan: Arc::new(plan),
        params: Vec::new(),
    };
    let binary = out.format == Format::Binary;
    Ok((Some((merge.sql, binary)), Reply::CopyRows(request, copy)))
}

/// What an EXPLAIN sends the shards (`None`: the client's text) and the
/// lines pgshard puts before their plans.
pub(super) type Explain = (Option<String>, Vec<String>);

/// An EXPLAIN run on `shards`: the text the shards run (`None`: the
/// client's) and the lines pgshard adds before their plans; `Err` when the
/// statement explained would be refused.
pub(super) fn explain_rows(
    summary: &Summary,
    sql: &str,
    shards: &[usize],
    sharding: &Sharding,
) -> Result<Option<Explain>, ClientError> {
    let [statement] = summary.statements.as_slice() else {
        return Ok(None);
    };
    if statement.kind != StatementKind::Explain {
        return Ok(None);
    }
    let Some(explained) = merge::explain(sql, sharding) else {
        return Ok(None);
    };
    let list: Vec<String> = shards.iter().map(usize::to_string).collect();
    let mut lines = vec![format!(
        "pgshard: runs on {} shards ({}); each shard's plan follows",
        shards.len(),
        list.join(", ")
    )];
    match &explained.shape {
        Shape::Refuse(why) => {
            return Err(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                why.to_string(),
            ))
        }
        Shape::Concat => lines.push("pgshard: rows concatenated (no merge needed)".into()),
        Shape::Merge(plan) => lines.extend(plan_lines(plan)),
    }
    if let Some(shard_sql) = &explained.shard_sql {
        lines.push(format!("pgshard: shards run: {shard_sql}"));
    }
    Ok(Some((
        explained.shard_sql.clone(),
        if explained.text { lines } else { Vec::new() },
    )))
}

/// A merge plan in words, for EXPLAIN.
fn plan_lines(plan: &MergePlan) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(columns) = &plan.groups {
        let keys = columns.iter().filter(|c| **c == merge::Column::Key).count();
        lines.push(format!(
            "pgshard: partial groups merged on {keys} key column(s), aggregates combined ({} column(s))",
            columns.len() - keys
        ));
    }
    if plan.having.is_some() {
        lines.push("pgshard: HAVING evaluated on the merged groups".into());
    }
    if plan.distinct {
        lines.push("pgshard: DISTINCT over the merged rows".into());
    }
    if !plan.distinct_on.is_empty() {
        lines.push("pgshard: DISTINCT ON: the first merged row per key".into());
    }
    if !plan.order.is_empty() {
        let how = match plan.groups.is_some() || plan.distinct {
            true => "merged groups sorted",
            false => "k-way merge of the shards' sorted rows",
        };
        lines.push(format!(
            "pgshard: ORDER BY ({} key(s)): {how}",
            plan.order.len()
        ));
    }
    let bound = |b: Option<Bound>| match b {
        None => "none".to_owned(),
        Some(Bound::Value(n)) => n.to_string(),
        Some(Bound::Param(n)) => format!("${n}"),
    };
    if plan.limit.count.is_some() || plan.limit.offset.is_some() {
        lines.push(format!(
            "pgshard: LIMIT {} OFFSET {} applied to the merged rows",
            bound(plan.limit.count),
            bound(plan.limit.offset)
        ));
    }
    if plan.hidden > 0 {
        lines.push(format!(
            "pgshard: {} hidden column(s) added for sorting or grouping, stripped from the rows",
            plan.hidden
        ));
    }
    lines
}

/// The merge plan of a statement that runs on several shards of
/// `sharding` (`None`: its rows concatenate), and whether it depends on
/// which columns are sharding keys.
pub(super) fn plan_rows(
    summary: &Summary,
    sql: &str,
    sharding: &Sharding,
) -> (Result<Option<MergePlan>, ClientError>, bool) {
    let [statement] = summary.statements.as_slice() else {
        return (Ok(None), false);
    };
    if statement.kind == (StatementKind::Copy { to: true }) {
        // Only the simple protocol joins headers and binary framing.
        let joined = match copy_out(sql, sharding) {
            Ok(Some(out)) if out.header || out.format == Format::Binary || out.merge.is_some() => Err(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "COPY TO STDOUT with HEADER, in binary, or of a query whose rows are merged (ORDER BY, LIMIT, aggregates, DISTINCT) across shards runs in the simple protocol only",
            )),
            Ok(_) => Ok(None),
            Err(error) => Err(error),
        };
        return (joined, false);
    }
    // After data-modifying WITH queries: concatenated or refused.
    let after_writes = statement.write && !statement.cte_writes.is_empty();
    if statement.kind != StatementKind::Select || (statement.write && !after_writes) {
        return (Ok(None), false);
    }
    let planned = merge::plan(sql, sharding);
    let result = match planned.shape {
        Shape::Concat => Ok(None),
        Shape::Refuse(why) => Err(ClientError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            why.to_string(),
        )),
        Shape::Merge(_) if after_writes => Err(ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, "a SELECT whose rows need combining across shards (ORDER BY, LIMIT, aggregates, DISTINCT) after a data-modifying WITH query is not supported: send the data-modifying query as a statement of its own, or restrict the statement to one shard with its sharding key")),
        Shape::Merge(plan) => Ok(Some(plan)),
    };
    (result, planned.by_key)
}

/// A multi-shard Bind's merge: the plan, the rows its parameters ask for,
/// the statement the shards run instead of the client's, and the
/// parameters HAVING reads, as text.
#[derive(Debug)]
pub struct BindMerge {
    pub plan: Arc<MergePlan>,
    pub window: Window,
    pub shard_statement: Option<Arc<Statement>>,
    pub params: Vec<Option<String>>,
}

/// The parameter numbers a HAVING predicate reads.
fn having_params(predicate: &Predicate) -> Vec<u16> {
    let mut found = Vec::new();
    let mut operand = |o: &Operand| {
        if let Operand::Param(n) = o {
            found.push(*n);
        }
    };
    let mut stack = vec![predicate];
    while let Some(p) = stack.pop() {
        match p {
            Predicate::And(parts) | Predicate::Or(parts) => stack.extend(parts),
            Predicate::Not(part) => stack.push(part),
            Predicate::IsNull { operand: o, .. } => operand(o),
            Predicate::Compare { left, right, .. } => {
                operand(left);
                operand(right);
            }
        }
    }
    found
}

/// The Bind's parameters HAVING reads, as text: a binary one must have a
/// declared integer, numeric or text type.
pub(super) fn bind_text_params(
    plan: &MergePlan,
    bind: &Bind,
    types: &[u32],
) -> Result<Vec<Option<String>>, ClientError> {
    let Some(predicate) = &plan.having else {
        return Ok(Vec::new());
    };
    let mut params = vec![None; bind.params.len()];
    for n in having_params(predicate) {
        let at = usize::from(n).saturating_sub(1);
        let Some(Some(value)) = bind.params.get(at) else {
            continue;
        };
        let text = match (bind.param_format(at), types.get(at).copied().unwrap_or(0)) {
            (0, _) | (_, 25 | 1043 | 19) => Some(String::from_utf8_lossy(value).into_owned()),
            (_, 20 | 21 | 23) => values::integer(value, true).ok().map(|v| v.to_string()),
            (_, 1700) => Decimal::from_binary(value)
                .ok()
                .map(|d| d.to_text(d.scale())),
            _ => None,
        };
        let Some(text) = text else {
            return Err(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("parameter ${n} of a cross-shard HAVING is binary without a declared integer, numeric or text type: declare its type in Parse or send it as text"),
            ));
        };
        params[at] = Some(text);
    }
    Ok(params)
}

/// The rows `plan`'s LIMIT and OFFSET ask for, parameters read from `bind`
/// (`None`: a simple query, which has none).
pub(super) fn window(plan: &MergePlan, bind: Option<&Bind>) -> Result<Window, ClientError> {
    Ok(Window {
        offset: bound_value(plan.limit.offset, bind)?.unwrap_or(0),
        count: bound_value(plan.limit.count, bind)?,
    })
}

/// A LIMIT or OFFSET bound's value.
fn bound_value(bound: Option<Bound>, bind: Option<&Bind>) -> Result<Option<u64>, ClientError> {
    let (n, bind) = match (bound, bind) {
        (None, _) => return Ok(None),
        (Some(Bound::Value(n)), _) => return Ok(Some(u64::try_from(n).unwrap_or(0))),
        (Some(Bound::Param(n)), None) => {
            return Err(ClientError::new(
                sqlstate::SYNTAX_ERROR,
                format!("there is no parameter ${n} in a simple query"),
            ))
        }
        (Some(Bound::Param(n)), Some(bind)) => (usize::from(n).saturating_sub(1), bind),
    };
    let Some(value) = bind.params.get(n) else {
        return Err(ClientError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!("the Bind has no parameter ${}", n + 1),
        ));
    };
    let Some(value) = value else {
        return Ok(None);
    };
    let binary = bind.param_format(n) == 1;
    let value = values::integer(value, binary)
        .map_err(|e| ClientError::new(sqlstate::INVALID_PARAMETER_VALUE, e.to_string()))?;
    Ok(Some(u64::try_from(value).unwrap_or(0)))
}

impl Session {
    /// The merge a Bind of `statement` (summarized as `summary`) running
    /// on several shards needs: `None` when its rows concatenate.
    pub(super) fn bind_merge(
        &self,
        statement: &Statement,
        summary: &Summary,
        bind: &Bind,
    ) -> Result<Option<BindMerge>, ClientError> {
        let plan_statement = || {
            let sql = self.analysed_text(&statement.query);
            let (planned, by_key) = plan_rows(summary, &sql, self.cluster.sharding());
            let merge = match planned {
                Ok(None) => StatementMerge::Concatenated,
                Err(error) => StatementMerge::Refused(error),
                Ok(Some(mut plan)) => {
                    let shard_statement = plan.shard_sql.take().map(|sql| {
                        self.shared.statements.get_or_insert(
                            &Bytes::from(sql),
                            &statement.param_types,
                            &self.shared.cache,
                            self.cluster.engine(),
                        )
                    });
                    StatementMerge::Merged {
                        plan: Arc::new(plan),
                        shard_statement,
                    }
                }
            };
            (merge, by_key)
        };
        // A plan that depends on the config's keys is not kept: the
        // statement is shared by every database.
        let fresh;
        let planned = match statement.merge.get() {
            Some(planned) => planned,
            None => match plan_statement() {
                (merge, true) => {
                    fresh = merge;
                    &fresh
                }
                (merge, false) => statement.merge.get_or_init(|| merge),
            },
        };
        match planned {
            StatementMerge::Concatenated => Ok(None),
            // (A Bind that starts a segment finishes such a statement on
            // the coordinator instead: `segment/bind.rs`.)
            StatementMerge::Refused(error) => Err(error.clone()),
            StatementMerge::Merged {
                plan,
                shard_statement,
            } => Ok(Some(BindMerge {
                window: window(plan, Some(bind))?,
                params: bind_text_params(plan, bind, &statement.param_types)?,
                plan: Arc::clone(plan),
                shard_statement: shard_statement.clone(),
            })),
        }
    }

    /// Whether this database's shards order text bytewise; asked of
    /// `servers[0]` the first time (a server that cannot say counts as no).
    pub(super) async fn bytewise_text(&mut self, server: Option<&mut Pooled>) -> bool {
        let database = self.info.database.clone();
        if let Some(known) = self
            .shared
            .bytewise_text
            .lock()
            .ok()
            .and_then(|m| m.get(&database).copied())
        {
            return known;
        }
        let Some(server) = server else {
            return false;
        };
        let Some(bytewise) = ask_collation(server).await else {
            return false;
        };
        if let Ok(mut known) = self.shared.bytewise_text.lock() {
            known.insert(database, bytewise);
        }
        bytewise
    }
}

/// Run [`COLLATION_QUERY`] on `server`: `None` if it fails.
async fn ask_collation(server: &mut Pooled) -> Option<bool> {
    let mut out = BytesMut::new();
    messages::query(&mut out, COLLATION_QUERY);
    server.conn.send(&out).await.ok()?;
    let mut row: Option<Vec<Option<String>>> = None;
    loop {
        let message = loop {
            if let Some(message) = server.conn.next_message().ok()? {
                break message;
            }
            if server.conn.fill().await.ok()? == 0 {
                return None;
            }
        };
        match message.kind() {
            BackendKind::DataRow => row = text_values(message.bytes()),
            BackendKind::ReadyForQuery => break,
            _ => {}
        }
    }
    let row = row?;
    let c_like = |name: &Option<String>| {
        matches!(
            name.as_deref(),
            Some("C" | "POSIX" | "C.UTF-8" | "C.utf8" | "ucs_basic")
        )
    };
    Some(match row.get(1).cloned().flatten().as_deref() {
        // libc (and servers from before locale providers).
        None | Some("c") => c_like(row.first()?),
        Some("b") => c_like(row.get(2)?),
        _ => false,
    })
}

/// A text-format DataRow's values.
fn text_values(message: &[u8]) -> Option<Vec<Option<String>>> {
    let row = rows::parse_row(message)?;
    let values = (0..row.values.len()).map(|c| {
        row.value(c)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    });
    Some(values.collect())
}
