//! A simple-query multi-row INSERT whose rows go to several shards: split
//! by `router::split` into one INSERT per shard (a text of the same
//! template as the last one split by its `LiteralLayout`, without a parse),
//! run as a fan-out, the
//! counts summed (`INSERT 0 n`) and RETURNING rows given back in the
//! client's row order. Inside a transaction pgshard opened, the parts run
//! in it on each shard (`spanning.rs`); outside one, in a transaction of
//! its own on each shard, committed on all of them (two-phase when on) or
//! rolled back on all when one fails (`commit.rs`).
//!
//! Also here: an INSERT that names no columns given its table's (from a
//! shard's catalog, cached), in both protocols (a prepared one binds a
//! registered statement with the columns written in), and the check that
//! an INSERT ... SELECT into a sharded table keeps every row on its own
//! shard (`router::split::check_insert_select`).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::route::RouteError;
use router::split::{
    check_insert_select, insert_table, with_columns, InsertRows, LiteralLayout, Split, SplitError,
};
use router::summary::{SchemaChange, StatementKind, Summary};

use super::dispatch::Dispatch;
use super::fan_out::{Reply, Scope};
use super::holds::Pass;
use super::routing::bind_params;
use super::statements::Statement;
use super::transaction::{Placement, CROSS_SHARD_TXN};
use super::{End, Session};
use crate::errors::ClientError;
use crate::execute::merge::SplitRows;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::BindView;
use crate::protocol::messages;
use crate::protocol::sqlstate;

impl Session {
    /// Run the multi-row INSERT `sql` split by shard.
    pub(super) async fn split_insert(&mut self, sql: &str) -> Result<Dispatch, End> {
        let split = loop {
            let split = match self.split_rows(sql) {
                Ok(split) => split,
                Err(why) => {
                    let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string());
                    return Ok(self.refused(error));
                }
            };
            // Rows in a moving logical shard wait for its cutover, then
            // are split again by the placement as it is then.
            match self.pass_hold(split.touches_moving).await? {
                Pass::Go => break split,
                Pass::Again => continue,
                Pass::TimedOut(error) => return Ok(self.refused(error)),
            }
        };
        let shards: Vec<usize> = split.parts.iter().map(|p| p.database).collect();
        let scope = match self.place(Some(&shards), false) {
            Placement::FanOut => Scope::Outside,
            Placement::FanOutInTxn => Scope::InTxn,
            Placement::Refuse | Placement::Send(_) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                self.refuse(error, true);
                return Ok(Dispatch::Done);
            }
        };
        self.routing.placing_write();
        // Outside a transaction each shard's part opens its own: `BEGIN;`
        // and the part in one Query, one round trip (the part runs only
        // if the transaction opened).
        let begin = if scope == Scope::Outside {
            "BEGIN;"
        } else {
            ""
        };
        let queries: Vec<(usize, Bytes)> = split
            .parts
            .iter()
            .map(|part| {
                let mut out = BytesMut::with_capacity(part.sql.len() + 16);
                messages::query_parts(&mut out, &[begin, &part.sql]);
                (part.database, out.freeze())
            })
            .collect();
        let rows = SplitRows::new(
            split
                .parts
                .into_iter()
                .map(|part| (part.database, part.rows))
                .collect(),
        );
        let request = |server: &crate::pool::Pooled, out: &mut BytesMut| {
            let shard = server.pool().shard;
            if let Some((_, query)) = queries.iter().find(|(s, _)| *s == shard) {
                out.extend_from_slice(query);
            }
        };
        match scope {
            Scope::Outside => {
                let scope = Scope::ImplicitInRequest;
                self.fan_out_atomic_in(&shards, request, Reply::Split(rows), None, scope)
                    .await?
            }
            scope => {
                self.fan_out(&shards, request, Reply::Split(rows), scope)
                    .await?
            }
        }
        Ok(Dispatch::Done)
    }

    /// The literal INSERT `sql` split by shard: by the layout of the last
    /// text of its template when it is one (no parse), else parsed, its
    /// layout kept for the next.
    fn split_rows(&mut self, sql: &str) -> Result<Split, SplitError> {
        let sharding = Arc::clone(self.cluster.sharding());
        let known = self.routing.split_layout();
        if let Some(split) = known.and_then(|layout| layout.split(sql, &sharding)) {
            return Ok(split);
        }
        let rows = InsertRows::parse(sql)?;
        if let Some(layout) = LiteralLayout::new(&rows, sql, &sharding) {
            let split = layout.split(sql, &sharding);
            self.routing.keep_split_layout(layout);
            if let Some(split) = split {
                return Ok(split);
            }
        }
        rows.split(&sharding, &[])
    }

    /// An INSERT into a sharded table that names no columns: the table's
    /// columns (from a shard's catalog, cached) are written into it so its
    /// key can be routed; `None` when that cannot be done (the caller
    /// refuses it as before).
    pub(super) async fn insert_with_columns(&mut self, sql: &str) -> Result<Option<String>, End> {
        Ok(match self.insert_columns(sql).await? {
            Some(columns) => with_columns(sql, &columns),
            None => None,
        })
    }

    /// The columns of the table the INSERT `sql` writes (cached).
    async fn insert_columns(&mut self, sql: &str) -> Result<Option<Arc<Vec<String>>>, End> {
        let Some(table) = insert_table(sql) else {
            return Ok(None);
        };
        self.columns_now(&table).await
    }

    /// `table`'s columns as the session sees them now: through its
    /// transaction's server inside one (not kept), else cached.
    pub(super) async fn columns_now(
        &mut self,
        table: &str,
    ) -> Result<Option<Arc<Vec<String>>>, End> {
        if self.attached.status() == Some(TransactionStatus::InBlock) {
            // The transaction may have changed the table: its own server's
            // catalog says how, and what it says is not kept.
            self.settle_main().await?;
            let Some(server) = self.attached.main_mut() else {
                return Ok(None);
            };
            // A Query ends the unnamed statement on its server: parsed
            // again before it is described or bound there.
            self.pipeline.unnamed_dropped_on(server.conn.id);
            let columns = super::copy_in::table_columns(server, table, false).await;
            return Ok(columns.filter(|c| !c.is_empty()).map(Arc::new));
        }
        let key = (self.info.database.clone(), table.to_owned());
        let known =
            (self.shared.table_columns.lock().ok()).and_then(|m| m.columns.get(&key).cloned());
        match known {
            Some(columns) => Ok(Some(columns)),
            None => self.fetch_columns(table).await,
        }
    }

    /// A Bind of a prepared INSERT that names no columns, into a sharded
    /// table, with no key the router can find: the statement with the
    /// table's columns written in (registered, kept on `statement` while
    /// the table's columns are the same), which the Bind then binds
    /// instead. `None`: bind `statement` as it is.
    pub(super) async fn columns_statement(
        &mut self,
        statement: &Arc<Statement>,
        bind: &BindView<'_>,
    ) -> Result<Option<Arc<Statement>>, End> {
        let Some(info) = self.route_info(statement) else {
            return Ok(None);
        };
        let [only] = info.entry.summary.statements.as_slice() else {
            return Ok(None);
        };
        if !only.insert_without_columns {
            return Ok(None);
        }
        let params = bind_params(bind.values());
        let overrides = self.overrides(&info.overrides);
        let routed = info
            .entry
            .route(&info.params(&params), &overrides, self.cluster.sharding());
        let keyless = match routed {
            Err(RouteError::InsertWithoutKey { .. }) => true,
            // With a column-only entry, the table's columns say whether it
            // has the key column.
            Err(RouteError::UnknownTableWrite { .. }) => {
                self.cluster.sharding().unlisted_by_columns
            }
            _ => false,
        };
        if !keyless {
            return Ok(None);
        }
        let sql = String::from_utf8_lossy(&statement.query).into_owned();
        let Some(columns) = self.insert_columns(&sql).await? else {
            return Ok(None);
        };
        let mut kept = crate::lock::lock(&statement.with_columns);
        if let Some((known, rewritten)) = kept.as_ref() {
            if Arc::ptr_eq(known, &columns) {
                return Ok(Some(Arc::clone(rewritten)));
            }
        }
        let Some(text) = with_columns(&sql, &columns) else {
            return Ok(None);
        };
        let rewritten = self.shared.statements.get_or_insert(
            &Bytes::from(text),
            &statement.param_types,
            &self.shared.cache,
            self.cluster.engine(),
        );
        *kept = Some((columns, Arc::clone(&rewritten)));
        Ok(Some(rewritten))
    }

    /// `table`'s columns asked of a server of shard 0 checked out for it.
    async fn fetch_columns(&mut self, table: &str) -> Result<Option<Arc<Vec<String>>>, End> {
        let mut server = match self.checkout_server(0, false).await? {
            Ok(server) => server,
            Err(_) => return Ok(None),
        };
        let columns = self.columns_of(&mut server, table).await;
        self.release(server, false).await;
        Ok(columns)
    }

    /// The error for an INSERT ... SELECT into a sharded table that would
    /// write rows on shards their keys do not hash to (`shards`: where it
    /// is routed), or for a table created from a query over sharded rows
    /// that would not be the table one Postgres creates
    /// (`router::create_as`); `None` for every other statement. Such
    /// statements are parsed again here, per execution: they are rare.
    pub(super) fn insert_select_error(
        &self,
        summary: &Summary,
        sql: &[u8],
        shards: Option<&[usize]>,
    ) -> Option<ClientError> {
        let ([statement], Some(shards)) = (summary.statements.as_slice(), shards) else {
            return None;
        };
        let refused = |why: String| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why);
        if matches!(
            statement.schema_change.as_deref(),
            Some(SchemaChange::CreateAs { .. })
        ) {
            let sql = String::from_utf8_lossy(sql);
            let why = router::create_as::check(&sql, self.cluster.sharding()).err()?;
            return Some(refused(why.to_string()));
        }
        if statement.kind != StatementKind::Insert || statement.tables.len() < 2 {
            return None;
        }
        let sql = String::from_utf8_lossy(sql);
        let why = check_insert_select(&sql, self.cluster.sharding(), shards).err()?;
        Some(refused(why.to_string()))
    }
}
