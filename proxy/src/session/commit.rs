//! The end of a transaction that spans shards. ROLLBACK (or COMMIT of an
//! aborted one) rolls every shard back. COMMIT with one shard that wrote
//! (or without `two_phase_commit`) is one COMMIT per shard, the readers
//! first; if one fails before any writer committed the rest roll back, if
//! after, the client's error names the shards that committed. With
//! `two_phase_commit` and several writers it is the two-phase commit of
//! `two_phase.rs`: decider record and PREPARE on the others at once, the
//! decider's COMMIT as the commit point, then COMMIT PREPARED (and the
//! local log's record, when there is a log) together.

use tracing::warn;

use super::{End, Session};
use crate::errors::ClientError;
use crate::execute::two_phase;
use crate::pool::Pooled;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::sqlstate;

/// The servers of the transaction, each with its shard.
type Held = Vec<(usize, Pooled)>;

/// What ending the transaction gives the client: its tag, or an error.
pub(super) type Ended = Result<&'static str, ClientError>;

impl Session {
    /// A statement outside a transaction that writes on several shards, in
    /// a transaction of its own on each: committed (two-phase when
    /// `two_phase_commit` and `two_phase_commit_auto` are on) if it
    /// succeeded everywhere, else rolled back everywhere. Its tag goes out
    /// once the commit succeeded: a failed commit is reported instead of
    /// it, as Postgres reports an implicit transaction's.
    pub(super) async fn fan_out_atomic(
        &mut self,
        shards: &[usize],
        request: impl Fn(&Pooled, &mut bytes::BytesMut),
        reply: super::fan_out::Reply,
        prepare: Option<crate::execute::fan_out::Prepare>,
    ) -> Result<(), End> {
        let scope = super::fan_out::Scope::Implicit;
        self.fan_out_atomic_in(shards, request, reply, prepare, scope)
            .await
    }

    /// [`fan_out_atomic`](Self::fan_out_atomic) in `scope`, an implicit
    /// one (`Scope::ImplicitInRequest`: each shard's request starts with
    /// `BEGIN;`).
    pub(super) async fn fan_out_atomic_in(
        &mut self,
        shards: &[usize],
        request: impl Fn(&Pooled, &mut bytes::BytesMut),
        reply: super::fan_out::Reply,
        prepare: Option<crate::execute::fan_out::Prepare>,
        scope: super::fan_out::Scope,
    ) -> Result<(), End> {
        let errors = self.pipeline.error_mark();
        self.txn.begin_implicit();
        let tag = self
            .fan_out_holding(shards, request, prepare, reply, scope)
            .await?;
        let failed = self.pipeline.errors_since(errors) || self.txn.failed();
        let auto = self.shared.config().general.two_phase_commit_auto;
        match self.end_spanning(!failed, auto).await? {
            Ok("COMMIT") => {
                if let Some(tag) = tag {
                    crate::protocol::messages::command_complete(self.client.out(), &tag);
                }
            }
            Ok(_) => {}
            Err(error) => {
                error.encode(self.client.out());
                self.pipeline.error_relayed();
            }
        }
        let status = self.status();
        crate::protocol::messages::ready_for_query(self.client.out(), status);
        Ok(self.client.flush().await?)
    }

    /// COMMIT (`commit`) or ROLLBACK of the transaction holding servers of
    /// several shards (two-phase when on and `two_phase` allows it); every
    /// server goes back to its pool.
    pub(super) async fn end_spanning(
        &mut self,
        commit: bool,
        two_phase: bool,
    ) -> Result<Ended, End> {
        self.settle_main().await?;
        let aborted =
            self.attached.status() != Some(TransactionStatus::InBlock) || self.txn.failed();
        let written = self.attached.take_written();
        let mut servers = self.attached.take_all();
        self.txn.ended();
        self.end_txn_overrides();
        let pending = self.settings.take_pending();
        for (_, server) in &mut servers {
            // Settings changed inside the transaction ran on one shard or
            // another: every server is reset as it goes back.
            server.conn.dirty |= !pending.is_empty();
        }
        let ended = if !commit || aborted {
            Ok("ROLLBACK")
        } else {
            let (writers, readers): (Held, Held) =
                servers.drain(..).partition(|(s, _)| written.contains(s));
            let two_phase = two_phase && self.shared.config().general.two_phase_commit;
            match (two_phase && writers.len() > 1, readers) {
                (true, readers) => self.commit_two_phase(readers, writers, &mut servers).await,
                (false, mut readers) => {
                    readers.extend(writers);
                    self.commit_one_phase(readers, written.len(), &mut servers)
                        .await
                }
            }
        };
        if ended == Ok("COMMIT") {
            for change in &pending {
                self.settings.take_effect(change, false);
            }
            self.schema_committed();
        }
        // Before the servers go back: those a WITH HOLD cursor still
        // needs stay with the client.
        self.portals.cursors.txn_end(ended == Ok("COMMIT"));
        self.listen_txn_end(ended == Ok("COMMIT"));
        for (_, server) in servers {
            self.release(server, false).await;
        }
        Ok(ended)
    }

    /// COMMIT on each server in turn (`done` gets them back); the last
    /// `writers` are the ones that wrote. In turn, not at once: a COMMIT
    /// that fails (a deferred constraint, a serialization failure, a lost
    /// connection) before any writer committed leaves every shard rolled
    /// back; sent at once, the others would have committed already.
    async fn commit_one_phase(&mut self, held: Held, writers: usize, done: &mut Held) -> Ended {
        let first_writer = held.len().saturating_sub(writers);
        let mut committed = Vec::new();
        let mut failure = None;
        for (i, (shard, mut server)) in held.into_iter().enumerate() {
            if failure.is_none() {
                match server.conn.query("COMMIT").await {
                    Ok(answer) => match answer.error {
                        None if i >= first_writer => committed.push(shard),
                        None => {}
                        Some(error) => failure = Some((shard, error)),
                    },
                    Err(_) => {
                        let lost = (
                            sqlstate::CONNECTION_FAILURE.into(),
                            "connection lost".into(),
                        );
                        failure = Some((shard, lost));
                    }
                }
            }
            // After a failure the rest are rolled back as they go back.
            done.push((shard, server));
        }
        let Some((shard, (code, message))) = failure else {
            return Ok("COMMIT");
        };
        let message = if committed.is_empty() {
            format!("COMMIT failed on shard {shard}, every shard rolled back: {message}")
        } else {
            warn!(
                parent: &self.span,
                ?committed,
                shard, "a transaction spanning shards committed in part"
            );
            format!(
                "COMMIT failed on shard {shard} after shard(s) {committed:?} committed \
                 (two_phase_commit is off): {message}"
            )
        };
        Err(ClientError::from_server(&code, message))
    }

    /// Two-phase commit of `writers` (see `two_phase.rs`); `readers` commit
    /// first, on their own.
    async fn commit_two_phase(&mut self, readers: Held, writers: Held, done: &mut Held) -> Ended {
        let database = self.info.database.clone();
        let coordinator_txn = self.shared.two_phase.next_txn();
        let mut writers = writers.into_iter();
        let Some((decider, mut decider_server)) = writers.next() else {
            return Ok("COMMIT");
        };
        let others: Held = writers.collect();
        let ensured = self.ensure_decisions(decider).await;
        let outcome = match ensured {
            Err(error) => Err(error),
            Ok(()) => self.commit_one_phase(readers, 0, done).await,
        };
        if let Err(error) = outcome {
            done.push((decider, decider_server));
            done.extend(others);
            return Err(error);
        }
        // The decider's record and the others' PREPAREs at once: neither
        // decides anything before the decider's COMMIT below, and a failed
        // record rolls the prepared parts back as a failed PREPARE does.
        let recorded = record(&mut decider_server, &coordinator_txn);
        let preparing = self.prepare(others, &coordinator_txn, decider, done);
        let (recorded, (prepared, failure)) = tokio::join!(recorded, preparing);
        let failure = recorded.err().or(failure);
        self.shared
            .two_phase
            .checkpoint(two_phase::Fault::Prepared)
            .await;
        let decided = match failure {
            Some(error) => Err(error),
            None => match decider_server.conn.query("COMMIT").await {
                Ok(answer) => match answer.error {
                    None => Ok(()),
                    Some((code, message)) => Err(ClientError::from_server(&code, message)),
                },
                Err(_) => {
                    // The commit point's outcome is unknown: recovery asks
                    // the decider and finishes the prepared parts.
                    done.push((decider, decider_server));
                    done.extend(prepared.into_iter().map(|(s, p, _)| (s, p)));
                    return Err(ClientError::new(
                        sqlstate::CONNECTION_FAILURE,
                        "the connection to the shard deciding this two-phase commit was lost during COMMIT: its outcome is unknown; pgshard's recovery finishes it on every shard either way",
                    ));
                }
            },
        };
        done.push((decider, decider_server));
        match decided {
            Ok(()) => {
                self.commit_prepared(&coordinator_txn, &database, prepared, done)
                    .await;
                Ok("COMMIT")
            }
            Err(error) => {
                finish_all(prepared, false, done).await;
                Err(error)
            }
        }
    }

    /// After the decider committed: COMMIT PREPARED everywhere, with the
    /// local log's record (when there is a log) written meanwhile: the
    /// decider's committed row is the durable decision, so the record
    /// need not come first.
    async fn commit_prepared(
        &self,
        txn: &str,
        database: &str,
        prepared: Prepared,
        done: &mut Held,
    ) {
        let coordinator = &self.shared.two_phase;
        coordinator.checkpoint(two_phase::Fault::Decided).await;
        let shards: Vec<usize> = prepared.iter().map(|(s, _, _)| *s).collect();
        let log = &coordinator.log;
        let logged = log.commit(&coordinator.instance, txn, database, &shards);
        let logged = if coordinator.injected(two_phase::Fault::Logged) {
            let logged = logged.await;
            coordinator.checkpoint(two_phase::Fault::Logged).await;
            logged
        } else {
            let (logged, ()) = tokio::join!(logged, finish_all(prepared, true, done));
            logged
        };
        if let Err(err) = logged {
            warn!(parent: &self.span, %err, "cannot write the two-phase commit log; the decision is on the decider shard");
        }
        let _ = log.done(&coordinator.instance, txn).await;
    }

    /// PREPARE every other writer at once; one at a time, stopping after
    /// the first, when a crash test injected [`two_phase::Fault::BetweenPrepares`].
    async fn prepare(
        &self,
        others: Held,
        txn: &str,
        decider: usize,
        done: &mut Held,
    ) -> (Prepared, Option<ClientError>) {
        let coordinator = &self.shared.two_phase;
        if !coordinator.injected(two_phase::Fault::BetweenPrepares) {
            return prepare_all(others, txn, decider, done).await;
        }
        let (mut prepared, mut failure) = (Vec::new(), None);
        for (i, part) in others.into_iter().enumerate() {
            if i == 1 {
                coordinator
                    .checkpoint(two_phase::Fault::BetweenPrepares)
                    .await;
            }
            let (one, failed) = prepare_all(vec![part], txn, decider, done).await;
            prepared.extend(one);
            failure = failure.or(failed);
        }
        (prepared, failure)
    }

    /// Make sure the decider has the decision table (once per shard).
    async fn ensure_decisions(&mut self, shard: usize) -> Result<(), ClientError> {
        let database = self.info.database.clone();
        let primary = self.cluster.pools().get(shard).and_then(|p| p.primary());
        if let Some(pool) = primary {
            if self
                .shared
                .two_phase
                .ensured(&database, shard, &pool.settings.server_user)
            {
                return Ok(());
            }
        }
        let mut server = match self.checkout_server(shard, false).await {
            Ok(Ok(server)) => server,
            Ok(Err(err)) => return Err(err.client_error(&database, shard)),
            Err(_) => return Err(ClientError::shard_lost()),
        };
        let login = server.pool().settings.server_user.clone();
        let roles = self.shared.config().server_roles(&database);
        let answer = server
            .conn
            .query(&two_phase::create_decisions(&roles, true))
            .await;
        self.release(server, false).await;
        match answer {
            Ok(answer) => match answer.error {
                None => {
                    self.shared.two_phase.set_ensured(&database, shard, &login);
                    Ok(())
                }
                Some((code, message)) => Err(ClientError::from_server(
                    &code,
                    format!(
                        "two-phase commit needs {} on shard {shard}: {message}",
                        two_phase::DECISIONS
                    ),
                )),
            },
            Err(_) => Err(ClientError::shard_lost()),
        }
    }
}

/// The decider's record of the commit, inside the client's transaction.
async fn record(server: &mut Pooled, txn: &str) -> Result<(), ClientError> {
    match server.conn.query(&two_phase::record_commit(txn)).await {
        Ok(answer) => match answer.error {
            None => Ok(()),
            Some((code, message)) => Err(ClientError::from_server(&code, message)),
        },
        Err(_) => Err(ClientError::shard_lost()),
    }
}

/// A prepared part: its shard, server and gid.
type Prepared = Vec<(usize, Pooled, String)>;

/// PREPARE TRANSACTION on every server at once: those prepared, and the
/// first failure (a server whose PREPARE failed had its transaction rolled
/// back by Postgres: it goes to `done`).
async fn prepare_all(
    others: Held,
    txn: &str,
    decider: usize,
    done: &mut Held,
) -> (Prepared, Option<ClientError>) {
    let tasks: Vec<_> = others
        .into_iter()
        .map(|(shard, mut server)| {
            let gid = two_phase::gid(txn, decider, shard);
            tokio::spawn(async move {
                let sql = format!("PREPARE TRANSACTION '{gid}'");
                let result = match server.conn.query(&sql).await {
                    Ok(answer) => answer.error.map_or(Ok(()), |(code, message)| {
                        let message =
                            format!("PREPARE TRANSACTION failed on shard {shard}: {message}");
                        Err(ClientError::from_server(&code, message))
                    }),
                    Err(_) => Err(ClientError::shard_lost()),
                };
                (shard, server, gid, result)
            })
        })
        .collect();
    let mut prepared = Vec::new();
    let mut failure = None;
    for task in tasks {
        match task.await {
            Ok((shard, server, gid, Ok(()))) => prepared.push((shard, server, gid)),
            Ok((shard, server, _, Err(error))) => {
                done.push((shard, server));
                failure.get_or_insert(error);
            }
            Err(_) => {
                failure.get_or_insert(ClientError::shard_lost());
            }
        }
    }
    (prepared, failure)
}

/// COMMIT PREPARED (or ROLLBACK PREPARED) every prepared part at once; a
/// part that cannot be finished now is left to recovery.
async fn finish_all(prepared: Prepared, commit: bool, done: &mut Held) {
    let verb = if commit { "COMMIT" } else { "ROLLBACK" };
    let tasks: Vec<_> = prepared
        .into_iter()
        .map(|(shard, mut server, gid)| {
            tokio::spawn(async move {
                let answer = server.conn.query(&format!("{verb} PREPARED '{gid}'")).await;
                if let Some((code, message)) = answer.ok().and_then(|a| a.error) {
                    warn!(gid, code, message, "prepared transaction left to recovery");
                }
                (shard, server)
            })
        })
        .collect();
    for task in tasks {
        if let Ok(server) = task.await {
            done.push(server);
        }
    }
}
