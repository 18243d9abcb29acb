//! An UPDATE that changes a row's sharding key, with PgDog's `[rewrite]
//! shard_key = "rewrite"`: the row moves to its new key's shard (deleted
//! where it was, inserted with the UPDATE's values where its key goes,
//! one atomic unit), in both protocols, on 2 and 4 shards whose tables are
//! hash partitions holding only their own rows (a row put on the wrong
//! shard fails loudly), compared with a reference Postgres running the
//! same UPDATEs. Same shard: a plain UPDATE. No row: `UPDATE 0`. Several
//! rows: an error and nothing changed. Without the setting: refused, as
//! before.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::wire::{self, Wire};
use common::Cluster;
use tokio_postgres::SimpleQueryMessage;

const MOVES: &str =
    "[rewrite]\nenabled = true\nsplit_inserts = \"rewrite\"\nshard_key = \"rewrite\"\n";

/// A reference server with `orders` as one plain table.
async fn reference() -> (integration::PgServer, tokio_postgres::Client) {
    let server = common::servers(1).remove(0);
    server
        .psql(
            "shard_0",
            "SET ROLE app; CREATE TABLE orders (tenant_id bigint NOT NULL, id bigint NOT NULL, \
             item text NOT NULL, PRIMARY KEY (tenant_id, id))",
        )
        .unwrap();
    let client = common::connect(server.port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    (server, client)
}

/// Keys 1..100 by the shard of `n` they hash to.
async fn keys_by_shard(cluster: &Cluster, n: usize) -> Vec<Vec<i64>> {
    let direct = cluster.shard(0).await;
    let mut by_shard = vec![Vec::new(); n];
    for key in 1..100i64 {
        by_shard[common::postgres_hash_shard(&direct, key, n).await].push(key);
    }
    by_shard
}

/// `orders`' rows on each shard, as sorted `tenant_id|id|item` lines.
async fn shard_rows(cluster: &Cluster) -> Vec<Vec<String>> {
    let sql = "SELECT tenant_id || '|' || id || '|' || item AS r FROM orders ORDER BY 1";
    let mut all = Vec::new();
    for shard in cluster.shards().await {
        all.push(common::column(&shard, sql, "r").await);
    }
    all
}

/// Every shard holds exactly the reference's rows whose keys hash to it.
async fn same_as_reference(cluster: &Cluster, reference: &tokio_postgres::Client) {
    let shards = shard_rows(cluster).await;
    let n = shards.len();
    for (i, held) in shards.iter().enumerate() {
        let sql = format!(
            "SELECT tenant_id || '|' || id || '|' || item AS r FROM orders \
             WHERE ((hashint8extended(tenant_id, 8816678312871386365)::numeric \
             + 18446744073709551616 + 5305509591434766563) % 18446744073709551616) % {n} = {i} ORDER BY 1"
        );
        assert_eq!(
            held,
            &common::column(reference, &sql, "r").await,
            "shard {i} of {n}"
        );
    }
}

/// Run `sql` as a simple query through pgshard and on the reference: the
/// same tag.
async fn both(
    client: &tokio_postgres::Client,
    reference: &tokio_postgres::Client,
    sql: &str,
) -> String {
    let tag = |messages: Vec<SimpleQueryMessage>| {
        messages.iter().find_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
    };
    let through = tag(client.simple_query(sql).await.unwrap());
    let direct = tag(reference.simple_query(sql).await.unwrap());
    assert_eq!(through, direct, "{sql}");
    format!("{through:?}")
}

#[tokio::test]
async fn a_row_moves_to_its_new_keys_shard() {
    common::watch_proxy_panics();
    for n in [2, 4] {
        let cluster = Cluster::start_sharded_raw(n, "", MOVES);
        let (_server, reference) = reference().await;
        let keys = keys_by_shard(&cluster, n).await;
        let (a, b, c) = (keys[0][0], keys[1][0], keys[0][1]);
        let client = cluster.connect().await;
        let seed = format!(
            "INSERT INTO orders VALUES ({a}, 1, 'one'), ({a}, 2, 'two'), ({b}, 3, 'three'), ({c}, 4, 'four')"
        );
        both(&client, &reference, &seed).await;
        // Keyed WHERE, to another shard; the SET's other expressions see
        // the old row.
        let sql = format!(
            "UPDATE orders SET tenant_id = {b}, item = item || ' was ' || tenant_id WHERE tenant_id = {a} AND id = 1"
        );
        assert_eq!(both(&client, &reference, &sql).await, "Some(1)");
        // Keyless WHERE: the row is found on whichever shard holds it.
        let sql = format!("UPDATE orders SET tenant_id = {a} WHERE id = 3");
        assert_eq!(both(&client, &reference, &sql).await, "Some(1)");
        // The same shard: a plain UPDATE.
        let sql = format!("UPDATE orders SET tenant_id = {c} WHERE tenant_id = {a} AND id = 2");
        assert_eq!(both(&client, &reference, &sql).await, "Some(1)");
        // No row matches.
        let sql = format!("UPDATE orders SET tenant_id = {b} WHERE tenant_id = {a} AND id = 99");
        assert_eq!(both(&client, &reference, &sql).await, "Some(0)");
        // RETURNING gives the moved row's new values.
        let sql = format!(
            "UPDATE orders AS o SET tenant_id = {a}, item = upper(o.item) WHERE o.tenant_id = {c} AND o.id = 4 \
             RETURNING o.tenant_id, o.item"
        );
        let returned = common::rows(&client, &sql).await;
        assert_eq!(returned.len(), 1);
        assert_eq!(returned[0]["tenant_id"], a.to_string());
        assert_eq!(returned[0]["item"], "FOUR");
        reference.simple_query(&sql).await.unwrap();
        let none = format!(
            "UPDATE orders SET tenant_id = {b} WHERE tenant_id = {c} AND id = 4 RETURNING id"
        );
        let messages = client.simple_query(&none).await.unwrap();
        assert!(
            matches!(
                messages.first(),
                Some(SimpleQueryMessage::RowDescription(_))
            ),
            "{messages:?}"
        );
        assert!(matches!(
            messages.last(),
            Some(SimpleQueryMessage::CommandComplete(0))
        ));
        same_as_reference(&cluster, &reference).await;

        // Extended protocol: a prepared UPDATE with parameters.
        let update = "UPDATE orders SET tenant_id = $1, item = $2 WHERE tenant_id = $3 AND id = $4";
        let moved = client
            .execute(update, &[&b, &"moved", &a, &3i64])
            .await
            .unwrap();
        assert_eq!(moved, 1);
        reference
            .execute(update, &[&b, &"moved", &a, &3i64])
            .await
            .unwrap();
        same_as_reference(&cluster, &reference).await;
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// More than one row, an error on the new shard, a move inside a
/// transaction rolled back or committed, two-phase commit: atomic.
#[tokio::test]
async fn a_move_is_all_or_nothing() {
    common::watch_proxy_panics();
    for general in ["", "two_phase_commit = true"] {
        let cluster = Cluster::start_sharded_raw(2, general, MOVES);
        let keys = keys_by_shard(&cluster, 2).await;
        let (a, b) = (keys[0][0], keys[1][0]);
        let client = cluster.connect().await;
        client
            .simple_query(&format!(
                "INSERT INTO orders VALUES ({a}, 1, 'x'), ({a}, 2, 'y'), ({b}, 2, 'taken')"
            ))
            .await
            .unwrap();
        let before = shard_rows(&cluster).await;
        // Two rows match: refused, nothing moved.
        let err = client
            .simple_query(&format!(
                "UPDATE orders SET tenant_id = {b} WHERE tenant_id = {a}"
            ))
            .await
            .unwrap_err();
        assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
        assert!(common::describe(&err).contains("2 rows"), "{err:?}");
        assert_eq!(shard_rows(&cluster).await, before, "{general}");
        // The new shard refuses the row (its key is taken): the old row
        // stays.
        let err = client
            .execute(
                "UPDATE orders SET tenant_id = $1 WHERE tenant_id = $2 AND id = 2",
                &[&b, &a],
            )
            .await
            .unwrap_err();
        assert_eq!(common::code(&err), Some("23505"), "{err:?}");
        assert_eq!(shard_rows(&cluster).await, before, "{general}");
        // In a transaction: the move joins it, and goes with its ROLLBACK.
        let sql = format!("UPDATE orders SET tenant_id = {b} WHERE tenant_id = {a} AND id = 1");
        client.batch_execute("BEGIN").await.unwrap();
        client.batch_execute(&sql).await.unwrap();
        let seen = common::column(
            &client,
            &format!("SELECT count(*) AS n FROM orders WHERE tenant_id = {b}"),
            "n",
        )
        .await;
        assert_eq!(seen, ["2"]);
        client.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(shard_rows(&cluster).await, before, "{general}");
        // The extended protocol's move joins the transaction too.
        let bound = "UPDATE orders SET tenant_id = $1 WHERE tenant_id = $2 AND id = 1";
        client.batch_execute("BEGIN").await.unwrap();
        assert_eq!(client.execute(bound, &[&b, &a]).await.unwrap(), 1);
        let seen = common::column(
            &client,
            &format!("SELECT count(*) AS n FROM orders WHERE tenant_id = {b}"),
            "n",
        )
        .await;
        assert_eq!(seen, ["2"], "{general}");
        client.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(shard_rows(&cluster).await, before, "{general}");
        client.batch_execute("BEGIN").await.unwrap();
        assert_eq!(client.execute(bound, &[&b, &a]).await.unwrap(), 1);
        client.batch_execute("COMMIT").await.unwrap();
        let after = shard_rows(&cluster).await;
        assert_eq!(after[0], [format!("{a}|2|y")], "{general}");
        assert_eq!(
            after[1],
            [format!("{b}|1|x"), format!("{b}|2|taken")],
            "{general}"
        );
        for shard in cluster.shards().await {
            let prepared =
                common::column(&shard, "SELECT count(*) AS n FROM pg_prepared_xacts", "n").await;
            assert_eq!(prepared, ["0"], "{general}");
        }
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// Without `shard_key = "rewrite"` (PgDog's default, and "ignore") it is
/// refused as before; what cannot move says why.
#[tokio::test]
async fn refused_when_not_configured_or_not_movable() {
    common::watch_proxy_panics();
    for extra in ["", "[rewrite]\nenabled = true\nshard_key = \"ignore\"\n"] {
        let cluster = Cluster::start_sharded_raw(2, "", extra);
        let client = cluster.connect().await;
        let err = client
            .simple_query("UPDATE orders SET tenant_id = 5 WHERE tenant_id = 6")
            .await
            .unwrap_err();
        assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
        assert!(
            common::describe(&err).contains("changing a sharding key"),
            "{err:?}"
        );
    }
    let cluster = Cluster::start_sharded_raw(2, "", MOVES);
    let keys = keys_by_shard(&cluster, 2).await;
    let (a, b) = (keys[0][0], keys[1][0]);
    let client = cluster.connect().await;
    client
        .simple_query(&format!("INSERT INTO orders VALUES ({a}, 1, 'x')"))
        .await
        .unwrap();
    for (sql, says) in [
        (format!("UPDATE orders SET tenant_id = tenant_id + 1 WHERE tenant_id = {a}"), "a literal or a parameter"),
        (format!("UPDATE orders SET tenant_id = {b} WHERE id IN (SELECT id FROM orders WHERE tenant_id = {a})"), "subqueries"),
        (format!("UPDATE orders SET tenant_id = NULL WHERE tenant_id = {a}"), "NULL"),
    ] {
        let err = client.simple_query(&sql).await.unwrap_err();
        assert_eq!(common::code(&err), Some("0A000"), "{sql}: {err:?}");
        assert!(common::describe(&err).contains(says), "{sql}: {err:?}");
    }
    // A foreign key that deletes or changes referencing rows on delete: a
    // move would do that where an UPDATE does not.
    client
        .batch_execute(
            "CREATE TABLE order_notes (tenant_id bigint, id bigint, note text, \
             FOREIGN KEY (tenant_id, id) REFERENCES orders ON DELETE CASCADE)",
        )
        .await
        .unwrap();
    let err = client
        .simple_query(&format!(
            "UPDATE orders SET tenant_id = {b} WHERE tenant_id = {a} AND id = 1"
        ))
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    assert!(
        common::describe(&err).contains("order_notes_tenant_id_id_fkey"),
        "{err:?}"
    );
    client
        .batch_execute("DROP TABLE order_notes")
        .await
        .unwrap();
    // RETURNING in the extended protocol: refused for now.
    let err = client
        .query(
            "UPDATE orders SET tenant_id = $1 WHERE tenant_id = $2 RETURNING id",
            &[&b, &a],
        )
        .await
        .unwrap_err();
    assert!(
        common::describe(&err).contains("simple protocol"),
        "{err:?}"
    );
    // A pipeline: the moving UPDATE's Describe, Execute and Sync.
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let (ka, kb) = (a.to_string(), b.to_string());
    let mut request = wire::parse(
        "",
        "UPDATE orders SET tenant_id = $1 WHERE tenant_id = $2 AND id = 1",
    );
    request.extend(wire::bind_text("", "", &[Some(&kb), Some(&ka)]));
    request.extend(wire::describe(b'P', ""));
    request.extend(wire::execute());
    request.extend(wire::sync());
    raw.send(&request).await;
    let replies = raw.until_ready().await;
    assert_eq!(wire::tags(&replies), "12nCZ", "{replies:?}");
    assert_eq!(wire::command_tags(&replies), ["UPDATE 1"]);
    let rows = shard_rows(&cluster).await;
    assert_eq!(
        (rows[0].len(), rows[1].clone()),
        (0, vec![format!("{b}|1|x")])
    );
    assert_eq!(common::proxy_panics(), 0);
}
