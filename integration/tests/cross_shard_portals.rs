//! Cross-shard SELECTs finished on the coordinator (`cross_shard_finish =
//! "coordinator"`, issue 34) read in parts: named portals read across
//! Syncs with row-limited Executes (tokio-postgres's `query_portal`, the
//! shape of pgjdbc's fetch size), and SQL cursors (DECLARE, FETCH, MOVE,
//! CLOSE; SCROLL and WITH HOLD ones too) over them, each compared with one
//! reference Postgres holding every row; what stays refused says so.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
    pub mod setup;
}

use common::connect;
use cross_shard_diff::setup::{self, client, temp_tables, Setup};
use tokio_postgres::{Client, SimpleQueryMessage};

/// Statements the streaming path refuses (or cannot read in parts), each
/// with a total ORDER BY.
const GATHERED: &[&str] = &[
    "SELECT id, rank() OVER (ORDER BY score DESC NULLS LAST, id) FROM users ORDER BY id",
    "SELECT u.id AS uid, o.id AS oid FROM users u JOIN orders o ON u.grp = o.qty ORDER BY 1, 2",
    "SELECT grp, count(*) FROM users GROUP BY grp ORDER BY grp NULLS FIRST",
    "SELECT id FROM users WHERE score > (SELECT avg(score) FROM users) ORDER BY id",
    "SELECT grp FROM users UNION SELECT qty FROM orders ORDER BY 1",
];

/// 2 shards and a reference, loaded; pgshard with `general` lines.
async fn start(general: &str) -> Setup {
    setup::start(general, 35).await
}

/// One value of `row` as text, read as whichever of the types the tests
/// use it is.
fn value(row: &tokio_postgres::Row, i: usize) -> String {
    row.try_get::<_, Option<i64>>(i)
        .map(|v| format!("{v:?}"))
        .or_else(|_| row.try_get::<_, Option<i32>>(i).map(|v| format!("{v:?}")))
        .or_else(|_| {
            row.try_get::<_, Option<String>>(i)
                .map(|v| format!("{v:?}"))
        })
        .unwrap_or_else(|e| format!("unreadable: {e}"))
}

fn texts(rows: &[tokio_postgres::Row]) -> Vec<String> {
    rows.iter()
        .map(|row| {
            (0..row.len())
                .map(|i| value(row, i))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

/// What a client saw: per statement, its rows and tag, or its SQLSTATE.
type Seen = Vec<Result<(Vec<Vec<Option<String>>>, u64), String>>;

/// `script` run statement by statement in the simple protocol.
async fn run_script(client: &Client, script: &[&str]) -> Seen {
    let mut seen = Vec::new();
    for sql in script {
        seen.push(match client.simple_query(sql).await {
            Ok(messages) => {
                let mut rows = Vec::new();
                let mut tag = 0;
                for message in messages {
                    match message {
                        SimpleQueryMessage::Row(row) => rows.push(
                            (0..row.len())
                                .map(|i| row.get(i).map(str::to_owned))
                                .collect(),
                        ),
                        SimpleQueryMessage::CommandComplete(n) => tag = n,
                        _ => {}
                    }
                }
                Ok((rows, tag))
            }
            Err(e) => Err(common::code(&e).unwrap_or("?").to_owned()),
        });
    }
    seen
}

/// The same script through pgshard and on the reference: the same answers.
async fn same_script(setup: &Setup, proxy: &Client, script: &[&str]) {
    let got = run_script(proxy, script).await;
    let want = run_script(&setup.direct, script).await;
    for ((sql, got), want) in script.iter().zip(&got).zip(&want) {
        assert_eq!(got, want, "{sql}\n  in {script:?}");
    }
}

/// `sql`'s rows read through a portal in parts of `fetch` rows (each part
/// at most that), with `between` run on the same transaction after the
/// first part; then the transaction committed.
async fn by_portal(client: &mut Client, sql: &str, fetch: i32, between: &str) -> Vec<String> {
    let tx = client.transaction().await.unwrap();
    let portal = tx.bind(sql, &[]).await.unwrap();
    let mut rows = Vec::new();
    loop {
        let part = tx.query_portal(&portal, fetch).await.unwrap();
        assert!(part.len() <= fetch as usize, "{sql}: {} rows", part.len());
        if rows.is_empty() && !between.is_empty() {
            tx.simple_query(between).await.unwrap();
        }
        if part.is_empty() {
            break;
        }
        rows.extend(texts(&part));
    }
    tx.commit().await.unwrap();
    rows
}

#[tokio::test(flavor = "multi_thread")]
async fn portals_read_in_parts_inside_blocks() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let mut proxy = client(&setup).await;
    let mut reference = connect(setup.reference.port(), "app", "app-pw", "shard_2")
        .await
        .unwrap();
    for (i, sql) in GATHERED.iter().enumerate() {
        let want = texts(&setup.direct.query(*sql, &[]).await.unwrap());
        assert!(!want.is_empty(), "{sql}");
        // Another gathered statement between parts: its temp tables are
        // others, and dropped after it.
        let between = GATHERED[(i + 1) % GATHERED.len()];
        for fetch in [1, 7, 1000] {
            let got = by_portal(&mut proxy, sql, fetch, between).await;
            assert_eq!(got, want, "{sql} in parts of {fetch}");
        }
        let on_reference = by_portal(&mut reference, sql, 3, between).await;
        assert_eq!(on_reference, want, "{sql} on the reference");
    }
    // Two portals open at once, read in turns.
    let tx = proxy.transaction().await.unwrap();
    let a = tx.bind(GATHERED[0], &[]).await.unwrap();
    let b = tx.bind(GATHERED[2], &[]).await.unwrap();
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    loop {
        let part_a = tx.query_portal(&a, 5).await.unwrap();
        let part_b = tx.query_portal(&b, 2).await.unwrap();
        if part_a.is_empty() && part_b.is_empty() {
            break;
        }
        got_a.extend(texts(&part_a));
        got_b.extend(texts(&part_b));
    }
    tx.commit().await.unwrap();
    let want_a = texts(&setup.direct.query(GATHERED[0], &[]).await.unwrap());
    let want_b = texts(&setup.direct.query(GATHERED[2], &[]).await.unwrap());
    assert_eq!((got_a, got_b), (want_a, want_b));
    // A portal bound but never executed goes with its block; its name is
    // free in the next one.
    let tx = proxy.transaction().await.unwrap();
    let _unread = tx.bind(GATHERED[1], &[]).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn cursors_over_gathered_selects() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    for sql in GATHERED {
        let declare = format!("DECLARE c CURSOR FOR {sql}");
        let script = [
            "BEGIN",
            &declare,
            "FETCH 3 FROM c",
            "MOVE 2 IN c",
            "FETCH FORWARD 4 FROM c",
            // Another gathered statement while the cursor is open.
            GATHERED[0],
            "FETCH ALL FROM c",
            "FETCH 1 FROM c",
            "CLOSE c",
            "FETCH 1 FROM c",
            "ROLLBACK",
        ];
        same_script(&setup, &proxy, &script).await;
        // SCROLL: backwards too, as Postgres moves it.
        let scroll = format!("DECLARE s SCROLL CURSOR FOR {sql}");
        let script = [
            "BEGIN",
            &scroll,
            "FETCH 5 FROM s",
            "FETCH BACKWARD 2 FROM s",
            "FETCH ABSOLUTE 3 FROM s",
            "FETCH LAST FROM s",
            "FETCH PRIOR FROM s",
            "MOVE FIRST IN s",
            "FETCH RELATIVE 1 FROM s",
            "COMMIT",
        ];
        same_script(&setup, &proxy, &script).await;
        // WITH HOLD inside a block: read after its COMMIT.
        let hold = format!("DECLARE h CURSOR WITH HOLD FOR {sql}");
        let script = [
            "BEGIN",
            &hold,
            "FETCH 2 FROM h",
            "COMMIT",
            "FETCH 3 FROM h",
            GATHERED[3],
            "FETCH ALL FROM h",
            "CLOSE h",
        ];
        same_script(&setup, &proxy, &script).await;
        // WITH HOLD outside a block, and one without (Postgres's 25P01).
        let script = [
            &hold,
            "FETCH 4 FROM h",
            "MOVE 1 IN h",
            "FETCH ALL FROM h",
            "CLOSE h",
            &declare,
        ];
        same_script(&setup, &proxy, &script).await;
    }
    // A cursor that fails to declare (an error in the finish) ends the
    // block; rolled back, its name is free.
    let failing =
        "DECLARE f CURSOR FOR SELECT 1 / (count(DISTINCT grp) - count(DISTINCT grp)) FROM users";
    let script = [
        "BEGIN",
        failing,
        "FETCH 1 FROM f",
        "ROLLBACK",
        "BEGIN",
        failing,
        "ROLLBACK",
    ];
    same_script(&setup, &proxy, &script).await;
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn what_stays_refused_says_so() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let mut proxy = client(&setup).await;
    // A READ ONLY block's coordinator is a session of its own: a cursor
    // or a portal read in parts there is refused, and the block ends.
    let tx = proxy
        .build_transaction()
        .read_only(true)
        .start()
        .await
        .unwrap();
    let portal = tx.bind(GATHERED[0], &[]).await.unwrap();
    let err = tx.query_portal(&portal, 5).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err}");
    assert!(
        common::describe(&err).contains("READ ONLY transaction block"),
        "{err}"
    );
    tx.rollback().await.unwrap();
    proxy.batch_execute("BEGIN READ ONLY").await.unwrap();
    let err = proxy
        .batch_execute(&format!("DECLARE c CURSOR FOR {}", GATHERED[0]))
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err}");
    proxy.batch_execute("ROLLBACK").await.unwrap();
    // Read whole in a READ ONLY block, it is answered.
    let tx = proxy
        .build_transaction()
        .read_only(true)
        .start()
        .await
        .unwrap();
    let got = texts(&tx.query(GATHERED[0], &[]).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(
        got,
        texts(&setup.direct.query(GATHERED[0], &[]).await.unwrap())
    );
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}
