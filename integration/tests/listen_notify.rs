//! LISTEN/NOTIFY in transaction mode through pgshard's relay (pool size
//! 1, so the listening connection is plainly not a pooled one): notified
//! from another client and from the server directly, delivered at once to
//! an idle client and after a busy one's transaction, never for a
//! rolled-back NOTIFY, LISTEN in a transaction at its commit, UNLISTEN and
//! UNLISTEN *, the extended protocol, two shards (each notification
//! once), many listeners, a slow client cut off, a killed listening
//! connection made again, and the notifying process's id.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{column, Cluster};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

const POOL: &str = "default_pool_size = 1\ncheckout_timeout = 2000";

/// What a listening client's connection saw.
#[derive(Debug, PartialEq)]
enum Seen {
    /// (process id, channel, payload).
    Note(i32, String, String),
    /// The connection ended: the error's SQLSTATE.
    Closed(Option<String>),
}

struct Listener {
    client: Client,
    seen: mpsc::UnboundedReceiver<Seen>,
}

impl Listener {
    async fn connect(port: u16) -> Listener {
        let conninfo = format!("host=127.0.0.1 port={port} user=app password=app-pw dbname=prod");
        let (client, mut connection) = tokio_postgres::connect(&conninfo, NoTls).await.unwrap();
        let (tx, seen) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = stream.next().await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => {
                        let note = Seen::Note(
                            n.process_id(),
                            n.channel().to_owned(),
                            n.payload().to_owned(),
                        );
                        let _ = tx.send(note);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        let code = error.code().map(|c| c.code().to_owned());
                        let _ = tx.send(Seen::Closed(code));
                        return;
                    }
                }
            }
            let _ = tx.send(Seen::Closed(None));
        });
        Listener { client, seen }
    }

    /// What the connection sees next.
    async fn next(&mut self) -> Seen {
        tokio::time::timeout(Duration::from_secs(5), self.seen.recv())
            .await
            .expect("no notification within 5 s")
            .unwrap()
    }

    /// The next notification's payload.
    async fn payload(&mut self) -> String {
        match self.next().await {
            Seen::Note(_, _, payload) => payload,
            other => panic!("expected a notification, got {other:?}"),
        }
    }

    /// Nothing arrives for a while.
    async fn nothing(&mut self) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(self.seen.try_recv().ok(), None);
    }
}

/// How many server connections of database `shard_0` are LISTENing (the
/// relay's last statement there).
async fn listening_connections(cluster: &Cluster) -> String {
    let direct = cluster.shard(0).await;
    column(
        &direct,
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = 'shard_0' AND query LIKE 'LISTEN %'",
        "n",
    )
    .await
    .remove(0)
}

#[tokio::test]
async fn idle_listeners_get_notifications_from_clients_and_the_server() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    // The pooled connection does not listen: the relay's own does.
    assert_eq!(
        column(
            &listener.client,
            "SELECT count(*) AS n FROM pg_listening_channels()",
            "n"
        )
        .await,
        ["0"]
    );
    assert_eq!(listening_connections(&cluster).await, "1");
    let notifier = cluster.connect().await;
    notifier.batch_execute("NOTIFY jobs, 'one'").await.unwrap();
    assert_eq!(listener.payload().await, "one");
    notifier
        .batch_execute("SELECT pg_notify('jobs', 'two')")
        .await
        .unwrap();
    assert_eq!(listener.payload().await, "two");
    // Straight on the server, as psql would.
    cluster.servers[0]
        .psql("shard_0", "NOTIFY jobs, 'three'")
        .unwrap();
    assert_eq!(listener.payload().await, "three");
    // Other channels are not delivered.
    notifier.batch_execute("NOTIFY other, 'x'").await.unwrap();
    listener.nothing().await;
}

#[tokio::test]
async fn the_process_id_is_the_notifying_server_process() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    let direct = cluster.shard(0).await;
    let pid: i32 = direct
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    direct.batch_execute("NOTIFY jobs, 'p'").await.unwrap();
    assert_eq!(
        listener.next().await,
        Seen::Note(pid, "jobs".into(), "p".into())
    );
}

#[tokio::test]
async fn delivery_waits_for_the_listeners_transaction_to_end() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    listener
        .client
        .batch_execute("BEGIN; SELECT 1")
        .await
        .unwrap();
    cluster.servers[0]
        .psql("shard_0", "NOTIFY jobs, 'held'")
        .unwrap();
    listener.nothing().await;
    listener.client.batch_execute("SELECT 2").await.unwrap();
    listener.nothing().await;
    listener.client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(listener.payload().await, "held");
}

#[tokio::test]
async fn notify_is_sent_at_commit_and_never_after_a_rollback() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    let notifier = cluster.connect().await;
    notifier
        .batch_execute(
            "BEGIN; NOTIFY jobs, 'rolled back'; SELECT pg_notify('jobs', 'also'); ROLLBACK",
        )
        .await
        .unwrap();
    notifier.batch_execute("BEGIN").await.unwrap();
    notifier
        .batch_execute("NOTIFY jobs, 'committed'")
        .await
        .unwrap();
    listener.nothing().await;
    notifier.batch_execute("COMMIT").await.unwrap();
    assert_eq!(listener.payload().await, "committed");
    listener.nothing().await;
}

#[tokio::test]
async fn listen_in_a_transaction_takes_effect_at_commit() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    let notifier = cluster.connect().await;
    listener.client.batch_execute("BEGIN").await.unwrap();
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    listener.client.batch_execute("ROLLBACK").await.unwrap();
    notifier.batch_execute("NOTIFY jobs, 'no'").await.unwrap();
    listener.nothing().await;
    listener.client.batch_execute("BEGIN").await.unwrap();
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    listener.client.batch_execute("COMMIT").await.unwrap();
    notifier.batch_execute("NOTIFY jobs, 'yes'").await.unwrap();
    assert_eq!(listener.payload().await, "yes");
    // UNLISTEN in a rolled-back transaction changes nothing.
    listener.client.batch_execute("BEGIN").await.unwrap();
    listener
        .client
        .batch_execute("UNLISTEN jobs")
        .await
        .unwrap();
    listener.client.batch_execute("ROLLBACK").await.unwrap();
    notifier
        .batch_execute("NOTIFY jobs, 'still'")
        .await
        .unwrap();
    assert_eq!(listener.payload().await, "still");
    // In a failed transaction LISTEN is refused, as Postgres does.
    listener.client.batch_execute("BEGIN").await.unwrap();
    listener
        .client
        .batch_execute("SELECT 1/0")
        .await
        .unwrap_err();
    let error = listener.client.batch_execute("LISTEN x").await.unwrap_err();
    assert_eq!(common::code(&error), Some("25P02"));
    listener.client.batch_execute("ROLLBACK").await.unwrap();
}

#[tokio::test]
async fn unlisten_and_unlisten_all_leave_channels() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    let notifier = cluster.connect().await;
    // The extended protocol (tokio-postgres's execute) as well.
    listener.client.execute("LISTEN a", &[]).await.unwrap();
    listener
        .client
        .batch_execute("LISTEN \"B b\"; LISTEN c")
        .await
        .unwrap();
    listener.client.batch_execute("UNLISTEN a").await.unwrap();
    notifier
        .batch_execute("NOTIFY a, '1'; NOTIFY \"B b\", '2'")
        .await
        .unwrap();
    assert_eq!(listener.payload().await, "2");
    listener.nothing().await;
    listener.client.execute("UNLISTEN *", &[]).await.unwrap();
    notifier
        .batch_execute("NOTIFY \"B b\", '3'; NOTIFY c, '4'")
        .await
        .unwrap();
    listener.nothing().await;
    // The last listener gone, the relay closes its connection.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(listening_connections(&cluster).await, "0");
}

#[tokio::test]
async fn a_client_that_leaves_unsubscribes() {
    let cluster = Cluster::start(POOL);
    let listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    assert_eq!(listening_connections(&cluster).await, "1");
    drop(listener);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(listening_connections(&cluster).await, "0");
}

/// A LISTEN in a string with other statements, first or not, is refused
/// (0A000) rather than run on a pooled server whose reset would lose it; a
/// later UNLISTEN passes (asyncpg's reset string has one).
#[tokio::test]
async fn a_listen_among_other_statements_is_refused() {
    let cluster = Cluster::start(POOL);
    let client = cluster.connect().await;
    for sql in [
        "SELECT 1; LISTEN jobs",
        "LISTEN jobs; SELECT 1",
        "select 1;listen jobs",
    ] {
        let error = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(common::code(&error), Some("0A000"), "{sql}: {error}");
    }
    assert_eq!(listening_connections(&cluster).await, "0");
    client
        .batch_execute("SELECT 'a; listen b'; SELECT 2")
        .await
        .unwrap();
}

#[tokio::test]
async fn many_listeners_each_get_every_notification() {
    let cluster = Cluster::start(POOL);
    let mut listeners = Vec::new();
    for _ in 0..20 {
        let listener = Listener::connect(cluster.port()).await;
        listener.client.batch_execute("LISTEN jobs").await.unwrap();
        listeners.push(listener);
    }
    assert_eq!(listening_connections(&cluster).await, "1");
    let notifier = cluster.connect().await;
    notifier
        .batch_execute("NOTIFY jobs, 'a'; NOTIFY jobs, 'b'")
        .await
        .unwrap();
    for listener in &mut listeners {
        assert_eq!(listener.payload().await, "a");
        assert_eq!(listener.payload().await, "b");
        listener.nothing().await;
    }
}

#[tokio::test]
async fn two_shards_deliver_each_notification_once() {
    let cluster = Cluster::start_sharded(common::servers(2), POOL, common::SHARDING);
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    let notifier = cluster.connect().await;
    // pgshard sends a NOTIFY to one shard, and the servers send their own
    // straight on each shard.
    for i in 0..6 {
        notifier
            .batch_execute(&format!("NOTIFY jobs, 'p{i}'"))
            .await
            .unwrap();
    }
    for shard in 0..2 {
        cluster.servers[shard]
            .psql(
                &format!("shard_{shard}"),
                &format!("NOTIFY jobs, 's{shard}'"),
            )
            .unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..8 {
        got.push(listener.payload().await);
    }
    // pgshard's, sent one after the other, arrive in order (it sends them
    // all to one shard).
    let ours: Vec<&str> = got
        .iter()
        .map(String::as_str)
        .filter(|p| p.starts_with('p'))
        .collect();
    assert_eq!(ours, ["p0", "p1", "p2", "p3", "p4", "p5"]);
    got.sort();
    assert_eq!(got, ["p0", "p1", "p2", "p3", "p4", "p5", "s0", "s1"]);
    listener.nothing().await;
    // pgshard answers BEGIN and opens the transaction on the first shard a
    // statement needs: a NOTIFY opens it too, so that a ROLLBACK drops it.
    for notify in [
        "NOTIFY jobs, 'rolled back'",
        "SELECT pg_notify('jobs', 'also')",
    ] {
        notifier.batch_execute("BEGIN").await.unwrap();
        notifier.batch_execute(notify).await.unwrap();
        notifier.batch_execute("ROLLBACK").await.unwrap();
    }
    listener.nothing().await;
    notifier.batch_execute("BEGIN").await.unwrap();
    notifier
        .batch_execute("SELECT pg_notify('jobs', 'at commit')")
        .await
        .unwrap();
    listener.nothing().await;
    notifier.batch_execute("COMMIT").await.unwrap();
    assert_eq!(listener.payload().await, "at commit");
}

#[tokio::test]
async fn a_client_too_far_behind_is_disconnected() {
    let cluster = Cluster::start(&format!("{POOL}\npub_sub_channel_size = 4"));
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    listener.client.batch_execute("BEGIN").await.unwrap();
    // The listener's transaction holds the pool's only connection.
    let notifier = cluster.shard(0).await;
    for i in 0..6 {
        notifier
            .batch_execute(&format!("NOTIFY jobs, '{i}'"))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    listener.client.batch_execute("COMMIT").await.unwrap();
    for i in 0..4 {
        assert_eq!(listener.payload().await, i.to_string());
    }
    // The FATAL error ends the connection (tokio-postgres reports an
    // error no request waited for as it can).
    match listener.next().await {
        Seen::Closed(code) => assert!(
            code.is_none() || code.as_deref() == Some("54000"),
            "{code:?}"
        ),
        other => panic!("expected the connection to end, got {other:?}"),
    }
    assert!(listener.client.batch_execute("SELECT 1").await.is_err());
    // Others go on.
    let mut other = Listener::connect(cluster.port()).await;
    other.client.batch_execute("LISTEN jobs").await.unwrap();
    notifier
        .batch_execute("NOTIFY jobs, 'after'")
        .await
        .unwrap();
    assert_eq!(other.payload().await, "after");
}

#[tokio::test]
async fn a_killed_listening_connection_is_made_again() {
    let cluster = Cluster::start(POOL);
    let mut listener = Listener::connect(cluster.port()).await;
    listener.client.batch_execute("LISTEN jobs").await.unwrap();
    let direct = cluster.shard(0).await;
    let killed = column(
        &direct,
        "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = 'shard_0' AND query LIKE 'LISTEN %'",
        "n",
    )
    .await;
    assert_eq!(killed, ["1"]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while listening_connections(&cluster).await != "1" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not listening again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    direct.batch_execute("NOTIFY jobs, 'again'").await.unwrap();
    assert_eq!(listener.payload().await, "again");
}

#[tokio::test]
async fn pub_sub_channel_size_zero_refuses_listen() {
    let cluster = Cluster::start(&format!("{POOL}\npub_sub_channel_size = 0"));
    let client = cluster.connect().await;
    let error = client.batch_execute("LISTEN jobs").await.unwrap_err();
    assert_eq!(common::code(&error), Some("0A000"));
    let error = client
        .batch_execute("LISTEN jobs; SELECT 1")
        .await
        .unwrap_err();
    assert_eq!(common::code(&error), Some("0A000"));
}
