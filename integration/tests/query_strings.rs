//! Simple-protocol query strings whose statements go to different shards
//! (`proxy/src/session/query_string.rs`), judged against one reference
//! Postgres holding the same schema: each string's replies through pgshard
//! (row descriptions, rows, command tags, errors with their messages,
//! notices, the one ReadyForQuery and its status) are the reference's, and
//! so are the tables after it. Strings pgshard cannot run exactly are
//! refused whole with 0A000 naming the statement, and nothing of them runs.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::wire::{query, sqlstate, Wire};
use common::{keys_on_both_shards, Cluster};
use integration::postgres_server::{HostAuth, ServerOptions};

/// A reply in a form both servers give alike: its kind and what it says
/// (a RowDescription's column names, a DataRow's values, a tag, an
/// error's or notice's SQLSTATE and message, the transaction status).
fn shape(replies: &[(u8, Bytes)]) -> Vec<String> {
    let field = |body: &[u8], code: u8| {
        body.split(|&b| b == 0)
            .find_map(|f| f.strip_prefix(&[code]))
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .unwrap_or_default()
    };
    let mut shapes = Vec::new();
    for (tag, body) in replies {
        let text = match tag {
            b'T' => {
                let count = u16::from_be_bytes([body[0], body[1]]);
                let mut at = 2;
                let mut names = Vec::new();
                for _ in 0..count {
                    let end = at + body[at..].iter().position(|&b| b == 0).unwrap();
                    names.push(String::from_utf8_lossy(&body[at..end]).into_owned());
                    at = end + 1 + 18;
                }
                format!("T {}", names.join(","))
            }
            b'D' => format!(
                "D {}",
                common::wire::data_rows(&[(b'D', body.clone())])[0].join("|")
            ),
            b'C' => format!("C {}", String::from_utf8_lossy(&body[..body.len() - 1])),
            b'E' | b'N' => format!(
                "{} {} {}",
                char::from(*tag),
                sqlstate(body).unwrap_or_default(),
                field(body, b'M')
            ),
            b'Z' => format!("Z {}", char::from(body[0])),
            b'I' => "I".to_owned(),
            // ParameterStatus: the servers' own, not the string's.
            b'S' => continue,
            other => format!("{}", char::from(*other)),
        };
        shapes.push(text);
    }
    shapes
}

/// pgshard over 2 shards and a reference Postgres with the same schema,
/// each with a raw connection.
struct Pair {
    cluster: Cluster,
    _reference: Vec<integration::postgres_server::PgServer>,
    proxy: Wire,
    direct: Wire,
    /// A sharding key on shard 0 and one on shard 1.
    keys: (i64, i64),
}

impl Pair {
    async fn start(general: &str) -> Pair {
        common::watch_proxy_panics();
        let cluster = Cluster::start_sharded_raw(2, general, "");
        let options = ServerOptions {
            host_auth: HostAuth::Trust,
            ..ServerOptions::default()
        };
        let reference = common::servers_with(1, &options);
        common::create_sharded_schema(&reference);
        let keys = keys_on_both_shards(&cluster).await;
        let proxy = Wire::login(cluster.port(), "raw", "prod").await;
        let direct = Wire::login(reference[0].port(), "app", "shard_0").await;
        Pair {
            cluster,
            _reference: reference,
            proxy,
            direct,
            keys,
        }
    }

    /// `sql` with `{a}` and `{b}` as the two keys.
    fn text(&self, sql: &str) -> String {
        sql.replace("{a}", &self.keys.0.to_string())
            .replace("{b}", &self.keys.1.to_string())
    }

    /// Send `sql` to both; their replies' shapes (pgshard's).
    async fn both(&mut self, sql: &str) -> (Vec<String>, Vec<String>) {
        let sql = self.text(sql);
        self.proxy.send(&query(&sql)).await;
        self.direct.send(&query(&sql)).await;
        let proxy = shape(&self.proxy.until_ready().await);
        let direct = shape(&self.direct.until_ready().await);
        (proxy, direct)
    }

    /// `queries` sent at once (pipelined) to both; every reply alike.
    async fn same_pipelined(&mut self, queries: &[&str]) {
        let mut bytes = Vec::new();
        for sql in queries {
            bytes.extend(query(&self.text(sql)));
        }
        self.proxy.send(&bytes).await;
        self.direct.send(&bytes).await;
        for sql in queries {
            let proxy = shape(&self.proxy.until_ready().await);
            let direct = shape(&self.direct.until_ready().await);
            assert_eq!(proxy, direct, "{} (pipelined)", self.text(sql));
        }
        self.same_tables().await;
    }

    /// `sql` answered alike by both, and the tables alike after it.
    async fn same(&mut self, sql: &str) -> Vec<String> {
        let (proxy, direct) = self.both(sql).await;
        assert_eq!(proxy, direct, "{}", self.text(sql));
        self.same_tables().await;
        proxy
    }

    /// The tables' rows alike through pgshard and on the reference.
    async fn same_tables(&mut self) {
        for table in [
            "SELECT tenant_id, id, item FROM orders ORDER BY tenant_id, id",
            "SELECT code, name FROM countries ORDER BY code",
            "SELECT relname FROM pg_class WHERE relname LIKE 'qs\\_%' ORDER BY relname",
        ] {
            let (proxy, direct) = self.both(table).await;
            assert_eq!(proxy, direct, "{table}");
        }
    }

    /// `sql` refused by pgshard with 0A000 whose message holds `says`;
    /// nothing of it ran (the tables still match the reference, which is
    /// not sent it).
    async fn refused(&mut self, sql: &str, says: &str) {
        let sql = self.text(sql);
        self.proxy.send(&query(&sql)).await;
        let replies = shape(&self.proxy.until_ready().await);
        assert_eq!(replies.len(), 2, "{sql}: {replies:?}");
        assert!(
            replies[0].starts_with("E 0A000 ") && replies[0].contains(says),
            "{sql}: {replies:?}"
        );
        assert_eq!(replies[1], "Z I", "{sql}");
        self.same_tables().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn strings_over_several_shards_answer_as_one_postgres() {
    let mut pair = Pair::start("").await;
    // Strings one server answers whole, as before.
    pair.same("SELECT 1; SELECT 2 AS two;; SELECT 'x' AS x")
        .await;
    pair.same(";").await;
    pair.same("SELECT 1; SELECT 1/0; SELECT 2").await;
    // Each statement to one shard, the shards differ.
    let replies = pair
        .same("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y')")
        .await;
    assert_eq!(replies, ["C INSERT 0 1", "C INSERT 0 1", "Z I"]);
    // Rows and tags in order, a keyless read merged in the middle, empty
    // statements skipped, comments kept.
    pair.same(
        "SELECT item FROM orders WHERE tenant_id = {a};; UPDATE orders SET item = item || '!' \
         WHERE tenant_id = {b}; /* all */ SELECT tenant_id, item FROM orders ORDER BY tenant_id; \
         DELETE FROM orders WHERE tenant_id = {a} AND id = 99;",
    )
    .await;
    // Sharded and omnisharded tables, and a statement any shard answers.
    pair.same(
        "INSERT INTO countries (code, name) VALUES ('fr', 'France'); SELECT 1 AS one; \
         INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 2, 'z'); SELECT name FROM countries",
    )
    .await;
    // An error stops the string and rolls back what it did before.
    let replies = pair
        .same(
            "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 3, 'p'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'dup'); \
             INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 4, 'q')",
        )
        .await;
    assert_eq!(replies[0], "C INSERT 0 1");
    assert!(replies[1].starts_with("E 23505 "), "{replies:?}");
    assert_eq!(replies[2..], ["Z I"]);
    pair.same("UPDATE orders SET item = 'u' WHERE tenant_id = {b}; SELECT 1/0; DELETE FROM orders")
        .await;
    // A keyless read that has its rows before the shards are done (a
    // LIMIT) leaves the transaction whole: its shards are not cancelled.
    pair.same(
        "SELECT tenant_id, id FROM orders ORDER BY tenant_id, id LIMIT 0; \
         INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 20, 'l'); \
         SELECT id FROM orders ORDER BY id LIMIT 1; \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 20, 'l')",
    )
    .await;
    pair.same(
        "SELECT id = 1, coalesce(item, '?'), coalesce(item, '?') FROM orders \
         ORDER BY coalesce(item, '?') ASC NULLS LAST, id ASC NULLS LAST LIMIT 0 OFFSET 39; \
         UPDATE orders SET item = 'k' WHERE tenant_id = {a}; UPDATE orders SET item = 'k' WHERE tenant_id = {b}",
    )
    .await;
    // Schema changes on every shard, in the one transaction.
    pair.same("CREATE TABLE qs_a (id int); CREATE TABLE qs_b (id int PRIMARY KEY)")
        .await;
    pair.same("CREATE TABLE qs_c (id int); CREATE TABLE qs_a (id int)")
        .await;
    pair.same("DROP TABLE qs_a; DROP TABLE qs_b").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn blocks_in_strings_open_and_end_as_on_one_postgres() {
    let mut pair = Pair::start("").await;
    let replies = pair
        .same(
            "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 5, 'b'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 5, 'b'); \
             COMMIT",
        )
        .await;
    assert_eq!(replies.first().map(String::as_str), Some("C BEGIN"));
    assert_eq!(replies.last().map(String::as_str), Some("Z I"));
    // An error in a block leaves it aborted for the client to end.
    let replies = pair
        .same(
            "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 6, 'c'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 5, 'dup'); \
             COMMIT",
        )
        .await;
    assert_eq!(replies.last().map(String::as_str), Some("Z E"));
    pair.same("SELECT 1").await;
    pair.same("ROLLBACK").await;
    // A block left open, ended by the next string, which goes on in an
    // implicit transaction of its own.
    let replies = pair
        .same("BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 7, 'd'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 7, 'd')")
        .await;
    assert_eq!(replies.last().map(String::as_str), Some("Z T"));
    pair.same(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 8, 'e'); COMMIT; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 8, 'e'); \
         SELECT count(*) FROM orders",
    )
    .await;
    // After a COMMIT in the string, an error rolls back only what follows.
    pair.same(
        "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 9, 'f'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 9, 'f'); \
         COMMIT; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 10, 'g'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 9, 'dup')",
    )
    .await;
    // A BEGIN and a string sent together: the string runs in the block.
    pair.same_pipelined(&[
        "BEGIN",
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 13, 'p'); \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 13, 'p')",
        "ROLLBACK",
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 14, 'p'); \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 14, 'p')",
        "SELECT count(*) FROM orders",
    ])
    .await;
    // Savepoints inside the string's block.
    pair.same(
        "BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 11, 'h'); SAVEPOINT s; \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 11, 'h'); ROLLBACK TO s; INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 12, 'i'); \
         COMMIT",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn strings_that_cannot_run_exactly_are_refused_whole() {
    let mut pair = Pair::start("").await;
    pair.refused(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); SET application_name = 'x'; \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y')",
        "cannot run statement 2 (SET APPLICATION_NAME) that way",
    )
    .await;
    pair.refused(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); VACUUM orders",
        "statement 2 (VACUUM ORDERS)",
    )
    .await;
    pair.refused(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); BEGIN; INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y'); COMMIT",
        "statement 2 (BEGIN)",
    )
    .await;
    pair.refused(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y'); COMMIT",
        "statement 3 (COMMIT)",
    )
    .await;
    pair.refused(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); \
         SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) FROM orders",
        "statement 2 of this query string: ",
    )
    .await;
    // The session goes on as usual.
    pair.same("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y')")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn strings_commit_with_two_phase_commit_when_on() {
    let mut pair = Pair::start(
        "two_phase_commit = true\ntwo_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc\"",
    )
    .await;
    pair.same("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y')")
        .await;
    pair.same("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 2, 'x'); INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'dup')")
        .await;
    // Nothing is left prepared on a shard.
    for shard in pair.cluster.shards().await {
        let row = shard
            .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 0);
    }
}

/// The same reads as statements of a block the client opened: a LIMIT met
/// early does not abort the block on the shards.
#[tokio::test(flavor = "multi_thread")]
async fn a_limit_met_early_leaves_a_block_whole() {
    let mut pair = Pair::start("").await;
    // Enough rows that each shard is still sending when the merge has
    // its one row (a cancel then would abort the block there).
    for (shard, key) in [(0, "{a}"), (1, "{b}")] {
        let insert = format!(
            "/* pgdog_shard: {shard} */ INSERT INTO orders (tenant_id, id, item) \
             SELECT {key}, g, 'x' FROM generate_series(1, 50000) g"
        );
        let (proxy, direct) = pair.both(&insert).await;
        assert_eq!(proxy, direct, "{insert}");
    }
    for statement in [
        "BEGIN",
        "SELECT tenant_id, id FROM orders ORDER BY id, tenant_id LIMIT 0 OFFSET 40000",
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 0, 'z')",
        "SELECT id FROM orders ORDER BY id DESC, tenant_id LIMIT 1",
        "INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 0, 'z')",
        "COMMIT",
        "SELECT tenant_id, id FROM orders ORDER BY id, tenant_id LIMIT 0 OFFSET 40000; \
         INSERT INTO orders (tenant_id, id, item) VALUES ({a}, -1, 'z'); \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, -1, 'z')",
    ] {
        let (proxy, direct) = pair.both(statement).await;
        assert_eq!(proxy, direct, "{statement}");
    }
    let count = "SELECT count(*) FROM orders";
    let (proxy, direct) = pair.both(count).await;
    assert_eq!(proxy, direct);
}

/// In session mode, where the client keeps its servers between
/// transactions, as in transaction mode.
#[tokio::test(flavor = "multi_thread")]
async fn strings_in_session_mode() {
    let mut pair = Pair::start("pooler_mode = \"session\"").await;
    for sql in [
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'x'); \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'y')",
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 2, 'x'); \
         INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'dup')",
        "BEGIN; UPDATE orders SET item = 'u' WHERE tenant_id = {a}; \
         UPDATE orders SET item = 'u' WHERE tenant_id = {b}; COMMIT",
        "UPDATE orders SET item = 'v' WHERE tenant_id = {b}; SELECT tenant_id, item FROM orders ORDER BY tenant_id",
        "SELECT 1",
    ] {
        pair.same(sql).await;
    }
}
