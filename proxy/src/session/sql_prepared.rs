//! SQL-level prepared statements under pooling, the pure part: the
//! statement pgshard prepares on servers for a client's `PREPARE name
//! [(types)] AS statement` (`__pgshard_<id>`, shared by every client that
//! prepares the same text with the same type list, ids drawn with the
//! protocol-level statements' so that names never collide and a server's
//! [`crate::conn::server::prepared_set::PreparedSet`] holds both), each
//! client's names for them, and what an EXECUTE's arguments are for
//! routing, LIMIT and HAVING. The session's side is `sql_prepare.rs`
//! (PREPARE, statements prepared on demand), `sql_execute.rs` (EXECUTE
//! routed and merged as its statement) and `sql_extended.rs` (the three
//! through Parse/Bind/Execute).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use router::cache::Lookup;
use router::merge::{Bound, MergePlan, Operand, Predicate};
use router::prepared::ArgValue;
use router::route::{Overrides, ParamValue, ParamValues, RouteError, RoutePlan, Routed};
use router::sharding::Sharding;
use router::summary::Summary;

use crate::conn::server::prepared_set;
use crate::errors::ClientError;
use crate::execute::merge::Window;
use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::protocol::sqlstate;

/// One statement as pgshard prepares it on servers with SQL PREPARE.
#[derive(Debug)]
pub struct SqlStatement {
    pub id: u64,
    /// `__pgshard_<id>`
    pub name: String,
    /// `PREPARE __pgshard_<id> <types> AS <body>`: prepares it on a server.
    pub prepare: String,
    /// The type list as the client wrote it (`(int8, text)`, or empty).
    pub types: String,
    /// The statement prepared, as the client wrote it.
    pub body: String,
    /// The declared parameter types as casts name them (from the summary).
    pub declared: Vec<Option<String>>,
    /// Running it leaves session state on the server (an advisory lock):
    /// the server needs a reset before another client gets it.
    pub leaves_state: bool,
    /// The AST cache's lookup of `body`, made at its first use (`None`: it
    /// does not parse, which a validated statement always does).
    pub route: OnceLock<Option<Lookup>>,
    /// The body's summary with the declared types, and its routing plan
    /// (see [`TypedRoute`]), made at its first use.
    pub typed: OnceLock<Option<TypedRoute>>,
    /// What running it on several shards needs, planned once.
    pub merge: OnceLock<ExecuteMerge>,
    /// How many parameters it has, counted once.
    count: OnceLock<usize>,
}

impl SqlStatement {
    pub fn new(id: u64, types: &str, body: &str, declared: Vec<Option<String>>) -> SqlStatement {
        let name = prepared_set::server_name(id);
        let separator = if types.is_empty() { "" } else { " " };
        SqlStatement {
            prepare: format!("PREPARE {name}{separator}{types} AS {body}"),
            name,
            id,
            types: types.to_owned(),
            body: body.to_owned(),
            declared,
            leaves_state: crate::session::session_effects::classify(body.as_bytes()).leaves_state,
            route: OnceLock::new(),
            typed: OnceLock::new(),
            merge: OnceLock::new(),
            count: OnceLock::new(),
        }
    }

    /// How many parameters it has (an EXECUTE must give as many
    /// arguments, unless it has none).
    pub fn parameters(&self) -> usize {
        *self
            .count
            .get_or_init(|| router::prepared::parameter_count(&self.body, self.declared.len()))
    }

    /// The key the shared registry knows it by.
    pub fn key(types: &str, body: &str) -> String {
        format!("{types}\0{body}")
    }
}

/// A prepared statement's summary with its declared parameter types read
/// as casts ([`router::prepared::with_declared_types`]), planned for the
/// first sharding model it is routed with (as a cache entry's plan is).
#[derive(Debug)]
pub struct TypedRoute {
    summary: Summary,
    plan: OnceLock<(Arc<Sharding>, RoutePlan)>,
}

impl TypedRoute {
    pub fn new(summary: Summary) -> TypedRoute {
        TypedRoute {
            summary,
            plan: OnceLock::new(),
        }
    }

    pub fn route(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Arc<Sharding>,
    ) -> Result<Routed, RouteError> {
        match self.plan.get() {
            Some((planned, plan)) if Arc::ptr_eq(planned, sharding) || **planned == **sharding => {
                plan.route(params, overrides, sharding)
            }
            Some(_) => router::route::route_all(&self.summary, params, overrides, sharding),
            None => {
                let plan = RoutePlan::new(&self.summary, sharding);
                let routed = plan.route(params, overrides, sharding);
                let _ = self.plan.set((Arc::clone(sharding), plan));
                routed
            }
        }
    }
}

/// What a prepared statement's rows need on several shards.
#[derive(Debug, Clone)]
pub enum ExecuteMerge {
    Concatenated,
    /// Merged by `plan`; the shards run `shard` instead when the plan
    /// rewrites the statement.
    Merged {
        plan: Arc<MergePlan>,
        shard: Option<ShardRun>,
    },
    Refused(ClientError),
}

/// The statement the shards run instead of a prepared one whose merge
/// rewrites it (hidden sort or group columns; a LIMIT's or HAVING's
/// parameters may be gone): prepared with the parameters it still uses,
/// renumbered ([`router::prepared::renumbered`]), with their declared
/// types.
#[derive(Debug, Clone)]
pub struct ShardRun {
    pub statement: Arc<SqlStatement>,
    /// For each of its parameters, the prepared statement's (0-based).
    pub used: Vec<usize>,
    /// How many parameters the prepared statement has.
    pub of: usize,
}

impl ShardRun {
    /// The EXECUTE of it for an EXECUTE of the prepared statement whose
    /// text after the name is `args` (`(1, 'a')`, or nothing): its
    /// arguments for the parameters it uses. `None` when the arguments are
    /// not the statement's count (Postgres refuses those: the prepared
    /// statement is run, to say so) or cannot be told apart; a statement
    /// without parameters ignores them, as Postgres does.
    pub fn execute(&self, args: &str) -> Option<String> {
        let args = args.trim();
        let name = &self.statement.name;
        if self.of == 0 {
            // Postgres ignores the arguments of a statement without
            // parameters.
            return Some(format!("EXECUTE {name}"));
        }
        let items = match args.is_empty() {
            true => Vec::new(),
            false => router::prepared::list_items(args)?,
        };
        if items.len() != self.of {
            return None;
        }
        if self.used.is_empty() {
            return Some(format!("EXECUTE {name}"));
        }
        let used: Option<Vec<&str>> = (self.used.iter())
            .map(|&i| items.get(i).and_then(|&(a, b)| args.get(a..b)))
            .collect();
        Some(format!("EXECUTE {name}({})", used?.join(", ")))
    }
}

/// One client's names for SQL-prepared statements.
#[derive(Debug, Default)]
pub struct SqlNames {
    by_name: HashMap<String, Arc<SqlStatement>>,
}

impl SqlNames {
    pub fn get(&self, name: &str) -> Option<&Arc<SqlStatement>> {
        self.by_name.get(name)
    }

    /// The id of the statement `name` means.
    pub fn id_of(&self, name: &[u8]) -> Option<u64> {
        let name = std::str::from_utf8(name).ok()?;
        self.by_name.get(name).map(|statement| statement.id)
    }

    pub fn contains(&self, name: &[u8]) -> bool {
        std::str::from_utf8(name).is_ok_and(|name| self.by_name.contains_key(name))
    }

    /// Name `statement` `name`; a name that exists is Postgres's 42P05.
    pub fn insert(&mut self, name: &str, statement: Arc<SqlStatement>) -> Result<(), ClientError> {
        if self.by_name.contains_key(name) {
            return Err(duplicate(name));
        }
        self.by_name.insert(name.to_owned(), statement);
        Ok(())
    }

    pub fn remove(&mut self, name: &[u8]) -> Option<Arc<SqlStatement>> {
        self.by_name.remove(std::str::from_utf8(name).ok()?)
    }

    pub fn clear(&mut self) {
        self.by_name.clear();
    }

    /// The client's name for the server's statement `id` (its own, or the
    /// one its merge runs instead).
    fn client_name(&self, id: u64) -> Option<&str> {
        self.by_name.iter().find_map(|(name, statement)| {
            let merged = match statement.merge.get() {
                Some(ExecuteMerge::Merged {
                    shard: Some(shard), ..
                }) => shard.statement.id == id,
                _ => false,
            };
            (statement.id == id || merged).then_some(name.as_str())
        })
    }

    /// A server's ErrorResponse (`message`, whole) that names a statement
    /// the client prepared by pgshard's name (`"__pgshard_12"`: Postgres
    /// quotes it), with the client's name instead; `None` when it names
    /// none.
    pub fn client_error(&self, message: &BackendFrame) -> Option<BackendFrame> {
        const QUOTED: &[u8] = b"\"__pgshard_";
        let BackendMessage::ErrorResponse(fields) = message.message() else {
            return None;
        };
        memchr::memmem::find(fields.0, QUOTED)?;
        message.with_body(|body, out| self.rename(body, out))
    }

    /// `body` with each `"__pgshard_<id>"` of a statement the client
    /// prepared given the client's name, written to `out`.
    fn rename(&self, body: &[u8], out: &mut bytes::BytesMut) {
        const QUOTED: &[u8] = b"\"__pgshard_";
        let mut rest = body;
        while let Some(at) = memchr::memmem::find(rest, QUOTED) {
            let digits = &rest[at + QUOTED.len()..];
            let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
            let name = std::str::from_utf8(&digits[..len])
                .ok()
                .and_then(|id| id.parse().ok())
                .filter(|_| digits.get(len) == Some(&b'"'))
                .and_then(|id| self.client_name(id));
            let end = at + QUOTED.len() + len;
            match name {
                Some(name) => {
                    out.extend_from_slice(&rest[..at + 1]);
                    out.extend_from_slice(name.as_bytes());
                }
                None => out.extend_from_slice(&rest[..end]),
            }
            rest = &rest[end..];
        }
        out.extend_from_slice(rest);
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Postgres's error for a name already prepared.
pub fn duplicate(name: &str) -> ClientError {
    ClientError::new(
        sqlstate::DUPLICATE_PREPARED_STATEMENT,
        format!("prepared statement \"{name}\" already exists"),
    )
}

/// The values routing reads for an EXECUTE's arguments: known ones as
/// text parameters, the rest NULL (which restricts nothing).
pub fn route_params(values: &[ArgValue]) -> ParamValues<'_> {
    values
        .iter()
        .map(|value| match value.text() {
            Some(text) => ParamValue::Text(text.as_bytes()),
            None => ParamValue::Null,
        })
        .collect()
}

/// The rows `plan`'s LIMIT and OFFSET ask for, parameters read from an
/// EXECUTE's arguments: refused when one is not known.
pub fn window(plan: &MergePlan, values: &[ArgValue]) -> Result<Window, ClientError> {
    let bound = |bound: Option<Bound>| -> Result<Option<u64>, ClientError> {
        let n = match bound {
            None => return Ok(None),
            Some(Bound::Value(n)) => return Ok(Some(u64::try_from(n).unwrap_or(0))),
            Some(Bound::Param(n)) => n,
        };
        match argument(values, n)? {
            None => Ok(None),
            Some(text) => match text.trim().parse::<i64>() {
                Ok(value) => Ok(Some(u64::try_from(value).unwrap_or(0))),
                Err(_) => Err(unknown(n, "LIMIT or OFFSET")),
            },
        }
    };
    Ok(Window {
        offset: bound(plan.limit.offset)?.unwrap_or(0),
        count: bound(plan.limit.count)?,
    })
}

/// The arguments a cross-shard HAVING reads, as text by parameter number
/// (0-based): refused when one is not known.
pub fn having_params(
    plan: &MergePlan,
    values: &[ArgValue],
) -> Result<Vec<Option<String>>, ClientError> {
    let Some(predicate) = &plan.having else {
        return Ok(Vec::new());
    };
    let mut params = vec![None; values.len()];
    let mut stack = vec![predicate];
    while let Some(predicate) = stack.pop() {
        let operands: [Option<&Operand>; 2] = match predicate {
            Predicate::And(parts) | Predicate::Or(parts) => {
                stack.extend(parts);
                continue;
            }
            Predicate::Not(part) => {
                stack.push(part);
                continue;
            }
            Predicate::IsNull { operand, .. } => [Some(operand), None],
            Predicate::Compare { left, right, .. } => [Some(left), Some(right)],
        };
        for operand in operands.into_iter().flatten() {
            if let Operand::Param(n) = operand {
                let text = argument(values, *n)?;
                if let Some(slot) = usize::from(*n)
                    .checked_sub(1)
                    .and_then(|i| params.get_mut(i))
                {
                    *slot = text.map(str::to_owned);
                }
            }
        }
    }
    Ok(params)
}

/// Argument `$n`'s text (`None`: NULL), refused when it is not known.
fn argument(values: &[ArgValue], n: u16) -> Result<Option<&str>, ClientError> {
    match usize::from(n).checked_sub(1).and_then(|i| values.get(i)) {
        Some(ArgValue::Text(text)) => Ok(Some(text)),
        Some(ArgValue::Null) => Ok(None),
        Some(ArgValue::Unknown) => Err(unknown(n, "a merge across shards")),
        None => Err(ClientError::new(
            sqlstate::SYNTAX_ERROR,
            format!("wrong number of parameters for prepared statement: there is no argument {n}"),
        )),
    }
}

fn unknown(n: u16, what: &str) -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!("argument {n} of this EXECUTE is not a literal, and {what} needs its value: pgshard cannot merge the shards' rows exactly without it; pass a literal (a number or a quoted string)"),
    )
}

#[cfg(test)]
mod tests;
