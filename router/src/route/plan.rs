//! Routing in two steps: what a statement's tables and key columns are
//! under one sharding config ([`StatementPlan::new`], once per statement and
//! config), then where it goes with this Bind's parameters and overrides
//! ([`StatementPlan::decide`], per execution). Everything that does not
//! depend on parameter values (table classification, column resolution,
//! key-space lookup, literal keys, the errors of rules 7 and 11) is settled
//! in the first step, so a cached statement routes with a hash and a few
//! branches.

use crate::sharding::{Key, KeySpace, Sharding};
use crate::summary::{SchemaChange, StatementKind, StatementSummary, Summary, TableRef};

use super::behind::Behind;
use super::cte_writes;
use super::joins::{self, JoinPlan};
use super::keys::{self, type_name, Compiled, Keys, Restriction};
use super::schema;
use super::shard_set::ShardSet;
use super::sublinks::{self, Placed};
use super::tables::{classify, entry_names, TableClass};
use super::{
    combine, describe, join, to_route, Decision, Overrides, ParamValue, Route, RouteError, Routed,
};

/// A statement string planned against one sharding config. Route it with
/// the same config it was planned with (a cache keeps the pair together);
/// with another, keys it cannot resolve restrict nothing.
#[derive(Debug, Clone)]
pub struct RoutePlan {
    statements: Vec<StatementPlan>,
}

impl RoutePlan {
    pub fn new(summary: &Summary, sharding: &Sharding) -> RoutePlan {
        RoutePlan {
            statements: summary
                .statements
                .iter()
                .map(|stmt| StatementPlan::new(stmt, sharding))
                .collect(),
        }
    }

    /// Where the statement string goes (see [`super::route_all`]).
    pub fn route(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Sharding,
    ) -> Result<Routed, RouteError> {
        if let [only] = self.statements.as_slice() {
            return only
                .decide(params, overrides, sharding)
                .map(|decision| decision.routed);
        }
        let mut out = Decision {
            routed: Routed {
                route: Route::Any,
                write: false,
            },
            pinned: false,
        };
        for stmt in &self.statements {
            let next = stmt.decide(params, overrides, sharding)?;
            out = combine(out, next, sharding.databases)?;
        }
        Ok(out.routed)
    }
}

/// One statement planned against one config.
#[derive(Debug, Clone)]
pub(crate) struct StatementPlan {
    /// Rule 1: transaction control and session statements go `Any`,
    /// whatever the overrides say.
    control: bool,
    write: bool,
    /// The key space a `pgdog.sharding_key` override is read in (rule 2).
    override_space: Option<Space>,
    /// Rules 3-12, without overrides.
    body: Body,
    /// Rule 13: the join levels to check once the route is known; a fixed
    /// error if one can never be exact.
    joins: Option<Box<Result<JoinPlan, RouteError>>>,
    /// Rule 14: what stands behind the names it uses.
    behind: Option<Box<Behind>>,
}

/// A key space of the config, by index.
#[derive(Debug, Clone, Copy)]
enum Space {
    Table(usize),
    Family(usize),
}

impl Space {
    fn get(self, sharding: &Sharding) -> Option<&KeySpace> {
        match self {
            Space::Table(i) => sharding.tables.get(i).map(|entry| &entry.keys),
            Space::Family(i) => sharding.families.get(i).map(|family| &family.keys),
        }
    }
}

#[derive(Debug, Clone)]
enum Body {
    /// Known without parameters.
    Fixed(Result<Decision, RouteError>),
    /// Depends on the key values.
    Keyed(Box<Keyed>),
}

/// A statement on sharded tables whose conditions read parameters.
#[derive(Debug, Clone)]
struct Keyed {
    /// One per query level that restricts the statement's rows.
    conditions: Vec<Compiled>,
    /// The intersection of the family tables' databases.
    families: Option<ShardSet>,
    /// Where it goes when no condition restricts it (rule 7).
    free: Result<(Route, bool), RouteError>,
    /// For an INSERT or MERGE whose rows would go to several databases:
    /// the error, unless it reads other sharded tables (rule 6). `None`
    /// for other statements.
    several: Option<Several>,
    /// A restricted statement must run on exactly its databases.
    pinned: bool,
    /// The common shape, `key = $n` alone: routed without building shard
    /// sets (see [`Keyed::decide`]).
    single: Option<Single>,
    /// Sublinks whose rows must live on one database, which the statement
    /// then runs on alone (rule 12).
    placed: Vec<Placed>,
    /// `None` when the statement reads sharded tables outside its sublinks;
    /// else where it goes when no sublink places it.
    unsharded: Option<Route>,
    /// Its data-modifying WITH queries on sharded tables, which run
    /// wherever it runs (rule 11).
    writes: Vec<cte_writes::Write>,
}

/// `key = $n` with one key space, the statement's only restriction.
#[derive(Debug, Clone, Copy)]
struct Single {
    n: u16,
    entry: usize,
    data_type: crate::sharding::DataType,
}

#[derive(Debug, Clone)]
enum Several {
    /// A multi-row INSERT into this table.
    Insert(String),
    Error(RouteError),
}

impl StatementPlan {
    pub(crate) fn new(stmt: &StatementSummary, sharding: &Sharding) -> StatementPlan {
        let control = matches!(
            stmt.kind,
            StatementKind::Begin
                | StatementKind::Commit
                | StatementKind::Rollback
                | StatementKind::TransactionOther
                | StatementKind::Session
                | StatementKind::SetShard(_)
                | StatementKind::SetShardingKey(_)
        );
        let write = stmt.write || stmt.locking;
        StatementPlan {
            control,
            write,
            override_space: if control {
                None
            } else {
                override_key_space(stmt, sharding)
            },
            body: if control {
                Body::Fixed(Ok(Decision {
                    routed: Routed {
                        route: Route::Any,
                        write: false,
                    },
                    pinned: false,
                }))
            } else {
                plan_body(stmt, sharding, write)
            },
            // Rule 13, after rule 3 (one database) and never for schema
            // changes (a view's joins run where the view is read).
            joins: if control
                || sharding.databases <= 1
                || (stmt.kind == StatementKind::Ddl && !creates_from_query(stmt))
            {
                None
            } else {
                joins::plan(stmt, sharding).transpose().map(Box::new)
            },
            behind: if control {
                None
            } else {
                Behind::plan(stmt, sharding)
            },
        }
    }

    pub(crate) fn decide(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Sharding,
    ) -> Result<Decision, RouteError> {
        let done = |route: Route, pinned: bool| Decision {
            routed: Routed {
                route,
                write: self.write,
            },
            pinned,
        };
        if self.control {
            return Ok(Decision {
                routed: Routed {
                    route: Route::Any,
                    write: false,
                },
                pinned: false,
            });
        }
        let databases = sharding.databases;
        if let Some(shard) = overrides.shard {
            if shard >= databases {
                return Err(RouteError::NoSuchShard { shard, databases });
            }
            return Ok(done(Route::Shard(shard), true));
        }
        if let Some(value) = &overrides.sharding_key {
            let key_space = self
                .override_space
                .and_then(|space| space.get(sharding))
                .ok_or(RouteError::NoKeySpace)?;
            let key = crate::hash::parse_text(key_space.data_type, value).map_err(|err| {
                let crate::hash::KeyError::Invalid(reason) = err;
                RouteError::BadKey {
                    column: "pgdog.sharding_key".to_owned(),
                    data_type: type_name(key_space.data_type),
                    reason,
                }
            })?;
            let shard = keys::database(sharding, key_space, &key, || {
                "pgdog.sharding_key".to_owned()
            })?;
            return Ok(done(Route::Shard(shard), true));
        }
        let mut decision = match &self.body {
            Body::Fixed(decision) => decision.clone(),
            Body::Keyed(keyed) => keyed.decide(params, sharding, self.write),
        }?;
        if let Some(behind) = &self.behind {
            let route = std::mem::replace(&mut decision.routed.route, Route::Any);
            let before = route.clone();
            decision.routed.route = behind.apply(route, params, sharding)?;
            if decision.routed.route != before {
                // Placed on the database a function's key or a sequence
                // needs, or on every one (it writes omnisharded tables).
                decision.pinned = true;
                decision.routed.write |= decision.routed.route == Route::All;
            }
        }
        match self.joins.as_deref() {
            None => {}
            Some(Ok(joins)) => joins.check(params, sharding, &decision.routed.route)?,
            Some(Err(err)) => return Err(err.clone()),
        }
        Ok(decision)
    }
}

impl Keyed {
    fn decide(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        write: bool,
    ) -> Result<Decision, RouteError> {
        let databases = sharding.databases;
        if !self.placed.is_empty() {
            return self.decide_placed(params, sharding, write);
        }
        if let Some(single) = self.single {
            // One value, one database: the set would hold just it. A value
            // that restricts nothing (NULL, missing) takes the general path.
            if let Some(database) =
                keys::param_database(single.n, single.entry, single.data_type, params, sharding)?
            {
                return Ok(Decision {
                    routed: Routed {
                        route: Route::Shard(database),
                        write,
                    },
                    pinned: self.pinned,
                });
            }
        }
        let restriction = restrict(&self.conditions, params, sharding, self.families.clone())?;
        let (route, pinned) = self.main_route(restriction, databases)?;
        let (route, pinned) = cte_writes::cover(&self.writes, route, pinned, params, sharding)?;
        self.finish(route, pinned, sharding, write)
    }

    /// Where the statement's own levels put it.
    fn main_route(
        &self,
        restriction: Restriction,
        databases: usize,
    ) -> Result<(Route, bool), RouteError> {
        Ok(match restriction {
            Restriction::Set(set) => {
                if set.len() > 1 {
                    match &self.several {
                        None => {}
                        Some(Several::Insert(table)) => {
                            return Err(RouteError::MultiRowInsert {
                                table: table.clone(),
                                shards: join(set.iter()),
                            })
                        }
                        Some(Several::Error(err)) => return Err(err.clone()),
                    }
                }
                (to_route(&set, databases), self.pinned)
            }
            Restriction::Nothing(lowest) => (Route::Shard(lowest.unwrap_or(0)), false),
            Restriction::Free => self.free.clone()?,
        })
    }

    /// Rule 12: the statement's own route must be the one database its
    /// placed sublinks need (or read no sharded table, or match no row).
    fn decide_placed(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        write: bool,
    ) -> Result<Decision, RouteError> {
        let databases = sharding.databases;
        let restriction = match self.unsharded {
            None => Some(restrict(
                &self.conditions,
                params,
                sharding,
                self.families.clone(),
            )?),
            Some(_) => None,
        };
        let need = sublinks::database(&self.placed, params, sharding)?;
        let (route, pinned) = match (need, restriction) {
            (None, None) => (self.unsharded.clone().unwrap_or(Route::Any), false),
            (None, Some(restriction)) => self.main_route(restriction, databases)?,
            (Some((database, _)), None | Some(Restriction::Nothing(_))) => {
                (Route::Shard(database), true)
            }
            (Some((database, sublink)), Some(restriction)) => {
                let (route, _) = self.main_route(restriction, databases)?;
                if route != Route::Shard(database) {
                    return Err(sublink.elsewhere(format!("shard {database}"), describe(&route)));
                }
                (route, true)
            }
        };
        let (route, pinned) = cte_writes::cover(&self.writes, route, pinned, params, sharding)?;
        self.finish(route, pinned, sharding, write)
    }

    /// Apply `cross_shard_disabled` (rule 9).
    fn finish(
        &self,
        route: Route,
        pinned: bool,
        sharding: &Sharding,
        write: bool,
    ) -> Result<Decision, RouteError> {
        let databases = sharding.databases;
        if sharding.cross_shard_disabled {
            let count = match &route {
                Route::Shards(shards) => shards.len(),
                Route::All => databases,
                Route::Shard(_) | Route::Any => 1,
            };
            if count > 1 {
                return Err(RouteError::CrossShardDisabled { count });
            }
        }
        Ok(Decision {
            routed: Routed { route, write },
            pinned,
        })
    }
}

/// Rules 3-11 for a statement that is not transaction control, without
/// overrides: fixed where parameter values cannot change the outcome.
fn plan_body(stmt: &StatementSummary, sharding: &Sharding, write: bool) -> Body {
    let databases = sharding.databases;
    let done = |route: Route, pinned: bool| {
        Body::Fixed(Ok(Decision {
            routed: Routed { route, write },
            pinned,
        }))
    };
    if databases <= 1 {
        let route = if stmt.tables.is_empty() && stmt.kind != StatementKind::Ddl {
            Route::Any
        } else if databases == 1 {
            Route::Shard(0)
        } else {
            Route::All
        };
        return done(route, false);
    }
    let facts = match table_facts(stmt.target.as_ref(), &stmt.tables, sharding) {
        Ok(facts) => facts,
        Err(err) => return Body::Fixed(Err(err)),
    };
    if let Err(err) = check_write_target(stmt, &facts, sharding) {
        return Body::Fixed(Err(err));
    }
    if let Err(err) = cte_writes::check(stmt, sharding) {
        return Body::Fixed(Err(err));
    }
    if let Err(err) = schema::check(stmt, sharding) {
        return Body::Fixed(Err(err));
    }
    if let Err(err) = create_as_sublinks(stmt, sharding, &facts) {
        return Body::Fixed(Err(err));
    }
    let unsharded = match stmt.kind {
        StatementKind::Ddl => Route::All,
        _ if stmt.tables.is_empty() || !stmt.write => Route::Any,
        _ => Route::All,
    };
    let sublinks = match stmt.sublinks.as_deref() {
        // Schema changes do not run their sublinks here (a view's run where
        // the view is read).
        Some(sublinks) if stmt.kind != StatementKind::Ddl => sublinks,
        _ if !facts.touches_sharded => return done(unsharded, false),
        _ if stmt.kind == StatementKind::Ddl => {
            // Every database holds a part of a sharded table, so schema
            // changes go everywhere; a family table lives on its own
            // database only.
            let route = match &facts.families {
                Some(set) => to_route(set, databases),
                None => Route::All,
            };
            return done(route, facts.families.is_some());
        }
        _ => return plan_keyed(stmt, sharding, write, &facts, &stmt.tables, Vec::new()),
    };
    // Rule 12: the statement's own levels are those outside its sublinks.
    let outside = &sublinks.tables_outside;
    let main = match table_facts(stmt.target.as_ref(), outside, sharding) {
        Ok(main) => main,
        Err(err) => return Body::Fixed(Err(err)),
    };
    let first = facts.first_sharded.map(|(table, unknown)| {
        let what = if unknown {
            "is not in the sharding config (so is treated as sharded)"
        } else {
            "is sharded"
        };
        (table, what)
    });
    let first = first.or(facts.first_read);
    let placed = match sublinks::plan(stmt, sublinks, sharding, first) {
        Ok(placed) => placed,
        Err(err) => return Body::Fixed(Err(err)),
    };
    match (main.touches_sharded, placed.is_empty()) {
        (false, true) => done(unsharded, false),
        (false, false) => {
            let keyed = Keyed {
                conditions: Vec::new(),
                families: None,
                free: Ok((unsharded.clone(), false)),
                several: None,
                pinned: false,
                single: None,
                placed,
                unsharded: Some(unsharded),
                writes: cte_writes::plan(stmt, sharding, outside),
            };
            settle(keyed, sharding, write)
        }
        (true, _) => plan_keyed(stmt, sharding, write, &main, outside, placed),
    }
}

/// A schema change that runs its query: CREATE TABLE AS, SELECT INTO, a
/// materialized view (rules 12 and 13 apply to that query).
fn creates_from_query(stmt: &StatementSummary) -> bool {
    matches!(
        stmt.schema_change.as_deref(),
        Some(SchemaChange::CreateAs { with_data, matview, .. }) if *with_data || *matview
    )
}

/// Rule 12 for CREATE TABLE AS: it runs on every database, so a sublink
/// over sharded rows must be correlated (none can place it on one).
fn create_as_sublinks(
    stmt: &StatementSummary,
    sharding: &Sharding,
    facts: &TableFacts<'_>,
) -> Result<(), RouteError> {
    let (Some(sublinks), true) = (stmt.sublinks.as_deref(), creates_from_query(stmt)) else {
        return Ok(());
    };
    let Some(SchemaChange::CreateAs { table, .. }) = stmt.schema_change.as_deref() else {
        return Ok(());
    };
    let placed = sublinks::plan(stmt, sublinks, sharding, facts.first_read)?;
    match placed.first() {
        Some(sublink) => {
            let (read, what) = sublink.read();
            Err(RouteError::CreateAsSubquery {
                table: table.name.clone(),
                read: read.to_owned(),
                what,
            })
        }
        None => Ok(()),
    }
}

/// Rules 4-12 for a statement whose own levels read sharded tables:
/// `facts` of those levels' `tables`, and the sublinks that place it.
fn plan_keyed(
    stmt: &StatementSummary,
    sharding: &Sharding,
    write: bool,
    facts: &TableFacts<'_>,
    tables: &[TableRef],
    placed: Vec<Placed>,
) -> Body {
    let family_pinned = facts.families.is_some();

    let (table, unknown) = facts.first_sharded.unwrap_or(("", false));
    let is_insert = stmt.kind == StatementKind::Insert;
    let is_merge = stmt.kind == StatementKind::Merge;
    let target_sharded = stmt.target.as_ref().is_some_and(|target| {
        matches!(
            classify(target, sharding),
            TableClass::Sharded | TableClass::Unknown
        )
    });
    if is_insert && stmt.insert_without_columns && target_sharded {
        return Body::Fixed(Err(without_key(stmt, sharding, table, unknown)));
    }
    let free = match stmt.kind {
        // Each database copies its own rows: only sound when the rows come
        // from (co-located) sharded tables.
        StatementKind::Insert | StatementKind::Merge if facts.reads_sharded => {
            Ok((Route::All, false))
        }
        StatementKind::Insert | StatementKind::Merge => {
            Err(without_key(stmt, sharding, table, unknown))
        }
        // A column-only entry may shard it by a column the COPY's rows
        // carry (the proxy reads which from the table's columns).
        StatementKind::Copy { to: false }
            if unknown && sharding.tables.iter().all(|e| e.name.is_some()) =>
        {
            Err(RouteError::UnknownTableWrite {
                statement: "COPY",
                table: table.to_owned(),
            })
        }
        StatementKind::Copy { to: false } => Err(RouteError::CopyIntoSharded {
            table: table.to_owned(),
        }),
        _ => Ok((Route::All, false)),
    };
    let several = match (is_insert, is_merge) {
        _ if facts.reads_sharded => None,
        (true, _) => Some(Several::Insert(table.to_owned())),
        (_, true) => Some(Several::Error(without_key(stmt, sharding, table, unknown))),
        _ => None,
    };
    let keys = Keys {
        tables,
        sharding,
        only: None,
    };
    let conditions: Vec<Compiled> = stmt
        .conditions
        .iter()
        .map(|condition| keys.compile(condition, 0))
        .collect();
    let writes = cte_writes::plan(stmt, sharding, tables);
    let single = match (conditions.as_slice(), &facts.families) {
        _ if !placed.is_empty() || !writes.is_empty() => None,
        (
            [Compiled::Param {
                n,
                array: false,
                keys,
                then_free: false,
            }],
            None,
        ) => match keys.as_slice() {
            &[(entry, data_type)] => Some(Single {
                n: *n,
                entry,
                data_type,
            }),
            _ => None,
        },
        _ => None,
    };
    let keyed = Keyed {
        conditions,
        single,
        families: facts.families.clone(),
        free,
        several,
        pinned: family_pinned
            || matches!(
                stmt.kind,
                StatementKind::Insert | StatementKind::Merge | StatementKind::Copy { .. }
            ),
        placed,
        unsharded: None,
        writes,
    };
    settle(keyed, sharding, write)
}

/// A fixed body if no parameter can change the outcome.
fn settle(keyed: Keyed, sharding: &Sharding, write: bool) -> Body {
    if keyed.conditions.iter().all(Compiled::is_fixed)
        && keyed.placed.iter().all(Placed::is_fixed)
        && keyed.writes.iter().all(cte_writes::Write::is_fixed)
    {
        // No parameter to wait for: settle it now.
        return Body::Fixed(keyed.decide(&[], sharding, write));
    }
    Body::Keyed(Box::new(keyed))
}

/// Intersect the levels' restrictions with the family tables' databases.
pub(super) fn restrict(
    conditions: &[Compiled],
    params: &[ParamValue<'_>],
    sharding: &Sharding,
    families: Option<ShardSet>,
) -> Result<Restriction, RouteError> {
    let mut set = families;
    let mut nothing = false;
    let mut lowest: Option<usize> = None;
    for condition in conditions {
        match keys::eval(condition, params, sharding, 0)? {
            Restriction::Free => {}
            Restriction::Nothing(hint) => {
                nothing = true;
                lowest = match (lowest, hint) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            Restriction::Set(next) => set = Some(intersect(set, next)?),
        }
    }
    Ok(match set {
        Some(set) => Restriction::Set(set),
        None if nothing => Restriction::Nothing(lowest),
        None => Restriction::Free,
    })
}

/// What the tables of a statement (or of a part of it) are, gathered in
/// one pass.
#[derive(Default)]
pub(super) struct TableFacts<'a> {
    /// A configured-sharded or unknown table other than the target (for an
    /// INSERT or MERGE: its rows come from a query over sharded tables).
    reads_sharded: bool,
    /// Any sharded, unknown or family table.
    touches_sharded: bool,
    /// The first configured-sharded or unknown table, and whether unknown:
    /// the target if it is one.
    first_sharded: Option<(&'a str, bool)>,
    /// The first sharded, unknown or family table other than the target, and
    /// how to say what it is.
    pub(super) first_read: Option<(&'a str, &'static str)>,
    /// The intersection of the family tables' databases.
    pub(super) families: Option<ShardSet>,
}

/// The facts of `tables`, of a statement writing `target` (if any).
pub(super) fn table_facts<'a>(
    target: Option<&'a TableRef>,
    tables: &'a [TableRef],
    sharding: &Sharding,
) -> Result<TableFacts<'a>, RouteError> {
    let mut facts = TableFacts::default();
    if let Some(target) = target {
        let class = classify(target, sharding);
        if matches!(class, TableClass::Sharded | TableClass::Unknown) {
            facts.first_sharded = Some((&target.name, class == TableClass::Unknown));
        }
    }
    for table in tables {
        let other = target != Some(table);
        match classify(table, sharding) {
            TableClass::Family { family, key } => {
                facts.touches_sharded = true;
                if other && facts.first_read.is_none() {
                    facts.first_read = Some((&table.name, "is a sharded table family"));
                }
                let database = keys::database(sharding, &family.keys, &Key::Int(key), || {
                    format!("table {}", table.name)
                })?;
                let set = ShardSet::single(sharding.databases, database);
                facts.families = Some(intersect(facts.families.take(), set)?);
            }
            class @ (TableClass::Sharded | TableClass::Unknown) => {
                let unknown = class == TableClass::Unknown;
                facts.touches_sharded = true;
                facts.reads_sharded |= other;
                if facts.first_sharded.is_none() {
                    facts.first_sharded = Some((&table.name, unknown));
                }
                if other && facts.first_read.is_none() {
                    let what = if unknown {
                        "is not in the sharding config (so is treated as sharded)"
                    } else {
                        "is sharded"
                    };
                    facts.first_read = Some((&table.name, what));
                }
            }
            TableClass::Omnisharded | TableClass::Catalog => {}
        }
    }
    Ok(facts)
}

/// Rule 11: refuse writes that would leave rows where they do not belong.
fn check_write_target(
    stmt: &StatementSummary,
    facts: &TableFacts<'_>,
    sharding: &Sharding,
) -> Result<(), RouteError> {
    let Some(target) = &stmt.target else {
        return Ok(());
    };
    let class = classify(target, sharding);
    if !stmt.set_columns.is_empty() {
        let key = sharding.tables.iter().find(|entry| {
            let keys_target = match class {
                TableClass::Sharded => entry_names(entry, target),
                TableClass::Unknown => entry.name.is_none(),
                _ => false,
            };
            keys_target && stmt.set_columns.contains(&entry.column)
        });
        if let Some(entry) = key {
            return Err(RouteError::ShardingKeyChange {
                table: target.name.clone(),
                column: entry.column.clone(),
            });
        }
    }
    if class == TableClass::Omnisharded {
        if let Some((read, what)) = facts.first_read {
            return Err(RouteError::OmnishardedFromSharded {
                table: target.name.clone(),
                read: read.to_owned(),
                what,
            });
        }
    }
    Ok(())
}

/// Intersect the levels' restrictions with the family tables' databases.
fn intersect(set: Option<ShardSet>, next: ShardSet) -> Result<ShardSet, RouteError> {
    let Some(mut set) = set else {
        return Ok(next);
    };
    let first = set.first().unwrap_or(0);
    set.intersect_with(&next);
    if set.is_empty() {
        return Err(keys::different_shards(first, next.first().unwrap_or(0)));
    }
    Ok(set)
}

/// The error for an INSERT or MERGE into `table` that names no usable key.
fn without_key(
    stmt: &StatementSummary,
    sharding: &Sharding,
    table: &str,
    unknown: bool,
) -> RouteError {
    let is_merge = stmt.kind == StatementKind::Merge;
    let column = stmt
        .tables
        .iter()
        .filter(|t| t.name == table)
        .find_map(|t| sharding.tables.iter().find(|e| entry_names(e, t)))
        .map(|entry| entry.column.clone());
    match column {
        Some(column) if !unknown && is_merge => RouteError::MergeWithoutKey {
            table: table.to_owned(),
            column,
        },
        Some(column) if !unknown => RouteError::InsertWithoutKey {
            table: table.to_owned(),
            column,
        },
        _ => RouteError::UnknownTableWrite {
            statement: if is_merge { "MERGE" } else { "INSERT" },
            table: table.to_owned(),
        },
    }
}

/// The key space a `pgdog.sharding_key` value is typed and hashed with.
fn override_key_space(stmt: &StatementSummary, sharding: &Sharding) -> Option<Space> {
    let named = stmt
        .tables
        .iter()
        .find_map(|t| sharding.tables.iter().position(|e| entry_names(e, t)));
    if let Some(index) = named {
        return Some(Space::Table(index));
    }
    let family = stmt
        .tables
        .iter()
        .find_map(|t| match classify(t, sharding) {
            TableClass::Family { family, .. } => sharding
                .families
                .iter()
                .position(|f| std::ptr::eq(f, family)),
            _ => None,
        });
    if let Some(index) = family {
        return Some(Space::Family(index));
    }
    if !sharding.tables.is_empty() {
        Some(Space::Table(0))
    } else if !sharding.families.is_empty() {
        Some(Space::Family(0))
    } else {
        None
    }
}
