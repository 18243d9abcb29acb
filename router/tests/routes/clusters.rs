//! Cluster settings: overrides, cross_shard_disabled, four databases, one database.

use super::*;

#[test]
#[rustfmt::skip]
fn overrides() {
    prod().shard(1).check("SELECT * FROM orders", &[], "1");
    prod().shard(0).check("SELECT * FROM orders WHERE tenant_id = 3", &[], "0");
    prod().shard(1).check("SELECT 1", &[], "1");
    prod().shard(1).check("UPDATE countries SET name = 'x'", &[], "w 1");
    prod().shard(0).check("INSERT INTO orders (id) VALUES (1)", &[], "w 0");
    prod().shard(0).check("COPY orders FROM STDIN", &[], "w 0");
    prod().shard(1).check("CREATE TABLE orders_2024 PARTITION OF orders FOR VALUES FROM (1) TO (2)", &[], "w 1");
    prod().shard(2).check("SELECT * FROM orders", &[], "err: shard 2 does not exist: this cluster has 2 database(s)");
    prod().shard(2).check("BEGIN", &[], "any");
    prod().shard(9).check("SET pgdog.shard = 0", &[], "any");
    prod().key("3").check("SELECT * FROM orders", &[], "1");
    prod().key("42").check("SELECT * FROM orders", &[], "0");
    prod().key("42").check("SELECT * FROM orders WHERE tenant_id = 3", &[], "0");
    prod().key("3").check("INSERT INTO orders (id) VALUES (1)", &[], "w 1");
    prod().key("acme").check("SELECT * FROM accounts", &[], "1");
    prod().key("foo").check("SELECT * FROM accounts", &[], "0");
    prod().key("00000000-0000-0000-0000-000000000000").check("SELECT * FROM sessions", &[], "1");
    prod().key("42").check("SELECT * FROM metrics", &[], "1");
    prod().key("3").check("SELECT * FROM stores", &[], "1");
    prod().key("5").check("SELECT * FROM stores", &[], "err: no shard for key 5 of pgdog.sharding_key");
    prod().key("3").check("SELECT 1", &[], "1");
    prod().key("3").check("SELECT * FROM foo", &[], "1");
    prod().key("3").check("SELECT * FROM events_p12", &[], "1");
    prod().key("abc").check("SELECT * FROM orders", &[], "err: invalid value for sharding key pgdog.sharding_key (bigint)");
    prod().key("abc").check("COMMIT", &[], "any");
    prod().shard(1).key("42").check("SELECT * FROM orders", &[], "1");
    on("big").key("2").check("SELECT * FROM orders", &[], "2");
    on("strict").key("3").check("SELECT * FROM orders", &[], "1");
    on("strict").shard(0).check("SELECT * FROM orders", &[], "0");
}

#[test]
#[rustfmt::skip]
fn cross_shard_disabled() {
    let c = on("strict");
    c.check("SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("UPDATE orders SET amount = 1 WHERE tenant_id = $1", &[T("42")], "w 0");
    c.check("SELECT * FROM orders", &[], "err: cross-shard queries are disabled");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 3)", &[], "err: add the sharding key");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[N], "err: cross-shard queries are disabled");
    c.check("UPDATE orders SET amount = 1", &[], "err: cross-shard queries are disabled");
    c.check("DELETE FROM foo", &[], "err: cross-shard queries are disabled");
    c.check("COPY orders TO STDOUT", &[], "err: cross-shard queries are disabled");
    c.check("INSERT INTO orders (tenant_id, id) SELECT tenant_id, order_id FROM order_items", &[], "err: cross-shard queries are disabled");
    c.check("SELECT * FROM orders o JOIN countries c ON c.code = o.country", &[], "err: cross-shard");
    c.check("SELECT * FROM countries", &[], "any");
    c.check("UPDATE countries SET name = 'x'", &[], "w all");
    c.check("INSERT INTO countries (code) VALUES ('fr')", &[], "w all");
    c.check("CREATE TABLE foo (id int)", &[], "w all");
    c.check("ALTER TABLE orders ADD COLUMN x int", &[], "w all");
    c.check("SELECT * FROM events_p3", &[], "1");
    c.check("SELECT 1", &[], "any");
    c.check("BEGIN", &[], "any");
}

#[test]
#[rustfmt::skip]
fn four_databases() {
    let c = on("big");
    c.check("SELECT * FROM orders WHERE tenant_id = 1", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 2", &[], "2");
    c.check("SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 4", &[], "3");
    c.check("SELECT * FROM orders WHERE tenant_id = 13", &[], "2");
    c.check("SELECT * FROM orders WHERE tenant_id = 42", &[], "2");
    c.check("SELECT * FROM orders WHERE tenant_id = -7", &[], "2");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(i64::MAX)], "2");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(i64::MIN)], "3");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 3)", &[], "0,1");
    c.check("SELECT * FROM orders WHERE tenant_id IN (2, 4)", &[], "2,3");
    c.check("SELECT * FROM orders WHERE tenant_id IN (3, 5, 100)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 2, 3, 4)", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[arr8(&[Some(1), Some(13), Some(4)])], "0,2,3");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 2) AND tenant_id IN (2, 3)", &[], "2");
    // A sublink's key does not restrict where the statement's rows live,
    // and a sublink runs on each database the statement runs on (rule 12).
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 2) AND id IN (SELECT order_id FROM order_items WHERE tenant_id IN (2, 3))", &[], "err: a subquery reads order_items, which is sharded, on shards 1, 2, but the rest of the statement runs on each shard separately");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 3) AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 2)", &[], "err: on shard 2, but the rest of the statement runs on shards 0, 1");
    c.check("SELECT * FROM orders WHERE tenant_id IN (2, 42) AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 13)", &[], "2");
    c.check("SELECT * FROM orders o WHERE tenant_id IN (1, 2) AND EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id)", &[], "0,2");
    c.check("UPDATE orders SET amount = 1 WHERE tenant_id IN (1, 2)", &[], "w 0,2");
    c.check("DELETE FROM orders WHERE tenant_id = ANY('{3,4}')", &[], "w 1,3");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (1, 1), (12, 2)", &[], "w 0");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (1, 1), (2, 2)", &[], "err: rows of orders go to shards 0, 2");
    c.check("INSERT INTO orders (tenant_id, id) SELECT tenant_id, order_id FROM order_items WHERE tenant_id IN (1, 2)", &[], "w 0,2");
    c.check("SELECT * FROM orders WHERE tenant_id = 3; SELECT * FROM orders WHERE tenant_id IN (1, 2)", &[], "0,1,2");
    c.check("SELECT * FROM accounts WHERE email = 'foo'", &[], "0");
    c.check("SELECT * FROM accounts WHERE email = 'acme'", &[], "3");
    c.check("SELECT * FROM accounts WHERE email = ''", &[], "2");
    c.check("SELECT * FROM accounts WHERE email = 'e'", &[], "1");
    c.check("SELECT * FROM sessions WHERE session_id = '00000000-0000-0000-0000-000000000000'", &[], "1");
    c.check("SELECT * FROM sessions WHERE session_id = '11111111-1111-1111-1111-111111111111'", &[], "0");
    // citus@8 placed s % 4.
    c.check("SELECT * FROM metrics WHERE device_id = 1", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id = 2", &[], "2");
    c.check("SELECT * FROM metrics WHERE device_id = 5", &[], "1");
    c.check("SELECT * FROM metrics WHERE device_id = 3", &[], "3");
    c.check("SELECT * FROM metrics WHERE device_id = 100", &[], "0");
    c.check("SELECT * FROM events_p3", &[], "1");
    c.check("SELECT * FROM events_p2", &[], "2");
    c.check("SELECT * FROM events_p4", &[], "3");
    c.check("SELECT * FROM events_p2 JOIN counters c ON c.partition_id = 13", &[], "2");
    c.check("SELECT * FROM orders", &[], "all");
    c.check("SELECT * FROM countries", &[], "any");
    c.check("UPDATE countries SET name = 'x'", &[], "w all");
    c.check("CREATE TABLE foo (id int)", &[], "w all");
    // Lists map logical shards 0 and 1 to databases 0 and 1.
    c.check("SELECT * FROM stores WHERE region_id IN (1, 3)", &[], "0,1");
}

#[test]
#[rustfmt::skip]
fn one_database() {
    let c = on("solo");
    c.check("SELECT * FROM orders", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 3", &[], "0");
    c.check("INSERT INTO orders (id) VALUES (1)", &[], "w 0");
    c.check("COPY orders FROM STDIN", &[], "w 0");
    c.check("SELECT * FROM countries", &[], "0");
    c.check("SELECT 1", &[], "any");
    c.check("CREATE TABLE foo (id int)", &[], "w 0");
    c.check("BEGIN", &[], "any");
}
