//! Multi-row INSERTs with bind parameters (extended protocol) whose rows
//! belong to several shards, split by pgshard into one INSERT per shard
//! with only its rows' values: on 2 and 4 shards whose tables are hash
//! partitions holding only their own rows (a misrouted row fails loudly),
//! named and unnamed statements, parameters in text and binary with none,
//! one or one format code each, declared and inferred types, RETURNING in
//! VALUES order, ON CONFLICT, several split Binds in one pipeline, every
//! shard's rows compared with a reference Postgres that ran the same
//! statements; a failing shard leaves nothing anywhere (also with
//! two-phase commit, which then commits the parts); and what cannot be
//! split is refused with the reason.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::wire::{self, Wire};
use common::{Cluster, TextParam};
use tokio_postgres::types::{ToSql, Type};

const INSERT3: &str = "INSERT INTO orders (tenant_id, id, item) VALUES ";

/// `VALUES` placeholders for `rows` rows of 3 parameters.
fn placeholders(rows: usize) -> String {
    (0..rows)
        .map(|r| format!("(${}, ${}, ${})", 3 * r + 1, 3 * r + 2, 3 * r + 3))
        .collect::<Vec<_>>()
        .join(", ")
}

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

/// `orders`' rows of `client` as sorted `tenant_id|id|item` lines, those
/// whose key hashes to `shard` of `n` when given (Postgres computes it).
async fn rows_of(client: &tokio_postgres::Client, shard: Option<(usize, usize)>) -> Vec<String> {
    let filter = match shard {
        None => String::new(),
        Some((i, n)) => format!(
            " WHERE ((hashint8extended(tenant_id, 8816678312871386365)::numeric \
             + 18446744073709551616 + 5305509591434766563) % 18446744073709551616) % {n} = {i}"
        ),
    };
    let sql = format!(
        "SELECT tenant_id || '|' || id || '|' || item AS r FROM orders{filter} ORDER BY tenant_id, id"
    );
    common::column(client, &sql, "r").await
}

/// Every shard holds exactly the reference's rows whose keys hash to it,
/// and nothing else.
async fn same_as_reference(cluster: &Cluster, reference: &tokio_postgres::Client) {
    let shards = cluster.shards().await;
    let n = shards.len();
    let mut total = 0;
    for (i, shard) in shards.iter().enumerate() {
        let held = rows_of(shard, None).await;
        let expected = rows_of(reference, Some((i, n))).await;
        assert_eq!(held, expected, "shard {i} of {n}");
        total += held.len();
    }
    assert_eq!(total, rows_of(reference, None).await.len());
}

/// Run `sql` with `params` through pgshard and on the reference; the
/// counts must agree.
async fn both(
    proxied: &tokio_postgres::Client,
    reference: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> u64 {
    let through = proxied.execute(sql, params).await.unwrap();
    let direct = reference.execute(sql, params).await.unwrap();
    assert_eq!(through, direct, "{sql}");
    through
}

#[tokio::test]
async fn prepared_multi_row_inserts_split_by_shard_as_on_one_postgres() {
    common::watch_proxy_panics();
    for n in [2, 4] {
        let cluster = Cluster::start_sharded_raw(n, "", "");
        let (_server, reference) = reference().await;
        let client = cluster.connect().await;

        // A prepared statement of 50 rows, binary bigints and text.
        let sql = format!("{INSERT3}{}", placeholders(50));
        let statement = client.prepare(&sql).await.unwrap();
        let values: Vec<(i64, i64, String)> =
            (1..=50).map(|k| (k, k * 10, format!("item {k}"))).collect();
        let params: Vec<&(dyn ToSql + Sync)> = values
            .iter()
            .flat_map(|(a, b, c)| [a as &(dyn ToSql + Sync), b, c])
            .collect();
        assert_eq!(client.execute(&statement, &params).await.unwrap(), 50);
        reference.execute(&sql, &params).await.unwrap();
        // The same statement again (prepared on the servers once per shape).
        let again: Vec<(i64, i64, String)> = (1..=50)
            .map(|k| (k, k * 10 + 1, format!("again {k}")))
            .collect();
        let params: Vec<&(dyn ToSql + Sync)> = again
            .iter()
            .flat_map(|(a, b, c)| [a as &(dyn ToSql + Sync), b, c])
            .collect();
        assert_eq!(both(&client, &reference, &sql, &params).await, 50);

        // RETURNING in the order of the VALUES rows (keys descending).
        let sql = format!("{INSERT3}{} RETURNING tenant_id, item", placeholders(20));
        let values: Vec<(i64, i64, String)> = (51..=70)
            .rev()
            .map(|k| (k, k * 10, format!("r{k}")))
            .collect();
        let params: Vec<&(dyn ToSql + Sync)> = values
            .iter()
            .flat_map(|(a, b, c)| [a as &(dyn ToSql + Sync), b, c])
            .collect();
        let returned: Vec<i64> = client
            .query(&sql, &params)
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(returned, (51..=70).rev().collect::<Vec<i64>>());
        reference.execute(&sql, &params).await.unwrap();

        // Unnamed statement with declared types, values in text.
        let sql = format!("{INSERT3}{}", placeholders(10));
        let text: Vec<TextParam> = (71..=80)
            .flat_map(|k| [k.to_string(), (k * 10).to_string(), format!("t{k}")])
            .map(TextParam)
            .collect();
        let typed: Vec<(&(dyn ToSql + Sync), Type)> = text
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let ty = if i % 3 == 2 { Type::TEXT } else { Type::INT8 };
                (p as &(dyn ToSql + Sync), ty)
            })
            .collect();
        assert_eq!(client.query_typed(&sql, &typed).await.unwrap().len(), 0);
        reference.query_typed(&sql, &typed).await.unwrap();

        // ON CONFLICT on a target with the key; a parameter in its SET
        // goes to every part.
        let sql = format!(
            "{INSERT3}{} ON CONFLICT (tenant_id, id) DO UPDATE SET item = $13",
            placeholders(4)
        );
        let keys: Vec<i64> = vec![1, 10, 2, 20, 3, 30, 4, 40];
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        let item = "x".to_owned();
        for pair in keys.chunks(2) {
            params.extend([&pair[0] as &(dyn ToSql + Sync), &pair[1], &item]);
        }
        let updated = "updated".to_owned();
        params.push(&updated);
        assert_eq!(both(&client, &reference, &sql, &params).await, 4);

        same_as_reference(&cluster, &reference).await;
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// Parameter format codes as Bind allows them: none (all text), one for
/// all (binary), one each; with and without declared types; several
/// split Binds and a one-shard statement in one pipeline (one Sync).
#[tokio::test]
async fn format_codes_and_pipelines_on_the_wire() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let (_server, reference) = reference().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let sql = format!("{INSERT3}{}", placeholders(2));
    let mut id = 0i64;
    for formats in [vec![], vec![1], vec![0, 1, 0, 1, 0, 1]] {
        for types in [vec![], vec![20, 20, 25, 20, 20, 25]] {
            id += 1;
            // (value, is an integer) for each parameter, then its bytes in
            // the format its code says.
            let row = [
                (a.to_string(), true),
                (id.to_string(), true),
                (format!("f{id}a"), false),
                (b.to_string(), true),
                (id.to_string(), true),
                (format!("f{id}b"), false),
            ];
            let format_of = |i: usize| match formats.len() {
                0 => 0,
                1 => formats[0],
                _ => formats[i],
            };
            let values: Vec<Option<Vec<u8>>> = row
                .iter()
                .enumerate()
                .map(|(i, (value, integer))| match (format_of(i), integer) {
                    (1, true) => Some(value.parse::<i64>().unwrap().to_be_bytes().to_vec()),
                    _ => Some(value.clone().into_bytes()),
                })
                .collect();
            let mut request = wire::parse_typed("s", &sql, &types);
            request.extend(wire::bind_formats("p", "s", &formats, &values, &[]));
            request.extend(wire::describe(b'P', "p"));
            request.extend(wire::execute_portal("p", 0));
            request.extend(wire::message(b'C', b"Ss\0"));
            request.extend(wire::sync());
            raw.send(&request).await;
            let replies = raw.until_ready().await;
            assert_eq!(
                wire::tags(&replies),
                "12nC3Z",
                "{formats:?} {types:?}: {replies:?}"
            );
            assert_eq!(wire::command_tags(&replies), ["INSERT 0 2"]);
            let params: Vec<TextParam> = row.iter().map(|(v, _)| TextParam(v.clone())).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            reference
                .execute(
                    "INSERT INTO orders VALUES ($1, $2, $3), ($4, $5, $6)",
                    &refs,
                )
                .await
                .unwrap();
        }
    }
    // A pipeline: two split Binds of one statement, a one-shard INSERT and
    // a split Bind with RETURNING, one Sync.
    let mut request = wire::parse("ins", &sql);
    request.extend(wire::parse(
        "one",
        "INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, $3)",
    ));
    let returning = format!("{sql} RETURNING id");
    request.extend(wire::parse("ret", &returning));
    let mut expected_rows = Vec::new();
    for (statement, id) in [("ins", 200), ("ins", 201), ("one", 202), ("ret", 203)] {
        let mut values = vec![
            Some(a.to_string()),
            Some(id.to_string()),
            Some(format!("p{id}")),
        ];
        if statement != "one" {
            values.extend([
                Some(b.to_string()),
                Some((id + 1000).to_string()),
                Some(format!("q{id}")),
            ]);
        }
        let borrowed: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
        request.extend(wire::bind_text("", statement, &borrowed));
        request.extend(wire::execute());
        let params: Vec<TextParam> = values.into_iter().map(|v| TextParam(v.unwrap())).collect();
        let direct = match statement {
            "one" => "INSERT INTO orders VALUES ($1, $2, $3)".to_owned(),
            _ => "INSERT INTO orders VALUES ($1, $2, $3), ($4, $5, $6)".to_owned(),
        };
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        reference.execute(direct.as_str(), &refs).await.unwrap();
        if statement == "ret" {
            expected_rows = vec![id.to_string(), (id + 1000).to_string()];
        }
    }
    request.extend(wire::sync());
    raw.send(&request).await;
    let replies = raw.until_ready().await;
    assert!(wire::errors(&replies).is_empty(), "{replies:?}");
    assert_eq!(
        wire::command_tags(&replies),
        ["INSERT 0 2", "INSERT 0 2", "INSERT 0 1", "INSERT 0 2"]
    );
    assert_eq!(wire::first_column(&replies), expected_rows);
    same_as_reference(&cluster, &reference).await;
    assert_eq!(common::proxy_panics(), 0);
}

/// A row that fails on one shard fails the statement: no row of it stays
/// on any shard, without and with two-phase commit; with it, a split
/// INSERT that succeeds commits in two phases (the decision is recorded).
#[tokio::test]
async fn a_failing_shard_leaves_nothing_anywhere() {
    common::watch_proxy_panics();
    for general in ["", "two_phase_commit = true"] {
        let cluster = Cluster::start_sharded_raw(2, general, "");
        let (a, b) = common::keys_on_both_shards(&cluster).await;
        let client = cluster.connect().await;
        client
            .execute(
                "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 1, 'there')",
                &[&b],
            )
            .await
            .unwrap();
        let sql = "INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, 'a'), ($3, $4, 'b')";
        let err = client
            .execute(sql, &[&a, &1i64, &b, &1i64])
            .await
            .unwrap_err();
        assert_eq!(common::code(&err), Some("23505"), "{general}: {err:?}");
        let shards = cluster.shards().await;
        let count = |i: usize| common::column(&shards[i], "SELECT count(*) AS n FROM orders", "n");
        assert_eq!(
            (count(0).await, count(1).await),
            (vec!["0".to_owned()], vec!["1".to_owned()])
        );
        // The session goes on, and a good one commits on both.
        assert_eq!(
            client.execute(sql, &[&a, &2i64, &b, &2i64]).await.unwrap(),
            2
        );
        assert_eq!(
            (count(0).await, count(1).await),
            (vec!["1".to_owned()], vec!["2".to_owned()])
        );
        for shard in &shards {
            let prepared =
                common::column(shard, "SELECT count(*) AS n FROM pg_prepared_xacts", "n").await;
            assert_eq!(prepared, ["0"], "{general}: nothing left prepared");
        }
        if !general.is_empty() {
            // The decider recorded the commit: it was a two-phase commit.
            let mut decisions = 0;
            for shard in &shards {
                let rows = common::column(
                    shard,
                    "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'pgshard' AND tablename = 'decisions'",
                    "n",
                )
                .await;
                if rows == ["1"] {
                    let n =
                        common::column(shard, "SELECT count(*) AS n FROM pgshard.decisions", "n")
                            .await;
                    decisions += n[0].parse::<usize>().unwrap();
                }
            }
            assert!(decisions >= 1, "no two-phase commit decision recorded");
        }
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// A pipeline whose first statement ran on one shard before the split
/// INSERT (its server joins the segment): one implicit transaction, as on
/// one Postgres, with and without two-phase commit.
#[tokio::test]
async fn a_pipeline_with_a_split_insert_is_one_transaction() {
    common::watch_proxy_panics();
    for general in ["", "two_phase_commit = true"] {
        let cluster = Cluster::start_sharded_raw(2, general, "");
        let (a, b) = common::keys_on_both_shards(&cluster).await;
        let client = cluster.connect().await;
        client
            .execute(
                "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 1, 'there')",
                &[&b],
            )
            .await
            .unwrap();
        let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
        let one = "INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, 'first')";
        let split = "INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, 's'), ($3, $4, 's')";
        let (ka, kb) = (a.to_string(), b.to_string());
        for (id, fails) in [("1", true), ("2", false)] {
            let mut request = wire::parse("", one);
            request.extend(wire::bind_text("", "", &[Some(&ka), Some("50")]));
            request.extend(wire::execute());
            request.extend(wire::parse("", split));
            request.extend(wire::bind_text(
                "",
                "",
                &[Some(&ka), Some(id), Some(&kb), Some(id)],
            ));
            request.extend(wire::execute());
            request.extend(wire::sync());
            raw.send(&request).await;
            let replies = raw.until_ready().await;
            let on_a = common::column(
                &client,
                &format!("SELECT count(*) AS n FROM orders WHERE tenant_id = {a}"),
                "n",
            )
            .await;
            if fails {
                assert_eq!(wire::errors(&replies), ["23505"], "{general}: {replies:?}");
                assert_eq!(on_a, ["0"], "{general}: the first statement stayed");
            } else {
                assert!(wire::errors(&replies).is_empty(), "{general}: {replies:?}");
                assert_eq!(wire::command_tags(&replies), ["INSERT 0 1", "INSERT 0 2"]);
                assert_eq!(on_a, ["2"], "{general}");
            }
        }
        for shard in cluster.shards().await {
            let prepared =
                common::column(&shard, "SELECT count(*) AS n FROM pg_prepared_xacts", "n").await;
            assert_eq!(prepared, ["0"], "{general}");
        }
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// Inside the client's transaction a split Bind joins it on every shard
/// its rows go to: the rows are seen inside it, ROLLBACK leaves nothing,
/// an error on one shard aborts the whole transaction (25P02 after it),
/// COMMIT keeps every row (two-phase when on).
#[tokio::test]
async fn split_inserts_inside_a_transaction_join_it() {
    common::watch_proxy_panics();
    for general in ["", "two_phase_commit = true"] {
        let cluster = Cluster::start_sharded_raw(2, general, "");
        let (a, b) = common::keys_on_both_shards(&cluster).await;
        let mut client = cluster.connect().await;
        let sql = format!("{INSERT3}{}", placeholders(2));
        let count = "SELECT count(*) FROM orders";
        for commit in [false, true] {
            let txn = client.transaction().await.unwrap();
            let n = txn
                .execute(&sql, &[&a, &1i64, &"x", &b, &1i64, &"y"])
                .await
                .unwrap();
            assert_eq!(n, 2, "{general}");
            let seen: i64 = txn.query_one(count, &[]).await.unwrap().get(0);
            assert_eq!(seen, 2, "{general}");
            match commit {
                true => txn.commit().await.unwrap(),
                false => txn.rollback().await.unwrap(),
            }
            for shard in cluster.shards().await {
                let held = common::column(&shard, "SELECT count(*) AS n FROM orders", "n").await;
                let want = if commit { "1" } else { "0" };
                assert_eq!(held, [want], "{general}: commit {commit}");
            }
        }
        // (b, 1) exists: the split fails on b's shard, the transaction is
        // aborted everywhere and its first statement goes with it.
        let txn = client.transaction().await.unwrap();
        txn.execute(&sql, &[&a, &2i64, &"x", &b, &2i64, &"y"])
            .await
            .unwrap();
        let err = txn
            .execute(&sql, &[&a, &3i64, &"x", &b, &1i64, &"y"])
            .await
            .unwrap_err();
        assert_eq!(common::code(&err), Some("23505"), "{general}: {err:?}");
        let err = txn.query_one(count, &[]).await.unwrap_err();
        assert_eq!(common::code(&err), Some("25P02"), "{general}: {err:?}");
        txn.rollback().await.unwrap();
        for shard in cluster.shards().await {
            let held = common::column(&shard, "SELECT count(*) AS n FROM orders", "n").await;
            assert_eq!(held, ["1"], "{general}");
            let prepared =
                common::column(&shard, "SELECT count(*) AS n FROM pg_prepared_xacts", "n").await;
            assert_eq!(prepared, ["0"], "{general}");
        }
    }
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn what_cannot_be_split_is_refused_with_the_reason() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let client = cluster.connect().await;
    let sql = "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 1, $2), ($3, 2, $4)";
    // A NULL key: no shard to put its row on.
    let err = client
        .execute(sql, &[&a, &"a", &None::<i64>, &"b"])
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    assert!(
        common::describe(&err).contains("sharding key tenant_id"),
        "{err:?}"
    );
    // ON CONFLICT without the key in its target.
    let conflict = format!("{sql} ON CONFLICT DO NOTHING");
    let err = client
        .execute(&conflict, &[&a, &"a", &b, &"b"])
        .await
        .unwrap_err();
    assert!(
        common::describe(&err).contains("ON CONFLICT target"),
        "{err:?}"
    );
    // A Bind with too few values is a protocol error, as on Postgres.
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let mut request = wire::parse("", sql);
    request.extend(wire::bind_text(
        "",
        "",
        &[Some(&a.to_string()), Some("a"), Some(&b.to_string())],
    ));
    request.extend(wire::execute());
    request.extend(wire::sync());
    raw.send(&request).await;
    assert_eq!(wire::errors(&raw.until_ready().await), ["08P01"]);
    // A row limit on the Execute (pgjdbc's batches send one) changes
    // nothing for an INSERT without RETURNING; with RETURNING the rows
    // cannot be fetched in parts across shards.
    let (ka, kb) = (a.to_string(), b.to_string());
    for (returning, expected) in [("", None), (" RETURNING id", Some("0A000"))] {
        let mut request = wire::parse("", &format!("{sql}{returning}"));
        let params = [
            Some(ka.as_str()),
            Some("lim"),
            Some(kb.as_str()),
            Some("lim"),
        ];
        request.extend(wire::bind_text("", "", &params));
        request.extend(wire::execute_portal("", 1));
        request.extend(wire::sync());
        raw.send(&request).await;
        let replies = raw.until_ready().await;
        match expected {
            None => assert_eq!(wire::command_tags(&replies), ["INSERT 0 2"], "{replies:?}"),
            Some(code) => assert_eq!(wire::errors(&replies), [code], "{replies:?}"),
        }
    }
    client
        .batch_execute("DELETE FROM orders WHERE item = 'lim'")
        .await
        .unwrap();
    // (Inside a transaction it joins it: `split_inserts_inside_a_transaction_join_it`.)
    // Rows on one shard are no split: they run there.
    assert_eq!(client.execute(sql, &[&a, &"a", &a, &"b"]).await.unwrap(), 2);
    for shard in cluster.shards().await {
        let n = common::column(&shard, "SELECT count(*) AS n FROM orders", "n").await;
        assert!(n == ["0"] || n == ["2"], "{n:?}");
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// PgDog's `split_inserts = "error"` refuses it in this protocol too.
#[tokio::test]
async fn rewrite_split_inserts_error_refuses_it() {
    let cluster = Cluster::start_sharded_raw(
        2,
        "",
        "[rewrite]\nenabled = true\nsplit_inserts = \"error\"\n",
    );
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let client = cluster.connect().await;
    let sql = "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 1, 'a'), ($2, 1, 'b')";
    let err = client.execute(sql, &[&a, &b]).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    assert!(
        common::describe(&err).contains("rows of orders go to shards"),
        "{err:?}"
    );
}

/// A prepared INSERT that names no columns gets its table's columns (read
/// from a shard's catalog, cached, read again after DDL through pgshard),
/// so its key is found: routed to one shard, or split; alone or inside a
/// pipeline that already needs several shards.
#[tokio::test]
async fn prepared_inserts_without_a_column_list_use_the_tables_columns() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let (_server, reference) = reference().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let client = cluster.connect().await;
    let one = "INSERT INTO orders VALUES ($1, $2, $3)";
    for id in [1i64, 2] {
        assert_eq!(both(&client, &reference, one, &[&a, &id, &"one"]).await, 1);
    }
    let two = "INSERT INTO orders VALUES ($1, $2, $3), ($4, $5, $6) RETURNING tenant_id";
    for id in [3i64, 4] {
        let rows = client
            .query(two, &[&b, &id, &"two", &a, &id, &"two"])
            .await
            .unwrap();
        let keys: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(keys, [b, a]);
        reference
            .execute(two, &[&b, &id, &"two", &a, &id, &"two"])
            .await
            .unwrap();
    }
    // Unnamed, in a pipeline after a keyless statement (a segment).
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let mut request = wire::parse("", "UPDATE orders SET item = item || '.'");
    request.extend(wire::bind(""));
    request.extend(wire::execute());
    request.extend(wire::parse(
        "",
        "INSERT INTO orders VALUES ($1, $2, $3), ($4, $5, $6)",
    ));
    let (ka, kb) = (a.to_string(), b.to_string());
    let params = [
        Some(ka.as_str()),
        Some("5"),
        Some("p"),
        Some(kb.as_str()),
        Some("5"),
        Some("p"),
    ];
    request.extend(wire::bind_text("", "", &params));
    request.extend(wire::execute());
    request.extend(wire::parse("", one));
    request.extend(wire::bind_text(
        "",
        "",
        &[Some(kb.as_str()), Some("6"), Some("q")],
    ));
    request.extend(wire::execute());
    request.extend(wire::sync());
    raw.send(&request).await;
    let replies = raw.until_ready().await;
    assert_eq!(
        wire::command_tags(&replies),
        ["UPDATE 6", "INSERT 0 2", "INSERT 0 1"],
        "{replies:?}"
    );
    reference
        .batch_execute(&format!(
            "UPDATE orders SET item = item || '.'; INSERT INTO orders VALUES ({a}, 5, 'p'), ({b}, 5, 'p'); \
             INSERT INTO orders VALUES ({b}, 6, 'q')"
        ))
        .await
        .unwrap();
    // A column added through pgshard: the next statement sees it.
    let add = "ALTER TABLE orders ADD COLUMN note text";
    client.batch_execute(add).await.unwrap();
    reference.batch_execute(add).await.unwrap();
    let four = "INSERT INTO orders VALUES ($1, $2, $3, $4), ($5, $6, $7, $8)";
    let params: [&(dyn ToSql + Sync); 8] = [&a, &7i64, &"n", &"note a", &b, &7i64, &"n", &"note b"];
    assert_eq!(both(&client, &reference, four, &params).await, 2);
    // Still refused: no key among its values.
    let err = client
        .execute("INSERT INTO orders DEFAULT VALUES", &[])
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    let notes = "SELECT coalesce(note, '-') AS n FROM orders ORDER BY tenant_id, id";
    let shards = cluster.shards().await;
    let mut seen = Vec::new();
    for shard in &shards {
        seen.extend(common::column(shard, notes, "n").await);
    }
    seen.sort();
    let mut expected = common::column(&reference, notes, "n").await;
    expected.sort();
    assert_eq!(seen, expected);
    same_as_reference(&cluster, &reference).await;
    assert_eq!(common::proxy_panics(), 0);
}

/// Each shape of a split part is a statement of its own: a server that
/// holds `prepared_statements_limit` of them closes its least recently
/// used one before preparing another.
#[tokio::test]
async fn split_parts_respect_the_prepared_statements_limit() {
    common::watch_proxy_panics();
    let general = "default_pool_size = 1\nprepared_statements_limit = 3";
    let cluster = Cluster::start_sharded_raw(2, general, "");
    let client = cluster.connect().await;
    let sql = format!("{INSERT3}{}", placeholders(6));
    // Keys 1..=60 in rows of 6: the parts' sizes (shapes) vary.
    for batch in 0..10i64 {
        let values: Vec<(i64, i64, String)> = (1..=6)
            .map(|r| (batch * 6 + r, r, format!("b{batch}")))
            .collect();
        let params: Vec<&(dyn ToSql + Sync)> = values
            .iter()
            .flat_map(|(a, b, c)| [a as &(dyn ToSql + Sync), b, c])
            .collect();
        assert_eq!(client.execute(sql.as_str(), &params).await.unwrap(), 6);
    }
    let total = common::column(&client, "SELECT count(*) AS n FROM orders", "n").await;
    assert_eq!(total, ["60"]);
    for shard in 0..2 {
        let held = common::column(
            &client,
            &format!("/* pgdog_shard: {shard} */ SELECT count(*) AS n FROM pg_prepared_statements"),
            "n",
        )
        .await;
        let held: usize = held[0].parse().unwrap();
        assert!(held <= 3, "shard {shard} holds {held} prepared statements");
    }
    assert_eq!(common::proxy_panics(), 0);
}
