//! Logs as an operator reads them: pgshard's JSON log format
//! (`log_format = "json"`, the subscriber `proxy::logging` builds) captured
//! while a 2-shard cluster runs slow statements (simple and extended
//! protocol) and a fast one. Each slow one (over
//! `log_min_duration_statement`) is logged once, with its
//! duration, route and shard, inside the client's session span (peer, user,
//! database, application_name); the fast one is not; no line carries colour
//! codes.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{create_sharded_schema, Cluster, SHARDING};
use router::config::LogFormat;

/// A writer into a buffer the test reads.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<serde_json::Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains('\u{1b}'), "colour codes in {text:?}");
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }
}

#[tokio::test]
async fn slow_queries_are_logged_as_json_in_the_client_span() {
    let captured = Captured::default();
    let writer = captured.clone();
    // The proxy runs in this process: the global subscriber sees its lines.
    let subscriber = proxy::logging::subscriber(LogFormat::Json, true, move || writer.clone());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let servers = common::servers(2);
    create_sharded_schema(&servers);
    let cluster = Cluster::start_sharded(servers, "log_min_duration_statement = 150", SHARDING);
    let client = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod application_name=slowpoke",
        cluster.port()
    ))
    .await
    .unwrap();
    client
        .simple_query("/* pgdog_shard: 1 */ SELECT pg_sleep(0.3)")
        .await
        .unwrap();
    client
        .simple_query("/* pgdog_shard: 0 */ SELECT 'quick'")
        .await
        .unwrap();
    // The extended protocol: timed from the Bind's request to its Sync.
    client
        .query("SELECT pg_sleep(0.2)::text AS slept", &[])
        .await
        .unwrap();

    let lines = captured.lines();
    let slow: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "slow query")
        .collect();
    assert_eq!(slow.len(), 2, "{lines:#?}");
    let line = slow[0];
    let fields = &line["fields"];
    assert!(fields["duration_ms"].as_f64().unwrap() >= 300.0, "{line}");
    assert_eq!(fields["route"], "one", "{line}");
    assert_eq!(fields["shards"], "[1]", "{line}");
    assert!(
        fields["statement"].as_str().unwrap().contains("pg_sleep"),
        "{line}"
    );
    assert_eq!(line["level"], "INFO");
    let span = &line["span"];
    assert_eq!(span["name"], "client", "{line}");
    assert_eq!(span["user"], "app", "{line}");
    assert_eq!(span["database"], "prod", "{line}");
    assert_eq!(span["application_name"], "slowpoke", "{line}");
    assert!(
        span["peer"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{line}"
    );
    let extended = &slow[1]["fields"];
    assert_eq!(extended["route"], "any", "{extended}");
    assert_eq!(
        extended["statement"], "SELECT pg_sleep(0.2)::text AS slept",
        "{extended}"
    );
    assert!(extended["duration_ms"].as_f64().unwrap() >= 200.0);
    // The login line is in the same span.
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "client logged in"
                && l["span"]["application_name"] == "slowpoke"),
        "{lines:#?}"
    );
}
