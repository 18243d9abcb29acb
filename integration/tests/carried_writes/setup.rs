//! What the tests of carried writes share (`cross_shard_writes.rs`,
//! `cross_shard_writes_rows.rs`): shards and a reference Postgres loaded
//! alike, pgshard over the shards, a statement's outcome on either, the
//! written tables' contents, scripts and raw pipelines run on both.

use bytes::Bytes;
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::common::wire::{self, Wire};
use crate::common::{self, connect, sharded_config};
use crate::cross_shard_diff::data::{self, Data};
use integration::{PgServer, TestProxy};

/// `n` shards and a reference loaded with `seed`'s rows, pgshard over the
/// shards with `general` lines.
pub struct Setup {
    _servers: Vec<PgServer>,
    pub reference: PgServer,
    pub direct: Client,
    pub proxy: TestProxy,
    pub data: Data,
}

pub async fn start(n: usize, general: &str, seed: u64) -> Setup {
    common::watch_proxy_panics();
    let data = Data::generate(seed);
    let mut servers = common::servers(n + 1);
    let reference = servers.pop().unwrap();
    let mut shards = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let db = format!("shard_{i}");
        shards.push(connect(server.port(), "app", "app-pw", &db).await.unwrap());
    }
    let direct = connect(reference.port(), "app", "app-pw", &format!("shard_{n}"))
        .await
        .unwrap();
    data::load(&data, &shards, &direct).await;
    let config = sharded_config(&servers, general, data::SHARDING);
    // `raw` logs in without a password, for the raw socket.
    let proxy = TestProxy::start(&config, &common::raw_users()).unwrap();
    Setup {
        _servers: servers,
        reference,
        direct,
        proxy,
        data,
    }
}

pub async fn client(setup: &Setup) -> Client {
    connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// A statement's outcome: its command tags, or its error's code.
pub type Outcome = Result<Vec<String>, String>;

/// `sql` on `client`. Under load the proxy's read of the move records may
/// be late: it then refuses keyless statements for a moment and says to
/// retry, which this does.
pub async fn query(
    client: &Client,
    sql: &str,
) -> Result<Vec<SimpleQueryMessage>, tokio_postgres::Error> {
    let mut tries = 0;
    loop {
        match client.simple_query(sql).await {
            Err(e) if common::describe(&e).contains("has not read lately") && tries < 20 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            result => return result,
        }
    }
}

pub async fn outcome(client: &Client, sql: &str) -> Outcome {
    let result = query(client, sql).await;
    match result {
        Ok(messages) => Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::CommandComplete(n) => Some(n.to_string()),
                _ => None,
            })
            .collect()),
        Err(e) => {
            eprintln!("{sql}: {}", common::describe(&e));
            Err(common::code(&e).unwrap_or("?").to_owned())
        }
    }
}

pub async fn message(client: &Client, sql: &str) -> (String, String) {
    let e = query(client, sql).await.unwrap_err();
    (
        common::code(&e).unwrap_or("?").to_owned(),
        common::describe(&e),
    )
}

/// Every row of the written tables, in a fixed order, as text.
pub async fn contents(client: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT users::text FROM users ORDER BY id",
        "SELECT orders::text FROM orders ORDER BY user_id, id",
    ] {
        for message in query(client, sql).await.unwrap() {
            if let SimpleQueryMessage::Row(row) = message {
                out.push(row.get(0).unwrap_or("NULL").to_owned());
            }
        }
    }
    out
}

/// Raw sockets to pgshard and to the reference (as its superuser, who
/// logs in without a password).
pub async fn wires(setup: &Setup, n: usize) -> (Wire, Wire) {
    let proxy = Wire::login(setup.proxy.port(), "raw", "prod").await;
    let database = format!("shard_{n}");
    let direct = Wire::login(
        setup.reference.port(),
        integration::postgres_server::SUPERUSER,
        &database,
    )
    .await;
    (proxy, direct)
}

/// The same script through pgshard and on the reference: the same
/// outcomes, then the same tables.
pub async fn same_script(setup: &Setup, proxy: &Client, script: &[&str]) {
    for sql in script {
        let got = outcome(proxy, sql).await;
        let want = outcome(&setup.direct, sql).await;
        assert_eq!(got, want, "{sql}\n  in {script:?}");
    }
    assert!(
        contents(proxy).await == contents(&setup.direct).await,
        "tables differ after {script:?}"
    );
}

/// `messages` to pgshard and to the reference, each read to its
/// `readies`th ReadyForQuery: the same kinds of replies, rows, tags and
/// error codes.
pub async fn same_replies(wires: &mut (Wire, Wire), messages: &[Vec<u8>], readies: usize) {
    let messages = messages.concat();
    let mut outcomes = Vec::new();
    for wire in [&mut wires.0, &mut wires.1] {
        wire.send(&messages).await;
        let mut replies = Vec::new();
        for _ in 0..readies {
            replies.extend(wire.until_ready().await);
        }
        let completes: Vec<Bytes> = replies
            .iter()
            .filter(|(tag, _)| *tag == b'C')
            .map(|(_, body)| body.clone())
            .collect();
        let rows = wire::data_rows(&replies);
        outcomes.push((
            wire::tags(&replies),
            rows,
            completes,
            wire::errors(&replies),
        ));
    }
    assert_eq!(outcomes[0], outcomes[1], "pgshard, then the reference");
}
