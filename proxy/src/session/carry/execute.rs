//! Writes whose subqueries read across shards, PREPAREd with SQL and run
//! by `EXECUTE name (arguments)` (issue 34): the subqueries of the
//! statement's body run first on the coordinator path, as a simple query
//! carries them; one that takes the statement's parameters is prepared
//! there with the statement's type list and executed with the EXECUTE's
//! arguments as written, so each `$n` is the value Postgres's EXECUTE
//! gives it (only when the PREPARE declared every parameter's type: alone,
//! the subquery could infer other types than the whole write). The write
//! with their results, its own `$n` kept, is a statement of pgshard's own
//! (the same type list), routed and executed with the client's arguments
//! as any EXECUTE.

use std::sync::Arc;

use router::cache::Lookup;
use router::carry::{CarryPlan, NotCarried};
use router::prepared::ArgValue;
use router::route::Overrides;
use router::summary::Argument;

use super::{not_carried, Args};
use crate::errors::ClientError;
use crate::protocol::sqlstate;
use crate::session::sql_execute::Named;
use crate::session::sql_prepared::SqlStatement;
use crate::session::transaction::Target;
use crate::session::{End, Session};

impl Session {
    /// The router refused an EXECUTE of `statement` for a subquery that
    /// reads across shards, which may be run first (`carry/execute.rs`).
    pub(in crate::session) fn carries_execute(
        &self,
        overrides: &Overrides,
        statement: &SqlStatement,
        body: &Lookup,
        values: &[ArgValue],
    ) -> bool {
        let summary = &body.entry.summary;
        self.may_carry(summary)
            && matches!(self.route_arguments(overrides, statement, body, values),
                Err(err) if self.carries(&err, summary))
    }

    /// An EXECUTE of `statement` the router refused (`refusal`) for a
    /// subquery that reads across shards: its subqueries run now and the
    /// write with their results is routed in its place; `None`: answered
    /// here (refused, failed or fanned out).
    pub(in crate::session) async fn carry_execute(
        &mut self,
        lookup: &Lookup,
        statement: &Arc<SqlStatement>,
        args: &[Argument],
        named: Named<'_>,
        refusal: ClientError,
    ) -> Result<Option<(Target, Arc<SqlStatement>)>, End> {
        let Some((plan, takes_args)) = self.execute_plan(statement, &refusal) else {
            return Ok(None);
        };
        let (text, at) = named;
        let with = match takes_args {
            true => Args::Sql {
                types: &statement.types,
                args: text.get(at.1..).unwrap_or_default(),
            },
            false => Args::None,
        };
        let Some(values) = self.simple_values(&plan, &refusal, &with).await? else {
            return Ok(None);
        };
        let write = match plan.write_sql(&values) {
            Ok(write) => write,
            Err(why) => {
                self.refused(not_carried(None, &refusal, &why));
                return Ok(None);
            }
        };
        let carried = (self.shared.statements).sql(&statement.types, &write, &statement.declared);
        Box::pin(self.route_execute(lookup, &carried, args, named, false)).await
    }

    /// The carry plan of `statement`'s body and whether its subqueries take
    /// the EXECUTE's arguments; `None`: refused (the client has why).
    fn execute_plan(
        &mut self,
        statement: &SqlStatement,
        refusal: &ClientError,
    ) -> Option<(CarryPlan, bool)> {
        let coordinator = self.shared.config().general.cross_shard_coordinator;
        let max_rows = self.shared.config().general.cross_shard_gather_limit.rows;
        let sharding = self.cluster.sharding();
        let planned = match router::carry::plan(&statement.body, sharding, coordinator, max_rows) {
            Err(NotCarried::Parameters(subquery)) => {
                // `unknown` is Postgres's "infer it", not a type.
                let declared = statement.declared.len() >= statement.parameters()
                    && (statement.declared.iter())
                        .all(|t| t.as_deref().is_some_and(|t| !t.ends_with("unknown")));
                match declared {
                    true => {
                        router::carry::plan_bound(&statement.body, sharding, coordinator, max_rows)
                            .map(|plan| (plan, true))
                    }
                    false => {
                        let error = ClientError::new(
                            sqlstate::FEATURE_NOT_SUPPORTED,
                            format!(
                                "{}; nor can its subqueries be run first on the coordinator: \
                                 its subquery {subquery} takes the statement's parameters, \
                                 which pgshard gives it in an EXECUTE only when the PREPARE \
                                 declares every parameter's type (PREPARE name (type, ...) AS \
                                 ...; alone, the subquery could infer other types), or in the \
                                 extended protocol",
                                refusal.message
                            ),
                        );
                        self.refused(error);
                        return None;
                    }
                }
            }
            planned => planned.map(|plan| (plan, false)),
        };
        match planned {
            Ok(planned) => Some(planned),
            Err(why) => {
                self.refused(not_carried(None, refusal, &why));
                None
            }
        }
    }
}
