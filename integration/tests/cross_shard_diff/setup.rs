//! The set-up the coordinator path's tests share (cross_shard_gather.rs,
//! cross_shard_portals.rs): two shards and a reference Postgres loaded
//! with the differential test's generated rows, pgshard over the shards.

use integration::{PgServer, TestProxy};
use tokio_postgres::{Client, SimpleQueryMessage};

use super::data::{self, Data};
use crate::common::{self, connect, sharded_config, USERS};

pub struct Setup {
    pub servers: Vec<PgServer>,
    /// The reference Postgres holding every row.
    pub reference: PgServer,
    pub direct: Client,
    pub proxy: TestProxy,
}

/// 2 shards and a reference, loaded with the rows of `seed`; pgshard with
/// `general` lines.
pub async fn start(general: &str, seed: u64) -> Setup {
    common::watch_proxy_panics();
    let data = Data::generate(seed);
    let mut servers = common::servers(3);
    let reference = servers.pop().unwrap();
    let mut shards = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let db = format!("shard_{i}");
        shards.push(connect(server.port(), "app", "app-pw", &db).await.unwrap());
    }
    let direct = connect(reference.port(), "app", "app-pw", "shard_2")
        .await
        .unwrap();
    data::load(&data, &shards, &direct).await;
    let config = sharded_config(&servers, general, data::SHARDING);
    let proxy = TestProxy::start(&config, USERS).unwrap();
    Setup {
        servers,
        reference,
        direct,
        proxy,
    }
}

pub async fn client(setup: &Setup) -> Client {
    connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// Temp tables on shard 0 (the coordinator), of any session.
pub async fn temp_tables(setup: &Setup) -> String {
    let shard = connect(setup.servers[0].port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    let rows = shard
        .simple_query("SELECT count(*) FROM pg_class WHERE relpersistence = 't'")
        .await
        .unwrap();
    rows.into_iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap()
}
