//! Clients for tests that run a workload through pgshard while something
//! happens to it (faults, shard moves): every statement's latency and
//! error (SQLSTATE or not) recorded ([`Seen`]), transactions tagged and
//! accounted for exactly ([`Ledger`]: committed, failed, in doubt), and the
//! messaging bench's pub/sub over `msg_counters` and `msg_log_p<N>`:
//! producers reserving offsets from a partition's counter ([`producer`])
//! and a consumer that notes any offset out of order ([`consumer`]).

// Test-harness code: a poisoned lock or an impossible conversion is a
// failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

/// Messaging partitions (`msg_counters` rows, `msg_log_p<N>` tables).
pub const PARTITIONS: i64 = 4;
/// Messages per producer transaction.
pub const BATCH: i64 = 5;

/// What the clients saw, shared by every task.
#[derive(Default)]
pub struct Seen {
    /// Slowest statement (or connect) and what it was.
    pub slowest: Mutex<(Duration, String)>,
    /// Errors by SQLSTATE.
    pub codes: Mutex<BTreeMap<String, u64>>,
    /// The first error of each SQLSTATE: what the client ran, what it got.
    pub first: Mutex<BTreeMap<String, String>>,
    /// Errors without a SQLSTATE (a connection closed under the client).
    pub unclean: Mutex<Vec<String>>,
    /// Transfers: committed (tag, delta), failed before COMMIT (tags),
    /// COMMIT failed (in doubt: tag, delta).
    pub transfers: Mutex<Ledger>,
    /// Producer transactions, tagged `w<writer>-<seq>`, the same way.
    pub batches: Mutex<Ledger>,
    /// Violations the consumer saw (a gap, an offset out of order).
    pub violations: Mutex<Vec<String>>,
    /// Messages the consumer read, per partition (its cursor).
    pub consumed: Mutex<BTreeMap<i64, i64>>,
}

/// Which tagged transactions committed, which surely did not, and which
/// may have (their COMMIT failed).
#[derive(Default)]
pub struct Ledger {
    pub committed: BTreeMap<String, i64>,
    pub failed: BTreeSet<String>,
    pub in_doubt: BTreeMap<String, i64>,
}

impl Seen {
    /// Time one statement; record its latency and, if it failed, its error.
    /// `last` is the error the client saw before on this connection: a
    /// connection closed after one (a FATAL) is its consequence.
    pub async fn timed<T>(
        &self,
        (what, last): (&str, &Mutex<Option<String>>),
        statement: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, tokio_postgres::Error> {
        let started = Instant::now();
        let result = statement.await;
        let took = started.elapsed();
        {
            let mut slowest = self.slowest.lock().unwrap();
            if took > slowest.0 {
                *slowest = (took, what.to_owned());
            }
        }
        if let Err(err) = &result {
            let mut before = last.lock().unwrap().clone();
            if before.is_none() && err.is_closed() {
                // A FATAL error the server sent while the client waited for
                // nothing ends its connection task, which notes it: give
                // that task a moment.
                tokio::time::sleep(Duration::from_millis(100)).await;
                before = last.lock().unwrap().clone();
            }
            *last.lock().unwrap() = Some(format!("{what}: {err}"));
            match err.code() {
                Some(code) => {
                    *self
                        .codes
                        .lock()
                        .unwrap()
                        .entry(code.code().to_owned())
                        .or_default() += 1;
                    self.first
                        .lock()
                        .unwrap()
                        .entry(code.code().to_owned())
                        .or_insert_with(|| format!("{what}: {err:?}"));
                }
                None if err.is_closed() && before.is_some() => {}
                None => self
                    .unclean
                    .lock()
                    .unwrap()
                    .push(format!("{what}: {err} (before it: {before:?})")),
            }
        }
        result
    }

    /// Forget the latencies and errors of the phase before.
    pub fn reset_phase(&self) {
        *self.slowest.lock().unwrap() = (Duration::ZERO, String::new());
        self.codes.lock().unwrap().clear();
        self.first.lock().unwrap().clear();
        self.unclean.lock().unwrap().clear();
    }
}

/// Tells the tasks to stop.
pub type Stop = Arc<AtomicBool>;

/// A client of pgshard, made again when pgshard closed the one before.
pub struct Conn {
    port: u16,
    client: Option<Client>,
    /// The last error the client saw on this connection (also a FATAL
    /// error that came while it waited for nothing).
    last: Arc<Mutex<Option<String>>>,
}

/// A connected client and its last error.
pub type On<'a> = (&'a Client, &'a Mutex<Option<String>>);

impl Conn {
    pub fn new(port: u16) -> Conn {
        Conn {
            port,
            client: None,
            last: Arc::new(Mutex::new(None)),
        }
    }

    /// The client, connected (timed) if need be.
    pub async fn get(&mut self, seen: &Seen) -> Option<On<'_>> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let conninfo = format!(
                "host=127.0.0.1 port={} user=app password=app-pw dbname=prod",
                self.port
            );
            let connecting = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls);
            self.last = Arc::new(Mutex::new(None));
            match seen.timed(("connect", &self.last), connecting).await {
                Ok((client, connection)) => {
                    self.client = Some(client);
                    self.last = Arc::new(Mutex::new(None));
                    let last = Arc::clone(&self.last);
                    tokio::spawn(async move {
                        if let Err(err) = connection.await {
                            if let Some(db) = err.as_db_error() {
                                let fatal =
                                    format!("(connection) {} {}", db.code().code(), db.message());
                                *last.lock().unwrap() = Some(fatal);
                            }
                        }
                    });
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return None;
                }
            }
        }
        self.client.as_ref().map(|client| (client, &*self.last))
    }
}

/// Note how the transaction tagged `tag` (worth `value`) ended.
pub fn record(ledger: &Mutex<Ledger>, outcome: Outcome, tag: String, value: i64) {
    let mut ledger = ledger.lock().unwrap();
    match outcome {
        Outcome::Committed => {
            ledger.committed.insert(tag, value);
        }
        Outcome::Failed => {
            ledger.failed.insert(tag);
        }
        Outcome::InDoubt => {
            ledger.in_doubt.insert(tag, value);
        }
    }
}

/// How a tagged transaction ended, as its client knows it.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Outcome {
    Committed,
    /// Failed before its COMMIT was sent: it cannot have committed.
    Failed,
    /// Its COMMIT failed: it may have committed.
    InDoubt,
}

/// BEGIN, `statements`, COMMIT; ROLLBACK after a failure before COMMIT.
pub async fn run_tagged(
    (client, last): On<'_>,
    seen: &Seen,
    what: &str,
    statements: &[String],
) -> Outcome {
    if seen
        .timed((what, last), client.batch_execute("BEGIN"))
        .await
        .is_err()
    {
        return Outcome::Failed;
    }
    for sql in statements {
        if seen
            .timed((what, last), client.batch_execute(sql))
            .await
            .is_err()
        {
            if !client.is_closed() {
                let _ = seen
                    .timed((what, last), client.batch_execute("ROLLBACK"))
                    .await;
            }
            return Outcome::Failed;
        }
    }
    match seen
        .timed((what, last), client.batch_execute("COMMIT"))
        .await
    {
        Ok(()) => Outcome::Committed,
        Err(_) => Outcome::InDoubt,
    }
}

/// A producer: batches of [`BATCH`] messages to each partition in turn,
/// offsets reserved from the partition's counter in the same transaction
/// (the messaging bench's pub/sub writer); payload `w<writer>-<seq>-<i>`.
pub async fn producer(port: u16, writer: u32, seen: Arc<Seen>, stop: Stop) {
    let mut conn = Conn::new(port);
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(client) = conn.get(&seen).await else {
            continue;
        };
        seq += 1;
        let p = i64::try_from(seq).unwrap() % PARTITIONS;
        let tag = format!("w{writer}-{seq}");
        // The counter's new value is known only inside the transaction: the
        // insert reads it back from the counter row (one shard, one
        // partition: the row lock orders the batches).
        let statements = [
            format!("UPDATE msg_counters SET next = next + {BATCH} WHERE partition_id = {p}"),
            format!(
                "INSERT INTO msg_log_p{p} (off, payload) \
                 SELECT c.next - {BATCH} + i - 1, convert_to('{tag}-' || i, 'UTF8') \
                 FROM msg_counters c, generate_series(1, {BATCH}) AS i WHERE c.partition_id = {p}"
            ),
        ];
        let outcome = run_tagged(client, &seen, "produce", &statements).await;
        record(&seen.batches, outcome, tag, p);
        if outcome != Outcome::Committed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The consumer: reads each partition's log from its cursor in offset
/// order, and notes any offset that is not the next one.
pub async fn consumer(port: u16, seen: Arc<Seen>, stop: Stop) {
    let mut conn = Conn::new(port);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        // It stops after a whole pass that read every partition and found
        // nothing new (a read that failed, say on a connection a fault
        // broke, is no proof of the end).
        let mut again = false;
        for p in 0..PARTITIONS {
            let Some((client, last)) = conn.get(&seen).await else {
                again = true;
                continue;
            };
            let cursor = *seen.consumed.lock().unwrap().entry(p).or_default();
            let sql = format!(
                "SELECT off FROM msg_log_p{p} WHERE off >= {cursor} ORDER BY off LIMIT 500"
            );
            let Ok(rows) = seen.timed(("consume", last), client.query(&sql, &[])).await else {
                again = true;
                continue;
            };
            again |= !rows.is_empty();
            let mut next = cursor;
            for row in rows {
                let off: i64 = row.get(0);
                if off != next {
                    let gap = format!("partition {p}: offset {off} where {next} was due");
                    seen.violations.lock().unwrap().push(gap);
                }
                next = off + 1;
            }
            seen.consumed.lock().unwrap().insert(p, next);
        }
        if stopping && !again {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
