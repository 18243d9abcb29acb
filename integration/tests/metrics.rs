//! The Prometheus / OpenMetrics endpoint: scraped over HTTP while a 2-shard
//! cluster serves keyed, keyless, failing and refused statements, and the
//! exposition parsed: pool (gauges, counters, wait / transaction / query
//! time histograms), cache, route and error metrics carry the configured
//! namespace, their labels and the counts the statements made.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::{create_sharded_schema, sharded_config, Cluster, SHARDING, USERS};
use integration::TestProxy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` over a fresh connection: the status line and the body.
async fn get(port: u16, path: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(body.len(), length, "Content-Length");
    (status, body.to_owned())
}

/// The samples of an exposition: `name{labels}` -> value.
fn samples(exposition: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for line in exposition
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        out.insert(series.to_owned(), value.parse().unwrap());
    }
    assert!(
        exposition.ends_with("# EOF\n"),
        "OpenMetrics ends with # EOF"
    );
    out
}

#[tokio::test]
async fn metrics_are_scraped_and_parsed() {
    let port = free_port();
    let servers = common::servers(2);
    create_sharded_schema(&servers);
    let general = format!("openmetrics_port = {port}\nopenmetrics_namespace = \"pgshard\"");
    let proxy = TestProxy::start(&sharded_config(&servers, &general, SHARDING), USERS).unwrap();
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers),
        general: format!("[general]\n{general}\n"),
        servers,
        copies_differ: None,
    };
    let client = cluster.connect().await;
    client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 1")
        .await
        .unwrap();
    client
        .simple_query("SELECT count(*) FROM orders")
        .await
        .unwrap();
    // The same text with another literal: an AST cache hit.
    client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 2")
        .await
        .unwrap();
    // A transaction on one shard, and a statement any shard can run.
    client
        .batch_execute("BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES (3, 1, 'x'); COMMIT")
        .await
        .unwrap();
    client.simple_query("SELECT 1").await.unwrap();
    let err = client.simple_query("SELECT 1/0").await.unwrap_err();
    assert_eq!(common::code(&err), Some("22012"));
    // Finished on the coordinator (what the streaming merge cannot do).
    client
        .simple_query("SELECT count(DISTINCT item) FROM orders")
        .await
        .unwrap();
    // Refused: a data-modifying WITH whose read spans shards.
    let err = client
        .simple_query(
            "WITH d AS (DELETE FROM orders WHERE item = 'none' RETURNING *) \
             SELECT count(*) FROM orders",
        )
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));

    let (status, body) = get(port, "/metrics").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let found = samples(&body);
    let value = |series: &str| {
        *found
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in:\n{body}"))
    };
    assert!(value("pgshard_routes_total{route=\"one\"}") >= 1.0);
    assert!(value("pgshard_routes_total{route=\"all\"}") >= 1.0);
    assert!(value("pgshard_routes_total{route=\"refused\"}") >= 1.0);
    assert!(value("pgshard_routes_total{route=\"coordinator\"}") >= 1.0);
    assert_eq!(value("pgshard_errors_total{class=\"22\"}"), 1.0);
    assert_eq!(value("pgshard_errors_total{class=\"0A\"}"), 1.0);
    assert!(value("pgshard_routes_total{route=\"any\"}") >= 1.0);
    assert_eq!(value("pgshard_routes_total{route=\"several\"}"), 0.0);
    for (shard, server) in cluster.servers.iter().enumerate() {
        let labels = format!(
            "{{cluster=\"prod\",user=\"app\",shard=\"{shard}\",role=\"primary\",host=\"127.0.0.1:{}\"}}",
            server.port()
        );
        for series in [
            "pool_queries_total",
            "pool_transactions_total",
            "pool_received_bytes_total",
            "pool_sent_bytes_total",
            "pool_wait_seconds_count",
            "pool_transaction_seconds_count",
            "pool_query_seconds_count",
        ] {
            let series = format!("pgshard_{series}{labels}");
            assert!(value(&series) >= 1.0, "{series} in:\n{body}");
        }
        // Nobody is connected to a server or waiting between statements.
        for series in [
            "pool_clients_active",
            "pool_clients_waiting",
            "pool_servers_active",
        ] {
            assert_eq!(value(&format!("pgshard_{series}{labels}")), 0.0, "{series}");
        }
        assert!(value(&format!("pgshard_pool_servers_idle{labels}")) >= 1.0);
        for histogram in ["pool_wait_seconds", "pool_query_seconds"] {
            let le = format!("pgshard_{histogram}_bucket{{le=\"+Inf\",{}", &labels[1..]);
            assert!(value(&le) >= 1.0, "{le}");
        }
        let sum = value(&format!("pgshard_pool_query_seconds_sum{labels}"));
        assert!(sum > 0.0 && sum < 60.0, "query seconds {sum}");
    }
    assert!(value("pgshard_query_cache_misses_total") >= 1.0);
    assert!(value("pgshard_query_cache_hits_total") >= 1.0);
    assert!(value("pgshard_query_cache_evictions_total") >= 0.0);
    assert!(value("pgshard_query_cache_entries") >= 1.0);
    assert!(value("pgshard_query_cache_bytes") >= 1.0);
    assert!(value("pgshard_clients") >= 1.0);

    let (status, _) = get(port, "/other").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
}
