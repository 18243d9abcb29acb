//! Rule 15: what stands behind the names a statement uses
//! ([`crate::catalog`]). A function it calls, its DO block, the triggers on
//! the table it writes and the sequences it advances run wherever the
//! statement runs, over that database's rows only, so:
//! - a function (transitively: the functions it calls, the views it reads)
//!   or DO block that reads or writes sharded, unknown or family tables is
//!   refused, naming the function and the table, unless the function is a
//!   `[[sharded_functions]]` entry: the call's key argument then places the
//!   statement on one database (as Citus's distributed functions); one
//!   that runs SQL built at run time, or is written in a language pgshard
//!   does not read, is refused as if it did;
//! - one that writes omnisharded tables (and reads no sharded one) runs on
//!   every database, as a write of those tables would: a statement that
//!   would otherwise go to any database goes to all; one that reads
//!   sharded tables is refused (each database would write its copy from
//!   its own rows);
//! - a write to a table with triggers is refused when a trigger's function
//!   reaches sharded, unknown or family tables, or writes omnisharded ones
//!   from a sharded table's row (the copies would diverge);
//! - `nextval` / `setval` / `currval` of a sequence that is not a sharded
//!   table's own (`serial` / identity) run on database 0, so that its
//!   values are unique across the cluster: a statement that goes to any
//!   database goes there, one routed elsewhere is refused;
//! - a plain view named anywhere but in schema changes is an error here:
//!   the proxy routes such statements by their expansion
//!   ([`crate::catalog::expand`]), which names none.
//!
//! Overrides (rule 2) and one-database clusters (rule 3) decide first.
//! Names are matched in any schema when unqualified; a call qualified with
//! `pg_catalog` is Postgres's own.

use std::collections::HashSet;

use crate::catalog::{Catalog, Reach, RelationKind};
use crate::sharding::Sharding;
use crate::summary::{Call, StatementKind, StatementSummary, TableRef, Value, ValueSource};

use super::tables::{classify, TableClass};
use super::{key_values, ParamValue, Route, RouteError};

/// How many functions (and views) one statement's calls are followed
/// through, transitively.
const MAX_FOLLOWED: usize = 256;

/// What rule 15 adds to a statement's plan.
#[derive(Debug, Clone, Default)]
pub(crate) struct Behind {
    /// Refused whatever its parameters.
    error: Option<RouteError>,
    /// Runs on every database (functions write omnisharded tables).
    everywhere: bool,
    /// Sequence names (`None`: not a constant) to look up per execution.
    sequences: Vec<Option<Value>>,
    /// Key arguments of `[[sharded_functions]]` calls: (function, its
    /// `[[sharded_tables]]` entry, the argument).
    keys: Vec<(String, usize, Option<Value>)>,
}

/// The sequence functions whose first argument names a sequence.
const SEQUENCE_FUNCTIONS: [&str; 3] = ["nextval", "setval", "currval"];

impl Behind {
    /// Rule 15 for `stmt` (not transaction control), `None` when it adds
    /// nothing. Inline: most statements call nothing and there is no
    /// catalog, which is decided here without a call.
    #[inline]
    pub(crate) fn plan(stmt: &StatementSummary, sharding: &Sharding) -> Option<Box<Behind>> {
        let do_block = matches!(stmt.kind, StatementKind::Do(_));
        if sharding.catalog.is_none() && stmt.calls.is_empty() && !do_block {
            // Nothing stands behind a name: no calls, no DO, no catalog.
            return None;
        }
        Behind::plan_names(stmt, sharding)
    }

    /// [`Behind::plan`] for a statement that calls something, runs a DO
    /// block, or meets a catalog.
    fn plan_names(stmt: &StatementSummary, sharding: &Sharding) -> Option<Box<Behind>> {
        // Schema changes run no query where they run, but a table created
        // from one (CREATE TABLE AS, materialized views).
        let runs_query = matches!(
            stmt.schema_change.as_deref(),
            Some(crate::summary::SchemaChange::CreateAs { .. })
        );
        if sharding.databases <= 1 || (matches!(stmt.kind, StatementKind::Ddl) && !runs_query) {
            return None;
        }
        let catalog = sharding.catalog.as_deref();
        let do_block = matches!(stmt.kind, StatementKind::Do(_));
        if catalog.is_none() && stmt.calls.is_empty() && !do_block {
            // Nothing stands behind a name: no calls, no DO, no catalog.
            return None;
        }
        let mut behind = Behind::default();
        let mut error = None;
        if !stmt.calls.is_empty() || do_block {
            let empty;
            let walked = match catalog {
                Some(catalog) => catalog,
                None => {
                    empty = Catalog::default();
                    &empty
                }
            };
            let mut walk = Walk::new(walked, sharding);
            for call in &stmt.calls {
                walk.call(call);
            }
            if let StatementKind::Do(code) = &stmt.kind {
                let reach = crate::catalog::reach::of_code(code, 0);
                walk.reach("this DO block", &reach);
            }
            let mut reached = walk.finish();
            behind.sequences = std::mem::take(&mut reached.sequences);
            behind.keys = std::mem::take(&mut reached.keys);
            error = reached.error();
            if error.is_none() && reached.writes_omnisharded.is_some() {
                if stmt.tables.iter().any(|t| is_sharded(t, sharding)) {
                    error = reached.omnisharded_from_sharded();
                } else {
                    behind.everywhere = true;
                }
            }
        }
        behind.error = error.or_else(|| {
            let catalog = catalog?;
            views_named(stmt, catalog)
                .or_else(|| materialized_from_sharded(stmt, catalog, sharding))
                .or_else(|| triggers(stmt, catalog, sharding))
        });
        let nothing = behind.error.is_none()
            && !behind.everywhere
            && behind.sequences.is_empty()
            && behind.keys.is_empty();
        (!nothing).then(|| Box::new(behind))
    }

    /// It runs on every database (what it calls writes omnisharded tables).
    pub(crate) fn everywhere(&self) -> bool {
        self.everywhere && self.error.is_none()
    }

    /// Apply rule 15 to the route the other rules chose.
    pub(crate) fn apply(
        &self,
        route: Route,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
    ) -> Result<Route, RouteError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let mut route = route;
        if self.everywhere && route == Route::Any {
            route = Route::All;
        }
        for (function, entry, value) in &self.keys {
            let database = match value {
                Some(value) => key_values::value_database(*entry, value, params, sharding)?,
                None => None,
            };
            let Some(database) = database else {
                return Err(RouteError::BehindName {
                    what: format!("function {function}"),
                    why: "its sharding key argument is not a constant or parameter here, so pgshard cannot tell which shard it runs on; pass the key as a literal or bind parameter".to_owned(),
                });
            };
            route = pin(route, database, || format!("function {function}"))?;
        }
        for value in &self.sequences {
            if let Some(name) = global_sequence(value.as_ref(), params, sharding) {
                route = pin(route, 0, || format!("sequence {name}"))?;
            }
        }
        Ok(route)
    }
}

/// `route` restricted to `database`: a statement for any database goes
/// there; one for another (or several) is refused.
fn pin(route: Route, database: usize, what: impl FnOnce() -> String) -> Result<Route, RouteError> {
    match route {
        Route::Any => Ok(Route::Shard(database)),
        Route::Shard(shard) if shard == database => Ok(route),
        other => Err(RouteError::BehindName {
            what: what(),
            why: format!(
                "it must run on shard {database}, but the rest of the statement runs on {}; send it in a statement of its own",
                super::describe(&other)
            ),
        }),
    }
}

/// The sequence a sequence function's argument names, when it is one
/// every database holds a copy of (not a sharded table's own): its values
/// are then drawn on database 0 only. A name pgshard does not know is
/// taken as such a sequence; one it cannot read (an expression, a binary
/// regclass) too.
fn global_sequence(
    value: Option<&Value>,
    params: &[ParamValue<'_>],
    sharding: &Sharding,
) -> Option<String> {
    let spelled = match value.map(|v| &v.source) {
        Some(ValueSource::Text { text, .. }) => text.clone(),
        Some(ValueSource::Param(n)) => match key_values::param(params, *n) {
            ParamValue::Text(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            ParamValue::Null => return None,
            ParamValue::Binary(_) => return Some(format!("${n}")),
        },
        Some(ValueSource::Null) => return None,
        Some(ValueSource::Integer { value, .. }) => value.to_string(),
        None => return Some("(an expression)".to_owned()),
    };
    let catalog = sharding.catalog.as_deref();
    let owner = catalog
        .and_then(|c| c.sequence(&spelled))
        .and_then(|r| match &r.kind {
            RelationKind::Sequence { owner } => owner.clone(),
            _ => None,
        });
    match owner {
        Some((schema, table, _)) => {
            let table = TableRef {
                schema: Some(schema),
                name: table,
                alias: None,
            };
            (!is_sharded(&table, sharding)).then_some(spelled)
        }
        None => Some(spelled),
    }
}

fn is_sharded(table: &TableRef, sharding: &Sharding) -> bool {
    matches!(
        classify(table, sharding),
        TableClass::Sharded | TableClass::Unknown | TableClass::Family { .. }
    )
}

/// The first plain view `stmt` names (other than a write's target, which
/// the expansion replaces, or a view with triggers), as an error.
fn views_named(stmt: &StatementSummary, catalog: &Catalog) -> Option<RouteError> {
    stmt.tables.iter().find_map(|table| {
        let (relation, _) = catalog.view(table.schema.as_deref(), &table.name)?;
        let is_target = stmt.target.as_ref().is_some_and(|t| t.name == table.name);
        if is_target
            && catalog
                .triggers(Some(&relation.schema), &relation.name)
                .next()
                .is_some()
        {
            return None;
        }
        Some(RouteError::BehindName {
            what: format!("view {}", table.name),
            why: "pgshard routes a statement that reads a view as the view's query; this form of statement is not read that way".to_owned(),
        })
    })
}

/// The first materialized view `stmt` names whose rows each database
/// computed from its own rows of sharded tables, when the config does not
/// say how its rows are sharded (read as a copy, it would answer from one
/// shard's part).
fn materialized_from_sharded(
    stmt: &StatementSummary,
    catalog: &Catalog,
    sharding: &Sharding,
) -> Option<RouteError> {
    let tables = stmt.tables.iter().chain(stmt.target.as_ref());
    tables.into_iter().find_map(|table| {
        if matches!(
            classify(table, sharding),
            TableClass::Sharded | TableClass::Family { .. } | TableClass::Unknown
        ) {
            return None;
        }
        let view = catalog
            .relations(table.schema.as_deref(), &table.name)
            .find_map(|r| match &r.kind {
                RelationKind::MaterializedView(view) => Some(std::sync::Arc::clone(view)),
                _ => None,
            })?;
        let mut walk = Walk::new(catalog, sharding);
        walk.reach("it", &view.reach);
        let (_, read) = walk.finish().sharded?;
        Some(RouteError::BehindName {
            what: format!("materialized view {}", table.name),
            why: format!("each shard holds its own rows of it, computed from its rows of {read}, which is sharded, but the config does not say how they are sharded; add a [[sharded_tables]] entry for {} by the sharding key it keeps (co-located with {read}), RELOAD, and read it then", table.name),
        })
    })
}

/// Rule 15 for the triggers on the table `stmt` writes.
fn triggers(stmt: &StatementSummary, catalog: &Catalog, sharding: &Sharding) -> Option<RouteError> {
    let target = stmt.target.as_ref()?;
    let from_sharded = is_sharded(target, sharding);
    for trigger in catalog.triggers(target.schema.as_deref(), &target.name) {
        let (schema, name) = &trigger.function;
        let mut walk = Walk::new(catalog, sharding);
        walk.call(&Call {
            schema: Some(schema.clone()),
            name: name.clone(),
            args: Vec::new(),
        });
        let reached = walk.finish();
        let error = reached
            .error()
            .or_else(|| {
                reached
                    .writes_omnisharded
                    .as_ref()
                    .filter(|_| from_sharded)
                    .and_then(|_| reached.omnisharded_from_sharded())
            })
            .or_else(|| {
                // It runs on the database of each row it fires for.
                reached.sequences.iter().find_map(|value| {
                    let name = global_sequence(value.as_ref(), &[], sharding)?;
                    Some(RouteError::BehindName {
                        what: format!("function {}", trigger.function.1),
                        why: format!("it draws from sequence {name}, which every database holds a copy of: rows written on different shards would get the same values"),
                    })
                })
            });
        if let Some(RouteError::BehindName { what, why }) = error {
            return Some(RouteError::BehindName {
                what: format!("trigger {} on {} (its {what})", trigger.name, target.name),
                why,
            });
        }
    }
    None
}

/// What a statement's calls reach, followed through the catalog.
struct Walk<'c> {
    catalog: &'c Catalog,
    sharding: &'c Sharding,
    seen: HashSet<(Option<String>, String)>,
    followed: usize,
    found: Reached,
}

/// What the walk found, for the error (or the write everywhere) it means.
#[derive(Default)]
struct Reached {
    /// Sequence function arguments met (see [`Behind::sequences`]).
    sequences: Vec<Option<Value>>,
    /// `[[sharded_functions]]` calls met (see [`Behind::keys`]).
    keys: Vec<(String, usize, Option<Value>)>,
    /// (what, sharded table) of the first sharded table reached.
    sharded: Option<(String, String)>,
    /// (what, omnisharded table) of the first omnisharded table written.
    writes_omnisharded: Option<(String, String)>,
    /// (what, why) of the first opaque body.
    opaque: Option<(String, String)>,
}

impl<'c> Walk<'c> {
    fn new(catalog: &'c Catalog, sharding: &'c Sharding) -> Walk<'c> {
        Walk {
            catalog,
            sharding,
            seen: HashSet::new(),
            followed: 0,
            found: Reached::default(),
        }
    }

    /// One call: a sequence function, a `[[sharded_functions]]` entry, or
    /// the functions of that name, followed.
    fn call(&mut self, call: &Call) {
        let ours = call.schema.as_deref().is_none_or(|s| s == "pg_catalog");
        if ours && SEQUENCE_FUNCTIONS.contains(&call.name.as_str()) {
            let name = call.args.first().cloned().flatten();
            self.found.sequences.push(name);
        }
        if call.schema.as_deref() == Some("pg_catalog") {
            return;
        }
        if let Some(sharded) = self.sharding.functions.iter().find(|f| {
            f.name == call.name
                && crate::route::tables::schema_matches(f.schema.as_deref(), call.schema.as_deref())
        }) {
            let value = call.args.get(sharded.argument).cloned().flatten();
            self.found
                .keys
                .push((call.name.clone(), sharded.entry, value));
            return;
        }
        let key = (call.schema.clone(), call.name.clone());
        if !self.seen.insert(key) {
            return;
        }
        let catalog = self.catalog;
        for function in catalog.functions(call.schema.as_deref(), &call.name) {
            self.followed += 1;
            if self.followed > MAX_FOLLOWED {
                self.found.opaque.get_or_insert_with(|| {
                    (
                        format!("function {}", call.name),
                        "it calls too many functions to follow".to_owned(),
                    )
                });
                return;
            }
            let what = format!("function {}", function.name);
            self.reach(&what, &function.reach);
        }
    }

    /// The tables a body (`what`) reaches, and what its calls reach.
    fn reach(&mut self, what: &str, reach: &Reach) {
        if let Some(why) = &reach.opaque {
            self.found
                .opaque
                .get_or_insert_with(|| (what.to_owned(), why.clone()));
        }
        for table in &reach.reads {
            self.table(what, table, false);
        }
        for table in &reach.writes {
            self.table(what, table, true);
        }
        for call in &reach.calls {
            self.call(call);
        }
    }

    fn table(&mut self, what: &str, table: &TableRef, write: bool) {
        if let Some((_, view)) = self.catalog.view(table.schema.as_deref(), &table.name) {
            let key = (table.schema.clone(), format!("view {}", table.name));
            if self.seen.insert(key) {
                let view = std::sync::Arc::clone(view);
                self.reach(what, &view.reach);
            }
            return;
        }
        match classify(table, self.sharding) {
            TableClass::Sharded | TableClass::Unknown | TableClass::Family { .. } => {
                self.found
                    .sharded
                    .get_or_insert_with(|| (what.to_owned(), table.name.clone()));
            }
            TableClass::Omnisharded if write => {
                self.found
                    .writes_omnisharded
                    .get_or_insert_with(|| (what.to_owned(), table.name.clone()));
            }
            TableClass::Omnisharded | TableClass::Catalog => {}
        }
    }

    fn finish(self) -> Reached {
        self.found
    }
}

impl Reached {
    /// A sharded table reached, or an opaque body: an error.
    fn error(&self) -> Option<RouteError> {
        if let Some((what, table)) = &self.sharded {
            return Some(RouteError::BehindName {
                what: what.clone(),
                why: format!("it reaches {table}, which is sharded: each database would run it over its own rows only; call it with the sharding key on one shard (declare it in [[sharded_functions]] with its key argument, or pick a shard with /* pgdog_shard: N */), or query {table} directly"),
            });
        }
        self.opaque.as_ref().map(|(what, why)| RouteError::BehindName {
            what: what.clone(),
            why: format!("{why}, so pgshard cannot tell which tables it reaches; pick a shard with /* pgdog_shard: N */ or declare it in [[sharded_functions]]"),
        })
    }

    /// An omnisharded table written from a statement (or a trigger's row)
    /// that reads sharded rows: an error.
    fn omnisharded_from_sharded(&self) -> Option<RouteError> {
        self.writes_omnisharded
            .as_ref()
            .map(|(what, table)| RouteError::BehindName {
                what: what.clone(),
                why: format!("it writes {table}, which every database holds a copy of, while the statement reads sharded rows: each database would write its copy from its own rows and the copies would diverge"),
            })
    }
}
