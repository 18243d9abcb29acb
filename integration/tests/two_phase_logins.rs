//! Two-phase commit with several server logins on one cluster: the
//! decider's record is written by the client's own login, so the decision
//! table another login made (a superuser mover, recovery on another user's
//! pool) must be writable by every login users.toml lists, and a login
//! that may not write it gets a clear 42501 with what to grant, and
//! nothing is committed anywhere.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::connect;
use integration::{PgServer, TestProxy};

/// `app`, an ordinary login, and `superuser`, whose server login is the
/// superuser. Recovery reads the shards with the pool of the user whose
/// name sorts first.
fn users(superuser: &str) -> String {
    format!(
        "{}[[users]]\nname = \"{superuser}\"\ndatabase = \"prod\"\npassword = \"{superuser}-pw\"\n\
         server_user = \"postgres\"\n",
        common::USERS
    )
}

fn shards() -> Vec<PgServer> {
    common::watch_proxy_panics();
    let servers = common::servers(2);
    common::create_sharded_schema(&servers);
    servers
}

fn start(servers: &[PgServer], superuser: &str) -> TestProxy {
    let general = "two_phase_commit = true\ntwo_phase_commit_recovery_interval = 0";
    let config = common::sharded_config(servers, general, common::SHARDING);
    TestProxy::start(&config, &users(superuser)).unwrap()
}

/// A key of `orders` on each of the two shards.
async fn keys(server: &PgServer) -> [i64; 2] {
    let client = connect(server.port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    let mut keys = [None, None];
    for key in 1..500i64 {
        let shard = common::postgres_hash_shard(&client, key, 2).await;
        keys[shard].get_or_insert(key);
    }
    [keys[0].unwrap(), keys[1].unwrap()]
}

/// One transaction writing a row on each shard, as `user`; COMMIT's error
/// (SQLSTATE and message) if it failed.
async fn write_both(
    proxy: &TestProxy,
    user: (&str, &str),
    keys: [i64; 2],
    id: i64,
) -> Option<(String, String)> {
    let client = connect(proxy.port(), user.0, user.1, "prod").await.unwrap();
    client.simple_query("BEGIN").await.unwrap();
    for key in keys {
        let sql = format!("INSERT INTO orders (tenant_id, id, item) VALUES ({key}, {id}, 'x')");
        client.simple_query(&sql).await.unwrap();
    }
    match client.simple_query("COMMIT").await {
        Ok(_) => None,
        Err(err) => {
            let db = err.as_db_error().expect("a server error");
            Some((db.code().code().to_owned(), db.message().to_owned()))
        }
    }
}

/// Rows of `orders` with `id` on each shard.
async fn rows(servers: &[PgServer], id: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let client = connect(server.port(), "app", "app-pw", &format!("shard_{i}"))
            .await
            .unwrap();
        let sql = format!("SELECT count(*) FROM orders WHERE id = {id}");
        let row = client.query_one(sql.as_str(), &[]).await.unwrap();
        out.push(row.get::<_, i64>(0));
    }
    out
}

#[tokio::test]
async fn a_decision_table_made_by_the_superuser_is_written_by_the_apps_login() {
    let servers = shards();
    // `analytics` sorts first: recovery makes the table at start, as postgres.
    let proxy = start(&servers, "analytics");
    let keys = keys(&servers[0]).await;
    // The superuser's login commits across shards first: it makes
    // pgshard.decisions on the decider, owned by postgres.
    assert_eq!(
        write_both(&proxy, ("analytics", "analytics-pw"), keys, 1).await,
        None
    );
    assert_eq!(rows(&servers, 1).await, vec![1, 1]);
    let app = write_both(&proxy, ("app", "app-pw"), keys, 2).await;
    assert_eq!(
        app, None,
        "the app's login may write the decisions the superuser made"
    );
    assert_eq!(rows(&servers, 2).await, vec![1, 1]);
}

#[tokio::test]
async fn a_login_that_may_not_write_the_decisions_is_told_what_to_grant_and_nothing_commits() {
    let servers = shards();
    // An older deployment: the table made by the superuser, granted to nobody.
    for (i, server) in servers.iter().enumerate() {
        server
            .psql(
                &format!("shard_{i}"),
                "CREATE SCHEMA pgshard; CREATE TABLE pgshard.decisions (txn text PRIMARY KEY, \
                 outcome text NOT NULL, decided_at timestamptz NOT NULL DEFAULT now())",
            )
            .unwrap();
    }
    // `mover` sorts after `app`: nothing that may grant runs before app commits.
    let proxy = start(&servers, "mover");
    let keys = keys(&servers[0]).await;
    let (code, message) = write_both(&proxy, ("app", "app-pw"), keys, 3)
        .await
        .expect("the commit fails");
    assert_eq!(code, "42501", "{message}");
    assert!(
        message.contains("GRANT SELECT, INSERT ON pgshard.decisions TO app"),
        "{message}"
    );
    assert_eq!(rows(&servers, 3).await, vec![0, 0], "nothing committed");
    // The table's owner commits once: pgshard grants the cluster's logins.
    assert_eq!(
        write_both(&proxy, ("mover", "mover-pw"), keys, 4).await,
        None
    );
    assert_eq!(write_both(&proxy, ("app", "app-pw"), keys, 5).await, None);
    assert_eq!(rows(&servers, 5).await, vec![1, 1]);
}
