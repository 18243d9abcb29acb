//! `relay_floor`, bench/pgbench.sh's floor target, relays whole sessions of
//! a real Postgres: concurrent clients each on a server connection of its
//! own, a reply and a request far larger than a socket takes at once (the
//! paths that wait for room), and clients that leave while others stay.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use integration::PgServer;
use tokio_postgres::NoTls;

/// The relay process, killed when the test ends however it ends.
struct Relay(Child);

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn connect(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relays_whole_sessions_to_a_real_postgres() {
    let pg = PgServer::start().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_relay_floor"))
        .args(["--listen", "127.0.0.1:0", "--host", pg.host()])
        .args(["--port", &pg.port().to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _relay = Relay(child);
    let port = line.trim().rsplit(':').next().unwrap();
    let conninfo = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");

    let mut tasks = Vec::new();
    for i in 0..6i32 {
        let conninfo = conninfo.clone();
        tasks.push(tokio::spawn(async move {
            let client = connect(&conninfo).await;
            for j in 0..40i32 {
                let row = client
                    .query_one("SELECT $1::int4 * 2", &[&(i * 1000 + j)])
                    .await
                    .unwrap();
                assert_eq!(row.get::<_, i32>(0), (i * 1000 + j) * 2);
            }
            // 8 MB back in one DataRow, 4 MB out in one Bind.
            let row = client
                .query_one("SELECT repeat(md5($1::text), 250000)", &[&i.to_string()])
                .await
                .unwrap();
            assert_eq!(row.get::<_, String>(0).len(), 8_000_000);
            let big = "y".repeat(4_000_000);
            let row = client
                .query_one("SELECT length($1::text)", &[&big])
                .await
                .unwrap();
            assert_eq!(row.get::<_, i32>(0), 4_000_000);
            let row = client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap();
            row.get::<_, i32>(0)
        }));
    }
    let mut pids = HashSet::new();
    for task in tasks {
        // (A relay that lost bytes would leave its client waiting.)
        let pid = tokio::time::timeout(std::time::Duration::from_secs(60), task)
            .await
            .expect("a client waited over a minute");
        pids.insert(pid.unwrap());
    }
    assert_eq!(
        pids.len(),
        6,
        "each client has a server connection of its own"
    );

    // Those clients left; the relay still serves a new one.
    let client = connect(&conninfo).await;
    let row = client.query_one("SELECT 'still here'", &[]).await.unwrap();
    assert_eq!(row.get::<_, &str>(0), "still here");
}
