//! A move's cutover hold (issue 33, step 4), against real servers: with a
//! logical shard marked as moving (`Shared::set_moving`) and its hold on
//! (`gate.shards`), as the mover will do, a statement that touches it
//! waits, in the simple and the extended protocol, and is routed again
//! when the hold is let go (by the placement as it is then); one held
//! longer than `cutover_timeout` gets a clear error; a transaction counted
//! before the hold is not stopped by it (the cutover waits for it); and
//! statements on other shards never wait. Split INSERTs, COPY FROM, row
//! moves and extended-protocol fan-outs wait too. Keyless statements and
//! schema changes on the moving group are refused (0A000) when the marker
//! says so.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Cluster;
use router::sharding::{GroupFunction, GroupId, Hasher};

/// `orders` and `moved` (a plain table) share group postgres/2.
const MOVED: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"moved\"
column = \"tenant_id\"
data_type = \"bigint\"
hasher = \"postgres\"
";

const GROUP: GroupId = GroupId {
    function: GroupFunction::Hash(Hasher::Postgres),
    shard_count: 2,
};

/// A 2-database cluster whose held statements wait at most
/// `cutover_timeout` ms; `moved` created on both; keys on database 0 and
/// on database 1 (logical shards 0 and 1).
async fn cluster(cutover_timeout: u64) -> (Cluster, i64, i64) {
    cluster_with(cutover_timeout, "").await
}

/// [`cluster`] with `extra` sections.
async fn cluster_with(cutover_timeout: u64, extra: &str) -> (Cluster, i64, i64) {
    common::watch_proxy_panics();
    let general = format!("cutover_timeout = {cutover_timeout}");
    let cluster = Cluster::start_sharded_raw(2, &general, &format!("{MOVED}\n{extra}"));
    for shard in cluster.shards().await {
        shard
            .batch_execute("CREATE TABLE moved (tenant_id bigint NOT NULL, v text NOT NULL)")
            .await
            .unwrap();
    }
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    (cluster, a, b)
}

/// Mark logical shard 1 as moving and hold it.
fn hold(cluster: &Cluster, refuse_keyless: bool) {
    let state = cluster.proxy.state();
    assert!(state.set_moving("prod", GROUP, &[1], refuse_keyless));
    state.gate.shards.set_held("prod", true);
}

fn release(cluster: &Cluster) {
    cluster.proxy.state().gate.shards.set_held("prod", false);
}

/// What the switch does: logical shard 1 of the group placed on database
/// 0 (the marker stays).
fn switch_to_database_0(cluster: &Cluster) {
    let state = cluster.proxy.state();
    let config = state.config();
    let mut next = (*config).clone();
    let prod = next.clusters.get_mut("prod").unwrap();
    let mut sharding = (*prod.sharding).clone();
    for table in &mut sharding.tables {
        if table.keys.group() == GROUP {
            table.keys.placement[1] = 0;
        }
    }
    prod.sharding = Arc::new(sharding);
    assert!(state.replace_sharding(&config, Arc::new(next)));
}

async fn count(cluster: &Cluster, shard: usize, sql: &str) -> i64 {
    let rows = common::column(&cluster.shard(shard).await, sql, "n").await;
    rows[0].parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_statements_wait_and_route_again_when_let_go() {
    let (cluster, a, b) = cluster(30_000).await;
    hold(&cluster, false);
    let extended = cluster.connect().await;
    let held_insert = tokio::spawn(async move {
        let started = Instant::now();
        let inserted = extended
            .execute(
                "INSERT INTO moved (tenant_id, v) VALUES ($1, 'extended')",
                &[&b],
            )
            .await;
        (inserted.map_err(|e| e.to_string()), started.elapsed())
    });
    let simple = cluster.connect().await;
    let held_select = tokio::spawn(async move {
        let sql = format!("INSERT INTO moved (tenant_id, v) VALUES ({b}, 'simple')");
        simple.simple_query(&sql).await.map_err(|e| e.to_string())
    });
    // Other shards go on: a key of logical shard 0, an omnisharded table.
    let other = cluster.connect().await;
    let started = Instant::now();
    let sql = format!("INSERT INTO moved (tenant_id, v) VALUES ({a}, 'other')");
    other.simple_query(&sql).await.unwrap();
    other
        .query("SELECT * FROM moved WHERE tenant_id = $1", &[&a])
        .await
        .unwrap();
    other.simple_query("SELECT * FROM countries").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!held_insert.is_finished() && !held_select.is_finished());
    assert_eq!(
        count(&cluster, 1, "SELECT count(*) AS n FROM moved").await,
        0
    );
    // The switch, then the release: both land on database 0.
    switch_to_database_0(&cluster);
    release(&cluster);
    let (inserted, waited) = held_insert.await.unwrap();
    assert_eq!(inserted, Ok(1));
    assert!(waited >= Duration::from_millis(400), "{waited:?}");
    held_select.await.unwrap().unwrap();
    let on_0 = format!("SELECT count(*) AS n FROM moved WHERE tenant_id = {b}");
    assert_eq!(count(&cluster, 0, &on_0).await, 2);
    assert_eq!(
        count(&cluster, 1, "SELECT count(*) AS n FROM moved").await,
        0
    );
    let (held, _) = cluster.proxy.state().metrics.move_holds();
    assert_eq!(held, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_held_past_cutover_timeout_gets_a_clear_error() {
    let (cluster, _, b) = cluster(300).await;
    hold(&cluster, false);
    let client = cluster.connect().await;
    let started = Instant::now();
    let err = client
        .query("SELECT * FROM orders WHERE tenant_id = $1", &[&b])
        .await
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(common::code(&err), Some("55P03"), "{err}");
    let message = err.as_db_error().unwrap().message();
    assert!(
        message.contains("waited cutover_timeout (300 ms)"),
        "{message}"
    );
    let sql = format!("SELECT * FROM orders WHERE tenant_id = {b}");
    let err = client.simple_query(&sql).await.unwrap_err();
    assert_eq!(common::code(&err), Some("55P03"), "{err}");
    // Let go: the same statements run.
    release(&cluster);
    client
        .query("SELECT * FROM orders WHERE tenant_id = $1", &[&b])
        .await
        .unwrap();
    client.simple_query(&sql).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_counted_before_the_hold_is_not_held_by_it() {
    let (cluster, _, b) = cluster(30_000).await;
    let state = Arc::clone(cluster.proxy.state());
    assert!(state.set_moving("prod", GROUP, &[1], false));
    let client = cluster.connect().await;
    client.batch_execute("BEGIN").await.unwrap();
    client
        .execute(
            "INSERT INTO moved (tenant_id, v) VALUES ($1, 'in txn')",
            &[&b],
        )
        .await
        .unwrap();
    assert_eq!(state.gate.shards.get("prod").inflight, 1);
    state.gate.shards.set_held("prod", true);
    // Its own statements go on; the cutover waits for its end.
    let started = Instant::now();
    client
        .execute("UPDATE moved SET v = 'updated' WHERE tenant_id = $1", &[&b])
        .await
        .unwrap();
    let sql = format!("SELECT * FROM moved WHERE tenant_id = {b}");
    client.simple_query(&sql).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        !state
            .gate
            .shards
            .drained("prod", Duration::from_millis(200))
            .await
    );
    client.batch_execute("COMMIT").await.unwrap();
    assert!(
        state
            .gate
            .shards
            .drained("prod", Duration::from_secs(5))
            .await
    );
    // A new transaction is held.
    let next = tokio::spawn(async move { client.simple_query(&sql).await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!next.is_finished());
    release(&cluster);
    next.await.unwrap().unwrap();
    let updated =
        format!("SELECT count(*) AS n FROM moved WHERE v = 'updated' AND tenant_id = {b}");
    assert_eq!(count(&cluster, 1, &updated).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_statements_and_schema_changes_on_the_moving_group_are_refused() {
    let (cluster, a, b) = cluster(30_000).await;
    let state = cluster.proxy.state();
    assert!(state.set_moving("prod", GROUP, &[1], true));
    let client = cluster.connect().await;
    let err = client
        .simple_query("SELECT count(*) FROM moved")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err}");
    let message = err.as_db_error().unwrap().message().to_owned();
    assert!(
        message.contains("without its sharding key tenant_id while logical shard(s) 1 of its placement group postgres/2 move"),
        "{message}"
    );
    let err = client
        .simple_query("ALTER TABLE orders ADD COLUMN note text")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err}");
    let message = err.as_db_error().unwrap().message();
    assert!(
        message.contains("schema change on orders refused"),
        "{message}"
    );
    // Keyed statements, and other tables, run (nothing is held).
    client
        .query("SELECT * FROM moved WHERE tenant_id = $1", &[&b])
        .await
        .unwrap();
    client
        .query("SELECT * FROM moved WHERE tenant_id = $1", &[&a])
        .await
        .unwrap();
    client
        .simple_query("SELECT * FROM countries")
        .await
        .unwrap();
    // The marker cleared: keyless statements run again.
    assert!(state.set_moving("prod", GROUP, &[], false));
    client
        .simple_query("SELECT count(*) FROM moved")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_inserts_and_copy_into_the_moving_group_are_held_too() {
    use futures_util::SinkExt;
    let (cluster, a, b) = cluster(30_000).await;
    hold(&cluster, false);
    // A multi-row INSERT split by key, one row on the moving shard.
    let split = cluster.connect().await;
    let held_split = tokio::spawn(async move {
        let sql = format!("INSERT INTO moved (tenant_id, v) VALUES ({a}, 'split'), ({b}, 'split')");
        split.simple_query(&sql).await.map(|_| ())
    });
    // COPY FROM into a table of the moving group.
    let copy = cluster.connect().await;
    let held_copy = tokio::spawn(async move {
        let sink = copy.copy_in("COPY moved (tenant_id, v) FROM STDIN").await?;
        let mut sink = std::pin::pin!(sink);
        let data = format!("{a}\tcopy\n{b}\tcopy\n");
        sink.send(bytes::Bytes::from(data)).await?;
        sink.as_mut().finish().await
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!held_split.is_finished() && !held_copy.is_finished());
    let none = "SELECT count(*) AS n FROM moved";
    assert_eq!(
        count(&cluster, 0, none).await + count(&cluster, 1, none).await,
        0
    );
    release(&cluster);
    held_split.await.unwrap().unwrap();
    assert_eq!(held_copy.await.unwrap().unwrap(), 2);
    let on = |key: i64| format!("SELECT count(*) AS n FROM moved WHERE tenant_id = {key}");
    assert_eq!(count(&cluster, 0, &on(a)).await, 2);
    assert_eq!(count(&cluster, 1, &on(b)).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_moves_and_extended_fan_outs_onto_the_moving_shard_are_held() {
    let rewrite = "[rewrite]\nenabled = true\nshard_key = \"rewrite\"\n";
    let (cluster, a, b) = cluster_with(30_000, rewrite).await;
    let setup = cluster.connect().await;
    let sql = format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'simple'), ({a}, 2, 'extended')"
    );
    setup.simple_query(&sql).await.unwrap();
    hold(&cluster, false);
    // Row moves from logical shard 0 to the moving one, in both protocols.
    let simple = cluster.connect().await;
    let held_simple = tokio::spawn(async move {
        let sql = format!("UPDATE orders SET tenant_id = {b} WHERE tenant_id = {a} AND id = 1");
        simple.simple_query(&sql).await.map(|_| ())
    });
    let extended = cluster.connect().await;
    let held_extended = tokio::spawn(async move {
        let sql = "UPDATE orders SET tenant_id = $1 WHERE tenant_id = $2 AND id = 2";
        extended.execute(sql, &[&b, &a]).await
    });
    // A keyless read in the extended protocol (a segment for both shards).
    let fan_out = cluster.connect().await;
    let held_fan_out = tokio::spawn(async move {
        let rows = fan_out.query("SELECT count(*) FROM orders", &[]).await?;
        Ok::<i64, tokio_postgres::Error>(rows[0].get(0))
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!held_simple.is_finished());
    assert!(!held_extended.is_finished());
    assert!(!held_fan_out.is_finished());
    let on_1 = format!("SELECT count(*) AS n FROM orders WHERE tenant_id = {b}");
    assert_eq!(count(&cluster, 1, &on_1).await, 0);
    release(&cluster);
    held_simple.await.unwrap().unwrap();
    assert_eq!(held_extended.await.unwrap().unwrap(), 1);
    assert_eq!(held_fan_out.await.unwrap().unwrap(), 2);
    assert_eq!(count(&cluster, 1, &on_1).await, 2);
}
